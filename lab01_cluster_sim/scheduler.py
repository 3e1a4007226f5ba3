"""The scheduling cycle, stage by stage as in the Kubernetes scheduling framework.

For every pending job, in the order its
:class:`~lab01_cluster_sim.framework.queue.QueueDiscipline` gives (**queue sort**):

1. **Filter**: which nodes can host one worker now (CPU, memory, GPUs of an allowed model, node
   online). :func:`~lab01_cluster_sim.framework.noderesources.filter_node` lists *every* reason
   a node is refused, with requested / used / capacity, like NodeResourcesFit's
   ``InsufficientResource``. A job that fits no node now stays pending (``Unschedulable``, "not
   now"); a job that could not fit even on an empty cluster is rejected on arrival
   (``UnschedulableAndUnresolvable``, "never";
   :func:`~lab01_cluster_sim.framework.noderesources.unresolvable_reason`).
2. **Score**: the placement policy (:mod:`lab01_cluster_sim.policies`) scores the feasible
   nodes; the highest wins, ties go to the lowest ``state.tie_rank``; the policy then picks the
   GPUs inside the node. Same steps as :func:`lab01_cluster_sim.policies.base.place`.
3. **Permit**: in *gang* mode every worker of a job is trial-placed (bound, then rolled back if
   the gang is incomplete) and :func:`gang_permit` allows the job only when all of them found a
   place: all-or-nothing, the outcome of the coscheduling plugin's Permit stage. In *naive* mode
   there is no permit: workers are bound one at a time, round-robin over the pending jobs, and
   partial allocations are held (a Kubernetes scheduler without coscheduling).
4. **Bind**: :meth:`ClusterState.bind`.

A job that is one role of a multi-role gang (a launcher and workers:
:class:`~lab01_cluster_sim.model.GangRole`) is placed with its whole gang in gang mode, every
worker of every role or none (:mod:`lab01_cluster_sim.framework.roles`).

Gang is a mode of this cycle, not a plugin module. kube-scheduler's coscheduling plugin
(kubernetes-sigs/scheduler-plugins, ``pkg/coscheduling/coscheduling.go``, Beta) reaches
all-or-nothing pod by pod: each pod of a PodGroup is assumed on its node and its ``Permit``
returns ``Wait`` until ``minMember`` pods are assumed, then allows them all; ``Unreserve``
rejects every waiting pod of the group when one is rejected or ``PermitWaitingTimeSeconds``
runs out. Waiting pods hold their nodes meanwhile. Here one cycle trial-places every worker and
decides at once, so a gang never holds part of its allocation between passes. A Permit-Wait
plugin would therefore change the schedules (partial holdings up to the timeout); and the
mode decides more than the Permit: how many workers one cycle places, the blocked-shape memo
(keyed by shape and mode), naive mode's repeated rounds within a pass and its deadlock check.

Naive mode can deadlock: jobs each hold part of their gang, and nothing that runs will ever
free enough for any of them. :meth:`Scheduler.find_deadlock` detects it and names who holds
what; the simulation then stops (it never hangs).

Speed. The filter is a handful of vector comparisons over per-node arrays kept up to date on
every bind and release (fully free GPUs, largest free share per GPU), not a rescan of the
(nodes x GPUs) matrix. A job shape (worker request x workers) that found no room is remembered
as *blocked* (:mod:`lab01_cluster_sim.framework.blocked`); later jobs of the same shape are
skipped without work until a release frees room on a node that can host one of its workers
(binds only take resources, so nothing else can unblock it; FIFO-skip wakes them lazily,
earliest first); a one-worker shape's retry filters only the nodes released since it was
blocked (no other node can have become feasible). These shortcuts rely on every change to the
cluster state during a run going through the scheduler (binds in
:meth:`Scheduler.try_schedule`, :meth:`Scheduler.release_job`, :meth:`Scheduler.cordon` /
:meth:`Scheduler.uncordon`); extensions that want to try placements on the side should work on
a copy of the arrays. Optionally, like kube-scheduler's ``percentageOfNodesToScore``, only
``nodes_to_score`` feasible nodes are scored, taken round-robin from a rotating start
(:func:`adaptive_nodes_to_score` gives Kubernetes' default).

Extension points (the plugins of :mod:`lab01_cluster_sim.framework.interface` reach them
through :class:`lab01_cluster_sim.simulate.Simulation`; all empty by default, so the fast path
above is untouched):

- :attr:`Scheduler.pre_filters`, :attr:`Scheduler.device_filters`, :attr:`Scheduler.permits`,
  :attr:`Scheduler.post_filters`: PreFilter (restrict the candidate nodes, or "not now"),
  device filter (GPUs a job may use), Permit (refuse a trial placement), PostFilter (evict to
  make room, then one more try). With any of them, :meth:`Scheduler.try_schedule` takes the
  plugin path (blocked memo per job; :mod:`lab01_cluster_sim.framework.runtime`).
- :meth:`Scheduler.trial` / :meth:`Scheduler.slots_of`: "would this job fit if ..." with every
  filter, for preemption victims and backfill reservations; :meth:`Scheduler.plan_placements`
  places a gang on a copy of the state; :meth:`Scheduler.bind_placements` binds a plan.

- :class:`~lab01_cluster_sim.framework.queue.QueueDiscipline`: keeps the pending jobs and runs
  a pass by calling :meth:`Scheduler.try_schedule` for jobs in its order. It may skip jobs
  (backfill), stop at a blocked head (strict FIFO), read :attr:`Scheduler.now` and
  :attr:`Scheduler.running` (the running jobs, with their expected end in ``record.run_started
  + record.remaining``) to make reservations, and ask for an eviction with
  :meth:`Scheduler.evict`. The built-in ones are listed by name in
  :data:`lab01_cluster_sim.registry.DISCIPLINES`.
- :class:`~lab01_cluster_sim.framework.interface.SchedulerObserver`: hooks on enqueue, bind,
  release, start, finish, reject and evict; metrics use them to stay incremental. Only
  overridden hooks are called.
- :meth:`Scheduler.cordon` / :meth:`Scheduler.uncordon`: take a node out of (or back into)
  scheduling, for node-down events or nodes an autoscaler has not launched yet.
- :attr:`Scheduler.extra_filters`: callables ``(request, record) -> bool mask (N,)`` ANDed into
  the filter (taints/tolerations, topology); empty by default, so free when unused. When
  present, jobs of the same shape are no longer treated as interchangeable (the blocked memo
  becomes per job and FIFO-skip tries every job), since the filter may read the job. A
  filter whose plugin has a ``filter_reason`` (kube-scheduler's TaintToleration, NodeAffinity)
  is counted under that reason in :meth:`Scheduler.unschedulable_message`, and the nodes it
  refuses are not counted again under later reasons (kube-scheduler stops at a node's first
  failing Filter plugin, ``RunFilterPlugins``).
- :attr:`Scheduler.scorers`: ``(weight, score)`` pairs, ``score(request, record, candidates)
  -> int64 (k,)`` in 0..100, already normalized; the node's score is the policy's
  (NodeResourcesFit, times the policy's ``score_weight``, default 1) plus ``weight * score`` of
  each (``prioritizeNodes`` in kube-scheduler's ``schedule_one.go`` sums every Score plugin's
  normalized score times its weight).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from lab01_cluster_sim.cluster import ClusterState, Request
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.framework.blocked import BlockedShapes, BlockedTable
from lab01_cluster_sim.framework.interface import OBSERVER_HOOKS, PlacementPolicy, SchedulerObserver
from lab01_cluster_sim.framework.noderesources import TrialState, worker_slots
from lab01_cluster_sim.framework.queue import QueueDiscipline, shape_key
from lab01_cluster_sim.framework.roles import RoleGangs
from lab01_cluster_sim.framework.runtime import PluginRuntime
from lab01_cluster_sim.framework.status import UNSCHEDULABLE, DeadlockReport, Holding, Outcome, PreFilterResult
from lab01_cluster_sim.model import MILLI_PER_GPU, JobRecord, JobState, Placement

MODES = ("gang", "naive")
"""Placement modes: all-or-nothing gangs, or one worker at a time without coscheduling."""

def adaptive_nodes_to_score(num_nodes: int) -> int:
    """kube-scheduler's default number of feasible nodes to find and score.

    ``numFeasibleNodesToFind`` with ``percentageOfNodesToScore`` unset (Kubernetes
    ``pkg/scheduler/schedule_one.go``): all nodes below 100; otherwise
    ``max(5, 50 - num_nodes / 125)`` percent of the nodes, at least 100. E.g. 5,000 nodes
    -> 10% = 500; 10,000 nodes -> 5% = 500.
    """
    if num_nodes < 100:
        return num_nodes
    percentage = max(5, 50 - num_nodes // 125)
    return max(100, num_nodes * percentage // 100)


# -- permit -------------------------------------------------------------------------------
def gang_permit(workers_placed: int, workers_needed: int) -> bool:
    """Permit stage of gang scheduling: may a job whose workers were trial-placed start?

    Args:
        workers_placed: workers of the job that found a node in this attempt (>= 0).
        workers_needed: workers of the gang (``job.workers``, >= 1).

    Returns:
        True (a bool; numpy's ``bool_`` is accepted) to bind every trial-placed worker and
        start the job; False to roll all of them back, so the job holds nothing while it waits (all-or-nothing, as the Kubernetes
        coscheduling plugin's Permit waits for ``minMember`` pods of the PodGroup).

    Learner exercise (Lab 01, gang scheduling): implement the body.
    """
    ### BEGIN SOLUTION
    return workers_placed >= workers_needed
    ### END SOLUTION


# -- the scheduler ------------------------------------------------------------------------
class Scheduler(BlockedShapes, PluginRuntime, RoleGangs):
    """Runs scheduling passes over a :class:`ClusterState` (see the module docstring).

    Args:
        state: the cluster; changed in place by binds and releases.
        policy: the placement policy (score stage).
        discipline: the queue discipline (queue sort stage).
        mode: ``"gang"`` (all-or-nothing) or ``"naive"`` (one worker at a time).
        rng: the seeded generator handed to the policy.
        nodes_to_score: score at most this many feasible nodes per worker (None = all);
            see :func:`adaptive_nodes_to_score`.

    Raises:
        InputError: unknown mode, or ``nodes_to_score`` < 1.

    Attributes:
        now: simulated time of the current pass, s (set by the simulation).
        running: job id -> record of every running job.
        on_start, on_evict_request: callbacks set by the simulation (start a job's clock;
            carry out an eviction).
    """

    def __init__(self, state: ClusterState, policy: PlacementPolicy, discipline: QueueDiscipline,
                 mode: str = "gang", rng: np.random.Generator | None = None,
                 nodes_to_score: int | None = None) -> None:
        if mode not in MODES:
            raise InputError(f"mode: expected one of {', '.join(MODES)}, got {mode!r}")
        if nodes_to_score is not None and nodes_to_score < 1:
            raise InputError(f"nodes_to_score: expected an integer >= 1 or None, got {nodes_to_score}")
        self.state = state
        self.policy = policy
        self.discipline = discipline
        self.mode = mode
        self.rng = rng if rng is not None else np.random.default_rng(0)
        self.nodes_to_score = nodes_to_score
        self.now = 0.0
        self.running: dict[str, JobRecord] = {}
        self.terminating: dict[str, int] = {}   # evicted job id -> its runs still terminating
        self.on_start: Callable[[JobRecord], None] = lambda record: None
        self.on_evict_request: Callable[..., None] | None = None
        self.on_retry_at: Callable[[float], None] = lambda t: None
        self.extra_filters: list[Callable[[Request, JobRecord], np.ndarray]] = []
        self.scorers: list[tuple[int, Callable[[Request, JobRecord | None, np.ndarray], np.ndarray]]] = []
        # Scheduling-framework plugin points (see lab01_cluster_sim.framework.interface); each entry is a
        # callable bound to its plugin. Empty by default: the fast path below is untouched.
        self.pre_filters: list[Callable[[JobRecord, Request], "PreFilterResult | None"]] = []
        self.device_filters: list[Callable[[JobRecord, Request], np.ndarray | None]] = []
        self.permits: list[Callable[[JobRecord, list[tuple[int, tuple[int, ...]]]], str | None]] = []
        self.post_filters: list[Callable[[JobRecord], bool]] = []
        # Per-node summaries kept in step with every bind/release (the hot filter reads them).
        self.full_free = (state.gpu_free >= MILLI_PER_GPU).sum(axis=1).astype(np.int64)
        self.max_free = state.gpu_free.max(axis=1).astype(np.int64)
        self.online = np.ones(state.num_nodes, dtype=bool)
        self._model_masks: dict[tuple[str, ...], np.ndarray] = {}
        self._blocked: dict[tuple, tuple[Request, str]] = {}
        self._woken: list[tuple] = []
        self._woke_all = False
        # Every real release, in order (node index). A shape of one worker blocked when the
        # log had length p fits no node outside log[p:] until a node comes back online, so
        # its retries filter only those nodes (see try_schedule).
        self._release_log: list[int] = []
        self._node_scratch = np.zeros(state.num_nodes, dtype=bool)  # all False between uses
        self._since: dict[tuple, int] = {}
        self._table = BlockedTable()
        self._next_seq = 0
        self._released_pending: dict[int, None] = {}
        self._pass_id = 0
        self._cur_order = 0
        self._requests: dict[str, Request] = {}
        self._start_index = 0
        self.bound_workers = 0
        """Workers bound so far (a counter; naive mode uses it to see progress)."""
        self._observers: dict[str, list[Callable]] = {h: [] for h in OBSERVER_HOOKS}
        self.role_gangs: dict[str, dict[int, JobRecord]] = {}
        """Multi-role gangs: gang name -> {role index: record} of its roles now queued for
        placement (:mod:`lab01_cluster_sim.framework.roles`)."""
        self._role_failed: dict[str, tuple[int, str]] = {}
        self._roles_done: dict[str, int] = {}
        self.has_roles = False
        """True once a role of a multi-role gang may be placed (gang mode): jobs of one shape are then
        not interchangeable (a role is placed with its gang)."""

    # -- observers --------------------------------------------------------------------
    def add_observer(self, observer: SchedulerObserver) -> None:
        """Register ``observer``; only the hooks it overrides will be called."""
        for hook in OBSERVER_HOOKS:
            method = getattr(type(observer), hook, None)
            if method is not None and method is not getattr(SchedulerObserver, hook):
                self._observers[hook].append(getattr(observer, hook))

    def notify(self, hook: str, *args) -> None:
        """Call every observer's ``hook`` with ``args``."""
        for fn in self._observers[hook]:
            fn(*args)

    # -- queue ------------------------------------------------------------------------
    def enqueue(self, record: JobRecord) -> None:
        """Add a pending job to the queue. A job enqueued before (evicted, requeued) keeps its
        first ``queue_seq``, so disciplines give it its old place back."""
        record.state = JobState.PENDING
        if record.queue_seq < 0:
            record.queue_seq = self._next_seq
            self._next_seq += 1
        if record.job.role is not None and self.mode == "gang":
            self.has_roles = True
            self._queue_role(record)
        self.discipline.push(record)
        self.notify("on_enqueue", record)

    def dequeue(self, record: JobRecord) -> None:
        """Take a pending job out of the placement queue (it goes back to admission)."""
        self.discipline.remove(record)
        if record.job.role is not None:
            self._unqueue_role(record)

    @property
    def plugins_active(self) -> bool:
        """True when a PreFilter, device filter, permit or PostFilter plugin is registered."""
        return bool(self.pre_filters or self.device_filters or self.permits or self.post_filters)

    @property
    def interchangeable(self) -> bool:
        """True when jobs of one shape are interchangeable for the filter (no extra filter or
        scheduling plugin reads the job), so shape-level shortcuts (blocked memo, FIFO-skip's
        per-shape dormancy) are exact."""
        return not (self.extra_filters or self.pre_filters or self.device_filters or self.permits
                    or self.post_filters or self.has_roles)

    def request_of(self, record: JobRecord) -> Request:
        """The (cached) request of one worker of ``record``'s job."""
        req = self._requests.get(record.job_id)
        if req is None:
            req = self._requests[record.job_id] = Request.of_worker(record.job)
        return req

    # -- filter / score ---------------------------------------------------------------
    def _model_ok(self, models: tuple[str, ...]) -> np.ndarray:
        mask = self._model_masks.get(models)
        if mask is None:
            mask = self._model_masks[models] = self.state.model_mask(models)
        return mask

    def feasible_mask(self, request: Request, record: JobRecord | None = None,
                      lo: int = 0, hi: int | None = None) -> np.ndarray:
        """bool (hi - lo,): which of nodes ``lo..hi-1`` can host one worker asking ``request``
        now (the filter stage; default all N nodes).

        Same rule as :meth:`ClusterState.feasible`, plus cordoned nodes and
        :attr:`extra_filters`, computed from per-node summaries in vector operations.
        """
        st = self.state
        sl = slice(lo, hi)
        # NOTE: speed. One result array, filled in place (no temporaries beyond one
        # comparison at a time): this filter runs on all N nodes about once per decision.
        ok = st.cpu_free[sl] >= request.cpu_milli
        ok &= st.mem_free[sl] >= request.memory_mib
        ok &= self.online[sl]
        if request.num_gpus > 0:
            if request.num_gpus == 1 and request.gpu_milli < MILLI_PER_GPU:
                ok &= self.max_free[sl] >= request.gpu_milli
            else:
                ok &= self.full_free[sl] >= request.num_gpus
            if request.gpu_models:
                ok &= self._model_ok(request.gpu_models)[sl]
        for extra in self.extra_filters:
            ok &= extra(request, record)[sl]
        return ok

    def _distinct_nodes(self, nodes: list[int]) -> np.ndarray:
        """The distinct node indices of ``nodes``, sorted: int64 (k,). Same answer as
        ``np.unique``; marks a reused bool (N,) scratch row instead of sorting (NOTE: speed:
        ``np.unique`` on up to N/8 entries was 6 % of a 100k-job run)."""
        mark = self._node_scratch
        mark[nodes] = True
        out = mark.nonzero()[0]
        mark[out] = False
        return out

    def _find_feasible(self, request: Request, record: JobRecord | None, k: int) -> np.ndarray:
        """Up to ``k`` feasible nodes, searching from the rotating start index in chunks and
        stopping once ``k`` are found (kube-scheduler's ``findNodesThatPassFilters`` with
        ``numFeasibleNodesToFind``; the next search starts after the last node examined).
        Costs O(nodes examined), not O(N), when feasible nodes are common."""
        n = self.state.num_nodes
        chunk = max(2 * k, 1024)
        start = pos = self._start_index
        found: list[np.ndarray] = []
        count = 0
        scanned = 0
        last = (start - 1) % n
        while scanned < n and count < k:
            hi = min(n, pos + chunk, pos + (n - scanned))
            idx = self.feasible_mask(request, record, pos, hi).nonzero()[0] + pos
            if count + idx.size >= k:
                idx = idx[: k - count]
                last = int(idx[-1])
            else:
                last = hi - 1
            found.append(idx)
            count += idx.size
            scanned += hi - pos
            pos = hi % n
        self._start_index = (last + 1) % n
        return np.sort(np.concatenate(found)) if found else np.empty(0, dtype=np.int64)

    def _feasible_among(self, request: Request, record: JobRecord | None, idx: np.ndarray) -> np.ndarray:
        """The nodes of ``idx`` (int64 array) where one worker fits now (same rule as
        :meth:`feasible_mask`)."""
        st = self.state
        ok = (st.cpu_free[idx] >= request.cpu_milli) & (st.mem_free[idx] >= request.memory_mib) & self.online[idx]
        if request.num_gpus > 0:
            if request.num_gpus == 1 and request.gpu_milli < MILLI_PER_GPU:
                ok &= self.max_free[idx] >= request.gpu_milli
            else:
                ok &= self.full_free[idx] >= request.num_gpus
            if request.gpu_models:
                ok &= self._model_ok(request.gpu_models)[idx]
        for extra in self.extra_filters:
            ok &= extra(request, record)[idx]
        return idx[ok]

    def select_node(self, request: Request, record: JobRecord | None = None,
                    within: np.ndarray | None = None) -> tuple[int, tuple[int, ...]] | None:
        """Filter -> score -> select -> pick GPUs for one worker; ``(node, gpus)`` or None.

        Mirrors :func:`lab01_cluster_sim.policies.base.place` (one feasible node is taken
        without scoring; ties go to the lowest ``tie_rank``) on the filter above. With
        ``nodes_to_score`` set, only that many feasible nodes are found and scored
        (:meth:`_find_feasible`). ``within`` (sorted node indices) is a superset of the
        feasible nodes known to the caller; only those are filtered. Does not change the state.
        """
        if within is not None:
            candidates = self._feasible_among(request, record, within)
            if self.nodes_to_score is not None and candidates.size > self.nodes_to_score:
                candidates = candidates[: self.nodes_to_score]
        elif self.nodes_to_score is None:
            # NOTE: speed. ``.nonzero()[0]`` is ``np.flatnonzero`` on a 1-D mask, minus two
            # Python-level calls; this line runs once per scheduling decision.
            candidates = self.feasible_mask(request, record).nonzero()[0]
        else:
            candidates = self._find_feasible(request, record, self.nodes_to_score)
        if candidates.size == 0:
            return None
        if candidates.size == 1:
            node = int(candidates[0])
        else:
            scores = self.scores(self.state, request, record, candidates)
            best = candidates[scores == scores.max()]
            node = int(best[0]) if best.size == 1 else int(best[np.argmin(self.state.tie_rank[best])])
        return node, tuple(self.policy.pick_gpus(self.state, request, node, self.rng))

    def scores(self, state: ClusterState, request: Request, record: JobRecord | None,
               candidates: np.ndarray) -> np.ndarray:
        """int64 (k,): the Score stage for ``candidates``: the policy's score plus each of
        :attr:`scorers` times its weight (module docstring)."""
        scores = self.policy.score(state, request, candidates, self.rng)
        if self.scorers:
            scores = scores * getattr(self.policy, "score_weight", 1)
        for weight, score in self.scorers:
            scores = scores + weight * score(request, record, candidates)
        return scores

    # -- bind / release ----------------------------------------------------------------
    def _refresh(self, node: int) -> None:
        row = self.state.gpu_free[node].tolist()  # NOTE: speed: a few GPUs, plain Python
        self.full_free[node] = sum(1 for milli in row if milli >= MILLI_PER_GPU)
        self.max_free[node] = max(row)

    def _bind_raw(self, node: int, gpus: tuple[int, ...], request: Request) -> None:
        self.state.bind(node, gpus, request)
        if request.num_gpus:
            if request.gpu_milli >= MILLI_PER_GPU:
                # NOTE: speed. Whole GPUs go from fully free to 0: the node loses exactly that
                # many fully free GPUs, and its largest free share changes only when none is left.
                self.full_free[node] -= len(gpus)
                if self.full_free[node] == 0:
                    self.max_free[node] = int(self.state.gpu_free[node].max())
            else:
                self._refresh(node)

    def _release_raw(self, node: int, gpus: tuple[int, ...], request: Request) -> None:
        self.state.release(node, gpus, request)
        if request.num_gpus:
            if request.gpu_milli >= MILLI_PER_GPU:
                self.full_free[node] += len(gpus)
                self.max_free[node] = MILLI_PER_GPU
            else:
                self._refresh(node)

    def _commit(self, record: JobRecord, node: int, gpus: tuple[int, ...], request: Request) -> None:
        placement = Placement(self.state.nodes[node].name, node, gpus)
        record.placements.append(placement)
        self.bound_workers += 1
        self.notify("on_bind", record, placement, request)

    def unschedulable_message(self, request: Request, record: JobRecord | None = None) -> str:
        """kube-scheduler's FailedScheduling summary for one worker, e.g.
        ``"0/4 nodes are available: 4 Insufficient nvidia.com/gpu."``

        Counts, per reason, the nodes refused for it (a node short of several resources is
        counted under each, as kube-scheduler does), with vector masks: O(N).
        """
        st = self.state
        n = st.num_nodes
        counts: list[tuple[str, int]] = []
        feasible = int(self.feasible_mask(request, record).sum())
        counts.append(("node(s) cordoned", int((~self.online).sum())))
        left = np.ones(n, dtype=bool)   # nodes not refused yet by a named Filter plugin
        others = []
        for extra in self.extra_filters:
            reason = getattr(getattr(extra, "__self__", None), "filter_reason", None)
            if reason is None:
                others.append(extra)
                continue
            refused = left & ~extra(request, record)
            counts.append((reason, int(refused.sum())))
            left &= ~refused
        if request.num_gpus > 0 and request.gpu_models:
            counts.append((f"node(s) with a GPU model not in {list(request.gpu_models)}",
                           int((left & ~self._model_ok(request.gpu_models)).sum())))
        counts.append(("Insufficient cpu", int((left & (st.cpu_free < request.cpu_milli)).sum())))
        counts.append(("Insufficient memory", int((left & (st.mem_free < request.memory_mib)).sum())))
        if request.num_gpus == 1 and request.gpu_milli < MILLI_PER_GPU:
            counts.append(("Insufficient gpu-share", int((left & (self.max_free < request.gpu_milli)).sum())))
        elif request.num_gpus > 0:
            counts.append(("Insufficient nvidia.com/gpu", int((left & (self.full_free < request.num_gpus)).sum())))
        if others:
            allowed = np.ones(n, dtype=bool)
            for extra in others:
                allowed &= extra(request, record)
            counts.append(("node(s) refused by extra filters (taints, topology)", int((left & ~allowed).sum())))
        parts = [f"{c} {what}" for what, c in counts if c]
        return f"{feasible}/{n} nodes are available" + (": " + ", ".join(parts) if parts else "") + "."

    def explain(self, record: JobRecord) -> str:
        """The pending ``record``'s reason with kube-scheduler's FailedScheduling summary of
        the current state appended, e.g. ``"no node fits the job now (0/4 nodes are
        available: 4 Insufficient nvidia.com/gpu.)"``. The simulation calls it for every job
        still pending when a run ends."""
        base = record.reason or "not tried yet"
        return f"{base} ({self.unschedulable_message(self.request_of(record), record)})"

    def _fits_node(self, node: int, req: Request) -> bool:
        st = self.state
        if not self.online[node] or st.cpu_free[node] < req.cpu_milli or st.mem_free[node] < req.memory_mib:
            return False
        if req.num_gpus == 0:
            return True
        if req.gpu_models and not self._model_ok(req.gpu_models)[node]:
            return False
        if req.num_gpus == 1 and req.gpu_milli < MILLI_PER_GPU:
            return bool(self.max_free[node] >= req.gpu_milli)
        return bool(self.full_free[node] >= req.num_gpus)

    def release_job(self, record: JobRecord) -> None:
        """Give back everything ``record`` holds (completion, eviction, rollback of naive
        partial holdings) and tell observers; the job's state is the caller's business."""
        request = self.request_of(record)
        nodes = []
        for placement in record.placements:
            self._release_raw(placement.node_index, placement.gpus, request)
            nodes.append(placement.node_index)
            self.notify("on_release", record, placement, request)
        if record.placements:
            record.last_placements = tuple(record.placements)
        record.placements = []
        self.running.pop(record.job_id, None)
        self._release_log.extend(nodes)
        self._unblock(nodes)

    def cordon(self, node: int) -> None:
        """Stop placing on ``node`` (node down, or not yet launched). Running work stays;
        evicting it is the caller's choice (:meth:`evict`)."""
        self.online[node] = False

    def uncordon(self, node: int) -> None:
        """Put ``node`` back in service; every blocked shape is retried."""
        self.online[node] = True
        self.uncordon_all_blocked()

    def evict(self, record: JobRecord, reason: str, grace_s: float = 0.0) -> None:
        """Ask the simulation to evict running ``record`` now (preemption, node drain);
        ``grace_s`` > 0: its resources stay held that long (graceful termination); the other
        roles of its gang get their own grace periods (a graceful eviction)."""
        if self.on_evict_request is None:
            raise RuntimeError("evict: no simulation attached to carry out evictions")
        self.on_evict_request(record, reason, grace_s=grace_s, grace_cap_s=math.inf)

    def hold_terminating(self, record: JobRecord) -> list[Placement]:
        """``record`` stops running but its pods are still terminating: its placements stay
        bound (counted in :attr:`terminating`) until :meth:`release_terminating` of the
        returned list."""
        held = list(record.placements)
        self.terminating[record.job_id] = self.terminating.get(record.job_id, 0) + 1
        if held:
            record.last_placements = tuple(held)
        record.placements = []
        self.running.pop(record.job_id, None)
        return held

    def release_terminating(self, record: JobRecord, held: list[Placement]) -> None:
        """Terminating pods of ``record`` are gone: free ``held`` (from :meth:`hold_terminating`)."""
        left = self.terminating.pop(record.job_id, 1) - 1
        if left > 0:
            self.terminating[record.job_id] = left
        current = record.placements
        record.placements = list(held)
        self.release_placements(record, held)
        record.placements = current

    # -- one job ----------------------------------------------------------------------
    def _start(self, record: JobRecord) -> None:
        self.discipline.remove(record)
        if record.job.role is not None:
            self._unqueue_role(record)
        record.state = JobState.RUNNING
        record.reason = record.status = None
        if record.start_time is None:
            record.start_time = self.now
        record.run_started = self.now
        self.running[record.job_id] = record
        self.on_start(record)          # the simulation sets the job's progress (rate, start delay)
        self.notify("on_start", record)

    def try_schedule(self, record: JobRecord,
                     permit: Callable[[JobRecord, list[tuple[int, tuple[int, ...]]]], str | None] | None = None
                     ) -> Outcome:
        """Run (pre-filter ->) filter -> score -> permit -> bind for ``record`` (see the
        module docstring).

        Gang mode: place all workers or none. Naive mode: bind one more worker.

        Args:
            permit: an extra Permit check of the caller (a discipline), called as
                ``permit(record, trial_placements)`` after every worker found a place and the
                trial is bound; a returned string refuses (the trial is rolled back and the
                string becomes the job's reason), None allows. EASY backfill uses it for its
                second condition.
        """
        if record.job.role is not None and self.mode == "gang":
            return self._try_schedule_roles(record, permit)
        if permit is not None or self.pre_filters or self.device_filters or self.permits or self.post_filters:
            return self._try_schedule_plugins(record, permit)
        request = self.request_of(record)
        gang = self.mode == "gang"
        # Jobs of one shape are interchangeable for the filter -- unless extra filters look
        # at the job itself (tolerations in extras), then the memo is per job.
        key = shape_key(record.job, gang) + (record.job_id if self.extra_filters else None,)
        blocked = self._blocked.get(key)
        if blocked is not None:
            record.status, record.reason = UNSCHEDULABLE, blocked[1]
            return Outcome.WAITING
        self._cur_order = record.queue_seq
        # One-worker shape that was blocked before: only nodes released since can fit it.
        within = None
        since = self._since.get(key)
        one_worker = record.job.workers == 1 or not gang
        if since is not None:
            fresh = len(self._release_log) - since
            if fresh <= 16:
                nodes = set(self._release_log[since:])
                # Plain-Python check of those few nodes first: after a release, most woken
                # shapes find the freed room already taken by an earlier job.
                if not any(self._fits_node(n, request) for n in nodes):
                    record.status = UNSCHEDULABLE
                    record.reason = "no node fits the job now" if gang else "no node fits one more worker now"
                    self._block(key, request, record.reason, True)
                    return Outcome.WAITING
                within = np.array(sorted(nodes), dtype=np.int64)
            elif fresh <= max(64, self.state.num_nodes // 8):
                within = self._distinct_nodes(self._release_log[since:])
            else:
                del self._since[key]  # too many releases since: a full filter is as cheap
        if gang and record.job.workers == 1:
            choice = self.select_node(request, record, within)
            if choice is None:
                record.status = UNSCHEDULABLE
                record.reason = "no node fits the job now"
                self._block(key, request, record.reason, one_worker)
                return Outcome.WAITING
            self._bind_raw(choice[0], choice[1], request)
            self._commit(record, choice[0], choice[1], request)
            self._start(record)
            return Outcome.STARTED
        if gang:
            trial: list[tuple[int, tuple[int, ...]]] = []
            for _ in range(record.job.workers):
                choice = self.select_node(request, record)
                if choice is None:
                    break
                self._bind_raw(choice[0], choice[1], request)
                trial.append(choice)
            if gang_permit(len(trial), record.job.workers):
                for node, gpus in trial:
                    self._commit(record, node, gpus, request)
                self._start(record)
                return Outcome.STARTED
            for node, gpus in reversed(trial):  # roll back: the state is exactly as before
                self._release_raw(node, gpus, request)
            record.status = UNSCHEDULABLE
            # Short reason now; explain() adds kube-scheduler's per-node summary on demand
            # (computing it at every failed attempt would cost O(N) each time).
            record.reason = f"gang of {record.job.workers} workers: only {len(trial)} could be placed now"
            self._block(key, request, record.reason, False)
            return Outcome.WAITING
        choice = self.select_node(request, record, within)
        if choice is None:
            record.status = UNSCHEDULABLE
            record.reason = "no node fits one more worker now"
            self._block(key, request, record.reason, True)
            return Outcome.WAITING
        self._bind_raw(choice[0], choice[1], request)
        self._commit(record, choice[0], choice[1], request)
        if len(record.placements) >= record.job.workers:
            self._start(record)
            return Outcome.STARTED
        return Outcome.PROGRESS

    def _select_masked(self, request: Request, record: JobRecord, mask: np.ndarray | None,
                       devices: np.ndarray | None) -> tuple[int, tuple[int, ...]] | None:
        """:meth:`select_node` restricted to the nodes of ``mask`` (PreFilter) and to the GPUs
        of ``devices`` (device filters: bool (N, G)); the policy scores and picks GPUs on a
        view of the state in which the other GPUs look full."""
        if devices is None and mask is None:
            return self.select_node(request, record)
        ok = self.feasible_mask(request, record)
        if mask is not None:
            ok &= mask
        candidates = np.flatnonzero(ok)
        state = self.state
        allowed = devices[candidates] if devices is not None and candidates.size and request.num_gpus > 0 else None
        if allowed is not None and not allowed.all():
            # the nodes that pass with every GPU must still pass with the allowed GPUs only
            sub = np.where(allowed, state.gpu_free[candidates], 0)
            if request.num_gpus == 1 and request.gpu_milli < MILLI_PER_GPU:
                keep = sub.max(axis=1) >= request.gpu_milli
            else:
                keep = (sub >= MILLI_PER_GPU).sum(axis=1) >= request.num_gpus
            candidates = candidates[keep]
            if candidates.size:
                # NOTE: speed. A read-only view sharing every array but the free GPUs (the
                # policy only reads the state): no copy of the CPU and memory arrays.
                view = object.__new__(type(state))
                view.__dict__.update(state.__dict__)
                view.gpu_free = np.where(devices, state.gpu_free, 0)
                view.gpu_idle = view.gpu_free.sum(axis=1)
                state = view
        if candidates.size == 0:
            return None
        if self.nodes_to_score is not None and candidates.size > self.nodes_to_score:
            candidates = candidates[: self.nodes_to_score]
        return self._score_and_pick(state, request, candidates, record)

    def _score_and_pick(self, state: ClusterState, request: Request,
                        candidates: np.ndarray, record: JobRecord | None = None) -> tuple[int, tuple[int, ...]]:
        """Score -> select -> pick GPUs among non-empty ``candidates`` on ``state`` (as
        :func:`lab01_cluster_sim.policies.base.place`: one candidate is taken unscored; ties
        go to the lowest ``tie_rank``)."""
        if candidates.size == 1:
            node = int(candidates[0])
        else:
            scores = self.scores(state, request, record, candidates)
            best = candidates[scores == scores.max()]
            node = int(best[np.argmin(state.tie_rank[best])])
        return node, tuple(int(g) for g in self.policy.pick_gpus(state, request, node, self.rng))

    def _gang_permit(self, workers_placed: int, workers_needed: int) -> bool:
        """The Permit rule of gang mode for the plugin path (:func:`gang_permit`)."""
        return gang_permit(workers_placed, workers_needed)

    def slots_of(self, record: JobRecord, cpu_free: np.ndarray | None = None, mem_free: np.ndarray | None = None,
                 gpu_free: np.ndarray | None = None) -> np.ndarray:
        """int64 (N,): workers of ``record`` each node could host, on the nodes it may use
        (online, GPU model, every extra filter); 0 elsewhere. Free resources default to the
        cluster's now (no copy)."""
        st = self.state
        req = self.request_of(record)
        slots = worker_slots(req, st.cpu_free if cpu_free is None else cpu_free,
                             st.mem_free if mem_free is None else mem_free,
                             st.gpu_free if gpu_free is None else gpu_free, self._model_ok(req.gpu_models))
        allowed = self.online.copy()
        for extra in self.extra_filters:
            allowed &= extra(req, record)
        return np.where(allowed, slots, 0)

    def is_blocked(self, record: JobRecord) -> bool:
        """True when ``record``'s shape is remembered as blocked: it found no room and no
        node that could host one of its workers got resources back since."""
        return self.blocked_key(record) in self._blocked

    def trial(self) -> TrialState:
        """A :class:`TrialState` copy of the free resources now."""
        return TrialState(self)

    def add_nodes(self, indices: range, online: bool = True) -> None:
        """Grow the per-node summaries after :meth:`ClusterState.add_nodes` appended nodes
        ``indices``; they start online or cordoned (``online``). Every blocked shape is
        retried (new room may fit it)."""
        st = self.state
        new = st.gpu_free[indices.start: indices.stop]
        self.full_free = np.concatenate([self.full_free, (new >= MILLI_PER_GPU).sum(axis=1).astype(np.int64)])
        self.max_free = np.concatenate([self.max_free, new.max(axis=1).astype(np.int64)])
        self.online = np.concatenate([self.online, np.full(len(indices), online, dtype=bool)])
        self._node_scratch = np.zeros(st.num_nodes, dtype=bool)
        self._model_masks.clear()
        self.uncordon_all_blocked()

    def uncordon_all_blocked(self) -> None:
        """Forget every blocked shape (the cluster changed in a way releases do not track)."""
        self._blocked.clear()
        self._table = BlockedTable()
        self._since.clear()
        self._released_pending.clear()
        self._woke_all = True

    # -- a pass -----------------------------------------------------------------------
    def run_pass(self, now: float) -> None:
        """One scheduling pass at time ``now``: the discipline tries its jobs; in naive mode
        rounds repeat while some worker was bound (round-robin over the pending jobs)."""
        self.now = now
        self._pass_id += 1
        if self.mode == "gang":
            self.discipline.run_pass(self)
            return
        while True:
            before = self.bound_workers
            self.discipline.run_pass(self)
            if self.bound_workers == before:
                return

    def find_deadlock(self) -> DeadlockReport | None:
        """Naive mode: a report if pending jobs hold partial gangs and no pending job could
        ever complete its gang, else None.

        "Ever": even if every running job of finite duration completed and freed what it
        holds (services of infinite duration never do); jobs arriving later only take
        resources, so they cannot help. Costs one copy of the free-resource arrays, so the
        simulation calls it only after a pass that left partial holdings.
        """
        pending = [r for r in self.discipline.order() if r.state is JobState.PENDING]
        holders = [r for r in pending if r.placements]
        if not holders:
            return None
        st = self.state
        cpu, mem, gpu = st.cpu_free.copy(), st.mem_free.copy(), st.gpu_free.copy()
        for rec in self.running.values():
            if math.isfinite(rec.remaining):
                req = self.request_of(rec)
                for p in rec.placements:
                    cpu[p.node_index] += req.cpu_milli
                    mem[p.node_index] += req.memory_mib
                    for g in p.gpus:
                        gpu[p.node_index, g] += req.gpu_milli
        online = self.online
        for rec in pending:
            req = self.request_of(rec)
            slots = worker_slots(req, cpu, mem, gpu, self._model_ok(req.gpu_models)) * online
            if int(slots.sum()) >= rec.job.workers - len(rec.placements):
                return None
        return DeadlockReport(
            time=self.now,
            holdings=tuple(Holding(r.job_id, len(r.placements), r.job.workers, tuple(r.placements))
                           for r in holders),
            waiting=tuple(r.job_id for r in pending if not r.placements),
            free_gpus=int(self.full_free[self.online].sum()),
        )
