"""GpuClustering: the FGD paper's clustering baseline.

Source: ``gpu_clustering_score.go`` of the FGD simulator (hkust-adsl/kubernetes-scheduler-simulator,
pkg/simulator/plugin/).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from lab01_cluster_sim.cluster import ClusterState, Request
from lab01_cluster_sim.policies.base import pick_best_gpus, register


@register
class GpuClustering:
    """GpuClustering: put GPU pods of the same kind together.

    A GPU pod's *tag* is "share" (one GPU, u < 1000) or "<k>-gpu" (k whole GPUs); a node's
    tags are those of its resident GPU pods (``ClusterState.tag_count``, kept by bind and
    release). Rule (``gpu_clustering_score.go``), with ``base = floor(25 * (max_gpu - idle) / max_gpu)``
    (max_gpu = 8000 in the openb cluster):

    - base + 75 if the node hosts only pods with this tag;
    - base + 50 if it hosts this tag and others;
    - base + 25 if it hosts no GPU pod;
    - base + 0 if it hosts GPU pods, none with this tag.

    CPU-only pods score 0 everywhere. GPU pick: "best".
    """

    name: ClassVar[str] = "gpu-clustering"

    def score(self, state: ClusterState, request: Request, candidates: np.ndarray,
              rng: np.random.Generator) -> np.ndarray:
        tag = state.tag_of(request)
        if tag < 0:
            return np.zeros(len(candidates), dtype=np.int64)
        counts = state.tag_count[candidates]
        total = counts.sum(axis=1)
        mine = counts[:, tag]
        idle = state.gpu_idle[candidates]
        base = 25 * (state.max_gpu_milli - idle) // state.max_gpu_milli
        bonus = np.where(total == 0, 25, np.where(mine == 0, 0, np.where(mine == total, 75, 50)))
        return (base + bonus).astype(np.int64)

    def pick_gpus(self, state: ClusterState, request: Request, node: int,
                  rng: np.random.Generator) -> tuple[int, ...]:
        return pick_best_gpus(state, request, node)
