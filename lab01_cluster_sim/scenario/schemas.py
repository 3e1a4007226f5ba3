"""The fields the scenario reader accepts, as JSON Schemas (one per kind it models).

Kubernetes core objects (Node, Pod, Job, PriorityClass) are checked against the official
schemas with ``kubernetes-validate`` (:mod:`.validate`); the kinds below have no schema in
that package, so the reader keeps its own **typed subset**: every field listed here is
understood by the simulator, every other field is an error naming the field path
(``additionalProperties: false`` everywhere). Field names, types, enum values and
defaults of the Kueue and Karpenter kinds are those of the real CRDs (Kueue v1beta2, commit
ff69552e, v0.20.0-devel; Karpenter v1, commit 2266468); a test walks every field here and
checks it against ``../shared/data/kueue`` and ``../shared/data/karpenter``
(tests/lab01/scenario/test_crd_fields.py). Enums may be narrower than the CRD's (a value
the simulator does not model is refused), never wider.

Sources of the other kinds:

- ``KubeSchedulerConfiguration`` (``kubescheduler.config.k8s.io/v1``): Kubernetes docs,
  "Scheduler Configuration" and "Resource Bin Packing"
  (https://kubernetes.io/docs/reference/scheduling/config/,
  https://kubernetes.io/docs/concepts/scheduling-eviction/resource-bin-packing/), the
  ``NodeResourcesFitArgs`` type of ``k8s.io/kube-scheduler/config/v1``.
- ``PodGroup`` (``scheduling.x-k8s.io/v1alpha1``): the coscheduling plugin of
  kubernetes-sigs/scheduler-plugins (``apis/scheduling/v1alpha1/types.go``).
- ``Configuration`` (``config.kueue.x-k8s.io/v1beta2``): Kueue's configuration file, only
  ``fairSharing.preemptionStrategies`` (Preemption page, "Fair Sharing") and
  ``waitForPodsReady`` (``timeout``, ``blockAdmission``, ``recoveryTimeout``,
  ``requeuingStrategy``; "Setup All-or-nothing with ready Pods", ``WaitForPodsReady`` in
  ``apis/config/v1beta2/configuration_types.go``).
- ``JobSet`` (``jobset.x-k8s.io/v1alpha2``): kubernetes-sigs/jobset v0.11.1 (:data:`JOBSET`).
- ``Scenario`` (``lab01.course/v1alpha1``): this course's own kind (module :mod:`.kinds`).
"""

from __future__ import annotations

from typing import Any

QUANTITY_PATTERN = (r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+"
                    r"(\.[0-9]*)?)|(\.[0-9]+))))?$")
"""Kubernetes' quantity pattern, as in the CRDs."""
NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
"""DNS subdomain names (object names, flavor references), as in the CRDs."""
DURATION_PATTERN = r"^(([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$"
"""A Go duration such as ``30s``, ``1h30m``, ``720h``."""


def obj(properties: dict[str, Any], required: tuple[str, ...] = (), **extra: Any) -> dict[str, Any]:
    """A closed object: only ``properties`` are allowed."""
    schema = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = list(required)
    schema.update(extra)
    return schema


def string(enum: tuple[str, ...] | None = None, default: str | None = None, **extra: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string", **extra}
    if enum is not None:
        schema["enum"] = list(enum)
    if default is not None:
        schema["default"] = default
    return schema


def integer(**extra: Any) -> dict[str, Any]:
    return {"type": "integer", **extra}


def number(**extra: Any) -> dict[str, Any]:
    return {"type": "number", **extra}


def boolean(**extra: Any) -> dict[str, Any]:
    return {"type": "boolean", **extra}


def quantity(**extra: Any) -> dict[str, Any]:
    """An int-or-string Kubernetes quantity."""
    return {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "string", "pattern": QUANTITY_PATTERN}],
            "x-kubernetes-int-or-string": True, **extra}


def array(items: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "array", "items": items, **extra}


