"""Evictions Kueue did not decide (a node drain) leave the Workload admitted with its quota:
the Job controller recreates the evicted pods and they wait for placement, while quota
stays reserved (Kueue evicts a Workload only by its own decision: preemption,
waitForPodsReady; ``pkg/controller/jobframework/reconciler.go``). Hand-computed."""

from __future__ import annotations

from lab01_cluster_sim.admission.controller import Outcome
from lab01_cluster_sim.admission.plugin import QUEUE_KEY, KueueAdmissionPlugin
from lab01_cluster_sim.model import GangRole, Job, Node
from lab01_cluster_sim.simulate import Simulation

from .helpers import controller, gpu_cq

NODES = [Node("n0", "A100", 8, 64000, 262144), Node("n1", "A100", 8, 64000, 262144)]
EXTRAS = {QUEUE_KEY: "lq-a", "namespace": "ns"}


def _job(name, t, duration, gpus=8, **kw):
    return Job(name, t, duration, gpus_per_worker=gpus, gpu_milli=1000 if gpus else 0,
               extras=EXTRAS, **kw)


def _sim(jobs):
    # quota 8 GPUs (the queue covers GPUs only; the pods ask no CPU), two nodes of 8: the quota,
    # not the nodes, is what is short
    plugin = KueueAdmissionPlugin(controller([gpu_cq("a", ("a100", 8), cohort=None)]))
    return Simulation(NODES, jobs, plugins=[plugin]), plugin


def test_a_drained_job_keeps_its_quota_and_is_placed_again_at_once():
    sim, plugin = _sim([_job("a", 0, 100), _job("b", 1, 10)])
    sim.run(until=50)
    sim.drain(0, "maintenance")        # a runs on n0 (first best-fit node): evicted at 50
    result = sim.run()
    a, b = result.records["a"], result.records["b"]
    # a stays admitted: re-placed on n1 at 50, restarts from scratch: 50..150; b (8 GPUs of
    # quota) is admitted only when a finishes: 150..160
    assert (a.end_time, a.preemptions) == (150.0, 1)
    assert (b.start_time, b.end_time) == (150.0, 160.0)
    assert [(d.workload, d.time, d.outcome) for d in plugin.decisions if d.outcome is not Outcome.PENDING] == [
        ("a", 0.0, Outcome.ADMITTED), ("b", 150.0, Outcome.ADMITTED)]
    assert plugin.controller.workloads["a"].evictions == 0


def test_a_drained_role_keeps_its_gangs_quota():
    role = lambda i, n: GangRole("g", n, i, 2)  # noqa: E731
    sim, plugin = _sim([_job("g-launcher", 0, 100, gpus=0, role=role(0, "launcher")),
                        _job("g-workers", 0, 100, role=role(1, "workers")), _job("b", 1, 10)])
    sim.run(until=50)
    sim.drain(0, "maintenance")        # both roles were on n0 (best fit): the gang restarts on n1
    result = sim.run()
    r = result.records
    assert (r["g-launcher"].start_time, r["g-launcher"].end_time) == (0.0, 150.0)
    assert r["g-workers"].end_time == 150.0
    assert (r["b"].start_time, r["b"].end_time) == (150.0, 160.0)
    assert plugin.controller.workloads["g"].evictions == 0
