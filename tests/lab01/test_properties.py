"""Property-based checks of timed runs (hypothesis, bounded and seeded)."""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lab01_cluster_sim.cluster import Request
from lab01_cluster_sim.model import MILLI_PER_GPU, Job, JobState, Node
from lab01_cluster_sim.framework.interface import SchedulerObserver
from lab01_cluster_sim.simulate import Simulation, simulate

SETTINGS = settings(max_examples=100, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])


@st.composite
def clusters(draw):
    n = draw(st.integers(1, 4))
    return [Node(f"n{i}", draw(st.sampled_from(["A", "B"])), draw(st.sampled_from([1, 2, 4, 8])),
                 draw(st.sampled_from([8_000, 32_000])), draw(st.sampled_from([16_384, 65_536]))) for i in range(n)]


@st.composite
def workloads(draw):
    count = draw(st.integers(1, 10))
    jobs = []
    for i in range(count):
        kind = draw(st.sampled_from(["cpu", "share", "whole"]))
        k = 0 if kind == "cpu" else (1 if kind == "share" else draw(st.sampled_from([1, 2, 4])))
        u = 0 if kind == "cpu" else (draw(st.sampled_from([250, 500, 700])) if kind == "share" else 1000)
        jobs.append(Job(
            f"j{i}", submit_time=float(draw(st.integers(0, 20))), duration=float(draw(st.integers(1, 30))),
            gpus_per_worker=k, gpu_milli=u, cpu_milli=draw(st.sampled_from([0, 1_000, 6_000])),
            memory_mib=draw(st.sampled_from([0, 4_096])), workers=draw(st.integers(1, 3)),
            gpu_models=draw(st.sampled_from([(), ("A",), ("B",)])) if k else (),
        ))
    return jobs


class Auditor(SchedulerObserver):
    """Checks, after every bind, that no resource of the node is over-allocated."""

    def __init__(self, sim: Simulation):
        self.sim = sim
        self.violations = []

    def on_bind(self, record, placement, request: Request):
        s = self.sim.state
        n = placement.node_index
        if s.cpu_free[n] < 0 or s.mem_free[n] < 0 or (s.gpu_free[n] < 0).any():
            self.violations.append((record.job_id, placement))


def _used_by_running(sim):
    """Resources the records say are held, recomputed from scratch per node."""
    n = sim.state.num_nodes
    cpu = np.zeros(n, int)
    gpu = np.zeros_like(sim.state.gpu_free)
    for rec in sim.records.values():
        req = Request.of_worker(rec.job)
        for p in rec.placements:
            cpu[p.node_index] += req.cpu_milli
            for g in p.gpus:
                gpu[p.node_index, g] += req.gpu_milli
    return cpu, gpu


@SETTINGS
@given(clusters(), workloads(), st.sampled_from(["gang", "naive"]),
       st.sampled_from(["first-fit", "best-fit", "worst-fit", "random"]), st.sampled_from(["fifo", "fifo-skip"]),
       st.sampled_from([None, 1, 2]))
def test_no_overallocation_all_or_nothing_and_everyone_accounted_for(nodes, jobs, mode, policy, discipline, k):
    sim = Simulation(nodes, jobs, policy, mode, discipline, seed=7, stop_on_deadlock=True, nodes_to_score=k)
    audit = Auditor(sim)
    sim.scheduler.add_observer(audit)
    result = sim.run()
    assert audit.violations == []
    s = sim.state
    # bookkeeping agrees with the records: free = capacity - held
    cpu_held, gpu_held = _used_by_running(sim)
    assert (s.cpu_free == s.cpu_capacity - cpu_held).all()
    full = (np.arange(s.gpu_free.shape[1])[None, :] < s.gpu_count[:, None]) * MILLI_PER_GPU
    assert (s.gpu_free == full - gpu_held).all()
    assert ((s.gpu_free >= 0) & (s.gpu_free <= MILLI_PER_GPU)).all()
    for rec in result.records.values():
        # exactly one state; consistent fields
        assert rec.state in JobState
        if rec.state is JobState.COMPLETED:
            assert rec.end_time == rec.start_time + rec.job.duration and rec.placements == []
        if rec.state is JobState.RUNNING:
            assert len(rec.placements) == rec.job.workers
        if rec.state is JobState.REJECTED:
            assert rec.reason and rec.placements == []
        if rec.state is JobState.PENDING:
            assert rec.reason
            if mode == "gang":
                assert rec.placements == []  # gangs are all-or-nothing
    assert len(result.records) == len(jobs)
    if result.stop_reason != "deadlock":
        # run to the end with finite durations: nothing is left running or pending
        assert {r.state for r in result.records.values()} <= {JobState.COMPLETED, JobState.REJECTED}


