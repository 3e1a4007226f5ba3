"""Every Kubernetes manifest the book shows is a complete, valid object (tools/book_manifests.py).

Core objects are validated with kubernetes-validate in strict mode against Kubernetes
``KUBERNETES_VERSION``; Karpenter and Kueue objects against the real CRDs in the shared data
(skipped, naming the path, when it is absent); device plugin configs with Lab 02's parser.
A misspelled field must fail each of these checks: the tests below show it does.
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest
import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT / "tools"))

import book_manifests as bm  # noqa: E402

POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: notebook-0
  namespace: research
spec:
  priorityClassName: gpu-best-effort
  nodeSelector:
    nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3
  tolerations:
  - key: nvidia.com/gpu
    operator: Exists
    effect: NoSchedule
  containers:
  - name: jupyter
    image: quay.io/jupyter/pytorch-notebook:latest
    resources:
      limits:
        nvidia.com/gpu.shared: 1
"""

NODEPOOL = """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: gpu-inference
spec:
  limits:
    nvidia.com/gpu: "16"
  disruption:
    consolidationPolicy: WhenEmpty
    consolidateAfter: 10m
    budgets:
    - nodes: "1"
  template:
    spec:
      expireAfter: 720h
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: gpu
      requirements:
      - key: karpenter.k8s.aws/instance-gpu-name
        operator: In
        values: ["h100"]
      taints:
      - key: nvidia.com/gpu
        value: present
        effect: NoSchedule
"""

CLUSTER_QUEUE = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: training
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: ["nvidia.com/gpu"]
    flavors:
    - name: h100
      resources:
      - name: nvidia.com/gpu
        nominalQuota: 16
"""

DEVICE_PLUGIN_CONFIG = """\
version: v1
flags:
  migStrategy: none
sharing:
  timeSlicing:
    renameByDefault: true
    failRequestsGreaterThanOne: true
    resources:
    - name: nvidia.com/gpu
      replicas: 4
"""


def _manifest(text: str) -> bm.Manifest:
    doc = yaml.safe_load(text)
    kind = bm.classify(doc)
    assert kind is not None
    return bm.Manifest("test.md:1", doc, kind)


@pytest.fixture(scope="module")
def schemas(shared_data: Path) -> bm.Schemas:
    """The CRD schemas of the shared data; skips (naming the path) when they are absent."""
    loaded = bm.Schemas.load(shared_data)
    if loaded.missing:
        pytest.skip("; ".join(loaded.missing.values()))
    return loaded


@pytest.fixture(scope="module")
def core_schemas() -> bm.Schemas:
    """Schemas for core objects and device plugin configs (no shared data needed)."""
    return bm.Schemas.load(bm.shared_data_dir())


def _rename(doc: dict, path: list, new_key: str) -> dict:
    """A copy of ``doc`` with the key at ``path`` renamed to ``new_key`` (a misspelling)."""
    doc = copy.deepcopy(doc)
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    parent[new_key] = parent.pop(path[-1])
    return doc


# -- the validators accept the real thing and refuse a misspelled field -----------------

def test_valid_pod_passes_and_misspelled_field_fails(core_schemas):
    good = _manifest(POD)
    assert core_schemas.validate(good) == []
    bad = _rename(good.document, ["spec", "containers", 0, "resources"], "resouces")
    errors = core_schemas.validate(bm.Manifest("test.md:1", bad, "kubernetes"))
    assert len(errors) == 1
    assert "spec.containers[0]: unknown field 'resouces'" in errors[0]
    assert "Pod 'notebook-0'" in errors[0] and f"Kubernetes {bm.KUBERNETES_VERSION}" in errors[0]


@pytest.mark.parametrize("text, path, typo", [
    ("""\
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: inference-critical}
value: 100000
preemptionPolicy: Never
""", ["preemptionPolicy"], "preemptionpolicy"),
    ("""\
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: llm, namespace: serving}
spec:
  minAvailable: 2
  selector: {matchLabels: {app: llm}}
