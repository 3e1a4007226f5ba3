"""Admission: which workloads may start, by quota, before placement decides where.

A Kueue-style admission layer as pure bookkeeping: it never looks at nodes (placement
never looks at quota). It follows the semantics of **Kueue main after v0.19.2** (the v0.20 development line, not
released when this was written; API
``kueue.x-k8s.io/v1beta2``; the CRDs this course reads, ``../shared/data/kueue``, are from
kubernetes-sigs/kueue commit ff69552e, development after v0.19.2, ``git describe``
v0.20.0-devel-377), as documented at https://kueue.sigs.k8s.io/docs/concepts/ and
implemented in ``pkg/scheduler`` and ``pkg/cache/scheduler`` of that repository. Each
module cites the page and the code it follows:

- :mod:`.quantity`: Kubernetes quantities as Kueue's integers.
- :mod:`.api`: ResourceFlavor, ClusterQueue, Cohort, LocalQueue, Workload and PodSet records.
- :mod:`.quota`: nominal quota, borrowing and lending limits, cohorts (also hierarchical),
  dominant resource share.
- :mod:`.ordering`: the ordering rules (queue order, cycle order, preemption candidates).
- :mod:`.flavors`: flavor assignment, flavor fungibility, partial admission search.
- :mod:`.preemption`: classic and fair-sharing preemption targets.
- :mod:`.controller`: the admission cycle (StrictFIFO / BestEffortFIFO, preemption,
  partial admission) with typed :class:`~.controller.Decision` outcomes.
- :mod:`.backoff`: requeue backoff after a failed start (waitForPodsReady).

Not modelled (Kueue features outside the course): admission checks, MultiKueue,
topology-aware scheduling, admission fair sharing (LocalQueue usage), elastic workload
slices, concurrent admission, stop policies, a workload's second pass.
"""

from lab01_cluster_sim.admission.api import (
    ClusterQueue,
    Cohort,
    FlavorFungibility,
    FlavorQuotas,
    FungibilityPolicy,
    LocalQueue,
    PodSet,
    Preemption,
    PreemptionPolicy,
    QueueingStrategy,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
    Workload,
)
from lab01_cluster_sim.admission.controller import AdmissionController, Decision, Outcome, State, WorkloadStatus
from lab01_cluster_sim.admission.preemption import FairSharingStrategy
from lab01_cluster_sim.admission.quota import QuotaTree

KUEUE_VERSION = "v0.20.0-devel"
"""Kueue version whose semantics the admission layer follows: main after v0.19.2 (commit
ff69552e, ``git describe`` v0.20.0-devel-377; v0.20 was not released when this was written)."""
KUEUE_API_VERSION = "kueue.x-k8s.io/v1beta2"
"""API version of the Kueue objects the scenario reader accepts."""

__all__ = [
    "KUEUE_API_VERSION", "KUEUE_VERSION", "AdmissionController", "ClusterQueue", "Cohort", "Decision",
    "FairSharingStrategy", "FlavorFungibility", "FlavorQuotas", "FungibilityPolicy", "LocalQueue", "Outcome",
    "PodSet", "Preemption", "PreemptionPolicy", "QueueingStrategy", "QuotaTree", "ResourceFlavor", "ResourceGroup",
    "ResourceQuota", "State", "Workload", "WorkloadStatus",
]
