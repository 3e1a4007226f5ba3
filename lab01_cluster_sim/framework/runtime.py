"""The plugin path of the scheduling cycle: PreFilter, device filters, Permit, PostFilter.

As kube-scheduler's framework runtime (``pkg/scheduler/framework/runtime/framework.go``:
``RunPreFilterPlugins``, ``RunFilterPlugins``, ``RunPermitPlugins``,
``RunPostFilterPlugins``), :class:`PluginRuntime` runs the plugins registered at each point
for one job (a base class of :class:`lab01_cluster_sim.scheduler.Scheduler`; it is used only
when some plugin defines one of these points, so the plain cycle keeps its fast path), and
binds, releases or plans a gang's placements on the side (preemption, backfill, migration).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from lab01_cluster_sim.cluster import ClusterState, Request
from lab01_cluster_sim.framework.status import UNSCHEDULABLE, Outcome
from lab01_cluster_sim.model import JobRecord, Placement


class PluginRuntime:
    """The plugin points' methods of :class:`~lab01_cluster_sim.scheduler.Scheduler` (its
    state: ``pre_filters``, ``device_filters``, ``permits``, ``post_filters``; its
    ``_gang_permit`` is the coscheduling rule, :func:`lab01_cluster_sim.scheduler.gang_permit`)."""

    def _try_schedule_plugins(self, record: JobRecord, permit, retried: bool = False) -> Outcome:
        """:meth:`try_schedule` with the plugin points: PreFilter, device filters, Permit,
        PostFilter (see :mod:`lab01_cluster_sim.framework.interface`). No blocked-shape memo: plugins may
        answer differently for each job and over time."""
        request = self.request_of(record)
        gang = self.mode == "gang"
        # The blocked memo ("no room for this job until a release on a node where one of its
        # workers fits") stays exact with permits (they only refuse), device filters (their
        # masks change only when jobs bind or leave, and a leave is a release) and PreFilters
        # that left the attempt unrestricted (they can only restrict or delay, never add room);
        # it is keyed per job here. A PostFilter may make room by evicting, which a release does
        # not announce: then there is no memo.
        memo = not self.post_filters
        key = self.blocked_key(record) if memo else None
        if memo and key in self._blocked:
            record.status, record.reason = UNSCHEDULABLE, self._blocked[key][1]
            return Outcome.WAITING
        self._cur_order = record.queue_seq
        answered, mask, assign, wait = self._run_pre_filters(record, request)
        if answered:
            memo = False
        if wait is not None:
            record.status, record.reason = UNSCHEDULABLE, wait
            return Outcome.WAITING
        trial: list[tuple[int, tuple[int, ...]]] = []
        refusal: str | None = None
        if assign is not None:
            refusal = self._bind_assigned(assign, request, trial)
        else:
            devices = self._allowed_devices(record, request)
            needed = record.job.workers if gang else 1
            for _ in range(needed):
                choice = self._select_masked(request, record, mask, devices)
                if choice is None:
                    break
                self._bind_raw(choice[0], choice[1], request)
                trial.append(choice)
            if not trial:
                refusal = "no node fits the job now" if gang else "no node fits one more worker now"
            elif gang and not self._gang_permit(len(trial), record.job.workers):
                refusal = f"gang of {record.job.workers} workers: only {len(trial)} could be placed now"
        no_room = refusal is not None
        if refusal is None:
            for check in self.permits:
                refusal = check(record, trial)
                if refusal:
                    break
            if refusal is None and permit is not None:
                refusal = permit(record, trial)
        if refusal is not None:
            for node, gpus in reversed(trial):   # roll back: the state is exactly as before
                self._release_raw(node, gpus, request)
            record.status, record.reason = UNSCHEDULABLE, refusal
            if memo and no_room:
                self._block(key, request, refusal, False)
            if no_room and not retried and self.post_filters:
                # PostFilter (preemption): a plugin that evicted something asks for one more try.
                for post in self.post_filters:
                    if post(record):
                        return self._try_schedule_plugins(record, permit, retried=True)
            return Outcome.WAITING
        for node, gpus in trial:
            self._commit(record, node, gpus, request)
        if len(record.placements) >= record.job.workers:
            self._start(record)
            return Outcome.STARTED
        return Outcome.PROGRESS

    def _run_pre_filters(self, record: JobRecord, request: Request
                         ) -> tuple[bool, np.ndarray | None, Sequence | None, str | None]:
        """Run every PreFilter for ``record``: ``(answered, nodes, assign, wait)``: whether any
        plugin answered, the node mask they leave (None: all), a placement a plugin chose
        (None: none), and the "not now" reason of the first that said so (its retry time is
        passed on to the simulation), in which case the rest are not run."""
        answered = False
        mask = assign = None
        for pre in self.pre_filters:
            res = pre(record, request)
            if res is None:
                continue
            answered = True
            if res.wait is not None:
                if res.retry_at is not None:
                    self.on_retry_at(res.retry_at)
                return True, mask, assign, res.wait
            if res.assign is not None:
                assign = res.assign
            if res.nodes is not None:
                mask = res.nodes if mask is None else (mask & res.nodes)
        return answered, mask, assign, None

    def _bind_assigned(self, assign: Sequence, request: Request, trial: list[tuple[int, tuple[int, ...]]]
                       ) -> str | None:
        """Trial-bind the placements ``assign`` ``((node, gpus), ...)`` a PreFilter chose, adding
        each to ``trial``; the refusal if one no longer fits (those bound stay in ``trial``
        for the caller's roll-back), else None."""
        try:
            for node, gpus in assign:
                if not self.online[node]:
                    raise ValueError(f"node {self.state.nodes[node].name} is cordoned")
                self._bind_raw(node, tuple(gpus), request)
                trial.append((node, tuple(gpus)))
        except ValueError as exc:
            return f"the placement chosen by a plugin no longer fits: {exc}"
        return None

    def _allowed_devices(self, record: JobRecord, request: Request) -> np.ndarray | None:
        """bool (N, G): the GPUs every device filter lets ``record`` use (None: all)."""
        devices = None
        for dev in self.device_filters:
            m = dev(record, request)
            if m is not None:
                devices = m if devices is None else (devices & m)
        return devices

    def bind_placements(self, record: JobRecord, placements: Sequence[tuple[int, tuple[int, ...]]]) -> Outcome:
        """Bind ``record``'s workers exactly at ``placements`` ``((node, gpus), ...)`` and start
        it once its gang is complete (a plan computed by a plugin, e.g. defragmentation by
        migration); no filter, score or permit runs.

        Raises:
            ValueError: a placement does not fit (nothing is bound then).
        """
        request = self.request_of(record)
        done: list[tuple[int, tuple[int, ...]]] = []
        try:
            for node, gpus in placements:
                self._bind_raw(node, tuple(gpus), request)
                done.append((node, tuple(gpus)))
        except ValueError:
            for node, gpus in reversed(done):
                self._release_raw(node, gpus, request)
            raise
        for node, gpus in done:
            self._commit(record, node, gpus, request)
        if len(record.placements) >= record.job.workers:
            self._start(record)
            return Outcome.STARTED
        return Outcome.PROGRESS

    def release_placements(self, record: JobRecord, placements: Sequence[Placement]) -> None:
        """Give back some of the workers a *pending* job holds (naive mode: the node they
        sit on is drained); the job stays pending with the rest."""
        request = self.request_of(record)
        keep = [p for p in record.placements if p not in placements]
        nodes = []
        for p in placements:
            self._release_raw(p.node_index, p.gpus, request)
            nodes.append(p.node_index)
            self.notify("on_release", record, p, request)
        record.placements = keep
        self._release_log.extend(nodes)
        self._unblock(nodes)

    def plan_placements(self, state: ClusterState, record: JobRecord, mask: np.ndarray | None = None
                        ) -> list[tuple[int, tuple[int, ...]]] | None:
        """Where every remaining worker of ``record`` would go on ``state`` (a copy of the
        cluster a plugin is planning on, e.g. with some jobs released), by this scheduler's
        filter (online nodes, GPU model, extra filters, and ``mask``), policy and GPU pick;
        the workers are bound on ``state``. None (and ``state`` as it was) if the gang does
        not fit. The cluster itself is not touched."""
        request = self.request_of(record)
        allowed = self.online.copy()
        if self.state.num_nodes != state.num_nodes:
            raise ValueError("plan_placements: the state must be a copy of this scheduler's cluster")
        for extra in self.extra_filters:
            allowed &= extra(request, record)
        if mask is not None:
            allowed &= mask
        placed: list[tuple[int, tuple[int, ...]]] = []
        for _ in range(record.job.workers - len(record.placements)):
            candidates = np.flatnonzero(state.feasible(request) & allowed)
            if candidates.size == 0:
                for node, gpus in reversed(placed):
                    state.release(node, gpus, request)
                return None
            node, gpus = self._score_and_pick(state, request, candidates, record)
            state.bind(node, gpus, request)
            placed.append((node, gpus))
        return placed
