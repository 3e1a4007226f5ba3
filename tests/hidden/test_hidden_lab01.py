"""Hidden graded tests of Lab 01: other cases of the same rules (not in the student edition).

Visibility ``after_published`` (the plugin's default for tests/hidden/).
"""

from __future__ import annotations


import numpy as np
import pytest

from lab01_cluster_sim import metrics
from lab01_cluster_sim.disciplines.drf import drf_pick_tenant
from lab01_cluster_sim.disciplines.preemption import VictimCandidate, choose_victims
from lab01_cluster_sim.metrics import count_stranded_gpus
from lab01_cluster_sim.model import Job, JobState, Node
from lab01_cluster_sim.policies.generic import best_fit_raw_score
from lab01_cluster_sim.scheduler import gang_permit
from lab01_cluster_sim.simulate import simulate


@pytest.mark.points(1, part="1A", number="1A.h1")
def test_best_fit_cpu_only_pod():
    """best_fit_raw_score with a CPU-only pod: 50 and 75."""
    # max 96000 milli-CPU, 8000 milli-GPU; pod 48000 milli-CPU, no GPU
    # node 0: r = 0.5*(48000-48000)/96000 + 0.5*8000/8000 = 0.5  -> 50
    # node 1: r = 0.5*(96000-48000)/96000 + 0.5*0/8000    = 0.25 -> 75
    scores = best_fit_raw_score(np.array([48000, 96000]), np.array([8000, 0]), 48000, 0, 96000, 8000)
    assert isinstance(scores, np.ndarray) and scores.tolist() == [50, 75]


@pytest.mark.points(1, part="1B", number="1B.h1")
def test_stranded_on_a_node_the_job_cannot_use():
    """count_stranded_gpus: 2 free GPUs on a node of the wrong model are stranded."""
    # slots [0, 2]: node 0 excluded (model); usable min([2, 4], [0, 4]) = [0, 4] -> 2 stranded
    n = count_stranded_gpus(np.array([2, 4]), np.array([[0, 2]]), np.array([2]), np.array([1]))
    assert isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n == 2


@pytest.mark.points(1, part="1C", number="1C.h1")
def test_gang_that_fits_starts_at_once(monkeypatch):
    """A 4-worker x 2-GPU gang on two 4-GPU nodes starts at its arrival and completes."""
    monkeypatch.setattr(metrics, "count_stranded_gpus", lambda *a, **k: 0)
    assert gang_permit(4, 4) and not gang_permit(3, 4)
    nodes = [Node(f"n{i}", "H100", 4, 64000, 524288) for i in range(2)]
    job = Job("g", submit_time=5.0, duration=50.0, gpus_per_worker=2, gpu_milli=1000, workers=4)
    rec = simulate(nodes, [job], policy="first-fit", mode="gang").records["g"]
    assert (rec.state, rec.start_time, rec.end_time) == (JobState.COMPLETED, 5.0, 55.0)


@pytest.mark.points(1, part="1D", number="1D.h1")
def test_equal_cost_lower_priority_first():
    """choose_victims: equal lost GPU-seconds -> the lower-priority job is preempted."""
    cands = [VictimCandidate("A", 1, 2, 50.0), VictimCandidate("B", 0, 2, 50.0)]  # 100 GPU-s each
    victims = choose_victims(cands, lambda v: len(v) >= 1)
    assert isinstance(victims, list) and victims == ["B"]
    assert choose_victims([], lambda v: False) is None


@pytest.mark.points(1, part="1E", number="1E.h1")
def test_three_tenants_tie():
    """drf_pick_tenant: shares 0.2, 0.1, 0.1 -> the tie between b and c goes to b."""
    usage = {"a": [2.0, 0.0], "b": [0.0, 1.0], "c": [1.0, 1.0]}
    tenant = drf_pick_tenant(usage, [10.0, 10.0], ["c", "a", "b"])
    assert isinstance(tenant, str) and tenant == "b"