""", ["spec", "minAvailable"], "minAvailible"),
])
def test_core_objects_refuse_unknown_fields(core_schemas, text, path, typo):
    good = _manifest(text)
    assert core_schemas.validate(good) == []
    bad = bm.Manifest("x.md:3", _rename(good.document, path, typo), "kubernetes")
    (error,) = core_schemas.validate(bad)
    assert f"unknown field '{typo}'" in error and error.startswith("x.md:3: ")


def test_metadata_is_required_and_strict(core_schemas):
    doc = yaml.safe_load(POD)
    del doc["metadata"]
    (error,) = core_schemas.validate(bm.Manifest("p.md:1", doc, "kubernetes"))
    assert "metadata.name: required" in error
    doc = yaml.safe_load(POD)
    doc["metadata"]["lables"] = {"a": "b"}
    (error,) = core_schemas.validate(bm.Manifest("p.md:1", doc, "kubernetes"))
    assert "metadata: unknown field 'lables'" in error


def test_nodepool_against_the_karpenter_crd(schemas):
    good = _manifest(NODEPOOL)
    assert schemas.validate(good) == []
    bad = _rename(good.document, ["spec", "template", "spec", "expireAfter"], "expireAftr")
    errors = schemas.validate(bm.Manifest("np.md:1", bad, "kubernetes"))
    assert len(errors) == 1
    assert "spec.template.spec: unknown field 'expireAftr'" in errors[0]
    assert "karpenter.sh_nodepools.yaml" in errors[0]


def test_nodepool_enum_pattern_and_required_fields(schemas):
    doc = yaml.safe_load(NODEPOOL)
    doc["spec"]["disruption"]["consolidationPolicy"] = "WhenIdle"   # not in the enum
    doc["spec"]["template"]["spec"]["expireAfter"] = "30 days"      # not a duration
    del doc["spec"]["template"]["spec"]["nodeClassRef"]             # required
    errors = schemas.validate(bm.Manifest("np.md:1", doc, "kubernetes"))
    assert len(errors) == 3, errors
    text = "\n".join(errors)
    assert "spec.disruption.consolidationPolicy: 'WhenIdle' is not one of" in text
    assert "spec.template.spec.expireAfter: '30 days' does not match" in text
    assert "'nodeClassRef' is a required property" in text


def test_nodepool_free_form_maps_stay_open(schemas):
    """limits and template labels are maps of any key (additionalProperties in the CRD)."""
    doc = yaml.safe_load(NODEPOOL)
    doc["spec"]["limits"]["cpu"] = "1000"
    doc["spec"]["template"]["metadata"] = {"labels": {"tier": "enterprise"}}
    assert schemas.validate(bm.Manifest("np.md:1", doc, "kubernetes")) == []


def test_cluster_queue_against_the_kueue_crd(schemas):
    good = _manifest(CLUSTER_QUEUE)
    assert schemas.validate(good) == []
    bad = _rename(good.document, ["spec", "resourceGroups", 0, "flavors", 0, "resources", 0,
                                  "nominalQuota"], "nominalQouta")
    errors = schemas.validate(bm.Manifest("cq.md:1", bad, "kubernetes"))
    where = "spec.resourceGroups[0].flavors[0].resources[0]"
    assert sorted(errors) == sorted([
        f"cq.md:1: ClusterQueue 'training': {where}: 'nominalQuota' is a required property "
        "(kueue/kueue.x-k8s.io_clusterqueues.yaml)",
        f"cq.md:1: ClusterQueue 'training': {where}: unknown field 'nominalQouta'; expected one of "
        "borrowingLimit, lendingLimit, name, nominalQuota (kueue/kueue.x-k8s.io_clusterqueues.yaml)"])


def test_deprecated_kueue_version_and_unserved_kinds_are_errors(schemas):
    doc = yaml.safe_load(CLUSTER_QUEUE)
    doc["apiVersion"] = "kueue.x-k8s.io/v1beta1"
    errors = schemas.validate(bm.Manifest("cq.md:1", doc, "kubernetes"))
    assert any("deprecated" in e and "kueue.x-k8s.io/v1beta2" in e for e in errors)
    ec2 = {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": "gpu"},
           "spec": {}}
    (error,) = schemas.validate(bm.Manifest("n.md:1", ec2, "kubernetes"))
    assert "no schema for kind 'EC2NodeClass'" in error
    claim = {"apiVersion": "karpenter.sh/v1", "kind": "Provisioner", "metadata": {"name": "x"}}
    (error,) = schemas.validate(bm.Manifest("n.md:1", claim, "kubernetes"))
    assert "expected one of NodeClaim, NodePool" in error


def test_device_plugin_config_with_the_lab02_parser(core_schemas):
    good = _manifest(DEVICE_PLUGIN_CONFIG)
    assert good.kind == "device-plugin-config"
    assert core_schemas.validate(good) == []
    bad = _rename(good.document, ["sharing", "timeSlicing", "renameByDefault"], "renameByDefualt")
    (error,) = core_schemas.validate(bm.Manifest("c.md:1", bad, "device-plugin-config"))
    assert "sharing.timeSlicing.renameByDefualt: unknown key" in error


def test_device_plugin_config_inside_a_configmap(core_schemas):
    cm = {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": "device-plugin-configs", "namespace": "gpu-operator"},
          "data": {"time-sliced": DEVICE_PLUGIN_CONFIG, "note": "plain text"}}
    assert core_schemas.validate(bm.Manifest("cm.md:1", cm, "kubernetes")) == []
    cm["data"]["time-sliced"] = DEVICE_PLUGIN_CONFIG.replace("replicas: 4", "replicas: 1")
    (error,) = core_schemas.validate(bm.Manifest("cm.md:1", cm, "kubernetes"))
    assert "data['time-sliced']" in error and "replicas: expected an integer >= 2" in error


def test_missing_crds_are_reported_with_the_path(tmp_path):
    loaded = bm.Schemas.load(tmp_path)
    assert set(loaded.missing) == {"karpenter.sh", "kueue.x-k8s.io"}
    with pytest.raises(bm.MissingDataError, match=str(tmp_path / "karpenter")):
        loaded.validate(_manifest(NODEPOOL))
    assert loaded.validate(_manifest(POD)) == []   # core objects need no shared data


# -- finding manifests on a page -----------------------------------------------------------

PAGE = '''\
---
jupytext: {}
---
# A page

```yaml
# a whole object
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: batch
value: 1000
---
apiVersion: v1
kind: Namespace
metadata:
  name: research
```

````{exercise}
Fix this:

```{code-block} yaml
:caption: a NodePool
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: x
```
````

```{code-cell} ipython3
CONFIG = """
version: v1
sharing:
  timeSlicing:
    resources:
    - name: nvidia.com/gpu
      replicas: 2
