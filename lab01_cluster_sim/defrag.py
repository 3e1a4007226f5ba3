"""Stranded GPUs, shape-aware admission and defragmentation by migration.

**Stranded GPUs** (this module's definition, used by its reports): free GPU capacity
(in GPUs, i.e. free milli-GPU / 1000) on nodes that no pending job can use now. A node's
free capacity is usable if some pending job can start now (its whole gang fits) with one
of its workers on that node. With no pending job nothing is stranded (there is no demand).
Example: an 8-GPU gang pending with 12 free GPUs spread 3 per node over 4 nodes of 8: it
cannot start, nobody else waits, so all 12 are stranded.

**Shape-aware admission**: a share of the GPU nodes is kept for whole-node jobs (workers
asking for every GPU of a node); smaller jobs are filtered off them, so big gangs find
empty nodes instead of a cluster of half-full ones.

**Defragmentation by migration**: when a pending gang is blocked only by fragmentation
(the cluster has enough free GPUs in total but no placement exists) and checkpointable
jobs could be moved to empty enough nodes, move them: each moved job loses its progress
since its last checkpoint and pays its checkpoint and restore time
(:class:`~lab01_cluster_sim.disciplines.preemption.CheckpointSpec`). The report gives
stranded GPUs before and after and the GPU-hours the moves cost. Migration is the
mechanism of Gandiva (Xiao et al., OSDI 2018) and of Singularity (Microsoft, 2022).

Both remedies are plugins of the one engine (:mod:`lab01_cluster_sim.framework.interface`):
:class:`ShapeAwareAdmission` at the Filter point, :class:`Defragmenter` after each scheduling
cycle; :mod:`lab01_cluster_sim.studies.defrag` runs them and samples :func:`stranded_gpus`
(:func:`pending_jobs`, :func:`filter_mask` read a running simulation).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from lab01_cluster_sim.cluster import ClusterState, Request
from lab01_cluster_sim.disciplines.preemption import CheckpointSpec, last_checkpoint
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.model import MILLI_PER_GPU, Job, JobRecord, JobState, Node
from lab01_cluster_sim.framework.noderesources import worker_slots


def stranded_gpus(state: ClusterState, pending: Sequence[Job], mask_for=None) -> float:
    """Stranded GPUs (see the module docstring), in GPUs.

    A pending job's gang can start now iff its worker slots (:func:`worker_slots`, on the
    nodes ``mask_for`` allows) add up to its workers; the free capacity of every node where
    one of its workers fits is then usable.

    Args:
        state: the cluster now.
        pending: the pending jobs.
        mask_for: optional ``mask_for(job) -> bool (N,) | None`` restricting a job's nodes.
    """
    return float(stranded_milli_by_node(state, pending, mask_for).sum()) / MILLI_PER_GPU


def stranded_milli_by_node(state: ClusterState, pending: Sequence[Job], mask_for=None) -> np.ndarray:
    """int64 (N,): stranded milli-GPU of each node (:func:`stranded_gpus`, per node), so a
    report can tell where the stranded capacity sits (e.g. on nodes reserved for whole-node
    jobs, idle by design, or fragments elsewhere)."""
    free = state.gpu_free.sum(axis=1)
    if not pending or free.sum() == 0:
        return np.zeros(state.num_nodes, dtype=np.int64)
    usable = np.zeros(state.num_nodes, dtype=bool)
    seen: set[tuple] = set()
    for job in pending:
        if job.gpus_per_worker == 0:
            continue
        mask = None if mask_for is None else mask_for(job)
        request = Request.of_worker(job)
        key = (request, job.workers, None if mask is None else mask.tobytes())
        if key in seen:
            continue
        seen.add(key)
        slots = worker_slots(request, state.cpu_free, state.mem_free, state.gpu_free,
                             state.model_mask(request.gpu_models))
        if mask is not None:
            slots = np.where(mask, slots, 0)
        if int(np.minimum(slots, job.workers).sum()) < job.workers:
            continue
        usable |= slots > 0
        if usable.all():
            break
    return np.where(usable, 0, free)


def simulation_stranded_gpus(sim) -> float:
    """:func:`stranded_gpus` of a running :class:`~lab01_cluster_sim.simulate.Simulation`: its
    pending jobs, each on the online nodes its filters allow."""
    sched = sim.scheduler
    pending = [r for r in sched.discipline.order() if r.state is JobState.PENDING]
    records = {r.job_id: r for r in pending}

    def mask_for(job: Job) -> np.ndarray:
        rec = records[job.job_id]
        req = sched.request_of(rec)
        m = sched.online.copy()
        for extra in sched.extra_filters:
            m &= extra(req, rec)
        return m

    state = sim.state
    if not sched.online.all():
        state = copy.copy(state)
        state.gpu_free[~sched.online] = 0
        state.refresh()
    return stranded_gpus(state, [r.job for r in pending], mask_for)


def pending_jobs(sim) -> list[Job]:
    """The jobs pending in a running simulation, in queue order."""
    return [r.job for r in sim.scheduler.discipline.order() if r.state is JobState.PENDING]


def filter_mask(sim, job: Job) -> np.ndarray | None:
    """bool (N,): the nodes the simulation's Filter plugins leave to ``job`` now (None when it
    has no Filter plugin: every node); the ``mask_for`` of :func:`stranded_gpus`."""
    filters = sim.scheduler.extra_filters
    if not filters:
        return None
    rec = sim.records.get(job.job_id) or JobRecord(job)
    req = Request.of_worker(job)
    mask = np.ones(sim.state.num_nodes, dtype=bool)
    for f in filters:
        mask &= f(req, rec)
    return mask


class ShapeAwareAdmission:
    """Engine plugin (``"shape-aware"``, Filter point) keeping ``reserved_fraction`` of the GPU
    nodes for whole-node jobs.

    The reserved nodes are the last ``ceil(reserved_fraction x GPU nodes)`` GPU nodes in
    the given order. A job is "whole-node" on a node when its workers ask for all of the
    node's GPUs. Nodes added during a run are not reserved.

    Raises:
        InputError: a fraction outside [0, 1].
    """

    name = "shape-aware"
    static = True   # depends only on node labels/taints and the job: arrival may reject on it

    def __init__(self, nodes: Sequence[Node], reserved_fraction: float) -> None:
        if not 0.0 <= reserved_fraction <= 1.0:
            raise InputError(f"reserved_fraction must be in [0, 1], got {reserved_fraction}")
        gpu_nodes = [i for i, n in enumerate(nodes) if n.gpu_count > 0]
        k = math.ceil(reserved_fraction * len(gpu_nodes))
        self.reserved = np.zeros(len(nodes), dtype=bool)
        if k:
            self.reserved[gpu_nodes[-k:]] = True
        self.gpu_count = np.array([n.gpu_count for n in nodes], dtype=np.int64)
        self._masks: dict[int, np.ndarray] = {}

    def attach(self, sim) -> None:
        self._sim = sim

    def _grow(self) -> None:
        sim = getattr(self, "_sim", None)
        if sim is not None and sim.state.num_nodes > self.reserved.shape[0]:
            extra = sim.state.num_nodes - self.reserved.shape[0]
            self.reserved = np.concatenate([self.reserved, np.zeros(extra, dtype=bool)])
            self.gpu_count = sim.state.gpu_count.copy()
            self._masks.clear()

    def allows(self, gpus_per_worker: int) -> np.ndarray:
        """bool (N,): nodes a worker of ``gpus_per_worker`` GPUs may use (cached; do not modify)."""
        self._grow()
        mask = self._masks.get(gpus_per_worker)
        if mask is None:
            whole = (gpus_per_worker > 0) & (self.gpu_count == gpus_per_worker)
            mask = self._masks[gpus_per_worker] = ~self.reserved | whole
        return mask

    def filter(self, request, record) -> np.ndarray:
        return self.allows(request.num_gpus)

    def __call__(self, runner, job: Job) -> np.ndarray:
        return self.allows(job.gpus_per_worker)


def shape_aware_plugin(nodes, jobs, reserved: float = 0.25) -> ShapeAwareAdmission:
    """``--plugin shape-aware:reserved=0.25``."""
    return ShapeAwareAdmission(nodes, reserved)


@dataclass(frozen=True)
class Move:
    """One migration: the job, where it was and went, what it cost."""

    job_id: str
    from_nodes: tuple[str, ...]
    to_nodes: tuple[str, ...]
    lost_gpu_s: float
    overhead_s: float
    gpus: float


@dataclass(frozen=True)
class DefragEvent:
    """One defragmentation: at ``time`` moves were made so that ``for_job`` could start."""

    time: float
    for_job: str
    moves: tuple[Move, ...]
    stranded_before: float
    stranded_after: float

    @property
    def gpu_hours_cost(self) -> float:
        """GPU-hours lost (progress since last checkpoint) plus GPU-hours of checkpoint/restore overhead."""
        return sum(m.lost_gpu_s for m in self.moves) / 3600 + self.overhead_gpu_hours

    @property
    def overhead_gpu_hours(self) -> float:
        """GPU-hours spent on checkpoint and restore by the moved jobs (overhead x their GPUs)."""
        return sum(m.overhead_s * m.gpus for m in self.moves) / 3600


@dataclass
class Defragmenter:
    """Engine plugin (``"defrag"``, after each cycle) that migrates checkpointable jobs to
    unblock a gang.

    After each scheduling cycle it looks at the oldest pending job that is blocked only by
    fragmentation (enough free GPUs on the online nodes in total, no placement) and, if a
    plan exists, makes the moves and binds the gang exactly where planned (so a PreFilter
    that would keep it waiting, e.g. a topology wait, cannot undo the plan). At most one
    defragmentation per instant.

    Args:
        movable: predicate ``movable(job) -> bool``; default: jobs whose checkpoint
            interval is finite (they can be restored elsewhere; specs from the simulation's
            ``checkpoints`` plugin).
        max_moves: most jobs moved for one gang.
        replan_after_s: after a failed plan for a job, wait this long (simulated s) before
            planning for it again, like a controller's reconcile period (default 60 s).

    Attributes:
        events: every :class:`DefragEvent`, in time order.
    """

    movable: object = None
    max_moves: int = 8
    replan_after_s: float = 60.0
    events: list[DefragEvent] = field(default_factory=list)
    _failed: tuple | None = field(default=None, repr=False)
    _last_failed: dict = field(default_factory=dict, repr=False)
    _last_time: float = field(default=-math.inf, repr=False)
    name: str = field(default="defrag", repr=False)

    @staticmethod
    def _spec(sim, job_id: str) -> CheckpointSpec:
        try:
            return sim.plugin("checkpoints").spec(job_id)
        except KeyError:
            return CheckpointSpec()

    def _is_movable(self, sim, rec: JobRecord) -> bool:
        if self.movable is not None:
            return bool(self.movable(rec.job))
        return math.isfinite(self._spec(sim, rec.job_id).interval_s)

    def after_cycle(self, sim) -> None:
        now = sim.now
        sched = sim.scheduler
        if now == self._last_time or not len(sched.discipline):
            return
        for rec in list(sched.discipline.order()):
            if rec.state is not JobState.PENDING or rec.job.gpus_per_worker == 0:
                continue
            if int(np.minimum(sched.slots_of(rec), rec.job.workers).sum()) >= rec.job.workers:
                continue            # it fits now: not blocked (it waits for another reason)
            free = int(sim.state.gpu_free[sched.online].sum())
            if free < rec.job.gpu_milli_total:
                continue            # blocked by capacity, not by fragmentation
            last = self._last_failed.get(rec.job_id)
            if last is not None and now < last + self.replan_after_s:
                return               # a plan for this job failed recently: wait for the next round
            sig = (rec.job_id, frozenset(sched.running))
            if sig == self._failed:
                return               # same job, same running jobs: the plan would fail again
            plan = self.plan(sim, rec)
            if plan is not None:
                self._last_time = now
                self._apply(sim, rec, plan, now)
            else:
                self._failed = sig
                self._last_failed[rec.job_id] = now
            return   # only the oldest fragmentation-blocked job per instant: bounded moves and cost

    def plan(self, sim, rec: JobRecord) -> tuple[list, list[tuple[str, list]]] | None:
        """``(gang placements, [(moved job id, its new placements), ...])`` that lets ``rec``
        start, or None.

        Greedy: rank the nodes ``rec`` may use by the GPU-seconds their movable jobs would
        lose; empty the cheapest nodes (only nodes whose jobs are all movable) until the gang
        fits; then re-place every moved job off those nodes. Placement is the scheduler's own
        (its filter and policy) on a copy of the cluster. Fails if a moved job cannot be
        re-placed or more than ``max_moves`` would move.
        """
        st = sim.state
        sched = sim.scheduler
        req = sched.request_of(rec)
        allowed = sched.online.copy()
        for extra in sched.extra_filters:
            allowed &= extra(req, rec)
        on_node: dict[int, list[JobRecord]] = {}
        for r in sorted(sched.running.values(), key=lambda x: x.job_id):
            for p in r.placements:
                lst = on_node.setdefault(p.node_index, [])
                if r not in lst:
                    lst.append(r)
        now = sim.now
        costs = []
        for node in np.flatnonzero(allowed):
            node = int(node)
            if st.gpu_count[node] < req.num_gpus:
                continue
            jobs = on_node.get(node, [])
            if not jobs or not all(self._is_movable(sim, r) for r in jobs):
                continue
            lost = 0.0
            for r in jobs:
                p = r.work_done_at(now)
                lost += (p - last_checkpoint(p, self._spec(sim, r.job_id))) * r.job.gpu_milli_total / MILLI_PER_GPU
            costs.append((lost, len(jobs), int(st.tie_rank[node]), node))
        costs.sort()
        trial = copy.copy(st)
        targets: list[int] = []
        moved: list[JobRecord] = []
        for _, _, _, node in costs:
            for r in on_node.get(node, []):
                if r in moved:
                    continue
                rq = sched.request_of(r)
                for p in r.placements:
                    trial.release(p.node_index, p.gpus, rq)
                moved.append(r)
            targets.append(node)
            if len(moved) > self.max_moves:
                return None
            slots = worker_slots(req, trial.cpu_free, trial.mem_free, trial.gpu_free, sched._model_ok(req.gpu_models))
            if int(np.minimum(np.where(allowed, slots, 0), rec.job.workers).sum()) >= rec.job.workers:
                break
        else:
            return None
        gang = sched.plan_placements(trial, rec)
        if gang is None:
            return None
        keep_off = np.ones(st.num_nodes, dtype=bool)
        keep_off[targets] = False
        plan = []
        for r in sorted(moved, key=lambda x: -x.job.gpu_milli_total):
            ghost = JobRecord(r.job)        # the moved job as if it held nothing
            ghost.queue_seq = r.queue_seq
            alloc = sched.plan_placements(trial, ghost, keep_off)
            if alloc is None:
                return None
            plan.append((r.job_id, alloc))
        return gang, plan

    def _apply(self, sim, rec: JobRecord, planned, now: float) -> None:
        """Evict the moved jobs (migration: checkpoint written on demand, restored at the new
        place), bind the gang and the moved jobs exactly where planned."""
        gang_alloc, plan = planned
        before = simulation_stranded_gpus(sim)
        names = sim.state.nodes
        moves = []
        for job_id, alloc in plan:
            r = sim.records[job_id]
            spec = self._spec(sim, job_id)
            names_from = tuple(sorted({names[p.node_index].name for p in r.placements}))
            lost_before = r.lost_gpu_s
            sim.evict(r, f"migrated to unblock {rec.job_id}", migration=True, extra_overhead_s=spec.checkpoint_s)
            moves.append(Move(job_id, names_from, tuple(sorted({names[n].name for n, _ in alloc})),
                              r.lost_gpu_s - lost_before, spec.checkpoint_s + spec.restore_s,
                              r.job.gpu_milli_total / MILLI_PER_GPU))
        sim.scheduler.bind_placements(rec, gang_alloc)
        for job_id, alloc in plan:
            sim.scheduler.bind_placements(sim.records[job_id], alloc)
        after = simulation_stranded_gpus(sim)
        self.events.append(DefragEvent(now, rec.job_id, tuple(moves), before, after))

    def gpu_hours_cost(self) -> float:
        """GPU-hours all moves cost: lost progress plus checkpoint/restore time."""
        return sum(e.gpu_hours_cost for e in self.events)


def defrag_plugin(nodes, jobs, max_moves: int = 8, replan_after_s: float = 60.0) -> Defragmenter:
    """``--plugin defrag:max_moves=8`` (moves only checkpointing jobs: add ``--plugin checkpoints:...``)."""
    return Defragmenter(max_moves=max_moves, replan_after_s=replan_after_s)
