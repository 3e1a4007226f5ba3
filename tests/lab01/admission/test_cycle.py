"""The admission cycle: queueing strategies, borrowing order, preemption, partial admission.
Expected values are worked out by hand in the comments (Kueue docs cited per test)."""

from __future__ import annotations

import pytest

from lab01_cluster_sim.admission import (
    Outcome,
    PodSet,
    Preemption,
    PreemptionPolicy,
    QueueingStrategy,
    State,
    Workload,
)
from lab01_cluster_sim.admission.flavors import reduced_counts
from lab01_cluster_sim.admission.ordering import candidates_order, queue_order

from .helpers import ANY, CPU, GPU, LOWER, controller, gpu_cq, outcomes, wl

STRICT, BEST = QueueingStrategy.STRICT_FIFO, QueueingStrategy.BEST_EFFORT_FIFO


# -- queueing strategies (Cluster Queue page, "Queueing strategy") ------------------------------
@pytest.mark.parametrize("strategy,admitted", [
    # 8 GPUs, 6 used by "running". head-6 (6 GPUs) cannot fit the 2 free; small-1 (1 GPU) could.
    (STRICT, ["running"]),                 # "Older workloads that can't be admitted will block newer workloads"
    (BEST, ["running", "small-1"]),        # "...will not block newer Workloads that fit"
])
def test_head_of_line_blocking(strategy, admitted):
    ctl = controller([gpu_cq("q", ("a100", 8), cohort=None, strategy=strategy)])
    ctl.submit(wl("running", "q", 6, t=0), 0)
    ctl.settle(0)
    ctl.submit(wl("head-6", "q", 6, t=1), 1)
    ctl.submit(wl("small-1", "q", 1, t=2), 2)
    ctl.settle(2)
    assert ctl.admitted() == admitted
    if strategy is STRICT:
        assert ctl.pending_reason("small-1").startswith("waiting behind head-6, the head of StrictFIFO ClusterQueue q")
    else:
        assert ctl.workloads["head-6"].state is State.INADMISSIBLE


def test_best_effort_fifo_retries_set_aside_workload_when_quota_is_released():
    ctl = controller([gpu_cq("q", ("a100", 8), cohort=None, strategy=BEST)])
    ctl.submit(wl("running", "q", 6), 0)
    ctl.submit(wl("head-6", "q", 6, t=1), 1)
    ctl.settle(1)
    assert ctl.workloads["head-6"].state is State.INADMISSIBLE
    ctl.finish("running", 10)
    (d,) = ctl.settle(10)
    assert (d.workload, d.outcome) == ("head-6", Outcome.ADMITTED)


def test_queue_order_is_priority_then_creation_time():
    a = wl("a", "q", 1, t=5, priority=0)
    b = wl("b", "q", 1, t=9, priority=10)
    c = wl("c", "q", 1, t=1, priority=0)
    assert [w.name for w in sorted([a, b, c], key=queue_order)] == ["b", "c", "a"]


def test_cycle_admits_non_borrowing_heads_first():
    # Cohort: a (4) and b (4). a's head needs 6 (borrows 2), b's head needs 4 (no borrowing).
    # Both are considered in the same cycle; b goes first ("Kueue prioritizes scheduling
    # workloads that will fit under nominalQuota"), so a's 6 no longer fit: 8 - 4 = 4 < 6.
    ctl = controller([gpu_cq("a", ("a100", 4)), gpu_cq("b", ("a100", 4))])
    ctl.submit(wl("a-6", "a", 6, t=0), 0)
    ctl.submit(wl("b-4", "b", 4, t=1), 1)
    ds = ctl.cycle(1)
    assert outcomes(ds) == [("b-4", "Admitted"), ("a-6", "Pending")]
    assert ds[1].reason == "Workload no longer fits after processing another workload"


