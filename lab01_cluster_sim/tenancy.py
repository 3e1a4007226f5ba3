"""The usual GPU-node taint setup, and tenancy tiers.

Taints, tolerations and node selectors are kube-scheduler's plugins' business
(:mod:`lab01_cluster_sim.kubescheduler`: TaintToleration, NodeAffinity, over the matching of
:mod:`lab01_cluster_sim.corev1`), which scenario runs use with the taints of the Node objects
and the tolerations and selectors of the pods (``Job.extras``). This module adds what a cluster
set up the usual way for GPUs does around them, for runs without Node and Pod objects (the
``simulate`` command, the book): GPU nodes are commonly tainted
``nvidia.com/gpu=present:NoSchedule`` (GKE does so) and the ExtendedResourceToleration
admission plugin adds the matching toleration to pods that request ``nvidia.com/gpu``, so
CPU-only pods stay off GPU nodes (:class:`GpuNodeTaint`, ``--plugin constraints``: that setup,
decided by TaintToleration itself).

Tenancy tiers: paying tenants (``premium``, ``standard``) and a best-effort ``free`` tier.
The constraints: a free-tier job never shares a *physical GPU* with a paying tenant's job
(no noisy neighbour, no data next to a stranger's without isolation), and a premium job
never shares its GPU with any other job: premium is sold as a whole GPU or a MIG instance,
and the simulator's GPUs are not MIG-partitioned, so here it gets whole GPUs. Each tier maps
to the sharing mechanism it is sold with (:data:`TIER_MECHANISM`).

Both are plugins of the one engine (:mod:`lab01_cluster_sim.framework.interface`):
:class:`GpuNodeTaint` at the Filter and Score points (TaintToleration's), :class:`TenancyPlacer`
at the device-filter point (which GPUs of each node a job may use).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

import numpy as np

from lab01_cluster_sim.corev1 import Taint, Toleration
from lab01_cluster_sim.kubescheduler.constraints import tolerations
from lab01_cluster_sim.kubescheduler.tainttoleration import DEFAULT_WEIGHT, TaintToleration
from lab01_cluster_sim.model import Job, JobRecord, Node

GPU_TAINT = Taint("nvidia.com/gpu", "present", "NoSchedule")
"""The usual taint on GPU nodes."""

GPU_TOLERATION = Toleration("nvidia.com/gpu", "Exists", effect="NoSchedule")
"""What ExtendedResourceToleration adds to a pod requesting ``nvidia.com/gpu``."""


class Tier(enum.Enum):
    """Tenancy tiers."""

    PREMIUM = "premium"
    STANDARD = "standard"
    FREE = "free"

    @property
    def paying(self) -> bool:
        """True for tiers that pay (premium, standard)."""
        return self is not Tier.FREE


TIER_MECHANISM: Mapping[Tier, str] = {
    Tier.PREMIUM: "dedicated GPU or MIG instance (hardware isolation of memory and SMs)",
    Tier.STANDARD: "smaller MIG instance, or MPS with limits within one customer's (trusted) pool",
    Tier.FREE: "time-slicing (no memory isolation, shares only with other free-tier jobs)",
}
"""Tier -> the sharing mechanism it is sold with."""


class GpuNodeTaint(TaintToleration):
    """Engine plugin ``"constraints"`` (``--plugin constraints``): kube-scheduler's
    TaintToleration, every rule of it (:class:`~lab01_cluster_sim.kubescheduler.tainttoleration.
    TaintToleration`: the Filter, the PreferNoSchedule Score, NoExecute eviction), on a cluster
    set up the usual way for GPUs:

    - every node with GPUs carries :data:`GPU_TAINT` besides its own ``spec.taints`` (a node
      launched during the run too);
    - the ExtendedResourceToleration admission plugin has added :data:`GPU_TOLERATION` to every
      pod that requests GPUs, besides the pod's own tolerations (Kubernetes v1.35
      ``plugin/pkg/admission/extendedresourcetoleration/admission.go``, ``Admit``: for each
      extended resource a container or init container requests, a toleration with that key,
      operator Exists, effect NoSchedule);
    - with ``cpu_pods_tolerate``, CPU-only pods carry that toleration too (as if their manifests
      said so), so they may use a GPU node's spare CPU; without it they stay off GPU nodes.

    It is a static filter (``static = True``): a job that no node could ever host, given these
    taints, is rejected when it arrives, as for every static filter of the engine.

    Args:
        cpu_pods_tolerate: give CPU-only pods the GPU toleration.
        weight: the Score weight (kube-scheduler's default profile: 3).
    """

    name = "constraints"
    static = True

    def __init__(self, cpu_pods_tolerate: bool = False, weight: int = DEFAULT_WEIGHT) -> None:
        super().__init__(weight)
        self.cpu_pods_tolerate = cpu_pods_tolerate

    def node_taints(self, node: Node) -> tuple[Taint, ...]:
        """``node``'s own taints, plus :data:`GPU_TAINT` when it has GPUs (once)."""
        if node.gpu_count > 0 and GPU_TAINT not in node.taints:
            return node.taints + (GPU_TAINT,)
        return node.taints

    def pod_tolerations(self, job: Job) -> tuple[Toleration, ...]:
        """The pods' own tolerations, plus :data:`GPU_TOLERATION` for a pod requesting GPUs
        (ExtendedResourceToleration) or, with ``cpu_pods_tolerate``, for any pod."""
        own = tolerations(job)
        if (job.gpus_per_worker > 0 or self.cpu_pods_tolerate) and GPU_TOLERATION not in own:
            return own + (GPU_TOLERATION,)
        return own


def constraints_plugin(nodes, jobs, cpu_pods_tolerate: int = 1) -> GpuNodeTaint:
    """``--plugin constraints``: :class:`GpuNodeTaint`; CPU-only pods tolerate the GPU taint
    unless ``cpu_pods_tolerate=0``.

    Raises:
        ValueError: ``cpu_pods_tolerate`` other than 0 or 1.
    """
    if cpu_pods_tolerate not in (0, 1):
        raise ValueError(f"cpu_pods_tolerate must be 0 or 1, got {cpu_pods_tolerate}")
    return GpuNodeTaint(cpu_pods_tolerate=bool(cpu_pods_tolerate))


class TenancyPlacer:
    """Engine plugin (``"tenancy"``, device-filter point) that never puts a free-tier job on a
    GPU used by a paying tenant, nor a paying job on a GPU used by the free tier, and never lets
    a premium job share a GPU: a premium job goes only to GPUs nothing runs on, and no job goes
    to a GPU a premium job runs on (premium = a whole GPU, or a MIG instance on MIG hardware).

    Args:
        tiers: tenant -> :class:`Tier` (unknown tenants get ``default``).
        default: tier of tenants not in ``tiers``.

    Placement is the policy's, on the GPUs this plugin leaves (the others look full).
    """

    name = "tenancy"

    def __init__(self, tiers: Mapping[str, Tier], default: Tier = Tier.STANDARD) -> None:
        self.tiers = dict(tiers)
        self.default = default
        # running jobs per (node, GPU) and tier column (premium, standard, free), kept by the
        # bind/release hooks, so a device mask is a few vector comparisons
        self._held = np.zeros((0, 1, 3), dtype=np.int64)
        self._masks: dict[Tier, np.ndarray] = {}    # per tier, kept in step by the bind/release hooks

    _COLUMN = {Tier.PREMIUM: 0, Tier.STANDARD: 1, Tier.FREE: 2}

    def tier(self, tenant: str) -> Tier:
        """The tier of ``tenant``."""
        return self.tiers.get(tenant, self.default)

    def gpu_tiers(self, sim) -> dict[tuple[int, int], set[Tier]]:
        """(node, GPU) -> tiers of the jobs running on it (``sim``: a running Simulation)."""
        out: dict[tuple[int, int], set[Tier]] = {}
        for rec in _running_records(sim):
            t = self.tier(rec.job.tenant)
            for p in rec.placements:
                for g in p.gpus:
                    out.setdefault((p.node_index, g), set()).add(t)
        return out

    def _ensure(self, shape: tuple[int, int]) -> None:
        n, g = shape
        if self._held.shape[0] < n or self._held.shape[1] < g:
            grown = np.zeros((max(n, self._held.shape[0]), max(g, self._held.shape[1]), 3), dtype=np.int64)
            grown[: self._held.shape[0], : self._held.shape[1]] = self._held
            self._held = grown

    def _count(self, record, placement, sign: int) -> None:
        # Only shared GPUs matter: a GPU a whole-GPU job holds has nothing free for anyone,
        # whatever the masks say there, and is empty again when it leaves.
        if not placement.gpus or record.job.gpu_milli >= 1000:
            return
        n = placement.node_index
        self._ensure((n + 1, max(placement.gpus) + 1))
        col = self._COLUMN[self.tier(record.job.tenant)]
        for g in placement.gpus:
            self._held[n, g, col] += sign
            held = self._held[n, g].tolist()
            # the masks change only where a job came or went
            for tier, mask in self._masks.items():
                mask[n, g] = self._allowed(tier, held)

    @staticmethod
    def _allowed(tier: Tier, held) -> bool:
        """May a job of ``tier`` use a GPU running ``held`` = (premium, standard, free) jobs?"""
        premium, standard, free = held
        if tier is Tier.PREMIUM:
            return premium + standard + free == 0        # a whole GPU nobody else uses
        if tier.paying:
            return premium == 0 and free == 0            # never beside the free tier or a premium job
        return premium == 0 and standard == 0            # free tier: never beside a paying tenant

    def on_bind(self, record, placement, request) -> None:
        self._count(record, placement, 1)

    def on_release(self, record, placement, request) -> None:
        self._count(record, placement, -1)

    def filter_devices(self, sim, record: JobRecord, request) -> np.ndarray | None:
        """bool (N, G): the GPUs ``record``'s tier may use now; None when it may use them all
        (no mask: the scheduler's fast filter). Whole GPUs need none: a whole-GPU worker takes
        only GPUs nothing runs on, which every tier may use (premium included)."""
        if request.num_gpus == 0 or request.gpu_milli >= 1000:
            return None
        tier = self.tier(record.job.tenant)
        shape = sim.state.gpu_free.shape
        mask = self._masks.get(tier)
        if mask is None or mask.shape != shape:
            self._ensure(shape)
            held = self._held[: shape[0], : shape[1]]
            mask = np.array([[self._allowed(tier, held[n, g].tolist()) for g in range(shape[1])]
                             for n in range(shape[0])], dtype=bool).reshape(shape)
            self._masks[tier] = mask
        return None if mask.all() else mask


def tenancy_plugin(nodes, jobs, free: str = "", premium: str = "") -> TenancyPlacer:
    """``--plugin tenancy:free=tenant1;tenant2,premium=tenant3`` (other tenants: standard)."""
    tiers = {t: Tier.FREE for t in free.split(";") if t} | {t: Tier.PREMIUM for t in premium.split(";") if t}
    return TenancyPlacer(tiers)


def _running_records(sim) -> list[JobRecord]:
    return sorted(sim.scheduler.running.values(), key=lambda r: r.queue_seq)


def tenancy_violations(sim, placer: TenancyPlacer) -> list[tuple[str, int, tuple[str, ...]]]:
    """(node name, GPU, job ids) of every GPU where a free-tier and a paying job run
    together, or a premium job runs with any other job, in the running
    :class:`~lab01_cluster_sim.simulate.Simulation` ``sim``."""
    jobs: dict[tuple[int, int], list[str]] = {}
    for rec in _running_records(sim):
        for p in rec.placements:
            for g in p.gpus:
                jobs.setdefault((p.node_index, g), []).append(rec.job_id)
    bad = []
    for (node, g), ids in sorted(jobs.items()):
        tiers = [placer.tier(sim.records[i].job.tenant) for i in ids]
        if len({t.paying for t in tiers}) > 1 or (Tier.PREMIUM in tiers and len(ids) > 1):
            bad.append((sim.state.nodes[node].name, g, tuple(sorted(ids))))
    return bad
