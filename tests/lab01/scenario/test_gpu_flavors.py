"""Kueue's flavor assignment from real objects: a pod template's nodeSelector, required node
affinity and tolerations reach the workload; the example scenario kueue-gpu-flavors runs
with the values worked out in its comments; creationTimestamp and the file order set the
queue order; flavorFungibility.preference is read (issue 17, section 3)."""

from __future__ import annotations

import csv

import pytest

from conftest import REPO_ROOT
from lab01_cluster_sim.corev1 import MatchExpression, NodeSelectorTerm, Toleration
from lab01_cluster_sim.admission.plugin import workload_of
from lab01_cluster_sim.cli import main
from lab01_cluster_sim.scenario import ScenarioError, load_scenario

SCENARIO = REPO_ROOT / "scenarios" / "kueue-gpu-flavors.yaml"
A100, H100 = "NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3"


def _rows(path, name):
    with open(path / name) as fh:
        return list(csv.DictReader(fh))


def test_selector_and_tolerations_reach_the_workload():
    sc = load_scenario(SCENARIO)
    jobs = {j.job_id: j for j in sc.jobs}
    (ps,) = workload_of(jobs["ml/eval-h100"]).pod_sets
    # The issue's repro: nvidia.com/gpu.product used to be taken out of the selector before
    # flavor assignment, so the workload was charged to the first flavor with room (a100).
    assert dict(ps.node_selector) == {"nvidia.com/gpu.product": H100}
    assert ps.tolerations == (Toleration("nvidia.com/gpu", "Exists", "", "NoSchedule"),)
    assert jobs["ml/eval-h100"].gpu_models == (H100,)
    assert sc.unsupported == []


def test_kueue_gpu_flavors_runs_as_worked_out(tmp_path, capsys):
    assert main(["run", str(SCENARIO), "--output", str(tmp_path), "--quiet"]) == 0
    capsys.readouterr()
    jobs = {r["job"]: r for r in _rows(tmp_path, "jobs.csv")}
    got = {name: (r["state"], r["start"], r["end"]) for name, r in jobs.items()}
    assert got == {
        "ml/train-a100": ("completed", "0.0", "3600.0"),
        "ml/tune": ("completed", "0.0", "1800.0"),
        "ml/train-h100": ("completed", "0.0", "1800.0"),
        "ml/etl": ("pending", "", ""),
        "ml/eval-h100": ("completed", "1800.0", "2400.0"),   # waited for h100, never took a100's quota
    }
    # each workload ran on the nodes of its flavor
    assert {n.split(":")[0] for n in jobs["ml/train-a100"]["placements"].split()} <= {"a100-0", "a100-1"}
    assert jobs["ml/eval-h100"]["placements"].startswith("h100-0:")
    reasons = {(r["time"], r["workload"]): r["reason"] for r in _rows(tmp_path, "admission.csv")}
    assert reasons[("60.0", "ml/eval-h100")] == (
        "couldn't assign flavors to pod set main: flavor a100 doesn't match node affinity, insufficient unused quota "
        "for nvidia.com/gpu in flavor h100, 4 more needed")
    assert reasons[("0.0", "ml/etl")] == (
        "couldn't assign flavors to pod set main: untolerated taint {nvidia.com/gpu present NoSchedule <nil>} in "
        "flavor a100, untolerated taint {nvidia.com/gpu present NoSchedule <nil>} in flavor h100")


QUEUE = """apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: f}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: q}
spec:
  namespaceSelector: {}
  queueingStrategy: StrictFIFO
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: f
      resources: [{name: nvidia.com/gpu, nominalQuota: 2}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq, namespace: default}
spec: {clusterQueue: q}
---
apiVersion: v1
kind: Node
metadata: {name: n0}
status: {allocatable: {cpu: "8", memory: 64Gi, nvidia.com/gpu: "2"}}
"""


