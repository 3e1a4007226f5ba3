"""Metrics of a timed run: time series sampled at events, and per-run summaries.

Time series (one sample per instant at which the scheduler ran, after its pass, so each
sample sees the settled state of that instant; see :class:`MetricsRecorder`):

- **GPU allocation ratio**: allocated milli-GPU / total milli-GPU of the cluster, in [0, 1].
  Kept incrementally from bind/release hooks (O(1) per worker).
- **Stranded GPUs** (:func:`count_stranded_gpus`, exact definition there): fully free GPUs
  that no pending job can use now.
- **Fragmentation** (optional, when a target workload M is given): the paper's F = sum over
  nodes of F_n(M), milli-GPU (Weng et al., ATC'23; pkg/utils/frag.go of
  hkust-adsl/kubernetes-scheduler-simulator), from
  :class:`lab01_cluster_sim.fragmentation.FragmentationTracker`, which recomputes only the
  nodes that changed since the last sample.
- pending and running job counts.

Summaries (:func:`summarize`): queueing delay (start - submit) and job completion time
(JCT = end - submit) of the jobs that got there, with mean, p50 and p99; makespan; the
time-weighted mean allocation ratio; counts per final state and the rejection reasons.
:class:`SimulationResult` holds everything a timed run produced.

Percentiles use numpy's default (linear interpolation between closest ranks): for values
``v_0 <= ... <= v_{n-1}``, pXX is at position ``(n - 1) * XX / 100``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lab01_cluster_sim.cluster import Request
from lab01_cluster_sim.model import MILLI_PER_GPU, JobRecord, JobState, Placement
from lab01_cluster_sim.framework.interface import SchedulerObserver
from lab01_cluster_sim.framework.noderesources import worker_slots
from lab01_cluster_sim.framework.status import DeadlockReport
from lab01_cluster_sim.scheduler import Scheduler


# -- stranded GPUs ------------------------------------------------------------------------
def count_stranded_gpus(full_free: np.ndarray, slots: np.ndarray, gpus_per_worker: np.ndarray,
                        remaining: np.ndarray) -> int:
    """Stranded GPUs: fully free GPUs that no pending job can use now.

    Definition (whole GPUs; partly used GPUs are the fragmentation metric's business). With
    at least one pending job, a fully free GPU on node n is *usable* if some pending job j
    can use it now, which needs both:

    1. j's gang can be gathered now: the cluster has room for all of j's remaining workers,
       ``sum_n slots[j, n] >= remaining[j]`` (a gang that cannot start uses nothing), and
    2. node n hosts some of j's workers: j can use ``min(full_free[n], slots[j, n] * k_j)``
       of n's fully free GPUs, ``k_j`` = GPUs per worker (1 for a shared-GPU worker, which
       may sit on a fully free GPU; 0 for a CPU-only job, which uses no GPU).

    The fully free GPUs of a node are interchangeable, so n has
    ``max_j usable[j, n]`` usable GPUs, and::

        stranded = sum_n (full_free[n] - max_j usable[j, n])

    With no pending job the result is 0: idle GPUs nobody asks for are idle, not stranded.
    "Cannot use" covers every constraint of ``slots``: wrong GPU model, too little CPU or
    memory on the node, too few free GPUs on one node for one worker, a gang that cannot
    gather enough workers.

    Args:
        full_free: int (N,), fully free GPUs per node (online nodes only; 0 elsewhere).
        slots: int (J, N), workers of pending job (or job shape) j that node n can host now
            (:func:`lab01_cluster_sim.framework.noderesources.worker_slots`).
        gpus_per_worker: int (J,), k_j.
        remaining: int (J,), workers of j still to place (all of them in gang mode).

    Returns:
        The number of stranded GPUs, 0..sum(full_free).

    Example: 4 nodes with 3 fully free GPUs each and one pending gang of 2 workers x 4 GPUs:
    slots are 0 everywhere (3 // 4 = 0), the gang cannot be gathered, so all 12 are stranded.

    Learner exercise (Lab 01, metrics): implement the body.
    """
    ### BEGIN SOLUTION
    full_free = np.asarray(full_free, dtype=np.int64)
    slots = np.asarray(slots, dtype=np.int64).reshape(-1, full_free.shape[0])
    if slots.shape[0] == 0:
        return 0
    gatherable = slots.sum(axis=1) >= np.asarray(remaining)
    per_worker = np.asarray(gpus_per_worker, dtype=np.int64)[:, None]
    usable = np.minimum(full_free[None, :], slots * per_worker)
    usable[~gatherable] = 0
    return int((full_free - usable.max(axis=0)).sum())
    ### END SOLUTION


def pareto_minimal_shapes(shapes: Iterable[tuple[Request, int]]) -> list[tuple[Request, int]]:
    """Drop the shapes that cannot change the stranded count.

    Among pending shapes with the same GPUs per worker, share, allowed models and workers
    still to place, one that asks for at least as much CPU *and* memory as another is
    dominated: on every node it fits no more workers, so it can use no GPU the other cannot,
    and its gang gathers only if the other's does. Keeping the Pareto-minimal (CPU, memory)
    shapes of each group therefore leaves :func:`count_stranded_gpus` unchanged, and turns
    thousands of pending shapes (CPU sizes vary continuously) into a handful of rows.
    """
    groups: dict[tuple, list[tuple[int, int, Request]]] = {}
    for request, left in dict.fromkeys(shapes):
        key = (request.num_gpus, request.gpu_milli, request.gpu_models, left)
        groups.setdefault(key, []).append((request.cpu_milli, request.memory_mib, request))
    kept: list[tuple[Request, int]] = []
    for key, items in groups.items():
        items.sort(key=lambda it: (it[0], it[1]))
        best_mem = None
        for cpu, mem, request in items:
            if best_mem is None or mem < best_mem:
                kept.append((request, key[3]))
                best_mem = mem
    return kept


def stranded_gpus(scheduler: Scheduler, pending: Iterable[JobRecord]) -> int:
    """:func:`count_stranded_gpus` for the scheduler's cluster and the given pending jobs.

    Jobs with the same worker request and the same number of workers still to place share
    one row, and dominated shapes are dropped (:func:`pareto_minimal_shapes`), so the cost is
    O(Pareto-minimal pending shapes x N x G) vector work.
    """
    shapes = pareto_minimal_shapes(
        (scheduler.request_of(rec), rec.job.workers - len(rec.placements)) for rec in pending)
    if not shapes or scheduler.state.num_nodes == 0:
        return 0
    st = scheduler.state
    online = scheduler.online
    full_free = np.where(online, scheduler.full_free, 0)
    rows, per_worker, remaining = [], [], []
    for request, left in shapes:
        slots = worker_slots(request, st.cpu_free, st.mem_free, st.gpu_free, scheduler._model_ok(request.gpu_models))
        rows.append(np.where(online, slots, 0))
        per_worker.append(request.num_gpus)
        remaining.append(left)
    return count_stranded_gpus(full_free, np.vstack(rows), np.array(per_worker), np.array(remaining))


# -- time series --------------------------------------------------------------------------
@dataclass
class Timeline:
    """Metric time series, one entry per sample (all arrays have the same length).

    Attributes:
        time: sample times, s, non-decreasing.
        allocation_ratio: allocated / total milli-GPU, in [0, 1].
        stranded_gpus: :func:`count_stranded_gpus` (whole GPUs); -1 where not sampled.
        fragmentation: the paper's cluster fragmentation F, milli-GPU; NaN when no target
            workload was given.
        pending: pending jobs; running: running jobs.
    """

    time: np.ndarray
    allocation_ratio: np.ndarray
    stranded_gpus: np.ndarray
    fragmentation: np.ndarray
    pending: np.ndarray
    running: np.ndarray

    def __len__(self) -> int:
        return int(self.time.shape[0])

    def time_weighted_mean(self, values: np.ndarray, end: float | None = None, start: float | None = None) -> float:
        """Mean of a step function that holds ``values[i]`` from ``time[i]`` to ``time[i+1]``
        (the last one until ``end``, default the last sample time), over [``start``, ``end``]
        (``start`` default: the first sample). NaN with no samples."""
        t = self.time
        if t.size == 0:
            return math.nan
        stop = t[-1] if end is None else end
        first = t[0] if start is None else start
        lo = np.clip(t, first, stop)
        hi = np.clip(np.append(t[1:], stop), first, stop)
        widths = hi - lo
        total = float(widths.sum())
        if total <= 0:
            return float(values[-1])
        return float((values * widths).sum() / total)


class MetricsRecorder(SchedulerObserver):
    """Records the time series of :class:`Timeline` as the run goes.

    Args:
        scheduler: the scheduler to observe (registers itself as an observer).
        fragmentation: a :class:`~lab01_cluster_sim.fragmentation.FragmentationTracker`, or
            None to leave fragmentation out (NaN).
        stranded_interval: compute stranded GPUs at most once per this many simulated
            seconds (None = at every sample). The count needs O(pending shapes x N x G) work,
            the only non-incremental metric, so long runs on big clusters thin it out.
            If :func:`count_stranded_gpus` raises NotImplementedError (the learner's
            edition before that exercise is done), the series is -1 ("not computed") and
            every other metric carries on.
    """

    def __init__(self, scheduler: Scheduler, fragmentation=None, stranded_interval: float | None = None) -> None:
        self.scheduler = scheduler
        self.total_milli = scheduler.state.total_gpus * MILLI_PER_GPU
        self.allocated_milli = scheduler.state.allocated_milli()
        self.fragmentation = fragmentation
        self.stranded_interval = stranded_interval
        self._next_stranded = -math.inf
        self._dirty = True
        self._last_stranded = 0
        self._t: list[float] = []
        self._alloc: list[float] = []
        self._stranded: list[int] = []
        self._frag: list[float] = []
        self._pending: list[int] = []
        self._running: list[int] = []
        scheduler.add_observer(self)

    def capacity_changed(self, removed: np.ndarray) -> None:
        """Nodes were added or removed during the run (node lifecycle plugins): the allocation
        ratio is over the GPUs of the nodes present from now on (``removed`` False)."""
        st = self.scheduler.state
        self.total_milli = int(st.gpu_count[~removed].sum()) * MILLI_PER_GPU
        self._dirty = True

    def on_bind(self, record: JobRecord, placement: Placement, request: Request) -> None:
        self.allocated_milli += len(placement.gpus) * request.gpu_milli
        self._dirty = True

    def on_release(self, record: JobRecord, placement: Placement, request: Request) -> None:
        self.allocated_milli -= len(placement.gpus) * request.gpu_milli
        self._dirty = True

    def on_enqueue(self, record: JobRecord) -> None:
        self._dirty = True

    def sample(self, now: float) -> None:
        """Append one sample at time ``now`` (call after the scheduling pass)."""
        sched = self.scheduler
        self._t.append(now)
        self._alloc.append(self.allocated_milli / self.total_milli if self.total_milli else 0.0)
        if self.stranded_interval is None or now >= self._next_stranded:
            if self._dirty:
                pending = [r for r in sched.discipline.order() if r.state is JobState.PENDING] \
                    if len(sched.discipline) else []
                try:
                    self._last_stranded = stranded_gpus(sched, pending)
                except NotImplementedError:
                    # Student edition before exercise 1B: record "not computed" (-1) and
                    # stop trying, so every other metric still works.
                    self._last_stranded = -1
                    self.stranded_interval = math.inf
                    self._next_stranded = math.inf
                self._dirty = False
            self._stranded.append(self._last_stranded)
            if self.stranded_interval is not None:
                self._next_stranded = now + self.stranded_interval
        else:
            self._stranded.append(-1)
        self._frag.append(self.fragmentation.total() if self.fragmentation is not None else math.nan)
        self._pending.append(len(sched.discipline))
        self._running.append(len(sched.running))

    def timeline(self) -> Timeline:
        """The samples so far as arrays."""
        return Timeline(
            time=np.array(self._t, dtype=float),
            allocation_ratio=np.array(self._alloc, dtype=float),
            stranded_gpus=np.array(self._stranded, dtype=np.int64),
            fragmentation=np.array(self._frag, dtype=float),
            pending=np.array(self._pending, dtype=np.int64),
            running=np.array(self._running, dtype=np.int64),
        )


# -- summaries ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Stats:
    """mean / p50 / p99 / max of a sample of durations, s (NaN when empty)."""

    count: int
    mean: float
    p50: float
    p99: float
    max: float

    @classmethod
    def of(cls, values: Sequence[float]) -> "Stats":
        v = np.asarray(values, dtype=float)
        if v.size == 0:
            return cls(0, math.nan, math.nan, math.nan, math.nan)
        return cls(int(v.size), float(v.mean()), float(np.percentile(v, 50)), float(np.percentile(v, 99)),
                   float(v.max()))


@dataclass(frozen=True)
class Summary:
    """Per-run figures.

    Attributes:
        jobs: number of jobs.
        states: final state name -> count (every job in exactly one).
        wait: queueing delay (first start - submit) of every job that started, s.
        jct: job completion time (end - submit) of completed jobs, s.
        makespan: last completion - first submission, s (NaN if nothing completed).
        mean_allocation_ratio: time-weighted mean of the allocation ratio over the samples.
        arrival_allocation_ratio: the same from the first to the last submission (the busy
            part of a run; the tail after the last arrival only drains the queue).
        peak_stranded_gpus: largest sampled stranded-GPU count.
        mean_stranded_gpus: time-weighted mean over the samples where it was computed.
        rejected: rejection reason -> count.
        waiting: for jobs still pending, reason -> count.
        never_started: jobs that never started (still pending without a start, or
            rejected): ``wait`` does not include them, so a queue where most jobs never
            start is not reported as a short one.
        preemptions: total evictions; lost_work: run time they threw away, s.
    """

    jobs: int
    states: dict[str, int]
    wait: Stats
    jct: Stats
    makespan: float
    mean_allocation_ratio: float
    arrival_allocation_ratio: float
    peak_stranded_gpus: int
    mean_stranded_gpus: float
    rejected: dict[str, int] = field(default_factory=dict)
    waiting: dict[str, int] = field(default_factory=dict)
    preemptions: int = 0
    lost_work: float = 0.0
    never_started: int = 0


def summarize(records: Iterable[JobRecord], timeline: Timeline, end_time: float | None = None) -> Summary:
    """Reduce per-job records and a timeline to a :class:`Summary`.

    Args:
        records: one record per job.
        timeline: the run's samples.
        end_time: end of the run for the time-weighted means (default: last sample).
    """
    records = list(records)
    states = Counter(r.state.value for r in records)
    waits = [r.wait for r in records if r.wait is not None]
    jcts = [r.jct for r in records if r.jct is not None]
    ends = [r.end_time for r in records if r.end_time is not None]
    makespan = (max(ends) - min(r.job.submit_time for r in records)) if ends else math.nan
    sampled = timeline.stranded_gpus >= 0
    if sampled.any():
        sub = Timeline(timeline.time[sampled], timeline.allocation_ratio[sampled], timeline.stranded_gpus[sampled],
                       timeline.fragmentation[sampled], timeline.pending[sampled], timeline.running[sampled])
        mean_stranded = sub.time_weighted_mean(sub.stranded_gpus.astype(float), end_time)
        peak = int(sub.stranded_gpus.max())
    else:
        mean_stranded, peak = math.nan, 0
    return Summary(
        jobs=len(records),
        states={s.value: states.get(s.value, 0) for s in JobState},
        wait=Stats.of(waits),
        jct=Stats.of(jcts),
        makespan=makespan,
        mean_allocation_ratio=timeline.time_weighted_mean(timeline.allocation_ratio, end_time),
        arrival_allocation_ratio=(timeline.time_weighted_mean(
            timeline.allocation_ratio, max(r.job.submit_time for r in records), min(r.job.submit_time for r in records))
            if records else math.nan),
        peak_stranded_gpus=peak,
        mean_stranded_gpus=mean_stranded,
        rejected=dict(Counter(r.reason or "?" for r in records if r.state is JobState.REJECTED)),
        waiting=dict(Counter(r.reason or "not yet tried" for r in records if r.state is JobState.PENDING)),
        preemptions=sum(r.preemptions for r in records),
        lost_work=float(sum(r.lost_work for r in records)),
        never_started=len(records) - len(waits),
    )


@dataclass
class SimulationResult:
    """Everything a timed run produced.

    Attributes:
        records: job id -> :class:`JobRecord`, in input order; every job is in exactly one
            :class:`JobState` (completed, running, pending, rejected with a reason).
        summary: :class:`~lab01_cluster_sim.metrics.Summary` (JCT, waits, makespan, ...).
        timeline: :class:`~lab01_cluster_sim.metrics.Timeline` (allocation ratio, stranded
            GPUs, fragmentation over time).
        deadlock: the naive-mode deadlock report, or None.
        stop_reason: ``"empty"`` (all events done), ``"until"`` or ``"deadlock"``.
        end_time: simulated time when the run ended, s.
        policy, mode, discipline, seed: how it was run.
        events: events processed.
    """

    records: dict[str, JobRecord]
    summary: Summary
    timeline: Timeline
    deadlock: DeadlockReport | None
    stop_reason: str
    end_time: float
    policy: str
    mode: str
    discipline: str
    seed: int
    events: int = 0

    def by_state(self, state: JobState) -> list[JobRecord]:
        """Records in ``state``, in input order."""
        return [r for r in self.records.values() if r.state is state]

    def jobs_table(self) -> list[dict[str, Any]]:
        """One plain dict per job (id, state, submit, start, end, wait, jct, nodes, GPUs, reason).

        Times are in seconds rounded to the millisecond (the engine's sums carry float
        noise such as ``2320.7670000000003``); None where the job has no such time."""
        rows = []
        for r in self.records.values():
            rows.append({
                "job": r.job_id, "state": r.state.value, "submit": _ms(r.job.submit_time),
                "start": _ms(r.start_time), "end": _ms(r.end_time), "wait": _ms(r.wait), "jct": _ms(r.jct),
                "workers": r.job.workers, "gpus": r.job.num_gpus,
                "placements": [f"{p.node}:{','.join(map(str, p.gpus))}"
                               for p in (r.placements or r.last_placements)],
                "reason": r.reason,
            })
        return rows


def _ms(x: float | None) -> float | None:
    return None if x is None else round(x, 3)
