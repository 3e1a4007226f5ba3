"""The admission plugin against the engine's Admission point (engine-design.md section 5),
driven by a fake context: the wiring phase 2 will do with the real engine."""

from __future__ import annotations

from dataclasses import dataclass, field

from lab01_cluster_sim.admission import (
    AdmissionController,
    ClusterQueue,
    FlavorQuotas,
    LocalQueue,
    Preemption,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
)
from lab01_cluster_sim.admission.plugin import QUEUE_KEY, KueueAdmissionPlugin, workload_of
from lab01_cluster_sim.model import Job, JobRecord, Node

from .helpers import ANY, CPU, GPU, controller, gpu_cq


@dataclass
class FakeEngine:
    now: float = 0.0


@dataclass
class FakeState:
    nodes: tuple


@dataclass
class FakeSim:
    state: FakeState
    engine: FakeEngine = field(default_factory=FakeEngine)
    passes: int = 0

    def request_pass(self):
        self.passes += 1


@dataclass
class FakeCtx:
    now: float
    waiting: list
    log: list = field(default_factory=list)

    def admit(self, r):
        self.log.append(("admit", r.job_id))

    def hold(self, r, reason):
        self.log.append(("hold", r.job_id))

    def evict(self, r, reason):
        self.log.append(("evict", r.job_id, reason))

    def reject(self, r, reason):
        self.log.append(("reject", r.job_id, reason))

    def is_admitted(self, r):
        return True   # the fake engine keeps every admitted record admitted


def _job(name, queue, gpus, t=0.0, workers=1, **extras):
    return JobRecord(Job(name, t, 100.0, gpus_per_worker=gpus, gpu_milli=1000, cpu_milli=1000, memory_mib=1024,
                         workers=workers, extras={QUEUE_KEY: queue, "namespace": "ns", **extras}))


def test_workload_of_a_job():
    rec = _job("j", "lq-a", 2, workers=4, min_count=2)
    w = workload_of(rec.job)
    (ps,) = w.pod_sets
    # per pod: 1 CPU = 1000 milli, 1024 MiB = 2**30 bytes, 2 GPUs; 4 pods, minCount 2
    assert (w.queue_name, w.namespace, ps.count, ps.min_count) == ("lq-a", "ns", 4, 2)
    assert dict(ps.requests) == {CPU: 1000, "memory": 2**30, GPU: 2}


def test_plugin_admits_evicts_and_releases_quota():
    # a and b own 4 GPUs each (cpu and memory plentiful); b may reclaim within the cohort.
    pre = Preemption(reclaim_within_cohort=ANY)

    def groups():
        return (ResourceGroup((CPU, "memory", GPU), (FlavorQuotas("a100", {
            CPU: ResourceQuota(64000), "memory": ResourceQuota(2**40), GPU: ResourceQuota(4)}),)),)

    ctl = AdmissionController([ClusterQueue("a", groups(), "pool", preemption=pre),
                               ClusterQueue("b", groups(), "pool", preemption=pre)],
                              [LocalQueue("lq-a", "ns", "a"), LocalQueue("lq-b", "ns", "b")],
                              [ResourceFlavor("a100", {"gpu": "a100"})])
    plugin = KueueAdmissionPlugin(ctl)
    nodes = (Node("n0", "A100", 8, 64000, 512000, labels={"gpu": "a100"}), Node("n1", "T4", 4, 64000, 512000))
    sim = FakeSim(FakeState(nodes))
    plugin.attach(sim)
    a8 = _job("a-8", "lq-a", 8)
    ctx = FakeCtx(0.0, [a8])
    plugin.admission_cycle(ctx)
    assert ctx.log == [("admit", "a-8")]                 # borrows all of b's 4
    assert plugin.filter(None, a8).tolist() == [True, False]   # only nodes labelled gpu=a100
    b4 = _job("b-4", "lq-b", 4, t=1.0)
    sim.engine.now = 1.0
    ctx = FakeCtx(1.0, [b4])
    plugin.admission_cycle(ctx)
    assert ctx.log[0][:2] == ("evict", "a-8") and ("hold", "b-4") in ctx.log
    # the engine evicts a-8 and reports it: quota released, a pass requested
    plugin.on_evict(a8, 0.0)
    assert sim.passes == 1 and ctl.usage("a") == {}
    ctx = FakeCtx(1.0, [a8])
    plugin.admission_cycle(ctx)
    assert ("admit", "b-4") in ctx.log
    plugin.on_finish(b4)
    assert ctl.usage("b") == {}


