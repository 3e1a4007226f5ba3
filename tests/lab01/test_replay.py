"""The paper's replay: tuning, discretisation, determinism, outcomes, as the FGD simulator
(hkust-adsl/kubernetes-scheduler-simulator: pkg/simulator/simulator.go, experiments/analysis/)."""

from __future__ import annotations

import numpy as np
import pytest

from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.model import Job, Node
from lab01_cluster_sim.replay import (
    REASON_GPU,
    REASON_NEVER_FITS,
    discretise,
    node_priority,
    plan_arrivals,
    replay,
)
from lab01_cluster_sim.workloads.synthetic import default_trace


def _pod(name: str, gpus: int, milli: int = 1000, cpu: int = 1000) -> Job:
    return Job(name, gpus_per_worker=gpus, gpu_milli=milli if gpus else 0, cpu_milli=cpu)


def test_tune_up_stop_test_adds_the_per_gpu_share():
    # One original of 1 GPU (1000), capacity 4000, inflation 1.0 -> target 4000.
    # 1000 -> +1000 = 2000 <= 4000 ok -> 3000 ok -> 4000 ok (not > 4000) -> 5000 > 4000 stop.
    base, plan = plan_arrivals([_pod("a", 1)], 4000, 1.0, np.random.default_rng(0))
    assert plan.order_names == ("a", "a-tuned-0", "a-tuned-1", "a-tuned-2")
    assert plan.gpu_request_milli == 4000 and plan.tuned.tolist() == [False, True, True, True]


def test_tune_up_multi_gpu_copy_may_overshoot():
    # One original of 2 GPUs: G = 2000, target 3500. Test 2000 + u(=1000) = 3000 <= 3500:
    # accepted, G += k*u = 2000 -> 4000 (500 over, at most (k-1)*1000). Next 4000+1000 > 3500: stop.
    _, plan = plan_arrivals([_pod("m", 2)], 4000, 3500 / 4000, np.random.default_rng(0))
    assert plan.order_names == ("m", "m-tuned-0")
    assert plan.gpu_request_milli == 4000


def test_tune_down_removes_until_not_above_target():
    # Three 1-GPU originals (3000), target 2000: one is removed, the other two keep their order.
    base, plan = plan_arrivals([_pod(n, 1) for n in "abc"], 2000, 1.0, np.random.default_rng(5))
    assert len(plan.order_names) == 2 and plan.gpu_request_milli == 2000
    assert not plan.tuned.any()


def test_originals_come_first_and_are_a_permutation():
    jobs = [_pod(f"p{i}", 1, 500) for i in range(10)] + [_pod("cpu", 0)]
    base, plan = plan_arrivals(jobs, 10_000, 1.3, np.random.default_rng(1))
    assert sorted(plan.source[:11].tolist()) == list(range(11))
    assert plan.tuned[11:].all() and not plan.tuned[:11].any()
    assert [j.job_id for j in base] == sorted(j.job_id for j in jobs)


def test_plan_rejects_bad_input():
    with pytest.raises(InputError, match="empty"):
        plan_arrivals([], 1000, 1.3, np.random.default_rng(0))
    with pytest.raises(InputError, match="--inflation"):
        plan_arrivals([_pod("a", 1)], 1000, 0, np.random.default_rng(0))


def test_discretise_by_hand():
    # G = 1 GPU, so 10*G = 10. arrived [5, 5, 10, 15] -> 0.5, 0.5, 1.0, 1.5 -> round half even -> 0, 0, 1, 2.
    # used [5, 5, 5, 10] -> alloc% 0.5, 0.5, 0.5, 1.0. Columns: x0 = 0.5, x1 = 0.5, x2 = 1.0.
    c = discretise(np.array([5, 5, 10, 15]), np.array([5, 5, 5, 10]), np.zeros(4), np.array([995, 995, 995, 990]), 1)
    assert c.arrived_pct.tolist() == [0, 1, 2]
    assert c.alloc_pct.tolist() == [0.5, 0.5, 1.0]


def test_discretise_falls_back_to_neighbours():
    # arrived [0, 30] -> columns 0 and 3; used [0, 20] -> alloc 0.0 and 2.0.
    # x1 has no event: window [0, 2] holds the x0 event -> 0.0; x2: window [1, 3] -> 2.0.
    # F = [100, 400], idle = [1000, 980]: frag % = round(100*F/(1000*1), 2) = 10.0, 40.0
    c = discretise(np.array([0, 30]), np.array([0, 20]), np.array([100.0, 400.0]), np.array([1000, 980]), 1)
    assert c.alloc_pct.tolist() == [0.0, 0.0, 2.0, 2.0]
    assert c.frag_pct.tolist() == [10.0, 10.0, 40.0, 40.0]


def test_node_priority_follows_name_order():
    nodes = [Node("b", "T4", 1, 1, 1), Node("a", "T4", 1, 1, 1), Node("c", "T4", 1, 1, 1)]
    perm = np.random.default_rng(3).permutation(3)
    # name order a, b, c gets perm[0], perm[1], perm[2]; nodes are listed b, a, c
    assert node_priority(nodes, np.random.default_rng(3)).tolist() == [perm[1], perm[0], perm[2]]


@pytest.mark.parametrize("policy", ["best-fit", "fgd", "random"])
def test_same_seed_same_result(policy):
    t = default_trace(0)
    a = replay(t.nodes, t.jobs, policy, seed=42)
    b = replay(t.nodes, t.jobs, policy, seed=42)
    assert a.pod_names == b.pod_names and a.gpus == b.gpus and a.reason == b.reason
    assert np.array_equal(a.node, b.node) and np.array_equal(a.frag_milli, b.frag_milli)
    c = replay(t.nodes, t.jobs, policy, seed=43)
    assert a.pod_names != c.pod_names


def test_every_pod_is_placed_or_failed_with_a_reason():
    t = default_trace(1)
    r = replay(t.nodes, t.jobs, "best-fit", seed=42)
    assert all((n >= 0) != bool(reason) for n, reason in zip(r.node, r.reason))
    assert r.placed + r.failed == len(r.pod_names)
    # bookkeeping: the last used milli-GPU equals the sum of the placed pods' requests
    placed = [t_ for t_, n in zip(r.source, r.node) if n >= 0]
    base = sorted(t.jobs, key=lambda j: j.job_id)
    assert r.used_milli[-1] == sum(base[i].gpu_milli_total for i in placed)
    # arrived at 1.3 x capacity, to within one pod's share
    assert r.arrived_milli[-1] <= 1.3 * r.total_gpus * 1000 + 7000


def test_failure_reasons_by_hand():
    # one 2-GPU node with 8 vCPU: pods 2 GPUs (fits), 1 GPU (no GPU left), 16 GPUs (never fits)
    nodes = [Node("n", "T4", 2, 8000, 1024)]
    jobs = [_pod("a", 2), _pod("b", 1), Job("c", gpus_per_worker=8, gpu_milli=1000)]
    # inflation 5.5: target 5.5 x 2000 = 11000 = the request (2000 + 1000 + 8000), no tuning
    r = replay(nodes, jobs, "first-fit", seed=0, inflation=5.5, shuffle=False)
    assert r.pod_names == ("a", "b", "c")
    assert r.reason == ("", REASON_GPU, REASON_NEVER_FITS)
    # arrived 2000, 3000, 11000; used 2000 throughout; alloc ratio 100 %
    assert r.arrived_milli.tolist() == [2000, 3000, 11000]
    assert r.final_alloc_pct == 100.0 and r.unallocated_gpus == 0.0
