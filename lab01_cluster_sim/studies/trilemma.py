"""The scheduling trilemma on one workload: waiting, utilisation and fairness per discipline.

No discipline wins all three: strict FIFO is fair in order but idles GPUs behind a blocked
head; FIFO-skip keeps GPUs busy but starves big jobs; priority with preemption serves the
important jobs first and throws away work; DRF equalises tenants' dominant shares; EASY
backfill keeps utilisation high without starving the head. :func:`trilemma_report` runs
every discipline on the same jobs and returns one row each (the numbers of
:meth:`RunnerResult.summary`). Two fairness indices, because "fair" means two things:
``jain_index`` is Jain's index over the tenants' mean inverse slowdown (how evenly queueing
slows them: strict FIFO scores high, since everyone waits in one line), ``jain_dominant_share``
over the dominant shares of the tenants with work waiting (what DRF equalises: DRF scores
high, while its big-gang tenant's jobs may wait longer and lower the first index).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lab01_cluster_sim.disciplines.preemption import CheckpointSpec
from lab01_cluster_sim.disciplines.runner import DISCIPLINES, run_discipline
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.model import Job, Node

COLUMNS = ("discipline", "mean_wait_s", "p99_wait_s", "utilisation", "jain_index", "jain_dominant_share",
           "lost_gpu_hours", "preemptions", "completed", "pending", "rejected")
"""Columns of a trilemma row, in report order."""


def trilemma_report(nodes: Sequence[Node], jobs: Sequence[Job], disciplines: Sequence[str] = DISCIPLINES,
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
        res = run_discipline(nodes, jobs, d, default_checkpoint=checkpoint, checkpoints=checkpoints)
        s = res.summary()
        rows.append({"discipline": d, **{k: s[k] for k in COLUMNS[1:]}})
    return rows
