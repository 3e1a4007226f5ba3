"""Eviction that takes time: a preempted pod's ``terminationGracePeriodSeconds`` keeps its GPUs
held after preemption, delaying the preemptor's start (Kubernetes docs, "Pod Priority and
Preemption", "Graceful termination of preemption victims"); meanwhile the preemptor waits
for its victims instead of preempting more (kube-scheduler's PodEligibleToPreemptOthers).
Built on scenarios/disciplines-priority.yaml (one 8-GPU node; batch 8 GPUs 1000 s at t=0;
urgent 4 GPUs 100 s at t=10, higher priority)."""

from __future__ import annotations

import pytest

from conftest import REPO_ROOT
from lab01_cluster_sim.model import TERMINATION_GRACE
from lab01_cluster_sim.scenario import ScenarioError, load_scenario
from lab01_cluster_sim.simulate import simulate

BASE = (REPO_ROOT / "scenarios" / "disciplines-priority.yaml").read_text()
BATCH_SPEC = "    spec:\n      priorityClassName: batch-low\n"


def _run(tmp_path, text: str):
    path = tmp_path / "s.yaml"
    path.write_text(text)
    sc = load_scenario(path)
    result = simulate(sc.nodes, sc.jobs, policy="best-fit", discipline="priority")
    return sc, {r.job_id: r for r in result.records.values()}


def _with_grace(text: str, seconds: int) -> str:
    return text.replace(BATCH_SPEC, f"    spec:\n      terminationGracePeriodSeconds: {seconds}\n"
                                     "      priorityClassName: batch-low\n")


def test_without_grace_the_preemptor_starts_at_once(tmp_path):
    _, rec = _run(tmp_path, BASE)
    assert (rec["urgent"].start_time, rec["urgent"].end_time) == (10.0, 110.0)
    assert (rec["batch"].start_time, rec["batch"].end_time) == (0.0, 1110.0)   # restarts at 110


def test_grace_period_holds_the_victims_gpus(tmp_path):
    sc, rec = _run(tmp_path, _with_grace(BASE, 60))
    assert next(j for j in sc.jobs if j.job_id == "batch").extras[TERMINATION_GRACE] == 60.0
    # batch preempted at 10, stops computing but holds its 8 GPUs until 10 + 60 = 70;
    # urgent runs 70..170; batch (8 GPUs) restarts when urgent ends: 170..1170
    assert (rec["urgent"].start_time, rec["urgent"].end_time) == (70.0, 170.0)
    assert rec["batch"].end_time == 1170.0
    assert rec["batch"].preemptions == 1
    assert rec["batch"].lost_gpu_s == 80.0      # ran 0..10 on 8 GPUs, nothing kept


def test_preemptor_waits_for_terminating_victims_instead_of_preempting_more(tmp_path):
    # two 4-GPU batch pods (a at t=0, b at t=5), both with a 60 s grace period; urgent (4 GPUs)
    # at t=10 evicts the one losing least work: b (5 s x 4 GPUs = 20 GPU-s < a's 40); b holds
    # its GPUs until 70, and urgent does not evict a meanwhile. urgent 70..170; b back 170..1170.
    two = BASE.replace('limits: {nvidia.com/gpu: "8"}', 'limits: {nvidia.com/gpu: "4"}')
    pod_b = two[two.index("apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: batch"):two.index("---\napiVersion: v1\nkind: Pod\n"
                                                                                           "metadata:\n  name: urgent")]
    pod_b = pod_b.replace("name: batch", "name: batch-b").replace(
        'annotations: {lab01.course/duration: "1000"}',
        'annotations: {lab01.course/duration: "1000", lab01.course/submit-time: "5"}')
    text = _with_grace(two + "---\n" + pod_b, 60)
    _, rec = _run(tmp_path, text)
    assert rec["batch"].preemptions == 0 and rec["batch"].end_time == 1000.0
    assert rec["batch-b"].preemptions == 1
    assert (rec["urgent"].start_time, rec["urgent"].end_time) == (70.0, 170.0)
    assert rec["batch-b"].end_time == 1170.0


def test_negative_grace_is_refused(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(_with_grace(BASE, -1))
    with pytest.raises(ScenarioError, match="terminationGracePeriodSeconds"):
        load_scenario(path)


def test_a_victim_that_would_end_within_its_grace_period_frees_its_gpus_at_its_end(tmp_path):
    # batch runs 1000 s from 0; with 995 s of grace, preempted at 10 it would hold its GPUs until
    # 1005, but its containers end at 1000 (its natural end): the GPUs come back then, urgent
    # runs 1000..1100 (fresh tester #10: before, 1005..1105).
    _, rec = _run(tmp_path, _with_grace(BASE, 995))
    assert (rec["urgent"].start_time, rec["urgent"].end_time) == (1000.0, 1100.0)


def test_a_preempted_bare_pod_is_gone_and_a_jobs_pod_is_recreated(tmp_path):
    # kube-scheduler deletes a preemption victim (DefaultPreemption); the batch Job's controller
    # recreates its pod (above: restarts at 110), while nothing recreates a bare Pod: written
    # as a Pod, batch ends at 10, and urgent runs 10..110 alone
    pod = BASE.replace("apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: batch", "apiVersion: v1\nkind: Pod\n"
                       "metadata:\n  name: batch").replace(
        "spec:\n  template:\n    spec:\n      priorityClassName: batch-low\n      restartPolicy: Never\n"
        "      containers:\n      - name: main\n        image: trainer:v1\n        resources:\n"
        "          limits: {nvidia.com/gpu: \"8\"}\n          requests: {cpu: \"32\", memory: 256Gi}\n",
        "spec:\n  priorityClassName: batch-low\n  containers:\n  - name: main\n    image: trainer:v1\n"
        "    resources:\n      limits: {nvidia.com/gpu: \"8\"}\n      requests: {cpu: \"32\", memory: 256Gi}\n")
    sc, rec = _run(tmp_path, pod)
    assert next(j for j in sc.jobs if j.job_id == "batch").extras["kind"] == "Pod"
    assert (rec["batch"].state.value, rec["batch"].preemptions) == ("rejected", 1)
    assert rec["batch"].reason.endswith("a bare Pod is deleted for good (no controller recreates it)")
    assert (rec["urgent"].start_time, rec["urgent"].end_time) == (10.0, 110.0)
