"""The admission stage: Kueue's scheduling cycle as pure bookkeeping.

One cycle (Kueue's ``Scheduler.schedule``, ``pkg/scheduler/scheduler.go``):

1. **Heads**: the first pending workload of every ClusterQueue (by
   :func:`~.ordering.queue_order`; under BestEffortFIFO, workloads set aside as
   inadmissible are skipped).
2. **Nominate**: assign flavors to each head (:class:`~.flavors.FlavorAssigner`). If it does
   not fit, look for preemption targets (:class:`~.preemption.Preemptor`); failing that,
   and if the workload allows partial admission, search for the largest pod counts down to
   ``minCount`` that fit or can preempt (Partial admission docs: Kueue only reduces the
   count "after both borrowing and preemption was taken into account").
3. **Order** the heads (:func:`~.ordering.classical_entry_order`, or the fair-sharing
   tournament: lowest dominant resource share after admission first).
4. **Admit** in that order: NoFit stays pending; Preempt issues the evictions and waits
   (the workload is admitted in a later cycle, once the victims' quota is released); Fit
   reserves the quota. A head whose preemption targets overlap those of an earlier head, or
   that no longer fits after earlier heads took quota, is skipped this cycle.
5. **Requeue** the others: under StrictFIFO a head that failed stays at the head and blocks
   the queue; under BestEffortFIFO a head that does not fit is set aside until quota is
   released in its cohort, so the next workload becomes the head.

The stage never looks at nodes. Time is given by the caller (``now``, s); nothing here reads a
clock. Outcomes are :class:`Decision` records carrying Kueue's own messages. A workload
that does not fit stays pending, also one that never can (a request above what its
ClusterQueue could ever get, a resource the queue does not cover, no flavor matching its
nodeSelector, affinity or tolerations): Kueue keeps it pending and inadmissible (condition
``QuotaReserved=False`` with the same message; Kueue docs, "Troubleshooting Jobs",
https://kueue.sigs.k8s.io/docs/tasks/troubleshooting/troubleshooting_jobs/), and so does the
simulator, to the end of the run.

**Capacity reserved for a preemptor that cannot reclaim.** A head that needs preemption but
found no candidates, in a ClusterQueue whose ``reclaimWithinCohort`` is not ``Any``, keeps the
quota it would use (up to its nominal quota, or up to nominal + borrowingLimit when it
borrows, less what the queue already uses) for the rest of the cycle, so that a later head of
another ClusterQueue of the cohort cannot borrow it (``reserveCapacityForUnreclaimablePreempt``
and ``quotaResourcesToReserve``, ``pkg/scheduler/scheduler.go``; ``CanAlwaysReclaim``,
``pkg/scheduler/preemption/policy.go``).

**Deviation from Kueue.** A workload whose LocalQueue does not exist is rejected ("LocalQueue X
doesn't exist in namespace N"), where Kueue keeps it pending until the LocalQueue appears; the
scenario reader refuses such a workload before the run, and no object appears during a run.

How an engine drives it (one event loop, admission as a stage before placement):
:meth:`AdmissionController.submit` on arrival; :meth:`AdmissionController.schedule` once per
scheduling pass (it runs cycles until nothing changes); it answers ``ADMITTED`` (hand the
workload, with its flavors and pod counts, to placement), ``EVICTED`` (stop that workload;
call :meth:`AdmissionController.evicted` once its pods are gone), ``PREEMPTING`` / ``PENDING``
(nothing to do). :meth:`AdmissionController.finish` when a workload completes.
"""

from __future__ import annotations

import bisect
import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from lab01_cluster_sim.admission.api import (
    ClusterQueue,
    Cohort,
    LocalQueue,
    PodSet,
    PreemptionPolicy,
    QueueingStrategy,
    ResourceFlavor,
    Workload,
)
from lab01_cluster_sim.admission.flavors import Assignment, FlavorAssigner, Mode, search_partial
from lab01_cluster_sim.admission.ordering import classical_entry_order, fair_sharing_entry_order, queue_order
from lab01_cluster_sim.admission.preemption import (
    DEFAULT_STRATEGIES,
    Admitted,
    FairSharingStrategy,
    Preemptor,
    Target,
)
from lab01_cluster_sim.admission.quota import Node, QuotaTree, Usage, _drs_key, dominant_resource_share
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.model import format_seconds


