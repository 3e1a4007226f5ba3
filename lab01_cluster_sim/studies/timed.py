"""The timed simulation's workloads and headline figures, shared by ``simulate``, scenario files
and sweeps.

:func:`synthetic_jobs` draws an openb-like workload (:mod:`lab01_cluster_sim.workloads.synthetic`)
at a given offered load; :func:`trace_jobs` turns the openb trace's pods into timed jobs;
:func:`stranded_interval` says how often to sample stranded GPUs; :func:`summary_dict` is a run's
headline as JSON. The bounds (:data:`MAX_JOBS`, :data:`MAX_NODES`, :data:`MAX_ARRIVAL_S`) are the
command line's and the scenario loader's alike.
"""

from __future__ import annotations

import math

import numpy as np

from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.model import Job, Node
from lab01_cluster_sim.metrics import SimulationResult

MAX_JOBS = 1_000_000
MAX_NODES = 100_000
DEFAULT_JOBS = 2000
DEFAULT_NODES = 20
DEFAULT_LOAD = 2.0
MIN_LOAD = 0.001
"""Lowest --load: below it the synthetic arrivals spread over so many seconds that a job's
duration is lost in floating point (at t ~ 1e300 s, t + d == t) or the last arrival passes
:data:`MAX_ARRIVAL_S`."""
MAX_ARRIVAL_S = 1e9
"""Latest synthetic arrival, s (about 31.7 years), the simulator's time cap as
``lab01_cluster_sim.scenario.fields.MAX_SECONDS``: a double still resolves 1e9 s to about
1e-7 s, so durations and waits keep their digits."""


def trace_jobs(folder: str, pod_list: str | None) -> tuple[list[Node], list[Job]]:
    """The openb cluster and its pods as timed jobs (see DESCRIPTION).

    Raises:
        InputError / TraceFormatError: a missing or malformed file, or a pod list without
            arrival times (the ``multigpu*`` lists).
    """
    from lab01_cluster_sim.workloads.openb import load_trace

    nodes, pods = load_trace(folder, pod_list)
    if np.isnan(pods.creation_time).all():
        raise InputError(f"pod list {pods.path}: has no arrival times (no creation_time column, or every value "
                         "empty), so every pod would arrive at t=0 and never end; simulate needs a timed list "
                         "such as 'default'; replay this one with the compare command (the paper's method)")
    created = np.nan_to_num(pods.creation_time, nan=0.0)
    t0 = float(created.min()) if len(created) else 0.0
    jobs = []
    for i, job in enumerate(pods.jobs):
        start = pods.scheduled_time[i] if not math.isnan(pods.scheduled_time[i]) else created[i]
        end = pods.deletion_time[i]
        duration = float(end - start) if not math.isnan(end) else math.inf
        tenant = pods.qos[i] or job.tenant   # the QoS class (LS, BE, Burstable, ...) as the tenant, for DRF
        jobs.append(Job(job.job_id, float(created[i] - t0), max(duration, 0.0), job.gpus_per_worker, job.gpu_milli,
                        job.cpu_milli, job.memory_mib, job.gpu_models, job.priority, job.workers, tenant))
    return nodes, jobs


