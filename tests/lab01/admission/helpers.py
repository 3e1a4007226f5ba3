"""Small builders for admission tests: one GPU resource group per ClusterQueue."""

from __future__ import annotations

from lab01_cluster_sim.admission import (
    AdmissionController,
    ClusterQueue,
    FlavorQuotas,
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

GPU = "nvidia.com/gpu"
CPU = "cpu"
NEVER, LOWER, ANY = PreemptionPolicy.NEVER, PreemptionPolicy.LOWER_PRIORITY, PreemptionPolicy.ANY


def gpu_cq(name: str, *quotas: tuple, cohort: str | None = "pool", strategy=QueueingStrategy.BEST_EFFORT_FIFO,
           preemption: Preemption = Preemption(), weight: float = 1.0, resource: str = GPU) -> ClusterQueue:
    """A ClusterQueue covering one resource; ``quotas`` = (flavor, nominal[, borrowingLimit[, lendingLimit]])."""
    flavors = []
    for q in quotas:
        flavor, nominal, *rest = q
        bl = rest[0] if len(rest) > 0 else None
        ll = rest[1] if len(rest) > 1 else None
        flavors.append(FlavorQuotas(flavor, {resource: ResourceQuota(nominal, bl, ll)}))
    return ClusterQueue(name, (ResourceGroup((resource,), tuple(flavors)),), cohort, strategy, preemption,
                        fair_sharing_weight=weight)


def controller(cqs, flavors=("a100",), **kwargs) -> AdmissionController:
    """A controller with LocalQueue ``lq-<cq>`` in namespace ``ns`` for every ClusterQueue."""
    lqs = [LocalQueue(f"lq-{cq.name}", "ns", cq.name) for cq in cqs]
    return AdmissionController(cqs, lqs, [ResourceFlavor(f) for f in flavors], **kwargs)


def wl(name: str, cq: str, gpus: int, t: float = 0.0, priority: int = 0, count: int = 1, min_count=None,
       resource: str = GPU, **ps_kwargs) -> Workload:
    """A one-pod-set workload of ``count`` pods asking ``gpus`` each, in LocalQueue ``lq-<cq>``."""
    return Workload(name, f"lq-{cq}", (PodSet("main", count, {resource: gpus}, min_count, **ps_kwargs),), "ns",
                    priority, t)


def outcomes(decisions) -> list[tuple[str, str]]:
    return [(d.workload, d.outcome.value) for d in decisions]
