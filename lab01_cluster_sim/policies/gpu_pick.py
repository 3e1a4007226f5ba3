"""The GPU choice inside a node, pack or spread, as an option of its own.

A placement policy does two things: it scores nodes, then picks GPUs inside the chosen node
(:mod:`.base`, step 5). :class:`GpuPick` keeps a policy's node score and replaces only its
GPU pick, the way HAMi separates its two settings (HAMi docs, ``docs/config.md`` of
Project-HAMi/HAMi: ``scheduler.defaultSchedulerPolicy.nodeSchedulerPolicy``, default
``binpack``, and ``scheduler.defaultSchedulerPolicy.gpuSchedulerPolicy``, default ``spread``;
"binpack means trying to allocate tasks to the same GPU as much as possible, while spread
means trying to allocate tasks to different GPUs as much as possible"):

- ``binpack``: a shared request (one GPU, share u < 1000 milli-GPU) goes to the GPU with the
  *least* free share that still holds u (:func:`~.base.pick_best_gpus`);
- ``spread``: it goes to the GPU with the *most* free share (the least used GPU), so shares
  spread over the node's GPUs.

Ties go to the lowest GPU index. Whole-GPU requests (u = 1000) take the lowest-index fully
free GPUs under both (every fully free GPU is alike: the simulator has no NVLink topology
inside a node). The choice matters for what a node can still take: eight half-GPU pods on an
8-GPU node leave 4 whole GPUs free when packed and none when spread.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lab01_cluster_sim.cluster import ClusterState, Request
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.model import MILLI_PER_GPU
from lab01_cluster_sim.framework.interface import PlacementPolicy
from lab01_cluster_sim.policies.base import (make_policy, pick_best_gpus, pick_lowest_free_gpus,
                                             shared_gpu_candidates, uses_target)

GPU_PICKS = ("binpack", "spread")
"""The GPU choices inside a node (HAMi's ``gpuSchedulerPolicy`` values)."""


def pick_spread_gpus(state: ClusterState, request: Request, node: int) -> tuple[int, ...]:
    """``spread``: a shared request gets the GPU of ``node`` with the largest free share
    (lowest index on ties); whole-GPU requests the lowest-index fully free GPUs.

    Raises:
        ValueError: nothing fits on ``node`` (a scheduler bug).
    """
    if request.num_gpus == 1 and request.gpu_milli < MILLI_PER_GPU:
        row, ok = shared_gpu_candidates(state, request, node)
        return (int(ok[np.argmax(row[ok])]),)     # argmax: first maximum, the lowest index
    return pick_lowest_free_gpus(state, request, node)


class GpuPick:
    """``policy``'s node score with the GPU pick ``pick`` (``binpack`` or ``spread``).

    Args:
        policy: a placement policy object (see :func:`with_gpu_pick` for a name).
        pick: one of :data:`GPU_PICKS`.

    Raises:
        InputError: an unknown pick.
    """

    def __init__(self, policy: PlacementPolicy, pick: str) -> None:
        if pick not in GPU_PICKS:
            raise InputError(f"gpuSchedulerPolicy: expected one of {', '.join(GPU_PICKS)}, got {pick!r}")
        self.policy = policy
        self.pick = pick
        self.name = f"{policy.name}/gpu-{pick}"

    def score(self, state: ClusterState, request: Request, candidates: np.ndarray,
              rng: np.random.Generator) -> np.ndarray:
        return self.policy.score(state, request, candidates, rng)

    def pick_gpus(self, state: ClusterState, request: Request, node: int,
                  rng: np.random.Generator) -> tuple[int, ...]:
        if self.pick == "spread":
            return pick_spread_gpus(state, request, node)
        return pick_best_gpus(state, request, node)

    def describe(self) -> str:
        inner = self.policy.describe() if hasattr(self.policy, "describe") else self.policy.name
        return f"{inner}, GPU pick {self.pick}"

    def __getattr__(self, attr: str) -> Any:     # anything else a policy carries
        if attr == "policy":
            raise AttributeError(attr)
        return getattr(self.policy, attr)


def with_gpu_pick(policy: str | PlacementPolicy, pick: str, jobs=()) -> GpuPick:
    """:class:`GpuPick` over ``policy`` (a name is built as :func:`~lab01_cluster_sim.simulate.simulate`
    builds it: FGD's target workload from ``jobs``).

    Raises:
        InputError: unknown policy or pick; a target-based policy without jobs.
    """
    if isinstance(policy, str):
        target = None
        if uses_target(policy):
            from lab01_cluster_sim.fragmentation import TargetWorkload

            jobs = list(jobs)
            if not jobs:
                raise InputError(f"policy {policy!r} needs a target workload, built from the jobs: got none")
            target = TargetWorkload.from_jobs(jobs)
        policy = make_policy(policy, target=target)
    return GpuPick(policy, pick)


__all__ = ["GPU_PICKS", "GpuPick", "pick_spread_gpus", "with_gpu_pick"]
