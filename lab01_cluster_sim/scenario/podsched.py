"""A pod's scheduling constraints and creation time, read for kube-scheduler's plugins, Kueue's
flavor assignment and Karpenter's requirements.

What each field does in the simulator (Kubernetes 1.35 ``PodSpec`` and ``ObjectMeta``; the
types and matching rules are :mod:`lab01_cluster_sim.corev1`'s):

- ``nodeSelector``: kube-scheduler's NodeAffinity Filter (every pair among the node's labels,
  :mod:`lab01_cluster_sim.kubescheduler.nodeaffinity`); Kueue's flavor assignment (matched
  against each ResourceFlavor's ``nodeLabels``, :func:`lab01_cluster_sim.admission.flavors.flavor_mismatch`);
  Karpenter's requirements with NodePools (:mod:`lab01_cluster_sim.autoscaler.requirements`).
  A ``nvidia.com/gpu.product`` entry also names the GPU models the engine may use.
- ``affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution``: the same three,
  every operator and ``matchFields`` on ``metadata.name`` (Kueue and Karpenter read
  ``matchExpressions`` only, as upstream does).
- ``affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution``: NodeAffinity's
  Score (weights 1..100); kube-scheduler only, so refused with NodePools (the autoscaler's loop
  binds to the fullest node).
- ``tolerations`` (operators Equal and Exists): kube-scheduler's TaintToleration (Filter on
  NoSchedule/NoExecute, Score on PreferNoSchedule, eviction after ``tolerationSeconds`` on a
  NoExecute taint) and Kueue's flavor assignment (against each flavor's ``nodeTaints``).
- ``metadata.creationTimestamp`` (RFC 3339): with Kueue, orders workloads that arrive at the
  same simulated instant (Kueue orders by it, :func:`lab01_cluster_sim.admission.ordering.age`);
  without Kueue it decides nothing, as for kube-scheduler (:data:`.coverage.METADATA`).

The keys of ``Job.extras`` are :mod:`lab01_cluster_sim.kubescheduler.constraints`'s. Every
function returns what it read and appends ``"file:line:column: Kind/name: why"`` lines for
what is not modelled to the caller's list; a value Kubernetes' API server would refuse raises
one :class:`~.yamlio.ScenarioError` naming the field.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from lab01_cluster_sim.corev1 import (FieldRequirement, MatchExpression, NodeSelectorTerm, PreferredTerm, Taint,
                                      Toleration)
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.kubescheduler.constraints import (NODE_SELECTOR, PREFERRED_AFFINITY, REQUIRED_AFFINITY,
                                                         TOLERATIONS)
from lab01_cluster_sim.scenario.validate import object_name
from lab01_cluster_sim.scenario.yamlio import Document, ScenarioError, format_path, where

GPU_PRODUCT = "nvidia.com/gpu.product"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def _err(doc: Document, path: tuple, message: str) -> ScenarioError:
    return ScenarioError(f"{where(doc.file, doc.pos(path))}: {object_name(doc.data)}: {format_path(path)}: {message}")


def _note(doc: Document, path: tuple, message: str) -> str:
    return f"{where(doc.file, doc.pos(path))}: {object_name(doc.data)}: {message}"


def read_taint(doc: Document, path: tuple, t: dict) -> Taint:
    """A ``v1.Taint`` at ``path`` of ``doc`` (a Node's ``spec.taints[i]``, a flavor's
    ``nodeTaints[i]``).

    Raises:
        ScenarioError: an empty key or an unknown effect.
    """
    try:
        return Taint(t.get("key", ""), t.get("value", ""), t.get("effect", ""))
    except InputError as exc:
        raise _err(doc, path, str(exc)) from None


def read_toleration(doc: Document, path: tuple, t: dict) -> Toleration:
    """A ``v1.Toleration`` at ``path`` of ``doc`` (the empty operator is Equal).

    Raises:
        ScenarioError: what the API server refuses (:class:`~lab01_cluster_sim.corev1.Toleration`).
    """
    seconds = t.get("tolerationSeconds")
    try:
        return Toleration(t.get("key", ""), t.get("operator") or "Equal", t.get("value", ""), t.get("effect", ""),
                          None if seconds is None else float(seconds))
    except InputError as exc:
        raise _err(doc, path, str(exc)) from None


def read_pod_scheduling(doc: Document, pod_path: tuple, pod: dict, unsupported: list[str],
                        node_pools: bool = False) -> tuple[tuple[str, ...], dict[str, Any]]:
    """The GPU models the engine may place the pod on, and the ``Job.extras`` entries of its
    scheduling constraints (:mod:`lab01_cluster_sim.kubescheduler.constraints`), from ``pod``
    found at ``pod_path`` of ``doc`` (module docstring).

    With ``node_pools`` (the scenario has Karpenter NodePools, run by the autoscaler's loop),
    ``matchFields``, preferred node affinity, and selector or required-affinity keys Karpenter
    knows but the simulator gives no values to (zone, arch, ...) are listed as not modelled.

    Returns:
        ``(models, extras)``: ``models`` () = any GPU model.

    Raises:
        ScenarioError: a value Kubernetes' API would refuse (e.g. ``Gt`` with a value that is
            not an integer, a preference weight outside 1..100).
    """
    extras: dict[str, Any] = {}
    selector = dict(pod.get("nodeSelector") or {})
    models: tuple[str, ...] = (selector[GPU_PRODUCT],) if GPU_PRODUCT in selector else ()
    if selector:
        extras[NODE_SELECTOR] = tuple(sorted(selector.items()))
    tolerations = pod.get("tolerations") or []
    if tolerations:
        extras[TOLERATIONS] = tuple(read_toleration(doc, pod_path + ("tolerations", i), t)
                                    for i, t in enumerate(tolerations))
        for i, t in enumerate(extras[TOLERATIONS]):
            if t.seconds is not None and t.seconds <= 0:
                unsupported.append(_note(doc, pod_path + ("tolerations", i, "tolerationSeconds"), "tolerationSeconds "
                                         "<= 0 is not modelled (the pod would be evicted the instant it binds to a "
                                         "node with that NoExecute taint, and rescheduled there, without end)"))
    node_aff = (pod.get("affinity") or {}).get("nodeAffinity") or {}
    if node_aff.get(PREFERRED):
        base = pod_path + ("affinity", "nodeAffinity", PREFERRED)
        preferred = []
        for i, p in enumerate(node_aff[PREFERRED]):
            term = _term(doc, base + (i, "preference"), p.get("preference") or {}, unsupported, node_pools)
            try:
                preferred.append(PreferredTerm(int(p.get("weight", 0)), term))
            except InputError as exc:
                raise _err(doc, base + (i, "weight"), str(exc)) from None
        extras[PREFERRED_AFFINITY] = tuple(preferred)
        if node_pools:
            unsupported.append(_note(doc, base, "preferred node affinity with NodePools is not modelled (the "
                                     "autoscaler's loop binds to the fullest node)"))
    if REQUIRED in node_aff:
        base = pod_path + ("affinity", "nodeAffinity", REQUIRED, "nodeSelectorTerms")
        raw = node_aff[REQUIRED].get("nodeSelectorTerms") or []
        if not raw:
            raise _err(doc, base, "must have at least one node selector term")
        terms = tuple(_term(doc, base + (ti,), t, unsupported, node_pools) for ti, t in enumerate(raw))
        extras[REQUIRED_AFFINITY] = terms
        placed = _affinity_models(terms)
        if placed == ():
            raise _err(doc, base, f"the {GPU_PRODUCT} In lists of this term have no model in common (the pod could "
                       "never be placed)")
        if placed is not None:
            if models:
                models = tuple(m for m in models if m in placed)
                if not models:
                    raise _err(doc, base, f"no GPU model satisfies both nodeSelector {GPU_PRODUCT}: "
                               f"{selector[GPU_PRODUCT]} and this affinity (the pod could never be placed)")
            else:
                models = placed
    if node_pools:
        _refuse_unmodelled_well_known(doc, pod_path, selector, extras.get(REQUIRED_AFFINITY, ()), unsupported)
    return models, extras


def _refuse_unmodelled_well_known(doc: Document, pod_path: tuple, selector: dict, terms: tuple,
                                  unsupported: list[str]) -> None:
    """With NodePools: a nodeSelector key or required-affinity key that Karpenter knows before
    launch but the simulator gives no values to (zone, arch, the AWS instance family...) is
    listed as not modelled, rather than answered with Karpenter's "does not have known values",
    which Karpenter would not say (:func:`~lab01_cluster_sim.autoscaler.requirements.unmodelled_well_known`)."""
    from lab01_cluster_sim.autoscaler.requirements import WELL_KNOWN, unmodelled_well_known

    sel = sorted(k for k in selector if unmodelled_well_known(k))
    aff = sorted({e.key for t in terms for e in t.expressions if unmodelled_well_known(e.key)})
    for path, what, names in ((("nodeSelector",), "nodeSelector", sel),
                              (("affinity", "nodeAffinity", REQUIRED), "required node affinity", aff)):
        if names:
            unsupported.append(_note(doc, pod_path + path, f"{what} on {', '.join(names)} is not modelled: Karpenter "
                                     "knows its values before launch, the simulator gives it none (modelled: "
                                     f"{', '.join(WELL_KNOWN)})"))


def _term(doc: Document, base: tuple, term: dict, unsupported: list[str], node_pools: bool) -> NodeSelectorTerm:
    exprs, fields = [], []
    for key, out, kind in (("matchExpressions", exprs, MatchExpression), ("matchFields", fields, FieldRequirement)):
        for ei, e in enumerate(term.get(key) or []):
            try:
                out.append(kind(e.get("key", ""), e.get("operator", ""), tuple(e.get("values") or ())))
            except InputError as exc:
                raise _err(doc, base + (key, ei), str(exc)) from None
    if fields and node_pools:
        unsupported.append(_note(doc, base + ("matchFields",), "node affinity matchFields with NodePools is not "
                                 "modelled (Karpenter cannot know a node's name before launch)"))
    return NodeSelectorTerm(tuple(exprs), tuple(fields))


def _affinity_models(terms: tuple[NodeSelectorTerm, ...]) -> tuple[str, ...] | None:
    """The GPU models a required affinity allows when it is one term of ``nvidia.com/gpu.product
    In`` expressions only (their values intersected), else None (NodeAffinity's Filter alone
    decides)."""
    if len(terms) != 1 or not terms[0].expressions or terms[0].fields:
        return None
    allowed: set[str] | None = None
    for e in terms[0].expressions:
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
            expr = MatchExpression(req["key"], req["operator"], tuple(req.get("values") or ()))
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


__all__ = ["creation_timestamp", "node_pool_types", "read_pod_scheduling", "read_taint", "read_toleration"]
