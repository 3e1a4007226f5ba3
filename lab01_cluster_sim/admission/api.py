"""The Kueue objects the admission layer understands, as typed records.

Field names and meanings follow Kueue's API ``kueue.x-k8s.io/v1beta2`` (Go types in
``apis/kueue/v1beta2/`` of kubernetes-sigs/kueue; the tests read its CRDs,
``config/components/crd/bases/`` at commit ff69552e, from ``$COURSE_SHARED_DATA/kueue``). Quantities are already integers in Kueue's
units (:mod:`.quantity`): CPU in milli-cores, memory in bytes, devices and pods as counts.
The scenario reader (:mod:`lab01_cluster_sim.scenario`) turns YAML into these records;
tests and notebooks may build them directly.

Documentation of each rule (Kueue main after v0.19.2, the v0.20 development line of the CRDs):

- ClusterQueue, resource groups, flavors, nominalQuota / borrowingLimit / lendingLimit,
  queueingStrategy, preemption, flavorFungibility:
  https://kueue.sigs.k8s.io/docs/concepts/cluster_queue/
- Cohort (parentName, own quota, fairSharing weight): https://kueue.sigs.k8s.io/docs/concepts/cohort/
- LocalQueue: https://kueue.sigs.k8s.io/docs/concepts/local_queue/
- ResourceFlavor (nodeLabels, nodeTaints, tolerations): https://kueue.sigs.k8s.io/docs/concepts/resource_flavor/
- Workload, pod sets, priority: https://kueue.sigs.k8s.io/docs/concepts/workload/ and
  https://kueue.sigs.k8s.io/docs/concepts/workload_priority_class/
- Partial admission (``minCount``): https://kueue.sigs.k8s.io/docs/tasks/run/jobs/#partial-admission
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from lab01_cluster_sim.corev1 import NodeSelectorTerm, Taint, Toleration
from lab01_cluster_sim.errors import InputError

FlavorResource = tuple[str, str]
"""``(flavor name, resource name)``: the key of every quota and usage figure."""

MAX_FLAVORS = 64
"""Flavors per resource group and resources per flavor (the CRD's ``maxItems``)."""
MAX_RESOURCE_GROUPS = 16
"""Resource groups per ClusterQueue or Cohort (the CRD's ``maxItems``)."""


class QueueingStrategy(str, enum.Enum):
    """How a ClusterQueue orders its workloads and requeues one that failed admission
    (Cluster Queue page, "Queueing strategy").

    Both order by priority (higher first), then creation time (older first).
    ``STRICT_FIFO``: an older workload that cannot be admitted blocks newer ones, even
    if they fit. ``BEST_EFFORT_FIFO`` (the default): it does not block newer workloads that
    fit; it waits aside ("inadmissible") until quota is freed in its cohort.
    """

    STRICT_FIFO = "StrictFIFO"
    BEST_EFFORT_FIFO = "BestEffortFIFO"


class PreemptionPolicy(str, enum.Enum):
    """Values of ``preemption.withinClusterQueue`` and ``preemption.reclaimWithinCohort``
    (Cluster Queue page, "Preemption"). ``LOWER_OR_NEWER_EQUAL_PRIORITY`` is valid only for
    ``withinClusterQueue``, ``ANY`` only for ``reclaimWithinCohort``."""

    NEVER = "Never"
    LOWER_PRIORITY = "LowerPriority"
    LOWER_OR_NEWER_EQUAL_PRIORITY = "LowerOrNewerEqualPriority"
    ANY = "Any"


class FungibilityPreference(str, enum.Enum):
    """Values of ``flavorFungibility.preference`` (v1beta2; ``FlavorFungibilityPreference`` in
    ``apis/kueue/v1beta2/clusterqueue_types.go``): which of two flavors wins when one needs
    borrowing and the other preemption (``isPreferred``,
    ``pkg/scheduler/flavorassigner/flavorassigner.go``). Unset behaves as
    ``BorrowingOverPreemption``."""

    BORROWING_OVER_PREEMPTION = "BorrowingOverPreemption"
    PREEMPTION_OVER_BORROWING = "PreemptionOverBorrowing"


class FungibilityPolicy(str, enum.Enum):
    """Values of ``flavorFungibility.whenCanBorrow`` / ``whenCanPreempt`` in v1beta2
    (``MayStopSearch`` was called ``Borrow`` / ``Preempt`` in v1beta1)."""

    MAY_STOP_SEARCH = "MayStopSearch"
    TRY_NEXT_FLAVOR = "TryNextFlavor"


@dataclass(frozen=True, slots=True)
class ResourceQuota:
    """Quota of one resource in one flavor of a ClusterQueue or Cohort.

    Attributes:
        nominal: ``nominalQuota``, the amount the queue owns.
        borrowing_limit: ``borrowingLimit``, most it may borrow from its cohort on top of
            ``nominal``; None = no limit (up to what the cohort has unused).
        lending_limit: ``lendingLimit``, most of its unused ``nominal`` others may borrow;
            None = all of it. Beta since Kueue v0.9, on by default.
    """

    nominal: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None


@dataclass(frozen=True, slots=True)
class FlavorQuotas:
    """One flavor of a resource group: its name and the quota of each covered resource."""

    name: str
    resources: Mapping[str, ResourceQuota]


@dataclass(frozen=True, slots=True)
class ResourceGroup:
    """Resources that must be assigned the same flavor (``coveredResources``), with the
    flavors to try, in order (``flavors``)."""

    covered_resources: tuple[str, ...]
    flavors: tuple[FlavorQuotas, ...]


@dataclass(frozen=True, slots=True)
class Preemption:
    """A ClusterQueue's ``preemption`` policies.

    Attributes:
        within_cluster_queue: may a pending workload that does not fit its queue's nominal
            quota preempt admitted workloads of the same ClusterQueue (Never,
            LowerPriority, LowerOrNewerEqualPriority).
        reclaim_within_cohort: may it preempt workloads of other ClusterQueues of the cohort
            that are borrowing (Never, LowerPriority, Any).
        borrow_within_cohort: ``borrowWithinCohort.policy`` (Never or LowerPriority): may it
            preempt in the cohort while itself borrowing.
        max_priority_threshold: ``borrowWithinCohort.maxPriorityThreshold``: only workloads
            with priority <= this may be preempted while borrowing (None = no threshold).
    """

    within_cluster_queue: PreemptionPolicy = PreemptionPolicy.NEVER
    reclaim_within_cohort: PreemptionPolicy = PreemptionPolicy.NEVER
    borrow_within_cohort: PreemptionPolicy = PreemptionPolicy.NEVER
    max_priority_threshold: int | None = None


@dataclass(frozen=True, slots=True)
class FlavorFungibility:
    """``flavorFungibility``: whether to stop at the first flavor where the workload fits
    by borrowing (``when_can_borrow``) or by preempting (``when_can_preempt``), or try the
    next flavor. Defaults as in the v1beta2 CRD: MayStopSearch / TryNextFlavor.
    ``preference`` (:class:`FungibilityPreference`, None = unset) ranks the flavors seen when
    the search goes on."""

    when_can_borrow: FungibilityPolicy = FungibilityPolicy.MAY_STOP_SEARCH
    when_can_preempt: FungibilityPolicy = FungibilityPolicy.TRY_NEXT_FLAVOR
    preference: FungibilityPreference | None = None


@dataclass(frozen=True, slots=True)
class ClusterQueue:
    """A ClusterQueue (``spec`` fields the admission layer models).

    Attributes:
        name: object name.
        resource_groups: quota per flavor and resource.
        cohort: ``cohortName`` (v1beta2; ``cohort`` in v1beta1), or None.
        queueing_strategy: StrictFIFO or BestEffortFIFO (default).
        preemption: preemption policies.
        flavor_fungibility: flavor search policy.
        fair_sharing_weight: ``fairSharing.weight`` (default 1; 0 = always first to be
            preempted under fair sharing).
    """

    name: str
    resource_groups: tuple[ResourceGroup, ...]
    cohort: str | None = None
    queueing_strategy: QueueingStrategy = QueueingStrategy.BEST_EFFORT_FIFO
    preemption: Preemption = field(default_factory=Preemption)
    flavor_fungibility: FlavorFungibility = field(default_factory=FlavorFungibility)
    fair_sharing_weight: float = 1.0

    def quotas(self) -> dict[FlavorResource, ResourceQuota]:
        """Every ``(flavor, resource)`` quota of the queue."""
        return _quotas(self.resource_groups)

    def group_of(self, resource: str) -> ResourceGroup | None:
        """The resource group covering ``resource``, or None."""
        for group in self.resource_groups:
            if resource in group.covered_resources:
                return group
        return None


@dataclass(frozen=True, slots=True)
class Cohort:
    """A Cohort object (hierarchical cohorts, Cohort page): an optional parent, its own
    quota (lendable to its subtree) and a fair-sharing weight. A cohort named by a
    ClusterQueue without a Cohort object exists implicitly with no quota."""

    name: str
    parent: str | None = None
    resource_groups: tuple[ResourceGroup, ...] = ()
    fair_sharing_weight: float = 1.0

    def quotas(self) -> dict[FlavorResource, ResourceQuota]:
        return _quotas(self.resource_groups)


@dataclass(frozen=True, slots=True)
class ResourceFlavor:
    """A ResourceFlavor: the node labels and taints of the nodes it stands for, and the
    tolerations Kueue adds to admitted pods. The admission layer only matches them
    against a pod set's nodeSelector and tolerations; it never looks at nodes."""

    name: str
    node_labels: Mapping[str, str] = field(default_factory=dict)
    node_taints: tuple[Taint, ...] = ()
    tolerations: tuple[Toleration, ...] = ()


@dataclass(frozen=True, slots=True)
class LocalQueue:
    """A LocalQueue: the namespaced queue users submit to, pointing at a ClusterQueue."""

    name: str
    namespace: str
    cluster_queue: str


@dataclass(frozen=True, slots=True)
class PodSet:
    """A group of identical pods of a workload.

    Attributes:
        name: pod set name (``main`` for a Job; ``launcher`` / ``worker`` for an MPIJob).
        count: pods wanted.
        requests: requests of ONE pod, resource -> amount in Kueue's units.
        min_count: smallest count the workload accepts (partial admission); None = count.
        node_selector: the pods' nodeSelector (matched against flavors' nodeLabels).
        tolerations: the pods' tolerations (matched against flavors' nodeTaints).
        affinity: the pods' required node affinity terms (``nodeAffinity.
            requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms``, ORed,
            :class:`~lab01_cluster_sim.corev1.NodeSelectorTerm`), matched against flavors'
            nodeLabels; () = none. Taints, tolerations and terms are the types of
            :mod:`lab01_cluster_sim.corev1`, shared with kube-scheduler's plugins.
    """

    name: str
    count: int
    requests: Mapping[str, int]
    min_count: int | None = None
    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Toleration, ...] = ()
    affinity: tuple[NodeSelectorTerm, ...] = ()

    def __post_init__(self) -> None:
        if self.count < 1:
            raise InputError(f"pod set {self.name!r}: count must be >= 1, got {self.count}")
        if self.min_count is not None and not 1 <= self.min_count <= self.count:
            raise InputError(f"pod set {self.name!r}: minCount must be in 1..count ({self.count}), got {self.min_count}")
        for res, amount in self.requests.items():
            if amount < 0:
                raise InputError(f"pod set {self.name!r}: request of {res} must be >= 0, got {amount}")

    def total(self, count: int | None = None) -> dict[str, int]:
        """Requests of ``count`` pods (default: all of them)."""
        n = self.count if count is None else count
        return {res: amount * n for res, amount in self.requests.items()}