"""
NOT_YAML = """just: a mapping
of: text"""
```

```yaml
resources:
  limits:
    nvidia.com/gpu: 1
```
'''


def test_markdown_fences_directives_and_code_literals_are_found():
    errors: list[str] = []
    found = bm.manifests_in_markdown(PAGE, "page.md", errors)
    assert [(m.where, m.label) for m in found] == [
        ("page.md:7", "PriorityClass 'batch'"),     # first document of the fence
        ("page.md:14", "Namespace 'research'"),     # after the ---
        ("page.md:25", "NodePool 'x'"),             # inside the exercise, option line skipped
        ("page.md:33", "device plugin config"),     # string literal in a code cell
    ]
    # the excerpt is not a complete object: a yaml fence must not hold it
    assert errors == ["page.md:46: a yaml block must hold complete objects (apiVersion, kind, "
                      "metadata) or a device plugin config file; fence an excerpt as text instead"]


def test_invalid_yaml_in_a_fence_is_reported_with_its_line():
    errors: list[str] = []
    assert bm.manifests_in_markdown("text\n\n```yaml\na: [1\n```\n", "p.md", errors) == []
    assert len(errors) == 1 and errors[0].startswith("p.md:") and "invalid YAML" in errors[0]


def test_executed_notebook_outputs_are_found():
    nb = {"cells": [
        {"cell_type": "markdown", "source": "Text only."},
        {"cell_type": "code", "source": "show(pool)", "outputs": [
            {"output_type": "display_data",
             "data": {"text/markdown": "```yaml\n" + NODEPOOL + "```\n", "text/plain": "<Markdown>"}},
            {"output_type": "stream", "name": "stdout", "text": DEVICE_PLUGIN_CONFIG},
            {"output_type": "stream", "name": "stdout", "text": "stranded: 4\npods: 3\n"},
        ]},
    ]}
    errors: list[str] = []
    found = bm.manifests_in_notebook(nb, "ch11.ipynb", errors)
    assert errors == []
    assert [(m.where, m.label) for m in found] == [
        ("ch11.ipynb cell 1 output:2", "NodePool 'gpu-inference'"),
        ("ch11.ipynb cell 1 output:1", "device plugin config"),
    ]


def _page(book: Path, name: str, code: str) -> Path:
    page = book / name
    page.write_text("---\njupytext:\n  text_representation:\n    format_name: myst\n"
                    "kernelspec:\n  name: python3\n  display_name: Python 3\n---\n# A page\n\n"
                    f"```{{code-cell}} ipython3\n{code}\n```\n", encoding="utf-8")
    return page


def test_built_manifests_fail_loudly_when_no_output_is_found(tmp_path):
    """An empty build folder is an error per notebook page, never "0 manifests, all valid"."""
    book = tmp_path / "book"
    book.mkdir()
    _page(book, "ch01.md", "print(1)")
    (book / "glossary.md").write_text("# Glossary\n", encoding="utf-8")   # not a notebook
    found, errors = bm.built_manifests(tmp_path / "_build", book_dir=book)
    assert found == [] and len(errors) == 1
    assert errors[0].startswith("ch01.md: no entry in the execution cache")


def test_built_manifests_read_the_execution_cache_of_an_incremental_build(tmp_path):
    """A page taken from the cache has no outputs in jupyter_execute/ (as jupyter-book
    writes it); its outputs come from the cache entry that matches the page's text."""
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn
    from myst_nb.core.read import read_myst_markdown_notebook

    book = tmp_path / "book"
    book.mkdir()
    page = _page(book, "ch11.md", "show(queue)")
    nb = read_myst_markdown_notebook(page.read_text(encoding="utf-8"), path=page)
    import nbformat

    nb.cells[-1].outputs = [nbformat.v4.new_output("stream", name="stdout", text=CLUSTER_QUEUE)]
    build = tmp_path / "_build"
    get_cache(build / ".jupyter_cache").cache_notebook_bundle(
        CacheBundleIn(nb, str(page)), check_validity=False)
    (build / "jupyter_execute").mkdir()
    empty = read_myst_markdown_notebook(page.read_text(encoding="utf-8"), path=page)
    (build / "jupyter_execute" / "ch11.ipynb").write_text(json.dumps(empty), encoding="utf-8")
    found, errors = bm.built_manifests(build / "html", book_dir=book)
    assert errors == []
    assert [(m.where, m.label) for m in found] == [("ch11.ipynb cell 0 output:1",
                                                    "ClusterQueue 'training'")]
    # the page's text changed since the build: no cache entry matches, the stale
    # jupyter_execute copy (no outputs) is all there is, and it holds no manifest
    _page(book, "ch11.md", "show(other)")
    assert bm.built_manifests(build, book_dir=book) == ([], [])


