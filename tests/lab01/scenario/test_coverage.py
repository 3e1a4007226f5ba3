"""Nothing accepted is ignored (issue 17 section 1): every field of the real schema of every
core kind a scenario holds (Kubernetes 1.35, the strict schemas kubernetes-validate ships) is
modelled, inert by design (listed with its reason) or refused by name; every field of the real
Kueue and Karpenter CRDs is in the reader's schema or refused as not modelled.

The schemas are walked recursively; for each field path a document holding just that field is
built and given to the same code ``run`` uses (:func:`lab01_cluster_sim.scenario.coverage.refusals`
for core kinds, :func:`lab01_cluster_sim.scenario.validate.validate_document` for CRD kinds), and
the test fails when a field is neither modelled (or inert) nor refused naming its path, when a
field said to be modelled is refused, or when a table names a field the schema does not have.
A field a later schema adds is refused until someone models it."""

from __future__ import annotations

import functools

import pytest
import yaml

from lab01_cluster_sim.scenario import coverage
from lab01_cluster_sim.scenario.schemas import CRD_KINDS, CRD_STATUS_KINDS, OBJECT_META_FIELDS, SCHEMAS
from lab01_cluster_sim.scenario.validate import KUBERNETES_VERSION, validate_document
from lab01_cluster_sim.scenario.yamlio import Document, ScenarioError

FILES = {("v1", "Pod"): "pod-v1.json", ("batch/v1", "Job"): "job-batch-v1.json", ("v1", "Node"): "node-v1.json",
         ("scheduling.k8s.io/v1", "PriorityClass"): "priorityclass-scheduling-v1.json"}


@functools.lru_cache(maxsize=None)
def _defs() -> dict:
    from kubernetes_validate.utils import schema_contents

    folder = f"kubernetes-json-schema/v{KUBERNETES_VERSION}.0-local-strict"
    return schema_contents(f"{folder}/_definitions.json", KUBERNETES_VERSION)["$defs"]


def _resolve(schema: dict) -> dict:
    while "$ref" in schema:
        schema = _defs()[schema["$ref"].split("/")[-1]]
    return schema


def _paths(schema: dict, path: tuple = (), seen: tuple = ()) -> list[tuple]:
    """Every leaf field path of ``schema`` as a tuple of keys, ``[]`` for a list item and
    ``{}`` for a map entry (recursive definitions stop at the second visit)."""
    ref = schema.get("$ref")
    if ref in seen:
        return [path]
    seen = seen + ((ref,) if ref else ())
    schema = _resolve(schema)
    if "allOf" in schema:
        return [p for sub in schema["allOf"] for p in _paths(sub, path, seen)]
    types = schema.get("type")
    types = [t for t in types if t != "null"] if isinstance(types, list) else [types]
    if schema.get("properties"):
        return [p for k, sub in schema["properties"].items() for p in _paths(sub, path + (k,), seen)]
    if "array" in types and "items" in schema:
        return _paths(schema["items"], path + ("[]",), seen)
    if "object" in types and isinstance(schema.get("additionalProperties"), dict):
        return [path + ("{}",)]
    return [path]


def _core_paths(key: tuple[str, str]) -> list[tuple]:
    from kubernetes_validate.utils import schema_contents

    folder = f"kubernetes-json-schema/v{KUBERNETES_VERSION}.0-local-strict"
    return _paths(schema_contents(f"{folder}/{FILES[key]}", KUBERNETES_VERSION))


def _document(key: tuple[str, str], path: tuple) -> tuple[Document, tuple]:
    """A document of kind ``key`` holding only ``path`` (a dummy value at its end) and the
    concrete path of that value (list items at index 0, map entries under ``k``)."""
    data: dict = {"apiVersion": key[0], "kind": key[1], "metadata": {"name": "x"}}
    node: object = data
    concrete: list = []
    for i, part in enumerate(path):
        last = i == len(path) - 1
        if part == "[]":
            child: object = "v" if last else ({} if path[i + 1] not in ("[]",) else [])
            node.append(child)   # type: ignore[union-attr]
            concrete.append(0)
        else:
            name = "k" if part == "{}" else part
            child = "v" if last else ([] if path[i + 1] == "[]" else {})
            if isinstance(node, dict) and isinstance(node.get(name), dict) and not last:
                child = node[name]
            node[name] = child   # type: ignore[index]
            concrete.append(name)
        node = child
    return Document(data, "s.yaml", 0, {(): (1, 1)}), tuple(concrete)


