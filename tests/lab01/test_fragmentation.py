"""The FGD paper's fragmentation measure (pkg/utils/frag.go of
hkust-adsl/kubernetes-scheduler-simulator), checked by hand."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab01_cluster_sim.cluster import ClusterState, Request
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.fragmentation import (
    FragmentationTracker,
    TargetWorkload,
    cluster_fragmentation,
    fragmentation_of,
    fragmentation_ratio,
    node_fragmentation,
    weighted_fragmentation,
)
from lab01_cluster_sim.model import Job, Node
from lab01_cluster_sim.registry import get_policy
from lab01_cluster_sim.policies.fgd import fgd_score_of

# A worked check, by hand.
WORKED = TargetWorkload.from_shapes(
    [(4000, 500, 1, ""), (8000, 1000, 2, ""), (2000, 0, 0, "")], [0.5, 0.3, 0.2]
)
G2 = Node("n", "G2", 8, 96_000, 1 << 20)


def test_worked_check_empty_node():
    # A (500 milli, 1 GPU) and B (2 whole GPUs) fit with nothing left under u: f = 0.
    # C is CPU-only: f = idle = 8000. F = 0.5*0 + 0.3*0 + 0.2*8000 = 1600.
    state = ClusterState([G2])
    assert node_fragmentation(state, 0, WORKED) == pytest.approx(1600.0)


def test_worked_check_after_placing_a_on_gpu0():
    # free [500, 1000 x 7]: A fits (GPU0 has 500 >= 500): f_A = 0.
    # B needs whole GPUs: GPU0's 500 < 1000 is a fragment: f_B = 500.
    # C: idle = 7500. F' = 0.5*0 + 0.3*500 + 0.2*7500 = 150 + 1500 = 1650.
    state = ClusterState([G2])
    state.bind(0, (0,), Request(4000, 0, 1, 500))
    assert node_fragmentation(state, 0, WORKED) == pytest.approx(1650.0)
    # ratio = 100 * 1650 / 7500 = 22.0 %
    assert fragmentation_ratio(state, WORKED) == pytest.approx(22.0)


def test_worked_check_fgd_score_48():
    # dF = 1600 - 1650 = -50; trunc(100 * sigmoid(-0.05)) = trunc(48.750...) = 48
    assert fgd_score_of(np.array([-50.0])).tolist() == [48]
    fgd = get_policy("fgd", target=WORKED)
    state = ClusterState([G2])
    assert fgd.score(state, Request(4000, 0, 1, 500), np.array([0]), np.random.default_rng(0)).tolist() == [48]


def test_cpu_lack_and_model_access_make_the_whole_idle_share_a_fragment():
    # M = {(4000, 500, 1, "T4")} p 1. On a G2 node the model is not allowed -> f = idle = 2000.
    target = TargetWorkload.from_shapes([(4000, 500, 1, "T4")], [1.0])
    g2 = Node("g2", "G2", 2, 8000, 1024)
    t4 = Node("t4", "T4", 2, 3000, 1024)  # allowed model, but only 3000 < 4000 milli-CPU
    state = ClusterState([g2, t4])
    assert node_fragmentation(state, 0, target) == pytest.approx(2000.0)
    assert node_fragmentation(state, 1, target) == pytest.approx(2000.0)
    assert cluster_fragmentation(state, target) == pytest.approx(4000.0)


def test_fragment_is_the_sum_of_gpus_below_the_share():
    # M = {(0, 600, 1, "")}. Free [300, 700, 1000, 0]: GPUs with L >= 600 exist, so
    # f = sum of L < 600 = 300 + 0 = 300.
    target = TargetWorkload.from_shapes([(0, 600, 1, "")], [1.0])
    state = ClusterState([Node("n", "G2", 4, 8000, 1024)])
    state.bind(0, (0,), Request(0, 0, 1, 700))
    state.bind(0, (1,), Request(0, 0, 1, 300))
    state.bind(0, (3,), Request(0, 0, 1, 1000))
    assert node_fragmentation(state, 0, target) == pytest.approx(300.0)


def _job(i: int, cpu: int, gpus: int, milli: int, models: tuple[str, ...] = ()) -> Job:
    return Job(f"p{i}", gpus_per_worker=gpus, gpu_milli=milli, cpu_milli=cpu, gpu_models=models)


def test_target_workload_cut_and_tie_order():
    # 20 pods: shape X (1000, 500, 1) x 10, Y (2000, 0, 0) x 5, Z1 (3000, 1000, 1) x 4,
    # Z2 (1000, 1000, 1) x 1. 95% of 20 = 19: cumulative 10, 15, 19 -> stop at Z1 (reaches 19).
    # Z1 and Z2 have different counts, so the order is by count; p = 10/19, 5/19, 4/19.
    jobs = ([_job(i, 1000, 1, 500) for i in range(10)] + [_job(10 + i, 2000, 0, 0) for i in range(5)]
            + [_job(15 + i, 3000, 1, 1000) for i in range(4)] + [_job(19, 1000, 1, 1000)])
    m = TargetWorkload.from_jobs(jobs)
    assert m.shapes() == [(1000, 500, 1, ""), (2000, 0, 0, ""), (3000, 1000, 1, "")]
    assert m.popularity.tolist() == pytest.approx([10 / 19, 5 / 19, 4 / 19])
    assert m.coverage == pytest.approx(19 / 20)
    assert m.num_shapes_total == 4


def test_target_workload_ties_go_to_larger_cpu_then_share_then_spec():
    # Equal counts (1 each): order c desc, then u desc, then k desc, then S desc.
    jobs = [_job(0, 1000, 1, 500, ("A",)), _job(1, 1000, 1, 500, ("B",)), _job(2, 1000, 1, 700), _job(3, 2000, 0, 0)]
    m = TargetWorkload.from_jobs(jobs, threshold=1.0)
    assert m.shapes() == [(2000, 0, 0, ""), (1000, 700, 1, ""), (1000, 500, 1, "B"), (1000, 500, 1, "A")]


def test_target_workload_rejects_an_empty_list():
    with pytest.raises(InputError, match="empty"):
        TargetWorkload.from_jobs([])


def test_tracker_follows_binds_and_matches_the_full_pass():
    state = ClusterState([G2, Node("t", "T4", 2, 8000, 1024)])
    tracker = FragmentationTracker(state, WORKED)
    # empty: node 0 = 1600 (above); node 1: idle 2000, cpu 8000: A fits (f 0), B fits (f 0),
    # C: f = 2000 -> 0.2*2000 = 400. Total 2000.
    assert tracker.total() == pytest.approx(2000.0)
    state.bind(0, (0,), Request(4000, 0, 1, 500))
    # node 0 -> 1650 (worked check); total 2050
    assert tracker.total() == pytest.approx(2050.0)
    assert tracker.total() == pytest.approx(cluster_fragmentation(state, WORKED))


# -- the vectorised kernel against a plain transcription of GetNodePodFrag ---------------
def _plain_f(free: list[int], cpu_left: int, model: str, shape: tuple[int, int, int, str]) -> int:
    c, u, k, spec = shape
    idle = sum(free)
    if u == 0:
        return idle  # case 1: CPU-only task
    if spec and model not in spec.split("|"):
        return idle  # case 2: no access
    if sum(1 for x in free if x >= u) >= k:
        return sum(x for x in free if x < u) if cpu_left >= c else idle  # case 3
    return idle  # case 4


_shape = st.tuples(st.integers(0, 8000), st.sampled_from([0, 100, 250, 500, 810, 1000]),
                   st.integers(1, 4), st.sampled_from(["", "A", "B", "A|B"]))
_node = st.tuples(st.lists(st.integers(0, 1000), min_size=1, max_size=4), st.integers(0, 9000),
                  st.sampled_from(["A", "B"]))


@settings(max_examples=60, deadline=None)
@given(shapes=st.lists(_shape, min_size=1, max_size=5), nodes=st.lists(_node, min_size=1, max_size=5),
       weights=st.lists(st.integers(1, 9), min_size=5, max_size=5))
def test_kernel_matches_the_plain_rules(shapes, nodes, weights):
    shapes = [(c, u, k if u == 1000 else (1 if u else 0), s if u else "") for c, u, k, s in shapes]
    target = TargetWorkload.from_shapes(shapes, weights[: len(shapes)])
    width = max(len(f) for f, _, _ in nodes)
    free = np.array([f + [0] * (width - len(f)) for f, _, _ in nodes])
    models = ["A", "B"]
    got = fragmentation_of(free, np.array([c for _, c, _ in nodes]), np.array([models.index(m) for _, _, m in nodes]),
                           target.access(models), target)
    p = target.popularity
    for i, (f, cpu, model) in enumerate(nodes):
        want = sum(p[j] * _plain_f(f, cpu, model, s) for j, s in enumerate(shapes))
        assert got[i] == pytest.approx(want)


# -- the memo and the distinct-state shortcut give exactly the plain kernel's values -------
def _states(shapes, nodes, weights, repeat=1):
    """A tracker on a 2-node cluster (models A, B) for generated shapes, and the generated node
    states (each ``repeat`` times) as arrays, with the vectorised kernel's values for them."""
    shapes = [(c, u, k if u == 1000 else (1 if u else 0), s if u else "") for c, u, k, s in shapes]
    target = TargetWorkload.from_shapes(shapes, weights[: len(shapes)])
    state = ClusterState([Node("n", "A", 4, 9000, 1024), Node("m", "B", 4, 9000, 1024)])
    free = np.array([f + [0] * (4 - len(f)) for f, _, _ in nodes] * repeat)
    cpu = np.array([c for _, c, _ in nodes] * repeat)
    models = np.array([["A", "B"].index(m) for _, _, m in nodes] * repeat)
    want = weighted_fragmentation(free, cpu, models, target.access(state.model_names), target)
    return FragmentationTracker(state, target), free, cpu, models, want


