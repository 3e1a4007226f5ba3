"""Shape-aware admission and defragmentation, measured: stranded GPUs, waits, utilisation.

Runs the remedies of :mod:`lab01_cluster_sim.defrag` (plugins of the one engine) on a
workload, each run a :class:`~lab01_cluster_sim.simulate.Simulation` (placement MostAllocated,
gang) with the ``checkpoints`` plugin and an
:class:`~lab01_cluster_sim.disciplines.outcomes.OutcomeRecorder` that samples stranded GPUs
(:func:`~lab01_cluster_sim.defrag.stranded_gpus`) after every scheduling cycle.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lab01_cluster_sim.defrag import (ShapeAwareAdmission, filter_mask, pending_jobs, stranded_gpus,
                                      stranded_milli_by_node)
from lab01_cluster_sim.disciplines.outcomes import OutcomeRecorder, Outcomes
from lab01_cluster_sim.disciplines.preemption import Checkpoints, CheckpointSpec
from lab01_cluster_sim.model import MILLI_PER_GPU, Job, Node
from lab01_cluster_sim.policies.generic import MostAllocated
from lab01_cluster_sim.simulate import Simulation
from lab01_cluster_sim.studies.sharing import mig_pool_timeline


def _run(nodes: Sequence[Node], jobs: Sequence[Job], discipline: str, plugins: Sequence, observe,
         default_checkpoint: CheckpointSpec = CheckpointSpec()) -> Outcomes:
    """One run with ``plugins`` between the checkpoints plugin and the recorder."""
    recorder = OutcomeRecorder(observe)
    Simulation(nodes, jobs, MostAllocated(), "gang", discipline,
               plugins=[Checkpoints(default=default_checkpoint), *plugins, recorder]).run()
    return recorder.result()


@dataclass(frozen=True)
class AdmissionRow:
    """One run of the shape-aware admission comparison.

    ``mean_stranded_gpus`` counts every free GPU no pending job can use now, including the
    idle GPUs of reserved nodes while only small jobs wait (they may not use them): a
    reservation strands capacity on purpose, and ``mean_stranded_reserved_gpus`` is that part
    (the rest are fragments on the shared nodes). A reservation lowers stranding only when
    whole-node jobs come often enough to fill the reserved nodes; on a lightly loaded cluster
    it raises it.

    Mean waits (s) cover every job of the class: a job that never started counts with a
    *censored* wait, from its submission to the end of the run (a lower bound on its true
    wait), so jobs kept out forever are not averaged away; ``*_never_started`` say how
    many such jobs there were (0 means every wait is exact).
    """

    reserved_fraction: float
    mean_stranded_gpus: float
    big_job_mean_wait_s: float
    small_job_mean_wait_s: float
    utilisation: float
    big_jobs_never_started: int = 0
    small_jobs_never_started: int = 0
    mean_stranded_reserved_gpus: float = 0.0


def compare_shape_aware(nodes: Sequence[Node], jobs: Sequence[Job], fractions: Sequence[float],
                        discipline: str = "fifo-skip") -> list[AdmissionRow]:
    """Run the workload with each reserved fraction; stranded GPUs are averaged over event samples.

    "Big" jobs are those whose workers ask for a whole node's GPUs. Jobs that never
    start (e.g. every small job when all nodes are reserved) are counted in
    :attr:`AdmissionRow.small_jobs_never_started` / ``big_jobs_never_started`` and
    enter the mean waits censored at the end of the run.
    """
    rows = []
    full = max((n.gpu_count for n in nodes), default=0)
    for f in fractions:
        adm = ShapeAwareAdmission(nodes, f)

        def observe(sim, t: float) -> tuple[float, float]:
            by_node = stranded_milli_by_node(sim.state, pending_jobs(sim), lambda job: filter_mask(sim, job))
            return (float(by_node.sum()) / MILLI_PER_GPU,
                    float(by_node[adm.reserved[: by_node.shape[0]]].sum()) / MILLI_PER_GPU)

        res = _run(nodes, jobs, discipline, [adm], observe)
        big_ids = {j.job_id for j in jobs if j.gpus_per_worker == full}
        # never started: censored at the end of the run (lower bound on the wait)
        waits = {o.job_id: (o.wait if o.wait is not None else max(0.0, res.end_time - o.submit), o.wait is None)
                 for o in res.outcomes}
        big = [w for i, (w, _) in waits.items() if i in big_ids]
        small = [w for i, (w, _) in waits.items() if i not in big_ids]
        big_never = sum(1 for i, (_, never) in waits.items() if never and i in big_ids)
        small_never = sum(1 for i, (_, never) in waits.items() if never and i not in big_ids)
        ts = [row[0] for row in res.timeline]
        mean_stranded = _time_weighted(ts, [v[0] for v in res.samples])
        mean_reserved = _time_weighted(ts, [v[1] for v in res.samples])
        rows.append(AdmissionRow(f, mean_stranded, float(np.mean(big)) if big else 0.0,
                                 float(np.mean(small)) if small else 0.0, res.summary()["utilisation"],
                                 big_never, small_never, mean_reserved))
    return rows


def _time_weighted(times: Sequence[float], values: Sequence[float]) -> float:
    """Mean of a step function holding ``values[i]`` from ``times[i]`` to ``times[i + 1]``
    (the last sample has no width); the plain mean when no time passes, 0 with no sample."""
    if len(times) > 1:
        dt = np.diff(times)
        if dt.sum() > 0:
            return float(np.dot(values[:-1], dt) / dt.sum())
        return float(np.mean(values))
    return float(values[0]) if len(values) else 0.0


@dataclass(frozen=True)
class DashboardData:
    """Series for :func:`lab01_cluster_sim.plots.dashboard.fragmentation_dashboard`."""

    times: list[float]
    stranded: list[float]
    allocation_ratio: list[float]
    mig_times: list[float]
    mig_use: dict[str, list[float]]


def dashboard_data(nodes: Sequence[Node], jobs: Sequence[Job], mig_layouts=(), mig_jobs=(),
                   discipline: str = "fifo-skip", node_filter=None, on_blocked=None,
                   default_checkpoint=None) -> DashboardData:
    """Run ``jobs`` and sample stranded GPUs and the allocation ratio at every event batch;
    replay ``mig_jobs`` ``(submit_s, duration_s, memory_gb, compute_share)`` on ``mig_layouts``
    for the MIG panel (:func:`lab01_cluster_sim.studies.sharing.mig_pool_timeline`).

    ``node_filter`` (e.g. :class:`~lab01_cluster_sim.defrag.ShapeAwareAdmission`) and
    ``on_blocked`` (e.g. :class:`~lab01_cluster_sim.defrag.Defragmenter`) are engine plugins,
    registered in that order after the ``checkpoints`` plugin (``default_checkpoint``).
    """
    total = sum(n.gpu_count for n in nodes) or 1

    def observe(sim, t: float) -> tuple[float, float]:
        return (stranded_gpus(sim.state, pending_jobs(sim), lambda job: filter_mask(sim, job)),
                sim.state.allocated_milli() / (total * MILLI_PER_GPU))

    plugins = [p for p in (node_filter, on_blocked) if p is not None]
    res = _run(nodes, jobs, discipline, plugins, observe, default_checkpoint or CheckpointSpec())
    times = [row[0] for row in res.timeline]
    mig = mig_pool_timeline(list(mig_layouts), list(mig_jobs)) if mig_layouts else None
    return DashboardData(times, [s[0] for s in res.samples], [s[1] for s in res.samples],
                         mig.times if mig else [], mig.use if mig else {})


def demo_mig_jobs(seed: int = 0, n: int = 200, mean_interarrival_s: float = 300.0) -> list[tuple[float, float, float, float]]:
    """Seeded small inference jobs for the MIG panel: memory 2-20 GB (uniform), compute share
    0.05-0.4 (uniform), exponential gaps, log-normal durations (median 20 min, sigma 1)."""
    rng = np.random.default_rng(seed)
    t = np.cumsum(rng.exponential(mean_interarrival_s, n))
    dur = np.maximum(1.0, rng.lognormal(np.log(1200.0), 1.0, n))
    mem = rng.uniform(2, 20, n)
    comp = rng.uniform(0.05, 0.4, n)
    return [(float(t[i]), float(dur[i]), float(round(mem[i], 1)), float(round(comp[i], 3))) for i in range(n)]
