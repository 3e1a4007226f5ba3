"""A JobSet (jobset.x-k8s.io/v1alpha2, JobSet v0.11.1) read as one multi-role gang (issue 17):
one role per replicatedJob, ``replicas x parallelism`` workers each, as Kueue v0.17.0 builds
its pod sets (``pkg/controller/jobs/jobset/jobset_controller.go``, ``JobSet.PodSets`` and
``podsCount``); each template read by the batch Job's rules; every refusal one line naming
file:line:column, ``JobSet/name`` and the full field path."""

from __future__ import annotations

import pytest

from conftest import REPO_ROOT
from lab01_cluster_sim.corev1 import Toleration
from lab01_cluster_sim.model import GangRole
from lab01_cluster_sim.scenario import ScenarioError, load_scenario

# line numbers of JOBSET, for the positions below
JOBSET = """\
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: train
  annotations: {lab01.course/duration: "600"}
spec:
  replicatedJobs:
  - name: launcher
    template:
      spec:
        template:
          spec:
            containers:
            - name: c
              image: i
              resources: {requests: {cpu: "2", memory: 4Gi}}
  - name: workers
    replicas: 2
    template:
      spec:
        parallelism: 3
        template:
          spec:
            nodeSelector: {nvidia.com/gpu.product: H100}
            tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
            containers:
            - name: c
              image: i
              resources: {limits: {nvidia.com/gpu: "2"}, requests: {cpu: "8", memory: 32Gi}}
"""
GPU_TOLERATION = Toleration("nvidia.com/gpu", "Exists", "", "NoSchedule", None)


def _lines(text: str, after: int, insert: str) -> str:
    """``text`` with ``insert`` (whole lines) placed after line ``after`` (1-based)."""
    lines = text.splitlines(keepends=True)
    return "".join(lines[:after]) + insert + "".join(lines[after:])


def _load(tmp_path, text: str):
    p = tmp_path / "s.yaml"
    p.write_text(text)
    return load_scenario(p)


def _error(tmp_path, text: str) -> str:
    p = tmp_path / "s.yaml"
    p.write_text(text)
    with pytest.raises(ScenarioError) as exc:
        load_scenario(p)
    msg = str(exc.value)
    assert "\n" not in msg
    return msg.replace(str(p), "FILE")


def _refusals(tmp_path, text: str) -> list[str]:
    p = tmp_path / "s.yaml"
    p.write_text(text)
    return [u.replace(str(p), "FILE") for u in load_scenario(p).unsupported]


# -- reading ----------------------------------------------------------------------------------------
def test_each_replicated_job_is_one_role_of_replicas_times_parallelism_workers(tmp_path):
    launcher, workers = _load(tmp_path, JOBSET).jobs
    assert launcher.job_id == "train-launcher" and workers.job_id == "train-workers"
    assert launcher.role == GangRole("train", "launcher", 0, 2)
    assert workers.role == GangRole("train", "workers", 1, 2)
    # launcher: 1 replica x parallelism 1; 2 CPUs, 4 GiB = 4,096 MiB, no GPU, no constraint
    assert (launcher.workers, launcher.gpus_per_worker, launcher.gpu_milli, launcher.cpu_milli,
            launcher.memory_mib, launcher.gpu_models) == (1, 0, 0, 2000, 4096, ())
    assert "node_selector" not in launcher.extras and "tolerations" not in launcher.extras
    # workers: 2 replicas x parallelism 3 = 6 pods of 2 whole GPUs, 8 CPUs, 32 GiB = 32,768 MiB
    assert (workers.workers, workers.gpus_per_worker, workers.gpu_milli, workers.cpu_milli,
            workers.memory_mib, workers.gpu_models) == (6, 2, 1000, 8000, 32768, ("H100",))
    assert workers.extras["node_selector"] == (("nvidia.com/gpu.product", "H100"),)
    assert workers.extras["tolerations"] == (GPU_TOLERATION,)
    # the JobSet's annotations for both roles: arrive together at 0, run 600 s each
    assert [(j.submit_time, j.duration, j.priority, j.extras["kind"]) for j in (launcher, workers)] == \
        [(0.0, 600.0, 0, "JobSet"), (0.0, 600.0, 0, "JobSet")]


