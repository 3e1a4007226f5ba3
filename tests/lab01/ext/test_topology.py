"""Ring all-reduce cost, slowdown across NVLink islands, and the bounded wait for one island."""

from __future__ import annotations

import math

import pytest

from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.model import Job, Node
from lab01_cluster_sim.studies.topology import compare_wait_vs_slowdown
from lab01_cluster_sim.topology import (
    TopologyAware,
    TopologyParams,
    allreduce_seconds,
    comm_slowdown,
    cross_island_gbps,
    island_ids,
    ring_allreduce_seconds,
)

from .helpers import run_jobs


def test_ring_allreduce_cost():
    # 1 GB of gradients over 8 GPUs: 2 * 7/8 * 1e9 = 1.75e9 bytes per GPU.
    assert ring_allreduce_seconds(1e9, 8, 900) == pytest.approx(1.75e9 / 900e9)   # 1.944 ms on NVLink
    assert ring_allreduce_seconds(1e9, 8, 50) == pytest.approx(0.035)              # 35 ms on 400G IB
    assert ring_allreduce_seconds(1e9, 1, 50) == 0.0
    # one island: NVLink, 450 GB/s each way
    assert allreduce_seconds(1e9, 16, 1) == pytest.approx(2 * 15 / 16 * 1e9 / 450e9)
    with pytest.raises(InputError):
        ring_allreduce_seconds(1e9, 0, 50)


@pytest.mark.parametrize("n, rails, ms, penalty", [
    # 10 GB, NVLink 450 GB/s, NDR 50 GB/s per port, one port per GPU (issue 9, review part 2 finding 1).
    # 16 GPUs as 8 + 8: min(450, 8 x 50) = 400 GB/s; 2 x 15/16 x 10e9 / 400e9 = 46.875 ms;
    # one island: 2 x 15/16 x 10e9 / 450e9 = 41.667 ms; penalty 450 / 400 = 1.125
    (16, 8, 46.875, 1.125),
    # 8 GPUs as 4 + 4: min(450, 4 x 50) = 200 GB/s; 2 x 7/8 x 10e9 / 200e9 = 87.5 ms; 450 / 200 = 2.25
    (8, 4, 87.5, 2.25),
    # 8 GPUs as 7 + 1: one port, 50 GB/s; 1.75 x 10e9 / 50e9 = 350 ms; 450 / 50 = 9
    (8, 1, 350.0, 9.0),
])
def test_allreduce_across_islands_uses_every_rail_of_the_smaller_island(n, rails, ms, penalty):
    t = allreduce_seconds(10e9, n, 2, rails=rails)
    assert t * 1e3 == pytest.approx(ms)
    assert t / allreduce_seconds(10e9, n, 1) == pytest.approx(penalty)


def test_allreduce_defaults_to_an_even_split_and_checks_rails():
    # 16 over 2 islands without rails: 8 + 8
    assert allreduce_seconds(10e9, 16, 2) == pytest.approx(allreduce_seconds(10e9, 16, 2, rails=8))
    # 8 GPUs over 3 islands: 3 + 3 + 2 -> the smallest holds 8 // 3 = 2 GPUs: 100 GB/s; 1.75 x 10 / 100 = 175 ms
    assert allreduce_seconds(10e9, 8, 3) * 1e3 == pytest.approx(175.0)
    with pytest.raises(InputError, match="rails"):
        allreduce_seconds(10e9, 8, 2, rails=5)       # the smaller of two islands holds at most 4
    with pytest.raises(InputError, match="n_islands"):
        allreduce_seconds(10e9, 2, 3)
    # NVLink caps the sum of the ports: 16 rails x 50 = 800 > 450
    assert cross_island_gbps(16) == 450.0 and cross_island_gbps(3) == 150.0
    with pytest.raises(InputError, match="rails"):
        cross_island_gbps(0)


def test_comm_slowdown():
    # f = 0.2, default rails = a full 8-GPU HGX board on each side: 0.8 + 0.2 x 450 / 400 = 1.025
    assert comm_slowdown(0.2, 2) == pytest.approx(1.025)
    # one rail (7 + 1): 0.8 + 0.2 x 450 / 50 = 2.6
    assert comm_slowdown(0.2, 2, rails=1) == pytest.approx(2.6)
    # 4 + 4: 0.8 + 0.2 x 450 / 200 = 1.25
    assert comm_slowdown(0.2, 2, rails=4) == pytest.approx(1.25)
    assert comm_slowdown(0.2, 1) == 1.0
    assert comm_slowdown(0.0, 3) == 1.0
    # 72-GPU NVLink domain vs 8-GPU island: both intra, no slowdown
    assert comm_slowdown(0.5, 2, TopologyParams(900, 900)) == 1.0
    with pytest.raises(InputError, match="comm_fraction"):
        comm_slowdown(1.5, 2)


def test_island_ids_own_and_shared():
    nodes = [Node("a", "H100", 8, 1, 1, nvlink_island=0), Node("b", "H100", 8, 1, 1, nvlink_island=0),
             Node("c", "H100", 8, 1, 1)]
    assert island_ids(nodes).tolist() == [0, 0, 3]   # own island: base 1 + index 2


def _fragmented():
    """2 nodes x 8 GPUs, each its own island. 'a' (4 GPUs) -> node-0; 'c' (5 GPUs) -> node-1;
    at t=1 'x', a 6-worker x 1-GPU gang, sees 4 + 3 = 7 free GPUs but no island with 6."""
    nodes = [Node(f"node-{i}", "H100", 8, 96000, 10 ** 6) for i in range(2)]
    jobs = [Job("a", 0, 100, gpus_per_worker=4, gpu_milli=1000),
            Job("c", 0, 1000, gpus_per_worker=5, gpu_milli=1000),
            Job("x", 1, 100, gpus_per_worker=1, gpu_milli=1000, workers=6)]
    return nodes, jobs


