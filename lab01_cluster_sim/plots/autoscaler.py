"""Figure of an autoscaler run: provisioned GPUs, pending pods and cumulative cost over time."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure


def autoscaler_figure(result) -> Figure:
    """Two panels: ready nodes' GPUs and pending pods (steps), and cumulative cost ($).

    Args:
        result: an :class:`lab01_cluster_sim.autoscaler.pods.AutoscalerResult`.
    """
    t = np.array([row[0] for row in result.timeline] or [0.0])
    gpus = np.array([row[2] for row in result.timeline] or [0])
    pending = np.array([row[3] for row in result.timeline] or [0])
    fig = Figure(figsize=(9, 5), layout="constrained")
    ax1, ax2 = fig.subplots(2, 1, sharex=True)
    ax1.step(t / 60, gpus, where="post", label="GPUs on ready nodes")
    ax1.step(t / 60, pending, where="post", label="pending pods")
    ax1.set_ylabel("count")
    ax1.legend(loc="upper right")
    grid = np.linspace(0, max(result.end_s, 1.0), 200)
    cost = [sum(max(0.0, min(g, n.terminated_s if n.terminated_s is not None else g) - n.launched_s) / 3600
                * n.price_per_hour for n in result.nodes) for g in grid]
    ax2.plot(grid / 60, cost, color="tab:red")
    ax2.set_ylabel("cumulative cost ($)")
    ax2.set_xlabel("time (min)")
    fig.suptitle(f"Autoscaler: {sum(1 for n in result.nodes if n.pool is not None)} nodes launched, "
                 f"${result.cost_dollars():.2f}")
    return fig
