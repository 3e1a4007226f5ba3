"""``python -m lab01_cluster_sim run SCENARIO``: run a scenario written as Kubernetes objects."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

NAME = "run"
HELP = "run a scenario: a YAML file (or folder) of Nodes, Pods/Jobs, Kueue, Karpenter and scheduler objects"
DESCRIPTION = """\
A scenario is the objects a platform team already writes, in one YAML file or a folder of
them: Nodes (or a node-list CSV), Pods and Jobs with their resource requests, PodGroups
(coscheduling), PriorityClasses, Kueue ClusterQueues / LocalQueues / ResourceFlavors /
Cohorts / WorkloadPriorityClasses, a KubeSchedulerConfiguration (NodeResourcesFit scoring
strategy and resource weights), Karpenter NodePools, and one Scenario object
(apiVersion lab01.course/v1alpha1) for what Kubernetes objects do not say: the workload
(a trace folder or a seeded generator) and the simulation settings.

Every object is checked first: Kubernetes objects against the official schemas of
Kubernetes 1.35 (kubernetes-validate, strict), the others against the fields the simulator
models (those of the Kueue v1beta2 and Karpenter v1 CRDs). A misspelt or unknown field is
one line naming file:line:column, the object and the field path.

Pods and Jobs carry their run time in the annotation lab01.course/duration (seconds, or
inf) and their arrival in lab01.course/submit-time (seconds, default 0); each at most
1e9 s (about 31.7 years).

The run writes scenario.json, summary.json / summary.csv (one row per run), per-job or
per-node CSVs and a figure into --output, and prints where; with Kueue objects also
admission.csv (every admission decision with Kueue's message), per-ClusterQueue rows, and
quota.csv (each ClusterQueue's admitted GPUs over time against its nominal quota; the
timeline figure draws one panel per ClusterQueue from it).

Waits: 'wait' (jobs.csv, the summary) is the time before a job's first start (start minus
submit). A preempted or evicted job queues again: 'queued' adds those waits (each restart
minus its eviction), so it equals 'wait' for a job never evicted; the summary line shows it
when it differs. Per ClusterQueue, 'admission wait' is the first quota reservation minus
submission and 'queued' adds the waits after evictions until quota is reserved again; Kueue's
own message, "wait time since queued was Ns", counts from the last requeue, as Kueue's
QueuedWaitTime does. Waits still open when the run ends are not counted.

A Job no node can ever host (more GPUs per pod than any node has) is rejected at arrival,
Kueue or not; with Kueue objects it keeps a 'Rejected' row in admission.csv and counts as
rejected in its ClusterQueue. (Kueue itself never looks at nodes and would keep it pending.)
Kueue admission (Kueue v1beta2 API, semantics of Kueue main after v0.19.2) runs as a stage
of the one engine before placement. Preemptions are counted per job and per run, with the
GPU-hours of progress they threw away. Objects the simulator cannot execute (elastic or
multi-role gangs, fields it does not model, ...) are named in one line and nothing is run;
--check validates only and says what would run; it exits 1 when the objects are valid
but name something the simulator cannot run yet (listed), as run itself would.

examples:
  python -m lab01_cluster_sim run scenarios/gang-textbook.yaml
  python -m lab01_cluster_sim run scenarios/policies-synthetic.yaml \\
      --output out/policies
  python -m lab01_cluster_sim run scenarios/kueue-borrowing \\
      --output out/borrowing
  python -m lab01_cluster_sim run scenarios/kueue-borrowing --check
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scenario", metavar="SCENARIO", help="a scenario YAML file, or a folder of them")
    parser.add_argument("--output", metavar="DIR", default=None,
                        help="folder for the metrics and figures (default: ./lab01-run-<scenario name>)")
    parser.add_argument("--check", action="store_true",
                        help="validate the scenario and say what would run, without running it")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def _check_scenario_path(text: str) -> None:
    """Refuse, in one line, a SCENARIO that is empty (it would silently mean the current
    folder), missing, or neither a regular file nor a folder (a FIFO, /dev/zero)."""
    import stat

    from lab01_cluster_sim.errors import InputError

    if not text.strip():
        raise InputError("SCENARIO: empty; expected a scenario YAML file or a folder of them (e.g. scenarios/)")
    from lab01_cluster_sim.scenario.yamlio import not_a_file_reason

    try:
        mode = Path(text).stat().st_mode
    except OSError:
        raise InputError(f"{text}: {not_a_file_reason(Path(text))}; expected a scenario YAML file or a folder of "
                         "them") from None
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise InputError(f"{text}: is not a regular file or folder (a device, FIFO or socket); expected a scenario "
                         "YAML file or a folder of them")


