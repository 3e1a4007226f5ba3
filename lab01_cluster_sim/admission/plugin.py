"""The admission stage as a plugin of the one engine (engine-design.md, section 5).

:class:`KueueAdmissionPlugin` adapts :class:`~.controller.AdmissionController` to the engine's
Admission extension point. The engine calls, per scheduling cycle and before the placement
pass, ``admission_cycle(ctx)`` with an ``AdmissionContext``:

- ``ctx.now``; ``ctx.waiting``: job records not admitted, in arrival order;
- ``ctx.admit(record)``: the workload enters placement's queue;
- ``ctx.hold(record, reason)``: it stays waiting, with Kueue's message as its reason;
- ``ctx.evict(record, reason)``: preempt an admitted workload (running or queued for placement);
- ``ctx.reject(record, reason)`` (optional): reject a workload that can never be admitted;
  without it the workload is held with the reason, as Kueue itself keeps it pending.

and the observer hooks ``on_finish(record)`` / ``on_evict(record, lost_work)`` /
``on_reject(record)``, through which the plugin releases quota. It also defines ``filter``:
an admitted pod may only go to nodes carrying its flavor's ``nodeLabels`` (Kueue injects
them into the pods' nodeSelector at admission), the only place where a flavor meets nodes;
the controller itself never looks at nodes. The flavors' ``tolerations`` are added to the
admitted job's tolerations (Kueue injects them into the pod template too), which
kube-scheduler's TaintToleration then reads.

A job becomes a Kueue workload with :func:`workload_of`: one pod set ``main`` of
``job.workers`` pods (requests per pod: ``cpu`` milli-cores, ``memory`` bytes from MiB,
``nvidia.com/gpu`` devices, plus any other extended resource in
``job.extras["extended_requests"]``, e.g. a MIG profile ``nvidia.com/mig-3g.40gb``). The roles
of a multi-role gang (:class:`~lab01_cluster_sim.model.GangRole`) become one workload with
one pod set per role (:func:`gang_workload`), admitted, held and evicted together, each pod
set with its own flavors (the ``filter`` and the injected tolerations are per pod set); its
quota is released when its last role completes. LocalQueue, namespace,
minCount, nodeSelector, tolerations, required node affinity, creation timestamp and input
position come from ``job.extras`` (keys :data:`QUEUE_KEY`, ``namespace``, ``min_count``,
``node_selector``, ``tolerations``, ``affinity``, ``creation_timestamp``, ``position``), as the
scenario reader fills them from a Job's ``kueue.x-k8s.io/queue-name`` label,
``kueue.x-k8s.io/job-min-parallelism`` annotation, pod template and metadata.

With ``wait_for_pods_ready`` (:class:`~.backoff.WaitForPodsReady`, Kueue's
``waitForPodsReady``) an admitted workload whose pods are not all running (start delay
over) ``timeout`` seconds after its admission is evicted (``PodsReadyTimeout``) and
requeued no earlier than the backoff delay (``requeuingStrategy``); after
``backoffLimitCount`` requeues it is deactivated (ends REJECTED). The check runs at the
admission cycle of the deadline's instant, before that instant's placement pass.

The plugin also records, per ClusterQueue, the GPUs of its admitted workloads (the quota
reserved, ``nvidia.com/gpu`` summed over flavors) whenever that changes:
:meth:`KueueAdmissionPlugin.gpu_quota_timeline` gives it as :class:`QuotaSeries`, beside
the nominal quota, so a figure can show borrowing (usage above nominal) and reclaim.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np

from lab01_cluster_sim.admission.api import PodSet, Workload
from lab01_cluster_sim.admission.backoff import WaitForPodsReady
from lab01_cluster_sim.admission.controller import AdmissionController, Decision, Outcome, State
from lab01_cluster_sim.admission.quantity import CPU, GPU, MEMORY
from lab01_cluster_sim.model import Job, JobRecord, JobState, format_seconds

@dataclass(frozen=True)
class QuotaSeries:
    """GPU quota of one ClusterQueue over a run, a step function (value from each time on).

    Attributes:
        cluster_queue: the ClusterQueue's name.
        cohort: its ``cohortName`` (None: it cannot borrow).
        time: float (T,), seconds, increasing: 0, every change, and the run's end.
        gpus: int (T,), ``nvidia.com/gpu`` reserved by its admitted workloads (summed over
            flavors) from ``time[i]`` until ``time[i + 1]``.
        nominal: its ``nominalQuota`` of ``nvidia.com/gpu``, summed over flavors.
        borrowing_limit: its ``borrowingLimit`` of ``nvidia.com/gpu`` summed over flavors,
            or None when some flavor has none (may borrow any unused quota of the cohort).
    """

    cluster_queue: str
    cohort: str | None
    time: np.ndarray
    gpus: np.ndarray
    nominal: int
    borrowing_limit: int | None

    def borrowed(self) -> np.ndarray:
        """int (T,): GPUs above the nominal quota (borrowed from the cohort) at each step."""
        return np.maximum(self.gpus - self.nominal, 0)


QUEUE_KEY = "kueue.x-k8s.io/queue-name"
"""``Job.extras`` key (and Job/Pod label) naming the LocalQueue."""
MIB = 2**20


def _pod_set(job: Job, name: str) -> PodSet:
    """The pod set of ``job``'s workers, named ``name`` (module docstring)."""
    extras: Mapping[str, Any] = job.extras
    requests = {CPU: job.cpu_milli, MEMORY: job.memory_mib * MIB}
    if job.gpus_per_worker:
        requests[GPU] = job.gpus_per_worker
    requests.update(extras.get("extended_requests", {}))
    return PodSet(name, job.workers, {r: v for r, v in requests.items() if v}, extras.get("min_count"),
                  dict(extras.get("node_selector", {})), tuple(extras.get("tolerations", ())),
                  tuple(extras.get("affinity", ())))


