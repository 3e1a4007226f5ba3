"""Kueue rules added for issue 17, each mirroring a case of Kueue's own unit tests at commit
ff69552e (``pkg/scheduler/scheduler_test.go``, ``pkg/scheduler/flavorassigner/
flavorassigner_test.go``) or the code it cites. Expected values are worked out in the comments."""

from __future__ import annotations

from dataclasses import replace

import pytest

from lab01_cluster_sim.admission import (
    AdmissionController,
    ClusterQueue,
    FlavorFungibility,
    FlavorQuotas,
    FungibilityPolicy,
    LocalQueue,
    Outcome,
    PodSet,
    Preemption,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
    State,
    Workload,
)
from lab01_cluster_sim.admission.api import FungibilityPreference
from lab01_cluster_sim.corev1 import MatchExpression, NodeSelectorTerm as T, Taint, Toleration
from lab01_cluster_sim.admission.flavors import flavor_mismatch
from lab01_cluster_sim.admission.ordering import queue_order

from .helpers import ANY, GPU, LOWER, NEVER, controller, gpu_cq, outcomes, wl

PRODUCT = "nvidia.com/gpu.product"


# -- flavor assignment honours nodeSelector, required node affinity and taints ---------------------
def _two_gpu_flavors():
    """One ClusterQueue, two ResourceFlavors: "a" (nodes labelled gpu.product=A) first, then
    "b" (gpu.product=B), 4 GPUs of quota each."""
    flavors = [ResourceFlavor("a", {PRODUCT: "A"}), ResourceFlavor("b", {PRODUCT: "B"})]
    cq = gpu_cq("q", ("a", 4), ("b", 4), cohort=None)
    return AdmissionController([cq], [LocalQueue("lq-q", "ns", "q")], flavors)


def test_node_selector_picks_its_flavor_quota_never_the_other():
    # The repro. A Job selecting gpu.product=B must be charged to flavor b even though
    # a comes first and has room; one selecting A gets a, and when a is full it waits: b's
    # labels contradict its selector ("flavor b doesn't match node affinity"), as
    # checkFlavorForPodSets does (flavorassigner_test.go, "multiple flavors, fits a node
    # selector" and "multiple flavors, doesn't fit node affinity").
    ctl = _two_gpu_flavors()
    ctl.submit(wl("wants-b", "q", 2, node_selector={PRODUCT: "B"}), 0)
    ctl.submit(wl("wants-a", "q", 4, t=1, node_selector={PRODUCT: "A"}), 1)
    ctl.submit(wl("more-a", "q", 1, t=2, node_selector={PRODUCT: "A"}), 2)
    ds = ctl.settle(2)
    assert {d.workload: d.flavors["main"][GPU] for d in ds if d.outcome is Outcome.ADMITTED} == {
        "wants-b": "b", "wants-a": "a"}
    assert ctl.usage("q") == {("b", GPU): 2, ("a", GPU): 4}
    # more-a: 1 GPU, a has 4 - 4 = 0 left; b has 2 left but does not match.
    assert ctl.pending_reason("more-a") == ("couldn't assign flavors to pod set main: flavor b doesn't match node "
                                            "affinity, insufficient unused quota for nvidia.com/gpu in flavor a, 1 more "
                                            "needed")


def test_required_node_affinity_picks_the_flavor():
    # nodeAffinity.required: gpu.product In [B] (ORed terms, ANDed expressions), the same
    # matching as nodeSelector but through flavorSelector's affinity branch.
    ctl = _two_gpu_flavors()
    term = T((MatchExpression(PRODUCT, "In", ("B",)),))
    ctl.submit(wl("aff-b", "q", 1, affinity=(term,)), 0)
    # NotIn [A] also rules a out
    ctl.submit(wl("not-a", "q", 1, t=1, affinity=(T((MatchExpression(PRODUCT, "NotIn", ("A",)),)),)), 0)
    ds = ctl.settle(0)
    assert {d.workload: d.flavors["main"][GPU] for d in ds} == {"aff-b": "b", "not-a": "b"}


def test_a_labelless_flavor_first_takes_a_workload_with_a_selector():
    # flavorassigner_test.go, "labelless flavor in group with labeled flavor, workload uses
    # labeled selector": flavors "default" (no labels) then "two" (type=two), 4 CPUs each; a pod
    # set selecting type=two gets "default", which has no key to contradict the selector.
    cq = gpu_cq("q", ("default", 4000), ("two", 4000), cohort=None, resource="cpu")
    ctl = AdmissionController([cq], [LocalQueue("lq-q", "ns", "q")],
                              [ResourceFlavor("default"), ResourceFlavor("two", {"type": "two"})])
    ctl.submit(wl("w", "q", 1000, resource="cpu", node_selector={"type": "two"}), 0)
    (d,) = ctl.settle(0)
    assert (d.outcome, d.flavors["main"]["cpu"]) == (Outcome.ADMITTED, "default")


