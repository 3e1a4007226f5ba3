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
--output or stdout, with a progress bar on stderr, and says what it wrote. Every policy,
workload and parameter is checked against the runner before anything runs. A run that
fails is reported in its row and the sweep goes on; the exit status is 1 if any run failed.

Runners (default policies and workloads in brackets):
  disciplines  the queue-discipline runner on the seeded demo workload; --policies are
               disciplines [fifo,fifo-skip,priority,drf,backfill], --workloads are job
               counts [300]; params: nodes [4], gpus_per_node [8], interarrival [300 s],
               the disciplines command's defaults
  replay       the paper's replay; --policies are placement policies [the textbook three and
               the paper's five, as compare; the paper's six with --trace], --workloads are
               'synthetic' or DIR[:POD_LIST], a folder of openb CSVs [synthetic];
               params: inflation, workload_seed
  simulate     the core timed simulation on its synthetic workload; --policies are placement
               policies [first-fit,best-fit,worst-fit], --workloads are job counts [2000];
               params: nodes [20], load [2], discipline [fifo-skip], mode [gang],
               interarrival [from load], gang_share [0], the simulate command's defaults

Numbers are checked against the matching command's bounds before anything runs
(nodes=0, interarrival=nan or --workloads 10000000 for simulate are refused).

Seeds, as in the matching command, so a row reproduces that command's run:
  replay       --seeds seed the replay (order, ties, random policies) like compare --seeds;
               the synthetic workload is seeded by --param workload_seed (default 0) like
               compare --workload-seed, so it is the same pods for every replay seed
  simulate     --seeds seed the workload and the run together, like simulate --seed
  disciplines  --seeds seed the demo workload, like disciplines --seed

Numbers in the CSV carry no float noise (12 significant digits); a figure a run cannot
give is an empty cell. Times are in seconds (columns ending in _s); alloc_* and *_pct
columns are in %, ratios (utilisation, *_allocation_ratio) in [0, 1].

The fragmentation paper's full grid is 6 policies x 17 workloads x 10 seeds = 1,020 runs.

examples:
  python -m lab01_cluster_sim sweep --policies fifo,fifo-skip,backfill \\
      --seeds 0-9 --output sweep.csv
  python -m lab01_cluster_sim sweep --policies backfill \\
      --param interarrival=300,400,600 --workers 2
  python -m lab01_cluster_sim sweep --policies fifo,drf --seeds 0-3 \\
      --dask local --workers 2
  python -m lab01_cluster_sim sweep --runner replay --seeds 42-51 \\
      --output replay.csv
  python -m lab01_cluster_sim sweep --runner replay \\
      --trace ../shared/data/alibaba-gpu-2023/csv --workloads paper \\
      --policies random,dot-prod,gpu-clustering,gpu-packing,best-fit,fgd \\
      --seeds 42-51 --output grid.csv        # the FGD paper's grid: 1,020 replays
  python -m lab01_cluster_sim sweep --runner simulate --workloads 2000 \\
      --policies best-fit --param discipline=fifo,backfill
