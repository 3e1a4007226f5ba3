"""Checking each scenario object against its schema, with one-line errors.

- Kubernetes core objects (:data:`CORE_KINDS`) are checked against the official schemas of
  Kubernetes :data:`KUBERNETES_VERSION` that ``kubernetes-validate`` ships, in their strict form
  (unknown fields are errors, as ``kubectl apply --validate=strict``). One validator is built
  per kind and reused (``kubernetes_validate.validate`` re-reads the schema files for every
  object), and every error is looked at, so a misspelt field is reported as an unknown field
  rather than as the required field it hides.
- The kinds of :data:`~.schemas.SCHEMAS` go through ``jsonschema`` with the reader's own
  typed subset (unknown fields are errors too).
- A JobSet (:data:`~.schemas.JOBSET`): its own fields by the reader's schema, its ``metadata``
  by Kubernetes' strict ``ObjectMeta`` and each ``spec.replicatedJobs[i].template`` by the
  strict batch/v1 ``JobTemplateSpec`` (the ``metadata`` and ``spec`` of a Job), with the
  API server's name rules; errors name the full path from the JobSet
  (``spec.replicatedJobs[1].template.spec.template.spec.containers[0]...``).

Every error is a :class:`~.yamlio.ScenarioError` naming ``file:line:column``, the object
(``Kind/name``) and the field path, e.g.
``cluster.yaml:14:9: ClusterQueue/team-a: spec.resourceGroups[0].flavors[0].resources[0].nominalQuot: unknown field (expected one of: borrowingLimit, lendingLimit, name, nominalQuota)``.
"""

from __future__ import annotations

import difflib
import functools
import re
from typing import Any

from lab01_cluster_sim.scenario.schemas import (CRD_ONLY_FIELDS, EMBEDDED_METADATA, JOBSET_API, KSC, SCHEDULER_PLUGINS,
                                                SCHEMAS)
from lab01_cluster_sim.scenario.yamlio import Document, ScenarioError, format_path, where

KUBERNETES_VERSION = "1.35"
"""Kubernetes version whose API schemas core objects are checked against (the book's)."""

CORE_KINDS = {("v1", "Node"), ("v1", "Pod"), ("batch/v1", "Job"), ("scheduling.k8s.io/v1", "PriorityClass")}
"""Kubernetes kinds checked with kubernetes-validate."""

MULTI_POD_SET_KINDS = ("MPIJob", "PyTorchJob", "TFJob", "XGBoostJob", "PaddleJob", "JAXJob", "TrainJob",
                       "LeaderWorkerSet", "RayJob", "RayCluster")
"""Workload kinds with several pod sets that Kueue admits (one flavor per pod set) and that the
reader does not read: refused naming the kind and how to write the same job as a JobSet, the
multi-role kind it reads (:mod:`.jobset`)."""



def object_name(data: Any) -> str:
    """``Kind/name`` (``Kind/namespace/name`` when namespaced) for messages."""
    if not isinstance(data, dict):
        return "(not an object)"
    kind = data.get("kind", "?")
    meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    name = meta.get("name")
    if name is None:
        return str(kind)
    ns = meta.get("namespace")
    return f"{kind}/{ns}/{name}" if ns else f"{kind}/{name}"


def supported_kinds() -> list[str]:
    """``apiVersion kind`` of every kind the reader accepts, sorted."""
    return sorted(f"{api} {kind}" for api, kind in CORE_KINDS | set(SCHEMAS))


def validate_document(doc: Document) -> None:
    """Check ``doc`` (module docstring).

    Raises:
        ScenarioError: not an object, an unknown ``apiVersion``/``kind``, or a schema violation.
    """
    data = doc.data
    if not isinstance(data, dict):
        raise ScenarioError(f"{where(doc.file, doc.pos(()))}: expected a Kubernetes object (a mapping with "
                            f"apiVersion and kind), got {type(data).__name__}")
    api, kind = data.get("apiVersion"), data.get("kind")
    if not isinstance(api, str) or not isinstance(kind, str):
        missing = "apiVersion" if not isinstance(api, str) else "kind"
        raise ScenarioError(f"{where(doc.file, doc.pos(()))}: {object_name(data)}: {missing}: missing or not a string")
    key = (api, kind)
    if key == KSC:
        _scheduler_plugins(doc)
    if key in CORE_KINDS:
        _validate_core(doc)
    elif key == (JOBSET_API, "JobSet"):
        _validate_jobset(doc)
    elif key in SCHEMAS:
        _validate_schema(doc, key)
    elif kind in MULTI_POD_SET_KINDS:
        raise ScenarioError(f"{where(doc.file, doc.pos(('kind',)))}: {object_name(data)}: a {kind} (a workload with "
                            "several pod sets, e.g. a launcher and workers) is not read by scenarios; write the same "
                            f"job as a {JOBSET_API} JobSet: one replicatedJob per role (a launcher replicatedJob of 1 "
                            "replica, a workers replicatedJob of as many pods as workers), each with its pod template")
    else:
        raise ScenarioError(f"{where(doc.file, doc.pos(('kind',)))}: {object_name(data)}: apiVersion {api!r} kind "
                            f"{kind!r} is not a kind scenarios accept; expected one of: {', '.join(supported_kinds())}")


