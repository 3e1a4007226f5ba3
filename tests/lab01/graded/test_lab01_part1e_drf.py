"""Graded, Lab 01 part 1E: Dominant Resource Fairness.

Learner code: ``lab01_cluster_sim.disciplines.drf.drf_pick_tenant``: serve the tenant
with the lowest dominant share (Ghodsi et al., NSDI 2011, Algorithm 1), ties by name.
"""

from __future__ import annotations

import pytest

from lab01_cluster_sim.disciplines.drf import drf_allocate, drf_pick_tenant

# The paper's example: 9 CPUs, 18 GB; A's tasks need <1 CPU, 4 GB>, B's <3 CPUs, 1 GB>.
CAPACITY = [9.0, 18.0]


@pytest.mark.points(2, part="1E", number="1E.1")
def test_lowest_dominant_share_goes_next():
    """drf_pick_tenant: with one task each, A (dominant share 4/18) goes before B (3/9)."""
    usage = {"A": [1.0, 4.0], "B": [3.0, 1.0]}
    # A: max(1/9, 4/18) = 0.222 (memory); B: max(3/9, 1/18) = 0.333 (CPU) -> A
    first = drf_pick_tenant(usage, CAPACITY, ["A", "B"])
    assert isinstance(first, str) and first == "A"  # the type, then the value
    # only B asks: B
    only = drf_pick_tenant(usage, CAPACITY, ["B"])
    assert isinstance(only, str) and only == "B"


@pytest.mark.points(1, part="1E", number="1E.2")
def test_ties_newcomers_and_no_candidates():
    """drf_pick_tenant: ties go to the name that sorts first; a tenant holding nothing has share 0; no candidates -> None."""
    usage = {"bob": [3.0, 0.0], "alice": [0.0, 6.0]}
    # bob 3/9 = 1/3, alice 6/18 = 1/3: a tie -> "alice"
    tie = drf_pick_tenant(usage, CAPACITY, ["bob", "alice"])
    newcomer = drf_pick_tenant(usage, CAPACITY, ["bob", "carol"])  # carol holds nothing: 0
    assert isinstance(tie, str) and isinstance(newcomer, str)
    assert (tie, newcomer) == ("alice", "carol")
    assert drf_pick_tenant(usage, CAPACITY, []) is None


@pytest.mark.points(2, part="1E", number="1E.3")
def test_progressive_filling_reproduces_the_paper():
    """DRF progressive filling on the paper's example gives A 3 tasks and B 2 (dominant shares 2/3 each)."""
    # A: 3 x <1,4> = <3,12>, 12/18 = 2/3; B: 2 x <3,1> = <6,2>, 6/9 = 2/3; all 9 CPUs used
    assert drf_allocate(CAPACITY, {"A": [1.0, 4.0], "B": [3.0, 1.0]}) == {"A": 3, "B": 2}
