"""Fragmentation dashboard: stranded GPUs, allocation ratio and MIG profile mix utilisation over time."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure


def check_figure_path(path: str, option: str) -> None:
    """Fail before any work when a figure cannot be saved to ``path``: an extension
    matplotlib cannot write, a folder that does not exist, or a folder given as the file.

    Args:
        path: the file name the user gave.
        option: the option that gave it (``--plot``, ``--dashboard``), for the message.

    Raises:
        InputError: naming ``option`` and ``path`` and what was expected.
    """
    from pathlib import Path

    from lab01_cluster_sim.errors import InputError

    p = Path(path)
    formats = Figure().canvas.get_supported_filetypes()
    if p.suffix.lower().lstrip(".") not in formats:
        raise InputError(f"{option} {path}: expected a file name ending in one of "
                         f"{', '.join('.' + e for e in sorted(formats))}")
    from lab01_cluster_sim.options import check_output_path

    check_output_path(path, option)


def fragmentation_dashboard(times: Sequence[float], stranded: Sequence[float], allocation_ratio: Sequence[float],
                            mig_times: Sequence[float] = (), mig_use: Mapping[str, Sequence[float]] | None = None,
                            title: str = "Fragmentation dashboard") -> Figure:
    """Stacked panels: stranded GPUs and allocation ratio of the whole-GPU workload on one
    shared time axis, and (when ``mig_use`` is given) the MIG profile mix of the separate
    MIG workload on its own time axis (the two workloads are unrelated runs, so their
    clocks are not aligned). Ratios are drawn as percentages.

    Args:
        times: sample times, s; ``stranded`` (GPUs) and ``allocation_ratio`` (0..1) at them.
        mig_times: sample times of the MIG panel, s.
        mig_use: profile name -> share of that profile's instances in use (0..1) at ``mig_times``.
    """
    from matplotlib.ticker import PercentFormatter

    t = np.asarray(times, dtype=float) / 3600
    panels = 3 if mig_use else 2
    fig = Figure(figsize=(9, 2.4 * panels + 0.8), layout="constrained")
    axes = fig.subplots(panels, 1)
    axes[1].sharex(axes[0])
    axes[0].step(t, stranded, where="post", color="tab:red")
    axes[0].set_ylabel("stranded GPUs")
    axes[0].set_title("whole-GPU workload", fontsize="medium", loc="left")
    axes[0].tick_params(labelbottom=False)
    axes[1].step(t, np.asarray(allocation_ratio, dtype=float) * 100, where="post", color="tab:blue")
    axes[1].set_ylabel("GPUs allocated (%)")
    axes[1].set_ylim(0, 105)
    axes[1].yaxis.set_major_formatter(PercentFormatter(100))
    axes[1].set_xlabel("time of the whole-GPU workload (h)")
    if mig_use:
        mt = np.asarray(mig_times, dtype=float) / 3600
        for name, use in sorted(mig_use.items()):
            axes[2].step(mt, np.asarray(use, dtype=float) * 100, where="post", label=name)
        axes[2].set_ylabel("instances in use (%)")
        axes[2].set_ylim(0, 105)
        axes[2].yaxis.set_major_formatter(PercentFormatter(100))
        axes[2].set_title("MIG workload (separate run): share of each profile's instances in use",
                          fontsize="medium", loc="left")
        axes[2].set_xlabel("time of the MIG workload (h)")
        axes[2].legend(loc="upper right", fontsize="small")
    fig.suptitle(title)
    return fig


def sharing_modes_figure(rows: Sequence) -> Figure:
    """Slowdown and memory waste of small jobs per sharing mode (the scheduler's view).

    Args:
        rows: :class:`lab01_cluster_sim.sharing_modes.SharingRow` items
            (:func:`lab01_cluster_sim.sharing_modes.compare_sharing_modes`).
    """
    names = [r.mode for r in rows]
    x = list(range(len(rows)))
    fig = Figure(figsize=(10, 3.4), layout="constrained")
    ax1, ax2, ax3 = fig.subplots(1, 3)
    failed = [getattr(r, "jobs_failed", 0) for r in rows]
    waiting = [getattr(r, "jobs_waiting", 0) for r in rows]
    ax1.bar(x, [r.jobs_on_gpu - f for r, f in zip(rows, failed)], color="tab:blue", label="run")
    ax1.bar(x, failed, bottom=[r.jobs_on_gpu - f for r, f in zip(rows, failed)], color="tab:red",
            label="fail: out of memory / over MPS limit")
    ax1.bar(x, waiting, bottom=[r.jobs_on_gpu for r in rows], color="tab:gray", label="wait: no GPU / instance")
    ax1.set_ylabel("jobs asked for, on one GPU")
    if any(failed) or any(waiting):
        ax1.set_ylim(0, 1.4 * max(r.jobs_on_gpu + w for r, w in zip(rows, waiting)))   # room for the legend
        ax1.legend(loc="upper left", fontsize="small")
    ax2.bar(x, [r.slowdown for r in rows], color=["tab:green" if r.memory_isolated else "tab:red" for r in rows])
    ax2.set_ylabel("slowdown (red: no memory isolation)")
    ax3.bar(x, [r.memory_waste * 100 for r in rows], color="tab:gray")
    ax3.set_ylabel("GPU memory wasted (%)")
    ax3.set_ylim(0, 100)
    for ax in (ax1, ax2, ax3):
        ax.set_xticks(x, names, rotation=25, ha="right")
    fig.suptitle("GPU sharing modes as the scheduler sees them")
    return fig
