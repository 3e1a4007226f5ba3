"""Dominant Resource Fairness (DRF).

Source: A. Ghodsi, M. Zaharia, B. Hindman, A. Konwinski, S. Shenker, I. Stoica,
"Dominant Resource Fairness: Fair Allocation of Multiple Resource Types", NSDI 2011.

A tenant's *dominant share* is the largest, over resource types, of (what the tenant
holds / cluster capacity). DRF repeatedly gives the next task to the tenant with the
lowest dominant share (the paper's Algorithm 1, progressive filling). The paper's
worked example (sec. 4): 9 CPUs and 18 GB; A's tasks need <1 CPU, 4 GB>, B's
<3 CPUs, 1 GB>; DRF gives A three tasks and B two, and both dominant shares are 2/3.

Resources are vectors in a fixed order, e.g. ``(gpus, cpu_milli, memory_mib)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lab01_cluster_sim.errors import InputError


def dominant_share(usage: Sequence[float], capacity: Sequence[float]) -> float:
    """max_r usage[r] / capacity[r] over resources with positive capacity.

    Raises:
        InputError: vectors of different lengths, or a negative capacity.
    """
    if len(usage) != len(capacity):
        raise InputError(f"dominant_share: usage has {len(usage)} resources, capacity {len(capacity)}")
    best = 0.0
    for used, cap in zip(usage, capacity):
        if cap < 0:
            raise InputError(f"dominant_share: capacity must be >= 0, got {cap}")
        if cap > 0:
            best = max(best, used / cap)
    return best


def drf_pick_tenant(usage: Mapping[str, Sequence[float]], capacity: Sequence[float],
                    candidates: Sequence[str]) -> str | None:
    """The tenant among ``candidates`` that DRF serves next, or None if there are none.

    DRF serves the tenant with the lowest dominant share (Ghodsi et al. 2011, Algorithm 1);
    ties go to the tenant whose name sorts first, so the choice is deterministic. A tenant
    missing from ``usage`` holds nothing (dominant share 0).

    Learner exercise (Lab 01, fairness): implement the body.
    """
    ### BEGIN SOLUTION
    if not candidates:
        return None
    zero = [0.0] * len(capacity)
    return min(candidates, key=lambda t: (dominant_share(usage.get(t, zero), capacity), t))
    ### END SOLUTION


def drf_allocate(capacity: Sequence[float], demands: Mapping[str, Sequence[float]],
                 max_tasks: Mapping[str, int] | None = None) -> dict[str, int]:
    """Progressive filling with DRF: how many tasks each tenant gets.

    Args:
        capacity: total of each resource.
        demands: tenant -> per-task demand vector (same order as ``capacity``).
        max_tasks: optional tenant -> most tasks it wants (default: unbounded).

    Returns:
        tenant -> number of tasks.

    The paper's Algorithm 1 stops as soon as the lowest-share tenant's next task does
    not fit. Here that tenant is set aside and the others continue, which gives the
    same result on the paper's example and stays work-conserving when demands differ
    in shape (the usual progressive-filling reading).

    Raises:
        InputError: a demand vector of the wrong length, negative entries, or an all-zero
            demand (it would get infinitely many tasks).
    """
    for tenant, d in demands.items():
        if len(d) != len(capacity):
            raise InputError(f"drf_allocate: tenant {tenant!r} demand has {len(d)} resources, "
                             f"expected {len(capacity)}")
        if any(x < 0 for x in d) or not any(x > 0 for x in d):
            raise InputError(f"drf_allocate: tenant {tenant!r} demand must be >= 0 and not all zero, got {list(d)}")
    used_total = [0.0] * len(capacity)
    usage = {t: [0.0] * len(capacity) for t in demands}
    tasks = {t: 0 for t in demands}
    active = sorted(demands)
    while active:
        tenant = drf_pick_tenant(usage, capacity, active)
        assert tenant is not None
        d = demands[tenant]
        limit = None if max_tasks is None else max_tasks.get(tenant)
        fits = all(u + x <= c + 1e-9 for u, x, c in zip(used_total, d, capacity))
        if not fits or (limit is not None and tasks[tenant] >= limit):
            active.remove(tenant)
            continue
        tasks[tenant] += 1
        for r, x in enumerate(d):
            used_total[r] += x
            usage[tenant][r] += x
    return tasks
