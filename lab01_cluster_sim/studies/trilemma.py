"""The scheduling trilemma on one workload: waiting, utilisation and fairness per discipline.

No discipline wins all three: strict FIFO is fair in order but idles GPUs behind a blocked
head; FIFO-skip keeps GPUs busy but starves big jobs; priority with preemption serves the
important jobs first and throws away work; DRF equalises tenants' dominant shares; EASY
backfill keeps utilisation high without starving the head. :func:`trilemma_report` runs
every discipline on the same jobs (one :class:`~lab01_cluster_sim.simulate.Simulation` each,
placement MostAllocated, gang, with the ``checkpoints`` plugin and an
:class:`~lab01_cluster_sim.disciplines.outcomes.OutcomeRecorder`) and returns one row each (the
numbers of :meth:`~lab01_cluster_sim.disciplines.outcomes.Outcomes.summary`). Two fairness indices, because "fair" means two things:
``jain_index`` is Jain's index over the tenants' mean inverse slowdown (how evenly queueing
slows them: strict FIFO scores high, since everyone waits in one line), ``jain_dominant_share``
over the dominant shares of the tenants with work waiting (what DRF equalises: DRF scores
high, while its big-gang tenant's jobs may wait longer and lower the first index).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lab01_cluster_sim.disciplines.core import PriorityPreemption
from lab01_cluster_sim.disciplines.outcomes import OutcomeRecorder
from lab01_cluster_sim.disciplines.preemption import Checkpoints, CheckpointSpec
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.model import Job, Node
from lab01_cluster_sim.policies.generic import MostAllocated
from lab01_cluster_sim.registry import DISCIPLINES, get_discipline
from lab01_cluster_sim.simulate import Simulation

COLUMNS = ("discipline", "mean_wait_s", "p99_wait_s", "utilisation", "jain_index", "jain_dominant_share",
           "lost_gpu_hours", "preemptions", "completed", "pending", "rejected")
"""Columns of a trilemma row, in report order."""


def discipline_summary(nodes: Sequence[Node], jobs: Sequence[Job], discipline: str,
                       checkpoint: CheckpointSpec = CheckpointSpec(),
                       checkpoints: Mapping[str, CheckpointSpec] | None = None) -> dict[str, float]:
    """Every number of :meth:`~lab01_cluster_sim.disciplines.outcomes.Outcomes.summary` for one
    run of ``jobs`` on ``nodes`` under ``discipline`` (jobs checkpoint as ``checkpoints`` says,
    others as ``checkpoint``; ``priority`` estimates its victims' lost work from the same specs).

    Raises:
        InputError: an unknown discipline.
    """
    disc = PriorityPreemption(checkpoints, checkpoint) if discipline == "priority" else get_discipline(discipline)
    recorder = OutcomeRecorder()
    Simulation(nodes, jobs, MostAllocated(), "gang", disc,
               plugins=[Checkpoints(checkpoints, checkpoint), recorder]).run()
    return recorder.result().summary()


def trilemma_report(nodes: Sequence[Node], jobs: Sequence[Job], disciplines: Sequence[str] = tuple(DISCIPLINES),
                    checkpoint: CheckpointSpec = CheckpointSpec(),
                    checkpoints: Mapping[str, CheckpointSpec] | None = None) -> list[dict]:
    """One row (a dict with :data:`COLUMNS`) per discipline, in the order given.

    Raises:
        InputError: an unknown discipline or an empty list.
    """
    if not disciplines:
        raise InputError("disciplines: expected at least one of " + ", ".join(DISCIPLINES))
    rows = []
    for d in disciplines:
        s = discipline_summary(nodes, jobs, d, checkpoint, checkpoints)
        rows.append({"discipline": d, **{k: s[k] for k in COLUMNS[1:]}})
    return rows
