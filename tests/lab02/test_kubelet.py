"""The mock kubelet behaves as the kubelet's device manager (facts sec. 3), tested against a
fake plugin written in the tests (tests/lab02/_fake_device_plugin.py)."""

from __future__ import annotations

import json
import shutil
import socket
import tempfile
import threading
from pathlib import Path

import grpc
import pytest

from _fake_device_plugin import FakeDevicePlugin
from lab02_device_plugin.api import deviceplugin_pb2 as pb
from lab02_device_plugin.errors import InputError
from lab02_device_plugin.kubelet.checkpoint import CHECKPOINT_NAME
from lab02_device_plugin.kubelet.lifecycle import MockKubelet
from lab02_device_plugin.kubelet.pod import (
    Container, Pod, is_extended_resource_name, parse_admit, parse_quantity, pods_from_manifests,
)
from lab02_device_plugin.kubelet.registration import register_error

pytestmark = pytest.mark.timeout(60)

RES = "example.com/gpu"
FOUR = {f"GPU-{i}": "Healthy" for i in range(4)}


@pytest.fixture
def plugin_dir():
    # Short path: a unix socket address holds at most 107 bytes.
    path = Path(tempfile.mkdtemp(prefix="kl-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def kubelet(plugin_dir):
    with MockKubelet(plugin_dir, dial_timeout=2) as k:
        yield k


@pytest.fixture
def plugins():
    started: list[FakeDevicePlugin] = []
    yield started
    for p in started:
        p.stop()


def start_plugin(plugins, plugin_dir, devices=FOUR, resource=RES, **kw) -> FakeDevicePlugin:
    plugin = FakeDevicePlugin(plugin_dir, resource, devices, **kw).start()
    plugins.append(plugin)
    return plugin


def pod(name: str, n: int = 1, resource: str = RES, **kw) -> Pod:
    return Pod(name, [Container("main", limits={resource: n})], **kw)


# ---- pure validation -------------------------------------------------------------------

@pytest.mark.parametrize("name, ok", [
    ("nvidia.com/gpu", True),
    ("nvidia.com/mig-1g.10gb", True),
    ("nvidia.com/gpu.shared", True),
    ("example.com/foo_bar", True),
    ("gpu", False),                       # no domain prefix
    ("kubernetes.io/gpu", False),         # reserved namespace
    ("foo.kubernetes.io/gpu", False),     # subdomain of the reserved namespace
    ("requests.example.com/gpu", False),  # quota prefix
    ("nvidia.com/", False),               # empty name part
    ("nvidia.com/-gpu", False),           # name part must start alphanumeric
    ("Nvidia.com/gpu", False),            # prefix must be a lower-case DNS subdomain
    ("nvidia.com/" + "a" * 63, True),     # 63 characters is the maximum...
    ("nvidia.com/" + "a" * 64, False),    # ...64 is one too many
    ("a/b/c", False),
])
def test_extended_resource_name_rules(name, ok):
    assert is_extended_resource_name(name) is ok


def test_register_error_texts_in_kubelet_order():
    bad_version = pb.RegisterRequest(version="v1alpha", endpoint="x.sock", resource_name="gpu")
    # Version is checked first even though the resource name is also bad.
    assert register_error(bad_version) == (
        'requested API version "v1alpha" is not supported by kubelet. '
        'Supported version is "[v1beta1]"')
    bad_name = pb.RegisterRequest(version="v1beta1", endpoint="x.sock", resource_name="gpu")
    assert register_error(bad_name) == 'the ResourceName "gpu" is invalid'
    bad_endpoint = pb.RegisterRequest(version="v1beta1", endpoint="/tmp/x.sock",
                                      resource_name="nvidia.com/gpu")
    assert "invalid endpoint \"/tmp/x.sock\"" in register_error(bad_endpoint)
    good = pb.RegisterRequest(version="v1beta1", endpoint="x.sock", resource_name="nvidia.com/gpu")
    assert register_error(good) is None


# ---- start, sockets, registration ------------------------------------------------------

def test_start_removes_every_socket_but_keeps_checkpoint_and_files(plugin_dir):
    stale = plugin_dir / "old-plugin.sock"
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(stale))
    s.close()
    (plugin_dir / CHECKPOINT_NAME).write_text("{}")
    (plugin_dir / "notes.txt").write_text("not a socket")
    with MockKubelet(plugin_dir) as k:
        assert not stale.exists()
        assert (plugin_dir / "notes.txt").exists()
        assert (plugin_dir / "kubelet.sock").is_socket()
        assert "removed 1 socket (old-plugin.sock)" in k.narration[0]
        # The "{}" checkpoint has no Data: it is reported as corrupt and ignored.
        assert any("corrupt" in line for line in k.narration)
    assert not (plugin_dir / "kubelet.sock").exists()


def test_register_dials_plugin_calls_options_and_consumes_list_and_watch(kubelet, plugin_dir, plugins):
    plugin = start_plugin(plugins, plugin_dir)
    plugin.register()
    assert plugin.calls.options == 1  # GetDevicePluginOptions during Register
    status = kubelet.wait_for_resource(RES, 4, timeout=10)
    assert status.capacity == {RES: 4} and status.allocatable == {RES: 4}
    assert f"Register {RES} from fake-gpu.sock: OK (preferred allocation: yes, pre-start: no)" in kubelet.narration
    assert f"ListAndWatch {RES}: 4 devices, 4 healthy" in kubelet.narration


@pytest.mark.parametrize("kwargs, text", [
    (dict(version="v1alpha1"), 'requested API version "v1alpha1" is not supported by kubelet. '
                               'Supported version is "[v1beta1]"'),
    (dict(resource="gpu"), 'the ResourceName "gpu" is invalid'),
    (dict(resource="kubernetes.io/gpu"), 'the ResourceName "kubernetes.io/gpu" is invalid'),
    (dict(endpoint="../elsewhere.sock"), 'invalid endpoint "../elsewhere.sock"'),
])
def test_register_rejections_carry_kubelet_text(kubelet, plugin_dir, plugins, kwargs, text):
    plugin = start_plugin(plugins, plugin_dir)
    with pytest.raises(grpc.RpcError) as info:
        plugin.register(**kwargs)
    assert info.value.code() == grpc.StatusCode.UNKNOWN  # a plain Go error on the wire
    assert text in info.value.details()
    assert plugin.calls.options == 0  # rejected before dialling
    assert kubelet.node_status().capacity == {}


def test_register_fails_when_plugin_is_not_serving(kubelet, plugin_dir):
    plugin = FakeDevicePlugin(plugin_dir, RES, FOUR)  # never started
    with pytest.raises(grpc.RpcError) as info:
        plugin.register()
    assert "failed to dial device plugin" in info.value.details()


def test_register_fails_when_get_device_plugin_options_fails(kubelet, plugin_dir, plugins):
    plugin = start_plugin(plugins, plugin_dir)
    plugin.options_error = "boom"
    with pytest.raises(grpc.RpcError) as info:
        plugin.register()
    assert info.value.details() == "failed to get device plugin options: INTERNAL: boom"
    assert kubelet.node_status().capacity == {}


def test_health_snapshot_semantics(kubelet, plugin_dir, plugins):
    plugin = start_plugin(plugins, plugin_dir)
    plugin.register()
    kubelet.wait_for_resource(RES, 4)
    plugin.set_health("GPU-2", "Unhealthy")
    # capacity = healthy + unhealthy = 3 + 1 = 4; allocatable = healthy = 3
    assert kubelet.wait_for_resource(RES, 3, capacity=4).capacity == {RES: 4}
    plugin.set_health("GPU-1", "")  # anything but "Healthy" is unhealthy: 2 healthy
    kubelet.wait_for_resource(RES, 2, capacity=4)
    plugin.set_health("GPU-1", "Healthy")
    plugin.set_health("GPU-2", "Healthy")
    kubelet.wait_for_resource(RES, 4, capacity=4)
    # A full snapshot: a device missing from it disappears (3 left, all healthy).
    plugin.set_devices({f"GPU-{i}": "Healthy" for i in range(3)})
    kubelet.wait_for_resource(RES, 3, capacity=3)


def test_stream_end_marks_all_unhealthy_then_grace_period_drops(plugin_dir, plugins):
    now = [1000.0]
    with MockKubelet(plugin_dir, clock=lambda: now[0]) as kubelet:
        plugin = start_plugin(plugins, plugin_dir)
        plugin.register()
        kubelet.wait_for_resource(RES, 4)
        plugin.stop()
        kubelet.wait_for(lambda: not kubelet.is_registered(RES), 10, "stream end")
        assert kubelet.node_status().capacity == {RES: 4}
        assert kubelet.node_status().allocatable == {RES: 0}
        assert set(kubelet.devices(RES).values()) == {"Unhealthy"}
        now[0] += 300  # exactly the 5 min grace period: still reported
        assert kubelet.node_status().capacity == {RES: 4}
        now[0] += 1  # past it: dropped
        assert kubelet.node_status().capacity == {}


def test_newest_registration_wins(kubelet, plugin_dir, plugins):
    first = start_plugin(plugins, plugin_dir, endpoint="a.sock")
    first.register()
    kubelet.wait_for_resource(RES, 4)
    second = start_plugin(plugins, plugin_dir, {"X-0": "Healthy", "X-1": "Healthy"}, endpoint="b.sock")
    second.register()
    kubelet.wait_for_resource(RES, 2, capacity=2)
    # The first plugin's stream ending must not mark the second one's devices unhealthy.
    first.stop()
    first.set_health("GPU-0", "Unhealthy")
    assert kubelet.wait_for_resource(RES, 2, capacity=2).allocatable == {RES: 2}
    result = kubelet.admit_pod(pod("p"))
    assert result.devices["main"][RES][0].startswith("X-")
    assert first.calls.allocate == []


# ---- admission -------------------------------------------------------------------------

def test_admission_calls_preferred_then_one_allocate_and_records_envs(kubelet, plugin_dir, plugins):
    plugin = start_plugin(plugins, plugin_dir)
    plugin.register()
    kubelet.wait_for_resource(RES, 4)
    result = kubelet.admit_pod(pod("pod-1", 2))
    assert result.admitted and result.phase == "Running"
    (request,) = plugin.calls.preferred
    assert sorted(request.available_deviceIDs) == sorted(FOUR)
    assert list(request.must_include_deviceIDs) == [] and request.allocation_size == 2
    # The fake prefers the last IDs of the available list: GPU-3, GPU-2.
    assert plugin.calls.allocate == [["GPU-3", "GPU-2"]]
    assert result.devices == {"main": {RES: ["GPU-3", "GPU-2"]}}
    assert result.containers["main"].envs == {"FAKE_VISIBLE_DEVICES": "GPU-3,GPU-2"}
    assert any(line.startswith(f"Allocate pod-1/main {RES}: GPU-3, GPU-2 -> FAKE_VISIBLE")
               for line in kubelet.narration)


def test_no_preferred_call_when_not_advertised(kubelet, plugin_dir, plugins):
    plugin = start_plugin(plugins, plugin_dir, preferred_available=False)
    plugin.register()
    kubelet.wait_for_resource(RES, 4)
    kubelet.admit_pod(pod("p", 1))
    assert plugin.calls.preferred == []
    assert plugin.calls.allocate == [["GPU-0"]]  # the kubelet's own pick, lowest ID first


@pytest.mark.parametrize("answer, expected", [
    (["GPU-9", "GPU-1"], ["GPU-1", "GPU-0"]),  # unknown ID dropped, rest filled by the kubelet
    ([], ["GPU-0", "GPU-1"]),                  # empty answer: silent fallback
    (["GPU-2", "GPU-3", "GPU-1"], ["GPU-2", "GPU-3"]),  # too many: first two kept
])
def test_bad_preferred_answer_falls_back_silently(kubelet, plugin_dir, plugins, answer, expected):
    plugin = start_plugin(plugins, plugin_dir)
    plugin.preferred = lambda req: answer
    plugin.register()
    kubelet.wait_for_resource(RES, 4)
    result = kubelet.admit_pod(pod("p", 2))
    assert result.admitted
    assert plugin.calls.allocate == [expected]


def test_never_overcommitted_and_exact_unavailable_message(kubelet, plugin_dir, plugins):
    plugin = start_plugin(plugins, plugin_dir)
    plugin.register()
    kubelet.wait_for_resource(RES, 4)
    assert kubelet.admit_pod(pod("a", 3)).admitted
    # 4 healthy - 3 allocated = 1 available < 2 requested: the scheduler does not bind it.
    result = kubelet.admit_pod(pod("b", 2))
    assert (result.admitted, result.phase, result.reason) == (False, "Pending", "FailedScheduling")
    assert result.message == f"0/1 nodes are available: 1 Insufficient {RES}."
    # Bound to the node anyway: the kubelet's device manager rejects it at admission.
    result = kubelet.admit_pod(pod("b", 2), bound=True)
    assert not result.admitted and result.phase == "Failed"
    assert result.reason == "UnexpectedAdmissionError"
    assert result.message == (f"Allocate failed due to requested number of devices unavailable "
                              f"for {RES}. Requested: 2, Available: 1, which is unexpected")
    assert len(plugin.calls.allocate) == 1  # no Allocate for either rejected attempt
    assert kubelet.delete_pod("a") == ["GPU-1", "GPU-2", "GPU-3"]
    # A Failed pod is never admitted again, even with room now; a new pod is.
    again = kubelet.admit_pod(pod("b", 2))
    assert (again.admitted, again.phase, again.reason) == (False, "Failed", "UnexpectedAdmissionError")
    assert kubelet.admit_pod(pod("b2", 2)).admitted


def test_unhealthy_devices_are_not_allocated(kubelet, plugin_dir, plugins):
    plugin = start_plugin(plugins, plugin_dir, preferred_available=False)
    plugin.register()
    kubelet.wait_for_resource(RES, 4)
    plugin.set_health("GPU-0", "Unhealthy")
    kubelet.wait_for_resource(RES, 3)
    result = kubelet.admit_pod(pod("p", 3))
    assert result.devices["main"][RES] == ["GPU-1", "GPU-2", "GPU-3"]
    assert not kubelet.admit_pod(pod("q", 1)).admitted  # 3 healthy, 3 allocated


def test_multi_container_pod_one_allocate_per_container_and_all_or_nothing(kubelet, plugin_dir, plugins):
    plugin = start_plugin(plugins, plugin_dir)
    plugin.register()
    kubelet.wait_for_resource(RES, 4)
    two = Pod("two", [Container("a", {RES: 1}), Container("b", {RES: 2})])
    result = kubelet.admit_pod(two)
    assert len(plugin.calls.allocate) == 2  # one RPC per (container, resource)
    assert [len(ids) for ids in plugin.calls.allocate] == [1, 2]
    assert not set(result.devices["a"][RES]) & set(result.devices["b"][RES])
    # 4 - 3 = 1 left: a pod whose second container needs 2 is refused and keeps nothing.
    greedy = Pod("greedy", [Container("a", {RES: 1}), Container("b", {RES: 2})])
    assert not kubelet.admit_pod(greedy).admitted
    assert "greedy" not in kubelet.allocations()
    assert kubelet.admit_pod(pod("single", 1)).admitted


def test_allocate_error_fails_pod_and_frees_devices(kubelet, plugin_dir, plugins):
    plugin = start_plugin(plugins, plugin_dir)
    plugin.register()
    kubelet.wait_for_resource(RES, 4)
    plugin.allocate_error = "invalid request: maximum request size for shared resources is 1; found 2"
    result = kubelet.admit_pod(pod("p", 2))
    assert not result.admitted and result.phase == "Failed"
    assert result.message == ("Allocate failed due to rpc error: code = InvalidArgument desc = "
                              "invalid request: maximum request size for shared resources is 1; "
                              "found 2, which is unexpected")
    assert kubelet.allocations() == {}


def test_pre_start_container_called_when_required(kubelet, plugin_dir, plugins):
    plugin = start_plugin(plugins, plugin_dir, pre_start_required=True)
    plugin.register()
    kubelet.wait_for_resource(RES, 4)
    result = kubelet.admit_pod(pod("p", 1))
    assert plugin.calls.pre_start == [result.devices["main"][RES]]


def test_bad_pods_are_input_errors(kubelet):
    with pytest.raises(InputError, match=r"limits\[example.com/gpu\].*whole number.*'0.5'"):
        kubelet.admit_pod(pod("p", "0.5"))
    with pytest.raises(InputError, match="must be equal to example.com/gpu limit of 2"):
        kubelet.admit_pod(Pod("p", [Container("c", {RES: 2}, requests={RES: 1})]))
    with pytest.raises(InputError, match="duplicate container name"):
        kubelet.admit_pod(Pod("p", [Container("c", {RES: 1}), Container("c", {RES: 1})]))


def test_unregistered_resource_is_out_of(kubelet):
    # From the scheduler: allocatable other.com/fpga is 0, so it is never bound.
    result = kubelet.admit_pod(pod("p", 1, resource="other.com/fpga"))
    assert (result.phase, result.message) == (
        "Pending", "0/1 nodes are available: 1 Insufficient other.com/fpga.")
    # Bound by hand: the kubelet's predicate check fails it.
    result = kubelet.admit_pod(pod("p", 1, resource="other.com/fpga"), bound=True)
    assert (result.admitted, result.phase, result.reason) == (False, "Failed", "OutOfother.com/fpga")
    assert result.message == ("Node didn't have enough resource: other.com/fpga, requested: 1, "
                              "used: 0, capacity: 0")


def test_init_container_devices_are_reused(kubelet, plugin_dir, plugins):
    plugin = start_plugin(plugins, plugin_dir, preferred_available=False)
    plugin.register()
    kubelet.wait_for_resource(RES, 4)
    p = Pod("p", [Container("app", {RES: 2})], init_containers=[Container("init", {RES: 1})])
    result = kubelet.admit_pod(p)
    # init takes GPU-0; the app container reuses GPU-0 and takes GPU-1: 2 devices used, not 3.
    assert result.devices == {"init": {RES: ["GPU-0"]}, "app": {RES: ["GPU-0", "GPU-1"]}}
    assert kubelet.admit_pod(pod("q", 2)).devices["main"][RES] == ["GPU-2", "GPU-3"]


def test_merge_rules_for_runtime(kubelet, plugin_dir, plugins):
    a = start_plugin(plugins, plugin_dir, {"A-0": "Healthy"}, resource="a.com/x", endpoint="a.sock")
    b = start_plugin(plugins, plugin_dir, {"B-0": "Healthy"}, resource="b.com/y", endpoint="b.sock")
    a.envs = lambda ids: {"SHARED": "from-a", "ONLY_A": "1"}
    b.envs = lambda ids: {"SHARED": "from-b"}
    a.extra = lambda ids: dict(
        devices=[pb.DeviceSpec(container_path="/dev/x", host_path="/dev/x0", permissions="rw")],
        mounts=[pb.Mount(container_path="/m", host_path="/host/a", read_only=True)],
        annotations={"k": "a"}, cdi_devices=[pb.CDIDevice(name="v.com/x=0")])
    b.extra = lambda ids: dict(
        devices=[pb.DeviceSpec(container_path="/dev/x", host_path="/dev/y0", permissions="r")],
        mounts=[pb.Mount(container_path="/m", host_path="/host/b")],
        annotations={"k": "b"}, cdi_devices=[pb.CDIDevice(name="v.com/x=0"), pb.CDIDevice(name="v.com/y=0")])
    a.register()
    b.register()
    kubelet.wait_for_resource("a.com/x", 1)
    kubelet.wait_for_resource("b.com/y", 1)
    result = kubelet.admit_pod(Pod("p", [Container("c", {"a.com/x": 1, "b.com/y": 1})]))
    opts = result.containers["c"]
    assert opts.envs == {"SHARED": "from-a", "ONLY_A": "1"}  # first value wins
    assert [(d.container_path, d.host_path) for d in opts.devices] == [("/dev/x", "/dev/x0")]
    assert [(m.container_path, m.host_path) for m in opts.mounts] == [("/m", "/host/a")]
    assert opts.annotations == {"k": "a"}
    assert opts.cdi_devices == ["v.com/x=0", "v.com/y=0"]


def test_concurrent_admissions_never_overcommit(kubelet, plugin_dir, plugins):
    plugin = start_plugin(plugins, plugin_dir)
    plugin.register()
    kubelet.wait_for_resource(RES, 4)
    results = []
    threads = [threading.Thread(target=lambda i=i: results.append(kubelet.admit_pod(pod(f"p{i}"))))
               for i in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    admitted = [r for r in results if r.admitted]
    # 10 pods of 1 device on 4 devices: exactly 4 admitted, on 4 distinct devices.
    assert len(results) == 10 and len(admitted) == 4
    assert sorted(r.devices["main"][RES][0] for r in admitted) == sorted(FOUR)


# ---- checkpoint and restart ------------------------------------------------------------

def test_checkpoint_shape(kubelet, plugin_dir, plugins):
    plugin = start_plugin(plugins, plugin_dir, numa={"GPU-0": 0, "GPU-1": 1})
    plugin.register()
    kubelet.wait_for_resource(RES, 4)
    p = pod("p", 2)
    kubelet.admit_pod(p)
    doc = json.loads((plugin_dir / CHECKPOINT_NAME).read_text())
    assert set(doc) >= {"Data", "Checksum"}
    (entry,) = doc["Data"]["PodDeviceEntries"]
    assert entry["PodUID"] == p.uid and entry["ContainerName"] == "main"
    assert entry["ResourceName"] == RES
    # The fake prefers GPU-3, GPU-2: no topology, so both under NUMA node -1.
    assert entry["DeviceIDs"] == {"-1": ["GPU-3", "GPU-2"]}
    import base64
    resp = pb.ContainerAllocateResponse.FromString(base64.b64decode(entry["AllocResp"]))
    assert dict(resp.envs) == {"FAKE_VISIBLE_DEVICES": "GPU-3,GPU-2"}
    assert doc["Data"]["RegisteredDevices"] == {RES: sorted(FOUR)}


def test_restart_zero_until_reregistered_and_allocations_survive(kubelet, plugin_dir, plugins):
    plugin = start_plugin(plugins, plugin_dir)
    plugin.register()
    kubelet.wait_for_resource(RES, 4)
    kubelet.admit_pod(pod("keep", 2))
    before = kubelet.allocations()
    kubelet.restart()
    assert not plugin.socket_path.exists()  # the kubelet removed the plugin's socket
    status = kubelet.node_status()
    assert status.capacity == {RES: 0} and status.allocatable == {RES: 0}
    assert kubelet.allocations() == before
    refused = kubelet.admit_pod(pod("early", 1), bound=True)
    assert refused.message == (f"Allocate failed due to no healthy devices present; cannot "
                               f"allocate unhealthy devices {RES}, which is unexpected")
    # The plugin serves again and re-registers (a real plugin does this on its own).
    plugin.stop()
    plugin.start()
    plugin.register()
    kubelet.wait_for_resource(RES, 4)
    # Restored allocations still count: 4 - 2 = 2 free, and the pod re-admits without an RPC.
    calls = len(plugin.calls.allocate)
    assert kubelet.admit_pod(pod("keep", 2)).devices == before["keep"]
    assert len(plugin.calls.allocate) == calls
    assert kubelet.run_options("keep", "main").envs == {"FAKE_VISIBLE_DEVICES": ",".join(before["keep"]["main"][RES])}
    assert not kubelet.admit_pod(pod("big", 3)).admitted
    assert kubelet.admit_pod(pod("fits", 2)).admitted


def test_corrupt_checkpoint_is_ignored(plugin_dir):
    (plugin_dir / CHECKPOINT_NAME).write_text(json.dumps({"Data": {"PodDeviceEntries": []}, "Checksum": 1}))
    with MockKubelet(plugin_dir) as kubelet:
        assert kubelet.allocations() == {}
        assert any("checksum mismatch" in line for line in kubelet.narration)


# ---- helpers for the command line ------------------------------------------------------

def test_parse_admit():
    p = parse_admit("pod-1=nvidia.com/gpu:2")
    assert (p.name, p.containers[0].limits) == ("pod-1", {"nvidia.com/gpu": 2})
    with pytest.raises(InputError, match="expected NAME=RESOURCE:N"):
        parse_admit("pod-1")
    with pytest.raises(InputError, match="whole number"):
        parse_admit("pod-1=nvidia.com/gpu:x")


def test_pods_from_manifests():
    docs = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "cuda"},
             "spec": {"containers": [{"name": "c", "image": "x",
                                      "resources": {"limits": {"nvidia.com/gpu": 1}}}]}},
            {"kind": "List", "items": [{"kind": "Pod", "metadata": {"name": "two"},
                                        "spec": {"containers": [{"name": "d"}]}}]}]
    pods = pods_from_manifests(docs, "pods.yaml")
    assert [p.name for p in pods] == ["cuda", "two"]
    assert pods[0].containers[0].limits == {"nvidia.com/gpu": 1}
    with pytest.raises(InputError, match="pods.yaml: document 1: kind: expected Pod, got 'Deployment'"):
        pods_from_manifests([{"kind": "Deployment"}], "pods.yaml")


