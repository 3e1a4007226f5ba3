"""The extensions' former runner interface, kept as a thin adapter over the one engine.

Lab 01 used to have a second event loop here for the queue disciplines and the extensions
(topology slowdown, time-slicing contention, bounded waits, tenancy, migration). That loop is
gone: :class:`Runner` now builds a :class:`lab01_cluster_sim.simulate.Simulation` with the
matching plugins (:mod:`lab01_cluster_sim.plugins`) and reports in the old shapes
(:class:`RunnerResult`, :class:`JobOutcome`), so code and chapters written against it run
unchanged, on the same engine as ``simulate``:

- discipline: ``fifo``, ``fifo-skip``, ``priority``, ``drf``, ``backfill`` (the core's queue
  disciplines, :mod:`lab01_cluster_sim.disciplines.core`);
- placement: ``most-allocated`` (the node with the least free GPU capacity that fits, then
  the least free CPU: the extensions' best-fit, Kubernetes' "MostAllocated");
- checkpoints: the ``checkpoints`` plugin with ``checkpoints`` / ``default_checkpoint``;
- ``placer``, ``node_filter``, ``speed``, ``on_blocked``: an engine plugin
  (:class:`~lab01_cluster_sim.topology.TopologyAware`,
  :class:`~lab01_cluster_sim.tenancy.TenancyPlacer`,
  :class:`~lab01_cluster_sim.tenancy.ConstraintFilter`,
  :class:`~lab01_cluster_sim.defrag.ShapeAwareAdmission`,
  :class:`~lab01_cluster_sim.sharing_modes.TimeSlicing`,
  :class:`~lab01_cluster_sim.defrag.Defragmenter`) is registered as it is; a plain callable
  of the old signature is wrapped in a plugin (``placer(runner, job, now) -> allocation |
  None`` at the PreFilter point, ``node_filter(runner, job) -> mask`` at Filter,
  ``speed(runner, job, alloc) -> slowdown`` at the progress point, ``on_blocked(runner, t)``
  after each cycle);
- ``observer(runner, t)`` is called after each cycle and its values kept in ``samples``.

Time in s, CPU milli-cores, memory MiB.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from lab01_cluster_sim.cluster import ClusterState, Request
from lab01_cluster_sim.disciplines.drf import dominant_share
from lab01_cluster_sim.disciplines.fairness import jain_index
from lab01_cluster_sim.disciplines.preemption import CheckpointSpec, Checkpoints
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.model import MILLI_PER_GPU, Job, JobRecord, JobState, Node
from lab01_cluster_sim.plugins import defines
from lab01_cluster_sim.policies.generic import MostAllocated
from lab01_cluster_sim.scheduler import PreFilterResult, get_discipline

DISCIPLINES = ("fifo", "fifo-skip", "priority", "drf", "backfill")
"""Names accepted by :class:`Runner`."""

Allocation = tuple[tuple[int, tuple[int, ...]], ...]
"""One ``(node index, GPU indices)`` per worker."""


class JobRun:
    """A job's run state as the former runner showed it: a view of its
    :class:`~lab01_cluster_sim.model.JobRecord` in the engine.

    Attributes:
        job: the job. spec: its :class:`CheckpointSpec`. record: the engine's record.
    """

    __slots__ = ("record", "spec")

    def __init__(self, record: JobRecord, spec: CheckpointSpec) -> None:
        self.record = record
        self.spec = spec

    @property
    def job(self) -> Job:
        return self.record.job

    @property
    def state(self) -> JobState:
        return self.record.state

    @property
    def alloc(self) -> Allocation:
        """``((node, gpus), ...)`` of the workers bound now (empty when not running)."""
        return tuple((p.node_index, p.gpus) for p in self.record.placements)

    @property
    def first_start(self) -> float | None:
        return self.record.start_time

    @property
    def end_time(self) -> float | None:
        """Completion time once completed; while running, when it is expected to end."""
        if self.record.end_time is not None:
            return self.record.end_time
        return None if self.record.state is not JobState.RUNNING else self.record.expected_end

    @property
    def preemptions(self) -> int:
        return self.record.preemptions

    @property
    def migrations(self) -> int:
        return self.record.migrations

    @property
    def lost_s(self) -> float:
        """GPU-seconds of progress thrown away by evictions."""
        return self.record.lost_gpu_s

    @property
    def slowdown(self) -> float:
        return self.record.slowdown

    @property
    def reason(self) -> str:
        return self.record.reason or ""

    def progress_at(self, now: float) -> float:
        """Useful work done by ``now`` (s at full speed), at most the job's duration."""
        return self.record.work_done_at(now)

    def remaining_wall(self) -> float:
        """Wall time still needed from a fresh start at the last known rate."""
        r = self.record
        return r.overhead_left + (r.remaining - r.overhead_left) * r.slowdown


