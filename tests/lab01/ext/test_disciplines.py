"""Queue disciplines: DRF, Jain's index, preemption and EASY backfill, with hand-computed values."""

from __future__ import annotations

import pytest

from lab01_cluster_sim.disciplines.drf import dominant_share, drf_allocate, drf_pick_tenant
from lab01_cluster_sim.disciplines.fairness import jain_index
from lab01_cluster_sim.disciplines.preemption import (
    CheckpointSpec,
    VictimCandidate,
    choose_victims,
    last_checkpoint,
    lost_work,
)
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.model import Job, JobState, Node

from .helpers import run_jobs


# --- DRF (Ghodsi et al., NSDI 2011) -------------------------------------------------------------
def test_drf_paper_example():
    # 9 CPUs, 18 GB; A: <1 CPU, 4 GB>, B: <3 CPUs, 1 GB>.
    # Progressive filling: A(1,4)=.222, B(3,1)=.333, A(2,8)=.444, B(6,2)=.667, A(3,12)=.667;
    # A's 4th task needs CPU 3+6+1 = 10 > 9, B's 3rd needs 12 > 9: stop. A=3, B=2.
    tasks = drf_allocate((9, 18), {"A": (1, 4), "B": (3, 1)})
    assert tasks == {"A": 3, "B": 2}
    share_a = dominant_share((3 * 1, 3 * 4), (9, 18))   # max(3/9, 12/18) = 2/3
    share_b = dominant_share((2 * 3, 2 * 1), (9, 18))   # max(6/9, 2/18) = 2/3
    assert share_a == pytest.approx(2 / 3) and share_b == pytest.approx(2 / 3)


def test_drf_pick_tenant_lowest_dominant_share_then_name():
    cap = (10, 100)
    usage = {"a": (5, 0), "b": (0, 40), "c": (1, 10)}   # shares .5, .4, .1
    assert drf_pick_tenant(usage, cap, ["a", "b", "c"]) == "c"
    assert drf_pick_tenant(usage, cap, ["a", "b"]) == "b"
    assert drf_pick_tenant({}, cap, ["z", "y"]) == "y"      # both 0: name order
    assert drf_pick_tenant(usage, cap, []) is None


def test_drf_max_tasks_and_bad_input():
    # A capped at 1 task (1 CPU, 4 GB); B then fills the CPUs.
    assert drf_allocate((9, 18), {"A": (1, 4), "B": (3, 1)}, max_tasks={"A": 1}) == {"A": 1, "B": 2}
    # with A=1 (1 CPU): B takes 3 -> CPU 4, 7; a 3rd B would need 10 > 9.
    with pytest.raises(InputError, match="tenant 'A'"):
        drf_allocate((9, 18), {"A": (1,)})
    with pytest.raises(InputError, match="not all zero"):
        drf_allocate((9, 18), {"A": (0, 0)})


def test_drf_in_runner_reproduces_paper_example():
    node = Node("n0", "", 0, cpu_milli=9000, memory_mib=18 * 1024)
    jobs = [Job(f"A{i}", 0, 1000, cpu_milli=1000, memory_mib=4 * 1024, tenant="A") for i in range(6)]
    jobs += [Job(f"B{i}", 0, 1000, cpu_milli=3000, memory_mib=1024, tenant="B") for i in range(6)]
    res = run_jobs([node], jobs, "drf", until=1.0)
    running = [o.job_id for o in res.outcomes if o.state is JobState.RUNNING]
    assert sorted(running) == ["A0", "A1", "A2", "B0", "B1"]


# --- Jain's index -------------------------------------------------------------------------------
def test_jain_index_values():
    assert jain_index([1, 1, 1, 1]) == 1.0
    assert jain_index([1, 0, 0, 0]) == 0.25          # 1^2 / (4 * 1)
    assert jain_index([1, 2]) == pytest.approx(0.9)  # 3^2 / (2 * 5)
    assert jain_index([0, 0]) == 1.0
    with pytest.raises(InputError):
        jain_index([])
    with pytest.raises(InputError):
        jain_index([1, -1])


# --- checkpoints and victims --------------------------------------------------------------------
def test_lost_work_since_last_checkpoint():
    spec = CheckpointSpec(interval_s=30)
    assert last_checkpoint(45, spec) == 30
    assert lost_work(45, spec) == 15
    assert lost_work(60, spec) == 0
    assert lost_work(45, CheckpointSpec()) == 45       # never checkpoints: all lost
    with pytest.raises(InputError):
        CheckpointSpec(interval_s=0)


def test_choose_victims_minimises_lost_work():
    a = VictimCandidate("a", 0, gpus=2, lost_s=10)    # 20 GPU-s
    b = VictimCandidate("b", 0, gpus=2, lost_s=1)     # 2 GPU-s
    c = VictimCandidate("c", 0, gpus=4, lost_s=1)     # 4 GPU-s
    gpus = {"a": 2, "b": 2, "c": 4}

    def need(n):
        return lambda ids: sum(gpus[i] for i in ids) >= n

    assert choose_victims([a, b, c], need(2)) == ["b"]
    # 4 GPUs: greedy takes b (2) then c (4 -> 6 >= 4); pruning drops b (c alone is enough).
    assert choose_victims([a, b, c], need(4)) == ["c"]
    assert sorted(choose_victims([a, b, c], need(8))) == ["a", "b", "c"]
    assert choose_victims([a, b, c], need(9)) is None