def test_plugin_holds_what_can_never_fit_as_kueue_does():
    # Kueue keeps a workload above its ClusterQueue's maximum capacity pending and inadmissible
    # (scheduler_test.go, "flavors with mixed taint mismatch and exceeding limits": condition
    # QuotaReserved=False, reason ExceedsMaxQuota); it is never rejected.
    ctl = controller([gpu_cq("a", ("a100", 4), cohort=None)])
    plugin = KueueAdmissionPlugin(ctl)
    plugin.attach(FakeSim(FakeState((Node("n0", "A100", 8, 64000, 512000),))))
    rec = JobRecord(Job("huge", 0.0, 1.0, gpus_per_worker=8, gpu_milli=1000,
                        extras={QUEUE_KEY: "lq-a", "namespace": "ns"}))
    ctx = FakeCtx(0.0, [rec])
    plugin.admission_cycle(ctx)
    assert ctx.log == [("hold", "huge")]
    assert ctl.pending_reason("huge") == ("couldn't assign flavors to pod set main: insufficient quota for nvidia.com/gpu in flavor "
                          "a100, previously considered podsets requests (0) + current podset request (8) > maximum "
                          "capacity (4)")
    assert plugin.filter(None, rec).tolist() == [True]   # not admitted: no flavor restriction
    assert plugin.queue_summary() == [{"cluster_queue": "a", "submitted": 1, "admitted": 0, "finished": 0,
                                       "pending": 1, "rejected": 0, "evictions": 0, "mean_admission_wait_s": None,
                                       "max_admission_wait_s": None, "mean_queued_s": None}]


def test_partial_admission_runs_the_job_with_the_admitted_count():
    # 10 GPUs: a job of 8 one-GPU workers with minCount 3 while 4 GPUs are busy -> 6 workers;
    # after it is evicted and readmitted on an empty queue it gets its full 8 again.
    ctl = controller([gpu_cq("a", ("a100", 10), cohort=None)])
    plugin = KueueAdmissionPlugin(ctl)
    plugin.attach(FakeSim(FakeState((Node("n0", "A100", 16, 640000, 5120000),))))
    busy = JobRecord(Job("busy", 0.0, 10.0, gpus_per_worker=4, gpu_milli=1000,
                         extras={QUEUE_KEY: "lq-a", "namespace": "ns"}))
    elastic = JobRecord(Job("elastic", 1.0, 10.0, gpus_per_worker=1, gpu_milli=1000, workers=8,
                            extras={QUEUE_KEY: "lq-a", "namespace": "ns", "min_count": 3}))
    plugin.admission_cycle(FakeCtx(0.0, [busy]))
    ctx = FakeCtx(1.0, [elastic])
    plugin.admission_cycle(ctx)
    assert ("admit", "elastic") in ctx.log and elastic.job.workers == 6
    plugin.on_finish(busy)
    plugin.on_evict(elastic)      # an eviction Kueue did not ask for (a drain): the quota stays
    assert plugin.controller.usage("a") == {("a100", "nvidia.com/gpu"): 6}
    ctl.evicted("elastic", 2.0)   # Kueue's own eviction, its pods gone: quota released, requeued
    plugin.admission_cycle(FakeCtx(2.0, [elastic]))
    assert elastic.job.workers == 8
    rows = {r["cluster_queue"]: r for r in plugin.queue_summary()}
    # busy admitted at 0 (wait 0), elastic at 1 (submitted 1: wait 0); elastic evicted once
    assert (rows["a"]["admitted"], rows["a"]["evictions"], rows["a"]["mean_admission_wait_s"]) == (2, 1, 0.0)
