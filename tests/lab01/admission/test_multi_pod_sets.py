"""Workloads with several pod sets, as Kueue's own flavor-assigner unit tests state them.

Each case is one of ``TestAssignFlavors`` in ``pkg/scheduler/flavorassigner/flavorassigner_test.go``
of kubernetes-sigs/kueue at commit ff69552e (the commit the admission layer follows), named in
the test's docstring, with Kueue's expected outcome: the flavor of each pod set, the mode,
borrowing, the quota usage and the messages. The flavors are that test's ``resourceFlavors``
("one" labelled ``type: one``, "two" ``type: two``, "tainted" with the taint
``instance=spot:NoSchedule``). Kueue's test oracle answers Preempt for every preemption
simulation (``testOracle``); so does :func:`_always_preempt`. Quantities are in Kueue's units:
CPU in milli-cores, memory in bytes.
"""

from __future__ import annotations

from lab01_cluster_sim.admission import (
    ClusterQueue,
    FlavorQuotas,
    PodSet,
    QuotaTree,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
    Workload,
)
from lab01_cluster_sim.admission.flavors import FlavorAssigner, Granular, Mode
from lab01_cluster_sim.corev1 import Taint, Toleration

from .helpers import CPU

MEMORY = "memory"
GI = 2**30
FLAVORS = {
    "default": ResourceFlavor("default"),
    "one": ResourceFlavor("one", {"type": "one"}),
    "two": ResourceFlavor("two", {"type": "two"}),
    "tainted": ResourceFlavor("tainted", node_taints=(Taint("instance", "spot", "NoSchedule"),)),
}


def _always_preempt(fr, quantity):
    """Kueue's ``testOracle`` without a ``simulationResult``: Preempt, borrowing 0."""
    return Granular.PREEMPT, 0


def _cq(name: str, *flavors: tuple[str, dict[str, ResourceQuota]], cohort: str | None = None) -> ClusterQueue:
    covered = tuple(flavors[0][1])
    return ClusterQueue(name, (ResourceGroup(covered, tuple(FlavorQuotas(f, q) for f, q in flavors)),), cohort)


def _assign(pod_sets: tuple[PodSet, ...], cq: ClusterQueue, usage=None, secondary: ClusterQueue | None = None):
    tree = QuotaTree([cq] + ([secondary] if secondary else []))
    if usage:
        tree.add_usage(cq.name, usage)
    wl = Workload("wl", "lq", pod_sets)
    return FlavorAssigner(wl, cq, tree, FLAVORS, _always_preempt).assign()


def test_multiple_specs_fit_different_flavors():
    """Kueue TestAssignFlavors "multiple specs, fit different flavors": driver (1 pod, 5 CPU)
    and worker (1 pod, 3 CPU); flavors one (4 CPU) and two (10 CPU). The driver exceeds
    one's maximum capacity and goes to two; the worker fits one. Fit, usage one 3, two 5."""
    cq = _cq("test-clusterqueue", ("one", {CPU: ResourceQuota(4000)}), ("two", {CPU: ResourceQuota(10_000)}))
    a = _assign((PodSet("driver", 1, {CPU: 5000}), PodSet("worker", 1, {CPU: 3000})), cq)
    assert a.mode is Mode.FIT and a.borrow == 0
    assert [(ps.name, ps.flavors, ps.mode) for ps in a.pod_sets] == [
        ("driver", {CPU: "two"}, Mode.FIT), ("worker", {CPU: "one"}, Mode.FIT)]
    assert a.usage == {("one", CPU): 3000, ("two", CPU): 5000}
    assert a.message() == ""


