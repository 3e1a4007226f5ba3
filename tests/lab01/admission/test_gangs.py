"""A multi-role gang under Kueue (issue 17): one Workload with one pod set per role, a flavor
per pod set, admitted, placed and released as a whole; a role that succeeds early gives its
pod set's quota back (reclaimablePods). Kueue's rules: the JobSet integration's ``PodSets``
(one pod set per replicated job; kubernetes-sigs/kueue
``pkg/controller/jobs/jobset/jobset_controller.go``) and ``ReclaimablePods`` (same file);
flavor assignment per pod set with the usage of the earlier pod sets counted
(``assignFlavors``, ``pkg/scheduler/flavorassigner/flavorassigner.go``); quota after reclaim
(``podSetsCountsAfterReclaim``, ``pkg/workload/workload.go``). Figures are hand-computed."""

from __future__ import annotations

import pytest

from lab01_cluster_sim.admission import (AdmissionController, ClusterQueue, FlavorQuotas, LocalQueue, ResourceFlavor,
                                         ResourceGroup, ResourceQuota)
from lab01_cluster_sim.admission.controller import Outcome, State
from lab01_cluster_sim.admission.plugin import QUEUE_KEY, KueueAdmissionPlugin, gang_workload
from lab01_cluster_sim.model import GangRole, Job, Node
from lab01_cluster_sim.simulate import simulate

from .helpers import CPU, GPU

NODES = [Node("cpu-0", "", 0, 16000, 65536, labels={"pool": "cpu"}),
         Node("h100-0", "H100", 8, 64000, 262144, labels={"gpu": "h100"}),
         Node("a100-0", "A100", 8, 64000, 262144, labels={"gpu": "a100"})]


def _controller() -> AdmissionController:
    # one ClusterQueue: cpu and memory on flavor "default" (any node); GPUs on h100 (8) then a100 (8)
    q = ResourceQuota
    cq = ClusterQueue("research", (
        ResourceGroup((CPU, "memory"), (FlavorQuotas("default", {CPU: q(100_000), "memory": q(2**40)}),)),
        ResourceGroup((GPU,), (FlavorQuotas("h100", {GPU: q(8)}), FlavorQuotas("a100", {GPU: q(8)}))),
    ))
    flavors = [ResourceFlavor("default"), ResourceFlavor("h100", {"gpu": "h100"}),
               ResourceFlavor("a100", {"gpu": "a100"})]
    return AdmissionController([cq], [LocalQueue("lq", "ml", "research")], flavors)


def _gang() -> list[Job]:
    extras = {QUEUE_KEY: "lq", "namespace": "ml"}

    def role(i, name):
        return GangRole("train", name, i, 3)
    return [
        Job("train-launcher", 0, 50, cpu_milli=2000, memory_mib=1024, role=role(0, "launcher"), extras=extras),
        Job("train-workers", 0, 200, gpus_per_worker=4, gpu_milli=1000, cpu_milli=8000, memory_mib=8192,
            workers=2, role=role(1, "workers"), extras=extras),
        Job("train-eval", 0, 100, gpus_per_worker=4, gpu_milli=1000, cpu_milli=8000, memory_mib=8192,
            role=role(2, "eval"), extras=extras),
    ]


def test_the_gang_is_one_workload_with_a_pod_set_per_role():
    wl = gang_workload(_gang())
    assert wl.name == "train" and wl.queue_name == "lq" and wl.namespace == "ml"
    assert [(ps.name, ps.count, ps.requests.get(GPU, 0)) for ps in wl.pod_sets] == [
        ("launcher", 1, 0), ("workers", 2, 4), ("eval", 1, 4)]
    with pytest.raises(ValueError, match="every role of one gang in role order"):
        gang_workload(_gang()[1:])