def map_of(values: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": values, **extra}


def metadata(namespaced: bool = False) -> dict[str, Any]:
    """``metadata``: name (required), labels, annotations, and namespace for namespaced kinds."""
    props: dict[str, Any] = {
        "name": string(pattern=NAME_PATTERN, maxLength=253),
        "labels": map_of(string()),
        "annotations": map_of(string()),
    }
    if namespaced:
        props["namespace"] = string(pattern=NAME_PATTERN, maxLength=63)
    return obj(props, ("name",))


def top(api_version: str, kind: str, body: dict[str, Any], required: tuple[str, ...] = (),
        namespaced: bool = False, with_metadata: bool = True) -> dict[str, Any]:
    props = {"apiVersion": string(enum=(api_version,)), "kind": string(enum=(kind,)), **body}
    req = ("apiVersion", "kind") + (("metadata",) if with_metadata else ()) + required
    if with_metadata:
        props["metadata"] = metadata(namespaced)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **obj(props, req)}


# -- Kueue kueue.x-k8s.io/v1beta2 ------------------------------------------------------------
KUEUE = "kueue.x-k8s.io/v1beta2"

_resource_quota = obj({
    "name": string(),
    "nominalQuota": quantity(),
    "borrowingLimit": quantity(),
    "lendingLimit": quantity(),
}, ("name", "nominalQuota"))
_resource_groups = array(obj({
    "coveredResources": array(string(), maxItems=64),
    "flavors": array(obj({
        "name": string(pattern=NAME_PATTERN, maxLength=253),
        "resources": array(_resource_quota, maxItems=64),
    }, ("name", "resources")), maxItems=64),
}, ("coveredResources", "flavors")), maxItems=16)
_fair_sharing = obj({"weight": {**quantity(), "default": 1}})
_taint = obj({"key": string(), "value": string(), "effect": string(enum=("NoSchedule", "PreferNoSchedule", "NoExecute"))},
             ("key", "effect"))
_toleration = obj({"key": string(), "operator": string(enum=("Equal", "Exists")), "value": string(),
                   "effect": string(enum=("NoSchedule", "PreferNoSchedule", "NoExecute")),
                   "tolerationSeconds": integer()})

RESOURCE_FLAVOR = top(KUEUE, "ResourceFlavor", {"spec": obj({
    "nodeLabels": map_of(string()),
    "nodeTaints": array(_taint, maxItems=8),
    "tolerations": array(_toleration, maxItems=8),
})})

CLUSTER_QUEUE = top(KUEUE, "ClusterQueue", {"spec": obj({
    "cohortName": string(pattern=NAME_PATTERN, maxLength=253),
    "namespaceSelector": obj({}),   # only {} (every namespace): namespaces are not modelled
    "resourceGroups": _resource_groups,
    "queueingStrategy": string(enum=("StrictFIFO", "BestEffortFIFO"), default="BestEffortFIFO"),
    "preemption": obj({
        "withinClusterQueue": string(enum=("Never", "LowerPriority", "LowerOrNewerEqualPriority"), default="Never"),
        "reclaimWithinCohort": string(enum=("Never", "LowerPriority", "Any"), default="Never"),
        "borrowWithinCohort": obj({
            "policy": string(enum=("Never", "LowerPriority"), default="Never"),
            "maxPriorityThreshold": integer(),
        }, default={}),
    }, default={}),
    "flavorFungibility": obj({
        "whenCanBorrow": string(enum=("MayStopSearch", "TryNextFlavor"), default="MayStopSearch"),
        "whenCanPreempt": string(enum=("MayStopSearch", "TryNextFlavor"), default="TryNextFlavor"),
        "preference": string(enum=("BorrowingOverPreemption", "PreemptionOverBorrowing")),
    }, default={}),
    "fairSharing": _fair_sharing,
})}, ("spec",))

COHORT = top(KUEUE, "Cohort", {"spec": obj({
    "parentName": string(maxLength=253),
    "resourceGroups": _resource_groups,
    "fairSharing": _fair_sharing,
})})

LOCAL_QUEUE = top(KUEUE, "LocalQueue", {"spec": obj({"clusterQueue": string(maxLength=253)}, ("clusterQueue",))},
                  ("spec",), namespaced=True)

