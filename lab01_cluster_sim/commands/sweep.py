"""``python -m lab01_cluster_sim sweep``: run a grid of (policy, workload, seed, parameters) in parallel."""

from __future__ import annotations

import argparse
import sys

from lab01_cluster_sim.errors import InputError

NAME = "sweep"
HELP = "run a grid of (policy, workload, seed, parameters) in parallel processes or on Dask; one tidy CSV"
DESCRIPTION = """\
Runs every combination of --policies x --workloads x --seeds x each --param KEY=V1,V2 in
worker processes (--workers, default: all CPUs) or on a Dask distributed cluster
(--dask local for a local cluster, or --dask tcp://scheduler:8786; needs dask[distributed]).
Writes one tidy CSV (one row per run: its parameters, its metrics, status and error) to
--output or stdout, with a progress bar on stderr. A run that fails is reported in its
row and the sweep goes on; the exit status is 1 if any run failed.

Runners:
  disciplines  the queue-discipline runner on the seeded demo workload; --policies are
               disciplines (fifo, fifo-skip, priority, drf, backfill), --workloads are job
               counts; params: nodes, gpus_per_node, interarrival
  replay       the paper's replay; --policies are placement policies, --workloads are
               'synthetic' or DIR[:POD_LIST] (a folder of openb CSVs); param: inflation
  simulate     the core timed simulation on its synthetic workload; --workloads are job
               counts, --policies placement policies; params: nodes, discipline, mode,
               interarrival, gang_share

The fragmentation paper's full grid is 6 policies x 17 workloads x 10 seeds = 1,020 runs.

examples:
  python -m lab01_cluster_sim sweep --policies fifo,fifo-skip,backfill --seeds 0-9 --output sweep.csv
  python -m lab01_cluster_sim sweep --policies backfill --param interarrival=300,400,600 --workers 2
  python -m lab01_cluster_sim sweep --policies fifo,drf --seeds 0-3 --dask local --workers 2
  python -m lab01_cluster_sim sweep --runner replay --workloads synthetic --policies best-fit,fgd --seeds 42-51
  python -m lab01_cluster_sim sweep --runner replay --trace ../shared/data/alibaba-gpu-2023/csv --workloads all \
      --policies random,dot-prod,gpu-clustering,gpu-packing,best-fit,fgd --seeds 42-51 --output grid.csv
  python -m lab01_cluster_sim sweep --runner simulate --workloads 2000 --policies best-fit --param discipline=fifo,backfill
"""


def _seeds(text: str) -> list[int]:
    out: list[int] = []
    try:
        for part in text.split(","):
            part = part.strip()
            if not part:
                continue
            if "-" in part[1:]:
                a, b = part.split("-", 1) if not part.startswith("-") else (part, "")
                out.extend(range(int(a), int(b) + 1))
            else:
                out.append(int(part))
    except ValueError:
        raise InputError(f"--seeds {text!r}: expected integers or ranges like 42-51, comma-separated") from None
    if not out:
        raise InputError(f"--seeds {text!r}: expected at least one seed")
    return out


def _check_writable(path: str) -> None:
    """Fail before any run when --output cannot be written (the runs would be lost)."""
    import os
    from pathlib import Path

    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise InputError(f"--output {path}: folder {parent} does not exist")
    if p.is_dir():
        raise InputError(f"--output {path}: is a folder; expected a file name")
    if not os.access(parent, os.W_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise InputError(f"--output {path}: not writable")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from lab01_cluster_sim.commands._options import nonnegative_int
    from lab01_cluster_sim.sweep import RUNNERS

    parser.add_argument("--runner", default="disciplines", choices=RUNNERS, help="what each run does (default %(default)s)")
    parser.add_argument("--policies", default="fifo,fifo-skip,priority,drf,backfill", help="comma-separated")
    parser.add_argument("--workloads", default="200", help="comma-separated (default %(default)s)")
    parser.add_argument("--trace", metavar="DIR",
                        help="replay runner: folder of the openb CSVs; --workloads are then pod-list names "
                             "(default, gpushare40, ...) or 'all' for every openb_pod_list_*.csv there")
    parser.add_argument("--seeds", default="0-2", help="seeds: '42-51' or '1,2,3' (default %(default)s)")
    parser.add_argument("--param", action="append", default=[], metavar="KEY=V1,V2",
                        help="an extra grid axis passed to each run (repeatable)")
    parser.add_argument("--workers", type=nonnegative_int(max_value=1024), default=0, help="worker processes (0 = all CPUs, 1 = no pool)")
    parser.add_argument("--dask", metavar="ADDRESS", help="'local' or a Dask scheduler address")
    parser.add_argument("--output", metavar="FILE", help="CSV file (default: stdout)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    from lab01_cluster_sim.sweep import grid, parse_param, run_sweep

    if args.workers < 0:
        raise InputError(f"--workers must be >= 0, got {args.workers}")
    params = dict(parse_param(p) for p in args.param)
    workloads = [w for w in args.workloads.split(",") if w]
    if args.trace:
        from pathlib import Path

        if args.runner != "replay":
            raise InputError("--trace goes with --runner replay")
        folder = Path(args.trace)
        if not folder.is_dir():
            raise InputError(f"--trace {args.trace!r}: not a folder")
        if workloads == ["all"]:
            workloads = sorted(p.name.removeprefix("openb_pod_list_").removesuffix(".csv")
                               for p in folder.glob("openb_pod_list_*.csv"))
            if not workloads:
                raise InputError(f"--trace {args.trace!r}: no openb_pod_list_*.csv files there")
        workloads = [f"{folder}:{w}" for w in workloads]
    if args.output:
        _check_writable(args.output)
    specs = grid(args.runner, [p for p in args.policies.split(",") if p], workloads, _seeds(args.seeds), params)
    result = run_sweep(specs, workers=args.workers, dask=args.dask, quiet=args.quiet)
    text = result.to_csv()
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    if result.failed:
        print(f"{result.failed} of {len(result.rows)} runs failed (see the status and error columns)", file=sys.stderr)
        return 1
    return 0
