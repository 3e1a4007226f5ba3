"""Multi-role gangs on the engine (issue 17): a launcher and workers placed all-or-nothing,
started together, evicted together; each role ends after its own run time. The rule is
the coscheduling plugin's Permit for a PodGroup whose minMember is all its pods
(kubernetes-sigs/scheduler-plugins ``pkg/coscheduling/coscheduling.go``, ``Permit``), applied
to pods of several shapes; in naive mode (no coscheduling) kube-scheduler places each pod on
its own. Every figure below is worked out by hand in the comments."""

from __future__ import annotations

import pytest

from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.model import GangRole, Job, JobState, Node
from lab01_cluster_sim.simulate import Simulation, simulate

NODES = [Node("cpu-0", "", 0, 8000, 32768), Node("gpu-0", "H100", 4, 32000, 131072),
         Node("gpu-1", "H100", 4, 32000, 131072)]


def _role(index: int, name: str, roles: int = 2) -> GangRole:
    return GangRole("train", name, index, roles)


def _jobs(grace: float = 0.0) -> list[Job]:
    extras = {"termination_grace_s": grace} if grace else {}
    return [
        # blocker: all of gpu-0 from 0 to 100
        Job("blocker", 0, 100, gpus_per_worker=4, gpu_milli=1000, cpu_milli=1000, memory_mib=1024),
        # the gang, at t=10: a CPU launcher (50 s) and 2 workers of 4 GPUs (200 s): needs both GPU nodes
        Job("train-launcher", 10, 50, cpu_milli=2000, memory_mib=1024, role=_role(0, "launcher"), extras=extras),
        Job("train-workers", 10, 200, gpus_per_worker=4, gpu_milli=1000, cpu_milli=1000, memory_mib=1024,
            workers=2, role=_role(1, "workers"), extras=extras),
        # small, at t=20: 1 GPU for 30 s
        Job("small", 20, 30, gpus_per_worker=1, gpu_milli=1000, cpu_milli=1000, memory_mib=1024),
    ]


def _times(result) -> dict[str, tuple]:
    return {r.job_id: (r.start_time, r.end_time) for r in result.records.values()}


def test_gang_mode_places_every_role_or_none_and_starts_them_together():
    result = simulate(NODES, _jobs(), mode="gang")
    # t=10: the workers need gpu-0 and gpu-1 whole; gpu-0 is the blocker's: nothing of the gang is
    # bound, not even the launcher, which alone would fit. t=20: small takes 1 GPU of gpu-1
    # (20..50). t=100: blocker done, gpu-1 free since 50: the whole gang starts at 100.
    assert _times(result) == {"blocker": (0.0, 100.0), "train-launcher": (100.0, 150.0),
                              "train-workers": (100.0, 300.0), "small": (20.0, 50.0)}
    workers = result.records["train-workers"]
    assert sorted(p.node for p in workers.last_placements) == ["gpu-0", "gpu-1"]
    assert result.records["train-launcher"].last_placements[0].node == "cpu-0"   # best fit: the CPU node


def test_a_waiting_gang_says_which_role_is_short():
    sim = Simulation(NODES, _jobs(), mode="gang")
    sim.run(until=15)
    # at t=10 the launcher (role 0) was placed in trial, then the workers found only gpu-1
    reason = "gang train of 2 roles: role workers could place only 1 of its 2 workers now"
    assert sim.records["train-launcher"].reason.startswith(reason)
    assert sim.records["train-workers"].reason.startswith(reason)
    assert sim.records["train-launcher"].state is JobState.PENDING


def test_naive_mode_places_roles_as_independent_pods():
    result = simulate(NODES, _jobs(), mode="naive")
    # no coscheduling: the launcher runs at once (10..60); one worker holds all of gpu-1 from
    # t=10 and the second waits for gpu-0 (free at 100, taken before small, which queued later):
    # workers 100..300; small finds a free GPU only at 300 (partial holding wastes gpu-1 for 90 s).
    assert _times(result) == {"blocker": (0.0, 100.0), "train-launcher": (10.0, 60.0),
                              "train-workers": (100.0, 300.0), "small": (300.0, 330.0)}


