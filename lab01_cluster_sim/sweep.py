"""Parameter sweeps: a grid of (runner, policy, workload, seed, parameters) run in parallel.

Reproducing the fragmentation paper's grid is 6 policies x 17 workloads x 10 seeds =
1,020 replays; :func:`run_sweep` runs such a grid in worker processes
(:class:`concurrent.futures.ProcessPoolExecutor`) or on a Dask distributed cluster
(``dask.distributed.Client``, an optional extra: any scheduler address, or a local
cluster), shows a tqdm progress bar, and returns one tidy table: one row per run with
its parameters and its metrics. A run that raises is reported in its row (``status`` =
``"error"``, ``error`` = the message) and the sweep goes on.

Runners (``runner`` column):

- ``disciplines``: the extensions' discipline runner on the seeded demo workload
  (:mod:`lab01_cluster_sim.disciplines.demo`, with the ``disciplines`` command's defaults: 4
  nodes of 8 GPUs, a 300 s mean gap, tenant ``research`` the big one); ``policy`` is the
  queue discipline, params ``nodes``, ``gpus_per_node``, ``interarrival``.
- ``replay``: the paper's replay (:func:`lab01_cluster_sim.replay.replay`); ``workload`` is
  ``synthetic`` or ``DIR[:POD_LIST]``, ``policy`` a placement policy, params ``inflation``
  and ``workload_seed``.
- ``simulate``: the core timed-mode simulation (:func:`lab01_cluster_sim.simulate.simulate`)
  on its synthetic workload, with the ``simulate`` command's defaults (20 nodes, load 2,
  discipline fifo-skip, gang mode); ``workload`` is a job count, ``policy`` a placement
  policy, params ``nodes``, ``load``, ``discipline``, ``mode``, ``interarrival``, ``gang_share``.

Each runner is imported when a run starts. :func:`grid` checks every axis against the
runner before anything runs (:func:`runner_policies`, :data:`RUNNER_PARAMS`,
:data:`RUNNER_WORKLOADS`, and every number against :data:`PARAM_BOUNDS` and
:data:`WORKLOAD_MAX`, the bounds of the matching command's options).

Seeds are used as the matching command uses them, so a sweep row reproduces that
command's run: ``replay`` seeds the replay with ``seed`` and the synthetic workload with
``workload_seed`` (default 0), as ``compare --seeds`` and ``--workload-seed`` do;
``simulate`` and ``disciplines`` seed both the workload and the run with ``seed``, as
``simulate --seed`` and ``disciplines --seed`` do.
"""

from __future__ import annotations

import csv
import functools
import io
import itertools
import json
import math
import os
import signal
import sys
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field

from lab01_cluster_sim.errors import InputError

RUNNERS = ("disciplines", "replay", "simulate")

RUNNER_PARAMS: dict[str, tuple[str, ...]] = {
    "disciplines": ("gpus_per_node", "interarrival", "nodes"),
    "replay": ("inflation", "workload_seed"),
    "simulate": ("discipline", "gang_share", "interarrival", "load", "mode", "nodes"),
}
"""Parameter keys (``--param KEY=...``) each runner reads; any other key is rejected, so a
row is never labelled with a parameter the run did not use."""

RUNNER_WORKLOADS: dict[str, str] = {
    "disciplines": "a number of jobs from 1 to 100,000 (e.g. 300)",
    "replay": "'synthetic' or DIR[:POD_LIST], a folder of openb CSVs",
    "simulate": "a number of jobs from 1 to 1,000,000 (e.g. 2000)",
}
"""What each runner's ``workload`` names."""

RUNNER_DEFAULT_WORKLOADS: dict[str, tuple[str, ...]] = {
    "disciplines": ("300",),
    "replay": ("synthetic",),
    "simulate": ("2000",),
}
"""The ``--workloads`` each runner uses when none is given."""

WORKLOAD_MAX: dict[str, int] = {"disciplines": 100_000, "simulate": 1_000_000}
"""Most jobs in one run, as ``disciplines --jobs`` and ``simulate --jobs`` allow."""

