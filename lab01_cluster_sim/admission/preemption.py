"""Which admitted workloads to preempt so a pending one fits its quota.

Classic preemption (Preemption page, https://kueue.sigs.k8s.io/docs/concepts/preemption/,
"Classic Preemption"; ``pkg/scheduler/preemption/preemption.go``):

- **Candidates**: workloads of the preemptor's own ClusterQueue allowed by
  ``withinClusterQueue`` (LowerPriority: strictly lower priority; LowerOrNewerEqualPriority:
  also equal priority and newer), and workloads of other ClusterQueues of the cohort that
  are **borrowing** a resource the preemptor needs, allowed by ``reclaimWithinCohort``
  (LowerPriority or Any). Only workloads using a ``(flavor, resource)`` that needs
  preemption count. They are sorted by :func:`~.ordering.candidates_order`.
- **Targets**: if every candidate is in the preemptor's queue, remove them in order until
  the preemptor fits, borrowing allowed. Else, with ``borrowWithinCohort`` on, the same with
  borrowing allowed, for candidates of other queues below the priority threshold. Else, if
  the preemptor's queue is under its nominal quota in every resource needing preemption,
  remove candidates until it fits without borrowing. Last, only own-queue candidates with
  borrowing allowed. A candidate of another queue is skipped once that queue no longer
  borrows. Finally the set is minimised: walking the targets backwards (except the last),
  each is put back if the preemptor still fits.

Fair sharing (same page, "Fair Sharing", and KEP-1714): with the incoming workload's usage
added, repeatedly pick the ClusterQueue whose (almost-least-common-ancestor) dominant
resource share is highest and take its candidates in order, keeping one only if the
strategy allows: ``LessThanOrEqualToFinalShare`` (preemptor's share with the workload
<= target's share without the candidate) then ``LessThanInitialShare`` (preemptor's share <
target's share before). Candidates of the preemptor's own queue are taken without a share
test, and so are those of other queues while the preemptor's queue, with the workload, stays
within its nominal quota of every flavor-resource needing preemption (reason
InCohortReclamation; feature gate FairSharingPreemptWithinNominal, beta and on by default
since Kueue v0.17). Then the same minimisation.

Pure bookkeeping: it reads and temporarily changes the quota tree's usage, always
restoring it.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lab01_cluster_sim.admission.api import ClusterQueue, FlavorResource, PreemptionPolicy, Workload
from lab01_cluster_sim.admission.flavors import Granular
from lab01_cluster_sim.admission.ordering import candidates_order
from lab01_cluster_sim.admission.quota import Node, QuotaTree, Share, Usage, dominant_resource_share


class FairSharingStrategy(str, enum.Enum):
    """``fairSharing.preemptionStrategies`` of the Kueue Configuration."""

    LESS_THAN_OR_EQUAL_TO_FINAL_SHARE = "LessThanOrEqualToFinalShare"
    LESS_THAN_INITIAL_SHARE = "LessThanInitialShare"


DEFAULT_STRATEGIES = (FairSharingStrategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, FairSharingStrategy.LESS_THAN_INITIAL_SHARE)
"""Kueue's default (and the only lists it accepts are this one or either of its items alone)."""

# Kueue's preemption reasons (``kueue.InClusterQueueReason`` ...) and their human form.
IN_CLUSTER_QUEUE = "InClusterQueue"
IN_COHORT_RECLAMATION = "InCohortReclamation"
IN_COHORT_FAIR_SHARING = "InCohortFairSharing"
IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"
HUMAN_REASONS = {
    IN_CLUSTER_QUEUE: "prioritization in the ClusterQueue",
    IN_COHORT_RECLAMATION: "reclamation within the cohort",
    IN_COHORT_FAIR_SHARING: "Fair Sharing within the cohort",
    IN_COHORT_RECLAIM_WHILE_BORROWING: "reclamation within the cohort while borrowing",
}


