"""The scheduling cycle, stage by stage as in the Kubernetes scheduling framework.

For every pending job, in the order its :class:`QueueDiscipline` gives (**queue sort**):

1. **Filter**: which nodes can host one worker now (CPU, memory, GPUs of an allowed model,
   node online). :func:`filter_node` lists *every* reason a node is refused, with
   requested / used / capacity, like NodeResourcesFit's ``InsufficientResource``. A job that
   fits no node now stays pending (``Unschedulable``, "not now"); a job that could not fit
   even on an empty cluster is rejected on arrival (``UnschedulableAndUnresolvable``,
   "never"; :func:`unresolvable_reason`).
2. **Score**: the placement policy (:mod:`lab01_cluster_sim.policies`) scores the feasible
   nodes; the highest wins, ties go to the lowest ``state.tie_rank``; the policy then picks
   the GPUs inside the node. Same steps as :func:`lab01_cluster_sim.policies.base.place`.
3. **Permit**: in *gang* mode every worker of a job is trial-placed (bound, then rolled back
   if the gang is incomplete) and :func:`gang_permit` allows the job only when all of them
   found a place: all-or-nothing, as the coscheduling plugin's Permit stage does. In *naive*
   mode there is no permit: workers are bound one at a time, round-robin over the pending
   jobs, and partial allocations are held (a Kubernetes scheduler without coscheduling).
4. **Bind**: :meth:`ClusterState.bind`.

Naive mode can deadlock: jobs each hold part of their gang, and nothing that runs will ever
free enough for any of them. :meth:`Scheduler.find_deadlock` detects it and names who holds
what; the simulation then stops (it never hangs).

Speed. The filter is a handful of vector comparisons over per-node arrays kept up to date
on every bind and release (fully free GPUs, largest free share per GPU), not a rescan of
the (nodes x GPUs) matrix. A job shape (worker request x workers) that found no room is
remembered as *blocked*; later jobs of the same shape are skipped without work until a
release frees room on a node that can host one of its workers (binds only take resources,
so nothing else can unblock it; FIFO-skip wakes them lazily, earliest first); a one-worker
shape's retry filters only the nodes released
since it was blocked (no other node can have become feasible). These shortcuts rely on every
change to the cluster state during a run going through the scheduler (binds in
:meth:`Scheduler.try_schedule`, :meth:`Scheduler.release_job`, :meth:`Scheduler.cordon` /
:meth:`Scheduler.uncordon`); extensions that want to try placements on the side should work
on a copy of the arrays. Optionally, like kube-scheduler's
``percentageOfNodesToScore``, only ``nodes_to_score`` feasible nodes are scored, taken
round-robin from a rotating start (:func:`adaptive_nodes_to_score` gives Kubernetes' default).

Extension points (the plugins of :mod:`lab01_cluster_sim.plugins` reach them through
:class:`lab01_cluster_sim.simulate.Simulation`; all empty by default, so the fast path above
is untouched):

- :attr:`Scheduler.pre_filters`, :attr:`Scheduler.device_filters`, :attr:`Scheduler.permits`,
  :attr:`Scheduler.post_filters`: PreFilter (restrict the candidate nodes, or "not now"),
  device filter (GPUs a job may use), Permit (refuse a trial placement), PostFilter (evict to
  make room, then one more try). With any of them, :meth:`Scheduler.try_schedule` takes the
  plugin path (blocked memo per job).
- :meth:`Scheduler.trial` / :meth:`Scheduler.slots_of`: "would this job fit if ..." with every
  filter, for preemption victims and backfill reservations; :meth:`Scheduler.plan_placements`
  places a gang on a copy of the state; :meth:`Scheduler.bind_placements` binds a plan.

- :class:`QueueDiscipline`: keeps the pending jobs and runs a pass by calling
  :meth:`Scheduler.try_schedule` for jobs in its order. It may skip jobs (backfill), stop at
  a blocked head (strict FIFO), read :attr:`Scheduler.now` and :attr:`Scheduler.running` (the
  running jobs, with their expected end in ``record.run_started + record.remaining``) to
  make reservations, and ask for an eviction with :meth:`Scheduler.evict`. Register a new
  one with :func:`register_discipline`.
- :class:`SchedulerObserver`: hooks on enqueue, bind, release, start, finish, reject and
  evict; metrics use them to stay incremental. Only overridden hooks are called.
- :meth:`Scheduler.cordon` / :meth:`Scheduler.uncordon`: take a node out of (or back into)
  scheduling, for node-down events or nodes an autoscaler has not launched yet.
- :attr:`Scheduler.extra_filters`: callables ``(request, record) -> bool mask (N,)`` ANDed into
  the filter (taints/tolerations, topology); empty by default, so free when unused. When
  present, jobs of the same shape are no longer treated as interchangeable (the blocked
  memo becomes per job and FIFO-skip tries every job), since the filter may read the job.
"""

from __future__ import annotations

import bisect
import copy
import enum
import importlib
import math
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from lab01_cluster_sim.cluster import ClusterState, Request
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.model import MILLI_PER_GPU, Job, JobRecord, JobState, Placement, format_seconds
from lab01_cluster_sim.policies.base import PlacementPolicy

MODES = ("gang", "naive")
"""Placement modes: all-or-nothing gangs, or one worker at a time without coscheduling."""

UNSCHEDULABLE = "Unschedulable"
"""Framework status: does not fit now; may fit later (stays pending)."""
UNSCHEDULABLE_AND_UNRESOLVABLE = "UnschedulableAndUnresolvable"
"""Framework status: cannot fit even on an empty cluster (rejected)."""

_MANY = 1 << 40  # "unbounded" slot count for a resource a request does not use


