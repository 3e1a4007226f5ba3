"""priority, drf and backfill registered as queue disciplines of the core scheduler."""

from __future__ import annotations

import pytest

from lab01_cluster_sim.disciplines.core import PriorityPreemption, checkpoint_evict_hook
from lab01_cluster_sim.disciplines.preemption import CheckpointSpec
from lab01_cluster_sim.model import Job, JobState, Node
from lab01_cluster_sim.registry import get_discipline
from lab01_cluster_sim.simulate import Simulation, simulate

from .helpers import run_jobs
from .test_disciplines import _starvation_workload


def test_registered_names():
    for name in ("priority", "drf", "backfill"):
        assert get_discipline(name).name == name


def test_backfill_on_core_engine_does_not_starve_the_gang():
    nodes, jobs = _starvation_workload()
    bf = simulate(nodes, jobs, discipline="backfill").records
    skip = simulate(nodes, jobs, discipline="fifo-skip").records
    # same hand-computed times as the runner test: reservation at t=10, 'short' (3+5 <= 10) backfills
    assert bf["big"].start_time == 10 and bf["short"].start_time == 3 and bf["s2"].start_time == 20
    assert skip["big"].start_time == 110


def test_drf_on_core_engine_paper_example():
    node = Node("n0", "", 0, cpu_milli=9000, memory_mib=18 * 1024)
    jobs = [Job(f"A{i}", 0, 1000, cpu_milli=1000, memory_mib=4 * 1024, tenant="A") for i in range(6)]
    jobs += [Job(f"B{i}", 0, 1000, cpu_milli=3000, memory_mib=1024, tenant="B") for i in range(6)]
    res = simulate([node], jobs, discipline="drf", until=1.0)
    running = sorted(i for i, r in res.records.items() if r.state is JobState.RUNNING)
    assert running == ["A0", "A1", "A2", "B0", "B1"]     # A 3 tasks, B 2: dominant shares 2/3 each


def test_priority_preemption_on_core_engine_with_checkpoints():
    node = Node("n0", "H100", 4, 64000, 512000)
    low = Job("low", 0, 100, gpus_per_worker=4, gpu_milli=1000, priority=0)
    high = Job("high", 45, 10, gpus_per_worker=2, gpu_milli=1000, priority=10)
    specs = {"low": CheckpointSpec(interval_s=30, restore_s=5)}
    sim = Simulation([node], [low, high], discipline=PriorityPreemption(checkpoints=specs),
                     evict_hook=checkpoint_evict_hook(specs))
    res = sim.run()
    lo, hi = res.records["low"], res.records["high"]
    assert (hi.start_time, hi.end_time) == (45, 55)
    # evicted at 45 with 45 s done, checkpoint at 30: needs 100 - 30 + 5 (restore) = 75 s -> 55 + 75 = 130
    assert lo.preemptions == 1 and lo.end_time == 130
    # the core counts lost run time: 45 s run - (100 - 75) s kept = 20 s (15 s of work + 5 s restore)
    assert lo.lost_work == pytest.approx(20)


def _twice_preempted():
    node = Node("n0", "H100", 4, 64000, 512000)
    low = Job("low", 0, 100, gpus_per_worker=4, gpu_milli=1000, priority=0)
    h1 = Job("h1", 45, 10, gpus_per_worker=2, gpu_milli=1000, priority=10)
    h2 = Job("h2", 100, 10, gpus_per_worker=2, gpu_milli=1000, priority=10)
    return [node], [low, h1, h2], {"low": CheckpointSpec(interval_s=30, restore_s=5)}


def test_second_preemption_counts_progress_after_the_restore():
    # 1st eviction at 45: keeps 30. Restarts at 55, restores until 60, then progresses:
    # at 100 it has 30 + 40 = 70 s done, last checkpoint 60 -> needs 100 - 60 + 5 = 45 s from 110 -> 155.
    nodes, jobs, specs = _twice_preempted()
    sim = Simulation(nodes, jobs, discipline=PriorityPreemption(checkpoints=specs),
                     evict_hook=checkpoint_evict_hook(specs))
    lo = sim.run().records["low"]
    assert lo.preemptions == 2 and lo.end_time == 155
    # core's lost run time: 20 (first) + 45 ran - (75 - 45) kept = 15 (second) = 35
    assert lo.lost_work == pytest.approx(35)


def test_second_preemption_in_the_outcomes_agrees():
    nodes, jobs, specs = _twice_preempted()
    lo = run_jobs(nodes, jobs, "priority", checkpoints=specs).outcome("low")
    # lost GPU-s: (45 - 30) x 4 + (70 - 60) x 4 = 100
    assert lo.preemptions == 2 and lo.end == 155 and lo.lost_gpu_s == 100


@pytest.mark.parametrize("discipline", ["fifo", "fifo-skip", "drf"])
def test_most_allocated_with_recorder_and_best_fit_give_the_same_start_times(discipline):
    from lab01_cluster_sim.disciplines.demo import demo_cluster, demo_jobs

    nodes, jobs = demo_cluster(4, 8), demo_jobs(1, 150, mean_interarrival_s=300)
    mine = run_jobs(nodes, jobs, discipline)
    core = simulate(nodes, jobs, "best-fit", discipline=discipline)
    assert [o.first_start for o in mine.outcomes] == [core.records[j.job_id].start_time for j in jobs]