def synthetic_jobs(num_jobs: int, num_nodes: int, seed: int, interarrival: float | None,
                   gang_share: float, load: float = 0.9,
                   names: tuple[str, str, str] = ("--load", "--interarrival", "--jobs")) -> tuple[list[Node], list[Job]]:
    """``num_jobs`` synthetic jobs on ``num_nodes`` openb-mix nodes.

    The default mean inter-arrival gap makes the offered GPU load ``load`` x capacity:
    gap = E[GPU-seconds per job] / (load x GPUs), with E[...] estimated from the drawn jobs.
    (Durations are heavy-tailed, so a run of a few thousand jobs stays below its offered
    load: much of the work arrives late in long jobs.)

    Raises:
        InputError: counts < 1, a bad share/gap, a load below MIN_LOAD, or a last
            arrival past MAX_ARRIVAL_S (1e9 s); ``names`` are how the message calls the load,
            the gap and the job count (the command's options by default).
    """
    from lab01_cluster_sim.workloads.synthetic import PodMix, synthetic_nodes, synthetic_pods

    if num_jobs < 1 or num_nodes < 1:
        raise InputError(f"--jobs and --nodes must be >= 1, got {num_jobs} and {num_nodes}")
    if not 0.0 <= gang_share <= 1.0:
        raise InputError(f"--gang-share must be in [0, 1], got {gang_share}")
    # Only the floor here: the command line caps --load at 10 for learners, but the speed
    # benchmarks drive this function at 16 to make queues form (benchmarks/bench_timed.py).
    if not load >= MIN_LOAD:
        raise InputError(f"{names[0]} must be >= {MIN_LOAD:g}, got {load:g}")
    if interarrival is not None and not interarrival > 0:
        raise InputError(f"--interarrival must be > 0 s, got {interarrival}")
    nodes = synthetic_nodes(num_nodes)
    mix = PodMix(gang_share=gang_share)
    jobs = synthetic_pods(num_jobs, np.random.default_rng(seed), mix)
    if interarrival is None:
        gpus = sum(n.gpu_count for n in nodes)
        work = sum(j.gpu_milli_total / 1000 * j.duration for j in jobs) / len(jobs)
        gap = work / (load * gpus)
        scale = gap / mix.mean_interarrival_s
        jobs = [Job(j.job_id, round(j.submit_time * scale, 3), j.duration, j.gpus_per_worker, j.gpu_milli,
                    j.cpu_milli, j.memory_mib, j.gpu_models, j.priority, j.workers, j.tenant) for j in jobs]
    elif interarrival != mix.mean_interarrival_s:
        scale = interarrival / mix.mean_interarrival_s
        jobs = [Job(j.job_id, round(j.submit_time * scale, 3), j.duration, j.gpus_per_worker, j.gpu_milli,
                    j.cpu_milli, j.memory_mib, j.gpu_models, j.priority, j.workers, j.tenant) for j in jobs]
    last = max(j.submit_time for j in jobs)
    if last > MAX_ARRIVAL_S:
        cause = (f"{names[1]} {interarrival:,.0f} s" if interarrival is not None and interarrival.is_integer()
                 else f"{names[1]} {interarrival:g} s" if interarrival is not None else f"{names[0]} {load:g}")
        raise InputError(f"{cause} with {names[2]} {num_jobs:,}: the last synthetic job would arrive at "
                         f"{last:,.0f} s, past the simulator's {MAX_ARRIVAL_S:,.0f} s (about 31.7 years) "
                         "time cap; expected fewer jobs, a higher load or a shorter gap")
    return nodes, jobs


def stranded_interval(num_nodes: int, num_jobs: int) -> float | None:
    """How often, simulated s, ``simulate`` samples stranded GPUs: at every event (None) up to
    10,000,000 node-jobs, every 600 s above (counting them at every event costs
    O(nodes) each)."""
    return None if num_nodes * num_jobs <= 10_000_000 else 600.0


def summary_dict(result: SimulationResult) -> dict:
    """The run's headline figures as a JSON-ready dict."""
    s = result.summary

    def clean(x):
        return None if isinstance(x, float) and math.isnan(x) else x

    return {
        "policy": result.policy, "mode": result.mode, "discipline": result.discipline, "seed": result.seed,
        "jobs": s.jobs, "states": s.states, "stop_reason": result.stop_reason, "end_time_s": result.end_time,
        "wait_s": {k: clean(getattr(s.wait, k)) for k in ("mean", "p50", "p99", "max")},
        "jct_s": {k: clean(getattr(s.jct, k)) for k in ("mean", "p50", "p99", "max")},
        "never_started": {"pending": s.never_started - s.states.get("rejected", 0),
                          "rejected": s.states.get("rejected", 0)},
        "makespan_s": clean(s.makespan),
        "mean_allocation_ratio": clean(s.mean_allocation_ratio),
        "arrival_allocation_ratio": clean(s.arrival_allocation_ratio),
        "peak_stranded_gpus": s.peak_stranded_gpus, "mean_stranded_gpus": clean(s.mean_stranded_gpus),
        "rejected": s.rejected, "deadlock": result.deadlock.lines() if result.deadlock else None,
        "events": result.events,
    }
