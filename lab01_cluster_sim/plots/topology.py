"""Figure of the topology trade-off: waiting for one NVLink island versus running slower across islands."""

from __future__ import annotations

import math
from collections.abc import Sequence

from matplotlib.figure import Figure


def bound_positions(bounds_s: Sequence[float]) -> tuple[list[float], float | None]:
    """x positions, minutes, of the wait bounds on a linear axis: a finite bound at its value;
    ``inf`` ("never span") a quarter of the largest finite bound beyond it (at 1 min when
    every bound is 0 or none is finite). Returns the positions and where "never" sits
    (None when no bound is infinite).

    >>> bound_positions([0, 300, 1800, float("inf")])
    ([0.0, 5.0, 30.0, 37.5], 37.5)
    """
    finite = [b / 60 for b in bounds_s if not math.isinf(b)]
    never = (1.25 * max(finite) if finite and max(finite) > 0 else 1.0) if len(finite) < len(bounds_s) else None
    return [never if math.isinf(b) else b / 60 for b in bounds_s], never


def wait_vs_slowdown_figure(rows: Sequence) -> Figure:
    """Mean wait, mean slowdown of multi-GPU jobs and mean JCT against the bounded wait.

    The x axis is the bound in minutes on a linear scale (so 0, 5 and 60 min are spaced as
    they differ); ``inf`` ("never span") is drawn at the right end (:func:`bound_positions`),
    joined by a dashed line as it is no point of that scale.

    Args:
        rows: :class:`lab01_cluster_sim.studies.topology.TopologyRow` items, in increasing bound.
    """
    x, never = bound_positions([r.max_wait_s for r in rows])
    fig = Figure(figsize=(10, 3.6), layout="constrained")
    ax1, ax2, ax3 = fig.subplots(1, 3)
    series = ((ax1, [r.mean_wait_s / 60 for r in rows], "tab:blue", "mean wait (min)"),
              (ax2, [r.mean_slowdown for r in rows], "tab:red", "mean slowdown of multi-GPU jobs"),
              (ax3, [r.mean_jct_s / 60 for r in rows], "tab:green", "mean JCT (min)"))
    finite = [i for i, r in enumerate(rows) if not math.isinf(r.max_wait_s)]
    for ax, y, color, label in series:
        ax.plot([x[i] for i in finite], [y[i] for i in finite], "o-", color=color)
        if never is not None:
            last = finite[-1:] if finite else []
            ax.plot([x[i] for i in last] + [never], [y[i] for i in last] + [y[-1]], "o--", color=color)
        ax.set_ylabel(label)
        ticks = [x[i] for i in finite] + ([never] if never is not None else [])
        labels = [f"{x[i]:g}" for i in finite] + (["never"] if never is not None else [])
        ax.set_xticks(ticks, labels)
        ax.set_xlabel("max wait for one island (min)")
    fig.suptitle("Topology: wait for one NVLink island, or span islands and run slower")
    return fig
