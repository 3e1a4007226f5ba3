"""A small discrete-event loop for the queue disciplines and the other Lab 01 extensions.

Events are arrivals and completions (plus preemptions and migrations, which the loop
performs itself). After each batch of events at the same instant the chosen
*discipline* decides which pending jobs start:

- ``fifo``: arrival order, strict head-of-line blocking (nothing passes a blocked head).
- ``fifo-skip``: arrival order, a blocked job is skipped and later jobs may start
  (big jobs can starve).
- ``priority``: highest priority first (then arrival); a blocked job may preempt
  running jobs of strictly lower priority, chosen by
  :func:`~lab01_cluster_sim.disciplines.preemption.choose_victims` to lose the least work.
- ``drf``: the tenant with the lowest dominant share over (GPUs, CPU, memory) goes next
  (:func:`~lab01_cluster_sim.disciplines.drf.drf_pick_tenant`), oldest job first.
- ``backfill``: EASY backfill (Lifka, "The ANL/IBM SP scheduling system", JSSPP 1995;
  Mu'alem & Feitelson, IEEE TPDS 2001): the blocked head gets a reservation at the
  earliest time enough resources free up, from running jobs' expected ends; a later job
  starts now only if it does not delay that reservation.

Gangs are placed all-or-nothing. The default placement is best-fit (the node with the
least free GPU capacity that fits, i.e. Kubernetes' "MostAllocated"); extensions pass
their own ``placer``, an extra ``node_filter`` or a ``speed`` (slowdown) function.

Why a loop of its own next to the core simulation (:mod:`lab01_cluster_sim.simulate`)?
The queue disciplines also run on the core (:mod:`lab01_cluster_sim.disciplines.core`),
but several extensions need hooks the core does not offer: a job that runs slower on
some placements (NVLink topology, time-slicing contention), a placement that may decide
to wait (topology-aware bounded wait, tenancy tiers), a hook after each pass that may
migrate running jobs (defragmentation), and a trial bind that can be undone (EASY's
second condition). This loop is small, uses the core's records
(:class:`~lab01_cluster_sim.model.Job`, :class:`~lab01_cluster_sim.cluster.ClusterState`)
and gives those hooks. On the same jobs it gives the same start times as the core for
FIFO, FIFO-skip and DRF (tests/lab01/ext); backfill differs by design (the
core applies only EASY's first condition). Time in s, CPU milli-cores, memory MiB.
"""

from __future__ import annotations

import copy
import heapq
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from lab01_cluster_sim.cluster import ClusterState, Request
from lab01_cluster_sim.disciplines.drf import dominant_share, drf_pick_tenant
from lab01_cluster_sim.disciplines.fairness import jain_index
from lab01_cluster_sim.disciplines.preemption import (
    CheckpointSpec,
    VictimCandidate,
    choose_victims,
    last_checkpoint,
)
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.model import MILLI_PER_GPU, Job, JobState, Node

DISCIPLINES = ("fifo", "fifo-skip", "priority", "drf", "backfill")
"""Names accepted by :class:`Runner`."""

Allocation = tuple[tuple[int, tuple[int, ...]], ...]
"""One ``(node index, GPU indices)`` per worker."""