def test_completions_below_parallelism_run_that_many_pods_per_replica(tmp_path):
    # parallelism 3, completions 2: the Job controller never runs more pods than completions
    # still needed (Kubernetes docs, "Jobs", Controlling parallelism), and Kueue counts
    # replicas x min(parallelism, completions) (jobset_controller.go PodsCountPerReplica):
    # 2 x 2 = 4 workers, in one wave; it was refused as "a Job running in waves"
    text = JOBSET.replace("        parallelism: 3\n", "        parallelism: 3\n        completions: 2\n")
    scenario = _load(tmp_path, text)
    assert scenario.unsupported == []
    assert [j.workers for j in scenario.jobs] == [1, 4]


def test_completions_above_parallelism_are_waves_named_at_the_field(tmp_path):
    # parallelism 3, completions 6: two waves of 3 pods, not modelled; "        completions: "
    # is 21 characters, the value at column 22 of line 22
    text = JOBSET.replace("        parallelism: 3\n", "        parallelism: 3\n        completions: 6\n")
    assert _refusals(tmp_path, text) == [
        "FILE:22:22: JobSet/train: spec.replicatedJobs[1].template.spec.completions: completions (6) > "
        "parallelism (3): a Job running in waves is not modelled"]


def test_a_template_annotation_overrides_the_jobsets_for_its_role(tmp_path):
    text = _lines(JOBSET, 19, '      metadata: {annotations: {lab01.course/duration: "1200"}}\n')
    launcher, workers = _load(tmp_path, text).jobs
    assert (launcher.duration, workers.duration) == (600.0, 1200.0)


def test_namespace_creation_time_and_position_are_the_jobsets(tmp_path):
    node = "apiVersion: v1\nkind: Node\nmetadata: {name: n0}\nstatus: {allocatable: {cpu: '8', memory: 8Gi}}\n---\n"
    text = node + JOBSET.replace("  name: train\n", "  name: train\n  namespace: ml\n"
                                 "  creationTimestamp: '2026-01-05T09:30:00Z'\n")
    sc = _load(tmp_path, text)
    assert [j.job_id for j in sc.jobs] == ["ml/train-launcher", "ml/train-workers"]
    assert {j.role.gang for j in sc.jobs} == {"ml/train"} and {j.tenant for j in sc.jobs} == {"ml"}
    # 2026-01-05T09:30:00Z: 20,454 days after 1970-01-01 to 2026-01-01, 4 more days, 9.5 h
    assert [j.extras["creation_timestamp"] for j in sc.jobs] == [1_767_605_400.0] * 2
    assert [j.extras["position"] for j in sc.jobs] == [1, 1]   # the JobSet is the file's second object


def test_the_workload_priority_class_is_the_jobsets_label(tmp_path):
    # Kueue reads kueue.x-k8s.io/priority-class on the JobSet (jobframework.WorkloadPriorityClassName)
    wpc = "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata: {name: urgent}\nvalue: 900\n"
    text = JOBSET.replace("  name: train\n", "  name: train\n  labels: {kueue.x-k8s.io/priority-class: urgent}\n") + wpc
    assert [j.priority for j in _load(tmp_path, text).jobs] == [900, 900]


def test_a_jobset_of_one_replicated_job_is_a_plain_gang(tmp_path):
    text = JOBSET.split("  - name: workers\n")[0].replace("  - name: launcher\n", "  - name: w\n    replicas: 4\n")
    text = text.replace("      spec:\n        template:", "      spec:\n        parallelism: 2\n        template:")
    (job,) = _load(tmp_path, text).jobs
    assert (job.job_id, job.workers, job.role) == ("train-w", 8, None)   # 4 replicas x parallelism 2