"""


def _check_writable(path: str) -> None:
    """Fail before any run when --output cannot be written (the runs would be lost)."""
    from lab01_cluster_sim.commands._options import check_output_path

    check_output_path(path, "--output")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from lab01_cluster_sim.commands._options import nonnegative_int
    from lab01_cluster_sim.commands.compare import MAX_SEEDS
    from lab01_cluster_sim.sweep import RUNNERS

    parser.add_argument("--runner", default="disciplines", choices=RUNNERS, help="what each run does (default %(default)s)")
    parser.add_argument("--policies", default=None,
                        help="comma-separated; queue disciplines for the disciplines runner, placement policies "
                             "for replay and simulate (default: see Runners above)")
    parser.add_argument("--workloads", default=None,
                        help="comma-separated (default: 300 jobs for disciplines, synthetic for replay, 2000 jobs "
                             "for simulate)")
    parser.add_argument("--trace", metavar="DIR",
                        help="replay runner: folder of the openb CSVs (python -m lab01_cluster_sim fetch-trace DIR "
                             "gets them); --workloads are then pod-list names (default, gpushare40, ...), 'paper' "
                             "for the FGD paper's 17, or 'all' for every openb_pod_list_*.csv there (default: default)")
    parser.add_argument("--seeds", default="0-2",
                        help=f"seeds: 42, 1,2,3 or 42-51, each once, at most {MAX_SEEDS} (default %(default)s)")
    parser.add_argument("--param", action="append", default=[], metavar="KEY=V1,V2",
                        help="an extra grid axis passed to each run (repeatable)")
    parser.add_argument("--workers", type=nonnegative_int(max_value=1024), default=0, help="worker processes (0 = all CPUs, 1 = no pool)")
    parser.add_argument("--dask", metavar="ADDRESS", help="'local' or a Dask scheduler address")
    parser.add_argument("--output", metavar="FILE", help="CSV file (default: stdout)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar and no notes on stderr")


def _names(text: str | None, option: str) -> list[str] | None:
    if text is None:
        return None
    names = [p.strip() for p in text.split(",") if p.strip()]
    if not names:
        raise InputError(f"{option} {text!r}: expected a comma-separated list")
    dup = sorted({x for x in names if names.count(x) > 1})
    if dup:
        raise InputError(f"{option}: each once, got {', '.join(dup)} more than once")
    return names


def _write_whole(path: str, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file beside it, renamed into place, so
    an interrupted or failed write never leaves a half-written CSV."""
    import os
    import tempfile

    folder = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".sweep-", suffix=".csv.part", dir=folder)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)  # as open() would have made it, not mkstemp's 0600
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as exc:
        raise InputError(f"--output {path}: cannot write: {exc.strerror or exc}") from None


def run(args: argparse.Namespace) -> int:
    from lab01_cluster_sim.commands.compare import parse_seeds
    from lab01_cluster_sim.sweep import RUNNER_DEFAULT_WORKLOADS, default_policies, grid, param_texts, parse_param, run_sweep

    params = dict(parse_param(p) for p in args.param)
    typed = dict(param_texts(p) for p in args.param)
    policies = _names(args.policies, "--policies") or list(default_policies(args.runner, trace=bool(args.trace)))
    workloads = _names(args.workloads, "--workloads")
    if args.trace:
        from lab01_cluster_sim.workloads.openb import check_trace_folder

        if args.runner != "replay":
            raise InputError(f"--trace goes with --runner replay, got --runner {args.runner}")
        folder = check_trace_folder(args.trace)
        workloads = workloads or ["default"]
        if workloads == ["paper"]:
            from lab01_cluster_sim.replay import PAPER_POD_LISTS

            workloads = list(PAPER_POD_LISTS)
        if workloads == ["all"]:
            workloads = sorted(p.name.removeprefix("openb_pod_list_").removesuffix(".csv")
                               for p in folder.glob("openb_pod_list_*.csv"))
            if not workloads:
                raise InputError(f"--trace {args.trace!r}: no openb_pod_list_*.csv files there")
        workloads = [f"{folder}:{w}" for w in workloads]
    workloads = workloads or list(RUNNER_DEFAULT_WORKLOADS[args.runner])
    seeds = parse_seeds(args.seeds)
    if args.output:
        _check_writable(args.output)
    specs = grid(args.runner, policies, workloads, seeds, params, typed)
    if args.trace and not args.quiet:
        names = ", ".join(w.rsplit(":", 1)[1] for w in workloads)
        print(f"{len(specs)} runs; each worker loads the pod lists it replays ({names}) and "
              f"openb_node_list_gpu_node.csv from {args.trace}", file=sys.stderr, flush=True)
    result = run_sweep(specs, workers=args.workers, dask=args.dask, quiet=args.quiet)
    text = result.to_csv()
    if args.output:
        _write_whole(args.output, text)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()  # the rows before the notes, also when both go to one terminal
    failed = result.failed
    if not args.quiet:
        axes = (f"{len(policies)} polic{'y' if len(policies) == 1 else 'ies'} x {len(workloads)} "
                f"workload{'' if len(workloads) == 1 else 's'} x {len(seeds)} seed{'' if len(seeds) == 1 else 's'}"
                + "".join(f" x {len(v)} {k} value{'' if len(v) == 1 else 's'}" for k, v in sorted(params.items())))
        runs = f"{len(result.rows)} run{'' if len(result.rows) == 1 else 's'}"
        print(f"wrote {runs} ({axes}; {len(result.rows) - failed} ok, {failed} failed) "
              f"to {args.output or 'stdout'}", file=sys.stderr)
    if failed:
        print(f"{failed} of {len(result.rows)} runs failed (see the status and error columns)", file=sys.stderr)
        return 1
    return 0
