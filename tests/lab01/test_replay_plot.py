"""The allocation-vs-arrived figure."""

from __future__ import annotations

from lab01_cluster_sim.plots.replay import plot_alloc_vs_arrived
from lab01_cluster_sim.replay import compare
from lab01_cluster_sim.workloads.synthetic import default_trace


def test_one_line_per_policy_plus_the_diagonal_and_a_band_per_multi_seed_policy():
    t = default_trace(0)
    results = compare(t.nodes, t.jobs, ["best-fit", "fgd"], seeds=(1, 2))
    fig = plot_alloc_vs_arrived(results, x_min=75, title="t")
    (ax,) = fig.axes
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels == ["best-fit", "fgd", "all arrived GPUs allocated"]
    assert len(ax.collections) == 2  # the 25-75 % bands
    x, y = ax.get_lines()[0].get_data()
    assert x[0] == 75 and x[-1] == 130
    # the median line is the median of the two seeds' curves: with two runs, their mean
    r1, r2 = results["best-fit"]
    assert y[-1] == (r1.curve.alloc_pct[130] + r2.curve.alloc_pct[130]) / 2
    assert ax.get_xlabel().startswith("arrived GPU request")
