"""Placement policies: scores on tiny clusters, with the arithmetic written out."""

from __future__ import annotations

import numpy as np
import pytest

from lab01_cluster_sim.cluster import ClusterState, Request
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.model import Node
from lab01_cluster_sim.policies.base import POLICIES, get_policy, pick_best_gpus, place
from lab01_cluster_sim.policies.generic import best_fit_raw_score, min_max_normalize

RNG = np.random.default_rng(0)


def _state(*nodes: Node) -> ClusterState:
    return ClusterState(list(nodes))


def _score(policy: str, state: ClusterState, request: Request, **kw) -> list[int]:
    cand = np.flatnonzero(state.feasible(request))
    return get_policy(policy, **kw).score(state, request, cand, np.random.default_rng(0)).tolist()


BIG = Node("big", "G2", 8, 128_000, 1 << 20)
SMALL = Node("small", "T4", 2, 32_000, 1 << 20)
ONE_GPU = Request(cpu_milli=4000, memory_mib=0, num_gpus=1, gpu_milli=1000)


def test_generic_policies_are_registered():
    get_policy("first-fit")  # loads the built-in modules
    assert {"first-fit", "best-fit", "worst-fit", "random"} <= set(POLICIES)


def test_unknown_policy_names_the_known_ones():
    with pytest.raises(InputError, match="unknown policy 'nope'.*best-fit"):
        get_policy("nope")


def test_best_fit_raw_score_by_hand():
    # big:   r = 0.5*(128000-4000)/128000 + 0.5*(8000-1000)/8000 = 0.484375 + 0.4375 = 0.921875
    #        s = trunc(100*(1-0.921875)) = trunc(7.8125) = 7
    # small: r = 0.5*(32000-4000)/128000 + 0.5*(2000-1000)/8000 = 0.109375 + 0.0625 = 0.171875
    #        s = trunc(82.8125) = 82
    raw = best_fit_raw_score(np.array([128_000, 32_000]), np.array([8000, 2000]), 4000, 1000, 128_000, 8000)
    assert raw.tolist() == [7, 82]


def test_min_max_normalize_integer_maths():
    # lo = 7, hi = 82: (7-7)*100//75 = 0, (50-7)*100//75 = 4300//75 = 57, (82-7)*100//75 = 100
    assert min_max_normalize(np.array([7, 50, 82])).tolist() == [0, 57, 100]
    assert min_max_normalize(np.array([5, 5])).tolist() == [0, 0]


def test_best_fit_prefers_the_fuller_node():
    # raw [7, 82] as above -> normalised [0, 100]
    assert _score("best-fit", _state(BIG, SMALL), ONE_GPU) == [0, 100]


def test_worst_fit_is_the_mirror_image():
    # raw 100-7 = 93 and 100-82 = 18 -> normalised [100, 0]
    assert _score("worst-fit", _state(BIG, SMALL), ONE_GPU) == [100, 0]


def test_first_fit_takes_the_lowest_index_whatever_the_tie_order():
    state = ClusterState([BIG, SMALL], tie_rank=[1, 0])  # small would win every tie
    assert _score("first-fit", state, ONE_GPU) == [100, 0]
    assert place(state, ONE_GPU, get_policy("first-fit"), RNG)[0] == 0


def test_random_gives_exactly_one_node_100():
    state = _state(BIG, SMALL, Node("c", "T4", 2, 32_000, 1 << 20))
    scores = _score("random", state, ONE_GPU)
    assert sorted(scores) == [0, 0, 100]


def test_random_pick_is_among_gpus_with_room():
    state = _state(SMALL)
    state.bind(0, (0,), Request(0, 0, 1, 800))  # GPU0 has 200 left, GPU1 1000
    share = Request(0, 0, 1, 500)
    picks = {get_policy("random").pick_gpus(state, share, 0, np.random.default_rng(s)) for s in range(20)}
    assert picks == {(1,)}