def _text(path: tuple) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


@pytest.mark.parametrize("key", sorted(FILES), ids=lambda k: k[1])
def test_every_field_of_a_core_kind_is_modelled_inert_or_refused(key):
    paths = _core_paths(key)
    assert len(paths) > 25   # the walk reached the nested fields
    unaccounted, counts = _walk(key, paths)
    assert unaccounted == []
    assert counts["modelled"] > 0 and counts["refused"] > 0


def _walk(key: tuple[str, str], paths: list[tuple]) -> tuple[list[str], dict[str, int]]:
    """Each field path of kind ``key`` in a document of its own, through the code ``run``
    uses: the paths neither modelled/inert nor refused by name (or refused though said to be
    modelled), and how many paths got each classification."""
    unaccounted = []
    counts = {"modelled": 0, "inert": 0, "partly": 0, "refused": 0}
    for path in paths:
        if path in (("apiVersion",), ("kind",), ("metadata", "name")):
            continue
        doc, concrete = _document(key, path)
        found = coverage.refusals(doc)
        status = coverage.classify(key, _pattern(path))
        counts[status] += 1
        if status == "refused":
            # the refusal names the field or the parent that is refused as a whole
            names = {f": {_text(concrete[:i])} is not modelled" for i in range(1, len(concrete) + 1)}
            if not any(n in line for line in found for n in names):
                unaccounted.append(_pattern(path))
        elif status in ("modelled", "inert") and found:
            unaccounted.append(f"{_pattern(path)} (classified {status} but refused: {found[0]})")
    return unaccounted, counts


def _pattern(path: tuple) -> str:
    out = ""
    for p in path:
        if p == "[]":
            out += "[]"
        elif p == "{}":
            continue
        else:
            out += f".{p}" if out else p
    return out


@pytest.mark.parametrize("key", sorted(FILES), ids=lambda k: k[1])
def test_every_listed_path_is_a_field_of_the_real_schema(key):
    real = set()
    for path in _core_paths(key):
        text = _pattern(path)
        real.add(text)
        while True:   # and every parent
            cut = max(text.rfind("."), text.rfind("[]"))
            if cut <= 0:
                break
            text = text[:cut]
            real.add(text)
    stale = sorted(p for p in coverage.COVERAGE[key] if p not in real)
    assert stale == []
    stale_refused = sorted(p for p in coverage.REFUSED if p not in real and not _in_template(p, key, real))
    assert key[1] != "Pod" or all(p.startswith(("spec.taints", "status.images", "spec.successPolicy",
                                                "spec.managedBy", "spec.podFailurePolicy", "spec.backoffLimitPerIndex",
                                                "spec.maxFailedIndexes")) for p in stale_refused)


def _in_template(p: str, key, real) -> bool:
    return key[1] == "Job" and f"spec.template.{p}" in real


def test_a_refusal_names_file_line_column_object_and_field():
    text = ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: i}]\n"
            "  topologySpreadConstraints:\n  - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}\n"
            "  hostNetwork: true\n")
    from lab01_cluster_sim.scenario.yamlio import load_documents

    doc = load_documents("p.yaml", text)[0]
    lines = sorted(coverage.refusals(doc))
    assert lines == [
        "p.yaml:7:3: Pod/p: spec.topologySpreadConstraints is not modelled (kube-scheduler's PodTopologySpread is "
        "not modelled)",
        "p.yaml:8:16: Pod/p: spec.hostNetwork: the value True is not modelled (modelled: False; with host networking "
        "the container ports are host ports, which the NodePorts filter checks)",
    ]


def test_inert_and_modelled_fields_pass_and_empty_fields_ask_for_nothing():
    text = ("apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, uid: abc}\nspec:\n  parallelism: 2\n"
            "  backoffLimit: 3\n  template:\n    spec:\n      restartPolicy: Never\n      schedulerName: default-scheduler\n"
            "      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]\n      volumes: []\n"
            "      containers: [{name: c, image: i, command: [sh], resources: {requests: {cpu: 1}}}]\n")
    from lab01_cluster_sim.scenario.yamlio import load_documents

    assert coverage.refusals(load_documents("j.yaml", text)[0]) == []