WORKLOAD_PRIORITY_CLASS = top(KUEUE, "WorkloadPriorityClass", {"value": integer(), "description": string()},
                              ("value",))

KUEUE_CONFIGURATION = top("config.kueue.x-k8s.io/v1beta2", "Configuration", {"fairSharing": obj({
    "preemptionStrategies": array(string(enum=("LessThanOrEqualToFinalShare", "LessThanInitialShare")),
                                  minItems=1, maxItems=2),
}), "waitForPodsReady": obj({
    # WaitForPodsReady, apis/config/v1beta2/configuration_types.go (timeout has no omitempty)
    "timeout": string(pattern=DURATION_PATTERN),
    "blockAdmission": boolean(default=False),
    "recoveryTimeout": string(pattern=DURATION_PATTERN),
    "requeuingStrategy": obj({
        "timestamp": string(enum=("Eviction", "Creation"), default="Eviction"),
        "backoffLimitCount": integer(minimum=0, maximum=2**31 - 1),
        "backoffBaseSeconds": integer(minimum=0, maximum=2**31 - 1, default=60),
        "backoffMaxSeconds": integer(minimum=0, maximum=2**31 - 1, default=3600),
    }),
}, ("timeout",))}, with_metadata=False)

# -- Karpenter karpenter.sh/v1 ---------------------------------------------------------------
NODE_POOL = top("karpenter.sh/v1", "NodePool", {"spec": obj({
    "template": obj({"spec": obj({
        "requirements": array(obj({
            # the well-known labels the simulator gives values to (autoscaler/requirements.py)
            "key": string(enum=("node.kubernetes.io/instance-type", "karpenter.sh/capacity-type",
                                "karpenter.k8s.aws/instance-gpu-name", "karpenter.k8s.aws/instance-gpu-count",
                                "karpenter.k8s.aws/instance-gpu-memory",
                                "karpenter.k8s.aws/instance-gpu-manufacturer")),
            "operator": string(enum=("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")),
            "values": array(string()),
        }, ("key", "operator")), maxItems=100),
        "nodeClassRef": obj({"group": string(), "kind": string(), "name": string()}, ("group", "kind", "name")),
        "expireAfter": string(default="720h", pattern=r"^(([0-9]+(s|m|h))+|Never)$"),
    }, ("nodeClassRef", "requirements"))}, ("spec",)),
    "disruption": obj({
        "consolidationPolicy": string(enum=("WhenEmpty", "WhenEmptyOrUnderutilized"), default="WhenEmptyOrUnderutilized"),
        "consolidateAfter": string(default="0s", pattern=r"^(([0-9]+(s|m|h))+|Never)$"),
    }, default={"consolidateAfter": "0s"}),
    "limits": map_of(quantity()),
}, ("template",))}, ("spec",))

# -- kube-scheduler -------------------------------------------------------------------------
SCORING_TYPES = ("LeastAllocated", "MostAllocated", "RequestedToCapacityRatio")
SCHEDULER_PLUGINS = ("TaintToleration", "NodeAffinity", "NodeResourcesFit")
"""kube-scheduler plugins whose configuration the simulator models (their Score weights; the
NodeResourcesFit scoring strategy). Naming any other plugin is refused naming it."""
_INERT_OBJECT = {"type": "object"}   # accepted, no decision reads it (client, leader election)
_weighted = obj({"enabled": array(obj({"name": string(enum=SCHEDULER_PLUGINS),
                                       "weight": integer(minimum=1, maximum=100)}, ("name",)))})
