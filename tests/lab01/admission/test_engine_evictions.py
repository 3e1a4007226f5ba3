"""Evictions Kueue did not decide (a node drain) leave the Workload admitted with its quota:
the Job controller recreates the evicted pods and they wait for placement, while quota
stays reserved (Kueue evicts a Workload only by its own decision: preemption,
waitForPodsReady; ``pkg/controller/jobframework/reconciler.go``). Hand-computed."""

from __future__ import annotations

import pytest

from lab01_cluster_sim.admission.api import Preemption, PreemptionPolicy
from lab01_cluster_sim.admission.controller import Outcome, State
from lab01_cluster_sim.admission.plugin import QUEUE_KEY, KueueAdmissionPlugin
from lab01_cluster_sim.model import BACKOFF_LIMIT, GangRole, Job, JobState, Node
from lab01_cluster_sim.simulate import Simulation

from .helpers import controller, gpu_cq

NODES = [Node("n0", "A100", 8, 64000, 262144), Node("n1", "A100", 8, 64000, 262144)]
EXTRAS = {QUEUE_KEY: "lq-a", "namespace": "ns"}


def _job(name, t, duration, gpus=8, **kw):
    return Job(name, t, duration, gpus_per_worker=gpus, gpu_milli=1000 if gpus else 0,
               extras=EXTRAS, **kw)


def _sim(jobs):
    # quota 8 GPUs (the queue covers GPUs only; the pods ask no CPU), two nodes of 8: the quota,
    # not the nodes, is what is short
    plugin = KueueAdmissionPlugin(controller([gpu_cq("a", ("a100", 8), cohort=None)]))
    return Simulation(NODES, jobs, plugins=[plugin]), plugin


def test_a_drained_job_keeps_its_quota_and_is_placed_again_at_once():
    sim, plugin = _sim([_job("a", 0, 100), _job("b", 1, 10)])
    sim.run(until=50)
    sim.drain(0, "maintenance")        # a runs on n0 (first best-fit node): evicted at 50
    result = sim.run()
    a, b = result.records["a"], result.records["b"]
    # a stays admitted: re-placed on n1 at 50, restarts from scratch: 50..150; b (8 GPUs of
    # quota) is admitted only when a finishes: 150..160
    assert (a.end_time, a.preemptions) == (150.0, 1)
    assert (b.start_time, b.end_time) == (150.0, 160.0)
    assert [(d.workload, d.time, d.outcome) for d in plugin.decisions if d.outcome is not Outcome.PENDING] == [
        ("a", 0.0, Outcome.ADMITTED), ("b", 150.0, Outcome.ADMITTED)]
    assert plugin.controller.workloads["a"].evictions == 0


def test_a_drained_role_keeps_its_gangs_quota():
    role = lambda i, n: GangRole("g", n, i, 2)  # noqa: E731
    sim, plugin = _sim([_job("g-launcher", 0, 100, gpus=0, role=role(0, "launcher")),
                        _job("g-workers", 0, 100, role=role(1, "workers")), _job("b", 1, 10)])
    sim.run(until=50)
    sim.drain(0, "maintenance")        # both roles were on n0 (best fit): the gang restarts on n1
    result = sim.run()
    r = result.records
    assert (r["g-launcher"].start_time, r["g-launcher"].end_time) == (0.0, 150.0)
    assert r["g-workers"].end_time == 150.0
    assert (r["b"].start_time, r["b"].end_time) == (150.0, 160.0)
    assert plugin.controller.workloads["g"].evictions == 0


def test_kueue_can_preempt_a_drained_job_still_waiting_for_placement():
    # a drained Job stays admitted while its pod waits for a node (the only node is
    # cordoned); Kueue may then preempt that Workload like any admitted one (its eviction
    # suspends the Job, kueue pkg/controller/jobframework/reconciler.go): the engine must
    # find it queued for placement (it raised "job 'a' is not admitted" before).
    plugin = KueueAdmissionPlugin(controller([gpu_cq("a", ("a100", 8), cohort=None,
                                                     preemption=Preemption(PreemptionPolicy.LOWER_PRIORITY))]))
    sim = Simulation(NODES[:1], [_job("a", 0, 100), _job("b", 60, 10, priority=10)], plugins=[plugin])
    sim.run(until=50)
    sim.drain(0, "maintenance")        # a evicted at 50, n0 cordoned: a waits, admitted, quota 8/8
    sim.run(until=70)
    sim.node_up(0)
    result = sim.run()
    a, b = result.records["a"], result.records["b"]
    # b (priority 10) arrives at 60: quota is short by 8, a (priority 0) is preempted at 60 and
    # b admitted at once (a has no pod running, nothing to wait for); b waits for n0 until 70
    # and runs 70..80; a is admitted again at 80 and runs from scratch 80..180
    assert [(d.workload, d.time, d.outcome) for d in plugin.decisions if d.outcome is not Outcome.PENDING] == [
        ("a", 0.0, Outcome.ADMITTED), ("a", 60.0, Outcome.EVICTED), ("b", 60.0, Outcome.PREEMPTING),
        ("b", 60.0, Outcome.ADMITTED), ("a", 80.0, Outcome.ADMITTED)]
    assert (b.start_time, b.end_time) == (70.0, 80.0)
    assert (a.end_time, a.preemptions) == (180.0, 1)
    assert plugin.controller.workloads["a"].evictions == 1