@dataclass(frozen=True)
class JobOutcome:
    """End state of one job (times in s; None where it does not apply)."""

    job_id: str
    tenant: str
    state: JobState
    submit: float
    first_start: float | None
    end: float | None
    gpus: float
    duration: float
    preemptions: int
    migrations: int
    lost_gpu_s: float
    slowdown: float
    reason: str = ""

    @property
    def wait(self) -> float | None:
        """Queueing delay: first start - submit."""
        return None if self.first_start is None else self.first_start - self.submit


@dataclass
class RunnerResult:
    """What a :class:`Runner` run produced.

    Attributes:
        discipline: its name.
        outcomes: one :class:`JobOutcome` per job, in input order.
        end_time: time of the last scheduling cycle, s.
        start_time: first submission, s.
        total_gpus: physical GPUs of the cluster.
        busy_milli_s: integral of allocated milli-GPU over time.
        timeline: rows ``(time, allocated GPUs, pending jobs, running jobs)`` at each cycle.
        samples: whatever the ``observer`` returned at each cycle.
    """

    discipline: str
    outcomes: list[JobOutcome]
    end_time: float
    start_time: float
    total_gpus: int
    busy_milli_s: float
    timeline: list[tuple[float, float, int, int]] = field(default_factory=list)
    samples: list = field(default_factory=list)
    share_seconds: dict[str, float] = field(default_factory=dict)
    backlog_jain: float = float("nan")

    def waits(self) -> np.ndarray:
        """Waits of the jobs that started; jobs still pending count their wait so far."""
        w = [o.wait if o.wait is not None else (self.end_time - o.submit)
             for o in self.outcomes if o.state is not JobState.REJECTED]
        return np.asarray(w, dtype=float)

    def tenant_service(self) -> dict[str, float]:
        """Per tenant: mean over its jobs of duration / (end - submit) (inverse slowdown, in (0, 1]).

        A job not finished counts with ``end`` = the end of the run (so a starved job
        scores near 0). This is the x of Jain's index in :meth:`summary`.
        """
        per: dict[str, list[float]] = {}
        for o in self.outcomes:
            if o.state is JobState.REJECTED:
                continue
            end = o.end if o.end is not None else self.end_time
            span = end - o.submit
            per.setdefault(o.tenant, []).append(1.0 if span <= 0 else min(1.0, o.duration / span))
        return {t: float(np.mean(v)) for t, v in sorted(per.items())}

    def tenant_dominant_share(self) -> dict[str, float]:
        """Per tenant: its dominant share over (GPUs, CPU, memory) averaged over the run
        (Ghodsi et al.'s dominant share, integrated over time / run length). This is what DRF
        equalises among tenants that have work waiting; :meth:`summary`'s
        ``jain_dominant_share`` is Jain's index over it."""
        span = self.end_time - self.start_time
        tenants = sorted({o.tenant for o in self.outcomes if o.state is not JobState.REJECTED})
        if span <= 0:
            return {t: 0.0 for t in tenants}
        return {t: self.share_seconds.get(t, 0.0) / span for t in tenants}

    def summary(self) -> dict[str, float]:
        """The trilemma numbers: mean and p99 wait (s), utilisation, Jain's index over tenants, ...

        utilisation = allocated GPU-seconds / (GPUs x (end - start)); allocated time includes
        work later lost to preemption and restore overheads, so priority with preemption can
        show more "utilisation" for the same useful work. ``jain_index`` is Jain's index over
        the tenants' mean inverse slowdown (:meth:`tenant_service`): how evenly tenants' jobs
        are slowed by queueing, not how evenly resources are shared. DRF equalises dominant
        shares, not slowdowns: a tenant of big gangs gets its share in big, slow-to-gather
        pieces and its jobs wait longer, so DRF can score *lower* than FIFO on this index.
        ``jain_dominant_share`` is what DRF works on: Jain's index over the dominant shares of
        the tenants that have work waiting, time-averaged over the moments when at least two
        do (NaN if that never happens).
        """
        w = self.waits()
        span = self.end_time - self.start_time
        states = [o.state for o in self.outcomes]
        service = self.tenant_service()
        return {
            "mean_wait_s": float(w.mean()) if w.size else 0.0,
            "p99_wait_s": float(np.percentile(w, 99)) if w.size else 0.0,
            "max_wait_s": float(w.max()) if w.size else 0.0,
            "utilisation": (self.busy_milli_s / (self.total_gpus * MILLI_PER_GPU * span)
                            if span > 0 and self.total_gpus else 0.0),
            "jain_index": jain_index(list(service.values())) if service else 1.0,
            "jain_dominant_share": self.backlog_jain,
            "lost_gpu_hours": sum(o.lost_gpu_s for o in self.outcomes) / 3600.0,
            "preemptions": float(sum(o.preemptions for o in self.outcomes)),
            "completed": float(states.count(JobState.COMPLETED)),
            "pending": float(states.count(JobState.PENDING)),
            "running": float(states.count(JobState.RUNNING)),
            "rejected": float(states.count(JobState.REJECTED)),
            "timeout": float(states.count(JobState.TIMEOUT)),
            "makespan_s": span,
        }

    def outcome(self, job_id: str) -> JobOutcome:
        """The outcome of ``job_id``. Raises KeyError if unknown."""
        for o in self.outcomes:
            if o.job_id == job_id:
                return o
        raise KeyError(job_id)