def _pod(name: str, extra_meta: str = "", spec: str = "", queue: bool = True) -> str:
    labels = "  labels: {kueue.x-k8s.io/queue-name: lq}\n" if queue else ""
    return (f"---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n{labels}"
            f"  annotations: {{lab01.course/duration: \"100\"}}\n{extra_meta}spec:\n{spec}  containers:\n  - name: c\n"
            "    image: x\n    resources: {limits: {nvidia.com/gpu: \"2\"}}\n")


def _first_admitted(tmp_path, text):
    path = tmp_path / "s.yaml"
    path.write_text(text)
    assert main(["run", str(path), "--output", str(tmp_path / "out"), "--quiet"]) == 0
    rows = _rows(tmp_path / "out", "jobs.csv")
    return [r["job"] for r in sorted(rows, key=lambda r: float(r["start"]))]


def test_equal_workloads_run_in_file_order_not_name_order(tmp_path, capsys):
    # zeta is listed before alpha; both ask the whole 2-GPU quota at t=0. Kueue orders by
    # creationTimestamp, then UID (baseCompareFunc); the file order stands for the UID.
    assert _first_admitted(tmp_path, QUEUE + _pod("zeta") + _pod("alpha")) == ["zeta", "alpha"]
    capsys.readouterr()


def test_creation_timestamp_orders_the_queue(tmp_path, capsys):
    late = "  creationTimestamp: \"2026-01-05T10:00:00Z\"\n"
    early = "  creationTimestamp: \"2026-01-05T09:30:00+00:00\"\n"
    assert _first_admitted(tmp_path, QUEUE + _pod("zeta", late) + _pod("alpha", early)) == ["alpha", "zeta"]
    capsys.readouterr()


def test_without_kueue_creation_timestamp_does_not_reorder_the_scheduling_queue(tmp_path, capsys):
    # Without Kueue the pods go straight to kube-scheduler, whose PrioritySort orders its activeQ
    # by priority, then by the time each pod entered the scheduling queue (Kubernetes v1.35.4,
    # pkg/scheduler/framework/plugins/queuesort/priority_sort.go, Less; the timestamp is set in
    # newQueuedPodInfo, pkg/scheduler/backend/queue/scheduling_queue.go), never by
    # creationTimestamp. zeta (created 10:00) is listed before alpha (created 09:30); both arrive
    # at t=0 and need the node's 2 GPUs for 100 s: zeta runs 0..100, alpha 100..200. Through Kueue
    # (the test above) the same pods start alpha first.
    late = "  creationTimestamp: \"2026-01-05T10:00:00Z\"\n"
    early = "  creationTimestamp: \"2026-01-05T09:30:00Z\"\n"
    node = "---\n" + QUEUE.split("---\n")[-1]
    path = tmp_path / "s.yaml"
    path.write_text(node + _pod("zeta", late, queue=False) + _pod("alpha", early, queue=False))
    assert main(["run", str(path), "--output", str(tmp_path / "out"), "--quiet"]) == 0
    capsys.readouterr()
    starts = {r["job"]: (r["start"], r["end"]) for r in _rows(tmp_path / "out", "jobs.csv")}
    assert starts == {"zeta": ("0.0", "100.0"), "alpha": ("100.0", "200.0")}