@dataclass(frozen=True, slots=True)
class Workload:
    """A workload: the unit Kueue admits (one per Job, JobSet, PodGroup...).

    Attributes:
        name: unique name (the simulator's job id).
        queue_name: the LocalQueue it was submitted to (``kueue.x-k8s.io/queue-name``).
        pod_sets: its pod sets (1 to 8 in Kueue).
        namespace: namespace of the LocalQueue.
        priority: effective priority (from a WorkloadPriorityClass or PriorityClass).
        creation_time: when it was created in the simulation (its arrival), s (FIFO order).
        creation_timestamp: ``metadata.creationTimestamp`` as seconds since the epoch, or None:
            orders workloads created at the same simulated instant.
        position: its position in the input (the scenario file's order): the last
            tie-break of queue order, never the name.
    """

    name: str
    queue_name: str
    pod_sets: tuple[PodSet, ...]
    namespace: str = "default"
    priority: int = 0
    creation_time: float = 0.0
    creation_timestamp: float | None = None
    position: int = 0

    def __post_init__(self) -> None:
        if not self.pod_sets:
            raise InputError(f"workload {self.name!r}: needs at least one pod set")
        if len(self.pod_sets) > 8:
            raise InputError(f"workload {self.name!r}: at most 8 pod sets (Kueue's limit), got {len(self.pod_sets)}")
        names = [ps.name for ps in self.pod_sets]
        if len(set(names)) != len(names):
            raise InputError(f"workload {self.name!r}: pod set names must be unique, got {names}")
        if not math.isfinite(self.creation_time):
            raise InputError(f"workload {self.name!r}: creation_time must be finite, got {self.creation_time}")

    @property
    def can_be_partially_admitted(self) -> bool:
        """True when some pod set has a ``min_count`` below its count."""
        return any(ps.min_count is not None and ps.min_count < ps.count for ps in self.pod_sets)


