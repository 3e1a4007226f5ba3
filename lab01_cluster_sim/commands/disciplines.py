"""``python -m lab01_cluster_sim disciplines``: the scheduling trilemma per queue discipline."""

from __future__ import annotations

import argparse
import math

from lab01_cluster_sim.errors import InputError

NAME = "disciplines"
HELP = "compare queue disciplines (FIFO, FIFO-skip, priority+preemption, DRF, EASY backfill): wait, utilisation, fairness"
DESCRIPTION = """\
Runs one seeded workload under each queue discipline and prints the trilemma: mean and p99
queueing delay, GPU utilisation, two fairness indices, and for priority the GPU-hours lost to
preemption. Fairness means two things here: jain_index is Jain's index over tenants of their
jobs' mean inverse slowdown (duration / (end - submit)): how evenly queueing slows the tenants
(strict FIFO scores high: everyone waits in one line); jain_dominant_share is Jain's index
over the dominant shares of the tenants that have work waiting, averaged over time: what DRF
equalises (DRF scores high, though its tenant of big gangs may see its jobs wait longer).

  fifo       strict head-of-line blocking
  fifo-skip  a blocked job is skipped (big jobs can starve)
  priority   highest priority first; lower-priority jobs are preempted, victims chosen to
             lose the least work since their last checkpoint (--checkpoint-interval)
  drf        Dominant Resource Fairness across tenants over GPUs, CPU and memory
  backfill   EASY: the blocked head gets a reservation; later jobs start only if they
             do not delay it

The workload (lab01_cluster_sim.disciplines.demo): --nodes nodes of --gpus-per-node GPUs,
--jobs jobs with Poisson arrivals (--interarrival s apart on average), log-normal durations,
1-16 GPUs; jobs of a whole node or more belong to tenant 'research', the others to team-a/b/c.

examples:
  python -m lab01_cluster_sim disciplines
  python -m lab01_cluster_sim disciplines --checkpoint-interval 600 \\
      --restore 60 --plot trilemma.png
  python -m lab01_cluster_sim disciplines \\
      --disciplines fifo-skip,backfill --format csv
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from lab01_cluster_sim.commands._options import (nonnegative_float, positive_float, positive_int,
                                                     positive_or_inf, seed)
    from lab01_cluster_sim.registry import DISCIPLINES

    parser.add_argument("--disciplines", default=",".join(DISCIPLINES),
                        help="comma-separated list (default %(default)s)")
    parser.add_argument("--seed", type=seed, default=0, help="workload seed (default %(default)s)")
    parser.add_argument("--jobs", type=positive_int(max_value=100_000), default=300, help="number of jobs (default %(default)s)")
    parser.add_argument("--nodes", type=positive_int(max_value=10_000), default=4, help="nodes (default %(default)s)")
    parser.add_argument("--gpus-per-node", type=positive_int(max_value=64), default=8, help="GPUs per node (default %(default)s)")
    parser.add_argument("--interarrival", type=positive_float(), default=300.0,
                        help="mean gap between arrivals, s (default %(default)s: 1.3x the 32 GPUs' capacity in "
                             "expectation, 0.86x for seed 0 as durations are heavy-tailed; a queue builds up "
                             "and the disciplines differ)")
    parser.add_argument("--checkpoint-interval", type=positive_or_inf, default=math.inf,
                        help="checkpoint every this many s of run time (default: never; preemption loses all)")
    parser.add_argument("--restore", type=nonnegative_float(), default=0.0, help="restore overhead after a preemption, s (default 0)")
    parser.add_argument("--format", default="table", choices=("table", "csv", "json"), help="output format")
    parser.add_argument("--plot", metavar="FILE", help="save the trilemma figure (png, svg, pdf)")


def _why_fairness_differs(by_slow: str, by_share: str) -> str:
    """The sentence explaining why two disciplines top the two fairness columns ("" when one
    discipline tops both)."""
    if by_slow == by_share:
        return ""
    text = (f"The two measure different things, so {by_slow} can top jain_index while {by_share} tops "
            "jain_dominant_share")
    if by_slow == "fifo" and by_share == "drf":
        text += (": in one FIFO line every tenant's jobs wait behind the same head, so queueing slows all tenants "
                 "about alike even when one of them holds most of the GPUs; DRF lets the tenant with the smallest "
                 "dominant share go first, which evens out shares but makes some tenants wait more than others")
    return text + ". "


def run(args: argparse.Namespace) -> int:
    from lab01_cluster_sim.disciplines.demo import demo_cluster, demo_jobs
    from lab01_cluster_sim.disciplines.preemption import CheckpointSpec
    from lab01_cluster_sim.studies.trilemma import COLUMNS, trilemma_report
    from lab01_cluster_sim.sweep import format_rows

    names = [d.strip() for d in args.disciplines.split(",") if d.strip()]
    if args.plot:
        from lab01_cluster_sim.plots.dashboard import check_figure_path

        check_figure_path(args.plot, "--plot")
    for opt, val in (("--jobs", args.jobs), ("--nodes", args.nodes), ("--gpus-per-node", args.gpus_per_node)):
        if val < 1:
            raise InputError(f"{opt} must be >= 1, got {val}")
    if not args.checkpoint_interval > 0 or args.restore < 0:
        raise InputError(f"--checkpoint-interval must be > 0 s (inf = never) and --restore >= 0 s, "
                         f"got {args.checkpoint_interval}, {args.restore}")
    if not args.interarrival > 0:
        raise InputError(f"--interarrival must be > 0 s, got {args.interarrival}")
    nodes = demo_cluster(args.nodes, args.gpus_per_node)
    jobs = demo_jobs(args.seed, args.jobs, gpus_per_node=args.gpus_per_node,
                     mean_interarrival_s=args.interarrival, big_tenant="research")
    spec = CheckpointSpec(interval_s=args.checkpoint_interval, restore_s=args.restore)
    from lab01_cluster_sim.commands._progress import steps, wrote
    from lab01_cluster_sim.registry import DISCIPLINES

    unknown = [d for d in names if d not in DISCIPLINES]
    if unknown or not names:
        what = f"unknown discipline {unknown[0]!r}" if unknown else "no discipline given"
        raise InputError(f"--disciplines {args.disciplines!r}: {what}; expected some of {', '.join(DISCIPLINES)}")
    rows = []
    for name in steps(names, "disciplines"):
        rows.extend(trilemma_report(nodes, jobs, [name], checkpoint=spec))
    units = {"mean_wait_s": "duration", "p99_wait_s": "duration", "utilisation": "ratio", "jain_index": "index",
             "jain_dominant_share": "index", "lost_gpu_hours": "mean", "preemptions": "count", "completed": "count",
             "pending": "count", "rejected": "count"}
    print(format_rows(rows, args.format, COLUMNS, units=units), end="")
    if args.format == "table":
        import textwrap

        by_slow = max(rows, key=lambda r: r["jain_index"])["discipline"]
        shares = [r for r in rows if r["jain_dominant_share"] == r["jain_dominant_share"]]   # not NaN
        by_share = max(shares, key=lambda r: r["jain_dominant_share"])["discipline"] if shares else "none"
        print(textwrap.fill(
            "jain_index: Jain's index over tenants of their jobs' mean inverse slowdown (how evenly queueing "
            f"slows them; highest here: {by_slow}). jain_dominant_share: Jain's index over the dominant shares of "
            f"the tenants with work waiting, averaged over time (what DRF equalises; highest here: {by_share}). "
            + _why_fairness_differs(by_slow, by_share)
            + "utilisation counts work later lost to preemption as busy time.", 78))
    if args.plot:
        from lab01_cluster_sim.plots.fairness import trilemma_figure

        trilemma_figure(rows).savefig(args.plot, dpi=120)
        wrote(args.plot, "trilemma figure")
    return 0
