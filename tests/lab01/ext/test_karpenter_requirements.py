"""Which pods a NodePool can launch for (Karpenter's scheduling requirements, issue 17 §4):
labels Karpenter cannot know before launch leave the pod Pending with Karpenter's reason;
well-known labels select instance types. Sources: kubernetes-sigs/karpenter
``pkg/scheduling/requirements.go`` (``Requirements.Compatible``, ``newPodRequirements``),
``pkg/controllers/provisioning/scheduling/nodeclaim.go`` (``NodeClaim.CanAdd``), and the AWS
provider's instance-type labels (aws/karpenter-provider-aws, instance-types reference)."""

from __future__ import annotations

import csv

import pytest

from lab01_cluster_sim.corev1 import MatchExpression, NodeSelectorTerm
from lab01_cluster_sim.autoscaler.catalogue import DEFAULT_CATALOGUE
from lab01_cluster_sim.autoscaler.nodepool import NodePool
from lab01_cluster_sim.autoscaler.requirements import GPU_MEMORY, GPU_NAME, INSTANCE_TYPE
from lab01_cluster_sim.autoscaler.pods import Pod
from lab01_cluster_sim.cli import main
from lab01_cluster_sim.scenario import ScenarioError, load_scenario

from .helpers import run_pods

AWS = tuple(t for t in DEFAULT_CATALOGUE if t.provider == "aws")


def _run(*pods):
    return run_pods(list(pods), [NodePool("gpu", AWS, consolidation_policy="WhenEmpty")])


@pytest.mark.parametrize("key", ["nvidia.com/gpu.product", "nvidia.com/gpu.memory"])
def test_gpu_feature_discovery_labels_get_no_node(key):
    # GFD labels a node after it joins; Karpenter's Compatible() denies a required key that is
    # neither well known nor defined by the NodePool: "label ... does not have known values".
    r = _run(Pod("gfd", 1, 100, node_selector=((key, "x"),)))
    assert r.nodes == [] and r.pods["gfd"].started_s is None
    assert r.unlaunchable == {"gfd": f'incompatible requirements, label "{key}" does not have known values'}


def test_not_in_on_an_unknown_label_is_allowed():
    # Compatible(): NotIn and DoesNotExist on an undefined key are allowed
    term = NodeSelectorTerm((MatchExpression("nvidia.com/gpu.product", "NotIn", ("Tesla-T4",)),))
    r = _run(Pod("p", 1, 100, affinity=(term,)))
    assert [n.instance_type for n in r.nodes] == ["g4dn.xlarge"] and r.unlaunchable == {}


@pytest.mark.parametrize("selector,affinity,expected", [
    # cheapest 1-GPU AWS type by default: g4dn.xlarge ($0.526/h)
    ((), (), "g4dn.xlarge"),
    # instance-gpu-name a10g: g5.xlarge ($1.006/h) is the cheapest A10G type
    (((GPU_NAME, "a10g"),), (), "g5.xlarge"),
    # instance-gpu-memory Gt 40000 MiB: p4d (40960, $21.96/h) and p5 (81920, $55.04/h) -> p4d
    ((), (NodeSelectorTerm((MatchExpression(GPU_MEMORY, "Gt", ("40000",)),)),), "p4d.24xlarge"),
    # two ORed terms, the first impossible (gpu-name v100): Karpenter relaxes to the second (l4)
    ((), (NodeSelectorTerm((MatchExpression(GPU_NAME, "In", ("v100",)),)),
          NodeSelectorTerm((MatchExpression(GPU_NAME, "In", ("l4",)),))),
     "g6.xlarge"),
])
def test_well_known_labels_select_the_instance_type(selector, affinity, expected):
    r = _run(Pod("p", 1, 100, node_selector=selector, affinity=affinity))
    assert [n.instance_type for n in r.nodes] == [expected]
    assert r.pods["p"].ran_on == r.nodes[0].name


def test_a_pod_binds_only_to_a_node_of_its_instance_type():
    # 'plain' (1 GPU) and 'g5' (1 GPU, instance-type g5.xlarge) pending together: no type both
    # can share (g5.xlarge has one GPU), so two claims: g4dn.xlarge for plain, g5.xlarge for g5.
    # Both are ready at 75 s; g5 must not bind to the g4dn node (its labels do not match).
    r = _run(Pod("plain", 1, 100), Pod("g5", 1, 100, node_selector=((INSTANCE_TYPE, "g5.xlarge"),)))
    types = {n.name: n.instance_type for n in r.nodes}
    assert sorted(types.values()) == ["g4dn.xlarge", "g5.xlarge"]
    assert types[r.pods["g5"].ran_on] == "g5.xlarge" and types[r.pods["plain"].ran_on] == "g4dn.xlarge"


