"""A seeded synthetic workload shaped like the Alibaba openb trace (the embedded default).

The real trace is study-only data and is not shipped, so every command runs on this
generator when no ``--trace`` is given. The shapes follow ``openb_pod_list_default.csv`` and
``openb_node_list_gpu_node.csv`` (figures computed from those files, cluster-trace-gpu-v2023/csv/ of
alibaba/clusterdata). Every distribution and parameter is a field of :class:`PodMix` or :class:`NodeType`:

Pods (one worker each unless ``gang_share`` > 0):

- kind: CPU-only 13.3 %, GPU-sharing 37.8 %, one whole GPU 48.0 %, multi-GPU 0.9 %
  (openb default: 1088 / 3078 / 3911 / 75 of 8152 pods);
- share of a GPU-sharing pod (milli-GPU): 810, 470, 320, 650, 230 with the trace's counts
  (1078, 750, 328, 253, 140), and the other 529 spread uniformly over multiples of 50 in
  50..950;
- GPUs of a multi-GPU pod: 2, 4 or 8 with weights 16, 15, 44 (the trace's counts);
- CPU (milli-CPU): lognormal, median 12500 (CPU-only), 4000 (sharing), 11400 (whole GPU),
  11000 per GPU (multi-GPU); log-sd 0.48, 0.55, 0.55, 0.30 (fitted to the trace's log CPU);
  rounded to 100 milli, clipped to 100..64000 (multi-GPU: up to min(11000 x k x 1.5, 96000));
- memory: 4 MiB per milli-CPU (4 GiB per vCPU; the trace's median is 3.8-4.2);
- arrivals: a Poisson process, exponential gaps with mean ``mean_interarrival_s`` (60 s);
- durations: lognormal, median 560 s and log-sd 1.94 (the trace's deletion minus scheduled
  time), clipped to 1 s .. 30 days.

Every pod fits some node of the openb mix when that node is empty: the 96,000 milli-CPU
cap on multi-GPU pods is the CPU of the openb 4- and 8-GPU nodes (without it about a third of
the 8-GPU pods, CPU median 88,000, would ask more than any 8-GPU node has and be rejected as
never placeable, which says nothing about placement). Memory follows CPU, so it fits too
(96,000 x 4 = 384,000 MiB <= 393,216). A custom :class:`PodMix` or node list may still
produce pods that fit nowhere; the simulator rejects them with the reason.

Nodes: the openb GPU node mix, in proportion (:data:`OPENB_NODE_TYPES`): 51 % 8-GPU nodes
(96 vCPU, 384 GiB), 43 % 2-GPU nodes (104 vCPU, 512 GiB), 4 % 4-GPU nodes (96 vCPU,
384 GiB), 2 % 1-GPU nodes (8 vCPU, 32 GiB).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.model import MILLI_PER_GPU, Job, Node


@dataclass(frozen=True)
class NodeType:
    """One kind of node of the synthetic cluster.

    Attributes:
        gpu_model: model label; gpu_count: GPUs; cpu_milli: milli-CPU; memory_mib: MiB;
        weight: share of the nodes of this type (relative).
    """

    gpu_model: str
    gpu_count: int
    cpu_milli: int
    memory_mib: int
    weight: float


OPENB_NODE_TYPES: tuple[NodeType, ...] = (
    NodeType("G2", 8, 96_000, 393_216, 617),
    NodeType("T4", 2, 104_000, 524_288, 518),
    NodeType("V100M16", 4, 96_000, 393_216, 54),
    NodeType("V100M16", 1, 8_000, 32_768, 24),
)
"""The openb GPU cluster's node mix by GPUs per node (weights = node counts of 1213 nodes;
CPU and memory of the most common node of each size)."""


@dataclass(frozen=True)
class PodMix:
    """Distributions of the synthetic pods (defaults fitted to openb default; see module doc).

    All shares are relative weights; CPU in milli-CPU; times in seconds.
    """

    kind_weights: tuple[float, float, float, float] = (1088, 3078, 3911, 75)
    """CPU-only, GPU-sharing, one whole GPU, multi-GPU."""
    share_values: tuple[int, ...] = (810, 470, 320, 650, 230)
    share_weights: tuple[float, ...] = (1078, 750, 328, 253, 140)
    share_other_weight: float = 529
    """Weight of 'any other share', drawn uniformly from multiples of 50 in 50..950."""
    multi_gpu_values: tuple[int, ...] = (2, 4, 8)
    multi_gpu_weights: tuple[float, ...] = (16, 15, 44)
    cpu_median: tuple[float, float, float, float] = (12_500, 4_000, 11_400, 11_000)
    """Median milli-CPU per kind (multi-GPU: per GPU)."""
    cpu_log_sd: tuple[float, float, float, float] = (0.48, 0.55, 0.55, 0.30)
    cpu_max: int = 64_000
    multi_gpu_cpu_max: int = 96_000
    """Cap of a multi-GPU pod's CPU: the CPU of the openb 4- and 8-GPU nodes, so it fits one."""
    mib_per_milli_cpu: float = 4.0
    mean_interarrival_s: float = 60.0
    duration_median_s: float = 560.0
    duration_log_sd: float = 1.94
    duration_max_s: float = 30 * 86_400.0
    gang_share: float = 0.0
    """Share of multi-GPU pods turned into gangs of ``gang_workers`` workers (timed mode)."""
    gang_workers: int = 2


