"""kube-scheduler's TaintToleration and NodeAffinity as plugins of the engine, and the matching
rules of lab01_cluster_sim.corev1 they share with Kueue and Karpenter.

Expected values are worked out by hand from Kubernetes v1.35.4: ``Toleration.ToleratesTaint``
(k8s.io/api core/v1 toleration.go), ``FindMatchingUntoleratedTaint`` and the node affinity
matcher (k8s.io/component-helpers scheduling/corev1), ``TaintToleration.Filter/Score`` and
``NodeAffinity.Filter/Score`` (pkg/scheduler/framework/plugins), ``DefaultNormalizeScore``
(plugins/helper/normalize_score.go), the taint eviction controller's ``getMinTolerationTime``
(pkg/controller/tainteviction/taint_eviction.go) and the default profile's weights
(TaintToleration 3, NodeAffinity 2, NodeResourcesFit 1; apis/config/v1/default_plugins.go)."""

from __future__ import annotations

import numpy as np
import pytest

from lab01_cluster_sim.corev1 import (FieldRequirement, MatchExpression, NodeSelectorTerm, PreferredTerm,
                                      RequiredNodeAffinity, Taint, Toleration, count_intolerable_prefer_no_schedule,
                                      find_untolerated_taint, preferred_score)
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.framework.interface import default_normalize_score
from lab01_cluster_sim.kubescheduler.nodeaffinity import NodeAffinity
from lab01_cluster_sim.kubescheduler.noderesources import NodeResourcesFit
from lab01_cluster_sim.kubescheduler.tainttoleration import TaintToleration, min_toleration_seconds
from lab01_cluster_sim.model import Job, JobState, Node
from lab01_cluster_sim.simulate import simulate

GPU_TAINT = Taint("nvidia.com/gpu", "present", "NoSchedule")
GPU_TOL = Toleration("nvidia.com/gpu", "Exists", effect="NoSchedule")


# -- corev1: tolerations ---------------------------------------------------------------------------
@pytest.mark.parametrize("tol, taint, expected", [
    (Toleration("nvidia.com/gpu", "Exists", effect="NoSchedule"), GPU_TAINT, True),
    (Toleration("nvidia.com/gpu", "Equal", "present", "NoSchedule"), GPU_TAINT, True),
    (Toleration("nvidia.com/gpu", "Equal", "absent", "NoSchedule"), GPU_TAINT, False),   # values differ
    (Toleration("nvidia.com/gpu", "Exists", effect="NoExecute"), GPU_TAINT, False),       # effects differ
    (Toleration("nvidia.com/gpu", "Exists"), GPU_TAINT, True),                            # empty effect: all
    (Toleration("", "Exists"), GPU_TAINT, True),                                          # empty key + Exists: all
    (Toleration("other", "Exists"), GPU_TAINT, False),
])
def test_toleration_tolerates_taint(tol, taint, expected):
    assert tol.tolerates(taint) is expected


@pytest.mark.parametrize("kwargs", [
    {"key": "", "operator": "Equal"},                                     # empty key needs Exists
    {"key": "k", "operator": "Exists", "value": "v"},                     # Exists takes no value
    {"key": "k", "operator": "Lt", "value": "3"},                         # alpha in 1.35, off by default
    {"key": "k", "operator": "Exists", "effect": "NoSchedule", "seconds": 10},   # seconds need NoExecute
    {"key": "k", "operator": "Exists", "effect": "Sometimes"},
])
def test_tolerations_the_api_server_refuses_are_refused(kwargs):
    with pytest.raises(InputError):
        Toleration(**kwargs)


def test_first_untolerated_do_not_schedule_taint_in_node_order():
    taints = (Taint("a", "1", "PreferNoSchedule"), Taint("b", "2", "NoExecute"), GPU_TAINT)
    assert find_untolerated_taint(taints, ()) == Taint("b", "2", "NoExecute")   # PreferNoSchedule skipped
    assert find_untolerated_taint(taints, (Toleration("b", "Exists"),)) == GPU_TAINT
    assert find_untolerated_taint(taints, (Toleration("b", "Exists"), GPU_TOL)) is None


