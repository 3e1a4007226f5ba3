"""Quota bookkeeping: ClusterQueues and Cohorts as a tree of resource nodes.

This is Kueue's own model (kubernetes-sigs/kueue ``pkg/cache/scheduler/resource_node.go``,
Kueue main after v0.19.2, the v0.20 development line), written out so each rule can be checked by hand. Every node (a
ClusterQueue, or a Cohort, explicit or implicit) keeps, per ``(flavor, resource)``:

- ``subtree_quota``: its own nominal quota plus what its children make available to it.
  A child contributes ``child.subtree_quota - child.local_quota`` (its quota minus what
  ``lendingLimit`` keeps for itself).
- ``local_quota``: ``max(0, subtree_quota - lendingLimit)`` when a lendingLimit is set, else
  0: the part of the quota no one outside the node can borrow.
- ``usage``: for a ClusterQueue, the requests of its admitted workloads; for a Cohort, the
  sum over children of ``max(0, child.usage - child.local_quota)`` (what they use beyond
  their private part).

From these, exactly as Kueue computes them:

- ``available(cq)``: what ``cq`` can still admit now =
  ``max(0, local_quota - usage)`` + what its parent has available, capped by the
  borrowing limit: ``min(parent_available, subtree_quota - local_quota - max(0, usage -
  local_quota) + borrowingLimit)``. At a root: ``subtree_quota - usage``.
- ``potential_available(cq)``: the same with no usage anywhere (the most it could ever
  get): ``min(subtree_quota + borrowingLimit, local_quota + potential_available(parent))``.
- borrowing: a ClusterQueue borrows a resource when its usage exceeds its nominal quota.

The documentation rules these implement (Cluster Queue page,
https://kueue.sigs.k8s.io/docs/concepts/cluster_queue/#flavors-and-borrowing-semantics):
a request fits when it is <= the unused nominal quota, or <= the unused nominal quota of
the cohort and <= unused ``nominalQuota + borrowingLimit``; ``lendingLimit`` caps what a
queue lends ("ClusterQueue team-b-cq lendingLimit=1 ... team-a-cq can admit up to 9+1=10").

Dominant resource share (DRS, fair sharing, KEP-1714 "Share value function", and
``pkg/cache/scheduler/fair_sharing.go``): for a node with a parent, borrowed(r) = sum over
flavors of ``max(0, usage + extra - subtree_quota)``; lendable(r) = sum over flavors of
``potential_available(parent, (f, r))``; DRS = max over r of ``borrowed(r) * 1000 /
lendable(r)``, divided by the node's fairSharing weight (weight 0 while borrowing = +inf).
A node not borrowing, or without a parent, has DRS 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from lab01_cluster_sim.admission.api import ClusterQueue, Cohort, FlavorResource, ResourceQuota, validate_resource_groups
from lab01_cluster_sim.errors import InputError

Usage = dict[FlavorResource, int]
"""Requests per ``(flavor, resource)``, in Kueue's integer units."""


@dataclass(eq=False)
class Node:
    """One node of the quota tree (a ClusterQueue or a Cohort).

    Attributes:
        name: object name. kind: ``"ClusterQueue"`` or ``"Cohort"``.
        quotas: its own ``(flavor, resource)`` quotas.
        weight: fairSharing weight.
        parent: the parent cohort, or None.
        children: child nodes (cohorts first, then ClusterQueues, each sorted by name).
        subtree_quota, usage: see the module docstring.
    """

    name: str
    kind: str
    quotas: dict[FlavorResource, ResourceQuota]
    weight: float = 1.0
    parent: "Node | None" = None
    children: list["Node"] = field(default_factory=list)
    subtree_quota: dict[FlavorResource, int] = field(default_factory=dict)
    usage: dict[FlavorResource, int] = field(default_factory=dict)

    @property
    def is_cluster_queue(self) -> bool:
        return self.kind == "ClusterQueue"

    def local_quota(self, fr: FlavorResource) -> int:
        """Quota kept private by ``lendingLimit``: ``max(0, subtree_quota - lendingLimit)``, or 0."""
        quota = self.quotas.get(fr)
        if quota is not None and quota.lending_limit is not None:
            return max(0, self.subtree_quota.get(fr, 0) - quota.lending_limit)
        return 0

    def local_available(self, fr: FlavorResource) -> int:
        """Unused private quota: ``max(0, local_quota - usage)``."""
        return max(0, self.local_quota(fr) - self.usage.get(fr, 0))

    def path_to_root(self) -> list["Node"]:
        """This node, its parent, ... up to the root."""
        out, node = [], self
        while node is not None:
            out.append(node)
            node = node.parent
        return out

    def root(self) -> "Node":
        return self.path_to_root()[-1]

    def subtree_cluster_queues(self) -> list["Node"]:
        """Every ClusterQueue under this node (itself if it is one), in tree order."""
        if self.is_cluster_queue:
            return [self]
        out: list[Node] = []
        for child in self.children:
            out.extend(child.subtree_cluster_queues())
        return out

    def __repr__(self) -> str:
        return f"{self.kind}({self.name!r})"