def workload_of(job: Job, default_queue: str = "") -> Workload:
    """The Kueue workload of ``job``, a job that is not a role of a multi-role gang: one pod
    set ``main`` (module docstring)."""
    extras: Mapping[str, Any] = job.extras
    return Workload(job.job_id, extras.get(QUEUE_KEY, default_queue), (_pod_set(job, "main"),),
                    extras.get("namespace", "default"), job.priority, job.submit_time,
                    extras.get("creation_timestamp"), int(extras.get("position", 0)))


def gang_workload(roles: Sequence[Job], default_queue: str = "") -> Workload:
    """The one Kueue workload of a multi-role gang: ``roles`` are its jobs in role order
    (:class:`~lab01_cluster_sim.model.GangRole`); the workload is named after the gang and
    has one pod set per role, named after the role, as Kueue's JobSet integration builds it
    (kubernetes-sigs/kueue ``pkg/controller/jobs/jobset/jobset_controller.go``, ``PodSets``:
    one pod set per replicated job, count replicas x parallelism). Queue, namespace, creation
    time and position are the first role's (the reader copies the JobSet's to every role);
    the priority is the first role's too (Kueue takes the first pod set's
    ``priorityClassName``, ``pkg/util/priority``, unless a WorkloadPriorityClass is named).

    Raises:
        ValueError: ``roles`` is not one whole gang in role order.
    """
    first = roles[0]
    if first.role is None or [j.role.index if j.role else -1 for j in roles] != list(range(first.role.roles)) \
            or any(j.role.gang != first.role.gang for j in roles):
        raise ValueError(f"gang_workload: expected every role of one gang in role order, got "
                         f"{', '.join(j.job_id for j in roles)}")
    extras: Mapping[str, Any] = first.extras
    return Workload(first.role.gang, extras.get(QUEUE_KEY, default_queue),
                    tuple(_pod_set(j, j.role.name) for j in roles), extras.get("namespace", "default"),
                    first.priority, first.submit_time, extras.get("creation_timestamp"),
                    int(extras.get("position", 0)))


def _workload_name(record: JobRecord) -> str:
    role = record.job.role
    return record.job_id if role is None else role.gang


def _pod_set_name(record: JobRecord) -> str:
    role = record.job.role
    return "main" if role is None else role.name


class AdmissionContext(Protocol):
    """What the engine hands to ``admission_cycle`` (engine-design.md section 5)."""

    now: float
    waiting: Iterable[JobRecord]

    def admit(self, record: JobRecord) -> None: ...
    def hold(self, record: JobRecord, reason: str) -> None: ...
    def evict(self, record: JobRecord, reason: str) -> None: ...
    def retry_at(self, t: float) -> None: ...
    def is_admitted(self, record: JobRecord) -> bool: ...