def test_kueue_preempts_a_drained_gang_waiting_for_placement_whole():
    # the same with a two-role gang (a JobSet's launcher and workers, one Workload): before the
    # fix Kueue marked it evicted but its roles stayed queued and ran again without quota
    role = lambda i, n: GangRole("g", n, i, 2)  # noqa: E731
    plugin = KueueAdmissionPlugin(controller([gpu_cq("a", ("a100", 8), cohort=None,
                                                     preemption=Preemption(PreemptionPolicy.LOWER_PRIORITY))]))
    sim = Simulation(NODES[:1], [_job("g-launcher", 0, 100, gpus=0, role=role(0, "launcher")),
                                 _job("g-workers", 0, 100, role=role(1, "workers")),
                                 _job("b", 60, 10, priority=10)], plugins=[plugin])
    sim.run(until=50)
    sim.drain(0, "maintenance")
    sim.run(until=70)
    sim.node_up(0)
    r = sim.run().records
    assert [(d.workload, d.time, d.outcome) for d in plugin.decisions if d.outcome is not Outcome.PENDING] == [
        ("g", 0.0, Outcome.ADMITTED), ("g", 60.0, Outcome.EVICTED), ("b", 60.0, Outcome.PREEMPTING),
        ("b", 60.0, Outcome.ADMITTED), ("g", 80.0, Outcome.ADMITTED)]
    assert (r["b"].start_time, r["b"].end_time) == (70.0, 80.0)
    assert (r["g-launcher"].end_time, r["g-workers"].end_time) == (180.0, 180.0)


def _graceful_gang(worker_grace: float, worker_duration: float = 1000.0):
    # g: a launcher (no GPU, no grace period) and workers (8 GPUs, terminationGracePeriodSeconds
    # on the workers only, as a JobSet whose workers' template sets it); b (priority 10, 8 GPUs)
    # arrives at 100 and Kueue preempts g (LowerPriority)
    role = lambda i, n: GangRole("g", n, i, 2)  # noqa: E731
    plugin = KueueAdmissionPlugin(controller([gpu_cq("a", ("a100", 8), cohort=None,
                                                     preemption=Preemption(PreemptionPolicy.LOWER_PRIORITY))]))
    jobs = [_job("g-launcher", 0, 1000, gpus=0, role=role(0, "launcher")),
            Job("g-workers", 0, worker_duration, gpus_per_worker=8, gpu_milli=1000, role=role(1, "workers"),
                extras={**EXTRAS, "termination_grace_s": worker_grace}),
            _job("b", 100, 10, priority=10)]
    sim = Simulation(NODES[:1], jobs, plugins=[plugin])
    return sim.run().records, plugin


def test_a_gangs_quota_and_gpus_wait_for_the_grace_period_of_any_of_its_roles():
    # the workers keep their GPUs for their 300 s grace period (Kubernetes docs, "Pod
    # Lifecycle", termination of Pods) and Kueue releases the Workload's quota when its pods
    # are gone: b stays Preempting 100..400, is admitted and starts at 400, runs 400..410.
    # Before: the launcher, evicted first with no grace period, decided for the whole gang:
    # GPUs and quota came back at 100.
    r, plugin = _graceful_gang(300.0)
    assert [(d.workload, d.time, d.outcome) for d in plugin.decisions
            if d.outcome in (Outcome.ADMITTED, Outcome.EVICTED)][:3] == [
        ("g", 0.0, Outcome.ADMITTED), ("g", 100.0, Outcome.EVICTED), ("b", 400.0, Outcome.ADMITTED)]
    assert (r["b"].start_time, r["b"].end_time) == (400.0, 410.0)


