"""FGD: Fragmentation Gradient Descent (Weng et al., USENIX ATC'23).

Source: ``fgd_score.go`` and ``utils.NodeGpuShareFragAmountScore`` of the FGD simulator
(hkust-adsl/kubernetes-scheduler-simulator, pkg/simulator/plugin/).
"""

from __future__ import annotations

import weakref
from typing import ClassVar

import numpy as np

from lab01_cluster_sim.cluster import ClusterState, Request
from lab01_cluster_sim.fragmentation import FragmentationTracker, TargetWorkload
from lab01_cluster_sim.model import MILLI_PER_GPU
from lab01_cluster_sim.policies.base import pick_lowest_free_gpus, register


def fgd_score_of(delta_milli: np.ndarray) -> np.ndarray:
    """FGD's node score from the drop in fragmentation dF = F_n - F_n' (milli-GPU):
    ``trunc(100 * sigmoid(dF / 1000))``, int64 in 0..100; 50 means no change
    (``fgd_score.go``). :class:`FGD` passes an exact dF (integer weighted sums divided once),
    so no change gives exactly 0 and 50, never 49 from rounding noise."""
    return np.trunc(100.0 / (1.0 + np.exp(-np.asarray(delta_milli, dtype=np.float64) / 1000.0))).astype(np.int64)


