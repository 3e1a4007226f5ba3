"""What Kubernetes or Kueue would refuse, the reader refuses too, in one line naming
file:line:column, the object and the field (tester report findings 4-8, 15, 18); and
``run --check`` catches what ``run`` would fail on."""

from __future__ import annotations

import pytest

from conftest import REPO_ROOT
from lab01_cluster_sim.cli import main
from lab01_cluster_sim.scenario import ScenarioError, load_scenario

NODE = """apiVersion: v1
kind: Node
metadata: {name: n0}
status: {allocatable: {cpu: "8", memory: 64Gi, nvidia.com/gpu: "2"}}
---
"""


def _pod(resources: str, annotations: str = 'lab01.course/duration: "100"', name: str = "p0") -> str:
    return (f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  annotations: {{{annotations}}}\nspec:\n"
            f"  containers:\n  - name: c\n    image: x\n    resources: {resources}\n")


def _error(tmp_path, text, name="s.yaml") -> str:
    p = tmp_path / name
    p.write_text(text)
    with pytest.raises(ScenarioError) as exc:
        load_scenario(p)
    msg = str(exc.value)
    assert "\n" not in msg
    return msg.replace(str(p), "FILE")


# Lines of NODE + _pod(...): the Pod starts at line 6; "annotations" is line 10, "resources"
# line 15. Columns: "    resources: " is 15 characters, "{limits: {" 10 and "nvidia.com/gpu: " 16, so
# a limit's value starts at column 42; "{requests: {" is 12 (column 44); after
# '{limits: {nvidia.com/gpu: "1"}, requests: {' (43 characters) at column 15 + 43 + 16 + 1 = 75.
@pytest.mark.parametrize("resources,expected", [
    ('{limits: {nvidia.com/gpu: "0.5"}}',
     "FILE:15:42: Pod/p0: spec.containers[0].resources.limits.nvidia.com/gpu: must be an integer, got '0.5'"),
    ('{limits: {nvidia.com/gpu: "100m"}}',
     "FILE:15:42: Pod/p0: spec.containers[0].resources.limits.nvidia.com/gpu: must be an integer, got '100m'"),
    ('{requests: {nvidia.com/gpu: "1"}}',
     "FILE:15:44: Pod/p0: spec.containers[0].resources.requests.nvidia.com/gpu: a request of nvidia.com/gpu needs "
     "a limit"),
    ('{limits: {nvidia.com/gpu: "1"}, requests: {nvidia.com/gpu: "2"}}',
     "FILE:15:75: Pod/p0: spec.containers[0].resources.requests.nvidia.com/gpu: must equal the nvidia.com/gpu "
     "limit (1), got '2'"),
])
def test_gpu_requests_follow_the_kubernetes_rules(tmp_path, resources, expected):
    # Kubernetes docs, "Schedule GPUs": limits only (or requests equal to limits), whole GPUs
    assert _error(tmp_path, NODE + _pod(resources)).startswith(expected)


def test_gpu_limit_with_an_equal_request_is_accepted(tmp_path):
    p = tmp_path / "ok.yaml"
    p.write_text(NODE + _pod('{limits: {nvidia.com/gpu: "2"}, requests: {nvidia.com/gpu: 2, cpu: "1"}}'))
    (job,) = load_scenario(p).jobs
    assert (job.gpus_per_worker, job.cpu_milli) == (2, 1000)


def test_node_with_half_a_gpu_is_refused(tmp_path):
    text = NODE.replace('nvidia.com/gpu: "2"', 'nvidia.com/gpu: "0.5"') + _pod('{limits: {nvidia.com/gpu: "1"}}')
    assert _error(tmp_path, text).startswith(
        "FILE:4:64: Node/n0: status.allocatable.nvidia.com/gpu: must be an integer, got '0.5'")


