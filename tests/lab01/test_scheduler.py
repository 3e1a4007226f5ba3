"""Scheduling cycle stages: filter reasons, reject vs wait, queue disciplines, node scoring window."""

import numpy as np
import pytest

from lab01_cluster_sim.cluster import ClusterState, Request
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.model import Job, JobState, Node
from lab01_cluster_sim.policies.base import get_policy, place
from lab01_cluster_sim.registry import get_discipline
from lab01_cluster_sim.framework.noderesources import filter_node, unresolvable_reason, worker_slots
from lab01_cluster_sim.framework.queue import Fifo
from lab01_cluster_sim.scheduler import Scheduler, adaptive_nodes_to_score
from lab01_cluster_sim.simulate import simulate


def _node(name, gpus=4, model="A100", cpu=32_000, mem=131_072):
    return Node(name, model, gpus, cpu, mem)


def test_filter_lists_every_reason_with_requested_used_capacity():
    st = ClusterState([_node("n0", gpus=4, cpu=8_000, mem=16_384)])
    st.bind(0, (0, 1, 2), Request(6_000, 10_000, 3, 1000))
    req = Request(4_000, 8_192, 2, 1000, ("H100",))
    reasons = filter_node(st, req, 0)
    # model A100 not allowed; cpu: 4000 asked, 6000 of 8000 used; memory 8192 asked,
    # 10000 of 16384 used; GPUs: 2 asked, 3 of 4 used.
    assert reasons == [
        "GPU model 'A100' not in the allowed models ['H100']",
        "Insufficient cpu (requested 4000, used 6000, capacity 8000)",
        "Insufficient memory (requested 8192, used 10000, capacity 16384)",
        "Insufficient nvidia.com/gpu (requested 2, used 3, capacity 4)",
    ]
    assert filter_node(st, Request(1_000, 1_000, 1, 1000), 0) == []


def test_filter_reports_gpu_share_of_the_emptiest_gpu():
    st = ClusterState([_node("n0", gpus=2)])
    st.bind(0, (0,), Request(0, 0, 1, 600))
    st.bind(0, (1,), Request(0, 0, 1, 700))
    # emptiest GPU has 400 free -> used 600 of 1000; a 500 share does not fit
    assert filter_node(st, Request(0, 0, 1, 500), 0) == [
        "Insufficient gpu-share (requested 500, used 600, capacity 1000)"]


def test_worker_slots_by_hand():
    st = ClusterState([_node("n0", gpus=8, cpu=10_000), _node("n1", gpus=4, model="T4")])
    st.bind(0, (0,), Request(0, 0, 1, 300))
    ok = st.model_mask(())
    # n0: GPU0 has 700 free, 7 full: whole-GPU x2 -> 7 // 2 = 3; cpu 10000 // 4000 = 2 -> 2
    # n1: 4 // 2 = 2; cpu 32000 // 4000 = 8 -> 2
    s = worker_slots(Request(4_000, 0, 2, 1000), st.cpu_free, st.mem_free, st.gpu_free, ok)
    assert s.tolist() == [2, 2]
    # share 500: n0 = 700 // 500 + 7 * 2 = 15, n1 = 4 * 2 = 8; cpu 0 -> unbounded
    s = worker_slots(Request(0, 0, 1, 500), st.cpu_free, st.mem_free, st.gpu_free, ok)
    assert s.tolist() == [15, 8]
    # model restricted to T4: n0 hosts none
    s = worker_slots(Request(0, 0, 1, 500, ("T4",)), st.cpu_free, st.mem_free, st.gpu_free, st.model_mask(("T4",)))
    assert s.tolist() == [0, 8]


