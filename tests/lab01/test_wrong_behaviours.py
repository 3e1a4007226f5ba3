"""The behaviours issue 11 lists as wrong, each with its right, hand-computed value.

Every scenario runs on the one engine (``simulate`` / ``Simulation`` with plugins); the
comments do the arithmetic.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from lab01_cluster_sim.autoscaler.catalogue import DEFAULT_CATALOGUE
from lab01_cluster_sim.autoscaler.nodepool import NodePool
from lab01_cluster_sim.autoscaler.plugin import Autoscaler
from lab01_cluster_sim.autoscaler.pods import Pod, PodTracker, pod_jobs
from lab01_cluster_sim.disciplines.core import EasyBackfill, PriorityPreemption
from lab01_cluster_sim.kubescheduler.constraints import NODE_SELECTOR
from lab01_cluster_sim.kubescheduler.nodeaffinity import NodeAffinity
from lab01_cluster_sim.lifecycle import NodeEvents
from lab01_cluster_sim.model import Job, JobState, Node
from lab01_cluster_sim.policies.generic import MostAllocated
from lab01_cluster_sim.simulate import Simulation, simulate

GPU = dict(gpu_milli=1000)


# -- backfill: a CPU-only job fits beside the reserved GPUs -------------------------------------
def _reserved_gpus():
    # one node: 4 GPUs, 16 CPUs. 'running' holds the 4 GPUs until t=100; 'head' (4 GPUs) arrives
    # at t=1 and gets the reservation at the shadow time 100.
    node = Node("n0", "H100", 4, 16_000, 64_000)
    return [node], [Job("running", 0, 100, 4, cpu_milli=4000, **GPU),
                    Job("head", 1, 50, 4, cpu_milli=4000, **GPU)]


def test_backfill_starts_a_cpu_only_job_beside_the_reserved_gpus():
    nodes, jobs = _reserved_gpus()
    # 'cpu' (4 CPUs, no GPU, 1000 s) at t=2 ends at 1002 > 100: EASY's first condition fails, but
    # bound beside the reservation it leaves the head its 4 GPUs and 16 - 4 - 4 = 8 CPUs at
    # t=100 (second condition): it starts at once.
    jobs.append(Job("cpu", 2, 1000, cpu_milli=4000))
    # '1gpu' (1 GPU, 1000 s) at t=2 would hold a GPU the head needs at 100: it must wait for
    # the head to end (100 + 50 = 150).
    jobs.append(Job("1gpu", 2, 1000, 1, cpu_milli=1000, **GPU))
    r = simulate(nodes, jobs, discipline="backfill").records
    assert r["cpu"].start_time == 2
    assert r["head"].start_time == 100          # not delayed by the backfilled job
    assert r["1gpu"].start_time == 150


# -- node drain: a gang that lost a worker is preferred over a newer job ------------------------
def test_after_a_drain_the_gang_gets_the_freed_gpus_before_a_newer_job():
    # n0, n1, n2 with 2 GPUs each; strict FIFO. t=0: 'gang' (2 workers x 2 GPUs, 100 s) on n0 + n1,
    # 'filler' (2 GPUs, 30 s) on n2. t=5: 'newer' (2 GPUs) waits. t=10: n1 is drained: the gang
    # is evicted and requeued at its old place, ahead of 'newer'; it cannot gather 2 nodes (n1
    # cordoned, n2 busy) and, at the head of a strict FIFO queue, holds 'newer' back. t=30: the
    # filler ends: the gang takes n0 + n2 (restart from scratch: ends 130); 'newer' runs after it.
    nodes = [Node(f"n{i}", "H100", 2, 8000, 64_000) for i in range(3)]
    jobs = [Job("gang", 0, 100, 2, workers=2, **GPU), Job("filler", 0, 30, 2, **GPU), Job("newer", 5, 50, 2, **GPU)]
    r = simulate(nodes, jobs, discipline="fifo", plugins=[NodeEvents([(10, "n1", "drain")])]).records
    gang, newer = r["gang"], r["newer"]
    assert gang.preemptions == 1 and gang.end_time == 130
    assert sorted(p.node for p in gang.last_placements) == ["n0", "n2"]
    assert newer.start_time == 130
    # the bug: the evicted gang went to the back, 'newer' took n0 at t=10 (ends 60) and the gang
    # restarted only at 60


# -- priority preemption with a nodeSelector ---------------------------------------------------
def test_priority_preemption_evicts_only_a_victim_on_a_node_the_preemptor_can_use():
    # na (pool a) and nb (pool b), 2 GPUs each. 'la' (priority 0) on na from t=0, 'lb' on nb
    # from t=5. 'hi' (priority 10, 2 GPUs, nodeSelector pool=a) at t=10. Lost work if evicted
    # now: la 10 s x 2 GPUs, lb 5 s x 2 GPUs; lb is the cheaper victim but frees a node 'hi'
    # cannot use. Only 'la' is a candidate: one victim, 'hi' starts at 10 on na.
    nodes = [Node("na", "H100", 2, 8000, 64_000, labels={"pool": "a"}),
             Node("nb", "H100", 2, 8000, 64_000, labels={"pool": "b"})]
    jobs = [Job("la", 0, 100, 2, **GPU), Job("lb", 5, 100, 2, **GPU),
            Job("hi", 10, 20, 2, priority=10, extras={NODE_SELECTOR: (("pool", "a"),)}, **GPU)]
    r = simulate(nodes, jobs, discipline="priority", plugins=[NodeAffinity()]).records
    assert (r["la"].preemptions, r["lb"].preemptions) == (1, 0)
    assert r["hi"].start_time == 10 and r["hi"].last_placements[0].node == "na"
    # la restarts from scratch when hi ends (10 + 20 = 30): 30 + 100 = 130; lb ran undisturbed
    assert r["la"].end_time == 130 and r["lb"].end_time == 105


# -- backfill shadow time and node selectors ------------------------------------------------------
def test_backfill_shadow_time_respects_node_selectors():
    # a0, a1 (pool a) and b0 (pool b), 4 GPUs each. 'ra' holds a0 until 100, 'rb' holds b0 until
    # 1000. 'head' (pool b, 4 GPUs) at t=1 can only use b0: its shadow time is 1000, not 100
    # (a0 frees at 100 but the head may not use it). 'ja' (pool a, 4 GPUs, 500 s) at t=2 fits a1
    # now and ends at 502 <= 1000: it starts at once.
    nodes = [Node("a0", "H100", 4, 8000, 64_000, labels={"pool": "a"}),
             Node("b0", "H100", 4, 8000, 64_000, labels={"pool": "b"}),
             Node("a1", "H100", 4, 8000, 64_000, labels={"pool": "a"})]
    pool = {"ra": "a", "rb": "b", "head": "b", "ja": "a"}
    jobs = [Job(j, t, d, 4, extras={NODE_SELECTOR: (("pool", pool[j]),)}, **GPU)
            for j, t, d in (("ra", 0, 100), ("rb", 0, 1000), ("head", 1, 10), ("ja", 2, 500))]
    sim = Simulation(nodes, jobs, discipline="backfill", plugins=[NodeAffinity()])
    sim.run(until=1.5)
    head = sim.records["head"]
    assert EasyBackfill().reservation(sim.scheduler, head) == 1000
    r = sim.run().records
    assert r["ja"].start_time == 2 and r["head"].start_time == 1000


# -- naive mode: drains release partial holdings; partial holders can be preempted ----------------
def test_naive_drain_releases_the_workers_a_pending_job_holds_there():
    # n0, n1 with 2 GPUs each, naive mode. t=0: 'other' (1 GPU, 50 s) and 'gang' (4 workers x 1
    # GPU): the gang binds 3 workers (n0: 1, n1: 2) and waits for a 4th. t=10: n1 is drained:
    # its 2 workers are given back (the gang keeps its worker on n0). t=20: n1 is back: the gang
    # binds 2 workers there again; t=50: 'other' ends and the 4th worker binds: 50..150.
    nodes = [Node(f"n{i}", "H100", 2, 8000, 64_000) for i in range(2)]
    jobs = [Job("other", 0, 50, 1, **GPU), Job("gang", 0, 100, 1, workers=4, **GPU)]
    events = NodeEvents([(10, "n1", "drain"), (20, "n1", "up")])
    sim = Simulation(nodes, jobs, policy="first-fit", mode="naive", stop_on_deadlock=False, plugins=[events])
    sim.run(until=15)
    gang = sim.records["gang"]
    assert [p.node for p in gang.placements] == ["n0"]
    assert sim.state.gpu_free[1].tolist() == [1000, 1000]        # nothing left bound on the drained n1
    res = sim.run()
    assert (res.records["gang"].start_time, res.records["gang"].end_time) == (50, 150)


def test_naive_pending_partial_holdings_can_be_preempted():
    # n0, n1 with 2 GPUs each, naive mode, priority discipline. t=0: 'busy' (priority 20, 2 GPUs,
    # 100 s) on one node; 'low' (priority 0, 3 workers x 1 GPU) binds 2 workers on the other and
    # waits for a 3rd. t=1: 'high' (priority 10, 2 GPUs, 10 s) finds no room: the only
    # lower-priority holder is 'low', pending with 2 GPUs: its workers are released (no work
    # lost) and 'high' starts at 1 (ends 11). 'low' binds 2 workers again at 11 and its 3rd when
    # 'busy' ends at 100: it runs 100..130.
    nodes = [Node(f"n{i}", "H100", 2, 8000, 64_000) for i in range(2)]
    jobs = [Job("busy", 0, 100, 2, priority=20, **GPU), Job("low", 0, 30, 1, workers=3, **GPU),
            Job("high", 1, 10, 2, priority=10, **GPU)]
    r = simulate(nodes, jobs, mode="naive", discipline="priority").records
    assert (r["high"].start_time, r["high"].end_time) == (1, 11)
    assert r["low"].preemptions == 1 and (r["low"].start_time, r["low"].end_time) == (100, 130)
    assert PriorityPreemption.name == "priority"


# -- the autoscaler packs pending pods --------------------------------------------------------------
def _fleet(pods, pool):
    """Pods on an empty cluster that ``pool`` grows: the Autoscaler and a PodTracker on the engine."""
    scaler = Autoscaler([pool])
    tracker = PodTracker(pods, scaler)
    Simulation([], pod_jobs(pods), MostAllocated(), "gang", "fifo-skip", plugins=[scaler, tracker]).run()
    return tracker.result()


@pytest.mark.parametrize("boot, registration", [(60.0, 15.0), (0.0, 0.0)])
def test_autoscaler_packs_four_pending_one_gpu_pods_onto_one_node(boot, registration):
    # four 1-GPU pods pending at t=0 and a NodePool of 8-GPU instances only: one 8-GPU node
    # holds them all (Karpenter bin-packs the pods of a batch), also with no boot delay (the
    # launching node is schedulable at once).
    eight = tuple(t for t in DEFAULT_CATALOGUE if t.name == "g5.48xlarge")
    pool = NodePool("gpu", eight, boot_delay_s=boot, registration_delay_s=registration)
    r = _fleet([Pod(f"p{i}", 1, 600) for i in range(4)], pool)
    assert [n.instance_type for n in r.nodes] == ["g5.48xlarge"]
    assert {p.ran_on for p in r.pods.values()} == {"gpu-0001"}


def test_autoscaler_launches_the_cheapest_type_holding_the_whole_batch():
    # the same four pods with the whole default catalogue: the claim keeps every type with >= 4
    # GPUs; the cheapest is g4dn.12xlarge (4 x T4, $3.912/h); one node, as Karpenter's
    # "fewer but larger nodes" batching gives (4 x g4dn.xlarge would be $2.104/h).
    r = _fleet([Pod(f"p{i}", 1, 600) for i in range(4)], NodePool("gpu", DEFAULT_CATALOGUE))
    assert [n.instance_type for n in r.nodes] == ["g4dn.12xlarge"]


# -- one rule for "never fits" ----------------------------------------------------------------------
def test_core_and_every_extension_reject_a_gang_that_never_fits_with_the_same_reason():
    from lab01_cluster_sim.disciplines.preemption import CheckpointSpec, Checkpoints
    from lab01_cluster_sim.sharing_modes import TimeSlicing
    from lab01_cluster_sim.tenancy import TenancyPlacer, Tier
    from lab01_cluster_sim.topology import TopologyAware

    # 2 nodes of 4 GPUs; a gang of 3 workers x 4 GPUs: room for 2 workers on the empty cluster
    nodes = [Node(f"n{i}", "H100", 4, 8000, 64_000) for i in range(2)]
    jobs = [Job("ok", 0, 10, 1, **GPU), Job("never", 0, 10, 4, workers=3, **GPU)]
    reason = "gang of 3 workers cannot fit even on the empty cluster: room for 2 worker(s) of this shape"
    runs = {
        "core": simulate(nodes, jobs),
        "all plugins": simulate(nodes, jobs, discipline="drf", plugins=[
            TopologyAware(nodes, 60.0), TimeSlicing(), TenancyPlacer({}, Tier.STANDARD),
            Checkpoints(default=CheckpointSpec(60.0)), NodeEvents([(5, "n1", "drain")])]),
    }
    for name, res in runs.items():
        rec = res.records["never"]
        assert (rec.state, rec.reason) == (JobState.REJECTED, reason), name
    for d in ("fifo", "backfill", "priority", "drf"):
        rec = simulate(nodes, jobs, MostAllocated(), discipline=d).records["never"]
        assert (rec.state, rec.reason) == (JobState.REJECTED, reason), d


# -- FGD: a node's score depends on that node and the pod alone ------------------------------------
def test_fgd_score_is_a_function_of_the_node_and_the_pod_alone():
    from lab01_cluster_sim.cluster import ClusterState, Request
    from lab01_cluster_sim.fragmentation import TargetWorkload, weighted_fragmentation
    from lab01_cluster_sim.policies.fgd import FGD
    from lab01_cluster_sim.workloads.synthetic import default_trace

    # Hand-computed: one shape (1 CPU, 1 whole GPU, k=1), weight 1. A node with 8 free GPUs
    # and room on the CPU: every shape is satisfied and no GPU is below 1000: F = 0; a 1-GPU pod
    # leaves 7 free and one at 0 (0 is not a fragment): F' = 0, dF = 0, score trunc(100 x 0.5) = 50.
    one = TargetWorkload.from_shapes([(1000, 1000, 1, "")], [1])
    st = ClusterState([Node(f"n{i}", "G2", 8, 96_000, 10 ** 6) for i in range(3)])
    assert FGD(one).node_scores(st, Request(1000, 0, 1, 1000), np.arange(3))[0].tolist() == [50, 50, 50]
    # A partly used GPU (600 free) below a 1000-milli shape is a fragment: F = 600 milli x weight 1
    st.bind(0, (0,), Request(0, 0, 1, 400))
    assert weighted_fragmentation(st.gpu_free[:1], st.cpu_free[:1], st.model_index[:1],
                                  one.access(st.model_names), one).tolist() == [600]

    # The real-shaped target (the synthetic openb-like trace): score every node alone and all
    # together; equal inputs give equal scores (the float version gave 49 alone and 50 together
    # where dF is exactly 0, for about half of the seeded states).
    target = TargetWorkload.from_jobs(default_trace(seed=0).jobs)
    rng = np.random.default_rng(1)
    for trial in range(20):
        st = ClusterState([Node(f"n{i}", "G2", 8, 96_000, 10 ** 6) for i in range(12)])
        for i in range(12):
            for g in range(8):
                u = int(rng.integers(0, 11)) * 100
                if u:
                    st.bind(i, (g,), Request(0, 0, 1, u))
        req = Request(int(rng.integers(1, 8)) * 1000, 0, int(rng.integers(1, 3)), 1000)
        alone = [int(FGD(target).node_scores(st, req, np.array([n]))[0][0]) for n in range(12)]
        together = FGD(target).node_scores(st, req, np.arange(12))[0].tolist()
        assert alone == together, trial


# -- runtime estimates (time limits) ---------------------------------------------------------------
def test_a_job_is_killed_at_its_time_limit():
    # Slurm's rule (OverTimeLimit=0): a job still running at its limit ends in TIMEOUT there.
    node = [Node("n0", "H100", 1, 8000, 64_000)]
    r = simulate(node, [Job("x", 0, 100, 1, time_limit=60.0, **GPU), Job("y", 0, 10, 1, **GPU)]).records
    assert r["x"].state is JobState.TIMEOUT and r["x"].end_time == 60 and "time limit of 60 s" in r["x"].reason
    assert r["y"].start_time == 60 and r["y"].state is JobState.COMPLETED      # x's GPU is freed at 60


def _estimates(limit_r: float | None, limit_c: float | None):
    # one node of 5 GPUs. 'R' (4 GPUs, really 100 s) from t=0; 'H' (5 GPUs, 10 s) at t=1 waits for
    # R; 'C' (1 GPU, really 250 s) at t=2 could use the free GPU.
    node = [Node("n0", "H100", 5, 8000, 64_000)]
    jobs = [Job("R", 0, 100, 4, time_limit=limit_r, **GPU), Job("H", 1, 10, 5, **GPU),
            Job("C", 2, 250, 1, time_limit=limit_c, **GPU)]
    return simulate(node, jobs, discipline="backfill").records


def test_backfill_reserves_from_user_estimates_not_true_run_times():
    # Exact knowledge (no limits): H's shadow time is 100; C (2 + 250 > 100) would hold a GPU H
    # needs then: it waits. H runs 100..110, C 110..360.
    r = _estimates(None, None)
    assert (r["H"].start_time, r["C"].start_time) == (100, 110)
    # R over-estimated (limit 300 s, true 100 s): the shadow time is 0 + 300; C's estimate (its
    # limit 250 s) ends at 252 <= 300: C backfills at 2. R really ends at 100, but H must now wait
    # for C's GPU: it starts at 252. Inaccurate estimates delay the head (Mu'alem & Feitelson).
    r = _estimates(300.0, 250.0)
    assert (r["C"].start_time, r["H"].start_time) == (2, 252)
    # C under-estimates itself (limit 200 s, true 250 s): killed at 2 + 200 = 202, H starts then.
    r = _estimates(300.0, 200.0)
    assert r["C"].state is JobState.TIMEOUT and r["C"].end_time == 202 and r["H"].start_time == 202


def test_time_limit_is_validated():
    from lab01_cluster_sim.errors import InputError

    for bad in (0.0, -5.0, math.nan):
        with pytest.raises(InputError, match="time_limit"):
            Job("x", 0, 10, time_limit=bad)


# -- one event queue ---------------------------------------------------------------------------------
def test_no_module_but_the_engine_keeps_an_event_heap():
    import pathlib
    import re

    import lab01_cluster_sim

    root = pathlib.Path(lab01_cluster_sim.__file__).parent
    users = sorted(str(p.relative_to(root)) for p in root.rglob("*.py")
                   if re.search(r"\bheapq\b|PriorityQueue", p.read_text()))
    # engine.py: the one event loop; nothing else imports heapq or a priority queue (FIFO-skip
    # merges its queue heads with a sorted list inside one pass, not with a second event queue)
    assert users == ["engine.py"]