def test_the_example_scenario_is_read_as_written_in_its_comments():
    sc = load_scenario(REPO_ROOT / "scenarios" / "jobset-training.yaml")
    assert [(j.job_id, j.submit_time, j.duration, j.workers, j.gpus_per_worker, j.cpu_milli, j.memory_mib)
            for j in sc.jobs] == [
        ("ml/finetune", 0.0, 1800.0, 1, 8, 8000, 65536),
        ("ml/train-launcher", 60.0, 3600.0, 1, 0, 4000, 8192),
        ("ml/train-workers", 60.0, 3600.0, 4, 4, 8000, 65536),   # 2 replicas x parallelism 2
        ("ml/etl", 120.0, 600.0, 1, 0, 8000, 16384),
    ]
    launcher, workers = sc.jobs[1:3]
    assert (launcher.role, workers.role) == (GangRole("ml/train", "launcher", 0, 2), GangRole("ml/train", "workers", 1, 2))
    assert {j.extras["kueue.x-k8s.io/queue-name"] for j in sc.jobs} == {"training"}
    assert "tolerations" not in launcher.extras and workers.extras["tolerations"] == (GPU_TOLERATION,)
    assert sc.unsupported == []


# -- bad input: one line, file:line:column, JobSet/name, the full path --------------------------------
@pytest.mark.parametrize("edit,expected", [
    # a template is a batch/v1 JobTemplateSpec, checked by Kubernetes 1.35's strict schema: the key
    # "resourcez" on line 29 after 14 spaces
    (lambda t: t.replace("              resources: {limits", "              resourcez: {limits"),
     "FILE:29:15: JobSet/train: spec.replicatedJobs[1].template.spec.template.spec.containers[0].resourcez: unknown "
     "field (did you mean 'resources'? expected one of: "),
    # the JobSet's own fields: the reader's schema (line 18, after 4 spaces)
    (lambda t: t.replace("    replicas: 2", "    replica: 2"),
     "FILE:18:5: JobSet/train: spec.replicatedJobs[1].replica: unknown field (did you mean 'replicas'? expected one "
     "of: dependsOn, groupName, name, replicas, template)"),
    # the CRD keeps only five fields of an embedded metadata: "      metadata: {" is 17 characters
    (lambda t: _lines(t, 19, "      metadata: {uid: abc}\n"),
     "FILE:20:18: JobSet/train: spec.replicatedJobs[1].template.metadata.uid: unknown field (the JobSet CRD keeps of "
     "an embedded metadata only: annotations, finalizers, labels, name, namespace)"),
    # '      metadata: {annotations: {lab01.course/submit-time: ' is 6 + 10 + 1 + 13 + 1 + 26 = 57 characters
    (lambda t: _lines(t, 19, '      metadata: {annotations: {lab01.course/submit-time: "5"}}\n'),
     "FILE:20:58: JobSet/train: spec.replicatedJobs[1].template.metadata.annotations.lab01.course/submit-time: a "
     "JobSet's roles arrive together: give lab01.course/submit-time on the JobSet's metadata.annotations"),
    # a course annotation on a pod template would be ignored: refused, naming where it is read.
    # '          metadata: {annotations: {lab01.course/gpu-milli: ' is 10 + 10 + 1 + 13 + 1 + 24 = 59 characters
    (lambda t: _lines(t, 22, '          metadata: {annotations: {lab01.course/gpu-milli: "500"}}\n'),
     "FILE:23:60: JobSet/train: spec.replicatedJobs[1].template.spec.template.metadata.annotations.lab01.course/"
     "gpu-milli: lab01.course/gpu-milli is read on the workload's metadata, not on its pod template; move it to "
     "spec.replicatedJobs[1].template.metadata.annotations"),
    # JobSet's webhook: names unique ("  - name: " is 10 characters), child Job names DNS-1035 labels
    (lambda t: t.replace("  - name: workers", "  - name: launcher"),
     "FILE:17:11: JobSet/train: spec.replicatedJobs[1].name: Duplicate value 'launcher' (replicatedJobs are a map "
     "keyed by name)"),
    (lambda t: t.replace("  - name: workers", "  - name: " + "w" * 60),
     "FILE:17:11: JobSet/train: spec.replicatedJobs[1].name: the child Job name 'train-" + "w" * 60 + "-1' is longer "
     "than 63 characters; JobSet names its Jobs <JobSet>-<replicatedJob>-<index>"),
    (lambda t: t.replace("  - name: workers", "  - name: Workers"),
     "FILE:17:11: JobSet/train: spec.replicatedJobs[1].name: the child Job name 'train-Workers-1' is not a DNS-1035 "
     "label (lower-case letters, digits and '-', starting with a letter and ending with a letter or digit); JobSet "
     "names its Jobs <JobSet>-<replicatedJob>-<index>"),
    # "    replicas: " is 14 characters
    (lambda t: t.replace("    replicas: 2", "    replicas: 0"),
     "FILE:18:15: JobSet/train: spec.replicatedJobs[1].replicas: expected >= 1 (a replicatedJob of 0 replicas never "
     "runs)"),
    # a template with no pod spec (the schemas allow it; the Job JobSet would create needs it): after
    # "    template: " (14 characters), the nearest position of the missing path
    (lambda t: t.replace(t[t.index("    template:\n"):t.index("  - name: workers")], "    template: {}\n"),
     "FILE:9:15: JobSet/train: spec.replicatedJobs[0].template.spec.template.spec: expected the pods' spec (an object "
     "with containers), got none"),
    # '  successPolicy: {operator: All, targetReplicatedJobs: [' is 17 + 1 + 15 + 22 + 1 = 56 characters
    (lambda t: t + "  successPolicy: {operator: All, targetReplicatedJobs: [wrkrs]}\n",
     "FILE:30:57: JobSet/train: spec.successPolicy.targetReplicatedJobs[0]: invalid replicatedJob name 'wrkrs': it "
     "does not appear in spec.replicatedJobs"),
    # the model's bound on workers, named at the larger factor (replicas here, not the
    # parallelism of 3): 400,000 x 3 = 1,200,000 > 1,000,000
    (lambda t: t.replace("    replicas: 2", "    replicas: 400000"),
     "FILE:18:15: JobSet/train: spec.replicatedJobs[1].replicas: expected at most 1,000,000 workers, "
     "got replicas x parallelism (400,000 x 3)"),
    (lambda t: t.split("  replicatedJobs:")[0] + "  replicatedJobs: []\n",
     "FILE:7:3: JobSet/train: spec: a JobSet needs at least one replicatedJob (one with none runs no pod)"),
    # JobSet v0.11.1's webhook (pkg/webhooks/jobset_webhook.go): validateCoordinator and
    # validateFailurePolicy; the appended line is line 30, "  coordinator: {replicatedJob: " is
    # 31 characters, "  failurePolicy: {rules: [{name: r, action: FailJobSet, targetReplicatedJobs: [" 79
    (lambda t: t + "  coordinator: {replicatedJob: trainer}\n",
     "FILE:30:32: JobSet/train: spec.coordinator.replicatedJob: coordinator replicatedJob 'trainer' does not exist "
     "in spec.replicatedJobs"),
    (lambda t: t + "  coordinator: {replicatedJob: workers, jobIndex: 2}\n",
     "FILE:30:51: JobSet/train: spec.coordinator.jobIndex: coordinator job index 2 is invalid for replicatedJob "
     "'workers' of 2 replicas (expected 0..1)"),
    (lambda t: t + "  failurePolicy: {rules: [{name: r, action: FailJobSet, targetReplicatedJobs: [wrkrs]}]}\n",
     "FILE:30:80: JobSet/train: spec.failurePolicy.rules[0].targetReplicatedJobs[0]: invalid replicatedJob name "
     "'wrkrs': it does not appear in spec.replicatedJobs"),
    (lambda t: t + "  failurePolicy: {rules: [{name: r, action: FailJobSet}, {name: r, action: FailJobSet}]}\n",
     "FILE:30:65: JobSet/train: spec.failurePolicy.rules[1].name: rule names are not unique: rules 0 and 1 are both "
     "named 'r'"),
], ids=["template-unknown-field", "own-unknown-field", "embedded-metadata", "template-submit-time", "pod-template-course-key", "duplicate-name",
        "child-name-too-long", "child-name-not-dns1035", "zero-replicas", "no-pod-spec", "unknown-success-target", "too-many-workers", "no-replicated-jobs",
        "coordinator-unknown-job", "coordinator-job-index", "failure-rule-unknown-target", "failure-rule-name-twice"])
