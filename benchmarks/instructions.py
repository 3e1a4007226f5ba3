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
    python benchmarks/instructions.py --replay best-fit /tmp/pre-engine .   # the paper's replay

With ``--replay POLICY`` it counts one replay of the real trace (``openb_pod_list_default`` on
the GPU nodes, seed 42, as ``bench_replay.py``; the trace folder from ``--trace`` or
``$COURSE_SHARED_DATA``) instead: loading the CSVs and building the target workload is the
setup, the replay the loop; each tree also prints the replay's allocation at 130 %, which must
agree.

Not a test: counts depend on the Python and numpy builds.
"""

from __future__ import annotations

import argparse
import os
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


REPLAY_DRIVER = """
import sys
tree, trace, policy, run = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "run"
sys.path.insert(0, tree)
from lab01_cluster_sim.fragmentation import TargetWorkload
from lab01_cluster_sim.replay import replay
from lab01_cluster_sim.workloads.openb import load_trace
nodes, pods = load_trace(trace)
target = TargetWorkload.from_jobs(pods.jobs)
if run:
    print(f"{replay(nodes, pods.jobs, policy, seed=42, target=target).alloc_at(130):.6f}")
"""


def count(tree: str, args: list[str], run: bool, driver: str = DRIVER) -> tuple[int, str]:
    """Instructions of one whole process (valgrind --tool=callgrind), as an int, and its stdout.

    Raises:
        SystemExit: valgrind failed or printed no total.
    """
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c", driver,
           tree, *args, "run" if run else "setup"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    m = re.search(r"Collected : (\d+)", out.stderr)
    if out.returncode != 0 or m is None:
        raise SystemExit(f"{tree}: valgrind failed (exit {out.returncode}): {out.stderr.strip().splitlines()[-1:]}")
    return int(m.group(1)), out.stdout.strip()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trees", nargs="+", metavar="DIR", help="checkouts to count (the first is the reference)")
    ap.add_argument("--jobs", type=int, default=4000)
    ap.add_argument("--nodes", type=int, default=400)
    ap.add_argument("--replay", metavar="POLICY", help="count one replay of the real trace with this policy instead")
    ap.add_argument("--trace", type=Path, default=Path(os.environ.get("COURSE_SHARED_DATA", Path(__file__).resolve()
                                                                     .parents[2] / "shared" / "data"))
                    / "alibaba-gpu-2023" / "csv", help="folder of the openb CSVs (with --replay)")
    args = ap.parse_args(argv)
    if shutil.which("valgrind") is None:
        ap.error("valgrind is not on PATH (apt-get install valgrind)")
    if args.jobs < 1 or args.nodes < 1:
        ap.error("--jobs and --nodes: expected integers >= 1")
    for tree in args.trees:
        if not (Path(tree) / "lab01_cluster_sim" / "__init__.py").is_file():
            ap.error(f"{tree}: not a checkout of this project (no lab01_cluster_sim/__init__.py)")
    if args.replay:
        if not (args.trace / "openb_node_list_gpu_node.csv").is_file():
            ap.error(f"--trace {args.trace}: no openb CSVs there (set COURSE_SHARED_DATA or pass --trace)")
        print(f"one {args.replay} replay of openb_pod_list_default on the GPU nodes, seed 42\n")
        driver, extra, what = REPLAY_DRIVER, [str(args.trace), args.replay], "alloc @130 %"
    else:
        print(f"{args.jobs:,} synthetic jobs on {args.nodes:,} nodes, best-fit, gang, fifo-skip, seed 42\n")
        driver, extra, what = DRIVER, [str(args.jobs), str(args.nodes)], "events"
    print(f"| tree | setup, M instructions | loop, M instructions | loop vs the first | {what} |")
    print("|---|---:|---:|---:|---:|")
    ref = None
    for tree in args.trees:
        setup, _ = count(tree, extra, False, driver)
        total, result = count(tree, extra, True, driver)
        loop = total - setup
        ref = loop if ref is None else ref
        print(f"| {tree} | {setup / 1e6:,.1f} | {loop / 1e6:,.1f} | {loop / ref:.3f} | {result} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
