"""``python -m lab01_cluster_sim topology``: wait for one NVLink island, or span islands and run slower."""

from __future__ import annotations

import argparse
import math
import textwrap

from lab01_cluster_sim.errors import InputError

NAME = "topology"
HELP = "NVLink islands: ring all-reduce cost and the trade-off between waiting for one island and running slower"
DESCRIPTION = """\
A job whose GPUs span NVLink islands all-reduces over the slower inter-island network.
Ring all-reduce moves 2(n-1)/n of the gradient bytes over the slowest link. Across islands
NCCL spreads its rings over the NICs of the job's GPUs (one port each), so the link is
min(NVLink per GPU, rails x port), rails = the job's GPUs in its smallest island. A job that
spends a fraction f of its time communicating inside one island runs (1 - f) + f x
intra/inter times longer across islands (defaults, per direction: NVLink 450 GB/s per H100
GPU, InfiniBand NDR 50 GB/s per 400 Gb/s port: 8 + 8 GPUs cross at 400 GB/s, 7 + 1 at 50).

The topology-aware placement prefers one island and waits at most --max-waits seconds for
it before spanning. For each bound this prints mean wait, mean slowdown of multi-GPU jobs,
mean JCT (and its standard error over the seeds) and how many jobs spanned islands, on the seeded
demo workload (see `disciplines --help`) in which a job of g GPUs is a gang of g one-GPU
workers (one pod per GPU), so the scheduler can spread it over islands, averaged over
--seeds workloads. One workload alone need not be monotonic in the bound: where one job
starts changes the whole queue behind it. --island-size N groups N nodes into one NVLink
domain (9 nodes of 8 GPUs = a 72-GPU NVL72-style rack).

examples:
  python -m lab01_cluster_sim topology
  python -m lab01_cluster_sim topology --max-waits 0,600,3600,inf \\
      --comm-fraction 0.3 --plot topo.png
  python -m lab01_cluster_sim topology --allreduce-gb 10 --gpus 16
"""


def _floats(text: str, opt: str) -> list[float]:
    try:
        vals = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise InputError(f"{opt} {text!r}: expected comma-separated numbers (inf allowed)") from None
    if not vals or any(not v >= 0 for v in vals):   # also rejects NaN
        raise InputError(f"{opt} {text!r}: expected comma-separated numbers >= 0 (inf = no bound)")
    return vals


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from lab01_cluster_sim.commands._options import fraction, positive_float, positive_int, seed
    from lab01_cluster_sim.topology import INFINIBAND_NDR_GBPS, NVLINK_H100_GBPS

    parser.add_argument("--max-waits", default="0,300,1800,inf", help="bounded waits to compare, s (default %(default)s)")
    parser.add_argument("--comm-fraction", type=fraction, default=0.2,
                        help="share of step time in all-reduce inside one island (default %(default)s)")
    parser.add_argument("--intra-gbps", type=positive_float(), default=NVLINK_H100_GBPS,
                        help="NVLink GB/s per GPU, per direction (default %(default)s: H100)")
    parser.add_argument("--inter-gbps", type=positive_float(), default=INFINIBAND_NDR_GBPS,
                        help="inter-island GB/s per GPU, per direction (default %(default)s: InfiniBand NDR 400 Gb/s)")
    parser.add_argument("--island-size", type=positive_int(max_value=10_000), default=1, help="nodes per NVLink island (default %(default)s)")
    parser.add_argument("--nodes", type=positive_int(max_value=10_000), default=4, help="nodes (default %(default)s)")
    parser.add_argument("--gpus-per-node", type=positive_int(max_value=64), default=8, help="GPUs per node (default %(default)s)")
    parser.add_argument("--jobs", type=positive_int(max_value=100_000), default=300, help="jobs (default %(default)s)")
    parser.add_argument("--interarrival", type=positive_float(), default=400.0, help="mean gap between arrivals, s")
    parser.add_argument("--seed", type=seed, default=0, help="first workload seed (default %(default)s)")
    parser.add_argument("--seeds", type=positive_int(max_value=100), default=3,
                        help="workloads averaged, seeds SEED..SEED+N-1 (default %(default)s)")
    parser.add_argument("--allreduce-gb", type=positive_float(), default=None,
                        help="also print one all-reduce's time for this many GB of gradients")
    parser.add_argument("--gpus", type=positive_int(max_value=1_000_000), default=16, help="ring size for --allreduce-gb (default %(default)s)")
    parser.add_argument("--format", default="table", choices=("table", "csv", "json"), help="output format")
    parser.add_argument("--plot", metavar="FILE", help="save the wait-vs-slowdown figure")


