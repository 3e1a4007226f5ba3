"""Fragmentation dashboard: stranded GPUs, allocation ratio and MIG profile mix utilisation over time."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure


def fragmentation_dashboard(times: Sequence[float], stranded: Sequence[float], allocation_ratio: Sequence[float],
                            mig_times: Sequence[float] = (), mig_use: Mapping[str, Sequence[float]] | None = None,
                            title: str = "Fragmentation dashboard") -> Figure:
    """Three stacked panels sharing the time axis (hours).

    Args:
        times: sample times, s; ``stranded`` (GPUs) and ``allocation_ratio`` (0..1) at them.
        mig_times: sample times of the MIG panel, s.
        mig_use: profile name -> share of that profile's instances in use (0..1) at ``mig_times``.
    """
    t = np.asarray(times, dtype=float) / 3600
    panels = 3 if mig_use else 2
    fig = Figure(figsize=(9, 2.4 * panels + 0.5), layout="constrained")
    axes = fig.subplots(panels, 1, sharex=True)
    axes[0].step(t, stranded, where="post", color="tab:red")
    axes[0].set_ylabel("stranded GPUs")
    axes[1].step(t, allocation_ratio, where="post", color="tab:blue")
    axes[1].set_ylabel("GPU allocation ratio")
    axes[1].set_ylim(0, 1.05)
    if mig_use:
        mt = np.asarray(mig_times, dtype=float) / 3600
        for name, use in sorted(mig_use.items()):
            axes[2].step(mt, use, where="post", label=name)
        axes[2].set_ylabel("MIG instances in use")
        axes[2].set_ylim(0, 1.05)
        axes[2].legend(loc="upper right", fontsize="small")
    axes[-1].set_xlabel("time (h)")
    fig.suptitle(title)
    return fig