def test_unresolvable_reasons():
    st = ClusterState([_node("n0", gpus=4), _node("n1", gpus=8, model="T4")])
    assert unresolvable_reason(st, Job("ok", gpus_per_worker=8, gpu_milli=1000)) is None
    why = unresolvable_reason(st, Job("x", gpus_per_worker=8, gpu_milli=1000, gpu_models=("A100",)))
    assert why == ("no node can host one worker even when empty: needs 8 GPU(s) of model A100 + 0 milli-CPU + "
                   "0 MiB on one node; the largest node of model A100 has 4 GPU(s)")
    # CPU is the binding limit: the 8-GPU T4 node has 32000 milli-CPU, 40000 asked
    why = unresolvable_reason(st, Job("z", gpus_per_worker=8, gpu_milli=1000, cpu_milli=40_000))
    assert why.endswith("nodes with 8+ GPUs have at most 32000 milli-CPU and 131072 MiB")
    why = unresolvable_reason(st, Job("y", gpus_per_worker=4, gpu_milli=1000, workers=4))
    # empty slots: n0 4 // 4 = 1, n1 8 // 4 = 2 -> room for 3 of 4 workers
    assert "room for 3 worker(s)" in why


def _run(discipline, jobs, nodes):
    return simulate(nodes, jobs, policy="first-fit", discipline=discipline)


def test_strict_fifo_blocks_behind_head_and_fifo_skip_does_not():
    # One 4-GPU node. t=0: "long" takes 2 GPUs for 100 s. t=1: "big" wants 4 (blocked),
    # t=2: "small" wants 1. Strict FIFO: small waits behind big until 100 + 100 = 200?
    # big starts at 100 (ends 200), small then runs at 200 (ends 210).
    # FIFO-skip: small starts at 2 (2 GPUs free), ends at 12; big starts at 100.
    nodes = [_node("n0", gpus=4)]
    jobs = [Job("long", 0.0, 100.0, 2, 1000), Job("big", 1.0, 100.0, 4, 1000), Job("small", 2.0, 10.0, 1, 1000)]
    strict = _run("fifo", jobs, nodes).records
    assert (strict["big"].start_time, strict["small"].start_time) == (100.0, 200.0)
    assert strict["small"].end_time == 210.0
    skip = _run("fifo-skip", jobs, nodes).records
    assert (skip["small"].start_time, skip["small"].end_time) == (2.0, 12.0)
    assert skip["big"].start_time == 100.0


def test_completion_frees_gpus_for_an_arrival_at_the_same_instant():
    # "a" ends at t=10 exactly when "b" arrives; completions run before arrivals and the
    # pass after both, so b starts at 10 with no wait.
    nodes = [_node("n0", gpus=1)]
    r = simulate(nodes, [Job("a", 0.0, 10.0, 1, 1000), Job("b", 10.0, 5.0, 1, 1000)])
    assert r.records["b"].start_time == 10.0 and r.records["b"].wait == 0.0


def test_scheduler_place_matches_policy_base_place():
    nodes = [_node(f"n{i}", gpus=g) for i, g in enumerate([8, 4, 2, 8, 1])]
    st = ClusterState(nodes)
    st.bind(0, (0, 1, 2), Request(0, 0, 3, 1000))
    st.bind(3, (0,), Request(0, 0, 1, 400))
    for name in ["first-fit", "best-fit", "worst-fit"]:
        pol = get_policy(name)
        sched = Scheduler(st, pol, Fifo())
        for req in [Request(1_000, 1_000, 1, 1000), Request(0, 0, 2, 1000), Request(0, 0, 1, 500)]:
            assert sched.select_node(req) == place(st, req, pol, np.random.default_rng(0)), (name, req)


def test_nodes_to_score_window_still_places_and_is_deterministic():
    nodes = [_node(f"n{i:03d}", gpus=4) for i in range(300)]
    jobs = [Job(f"j{i}", float(i), 50.0, 1, 1000) for i in range(400)]
    r1 = simulate(nodes, jobs, policy="best-fit", nodes_to_score=100)
    r2 = simulate(nodes, jobs, policy="best-fit", nodes_to_score=100)
    assert all(r.state is JobState.COMPLETED for r in r1.records.values())
    assert [r.last_placements for r in r1.records.values()] == [r.last_placements for r in r2.records.values()]


@pytest.mark.parametrize("n,expected", [(50, 50), (100, 100), (1_000, 420), (5_000, 500), (10_000, 500),
                                        (20_000, 1_000)])
def test_adaptive_nodes_to_score_matches_kube_scheduler(n, expected):
    # 1000 nodes: 50 - 1000 // 125 = 42% -> 420; 5000: 50 - 40 = 10% -> 500;
    # 10000: 50 - 80 < 5 -> 5% -> 500; 20000: 5% -> 1000.
    assert adaptive_nodes_to_score(n) == expected