def test_a_role_ending_inside_its_grace_period_frees_gpus_and_quota_at_its_natural_end():
    # the workers would have ended at 150 (duration 150), before 100 + 300: their containers
    # exit then, so b is admitted and starts at 150
    r, plugin = _graceful_gang(300.0, worker_duration=150.0)
    assert ("b", 150.0, Outcome.ADMITTED) in [(d.workload, d.time, d.outcome) for d in plugin.decisions]
    assert (r["b"].start_time, r["b"].end_time) == (150.0, 160.0)


def test_a_job_ending_inside_its_grace_period_gives_its_quota_back_then():
    # a (grace 300 s) would end at 150: evicted at 100, its container exits at 150, freeing
    # GPUs and quota; b is admitted at 150 (it stayed Preempting until 400 before), runs
    # 150..160; a is admitted again at 160 and reruns 160..310
    plugin = KueueAdmissionPlugin(controller([gpu_cq("a", ("a100", 8), cohort=None,
                                                     preemption=Preemption(PreemptionPolicy.LOWER_PRIORITY))]))
    a = Job("a", 0, 150, gpus_per_worker=8, gpu_milli=1000, extras={**EXTRAS, "termination_grace_s": 300.0})
    sim = Simulation(NODES[:1], [a, _job("b", 100, 10, priority=10)], plugins=[plugin])
    r = sim.run().records
    assert [(d.workload, d.time, d.outcome) for d in plugin.decisions if d.outcome is not Outcome.PENDING] == [
        ("a", 0.0, Outcome.ADMITTED), ("a", 100.0, Outcome.EVICTED), ("b", 100.0, Outcome.PREEMPTING),
        ("b", 150.0, Outcome.ADMITTED), ("a", 160.0, Outcome.ADMITTED)]
    assert (r["b"].start_time, r["a"].end_time) == (150.0, 310.0)


def test_a_job_failing_past_its_backoff_limit_finishes_its_workload_and_frees_the_quota():
    # a's Job has backoffLimit 0: the drain at 50 is its first failed pod, above the limit, so the
    # Job fails (not requeued) and Kueue finishes its Workload: b is admitted at 50 (it waited for
    # a's 8 GPUs of quota) and runs 50..60 (Kubernetes docs, "Jobs", "Pod backoff failure policy")
    a = Job("a", 0, 100, gpus_per_worker=8, gpu_milli=1000, extras={**EXTRAS, BACKOFF_LIMIT: 0})
    sim, plugin = _sim([a, _job("b", 1, 10)])
    sim.run(until=50)
    sim.drain(0, "maintenance")
    r = sim.run().records
    assert r["a"].state is JobState.REJECTED and "BackoffLimitExceeded" in r["a"].reason
    assert plugin.controller.workloads["a"].state is State.FINISHED
    assert (r["b"].start_time, r["b"].end_time) == (50.0, 60.0)


@pytest.mark.parametrize("grace", [0.0, 30.0])
def test_a_bare_pod_kueue_preempts_is_gone_and_its_workload_ends(grace):
    # a is a bare Pod (no controller) running 8 GPUs from 0; b (priority 10) arrives at 100 and
    # Kueue preempts a (withinClusterQueue LowerPriority). Kueue's plain-Pod integration deletes
    # the Pods it stops (Stop, pkg/controller/jobs/pod/pod_controller.go) and nothing recreates
    # a: it ends at 100, its Workload is not requeued. b is admitted once a's pod is gone: at
    # 100, or 100 + 30 with a 30 s grace period, and runs 10 s.
    plugin = KueueAdmissionPlugin(controller([gpu_cq("a", ("a100", 8), cohort=None,
                                                     preemption=Preemption(PreemptionPolicy.LOWER_PRIORITY))]))
    a = Job("a", 0, 1000, gpus_per_worker=8, gpu_milli=1000,
            extras={**EXTRAS, "kind": "Pod", **({"termination_grace_s": grace} if grace else {})})
    sim = Simulation(NODES[:1], [a, _job("b", 100, 10, priority=10)], plugins=[plugin])
    r = sim.run().records
    assert r["a"].state is JobState.REJECTED and r["a"].reason.endswith("a bare Pod is deleted for good (no "
                                                                       "controller recreates it)")
    assert plugin.controller.workloads["a"].state is State.REJECTED
    assert (r["b"].start_time, r["b"].end_time) == (100.0 + grace, 110.0 + grace)
    assert [(d.workload, d.outcome) for d in plugin.decisions if d.outcome is Outcome.ADMITTED] == [
        ("a", Outcome.ADMITTED), ("b", Outcome.ADMITTED)]
