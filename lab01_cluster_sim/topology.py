"""NVLink islands, the ring all-reduce cost model, and topology-aware placement.

A job's GPUs talk over NVLink inside one *NVLink island* (the GPUs of one HGX board,
or a multi-node NVLink domain such as a 72-GPU NVL72 rack) and over the inter-island
network (InfiniBand) otherwise. Data-parallel training all-reduces its gradients every
step; with a ring all-reduce each GPU sends and receives ``2 (n - 1) / n`` of the
gradient bytes (Patarasuk & Yuan, "Bandwidth optimal all-reduce algorithms for clusters
of workstations", JPDC 2009; the NCCL performance notes, "busbw = algbw x 2(n-1)/n"),
and a ring is as fast as its slowest link.

Default bandwidths (parameters of :class:`TopologyParams`; the per-direction NVLink figure is
the only NVLink default):

- NVLink: 450 GB/s per GPU *per direction* on H100 SXM5. The datasheet's "NVLink:
  900GB/s" (NVIDIA H100 Tensor Core GPU datasheet) is the bidirectional total of its 18
  4th-generation links (18 x 25 GB/s each way = 450 GB/s each way).
- InfiniBand: 50 GB/s per port (rail) per direction at 400 Gb/s NDR (400 Gb/s / 8 bits;
  NVIDIA ConnectX-7 / Quantum-2 NDR specifications). One port per GPU, as in a DGX H100
  (8 x 400 Gb/s compute ports).

Both are per-direction figures because a ring all-reduce sends to one neighbour while
receiving from the other: its time is bound by the one-way bandwidth of the slowest link
(the NCCL tests' "busbw" is compared against it). Mixing a bidirectional total with a
one-way figure would double the NVLink/InfiniBand ratio.

**Crossing islands.** NCCL does not push a cross-island all-reduce through one port: it
builds several rings (channels), splits the data over NVLink inside each island and sends
each ring out through a different NIC, so the bandwidth of all the NICs adds up as long as
NVLink can feed them (NCCL maintainers in NVIDIA/nccl#412: "NCCL is able to aggregate the
bandwidth of multiple NICs, but that requires GPUs to be connected with NVLink with a
bandwidth that matches or exceeds the sum of the bandwidth of all NICs", and NVIDIA/nccl#601:
multi-NIC aggregation works "because we can use NVLink to split the operations in N parts
then balance the traffic onto the N NICs"). A job's ring can use the ports of its own GPUs
only, and the island holding the fewest of them is the bottleneck, so the cross-island
bandwidth seen by the ring is::

    inter = min(NVLink per GPU, rails x port bandwidth),   rails = job GPUs in its smallest island

(:func:`cross_island_gbps`). 10 GB over 16 GPUs as 8 + 8: min(450, 8 x 50) = 400 GB/s,
``2 x 15/16 x 10 GB / 400 GB/s`` = 46.9 ms against 41.7 ms in one island (x1.125); 8 GPUs as
4 + 4: 200 GB/s, 87.5 ms against 38.9 ms (x2.25); 8 GPUs as 7 + 1: one rail, 50 GB/s,
350 ms (x9). The lopsided split is the one a topology-aware scheduler should avoid.

The slowdown model: a job that spends a fraction ``f`` of each step communicating inside
one island spends ``f x (intra / inter)`` when its ring crosses islands (communication not
overlapped with compute; data-parallel training usually overlaps part of its all-reduce
with the backward pass, so this is an upper bound), so its run time grows by
``(1 - f) + f x intra / inter``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.model import Job, JobRecord, Node, format_seconds
from lab01_cluster_sim.framework.interface import Plugin
from lab01_cluster_sim.framework.status import PreFilterResult

Allocation = tuple[tuple[int, tuple[int, ...]], ...]
"""One ``(node index, GPU indices)`` per worker."""

NVLINK_H100_GBPS = 450.0
"""GB/s per GPU per direction, H100 SXM5 4th-generation NVLink: 18 links x 25 GB/s (the
datasheet's 900 GB/s counts both directions)."""

INFINIBAND_NDR_GBPS = 50.0
"""GB/s per direction per 400 Gb/s NDR InfiniBand port (400 / 8)."""

HGX_GPUS_PER_ISLAND = 8
"""GPUs (and compute NICs, one per GPU) of one HGX H100 board: the rails a job that fills an
island on each side of the cut can use; :func:`comm_slowdown`'s default."""


@dataclass(frozen=True, slots=True)
class TopologyParams:
    """Bandwidths of the two link classes, GB/s per direction.

    Attributes:
        intra_island_gbps: NVLink bandwidth per GPU (default 450, H100 SXM5).
        inter_island_gbps: bandwidth of one inter-island port (rail), one per GPU (default
            50, NDR InfiniBand); a ring crossing islands uses several
            (:func:`cross_island_gbps`).

    Raises:
        InputError: a bandwidth that is not a finite number > 0 (NaN included).
    """

    intra_island_gbps: float = NVLINK_H100_GBPS
    inter_island_gbps: float = INFINIBAND_NDR_GBPS

    def __post_init__(self) -> None:
        if not (0 < self.intra_island_gbps < math.inf and 0 < self.inter_island_gbps < math.inf):
            raise InputError(f"bandwidths must be > 0 GB/s, got intra={self.intra_island_gbps}, "
                             f"inter={self.inter_island_gbps}")


def ring_allreduce_seconds(gradient_bytes: float, n_gpus: int, link_gbps: float) -> float:
    """Time of one ring all-reduce: ``2 (n - 1) / n x bytes / bandwidth`` (0 for one GPU).

    Args:
        gradient_bytes: size of the gradients, bytes.
        n_gpus: ring size.
        link_gbps: bandwidth of the slowest link of the ring, GB/s (1 GB = 1e9 bytes).

    Raises:
        InputError: negative or NaN bytes, ``n_gpus < 1`` or a bandwidth that is not a
            finite number > 0.
    """
    if not (0 <= gradient_bytes < math.inf and n_gpus >= 1 and 0 < link_gbps < math.inf):   # NaN fails too
        raise InputError(f"ring_allreduce_seconds: need finite bytes >= 0, n_gpus >= 1, finite bandwidth > 0; "
                         f"got {gradient_bytes}, {n_gpus}, {link_gbps}")
    return 2.0 * (n_gpus - 1) / n_gpus * gradient_bytes / (link_gbps * 1e9)


def cross_island_gbps(rails: int, params: TopologyParams = TopologyParams()) -> float:
    """Bandwidth a ring all-reduce gets across NVLink islands: ``min(intra, rails x inter)``, GB/s.

    ``rails`` is the number of the job's GPUs in its smallest island (each with its own
    port); NCCL spreads its rings over their NICs through NVLink (see the module docstring),
    and NVLink per GPU caps the sum.

    Raises:
        InputError: ``rails`` < 1.
    """
    if rails < 1:
        raise InputError(f"rails must be >= 1 (GPUs of the job in its smallest island), got {rails}")
    return min(params.intra_island_gbps, rails * params.inter_island_gbps)


def _even_rails(n_gpus: int, n_islands: int) -> int:
    """GPUs in the smallest island when ``n_gpus`` are split as evenly as possible."""
    return max(1, n_gpus // n_islands)


def allreduce_seconds(gradient_bytes: float, n_gpus: int, n_islands: int,
                      params: TopologyParams = TopologyParams(), *, rails: int | None = None) -> float:
    """Ring all-reduce time of a job over ``n_islands`` islands: the slowest link decides.

    Inside one island the link is NVLink; across islands it is :func:`cross_island_gbps`
    of ``rails``, the job's GPUs in its smallest island (default: an even split,
    ``n_gpus // n_islands``). Example (10 GB, 450/50 GB/s): 16 GPUs as 8 + 8 ->
    ``2 x 15/16 x 10e9 / 400e9`` = 46.9 ms; 8 GPUs as 7 + 1 (``rails=1``) -> 350 ms.

    Raises:
        InputError: as :func:`ring_allreduce_seconds`; ``n_islands`` < 1 or above
            ``n_gpus``; ``rails`` < 1 or more than an even split allows
            (``rails x n_islands > n_gpus``).
    """
    if not 1 <= n_islands <= max(1, n_gpus):
        raise InputError(f"allreduce_seconds: n_islands must be in 1..n_gpus ({n_gpus}), got {n_islands}")
    if n_islands <= 1:
        return ring_allreduce_seconds(gradient_bytes, n_gpus, params.intra_island_gbps)
    if rails is None:
        rails = _even_rails(n_gpus, n_islands)
    elif not 1 <= rails <= n_gpus // n_islands:
        raise InputError(f"allreduce_seconds: rails (GPUs in the smallest island) must be in 1..{n_gpus // n_islands} "
                         f"for {n_gpus} GPUs over {n_islands} islands, got {rails}")
    return ring_allreduce_seconds(gradient_bytes, n_gpus, cross_island_gbps(rails, params))


def comm_slowdown(comm_fraction: float, n_islands: int, params: TopologyParams = TopologyParams(), *,
                  rails: int | None = None) -> float:
    """Run-time factor of a job spanning ``n_islands`` islands (1.0 inside one island).

    ``(1 - f) + f x intra / inter`` where ``f`` is the share of its step time the job
    spends in all-reduce when it runs inside one island and ``inter`` is
    :func:`cross_island_gbps` of ``rails`` (the job's GPUs in its smallest island; default
    :data:`HGX_GPUS_PER_ISLAND`, a full 8-GPU board on each side). With 450/50 GB/s and
    f = 0.2: 8 rails -> 0.8 + 0.2 x 450/400 = 1.025; 1 rail -> 0.8 + 0.2 x 9 = 2.6.

    Raises:
        InputError: ``comm_fraction`` outside [0, 1]; ``rails`` < 1.
    """
    if not 0.0 <= comm_fraction <= 1.0:
        raise InputError(f"comm_fraction must be in [0, 1], got {comm_fraction}")
    if n_islands <= 1:
        return 1.0
    inter = cross_island_gbps(HGX_GPUS_PER_ISLAND if rails is None else rails, params)
    return (1.0 - comm_fraction) + comm_fraction * params.intra_island_gbps / inter


def island_ids(nodes: Sequence[Node]) -> np.ndarray:
    """int64 (N,): the NVLink island of each node; a node with ``nvlink_island == -1`` is its own.

    Own islands get ids above every explicit id so they never collide.
    """
    explicit = [n.nvlink_island for n in nodes if n.nvlink_island >= 0]
    base = (max(explicit) + 1) if explicit else 0
    return np.array([n.nvlink_island if n.nvlink_island >= 0 else base + i for i, n in enumerate(nodes)],
                    dtype=np.int64)


def islands_spanned(alloc: Allocation, islands: np.ndarray) -> int:
    """Number of distinct islands the GPUs of ``alloc`` are on (0 for a CPU-only job)."""
    return len({int(islands[node]) for node, gpus in alloc if gpus})


def gpus_per_island(alloc: Allocation, islands: np.ndarray) -> dict[int, int]:
    """Island id -> GPUs of ``alloc`` on it (islands without GPUs of the job are absent)."""
    out: dict[int, int] = {}
    for node, gpus in alloc:
        if gpus:
            isl = int(islands[node])
            out[isl] = out.get(isl, 0) + len(gpus)
    return out


def choose_island(slots: np.ndarray, free_milli: np.ndarray, islands: np.ndarray, workers: int,
                  grouping: tuple[np.ndarray, np.ndarray] | None = None) -> int | None:
    """The NVLink island a gang of ``workers`` should go to, or None if no island holds it.

    Best-fit over islands: among the islands whose nodes can host all ``workers`` (sum over
    the island's nodes of ``slots``, each node's worker slots now, see
    :func:`lab01_cluster_sim.framework.noderesources.worker_slots`), the one with the least free milli-GPU
    (ties: lowest island id), so big holes stay open for big gangs.

    Args:
        slots: int (N,), workers of the gang each node could host now (0 on nodes the gang
            may not use).
        free_milli: int (N,), free milli-GPU per node.
        islands: int (N,), island id per node (:func:`island_ids`).
        workers: the gang's size, >= 1.
        grouping: ``np.unique(islands, return_inverse=True)``, if the caller keeps it.
    """
    ids, inverse = grouping if grouping is not None else np.unique(islands, return_inverse=True)
    inverse = inverse.reshape(-1)
    per_island = np.bincount(inverse, weights=np.minimum(slots, workers), minlength=ids.size)
    free = np.bincount(inverse, weights=free_milli, minlength=ids.size)
    ok = np.flatnonzero(per_island >= workers)
    if ok.size == 0:
        return None
    best = ok[np.lexsort((ids[ok], free[ok]))[0]]
    return int(ids[best])


class TopologyAware(Plugin):
    """Engine plugin (``"topology"``): prefer one NVLink island, wait at most ``max_wait_s``
    for it, and slow down jobs whose ring crosses islands.

    - PreFilter: a multi-GPU job that fits in an island is restricted to the best island that
      can hold it now (:func:`choose_island`). If none can but the job would fit spread over
      islands, it waits (``Unschedulable``, reason "waiting for one NVLink island") for at most
      ``max_wait_s`` counted from the first time it could have run spread, then runs spread.
      (Counting from submission would make the bound meaningless in a busy queue, where jobs
      wait longer than it for any placement at all.) ``max_wait_s = 0`` is topology-oblivious
      placement; ``inf`` never spans (unless the job is larger than any island, which then
      spans at once).
    - Slowdown: :func:`comm_slowdown` of the job's split over islands (rails = its GPUs in
      its smallest island), 1 inside one island.

    Args:
        nodes: the cluster (for the island ids; nodes added later are their own islands).
        max_wait_s: bounded wait for one island, s.
        comm_fraction: job id -> communication fraction; ``default_comm_fraction`` otherwise.
        params: bandwidths.

    Attributes:
        spannable_since: job id -> first time a spread placement existed while no single
            island could hold it.
        spanned: ids of jobs that ran (at least once) on GPUs of more than one island.
    """

    name = "topology"

    def __init__(self, nodes: Sequence[Node], max_wait_s: float = 0.0,
                 comm_fraction: Mapping[str, float] | None = None, default_comm_fraction: float = 0.2,
                 params: TopologyParams = TopologyParams()) -> None:
        if not max_wait_s >= 0:   # also rejects NaN (inf = wait without bound)
            raise InputError(f"max_wait_s must be >= 0 (inf = no bound), got {max_wait_s}")
        self.nodes = list(nodes)
        self.islands = island_ids(self.nodes)
        self.max_wait_s = max_wait_s
        self.comm_fraction = dict(comm_fraction or {})
        self.default_comm_fraction = default_comm_fraction
        self.params = params
        comm_slowdown(default_comm_fraction, 1)  # validates
        sizes: dict[int, int] = {}
        for node, isl in zip(self.nodes, self.islands):
            sizes[int(isl)] = sizes.get(int(isl), 0) + node.gpu_count
        self.largest_island = max(sizes.values(), default=0)
        self.spannable_since: dict[str, float] = {}
        self.spanned: set[str] = set()

    def _islands_for(self, sim) -> np.ndarray:
        n = sim.state.num_nodes
        if self.islands.shape[0] < n:   # nodes added during the run: each its own island
            base = int(self.islands.max(initial=-1)) + 1
            extra = np.arange(base, base + n - self.islands.shape[0], dtype=np.int64)
            self.islands = np.concatenate([self.islands, extra])
            self._grouping = None
        if getattr(self, "_grouping", None) is None:
            self._grouping = np.unique(self.islands, return_inverse=True)
        return self.islands

    def pre_filter(self, sim, record: JobRecord, request) -> PreFilterResult | None:
        job = record.job
        if job.num_gpus <= 1 or job.num_gpus > self.largest_island or sim.mode != "gang":
            return None
        islands = self._islands_for(sim)
        slots = sim.scheduler.slots_of(record)
        island = choose_island(slots, sim.state.gpu_idle, islands, job.workers, self._grouping)
        if island is not None:
            return PreFilterResult(nodes=islands == island)
        if int(np.minimum(slots, job.workers).sum()) < job.workers:
            return None                      # cannot run anywhere yet: an ordinary wait
        since = self.spannable_since.setdefault(job.job_id, sim.now)
        deadline = since + self.max_wait_s
        if sim.now >= deadline:
            return None                      # waited long enough: span islands
        return PreFilterResult(wait=f"waiting for one NVLink island until t={format_seconds(deadline)}s "
                                    f"(bounded wait {format_seconds(self.max_wait_s)} s; it could run across "
                                    f"islands now)", retry_at=deadline)

    def split(self, record: JobRecord) -> dict[int, int]:
        """Island id -> GPUs of ``record``'s current (or last) placement on it."""
        alloc = [(p.node_index, p.gpus) for p in (record.placements or record.last_placements)]
        return gpus_per_island(tuple(alloc), self.islands)

    def speed(self, runner, job: Job, alloc: Allocation) -> float:
        """Slowdown of ``job`` on ``alloc`` (the former runner's ``speed`` hook; the engine
        calls :meth:`slowdown`)."""
        split = gpus_per_island(tuple(alloc), self.islands)
        if len(split) <= 1:
            return 1.0
        f = self.comm_fraction.get(job.job_id, self.default_comm_fraction)
        return comm_slowdown(f, len(split), self.params, rails=min(split.values()))

    def slowdown(self, sim, record: JobRecord) -> float:
        if len(record.placements) <= 1:
            return 1.0          # one worker: one node, one island
        self._islands_for(sim)
        split = self.split(record)
        if len(split) <= 1:
            return 1.0
        self.spanned.add(record.job_id)
        f = self.comm_fraction.get(record.job_id, self.default_comm_fraction)
        return comm_slowdown(f, len(split), self.params, rails=min(split.values()))


def topology_plugin(nodes, jobs, max_wait_s: float = 0.0, comm_fraction: float = 0.2,
                     intra_gbps: float = NVLINK_H100_GBPS, inter_gbps: float = INFINIBAND_NDR_GBPS) -> TopologyAware:
    """``--plugin topology:max_wait_s=600,comm_fraction=0.2,intra_gbps=450,inter_gbps=50``."""
    return TopologyAware(nodes, max_wait_s, default_comm_fraction=comm_fraction,
                         params=TopologyParams(intra_gbps, inter_gbps))
