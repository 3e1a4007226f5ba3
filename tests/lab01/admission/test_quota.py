"""Quota per flavor, borrowing and lending limits: the worked examples of Kueue's Cluster
Queue page (https://kueue.sigs.k8s.io/docs/concepts/cluster_queue/), in milli-CPU."""

from __future__ import annotations

import pytest

from lab01_cluster_sim.admission.api import Cohort, FlavorQuotas, ResourceGroup, ResourceQuota
from lab01_cluster_sim.admission.quantity import format_amount, resource_value
from lab01_cluster_sim.admission.quota import QuotaTree, dominant_resource_share
from lab01_cluster_sim.errors import InputError

from .helpers import CPU, GPU, gpu_cq

FR = ("default-flavor", CPU)


def _tree(a_quota, b_quota):
    return QuotaTree([gpu_cq("team-a-cq", ("default-flavor", *a_quota), cohort="team-ab", resource=CPU),
                      gpu_cq("team-b-cq", ("default-flavor", *b_quota), cohort="team-ab", resource=CPU)])


def test_borrowing_from_an_idle_cohort_member():
    # "If ClusterQueue team-b-cq has no admitted Workloads, then ClusterQueue team-a-cq can
    # admit Workloads with resources adding up to 12+9=21 CPUs."
    tree = _tree((9000,), (12000,))
    assert tree.available("team-a-cq", FR) == 21000
    assert tree.potential_available("team-a-cq", FR) == 21000


def test_borrowing_limit_caps_what_a_queue_borrows():
    # team-a: nominal 9, borrowingLimit 1 -> "can admit Workloads with resources adding up
    # to 9+1=10 CPUs"; team-b (no limit) can use 12+9 = 21.
    tree = _tree((9000, 1000), (12000,))
    assert tree.available("team-a-cq", FR) == 10000
    assert tree.available("team-b-cq", FR) == 21000


def test_lending_limit_caps_what_a_queue_lends():
    # team-b: nominal 12, lendingLimit 1 -> team-a "can admit Workloads with resources
    # adding up to 9+1=10 CPUs" while team-b uses <= 12-1 = 11; team-b itself can use 9+12.
    tree = _tree((9000,), (12000, None, 1000))
    assert tree.available("team-a-cq", FR) == 10000
    assert tree.available("team-b-cq", FR) == 21000
    tree.add_usage("team-b-cq", {FR: 11000})
    # team-b's private part (11) is full; the lent 1 CPU is still free: 9 + 1 = 10 for team-a.
    assert tree.available("team-a-cq", FR) == 10000
    tree.add_usage("team-b-cq", {FR: 1000})
    # team-b now uses its lent CPU too: team-a is down to its own 9.
    assert tree.available("team-a-cq", FR) == 9000


def test_usage_bubbles_up_only_past_the_private_quota():
    tree = _tree((9000,), (12000, None, 1000))
    tree.add_usage("team-b-cq", {FR: 11500})
    # private part 11000; 500 is stored in the cohort
    assert tree.cohorts["team-ab"].usage[FR] == 500
    tree.remove_usage("team-b-cq", {FR: 11500})
    assert tree.cohorts["team-ab"].usage[FR] == 0


def test_borrowing_and_borrow_height():
    tree = _tree((9000,), (12000,))
    assert tree.borrow_height("team-a-cq", FR, 9000) == 0   # fits its own 9
    assert tree.borrow_height("team-a-cq", FR, 9001) == 1   # needs the cohort
    tree.add_usage("team-a-cq", {FR: 10000})
    assert tree.borrowing("team-a-cq", FR) and not tree.borrowing("team-b-cq", FR)


def test_queue_without_cohort_has_only_its_nominal_quota():
    tree = QuotaTree([gpu_cq("solo", ("a100", 8), cohort=None)])
    assert tree.available("solo", ("a100", GPU)) == 8
    tree.add_usage("solo", {("a100", GPU): 6})
    assert tree.available("solo", ("a100", GPU)) == 2
    assert not tree.borrowing("solo", ("a100", GPU))


