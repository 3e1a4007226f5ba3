"""Fair sharing: admission order by dominant resource share (DRS) and fair-sharing
preemption (Preemption page, "Fair Sharing"; KEP-1714). Shares by hand: DRS =
borrowed * 1000 / lendable, divided by the weight, rounded up for the strategy tests."""

from __future__ import annotations

import pytest

from lab01_cluster_sim.admission import FairSharingStrategy, Outcome, Preemption
from lab01_cluster_sim.errors import InputError

from .helpers import ANY, GPU, controller, gpu_cq, outcomes, wl


@pytest.mark.parametrize("fair,first", [(False, "a-1"), (True, "b-1")])
def test_admission_order_by_share(fair, first):
    # Cohort of three 4-GPU queues: lendable 12. a uses 6 (borrows 2), b uses 5 (borrows 1),
    # 1 GPU free; both heads ask 1 GPU. Share after admitting: a (7-4)*1000/12 = 250,
    # b (6-4)*1000/12 = 166.7 -> fair sharing admits b-1 first although a-1 is older;
    # the classic order (both borrow, same priority) takes the older a-1.
    ctl = controller([gpu_cq("a", ("a100", 4)), gpu_cq("b", ("a100", 4)), gpu_cq("c", ("a100", 4))], fair_sharing=fair)
    ctl.submit(wl("a-6", "a", 6), 0)
    ctl.submit(wl("b-5", "b", 5), 0)
    ctl.settle(0)
    assert ctl.share("a") == pytest.approx(2000 / 12)
    ctl.submit(wl("a-1", "a", 1, t=1), 1)
    ctl.submit(wl("b-1", "b", 1, t=2), 2)
    ds = ctl.cycle(2)
    assert ds[0].workload == first and ds[0].outcome is Outcome.ADMITTED


def test_fair_preemption_reclaims_for_a_queue_within_its_quota():
    # a runs four 2-GPU jobs (8: borrows 4, share 333), b runs 4: 12 of 12 used. c asks 2
    # (within its nominal 4): c stays within its nominal quota with it, so a's candidates are
    # taken without the share test (feature gate FairSharingPreemptWithinNominal, beta and on
    # since Kueue v0.17: runFirstFsStrategy, pkg/scheduler/preemption/preemption.go), reason
    # InCohortReclamation -> a-4 (newest) is preempted. (The share test would have let it go
    # too: c's share with it is 0 <= a's share without it, (6-4)*1000/12 = 167.)
    pre = Preemption(reclaim_within_cohort=ANY)
    ctl = controller([gpu_cq("a", ("a100", 4), preemption=pre), gpu_cq("b", ("a100", 4), preemption=pre),
                      gpu_cq("c", ("a100", 4), preemption=pre)], fair_sharing=True)
    for i in range(1, 5):                      # admitted at t = 1, 2, 3, 4
        ctl.submit(wl(f"a-{i}", "a", 2, t=i), i)
        ctl.settle(i)
    ctl.submit(wl("b-4", "b", 4, t=5), 5)
    ctl.settle(5)
    ctl.submit(wl("c-2", "c", 2, t=6), 6)
    ds = ctl.settle(6)
    ev = [d for d in ds if d.outcome is Outcome.EVICTED]
    assert [d.workload for d in ev] == ["a-4"]
    assert ev[0].reason == "Preempted to accommodate a workload (c-2) due to reclamation within the cohort"
    assert ("c-2", "Admitted") in outcomes(ds)


