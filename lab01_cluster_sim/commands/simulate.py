"""``python -m lab01_cluster_sim simulate``: one timed-mode run (arrivals, queueing, completions)."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

from lab01_cluster_sim.commands._options import fraction, nonnegative_float, positive_float, positive_int, seed
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.model import Job, Node
from lab01_cluster_sim.scheduler import DISCIPLINES, MODES, adaptive_nodes_to_score
from lab01_cluster_sim.simulate import SimulationResult, simulate

NAME = "simulate"
HELP = "run one timed simulation (arrivals, queue, completions) and print its metrics"
DESCRIPTION = """\
Timed mode: jobs arrive at their submit time, wait in the queue, run for their duration
once every worker is bound, and complete. Prints job counts per final state, queueing
delay and JCT (mean, p50, p99), makespan, the time-weighted GPU allocation ratio and
stranded GPUs; --plot saves the allocation ratio and stranded GPUs over time.

Without --trace the workload is the embedded synthetic openb-like generator (--jobs jobs on
--nodes nodes, Poisson arrivals, lognormal durations). --load sets the arrival rate: the
GPU-seconds the jobs ask, per second of arrivals, as a multiple of the cluster's GPUs. The
durations are heavy-tailed (median 560 s, a few jobs run for days), so much of that work
lands after the last arrival: a load of 1 keeps the GPUs only about a third busy while jobs
arrive. The defaults (2000 jobs, 20 nodes with 102 GPUs, load 2) make a contended cluster:
about 86 % allocated while jobs arrive, jobs queue (mean wait about 40 min), GPUs are
stranded at times and the queue disciplines differ (compare --discipline fifo). The "over
the whole run" allocation is low because the last long jobs run alone for days.

With --trace DIR (the folder of the Alibaba openb CSVs) the cluster is
openb_node_list_gpu_node.csv and each pod of the pod list arrives at its creation_time
and runs deletion_time - scheduled_time (deletion - creation for pods never scheduled);
its QoS class (LS, BE, Burstable, ...) is its tenant for DRF. The openb pod list is a
snapshot of pods whose creation times span about 149 days, so replayed in time it keeps
well under 1% of the GPUs busy on average; the paper's replay method (the compare
command) is the standard way to load it.

--plugin NAME[:key=value,...] (repeatable) adds an extension of the one engine, in the
order given: topology (max_wait_s, comm_fraction, intra_gbps, inter_gbps), time-slicing
(slice_ms, switch_us), constraints (GPU-node taint), tenancy (free=t1;t2, premium=t3),
shape-aware (reserved), defrag (max_moves; with checkpoints), checkpoints (interval_s,
checkpoint_s, restore_s), autoscaler (instance_types=a;b, limit_gpus, consolidation,
consolidate_after_s, capacity_type), node-events (events=drain@600=NODE;up@1200=NODE).
Any of them combine with each other, every discipline and the trace.

examples:
  python -m lab01_cluster_sim simulate
  python -m lab01_cluster_sim simulate --jobs 5000 --nodes 200 \\
      --policy fgd --plot timeline.png
  python -m lab01_cluster_sim simulate \\
      --trace ../shared/data/alibaba-gpu-2023/csv --format json
  python -m lab01_cluster_sim simulate --discipline drf \\
      --plugin topology:max_wait_s=600 --plugin time-slicing \\
      --plugin autoscaler:limit_gpus=64
