"""Hidden graded tests of Lab 02: other cases of the same rules (not in the student edition)."""

from __future__ import annotations

import pytest

from lab02_device_plugin.plugin.health import HealthEvent, HealthPolicy, next_health
from lab02_device_plugin.plugin.mig import mixed_resource_name
from lab02_device_plugin.plugin.sharing import (
    HEALTHY,
    UNHEALTHY,
    AdvertisedDevice,
    AdvertisedResource,
    expand_replicas,
    list_and_watch_snapshot,
    physical_device_id,
)


@pytest.mark.points(1, part="2A", number="2A.h1")
def test_snapshot_of_mig_devices_of_another_gpu():
    """list_and_watch_snapshot: a sick GPU does not touch the MIG devices of another GPU; IDs kept in order."""
    res = AdvertisedResource("nvidia.com/mig-2g.20gb", "nvidia.com/mig-2g.20gb", (
        AdvertisedDevice("MIG-b", "MIG-b", "GPU-2", 1, mig_index=0, numa_node=1),
        AdvertisedDevice("MIG-a", "MIG-a", "GPU-1", 0, mig_index=0, numa_node=0),
    ))
    states = list_and_watch_snapshot(res, {"GPU-9"})
    assert isinstance(states, list)
    assert [(s.id, s.health, s.numa_node) for s in states] == [("MIG-b", HEALTHY, 1), ("MIG-a", HEALTHY, 0)]


@pytest.mark.points(1, part="2B", number="2B.h1")
def test_replicas_of_a_mig_device():
    """expand_replicas on a MIG device keeps its MIG index; physical_device_id maps each replica back."""
    mig = AdvertisedDevice("MIG-x", "MIG-x", "GPU-p", 2, mig_index=3)
    reps = expand_replicas(mig, 2)
    assert isinstance(reps, list) and all(type(r) is AdvertisedDevice for r in reps)
    assert [r.id for r in reps] == ["MIG-x::0", "MIG-x::1"]
    assert {r.mig_index for r in reps} == {3}
    assert {physical_device_id(r.id) for r in reps} == {"MIG-x"}


@pytest.mark.points(1, part="2C", number="2C.h1")
def test_more_profile_names():
    """mixed_resource_name: 2g.20gb and 4g.40gb (A100-80GB)."""
    got = [mixed_resource_name(p) for p in ("2g.20gb", "4g.40gb")]
    assert all(isinstance(g, str) for g in got)
    assert got == ["nvidia.com/mig-2g.20gb", "nvidia.com/mig-4g.40gb"]


@pytest.mark.points(1, part="2D", number="2D.h1")
def test_ignored_xid_keeps_unhealthy_and_recovery_of_healthy():
    """next_health: an application Xid leaves an Unhealthy GPU Unhealthy; a recovery of a Healthy GPU keeps it Healthy."""
    got = [next_health(UNHEALTHY, HealthEvent("GPU-a", xid=31), HealthPolicy()),
           next_health(HEALTHY, HealthEvent("GPU-a", recovered=True), HealthPolicy(recovery=True))]
    assert all(isinstance(g, str) for g in got)
    assert got == [UNHEALTHY, HEALTHY]
