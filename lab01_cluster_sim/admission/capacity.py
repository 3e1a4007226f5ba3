"""An alternative admission policy: queues with guaranteed and deserved shares (Volcano).

Where Kueue speaks of nominal quota, borrowing and lending, Volcano's queues speak of
``guarantee`` (reserved for the queue, never lent), ``deserved`` (its share, lent when idle
and reclaimed when needed) and ``capability`` (a hard ceiling). YuniKorn's queue
``guaranteed`` and ``max`` resources follow the same shape: a queue may trigger preemption
only while its usage is within its guaranteed resources, and victims come from queues above
theirs (yunikorn-core ``QueuePreemptionSnapshot.IsWithinGuaranteedResource`` and
``findEligiblePreemptionVictims``, as described in YUNIKORN-1951); model a YuniKorn queue as
``CapacityQueue(deserved=guaranteed, capability=max)``. Two Volcano scheduler plugins set the
rules:

**capacity** (Volcano design "Capacity scheduling", ``docs/design/capacity-scheduling.md``,
and ``pkg/scheduler/plugins/capacity/capacity.go``):

- allocatable: a queue may take a task only while ``allocated + request <= capability``
  in every resource (and the cluster has the room);
- preemptive: a queue may reclaim from others only while ``allocated + request <=
  deserved`` ("when Queue.Allocated >= Queue.Deserved, reclaim should not happen");
- reclaimable: a running task of another queue is a victim only if that queue is above its
  deserved (``not allocated <= deserved``) and removing the task keeps it at or above its
  guarantee (``guarantee <= allocated - task``); victims are taken in the order given,
  each lowering the queue's allocation for the next test;
- queue order: the lowest share first, ``share = max over resources of allocated / deserved``.

**proportion** (``pkg/scheduler/plugins/proportion/proportion.go``): no fixed deserved;
each queue's deserved comes from its weight by water-filling: repeat, giving every queue not
yet satisfied ``remaining x weight / (sum of their weights)``, cap it at the queue's request
(and capability), and hand what a capped queue does not need to the others, until nothing
remains or every queue is satisfied. This module computes it exactly (fractions); the
early kube-batch version of the loop subtracted cumulative amounts, which the later Volcano
code corrected.

Pure bookkeeping over resource vectors (dicts resource -> amount); no nodes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from lab01_cluster_sim.errors import InputError

Vector = Mapping[str, float]


def _le(a: Vector, b: Vector, missing_is_infinite: bool = False) -> bool:
    """``a <= b`` in every resource of ``a`` (a resource absent from ``b`` is 0, or
    unlimited with ``missing_is_infinite``, as Volcano's ``LessEqual(_, Infinity)``)."""
    for res, val in a.items():
        if res not in b:
            if missing_is_infinite or val <= 0:
                continue
            return False
        if val > b[res]:
            return False
    return True


def _add(a: Vector, b: Vector, sign: int = 1) -> dict[str, float]:
    out = dict(a)
    for res, val in b.items():
        out[res] = out.get(res, 0) + sign * val
    return out


@dataclass(frozen=True, slots=True)
class CapacityQueue:
    """A Volcano queue as the capacity plugin reads it.

    Attributes:
        name: queue name.
        deserved: its share, lent when idle and reclaimed when needed.
        guarantee: reserved; never reclaimed below it.
        capability: hard ceiling per resource (None = no ceiling).
        reclaimable: may others reclaim from it (``spec.reclaimable``, default true).
    """

    name: str
    deserved: Mapping[str, float]
    guarantee: Mapping[str, float] = field(default_factory=dict)
    capability: Mapping[str, float] | None = None
    reclaimable: bool = True

    def __post_init__(self) -> None:
        if not _le(self.guarantee, self.deserved, missing_is_infinite=True):
            raise InputError(f"queue {self.name!r}: guarantee must be <= deserved in every resource")
        if self.capability is not None and not _le(self.deserved, self.capability, missing_is_infinite=True):
            raise InputError(f"queue {self.name!r}: deserved must be <= capability in every resource")


class CapacityPolicy:
    """Volcano's capacity plugin as bookkeeping (module docstring).

    Args:
        queues: the queues.
        total: the cluster's resources (the room "the cluster has").

    Raises:
        InputError: duplicate queue names.
    """

    def __init__(self, queues: Sequence[CapacityQueue], total: Vector) -> None:
        self.queues: dict[str, CapacityQueue] = {}
        for q in queues:
            if q.name in self.queues:
                raise InputError(f"queue {q.name!r}: defined twice")
            self.queues[q.name] = q
        self.total = dict(total)
        self.allocated: dict[str, dict[str, float]] = {q.name: {} for q in queues}

    def used(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for alloc in self.allocated.values():
            out = _add(out, alloc)
        return out

    def allocatable(self, queue: str, request: Vector) -> str | None:
        """None if ``queue`` may take ``request`` now, else why not."""
        q = self.queues[queue]
        after = _add(self.allocated[queue], request)
        if q.capability is not None and not _le(after, q.capability, missing_is_infinite=True):
            return f"queue {queue} would exceed its capability"
        if not _le(_add(self.used(), request), self.total):
            return "not enough idle resources in the cluster"
        return None

    def preemptive(self, queue: str, request: Vector) -> bool:
        """May ``queue`` reclaim from other queues to run ``request``? Only while it stays
        within its deserved share."""
        return _le(_add(self.allocated[queue], request), self.queues[queue].deserved, missing_is_infinite=True)

    def reclaimable(self, reclaimer: str, candidates: Sequence[tuple[str, str, Vector]]) -> list[str]:
        """The victims among ``candidates`` = ``(task name, its queue, its request)``, in
        order (module docstring); tasks of ``reclaimer``'s own queue never qualify."""
        allocations: dict[str, dict[str, float]] = {}
        victims = []
        for name, queue, req in candidates:
            if queue == reclaimer or not self.queues[queue].reclaimable:
                continue
            q = self.queues[queue]
            alloc = allocations.setdefault(queue, dict(self.allocated[queue]))
            except_task = _add(alloc, req, -1)
            if _le(alloc, q.deserved, missing_is_infinite=True) or not _le(q.guarantee, except_task):
                continue
            allocations[queue] = except_task
            victims.append(name)
        return victims

    def share(self, queue: str) -> float:
        """``max over resources of allocated / deserved`` (0 with no deserved)."""
        q = self.queues[queue]
        best = 0.0
        for res, val in self.allocated[queue].items():
            d = q.deserved.get(res, 0)
            if d > 0:
                best = max(best, val / d)
            elif val > 0:
                best = max(best, 1.0)
        return best

    def queue_order(self) -> list[str]:
        """Queues by share, lowest first (name breaks ties)."""
        return sorted(self.queues, key=lambda n: (self.share(n), n))

    def allocate(self, queue: str, request: Vector) -> None:
        self.allocated[queue] = _add(self.allocated[queue], request)

    def release(self, queue: str, request: Vector) -> None:
        self.allocated[queue] = _add(self.allocated[queue], request, -1)


def proportion_deserved(total: Vector, queues: Sequence[tuple[str, int, Vector, Vector | None]]
                        ) -> dict[str, dict[str, Fraction]]:
    """Deserved shares from weights by water-filling (Volcano proportion plugin, module docstring).

    Args:
        total: cluster resources.
        queues: ``(name, weight >= 1, request, capability or None)`` per queue.

    Returns:
        name -> resource -> deserved amount (exact fractions).

    Raises:
        InputError: a weight below 1 or a duplicate name.
    """
    names = [q[0] for q in queues]
    if len(set(names)) != len(names):
        raise InputError(f"proportion: duplicate queue names in {names}")
    resources = sorted(set(total) | {r for q in queues for r in q[2]})
    deserved = {name: {r: Fraction(0) for r in resources} for name in names}
    caps = {}
    for name, weight, request, capability in queues:
        if weight < 1:
            raise InputError(f"queue {name!r}: weight must be >= 1, got {weight}")
        cap = {r: Fraction(request.get(r, 0)) for r in resources}
        if capability is not None:
            cap = {r: min(cap[r], Fraction(capability[r])) if r in capability else cap[r] for r in resources}
        caps[name] = cap
    weights = {q[0]: q[1] for q in queues}
    remaining = {r: Fraction(total.get(r, 0)) for r in resources}
    met: set[str] = set()
    for _ in range(len(names) + 1):   # each round satisfies at least one queue or exhausts `remaining`
        active = [n for n in names if n not in met]
        if not active or all(v <= 0 for v in remaining.values()):
            break
        total_weight = sum(weights[n] for n in active)
        given = {r: Fraction(0) for r in resources}
        for n in active:
            for r in resources:
                share = remaining[r] * weights[n] / total_weight
                new = min(deserved[n][r] + share, caps[n][r])
                given[r] += new - deserved[n][r]
                deserved[n][r] = new
            if all(deserved[n][r] >= caps[n][r] for r in resources):
                met.add(n)
        remaining = {r: remaining[r] - given[r] for r in resources}
    return deserved


__all__ = ["CapacityPolicy", "CapacityQueue", "proportion_deserved"]
