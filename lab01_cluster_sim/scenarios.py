"""Small named scenarios with known answers, for the gang demo, the book and the tests.

Each scenario is a :class:`Scenario`: nodes, jobs and a sentence saying what it shows.
They are tiny on purpose, so every number in them can be worked out by hand.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.model import Job, Node


@dataclass(frozen=True)
class Scenario:
    """A named cluster + workload.

    Attributes:
        name: registry key. description: what it demonstrates.
        nodes: the cluster. jobs: the workload.
    """

    name: str
    description: str
    nodes: tuple[Node, ...]
    jobs: tuple[Job, ...]


def _nodes(count: int, gpus: int, model: str = "A100", cpu_milli: int = 64_000, memory_mib: int = 262_144) -> tuple[Node, ...]:
    return tuple(Node(f"node-{i}", model, gpus, cpu_milli, memory_mib) for i in range(count))


def _inference_service(nodes: int) -> Job:
    # One replica per node: 160 GiB of a node's 256 GiB, so no two replicas share a node,
    # whatever the placement policy. It never completes (duration inf).
    return Job("inference", submit_time=0.0, duration=math.inf, gpus_per_worker=1, gpu_milli=1000,
               cpu_milli=8_000, memory_mib=163_840, workers=nodes, tenant="serving")


def textbook_gang(workers: int = 8, gpus_per_worker: int = 1, duration: float = 100.0) -> Scenario:
    """The textbook gang case: two 8-GPU training jobs, 12 free GPUs scattered over nodes.

    Cluster: 4 nodes x 4 GPUs = 16 GPUs. An inference service (never ends) holds one GPU on
    every node, leaving 3 free GPUs per node, 12 in all. Two training jobs ``train-a`` and
    ``train-b`` (``workers`` x ``gpus_per_worker`` GPUs each, 8 by default, 16 GiB per
    worker) arrive at t=1 and run ``duration`` s. Either job fits the 12 free GPUs alone, so
    they can run one after the other.

    - Gang mode: train-a starts at t=1 on 8 GPUs and ends at 1 + duration; train-b then
      gets 8 GPUs and ends at 1 + 2 x duration.
    - Naive mode with 8 x 1-GPU workers: round-robin binding gives each job 6 of the 12
      GPUs; neither can complete its gang and nothing running will ever free a GPU:
      deadlock.
    """
    if workers * gpus_per_worker > 12:
        raise InputError(f"textbook_gang: a job of {workers} x {gpus_per_worker} GPUs does not fit 12 free GPUs")
    nodes = _nodes(4, 4)
    jobs = (
        _inference_service(4),
        Job("train-a", submit_time=1.0, duration=duration, gpus_per_worker=gpus_per_worker, gpu_milli=1000,
            cpu_milli=4_000, memory_mib=16_384, workers=workers, tenant="research"),
        Job("train-b", submit_time=1.0, duration=duration, gpus_per_worker=gpus_per_worker, gpu_milli=1000,
            cpu_milli=4_000, memory_mib=16_384, workers=workers, tenant="research"),
    )
    return Scenario("textbook-gang", "two 8-GPU jobs, 12 free GPUs scattered over 4 nodes", nodes, jobs)


def stranded_gang() -> Scenario:
    """An 8-GPU gang (2 workers x 4 GPUs) that cannot start although 12 GPUs are free.

    Same cluster and inference service as :func:`textbook_gang`: 3 free GPUs on each of 4
    nodes. No node has 4 free GPUs, so no worker fits anywhere and all 12 free GPUs are
    stranded while the gang waits (it would fit an empty cluster, so it is not rejected).
    """
    nodes = _nodes(4, 4)
    jobs = (
        _inference_service(4),
        Job("train-2x4", submit_time=1.0, duration=100.0, gpus_per_worker=4, gpu_milli=1000,
            cpu_milli=4_000, memory_mib=16_384, workers=2, tenant="research"),
    )
    return Scenario("stranded-gang", "an 8-GPU gang of 2 x 4 GPUs; 12 free GPUs, 3 per node", nodes, jobs)


SCENARIOS = {"textbook-gang": textbook_gang, "stranded-gang": stranded_gang}
"""Scenario name -> function building it with its defaults."""


def get_scenario(name: str) -> Scenario:
    """The scenario registered as ``name``.

    Raises:
        InputError: unknown name (the message lists the known ones).
    """
    try:
        return SCENARIOS[name]()
    except KeyError:
        raise InputError(f"unknown scenario {name!r}; expected one of: {', '.join(sorted(SCENARIOS))}") from None
