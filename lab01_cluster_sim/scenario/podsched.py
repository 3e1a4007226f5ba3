"""A pod's scheduling constraints and creation time, read for Kueue's flavor assignment and
the engine's placement.

What each field does in the simulator (Kubernetes 1.35 ``PodSpec`` and ``ObjectMeta``):

- ``nodeSelector``: every entry reaches Kueue's flavor assignment (matched against each
  ResourceFlavor's ``nodeLabels``, :func:`lab01_cluster_sim.admission.flavors.flavor_mismatch`).
  The engine places by ``nvidia.com/gpu.product`` (the GPU model, GPU Feature Discovery's
  label); a selector on any other key is listed as not placed by the engine.
- ``affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution``: the terms reach
  flavor assignment (``flavorSelector``, Kueue ``pkg/scheduler/flavorassigner/flavorassigner.go``).
  The engine places the one form it can express, a single term whose expressions are all
  ``nvidia.com/gpu.product In [...]`` (the accepted GPU models); ``matchFields`` and any other
  form are listed as not placed by the engine (kube-scheduler's NodeAffinity filter is not
  modelled yet). ``preferredDuringScheduling...``, ``podAffinity`` and ``podAntiAffinity``
  are not modelled.
- ``tolerations`` (operators Equal and Exists): reach flavor assignment (against each
  flavor's ``nodeTaints``). They only widen where a pod may go; the engine does not yet keep
  untolerating pods off tainted nodes (kube-scheduler's TaintToleration filter is not modelled
  yet). ``tolerationSeconds`` (NoExecute eviction) is listed as not modelled.
- ``metadata.creationTimestamp`` (RFC 3339): orders workloads that arrive at the same
  simulated instant (Kueue orders by it, :func:`lab01_cluster_sim.admission.ordering.age`).

Every function returns what it read and appends ``"file:line:column: Kind/name: why"`` lines
for what is not modelled to the caller's list; a malformed value raises one
:class:`~.yamlio.ScenarioError` naming the field.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from lab01_cluster_sim.admission import api as kq
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.scenario.validate import object_name
from lab01_cluster_sim.scenario.yamlio import Document, ScenarioError, format_path, where

GPU_PRODUCT = "nvidia.com/gpu.product"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


def _err(doc: Document, path: tuple, message: str) -> ScenarioError:
    return ScenarioError(f"{where(doc.file, doc.pos(path))}: {object_name(doc.data)}: {format_path(path)}: {message}")


def _note(doc: Document, path: tuple, message: str) -> str:
    return f"{where(doc.file, doc.pos(path))}: {object_name(doc.data)}: {message}"


def read_pod_scheduling(doc: Document, pod_path: tuple, pod: dict, unsupported: list[str],
                        node_pools: bool = False) -> tuple[tuple[str, ...], dict[str, Any]]:
    """The GPU models the engine may place the pod on, and the ``Job.extras`` entries for
    Kueue (``node_selector``: sorted ``(key, value)`` pairs; ``tolerations``: tuple of
    :class:`~lab01_cluster_sim.admission.api.Toleration`; ``affinity``: tuple of terms of
    :class:`~lab01_cluster_sim.admission.api.MatchExpression`), from ``pod`` found at
    ``pod_path`` of ``doc`` (module docstring).

    With ``node_pools`` (the scenario has Karpenter NodePools, run by the autoscaler), every
    nodeSelector key and the whole required node affinity are placed: they decide which
    NodePools can launch for the pod and which nodes it binds to
    (:mod:`lab01_cluster_sim.autoscaler.requirements`), except the keys Karpenter knows but the
    simulator gives no values to (zone, arch, ...), listed as not modelled.

    Returns:
        ``(models, extras)``: ``models`` () = any GPU model.

    Raises:
        ScenarioError: an affinity expression Kubernetes' API would refuse (e.g. ``Gt`` with
            a value that is not an integer).
    """
    extras: dict[str, Any] = {}
    selector = dict(pod.get("nodeSelector") or {})
    models: tuple[str, ...] = (selector[GPU_PRODUCT],) if GPU_PRODUCT in selector else ()
    if selector:
        extras["node_selector"] = tuple(sorted(selector.items()))
    other = sorted(k for k in selector if k != GPU_PRODUCT)
    if other and not node_pools:
        unsupported.append(_note(doc, pod_path + ("nodeSelector",), f"nodeSelector on {', '.join(other)} is not "
                                 f"placed by the engine (only {GPU_PRODUCT} is; Kueue's flavor assignment reads "
                                 "every key)"))
    tolerations = pod.get("tolerations") or []
    for i, t in enumerate(tolerations):
        if t.get("operator", "Equal") not in ("Equal", "Exists"):
            raise _err(doc, pod_path + ("tolerations", i, "operator"), f"expected Equal or Exists, got "
                       f"{t.get('operator')!r} (the comparison operators of Kubernetes 1.35 are alpha and not modelled)")
        if t.get("operator") == "Exists" and t.get("value"):
            raise _err(doc, pod_path + ("tolerations", i, "value"), "must be empty when operator is Exists")
        if "tolerationSeconds" in t:
            unsupported.append(_note(doc, pod_path + ("tolerations", i, "tolerationSeconds"), "tolerationSeconds "
                                     "(eviction by a NoExecute taint after that time) is not modelled"))
    if tolerations:
        extras["tolerations"] = tuple(kq.Toleration(t.get("key", ""), t.get("operator", "Equal"), t.get("value", ""),
                                                    t.get("effect", "")) for t in tolerations)
    affinity = pod.get("affinity") or {}
    for fld in ("podAffinity", "podAntiAffinity"):
        if fld in affinity:
            unsupported.append(_note(doc, pod_path + ("affinity", fld), f"affinity.{fld} is not modelled"))
    node_aff = affinity.get("nodeAffinity") or {}
    if "preferredDuringSchedulingIgnoredDuringExecution" in node_aff:
        unsupported.append(_note(doc, pod_path + ("affinity", "nodeAffinity",
                                                  "preferredDuringSchedulingIgnoredDuringExecution"),
                                 "preferred node affinity (kube-scheduler's NodeAffinity scoring) is not modelled"))
    if REQUIRED in node_aff:
        base = pod_path + ("affinity", "nodeAffinity", REQUIRED, "nodeSelectorTerms")
        terms = _terms(doc, base, node_aff[REQUIRED].get("nodeSelectorTerms") or [], unsupported)
        extras["affinity"] = terms
        placed = _affinity_models(terms)
        if placed == ():
            raise _err(doc, base, f"the {GPU_PRODUCT} In lists of this term have no model in common (the pod could "
                       "never be placed)")
        if placed is None and node_pools:
            pass     # the autoscaler's Filter matches the terms against node labels
        elif placed is None:
            unsupported.append(_note(doc, base, "required node affinity is not placed by the engine except as one term "
                                     f"of {GPU_PRODUCT} In [...] (Kueue's flavor assignment reads it)"))
        elif models:
            models = tuple(m for m in models if m in placed)
            if not models:
                raise _err(doc, base, f"no GPU model satisfies both nodeSelector {GPU_PRODUCT}: "
                           f"{selector[GPU_PRODUCT]} and this affinity (the pod could never be placed)")
        else:
            models = placed
    if node_pools:
        _refuse_unmodelled_well_known(doc, pod_path, selector, extras.get("affinity", ()), unsupported)
    return models, extras


def _refuse_unmodelled_well_known(doc: Document, pod_path: tuple, selector: dict, terms: tuple,
                                  unsupported: list[str]) -> None:
    """With NodePools: a nodeSelector key or required-affinity key that Karpenter knows before
    launch but the simulator gives no values to (zone, arch, the AWS instance family...) is
    listed as not modelled, rather than answered with Karpenter's "does not have known values",
    which Karpenter would not say (:func:`~lab01_cluster_sim.autoscaler.requirements.unmodelled_well_known`)."""
    from lab01_cluster_sim.autoscaler.requirements import WELL_KNOWN, unmodelled_well_known

    sel = sorted(k for k in selector if unmodelled_well_known(k))
    aff = sorted({e.key for t in terms for e in t if unmodelled_well_known(e.key)})
    for path, what, names in ((("nodeSelector",), "nodeSelector", sel),
                              (("affinity", "nodeAffinity", REQUIRED), "required node affinity", aff)):
        if names:
            unsupported.append(_note(doc, pod_path + path, f"{what} on {', '.join(names)} is not modelled: Karpenter "
                                     "knows its values before launch, the simulator gives it none (modelled: "
                                     f"{', '.join(WELL_KNOWN)})"))


def _terms(doc: Document, base: tuple, raw: list, unsupported: list[str]) -> tuple[kq.NodeSelectorTerm, ...]:
    terms = []
    for ti, term in enumerate(raw):
        if term.get("matchFields"):
            unsupported.append(_note(doc, base + (ti, "matchFields"), "node affinity matchFields (metadata.name) "
                                     "is not modelled"))
        exprs = []
        for ei, e in enumerate(term.get("matchExpressions") or []):
            try:
                exprs.append(kq.MatchExpression(e["key"], e["operator"], tuple(e.get("values") or ())))
            except InputError as exc:
                raise _err(doc, base + (ti, "matchExpressions", ei), str(exc)) from None
        terms.append(tuple(exprs))
    return tuple(terms)


def _affinity_models(terms: tuple[kq.NodeSelectorTerm, ...]) -> tuple[str, ...] | None:
    """The GPU models of a required affinity the engine can place (one term, every
    expression ``nvidia.com/gpu.product In``; their values intersected), else None."""
    if len(terms) != 1 or not terms[0]:
        return None
    allowed: set[str] | None = None
    for e in terms[0]:
        if e.key != GPU_PRODUCT or e.operator != "In":
            return None
        allowed = set(e.values) if allowed is None else allowed & set(e.values)
    return tuple(sorted(allowed or ()))


def node_pool_types(doc: Document, requirements: list[dict], catalogue: tuple) -> tuple:
    """The instance types of ``catalogue`` a NodePool's ``spec.template.spec.requirements``
    allow: every requirement on a well-known label must hold for the type's labels
    (:func:`lab01_cluster_sim.autoscaler.requirements.instance_labels`; Karpenter filters its
    instance types by the NodePool's requirements the same way). ``karpenter.sh/capacity-type``
    is read by the caller.

    Raises:
        ScenarioError: a malformed requirement, or requirements that leave no instance type.
    """
    from lab01_cluster_sim.autoscaler.requirements import CAPACITY_TYPE, instance_labels

    types = tuple(catalogue)
    for i, req in enumerate(requirements):
        if req["key"] == CAPACITY_TYPE:
            continue
        path = ("spec", "template", "spec", "requirements", i)
        try:
            expr = kq.MatchExpression(req["key"], req["operator"], tuple(req.get("values") or ()))
        except InputError as exc:
            raise _err(doc, path, str(exc)) from None
        types = tuple(t for t in types if expr.matches(instance_labels(t, "", "")))
        if not types:
            raise _err(doc, path, "no instance type of the catalogue meets the requirements up to this one")
    return types


def creation_timestamp(doc: Document, meta_path: tuple = ("metadata",)) -> float | None:
    """``metadata.creationTimestamp`` (RFC 3339, e.g. ``2026-01-05T09:30:00Z``) as seconds
    since the epoch, or None when absent.

    Raises:
        ScenarioError: not an RFC 3339 date-time with a time zone.
    """
    meta = doc.data
    for part in meta_path:
        meta = meta.get(part) or {}
    text = meta.get("creationTimestamp")
    if text is None:
        return None
    path = meta_path + ("creationTimestamp",)
    try:
        stamp = dt.datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        raise _err(doc, path, f"expected an RFC 3339 date-time such as 2026-01-05T09:30:00Z, got {text!r}") from None
    if stamp.tzinfo is None:
        raise _err(doc, path, f"expected a time zone (Z or +hh:mm), got {text!r}")
    return stamp.timestamp()


__all__ = ["creation_timestamp", "node_pool_types", "read_pod_scheduling"]
