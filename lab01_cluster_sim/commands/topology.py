"""``python -m lab01_cluster_sim topology``: wait for one NVLink island, or span islands and run slower."""

from __future__ import annotations

import argparse
import math

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
mean JCT and how many jobs spanned islands, on the seeded demo workload (see
`disciplines --help`) in which a job of g GPUs is a gang of g one-GPU workers (one pod per
GPU), so the scheduler can spread it over islands. --island-size N groups N nodes into one NVLink domain (9 nodes of 8
GPUs = a 72-GPU NVL72-style rack).

examples:
  python -m lab01_cluster_sim topology
  python -m lab01_cluster_sim topology --max-waits 0,600,3600,inf --comm-fraction 0.3 --plot topo.png
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
    parser.add_argument("--seed", type=seed, default=0, help="workload seed (default %(default)s)")
    parser.add_argument("--allreduce-gb", type=positive_float(), default=None,
                        help="also print one all-reduce's time for this many GB of gradients")
    parser.add_argument("--gpus", type=positive_int(max_value=1_000_000), default=16, help="ring size for --allreduce-gb (default %(default)s)")
    parser.add_argument("--format", default="table", choices=("table", "csv", "json"), help="output format")
    parser.add_argument("--plot", metavar="FILE", help="save the wait-vs-slowdown figure")


def run(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from lab01_cluster_sim.disciplines.demo import demo_cluster, demo_jobs
    from lab01_cluster_sim.sweep import format_rows
    from lab01_cluster_sim.topology import TopologyParams, allreduce_seconds, compare_wait_vs_slowdown

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
    jobs = demo_jobs(args.seed, args.jobs, gpus_per_node=args.gpus_per_node, mean_interarrival_s=args.interarrival,
                     one_gpu_workers=True)
    rows = compare_wait_vs_slowdown(nodes, jobs, waits, default_comm_fraction=args.comm_fraction, params=params)
    print(format_rows([asdict(r) for r in rows], args.format), end="")
    if args.plot:
        from lab01_cluster_sim.plots.topology import wait_vs_slowdown_figure

        wait_vs_slowdown_figure(rows).savefig(args.plot, dpi=120)
    return 0 if all(math.isfinite(r.mean_wait_s) for r in rows) else 1
