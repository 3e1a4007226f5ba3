"""Two checkouts of Lab 01 side by side: the timed benchmark as whole processes, in turn.

Answers "is this tree slower than that one?" on a shared machine whose speed drifts by
10-20 % from minute to minute. Each run is a fresh interpreter running
``bench_timed.py --json`` (this checkout's script) on the code of tree A or tree B. Runs
alternate A B A B ... (``--order turns``), or A and B start together, each pinned to its own
processor (``--order together``: both see the same drift, so pair ratios are tighter; needs
two idle processors). Reported per side: the process's user+system CPU seconds (from the
operating system's accounting of the finished child, as ``/usr/bin/time`` gives it) and the
simulation loop's CPU seconds (``time.process_time`` around ``Simulation.run``), each as
min / median / max, and the A/B ratio pair by pair. Both sides must make the same schedule
(decisions, events, completions, p99 wait): a difference is reported and the exit status is 1.

    python benchmarks/ab_trees.py --b /tmp/pre-engine --runs 5
    python benchmarks/ab_trees.py --b /tmp/pre-engine --runs 5 --order together
    python benchmarks/ab_trees.py --a /tmp/x --b /tmp/y -- --jobs 40000 --nodes 2000

Arguments after ``--`` go to ``bench_timed.py`` (default ``--only-large --modes all``: 100,000
jobs on 10,000 nodes). Not a test: figures depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "bench_timed.py"
SAME = ("decisions", "events", "completed", "wait_p99")


def _start(tree: str, extra: list[str], cpu: int | None) -> subprocess.Popen:
    cmd = [sys.executable, str(SCRIPT), "--json", "--tree", tree, *extra]
    env = dict(os.environ, PYTHONPATH=tree)
    pre = (lambda: os.sched_setaffinity(0, {cpu})) if cpu is not None else None
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=pre)


def _finish(proc: subprocess.Popen, label: str) -> dict:
    _, status, usage = os.wait4(proc.pid, 0)
    out, err = proc.stdout.read(), proc.stderr.read()
    proc.stdout.close()
    proc.stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{label}: bench_timed.py exited {proc.returncode}: {err.strip().splitlines()[-1:]}")
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    if len(rows) != 1:
        raise SystemExit(f"{label}: expected one JSON result, got {len(rows)} (give one size and one mode)")
    row = rows[0]
    row["process_cpu_s"] = usage.ru_utime + usage.ru_stime
    return row


def _stats(xs: list[float]) -> str:
    return f"{min(xs):.2f} / {statistics.median(xs):.2f} / {max(xs):.2f}"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    extra = ["--only-large", "--modes", "all"]
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--a", default=str(HERE.parent), metavar="DIR", help="tree A (default: this checkout)")
    ap.add_argument("--b", required=True, metavar="DIR", help="tree B, e.g. a git worktree of an older commit")
    ap.add_argument("--runs", type=int, default=5, help="runs of each tree (default %(default)s)")
    ap.add_argument("--order", choices=("turns", "together"), default="turns",
                    help="turns: A B A B ...; together: A and B at once on processors 0 and 1")
    args = ap.parse_args(argv)
    if args.runs < 1:
        ap.error("--runs: expected an integer >= 1")
    for tree in (args.a, args.b):
        if not (Path(tree) / "lab01_cluster_sim" / "__init__.py").is_file():
            ap.error(f"{tree}: not a checkout of this project (no lab01_cluster_sim/__init__.py)")
    a_rows, b_rows = [], []
    for i in range(args.runs):
        if args.order == "together":
            pa, pb = _start(args.a, extra, 0), _start(args.b, extra, 1)
            a_rows.append(_finish(pa, "A"))
            b_rows.append(_finish(pb, "B"))
        else:
            a_rows.append(_finish(_start(args.a, extra, None), "A"))
            b_rows.append(_finish(_start(args.b, extra, None), "B"))
        a, b = a_rows[-1], b_rows[-1]
        print(f"run {i + 1}/{args.runs}: A {a['process_cpu_s']:.2f} s (loop {a['cpu_s']:.2f}), "
              f"B {b['process_cpu_s']:.2f} s (loop {b['cpu_s']:.2f}), A/B {a['process_cpu_s'] / b['process_cpu_s']:.3f}",
              file=sys.stderr, flush=True)
    print(f"A = {args.a}\nB = {args.b}\nbench_timed.py {' '.join(extra)}; {args.runs} runs each, order {args.order}\n")
    print("| | process CPU s, min / median / max | loop CPU s, min / median / max |")
    print("|---|---|---|")
    for name, rows in (("A", a_rows), ("B", b_rows)):
        print(f"| {name} | {_stats([r['process_cpu_s'] for r in rows])} | {_stats([r['cpu_s'] for r in rows])} |")
    proc = [a["process_cpu_s"] / b["process_cpu_s"] for a, b in zip(a_rows, b_rows)]
    loop = [a["cpu_s"] / b["cpu_s"] for a, b in zip(a_rows, b_rows)]
    print(f"| A/B pair by pair | {_stats(proc)} | {_stats(loop)} |")
    print(f"\nA/B of the medians: process {statistics.median(r['process_cpu_s'] for r in a_rows) / statistics.median(r['process_cpu_s'] for r in b_rows):.3f}, "
          f"loop {statistics.median(r['cpu_s'] for r in a_rows) / statistics.median(r['cpu_s'] for r in b_rows):.3f}")
    r0 = a_rows[0]
    diffs = [k for k in SAME for r in a_rows + b_rows if r[k] != r0[k]]
    print(f"schedule: {r0['decisions']:,} decisions, {r0['events']:,} events, {r0['completed']:,} completed, "
          f"p99 wait {r0['wait_p99']:,.0f} s" + ("" if not diffs else f"; DIFFERS in {sorted(set(diffs))}"))
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
