"""GpuPacking: the FGD paper's packing baseline.

Source: ``gpu_packing_score.go`` of the FGD simulator (hkust-adsl/kubernetes-scheduler-simulator,
pkg/simulator/plugin/).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from lab01_cluster_sim.cluster import ClusterState, Request
from lab01_cluster_sim.model import MILLI_PER_GPU
from lab01_cluster_sim.policies.base import pick_best_gpus, register


@register
class GpuPacking:
    """GpuPacking: fill partly used GPUs first, then partly used nodes, idle nodes last.

    Rule (``gpu_packing_score.go``), for a GPU pod of k GPUs at u milli on a node with G GPUs of
    which z are fully free; CPU-only pods score 0 everywhere:

    - idle node (z = G): ``max(33 - z, z)`` (= 33 - z for G <= 16): small idle nodes first;
    - else take the first k GPUs with free >= u in ascending order of free share; if j > 0
      of them are fully free: ``max(50 - j, 33)``;
    - j = 0 (a shared pod onto a partly used GPU with L free):
      ``max(100 - floor(floor(100 * L / 1000) / 10), 50)``: the fuller that GPU, the better.

    GPU pick: "best" (the same GPU the score looked at).
    """

    name: ClassVar[str] = "gpu-packing"

    def score(self, state: ClusterState, request: Request, candidates: np.ndarray,
              rng: np.random.Generator) -> np.ndarray:
        n = len(candidates)
        if request.num_gpus == 0:
            return np.zeros(n, dtype=np.int64)
        L = state.gpu_free[candidates]
        g = state.gpu_count[candidates]
        z = (L == MILLI_PER_GPU).sum(axis=1)
        if request.gpu_milli >= MILLI_PER_GPU:
            # the first k GPUs with free >= 1000 are all fully free: j = k
            busy = np.full(n, max(50 - request.num_gpus, 33), dtype=np.int64)
        else:
            # one GPU: the smallest free share that still fits
            tight = np.where(L >= request.gpu_milli, L, MILLI_PER_GPU + 1).min(axis=1)
            partly = np.maximum(100 - (100 * tight // MILLI_PER_GPU) // 10, 50)
            busy = np.where(tight >= MILLI_PER_GPU, max(50 - 1, 33), partly)
        return np.where(z == g, np.maximum(33 - z, z), busy).astype(np.int64)

    def pick_gpus(self, state: ClusterState, request: Request, node: int,
                  rng: np.random.Generator) -> tuple[int, ...]:
        return pick_best_gpus(state, request, node)
