"""Graded, Lab 01 part 1C: the gang test.

Learner code: ``lab01_cluster_sim.scheduler.gang_permit``: the Permit stage that starts a
gang only when every worker found a place (all-or-nothing).
"""

from __future__ import annotations

import numpy as np
import pytest

from lab01_cluster_sim import metrics
from lab01_cluster_sim.model import Job, JobState, Node
from lab01_cluster_sim.scheduler import gang_permit
from lab01_cluster_sim.simulate import simulate

# the textbook case: two 8-GPU jobs (8 workers x 1 GPU), 12 free GPUs over 3 nodes
NODES = [Node(f"n{i}", "H100", 4, 64000, 524288) for i in range(3)]
JOBS = [Job(j, submit_time=0.0, duration=100.0, gpus_per_worker=1, gpu_milli=1000, workers=8)
        for j in ("J1", "J2")]


@pytest.fixture(autouse=True)
def no_stranded_metric(monkeypatch):
    """Part 1C grades the gang permit only: the stranded-GPU metric (part 1B) is set to 0."""
    monkeypatch.setattr(metrics, "count_stranded_gpus", lambda *args, **kwargs: 0)


@pytest.mark.points(1, part="1C", number="1C.1")
def test_permit_is_all_or_nothing():
    """gang_permit: 8 of 8 workers placed -> start; 7 of 8 -> roll back."""
    got = [gang_permit(8, 8), gang_permit(7, 8), gang_permit(0, 1), gang_permit(1, 1)]
    assert all(isinstance(g, (bool, np.bool_)) for g in got)  # a bool (numpy's too), then the value
    assert got == [True, False, False, True]


@pytest.mark.points(2, part="1C", number="1C.2")
def test_gang_mode_runs_both_jobs_one_after_the_other():
    """Gang mode on the textbook case: J1 runs 0-100 s, J2 100-200 s, both complete (makespan 200 s)."""
    result = simulate(NODES, JOBS, policy="first-fit", mode="gang")
    assert result.deadlock is None
    j1, j2 = result.records["J1"], result.records["J2"]
    assert (j1.state, j1.start_time, j1.end_time) == (JobState.COMPLETED, 0.0, 100.0)
    assert (j2.state, j2.start_time, j2.end_time) == (JobState.COMPLETED, 100.0, 200.0)
    assert result.summary.makespan == 200.0


@pytest.mark.points(2, part="1C", number="1C.3")
def test_naive_mode_deadlocks_where_gang_mode_does_not():
    """Naive mode (one worker at a time, round-robin) deadlocks with each job holding 6 of 12 GPUs; gang mode does not, and never starts a partial gang."""
    # 12 GPUs, workers bound alternately J1, J2, J1, ... -> 6 each, 2 missing each
    naive = simulate(NODES, JOBS, policy="first-fit", mode="naive")
    assert naive.deadlock is not None
    assert {h.job_id: h.gpus_held for h in naive.deadlock.holdings} == {"J1": 6, "J2": 6}
    gang = simulate(NODES, JOBS, policy="first-fit", mode="gang")
    assert gang.deadlock is None
    assert [r.state for r in gang.records.values()] == [JobState.COMPLETED, JobState.COMPLETED]
    # all-or-nothing: J2's 8 workers do not fit beside J1's (12 GPUs < 16), so J2 holds nothing
    # and starts when J1 ends; a permit that let 4 of its 8 workers start would start it at 0
    assert {r.job_id: r.start_time for r in gang.records.values()} == {"J1": 0.0, "J2": 100.0}
    assert not gang_permit(4, 8)