PARAM_BOUNDS: dict[str, dict[str, tuple[str, float, float]]] = {
    "disciplines": {"nodes": ("int", 1, 10_000), "gpus_per_node": ("int", 1, 64),
                    "interarrival": ("positive", 0, 1e7)},
    "simulate": {"nodes": ("int", 1, 100_000), "interarrival": ("positive", 0, 1e7), "load": ("range", 0.001, 10),
                 "gang_share": ("fraction", 0, 1)},
}
"""Numeric parameters per runner: (kind, low, high) as the matching command's options
bound them: ``int`` a whole number in [low, high]; ``positive`` a finite number > low and
<= high; ``fraction`` and ``range`` a number in [low, high] (``load``'s 0.001 is simulate's
MIN_LOAD: lower loads push arrivals past the 1e9 s time cap). NaN, infinity and text are refused."""

DISCIPLINES_DEFAULTS = {"nodes": 4, "gpus_per_node": 8, "interarrival": 300.0}
"""The ``disciplines`` command's defaults, used by the disciplines runner."""

MAX_RUNS = 100_000
"""Most runs in one grid (the paper's full grid is 1,020)."""

_COUNT_METRICS = frozenset({"jobs", "preemptions", "completed", "pending", "running", "rejected", "timeout", "placed",
                            "failed", "stranded_gpus"})
"""Metrics that count jobs or GPUs: a whole float (``3.0``) becomes the integer ``3`` in a row
(the disciplines runner returns its state counts, ``timeout`` among them, as floats)."""


def runner_policies(runner: str) -> tuple[str, ...]:
    """The ``policy`` values ``runner`` knows: queue disciplines for ``disciplines``,
    registered placement policies for ``replay`` and ``simulate``.

    Raises:
        InputError: an unknown runner.
    """
    if runner == "disciplines":
        from lab01_cluster_sim.registry import DISCIPLINES

        return tuple(DISCIPLINES)
    if runner in ("replay", "simulate"):
        from lab01_cluster_sim.registry import policy_names

        return tuple(policy_names())
    raise InputError(f"unknown runner {runner!r}; expected one of: {', '.join(RUNNERS)}")


def default_policies(runner: str, trace: bool = False) -> tuple[str, ...]:
    """The ``--policies`` each runner uses when none is given: every queue discipline for
    ``disciplines``; for ``replay`` what ``compare`` shows (the textbook rules beside the
    paper's on the synthetic workload, the paper's six on a real trace, ``trace=True``);
    the textbook rules for ``simulate``."""
    from lab01_cluster_sim.replay import LESSON_POLICIES, PAPER_POLICIES, TEXTBOOK_POLICIES

    if runner == "replay":
        return PAPER_POLICIES if trace else LESSON_POLICIES
    if runner == "simulate":
        return TEXTBOOK_POLICIES
    return runner_policies(runner)


def _param_choices(runner: str) -> dict[str, tuple[str, ...]]:
    """Parameters whose values are names, with the names the runner knows."""
    if runner != "simulate":
        return {}
    from lab01_cluster_sim.registry import DISCIPLINES
    from lab01_cluster_sim.scheduler import MODES

    return {"discipline": tuple(sorted(DISCIPLINES)), "mode": tuple(MODES)}


@dataclass(frozen=True)
class RunSpec:
    """One point of the grid."""

    runner: str
    policy: str
    workload: str
    seed: int
    params: tuple[tuple[str, object], ...] = ()

    def as_row(self) -> dict:
        """The run's parameters as table columns."""
        return {"runner": self.runner, "policy": self.policy, "workload": self.workload, "seed": self.seed,
                **dict(self.params)}


