"""Stranded GPUs, shape-aware admission and defragmentation by migration."""

from __future__ import annotations

import pytest

from lab01_cluster_sim.cluster import ClusterState, Request
from lab01_cluster_sim.defrag import Defragmenter, ShapeAwareAdmission, stranded_gpus
from lab01_cluster_sim.studies.defrag import compare_shape_aware

from .helpers import run_jobs
from lab01_cluster_sim.disciplines.preemption import CheckpointSpec
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.model import Job, Node


def test_stranded_gpus_gang_blocked_by_spread_free_gpus():
    # 4 nodes x 8 GPUs with 5 used each: 3 free per node, 12 in all. A gang of 2 x 4 GPUs
    # cannot start (no node has 4 free), nobody else waits: all 12 are stranded.
    nodes = [Node(f"n{i}", "A100", 8, 64000, 512000) for i in range(4)]
    st = ClusterState(nodes)
    five = Request(0, 0, 5, 1000)
    for n in range(4):
        st.bind(n, (0, 1, 2, 3, 4), five)
    gang = Job("gang", gpus_per_worker=4, gpu_milli=1000, workers=2)
    assert stranded_gpus(st, [gang]) == 12
    # a 1-GPU job pending could use every node: nothing stranded
    assert stranded_gpus(st, [gang, Job("one", gpus_per_worker=1, gpu_milli=1000)]) == 0
    assert stranded_gpus(st, []) == 0


def _fragmenting_workload():
    """2 nodes x 4 GPUs. t=0: a (3 GPUs, 10 s) -> n0, b (3 GPUs, 15 s) -> n1, c (1 GPU, 100 s) -> n0,
    d (1 GPU, 100 s) -> n1. At t=20: 3 + 3 free but the 4-GPU job g fits no node."""
    nodes = [Node(f"n{i}", "A100", 4, 32000, 256000) for i in range(2)]
    one = dict(gpus_per_worker=1, gpu_milli=1000)
    jobs = [Job("a", 0, 10, gpus_per_worker=3, gpu_milli=1000), Job("b", 0, 15, gpus_per_worker=3, gpu_milli=1000),
            Job("c", 0, 100, **one), Job("d", 0, 100, **one), Job("g", 20, 50, gpus_per_worker=4, gpu_milli=1000)]
    return nodes, jobs


def test_migration_unblocks_gang_and_reports_cost():
    nodes, jobs = _fragmenting_workload()
    spec = CheckpointSpec(interval_s=30, checkpoint_s=2, restore_s=3)
    defrag = Defragmenter()
    res = run_jobs(nodes, jobs, "fifo-skip", default_checkpoint=spec, plugins=[defrag])
    assert res.outcome("g").first_start == 20
    [event] = defrag.events
    [move] = event.moves
    # c and d each lose 20 s (progress 20, last checkpoint 0); tie -> n0 (tie rank) -> c moves to n1.
    assert (move.job_id, move.from_nodes, move.to_nodes) == ("c", ("n0",), ("n1",))
    assert move.lost_gpu_s == 20 and move.overhead_s == 5
    assert (event.stranded_before, event.stranded_after) == (6, 0)
    # cost: (20 GPU-s lost + 5 s x 1 GPU overhead) / 3600
    assert defrag.gpu_hours_cost() == pytest.approx(25 / 3600)
    c = res.outcome("c")
    # restarts at 20 from its checkpoint (0 s): 5 s overhead + 100 s -> ends at 125
    assert c.migrations == 1 and c.end == 125 and c.lost_gpu_s == 20
    # without defragmentation g waits for c and d to end at t=100
    plain = run_jobs(nodes, jobs, "fifo-skip", default_checkpoint=spec)
    assert plain.outcome("g").first_start == 100


def test_no_migration_of_jobs_that_do_not_checkpoint():
    nodes, jobs = _fragmenting_workload()
    defrag = Defragmenter()
    res = run_jobs(nodes, jobs, "fifo-skip", plugins=[defrag])   # default: never checkpoints
    assert defrag.events == [] and res.outcome("g").first_start == 100


