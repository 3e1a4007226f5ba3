"""Contention models for sharing one GPU: time-slicing and MPS, as teaching models.

Small, explicit models used by chapters 2, 4 and 5 of the course. They are not
measurements: their parameters are inputs, and the defaults are round illustrative
values chosen to make the mechanism visible (stated below), not vendor figures.

Time-slicing, all tenants busy (chapter 4)
    The device plugin's ``sharing.timeSlicing.replicas`` only advertises one GPU N times;
    the GPU's own scheduler then gives each CUDA context the whole GPU in turn for a time
    slice (round-robin). With ``n >= 2`` busy tenants, slice length ``s`` ms and a
    context-switch cost ``c`` ms per slice, one round lasts ``n (s + c)`` ms and each
    tenant computes for ``s`` of it, so its throughput relative to running alone is
    ``s / (n (s + c))``. A tenant alone (``n == 1``) is never switched out: throughput 1,
    which is why the formula applies for ``n >= 2`` only. A request that needs ``w`` ms of
    GPU time alone needs ``k = ceil(w / s)`` slices; it first waits for its turn, ``U``
    uniform on ``[0, (n-1)(s+c)]`` (it arrives at a random point of the round, and the
    ``n - 1`` other tenants' slices, each followed by a switch, come first), then runs
    ``k`` slices with ``n - 1`` other tenants' slices between each pair:
    ``latency = U + (k-1) n (s+c) + (w - (k-1) s)``.
    Its ``q``-quantile is the same with ``U`` replaced by ``q (n-1)(s+c)``.
    Domain: the saturated case, every tenant always has work queued (training, batch).
    It says what each tenant gets, not whether a tenant keeps up with work arriving at a
    rate; tenants that offer a rate of work are the bursty model below, which checks
    offered load against capacity. A tenant is a CUDA context (a process), not a pod.
    NVIDIA documents that time-sliced replicas get no memory or fault isolation and that
    the GPU interleaves contexts in time (NVIDIA GPU Operator documentation, "Time-Slicing
    GPUs in Kubernetes"); the slice length is a per-GPU driver setting,
    ``nvidia-smi compute-policy --set-timeslice`` with four levels (0 DEFAULT, 1 SHORT,
    2 MEDIUM, 3 LONG, per the tool's own help text), not a number of milliseconds.

Time-slicing, bursty tenants (chapter 4, the benefit)
    Notebooks and other interactive tenants are busy only part of the time. Tenant here
    means one CUDA context (one process): the GPU shares time per context, so a pod that
    runs four CUDA processes counts as four tenants (NVIDIA k8s-device-plugin v0.20.0,
    README.md, note under ``failRequestsGreaterThanOne``: CUDA gives "an equal share of
    time to all of the GPU processes across all of the clients").

    *Offered load and capacity.* Each of the ``n`` tenants offers work at a fixed rate:
    its duty cycle ``p0`` is the share of time it would be busy on a GPU of its own, so it
    asks for ``p0`` GPU-seconds of work per second and the GPU is offered ``n p0`` GPUs of
    work. While two or more tenants are busy the GPU does useful work only ``e = s/(s+c)``
    of the time (the rest is switching); a tenant alone is never switched out. The
    capacity is therefore ``e`` for ``n >= 2`` (1 for ``n == 1``) and the utilization
    ``rho = n p0 / e``. *Stability condition:* ``rho < 1``. A work-conserving server whose
    offered load is at or above its capacity has no steady state: the backlog grows
    without bound and so does every latency quantile (Kleinrock, Queueing Systems,
    Vol. 1: Theory, 1975, ch. 2: a single-server queue is stable only for ``rho < 1``). At
    ``rho >= 1`` every tenant eventually has a backlog, all ``n`` are busy and the GPU
    serves ``e < n p0``, so the argument applies. This holds for work that arrives at
    random times, as the model assumes; tenants whose bursts interleave perfectly never
    overlap and would get the whole GPU up to ``n p0 < 1`` (the condition is then
    conservative). Lab 01's engine, with its time-slicing plugin and random arrivals,
    shows the same boundary (tests/book/test_models_properties.py). Such inputs are
    flagged, not answered: :func:`bursty_time_slicing` returns ``stable=False`` with
    infinite p50 and p99, :func:`bursty_latency_quantile` returns ``math.inf`` and
    :func:`max_tenants_within` never counts an overloaded GPU. ``n == 1`` is a dedicated GPU: no sharing, capacity 1,
    and ``p0 <= 1`` is always accepted (the tenant's own queue is not modelled).

    *Busy share under sharing (fixed point).* On a shared GPU a busy period lasts longer
    than alone, so a tenant is busy with probability ``p >= p0``. The model assumes the
    tenants' busy states are independent and that a busy period is long compared with one
    request (quasi-static: the set of busy tenants does not change while a request runs).
    Seen by a busy tenant, the number ``K`` of *other* busy tenants is then
    Binomial(``n - 1``, ``p``), and its expected throughput while busy is
    ``E[share(K + 1)]`` with ``share(1) = 1`` and ``share(j) = e / j``. Work is
    conserved in a stable system (what is delivered equals what is offered, Kleinrock
    1975, ch. 2), so ``p`` solves ``g(p) = p E[share(K + 1)] = p0``. Summing the
    binomial, ``g(p) = (1-e) p (1-p)^(n-1) + e (1 - (1-p)^n) / n``, which rises on
    ``[0, p*]``, ``p* = 1 / (1 + (n-1)(1-e))``, with ``g(p*) >= g(1) = e / n > p0`` when
    stable; the root in ``[p0, p*]`` is unique and found by bisection. The GPU's useful
    time, ``(1-e) P(one busy) + e P(at least one busy) = n g(p) = n p0``, is the offered
    load: GPU-seconds are conserved. With ``c = 0`` and ``p0 -> 0`` this reduces to the
    naive model that takes ``p = p0``.

    *Latency.* A request's latency is the mixture over ``K`` of the all-busy latencies
    above, and the quantiles are found by bisection on that mixture. The independence
    (mean-field) assumption leaves out a tenant's own requests queueing behind each other
    and the correlation of busy periods, so the model is optimistic close to ``rho = 1``,
    where a real queue's delays grow like ``1 / (1 - rho)``; read p99s at a utilization
    near 1 as lower bounds. Round-robin with slices short against the requests behaves
    like processor sharing (Kleinrock, "Time-shared Systems: A Theoretical Treatment",
    J. ACM 14(2), 1967), which is also how Lab 01's time-slicing plugin re-rates jobs.
    Source of the use case: the course's warm-up guide ("pack 4 bursty notebooks onto
    1 GPU; when one is idle, others get the full GPU during their slice").

MPS (chapter 2)
    Without MPS every process has its own context and the GPU runs kernels of one
    context at a time (time-sliced), so kernels of different processes never overlap.
    With MPS (Volta and later) every client has its own GPU address space and submits
    work directly to the GPU; the MPS server owns the scheduling resources, and kernels
    of different clients run concurrently while their SM demands fit (NVIDIA
    Multi-Process Service documentation). Here each process issues its kernels in order
    on one stream; a kernel asks for a fraction of the SMs (``sm_fraction``) and runs for
    ``duration_ms`` when it has them alone. With ``active_thread_percentage``
    (``CUDA_MPS_ACTIVE_THREAD_PERCENTAGE``) a client never holds more than that share of
    the SMs. Capping stretches only a kernel's compute: of its solo time ``d``, the share
    ``1 - m`` that is compute runs ``fraction / share`` times longer (work conserved; true
    for compute-bound kernels with enough thread blocks), while the share ``m`` spent
    saturating memory bandwidth moves the same bytes at the same bandwidth and keeps its
    length. A capped kernel therefore runs ``d' = d ((1 - m) fraction / share + m)`` alone,
    of which ``m' = d m / d'`` is memory-bound (``m = 0``: it simply runs ``fraction /
    share`` times longer). The timeline is work-conserving:
    whenever SMs free up, ready kernels start in order of readiness (the time their
    client issued them; ties by client index), each that fits its whole (capped) share,
    so a narrow kernel is never held back by a wide one that does not fit yet. MPS itself
    promises no fairness between clients; readiness order is the model's choice.
    Interference: co-running kernels share the memory bandwidth and L2 cache without
    limits. ``memory_bound`` (``m``, 0..1) is the share of a kernel's solo run time in
    which it saturates the GPU's memory bandwidth; while ``k`` kernels run at once, those
    parts are served one at a time, so each kernel progresses at rate
    ``1 / ((1 - m') + m' k)`` of its (capped) solo speed, with ``m'`` its own memory-bound
    share after the cap (``m = 0``: no interference). Example: three clients each run one
    8 ms kernel that wants every SM, capped at a third, ``m = 0.3``: alone each would take
    ``8 (0.7 x 3 + 0.3) = 19.2`` ms with ``m' = 2.4 / 19.2 = 0.125``; together
    ``19.2 (0.875 + 0.125 x 3) = 24.0`` ms, the time the three need one after another
    (24 ms of kernels, of which 7.2 ms saturate the bandwidth). With
    ``1/f`` clients of width ``f`` running together, the MPS speed-up over separate
    contexts therefore saturates near ``1 / (f (1 - m) + m)`` instead of ``1 / f``
    (ignoring the context-switch time that MPS also saves).

Default illustrative parameters: slice 2 ms, context switch 0.1 ms per slice, no
memory-bound share.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from lab02_device_plugin.errors import InputError

#: Illustrative default time slice (ms); an assumption, not a measured value.
DEFAULT_SLICE_MS = 2.0
#: Illustrative default context-switch cost per slice (ms); an assumption.
DEFAULT_SWITCH_MS = 0.1


def _positive(name: str, value: float, allow_zero: bool = False) -> None:
    ok = isinstance(value, (int, float)) and math.isfinite(value) and (value >= 0 if allow_zero else value > 0)
    if not ok:
        raise InputError(f"{name}: expected a finite number {'>= 0' if allow_zero else '> 0'}, got {value!r}")


#: Most tenants (or clients) a model accepts: far above any real replicas setting, and small
#: enough that the binomial weights and timelines stay cheap.
MAX_TENANTS = 1024


def _tenants(n: int, name: str = "tenants") -> None:
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_TENANTS:
        raise InputError(f"{name}: expected a whole number in 1..{MAX_TENANTS}, got {n!r}")


def _check_request(tenants: int, work_ms: float, q: float, slice_ms: float, switch_ms: float) -> None:
    _tenants(tenants)
    _positive("work_ms", work_ms)
    _positive("slice_ms", slice_ms)
    _positive("switch_ms", switch_ms, allow_zero=True)
    if not (isinstance(q, (int, float)) and 0.0 <= q <= 1.0):
        raise InputError(f"q: expected a quantile between 0 and 1, got {q!r}")


@dataclass(frozen=True)
class TimeSliceResult:
    """Per-tenant performance of ``tenants`` busy tenants time-sliced on one GPU.

    Attributes:
        tenants: number of busy tenants (contexts) sharing the GPU.
        slice_ms, switch_ms, work_ms: the inputs (ms).
        throughput_share: each tenant's throughput as a fraction of running alone.
        gpu_efficiency: fraction of GPU time spent computing (not switching), ``s/(s+c)``
            for ``n > 1`` and 1 for ``n == 1``.
        mean_latency_ms: expected latency of one request of ``work_ms``.
        p50_latency_ms, p99_latency_ms: its median and 99th percentile.
        solo_latency_ms: the latency alone (= ``work_ms``).
    """

    tenants: int
    slice_ms: float
    switch_ms: float
    work_ms: float
    throughput_share: float
    gpu_efficiency: float
    mean_latency_ms: float
    p50_latency_ms: float
    p99_latency_ms: float
    solo_latency_ms: float


def latency_quantile(tenants: int, work_ms: float, q: float, slice_ms: float = DEFAULT_SLICE_MS,
                     switch_ms: float = DEFAULT_SWITCH_MS) -> float:
    """The ``q``-quantile (0..1) of a request's latency in ms when ``tenants`` busy tenants
    are time-sliced.

    ``q (n-1)(s+c) + (k-1) n (s+c) + (w - (k-1) s)`` with ``k = ceil(w/s)``; alone
    (``n == 1``) the latency is ``w``. See the module docstring for the derivation.

    Raises:
        InputError: a parameter out of range (named in the message).
    """
    _check_request(tenants, work_ms, q, slice_ms, switch_ms)
    if tenants == 1:
        return float(work_ms)
    round_ms = tenants * (slice_ms + switch_ms)
    k = math.ceil(work_ms / slice_ms - 1e-12)
    wait = q * (tenants - 1) * (slice_ms + switch_ms)
    return wait + (k - 1) * round_ms + (work_ms - (k - 1) * slice_ms)


def time_slicing(tenants: int, work_ms: float, slice_ms: float = DEFAULT_SLICE_MS,
                 switch_ms: float = DEFAULT_SWITCH_MS) -> TimeSliceResult:
    """Throughput and latency of one tenant when ``tenants`` busy tenants share a GPU.

    Args:
        tenants: busy tenants (>= 1) time-sliced on the GPU.
        work_ms: GPU time one request needs when running alone (ms, > 0).
        slice_ms: time slice (ms, > 0).
        switch_ms: context-switch cost per slice (ms, >= 0).

    Raises:
        InputError: a parameter out of range (named in the message).
    """
    p50 = latency_quantile(tenants, work_ms, 0.5, slice_ms, switch_ms)
    p99 = latency_quantile(tenants, work_ms, 0.99, slice_ms, switch_ms)
    if tenants == 1:
        share, efficiency = 1.0, 1.0
    else:
        share = slice_ms / (tenants * (slice_ms + switch_ms))
        efficiency = slice_ms / (slice_ms + switch_ms)
    return TimeSliceResult(
        tenants=tenants, slice_ms=float(slice_ms), switch_ms=float(switch_ms), work_ms=float(work_ms),
        throughput_share=share, gpu_efficiency=efficiency,
        mean_latency_ms=p50,  # the wait is uniform, so mean = median
        p50_latency_ms=p50, p99_latency_ms=p99, solo_latency_ms=float(work_ms),
    )


def _duty(p: float) -> None:
    if not (isinstance(p, (int, float)) and not isinstance(p, bool) and math.isfinite(p)
            and 0.0 < p <= 1.0):
        raise InputError(f"duty_cycle: expected the share of time a tenant is busy on a GPU of "
                         f"its own, in (0, 1], got {p!r}")


def _share(busy: int, slice_ms: float, switch_ms: float) -> float:
    """Throughput of one of ``busy`` busy tenants relative to running alone."""
    return 1.0 if busy == 1 else slice_ms / (busy * (slice_ms + switch_ms))


def _binomial(n: int, p: float) -> list[float]:
    """P(K = k) for k = 0..n, K ~ Binomial(n, p)."""
    return [math.comb(n, k) * p ** k * (1.0 - p) ** (n - k) for k in range(n + 1)]


def _mean_share(tenants: int, busy: float, slice_ms: float, switch_ms: float) -> float:
    """``E[share(K + 1)]``, K ~ Binomial(tenants - 1, busy): a busy tenant's throughput."""
    return sum(w * _share(k + 1, slice_ms, switch_ms)
               for k, w in enumerate(_binomial(tenants - 1, busy)))


