"""``python -m lab01_cluster_sim compare``: the placement policies side by side (the FGD paper's table)."""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import re
import sys
from collections.abc import Sequence

from lab01_cluster_sim.commands._format import clean_number, format_numbers, format_percent, render_table
from lab01_cluster_sim.commands._options import MAX_SEED, seed
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.policies.base import policy_names
from lab01_cluster_sim.workloads.openb import DEFAULT_NODE_LIST
from lab01_cluster_sim.replay import (DEFAULT_INFLATION, LESSON_POLICIES, PAPER_POLICIES, TEXTBOOK_POLICIES,
                                      PolicySummary, compare, summarise)

NAME = "compare"
HELP = "replay a trace with several placement policies and seeds; print the allocation table"
DESCRIPTION = f"""\
Replay a pod list on a cluster as the FGD paper (Weng et al., ATC'23) does: shuffle with the
seed, inflate to --inflation x the cluster's GPU capacity, try each pod once, never retry,
nothing leaves. Prints, per policy, the GPU allocation ratio when the arrived pods ask for
100 % of the GPUs and at the end (130 %), its sd over seeds, failed pods, unallocated and
stranded GPUs and fragmentation, with a legend under the table.

Without --trace it runs on the embedded synthetic openb-like workload (48 nodes, 243 GPUs)
and shows the textbook rules ({", ".join(TEXTBOOK_POLICIES)}) beside the paper's policies,
in this order:
  {", ".join(LESSON_POLICIES)}
With --trace DIR (the folder of the Alibaba openb CSVs; get it with
`python -m lab01_cluster_sim fetch-trace DIR`) it uses openb_node_list_gpu_node.csv and a pod
list (--pod-list, default 'default') and the paper's six policies:
  {", ".join(PAPER_POLICIES)}

Seeds: --seeds seed the replay (order, tuning, ties, random policies), as the paper's 42-51;
--workload-seed (default 0) seeds the synthetic workload and stays the same for every
replay seed. `sweep --runner replay --workloads synthetic` uses the same two seeds.

Output: a table on stdout (the workload line, the table and its legend); --format csv or
json gives the same figures without float noise (a missing figure is empty in CSV, null in
JSON). Progress and notes go to stderr (--quiet: none).

examples:
  python -m lab01_cluster_sim compare
  python -m lab01_cluster_sim compare \\
      --trace ../shared/data/alibaba-gpu-2023/csv --seeds 42-51
  python -m lab01_cluster_sim compare --trace DIR --pod-list gpushare40 \\
      --policies best-fit,fgd
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
        if m is None and re.fullmatch(r"\s*\d+(\.\d*)?([eE]\+?\d+)?\s*", part):
            # a whole number written as 1e1 or 10.0, as simulate --seed takes it
            value = float(part)
            if math.isfinite(value) and value.is_integer():
                m = re.fullmatch(r"(\d+)(-\d+)?", str(int(value)))   # the seed alone: group 2 None
        if m is None or (m.group(2) is not None and int(m.group(2)) < int(m.group(1))):
            raise InputError(f"--seeds {text!r}: expected integers >= 0 or ranges like 42,43 or 42-51, got {part!r}")
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) is not None else lo
        if hi > MAX_SEED:
            raise InputError(f"--seeds {text!r}: seeds go from 0 to {MAX_SEED}, got {hi}")
        if hi - lo + 1 + len(seeds) > MAX_SEEDS:
            raise InputError(f"--seeds {text!r}: at most {MAX_SEEDS} seeds (each is one run per policy)")
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
    parser.add_argument("--trace", metavar="DIR",
                        help="folder with the openb CSVs, e.g. one made by fetch-trace (default: the synthetic workload)")
    parser.add_argument("--pod-list", default=None, metavar="NAME",
                        help="pod list in --trace: 'default', a variant such as 'gpushare40', or a file name")
    parser.add_argument("--node-list", default=None, metavar="FILE",
                        help=f"node list in --trace (default: {DEFAULT_NODE_LIST}, the paper's cluster)")
    parser.add_argument("--policies", default=None,
                        help="comma-separated policies (default: the textbook three and the paper's five on the "
                             "synthetic workload; the paper's six with --trace)")
    parser.add_argument("--seeds", default="42",
                        help=f"replay seeds: 42, 42,43 or 42-51, each once, at most {MAX_SEEDS} (default: %(default)s)")
    parser.add_argument("--inflation", type=_inflation, default=DEFAULT_INFLATION,
                        help="arrived GPU request as a multiple of the cluster GPU capacity, 0.01 to 10 "
                             "(default: %(default)s, the paper's)")
    parser.add_argument("--workload-seed", type=seed, default=0,
                        help="seed of the synthetic workload when no --trace is given, the same for every "
                             "replay seed (default: %(default)s)")
    parser.add_argument("--format", choices=("table", "csv", "json"), default="table",
                        help="output format; a figure the run cannot give (alloc@100 when the load never "
                             "reached 100 %%, sd of one seed) is '-' in the table, empty in CSV, null in JSON")
    parser.add_argument("--plot", metavar="FILE", help="also save the allocation-vs-arrived figure (png, svg, pdf)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar and no notes on stderr")


COLUMNS = ("policy", "alloc_100", "alloc_end", "alloc_end_sd", "failed_pods", "unallocated_gpus", "stranded_gpus",
           "frag_pct", "frag_ratio_pct")
"""The figures of one row, in table order (CSV adds ``x_end``, ``seeds`` and ``workload``)."""

_COUNTS = ("failed_pods", "stranded_gpus")
"""Columns that are counts: integers when whole (one seed), a mean otherwise."""


_PLACES = {"alloc_100": 2, "alloc_end": 2, "alloc_end_sd": 2, "frag_pct": 2, "frag_ratio_pct": 2,
           "unallocated_gpus": 3}
"""Decimals kept in CSV and JSON: percentages to 2 (the paper's precision, as the replay
rounds alloc% and frag%), GPUs to 3 (one milli-GPU)."""


def row_dict(r: PolicySummary, workload: str = "") -> dict:
    """One policy's figures, cleaned for CSV and JSON (:func:`~lab01_cluster_sim.commands._format.clean_number`:
    no float noise; percentages to 2 decimals and GPUs to 3, :data:`_PLACES`; whole counts as integers); None where the run cannot give one:
    ``alloc_100`` when the arrived load never reached 100 % (inflation below 1),
    ``alloc_end_sd`` with one seed, ``stranded_gpus`` when not computed."""
    d = {c: clean_number(getattr(r, c), _PLACES.get(c)) for c in COLUMNS[1:]}
    for c in _COUNTS:
        if isinstance(d[c], float) and d[c].is_integer():
            d[c] = int(d[c])
    if len(r.seeds) < 2:
        d["alloc_end_sd"] = None
    return {"policy": r.policy, **d, "seeds": list(r.seeds), "x_end": r.x_end, "workload": workload}


def legend(x_end: int, inflation: float, policies: Sequence[str]) -> str:
    """The lines under the table that say what each column (and each policy family) is."""
    entries: list[tuple[str, str]] = [
        ("alloc@100 %", "GPU allocation ratio (allocated GPU capacity / the cluster's) when the pods that have"),
        ("", "arrived ask for 100 % of the cluster's GPUs: 100 would be perfect packing"),
    ]
    if x_end != 100:
        entries.append((f"alloc@{x_end} %", f"the same at the end of the arrivals, {x_end} % of the capacity "
                                            f"(--inflation {inflation:g}){';' if x_end > 100 else ''}"))
        if x_end > 100:
            entries.append(("", "demand then exceeds supply, so the gap to 100 is capacity lost to placement"))
    entries += [
        ("sd", f"sample standard deviation of alloc@{x_end} over the seeds, in points ('-' with one seed)"),
        ("failed pods", "pods that fit no node when they arrived (never retried), mean over seeds"),
        ("unalloc GPUs", "GPU capacity left free at the end, in GPUs (free shares of shared GPUs included)"),
        ("stranded GPUs", "whole GPUs left free at the end that no failed pod could use: too little CPU or"),
        ("", "memory beside them, too few free on one node, or the wrong model (the definition of"),
        ("", "lab01_cluster_sim.metrics.count_stranded_gpus, the failed pods being the pending ones)"),
        ("frag %", f"the paper's fragmentation F at {x_end} %: free GPU capacity that the workload's"),
        ("", "typical pods could not use, as % of the cluster's GPU capacity"),
        ("frag ratio %", "F / free GPU capacity: the share of what is left free that is fragmented"),
    ]
    lines = ["columns:", *(f"  {label:<15}{text}" for label, text in entries)]
    textbook = [p for p in policies if p in TEXTBOOK_POLICIES]
    paper = [p for p in policies if p in PAPER_POLICIES and p not in TEXTBOOK_POLICIES]
    if textbook:
        rules = {"first-fit": "first node that fits", "best-fit": "node left fullest",
                 "worst-fit": "node left emptiest"}
        lines.append("textbook rules: " + ", ".join(f"{p} ({rules[p]})" for p in textbook))
    if paper:
        lines.append(f"the FGD paper's policies (Weng et al., ATC'23): {', '.join(paper)}"
                     f"{'; best-fit is one of its baselines too' if 'best-fit' in policies else ''}")
    return "\n".join(lines)


def lesson(rows: Sequence[PolicySummary]) -> str | None:
    """One line comparing first-fit with best-fit when both ran, from the figures themselves."""
    by = {r.policy: r for r in rows}
    if "first-fit" not in by or "best-fit" not in by:
        return None
    ff, bf = by["first-fit"], by["best-fit"]
    if math.isnan(ff.alloc_end) or math.isnan(bf.alloc_end):
        return None
    diff = bf.alloc_end - ff.alloc_end
    text = (f"best-fit allocates {format_percent(abs(diff), unit=False)} points {'more' if diff >= 0 else 'less'} "
            f"of the GPUs than first-fit at {ff.x_end} %")
    if not (math.isnan(ff.stranded_gpus) or math.isnan(bf.stranded_gpus)):
        s_ff, s_bf = format_numbers([ff.stranded_gpus, bf.stranded_gpus])
        text += f" and leaves {s_bf} GPUs stranded against first-fit's {s_ff}"
    return text + "."


def format_rows(rows: Sequence[PolicySummary], fmt: str, workload: str = "", inflation: float | None = None,
                with_legend: bool = True) -> str:
    """The comparison as a text table, CSV or JSON (columns :data:`COLUMNS`).

    The table starts with the ``workload`` line (when given) and ends with the
    :func:`legend` and, when first-fit and best-fit both ran, one line comparing them
    (``with_legend``). Percentages have one decimal, counts print as integers when whole.
    Missing figures (see :func:`row_dict`) are ``-`` in the table, empty in CSV and
    ``null`` in JSON. When the run ends at 100 % (``--inflation 1``) the table has one
    ``alloc@100 %`` column, not two identical ones. CSV and JSON carry ``workload`` per row.
    """
    dicts = [row_dict(r, workload) for r in rows]
    if fmt == "json":
        return json.dumps(dicts, indent=2, allow_nan=False)
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow([*COLUMNS, "x_end", "seeds", "workload"])
        for d in dicts:
            w.writerow([d["policy"], *("" if d[c] is None else d[c] for c in COLUMNS[1:]), d["x_end"],
                        " ".join(map(str, d["seeds"])), d["workload"]])
        return buf.getvalue().rstrip("\n")
    x_end = rows[0].x_end if rows else int(round(100 * (inflation or DEFAULT_INFLATION)))

    def pct(c: str) -> list[str]:
        return [format_percent(d[c], unit=False, missing="-") for d in dicts]

    head = ["policy", "alloc@100 %", f"alloc@{x_end} %", "sd", "failed pods", "unalloc GPUs", "stranded GPUs",
            "frag %", "frag ratio %"]
    cols = [[d["policy"] for d in dicts], pct("alloc_100"), pct("alloc_end"), pct("alloc_end_sd"),
            *(format_numbers([d[c] for d in dicts], missing="-")
              for c in ("failed_pods", "unallocated_gpus", "stranded_gpus")),
            pct("frag_pct"), pct("frag_ratio_pct")]
    if x_end == 100:  # the same column twice
        head.pop(1)
        cols.pop(1)
    table = render_table(head, [list(row) for row in zip(*cols)])
    parts = [workload, table] if workload else [table]
    if with_legend:
        parts.append(legend(x_end, inflation if inflation is not None else x_end / 100, [d["policy"] for d in dicts]))
        note = lesson(rows)
        if note:
            parts.append(note)
    return "\n".join(parts) if not workload else workload + "\n" + "\n\n".join(parts[1:])


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
    from lab01_cluster_sim.commands._options import check_output_path

    check_output_path(path, "--plot")


def run(args: argparse.Namespace) -> int:
    from lab01_cluster_sim.progress import progress_bar

    seeds = parse_seeds(args.seeds)
    if args.plot:
        check_plot_path(args.plot)
    if args.trace:
        policies = parse_policies(args.policies or ",".join(PAPER_POLICIES))
        from lab01_cluster_sim.workloads.openb import load_trace

        node_list = args.node_list or DEFAULT_NODE_LIST
        if not args.quiet:
            from lab01_cluster_sim.workloads.openb import describe_trace

            print(f"loading {describe_trace(args.trace, args.pod_list, node_list)}", file=sys.stderr, flush=True)
        nodes, pods = load_trace(args.trace, args.pod_list, node_list)
        jobs = list(pods.jobs)
        label = f"{pods.path.name} on {node_list}"
    else:
        policies = parse_policies(args.policies or ",".join(LESSON_POLICIES))
        for opt, value in (("--pod-list", args.pod_list), ("--node-list", args.node_list)):
            if value:
                raise InputError(f"{opt} needs --trace DIR (the folder holding the openb CSVs)")
        from lab01_cluster_sim.workloads.synthetic import default_trace

        trace = default_trace(args.workload_seed)
        nodes, jobs = list(trace.nodes), list(trace.jobs)
        # "(seed 0)" is the workload's seed, beside the replay seeds at the end of the line
        label = trace.description.replace(f"(seed {args.workload_seed})", f"(workload seed {args.workload_seed})", 1)
    n_seeds = f"{len(seeds)} replay seed{'' if len(seeds) == 1 else 's'}"
    workload = (f"{label}; replayed to {args.inflation * 100:g} % of the GPU capacity (--inflation "
                f"{args.inflation:g}), {n_seeds} ({args.seeds})")
    if not args.quiet and args.format != "table":  # the table carries this line itself
        print(workload, file=sys.stderr)
    with progress_bar(len(policies) * len(seeds), "replays", quiet=args.quiet) as bar:
        results = compare(nodes, jobs, policies, seeds, args.inflation, progress=bar.update)
    rows = [summarise(p, results[p]) for p in policies]
    print(format_rows(rows, args.format, workload=workload, inflation=args.inflation))
    sys.stdout.flush()  # the table before any note on stderr, also when both go to one terminal
    if not args.quiet and rows and rows[0].x_end < 100:
        print(f"note: alloc@100 is '-': the arrived load stops at {rows[0].x_end} % of the GPU capacity "
              f"(--inflation {args.inflation:g}), so it never reached 100 %", file=sys.stderr)
    if not args.quiet and args.trace:
        from lab01_cluster_sim.workloads.openb import unknown_models_note

        note = unknown_models_note(nodes, jobs, node_list)
        if note:
            print(note, file=sys.stderr)
    if not args.quiet and rows and any(math.isnan(r.stranded_gpus) for r in rows):
        print("note: stranded GPUs are '-': lab01_cluster_sim.metrics.count_stranded_gpus is not implemented yet "
              "(Lab 01 exercise)", file=sys.stderr)
    if args.plot:
        from lab01_cluster_sim.plots.replay import plot_alloc_vs_arrived

        fig = plot_alloc_vs_arrived(results, title=label)
        try:
            fig.savefig(args.plot, dpi=120, bbox_inches="tight")
        except (OSError, ValueError) as exc:
            raise InputError(f"--plot {args.plot}: cannot save the figure: {exc}") from None
        if not args.quiet:      # the same words as every other --plot (commands/_progress.wrote)
            from lab01_cluster_sim.commands._progress import wrote

            wrote(args.plot, "allocation-versus-arrived figure")
    return 0