def _shape_workload():
    """2 nodes x 4 GPUs. s1, s2: 3 GPUs, 100 s at t=0; big: 4 GPUs, 100 s at t=1."""
    nodes = [Node(f"n{i}", "A100", 4, 32000, 256000) for i in range(2)]
    three = dict(gpus_per_worker=3, gpu_milli=1000)
    return nodes, [Job("s1", 0, 100, **three), Job("s2", 0, 100, **three),
                   Job("big", 1, 100, gpus_per_worker=4, gpu_milli=1000)]


def test_shape_aware_admission_keeps_a_node_for_the_big_job():
    nodes, jobs = _shape_workload()
    adm = ShapeAwareAdmission(nodes, 0.5)            # ceil(0.5 x 2) = 1 node reserved: n1
    assert adm.reserved.tolist() == [False, True]
    with_res = run_jobs(nodes, jobs, "fifo-skip", plugins=[adm])
    without = run_jobs(nodes, jobs, "fifo-skip")
    assert with_res.outcome("big").wait == 0 and without.outcome("big").wait == 99
    assert with_res.outcome("s2").wait == 100 and without.outcome("s2").wait == 0
    with pytest.raises(InputError):
        ShapeAwareAdmission(nodes, 1.5)


def test_compare_shape_aware_stranded_time_average():
    nodes, jobs = _shape_workload()
    none, half = compare_shape_aware(nodes, jobs, [0.0, 0.5])
    # no reservation: 2 GPUs stranded (1 per node, big pending) from t=1 to t=100; run ends at 200.
    assert none.mean_stranded_gpus == pytest.approx(2 * 99 / 200)
    # reservation: t=0..1 s2 pending and cannot use n0's 1 GPU nor reserved n1's 4: 5 stranded;
    # t=1..100 big runs on n1, s2 still cannot use n0's 1 free GPU: 1 stranded; run ends at 200.
    assert half.mean_stranded_gpus == pytest.approx((5 * 1 + 1 * 99) / 200)
    assert (none.big_job_mean_wait_s, half.big_job_mean_wait_s) == (99, 0)


def test_migration_starts_the_gang_where_planned_even_if_a_prefilter_would_wait():
    # Regression: the gang used to be re-placed through the runner's placer after the moves;
    # a placer that keeps it waiting (e.g. topology-aware) made the same moves repeat forever.
    # On the engine the plan is bound as computed (no PreFilter runs for it).
    from lab01_cluster_sim.disciplines.preemption import Checkpoints
    from lab01_cluster_sim.policies.generic import MostAllocated
    from lab01_cluster_sim.framework.status import PreFilterResult
    from lab01_cluster_sim.simulate import simulate

    class Stubborn:
        name = "stubborn"

        def pre_filter(self, sim, record, request):
            return PreFilterResult(wait="never placed by the scheduler") if record.job_id == "g" else None

    nodes, jobs = _fragmenting_workload()
    spec = CheckpointSpec(interval_s=30, checkpoint_s=2, restore_s=3)
    defrag = Defragmenter()
    res = simulate(nodes, jobs, MostAllocated(), plugins=[Checkpoints(default=spec), Stubborn(), defrag])
    assert res.records["g"].start_time == 20 and len(defrag.events) == 1
    assert res.records["c"].migrations == 1


def test_jobs_that_never_start_are_counted_not_averaged_away():
    # every node reserved for whole-node jobs: s1 and s2 (3 GPUs) never start; big (4 GPUs)
    # starts on submission at t=1 and ends at 101, the end of the run. Before, the small
    # jobs' mean wait read 0 (mean over no job); now they count, censored at 101 - 0 = 101 s.
    nodes, jobs = _shape_workload()
    (row,) = compare_shape_aware(nodes, jobs, [1.0])
    assert (row.small_jobs_never_started, row.big_jobs_never_started) == (2, 0)
    assert row.small_job_mean_wait_s == pytest.approx(101) and row.big_job_mean_wait_s == 0
    (row,) = compare_shape_aware(nodes, jobs, [0.0])
    assert (row.small_jobs_never_started, row.big_jobs_never_started) == (0, 0)
