"""Karpenter-style autoscaler: the mini-lab, limits, consolidation, spot, expireAfter, cost."""

from __future__ import annotations

import pytest

from lab01_cluster_sim.autoscaler.catalogue import DEFAULT_CATALOGUE, PRICES_AS_OF, InstanceType, load_catalogue
from lab01_cluster_sim.autoscaler.nodepool import NodePool
from lab01_cluster_sim.studies.autoscaling import MINI_LAB_IMAGE, mini_lab, one_gpu_types
from lab01_cluster_sim.autoscaler.pods import Pod, StaticNode
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.model import Job, Node
from lab01_cluster_sim.simulate import Simulation

from .helpers import run_pods

G4 = 0.526   # g4dn.xlarge on-demand $/h in the default catalogue (cheapest 1-GPU type)


def test_mini_lab_exact_times():
    r = mini_lab()
    for i in range(1, 5):
        p = r.pods[f"pod-{i}"]
        # four replicas busy on one T4, time-sliced: each runs 4 x (2 ms + 0.05 ms) / 2 ms = 4.1x
        # slower than alone (slice 2 ms, context switch 50 us): 600 s of work ends at 2460 s
        assert (p.ran_on, p.bound_s, p.started_s) == ("gpu-node-1", 0, 0)
        assert p.finished_s == pytest.approx(600 * 4.1)
    p5 = r.pods["pod-5"]
    new = r.node(p5.ran_on)
    assert new.instance_type == "g4dn.xlarge" and new.gpu_capacity == 1          # unsliced
    assert (new.launched_s, new.ready_s) == (0, 75)                               # 60 s boot + 15 s registration
    # binds when the node is ready, then pulls 1 GiB: 1024 / 128 MiB/s = 8 s download plus
    # 1024 / 256 MiB/s = 4 s extraction; runs 600 s alone on its card
    assert (p5.bound_s, p5.started_s, p5.finished_s) == (75, 87, 687)
    # WhenEmpty, consolidateAfter 30 s: removed at 687 + 30 = 717
    assert new.terminated_s == 717 and new.termination_reason == "consolidation: empty"
    assert r.cost_dollars() == pytest.approx(717 / 3600 * G4)   # the static node costs 0
    assert r.pending_times()["pod-5"] == 75 and r.summary()["mean_pending_s"] == 15   # 75 / 5


def test_mini_lab_prepulled_image_starts_at_ready_time():
    r = mini_lab(prepull=True)
    assert r.pods["pod-5"].started_s == 75 and r.pods["pod-5"].finished_s == 675


def test_nodepool_limits_are_never_exceeded():
    pods = [Pod(f"p{i}", 1, 100) for i in range(4)]
    pool = NodePool("capped", one_gpu_types(), limit_gpus=2)
    r = run_pods(pods, [pool])
    launched = [n for n in r.nodes if n.pool is not None]
    assert len(launched) == 2
    # p0, p1 run on the two nodes (bound 75, 8 + 4 s pull, run 87..187); p2, p3 then reuse
    # them (bind at 187, cached image)
    assert r.pods["p2"].bound_s == 187 and r.pods["p2"].started_s == 187
    zero = run_pods([Pod("x", 1, 10)], [NodePool("none", one_gpu_types(), limit_gpus=0)])
    assert zero.pods["x"].node is None and zero.pods["x"].first_bound_s is None
    assert zero.summary()["nodes_launched"] == 0


def _underutilized(min_available=None, grace=0.0):
    static = StaticNode("static", "T4", 2, cached_images=("app:latest",))
    pool = NodePool("pool", one_gpu_types(), consolidation_policy="WhenEmptyOrUnderutilized")
    pods = [Pod("a", 1, 1000, workload="svc"), Pod("b", 1, 100, workload="svc"),
            Pod("c", 1, 1000, workload="batch", termination_grace_s=grace)]
    return run_pods(pods, [pool], [static], min_available=min_available)


def test_consolidation_when_underutilized_moves_pod_and_removes_node():
    r = _underutilized()
    node = r.node("pool-0001")
    # c binds at 75 on the new node; b ends at 100 on the static node; at 75 + 30 = 105 c fits on
    # the static node: c is evicted, the node removed, c restarts at 105 (image cached) -> ends 1105.
    assert node.terminated_s == 105 and node.termination_reason == "consolidation: underutilized"
    c = r.pods["c"]
    assert c.disruptions == 1 and c.ran_on == "static" and c.finished_s == 1105
    assert r.disruptions_by_workload() == {"batch": 1, "svc": 0}
    assert r.cost_dollars() == pytest.approx(105 / 3600 * G4)


