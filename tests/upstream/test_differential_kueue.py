"""Kueue v0.17.0's scheduler as the oracle of the simulator's admission layer.

Each generated case (ResourceFlavors, ClusterQueues in cohorts with borrowing and lending
limits and preemption policies, optional Cohort objects and fair sharing, admitted
workloads, one head workload; :func:`upstream.strategies.kueue_case`) is nominated by the
simulator (:mod:`upstream.sim_adapter`) and by Kueue's own flavor assigner and preemptor
on its own cache snapshot (``tools/upstream/kueue.go``, as pkg/scheduler/scheduler.go
getInitialAssignments calls them). The assignment mode, the flavor of each resource of
each pod set, the admitted count, whether it borrows and the preemption targets must agree.
The cycle tests (:func:`upstream.strategies.kueue_cycle_case`) run one whole scheduling cycle
on both sides (``tools/upstream/cmd/kueue-oracle/cycle.go``, Kueue's ``Scheduler.schedule``;
:func:`upstream.sim_adapter.sim_kueue_cycle`).
"""

from __future__ import annotations

import json
import re

from hypothesis import given, reject

from upstream import sim_adapter
from upstream.conftest import SETTINGS
from upstream.strategies import kueue_case, kueue_cycle_case, kueue_reservation_case


def decision(answer: dict) -> dict:
    """The parts of a nomination both sides must agree on."""
    return {"mode": answer["mode"], "borrows": answer["borrowing"] > 0,
            "podSets": [{"name": p["name"], "count": p["count"], "flavors": p["flavors"]}
                        for p in answer["podSets"]] if answer["mode"] != "NoFit" else [],
            "targets": answer["targets"]}


def upstream_panic_known(case: dict) -> bool:
    """Kueue v0.17.0 panics (nil pointer in fairsharing.TargetClusterQueueOrdering.Iter,
    pkg/scheduler/preemption/fairsharing/ordering.go: after the CQ-without-cohort loop it
    goes on to ``preemptorCq.Parent().Root()``) when fair sharing is on and a ClusterQueue
    without a cohort looks for preemption targets; later Kueue returns there (kubernetes-
    sigs/kueue #13187, on main since). The simulator follows main, so such a case has no
    v0.17.0 answer to compare with."""
    go = case["go"]
    cq = next(c for c in go["clusterQueues"] if c["metadata"]["name"] == go["clusterQueue"])
    return go["fairSharing"] is not None and "cohortName" not in cq["spec"]


def version_gap(case: dict, sim: dict) -> bool:
    """True for a nomination where Kueue v0.17.0 and the commit the simulator follows rank
    flavors by different rules: under ``preference: PreemptionOverBorrowing`` v0.17.0's
    ``isPreferred`` (pkg/scheduler/flavorassigner/flavorassigner.go) ranks a flavor whose
    preemption found no candidates by its borrowing level like any other, main ranks it below
    every usable flavor first (kubernetes-sigs/kueue #13616). Such a case (some flavor's
    simulation found no candidates, in a queue with that preference) has no v0.17.0 answer
    to compare with, whatever the two sides say."""
    go = case["go"]
    cq = next(c for c in go["clusterQueues"] if c["metadata"]["name"] == go["clusterQueue"])
    return (cq["spec"]["flavorFungibility"].get("preference") == "PreemptionOverBorrowing"
            and sim["noCandidatesSeen"])


def _check(oracle, case: dict) -> None:
    up = oracle.ask(case["go"])
    if up.get("error", "").startswith("upstream panic:") and upstream_panic_known(case):
        reject()
    assert "error" not in up, f"oracle refused a generated case: {up['error']}\n{json.dumps(case['go'])}"
    sim = sim_adapter.sim_kueue(case)
    if version_gap(case, sim):
        reject()
    mine, theirs = decision(sim), decision(up)
    loose = {"targets": [], "borrows": None}
    if mine != theirs and {**mine, **loose} == {**theirs, **loose} and sim_adapter.over_admitted(case):
        return   # stated deviation: targets and borrowing in an over-admitted tree (scenarios/README.md)
    assert mine == theirs, json.dumps(case, sort_keys=True)


@SETTINGS
@given(case=kueue_case(fair_sharing=False))
def test_classic_admission(oracle, case):
    """Quota, cohorts, borrowing and lending limits, withinClusterQueue,
    reclaimWithinCohort, borrowWithinCohort, flavor fungibility, partial admission."""
    _check(oracle, case)


@SETTINGS
@given(case=kueue_case(fair_sharing=True))
def test_fair_sharing_admission(oracle, case):
    """The same with fair sharing on (weights, preemption strategies)."""
    _check(oracle, case)