def test_fair_preemption_within_nominal_skips_the_share_test():
    # Kueue's feature gate FairSharingPreemptWithinNominal (beta, on by default since v0.17;
    # runFirstFsStrategy and queueWithinNominalInResourcesNeedingPreemption,
    # pkg/scheduler/preemption/preemption.go): a preemptor whose queue, with the workload,
    # stays within its nominal quota of every flavor-resource needing preemption takes other
    # queues' candidates without the share test. Found by the upstream oracle (issue 17).
    # a: h100 0, a100 6 (in that order); b: a100 0, h100 4. Lendable GPUs 10.
    # a-h (4) borrows b's h100; b-1, b-2 (2 each) borrow a's a100. Shares: a 4*1000/10 = 400,
    # b 400. a-x asks 4: h100 has no candidates; a100 needs 4 - (6-4) = 2 more, within a's
    # nominal 6. The share test alone would refuse (400 <= 200 no, 400 < 400 no); within
    # nominal, b's newest b-2 is preempted ("reclamation within the cohort") and a-x fits.
    pre = Preemption(reclaim_within_cohort=ANY)
    ctl = controller([gpu_cq("a", ("h100", 0), ("a100", 6), preemption=pre),
                      gpu_cq("b", ("a100", 0), ("h100", 4), preemption=pre)], flavors=("a100", "h100"),
                     fair_sharing=True)
    ctl.submit(wl("a-h", "a", 4, t=0), 0)
    ctl.settle(0)
    for i in (1, 2):
        ctl.submit(wl(f"b-{i}", "b", 2, t=i), i)
        ctl.settle(i)
    assert ctl.usage("a") == {("h100", GPU): 4} and ctl.usage("b") == {("a100", GPU): 4}
    assert ctl.share("a") == pytest.approx(400) and ctl.share("b") == pytest.approx(400)
    ctl.submit(wl("a-x", "a", 4, t=3), 3)
    ds = ctl.cycle(3)
    ev = [d for d in ds if d.outcome is Outcome.EVICTED]
    assert [d.workload for d in ev] == ["b-2"]
    assert ev[0].reason == "Preempted to accommodate a workload (a-x) due to reclamation within the cohort"
    assert [d.victims for d in ds if d.workload == "a-x"] == [("b-2",)]
    ctl.evicted("b-2", 3, requeue=False)
    assert ("a-x", "Admitted") in outcomes(ctl.cycle(3))
    assert ctl.usage("a") == {("h100", GPU): 4, ("a100", GPU): 4}


@pytest.mark.parametrize("weight_b,expected", [
    # Lender L owns 12; a and b own nothing. a first takes all 12 (six 2-GPU jobs). b then
    # submits 2-GPU jobs one by one. With k jobs, b's share is 2k*1000/12/w_b and a's share
    # after losing one more job is (12-2k)*1000/12. LessThanOrEqualToFinalShare:
    # w_b = 1: k=1: 167 <= 834, k=2: 334 <= 667, k=3: 500 <= 500 -> yes; k=4: 667 <= 334 no,
    #          LessThanInitialShare: 667 < 500 no -> b ends with 6, a with 6.
    # w_b = 2: k=4: ceil(333.3) = 334 <= ceil(333.3) = 334 yes; k=5: 417 <= 167 no and
    #          417 < 334 no -> b ends with 8, a with 4 (2:1, as the weights).
    (1.0, {"a": 6, "b": 6}),
    (2.0, {"a": 4, "b": 8}),
])
def test_fair_sharing_converges_to_weighted_shares(weight_b, expected):
    pre = Preemption(reclaim_within_cohort=ANY)
    ctl = controller([gpu_cq("lender", ("a100", 12)), gpu_cq("a", ("a100", 0), preemption=pre),
                      gpu_cq("b", ("a100", 0), preemption=pre, weight=weight_b)], fair_sharing=True)
    for i in range(6):
        ctl.submit(wl(f"a-{i}", "a", 2, t=i), i)
        ctl.settle(i)
    assert ctl.usage("a") == {("a100", GPU): 12}
    for k in range(6):
        t = 10 + k
        ctl.submit(wl(f"b-{k}", "b", 2, t=t), t)
        ctl.settle(t)
    got = {q: ctl.usage(q).get(("a100", GPU), 0) for q in ("a", "b")}
    assert got == expected


def test_only_supported_strategy_lists_are_accepted():
    with pytest.raises(InputError, match="preemptionStrategies"):
        controller([gpu_cq("a", ("a100", 4))], fair_sharing=True,
                   strategies=[FairSharingStrategy.LESS_THAN_INITIAL_SHARE,
                               FairSharingStrategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE])
