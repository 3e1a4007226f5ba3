"""DotProd: the FGD paper's dot-product baseline.

Source: ``dot_product_score.go`` of the FGD simulator (hkust-adsl/kubernetes-scheduler-simulator,
pkg/simulator/plugin/), run with ``-dimext merge -norm max``.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from lab01_cluster_sim.cluster import ClusterState, Request
from lab01_cluster_sim.policies.base import pick_best_gpus, register


@register
class DotProd:
    """DotProd: prefer the node whose free vector has the smallest dot product with the request.

    Rule (``dot_product_score.go``): free ``a = (cpuLeft / max_cpu, idle / max_gpu)``, request
    ``b = (c / max_cpu, k*u / max_gpu)``, ``d = (a . b) / 2``, score = trunc(100 * (1 - d));
    0 where the CPU does not fit. ``max_cpu``/``max_gpu`` are the largest node's (128000 and
    8000 in the openb cluster, the simulator's MaxSpecCpu/MaxSpecGpu). A small dot product
    means little free capacity where the request asks, so this favours full nodes, much like
    best fit; it is the reverse of Tetris's max-alignment rule, but it is what the paper's
    code does. GPU pick: "best".
    """

    name: ClassVar[str] = "dot-prod"

    def score(self, state: ClusterState, request: Request, candidates: np.ndarray,
              rng: np.random.Generator) -> np.ndarray:
        cpu_left = state.cpu_free[candidates]
        idle = state.gpu_idle[candidates]
        mc, mg = state.max_cpu_milli, state.max_gpu_milli
        d = (cpu_left / mc * (request.cpu_milli / mc) + idle / mg * (request.num_gpus * request.gpu_milli / mg)) / 2
        scores = np.trunc(100.0 * (1.0 - d)).astype(np.int64)
        scores[cpu_left < request.cpu_milli] = 0
        return scores

    def pick_gpus(self, state: ClusterState, request: Request, node: int,
                  rng: np.random.Generator) -> tuple[int, ...]:
        return pick_best_gpus(state, request, node)
