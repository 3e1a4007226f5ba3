"""Every extension at once on the real trace, in timed mode, on the one engine (issue 11).

DRF across the trace's QoS classes, topology-aware placement (bounded wait 10 min, slowdown
across NVLink islands), time-slicing contention on shared GPUs and a Karpenter-like autoscaler
growing a deliberately small cluster: the first 20 nodes of ``openb_node_list_gpu_node.csv``
and all 8,152 pods of ``openb_pod_list_default.csv`` with their submit times and durations.
The trace's multi-GPU pods become gangs of one-GPU workers (one pod per GPU, as data-parallel
jobs often run), so the topology plugin has gangs to place. Skips without the data.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from lab01_cluster_sim.autoscaler.catalogue import InstanceType
from lab01_cluster_sim.autoscaler.nodepool import NodePool
from lab01_cluster_sim.autoscaler.plugin import Autoscaler
from lab01_cluster_sim.model import JobState
from lab01_cluster_sim.sharing_modes import TimeSlicing
from lab01_cluster_sim.simulate import Simulation
from lab01_cluster_sim.topology import TopologyAware, comm_slowdown, gpus_per_island
from lab01_cluster_sim.workloads.openb import load_trace

POOL_TYPES = (InstanceType("g2-8", "sim", "G2", 8, 96_000, 786_432, 10.0),
              InstanceType("t4-2", "sim", "T4", 2, 32_000, 196_608, 2.0))
LIMIT_GPUS = 64


class _PoolWatch:
    """Largest number of GPUs the NodePool's live nodes held at once, sampled after each cycle."""

    name = "pool-watch"

    def __init__(self, auto: Autoscaler) -> None:
        self.auto, self.peak = auto, 0

    def sample(self, sim, now: float) -> None:
        self.peak = max(self.peak, sum(n.physical_gpus for n in self.auto.nodes.values() if n.alive))


@pytest.mark.slow
def test_drf_topology_time_slicing_and_autoscaler_together_on_the_real_trace(alibaba_csv):
    nodes, pods = load_trace(alibaba_csv)
    cluster = nodes[:20]
    jobs = []
    for job, qos in zip(pods.jobs, pods.qos):
        job = replace(job, tenant=qos or "none")
        if job.gpus_per_worker > 1:
            job = replace(job, workers=job.gpus_per_worker, gpus_per_worker=1,
                          cpu_milli=-(-job.cpu_milli // job.gpus_per_worker),
                          memory_mib=-(-job.memory_mib // job.gpus_per_worker))
        jobs.append(job)
    topo = TopologyAware(cluster, 600.0)
    auto = Autoscaler([NodePool("burst", POOL_TYPES, limit_gpus=LIMIT_GPUS, consolidate_after_s=1800)])
    watch = _PoolWatch(auto)
    sim = Simulation(cluster, jobs, "best-fit", discipline="drf", stranded_interval=86_400.0,
                     plugins=[topo, TimeSlicing(), auto, watch])
    recs = sim.run().records

    # Every job in exactly one state. No job is rejected: with an autoscaler a pod no node holds
    # waits. The jobs still pending are exactly those of which not even one worker fits any of
    # the 20 nodes or any instance type of the pool (GPU count and model, CPU, memory; computed
    # here from the data, independently of the engine). The first 20 nodes are all P100 servers:
    # the trace's G2 and T4 pods run on launched nodes.
    hosts = [(n.gpu_count, n.gpu_model, n.cpu_milli, n.memory_mib) for n in cluster]
    hosts += [(t.gpus, t.gpu_model, t.cpu_milli, t.memory_mib) for t in POOL_TYPES]

    def fits_somewhere(j) -> bool:
        return any(g >= j.gpus_per_worker and c >= j.cpu_milli and m >= j.memory_mib
                   and (not j.gpus_per_worker or not j.gpu_models or model in j.gpu_models)
                   for g, model, c, m in hosts)

    never = {j.job_id for j in jobs if not fits_somewhere(j)}
    pending = {i for i, r in recs.items() if r.state is JobState.PENDING}
    assert pending == never
    assert {r.state for i, r in recs.items() if i not in never} == {JobState.COMPLETED}
    assert {n.gpu_model for n in cluster} == {"P100"}

    # The autoscaler did launch nodes for the small cluster, never beyond the pool's GPU limit,
    # and consolidated every one of them once empty (WhenEmpty, 1800 s).
    launched = [n for n in auto.nodes.values() if n.pool is not None]
    assert launched and 0 < watch.peak <= LIMIT_GPUS
    assert all(n.termination_reason == "consolidation: empty" for n in launched)
    on_launched = {n.name for n in launched}
    assert any(p.node in on_launched for r in recs.values() for p in r.last_placements)

    # Time-slicing and topology are the only sources of slowdown: a slowed job shares a GPU
    # (fractional share) or is a gang spread over NVLink islands; and a spread gang's factor is
    # the topology model's for its split (rails = its GPUs in its smallest island), unless it
    # also shares GPUs.
    slowed = [r for r in recs.values() if r.slowdown > 1.0]
    assert any(r.job.is_fractional for r in slowed)
    for r in slowed:
        split = gpus_per_island(tuple((p.node_index, p.gpus) for p in r.last_placements), topo.islands)
        assert r.job.is_fractional or len(split) > 1, r.job_id
        if not r.job.is_fractional:
            assert r.slowdown == pytest.approx(comm_slowdown(0.2, len(split), rails=min(split.values())))
    # No job ran faster than alone: end - start >= duration for every completed job.
    done = [r for r in recs.values() if r.state is JobState.COMPLETED]
    assert min(r.end_time - r.start_time - r.job.duration for r in done) >= -1e-6

    # DRF sees the trace's QoS classes as tenants.
    assert {r.job.tenant for r in recs.values()} >= {"LS", "BE"}
    # Nothing is left allocated at the end: every node, launched ones included, is back at
    # its full capacity (a bind beyond capacity would have raised during the run).
    st = sim.state
    full = np.where(np.arange(st.gpu_free.shape[1])[None, :] < st.gpu_count[:, None], 1000, 0)
    assert (st.gpu_free == full).all() and (st.cpu_free == st.cpu_capacity).all()
    assert st.num_nodes == len(cluster) + len(launched)