def grid(runner: str, policies: Sequence[str], workloads: Sequence[str], seeds: Sequence[int],
         params: Mapping[str, Sequence[object]] | None = None,
         typed: Mapping[str, Sequence[str]] | None = None) -> list[RunSpec]:
    """The Cartesian product, in a stable order (policy, workload, seed, params).

    ``typed``: the parameter values as the user wrote them (``{"nodes": ["1e9"]}``, same
    order as ``params``), echoed as they are in a message about one (``--param nodes=1e9``).

    Raises:
        InputError: an unknown runner or an empty axis; a policy the runner does not know
            (see :func:`runner_policies`); a workload the runner cannot run (see
            :data:`RUNNER_WORKLOADS`); a parameter key the runner does not read (see
            :data:`RUNNER_PARAMS`) or a name value it does not know (a discipline or mode
            of ``simulate``); a negative seed; more than :data:`MAX_RUNS` runs. Nothing runs
            when the grid is bad; the message is one line naming the bad value and the choices.
    """
    if runner not in RUNNERS:
        raise InputError(f"unknown runner {runner!r}; expected one of: {', '.join(RUNNERS)}")
    for name, axis in (("policies", policies), ("workloads", workloads), ("seeds", seeds)):
        if not axis:
            raise InputError(f"sweep: {name} must not be empty")
    known = runner_policies(runner)
    for p in policies:
        if p not in known:
            raise InputError(f"--policies {p!r}: the {runner} runner does not know it; expected one of: "
                             f"{', '.join(known)}")
    params = dict(params or {})
    unknown = sorted(set(params) - set(RUNNER_PARAMS[runner]))
    if unknown:
        raise InputError(f"--param {unknown[0]!r}: the {runner} runner does not use it; expected one of: "
                         f"{', '.join(RUNNER_PARAMS[runner])}")
    for key, choices in _param_choices(runner).items():
        for v in params.get(key, ()):
            if v not in choices:
                raise InputError(f"--param {key}={v}: the {runner} runner does not know {v!r}; expected one of: "
                                 f"{', '.join(choices)}")
    params = _whole_numbers(runner, params)
    _check_param_bounds(runner, params, typed)
    workloads = [_whole_workload(runner, w) for w in workloads]
    for w in workloads:
        _check_workload(runner, w)
    if runner == "replay":
        _check_replay_params(params, workloads, typed)
    for s in seeds:
        if int(s) < 0:
            raise InputError(f"--seeds: seeds must be >= 0, got {s}")
    keys = sorted(params)
    total = len(policies) * len(workloads) * len(seeds) * math.prod(len(params[k]) for k in keys)
    if total > MAX_RUNS:
        raise InputError(f"sweep: the grid has {total:,} runs; at most {MAX_RUNS:,} (fewer policies, workloads, "
                         "seeds or parameter values)")
    combos = list(itertools.product(*(params[k] for k in keys))) if keys else [()]
    return [RunSpec(runner, p, w, int(s), tuple(zip(keys, c)))
            for p in policies for w in workloads for s in seeds for c in combos]


def _whole_numbers(runner: str, params: Mapping[str, Sequence[object]]) -> dict[str, list[object]]:
    """``params`` with every whole-number float of a whole-number parameter (an ``int`` of
    :data:`PARAM_BOUNDS`, or replay's ``workload_seed``) turned into an int: ``nodes=1e3`` and
    ``nodes=8.0`` mean 1000 and 8 nodes, and an out-of-range ``nodes=1e9`` is echoed as
    ``1000000000``, not ``1000000000.0``. Other values are kept as they are."""
    whole = {k for k, (kind, _, _) in PARAM_BOUNDS.get(runner, {}).items() if kind == "int"}
    if runner == "replay":
        whole.add("workload_seed")

    def fix(v: object) -> object:
        if isinstance(v, float) and v.is_integer() and abs(v) <= 2 ** 53:   # exact as an int
            return int(v)
        return v

    return {k: [fix(v) for v in vals] if k in whole else list(vals) for k, vals in params.items()}


def _shown(v: object) -> object:
    """A parameter value as a message echoes it: a whole float as an integer (``1e9`` ->
    ``1000000000``, not ``1000000000.0``; beyond 2**53 in short form, ``1e+30``), anything
    else as it is."""
    if isinstance(v, float) and v.is_integer():
        return int(v) if abs(v) <= 2 ** 53 else f"{v:g}"
    return v


def _typed(typed: Mapping[str, Sequence[str]] | None, key: str, i: int, v: object) -> object:
    """What the user wrote for the ``i``-th value of ``key`` when known, else ``v`` as
    :func:`_shown` prints it."""
    texts = (typed or {}).get(key, ())
    return texts[i] if i < len(texts) else _shown(v)


def _check_param_bounds(runner: str, params: Mapping[str, Sequence[object]],
                        typed: Mapping[str, Sequence[str]] | None = None) -> None:
    """Raise InputError for a numeric parameter out of :data:`PARAM_BOUNDS` (so ``nodes=0``
    or ``interarrival=nan`` is refused before any run, not in every row); the message echoes
    the value as typed (``typed``, see :func:`grid`)."""
    for key, (kind, low, high) in PARAM_BOUNDS.get(runner, {}).items():
        for i, v in enumerate(params.get(key, ())):
            number = not isinstance(v, bool) and isinstance(v, (int, float))
            if kind == "int":
                ok = number and isinstance(v, int) and low <= v <= high
                want = f"a whole number from {low:,} to {high:,}"
            elif kind == "positive":
                ok = number and math.isfinite(v) and low < v <= high
                want = f"a finite number > {low:g} and <= {high:,.0f}" if float(high).is_integer() else \
                    f"a finite number > {low:g} and <= {high:g}"
            else:
                ok = number and math.isfinite(v) and low <= v <= high
                want = f"a number from {low:g} to {high:g}"
            if not ok:
                raise InputError(f"--param {key}={_typed(typed, key, i, v)}: the {runner} runner expects {want}")


