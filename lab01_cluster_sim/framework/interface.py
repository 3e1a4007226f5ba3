"""The plugin contract of the one engine: named extension points of a timed run.

Every extension of Lab 01 (queue disciplines aside, which have their own registry, and
placement policies, which have theirs) is a *plugin* of :class:`lab01_cluster_sim.simulate.Simulation`:
topology-aware placement, time-slicing contention, tenancy tiers, taints and nodeSelector,
shape-aware admission, checkpoints, defragmentation by migration, the autoscaler, spot
interruptions, node drains, Kueue-style admission. They all run in the one event loop
(:mod:`lab01_cluster_sim.engine`) on the one cluster state, so any of them combines with any
other and with the real trace. The design, with the call order per event, is in the module
docstring of :mod:`lab01_cluster_sim.simulate`; the points follow the Kubernetes scheduling
framework (PreFilter, Filter, Score, Permit, PostFilter, Bind) and Kueue's admission cycle.

A plugin is any object with a ``name`` and some of the methods of :class:`Plugin`; the engine
calls only the methods a plugin's class defines (looked up once, at registration), so an unused
point costs nothing. Subclassing :class:`Plugin` is optional and documents intent. Plugins may
also define the :class:`~lab01_cluster_sim.framework.interface.SchedulerObserver` hooks (``on_bind``,
``on_start``, ``on_finish``, ``on_evict``, ...), which are registered with the scheduler.

Call order at one instant (the engine's priorities): node events, completions and time limits,
preemptions, arrivals, plugin timers, then one scheduling cycle: admission cycle -> scheduling
pass (per job: PreFilter -> Filter -> device filter -> Score -> Permit -> Bind, PostFilter on
failure) -> ``after_cycle`` -> re-rating of the jobs whose neighbours changed -> ``sample``.
Within a point, plugins run in registration order.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import numpy as np

from lab01_cluster_sim.cluster import ClusterState, Request
from lab01_cluster_sim.framework.status import PreFilterResult
from lab01_cluster_sim.model import Job, JobRecord, JobState, Placement

Simulation = Any
"""What every hook receives as ``sim``: the running :class:`lab01_cluster_sim.simulate.Simulation`
(the engine is one layer above this contract, so it is named here, not imported)."""

HOOKS = ("attach", "could_host", "admission_cycle", "pre_filter", "filter", "filter_devices", "score", "permit",
         "post_filter", "after_cycle", "start_delay", "slowdown", "affected_by", "keep_progress", "sample")
"""Every extension point a plugin may define (besides the observer hooks)."""


class Plugin:
    """Documentation of the extension points; subclass it, or write any object with a
    ``name`` and the methods you need. Defaults below are never called (the engine registers
    only the methods a subclass overrides).

    Attributes:
        name: the plugin's name (logs, the command line's ``--plugin NAME``).
    """

    name: str = ""

    # -- lifecycle ---------------------------------------------------------------------------
    def attach(self, sim: Simulation) -> None:
        """Once, when the run starts (before the first event): schedule timers
        (``sim.call_at``), add nodes (``sim.add_node``), read the cluster."""

    # -- node lifecycle ------------------------------------------------------------------------
    def could_host(self, sim: Simulation, job: Job) -> bool:
        """On arrival of a job no node of the cluster could ever hold: True if this plugin
        could bring a node that holds it (an autoscaler's NodePools), so the job waits
        instead of being rejected."""
        return False

    def after_cycle(self, sim: Simulation) -> None:
        """After the scheduling pass of an instant, on the settled state: provision nodes for
        what is still pending, migrate jobs to unblock a gang. A plugin that binds or frees
        resources here calls ``sim.request_pass()`` for another cycle at the same instant."""

    # -- admission (Kueue-style) ---------------------------------------------------------------
    def admission_cycle(self, ctx: "AdmissionContext") -> None:
        """Before each scheduling pass: admit waiting workloads against quota
        (``ctx.admit``), keep them waiting with a reason (``ctx.hold``) or preempt admitted
        ones (``ctx.evict``). Never looks at nodes."""

    # -- scheduling cycle, per attempt ---------------------------------------------------------
    def pre_filter(self, sim: Simulation, record: JobRecord, request: Request) -> PreFilterResult | None:
        """Restrict this attempt's candidate nodes, or answer "not now" (see
        :class:`~lab01_cluster_sim.framework.status.PreFilterResult`); None = no opinion."""
        return None

    def filter(self, request: Request, record: JobRecord | None) -> np.ndarray:
        """bool (N,): nodes this job's pods may use (taints, nodeSelector); ``record`` is None
        when the caller asks about a shape, not a job (answer for the most permissive job). A
        plugin with a ``filter_reason`` attribute has the nodes it refuses counted under that
        text in a pending job's FailedScheduling summary."""
        raise NotImplementedError

    def score(self, sim: Simulation, record: JobRecord | None, request: Request, candidates: np.ndarray) -> np.ndarray:
        """int64 (k,): the node score of each of ``candidates`` (node indices), normalized to
        0..:data:`MAX_NODE_SCORE` over them (kube-scheduler's Score then NormalizeScore). The
        engine adds ``score_weight`` (the plugin's attribute, default 1) times it to the
        placement policy's score; ``record`` is None when the caller scores a shape."""
        raise NotImplementedError

    def filter_devices(self, sim: Simulation, record: JobRecord, request: Request) -> np.ndarray | None:
        """bool (N, G): GPUs of each node the job may use (None = all)."""
        return None

    def permit(self, sim: Simulation, record: JobRecord, placements: list[tuple[int, tuple[int, ...]]]) -> str | None:
        """After every worker of the attempt found a place (bound on trial): a reason to
        refuse (the trial is rolled back), or None to allow."""
        return None

    def post_filter(self, sim: Simulation, record: JobRecord) -> bool:
        """The attempt found no room: evict what would make room (``sim.evict``) and return
        True for one more attempt, or False."""
        return False

    # -- job progress ----------------------------------------------------------------------------
    def start_delay(self, sim: Simulation, record: JobRecord) -> float:
        """Seconds between bind and first progress (an image pull); added over plugins."""
        return 0.0

    def slowdown(self, sim: Simulation, record: JobRecord) -> float:
        """Run-time factor >= 1 of ``record``'s work now (multiplied over plugins)."""
        return 1.0

    def affected_by(self, sim: Simulation, record: JobRecord) -> Iterable[JobRecord]:
        """Running jobs whose ``slowdown`` may change when ``record`` starts computing or
        leaves (its neighbours on a time-sliced GPU)."""
        return ()

    # -- eviction ---------------------------------------------------------------------------------
    def keep_progress(self, sim: Simulation, record: JobRecord, progress_s: float) -> tuple[float, float]:
        """On eviction of a job that did ``progress_s`` s of work: ``(kept_s, restore_s)``,
        the work it keeps (its last checkpoint) and the overhead its next run pays first.
        The first plugin defining it decides; without one a job restarts from scratch."""
        return 0.0, 0.0

    # -- metrics ----------------------------------------------------------------------------------
    def sample(self, sim: Simulation, now: float) -> None:
        """After each cycle, on the settled state of the instant."""