@SETTINGS
@given(clusters(), workloads(), st.sampled_from(["gang", "naive"]), st.integers(0, 3))
def test_same_seed_gives_the_same_result(nodes, jobs, mode, seed):
    def fingerprint(r):
        return [(x.job_id, x.state, x.start_time, x.end_time, x.last_placements, x.placements, x.reason)
                for x in r.records.values()], r.timeline.allocation_ratio.tolist(), r.timeline.stranded_gpus.tolist()

    a = simulate(nodes, jobs, policy="random", mode=mode, seed=seed)
    b = simulate(nodes, jobs, policy="random", mode=mode, seed=seed)
    assert fingerprint(a) == fingerprint(b)


@SETTINGS
@given(clusters(), workloads())
def test_allocation_ratio_stays_in_unit_interval_and_stranded_within_free(nodes, jobs):
    r = simulate(nodes, jobs, policy="best-fit")
    total = sum(n.gpu_count for n in nodes)
    assert ((r.timeline.allocation_ratio >= 0) & (r.timeline.allocation_ratio <= 1)).all()
    assert ((r.timeline.stranded_gpus >= 0) & (r.timeline.stranded_gpus <= total)).all()
    assert not math.isnan(r.summary.mean_allocation_ratio)


@SETTINGS
@given(clusters(), workloads(), st.sampled_from(["first-fit", "best-fit", "worst-fit"]))
def test_retry_shortcut_changes_nothing(nodes, jobs, policy):
    # A blocked one-worker shape's retries filter only nodes released since it was blocked;
    # the result must be identical to filtering every node.
    from lab01_cluster_sim.scheduler import Scheduler

    def fingerprint(r):
        return [(x.job_id, x.state, x.start_time, x.end_time, x.last_placements) for x in r.records.values()]

    fast = simulate(nodes, jobs, policy=policy)
    original = Scheduler._block

    def no_shortcut(self, key, request, reason, one_worker):
        original(self, key, request, reason, False)

    Scheduler._block = no_shortcut
    try:
        slow = simulate(nodes, jobs, policy=policy)
    finally:
        Scheduler._block = original
    assert fingerprint(fast) == fingerprint(slow)


def test_retry_shortcut_changes_nothing_on_a_contended_synthetic_run():
    from lab01_cluster_sim.studies.timed import synthetic_jobs
    from lab01_cluster_sim.scheduler import Scheduler

    nodes, jobs = synthetic_jobs(600, 30, 1, None, 0.3, 16.0)
    calls = {"within": 0}
    original_select, original_block = Scheduler.select_node, Scheduler._block

    def counting(self, request, record=None, within=None):
        calls["within"] += within is not None
        return original_select(self, request, record, within)

    Scheduler.select_node = counting
    try:
        fast = simulate(nodes, jobs, policy="best-fit")
        Scheduler._block = lambda self, key, request, reason, one: original_block(self, key, request, reason, False)
        slow = simulate(nodes, jobs, policy="best-fit")
    finally:
        Scheduler.select_node, Scheduler._block = original_select, original_block
    assert calls["within"] > 100  # the shortcut was exercised
    assert [(r.start_time, r.last_placements) for r in fast.records.values()] == \
        [(r.start_time, r.last_placements) for r in slow.records.values()]
    assert fast.summary.wait.max > 0  # there was contention


def _fingerprint(r):
    return [(x.job_id, x.state, x.start_time, x.end_time, x.last_placements) for x in r.records.values()]


def _eager(fn):
    """Run ``fn`` with FIFO-skip waking every fitting blocked shape at each release."""
    from lab01_cluster_sim.framework.queue import FifoSkip

    FifoSkip.lazy_wake = False
    try:
        return fn()
    finally:
        FifoSkip.lazy_wake = True


@SETTINGS
@given(clusters(), workloads(), st.sampled_from(["first-fit", "best-fit", "random"]))
def test_lazy_wake_gives_the_same_schedule_as_waking_everyone(nodes, jobs, policy):
    lazy = simulate(nodes, jobs, policy=policy, seed=3)
    eager = _eager(lambda: simulate(nodes, jobs, policy=policy, seed=3))
    assert _fingerprint(lazy) == _fingerprint(eager)


@pytest.mark.parametrize("gang_share", [0.0, 0.5])
def test_lazy_wake_same_schedule_on_a_contended_synthetic_run(gang_share):
    from lab01_cluster_sim.studies.timed import synthetic_jobs

    nodes, jobs = synthetic_jobs(800, 30, 2, None, gang_share, 16.0)
    lazy = simulate(nodes, jobs, policy="best-fit")
    eager = _eager(lambda: simulate(nodes, jobs, policy="best-fit"))
    assert lazy.summary.wait.max > 0  # there was contention
    assert _fingerprint(lazy) == _fingerprint(eager)
