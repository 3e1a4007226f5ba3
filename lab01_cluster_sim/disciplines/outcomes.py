"""Per-job outcomes and the trilemma numbers of a run: an observer plugin of the engine.

Register :class:`OutcomeRecorder` with a :class:`~lab01_cluster_sim.simulate.Simulation`, run
it, then read :meth:`OutcomeRecorder.result`: one :class:`JobOutcome` per job and
:meth:`Outcomes.summary`, the three corners of the scheduling trilemma (mean and p99 wait,
GPU utilisation, Jain's fairness index over the tenants) with the work lost to preemption::

    recorder = OutcomeRecorder()
    sim = Simulation(nodes, jobs, MostAllocated(), "gang", "priority",
                     plugins=[Checkpoints(default=spec), recorder])
    sim.run()
    recorder.result().summary()["p99_wait_s"]

The recorder asks for a scheduling cycle at every instant a job is rejected, so that each
instant with events ends in one sample. An ``observer(sim, now)`` callable, if given, is called
after each cycle and its values kept in :attr:`Outcomes.samples` (stranded GPUs, allocation).

Time in s, CPU milli-cores, memory MiB, GPU share milli-GPU (1000 = one GPU).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lab01_cluster_sim.disciplines.fairness import jain_index
from lab01_cluster_sim.model import MILLI_PER_GPU, JobState

__all__ = ["JobOutcome", "OutcomeRecorder", "Outcomes"]


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
class Outcomes:
    """What an :class:`OutcomeRecorder` saw.

    Attributes:
        discipline: the queue discipline's name.
        outcomes: one :class:`JobOutcome` per job, in input order.
        end_time: time of the last scheduling cycle, s.
        start_time: first submission, s.
        total_gpus: physical GPUs of the cluster.
        busy_milli_s: integral of allocated milli-GPU over time.
        timeline: rows ``(time, allocated GPUs, pending jobs, running jobs)`` at each cycle.
        samples: whatever the ``observer`` returned at each cycle.
        share_seconds: tenant -> integral over time of its dominant share.
        backlog_jain: time-averaged Jain's index over the dominant shares of the tenants
            with work waiting (NaN if two never waited at once).
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


class OutcomeRecorder:
    """Engine plugin (observer hooks and ``sample``): busy GPU time, per-tenant dominant
    shares, the timeline rows and the observer's samples, at each scheduling cycle.

    Args:
        observer: ``observer(sim, now) -> value``, called after each cycle (optional).
    """

    name = "outcomes"

    def __init__(self, observer: Callable[[Any, float], object] | None = None) -> None:
        self.observer = observer
        self.sim: Any = None
        self.capacity = np.zeros(3)
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

    def attach(self, sim) -> None:
        self.sim = sim
        state = sim.state
        self.capacity = np.array([state.total_gpus, int(state.cpu_capacity.sum()), int(state.mem_capacity.sum())],
                                 dtype=float)

    def _advance(self, now: float) -> None:
        if self.last is not None and now > self.last:
            dt = now - self.last
            self.busy += self.allocated * dt
            cap = self.capacity
            for tenant, u in self.usage.items():
                share = float(np.max(np.divide(u, cap, out=np.zeros(3), where=cap > 0)))
                self.share_seconds[tenant] = self.share_seconds.get(tenant, 0.0) + share * dt
        self.last = now

    def _hold(self, record, request, sign: int) -> None:
        u = self.usage.setdefault(record.job.tenant, np.zeros(3))
        u += sign * np.array([request.num_gpus * request.gpu_milli / MILLI_PER_GPU, request.cpu_milli,
                              request.memory_mib], dtype=float)

    def on_bind(self, record, placement, request) -> None:
        self._advance(self.sim.now)
        self.allocated += len(placement.gpus) * request.gpu_milli
        self._hold(record, request, 1)

    def on_release(self, record, placement, request) -> None:
        self._advance(self.sim.now)
        self.allocated -= len(placement.gpus) * request.gpu_milli
        self._hold(record, request, -1)

    def on_reject(self, record) -> None:
        self.sim.request_pass()   # a cycle (and a sample) at every instant with events

    def sample(self, sim, now: float) -> None:
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
            cap = self.capacity
            shares = [float(np.max(np.divide(self.usage.get(t, np.zeros(3)), cap, out=np.zeros(3), where=cap > 0)))
                      for t in sorted(waiting)]
            self.backlog_since = (now, jain_index(shares))
        row = (now, self.allocated / MILLI_PER_GPU, len(sim.scheduler.discipline), len(sim.scheduler.running))
        value = self.observer(sim, now) if self.observer is not None else None
        if self.timeline and self.timeline[-1][0] == now:   # several cycles at one instant: keep the last
            self.timeline[-1] = row
            if self.observer is not None:
                self.samples[-1] = value
        else:
            self.timeline.append(row)
            if self.observer is not None:
                self.samples.append(value)

    def result(self) -> Outcomes:
        """The outcomes once the simulation has run (jobs in input order).

        Raises:
            ValueError: the recorder was never attached to a run.
        """
        sim = self.sim
        if sim is None:
            raise ValueError("OutcomeRecorder.result(): add the recorder to a Simulation and run it first")
        records = list(sim.records.values())
        start = min((r.job.submit_time for r in records), default=0.0)
        end = self.timeline[-1][0] if self.timeline else start
        self._advance(end)
        outcomes = [JobOutcome(r.job_id, r.job.tenant, r.state, r.job.submit_time, r.start_time,
                               r.end_time if r.state is JobState.COMPLETED else None,
                               r.job.gpu_milli_total / MILLI_PER_GPU, r.job.duration, r.preemptions, r.migrations,
                               r.lost_gpu_s, r.slowdown, r.reason or "")
                    for r in records]
        backlog = self.backlog_weighted / self.backlog_time if self.backlog_time > 0 else float("nan")
        return Outcomes(getattr(sim.discipline, "name", type(sim.discipline).__name__), outcomes, end, start,
                        sim.state.total_gpus, self.busy, self.timeline, self.samples, dict(self.share_seconds),
                        backlog)