@settings(max_examples=60, deadline=None)
@given(shapes=st.lists(_shape, min_size=1, max_size=5), nodes=st.lists(_node, min_size=1, max_size=40),
       weights=st.lists(st.integers(1, 9), min_size=5, max_size=5))
def test_memoised_values_equal_the_kernel(shapes, nodes, weights):
    # Two passes through one tracker (the second all memo hits) and a batch with repeated
    # states both give the kernel's exact integers, whatever the CPU: states whose free CPU
    # reaches the same target requests share a memo entry, and only those.
    tracker, free, cpu, models, want = _states(shapes, nodes, weights, repeat=2)
    assert tracker.weighted_of(free, cpu, models).tolist() == want.tolist()
    assert tracker.weighted_of(free, cpu, models).tolist() == want.tolist()


def test_memo_keys_on_the_cpu_requests_reached_not_the_cpu_value():
    # WORKED's CPU requests are 2000, 4000, 8000. Free CPU 4000 and 7999 reach the same two,
    # so the second state is a memo hit with the same value; 8000 reaches B's too and differs:
    # free [1000 x 8]: at 4000 B (8000 CPU) lacks CPU, f_B = idle 8000; at 8000 f_B = 0.
    state = ClusterState([G2])
    tracker = FragmentationTracker(state, WORKED)
    free = np.full((3, 8), 1000)
    got = tracker.weighted_of(free, np.array([4000, 7999, 8000]), np.zeros(3, dtype=np.int64))
    # weights are the popularities x 2**32 (not whole numbers): compare F_n = w / sum(w)
    f = got / WORKED.weights.sum()
    assert f[0] == pytest.approx(0.3 * 8000 + 0.2 * 8000)
    assert f[1] == f[0]
    assert f[2] == pytest.approx(0.2 * 8000)
    assert len(WORKED.memo(state.model_names)) >= 2