def test_hierarchical_cohort_quota_is_lent_to_its_subtree():
    # Cohort "org" owns 4 GPUs; child cohort "dept" holds team-x (2) and team-y (2).
    org = Cohort("org", None, (ResourceGroup((GPU,), (FlavorQuotas("a100", {GPU: ResourceQuota(4)}),)),))
    dept = Cohort("dept", "org")
    tree = QuotaTree([gpu_cq("team-x", ("a100", 2), cohort="dept"), gpu_cq("team-y", ("a100", 2), cohort="dept")],
                     [org, dept])
    fr = ("a100", GPU)
    assert tree.cohorts["dept"].subtree_quota[fr] == 4          # 2 + 2
    assert tree.cohorts["org"].subtree_quota[fr] == 8           # 4 own + 4 from dept
    assert tree.available("team-x", fr) == 8
    tree.add_usage("team-y", {fr: 2})
    assert tree.available("team-x", fr) == 6


def test_cohort_cycle_is_refused():
    with pytest.raises(InputError, match="cycle"):
        QuotaTree([], [Cohort("a", "b"), Cohort("b", "a")])


def test_borrowing_limit_without_cohort_is_refused():
    with pytest.raises(InputError, match="borrowingLimit of nvidia.com/gpu needs a cohort"):
        QuotaTree([gpu_cq("solo", ("a100", 8, 2), cohort=None)])


def test_lending_limit_above_nominal_is_refused():
    with pytest.raises(InputError, match=r"lendingLimit of nvidia.com/gpu \(9\) must be <= nominalQuota \(8\)"):
        QuotaTree([gpu_cq("a", ("a100", 8, None, 9))])


@pytest.mark.parametrize("resource,text,value", [
    (CPU, "9", 9000), (CPU, "500m", 500), (CPU, "1.5", 1500), ("memory", "36Gi", 36 * 2**30),
    ("memory", "1G", 10**9), (GPU, 8, 8), (GPU, "0.5", 1), ("memory", "1e3", 1000),
])
def test_quantities_in_kueue_units(resource, text, value):
    # cpu counts in milli-cores (MilliValue), everything else in whole units rounded up (Value)
    assert resource_value(resource, text, "x") == value


@pytest.mark.parametrize("bad", ["", "1.2.3", "12 Gi", "-1", "1Zi", True, 1.5, "9" * 80])
def test_bad_quantities_are_refused(bad):
    with pytest.raises(InputError, match="x: "):
        resource_value(CPU, bad, "x")


@pytest.mark.parametrize("resource,amount,text", [
    (CPU, 4000, "4"), (CPU, 1500, "1500m"), ("memory", 2 * 2**30, "2Gi"), ("memory", 100, "100"), (GPU, 2, "2"),
])
def test_amounts_are_written_as_kubernetes_would(resource, amount, text):
    assert format_amount(resource, amount) == text


def test_dominant_resource_share_by_hand():
    # Cohort of three queues with 4 GPUs each (lendable 4+4+4 = 12). team-a uses 8:
    # borrowed 8-4 = 4 -> share = 4 * 1000 / 12 = 333.33; weight 2 halves it.
    tree = QuotaTree([gpu_cq("a", ("a100", 4), weight=2.0), gpu_cq("b", ("a100", 4)), gpu_cq("c", ("a100", 4))])
    tree.add_usage("a", {("a100", GPU): 8})
    share = dominant_resource_share(tree.node("a"))
    assert share.ratio == pytest.approx(4000 / 12)
    assert share.value == pytest.approx(4000 / 24)
    assert share.resource == GPU
    assert dominant_resource_share(tree.node("b")).value == 0      # within nominal
    # with 1 more GPU requested: borrowed 5 -> 5000/12, weighted 5000/24
    assert dominant_resource_share(tree.node("a"), {("a100", GPU): 1}).value == pytest.approx(5000 / 24)


def test_zero_weight_borrowing_share_is_infinite():
    tree = QuotaTree([gpu_cq("a", ("a100", 4), weight=0.0), gpu_cq("b", ("a100", 4))])
    tree.add_usage("a", {("a100", GPU): 5})
    assert dominant_resource_share(tree.node("a")).value == float("inf")
