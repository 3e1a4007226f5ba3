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
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from lab01_cluster_sim.cluster import ClusterState, Request
from lab01_cluster_sim.disciplines.preemption import last_checkpoint
from lab01_cluster_sim.disciplines.runner import Runner, clone_state, place_gang
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.model import MILLI_PER_GPU, Job, JobState, Node


def stranded_gpus(state: ClusterState, pending: Sequence[Job], mask_for=None) -> float:
    """Stranded GPUs (see the module docstring), in GPUs.

    Args:
        state: the cluster now.
        pending: the pending jobs.
        mask_for: optional ``mask_for(job) -> bool (N,) | None`` restricting a job's nodes.
    """
    free = state.gpu_free.sum(axis=1)
    if not pending or free.sum() == 0:
        return 0.0
    usable = np.zeros(state.num_nodes, dtype=bool)
    seen: set[tuple] = set()
    for job in pending:
        if job.gpus_per_worker == 0:
            continue
        mask = None if mask_for is None else mask_for(job)
        key = (Request.of_worker(job), job.workers, None if mask is None else mask.tobytes())
        if key in seen:
            continue
        seen.add(key)
        if place_gang(state, job, mask) is None:
            continue
        ok = state.feasible(Request.of_worker(job))
        if mask is not None:
            ok &= mask
        usable |= ok
        if usable.all():
            break
    return float(free[~usable].sum()) / MILLI_PER_GPU


