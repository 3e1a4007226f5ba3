"""``python -m lab01_cluster_sim simulate``: one timed-mode run (arrivals, queueing, completions)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from lab01_cluster_sim.options import fraction, nonnegative_float, positive_float, positive_int, seed
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.registry import DISCIPLINES
from lab01_cluster_sim.scheduler import MODES, adaptive_nodes_to_score
from lab01_cluster_sim.metrics import SimulationResult
from lab01_cluster_sim.simulate import simulate
from lab01_cluster_sim.studies import timed
from lab01_cluster_sim.studies.timed import (DEFAULT_JOBS, DEFAULT_LOAD, DEFAULT_NODES, MIN_LOAD, stranded_interval,
                                             summary_dict, synthetic_jobs, trace_jobs)

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
(slice_ms, switch_us), constraints (GPU-node taint; cpu_pods_tolerate=0 keeps CPU-only
pods off GPU nodes), tenancy (free=t1;t2, premium=t3), shape-aware (reserved), defrag
(max_moves; with checkpoints), checkpoints (interval_s, checkpoint_s, restore_s),
autoscaler (instance_types=a;b, limit_gpus, consolidation, consolidate_after_s,
capacity_type), node-events (events=drain@600=NODE;up@1200=NODE).
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
    parser.add_argument("--jobs", type=positive_int(max_value=timed.MAX_JOBS), default=DEFAULT_JOBS,
                        help=f"synthetic jobs, 1 to {timed.MAX_JOBS:,} (default %(default)s)")
    parser.add_argument("--nodes", type=positive_int(max_value=timed.MAX_NODES), default=DEFAULT_NODES,
                        help=f"synthetic nodes, 1 to {timed.MAX_NODES:,} (default %(default)s)")
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
    from lab01_cluster_sim.formatting import format_duration

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
    from lab01_cluster_sim.registry import make_plugin

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
        from lab01_cluster_sim.progress import wrote

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
        from lab01_cluster_sim.progress import wrote

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