@SETTINGS
@given(case=kueue_case(flavor_labels=True))
def test_flavor_node_labels(oracle, case):
    """ResourceFlavors with ``nodeLabels`` and head workloads selecting a GPU model: Kueue
    skips a flavor whose labels contradict the pods' nodeSelector ("flavor F doesn't match
    node affinity", flavorassigner.go flavorSelector / checkFlavorForPodSets)."""
    _check(oracle, case)


@SETTINGS
@given(case=kueue_case(taints=True))
def test_flavor_taints(oracle, case):
    """ResourceFlavors with ``nodeTaints`` (NoSchedule, PreferNoSchedule, NoExecute) and
    ``tolerations``, pods with tolerations: Kueue skips a flavor with a NoSchedule or
    NoExecute taint that neither the pods' nor the flavor's tolerations tolerate
    ("untolerated taint ... in flavor F", flavorassigner.go checkFlavorForPodSets)."""
    _check(oracle, case)


@SETTINGS
@given(case=kueue_case(pod_sets=True, taints=True))
def test_several_pod_sets(oracle, case):
    """Heads with one to three pod sets (own count, requests, minCount, nodeSelector and
    tolerations): a flavor per pod set, each pod set counting what the earlier ones took
    (flavorassigner.go assignFlavors), partial admission over every pod set
    (podset_reducer.go)."""
    _check(oracle, case)


@SETTINGS
@given(case=kueue_case(preference=True))
def test_fungibility_preference(oracle, case):
    """``flavorFungibility`` with both policies TryNextFlavor and ``preference``
    BorrowingOverPreemption, PreemptionOverBorrowing or unset (flavorassigner.go
    isPreferred); the version gap of :func:`version_gap` set aside."""
    _check(oracle, case)


@SETTINGS
@given(case=kueue_reservation_case())
def test_capacity_reserved_for_an_unreclaimable_preemptor(oracle, case):
    """:func:`test_scheduling_cycle` on cases shaped for ``reserveCapacityForUnreclaimablePreempt``
    (:func:`upstream.strategies.kueue_reservation_case`): whether cq-1's head may borrow what
    cq-0's head, needing preemption without candidates, keeps for the rest of the cycle."""
    _check_cycle(oracle, case)


@SETTINGS
@given(case=kueue_cycle_case())
def test_scheduling_cycle(oracle, case):
    """One whole scheduling cycle (Kueue's ``Scheduler.schedule``, pkg/scheduler/scheduler.go)
    over one to five pending workloads: the head of each ClusterQueue by queue order
    (priority, ``metadata.creationTimestamp``, then the UID, given in input order), the heads
    ordered and admitted, preemptions issued, and the capacity of a preemptor without
    candidates reserved from the other queues of its cohort
    (``reserveCapacityForUnreclaimablePreempt``). Per pending workload the outcome (admitted
    with its flavors and counts, or pending with Kueue's message) and every eviction (victim,
    preemptor, reason) must agree. Cases in an over-admitted tree (a stated deviation of the
    nomination test) and the v0.17.0 fair-sharing panic are set aside."""
    _check_cycle(oracle, case)


def _check_cycle(oracle, case: dict) -> None:
    go = case["go"]
    if sim_adapter.over_admitted(case):
        reject()
    up = oracle.ask(go)
    if (up.get("error", "").startswith("upstream panic:") and go["fairSharing"] is not None
            and any("cohortName" not in c["spec"] for c in go["clusterQueues"])):
        reject()   # the v0.17.0 panic of upstream_panic_known, for any queue of the cycle
    assert "error" not in up, f"oracle refused a generated case: {up['error']}\n{json.dumps(go)}"
    sim = sim_adapter.sim_kueue_cycle(case)
    covered = go["clusterQueues"][0]["spec"]["resourceGroups"][0]["coveredResources"]
    mine, theirs = (_stable(ans, len(covered)) for ans in (sim, up))
    assert mine == theirs, json.dumps(case, sort_keys=True)


def _stable(answer: dict, covered: int) -> dict:
    """A cycle answer with each pending message as far as Kueue v0.17.0 fixes it. With one
    covered resource the whole message. With several, Kueue's findFlavorForPodSets walks a
    flavor's resources in Go map order and stops at the first that cannot fit, so which
    resources' reasons a flavor lists varies from run to run (the same case twice gives
    different messages); what stays fixed, and is compared, is the kind of message, the pod
    sets and flavors it names, and any "Pending the preemption of N workload(s)" suffix."""
    out = []
    for w in answer["workloads"]:
        msg = w["message"]
        if covered > 1 and msg.startswith("couldn't assign flavors"):
            suffix = msg.rsplit(". ", 1)[1] if ". Pending the preemption" in msg else ""
            msg = ("couldn't assign flavors", sorted(set(re.findall(r"pod set (\S+):", msg))),
                   sorted(set(re.findall(r"flavor ([\w-]+)", msg))), suffix)
        out.append({**w, "message": msg})
    return {"workloads": out, "evicted": answer["evicted"]}