Placer = Callable[["Runner", Job, float], Allocation | None]
NodeFilter = Callable[["Runner", Job], np.ndarray | None]
Speed = Callable[["Runner", Job, Allocation], float]
Observer = Callable[["Runner", float], object]
BlockedHook = Callable[["Runner", float], None]


# -- adapters from the old callables to plugins ------------------------------------------------
class _LegacyPlacer:
    name = "legacy-placer"

    def __init__(self, runner: "Runner", placer: Placer) -> None:
        self.runner, self.placer = runner, placer

    def pre_filter(self, sim, record, request):
        alloc = self.placer(self.runner, record.job, sim.now)
        if alloc is None:
            return PreFilterResult(wait="the placer found no place now")
        return PreFilterResult(assign=tuple((int(n), tuple(int(g) for g in gpus)) for n, gpus in alloc))


class _LegacyFilter:
    name = "legacy-node-filter"
    static = True   # depends only on node labels/taints and the job: arrival may reject on it

    def __init__(self, runner: "Runner", node_filter: NodeFilter) -> None:
        self.runner, self.node_filter = runner, node_filter

    def filter(self, request, record):
        n = self.runner.sim.state.num_nodes
        if record is None:
            return np.ones(n, dtype=bool)
        mask = self.node_filter(self.runner, record.job)
        return np.ones(n, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)


class _LegacySpeed:
    name = "legacy-speed"

    def __init__(self, runner: "Runner", speed: Speed, rerate: bool) -> None:
        self.runner, self.speed, self.rerate = runner, speed, rerate

    def slowdown(self, sim, record):
        alloc = tuple((p.node_index, p.gpus) for p in record.placements)
        return max(1.0, float(self.speed(self.runner, record.job, alloc)))

    def affected_by(self, sim, record):
        if not self.rerate:
            return []
        mine = {(p.node_index, g) for p in record.placements for g in p.gpus}
        return [r for r in sim.scheduler.running.values()
                if any((p.node_index, g) in mine for p in r.placements for g in p.gpus)]