def run(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from lab01_cluster_sim.commands._progress import steps, wrote
    from lab01_cluster_sim.disciplines.demo import demo_cluster, demo_jobs
    from lab01_cluster_sim.sweep import format_rows
    from lab01_cluster_sim.studies.topology import compare_wait_vs_slowdown
    from lab01_cluster_sim.topology import TopologyParams, allreduce_seconds

    if args.plot:
        from lab01_cluster_sim.plots.dashboard import check_figure_path

        check_figure_path(args.plot, "--plot")
    waits = _floats(args.max_waits, "--max-waits")
    if not 0.0 <= args.comm_fraction <= 1.0:
        raise InputError(f"--comm-fraction must be in [0, 1], got {args.comm_fraction}")
    for opt, val in (("--nodes", args.nodes), ("--gpus-per-node", args.gpus_per_node), ("--jobs", args.jobs),
                     ("--island-size", args.island_size), ("--gpus", args.gpus)):
        if val < 1:
            raise InputError(f"{opt} must be >= 1, got {val}")
    if not (args.intra_gbps > 0 and args.inter_gbps > 0):
        raise InputError(f"--intra-gbps and --inter-gbps must be > 0, got {args.intra_gbps}, {args.inter_gbps}")
    params = TopologyParams(args.intra_gbps, args.inter_gbps)
    if args.allreduce_gb is not None:
        grad = args.allreduce_gb * 1e9
        one = allreduce_seconds(grad, args.gpus, 1, params)
        line = f"ring all-reduce of {args.allreduce_gb:g} GB over {args.gpus} GPUs: {one * 1e3:.2f} ms in one island"
        if args.gpus >= 2:
            even = args.gpus // 2
            two = allreduce_seconds(grad, args.gpus, 2, params)
            lop = allreduce_seconds(grad, args.gpus, 2, params, rails=1)
            line += (f"; across two islands split {args.gpus - even} + {even}: {two * 1e3:.2f} ms "
                     f"(x{two / one:.4g})")
            if even > 1:
                line += f"; split {args.gpus - 1} + 1: {lop * 1e3:.2f} ms (x{lop / one:.4g})"
        print(line)
    nodes = demo_cluster(args.nodes, args.gpus_per_node, island_size=args.island_size)
    per_seed: list[list] = []
    runs = [(s, w) for s in range(args.seed, args.seed + args.seeds) for w in waits]
    current: dict[int, list] = {}
    workloads: dict[int, list] = {}
    for s, w in steps(runs, "topology", total=len(runs)):
        if s not in workloads:
            workloads[s] = demo_jobs(s, args.jobs, gpus_per_node=args.gpus_per_node,
                                     mean_interarrival_s=args.interarrival, one_gpu_workers=True)
        (row,) = compare_wait_vs_slowdown(nodes, workloads[s], [w], default_comm_fraction=args.comm_fraction,
                                          params=params)
        current.setdefault(s, []).append(row)
    per_seed = [current[s] for s in sorted(current)]
    rows = mean_rows(per_seed)
    se = jct_standard_error(per_seed)
    table = [asdict(r) | {"jct_se_s": e} for r, e in zip(rows, se)]
    if args.format == "csv":    # "never span" stays readable (a CSV cell drops infinities)
        table = [t | {"max_wait_s": "inf"} if math.isinf(t["max_wait_s"]) else t for t in table]
    units = {"mean_wait_s": "duration", "mean_jct_s": "duration", "jct_se_s": "duration", "makespan_s": "duration",
             "mean_slowdown": "index", "spanning_jobs": "mean", "multi_gpu_jobs": "mean", "slowed_jobs": "mean"}
    print(format_rows(table, args.format, units=units), end="")
    if args.format == "table":
        best = min(range(len(rows)), key=lambda i: rows[i].mean_jct_s)
        name = ["inf" if math.isinf(r.max_wait_s) else f"{r.max_wait_s:g} s" for r in rows]
        close = [name[i] for i in range(len(rows)) if i != best and not clearly_longer(per_seed, i, best)]
        verdict = (f"not told apart from {', '.join(close)}" if close else
                   "shorter than every other bound's by more than twice the standard error of the paired "
                   "differences")
        over = (f"{args.seeds} workloads (seeds {args.seed}..{args.seed + args.seeds - 1})" if args.seeds > 1
                else f"1 workload (seed {args.seed})")
        se_note = ("jct_se: standard error of the mean JCT over them" if args.seeds > 1 else
                   "jct_se '-': a standard error needs 2 or more workloads")
        note = (f"Mean over {over}; {se_note}. Shortest mean JCT: wait bound {name[best]}, {verdict}. "
                "One workload alone is often not monotonic in the bound (where one job starts changes the whole "
                "queue behind it): compare bounds on the same workloads, and raise --seeds to tell close ones apart.")
        print(textwrap.fill(note, 78))
    if args.plot:
        from lab01_cluster_sim.plots.topology import wait_vs_slowdown_figure

        wait_vs_slowdown_figure(rows).savefig(args.plot, dpi=120)
        wrote(args.plot, "wait-versus-slowdown figure")
    return 0 if all(math.isfinite(r.mean_wait_s) for r in rows) else 1


def mean_rows(per_seed: list[list]) -> list:
    """Field-by-field means of the rows of several workloads (one list of rows per seed, the
    same bounds in the same order); counts become means too."""
    from dataclasses import fields

    from lab01_cluster_sim.studies.topology import TopologyRow

    out = []
    for rows in zip(*per_seed):
        values = {f.name: sum(getattr(r, f.name) for r in rows) / len(rows) for f in fields(TopologyRow)}
        values["max_wait_s"] = rows[0].max_wait_s
        out.append(TopologyRow(**values))
    return out


def clearly_longer(per_seed: list[list], i: int, best: int) -> bool:
    """True when bound ``i``'s mean JCT exceeds bound ``best``'s by more than twice the standard
    error of their paired differences (the same workloads under both bounds)."""
    import numpy as np

    d = np.array([rows[i].mean_jct_s - rows[best].mean_jct_s for rows in per_seed])
    if d.size < 2:
        return False
    return bool(d.mean() > 2 * d.std(ddof=1) / math.sqrt(d.size))


def jct_standard_error(per_seed: list[list]) -> list[float]:
    """Standard error over the seeds of each bound's mean JCT, s: the sample standard
    deviation (n - 1) / sqrt(n); NaN with one seed (none can be estimated from one
    workload; the table prints '-', CSV an empty cell, JSON null)."""
    import numpy as np

    out = []
    for rows in zip(*per_seed):
        v = np.array([r.mean_jct_s for r in rows])
        out.append(float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else math.nan)
    return out