def test_bad_jobsets_are_one_line_naming_the_full_path(tmp_path, edit, expected):
    msg = _error(tmp_path, edit(JOBSET))
    assert msg.startswith(expected) if expected.endswith(": ") else msg == expected


def test_more_than_eight_replicated_jobs_is_refused_at_the_ninth(tmp_path):
    role = "  - {name: r%d, template: {spec: {template: {spec: {containers: [{name: c, image: i}]}}}}}\n"
    text = JOBSET.split("  replicatedJobs:\n")[0] + "  replicatedJobs:\n" + "".join(role % i for i in range(9))
    # the ninth item is on line 8 + 8 = 16, its mapping after "  - "
    assert _error(tmp_path, text) == ("FILE:16:5: JobSet/train: spec.replicatedJobs[8]: at most 8 replicatedJobs (Kueue "
                                      "admits a JobSet as one Workload of one pod set each, and a Workload has at most "
                                      "8), got 9")


# -- refused as not modelled: listed by `run --check`, `run` refuses ------------------------------------
@pytest.mark.parametrize("edit,expected", [
    # "  startupPolicy: {startupPolicyOrder: " is 17 + 1 + 20 = 38 characters
    (lambda t: t + "  startupPolicy: {startupPolicyOrder: InOrder}\n",
     "FILE:30:39: JobSet/train: spec.startupPolicy.startupPolicyOrder: the value 'InOrder' is not modelled (modelled: "
     "'AnyOrder'; the engine starts a JobSet's roles together, all-or-nothing)"),
    (lambda t: _lines(t, 18, "    dependsOn: [{name: launcher, status: Ready}]\n"),
     "FILE:19:16: JobSet/train: spec.replicatedJobs[1].dependsOn is not modelled (the engine starts a JobSet's roles "
     "together, not one after another is Ready or Complete)"),
    (lambda t: t + "  successPolicy: {operator: Any, targetReplicatedJobs: [workers]}\n",
     "FILE:30:18: JobSet/train: spec.successPolicy: a success policy other than JobSet's default (operator All over "
     "every replicatedJob) is not modelled (the simulated JobSet succeeds when all its roles complete)"),
    (lambda t: t + "  managedBy: kueue.x-k8s.io/multikueue\n",
     "FILE:30:14: JobSet/train: spec.managedBy: the value 'kueue.x-k8s.io/multikueue' is not modelled (modelled: "
     "'jobset.sigs.k8s.io/jobset-controller'; another manager (MultiKueue) is not modelled)"),
    (lambda t: t + "  volumeClaimPolicies: [{templates: [{metadata: {name: cache}}]}]\n",
     "FILE:30:24: JobSet/train: spec.volumeClaimPolicies is not modelled (persistent volume claims (kube-scheduler's "
     "VolumeBinding) are not modelled)"),
    (lambda t: t + "status: {restarts: 1}\n",
     "FILE:30:9: JobSet/train: status is not modelled (the simulator starts every object anew; a status is not "
     "modelled)"),
    # the templates follow the batch Job's table: "        activeDeadlineSeconds: " is 31 characters
    (lambda t: _lines(t, 20, "        activeDeadlineSeconds: 60\n"),
     "FILE:21:32: JobSet/train: spec.replicatedJobs[1].template.spec.activeDeadlineSeconds is not modelled (a pod or "
     "Job killed at a deadline is not modelled)"),
    # ... and their pod templates the Pod's: "            topologySpreadConstraints: " is 39 characters
    (lambda t: _lines(t, 23, "            topologySpreadConstraints: [{maxSkew: 1, topologyKey: zone, "
                             "whenUnsatisfiable: DoNotSchedule}]\n"),
     "FILE:24:40: JobSet/train: spec.replicatedJobs[1].template.spec.template.spec.topologySpreadConstraints is not "
     "modelled (kube-scheduler's PodTopologySpread is not modelled)"),
    # Kueue reads the queue on the JobSet: '      metadata: {labels: {kueue.x-k8s.io/queue-name: ' is 53 characters
    (lambda t: _lines(t, 19, "      metadata: {labels: {kueue.x-k8s.io/queue-name: q}}\n"),
     "FILE:20:54: JobSet/train: kueue.x-k8s.io/queue-name on a replicatedJob's template is not modelled: Kueue reads a "
     "JobSet's queue and priority class from the JobSet's own metadata.labels; put it there"),
    # once per JobSet although both roles read it: '  annotations: {lab01.course/duration: "600", ' is 46 characters
    (lambda t: t.replace('"600"}', '"600", kueue.x-k8s.io/job-min-parallelism: "1"}'),
     "FILE:5:83: JobSet/train: kueue.x-k8s.io/job-min-parallelism on a JobSet is not modelled (Kueue reads it on a "
     "batch Job only; a JobSet is admitted whole)"),
    (lambda t: t.replace('"600"}', '"600", alpha.jobset.sigs.k8s.io/exclusive-topology: rack}'),
     "FILE:5:92: JobSet/train: alpha.jobset.sigs.k8s.io/exclusive-topology: JobSet's exclusive placement is not "
     "modelled (its controller adds pod affinity and anti-affinity per topology domain)"),
    (lambda t: t + "  suspend: true\n",
     "FILE:30:12: JobSet/train: spec.suspend: suspend: true on a JobSet without kueue.x-k8s.io/queue-name is not "
     "modelled (nothing would resume it; Kueue resumes the Jobs it admits)"),
    (lambda t: _lines(t, 23, "            priorityClassName: high\n") +
     "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 1000\n",
     "FILE:8:3: JobSet/train: roles of different pod priorities (launcher 0, workers 1000) are not modelled (Kueue gives "
     "the Workload one priority, kube-scheduler preempts with each pod's own); give every replicatedJob's pods the "
     "same priorityClassName"),
], ids=["startup-in-order", "depends-on", "success-any", "managed-by", "volume-claims", "status", "template-deadline",
        "pod-topology-spread", "queue-on-template", "min-parallelism", "exclusive-topology", "suspended-without-kueue",
        "priorities-differ"])
