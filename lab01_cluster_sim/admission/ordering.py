"""Kueue's ordering rules, one small function each, with the rule in its docstring.

When Kueue changes a rule, one function here changes. Each returns a sort key (smaller
sorts first), so callers write ``sorted(items, key=rule)``. "Older first" is :func:`age`:
creation in the simulation, then ``metadata.creationTimestamp`` when given, then the
position in the input. Kueue's last tie-break is the Workload's UID (``baseCompareFunc``,
``pkg/cache/queue/cluster_queue.go``), random to a user; the input position stands for it,
so equal workloads keep the order in which the scenario lists them, never an order by name.
The name only closes ties between workloads built at the same position (tests).
"""

from __future__ import annotations

from lab01_cluster_sim.admission.api import Workload


def age(workload: Workload) -> tuple:
    """Older first: created earlier in the simulation (its arrival, s); at the same instant,
    the earlier ``metadata.creationTimestamp`` when both carry one (one without sorts after
    one with); then the position in the input (module docstring)."""
    ts = workload.creation_timestamp
    return (workload.creation_time, ts is None, ts or 0.0, workload.position, workload.name)


def queue_order(workload: Workload) -> tuple:
    """Order inside a ClusterQueue, for both StrictFIFO and BestEffortFIFO: higher priority
    first, then older first (:func:`age`; Cluster Queue page, "Queueing strategy":
    "Workloads are ordered first by priority and then by .metadata.creationTimestamp";
    ``baseCompareFunc``, ``pkg/cache/queue/cluster_queue.go``)."""
    return (-workload.priority,) + age(workload)


def classical_entry_order(borrow_height: int, workload: Workload) -> tuple:
    """Order in which one admission cycle considers the heads of the ClusterQueues
    without fair sharing (``pkg/scheduler/scheduler.go``, ``makeClassicalIterator``):
    requests that fit under nominal quota before those that borrow (lower borrowing
    height first), then higher priority first (feature gate PrioritySortingWithinCohort,
    on by default), then older first. (Workloads already holding quota for a second pass
    come first in Kueue; the simulator has no second pass.)"""
    return (borrow_height, -workload.priority) + age(workload)


def fair_sharing_entry_order(share_key: tuple, workload: Workload) -> tuple:
    """Order among the heads of a cohort under fair sharing (``fair_sharing_iterator.go``,
    ``entryComparer.less``): the lowest dominant resource share *after* admitting the
    workload first, then higher priority, then older first. ``share_key`` sorts like
    Kueue's ``CompareDRS`` (see :class:`lab01_cluster_sim.admission.quota.Share`)."""
    return (share_key, -workload.priority) + age(workload)


def candidates_order(candidate: Workload, candidate_cq: str, preemptor_cq: str, evicting: bool,
                     admitted_at: float) -> tuple:
    """Order of preemption candidates (Preemption page, "Candidates", and
    ``pkg/scheduler/preemption/common/ordering.go``, ``CandidatesOrdering``):

    0. workloads already being evicted first;
    1. workloads from other ClusterQueues of the cohort (which are borrowing) before those
       of the preemptor's own ClusterQueue;
    2. lower priority first;
    3. admitted more recently first (later quota reservation time first);
    then the name, for a total order.
    """
    return (not evicting, candidate_cq == preemptor_cq, candidate.priority, -admitted_at, candidate.name)


__all__ = ["age", "candidates_order", "classical_entry_order", "fair_sharing_entry_order", "queue_order"]