@dataclass
class JobRun:
    """Mutable run state of one job inside :class:`Runner`.

    ``progress_s`` is useful work done (s at full speed) at the start of the current
    segment; a segment first pays ``overhead_s`` (restore, checkpoint) and then makes
    progress at ``1 / slowdown`` per second.
    """

    job: Job
    spec: CheckpointSpec
    progress_s: float = 0.0
    first_start: float | None = None
    seg_start: float | None = None
    overhead_s: float = 0.0
    slowdown: float = 1.0
    alloc: Allocation = ()
    end_time: float | None = None
    token: int = 0
    preemptions: int = 0
    migrations: int = 0
    lost_s: float = 0.0
    state: JobState = JobState.PENDING
    reason: str = ""
    pending_overhead_s: float = 0.0

    def progress_at(self, now: float) -> float:
        """Useful work done by ``now`` (s at full speed), at most the job's duration."""
        if self.seg_start is None:
            return self.progress_s
        run = max(0.0, now - self.seg_start - self.overhead_s) / self.slowdown
        return min(self.job.duration, self.progress_s + run)

    def remaining_wall(self, overhead: float | None = None) -> float:
        """Wall time still needed from a fresh segment start."""
        o = self.pending_overhead_s if overhead is None else overhead
        return o + (self.job.duration - self.progress_s) * self.slowdown


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
        end_time: time of the last event, s.
        total_gpus: physical GPUs of the cluster.
        busy_milli_s: integral of allocated milli-GPU over time.
        timeline: rows ``(time, allocated GPUs, pending jobs, running jobs)`` at each event batch.
        samples: whatever the ``observer`` returned at each event batch.
    """

    discipline: str
    outcomes: list[JobOutcome]
    end_time: float
    start_time: float
    total_gpus: int
    busy_milli_s: float
    timeline: list[tuple[float, float, int, int]] = field(default_factory=list)
    samples: list = field(default_factory=list)

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

    def summary(self) -> dict[str, float]:
        """The trilemma numbers: mean and p99 wait (s), utilisation, Jain's index over tenants, ...

        utilisation = allocated GPU-seconds / (GPUs x (end - start)); allocated time includes
        work later lost to preemption and restore overheads, so priority with preemption can
        show more "utilisation" for the same useful work.
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
            "lost_gpu_hours": sum(o.lost_gpu_s for o in self.outcomes) / 3600.0,
            "preemptions": float(sum(o.preemptions for o in self.outcomes)),
            "completed": float(states.count(JobState.COMPLETED)),
            "pending": float(states.count(JobState.PENDING)),
            "running": float(states.count(JobState.RUNNING)),
            "rejected": float(states.count(JobState.REJECTED)),
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


def clone_state(state: ClusterState) -> ClusterState:
    """A copy of ``state`` whose free-resource arrays can change independently."""
    c = copy.copy(state)
    c.gpu_free = state.gpu_free.copy()
    c.cpu_free = state.cpu_free.copy()
    c.mem_free = state.mem_free.copy()
    return c


def pick_gpus_best_fit(state: ClusterState, node: int, request: Request) -> tuple[int, ...]:
    """GPUs of ``node`` for ``request``: whole GPUs in index order, a share on the fullest GPU that fits."""
    free = state.gpu_free[node, : state.gpu_count[node]]
    if request.num_gpus == 0:
        return ()
    ok = np.flatnonzero(free >= request.gpu_milli)
    if request.gpu_milli < MILLI_PER_GPU:
        ok = ok[np.argsort(free[ok], kind="stable")]
    return tuple(int(g) for g in ok[: request.num_gpus])


def place_gang(state: ClusterState, job: Job, mask: np.ndarray | None = None,
               bind: bool = False) -> Allocation | None:
    """Best-fit, all-or-nothing placement of every worker of ``job``.

    Each worker goes to the feasible node (``mask`` restricts them) with the least free
    milli-GPU (then least free CPU, then lowest ``tie_rank``). ``state`` is left as it
    was unless ``bind`` is True and the whole gang fits.
    """
    req = Request.of_worker(job)
    placed: list[tuple[int, tuple[int, ...]]] = []
    for _ in range(job.workers):
        ok = state.feasible(req)
        if mask is not None:
            ok &= mask
        cand = np.flatnonzero(ok)
        if cand.size == 0:
            break
        if cand.size > 1:
            idle = state.gpu_free[cand].sum(axis=1)
            order = np.lexsort((state.tie_rank[cand], state.cpu_free[cand], idle))
            node = int(cand[order[0]])
        else:
            node = int(cand[0])
        gpus = pick_gpus_best_fit(state, node, req)
        state.bind(node, gpus, req)
        placed.append((node, gpus))
    complete = len(placed) == job.workers
    if not (complete and bind):
        for node, gpus in reversed(placed):
            state.release(node, gpus, req)
    return tuple(placed) if complete else None