def _quotas(groups: Iterable[ResourceGroup]) -> dict[FlavorResource, ResourceQuota]:
    out: dict[FlavorResource, ResourceQuota] = {}
    for group in groups:
        for flavor in group.flavors:
            for res, quota in flavor.resources.items():
                out[(flavor.name, res)] = quota
    return out


def validate_resource_groups(owner: str, groups: tuple[ResourceGroup, ...], has_parent: bool) -> None:
    """Check the rules the Kueue API server enforces on ``resourceGroups`` (CRD validation
    and webhook): at most 16 groups and 64 flavors; every flavor lists exactly the
    covered resources; a resource in one group only; a flavor in one group only;
    ``borrowingLimit`` only with a cohort; ``lendingLimit`` <= ``nominalQuota``.

    Raises:
        InputError: naming ``owner`` and the offending group/flavor/resource.
    """
    if len(groups) > MAX_RESOURCE_GROUPS:
        raise InputError(f"{owner}: at most {MAX_RESOURCE_GROUPS} resourceGroups, got {len(groups)}")
    seen_res: dict[str, int] = {}
    seen_flavor: dict[str, int] = {}
    for gi, group in enumerate(groups):
        where = f"{owner}: spec.resourceGroups[{gi}]"
        if not group.covered_resources:
            raise InputError(f"{where}.coveredResources: must not be empty")
        if len(group.flavors) > MAX_FLAVORS or len(group.covered_resources) > MAX_FLAVORS:
            raise InputError(f"{where}: at most {MAX_FLAVORS} flavors and covered resources")
        for res in group.covered_resources:
            if res in seen_res:
                raise InputError(f"{where}.coveredResources: {res!r} is already covered by resourceGroups[{seen_res[res]}]")
            seen_res[res] = gi
        for fi, flavor in enumerate(group.flavors):
            fwhere = f"{where}.flavors[{fi}] ({flavor.name})"
            if flavor.name in seen_flavor:
                raise InputError(f"{fwhere}: flavor already used in resourceGroups[{seen_flavor[flavor.name]}] "
                                 "(a flavor belongs to at most one resource group)")
            seen_flavor[flavor.name] = gi
            if list(flavor.resources) != list(group.covered_resources):
                raise InputError(f"{fwhere}.resources: must list the covered resources "
                                 f"{list(group.covered_resources)} in that order, got {list(flavor.resources)}")
            for res, quota in flavor.resources.items():
                if quota.borrowing_limit is not None and not has_parent:
                    raise InputError(f"{fwhere}: borrowingLimit of {res} needs a cohort "
                                     "(borrowingLimit must be nil when cohort is empty)")
                if quota.lending_limit is not None and quota.lending_limit > quota.nominal:
                    raise InputError(f"{fwhere}: lendingLimit of {res} ({quota.lending_limit}) must be <= "
                                     f"nominalQuota ({quota.nominal})")


__all__ = [
    "ClusterQueue", "Cohort", "FlavorFungibility", "FlavorQuotas", "FlavorResource", "FungibilityPolicy",
    "FungibilityPreference", "LocalQueue", "PodSet", "Preemption", "PreemptionPolicy", "QueueingStrategy",
    "ResourceFlavor", "ResourceGroup", "ResourceQuota", "Workload", "validate_resource_groups",
]
