"""``python -m lab01_cluster_sim compare``: the FGD paper's policy comparison table."""

from __future__ import annotations

import argparse
import csv
import io
import json
import re
import sys
from collections.abc import Sequence

from lab01_cluster_sim.commands._options import seed
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.policies.base import policy_names
from lab01_cluster_sim.replay import DEFAULT_INFLATION, PAPER_POLICIES, PolicySummary, compare, summarise

NAME = "compare"
HELP = "replay a trace with several placement policies and seeds; print the allocation table"
DESCRIPTION = """\
Replay a pod list on a cluster as the FGD paper (Weng et al., ATC'23) does: shuffle with the
seed, inflate to --inflation x the cluster's GPU capacity, try each pod once, never retry.
Prints, per policy, the mean GPU allocation ratio at 100% and at the end of the arrivals,
its sd over seeds, failed pods, unallocated GPUs and fragmentation.

Without --trace it runs on the embedded synthetic openb-like workload (48 nodes). With
--trace DIR (the folder holding the Alibaba openb CSVs) it uses
openb_node_list_gpu_node.csv and a pod list (--pod-list, default 'default').

examples:
  python -m lab01_cluster_sim compare
  python -m lab01_cluster_sim compare --trace ../shared/data/alibaba-gpu-2023/csv --seeds 42-51
  python -m lab01_cluster_sim compare --trace DIR --pod-list gpushare40 --policies best-fit,fgd
  python -m lab01_cluster_sim compare --format csv --plot alloc.png
"""


def parse_seeds(text: str) -> tuple[int, ...]:
    """``"42"``, ``"42,43"``, ``"42-51"`` or a mix (``"42-44,50"``) -> the seeds in order.

    Raises:
        InputError: not of that form (seeds are integers >= 0), or a range whose end is
            below its start.
    """
    seeds: list[int] = []
    for part in text.split(","):
        m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if m is None or (m.group(2) is not None and int(m.group(2)) < int(m.group(1))):
            raise InputError(f"--seeds {text!r}: expected integers >= 0 or ranges like 42,43 or 42-51, got {part!r}")
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) is not None else lo
        seeds.extend(range(lo, hi + 1))
    return tuple(seeds)


def parse_policies(text: str) -> tuple[str, ...]:
    """Comma list of policy names, each checked against the registry.

    Raises:
        InputError: empty or unknown name (the message lists the known ones).
    """
    names = tuple(p.strip() for p in text.split(",") if p.strip())
    if not names:
        raise InputError("--policies: expected a comma-separated list of policy names")
    known = policy_names()
    for name in names:
        if name not in known:
            raise InputError(f"--policies: unknown policy {name!r}; expected one of: {', '.join(known)}")
    return names


def _inflation(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number such as 1.3, got {text!r}") from None
    if not 0 < value <= 10:
        raise argparse.ArgumentTypeError(f"expected a multiple of capacity in (0, 10], got {value}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--trace", metavar="DIR", help="folder with the openb CSVs (default: the synthetic workload)")
    parser.add_argument("--pod-list", default=None, metavar="NAME",
                        help="pod list in --trace: 'default', a variant such as 'gpushare40', or a file name")
    parser.add_argument("--node-list", default="openb_node_list_gpu_node.csv", metavar="FILE",
                        help="node list in --trace (default: %(default)s, the paper's cluster)")
    parser.add_argument("--policies", default=",".join(PAPER_POLICIES),
                        help="comma-separated policies (default: the paper's six: %(default)s)")
    parser.add_argument("--seeds", default="42", help="seeds: 42, 42,43 or 42-51 (default: %(default)s)")
    parser.add_argument("--inflation", type=_inflation, default=DEFAULT_INFLATION,
                        help="arrived GPU request as a multiple of the cluster GPU capacity (default: %(default)s)")
    parser.add_argument("--workload-seed", type=seed, default=0,
                        help="seed of the synthetic workload when no --trace is given (default: %(default)s)")
    parser.add_argument("--format", choices=("table", "csv", "json"), default="table", help="output format")
    parser.add_argument("--plot", metavar="FILE", help="also save the allocation-vs-arrived figure (png, svg, pdf)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar and no notes on stderr")


COLUMNS = ("policy", "alloc_100", "alloc_end", "alloc_end_sd", "failed_pods", "unallocated_gpus", "frag_pct",
           "frag_ratio_pct")


def format_rows(rows: Sequence[PolicySummary], fmt: str) -> str:
    """The comparison as an aligned text table, CSV or JSON (columns :data:`COLUMNS`)."""
    if fmt == "json":
        return json.dumps([{c: getattr(r, c) for c in (*COLUMNS, "seeds", "x_end")} for r in rows], indent=2)
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow([*COLUMNS, "x_end", "seeds"])
        for r in rows:
            w.writerow([r.policy, *(f"{getattr(r, c):.4f}" for c in COLUMNS[1:]), r.x_end,
                        " ".join(map(str, r.seeds))])
        return buf.getvalue().rstrip("\n")
    x_end = rows[0].x_end if rows else 130
    head = ("policy", "alloc@100 %", f"alloc@{x_end} %", "sd", "failed pods", "unalloc GPUs", "frag %",
            "frag ratio %")
    body = [(r.policy, f"{r.alloc_100:.2f}", f"{r.alloc_end:.2f}",
             f"{r.alloc_end_sd:.2f}" if len(r.seeds) > 1 else "-", f"{r.failed_pods:.1f}",
             f"{r.unallocated_gpus:.1f}", f"{r.frag_pct:.2f}", f"{r.frag_ratio_pct:.1f}") for r in rows]
    widths = [max(len(row[i]) for row in (head, *body)) for i in range(len(head))]
    lines = ["  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths)))
             for row in (head, *body)]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    seeds = parse_seeds(args.seeds)
    policies = parse_policies(args.policies)
    if args.trace:
        from lab01_cluster_sim.workloads.openb import load_trace

        nodes, pods = load_trace(args.trace, args.pod_list, args.node_list)
        jobs = list(pods.jobs)
        label = f"{pods.path.name} on {args.node_list}"
    else:
        if args.pod_list:
            raise InputError("--pod-list needs --trace DIR (the folder holding the openb CSVs)")
        from lab01_cluster_sim.workloads.synthetic import default_trace

        trace = default_trace(args.workload_seed)
        nodes, jobs = list(trace.nodes), list(trace.jobs)
        label = trace.description
    if not args.quiet:
        print(f"{label}; {len(policies)} policies x {len(seeds)} seeds, inflation {args.inflation}", file=sys.stderr)
    with tqdm(total=len(policies) * len(seeds), desc="replays", unit="run", file=sys.stderr,
              disable=True if args.quiet else None) as bar:
        results = compare(nodes, jobs, policies, seeds, args.inflation, progress=bar.update)
    rows = [summarise(p, results[p]) for p in policies]
    print(format_rows(rows, args.format))
    if args.plot:
        from lab01_cluster_sim.plots.replay import plot_alloc_vs_arrived

        fig = plot_alloc_vs_arrived(results, title=label)
        try:
            fig.savefig(args.plot, dpi=120, bbox_inches="tight")
        except (OSError, ValueError) as exc:
            raise InputError(f"--plot {args.plot}: cannot save the figure: {exc}") from None
        if not args.quiet:
            print(f"figure written to {args.plot}", file=sys.stderr)
    return 0
