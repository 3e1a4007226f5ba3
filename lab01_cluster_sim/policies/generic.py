"""Generic placement policies: first-fit, best-fit, worst-fit (spread) and random.

Each policy is one small class with the :class:`~lab01_cluster_sim.policies.base.PlacementPolicy`
contract: ``score`` gives every candidate node an integer in 0..100 (higher wins, ties go to
the lowest ``state.tie_rank``), ``pick_gpus`` chooses the GPUs inside the chosen node.

``best-fit`` and ``random`` are the fragmentation paper's BestFit and Random baselines
(Weng et al., ATC'23; ``best_fit_score.go`` and ``random_score.go`` in
pkg/simulator/plugin/ of hkust-adsl/kubernetes-scheduler-simulator).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from lab01_cluster_sim.cluster import ClusterState, Request
from lab01_cluster_sim.framework.interface import MAX_NODE_SCORE
from lab01_cluster_sim.policies.base import (
    pick_best_gpus,
    pick_random_gpus,
    register,
)


def min_max_normalize(raw: np.ndarray) -> np.ndarray:
    """Rescale integer scores to 0..100 with integer maths, as the FGD simulator's
    ``NormalizeScore`` does (plugin_utils.go): ``(s - lo) * 100 // (hi - lo)``, all 0 when
    ``hi == lo``. Keeps both the order and the ties of ``raw`` (int64, any shape)."""
    raw = np.asarray(raw, dtype=np.int64)
    if raw.size == 0:
        return raw
    lo, hi = int(raw.min()), int(raw.max())
    if hi == lo:
        return np.zeros_like(raw)
    out = raw - lo          # a new array: ``raw`` is left as it was
    out *= MAX_NODE_SCORE
    out //= hi - lo
    return out


def best_fit_raw_score(cpu_left: np.ndarray, idle_milli: np.ndarray, cpu_req: int, gpu_req: int,
                       max_cpu: int, max_gpu: int) -> np.ndarray:
    """The paper's BestFit score of each node before normalisation (``best_fit_score.go``).

    What would be left on the node after the placement, as a share of the largest node,
    weighted half CPU and half GPU::

        r = 0.5 * (cpu_left - cpu_req) / max_cpu + 0.5 * (idle_milli - gpu_req) / max_gpu
        s = trunc(100 * (1 - r))

    so the fuller the node ends up, the higher the score. This is Kubernetes'
    NodeResourcesFit ``MostAllocated`` strategy in spirit (score by the allocated
    fraction), over CPU and total GPU only: memory and the per-GPU layout do not enter.

    Args:
        cpu_left: int (C,), free milli-CPU of each candidate node now.
        idle_milli: int (C,), free milli-GPU of each candidate node now (sum over its GPUs).
        cpu_req: milli-CPU the pod asks for.
        gpu_req: total milli-GPU the pod asks for (k GPUs x u milli).
        max_cpu: milli-CPU of the largest node (128000 in the openb cluster).
        max_gpu: milli-GPU of the largest node (8000 in the openb cluster).

    Returns:
        int64 (C,), integers in 0..100 when the pod fits every node.
    """
    ### BEGIN SOLUTION
    left = 0.5 * (np.asarray(cpu_left) - cpu_req) / max_cpu + 0.5 * (np.asarray(idle_milli) - gpu_req) / max_gpu
    return np.trunc(100.0 * (1.0 - left)).astype(np.int64)
    ### END SOLUTION


@register
class FirstFit:
    """First-fit: the feasible node with the lowest index (the order of the node list).

    Rule: score 100 for the lowest-index candidate, 0 for every other one, so the seeded
    tie order never matters. GPU pick: "best" (tightest GPU for a shared pod; lowest-index
    free GPUs for whole GPUs). Source: the classic first-fit bin-packing heuristic
    (Johnson, 1974), as in every scheduling textbook.
    """

    name: ClassVar[str] = "first-fit"

    def score(self, state: ClusterState, request: Request, candidates: np.ndarray,
              rng: np.random.Generator) -> np.ndarray:
        scores = np.zeros(len(candidates), dtype=np.int64)
        if len(candidates):
            scores[np.argmin(candidates)] = MAX_NODE_SCORE
        return scores

    def pick_gpus(self, state: ClusterState, request: Request, node: int,
                  rng: np.random.Generator) -> tuple[int, ...]:
        return pick_best_gpus(state, request, node)


def _best_fit_raw(state: ClusterState, request: Request, candidates: np.ndarray) -> np.ndarray:
    """:func:`best_fit_raw_score` of ``request`` on the ``candidates`` nodes (shared by best- and worst-fit)."""
    return best_fit_raw_score(
        state.cpu_free[candidates], state.gpu_idle[candidates],
        request.cpu_milli, request.num_gpus * request.gpu_milli,
        state.max_cpu_milli, state.max_gpu_milli,
    )


@register
class BestFit:
    """Best-fit (the paper's BestFit): prefer the node left fullest after the placement.

    Rule: :func:`best_fit_raw_score` (half CPU, half total GPU left, relative to the largest
    node), then :func:`min_max_normalize` over the candidates. Kubernetes' NodeResourcesFit
    ``MostAllocated`` in spirit. GPU pick: "best". Source: ``best_fit_score.go`` of the FGD simulator.
    """

    name: ClassVar[str] = "best-fit"

    def score(self, state: ClusterState, request: Request, candidates: np.ndarray,
              rng: np.random.Generator) -> np.ndarray:
        raw = _best_fit_raw(state, request, candidates)
        return min_max_normalize(raw)

    def pick_gpus(self, state: ClusterState, request: Request, node: int,
                  rng: np.random.Generator) -> tuple[int, ...]:
        return pick_best_gpus(state, request, node)


@register
class WorstFit:
    """Worst-fit (spread): prefer the node left emptiest after the placement.

    Rule: the mirror image of :class:`BestFit`, ``s = 100 - best_fit_raw_score(...)``
    (the free fraction left, half CPU and half GPU), then min-max normalised. This is
    Kubernetes' NodeResourcesFit ``LeastAllocated`` (the default spreading strategy) in
    spirit. GPU pick: "best".
    """

    name: ClassVar[str] = "worst-fit"

    def score(self, state: ClusterState, request: Request, candidates: np.ndarray,
              rng: np.random.Generator) -> np.ndarray:
        raw = MAX_NODE_SCORE - _best_fit_raw(state, request, candidates)
        return min_max_normalize(raw)

    def pick_gpus(self, state: ClusterState, request: Request, node: int,
                  rng: np.random.Generator) -> tuple[int, ...]:
        return pick_best_gpus(state, request, node)


@register
class RandomFit:
    """Random (the paper's Random baseline): a uniform choice among the feasible nodes.

    Rule: one draw ``i = rng.integers(len(candidates))``; candidate i scores 100, all
    others 0. GPU pick: "random" (a uniform choice among the GPUs with enough free share
    for a shared pod; lowest-index free GPUs for whole GPUs). Source: ``random_score.go`` of the FGD simulator.
    """

    name: ClassVar[str] = "random"

    def score(self, state: ClusterState, request: Request, candidates: np.ndarray,
              rng: np.random.Generator) -> np.ndarray:
        scores = np.zeros(len(candidates), dtype=np.int64)
        if len(candidates):
            scores[rng.integers(len(candidates))] = MAX_NODE_SCORE
        return scores

    def pick_gpus(self, state: ClusterState, request: Request, node: int,
                  rng: np.random.Generator) -> tuple[int, ...]:
        return pick_random_gpus(state, request, node, rng)


class MostAllocated:
    """Most-allocated by GPU (the extensions' default placement): the node with the least
    free milli-GPU, then the least free CPU; ties to the lowest ``tie_rank``.

    Rule: the candidates are ordered by the pair (free milli-GPU, free milli-CPU), smallest
    first; the score is ``-(free milli-GPU x W + free milli-CPU)`` with W above every
    candidate's free CPU (exact in int64; a dense rank when the numbers are too large), highest
    for the fullest node. Unlike the paper's policies this score is not on the 0..100 scale: it
    is a pure order (a weighted sum of the two on 0..100 would tie nodes the rule tells apart). This is
    Kubernetes' NodeResourcesFit ``MostAllocated`` with the GPU as the only scored resource
    and CPU as the tie-break; the time-slicing and autoscaler examples also bind "fullest node
    first". GPU pick: "best".

    Not in the policy registry (the paper's comparison and the ``compare``/``sweep`` commands
    list the registered ones); the extensions' adapters pass an instance.
    """

    name: ClassVar[str] = "most-allocated"

    def score(self, state: ClusterState, request: Request, candidates: np.ndarray,
              rng: np.random.Generator) -> np.ndarray:
        idle = state.gpu_idle[candidates]
        cpu = state.cpu_free[candidates]
        width = int(cpu.max(initial=0)) + 1
        if int(idle.max(initial=0)) < (2**62) // width:
            # NOTE: speed. (idle, cpu) in lexicographic order as one exact int64: idle x width
            # + cpu with cpu < width; the fallback below ranks pairs of any size.
            return -(idle * width + cpu)
        keys = np.stack([idle, cpu])
        _, rank = np.unique(keys, axis=1, return_inverse=True)
        rank = np.asarray(rank).reshape(-1)
        return (rank.max(initial=0) - rank).astype(np.int64)

    def pick_gpus(self, state: ClusterState, request: Request, node: int,
                  rng: np.random.Generator) -> tuple[int, ...]:
        return pick_best_gpus(state, request, node)
