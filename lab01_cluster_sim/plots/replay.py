"""Figure of the FGD paper's replay: GPU allocation ratio against arrived load, per policy."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure

from lab01_cluster_sim.replay import ReplayResult


def plot_alloc_vs_arrived(results: Mapping[str, Sequence[ReplayResult]], x_min: int = 0,
                          title: str | None = None, ax=None) -> Figure:
    """GPU allocation ratio (%) against arrived GPU request (% of cluster GPU capacity).

    The shape of the paper's allocation figure (Weng et al., ATC'23; issue 2 calls it Fig. 7,
    the authors' plot scripts label the matching unallocated-GPU line "Fig. 9(a)" and plot
    100 - allocation: experiments/plot/ of hkust-adsl/kubernetes-scheduler-simulator):
    one line per policy, the median over seeds, with the band between the 25th and 75th
    percentiles when there are several seeds, and the diagonal where every arrived GPU is
    allocated.

    Args:
        results: policy -> its runs (e.g. :func:`lab01_cluster_sim.replay.compare`).
        x_min: first arrived-% column shown (the paper zooms in on 75..120).
        title: optional title.
        ax: a matplotlib Axes to draw on (default: a new figure).

    Returns:
        The matplotlib Figure (not shown; save or display it).
    """
    if ax is None:
        fig = Figure(figsize=(7, 4.5))
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    x_max = 0
    for policy, runs in results.items():
        if not runs:
            continue
        n = min(len(r.curve.alloc_pct) for r in runs)
        x = np.arange(n)
        ys = np.vstack([r.curve.alloc_pct[:n] for r in runs])
        keep = x >= x_min
        med = np.nanmedian(ys, axis=0)
        (line,) = ax.plot(x[keep], med[keep], label=policy, lw=1.6)
        if len(runs) > 1:
            lo, hi = np.nanpercentile(ys, [25, 75], axis=0)
            ax.fill_between(x[keep], lo[keep], hi[keep], color=line.get_color(), alpha=0.2, lw=0)
        x_max = max(x_max, n - 1)
    diag = np.arange(x_min, x_max + 1)
    ax.plot(diag, np.minimum(diag, 100), color="0.6", ls=":", lw=1, label="all arrived GPUs allocated")
    ax.set_xlabel("arrived GPU request (% of cluster GPU capacity)")
    ax.set_ylabel("GPU allocation ratio (%)")
    ax.set_xlim(x_min, max(x_max, x_min + 1))
    if x_min > 0:
        ax.set_ylim(bottom=max(0.0, x_min - 5))
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize="small")
    if title:
        ax.set_title(title, fontsize="medium")
    return fig