@dataclass(frozen=True)
class Load:
    """Offered load against capacity for ``tenants`` tenants of duty cycle ``duty_cycle``.

    Attributes:
        offered_gpus: work offered, in GPUs, ``n p0``.
        capacity_gpus: useful GPU time while shared, ``s/(s+c)`` for ``n >= 2``, 1 alone.
        utilization: ``offered_gpus / capacity_gpus``.
        stable: ``utilization < 1`` (or ``n == 1``): a steady state exists.
        busy_share: ``p``, the probability a tenant is busy under sharing (the fixed point
            ``p E[share] = p0``), ``p0 <= p < 1``; 1 when not stable.
    """

    offered_gpus: float
    capacity_gpus: float
    utilization: float
    stable: bool
    busy_share: float


def offered_load(tenants: int, duty_cycle: float, slice_ms: float = DEFAULT_SLICE_MS,
                 switch_ms: float = DEFAULT_SWITCH_MS) -> Load:
    """Offered load, capacity, stability and busy share under sharing (module docstring,
    "Offered load and capacity" and "Busy share under sharing").

    >>> L = offered_load(3, 0.5)
    >>> L.offered_gpus, round(L.capacity_gpus, 4), L.stable
    (1.5, 0.9524, False)
    >>> round(offered_load(4, 0.1).busy_share, 3)
    0.121

    Raises:
        InputError: a parameter out of range (named in the message).
    """
    _tenants(tenants)
    _duty(duty_cycle)
    _positive("slice_ms", slice_ms)
    _positive("switch_ms", switch_ms, allow_zero=True)
    if tenants == 1:
        return Load(float(duty_cycle), 1.0, float(duty_cycle), True, float(duty_cycle))
    eff = slice_ms / (slice_ms + switch_ms)
    offered = tenants * duty_cycle
    if offered >= eff * (1.0 - 1e-12):
        return Load(offered, eff, offered / eff, False, 1.0)
    top = 1.0 / (1.0 + (tenants - 1) * (1.0 - eff))   # g rises on [0, top]
    lo, hi = float(duty_cycle), top
    for _ in range(200):
        mid = (lo + hi) / 2
        if mid * _mean_share(tenants, mid, slice_ms, switch_ms) < duty_cycle:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-13:
            break
    return Load(offered, eff, offered / eff, True, hi)