# '  annotations: {' is 16 characters: the first key starts at column 17, a key after
# 'lab01.course/duration: "100", ' (30 characters) at column 47.
@pytest.mark.parametrize("annotations,expected", [
    ('lab01.course/duration: "100", lab01.course/submit-tme: "50"',
     "FILE:10:47: Pod/p0: metadata.annotations.lab01.course/submit-tme: unknown annotation (did you mean "
     "'lab01.course/submit-time'?"),
    ('lab01.course/duration: "100", lab01.course/gpu-mili: "500"',
     "FILE:10:47: Pod/p0: metadata.annotations.lab01.course/gpu-mili: unknown annotation (did you mean "
     "'lab01.course/gpu-milli'?"),
    ('lab01.course/duraton: "100"',
     "FILE:10:17: Pod/p0: metadata.annotations.lab01.course/duraton: unknown annotation (did you mean "
     "'lab01.course/duration'?"),
    ('lab01.course/duration: "100", kueue.x-k8s.io/job-min-paralelism: "1"',
     "FILE:10:47: Pod/p0: metadata.annotations.kueue.x-k8s.io/job-min-paralelism: unknown key; did you mean "
     "'kueue.x-k8s.io/job-min-parallelism'?"),
    ('lab01.course/duration: "1e400"',
     "FILE:10:40: Pod/p0: metadata.annotations.lab01.course/duration: '1e400' is too large a number of seconds"),
    # fresh tester #4: finite but absurd times overflowed the engine's sums (a 300-digit makespan);
    # the value of the first key starts at 17 + len('lab01.course/duration: ') = 17 + 23 = 40, of
    # submit-time (key at 47) at 47 + len('lab01.course/submit-time: ') = 47 + 26 = 73
    ('lab01.course/duration: "1e308"',
     "FILE:10:40: Pod/p0: metadata.annotations.lab01.course/duration: expected a number of seconds from 0 to "
     "1,000,000,000 (about 31.7 years) or 'inf' for a service that never ends, got '1e308'"),
    ('lab01.course/duration: "1000000000.5"',
     "FILE:10:40: Pod/p0: metadata.annotations.lab01.course/duration: expected a number of seconds from 0 to "
     "1,000,000,000"),
    ('lab01.course/duration: "100", lab01.course/submit-time: "1e300"',
     "FILE:10:73: Pod/p0: metadata.annotations.lab01.course/submit-time: expected a number of seconds from 0 to "
     "1,000,000,000 (about 31.7 years), got '1e300'"),
])
def test_misspelt_or_overflowing_annotations_are_errors(tmp_path, annotations, expected):
    assert _error(tmp_path, NODE + _pod('{limits: {nvidia.com/gpu: "1"}}', annotations)).startswith(expected)


def test_largest_times_and_a_service_are_accepted(tmp_path):
    p = tmp_path / "ok.yaml"
    p.write_text(NODE + _pod('{limits: {nvidia.com/gpu: "1"}}',
                             'lab01.course/duration: "1e9", lab01.course/submit-time: "1000000000"')
                 + "---\n" + _pod('{limits: {nvidia.com/gpu: "1"}}', 'lab01.course/duration: inf', name="svc"))
    by_id = {j.job_id: j for j in load_scenario(p).jobs}
    assert (by_id["p0"].duration, by_id["p0"].submit_time) == (1e9, 1e9)
    assert by_id["svc"].duration == float("inf")


def test_a_course_annotation_on_a_jobs_pod_template_is_refused_not_ignored(tmp_path):
    # issue 17 section 1: the reader reads lab01.course/ annotations on the Job's metadata only; a
    # gpu-milli on the pod template was accepted and ignored (the pods got a whole GPU)
    text = NODE + ("apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\n  annotations: {lab01.course/duration: "
                   "\"10\"}\nspec:\n  template:\n    metadata:\n      annotations: {lab01.course/submit-time: \"5\"}\n"
                   "    spec: {containers: [{name: c, image: x}]}\n")
    # line 5 + 9 = 14; '      annotations: {lab01.course/submit-time: ' is 6 + 13 + 1 + 26 = 46 characters
    assert _error(tmp_path, text) == ("FILE:14:47: Job/j: spec.template.metadata.annotations.lab01.course/submit-time: "
                                      "lab01.course/submit-time is read on the workload's metadata, not on its pod "
                                      "template; move it to metadata.annotations")


def test_a_job_without_a_pod_spec_is_one_line_not_a_crash(tmp_path):
    # the schemas allow spec.template.spec: null; 'spec: {template: {spec: ' is 24 characters
    text = NODE + ('apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, labels: null, annotations: '
                   '{lab01.course/duration: "1"}}\nspec: {template: {spec: null}}\n')
    assert _error(tmp_path, text) == ("FILE:9:25: Job/j: spec.template.spec: expected the pods' spec (an object with "
                                      "containers), got none")