class Outcome(str, enum.Enum):
    """What a cycle decided for a workload."""

    ADMITTED = "Admitted"        # quota reserved: its pods may now be placed
    PREEMPTING = "Preempting"    # evictions issued; admitted once they are done
    PENDING = "Pending"          # does not fit now (Kueue's condition reason "Pending")
    EVICTED = "Evicted"          # preempted to make room for another workload
    REJECTED = "Rejected"        # can never be admitted


class State(str, enum.Enum):
    """Where a workload is in the admission stage."""

    PENDING = "pending"
    INADMISSIBLE = "inadmissible"   # BestEffortFIFO: set aside until quota is released
    ADMITTED = "admitted"
    EVICTING = "evicting"           # preempted; still holds quota until evicted() is called
    FINISHED = "finished"
    REJECTED = "rejected"


@dataclass(frozen=True, slots=True)
class Decision:
    """One outcome of the admission stage.

    Attributes:
        time: when, s. workload: its name. outcome: :class:`Outcome`.
        reason: Kueue's message (e.g. "couldn't assign flavors to pod set main: insufficient
            unused quota for nvidia.com/gpu in flavor a100, 2 more needed").
        cluster_queue: the workload's ClusterQueue ("" if unknown).
        flavors: for ADMITTED: pod set -> resource -> flavor.
        counts: for ADMITTED: pod set -> pods admitted (below the full count under partial
            admission).
        borrowing: for ADMITTED: True when it uses quota borrowed from its cohort.
        victims: for PREEMPTING: the workloads being preempted for it.
        preemptor: for EVICTED: the workload it was preempted for.
    """

    time: float
    workload: str
    outcome: Outcome
    reason: str
    cluster_queue: str = ""
    flavors: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    counts: Mapping[str, int] = field(default_factory=dict)
    borrowing: bool = False
    victims: tuple[str, ...] = ()
    preemptor: str = ""


@dataclass
class WorkloadStatus:
    """The admission stage's record of one workload (mutable during a run).

    Attributes:
        workload: as submitted. cluster_queue: its ClusterQueue. state: :class:`State`.
        reason: the latest message. submitted_at: when it was submitted, s.
        queued_at: when it was last queued: submission, or the requeue after an eviction, s
            (Kueue's ``QueuedWaitTime``: since creation, or since the ``Requeued``
            condition's last transition; pkg/workload/workload.go).
        evicted_at: when it was last evicted, s (None if never).
        requeue_wait: time from each eviction to the next readmission, summed, s.
        admitted_at: when quota was last reserved, s (None if never).
        usage: quota held now. decision: the latest ADMITTED decision.
        evictions: times it was preempted.
    """

    workload: Workload
    cluster_queue: str
    state: State = State.PENDING
    reason: str = "queued, not tried yet"
    submitted_at: float = 0.0
    queued_at: float | None = None
    evicted_at: float | None = None
    requeue_wait: float = 0.0
    admitted_at: float | None = None
    first_admitted_at: float | None = None
    usage: Usage = field(default_factory=dict)
    decision: Decision | None = None
    evictions: int = 0
    order: tuple = ()
    shape: tuple = ()

    def __post_init__(self) -> None:
        if self.queued_at is None:
            self.queued_at = self.submitted_at
        self.order = queue_order(self.workload)
        self.shape = (self.workload.priority,) + tuple(
            (ps.name, ps.count, ps.min_count, tuple(sorted(ps.requests.items())), tuple(sorted(ps.node_selector.items())),
             ps.tolerations, ps.affinity) for ps in self.workload.pod_sets)


@dataclass
class _Entry:
    status: WorkloadStatus
    cq: ClusterQueue
    assignment: Assignment
    targets: list[Target]

    @property
    def wl(self) -> Workload:
        return self.status.workload


