"""Property test: whatever the sequence of admissions, deletions and health changes, the mock
kubelet admits exactly what a simple model says fits and never gives a device out twice."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _fake_device_plugin import FakeDevicePlugin
from lab02_device_plugin.kubelet.lifecycle import MockKubelet
from lab02_device_plugin.kubelet.pod import Container, Pod

pytestmark = pytest.mark.timeout(300)
RES = "example.com/gpu"
DEVICES = [f"D-{i}" for i in range(6)]

operations = st.lists(st.one_of(
    st.tuples(st.just("admit"), st.integers(min_value=0, max_value=4)),
    st.tuples(st.just("delete"), st.integers(min_value=0, max_value=9)),
    st.tuples(st.just("health"), st.sampled_from(DEVICES), st.booleans()),
), min_size=1, max_size=25)


@pytest.fixture(scope="module")
def rig():
    path = Path(tempfile.mkdtemp(prefix="kp-"))
    with MockKubelet(path) as kubelet:
        # Started after the kubelet, which removes every socket in the directory at start.
        plugin = FakeDevicePlugin(path, RES, {d: "Healthy" for d in DEVICES}).start()
        plugin.register()
        kubelet.wait_for_resource(RES, len(DEVICES))
        yield kubelet, plugin
    plugin.stop()
    shutil.rmtree(path, ignore_errors=True)


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=operations)
def test_admission_matches_model_and_never_double_allocates(rig, ops):
    kubelet, plugin = rig
    # Reset: every pod deleted, every device healthy.
    for name in list(kubelet.allocations()):
        kubelet.delete_pod(name)
    plugin.set_devices({d: "Healthy" for d in DEVICES})
    kubelet.wait_for_resource(RES, len(DEVICES), capacity=len(DEVICES))
    healthy = set(DEVICES)
    held: dict[str, set[str]] = {}
    for number, op in enumerate(ops):
        if op[0] == "admit":
            name = f"p{number}"
            free = healthy - set().union(*held.values())
            result = kubelet.admit_pod(Pod(name, [Container("c", {RES: op[1]})]))
            # The model: a pod fits when it asks for no more than healthy minus allocated.
            assert result.admitted == (op[1] <= len(free)), (op, free, result.message)
            if result.admitted:
                got = set(result.devices.get("c", {}).get(RES, []))
                assert len(got) == op[1] and got <= free
                held[name] = got
        elif op[0] == "delete":
            if held:
                name = sorted(held)[op[1] % len(held)]
                assert set(kubelet.delete_pod(name)) == held.pop(name)
        else:
            _, device, ok = op
            healthy = healthy | {device} if ok else healthy - {device}
            plugin.set_health(device, "Healthy" if ok else "Unhealthy")
            kubelet.wait_for_resource(RES, len(healthy), capacity=len(DEVICES))
        # Never the same device in two containers.
        allocated = [d for pods in kubelet.allocations().values() for c in pods.values()
                     for d in c.get(RES, [])]
        assert len(allocated) == len(set(allocated))
        assert sorted(allocated) == sorted(d for s in held.values() for d in s)