class ShapeAwareAdmission:
    """A Runner ``node_filter`` keeping ``reserved_fraction`` of the GPU nodes for whole-node jobs.

    The reserved nodes are the last ``ceil(reserved_fraction x GPU nodes)`` GPU nodes in
    the given order. A job is "whole-node" on a node when its workers ask for all of the
    node's GPUs.

    Raises:
        InputError: a fraction outside [0, 1].
    """

    def __init__(self, nodes: Sequence[Node], reserved_fraction: float) -> None:
        if not 0.0 <= reserved_fraction <= 1.0:
            raise InputError(f"reserved_fraction must be in [0, 1], got {reserved_fraction}")
        gpu_nodes = [i for i, n in enumerate(nodes) if n.gpu_count > 0]
        k = math.ceil(reserved_fraction * len(gpu_nodes))
        self.reserved = np.zeros(len(nodes), dtype=bool)
        if k:
            self.reserved[gpu_nodes[-k:]] = True
        self.gpu_count = np.array([n.gpu_count for n in nodes], dtype=np.int64)

    def __call__(self, runner: Runner, job: Job) -> np.ndarray:
        whole = (job.gpus_per_worker > 0) & (self.gpu_count == job.gpus_per_worker)
        return ~self.reserved | whole


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
    """A Runner ``on_blocked`` hook that migrates checkpointable jobs to unblock a gang.

    At each event batch it looks at the oldest pending job that is blocked only by
    fragmentation (enough free GPUs in total, no placement) and, if a plan exists, makes
    the moves and starts it.

    Args:
        movable: predicate ``movable(job) -> bool``; default: jobs whose checkpoint
            interval is finite (they can be restored elsewhere).
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

    def _is_movable(self, runner: Runner, job_id: str) -> bool:
        run = runner.runs[job_id]
        if self.movable is not None:
            return bool(self.movable(run.job))
        return math.isfinite(run.spec.interval_s)

    def __call__(self, runner: Runner, now: float) -> None:
        for job_id in list(runner.pending):
            job = runner.runs[job_id].job
            if job.gpus_per_worker == 0:
                continue
            if runner.try_place(job) is not None:
                continue
            free_gpus = runner.state.gpu_free.sum() / MILLI_PER_GPU
            if free_gpus * MILLI_PER_GPU < job.gpu_milli_total:
                continue            # blocked by capacity, not by fragmentation
            last = self._last_failed.get(job_id)
            if last is not None and now < last + self.replan_after_s:
                return               # a plan for this job failed recently: wait for the next round
            sig = (job_id, frozenset(runner.running))
            if sig == self._failed:
                return               # same job, same running jobs: the plan would fail again
            plan = self.plan(runner, job)
            if plan is not None:
                self._apply(runner, job, plan, now)
            else:
                self._failed = sig
                self._last_failed[job_id] = now
            return   # only the oldest fragmentation-blocked job per event batch: bounded moves and cost

    def plan(self, runner: Runner, job: Job) -> tuple[tuple, list[tuple[str, tuple]]] | None:
        """``(gang allocation, [(moved job id, its new allocation), ...])`` that lets ``job``
        start, or None.

        Greedy: rank nodes by the GPU-seconds their movable jobs would lose; empty the
        cheapest nodes (only nodes whose blocking jobs are all movable) until the gang fits;
        then re-place every moved job off those nodes (best-fit). Fails if a moved job
        cannot be re-placed or more than ``max_moves`` would move.
        """
        st = runner.state
        req = Request.of_worker(job)
        mask = runner.mask_for(job)
        on_node: dict[int, list[str]] = {}
        for rid, run in runner.running.items():
            for node, _ in run.alloc:
                on_node.setdefault(node, [])
                if rid not in on_node[node]:
                    on_node[node].append(rid)
        costs = []
        for node in range(st.num_nodes):
            if mask is not None and not mask[node]:
                continue
            if st.gpu_count[node] < req.num_gpus:
                continue
            ids = on_node.get(node, [])
            if not ids or not all(self._is_movable(runner, i) for i in ids):
                continue
            lost = 0.0
            for i in ids:
                r = runner.runs[i]
                p = r.progress_at(runner.now)
                lost += (p - last_checkpoint(p, r.spec)) * r.job.gpu_milli_total / MILLI_PER_GPU
            costs.append((lost, len(ids), int(st.tie_rank[node]), node))
        costs.sort()
        trial = clone_state(st)
        targets: list[int] = []
        moved: list[str] = []
        for _, _, _, node in costs:
            for i in on_node.get(node, []):
                if i in moved:
                    continue
                r = runner.runs[i]
                rq = Request.of_worker(r.job)
                for n, gpus in r.alloc:
                    trial.release(n, gpus, rq)
                moved.append(i)
            targets.append(node)
            if len(moved) > self.max_moves:
                return None
            if place_gang(trial, job, mask) is not None:
                break
        else:
            return None
        gang = place_gang(trial, job, mask, bind=True)
        assert gang is not None
        keep_off = np.ones(st.num_nodes, dtype=bool)
        keep_off[targets] = False
        plan = []
        for i in sorted(moved, key=lambda x: -runner.runs[x].job.gpu_milli_total):
            r = runner.runs[i]
            m = runner.mask_for(r.job)
            alloc = place_gang(trial, r.job, keep_off if m is None else (keep_off & m), bind=True)
            if alloc is None:
                return None
            plan.append((i, alloc))
        return gang, plan

    def _apply(self, runner: Runner, job: Job, planned: tuple[tuple, list[tuple[str, tuple]]], now: float) -> None:
        """Stop the moved jobs, start the gang and the moved jobs exactly where planned.

        The plan was computed on a copy of this very state, so the binds succeed; the gang
        starts on the planned nodes whatever the runner's own placer would prefer.
        """
        gang_alloc, plan = planned
        pending_jobs = [runner.runs[i].job for i in runner.pending]
        before = stranded_gpus(runner.state, pending_jobs, runner.mask_for)
        moves = []
        for job_id, alloc in plan:
            run = runner.runs[job_id]
            names_from = tuple(sorted({runner.nodes[n].name for n, _ in run.alloc}))
            overhead = run.spec.checkpoint_s + run.spec.restore_s
            lost = runner.stop(job_id, run.spec.checkpoint_s, migration=True)
            moves.append(Move(job_id, names_from, tuple(sorted({runner.nodes[n].name for n, _ in alloc})),
                              lost, overhead, run.job.gpu_milli_total / MILLI_PER_GPU))
        # bind the gang first on the nodes just emptied, then the moved jobs, in plan order
        runner.start(job.job_id, gang_alloc)
        for job_id, alloc in plan:
            runner.start(job_id, alloc)
        pending_jobs = [runner.runs[i].job for i in runner.pending]
        after = stranded_gpus(runner.state, pending_jobs, runner.mask_for)
        self.events.append(DefragEvent(now, job.job_id, tuple(moves), before, after))

    def gpu_hours_cost(self) -> float:
        """GPU-hours all moves cost: lost progress plus checkpoint/restore time."""
        return sum(e.gpu_hours_cost for e in self.events)


@dataclass(frozen=True)
class AdmissionRow:
    """One run of the shape-aware admission comparison.

    Mean waits (s) cover every job of the class: a job that never started counts with a
    *censored* wait, from its submission to the end of the run (a lower bound on its true
    wait), so jobs kept out forever are not averaged away; ``*_never_started`` say how
    many such jobs there were (0 means every wait is exact).
    """

    reserved_fraction: float
    mean_stranded_gpus: float
    big_job_mean_wait_s: float
    small_job_mean_wait_s: float
    utilisation: float
    big_jobs_never_started: int = 0
    small_jobs_never_started: int = 0


def compare_shape_aware(nodes: Sequence[Node], jobs: Sequence[Job], fractions: Sequence[float],
                        discipline: str = "fifo-skip") -> list[AdmissionRow]:
    """Run the workload with each reserved fraction; stranded GPUs are averaged over event samples.

    "Big" jobs are those whose workers ask for a whole node's GPUs. Jobs that never
    start (e.g. every small job when all nodes are reserved) are counted in
    :attr:`AdmissionRow.small_jobs_never_started` / ``big_jobs_never_started`` and
    enter the mean waits censored at the end of the run.
    """
    rows = []
    full = max((n.gpu_count for n in nodes), default=0)
    for f in fractions:
        adm = ShapeAwareAdmission(nodes, f)

        def observe(r: Runner, t: float) -> float:
            return stranded_gpus(r.state, [r.runs[i].job for i in r.pending], r.mask_for)

        res = Runner(nodes, jobs, discipline, node_filter=adm, observer=observe).run()
        big_ids = {j.job_id for j in jobs if j.gpus_per_worker == full}
        # never started: censored at the end of the run (lower bound on the wait)
        waits = {o.job_id: (o.wait if o.wait is not None else max(0.0, res.end_time - o.submit), o.wait is None)
                 for o in res.outcomes}
        big = [w for i, (w, _) in waits.items() if i in big_ids]
        small = [w for i, (w, _) in waits.items() if i not in big_ids]
        big_never = sum(1 for i, (_, never) in waits.items() if never and i in big_ids)
        small_never = sum(1 for i, (_, never) in waits.items() if never and i not in big_ids)
        # time-weighted mean of the stranded samples
        ts = [row[0] for row in res.timeline]
        vals = res.samples
        if len(ts) > 1:
            dt = np.diff(ts)
            mean_stranded = float(np.dot(vals[:-1], dt) / dt.sum()) if dt.sum() > 0 else float(np.mean(vals))
        else:
            mean_stranded = float(vals[0]) if vals else 0.0
        rows.append(AdmissionRow(f, mean_stranded, float(np.mean(big)) if big else 0.0,
                                 float(np.mean(small)) if small else 0.0, res.summary()["utilisation"],
                                 big_never, small_never))
    return rows


def job_states(runner: Runner) -> dict[str, JobState]:
    """Job id -> state (handy in tests and reports)."""
    return {i: r.state for i, r in runner.runs.items()}


@dataclass(frozen=True)
class DashboardData:
    """Series for :func:`lab01_cluster_sim.plots.dashboard.fragmentation_dashboard`."""

    times: list[float]
    stranded: list[float]
    allocation_ratio: list[float]
    mig_times: list[float]
    mig_use: dict[str, list[float]]


def dashboard_data(nodes: Sequence[Node], jobs: Sequence[Job], mig_layouts=(), mig_jobs=(),
                   discipline: str = "fifo-skip", node_filter=None, on_blocked=None,
                   default_checkpoint=None) -> DashboardData:
    """Run ``jobs`` and sample stranded GPUs and the allocation ratio at every event batch;
    replay ``mig_jobs`` ``(submit_s, duration_s, memory_gb, compute_share)`` on ``mig_layouts``
    for the MIG panel (:func:`lab01_cluster_sim.sharing_modes.mig_pool_timeline`)."""
    from lab01_cluster_sim.disciplines.preemption import CheckpointSpec
    from lab01_cluster_sim.sharing_modes import mig_pool_timeline

    total = sum(n.gpu_count for n in nodes) or 1

    def observe(r: Runner, t: float) -> tuple[float, float]:
        pend = [r.runs[i].job for i in r.pending]
        return stranded_gpus(r.state, pend, r.mask_for), r.state.allocated_milli() / (total * MILLI_PER_GPU)

    res = Runner(nodes, jobs, discipline, node_filter=node_filter, on_blocked=on_blocked, observer=observe,
                 default_checkpoint=default_checkpoint or CheckpointSpec()).run()
    times = [row[0] for row in res.timeline]
    mig = mig_pool_timeline(list(mig_layouts), list(mig_jobs)) if mig_layouts else None
    return DashboardData(times, [s[0] for s in res.samples], [s[1] for s in res.samples],
                         mig.times if mig else [], mig.use if mig else {})


def demo_mig_jobs(seed: int = 0, n: int = 200, mean_interarrival_s: float = 300.0) -> list[tuple[float, float, float, float]]:
    """Seeded small inference jobs for the MIG panel: memory 2-20 GB (uniform), compute share
    0.05-0.4 (uniform), exponential gaps, log-normal durations (median 20 min, sigma 1)."""
    rng = np.random.default_rng(seed)
    t = np.cumsum(rng.exponential(mean_interarrival_s, n))
    dur = np.maximum(1.0, rng.lognormal(np.log(1200.0), 1.0, n))
    mem = rng.uniform(2, 20, n)
    comp = rng.uniform(0.05, 0.4, n)
    return [(float(t[i]), float(dur[i]), float(round(mem[i], 1)), float(round(comp[i], 3))) for i in range(n)]