# x spread best-fit: 3 workers on node-1 (3 free, the fuller), 3 on node-0: 3 rails, min(450, 150) = 150 GB/s,
# slowdown 0.8 + 0.2 x 450 / 150 = 1.4
@pytest.mark.parametrize("max_wait, start, end", [
    (0.0, 1, 1 + 100 * 1.4),          # spans at once, runs 1.4x slower: ends at 141
    (50.0, 51, 51 + 100 * 1.4),       # waits 50 s for one island, then spans: ends at 191
    (math.inf, 100, 200),             # waits for 'a' to end (t=100): node-0 is free, full speed
])
def test_bounded_wait_for_one_island(max_wait, start, end):
    nodes, jobs = _fragmented()
    topo = TopologyAware(nodes, max_wait, default_comm_fraction=0.2)
    res = run_jobs(nodes, jobs, "fifo-skip", plugins=[topo])
    x = res.outcome("x")
    assert x.first_start == pytest.approx(start)
    assert x.end == pytest.approx(end)


def test_compare_wait_vs_slowdown_rows():
    nodes, jobs = _fragmented()
    rows = compare_wait_vs_slowdown(nodes, jobs, [0.0, math.inf])
    assert [r.spanning_jobs for r in rows] == [1, 0]
    # multi-GPU jobs a, c, x: slowdowns (1 + 1 + 1.4) / 3 with no wait, 1 when waiting
    assert rows[0].mean_slowdown == pytest.approx(3.4 / 3)
    assert rows[1].mean_slowdown == 1.0
    # waits: a 0, c 0, x 0 -> 0; waiting: x waits 99 -> 33
    assert rows[0].mean_wait_s == 0 and rows[1].mean_wait_s == pytest.approx(33)


def test_choose_island_prefers_the_fullest_island_that_fits():
    import numpy as np

    from lab01_cluster_sim.cluster import ClusterState, Request
    from lab01_cluster_sim.framework.noderesources import worker_slots
    from lab01_cluster_sim.topology import choose_island

    nodes = [Node(f"n{i}", "H100", 8, 96000, 10 ** 6) for i in range(3)]
    st = ClusterState(nodes)
    st.bind(0, tuple(range(6)), Request(0, 0, 6, 1000))     # n0: 2 free
    st.bind(1, tuple(range(4)), Request(0, 0, 4, 1000))     # n1: 4 free
    islands = island_ids(nodes)

    def slots(k: int) -> np.ndarray:
        return worker_slots(Request(1000, 0, k, 1000), st.cpu_free, st.mem_free, st.gpu_free, np.ones(3, bool))

    assert slots(2).tolist() == [1, 2, 4]   # 2 // 2, 4 // 2, 8 // 2
    # one worker of 4 GPUs fits n1 (4 free) and n2 (8 free): the fuller n1 (4000 milli free) wins
    assert choose_island(slots(4), st.gpu_idle, islands, 1) == 1
    # a gang of 3 x 4 GPUs: no island of 8 holds 12
    assert choose_island(slots(4), st.gpu_idle, islands, 3) is None
    # nodes 0 and 1 as one island (6 free GPUs, 2 + 4): a gang of 3 x 2 fits it (1 + 2 slots)
    # and it is fuller (6000) than n2 (8000)
    assert choose_island(slots(2), st.gpu_idle, np.array([0, 0, 1]), 3) == 0


@pytest.mark.parametrize("kwargs", [{"intra_island_gbps": float("nan")}, {"inter_island_gbps": float("nan")},
                                    {"inter_island_gbps": float("inf")}, {"intra_island_gbps": -1.0}])
def test_topology_params_reject_nan_and_non_positive(kwargs):
    with pytest.raises(InputError, match="bandwidths"):
        TopologyParams(**kwargs)


def test_topology_aware_rejects_nan_wait():
    # NaN compared false against everything and silently meant "wait without bound"
    nodes = [Node("n0", "H100", 8, 64000, 512000)]
    with pytest.raises(InputError, match="max_wait_s"):
        TopologyAware(nodes, max_wait_s=float("nan"))


def test_spanning_counts_jobs_across_islands_even_when_not_slowed():
    # a 16-GPU gang (16 one-GPU workers) on two 8-GPU nodes (one island each) must span both
    # islands; with a communication fraction of 0 it runs at full speed. Before, spanning_jobs
    # counted only slowed jobs and reported 0 here.
    nodes = [Node(f"node-{i}", "H100", 8, 96000, 10 ** 6) for i in range(2)]
    jobs = [Job("big", 0, 100, gpus_per_worker=1, gpu_milli=1000, workers=16),
            Job("small", 200, 100, gpus_per_worker=4, gpu_milli=1000)]
    (row,) = compare_wait_vs_slowdown(nodes, jobs, [0.0], default_comm_fraction=0.0)
    assert (row.spanning_jobs, row.slowed_jobs, row.multi_gpu_jobs) == (1, 0, 2)
    (row,) = compare_wait_vs_slowdown(nodes, jobs, [0.0], default_comm_fraction=0.2)
    assert (row.spanning_jobs, row.slowed_jobs) == (1, 1)


@pytest.mark.parametrize("args", [(float("nan"), 8, 450.0), (-1.0, 8, 450.0), (1e9, 0, 450.0),
                                  (1e9, 8, float("nan")), (1e9, 8, 0.0)])
def test_ring_allreduce_rejects_nan_and_out_of_range(args):
    # NaN bytes used to give a NaN time, which the command then dropped from its output
    with pytest.raises(InputError, match="ring_allreduce_seconds"):
        ring_allreduce_seconds(*args)