def _check_replay_params(params: Mapping[str, Sequence[object]], workloads: Sequence[str],
                         typed: Mapping[str, Sequence[str]] | None = None) -> None:
    """Raise InputError unless the replay runner's params are in range: ``inflation`` a number
    from 0.01 to 10 (as ``compare --inflation``), ``workload_seed`` a seed, and only with the
    synthetic workload (a trace has no workload seed: a row must not claim one)."""
    from lab01_cluster_sim.options import MAX_SEED

    for i, v in enumerate(params.get("inflation", ())):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.01 <= v <= 10:
            raise InputError(f"--param inflation={_typed(typed, 'inflation', i, v)}: expected a multiple of "
                             "capacity from 0.01 to 10")
    seeds = params.get("workload_seed", ())
    for i, v in enumerate(seeds):
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= MAX_SEED:
            raise InputError(f"--param workload_seed={_typed(typed, 'workload_seed', i, v)}: expected a seed, a "
                             f"whole number from 0 to {MAX_SEED:,}")
    if seeds and any(w != "synthetic" for w in workloads):
        raise InputError("--param workload_seed: only the synthetic workload has a workload seed; "
                         f"got --workloads {','.join(w for w in workloads if w != 'synthetic')}")


def _whole_workload(runner: str, workload: str) -> str:
    """A job count written as a whole float (``1e3``, ``300.0``) as its digits (``1000``) for
    the runners whose workload is a job count, as ``simulate --jobs 1e3`` takes it; anything
    else unchanged (and checked by :func:`_check_workload`)."""
    if runner in ("disciplines", "simulate") and not workload.isdigit():
        try:
            value = float(workload)
        except ValueError:
            return workload
        if math.isfinite(value) and value.is_integer() and value >= 0:
            return str(int(value))
    return workload


def _check_workload(runner: str, workload: str) -> None:
    """Raise InputError unless ``runner`` can run ``workload``."""
    if runner in ("disciplines", "simulate"):
        if not (workload.isdigit() and 1 <= int(workload) <= WORKLOAD_MAX[runner]):
            raise InputError(f"--workloads {workload!r}: the {runner} runner expects {RUNNER_WORKLOADS[runner]}")
    elif workload != "synthetic":
        from lab01_cluster_sim.workloads.openb import DEFAULT_NODE_LIST, resolve_pod_list

        folder, _, pod_list = workload.partition(":")
        if not os.path.isdir(folder):
            raise InputError(f"--workloads {workload!r}: the replay runner expects {RUNNER_WORKLOADS[runner]}; "
                             f"{folder!r} is not a folder")
        # the files too, before anything runs: a folder without them failed every run of the grid
        if not os.path.isfile(os.path.join(folder, DEFAULT_NODE_LIST)):
            raise InputError(f"--workloads {workload!r}: no {DEFAULT_NODE_LIST} in {folder} (python -m "
                             f"lab01_cluster_sim fetch-trace {folder} gets the trace)")
        try:
            resolve_pod_list(folder, pod_list or None)
        except InputError as exc:
            raise InputError(f"--workloads {workload!r}: {exc}") from None


def _run_disciplines(spec: RunSpec) -> dict:
    from lab01_cluster_sim.disciplines.demo import demo_cluster, demo_jobs
    from lab01_cluster_sim.studies.trilemma import discipline_summary

    p = {**DISCIPLINES_DEFAULTS, **dict(spec.params)}
    nodes = demo_cluster(int(p["nodes"]), int(p["gpus_per_node"]))
    _check_workload("disciplines", spec.workload)
    jobs = demo_jobs(spec.seed, int(spec.workload), gpus_per_node=int(p["gpus_per_node"]),
                     mean_interarrival_s=float(p["interarrival"]), big_tenant="research")
    return discipline_summary(nodes, jobs, spec.policy)


