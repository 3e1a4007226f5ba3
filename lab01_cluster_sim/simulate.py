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

This is Lab 01's one engine: every extension is a *plugin* at a named extension point
(:mod:`lab01_cluster_sim.framework.interface`, whose :class:`~lab01_cluster_sim.framework.interface.Plugin` class
documents each point), registered with ``simulate(..., plugins=[...])``; all cheap when
unused. At one instant, in the engine's priority order: node events (a launch becoming ready,
a drain, a spot interruption), completions and time limits, arrivals, plugin timers, then one
scheduling cycle:

1. admission cycle (Kueue-style quota plugins: admit / hold / evict / reject);
2. scheduling pass of the queue discipline; per job: PreFilter (restrict nodes, or "not now"
   with a retry time) -> Filter (resources, model, online, plugin node masks) -> device filter
   (GPUs a job may use) -> Score (the policy) -> Permit (gang all-or-nothing, plugin and
   discipline checks on the trial placement) -> Bind; PostFilter (preemption) on failure;
3. ``after_cycle`` (an autoscaler provisions, the defragmenter migrates);
4. re-rating of the running jobs whose neighbours changed: a job's completion follows its
   progress at a rate set by the progress plugins (slowdown across NVLink islands,
   time-slicing contention; a start delay such as an image pull; a checkpoint restore);
5. metrics and ``sample`` hooks.

Also: :meth:`Simulation.evict` (preemption, migration; the ``checkpoints`` plugin or a legacy
``evict_hook`` decides how much work is kept; evicted jobs keep their place in the queue),
:meth:`Simulation.drain` / :meth:`~Simulation.node_up` / :meth:`~Simulation.add_node` /
:meth:`~Simulation.remove_node` (node lifecycle), :meth:`Simulation.request_pass_at` (a cycle
at a later time), ``Job.time_limit`` (a user's runtime estimate: backfill reserves from it; a
run reaching it is killed, state TIMEOUT), observers (``simulate(..., observers=[...])``),
``Job.extras`` / ``JobRecord.extras`` (per-job fields extensions own).

Determinism: the policy's random draws come from ``numpy.random.default_rng(seed)``; every
ordering is by time, priority and insertion order. Same inputs and seed give the same result.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from lab01_cluster_sim import engine as eng
from lab01_cluster_sim.cluster import ClusterState
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.metrics import MetricsRecorder, SimulationResult, summarize
from lab01_cluster_sim.framework.interface import HOOKS, AdmissionContext, PlacementPolicy, SchedulerObserver, defines
from lab01_cluster_sim.framework.noderesources import CapacityClasses, unresolvable_reason, worker_slots
from lab01_cluster_sim.framework.queue import QueueDiscipline
from lab01_cluster_sim.framework.roles import gangs_of
from lab01_cluster_sim.framework.status import UNSCHEDULABLE_AND_UNRESOLVABLE, DeadlockReport
from lab01_cluster_sim.model import (BACKOFF_LIMIT, MILLI_PER_GPU, Job, JobRecord, JobState, Node, format_seconds,
                                     termination_grace)
from lab01_cluster_sim.registry import get_discipline, policy_for_jobs
from lab01_cluster_sim.scheduler import MODES, Scheduler


BARE_POD_GONE = "a bare Pod is deleted for good (no controller recreates it)"
"""The end of the reason of a bare Pod evicted (:meth:`Simulation.evict`)."""

MAX_CYCLES_PER_INSTANT = 10_000
"""Scheduling cycles allowed at one instant before the run stops with an error: a plugin that
asks for another cycle every time (``after_cycle`` calling ``request_pass`` unconditionally)
would otherwise loop forever without moving the clock."""


