"""Gang (all-or-nothing) versus naive (one worker at a time) placement, on the textbook case."""

import pytest

from lab01_cluster_sim.model import Job, JobState, Node
from lab01_cluster_sim.scenarios import stranded_gang, textbook_gang
from lab01_cluster_sim.scheduler import gang_permit
from lab01_cluster_sim.simulate import simulate


@pytest.mark.parametrize("placed,needed,expected", [(8, 8, True), (7, 8, False), (0, 2, False), (1, 1, True)])
def test_gang_permit_is_all_or_nothing(placed, needed, expected):
    assert gang_permit(placed, needed) is expected


@pytest.mark.parametrize("policy", ["first-fit", "best-fit", "worst-fit"])
def test_naive_mode_deadlocks_on_two_interleaved_8_gpu_jobs(policy):
    # 16 GPUs; the service holds 1 per node -> 12 free. Round-robin: train-a, train-b,
    # train-a, ... each binds one 1-GPU worker per round; 12 / 2 = 6 each, then nothing fits.
    # Nothing running ever ends (the service has duration inf) -> deadlock at t=1.
    sc = textbook_gang()
    r = simulate(sc.nodes, sc.jobs, policy=policy, mode="naive")
    assert r.stop_reason == "deadlock"
    assert r.deadlock is not None and r.deadlock.time == 1.0
    held = {h.job_id: (h.workers_bound, h.gpus_held) for h in r.deadlock.holdings}
    assert held == {"train-a": (6, 6), "train-b": (6, 6)}
    assert r.deadlock.free_gpus == 0
    text = str(r.deadlock)
    assert "train-a: 6/8 workers bound" in text and "train-b: 6/8 workers bound" in text
    # the report names the nodes the GPUs are on
    assert "node-0:gpu" in text
    # every job accounted for: the service runs, both trainers pend holding 6 GPUs each
    assert [x.state for x in r.records.values()] == [JobState.RUNNING, JobState.PENDING, JobState.PENDING]
    assert r.records["train-a"].workers_bound == 6


def test_gang_mode_completes_both_jobs_one_after_the_other():
    # train-a takes 8 of the 12 free GPUs at t=1 and runs 100 s -> ends at 101; train-b (8 GPUs)
    # cannot gather 8 from the 4 left, waits, starts at 101, ends at 201.
    sc = textbook_gang()
    r = simulate(sc.nodes, sc.jobs, mode="gang")
    a, b = r.records["train-a"], r.records["train-b"]
    assert (a.state, a.start_time, a.end_time) == (JobState.COMPLETED, 1.0, 101.0)
    assert (b.state, b.start_time, b.end_time) == (JobState.COMPLETED, 101.0, 201.0)
    assert r.deadlock is None and r.stop_reason == "empty"
    assert sum(len(p.gpus) for p in a.last_placements) == 8


def test_naive_mode_does_not_report_deadlock_when_a_running_job_will_free_enough():
    # A blocker with a finite duration holds one GPU per node; when it ends (t=50) the naive
    # trainers get 2 more GPUs each (6 + 2 = 8) and both complete: no deadlock.
    nodes = [Node(f"n{i}", "A100", 4, 64_000, 262_144) for i in range(4)]
    jobs = [
        Job("blocker", 0.0, 50.0, 1, 1000, 8_000, 163_840, workers=4),
        Job("a", 1.0, 100.0, 1, 1000, 4_000, 16_384, workers=8),
        Job("b", 1.0, 100.0, 1, 1000, 4_000, 16_384, workers=8),
    ]
    r = simulate(nodes, jobs, policy="first-fit", mode="naive")
    assert r.deadlock is None
    assert r.records["a"].start_time == 50.0 and r.records["b"].start_time == 50.0
    assert r.records["a"].end_time == 150.0 and r.records["b"].end_time == 150.0


def test_naive_mode_with_room_for_both_behaves_like_gang():
    # 2 nodes x 8 GPUs, two 8 x 1-GPU jobs: 16 workers, 16 GPUs, both start at once.
    nodes = [Node("n0", "A100", 8, 64_000, 262_144), Node("n1", "A100", 8, 64_000, 262_144)]
    jobs = [Job(x, 0.0, 10.0, 1, 1000, 1_000, 1_024, workers=8) for x in ("a", "b")]
    r = simulate(nodes, jobs, mode="naive")
    assert r.deadlock is None
    assert all(rec.end_time == 10.0 for rec in r.records.values())


def test_gang_of_2x4_waits_with_12_gpus_free_and_holds_nothing():
    sc = stranded_gang()
    r = simulate(sc.nodes, sc.jobs, mode="gang")
    rec = r.records["train-2x4"]
    assert rec.state is JobState.PENDING and rec.placements == []
    assert rec.status == "Unschedulable"
    assert "only 0 could be placed" in rec.reason


def test_gang_that_never_fits_is_rejected_as_unresolvable():
    # 3 nodes x 2 GPUs: a gang of 4 workers x 2 GPUs needs 4 slots; the empty cluster has 3.
    nodes = [Node(f"n{i}", "A100", 2, 64_000, 65_536) for i in range(3)]
    r = simulate(nodes, [Job("big", 0.0, 10.0, 2, 1000, 1_000, 1_024, workers=4)])
    rec = r.records["big"]
    assert rec.state is JobState.REJECTED
    assert rec.status == "UnschedulableAndUnresolvable"
    assert "room for 3 worker(s)" in rec.reason


def test_deadlock_recorded_but_run_continues_when_asked():
    # Same textbook case, plus a small job at t=5 that needs 1 GPU: with stop_on_deadlock
    # off, the run goes on; nothing is free (6 + 6 + 4 = 16 GPUs held), so it waits forever
    # too, and the run ends when no event is left.
    sc = textbook_gang()
    jobs = list(sc.jobs) + [Job("late-small", 5.0, 10.0, 1, 1000, 1_000, 1_024)]
    r = simulate(sc.nodes, jobs, mode="naive", stop_on_deadlock=False)
    assert r.deadlock is not None and r.deadlock.time == 1.0
    assert r.stop_reason == "empty" and r.end_time == 5.0
    assert r.records["late-small"].state is JobState.PENDING
    assert r.records["train-a"].workers_bound == 6


def test_naive_strict_fifo_also_deadlocks():
    sc = textbook_gang()
    r = simulate(sc.nodes, sc.jobs, mode="naive", discipline="fifo")
    assert r.stop_reason == "deadlock"
    assert {h.job_id: h.workers_bound for h in r.deadlock.holdings} == {"train-a": 6, "train-b": 6}


def test_gang_mode_never_holds_partial_allocations_under_strict_fifo():
    sc = textbook_gang()
    r = simulate(sc.nodes, sc.jobs, mode="gang", discipline="fifo")
    assert [r.records[x].end_time for x in ("train-a", "train-b")] == [101.0, 201.0]