@functools.lru_cache(maxsize=32)
def _openb_workload(folder: str, pod_list: str | None):
    """``(nodes, jobs, target workload)`` of one openb pod list, read once per worker process
    and reused by every run of it (each seed and policy): the CSVs took a quarter of a second
    a run, and FGD's memoised fragmentation lives in the target workload. The paper's 17 lists
    fit the cache; the objects are only read by :func:`~lab01_cluster_sim.replay.replay`."""
    from lab01_cluster_sim.fragmentation import TargetWorkload
    from lab01_cluster_sim.workloads.openb import load_trace

    nodes, pods = load_trace(folder, pod_list)
    jobs = tuple(pods.jobs)
    return tuple(nodes), jobs, TargetWorkload.from_jobs(jobs)


def _run_replay(spec: RunSpec) -> dict:
    """The paper's replay. ``workload``: ``synthetic`` (the embedded default trace, seeded by
    param ``workload_seed``, default 0, as ``compare --workload-seed``) or ``DIR[:POD_LIST]``
    (a folder of openb CSVs and a pod-list name). ``seed`` seeds the replay, as
    ``compare --seeds``. Params: ``inflation`` (default 1.3), ``workload_seed``.

    Metrics: ``alloc_100`` and ``alloc_end`` (GPU allocation ratio, %, at arrived 100 % and at
    the end, the discretised columns ``compare`` shows), ``frag_end`` (the fragmentation
    amount, % of the GPU capacity, at the end column: ``compare``'s frag %), ``final_alloc_pct`` (after the
    last pod), ``final_frag_pct`` (both %, to 2 decimals as compare's), ``unallocated_gpus``, ``stranded_gpus``, ``placed``,
    ``failed``."""
    from lab01_cluster_sim.replay import DEFAULT_INFLATION, replay

    p = dict(spec.params)
    if spec.workload == "synthetic":
        from lab01_cluster_sim.workloads.synthetic import default_trace

        trace = default_trace(int(p.get("workload_seed", 0)))
        nodes, jobs = list(trace.nodes), list(trace.jobs)
        target = None
    else:
        folder, _, pod_list = spec.workload.partition(":")
        nodes, jobs, target = _openb_workload(folder, pod_list or None)
    inflation = float(p.get("inflation", DEFAULT_INFLATION))
    res = replay(nodes, jobs, spec.policy, seed=spec.seed, inflation=inflation, target=target)
    end = int(round(100 * inflation))
    return {"alloc_100": res.alloc_at(100), "alloc_end": res.alloc_at(end), "frag_end": res.curve.at(end, "frag_pct"),
            "final_alloc_pct": round(res.final_alloc_pct, 2), "final_frag_pct": round(res.final_frag_pct, 2),
            "unallocated_gpus": res.unallocated_gpus,
            "stranded_gpus": res.stranded_gpus if res.stranded_gpus >= 0 else None,
            "placed": res.placed, "failed": res.failed}


def _run_simulate(spec: RunSpec) -> dict:
    """The core timed simulation on its synthetic workload, as ``simulate`` runs it.
    ``workload``: number of jobs; ``policy``: placement policy. Params, with the
    ``simulate`` command's defaults: ``nodes`` (20), ``load`` (2.0), ``discipline``
    (fifo-skip), ``mode`` (gang), ``interarrival`` (default: from ``load``), ``gang_share`` (0).

    Metrics: as ``simulate --format json``: ``mean_wait_s`` and ``p99_wait_s`` (over the
    jobs that started), ``mean_jct_s``, ``p99_jct_s``, ``makespan_s``,
    ``arrival_allocation_ratio`` (time-weighted while jobs arrive) and
    ``mean_allocation_ratio`` (over the whole run), both in [0, 1],
    ``mean_stranded_gpus``, and ``state_*`` job counts."""
    from lab01_cluster_sim.studies.timed import DEFAULT_LOAD, DEFAULT_NODES, stranded_interval, synthetic_jobs
    from lab01_cluster_sim.simulate import simulate

    p = dict(spec.params)
    if not spec.workload.isdigit():
        raise InputError(f"simulate runner: workload must be a number of jobs, got {spec.workload!r}")
    interarrival = p.get("interarrival")
    nodes, jobs = synthetic_jobs(int(spec.workload), int(p.get("nodes", DEFAULT_NODES)), spec.seed,
                                 None if interarrival is None else float(interarrival), float(p.get("gang_share", 0.0)),
                                 float(p.get("load", DEFAULT_LOAD)))
    res = simulate(nodes, jobs, spec.policy, mode=str(p.get("mode", "gang")),
                   discipline=str(p.get("discipline", "fifo-skip")), seed=spec.seed,
                   stranded_interval=stranded_interval(len(nodes), len(jobs)))
    s = res.summary
    out = {"jobs": s.jobs, "mean_wait_s": s.wait.mean, "p99_wait_s": s.wait.p99, "mean_jct_s": s.jct.mean,
           "p99_jct_s": s.jct.p99, "makespan_s": s.makespan, "arrival_allocation_ratio": s.arrival_allocation_ratio,
           "mean_allocation_ratio": s.mean_allocation_ratio, "mean_stranded_gpus": s.mean_stranded_gpus}
    out.update({f"state_{k}": v for k, v in sorted(s.states.items())})
    return out


