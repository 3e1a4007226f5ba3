"""The gRPC plugin over real unix sockets, driven by a tiny in-test Registration servicer."""

from __future__ import annotations

import os
import tempfile
import threading
from concurrent import futures
from pathlib import Path

import grpc
import pytest
import yaml

from lab02_device_plugin.api import deviceplugin_pb2 as pb
from lab02_device_plugin.api import deviceplugin_pb2_grpc as pb_grpc
from lab02_device_plugin.plugin.config import parse_config
from lab02_device_plugin.plugin.health import DeviceHealth, HealthPolicy, SimulatedHealthSource
from lab02_device_plugin.plugin.inventory import Gpu, Inventory, from_yaml_spec
from lab02_device_plugin.plugin.manager import PluginManager
from lab02_device_plugin.plugin.server import DevicePluginServer, RegistrationError
from lab02_device_plugin.plugin.sharing import advertise

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def sock_dir():
    # unix socket paths are limited to 107 bytes; pytest's tmp_path can be longer.
    with tempfile.TemporaryDirectory(prefix="dp-") as d:
        yield Path(d)


class FakeKubelet(pb_grpc.RegistrationServicer):
    """Registration that records requests and, like a modern kubelet, dials the plugin back."""

    def __init__(self, sock_dir: Path, refuse: str | None = None) -> None:
        self.sock_dir = sock_dir
        self.refuse = refuse
        self.requests: list[pb.RegisterRequest] = []
        self.options: list[pb.DevicePluginOptions] = []
        self.server: grpc.Server | None = None

    def Register(self, request, context):
        if self.refuse:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, self.refuse)
        with grpc.insecure_channel(f"unix:{self.sock_dir / request.endpoint}") as ch:
            self.options.append(pb_grpc.DevicePluginStub(ch).GetDevicePluginOptions(pb.Empty(),
                                                                                    timeout=5))
        self.requests.append(request)
        return pb.Empty()

    def start(self) -> FakeKubelet:
        self.server = grpc.server(futures.ThreadPoolExecutor(4))
        pb_grpc.add_RegistrationServicer_to_server(self, self.server)
        self.server.add_insecure_port(f"unix:{self.sock_dir / 'kubelet.sock'}")
        self.server.start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop(0).wait(5)
            self.server = None


@pytest.fixture
def kubelet(sock_dir):
    k = FakeKubelet(sock_dir).start()
    yield k
    k.stop()


def cfg(text: str = ""):
    return parse_config(yaml.safe_load(text) if text else None)


