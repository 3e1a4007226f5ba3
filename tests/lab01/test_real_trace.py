"""The paper's main comparison on the real trace (skips without the data).

130 % replay of openb_pod_list_default.csv on openb_node_list_gpu_node.csv, seeds 42 and 43,
all six policies. Published 10-seed means at 130 % (experiments/analysis/expected_results/
analysis_allo_discrete.csv of hkust-adsl/kubernetes-scheduler-simulator). Go's math/rand is not
reproduced, so single seeds differ; the seed-to-seed sd is 0.1-0.6 pp.
"""

from __future__ import annotations

import numpy as np
import pytest

from lab01_cluster_sim.fragmentation import TargetWorkload
from lab01_cluster_sim.replay import PAPER_POLICIES, replay
from lab01_cluster_sim.workloads.openb import load_trace

PUBLISHED_130 = {"random": 87.47, "dot-prod": 90.85, "gpu-clustering": 91.88,
                 "gpu-packing": 92.00, "best-fit": 93.08, "fgd": 95.39}


@pytest.fixture(scope="module")
def results(alibaba_csv):
    nodes, pods = load_trace(alibaba_csv)
    target = TargetWorkload.from_jobs(pods.jobs)
    return {p: [replay(nodes, pods.jobs, p, seed=s, target=target) for s in (42, 43)] for p in PAPER_POLICIES}


def test_target_workload_check_values(alibaba_csv):
    # GetTypicalPods on the default list: 91 shapes, |M| = 35 covering 95.26 %, CPU-only p = 0.136,
    # largest p: (3152, 810, 1) 0.1348
    _, pods = load_trace(alibaba_csv)
    m = TargetWorkload.from_jobs(pods.jobs)
    assert (m.num_shapes_total, len(m)) == (91, 35)
    assert m.coverage == pytest.approx(0.9526, abs=5e-5)
    assert m.popularity[m.gpu_milli == 0].sum() == pytest.approx(0.136, abs=5e-4)
    assert m.shapes()[0] == (3152, 810, 1, "") and m.popularity[0] == pytest.approx(0.1348, abs=5e-5)


@pytest.mark.slow
def test_allocation_ratios_match_the_paper(results):
    means = {p: float(np.mean([r.alloc_at(130) for r in rs])) for p, rs in results.items()}
    for p, published in PUBLISHED_130.items():
        assert means[p] == pytest.approx(published, abs=1.5), p
    ordered = [means[p] for p in PAPER_POLICIES]
    assert ordered == sorted(ordered), means


@pytest.mark.slow
def test_tuning_reaches_130_percent(results):
    for rs in results.values():
        for r in rs:
            # arrived within one 8-GPU pod of 1.3 x 6,212,000 = 8,075,600 milli-GPU
            assert 8_075_600 - 1000 < r.arrived_milli[-1] <= 8_075_600 + 7000
            assert r.placed + r.failed == len(r.pod_names)


@pytest.mark.slow
def test_fgd_fragments_least(results):
    # published fragmentation at 130 %: FGD 4.57 % of capacity, BestFit 6.85 %, Random 12.43 %
    frag = {p: float(np.mean([r.curve.at(130, "frag_pct") for r in rs])) for p, rs in results.items()}
    assert frag["fgd"] == pytest.approx(4.57, abs=1.0)
    assert frag["best-fit"] == pytest.approx(6.85, abs=1.0)
    assert frag["random"] == pytest.approx(12.43, abs=1.5)
