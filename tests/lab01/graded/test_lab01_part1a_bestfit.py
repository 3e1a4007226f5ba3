"""Graded, Lab 01 part 1A: the best-fit score behind the policy comparison.

Learner code: ``lab01_cluster_sim.policies.generic.best_fit_raw_score`` (``best_fit_score.go``
of hkust-adsl/kubernetes-scheduler-simulator):
``r = 0.5 (cpu_left - cpu_req) / max_cpu + 0.5 (idle_milli - gpu_req) / max_gpu``,
``score = trunc(100 (1 - r))``.
"""

from __future__ import annotations

import numpy as np
import pytest

from lab01_cluster_sim.cluster import ClusterState, Request
from lab01_cluster_sim.model import Node
from lab01_cluster_sim.policies.base import get_policy, place
from lab01_cluster_sim.policies.generic import best_fit_raw_score


@pytest.mark.points(2, part="1A", number="1A.1")
def test_best_fit_raw_score_by_hand():
    """best_fit_raw_score: the fuller a node ends up, the higher its score (62 and 87 here)."""
    # max node: 64 cores (64000 milli-CPU), 8 GPUs (8000 milli-GPU); pod: 8 cores, 1 GPU
    # node A: r = 0.5*(32000-8000)/64000 + 0.5*(4000-1000)/8000 = 0.1875 + 0.1875 = 0.375
    #         score = trunc(100*(1-0.375)) = trunc(62.5) = 62
    # node B: r = 0.5*(16000-8000)/64000 + 0.5*(2000-1000)/8000 = 0.0625 + 0.0625 = 0.125
    #         score = trunc(87.5) = 87
    scores = best_fit_raw_score(np.array([32000, 16000]), np.array([4000, 2000]),
                                8000, 1000, 64000, 8000)
    assert isinstance(scores, np.ndarray) and scores.dtype == np.int64  # the type first, then the values
    assert scores.tolist() == [62, 87]


@pytest.mark.points(1, part="1A", number="1A.2")
def test_best_fit_raw_score_extremes():
    """best_fit_raw_score: a pod that fills the largest node scores 100, an empty pod on an empty largest node 0."""
    # filled: r = 0.5*0/64000 + 0.5*0/8000 = 0 -> 100; untouched: r = 0.5*1 + 0.5*1 = 1 -> 0
    filled = best_fit_raw_score(np.array([64000]), np.array([8000]), 64000, 8000, 64000, 8000)
    untouched = best_fit_raw_score(np.array([64000]), np.array([8000]), 0, 0, 64000, 8000)
    assert isinstance(filled, np.ndarray) and isinstance(untouched, np.ndarray)
    assert filled.tolist() == [100]
    assert untouched.tolist() == [0]


def _two_nodes() -> ClusterState:
    nodes = [Node(f"n{i}", "H100", 8, 64000, 512 * 1024) for i in range(2)]
    state = ClusterState(nodes)
    # node n1 already runs a 6-GPU, 24-core pod
    state.bind(1, (0, 1, 2, 3, 4, 5), Request(24000, 0, 6, 1000))
    return state


@pytest.mark.points(2, part="1A", number="1A.3")
def test_best_fit_places_on_the_fuller_node():
    """The best-fit policy puts a 1-GPU pod on the node that is already busy (first-fit takes the empty n0)."""
    state = _two_nodes()
    pod = Request(4000, 0, 1, 1000)
    # n0: r = 0.5*(64000-4000)/64000 + 0.5*(8000-1000)/8000 = 0.46875 + 0.4375 = 0.90625 -> 9
    # n1: r = 0.5*(40000-4000)/64000 + 0.5*(2000-1000)/8000 = 0.28125 + 0.0625 = 0.34375 -> 65
    # normalised over the two candidates: n0 0, n1 100 -> n1, GPU 6 (its lowest free one)
    rng = np.random.default_rng(0)
    assert place(state, pod, get_policy("best-fit"), rng) == (1, (6,))
    assert place(state, pod, get_policy("first-fit"), rng)[0] == 0


@pytest.mark.points(1, part="1A", number="1A.4")
def test_worst_fit_is_the_mirror_image():
    """Worst-fit (spread, Kubernetes' LeastAllocated) scores 100 - best-fit and so takes the empty node."""
    state = _two_nodes()
    pod = Request(4000, 0, 1, 1000)
    # raw worst-fit = 100 - (9, 65) = (91, 35) -> normalised (100, 0) -> n0
    assert place(state, pod, get_policy("worst-fit"), np.random.default_rng(0))[0] == 0