def defines(plugin: Any, hook: str) -> bool:
    """True if ``plugin``'s class defines ``hook`` itself (not :class:`Plugin`'s default)."""
    method = getattr(type(plugin), hook, None)
    return method is not None and method is not getattr(Plugin, hook, None)


# -- admission --------------------------------------------------------------------------------
@dataclass
class AdmissionContext:
    """What an admission plugin sees and may do in one admission cycle.

    Attributes:
        sim: the simulation (read-only use: time, records; quota plugins never look at nodes).
        now: the time of the cycle, s.
        waiting: records not admitted yet, in arrival order (evicted ones back at their place).
        admitted: records admitted and not finished (queued for placement or running).
    """

    sim: Simulation
    now: float
    waiting: list[JobRecord]
    admitted: list[JobRecord]
    _plugin: Any = None
    _admitted_now: list[JobRecord] = field(default_factory=list)

    def admit(self, record: JobRecord) -> None:
        """Admit ``record``: with every admission plugin agreeing it joins the scheduler's
        queue (placement never looks at quota).

        Raises:
            ValueError: ``record`` is not waiting for admission.
        """
        self.sim._admit(record, self._plugin)

    def hold(self, record: JobRecord, reason: str) -> None:
        """Keep ``record`` waiting; ``reason`` becomes its reason (and the narration's)."""
        record.status = "Pending"
        record.reason = reason

    def evict(self, record: JobRecord, reason: str) -> None:
        """Preempt admitted ``record``: a running job is evicted (checkpoint rules apply), a
        queued one leaves the queue; either way it goes back to waiting for admission and the
        observers' ``on_evict`` hook runs (lost work 0 for a job that was not running), where
        quota plugins release its quota."""
        self.sim._unadmit(record, reason)

    def reject(self, record: JobRecord, reason: str) -> None:
        """``record`` can never be admitted (e.g. it asks for more than any quota could ever
        give): it ends REJECTED with ``reason``."""
        self.sim._reject_waiting(record, reason)

    def retry_at(self, t: float) -> None:
        """Run another cycle at ``t`` (s), e.g. when a quota window opens."""
        self.sim.request_pass_at(t)

    def is_admitted(self, record: JobRecord) -> bool:
        """True when ``record`` is admitted and not finished (queued for placement or running)."""
        return record.job_id in self.sim._admitted


