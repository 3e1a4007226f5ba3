"""The blocked-shape memo of the scheduling cycle: skip jobs that cannot fit until room is freed.

A job shape (worker request x workers) that found no room is remembered as *blocked*; later
jobs of the same shape are skipped without work until a release frees room on a node that can
host one of its workers (binds only take resources, so nothing else can unblock it). This is
Lab 01's counterpart of kube-scheduler's unschedulable pod queue and its move on cluster events
(``pkg/scheduler/internal/queue/scheduling_queue.go``: ``MoveAllToActiveOrBackoffQueue``), keyed
by shape. :class:`BlockedShapes` is the part of :class:`lab01_cluster_sim.scheduler.Scheduler`
that keeps it; :class:`BlockedTable` holds the blocked requests as arrays, so finding which of
them fit a released node is one vector pass.
"""

from __future__ import annotations

from typing import Any

from collections.abc import Iterable

import numpy as np

from lab01_cluster_sim.cluster import Request
from lab01_cluster_sim.framework.queue import shape_key
from lab01_cluster_sim.model import MILLI_PER_GPU, JobRecord

Scheduler = Any
"""The :class:`lab01_cluster_sim.scheduler.Scheduler` that calls in (one floor up: named here, not
imported)."""

class BlockedTable:
    """The worker requests of the blocked shapes as arrays, to find in one vector pass which
    of them fit a node that just got resources back (used by :meth:`Scheduler._unblock`)."""

    def __init__(self) -> None:
        self.keys: list[tuple | None] = []
        self.slot: dict[tuple, int] = {}
        self.free: list[int] = []
        cap = 64
        self.cpu = np.zeros(cap, dtype=np.int64)
        self.mem = np.zeros(cap, dtype=np.int64)
        self.k = np.zeros(cap, dtype=np.int64)
        self.u = np.zeros(cap, dtype=np.int64)
        self.model = np.zeros(cap, dtype=np.int64)
        self.order = np.zeros(cap, dtype=np.int64)  # enqueue order of the job that was blocked
        self.mark = np.full(cap, -1, dtype=np.int64)  # pass in which it was blocked
        self.live = np.zeros(cap, dtype=bool)
        self.model_sets: dict[tuple[str, ...], int] = {}
        self.model_rows: list[np.ndarray] = []
        self.model_table = np.zeros((0, 0), dtype=bool)

    def add(self, key: tuple, request: Request, sched: Scheduler) -> None:
        i = self.slot.get(key)
        if i is None:
            if self.free:
                i = self.free.pop()
                self.keys[i] = key
            else:
                i = len(self.keys)
                self.keys.append(key)
                if i >= self.cpu.shape[0]:
                    for name in ("cpu", "mem", "k", "u", "model", "order", "mark", "live"):
                        old = getattr(self, name)
                        grown = np.zeros(2 * old.shape[0], dtype=old.dtype)
                        grown[: old.shape[0]] = old
                        setattr(self, name, grown)
            self.slot[key] = i
        mid = self.model_sets.get(request.gpu_models)
        if mid is None:
            mid = self.model_sets[request.gpu_models] = len(self.model_rows)
            self.model_rows.append(sched._model_ok(request.gpu_models))
            self.model_table = np.vstack(self.model_rows)
        self.cpu[i], self.mem[i] = request.cpu_milli, request.memory_mib
        self.k[i], self.u[i], self.model[i] = request.num_gpus, request.gpu_milli, mid
        self.order[i], self.mark[i] = sched._cur_order, sched._pass_id
        self.live[i] = True

    def _hits(self, sched: Scheduler, nodes: Iterable[int]) -> np.ndarray:
        n_used = len(self.keys)
        live = self.live[:n_used]
        k, u = self.k[:n_used], self.u[:n_used]
        frac = (k == 1) & (u < MILLI_PER_GPU)
        hit = np.zeros(n_used, dtype=bool)
        st = sched.state
        for n in nodes:
            if not sched.online[n]:
                continue
            gpu_ok = (k == 0) | (self.model_table[self.model[:n_used], n]
                                 & np.where(frac, sched.max_free[n] >= u, sched.full_free[n] >= k))
            hit |= live & (self.cpu[:n_used] <= st.cpu_free[n]) & (self.mem[:n_used] <= st.mem_free[n]) & gpu_ok
        return hit

    def earliest_fitting(self, sched: Scheduler, nodes: list[int]) -> tuple | None:
        """The key of the earliest-enqueued blocked shape (not blocked during the current
        pass) one worker of which fits one of ``nodes`` now; None if there is none."""
        if not self.slot or not nodes:
            return None
        hit = self._hits(sched, nodes) & (self.mark[: len(self.keys)] != sched._pass_id)
        idx = hit.nonzero()[0]
        if idx.size == 0:
            return None
        return self.keys[int(idx[np.argmin(self.order[idx])])]

    def remove(self, key: tuple) -> None:
        i = self.slot.pop(key, None)
        if i is not None:
            self.keys[i] = None
            self.live[i] = False
            self.free.append(i)

    def fitting(self, sched: Scheduler, nodes: Iterable[int]) -> list[tuple]:
        """Remove and return the keys of blocked shapes one worker of which fits one of
        ``nodes`` now (same rule as the filter; extra filters are ignored, which only wakes
        more shapes than needed)."""
        if not self.keys:
            return []
        hit = self._hits(sched, nodes)
        out = []
        for i in np.flatnonzero(hit):
            key = self.keys[i]
            out.append(key)
            del self.slot[key]
            self.keys[i] = None
            self.live[i] = False
            self.free.append(int(i))
        return out