def _scheduler_plugins(doc: Document) -> None:
    """A KubeSchedulerConfiguration naming a plugin the simulator does not model (Coscheduling,
    a plugin's config, an enabled or disabled plugin) is refused naming that plugin, before
    its arguments are looked at.

    Raises:
        ScenarioError: at the plugin's ``name``.
    """
    for pi, profile in enumerate(doc.data.get("profiles") or []):
        if not isinstance(profile, dict):
            continue
        found: list[tuple[tuple, Any]] = []
        for ci, pc in enumerate(profile.get("pluginConfig") or []):
            if isinstance(pc, dict):
                found.append((("profiles", pi, "pluginConfig", ci, "name"), pc.get("name")))
        plugins = profile.get("plugins") if isinstance(profile.get("plugins"), dict) else {}
        for point, sets in plugins.items():
            for which in ("enabled", "disabled"):
                for i, p in enumerate((sets or {}).get(which) or [] if isinstance(sets, dict) else []):
                    if isinstance(p, dict):
                        found.append((("profiles", pi, "plugins", point, which, i, "name"), p.get("name")))
        for path, name in found:
            if name not in SCHEDULER_PLUGINS and name != "*":
                raise ScenarioError(f"{where(doc.file, doc.pos(path))}: {object_name(doc.data)}: {format_path(path)}: "
                                    f"plugin {name!r} is not modelled; the simulator runs kube-scheduler's default "
                                    f"profile and models the configuration of {', '.join(SCHEDULER_PLUGINS)}")


def _jsonschema() -> Any:
    """``jsonschema``, imported on first use so that cheap checks (size, YAML, kinds) answer
    first. Its format module would build the ``rfc3987_syntax`` grammars at import (seconds
    of CPU); the validators here check no formats, so that optional import is skipped while
    jsonschema loads (an import of rfc3987_syntax elsewhere afterwards works as usual)."""
    import sys

    if "jsonschema" not in sys.modules and "rfc3987_syntax" not in sys.modules:
        sys.modules["rfc3987_syntax"] = None  # type: ignore[assignment]  # makes its import fail
        try:
            import jsonschema
        finally:
            del sys.modules["rfc3987_syntax"]
    import jsonschema

    return jsonschema


@functools.lru_cache(maxsize=None)
def _core_validator(api: str, kind: str) -> Any:
    """The strict Kubernetes :data:`KUBERNETES_VERSION` schema of ``kind`` as a reusable
    validator (file names as kubernetes-validate lays them out: ``pod-v1.json``)."""
    jsonschema = _jsonschema()
    from kubernetes_validate.utils import schema_contents
    from referencing import Registry, Resource

    folder = f"kubernetes-json-schema/v{KUBERNETES_VERSION}.0-local-strict"
    group = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api)
    schema = schema_contents(f"{folder}/{kind.lower()}-{group}.json", KUBERNETES_VERSION)
    registry = Resource.from_contents(schema) @ Registry()
    registry = Resource.from_contents(schema_contents(f"{folder}/_definitions.json", KUBERNETES_VERSION)) @ registry
    return jsonschema.Draft202012Validator(schema, registry=registry)


@functools.lru_cache(maxsize=None)
def _own_validator(key: tuple[str, str]) -> Any:
    jsonschema = _jsonschema()
    return jsonschema.Draft202012Validator(SCHEMAS[key])


_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_QUALIFIED_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
"""The name part of a label key, and a non-empty label value (k8s.io/apimachinery
``pkg/util/validation/validation.go``, ``qualifiedNameFmt``; at most 63 characters)."""


