"""Figure of the scheduling trilemma: wait, utilisation and fairness per queue discipline."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from matplotlib.figure import Figure


def trilemma_figure(rows: Sequence[Mapping]) -> Figure:
    """Wait (mean and p99, h), utilisation and fairness per discipline: the wait panel on top,
    utilisation and fairness below (7 in wide, so the labels stay readable on a page).

    Fairness shows Jain's index over tenants' mean inverse slowdown (``jain_index``: how evenly
    queueing slows the tenants) and, when the rows have it, over the dominant shares of the
    tenants with work waiting (``jain_dominant_share``: what DRF equalises).

    Args:
        rows: rows of :func:`lab01_cluster_sim.studies.trilemma.trilemma_report`.
    """
    names = [r["discipline"] for r in rows]
    x = list(range(len(names)))
    fig = Figure(figsize=(7, 6), layout="constrained")
    axes = fig.subplot_mosaic([["wait", "wait"], ["util", "fair"]])
    ax1, ax2, ax3 = axes["wait"], axes["util"], axes["fair"]
    w = 0.4
    ax1.bar([i - w / 2 for i in x], [r["mean_wait_s"] / 3600 for r in rows], w, label="mean")
    ax1.bar([i + w / 2 for i in x], [r["p99_wait_s"] / 3600 for r in rows], w, label="p99")
    ax1.set_ylabel("queueing delay (h)")
    ax1.legend(loc="best", ncols=2, fontsize="small")   # where it covers the fewest bars
    ax2.bar(x, [100 * r["utilisation"] for r in rows], color="tab:green")
    ax2.set_ylabel("GPU utilisation (%)")
    ax2.set_ylim(0, 100)
    shares = [r.get("jain_dominant_share") for r in rows]
    if all(v is not None for v in shares):
        ax3.bar([i - w / 2 for i in x], [r["jain_index"] for r in rows], w, color="tab:purple", label="slowdown")
        ax3.bar([i + w / 2 for i in x], shares, w, color="tab:orange", label="dominant share")
        # below the axis and its rotated labels, so that it covers no bar
        ax3.legend(loc="upper center", bbox_to_anchor=(0.5, -0.42), ncols=2, fontsize="small")
    else:
        ax3.bar(x, [r["jain_index"] for r in rows], color="tab:purple")
    ax3.set_ylabel("Jain's index over tenants")
    ax3.set_ylim(0, 1.05)
    for ax in (ax1, ax2, ax3):
        ax.set_xticks(x, names, rotation=30, ha="right")
    fig.suptitle("Scheduling trilemma: wait vs utilisation vs fairness")
    return fig