class BlockedShapes:
    """The blocked-shape memo's methods of :class:`~lab01_cluster_sim.scheduler.Scheduler`
    (a base class of it: the state lives in the scheduler, ``_blocked``, ``_table``,
    ``_woken``, ``_since``, ``_release_log``, ``_released_pending``)."""

    def _unblock(self, nodes: Iterable[int]) -> None:
        """After resources came back on ``nodes``: forget blocked shapes that may fit now.

        The blocked shapes' requests sit in arrays (:class:`BlockedTable`), so this is a few
        vector comparisons over the blocked shapes per released node, not a Python loop."""
        if not self._blocked:
            return
        if self.lazy_wake_active():
            # The discipline wakes blocked shapes itself, earliest first (FifoSkip).
            self._released_pending.update(dict.fromkeys(nodes))
            return
        for key in self._table.fitting(self, dict.fromkeys(nodes)):
            del self._blocked[key]
            self._woken.append(key)
        if len(self._woken) > 4096:
            # Nobody is popping them (a discipline that ignores wake-ups): keep memory
            # bounded by collapsing the list into "everything was woken".
            self._woken = []
            self._woke_all = True

    def _block(self, key: tuple, request: Request, reason: str, one_worker: bool) -> None:
        """Remember ``key`` as blocked; for a one-worker shape, also that no node fits it
        now, so later retries filter only nodes released from here on."""
        self._blocked[key] = (request, reason)
        self._table.add(key, request, self)
        if one_worker:
            self._since[key] = len(self._release_log)
        else:
            self._since.pop(key, None)

    def lazy_wake_active(self) -> bool:
        """True when the discipline wakes blocked shapes itself (its ``lazy_wake`` is True,
        gang mode, no extra filters): releases are then only recorded (:meth:`pop_released`)."""
        return bool(getattr(self.discipline, "lazy_wake", False)) and self.mode == "gang" and self.interchangeable

    def pop_released(self) -> list[int]:
        """Nodes that got resources back since the last call (lazy wake mode)."""
        nodes = list(self._released_pending)
        self._released_pending.clear()
        return nodes

    def earliest_fitting_blocked(self, nodes: list[int]) -> tuple | None:
        """Lazy wake: the blocked key, earliest enqueued and not blocked in this pass, one
        worker of which fits one of ``nodes`` now, or None. :meth:`wake` it before trying."""
        return self._table.earliest_fitting(self, nodes)

    def wake(self, key: tuple) -> None:
        """Forget that ``key`` is blocked (lazy wake)."""
        if self._blocked.pop(key, None) is not None:
            self._table.remove(key)

    def blocked_key(self, record: JobRecord) -> tuple:
        """The key under which a job that found no room is remembered as blocked (its
        worker request, its workers in gang mode, and its id when extra filters exist)."""
        return shape_key(record.job, self.mode == "gang") + (None if self.interchangeable else record.job_id,)

    def pop_woken(self) -> list[tuple] | None:
        """Blocked keys forgotten since the last call (a release made room they may use), or
        None if every key was forgotten (a node came back). For disciplines that keep blocked
        shapes aside between passes, like :class:`FifoSkip`."""
        if self._woke_all:
            self._woke_all = False
            self._woken = []
            return None
        woken, self._woken = self._woken, []
        return woken
