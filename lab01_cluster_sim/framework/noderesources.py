"""NodeResourcesFit: can a node host one worker of a job now, and how many.

The Filter rules of kube-scheduler's NodeResourcesFit plugin
(``pkg/scheduler/framework/plugins/noderesources/fit.go``: ``fitsRequest`` and its
``InsufficientResource`` list), on Lab 01's resources: CPU (milli-cores), memory (MiB), whole
GPUs and a GPU share (milli-GPU on one GPU), and the GPU models a job allows. The scheduling
cycle (:mod:`lab01_cluster_sim.scheduler`) applies the same rules as vector masks; the functions
here explain a refusal (:func:`filter_node`), count how many workers fit
(:func:`worker_slots`, :class:`TrialState`) and tell "never" from "not now"
(:func:`unresolvable_reason`). Further Filter plugins (taints and tolerations, node affinity)
go beside this module, one module each.
"""

from __future__ import annotations

from typing import Any

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from lab01_cluster_sim.cluster import ClusterState, Request
from lab01_cluster_sim.model import MILLI_PER_GPU, Job, JobRecord, Placement

Scheduler = Any
"""The :class:`lab01_cluster_sim.scheduler.Scheduler` that calls in (one floor up: named here, not
imported)."""

MANY = 1 << 40
"""The slot count of a resource a request does not use ("unbounded")."""


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
    slots = np.full(cpu_free.shape[0], MANY, dtype=np.int64)
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
    total = int(np.minimum(slots * c.count, MANY).sum())
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

    def __init__(self, scheduler: Scheduler) -> None:
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
        return int(np.minimum(self.slots(record), MANY).sum()) >= need