def max_stable_tenants(duty_cycle: float, slice_ms: float = DEFAULT_SLICE_MS,
                       switch_ms: float = DEFAULT_SWITCH_MS) -> int:
    """The most tenants of duty cycle ``duty_cycle`` one GPU can serve with a steady state:
    the largest ``n`` with ``n p0 < s/(s+c)``, at least 1 (a dedicated GPU), at most
    :data:`MAX_TENANTS`. Four 10 % tenants fit; at 50 % only one does
    (``2 x 0.5 = 1 GPU`` of work exceeds the ``2/2.1`` a shared GPU delivers).

    >>> max_stable_tenants(0.5), max_stable_tenants(0.1)
    (1, 9)

    Raises:
        InputError: a parameter out of range.
    """
    _duty(duty_cycle)
    _positive("slice_ms", slice_ms)
    _positive("switch_ms", switch_ms, allow_zero=True)
    n = 1
    while n < MAX_TENANTS and offered_load(n + 1, duty_cycle, slice_ms, switch_ms).stable:
        n += 1
    return n


@dataclass(frozen=True)
class BurstyTimeSliceResult:
    """One bursty tenant's view of ``tenants`` tenants time-sliced on one GPU.

    When the GPU is overloaded (``stable`` False: offered load at or above capacity) there
    is no steady state: ``p50_latency_ms`` and ``p99_latency_ms`` are ``math.inf``, every
    tenant is busy (``busy_share`` 1, ``p_alone`` 0) and gets ``s / (n (s+c))``.

    Attributes:
        tenants: tenants (CUDA contexts) sharing the GPU (replicas handed out).
        duty_cycle: ``p0``, share of time a tenant would be busy on a GPU of its own (0..1].
        slice_ms, switch_ms, work_ms: the inputs (ms).
        offered_gpus, capacity_gpus, utilization, stable: see :class:`Load`.
        busy_share: ``p``, probability a tenant is busy on the shared GPU (>= ``p0``).
        p_alone: probability that a busy tenant has the GPU to itself, ``(1-p)^(n-1)``.
        mean_busy_tenants: expected busy tenants seen by a busy tenant, ``1 + (n-1) p``.
        mean_throughput_share: expected throughput of a busy tenant relative to a
            dedicated GPU, ``E[share(K + 1)]`` (``= p0 / p`` when stable).
        gpu_busy_fraction: share of time at least one tenant is busy, ``1 - (1-p)^n``.
        p50_latency_ms, p99_latency_ms: quantiles of one request's latency (ms), or
            ``math.inf`` when not stable.
        solo_latency_ms: the latency on a dedicated GPU (= ``work_ms``).
    """

    tenants: int
    duty_cycle: float
    slice_ms: float
    switch_ms: float
    work_ms: float
    offered_gpus: float
    capacity_gpus: float
    utilization: float
    stable: bool
    busy_share: float
    p_alone: float
    mean_busy_tenants: float
    mean_throughput_share: float
    gpu_busy_fraction: float
    p50_latency_ms: float
    p99_latency_ms: float
    solo_latency_ms: float