class QuotaTree:
    """ClusterQueues and Cohorts linked into trees, with usage kept up to date.

    Args:
        cluster_queues: the ClusterQueues.
        cohorts: explicit Cohort objects (others are created empty when a ClusterQueue
            names them).

    Raises:
        InputError: duplicate names, a cohort cycle, bad resource groups.
    """

    def __init__(self, cluster_queues: Iterable[ClusterQueue], cohorts: Iterable[Cohort] = ()) -> None:
        self.cluster_queues: dict[str, Node] = {}
        self.cohorts: dict[str, Node] = {}
        cohort_specs: dict[str, Cohort] = {}
        for c in cohorts:
            if c.name in cohort_specs:
                raise InputError(f"Cohort/{c.name}: defined twice")
            validate_resource_groups(f"Cohort/{c.name}", c.resource_groups, has_parent=c.parent is not None)
            cohort_specs[c.name] = c
            self.cohorts[c.name] = Node(c.name, "Cohort", c.quotas(), c.fair_sharing_weight)
        for cq in cluster_queues:
            if cq.name in self.cluster_queues:
                raise InputError(f"ClusterQueue/{cq.name}: defined twice")
            validate_resource_groups(f"ClusterQueue/{cq.name}", cq.resource_groups, has_parent=cq.cohort is not None)
            self.cluster_queues[cq.name] = Node(cq.name, "ClusterQueue", cq.quotas(), cq.fair_sharing_weight)
        # link: implicit cohorts come into being when named
        for c in cohort_specs.values():
            if c.parent is not None:
                self._link(self.cohorts[c.name], self._cohort(c.parent))
        for cq in cluster_queues:
            if cq.cohort is not None:
                self._link(self.cluster_queues[cq.name], self._cohort(cq.cohort))
        for node in self.cohorts.values():
            seen = set()
            walker: Node | None = node
            while walker is not None:
                if id(walker) in seen:
                    raise InputError(f"Cohort/{node.name}: the parentName chain has a cycle")
                seen.add(id(walker))
                walker = walker.parent
        for node in self.cohorts.values():
            node.children.sort(key=lambda n: (n.is_cluster_queue, n.name))
        self._rebuild_quota()

    def _cohort(self, name: str) -> Node:
        if name not in self.cohorts:
            self.cohorts[name] = Node(name, "Cohort", {}, 1.0)
        return self.cohorts[name]

    @staticmethod
    def _link(child: Node, parent: Node) -> None:
        child.parent = parent
        parent.children.append(child)

    def _rebuild_quota(self) -> None:
        for root in self.roots():
            _accumulate(root)
        for cq in self.cluster_queues.values():
            if cq.parent is None:
                cq.subtree_quota = {fr: q.nominal for fr, q in cq.quotas.items()}

    def roots(self) -> list[Node]:
        """Root cohorts, by name."""
        return sorted((n for n in self.cohorts.values() if n.parent is None), key=lambda n: n.name)

    def node(self, cluster_queue: str) -> Node:
        """The node of ClusterQueue ``cluster_queue``.

        Raises:
            KeyError: unknown ClusterQueue.
        """
        return self.cluster_queues[cluster_queue]

    # -- usage -------------------------------------------------------------------------
    def add_usage(self, cluster_queue: str, usage: Mapping[FlavorResource, int]) -> None:
        """Count ``usage`` against ``cluster_queue`` (and, past its private quota, its cohorts)."""
        node = self.cluster_queues[cluster_queue]
        for fr, val in usage.items():
            _add_usage(node, fr, val)

    def remove_usage(self, cluster_queue: str, usage: Mapping[FlavorResource, int]) -> None:
        """Undo :meth:`add_usage`."""
        node = self.cluster_queues[cluster_queue]
        for fr, val in usage.items():
            _remove_usage(node, fr, val)

    def snapshot_usage(self) -> dict[str, dict[FlavorResource, int]]:
        """Copy of every node's usage (to restore with :meth:`restore_usage`)."""
        return {key: dict(n.usage) for key, n in self._all_nodes()}

    def restore_usage(self, saved: Mapping[str, Mapping[FlavorResource, int]]) -> None:
        for key, n in self._all_nodes():
            n.usage = dict(saved[key])

    def _all_nodes(self) -> list[tuple[str, Node]]:
        return ([("cq/" + k, n) for k, n in self.cluster_queues.items()]
                + [("cohort/" + k, n) for k, n in self.cohorts.items()])

    # -- queries -----------------------------------------------------------------------
    def nominal(self, cluster_queue: str, fr: FlavorResource) -> int:
        quota = self.cluster_queues[cluster_queue].quotas.get(fr)
        return 0 if quota is None else quota.nominal

    def usage(self, cluster_queue: str, fr: FlavorResource) -> int:
        return self.cluster_queues[cluster_queue].usage.get(fr, 0)

    def available(self, cluster_queue: str, fr: FlavorResource) -> int:
        """Unused quota ``cluster_queue`` can admit now in ``fr``, see the module docstring;
        0 after over-admission (quota removed under admitted workloads), as Kueue's
        ``ClusterQueueSnapshot.Available`` clamps the tree's ``available``
        (pkg/cache/scheduler/clusterqueue_snapshot.go, v0.17.0 and main ff69552e)."""
        return max(0, available(self.cluster_queues[cluster_queue], fr))

    def potential_available(self, cluster_queue: str, fr: FlavorResource) -> int:
        """The most ``cluster_queue`` could use of ``fr`` with nothing else admitted."""
        return potential_available(self.cluster_queues[cluster_queue], fr)

    def borrowing(self, cluster_queue: str, fr: FlavorResource) -> bool:
        """True when the queue uses more of ``fr`` than its nominal quota (only possible
        inside a cohort)."""
        node = self.cluster_queues[cluster_queue]
        return node.parent is not None and node.usage.get(fr, 0) > node.subtree_quota.get(fr, 0)

    def borrowing_with(self, cluster_queue: str, fr: FlavorResource, val: int) -> bool:
        """True when adding ``val`` of ``fr`` would take the queue past its nominal quota."""
        node = self.cluster_queues[cluster_queue]
        return node.usage.get(fr, 0) + val > node.subtree_quota.get(fr, 0)

    def borrow_height(self, cluster_queue: str, fr: FlavorResource, val: int) -> int:
        """How many levels up the tree ``val`` more of ``fr`` must reach: 0 = fits in the
        queue's own quota (no borrowing), 1 = borrows from its cohort, ... (Kueue's
        ``FindHeightOfLowestSubtreeThatFits``)."""
        node: Node | None = self.cluster_queues[cluster_queue]
        remaining, height = val, 0
        while node is not None:
            if node.usage.get(fr, 0) + remaining <= node.subtree_quota.get(fr, 0) or node.parent is None:
                return height
            remaining = max(0, remaining - node.local_available(fr))
            node = node.parent
            height += 1
        return height

    def may_reclaim_in_hierarchy(self, cluster_queue: str, fr: FlavorResource, val: int) -> bool:
        """Whether the lowest subtree where ``val`` more of ``fr`` fits without borrowing lies
        below a cohort the queue could reclaim from (the second result of Kueue's
        ``FindHeightOfLowestSubtreeThatFits``, ``pkg/scheduler/preemption/classical/
        hierarchical_preemption.go``): the queue has a parent and fits its own quota, or some
        cohort on its path fits the rest and has a parent itself."""
        node = self.cluster_queues[cluster_queue]
        if node.parent is None or node.usage.get(fr, 0) + val <= node.subtree_quota.get(fr, 0):
            return node.parent is not None
        remaining = val - node.local_available(fr)
        cohort = node.parent
        while cohort is not None:
            if cohort.usage.get(fr, 0) + remaining <= cohort.subtree_quota.get(fr, 0):
                return cohort.parent is not None
            remaining -= cohort.local_available(fr)
            cohort = cohort.parent
        return False

    def fits(self, cluster_queue: str, usage: Mapping[FlavorResource, int]) -> bool:
        """True when every ``(flavor, resource)`` of ``usage`` is <= :meth:`available`."""
        return all(val <= self.available(cluster_queue, fr) for fr, val in usage.items())