# -- filter -------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class InsufficientResource:
    """One resource a node lacks for a request (NodeResourcesFit's ``InsufficientResource``).

    Attributes:
        resource: ``"cpu"`` (milli-cores), ``"memory"`` (MiB), ``"nvidia.com/gpu"`` (whole
            GPUs) or ``"gpu-share"`` (milli-GPU on a single GPU).
        requested: amount asked for by one worker.
        used: amount already taken on the node (for ``gpu-share``: of its emptiest GPU).
        capacity: the node's total (for ``gpu-share``: one GPU, 1000).
    """

    resource: str
    requested: int
    used: int
    capacity: int

    def __str__(self) -> str:
        return (f"Insufficient {self.resource} (requested {self.requested}, used {self.used}, "
                f"capacity {self.capacity})")


def filter_node(state: ClusterState, request: Request, node: int, online: bool = True) -> list[str]:
    """Every reason why ``node`` cannot host one worker asking ``request`` now; [] if it can.

    Each reason is a sentence; short resources come from :class:`InsufficientResource`
    (requested / used / capacity). Used for explanations, not in the hot path (which uses
    vector masks with the same rules).
    """
    reasons: list[str] = []
    n = node
    if not online:
        reasons.append("node is cordoned (offline)")
    model = state.nodes[n].gpu_model
    if request.num_gpus > 0 and request.gpu_models and model not in request.gpu_models:
        reasons.append(f"GPU model {model or 'none'!r} not in the allowed models {list(request.gpu_models)}")
    cpu_cap, mem_cap = int(state.cpu_capacity[n]), int(state.mem_capacity[n])
    if state.cpu_free[n] < request.cpu_milli:
        reasons.append(str(InsufficientResource("cpu", request.cpu_milli, cpu_cap - int(state.cpu_free[n]), cpu_cap)))
    if state.mem_free[n] < request.memory_mib:
        reasons.append(str(InsufficientResource("memory", request.memory_mib,
                                                mem_cap - int(state.mem_free[n]), mem_cap)))
    count = int(state.gpu_count[n])
    row = state.gpu_free[n, :count]
    if request.num_gpus > 0:
        if request.gpu_milli >= MILLI_PER_GPU or request.num_gpus > 1:
            full = int((row >= MILLI_PER_GPU).sum())
            if full < request.num_gpus:
                reasons.append(str(InsufficientResource("nvidia.com/gpu", request.num_gpus, count - full, count)))
        else:
            best = int(row.max()) if count else 0
            if best < request.gpu_milli:
                reasons.append(str(InsufficientResource("gpu-share", request.gpu_milli,
                                                        MILLI_PER_GPU - best, MILLI_PER_GPU)))
    return reasons