def test_no_instance_type_is_large_enough():
    r = _run(Pod("huge", 16, 100))
    assert r.nodes == []
    assert r.unlaunchable == {"huge": "no instance type met the scheduling requirements or had enough resources, "
                                      "NodePools=gpu"}


POOL = """apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: big-gpus}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.k8s.aws/instance-gpu-name, operator: In, values: [a100, h100]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
---
apiVersion: v1
kind: Pod
metadata:
  name: trainer
  annotations: {lab01.course/duration: "100"}
spec:
  nodeSelector: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-40GB}
  containers:
  - name: c
    image: x
    resources: {limits: {nvidia.com/gpu: "1"}}
"""


def test_nodepool_requirements_narrow_the_instance_types(tmp_path):
    path = tmp_path / "pool.yaml"
    path.write_text(POOL)
    (pool,) = load_scenario(path).node_pools
    # the GCP a2 types carry no karpenter.k8s.aws labels (an AWS provider's label), so only
    # p4d (a100) and p5 (h100) remain
    assert [t.name for t in pool.instance_types] == ["p4d.24xlarge", "p5.48xlarge"]


def test_run_reports_karpenters_reason_for_a_gfd_selector(tmp_path, capsys):
    path = tmp_path / "pool.yaml"
    path.write_text(POOL)
    assert main(["run", str(path), "--output", str(tmp_path / "out"), "--quiet"]) == 0
    capsys.readouterr()
    with open(tmp_path / "out" / "pods.csv") as fh:
        (row,) = csv.DictReader(fh)
    assert row["first_bound_s"] == "" and row["reason"] == (
        'incompatible requirements, label "nvidia.com/gpu.product" does not have known values')


def test_nodepool_requirements_that_leave_no_type_are_refused(tmp_path):
    path = tmp_path / "pool.yaml"
    path.write_text(POOL.replace("values: [a100, h100]", "values: [v100]"))
    with pytest.raises(ScenarioError, match="no instance type of the catalogue meets the requirements"):
        load_scenario(path)


@pytest.mark.parametrize("resource", ["nvidia.com/mig-3g.40gb", "nvidia.com/gpu.shared"])
def test_an_extended_resource_no_instance_type_advertises_gets_no_node(tmp_path, capsys, resource):
    # An instance type offers nvidia.com/gpu; MIG profiles and shared GPUs appear only once
    # NVIDIA's device plugin runs on the node. Karpenter's resource filter (nodeclaim.go,
    # InstanceTypeFilterError: "no instance type has enough resources") launches nothing.
    path = tmp_path / "pool.yaml"
    path.write_text(POOL.replace("  nodeSelector: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-40GB}\n", "")
                    .replace('limits: {nvidia.com/gpu: "1"}', f'limits: {{{resource}: "1"}}'))
    assert load_scenario(path).unsupported == []
    assert main(["run", str(path), "--output", str(tmp_path / "out"), "--quiet"]) == 0
    capsys.readouterr()
    with open(tmp_path / "out" / "pods.csv") as fh:
        (row,) = csv.DictReader(fh)
    assert row["first_bound_s"] == "" and row["node"] == ""
    assert row["reason"] == f"no instance type has enough resources ({resource} is advertised by no instance type)"
    with open(tmp_path / "out" / "nodes.csv") as fh:
        assert list(csv.DictReader(fh)) == []


def test_a_trace_jobs_gpu_model_still_picks_the_instance_type():
    # Jobs built without Kubernetes objects (simulate --plugin autoscaler on a trace) name GPU
    # models directly (Job.gpu_models, no label requirement): the cheapest 1-GPU type of that
    # model is launched (A10G: g5.xlarge, $1.006/h), and the job binds there.
    from lab01_cluster_sim.autoscaler.plugin import Autoscaler
    from lab01_cluster_sim.model import Job
    from lab01_cluster_sim.simulate import simulate

    scaler = Autoscaler([NodePool("gpu", AWS, consolidation_policy="WhenEmpty")])
    job = Job("t", 0, 100, 1, 1000, 1000, 1024, gpu_models=("A10G",))
    rec = simulate([], [job], policy="best-fit", plugins=[scaler]).records["t"]
    assert [n.instance_type for n in scaler.nodes.values()] == ["g5.xlarge"]
    assert rec.start_time == 75.0     # 60 s boot + 15 s device plugin registration