def test_only_the_flavors_own_label_keys_count():
    # flavorSelector(spec, allowedKeys) with allowedKeys = the flavor's own nodeLabels keys
    # (flavorassigner.go at ff69552e): a flavor without labels matches any selector; an
    # affinity term whose every expression is on another key drops the whole affinity.
    plain = ResourceFlavor("plain")
    ps = PodSet("main", 1, {GPU: 1}, node_selector={PRODUCT: "A", "zone": "z1"},
                affinity=(T((MatchExpression("zone", "In", ("z2",)),)),))
    assert flavor_mismatch(ps, plain) is None
    zoned = ResourceFlavor("zoned", {"zone": "z1"})
    # nodeSelector zone=z1 matches, but the affinity term zone In [z2] is kept and fails
    assert flavor_mismatch(ps, zoned) == "flavor zoned doesn't match node affinity"


def test_untolerated_taint_message_and_toleration_from_the_flavor():
    # FindMatchingUntoleratedTaint over NoSchedule/NoExecute taints; the message prints the
    # corev1.Taint as Go's %s does: {key value effect <nil>} (scheduler_test.go, "flavors with
    # mixed taint mismatch and exceeding limits": "untolerated taint {key val NoSchedule <nil>}").
    tainted = ResourceFlavor("gpu", {PRODUCT: "A"}, (Taint("nvidia.com/gpu", "present", "NoSchedule"),))
    ps = PodSet("main", 1, {GPU: 1})
    assert flavor_mismatch(ps, tainted) == "untolerated taint {nvidia.com/gpu present NoSchedule <nil>} in flavor gpu"
    # the usual GPU pod toleration: key nvidia.com/gpu, operator Exists
    tolerant = replace(ps, tolerations=(Toleration("nvidia.com/gpu", "Exists", "", "NoSchedule"),))
    assert flavor_mismatch(tolerant, tainted) is None
    # PreferNoSchedule is not considered by the flavor assigner
    soft = ResourceFlavor("soft", {}, (Taint("nvidia.com/gpu", "present", "PreferNoSchedule"),))
    assert flavor_mismatch(ps, soft) is None
    # the flavor's own tolerations count too
    self_tolerating = replace(tainted, tolerations=(Toleration("nvidia.com/gpu", "Exists"),))
    assert flavor_mismatch(ps, self_tolerating) is None


# (the matching of expressions and terms is lab01_cluster_sim.corev1's: tests/lab01/test_kubescheduler.py)


# -- reserveCapacityForUnreclaimablePreempt --------------------------------------------------------
def _reclaim_case(reclaim):
    # scheduler_test.go, "capacity blocked when lending clusterqueue not guaranteed to reclaim
    # (ReclaimWithinCohort=LowerPriority)" and "... (=Never)", and "capacity not blocked when
    # lending clusterqueue can reclaim (ReclaimWithinCohort=Any)": A owns 2 GPUs, a1 holds 1;
    # a2 needs 2; B owns 0 and its b1 needs 1 (borrowed from A).
    a = gpu_cq("A", ("on-demand", 2), cohort="root", preemption=Preemption(reclaim_within_cohort=reclaim))
    b = gpu_cq("B", ("on-demand", 0), cohort="root")
    ctl = controller([a, b], flavors=("on-demand",))
    ctl.submit(wl("a1-admitted", "A", 1), 0)
    ctl.settle(0)
    ctl.submit(wl("a2-pending", "A", 2, t=1), 1)
    ctl.submit(wl("b1-pending", "B", 1, t=1), 1)
    return ctl, ctl.cycle(1)


@pytest.mark.parametrize("reclaim", [LOWER, NEVER])
def test_capacity_blocked_when_the_lender_cannot_always_reclaim(reclaim):
    # a2 goes first (no borrowing). It needs 2, 1 is free: Preempt mode, but withinClusterQueue
    # Never gives no candidates. A cannot always reclaim (reclaimWithinCohort != Any), so it
    # keeps min(2, nominal 2 - used 1) = 1 GPU for the rest of the cycle: b1 (1 GPU, borrowing)
    # finds 2 - 1 - 1 = 0 and no longer fits.
    ctl, ds = _reclaim_case(reclaim)
    assert outcomes(ds) == [("a2-pending", "Pending"), ("b1-pending", "Pending")]
    assert ds[0].reason == ("couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in "
                            "flavor on-demand, 1 more needed")
    assert ds[1].reason == "Workload no longer fits after processing another workload"
    assert ctl.workloads["a2-pending"].state is State.INADMISSIBLE
    assert ctl.workloads["b1-pending"].state is State.PENDING       # wantLeft: still in the active queue
    assert ctl.usage("A") == {("on-demand", GPU): 1}               # the reservation ends with the cycle


