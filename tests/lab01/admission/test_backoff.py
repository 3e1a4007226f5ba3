"""The requeue backoff of a workload that failed to start (waitForPodsReady's
requeuingStrategy), with hand-computed values."""

from __future__ import annotations

import pytest

from lab01_cluster_sim.admission.backoff import RequeuingStrategy


@pytest.mark.parametrize("n,delay", [(1, 60), (2, 120), (3, 240), (6, 1920), (7, 3600), (50, 3600)])
def test_requeue_backoff_doubles_up_to_the_maximum(n, delay):
    # Kueue defaults: "re-queued after approximately 60, 120, 240, ..., 3600, ..., 3600 seconds"
    assert RequeuingStrategy().delay(n) == delay


def test_requeue_backoff_limit_deactivates():
    s = RequeuingStrategy(backoff_base_seconds=10, backoff_max_seconds=100, backoff_limit_count=2)
    assert [s.delay(1), s.delay(2), s.delay(3)] == [10, 20, None]
