"""Priority with preemption, DRF and EASY backfill as queue disciplines of the core scheduler.

These plug into :class:`lab01_cluster_sim.scheduler.Scheduler` through its
:class:`~lab01_cluster_sim.scheduler.QueueDiscipline` extension point and are registered
under ``"priority"``, ``"drf"`` and ``"backfill"``, so
``simulate(..., discipline="backfill")`` and ``python -m lab01_cluster_sim simulate
--discipline backfill`` use them. The rules are those of
:mod:`lab01_cluster_sim.disciplines.runner` with two differences imposed by the core's
interface:

- ``backfill`` lets a later job start only if it is expected to end by the head's
  reservation (EASY's first condition). EASY's second condition (a longer job may start
  if it leaves the head's reservation intact) needs a trial bind that can be undone,
  which the core scheduler does not offer to disciplines; the runner implements it.
- ``priority`` evicts through :meth:`Scheduler.evict`; how much work a victim keeps is
  the simulation's ``evict_hook`` (:func:`checkpoint_evict_hook` gives the
  checkpoint model; without it a victim restarts from scratch).
"""

from __future__ import annotations

import itertools
import math
from collections import deque
from collections.abc import Iterable, Mapping

from lab01_cluster_sim.disciplines.drf import drf_pick_tenant
from lab01_cluster_sim.disciplines.preemption import CheckpointSpec, VictimCandidate, choose_victims, last_checkpoint
from lab01_cluster_sim.disciplines.runner import clone_state, place_gang
from lab01_cluster_sim.model import MILLI_PER_GPU, JobRecord, JobState
from lab01_cluster_sim.scheduler import Outcome, QueueDiscipline, SchedulerObserver, register_discipline


class _Queue(QueueDiscipline):
    """Pending records in push order (an evicted job goes to the back)."""

    def __init__(self) -> None:
        self._items: dict[str, tuple[int, JobRecord]] = {}
        self._seq = itertools.count()

    def push(self, record: JobRecord) -> None:
        self._items[record.job_id] = (next(self._seq), record)

    def remove(self, record: JobRecord) -> None:
        self._items.pop(record.job_id, None)

    def order(self) -> Iterable[JobRecord]:
        return [r for _, r in sorted(self._items.values(), key=lambda x: x[0])]

    def __len__(self) -> int:
        return len(self._items)


def _expected_end(rec: JobRecord) -> float:
    return (rec.run_started if rec.run_started is not None else 0.0) + rec.remaining


def _fits_after(scheduler, head: JobRecord, released: Iterable[JobRecord]) -> bool:
    trial = clone_state(scheduler.state)
    for rec in released:
        req = scheduler.request_of(rec)
        for p in rec.placements:
            trial.release(p.node_index, p.gpus, req)
    return place_gang(trial, head.job, scheduler.online) is not None


@register_discipline
class EasyBackfill(_Queue):
    """EASY backfill (first condition only, see the module docstring)."""

    name = "backfill"

    def reservation(self, scheduler, head: JobRecord) -> float:
        """Earliest expected end of running jobs after which ``head`` fits (inf if never).

        Releases the running jobs one by one in order of expected end on one copy of the
        state; the (costly) placement test runs only once enough GPUs are free in total.
        """
        running = sorted(scheduler.running.values(), key=lambda r: (_expected_end(r), r.job_id))
        trial = clone_state(scheduler.state)
        need = head.job.gpu_milli_total
        free = int(trial.gpu_free[scheduler.online].sum())
        for rec in running:
            req = scheduler.request_of(rec)
            for p in rec.placements:
                trial.release(p.node_index, p.gpus, req)
                if scheduler.online[p.node_index]:
                    free += req.gpu_milli * len(p.gpus)
            if free >= need and place_gang(trial, head.job, scheduler.online) is not None:
                return _expected_end(rec)
        return math.inf

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
            if scheduler.now + rec.remaining <= shadow:
                scheduler.try_schedule(rec)


@register_discipline
class DrfDiscipline(_Queue):
    """DRF across tenants over (GPUs, CPU, memory); oldest job first within a tenant."""

    name = "drf"

    def __init__(self) -> None:
        super().__init__()
        self._usage: dict[str, list[float]] | None = None
        self._scheduler = None

    def _attach(self, scheduler) -> dict[str, list[float]]:
        """Keep tenants' usage incrementally through the scheduler's observer hooks."""
        if self._usage is None or self._scheduler is not scheduler:
            usage: dict[str, list[float]] = {}
            for rec in scheduler.running.values():
                _add(usage, rec, 1)
            self._usage, self._scheduler = usage, scheduler
            scheduler.add_observer(_UsageObserver(usage))
        return self._usage

    def run_pass(self, scheduler) -> None:
        st = scheduler.state
        capacity = (float(st.total_gpus), float(st.cpu_capacity.sum()), float(st.mem_capacity.sum()))
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
    """Adds a job's GPUs, CPU and memory to its tenant on start; removes them on finish or eviction."""

    def __init__(self, usage: dict[str, list[float]]) -> None:
        self.usage = usage

    def on_start(self, record: JobRecord) -> None:
        _add(self.usage, record, 1)

    def on_finish(self, record: JobRecord) -> None:
        _add(self.usage, record, -1)

    def on_evict(self, record: JobRecord, lost_work: float) -> None:
        _add(self.usage, record, -1)


