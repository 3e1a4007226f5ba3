"""Stranded GPUs: fully free GPUs that no pending job can use now (definition in metrics.py)."""

import numpy as np

from lab01_cluster_sim.metrics import count_stranded_gpus
from lab01_cluster_sim.model import Job, Node
from lab01_cluster_sim.scenarios import stranded_gang
from lab01_cluster_sim.simulate import simulate


def test_8_gpu_gang_cannot_start_with_12_free_gpus_spread_over_nodes():
    # 4 nodes x 4 GPUs, the service holds one per node -> 3 free per node, 12 in all.
    # The gang (2 workers x 4 GPUs) fits no node (3 < 4), so none of the 12 is usable.
    sc = stranded_gang()
    r = simulate(sc.nodes, sc.jobs, mode="gang")
    tl = r.timeline
    # samples: t=0 (service placed, queue empty -> 0 stranded), t=1 (gang pending -> 12)
    assert tl.time.tolist() == [0.0, 1.0]
    assert tl.stranded_gpus.tolist() == [0, 12]
    assert r.summary.peak_stranded_gpus == 12


def test_count_by_hand_gang_not_gatherable():
    # the docstring example: 3 free per node, a 2 x 4 gang -> slots 0 -> 12 stranded
    assert count_stranded_gpus(np.array([3, 3, 3, 3]), np.zeros((1, 4), int), np.array([4]), np.array([2])) == 12


def test_count_by_hand_partly_usable_node():
    # node A: 3 free, node B: 4 free. Job x: 1 worker x 2 GPUs; slots A = 1, B = 2.
    # usable A = min(3, 1*2) = 2 -> 1 stranded; usable B = min(4, 2*2) = 4 -> 0. Total 1.
    assert count_stranded_gpus(np.array([3, 4]), np.array([[1, 2]]), np.array([2]), np.array([1])) == 1
    # add job y: 1 x 1 GPU, slots A = 3, B = 4 -> uses every free GPU -> 0 stranded
    assert count_stranded_gpus(np.array([3, 4]), np.array([[1, 2], [3, 4]]), np.array([2, 1]),
                               np.array([1, 1])) == 0


def test_count_by_hand_no_pending_job_means_nothing_stranded():
    assert count_stranded_gpus(np.array([8, 8]), np.zeros((0, 2), int), np.array([], int), np.array([], int)) == 0


def test_count_by_hand_cpu_only_job_uses_no_gpu():
    # a pending CPU-only job (k = 0) fits everywhere but uses no GPU: 5 + 2 = 7 stranded
    assert count_stranded_gpus(np.array([5, 2]), np.array([[9, 9]]), np.array([0]), np.array([1])) == 7


def test_wrong_model_strands_gpus():
    # A T4 node with 4 free GPUs and a pending job that wants 1 x A100 while the A100 node
    # is full: the T4 GPUs are stranded (4); the A100 node has none free.
    nodes = [Node("a100", "A100", 1, 8_000, 8_192), Node("t4", "T4", 4, 8_000, 8_192)]
    jobs = [Job("hog", 0.0, 100.0, 1, 1000, gpu_models=("A100",)),
            Job("wants-a100", 1.0, 10.0, 1, 1000, gpu_models=("A100",))]
    r = simulate(nodes, jobs, policy="first-fit")
    # t=0: hog on a100, queue empty -> 0; t=1: wants-a100 pending -> 4 T4 GPUs stranded;
    # t=100: hog ends, wants-a100 starts, queue empty -> 0; t=110 -> 0
    assert r.timeline.time.tolist() == [0.0, 1.0, 100.0, 110.0]
    assert r.timeline.stranded_gpus.tolist() == [0, 4, 0, 0]


def test_cpu_short_node_strands_its_gpus():
    # Node n0 has 2 free GPUs but only 1000 milli-CPU left; the pending job needs 4000 per worker.
    nodes = [Node("n0", "A100", 2, 5_000, 65_536)]
    jobs = [Job("cpu-hog", 0.0, 100.0, 0, 0, cpu_milli=4_000), Job("gpu", 1.0, 10.0, 1, 1000, cpu_milli=4_000)]
    r = simulate(nodes, jobs)
    assert r.timeline.stranded_gpus.tolist()[:2] == [0, 2]


def test_unimplemented_exercise_leaves_other_metrics_working(monkeypatch):
    # The student edition replaces count_stranded_gpus' body with NotImplementedError.
    import lab01_cluster_sim.metrics as metrics

    def todo(*args):
        raise NotImplementedError("your code here (1B)")

    monkeypatch.setattr(metrics, "count_stranded_gpus", todo)
    sc = stranded_gang()
    r = simulate(sc.nodes, sc.jobs)
    # t=0 queue empty -> 0 without calling it; t=1 it raises -> -1, not computed
    assert r.timeline.stranded_gpus.tolist() == [0, -1]
    assert r.timeline.allocation_ratio.tolist() == [0.25, 0.25]


def test_pareto_pruning_keeps_only_undominated_shapes():
    from lab01_cluster_sim.cluster import Request
    from lab01_cluster_sim.metrics import pareto_minimal_shapes

    a = Request(1_000, 4_000, 1, 1000)   # kept
    b = Request(2_000, 8_000, 1, 1000)   # dominated by a (more CPU and memory)
    c = Request(4_000, 2_000, 1, 1000)   # kept: less memory than a
    d = Request(4_000, 2_000, 2, 1000)   # kept: other GPU count
    kept = pareto_minimal_shapes([(a, 1), (b, 1), (c, 1), (d, 1), (b, 2)])
    assert kept == [(a, 1), (c, 1), (d, 1), (b, 2)]


def test_stranded_count_is_the_same_with_and_without_pruning():
    # Many pending shapes on a busy synthetic cluster: the pruned count equals the count over
    # every distinct pending shape.
    import lab01_cluster_sim.metrics as metrics
    from lab01_cluster_sim.studies.timed import synthetic_jobs

    nodes, jobs = synthetic_jobs(400, 12, 5, None, 0.3, 16.0)
    pruned = simulate(nodes, jobs).timeline.stranded_gpus
    original = metrics.pareto_minimal_shapes
    metrics.pareto_minimal_shapes = lambda shapes: list(dict.fromkeys(shapes))
    try:
        full = simulate(nodes, jobs).timeline.stranded_gpus
    finally:
        metrics.pareto_minimal_shapes = original
    assert pruned.tolist() == full.tolist()
    assert pruned.max() > 0
