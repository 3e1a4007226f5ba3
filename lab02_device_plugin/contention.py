"""Contention models for sharing one GPU: time-slicing and MPS, as teaching models.

Two small, explicit models used by chapters 2 and 4 of the course. They are not
measurements: their parameters are inputs, and the defaults are round illustrative
values chosen to make the mechanism visible (stated below), not vendor figures.

Time-slicing (chapter 4)
    The device plugin's ``sharing.timeSlicing.replicas`` only advertises one GPU N times;
    the GPU's own scheduler then gives each CUDA context the whole GPU in turn for a time
    slice (round-robin). With ``n`` busy tenants, slice length ``s`` ms and a context-switch
    cost ``c`` ms per slice, one round lasts ``n (s + c)`` ms and each tenant computes for
    ``s`` of it, so its throughput relative to running alone is ``s / (n (s + c))``
    (1 when ``n == 1``: no switching). A request that needs ``w`` ms of GPU time alone needs
    ``k = ceil(w / s)`` slices; it first waits for its turn, ``U`` uniform on
    ``[0, (n-1)(s+c)]`` (it arrives at a random point of the round), then runs ``k`` slices
    with ``n - 1`` other tenants' slices between each pair:
    ``latency = U + (k-1) n (s+c) + (w - (k-1) s)``.
    Its ``q``-quantile is the same with ``U`` replaced by ``q (n-1)(s+c)``.
    NVIDIA documents that time-sliced workloads get no memory or fault isolation and that
    the GPU interleaves contexts in time (NVIDIA GPU Operator documentation, "Time-Slicing
    GPUs in Kubernetes"); the slice length on Ampere and later can be chosen with
    ``nvidia-smi compute-policy --set-timeslice``.

MPS (chapter 2)
    Without MPS every process has its own context and the GPU runs kernels of one
    context at a time (time-sliced), so kernels of different processes never overlap.
    With MPS all clients share one context and their kernels run concurrently while
    their SM demands fit on the GPU (NVIDIA Multi-Process Service documentation). Here
    each process issues its kernels in order on one stream; a kernel asks for a fraction
    of the SMs (``sm_fraction``) and runs for ``duration_ms`` when it has them. With
    ``active_thread_percentage`` (``CUDA_MPS_ACTIVE_THREAD_PERCENTAGE``) a client never
    holds more than that share of the SMs; a capped kernel runs longer in proportion
    (work conserved). Simplification: a kernel starts only when its whole (capped) SM share
    is free, and without MPS contexts alternate at kernel boundaries plus a switch cost.

Default illustrative parameters: slice 2 ms, context switch 0.1 ms per slice.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .errors import InputError

#: Illustrative default time slice (ms); an assumption, not a measured value.
DEFAULT_SLICE_MS = 2.0
#: Illustrative default context-switch cost per slice (ms); an assumption.
DEFAULT_SWITCH_MS = 0.1


def _positive(name: str, value: float, allow_zero: bool = False) -> None:
    ok = isinstance(value, (int, float)) and math.isfinite(value) and (value >= 0 if allow_zero else value > 0)
    if not ok:
        raise InputError(f"{name}: expected a finite number {'>= 0' if allow_zero else '> 0'}, got {value!r}")


def _tenants(n: int) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InputError(f"tenants: expected a whole number >= 1, got {n!r}")


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
    """The ``q``-quantile (0..1) of a request's latency in ms under time-slicing.

    ``q (n-1)(s+c) + (k-1) n (s+c) + (w - (k-1) s)`` with ``k = ceil(w/s)``; alone
    (``n == 1``) the latency is ``w``. See the module docstring for the derivation.

    Raises:
        InputError: a parameter out of range (named in the message).
    """
    _tenants(tenants)
    _positive("work_ms", work_ms)
    _positive("slice_ms", slice_ms)
    _positive("switch_ms", switch_ms, allow_zero=True)
    if not (isinstance(q, (int, float)) and 0.0 <= q <= 1.0):
        raise InputError(f"q: expected a quantile between 0 and 1, got {q!r}")
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


@dataclass(frozen=True)
class Kernel:
    """One kernel a process launches.

    Attributes:
        duration_ms: run time with its full SM share (ms, > 0).
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
        sm_busy_fraction: time-averaged SM occupancy over the makespan (0..1).
    """

    mps: bool
    runs: tuple[KernelRun, ...]
    makespan_ms: float
    sm_busy_fraction: float


def _check_processes(processes: Sequence[Sequence[Kernel]]) -> None:
    if not processes:
        raise InputError("processes: expected at least one process with kernels, got none")
    for p, kernels in enumerate(processes):
        if not kernels:
            raise InputError(f"processes[{p}]: expected at least one kernel, got none")
        for k, kern in enumerate(kernels):
            _positive(f"processes[{p}][{k}].duration_ms", kern.duration_ms)
            if not (isinstance(kern.sm_fraction, (int, float)) and 0 < kern.sm_fraction <= 1):
                raise InputError(f"processes[{p}][{k}].sm_fraction: expected a share in (0, 1], "
                                 f"got {kern.sm_fraction!r}")


def kernel_timeline(processes: Sequence[Sequence[Kernel]], mps: bool,
                    active_thread_percentage: float = 100.0,
                    switch_ms: float = DEFAULT_SWITCH_MS) -> Timeline:
    """Place the kernels of several processes on one GPU's timeline, with or without MPS.

    Without MPS, contexts take turns at kernel boundaries, round-robin over processes that
    still have kernels, with ``switch_ms`` between two kernels of different processes;
    nothing overlaps. With MPS, each process's kernels run in order, and a kernel starts
    as soon as its process's previous kernel ended and its SM share (capped at
    ``active_thread_percentage``/100, duration scaled by ``fraction / capped``) is free;
    processes are served in index order at each instant (deterministic).

    Args:
        processes: per process, its kernels in launch order.
        mps: True for MPS (one shared context), False for separate contexts.
        active_thread_percentage: MPS per-client SM cap in percent (0, 100].
        switch_ms: context-switch cost between processes without MPS (ms, >= 0).

    Raises:
        InputError: empty input or a value out of range (named in the message).
    """
    _check_processes(processes)
    _positive("switch_ms", switch_ms, allow_zero=True)
    if not (isinstance(active_thread_percentage, (int, float)) and 0 < active_thread_percentage <= 100):
        raise InputError("active_thread_percentage: expected a percentage in (0, 100], "
                         f"got {active_thread_percentage!r}")
    runs: list[KernelRun] = []
    if not mps:
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
    else:
        cap = active_thread_percentage / 100.0
        nxt = [0] * len(processes)
        ready = [0.0] * len(processes)  # earliest start of each process's next kernel
        active: list[KernelRun] = []
        t = 0.0
        eps = 1e-9
        while any(nxt[p] < len(ks) for p, ks in enumerate(processes)):
            active = [r for r in active if r.end_ms > t + eps]
            used = sum(r.sm_fraction for r in active)
            for p, kernels in enumerate(processes):
                if nxt[p] >= len(kernels) or ready[p] > t + eps:
                    continue
                if any(r.process == p for r in active):
                    continue
                kern = kernels[nxt[p]]
                share = min(kern.sm_fraction, cap)
                if used + share > 1.0 + eps:
                    continue
                duration = kern.duration_ms * kern.sm_fraction / share
                run = KernelRun(p, nxt[p], t, t + duration, share)
                runs.append(run)
                active.append(run)
                used += share
                nxt[p] += 1
                ready[p] = run.end_ms
            # advance to the next event: a kernel ends or a process becomes ready
            future = [r.end_ms for r in active if r.end_ms > t + eps]
            future += [ready[p] for p in range(len(processes))
                       if nxt[p] < len(processes[p]) and ready[p] > t + eps]
            if not future:
                break  # pragma: no cover - every capped kernel fits an empty GPU
            t = min(future)
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
    _tenants(clients)
    if isinstance(kernels_per_client, bool) or not isinstance(kernels_per_client, int) or kernels_per_client < 1:
        raise InputError(f"kernels_per_client: expected a whole number >= 1, got {kernels_per_client!r}")
    return [[Kernel(duration_ms, sm_fraction) for _ in range(kernels_per_client)] for _ in range(clients)]
