"""Which GPU sharing mechanism fits a workload: the course's decision table as code.

Chapter 5 of the course turns this into a widget and a diagram; its worked case (one
node, one tenant mix, every mechanism priced) is :mod:`lab02_device_plugin.models.worked_case`.
Requirements go in (:class:`Requirements`); one of five answers comes out
(:class:`Decision`):

``exclusive``
    Whole GPUs, one pod each: full isolation, the utilisation the workload brings.
``MIG``
    Multi-Instance GPU: GPU instances with their own memory slices, L2 and copy engines,
    and compute instances with their own SMs; memory and performance isolation, and
    isolation from application faults. GPU-wide events (Xid 79, uncontained ECC errors,
    a GPU reset) still reach every instance (NVIDIA MIG User Guide; NVIDIA GPU memory
    error management, "Error Containment"). Only on MIG-capable GPUs
    (:data:`lab02_device_plugin.plugin.mig.MIG_GPUS`), only in the fixed profile sizes, and each
    profile has a fixed SM count (no profile below ``7g`` gets half of an H100's SMs).
``MPS``
    Multi-Process Service: since Volta every client has its own GPU address space and
    submits work directly; the server owns the scheduling resources and runs kernels of
    several clients at once. Per-client caps on active threads
    (``CUDA_MPS_ACTIVE_THREAD_PERCENTAGE``, a cap, not a reservation) and pinned device
    memory; a fatal fault in one client reaches every client of that server, which then
    refuses new clients until the affected ones exit (NVIDIA MPS documentation, "When to
    Use MPS", memory protection and error containment). In NVIDIA's Kubernetes device
    plugin MPS is experimental (since v0.15.0, still so in v0.20.0), full GPUs only, not
    on MIG-enabled devices, and, like time-slicing, applied to every GPU of the node
    (device plugin README). DCGM-Exporter does not associate metrics with containers
    when MPS is enabled (NVIDIA GPU Operator, "Multi-Process Service in Kubernetes",
    Limitations).
``time-slicing``
    The device plugin advertises each GPU ``replicas`` times; contexts take turns on the
    whole GPU. NVIDIA: "no memory or fault-isolation between replicas" (GPU Operator,
    "Time-Slicing GPUs in Kubernetes"). Per-pod GPU metrics are lost: dcgm-exporter
    attributes a shared GPU's metrics to one pod only (NVIDIA/dcgm-exporter issue #307,
    open; per-process attribution is proposed upstream). In practice separate contexts
    usually confine application faults (Xid 13, 31) to their process, which NVIDIA does
    not promise; :data:`ISOLATION` scores what the vendor promises.
``DRA``
    Dynamic Resource Allocation (Kubernetes ``resource.k8s.io``): the core API is stable
    (GA in v1.34, its feature gate locked on since v1.35), but the pieces that divide one
    GPU are newer: partitionable devices (``DRAPartitionableDevices``) and consumable
    capacity (``DRAConsumableCapacity``, KEP-5075) are both beta, on by default, since
    v1.36 (Kubernetes feature-gate definitions; KEP-5075: alpha v1.34, beta v1.36), and
    the GPU allocation half of NVIDIA's DRA driver is a Technology Preview, "not yet
    officially supported" (GPU Operator, "NVIDIA DRA Driver for GPUs").
    So the table lists DRA as a row to watch, and what a claim gets is still one of the
    four mechanisms above, with their isolation.

The rules are the ones the chapter argues for, in order: whole-GPU requests get whole
GPUs; workloads that need isolation from another tenant get MIG where the hardware has
it and a whole GPU where it does not; trusted co-tenants get MPS for concurrent
inference and time-slicing for bursty interactive work; with DRA available and pods of
varying sizes, DRA (marked "watch this"). Every answer carries the reason and the honest
answer to "can I have half a GPU?".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from lab02_device_plugin.errors import InputError
from lab02_device_plugin.models.mig_partition import quantization_waste
from lab02_device_plugin.plugin.mig import (
    MIG_GPUS, canonical_model, get_profile, gpu_multiprocessors, mixed_resource_name,
    nominal_memory_gb, profiles, table_name,
)

MECHANISMS = ("exclusive", "MIG", "MPS", "time-slicing", "DRA")
WORKLOADS = ("training", "inference", "interactive", "batch")

#: Display names of common cloud GPUs without MIG.
_NO_MIG_NAMES = MappingProxyType({"t4": "T4", "v100": "V100", "a10": "A10", "a10g": "A10G",
                                  "l4": "L4", "l40": "L40", "l40s": "L40S"})

#: GPU models and whether they support MIG: every GPU of NVIDIA's "Supported GPUs" table
#: (:data:`lab02_device_plugin.plugin.mig.MIG_GPUS`), and common cloud GPUs without MIG (T4,
#: V100, A10, A10G, L4, L40, L40S). Keys are lower-case short names.
MIG_CAPABLE: MappingProxyType = MappingProxyType({
    **{key: True for key in MIG_GPUS}, **{key: False for key in _NO_MIG_NAMES}})

#: GPU memory in GB of the models whose memory this module states: the MIG tables'
#: nominal memory (:func:`lab02_device_plugin.plugin.mig.nominal_memory_gb`), the MIG User
#: Guide's product names (A30 24GB, H100 80GB PCIe, H100 94GB, GH200 96GB) and NVIDIA's
#: product pages (T4 16 GB, A10 and A10G 24 GB, L4 24 GB, L40 and L40S 48 GB). Others
#: (V100 16 or 32 GB, Blackwell parts) are left out: the answer then says to check.
GPU_MEMORY_GB: MappingProxyType = MappingProxyType({
    **{key: float(nominal_memory_gb(g.table)) for key, g in MIG_GPUS.items() if g.table},
    "a30": 24.0, "h100-pcie-80gb": 80.0, "h100-94gb": 94.0, "gh200": 96.0,
    "t4": 16.0, "a10": 24.0, "a10g": 24.0, "l4": 24.0, "l40": 48.0, "l40s": 48.0,
})


def gpu_name(gpu_model: str) -> str:
    """The product name of a :data:`MIG_CAPABLE` key, for text: ``"h100-80gb"`` ->
    ``"H100 SXM5 80GB"``, ``"l40s"`` -> ``"L40S"``; anything else is returned as given."""
    key = gpu_model.lower()
    if key in MIG_GPUS:
        return MIG_GPUS[key].name
    return _NO_MIG_NAMES.get(key, gpu_model)

#: Version notes for what is not generally available, in the Kubernetes docs' style.
FEATURE_STATE = MappingProxyType({
    "DRA": ("Kubernetes DRA core: stable (GA v1.34, locked on since v1.35). Partitionable "
            "devices (DRAPartitionableDevices) and consumable capacity "
            "(DRAConsumableCapacity, KEP-5075): beta, on by default, since v1.36. NVIDIA "
            "DRA driver, GPU allocation: Technology Preview."),
    "MPS": ("NVIDIA device plugin sharing.mps: experimental since v0.15.0 (still in "
            "v0.20.0); not with MIG."),
})


@dataclass(frozen=True)
class Requirements:
    """What a workload needs from the GPU it lands on.

    Attributes:
        gpus: GPUs per pod; below 1 means a fraction of one GPU (e.g. 0.5), > 0.
        gpu_model: the GPU model of the node pool (a key of :data:`MIG_CAPABLE`).
        workload: one of :data:`WORKLOADS`.
        other_tenants: True when the GPU may be shared with another tenant (team,
            customer) that this one must not be affected by or see.
        memory_isolation: needs a hard cap on GPU memory that others cannot exceed.
        fault_isolation: a crash or Xid in a neighbour must not kill this workload.
        latency_guarantee: needs predictable latency (a strict SLO; no neighbour may slow
            it down).
        dra_available: the cluster runs Kubernetes DRA with a GPU DRA driver.
        varying_sizes: pods of this kind ask for different slice sizes over time.
        memory_gb: GPU memory the pod needs (GB), if known; with MIG it picks the profile
            (:func:`lab02_device_plugin.models.mig_partition.quantization_waste`), > 0.
    """

    gpus: float
    gpu_model: str = "a100-80gb"
    workload: str = "inference"
    other_tenants: bool = False
    memory_isolation: bool = False
    fault_isolation: bool = False
    latency_guarantee: bool = False
    dra_available: bool = False
    varying_sizes: bool = False
    memory_gb: float | None = None

    def __post_init__(self) -> None:
        if isinstance(self.gpus, bool) or not isinstance(self.gpus, (int, float)) \
                or not math.isfinite(self.gpus) or self.gpus <= 0 or self.gpus > 1024:
            raise InputError(f"gpus: expected a number of GPUs in (0, 1024] (0.5 = half a GPU), "
                             f"got {self.gpus!r}")
        if not isinstance(self.gpu_model, str) or self.gpu_model.lower() not in MIG_CAPABLE:
            raise InputError(f"gpu_model: expected one of {sorted(MIG_CAPABLE)}, got {self.gpu_model!r}")
        if self.memory_gb is not None and (isinstance(self.memory_gb, bool)
                                           or not isinstance(self.memory_gb, (int, float))
                                           or not math.isfinite(self.memory_gb) or self.memory_gb <= 0):
            raise InputError(f"memory_gb: expected GPU memory in GB > 0 (or None), got {self.memory_gb!r}")
        if self.workload not in WORKLOADS:
            raise InputError(f"workload: expected one of {list(WORKLOADS)}, got {self.workload!r}")

    @property
    def needs_isolation(self) -> bool:
        """True when any hard isolation is required or another tenant shares the GPU."""
        return self.other_tenants or self.memory_isolation or self.fault_isolation or self.latency_guarantee


@dataclass(frozen=True)
class Isolation:
    """How well a mechanism isolates one dimension.

    Attributes:
        level: ``"yes"``, ``"partial"`` or ``"no"``: what the vendor documents.
        note: one sentence saying what is and is not isolated, and the source.
    """

    level: str
    note: str

    @property
    def score(self) -> float:
        """1 for yes, 0.5 for partial, 0 for no (the y axis of chapter 5's figure)."""
        return {"yes": 1.0, "partial": 0.5, "no": 0.0}[self.level]


#: Isolation of memory, faults and performance per mechanism: one table for chapter 1's
#: preview and chapter 5's figure (sources in the module docstring).
ISOLATION: MappingProxyType = MappingProxyType({
    "exclusive": MappingProxyType({
        "memory": Isolation("yes", "the whole GPU's memory"),
        "fault": Isolation("yes", "no other tenant on the GPU"),
        "performance": Isolation("yes", "no neighbour"),
    }),
    "MIG": MappingProxyType({
        "memory": Isolation("yes", "own memory slices and L2 per GPU instance"),
        "fault": Isolation("partial", "yes for application faults; GPU-wide events (Xid 79, "
                                      "uncontained ECC errors, a GPU reset) still reach every "
                                      "instance"),
        "performance": Isolation("yes", "own SMs, L2 and memory bandwidth; still shared: the "
                                 "GPU-wide power and clock budget, PCIe and NVLink, the host"),
    }),
    "MPS": MappingProxyType({
        "memory": Isolation("partial", "own address space (Volta and later) and a per-client "
                                       "pinned-memory limit"),
        "fault": Isolation("no", "a fatal fault in one client reaches every client of its "
                                 "MPS server"),
        "performance": Isolation("partial", "a cap on each client's SMs; memory bandwidth and "
                                            "L2 shared"),
    }),
    "time-slicing": MappingProxyType({
        "memory": Isolation("no", "no limit: the sum must fit, and one pod can OOM another"),
        "fault": Isolation("no", "none promised by NVIDIA; separate contexts usually confine "
                                 "application faults (Xid 13, 31)"),
        "performance": Isolation("no", "busy tenants take turns on the whole GPU"),
    }),
})

#: Dimensions of :data:`ISOLATION`, in table order.
ISOLATION_DIMENSIONS = ("memory", "fault", "performance")

#: How finely each mechanism can divide one GPU, on an ordinal axis for chapter 5's figure,
#: each with its tick label.
PACKING_GRANULARITY: MappingProxyType = MappingProxyType({
    "exclusive": (1.0, "whole GPU"), "MIG": (2.0, "fixed profiles\n(up to 7)"),
    "MPS": (3.0, "any share,\ncapped"), "time-slicing": (4.0, "any number\nof replicas"),
})


def isolation_rows(how: dict[str, str] | None = None) -> list[list[str]]:
    """Chapter 1's preview table from :data:`ISOLATION`: one row per mechanism (exclusive
    left out), cells ``"<level>: <note>"``; ``how`` maps mechanism -> "how it shares"."""
    rows = []
    for mech in ("MPS", "MIG", "time-slicing"):
        cells = [f"{ISOLATION[mech][d].level}: {ISOLATION[mech][d].note}" for d in ISOLATION_DIMENSIONS]
        rows.append([mech, (how or {}).get(mech, ""), *cells])
    return rows


# --------------------------------------------------------------------------- what is shared

#: Resources of one GPU, in the order of chapter 5's sharing diagram.
SHARED_RESOURCES = ("SMs", "L2 cache", "memory bandwidth", "memory capacity", "address space",
                    "time on the GPU", "fault domain", "per-pod metrics")

#: How each mechanism hands out each resource: ``own`` (one tenant has all of it),
#: ``space`` (partitioned in space), ``time`` (partitioned in time), ``capped`` (shared
#: under a per-tenant cap) or ``shared``. Sources as in the module docstring; per-pod
#: metrics: DCGM has MIG GPU and compute instances as entities of their own (DCGM
#: documentation, "Entities and Groups"), but DCGM-Exporter does not associate metrics with
#: containers under MPS (GPU Operator, "Multi-Process Service in Kubernetes", Limitations)
#: and reports a time-sliced GPU's metrics for one pod only (NVIDIA/dcgm-exporter issue
#: #307, open).
SHARING: MappingProxyType = MappingProxyType({
    "exclusive": dict.fromkeys(SHARED_RESOURCES, "own"),
    "MIG": {"SMs": "space", "L2 cache": "space", "memory bandwidth": "space",
            "memory capacity": "space", "address space": "own", "time on the GPU": "own",
            "fault domain": "space*", "per-pod metrics": "own"},
    "MPS": {"SMs": "capped", "L2 cache": "shared", "memory bandwidth": "shared",
            "memory capacity": "capped", "address space": "own", "time on the GPU": "shared",
            "fault domain": "shared", "per-pod metrics": "shared"},
    "time-slicing": {"SMs": "time", "L2 cache": "shared", "memory bandwidth": "time",
                     "memory capacity": "shared", "address space": "own",
                     "time on the GPU": "time", "fault domain": "shared",
                     "per-pod metrics": "shared"},
})

_KIND_STYLE = {  # kind -> (colour, label)
    "own": ("#4c9a5b", "own: one tenant has all of it"),
    "space": ("#9fd49a", "partitioned in space"),
    "time": ("#f3d77a", "partitioned in time"),
    "capped": ("#f0a35e", "shared under a per-tenant cap"),
    "shared": ("#d9645a", "shared, no limit"),
}


_KIND_WORDS = {"own": "own", "space": "split", "time": "turns", "capped": "capped",
               "shared": "shared"}
_METRIC_WORDS = {**_KIND_WORDS, "own": "per pod", "shared": "card only"}


def draw_sharing_matrix(ax: Any = None) -> Any:
    """Draw :data:`SHARING` as a coloured grid (rows: resources, columns: mechanisms) with
    a legend; returns the Axes. A ``*`` marks MIG's fault domain: instances are separate
    fault domains for application faults, GPU-wide events reach them all."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    mechs = list(SHARING)
    if ax is None:
        _fig, ax = plt.subplots(figsize=(7.2, 4.6))
    for c, mech in enumerate(mechs):
        for r, res in enumerate(SHARED_RESOURCES):
            kind = SHARING[mech][res]
            colour = _KIND_STYLE[kind.rstrip("*")][0]
            ax.add_patch(plt.Rectangle((c, r), 1, 1, facecolor=colour, edgecolor="white", lw=2))
            words = _METRIC_WORDS if res == "per-pod metrics" else _KIND_WORDS
            text = words[kind.rstrip("*")] + ("*" if kind.endswith("*") else "")
            ax.text(c + 0.5, r + 0.5, text, ha="center", va="center", fontsize=9)
    ax.set_xlim(0, len(mechs))
    ax.set_ylim(len(SHARED_RESOURCES), 0)
    ax.set_xticks([c + 0.5 for c in range(len(mechs))], mechs)
    ax.xaxis.tick_top()
    ax.set_yticks([r + 0.5 for r in range(len(SHARED_RESOURCES))], SHARED_RESOURCES)
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    handles = [Patch(facecolor=col, label=label) for col, label in _KIND_STYLE.values()]
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.02), ncol=2,
              fontsize=9, frameon=False)
    ax.text(len(mechs), len(SHARED_RESOURCES) + 1.9,
            "* application faults stay in their instance; GPU-wide events reach all",
            ha="right", va="top", fontsize=9)
    return ax


# --------------------------------------------------------------------------- decisions

@dataclass(frozen=True)
class Decision:
    """The recommended mechanism, why, and what "half a GPU" means with it.

    Attributes:
        mechanism: one of :data:`MECHANISMS`.
        reason: one or two sentences saying which requirement decided it.
        half_gpu: the honest answer to "can this pod have half a GPU?".
        request: what the pod puts in ``resources.limits`` (extended resources are integers)
            or how the node is configured.
        isolates: mechanism's :data:`ISOLATION` levels (``{}`` for DRA: that of what the
            claim lands on).
    """

    mechanism: str
    reason: str
    half_gpu: str
    request: str
    isolates: dict[str, str] = field(default_factory=dict)


def _levels(mechanism: str) -> dict[str, str]:
    return {d: ISOLATION[mechanism][d].level for d in ISOLATION_DIMENSIONS}


#: A no-break space, between a number and its unit or "%" in generated text.
NBSP = "\u00a0"


def percent(x: float) -> str:
    """A share as a whole percentage with a no-break space: 0.4545 -> '45 %'."""
    return f"{x * 100:.0f}{NBSP}%"


def half_gpu_mig(gpu_model: str) -> str:
    """The honest "half a GPU?" answer for MIG on ``gpu_model``, from its SM counts.

    On an H100 SXM5 80GB: 3g.40gb has 60 of 132 SMs (45 %), 4g.40gb 64 (48 %), so no
    profile below 7g.80gb reaches half. On an A30 (no table here) the MIG User Guide's
    2g.12gb has 2/4 of the memory and 2/4 of the SMs: an exact half.
    """
    key = canonical_model(gpu_model)
    if key is None:
        gpu = MIG_GPUS.get(gpu_model.lower())
        if gpu is not None and gpu.half_profile is not None:
            return (f"Yes, on the {gpu.name}: its {gpu.half_profile} profile has half the "
                    f"memory and half the SMs ({gpu.compute_slices // 2} of "
                    f"{gpu.compute_slices} slices of each, NVIDIA MIG User Guide), an "
                    "isolated half; a GPU holds two of them.")
        return ("No MIG profile is exactly half: MIG cuts a GPU into fixed profiles with fixed "
                "SM counts (NVIDIA MIG User Guide); ask for the smallest profile whose memory "
                "fits and accept the quantization waste.")
    table = profiles(key)
    total = gpu_multiprocessors(key)
    q3 = next(p for p in table.values() if p.compute_slices == 3)
    q4 = next(p for p in table.values() if p.compute_slices == 4)
    reach = [p.name for p in table.values() if p.compute_slices < 7 and p.sm_share >= 0.5]
    verdict = (f"{reach[0]} is the smallest with half the SMs" if reach else
               "no profile below 7g reaches half the SMs")
    return (f"No MIG profile is exactly half. On the {table_name(key)}, {q3.name} has "
            f"{q3.multiprocessors} of {total} SMs ({percent(q3.sm_share)}) and {q4.name} "
            f"{q4.multiprocessors} ({percent(q4.sm_share)}), each with half the memory: "
            f"{verdict}. A GPU holds two {q3.name} or one {q4.name} plus one {q3.name}. "
            f"Offer the isolated {q3.name} and say it is {percent(q3.sm_share)} of the SMs.")


_HALF_MPS = (f"Close, but a limit, not a partition: with sharing.mps replicas: 2 NVIDIA's "
             f"plugin caps each client at 50{NBSP}% of the threads and half the memory, but "
             "the two halves share one fault domain, the memory bandwidth and the L2.")
_HALF_TS = ("No: time-slicing with replicas: 2 gives each pod the whole GPU for half the time at "
            "best, with no memory limit; a neighbour can take all the memory or all the time.")
_HALF_EXCL = ("Not on this GPU: without MIG there is no isolated half. Give a whole GPU, or move "
              "the workload to a smaller GPU model or to a MIG-capable node pool.")


def _mig_profile(req: Requirements) -> tuple[str, float, str | None] | None:
    """The smallest MIG profile whose memory covers ``req.memory_gb`` (the rule the answer
    gives: memory decides, SMs come with it), its share of the SMs, and the smallest profile
    that also covers ``req.gpus`` of the SMs when that one is bigger (else None).

    None when the GPU model has no profile table, the memory is unknown, or nothing fits.
    Profiles come from :func:`lab02_device_plugin.models.mig_partition.quantization_waste` (``+me`` excluded).
    """
    if req.memory_gb is None or canonical_model(req.gpu_model) is None:
        return None
    try:
        by_memory = quantization_waste(req.gpu_model, req.memory_gb, 0.0)
    except InputError:
        return None
    try:
        with_sms = quantization_waste(req.gpu_model, req.memory_gb, min(req.gpus, 1.0)).profile.name
    except InputError:
        with_sms = None
    bigger = with_sms if with_sms != by_memory.profile.name else None
    return by_memory.profile.name, by_memory.profile.sm_share, bigger


def _replicas_by_memory(req: Requirements, replicas: int) -> tuple[int, str]:
    """Cap ``replicas`` so that ``req.memory_gb`` fits the card's memory divided by it
    (:data:`GPU_MEMORY_GB`); returns the replicas and a sentence for the reason ("" when
    the memory is not given). With the card's memory unknown, the sentence says to check."""
    if req.memory_gb is None:
        return replicas, ""
    card = GPU_MEMORY_GB.get(req.gpu_model.lower())
    if card is None:
        return replicas, (f" Check that {req.memory_gb:g}{NBSP}GB fits 1/{replicas} of the "
                          f"{gpu_name(req.gpu_model)}'s memory.")
    fit = math.floor(card / req.memory_gb + 1e-9)
    if fit >= replicas:
        return replicas, (f" Memory fits: {replicas} x {req.memory_gb:g}{NBSP}GB within the "
                          f"card's {card:g}{NBSP}GB.")
    return fit, (f" Memory decides: {req.memory_gb:g}{NBSP}GB per pod on the "
                 f"{gpu_name(req.gpu_model)}'s {card:g}{NBSP}GB allows replicas: {fit}, not the "
                 f"{replicas} that {req.gpus:g} of a GPU would give.")