def test_bad_inputs_name_the_option():
    nodes = [_node("n0")]
    with pytest.raises(InputError, match="mode"):
        simulate(nodes, [], mode="greedy")
    with pytest.raises(InputError, match="queue discipline 'lifo'"):
        get_discipline("lifo")
    with pytest.raises(InputError, match="duplicate job id 'a'"):
        simulate(nodes, [Job("a"), Job("a")])
    with pytest.raises(InputError, match="nodes_to_score"):
        simulate(nodes, [], nodes_to_score=0)
    with pytest.raises(InputError, match="seed"):
        simulate(nodes, [], seed="x")
    with pytest.raises(InputError, match="at least one node"):
        simulate([], [])


def test_blocked_shape_is_retried_after_a_release():
    # Two nodes x 1 GPU. "a" (t=0, 30 s) and "b" (t=0, 60 s) fill them; "c" and "d" wait.
    # a ends at 30 -> c starts on n0 at 30 (ends 50); at 50 c frees n0 before b (60) frees
    # n1 -> d starts at 50 (ends 60).
    nodes = [_node("n0", gpus=1), _node("n1", gpus=1)]
    jobs = [Job("a", 0, 30, 1, 1000), Job("b", 0, 60, 1, 1000), Job("c", 1, 20, 1, 1000), Job("d", 2, 10, 1, 1000)]
    r = simulate(nodes, jobs, policy="first-fit").records
    assert (r["c"].start_time, r["c"].end_time, r["d"].start_time, r["d"].end_time) == (30, 50, 50, 60)


def test_unschedulable_message_counts_nodes_per_reason_like_kube_scheduler():
    # n0: A100, 4 GPUs, 3 used -> 1 free, CPU 30000 of 32000 used. n1: T4, 4 free.
    # n2: A100, 4 free, cordoned. Request: 2 GPUs of A100, 4000 milli-CPU.
    nodes = [_node("n0"), _node("n1", model="T4"), _node("n2")]
    st = ClusterState(nodes)
    st.bind(0, (0, 1, 2), Request(30_000, 0, 3, 1000))
    sched = Scheduler(st, get_policy("first-fit"), Fifo())
    sched.cordon(2)
    msg = sched.unschedulable_message(Request(4_000, 0, 2, 1000, ("A100",)))
    # cordoned: n2 (1); wrong model: n1 (1); cpu: n0 (1); GPUs: n0 has 1 < 2 (1)
    assert msg == ("0/3 nodes are available: 1 node(s) cordoned, 1 node(s) with a GPU model not in ['A100'], "
                   "1 Insufficient cpu, 1 Insufficient nvidia.com/gpu.")


def test_pending_single_job_reason_is_the_failed_scheduling_summary():
    nodes = [_node("n0", gpus=1)]
    r = simulate(nodes, [Job("a", 0, 100, 1, 1000), Job("b", 1, 1, 1, 1000)], until=50)
    assert r.records["b"].reason == "no node fits the job now (0/1 nodes are available: 1 Insufficient nvidia.com/gpu.)"
    assert r.records["b"].status == "Unschedulable"


def test_find_feasible_scans_from_a_rotating_start_and_stops_at_k():
    # 10 one-GPU nodes; n3 and n7 busy. k = 3 from start 0: n0, n1, n2; next start 3:
    # n4, n5, n6 (n3 skipped); next start 7: n8, n9, then wraps to n0.
    st = ClusterState([_node(f"n{i}", gpus=1) for i in range(10)])
    for busy in (3, 7):
        st.bind(busy, (0,), Request(0, 0, 1, 1000))
    sched = Scheduler(st, get_policy("first-fit"), Fifo(), nodes_to_score=3)
    req = Request(0, 0, 1, 1000)
    assert sched._find_feasible(req, None, 3).tolist() == [0, 1, 2]
    assert sched._find_feasible(req, None, 3).tolist() == [4, 5, 6]
    assert sched._find_feasible(req, None, 3).tolist() == [0, 8, 9]
    # fewer feasible than k: all of them
    assert sched._find_feasible(req, None, 20).tolist() == [0, 1, 2, 4, 5, 6, 8, 9]
