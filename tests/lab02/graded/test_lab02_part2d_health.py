"""Graded, Lab 02 part 2D: health transitions.

Learner code: ``lab02_device_plugin.plugin.health.next_health``: the state of one device after a
health event, under NVIDIA's Xid policy (NVIDIA k8s-device-plugin
internal/rm/health.go).
"""

from __future__ import annotations

import pytest

from lab02_device_plugin.plugin.health import DeviceHealth, HealthEvent, HealthPolicy, next_health
from lab02_device_plugin.plugin.inventory import from_yaml_spec
from lab02_device_plugin.plugin.sharing import HEALTHY, UNHEALTHY

UPSTREAM = HealthPolicy()                 # NVIDIA's default: no recovery without a restart
RECOVERING = HealthPolicy(recovery=True)  # the course's option


@pytest.mark.points(2, part="2D", number="2D.1")
def test_critical_xid_makes_a_gpu_unhealthy_application_xid_does_not():
    """next_health: Xid 94 (contained ECC error) -> Unhealthy; Xid 13 (an application's fault) -> unchanged."""
    got = [next_health(HEALTHY, HealthEvent("GPU-a", xid=x), UPSTREAM) for x in (94, 13, None)]  # None: no Xid
    assert all(isinstance(g, str) for g in got)  # the type, then the value
    assert got == [UNHEALTHY, HEALTHY, UNHEALTHY]


@pytest.mark.points(2, part="2D", number="2D.2")
def test_recovery_only_with_the_recovery_option():
    """next_health: a recovery event leaves a GPU Unhealthy upstream, and makes it Healthy with recovery=True."""
    back = HealthEvent("GPU-a", recovered=True)
    got = [next_health(UNHEALTHY, back, UPSTREAM), next_health(UNHEALTHY, back, RECOVERING)]
    assert all(isinstance(g, str) for g in got)
    assert got == [UNHEALTHY, HEALTHY]


@pytest.mark.points(1, part="2D", number="2D.3")
def test_disabled_checks_and_forced_xids():
    """next_health: DP_DISABLE_HEALTHCHECKS=all ignores Xid 79, but an Xid in DP_ENABLE_HEALTHCHECKS still counts."""
    policy = HealthPolicy.from_env({"DP_DISABLE_HEALTHCHECKS": "all", "DP_ENABLE_HEALTHCHECKS": "48"})
    got = [next_health(HEALTHY, HealthEvent("GPU-a", xid=x), policy) for x in (79, 48)]
    assert all(isinstance(g, str) for g in got)
    assert got == [HEALTHY, UNHEALTHY]


@pytest.mark.points(2, part="2D", number="2D.4")
def test_xid_94_on_one_of_8_then_recovery():
    """Xid 94 on one of 8 GPUs: allocatable 8 -> 7 with capacity 8; after recovery (option on) allocatable 8 again."""
    inv = from_yaml_spec({"gpus": [{"model": "H100-80GB", "count": 8,
                                    "uuids": [f"GPU-{i}" for i in range(8)]}]})
    health = DeviceHealth.for_inventory(inv, RECOVERING)
    devices = [g.uuid for g in inv.gpus]

    def allocatable() -> tuple[int, int]:
        # capacity = every device the plugin lists; allocatable = the healthy ones
        return len(devices), sum(health.state(d) == HEALTHY for d in devices)

    assert allocatable() == (8, 8)
    change = health.apply(HealthEvent("GPU-3", xid=94))
    assert change.became_unhealthy == frozenset({"GPU-3"})
    assert allocatable() == (8, 7)
    health.apply(HealthEvent("GPU-3", xid=13))  # an application Xid changes nothing
    assert allocatable() == (8, 7)
    change = health.apply(HealthEvent("GPU-3", recovered=True))
    assert change.became_healthy == frozenset({"GPU-3"})
    assert allocatable() == (8, 8)