def test_consolidation_evicts_a_bare_pod_for_good():
    # as above, but c is a bare Pod (no ownerRef): Karpenter evicts it all the same ("Pods without
    # an ownerRef ... will be evicted during voluntary node disruption", Karpenter docs,
    # Disruption), and nothing recreates it: gone at 105, never finished, no longer pending
    static = StaticNode("static", "T4", 2, cached_images=("app:latest",))
    pool = NodePool("pool", one_gpu_types(), consolidation_policy="WhenEmptyOrUnderutilized")
    r = run_pods([Pod("a", 1, 1000, workload="svc"), Pod("b", 1, 100, workload="svc"),
                  Pod("c", 1, 1000, workload="batch", bare=True)], [pool], [static])
    assert r.node("pool-0001").terminated_s == 105
    c = r.pods["c"]
    assert (c.disruptions, c.finished_s, c.gone_s) == (1, None, 105.0)
    assert r.pending_times()["c"] == 75.0      # pending 0..75 only (bound at 75, gone at 105)


def test_consolidation_waits_for_the_evicted_pods_grace_period():
    # As above, but c has terminationGracePeriodSeconds 20: Karpenter's termination controller
    # drains the node through the Eviction API and deletes the instance once its pods are gone
    # (Karpenter docs, "Disruption", Termination Controller). c is evicted at 105 and restarts on
    # the static node at once (ends 1105), but its old GPU stays held, and the node billed,
    # until 105 + 20 = 125.
    r = _underutilized(grace=20.0)
    node = r.node("pool-0001")
    assert node.terminated_s == 125 and node.termination_reason == "consolidation: underutilized"
    assert r.pods["c"].finished_s == 1105
    assert r.cost_dollars() == pytest.approx(125 / 3600 * G4)


def test_consolidation_respects_min_available():
    r = _underutilized(min_available={"batch": 1})
    c = r.pods["c"]
    # evicting c would leave 0 < 1 running 'batch' pods: no consolidation until c ends
    # c bound at 75, image 8 s + 4 s extraction, starts at 87
    assert c.disruptions == 0 and c.finished_s == 87 + 1000
    assert r.node("pool-0001").terminated_s == 87 + 1000 + 30


def test_spot_interruption_notice_and_budget():
    pool = NodePool("spot", one_gpu_types(), capacity_type="spot")
    pods = [Pod("w-0", 1, 1000, workload="web"), Pod("w-1", 1, 1000, workload="web")]
    r = run_pods(pods, [pool], min_available={"web": 1},
                            spot_interruptions=[(200, "spot-0001"), (200, "spot-0002")])
    # notice at 200: w-0 evicted at once (2 -> 1 >= 1); w-1 would leave 0 running, so it stays
    # until the interruption at 200 + 120 = 320. Replacements: spot-0003 at 200 (ready 275),
    # spot-0004 at 320 (ready 395); each pulls the 1 GiB image (8 s + 4 s extraction).
    assert r.pods["w-0"].ran_on == "spot-0003" and r.pods["w-0"].started_s == 287
    assert r.pods["w-1"].ran_on == "spot-0004" and r.pods["w-1"].started_s == 407
    assert r.node("spot-0002").terminated_s == 320 and r.node("spot-0002").termination_reason == "spot interruption"
    assert r.disruptions_by_workload() == {"web": 2}
    assert r.node("spot-0001").price_per_hour == pytest.approx(0.4 * G4)


def test_expire_after_rotates_node():
    pool = NodePool("rot", one_gpu_types(), expire_after_s=300)
    pods = [Pod("a", 1, 200), Pod("b", 1, 200, submit_s=290)]
    r = run_pods(pods, [pool])
    # a: binds at 75, pulls 8 s + extracts 4 s, runs 87..287 on rot-0001; b binds there at 290
    # (image cached), is evicted at expiry (300) after 10 s of work; rot-0002 launched at 300,
    # ready 375, pull 12 s -> b runs 387..587.
    assert r.node("rot-0001").terminated_s == 300
    assert r.node("rot-0001").termination_reason == "expired (expireAfter)"
    b = r.pods["b"]
    assert b.disruptions == 1 and b.lost_s == 10 and b.started_s == 387 and b.finished_s == 587


