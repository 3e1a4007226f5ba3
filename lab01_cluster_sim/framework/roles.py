"""Multi-role gangs in the scheduling cycle: every worker of every role, or none.

A multi-role gang is a workload whose pods come in several shapes (a launcher and workers):
a JobSet's replicated jobs, an MPIJob's launcher and workers. Each role is one job carrying a
:class:`~lab01_cluster_sim.model.GangRole`. In gang mode, :class:`RoleGangs` (a base class of
:class:`lab01_cluster_sim.scheduler.Scheduler`) places the whole gang in one attempt: once
every role is pending in the placement queue, the roles are taken in their ``index`` order
and each role's workers go through the usual stages (PreFilter, filter, score, GPU pick;
its own request, node selection and tolerations); when every worker found a place, the
Permit plugins see each role's trial placements; then all are bound and every role starts
at the same instant. If one worker finds no place, or a Permit refuses, every trial
placement of every role is rolled back and the whole gang waits. This is the outcome of the
coscheduling plugin's Permit for a PodGroup whose ``minMember`` is all its pods
(kubernetes-sigs/scheduler-plugins, ``pkg/coscheduling/coscheduling.go``, ``Permit``: a pod
waits until ``minMember`` pods of its group are assumed, then all are allowed; one rejected
pod rejects the group, ``Unreserve``), reached here in one cycle instead of pod by pod (the
same deviation as for one-role gangs: the scheduler's module docstring).

Preemption (PostFilter) is asked for the role that found no room, once, and the whole gang is
tried again: kube-scheduler's DefaultPreemption works for one pod at a time too, so the
victims it picks free room for that role's pod, not for the gang as a whole (listed among the
deviations in scenarios/README.md). In naive mode (no coscheduling) roles are ordinary jobs.
"""

from __future__ import annotations

from collections.abc import Iterable

from lab01_cluster_sim.cluster import Request
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.framework.status import UNSCHEDULABLE, Outcome
from lab01_cluster_sim.model import JobRecord, JobState, format_seconds


