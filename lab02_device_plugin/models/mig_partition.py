"""The book's MIG partition explorer: what still fits a GPU, what a request wastes, a drawing.

Built on the profile tables and the layout planner of :mod:`lab02_device_plugin.plugin.mig`
(the ones the device plugin checks real MIG layouts against):

* :func:`addable_profiles`: profiles that could still join a request on one GPU;
* :func:`quantization_waste`: what the smallest instance that covers a need grants beyond it;
* :func:`largest_fitting_prefix` and :func:`draw_layout`: a request drawn on the GPU's 8
  memory slices, what does not fit hatched beside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lab02_device_plugin.errors import InputError
from lab02_device_plugin.plugin.mig import (
    MEMORY_SLICES, Layout, MigProfile, NoLayoutError, canonical_model, get_profile, nominal_memory_gb,
    plan_layout, profiles,
)


def addable_profiles(gpu_model: str, requested: Sequence[str]) -> dict[str, Layout]:
    """Profiles that could still join ``requested`` on one GPU if the whole request were
    re-planned (instances may move; on a running GPU moving one means destroying and
    re-creating it), each with the layout that makes room for it.

    ``addable_profiles("H200-141GB", ["3g.71gb", "2g.35gb", "1g.18gb"])`` holds
    ``1g.18gb`` and ``1g.18gb+me``: with the 3g at slot 4, slot 3 is free.

    Raises:
        NoLayoutError: ``requested`` itself has no valid layout.
        InputError: an unknown profile name.
    """
    plan_layout(gpu_model, requested)  # the request itself must fit
    out: dict[str, Layout] = {}
    for name in profiles(gpu_model):
        try:
            out[name] = plan_layout(gpu_model, [*requested, name])
        except NoLayoutError:
            continue
    return out


# --------------------------------------------------------------------------- waste

@dataclass(frozen=True)
class Waste:
    """What a MIG instance grants beyond what was asked (quantization waste).

    Memory in GB as in the profile names (slices x nominal GB / 8); compute as a share of
    the whole GPU's SMs, from the profile's SM count (:attr:`MigProfile.sm_share`: 60/132 =
    0.4545 for an H100 ``3g.40gb``, not 3/7).
    """

    profile: MigProfile
    asked_memory_gb: float
    granted_memory_gb: float
    asked_compute: float
    granted_compute: float

    @property
    def wasted_memory_gb(self) -> float:
        """Granted minus asked memory (GB)."""
        return self.granted_memory_gb - self.asked_memory_gb

    @property
    def wasted_compute(self) -> float:
        """Granted minus asked compute (fraction of the GPU)."""
        return self.granted_compute - self.asked_compute


def quantization_waste(gpu_model: str, memory_gb: float, compute: float = 0.0) -> Waste:
    """The smallest profile that covers a request, and what it wastes.

    Args:
        gpu_model: table key or product name.
        memory_gb: memory the workload needs (GB, > 0).
        compute: share of the whole GPU's SMs it needs (0..1); compared with each
            profile's real SM share, so 0.5 on an H100 needs ``7g.80gb`` (``4g.40gb`` has
            64 of 132 SMs, 48 %).

    Returns:
        :class:`Waste` for the profile with the fewest memory slices, then compute slices,
        that grants at least both (``+me`` profiles excluded).

    Raises:
        NoLayoutError: the request exceeds the whole GPU.
        InputError: negative or out-of-range inputs.
    """
    model = canonical_model(gpu_model)
    table = profiles(gpu_model)
    if isinstance(memory_gb, bool) or not isinstance(memory_gb, (int, float)) or not memory_gb > 0:
        raise InputError(f"memory_gb: expected a positive number of GB, got {memory_gb!r}")
    if isinstance(compute, bool) or not isinstance(compute, (int, float)) or not 0 <= compute <= 1:
        raise InputError(f"compute: expected a fraction of the GPU in [0, 1], got {compute!r}")
    gb = nominal_memory_gb(gpu_model)
    best = None
    for p in sorted(table.values(), key=lambda p: (p.memory_slices, p.compute_slices)):
        if p.media_extensions:
            continue
        granted_mem = gb * p.memory_slices / MEMORY_SLICES
        if granted_mem + 1e-9 >= memory_gb and p.sm_share + 1e-9 >= compute:
            best = p
            break
    if best is None:
        raise NoLayoutError(f"{memory_gb:g} GB and {compute:.0%} of the SMs exceed the largest "
                            f"instance of a {model}")
    return Waste(best, float(memory_gb), gb * best.memory_slices / MEMORY_SLICES,
                 float(compute), best.sm_share)


# --------------------------------------------------------------------------- drawing

def draw_layout(layout: Layout, ax: Any = None, overflow: Sequence[MigProfile] = ()) -> Any:
    """Draw the 8 memory slices of a layout with matplotlib; returns the Axes.

    Each GPU instance is a labelled box over the slots it occupies; free slots are grey.
    ``overflow`` (instances that did not fit) are drawn hatched to the right of the GPU.
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _fig, ax = plt.subplots(figsize=(8, 1.6))
    colors = plt.get_cmap("tab10")
    for s in range(MEMORY_SLICES):
        ax.add_patch(plt.Rectangle((s, 0), 1, 1, facecolor="#eeeeee", edgecolor="white"))
    for i, p in enumerate(layout.placements):
        ax.add_patch(plt.Rectangle((p.start + 0.04, 0.06), p.profile.memory_slices - 0.08, 0.88,
                                   facecolor=colors(i % 10), edgecolor="black", alpha=0.85))
        ax.text(p.start + p.profile.memory_slices / 2, 0.5, p.profile.name, ha="center",
                va="center", fontsize=9)
    x = MEMORY_SLICES + 0.3
    for prof in overflow:
        ax.add_patch(plt.Rectangle((x + 0.04, 0.06), prof.memory_slices - 0.08, 0.88,
                                   facecolor="white", edgecolor="#c44e52", hatch="///"))
        ax.text(x + prof.memory_slices / 2, 0.5, prof.name, ha="center", va="center",
                fontsize=9, color="#c44e52")
        x += prof.memory_slices
    ax.set_xlim(0, max(MEMORY_SLICES, x))
    ax.set_ylim(0, 1)
    ax.set_xticks([s + 0.5 for s in range(MEMORY_SLICES)])
    ax.set_xticklabels([str(s) for s in range(MEMORY_SLICES)])
    ax.set_yticks([])
    ax.set_xlabel("memory slice" + ("   (hatched: does not fit)" if overflow else ""))
    sms = layout.multiprocessors_used
    sm_text = f" ({sms} of {layout.placements[0].profile.gpu_sms} SMs)" \
        if sms is not None and layout.placements else ""
    ax.set_title(f"{layout.gpu_model}: {layout.memory_slices_used}/8 memory slices, "
                 f"{layout.compute_slices_used}/7 compute slices{sm_text}")
    return ax


def largest_fitting_prefix(gpu_model: str, requested: Sequence[str]) -> tuple[Layout, list[MigProfile]]:
    """For a request with no valid layout: plan its instances largest first and stop at
    the first that no longer fits. Returns that partial layout and the instances left over
    (for :func:`draw_layout`'s ``overflow``); for a valid request, its layout and ``[]``.

    Raises:
        InputError: an unknown profile name.
    """
    model = canonical_model(gpu_model)
    wanted = sorted((get_profile(gpu_model, n) for n in requested),
                    key=lambda p: (-p.memory_slices, -p.compute_slices, p.name))
    placed: list[str] = []
    layout = Layout(model, ())
    for i, prof in enumerate(wanted):
        try:
            layout = plan_layout(gpu_model, [*placed, prof.name])
        except NoLayoutError:
            return layout, wanted[i:]
        placed.append(prof.name)
    return layout, []
