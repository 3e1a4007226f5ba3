"""``python -m lab01_cluster_sim compare``: the FGD paper's policy comparison table."""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import re
import sys
from collections.abc import Sequence

from lab01_cluster_sim.commands._options import MAX_SEED, seed
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.policies.base import policy_names
from lab01_cluster_sim.workloads.openb import DEFAULT_NODE_LIST
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


MAX_SEEDS = 100
"""Most seeds in one ``compare`` (each seed is one replay per policy)."""


def parse_seeds(text: str) -> tuple[int, ...]:
    """``"42"``, ``"42,43"``, ``"42-51"`` or a mix (``"42-44,50"``) -> the seeds in order.

    Raises:
        InputError: not of that form (seeds are integers from 0 to 2**32 - 1), a range
            whose end is below its start, a seed given twice, or more than
            :data:`MAX_SEEDS` seeds.
    """
    seeds: list[int] = []
    for part in text.split(","):
        m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if m is None or (m.group(2) is not None and int(m.group(2)) < int(m.group(1))):
            raise InputError(f"--seeds {text!r}: expected integers >= 0 or ranges like 42,43 or 42-51, got {part!r}")
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) is not None else lo
        if hi > MAX_SEED:
            raise InputError(f"--seeds {text!r}: seeds go from 0 to {MAX_SEED}, got {hi}")
        if hi - lo + 1 + len(seeds) > MAX_SEEDS:
            raise InputError(f"--seeds {text!r}: at most {MAX_SEEDS} seeds (each is one replay per policy)")
        seeds.extend(range(lo, hi + 1))
    dup = sorted({x for x in seeds if seeds.count(x) > 1})
    if dup:
        raise InputError(f"--seeds {text!r}: each seed once, got {', '.join(map(str, dup))} more than once")
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
    dup = sorted({x for x in names if names.count(x) > 1})
    if dup:
        raise InputError(f"--policies: each policy once, got {', '.join(dup)} more than once")
    return names