def synthetic_nodes(num_nodes: int, types: Sequence[NodeType] = OPENB_NODE_TYPES, prefix: str = "syn-node") -> list[Node]:
    """``num_nodes`` nodes in the proportions of ``types`` (largest-remainder rounding, so a
    small cluster still has the mix), big nodes first; named ``<prefix>-0000``...

    Raises:
        InputError: ``num_nodes`` < 1 or no types.
    """
    if num_nodes < 1 or not types:
        raise InputError(f"synthetic cluster: need at least one node and one node type, got {num_nodes} nodes")
    w = np.array([t.weight for t in types], dtype=np.float64)
    exact = num_nodes * w / w.sum()
    counts = np.floor(exact).astype(int)
    for i in np.argsort(-(exact - counts), kind="stable")[: num_nodes - counts.sum()]:
        counts[i] += 1
    nodes: list[Node] = []
    for t, c in zip(types, counts):
        for _ in range(c):
            nodes.append(Node(f"{prefix}-{len(nodes):04d}", t.gpu_model, t.gpu_count, t.cpu_milli, t.memory_mib))
    return nodes


def synthetic_pods(num_pods: int, rng: np.random.Generator, mix: PodMix = PodMix(),
                   prefix: str = "syn-pod", start_time: float = 0.0) -> list[Job]:
    """``num_pods`` jobs drawn from ``mix`` with ``rng`` (see the module docstring).

    Returns jobs with ``job_id`` ``<prefix>-NNNN``, increasing ``submit_time`` (Poisson
    arrivals from ``start_time``) and lognormal ``duration``.

    Raises:
        InputError: ``num_pods`` < 0.
    """
    if num_pods < 0:
        raise InputError(f"synthetic pods: num_pods must be >= 0, got {num_pods}")
    kinds = rng.choice(4, size=num_pods, p=np.array(mix.kind_weights) / sum(mix.kind_weights))
    share_p = np.array([*mix.share_weights, mix.share_other_weight], dtype=np.float64)
    shares = rng.choice(len(share_p), size=num_pods, p=share_p / share_p.sum())
    other = rng.integers(1, 20, size=num_pods) * 50  # 50..950
    multi = rng.choice(mix.multi_gpu_values, size=num_pods,
                       p=np.array(mix.multi_gpu_weights) / sum(mix.multi_gpu_weights))
    z = rng.standard_normal(num_pods)
    gaps = rng.exponential(mix.mean_interarrival_s, size=num_pods)
    durations = np.clip(mix.duration_median_s * np.exp(mix.duration_log_sd * rng.standard_normal(num_pods)),
                        1.0, mix.duration_max_s)
    gang = rng.random(num_pods) < mix.gang_share
    t = start_time
    jobs = []
    for i in range(num_pods):
        kind = int(kinds[i])
        t += float(gaps[i])
        k = (0, 1, 1, int(multi[i]))[kind]
        u = 0 if kind == 0 else MILLI_PER_GPU
        if kind == 1:
            u = int(mix.share_values[shares[i]]) if shares[i] < len(mix.share_values) else int(other[i])
        median = mix.cpu_median[kind] * (k if kind == 3 else 1)
        cap = mix.cpu_max if kind != 3 else min(int(mix.cpu_median[3] * k * 1.5), mix.multi_gpu_cpu_max)
        cpu = int(np.clip(round(median * np.exp(mix.cpu_log_sd[kind] * z[i]) / 100) * 100, 100, cap))
        workers = mix.gang_workers if (kind == 3 and gang[i]) else 1
        jobs.append(Job(
            job_id=f"{prefix}-{i:04d}", submit_time=round(t, 3), duration=round(float(durations[i]), 3),
            gpus_per_worker=k, gpu_milli=u, cpu_milli=cpu, memory_mib=int(cpu * mix.mib_per_milli_cpu),
            workers=workers,
        ))
    return jobs