def _mixture_quantile(tenants: int, busy: float, work_ms: float, q: float, slice_ms: float,
                      switch_ms: float) -> float:
    """The ``q``-quantile of the latency mixture over K ~ Binomial(tenants - 1, busy)."""
    weights = _binomial(tenants - 1, busy)
    k_slices = math.ceil(work_ms / slice_ms - 1e-12)
    parts = []  # (weight, lowest latency, width of the uniform wait) per number of busy tenants
    for others, weight in enumerate(weights):
        n_busy = others + 1
        if weight == 0.0:
            continue
        if n_busy == 1:
            parts.append((weight, float(work_ms), 0.0))
            continue
        low = (k_slices - 1) * n_busy * (slice_ms + switch_ms) + (work_ms - (k_slices - 1) * slice_ms)
        parts.append((weight, low, others * (slice_ms + switch_ms)))

    def cdf(x: float) -> float:
        total = 0.0
        for weight, low, width in parts:
            if x >= low + width:
                total += weight
            elif x > low:
                total += weight * (x - low) / width
        return total

    lo = min(low for _, low, _ in parts)
    hi = max(low + width for _, low, width in parts)
    if cdf(lo) >= q:
        return lo
    for _ in range(200):
        mid = (lo + hi) / 2
        if cdf(mid) >= q - 1e-15:
            hi = mid
        else:
            lo = mid
        if hi - lo < 1e-9:
            break
    return hi