class Runner:
    """Run ``jobs`` on ``nodes`` under one queue discipline.

    Args:
        nodes: the cluster.
        jobs: the workload (ids unique).
        discipline: one of :data:`DISCIPLINES`.
        checkpoints: job id -> :class:`CheckpointSpec` (default ``default_checkpoint``).
        default_checkpoint: used for jobs not in ``checkpoints``.
        placer: ``placer(runner, job, now) -> Allocation | None``, must not change the
            state (default: :func:`place_gang` with ``node_filter``'s mask).
        node_filter: ``node_filter(runner, job) -> bool mask (N,) | None`` (taints,
            nodeSelector, shape-aware admission...).
        speed: ``speed(runner, job, alloc) -> slowdown >= 1`` for the job's run there.
        observer: called after each event batch; its return values are kept in ``samples``.
        on_blocked: called after scheduling when jobs are still pending (defragmentation).
        until: stop at this time (jobs then running stay RUNNING).
        rerate: re-evaluate ``speed`` for running jobs whenever a job starts on or leaves
            one of their GPUs (contention that follows the neighbours, e.g. time-slicing),
            instead of fixing each job's speed when it starts.

    Raises:
        InputError: unknown discipline, duplicate job ids.
    """

    def __init__(self, nodes: Sequence[Node], jobs: Sequence[Job], discipline: str = "fifo-skip", *,
                 checkpoints: Mapping[str, CheckpointSpec] | None = None,
                 default_checkpoint: CheckpointSpec = CheckpointSpec(),
                 placer: Placer | None = None, node_filter: NodeFilter | None = None,
                 speed: Speed | None = None, observer: Observer | None = None,
                 on_blocked: BlockedHook | None = None, until: float = math.inf, rerate: bool = False) -> None:
        if discipline not in DISCIPLINES:
            raise InputError(f"unknown discipline {discipline!r}; expected one of: {', '.join(DISCIPLINES)}")
        self.discipline = discipline
        self.state = ClusterState(nodes)
        self.nodes = self.state.nodes
        ids = [j.job_id for j in jobs]
        if len(set(ids)) != len(ids):
            dup = next(i for i in ids if ids.count(i) > 1)
            raise InputError(f"duplicate job id {dup!r}")
        checkpoints = checkpoints or {}
        self.runs: dict[str, JobRun] = {j.job_id: JobRun(j, checkpoints.get(j.job_id, default_checkpoint))
                                        for j in jobs}
        self._order = ids
        self._rank = {job_id: i for i, job_id in enumerate(ids)}
        self.placer = placer
        self.node_filter = node_filter
        self.speed = speed
        self.observer = observer
        self.on_blocked = on_blocked
        self.until = until
        self.pending: list[str] = []          # in arrival order (re-queued jobs go back by submit time)
        self.running: dict[str, JobRun] = {}
        self.now = 0.0
        self._events: list[tuple[float, int, int, str, int]] = []
        self._seq = 0
        self._allocated_milli = 0
        self._busy = 0.0
        self._last_t: float | None = None
        self.capacity = np.array([self.state.total_gpus, int(self.state.cpu_capacity.sum()),
                                  int(self.state.mem_capacity.sum())], dtype=float)
        self.tenant_usage: dict[str, list[float]] = {}
        self._failed: set[tuple] = set()
        self.rerate = rerate
        self._touched: set[tuple[int, int]] = set()
        for j in jobs:
            self._push(j.submit_time, 1, j.job_id, 0)

    # -- event plumbing ------------------------------------------------------------------
    def _push(self, t: float, kind: int, job_id: str, token: int) -> None:
        # kind 0 = finish, 1 = arrival, 2 = wake-up: finishes at the same instant are handled first
        self._seq += 1
        heapq.heappush(self._events, (t, kind, self._seq, job_id, token))

    def wake_at(self, t: float) -> None:
        """Ask for a scheduling pass at time ``t`` (e.g. when a bounded wait runs out)."""
        if t > self.now:
            self._push(t, 2, "", 0)

    def _advance(self, t: float) -> None:
        if self._last_t is not None:
            self._busy += self._allocated_milli * (t - self._last_t)
        self._last_t = t
        self.now = t

    # -- placement ------------------------------------------------------------------------
    def mask_for(self, job: Job) -> np.ndarray | None:
        """The node mask of ``node_filter`` for ``job`` (None = all nodes)."""
        return None if self.node_filter is None else self.node_filter(self, job)

    def try_place(self, job: Job, state: ClusterState | None = None) -> Allocation | None:
        """Where ``job`` would go now (state unchanged), or None.

        With the default placement, a shape (worker request, workers, node mask) that found
        no room is remembered until resources are released: binds only take resources, so
        later jobs of the same shape are skipped without work (as the core scheduler does).
        """
        if state is not None:
            return place_gang(state, job, self.mask_for(job))
        if self.placer is not None:
            return self.placer(self, job, self.now)
        mask = self.mask_for(job)
        key = (Request.of_worker(job), job.workers, None if mask is None else mask.tobytes())
        if key in self._failed:
            return None
        alloc = place_gang(self.state, job, mask)
        if alloc is None:
            self._failed.add(key)
        return alloc

    def start(self, job_id: str, alloc: Allocation) -> None:
        """Bind ``alloc`` and start (or resume) the job now."""
        run = self.runs[job_id]
        req = Request.of_worker(run.job)
        for node, gpus in alloc:
            self.state.bind(node, gpus, req)
        run.alloc = alloc
        if self.rerate:
            self._touched.update((node, g) for node, gpus in alloc for g in gpus)
        run.slowdown = 1.0 if self.speed is None else max(1.0, float(self.speed(self, run.job, alloc)))
        run.seg_start = self.now
        run.overhead_s = run.pending_overhead_s
        run.pending_overhead_s = 0.0
        if run.first_start is None:
            run.first_start = self.now
        run.state = JobState.RUNNING
        run.token += 1
        run.end_time = self.now + run.remaining_wall(run.overhead_s)
        self.running[job_id] = run
        if job_id in self.pending:
            self.pending.remove(job_id)
        self._allocated_milli += run.job.gpu_milli_total
        self._add_usage(run.job, +1)
        self._push(run.end_time, 0, job_id, run.token)

    def _add_usage(self, job: Job, sign: int) -> None:
        u = self.tenant_usage.setdefault(job.tenant, [0.0, 0.0, 0.0])
        u[0] += sign * job.gpu_milli_total / MILLI_PER_GPU
        u[1] += sign * job.workers * job.cpu_milli
        u[2] += sign * job.workers * job.memory_mib

    def _free(self, run: JobRun) -> None:
        self._failed.clear()
        if self.rerate:
            self._touched.update((node, g) for node, gpus in run.alloc for g in gpus)
        req = Request.of_worker(run.job)
        for node, gpus in run.alloc:
            self.state.release(node, gpus, req)
        self._allocated_milli -= run.job.gpu_milli_total
        self._add_usage(run.job, -1)
        run.alloc = ()
        del self.running[run.job.job_id]

    def stop(self, job_id: str, extra_overhead_s: float = 0.0, *, migration: bool = False) -> float:
        """Preempt (or, with ``migration``, checkpoint and move) a running job now.

        The job keeps the progress of its last checkpoint, loses what it did since, goes
        back to the pending queue (by submit time) and will pay its restore overhead
        (+ ``extra_overhead_s``) when it runs again. Returns the GPU-seconds lost.
        """
        run = self.runs[job_id]
        progress = run.progress_at(self.now)
        kept = last_checkpoint(progress, run.spec)
        lost = progress - kept
        gpus = run.job.gpu_milli_total / MILLI_PER_GPU
        self._free(run)
        run.progress_s = kept
        run.seg_start = None
        run.end_time = None
        run.token += 1
        run.lost_s += lost * gpus
        run.pending_overhead_s = run.spec.restore_s + extra_overhead_s
        if migration:
            run.migrations += 1
        else:
            run.preemptions += 1
        run.state = JobState.PENDING
        self._enqueue(job_id)
        return lost * gpus

    def _rerate_touched(self) -> None:
        """Give running jobs on GPUs whose occupants changed their new speed (``rerate``)."""
        touched, self._touched = self._touched, set()
        if not touched or self.speed is None:
            return
        for run in list(self.running.values()):
            if not any((node, g) in touched for node, gpus in run.alloc for g in gpus):
                continue
            new = max(1.0, float(self.speed(self, run.job, run.alloc)))
            if new == run.slowdown:
                continue
            progress = run.progress_at(self.now)
            left_overhead = max(0.0, run.overhead_s - (self.now - run.seg_start))
            run.progress_s = progress
            run.seg_start = self.now
            run.overhead_s = left_overhead
            run.slowdown = new
            run.token += 1
            run.end_time = self.now + left_overhead + (run.job.duration - progress) * new
            self._push(run.end_time, 0, run.job.job_id, run.token)

    def _enqueue(self, job_id: str) -> None:
        key = (self.runs[job_id].job.submit_time, self._rank[job_id])
        i = 0
        while i < len(self.pending):
            other = self.runs[self.pending[i]].job
            if (other.submit_time, self._rank[other.job_id]) > key:
                break
            i += 1
        self.pending.insert(i, job_id)

    # -- disciplines --------------------------------------------------------------------------
    def _schedule(self) -> None:
        getattr(self, "_schedule_" + self.discipline.replace("-", "_"))()

    def _schedule_fifo(self) -> None:
        while self.pending:
            alloc = self.try_place(self.runs[self.pending[0]].job)
            if alloc is None:
                return
            self.start(self.pending[0], alloc)

    def _schedule_fifo_skip(self) -> None:
        for job_id in list(self.pending):
            alloc = self.try_place(self.runs[job_id].job)
            if alloc is not None:
                self.start(job_id, alloc)

    def _schedule_priority(self) -> None:
        order = sorted(self.pending, key=lambda i: (-self.runs[i].job.priority, self.runs[i].job.submit_time,
                                                    self._rank[i]))
        for job_id in order:
            job = self.runs[job_id].job
            alloc = self.try_place(job)
            if alloc is None:
                victims = self._victims_for(job)
                if victims:
                    for v in victims:
                        self.stop(v)
                    alloc = self.try_place(job)
            if alloc is not None:
                self.start(job_id, alloc)

    def _victims_for(self, job: Job) -> list[str] | None:
        cands = []
        for rid, run in sorted(self.running.items()):
            if run.job.priority < job.priority:
                progress = run.progress_at(self.now)
                cands.append(VictimCandidate(rid, run.job.priority, run.job.gpu_milli_total / MILLI_PER_GPU,
                                             progress - last_checkpoint(progress, run.spec)))
        if not cands:
            return None

        def enough(ids: Sequence[str]) -> bool:
            trial = clone_state(self.state)
            for rid in ids:
                r = self.runs[rid]
                req = Request.of_worker(r.job)
                for node, gpus in r.alloc:
                    trial.release(node, gpus, req)
            return place_gang(trial, job, self.mask_for(job)) is not None

        return choose_victims(cands, enough)

    def _schedule_drf(self) -> None:
        blocked: set[str] = set()
        while True:
            by_tenant: dict[str, str] = {}
            for job_id in self.pending:
                if job_id not in blocked:
                    by_tenant.setdefault(self.runs[job_id].job.tenant, job_id)
            tenant = drf_pick_tenant(self.tenant_usage, self.capacity, sorted(by_tenant))
            if tenant is None:
                return
            job_id = by_tenant[tenant]
            alloc = self.try_place(self.runs[job_id].job)
            if alloc is None:
                blocked.add(job_id)
            else:
                self.start(job_id, alloc)

    def dominant_shares(self) -> dict[str, float]:
        """Tenant -> current dominant share over (GPUs, CPU, memory) of the running jobs."""
        return {t: dominant_share(u, self.capacity) for t, u in sorted(self.tenant_usage.items())}

    def reservation_time(self, job: Job) -> float:
        """EASY's shadow time: the earliest expected end of running jobs after which ``job`` fits (inf if never)."""
        trial = clone_state(self.state)
        mask = self.mask_for(job)
        if place_gang(trial, job, mask) is not None:
            return self.now
        need = job.gpu_milli_total
        free = int(trial.gpu_free.sum())
        for run in sorted(self.running.values(), key=lambda r: (r.end_time, r.job.job_id)):
            req = Request.of_worker(run.job)
            for node, gpus in run.alloc:
                trial.release(node, gpus, req)
            free += run.job.gpu_milli_total
            # the placement test is the costly part: only once enough GPUs are free in total
            if free >= need and place_gang(trial, job, mask) is not None:
                return float(run.end_time)
        return math.inf

    def _schedule_backfill(self) -> None:
        self._schedule_fifo()
        if not self.pending:
            return
        head = self.runs[self.pending[0]].job
        shadow = self.reservation_time(head)
        for job_id in list(self.pending[1:]):
            run = self.runs[job_id]
            alloc = self.try_place(run.job)
            if alloc is None:
                continue
            if self.now + run.remaining_wall() <= shadow or self._keeps_reservation(run, alloc, head, shadow):
                self.start(job_id, alloc)

    def _keeps_reservation(self, cand: JobRun, alloc: Allocation, head: Job, shadow: float) -> bool:
        if math.isinf(shadow):
            return True
        trial = clone_state(self.state)
        req = Request.of_worker(cand.job)
        for node, gpus in alloc:
            trial.bind(node, gpus, req)
        for run in self.running.values():
            if run.end_time <= shadow:
                r = Request.of_worker(run.job)
                for node, gpus in run.alloc:
                    trial.release(node, gpus, r)
        return place_gang(trial, head, self.mask_for(head)) is not None

    # -- main loop ------------------------------------------------------------------------------
    def _arrive(self, job_id: str) -> None:
        run = self.runs[job_id]
        job = run.job
        req = Request.of_worker(job)
        fits_empty = self.state.fits_empty(req)
        mask = self.mask_for(job)
        if mask is not None:
            fits_empty = fits_empty & mask
        if job.workers > 1 and req.num_gpus > 0:
            slots = (self.state.gpu_count[fits_empty] // req.num_gpus).sum()
            if slots < job.workers:
                run.state = JobState.REJECTED
                run.reason = f"needs {job.workers} workers of {req.num_gpus} GPUs; the cluster can never hold them"
                return
        if not fits_empty.any():
            run.state = JobState.REJECTED
            run.reason = "no node can ever hold one worker (GPUs, model, CPU, memory or node filter)"
            return
        self._enqueue(job_id)

    def run(self) -> RunnerResult:
        """Run to the end (or ``until``) and return the result."""
        start = min((r.job.submit_time for r in self.runs.values()), default=0.0)
        timeline: list[tuple[float, float, int, int]] = []
        samples: list = []
        while self._events and self._events[0][0] <= self.until:
            t = self._events[0][0]
            self._advance(t)
            while self._events and self._events[0][0] == t:
                _, kind, _, job_id, token = heapq.heappop(self._events)
                if kind == 2:
                    continue
                run = self.runs[job_id]
                if kind == 1:
                    self._arrive(job_id)
                elif token == run.token and run.state is JobState.RUNNING:
                    run.progress_s = run.job.duration
                    self._free(run)
                    run.state = JobState.COMPLETED
            self._schedule()
            if self.pending and self.on_blocked is not None:
                self.on_blocked(self, t)
            if self.rerate:
                self._rerate_touched()
            timeline.append((t, self._allocated_milli / MILLI_PER_GPU, len(self.pending), len(self.running)))
            if self.observer is not None:
                samples.append(self.observer(self, t))
        end = self.now if math.isinf(self.until) else max(self.now, min(self.until, self.now))
        self._advance(end)
        outcomes = []
        for job_id in self._order:
            run = self.runs[job_id]
            j = run.job
            outcomes.append(JobOutcome(
                job_id, j.tenant, run.state, j.submit_time, run.first_start,
                run.end_time if run.state is JobState.COMPLETED else None,
                j.gpu_milli_total / MILLI_PER_GPU, j.duration, run.preemptions, run.migrations,
                run.lost_s, run.slowdown, run.reason))
        return RunnerResult(self.discipline, outcomes, end, start, self.state.total_gpus, self._busy,
                            timeline, samples)


def run_discipline(nodes: Sequence[Node], jobs: Sequence[Job], discipline: str, **kwargs) -> RunnerResult:
    """Convenience: ``Runner(nodes, jobs, discipline, **kwargs).run()``."""
    return Runner(nodes, jobs, discipline, **kwargs).run()