def test_owner_within_nominal_goes_before_an_older_borrower():
    # Cluster Queue page, borrowing example: "If ClusterQueue team-b-cq has pending Workloads
    # and the ClusterQueue team-a-cq has all its nominalQuota quota used, Kueue will admit
    # Workloads in ClusterQueue team-b-cq before admitting any new Workloads in team-a-cq."
    # team-a uses its 4; a-more (older, t=1) would borrow 4; b-4 (t=2) fits b's nominal 4.
    ctl = controller([gpu_cq("team-a", ("a100", 4)), gpu_cq("team-b", ("a100", 4))])
    ctl.submit(wl("a-4", "team-a", 4, t=0), 0)
    ctl.settle(0)
    ctl.submit(wl("a-more", "team-a", 4, t=1), 1)
    ctl.submit(wl("b-4", "team-b", 4, t=2), 2)
    ds = ctl.settle(2)
    assert outcomes(ds)[:2] == [("b-4", "Admitted"), ("a-more", "Pending")]
    assert ctl.usage("team-b") == {("a100", GPU): 4}


# -- preemption (Preemption page) ---------------------------------------------------------------
def test_within_cluster_queue_preempts_lowest_priority_most_recent():
    # 4 GPUs: low-old (prio 0, admitted t=0), low-new (prio 0, t=1), mid (prio 5, t=2), 1+1+2 = 4.
    # "high" (prio 10) needs 2: candidates lower priority first, then most recently admitted:
    # [low-new, low-old, mid]; removing low-new frees 1 (not enough), low-old frees 2 -> fits.
    # Minimisation walks back from the last-but-one (low-new): putting it back leaves 1 free,
    # not enough -> both stay.
    ctl = controller([gpu_cq("q", ("a100", 4), cohort=None, preemption=Preemption(within_cluster_queue=LOWER))])
    for name, gpus, t, prio in (("low-old", 1, 0, 0), ("low-new", 1, 1, 0), ("mid", 2, 2, 5)):
        ctl.submit(wl(name, "q", gpus, t=t, priority=prio), t)
        ctl.settle(t)
    ctl.submit(wl("high", "q", 2, t=3, priority=10), 3)
    ds = ctl.schedule(3)
    assert sorted(d.workload for d in ds if d.outcome is Outcome.EVICTED) == ["low-new", "low-old"]
    pre = next(d for d in ds if d.outcome is Outcome.PREEMPTING)
    assert pre.reason.endswith("Pending the preemption of 2 workload(s)")
    ev = next(d for d in ds if d.workload == "low-new")
    assert ev.reason == "Preempted to accommodate a workload (high) due to prioritization in the ClusterQueue"
    # victims hold their quota until their pods are gone; then "high" is admitted
    ctl.evicted("low-new", 4)
    ctl.evicted("low-old", 4)
    (d,) = [d for d in ctl.schedule(4) if d.outcome is Outcome.ADMITTED]
    assert d.workload == "high"
    # the victims are queued again (not lost); with 0 GPUs free they are set aside (BestEffortFIFO)
    assert {ctl.workloads[w].state for w in ("low-new", "low-old")} == {State.INADMISSIBLE}
    assert ctl.workloads["low-old"].evictions == 1


def test_no_preemption_with_policy_never():
    ctl = controller([gpu_cq("q", ("a100", 4), cohort=None)])
    ctl.submit(wl("low", "q", 4), 0)
    ctl.settle(0)
    ctl.submit(wl("high", "q", 2, t=1, priority=10), 1)
    (d,) = ctl.settle(1)
    assert d.outcome is Outcome.PENDING
    assert d.reason == ("couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in "
                        "flavor a100, 2 more needed")


@pytest.mark.parametrize("policy,b_priority,evicted", [
    (ANY, 0, ["a-new"]),          # Any: reclaim regardless of priority
    (LOWER, 0, []),               # LowerPriority: a's workloads (prio 0) are not lower than b's (0)
    (LOWER, 10, ["a-new"]),       # ... but they are lower than 10
])
def test_reclaim_within_cohort(policy, b_priority, evicted):
    # a (4) borrows all of b's 4: a-old (4 GPUs, t=0) + a-new (4 GPUs, t=1). b submits 4
    # (within its nominal): candidates are a's workloads (a is borrowing), newest first ->
    # a-new; after removing it b fits.
    ctl = controller([gpu_cq("a", ("a100", 4)),
                      gpu_cq("b", ("a100", 4), preemption=Preemption(reclaim_within_cohort=policy))])
    ctl.submit(wl("a-old", "a", 4, t=0), 0)
    ctl.submit(wl("a-new", "a", 4, t=1), 1)
    ctl.settle(1)
    ctl.submit(wl("b-4", "b", 4, t=2, priority=b_priority), 2)
    ds = ctl.settle(2)
    assert [d.workload for d in ds if d.outcome is Outcome.EVICTED] == evicted
    if evicted:
        assert next(d for d in ds if d.outcome is Outcome.EVICTED).reason.endswith("due to reclamation within the cohort")
        assert ("b-4", "Admitted") in outcomes(ds)