def bursty_latency_quantile(tenants: int, duty_cycle: float, work_ms: float, q: float,
                            slice_ms: float = DEFAULT_SLICE_MS,
                            switch_ms: float = DEFAULT_SWITCH_MS) -> float:
    """The ``q``-quantile of a request's latency (ms) when tenants are busy part-time, or
    ``math.inf`` when the GPU is overloaded (``n p0 >= s/(s+c)``: no steady state).

    The latency is a mixture over ``K`` ~ Binomial(``tenants - 1``, ``p``) other busy
    tenants of the all-busy latency with ``K + 1`` tenants, where ``p`` is the busy share
    under sharing (:func:`offered_load`; module docstring). Its CDF is non-decreasing, so
    the quantile is found by bisection to 1e-9 ms.

    Raises:
        InputError: a parameter out of range (named in the message).
    """
    _check_request(tenants, work_ms, q, slice_ms, switch_ms)
    load = offered_load(tenants, duty_cycle, slice_ms, switch_ms)
    if not load.stable:
        return math.inf
    return _mixture_quantile(tenants, load.busy_share, work_ms, q, slice_ms, switch_ms)


def bursty_time_slicing(tenants: int, duty_cycle: float, work_ms: float,
                        slice_ms: float = DEFAULT_SLICE_MS,
                        switch_ms: float = DEFAULT_SWITCH_MS) -> BurstyTimeSliceResult:
    """What one bursty tenant gets when ``tenants`` tenants, each offering ``duty_cycle``
    of a GPU's time, share one GPU by time-slicing (model, domain and sources in the
    module docstring). An overloaded GPU is flagged (``stable`` False, infinite
    latencies), never answered with a finite p99.

    Args:
        tenants: tenants (CUDA contexts) on the GPU, >= 1.
        duty_cycle: share of time a tenant is busy on a GPU of its own, in (0, 1].
        work_ms: GPU time one request needs alone (ms, > 0).
        slice_ms: time slice (ms, > 0).
        switch_ms: context-switch cost per slice (ms, >= 0).

    Raises:
        InputError: a parameter out of range (named in the message).
    """
    _check_request(tenants, work_ms, 0.5, slice_ms, switch_ms)
    load = offered_load(tenants, duty_cycle, slice_ms, switch_ms)
    p = load.busy_share
    if load.stable:
        p50 = _mixture_quantile(tenants, p, work_ms, 0.5, slice_ms, switch_ms)
        p99 = _mixture_quantile(tenants, p, work_ms, 0.99, slice_ms, switch_ms)
    else:
        p50 = p99 = math.inf
    alone = (1.0 - p) ** (tenants - 1)
    return BurstyTimeSliceResult(
        tenants=tenants, duty_cycle=float(duty_cycle), slice_ms=float(slice_ms),
        switch_ms=float(switch_ms), work_ms=float(work_ms), offered_gpus=load.offered_gpus,
        capacity_gpus=load.capacity_gpus, utilization=load.utilization, stable=load.stable,
        busy_share=p, p_alone=alone, mean_busy_tenants=1.0 + (tenants - 1) * p,
        mean_throughput_share=_mean_share(tenants, p, slice_ms, switch_ms),
        gpu_busy_fraction=1.0 - (1.0 - p) ** tenants,
        p50_latency_ms=p50, p99_latency_ms=p99, solo_latency_ms=float(work_ms))