class _LegacyBlocked:
    name = "legacy-on-blocked"

    def __init__(self, runner: "Runner", hook: BlockedHook) -> None:
        self.runner, self.hook = runner, hook

    def after_cycle(self, sim):
        if len(sim.scheduler.discipline):
            self.hook(self.runner, sim.now)


class _Recorder:
    """Busy GPU time, the timeline rows and the observer's samples, per cycle."""

    name = "runner-recorder"

    def __init__(self, runner: "Runner", observer: Observer | None) -> None:
        self.runner, self.observer = runner, observer
        self.allocated = 0
        self.busy = 0.0
        self.last: float | None = None
        self.timeline: list[tuple[float, float, int, int]] = []
        self.samples: list = []
        self.usage: dict[str, np.ndarray] = {}        # tenant -> (GPUs, milli-CPU, MiB) held now
        self.share_seconds: dict[str, float] = {}     # tenant -> integral of its dominant share
        self.backlog_since: tuple[float, float] | None = None
        self.backlog_weighted = 0.0
        self.backlog_time = 0.0

    def _advance(self, now: float) -> None:
        if self.last is not None and now > self.last:
            dt = now - self.last
            self.busy += self.allocated * dt
            cap = self.runner.capacity
            for tenant, u in self.usage.items():
                share = float(np.max(np.divide(u, cap, out=np.zeros(3), where=cap > 0)))
                self.share_seconds[tenant] = self.share_seconds.get(tenant, 0.0) + share * dt
        self.last = now

    def _hold(self, record, request, sign: int) -> None:
        u = self.usage.setdefault(record.job.tenant, np.zeros(3))
        u += sign * np.array([request.num_gpus * request.gpu_milli / MILLI_PER_GPU, request.cpu_milli,
                              request.memory_mib], dtype=float)

    def on_bind(self, record, placement, request):
        self._advance(self.runner.sim.now)
        self.allocated += len(placement.gpus) * request.gpu_milli
        self._hold(record, request, 1)

    def on_release(self, record, placement, request):
        self._advance(self.runner.sim.now)
        self.allocated -= len(placement.gpus) * request.gpu_milli
        self._hold(record, request, -1)

    def on_reject(self, record):
        self.runner.sim.request_pass()   # a cycle at every instant with events, as before

    def sample(self, sim, now):
        self._advance(now)
        # Jain's index over the dominant shares of the tenants that have work waiting (the
        # tenants DRF arbitrates between), held until the next cycle
        waiting = {r.job.tenant for r in sim.scheduler.discipline.order() if r.state is JobState.PENDING}
        if self.backlog_since is not None:
            t0, value = self.backlog_since
            self.backlog_weighted += value * (now - t0)
            self.backlog_time += now - t0
            self.backlog_since = None
        if len(waiting) >= 2:
            cap = self.runner.capacity
            shares = [float(np.max(np.divide(self.usage.get(t, np.zeros(3)), cap, out=np.zeros(3), where=cap > 0)))
                      for t in sorted(waiting)]
            self.backlog_since = (now, jain_index(shares))
        row = (now, self.allocated / MILLI_PER_GPU, len(sim.scheduler.discipline), len(sim.scheduler.running))
        value = self.observer(self.runner, now) if self.observer is not None else None
        if self.timeline and self.timeline[-1][0] == now:   # several cycles at one instant: keep the last
            self.timeline[-1] = row
            if self.observer is not None:
                self.samples[-1] = value
        else:
            self.timeline.append(row)
            if self.observer is not None:
                self.samples.append(value)