# ---- failure paths ---------------------------------------------------------------------

def test_preferred_allocation_rpc_error_fails_admission(kubelet, plugin_dir, plugins):
    plugin = start_plugin(plugins, plugin_dir)

    def broken(request):
        raise RuntimeError("policy crashed")

    plugin.preferred = broken
    plugin.register()
    kubelet.wait_for_resource(RES, 4)
    result = kubelet.admit_pod(pod("p", 1))
    assert not result.admitted and result.phase == "Failed"
    # grpc turns an exception in a handler into status UNKNOWN.
    assert result.message.startswith("Allocate failed due to device plugin GetPreferredAllocation "
                                     "rpc failed with err: rpc error: code = Unknown desc = ")
    assert plugin.calls.allocate == []  # no Allocate after a failed preferred call


def test_pre_start_failure_fails_the_pod_and_frees_devices(kubelet, plugin_dir, plugins):
    plugin = start_plugin(plugins, plugin_dir, pre_start_required=True)
    plugin.pre_start_error = "driver not ready"
    plugin.register()
    kubelet.wait_for_resource(RES, 4)
    result = kubelet.admit_pod(pod("p", 4))
    assert (result.admitted, result.phase, result.reason) == (False, "Failed", "CreateContainerError")
    assert result.message == f"PreStartContainer for {RES} failed: FAILED_PRECONDITION: driver not ready"
    assert kubelet.allocations() == {}
    plugin.pre_start_error = None
    assert kubelet.admit_pod(pod("q", 4)).admitted  # all 4 were freed