def test_strictify_follows_the_crd_markers():
    schema = bm._strictify({"type": "object", "properties": {
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "map": {"type": "object", "additionalProperties": {"type": "string"}},
        "qty": {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]},
        "opt": {"type": "string", "nullable": True},
        "closed": {"type": "object"},
    }})
    import jsonschema

    v = jsonschema.Draft4Validator(schema)
    assert not list(v.iter_errors({"free": {"x": 1}, "map": {"k": "v"}, "qty": 3, "opt": None}))
    assert not list(v.iter_errors({"qty": "3"}))
    assert [e.validator for e in v.iter_errors({"closed": {"x": 1}})] == ["additionalProperties"]
    assert [e.validator for e in v.iter_errors({"extra": 1})] == ["additionalProperties"]


# -- the book itself ----------------------------------------------------------------------

def _check(manifests, schemas, crd: bool) -> list[str]:
    errors: list[str] = []
    for m in manifests:
        if (schemas.needs_crd(m) is not None) == crd:
            errors += schemas.validate(m)
    return errors


def test_every_manifest_in_the_book_sources_validates(core_schemas):
    """Fenced yaml blocks and code-cell literals of every page; core objects and device plugin
    configs (the Karpenter/Kueue ones in the next test)."""
    manifests, errors = bm.source_manifests()
    errors += _check(manifests, core_schemas, crd=False)
    assert not errors, "\n".join(errors)