# -- Kueue and Karpenter: the reader's closed schemas against the real CRDs ---------------------------
@functools.lru_cache(maxsize=None)
def _read(path) -> dict:
    return yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _crd_schema(shared_data, folder: str, file: str, version: str) -> dict:
    path = shared_data / folder / file
    if not path.is_file():
        pytest.skip(f"CRD not found at {path} (set COURSE_SHARED_DATA to the shared data folder)")
    for v in _read(path)["spec"]["versions"]:
        if v["name"] == version:
            return v["schema"]["openAPIV3Schema"]
    raise AssertionError(f"{path}: no version {version}")


def _crd_paths(schema: dict, path: tuple = ()) -> list[tuple]:
    if schema.get("properties"):
        return [p for k, sub in schema["properties"].items() for p in _crd_paths(sub, path + (k,))]
    if schema.get("type") == "array" and "items" in schema:
        return _crd_paths(schema["items"], path + ("[]",))
    if schema.get("type") == "object" and isinstance(schema.get("additionalProperties"), dict):
        return [path + ("{}",)]
    return [path]


def _ours(schema: dict, path: tuple) -> bool:
    """True when the reader's schema has the field ``path`` (or allows any key on the way)."""
    for part in path:
        if part == "[]":
            schema = schema.get("items", {})
        elif part == "{}":
            schema = schema.get("additionalProperties") if isinstance(schema.get("additionalProperties"), dict) else {}
        elif part in schema.get("properties", {}):
            schema = schema["properties"][part]
        elif schema.get("additionalProperties") is False or "properties" in schema:
            return False
        else:
            return True   # an open object (e.g. metadata.labels): any key is a value
    return True


def _not_refused(key: tuple[str, str], paths: list[tuple]) -> list[str]:
    """The field paths of ``paths`` that the reader's schema for ``key`` neither has nor refuses
    as "<path> is not modelled" (each as ``path: what happened``)."""
    ours = SCHEMAS[key]
    missing = []
    for path in paths:
        if path[0] in ("apiVersion", "kind", "metadata") or _ours(ours, path):
            continue
        # the first field on the path that the reader's schema lacks is the one refused
        cut = next(i for i in range(1, len(path) + 1) if not _ours(ours, path[:i]))
        field = path[:cut]
        doc, concrete = _document(key, field)
        try:
            validate_document(doc)
        except ScenarioError as exc:
            if f": {_text(concrete)} is not modelled (" in str(exc):
                continue
            missing.append(f"{_pattern(field)}: {exc}")
            continue
        missing.append(f"{_pattern(field)}: accepted")
    return missing


@pytest.mark.parametrize("key", sorted(CRD_KINDS), ids=lambda k: k[1])
def test_every_crd_field_is_in_the_readers_schema_or_refused_as_not_modelled(shared_data, key):
    crd = _crd_schema(shared_data, *CRD_KINDS[key])
    paths = _crd_paths(crd)
    assert (("status" in crd["properties"]) == (key in CRD_STATUS_KINDS))
    assert _not_refused(key, paths) == []


# the coscheduling PodGroup's fields (kubernetes-sigs/scheduler-plugins v0.34.7,
# apis/scheduling/v1alpha1/types.go: PodGroupSpec, PodGroupStatus; the same in its CRD
# config/crd/bases/scheduling.x-k8s.io_podgroups.yaml)
POD_GROUP_PATHS = [("spec", "minMember"), ("spec", "minResources", "{}"), ("spec", "scheduleTimeoutSeconds"),
                   ("status", "phase"), ("status", "occupiedBy"), ("status", "running"), ("status", "succeeded"),
                   ("status", "failed"), ("status", "scheduleStartTime")]


def test_every_pod_group_field_is_modelled_or_refused_as_not_modelled():
    key = ("scheduling.x-k8s.io/v1alpha1", "PodGroup")
    assert _not_refused(key, POD_GROUP_PATHS) == []
    assert [p for p in POD_GROUP_PATHS if _ours(SCHEMAS[key], p)] == [("spec", "minMember")]


@pytest.mark.parametrize("key", sorted(k for k in SCHEMAS if "metadata" in SCHEMAS[k]["properties"]),
                         ids=lambda k: k[1])
