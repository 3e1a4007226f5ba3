"""kube-scheduler's NodeResourcesFit score, with per-resource weights, as a placement policy.

A ``KubeSchedulerConfiguration`` chooses how NodeResourcesFit scores nodes
(https://kubernetes.io/docs/concepts/scheduling-eviction/resource-bin-packing/; code in
``pkg/scheduler/framework/plugins/noderesources/`` of Kubernetes v1.35.4:
``resource_allocation.go``, ``least_allocated.go``, ``most_allocated.go``,
``requested_to_capacity_ratio.go``): ``scoringStrategy.type`` and, per resource, a ``weight``.
With ``requested`` = what the node's pods already request plus the incoming pod, and
``capacity`` = the node's allocatable, each resource scores (0..100, integer arithmetic as in
Go):

- ``LeastAllocated`` (spread, ``leastRequestedScore``): ``(capacity - requested) * 100 /
  capacity`` (0 if over);
- ``MostAllocated`` (pack, ``mostRequestedScore``): ``min(requested, capacity) * 100 / capacity``;
- ``RequestedToCapacityRatio``: a broken-line function of the utilization ``requested * 100 /
  capacity`` through the ``shape`` points (scores 0..10 scaled by 10;
  ``buildRequestedToCapacityRatioScorerFunction``).

The node's score is the weighted mean over the resources the node has (``capacity > 0``):
``sum(score * weight) / sum(weight)``, integer division (RequestedToCapacityRatio: rounded,
and only resources with a score above 0 count). An extended resource (any name other than
``cpu``, ``memory`` and ``ephemeral-storage``: ``nvidia.com/gpu``, a MIG profile, hugepages)
that the pod does not request is left out, as if the node had none
(``resourceAllocationScorer.calculateResourceAllocatableRequest`` returns (0, 0) for a scalar
resource with a zero pod request), so a CPU-only pod is scored on CPU and memory alone, on GPU
nodes too. The simulator's nodes have no extended resource but ``nvidia.com/gpu`` (the scenario
reader refuses the others), so a weight on another extended resource is accepted and scores
nothing, as kube-scheduler scores a resource no node advertises. So ``MostAllocated`` with
``nvidia.com/gpu: 5, cpu: 1`` packs GPUs while hardly caring for CPU, and a profile can pack
GPUs and spread CPU only by choosing weights; the GPU picked inside a node is the tightest fit
(:func:`~lab01_cluster_sim.policies.base.pick_best_gpus`).

Units: CPU milli-cores, memory MiB, GPUs in milli-GPU (``capacity = GPUs x 1000``), so a
shared GPU counts by its share, as the simulator's state keeps it.

Not modelled: ``ephemeral-storage`` (refused: the simulator keeps no disk), and
kube-scheduler's non-zero defaults for a container without requests (100m CPU, 200 MiB,
``GetNonZeroRequested``): the simulator scores the requests as written.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from lab01_cluster_sim.cluster import ClusterState, Request
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.model import MILLI_PER_GPU
from lab01_cluster_sim.framework.interface import MAX_NODE_SCORE
from lab01_cluster_sim.policies.base import pick_best_gpus

GPU = "nvidia.com/gpu"
TYPES = ("LeastAllocated", "MostAllocated", "RequestedToCapacityRatio")
MAX_CUSTOM_SCORE = 10
"""Largest ``score`` of a RequestedToCapacityRatio shape point (scaled to 100)."""


def _trunc_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Go's integer division (truncates toward zero)."""
    q = np.abs(a) // np.maximum(np.abs(b), 1)
    return np.where((a < 0) ^ (b < 0), -q, q)


def broken_linear(shape: tuple[tuple[int, int], ...], p: np.ndarray) -> np.ndarray:
    """kube-scheduler's ``BuildBrokenLinearFunction`` over utilizations ``p`` (0..100),
    with ``shape`` = ((utilization, score x 10), ...) sorted by utilization."""
    out = np.full(p.shape, shape[-1][1], dtype=np.int64)
    done = np.zeros(p.shape, dtype=bool)
    for i, (u, s) in enumerate(shape):
        hit = ~done & (p <= u)
        if i == 0:
            out[hit] = s
        else:
            u0, s0 = shape[i - 1]
            out[hit] = s0 + _trunc_div((s - s0) * (p[hit] - u0), np.full(hit.sum(), u - u0))
        done |= hit
    return out