def execute(spec: RunSpec) -> dict:
    """Run one grid point and return its row; never raises (errors go in the row)."""
    row = spec.as_row()
    try:
        run = {"disciplines": _run_disciplines, "replay": _run_replay, "simulate": _run_simulate}[spec.runner]
        metrics = run(spec)
        row.update({k: int(v) if k in _COUNT_METRICS and isinstance(v, float) and v.is_integer() else v
                    for k, v in metrics.items()})
        row["status"] = "ok"
        row["error"] = ""
    except Exception as exc:  # a failed run is data, not the end of the sweep
        row["status"] = "error"
        row["error"] = f"{type(exc).__name__}: {exc}"
        if not isinstance(exc, InputError):   # a bug: say where it was raised
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            row["error"] += f" (at {os.path.basename(frame.filename)}:{frame.lineno} in {frame.name})"
    return row


@dataclass
class SweepResult:
    """Rows in grid order; ``failed`` counts rows with status "error"."""

    rows: list[dict] = field(default_factory=list)

    @property
    def failed(self) -> int:
        return sum(1 for r in self.rows if r.get("status") == "error")

    def to_csv(self) -> str:
        """The tidy table as CSV (columns: union of all rows' keys, parameters first)."""
        return format_rows(self.rows, "csv")


def _progress(total: int, quiet: bool):
    from lab01_cluster_sim.progress import progress_bar

    return progress_bar(total, "runs", quiet=quiet)


def run_sweep(specs: Sequence[RunSpec], *, workers: int = 0, dask: str | None = None, quiet: bool = False,
              fn: Callable[[RunSpec], dict] = execute) -> SweepResult:
    """Run every spec; return the rows in grid order.

    Args:
        specs: the grid (:func:`grid`).
        workers: worker processes (0 = ``os.cpu_count()``; 1 = in this process, no pool).
        dask: ``None`` (local processes), ``"local"`` (a ``LocalCluster`` of ``workers``
            workers, threads only when ``workers == 1``), or a scheduler address
            (``tcp://host:8786``).
        quiet: no progress bar.
        fn: the function run per spec (must be picklable for processes).

    Raises:
        InputError: Dask asked for but not installed.
        KeyboardInterrupt: Ctrl-C; the worker processes (or the Dask runs) are stopped first,
            with one line on stderr saying so, and no rows are returned.
    """
    rows: list[dict | None] = [None] * len(specs)
    bar = _progress(len(specs), quiet)
    try:
        if dask is not None:
            _run_dask(specs, rows, dask, workers, bar, fn)
        elif workers == 1 or len(specs) <= 1:
            for i, s in enumerate(specs):
                rows[i] = fn(s)
                bar.update(1)
        else:
            _run_processes(specs, rows, workers or os.cpu_count() or 1, bar, fn)
    finally:
        bar.close()
    return SweepResult([r for r in rows if r is not None])


STOP_GRACE_S = 1.0
"""After Ctrl-C, how long a worker process gets to end once told to, before it is killed."""


