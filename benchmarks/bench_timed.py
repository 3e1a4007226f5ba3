"""Speed of the timed-mode simulator: per-decision cost as the cluster doubles.

Runs the synthetic openb-like workload (see ``lab01_cluster_sim.commands.simulate.synthetic_jobs``)
at the same offered load on N nodes with J/2 jobs and on 2N nodes with J jobs (the same
jobs per node, so both clusters see the same contention), and
reports wall and CPU time, scheduling decisions (worker placements attempted) and CPU
microseconds per decision, for scoring every feasible node and for kube-scheduler's adaptive
``percentageOfNodesToScore``. The figure of merit is the ratio of the cost per decision at 2N
to that at N (2.0 would be linear growth). CPU time (``time.process_time``) is used because
the machine is shared and wall time swings with other people's load; with ``--repeat R``
each configuration runs R times and the fastest run counts. Not a test: figures depend on
the machine.

    python benchmarks/bench_timed.py                       # 50k jobs/5,000 nodes vs 100k jobs/10,000 nodes
    python benchmarks/bench_timed.py --jobs 20000 --nodes 1000 --profile
    python benchmarks/bench_timed.py --only-large --modes all                   # 100k jobs on 10,000 nodes only
    python benchmarks/bench_timed.py --only-large --modes all --tree /tmp/main  # the same, another checkout's code
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import sys
import time
from pathlib import Path

# Measure this checkout (or the one after --tree), not whatever copy of the package is installed.
_TREE = sys.argv[sys.argv.index("--tree") + 1] if "--tree" in sys.argv[:-1] else str(Path(__file__).resolve().parents[1])
sys.path.insert(0, _TREE)

from lab01_cluster_sim.commands.simulate import synthetic_jobs  # noqa: E402
from lab01_cluster_sim.scheduler import Scheduler, adaptive_nodes_to_score
from lab01_cluster_sim.simulate import Simulation


def run_once(num_jobs: int, num_nodes: int, policy: str, nodes_to_score: int | None, seed: int,
             profile: bool, load: float = 16.0, gang_share: float = 0.0) -> dict:
    nodes, jobs = synthetic_jobs(num_jobs, num_nodes, seed, None, gang_share, load)
    calls = {"n": 0}
    original = Scheduler.select_node

    def counting(self, request, record=None, within=None):
        calls["n"] += 1
        return original(self, request, record, within)

    Scheduler.select_node = counting  # count decisions without touching the library
    try:
        sim = Simulation(nodes, jobs, policy, "gang", "fifo-skip", seed, nodes_to_score=nodes_to_score,
                         stranded_interval=3600.0)
        prof = cProfile.Profile() if profile else None
        t0, c0 = time.perf_counter(), time.process_time()
        if prof:
            prof.enable()
        result = sim.run()
        if prof:
            prof.disable()
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    finally:
        Scheduler.select_node = original
    if prof:
        pstats.Stats(prof).sort_stats("cumulative").print_stats(18)
    return {"nodes": num_nodes, "jobs": num_jobs, "policy": policy,
            "nodes_to_score": "all" if nodes_to_score is None else nodes_to_score, "wall_s": wall, "cpu_s": cpu,
            "decisions": calls["n"], "us_per_decision": 1e6 * cpu / max(1, calls["n"]),
            "events": result.events, "completed": result.summary.states["completed"],
            "wait_p99": result.summary.wait.p99,
            "arrival_alloc": result.summary.arrival_allocation_ratio}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=100_000, help="J: jobs of the 2N-node run (J/2 on N nodes)")
    ap.add_argument("--nodes", type=int, default=5_000, help="N; the run is repeated on 2N nodes")
    ap.add_argument("--policy", default="best-fit")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--modes", default="all,adaptive", help="node scoring: comma list of all, adaptive")
    ap.add_argument("--load", type=float, default=16.0,
                    help="offered GPU load x capacity; durations are heavy-tailed, so at 10 jobs per node it takes "
                         "about 16 to make queues form (default %(default)s)")
    ap.add_argument("--gang-share", type=float, default=0.0, help="share of multi-GPU jobs that are 2-worker gangs")
    ap.add_argument("--repeat", type=int, default=1, help="runs per configuration; the fastest counts")
    ap.add_argument("--profile", action="store_true", help="print a cProfile of each run")
    ap.add_argument("--only-large", action="store_true", help="run only the J-job, 2N-node configuration")
    ap.add_argument("--tree", metavar="DIR", help="measure the lab01_cluster_sim of this checkout (e.g. a git "
                                                  "worktree of main) instead of this one")
    ap.add_argument("--json", action="store_true",
                    help="print one JSON object per run instead of the table (for benchmarks/ab_trees.py)")
    args = ap.parse_args()
    if args.json:
        for scoring in args.modes.split(","):
            sizes = ((args.nodes, args.jobs // 2), (2 * args.nodes, args.jobs))
            for n, jobs in sizes[1:] if args.only_large else sizes:
                k = None if scoring == "all" else adaptive_nodes_to_score(n)
                for _ in range(max(1, args.repeat)):
                    print(json.dumps(run_once(jobs, n, args.policy, k, args.seed, False, args.load,
                                              args.gang_share)), flush=True)
        return
    print("| nodes | jobs | policy | nodes scored | wall s | CPU s | decisions | CPU us/decision | CPU us/job | "
          "events | completed | alloc while arriving | p99 wait s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for scoring in args.modes.split(","):
        rows = []
        sizes = ((args.nodes, args.jobs // 2), (2 * args.nodes, args.jobs))
        for n, jobs in sizes[1:] if args.only_large else sizes:
            k = None if scoring == "all" else adaptive_nodes_to_score(n)
            r = min((run_once(jobs, n, args.policy, k, args.seed, args.profile, args.load, args.gang_share)
                     for _ in range(max(1, args.repeat))), key=lambda x: x["cpu_s"])
            rows.append(r)
            print(f"| {r['nodes']:,} | {r['jobs']:,} | {r['policy']} | {r['nodes_to_score']} | {r['wall_s']:.1f} | "
                  f"{r['cpu_s']:.1f} | "
                  f"{r['decisions']:,} | {r['us_per_decision']:.1f} | {1e6 * r['cpu_s'] / r['jobs']:.1f} | {r['events']:,} | {r['completed']:,} | "
                  f"{100 * r['arrival_alloc']:.1f}% | {r['wait_p99']:,.0f} |", flush=True)
        if args.only_large:
            continue
        print(f"\nscoring {scoring}, {2 * args.nodes:,} vs {args.nodes:,} nodes: ratio of CPU us/decision "
              f"{rows[1]['us_per_decision'] / rows[0]['us_per_decision']:.2f}, of CPU us/job "
              f"{(rows[1]['cpu_s'] / rows[1]['jobs']) / (rows[0]['cpu_s'] / rows[0]['jobs']):.2f}\n", flush=True)


if __name__ == "__main__":
    main()
