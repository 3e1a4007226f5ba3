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

from lab01_cluster_sim.cluster import ClusterState, Request
from lab01_cluster_sim.disciplines.runner import Allocation, Runner, place_gang
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.model import MILLI_PER_GPU, Job, Node

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


def worker_slots(state: ClusterState, request: Request) -> np.ndarray:
    """int64 (N,): how many workers asking ``request`` each node could host now (an upper
    bound for shared GPUs, exact for whole GPUs)."""
    big = np.iinfo(np.int64).max // 4
    slots = np.full(state.num_nodes, big, dtype=np.int64)
    if request.cpu_milli:
        slots = np.minimum(slots, state.cpu_free // request.cpu_milli)
    if request.memory_mib:
        slots = np.minimum(slots, state.mem_free // request.memory_mib)
    if request.num_gpus:
        if request.gpu_milli >= MILLI_PER_GPU:
            g = (state.gpu_free >= MILLI_PER_GPU).sum(axis=1) // request.num_gpus
        else:
            g = (state.gpu_free // request.gpu_milli).sum(axis=1)
        if request.gpu_models:
            g = np.where(state.model_mask(request.gpu_models), g, 0)
        slots = np.minimum(slots, g)
    return slots


def place_in_one_island(state: ClusterState, job: Job, islands: np.ndarray,
                        mask: np.ndarray | None = None) -> Allocation | None:
    """Place the whole gang inside one island, best-fit over islands, or None.

    Among the islands that can hold the gang, take the one with the least free milli-GPU
    (ties: lowest island id), so big holes stay open for big jobs. Islands are first
    screened by counting worker slots per island (vectorised); the placement itself is
    tried only on islands that pass, best first.
    """
    ids, inverse = np.unique(islands, return_inverse=True)
    slots = worker_slots(state, Request.of_worker(job))
    if mask is not None:
        slots = np.where(mask, slots, 0)
    per_island = np.bincount(inverse, weights=np.minimum(slots, job.workers), minlength=ids.size)
    free = np.bincount(inverse, weights=state.gpu_free.sum(axis=1), minlength=ids.size)
    for k in np.lexsort((ids, free)):
        if per_island[k] < job.workers:
            continue
        m = inverse == k
        if mask is not None:
            m = m & mask
        alloc = place_gang(state, job, m)
        if alloc is not None:
            return alloc
    return None


class TopologyAware:
    """Placement that prefers one NVLink island and waits at most ``max_wait_s`` for it.

    Use as a :class:`~lab01_cluster_sim.disciplines.runner.Runner` ``placer`` together with
    :meth:`speed`. The bounded wait starts when the job first *could* run spread over
    islands (enough free GPUs, no single island): it then waits at most ``max_wait_s`` for
    one island and afterwards takes the spread placement, running ``comm_slowdown`` times
    slower. (Counting from submission instead would make the bound meaningless in a busy
    queue, where jobs wait longer than it for any placement at all.)
    ``max_wait_s = 0`` is topology-oblivious best-fit; ``inf`` never spans (unless the job
    is larger than any island, which it then does at once).

    Args:
        nodes: the cluster (for the island ids).
        max_wait_s: bounded wait for one island, s.
        comm_fraction: job id -> communication fraction; ``default_comm_fraction`` otherwise.
        params: bandwidths.
    """

    def __init__(self, nodes: Sequence[Node], max_wait_s: float = 0.0,
                 comm_fraction: Mapping[str, float] | None = None, default_comm_fraction: float = 0.2,
                 params: TopologyParams = TopologyParams()) -> None:
        if not max_wait_s >= 0:   # also rejects NaN (inf = wait without bound)
            raise InputError(f"max_wait_s must be >= 0 (inf = no bound), got {max_wait_s}")
        self.islands = island_ids(nodes)
        self.max_wait_s = max_wait_s
        self.comm_fraction = dict(comm_fraction or {})
        self.default_comm_fraction = default_comm_fraction
        self.params = params
        comm_slowdown(default_comm_fraction, 1)  # validates
        sizes: dict[int, int] = {}
        for node, isl in zip(nodes, self.islands):
            sizes[int(isl)] = sizes.get(int(isl), 0) + node.gpu_count
        self.largest_island = max(sizes.values(), default=0)
        self.spannable_since: dict[str, float] = {}
        """job id -> first time a spread placement existed while no single island could hold it."""
        self.spanned: set[str] = set()
        """ids of jobs that ran (at least once) on GPUs of more than one island."""

    def __call__(self, runner: Runner, job: Job, now: float) -> Allocation | None:
        mask = runner.mask_for(job)
        if job.num_gpus <= 1 or job.num_gpus > self.largest_island:
            return place_gang(runner.state, job, mask)
        alloc = place_in_one_island(runner.state, job, self.islands, mask)
        if alloc is not None:
            return alloc
        spread = place_gang(runner.state, job, mask)
        if spread is None:
            return None                      # cannot run anywhere yet: an ordinary wait
        since = self.spannable_since.setdefault(job.job_id, now)
        deadline = since + self.max_wait_s
        if now >= deadline:
            return spread
        if not math.isinf(deadline):
            runner.wake_at(deadline)
        return None

    def speed(self, runner: Runner, job: Job, alloc: Allocation) -> float:
        """Slowdown of ``job`` on ``alloc`` (a Runner ``speed`` hook)."""
        f = self.comm_fraction.get(job.job_id, self.default_comm_fraction)
        split = gpus_per_island(alloc, self.islands)
        if len(split) <= 1:
            return 1.0
        self.spanned.add(job.job_id)
        return comm_slowdown(f, len(split), self.params, rails=min(split.values()))


@dataclass(frozen=True)
class TopologyRow:
    """One point of the wait-versus-slowdown comparison (times in s).

    ``spanning_jobs`` counts multi-GPU jobs that ran across more than one NVLink island,
    whatever it cost them; ``slowed_jobs`` those of them that ran slower for it (none
    when the communication fraction is 0).
    """

    max_wait_s: float
    mean_wait_s: float
    mean_slowdown: float
    mean_jct_s: float
    spanning_jobs: int
    multi_gpu_jobs: int
    makespan_s: float
    slowed_jobs: int = 0


def compare_wait_vs_slowdown(nodes: Sequence[Node], jobs: Sequence[Job], max_waits: Sequence[float],
                             *, discipline: str = "fifo-skip", default_comm_fraction: float = 0.2,
                             params: TopologyParams = TopologyParams()) -> list[TopologyRow]:
    """Run the workload once per bounded wait and report the trade-off.

    JCT = end - submit of completed jobs; slowdown is averaged over multi-GPU jobs.
    """
    rows = []
    for w in max_waits:
        topo = TopologyAware(nodes, w, default_comm_fraction=default_comm_fraction, params=params)
        runner = Runner(nodes, jobs, discipline, placer=topo, speed=topo.speed)
        res = runner.run()
        multi = [o for o in res.outcomes if o.gpus > 1 and o.first_start is not None]
        started = [r for r in runner.runs.values() if r.job.num_gpus > 1 and r.first_start is not None]
        spanning = [r for r in started if r.job.job_id in topo.spanned]
        slowed = [r for r in spanning if r.slowdown > 1.0]
        done = [o for o in res.outcomes if o.end is not None]
        waits = res.waits()
        rows.append(TopologyRow(
            float(w), float(waits.mean()) if waits.size else 0.0,
            float(np.mean([o.slowdown for o in multi])) if multi else 1.0,
            float(np.mean([o.end - o.submit for o in done])) if done else 0.0,
            len(spanning), len(multi), res.end_time - res.start_time, len(slowed)))
    return rows