def _accumulate(cohort: Node) -> None:
    cohort.subtree_quota = {fr: q.nominal for fr, q in cohort.quotas.items()}
    for child in cohort.children:
        if child.is_cluster_queue:
            child.subtree_quota = {fr: q.nominal for fr, q in child.quotas.items()}
        else:
            _accumulate(child)
        for fr, q in child.subtree_quota.items():
            cohort.subtree_quota[fr] = cohort.subtree_quota.get(fr, 0) + q - child.local_quota(fr)


def _add_usage(node: Node, fr: FlavorResource, val: int) -> None:
    local_available = node.local_available(fr)
    node.usage[fr] = node.usage.get(fr, 0) + val
    if node.parent is not None and val > local_available:
        _add_usage(node.parent, fr, val - local_available)


def _remove_usage(node: Node, fr: FlavorResource, val: int) -> None:
    stored_in_parent = node.usage.get(fr, 0) - node.local_quota(fr)
    node.usage[fr] = node.usage.get(fr, 0) - val
    if stored_in_parent <= 0 or node.parent is None:
        return
    _remove_usage(node.parent, fr, min(val, stored_in_parent))


def available(node: Node, fr: FlavorResource) -> int:
    """Kueue's ``available`` (module docstring)."""
    if node.parent is None:
        return node.subtree_quota.get(fr, 0) - node.usage.get(fr, 0)
    parent_available = available(node.parent, fr)
    quota = node.quotas.get(fr)
    if quota is not None and quota.borrowing_limit is not None:
        local = node.local_quota(fr)
        stored_in_parent = node.subtree_quota.get(fr, 0) - local
        used_in_parent = max(0, node.usage.get(fr, 0) - local)
        parent_available = min(stored_in_parent - used_in_parent + quota.borrowing_limit, parent_available)
    return node.local_available(fr) + parent_available