def max_tenants_within(p99_budget_ms: float, duty_cycle: float, work_ms: float,
                       slice_ms: float = DEFAULT_SLICE_MS, switch_ms: float = DEFAULT_SWITCH_MS,
                       limit: int = 64) -> int:
    """The most tenants (replicas) one GPU can take with a steady state and the p99 of a
    ``work_ms`` request within ``p99_budget_ms``, by :func:`bursty_latency_quantile`
    (an overloaded GPU's p99 is infinite, so it never counts; at most
    :func:`max_stable_tenants`); 0 when even one tenant alone misses the budget
    (``work_ms > p99_budget_ms``). Searches 1..``limit``.

    Raises:
        InputError: a parameter out of range.
    """
    _positive("p99_budget_ms", p99_budget_ms)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_TENANTS:
        raise InputError(f"limit: expected a whole number of tenants in 1..{MAX_TENANTS}, got {limit!r}")
    best = 0
    for n in range(1, limit + 1):
        if bursty_latency_quantile(n, duty_cycle, work_ms, 0.99, slice_ms, switch_ms) \
                <= p99_budget_ms + 1e-9:
            best = n
        else:
            break
    return best


@dataclass(frozen=True)
class Kernel:
    """One kernel a process launches.

    Attributes:
        duration_ms: run time with its full SM share, alone on the GPU (ms, > 0).
        sm_fraction: share of the GPU's SMs it occupies, in (0, 1].
    """

    duration_ms: float
    sm_fraction: float


@dataclass(frozen=True)
class KernelRun:
    """A kernel placed on the timeline.

    Attributes:
        process: index of the process (client) that launched it.
        kernel: index of the kernel within that process.
        start_ms, end_ms: when it ran.
        sm_fraction: SM share it held (after the MPS cap).
    """

    process: int
    kernel: int
    start_ms: float
    end_ms: float
    sm_fraction: float


@dataclass(frozen=True)
class Timeline:
    """Result of :func:`kernel_timeline`.

    Attributes:
        mps: whether MPS was on.
        runs: every kernel run, ordered by start time then process.
        makespan_ms: end of the last kernel.
        sm_busy_fraction: time-averaged share of SMs held by kernels over the makespan
            (0..1); with interference a held SM may be stalled on memory.
    """

    mps: bool
    runs: tuple[KernelRun, ...]
    makespan_ms: float
    sm_busy_fraction: float


