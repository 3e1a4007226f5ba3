"""``python -m lab01_cluster_sim gang-demo``: naive deadlock versus gang scheduling, side by side."""

from __future__ import annotations

import argparse
import math
import sys

from lab01_cluster_sim.options import positive_float, positive_int
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.model import format_seconds
from lab01_cluster_sim.registry import check_policy_name
from lab01_cluster_sim.scenarios import textbook_gang
from lab01_cluster_sim.metrics import SimulationResult
from lab01_cluster_sim.simulate import simulate

NAME = "gang-demo"
HELP = "show naive placement deadlocking and gang scheduling completing on the textbook case"
DESCRIPTION = """\
The textbook gang case: 4 nodes x 4 GPUs; an inference service holds one GPU on every
node, so 12 GPUs are free, 3 per node. Two training jobs of 8 GPUs each (8 workers x 1 GPU
by default) arrive together. Either fits alone, so they could run one after the other.

naive: workers are bound one at a time, round-robin over the two jobs, as a Kubernetes
       scheduler without coscheduling does; each job ends up holding 6 GPUs and waiting for
       2 more that will never come: deadlock, detected and reported.
gang:  a job is placed all-or-nothing; train-a runs first, train-b after it.

examples:
  python -m lab01_cluster_sim gang-demo
  python -m lab01_cluster_sim gang-demo --workers 4 --gpus-per-worker 2 \\
      --policy worst-fit
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workers", type=positive_int(max_value=12), default=8,
                        help="workers per training job, 1 to 12 (default %(default)s)")
    parser.add_argument("--gpus-per-worker", type=positive_int(max_value=3), default=1,
                        help="GPUs per worker, 1 to 3 (default %(default)s); workers x GPUs must be <= 12")
    parser.add_argument("--duration", type=positive_float(max_value=1e7), default=100.0,
                        help="run time of each job, s, > 0 and <= 1e7 (default %(default)s)")
    parser.add_argument("--policy", default="best-fit", help="placement policy (default %(default)s)")


def _holdings(result: SimulationResult) -> list[str]:
    lines = []
    for rec in result.records.values():
        where = rec.placements or list(rec.last_placements)
        per_node: dict[str, list[int]] = {}
        for p in where:
            per_node.setdefault(p.node, []).extend(p.gpus)
        held = ", ".join(f"{n}[{','.join(map(str, sorted(g)))}]" for n, g in sorted(per_node.items()))
        gpus = sum(len(p.gpus) for p in where)
        lines.append(f"  {rec.job_id:<10} {rec.state.value:<9} {gpus:>2}/{rec.job.num_gpus} GPUs  {held}")
    return lines


def demo(workers: int = 8, gpus_per_worker: int = 1, duration: float = 100.0, policy: str = "best-fit",
         out=None) -> tuple[SimulationResult, SimulationResult]:
    """Run the textbook case in naive and gang mode, print both to ``out`` (default
    stdout) and return (naive, gang).

    Raises:
        InputError: a job shape that does not fit the 12 free GPUs, or a bad option.
    """
    if workers < 1 or gpus_per_worker < 1:
        raise InputError(f"--workers and --gpus-per-worker must be >= 1, got {workers} and {gpus_per_worker}")
    if gpus_per_worker > 3:
        raise InputError(f"--gpus-per-worker {gpus_per_worker}: at most 3 (each node has 3 free GPUs)")
    if not 0 < duration < math.inf:
        raise InputError(f"--duration: expected a finite number of seconds > 0, got {duration}")
    check_policy_name(policy)  # validate early, with the list of known names
    sc = textbook_gang(workers, gpus_per_worker, duration)
    naive = simulate(sc.nodes, sc.jobs, policy=policy, mode="naive")
    gang = simulate(sc.nodes, sc.jobs, policy=policy, mode="gang")
    out = sys.stdout if out is None else out

    def p(*lines: str) -> None:
        for line in lines:
            print(line, file=out)

    p("Cluster: 4 nodes x 4 GPUs; 'inference' holds 1 GPU per node -> 12 free GPUs, 3 per node.")
    p(f"Jobs: train-a and train-b, {workers} workers x {gpus_per_worker} GPU(s) = {workers * gpus_per_worker} "
      f"GPUs each, {format_seconds(duration)} s, both submitted at t=1 s. Policy: {policy}.")
    p("")
    p("== naive (one worker at a time, round-robin, partial allocations held) ==")
    p(*_holdings(naive))
    if naive.deadlock is not None:
        p(str(naive.deadlock))
    else:
        p(f"  no deadlock; run ended at t={format_seconds(naive.end_time)} s")
    p("")
    p("== gang (all-or-nothing) ==")
    for rec in gang.records.values():
        if rec.job_id.startswith("train"):
            p(f"  {rec.job_id:<10} {rec.state.value:<9} start t={format_seconds(rec.start_time)} s, "
              f"end t={format_seconds(rec.end_time)} s, waited {format_seconds(rec.wait)} s")
    if gang.deadlock is None:
        ends = [r.end_time for r in gang.records.values() if r.end_time is not None]
        p(f"  both complete; makespan {format_seconds(max(ends) - 1)} s from their submission")
    return naive, gang


def run(args: argparse.Namespace) -> int:
    demo(args.workers, args.gpus_per_worker, args.duration, args.policy)
    return 0
