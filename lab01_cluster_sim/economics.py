"""The economics of idle GPU capacity: what low utilisation costs a fleet per year.

Chapter 1 of the course uses this calculator. Inputs are the hourly price of one GPU
(dollars per GPU-hour: the on-demand list price of a cloud instance divided by its GPU
count, or an amortised on-premises cost), the fleet size in GPUs and the average
utilisation (the fraction of GPU-hours doing useful work, 0..1). Everything is plain
arithmetic over a year of 8,760 hours (365 days x 24 h); there is no hidden model.

    paid GPU-hours per year   = fleet_gpus x 8760
    idle GPU-hours per year   = paid x (1 - utilisation)
    idle money per year       = idle GPU-hours x price
    cost per useful GPU-hour  = price / utilisation

Raising utilisation by sharing (the subject of the course) lets the same useful work run
on fewer GPUs: ``gpus_needed(u_target) = ceil(fleet_gpus x u / u_target)``. For a fixed
amount of useful work ``W`` (in GPU-equivalents busy all the time) the fleet is
``ceil(W / u)``: the saving of ten points of utilisation is large at low utilisation and
small at high (``W/u`` is convex), so the first points recovered are worth the most.
Example (:func:`utilisation_steps`): 40 GPU-equivalents of work at $4/GPU-hour need 200 GPUs
at 20 %, 134 at 30 % (66 fewer, $2,312,640 a year) but 50 at 80 % and 45 at 90 % (5 fewer,
$175,200 a year); a useful GPU-hour costs price / u: $20.00 at 20 %, $4.44 at 90 %.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .errors import InputError

#: Hours in a (non-leap) year: 365 x 24.
HOURS_PER_YEAR = 8760.0


@dataclass(frozen=True)
class IdleCapacity:
    """Result of :func:`idle_capacity`.

    Attributes:
        price_per_gpu_hour: dollars per GPU-hour (input).
        fleet_gpus: number of GPUs paid for (input).
        utilisation: fraction of paid GPU-hours doing useful work, 0..1 (input).
        paid_gpu_hours: GPU-hours paid per year.
        idle_gpu_hours: GPU-hours per year paid for and not used.
        paid_per_year: dollars per year for the fleet.
        idle_per_year: dollars per year paid for idle GPU-hours.
        cost_per_useful_gpu_hour: dollars per GPU-hour of useful work (inf at utilisation 0).
    """

    price_per_gpu_hour: float
    fleet_gpus: int
    utilisation: float
    paid_gpu_hours: float
    idle_gpu_hours: float
    paid_per_year: float
    idle_per_year: float
    cost_per_useful_gpu_hour: float


def _check(price_per_gpu_hour: float, fleet_gpus: int, utilisation: float) -> None:
    if not (isinstance(price_per_gpu_hour, (int, float)) and math.isfinite(price_per_gpu_hour)
            and price_per_gpu_hour >= 0):
        raise InputError(f"price_per_gpu_hour: expected a finite number >= 0 dollars, got {price_per_gpu_hour!r}")
    if isinstance(fleet_gpus, bool) or not isinstance(fleet_gpus, int) or fleet_gpus < 0:
        raise InputError(f"fleet_gpus: expected a whole number of GPUs >= 0, got {fleet_gpus!r}")
    if not (isinstance(utilisation, (int, float)) and 0.0 <= utilisation <= 1.0):
        raise InputError(f"utilisation: expected a fraction between 0 and 1, got {utilisation!r}")


def idle_capacity(price_per_gpu_hour: float, fleet_gpus: int, utilisation: float) -> IdleCapacity:
    """Money and GPU-hours a fleet leaves idle per year.

    Args:
        price_per_gpu_hour: dollars per GPU-hour, >= 0.
        fleet_gpus: GPUs in the fleet, a whole number >= 0.
        utilisation: average fraction of GPU-hours doing useful work, in [0, 1].

    Raises:
        InputError: an argument is out of range (the message names it).
    """
    _check(price_per_gpu_hour, fleet_gpus, utilisation)
    paid_hours = fleet_gpus * HOURS_PER_YEAR
    idle_hours = paid_hours * (1.0 - utilisation)
    per_useful = price_per_gpu_hour / utilisation if utilisation > 0 else math.inf
    return IdleCapacity(
        price_per_gpu_hour=float(price_per_gpu_hour),
        fleet_gpus=fleet_gpus,
        utilisation=float(utilisation),
        paid_gpu_hours=paid_hours,
        idle_gpu_hours=idle_hours,
        paid_per_year=paid_hours * price_per_gpu_hour,
        idle_per_year=idle_hours * price_per_gpu_hour,
        cost_per_useful_gpu_hour=per_useful,
    )


def gpus_needed(fleet_gpus: int, utilisation: float, target_utilisation: float) -> int:
    """GPUs needed for the same useful work at ``target_utilisation``.

    ``ceil(fleet_gpus x utilisation / target_utilisation)``, never more than ``fleet_gpus``.
    A tiny tolerance (1e-9 GPU) absorbs floating-point noise before the ceiling.

    Raises:
        InputError: an argument is out of range, or ``target_utilisation`` is 0.
    """
    _check(0.0, fleet_gpus, utilisation)
    if not (isinstance(target_utilisation, (int, float)) and 0.0 < target_utilisation <= 1.0):
        raise InputError(f"target_utilisation: expected a fraction in (0, 1], got {target_utilisation!r}")
    useful = fleet_gpus * utilisation
    return min(fleet_gpus, math.ceil(useful / target_utilisation - 1e-9))


def sharing_savings(price_per_gpu_hour: float, fleet_gpus: int, utilisation: float,
                    target_utilisation: float) -> float:
    """Dollars per year saved by running the same work at ``target_utilisation``.

    ``(fleet_gpus - gpus_needed(...)) x 8760 x price``; 0 when the target is not higher
    than today's utilisation.

    Raises:
        InputError: an argument is out of range.
    """
    _check(price_per_gpu_hour, fleet_gpus, utilisation)
    saved = fleet_gpus - gpus_needed(fleet_gpus, utilisation, target_utilisation)
    return saved * HOURS_PER_YEAR * price_per_gpu_hour


def idle_cost_grid(price_per_gpu_hour: float, fleet_gpus: int,
                   utilisations: list[float]) -> list[IdleCapacity]:
    """:func:`idle_capacity` for each utilisation, in the given order (for plots and tables)."""
    return [idle_capacity(price_per_gpu_hour, fleet_gpus, u) for u in utilisations]


def fleet_for_work(work_gpus: float, utilisation: float) -> int:
    """GPUs needed to do ``work_gpus`` GPU-equivalents of useful work at ``utilisation``:
    ``ceil(work_gpus / utilisation)`` (a 1e-9 tolerance absorbs floating-point noise).

    Raises:
        InputError: ``work_gpus`` negative or not finite, or ``utilisation`` not in (0, 1].
    """
    if isinstance(work_gpus, bool) or not isinstance(work_gpus, (int, float)) \
            or not math.isfinite(work_gpus) or not 0 <= work_gpus <= 1e7:
        raise InputError(f"work_gpus: expected GPU-equivalents of work in [0, 10,000,000], got {work_gpus!r}")
    if isinstance(utilisation, bool) or not isinstance(utilisation, (int, float)) \
            or not 0.0 < utilisation <= 1.0:
        raise InputError(f"utilisation: expected a fraction in (0, 1], got {utilisation!r}")
    return math.ceil(work_gpus / utilisation - 1e-9)


@dataclass(frozen=True)
class UtilisationStep:
    """One row of :func:`utilisation_steps`.

    Attributes:
        utilisation: average utilisation of the fleet (0..1].
        gpus: GPUs needed for the work at this utilisation.
        paid_per_year: dollars per year for those GPUs.
        cost_per_useful_gpu_hour: dollars per GPU-hour of useful work, price / utilisation.
        gpus_freed: GPUs fewer than at the previous (lower) utilisation; 0 for the first row.
        saved_per_year: dollars per year those freed GPUs cost.
    """

    utilisation: float
    gpus: int
    paid_per_year: float
    cost_per_useful_gpu_hour: float
    gpus_freed: int
    saved_per_year: float


def utilisation_steps(price_per_gpu_hour: float, work_gpus: float,
                      utilisations: list[float]) -> list[UtilisationStep]:
    """The fleet a fixed amount of work needs at each utilisation, in the given order, and
    what each step up saves (:func:`fleet_for_work`).

    Raises:
        InputError: an argument out of range (named), or an empty or unsorted list.
    """
    _check(price_per_gpu_hour, 0, 0.0)
    if not utilisations or len(utilisations) > 1000:
        raise InputError(f"utilisations: expected 1 to 1000 fractions, got {len(utilisations)}")
    if any(b <= a for a, b in zip(utilisations, utilisations[1:])):
        raise InputError(f"utilisations: expected increasing fractions, got {utilisations}")
    rows: list[UtilisationStep] = []
    for u in utilisations:
        gpus = fleet_for_work(work_gpus, u)
        freed = rows[-1].gpus - gpus if rows else 0
        rows.append(UtilisationStep(float(u), gpus, gpus * HOURS_PER_YEAR * price_per_gpu_hour,
                                    price_per_gpu_hour / u, freed,
                                    freed * HOURS_PER_YEAR * price_per_gpu_hour))
    return rows


@dataclass(frozen=True)
class FractionalRequests:
    """How much of a GPU the pods of a workload ask for (:func:`fractional_requests`).

    Attributes:
        gpu_pods: pods asking for at least part of a GPU.
        cpu_pods: pods asking for no GPU.
        fractional_pods: GPU pods asking for less than one whole GPU.
        median_milli: median request of the fractional pods, in milli-GPU (1000 = a GPU).
        p25_milli, p75_milli: their 25th and 75th percentiles (milli-GPU).
    """

    gpu_pods: int
    cpu_pods: int
    fractional_pods: int
    median_milli: float
    p25_milli: float
    p75_milli: float

    @property
    def fractional_share(self) -> float:
        """Share of the GPU pods that ask for less than a whole GPU (0..1)."""
        return self.fractional_pods / self.gpu_pods if self.gpu_pods else 0.0


def fractional_requests(jobs: list) -> FractionalRequests:
    """Count the pods that ask for a fraction of one GPU.

    Args:
        jobs: :class:`lab01_cluster_sim.model.Job` records (``gpus_per_worker`` GPUs of
            ``gpu_milli`` milli-GPU each), e.g. the Alibaba trace's pod list.

    Raises:
        InputError: an empty list, or one without a single GPU pod.
    """
    if not jobs:
        raise InputError("jobs: expected at least one pod, got none")
    gpu = [j for j in jobs if j.gpus_per_worker >= 1 and j.gpu_milli > 0]
    if not gpu:
        raise InputError(f"jobs: expected at least one pod asking for a GPU among {len(jobs)}")
    frac = sorted(j.gpu_milli for j in gpu if j.gpus_per_worker == 1 and j.gpu_milli < 1000)

    def quantile(q: float) -> float:
        if not frac:
            return 0.0
        pos = q * (len(frac) - 1)  # linear interpolation between order statistics
        lo = math.floor(pos)
        hi = min(lo + 1, len(frac) - 1)
        return frac[lo] + (frac[hi] - frac[lo]) * (pos - lo)

    return FractionalRequests(len(gpu), len(jobs) - len(gpu), len(frac), quantile(0.5),
                              quantile(0.25), quantile(0.75))