def test_fields_a_jobset_run_would_not_honour_are_refused_by_name(tmp_path, edit, expected):
    assert _refusals(tmp_path, edit(JOBSET)) == [expected]


def test_null_labels_and_annotations_read_as_none(tmp_path):
    # the Kubernetes schemas allow null maps; they used to crash the reader (a Pod's labels: null)
    text = JOBSET.replace("  name: train\n", "  name: train\n  labels: null\n").replace(
        "    replicas: 2\n    template:\n", "    replicas: 2\n    template:\n      metadata: {annotations: null}\n")
    assert [j.workers for j in _load(tmp_path, text).jobs] == [1, 6]


def test_inert_jobset_fields_are_accepted_without_a_refusal(tmp_path):
    # the coordinator's Job must be Indexed with completions set (JobSet's validateCoordinator)
    text = JOBSET.replace("  - name: workers\n", "  - name: workers\n    groupName: trainers\n").replace(
        "    template:\n      spec:\n", "    template:\n      spec:\n        completionMode: Indexed\n"
        "        completions: 1\n", 1) + (
        "  failurePolicy: {maxRestarts: 3, restartStrategy: Recreate}\n"
        "  network: {enableDNSHostnames: true, subdomain: train}\n"
        "  coordinator: {replicatedJob: launcher}\n"
        "  ttlSecondsAfterFinished: 60\n"
        "  startupPolicy: {startupPolicyOrder: AnyOrder}\n"
        "  successPolicy: {operator: All}\n"
        "  managedBy: jobset.sigs.k8s.io/jobset-controller\n")
    sc = _load(tmp_path, text)
    assert sc.unsupported == [] and [j.workers for j in sc.jobs] == [1, 6]


