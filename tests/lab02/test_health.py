"""Health: Xid policy, env variables, transitions, recovery option, simulated/NVML sources."""

from __future__ import annotations

import threading
import types

import pytest

from lab02_device_plugin.errors import InputError
from lab02_device_plugin.plugin.health import (
    APPLICATION_XIDS, DeviceHealth, HealthEvent, HealthPolicy, NvmlHealthSource,
    SimulatedHealthSource, next_health,
)
from lab02_device_plugin.plugin.inventory import Gpu, Inventory, MigDevice


def eight_gpus() -> Inventory:
    return Inventory(tuple(Gpu(i, f"GPU-{i}", "H100", 81559) for i in range(8)))


def test_application_xids():
    assert APPLICATION_XIDS == {13, 31, 43, 45, 68, 109}


@pytest.mark.parametrize("event, policy, before, after", [
    (HealthEvent("GPU-0", 94), HealthPolicy(), "Healthy", "Unhealthy"),
    (HealthEvent("GPU-0", 79), HealthPolicy(), "Healthy", "Unhealthy"),
    (HealthEvent("GPU-0", 13), HealthPolicy(), "Healthy", "Healthy"),    # application error
    (HealthEvent("GPU-0", 109), HealthPolicy(), "Healthy", "Healthy"),
    (HealthEvent("GPU-0", None), HealthPolicy(), "Healthy", "Unhealthy"),  # non-Xid failure
    (HealthEvent("GPU-0", recovered=True), HealthPolicy(), "Unhealthy", "Unhealthy"),  # upstream
    (HealthEvent("GPU-0", recovered=True), HealthPolicy(recovery=True), "Unhealthy", "Healthy"),
    (HealthEvent("GPU-0", 94), HealthPolicy(disabled=True), "Healthy", "Healthy"),
])
def test_next_health(event, policy, before, after):
    assert next_health(before, event, policy) == after


def test_env_disable_all_and_enable_override():
    p = HealthPolicy.from_env({"DP_DISABLE_HEALTHCHECKS": "all", "DP_ENABLE_HEALTHCHECKS": "48"})
    assert p.disabled
    assert not p.acts_on(HealthEvent("GPU-0", 94))
    assert p.acts_on(HealthEvent("GPU-0", 48))  # forced even with all disabled


def test_env_extra_ignored_and_forced_application_xid():
    p = HealthPolicy.from_env({"DP_DISABLE_HEALTHCHECKS": "94, 95", "DP_ENABLE_HEALTHCHECKS": "13"})
    assert not p.disabled
    assert p.ignored_xids == {31, 43, 45, 68, 109, 94, 95}
    assert p.acts_on(HealthEvent("GPU-0", 13))
    assert not p.acts_on(HealthEvent("GPU-0", 94))
    assert p.acts_on(HealthEvent("GPU-0", 79))


def test_env_xids_keyword_and_errors():
    assert HealthPolicy.from_env({"DP_DISABLE_HEALTHCHECKS": "xids"}).disabled
    assert HealthPolicy.from_env({}) == HealthPolicy()
    with pytest.raises(InputError, match="DP_DISABLE_HEALTHCHECKS: .* got 'x9'"):
        HealthPolicy.from_env({"DP_DISABLE_HEALTHCHECKS": "x9"})


def test_user_case_c_xid94_on_one_of_8_then_recovery():
    src = SimulatedHealthSource()
    health = DeviceHealth.for_inventory(eight_gpus(), HealthPolicy(recovery=True))
    src.start(health.apply)
    changes = []
    health.add_listener(changes.append)
    src.inject_xid("GPU-5", 94)
    assert 8 - len(health.unhealthy()) == 7
    src.recover("GPU-5")
    assert 8 - len(health.unhealthy()) == 8
    assert [(sorted(c.became_unhealthy), sorted(c.became_healthy)) for c in changes] == \
        [(["GPU-5"], []), ([], ["GPU-5"])]


def test_without_recovery_the_device_stays_unhealthy():
    src = SimulatedHealthSource()
    health = DeviceHealth.for_inventory(eight_gpus())
    src.start(health.apply)
    src.inject_xid("GPU-5", 94)
    src.recover("GPU-5")
    assert health.unhealthy() == {"GPU-5"}


def test_application_xid_changes_nothing_and_calls_no_listener():
    health = DeviceHealth.for_inventory(eight_gpus())
    calls = []
    health.add_listener(calls.append)
    assert not health.apply(HealthEvent("GPU-1", 43))
    assert calls == [] and health.unhealthy() == set()


def test_event_for_all_devices_and_unknown_device():
    health = DeviceHealth.for_inventory(eight_gpus())
    health.apply(HealthEvent("GPU-99", 94))  # not ours: ignored
    assert health.unhealthy() == set()
    health.apply(HealthEvent(None, None, reason="event wait failed"))
    assert len(health.unhealthy()) == 8


def test_gpu_event_reaches_its_mig_devices_but_mig_event_stays_local():
    inv = Inventory((Gpu(0, "GPU-0", "A100", 1, True, (MigDevice(0, "3g.40gb", 1, 0, "MIG-a", 1),
                                                       MigDevice(1, "3g.40gb", 2, 0, "MIG-b", 1))),))
    health = DeviceHealth.for_inventory(inv)
    health.apply(HealthEvent("MIG-b", 94))
    assert health.unhealthy() == {"MIG-b"}
    health.apply(HealthEvent("GPU-0", 94))
    assert health.unhealthy() == {"GPU-0", "MIG-a", "MIG-b"}


def test_concurrent_injections_are_all_counted():
    health = DeviceHealth.for_inventory(eight_gpus())
    threads = [threading.Thread(target=health.apply, args=(HealthEvent(f"GPU-{i}", 94),))
               for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=5)
    assert len(health.unhealthy()) == 8 and health.events_seen == 8


def test_nvml_source_with_fake_module():
    """Two events (Xid 94 on GPU-1, then Xid on a MIG instance), then timeouts."""
    class Timeout(Exception):
        pass

    events = [types.SimpleNamespace(eventType=8, eventData=94, device="h1",
                                    gpuInstanceId=0xFFFFFFFF, computeInstanceId=0xFFFFFFFF),
              types.SimpleNamespace(eventType=8, eventData=48, device="h0",
                                    gpuInstanceId=3, computeInstanceId=0)]
    done = threading.Event()

    def wait(event_set, ms):
        if events:
            return events.pop(0)
        done.set()
        raise Timeout()

    nvml = types.SimpleNamespace(
        NVMLError_Timeout=Timeout, nvmlEventTypeXidCriticalError=8,
        nvmlInit=lambda: None, nvmlShutdown=lambda: None,
        nvmlEventSetCreate=lambda: "set", nvmlEventSetFree=lambda s: None,
        nvmlDeviceGetHandleByUUID=lambda u: {"GPU-0": "h0", "GPU-1": "h1"}[u],
        nvmlDeviceRegisterEvents=lambda h, mask, s: None,
        nvmlEventSetWait=wait,
        nvmlDeviceGetUUID=lambda h: {"h0": b"GPU-0", "h1": b"GPU-1"}[h],
    )
    got = []
    src = NvmlHealthSource(["GPU-0", "GPU-1"], nvml=nvml, mig_ids={("GPU-0", 3, 0): "MIG-x"},
                           poll_ms=10)
    src.start(got.append)
    assert done.wait(5)
    src.stop()
    assert [(e.device_id, e.xid) for e in got] == [("GPU-1", 94), ("MIG-x", 48)]