def _add(usage: dict[str, list[float]], rec: JobRecord, sign: int) -> None:
    u = usage.setdefault(rec.job.tenant, [0.0, 0.0, 0.0])
    j = rec.job
    u[0] += sign * j.gpu_milli_total / MILLI_PER_GPU
    u[1] += sign * j.workers * j.cpu_milli
    u[2] += sign * j.workers * j.memory_mib


@register_discipline
class PriorityPreemption(_Queue):
    """Highest priority first; a blocked job evicts lower-priority jobs chosen by
    :func:`choose_victims` (least lost work).

    Args:
        checkpoints: job id -> :class:`CheckpointSpec` used to estimate lost work when
            choosing victims (default: never checkpoints, so lost work = run time).
    """

    name = "priority"

    def __init__(self, checkpoints: Mapping[str, CheckpointSpec] | None = None,
                 default_checkpoint: CheckpointSpec = CheckpointSpec()) -> None:
        super().__init__()
        self.checkpoints = dict(checkpoints or {})
        self.default = default_checkpoint

    def order(self) -> Iterable[JobRecord]:
        return [r for (s, r) in sorted(self._items.values(), key=lambda x: (-x[1].job.priority, x[0]))]

    def run_pass(self, scheduler) -> None:
        hopeless: set[tuple] = set()
        for rec in list(self.order()):
            if rec.state is not JobState.PENDING:
                continue
            if scheduler.try_schedule(rec) is Outcome.STARTED:
                continue
            key = (rec.job.priority, scheduler.request_of(rec), rec.job.workers)
            if key in hopeless:
                continue
            victims = self.victims(scheduler, rec)
            if not victims:
                hopeless.add(key)
            if victims:
                for v in victims:
                    scheduler.evict(scheduler.running[v], f"preempted by {rec.job_id} (priority {rec.job.priority})")
                scheduler.try_schedule(rec)

    def victims(self, scheduler, rec: JobRecord) -> list[str] | None:
        """Lower-priority running jobs to evict so that ``rec`` fits, or None."""
        cands = []
        for rid, r in sorted(scheduler.running.items()):
            if r.job.priority < rec.job.priority:
                spec = self.checkpoints.get(rid, self.default)
                progress = progress_of(r, scheduler.now)
                cands.append(VictimCandidate(rid, r.job.priority, r.job.gpu_milli_total / MILLI_PER_GPU,
                                             progress - last_checkpoint(progress, spec)))
        if not cands:
            return None
        st = scheduler.state
        free = int(st.gpu_free[scheduler.online].sum())
        need = rec.job.gpu_milli_total
        held = {c.job_id: scheduler.running[c.job_id].job.gpu_milli_total for c in cands}
        if free + sum(held.values()) < need:
            return None     # even preempting every candidate would not free enough GPUs

        def enough(ids) -> bool:
            if free + sum(held[i] for i in ids) < need:
                return False    # cheap count check before the trial placement
            return _fits_after(scheduler, rec, [scheduler.running[i] for i in ids])

        return choose_victims(cands, enough)


def progress_of(rec: JobRecord, now: float) -> float:
    """Useful work a running (or evicted) job has done by ``now``, s.

    ``rec.remaining`` at the start of a run includes a restore overhead, kept in
    ``rec.extras["restore_s"]`` by :func:`checkpoint_evict_hook`; the first seconds of the
    run pay it back before progress resumes.
    """
    pend = float(rec.extras.get("restore_s", 0.0))
    ran = 0.0 if rec.run_started is None else now - rec.run_started
    progress = rec.job.duration - (rec.remaining - pend) + max(0.0, ran - pend)
    return min(rec.job.duration, max(0.0, progress))


def checkpoint_evict_hook(checkpoints: Mapping[str, CheckpointSpec] | None = None,
                          default: CheckpointSpec = CheckpointSpec()):
    """An ``evict_hook`` for :class:`lab01_cluster_sim.simulate.Simulation`: the run time a
    victim still needs = duration - (progress at its last checkpoint) + restore time."""
    checkpoints = dict(checkpoints or {})

    def hook(rec: JobRecord, now: float) -> float:
        spec = checkpoints.get(rec.job_id, default)
        kept = last_checkpoint(progress_of(rec, now), spec)
        rec.extras["restore_s"] = spec.restore_s
        return rec.job.duration - kept + spec.restore_s

    return hook
