"""Instructions the timed simulation loop executes, counted by Valgrind: a figure that does not
move with the machine's load.

Wall and CPU times on a shared 2-core machine drift by 10-20 % between runs, more than the
differences worth finding between two versions of the core path. Valgrind's callgrind tool
counts the machine instructions a process executes; the count is the same on every run of
the same code and input, busy machine or not. For each tree this script counts a whole
process twice, once building the synthetic workload and the :class:`Simulation` and
stopping, once also running it; the difference is the loop's instructions. It does not see
cache misses or memory stalls (instructions, not time), so it complements the timed
benchmarks (``ab_trees.py``) and does not replace them. Needs ``valgrind`` on PATH
(``apt-get install valgrind``); about 50x slower than a plain run (about 5 minutes for the
default size).

    python benchmarks/instructions.py /tmp/pre-engine .            # 4,000 jobs on 400 nodes
    python benchmarks/instructions.py --jobs 2000 --nodes 100 .

Not a test: counts depend on the Python and numpy builds.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

DRIVER = """
import sys
tree, jobs, nodes, run = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "run"
sys.path.insert(0, tree)
from lab01_cluster_sim.commands.simulate import synthetic_jobs
from lab01_cluster_sim.simulate import Simulation
ns, js = synthetic_jobs(jobs, nodes, 42, None, 0.0, 16.0)
sim = Simulation(ns, js, "best-fit", "gang", "fifo-skip", 42, stranded_interval=3600.0)
if run:
    print(sim.run().events)
"""


def count(tree: str, jobs: int, nodes: int, run: bool) -> int:
    """Instructions of one whole process (valgrind --tool=callgrind), as an int.

    Raises:
        SystemExit: valgrind failed or printed no total.
    """
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c", DRIVER,
           tree, str(jobs), str(nodes), "run" if run else "setup"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    m = re.search(r"Collected : (\d+)", out.stderr)
    if out.returncode != 0 or m is None:
        raise SystemExit(f"{tree}: valgrind failed (exit {out.returncode}): {out.stderr.strip().splitlines()[-1:]}")
    return int(m.group(1))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trees", nargs="+", metavar="DIR", help="checkouts to count (the first is the reference)")
    ap.add_argument("--jobs", type=int, default=4000)
    ap.add_argument("--nodes", type=int, default=400)
    args = ap.parse_args(argv)
    if shutil.which("valgrind") is None:
        ap.error("valgrind is not on PATH (apt-get install valgrind)")
    if args.jobs < 1 or args.nodes < 1:
        ap.error("--jobs and --nodes: expected integers >= 1")
    for tree in args.trees:
        if not (Path(tree) / "lab01_cluster_sim" / "__init__.py").is_file():
            ap.error(f"{tree}: not a checkout of this project (no lab01_cluster_sim/__init__.py)")
    print(f"{args.jobs:,} synthetic jobs on {args.nodes:,} nodes, best-fit, gang, fifo-skip, seed 42\n")
    print("| tree | setup, M instructions | loop, M instructions | loop vs the first |")
    print("|---|---:|---:|---:|")
    ref = None
    for tree in args.trees:
        setup = count(tree, args.jobs, args.nodes, False)
        loop = count(tree, args.jobs, args.nodes, True) - setup
        ref = loop if ref is None else ref
        print(f"| {tree} | {setup / 1e6:,.1f} | {loop / 1e6:,.1f} | {loop / ref:.3f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