"""

FORMATS = ("table", "json", "csv")
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
``lab01_cluster_sim.scenario.load.MAX_SECONDS``: a double still resolves 1e9 s to about
1e-7 s, so durations and waits keep their digits."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--trace", metavar="DIR", help="folder of the openb CSVs (default: synthetic workload)")
    parser.add_argument("--pod-list", default=None,
                        help="pod list name within --trace (default: 'default'); it needs time columns "
                             "(the multigpu* lists have none: replay them with the compare command)")
    parser.add_argument("--policy", default="best-fit", help="placement policy (default %(default)s)")
    parser.add_argument("--mode", default="gang", choices=MODES, help="gang or naive placement (default %(default)s)")
    parser.add_argument("--discipline", default="fifo-skip",
                        help=f"queue discipline: {', '.join(sorted(DISCIPLINES))}, ... (default %(default)s)")
    parser.add_argument("--seed", type=seed, default=0, help="seed of the workload and the policy (default %(default)s)")
    parser.add_argument("--jobs", type=positive_int(max_value=MAX_JOBS), default=DEFAULT_JOBS,
                        help=f"synthetic jobs, 1 to {MAX_JOBS:,} (default %(default)s)")
    parser.add_argument("--nodes", type=positive_int(max_value=MAX_NODES), default=DEFAULT_NODES,
                        help=f"synthetic nodes, 1 to {MAX_NODES:,} (default %(default)s)")
    parser.add_argument("--interarrival", type=positive_float(max_value=1e7), default=None,
                        help="synthetic mean gap between arrivals, s, > 0 (default: from --load)")
    parser.add_argument("--load", type=positive_float(max_value=10, min_value=MIN_LOAD,
                                                      why="a lower load spreads the arrivals over so many "
                                                          "seconds that floating-point times lose the jobs' "
                                                          "durations"),
                        default=DEFAULT_LOAD,
                        help="synthetic offered GPU load: the jobs' GPU-seconds per second of arrivals, as a "
                             "multiple of the cluster's GPUs (1 = as much work as the GPUs can do while jobs "
                             "arrive; heavy-tailed durations push much of it past the last arrival, see above). "
                             "Sets the arrival rate when --interarrival is not given; from 0.001 to 10 "
                             "(default %(default)s)")
    parser.add_argument("--gang-share", type=fraction, default=0.0,
                        help="synthetic: share of multi-GPU jobs that are gangs of several workers, 0 to 1 "
                             "(default 0)")
    parser.add_argument("--nodes-to-score", default="all",
                        help="feasible nodes scored per worker: 'all', 'adaptive' (kube-scheduler's default) or N")
    parser.add_argument("--until", type=positive_float(), default=None, help="stop at this simulated time, s (> 0)")
    parser.add_argument("--format", default="table", choices=FORMATS, help="output format (default %(default)s)")
    parser.add_argument("--jobs-out", metavar="FILE",
                        help="also write one CSV row per job to FILE; its placements column has one NODE:GPUS "
                             "entry per worker (the worker's GPU indices, comma-separated), workers separated by "
                             "spaces: a 4-GPU pod is 'h100-0:0,1,2,3', a gang of four 1-GPU workers "
                             "'node-0:1 node-0:2 node-0:3 node-1:0'")
    parser.add_argument("--plot", metavar="FILE", help="save the allocation/stranded timeline figure (png, svg, pdf)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--plugin", action="append", default=[], metavar="NAME[:KEY=VALUE,...]",
                        help="add an engine extension (repeatable; see the list above)")


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


def _nodes_to_score(text: str, num_nodes: int) -> int | None:
    if text == "all":
        return None
    if text == "adaptive":
        return adaptive_nodes_to_score(num_nodes)
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise InputError(f"--nodes-to-score {text!r}: expected 'all', 'adaptive' or an integer >= 1")
    return value


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


def _print_table(d: dict, out) -> None:
    def f(x, unit=""):
        return "n/a" if x is None else (f"{x:,.1f}{unit}" if isinstance(x, float) else f"{x}{unit}")

    print(f"policy {d['policy']}, mode {d['mode']}, discipline {d['discipline']}, seed {d['seed']}: "
          f"{d['jobs']} job{'' if d['jobs'] == 1 else 's'}, stopped: {d['stop_reason']} at "
          f"t={d['end_time_s']:,.0f} s", file=out)
    print("  states:         " + ", ".join(f"{k} {v}" for k, v in d["states"].items()), file=out)
    ns = d["never_started"]
    started = d["jobs"] - ns["pending"] - ns["rejected"]
    notes = {"wait_s": f" (over the {started} jobs that started; never started: {ns['pending']} still pending, "
                       f"{ns['rejected']} rejected)" if ns["pending"] + ns["rejected"] else "",
             "jct_s": ""}
    from lab01_cluster_sim.commands._format import format_duration

    def t(x):   # each in its readable unit: 42.0 s, 40.2 min, 6.5 h
        return format_duration(x, missing="n/a")

    for key, label in (("wait_s", "queueing delay"), ("jct_s", "JCT")):
        v = d[key]
        print(f"  {label + ':':<16}mean {t(v['mean'])}, p50 {t(v['p50'])}, p99 {t(v['p99'])}{notes[key]}", file=out)
    print(f"  makespan:       {format_duration(d['makespan_s'], missing='n/a')}", file=out)
    ratio = d["mean_allocation_ratio"]
    busy = d["arrival_allocation_ratio"]
    print(f"  allocation:     {'n/a' if busy is None else f'{100 * busy:.2f}'} % while jobs arrive, "
          f"{'n/a' if ratio is None else f'{100 * ratio:.2f}'} % over the whole run (time-weighted means)", file=out)
    print(f"  stranded:       peak {d['peak_stranded_gpus']} GPUs, mean {f(d['mean_stranded_gpus'])}", file=out)
    reasons = sorted(d["rejected"].items(), key=lambda kv: (-kv[1], kv[0]))
    for reason, count in reasons[:5]:
        print(f"  rejected {count}: {reason}", file=out)
    if len(reasons) > 5:
        rest = sum(c for _, c in reasons[5:])
        print(f"  rejected {rest} more, for {len(reasons) - 5} other reasons (see --format json or --jobs-out)",
              file=out)
    for line in d["deadlock"] or []:
        print("  " + line, file=out)


def run(args: argparse.Namespace) -> int:
    if args.plot:
        from lab01_cluster_sim.commands.compare import check_plot_path

        check_plot_path(args.plot)
    if args.trace is None and args.pod_list:
        raise InputError("--pod-list needs --trace DIR (the folder holding the openb CSVs)")
    if args.trace:
        if not args.quiet:
            from lab01_cluster_sim.workloads.openb import describe_trace

            print(f"loading {describe_trace(args.trace, args.pod_list)}", file=sys.stderr, flush=True)
        nodes, jobs = trace_jobs(args.trace, args.pod_list)
        from lab01_cluster_sim.workloads.openb import DEFAULT_NODE_LIST, unknown_models_note

        note = None if args.quiet else unknown_models_note(nodes, jobs, DEFAULT_NODE_LIST)
        if note:
            print(note, file=sys.stderr)
    else:
        nodes, jobs = synthetic_jobs(args.jobs, args.nodes, args.seed, args.interarrival, args.gang_share,
                                     args.load)
    from lab01_cluster_sim.plugins import make_plugin

    plugins = [make_plugin(spec, nodes, jobs) for spec in args.plugin]
    result = simulate(nodes, jobs, policy=args.policy, mode=args.mode, discipline=args.discipline, seed=args.seed,
                      until=args.until, nodes_to_score=_nodes_to_score(args.nodes_to_score, len(nodes)),
                      stranded_interval=stranded_interval(len(nodes), len(jobs)),
                      progress=not args.quiet, plugins=plugins)
    d = summary_dict(result)
    out = sys.stdout
    if args.format == "json":
        json.dump(d, out, indent=2)
        out.write("\n")
    elif args.format == "csv":
        keys = ["policy", "mode", "discipline", "seed", "jobs", "completed", "running", "pending", "rejected",
                "wait_mean_s", "wait_p99_s", "jct_mean_s", "jct_p50_s", "jct_p99_s", "makespan_s",
                "mean_allocation_ratio", "peak_stranded_gpus", "stop_reason"]
        row = [d["policy"], d["mode"], d["discipline"], d["seed"], d["jobs"], *d["states"].values(),
               d["wait_s"]["mean"], d["wait_s"]["p99"], d["jct_s"]["mean"], d["jct_s"]["p50"], d["jct_s"]["p99"],
               d["makespan_s"], d["mean_allocation_ratio"], d["peak_stranded_gpus"], d["stop_reason"]]
        print(",".join(keys), file=out)
        print(",".join("" if v is None else str(v) for v in row), file=out)
    else:
        _print_table(d, out)
    if args.jobs_out:
        from lab01_cluster_sim.commands._progress import wrote

        _write_jobs(result, args.jobs_out)
        wrote(args.jobs_out, "one row per job")
    if args.plot:
        from lab01_cluster_sim.plots.timeline import plot_timeline

        fig = plot_timeline({f"{result.policy} ({result.mode})": result.timeline},
                            title=f"{d['jobs']} job{'' if d['jobs'] == 1 else 's'} on {len(nodes)} "
                                  f"node{'' if len(nodes) == 1 else 's'}")
        try:
            fig.savefig(args.plot)
        except (OSError, ValueError) as exc:
            raise InputError(f"--plot {args.plot}: cannot save the figure: {exc}") from None
        from lab01_cluster_sim.commands._progress import wrote

        wrote(args.plot, "timeline figure")
    return 0


def _write_jobs(result: SimulationResult, path: str) -> None:
    import csv

    try:
        with Path(path).open("w", newline="") as fh:
            rows = result.jobs_table()
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]) if rows else ["job"])
            writer.writeheader()
            for row in rows:
                row["placements"] = " ".join(row["placements"])
                writer.writerow(row)
    except OSError as exc:
        raise InputError(f"--jobs-out {path}: cannot write: {exc}") from None
