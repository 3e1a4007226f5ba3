"""Graded, Lab 01 part 1D: preemption with checkpoint cost.

Learner code: ``lab01_cluster_sim.disciplines.preemption.choose_victims``: the victims
that free enough room for the preemptor while losing the fewest GPU-seconds of work.
"""

from __future__ import annotations

import pytest

from lab01_cluster_sim.disciplines.preemption import (
    CheckpointSpec,
    VictimCandidate,
    choose_victims,
    lost_work,
)


def needs_gpus(candidates, gpus):
    """``enough`` callback: the victims free at least ``gpus`` GPUs."""
    held = {c.job_id: c.gpus for c in candidates}
    return lambda victims: sum(held[v] for v in victims) >= gpus


CANDIDATES = [
    # lost GPU-seconds = lost_s x gpus: A 100x4 = 400, B 50x2 = 100, C 10x4 = 40
    VictimCandidate("A", priority=0, gpus=4, lost_s=100.0),
    VictimCandidate("B", priority=0, gpus=2, lost_s=50.0),
    VictimCandidate("C", priority=1, gpus=4, lost_s=10.0),
]


@pytest.mark.points(2, part="1D", number="1D.1")
def test_cheapest_victim_first():
    """choose_victims: for 4 GPUs it preempts only C, the job that loses least (40 GPU-s)."""
    victims = choose_victims(CANDIDATES, needs_gpus(CANDIDATES, 4))
    assert isinstance(victims, list) and all(isinstance(v, str) for v in victims)  # the type, then the value
    assert victims == ["C"]


@pytest.mark.points(2, part="1D", number="1D.2")
def test_adds_victims_until_enough_and_none_when_hopeless():
    """choose_victims: 6 GPUs need C then B (40 + 100 GPU-s); 11 GPUs cannot be freed (10 held) -> None."""
    # in order of lost GPU-s: C (4 GPUs) is not enough for 6, C + B (6 GPUs) is
    victims = choose_victims(CANDIDATES, needs_gpus(CANDIDATES, 6))
    assert isinstance(victims, list) and sorted(victims) == ["B", "C"]  # the ids, each once, in any order
    assert choose_victims(CANDIDATES, needs_gpus(CANDIDATES, 11)) is None


@pytest.mark.points(2, part="1D", number="1D.3")
def test_victims_that_turn_out_unneeded_are_spared():
    """choose_victims: the result is minimal: X (1 GPU) is taken first but spared once Y (4 GPUs) is in."""
    cands = [VictimCandidate("X", 0, 1, 10.0),   # 10 GPU-s
             VictimCandidate("Y", 0, 4, 5.0)]    # 20 GPU-s
    # greedy: X (1 GPU, not enough), X + Y (5 GPUs, enough); then, costliest first,
    # dropping Y leaves 1 GPU (not enough), dropping X leaves 4 (enough) -> [Y]
    victims = choose_victims(cands, needs_gpus(cands, 4))
    assert isinstance(victims, list) and victims == ["Y"]


@pytest.mark.points(2, part="1D", number="1D.4")
def test_checkpointing_job_is_the_cheaper_victim():
    """With checkpoint cost: of two 2-GPU jobs 250 s in, the one checkpointing every 100 s loses 50 s and is chosen."""
    every_100 = CheckpointSpec(interval_s=100.0)
    never = CheckpointSpec()
    # lost work: 250 - floor(250/100)*100 = 50 s; never checkpointing: all 250 s
    assert lost_work(250.0, every_100) == 50.0 and lost_work(250.0, never) == 250.0
    cands = [VictimCandidate("no-ckpt", 0, 2, lost_work(250.0, never)),   # 500 GPU-s
             VictimCandidate("ckpt", 0, 2, lost_work(250.0, every_100))]  # 100 GPU-s
    victims = choose_victims(cands, needs_gpus(cands, 2))
    assert isinstance(victims, list) and victims == ["ckpt"]