def _check_processes(processes: Sequence[Sequence[Kernel]]) -> None:
    if not processes:
        raise InputError("processes: expected at least one process with kernels, got none")
    if len(processes) > 1000:
        raise InputError(f"processes: expected at most 1000 processes, got {len(processes)}")
    total = 0
    for p, kernels in enumerate(processes):
        if not kernels:
            raise InputError(f"processes[{p}]: expected at least one kernel, got none")
        total += len(kernels)
        for k, kern in enumerate(kernels):
            _positive(f"processes[{p}][{k}].duration_ms", kern.duration_ms)
            if not (isinstance(kern.sm_fraction, (int, float)) and 0 < kern.sm_fraction <= 1):
                raise InputError(f"processes[{p}][{k}].sm_fraction: expected a share in (0, 1], "
                                 f"got {kern.sm_fraction!r}")
    if total > 100_000:
        raise InputError(f"processes: expected at most 100,000 kernels in all, got {total:,}")


def _serial_timeline(processes: Sequence[Sequence[Kernel]], switch_ms: float) -> list[KernelRun]:
    """Separate contexts: round-robin over processes at kernel boundaries, nothing overlaps."""
    runs: list[KernelRun] = []
    nxt = [0] * len(processes)
    t = 0.0
    last: int | None = None
    while any(nxt[p] < len(ks) for p, ks in enumerate(processes)):
        for p, kernels in enumerate(processes):
            if nxt[p] >= len(kernels):
                continue
            if last is not None and last != p:
                t += switch_ms
            kern = kernels[nxt[p]]
            runs.append(KernelRun(p, nxt[p], t, t + kern.duration_ms, kern.sm_fraction))
            t += kern.duration_ms
            nxt[p] += 1
            last = p
    return runs


def capped_kernel(kernel: Kernel, share: float, memory_bound: float) -> tuple[float, float]:
    """Solo run time (ms) of ``kernel`` held to ``share`` of the SMs, and the memory-bound
    share of that time (module docstring): ``d' = d ((1 - m) f / share + m)`` and
    ``m' = d m / d'``, where ``f`` is the kernel's own SM fraction (``share <= f``).

    >>> [round(x, 3) for x in capped_kernel(Kernel(8.0, 1.0), 1 / 3, 0.3)]
    [19.2, 0.125]
    """
    stretch = kernel.sm_fraction / share
    solo = kernel.duration_ms * ((1.0 - memory_bound) * stretch + memory_bound)
    return solo, kernel.duration_ms * memory_bound / solo


def _mps_timeline(processes: Sequence[Sequence[Kernel]], cap: float,
                  memory_bound: float) -> list[KernelRun]:
    """MPS: work-conserving, ready kernels start in order of readiness (module docstring)."""
    eps = 1e-9
    n = len(processes)
    nxt = [0] * n
    ready = [0.0] * n                       # when each process issued its next kernel
    # process -> [kernel index, start, share, remaining solo ms, memory-bound share m']
    running: dict[int, list] = {}
    runs: list[KernelRun] = []
    t = 0.0
    while True:
        used = sum(r[2] for r in running.values())
        waiting = sorted((ready[p], p) for p in range(n)
                         if p not in running and nxt[p] < len(processes[p]) and ready[p] <= t + eps)
        for _, p in waiting:
            kern = processes[p][nxt[p]]
            share = min(kern.sm_fraction, cap)
            if used + share > 1.0 + eps:
                continue
            solo, m_capped = capped_kernel(kern, share, memory_bound)
            running[p] = [nxt[p], t, share, solo, m_capped]
            used += share
        if not running:
            break  # nothing left: every kernel ran (any capped kernel fits an empty GPU)
        k = len(running)
        rates = {p: 1.0 / ((1.0 - r[4]) + r[4] * k) for p, r in running.items()}
        dt = min(r[3] / rates[p] for p, r in running.items())
        t_next = t + dt
        for p in sorted(running):
            r = running[p]
            r[3] -= dt * rates[p]
            if r[3] <= eps:
                runs.append(KernelRun(p, r[0], r[1], t_next, r[2]))
                del running[p]
                nxt[p] += 1
                ready[p] = t_next
        t = t_next
    return runs