def test_prefer_no_schedule_counts_only_tolerations_with_that_or_no_effect():
    taints = (Taint("a", "1", "PreferNoSchedule"), Taint("b", "", "PreferNoSchedule"), GPU_TAINT)
    assert count_intolerable_prefer_no_schedule(taints, ()) == 2
    # a toleration with effect NoSchedule does not count for PreferNoSchedule taints
    assert count_intolerable_prefer_no_schedule(taints, (Toleration("a", "Exists", effect="NoSchedule"),)) == 2
    assert count_intolerable_prefer_no_schedule(taints, (Toleration("a", "Exists"),)) == 1
    assert count_intolerable_prefer_no_schedule(taints, (Toleration("", "Exists", effect="PreferNoSchedule"),)) == 0


# -- corev1: node selectors ----------------------------------------------------------------------------
LABELS = {"nvidia.com/gpu.product": "A100", "nvidia.com/gpu.count": "8", "zone": "a"}


@pytest.mark.parametrize("expr, expected", [
    (MatchExpression("zone", "In", ("a", "b")), True),
    (MatchExpression("zone", "NotIn", ("a",)), False),
    (MatchExpression("rack", "NotIn", ("r1",)), True),        # NotIn matches a node without the key
    (MatchExpression("zone", "Exists"), True),
    (MatchExpression("zone", "DoesNotExist"), False),
    (MatchExpression("nvidia.com/gpu.count", "Gt", ("4",)), True),
    (MatchExpression("nvidia.com/gpu.count", "Lt", ("8",)), False),   # 8 < 8 is false
    (MatchExpression("zone", "Gt", ("1",)), False),           # not an integer label: no match
])
def test_match_expression_operators(expr, expected):
    assert expr.matches(LABELS) is expected


def test_terms_are_ored_requirements_anded_and_match_fields_name_the_node():
    a100 = NodeSelectorTerm((MatchExpression("nvidia.com/gpu.product", "In", ("A100",)),
                             MatchExpression("zone", "In", ("b",))))          # zone b: false
    named = NodeSelectorTerm(fields=(FieldRequirement("metadata.name", "In", ("gpu-1",)),))
    req = RequiredNodeAffinity((), (a100, named))
    assert req.matches(LABELS, "gpu-1") is True     # the second term
    assert req.matches(LABELS, "gpu-2") is False
    assert RequiredNodeAffinity((), (NodeSelectorTerm(),)).matches(LABELS, "gpu-1") is False   # an empty term
    assert RequiredNodeAffinity((("zone", "a"),), None).matches(LABELS) is True
    assert RequiredNodeAffinity((("zone", "a"), ("x", "y")), None).matches(LABELS) is False
    with pytest.raises(InputError):
        FieldRequirement("metadata.labels", "In", ("x",))
    with pytest.raises(InputError):
        FieldRequirement("metadata.name", "In", ("a", "b"))   # exactly one value


def test_preferred_score_sums_the_weights_of_matching_terms():
    terms = (PreferredTerm(80, NodeSelectorTerm((MatchExpression("zone", "In", ("a",)),))),
             PreferredTerm(15, NodeSelectorTerm((MatchExpression("nvidia.com/gpu.product", "In", ("H100",)),))),
             PreferredTerm(5, NodeSelectorTerm((MatchExpression("nvidia.com/gpu.count", "Gt", ("4",)),))))
    assert preferred_score(terms, LABELS) == 85
    with pytest.raises(InputError):
        PreferredTerm(0, NodeSelectorTerm())


def test_default_normalize_score():
    # 100 * s // max; reversed: 100 - that; all zero: 0, or 100 each when reversed
    assert default_normalize_score(np.array([0, 1, 2]), reverse=True).tolist() == [100, 50, 0]
    assert default_normalize_score(np.array([0, 1, 3]), reverse=True).tolist() == [100, 67, 0]
    assert default_normalize_score(np.array([85, 80, 0]), reverse=False).tolist() == [100, 94, 0]
    assert default_normalize_score(np.array([0, 0]), reverse=True).tolist() == [100, 100]
    assert default_normalize_score(np.array([0, 0]), reverse=False).tolist() == [0, 0]


