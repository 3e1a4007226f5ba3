"""The workshop's step 3.5 in simulation: pod 5 left running keeps the second node billing.

``mini_lab(overflow_duration_s=...)`` (used by chapter 10) sets the run time of the pods that
do not fit the time-sliced card; the four on the card keep ``duration_s``.
"""

import pytest

from lab01_cluster_sim.studies.autoscaling import mini_lab


def test_pod5_left_running_keeps_the_second_node():
    r = mini_lab(overflow_duration_s=14_400.0)
    # pods 1-4: 600 s of work each, 4.1x slower on the sliced card: 600 x 4.1 = 2460 s
    for name in ("pod-1", "pod-2", "pod-3", "pod-4"):
        assert r.pods[name].finished_s == pytest.approx(2460.0)
    # pod 5: bound at 60 + 15 = 75 s, starts after 1024/128 + 1024/256 = 12 s of pull
    # and extraction, at 87 s; runs 14,400 s alone: ends at 14,487 s
    p5 = r.pods["pod-5"]
    assert p5.started_s == pytest.approx(87.0)
    assert p5.finished_s == pytest.approx(14_487.0)
    (second,) = [n for n in r.nodes if n.pool is not None]
    # WhenEmpty after 30 s: removed at 14,487 + 30 = 14,517 s, billed from launch at 0 s:
    # 14,517 s / 3600 x $0.526/h (g4dn.xlarge) = $2.121
    assert second.terminated_s == pytest.approx(14_517.0)
    assert r.cost_dollars() == pytest.approx(14_517 / 3600 * 0.526)


def test_default_overflow_is_duration():
    assert mini_lab().pods["pod-5"].finished_s == pytest.approx(687.0)
    assert mini_lab(duration_s=100.0).pods["pod-5"].finished_s == pytest.approx(187.0)
