"""kube-scheduler v1.35.4's plugins as the oracle of the simulator's placement rules.

Each generated case (nodes with pods already bound, one incoming pod, a NodeResourcesFit
scoring strategy; :func:`upstream.strategies.scheduler_case`) goes through the simulator
(:mod:`upstream.sim_adapter`) and through the plugins' own code
(``tools/upstream/scheduler.go``: noderesources.NewFit, tainttoleration.New,
nodeaffinity.New from k8s.io/kubernetes/pkg/scheduler/framework/plugins), and the Filter
verdict and Score of every node must agree.
"""

from __future__ import annotations

import json

from hypothesis import given

from upstream import sim_adapter
from upstream.conftest import SETTINGS
from upstream.strategies import scheduler_case


def _dump(case: dict) -> str:
    return json.dumps(case, sort_keys=True)


def _upstream(oracle, case: dict) -> dict:
    answer = oracle.ask(case)
    assert "error" not in answer, f"oracle refused a generated case: {answer['error']}\n{_dump(case)}"
    return answer["plugins"]


@SETTINGS
@given(case=scheduler_case())
def test_node_resources_fit_filter_and_score(oracle, case):
    """NodeResourcesFit: Filter (noderesources.Fits) and Score (LeastAllocated,
    MostAllocated, RequestedToCapacityRatio with resource weights; resource_allocation.go
    resourceAllocationScorer.score) per node."""
    up = _upstream(oracle, case)["NodeResourcesFit"]
    sim = sim_adapter.sim_fit(case)
    assert [n["filter"] for n in sim] == [n["filter"] for n in up], _dump(case)
    assert [n["score"] for n in sim] == [n["score"] for n in up], _dump(case)


@SETTINGS
@given(case=scheduler_case(with_selector=True))
def test_node_affinity_filter(oracle, case):
    """NodeAffinity's Filter (node_affinity.go Filter: the pod's nodeSelector and required
    node affinity, every operator and matchFields on metadata.name) per node."""
    up = _upstream(oracle, case)["NodeAffinity"]
    assert sim_adapter.sim_node_affinity_filter(case) == [n["filter"] for n in up], _dump(case)


@SETTINGS
@given(case=scheduler_case(with_taints=True))
def test_taint_toleration(oracle, case):
    """TaintToleration's Filter (NoSchedule/NoExecute untolerated) and normalized Score
    (PreferNoSchedule taints not tolerated, reversed over the nodes) per node
    (lab01_cluster_sim.kubescheduler.tainttoleration)."""
    up = _upstream(oracle, case)["TaintToleration"]
    assert sim_adapter.sim_taint_filter(case) == [n["filter"] for n in up], _dump(case)
    assert sim_adapter.sim_taint_score(case) == [n.get("score") for n in up], _dump(case)


@SETTINGS
@given(case=scheduler_case(with_selector=True))
def test_node_affinity_score(oracle, case):
    """NodeAffinity's normalized Score (preferred terms by weight, over the nodes) per node
    (lab01_cluster_sim.kubescheduler.nodeaffinity); no score when the pod has no preferred
    term (PreScore skips the plugin)."""
    up = _upstream(oracle, case)["NodeAffinity"]
    assert sim_adapter.sim_node_affinity_score(case) == [n.get("score") for n in up], _dump(case)