@register
class FGD:
    """FGD: place the pod where the node's fragmentation grows least (or falls most).

    Rule (``fgd_score.go``): for node n and pod p, n' is n after a hypothetical placement,
    dF = F_n(M) - F_n'(M) (fragmentation against the target workload M, see
    :mod:`lab01_cluster_sim.fragmentation`), score = trunc(100 * sigmoid(dF / 1000)).

    - Shared pod (one GPU, u < 1000): try every GPU i with L_i >= u; the node's score is
      the best s_i, and the pod goes to the FIRST GPU reaching it (:meth:`pick_gpus`).
    - Whole/multi-GPU pod: the k lowest-index fully free GPUs are taken (which free GPUs
      does not change F_n'). CPU-only pod: only the CPU changes.

    Scores are pure functions of the node's state and the pod (dF is computed from exact
    integer weighted sums, :func:`~lab01_cluster_sim.fragmentation.weighted_fragmentation`,
    so a node scores the same whichever nodes are scored beside it), cached per pod shape and
    per node, and recomputed only for nodes whose ``node_version`` changed since.

    Args:
        target: the target workload M (built from the original pod list).
    """

    name: ClassVar[str] = "fgd"
    uses_target: ClassVar[bool] = True

    def __init__(self, target: TargetWorkload) -> None:
        self.target = target
        self._state_ref: weakref.ref | None = None
        self._tracker: FragmentationTracker | None = None
        # per pod shape: (score of each node, node_version it was computed at, chosen GPU
        # of each node for a shared pod or -1)
        self._cache: dict[tuple, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    # -- caches ----------------------------------------------------------------------
    def _bind_state(self, state: ClusterState) -> FragmentationTracker:
        if self._state_ref is None or self._state_ref() is not state:
            self._state_ref = weakref.ref(state)
            self._tracker = FragmentationTracker(state, self.target)
            self._cache = {}
        assert self._tracker is not None
        return self._tracker

    def node_scores(self, state: ClusterState, request: Request, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Scores of ``nodes`` (int64 (C,)) and, for a shared pod, the chosen GPU of each
        (int64 (C,); -1 for other pods), computed from scratch (no cache).

        A node's score is a function of its free GPU shares, free CPU and GPU model alone,
        so nodes alike in all three are scored once (NOTE: speed: a shape's first scoring
        covers the whole cluster, mostly nodes still empty)."""
        if nodes.size > self.DISTINCT_FROM:
            L = np.ascontiguousarray(state.gpu_free[nodes])
            raw, width = L.tobytes(), L.shape[1] * L.itemsize
            first: dict[tuple[bytes, int, int], int] = {}
            inverse = np.fromiter(
                (first.setdefault((raw[i * width:(i + 1) * width], c, m), len(first))
                 for i, (c, m) in enumerate(zip(state.cpu_free[nodes].tolist(), state.model_index[nodes].tolist()))),
                dtype=np.int64, count=nodes.size)
            if len(first) < nodes.size:
                reps = np.empty(len(first), dtype=np.int64)
                reps[inverse] = nodes  # any node of each kind (all alike)
                scores, gpus = self._node_scores(state, request, reps)
                return scores[inverse], gpus[inverse]
        return self._node_scores(state, request, nodes)

    ONE_BY_ONE = 8
    """Up to this many nodes are scored one by one in plain Python (:meth:`_one_node_score`)."""

    DISTINCT_FROM = 16
    """Candidate sets larger than this are first reduced to distinct node states."""

    def _node_scores(self, state: ClusterState, request: Request, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        tracker = self._bind_state(state)
        if nodes.size <= self.ONE_BY_ONE:
            pairs = [self._one_node_score(tracker, state, request, n) for n in nodes.tolist()]
            return (np.array([p[0] for p in pairs], dtype=np.int64), np.array([p[1] for p in pairs], dtype=np.int64))
        before = tracker.weighted_values_of(nodes)
        total = float(self.target._weight_sum)
        L = state.gpu_free[nodes]
        cpu_after = state.cpu_free[nodes] - request.cpu_milli
        models = state.model_index[nodes]
        c, g = L.shape
        if request.num_gpus == 1 and request.gpu_milli < MILLI_PER_GPU:
            # one hypothetical state per (node, GPU): GPU i loses u
            hyp = np.repeat(L[:, None, :], g, axis=1)  # (C, G, G)
            hyp[:, np.arange(g), np.arange(g)] -= request.gpu_milli
            after = tracker.weighted_of(hyp.reshape(c * g, g), np.repeat(cpu_after, g),
                                        np.repeat(models, g)).reshape(c, g)
            s = fgd_score_of((before[:, None] - after) / total)
            s = np.where(L >= request.gpu_milli, s, -1)
            return s.max(axis=1), s.argmax(axis=1)  # argmax: the first GPU reaching the max
        hyp = L.copy()
        if request.num_gpus > 0:
            # the k lowest-index fully free GPUs become 0
            free = hyp >= MILLI_PER_GPU
            take = free & (np.cumsum(free, axis=1) <= request.num_gpus)
            hyp[take] = 0
        after = tracker.weighted_of(hyp, cpu_after, models)
        return fgd_score_of((before - after) / total), np.full(c, -1, dtype=np.int64)

    def _one_node_score(self, tracker: FragmentationTracker, state: ClusterState, request: Request,
                        node: int) -> tuple[int, int]:
        """:meth:`_node_scores` of one node as (score, GPU or -1), the same numbers, with plain Python for the
        states and one numpy call for the scores (NOTE: speed: after each placement the node
        that changed is rescored alone, and numpy's fixed cost per call dominated)."""
        free = state.gpu_free[node].tolist()
        cpu = int(state.cpu_free[node])
        model = int(state.model_index[node])
        before = tracker.weighted_one(free, cpu, model)
        cpu_after = cpu - request.cpu_milli
        u = request.gpu_milli
        if request.num_gpus == 1 and u < MILLI_PER_GPU:
            fits = [i for i, x in enumerate(free) if x >= u]
            after = []
            for i in fits:
                hyp = list(free)
                hyp[i] -= u
                after.append(tracker.weighted_one(hyp, cpu_after, model))
            total = float(self.target._weight_sum)
            s = fgd_score_of(np.array([(before - a) / total for a in after])).tolist()
            best = max(s, default=-1)
            return best, (fits[s.index(best)] if s else 0)  # the first GPU reaching the best score
        hyp = list(free)
        left = request.num_gpus
        for i, x in enumerate(hyp):  # the k lowest-index fully free GPUs become 0
            if left and x >= MILLI_PER_GPU:
                hyp[i] = 0
                left -= 1
        after = tracker.weighted_one(hyp, cpu_after, model)
        return int(fgd_score_of(np.array([(before - after) / float(self.target._weight_sum)]))[0]), -1

    # -- the policy contract ----------------------------------------------------------
    def _entry(self, state: ClusterState, request: Request) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The cache of ``request``'s shape, sized to the cluster (it may grow)."""
        key = (request.cpu_milli, request.num_gpus, request.gpu_milli)
        entry = self._cache.get(key)
        if entry is None or entry[0].shape[0] != state.num_nodes:
            n = state.num_nodes
            entry = (np.zeros(n, dtype=np.int64), np.full(n, -1, dtype=np.int64), np.full(n, -1, dtype=np.int64))
            self._cache[key] = entry
        return entry

    def score(self, state: ClusterState, request: Request, candidates: np.ndarray,
              rng: np.random.Generator) -> np.ndarray:
        self._bind_state(state)
        scores, seen, gpus = self._entry(state, request)
        stale = candidates[seen[candidates] != state.node_version[candidates]]
        if stale.size:
            scores[stale], gpus[stale] = self.node_scores(state, request, stale)
            seen[stale] = state.node_version[stale]
        return scores[candidates]

    def pick_gpus(self, state: ClusterState, request: Request, node: int,
                  rng: np.random.Generator) -> tuple[int, ...]:
        if request.num_gpus == 1 and request.gpu_milli < MILLI_PER_GPU:
            # the GPU chosen when the node was scored, while the node is unchanged since
            # (NOTE: speed: scoring the node again here cost a third of FGD's replay)
            self._bind_state(state)
            _, seen, gpus = self._entry(state, request)
            if seen[node] == state.node_version[node]:
                gpu = int(gpus[node])
            else:
                gpu = int(self.node_scores(state, request, np.array([node]))[1][0])
            if gpu < 0 or state.gpu_free[node, gpu] < request.gpu_milli:
                raise ValueError(f"pick: no GPU of node {state.nodes[node].name} has {request.gpu_milli} free")
            return (gpu,)
        return pick_lowest_free_gpus(state, request, node)