KUBE_SCHEDULER_CONFIGURATION = top("kubescheduler.config.k8s.io/v1", "KubeSchedulerConfiguration", {
    "percentageOfNodesToScore": integer(minimum=0, maximum=100),
    "parallelism": integer(minimum=1),
    "leaderElection": _INERT_OBJECT,
    "clientConnection": _INERT_OBJECT,
    "enableProfiling": boolean(),
    "enableContentionProfiling": boolean(),
    "delayCacheUntilActive": boolean(),
    "profiles": array(obj({
        "schedulerName": string(enum=("default-scheduler",), default="default-scheduler"),
        "plugins": obj({"score": _weighted, "multiPoint": _weighted}),
        "pluginConfig": array(obj({
            "name": string(enum=("NodeResourcesFit",)),
            "args": obj({
                "apiVersion": string(enum=("kubescheduler.config.k8s.io/v1",)),
                "kind": string(enum=("NodeResourcesFitArgs",)),
                "scoringStrategy": obj({
                    "type": string(enum=SCORING_TYPES, default="LeastAllocated"),
                    "resources": array(obj({"name": string(), "weight": integer(minimum=1, maximum=100)},
                                           ("name", "weight")), minItems=1),
                    "requestedToCapacityRatio": obj({"shape": array(obj({
                        "utilization": integer(minimum=0, maximum=100),
                        "score": integer(minimum=0, maximum=10),
                    }, ("utilization", "score")), minItems=1)}, ("shape",)),
                }),
            }),
        }, ("name",))),
    }), minItems=1, maxItems=1),
}, with_metadata=False)
"""The modelled part of ``KubeSchedulerConfiguration`` (Go types ``KubeSchedulerConfiguration``,
``KubeSchedulerProfile``, ``Plugins``, ``PluginSet``, ``NodeResourcesFitArgs`` in
``k8s.io/kube-scheduler/config/v1/types.go`` and ``types_pluginargs.go``, v0.35.4). One profile,
the default scheduler; Score weights of TaintToleration, NodeAffinity and NodeResourcesFit in
``plugins.score.enabled`` or ``plugins.multiPoint.enabled``; NodeResourcesFit's scoring
strategy. ``parallelism``, ``leaderElection``, ``clientConnection``, the profiling switches and
``delayCacheUntilActive`` change how the scheduler runs, not what it decides: accepted, inert."""

# -- coscheduling PodGroup ----------------------------------------------------------------------
POD_GROUP_API = "scheduling.x-k8s.io/v1alpha1"
POD_GROUP = top(POD_GROUP_API, "PodGroup", {"spec": obj({
    "minMember": integer(minimum=1),
}, ("minMember",))}, ("spec",), namespaced=True)

# -- JobSet jobset.x-k8s.io/v1alpha2 ----------------------------------------------------------
JOBSET_API = "jobset.x-k8s.io/v1alpha2"
EMBEDDED_METADATA = ("annotations", "finalizers", "labels", "name", "namespace")
"""The fields the JobSet CRD keeps of an embedded object's ``metadata`` (a replicated job's
``template.metadata`` and its pod template's: controller-gen's embedded ObjectMeta); the API
server drops the others, the reader refuses them as unknown (:mod:`.validate`)."""
_OBJECT = {"type": "object"}   # checked elsewhere: Kubernetes' own schema (validate.py) or refused (coverage.py)
JOBSET = {"$schema": "https://json-schema.org/draft/2020-12/schema", **obj({
    "apiVersion": string(enum=(JOBSET_API,)),
    "kind": string(enum=("JobSet",)),
    "metadata": _OBJECT,   # Kubernetes' strict ObjectMeta
    "spec": obj({
        "replicatedJobs": array(obj({
            "name": string(),
            "groupName": string(default="default"),
            "template": _OBJECT,   # Kubernetes' strict batch/v1 JobTemplateSpec
            "replicas": integer(default=1, minimum=-2**31, maximum=2**31 - 1),
            "dependsOn": array(obj({"name": string(), "status": string(enum=("Ready", "Complete"))},
                                   ("name", "status")), maxItems=5),
        }, ("name", "template"))),
        "network": obj({"enableDNSHostnames": boolean(), "subdomain": string(), "publishNotReadyAddresses": boolean()}),
        "successPolicy": obj({"operator": string(enum=("All", "Any")), "targetReplicatedJobs": array(string())},
                             ("operator",)),
        "failurePolicy": obj({
            "maxRestarts": integer(minimum=-2**31, maximum=2**31 - 1),
            "restartStrategy": string(enum=("Recreate", "BlockingRecreate", "InPlaceRestart"), default="Recreate"),
            "rules": array(obj({
                "name": string(),
                "action": string(enum=("FailJobSet", "RestartJobSet", "RestartJobSetAndIgnoreMaxRestarts")),
                "onJobFailureReasons": array(string()),
                "onJobFailureMessagePatterns": array(string()),
                "targetReplicatedJobs": array(string()),
            }, ("action", "name"))),
        }),
        "startupPolicy": obj({"startupPolicyOrder": string(enum=("AnyOrder", "InOrder"))}, ("startupPolicyOrder",)),
        "suspend": boolean(),
        "coordinator": obj({"replicatedJob": string(), "jobIndex": integer(), "podIndex": integer()},
                           ("replicatedJob",)),
        "managedBy": string(),
        "ttlSecondsAfterFinished": integer(minimum=0, maximum=2**31 - 1),
        "volumeClaimPolicies": array(_OBJECT, maxItems=50),
    }),
    "status": _OBJECT,
}, ("apiVersion", "kind", "metadata", "spec"))}
"""A JobSet's own fields (``JobSetSpec``, ``ReplicatedJob`` and the policy types of
kubernetes-sigs/jobset v0.11.1 ``api/jobset/v1alpha2/jobset_types.go``; names, types, enums and
defaults as its CRD ``config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml``, which
tests/lab01/scenario/test_coverage.py walks). Every real field is here, so an unknown one is
a misspelling; which are modelled, inert or refused is :mod:`.coverage`'s table. ``metadata``
and each replicated job's ``template`` are checked against Kubernetes' strict schemas
(:mod:`.validate`); ``status`` and ``volumeClaimPolicies`` are refused whole."""

