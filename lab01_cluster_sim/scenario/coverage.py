"""Every field of the Kubernetes core kinds a scenario holds is modelled, or refused by name.

Kubernetes 1.35's strict schemas (:mod:`.validate`) accept every real field of a Pod, a batch
Job, a Node or a PriorityClass, and the reader's JobSet schema every field of JobSet v0.11.1
(its templates by the strict batch Job schema). The simulator models some of them;
:data:`COVERAGE` says, per kind, what each field path is:

- ``MODELLED``: read and honoured as kube-scheduler, Kueue, Karpenter or the kubelet honour it
  (the reader that reads it is named in the module docstrings of :mod:`.load`, :mod:`.pods`,
  :mod:`.podsched`);
- ``INERT``: honoured by being left alone, because none of the components the simulator models
  reads it for a decision it simulates (a container's ``command``, a pod's ``dnsPolicy``,
  ``metadata.uid``): the reason is given;
- a :class:`Partly` rule: some values are modelled, the others refused naming them;
- anything else, listed with a reason in :data:`REFUSED` or not listed at all, is refused:
  :func:`refusals` returns ``"file:line:column: Kind/name: <field path> is not modelled
  (reason)"`` for each such field present, and ``run`` refuses the scenario in one line.

A path is written with ``.`` between fields and ``[]`` for every list item
(``spec.containers[].resources``); a listed path covers everything under it. A Job's pod
template (``spec.template``) follows the Pod's rules, a JobSet's replicated job template
(``spec.replicatedJobs[].template``) the Job's.

The Kueue and Karpenter kinds, the coscheduling PodGroup and the configuration files are read
through the reader's own closed schemas (:mod:`.schemas`): a field of the real kind that they
leave out (of its spec, its ``metadata`` or its ``status``) is refused at validation as not
modelled (:data:`~.schemas.CRD_ONLY_FIELDS`). The course's own ``Scenario`` kind calls a field
it does not have an unknown field.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lab01_cluster_sim.scenario.schemas import EMBEDDED_METADATA
from lab01_cluster_sim.scenario.validate import object_name
from lab01_cluster_sim.scenario.yamlio import Document, format_path, where

MODELLED = "modelled"


@dataclass(frozen=True)
class Inert:
    """A field no modelled component reads for a simulated decision; ``why`` says so."""

    why: str


@dataclass(frozen=True)
class Partly:
    """A field modelled for some values: ``check(value, obj)`` (``obj``: the whole object)
    returns None when the value is modelled, else the text naming what is not."""

    check: Callable[[Any, dict], str | None]


def _values(allowed: tuple, what: str = "") -> Partly:
    def check(value: Any, obj: dict) -> str | None:
        if value in allowed:
            return None
        return f"the value {value!r} is not modelled (modelled: {', '.join(map(repr, allowed))}{what})"
    return Partly(check)


def _suspend(value: Any, obj: dict) -> str | None:
    template = ((obj.get("spec") or {}).get("template") or {}).get("metadata") or {}
    labels = {**((obj.get("metadata") or {}).get("labels") or {}), **(template.get("labels") or {})}
    if not value or "kueue.x-k8s.io/queue-name" in labels:   # the label the reader takes the queue from
        return None
    return (f"suspend: true on a {obj.get('kind', 'Job')} without kueue.x-k8s.io/queue-name is not modelled (nothing "
            "would resume it; Kueue resumes the Jobs it admits)")


def _ready_only(conditions: Any, obj: dict) -> str | None:
    bad = [c.get("type") for c in conditions or [] if isinstance(c, dict)
           and not (c.get("type") != "Ready" or c.get("status") == "True")]
    if bad:
        return ("a node that is not Ready is not modelled (the node lifecycle controller would taint it "
                "node.kubernetes.io/not-ready; give nodes that are Ready)")
    return None


_NO_DECISION = "no component the simulator models reads it to place or admit a pod"
_META_INERT = Inert("object bookkeeping; no scheduling, admission or provisioning decision reads it")

METADATA: dict[str, Any] = {
    "name": MODELLED, "namespace": MODELLED, "labels": MODELLED, "annotations": MODELLED,
    "creationTimestamp": MODELLED,   # Kueue's queue order; kube-scheduler's ignores it (see below)
    "uid": _META_INERT, "resourceVersion": _META_INERT, "generation": _META_INERT, "selfLink": _META_INERT,
    "managedFields": _META_INERT, "finalizers": _META_INERT,
}
"""``metadata`` of every kind: names, labels, annotations (each annotation key the reader knows
is read, an unknown ``lab01.course/`` key is an error) and the creation time; the rest is
bookkeeping. Refused: ``ownerReferences`` (Kueue would manage a Pod through its owner),
``generateName``, ``deletionTimestamp`` / ``deletionGracePeriodSeconds`` (an object being
deleted).