@functools.lru_cache(maxsize=None)
def _definition_validator(name: str) -> Any:
    """The strict Kubernetes :data:`KUBERNETES_VERSION` schema of one API type of the shared
    definitions (``io.k8s.api.batch.v1.JobTemplateSpec``...) as a reusable validator."""
    jsonschema = _jsonschema()
    from kubernetes_validate.utils import schema_contents
    from referencing import Registry, Resource

    folder = f"kubernetes-json-schema/v{KUBERNETES_VERSION}.0-local-strict"
    defs = Resource.from_contents(schema_contents(f"{folder}/_definitions.json", KUBERNETES_VERSION))
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema",
              "$ref": f"{defs.id()}#/$defs/{name}"}
    return jsonschema.Draft202012Validator(schema, registry=defs @ Registry())


def _validate_core(doc: Document) -> None:
    _report(doc, _core_validator(doc.data["apiVersion"], doc.data["kind"]))
    _names(doc)
    _labels(doc)


def _validate_jobset(doc: Document) -> None:
    """A JobSet: its own fields, then its metadata and each replicated job's template against
    Kubernetes' strict schemas (module docstring); the templates' ``metadata`` (and their pod
    templates') hold only what the JobSet CRD keeps of an embedded ObjectMeta."""

    _report(doc, _own_validator((JOBSET_API, "JobSet")))
    _report(doc, _definition_validator("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"), ("metadata",))
    for i in range(len(doc.data["spec"].get("replicatedJobs") or [])):
        base = ("spec", "replicatedJobs", i, "template")
        _report(doc, _definition_validator("io.k8s.api.batch.v1.JobTemplateSpec"), base)
        for mpath in (base + ("metadata",), base + ("spec", "template", "metadata")):
            meta = doc.data
            for part in mpath:
                meta = meta[part] if isinstance(meta, list) else (meta or {}).get(part)
            for key in meta or {}:
                if key not in EMBEDDED_METADATA:
                    raise ScenarioError(f"{where(doc.file, doc.key_pos(mpath + (key,)))}: {object_name(doc.data)}: "
                                        f"{format_path(mpath + (key,))}: unknown field (the JobSet CRD keeps of an "
                                        f"embedded metadata only: {', '.join(EMBEDDED_METADATA)})")
    _names(doc)
    _labels(doc)


def _names(doc: Document) -> None:
    # the API server's name rules, which the OpenAPI schemas do not carry: object names are
    # DNS-1123 subdomains (at most 253 characters), namespaces DNS-1123 labels (at most 63)
    meta = doc.data.get("metadata") or {}
    # a name is required (k8s.io/apimachinery pkg/api/validation/objectmeta.go, ValidateObjectMeta:
    # "name or generateName is required"); the OpenAPI ObjectMeta leaves it optional
    if not isinstance(meta.get("name"), str):
        raise ScenarioError(f"{where(doc.file, doc.pos(('metadata', 'name')))}: {object_name(doc.data)}: "
                            "metadata.name: Required value: name or generateName is required (Kubernetes' "
                            "ValidateObjectMeta; generateName is not modelled: give metadata.name)")
    for key, rx, most, what in (("name", _SUBDOMAIN, 253, "a DNS-1123 subdomain"),
                                ("namespace", _LABEL, 63, "a DNS-1123 label")):
        value = meta.get(key)
        if isinstance(value, str) and (len(value) > most or not rx.fullmatch(value)):
            raise ScenarioError(f"{where(doc.file, doc.pos(('metadata', key)))}: {object_name(doc.data)}: "
                                f"metadata.{key}: {value!r} is not a valid {key}: Kubernetes names are lower-case "
                                f"letters, digits, '-'{' and .' if key == 'name' else ''} ({what}, at most {most} "
                                "characters)")