def test_evicting_one_role_evicts_the_gang_and_both_restart_together():
    sim = Simulation(NODES, _jobs(), mode="gang")
    sim.run(until=120)
    sim.drain(1, "maintenance")          # gpu-0 hosts a worker: at t=120
    launcher, workers = sim.records["train-launcher"], sim.records["train-workers"]
    # the launcher, on cpu-0, is evicted with its gang
    assert launcher.preemptions == 1 and workers.preemptions == 1
    assert launcher.reason == "evicted: maintenance (gpu-0) (gang train: role workers was evicted)"
    sim.node_up(1)
    result = sim.run()
    # back in service at 120: the gang restarts from scratch at 120: launcher 120..170, workers 120..320
    assert (launcher.end_time, workers.end_time) == (170.0, 320.0)
    assert launcher.lost_work == 20.0 and workers.lost_work == 20.0    # 100..120 thrown away
    assert result.records["small"].end_time == 50.0


def test_a_finished_role_is_not_run_again_when_the_rest_of_the_gang_is_evicted():
    sim = Simulation(NODES, _jobs(), mode="gang")
    sim.run(until=160)                   # launcher done at 150
    sim.drain(1, "maintenance")
    sim.node_up(1)
    result = sim.run()
    assert result.records["train-launcher"].end_time == 150.0
    assert result.records["train-launcher"].preemptions == 0
    # the workers alone: restart at 160, 200 s -> 360
    assert result.records["train-workers"].end_time == 360.0


def test_graceful_eviction_frees_each_role_after_its_grace_or_its_natural_end():
    # grace 30 s for both roles; the drain at 140: the launcher would end at 150 anyway, so it
    # frees cpu-0 at 150 (its natural end), the workers at 170 (140 + 30).
    sim = Simulation(NODES, _jobs(grace=30.0), mode="gang")
    sim.run(until=140)
    sim.drain(2, "maintenance", graceful=True)      # gpu-1
    assert sorted(sim.scheduler.terminating) == ["train-launcher", "train-workers"]
    sim.run(until=150.5)
    assert sorted(sim.scheduler.terminating) == ["train-workers"]
    sim.run(until=170.5)
    assert sim.scheduler.terminating == {}


def test_a_role_no_node_can_host_rejects_the_whole_gang_at_arrival():
    jobs = [Job("big-launcher", 0, 10, cpu_milli=1000, role=GangRole("big", "launcher", 0, 2)),
            Job("big-workers", 0, 10, gpus_per_worker=8, gpu_milli=1000, role=GangRole("big", "workers", 1, 2))]
    result = simulate(NODES, jobs)
    assert [r.state for r in result.records.values()] == [JobState.REJECTED, JobState.REJECTED]
    assert result.records["big-launcher"].reason.startswith("gang big: role workers: ")
    assert result.records["big-workers"].reason.startswith("gang big: ")


@pytest.mark.parametrize("jobs, message", [
    ([Job("a", 0, 1, role=GangRole("g", "a", 0, 2))], "gang 'g': expected roles 0..1, got 'a' (0 of 2)"),
    ([Job("a", 0, 1, role=GangRole("g", "a", 0, 2)), Job("b", 5, 1, role=GangRole("g", "b", 1, 2))],
     "gang 'g': its roles must share one submit_time; 'a' has 0 s, 'b' 5 s"),
    ([Job("a", 0, 1, role=GangRole("g", "a", 0, 2)), Job("b", 0, 1, role=GangRole("g", "b", 0, 2))],
     "gang 'g': jobs 'a' and 'b' are both role 0"),
])
def test_an_incomplete_gang_is_refused_naming_it(jobs, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        simulate(NODES, jobs)


def test_a_role_whose_job_fails_past_its_backoff_limit_fails_the_whole_gang():
    # the workers' Job has backoffLimit 0 (the launcher's 6): the drain at 120 is the workers'
    # first failed pod, above 0, so their Job fails and the JobSet with it (failurePolicy
    # maxRestarts 0, JobSet's default): the launcher ends too, not requeued; its own Job
    # counted no failure (it was evicted with its gang)
    jobs = _jobs()
    jobs[1] = Job(**{**{f: getattr(jobs[1], f) for f in Job.__slots__}, "extras": {"backoff_limit": 6}})
    jobs[2] = Job(**{**{f: getattr(jobs[2], f) for f in Job.__slots__}, "extras": {"backoff_limit": 0}})
    sim = Simulation(NODES, jobs, mode="gang")
    sim.run(until=120)
    sim.drain(1, "maintenance")
    result = sim.run()
    launcher, workers = result.records["train-launcher"], result.records["train-workers"]
    assert (launcher.state, workers.state) == (JobState.REJECTED, JobState.REJECTED)
    assert "BackoffLimitExceeded (1 eviction, each a failed pod, above its backoffLimit 0)" in workers.reason
    assert launcher.reason.endswith("(gang train: role workers was evicted)")
    assert "pod_failures" not in launcher.extras