def test_misspelt_queue_label_is_an_error(tmp_path):
    text = NODE + _pod("{}").replace("  annotations:", "  labels: {kueue.x-k8s.io/queue-nam: q}\n  annotations:")
    # the label is on line 10, its key after "  labels: {" (11 characters): column 12
    assert _error(tmp_path, text) == ("FILE:10:12: Pod/p0: metadata.labels.kueue.x-k8s.io/queue-nam: unknown key; did "
                                      "you mean 'kueue.x-k8s.io/queue-name'?")


def test_core_field_misspelt_is_an_unknown_field_not_a_missing_one(tmp_path):
    text = NODE + _pod("{}").replace("  containers:", "  container:")
    # kubernetes-validate alone reports "'containers' is a required property"
    assert _error(tmp_path, text).startswith("FILE:12:3: Pod/p0: spec.container: unknown field (did you mean "
                                             "'containers'?")


def test_pod_name_must_be_a_dns_subdomain(tmp_path):
    assert _error(tmp_path, NODE + _pod("{}", name="P_0")).startswith(
        "FILE:9:9: Pod/P_0: metadata.name: 'P_0' is not a valid name: Kubernetes names are lower-case")


def test_duplicate_resource_in_a_flavor_is_an_error(tmp_path):
    text = ("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: f}\n---\n"
            "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: cq}\nspec:\n"
            "  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n    - name: f\n      resources:\n"
            "      - {name: cpu, nominalQuota: 1}\n      - {name: cpu, nominalQuota: 2}\n")
    assert _error(tmp_path, text).startswith(
        "FILE:15:16: ClusterQueue/cq: spec.resourceGroups[0].flavors[0].resources[1].name: resource 'cpu' listed "
        "twice")


KUEUE = """apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: f}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: f
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 2}
"""
QUEUES = """apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: good, namespace: default}
spec: {clusterQueue: cq}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: bad, namespace: default}
spec: {clusterQueue: nope}
"""


def test_kueue_cross_reference_error_names_the_file_and_line_of_the_object(tmp_path):
    folder = tmp_path / "kq"
    folder.mkdir()
    (folder / "a.yaml").write_text(KUEUE)
    (folder / "zz-queues.yaml").write_text(QUEUES)
    with pytest.raises(ScenarioError) as exc:
        load_scenario(folder)
    # the bad LocalQueue is the second object of zz-queues.yaml: spec on line 9, value at column 22
    assert str(exc.value) == (f"{folder / 'zz-queues.yaml'}:9:22: LocalQueue/default/bad: spec.clusterQueue: "
                              "ClusterQueue 'nope' is not defined")


def test_job_naming_a_missing_local_queue_is_an_error(tmp_path):
    text = NODE + KUEUE + "---\n" + QUEUES.split("---\n")[0] + "---\n" + _pod(
        '{limits: {nvidia.com/gpu: "1"}}').replace("  annotations:", "  labels: {kueue.x-k8s.io/queue-name: nope}\n"
                                                   "  annotations:")
    msg = _error(tmp_path, text)
    # the Pod starts on line 26 (5 + 15 + 5 + 1); its label value on line 30, after
    # "  labels: {kueue.x-k8s.io/queue-name: " (38 characters): column 39
    assert msg == ("FILE:30:39: Pod/p0: metadata.labels.kueue.x-k8s.io/queue-name: LocalQueue 'nope' is not defined "
                   "in namespace default (LocalQueues there: good)")


SCENARIO = """apiVersion: lab01.course/v1alpha1
kind: Scenario
metadata: {name: s}
spec:
"""


