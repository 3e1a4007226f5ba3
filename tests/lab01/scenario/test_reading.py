"""Reading and checking scenario files: bounds, safe YAML, and one-line errors that name
file:line:column, the object and the field path."""

from __future__ import annotations

import pytest

from lab01_cluster_sim.scenario import ScenarioError, load_scenario
from lab01_cluster_sim.scenario import yamlio
from lab01_cluster_sim.scenario.yamlio import load_documents

NODE = """apiVersion: v1
kind: Node
metadata: {name: n0, labels: {nvidia.com/gpu.product: A100}}
status: {allocatable: {cpu: "8", memory: 64Gi, nvidia.com/gpu: "2"}}
"""


def _write(tmp_path, text, name="s.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def _error(tmp_path, text) -> str:
    p = _write(tmp_path, text)
    with pytest.raises(ScenarioError) as exc:
        load_scenario(p)
    msg = str(exc.value)
    assert "\n" not in msg
    return msg.replace(str(p), "FILE")


def test_positions_of_values_and_keys(tmp_path):
    (doc,) = load_documents(_write(tmp_path, NODE))
    assert doc.pos(("status", "allocatable", "nvidia.com/gpu")) == (4, 64)   # 63 characters precede "2"
    assert doc.key_pos(("metadata", "labels")) == (3, 22)    # "metadata: {name: n0, " is 21 characters
    assert doc.pos(("no", "such")) == (1, 1)          # falls back to the document


@pytest.mark.parametrize("text,expected", [
    ("a: &x [1]\nb: *x\n", "FILE:2:4: YAML aliases (*name) are not accepted in scenarios; write the value out"),
    ("a: 1\na: 2\n", "FILE:2:1: a: duplicate key 'a'"),
    # fresh tester polish #9: the object is named too (the key is on line 6, indented 2)
    ("apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, namespace: team-a}\nspec:\n  suspend: true\n"
     "  suspend: false\n", "FILE:6:3: Job/team-a/j: spec.suspend: duplicate key 'suspend'"),
    ("kind: Node\nmetadata:\n  name: n0\n  name: n1\n", "FILE:4:3: Node/n0: metadata.name: duplicate key 'name'"),
    # libyaml's wording (PyYAML's pure-Python parser says "expected ',' or ']', but got '<stream end>'")
    ("a: [1, 2\n", "FILE:2:1: invalid YAML: did not find expected ',' or ']'"),
    ("base: &b {x: 1}\nc:\n  <<: *b\n", "FILE:3:7: YAML aliases (*name) are not accepted in scenarios; write the value out"),
    ("? [1, 2]\n: v\n", "FILE:1:3: (document): mapping keys must be plain strings"),
])
def test_unsafe_or_broken_yaml_is_one_line(tmp_path, text, expected):
    assert _error(tmp_path, text) == expected


def test_nesting_depth_is_bounded(tmp_path):
    msg = _error(tmp_path, "[" * 100 + "]" * 100 + "\n")
    assert msg == "FILE:1:65: scenario file is too big: nested deeper than 64 levels"


def test_file_size_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(yamlio, "MAX_BYTES", 100)
    msg = _error(tmp_path, "a: " + "x" * 200 + "\n")
    assert msg == "FILE: larger than 0 MiB; split the scenario into a folder of files"


def test_value_count_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(yamlio, "MAX_NODES", 10)
    msg = _error(tmp_path, "a: [" + ", ".join(["1"] * 20) + "]\n")
    assert msg.startswith("FILE:1:") and msg.endswith("scenario file is too big: more than 10 values")


def test_non_utf8_is_reported_with_its_place(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_bytes(b"a: 1\nb: caf\xe9\n")
    with pytest.raises(ScenarioError, match=r"s.yaml:2:7: not UTF-8 \(byte 0xe9\)"):
        load_scenario(p)


def test_missing_path_and_empty_file(tmp_path):
    with pytest.raises(ScenarioError, match="no such file or folder"):
        load_scenario(tmp_path / "nope.yaml")
    with pytest.raises(ScenarioError, match="no objects"):
        load_scenario(_write(tmp_path, "# nothing\n"))


@pytest.mark.parametrize("text,expected", [
    # Kubernetes core kind, strict kubernetes-validate
    (NODE + "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n"
     "    image: x\n    resourcs: {}\n",
     "FILE:13:5: Pod/p: spec.containers[0].resourcs: unknown field (did you mean 'resources'? expected one of: args, "
     "command, env, envFrom, image, imagePullPolicy, lifecycle, livenessProbe, name, ports, readinessProbe, "
     "resizePolicy, resources, restartPolicy, restartPolicyRules, securityContext, startupProbe, stdin, stdinOnce, "
     "terminationMessagePath, terminationMessagePolicy, tty, volumeDevices, volumeMounts, workingDir)"),
    # a Kueue kind, our typed subset
    ("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: team-a}\nspec:\n  resourceGroups:\n"
     "  - coveredResources: [nvidia.com/gpu]\n    flavors:\n    - name: a100\n      resources:\n"
     "      - {name: nvidia.com/gpu, nominalQuot: 4}\n",
     "FILE:10:32: ClusterQueue/team-a: spec.resourceGroups[0].flavors[0].resources[0].nominalQuot: unknown field "
     "(did you mean 'nominalQuota'? expected one of: borrowingLimit, lendingLimit, name, nominalQuota)"),
    ("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: b}\nspec:\n"
     "  queueingStrategy: Strict\n",
     "FILE:5:21: ClusterQueue/b: spec.queueingStrategy: 'Strict' is not supported; expected one of: StrictFIFO, "
     "BestEffortFIFO"),
    ("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: b}\nspec:\n  resourceGroups:\n"
     "  - coveredResources: [cpu]\n    flavors:\n    - name: f\n      resources:\n"
     "      - {name: cpu, nominalQuota: 4x}\n",
     "FILE:10:35: ClusterQueue/b: spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: expected a "
     "Kubernetes quantity such as 8, \"500m\" or \"36Gi\", got '4x'"),
    ("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: b}\nspec:\n  stopPolicy: Hold\n",
     # fresh tester 2 F4: stopPolicy is a real v1beta2 field (in the CRD), only not modelled
     "FILE:5:3: ClusterQueue/b: spec.stopPolicy is not modelled (a field of kueue.x-k8s.io/v1beta2 ClusterQueue; "
     "remove it to run the scenario; modelled here: cohortName, fairSharing, flavorFungibility, namespaceSelector, "
     "preemption, queueingStrategy, resourceGroups)"),
    # ... while a misspelling of it stays an unknown field
    ("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: b}\nspec:\n  cohortNam: x\n",
     "FILE:5:3: ClusterQueue/b: spec.cohortNam: unknown field (did you mean 'cohortName'? expected one of: "
     "cohortName, fairSharing, flavorFungibility, namespaceSelector, preemption, queueingStrategy, resourceGroups)"),
    ("apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: q, namespace: n}\nspec:\n"
     "  clusterQueue: c\n  stopPolicy: Hold\n",
     "FILE:6:3: LocalQueue/n/q: spec.stopPolicy is not modelled (a field of kueue.x-k8s.io/v1beta2 LocalQueue; "
     "remove it to run the scenario; modelled here: clusterQueue)"),
    ("apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: p}\nspec:\n  template:\n    spec:\n"
     "      requirements: []\n      nodeClassRef: {group: g, kind: k, name: n}\n  disruption:\n"
     "    consolidationPolicy: Balanced\n",
     "FILE:10:26: NodePool/p: spec.disruption.consolidationPolicy: 'Balanced' is not supported; expected one of: "
     "WhenEmpty, WhenEmptyOrUnderutilized"),
    ("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- pluginConfig:\n"
     "  - name: NodeResourcesFit\n    args:\n      scoringStrategy: {type: MostAlocated}\n",
     "FILE:7:31: KubeSchedulerConfiguration: profiles[0].pluginConfig[0].args.scoringStrategy.type: 'MostAlocated' "
     "is not supported; expected one of: LeastAllocated, MostAllocated, RequestedToCapacityRatio"),
    ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n",
     "FILE:2:7: Deployment/d: apiVersion 'apps/v1' kind 'Deployment' is not a kind scenarios accept; expected one "
     "of: batch/v1 Job, config.kueue.x-k8s.io/v1beta2 Configuration, jobset.x-k8s.io/v1alpha2 JobSet, "
     "karpenter.sh/v1 NodePool, "
     "kubescheduler.config.k8s.io/v1 KubeSchedulerConfiguration, kueue.x-k8s.io/v1beta2 ClusterQueue, "
     "kueue.x-k8s.io/v1beta2 Cohort, kueue.x-k8s.io/v1beta2 LocalQueue, kueue.x-k8s.io/v1beta2 ResourceFlavor, "
     "kueue.x-k8s.io/v1beta2 WorkloadPriorityClass, lab01.course/v1alpha1 Scenario, "
     "scheduling.k8s.io/v1 PriorityClass, scheduling.x-k8s.io/v1alpha1 PodGroup, v1 Node, v1 Pod"),
    ("- 1\n- 2\n", "FILE:1:1: expected a Kubernetes object (a mapping with apiVersion and kind), got list"),
])
def test_schema_errors_name_file_object_and_field(tmp_path, text, expected):
    assert _error(tmp_path, text) == expected


@pytest.mark.parametrize("text,expected", [
    (NODE + "---\n" + NODE, "FILE:8:18: Node/n0: defined twice (first at FILE:1:1)"),
    ("apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: q, namespace: t}\n"
     "spec: {clusterQueue: missing}\n",
     # placed at the value of spec.clusterQueue: line 4, "spec: {clusterQueue: " is 21 characters
     "FILE:4:22: LocalQueue/t/q: spec.clusterQueue: ClusterQueue 'missing' is not defined"),
    (NODE + "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
     "  - {name: c, image: x, resources: {requests: {cpu: '1'}}}\n",
     "FILE:8:11: Pod/p: metadata.annotations: annotation lab01.course/duration missing; give the run time in "
     "seconds (or 'inf' for a service that never ends)"),
    (NODE + "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p, annotations: {lab01.course/duration: soon}}\nspec:\n"
     "  containers:\n  - {name: c, image: x}\n",
     "FILE:8:58: Pod/p: metadata.annotations.lab01.course/duration: expected a number of seconds, got 'soon'"),
    (NODE + "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p, annotations: {lab01.course/duration: '1'}}\n"
     "spec:\n  priorityClassName: gold\n  containers:\n  - {name: c, image: x}\n",
     "FILE:10:22: Pod/p: spec.priorityClassName: PriorityClass 'gold' is not defined"),
])
def test_cross_object_errors_are_one_line(tmp_path, text, expected):
    assert _error(tmp_path, text) == expected


def test_files_and_objects_per_scenario_are_bounded(tmp_path, monkeypatch):
    from lab01_cluster_sim.scenario import load as load_module

    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(3):
        (folder / f"n{i}.yaml").write_text(NODE.replace("name: n0", f"name: n{i}"))
    monkeypatch.setattr(load_module, "MAX_FILES", 2)
    with pytest.raises(ScenarioError, match="more than 2 YAML files"):
        load_scenario(folder)
    monkeypatch.setattr(load_module, "MAX_FILES", 10)
    monkeypatch.setattr(load_module, "MAX_OBJECTS", 2)
    with pytest.raises(ScenarioError, match="holds more than 2 objects"):
        load_scenario(folder)