@dataclass(frozen=True, slots=True)
class Admitted:
    """An admitted workload as the preemptor sees it.

    Attributes:
        workload: the workload. cluster_queue: where it is admitted.
        usage: the quota it holds per ``(flavor, resource)``.
        admitted_at: quota reservation time, s. evicting: preemption already issued.
    """

    workload: Workload
    cluster_queue: str
    usage: Mapping[FlavorResource, int]
    admitted_at: float
    evicting: bool = False

    @property
    def name(self) -> str:
        return self.workload.name


@dataclass(frozen=True, slots=True)
class Target:
    """A workload chosen for preemption, with Kueue's reason (``InClusterQueue``, ...)."""

    admitted: Admitted
    reason: str

    def message(self, preemptor: str) -> str:
        """Kueue's eviction message, with workload names in place of UIDs."""
        return f"Preempted to accommodate a workload ({preemptor}) due to {HUMAN_REASONS[self.reason]}"


@dataclass
class _Ctx:
    wl: Workload
    cq: ClusterQueue
    tree: QuotaTree
    usage: Usage
    frs: set[FlavorResource]


class Preemptor:
    """Finds preemption targets (module docstring).

    Args:
        tree: the quota tree (usage of every admitted workload counted).
        cluster_queues: name -> ClusterQueue spec.
        admitted: name -> :class:`Admitted` for every admitted workload.
        fair_sharing: use fair-sharing preemption.
        strategies: fair-sharing preemption strategies.
    """

    def __init__(self, tree: QuotaTree, cluster_queues: Mapping[str, ClusterQueue], admitted: Mapping[str, Admitted],
                 fair_sharing: bool = False, strategies: Sequence[FairSharingStrategy] = DEFAULT_STRATEGIES) -> None:
        self.tree = tree
        self.cqs = cluster_queues
        self.admitted = admitted
        self.fair_sharing = fair_sharing
        self.strategies = tuple(strategies)

    # -- oracle used by the flavor assigner -------------------------------------------------
    def simulate(self, wl: Workload, cq: ClusterQueue, fr: FlavorResource, quantity: int) -> tuple[Granular, int]:
        """Would preemption make room for ``quantity`` of ``fr``? ``(NO_CANDIDATES |
        PREEMPT | RECLAIM, borrow height after preempting)`` (``SimulatePreemption``)."""
        ctx = _Ctx(wl, cq, self.tree, {fr: quantity}, {fr})
        targets = self._targets(ctx)
        if not targets:
            return Granular.NO_CANDIDATES, self.tree.borrow_height(cq.name, fr, quantity)
        saved = self.tree.snapshot_usage()
        for t in targets:
            self.tree.remove_usage(t.admitted.cluster_queue, t.admitted.usage)
        borrow = self.tree.borrow_height(cq.name, fr, quantity)
        self.tree.restore_usage(saved)
        same = any(t.admitted.cluster_queue == cq.name for t in targets)
        return (Granular.PREEMPT if same else Granular.RECLAIM), borrow

    def targets(self, wl: Workload, cq: ClusterQueue, usage: Usage, frs_needing_preemption: set[FlavorResource]
                ) -> list[Target]:
        """The workloads to preempt so ``wl`` (with ``usage``) fits, or [] when none will do."""
        return self._targets(_Ctx(wl, cq, self.tree, dict(usage), set(frs_needing_preemption)))

    # -- candidates ------------------------------------------------------------------------
    def candidates(self, ctx: _Ctx) -> list[Admitted]:
        """Candidates allowed by the preemptor queue's policies, in :func:`candidates_order`."""
        wl, cq = ctx.wl, ctx.cq
        out: list[Admitted] = []
        by_cq: dict[str, list[Admitted]] = {}
        for adm in self.admitted.values():
            by_cq.setdefault(adm.cluster_queue, []).append(adm)
        policy = cq.preemption.within_cluster_queue
        if policy is not PreemptionPolicy.NEVER:
            same_prio = policy is PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY
            for adm in by_cq.get(cq.name, []):
                p = adm.workload.priority
                if p > wl.priority:
                    continue
                if p == wl.priority and not (same_prio and wl.creation_time < adm.workload.creation_time):
                    continue
                if _uses(adm, ctx.frs):
                    out.append(adm)
        node = self.tree.node(cq.name)
        reclaim = cq.preemption.reclaim_within_cohort
        if node.parent is not None and reclaim is not PreemptionPolicy.NEVER:
            only_lower = reclaim is not PreemptionPolicy.ANY
            for other in node.root().subtree_cluster_queues():
                if other is node or not self._borrowing(other.name, ctx.frs):
                    continue
                for adm in by_cq.get(other.name, []):
                    if only_lower and adm.workload.priority >= wl.priority:
                        continue
                    if _uses(adm, ctx.frs):
                        out.append(adm)
        out.sort(key=lambda a: candidates_order(a.workload, a.cluster_queue, cq.name, a.evicting, a.admitted_at))
        return out

    def _borrowing(self, cq: str, frs: set[FlavorResource]) -> bool:
        return any(self.tree.borrowing(cq, fr) for fr in frs)

    # -- classic ---------------------------------------------------------------------------
    def _targets(self, ctx: _Ctx) -> list[Target]:
        candidates = self.candidates(ctx)
        if not candidates:
            return []
        if self.fair_sharing:
            return self._fair(ctx, candidates)
        same = [c for c in candidates if c.cluster_queue == ctx.cq.name]
        if len(same) == len(candidates):
            return self._minimal(ctx, candidates, True, None)
        bwc = ctx.cq.preemption.borrow_within_cohort
        if bwc is not PreemptionPolicy.NEVER:
            threshold = ctx.wl.priority
            limit = ctx.cq.preemption.max_priority_threshold
            if limit is not None and limit < threshold:
                threshold = limit + 1
            if not self._under_nominal(ctx):
                candidates = [c for c in candidates if c.cluster_queue == ctx.cq.name or c.workload.priority < threshold]
            return self._minimal(ctx, candidates, True, threshold)
        if self._under_nominal(ctx):
            targets = self._minimal(ctx, candidates, False, None)
            if targets:
                return targets
        return self._minimal(ctx, same, True, None)

    def _under_nominal(self, ctx: _Ctx) -> bool:
        return all(self.tree.usage(ctx.cq.name, fr) < self.tree.nominal(ctx.cq.name, fr) for fr in ctx.frs)

    def _fits(self, ctx: _Ctx, allow_borrowing: bool) -> bool:
        for fr, val in ctx.usage.items():
            if not allow_borrowing and self.tree.borrowing_with(ctx.cq.name, fr, val):
                return False
            if val > self.tree.available(ctx.cq.name, fr):
                return False
        return True

    def _minimal(self, ctx: _Ctx, candidates: Sequence[Admitted], allow_borrowing: bool,
                 threshold: int | None) -> list[Target]:
        saved = self.tree.snapshot_usage()
        targets: list[Target] = []
        fits = False
        for cand in candidates:
            reason = IN_CLUSTER_QUEUE
            if cand.cluster_queue != ctx.cq.name:
                if not self._borrowing(cand.cluster_queue, ctx.frs):
                    continue
                reason = IN_COHORT_RECLAMATION
                if threshold is not None:
                    if cand.workload.priority >= threshold:
                        allow_borrowing = False
                    else:
                        reason = IN_COHORT_RECLAIM_WHILE_BORROWING
            self.tree.remove_usage(cand.cluster_queue, cand.usage)
            targets.append(Target(cand, reason))
            if self._fits(ctx, allow_borrowing):
                fits = True
                break
        if not fits:
            self.tree.restore_usage(saved)
            return []
        targets = self._fill_back(ctx, targets, allow_borrowing)
        self.tree.restore_usage(saved)
        return targets

    def _fill_back(self, ctx: _Ctx, targets: list[Target], allow_borrowing: bool) -> list[Target]:
        # Walk backwards from the last-but-one target; put each back if the preemptor still
        # fits (Kueue's fillBackWorkloads, same O(1) removal, so the same final order).
        for i in range(len(targets) - 2, -1, -1):
            t = targets[i]
            self.tree.add_usage(t.admitted.cluster_queue, t.admitted.usage)
            if self._fits(ctx, allow_borrowing):
                targets[i] = targets[-1]
                targets.pop()
            else:
                self.tree.remove_usage(t.admitted.cluster_queue, t.admitted.usage)
        return targets

    # -- fair sharing -----------------------------------------------------------------------
    def _fair(self, ctx: _Ctx, candidates: list[Admitted]) -> list[Target]:
        saved = self.tree.snapshot_usage()
        self.tree.add_usage(ctx.cq.name, ctx.usage)  # shares include the incoming workload
        fits, targets, retry = self._fair_first(ctx, candidates, self.strategies[0])
        if not fits and len(self.strategies) > 1:
            fits, targets = self._fair_second(ctx, retry, targets)
        self.tree.remove_usage(ctx.cq.name, ctx.usage)
        if not fits:
            self.tree.restore_usage(saved)
            return []
        targets = self._fill_back(ctx, targets, True)
        self.tree.restore_usage(saved)
        return targets

    def _fits_fair(self, ctx: _Ctx) -> bool:
        self.tree.remove_usage(ctx.cq.name, ctx.usage)
        ok = self._fits(ctx, True)
        self.tree.add_usage(ctx.cq.name, ctx.usage)
        return ok

    def _fair_first(self, ctx: _Ctx, candidates: list[Admitted], strategy: FairSharingStrategy
                    ) -> tuple[bool, list[Target], list[Admitted]]:
        ordering = _TargetOrdering(self.tree, ctx.cq.name, candidates)
        targets: list[Target] = []
        retry: list[Admitted] = []
        # Feature gate FairSharingPreemptWithinNominal (beta, on by default since Kueue v0.17;
        # runFirstFsStrategy and queueWithinNominalInResourcesNeedingPreemption,
        # pkg/scheduler/preemption/preemption.go): when the preemptor's queue, the incoming
        # workload counted, uses at most its nominal quota of every flavor-resource needing
        # preemption, candidates of other queues are taken without the share test.
        within_nominal = all(self.tree.usage(ctx.cq.name, fr) <= self.tree.nominal(ctx.cq.name, fr) for fr in ctx.frs)
        for target_cq in ordering:
            if target_cq == ctx.cq.name or within_nominal:
                cand = ordering.pop(target_cq)
                self.tree.remove_usage(cand.cluster_queue, cand.usage)
                targets.append(Target(cand, IN_CLUSTER_QUEUE if target_cq == ctx.cq.name else IN_COHORT_RECLAMATION))
                if self._fits_fair(ctx):
                    return True, targets, []
                continue
            preemptor_new, target_old = self._shares(ctx.cq.name, target_cq)
            while ordering.has(target_cq):
                cand = ordering.pop(target_cq)
                target_new = self._share_after_removal(ctx.cq.name, cand)
                ok = (preemptor_new <= target_new
                      if strategy is FairSharingStrategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE
                      else preemptor_new < target_old)
                if ok:
                    self.tree.remove_usage(cand.cluster_queue, cand.usage)
                    targets.append(Target(cand, IN_COHORT_FAIR_SHARING))
                    if self._fits_fair(ctx):
                        return True, targets, []
                    break  # shares changed: pick the queue again
                retry.append(cand)
        return False, targets, retry

    def _fair_second(self, ctx: _Ctx, retry: list[Admitted], targets: list[Target]) -> tuple[bool, list[Target]]:
        ordering = _TargetOrdering(self.tree, ctx.cq.name, retry)
        for target_cq in ordering:
            preemptor_new, target_old = self._shares(ctx.cq.name, target_cq)
            if preemptor_new < target_old:
                cand = ordering.pop(target_cq)
                self.tree.remove_usage(cand.cluster_queue, cand.usage)
                targets.append(Target(cand, IN_COHORT_FAIR_SHARING))
                if self._fits_fair(ctx):
                    return True, targets
            ordering.drop(target_cq)
        return False, targets

    def _shares(self, preemptor_cq: str, target_cq: str) -> tuple[float, float]:
        a, b = almost_lcas(self.tree.node(preemptor_cq), self.tree.node(target_cq))
        return share_int(dominant_resource_share(a)), share_int(dominant_resource_share(b))

    def _share_after_removal(self, preemptor_cq: str, cand: Admitted) -> float:
        self.tree.remove_usage(cand.cluster_queue, cand.usage)
        _, b = almost_lcas(self.tree.node(preemptor_cq), self.tree.node(cand.cluster_queue))
        value = share_int(dominant_resource_share(b))
        self.tree.add_usage(cand.cluster_queue, cand.usage)
        return value


