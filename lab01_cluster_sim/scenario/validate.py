"""Checking each scenario object against its schema, with one-line errors.

- Kubernetes core objects (:data:`CORE_KINDS`) go through ``kubernetes-validate`` in strict
  mode (unknown fields are errors, as ``kubectl apply --validate=strict``) against the
  official schemas of Kubernetes :data:`KUBERNETES_VERSION`.
- The kinds of :data:`~.schemas.SCHEMAS` go through ``jsonschema`` with the reader's own
  typed subset (unknown fields are errors too).

Every error is a :class:`~.yamlio.ScenarioError` naming ``file:line:column``, the object
(``Kind/name``) and the field path, e.g.
``cluster.yaml:14:9: ClusterQueue/team-a: spec.resourceGroups[0].flavors[0].resources[0].nominalQuot: unknown field (expected one of: borrowingLimit, lendingLimit, name, nominalQuota)``.
"""

from __future__ import annotations

import difflib
from typing import Any

import jsonschema

from lab01_cluster_sim.scenario.schemas import SCHEMAS
from lab01_cluster_sim.scenario.yamlio import Document, ScenarioError, format_path, where

KUBERNETES_VERSION = "1.33"
"""Kubernetes version whose API schemas core objects are checked against."""

CORE_KINDS = {("v1", "Node"), ("v1", "Pod"), ("batch/v1", "Job"), ("scheduling.k8s.io/v1", "PriorityClass")}
"""Kubernetes kinds checked with kubernetes-validate."""

_VALIDATORS: dict[tuple[str, str], jsonschema.protocols.Validator] = {}


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
    if key in CORE_KINDS:
        _validate_core(doc)
    elif key in SCHEMAS:
        _validate_schema(doc, key)
    else:
        raise ScenarioError(f"{where(doc.file, doc.pos(('kind',)))}: {object_name(data)}: apiVersion {api!r} kind "
                            f"{kind!r} is not a kind scenarios accept; expected one of: {', '.join(supported_kinds())}")


def _validate_core(doc: Document) -> None:
    import kubernetes_validate

    try:
        kubernetes_validate.validate(doc.data, KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.ValidationError as exc:
        raise _schema_error(doc, exc) from None
    except kubernetes_validate.utils.SchemaNotFoundError as exc:  # pragma: no cover - CORE_KINDS all exist
        raise ScenarioError(f"{where(doc.file, doc.pos(()))}: {object_name(doc.data)}: {exc.message}") from None


def _validate_schema(doc: Document, key: tuple[str, str]) -> None:
    validator = _VALIDATORS.get(key)
    if validator is None:
        validator = _VALIDATORS[key] = jsonschema.Draft202012Validator(SCHEMAS[key])
    # An unknown field is usually the cause of the other errors (a misspelt required field):
    # report it first, then the rest in document order.
    errors = sorted(validator.iter_errors(doc.data),
                    key=lambda e: (e.validator != "additionalProperties", list(map(str, e.absolute_path)), e.message))
    if errors:
        raise _schema_error(doc, _deepest(errors))


def _deepest(errors: list) -> Any:
    # the first error, or a deeper one at the same kind of failure (more precise path)
    best = errors[0]
    for e in errors[1:]:
        if e.validator == best.validator and len(e.absolute_path) > len(best.absolute_path):
            best = e
    return best


def _schema_error(doc: Document, exc: Any) -> ScenarioError:
    path = tuple(exc.absolute_path)
    validator = getattr(exc, "validator", "")
    instance = exc.instance
    schema = exc.schema if isinstance(getattr(exc, "schema", None), dict) else {}
    if validator == "additionalProperties" and isinstance(instance, dict):
        allowed = set(schema.get("properties", {}))
        extra = sorted(k for k in instance if k not in allowed)
        if extra:
            field_path = path + (extra[0],)
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


__all__ = ["CORE_KINDS", "KUBERNETES_VERSION", "object_name", "supported_kinds", "validate_document"]