def test_fgd_scores_alike_nodes_once_with_the_same_answer():
    # 40 empty nodes and one half-used one: scoring them in one batch (distinct states first)
    # or one by one gives the same scores and GPU choices.
    nodes = [Node(f"n{i}", "G2", 8, 96_000, 1 << 20) for i in range(41)]
    state = ClusterState(nodes)
    state.bind(40, (0,), Request(4000, 0, 1, 500))
    fgd = get_policy("fgd", target=WORKED)
    req = Request(4000, 0, 1, 500)
    batch = fgd.node_scores(state, req, np.arange(41))
    alone = [fgd._node_scores(state, req, np.array([i])) for i in range(41)]
    assert batch[0].tolist() == [int(a[0][0]) for a in alone]
    assert batch[1].tolist() == [int(a[1][0]) for a in alone]
    # the half-used node takes the pod on GPU 0 (its 500 free fit exactly: no new fragment)
    assert int(batch[1][40]) == 0


@settings(max_examples=80, deadline=None)
@given(shapes=st.lists(_shape, min_size=1, max_size=6), nodes=st.lists(_node, min_size=1, max_size=6),
       weights=st.lists(st.integers(1, 9), min_size=6, max_size=6))
def test_plain_single_state_path_equals_the_kernel(shapes, nodes, weights):
    # the plain-Python evaluation used for a few states gives the vectorised kernel's integers
    tracker, free, cpu, models, want = _states(shapes, nodes, weights)
    got = [tracker._plain_weighted(free[i].tolist(), int(cpu[i]), int(models[i])) for i in range(len(nodes))]
    assert got == want.tolist()
