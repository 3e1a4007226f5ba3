"""Flavor assignment: for each pod set and resource, which ResourceFlavor, and how it fits.

Kueue's rule (Cluster Queue page, "Flavors and borrowing semantics" and "FlavorFungibility";
``pkg/scheduler/flavorassigner/flavorassigner.go`` at commit ff69552e, ``findFlavorForPodSets``):
for each pod set, for each requested resource not yet assigned, take its resource group and
try the group's flavors **in order**. A flavor is skipped (``checkFlavorForPodSets``) when it
has a ``NoSchedule``/``NoExecute`` taint that neither the pods' nor the flavor's own
tolerations tolerate ("untolerated taint {key value effect <nil>} in flavor F"), or when the
pods' nodeSelector and required node affinity, restricted to the label keys **of that flavor**
(``flavorSelector``), do not match its ``nodeLabels`` ("flavor F doesn't match node
affinity"). Otherwise every requested resource of the group is checked against the quota of
that flavor, counting what earlier pod sets of the same workload already took
(``fitsResourceQuota``):

- ``earlier + request > potential available`` -> **NoFit**: "insufficient quota for R in
  flavor F, previously considered podsets requests (A) + current podset request (B) > maximum
  capacity (C)" (it could never fit).
- ``request <= available`` -> **Fit** (borrowing if it takes the queue past its nominal quota).
- otherwise "insufficient unused quota for R in flavor F, N more needed", and **Preempt**
  when preemption could help (the request fits the nominal quota, or a cohort on the queue's
  path that has a parent could hold it, or the queue may preempt while borrowing:
  ``borrowWithinCohort``, or ``reclaimWithinCohort`` under fair sharing) and the preemption
  oracle finds candidates
  (the mode says whether they are in the same queue or reclaimed from the cohort); else NoFit.

The group's mode in a flavor is the worst of its resources, a mode being (preemption mode,
borrowing level). The search stops at the first flavor where ``shouldTryNextFlavor`` says
so: one that fits without borrowing; one that fits by borrowing when ``whenCanBorrow:
MayStopSearch`` (the default); one that needs preemption when ``whenCanPreempt:
MayStopSearch`` (and, if it also borrows, ``whenCanBorrow: MayStopSearch``). Otherwise it goes
on and keeps the best flavor seen (``isPreferred``): a flavor whose preemption found no
candidates ranks below every other usable one; then, with ``preference:
BorrowingOverPreemption`` (or unset), the better preemption mode first and less borrowing
second; with ``PreemptionOverBorrowing``, less borrowing first.

The module never looks at nodes: a flavor is a name with labels and taints.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from lab01_cluster_sim.admission.api import (
    ClusterQueue,
    FlavorResource,
    FungibilityPolicy,
    FungibilityPreference,
    PodSet,
    PreemptionPolicy,
    ResourceFlavor,
    ResourceGroup,
    Workload,
)
from lab01_cluster_sim.corev1 import DO_NOT_SCHEDULE, NodeSelectorTerm, find_untolerated_taint, terms_match
from lab01_cluster_sim.admission.quantity import PODS, format_amount
from lab01_cluster_sim.admission.quota import QuotaTree, Usage


class Mode(enum.IntEnum):
    """How a flavor can be assigned (``FlavorAssignmentMode``), worst to best."""

    NO_FIT = 0
    PREEMPT = 1
    FIT = 2


class Granular(enum.IntEnum):
    """Kueue's finer ``preemptionMode``, worst to best: no fit; preemption would be needed
    but found no candidates; preemption of workloads in the same queue; reclaim from the
    cohort only; fit."""

    NO_FIT = 0
    NO_CANDIDATES = 1
    PREEMPT = 2
    RECLAIM = 3
    FIT = 4

    @property
    def mode(self) -> Mode:
        if self is Granular.NO_FIT:
            return Mode.NO_FIT
        return Mode.FIT if self is Granular.FIT else Mode.PREEMPT


Oracle = Callable[[FlavorResource, int], tuple[Granular, int]]
"""``(flavor-resource, quantity) -> (preemption possibility, borrow height after it)``:
the preemption simulation for one resource (``PreemptionOracle.SimulatePreemption``)."""


@dataclass
class PodSetAssignment:
    """The flavors of one pod set.

    Attributes:
        name: pod set name. count: pods admitted (below the full count under partial admission).
        flavors: resource -> flavor name. modes: resource -> :class:`Mode`.
        requests: resource -> total amount for ``count`` pods.
        reasons: why it is not a plain Fit (Kueue's messages).
        borrow: borrowing height (0 = within nominal quota).
        never: True when it failed for a reason no admission or preemption can change.
    """

    name: str
    count: int
    flavors: dict[str, str] = field(default_factory=dict)
    modes: dict[str, Mode] = field(default_factory=dict)
    requests: dict[str, int] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    borrow: int = 0
    never: bool = False

    @property
    def mode(self) -> Mode:
        if not self.reasons:
            return Mode.FIT
        if not self.flavors or len(self.flavors) < len(self.requests):
            return Mode.NO_FIT
        return min(self.modes.values(), default=Mode.NO_FIT)

    def message(self) -> str:
        return ", ".join(sorted(self.reasons))


@dataclass
class Assignment:
    """A workload's flavor assignment.

    Attributes:
        pod_sets: one per pod set (fewer when the search stopped at a pod set that failed).
        usage: total requests per ``(flavor, resource)``.
        borrow: the largest borrowing height of its resources (0 = no borrowing).
    """

    pod_sets: list[PodSetAssignment]
    usage: Usage
    borrow: int = 0
    total_pod_sets: int = 0

    @property
    def mode(self) -> Mode:
        """The worst mode over the pod sets (NoFit if some pod set was not reached)."""
        if not self.pod_sets or len(self.pod_sets) < self.total_pod_sets:
            return Mode.NO_FIT
        return min(ps.mode for ps in self.pod_sets)

    @property
    def never(self) -> bool:
        return any(ps.never for ps in self.pod_sets)

    def frs_needing_preemption(self) -> set[FlavorResource]:
        return {(ps.flavors[r], r) for ps in self.pod_sets for r, m in ps.modes.items() if m is Mode.PREEMPT}

    def message(self) -> str:
        """Kueue's message: "couldn't assign flavors to pod set main: <reasons>"; pod sets
        joined with "; "; empty when everything fits."""
        parts = [f"couldn't assign flavors to pod set {ps.name}: {ps.message()}" for ps in self.pod_sets if ps.reasons]
        return "; ".join(parts)

    def counts(self) -> dict[str, int]:
        return {ps.name: ps.count for ps in self.pod_sets}


def flavor_mismatch(pod_set: PodSet, flavor: ResourceFlavor) -> str | None:
    """Why ``flavor`` cannot host ``pod_set``, in Kueue's words, or None
    (``checkFlavorForPodSets`` and ``flavorSelector``, flavorassigner.go).

    The first untolerated ``NoSchedule``/``NoExecute`` taint of the flavor (tolerated by the
    pods' or the flavor's tolerations; ``FindMatchingUntoleratedTaint``) gives "untolerated
    taint {key value effect <nil>} in flavor F" (Go's ``%s`` of a ``corev1.Taint``). Then
    only the flavor's own label keys count: nodeSelector entries on other keys are dropped,
    and so are affinity expressions on other keys; a term left without expressions drops the
    whole required affinity (the terms are ORed, so it would match any flavor). What remains
    must match the flavor's ``nodeLabels``, else "flavor F doesn't match node affinity".
    """
    taint = find_untolerated_taint(flavor.node_taints, pod_set.tolerations + flavor.tolerations, DO_NOT_SCHEDULE)
    if taint is not None:
        return f"untolerated taint {{{taint.key} {taint.value} {taint.effect} <nil>}} in flavor {flavor.name}"
    keys = flavor.node_labels
    for key, value in pod_set.node_selector.items():
        if key in keys and keys[key] != value:
            return f"flavor {flavor.name} doesn't match node affinity"
    terms = []
    for term in pod_set.affinity:   # Kueue keeps matchExpressions only (matchFields are dropped)
        kept = tuple(e for e in term.expressions if e.key in keys)
        if not kept:
            terms = []
            break
        terms.append(NodeSelectorTerm(kept))
    if terms and not terms_match(terms, flavor.node_labels, ""):
        return f"flavor {flavor.name} doesn't match node affinity"
    return None


Rep = tuple[Granular, int]
"""Kueue's ``granularMode``: (preemption mode, borrowing level; 0 = no borrowing)."""


def _is_preferred(a: Rep, b: Rep, cq: ClusterQueue) -> bool:
    """Kueue's ``isPreferred(a, b, flavorFungibility)``: True when mode ``a`` is better than
    ``b`` (module docstring)."""
    if a[0] is Granular.NO_FIT:
        return False
    if b[0] is Granular.NO_FIT:
        return True
    a_none, b_none = a[0] is Granular.NO_CANDIDATES, b[0] is Granular.NO_CANDIDATES
    if a_none != b_none:
        return not a_none
    if cq.flavor_fungibility.preference is FungibilityPreference.PREEMPTION_OVER_BORROWING:
        if a[1] != b[1]:
            return a[1] < b[1]
        return a[0] > b[0]
    if a[0] != b[0]:
        return a[0] > b[0]
    return a[1] < b[1]


def _should_try_next_flavor(rep: Rep, cq: ClusterQueue) -> bool:
    """Kueue's ``shouldTryNextFlavor``."""
    mode, borrow = rep
    fung = cq.flavor_fungibility
    if mode in (Granular.NO_FIT, Granular.NO_CANDIDATES):
        return True
    if mode in (Granular.PREEMPT, Granular.RECLAIM) and fung.when_can_preempt is FungibilityPolicy.TRY_NEXT_FLAVOR:
        return True
    return borrow > 0 and fung.when_can_borrow is FungibilityPolicy.TRY_NEXT_FLAVOR


class FlavorAssigner:
    """Assigns flavors to a workload in one ClusterQueue (module docstring).

    Args:
        workload: the workload.
        cq: its ClusterQueue.
        tree: the quota tree, with current usage (read only).
        flavors: ResourceFlavor name -> flavor.
        oracle: the preemption simulation; None = preemption never possible.
        fair_sharing: whether fair sharing is on (it lets a queue with reclaimWithinCohort
            preempt while borrowing).
    """

    def __init__(self, workload: Workload, cq: ClusterQueue, tree: QuotaTree, flavors: Mapping[str, ResourceFlavor],
                 oracle: Oracle | None = None, fair_sharing: bool = False) -> None:
        self.wl = workload
        self.cq = cq
        self.tree = tree
        self.flavors = flavors
        self.oracle = oracle
        self.fair_sharing = fair_sharing

    def assign(self, counts: Mapping[str, int] | None = None) -> Assignment:
        """Assign flavors with ``counts`` pods per pod set (default: every pod)."""
        assignment = Assignment([], {}, 0, len(self.wl.pod_sets))
        covers_pods = self.cq.group_of(PODS) is not None
        for ps in self.wl.pod_sets:
            count = ps.count if counts is None else counts[ps.name]
            requests = {r: v for r, v in sorted(ps.total(count).items()) if v > 0}
            if covers_pods:
                requests[PODS] = count
            psa = PodSetAssignment(ps.name, count, requests=requests)
            for res in requests:
                if res in psa.flavors:
                    continue  # assigned with its resource group
                group = self.cq.group_of(res)
                if group is None:
                    psa.reasons.append(f"resource {res} unavailable in ClusterQueue")
                    psa.never = True
                    break
                group_req = {r: v for r, v in requests.items() if r in group.covered_resources}
                chosen, reasons, never = self._find_flavor(ps, group, group_req, assignment.usage)
                psa.reasons.extend(reasons)
                if not chosen:
                    psa.never = never
                    psa.flavors.clear()
                    psa.modes.clear()
                    break
                for r, (flavor, mode, borrow) in chosen.items():
                    psa.flavors[r] = flavor
                    psa.modes[r] = mode
                    psa.borrow = max(psa.borrow, borrow)
            assignment.pod_sets.append(psa)
            if not psa.flavors and requests:
                return assignment
            for r, flavor in psa.flavors.items():
                fr = (flavor, r)
                assignment.usage[fr] = assignment.usage.get(fr, 0) + requests[r]
            assignment.borrow = max(assignment.borrow, psa.borrow)
        return assignment

    def _find_flavor(self, ps: PodSet, group: ResourceGroup, requests: dict[str, int], assigned: Usage
                     ) -> tuple[dict[str, tuple[str, Mode, int]], list[str], bool]:
        reasons: list[str] = []
        best: dict[str, tuple[str, Mode, int]] = {}
        best_mode: Rep = (Granular.NO_FIT, 1 << 62)
        static_only = True  # every flavor failed for a reason that cannot change
        for fq in group.flavors:
            rf = self.flavors.get(fq.name)
            if rf is None:
                reasons.append(f"flavor {fq.name} not found")
                continue
            mismatch = flavor_mismatch(ps, rf)
            if mismatch is not None:
                reasons.append(mismatch)
                continue
            chosen: dict[str, tuple[str, Mode, int]] = {}
            rep: Rep = (Granular.FIT, 0)
            flavor_never = False
            for res, val in requests.items():
                fr = (fq.name, res)
                mode, borrow, reason, never = self._fits_quota(fr, assigned.get(fr, 0), val)
                if reason:
                    reasons.append(reason)
                cand = (mode, borrow)
                if _is_preferred(rep, cand, self.cq):
                    rep = cand
                if rep[0] is Granular.NO_FIT:
                    flavor_never = never
                    break
                chosen[res] = (fq.name, mode.mode, borrow)
            if not flavor_never:
                static_only = False
            if not _should_try_next_flavor(rep, self.cq):
                best, best_mode = chosen, rep
                break
            if _is_preferred(rep, best_mode, self.cq):
                best, best_mode = chosen, rep
        if best_mode[0] is Granular.FIT:
            return best, [], False
        if best_mode[0] is Granular.NO_FIT:
            return {}, reasons, static_only
        return best, reasons, False

    def _fits_quota(self, fr: FlavorResource, assumed: int, request: int) -> tuple[Granular, int, str, bool]:
        """``(mode, borrow height, reason, never)`` for ``request`` of ``fr`` on top of the
        ``assumed`` usage of earlier pod sets (``fitsResourceQuota``)."""
        name = self.cq.name
        flavor, res = fr
        val = assumed + request
        max_capacity = self.tree.potential_available(name, fr)
        if val > max_capacity:
            return (Granular.NO_FIT, 0, f"insufficient quota for {res} in flavor {flavor}, previously considered "
                    f"podsets requests ({format_amount(res, assumed)}) + current podset request "
                    f"({format_amount(res, request)}) > maximum capacity ({format_amount(res, max_capacity)})", True)
        available = self.tree.available(name, fr)
        borrow = self.tree.borrow_height(name, fr, val)
        if val <= available:
            return Granular.FIT, borrow, "", False
        reason = (f"insufficient unused quota for {res} in flavor {flavor}, "
                  f"{format_amount(res, val - available)} more needed")
        if self.oracle is not None and (val <= self.tree.nominal(name, fr)
                                        or self.tree.may_reclaim_in_hierarchy(name, fr, val)
                                        or self._can_preempt_while_borrowing()):
            mode, borrow_after = self.oracle(fr, val)
            return mode, borrow_after, reason, False
        return Granular.NO_FIT, borrow, reason, False

    def _can_preempt_while_borrowing(self) -> bool:
        p = self.cq.preemption
        return (p.borrow_within_cohort is not PreemptionPolicy.NEVER
                or (self.fair_sharing and p.reclaim_within_cohort is not PreemptionPolicy.NEVER))


def reduced_counts(workload: Workload, step: int, total_delta: int) -> dict[str, int]:
    """Pod counts at step ``step`` of ``total_delta`` of the partial-admission search:
    each pod set gives up ``floor(delta * step / total_delta)`` of its ``count - minCount``
    pods (``PodSetReducer``, ``pkg/scheduler/flavorassigner/podset_reducer.go``)."""
    out = {}
    for ps in workload.pod_sets:
        delta = ps.count - (ps.min_count if ps.min_count is not None else ps.count)
        out[ps.name] = ps.count - (delta * step // total_delta)
    return out


def search_partial(workload: Workload, fits: Callable[[dict[str, int]], bool]) -> dict[str, int] | None:
    """The largest pod counts (between ``count`` and ``minCount``) for which ``fits`` holds,
    by binary search over the reduction step, as Kueue's ``PodSetReducer.Search`` (it assumes
    that fewer pods never fit worse). None when even the minimum does not fit, or when the
    workload allows no reduction."""
    total = sum(ps.count - (ps.min_count if ps.min_count is not None else ps.count) for ps in workload.pod_sets)
    if total == 0:
        return None
    lo, hi = 0, total + 1  # smallest step in [0, total] that fits; total+1 = none
    found: dict[str, int] | None = None
    while lo < hi:
        mid = (lo + hi) // 2
        counts = reduced_counts(workload, mid, total)
        if fits(counts):
            found, hi = counts, mid
        else:
            lo = mid + 1
    return found if lo <= total else None


__all__ = ["Assignment", "FlavorAssigner", "Granular", "Mode", "Oracle", "PodSetAssignment", "Rep", "flavor_mismatch",
           "reduced_counts", "search_partial"]