# -- this course's Scenario kind -----------------------------------------------------------------
SCENARIO_API = "lab01.course/v1alpha1"
DISCIPLINES = ("fifo", "fifo-skip", "priority", "drf", "backfill")
SCENARIO = top(SCENARIO_API, "Scenario", {"spec": obj({
    "description": string(maxLength=2000),
    "nodes": obj({"csv": string(minLength=1)}, ("csv",)),
    "workload": obj({
        "trace": obj({
            "path": string(minLength=1),
            "podList": string(default="default"),
            "method": string(enum=("timed", "replay"), default="timed"),
        }, ("path",)),
        "generator": obj({
            "name": string(enum=("synthetic",)),
            "seed": integer(minimum=0, maximum=2**32 - 1),
            "jobs": integer(minimum=1, maximum=1_000_000),
            "nodes": integer(minimum=1, maximum=100_000),
            "load": number(minimum=0.001, maximum=10),   # as simulate --load (commands/simulate.MIN_LOAD)
            "gangShare": number(minimum=0, maximum=1),
        }, ("name",)),
    }),
    "simulation": obj({
        "mode": string(enum=("gang", "naive"), default="gang"),
        "discipline": string(enum=DISCIPLINES, default="fifo-skip"),
        "policy": string(),
        "comparePolicies": array(string(), minItems=1, maxItems=16),
        "seed": integer(minimum=0, maximum=2**32 - 1, default=0),
        "until": number(exclusiveMinimum=0, maximum=1_000_000_000),   # s, as load.MAX_SECONDS
        # the GPU choice inside a node, named after HAMi's gpuSchedulerPolicy (policies/gpu_pick.py)
        "gpuSchedulerPolicy": string(enum=("binpack", "spread")),
        "topology": obj({
            "maxWaitSeconds": array(number(minimum=0, maximum=1_000_000_000), minItems=1, maxItems=16),
            "commFraction": number(minimum=0, maximum=1, default=0.2),
        }, ("maxWaitSeconds",)),
    }),
})}, ("spec",))