# -- observers ----------------------------------------------------------------------------
class SchedulerObserver:
    """Hooks called as the run goes; subclass and override the ones you need.

    The scheduler calls only the hooks a subclass overrides, so unused hooks cost nothing.
    ``placement`` is the worker's :class:`Placement`, ``request`` its :class:`Request`.
    Trial placements of a gang that the permit stage rolls back are never reported.
    """

    def on_enqueue(self, record: JobRecord) -> None: ...
    def on_bind(self, record: JobRecord, placement: Placement, request: Request) -> None: ...
    def on_release(self, record: JobRecord, placement: Placement, request: Request) -> None: ...
    def on_start(self, record: JobRecord) -> None: ...
    def on_finish(self, record: JobRecord) -> None: ...
    def on_reject(self, record: JobRecord) -> None: ...
    def on_evict(self, record: JobRecord, lost_work: float) -> None: ...
    def on_terminated(self, record: JobRecord) -> None:
        """Pods of ``record`` that kept their resources through a grace period after an
        eviction are gone, their resources freed."""


OBSERVER_HOOKS = ("on_enqueue", "on_bind", "on_release", "on_start", "on_finish", "on_reject", "on_evict",
                  "on_terminated")
"""The observer hooks, in the order a job meets them."""


# -- score: placement policies -----------------------------------------------------------------
MAX_NODE_SCORE = 100
"""The highest node score (kube-scheduler's ``framework.MaxNodeScore``)."""


def default_normalize_score(scores: np.ndarray, reverse: bool, max_priority: int = MAX_NODE_SCORE) -> np.ndarray:
    """kube-scheduler's ``helper.DefaultNormalizeScore`` (``pkg/scheduler/framework/plugins/
    helper/normalize_score.go``, v1.35): int64 ``scores`` (k,) scaled to 0..``max_priority``
    by ``max_priority * score // max(scores)``, then reversed (``max_priority - score``) when
    ``reverse``. All zeros stay 0, or become ``max_priority`` each when ``reverse``."""
    scores = np.asarray(scores, dtype=np.int64)
    top = int(scores.max()) if scores.size else 0
    if top <= 0:
        return np.full(scores.shape, max_priority if reverse else 0, dtype=np.int64)
    out = max_priority * scores // top
    return max_priority - out if reverse else out


class PlacementPolicy(Protocol):
    """What every placement policy provides (the Score extension point and the GPU pick).

    ``name`` is the registry key. ``score`` returns int64 scores in 0..MAX_NODE_SCORE,
    shape ``(len(candidates),)``, for the candidate node indices ``candidates`` (int64 array).
    ``pick_gpus`` returns the GPU indices inside ``node`` for the request (``num_gpus`` of them).
    """

    name: ClassVar[str]

    def score(self, state: ClusterState, request: Request, candidates: np.ndarray,
              rng: np.random.Generator) -> np.ndarray: ...

    def pick_gpus(self, state: ClusterState, request: Request, node: int,
                  rng: np.random.Generator) -> tuple[int, ...]: ...


__all__ = ["HOOKS", "MAX_NODE_SCORE", "OBSERVER_HOOKS", "AdmissionContext", "PlacementPolicy", "Plugin",
           "default_normalize_score",
           "PreFilterResult", "SchedulerObserver", "defines", "JobState"]