class AdmissionController:
    """Kueue-style admission over ClusterQueues (module docstring).

    Args:
        cluster_queues: the ClusterQueues.
        local_queues: the LocalQueues (namespace/name -> ClusterQueue).
        flavors: the ResourceFlavors.
        cohorts: explicit Cohort objects (optional).
        fair_sharing: Kueue Configuration ``fairSharing`` enabled (admission order by
            dominant resource share; fair-sharing preemption).
        strategies: ``fairSharing.preemptionStrategies``.

    Raises:
        InputError: a LocalQueue naming an unknown ClusterQueue, a ClusterQueue naming an
            unknown ResourceFlavor, duplicates, bad quota (see :class:`~.quota.QuotaTree`),
            an unsupported list of strategies.
    """

    def __init__(self, cluster_queues: Iterable[ClusterQueue], local_queues: Iterable[LocalQueue],
                 flavors: Iterable[ResourceFlavor], cohorts: Iterable[Cohort] = (), *, fair_sharing: bool = False,
                 strategies: Sequence[FairSharingStrategy] = DEFAULT_STRATEGIES) -> None:
        cqs = list(cluster_queues)
        self.cluster_queues: dict[str, ClusterQueue] = {cq.name: cq for cq in cqs}
        self.flavors: dict[str, ResourceFlavor] = {}
        for rf in flavors:
            if rf.name in self.flavors:
                raise InputError(f"ResourceFlavor/{rf.name}: defined twice")
            self.flavors[rf.name] = rf
        self.tree = QuotaTree(cqs, cohorts)
        for cq in cqs:
            for gi, group in enumerate(cq.resource_groups):
                for fi, fq in enumerate(group.flavors):
                    if fq.name not in self.flavors:
                        raise InputError(f"ClusterQueue/{cq.name}: spec.resourceGroups[{gi}].flavors[{fi}].name: "
                                         f"ResourceFlavor {fq.name!r} is not defined")
        self.local_queues: dict[tuple[str, str], LocalQueue] = {}
        for lq in local_queues:
            key = (lq.namespace, lq.name)
            if key in self.local_queues:
                raise InputError(f"LocalQueue/{lq.namespace}/{lq.name}: defined twice")
            if lq.cluster_queue not in self.cluster_queues:
                raise InputError(f"LocalQueue/{lq.namespace}/{lq.name}: spec.clusterQueue: ClusterQueue "
                                 f"{lq.cluster_queue!r} is not defined")
            self.local_queues[key] = lq
        strategies = tuple(FairSharingStrategy(s) for s in strategies)
        allowed = (DEFAULT_STRATEGIES, DEFAULT_STRATEGIES[:1], DEFAULT_STRATEGIES[1:])
        if strategies not in allowed:
            raise InputError("fairSharing.preemptionStrategies: Kueue accepts only [LessThanOrEqualToFinalShare], "
                             "[LessThanInitialShare] or [LessThanOrEqualToFinalShare, LessThanInitialShare], "
                             f"got {[s.value for s in strategies]}")
        self.fair_sharing = fair_sharing
        self.strategies = strategies
        self.workloads: dict[str, WorkloadStatus] = {}
        # Per ClusterQueue, pending workloads in buckets of identical requests ("shape"), each
        # bucket a list of (queue order, name) sorted by queue order: the queue's head is the
        # smallest bucket head, a failed head sets its whole bucket aside (BestEffortFIFO) and
        # a release brings the buckets back, each in O(1) or O(bucket).
        self._active: dict[str, dict[tuple, list[tuple[tuple, str]]]] = {n: {} for n in self.cluster_queues}
        self._aside: dict[str, dict[tuple, list[tuple[tuple, str]]]] = {n: {} for n in self.cluster_queues}
        self._admitted: dict[str, Admitted] = {}
        self._backoff: dict[str, float] = {}   # name -> requeue time (waitForPodsReady backoff)
        self.cycles = 0

    # -- input -------------------------------------------------------------------------------
    def submit(self, workload: Workload, now: float) -> Decision | None:
        """Queue ``workload`` (arrived at ``now``). Returns a REJECTED decision when its
        LocalQueue does not exist, else None (it waits for the next cycle; one that can never
        fit its ClusterQueue stays pending and inadmissible with Kueue's message, as Kueue
        keeps it).

        Raises:
            InputError: a workload of that name was already submitted.
        """
        if workload.name in self.workloads:
            raise InputError(f"workload {workload.name!r}: submitted twice")
        lq = self.local_queues.get((workload.namespace, workload.queue_name))
        if lq is None:
            status = WorkloadStatus(workload, "", State.REJECTED, submitted_at=now)
            status.reason = (f"LocalQueue {workload.queue_name} doesn't exist in namespace {workload.namespace}")
            self.workloads[workload.name] = status
            return Decision(now, workload.name, Outcome.REJECTED, status.reason)
        cq = self.cluster_queues[lq.cluster_queue]
        status = WorkloadStatus(workload, cq.name, submitted_at=now)
        self.workloads[workload.name] = status
        self._enqueue(status)
        return None

    def record_rejected(self, workload: Workload, now: float, reason: str) -> Decision:
        """Record ``workload`` as rejected before it reached admission (the engine found at
        its arrival that no node can ever host one of its pods), so its ClusterQueue counts it
        and the report has its row. Kueue itself never sees the nodes and would keep such a
        workload pending; the simulator rejects it at arrival (the engine's rule for every
        job), and this keeps the admission figures whole.

        Raises:
            InputError: a workload of that name was already submitted.
        """
        if workload.name in self.workloads:
            raise InputError(f"workload {workload.name!r}: submitted twice")
        lq = self.local_queues.get((workload.namespace, workload.queue_name))
        cq = lq.cluster_queue if lq is not None else ""
        status = WorkloadStatus(workload, cq, State.REJECTED, reason, submitted_at=now)
        self.workloads[workload.name] = status
        return Decision(now, workload.name, Outcome.REJECTED, reason, cq)

    def _enqueue(self, status: WorkloadStatus) -> None:
        status.state = State.PENDING
        bucket = self._active[status.cluster_queue].setdefault(status.shape, [])
        bisect.insort(bucket, (status.order, status.workload.name))

    def _head(self, cq: str) -> str | None:
        """Name of the first pending (not set aside) workload of ``cq`` in queue order."""
        best = min((b[0] for b in self._active[cq].values() if b), default=None)
        return None if best is None else best[1]

    def _unqueue(self, status: WorkloadStatus) -> None:
        bucket = self._active[status.cluster_queue][status.shape]
        del bucket[bisect.bisect_left(bucket, (status.order, status.workload.name))]
        if not bucket:
            del self._active[status.cluster_queue][status.shape]

    def _set_aside(self, status: WorkloadStatus) -> None:
        self._unqueue(status)
        bucket = self._aside[status.cluster_queue].setdefault(status.shape, [])
        bisect.insort(bucket, (status.order, status.workload.name))
        status.state = State.INADMISSIBLE

    # -- events from the engine --------------------------------------------------------------------
    def finish(self, name: str, now: float) -> None:
        """``name`` completed: release its quota; workloads set aside in its cohort get
        another chance.

        Raises:
            KeyError / ValueError: unknown workload, or one not admitted.
        """
        status = self.workloads[name]
        if status.state not in (State.ADMITTED, State.EVICTING):
            raise ValueError(f"finish: workload {name!r} is {status.state.value}, not admitted")
        self._release(status)
        status.state = State.FINISHED
        status.reason = f"finished at t={format_seconds(now)}s"

    def reclaim(self, name: str, pod_set: str, pods: int, now: float) -> None:
        """``pods`` pods of admitted workload ``name``'s pod set ``pod_set`` are done for good
        (they succeeded): their quota is released now and workloads set aside in the cohort
        get another chance. Kueue's ``status.reclaimablePods`` (feature ReclaimablePods, Beta,
        on by default since v0.15; ``podSetsCountsAfterReclaim``, ``pkg/workload/workload.go``),
        which the JobSet integration reports for each replicated job whose Jobs succeeded
        (``ReclaimablePods``, ``pkg/controller/jobs/jobset/jobset_controller.go``: succeeded
        Jobs x pods per Job); a changed count requeues the inadmissible workloads
        (``pkg/controller/core/workload_controller.go``, ``Update``).

        Raises:
            KeyError / ValueError: unknown workload or pod set, a workload not admitted, or
                ``pods`` not in 1..(the pod set's admitted count).
        """
        status = self.workloads[name]
        if status.state not in (State.ADMITTED, State.EVICTING) or name not in self._admitted:
            raise ValueError(f"reclaim: workload {name!r} is {status.state.value}, not admitted")
        admitted = self._admitted[name]
        ps = next((p for p in admitted.workload.pod_sets if p.name == pod_set), None)
        if ps is None:
            raise KeyError(f"reclaim: workload {name!r} has no pod set {pod_set!r}")
        if not 1 <= pods <= ps.count:
            raise ValueError(f"reclaim: {name!r} pod set {pod_set!r}: expected 1..{ps.count} pods, got {pods}")
        flavors = status.decision.flavors.get(pod_set, {}) if status.decision is not None else {}
        freed = {(flavors[res], res): per_pod * pods for res, per_pod in ps.requests.items() if res in flavors}
        self.tree.remove_usage(status.cluster_queue, freed)
        status.usage = {fr: v - freed.get(fr, 0) for fr, v in status.usage.items()}
        left = tuple(p if p.name != pod_set else _with_count(p, p.count - pods)
                     for p in admitted.workload.pod_sets if p.name != pod_set or p.count > pods)
        self._admitted[name] = replace(admitted, workload=replace(admitted.workload, pod_sets=left),
                                       usage=dict(status.usage))
        self._requeue_inadmissible(self.tree.node(status.cluster_queue).root())

    def evicted(self, name: str, now: float, requeue: bool = True, *, requeue_at: float | None = None,
                order_time: float | None = None) -> None:
        """An admitted workload's pods are gone (preempted by this stage, or evicted by the
        engine for another reason such as a node drain): release its quota and (by default)
        queue it again in its original place (priority, then creation time).

        ``requeue_at`` (s, waitForPodsReady's backoff, :mod:`.backoff`): the workload is
        inadmissible until then and joins its queue at the first :meth:`schedule` at or after
        it. ``order_time`` (s): queue it by this time instead of its creation time
        (``requeuingStrategy.timestamp: Eviction``).

        Raises:
            ValueError: the workload is not admitted.
        """
        status = self.workloads[name]
        if status.state not in (State.EVICTING, State.ADMITTED):
            raise ValueError(f"evicted: workload {name!r} is {status.state.value}, not admitted")
        if status.state is State.ADMITTED:   # evicted by the engine (a node drain), not preempted here
            status.evictions += 1
        self._release(status)
        status.evicted_at = now
        status.queued_at = now      # Kueue's Requeued condition turns True now (after a backoff, then)
        if order_time is not None:
            status.order = (status.order[0], order_time, True, 0.0) + status.order[4:]
        if requeue and requeue_at is not None and requeue_at > now:
            status.state = State.INADMISSIBLE
            status.reason = f"requeued at t={format_seconds(requeue_at)}s (backoff after PodsReadyTimeout)"
            status.queued_at = requeue_at
            self._backoff[name] = requeue_at
        elif requeue:
            self._enqueue(status)
        else:
            status.state = State.REJECTED

    def _release_backoff(self, now: float) -> None:
        """Queue the workloads whose requeue time (waitForPodsReady backoff) has come."""
        for name, at in sorted(self._backoff.items(), key=lambda kv: (kv[1], kv[0])):
            if at <= now:
                del self._backoff[name]
                self._enqueue(self.workloads[name])

    def _release(self, status: WorkloadStatus) -> None:
        self.tree.remove_usage(status.cluster_queue, status.usage)
        status.usage = {}
        self._admitted.pop(status.workload.name, None)
        self._requeue_inadmissible(self.tree.node(status.cluster_queue).root())

    def _requeue_inadmissible(self, root: Node) -> None:
        for cq_node in root.subtree_cluster_queues():
            active, aside = self._active[cq_node.name], self._aside[cq_node.name]
            for shape, items in aside.items():
                for _, name in items:
                    self.workloads[name].state = State.PENDING
                merged = active.get(shape, []) + items
                merged.sort()
                active[shape] = merged
            aside.clear()

    # -- cycles ------------------------------------------------------------------------------
    def schedule(self, now: float, max_cycles: int | None = None) -> list[Decision]:
        """Run admission cycles at ``now`` until one changes nothing (no admission, no new
        eviction, nothing set aside). Returns every decision, in order."""
        out: list[Decision] = []
        if self._backoff:
            self._release_backoff(now)
        limit = max_cycles if max_cycles is not None else 2 * len(self.workloads) + 2
        for _ in range(limit):
            decisions, changed = self._cycle(now)
            out.extend(decisions)
            if not changed:
                break
        return out

    def settle(self, now: float) -> list[Decision]:
        """:meth:`schedule`, treating every eviction as instantaneous (the victim's pods are
        gone at once), until nothing changes. For tests and for engines without graceful
        termination."""
        out: list[Decision] = []
        for _ in range(2 * len(self.workloads) + 2):
            decisions = self.schedule(now)
            out.extend(decisions)
            evicted = [d.workload for d in decisions if d.outcome is Outcome.EVICTED]
            if not evicted:
                break
            for name in evicted:
                self.evicted(name, now)
        return out

    def cycle(self, now: float) -> list[Decision]:
        """One admission cycle (module docstring) at ``now``."""
        return self._cycle(now)[0]

    def _heads(self) -> list[WorkloadStatus]:
        heads = (self._head(cq) for cq in sorted(self._active))
        return [self.workloads[name] for name in heads if name is not None]

    def _cycle(self, now: float) -> tuple[list[Decision], bool]:
        self.cycles += 1
        preemptor = Preemptor(self.tree, self.cluster_queues, self._admitted, self.fair_sharing, self.strategies)
        entries = [self._nominate(st, preemptor) for st in self._heads()]
        decisions: list[Decision] = []
        changed = False
        reserved: list[tuple[str, Usage]] = []   # quota taken this cycle by heads that preempt
        preempted: set[str] = set()
        for entry in self._iterate(entries):
            st, cq = entry.status, entry.cq
            mode = entry.assignment.mode
            message = entry.assignment.message()
            if mode is Mode.NO_FIT or (mode is Mode.PREEMPT and not entry.targets):
                st.reason = message
                decisions.append(Decision(now, st.workload.name, Outcome.PENDING, message, cq.name))
                if mode is Mode.PREEMPT and cq.preemption.reclaim_within_cohort is not PreemptionPolicy.ANY:
                    keep = self._capacity_to_reserve(cq, entry.assignment)
                    self.tree.add_usage(cq.name, keep)
                    reserved.append((cq.name, keep))
                if cq.queueing_strategy is QueueingStrategy.BEST_EFFORT_FIFO:
                    self._set_aside(st)
                    self._set_aside_alike(st, message)
                    changed = True
                continue
            names = {t.admitted.name for t in entry.targets}
            if names & preempted:
                reason = "Workload has overlapping preemption targets with another workload"
                st.reason = reason
                decisions.append(Decision(now, st.workload.name, Outcome.PENDING, reason, cq.name))
                continue
            usage = entry.assignment.usage
            if not self._fits_after(cq.name, usage, preempted | names):
                reason = "Workload no longer fits after processing another workload"
                st.reason = reason
                decisions.append(Decision(now, st.workload.name, Outcome.PENDING, reason, cq.name))
                continue
            if mode is Mode.PREEMPT:
                preempted |= names
                self.tree.add_usage(cq.name, usage)
                reserved.append((cq.name, usage))
                new = [t for t in entry.targets if not t.admitted.evicting]
                for t in new:
                    victim = self.workloads[t.admitted.name]
                    victim.state = State.EVICTING
                    victim.evictions += 1
                    victim.reason = t.message(st.workload.name)
                    self._admitted[victim.workload.name] = replace(self._admitted[victim.workload.name], evicting=True)
                    decisions.append(Decision(now, victim.workload.name, Outcome.EVICTED, victim.reason,
                                              victim.cluster_queue, preemptor=st.workload.name))
                changed = changed or bool(new)
                reason = f"{message}. Pending the preemption of {len(entry.targets)} workload(s)"
                st.reason = reason
                decisions.append(Decision(now, st.workload.name, Outcome.PREEMPTING, reason, cq.name,
                                          victims=tuple(sorted(names))))
                continue
            decisions.append(self._admit(entry, now))
            changed = True
        for cq_name, usage in reserved:
            self.tree.remove_usage(cq_name, usage)
        return decisions, changed

    def _capacity_to_reserve(self, cq: ClusterQueue, assignment: Assignment) -> Usage:
        """Quota kept for the rest of the cycle by a head that needs preemption but has no
        candidates (``quotaResourcesToReserve``, ``pkg/scheduler/scheduler.go``): per
        ``(flavor, resource)`` of its assignment, when it borrows, its request capped at
        nominal + borrowingLimit - the queue's usage (no cap without a borrowingLimit); when
        it does not, its request capped at nominal - usage, and at least 0."""
        quotas = cq.quotas()
        used = self.tree.node(cq.name).usage
        keep: Usage = {}
        for fr, amount in assignment.usage.items():
            q = quotas.get(fr)
            if q is None:
                continue
            if assignment.borrow > 0:
                keep[fr] = amount if q.borrowing_limit is None else min(
                    amount, q.nominal + q.borrowing_limit - used.get(fr, 0))
            else:
                keep[fr] = max(0, min(amount, q.nominal - used.get(fr, 0)))
        return keep

    def _set_aside_alike(self, failed: WorkloadStatus, message: str) -> None:
        """Set aside, with ``failed``, every pending workload of its ClusterQueue that asks the
        same (pod sets, priority). Kueue would try them one per cycle and each would fail the
        same way: within an instant quota only grows through a release, and a release puts
        every set-aside workload back. (Not for LowerOrNewerEqualPriority, where preemption
        also depends on creation time.) This keeps a long queue of identical jobs from costing
        one cycle per job at every instant."""
        cq = self.cluster_queues[failed.cluster_queue]
        if cq.preemption.within_cluster_queue is PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY:
            return
        items = self._active[cq.name].pop(failed.shape, [])
        for _, name in items:
            st = self.workloads[name]
            st.state = State.INADMISSIBLE
            st.reason = message
        if items:
            aside = self._aside[cq.name].get(failed.shape, [])
            aside.extend(items)
            aside.sort()
            self._aside[cq.name][failed.shape] = aside

    def _fits_after(self, cq: str, usage: Usage, removed: set[str]) -> bool:
        saved = self.tree.snapshot_usage()
        for name in removed:
            adm = self._admitted.get(name)
            if adm is not None:
                self.tree.remove_usage(adm.cluster_queue, adm.usage)
        ok = self.tree.fits(cq, usage)
        self.tree.restore_usage(saved)
        return ok

    def _nominate(self, status: WorkloadStatus, preemptor: Preemptor) -> _Entry:
        cq = self.cluster_queues[status.cluster_queue]
        wl = status.workload

        def oracle(fr, qty):
            return preemptor.simulate(wl, cq, fr, qty)

        assigner = FlavorAssigner(wl, cq, self.tree, self.flavors, oracle, self.fair_sharing)
        full = assigner.assign()
        if full.mode is Mode.FIT:
            return _Entry(status, cq, full, [])
        if full.mode is Mode.PREEMPT:
            targets = preemptor.targets(wl, cq, full.usage, full.frs_needing_preemption())
            if targets:
                return _Entry(status, cq, full, targets)
        if wl.can_be_partially_admitted:
            found: dict[str, tuple[Assignment, list[Target]]] = {}

            def fits(counts: dict[str, int]) -> bool:
                a = assigner.assign(counts)
                if a.mode is Mode.FIT:
                    found[_key(counts)] = (a, [])
                    return True
                if a.mode is Mode.PREEMPT:
                    t = preemptor.targets(wl, cq, a.usage, a.frs_needing_preemption())
                    if t:
                        found[_key(counts)] = (a, t)
                        return True
                return False

            counts = search_partial(wl, fits)
            if counts is not None:
                a, t = found[_key(counts)]
                return _Entry(status, cq, a, t)
        return _Entry(status, cq, full, [])

    def _iterate(self, entries: list[_Entry]):
        if not self.fair_sharing:
            yield from sorted(entries, key=lambda e: classical_entry_order(e.assignment.borrow, e.wl))
            return
        remaining = {e.cq.name: e for e in entries}
        while remaining:
            first = remaining[min(remaining)]
            node = self.tree.node(first.cq.name)
            if node.parent is None:
                del remaining[first.cq.name]
                yield first
                continue
            keys = self._tournament_keys(node.root(), remaining)
            winner = _tournament(node.root(), remaining, keys)
            del remaining[winner.cq.name]
            yield winner

    def _tournament_keys(self, root: Node, remaining: Mapping[str, _Entry]) -> dict[tuple[str, str], tuple]:
        keys: dict[tuple[str, str], tuple] = {}
        for cq_node in root.subtree_cluster_queues():
            entry = remaining.get(cq_node.name)
            if entry is None:
                continue
            self.tree.add_usage(cq_node.name, entry.assignment.usage)
            share = dominant_resource_share(cq_node)
            for ancestor in cq_node.path_to_root()[1:]:
                keys[(ancestor.name, entry.wl.name)] = fair_sharing_entry_order(_drs_key(share), entry.wl)
                share = dominant_resource_share(ancestor)
            self.tree.remove_usage(cq_node.name, entry.assignment.usage)
        return keys

    def _admit(self, entry: _Entry, now: float) -> Decision:
        st, cq, a = entry.status, entry.cq, entry.assignment
        self.tree.add_usage(cq.name, a.usage)
        st.usage = dict(a.usage)
        st.state = State.ADMITTED
        st.admitted_at = now
        if st.first_admitted_at is None:
            st.first_admitted_at = now
        else:
            st.requeue_wait += now - st.evicted_at    # from the eviction, a backoff included
        self._unqueue(st)
        counts = a.counts()
        admitted_wl = st.workload
        if any(ps.count != counts[ps.name] for ps in st.workload.pod_sets):
            admitted_wl = replace(st.workload, pod_sets=tuple(_with_count(ps, counts[ps.name]) for ps in st.workload.pod_sets))
        self._admitted[st.workload.name] = Admitted(admitted_wl, cq.name, dict(a.usage), now)
        wait = now - st.queued_at    # Kueue's QueuedWaitTime: since creation or the last requeue
        reason = f"Quota reserved in ClusterQueue {cq.name}, wait time since queued was {format_seconds(wait)}s"
        flavors = {ps.name: dict(ps.flavors) for ps in a.pod_sets}
        decision = Decision(now, st.workload.name, Outcome.ADMITTED, reason, cq.name, flavors, counts, a.borrow > 0)
        st.reason = reason
        st.decision = decision
        return decision

    # -- views -------------------------------------------------------------------------------
    def pending_reason(self, name: str) -> str:
        """Why ``name`` is still pending: its last message, or, for a workload never tried
        because a StrictFIFO head blocks its queue, that head."""
        st = self.workloads[name]
        if st.state in (State.PENDING, State.INADMISSIBLE) and st.reason == "queued, not tried yet":
            cq = self.cluster_queues[st.cluster_queue]
            head = self._head(cq.name)
            if cq.queueing_strategy is QueueingStrategy.STRICT_FIFO and head is not None and head != name:
                return (f"waiting behind {head}, the head of StrictFIFO ClusterQueue {cq.name} "
                        f"({self.workloads[head].reason})")
        return st.reason

    def admitted(self) -> list[str]:
        """Names of admitted workloads (including those being evicted), by admission time."""
        return sorted(self._admitted, key=lambda n: (self._admitted[n].admitted_at, n))

    def usage(self, cluster_queue: str) -> Usage:
        """Quota in use by ``cluster_queue`` per ``(flavor, resource)`` (zeros left out)."""
        return {fr: v for fr, v in self.tree.node(cluster_queue).usage.items() if v}

    def share(self, cluster_queue: str) -> float:
        """The weighted dominant resource share of ``cluster_queue`` now."""
        return dominant_resource_share(self.tree.node(cluster_queue)).value


def _key(counts: Mapping[str, int]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(counts.items()))


def _with_count(ps: PodSet, count: int) -> PodSet:
    return replace(ps, count=count, min_count=min(ps.min_count, count) if ps.min_count is not None else None)


def _tournament(cohort: Node, remaining: Mapping[str, _Entry], keys: Mapping[tuple[str, str], tuple]) -> _Entry | None:
    """Kueue's ``runTournament``: each cohort nominates the child entry with the lowest key."""
    candidates: list[_Entry] = []
    for child in cohort.children:
        if child.is_cluster_queue:
            if child.name in remaining:
                candidates.append(remaining[child.name])
        else:
            winner = _tournament(child, remaining, keys)
            if winner is not None:
                candidates.append(winner)
    if not candidates:
        return None
    return min(candidates, key=lambda e: keys[(cohort.name, e.wl.name)])


__all__ = ["AdmissionController", "Decision", "Outcome", "State", "WorkloadStatus"]