def test_best_gpu_pick_takes_the_tightest_gpu_lowest_index_on_ties():
    state = _state(Node("n", "G2", 4, 8000, 1024))
    state.bind(0, (0,), Request(0, 0, 1, 300))  # free 700
    state.bind(0, (1,), Request(0, 0, 1, 500))  # free 500
    state.bind(0, (2,), Request(0, 0, 1, 500))  # free 500
    # free [700, 500, 500, 1000]: for u = 400 the smallest free >= 400 is 500, first at GPU1
    assert pick_best_gpus(state, Request(0, 0, 1, 400), 0) == (1,)
    # u = 600: candidates 700 (GPU0) and 1000 (GPU3) -> GPU0
    assert pick_best_gpus(state, Request(0, 0, 1, 600), 0) == (0,)
    # whole GPUs: the lowest-index fully free one
    assert pick_best_gpus(state, Request(0, 0, 1, 1000), 0) == (3,)


def _run(policy: str, state: ClusterState, requests: list[Request]) -> list[int | None]:
    pol = get_policy(policy)
    rng = np.random.default_rng(0)
    out = []
    for req in requests:
        got = place(state, req, pol, rng)
        if got is None:
            out.append(None)
        else:
            state.bind(got[0], got[1], req)
            out.append(got[0])
    return out


def test_first_fit_strands_gpus_where_best_fit_does_not():
    # Two nodes, 8 vCPU each: n0 has 2 GPUs, n1 has 1. Jobs: 1 GPU, then 2 GPUs.
    nodes = [Node("n0", "T4", 2, 8000, 1024), Node("n1", "T4", 1, 8000, 1024)]
    jobs = [Request(1000, 0, 1, 1000), Request(1000, 0, 2, 1000)]
    # first-fit puts the 1-GPU job on n0 (lowest index); the 2-GPU job then finds one free
    # GPU on each node and fails: 2 GPUs stranded (free but unusable for it).
    ff = ClusterState(nodes)
    assert _run("first-fit", ff, jobs) == [0, None]
    assert int(ff.full_free_gpus().sum()) == 2
    # best-fit (max_cpu 8000, max_gpu 2000):
    #   n0: r = 0.5*7000/8000 + 0.5*1000/2000 = 0.4375 + 0.25 = 0.6875 -> trunc(31.25) = 31
    #   n1: r = 0.5*7000/8000 + 0.5*0/2000    = 0.4375          -> trunc(56.25) = 56
    # so the 1-GPU job goes to n1, and the 2-GPU job fits n0: nothing stranded.
    bf = ClusterState(nodes)
    assert _run("best-fit", bf, jobs) == [1, 0]
    assert int(bf.full_free_gpus().sum()) == 0


# -- the paper's policies (pkg/simulator/plugin/ of the FGD simulator) -------------------------------------
def test_dot_prod_by_hand():
    # max_cpu 128000, max_gpu 8000; request b = (4000/128000, 1000/8000) = (0.03125, 0.125)
    # big:   a = (1, 1):       d = (0.03125 + 0.125)/2 = 0.078125 -> trunc(92.1875) = 92
    # small: a = (0.25, 0.25): d = (0.0078125 + 0.03125)/2 = 0.01953125 -> trunc(98.046875) = 98
    assert _score("dot-prod", _state(BIG, SMALL), ONE_GPU) == [92, 98]


def _packing_state() -> ClusterState:
    a = Node("a", "T4", 4, 8000, 1024)   # idle, z = G = 4
    b = Node("b", "G2", 8, 8000, 1024)   # GPU0 has 300 free, GPU1 950, rest free
    c = Node("c", "T4", 2, 8000, 1024)   # idle, z = G = 2
    state = _state(a, b, c)
    state.bind(1, (0,), Request(0, 0, 1, 700))
    state.bind(1, (1,), Request(0, 0, 1, 50))
    return state