def test_reclaim_does_not_touch_a_queue_within_its_nominal_quota():
    # a uses exactly its 4 (not borrowing); c borrows 2 of b's 4. b (nominal 4) needs 4: only
    # c's workload is a candidate, freeing 2 -> b gets 2 free + 2 = 4.
    ctl = controller([gpu_cq("a", ("a100", 4)), gpu_cq("b", ("a100", 4), preemption=Preemption(reclaim_within_cohort=ANY)),
                      gpu_cq("c", ("a100", 2))])
    ctl.submit(wl("a-4", "a", 4), 0)
    ctl.submit(wl("c-4", "c", 4), 0)
    ctl.settle(0)
    ctl.submit(wl("b-4", "b", 4, t=1), 1)
    ds = ctl.settle(1)
    assert [d.workload for d in ds if d.outcome is Outcome.EVICTED] == ["c-4"]


@pytest.mark.parametrize("borrow_within_cohort,evicted", [
    (PreemptionPolicy.NEVER, []),
    (PreemptionPolicy.LOWER_PRIORITY, ["b-6"]),
])
def test_borrow_within_cohort(borrow_within_cohort, evicted):
    # a (4) and b (4). b-6 (prio 0) borrows 2 of a's; a-2 (prio 10) uses 2: 8 of 8 used.
    # a-4 (prio 10) would take a to 2 + 4 = 6 > 4: it must borrow. Reclaiming b-6 frees 6,
    # enough only with borrowing: without borrowWithinCohort the preemptor may not borrow
    # while reclaiming -> no targets; with it (priority threshold 10 > 0) b-6 is evicted.
    pre = Preemption(reclaim_within_cohort=ANY, borrow_within_cohort=borrow_within_cohort)
    ctl = controller([gpu_cq("a", ("a100", 4), preemption=pre), gpu_cq("b", ("a100", 4))])
    ctl.submit(wl("b-6", "b", 6, priority=0), 0)
    ctl.submit(wl("a-2", "a", 2, priority=10), 0)
    ctl.settle(0)
    ctl.submit(wl("a-4", "a", 4, t=1, priority=10), 1)
    ds = ctl.settle(1)
    assert [d.workload for d in ds if d.outcome is Outcome.EVICTED] == evicted
    if evicted:
        ev = next(d for d in ds if d.outcome is Outcome.EVICTED)
        assert ev.reason.endswith("due to reclamation within the cohort while borrowing")
        assert next(d for d in ds if d.outcome is Outcome.ADMITTED).borrowing


def test_candidate_order_rule():
    # evicting first; other queues before own queue; lower priority; most recently admitted.
    w = lambda n, p: Workload(n, "lq", (PodSet("main", 1, {GPU: 1}),), priority=p)  # noqa: E731
    rows = [
        ("own-low-old", w("own-low-old", 0), "mine", False, 1.0),
        ("own-low-new", w("own-low-new", 0), "mine", False, 5.0),
        ("other-high", w("other-high", 9), "theirs", False, 0.0),
        ("evicting", w("evicting", 9), "mine", True, 0.0),
        ("other-low", w("other-low", 0), "theirs", False, 0.0),
    ]
    order = sorted(rows, key=lambda r: candidates_order(r[1], r[2], "mine", r[3], r[4]))
    assert [r[0] for r in order] == ["evicting", "other-low", "other-high", "own-low-new", "own-low-old"]


# -- partial admission (Run a Kubernetes Job, "Partial admission") -------------------------------
def test_reduced_counts_formula():
    # Two pod sets: 10 pods (min 4, delta 6) and 4 pods (min 2, delta 2); total delta 8.
    # step 4: 10 - 6*4//8 = 7 and 4 - 2*4//8 = 3.
    w = Workload("w", "lq", (PodSet("a", 10, {GPU: 1}, 4), PodSet("b", 4, {GPU: 1}, 2)))
    assert reduced_counts(w, 0, 8) == {"a": 10, "b": 4}
    assert reduced_counts(w, 4, 8) == {"a": 7, "b": 3}
    assert reduced_counts(w, 8, 8) == {"a": 4, "b": 2}


