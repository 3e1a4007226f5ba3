"""Every field the scenario reader accepts for a Kueue or Karpenter kind exists in the real
CRD with the same type, enum values (ours may be fewer) and default; and every example
scenario's Kueue and Karpenter objects validate against those CRDs (unknown fields refused,
as ``kubectl apply --validate=strict``). The CRDs are read from ../shared/data (or
$COURSE_SHARED_DATA); the tests skip, naming the path, when they are absent."""

from __future__ import annotations

import copy
import functools
from pathlib import Path

import jsonschema
import pytest
import yaml

from conftest import REPO_ROOT
from lab01_cluster_sim.scenario.schemas import CRD_KINDS, CRD_ONLY_FIELDS, SCHEMAS
from lab01_cluster_sim.scenario.yamlio import iter_files, load_documents


@functools.lru_cache(maxsize=None)
def _read_crd(path: Path) -> dict:
    return yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _crd(shared_data: Path, folder: str, file: str, version: str) -> dict:
    path = shared_data / folder / file
    if not path.is_file():
        pytest.skip(f"CRD not found at {path} (set COURSE_SHARED_DATA to the shared data folder)")
    crd = _read_crd(path)
    for v in crd["spec"]["versions"]:
        if v["name"] == version:
            return v["schema"]["openAPIV3Schema"]
    raise AssertionError(f"{path}: no version {version}")


def _kind(schema: dict) -> str | None:
    if schema.get("x-kubernetes-int-or-string"):
        return "int-or-string"
    return schema.get("type")


def _compare(ours: dict, crd: dict, path: str, problems: list[str]) -> None:
    if _kind(ours) != _kind(crd):
        problems.append(f"{path}: type {_kind(ours)} != CRD {_kind(crd)}")
    if "enum" in ours and "enum" in crd and not set(ours["enum"]) <= set(crd["enum"]):
        problems.append(f"{path}: enum {ours['enum']} not within CRD {crd['enum']}")
    if ("default" in ours or "default" in crd) and ours.get("default") != crd.get("default"):
        problems.append(f"{path}: default {ours.get('default')!r} != CRD {crd.get('default')!r}")
    for name, sub in ours.get("properties", {}).items():
        if name not in crd.get("properties", {}):
            problems.append(f"{path}.{name}: not a field of the CRD")
            continue
        _compare(sub, crd["properties"][name], f"{path}.{name}", problems)
    if "items" in ours:
        _compare(ours["items"], crd.get("items", {}), f"{path}[]", problems)
    if isinstance(ours.get("additionalProperties"), dict):
        _compare(ours["additionalProperties"], crd.get("additionalProperties", {}), f"{path}{{}}", problems)


@pytest.mark.parametrize("key", sorted(CRD_KINDS), ids=lambda k: k[1])
def test_every_accepted_field_is_in_the_crd(shared_data, key):
    crd = _crd(shared_data, *CRD_KINDS[key])
    ours = SCHEMAS[key]
    problems: list[str] = []
    checked = 0
    for name, sub in ours["properties"].items():
        if name in ("apiVersion", "kind", "metadata"):
            continue
        assert name in crd["properties"], f"{key[1]}: top-level field {name} not in the CRD"
        _compare(sub, crd["properties"][name], name, problems)
        checked += 1
    assert checked > 0
    assert problems == []


@pytest.mark.parametrize("key", sorted(k for k in CRD_ONLY_FIELDS if k in CRD_KINDS
                                     and set(CRD_ONLY_FIELDS[k]) - {("metadata",)}), ids=lambda k: k[1])
def test_fields_called_not_modelled_are_exactly_the_crds_other_fields(shared_data, key):
    # fresh tester 2 F4: run says "does not model" for these and "unknown field" for the rest,
    # so the list must be the CRD's spec fields minus the ones the reader accepts
    # fresh tester (Dec 2): Karpenter's NodePool taints, template labels, budgets, weight... were
    # "unknown field", as if misspelt; every object path listed is checked, "[]" a list's items
    def at(schema: dict, path: tuple) -> dict:
        for name in path:
            schema = schema["items"] if name == "[]" else schema["properties"][name]
        return schema["properties"]

    # (metadata is ObjectMeta, which a CRD's schema does not spell out: test_coverage.py checks it)
    crd_schema, ours_schema = _crd(shared_data, *CRD_KINDS[key]), SCHEMAS[key]
    for path, fields in CRD_ONLY_FIELDS[key].items():
        if path != ("metadata",):
            assert fields == set(at(crd_schema, path)) - set(at(ours_schema, path)), path