# "  simulation: {" is 15 characters, so "policy: " puts its value at column 24; "  workload: {" 13.
@pytest.mark.parametrize("spec,expected", [
    ("  simulation: {policy: no-such}\n", "FILE:5:24: Scenario/s: spec.simulation.policy: unknown policy 'no-such'"),
    ("  simulation: {comparePolicies: [fgd, nope]}\n",
     "FILE:5:39: Scenario/s: spec.simulation.comparePolicies[1]: unknown policy 'nope'"),
    ("  simulation: {until: .nan}\n", "FILE:5:23: Scenario/s: spec.simulation.until: expected a finite number, got nan"),
    ("  workload: {generator: {name: synthetic, load: .nan}}\n",
     "FILE:5:49: Scenario/s: spec.workload.generator.load: expected a finite number, got nan"),
    # fresh tester 2 F2: a load under simulate's 0.001 puts arrivals past the 1e9 s time cap
    ("  workload: {generator: {name: synthetic, load: 1.0e-300}}\n",
     "FILE:5:49: Scenario/s: spec.workload.generator.load: 1e-300 is less than the minimum of 0.001"),
    ("  workload: {trace: {path: /nonexistent}}\n",
     "FILE:5:28: Scenario/s: spec.workload.trace.path: /nonexistent: does not exist"),
    ("  simulation: {until: 1.0e+300}\n",
     "FILE:5:23: Scenario/s: spec.simulation.until: 1e+300 is greater than the maximum of 1000000000"),
    # "  simulation: {" 15 + "topology: {" 11 + "maxWaitSeconds: [" 17 + "0, " 3 = 46 characters before it
    ("  simulation: {topology: {maxWaitSeconds: [0, 1.0e+308]}}\n",
     "FILE:5:47: Scenario/s: spec.simulation.topology.maxWaitSeconds[1]: 1e+308 is greater than the maximum"),
    ("  simulation: {seed: 1180591620717411303424}\n",
     "FILE:5:22: Scenario/s: spec.simulation.seed: 1180591620717411303424 is greater than the maximum of 4294967295"),
])
def test_scenario_settings_run_would_fail_on_are_refused_by_check(tmp_path, capsys, spec, expected):
    text = SCENARIO + spec
    assert _error(tmp_path, text).startswith(expected)
    p = tmp_path / "s.yaml"
    assert main(["run", str(p), "--check"]) == 1
    assert capsys.readouterr().err.startswith("error: " + expected.replace("FILE", str(p)))


def test_pod_list_outside_the_trace_folder_is_refused(tmp_path):
    (tmp_path / "trace").mkdir()
    text = SCENARIO + "  workload: {trace: {path: trace, podList: ../../../../etc/passwd}}\n"
    assert _error(tmp_path, text).startswith(
        f"FILE:5:44: Scenario/s: spec.workload.trace.podList: no pod list '../../../../etc/passwd' in "
        f"{tmp_path / 'trace'}")


def test_failed_run_leaves_no_output_folder(tmp_path, capsys, monkeypatch):
    import lab01_cluster_sim.scenario.run as run_module
    from lab01_cluster_sim.errors import InputError

    good = tmp_path / "s.yaml"
    good.write_text(NODE + _pod('{limits: {nvidia.com/gpu: "1"}}'))

    def broken(*args, **kwargs):
        raise InputError("trace.csv:3: bad row")

    monkeypatch.setattr(run_module, "_run_timed", broken)
    out = tmp_path / "out"
    assert main(["run", str(good), "--output", str(out), "--quiet"]) == 1
    assert capsys.readouterr().err == "error: trace.csv:3: bad row\n"
    assert not out.exists()
    kept = tmp_path / "kept"        # a folder that was there before is left as it was
    kept.mkdir()
    assert main(["run", str(good), "--output", str(kept), "--quiet"]) == 1
    assert kept.is_dir()


def test_every_example_still_passes_the_stricter_checks():
    for path in sorted((REPO_ROOT / "scenarios").iterdir()):
        if path.suffix == ".yaml" or path.is_dir():
            load_scenario(path)


def test_do_not_disrupt_with_node_pools_is_named_not_ignored(tmp_path):
    # karpenter.sh/do-not-disrupt: "true" is modelled (tests/lab01/test_do_not_disrupt.py); a
    # duration value (protection ending after it) is not: the run is refused naming it rather
    # than protecting the node for ever
    text = (REPO_ROOT / "scenarios" / "autoscaler-karpenter.yaml").read_text().replace(
        "lab01.course/duration:", 'karpenter.sh/do-not-disrupt: 10m, lab01.course/duration:', 1)
    p = tmp_path / "s.yaml"
    p.write_text(text)
    sc = load_scenario(p)
    (item,) = [u for u in sc.unsupported if "do-not-disrupt" in u]
    assert item.endswith("karpenter.sh/do-not-disrupt: '10m': only \"true\" is modelled (a duration ending the "
                         "protection is not)")