def test_gpu_packing_by_hand():
    state = _packing_state()
    # idle nodes: 33 - z -> a: 29, c: 31
    # b, u = 200: tightest GPU with >= 200 is 300 (partly used, j = 0):
    #   max(100 - floor(floor(100*300/1000)/10), 50) = 100 - floor(30/10) = 97
    assert _score("gpu-packing", state, Request(0, 0, 1, 200)) == [29, 97, 31]
    # b, u = 400: tightest is 950: 100 - floor(95/10) = 91
    assert _score("gpu-packing", state, Request(0, 0, 1, 400)) == [29, 91, 31]
    # b, u = 960: only fully free GPUs fit, j = 1: max(50 - 1, 33) = 49
    assert _score("gpu-packing", state, Request(0, 0, 1, 960)) == [29, 49, 31]
    # 2 whole GPUs: b: j = 2 -> 48
    assert _score("gpu-packing", state, Request(0, 0, 2, 1000)) == [29, 48, 31]
    # CPU-only pods score 0 everywhere
    assert _score("gpu-packing", state, Request(100, 0, 0, 0)) == [0, 0, 0]


def test_gpu_clustering_by_hand():
    nodes = [Node(f"n{i}", "G2", 8, 64_000, 1 << 20) for i in range(4)]
    state = _state(*nodes)
    state.bind(1, (0,), Request(0, 0, 1, 500))             # n1: one share pod, idle 7500
    state.bind(2, (0,), Request(0, 0, 1, 500))             # n2: a share pod and a 1-GPU pod, idle 6500
    state.bind(2, (1,), Request(0, 0, 1, 1000))
    state.bind(3, (0, 1), Request(0, 0, 2, 1000))          # n3: a 2-GPU pod, idle 6000
    # base = floor(25*(8000 - idle)/8000): n0 0, n1 floor(12500/8000) = 1, n2 floor(37500/8000) = 4,
    # n3 floor(50000/8000) = 6
    # share pod: n0 no GPU pods +25 -> 25; n1 only share +75 -> 76; n2 share and others +50 -> 54;
    # n3 GPU pods, none share +0 -> 6
    assert _score("gpu-clustering", state, Request(0, 0, 1, 300)) == [25, 76, 54, 6]
    # 2-GPU pod: n0 25, n1 1 + 0 = 1, n2 4 + 0 = 4, n3 only 2-GPU pods: 6 + 75 = 81
    assert _score("gpu-clustering", state, Request(0, 0, 2, 1000)) == [25, 1, 4, 81]
    # release keeps the tags right: n1 empty again -> 0 + 25
    state.release(1, (0,), Request(0, 0, 1, 500))
    assert _score("gpu-clustering", state, Request(0, 0, 1, 300))[1] == 25
    assert _score("gpu-clustering", state, Request(100, 0, 0, 0)) == [0, 0, 0, 0]


def test_fgd_cpu_only_pod_counts_the_cpu_it_takes():
    # M = {(4000, 500, 1)} p 1; node 8000 milli-CPU, 2 free GPUs: F = 0 (the task fits, nothing < 500).
    # A CPU-only pod of 5000 leaves 3000 < 4000: f = idle = 2000, dF = -2000,
    # trunc(100*sigmoid(-2)) = trunc(11.92) = 11.
    from lab01_cluster_sim.fragmentation import TargetWorkload

    target = TargetWorkload.from_shapes([(4000, 500, 1, "")], [1.0])
    assert _score("fgd", _state(Node("n", "T4", 2, 8000, 1024)), Request(5000, 0, 0, 0), target=target) == [11]