# -- the plugins in the engine -------------------------------------------------------------------------
def _gpu_cluster():
    return [Node("gpu-a", "A100", 4, 32_000, 128_000, labels={"nvidia.com/gpu.product": "A100"}, taints=(GPU_TAINT,)),
            Node("cpu-a", "", 0, 32_000, 128_000)]


def _job(name, gpus=0, **extras):
    return Job(name, 0.0, 100.0, gpus_per_worker=gpus, gpu_milli=1000 if gpus else 0, cpu_milli=1000,
               memory_mib=1000, extras=extras)


def test_tainted_gpu_node_keeps_untolerating_pods_off():
    jobs = [_job("cpu"), _job("gpu-untolerated", 1), _job("gpu-tolerated", 1, tolerations=(GPU_TOL,))]
    res = simulate(_gpu_cluster(), jobs, plugins=[TaintToleration()], until=50)
    rec = res.records
    assert [p.node for p in rec["cpu"].placements] == ["cpu-a"]
    assert [p.node for p in rec["gpu-tolerated"].placements] == ["gpu-a"]
    assert rec["gpu-untolerated"].state is JobState.PENDING
    # gpu-a: the untolerated taint (counted there only); cpu-a: no GPU
    assert rec["gpu-untolerated"].reason.endswith(
        "(0/2 nodes are available: 1 node(s) had untolerated taint(s), 1 Insufficient nvidia.com/gpu.)")


def test_prefer_no_schedule_steers_the_score_with_weight_3():
    # two equal empty CPU nodes; n1 has one PreferNoSchedule taint. LeastAllocated scores both the
    # same; TaintToleration gives n1 100 - 100*1//1 = 0 and n2 100: the pod goes to n2, although n1
    # comes first in the tie-break order.
    nodes = [Node("n1", "", 0, 8000, 8000, taints=(Taint("spot", "yes", "PreferNoSchedule"),)),
             Node("n2", "", 0, 8000, 8000)]
    res = simulate(nodes, [_job("p")], policy=NodeResourcesFit(), plugins=[TaintToleration()], until=10)
    assert res.records["p"].placements[0].node == "n2"
    tolerating = _job("q", tolerations=(Toleration("spot", "Exists", effect="PreferNoSchedule"),))
    res = simulate(nodes, [tolerating], policy=NodeResourcesFit(), plugins=[TaintToleration()], until=10)
    assert res.records["q"].placements[0].node == "n1"     # tolerated: equal scores, first node


def test_node_affinity_filter_and_weighted_preference():
    nodes = [Node("a", "", 0, 8000, 8000, labels={"zone": "a", "disk": "ssd"}),
             Node("b", "", 0, 8000, 8000, labels={"zone": "b", "disk": "ssd"}),
             Node("c", "", 0, 8000, 8000, labels={"zone": "c"})]
    required = (NodeSelectorTerm((MatchExpression("disk", "Exists"),)),)
    prefer_b = (PreferredTerm(10, NodeSelectorTerm((MatchExpression("zone", "In", ("b",)),))),)
    jobs = [_job("sel", node_selector=(("zone", "c"),)),
            _job("req", affinity=required, preferred_affinity=prefer_b),
            _job("none-fits", node_selector=(("zone", "z"),))]
    res = simulate(nodes, jobs, policy=NodeResourcesFit(), plugins=[NodeAffinity()], until=10)
    assert res.records["sel"].placements[0].node == "c"
    assert res.records["req"].placements[0].node == "b"   # a and b pass; b scores 2 x 100 more
    assert res.records["none-fits"].state is JobState.PENDING
    assert "3 node(s) didn't match Pod's node affinity/selector" in res.records["none-fits"].reason