def test_generated_arrivals_past_the_time_cap_name_the_scenario_fields(tmp_path, capsys):
    # fresh tester 2 F2: load 0.001 is allowed, but 20,000 jobs on one node at that load arrive
    # over about 7e9 s (the mean gap is E[GPU-s per job] / (0.001 x 8 GPUs)), past the 1e9 s cap
    p = tmp_path / "s.yaml"
    p.write_text(SCENARIO + "  workload: {generator: {name: synthetic, load: 0.001, jobs: 20000, nodes: 1}}\n")
    assert main(["run", str(p), "--output", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {p}:1:1: Scenario/s: spec.workload.generator.load 0.001 with "
                          "spec.workload.generator.jobs 20,000: the last synthetic job would arrive at ")
    assert "past the simulator's 1,000,000,000 s" in err and not (tmp_path / "out").exists()


@pytest.mark.parametrize("grace", ["9000000000000000000", "-1"])
def test_grace_period_is_bounded_like_the_annotations(tmp_path, grace):
    # fresh tester (Dec 2): an int64 grace period was accepted and held a victim's GPUs for 9e18 s,
    # so every wait of the run printed as a 19-digit number. "  terminationGracePeriodSeconds: " is
    # 33 characters, so the value starts at column 34 of line 12.
    text = NODE + _pod('{limits: {nvidia.com/gpu: "1"}}').replace(
        "  containers:", f"  terminationGracePeriodSeconds: {grace}\n  containers:")
    assert _error(tmp_path, text) == (f"FILE:12:34: Pod/p0: spec.terminationGracePeriodSeconds: expected 0 to "
                                      f"1,000,000,000 s (about 31.7 years), got {grace}")


POOL = """apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: gpu}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
"""


@pytest.mark.parametrize("old,new,expected", [
    ("      requirements:", "      taints: [{key: nvidia.com/gpu, effect: NoSchedule}]\n      requirements:",
     "FILE:8:7: NodePool/gpu: spec.template.spec.taints is not modelled (a field of karpenter.sh/v1 NodePool; "
     "remove it to run the scenario; modelled here: expireAfter, nodeClassRef, requirements)"),
    ("values: [on-demand]}", "values: [on-demand], minValues: 1}",
     "FILE:9:78: NodePool/gpu: spec.template.spec.requirements[0].minValues is not modelled (a field of "
     "karpenter.sh/v1 NodePool"),
    ("      requirements:", "      requirement:",
     "FILE:8:7: NodePool/gpu: spec.template.spec.requirement: unknown field (did you mean 'requirements'?"),
])
def test_real_karpenter_fields_are_not_modelled_not_unknown(tmp_path, old, new, expected):
    # fresh tester (Dec 2): a NodePool's taints or template labels, real Karpenter v1 fields, were
    # refused as "unknown field", which reads as a typo; a real typo still is one
    assert _error(tmp_path, POOL.replace(old, new)).startswith(expected)


@pytest.mark.parametrize("scheduling,expected", [
    ("  nodeSelector: {topology.kubernetes.io/zone: us-east-1a}\n",
     "nodeSelector on topology.kubernetes.io/zone is not modelled: Karpenter knows its values before launch"),
    ("  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: "
     "[{matchExpressions: [{key: karpenter.k8s.aws/instance-family, operator: In, values: [p5]}]}]}}}\n",
     "required node affinity on karpenter.k8s.aws/instance-family is not modelled: Karpenter knows its values"),
])
def test_karpenter_labels_the_simulator_has_no_values_for_are_not_modelled(tmp_path, scheduling, expected):
    # fresh tester (Dec 2): a pod selecting a zone got Karpenter's "label ... does not have known
    # values" and stayed Pending, which Karpenter would not say of a well-known label (it launches
    # in that zone); the reader now names it as not modelled, as autoscaler/requirements.py says
    pod = _pod('{limits: {nvidia.com/gpu: "1"}}').replace("  containers:", scheduling + "  containers:")
    p = tmp_path / "s.yaml"
    p.write_text(POOL + "---\n" + pod)
    (line,) = load_scenario(p).unsupported
    assert line.startswith(f"{p}:") and f"Pod/p0: {expected}" in line
    # a GFD label keeps Karpenter's answer (Pending), and a well-known GPU label is modelled
    for key in ("nvidia.com/gpu.product", "karpenter.k8s.aws/instance-gpu-name"):
        p.write_text(POOL + "---\n" + pod.replace("topology.kubernetes.io/zone", key)
                     .replace("karpenter.k8s.aws/instance-family", key))
        assert load_scenario(p).unsupported == []


def test_too_many_job_workers_names_parallelism(tmp_path):
    # fresh tester (Dec 2): the error pointed at spec.template.spec ("workers must be <= ...")
    job = ("apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\n  annotations: {lab01.course/duration: \"100\"}\n"
           "spec:\n  parallelism: 100000000\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n"
           "      - {name: c, image: x, resources: {limits: {nvidia.com/gpu: \"1\"}}}\n")
    # NODE is 5 lines, so parallelism is line 12; its value starts at column 16
    assert _error(tmp_path, NODE + job) == ("FILE:12:16: Job/j: spec.parallelism: expected at most 1,000,000 workers, "
                                            "got 100,000,000")


def test_too_many_devices_names_the_resource_field(tmp_path):
    # fresh tester (Dec 2): said "status.allocatable: node 'n0': gpu_count must be <= 1,000,000"
    text = (NODE.replace('nvidia.com/gpu: "2"', 'nvidia.com/gpu: "100000000000"')
            + _pod('{limits: {nvidia.com/gpu: "1"}}'))
    assert _error(tmp_path, text) == ("FILE:4:64: Node/n0: status.allocatable.nvidia.com/gpu: expected at most "
                                      "1,000,000 devices, got '100000000000'")
    assert _error(tmp_path, NODE + _pod('{limits: {nvidia.com/gpu: "2000000"}}')) == (
        "FILE:15:42: Pod/p0: spec.containers[0].resources.limits.nvidia.com/gpu: expected at most 1,000,000 devices, "
        "got '2000000'")


@pytest.mark.parametrize("kind,meta,where", [
    # Kubernetes' OpenAPI ObjectMeta makes name optional (generateName), so the schema passed
    # these and the reader failed on the missing key with a traceback
    ("Pod", "metadata: {annotations: {lab01.course/duration: '1'}}", "FILE:8:11: Pod:"),
    ("Pod", "metadata: {name: null, annotations: {lab01.course/duration: '1'}}", "FILE:8:18: Pod:"),
    ("Node", "metadata: {labels: {a: b}}", "FILE:8:11: Node:"),
])
def test_an_object_without_a_name_is_named_not_a_traceback(tmp_path, kind, meta, where):
    spec = ("spec: {containers: [{name: c, image: x}]}" if kind == "Pod"
            else "status: {allocatable: {cpu: '1'}}")
    text = NODE + f"apiVersion: v1\nkind: {kind}\n{meta}\n{spec}\n"
    assert _error(tmp_path, text) == (f"{where} metadata.name: Required value: name or generateName is required "
                                      "(Kubernetes' ValidateObjectMeta; generateName is not modelled: give "
                                      "metadata.name)")


def test_a_jobset_without_a_name_is_named_not_a_traceback(tmp_path):
    text = NODE + ("apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {annotations: "
                   "{lab01.course/duration: '1'}}\nspec:\n  replicatedJobs:\n" + "".join(
                       f"  - name: {r}\n    template:\n      spec:\n        template:\n          spec:\n"
                       "            restartPolicy: Never\n            containers: [{name: c, image: x}]\n"
                       for r in ("a", "b")))
    assert _error(tmp_path, text).startswith("FILE:8:11: JobSet: metadata.name: Required value")


@pytest.mark.parametrize("annotations,where,expected", [
    # Python's float() and int() take "1_0_0" and full-width digits; no Kubernetes reader does.
    # The Pod starts at line 6; its annotations are on line 10, '  annotations: {' is 16
    # characters, so the first value starts at column 17 + len('lab01.course/duration: ') = 40
    ('lab01.course/duration: "1_0_0"', "FILE:10:40", "metadata.annotations.lab01.course/duration: expected a "
                                                     "number of seconds, got '1_0_0'"),
    ('lab01.course/duration: "\uff11\uff10\uff10"', "FILE:10:40", "metadata.annotations.lab01.course/duration: "
                                                                  "expected a number of seconds, got '\uff11\uff10\uff10'"),
    # image-gib went unchecked until the autoscaler, which failed without file or field (and
    # --check passed); '"100", ' is 7 more characters, 'lab01.course/image-gib: ' 24: column 71
    ('lab01.course/duration: "100", lab01.course/image-gib: "nan"', "FILE:10:71",
     "metadata.annotations.lab01.course/image-gib: expected a size in GiB from 0 to 1,024, got 'nan'"),
    ('lab01.course/duration: "100", lab01.course/image-gib: "-5"', "FILE:10:71",
     "metadata.annotations.lab01.course/image-gib: expected a size in GiB from 0 to 1,024, got '-5'"),
])
def test_course_annotations_are_plain_bounded_numbers(tmp_path, annotations, where, expected):
    assert _error(tmp_path, NODE + _pod("{}", annotations)) == f"{where}: Pod/p0: {expected}"


@pytest.mark.parametrize("labels,expected", [
    # the API server's ValidateLabels (IsQualifiedName, IsValidLabelValue); the OpenAPI schema
    # takes any string. The Node's labels start at line 3: 'metadata: {name: n1, labels: {' is
    # 30 characters, so the first key is at column 31 and, after 'team: ', its value at 37
    ('{"t\u00ebam": a}', "FILE:3:31: Node/n1: metadata.labels: 't\u00ebam' is not a valid label key"),
    ('{example.com/: a}', "FILE:3:31: Node/n1: metadata.labels: 'example.com/' is not a valid label key"),
    ('{"Bad_Prefix/x": a}', "FILE:3:31: Node/n1: metadata.labels: 'Bad_Prefix/x' is not a valid label key"),
    ('{team: "\u00e4"}', "FILE:3:37: Node/n1: metadata.labels.team: '\u00e4' is not a valid label value"),
    ('{team: -a}', "FILE:3:37: Node/n1: metadata.labels.team: '-a' is not a valid label value"),
])
def test_label_keys_and_values_follow_the_api_servers_rules(tmp_path, labels, expected):
    text = ("apiVersion: v1\nkind: Node\nmetadata: {name: n1, labels: " + labels + "}\n"
            "status: {allocatable: {cpu: '1'}}\n")
    assert _error(tmp_path, text).startswith(expected)


def test_valid_labels_pass(tmp_path):
    # a prefixed key, an empty value, '_' and '.' inside: all valid
    p = tmp_path / "s.yaml"
    p.write_text("apiVersion: v1\nkind: Node\nmetadata: {name: n1, labels: {nvidia.com/gpu.product: "
                 "NVIDIA-H100_80GB.v1, empty: ''}}\nstatus: {allocatable: {cpu: '1', memory: 1Gi}}\n")
    assert [n.name for n in load_scenario(p).nodes] == ["n1"]


@pytest.mark.parametrize("containers,expected", [
    # validateContainerCommon (kubernetes pkg/apis/core/validation): a DNS-1123 label, unique
    # among containers and init containers; the OpenAPI schema takes any string. The Pod's spec
    # is on line 9: 'spec: {containers: [{name: ' is 27 characters; in the second,
    # 'spec: {containers: [{name: c, image: x}], initContainers: [{name: ' is 7 + 13 + 19 + 3 + 17 + 7 = 66
    ("{containers: [{name: C_1, image: x}]}",
     "FILE:9:28: Pod/p0: spec.containers[0].name: 'C_1' is not a valid container name"),
    ("{containers: [{name: c, image: x}], initContainers: [{name: c, image: x}]}",
     "FILE:9:67: Pod/p0: spec.initContainers[0].name: Duplicate value 'c'"),
])
def test_container_names_follow_the_api_servers_rules(tmp_path, containers, expected):
    text = NODE + ("apiVersion: v1\nkind: Pod\nmetadata: {name: p0, annotations: {lab01.course/duration: '1'}}\n"
                   f"spec: {containers}\n")
    assert _error(tmp_path, text).startswith(expected)