``creationTimestamp`` of a Pod or Job orders Kueue's queues: with Kueue, a ClusterQueue takes
workloads by priority, then creation time (:func:`lab01_cluster_sim.admission.ordering.age`).
Without Kueue it decides nothing, as in Kubernetes: kube-scheduler's PrioritySort orders its
activeQ by priority, then by the time the pod entered the scheduling queue, not by its
creationTimestamp (Kubernetes v1.35.4, ``pkg/scheduler/framework/plugins/queuesort/
priority_sort.go``, ``Less``; the timestamp is set in ``newQueuedPodInfo``,
``pkg/scheduler/backend/queue/scheduling_queue.go``); pods with equal submit times enter the
queue in the order of the file."""

_CONTAINER: dict[str, Any] = {
    "name": MODELLED, "resources.requests": MODELLED, "resources.limits": MODELLED, "image": MODELLED,
    **{f: Inert(_NO_DECISION) for f in (
        "args", "command", "env", "envFrom", "imagePullPolicy", "lifecycle", "livenessProbe", "readinessProbe",
        "startupProbe", "securityContext", "stdin", "stdinOnce", "terminationMessagePath", "terminationMessagePolicy",
        "tty", "workingDir", "volumeMounts", "volumeDevices", "resizePolicy", "ports[].containerPort", "ports[].name",
        "ports[].protocol")},
}
"""A container: its name, requests and limits (the effective request, as the scheduler sums
them), its image (Karpenter's image pull time). ``ports[].hostPort`` / ``hostIP`` (the
NodePorts filter), ``resources.claims`` (DRA), ``restartPolicy`` (a sidecar's requests add up
differently) and ``restartPolicyRules`` are refused."""

POD_SPEC: dict[str, Any] = {
    **{f"containers[].{k}": v for k, v in _CONTAINER.items()},
    **{f"initContainers[].{k}": v for k, v in _CONTAINER.items()},
    "nodeSelector": MODELLED,
    "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution": MODELLED,
    "affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution": MODELLED,
    "tolerations": MODELLED,
    "priorityClassName": MODELLED,
    "terminationGracePeriodSeconds": MODELLED,
    "schedulerName": _values(("default-scheduler",), "; the simulator is one default kube-scheduler"),
    "hostNetwork": _values((False,), "; with host networking the container ports are host ports, which the NodePorts "
                                     "filter checks"),
    "volumes[].name": MODELLED,
    **{f"volumes[].{t}": Inert("a volume type that does not constrain where the pod may run") for t in (
        "emptyDir", "configMap", "secret", "downwardAPI", "projected")},
    **{f: Inert(_NO_DECISION) for f in (
        "automountServiceAccountToken", "dnsConfig", "dnsPolicy", "enableServiceLinks", "hostAliases", "hostIPC",
        "hostPID", "hostUsers", "hostname", "hostnameOverride", "imagePullSecrets", "readinessGates", "restartPolicy",
        "securityContext", "serviceAccount", "serviceAccountName", "setHostnameAsFQDN", "shareProcessNamespace",
        "subdomain", "os")},
}
"""A pod's ``spec``. Modelled: requests, ``nodeSelector``, required and preferred node affinity
(kube-scheduler's NodeAffinity; Kueue's flavor assignment; Karpenter's requirements),
``tolerations`` (TaintToleration; Kueue; NoExecute ``tolerationSeconds``), the priority class,
the termination grace period. ``restartPolicy`` is inert because simulated pods never fail.
Refused: :data:`REFUSED`."""

REFUSED: dict[str, str] = {
    "spec.affinity.podAffinity": "inter-pod affinity (kube-scheduler's InterPodAffinity) is not modelled",
    "spec.affinity.podAntiAffinity": "inter-pod anti-affinity (kube-scheduler's InterPodAffinity) is not modelled",
    "spec.topologySpreadConstraints": "kube-scheduler's PodTopologySpread is not modelled",
    "spec.nodeName": "binding to a named node (kube-scheduler's NodeName) is not modelled",
    "spec.schedulingGates": "scheduling gates (kube-scheduler's SchedulingGates) are not modelled",
    "spec.activeDeadlineSeconds": "a pod killed at a deadline is not modelled",
    "spec.overhead": "pod overhead (RuntimeClass) is not modelled",
    "spec.runtimeClassName": "RuntimeClass (its overhead and node selector) is not modelled",
    "spec.preemptionPolicy": "a non-preempting pod is not modelled",
    "spec.priority": "give priorityClassName; the API server fills priority from it",
    "spec.resources": "pod-level resources are not modelled (give per-container requests)",
    "spec.resourceClaims": "dynamic resource allocation (ResourceClaims) is not modelled",
    "spec.ephemeralContainers": "ephemeral containers are not modelled",
    "spec.volumes": "a volume that needs binding or attaching (VolumeBinding, VolumeZone, NodeVolumeLimits) is not "
                    "modelled",
    "status": "the simulator starts every object anew; a status is not modelled",
    "spec.initContainers[].restartPolicy": "a sidecar (restartPolicy Always) adds its requests to the pod's, which "
                                           "the request sum does not model",
    "spec.containers[].restartPolicy": "per-container restart rules are not modelled",
    "spec.containers[].ports[].hostPort": "host ports (kube-scheduler's NodePorts) are not modelled",
    "spec.initContainers[].ports[].hostPort": "host ports (kube-scheduler's NodePorts) are not modelled",
    "spec.containers[].resources.claims": "dynamic resource allocation (ResourceClaims) is not modelled",
    "metadata.ownerReferences": "owner references are not modelled (give the owning Job instead of its Pods)",
    "metadata.deletionTimestamp": "an object being deleted is not modelled",
    "metadata.deletionGracePeriodSeconds": "an object being deleted is not modelled",
    "metadata.generateName": "give metadata.name",
}
"""Refusals with a reason, by path (a Job's template paths use the Pod's entries); any other
field outside :data:`COVERAGE` is refused as plainly not modelled."""


_OTHER_METADATA = {**METADATA, "creationTimestamp": Inert("only a workload's creation time orders a queue")}
"""``metadata`` of a Node or PriorityClass: its creation time decides nothing."""


def _under(prefix: str, table: dict[str, Any]) -> dict[str, Any]:
    return {f"{prefix}.{k}": v for k, v in table.items()}


JOB_SPEC: dict[str, Any] = {
    "parallelism": MODELLED,
    "completions": MODELLED,
    "suspend": Partly(_suspend),
    "podReplacementPolicy": _values(("TerminatingOrFailed",), "; the simulator starts a replacement while an evicted "
                                                            "pod terminates"),
    **_under("template.metadata", {**METADATA, "creationTimestamp": Inert(
        "a pod template's creation time is never set; the Job's own orders the queue")}),
    **_under("template.spec", POD_SPEC),
    **{f: Inert("simulated pods never fail, so failure and retention policies never act") for f in (
        "backoffLimit", "backoffLimitPerIndex", "maxFailedIndexes", "podFailurePolicy", "ttlSecondsAfterFinished")},
    **{f: Inert(_NO_DECISION) for f in ("completionMode", "selector", "manualSelector")},
}
"""A batch Job's ``spec``: ``parallelism`` (workers), ``completions`` (below parallelism, that
many workers, as the Job controller runs and Kueue counts; above it the reader refuses waves), ``suspend`` (Kueue resumes the Jobs it admits; true
on a Job Kueue does not manage is refused),
the pod template. Refused: ``activeDeadlineSeconds``, ``successPolicy``, ``managedBy``."""

NODE: dict[str, Any] = {
    **_under("metadata", _OTHER_METADATA),
    "spec.taints[].key": MODELLED, "spec.taints[].value": MODELLED, "spec.taints[].effect": MODELLED,
    "spec.unschedulable": _values((False,), "; a cordoned node is not modelled"),
    "status.allocatable": MODELLED, "status.capacity": MODELLED,
    "status.conditions": Partly(_ready_only),
    **{f"spec.{f}": Inert(_NO_DECISION) for f in ("podCIDR", "podCIDRs", "providerID", "externalID", "configSource")},
    **{f"status.{f}": Inert(_NO_DECISION) for f in (
        "addresses", "daemonEndpoints", "nodeInfo", "phase", "config", "volumesAttached", "volumesInUse",
        "runtimeHandlers", "features", "declaredFeatures")},
}
"""A Node: its labels (the GPU model, NVLink clique, every label for node affinity), taints,
allocatable (else capacity) resources. Refused: ``spec.taints[].timeAdded`` (taints are static),
``status.images`` (kube-scheduler's ImageLocality score is not modelled)."""

REFUSED.update({
    "spec.taints[].timeAdded": "taints are static in a run, there from the start",
    "status.images": "kube-scheduler's ImageLocality score is not modelled",
    "spec.activeDeadlineSeconds": "a pod or Job killed at a deadline is not modelled",
    "spec.successPolicy": "a Job success policy is not modelled (a Job completes when all its workers do)",
    "spec.managedBy": "a Job managed by another controller (MultiKueue) is not modelled",
})

PRIORITY_CLASS: dict[str, Any] = {
    **_under("metadata", _OTHER_METADATA),
    "value": MODELLED, "globalDefault": MODELLED,
    "preemptionPolicy": _values(("PreemptLowerPriority",), "; non-preempting priority classes are not modelled"),
    "description": Inert("documentation only"),
}


def _success_policy(value: Any, obj: dict) -> str | None:
    names = {rj.get("name") for rj in (obj.get("spec") or {}).get("replicatedJobs") or [] if isinstance(rj, dict)}
    targets = set((value or {}).get("targetReplicatedJobs") or names)
    if (value or {}).get("operator", "All") == "All" and targets == names:
        return None
    return ("a success policy other than JobSet's default (operator All over every replicatedJob) is not modelled "
            "(the simulated JobSet succeeds when all its roles complete)")


_CHILD_NAMES = Inert("the JobSet controller names its child Jobs <JobSet>-<replicatedJob>-<index> in the JobSet's "
                     "namespace")
_JOBSET_TEMPLATE_META = {**{k: v for k, v in METADATA.items() if k in EMBEDDED_METADATA},
                         "name": _CHILD_NAMES, "namespace": _CHILD_NAMES}
_NEVER_FAILS = ("simulated pods never fail, so a JobSet's failure policy (restarts after a child Job fails) never "
                "acts; an eviction by Kueue suspends and restarts the whole JobSet, as the engine restarts all its "
                "roles")

JOBSET: dict[str, Any] = {
    "replicatedJobs[].name": MODELLED,
    "replicatedJobs[].replicas": MODELLED,
    "replicatedJobs[].groupName": Inert("a label JobSet puts on its Jobs and pods; no modelled component reads it"),
    **_under("replicatedJobs[].template.metadata", _JOBSET_TEMPLATE_META),
    **_under("replicatedJobs[].template.spec", {k: v for k, v in JOB_SPEC.items() if not (
        k.startswith("template.metadata.") and k.split(".")[2] not in EMBEDDED_METADATA)}),
    "replicatedJobs[].template.spec.suspend": Inert("the JobSet controller sets each child Job's suspend from the "
                                                    "JobSet's spec.suspend"),
    "suspend": Partly(_suspend),
    "startupPolicy.startupPolicyOrder": _values(("AnyOrder",), "; the engine starts a JobSet's roles together, "
                                                              "all-or-nothing"),
    "successPolicy": Partly(_success_policy),
    "managedBy": _values(("jobset.sigs.k8s.io/jobset-controller",), "; another manager (MultiKueue) is not modelled"),
    **{f"failurePolicy.{f}": Inert(_NEVER_FAILS) for f in ("maxRestarts", "restartStrategy", "rules")},
    **{f"network.{f}": Inert("pod DNS names and a headless Service; no scheduling or admission decision reads them")
       for f in ("enableDNSHostnames", "subdomain", "publishNotReadyAddresses")},
    **{f"coordinator.{f}": Inert("an annotation naming the coordinator pod's DNS name; no scheduling or admission "
                                 "decision reads it") for f in ("replicatedJob", "jobIndex", "podIndex")},
    "ttlSecondsAfterFinished": Inert("deletes the JobSet after it finished; no decision the simulator makes reads it"),
}
"""A JobSet's ``spec`` (kubernetes-sigs/jobset v0.11.1, :mod:`.jobset`): the replicated jobs'
names and replicas; each template follows the batch Job's rules (:data:`JOB_SPEC`, its
``metadata`` the Job's, except the name and namespace the JobSet overrides), except ``suspend``,
which the JobSet controller overrides. ``suspend`` as a Job's (Kueue resumes the JobSets it
admits); ``startupPolicy`` only ``AnyOrder`` (JobSet's default); ``successPolicy`` only the
default (All, every replicated job); ``managedBy`` only JobSet's own controller;
``failurePolicy`` inert (simulated pods never fail); ``network``, ``coordinator``,
``ttlSecondsAfterFinished`` and ``groupName`` inert (names and clean-up). Refused:
``replicatedJobs[].dependsOn`` (roles started in sequence), ``volumeClaimPolicies`` (volumes),
``status``."""

JOBSET_REFUSED: dict[str, str] = {
    "spec.replicatedJobs[].dependsOn": "the engine starts a JobSet's roles together, not one after another is Ready "
                                       "or Complete",
    "spec.volumeClaimPolicies": "persistent volume claims (kube-scheduler's VolumeBinding) are not modelled",
}
"""Refusals with a reason of the JobSet's own fields; its templates' use :data:`REFUSED` as a
batch Job's do."""

COVERAGE: dict[tuple[str, str], dict[str, Any]] = {
    ("v1", "Pod"): {"apiVersion": MODELLED, "kind": MODELLED, **_under("metadata", METADATA),
                    **_under("spec", POD_SPEC)},
    ("batch/v1", "Job"): {"apiVersion": MODELLED, "kind": MODELLED, **_under("metadata", METADATA),
                          **_under("spec", JOB_SPEC)},
    ("v1", "Node"): {"apiVersion": MODELLED, "kind": MODELLED, **NODE},
    ("scheduling.k8s.io/v1", "PriorityClass"): {"apiVersion": MODELLED, "kind": MODELLED, **PRIORITY_CLASS},
    ("jobset.x-k8s.io/v1alpha2", "JobSet"): {"apiVersion": MODELLED, "kind": MODELLED, **_under("metadata", METADATA),
                                             **_under("spec", JOBSET)},
}
"""Per core kind: field path -> ``MODELLED``, :class:`Inert` or :class:`Partly` (module docstring)."""


def _prefixes(table: dict[str, Any]) -> frozenset[str]:
    out = set()
    for path in table:
        parts = path.replace("[]", ".[]").split(".")
        for i in range(1, len(parts)):
            out.add(".".join(parts[:i]).replace(".[]", "[]"))
    return frozenset(out)


_PREFIXES = {key: _prefixes(table) for key, table in COVERAGE.items()}


def _reason(pattern: str, kind: str) -> str:
    """The :data:`REFUSED` reason of ``pattern`` or of its nearest listed parent ("" if none)
    (a JobSet's: :data:`JOBSET_REFUSED`, its templates' as a batch Job's)."""
    if kind == "JobSet":
        template = "spec.replicatedJobs[].template."
        if pattern.startswith(template):
            return _reason(pattern[len(template):], "Job")
        for parent, why in JOBSET_REFUSED.items():
            if pattern == parent or pattern.startswith((parent + ".", parent + "[]")):
                return why
    if kind == "Job" and pattern.startswith("spec.template."):
        pattern = pattern[len("spec.template."):]
    while pattern:
        if pattern in REFUSED:
            return REFUSED[pattern]
        cut = max(pattern.rfind("."), pattern.rfind("[]"))
        pattern = pattern[:cut] if cut > 0 else ""
    return ""


def classify(key: tuple[str, str], pattern: str) -> str:
    """``"modelled"``, ``"inert"``, ``"partly"`` or ``"refused"`` for a field path of kind
    ``key`` (``(apiVersion, kind)``), as :func:`refusals` treats it."""
    table = COVERAGE[key]
    probe = pattern
    while True:
        rule = table.get(probe)
        if rule is not None:
            return "modelled" if rule == MODELLED else "inert" if isinstance(rule, Inert) else "partly"
        cut = max(probe.rfind("."), probe.rfind("[]"))
        if cut <= 0:
            return "refused"
        probe = probe[:cut]


def refusals(doc: Document) -> list[str]:
    """``"file:line:column: Kind/name: <path> is not modelled (why)"`` for every field of
    ``doc`` (a core kind of :data:`COVERAGE`; other kinds give []) that is neither modelled nor
    inert, and for every value a :class:`Partly` field does not model. Bounded by the
    document's size (each node visited once)."""
    data = doc.data
    key = (data.get("apiVersion"), data.get("kind")) if isinstance(data, dict) else None
    table = COVERAGE.get(key)
    if table is None:
        return []
    prefixes = _PREFIXES[key]
    out: list[str] = []
    stack: list[tuple[Any, tuple, str]] = [(data, (), "")]
    while stack:
        value, path, pattern = stack.pop()
        if isinstance(value, dict):
            items = [(k, v, f"{pattern}.{k}" if pattern else str(k)) for k, v in value.items()]
        elif isinstance(value, list):
            items = [(i, v, f"{pattern}[]") for i, v in enumerate(value)]
        else:
            continue
        for k, v, sub in reversed(items):
            rule = table.get(sub)
            if rule is not None and not isinstance(value, list):
                if isinstance(rule, Partly):
                    why = rule.check(v, data)
                    if why:
                        out.append(f"{where(doc.file, doc.pos(path + (k,)))}: {object_name(data)}: "
                                   f"{format_path(path + (k,))}: {why}")
                continue
            if isinstance(value, list) or sub in prefixes:
                stack.append((v, path + (k,), sub))
                continue
            if v is None or v == {} or v == []:
                continue   # an empty field asks for nothing
            why = _reason(sub, key[1])
            out.append(f"{where(doc.file, doc.pos(path + (k,)))}: {object_name(data)}: {format_path(path + (k,))} "
                       f"is not modelled" + (f" ({why})" if why else ""))
    return out


__all__ = ["COVERAGE", "JOBSET_REFUSED", "MODELLED", "REFUSED", "Inert", "Partly", "classify", "refusals"]