def test_readmission_with_a_different_count_is_refused(kubelet, plugin_dir, plugins):
    plugin = start_plugin(plugins, plugin_dir)
    plugin.register()
    kubelet.wait_for_resource(RES, 4)
    first = pod("p", 1)
    assert kubelet.admit_pod(first).admitted
    changed = Pod("p", [Container("main", {RES: 2})])
    result = kubelet.admit_pod(changed)
    assert not result.admitted
    assert "changed request for resource example.com/gpu from 1 to 2" in result.message
    assert len(plugin.calls.allocate) == 1


def test_wait_for_resource_times_out_with_status(kubelet):
    with pytest.raises(TimeoutError, match=r"example.com/gpu allocatable=1.*node status"):
        kubelet.wait_for_resource(RES, 1, timeout=0.2)


def test_socket_path_too_long_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="longer than 107 bytes"):
        MockKubelet(tmp_path / ("d" * 120))


def test_delete_unknown_pod_is_an_input_error(kubelet):
    with pytest.raises(InputError, match="pod default/ghost: no such pod"):
        kubelet.delete_pod("ghost")


def test_resource_dropped_after_grace_period_is_out_of(plugin_dir, plugins):
    now = [0.0]
    with MockKubelet(plugin_dir, clock=lambda: now[0]) as kubelet:
        plugin = start_plugin(plugins, plugin_dir)
        plugin.register()
        kubelet.wait_for_resource(RES, 4)
        plugin.stop()
        kubelet.wait_for(lambda: not kubelet.is_registered(RES), 10, "stream end")
        # Within the grace period the device manager still knows the resource...
        assert "no healthy devices present" in kubelet.admit_pod(pod("a"), bound=True).message
        now[0] += 301
        # ...after it, the resource is gone and the node's predicate check refuses the pod.
        assert kubelet.admit_pod(pod("b"), bound=True).reason == f"OutOf{RES}"