class NodeResourcesFit:
    """A placement policy scoring nodes like NodeResourcesFit (module docstring).

    Args:
        kind: ``LeastAllocated``, ``MostAllocated`` or ``RequestedToCapacityRatio``.
        resources: ``(resource name, weight)`` pairs: ``cpu``, ``memory`` or an extended
            resource name (default cpu 1, memory 1, as kube-scheduler).
        shape: RequestedToCapacityRatio points ``(utilization 0..100, score 0..10)``.
        weight: the plugin's Score weight in the profile (default 1): the engine adds the
            other Score plugins' weighted scores to ``weight`` times this policy's score.

    Raises:
        InputError: unknown type or resource, weight outside 1..100, bad shape.
    """

    name: ClassVar[str] = "node-resources-fit"

    def __init__(self, kind: str = "LeastAllocated", resources: tuple[tuple[str, int], ...] = (("cpu", 1), ("memory", 1)),
                 shape: tuple[tuple[int, int], ...] = (), weight: int = 1) -> None:
        if kind not in TYPES:
            raise InputError(f"scoringStrategy.type: expected one of {', '.join(TYPES)}, got {kind!r}")
        for res, res_weight in resources:
            if res == "ephemeral-storage":
                raise InputError("scoringStrategy.resources: ephemeral-storage is not modelled (the simulator keeps no "
                                 "disk); expected cpu, memory or an extended resource such as nvidia.com/gpu")
            if not 1 <= res_weight <= 100:
                raise InputError(f"scoringStrategy.resources: weight of {res} must be in 1..100, got {res_weight}")
        if kind == "RequestedToCapacityRatio":
            if not shape:
                raise InputError("requestedToCapacityRatio.shape: needs at least one point")
            utils = [u for u, _ in shape]
            if utils != sorted(set(utils)) or not all(0 <= u <= 100 and 0 <= s <= MAX_CUSTOM_SCORE for u, s in shape):
                raise InputError("requestedToCapacityRatio.shape: utilizations must increase within 0..100 and scores "
                                 "lie in 0..10")
        if not 1 <= weight <= 100:
            raise InputError(f"NodeResourcesFit: weight must be in 1..100, got {weight}")
        self.kind = kind
        self.score_weight = weight
        self.resources = tuple(resources)
        self.shape = tuple((u, s * (MAX_NODE_SCORE // MAX_CUSTOM_SCORE)) for u, s in shape)

    def describe(self) -> str:
        weights = ", ".join(f"{r}={w}" for r, w in self.resources)
        return f"NodeResourcesFit {self.kind} ({weights})"

    def _requested_capacity(self, state: ClusterState, request: Request, candidates: np.ndarray, res: str):
        """(requested, capacity) int64 (k,) of ``res`` on ``candidates``; (0, 0) for an
        extended resource the pod does not request or the nodes do not have."""
        if res == "cpu":
            cap = state.cpu_capacity[candidates]
            return cap - state.cpu_free[candidates] + request.cpu_milli, cap
        if res == "memory":
            cap = state.mem_capacity[candidates]
            return cap - state.mem_free[candidates] + request.memory_mib, cap
        if res != GPU or request.num_gpus == 0:
            zero = np.zeros(len(candidates), dtype=np.int64)
            return zero, zero
        cap = state.gpu_count[candidates] * MILLI_PER_GPU
        return cap - state.gpu_idle[candidates] + request.num_gpus * request.gpu_milli, cap

    def score(self, state: ClusterState, request: Request, candidates: np.ndarray,
              rng: np.random.Generator) -> np.ndarray:
        candidates = np.asarray(candidates, dtype=np.int64)
        total = np.zeros(len(candidates), dtype=np.int64)
        weights = np.zeros(len(candidates), dtype=np.int64)
        for res, w in self.resources:
            requested, cap = self._requested_capacity(state, request, candidates, res)
            has = cap > 0
            safe = np.where(has, cap, 1)
            if self.kind == "LeastAllocated":
                s = np.where(requested > cap, 0, (cap - requested) * MAX_NODE_SCORE // safe)
                counted = has
            elif self.kind == "MostAllocated":
                s = np.minimum(requested, cap) * MAX_NODE_SCORE // safe
                counted = has
            else:
                util = np.where(requested > cap, 100, requested * 100 // safe)
                s = broken_linear(self.shape, util)
                counted = has & (s > 0)
            total += np.where(counted, s * w, 0)
            weights += np.where(counted, w, 0)
        safe_w = np.maximum(weights, 1)
        if self.kind == "RequestedToCapacityRatio":
            out = np.floor(total / safe_w + 0.5).astype(np.int64)   # math.Round for non-negative values
        else:
            out = total // safe_w
        return np.where(weights > 0, out, 0).astype(np.int64)

    def pick_gpus(self, state: ClusterState, request: Request, node: int,
                  rng: np.random.Generator) -> tuple[int, ...]:
        return pick_best_gpus(state, request, node)


__all__ = ["NodeResourcesFit", "broken_linear"]