class KueueAdmissionPlugin:
    """Kueue-style admission at the engine's Admission point (module docstring).

    Args:
        controller: the admission controller (ClusterQueues, LocalQueues, flavors).
        default_queue: LocalQueue of jobs that name none.

    Attributes:
        decisions: every :class:`~.controller.Decision`, in order (for reports).
    """

    name = "kueue"

    def __init__(self, controller: AdmissionController, default_queue: str = "",
                 wait_for_pods_ready: WaitForPodsReady | None = None) -> None:
        self.controller = controller
        self.default_queue = default_queue
        self.wait_for_pods_ready = wait_for_pods_ready
        self._ready_deadline: dict[str, float] = {}     # admitted, not ready yet: name -> deadline
        self._requeues: dict[str, int] = {}             # requeueState.count per workload
        self._timed_out: dict[str, float | None] = {}   # evicting for PodsReadyTimeout: requeue time
        self.decisions: list = []
        self._last: dict[str, tuple] = {}
        self._records: dict[str, list[JobRecord]] = {}   # workload name -> its records (a gang's roles)
        self._flavor_masks: dict[str, np.ndarray] = {}
        self._all_nodes: np.ndarray | None = None
        self._sim = None
        self._gpu_usage: list[tuple[float, tuple[int, ...]]] = []   # (time, GPUs per ClusterQueue)

    # -- lifecycle ------------------------------------------------------------------------
    def attach(self, sim) -> None:
        """Remember the simulation (for ``now`` in observer hooks) and precompute, per flavor,
        the mask of nodes carrying all its ``nodeLabels``."""
        self._sim = sim
        nodes = sim.state.nodes
        self._all_nodes = np.ones(len(nodes), dtype=bool)
        for name, rf in self.controller.flavors.items():
            self._flavor_masks[name] = np.array(
                [all(node.labels.get(k) == v for k, v in rf.node_labels.items()) for node in nodes], dtype=bool)

    def _now(self) -> float:
        return float(self._sim.engine.now) if self._sim is not None else 0.0

    # -- admission point --------------------------------------------------------------------
    def admission_cycle(self, ctx: AdmissionContext) -> None:
        """Submit new waiting jobs, run admission cycles until nothing changes, and tell the
        engine what was decided."""
        now = float(ctx.now)
        if self._ready_deadline:
            self._check_pods_ready(ctx, now)
        waiting = list(ctx.waiting)
        gangs: dict[str, list[JobRecord]] = {}
        for record in waiting:
            if record.job.role is not None:
                gangs.setdefault(record.job.role.gang, []).append(record)
        for record in waiting:
            name = _workload_name(record)
            if name in self._records:
                continue
            if record.job.role is None:
                members = [record]
                workload = workload_of(record.job, self.default_queue)
            else:
                members = sorted(gangs[name], key=lambda r: r.job.role.index)
                if len(members) < record.job.role.roles:
                    continue     # the roles arrive together; never split
                workload = gang_workload([r.job for r in members], self.default_queue)
            self._records[name] = members
            decision = self.controller.submit(workload, now)
            if decision is not None:
                self._record([decision])
                reject = getattr(ctx, "reject", None)
                for member in members:
                    if reject is not None:
                        reject(member, decision.reason)
                    else:
                        ctx.hold(member, decision.reason)
        decisions = self.controller.schedule(now)
        self._record(decisions)
        for d in decisions:
            members = self._records[d.workload]
            if d.outcome is Outcome.ADMITTED:
                for record in members:
                    job = record.job
                    pod_set = _pod_set_name(record)
                    if d.counts.get(pod_set, job.workers) != job.workers:
                        # partial admission: the Job runs with the admitted count (Kueue sets its
                        # parallelism); the full count is kept for a later readmission
                        job = replace(job, workers=d.counts[pod_set])
                    # Kueue adds each pod set's flavors' tolerations to that pod set's template
                    injected = tuple(t for name in sorted(set(d.flavors.get(pod_set, {}).values()))
                                     for t in self.controller.flavors[name].tolerations)
                    if injected:
                        job = replace(job, extras={**job.extras,
                                                   "tolerations": tuple(job.extras.get("tolerations", ())) + injected})
                    record.job = job
                    ctx.admit(record)
                if self.wait_for_pods_ready is not None:
                    deadline = now + self.wait_for_pods_ready.timeout_seconds
                    self._ready_deadline[d.workload] = deadline
                    ctx.retry_at(deadline)
            elif d.outcome is Outcome.EVICTED:
                self._evict_members(ctx, members, d.reason)
            elif d.outcome in (Outcome.PENDING, Outcome.PREEMPTING):
                for record in members:
                    ctx.hold(record, d.reason)
        if any(d.outcome is Outcome.ADMITTED for d in decisions):
            self._sample_usage(now)

    @staticmethod
    def _evict_members(ctx: AdmissionContext, members: list[JobRecord], reason: str) -> None:
        """Evict the workload of ``members``: each record still admitted (running or queued for
        placement). Evicting one running role evicts the gang's other running roles too
        (the engine's rule), so each is looked at when its turn comes."""
        for record in members:
            if record.state is JobState.RUNNING or ctx.is_admitted(record):
                ctx.evict(record, reason)

    def _check_pods_ready(self, ctx: AdmissionContext, now: float) -> None:
        """waitForPodsReady: evict (and requeue after the backoff, or deactivate) every
        admitted workload not ready by its deadline (module docstring)."""
        wfpr = self.wait_for_pods_ready
        for name, deadline in sorted(self._ready_deadline.items(), key=lambda kv: (kv[1], kv[0])):
            members = self._records[name]
            if all(r.state is JobState.RUNNING and r.busy_from is not None and r.busy_from <= now for r in members):
                del self._ready_deadline[name]      # PodsReady=True: nothing more to watch
                continue
            if now < deadline:
                continue
            count = self._requeues.get(name, 0) + 1
            self._requeues[name] = count
            delay = wfpr.requeuing.delay(count)
            requeue_at = None if delay is None else now + delay
            self._timed_out[name] = requeue_at
            cq = self.controller.workloads[name].cluster_queue
            reason = (f"PodsReadyTimeout: pods not all ready {format_seconds(wfpr.timeout_seconds)} s after "
                      "admission; " + (f"requeued at t={format_seconds(requeue_at)}s (backoff "
                                       f"{format_seconds(delay)} s, requeue {count})" if requeue_at is not None else
                                       f"deactivated (backoffLimitCount {wfpr.requeuing.backoff_limit_count} reached)"))
            self._record([Decision(now, name, Outcome.EVICTED, reason, cq)])
            self._evict_members(ctx, members, reason)
            if requeue_at is None:
                for record in members:
                    if record.state is JobState.PENDING:   # a bare Pod's eviction already ended it
                        ctx.reject(record, reason)
                self._record([Decision(now, name, Outcome.REJECTED, reason, cq)])
            else:
                ctx.retry_at(requeue_at)

    def _record(self, decisions: Iterable) -> None:
        # the report keeps a decision unless it repeats the workload's previous one (same
        # instant, outcome and message): Kueue updates a condition once, not per retry
        for d in decisions:
            key = (d.time, d.outcome, d.reason)
            if self._last.get(d.workload) != key:
                self._last[d.workload] = key
                self.decisions.append(d)

    def _sample_usage(self, now: float) -> None:
        """Record the GPUs reserved per ClusterQueue at ``now`` if they changed (several
        changes at one instant keep the last)."""
        used = tuple(sum(v for (_, res), v in self.controller.usage(cq).items() if res == GPU)
                     for cq in sorted(self.controller.cluster_queues))
        hist = self._gpu_usage
        if hist and hist[-1][0] == now:
            hist.pop()
        if (hist[-1][1] if hist else None) != used:
            hist.append((now, used))

    def gpu_quota_timeline(self, end: float | None = None) -> list[QuotaSeries]:
        """Per ClusterQueue (sorted by name), its admitted GPUs over the run and its quota
        (:class:`QuotaSeries`); the series start at t = 0 with 0 GPUs and run to ``end``
        (default: the last change)."""
        hist = list(self._gpu_usage)
        names = sorted(self.controller.cluster_queues)
        if not hist or hist[0][0] > 0:
            hist.insert(0, (0.0, (0,) * len(names)))
        if end is not None and end > hist[-1][0]:
            hist.append((float(end), hist[-1][1]))
        out = []
        for i, name in enumerate(names):
            # this queue's changes only (the first step, and the end, kept)
            steps = [(t, u[i]) for k, (t, u) in enumerate(hist)
                     if k in (0, len(hist) - 1) or u[i] != hist[k - 1][1][i]]
            cq = self.controller.cluster_queues[name]
            quotas = [q for (_, res), q in cq.quotas().items() if res == GPU]
            limits = [q.borrowing_limit for q in quotas]
            out.append(QuotaSeries(name, cq.cohort, np.array([t for t, _ in steps], dtype=float),
                                   np.array([g for _, g in steps], dtype=np.int64), sum(q.nominal for q in quotas),
                                   None if any(b is None for b in limits) else sum(limits)))
        return out

    # -- placement filter ----------------------------------------------------------------------
    def filter(self, request, record: JobRecord) -> np.ndarray:
        """bool (N,): the nodes that carry the ``nodeLabels`` of every flavor the record's pod
        set was admitted to (every node for a record the stage did not admit)."""
        status = self.controller.workloads.get(_workload_name(record))
        mask = self._all_nodes
        if status is None or status.decision is None:
            return mask
        for flavor in set(status.decision.flavors.get(_pod_set_name(record), {}).values()):
            m = self._flavor_masks.get(flavor)
            if m is not None:
                mask = m if mask is None else mask & m
        return mask

    # -- reports ------------------------------------------------------------------------------
    def queue_summary(self) -> list[dict]:
        """One row per ClusterQueue: workloads submitted, admitted (ever), finished, still
        pending, rejected, evictions, the mean and largest admission wait (first quota
        reservation minus submission, s) of those admitted, and their mean time queued for
        admission in all (that first wait plus every wait after an eviction until quota was
        reserved again, s)."""
        return queue_summary(self.controller)

    # -- observer hooks: quota is released here ------------------------------------------------
    def on_finish(self, record: JobRecord) -> None:
        """A job completed: its workload finishes and its quota is released. A role of a
        gang that completes before the others gives back its pod set's quota at once (Kueue's
        reclaimablePods, which the JobSet integration reports for succeeded replicated jobs:
        :meth:`~.controller.AdmissionController.reclaim`); the workload finishes with its
        last role."""
        name = _workload_name(record)
        status = self.controller.workloads.get(name)
        if record.job.role is not None and any(r.state is not JobState.COMPLETED
                                                for r in self._records.get(name, ())):
            if status is not None and status.state is State.ADMITTED:
                self.controller.reclaim(name, record.job.role.name, record.job.workers, self._now())
                self._sample_usage(self._now())
                if self._sim is not None and hasattr(self._sim, "request_pass"):
                    self._sim.request_pass()
            return
        self._ready_deadline.pop(name, None)
        if name in self.controller.workloads:
            self.controller.finish(name, self._now())
            self._sample_usage(self._now())

    def on_reject(self, record: JobRecord) -> None:
        """An admitted job that ends without completing (evicted and not requeued: its Job
        failed past its backoffLimit) finishes its workload, releasing its quota, as Kueue
        finishes the Workload of a failed Job. A job the engine rejected before it reached
        admission (no node can ever host one of its pods) is recorded as a REJECTED decision in its ClusterQueue, so admission.csv
        has its row and the ClusterQueue counts it. Deviation: Kueue never looks at nodes and
        would keep the workload pending ("couldn't assign flavors ..." only when quota is
        short); the simulator's engine rejects any job no node can host, Kueue or not."""
        name = _workload_name(record)
        status = self.controller.workloads.get(name)
        if status is not None and status.state is State.EVICTING:
            return      # this stage's eviction of a bare Pod: its quota comes back with its pods
        if status is not None and status.state is State.ADMITTED:
            # evicted and not requeued (its Job failed): the Workload is finished, quota released
            self._ready_deadline.pop(name, None)
            self.controller.finish(name, self._now())
            self._sample_usage(self._now())
            return
        if status is not None:
            return      # rejected by admission itself: already recorded
        reason = (f"rejected before admission: {record.reason} (Kueue itself would keep it pending; the "
                  "simulator rejects a job no node can ever host)")
        if record.job.role is None:
            workload = workload_of(record.job, self.default_queue)
        else:   # the engine rejects every role of a gang at once, at arrival
            roles = sorted((r.job for r in self._sim.records.values() if r.job.role is not None
                            and r.job.role.gang == name), key=lambda j: j.role.index)
            workload = gang_workload(roles, self.default_queue)
        self._record([self.controller.record_rejected(workload, self._now(), reason)])

    def on_evict(self, record: JobRecord, lost_work: float = 0.0) -> None:
        """A workload this stage preempted is stopped: release its quota and queue it again, at
        once, or, when its pods have a ``terminationGracePeriodSeconds``, once that period is
        over (its preemptor stays Preempting until then). An eviction the stage did not ask
        for (a node drain, kube-scheduler's preemption, Karpenter's consolidation) leaves the
        workload admitted with its quota: the Job controller recreates the evicted pods and
        the engine requeues them for placement (Kueue evicts a Workload only by its own
        decision, ``pkg/controller/jobframework/reconciler.go``; pods that fail or are
        deleted do not release its quota)."""
        name = _workload_name(record)
        status = self.controller.workloads.get(name)
        if status is None or status.state not in (State.ADMITTED, State.EVICTING):
            return
        if status.state is State.ADMITTED and name not in self._timed_out:
            return      # not Kueue's eviction (a drain, a preemption): the workload keeps its quota
        self._ready_deadline.pop(name, None)
        if status.state is State.EVICTING and self._pods_left(name, record):
            # Kueue releases the quota once the Job's pods are gone (the Job is stopped and
            # its Workload's QuotaReserved cleared when no pod is active): a gang's when the
            # pods of all its roles are, each after its own grace period or its natural end,
            # when the engine frees their GPUs too (on_terminated); the preemptor waits.
            return
        self._release_evicted(record)

    def _pods_left(self, name: str, evicted: JobRecord | None = None) -> bool:
        """Has workload ``name`` a pod still running (a role the engine evicts next; not
        ``evicted``, being evicted now) or terminating (keeping its resources through its
        grace period)?"""
        terminating = getattr(getattr(self._sim, "scheduler", None), "terminating", {})
        return any((r.state is JobState.RUNNING and r is not evicted) or r.job_id in terminating
                   for r in self._records.get(name, []))

    def on_terminated(self, record: JobRecord) -> None:
        """Terminating pods of ``record`` are gone: a workload this stage evicted gets its
        quota back once none of its pods is left."""
        name = _workload_name(record)
        status = self.controller.workloads.get(name)
        if status is not None and status.state is State.EVICTING and not self._pods_left(name):
            self._release_evicted(record)

    def _release_evicted(self, record: JobRecord) -> None:
        name = _workload_name(record)
        bare = record.job.extras.get("kind") == "Pod"
        if name in self._timed_out:       # our own PodsReadyTimeout eviction
            requeue_at = self._timed_out.pop(name)
            now = self._now()
            by_eviction = self.wait_for_pods_ready.timestamp == "Eviction"
            self.controller.evicted(name, now, requeue_at is not None and not bare, requeue_at=requeue_at,
                                    order_time=now if by_eviction else None)
        else:   # a bare Pod is not requeued: Kueue's plain-Pod integration deleted it (Stop)
            self.controller.evicted(name, self._now(), requeue=not bare)
        self._sample_usage(self._now())
        if self._sim is not None and hasattr(self._sim, "request_pass"):
            self._sim.request_pass()


