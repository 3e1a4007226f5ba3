"""Priority with preemption, DRF and EASY backfill as queue disciplines of the one engine.

They plug into :class:`lab01_cluster_sim.scheduler.Scheduler` at its QueueSort point
(:class:`~lab01_cluster_sim.framework.queue.QueueDiscipline`) and are listed in the registry
(:data:`lab01_cluster_sim.registry.DISCIPLINES`) under ``"priority"``, ``"drf"`` and
``"backfill"``, so ``simulate(..., discipline="backfill")`` and
``python -m lab01_cluster_sim simulate --discipline backfill`` use them.

- ``backfill``: EASY (Lifka, JSSPP 1995; Mu'alem & Feitelson, IEEE TPDS 2001). The first job
  that cannot start (the head) gets a reservation at the *shadow time*, the earliest expected
  end of running jobs after which it fits (every filter of the head applied: nodeSelector,
  taints, GPU model). A later job starts now if it is expected to end by the shadow time
  (EASY's first condition) or if, bound where it would go, it leaves the head able to start
  at the shadow time (the second condition: it uses only resources the head does not need
  then, e.g. a CPU-only job beside the reserved GPUs; checked at the Permit point on the trial
  placement). Expectations come from the jobs' ``time_limit`` (the user's estimate, as
  Slurm's ``--time``) when given, else from the true remaining run time.
- ``priority``: highest priority first (then first enqueue); a job that finds no room evicts
  lower-priority work chosen by :func:`~lab01_cluster_sim.disciplines.preemption.choose_victims`
  (least work lost). Only victims with a worker on a node the preemptor may use are
  candidates (the preemptor's filters: model, nodeSelector, taints), and whether enough room
  is freed is checked with the same filters, so a victim on a node the preemptor cannot use is
  never evicted. In naive mode, pending jobs holding partial allocations are candidates too
  (they lose no work; their workers are released and they stay pending). A victim whose job
  carries ``extras[TERMINATION_GRACE]`` (s; the scenario reader fills it from a pod's
  ``terminationGracePeriodSeconds``) terminates gracefully: it stops computing at once but
  holds its GPUs that long (Kubernetes docs, "Pod Priority and Preemption", "Graceful
  termination of preemption victims"), and its preemptor waits for it instead of preempting
  more (kube-scheduler's ``PodEligibleToPreemptOthers``: a preemptor whose nominated node
  still has terminating lower-priority victims does not preempt again).
- ``drf``: the tenant with the lowest dominant share over (GPUs, CPU, memory) goes next.

How much work a victim keeps is the simulation's business (the ``checkpoints`` plugin,
:class:`~lab01_cluster_sim.disciplines.preemption.Checkpoints`; or a legacy ``evict_hook`` such
as :func:`checkpoint_evict_hook`); without either a victim restarts from scratch.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Mapping

from lab01_cluster_sim.disciplines.drf import drf_pick_tenant
from lab01_cluster_sim.disciplines.preemption import CheckpointSpec, VictimCandidate, choose_victims, last_checkpoint
from lab01_cluster_sim.framework.interface import SchedulerObserver
from lab01_cluster_sim.framework.queue import QueueDiscipline
from lab01_cluster_sim.framework.status import Outcome
from lab01_cluster_sim.model import MILLI_PER_GPU, TERMINATION_GRACE, JobRecord, JobState, format_seconds


class _Queue(QueueDiscipline):
    """Pending records in order of first enqueue (``queue_seq``: an evicted job gets its old
    place back)."""

    def __init__(self) -> None:
        self._items: dict[str, tuple[int, JobRecord]] = {}

    def push(self, record: JobRecord) -> None:
        self._items[record.job_id] = (record.queue_seq, record)

    def remove(self, record: JobRecord) -> None:
        self._items.pop(record.job_id, None)

    def order(self) -> Iterable[JobRecord]:
        return [r for _, r in sorted(self._items.values(), key=lambda x: x[0])]

    def __len__(self) -> int:
        return len(self._items)


def expected_end(rec: JobRecord) -> float:
    """When a running job is expected to end, as a scheduler that knows only the user's
    estimate sees it: run start + ``time_limit`` when the job has one, else the true end at
    its current rate (``record.expected_end``)."""
    if rec.time_limit_at is not None:
        return rec.time_limit_at
    return rec.expected_end


def estimated_run(rec: JobRecord) -> float:
    """How long a pending job is expected to run once started, s: its ``time_limit`` when
    given, else the true remaining run time at its last known rate (overhead + work x
    slowdown)."""
    if rec.job.time_limit is not None:
        return rec.job.time_limit
    return rec.overhead_left + (rec.remaining - rec.overhead_left) * rec.slowdown


class EasyBackfill(_Queue):
    """EASY backfill with both of its conditions (see the module docstring)."""

    name = "backfill"

    def reservation(self, scheduler, head: JobRecord) -> float:
        """The shadow time: the earliest expected end of running jobs after which ``head``
        fits (inf if never); ``scheduler.now`` if it fits now.

        Releases the running jobs one by one in order of expected end (:func:`expected_end`)
        on one :class:`~lab01_cluster_sim.framework.noderesources.TrialState`; the fit test applies all of
        the head's filters and runs only once enough GPUs are free in total on its nodes.
        """
        trial = scheduler.trial()
        allowed = trial.slots(head) > 0   # nodes the head could use at all are those with slots later too
        request = scheduler.request_of(head)
        ok = scheduler.online.copy()
        for extra in scheduler.extra_filters:
            ok &= extra(request, head)
        need = head.job.gpu_milli_total
        free = int(trial.gpu[ok].sum())
        if allowed.any() and trial.fits(head):
            return scheduler.now
        for rec in sorted(scheduler.running.values(), key=lambda r: (expected_end(r), r.job_id)):
            trial.release(rec)
            req = scheduler.request_of(rec)
            free += sum(req.gpu_milli * len(p.gpus) for p in rec.placements if ok[p.node_index])
            if free >= need and trial.fits(head):
                return expected_end(rec)
        return math.inf

    @staticmethod
    def keeps_reservation(scheduler, head: JobRecord, shadow: float) -> bool:
        """EASY's second condition, on the state now (a candidate's trial placement bound):
        once the running jobs expected to end by ``shadow`` are gone, ``head`` still fits."""
        trial = scheduler.trial()
        for rec in scheduler.running.values():
            if expected_end(rec) <= shadow:
                trial.release(rec)
        return trial.fits(head)

    def run_pass(self, scheduler) -> None:
        head: JobRecord | None = None
        shadow = math.inf
        for rec in list(self.order()):
            if rec.state is not JobState.PENDING:
                continue
            if head is None:
                if scheduler.try_schedule(rec) is not Outcome.STARTED:
                    head = rec
                    shadow = self.reservation(scheduler, head)
                continue
            if scheduler.now + estimated_run(rec) <= shadow or math.isinf(shadow):
                scheduler.try_schedule(rec)
            elif not scheduler.is_blocked(rec):
                reserved_for, at = head, shadow

                def permit(candidate: JobRecord, placed, _head=reserved_for, _at=at) -> str | None:
                    if self.keeps_reservation(scheduler, _head, _at):
                        return None
                    return (f"backfill: would delay {_head.job_id}'s reservation at t={format_seconds(_at)}s "
                            f"(expected to run {format_seconds(estimated_run(candidate))} s)")

                scheduler.try_schedule(rec, permit=permit)


class DrfDiscipline(_Queue):
    """DRF across tenants over (GPUs, CPU, memory); oldest job first within a tenant."""

    name = "drf"

    def __init__(self) -> None:
        super().__init__()
        self._usage: dict[str, list[float]] | None = None
        self._scheduler = None
        # NOTE: speed. The cluster's capacity, kept with the arrays it was summed from: a
        # ClusterState replaces (never edits) these arrays when nodes are added, so the sums
        # are recomputed exactly when the capacity can have changed, not on every pass.
        self._capacity: tuple | None = None

    def capacity(self, state) -> tuple[float, float, float]:
        """(GPUs, CPU milli, memory MiB) of the whole cluster ``state`` (cached per
        capacity arrays: recomputed after nodes are added)."""
        arrays = (state.gpu_count, state.cpu_capacity, state.mem_capacity)
        hit = self._capacity
        if hit is None or any(a is not b for a, b in zip(arrays, hit[0])):
            hit = self._capacity = (arrays, (float(state.total_gpus), float(state.cpu_capacity.sum()),
                                             float(state.mem_capacity.sum())))
        return hit[1]

    def _attach(self, scheduler) -> dict[str, list[float]]:
        """Keep tenants' usage incrementally through the scheduler's observer hooks."""
        if self._usage is None or self._scheduler is not scheduler:
            usage: dict[str, list[float]] = {}
            observer = _UsageObserver(usage)
            for rec in scheduler.running.values():
                observer.on_start(rec)
            self._usage, self._scheduler = usage, scheduler
            scheduler.add_observer(observer)
        return self._usage

    def run_pass(self, scheduler) -> None:
        if not self._items:
            self._attach(scheduler)
            return
        capacity = self.capacity(scheduler.state)
        usage = self._attach(scheduler)
        queues: dict[str, deque[JobRecord]] = {}
        for rec in self.order():
            if rec.state is JobState.PENDING:
                queues.setdefault(rec.job.tenant, deque()).append(rec)
        tenant: str | None = None
        while queues:
            if tenant not in queues:   # shares change only when a job starts: re-pick then
                tenant = drf_pick_tenant(usage, capacity, sorted(queues))
            rec = queues[tenant].popleft()
            if not queues[tenant]:
                del queues[tenant]
            if rec.state is JobState.PENDING and scheduler.try_schedule(rec) is Outcome.STARTED:
                tenant = None      # the observer added its usage


class _UsageObserver(SchedulerObserver):
    """Adds a job's GPUs, CPU and memory to its tenant on start; removes them on finish or
    eviction (only for jobs it counted: an admission stage also reports evictions of jobs
    that were queued, not running)."""

    def __init__(self, usage: dict[str, list[float]]) -> None:
        self.usage = usage
        self.counted: set[str] = set()

    def on_start(self, record: JobRecord) -> None:
        self.counted.add(record.job_id)
        _add(self.usage, record, 1)

    def on_finish(self, record: JobRecord) -> None:
        if record.job_id in self.counted:
            self.counted.discard(record.job_id)
            _add(self.usage, record, -1)

    def on_evict(self, record: JobRecord, lost_work: float) -> None:
        self.on_finish(record)


def _add(usage: dict[str, list[float]], rec: JobRecord, sign: int) -> None:
    u = usage.setdefault(rec.job.tenant, [0.0, 0.0, 0.0])
    j = rec.job
    u[0] += sign * j.gpu_milli_total / MILLI_PER_GPU
    u[1] += sign * j.workers * j.cpu_milli
    u[2] += sign * j.workers * j.memory_mib


class PriorityPreemption(_Queue):
    """Highest priority first; a job that finds no room evicts lower-priority work chosen by
    :func:`choose_victims` (least lost work) among the victims on nodes it may use (see the
    module docstring).

    Args:
        checkpoints: job id -> :class:`CheckpointSpec` used to estimate lost work when
            choosing victims (default: never checkpoints, so lost work = work done).
        default_checkpoint: spec of the jobs not in ``checkpoints``.
    """

    name = "priority"

    def __init__(self, checkpoints: Mapping[str, CheckpointSpec] | None = None,
                 default_checkpoint: CheckpointSpec = CheckpointSpec()) -> None:
        super().__init__()
        self.checkpoints = dict(checkpoints or {})
        self.default = default_checkpoint
        self._preempted_for: dict[str, tuple[str, ...]] = {}   # preemptor -> its last victims

    def order(self) -> Iterable[JobRecord]:
        return [r for (s, r) in sorted(self._items.values(), key=lambda x: (-x[1].job.priority, x[0]))]

    def run_pass(self, scheduler) -> None:
        # A job of the same priority and shape as one that found no victims finds none
        # either -- as long as nothing was bound since (new lower-priority work would be new
        # candidates): the memo remembers the bind counter.
        hopeless: dict[tuple, int] = {}
        for rec in list(self.order()):
            if rec.state is not JobState.PENDING:
                continue
            if scheduler.try_schedule(rec) is not Outcome.WAITING:
                continue
            key = (rec.job.priority, scheduler.request_of(rec), rec.job.workers - len(rec.placements),
                   None if scheduler.interchangeable else rec.job_id)
            if hopeless.get(key) == scheduler.bound_workers:
                continue
            if any(v in scheduler.terminating for v in self._preempted_for.get(rec.job_id, ())):
                # its victims are still terminating: it waits for them rather than preempting
                # more (kube-scheduler's PodEligibleToPreemptOthers)
                rec.reason = "waiting for its preemption victims to terminate"
                continue
            victims = self.victims(scheduler, rec)
            if not victims:
                hopeless[key] = scheduler.bound_workers
                continue
            why = f"preempted by {rec.job_id} (priority {rec.job.priority})"
            self._preempted_for[rec.job_id] = tuple(victims)
            for v in victims:
                victim = scheduler.running.get(v)
                if victim is not None:
                    scheduler.evict(victim, why, float(victim.job.extras.get(TERMINATION_GRACE, 0.0)))
                elif scheduler.mode == "naive":   # a pending job holding part of its gang
                    holder = next(r for r in self.order() if r.job_id == v)
                    scheduler.release_placements(holder, list(holder.placements))
                    holder.preemptions += 1
                # else: a role already evicted with its multi-role gang by an earlier victim
                    holder.reason = f"partial allocation released: {why}"
            scheduler.try_schedule(rec)

    def victims(self, scheduler, rec: JobRecord) -> list[str] | None:
        """Lower-priority jobs to evict so that ``rec`` fits, or None.

        Candidates: running jobs of lower priority (and, in naive mode, pending ones holding
        workers) with a worker on a node ``rec`` may use (online, GPU model, every extra
        filter for ``rec``); whether a set of victims is enough is decided on a trial copy
        with the same filters (:class:`~lab01_cluster_sim.framework.noderesources.TrialState`).
        """
        request = scheduler.request_of(rec)
        usable = scheduler.online.copy()
        if request.num_gpus and request.gpu_models:
            usable &= scheduler._model_ok(request.gpu_models)
        for extra in scheduler.extra_filters:
            usable &= extra(request, rec)
        now = scheduler.now
        held: dict[str, int] = {}
        cands = []
        pool = [r for _, r in sorted(scheduler.running.items())]
        if scheduler.mode == "naive":
            pool += [r for r in self.order() if r.state is JobState.PENDING and r.placements and r is not rec]
        for r in pool:
            if r.job.priority >= rec.job.priority:
                continue
            mine = [p for p in r.placements if usable[p.node_index]]
            if not mine:
                continue
            req = scheduler.request_of(r)
            held[r.job_id] = sum(req.gpu_milli * len(p.gpus) for p in mine)
            if r.state is JobState.RUNNING:
                spec = self.checkpoints.get(r.job_id, self.default)
                progress = r.work_done_at(now)
                lost = progress - last_checkpoint(progress, spec)
            else:
                lost = 0.0
            cands.append(VictimCandidate(r.job_id, r.job.priority, r.job.gpu_milli_total / MILLI_PER_GPU, lost))
        if not cands:
            return None
        st = scheduler.state
        free = int(st.gpu_free[usable].sum())
        need = request.gpu_milli * request.num_gpus * (rec.job.workers - len(rec.placements))
        if free + sum(held.values()) < need:
            return None     # even preempting every candidate would not free enough GPUs
        by_id = {r.job_id: r for r in pool}

        def enough(ids) -> bool:
            if free + sum(held[i] for i in ids) < need:
                return False    # cheap count check before the trial
            trial = scheduler.trial()
            for i in ids:
                trial.release(by_id[i])
            return trial.fits(rec)

        return choose_victims(cands, enough)


def progress_of(rec: JobRecord, now: float) -> float:
    """Useful work a running (or evicted) job has done by ``now``, s
    (:meth:`~lab01_cluster_sim.model.JobRecord.work_done_at`: a restore overhead at the start
    of the run is paid back before progress resumes)."""
    return rec.work_done_at(now)


def checkpoint_evict_hook(checkpoints: Mapping[str, CheckpointSpec] | None = None,
                          default: CheckpointSpec = CheckpointSpec()):
    """A legacy ``evict_hook`` for :class:`lab01_cluster_sim.simulate.Simulation`: the run
    time a victim still needs = duration - (progress at its last checkpoint) + restore time.
    Prefer the ``checkpoints`` plugin (:class:`~lab01_cluster_sim.disciplines.preemption.Checkpoints`)."""
    checkpoints = dict(checkpoints or {})

    def hook(rec: JobRecord, now: float) -> float:
        spec = checkpoints.get(rec.job_id, default)
        kept = last_checkpoint(progress_of(rec, now), spec)
        rec.extras["restore_s"] = spec.restore_s
        return rec.job.duration - kept + spec.restore_s

    return hook