SCHEMAS: dict[tuple[str, str], dict[str, Any]] = {
    (KUEUE, "ResourceFlavor"): RESOURCE_FLAVOR,
    (KUEUE, "ClusterQueue"): CLUSTER_QUEUE,
    (KUEUE, "Cohort"): COHORT,
    (KUEUE, "LocalQueue"): LOCAL_QUEUE,
    (KUEUE, "WorkloadPriorityClass"): WORKLOAD_PRIORITY_CLASS,
    ("config.kueue.x-k8s.io/v1beta2", "Configuration"): KUEUE_CONFIGURATION,
    ("karpenter.sh/v1", "NodePool"): NODE_POOL,
    ("kubescheduler.config.k8s.io/v1", "KubeSchedulerConfiguration"): KUBE_SCHEDULER_CONFIGURATION,
    (POD_GROUP_API, "PodGroup"): POD_GROUP,
    (SCENARIO_API, "Scenario"): SCENARIO,
    (JOBSET_API, "JobSet"): JOBSET,
}
"""``(apiVersion, kind)`` -> JSON Schema of the fields the simulator models."""

CRD_KINDS: dict[tuple[str, str], tuple[str, str, str]] = {
    (KUEUE, "ResourceFlavor"): ("kueue", "kueue.x-k8s.io_resourceflavors.yaml", "v1beta2"),
    (KUEUE, "ClusterQueue"): ("kueue", "kueue.x-k8s.io_clusterqueues.yaml", "v1beta2"),
    (KUEUE, "Cohort"): ("kueue", "kueue.x-k8s.io_cohorts.yaml", "v1beta2"),
    (KUEUE, "LocalQueue"): ("kueue", "kueue.x-k8s.io_localqueues.yaml", "v1beta2"),
    (KUEUE, "WorkloadPriorityClass"): ("kueue", "kueue.x-k8s.io_workloadpriorityclasses.yaml", "v1beta2"),
    ("karpenter.sh/v1", "NodePool"): ("karpenter", "karpenter.sh_nodepools.yaml", "v1"),
}
"""Kinds that have a real CRD in ``../shared/data``: ``(folder, file, version)``."""

CRD_ONLY_FIELDS: dict[tuple[str, str], dict[tuple[str, ...], frozenset[str]]] = {
    ("karpenter.sh/v1", "NodePool"): {
        ("spec",): frozenset({"replicas", "weight"}),
        ("spec", "disruption"): frozenset({"budgets"}),
        ("spec", "template"): frozenset({"metadata"}),
        ("spec", "template", "spec"): frozenset({"startupTaints", "taints", "terminationGracePeriod"}),
        ("spec", "template", "spec", "requirements", "[]"): frozenset({"minValues"}),
    },
    (KUEUE, "ClusterQueue"): {
        ("spec",): frozenset({"admissionChecksStrategy", "admissionScope", "concurrentAdmissionPolicy", "stopPolicy"}),
        ("spec", "namespaceSelector"): frozenset({"matchExpressions", "matchLabels"}),
    },
    (KUEUE, "LocalQueue"): {("spec",): frozenset({"fairSharing", "stopPolicy"})},
    (KUEUE, "ResourceFlavor"): {
        ("spec",): frozenset({"topologyName"}),
        ("spec", "nodeTaints", "[]"): frozenset({"timeAdded"}),
    },
}
"""Fields of the real CRDs (``spec.versions[...].schema`` of the files in :data:`CRD_KINDS`)
that :data:`SCHEMAS` leaves out, at every level: ``run`` refuses them as "<path> is not
modelled", not as an unknown (misspelt) field. Keyed by the parent's path, ``"[]"`` for a list
item (tests/lab01/scenario/test_coverage.py walks the CRDs and checks that every field is in
:data:`SCHEMAS` or refused so). Below: Kueue's Configuration, KubeSchedulerConfiguration, the
PodGroup, and for every kind but ``Scenario`` the real ``metadata`` fields
(:data:`OBJECT_META_FIELDS`) and ``status`` it leaves out."""

KSC = ("kubescheduler.config.k8s.io/v1", "KubeSchedulerConfiguration")
_OTHER_POINTS = ("preEnqueue", "queueSort", "preFilter", "filter", "postFilter", "preScore", "reserve", "permit",
                 "preBind", "bind", "postBind")
