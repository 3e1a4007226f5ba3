"""Helpers the course book's chapters call, so that no chapter carries model code.

* :func:`fit_steps`: whole-GPU jobs placed one by one by a fit policy, with the stranded GPUs
  after each (chapter 6's step-through);
* :func:`compare_migration`: the same workload without and with defragmentation by
  migration (chapter 6);
* :func:`holdings_at`: which GPUs each job holds at a moment of a simulation (chapter 7).

Everything here calls the public APIs of the simulator (policies, ``defrag``, the engine's
``Simulation`` with plugins, ``simulate``); nothing is simulated here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class FitStep:
    """The cluster after some jobs were placed (for the book's step-through of fit policies).

    Attributes:
        gpu_free: free milli-GPU per node and GPU, shape ``(nodes, gpus)`` (a copy).
        owners: ``(job index, node index, GPU indices)`` of every job placed so far.
        stranded: GPUs stranded for the waiting job (:func:`lab01_cluster_sim.defrag.stranded_gpus`).
    """

    gpu_free: Any
    owners: tuple
    stranded: float


def fit_steps(nodes: Sequence[Any], sizes: Sequence[int], policy: str, waiting: Any,
              seed: int = 0) -> list[FitStep]:
    """Place whole-GPU jobs of ``sizes`` GPUs one by one with ``policy`` (a name for
    :func:`lab01_cluster_sim.registry.get_policy`); return the state before any job and
    after each, with the GPUs stranded for the ``waiting`` job.

    Each job asks for 1 CPU and 1 GiB, so only GPUs decide. Raises
    :class:`lab01_cluster_sim.errors.InputError` when a job fits nowhere (names its index).
    """
    import numpy as np

    from lab01_cluster_sim.cluster import ClusterState, Request
    from lab01_cluster_sim.defrag import stranded_gpus
    from lab01_cluster_sim.errors import InputError
    from lab01_cluster_sim.policies.base import place
    from lab01_cluster_sim.registry import get_policy

    state, pol, rng = ClusterState(list(nodes)), get_policy(policy), np.random.default_rng(seed)
    out = [FitStep(state.gpu_free.copy(), (), stranded_gpus(state, [waiting]))]
    owners: list[tuple] = []
    for j, k in enumerate(sizes):
        req = Request(1000, 1024, int(k), 1000)
        placed = place(state, req, pol, rng)
        if placed is None:
            raise InputError(f"sizes[{j}]: a job of {k} GPUs fits on no node after the jobs before it")
        node, gpus = placed
        state.bind(node, gpus, req)
        owners.append((j, int(node), tuple(int(g) for g in gpus)))
        out.append(FitStep(state.gpu_free.copy(), tuple(owners), stranded_gpus(state, [waiting])))
    return out


@dataclass(frozen=True)
class MigrationRow:
    """One run of the with/without-migration comparison (:func:`compare_migration`).

    Attributes:
        label: "no migration" or "migration".
        mean_stranded_gpus: time-weighted mean of stranded GPUs over the run.
        gang_mean_wait_s: mean wait of the whole-node jobs (s); still-pending ones count
            their wait until the end of the run.
        others_mean_wait_s: the same for the other jobs (s).
        utilisation: busy GPU time / (GPUs x makespan), lost work counted as busy.
        moves: jobs moved; defragmentations: plans executed.
        cost_gpu_hours: lost progress plus checkpoint and restore time of the moves.
    """

    label: str
    mean_stranded_gpus: float
    gang_mean_wait_s: float
    others_mean_wait_s: float
    utilisation: float
    moves: int
    defragmentations: int
    cost_gpu_hours: float


def compare_migration(nodes: Sequence[Any], jobs: Sequence[Any], checkpoint: Any,
                      discipline: str = "fifo-skip") -> list[MigrationRow]:
    """Run ``jobs`` on ``nodes`` without and with defragmentation by migration
    (:class:`lab01_cluster_sim.defrag.Defragmenter`), same discipline and checkpoint spec.

    Whole-node jobs are those whose workers ask for a node's full GPU count. Stranded GPUs
    are sampled at each event batch and averaged weighted by the time to the next batch.
    """
    import numpy as np

    from lab01_cluster_sim.defrag import Defragmenter, filter_mask, pending_jobs, stranded_gpus
    from lab01_cluster_sim.disciplines.outcomes import OutcomeRecorder
    from lab01_cluster_sim.disciplines.preemption import Checkpoints
    from lab01_cluster_sim.policies.generic import MostAllocated
    from lab01_cluster_sim.simulate import Simulation

    full = max((n.gpu_count for n in nodes), default=0)
    big_ids = {j.job_id for j in jobs if j.gpus_per_worker == full}
    rows = []
    for label, defrag in (("no migration", None), ("migration", Defragmenter())):
        def observe(sim: Any, t: float) -> float:
            return stranded_gpus(sim.state, pending_jobs(sim), lambda job: filter_mask(sim, job))

        recorder = OutcomeRecorder(observe)
        plugins = [Checkpoints(default=checkpoint), *([defrag] if defrag else []), recorder]
        Simulation(list(nodes), list(jobs), MostAllocated(), "gang", discipline, plugins=plugins).run()
        res = recorder.result()
        ts = np.asarray([row[0] for row in res.timeline], dtype=float)
        vals = np.asarray(res.samples, dtype=float)
        dt = np.diff(ts)
        mean_stranded = float(np.dot(vals[:-1], dt) / dt.sum()) if len(ts) > 1 and dt.sum() > 0 \
            else float(vals.mean() if len(vals) else 0.0)
        waits = {o.job_id: (o.wait if o.wait is not None else res.end_time - o.submit) for o in res.outcomes}
        big = [w for i, w in waits.items() if i in big_ids]
        small = [w for i, w in waits.items() if i not in big_ids]
        rows.append(MigrationRow(
            label, mean_stranded, float(np.mean(big)) if big else 0.0, float(np.mean(small)) if small else 0.0,
            float(res.summary()["utilisation"]),
            sum(len(e.moves) for e in defrag.events) if defrag else 0,
            len(defrag.events) if defrag else 0,
            float(defrag.gpu_hours_cost()) if defrag else 0.0))
    return rows


def holdings_at(result: Any, t: float) -> list[tuple[str, str, tuple[int, ...]]]:
    """GPUs held at time ``t`` (s) in a :class:`lab01_cluster_sim.metrics.SimulationResult`:
    ``(job id, node name, GPU indices)`` per placement, in the result's job order.

    A job holds its placements when it started at or before ``t`` and had not ended by
    ``t``, or when it never started but has workers bound (a partial gang, as in a
    deadlock).
    """
    out = []
    for rec in result.records.values():
        started = rec.start_time is not None and rec.start_time <= t and (rec.end_time is None or rec.end_time > t)
        partial = rec.start_time is None and bool(rec.placements)
        if not (started or partial):
            continue
        for p in rec.placements or rec.last_placements:
            out.append((rec.job_id, p.node, tuple(int(g) for g in p.gpus)))
    return out


@dataclass(frozen=True)
class PodOutcome:
    """What became of one pod of an autoscaler scenario (a row of the run's ``pods.csv``).

    Attributes:
        pod: the pod's name (``namespace/name`` outside ``default``).
        status: ``"Pending"`` (never bound), ``"Running"`` (bound, not finished when the run
            ended) or ``"Succeeded"``.
        node: the node it was last bound to, or ``""``.
        instance_type: that node's instance type (or ``""``).
        reason: why it is Pending, as the run reports it (``pods.csv`` column ``reason``), or
            ``""`` when the run gives none.
    """

    pod: str
    status: str
    node: str
    instance_type: str
    reason: str


def scenario_outcomes(path: str | Path, output: str | Path) -> tuple[list[PodOutcome], list[str]]:
    """Run the autoscaler scenario at ``path`` (``python -m lab01_cluster_sim run``'s runner,
    output written under ``output``) and say what became of each pod.

    Returns:
        ``(outcomes, blocked)``: one :class:`PodOutcome` per pod in the scenario's order and
        ``[]``; or ``([], blocked)`` when the simulator cannot execute the scenario yet, one
        line per thing it does not model (``file:line:column: object: what``, as ``run
        --check`` lists them; the page shows them as such).

    Raises:
        ScenarioError: the scenario is invalid (one line naming file, object and field), or it
            is not an autoscaler scenario (no NodePool).
    """
    import csv

    from lab01_cluster_sim.scenario import ScenarioError, blockers, kind_of, load_scenario, run_scenario

    sc = load_scenario(path)
    if kind_of(sc) != "autoscaler":
        raise ScenarioError(f"{path}: expected a scenario with a NodePool (autoscaler mode), got {kind_of(sc)} mode")
    items = blockers(sc)
    if items:
        return [], items
    out = Path(output)
    run_scenario(sc, out)
    with open(out / "nodes.csv", newline="", encoding="utf-8") as f:
        types = {row["node"]: row["type"] for row in csv.DictReader(f)}
    outcomes = []
    with open(out / "pods.csv", newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            bound = bool(row.get("first_bound_s"))
            status = "Pending" if not bound else ("Succeeded" if row.get("finished_s") else "Running")
            node = row.get("node") or ""
            outcomes.append(PodOutcome(row["pod"], status, node, types.get(node, ""), row.get("reason") or ""))
    return outcomes, []
