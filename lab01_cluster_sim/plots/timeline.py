"""Time series of a timed run: GPU allocation ratio and stranded GPUs over time."""

from __future__ import annotations

from collections.abc import Mapping

from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from lab01_cluster_sim.metrics import Timeline


def plot_timeline(timelines: Timeline | Mapping[str, Timeline], title: str | None = None,
                  time_unit: str = "h") -> Figure:
    """Two stacked panels sharing the time axis: allocation ratio (%) and stranded GPUs.

    Args:
        timelines: one :class:`Timeline`, or label -> Timeline to overlay several runs
            (e.g. one per policy or mode).
        title: figure title.
        time_unit: ``"s"``, ``"min"`` or ``"h"`` for the x axis.

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
    fig = Figure(figsize=(8, 5), constrained_layout=True)
    ax_alloc, ax_str = fig.subplots(2, 1, sharex=True)
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
        ax_alloc.legend(loc="best", fontsize="small")
    for ax in (ax_alloc, ax_str):
        ax.grid(True, alpha=0.3)
    if title:
        fig.suptitle(title)
    return fig


__all__ = ["plot_timeline"]
