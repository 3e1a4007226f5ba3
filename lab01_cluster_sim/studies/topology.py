"""Bounded wait versus slowdown: how long to hold a gang for one NVLink island.

:func:`compare_wait_vs_slowdown` runs a workload once per bound with the topology plugin
(:class:`~lab01_cluster_sim.topology.TopologyAware`) and reports the trade-off: a longer bound
means more waiting and fewer gangs slowed down by crossing islands.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lab01_cluster_sim.model import Job, JobState, Node
from lab01_cluster_sim.policies.generic import MostAllocated
from lab01_cluster_sim.simulate import Simulation
from lab01_cluster_sim.topology import TopologyAware, TopologyParams


@dataclass(frozen=True)
class TopologyRow:
    """One point of the wait-versus-slowdown comparison (times in s).

    ``spanning_jobs`` counts multi-GPU jobs that ran across more than one NVLink island,
    whatever it cost them; ``slowed_jobs`` those of them that ran slower for it (none
    when the communication fraction is 0).
    """

    max_wait_s: float
    mean_wait_s: float
    mean_slowdown: float
    mean_jct_s: float
    spanning_jobs: int
    multi_gpu_jobs: int
    makespan_s: float
    slowed_jobs: int = 0


def compare_wait_vs_slowdown(nodes: Sequence[Node], jobs: Sequence[Job], max_waits: Sequence[float],
                             *, discipline: str = "fifo-skip", default_comm_fraction: float = 0.2,
                             params: TopologyParams = TopologyParams()) -> list[TopologyRow]:
    """Run the workload once per bounded wait (one engine run each, placement :class:`~lab01_cluster_sim.policies.generic.MostAllocated`,
    the extensions' default) and report the trade-off.

    JCT = end - submit of completed jobs; slowdown is averaged over the jobs of more than one
    GPU that started (their last rate); waits over every job not rejected (a job still pending
    at the end counts its wait so far).
    """
    rows = []
    for w in max_waits:
        topo = TopologyAware(nodes, w, default_comm_fraction=default_comm_fraction, params=params)
        sim = Simulation(nodes, jobs, MostAllocated(), "gang", discipline, plugins=[topo])
        res = sim.run()
        started = [r for r in res.records.values() if r.start_time is not None]
        multi = [r for r in started if r.job.gpu_milli_total > 1000]
        waits = [r.wait if r.wait is not None else res.end_time - r.job.submit_time
                 for r in res.records.values() if r.state is not JobState.REJECTED]
        spanning = [r for r in multi if r.job_id in topo.spanned]
        slowed = [r for r in spanning if r.slowdown > 1.0]
        done = [r for r in res.records.values() if r.state is JobState.COMPLETED]
        first = min((r.job.submit_time for r in res.records.values()), default=0.0)
        rows.append(TopologyRow(
            float(w), float(np.mean(waits)) if waits else 0.0,
            float(np.mean([r.slowdown for r in multi])) if multi else 1.0,
            float(np.mean([r.jct for r in done])) if done else 0.0,
            len(spanning), len(multi), res.end_time - first, len(slowed)))
    return rows