def test_multiple_specs_fit_borrowing():
    """Kueue TestAssignFlavors "multiple specs, fits borrowing": driver (4 CPU, 1Gi) and worker
    (6 CPU, 4Gi) in a queue owning 2 CPU (borrowingLimit 98) and 2Gi, whose cohort partner owns
    198 CPU and 198Gi. Both pod sets fit flavor default by borrowing: Fit, Borrowing 1, usage
    10 CPU and 5Gi."""
    cq = _cq("test-clusterqueue", ("default", {CPU: ResourceQuota(2000, borrowing_limit=98_000),
                                               MEMORY: ResourceQuota(2 * GI)}), cohort="test-cohort")
    other = _cq("test-secondary-clusterqueue",
                ("default", {CPU: ResourceQuota(198_000), MEMORY: ResourceQuota(198 * GI)}), cohort="test-cohort")
    a = _assign((PodSet("driver", 1, {CPU: 4000, MEMORY: GI}), PodSet("worker", 1, {CPU: 6000, MEMORY: 4 * GI})),
                cq, secondary=other)
    assert a.mode is Mode.FIT and a.borrow == 1
    assert [(ps.name, ps.flavors) for ps in a.pod_sets] == [
        ("driver", {CPU: "default", MEMORY: "default"}), ("worker", {CPU: "default", MEMORY: "default"})]
    assert a.usage == {("default", CPU): 10_000, ("default", MEMORY): 5 * GI}


def test_each_pod_set_requires_preemption_on_a_different_flavor():
    """Kueue TestAssignFlavors "each podset requires preemption on a different flavor":
    launcher (1 pod, 2 CPU) and workers (10 pods, 1 CPU, tolerating instance=spot:NoSchedule);
    flavors one (4 CPU, 3 used) and tainted (10 CPU, 3 used). The launcher needs preemption in
    one (1 more needed) and does not tolerate tainted; the workers exceed one's maximum
    capacity with the launcher's 2 already counted, and need preemption in tainted (3 more
    needed). Preempt; launcher on one, workers on tainted; usage one 2, tainted 10; Kueue's
    messages per pod set."""
    cq = _cq("test-clusterqueue", ("one", {CPU: ResourceQuota(4000)}), ("tainted", {CPU: ResourceQuota(10_000)}))
    spot = Toleration(key="instance", operator="Equal", value="spot", effect="NoSchedule")
    a = _assign((PodSet("launcher", 1, {CPU: 2000}), PodSet("workers", 10, {CPU: 1000}, tolerations=(spot,))),
                cq, usage={("one", CPU): 3000, ("tainted", CPU): 3000})
    assert a.mode is Mode.PREEMPT
    launcher, workers = a.pod_sets
    assert (launcher.flavors, launcher.mode) == ({CPU: "one"}, Mode.PREEMPT)
    assert (workers.flavors, workers.mode, workers.count) == ({CPU: "tainted"}, Mode.PREEMPT, 10)
    assert launcher.message() == ("insufficient unused quota for cpu in flavor one, 1 more needed, "
                                  "untolerated taint {instance spot NoSchedule <nil>} in flavor tainted")
    assert workers.message() == ("insufficient quota for cpu in flavor one, previously considered podsets requests (2) "
                                 "+ current podset request (10) > maximum capacity (4), "
                                 "insufficient unused quota for cpu in flavor tainted, 3 more needed")
    assert a.usage == {("one", CPU): 2000, ("tainted", CPU): 10_000}


def test_one_pod_set_fits_and_another_cannot():
    """Kueue TestAssignFlavors "multi-podset, one fits and another fails, fitting podset
    attempts skipped in resolveNoFitReason": fitting-podset (1 CPU, nodeSelector type=one) and
    blocking-podset (5 CPU); flavors one and two (2 CPU each). The first fits one; the second
    exceeds the maximum capacity of both, one counting the first's 1 CPU. NoFit, and only the
    blocking pod set carries reasons."""
    cq = _cq("test-clusterqueue", ("one", {CPU: ResourceQuota(2000)}), ("two", {CPU: ResourceQuota(2000)}))
    a = _assign((PodSet("fitting-podset", 1, {CPU: 1000}, node_selector={"type": "one"}),
                 PodSet("blocking-podset", 1, {CPU: 5000})), cq)
    assert a.mode is Mode.NO_FIT
    fitting, blocking = a.pod_sets
    assert (fitting.flavors, fitting.mode, fitting.message()) == ({CPU: "one"}, Mode.FIT, "")
    assert blocking.flavors == {} and blocking.mode is Mode.NO_FIT
    assert a.message() == (
        "couldn't assign flavors to pod set blocking-podset: insufficient quota for cpu in flavor one, previously "
        "considered podsets requests (1) + current podset request (5) > maximum capacity (2), insufficient quota for "
        "cpu in flavor two, previously considered podsets requests (0) + current podset request (5) > "
        "maximum capacity (2)")
