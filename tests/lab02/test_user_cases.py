"""Cases reported by users of NVIDIA's device plugin (issue 3, sec. 7), each with its value,
checked end to end: mock kubelet <-> real plugin over unix sockets."""

from __future__ import annotations

import pytest

from _node import gpus, node, pod, time_slicing

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize("strategy", ["timeSlicing", "mps"])
def test_request_for_20_with_10_replicas_rejected_when_fail_requests_greater_than_one(strategy):
    # The kubelet needs 20 available units: 2 GPUs x 10 replicas = 20.
    with node(gpus(count=2), time_slicing(10, fail_gt1=True, strategy=strategy)) as n:
        assert n.kubelet.node_status().allocatable == {"nvidia.com/gpu": 20}
        result = n.kubelet.admit_pod(pod("big", 20))
        assert not result.admitted and result.phase == "Failed"
        assert "maximum request size for shared resources is 1; found 20" in result.message
        assert result.message.startswith("Allocate failed due to rpc error: code = InvalidArgument")
        assert n.kubelet.allocations() == {}  # nothing kept
        assert n.kubelet.admit_pod(pod("one", 1)).admitted  # a request for 1 is fine


@pytest.mark.parametrize("strategy", ["timeSlicing", "mps"])
def test_request_for_20_with_10_replicas_admitted_when_flag_false(strategy):
    with node(gpus(count=2), time_slicing(10, fail_gt1=False, strategy=strategy)) as n:
        result = n.kubelet.admit_pod(pod("big", 20))
        assert result.admitted
        assert len(result.devices["main"]["nvidia.com/gpu"]) == 20
        # 20 replicas of 2 GPUs: each physical GPU listed once.
        assert sorted(result.containers["main"].envs["NVIDIA_VISIBLE_DEVICES"].split(",")) == sorted(
            g.uuid for g in n.inventory.gpus)


def test_two_unit_request_lands_on_two_distinct_gpus():
    with node(gpus(count=2), time_slicing(4)) as n:
        result = n.kubelet.admit_pod(pod("pair", 2))
        ids = result.devices["main"]["nvidia.com/gpu"]
        physical = {i.split("::")[0] for i in ids}
        assert physical == {g.uuid for g in n.inventory.gpus}  # 2 replicas, 2 GPUs
        assert len(result.containers["main"].envs["NVIDIA_VISIBLE_DEVICES"].split(",")) == 2


def test_xid_94_on_one_of_8_gpus_drops_allocatable_to_7_then_recovers_without_restart():
    with node(gpus(count=8)) as n:
        registrations, restarts = n.manager.registrations, n.manager.restarts
        n.health.inject_xid(n.inventory.gpus[5].uuid, 94)
        status = n.kubelet.wait_for_resource("nvidia.com/gpu", 7, capacity=8)
        assert (status.capacity, status.allocatable) == ({"nvidia.com/gpu": 8}, {"nvidia.com/gpu": 7})
        # 7 healthy GPUs: a pod for 8 is refused, one for 7 fits.
        assert not n.kubelet.admit_pod(pod("eight", 8)).admitted
        n.health.recover(n.inventory.gpus[5].uuid)
        n.kubelet.wait_for_resource("nvidia.com/gpu", 8, capacity=8)
        assert (n.manager.registrations, n.manager.restarts) == (registrations, restarts)
        assert n.kubelet.admit_pod(pod("eight", 8)).admitted


def test_one_of_4_gpus_lost_the_other_3_still_admitted():
    with node(gpus(count=4)) as n:
        lost = n.inventory.gpus[2].uuid
        n.manager.set_inventory(n.inventory.without(2))
        # A full snapshot without the lost GPU: capacity 3, allocatable 3.
        n.kubelet.wait_for_resource("nvidia.com/gpu", 3, capacity=3)
        assert lost not in n.kubelet.devices("nvidia.com/gpu")
        result = n.kubelet.admit_pod(pod("three", 3))
        assert result.admitted
        assert sorted(result.devices["main"]["nvidia.com/gpu"]) == sorted(
            g.uuid for i, g in enumerate(n.inventory.gpus) if i != 2)
        refused = n.kubelet.admit_pod(pod("fourth", 1))
        assert refused.message == "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."
        refused = n.kubelet.admit_pod(pod("fourth", 1), bound=True)
        assert "Requested: 1, Available: 0" in refused.message


def test_kubelet_restart_zero_until_plugin_registers_then_full_and_allocations_survive():
    # A slow socket watcher keeps the plugin from noticing, so "0 until" can be observed.
    with node(gpus(count=4), watch_interval=3600) as n:
        kept = n.kubelet.admit_pod(pod("kept", 2)).devices
        n.kubelet.restart()
        status = n.kubelet.node_status()
        assert (status.capacity, status.allocatable) == ({"nvidia.com/gpu": 0}, {"nvidia.com/gpu": 0})
        assert n.kubelet.allocations() == {"kept": kept}
        n.manager.restart("kubelet.sock re-created")  # what the watcher does
        n.kubelet.wait_for_resource("nvidia.com/gpu", 4, capacity=4)
        # 4 healthy - 2 restored = 2 free.
        assert not n.kubelet.admit_pod(pod("three", 3)).admitted
        assert n.kubelet.admit_pod(pod("two", 2)).admitted


def test_kubelet_restart_plugin_reregisters_by_itself():
    with node(gpus(count=4)) as n:
        before = n.manager.registrations
        n.kubelet.restart()
        n.kubelet.wait_for_resource("nvidia.com/gpu", 4, capacity=4, timeout=20)
        assert n.manager.registrations == before + 1