def decide(req: Requirements) -> Decision:
    """Apply the chapter's decision table to ``req`` (rules in the module docstring).

    Raises:
        InputError: only through :class:`Requirements` validation.
    """
    mig = MIG_CAPABLE[req.gpu_model.lower()]
    name = gpu_name(req.gpu_model)
    if req.gpus >= 1:
        whole = math.ceil(req.gpus - 1e-9)
        note = "" if float(req.gpus).is_integer() else f" ({req.gpus:g} rounded up: extended resources are integers)"
        reason = f"The pod needs at least one whole GPU{note}; sharing would only slow it down."
        if req.latency_guarantee:
            reason = (f"A strict latency SLO in production: a dedicated GPU{note} has no neighbour "
                      "to slow it down (a MIG instance is the alternative on A100/H100 when the "
                      "model fits its SMs and memory).")
        return Decision("exclusive", reason, "Not asked: the pod uses whole GPUs.",
                        f"nvidia.com/gpu: {whole}", _levels("exclusive"))
    if req.dra_available and req.varying_sizes and not req.needs_isolation:
        return Decision("DRA", "Watch this, not yet a default: pods ask for different sizes over "
                        "time, and DRA lets a claim pick a device by attributes at allocation "
                        "time instead of fixing replicas or MIG layouts per node. "
                        + FEATURE_STATE["DRA"],
                        "A claim can ask for a shared GPU or a MIG device by its attributes; what "
                        "it gets is still exclusive, MIG, MPS or time-slicing, with their "
                        "isolation.",
                        "resourceClaims: a ResourceClaimTemplate for the GPU device class", {})
    if req.needs_isolation:
        needs = [label for label, flag in (("another tenant shares the GPU", req.other_tenants),
                                           ("memory isolation", req.memory_isolation),
                                           ("fault isolation", req.fault_isolation),
                                           ("a latency guarantee", req.latency_guarantee)) if flag]
        why = ", ".join(needs)
        if mig:
            request = "nvidia.com/mig-<profile>: 1 (mixed strategy) or nvidia.com/gpu: 1 (single)"
            reason = (f"Hard isolation is needed ({why}) and the {name} supports MIG: "
                      "each instance has its own SMs, memory and L2.")
            found = _mig_profile(req)
            if found is not None:
                profile, sm_share, bigger = found
                request = f"{mixed_resource_name(profile)}: 1 (mixed strategy)"
                reason += (f" The smallest profile whose memory covers {req.memory_gb:g}{NBSP}GB "
                           f"is {profile} ({percent(sm_share)} of the SMs).")
                if bigger is not None:
                    prof = get_profile(req.gpu_model, bigger)
                    reason += (f" That is less than the {percent(req.gpus)} of the SMs asked; the "
                               f"smallest profile with both is {bigger} ({percent(prof.sm_share)}).")
            return Decision("MIG", reason, half_gpu_mig(req.gpu_model), request, _levels("MIG"))
        return Decision("exclusive", f"Hard isolation is needed ({why}) but the {name} has no "
                        "MIG; MPS and time-slicing do not isolate faults, so only a whole GPU does.",
                        _HALF_EXCL, "nvidia.com/gpu: 1", _levels("exclusive"))
    if req.workload in ("inference", "batch", "training"):
        replicas, memory_note = _replicas_by_memory(req, max(2, math.floor(1 / req.gpus + 1e-9)))
        if replicas < 2:
            card = GPU_MEMORY_GB[req.gpu_model.lower()]
            return Decision("exclusive", f"The pod needs {req.memory_gb:g}{NBSP}GB of GPU memory; "
                            "with sharing.mps NVIDIA's plugin limits each client to the card's "
                            f"memory divided by replicas, and replicas: 2 leaves "
                            f"{card / 2:g}{NBSP}GB of the {name}'s {card:g}{NBSP}GB. Give it a "
                            "whole GPU.",
                            "Not with MPS: its memory limit per client would be below what the "
                            "pod needs.", "nvidia.com/gpu: 1", _levels("exclusive"))
        if req.workload == "training":
            why = ("Small training jobs of one trusted team (sweeps, fine-tunes) are busy all "
                   "the time, so time-slicing would only make them take turns; MPS runs their "
                   "kernels side by side where each leaves SMs idle.")
        else:
            why = ("Trusted co-tenants running many small kernels: MPS runs them "
                   "concurrently.")
        return Decision("MPS", f"{why} Configure sharing.mps with replicas: {replicas}; NVIDIA's "
                        f"plugin then caps each client at {100 // replicas}{NBSP}% of the threads "
                        f"and 1/{replicas} of the memory (a pod's "
                        "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE can only lower that)." + memory_note
                        + " " + FEATURE_STATE["MPS"], _HALF_MPS,
                        f"nvidia.com/gpu: 1 from sharing.mps (replicas: {replicas})", _levels("MPS"))
    replicas, memory_note = _replicas_by_memory(req, max(2, math.floor(1 / req.gpus + 1e-9)))
    if replicas < 1:
        return Decision("exclusive", f"The pod needs {req.memory_gb:g}{NBSP}GB, more than the "
                        f"{name} has: move it to a GPU with more memory.",
                        "Not on this GPU: the pod needs more memory than the whole card.",
                        "nvidia.com/gpu: 1 (on a larger GPU model)", _levels("exclusive"))
    if memory_note:
        memory_note = memory_note.replace(" Memory fits:", " Nothing limits memory under "
                                          "time-slicing, so the sum must fit:")
    return Decision("time-slicing", "Bursty or interactive work by one team that can tolerate a "
                    "neighbour: time-slicing packs mostly idle notebooks onto one card, and a "
                    "busy one gets the whole GPU while the others are idle." + memory_note,
                    _HALF_TS, "nvidia.com/gpu.shared: 1 (time-slicing, renameByDefault, "
                    f"replicas: {replicas})", _levels("time-slicing"))


def decision_table() -> list[tuple[str, Requirements, Decision]]:
    """The chapter's worked cases: a label, the requirements and the decision, in order."""
    cases = [
        ("8-GPU training job", Requirements(gpus=8, workload="training")),
        ("regulated tenant, half an H100", Requirements(gpus=0.5, gpu_model="h100-80gb",
                                                        other_tenants=True, memory_gb=30)),
        ("regulated tenant, half an L40S", Requirements(gpus=0.5, gpu_model="l40s",
                                                        other_tenants=True)),
        ("team's inference replicas, A100", Requirements(gpus=0.25, workload="inference")),
        ("data-science notebooks", Requirements(gpus=0.25, workload="interactive")),
        ("varying sizes with DRA (watch this)", Requirements(gpus=0.5, dra_available=True,
                                                             varying_sizes=True)),
        ("strict latency SLO, production serving", Requirements(gpus=1, gpu_model="h100-80gb",
                                                                latency_guarantee=True)),
    ]
    return [(label, req, decide(req)) for label, req in cases]
