"""scenarios/gpu-node-taints.yaml from ``python -m lab01_cluster_sim run``: kube-scheduler's
TaintToleration keeps untolerating pods off tainted GPU nodes and runs tolerating ones there,
with the numbers the file's comments work out (kube-scheduler v1.35.4,
pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go: Filter, Score,
NormalizeScore; default profile weight 3)."""

from __future__ import annotations

import csv

from conftest import REPO_ROOT
from lab01_cluster_sim.cli import main

SCENARIO = REPO_ROOT / "scenarios" / "gpu-node-taints.yaml"


def _jobs(out):
    with open(out / "jobs.csv") as fh:
        return {r["job"]: r for r in csv.DictReader(fh)}


def test_untolerating_pods_stay_off_the_tainted_gpu_node(tmp_path, capsys):
    assert main(["run", str(SCENARIO), "--output", str(tmp_path), "--quiet"]) == 0
    capsys.readouterr()
    jobs = _jobs(tmp_path)
    # CPU-only pod: gpu-0 filtered (NoSchedule), cpu-spot scored 0 (PreferNoSchedule), cpu-0 300
    assert (jobs["etl"]["state"], jobs["etl"]["placements"], jobs["etl"]["end"]) == ("completed", "cpu-0:", "600.0")
    # tolerating GPU pod: on the tainted GPU node
    assert (jobs["train"]["state"], jobs["train"]["placements"], jobs["train"]["end"]) == \
        ("completed", "gpu-0:0,1,2,3", "1200.0")
    # GPU pod without the toleration: Pending, kube-scheduler's summary
    assert jobs["no-toleration"]["state"] == "pending"
    assert jobs["no-toleration"]["reason"].endswith(
        "(0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient nvidia.com/gpu.)")


def test_without_the_prefer_no_schedule_taint_the_tie_goes_to_the_first_node(tmp_path, capsys):
    text = SCENARIO.read_text().replace('  taints: [{key: spot, value: "true", effect: PreferNoSchedule}]\n', "")
    path = tmp_path / "s.yaml"
    path.write_text(text)
    assert main(["run", str(path), "--output", str(tmp_path / "out"), "--quiet"]) == 0
    capsys.readouterr()
    assert _jobs(tmp_path / "out")["etl"]["placements"] == "cpu-spot:"


def test_taints_added_at_run_time_are_refused_by_name(tmp_path, capsys):
    # taints are static in a run: a taint's timeAdded (the node lifecycle controller's) is refused
    text = SCENARIO.read_text().replace("effect: NoSchedule}]", "effect: NoSchedule, timeAdded: \"2026-01-01T00:00:00Z\"}]",
                                        1)
    path = tmp_path / "s.yaml"
    path.write_text(text)
    assert main(["run", str(path), "--output", str(tmp_path / "out"), "--quiet"]) != 0
    err = capsys.readouterr().err
    assert "Node/gpu-0: spec.taints[0].timeAdded is not modelled (taints are static in a run, there from the start)" in err


def test_no_execute_toleration_seconds_evict_and_zero_is_refused(tmp_path, capsys):
    # a node tainted maintenance=soon:NoExecute; the pod tolerates it for 300 s: bound at 0 and
    # evicted at 300 by the taint eviction controller. A bare Pod is then gone for good: nothing
    # recreates it (Kubernetes docs, "Taints and Tolerations", taint based evictions).
    node = ("apiVersion: v1\nkind: Node\nmetadata: {name: n}\nspec:\n  taints: [{key: maintenance, value: soon, "
            "effect: NoExecute}]\nstatus: {allocatable: {cpu: '8', memory: 8Gi}}\n---\n")
    pod = ("apiVersion: v1\nkind: Pod\nmetadata: {name: p, annotations: {lab01.course/duration: '600'}}\nspec:\n"
           "  tolerations: [{key: maintenance, operator: Exists, effect: NoExecute, tolerationSeconds: SECONDS}]\n"
           "  containers: [{name: c, image: i, resources: {requests: {cpu: '1'}}}]\n---\n")
    scenario = ("apiVersion: lab01.course/v1alpha1\nkind: Scenario\nmetadata: {name: s}\n"
                "spec: {description: d}\n")
    path = tmp_path / "s.yaml"
    path.write_text(node + pod.replace("SECONDS", "300") + scenario)
    assert main(["run", str(path), "--output", str(tmp_path / "out"), "--quiet"]) == 0
    capsys.readouterr()
    row = _jobs(tmp_path / "out")["p"]
    assert (row["state"], row["start"], row["preemptions"]) == ("rejected", "0.0", "1")
    assert row["reason"].startswith("evicted and not requeued: evicted by the taint eviction controller after 300s")
    path.write_text(node + pod.replace("SECONDS", "0") + scenario)
    assert main(["run", str(path), "--output", str(tmp_path / "out2"), "--quiet"]) != 0
    err = capsys.readouterr().err
    assert "s.yaml:12:92: Pod/p: tolerationSeconds <= 0 is not modelled (the pod would be evicted" in err


def test_a_jobs_pod_evicted_by_a_no_execute_taint_is_recreated_until_its_backoff_limit(tmp_path, capsys):
    # the same node; a Job (backoffLimit 1) whose pod tolerates the taint for 300 s and needs
    # 600 s: bound at 0, evicted at 300 (1 failed pod <= 1: recreated, bound again at once),
    # evicted at 600 (2 failed pods > 1): the Job fails, BackoffLimitExceeded (Kubernetes docs,
    # "Jobs", "Pod backoff failure policy"; disruptions count as failures, "Pod failure
    # policy"). The run ends on its own (it used to loop forever without an `until`).
    node = ("apiVersion: v1\nkind: Node\nmetadata: {name: n}\nspec:\n  taints: [{key: maintenance, value: soon, "
            "effect: NoExecute}]\nstatus: {allocatable: {cpu: '8', memory: 8Gi}}\n---\n")
    job = ("apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, annotations: {lab01.course/duration: '600'}}\n"
           "spec:\n  backoffLimit: 1\n  template:\n    spec:\n      restartPolicy: Never\n"
           "      tolerations: [{key: maintenance, operator: Exists, effect: NoExecute, tolerationSeconds: 300}]\n"
           "      containers: [{name: c, image: i, resources: {requests: {cpu: '1'}}}]\n---\n")
    scenario = "apiVersion: lab01.course/v1alpha1\nkind: Scenario\nmetadata: {name: s}\nspec: {description: d}\n"
    path = tmp_path / "s.yaml"
    path.write_text(node + job + scenario)
    assert main(["run", str(path), "--output", str(tmp_path / "out"), "--quiet"]) == 0
    capsys.readouterr()
    row = _jobs(tmp_path / "out")["j"]
    assert (row["state"], row["start"], row["preemptions"]) == ("rejected", "0.0", "2")
    assert "BackoffLimitExceeded (2 evictions, each a failed pod, above its backoffLimit 1)" in row["reason"]
