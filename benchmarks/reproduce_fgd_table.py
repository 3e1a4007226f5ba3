"""Reproduce the FGD paper's main table: 6 policies x 10 seeds (42..51) on the real trace.

Weng et al., "Beware of Fragmentation", USENIX ATC'23. The published numbers are the
authors' cached results (``experiments/analysis/expected_results/analysis_allo_discrete.csv``
of hkust-adsl/kubernetes-scheduler-simulator, commit 8f3d641).

    python benchmarks/reproduce_fgd_table.py                       # default list -> benchmarks/fgd_table.md
    python benchmarks/reproduce_fgd_table.py --lists default,gpushare40,multigpu20,cpu050,gpuspec10
    python benchmarks/reproduce_fgd_table.py --workers 2 --out -   # print instead of writing

Runs are independent, so they go to ``--workers`` processes. Go's math/rand is not
reproduced, so single seeds differ from the paper's; compare the means.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import os
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

# Import this checkout's packages, not whatever copy of them is installed.
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from lab01_cluster_sim.replay import PAPER_POLICIES, PAPER_SEEDS  # noqa: E402

# analysis_allo_discrete.csv of the authors' repository: 10-seed means (sd) of the GPU
# allocation ratio, tune 1.3.
PUBLISHED_DEFAULT = {  # policy: (mean@130, sd@130, mean@100)
    "random": (87.47, 0.32, 86.30),
    "dot-prod": (90.85, 0.20, 90.62),
    "gpu-clustering": (91.88, 0.62, 91.65),
    "gpu-packing": (92.00, 0.54, 91.78),
    "best-fit": (93.08, 0.13, 92.86),
    "fgd": (95.39, 0.08, 95.23),
}
PUBLISHED_FRAG_130 = {"fgd": 4.57, "best-fit": 6.85, "random": 12.43}
PUBLISHED_OTHER_130 = {  # list: means at 130 in PAPER_POLICIES order
    "cpu050": (91.24, 93.27, 93.79, 93.72, 93.79, 95.21),
    "gpushare40": (86.00, 89.56, 90.02, 90.03, 91.69, 94.15),
    "multigpu20": (88.69, 92.06, 93.56, 93.71, 93.93, 95.65),
    "gpuspec10": (87.43, 90.39, 92.18, 92.46, 93.30, 94.95),
}


def default_trace_dir() -> Path:
    env = os.environ.get("COURSE_SHARED_DATA")
    base = Path(env) if env else REPO.parent / "shared" / "data"
    return base / "alibaba-gpu-2023" / "csv"


@functools.lru_cache(maxsize=None)
def _load(trace: str, pod_list: str):
    """Each worker process loads each pod list once."""
    from lab01_cluster_sim.fragmentation import TargetWorkload
    from lab01_cluster_sim.workloads.openb import load_trace

    nodes, pods = load_trace(trace, pod_list)
    return nodes, pods.jobs, TargetWorkload.from_jobs(pods.jobs)


def _one(args: tuple[str, str, str, int, float]) -> tuple[str, str, int, float, float, float, int, float]:
    trace, pod_list, policy, seed, inflation = args
    from lab01_cluster_sim.replay import replay

    nodes, jobs, target = _load(trace, pod_list)
    t0 = time.perf_counter()
    r = replay(nodes, jobs, policy, seed=seed, inflation=inflation, target=target)
    return (pod_list, policy, seed, r.alloc_at(100), r.alloc_at(130), r.curve.at(130, "frag_pct"), r.failed,
            time.perf_counter() - t0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trace", type=Path, default=default_trace_dir())
    parser.add_argument("--lists", default="default", help="comma-separated pod lists (default: %(default)s)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "fgd_table.md"), help="output file, or - for stdout")
    args = parser.parse_args(argv)
    if not (args.trace / "openb_node_list_gpu_node.csv").is_file():
        print(f"trace not found at {args.trace} (set COURSE_SHARED_DATA or pass --trace)", file=sys.stderr)
        return 2
    lists = [x.strip() for x in args.lists.split(",") if x.strip()]
    jobs = [(str(args.trace), pl, p, s, 1.3) for pl in lists for p in PAPER_POLICIES for s in PAPER_SEEDS]
    from tqdm import tqdm

    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        rows = list(tqdm(pool.map(_one, jobs), total=len(jobs), desc="replays", unit="run", file=sys.stderr))
    wall = time.perf_counter() - t0
    by = {(pl, p): [r for r in rows if r[0] == pl and r[1] == p] for pl in lists for p in PAPER_POLICIES}

    cmd = "python benchmarks/reproduce_fgd_table.py" + (f" --lists {args.lists}" if args.lists != "default" else "")
    out = [
        "# FGD paper, main comparison: our replay vs the published numbers",
        "",
        f"Produced by `{cmd}` on {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC "
        f"({platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} CPUs, "
        f"{args.workers} worker processes, {wall:.0f} s wall for {len(jobs)} runs; the machine was shared, under load).",
        "",
        "Cluster `openb_node_list_gpu_node.csv` (1213 nodes, 6212 GPUs), inflation 1.3, seeds 42..51, GPU allocation "
        "ratio in % at arrived 100 % and 130 % of the GPU capacity (discretised as the authors' scripts do). "
        "Published: the authors' cached results (experiments/analysis/expected_results/"
        "analysis_allo_discrete.csv of hkust-adsl/kubernetes-scheduler-simulator). Go's `math/rand` is not "
        "reproduced, so single seeds differ; the means are what compare.",
        "",
    ]
    if "default" in lists:
        out += ["## openb_pod_list_default", "",
                "| policy | ours mean@130 | ours sd | published mean@130 | published sd | diff | ours mean@100 | "
                "published mean@100 | ours frag %@130 | published frag %@130 | failed pods | s/run |",
                "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for p in PAPER_POLICIES:
            rs = by[("default", p)]
            a130 = np.array([r[4] for r in rs])
            pub130, pubsd, pub100 = PUBLISHED_DEFAULT[p]
            frag = np.mean([r[5] for r in rs])
            pf = PUBLISHED_FRAG_130.get(p)
            out.append(f"| {p} | {a130.mean():.2f} | {a130.std(ddof=1):.2f} | {pub130:.2f} | {pubsd:.2f} | "
                       f"{a130.mean() - pub130:+.2f} | {np.mean([r[3] for r in rs]):.2f} | {pub100:.2f} | {frag:.2f} | "
                       f"{'' if pf is None else f'{pf:.2f}'} | {np.mean([r[6] for r in rs]):.0f} | "
                       f"{np.mean([r[7] for r in rs]):.2f} |")
        out.append("")
        out += ["Per seed, alloc % at 130:", "", "| policy | " + " | ".join(map(str, PAPER_SEEDS)) + " |",
                "|---|" + "---|" * len(PAPER_SEEDS)]
        for p in PAPER_POLICIES:
            vals = {r[2]: r[4] for r in by[("default", p)]}
            out.append(f"| {p} | " + " | ".join(f"{vals[s]:.2f}" for s in PAPER_SEEDS) + " |")
        out.append("")
    others = [pl for pl in lists if pl != "default"]
    if others:
        out += ["## Other pod lists, mean alloc % at 130 (ours / published)", "",
                "| list | " + " | ".join(PAPER_POLICIES) + " |", "|---|" + "---|" * len(PAPER_POLICIES)]
        for pl in others:
            pub = PUBLISHED_OTHER_130.get(pl)
            cells = []
            for i, p in enumerate(PAPER_POLICIES):
                ours = np.mean([r[4] for r in by[(pl, p)]])
                cells.append(f"{ours:.2f}" + (f" / {pub[i]:.2f}" if pub else ""))
            out.append(f"| {pl} | " + " | ".join(cells) + " |")
        out.append("")
    text = "\n".join(out)
    if args.out == "-":
        print(text)
    else:
        Path(args.out).write_text(text)
        print(f"written to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