def run(args: argparse.Namespace) -> int:
    from lab01_cluster_sim.scenario import blockers, kind_of, load_scenario, run_scenario
    from lab01_cluster_sim.scenario.validate import KUBERNETES_VERSION

    _check_scenario_path(args.scenario)
    sc = load_scenario(args.scenario)
    counts = ", ".join(f"{n} {k}" for k, n in sorted(sc.objects.items()))
    print(f"scenario {sc.name}: {counts} (valid; Kubernetes {KUBERNETES_VERSION} schemas, Kueue v1beta2, "
          f"Karpenter v1)")
    for name in sc.empty_files:
        print(f"note: {name} holds no objects (an empty file, or comments only)", file=sys.stderr)
    if args.check:
        items = blockers(sc)
        if items:  # the objects are valid, but run would refuse them: a failed check (exit 1)
            print(f"would not run yet ({len(items)}):")
            for item in items:
                print(f"  {item}")
            return 1
        else:
            from lab01_cluster_sim.scenario.run import describe

            print(f"would run: {describe(sc)}")
        return 0
    out = Path(args.output) if args.output else Path(f"lab01-run-{re.sub(r'[^A-Za-z0-9_.-]', '_', sc.name)}")
    result = run_scenario(sc, out, progress=not args.quiet)
    for row in result.rows:
        _print_row(result.kind, row)
    print(f"wrote {out}/: {', '.join(result.files)}")
    sys.stdout.flush()
    return 0


def _print_row(kind: str, row: dict) -> None:
    if kind == "timed":
        w, j = row["wait_s"], row["jct_s"]
        states = ", ".join(f"{k} {v}" for k, v in row["states"].items())
        alloc = row["mean_allocation_ratio"]
        q = row.get("queued_s") or {}
        requeued = ""
        if q.get("mean") is not None and w["mean"] is not None and abs(q["mean"] - w["mean"]) > 1e-9:
            requeued = f"; queued incl. requeues mean {_s(q['mean'])}, max {_s(q['max'])}"
        print(f"  {row['policy']}: {states}; wait mean {_s(w['mean'])}, p99 {_s(w['p99'])}{requeued}; "
              f"JCT mean {_s(j['mean'])}; "
              f"makespan {_s(row['makespan_s'])}; allocation {'n/a' if alloc is None else f'{100 * alloc:.1f} %'}; "
              f"preemptions {row['preemptions']} ({row['lost_gpu_hours']:,.2f} GPU-h lost)")
        for q in row.get("cluster_queues") or []:
            wait = "n/a" if q["mean_admission_wait_s"] is None else _s(q["mean_admission_wait_s"])
            again = ""
            if q["evictions"] and q.get("mean_queued_s") is not None:
                again = f", queued incl. requeues mean {_s(q['mean_queued_s'])}"
            print(f"    ClusterQueue {q['cluster_queue']}: {q['admitted']}/{q['submitted']} admitted, "
                  f"{q['pending']} pending, {q['rejected']} rejected, {q['evictions']} evictions; "
                  f"admission wait mean {wait} (first admission){again}")
        if row["stop_reason"] not in ("empty", "until"):
            print(f"    stopped at t={row['end_time_s']:,.0f} s: {row['stop_reason']}")
        for line in row.get("deadlock") or []:
            print(f"    {line}")
    elif kind == "topology":
        wait = "never span" if row["max_wait_s"] is None else f"max wait {row['max_wait_s']:g} s"
        print(f"  {wait}: mean wait {_s(row['mean_wait_s'])}, mean slowdown {row['mean_slowdown']:.3f}, "
              f"mean JCT {_s(row['mean_jct_s'])}, {row['spanning_jobs']} of {row['multi_gpu_jobs']} multi-GPU jobs "
              "spanned islands")
    elif kind == "replay":
        print(f"  {row['policy']}: allocation at 100 % arrived {row['alloc_100']:.2f} %, at {row['x_end']} % "
              f"{row['alloc_end']:.2f} %; fragmentation {row['frag_pct']:.2f} %")
    else:
        print(f"  cost ${row['cost_dollars']:.2f}, {row['nodes_launched']} nodes launched, "
              f"{row['pods_finished']} pods finished, mean pending {_s(row['mean_pending_s'])}{_never(row)}, "
              f"{row['disruptions']} disruptions")


def _never(row: dict) -> str:
    """' (N pods never bound, pending until the end at t=T s)' when some pod never got a node: their
    pending time is cut off by the end of the run, so the mean alone would understate it."""
    n = row.get("pods_never_bound", 0)
    if not n:
        return ""
    return f" ({n} pod{'s' if n != 1 else ''} never bound, counted until the end at t={row['end_s']:,.0f} s)"


def _s(x) -> str:
    return "n/a" if x is None else f"{x:,.1f} s"
