"""Metrics on small timelines computed by hand: JCT, waits, makespan, allocation ratio."""

import math

import numpy as np
import pytest

from lab01_cluster_sim.metrics import Stats, Timeline
from lab01_cluster_sim.model import Job, JobState, Node
from lab01_cluster_sim.simulate import simulate


def _one_node(gpus=2):
    return [Node("n0", "A100", gpus, 64_000, 262_144)]


def test_jct_wait_makespan_and_allocation_ratio_by_hand():
    # One node, 2 GPUs. a: t=0, 1 GPU, 10 s. b: t=0, 2 GPUs, 5 s. c: t=2, 1 GPU, 4 s.
    # FIFO-skip, first-fit:
    #   t=0: a starts (1 GPU). b needs 2, only 1 free -> waits.
    #   t=2: c starts on the free GPU (2/2 used); ends at 6.
    #   t=6: c ends -> 1 free, b still waits. t=10: a ends -> b starts, ends at 15.
    # waits: a 0, b 10, c 0. JCT: a 10, b 15, c 4. makespan 15 - 0 = 15.
    r = simulate(_one_node(), [Job("a", 0, 10, 1, 1000), Job("b", 0, 5, 2, 1000), Job("c", 2, 4, 1, 1000)],
                 policy="first-fit")
    rec = r.records
    assert [rec[x].wait for x in "abc"] == [0, 10, 0]
    assert [rec[x].jct for x in "abc"] == [10, 15, 4]
    s = r.summary
    assert s.makespan == 15
    assert s.jct.mean == pytest.approx((10 + 15 + 4) / 3)
    # p50 of [4, 10, 15] = 10; p99 at position 2 * 0.99 = 1.98 -> 10 + 0.98 * 5 = 14.9
    assert s.jct.p50 == 10 and s.jct.p99 == pytest.approx(14.9)
    assert s.wait.mean == pytest.approx(10 / 3)
    # allocation samples (after each pass): t=0 0.5, t=2 1.0, t=6 0.5, t=10 1.0, t=15 0.0
    assert r.timeline.time.tolist() == [0, 2, 6, 10, 15]
    assert r.timeline.allocation_ratio.tolist() == [0.5, 1.0, 0.5, 1.0, 0.0]
    # time-weighted over [0, 15]: 0.5*2 + 1*4 + 0.5*4 + 1*5 = 12 -> 12 / 15 = 0.8
    assert s.mean_allocation_ratio == pytest.approx(0.8)
    assert s.states == {"completed": 3, "running": 0, "pending": 0, "rejected": 0, "timeout": 0}


def test_fractional_allocation_ratio_counts_milli_gpu():
    # two pods of 250 milli on a 2-GPU node: 500 / 2000 = 0.25
    r = simulate(_one_node(), [Job("a", 0, 10, 1, 250), Job("b", 0, 10, 1, 250)], until=5)
    assert r.timeline.allocation_ratio.tolist() == [0.25]


def test_every_job_ends_in_exactly_one_state_with_reasons():
    # too-big is rejected on arrival; late arrives after `until`; blocked waits; svc runs.
    jobs = [Job("svc", 0, math.inf, 1, 1000), Job("too-big", 0, 1, 4, 1000), Job("blocked", 1, 1, 2, 1000),
            Job("late", 100, 1, 1, 1000)]
    r = simulate(_one_node(), jobs, until=50)
    states = {k: v.state for k, v in r.records.items()}
    assert states == {"svc": JobState.RUNNING, "too-big": JobState.REJECTED, "blocked": JobState.PENDING,
                      "late": JobState.PENDING}
    assert "no node can host one worker" in r.records["too-big"].reason
    assert r.records["late"].reason == "not submitted before the run ended at t=50s"
    assert r.summary.rejected == {r.records["too-big"].reason: 1}
    assert sum(r.summary.states.values()) == 4
    assert math.isnan(r.summary.makespan)


def test_stats_of_empty_is_nan():
    s = Stats.of([])
    assert s.count == 0 and math.isnan(s.mean) and math.isnan(s.p99)


def test_time_weighted_mean_by_hand():
    tl = Timeline(np.array([0.0, 1.0, 4.0]), np.array([0.0, 1.0, 0.5]), np.zeros(3, int), np.zeros(3),
                  np.zeros(3, int), np.zeros(3, int))
    # 0 for 1 s, 1 for 3 s, 0.5 for 2 s (until 6) -> (0 + 3 + 1) / 6
    assert tl.time_weighted_mean(tl.allocation_ratio, end=6.0) == pytest.approx(4 / 6)


def test_fragmentation_series_when_target_given():
    from lab01_cluster_sim.fragmentation import TargetWorkload, cluster_fragmentation
    from lab01_cluster_sim.cluster import ClusterState, Request

    jobs = [Job("a", 0, 10, 1, 500), Job("b", 1, 10, 1, 1000)]
    target = TargetWorkload.from_jobs(jobs)
    r = simulate(_one_node(), jobs, target_workload=target, policy="first-fit")
    # recompute F by hand-built state at t=1: a (500 on GPU0), b (1000 on GPU1)
    st = ClusterState(_one_node())
    st.bind(0, (0,), Request(0, 0, 1, 500))
    st.bind(0, (1,), Request(0, 0, 1, 1000))
    assert r.timeline.fragmentation[1] == pytest.approx(cluster_fragmentation(st, target))
    # By hand (GetNodePodFrag, pkg/utils/frag.go of the FGD simulator):
    # M = {a: (0, 500, 1) p 0.5, b: (0, 1000, 1) p 0.5}.
    # t=0: free [500, 1000]: a fits, fragment = sum of L_g < 500 = 0; b fits on GPU1,
    #      fragment = 500 (GPU0) -> F = 0.5 * 500 = 250.
    # t=1: b on GPU1, free [500, 0]: a fits -> 0; b fits nowhere -> idle 500 -> F = 250.
    # t=10: a ends, free [1000, 0]: both fit, nothing below u -> 0. t=11: all free -> 0.
    assert r.timeline.time.tolist() == [0, 1, 10, 11]
    assert r.timeline.fragmentation.tolist() == [250, 250, 0, 0]


def test_time_weighted_mean_over_a_window_by_hand():
    tl = Timeline(np.array([0.0, 1.0, 4.0]), np.array([0.0, 1.0, 0.5]), np.zeros(3, int), np.zeros(3),
                  np.zeros(3, int), np.zeros(3, int))
    # window [0.5, 2]: 0 for 0.5 s, 1 for 1 s -> 1 / 1.5
    assert tl.time_weighted_mean(tl.allocation_ratio, end=2.0, start=0.5) == pytest.approx(1 / 1.5)
