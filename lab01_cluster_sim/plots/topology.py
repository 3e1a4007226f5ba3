"""Figure of the topology trade-off: waiting for one NVLink island versus running slower across islands."""

from __future__ import annotations

import math
from collections.abc import Sequence

from matplotlib.figure import Figure


def wait_vs_slowdown_figure(rows: Sequence) -> Figure:
    """Mean wait, mean slowdown of multi-GPU jobs and mean JCT against the bounded wait.

    Args:
        rows: :class:`lab01_cluster_sim.topology.TopologyRow` items (``inf`` is drawn as
            "never span" at the right end).
    """
    labels = ["never" if math.isinf(r.max_wait_s) else f"{r.max_wait_s:g}" for r in rows]
    x = list(range(len(rows)))
    fig = Figure(figsize=(10, 3.6), layout="constrained")
    ax1, ax2, ax3 = fig.subplots(1, 3)
    ax1.plot(x, [r.mean_wait_s / 60 for r in rows], "o-")
    ax1.set_ylabel("mean wait (min)")
    ax2.plot(x, [r.mean_slowdown for r in rows], "o-", color="tab:red")
    ax2.set_ylabel("mean slowdown of multi-GPU jobs")
    ax3.plot(x, [r.mean_jct_s / 60 for r in rows], "o-", color="tab:green")
    ax3.set_ylabel("mean JCT (min)")
    for ax in (ax1, ax2, ax3):
        ax.set_xticks(x, labels)
        ax.set_xlabel("max wait for one island (s)")
    fig.suptitle("Topology: wait for one NVLink island, or span islands and run slower")
    return fig
