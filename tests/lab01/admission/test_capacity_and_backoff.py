"""Volcano-style queues (guarantee / deserved / capability, proportion by weight) and
the requeue backoff of a gang that failed to start, with hand-computed values."""

from __future__ import annotations

from fractions import Fraction

import pytest

from lab01_cluster_sim.admission.backoff import RequeuingStrategy
from lab01_cluster_sim.admission.capacity import CapacityPolicy, CapacityQueue, proportion_deserved
from lab01_cluster_sim.errors import InputError

G = "nvidia.com/gpu"


def _policy():
    # Design doc story 4 scaled down: 100 A100s; q1 deserved 20 (guarantee 10), q2 deserved 80.
    q1 = CapacityQueue("q1", {G: 20}, {G: 10}, {G: 60})
    q2 = CapacityQueue("q2", {G: 80}, {G: 10})
    return CapacityPolicy([q1, q2], {G: 100})


def test_capability_is_a_hard_ceiling():
    p = _policy()
    p.allocate("q1", {G: 60})
    assert p.allocatable("q1", {G: 1}) == "queue q1 would exceed its capability"
    assert p.allocatable("q2", {G: 40}) is None
    assert p.allocatable("q2", {G: 41}) == "not enough idle resources in the cluster"


def test_reclaim_stops_at_the_guarantee_and_the_deserved():
    # q1 borrowed up to 60 (deserved 20) in six 10-GPU tasks; q2 (allocated 40 <= deserved 80)
    # may reclaim. Walking q1's tasks: 60 > 20 and 60-10 >= 10 -> victim (50 left); 50, 40, 30
    # -> victims; at 20: allocated <= deserved -> stop. 4 victims, q1 keeps 20.
    p = _policy()
    p.allocate("q1", {G: 60})
    p.allocate("q2", {G: 40})
    assert p.preemptive("q2", {G: 40})
    assert not p.preemptive("q2", {G: 41})           # 40 + 41 > 80 deserved
    cands = [(f"t{i}", "q1", {G: 10}) for i in range(6)] + [("own", "q2", {G: 10})]
    assert p.reclaimable("q2", cands) == ["t0", "t1", "t2", "t3"]


def test_reclaim_never_goes_below_the_guarantee():
    # q1: deserved 20, guarantee 12, allocated 26 (above deserved: reclaimable). Removing a
    # 16-GPU task would leave 10 < 12 guarantee -> not a victim; a 6-GPU task leaves 20 -> victim.
    q1 = CapacityQueue("q1", {G: 20}, {G: 12})
    p = CapacityPolicy([q1, CapacityQueue("q2", {G: 80})], {G: 100})
    p.allocate("q1", {G: 26})
    assert p.reclaimable("q2", [("big", "q1", {G: 16})]) == []
    assert p.reclaimable("q2", [("small", "q1", {G: 6})]) == ["small"]


def test_queue_order_by_share():
    p = _policy()
    p.allocate("q1", {G: 10})     # 10/20 = 0.5
    p.allocate("q2", {G: 20})     # 20/80 = 0.25
    assert p.share("q1") == 0.5 and p.queue_order() == ["q2", "q1"]


def test_guarantee_above_deserved_is_refused():
    with pytest.raises(InputError, match="guarantee must be <= deserved"):
        CapacityQueue("q", {G: 5}, {G: 6})


def test_proportion_water_filling():
    # 10 GPUs, weights A=1, B=1, C=2; requests A=2, B=10, C=10.
    # Round 1 (weights 4): A += 2.5 -> capped at 2 (met); B += 2.5; C += 5; given 9.5, left 0.5.
    # Round 2 (weights 3): B += 0.5/3 = 1/6 -> 8/3; C += 1/3 -> 16/3; left 0.
    d = proportion_deserved({G: 10}, [("A", 1, {G: 2}, None), ("B", 1, {G: 10}, None), ("C", 2, {G: 10}, None)])
    assert d == {"A": {G: 2}, "B": {G: Fraction(8, 3)}, "C": {G: Fraction(16, 3)}}
    assert sum(v[G] for v in d.values()) == 10


def test_proportion_respects_capability():
    # 12 GPUs, equal weights, both want 12; A's capability 3 -> A 3, B 9.
    d = proportion_deserved({G: 12}, [("A", 1, {G: 12}, {G: 3}), ("B", 1, {G: 12}, None)])
    assert (d["A"][G], d["B"][G]) == (3, 9)


@pytest.mark.parametrize("n,delay", [(1, 60), (2, 120), (3, 240), (6, 1920), (7, 3600), (50, 3600)])
def test_requeue_backoff_doubles_up_to_the_maximum(n, delay):
    # Kueue defaults: "re-queued after approximately 60, 120, 240, ..., 3600, ..., 3600 seconds"
    assert RequeuingStrategy().delay(n) == delay


def test_requeue_backoff_limit_deactivates():
    s = RequeuingStrategy(backoff_base_seconds=10, backoff_max_seconds=100, backoff_limit_count=2)
    assert [s.delay(1), s.delay(2), s.delay(3)] == [10, 20, None]