def test_cost_is_sum_of_node_hours_times_price():
    r = mini_lab(pods=7)
    assert r.cost_dollars() == pytest.approx(sum(n.hours(r.end_s) * n.price_per_hour for n in r.nodes))
    assert len([n for n in r.nodes if n.pool is not None]) == 3


def test_catalogue_has_aws_june_2025_p4_p5_prices():
    """AWS cut P4/P5 on-demand prices by up to 45% in June 2025 (catalogue docstring)."""
    by_name = {t.name: t for t in DEFAULT_CATALOGUE}
    assert PRICES_AS_OF == "2025-06"
    p5, p4d = by_name["p5.48xlarge"], by_name["p4d.24xlarge"]
    assert p5.price_per_hour == pytest.approx(55.04)
    assert p5.price_per_hour / p5.gpus == pytest.approx(6.88)          # 55.04 / 8
    assert 1 - p5.price_per_hour / 98.32 == pytest.approx(0.4402, abs=1e-4)  # 1 - 55.04/98.32: "up to 45%"
    assert p4d.price_per_hour / p4d.gpus == pytest.approx(2.7447, abs=1e-4)  # 21.957642 / 8
    # after the cut an A100 on p4d is cheaper than on GCP's a2-highgpu-8g (29.387 / 8 = 3.673)
    assert p4d.price_per_hour / 8 < by_name["a2-highgpu-8g"].price_per_hour / 8
    # spot at the assumed factor: 0.4 x 55.04 = 22.016
    assert p5.price("spot") == pytest.approx(22.016)


def test_catalogue_has_date_and_yaml_override(tmp_path):
    assert PRICES_AS_OF and all(t.price_per_hour > 0 for t in DEFAULT_CATALOGUE)
    f = tmp_path / "types.yaml"
    f.write_text("- {name: small, provider: test, gpu_model: T4, gpus: 1, cpu_milli: 4000,"
                 " memory_mib: 16384, price_per_hour: 0.1}\n")
    [t] = load_catalogue(f)
    assert t == InstanceType("small", "test", "T4", 1, 4000, 16384, 0.1)
    f.write_text("- {name: small, gpus: 1}\n")
    with pytest.raises(InputError, match=r"entry \[0\]: missing"):
        load_catalogue(f)
    with pytest.raises(InputError, match="consolidationPolicy"):
        NodePool("p", one_gpu_types(), consolidation_policy="Sometimes")
    assert MINI_LAB_IMAGE


# -- bounded runs and rejected values (tester's findings) ------------------------------------

@pytest.mark.parametrize("expire", [0.0, 1.0, 75.0])
def test_expire_after_not_longer_than_ready_delay_is_rejected(expire):
    # 60 s boot + 15 s registration = 75 s: a node expiring at or before 75 s never runs a pod
    with pytest.raises(InputError, match="expire_after_s must exceed .* = 75 s"):
        NodePool("p", one_gpu_types(), expire_after_s=expire)
    NodePool("p", one_gpu_types(), expire_after_s=76.0)   # one second of usefulness is allowed


@pytest.mark.parametrize("attr", ["boot_delay_s", "registration_delay_s", "consolidate_after_s",
                                  "expire_after_s", "limit_gpus", "pull_mib_per_s"])
def test_nodepool_rejects_nan(attr):
    with pytest.raises(InputError, match=attr):
        NodePool("p", one_gpu_types(), **{attr: float("nan")})


@pytest.mark.parametrize("kwargs, match", [
    ({"duration_s": float("nan")}, "duration_s"), ({"duration_s": float("inf")}, "duration_s"),
    ({"submit_s": -1.0}, "submit_s"), ({"image_gib": float("nan")}, "image_gib"),
])
def test_pod_rejects_nan_and_negative(kwargs, match):
    with pytest.raises(InputError, match=match):
        Pod("p", **kwargs)