def test_capacity_not_blocked_when_the_lender_can_reclaim():
    ctl, ds = _reclaim_case(ANY)
    assert outcomes(ds) == [("a2-pending", "Pending"), ("b1-pending", "Admitted")]


# -- flavorFungibility.preference -------------------------------------------------------------------
def _preference_case(preference):
    # scheduler_test.go, "PreemptionOverBorrowing preference: preempt in first flavor instead of
    # borrowing in second" and "BorrowingOverPreemption preference: borrow in second flavor
    # instead of preempting in first": cq owns 5 of on-demand (borrowingLimit 0) and 0 of spot
    # (borrowingLimit 5); its lender owns 5 of spot. low (priority -1) holds on-demand's 5.
    # high (priority 0) asks 5: on-demand needs preemption, spot fits by borrowing.
    fung = FlavorFungibility(FungibilityPolicy.TRY_NEXT_FLAVOR, FungibilityPolicy.TRY_NEXT_FLAVOR, preference)
    cq = replace(gpu_cq("cq", ("on-demand", 5, 0), ("spot", 0, 5), cohort="c",
                        preemption=Preemption(within_cluster_queue=LOWER)), flavor_fungibility=fung)
    lender = gpu_cq("lender", ("on-demand", 0), ("spot", 5), cohort="c")
    ctl = controller([cq, lender], flavors=("on-demand", "spot"))
    ctl.submit(wl("low", "cq", 5, priority=-1), 0)
    ctl.settle(0)
    ctl.submit(wl("high", "cq", 5, t=1, priority=0), 1)
    return ctl.cycle(1)


def test_preemption_over_borrowing_preempts_in_the_first_flavor():
    ds = _preference_case(FungibilityPreference.PREEMPTION_OVER_BORROWING)
    assert outcomes(ds) == [("low", "Evicted"), ("high", "Preempting")]
    assert ds[1].reason == ("couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in "
                            "flavor on-demand, 5 more needed. Pending the preemption of 1 workload(s)")


@pytest.mark.parametrize("preference", [FungibilityPreference.BORROWING_OVER_PREEMPTION, None])
def test_borrowing_over_preemption_borrows_in_the_second_flavor(preference):
    (d,) = _preference_case(preference)
    assert (d.workload, d.outcome, d.flavors["main"][GPU], d.borrowing) == ("high", Outcome.ADMITTED, "spot", True)


# -- queue order: creationTimestamp, then input position, never the name ----------------------------
def test_queue_order_uses_creation_timestamp_then_position_not_name():
    # baseCompareFunc (pkg/cache/queue/cluster_queue.go): priority, then the queue-order
    # timestamp, then the UID; the input position stands for the UID.
    z_first = Workload("z", "lq", (PodSet("main", 1, {GPU: 1}),), position=0)
    a_second = Workload("a", "lq", (PodSet("main", 1, {GPU: 1}),), position=1)
    assert [w.name for w in sorted([a_second, z_first], key=queue_order)] == ["z", "a"]
    older = replace(a_second, creation_timestamp=1000.0)
    newer = replace(z_first, creation_timestamp=2000.0)
    assert [w.name for w in sorted([newer, older], key=queue_order)] == ["a", "z"]


def test_strict_fifo_head_is_the_first_in_the_file_not_the_first_by_name():
    # 2 GPUs; "zeta" (listed first, 2 GPUs) and "alpha" (listed second, 2 GPUs) arrive together.
    # Kueue admits the older: zeta. By name it would be alpha.
    ctl = controller([gpu_cq("q", ("a100", 2), cohort=None)])
    ctl.submit(Workload("zeta", "lq-q", (PodSet("main", 1, {GPU: 2}),), "ns", position=0), 0)
    ctl.submit(Workload("alpha", "lq-q", (PodSet("main", 1, {GPU: 2}),), "ns", position=1), 0)
    admitted = [d.workload for d in ctl.settle(0) if d.outcome is Outcome.ADMITTED]
    assert admitted == ["zeta"]