def test_every_karpenter_and_kueue_object_in_the_book_sources_validates(schemas):
    manifests, _ = bm.source_manifests()
    errors = _check(manifests, schemas, crd=True)
    assert not errors, "\n".join(errors)


@pytest.mark.slow
def test_every_manifest_computed_at_build_time_validates(built_book):
    """Manifests printed by code cells (the capstone's configuration) in the executed
    notebooks: core objects and device plugin configs always, Karpenter and Kueue objects
    when the shared data holds their CRDs (else the test skips, naming the path)."""
    schemas = bm.Schemas.load(bm.shared_data_dir())
    manifests, errors = bm.built_manifests(built_book)
    assert not errors, "\n".join(errors)   # a page whose outputs cannot be found fails here
    # The capstone's configuration (ch11), by hand: 2 ConfigMaps, 1 NodePool (training: the
    # MIG and time-sliced tiers are static node groups, their resources unknown to Karpenter's
    # AWS provider), 4 PriorityClasses, Deployment + PDB + 2 Pods, ResourceFlavor +
    # ClusterQueue + LocalQueue + Job = 15 objects; chapters 5 and 9 print one more each.
    labels = {m.label for m in manifests if m.where.startswith("ch11_capstone")}
    assert {"NodePool 'gpu-training'", "ClusterQueue 'training'", "Job 'pretrain-7b'",
            "PodDisruptionBudget 'chat'", "PriorityClass 'training-urgent'"} <= labels, labels
    assert {lb for lb in labels if lb.startswith("NodePool")} == {"NodePool 'gpu-training'"}, labels
    assert len(labels) >= 15, f"found {len(manifests)} manifests in {built_book}: {sorted(labels)}"
    errors += _check(manifests, schemas, crd=False)
    assert not errors, "\n".join(errors)
    crd = [m for m in manifests if schemas.needs_crd(m) is not None]
    if any(schemas.needs_crd(m) in schemas.missing for m in crd):
        pytest.skip("; ".join(schemas.missing.values()))
    errors = bm.validate_all(crd, schemas)
    assert not errors, "\n".join(errors)


def test_the_capstone_states_the_kubernetes_version_it_is_validated_against():
    text = (bm.BOOK_DIR / "ch11_capstone.md").read_text(encoding="utf-8")
    assert f"Kubernetes {bm.KUBERNETES_VERSION}" in text
