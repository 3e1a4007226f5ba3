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
