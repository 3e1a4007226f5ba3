"""Queue sort: the pending jobs and the order a scheduling pass tries them in.

:class:`QueueDiscipline` is the QueueSort extension point (kube-scheduler's
``QueueSortPlugin``, ``pkg/scheduler/framework/interface.go``) widened to the whole pass: a
discipline keeps the pending jobs and runs a pass by calling the scheduler's ``try_schedule``
in its order. The two built in here are strict FIFO (:class:`Fifo`) and FIFO that skips a job
that does not fit (:class:`FifoSkip`); priority, DRF and backfill are plugins
(:mod:`lab01_cluster_sim.disciplines.core`), listed with these in
:data:`lab01_cluster_sim.registry.DISCIPLINES`.
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any, ClassVar

from lab01_cluster_sim.framework.status import Outcome
from lab01_cluster_sim.model import Job, JobRecord, JobState

Scheduler = Any
"""The :class:`lab01_cluster_sim.scheduler.Scheduler` that calls in (one floor up: named here, not
imported)."""

def shape_key(job: Job, gang: bool = True) -> tuple:
    """Hashable shape of a job for the blocked memo: the worker request's numbers and
    allowed models, and the number of workers in gang mode (1 in naive mode, where one
    worker is placed at a time). A plain tuple, cheap to hash."""
    return (job.cpu_milli, job.memory_mib, job.gpus_per_worker, job.gpu_milli, job.gpu_models,
            job.workers if gang else 1)


class QueueDiscipline:
    """Queue sort: holds the pending jobs and decides in which order they are tried.

    A discipline must implement :meth:`push`, :meth:`remove`, :meth:`order` and
    ``__len__``. Jobs that found no room are remembered by the scheduler as blocked and
    answered WAITING at once until a release makes room on a node that could host one of
    their workers (then they are forgotten, "woken"; :meth:`Scheduler.pop_woken` lists them).
    A discipline that sets ``lazy_wake = True`` takes over waking instead (see
    :class:`FifoSkip`). The default :meth:`run_pass` tries the jobs in :meth:`order`; with
    ``blocking = True`` it stops at the first job that cannot be served (strict
    head-of-line blocking). Priority, DRF or backfill disciplines override :meth:`order`
    and/or :meth:`run_pass` and may call :meth:`Scheduler.evict` to preempt.
    """

    name: ClassVar[str] = ""
    blocking: ClassVar[bool] = False
    lazy_wake: ClassVar[bool] = False

    def push(self, record: JobRecord) -> None:
        raise NotImplementedError

    def remove(self, record: JobRecord) -> None:
        raise NotImplementedError

    def order(self) -> Iterable[JobRecord]:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError

    def run_pass(self, scheduler: Scheduler) -> None:
        """Try pending jobs once each, in :meth:`order`."""
        for record in list(self.order()):
            if record.state is not JobState.PENDING:
                continue
            outcome = scheduler.try_schedule(record)
            if outcome is Outcome.WAITING and self.blocking:
                break


class Fifo(QueueDiscipline):
    """First in, first out with strict head-of-line blocking: if the oldest pending job
    cannot start, nobody behind it is tried (the classic batch-queue FIFO). Order is by
    first enqueue (``record.queue_seq``): a job evicted and requeued gets its old place back."""

    name: ClassVar[str] = "fifo"
    blocking: ClassVar[bool] = True

    def __init__(self) -> None:
        self._queue: dict[str, JobRecord] = {}
        self._last = -1

    def push(self, record: JobRecord) -> None:
        self._queue[record.job_id] = record
        if record.queue_seq < self._last:    # a requeued job: back to its place (rare, O(n))
            self._queue = dict(sorted(self._queue.items(), key=lambda kv: kv[1].queue_seq))
        else:
            self._last = record.queue_seq

    def remove(self, record: JobRecord) -> None:
        self._queue.pop(record.job_id, None)

    def order(self) -> Iterator[JobRecord]:
        return iter(self._queue.values())

    def __len__(self) -> int:
        return len(self._queue)

    def run_pass(self, scheduler: Scheduler) -> None:
        if scheduler.mode == "naive":
            return super().run_pass(scheduler)
        # Gang mode: only the head can start; started jobs leave the queue.
        while self._queue:
            head = next(iter(self._queue.values()))
            if scheduler.try_schedule(head) is not Outcome.STARTED:
                return


def _first(item: tuple) -> object:
    return item[0]


class FifoSkip(QueueDiscipline):
    """First in, first out, but a blocked job does not block the ones behind it: every
    pending job is tried in arrival order (what kube-scheduler does by default).

    Jobs are kept in one FIFO per job shape (worker request x workers). A pass merges the
    heads of the *active* shapes by arrival order; a shape whose head cannot be placed goes
    dormant (the rest of that shape cannot be placed either: resources only shrink during a
    pass). Dormant shapes come back by *lazy wake* (``lazy_wake = True``): the scheduler
    only records which nodes got resources back, and the pass repeatedly takes the earliest
    dormant shape whose worker fits one of those nodes now (one vector test over the
    blocked shapes, :meth:`Scheduler.earliest_fitting_blocked`), merged by arrival order
    with the active shapes. A dormant shape that fits none of the freed nodes cannot be
    placed anywhere, so it is never touched; the schedule is the same as retrying every
    blocked job in order (``tests/lab01/test_properties.py`` checks it). A pass thus costs
    O(placed x blocked shapes) vector work plus O((placed + new shapes) log shapes)
    comparisons, not O(pending). With extra filters or in naive mode it falls back to trying every job.
    """

    name: ClassVar[str] = "fifo-skip"
    blocking: ClassVar[bool] = False
    lazy_wake: ClassVar[bool] = True

    def __init__(self) -> None:
        # per shape: entries (queue_seq, token, record) in queue_seq order
        self._by_shape: dict[tuple, deque[tuple[int, int, JobRecord]]] = {}
        self._dormant: set[tuple] = set()
        self._active: set[tuple] = set()  # shapes with jobs that are not dormant
        self._token = 0
        self._live: dict[str, int] = {}  # job id -> token of its live entry
        self._queued: dict[str, tuple[int, JobRecord]] = {}  # job id -> (queue_seq, record), for order()

    @staticmethod
    def _shape(record: JobRecord) -> tuple:
        # Same as Scheduler.blocked_key in gang mode without extra filters.
        return shape_key(record.job) + (None,)

    def push(self, record: JobRecord) -> None:
        key = self._shape(record)
        dq = self._by_shape.setdefault(key, deque())
        entry = (record.queue_seq, self._token, record)
        if dq and dq[-1][0] > record.queue_seq:
            # A requeued job (evicted) goes back to its place by first enqueue (rare).
            i = len(dq)
            while i > 0 and dq[i - 1][0] > record.queue_seq:
                i -= 1
            dq.insert(i, entry)
        else:
            dq.append(entry)
        if key not in self._dormant:
            self._active.add(key)
        self._live[record.job_id] = self._token
        self._queued[record.job_id] = (record.queue_seq, record)
        self._token += 1

    def remove(self, record: JobRecord) -> None:
        # Lazy deletion: the entry is dropped when it reaches the head of its deque.
        self._live.pop(record.job_id, None)
        self._queued.pop(record.job_id, None)

    def _head(self, key: tuple) -> tuple[int, int, JobRecord] | None:
        dq = self._by_shape.get(key)
        if dq is None:
            return None
        live = self._live
        while dq and live.get(dq[0][2].job_id) != dq[0][1]:
            dq.popleft()
        if not dq:
            del self._by_shape[key]
            self._dormant.discard(key)
            self._active.discard(key)
            return None
        return dq[0]

    def order(self) -> list[JobRecord]:
        return [rec for _, rec in sorted(self._queued.values(), key=_first)]

    def __len__(self) -> int:
        return len(self._live)

    def run_pass(self, scheduler: Scheduler) -> None:
        woken = scheduler.pop_woken()
        if scheduler.mode == "naive" or not scheduler.interchangeable:
            # Per-shape skipping assumes jobs of one shape are interchangeable, which extra
            # filters that read the job (tolerations) or scheduling plugins (PreFilter,
            # device filters, permits) break: try every job instead.
            # Shapes left dormant by lazy wake are forgotten so the plain path retries them.
            for key in self._dormant:
                scheduler.wake(key)
            scheduler.pop_released()
            self._active.update(k for k in self._dormant if k in self._by_shape)
            self._dormant.clear()
            return super().run_pass(scheduler)
        if woken is None:  # every blocked shape was forgotten (a node came back)
            woken = list(self._dormant)
        for key in woken:
            if key in self._dormant:
                self._dormant.discard(key)
                if key in self._by_shape:
                    self._active.add(key)
        lazy = scheduler.lazy_wake_active()
        released = scheduler.pop_released() if lazy else []
        # The heads of the active shapes as (-queue_seq, key), sorted: the earliest head is
        # last, so it pops in O(1) and a shape's next head goes back in by bisection (an
        # in-place list insert: a memmove of at most a few thousand pointers; the 100,000-job
        # synthetic benchmark has 4,133 shapes). queue_seq is unique, so keys are never
        # compared. This is a merge of queue heads inside one pass, not an event queue: the
        # engine's heap (engine.py) is the only one.
        entries = []
        for key in list(self._active):
            head = self._head(key)
            if head is not None:
                entries.append((-head[0], key))
        entries.sort()
        # Lazy wake: of the dormant shapes, the earliest one whose worker fits a node freed
        # since the last pass goes next, in arrival order with the active shapes. A dormant
        # shape that fits none of them cannot be placed (no other node got room), so it is
        # never touched: no wake-then-fail churn.
        cand: tuple | None = None
        cand_valid = False
        while True:
            if lazy and released and not cand_valid:
                cand = scheduler.earliest_fitting_blocked(released)
                cand_valid = True
            cand_head = None
            if cand is not None:
                cand_head = self._head(cand)
                if cand_head is None:  # no job of that shape left here
                    scheduler.wake(cand)
                    cand, cand_valid = None, False
                    continue
            if cand_head is not None and (not entries or cand_head[0] < -entries[-1][0]):
                key = cand
                scheduler.wake(key)
                self._dormant.discard(key)
                self._active.add(key)
                cand, cand_valid = None, False
                head = cand_head
            elif entries:
                _, key = entries.pop()
                head = self._head(key)
                if head is None:
                    continue
            else:
                break
            if scheduler.try_schedule(head[2]) is Outcome.STARTED:
                cand_valid = False  # resources changed: the candidate may not fit any more
                cand = None
                nxt = self._head(key)
                if nxt is not None:
                    bisect.insort(entries, (-nxt[0], key))
            else:
                self._active.discard(key)  # blocked until woken
                self._dormant.add(key)