def test_priority_preemption_loses_work_since_checkpoint_and_pays_restore():
    node = Node("n0", "H100", 4, 64000, 512000)
    low = Job("low", 0, 100, gpus_per_worker=4, gpu_milli=1000, priority=0)
    high = Job("high", 45, 10, gpus_per_worker=2, gpu_milli=1000, priority=10)
    res = run_jobs([node], [low, high], "priority",
                         checkpoints={"low": CheckpointSpec(interval_s=30, restore_s=5)})
    lo, hi = res.outcome("low"), res.outcome("high")
    assert hi.first_start == 45 and hi.end == 55
    # low: 45 s done, checkpoint at 30 -> 15 s x 4 GPUs = 60 GPU-s lost.
    assert lo.preemptions == 1 and lo.lost_gpu_s == 60
    # resumes at 55: 5 s restore + 70 s of work left -> ends at 130.
    assert lo.end == 130 and lo.state is JobState.COMPLETED
    assert res.summary()["lost_gpu_hours"] == pytest.approx(60 / 3600)


def test_priority_never_preempts_equal_priority():
    node = Node("n0", "H100", 4, 64000, 512000)
    a = Job("a", 0, 100, gpus_per_worker=4, gpu_milli=1000, priority=5)
    b = Job("b", 1, 10, gpus_per_worker=2, gpu_milli=1000, priority=5)
    res = run_jobs([node], [a, b], "priority")
    assert res.outcome("a").preemptions == 0 and res.outcome("b").first_start == 100


# --- EASY backfill versus FIFO ------------------------------------------------------------------
def _starvation_workload():
    """2 nodes x 4 GPUs. Seven 1-GPU jobs at t=0 (10 s); an 8-GPU gang at t=1 (10 s);
    a 1-GPU, 5 s job at t=3; a stream of 1-GPU, 10 s jobs at t=2, 4, ..., 100."""
    nodes = [Node(f"n{i}", "A100", 4, 32000, 256000) for i in range(2)]
    jobs = [Job(f"fill{i}", 0, 10, gpus_per_worker=1, gpu_milli=1000) for i in range(7)]
    jobs.append(Job("big", 1, 10, gpus_per_worker=4, gpu_milli=1000, workers=2))
    jobs.append(Job("short", 3, 5, gpus_per_worker=1, gpu_milli=1000))
    jobs += [Job(f"s{t}", t, 10, gpus_per_worker=1, gpu_milli=1000) for t in range(2, 101, 2)]
    return nodes, jobs


def test_backfill_does_not_starve_the_gang_but_fifo_skip_does():
    nodes, jobs = _starvation_workload()
    bf = run_jobs(nodes, jobs, "backfill")
    skip = run_jobs(nodes, jobs, "fifo-skip")
    strict = run_jobs(nodes, jobs, "fifo")
    # Backfill: reservation for 'big' at t=10 (the seven fill jobs end). 'short' (3 + 5 = 8 <= 10)
    # backfills into the one free GPU; s2 (2 + 10 = 12 > 10, and it would hold a GPU big needs) waits.
    assert bf.outcome("big").first_start == 10
    assert bf.outcome("short").first_start == 3
    assert bf.outcome("s2").first_start == 20
    # FIFO-skip: s2 takes the free GPU at t=2 and some 1-GPU job runs at every instant until the
    # last one (t=100) ends at 110: big waits 110 - 1 = 109 s.
    assert skip.outcome("big").first_start == 110
    # Strict FIFO: big starts at 10 too, but 'short' waits behind it until big ends at 20.
    assert strict.outcome("big").first_start == 10
    assert strict.outcome("short").first_start == 20


def test_every_job_in_one_state_and_rejections_have_reasons():
    nodes = [Node("n0", "A100", 4, 32000, 256000)]
    jobs = [Job("ok", 0, 5, gpus_per_worker=1, gpu_milli=1000),
            Job("huge", 0, 5, gpus_per_worker=4, gpu_milli=1000, workers=2),
            Job("wrongmodel", 0, 5, gpus_per_worker=1, gpu_milli=1000, gpu_models=("H100",))]
    res = run_jobs(nodes, jobs, "fifo")
    assert res.outcome("ok").state is JobState.COMPLETED
    # the same rejections, with the same reasons, as the core simulation (one engine, one rule)
    from lab01_cluster_sim.simulate import simulate

    core = simulate(nodes, jobs, discipline="fifo").records
    for job_id in ("huge", "wrongmodel"):
        assert res.outcome(job_id).state is JobState.REJECTED is core[job_id].state
        assert res.outcome(job_id).reason == core[job_id].reason
    # 4 GPUs on the only node: one worker of 4 fits, a gang of 2 never does
    assert res.outcome("huge").reason == ("gang of 2 workers cannot fit even on the empty cluster: "
                                          "room for 1 worker(s) of this shape")
    # only 'ok' ran: 1 GPU x 5 s over 4 GPUs x 5 s = 0.25
    assert res.summary()["utilisation"] == pytest.approx(0.25)


def test_unknown_discipline_is_an_input_error():
    with pytest.raises(InputError, match="unknown queue discipline 'lifo'"):
        run_jobs([Node("n", "A100", 1, 1000, 1000)], [], "lifo")


@pytest.mark.parametrize("kwargs", [{"restore_s": float("nan")}, {"checkpoint_s": float("nan")},
                                    {"restore_s": -1.0}, {"restore_s": float("inf")}, {"interval_s": float("nan")}])
def test_checkpoint_spec_rejects_nan_and_negative(kwargs):
    with pytest.raises(InputError):
        CheckpointSpec(**kwargs)