def test_each_pod_set_gets_its_own_flavor_and_the_gang_starts_at_once():
    plugin = KueueAdmissionPlugin(_controller())
    # "next" (1 x 8 GPUs) queues right after the gang
    nxt = Job("next", 1, 10, gpus_per_worker=8, gpu_milli=1000, cpu_milli=1000, memory_mib=1024,
              extras={QUEUE_KEY: "lq", "namespace": "ml"})
    result = simulate(NODES, _gang() + [nxt], plugins=[plugin])
    (admitted, *_) = [d for d in plugin.decisions if d.workload == "train"]
    # workers (2 x 4 = 8 GPUs) take all of h100's 8; eval (4) then finds h100 full -> a100;
    # the launcher asks no GPU: only the cpu/memory group, flavor default
    assert admitted.flavors == {"launcher": {CPU: "default", "memory": "default"},
                                "workers": {CPU: "default", "memory": "default", GPU: "h100"},
                                "eval": {CPU: "default", "memory": "default", GPU: "a100"}}
    r = result.records
    assert {j: (r[j].start_time, r[j].end_time) for j in ("train-launcher", "train-workers", "train-eval")} == {
        "train-launcher": (0.0, 50.0), "train-workers": (0.0, 200.0), "train-eval": (0.0, 100.0)}
    # each pod set lands on its flavor's nodes (Kueue's nodeSelector from the flavor's nodeLabels)
    assert {p.node for p in r["train-workers"].last_placements} == {"h100-0"}
    assert {p.node for p in r["train-eval"].last_placements} == {"a100-0"}
    # next: h100 full (8 of 8), a100 holds eval's 4 of 8, so 8 fit nowhere until eval succeeds at
    # 100 and its pod set's 4 a100 are reclaimed: admitted at 100 on a100, runs 100..110, long
    # before the gang's last role ends at 200
    nd = [d for d in plugin.decisions if d.workload == "next" and d.outcome is Outcome.ADMITTED]
    assert [(d.time, d.flavors["main"][GPU]) for d in nd] == [(100.0, "a100")]
    assert (r["next"].start_time, r["next"].end_time) == (100.0, 110.0)
    assert plugin.controller.workloads["train"].state is State.FINISHED


def test_the_gang_waits_for_quota_as_a_whole():
    plugin = KueueAdmissionPlugin(_controller())
    # hog, queued first, takes h100's 8 GPUs from 0 to 300
    hog = Job("hog", 0, 300, gpus_per_worker=8, gpu_milli=1000, cpu_milli=1000, memory_mib=1024,
              extras={QUEUE_KEY: "lq", "namespace": "ml", "position": -1})
    result = simulate(NODES, [hog] + _gang(), plugins=[plugin])
    r = result.records
    # the gang needs 12 GPUs: workers 8 (only a100 has 8 left), eval 4 (nothing left) -> no flavor
    # for eval: the whole workload waits, the launcher too, until hog ends at 300
    assert {j: r[j].start_time for j in ("train-launcher", "train-workers", "train-eval")} == {
        "train-launcher": 300.0, "train-workers": 300.0, "train-eval": 300.0}
    (pending, *_) = [d for d in plugin.decisions if d.workload == "train"]
    assert pending.outcome is Outcome.PENDING
    assert "couldn't assign flavors to pod set eval" in pending.reason


def test_wait_for_pods_ready_evicts_a_gang_whose_role_cannot_start():
    from lab01_cluster_sim.admission.backoff import RequeuingStrategy, WaitForPodsReady

    # no a100 node: admitted (workers on h100, eval on a100 quota), but eval's pod can only go
    # to nodes labelled gpu=a100 (its flavor's nodeLabels), so the gang never starts: nothing
    # runs, not even the launcher. waitForPodsReady (timeout 300 s, backoff 60 s, at most 1
    # requeue): evicted at 300, requeued at 360, admitted again at 360, evicted at 660 and
    # deactivated (backoffLimitCount 1 reached).
    wfpr = WaitForPodsReady(300.0, RequeuingStrategy(60.0, 3600.0, 1))
    plugin = KueueAdmissionPlugin(_controller(), wait_for_pods_ready=wfpr)
    result = simulate(NODES[:2], _gang(), plugins=[plugin])
    events = [(d.time, d.outcome) for d in plugin.decisions if d.workload == "train"]
    assert events == [(0.0, Outcome.ADMITTED), (300.0, Outcome.EVICTED), (360.0, Outcome.ADMITTED),
                      (660.0, Outcome.EVICTED), (660.0, Outcome.REJECTED)]
    assert [(r.start_time, r.state.value) for r in result.records.values()] == [(None, "rejected")] * 3
