"""Timed-mode simulation: jobs arrive, wait, run for their duration, complete.

:func:`simulate` is the entry point; :class:`Simulation` is the object it builds, for
extensions that need to reach inside a run. The flow of one run::

    arrival event ──> rejected on the spot if it can never fit (UnschedulableAndUnresolvable)
                 └──> queue (QueueDiscipline) ──> scheduling pass at the end of the instant
                        ──> filter / score (policy) / permit (gang) / bind  ──> running
    completion event ──> release ──> scheduling pass ...

Events at the same instant run in the engine's priority order (completions, then
preemptions, then arrivals, then timers, then one scheduling pass, see
:mod:`lab01_cluster_sim.engine`); metrics are sampled after each pass.

Extension points (for H3's queue disciplines, preemption and autoscaler; all cheap when
unused):

- custom events: ``sim.engine.call_at(t, engine.TIMER, "my-timer", callback)``; a callback
  that changes the queue or the cluster calls :meth:`Simulation.request_pass`.
- eviction / preemption: :meth:`Simulation.evict` releases a running job's resources,
  cancels its completion, records the lost work (``record.lost_work``) and requeues it (or
  rejects it). ``evict_hook(record, now) -> remaining`` lets a checkpoint model decide how
  much run time is left (default: all of ``job.duration``, i.e. restart from scratch).
- node up/down: :meth:`Simulation.node_down` (cordon + evict its jobs) and
  :meth:`Simulation.node_up`; an autoscaler can keep not-yet-launched nodes cordoned.
- observers: ``simulate(..., observers=[...])`` or ``sim.scheduler.add_observer``.
- per-job extra fields: ``Job.extras`` (input) and ``JobRecord.extras`` (run-time).

Determinism: the policy's random draws come from ``numpy.random.default_rng(seed)``; every
ordering is by time, priority and insertion order. Same inputs and seed give the same result.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lab01_cluster_sim import engine as eng
from lab01_cluster_sim.cluster import ClusterState
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.metrics import MetricsRecorder, Summary, Timeline, summarize
from lab01_cluster_sim.model import Job, JobRecord, JobState, Node, format_seconds
from lab01_cluster_sim.policies.base import PlacementPolicy, make_policy, uses_target
from lab01_cluster_sim.scheduler import (
    MODES,
    UNSCHEDULABLE_AND_UNRESOLVABLE,
    CapacityClasses,
    DeadlockReport,
    QueueDiscipline,
    Scheduler,
    SchedulerObserver,
    get_discipline,
    unresolvable_reason,
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


class Simulation:
    """One timed run, assembled and ready to :meth:`run` (see the module docstring).

    Args: as :func:`simulate`.

    Attributes:
        engine: the event loop. state: the cluster. scheduler: the scheduling cycle.
        records: job id -> record. metrics: the recorder. deadlock: report, once found.
    """

    def __init__(self, nodes: Sequence[Node], jobs: Iterable[Job], policy: str | PlacementPolicy = "best-fit",
                 mode: str = "gang", discipline: str | QueueDiscipline = "fifo-skip", seed: int = 0, *,
                 tie_rank: Sequence[int] | None = None, nodes_to_score: int | None = None,
                 target_workload=None, stranded_interval: float | None = None,
                 observers: Sequence[SchedulerObserver] = (), stop_on_deadlock: bool = True,
                 evict_hook: Callable[[JobRecord, float], float] | None = None) -> None:
        if mode not in MODES:
            raise InputError(f"mode: expected one of {', '.join(MODES)}, got {mode!r}")
        if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
            raise InputError(f"seed: expected an integer, got {seed!r}")
        self.seed = int(seed)
        jobs = list(jobs)
        if isinstance(policy, str):
            target = target_workload
            if target is None and uses_target(policy):
                # FGD scores against the target workload M; like the paper, build M from
                # the workload being run (fgd-facts.md sec. 2).
                from lab01_cluster_sim.fragmentation import TargetWorkload
                if not jobs:
                    raise InputError(f"policy {policy!r} needs a target workload, built from the jobs: got none")
                target = TargetWorkload.from_jobs(jobs)
            self.policy = make_policy(policy, target=target)
        else:
            self.policy = policy
        self.discipline = get_discipline(discipline) if isinstance(discipline, str) else discipline
        self.mode = mode
        self.state = ClusterState(nodes, tie_rank=tie_rank)
        if self.state.num_nodes == 0:
            raise InputError("nodes: expected at least one node, got none")
        self.engine = eng.Engine()
        self.scheduler = Scheduler(self.state, self.policy, self.discipline, mode=mode,
                                   rng=np.random.default_rng(self.seed), nodes_to_score=nodes_to_score)
        self.scheduler.on_start = self._on_start
        self.scheduler.on_evict_request = self.evict
        self.records: dict[str, JobRecord] = {}
        for job in jobs:
            if job.job_id in self.records:
                raise InputError(f"jobs: duplicate job id {job.job_id!r}")
            self.records[job.job_id] = JobRecord(job)
        tracker = None
        if target_workload is not None:
            from lab01_cluster_sim.fragmentation import FragmentationTracker
            tracker = FragmentationTracker(self.state, target_workload)
        self.metrics = MetricsRecorder(self.scheduler, fragmentation=tracker, stranded_interval=stranded_interval)
        for obs in observers:
            self.scheduler.add_observer(obs)
        self.stop_on_deadlock = stop_on_deadlock
        self.evict_hook = evict_hook
        self.deadlock: DeadlockReport | None = None
        self._pass_scheduled = False
        self._completions: dict[str, eng.Event] = {}
        self._unresolvable: dict[tuple, str | None] = {}
        self._classes = CapacityClasses.of(self.state)
        self._arrived = 0
        self.progress: Callable[[int], None] | None = None
        # Arrivals in submit order; equal times keep input order (the heap's sequence number).
        for rec in sorted(self.records.values(), key=lambda r: r.job.submit_time):
            self.engine.call_at(rec.job.submit_time, eng.ARRIVAL, "arrival", self._on_arrival, rec)

    # -- event handlers ----------------------------------------------------------------
    def request_pass(self) -> None:
        """Make sure one scheduling pass runs at the end of the current instant."""
        if not self._pass_scheduled:
            self._pass_scheduled = True
            self.engine.call_at(self.engine.now, eng.SCHEDULE, "schedule", self._on_schedule)

    def _on_arrival(self, event: eng.Event) -> None:
        rec: JobRecord = event.payload
        self._arrived += 1
        rec.reason = "queued, not tried yet"  # the scheduler replaces it when it tries the job
        if self.progress is not None:
            self.progress(self._arrived)
        job = rec.job
        key = (job.gpus_per_worker, job.gpu_milli, job.cpu_milli, job.memory_mib, job.gpu_models, job.workers)
        if key not in self._unresolvable:
            self._unresolvable[key] = unresolvable_reason(self.state, job, self._classes)
        reason = self._unresolvable[key]
        if reason is not None:
            rec.state = JobState.REJECTED
            rec.status = UNSCHEDULABLE_AND_UNRESOLVABLE
            rec.reason = reason
            self.scheduler.notify("on_reject", rec)
            return
        self.scheduler.enqueue(rec)
        self.request_pass()

    def _on_schedule(self, event: eng.Event) -> None:
        self._pass_scheduled = False
        now = self.engine.now
        self.scheduler.run_pass(now)
        if self.mode == "naive" and self.deadlock is None:
            report = self.scheduler.find_deadlock()
            if report is not None:
                self.deadlock = report
                if self.stop_on_deadlock:
                    self.metrics.sample(now)
                    raise eng.StopSimulation("deadlock")
        self.metrics.sample(now)

    def _on_start(self, rec: JobRecord) -> None:
        if math.isfinite(rec.remaining):
            self._completions[rec.job_id] = self.engine.call_at(
                self.engine.now + rec.remaining, eng.COMPLETION, "completion", self._on_completion, rec)

    def _on_completion(self, event: eng.Event) -> None:
        rec: JobRecord = event.payload
        del self._completions[rec.job_id]
        self.scheduler.release_job(rec)
        rec.state = JobState.COMPLETED
        rec.end_time = self.engine.now
        rec.remaining = 0.0
        rec.run_started = None
        self.scheduler.notify("on_finish", rec)
        self.request_pass()

    # -- extension API -----------------------------------------------------------------
    def evict(self, rec: JobRecord, reason: str, requeue: bool = True) -> None:
        """Evict running ``rec`` now: release its resources, cancel its completion, add the
        run time lost to ``rec.lost_work``, then requeue it (or reject it with ``reason``).

        The run time still needed afterwards is ``evict_hook(rec, now)`` if given (e.g. a
        checkpoint model), else the whole ``job.duration`` (restart from scratch).

        Raises:
            ValueError: ``rec`` is not running.
        """
        if rec.state is not JobState.RUNNING:
            raise ValueError(f"evict: job {rec.job_id!r} is {rec.state.value}, not running")
        now = self.engine.now
        event = self._completions.pop(rec.job_id, None)
        if event is not None:
            self.engine.cancel(event)
        ran = now - (rec.run_started if rec.run_started is not None else now)
        before = rec.remaining  # run time that was still needed when this run began
        remaining = self.evict_hook(rec, now) if self.evict_hook else rec.job.duration
        # Work lost = time run minus the progress the job keeps (before - remaining).
        lost = max(0.0, ran - (before - remaining)) if math.isfinite(before) else ran
        self.scheduler.release_job(rec)
        rec.preemptions += 1
        rec.lost_work += lost
        rec.remaining = remaining
        rec.run_started = None
        self.scheduler.notify("on_evict", rec, lost)
        if requeue:
            rec.reason = f"evicted: {reason}"
            self.scheduler.enqueue(rec)
        else:
            rec.state = JobState.REJECTED
            rec.reason = f"evicted and not requeued: {reason}"
            self.scheduler.notify("on_reject", rec)
        self.request_pass()

    def node_down(self, node: int, reason: str = "node down") -> None:
        """Take ``node`` out of service and evict (requeue) every job with a worker on it."""
        self.scheduler.cordon(node)
        for rec in [r for r in self.scheduler.running.values() if any(p.node_index == node for p in r.placements)]:
            self.evict(rec, f"{reason} ({self.state.nodes[node].name})")
        self.request_pass()

    def node_up(self, node: int) -> None:
        """Put ``node`` (back) in service."""
        self.scheduler.uncordon(node)
        self.request_pass()

    # -- run ---------------------------------------------------------------------------
    def run(self, until: float | None = None) -> SimulationResult:
        """Run to the end (or ``until``, s) and return the result.

        Raises:
            InputError: ``until`` is not a positive number.
        """
        if until is not None and not (until > 0):
            raise InputError(f"until: expected a time > 0 s, got {until!r}")
        reason = self.engine.run(until=until)
        end = self.engine.now
        if not self.metrics._t:  # no pass ran (e.g. every job rejected): one sample of the end state
            self.metrics.sample(end)
        for rec in self.records.values():
            if rec.state is JobState.PENDING and rec.status is not None:
                rec.reason = self.scheduler.explain(rec)  # add the per-node summary
            if rec.state is JobState.PENDING and rec.reason is None:
                rec.reason = f"not submitted before the run ended at t={format_seconds(end)}s"
        timeline = self.metrics.timeline()
        return SimulationResult(
            records=self.records,
            summary=summarize(self.records.values(), timeline, end_time=end),
            timeline=timeline,
            deadlock=self.deadlock,
            stop_reason=reason,
            end_time=end,
            policy=getattr(self.policy, "name", type(self.policy).__name__),
            mode=self.mode,
            discipline=getattr(self.discipline, "name", type(self.discipline).__name__),
            seed=self.seed,
            events=self.engine.processed_count,
        )


def simulate(nodes: Sequence[Node], jobs: Iterable[Job], policy: str | PlacementPolicy = "best-fit",
             mode: str = "gang", discipline: str | QueueDiscipline = "fifo-skip", seed: int = 0, *,
             until: float | None = None, tie_rank: Sequence[int] | None = None,
             nodes_to_score: int | None = None, target_workload=None,
             stranded_interval: float | None = None, observers: Sequence[SchedulerObserver] = (),
             stop_on_deadlock: bool = True, progress: bool = False) -> SimulationResult:
    """Run a timed simulation of ``jobs`` on ``nodes`` and return a :class:`SimulationResult`.

    Args:
        nodes: the cluster.
        jobs: the workload (unique ids); each arrives at ``submit_time`` and runs
            ``duration`` seconds once all its workers are bound (``inf``: never completes).
        policy: placement policy name (``first-fit``, ``best-fit``, ``worst-fit``,
            ``random``, ``dot-prod``, ``gpu-packing``, ``gpu-clustering``, ``fgd``) or object.
            FGD by name scores against ``target_workload``, or when that is None against
            the target workload built from ``jobs`` (as the paper builds it from the
            original pod list, fgd-facts.md sec. 2).
        mode: ``"gang"`` (a multi-worker job starts all-or-nothing) or ``"naive"`` (workers
            bound one at a time, round-robin over jobs, partial allocations held).
        discipline: queue discipline name (``"fifo"``: strict head-of-line blocking;
            ``"fifo-skip"``: a blocked job does not block later ones) or object.
        seed: seeds the generator handed to the policy (random choices).
        until: stop at this time, s (None: when no event is left).
        tie_rank: node tie-break order (default: node order).
        nodes_to_score: score at most this many feasible nodes per worker (kube-scheduler's
            ``percentageOfNodesToScore``; None = all; see
            :func:`lab01_cluster_sim.scheduler.adaptive_nodes_to_score`).
        target_workload: a :class:`lab01_cluster_sim.fragmentation.TargetWorkload` to
            track the paper's fragmentation over time (None: not tracked).
        stranded_interval: compute stranded GPUs at most once per this many seconds
            (None: at every sample).
        observers: extra :class:`SchedulerObserver` hooks.
        stop_on_deadlock: naive mode: stop the run when a deadlock is detected (else go on;
            the deadlocked jobs stay pending and holding).
        progress: show a tqdm progress bar of arrivals on stderr (only on a terminal).

    Raises:
        InputError: bad mode, policy, discipline, seed, duplicate job ids or node names,
            an empty cluster, or a bad ``until``.
    """
    sim = Simulation(nodes, jobs, policy, mode, discipline, seed, tie_rank=tie_rank,
                     nodes_to_score=nodes_to_score, target_workload=target_workload,
                     stranded_interval=stranded_interval, observers=observers,
                     stop_on_deadlock=stop_on_deadlock)
    bar = None
    if progress and sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(total=len(sim.records), unit="job", desc=f"{sim.mode} {getattr(sim.policy, 'name', '')}",
                   file=sys.stderr, mininterval=0.5)
        step = max(1, len(sim.records) // 200)

        def tick(arrived: int) -> None:
            if arrived % step == 0:
                bar.update(arrived - bar.n)

        sim.progress = tick
    try:
        result = sim.run(until=until)
    finally:
        if bar is not None:
            bar.update(len(sim.records) - bar.n)
            bar.close()
    return result


__all__ = ["Simulation", "SimulationResult", "simulate"]