# -- the example, end to end ------------------------------------------------------------------------
def _csv(path, name) -> list[dict]:
    import csv

    with open(path / name) as fh:
        return list(csv.DictReader(fh))


def test_jobset_training_runs_as_worked_out_in_its_comments(tmp_path, capsys):
    """scenarios/jobset-training.yaml, every figure worked out by hand in its comments. Kueue
    admits the JobSet as one Workload with a pod set per replicatedJob (kueue v0.17.0
    ``pkg/controller/jobs/jobset/jobset_controller.go``, ``PodSets``), assigning each pod set a
    flavor with the earlier pod sets' usage counted (``pkg/scheduler/flavorassigner``,
    ``assignFlavors``); the engine starts all its pods at once or none (the coscheduling
    plugin's ``Permit``, kubernetes-sigs/scheduler-plugins ``pkg/coscheduling/coscheduling.go``)."""
    from lab01_cluster_sim.cli import main

    assert main(["run", str(REPO_ROOT / "scenarios" / "jobset-training.yaml"), "--output", str(tmp_path),
                 "--quiet"]) == 0
    out = capsys.readouterr().out
    jobs = {r["job"]: r for r in _csv(tmp_path, "jobs.csv")}
    assert {j: (r["state"], r["start"], r["end"], r["wait"]) for j, r in jobs.items()} == {
        "ml/finetune": ("completed", "0.0", "1800.0", "0.0"),
        "ml/train-launcher": ("completed", "1800.0", "5400.0", "1740.0"),   # waits with the workers
        "ml/train-workers": ("completed", "1800.0", "5400.0", "1740.0"),
        "ml/etl": ("completed", "120.0", "720.0", "0.0"),                   # not blocked by train
    }
    nodes = {j: sorted(p.split(":")[0] for p in r["placements"].split()) for j, r in jobs.items()}
    # 16 GPUs on two 8-GPU nodes: two 4-GPU workers on each; the CPU pods on the CPU flavor's node
    assert nodes["ml/train-workers"] == ["gpu-0", "gpu-0", "gpu-1", "gpu-1"]
    assert nodes["ml/train-launcher"] == nodes["ml/etl"] == ["cpu-0"]
    rows = [(r["time"], r["workload"], r["outcome"], r["flavors"]) for r in _csv(tmp_path, "admission.csv")]
    assert rows == [
        ("0.0", "ml/finetune", "Admitted", "main=gpu"),     # the cpu flavor has 0 GPUs
        ("60.0", "ml/train", "Pending", ""),
        ("120.0", "ml/etl", "Admitted", "main=cpu"),        # untolerated taint keeps it off gpu
        ("720.0", "ml/train", "Pending", ""),               # etl's quota back: tried again
        ("1800.0", "ml/train", "Admitted", "launcher=cpu workers=gpu"),   # one Workload, a flavor per pod set
    ]
    (pending, *_) = [r["reason"] for r in _csv(tmp_path, "admission.csv") if r["outcome"] == "Pending"]
    # workers on cpu: 4 CPUs of the launcher (same attempt) + 4 x 8 > 32; on gpu: 4 x 4 = 16 GPUs, 16 - 8 = 8 free
    assert pending == ("couldn't assign flavors to pod set workers: insufficient quota for cpu in flavor cpu, "
                       "previously considered podsets requests (4) + current podset request (32) > maximum capacity "
                       "(32), insufficient unused quota for nvidia.com/gpu in flavor gpu, 8 more needed")
    assert [(r["time_s"], r["gpus"]) for r in _csv(tmp_path, "quota.csv")] == [("0.0", "8"), ("1800.0", "16"),
                                                                             ("5400.0", "0")]
    # 8 x 1,800 + 16 x 3,600 = 72,000 GPU-s of 16 x 5,400 = 86,400: 83.3 %
    assert "makespan 5,400.0 s; allocation 83.3 %" in out


def test_admission_csv_names_a_flavor_per_pod_set_or_per_resource():
    from lab01_cluster_sim.scenario.run import flavors_text

    assert flavors_text({"launcher": {"cpu": "cpu", "memory": "cpu"},
                         "workers": {"cpu": "gpu", "memory": "gpu", "nvidia.com/gpu": "gpu"}}) == "launcher=cpu workers=gpu"
    # two resource groups: the pod set's resources got different flavors
    assert flavors_text({"main": {"cpu": "default", "nvidia.com/gpu": "h100"}}) == "main=cpu:default,nvidia.com/gpu:h100"
    assert flavors_text({}) == ""


def test_check_counts_the_roles_of_a_gang(capsys):
    from lab01_cluster_sim.cli import main

    assert main(["run", str(REPO_ROOT / "scenarios" / "jobset-training.yaml"), "--check"]) == 0
    # finetune, etl and the JobSet's two roles (launcher, workers)
    assert ("4 jobs on 3 nodes (2 of them the roles of 1 multi-role gang, each placed all-or-nothing)"
            in capsys.readouterr().out)