CRD_ONLY_FIELDS[KSC] = {
    (): frozenset({"podInitialBackoffSeconds", "podMaxBackoffSeconds", "extenders"}),
    ("profiles", "[]"): frozenset({"percentageOfNodesToScore"}),
    ("profiles", "[]", "plugins"): frozenset(_OTHER_POINTS),
    ("profiles", "[]", "plugins", "score"): frozenset({"disabled"}),
    ("profiles", "[]", "plugins", "multiPoint"): frozenset({"disabled"}),
    ("profiles", "[]", "pluginConfig", "[]", "args"): frozenset({"ignoredResources", "ignoredResourceGroups"}),
}
CRD_ONLY_FIELDS[("config.kueue.x-k8s.io/v1beta2", "Configuration")] = {
    (): frozenset({"namespace", "webhook", "leaderElection", "metrics", "health", "pprofBindAddress", "controller",
                   "tls", "manageJobsWithoutQueueName", "managedJobsNamespaceSelector", "internalCertManagement",
                   "clientConnection", "integrations", "multiKueue", "admissionFairSharing", "resources",
                   "featureGates", "objectRetentionPolicies", "visibilityServer"}),
}
"""The other fields of Kueue's ``Configuration`` (``Configuration`` and the inlined
``ControllerManager`` in ``apis/config/v1beta2/configuration_types.go``, Kueue v0.17.0):
refused as not modelled."""

"""The real fields of ``KubeSchedulerConfiguration`` (``k8s.io/kube-scheduler/config/v1``)
that the simulator does not model: the scheduler's own backoff, extenders, a profile's own
percentage, plugin sets other than score and multiPoint weights, disabling plugins,
NodeResourcesFit's ignored resources."""

CRD_ONLY_FIELDS[(POD_GROUP_API, "PodGroup")] = {
    (): frozenset({"status"}),
    ("spec",): frozenset({"minResources", "scheduleTimeoutSeconds"}),
}
"""The other fields of the coscheduling ``PodGroup`` (``PodGroupSpec``, ``PodGroupStatus`` in
kubernetes-sigs/scheduler-plugins ``apis/scheduling/v1alpha1/types.go``, v0.34.7; the CRD
``config/crd/bases/scheduling.x-k8s.io_podgroups.yaml``): ``minResources`` (the Coscheduling
plugin's PreFilter check that the cluster could hold that much), ``scheduleTimeoutSeconds`` (how
long Permit waits for the gang) and the status are refused as not modelled."""

OBJECT_META_FIELDS = frozenset({
    "annotations", "creationTimestamp", "deletionGracePeriodSeconds", "deletionTimestamp", "finalizers",
    "generateName", "generation", "labels", "managedFields", "name", "namespace", "ownerReferences",
    "resourceVersion", "selfLink", "uid"})
"""The fields of Kubernetes' ``ObjectMeta`` (``k8s.io/apimachinery/pkg/apis/meta/v1/types.go``,
v0.35.4), which the API server gives the ``metadata`` of every custom resource (a CRD's schema
says only ``metadata: {type: object}``)."""

CRD_STATUS_KINDS = frozenset({(KUEUE, "ClusterQueue"), (KUEUE, "Cohort"), (KUEUE, "LocalQueue"),
                              ("karpenter.sh/v1", "NodePool"), (POD_GROUP_API, "PodGroup")})
"""The kinds above whose real CRD has a ``status`` (ResourceFlavor and WorkloadPriorityClass
have none)."""

for _key, _schema in SCHEMAS.items():
    if _key == (SCENARIO_API, "Scenario"):
        continue   # this course's own kind: a field it does not have is an unknown field
    _meta = _schema["properties"].get("metadata")
    if _meta is not None and "properties" in _meta:   # the real ObjectMeta fields the reader leaves out
        # are not modelled (a JobSet's metadata is checked as Kubernetes' ObjectMeta, coverage.py)
        CRD_ONLY_FIELDS.setdefault(_key, {})[("metadata",)] = OBJECT_META_FIELDS - set(_meta["properties"])
    if _key in CRD_STATUS_KINDS:   # the simulator starts every object anew
        _top = CRD_ONLY_FIELDS.setdefault(_key, {})
        _top[()] = _top.get((), frozenset()) | {"status"}

__all__ = ["CRD_KINDS", "CRD_ONLY_FIELDS", "CRD_STATUS_KINDS", "OBJECT_META_FIELDS", "SCHEMAS"]