def _inflation(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number such as 1.3, got {text!r}") from None
    if not 0.01 <= value <= 10:  # (also rejects nan and inf)
        raise argparse.ArgumentTypeError(f"expected a multiple of capacity from 0.01 to 10, got {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--trace", metavar="DIR", help="folder with the openb CSVs (default: the synthetic workload)")
    parser.add_argument("--pod-list", default=None, metavar="NAME",
                        help="pod list in --trace: 'default', a variant such as 'gpushare40', or a file name")
    parser.add_argument("--node-list", default=None, metavar="FILE",
                        help=f"node list in --trace (default: {DEFAULT_NODE_LIST}, the paper's cluster)")
    parser.add_argument("--policies", default=",".join(PAPER_POLICIES),
                        help="comma-separated policies (default: the paper's six: %(default)s)")
    parser.add_argument("--seeds", default="42",
                        help=f"seeds: 42, 42,43 or 42-51, each once, at most {MAX_SEEDS} (default: %(default)s)")
    parser.add_argument("--inflation", type=_inflation, default=DEFAULT_INFLATION,
                        help="arrived GPU request as a multiple of the cluster GPU capacity, 0.01 to 10 "
                             "(default: %(default)s)")
    parser.add_argument("--workload-seed", type=seed, default=0,
                        help="seed of the synthetic workload when no --trace is given (default: %(default)s)")
    parser.add_argument("--format", choices=("table", "csv", "json"), default="table",
                        help="output format; a figure the run cannot give (alloc@100 when the load never "
                             "reached 100 %%, sd of one seed) is '-' in the table, empty in CSV, null in JSON")
    parser.add_argument("--plot", metavar="FILE", help="also save the allocation-vs-arrived figure (png, svg, pdf)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar and no notes on stderr")


COLUMNS = ("policy", "alloc_100", "alloc_end", "alloc_end_sd", "failed_pods", "unallocated_gpus", "frag_pct",
           "frag_ratio_pct")


def _num(x: float) -> float | None:
    """JSON-safe: NaN -> None (strict JSON has no NaN); 4 decimals, as the CSV."""
    return None if x is None or math.isnan(x) else round(x, 4)


def row_dict(r: PolicySummary) -> dict:
    """One policy's figures; None where the run cannot give one: ``alloc_100`` when the
    arrived load never reached 100 % (inflation below 1), ``alloc_end_sd`` with one seed."""
    d = {c: _num(getattr(r, c)) for c in COLUMNS[1:]}
    if len(r.seeds) < 2:
        d["alloc_end_sd"] = None
    return {"policy": r.policy, **d, "seeds": list(r.seeds), "x_end": r.x_end}


def format_rows(rows: Sequence[PolicySummary], fmt: str) -> str:
    """The comparison as an aligned text table, CSV or JSON (columns :data:`COLUMNS`).

    Missing figures (see :func:`row_dict`) are ``-`` in the table, empty in CSV and
    ``null`` in JSON. When the run ends at 100 % (``--inflation 1``) the table has one
    ``alloc@100 %`` column, not two identical ones.
    """
    dicts = [row_dict(r) for r in rows]
    if fmt == "json":
        return json.dumps(dicts, indent=2, allow_nan=False)
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow([*COLUMNS, "x_end", "seeds"])
        for d in dicts:
            w.writerow([d["policy"], *("" if d[c] is None else f"{d[c]:.4f}" for c in COLUMNS[1:]), d["x_end"],
                        " ".join(map(str, d["seeds"]))])
        return buf.getvalue().rstrip("\n")
    x_end = rows[0].x_end if rows else 130

    def f(x: float | None, spec: str) -> str:
        return "-" if x is None else format(x, spec)

    head = ["policy", "alloc@100 %", f"alloc@{x_end} %", "sd", "failed pods", "unalloc GPUs", "frag %",
            "frag ratio %"]
    body = [[d["policy"], f(d["alloc_100"], ".2f"), f(d["alloc_end"], ".2f"), f(d["alloc_end_sd"], ".2f"),
             f(d["failed_pods"], ".1f"), f(d["unallocated_gpus"], ".1f"), f(d["frag_pct"], ".2f"),
             f(d["frag_ratio_pct"], ".1f")] for d in dicts]
    if x_end == 100:  # the same column twice
        head.pop(1)
        for row in body:
            row.pop(1)
    widths = [max(len(row[i]) for row in (head, *body)) for i in range(len(head))]
    lines = ["  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths)))
             for row in (head, *body)]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def check_plot_path(path: str) -> None:
    """Fail before any run when ``--plot`` cannot be written: an extension matplotlib
    cannot save, or a folder that does not exist.

    Raises:
        InputError: naming ``--plot`` and what was expected.
    """
    from pathlib import Path

    from matplotlib.figure import Figure

    p = Path(path)
    formats = Figure().canvas.get_supported_filetypes()
    ext = p.suffix.lower().lstrip(".")
    if ext not in formats:
        raise InputError(f"--plot {path}: expected a file name ending in one of "
                         f"{', '.join('.' + e for e in sorted(formats))}")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise InputError(f"--plot {path}: folder {parent} does not exist")
    if p.is_dir():
        raise InputError(f"--plot {path}: is a folder; expected a file name")


def run(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    seeds = parse_seeds(args.seeds)
    policies = parse_policies(args.policies)
    if args.plot:
        check_plot_path(args.plot)
    if args.trace:
        from lab01_cluster_sim.workloads.openb import load_trace

        node_list = args.node_list or DEFAULT_NODE_LIST
        nodes, pods = load_trace(args.trace, args.pod_list, node_list)
        jobs = list(pods.jobs)
        label = f"{pods.path.name} on {node_list}"
    else:
        for opt, value in (("--pod-list", args.pod_list), ("--node-list", args.node_list)):
            if value:
                raise InputError(f"{opt} needs --trace DIR (the folder holding the openb CSVs)")
        from lab01_cluster_sim.workloads.synthetic import default_trace

        trace = default_trace(args.workload_seed)
        nodes, jobs = list(trace.nodes), list(trace.jobs)
        label = trace.description
    if not args.quiet:
        print(f"{label}; {len(policies)} polic{'y' if len(policies) == 1 else 'ies'} x {len(seeds)} "
              f"seed{'' if len(seeds) == 1 else 's'}, inflation {args.inflation:g}", file=sys.stderr)
    with tqdm(total=len(policies) * len(seeds), desc="replays", unit="run", file=sys.stderr,
              disable=True if args.quiet else None) as bar:
        results = compare(nodes, jobs, policies, seeds, args.inflation, progress=bar.update)
    rows = [summarise(p, results[p]) for p in policies]
    print(format_rows(rows, args.format))
    if not args.quiet and rows and rows[0].x_end < 100:
        print(f"note: alloc@100 is '-': the arrived load stops at {rows[0].x_end} % of the GPU capacity "
              f"(--inflation {args.inflation:g}), so it never reached 100 %", file=sys.stderr)
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