def queue_summary(controller: AdmissionController) -> list[dict]:
    """Per-ClusterQueue admission figures (see :meth:`KueueAdmissionPlugin.queue_summary`)."""
    rows = []
    for name in sorted(controller.cluster_queues):
        sts = [s for s in controller.workloads.values() if s.cluster_queue == name]
        waits = [s.first_admitted_at - s.submitted_at for s in sts if s.first_admitted_at is not None]
        rows.append({
            "cluster_queue": name,
            "submitted": len(sts),
            "admitted": len(waits),
            "finished": sum(s.state is State.FINISHED for s in sts),
            "pending": sum(s.state in (State.PENDING, State.INADMISSIBLE) for s in sts),
            "rejected": sum(s.state is State.REJECTED for s in sts),
            "evictions": sum(s.evictions for s in sts),
            "mean_admission_wait_s": sum(waits) / len(waits) if waits else None,
            "max_admission_wait_s": max(waits) if waits else None,
            "mean_queued_s": (sum(s.first_admitted_at - s.submitted_at + s.requeue_wait for s in sts
                                  if s.first_admitted_at is not None) / len(waits)) if waits else None,
        })
    return rows


__all__ = ["QUEUE_KEY", "AdmissionContext", "KueueAdmissionPlugin", "QuotaSeries", "gang_workload", "queue_summary",
           "workload_of"]