class RoleGangs:
    """The multi-role gang methods of :class:`~lab01_cluster_sim.scheduler.Scheduler` (its
    state: ``role_gangs``, gang name -> {role index: record} of the roles now in the
    placement queue: added at enqueue, dropped at start or :meth:`dequeue`)."""

    def _queue_role(self, record: JobRecord) -> None:
        role = record.job.role
        self.role_gangs.setdefault(role.gang, {})[role.index] = record

    def _unqueue_role(self, record: JobRecord) -> None:
        role = record.job.role
        members = self.role_gangs.get(role.gang)
        if members is not None and members.get(role.index) is record:
            del members[role.index]
            if not members:
                del self.role_gangs[role.gang]

    def role_completed(self, record: JobRecord) -> None:
        """``record``, a role, completed: should the rest of its gang be evicted later, it is
        placed without this role (a completed role is not run again; a JobSet would recreate
        it, a deviation listed in scenarios/README.md)."""
        gang = record.job.role.gang
        self._roles_done[gang] = self._roles_done.get(gang, 0) + 1

    def _try_schedule_roles(self, record: JobRecord, permit, retried: bool = False) -> Outcome:
        """Place ``record``'s whole multi-role gang or nothing (module docstring). Returns
        STARTED when every role started, else WAITING (every role keeps the same reason)."""
        if record.state is not JobState.PENDING:
            return Outcome.STARTED if record.state is JobState.RUNNING else Outcome.WAITING
        role = record.job.role
        members = self.role_gangs.get(role.gang, {})
        roles = [members[i] for i in sorted(members)]
        needed = role.roles - self._roles_done.get(role.gang, 0)
        if len(roles) < needed:
            record.status = UNSCHEDULABLE
            record.reason = (f"gang {role.gang}: waiting for its other roles ({len(roles)} of {needed} "
                             "queued for placement)")
            return Outcome.WAITING
        failed = self._role_failed.get(role.gang)
        if failed is not None and failed[0] == self._pass_id and not retried:
            record.status, record.reason = UNSCHEDULABLE, failed[1]
            return Outcome.WAITING
        self._cur_order = min(r.queue_seq for r in roles)
        trial: list[tuple[JobRecord, Request, list[tuple[int, tuple[int, ...]]]]] = []
        refusal: str | None = None
        short: JobRecord | None = None   # the role that found no room (for PostFilter)
        for member in roles:
            request = self.request_of(member)
            placed: list[tuple[int, tuple[int, ...]]] = []
            trial.append((member, request, placed))
            _, mask, assign, refusal = self._run_pre_filters(member, request)
            if refusal is not None:
                break
            if assign is not None:
                refusal = self._bind_assigned(assign, request, placed)
                if refusal is not None:
                    break
            else:
                devices = self._allowed_devices(member, request)
                for _ in range(member.job.workers):
                    choice = self._select_masked(request, member, mask, devices)
                    if choice is None:
                        break
                    self._bind_raw(choice[0], choice[1], request)
                    placed.append(choice)
            if not self._gang_permit(len(placed), member.job.workers):
                refusal = (f"gang {role.gang} of {role.roles} roles: role {member.job.role.name} could place only "
                           f"{len(placed)} of its {member.job.workers} workers now")
                short = member
                break
        if refusal is None:
            for member, _, placed in trial:
                for check in [*self.permits, *([permit] if permit is not None else [])]:
                    refusal = check(member, placed)
                    if refusal:
                        break
                if refusal:
                    break
        if refusal is not None:
            for _, request, placed in reversed(trial):   # roll back: the state is exactly as before
                for node, gpus in reversed(placed):
                    self._release_raw(node, gpus, request)
            for member in roles:
                member.status, member.reason = UNSCHEDULABLE, refusal
            self._role_failed[role.gang] = (self._pass_id, refusal)
            if short is not None and not retried and self.post_filters:
                for post in self.post_filters:
                    if post(short):
                        return self._try_schedule_roles(record, permit, retried=True)
            return Outcome.WAITING
        for member, request, placed in trial:
            for node, gpus in placed:
                self._commit(member, node, gpus, request)
        for member in roles:
            self._start(member)
        return Outcome.STARTED


def gangs_of(records: Iterable[JobRecord]) -> dict[str, list[JobRecord]]:
    """Gang name -> its roles' records in role order (every multi-role gang among
    ``records``), checked whole.

    Raises:
        InputError: a gang whose roles disagree on their number or submit time, lack an
            index or repeat one.
    """
    gangs: dict[str, dict[int, JobRecord]] = {}
    for rec in records:
        role = rec.job.role
        if role is None:
            continue
        members = gangs.setdefault(role.gang, {})
        if role.index in members:
            raise InputError(f"jobs: gang {role.gang!r}: jobs {members[role.index].job_id!r} and {rec.job_id!r} "
                             f"are both role {role.index}")
        members[role.index] = rec
    out: dict[str, list[JobRecord]] = {}
    for gang, members in gangs.items():
        ordered = [members[i] for i in sorted(members)]
        first = ordered[0].job
        if sorted(members) != list(range(first.role.roles)) or any(r.job.role.roles != first.role.roles
                                                                   for r in ordered):
            raise InputError(f"jobs: gang {gang!r}: expected roles 0..{first.role.roles - 1}, got "
                             f"{', '.join(f'{r.job_id!r} ({r.job.role.index} of {r.job.role.roles})' for r in ordered)}")
        late = next((r for r in ordered if r.job.submit_time != first.submit_time), None)
        if late is not None:
            raise InputError(f"jobs: gang {gang!r}: its roles must share one submit_time; {first.job_id!r} has "
                             f"{format_seconds(first.submit_time)} s, {late.job_id!r} "
                             f"{format_seconds(late.job.submit_time)} s")
        out[gang] = ordered
    return out


__all__ = ["RoleGangs", "gangs_of"]
