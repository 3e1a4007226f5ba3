"""Figure of the scheduling trilemma: wait, utilisation and fairness per queue discipline."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from matplotlib.figure import Figure


def trilemma_figure(rows: Sequence[Mapping]) -> Figure:
    """Three panels over disciplines: mean and p99 wait (h), utilisation, Jain's index.

    Args:
        rows: rows of :func:`lab01_cluster_sim.disciplines.trilemma.trilemma_report`.
    """
    names = [r["discipline"] for r in rows]
    x = range(len(names))
    fig = Figure(figsize=(11, 3.6), layout="constrained")
    ax1, ax2, ax3 = fig.subplots(1, 3)
    w = 0.4
    ax1.bar([i - w / 2 for i in x], [r["mean_wait_s"] / 3600 for r in rows], w, label="mean")
    ax1.bar([i + w / 2 for i in x], [r["p99_wait_s"] / 3600 for r in rows], w, label="p99")
    ax1.set_ylabel("queueing delay (h)")
    ax1.legend()
    ax2.bar(list(x), [r["utilisation"] for r in rows], color="tab:green")
    ax2.set_ylabel("GPU utilisation")
    ax2.set_ylim(0, 1)
    ax3.bar(list(x), [r["jain_index"] for r in rows], color="tab:purple")
    ax3.set_ylabel("Jain's index over tenants")
    ax3.set_ylim(0, 1.05)
    for ax in (ax1, ax2, ax3):
        ax.set_xticks(list(x), names, rotation=30, ha="right")
    fig.suptitle("Scheduling trilemma: wait vs utilisation vs fairness")
    return fig