def test_fgd_keeps_usable_shares_where_best_fit_strands_them():
    # Target M = {(0, 500, 1)} p 1. X: one GPU with 700 free; Y: two free GPUs; 8 vCPU each.
    # Pod 1 asks for 300 milli-GPU.
    #   best-fit (max_cpu 8000, max_gpu 2000): X r = 0.5*1 + 0.5*400/2000 = 0.6 -> 40;
    #   Y r = 0.5 + 0.5*1700/2000 = 0.925 -> 7. It picks X: X keeps 400, which no 500-task can use.
    #   FGD: X: F 0 -> [400]: no GPU >= 500, f = idle = 400, dF = -400 -> trunc(40.13) = 40;
    #   Y: F 0 -> [700, 1000]: f = 0, dF = 0 -> 50. It picks Y.
    # Then three pods of 700: after best-fit, free is x 400, y [1000, 1000] -> two fit, one fails;
    # after FGD, free is x 700, y [700, 1000] -> all three fit.
    from lab01_cluster_sim.fragmentation import TargetWorkload, cluster_fragmentation

    target = TargetWorkload.from_shapes([(0, 500, 1, "")], [1.0])
    nodes = [Node("x", "T4", 1, 8000, 1024), Node("y", "T4", 2, 8000, 1024)]
    first = Request(0, 0, 1, 300)

    def start() -> ClusterState:
        state = ClusterState(nodes)
        state.bind(0, (0,), Request(0, 0, 1, 300))  # x: 700 free
        return state

    assert _score("best-fit", start(), first) == [100, 0]
    assert _score("fgd", start(), first, target=target) == [40, 50]
    jobs = [first] + [Request(0, 0, 1, 700)] * 3
    outcomes = {}
    for name in ("best-fit", "fgd"):
        state = start()
        pol = get_policy(name, target=target) if name == "fgd" else get_policy(name)
        placed = []
        for req in jobs:
            got = place(state, req, pol, RNG)
            if got is not None:
                state.bind(got[0], got[1], req)
            placed.append(None if got is None else got[0])
        outcomes[name] = (placed, cluster_fragmentation(state, target))
    # best-fit: 300 -> x; 700 -> y GPU0, 700 -> y GPU1; the third 700 fails.
    # Free x [400], y [300, 300]: no GPU >= 500 anywhere, F = idle = 400 + 600 = 1000.
    assert outcomes["best-fit"] == ([0, 1, 1, None], 1000.0)
    # FGD: 300 -> y GPU0 (both GPUs score 50, the first wins) -> y [700, 1000].
    # 700 #1: x [700] -> [0]: F 0 -> 0, score 50; y GPU0 -> [0, 1000]: F 0 -> 0, 50 (GPU1 would give
    #   [700, 300]: F 300, 42). Tie at 50 -> lowest tie rank = x.
    # 700 #2 -> y GPU0; 700 #3 -> y GPU1 (the only feasible node). Free y [0, 300]: F = 300.
    assert outcomes["fgd"] == ([1, 0, 1, 1], 300.0)


def test_fgd_cached_scores_equal_fresh_scores_after_binds_and_releases():
    # The FGD score cache is keyed by ClusterState.node_version: after any sequence of binds and
    # releases, cached scores must equal scores computed from scratch by a new policy object.
    from lab01_cluster_sim.fragmentation import TargetWorkload

    target = TargetWorkload.from_shapes(
        [(2000, 500, 1, ""), (8000, 1000, 2, ""), (1000, 0, 0, ""), (4000, 300, 1, "T4")], [0.4, 0.2, 0.2, 0.2])
    nodes = [Node(f"g{i}", "G2", 8, 32_000, 1 << 20) for i in range(3)] + [Node("t", "T4", 2, 16_000, 1 << 20)]
    state = ClusterState(nodes)
    cached = get_policy("fgd", target=target)
    rng = np.random.default_rng(11)
    shapes = [Request(2000, 0, 1, 500), Request(4000, 0, 1, 300), Request(8000, 0, 2, 1000), Request(1000, 0, 0, 0)]
    bound = []
    for step in range(60):
        req = shapes[step % len(shapes)]
        cand = np.flatnonzero(state.feasible(req))
        if cand.size:
            fresh = get_policy("fgd", target=target).score(state, req, cand, rng)
            assert cached.score(state, req, cand, rng).tolist() == fresh.tolist(), step
            got = place(state, req, cached, rng)
            state.bind(got[0], got[1], req)
            bound.append((got, req))
        if step % 5 == 4 and bound:  # release a random earlier pod
            (node, gpus), r = bound.pop(int(rng.integers(len(bound))))
            state.release(node, gpus, r)


def test_make_policy_hands_the_target_only_to_fgd():
    from lab01_cluster_sim.fragmentation import TargetWorkload
    from lab01_cluster_sim.policies import make_policy, policy_names

    target = TargetWorkload.from_shapes([(0, 500, 1, "")], [1.0])
    assert make_policy("fgd", target=target).target is target
    assert make_policy("best-fit", target=target).name == "best-fit"
    with pytest.raises(InputError, match="needs the target workload"):
        make_policy("fgd")
    assert {"random", "dot-prod", "gpu-clustering", "gpu-packing", "best-fit", "fgd"} <= set(policy_names())