def test_weights_add_up_as_in_prioritize_nodes():
    # n1: taint-free but not preferred; n2: preferred (NodeAffinity 100 x 2 = 200) but one untolerated
    # PreferNoSchedule taint (TaintToleration 0 x 3, where n1 gets 100 x 3 = 300). n1 wins 300 to 200.
    nodes = [Node("n1", "", 0, 8000, 8000, labels={"zone": "a"}),
             Node("n2", "", 0, 8000, 8000, labels={"zone": "b"}, taints=(Taint("t", "", "PreferNoSchedule"),))]
    job = _job("p", preferred_affinity=(PreferredTerm(50, NodeSelectorTerm((MatchExpression("zone", "In", ("b",)),))),))
    res = simulate(nodes, [job], policy=NodeResourcesFit(), plugins=[TaintToleration(), NodeAffinity()], until=10)
    assert res.records["p"].placements[0].node == "n1"
    # with NodeAffinity weighted 4 (a KubeSchedulerConfiguration may say so), n2 gets 400 > 300
    res = simulate(nodes, [job], policy=NodeResourcesFit(), plugins=[TaintToleration(), NodeAffinity(weight=4)], until=10)
    assert res.records["p"].placements[0].node == "n2"


def test_no_execute_evicts_after_the_smallest_toleration_seconds():
    assert min_toleration_seconds((Taint("a", "", "NoExecute"),), (Toleration("a", "Exists", effect="NoExecute",
                                                                               seconds=60),)) == 60
    # forever: no tolerationSeconds on the toleration used
    assert min_toleration_seconds((Taint("a", "", "NoExecute"),), (Toleration("a", "Exists"),)) is None
    assert min_toleration_seconds((GPU_TAINT,), ()) is None     # no NoExecute taint
    nodes = [Node("n", "", 0, 8000, 8000, taints=(Taint("maint", "soon", "NoExecute"),))]
    tol = (Toleration("maint", "Exists", effect="NoExecute", seconds=30),)
    job = Job("p", 0.0, 100.0, cpu_milli=1000, memory_mib=1000, extras={"tolerations": tol})
    res = simulate(nodes, [job], plugins=[TaintToleration()], until=95)
    rec = res.records["p"]
    # bound at 0, evicted at 30, 60, 90 (each run restarts from scratch and lasts 30 s)
    assert rec.preemptions == 3
    assert rec.state is JobState.RUNNING and rec.run_started == 90.0


def test_per_node_functions_for_callers_without_an_engine():
    # the same Filter and normalized Score, over a list of nodes (the upstream oracle's adapter)
    from lab01_cluster_sim.kubescheduler import nodeaffinity, tainttoleration

    nodes = [Node("a", "", 0, 1, 1, labels={"zone": "a"}, taints=(Taint("s", "", "PreferNoSchedule"),)),
             Node("b", "", 0, 1, 1, labels={"zone": "b"}, taints=(GPU_TAINT,)),
             Node("c", "", 0, 1, 1, labels={"zone": "b"})]
    assert tainttoleration.node_filter(nodes, ()).tolist() == [True, False, True]
    assert tainttoleration.node_scores(nodes, ()).tolist() == [0, 100, 100]
    job = _job("p", node_selector=(("zone", "b"),),
               preferred_affinity=(PreferredTerm(3, NodeSelectorTerm(fields=(FieldRequirement("metadata.name", "In",
                                                                                              ("c",)),))),))
    assert nodeaffinity.node_filter(nodes, job).tolist() == [False, True, True]
    assert nodeaffinity.node_scores(nodes, job).tolist() == [0, 0, 100]


def test_node_resources_fit_weight_scales_the_policy_score():
    # LeastAllocated, pod 1,000m CPU and 1,000 MiB: n1 (8,000m, 8,000 MiB) scores
    # (87 + 87) // 2 = 87, n2 (16,000m, 8,000 MiB) (93 + 87) // 2 = 90. n1 is preferred
    # (NodeAffinity 100 x 2 = 200): weight 1 gives 287 > 90; NodeResourcesFit weight 100 gives
    # 8,700 + 200 = 8,900 < 9,000.
    nodes = [Node("n1", "", 0, 8000, 8000, labels={"zone": "a"}), Node("n2", "", 0, 16000, 8000, labels={"zone": "b"})]
    job = _job("p", preferred_affinity=(PreferredTerm(1, NodeSelectorTerm((MatchExpression("zone", "In", ("a",)),))),))
    res = simulate(nodes, [job], policy=NodeResourcesFit(), plugins=[NodeAffinity()], until=10)
    assert res.records["p"].placements[0].node == "n1"
    res = simulate(nodes, [job], policy=NodeResourcesFit(weight=100), plugins=[NodeAffinity()], until=10)
    assert res.records["p"].placements[0].node == "n2"