def pods_to_load(nodes: Sequence[Node], load: float, rng: np.random.Generator, mix: PodMix = PodMix(),
                 prefix: str = "syn-pod") -> list[Job]:
    """Draw pods until their GPU request reaches ``load`` x the GPU capacity of ``nodes``
    (the pod that crosses it is kept). The openb default list is at 0.98.

    Raises:
        InputError: ``load`` <= 0 or a cluster without GPUs.
    """
    capacity = sum(n.gpu_count for n in nodes) * MILLI_PER_GPU
    if capacity == 0 or not load > 0:
        raise InputError(f"synthetic pods: need GPUs in the cluster and load > 0, got load {load}")
    jobs: list[Job] = []
    total = 0
    while total < load * capacity:
        batch = synthetic_pods(64, rng, mix, prefix=prefix, start_time=jobs[-1].submit_time if jobs else 0.0)
        for j in batch:
            j = Job(f"{prefix}-{len(jobs):05d}", j.submit_time, j.duration, j.gpus_per_worker, j.gpu_milli,
                    j.cpu_milli, j.memory_mib, j.gpu_models, j.priority, j.workers, j.tenant)
            jobs.append(j)
            total += j.gpu_milli_total
            if total >= load * capacity:
                break
    return jobs


@dataclass(frozen=True)
class SyntheticTrace:
    """A small cluster and pod list for the replay (the embedded default).

    Attributes:
        nodes: the cluster; jobs: the original pod list; seed: the generator seed.
    """

    nodes: tuple[Node, ...]
    jobs: tuple[Job, ...]
    seed: int
    description: str = field(default="")


DEFAULT_NUM_NODES = 48
DEFAULT_LOAD = 0.98


def default_trace(seed: int = 0, num_nodes: int = DEFAULT_NUM_NODES, load: float = DEFAULT_LOAD) -> SyntheticTrace:
    """The embedded default: ``num_nodes`` nodes in the openb mix (48 -> 24 x 8-GPU, 21 x
    2-GPU, 2 x 4-GPU, 1 x 1-GPU = 243 GPUs) and single-pod jobs whose GPU request is
    ``load`` (0.98, as openb default) x the capacity. Deterministic in ``seed``."""
    nodes = synthetic_nodes(num_nodes)
    jobs = pods_to_load(nodes, load, np.random.default_rng(seed))
    gpus = sum(n.gpu_count for n in nodes)
    return SyntheticTrace(tuple(nodes), tuple(jobs), seed,
                          f"synthetic openb-like trace (seed {seed}): {len(nodes)} nodes, {gpus} GPUs, {len(jobs)} pods")