def kernel_timeline(processes: Sequence[Sequence[Kernel]], mps: bool,
                    active_thread_percentage: float = 100.0,
                    switch_ms: float = DEFAULT_SWITCH_MS,
                    memory_bound: float = 0.0) -> Timeline:
    """Place the kernels of several processes on one GPU's timeline, with or without MPS.

    Without MPS, contexts take turns at kernel boundaries, round-robin over processes that
    still have kernels, with ``switch_ms`` between two kernels of different processes;
    nothing overlaps, so nothing interferes. With MPS, each process's kernels run in order;
    whenever SMs free up, ready kernels start in order of readiness (ties by process
    index), each one that fits its SM share (capped at ``active_thread_percentage``/100;
    a capped kernel's compute part runs ``fraction / capped`` times longer, its
    memory-bound part does not: :func:`capped_kernel`); co-running kernels slow each other
    by the ``memory_bound`` rule of the module docstring.

    Args:
        processes: per process, its kernels in launch order (at most 1000 processes and
            100,000 kernels).
        mps: True for MPS, False for separate contexts.
        active_thread_percentage: MPS per-client SM cap in percent (0, 100].
        switch_ms: context-switch cost between processes without MPS (ms, >= 0).
        memory_bound: share of a kernel's solo time spent saturating memory bandwidth,
            in [0, 1] (0 = no interference between co-running kernels).

    Raises:
        InputError: empty or oversized input, or a value out of range (named in the message).
    """
    _check_processes(processes)
    _positive("switch_ms", switch_ms, allow_zero=True)
    if not (isinstance(active_thread_percentage, (int, float)) and 0 < active_thread_percentage <= 100):
        raise InputError("active_thread_percentage: expected a percentage in (0, 100], "
                         f"got {active_thread_percentage!r}")
    if not (isinstance(memory_bound, (int, float)) and not isinstance(memory_bound, bool)
            and 0.0 <= memory_bound <= 1.0):
        raise InputError(f"memory_bound: expected a share of run time in [0, 1], got {memory_bound!r}")
    if mps:
        runs = _mps_timeline(processes, active_thread_percentage / 100.0, float(memory_bound))
    else:
        runs = _serial_timeline(processes, switch_ms)
    runs.sort(key=lambda r: (r.start_ms, r.process))
    makespan = max(r.end_ms for r in runs)
    busy = sum((r.end_ms - r.start_ms) * r.sm_fraction for r in runs)
    return Timeline(mps=mps, runs=tuple(runs), makespan_ms=makespan,
                    sm_busy_fraction=busy / makespan if makespan > 0 else 0.0)


def inference_processes(clients: int, kernels_per_client: int = 4, duration_ms: float = 2.0,
                        sm_fraction: float = 0.25) -> list[list[Kernel]]:
    """A uniform workload: ``clients`` processes each launching the same small kernels.

    Small inference kernels that fill a quarter of the SMs are the case MPS was made for.

    Raises:
        InputError: a parameter out of range.
    """
    _tenants(clients, "clients")
    if isinstance(kernels_per_client, bool) or not isinstance(kernels_per_client, int) or kernels_per_client < 1:
        raise InputError(f"kernels_per_client: expected a whole number >= 1, got {kernels_per_client!r}")
    return [[Kernel(duration_ms, sm_fraction) for _ in range(kernels_per_client)] for _ in range(clients)]


@dataclass(frozen=True)
class MpsGain:
    """Result of :func:`mps_gain`: one uniform workload with and without MPS.

    Attributes:
        clients, sm_fraction, memory_bound: the inputs.
        without_ms, with_ms: makespans without and with MPS (ms).
        speedup: ``without_ms / with_ms``.
        bound: ``1 / (f (1 - m) + m)``, where the speed-up saturates (module docstring).
        sm_busy_with: SM share held under MPS, time-averaged (0..1).
    """

    clients: int
    sm_fraction: float
    memory_bound: float
    without_ms: float
    with_ms: float
    speedup: float
    bound: float
    sm_busy_with: float


def mps_gain(clients: int, sm_fraction: float = 0.25, memory_bound: float = 0.0,
             kernels_per_client: int = 4, duration_ms: float = 2.0,
             switch_ms: float = DEFAULT_SWITCH_MS) -> MpsGain:
    """How much faster ``clients`` copies of a uniform workload finish with MPS.

    Runs :func:`kernel_timeline` on :func:`inference_processes` with and without MPS.

    Raises:
        InputError: a parameter out of range.
    """
    procs = inference_processes(clients, kernels_per_client, duration_ms, sm_fraction)
    off = kernel_timeline(procs, mps=False, switch_ms=switch_ms)
    on = kernel_timeline(procs, mps=True, memory_bound=memory_bound)
    return MpsGain(clients=clients, sm_fraction=float(sm_fraction), memory_bound=float(memory_bound),
                   without_ms=off.makespan_ms, with_ms=on.makespan_ms,
                   speedup=off.makespan_ms / on.makespan_ms,
                   bound=1.0 / (sm_fraction * (1.0 - memory_bound) + memory_bound),
                   sm_busy_with=on.sm_busy_fraction)
