"""Graded, Lab 01 part 1B: stranded GPUs, first-fit against best-fit.

Learner code: ``lab01_cluster_sim.metrics.count_stranded_gpus``: fully free GPUs that no
pending job can use now (the definition is in its docstring).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from lab01_cluster_sim.metrics import count_stranded_gpus
from lab01_cluster_sim.model import Job, JobState, Node
from lab01_cluster_sim.simulate import simulate


def is_count(n) -> bool:
    """A whole number (a Python int or a numpy integer), checked before its value."""
    return isinstance(n, (int, np.integer)) and not isinstance(n, bool)


@pytest.mark.points(2, part="1B", number="1B.1")
def test_gang_that_cannot_gather_strands_all_12():
    """count_stranded_gpus: 4 nodes x 3 free GPUs, one pending gang of 2 workers x 4 GPUs: all 12 stranded."""
    # 3 // 4 = 0 workers fit on any node: the gang cannot be gathered, it uses nothing
    n = count_stranded_gpus(np.array([3, 3, 3, 3]), np.zeros((1, 4), dtype=np.int64), np.array([4]), np.array([2]))
    assert is_count(n) and n == 12


@pytest.mark.points(2, part="1B", number="1B.2")
def test_usable_gpus_are_not_stranded():
    """count_stranded_gpus: a 4-GPU pod uses node 0's 4 free GPUs, node 1's 2 are stranded; a 1-GPU job makes them usable."""
    full_free = np.array([4, 2])
    # one pending 1 x 4-GPU job: slots [1, 0]; usable min([4, 2], [4, 0]) = [4, 0] -> 0 + 2 = 2
    one = count_stranded_gpus(full_free, np.array([[1, 0]]), np.array([4]), np.array([1]))
    # plus a pending 2 x 1-GPU job: slots [4, 2], usable [4, 2] -> max over jobs [4, 2] -> 0
    two = count_stranded_gpus(full_free, np.array([[1, 0], [4, 2]]), np.array([4, 1]), np.array([1, 2]))
    # nobody pending: idle, not stranded
    none = count_stranded_gpus(full_free, np.zeros((0, 2), dtype=np.int64), np.zeros(0), np.zeros(0))
    assert is_count(one) and is_count(two) and is_count(none)
    assert (one, two, none) == (2, 0, 0)


@pytest.mark.points(3, part="1B", number="1B.3")
def test_first_fit_strands_where_best_fit_does_not():
    """First-fit strands 4 GPUs when a 2-GPU job takes the 4-GPU node before a 4-GPU job arrives, none when it takes the 2-GPU node (best-fit's choice)."""
    big, small = Node("big", "H100", 4, 32000, 262144), Node("small", "H100", 2, 32000, 262144)
    jobs = [Job("two", submit_time=0.0, duration=math.inf, gpus_per_worker=2, gpu_milli=1000),
            Job("four", submit_time=1.0, duration=math.inf, gpus_per_worker=4, gpu_milli=1000)]
    # first-fit takes the lowest-index node that fits, so the node order decides the placement:
    # [big, small]: "two" on big -> 2 + 2 free GPUs, "four" fits nowhere: stranded = 2 + 2 = 4
    # [small, big]: "two" on small (where best-fit puts it), "four" takes big: 0 stranded
    # first-fit only, so this grades count_stranded_gpus (1B) without the best-fit score (1A);
    # one-worker jobs: "naive" mode places them exactly as gang mode would, without the gang permit (1C)
    # nobody pending: idle, not stranded (and, before 1B is written, "your code here (1B)" here:
    # the engine records a stranded count it cannot compute as "not computed" and carries on)
    idle = count_stranded_gpus(np.array([4, 2]), np.zeros((0, 2), dtype=np.int64), np.zeros(0), np.zeros(0))
    assert is_count(idle) and idle == 0
    ff = simulate([big, small], jobs, policy="first-fit", mode="naive")
    packed = simulate([small, big], jobs, policy="first-fit", mode="naive")
    assert ff.summary.peak_stranded_gpus == 4
    assert ff.records["four"].state is JobState.PENDING
    assert packed.summary.peak_stranded_gpus == 0
    assert packed.records["four"].start_time == 1.0