# -- quota for any extended resource: MIG profiles ---------------------------------------------------
def test_mig_profile_quota():
    # A ClusterQueue may cover any resource name (coveredResources is a list of
    # ResourceName); a MIG profile exposed by NVIDIA's device plugin (mixed strategy) is one.
    mig = "nvidia.com/mig-3g.40gb"
    cq = ClusterQueue("q", (ResourceGroup((mig,), (FlavorQuotas("a100-mig", {mig: ResourceQuota(4)}),)),))
    ctl = AdmissionController([cq], [LocalQueue("lq-q", "ns", "q")], [ResourceFlavor("a100-mig")])
    # 3 + 2 = 5 > 4: the second waits for 5 - 4 = 1 more
    ctl.submit(Workload("m1", "lq-q", (PodSet("main", 3, {mig: 1}),), "ns", position=0), 0)
    ctl.submit(Workload("m2", "lq-q", (PodSet("main", 2, {mig: 1}),), "ns", position=1), 0)
    d1, d2 = ctl.settle(0)
    assert (d1.workload, d1.outcome, d1.flavors["main"][mig]) == ("m1", Outcome.ADMITTED, "a100-mig")
    assert (d2.workload, d2.outcome) == ("m2", Outcome.PENDING)
    assert d2.reason == ("couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/mig-3g.40gb "
                         "in flavor a100-mig, 1 more needed")
    assert ctl.usage("q") == {("a100-mig", mig): 3}


# -- when preemption is considered at all (fitsResourceQuota) -------------------------------------
def test_no_preemption_for_a_request_above_nominal_without_borrow_within_cohort():
    # fitsResourceQuota (flavorassigner.go): past "insufficient unused quota", the preemption
    # oracle runs only if nominalQuota >= request, or the hierarchy may reclaim, or the queue may
    # preempt while borrowing (borrowWithinCohort, or reclaimWithinCohort under fair sharing).
    # q owns 4 GPUs in cohort "pool" (peer p owns 4, idle). low (priority 0) borrows: 6 GPUs.
    # high (priority 10) asks 6 > nominal 4: withinClusterQueue LowerPriority alone does not let
    # it preempt low, so it stays pending (NoFit), 8 - 6 = 2 free < 6.
    q = gpu_cq("q", ("a100", 4), preemption=Preemption(within_cluster_queue=LOWER))
    ctl = controller([q, gpu_cq("p", ("a100", 4))])
    ctl.submit(wl("low", "q", 6, priority=0), 0)
    ctl.settle(0)
    ctl.submit(wl("high", "q", 6, t=1, priority=10), 1)
    (d,) = ctl.settle(1)
    assert (d.workload, d.outcome) == ("high", Outcome.PENDING)
    assert d.reason == ("couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in "
                        "flavor a100, 4 more needed")
    # within nominal (4 <= 4) the same queue does preempt low
    ctl.submit(wl("high-4", "q", 4, t=2, priority=10), 2)
    assert ("low", "Evicted") in outcomes(ctl.cycle(2))


def test_may_reclaim_in_hierarchy():
    # FindHeightOfLowestSubtreeThatFits's second result (hierarchical_preemption.go). Cohort mid
    # (parent root) holds q (nominal 2) and s (nominal 4); r (nominal 4) sits in root directly.
    # q asking 4: past its 2, the remaining 4 - 2 = 2 fit mid's subtree (6), and mid has a
    # parent -> True. r asking 6: the remaining 2 fit only at root, which has no parent -> False.
    # Within its own nominal quota a queue with a parent may always reclaim -> True.
    from lab01_cluster_sim.admission import Cohort, QuotaTree

    q = gpu_cq("q", ("a100", 2), cohort="mid")
    s = gpu_cq("s", ("a100", 4), cohort="mid")
    r = gpu_cq("r", ("a100", 4), cohort="root")
    tree = QuotaTree([q, s, r], [Cohort("mid", "root"), Cohort("root")])
    fr = ("a100", GPU)
    assert tree.may_reclaim_in_hierarchy("q", fr, 4) is True
    assert tree.may_reclaim_in_hierarchy("r", fr, 6) is False
    assert tree.may_reclaim_in_hierarchy("r", fr, 4) is True


def test_a_workload_that_fails_does_not_set_aside_one_with_another_affinity():
    # BestEffortFIFO sets aside, with a failed head, the pending workloads asking the same; one
    # whose affinity differs may fit another flavor and must stay a head (here: b has room).
    ctl = _two_gpu_flavors()
    ctl.submit(wl("fill-a", "q", 4, node_selector={PRODUCT: "A"}), 0)
    ctl.settle(0)
    to_a = (T((MatchExpression(PRODUCT, "In", ("A",)),)),)
    to_b = (T((MatchExpression(PRODUCT, "In", ("B",)),)),)
    ctl.submit(wl("wants-a", "q", 1, t=1, affinity=to_a), 1)
    ctl.submit(wl("wants-b", "q", 1, t=2, affinity=to_b), 1)
    admitted = [d.workload for d in ctl.settle(1) if d.outcome is Outcome.ADMITTED]
    assert admitted == ["wants-b"]