@pytest.mark.parametrize("value, count", [
    (2, 2), ("2", 2), (" 3 ", 3), ("1k", 1000), ("1e3", 1000), ("1E9", 1_000_000_000),
    ("1.5k", 1500), ("2Ki", 2048), ("1Mi", 1_048_576), (4.0, 4), ("0", 0),
])
def test_whole_kubernetes_quantities_are_device_counts(value, count):
    # resource.Quantity syntax: 1k = 1000, 2Ki = 2 x 1024, 1.5k = 1500; before, "1k" and "1e9"
    # were refused as fractional.
    assert parse_quantity(value, "q") == count


@pytest.mark.parametrize("value, message", [
    ("500m", "q: expected a whole number of devices (extended resources cannot be "
             "fractional), got '500m'"),
    (0.5, "q: expected a whole number of devices (extended resources cannot be fractional), "
          "got 0.5"),
    ("1.5", "cannot be fractional), got '1.5'"),
    ("-1", "q: expected a non-negative number of devices, got '-1'"),
    ("1e30", "q: expected at most 9223372036854775807 devices, got '1e30'"),
    ("lots", "q: expected a whole number of devices (a Kubernetes quantity such as 1, 8 or 1k), "
             "got 'lots'"),
    (True, "q: expected a whole number of devices, got true (a boolean)"),
    (float("inf"), "a Kubernetes quantity such as 1, 8 or 1k), got .inf"),
])
def test_other_quantities_are_refused_in_one_line(value, message):
    with pytest.raises(InputError) as info:
        parse_quantity(value, "q")
    assert message in str(info.value)
