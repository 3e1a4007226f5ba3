"""Mutable cluster state: free milli-GPU per GPU, free CPU and memory per node.

This is the one place that does the bookkeeping every placement policy relies on
(as ``resource_allocation.go`` does for the Kubernetes scheduler's scoring plugins):
policies only read these arrays and do arithmetic. State is kept as numpy arrays so
that a policy can score every node at once.

Shapes (N nodes, G = the largest GPU count of any node, at least 1):

- ``gpu_free``: int64 (N, G), free milli-GPU of each GPU, 0..1000. Slots beyond a node's
  ``gpu_count`` are padding and stay 0, so sums and ">= share" tests ignore them.
- ``cpu_free``, ``mem_free``: int64 (N,), milli-cores and MiB.
- ``gpu_count``, ``model_index``: int64 (N,); ``model_names[model_index[n]]`` is the GPU
  model of node n (``""`` for a CPU-only node).
- ``tie_rank``: int64 (N,), a permutation of 0..N-1; among nodes with equal scores the
  lowest rank wins (the fragmentation paper's simulator breaks ties by node name after
  renaming nodes with a seeded random permutation: ``selectHost`` in its fork's
  generic_scheduler.go, ``syncClusterResourceList`` in pkg/simulator/simulator.go of
  hkust-adsl/kubernetes-scheduler-simulator).
- ``node_version``: int64 (N,), bumped by every :meth:`ClusterState.bind` and
  :meth:`ClusterState.release` of that node. Caches of per-node values (fragmentation,
  FGD scores) compare it to know which nodes changed, so they recompute only those.
- ``gpu_idle``: int64 (N,), free milli-GPU per node (the row sums of ``gpu_free``), kept up
  to date by :meth:`ClusterState.bind` and :meth:`ClusterState.release` so that the scorers
  read it instead of summing ``gpu_free[candidates]`` per decision (that sum was ~70 % of
  the time per decision with every node scored at 10,000 nodes). Code that writes
  ``gpu_free`` directly (not through bind/release) must call :meth:`ClusterState.refresh`.
- ``tag_count``: int64 (N, G + 1), resident GPU pods per node by *placement tag*:
  column 0 counts GPU-sharing pods (one GPU, share < 1000), column k counts pods of k
  whole GPUs. GpuClustering (``gpu_clustering_score.go``) reads it. CPU-only pods are not counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.model import MILLI_PER_GPU, Job, Node


@dataclass(frozen=True, slots=True)
class Request:
    """What one worker (pod) asks of one node.

    Attributes:
        cpu_milli: CPU, milli-cores.
        memory_mib: memory, MiB.
        num_gpus: GPUs (k); 0 for a CPU-only pod.
        gpu_milli: milli-GPU per GPU (u), 1..1000; 0 when ``num_gpus`` is 0.
        gpu_models: allowed GPU models; empty = any.
    """

    cpu_milli: int
    memory_mib: int
    num_gpus: int
    gpu_milli: int
    gpu_models: tuple[str, ...] = ()

    @classmethod
    def of_worker(cls, job: Job) -> "Request":
        """The request of one worker of ``job``."""
        return cls(job.cpu_milli, job.memory_mib, job.gpus_per_worker, job.gpu_milli, job.gpu_models)


class ClusterState:
    """Free resources of every node, updated in place by :meth:`bind` and :meth:`release`.

    Args:
        nodes: the cluster's nodes (names must be unique).
        tie_rank: optional permutation of ``range(len(nodes))`` for tie-breaking;
            default: node order.

    Raises:
        InputError: duplicate node names, or a bad ``tie_rank``.
    """

    def __init__(self, nodes: Sequence[Node], tie_rank: Sequence[int] | None = None) -> None:
        self.nodes: tuple[Node, ...] = tuple(nodes)
        n = len(self.nodes)
        names = [node.name for node in self.nodes]
        if len(set(names)) != n:
            seen: set[str] = set()
            dup = next(x for x in names if x in seen or seen.add(x))  # type: ignore[func-returns-value]
            raise InputError(f"duplicate node name {dup!r}")
        self.node_index: dict[str, int] = {name: i for i, name in enumerate(names)}
        self.gpu_count = np.array([node.gpu_count for node in self.nodes], dtype=np.int64)
        width = max(1, int(self.gpu_count.max()) if n else 1)
        self.gpu_free = np.zeros((n, width), dtype=np.int64)
        self.gpu_free[np.arange(width)[None, :] < self.gpu_count[:, None]] = MILLI_PER_GPU
        self.gpu_idle = self.gpu_free.sum(axis=1)
        self.cpu_capacity = np.array([node.cpu_milli for node in self.nodes], dtype=np.int64)
        self.mem_capacity = np.array([node.memory_mib for node in self.nodes], dtype=np.int64)
        self.cpu_free = self.cpu_capacity.copy()
        self.mem_free = self.mem_capacity.copy()
        self.model_names: list[str] = sorted({node.gpu_model for node in self.nodes})
        lookup = {m: i for i, m in enumerate(self.model_names)}
        self.model_index = np.array([lookup[node.gpu_model] for node in self.nodes], dtype=np.int64)
        if tie_rank is None:
            self.tie_rank = np.arange(n, dtype=np.int64)
        else:
            rank = np.asarray(tie_rank, dtype=np.int64)
            if rank.shape != (n,) or not np.array_equal(np.sort(rank), np.arange(n)):
                raise InputError(f"tie_rank must be a permutation of 0..{n - 1}")
            self.tie_rank = rank
        self.node_version = np.zeros(n, dtype=np.int64)
        self.tag_count = np.zeros((n, width + 1), dtype=np.int64)
        # Normalisers of the paper's BestFit and DotProd scores (MaxSpecCpu, MaxSpecGpu in
        # the FGD simulator: 128000 milli-CPU and 8000 milli-GPU, which are exactly the
        # largest node of the openb cluster). Taken from the cluster so any cluster works.
        self.max_cpu_milli = int(self.cpu_capacity.max()) if n else 1
        self.max_gpu_milli = max(1, int(self.gpu_count.max()) * MILLI_PER_GPU if n else MILLI_PER_GPU)

    def __copy__(self) -> "ClusterState":
        """A copy whose mutable arrays (free resources, ``gpu_idle``, ``tag_count``,
        ``node_version``) are its own, so binds on a trial copy never leak into this state;
        the fixed arrays (capacities, models, tie ranks) are shared."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        for attr in ("gpu_free", "cpu_free", "mem_free", "gpu_idle", "tag_count", "node_version"):
            setattr(new, attr, getattr(self, attr).copy())
        return new

    def add_nodes(self, nodes: Sequence[Node]) -> range:
        """Append ``nodes`` (free, at full capacity) to the cluster; return their indices.

        Every per-node array grows (the GPU axis too when a new node has more GPUs than any
        before); new nodes rank last for tie-breaking, in the order given; the scoring
        normalisers (largest node) follow. Used by node-lifecycle plugins (an autoscaler
        launching nodes); a node is never removed from the arrays (a plugin takes it out of
        service instead), so indices stay valid for the whole run.

        Raises:
            InputError: a name already in the cluster or given twice.
        """
        nodes = tuple(nodes)
        first = self.num_nodes
        for node in nodes:
            if node.name in self.node_index:
                raise InputError(f"duplicate node name {node.name!r}")
            self.node_index[node.name] = len(self.node_index)
        if not nodes:
            return range(first, first)
        k = len(nodes)
        counts = np.array([node.gpu_count for node in nodes], dtype=np.int64)
        width = max(self.gpu_free.shape[1], int(counts.max()))
        if width > self.gpu_free.shape[1]:
            grow = width - self.gpu_free.shape[1]
            self.gpu_free = np.pad(self.gpu_free, ((0, 0), (0, grow)))
            self.tag_count = np.pad(self.tag_count, ((0, 0), (0, grow)))
        new_free = np.where(np.arange(width)[None, :] < counts[:, None], MILLI_PER_GPU, 0).astype(np.int64)
        self.nodes = self.nodes + nodes
        self.gpu_free = np.vstack([self.gpu_free, new_free])
        self.gpu_idle = np.concatenate([self.gpu_idle, new_free.sum(axis=1)])
        self.gpu_count = np.concatenate([self.gpu_count, counts])
        cpu = np.array([node.cpu_milli for node in nodes], dtype=np.int64)
        mem = np.array([node.memory_mib for node in nodes], dtype=np.int64)
        self.cpu_capacity = np.concatenate([self.cpu_capacity, cpu])
        self.mem_capacity = np.concatenate([self.mem_capacity, mem])
        self.cpu_free = np.concatenate([self.cpu_free, cpu])
        self.mem_free = np.concatenate([self.mem_free, mem])
        for node in nodes:
            if node.gpu_model not in self.model_names:
                self.model_names = sorted(set(self.model_names) | {node.gpu_model})
        lookup = {m: i for i, m in enumerate(self.model_names)}
        self.model_index = np.array([lookup[node.gpu_model] for node in self.nodes], dtype=np.int64)
        self.tie_rank = np.concatenate([self.tie_rank, np.arange(first, first + k, dtype=np.int64)])
        self.node_version = np.concatenate([self.node_version, np.zeros(k, dtype=np.int64)])
        self.tag_count = np.vstack([self.tag_count, np.zeros((k, width + 1), dtype=np.int64)])
        self.max_cpu_milli = max(self.max_cpu_milli, int(cpu.max()))
        self.max_gpu_milli = max(self.max_gpu_milli, int(counts.max()) * MILLI_PER_GPU)
        return range(first, first + k)

    def refresh(self) -> None:
        """Recompute ``gpu_idle`` from ``gpu_free`` after a direct write to ``gpu_free``."""
        self.gpu_idle = self.gpu_free.sum(axis=1)

    # -- read-only views -------------------------------------------------------------
    @property
    def num_nodes(self) -> int:
        return len(self.nodes)

    @property
    def total_gpus(self) -> int:
        """Physical GPUs in the cluster."""
        return int(self.gpu_count.sum())

    def idle_milli(self) -> np.ndarray:
        """int64 (N,): free milli-GPU per node (sum over its GPUs); a copy of ``gpu_idle``."""
        return self.gpu_idle.copy()

    def full_free_gpus(self) -> np.ndarray:
        """int64 (N,): GPUs per node that are entirely free (1000 milli)."""
        return (self.gpu_free == MILLI_PER_GPU).sum(axis=1)

    def allocated_milli(self) -> int:
        """Allocated milli-GPU in the whole cluster."""
        return int(self.gpu_count.sum() * MILLI_PER_GPU - self.gpu_free.sum())

    def model_mask(self, gpu_models: Sequence[str]) -> np.ndarray:
        """bool (N,): nodes whose GPU model is in ``gpu_models`` (all nodes if empty)."""
        if not gpu_models:
            return np.ones(self.num_nodes, dtype=bool)
        wanted = [i for i, m in enumerate(self.model_names) if m in set(gpu_models)]
        return np.isin(self.model_index, wanted)

    def feasible(self, request: Request) -> np.ndarray:
        """bool (N,): nodes where ``request`` fits now.

        A node fits when CPU and memory suffice and, for a GPU request of k GPUs at u
        milli each, the node's model is allowed and at least k of its GPUs have >= u free
        (for whole GPUs, k fully free GPUs). This is the NodeResourcesFit filter plus the
        Open-Gpu-Share filter of the fragmentation paper's simulator
        (pkg/simulator/plugin/open_gpu_share.go of hkust-adsl/kubernetes-scheduler-simulator).
        """
        ok = (self.cpu_free >= request.cpu_milli) & (self.mem_free >= request.memory_mib)
        if request.num_gpus > 0:
            ok &= (self.gpu_free >= request.gpu_milli).sum(axis=1) >= request.num_gpus
            if request.gpu_models:
                ok &= self.model_mask(request.gpu_models)
        return ok

    def fits_empty(self, request: Request) -> np.ndarray:
        """bool (N,): nodes where ``request`` would fit if the node were empty (never fits -> reject)."""
        ok = (self.cpu_capacity >= request.cpu_milli) & (self.mem_capacity >= request.memory_mib)
        if request.num_gpus > 0:
            ok &= self.gpu_count >= request.num_gpus
            if request.gpu_models:
                ok &= self.model_mask(request.gpu_models)
        return ok

    @staticmethod
    def tag_of(request: Request) -> int:
        """Placement tag column of ``request`` in :attr:`tag_count`: 0 = GPU-sharing pod,
        k = pod of k whole GPUs; -1 for a CPU-only pod (not tagged)."""
        if request.num_gpus == 0:
            return -1
        if request.num_gpus == 1 and request.gpu_milli < MILLI_PER_GPU:
            return 0
        return request.num_gpus

    # -- updates ---------------------------------------------------------------------
    def bind(self, node: int, gpus: Sequence[int], request: Request) -> None:
        """Take ``request`` from ``node``, ``request.gpu_milli`` from each GPU in ``gpus``.

        Raises:
            ValueError: the request does not fit there (a scheduler bug, never user input).
        """
        if len(gpus) != request.num_gpus:
            raise ValueError(f"bind: {len(gpus)} GPUs given for a request of {request.num_gpus}")
        if self.cpu_free[node] < request.cpu_milli or self.mem_free[node] < request.memory_mib:
            raise ValueError(f"bind: CPU or memory over-allocated on node {self.nodes[node].name}")
        for g in gpus:
            if g >= self.gpu_count[node] or self.gpu_free[node, g] < request.gpu_milli:
                raise ValueError(f"bind: GPU {g} of node {self.nodes[node].name} over-allocated")
        if len(set(gpus)) != len(gpus):
            raise ValueError("bind: the same GPU given twice")
        self.cpu_free[node] -= request.cpu_milli
        self.mem_free[node] -= request.memory_mib
        for g in gpus:
            self.gpu_free[node, g] -= request.gpu_milli
        self.gpu_idle[node] -= request.gpu_milli * len(gpus)
        tag = self.tag_of(request)
        if tag >= 0:
            self.tag_count[node, tag] += 1
        self.node_version[node] += 1

    def release(self, node: int, gpus: Sequence[int], request: Request) -> None:
        """Give back what :meth:`bind` took.

        Raises:
            ValueError: more would be free than the node has (a scheduler bug).
        """
        self.cpu_free[node] += request.cpu_milli
        self.mem_free[node] += request.memory_mib
        for g in gpus:
            self.gpu_free[node, g] += request.gpu_milli
        self.gpu_idle[node] += request.gpu_milli * len(gpus)
        tag = self.tag_of(request)
        if tag >= 0:
            self.tag_count[node, tag] -= 1
        self.node_version[node] += 1
        # Only the GPUs given back can have gone over (the others were not touched).
        if (
            self.cpu_free[node] > self.cpu_capacity[node]
            or self.mem_free[node] > self.mem_capacity[node]
            or any(self.gpu_free[node, g] > MILLI_PER_GPU for g in gpus)
        ):
            raise ValueError(f"release: more freed than allocated on node {self.nodes[node].name}")
