"""Time series of a timed run: GPU allocation ratio and stranded GPUs over time, and with
Kueue admission one panel per ClusterQueue (admitted GPUs against its nominal quota)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from lab01_cluster_sim.metrics import Timeline


MAX_QUEUE_PANELS = 8
"""Most ClusterQueue panels in one figure (the first by name; the title says how many more)."""


def plot_timeline(timelines: Timeline | Mapping[str, Timeline], title: str | None = None,
                  time_unit: str = "h", quotas: Mapping[str, Sequence[Any]] | None = None) -> Figure:
    """Stacked panels sharing the time axis: allocation ratio (%), stranded GPUs and, with
    ``quotas``, one panel per ClusterQueue: the GPUs its admitted workloads hold (a step
    line per run) against its nominal quota (dashed), the part above nominal (borrowed from
    the cohort) shaded, and ``nominalQuota + borrowingLimit`` dotted where a limit is set.

    Args:
        timelines: one :class:`Timeline`, or label -> Timeline to overlay several runs
            (e.g. one per policy or mode).
        title: figure title.
        time_unit: ``"s"``, ``"min"`` or ``"h"`` for the x axis.
        quotas: run label (as in ``timelines``) -> the run's
            :class:`~lab01_cluster_sim.admission.plugin.QuotaSeries`, one per ClusterQueue
            (the same queues in every run), from
            :meth:`~lab01_cluster_sim.admission.plugin.KueueAdmissionPlugin.gpu_quota_timeline`.
            At most :data:`MAX_QUEUE_PANELS` panels are drawn.

    Returns:
        A matplotlib Figure (never shown; the caller saves or displays it).

    Raises:
        ValueError: unknown ``time_unit``.
    """
    scale = {"s": 1.0, "min": 60.0, "h": 3600.0}
    if time_unit not in scale:
        raise ValueError(f"time_unit: expected one of {', '.join(scale)}, got {time_unit!r}")
    if isinstance(timelines, Timeline):
        timelines = {"": timelines}
    queues = [q.cluster_queue for q in next(iter(quotas.values()), [])] if quotas else []
    hidden = max(0, len(queues) - MAX_QUEUE_PANELS)
    queues = queues[:MAX_QUEUE_PANELS]
    fig = Figure(figsize=(8, 5 + 1.9 * len(queues)), constrained_layout=True)
    axes = fig.subplots(2 + len(queues), 1, sharex=True,
                        gridspec_kw={"height_ratios": [1, 1] + [0.85] * len(queues)})
    ax_alloc, ax_str = axes[0], axes[1]
    for label, tl in timelines.items():
        t = tl.time / scale[time_unit]
        ax_alloc.step(t, 100 * tl.allocation_ratio, where="post", label=label or None)
        ok = tl.stranded_gpus >= 0  # -1 = not computed at that sample
        ax_str.step(t[ok], tl.stranded_gpus[ok], where="post", label=label or None)
    ax_alloc.set_ylabel("GPU allocation ratio (%)")
    ax_alloc.set_ylim(0, 100)
    ax_str.set_ylabel("stranded GPUs")
    ax_str.set_xlabel(f"time ({time_unit})")
    # stranded GPUs are a count: integer ticks from 0 (an all-zero series would otherwise
    # get matplotlib's default -0.05..0.05 range)
    ax_str.yaxis.set_major_locator(MaxNLocator(integer=True))
    top = max((int(tl.stranded_gpus.max(initial=0)) for tl in timelines.values()), default=0)
    ax_str.set_ylim(0, max(1, top) * 1.05)
    if any(timelines):
        ax_alloc.legend(loc="best", fontsize=9)
    for i, name in enumerate(queues):
        _quota_panel(axes[2 + i], name, {label: next(q for q in series if q.cluster_queue == name)
                                         for label, series in quotas.items()}, scale[time_unit])
    axes[-1].set_xlabel(f"time ({time_unit})")
    if queues:
        ax_str.set_xlabel("")
    for ax in axes:
        ax.grid(True, alpha=0.3)
    if hidden:
        title = f"{title or ''}{' ' if title else ''}({hidden} more ClusterQueue{'s' * (hidden != 1)} not drawn)"
    if title:
        fig.suptitle(title)
    return fig


def _quota_panel(ax, name: str, runs: Mapping[str, Any], scale: float) -> None:
    """One ClusterQueue's panel: admitted GPUs per run (step), nominal quota, borrowing."""
    first = next(iter(runs.values()))
    top = max([first.nominal] + [int(q.gpus.max(initial=0)) for q in runs.values()])
    shaded = False
    for label, q in runs.items():
        t = q.time / scale
        ax.step(t, q.gpus, where="post", label=f"admitted{f' ({label})' if len(runs) > 1 else ''}")
        if (q.gpus > q.nominal).any():      # zero height wherever the queue is within its nominal
            ax.fill_between(t, q.nominal, np.maximum(q.gpus, q.nominal), step="post", alpha=0.3, color="tab:orange",
                            linewidth=0, label="borrowed from the cohort" if not shaded else None)
            shaded = True
    ax.axhline(first.nominal, color="black", linestyle="--", linewidth=1, label=f"nominal quota {first.nominal}")
    if first.borrowing_limit is not None:
        ceiling = first.nominal + first.borrowing_limit
        top = max(top, ceiling)
        ax.axhline(ceiling, color="black", linestyle=":", linewidth=1, label=f"nominal + borrowingLimit {ceiling}")
    ax.set_ylim(0, max(1, top) * 1.45)     # room for the legend above the lines
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("GPUs")
    cohort = f" (cohort {first.cohort})" if first.cohort else " (no cohort: cannot borrow)"
    ax.set_title(f"ClusterQueue {name}{cohort}: admitted GPUs", fontsize=10, loc="left")
    ax.legend(loc="upper right", fontsize=9, ncol=3)


__all__ = ["plot_timeline"]
