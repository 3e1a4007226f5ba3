"""Figure functions of the extensions and the data behind the fragmentation dashboard."""

from __future__ import annotations

import math

import pytest
from matplotlib.figure import Figure

from lab01_cluster_sim.studies.autoscaling import mini_lab
from lab01_cluster_sim.studies.defrag import dashboard_data, demo_mig_jobs
from lab01_cluster_sim.disciplines.demo import demo_cluster, demo_jobs
from lab01_cluster_sim.studies.trilemma import trilemma_report
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.model import Job, Node
from lab01_cluster_sim.plots.autoscaler import autoscaler_figure
from lab01_cluster_sim.plots.dashboard import fragmentation_dashboard, sharing_modes_figure
from lab01_cluster_sim.plots.fairness import trilemma_figure
from lab01_cluster_sim.plots.topology import wait_vs_slowdown_figure
from lab01_cluster_sim.sharing_modes import MigLayout, compare_sharing_modes
from lab01_cluster_sim.studies.sharing import mig_pool_timeline
from lab01_cluster_sim.studies.topology import compare_wait_vs_slowdown


def test_mig_pool_timeline_hand_values():
    seven = MigLayout("A100-80GB", ("1g.10gb",) * 7)
    # job 1 -> 1g.10gb; job 2 (30 GB) fits no offered profile; job 3 -> 1g.10gb at t=10
    t = mig_pool_timeline([seven], [(0, 100, 5, 0.1), (0, 100, 30, 0.5), (10, 50, 8, 0.1)])
    assert t.times == [0, 10, 60, 100]
    assert t.use["1g.10gb"] == pytest.approx([1 / 7, 2 / 7, 1 / 7, 0])
    assert t.waits == [0, None, 0] and t.profiles == ["1g.10gb", None, "1g.10gb"]
    # two 3g.40gb instances, three 30 GB / 0.4 jobs at t=0: the third waits for the first end (100)
    two = MigLayout("A100-80GB", ("3g.40gb", "3g.40gb"))
    t2 = mig_pool_timeline([two], [(0, 100, 30, 0.4)] * 3)
    assert t2.waits == [0, 0, 100]
    with pytest.raises(InputError):
        mig_pool_timeline([], [])


def test_dashboard_data_and_figure():
    nodes = [Node(f"n{i}", "A100", 4, 32000, 256000) for i in range(2)]
    jobs = [Job("a", 0, 10, gpus_per_worker=3, gpu_milli=1000), Job("b", 0, 10, gpus_per_worker=3, gpu_milli=1000),
            Job("big", 1, 10, gpus_per_worker=4, gpu_milli=1000)]
    d = dashboard_data(nodes, jobs, [MigLayout("A100-80GB", ("3g.40gb", "3g.40gb"))], [(0, 100, 30, 0.4)])
    # t=0: a, b run (6 of 8 GPUs); t=1: big waits, 1 + 1 free GPUs stranded; t=10: big runs; t=20: empty
    assert d.times == [0, 1, 10, 20]
    assert d.stranded == [0, 2, 0, 0]
    assert d.allocation_ratio == pytest.approx([0.75, 0.75, 0.5, 0.0])
    assert d.mig_use == {"3g.40gb": [0.5, 0.0]}
    fig = fragmentation_dashboard(d.times, d.stranded, d.allocation_ratio, d.mig_times, d.mig_use)
    assert isinstance(fig, Figure) and len(fig.axes) == 3
    stranded_ax, alloc_ax, mig_ax = fig.axes
    # allocation and MIG use are drawn as percentages: 75 % of 8 GPUs, 1 of 2 3g.40gb = 50 %
    assert "%" in alloc_ax.get_ylabel() and "%" in mig_ax.get_ylabel()
    assert list(alloc_ax.lines[0].get_ydata()) == pytest.approx([75, 75, 50, 0])
    assert list(mig_ax.lines[0].get_ydata()) == pytest.approx([50, 0])
    # the MIG workload is a separate run: it must not share the whole-GPU panels' time axis
    assert alloc_ax.get_shared_x_axes().joined(stranded_ax, alloc_ax)
    assert not mig_ax.get_shared_x_axes().joined(stranded_ax, mig_ax)
    assert "MIG workload" in mig_ax.get_xlabel()
    assert len(fragmentation_dashboard(d.times, d.stranded, d.allocation_ratio).axes) == 2
    assert len(demo_mig_jobs(0, 10)) == 10


def test_other_figures_build():
    nodes = demo_cluster(2, 8)
    jobs = demo_jobs(0, 20, mean_interarrival_s=400)
    assert len(trilemma_figure(trilemma_report(nodes, jobs, ["fifo", "backfill"])).axes) == 3
    assert len(wait_vs_slowdown_figure(compare_wait_vs_slowdown(nodes, jobs, [0, math.inf])).axes) == 3
    assert len(autoscaler_figure(mini_lab()).axes) == 2
    assert len(sharing_modes_figure(compare_sharing_modes()).axes) == 3


def test_demo_workload_is_seeded_and_big_jobs_go_to_big_tenant():
    a = demo_jobs(3, 50, big_tenant="research")
    assert a == demo_jobs(3, 50, big_tenant="research")
    assert all(j.tenant == "research" for j in a if j.num_gpus >= 8)
    assert all(j.tenant != "research" for j in a if j.num_gpus < 8)
    assert {j.workers for j in a if j.num_gpus == 16} <= {2}
    with pytest.raises(InputError):
        demo_jobs(0, 5, gpu_probs=(1.0,))


def test_sharing_figure_shows_jobs_that_fail_for_memory():
    from lab01_cluster_sim.sharing_modes import compare_sharing_modes

    # 10 jobs of 15 GB on 80 GB: time-slicing fits floor(80 / 15) = 5, 5 fail; MPS limit 8 GB < 15: all 10 fail
    fig = sharing_modes_figure(compare_sharing_modes("A100-80GB", 80, jobs=10, job_memory_gb=15.0))
    ax1 = fig.axes[0]
    heights = [p.get_height() for p in ax1.patches]
    # first 4 bars: jobs that run (exclusive 1, time-slicing 5, MPS 0, MIG 3); then those that
    # fail (0, 5, 10, 0); then those that wait for a GPU or instance (exclusive 9, MIG 10 - 3 = 7)
    assert heights == [1, 5, 0, 3, 0, 5, 10, 0, 9, 0, 0, 7]


def test_topology_figure_has_a_numeric_bound_axis():
    # before: 0, 600 and 3600 s were equally spaced categories; now minutes on a linear axis,
    # 'never' a quarter of the largest bound beyond it: 60 min * 1.25 = 75
    from lab01_cluster_sim.plots.topology import bound_positions

    assert bound_positions([0, 600, 3600, math.inf]) == ([0.0, 10.0, 60.0, 75.0], 75.0)
    assert bound_positions([0, math.inf]) == ([0.0, 1.0], 1.0)
    assert bound_positions([300, 900]) == ([5.0, 15.0], None)