def share_int(share: Share) -> float:
    """A share as the integer Kueue compares in preemption strategies: the weighted share
    rounded up (``roundedWeightedShare``); +inf for a zero weight while borrowing."""
    value = share.value
    return value if math.isinf(value) else float(math.ceil(value))


def almost_lcas(x: Node, y: Node) -> tuple[Node, Node]:
    """``(AlmostLCA(x, y), AlmostLCA(y, x))``: the last nodes before the lowest common
    ancestor on the paths from ``x`` and from ``y`` (KEP-1714). In a flat cohort these are
    the ClusterQueues themselves."""
    px, py = x.path_to_root(), y.path_to_root()
    ancestors_y = {id(n) for n in py}
    lca = next(n for n in px if id(n) in ancestors_y)
    ax = px[[id(n) for n in px].index(id(lca)) - 1] if lca is not x else x
    ay = py[[id(n) for n in py].index(id(lca)) - 1] if lca is not y else y
    return ax, ay


class _TargetOrdering:
    """Kueue's ``TargetClusterQueueOrdering``: from the root, descend into the child with the
    highest dominant resource share among those with candidates (a cohort wins ties), and
    yield that ClusterQueue; nodes that stop borrowing or run out of candidates are pruned."""

    def __init__(self, tree: QuotaTree, preemptor_cq: str, candidates: Sequence[Admitted]) -> None:
        self.tree = tree
        self.preemptor = tree.node(preemptor_cq)
        self.ancestors = {id(n) for n in self.preemptor.path_to_root()[1:]}
        self.queue: dict[str, list[Admitted]] = {}
        for c in candidates:
            self.queue.setdefault(c.cluster_queue, []).append(c)
        self.pruned: set[int] = set()

    def has(self, cq: str) -> bool:
        return bool(self.queue.get(cq))

    def pop(self, cq: str) -> Admitted:
        return self.queue[cq].pop(0)

    def drop(self, cq: str) -> None:
        self.pruned.add(id(self.tree.node(cq)))

    def __iter__(self):
        if self.preemptor.parent is None:
            while self.has(self.preemptor.name):
                yield self.preemptor.name
            return
        root = self.preemptor.root()
        guard = 0
        while id(root) not in self.pruned:
            guard += 1
            if guard > 100_000:  # every step pops, drops or prunes; this cannot be reached
                raise RuntimeError("fair-sharing target ordering did not terminate")
            name = self._next(root)
            if name is not None:
                yield name

    def _next(self, cohort: Node) -> str | None:
        best_cq, best_cq_drs = None, -1.0
        best_co, best_co_drs = None, -1.0
        for child in cohort.children:
            if id(child) in self.pruned:
                continue
            drs = share_int(dominant_resource_share(child))
            if child.is_cluster_queue:
                if (drs == 0 and child is not self.preemptor) or not self.has(child.name):
                    self.pruned.add(id(child))
                elif drs >= best_cq_drs:
                    best_cq, best_cq_drs = child, drs
            else:
                if drs == 0 and id(child) not in self.ancestors:
                    self.pruned.add(id(child))
                elif drs >= best_co_drs:
                    best_co, best_co_drs = child, drs
        if best_cq is None and best_co is None:
            self.pruned.add(id(cohort))
            return None
        if best_co is not None and best_co_drs >= best_cq_drs:
            return self._next(best_co)
        return best_cq.name


def _uses(adm: Admitted, frs: set[FlavorResource]) -> bool:
    return any(fr in frs for fr in adm.usage)


__all__ = ["Admitted", "DEFAULT_STRATEGIES", "FairSharingStrategy", "HUMAN_REASONS", "Preemptor", "Target",
           "almost_lcas", "share_int"]