def test_the_comparison_catches_a_wrong_field(shared_data):
    # the checker itself must fail on a made-up field, a wrong enum and a wrong default
    crd = _crd(shared_data, *CRD_KINDS[("kueue.x-k8s.io/v1beta2", "ClusterQueue")])
    bad = copy.deepcopy(SCHEMAS[("kueue.x-k8s.io/v1beta2", "ClusterQueue")]["properties"]["spec"])
    bad["properties"]["cohort"] = {"type": "string"}                 # v1beta1's name, gone in v1beta2
    bad["properties"]["queueingStrategy"]["enum"].append("LIFO")
    bad["properties"]["queueingStrategy"]["default"] = "StrictFIFO"
    problems: list[str] = []
    _compare(bad, crd["properties"]["spec"], "spec", problems)
    assert problems == [
        "spec.queueingStrategy: enum ['StrictFIFO', 'BestEffortFIFO', 'LIFO'] not within CRD ['StrictFIFO', 'BestEffortFIFO']",
        "spec.queueingStrategy: default 'StrictFIFO' != CRD 'BestEffortFIFO'",
        "spec.cohort: not a field of the CRD",
    ]


def _strict(schema: dict) -> dict:
    """The CRD schema with unknown fields refused (additionalProperties: false wherever
    properties are listed and unknown fields are not preserved)."""
    schema = copy.deepcopy(schema)

    def walk(s):
        if not isinstance(s, dict):
            return
        if "properties" in s and "additionalProperties" not in s and not s.get("x-kubernetes-preserve-unknown-fields"):
            s["additionalProperties"] = False
        for v in s.get("properties", {}).values():
            walk(v)
        walk(s.get("items"))
        if isinstance(s.get("additionalProperties"), dict):
            walk(s["additionalProperties"])
        for v in s.get("anyOf", []):
            walk(v)
    walk(schema)
    return schema


def _example_objects():
    out = []
    for path in sorted((REPO_ROOT / "scenarios").rglob("*.yaml")):
        for doc in load_documents(path):
            key = (doc.data.get("apiVersion"), doc.data.get("kind"))
            if key in CRD_KINDS:
                out.append(pytest.param(key, doc.data, id=f"{path.relative_to(REPO_ROOT)}:{doc.data['kind']}/"
                                                           f"{doc.data['metadata']['name']}"))
    return out


EXAMPLES = _example_objects()


def test_examples_hold_kueue_and_karpenter_objects():
    kinds = {p.values[0][1] for p in EXAMPLES}
    assert {"ClusterQueue", "LocalQueue", "ResourceFlavor", "NodePool"} <= kinds


@pytest.mark.parametrize("key,obj", EXAMPLES)
def test_example_objects_validate_against_the_crd(shared_data, key, obj):
    schema = _strict(_crd(shared_data, *CRD_KINDS[key]))
    jsonschema.Draft7Validator(schema).validate(obj)


def test_strict_crd_schema_refuses_a_misspelt_field(shared_data):
    schema = _strict(_crd(shared_data, *CRD_KINDS[("kueue.x-k8s.io/v1beta2", "LocalQueue")]))
    obj = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "q"},
           "spec": {"clusterQueues": "x"}}
    with pytest.raises(jsonschema.ValidationError, match="clusterQueues"):
        jsonschema.Draft7Validator(schema).validate(obj)


def test_examples_folder_is_readable():
    files = list(iter_files(REPO_ROOT / "scenarios" / "kueue-borrowing"))
    assert [f.name for f in files] == ["cluster.yaml", "queues.yaml", "scenario.yaml", "workload.yaml"]
