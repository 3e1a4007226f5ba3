"""The synthetic openb-like generator: deterministic, and shaped as documented."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.workloads.synthetic import PodMix, default_trace, pods_to_load, synthetic_nodes, synthetic_pods


def test_same_seed_same_pods():
    a = synthetic_pods(200, np.random.default_rng(7))
    b = synthetic_pods(200, np.random.default_rng(7))
    assert a == b
    assert a != synthetic_pods(200, np.random.default_rng(8))


def test_node_mix_largest_remainder():
    # weights 617/518/54/24 of 1213; 48 nodes: exact 24.42, 20.50, 2.14, 0.95 -> floors 24, 20, 2, 0
    # (46), the two largest remainders (0.95 and 0.50) get one more: 24, 21, 2, 1.
    nodes = synthetic_nodes(48)
    assert Counter(n.gpu_count for n in nodes) == {8: 24, 2: 21, 4: 2, 1: 1}
    with pytest.raises(InputError):
        synthetic_nodes(0)


def test_pod_shapes_follow_the_documented_mix():
    jobs = synthetic_pods(20_000, np.random.default_rng(1))
    kinds = Counter(
        "cpu" if j.gpus_per_worker == 0 else "share" if j.is_fractional else "multi" if j.gpus_per_worker > 1 else "whole"
        for j in jobs
    )
    # expected shares 1088/8152 = 13.3 %, 3078/8152 = 37.8 %, 3911/8152 = 48.0 %; 20000 draws: sd < 0.4 pp
    assert kinds["cpu"] / 20_000 == pytest.approx(0.133, abs=0.012)
    assert kinds["share"] / 20_000 == pytest.approx(0.378, abs=0.015)
    assert kinds["whole"] / 20_000 == pytest.approx(0.480, abs=0.015)
    shares = Counter(j.gpu_milli for j in jobs if j.is_fractional)
    # 810 is the most common share: 1078 / 3078 = 35 % of sharing pods
    assert shares.most_common(1)[0][0] == 810
    assert all(j.memory_mib == 4 * j.cpu_milli for j in jobs)
    assert all(j.gpu_milli == 1000 for j in jobs if j.gpus_per_worker > 1)
    times = [j.submit_time for j in jobs]
    assert times == sorted(times)
    # Poisson arrivals with mean gap 60 s: the mean gap of 20000 draws is within 3 % (sd 0.7 %)
    assert times[-1] / 20_000 == pytest.approx(60.0, rel=0.03)


def test_gangs_only_when_asked():
    assert all(j.workers == 1 for j in synthetic_pods(2000, np.random.default_rng(2)))
    gangs = [j for j in synthetic_pods(2000, np.random.default_rng(2), PodMix(gang_share=1.0)) if j.workers > 1]
    assert gangs and all(j.workers == 2 and j.gpus_per_worker > 1 for j in gangs)


def test_pods_to_load_stops_at_the_crossing_pod():
    nodes = synthetic_nodes(10)
    jobs = pods_to_load(nodes, 0.5, np.random.default_rng(3))
    cap = sum(n.gpu_count for n in nodes) * 1000
    total = sum(j.gpu_milli_total for j in jobs)
    assert total >= 0.5 * cap and total - jobs[-1].gpu_milli_total < 0.5 * cap


def test_default_trace_is_deterministic():
    a, b = default_trace(0), default_trace(0)
    assert a.jobs == b.jobs and a.nodes == b.nodes
    assert len({j.job_id for j in a.jobs}) == len(a.jobs)


def test_every_synthetic_pod_fits_some_empty_node():
    # multi-GPU CPU is capped at 96,000 milli (the 4-/8-GPU nodes' CPU) and memory is 4 MiB per
    # milli-CPU (<= 384,000 <= 393,216 MiB), so no pod is never-placeable. 20,000 pods hold
    # about 0.9 % x 20,000 = 180 multi-GPU pods, a third of whose 8-GPU ones broke the old cap.
    import numpy as np

    from lab01_cluster_sim.workloads.synthetic import OPENB_NODE_TYPES, PodMix, synthetic_pods

    pods = synthetic_pods(20_000, np.random.default_rng(7), PodMix())
    assert max(p.cpu_milli for p in pods if p.gpus_per_worker == 8) <= 96_000
    for p in pods:
        assert any(t.gpu_count >= p.gpus_per_worker and t.cpu_milli >= p.cpu_milli and t.memory_mib >= p.memory_mib
                   for t in OPENB_NODE_TYPES), p