@pytest.mark.parametrize("kwargs, match", [
    ({"horizon_s": -1.0}, "horizon_s"), ({"horizon_s": float("inf")}, "horizon_s"),
    ({"spot_interruption_rate_per_hour": -1.0}, "spot_interruption_rate"),
    ({"spot_interruption_rate_per_hour": float("nan")}, "spot_interruption_rate"),
    ({"min_available": {"w": -1}}, r"min_available\['w'\]"),
])
def test_simulation_rejects_bad_bounds(kwargs, match):
    with pytest.raises(InputError, match=match):
        run_pods([Pod("p")], [NodePool("p", one_gpu_types())], **kwargs)


@pytest.mark.parametrize("until", [0.0, -1.0, float("nan")])
def test_a_run_refuses_an_end_time_that_is_not_positive(until):
    sim = Simulation([Node("n", "T4", 1, 16000, 65536)], [Job("a", 0.0, 10.0)])
    with pytest.raises(InputError, match="until: expected a time > 0 s"):
        sim.run(until=until)


def test_until_is_honoured_when_pods_outlive_nodes():
    # expireAfter 100 s, ready after 75 s, pods of 600 s: every node expires 25 s into its pod,
    # which restarts on a new node; the run stops at until_s = 1000 instead of never settling.
    pool = NodePool("p", one_gpu_types(), expire_after_s=100.0)
    r = run_pods([Pod("a", 1, 600.0)], [pool], until_s=1000.0)
    assert r.end_s <= 1000 and r.pods["a"].finished_s is None
    # launches at 0, 100, 200, ..., 1000 (each at the previous one's expiry): 11 nodes
    assert len(r.nodes) == 11 and r.pods["a"].disruptions == 10


def test_spot_churn_stops_with_a_clear_error():
    # an interruption rate of 1e9 per node-hour kills every node within microseconds: each
    # pod relaunches forever; the run stops once max_nodes nodes have been launched
    pool = NodePool("p", one_gpu_types(), capacity_type="spot")
    with pytest.raises(InputError, match="would launch more than 20 nodes"):
        run_pods([Pod("a")], [pool], spot_interruption_rate_per_hour=1e9, max_nodes=20)
    with pytest.raises(InputError, match="handled 50 events"):
        run_pods([Pod("a")], [pool], spot_interruption_rate_per_hour=1e9, max_events=50)


def test_time_sliced_pods_are_rerated_as_neighbours_come_and_go():
    # one T4 time-sliced to 2 replicas, image cached. a (100 s of work) runs alone 0..50 (50 done);
    # b arrives at 50: both run 2 x (2 + 0.05) / 2 = 2.05x slower. a's last 50 s take 102.5 s ->
    # ends at 152.5; b did 102.5 / 2.05 = 50 s of work by then, runs its last 50 alone -> 202.5.
    static = StaticNode("ts", "T4", 1, timeslice_replicas=2, cached_images=("app:latest",))
    r = run_pods([Pod("a", 1, 100.0), Pod("b", 1, 100.0, submit_s=50.0)], [], [static])
    assert r.pods["a"].finished_s == pytest.approx(152.5)
    assert r.pods["b"].started_s == 50 and r.pods["b"].finished_s == pytest.approx(202.5)
    # unsliced, the same two pods on a 2-GPU node do not slow each other
    plain = run_pods([Pod("a", 1, 100.0), Pod("b", 1, 100.0, submit_s=50.0)], [],
                                [StaticNode("n", "T4", 2, cached_images=("app:latest",))])
    assert (plain.pods["a"].finished_s, plain.pods["b"].finished_s) == (100, 150)


def test_a_finishing_time_sliced_pod_speeds_up_its_neighbour():
    # a NodePool node time-sliced to 2 replicas, image pre-pulled: a and b both start when it
    # is ready (75 s) and share its one GPU at 2.05x.
    pool = NodePool("ts", one_gpu_types(), timeslice_replicas=2, prepulled_images=("app:latest",))
    r = run_pods([Pod("a", 1, 41.0), Pod("b", 1, 100.0)], [pool])
    # a: 41 s of work at 2.05x -> 84.05 s, ends at 75 + 84.05 = 159.05; b did 41 s by then,
    # its remaining 59 s alone -> ends at 218.05
    assert r.pods["a"].ran_on == r.pods["b"].ran_on
    assert r.pods["a"].finished_s == pytest.approx(159.05) and r.pods["b"].finished_s == pytest.approx(218.05)
