"""Small seeded clusters and workloads for the extension demos, commands and benchmarks.

Distributions (documented so results can be reproduced by hand):

- arrivals: Poisson process, exponential inter-arrival times with mean ``mean_interarrival_s``;
- GPUs per job: drawn from ``gpu_sizes`` with probabilities ``gpu_probs``; a job of more
  GPUs than a node holds becomes a gang of workers of ``gpus_per_node`` GPUs each (with
  ``one_gpu_workers``, every job of g GPUs is a gang of g one-GPU workers, which the
  scheduler may spread over nodes and NVLink islands);
- duration: log-normal with median ``median_duration_s`` and sigma 1.0 (deep-learning job
  durations are heavy-tailed: Jeon et al., "Analysis of Large-Scale Multi-Tenant GPU
  Clusters for DNN Training Workloads", USENIX ATC 2019);
- tenant: uniform over ``tenants`` (with ``big_tenant``, every job of ``gpus_per_node`` or
  more GPUs belongs to that tenant instead: a research team of big gangs next to product
  teams of small jobs); priority: 10 with probability ``high_priority_prob``, else 0.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.model import Job, Node


GFD_PRODUCT: dict[str, str] = {
    "H100": "NVIDIA-H100-80GB-HBM3",
    "A100": "NVIDIA-A100-SXM4-80GB",
    "A100-80GB": "NVIDIA-A100-SXM4-80GB",
    "A100-40GB": "NVIDIA-A100-SXM4-40GB",
    "L4": "NVIDIA-L4",
    "T4": "Tesla-T4",
}
"""Short model name -> the ``nvidia.com/gpu.product`` value GPU Feature Discovery writes
(the ``nvidia-smi --query-gpu=name`` string with spaces as hyphens; SXM boards assumed)."""


def demo_cluster(nodes: int = 4, gpus_per_node: int = 8, gpu_model: str = "H100",
                 cpu_milli: int = 96_000, memory_mib: int = 1_024_000,
                 island_size: int = 1, gpu_product: str | None = None) -> list[Node]:
    """``nodes`` identical GPU nodes; every ``island_size`` consecutive nodes share one NVLink island.

    ``island_size=1`` (the default) makes each node its own island (8 GPUs per island as
    in an HGX H100 board); 9 nodes of 8 would be an NVL72-style 72-GPU domain.

    Labels as GPU Feature Discovery writes them: ``nvidia.com/gpu.product`` is
    ``gpu_product`` if given, else :data:`GFD_PRODUCT` of ``gpu_model`` (e.g.
    ``NVIDIA-H100-80GB-HBM3`` for ``H100``), else ``gpu_model`` itself;
    ``nvidia.com/gpu.count`` is ``gpus_per_node``.

    Raises:
        InputError: non-positive sizes.
    """
    if nodes < 1 or gpus_per_node < 1 or island_size < 1:
        raise InputError(f"demo_cluster: nodes, gpus_per_node and island_size must be >= 1, "
                         f"got {nodes}, {gpus_per_node}, {island_size}")
    product = gpu_product if gpu_product is not None else GFD_PRODUCT.get(gpu_model, gpu_model)
    return [Node(f"node-{i:03d}", gpu_model, gpus_per_node, cpu_milli, memory_mib,
                 labels={"nvidia.com/gpu.product": product, "nvidia.com/gpu.count": str(gpus_per_node)},
                 nvlink_island=i // island_size)
            for i in range(nodes)]


def demo_jobs(seed: int = 0, n: int = 200, *, gpus_per_node: int = 8, mean_interarrival_s: float = 60.0,
              median_duration_s: float = 1800.0, gpu_sizes: Sequence[int] = (1, 2, 4, 8, 16),
              gpu_probs: Sequence[float] = (0.4, 0.2, 0.15, 0.15, 0.1),
              tenants: Sequence[str] = ("team-a", "team-b", "team-c"),
              high_priority_prob: float = 0.1, big_tenant: str | None = None,
              one_gpu_workers: bool = False) -> list[Job]:
    """``n`` seeded jobs (see the module docstring for the distributions).

    Raises:
        InputError: probabilities that do not match ``gpu_sizes`` or do not sum to 1; a
            mean inter-arrival or median duration that is not a finite number > 0 (NaN
            included); ``n < 0``.
    """
    for name, value in (("mean_interarrival_s", mean_interarrival_s), ("median_duration_s", median_duration_s)):
        if not 0 < value < float("inf"):   # NaN fails too
            raise InputError(f"demo_jobs: {name} must be a finite number > 0, got {value}")
    if n < 0 or not 0 <= high_priority_prob <= 1:
        raise InputError(f"demo_jobs: n must be >= 0 and high_priority_prob in [0, 1], got {n}, {high_priority_prob}")
    if len(gpu_sizes) != len(gpu_probs) or abs(sum(gpu_probs) - 1.0) > 1e-9:
        raise InputError("demo_jobs: gpu_probs must have one probability per gpu_sizes entry, summing to 1")
    rng = np.random.default_rng(seed)
    t = np.cumsum(rng.exponential(mean_interarrival_s, n))
    sizes = rng.choice(np.asarray(gpu_sizes), size=n, p=np.asarray(gpu_probs))
    durations = np.maximum(1.0, np.round(rng.lognormal(np.log(median_duration_s), 1.0, n)))
    tenant_idx = rng.integers(0, len(tenants), n)
    prio = np.where(rng.random(n) < high_priority_prob, 10, 0)
    jobs = []
    for i in range(n):
        g = int(sizes[i])
        tenant = big_tenant if (big_tenant is not None and g >= gpus_per_node) else tenants[tenant_idx[i]]
        if one_gpu_workers:
            workers, per = g, 1          # one pod per GPU, as data-parallel jobs often run
        else:
            workers, per = (g // gpus_per_node, gpus_per_node) if g > gpus_per_node else (1, g)
        jobs.append(Job(f"job-{i:05d}", float(round(t[i], 3)), float(durations[i]), gpus_per_worker=per,
                        gpu_milli=1000, cpu_milli=4000 * per, memory_mib=32_768 * per,
                        priority=int(prio[i]), workers=workers, tenant=tenant))
    return jobs