class Simulation:
    """One timed run, assembled and ready to :meth:`run` (see the module docstring).

    Args: as :func:`simulate`, plus ``evict_hook`` (legacy checkpoint model, see
    :meth:`evict`) and ``plugins`` (:mod:`lab01_cluster_sim.framework.interface`).

    Attributes:
        engine: the event loop. state: the cluster. scheduler: the scheduling cycle.
        records: job id -> record. metrics: the recorder. deadlock: report, once found.
        plugins: the registered plugins, in registration order.
        removed: bool (N,): nodes taken out of the cluster for good (terminated).
    """

    def __init__(self, nodes: Sequence[Node], jobs: Iterable[Job], policy: str | PlacementPolicy = "best-fit",
                 mode: str = "gang", discipline: str | QueueDiscipline = "fifo-skip", seed: int = 0, *,
                 tie_rank: Sequence[int] | None = None, nodes_to_score: int | None = None,
                 target_workload=None, stranded_interval: float | None = None,
                 observers: Sequence[SchedulerObserver] = (), stop_on_deadlock: bool = True,
                 evict_hook: Callable[[JobRecord, float], float] | None = None,
                 plugins: Sequence[Any] = ()) -> None:
        if mode not in MODES:
            raise InputError(f"mode: expected one of {', '.join(MODES)}, got {mode!r}")
        if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
            raise InputError(f"seed: expected an integer, got {seed!r}")
        self.seed = int(seed)
        jobs = list(jobs)
        if isinstance(policy, str):
            # FGD scores against the target workload M; like the paper, M is built from the
            # workload being run unless given (``GetTypicalPods``, pkg/utils/frag.go).
            self.policy = policy_for_jobs(policy, jobs, target=target_workload)
        else:
            self.policy = policy
        self.discipline = get_discipline(discipline) if isinstance(discipline, str) else discipline
        self.mode = mode
        self.state = ClusterState(nodes, tie_rank=tie_rank)
        if self.state.num_nodes == 0 and not any(defines(p, "could_host") for p in plugins):
            raise InputError("nodes: expected at least one node, got none (an empty cluster needs a "
                             "node-lifecycle plugin, e.g. an autoscaler, to bring nodes)")
        self.engine = eng.Engine()
        self.scheduler = Scheduler(self.state, self.policy, self.discipline, mode=mode,
                                   rng=np.random.default_rng(self.seed), nodes_to_score=nodes_to_score)
        self.scheduler.on_start = self._on_start
        self.scheduler.on_evict_request = self.evict
        self.scheduler.on_retry_at = self.request_pass_at
        self.records: dict[str, JobRecord] = {}
        for job in jobs:
            if job.job_id in self.records:
                raise InputError(f"jobs: duplicate job id {job.job_id!r}")
            self.records[job.job_id] = JobRecord(job)
        self._gangs = gangs_of(self.records.values())
        self.scheduler.has_roles = bool(self._gangs) and mode == "gang"
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
        self.removed = np.zeros(self.state.num_nodes, dtype=bool)
        self.plugins: list[Any] = []
        self._hooks: dict[str, list[Callable]] = {h: [] for h in HOOKS}
        self._started = False
        self._pass_scheduled = False
        self._pass_at: set[float] = set()
        self._cycle_time = -math.inf
        self._cycles = 0
        self._completions: dict[str, eng.Event] = {}
        self._limits: dict[str, eng.Event] = {}
        self._busy: dict[str, eng.Event] = {}
        self._run_before: dict[str, float] = {}
        self._rerate: dict[str, JobRecord] = {}
        self._waiting_admission: dict[str, JobRecord] = {}
        self._admitted: dict[str, JobRecord] = {}
        self._admitted_by: dict[str, set[int]] = {}
        self._admission_seq = 0
        self._unresolvable: dict[tuple, str | None] = {}
        self._static_filters: list[Callable] = []
        self._filtered_cache: dict[tuple, tuple] = {}
        self._classes = CapacityClasses.of(self.state)
        self._arrived = 0
        self.progress: Callable[[int], None] | None = None
        for plugin in plugins:
            self.add_plugin(plugin)
        # Arrivals in submit order; equal times keep input order (the heap's sequence number).
        for rec in sorted(self.records.values(), key=lambda r: r.job.submit_time):
            self.engine.call_at(rec.job.submit_time, eng.ARRIVAL, "arrival", self._on_arrival, rec)

    # -- plugins -----------------------------------------------------------------------
    def add_plugin(self, plugin: Any) -> None:
        """Register ``plugin`` at every extension point its class defines (see
        :mod:`lab01_cluster_sim.framework.interface`), and its observer hooks with the scheduler.

        Raises:
            InputError: the run has started, or ``plugin`` has no ``name``.
        """
        if self._started:
            raise InputError(f"plugin {getattr(plugin, 'name', plugin)!r}: add plugins before run()")
        if not getattr(plugin, "name", ""):
            raise InputError(f"plugin {plugin!r}: expected a non-empty 'name' attribute")
        self.plugins.append(plugin)
        for hook in self._hooks:
            if defines(plugin, hook):
                self._hooks[hook].append(getattr(plugin, hook))
        sched = self.scheduler
        if defines(plugin, "pre_filter"):
            sched.pre_filters.append(lambda rec, req, f=plugin.pre_filter: f(self, rec, req))
        if defines(plugin, "filter"):
            sched.extra_filters.append(plugin.filter)
            if getattr(plugin, "static", False):
                self._static_filters.append(plugin.filter)
        if defines(plugin, "score"):
            sched.scorers.append((int(getattr(plugin, "score_weight", 1)),
                                  lambda req, rec, cand, f=plugin.score: f(self, rec, req, cand)))
        if defines(plugin, "filter_devices"):
            sched.device_filters.append(lambda rec, req, f=plugin.filter_devices: f(self, rec, req))
        if defines(plugin, "permit"):
            sched.permits.append(lambda rec, placed, f=plugin.permit: f(self, rec, placed))
        if defines(plugin, "post_filter"):
            sched.post_filters.append(lambda rec, f=plugin.post_filter: f(self, rec))
        sched.add_observer(plugin)

    def plugin(self, name: str) -> Any:
        """The first registered plugin called ``name``.

        Raises:
            KeyError: none is.
        """
        for p in self.plugins:
            if p.name == name:
                return p
        raise KeyError(name)

    # -- time and cycles ---------------------------------------------------------------
    @property
    def now(self) -> float:
        """The current simulated time, s."""
        return self.engine.now

    def request_pass(self) -> None:
        """Make sure one scheduling cycle runs at the end of the current instant."""
        if not self._pass_scheduled:
            self._pass_scheduled = True
            self.engine.call_at(self.engine.now, eng.SCHEDULE, "schedule", self._on_schedule)

    def request_pass_at(self, t: float) -> None:
        """Make sure a scheduling cycle runs at time ``t`` (s; now if ``t`` is not later)."""
        if t <= self.engine.now:
            self.request_pass()
        elif math.isfinite(t) and t not in self._pass_at:
            self._pass_at.add(t)
            self.engine.call_at(t, eng.TIMER, "wake", self._on_wake, t)

    def _on_wake(self, event: eng.Event) -> None:
        self._pass_at.discard(event.payload)
        self.request_pass()

    def call_at(self, t: float, kind: str, callback: Callable[[eng.Event], None], payload: Any = None,
                priority: eng.EventPriority = eng.TIMER) -> eng.Event:
        """Schedule a plugin's own event (a timer by default) at ``t``; see :meth:`Engine.call_at`."""
        return self.engine.call_at(t, priority, kind, callback, payload)

    def _on_arrival(self, event: eng.Event) -> None:
        rec: JobRecord = event.payload
        role = rec.job.role
        if role is not None:
            # a multi-role gang arrives as a unit, at its first role's event; the others' are no-ops
            members = self._gangs[role.gang]
            if rec is not members[0]:
                return
        else:
            members = [rec]
        reasons = []
        for member in members:
            self._arrived += 1
            member.reason = "queued, not tried yet"  # the scheduler replaces it when it tries the job
            reasons.append(self._never_fits(member))
        if self.progress is not None:
            self.progress(self._arrived)
        failed = next((i for i, r in enumerate(reasons) if r is not None), None)
        if failed is not None:
            for member, reason in zip(members, reasons):
                if role is not None:
                    reason = (f"gang {role.gang}: role {members[failed].job.role.name}: {reasons[failed]}"
                              if reason is None or member is not members[failed] else f"gang {role.gang}: {reason}")
                member.state = JobState.REJECTED
                member.status = UNSCHEDULABLE_AND_UNRESOLVABLE
                member.reason = reason
                self.scheduler.notify("on_reject", member)
            return
        for member in members:
            if self._hooks["admission_cycle"]:
                self._to_admission(member, "waiting for admission")
            else:
                self.scheduler.enqueue(member)
        self.request_pass()

    def _never_fits(self, rec: JobRecord) -> str | None:
        """Why no node could ever host one of ``rec``'s workers (rejected on arrival), or None."""
        job = rec.job
        key = (job.gpus_per_worker, job.gpu_milli, job.cpu_milli, job.memory_mib, job.gpu_models, job.workers)
        if key not in self._unresolvable:
            self._unresolvable[key] = unresolvable_reason(self.state, job, self._classes)
        reason = self._unresolvable[key]
        if reason is None and self._static_filters:
            reason = self._filtered_out(rec)
        if reason is not None and any(h(self, job) for h in self._hooks["could_host"]):
            reason = None   # a node-lifecycle plugin (autoscaler) could bring a node for it
        return reason

    def _filtered_out(self, rec: JobRecord) -> str | None:
        """Why no node the *static* filters (node labels and taints, reserved nodes: plugins
        with ``static = True``) leave to ``rec`` could ever hold it, even empty; None if some
        could. The allowed nodes are grouped by capacity once per combination of filter masks
        (filters cache their masks), so a check costs O(node types)."""
        request = self.scheduler.request_of(rec)
        masks = [f(request, rec) for f in self._static_filters]
        key = tuple(id(m) for m in masks)
        hit = self._filtered_cache.get(key)
        if hit is None:
            allowed = np.ones(self.state.num_nodes, dtype=bool)
            for m in masks:
                allowed &= m
            # keep the masks alive: the key holds their ids. Every node allowed: the capacity
            # check already done on arrival decides alone (None: nothing more to check).
            classes = None if allowed.all() else CapacityClasses.of(self.state, allowed)
            hit = self._filtered_cache[key] = (classes, int((~allowed).sum()), masks, {})
        classes, refused, _, reasons = hit
        if classes is None:
            return None
        # NOTE: speed. The answer depends only on the masks (the key), the worker's request
        # and the gang's size: kept per shape with the masks' entry (cleared with it when a
        # node is added).
        shape = (request, rec.job.workers)
        if shape in reasons:
            return reasons[shape]
        reason = reasons[shape] = self._filtered_reason(rec, request, classes, refused)
        return reason

    def _filtered_reason(self, rec: JobRecord, request, classes: CapacityClasses, refused: int) -> str | None:
        c = classes
        slots = worker_slots(request, c.cpu_capacity, c.mem_capacity, c.gpu_free, c.model_ok(request.gpu_models))
        room = int(np.minimum(np.minimum(slots, rec.job.workers) * c.count, rec.job.workers).sum())
        if room >= rec.job.workers:
            return None
        names = ", ".join(getattr(f, "__self__", f).name for f in self._static_filters)
        if room == 0:
            return (f"no node its filters allow could ever host one worker: {refused}/{self.state.num_nodes} "
                    f"node(s) refused by {names}")
        return (f"gang of {rec.job.workers} workers cannot fit even on the empty cluster within its "
                f"filters ({names}): room for {room} worker(s) of this shape")

    def _on_schedule(self, event: eng.Event) -> None:
        self._pass_scheduled = False
        now = self.engine.now
        if now != self._cycle_time:
            self._cycle_time, self._cycles = now, 0
        self._cycles += 1
        if self._cycles > MAX_CYCLES_PER_INSTANT:
            raise eng.EngineError(f"{MAX_CYCLES_PER_INSTANT} scheduling cycles at t={format_seconds(now)}s: a plugin "
                                  "asks for a new cycle after every cycle (after_cycle -> request_pass)")
        if self._hooks["admission_cycle"]:
            self._admission_cycle(now)
        self.scheduler.run_pass(now)
        if self.mode == "naive" and self.deadlock is None:
            report = self.scheduler.find_deadlock()
            if report is not None:
                self.deadlock = report
                if self.stop_on_deadlock:
                    self.metrics.sample(now)
                    raise eng.StopSimulation("deadlock")
        for hook in self._hooks["after_cycle"]:
            hook(self)
        if self._rerate:
            self._rerate_marked()
        self.metrics.sample(now)
        for hook in self._hooks["sample"]:
            hook(self, now)

    # -- job progress --------------------------------------------------------------------
    def _on_start(self, rec: JobRecord) -> None:
        now = self.engine.now
        rec.rated_at = now
        hooks = self._hooks
        delay = 0.0
        if hooks["start_delay"]:
            delay = float(sum(h(self, rec) for h in hooks["start_delay"]))
            if not delay >= 0:
                raise eng.EngineError(f"job {rec.job_id!r}: start delay must be >= 0 s, got {delay}")
        rec.busy_from = now + delay
        if hooks["slowdown"]:
            rec.slowdown = self._slowdown_of(rec)
            self._run_before[rec.job_id] = rec.remaining
        limit = rec.job.time_limit
        if limit is not None and math.isfinite(limit):
            rec.time_limit_at = now + limit
            self._limits[rec.job_id] = self.engine.call_at(rec.time_limit_at, eng.COMPLETION, "time-limit",
                                                           self._on_time_limit, rec)
        end = rec.expected_end if (delay or rec.slowdown != 1.0) else now + rec.remaining
        if math.isfinite(end):
            self._completions[rec.job_id] = self.engine.call_at(end, eng.COMPLETION, "completion",
                                                                self._on_completion, rec)
        if hooks["affected_by"] or hooks["slowdown"]:
            if delay > 0:
                self._busy[rec.job_id] = self.engine.call_at(rec.busy_from, eng.TIMER, "busy", self._on_busy, rec)
            else:
                self._mark_neighbours(rec)

    def _on_busy(self, event: eng.Event) -> None:
        """A job's start delay is over: it starts computing; it and its neighbours are re-rated."""
        rec: JobRecord = event.payload
        self._busy.pop(rec.job_id, None)
        self.mark_rerate([rec])
        self._mark_neighbours(rec)
        self.request_pass()

    def _mark_neighbours(self, rec: JobRecord) -> None:
        for hook in self._hooks["affected_by"]:
            self.mark_rerate(r for r in hook(self, rec) if r is not rec)

    def _slowdown_of(self, rec: JobRecord) -> float:
        factor = 1.0
        for hook in self._hooks["slowdown"]:
            f = float(hook(self, rec))
            if not f >= 1.0:
                raise eng.EngineError(f"job {rec.job_id!r}: a slowdown must be >= 1, got {f}")
            factor *= f
        return factor

    def mark_rerate(self, records: Iterable[JobRecord]) -> None:
        """Ask for these running jobs' rates to be recomputed at the end of the instant
        (their neighbours changed); non-running records are ignored."""
        for rec in records:
            if rec.state is JobState.RUNNING:
                self._rerate[rec.job_id] = rec
        if self._rerate:
            self.request_pass()

    def _bring_up_to_date(self, rec: JobRecord, now: float) -> float:
        """Move ``rec.remaining`` (and its overhead) to ``now`` at the current rate; return
        the full-speed seconds done since the last rating."""
        done = rec.progress_at(now)
        if done > 0:
            rec.overhead_left = max(0.0, rec.overhead_left - done)
            rec.remaining = max(rec.overhead_left, rec.remaining - done)
        rec.rated_at = now
        return done

    def _rerate_marked(self) -> None:
        now = self.engine.now
        marked = sorted(self._rerate.values(), key=lambda r: r.queue_seq)
        self._rerate.clear()
        for rec in marked:
            if rec.state is not JobState.RUNNING or rec.rated_at is None:
                continue
            new = self._slowdown_of(rec) if self._hooks["slowdown"] else 1.0
            if new == rec.slowdown:
                continue
            self._bring_up_to_date(rec, now)
            rec.slowdown = new
            end = rec.expected_end
            old = self._completions.pop(rec.job_id, None)
            if old is not None:
                self.engine.cancel(old)
            if math.isfinite(end):
                self._completions[rec.job_id] = self.engine.call_at(end, eng.COMPLETION, "completion",
                                                                    self._on_completion, rec)

    def _on_terminated(self, event: eng.Event) -> None:
        """A gracefully terminating job's pods are gone: free what they held."""
        rec, held = event.payload
        self.scheduler.release_terminating(rec, held)
        self.scheduler.notify("on_terminated", rec)
        self.request_pass()

    def _end_run(self, rec: JobRecord, hold: list | None = None) -> list[JobRecord]:
        """Cancel the run's pending events, release its resources (``hold``, a list: keep
        them bound while its pods terminate, :meth:`evict`, and put the placements in it);
        return the neighbours to re-rate (computed before the release)."""
        for table in (self._completions, self._limits, self._busy):
            ev = table.pop(rec.job_id, None)
            if ev is not None and ev.scheduled:
                self.engine.cancel(ev)
        affected: list[JobRecord] = []
        for hook in self._hooks["affected_by"]:
            affected.extend(r for r in hook(self, rec) if r is not rec)
        if hold is not None:
            hold.extend(self.scheduler.hold_terminating(rec))
        else:
            self.scheduler.release_job(rec)
        rec.run_started = rec.rated_at = rec.busy_from = rec.time_limit_at = None
        self._admitted.pop(rec.job_id, None)
        return affected

    def _on_completion(self, event: eng.Event) -> None:
        rec: JobRecord = event.payload
        self._completions.pop(rec.job_id, None)
        affected = self._end_run(rec) if (self._limits or self._hooks["affected_by"] or self._busy
                                          or self._admitted) else None
        if affected is None:
            self.scheduler.release_job(rec)
            rec.run_started = rec.rated_at = rec.busy_from = None
        rec.state = JobState.COMPLETED
        rec.end_time = self.engine.now
        if rec.job.role is not None:
            self.scheduler.role_completed(rec)
        rec.remaining = rec.overhead_left = 0.0
        self._run_before.pop(rec.job_id, None)
        self.scheduler.notify("on_finish", rec)
        if affected:
            self.mark_rerate(affected)
        self.request_pass()

    def _on_time_limit(self, event: eng.Event) -> None:
        rec: JobRecord = event.payload
        self._limits.pop(rec.job_id, None)
        if rec.state is not JobState.RUNNING:
            return
        limit = rec.job.time_limit
        self._bring_up_to_date(rec, self.engine.now)
        affected = self._end_run(rec)
        rec.state = JobState.TIMEOUT
        rec.status = None
        rec.end_time = self.engine.now
        rec.reason = (f"killed at its time limit of {format_seconds(limit)} s with "
                      f"{format_seconds(max(0.0, rec.remaining - rec.overhead_left))} s of work left "
                      "(Slurm's rule: the job ends in state TIMEOUT, not requeued)")
        self._run_before.pop(rec.job_id, None)
        self.scheduler.notify("on_finish", rec)
        self.mark_rerate(affected)
        self.request_pass()

    # -- admission -----------------------------------------------------------------------
    def _to_admission(self, rec: JobRecord, reason: str) -> None:
        rec.state = JobState.PENDING
        rec.status = "Pending"
        rec.reason = reason
        if rec.queue_seq < 0:
            rec.queue_seq = self.scheduler._next_seq
            self.scheduler._next_seq += 1
        self._admitted_by.pop(rec.job_id, None)
        self._waiting_admission[rec.job_id] = rec

    def _admission_cycle(self, now: float) -> None:
        for hook in self._hooks["admission_cycle"]:
            owner = id(hook.__self__)
            waiting = sorted((r for r in self._waiting_admission.values()
                              if owner not in self._admitted_by.get(r.job_id, ())), key=lambda r: r.queue_seq)
            ctx = AdmissionContext(self, now, waiting, list(self._admitted.values()), hook.__self__)
            hook(ctx)

    def _admit(self, rec: JobRecord, plugin: Any) -> None:
        if rec.job_id not in self._waiting_admission:
            raise ValueError(f"admit: job {rec.job_id!r} is not waiting for admission")
        by = self._admitted_by.setdefault(rec.job_id, set())
        by.add(id(plugin))
        if len(by) < len(self._hooks["admission_cycle"]):
            return
        del self._waiting_admission[rec.job_id]
        self._admitted[rec.job_id] = rec
        rec.status = None
        rec.reason = "admitted; queued for placement"
        self.scheduler.enqueue(rec)

    def _unadmit(self, rec: JobRecord, reason: str) -> None:
        """Take an admitted job back to waiting for admission (Kueue's eviction). A running
        job's pods terminate gracefully: its resources stay held for its
        ``terminationGracePeriodSeconds`` (:func:`~lab01_cluster_sim.model.termination_grace`;
        Kueue stops the Job, whose pods get their grace period as any deleted pod does)."""
        if rec.state is JobState.RUNNING:
            self.evict(rec, reason, grace_s=termination_grace(rec.job), readmit=True, grace_cap_s=math.inf)
            return
        if rec.job_id not in self._admitted:
            raise ValueError(f"evict: job {rec.job_id!r} is not admitted")
        self.scheduler.dequeue(rec)
        if rec.placements:
            self.scheduler.release_placements(rec, list(rec.placements))
        del self._admitted[rec.job_id]
        if rec.job.extras.get("kind") == "Pod":   # a bare Pod: Kueue deletes it, nothing recreates it
            rec.state = JobState.REJECTED
            rec.reason = f"evicted from admission: {reason}; {BARE_POD_GONE}"
            self.scheduler.notify("on_evict", rec, 0.0)
            self.scheduler.notify("on_reject", rec)
        else:
            self._to_admission(rec, f"evicted from admission: {reason}")
            self.scheduler.notify("on_evict", rec, 0.0)   # quota bookkeeping hears of it (no work lost)
        self.request_pass()

    def _reject_waiting(self, rec: JobRecord, reason: str) -> None:
        """An admission plugin found that ``rec`` can never be admitted."""
        if self._waiting_admission.pop(rec.job_id, None) is None:
            raise ValueError(f"reject: job {rec.job_id!r} is not waiting for admission")
        rec.state = JobState.REJECTED
        rec.status = UNSCHEDULABLE_AND_UNRESOLVABLE
        rec.reason = reason
        self.scheduler.notify("on_reject", rec)

    @property
    def waiting_admission(self) -> list[JobRecord]:
        """Jobs waiting for admission, in queue order."""
        return sorted(self._waiting_admission.values(), key=lambda r: r.queue_seq)

    # -- eviction and node lifecycle -------------------------------------------------------
    def evict(self, rec: JobRecord, reason: str, requeue: bool = True, *, migration: bool = False,
              extra_overhead_s: float = 0.0, grace_s: float = 0.0, readmit: bool = False,
              grace_cap_s: float | None = None, with_gang: bool = False) -> None:
        """Evict running ``rec`` now: release its resources, cancel its completion, account
        the work lost, then requeue it at its old place (or reject it with ``reason``).

        The run time still needed afterwards: ``evict_hook(rec, now)`` if the simulation has
        one (legacy; it may set ``rec.overhead_left`` to the restore part of what it returns);
        else the first plugin's ``keep_progress`` (checkpoints: the last checkpoint is kept and
        the next run pays a restore); else the whole ``job.duration`` (restart from scratch).
        ``extra_overhead_s`` is added to the next run (a migration's checkpoint write).
        ``grace_s`` > 0 (graceful termination, a pod's ``terminationGracePeriodSeconds``):
        the job stops progressing now but its resources are freed only ``grace_s`` later
        (Kubernetes docs, "Pod Priority and Preemption", "Graceful termination of preemption
        victims": the period "creates a time gap between the point that the scheduler preempts
        Pods and the time when the pending Pod (P) can be scheduled"); the victim is requeued
        at once and may start elsewhere meanwhile. A job whose run would have ended before the
        grace period frees its resources at that natural end instead (its containers exit).
        Evicting a role of a multi-role gang (:class:`~lab01_cluster_sim.model.GangRole`)
        evicts every other running role of the gang with the same reason (Kueue evicts the
        Workload as a whole; a JobSet recreates all its child Jobs), except a migration and
        in naive mode, where roles are independent jobs; each role gets its own pods' grace
        period, at most ``grace_cap_s`` (the eviction's bound: none for a graceful eviction,
        the 2-minute notice of a spot interruption, 0 for a failed node; by default none when
        ``grace_s`` > 0, else 0), whatever the first role's own period.
        ``readmit``: the job goes back to waiting for admission (an admission plugin's own
        eviction, Kueue's); any other eviction (preemption, drain, consolidation, a NoExecute
        taint) keeps the job admitted and requeues it for placement, as Kueue keeps a
        Workload's quota while the Job controller recreates its evicted pods.
        A bare Pod (``job.extras["kind"] == "Pod"``, as the scenario reader marks one) is not
        requeued after any eviction but a migration, Kueue's included: nothing recreates it (a
        PodGroup's Pods alike; Kueue's plain-Pod integration deletes the Pods it stops,
        ``Stop`` in kubernetes-sigs/kueue ``pkg/controller/jobs/pod/pod_controller.go``).
        A job owned by a batch Job (``job.extras[BACKOFF_LIMIT]``,
        :data:`~lab01_cluster_sim.model.BACKOFF_LIMIT`) counts each such requeued eviction as
        one failed pod; past its ``backoffLimit`` it is not requeued (the Job failed), and a
        multi-role gang then fails whole (a JobSet's default failure policy). ``with_gang``: this
        role is evicted only because another role of its gang was (its pods did not fail).
        ``lost_work`` grows by the run time that bought nothing kept; ``lost_gpu_s`` by the
        progress thrown away (since the last checkpoint) x the job's GPUs. A migration counts
        in ``rec.migrations`` instead of ``rec.preemptions``.

        Raises:
            ValueError: ``rec`` is not running.
        """
        if rec.state is not JobState.RUNNING:
            raise ValueError(f"evict: job {rec.job_id!r} is {rec.state.value}, not running")
        now = self.engine.now
        ran = now - (rec.run_started if rec.run_started is not None else now)
        before = self._run_before.pop(rec.job_id, rec.remaining)  # run time still needed when this run began
        duration = rec.job.duration
        finite = math.isfinite(duration)
        done = rec.work_done_at(now) if finite else 0.0
        if self.evict_hook is not None:
            # Legacy hook: sees the record as it is (remaining as of rated_at); it may put the
            # restore part of what it returns in rec.extras["restore_s"].
            remaining = float(self.evict_hook(rec, now))
            overhead = min(float(rec.extras.pop("restore_s", 0.0)), remaining)
            kept = duration - (remaining - overhead) if finite else 0.0
        elif self._hooks["keep_progress"] and finite:
            kept, overhead = self._hooks["keep_progress"][0](self, rec, done)
            kept = min(max(0.0, kept), done)
            remaining = duration - kept + overhead
        else:
            kept, overhead, remaining = 0.0, 0.0, duration
        remaining += extra_overhead_s
        overhead += extra_overhead_s
        # Work lost = time run minus the progress the job keeps (before - remaining).
        lost = max(0.0, ran - (before - remaining)) if math.isfinite(before) else ran
        held = [] if grace_s > 0 and not migration else None
        admitted = rec.job_id in self._admitted   # _end_run forgets it; an eviction Kueue did not decide keeps it
        # A pod that would have finished before its grace period ends exits then (its
        # containers are done), freeing its resources at its natural end.
        natural_end = max(now, rec.expected_end)
        affected = self._end_run(rec, hold=held)
        if held is not None:
            self.engine.call_at(min(now + grace_s, natural_end), eng.COMPLETION, "terminated", self._on_terminated,
                                (rec, held))
        if migration:
            rec.migrations += 1
        else:
            rec.preemptions += 1
        rec.lost_work += lost
        rec.lost_gpu_s += max(0.0, done - kept) * rec.job.gpu_milli_total / MILLI_PER_GPU
        rec.remaining = remaining
        rec.overhead_left = overhead
        self.scheduler.notify("on_evict", rec, lost)
        self.mark_rerate(affected)
        if requeue and not migration and rec.job.extras.get("kind") == "Pod":
            # kube-scheduler, a drain, the taint eviction controller or Kueue (its plain-Pod
            # integration's Stop) deletes the pod, and a bare Pod has no controller to recreate it
            requeue = False
            reason = f"{reason}; {BARE_POD_GONE}"
        limit = rec.job.extras.get(BACKOFF_LIMIT)
        if requeue and not readmit and not migration and not with_gang and limit is not None:
            # a disruption counts as a failed pod of the owning Job (one per eviction here)
            failures = rec.extras["pod_failures"] = rec.extras.get("pod_failures", 0) + 1
            if failures > limit:
                requeue = False
                reason = (f"{reason}; the Job failed: BackoffLimitExceeded ({failures} eviction"
                          f"{'s' * (failures != 1)}, each a failed pod, above its backoffLimit {limit})")
        if requeue:
            if readmit:
                self._admitted.pop(rec.job_id, None)
                self._to_admission(rec, f"evicted: {reason}")
            else:
                if admitted:   # still admitted: a later Kueue preemption must find it queued for placement
                    self._admitted[rec.job_id] = rec
                rec.reason = f"evicted: {reason}"
                self.scheduler.enqueue(rec)
        else:
            rec.state = JobState.REJECTED
            rec.reason = f"evicted and not requeued: {reason}"
            self.scheduler.notify("on_reject", rec)
        role = rec.job.role
        if role is not None and not migration and self.mode == "gang":
            # the gang goes as a whole: Kueue evicts the Workload, a JobSet restarts all its Jobs
            for other in self._gangs[role.gang]:
                if other.state is JobState.RUNNING:
                    cap = grace_cap_s if grace_cap_s is not None else (math.inf if grace_s > 0 else 0.0)
                    self.evict(other, f"{reason} (gang {role.gang}: role {role.name} was evicted)", requeue,
                               grace_s=min(termination_grace(other.job), cap), readmit=readmit, grace_cap_s=cap,
                               with_gang=True)
        self.request_pass()

    def jobs_on(self, node: int) -> list[JobRecord]:
        """Running jobs with a worker on ``node``, in queue order."""
        return sorted((r for r in self.scheduler.running.values() if any(p.node_index == node for p in r.placements)),
                      key=lambda r: r.queue_seq)

    def drain(self, node: int, reason: str = "node drained", requeue: bool = True, *, graceful: bool = False) -> None:
        """Cordon ``node`` and move everything off it: evict (requeue) every running job with
        a worker there, and give back the workers pending jobs hold there (naive mode's
        partial allocations; the jobs stay pending with their other workers).
        ``graceful``: the evicted pods keep their resources for their
        ``terminationGracePeriodSeconds`` (``kubectl drain`` evicts through the Eviction API,
        which honours it; Kubernetes docs, "Safely Drain a Node"); off for a node that fails
        or is removed."""
        self.scheduler.cordon(node)
        where = f"{reason} ({self.state.nodes[node].name})"
        for rec in self.jobs_on(node):
            if rec.state is JobState.RUNNING:   # not evicted meanwhile with its gang
                self.evict(rec, where, requeue, grace_s=termination_grace(rec.job) if graceful else 0.0,
                           grace_cap_s=math.inf if graceful else 0.0)
        for rec in list(self.scheduler.discipline.order()):
            held = [p for p in rec.placements if p.node_index == node]
            if rec.state is JobState.PENDING and held:
                self.scheduler.release_placements(rec, held)
                rec.reason = f"{len(held)} worker(s) released: {where}"
        self.request_pass()

    def node_down(self, node: int, reason: str = "node down") -> None:
        """Take ``node`` out of service and evict (requeue) every job with a worker on it
        (:meth:`drain`)."""
        self.drain(node, reason)

    def node_up(self, node: int) -> None:
        """Put ``node`` (back) in service."""
        if self.removed[node]:
            raise ValueError(f"node {self.state.nodes[node].name!r} was removed from the cluster")
        self.scheduler.uncordon(node)
        self.request_pass()

    def cordon(self, node: int) -> None:
        """Stop placing on ``node``; what runs there stays."""
        self.scheduler.cordon(node)

    def add_node(self, node: Node, online: bool = True) -> int:
        """Add ``node`` to the cluster now (an autoscaler's launch); it is schedulable at once
        if ``online``, else cordoned until :meth:`node_up`. Returns its index.

        Raises:
            InputError: its name is already taken.
        """
        idx = self.state.add_nodes([node])
        self.scheduler.add_nodes(idx, online)
        self.removed = np.append(self.removed, False)
        self._classes = CapacityClasses.of(self.state)
        self._unresolvable.clear()
        self._filtered_cache.clear()
        self.metrics.capacity_changed(self.removed)
        if online:
            self.request_pass()
        return idx.start

    def remove_node(self, node: int, reason: str = "node removed") -> None:
        """Drain ``node`` and take it out of the cluster for good (its capacity no longer
        counts in the metrics)."""
        self.drain(node, reason)
        self.removed[node] = True
        self.metrics.capacity_changed(self.removed)

    # -- run ---------------------------------------------------------------------------
    def run(self, until: float | None = None) -> SimulationResult:
        """Run to the end (or ``until``, s) and return the result.

        Raises:
            InputError: ``until`` is not a positive number.
        """
        if until is not None and not (until > 0):
            raise InputError(f"until: expected a time > 0 s, got {until!r}")
        if not self._started:
            self._started = True
            for hook in self._hooks["attach"]:
                hook(self)
        reason = self.engine.run(until=until)
        end = self.engine.now
        if not self.metrics._t:  # no pass ran (e.g. every job rejected): one sample of the end state
            self.metrics.sample(end)
        for rec in self.records.values():
            if rec.state is JobState.PENDING and rec.job_id in self._waiting_admission:
                continue
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
             stop_on_deadlock: bool = True, progress: bool = False,
             plugins: Sequence[Any] = ()) -> SimulationResult:
    """Run a timed simulation of ``jobs`` on ``nodes`` and return a :class:`~lab01_cluster_sim.metrics.SimulationResult`.

    Args:
        nodes: the cluster.
        jobs: the workload (unique ids); each arrives at ``submit_time`` and runs
            ``duration`` seconds once all its workers are bound (``inf``: never completes).
        policy: placement policy name (``first-fit``, ``best-fit``, ``worst-fit``,
            ``random``, ``dot-prod``, ``gpu-packing``, ``gpu-clustering``, ``fgd``) or object.
            FGD by name scores against ``target_workload``, or when that is None against
            the target workload built from ``jobs`` (as the paper builds it from the
            original pod list, ``SetTypicalPods`` in pkg/simulator/analysis.go).
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
        progress: show the progress of arrivals on stderr (:mod:`lab01_cluster_sim.progress`:
            a bar on a terminal, a line every few seconds otherwise).
        plugins: extensions at the engine's extension points (topology, time-slicing,
            tenancy, taints, checkpoints, migration, autoscaler, drains, admission; see
            :mod:`lab01_cluster_sim.framework.interface`), in call order.

    Raises:
        InputError: bad mode, policy, discipline, seed, duplicate job ids or node names,
            an empty cluster, or a bad ``until``.
    """
    sim = Simulation(nodes, jobs, policy, mode, discipline, seed, tie_rank=tie_rank,
                     nodes_to_score=nodes_to_score, target_workload=target_workload,
                     stranded_interval=stranded_interval, observers=observers,
                     stop_on_deadlock=stop_on_deadlock, plugins=plugins)
    bar = None
    if progress:
        from lab01_cluster_sim.progress import progress_bar

        bar = progress_bar(len(sim.records), f"{sim.mode} {getattr(sim.policy, 'name', '')}", unit="job")
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


__all__ = ["Simulation", "simulate"]
