"""``python -m lab01_cluster_sim defrag``: stranded GPUs, shape-aware admission, migration, dashboard."""

from __future__ import annotations

import argparse

from lab01_cluster_sim.errors import InputError

NAME = "defrag"
HELP = "fight fragmentation: shape-aware admission, defragmentation by migration, and the fragmentation dashboard"
DESCRIPTION = """\
Stranded GPUs: free GPU capacity on nodes that no pending job can use now (definition in
lab01_cluster_sim.defrag). Two remedies, on the seeded demo workload (see `disciplines --help`):

1. Shape-aware admission keeps a share of the nodes (--reserved, comma-separated shares)
   for whole-node jobs; smaller jobs stay off them. Prints the time-averaged stranded GPUs
   (and how many of them sit idle on reserved nodes while only small jobs wait: a
   reservation strands capacity on purpose), the mean wait of whole-node jobs and of the
   others, and utilisation per share. The default load (--interarrival 60 s on 8 nodes,
   about 90 % utilisation) is high enough for the reservation to matter; on a lightly
   loaded cluster it can only add idle reserved GPUs.
2. Defragmentation by migration: when a gang is blocked only by fragmentation, checkpointable
   jobs (every job checkpoints every --checkpoint-interval s) are moved to free whole nodes,
   losing the work since their last checkpoint and paying --checkpoint-cost + --restore s.
   Prints each run with and without migration, the moves made, stranded GPUs before and
   after each, and the GPU-hours the moves cost.

--dashboard FILE saves the fragmentation dashboard: stranded GPUs, allocation ratio and the
use of each MIG profile of a pool of MIG GPUs (--mig-gpus GPUs with --mig-layout) over time.

examples:
  python -m lab01_cluster_sim defrag
  python -m lab01_cluster_sim defrag --reserved 0,0.25,0.5 \\
      --dashboard dashboard.png
  python -m lab01_cluster_sim defrag --checkpoint-interval 300 \\
      --restore 30 --format csv
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from lab01_cluster_sim.commands._options import (nonnegative_float, positive_float, positive_int,
                                                     positive_or_inf, seed)

    parser.add_argument("--reserved", default="0,0.25,0.5", help="shares of nodes kept for whole-node jobs")
    parser.add_argument("--checkpoint-interval", type=positive_or_inf, default=600.0, help="checkpoint interval, s (default %(default)s)")
    parser.add_argument("--checkpoint-cost", type=nonnegative_float(), default=30.0, help="time to write a checkpoint on a move, s")
    parser.add_argument("--restore", type=nonnegative_float(), default=60.0, help="time to restore after a move, s (default %(default)s)")
    parser.add_argument("--nodes", type=positive_int(max_value=10_000), default=8, help="nodes (default %(default)s)")
    parser.add_argument("--gpus-per-node", type=positive_int(max_value=64), default=8, help="GPUs per node (default %(default)s)")
    parser.add_argument("--jobs", type=positive_int(max_value=100_000), default=300, help="jobs (default %(default)s)")
    parser.add_argument("--interarrival", type=positive_float(), default=60.0,
                        help="mean gap between arrivals, s (default %(default)s: about 90 %% utilisation on the "
                             "default 8 nodes)")
    parser.add_argument("--seed", type=seed, default=0, help="workload seed (default %(default)s)")
    parser.add_argument("--dashboard", metavar="FILE", help="save the fragmentation dashboard figure")
    parser.add_argument("--mig-gpus", type=positive_int(max_value=1000), default=4, help="MIG GPUs in the dashboard's pool (default %(default)s)")
    parser.add_argument("--mig-layout", default="3g.40gb,2g.20gb,1g.10gb,1g.10gb",
                        help="MIG layout of each A100-80GB of the pool (default %(default)s)")
    parser.add_argument("--format", default="table", choices=("table", "csv", "json"), help="output format")


def run(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from lab01_cluster_sim.defrag import Defragmenter
    from lab01_cluster_sim.studies.defrag import compare_shape_aware
    from lab01_cluster_sim.disciplines.demo import demo_cluster, demo_jobs
    from lab01_cluster_sim.disciplines.outcomes import OutcomeRecorder
    from lab01_cluster_sim.disciplines.preemption import Checkpoints, CheckpointSpec
    from lab01_cluster_sim.policies.generic import MostAllocated
    from lab01_cluster_sim.simulate import Simulation
    from lab01_cluster_sim.sweep import format_rows

    if args.dashboard:
        from lab01_cluster_sim.plots.dashboard import check_figure_path

        check_figure_path(args.dashboard, "--dashboard")
    try:
        shares = [float(x) for x in args.reserved.split(",") if x.strip()]
    except ValueError:
        shares = [-1.0]
    if not shares or any(not 0.0 <= x <= 1.0 for x in shares):
        raise InputError(f"--reserved {args.reserved!r}: expected comma-separated shares in [0, 1]")
    for opt, val in (("--nodes", args.nodes), ("--gpus-per-node", args.gpus_per_node), ("--jobs", args.jobs)):
        if val < 1:
            raise InputError(f"{opt} must be >= 1, got {val}")
    nodes = demo_cluster(args.nodes, args.gpus_per_node)
    jobs = demo_jobs(args.seed, args.jobs, gpus_per_node=args.gpus_per_node, mean_interarrival_s=args.interarrival)
    import textwrap

    from lab01_cluster_sim.commands._progress import steps, wrote

    total_runs = len(shares) + 2 + (1 if args.dashboard else 0)
    bar = steps(range(total_runs), "defrag", total=total_runs)
    admission = []
    for share in shares:
        next(bar, None)
        admission.extend(compare_shape_aware(nodes, jobs, [share]))
    print("shape-aware admission")
    durations = {"big_job_mean_wait_s": "duration", "small_job_mean_wait_s": "duration", "utilisation": "ratio",
                 "mean_stranded_gpus": "mean", "mean_stranded_reserved_gpus": "mean",
                 "big_jobs_never_started": "count", "small_jobs_never_started": "count"}
    print(format_rows([asdict(r) for r in admission], args.format, units=durations), end="")
    if args.format == "table":
        notes = ["mean_stranded_gpus: free GPUs no pending job could use, averaged over time; "
                 "mean_stranded_reserved_gpus: the part of them idle on reserved nodes while only small jobs wait "
                 "(stranded by the reservation itself); the rest are fragments on the shared nodes."]
        if any(r.big_jobs_never_started or r.small_jobs_never_started for r in admission):
            notes.append("Jobs that never started count in the mean waits with a censored wait (submission to the "
                         "end of the run, a lower bound).")
        print("\n".join(textwrap.fill(n, 78) for n in notes))
    spec = CheckpointSpec(args.checkpoint_interval, args.checkpoint_cost, args.restore)

    def summary(*plugins) -> dict[str, float]:
        recorder = OutcomeRecorder()
        Simulation(nodes, jobs, MostAllocated(), "gang", "fifo-skip",
                   plugins=[Checkpoints(default=spec), *plugins, recorder]).run()
        return recorder.result().summary()

    next(bar, None)
    plain = summary()
    defrag = Defragmenter()
    next(bar, None)
    moved = summary(defrag)
    rows = [{"migration": "off", "mean_wait_s": plain["mean_wait_s"], "p99_wait_s": plain["p99_wait_s"],
             "utilisation": plain["utilisation"], "moves": 0, "gpu_hours_cost": 0.0},
            {"migration": "on", "mean_wait_s": moved["mean_wait_s"], "p99_wait_s": moved["p99_wait_s"],
             "utilisation": moved["utilisation"], "moves": sum(len(e.moves) for e in defrag.events),
             "gpu_hours_cost": defrag.gpu_hours_cost()}]
    print("\ndefragmentation by migration")
    print(format_rows(rows, args.format, units={"mean_wait_s": "duration", "p99_wait_s": "duration",
                                                "utilisation": "ratio", "moves": "count",
                                                "gpu_hours_cost": "mean"}), end="")
    if defrag.events and args.format == "table":
        print("\nfirst moves (time s, for job: moved jobs; stranded GPUs before -> after):")
        for e in defrag.events[:5]:
            print(f"  t={e.time:.0f} for {e.for_job}: {', '.join(m.job_id for m in e.moves)}; "
                  f"{e.stranded_before:g} -> {e.stranded_after:g}")
    if args.dashboard:
        from lab01_cluster_sim.studies.defrag import dashboard_data, demo_mig_jobs
        from lab01_cluster_sim.plots.dashboard import fragmentation_dashboard
        from lab01_cluster_sim.sharing_modes import MigLayout

        layout = MigLayout("A100-80GB", tuple(p.strip() for p in args.mig_layout.split(",") if p.strip()))
        if args.mig_gpus < 1:
            raise InputError(f"--mig-gpus must be >= 1, got {args.mig_gpus}")
        next(bar, None)
        data = dashboard_data(nodes, jobs, [layout] * args.mig_gpus, demo_mig_jobs(args.seed),
                              on_blocked=Defragmenter(), default_checkpoint=spec)
        fragmentation_dashboard(data.times, data.stranded, data.allocation_ratio, data.mig_times,
                                data.mig_use).savefig(args.dashboard, dpi=120)
        wrote(args.dashboard, "fragmentation dashboard")
    for _ in bar:   # close the progress bar
        pass
    return 0
