"""ClusterState.gpu_idle: the per-node free milli-GPU kept up to date by bind/release."""

from __future__ import annotations

import copy

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lab01_cluster_sim.cluster import ClusterState, Request
from lab01_cluster_sim.model import Node
from lab01_cluster_sim.policies.base import place
from lab01_cluster_sim.registry import get_policy


def _state():
    return ClusterState([Node("a", "G2", 2, 8000, 8192), Node("b", "G2", 4, 8000, 8192)])


def test_bind_and_release_keep_idle_in_step():
    s = _state()
    assert s.gpu_idle.tolist() == [2000, 4000]
    s.bind(1, (0, 1), Request(100, 100, 2, 1000))   # b: 4000 - 2 x 1000 = 2000
    s.bind(0, (1,), Request(100, 100, 1, 300))      # a: 2000 - 300 = 1700
    assert s.gpu_idle.tolist() == [1700, 2000] == s.gpu_free.sum(axis=1).tolist()
    s.release(1, (0, 1), Request(100, 100, 2, 1000))
    assert s.gpu_idle.tolist() == [1700, 4000]


def test_a_copy_has_its_own_arrays():
    s = _state()
    trial = copy.copy(s)
    trial.bind(0, (0,), Request(100, 100, 1, 1000))
    assert s.gpu_idle.tolist() == [2000, 4000] and s.gpu_free[0, 0] == 1000
    assert s.tag_count.sum() == 0 and s.node_version.tolist() == [0, 0]
    assert trial.gpu_idle.tolist() == [1000, 4000]


def test_refresh_after_a_direct_write():
    s = _state()
    s.gpu_free[1, 3] = 0
    s.refresh()
    assert s.gpu_idle.tolist() == [2000, 3000]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0, 1, 2]), st.sampled_from([100, 500, 1000])), min_size=1, max_size=30),
       st.sampled_from(["best-fit", "worst-fit", "dot-prod", "gpu-clustering", "gpu-packing"]))
def test_idle_matches_the_row_sums_after_any_placements(shapes, policy):
    s = _state()
    pol, rng = get_policy(policy), np.random.default_rng(0)
    held = []
    for k, u in shapes:
        req = Request(100, 100, k, u if k == 1 else (1000 if k else 0))
        placed = place(s, req, pol, rng)
        if placed is None:
            if held:  # free the oldest one
                node, gpus, r = held.pop(0)
                s.release(node, gpus, r)
            continue
        s.bind(placed[0], placed[1], req)
        held.append((placed[0], placed[1], req))
        assert (s.gpu_idle == s.gpu_free.sum(axis=1)).all()