def four_gpus() -> Inventory:
    return Inventory(tuple(Gpu(i, f"GPU-{i}", "H100", 81559, numa_node=i // 2) for i in range(4)))


def stub(path: Path) -> pb_grpc.DevicePluginStub:
    return pb_grpc.DevicePluginStub(grpc.insecure_channel(f"unix:{path}"))


# ---------------------------------------------------------------- one server

def test_serves_before_registering_and_sends_options_both_ways(sock_dir, kubelet):
    (res,) = advertise(four_gpus(), cfg()).resources
    srv = DevicePluginServer(res, sock_dir, sock_dir / "kubelet.sock", cfg())
    srv.start()
    try:
        (req,) = kubelet.requests
        assert (req.version, req.endpoint, req.resource_name) == \
            ("v1beta1", "nvidia-gpu.sock", "nvidia.com/gpu")
        assert req.options.get_preferred_allocation_available is True
        assert req.options.pre_start_required is False
        # The fake kubelet's GetDevicePluginOptions call during Register succeeded: the
        # plugin was serving before it registered.
        assert kubelet.options == [req.options]
        assert srv.registered and (sock_dir / "nvidia-gpu.sock").exists()
    finally:
        srv.stop()
    assert not (sock_dir / "nvidia-gpu.sock").exists()


def test_stop_then_start_again(sock_dir, kubelet):
    (res,) = advertise(four_gpus(), cfg()).resources
    srv = DevicePluginServer(res, sock_dir, sock_dir / "kubelet.sock", cfg(), pre_start_required=True)
    for _ in range(2):
        srv.start()
        assert stub(srv.socket_path).GetDevicePluginOptions(pb.Empty(), timeout=5).pre_start_required
        srv.stop()
        assert not srv.socket_path.exists()
    assert len(kubelet.requests) == 2


def test_refused_registration_stops_the_server(sock_dir):
    k = FakeKubelet(sock_dir, refuse='the ResourceName "nvidia.com/gpu" is invalid').start()
    try:
        (res,) = advertise(four_gpus(), cfg()).resources
        srv = DevicePluginServer(res, sock_dir, sock_dir / "kubelet.sock", cfg())
        with pytest.raises(RegistrationError, match='INVALID_ARGUMENT: the ResourceName'):
            srv.start()
        assert not srv.running and not srv.socket_path.exists()
    finally:
        k.stop()


def test_stale_socket_file_is_replaced(sock_dir):
    (sock_dir / "nvidia-gpu.sock").write_text("stale")
    (res,) = advertise(four_gpus(), cfg()).resources
    with DevicePluginServer(res, sock_dir, None, cfg()) as srv:
        assert len(stub(srv.socket_path).ListAndWatch(pb.Empty()).next().devices) == 4


def test_list_and_watch_snapshot_then_health_changes(sock_dir):
    inv = four_gpus()
    health = DeviceHealth.for_inventory(inv, HealthPolicy(recovery=True))
    (res,) = advertise(inv, cfg()).resources
    with DevicePluginServer(res, sock_dir, None, cfg(), health) as srv:
        stream = stub(srv.socket_path).ListAndWatch(pb.Empty(), timeout=30)
        first = next(stream)
        assert [(d.ID, d.health, [n.ID for n in d.topology.nodes]) for d in first.devices] == \
            [("GPU-0", "Healthy", [0]), ("GPU-1", "Healthy", [0]),
             ("GPU-2", "Healthy", [1]), ("GPU-3", "Healthy", [1])]
        src = SimulatedHealthSource()
        src.start(health.apply)
        src.inject_xid("GPU-2", 94)
        second = next(stream)
        assert [d.health for d in second.devices] == ["Healthy", "Healthy", "Unhealthy", "Healthy"]
        src.inject_xid("GPU-2", 13)  # application Xid: no change, no message
        src.recover("GPU-2")
        third = next(stream)
        assert [d.health for d in third.devices] == ["Healthy"] * 4
        stream.cancel()


def test_list_and_watch_ends_when_plugin_stops(sock_dir):
    (res,) = advertise(four_gpus(), cfg()).resources
    srv = DevicePluginServer(res, sock_dir, None, cfg())
    srv.start()
    stream = stub(srv.socket_path).ListAndWatch(pb.Empty(), timeout=30)
    next(stream)
    srv.stop()
    # The stream ends (cleanly, or cancelled by the stopping server) instead of hanging
    # until its 30 s deadline.
    try:
        rest = list(stream)
    except grpc.RpcError as exc:
        assert exc.code() in (grpc.StatusCode.CANCELLED, grpc.StatusCode.UNAVAILABLE)
        rest = []
    assert rest == []


def test_allocate_replicas_and_errors(sock_dir):
    c = cfg("sharing: {timeSlicing: {failRequestsGreaterThanOne: true, "
            "resources: [{name: nvidia.com/gpu, replicas: 10}]}}")
    inv = Inventory(tuple(Gpu(i, f"GPU-{i}", "H100", 81559) for i in range(2)))
    (res,) = advertise(inv, c).resources
    with DevicePluginServer(res, sock_dir, None, c) as srv:
        s = stub(srv.socket_path)
        resp = s.Allocate(pb.AllocateRequest(container_requests=[
            pb.ContainerAllocateRequest(devices_ids=["GPU-1::7"])]), timeout=5)
        assert dict(resp.container_responses[0].envs) == {"NVIDIA_VISIBLE_DEVICES": "GPU-1"}
        # user case (a): 20 units of a shared resource with failRequestsGreaterThanOne
        with pytest.raises(grpc.RpcError) as exc:
            s.Allocate(pb.AllocateRequest(container_requests=[
                pb.ContainerAllocateRequest(devices_ids=[d.id for d in res.devices])]), timeout=5)
        assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "maximum request size for shared resources is 1; found 20" in exc.value.details()
        with pytest.raises(grpc.RpcError) as exc:
            s.Allocate(pb.AllocateRequest(container_requests=[
                pb.ContainerAllocateRequest(devices_ids=["GPU-7::0"])]), timeout=5)
        assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "unknown device 'GPU-7::0'" in exc.value.details()


def test_preferred_allocation_and_prestart(sock_dir):
    c = cfg("sharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 4}]}}")
    (res,) = advertise(four_gpus(), c).resources
    with DevicePluginServer(res, sock_dir, None, c, pre_start_required=True) as srv:
        s = stub(srv.socket_path)
        resp = s.GetPreferredAllocation(pb.PreferredAllocationRequest(container_requests=[
            pb.ContainerPreferredAllocationRequest(
                available_deviceIDs=[d.id for d in res.devices], must_include_deviceIDs=["GPU-3::1"],
                allocation_size=2)]), timeout=5)
        # must-include GPU-3::1 first, then the least used GPU not yet picked: GPU-0.
        assert list(resp.container_responses[0].deviceIDs) == ["GPU-3::1", "GPU-0::0"]
        s.PreStartContainer(pb.PreStartContainerRequest(devices_ids=["GPU-3::1"]), timeout=5)
        assert srv.prestart_calls == 1
        with pytest.raises(grpc.RpcError) as exc:
            s.PreStartContainer(pb.PreStartContainerRequest(devices_ids=["nope"]), timeout=5)
        assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_many_concurrent_allocates(sock_dir):
    inv = Inventory(tuple(Gpu(i, f"GPU-{i}", "H100", 81559) for i in range(8)))
    c = cfg("sharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 4}]}}")
    (res,) = advertise(inv, c).resources
    ids = [d.id for d in res.devices]  # 32 replica IDs
    errors: list[str] = []
    results: dict[int, str] = {}
    with DevicePluginServer(res, sock_dir, None, c, max_workers=8) as srv:
        channel = grpc.insecure_channel(f"unix:{srv.socket_path}")
        s = pb_grpc.DevicePluginStub(channel)

        def worker(k: int) -> None:
            try:
                for j in range(10):
                    n = (k * 10 + j) % len(ids)
                    r = s.Allocate(pb.AllocateRequest(container_requests=[
                        pb.ContainerAllocateRequest(devices_ids=[ids[n]])]), timeout=10)
                    got = r.container_responses[0].envs["NVIDIA_VISIBLE_DEVICES"]
                    # replica n belongs to GPU n // 4
                    if got != f"GPU-{n // 4}":
                        errors.append(f"{ids[n]} -> {got}")
                    results[k * 10 + j] = got
            except Exception as exc:  # pragma: no cover - reported below
                errors.append(repr(exc))

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        channel.close()
        assert errors == []
        assert len(results) == 160 and srv.allocate_calls == 160


# ---------------------------------------------------------------- manager

def test_manager_mig_mixed_one_socket_per_resource(sock_dir, kubelet):
    inv = from_yaml_spec({"gpus": [{"model": "H100-80GB", "mig": {
        "instances": ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]}}, {"model": "H100-80GB"}]})
    with PluginManager(inv, cfg("flags: {migStrategy: mixed}"), sock_dir) as m:
        assert m.wait_registered(5)
        names = sorted(r.resource_name for r in kubelet.requests)
        assert names == ["nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "nvidia.com/mig-2g.20gb",
                         "nvidia.com/mig-3g.40gb"]
        assert sorted(r.endpoint for r in kubelet.requests) == [
            "nvidia-gpu.sock", "nvidia-mig-1g.10gb.sock", "nvidia-mig-2g.20gb.sock",
            "nvidia-mig-3g.40gb.sock"]
        assert len(next(stub(sock_dir / "nvidia-mig-1g.10gb.sock").ListAndWatch(pb.Empty(),
                                                                             timeout=10)).devices) == 2
    assert sorted(os.listdir(sock_dir)) == ["kubelet.sock"]


def test_manager_reregisters_when_kubelet_sock_is_recreated(sock_dir, kubelet):
    with PluginManager(four_gpus(), cfg(), sock_dir, watch_interval=0.02) as m:
        assert m.wait_registered(5, registrations=1)
        kubelet.stop()
        # A kubelet restart: every socket in the directory is removed, kubelet.sock re-created.
        for p in sock_dir.iterdir():
            p.unlink()
        second = FakeKubelet(sock_dir).start()
        try:
            assert m.wait_registered(5, registrations=2)
            assert [r.resource_name for r in second.requests] == ["nvidia.com/gpu"]
            assert (sock_dir / "nvidia-gpu.sock").exists()
            assert m.restarts == 1
        finally:
            second.stop()


def test_manager_waits_for_a_late_kubelet(sock_dir):
    with PluginManager(four_gpus(), cfg(), sock_dir, watch_interval=0.02) as m:
        assert not m.registered
        assert m.last_error == f"no kubelet listening on {sock_dir / 'kubelet.sock'}"
        assert m.server("nvidia.com/gpu").running  # serving while it waits
        k = FakeKubelet(sock_dir).start()
        try:
            assert m.wait_registered(5)
            assert len(k.requests) == 1
        finally:
            k.stop()


def test_manager_health_and_lost_gpu(sock_dir, kubelet):
    src = SimulatedHealthSource()
    inv = Inventory(tuple(Gpu(i, f"GPU-{i}", "H100", 81559) for i in range(8)))
    with PluginManager(inv, cfg(), sock_dir, health_source=src,
                       health_policy=HealthPolicy(recovery=True)) as m:
        assert m.wait_registered(5)
        stream = stub(sock_dir / "nvidia-gpu.sock").ListAndWatch(pb.Empty(), timeout=20)
        assert sum(d.health == "Healthy" for d in next(stream).devices) == 8
        src.inject_xid("GPU-5", 94)  # user case (c): 7 healthy of 8
        snap = next(stream)
        assert (len(snap.devices), sum(d.health == "Healthy" for d in snap.devices)) == (8, 7)
        src.recover("GPU-5")
        assert sum(d.health == "Healthy" for d in next(stream).devices) == 8
        stream.cancel()
        # user case (d): a GPU lost from the inventory -> plugins restart with 7 devices
        m.set_inventory(inv.without("GPU-2"))
        assert m.wait_registered(5, registrations=2)
        snap = next(stub(sock_dir / "nvidia-gpu.sock").ListAndWatch(pb.Empty(), timeout=10))
        assert [d.ID for d in snap.devices] == [f"GPU-{i}" for i in (0, 1, 3, 4, 5, 6, 7)]


def test_socket_path_too_long_is_a_clear_error_and_nothing_keeps_running(tmp_path):
    deep = tmp_path / ("d" * 120)
    src = SimulatedHealthSource()
    m = PluginManager(four_gpus(), cfg(), deep, kubelet_socket=None, health_source=src)
    from lab02_device_plugin.errors import InputError
    with pytest.raises(InputError, match="expected at most 107"):
        m.start()
    assert m._watcher is None
    assert src._callbacks == []  # the health source was stopped again
    assert not deep.exists()  # checked before the directory is made (it used to be left behind)


def test_manager_restarts_when_its_socket_is_removed(sock_dir, kubelet):
    # The kubelet.sock identity may look unchanged to a poller (inode reused within one
    # timestamp tick); a plugin socket that vanished is the second sign of a kubelet restart.
    with PluginManager(four_gpus(), cfg(), sock_dir, watch_interval=0.02) as m:
        assert m.wait_registered(5, registrations=1)
        (sock_dir / "nvidia-gpu.sock").unlink()
        assert m.wait_registered(5, registrations=2)
        assert (sock_dir / "nvidia-gpu.sock").exists()
        assert len(kubelet.requests) == 2
