"""Which pods a NodePool can launch a node for: Karpenter's scheduling requirements.

Karpenter (kubernetes-sigs/karpenter at commit 2266468, ``karpenter.sh/v1``) turns a pending
pod's ``nodeSelector`` and the first term of its required node affinity into requirements
(``newPodRequirements``, ``pkg/scheduling/requirements.go``; when that term cannot be met the
next one is tried, ``Preferences.removeRequiredNodeAffinityTerm``,
``pkg/controllers/provisioning/scheduling/preferences.go``) and checks them against each
NodePool (``NodeClaim.CanAdd``, ``pkg/controllers/provisioning/scheduling/nodeclaim.go``):

- ``Requirements.Compatible(..., AllowUndefinedWellKnownLabels)``: a key that is not a
  well-known label and that the NodePool does not define can only be met by ``NotIn`` or
  ``DoesNotExist``; any other operator fails with ``label "K" does not have known values``.
  Labels that other components add after the node has joined, such as GPU Feature Discovery's
  ``nvidia.com/gpu.product`` and ``nvidia.com/gpu.memory``, are such keys: Karpenter cannot
  know them before launch, so it launches nothing for a pod that requires them.
- Well-known labels (``v1.WellKnownLabels``, ``pkg/apis/v1/labels.go``, extended by the AWS
  provider, ``aws/karpenter-provider-aws`` ``pkg/apis/v1/labels.go``) narrow the instance
  types: :data:`WELL_KNOWN` lists those the simulator gives values to
  (:func:`instance_labels`); an instance type whose labels do not satisfy the pod's
  requirements on them is not an option ("no instance type met all requirements").

The NodePool's own requirements on these keys are applied when the scenario is read (they
narrow the pool's instance types). The same labels decide, at the engine's Filter point,
which launched nodes a pod may bind to (:meth:`~.plugin.Autoscaler.filter`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lab01_cluster_sim.corev1 import MatchExpression
from lab01_cluster_sim.autoscaler.catalogue import InstanceType
from lab01_cluster_sim.model import Job

INSTANCE_TYPE = "node.kubernetes.io/instance-type"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
NODEPOOL = "karpenter.sh/nodepool"
GPU_NAME = "karpenter.k8s.aws/instance-gpu-name"
GPU_COUNT = "karpenter.k8s.aws/instance-gpu-count"
GPU_MEMORY = "karpenter.k8s.aws/instance-gpu-memory"
GPU_MANUFACTURER = "karpenter.k8s.aws/instance-gpu-manufacturer"

WELL_KNOWN = (INSTANCE_TYPE, CAPACITY_TYPE, NODEPOOL, GPU_NAME, GPU_COUNT, GPU_MEMORY, GPU_MANUFACTURER)
"""Well-known labels the simulator gives values to. Karpenter knows more (zone, region, arch,
os, the AWS instance family, size, CPU...); a pod or NodePool naming one of those is refused
by the scenario reader as not modelled (:func:`unmodelled_well_known`)."""

KNOWN_NOT_MODELLED = ("topology.kubernetes.io/zone", "topology.kubernetes.io/region", "kubernetes.io/arch",
                      "kubernetes.io/os", "node.kubernetes.io/windows-build",
                      # the beta names Karpenter normalises to the stable ones (v1.NormalizedLabels)
                      "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
                      "beta.kubernetes.io/arch", "beta.kubernetes.io/os", "beta.kubernetes.io/instance-type")
"""Karpenter's well-known labels (``v1.WellKnownLabels`` and ``NormalizedLabels``,
kubernetes-sigs/karpenter ``pkg/apis/v1/labels.go``) the simulator gives no values to. Karpenter
knows their values before launch, so a pod requiring one gets a node; the simulator would
answer "does not have known values" instead, so the reader refuses them. The AWS provider's
``karpenter.k8s.aws/`` labels other than the GPU ones are refused likewise."""

AWS_PREFIX = "karpenter.k8s.aws/"


def unmodelled_well_known(key: str) -> bool:
    """Whether ``key`` is a label Karpenter knows before launch but the simulator does not model
    (:data:`KNOWN_NOT_MODELLED`, or an AWS provider label outside :data:`WELL_KNOWN`)."""
    return key in KNOWN_NOT_MODELLED or (key.startswith(AWS_PREFIX) and key not in WELL_KNOWN)


def instance_labels(it: InstanceType, capacity_type: str, pool: str) -> dict[str, str]:
    """The well-known labels a node of type ``it`` launched by NodePool ``pool`` carries:
    its instance type, capacity type, NodePool and the provider's GPU labels
    (:attr:`~.catalogue.InstanceType.labels`)."""
    return {INSTANCE_TYPE: it.name, CAPACITY_TYPE: capacity_type, NODEPOOL: pool, **dict(it.labels)}


def pod_terms(job: Job) -> tuple[tuple[MatchExpression, ...], ...]:
    """The pod's requirement alternatives: its nodeSelector (as ``In`` expressions) ANDed
    with the ``matchExpressions`` of each required node-affinity term in turn (ORed), as
    Karpenter tries them (``matchFields`` name a node, unknown before launch: Karpenter leaves
    them out); one alternative when the pod has no affinity."""
    selector = tuple(MatchExpression(k, "In", (v,)) for k, v in job.extras.get("node_selector", ()))
    terms = tuple(job.extras.get("affinity", ()))
    return tuple(selector + t.expressions for t in terms) if terms else (selector,)


def unknown_label(term: Sequence[MatchExpression]) -> str | None:
    """The first key of ``term`` that Karpenter cannot know before launch (not in
    :data:`WELL_KNOWN`, required by an operator other than NotIn/DoesNotExist), or None
    (``Requirements.Compatible``)."""
    for e in term:
        if e.key not in WELL_KNOWN and e.operator not in ("NotIn", "DoesNotExist"):
            return e.key
    return None


def incompatibility(job: Job) -> str | None:
    """Why no NodePool can launch a node for ``job``'s pods because of their labels
    (Karpenter's words), or None when some requirement alternative uses only labels Karpenter
    knows."""
    reason = None
    for term in pod_terms(job):
        key = unknown_label(term)
        if key is None:
            return None
        reason = reason or f'incompatible requirements, label "{key}" does not have known values'
    return reason


def unadvertised(job: Job) -> str | None:
    """Why no instance type can hold ``job``'s pods because of an extended resource the
    provider does not advertise (an instance type offers ``nvidia.com/gpu`` only; MIG
    profiles such as ``nvidia.com/mig-3g.40gb`` and ``nvidia.com/gpu.shared`` are created by
    NVIDIA's device plugin on the node, after launch), or None. Karpenter's filter on
    resources (``InstanceTypeFilterError``, nodeclaim.go) says "no instance type has enough
    resources"; the simulator names the resource."""
    extended = sorted(job.extras.get("extended_requests", {}))
    if not extended:
        return None
    return f"no instance type has enough resources ({', '.join(extended)} is advertised by no instance type)"


def matches(job: Job, labels: Mapping[str, str]) -> bool:
    """Whether a node with well-known ``labels`` satisfies some requirement alternative of
    ``job`` on the well-known keys (keys Karpenter cannot know are left to
    :func:`incompatibility`)."""
    for term in pod_terms(job):
        known = tuple(e for e in term if e.key in WELL_KNOWN)
        if all(e.matches(labels) for e in known):
            return True
    return False


__all__ = ["CAPACITY_TYPE", "GPU_COUNT", "GPU_MANUFACTURER", "GPU_MEMORY", "GPU_NAME", "INSTANCE_TYPE",
           "KNOWN_NOT_MODELLED", "NODEPOOL", "WELL_KNOWN", "incompatibility", "instance_labels", "matches", "pod_terms",
           "unadvertised", "unknown_label", "unmodelled_well_known"]