def potential_available(node: Node, fr: FlavorResource) -> int:
    """Kueue's ``potentialAvailable`` (module docstring)."""
    if node.parent is None:
        return node.subtree_quota.get(fr, 0)
    value = node.local_quota(fr) + potential_available(node.parent, fr)
    quota = node.quotas.get(fr)
    if quota is not None and quota.borrowing_limit is not None:
        value = min(node.subtree_quota.get(fr, 0) + quota.borrowing_limit, value)
    return value


@dataclass(frozen=True, slots=True)
class Share:
    """A dominant resource share (module docstring).

    Attributes:
        ratio: max over resources of borrowed * 1000 / lendable, before the weight.
        weight: the node's fairSharing weight.
        resource: the dominant resource ("" when not borrowing).
    """

    ratio: float
    weight: float
    resource: str = ""

    @property
    def value(self) -> float:
        """The weighted share: ``ratio / weight``; 0 when not borrowing; +inf for weight 0."""
        if self.ratio == 0:
            return 0.0
        return math.inf if self.weight == 0 else self.ratio / self.weight

    def __lt__(self, other: "Share") -> bool:  # Kueue's CompareDRS
        return _drs_key(self) < _drs_key(other)


def _drs_key(share: Share) -> tuple:
    zero_weight_borrows = share.weight == 0 and share.ratio != 0
    return (1, share.ratio) if zero_weight_borrows else (0, share.value)


def dominant_resource_share(node: Node, extra: Mapping[FlavorResource, int] | None = None) -> Share:
    """The DRS of ``node`` with ``extra`` usage added (module docstring; Kueue's
    ``dominantResourceShare``). Ties between resources go to the alphabetically first."""
    if node.parent is None:
        return Share(0.0, node.weight)
    extra = extra or {}
    borrowed: dict[str, int] = {}
    for fr, quota in node.subtree_quota.items():
        amount = extra.get(fr, 0) + node.usage.get(fr, 0) - quota
        if amount > 0:
            borrowed[fr[1]] = borrowed.get(fr[1], 0) + amount
    if not borrowed:
        return Share(0.0, node.weight)
    lendable = _lendable(node.parent)
    best_ratio, best_res = 0.0, ""
    for res in sorted(borrowed):
        lend = lendable.get(res, 0)
        if lend > 0:
            ratio = borrowed[res] * 1000.0 / lend
            if ratio > best_ratio:
                best_ratio, best_res = ratio, res
    return Share(best_ratio, node.weight, best_res)


def _lendable(node: Node) -> dict[str, int]:
    out: dict[str, int] = {}
    for fr in node.root().subtree_quota:
        out[fr[1]] = out.get(fr[1], 0) + potential_available(node, fr)
    return out


__all__ = ["Node", "QuotaTree", "Share", "Usage", "available", "dominant_resource_share", "potential_available"]
