"""Node labels and nodeSelector, taints and tolerations, and tenancy tiers.

Kubernetes rules modelled (Kubernetes docs, "Assigning Pods to Nodes" and "Taints and
Tolerations"; the types and the matching are :mod:`lab01_cluster_sim.corev1`'s, as for
kube-scheduler's plugins in :mod:`lab01_cluster_sim.kubescheduler`, which scenario runs use):

- ``nodeSelector``: every key/value must be among the node's labels. GPU Feature
  Discovery labels nodes with e.g. ``nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3`` and
  ``nvidia.com/gpu.count=8``.
- A pod may land on a node only if it tolerates every taint with effect ``NoSchedule`` or
  ``NoExecute`` (``PreferNoSchedule`` is a soft preference and does not filter). A
  toleration matches a taint when the keys are equal (or the toleration's key is empty
  with operator ``Exists``), the operator is ``Exists`` or the values are equal, and the
  toleration's effect is empty or equal. GPU nodes are commonly tainted
  ``nvidia.com/gpu=present:NoSchedule`` (GKE does so) and the ExtendedResourceToleration
  admission plugin adds the matching toleration to pods that request ``nvidia.com/gpu``:
  CPU-only pods then stay off GPU nodes.

Tenancy tiers: paying tenants (``premium``, ``standard``) and a best-effort ``free`` tier.
The constraints: a free-tier job never shares a *physical GPU* with a paying tenant's job
(no noisy neighbour, no data next to a stranger's without isolation), and a premium job
never shares its GPU with any other job: premium is sold as a whole GPU or a MIG instance,
and the simulator's GPUs are not MIG-partitioned, so here it gets whole GPUs. Each tier maps
to the sharing mechanism it is sold with (:data:`TIER_MECHANISM`).

Both are plugins of the one engine (:mod:`lab01_cluster_sim.framework.interface`):
:class:`ConstraintFilter` at the Filter point (a node mask per job), :class:`TenancyPlacer` at
the device-filter point (which GPUs of each node a job may use).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from lab01_cluster_sim.corev1 import RequiredNodeAffinity, Taint, Toleration, find_untolerated_taint
from lab01_cluster_sim.errors import InputError
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


@dataclass(frozen=True)
class PodConstraints:
    """Scheduling constraints of one job's pods.

    Attributes:
        node_selector: required node labels.
        tolerations: its tolerations; a job requesting GPUs gets :data:`GPU_TOLERATION`
            added automatically (ExtendedResourceToleration), unless ``auto_gpu_toleration`` is False.
    """

    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Toleration, ...] = ()
    auto_gpu_toleration: bool = True


class ConstraintFilter:
    """Engine plugin (``"constraints"``, Filter point) applying nodeSelector and
    taints/tolerations.

    Args:
        nodes: the cluster (labels come from the nodes; nodes added during a run are matched
            by their own labels and carry no taint unless given here by name).
        taints: node name -> its taints; default: :data:`GPU_TAINT` on every GPU node.
        constraints: job id -> :class:`PodConstraints` (default: none).
    """

    name = "constraints"
    static = True   # depends only on node labels/taints and the job: arrival may reject on it

    def __init__(self, nodes: Sequence[Node], taints: Mapping[str, Sequence[Taint]] | None = None,
                 constraints: Mapping[str, PodConstraints] | None = None) -> None:
        self.nodes = list(nodes)
        self._default_taint = taints is None
        if taints is None:
            taints = {n.name: (GPU_TAINT,) for n in self.nodes if n.gpu_count > 0}
        unknown = set(taints) - {n.name for n in self.nodes}
        if unknown:
            raise InputError(f"taints given for unknown node(s): {', '.join(sorted(unknown))}")
        self.taints = {n.name: tuple(taints.get(n.name, ())) for n in self.nodes}
        self.constraints = dict(constraints or {})
        self._cache: dict[tuple, np.ndarray] = {}
        self._by_job: dict[str, tuple[Job, np.ndarray]] = {}
        self._plain: dict[bool, np.ndarray] = {}

    def attach(self, sim) -> None:
        self._sim = sim

    def _node_list(self) -> list[Node]:
        sim = getattr(self, "_sim", None)
        if sim is not None and sim.state.num_nodes > len(self.nodes):
            for n in sim.state.nodes[len(self.nodes):]:   # launched during the run
                self.nodes.append(n)
                self.taints.setdefault(n.name, (GPU_TAINT,) if (self._default_taint and n.gpu_count) else ())
            self._cache.clear()
            self._by_job.clear()
            self._plain.clear()
        return self.nodes

    def mask(self, job: Job) -> np.ndarray:
        """bool (N,): nodes whose labels and taints admit ``job``'s pods (cached per job)."""
        self._node_list()   # first catch up with nodes launched during the run
        hit = self._by_job.get(job.job_id)
        if hit is not None and hit[0] is job:
            return hit[1]
        c = self.constraints.get(job.job_id)
        if c is None:   # the common case: no constraints of its own; one mask per GPU/CPU pod
            m = self._plain.get(job.gpus_per_worker > 0)
            if m is None:
                m = self._plain[job.gpus_per_worker > 0] = self._compute(PodConstraints(), job)
            return m
        return self._compute(c, job)

    def _compute(self, c: PodConstraints, job: Job) -> np.ndarray:
        nodes = self.nodes
        tol = c.tolerations + ((GPU_TOLERATION,) if (c.auto_gpu_toleration and job.gpus_per_worker > 0) else ())
        key = (tuple(sorted(c.node_selector.items())), tol)
        m = self._cache.get(key)
        if m is None:
            required = RequiredNodeAffinity(key[0])
            m = np.array([required.matches(n.labels, n.name)
                          and find_untolerated_taint(self.taints[n.name], tol) is None
                          for n in nodes], dtype=bool)
            self._cache[key] = m
        self._by_job[job.job_id] = (job, m)
        return m

    def filter(self, request, record: JobRecord | None) -> np.ndarray:
        """The Filter point: :meth:`mask` of ``record``'s job (all nodes when asked about a
        shape without a job)."""
        if record is None:
            return np.ones(len(self._node_list()), dtype=bool)
        return self.mask(record.job)

    extra_filter = filter
    """The same mask as a :attr:`Scheduler.extra_filters` entry ``(request, record) -> mask``
    (``sim.scheduler.extra_filters.append(constraint_filter.extra_filter)``; prefer
    ``plugins=[constraint_filter]``)."""

    def __call__(self, runner, job: Job) -> np.ndarray:
        return self.mask(job)


def constraints_plugin(nodes, jobs, cpu_pods_tolerate: int = 1) -> ConstraintFilter:
    """``--plugin constraints``: GPU nodes tainted nvidia.com/gpu=present:NoSchedule; GPU pods
    tolerate it (ExtendedResourceToleration); CPU-only pods too unless ``cpu_pods_tolerate=0``."""
    tol = PodConstraints(tolerations=(GPU_TOLERATION,))
    return ConstraintFilter(nodes, constraints={j.job_id: tol for j in jobs if j.gpus_per_worker == 0}
                            if cpu_pods_tolerate else None)


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