class Runner:
    """Run ``jobs`` on ``nodes`` under one queue discipline, on the one engine.

    Args:
        nodes: the cluster.
        jobs: the workload (ids unique).
        discipline: one of :data:`DISCIPLINES`.
        checkpoints: job id -> :class:`CheckpointSpec` (default ``default_checkpoint``).
        default_checkpoint: used for jobs not in ``checkpoints``.
        placer: an engine plugin (topology, tenancy), or ``placer(runner, job, now) ->
            Allocation | None`` (None: not now).
        node_filter: an engine plugin with a Filter point (taints, nodeSelector, shape-aware
            admission), or ``node_filter(runner, job) -> bool mask (N,) | None``.
        speed: an engine plugin with a slowdown (time-slicing), or ``speed(runner, job,
            alloc) -> slowdown >= 1``.
        observer: called after each cycle; its return values are kept in ``samples``.
        on_blocked: an engine plugin with ``after_cycle`` (defragmentation), or
            ``on_blocked(runner, t)``, called after each cycle that leaves jobs pending.
        until: stop after the events at this time (jobs then running stay RUNNING).
        rerate: re-evaluate a callable ``speed`` for running jobs whenever a job starts on or
            leaves one of their GPUs (plugins re-rate on their own).

    Raises:
        InputError: unknown discipline, duplicate job ids.
    """

    def __init__(self, nodes: Sequence[Node], jobs: Sequence[Job], discipline: str = "fifo-skip", *,
                 checkpoints: Mapping[str, CheckpointSpec] | None = None,
                 default_checkpoint: CheckpointSpec = CheckpointSpec(),
                 placer=None, node_filter=None, speed=None, observer: Observer | None = None,
                 on_blocked=None, until: float = math.inf, rerate: bool = False) -> None:
        from lab01_cluster_sim.disciplines.core import PriorityPreemption
        from lab01_cluster_sim.simulate import Simulation

        if discipline not in DISCIPLINES:
            raise InputError(f"unknown discipline {discipline!r}; expected one of: {', '.join(DISCIPLINES)}")
        ids = [j.job_id for j in jobs]
        if len(set(ids)) != len(ids):
            seen: set[str] = set()
            dup = next(i for i in ids if i in seen or seen.add(i))  # type: ignore[func-returns-value]
            raise InputError(f"duplicate job id {dup!r}")
        self.discipline = discipline
        self.until = until
        self.checkpoints = Checkpoints(checkpoints, default_checkpoint)
        disc = (PriorityPreemption(checkpoints, default_checkpoint) if discipline == "priority"
                else get_discipline(discipline))
        plugins: list = [self.checkpoints]
        self._filters: list = []
        if node_filter is not None:
            plugin = node_filter if defines(node_filter, "filter") else _LegacyFilter(self, node_filter)
            plugins.append(plugin)
            self._filters.append(plugin)
        if placer is not None:
            if any(defines(placer, h) for h in ("pre_filter", "filter_devices", "filter")):
                plugins.append(placer)
                if defines(placer, "filter"):
                    self._filters.append(placer)
            else:
                plugins.append(_LegacyPlacer(self, placer))
        if speed is not None:
            owner = getattr(speed, "__self__", None)
            if owner is not None and owner in plugins:
                pass                       # e.g. speed=topo.speed with placer=topo
            elif defines(speed, "slowdown"):
                if hasattr(speed, "rerate") and not rerate and type(speed).__name__ == "TimeSlicing":
                    speed.rerate = False   # the old runner fixed each job's speed at its start
                plugins.append(speed)
            else:
                plugins.append(_LegacySpeed(self, speed, rerate))
        if on_blocked is not None:
            plugins.append(on_blocked if defines(on_blocked, "after_cycle") else _LegacyBlocked(self, on_blocked))
        self._recorder = _Recorder(self, observer)
        plugins.append(self._recorder)
        self.sim = Simulation(nodes, jobs, MostAllocated(), "gang", disc, plugins=plugins)
        self.state: ClusterState = self.sim.state
        self.runs: dict[str, JobRun] = {i: JobRun(r, self.checkpoints.spec(i)) for i, r in self.sim.records.items()}
        self._order = ids
        self.capacity = np.array([self.state.total_gpus, int(self.state.cpu_capacity.sum()),
                                  int(self.state.mem_capacity.sum())], dtype=float)

    # -- views ---------------------------------------------------------------------------
    @property
    def nodes(self) -> tuple[Node, ...]:
        return self.state.nodes

    @property
    def now(self) -> float:
        return self.sim.now

    @property
    def pending(self) -> list[str]:
        """Ids of the pending jobs, in queue order."""
        return [r.job_id for r in self.sim.scheduler.discipline.order() if r.state is JobState.PENDING]

    @property
    def running(self) -> dict[str, JobRun]:
        """Id -> run of every running job."""
        return {i: self.runs[i] for i in sorted(self.sim.scheduler.running)}

    @property
    def tenant_usage(self) -> dict[str, list[float]]:
        """Tenant -> [GPUs, milli-CPU, MiB] held by its running jobs."""
        out: dict[str, list[float]] = {}
        for rec in self.sim.scheduler.running.values():
            u = out.setdefault(rec.job.tenant, [0.0, 0.0, 0.0])
            u[0] += rec.job.gpu_milli_total / MILLI_PER_GPU
            u[1] += rec.job.workers * rec.job.cpu_milli
            u[2] += rec.job.workers * rec.job.memory_mib
        return out

    def dominant_shares(self) -> dict[str, float]:
        """Tenant -> current dominant share over (GPUs, CPU, memory) of the running jobs."""
        return {t: dominant_share(u, self.capacity) for t, u in sorted(self.tenant_usage.items())}

    def mask_for(self, job: Job) -> np.ndarray | None:
        """bool (N,): the nodes the registered filters leave to ``job`` (None = all)."""
        if not self._filters:
            return None
        rec = self.sim.records.get(job.job_id) or JobRecord(job)
        req = Request.of_worker(job)
        mask = np.ones(self.state.num_nodes, dtype=bool)
        for f in self._filters:
            mask &= f.filter(req, rec)
        return mask

    def wake_at(self, t: float) -> None:
        """Ask for a scheduling cycle at time ``t``."""
        self.sim.request_pass_at(t)

    def try_place(self, job: Job, state: ClusterState | None = None) -> Allocation | None:
        """Where ``job`` would go now under the runner's placement (the state is unchanged), or None."""
        sched = self.sim.scheduler
        trial_state = copy.copy(state if state is not None else self.state)
        mask = self.mask_for(job)
        rec = self.sim.records.get(job.job_id) or JobRecord(job)
        placed = sched.plan_placements(trial_state, rec, mask)
        return None if placed is None else tuple(placed)

    def start(self, job_id: str, alloc: Allocation) -> None:
        """Bind ``alloc`` and start (or resume) the job now."""
        self.sim.scheduler.bind_placements(self.sim.records[job_id], alloc)

    def stop(self, job_id: str, extra_overhead_s: float = 0.0, *, migration: bool = False) -> float:
        """Preempt (or, with ``migration``, checkpoint and move) a running job now; returns the
        GPU-seconds lost (progress since its last checkpoint x its GPUs)."""
        rec = self.sim.records[job_id]
        before = rec.lost_gpu_s
        self.sim.evict(rec, "stopped by an extension", migration=migration, extra_overhead_s=extra_overhead_s)
        return rec.lost_gpu_s - before

    # -- run -----------------------------------------------------------------------------
    def run(self) -> RunnerResult:
        """Run to the end (or ``until``) and return the result."""
        start = min((r.job.submit_time for r in self.runs.values()), default=0.0)
        if math.isinf(self.until):
            self.sim.run()
        else:
            self.sim.run(until=math.nextafter(self.until, math.inf))
        rec = self._recorder
        end = rec.timeline[-1][0] if rec.timeline else start
        rec._advance(end)
        outcomes = []
        for job_id in self._order:
            r = self.sim.records[job_id]
            j = r.job
            outcomes.append(JobOutcome(
                job_id, j.tenant, r.state, j.submit_time, r.start_time,
                r.end_time if r.state is JobState.COMPLETED else None,
                j.gpu_milli_total / MILLI_PER_GPU, j.duration, r.preemptions, r.migrations,
                r.lost_gpu_s, r.slowdown, r.reason or ""))
        backlog = rec.backlog_weighted / rec.backlog_time if rec.backlog_time > 0 else float("nan")
        return RunnerResult(self.discipline, outcomes, end, start, self.state.total_gpus, rec.busy,
                            rec.timeline, rec.samples, dict(rec.share_seconds), backlog)


def run_discipline(nodes: Sequence[Node], jobs: Sequence[Job], discipline: str, **kwargs) -> RunnerResult:
    """Convenience: ``Runner(nodes, jobs, discipline, **kwargs).run()``."""
    return Runner(nodes, jobs, discipline, **kwargs).run()

