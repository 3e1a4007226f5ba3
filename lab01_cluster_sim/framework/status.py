"""What a scheduling attempt returns: the framework's status values and results.

As kube-scheduler's ``framework.Status`` codes (``pkg/scheduler/framework/interface.go``:
``Unschedulable``, ``UnschedulableAndUnresolvable``), the :class:`Outcome` of one try, what a
PreFilter plugin answers (:class:`PreFilterResult`, as ``framework.PreFilterResult``), and the
report of a naive-mode deadlock (:class:`DeadlockReport`: who holds what).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np

from lab01_cluster_sim.model import Placement, format_seconds

UNSCHEDULABLE = "Unschedulable"
"""Framework status: does not fit now; may fit later (stays pending)."""
UNSCHEDULABLE_AND_UNRESOLVABLE = "UnschedulableAndUnresolvable"
"""Framework status: cannot fit even on an empty cluster (rejected)."""


class Outcome(enum.Enum):
    """Result of :meth:`Scheduler.try_schedule` for one job."""

    STARTED = "started"      # every worker bound; the job runs
    PROGRESS = "progress"    # naive mode: one more worker bound, the gang is not complete
    WAITING = "waiting"      # nothing bound (not now); the job stays pending



# -- deadlock -----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Holding:
    """A pending job's partial allocation in a naive-mode deadlock."""

    job_id: str
    workers_bound: int
    workers: int
    placements: tuple[Placement, ...]

    @property
    def gpus_held(self) -> int:
        return sum(len(p.gpus) for p in self.placements)


@dataclass(frozen=True, slots=True)
class DeadlockReport:
    """Naive-mode deadlock: pending jobs hold parts of their gangs and none can ever finish
    gathering it, even after every running job (of finite duration) completes.

    Attributes:
        time: when it was detected, s.
        holdings: the jobs holding partial allocations, with their placements.
        waiting: other pending jobs (holding nothing) that are stuck too.
        free_gpus: fully free GPUs at detection time.
    """

    time: float
    holdings: tuple[Holding, ...]
    waiting: tuple[str, ...]
    free_gpus: int

    def lines(self) -> list[str]:
        """Human-readable report, one line per holding."""
        out = [f"deadlock at t={format_seconds(self.time)}s: {len(self.holdings)} job(s) hold partial gangs, "
               f"{self.free_gpus} GPU(s) free, no job can complete its gang"]
        for h in self.holdings:
            where = ", ".join(f"{p.node}:gpu{','.join(map(str, p.gpus))}" if p.gpus else p.node
                              for p in h.placements)
            out.append(f"  {h.job_id}: {h.workers_bound}/{h.workers} workers bound, "
                       f"holds {h.gpus_held} GPU(s) on {where}")
        if self.waiting:
            out.append(f"  also stuck (holding nothing): {', '.join(self.waiting)}")
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())


# -- plugin outcomes -----------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class PreFilterResult:
    """What a PreFilter plugin answers for one scheduling attempt of one job (None = no opinion).

    Attributes:
        nodes: bool (N,): only these nodes are candidates in this attempt (Kubernetes'
            ``PreFilterResult.NodeNames``), e.g. the nodes of one NVLink island.
        wait: not now: the job stays pending (``Unschedulable``) with this reason, even if
            it would fit (a bounded wait for a better placement).
        retry_at: with ``wait``: run a scheduling cycle at this time, s.
        assign: the plugin chose every worker's place itself, ``((node, gpus), ...)``; they
            are bound as given (after the permit checks).
    """

    nodes: np.ndarray | None = None
    wait: str | None = None
    retry_at: float | None = None
    assign: tuple[tuple[int, tuple[int, ...]], ...] | None = None