def _labels(doc: Document) -> None:
    """The API server's label rules (k8s.io/apimachinery ``pkg/apis/meta/v1/validation``,
    ``ValidateLabels``: each key ``IsQualifiedName``, an optional DNS-1123 subdomain prefix of
    at most 253 characters, ``/``, a name of at most 63; each value ``IsValidLabelValue``,
    empty or at most 63 characters of the same form), which the OpenAPI schemas do not carry."""
    labels = (doc.data.get("metadata") or {}).get("labels") or {}
    for key, value in labels.items():
        prefix, _, name = key.rpartition("/")
        if (len(name) > 63 or not _QUALIFIED_NAME.fullmatch(name)
                or ("/" in key and (not prefix or len(prefix) > 253 or not _SUBDOMAIN.fullmatch(prefix)))):
            raise ScenarioError(f"{where(doc.file, doc.key_pos(('metadata', 'labels', key)))}: {object_name(doc.data)}: "
                                f"metadata.labels: {key!r} is not a valid label key: an optional DNS-1123 subdomain "
                                "prefix and '/', then at most 63 letters, digits, '-', '_' or '.', starting and "
                                "ending with a letter or digit")
        if isinstance(value, str) and value and (len(value) > 63 or not _QUALIFIED_NAME.fullmatch(value)):
            raise ScenarioError(f"{where(doc.file, doc.pos(('metadata', 'labels', key)))}: {object_name(doc.data)}: "
                                f"metadata.labels.{key}: {value!r} is not a valid label value: at most 63 letters, "
                                "digits, '-', '_' or '.', starting and ending with a letter or digit")


def _validate_schema(doc: Document, key: tuple[str, str]) -> None:
    _report(doc, _own_validator(key))


def _report(doc: Document, validator: Any, at: tuple = ()) -> None:
    """Check the value at path ``at`` of ``doc`` (the whole document by default) with
    ``validator``; raise the first error as one line, its path taken from the document."""
    # An unknown field is usually the cause of the other errors (a misspelt required field):
    # report it first, then the rest in document order.
    instance = doc.data
    for part in at:
        instance = instance[part]
    errors = sorted(validator.iter_errors(instance),
                    key=lambda e: (e.validator != "additionalProperties", list(map(str, e.absolute_path)), e.message))
    if errors:
        raise _schema_error(doc, _deepest(errors), at)


def _deepest(errors: list) -> Any:
    # the first error, or a deeper one at the same kind of failure (more precise path)
    best = errors[0]
    for e in errors[1:]:
        if e.validator == best.validator and len(e.absolute_path) > len(best.absolute_path):
            best = e
    return best


def _schema_error(doc: Document, exc: Any, at: tuple = ()) -> ScenarioError:
    path = at + tuple(exc.absolute_path)
    validator = getattr(exc, "validator", "")
    instance = exc.instance
    schema = exc.schema if isinstance(getattr(exc, "schema", None), dict) else {}
    if validator == "additionalProperties" and isinstance(instance, dict):
        allowed = set(schema.get("properties", {}))
        extra = sorted(k for k in instance if k not in allowed)
        if extra:
            field_path = path + (extra[0],)
            pattern = tuple("[]" if isinstance(p, int) else p for p in path)
            real = CRD_ONLY_FIELDS.get((doc.data.get("apiVersion"), doc.data.get("kind")), {}).get(pattern, frozenset())
            if extra[0] in real:
                return ScenarioError(f"{where(doc.file, doc.key_pos(field_path))}: {object_name(doc.data)}: "
                                     f"{format_path(field_path)} is not modelled (a field of {doc.data['apiVersion']} "
                                     f"{doc.data['kind']}; remove it to run the scenario; modelled here: "
                                     f"{', '.join(sorted(allowed)) or 'none'})")
            expected = ", ".join(sorted(allowed)) or "no fields"
            close = difflib.get_close_matches(str(extra[0]), sorted(allowed), n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            return ScenarioError(f"{where(doc.file, doc.key_pos(field_path))}: {object_name(doc.data)}: "
                                 f"{format_path(field_path)}: unknown field ({hint}expected one of: {expected})")
    if validator == "required":
        return ScenarioError(f"{where(doc.file, doc.pos(path))}: {object_name(doc.data)}: {format_path(path)}: "
                             f"{exc.message}")
    if validator == "enum":
        values = ", ".join(map(str, schema.get("enum", [])))
        return ScenarioError(f"{where(doc.file, doc.pos(path))}: {object_name(doc.data)}: {format_path(path)}: "
                             f"{instance!r} is not supported; expected one of: {values}")
    if validator == "anyOf" and schema.get("x-kubernetes-int-or-string"):
        return ScenarioError(f"{where(doc.file, doc.pos(path))}: {object_name(doc.data)}: {format_path(path)}: "
                             f"expected a Kubernetes quantity such as 8, \"500m\" or \"36Gi\", got {instance!r}")
    return ScenarioError(f"{where(doc.file, doc.pos(path))}: {object_name(doc.data)}: {format_path(path)}: "
                         f"{exc.message}")


__all__ = ["CORE_KINDS", "KUBERNETES_VERSION", "MULTI_POD_SET_KINDS", "object_name", "supported_kinds", "validate_document"]