def test_partial_admission_takes_the_largest_count_that_fits():
    # 10 GPUs, 4 in use: a job of 10 one-GPU pods with minCount 4 is admitted with
    # 10 - 4 = 6 pods ("admitted with parallelism=9" in the docs' 9-CPU example).
    ctl = controller([gpu_cq("q", ("a100", 10), cohort=None)])
    ctl.submit(wl("busy", "q", 4), 0)
    ctl.settle(0)
    ctl.submit(wl("elastic", "q", 1, t=1, count=10, min_count=4), 1)
    (d,) = ctl.settle(1)
    assert (d.outcome, d.counts) == (Outcome.ADMITTED, {"main": 6})
    assert ctl.usage("q") == {("a100", GPU): 10}


def test_partial_admission_below_min_count_waits():
    ctl = controller([gpu_cq("q", ("a100", 10), cohort=None)])
    ctl.submit(wl("busy", "q", 7), 0)
    ctl.settle(0)
    ctl.submit(wl("elastic", "q", 1, t=1, count=10, min_count=4), 1)
    (d,) = ctl.settle(1)
    assert d.outcome is Outcome.PENDING     # 3 free < minCount 4


def test_partial_admission_is_tried_only_after_preemption():
    # withinClusterQueue LowerPriority: "high" (8 pods, min 2) first tries preemption of
    # "low" (prio 0, 6 GPUs) with all 8 pods: 10 - 6 = 4 free + 6 = 10 >= 8 -> preempts,
    # full count, no reduction.
    ctl = controller([gpu_cq("q", ("a100", 10), cohort=None, preemption=Preemption(within_cluster_queue=LOWER))])
    ctl.submit(wl("low", "q", 6), 0)
    ctl.settle(0)
    ctl.submit(wl("high", "q", 1, t=1, priority=5, count=8, min_count=2), 1)
    ds = ctl.settle(1)
    assert ("low", "Evicted") in outcomes(ds)
    assert next(d for d in ds if d.outcome is Outcome.ADMITTED).counts == {"main": 8}


# -- multi-role gang: a launcher plus workers of another shape -------------------------------------
def test_multi_role_workload_is_admitted_as_a_whole():
    # launcher: 1 pod, 2 CPUs, no GPU; workers: 4 pods of 1 GPU + 1 CPU. CPU quota 5: 2 + 4 = 6
    # does not fit -> nothing admitted (not the launcher alone).
    from lab01_cluster_sim.admission import (AdmissionController, ClusterQueue, FlavorQuotas, LocalQueue,
                                             ResourceFlavor, ResourceGroup, ResourceQuota)
    group = ResourceGroup((CPU, GPU), (FlavorQuotas("a100", {CPU: ResourceQuota(5000), GPU: ResourceQuota(8)}),))
    ctl = AdmissionController([ClusterQueue("q", (group,))], [LocalQueue("lq-q", "ns", "q")], [ResourceFlavor("a100")])
    mpi = Workload("mpi", "lq-q", (PodSet("launcher", 1, {CPU: 2000}), PodSet("worker", 4, {CPU: 1000, GPU: 1})), "ns")
    assert ctl.submit(mpi, 0) is None
    (d,) = ctl.settle(0)       # 6 CPUs > the queue's 5, ever: pending, as Kueue keeps it
    assert (d.outcome, d.reason) == (Outcome.PENDING, "couldn't assign flavors to pod set worker: insufficient quota "
                                     "for cpu in flavor a100, previously considered podsets requests (2) + current "
                                     "podset request (4) > maximum capacity (5)")
    ctl2 = AdmissionController([ClusterQueue("q", (ResourceGroup((CPU, GPU), (FlavorQuotas(
        "a100", {CPU: ResourceQuota(6000), GPU: ResourceQuota(8)}),)),))], [LocalQueue("lq-q", "ns", "q")],
        [ResourceFlavor("a100")])
    ctl2.submit(mpi, 0)
    (d,) = ctl2.settle(0)
    assert d.counts == {"launcher": 1, "worker": 4}
    assert ctl2.usage("q") == {("a100", CPU): 6000, ("a100", GPU): 4}