def worker_slots(request: Request, cpu_free: np.ndarray, mem_free: np.ndarray, gpu_free: np.ndarray,
                 model_ok: np.ndarray) -> np.ndarray:
    """int64 (N,): how many workers asking ``request`` each node can host at once.

    The minimum over resources of (free // per-worker ask): CPU, memory, and GPUs: for whole
    GPUs, fully free GPUs // k; for a shared GPU (k = 1, u < 1000), sum over GPUs of
    free_g // u. Nodes whose model is not allowed (``model_ok`` False) host 0. Placing
    workers one by one on a node lowers its count by exactly one each time, whatever GPUs
    they take, so a gang of w workers fits the cluster now iff the slots sum to >= w.

    Args:
        cpu_free, mem_free: int (N,); gpu_free: int (N, G) milli-GPU; model_ok: bool (N,).
    """
    slots = np.full(cpu_free.shape[0], _MANY, dtype=np.int64)
    if request.cpu_milli > 0:
        slots = np.minimum(slots, cpu_free // request.cpu_milli)
    if request.memory_mib > 0:
        slots = np.minimum(slots, mem_free // request.memory_mib)
    if request.num_gpus > 0:
        if request.gpu_milli >= MILLI_PER_GPU:
            gpu_slots = (gpu_free >= MILLI_PER_GPU).sum(axis=1) // request.num_gpus
        else:
            gpu_slots = (gpu_free // request.gpu_milli).sum(axis=1)
        slots = np.minimum(slots, gpu_slots)
        slots = np.where(model_ok, slots, 0)
    return np.maximum(slots, 0)


@dataclass(frozen=True)
class CapacityClasses:
    """The cluster's nodes grouped by capacity (GPU model, GPU count, CPU, memory).

    Real clusters have a handful of node types, so questions about the *empty* cluster
    (can this job ever fit?) cost O(types), not O(N). Build once with :meth:`of`.

    Attributes:
        model_index, gpu_count, cpu_capacity, mem_capacity: int64 (T,) per class.
        count: int64 (T,), nodes in each class.
        gpu_free: int64 (T, G), every GPU of the class fully free (padding 0).
        model_names: as ``ClusterState.model_names``.
    """

    model_index: np.ndarray
    gpu_count: np.ndarray
    cpu_capacity: np.ndarray
    mem_capacity: np.ndarray
    count: np.ndarray
    gpu_free: np.ndarray
    model_names: tuple[str, ...]

    @classmethod
    def of(cls, state: ClusterState, allowed: np.ndarray | None = None) -> "CapacityClasses":
        """The classes of ``state``'s nodes (only the ``allowed`` ones, bool (N,), if given)."""
        rows = np.stack([state.model_index, state.gpu_count, state.cpu_capacity, state.mem_capacity], axis=1)
        if allowed is not None:
            rows = rows[allowed]
        uniq, counts = np.unique(rows, axis=0, return_counts=True) if len(rows) else (rows, np.zeros(0, np.int64))
        width = state.gpu_free.shape[1]
        full = np.where(np.arange(width)[None, :] < uniq[:, 1:2], MILLI_PER_GPU, 0).astype(np.int64)
        return cls(uniq[:, 0], uniq[:, 1], uniq[:, 2], uniq[:, 3], counts.astype(np.int64), full,
                   tuple(state.model_names))

    def model_ok(self, gpu_models: tuple[str, ...]) -> np.ndarray:
        if not gpu_models:
            return np.ones(self.count.shape[0], dtype=bool)
        wanted = [i for i, m in enumerate(self.model_names) if m in set(gpu_models)]
        return np.isin(self.model_index, wanted)


def unresolvable_reason(state: ClusterState, job: Job, classes: CapacityClasses | None = None) -> str | None:
    """Why ``job`` can never run on this cluster, even empty; None if it could.

    A worker must fit some node's capacity (CPU, memory, GPU count and model), and the gang
    must find ``workers`` slots on the empty cluster (:func:`worker_slots` at capacity).
    Cordoned nodes count: they may come back. Pass ``classes`` (built once) to make the
    check O(node types) instead of O(N).
    """
    c = classes if classes is not None else CapacityClasses.of(state)
    request = Request.of_worker(job)
    model_ok = c.model_ok(request.gpu_models)
    slots = worker_slots(request, c.cpu_capacity, c.mem_capacity, c.gpu_free, model_ok)
    total = int(np.minimum(slots * c.count, _MANY).sum())
    if total >= job.workers:
        return None
    if total == 0:
        models = f" of model {'|'.join(request.gpu_models)}" if request.gpu_models else ""
        need = (f"{request.num_gpus} GPU(s){models} + " if request.num_gpus else "") + \
            f"{request.cpu_milli} milli-CPU + {request.memory_mib} MiB on one node"
        if request.num_gpus:
            big = model_ok & (c.gpu_count >= request.num_gpus)
            if not big.any():
                pool = c.gpu_count[model_ok]
                have = f"the largest node{models} has {int(pool.max()) if pool.size else 0} GPU(s)"
            else:
                have = (f"nodes with {request.num_gpus}+ GPUs{models} have at most "
                        f"{int(c.cpu_capacity[big].max())} milli-CPU and {int(c.mem_capacity[big].max())} MiB")
        else:
            have = (f"the largest nodes have {int(c.cpu_capacity.max(initial=0))} milli-CPU and "
                    f"{int(c.mem_capacity.max(initial=0))} MiB")
        return f"no node can host one worker even when empty: needs {need}; {have}"
    return (f"gang of {job.workers} workers cannot fit even on the empty cluster: "
            f"room for {total} worker(s) of this shape")


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


_HOOKS = ("on_enqueue", "on_bind", "on_release", "on_start", "on_finish", "on_reject", "on_evict")


# -- queue disciplines --------------------------------------------------------------------
def shape_key(job: Job, gang: bool = True) -> tuple:
    """Hashable shape of a job for the blocked memo: the worker request's numbers and
    allowed models, and the number of workers in gang mode (1 in naive mode, where one
    worker is placed at a time). A plain tuple, cheap to hash."""
    return (job.cpu_milli, job.memory_mib, job.gpus_per_worker, job.gpu_milli, job.gpu_models,
            job.workers if gang else 1)


class Outcome(enum.Enum):
    """Result of :meth:`Scheduler.try_schedule` for one job."""

    STARTED = "started"      # every worker bound; the job runs
    PROGRESS = "progress"    # naive mode: one more worker bound, the gang is not complete
    WAITING = "waiting"      # nothing bound (not now); the job stays pending


class QueueDiscipline:
    """Queue sort: holds the pending jobs and decides in which order they are tried.

    A discipline must implement :meth:`push`, :meth:`remove`, :meth:`order` and
    ``__len__``. Jobs that found no room are remembered by the scheduler as blocked and
    answered WAITING at once until a release makes room on a node that could host one of
    their workers (then they are forgotten, "woken"; :meth:`Scheduler.pop_woken` lists them).
    A discipline that sets ``lazy_wake = True`` takes over waking instead (see
    :class:`FifoSkip`). The default :meth:`run_pass` tries the jobs in :meth:`order`; with
    ``blocking = True`` it stops at the first job that cannot be served (strict
    head-of-line blocking). Priority, DRF or backfill disciplines override :meth:`order`
    and/or :meth:`run_pass` and may call :meth:`Scheduler.evict` to preempt.
    """

    name: ClassVar[str] = ""
    blocking: ClassVar[bool] = False
    lazy_wake: ClassVar[bool] = False

    def push(self, record: JobRecord) -> None:
        raise NotImplementedError

    def remove(self, record: JobRecord) -> None:
        raise NotImplementedError

    def order(self) -> Iterable[JobRecord]:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError

    def run_pass(self, scheduler: "Scheduler") -> None:
        """Try pending jobs once each, in :meth:`order`."""
        for record in list(self.order()):
            if record.state is not JobState.PENDING:
                continue
            outcome = scheduler.try_schedule(record)
            if outcome is Outcome.WAITING and self.blocking:
                break


class Fifo(QueueDiscipline):
    """First in, first out with strict head-of-line blocking: if the oldest pending job
    cannot start, nobody behind it is tried (the classic batch-queue FIFO). Order is by
    first enqueue (``record.queue_seq``): a job evicted and requeued gets its old place back."""

    name: ClassVar[str] = "fifo"
    blocking: ClassVar[bool] = True

    def __init__(self) -> None:
        self._queue: dict[str, JobRecord] = {}
        self._last = -1

    def push(self, record: JobRecord) -> None:
        self._queue[record.job_id] = record
        if record.queue_seq < self._last:    # a requeued job: back to its place (rare, O(n))
            self._queue = dict(sorted(self._queue.items(), key=lambda kv: kv[1].queue_seq))
        else:
            self._last = record.queue_seq

    def remove(self, record: JobRecord) -> None:
        self._queue.pop(record.job_id, None)

    def order(self) -> Iterator[JobRecord]:
        return iter(self._queue.values())

    def __len__(self) -> int:
        return len(self._queue)

    def run_pass(self, scheduler: "Scheduler") -> None:
        if scheduler.mode == "naive":
            return super().run_pass(scheduler)
        # Gang mode: only the head can start; started jobs leave the queue.
        while self._queue:
            head = next(iter(self._queue.values()))
            if scheduler.try_schedule(head) is not Outcome.STARTED:
                return


def _first(item: tuple) -> object:
    return item[0]


class FifoSkip(QueueDiscipline):
    """First in, first out, but a blocked job does not block the ones behind it: every
    pending job is tried in arrival order (what kube-scheduler does by default).

    Jobs are kept in one FIFO per job shape (worker request x workers). A pass merges the
    heads of the *active* shapes by arrival order; a shape whose head cannot be placed goes
    dormant (the rest of that shape cannot be placed either: resources only shrink during a
    pass). Dormant shapes come back by *lazy wake* (``lazy_wake = True``): the scheduler
    only records which nodes got resources back, and the pass repeatedly takes the earliest
    dormant shape whose worker fits one of those nodes now (one vector test over the
    blocked shapes, :meth:`Scheduler.earliest_fitting_blocked`), merged by arrival order
    with the active shapes. A dormant shape that fits none of the freed nodes cannot be
    placed anywhere, so it is never touched; the schedule is the same as retrying every
    blocked job in order (``tests/lab01/test_properties.py`` checks it). A pass thus costs
    O(placed x blocked shapes) vector work plus O((placed + new shapes) log shapes)
    comparisons, not O(pending). With extra filters or in naive mode it falls back to trying every job.
    """

    name: ClassVar[str] = "fifo-skip"
    blocking: ClassVar[bool] = False
    lazy_wake: ClassVar[bool] = True

    def __init__(self) -> None:
        # per shape: entries (queue_seq, token, record) in queue_seq order
        self._by_shape: dict[tuple, deque[tuple[int, int, JobRecord]]] = {}
        self._dormant: set[tuple] = set()
        self._active: set[tuple] = set()  # shapes with jobs that are not dormant
        self._token = 0
        self._live: dict[str, int] = {}  # job id -> token of its live entry
        self._queued: dict[str, tuple[int, JobRecord]] = {}  # job id -> (queue_seq, record), for order()

    @staticmethod
    def _shape(record: JobRecord) -> tuple:
        # Same as Scheduler.blocked_key in gang mode without extra filters.
        return shape_key(record.job) + (None,)

    def push(self, record: JobRecord) -> None:
        key = self._shape(record)
        dq = self._by_shape.setdefault(key, deque())
        entry = (record.queue_seq, self._token, record)
        if dq and dq[-1][0] > record.queue_seq:
            # A requeued job (evicted) goes back to its place by first enqueue (rare).
            i = len(dq)
            while i > 0 and dq[i - 1][0] > record.queue_seq:
                i -= 1
            dq.insert(i, entry)
        else:
            dq.append(entry)
        if key not in self._dormant:
            self._active.add(key)
        self._live[record.job_id] = self._token
        self._queued[record.job_id] = (record.queue_seq, record)
        self._token += 1

    def remove(self, record: JobRecord) -> None:
        # Lazy deletion: the entry is dropped when it reaches the head of its deque.
        self._live.pop(record.job_id, None)
        self._queued.pop(record.job_id, None)

    def _head(self, key: tuple) -> tuple[int, int, JobRecord] | None:
        dq = self._by_shape.get(key)
        if dq is None:
            return None
        live = self._live
        while dq and live.get(dq[0][2].job_id) != dq[0][1]:
            dq.popleft()
        if not dq:
            del self._by_shape[key]
            self._dormant.discard(key)
            self._active.discard(key)
            return None
        return dq[0]

    def order(self) -> list[JobRecord]:
        return [rec for _, rec in sorted(self._queued.values(), key=_first)]

    def __len__(self) -> int:
        return len(self._live)

    def run_pass(self, scheduler: "Scheduler") -> None:
        woken = scheduler.pop_woken()
        if scheduler.mode == "naive" or not scheduler.interchangeable:
            # Per-shape skipping assumes jobs of one shape are interchangeable, which extra
            # filters that read the job (tolerations) or scheduling plugins (PreFilter,
            # device filters, permits) break: try every job instead.
            # Shapes left dormant by lazy wake are forgotten so the plain path retries them.
            for key in self._dormant:
                scheduler.wake(key)
            scheduler.pop_released()
            self._active.update(k for k in self._dormant if k in self._by_shape)
            self._dormant.clear()
            return super().run_pass(scheduler)
        if woken is None:  # every blocked shape was forgotten (a node came back)
            woken = list(self._dormant)
        for key in woken:
            if key in self._dormant:
                self._dormant.discard(key)
                if key in self._by_shape:
                    self._active.add(key)
        lazy = scheduler.lazy_wake_active()
        released = scheduler.pop_released() if lazy else []
        # The heads of the active shapes as (-queue_seq, key), sorted: the earliest head is
        # last, so it pops in O(1) and a shape's next head goes back in by bisection (an
        # in-place list insert: a memmove of at most a few thousand pointers; the 100,000-job
        # synthetic benchmark has 4,133 shapes). queue_seq is unique, so keys are never
        # compared. This is a merge of queue heads inside one pass, not an event queue: the
        # engine's heap (engine.py) is the only one.
        entries = []
        for key in list(self._active):
            head = self._head(key)
            if head is not None:
                entries.append((-head[0], key))
        entries.sort()
        # Lazy wake: of the dormant shapes, the earliest one whose worker fits a node freed
        # since the last pass goes next, in arrival order with the active shapes. A dormant
        # shape that fits none of them cannot be placed (no other node got room), so it is
        # never touched: no wake-then-fail churn.
        cand: tuple | None = None
        cand_valid = False
        while True:
            if lazy and released and not cand_valid:
                cand = scheduler.earliest_fitting_blocked(released)
                cand_valid = True
            cand_head = None
            if cand is not None:
                cand_head = self._head(cand)
                if cand_head is None:  # no job of that shape left here
                    scheduler.wake(cand)
                    cand, cand_valid = None, False
                    continue
            if cand_head is not None and (not entries or cand_head[0] < -entries[-1][0]):
                key = cand
                scheduler.wake(key)
                self._dormant.discard(key)
                self._active.add(key)
                cand, cand_valid = None, False
                head = cand_head
            elif entries:
                _, key = entries.pop()
                head = self._head(key)
                if head is None:
                    continue
            else:
                break
            if scheduler.try_schedule(head[2]) is Outcome.STARTED:
                cand_valid = False  # resources changed: the candidate may not fit any more
                cand = None
                nxt = self._head(key)
                if nxt is not None:
                    bisect.insort(entries, (-nxt[0], key))
            else:
                self._active.discard(key)  # blocked until woken
                self._dormant.add(key)


DISCIPLINES: dict[str, type[QueueDiscipline]] = {Fifo.name: Fifo, FifoSkip.name: FifoSkip}
"""Discipline name -> class. Extensions add theirs with :func:`register_discipline`."""


def register_discipline(cls: type[QueueDiscipline]) -> type[QueueDiscipline]:
    """Class decorator adding a queue discipline to :data:`DISCIPLINES` under ``cls.name``."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} needs a non-empty name")
    if DISCIPLINES.get(cls.name, cls) is not cls:
        raise ValueError(f"discipline {cls.name!r} registered twice")
    DISCIPLINES[cls.name] = cls
    return cls


def get_discipline(name: str, **kwargs) -> QueueDiscipline:
    """Instantiate the queue discipline registered as ``name``.

    Disciplines defined in the :mod:`lab01_cluster_sim.disciplines` package register
    themselves when that package is imported, which this function does on a miss.

    Raises:
        InputError: unknown name (the message lists the known ones).
    """
    if name not in DISCIPLINES:
        try:
            importlib.import_module("lab01_cluster_sim.disciplines")
        except ImportError:
            pass
    try:
        cls = DISCIPLINES[name]
    except KeyError:
        raise InputError(f"unknown queue discipline {name!r}; expected one of: "
                         f"{', '.join(sorted(DISCIPLINES))}") from None
    return cls(**kwargs)


# -- deadlock -----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Holding:
    """A pending job's partial allocation in a naive-mode deadlock."""

    job_id: str
    workers_bound: int
    workers: int
    placements: tuple[Placement, ...]

    @property
    def gpus_held(self) -> int:
        return sum(len(p.gpus) for p in self.placements)


@dataclass(frozen=True, slots=True)
class DeadlockReport:
    """Naive-mode deadlock: pending jobs hold parts of their gangs and none can ever finish
    gathering it, even after every running job (of finite duration) completes.

    Attributes:
        time: when it was detected, s.
        holdings: the jobs holding partial allocations, with their placements.
        waiting: other pending jobs (holding nothing) that are stuck too.
        free_gpus: fully free GPUs at detection time.
    """

    time: float
    holdings: tuple[Holding, ...]
    waiting: tuple[str, ...]
    free_gpus: int

    def lines(self) -> list[str]:
        """Human-readable report, one line per holding."""
        out = [f"deadlock at t={format_seconds(self.time)}s: {len(self.holdings)} job(s) hold partial gangs, "
               f"{self.free_gpus} GPU(s) free, no job can complete its gang"]
        for h in self.holdings:
            where = ", ".join(f"{p.node}:gpu{','.join(map(str, p.gpus))}" if p.gpus else p.node
                              for p in h.placements)
            out.append(f"  {h.job_id}: {h.workers_bound}/{h.workers} workers bound, "
                       f"holds {h.gpus_held} GPU(s) on {where}")
        if self.waiting:
            out.append(f"  also stuck (holding nothing): {', '.join(self.waiting)}")
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())


# -- plugin outcomes -----------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class PreFilterResult:
    """What a PreFilter plugin answers for one scheduling attempt of one job (None = no opinion).

    Attributes:
        nodes: bool (N,): only these nodes are candidates in this attempt (Kubernetes'
            ``PreFilterResult.NodeNames``), e.g. the nodes of one NVLink island.
        wait: not now: the job stays pending (``Unschedulable``) with this reason, even if
            it would fit (a bounded wait for a better placement).
        retry_at: with ``wait``: run a scheduling cycle at this time, s.
        assign: the plugin chose every worker's place itself, ``((node, gpus), ...)``; they
            are bound as given (after the permit checks).
    """

    nodes: np.ndarray | None = None
    wait: str | None = None
    retry_at: float | None = None
    assign: tuple[tuple[int, tuple[int, ...]], ...] | None = None


class TrialState:
    """Copies of the free CPU, memory and GPU arrays, to ask "would this job fit if ..."
    without touching the cluster (preemption victims, backfill reservations, stranded GPUs).

    Fit is decided with :func:`worker_slots`, which is exact for gangs: a gang of ``w``
    workers can be placed iff the allowed nodes' slots sum to ``w`` or more. Allowed nodes:
    online, GPU model, and every ``extra_filters`` mask of the scheduler (taints,
    nodeSelector, shape-aware admission) for the job asked about.

    Args:
        scheduler: whose state is copied.
    """

    def __init__(self, scheduler: "Scheduler") -> None:
        st = scheduler.state
        self.scheduler = scheduler
        self.cpu = st.cpu_free.copy()
        self.mem = st.mem_free.copy()
        self.gpu = st.gpu_free.copy()

    def release(self, record: JobRecord, placements: Iterable[Placement] | None = None) -> None:
        """Give back what ``record`` holds (or only ``placements`` of it)."""
        req = self.scheduler.request_of(record)
        for p in (record.placements if placements is None else placements):
            self.cpu[p.node_index] += req.cpu_milli
            self.mem[p.node_index] += req.memory_mib
            for g in p.gpus:
                self.gpu[p.node_index, g] += req.gpu_milli

    def take(self, record: JobRecord, placements: Iterable[tuple[int, tuple[int, ...]]]) -> None:
        """Take what ``record``'s workers would hold at ``placements`` ``((node, gpus), ...)``."""
        req = self.scheduler.request_of(record)
        for node, gpus in placements:
            self.cpu[node] -= req.cpu_milli
            self.mem[node] -= req.memory_mib
            for g in gpus:
                self.gpu[node, g] -= req.gpu_milli

    def slots(self, record: JobRecord) -> np.ndarray:
        """int64 (N,): workers of ``record`` each allowed node could host (0 elsewhere)."""
        return self.scheduler.slots_of(record, self.cpu, self.mem, self.gpu)

    def fits(self, record: JobRecord, workers: int | None = None) -> bool:
        """True if ``workers`` more workers of ``record`` (default: the rest of its gang,
        ``job.workers - len(placements)``) fit now in this trial state."""
        need = record.job.workers - len(record.placements) if workers is None else workers
        return int(np.minimum(self.slots(record), _MANY).sum()) >= need


# -- the scheduler ------------------------------------------------------------------------
class _BlockedTable:
    """The worker requests of the blocked shapes as arrays, to find in one vector pass which
    of them fit a node that just got resources back (used by :meth:`Scheduler._unblock`)."""

    def __init__(self) -> None:
        self.keys: list[tuple | None] = []
        self.slot: dict[tuple, int] = {}
        self.free: list[int] = []
        cap = 64
        self.cpu = np.zeros(cap, dtype=np.int64)
        self.mem = np.zeros(cap, dtype=np.int64)
        self.k = np.zeros(cap, dtype=np.int64)
        self.u = np.zeros(cap, dtype=np.int64)
        self.model = np.zeros(cap, dtype=np.int64)
        self.order = np.zeros(cap, dtype=np.int64)  # enqueue order of the job that was blocked
        self.mark = np.full(cap, -1, dtype=np.int64)  # pass in which it was blocked
        self.live = np.zeros(cap, dtype=bool)
        self.model_sets: dict[tuple[str, ...], int] = {}
        self.model_rows: list[np.ndarray] = []
        self.model_table = np.zeros((0, 0), dtype=bool)

    def add(self, key: tuple, request: Request, sched: "Scheduler") -> None:
        i = self.slot.get(key)
        if i is None:
            if self.free:
                i = self.free.pop()
                self.keys[i] = key
            else:
                i = len(self.keys)
                self.keys.append(key)
                if i >= self.cpu.shape[0]:
                    for name in ("cpu", "mem", "k", "u", "model", "order", "mark", "live"):
                        old = getattr(self, name)
                        grown = np.zeros(2 * old.shape[0], dtype=old.dtype)
                        grown[: old.shape[0]] = old
                        setattr(self, name, grown)
            self.slot[key] = i
        mid = self.model_sets.get(request.gpu_models)
        if mid is None:
            mid = self.model_sets[request.gpu_models] = len(self.model_rows)
            self.model_rows.append(sched._model_ok(request.gpu_models))
            self.model_table = np.vstack(self.model_rows)
        self.cpu[i], self.mem[i] = request.cpu_milli, request.memory_mib
        self.k[i], self.u[i], self.model[i] = request.num_gpus, request.gpu_milli, mid
        self.order[i], self.mark[i] = sched._cur_order, sched._pass_id
        self.live[i] = True

    def _hits(self, sched: "Scheduler", nodes: Iterable[int]) -> np.ndarray:
        n_used = len(self.keys)
        live = self.live[:n_used]
        k, u = self.k[:n_used], self.u[:n_used]
        frac = (k == 1) & (u < MILLI_PER_GPU)
        hit = np.zeros(n_used, dtype=bool)
        st = sched.state
        for n in nodes:
            if not sched.online[n]:
                continue
            gpu_ok = (k == 0) | (self.model_table[self.model[:n_used], n]
                                 & np.where(frac, sched.max_free[n] >= u, sched.full_free[n] >= k))
            hit |= live & (self.cpu[:n_used] <= st.cpu_free[n]) & (self.mem[:n_used] <= st.mem_free[n]) & gpu_ok
        return hit

    def earliest_fitting(self, sched: "Scheduler", nodes: list[int]) -> tuple | None:
        """The key of the earliest-enqueued blocked shape (not blocked during the current
        pass) one worker of which fits one of ``nodes`` now; None if there is none."""
        if not self.slot or not nodes:
            return None
        hit = self._hits(sched, nodes) & (self.mark[: len(self.keys)] != sched._pass_id)
        idx = hit.nonzero()[0]
        if idx.size == 0:
            return None
        return self.keys[int(idx[np.argmin(self.order[idx])])]

    def remove(self, key: tuple) -> None:
        i = self.slot.pop(key, None)
        if i is not None:
            self.keys[i] = None
            self.live[i] = False
            self.free.append(i)

    def fitting(self, sched: "Scheduler", nodes: Iterable[int]) -> list[tuple]:
        """Remove and return the keys of blocked shapes one worker of which fits one of
        ``nodes`` now (same rule as the filter; extra filters are ignored, which only wakes
        more shapes than needed)."""
        if not self.keys:
            return []
        hit = self._hits(sched, nodes)
        out = []
        for i in np.flatnonzero(hit):
            key = self.keys[i]
            out.append(key)
            del self.slot[key]
            self.keys[i] = None
            self.live[i] = False
            self.free.append(int(i))
        return out


class Scheduler:
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
        self.on_evict_request: Callable[[JobRecord, str], None] | None = None
        self.on_retry_at: Callable[[float], None] = lambda t: None
        self.extra_filters: list[Callable[[Request, JobRecord], np.ndarray]] = []
        # Scheduling-framework plugin points (see lab01_cluster_sim.plugins); each entry is a
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
        self._table = _BlockedTable()
        self._next_seq = 0
        self._released_pending: dict[int, None] = {}
        self._pass_id = 0
        self._cur_order = 0
        self._requests: dict[str, Request] = {}
        self._start_index = 0
        self.bound_workers = 0
        """Workers bound so far (a counter; naive mode uses it to see progress)."""
        self._observers: dict[str, list[Callable]] = {h: [] for h in _HOOKS}

    # -- observers --------------------------------------------------------------------
    def add_observer(self, observer: SchedulerObserver) -> None:
        """Register ``observer``; only the hooks it overrides will be called."""
        for hook in _HOOKS:
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
        self.discipline.push(record)
        self.notify("on_enqueue", record)

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
                    or self.post_filters)

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
            scores = self.policy.score(self.state, request, candidates, self.rng)
            best = candidates[scores == scores.max()]
            node = int(best[0]) if best.size == 1 else int(best[np.argmin(self.state.tie_rank[best])])
        return node, tuple(self.policy.pick_gpus(self.state, request, node, self.rng))

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
        if request.num_gpus > 0 and request.gpu_models:
            counts.append((f"node(s) with a GPU model not in {list(request.gpu_models)}",
                           int((~self._model_ok(request.gpu_models)).sum())))
        counts.append(("Insufficient cpu", int((st.cpu_free < request.cpu_milli).sum())))
        counts.append(("Insufficient memory", int((st.mem_free < request.memory_mib).sum())))
        if request.num_gpus == 1 and request.gpu_milli < MILLI_PER_GPU:
            counts.append(("Insufficient gpu-share", int((self.max_free < request.gpu_milli).sum())))
        elif request.num_gpus > 0:
            counts.append(("Insufficient nvidia.com/gpu", int((self.full_free < request.num_gpus).sum())))
        if self.extra_filters:
            allowed = np.ones(n, dtype=bool)
            for extra in self.extra_filters:
                allowed &= extra(request, record)
            counts.append(("node(s) refused by extra filters (taints, topology)", int((~allowed).sum())))
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

    def _unblock(self, nodes: Iterable[int]) -> None:
        """After resources came back on ``nodes``: forget blocked shapes that may fit now.

        The blocked shapes' requests sit in arrays (:class:`_BlockedTable`), so this is a few
        vector comparisons over the blocked shapes per released node, not a Python loop."""
        if not self._blocked:
            return
        if self.lazy_wake_active():
            # The discipline wakes blocked shapes itself, earliest first (FifoSkip).
            self._released_pending.update(dict.fromkeys(nodes))
            return
        for key in self._table.fitting(self, dict.fromkeys(nodes)):
            del self._blocked[key]
            self._woken.append(key)
        if len(self._woken) > 4096:
            # Nobody is popping them (a discipline that ignores wake-ups): keep memory
            # bounded by collapsing the list into "everything was woken".
            self._woken = []
            self._woke_all = True

    def _block(self, key: tuple, request: Request, reason: str, one_worker: bool) -> None:
        """Remember ``key`` as blocked; for a one-worker shape, also that no node fits it
        now, so later retries filter only nodes released from here on."""
        self._blocked[key] = (request, reason)
        self._table.add(key, request, self)
        if one_worker:
            self._since[key] = len(self._release_log)
        else:
            self._since.pop(key, None)

    def lazy_wake_active(self) -> bool:
        """True when the discipline wakes blocked shapes itself (its ``lazy_wake`` is True,
        gang mode, no extra filters): releases are then only recorded (:meth:`pop_released`)."""
        return bool(getattr(self.discipline, "lazy_wake", False)) and self.mode == "gang" and self.interchangeable

    def pop_released(self) -> list[int]:
        """Nodes that got resources back since the last call (lazy wake mode)."""
        nodes = list(self._released_pending)
        self._released_pending.clear()
        return nodes

    def earliest_fitting_blocked(self, nodes: list[int]) -> tuple | None:
        """Lazy wake: the blocked key, earliest enqueued and not blocked in this pass, one
        worker of which fits one of ``nodes`` now, or None. :meth:`wake` it before trying."""
        return self._table.earliest_fitting(self, nodes)

    def wake(self, key: tuple) -> None:
        """Forget that ``key`` is blocked (lazy wake)."""
        if self._blocked.pop(key, None) is not None:
            self._table.remove(key)

    def blocked_key(self, record: JobRecord) -> tuple:
        """The key under which a job that found no room is remembered as blocked (its
        worker request, its workers in gang mode, and its id when extra filters exist)."""
        return shape_key(record.job, self.mode == "gang") + (None if self.interchangeable else record.job_id,)

    def pop_woken(self) -> list[tuple] | None:
        """Blocked keys forgotten since the last call (a release made room they may use), or
        None if every key was forgotten (a node came back). For disciplines that keep blocked
        shapes aside between passes, like :class:`FifoSkip`."""
        if self._woke_all:
            self._woke_all = False
            self._woken = []
            return None
        woken, self._woken = self._woken, []
        return woken

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
        ``grace_s`` > 0: its resources stay held that long (graceful termination)."""
        if self.on_evict_request is None:
            raise RuntimeError("evict: no simulation attached to carry out evictions")
        if grace_s > 0:
            self.on_evict_request(record, reason, grace_s=grace_s)
        else:
            self.on_evict_request(record, reason)

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
        return self._score_and_pick(state, request, candidates)

    def _score_and_pick(self, state: ClusterState, request: Request,
                        candidates: np.ndarray) -> tuple[int, tuple[int, ...]]:
        """Score -> select -> pick GPUs among non-empty ``candidates`` on ``state`` (as
        :func:`lab01_cluster_sim.policies.base.place`: one candidate is taken unscored; ties
        go to the lowest ``tie_rank``)."""
        if candidates.size == 1:
            node = int(candidates[0])
        else:
            scores = self.policy.score(state, request, candidates, self.rng)
            best = candidates[scores == scores.max()]
            node = int(best[np.argmin(state.tie_rank[best])])
        return node, tuple(int(g) for g in self.policy.pick_gpus(state, request, node, self.rng))

    def _try_schedule_plugins(self, record: JobRecord, permit, retried: bool = False) -> Outcome:
        """:meth:`try_schedule` with the plugin points: PreFilter, device filters, Permit,
        PostFilter (see :mod:`lab01_cluster_sim.plugins`). No blocked-shape memo: plugins may
        answer differently for each job and over time."""
        request = self.request_of(record)
        gang = self.mode == "gang"
        # The blocked memo ("no room for this job until a release on a node where one of its
        # workers fits") stays exact with permits (they only refuse), device filters (their
        # masks change only when jobs bind or leave, and a leave is a release) and PreFilters
        # that left the attempt unrestricted (they can only restrict or delay, never add room);
        # it is keyed per job here. A PostFilter may make room by evicting, which a release does
        # not announce: then there is no memo.
        memo = not self.post_filters
        key = self.blocked_key(record) if memo else None
        if memo and key in self._blocked:
            record.status, record.reason = UNSCHEDULABLE, self._blocked[key][1]
            return Outcome.WAITING
        self._cur_order = record.queue_seq
        mask = None
        assign = None
        for pre in self.pre_filters:
            res = pre(record, request)
            if res is None:
                continue
            memo = False
            if res.wait is not None:
                record.status, record.reason = UNSCHEDULABLE, res.wait
                if res.retry_at is not None:
                    self.on_retry_at(res.retry_at)
                return Outcome.WAITING
            if res.assign is not None:
                assign = res.assign
            if res.nodes is not None:
                mask = res.nodes if mask is None else (mask & res.nodes)
        trial: list[tuple[int, tuple[int, ...]]] = []
        refusal: str | None = None
        if assign is not None:
            try:
                for node, gpus in assign:
                    if not self.online[node]:
                        raise ValueError(f"node {self.state.nodes[node].name} is cordoned")
                    self._bind_raw(node, tuple(gpus), request)
                    trial.append((node, tuple(gpus)))
            except ValueError as exc:
                refusal = f"the placement chosen by a plugin no longer fits: {exc}"
        else:
            devices = None
            for dev in self.device_filters:
                m = dev(record, request)
                if m is not None:
                    devices = m if devices is None else (devices & m)
            needed = record.job.workers if gang else 1
            for _ in range(needed):
                choice = self._select_masked(request, record, mask, devices)
                if choice is None:
                    break
                self._bind_raw(choice[0], choice[1], request)
                trial.append(choice)
            if not trial:
                refusal = "no node fits the job now" if gang else "no node fits one more worker now"
            elif gang and not gang_permit(len(trial), record.job.workers):
                refusal = f"gang of {record.job.workers} workers: only {len(trial)} could be placed now"
        no_room = refusal is not None
        if refusal is None:
            for check in self.permits:
                refusal = check(record, trial)
                if refusal:
                    break
            if refusal is None and permit is not None:
                refusal = permit(record, trial)
        if refusal is not None:
            for node, gpus in reversed(trial):   # roll back: the state is exactly as before
                self._release_raw(node, gpus, request)
            record.status, record.reason = UNSCHEDULABLE, refusal
            if memo and no_room:
                self._block(key, request, refusal, False)
            if no_room and not retried and self.post_filters:
                # PostFilter (preemption): a plugin that evicted something asks for one more try.
                for post in self.post_filters:
                    if post(record):
                        return self._try_schedule_plugins(record, permit, retried=True)
            return Outcome.WAITING
        for node, gpus in trial:
            self._commit(record, node, gpus, request)
        if len(record.placements) >= record.job.workers:
            self._start(record)
            return Outcome.STARTED
        return Outcome.PROGRESS

    def bind_placements(self, record: JobRecord, placements: Sequence[tuple[int, tuple[int, ...]]]) -> Outcome:
        """Bind ``record``'s workers exactly at ``placements`` ``((node, gpus), ...)`` and start
        it once its gang is complete (a plan computed by a plugin, e.g. defragmentation by
        migration); no filter, score or permit runs.

        Raises:
            ValueError: a placement does not fit (nothing is bound then).
        """
        request = self.request_of(record)
        done: list[tuple[int, tuple[int, ...]]] = []
        try:
            for node, gpus in placements:
                self._bind_raw(node, tuple(gpus), request)
                done.append((node, tuple(gpus)))
        except ValueError:
            for node, gpus in reversed(done):
                self._release_raw(node, gpus, request)
            raise
        for node, gpus in done:
            self._commit(record, node, gpus, request)
        if len(record.placements) >= record.job.workers:
            self._start(record)
            return Outcome.STARTED
        return Outcome.PROGRESS

    def release_placements(self, record: JobRecord, placements: Sequence[Placement]) -> None:
        """Give back some of the workers a *pending* job holds (naive mode: the node they
        sit on is drained); the job stays pending with the rest."""
        request = self.request_of(record)
        keep = [p for p in record.placements if p not in placements]
        nodes = []
        for p in placements:
            self._release_raw(p.node_index, p.gpus, request)
            nodes.append(p.node_index)
            self.notify("on_release", record, p, request)
        record.placements = keep
        self._release_log.extend(nodes)
        self._unblock(nodes)

    def plan_placements(self, state: ClusterState, record: JobRecord, mask: np.ndarray | None = None
                        ) -> list[tuple[int, tuple[int, ...]]] | None:
        """Where every remaining worker of ``record`` would go on ``state`` (a copy of the
        cluster a plugin is planning on, e.g. with some jobs released), by this scheduler's
        filter (online nodes, GPU model, extra filters, and ``mask``), policy and GPU pick;
        the workers are bound on ``state``. None (and ``state`` as it was) if the gang does
        not fit. The cluster itself is not touched."""
        request = self.request_of(record)
        allowed = self.online.copy()
        if self.state.num_nodes != state.num_nodes:
            raise ValueError("plan_placements: the state must be a copy of this scheduler's cluster")
        for extra in self.extra_filters:
            allowed &= extra(request, record)
        if mask is not None:
            allowed &= mask
        placed: list[tuple[int, tuple[int, ...]]] = []
        for _ in range(record.job.workers - len(record.placements)):
            candidates = np.flatnonzero(state.feasible(request) & allowed)
            if candidates.size == 0:
                for node, gpus in reversed(placed):
                    state.release(node, gpus, request)
                return None
            node, gpus = self._score_and_pick(state, request, candidates)
            state.bind(node, gpus, request)
            placed.append((node, gpus))
        return placed

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
        self._table = _BlockedTable()
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