def _ignore_sigint() -> None:
    """Worker initializer: Ctrl-C in a terminal reaches the whole process group; only the
    parent acts on it (it stops the workers), so no worker prints a traceback of its own."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _run_processes(specs, rows, n, bar, fn) -> None:
    pool = ProcessPoolExecutor(max_workers=n, initializer=_ignore_sigint)
    try:
        futures: dict[Future, int] = {pool.submit(fn, s): i for i, s in enumerate(specs)}
        pending = set(futures)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for f in done:
                i = futures[f]
                try:
                    rows[i] = f.result()
                except Exception as exc:  # the worker process itself died
                    rows[i] = {**specs[i].as_row(), "status": "error", "error": f"{type(exc).__name__}: {exc}"}
                bar.update(1)
    except KeyboardInterrupt:
        bar.close()  # its last count before the stopping line, not after it
        _stop_processes(pool, n)
        raise
    pool.shutdown()


def _stop_processes(pool: ProcessPoolExecutor, n: int) -> None:
    """Ctrl-C: drop the runs not started, end the running ones now (a run is not
    interruptible midway, and waiting for it is what made Ctrl-C take seconds)."""
    print(f"stopping: ending {n} worker process{'' if n == 1 else 'es'}; nothing is written, not even the runs "
          "already finished",
          file=sys.stderr, flush=True)
    # Python 3.14 has ProcessPoolExecutor.terminate_workers(); before it, the processes are
    # reached through the executor's own table of them.
    procs = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        p.terminate()
    for p in procs:
        p.join(STOP_GRACE_S)
        if p.is_alive():
            p.kill()
            p.join()


DASK_CONNECT_TIMEOUT_S = 5.0
"""How long to wait for a remote Dask scheduler before giving up (one error line)."""


def _run_dask(specs, rows, address, workers, bar, fn) -> None:
    try:
        from dask.distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise InputError("--dask needs the optional dependency dask[distributed] (pip install 'dask[distributed]')") from None
    cluster = None
    if address == "local":
        n = max(1, workers or 2)
        cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=n > 1,
                               dashboard_address=None)
        client = Client(cluster)
    else:
        try:
            client = Client(address, timeout=DASK_CONNECT_TIMEOUT_S)
        except (OSError, TimeoutError) as exc:
            raise InputError(f"--dask {address}: cannot reach a Dask scheduler there within "
                             f"{DASK_CONNECT_TIMEOUT_S:g} s ({type(exc).__name__}); expected 'local' or the address "
                             f"of a running scheduler, e.g. tcp://host:8786") from None
    futures = []
    try:
        futures = client.map(fn, list(specs), pure=False)
        index = {f.key: i for i, f in enumerate(futures)}
        for f in as_completed(futures):
            i = index[f.key]
            try:
                rows[i] = f.result()
            except Exception as exc:
                rows[i] = {**specs[i].as_row(), "status": "error", "error": f"{type(exc).__name__}: {exc}"}
            bar.update(1)
    except KeyboardInterrupt:
        bar.close()
        where = "the local Dask cluster" if cluster is not None else f"the scheduler at {address}"
        print(f"stopping: cancelling the runs on {where}; nothing is written, not even the runs already finished",
              file=sys.stderr, flush=True)
        client.cancel(futures, force=True)
        raise
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def parse_param(text: str) -> tuple[str, list[object]]:
    """``"key=v1,v2"`` -> ``("key", [v1, v2])`` with ints/floats converted.

    Raises:
        InputError: no ``=`` or an empty key or value list (the message quotes the text).
    """
    if "=" not in text:
        raise InputError(f"--param {text!r}: expected KEY=V1,V2,...")
    key, _, values = text.partition("=")
    vals = [v for v in values.split(",") if v != ""]
    if not key or not vals:
        raise InputError(f"--param {text!r}: expected KEY=V1,V2,... with a key and at least one value")
    numbers = [_number(v) for v in vals]
    for i, v in enumerate(numbers):
        if v in numbers[:i]:      # 2 and 2.0 are one value; NaN never equals itself
            raise InputError(f"--param {text}: each value once, got {vals[i]} more than once")
    return key, numbers


def param_texts(text: str) -> tuple[str, list[str]]:
    """``"key=v1,v2"`` -> ``("key", ["v1", "v2"])``, the values as typed (for messages; see
    :func:`grid`'s ``typed``). Call :func:`parse_param` first: it refuses malformed text."""
    key, _, values = text.partition("=")
    return key, [v for v in values.split(",") if v != ""]


def _number(v: str) -> object:
    for cast in (int, float):
        try:
            return cast(v)
        except ValueError:
            pass
    return v


UNIT_KINDS = ("percent", "ratio", "duration", "count", "index", "mean")
"""What :func:`format_rows`' ``units`` may say of a column (see there)."""


def format_rows(rows: Iterable[Mapping], fmt: str = "table", columns: Sequence[str] | None = None,
                units: Mapping[str, str] | None = None) -> str:
    """Rows of dicts as an aligned text table, CSV or JSON.

    CSV and JSON carry every number without float noise
    (:func:`~lab01_cluster_sim.formatting.clean_number`: 12 significant digits; NaN and
    infinity are an empty cell in CSV, ``null`` in JSON). In the table, whole floats print as
    integers, other floats with 4 significant digits and never an exponent, a missing
    figure (None, NaN) as ``-``; names are left-aligned, numbers right-aligned.

    ``units`` (table only) maps a column to how the commands' shared rules
    (:mod:`lab01_cluster_sim.formatting`) print it: ``"percent"`` (a value in %, one
    decimal, ``" %"`` added to the header), ``"ratio"`` (a value in [0, 1] shown as %, the
    same), ``"duration"`` (seconds shown in s, min or h, one unit for the whole column,
    named in the header: ``mean_wait_s`` -> ``mean_wait (min)``), ``"count"`` (integers;
    in CSV and JSON too, where a whole float count such as ``56.0`` becomes ``56``),
    ``"index"`` (a score such as Jain's index or a slowdown, 3 decimals, so ``0.903`` and
    ``0.988`` line up), ``"mean"`` (an average of counts, 2 decimals).

    Raises:
        InputError: an unknown format.
        ValueError: a ``units`` kind not in :data:`UNIT_KINDS`.
    """
    from lab01_cluster_sim.formatting import (clean_record, csv_cell, duration_unit, format_duration,
                                                    format_number, format_percent, render_table)

    rows = list(rows)
    units = dict(units or {})
    bad = sorted(k for k in units.values() if k not in UNIT_KINDS)
    if bad:
        raise ValueError(f"format_rows: unit kind {bad[0]!r}; expected one of {', '.join(UNIT_KINDS)}")
    if columns is None:
        columns = []
        for r in rows:
            for k in r:
                if k not in columns:
                    columns.append(k)
    counts = [c for c in columns if units.get(c) == "count"]
    if counts and fmt in ("json", "csv"):
        rows = [{**r, **{c: int(r[c]) for c in counts
                         if isinstance(r.get(c), float) and math.isfinite(r[c]) and r[c].is_integer()}} for r in rows]
    if fmt == "json":
        return json.dumps([clean_record({c: r.get(c) for c in columns}) for r in rows], indent=2, default=str,
                          allow_nan=False)
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(columns)
        for r in rows:
            w.writerow([csv_cell(r.get(c)) for c in columns])
        return buf.getvalue()
    if fmt != "table":
        raise InputError(f"--format {fmt!r}: expected table, csv or json")

    def plain(v) -> str:
        if v is None:
            return "-"
        if isinstance(v, float):
            if math.isnan(v):
                return "-"
            if math.isinf(v) or v.is_integer():
                return format_number(v).replace(",", "")
            text = f"{v:.4g}"
            if "e" in text:  # below 1e-4 or above 1e4: plain digits instead
                text = f"{v:.0f}" if abs(v) >= 1 else f"{v:.6f}".rstrip("0")
            return text
        return str(v)

    head, cols = [], []
    for c in columns:
        values = [r.get(c) for r in rows]
        kind = units.get(c)
        if kind in ("percent", "ratio"):
            head.append(f"{c} %")
            cols.append([plain(v) if not isinstance(v, (int, float)) or isinstance(v, bool)
                         else format_percent(v, fraction=kind == "ratio", unit=False, missing="-") for v in values])
        elif kind == "duration":
            name, _ = duration_unit(v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool))
            head.append(f"{c.removesuffix('_s')} ({name})")
            cols.append([format_duration(v, unit=name, show_unit=False, missing="-")
                         if isinstance(v, (int, float)) and not isinstance(v, bool) else plain(v) for v in values])
        elif kind in ("index", "mean"):
            head.append(str(c))
            places = 3 if kind == "index" else 2
            cols.append([plain(v) if not isinstance(v, (int, float)) or isinstance(v, bool)
                         or not math.isfinite(v) else f"{v:.{places}f}" for v in values])
        elif kind == "count":
            head.append(str(c))
            cols.append([format_number(v, missing="-").replace(",", "")
                         if isinstance(v, (int, float)) and not isinstance(v, bool) else plain(v) for v in values])
        else:
            head.append(str(c))
            cols.append([plain(v) for v in values])
    align = ["r" if all(isinstance(r.get(c), (int, float)) or r.get(c) is None for r in rows) else "l"
             for c in columns]
    return render_table(head, [list(row) for row in zip(*cols)], align=align) + "\n"