def test_bad_creation_timestamp_is_one_line(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(QUEUE + _pod("p", "  creationTimestamp: \"yesterday\"\n"))   # line 33: QUEUE is 25 lines
    with pytest.raises(ScenarioError) as exc:
        load_scenario(path)
    assert str(exc.value) == (f"{path}:33:22: Pod/p: metadata.creationTimestamp: expected an RFC 3339 date-time such "
                              "as 2026-01-05T09:30:00Z, got 'yesterday'")


AFFINITY = """  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions:
          - {key: nvidia.com/gpu.product, operator: In, values: [A100, H100]}
"""


def test_required_affinity_on_the_gpu_model_reaches_kueue_and_the_engine(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(QUEUE + _pod("p", spec=AFFINITY))
    sc = load_scenario(path)
    (job,) = sc.jobs
    assert job.gpu_models == ("A100", "H100")
    (ps,) = workload_of(job).pod_sets
    assert ps.affinity == (NodeSelectorTerm((MatchExpression("nvidia.com/gpu.product", "In", ("A100", "H100")),)),)
    assert sc.unsupported == []


def test_other_required_affinity_is_read_by_kueue_and_placed_by_node_affinity(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(QUEUE + _pod("p", spec=AFFINITY.replace("nvidia.com/gpu.product", "topology.kubernetes.io/zone")))
    sc = load_scenario(path)
    (ps,) = workload_of(sc.jobs[0]).pod_sets
    assert ps.affinity[0].expressions[0].key == "topology.kubernetes.io/zone"
    assert sc.jobs[0].gpu_models == ()      # any model: kube-scheduler's NodeAffinity filters by the zone
    assert sc.unsupported == []


def _preference_queue(borrow: str) -> str:
    return QUEUE.replace("  queueingStrategy: StrictFIFO\n", f"  flavorFungibility: {{whenCanBorrow: {borrow}, "
                         "whenCanPreempt: TryNextFlavor, preference: PreemptionOverBorrowing}\n")


def test_flavor_fungibility_preference_is_read(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(_preference_queue("TryNextFlavor"))
    (cq,) = load_scenario(path).kueue.cluster_queues
    assert cq.flavor_fungibility.preference.value == "PreemptionOverBorrowing"


def test_preference_needs_both_policies_try_next_flavor(tmp_path):
    # the v1beta2 CRD's x-kubernetes-validations rule on flavorFungibility
    path = tmp_path / "s.yaml"
    path.write_text(_preference_queue("MayStopSearch"))
    with pytest.raises(ScenarioError) as exc:
        load_scenario(path)
    assert str(exc.value).endswith("ClusterQueue/q: spec.flavorFungibility.preference: preference can only be set "
                                   "when both whenCanBorrow and whenCanPreempt are TryNextFlavor (the CRD's "
                                   "validation rule)")


def test_preference_accepted_when_when_can_preempt_is_left_to_its_default(tmp_path):
    # the apiserver defaults whenCanPreempt to TryNextFlavor before the CRD's CEL rule runs,
    # so {whenCanBorrow: TryNextFlavor, preference: ...} is a valid ClusterQueue
    path = tmp_path / "s.yaml"
    path.write_text(QUEUE.replace("  queueingStrategy: StrictFIFO\n", "  flavorFungibility: {whenCanBorrow: "
                                  "TryNextFlavor, preference: BorrowingOverPreemption}\n"))
    (cq,) = load_scenario(path).kueue.cluster_queues
    assert cq.flavor_fungibility.when_can_preempt.value == "TryNextFlavor"
    assert cq.flavor_fungibility.preference.value == "BorrowingOverPreemption"


def test_toleration_seconds_is_read_and_a_bad_operator_refused(tmp_path):
    path = tmp_path / "s.yaml"
    tol = "  tolerations: [{key: k, operator: Exists, effect: NoExecute, tolerationSeconds: 30}]\n"
    path.write_text(QUEUE + _pod("p", spec=tol))
    sc = load_scenario(path)
    assert sc.unsupported == []
    assert sc.jobs[0].extras["tolerations"] == (Toleration("k", "Exists", "", "NoExecute", 30.0),)
    path.write_text(QUEUE + _pod("p", spec="  tolerations: [{key: k, operator: Gt, value: \"3\"}]\n"))
    with pytest.raises(ScenarioError, match=r"spec\.tolerations\[0\]: toleration 'k': operator must be Equal or "
                                            r"Exists, got 'Gt' \(Lt and Gt are alpha"):
        load_scenario(path)


