"""Graded, Lab 02 part 2A: what ListAndWatch tells the kubelet.

Learner code: ``lab02_device_plugin.plugin.sharing.list_and_watch_snapshot``: the full device
list with health, every time (a snapshot, never a delta: the kubelet's devicemanager
``genericDeviceUpdateCallback``).
"""

from __future__ import annotations

import pytest

from lab02_device_plugin.plugin.config import Config
from lab02_device_plugin.plugin.inventory import from_yaml_spec
from lab02_device_plugin.plugin.sharing import (
    HEALTHY,
    UNHEALTHY,
    AdvertisedDevice,
    AdvertisedResource,
    DeviceState,
    advertise,
    list_and_watch_snapshot,
)

TWO_GPUS = AdvertisedResource("nvidia.com/gpu", "nvidia.com/gpu", (
    AdvertisedDevice("GPU-a", "GPU-a", "GPU-a", 0, numa_node=0),
    AdvertisedDevice("GPU-b", "GPU-b", "GPU-b", 1, numa_node=1),
))


@pytest.mark.points(2, part="2A", number="2A.1")
def test_snapshot_lists_every_device_with_its_health():
    """list_and_watch_snapshot: all devices, in order, Healthy unless their GPU is unhealthy."""
    states = list_and_watch_snapshot(TWO_GPUS, set())
    assert isinstance(states, list) and all(type(s) is DeviceState for s in states)  # the type, then the value
    assert states == [DeviceState("GPU-a", HEALTHY, 0), DeviceState("GPU-b", HEALTHY, 1)]
    # an unhealthy GPU stays in the list (capacity 2), marked Unhealthy (allocatable 1)
    assert list_and_watch_snapshot(TWO_GPUS, {"GPU-b"}) == [
        DeviceState("GPU-a", HEALTHY, 0), DeviceState("GPU-b", UNHEALTHY, 1)]


@pytest.mark.points(2, part="2A", number="2A.2")
def test_replicas_and_mig_devices_share_their_gpus_health():
    """list_and_watch_snapshot: replicas of a sick GPU, and MIG devices of a sick parent GPU, are all Unhealthy."""
    replicas = AdvertisedResource("nvidia.com/gpu", "nvidia.com/gpu", tuple(
        AdvertisedDevice(f"GPU-{g}::{n}", f"GPU-{g}", f"GPU-{g}", i, replica=n)
        for i, g in enumerate("ab") for n in range(2)), sharing="time-slicing", replicas=2)
    states = list_and_watch_snapshot(replicas, {"GPU-a"})
    assert isinstance(states, list) and all(type(s) is DeviceState for s in states)
    assert [(s.id, s.health) for s in states] == [
        ("GPU-a::0", UNHEALTHY), ("GPU-a::1", UNHEALTHY), ("GPU-b::0", HEALTHY), ("GPU-b::1", HEALTHY)]
    mig = AdvertisedResource("nvidia.com/mig-1g.10gb", "nvidia.com/mig-1g.10gb", (
        AdvertisedDevice("MIG-1", "MIG-1", "GPU-p", 0, mig_index=0),
        AdvertisedDevice("MIG-2", "MIG-2", "GPU-p", 0, mig_index=1),
        AdvertisedDevice("MIG-3", "MIG-3", "GPU-q", 1, mig_index=0),
    ))
    assert [s.health for s in list_and_watch_snapshot(mig, {"GPU-p"})] == [UNHEALTHY, UNHEALTHY, HEALTHY]
    assert [s.health for s in list_and_watch_snapshot(mig, {"MIG-3"})] == [HEALTHY, HEALTHY, UNHEALTHY]


@pytest.mark.points(2, part="2A", number="2A.3")
def test_eight_gpu_node_one_xid_capacity_8_allocatable_7():
    """An 8-GPU node with one GPU failing: the snapshot still lists 8 devices (capacity) of which 7 are Healthy (allocatable)."""
    inv = from_yaml_spec({"gpus": [{"model": "H100-80GB", "count": 8,
                                    "uuids": [f"GPU-{i}" for i in range(8)]}]})
    resource = advertise(inv, Config()).resource("nvidia.com/gpu")
    states = list_and_watch_snapshot(resource, {"GPU-5"})
    assert isinstance(states, list) and all(type(s) is DeviceState for s in states)
    assert len(states) == 8
    assert sum(s.health == HEALTHY for s in states) == 7
    assert [s.id for s in states if s.health == UNHEALTHY] == ["GPU-5"]