def test_every_object_meta_field_is_modelled_or_refused(key):
    # every kind the reader checks with its own schema has Kubernetes' ObjectMeta (Kubernetes
    # 1.35's definition, as kubernetes-validate ships it): each field is in the reader's schema
    # or refused as not modelled; only the course's own Scenario kind calls it unknown
    real = set(_defs()["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]["properties"])
    assert real == OBJECT_META_FIELDS
    if "properties" not in SCHEMAS[key]["properties"]["metadata"]:
        # a JobSet's metadata is Kubernetes' own ObjectMeta, decided field by field in coverage.py
        unaccounted = []
        for field in sorted(real - {"name"}):
            doc = Document({"apiVersion": key[0], "kind": key[1], "metadata": {"name": "x", field: "v"}}, "s.yaml",
                           0, {(): (1, 1)})
            status = coverage.classify(key, f"metadata.{field}")
            found = coverage.refusals(doc)
            refused = any(f": metadata.{field} is not modelled" in line for line in found)
            if (status == "refused") != refused:
                unaccounted.append((field, status, found))
        assert unaccounted == []
        return
    ours = set(SCHEMAS[key]["properties"]["metadata"]["properties"])
    wrong = []
    for field in sorted(real - ours):
        doc = Document({"apiVersion": key[0], "kind": key[1], "metadata": {"name": "x", field: "v"}}, "s.yaml", 0,
                       {(): (1, 1)})
        with pytest.raises(ScenarioError) as exc:
            validate_document(doc)
        said = "unknown field" if key[1] == "Scenario" else "is not modelled ("
        if f": metadata.{field}{':' if key[1] == 'Scenario' else ''} {said}" not in str(exc.value):
            wrong.append(str(exc.value))
    assert wrong == []


POD_GROUP = ("apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\nmetadata:\n  name: g\n"
             "  namespace: team\n  creationTimestamp: \"2026-01-05T09:30:00Z\"\nspec:\n  minMember: 2\n"
             "  scheduleTimeoutSeconds: 60\n")


@pytest.mark.parametrize("text,expected", [
    # line 8 "  scheduleTimeoutSeconds: 60": the key at column 3
    (POD_GROUP.replace("  creationTimestamp: \"2026-01-05T09:30:00Z\"\n", ""),
     "g.yaml:8:3: PodGroup/team/g: spec.scheduleTimeoutSeconds is not modelled (a field of "
     "scheduling.x-k8s.io/v1alpha1 PodGroup; remove it to run the scenario; modelled here: minMember)"),
    # the same with line 6 "  creationTimestamp: ...": metadata's field is reported first (unknown
    # fields are taken in the order of their paths: metadata before spec)
    (POD_GROUP,
     "g.yaml:6:3: PodGroup/team/g: metadata.creationTimestamp is not modelled (a field of "
     "scheduling.x-k8s.io/v1alpha1 PodGroup; remove it to run the scenario; modelled here: annotations, labels, "
     "name, namespace)"),
    # minResources (line 6) is reported before the status (line 7): spec's path sorts before status
    ("apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\nmetadata: {name: g}\nspec:\n  minMember: 2\n"
     "  minResources: {nvidia.com/gpu: 8}\nstatus: {phase: Running}\n",
     "g.yaml:6:3: PodGroup/g: spec.minResources is not modelled (a field of scheduling.x-k8s.io/v1alpha1 PodGroup; "
     "remove it to run the scenario; modelled here: minMember)"),
    # a status alone: line 6, column 1
    ("apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\nmetadata: {name: g}\nspec:\n  minMember: 2\n"
     "status: {phase: Running}\n",
     "g.yaml:6:1: PodGroup/g: status is not modelled (a field of scheduling.x-k8s.io/v1alpha1 PodGroup; remove it to "
     "run the scenario; modelled here: apiVersion, kind, metadata, spec)"),
    # the course's own kind: a field it does not have is unknown, with the fields it has
    ("apiVersion: lab01.course/v1alpha1\nkind: Scenario\nmetadata:\n  name: s\n"
     "  creationTimestamp: \"2026-01-05T09:30:00Z\"\nspec: {}\n",
     "g.yaml:5:3: Scenario/s: metadata.creationTimestamp: unknown field (expected one of: annotations, labels, name)"),
    ("apiVersion: lab01.course/v1alpha1\nkind: Scenario\nmetadata: {name: s}\nspec: {}\nstatus: {}\n",
     "g.yaml:5:1: Scenario/s: status: unknown field (expected one of: apiVersion, kind, metadata, spec)"),
])
def test_real_fields_of_own_schema_kinds_are_not_modelled_and_ours_are_unknown(text, expected):
    from lab01_cluster_sim.scenario.yamlio import load_documents

    with pytest.raises(ScenarioError) as exc:
        validate_document(load_documents("g.yaml", text)[0])
    assert str(exc.value) == expected


@pytest.mark.parametrize("kind", ["MPIJob", "PyTorchJob", "LeaderWorkerSet"])
def test_other_workloads_with_several_pod_sets_are_refused_saying_how_to_write_a_jobset(kind):
    from lab01_cluster_sim.scenario.yamlio import load_documents

    text = f"apiVersion: example.io/v1\nkind: {kind}\nmetadata: {{name: train}}\nspec: {{}}\n"
    with pytest.raises(ScenarioError) as exc:
        validate_document(load_documents("j.yaml", text)[0])
    assert str(exc.value) == (f"j.yaml:2:7: {kind}/train: a {kind} (a workload with several pod sets, e.g. a launcher "
                              "and workers) is not read by scenarios; write the same job as a jobset.x-k8s.io/v1alpha2 "
                              "JobSet: one replicatedJob per role (a launcher replicatedJob of 1 replica, a workers "
                              "replicatedJob of as many pods as workers), each with its pod template")


# -- JobSet: the real CRD of sigs.k8s.io/jobset v0.11.1, from the Go module proxy -------------------
JOBSET = ("jobset.x-k8s.io/v1alpha2", "JobSet")
JOBSET_VERSION = "v0.11.1"   # the version Kueue v0.17.0 requires (its go.mod)
JOBSET_CRD = "config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml"


@functools.lru_cache(maxsize=None)
def _jobset_crd() -> dict:
    """The JobSet CRD's ``openAPIV3Schema`` of module ``sigs.k8s.io/jobset@v0.11.1``, as
    ``go mod download`` gives it (the module cache, else the Go module proxy); the test is
    skipped naming why when ``go`` is missing or the download fails."""
    import json
    import shutil
    import subprocess
    from pathlib import Path

    go = shutil.which("go")
    if go is None:
        pytest.skip("the JobSet CRD comes from the Go module proxy: `go` is not on PATH")
    try:
        out = subprocess.run([go, "mod", "download", "-json", f"sigs.k8s.io/jobset@{JOBSET_VERSION}"],
                             capture_output=True, text=True, timeout=300, cwd=Path(__file__).parent)
    except subprocess.TimeoutExpired:
        pytest.skip(f"go mod download sigs.k8s.io/jobset@{JOBSET_VERSION} took more than 300 s")
    try:
        info = json.loads(out.stdout)
    except json.JSONDecodeError:
        info = {}
    if out.returncode != 0 or "Dir" not in info:
        why = info.get("Error") or out.stderr.strip().splitlines()[-1:] or [f"exit status {out.returncode}"]
        pytest.skip(f"go mod download sigs.k8s.io/jobset@{JOBSET_VERSION} failed: {why if isinstance(why, str) else why[0]}")
    crd = yaml.load((Path(info["Dir"]) / JOBSET_CRD).read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1alpha2"]
    return version["schema"]["openAPIV3Schema"]


def _jobset_paths() -> list[tuple]:
    """Every leaf field path of the JobSet CRD; ``metadata`` (the CRD gives it no fields) as
    Kubernetes' ObjectMeta."""
    paths = [p for p in _crd_paths(_jobset_crd()) if p[0] != "metadata"]
    meta = _paths({"$ref": "#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"})
    return paths + [("metadata",) + p for p in meta]


def test_every_field_of_a_jobset_is_modelled_inert_or_refused():
    """The same walk as the core kinds', over the real JobSet CRD (its replicated jobs'
    templates included, which follow the batch Job's table)."""
    paths = _jobset_paths()
    assert len(paths) > 500   # the walk reached the templates' pod specs (930 leaves in v0.11.1)
    unaccounted, counts = _walk(JOBSET, paths)
    assert unaccounted == []
    assert counts["modelled"] > 0 and counts["inert"] > 0 and counts["partly"] > 0 and counts["refused"] > 0


def test_every_listed_jobset_path_is_a_field_of_the_real_crd():
    real = set()
    for path in _jobset_paths():
        text = _pattern(path)
        while text:
            real.add(text)
            cut = max(text.rfind("."), text.rfind("[]"))
            text = text[:cut] if cut > 0 else ""
    assert sorted(p for p in coverage.COVERAGE[JOBSET] if p not in real) == []
    assert sorted(p for p in coverage.JOBSET_REFUSED if p not in real) == []


def test_the_readers_jobset_schema_has_exactly_the_crds_own_fields():
    """Every field of the CRD outside ``metadata``, the templates and the parts refused whole
    (``status``, ``volumeClaimPolicies``) is in the reader's schema, and no other: an unknown
    field is a misspelling, never a real field."""
    whole = (("metadata",), ("status",), ("spec", "volumeClaimPolicies"), ("spec", "replicatedJobs", "[]", "template"))

    def own(path: tuple) -> bool:
        return not any(path[:len(w)] == w for w in whole)

    crd = {p for p in _crd_paths(_jobset_crd()) if own(p)}
    ours = {p for p in _crd_paths(SCHEMAS[JOBSET]) if own(p)}
    assert crd - ours == set() and ours - crd == set()
    # hand count in jobset_types.go v0.11.1: apiVersion, kind 2; coordinator 3; failurePolicy 2 + rules' 5;
    # managedBy 1; network 3; replicatedJobs' dependsOn 2, groupName, name, replicas 3; startupPolicy 1;
    # successPolicy 2; suspend 1; ttlSecondsAfterFinished 1
    assert len(crd) == 26


# -- KubeSchedulerConfiguration ---------------------------------------------------------------------
def test_a_scheduler_configuration_naming_another_plugin_is_refused_naming_the_plugin():
    from lab01_cluster_sim.scenario.yamlio import load_documents

    text = ("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
            "- schedulerName: default-scheduler\n  pluginConfig:\n  - name: Coscheduling\n"
            "    args: {permitWaitingTimeSeconds: 10}\n")
    with pytest.raises(ScenarioError) as exc:
        validate_document(load_documents("k.yaml", text)[0])
    assert str(exc.value) == ("k.yaml:6:11: KubeSchedulerConfiguration: profiles[0].pluginConfig[0].name: plugin "
                              "'Coscheduling' is not modelled; the simulator runs kube-scheduler's default profile "
                              "and models the configuration of TaintToleration, NodeAffinity, NodeResourcesFit")


def test_score_weights_of_the_modelled_plugins_are_read(tmp_path):
    from lab01_cluster_sim.scenario import load_scenario

    path = tmp_path / "k.yaml"
    path.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
                    "- plugins:\n    multiPoint:\n      enabled: [{name: NodeAffinity, weight: 7}, {name: TaintToleration,"
                    " weight: 9}]\n    score:\n      enabled: [{name: NodeAffinity, weight: 4}, {name: NodeResourcesFit, "
                    "weight: 2}]\n---\napiVersion: v1\nkind: Node\nmetadata: {name: n}\n"
                    "status: {allocatable: {cpu: '4', memory: 4Gi}}\n")
    sc = load_scenario(path)
    # score.enabled overrides multiPoint (the more specific extension point wins)
    assert sc.scheduler_weights == {"TaintToleration": 9, "NodeAffinity": 4, "NodeResourcesFit": 2}
    assert sc.scoring.score_weight == 2


def test_a_suspended_job_is_modelled_only_when_kueue_resumes_it():
    from lab01_cluster_sim.scenario.yamlio import load_documents

    job = ("apiVersion: batch/v1\nkind: Job\nmetadata: {name: j%s}\nspec:\n  suspend: true\n  template:\n"
           "    spec: {containers: [{name: c, image: i}]}\n")
    assert coverage.refusals(load_documents("j.yaml", job % ", labels: {kueue.x-k8s.io/queue-name: q}")[0]) == []
    (line,) = coverage.refusals(load_documents("j.yaml", job % "")[0])
    assert line == ("j.yaml:5:12: Job/j: spec.suspend: suspend: true on a Job without kueue.x-k8s.io/queue-name is "
                    "not modelled (nothing would resume it; Kueue resumes the Jobs it admits)")
