"""End to end: the mock kubelet drives the real plugin over unix sockets (seed lab path,
MIG naming, health, bad input, concurrency)."""

from __future__ import annotations

import threading

import grpc
import pytest

from _node import gpus, node, pod, time_slicing
from lab02_device_plugin.api import deviceplugin_pb2 as pb
from lab02_device_plugin.api import deviceplugin_pb2_grpc as pb_grpc
from lab02_device_plugin.plugin.discovery import load_inventory
from lab02_device_plugin.plugin.server import DevicePluginServer, RegistrationError
from lab02_device_plugin.plugin.sharing import AdvertisedDevice, AdvertisedResource

pytestmark = pytest.mark.timeout(120)
EXAMPLES = __import__("pathlib").Path(__file__).resolve().parents[2] / "lab02_device_plugin" / "examples"


def stub_for(n, resource="nvidia.com/gpu") -> tuple[grpc.Channel, pb_grpc.DevicePluginStub]:
    path = n.manager.server(resource).socket_path
    channel = grpc.insecure_channel(f"unix://{path}")
    return channel, pb_grpc.DevicePluginStub(channel)


def test_seed_lab_path_replicas_4_advertise_4_units_of_one_gpu():
    with node(gpus("T4"), time_slicing(4)) as n:
        uuid = n.inventory.gpus[0].uuid
        assert n.kubelet.node_status().capacity == {"nvidia.com/gpu": 4}
        # Replica IDs are <uuid>::<n>, n = 0..3 (NewAnnotatedID), all Healthy.
        assert n.kubelet.devices("nvidia.com/gpu") == {f"{uuid}::{i}": "Healthy" for i in range(4)}
        result = n.kubelet.admit_pod(pod("pod-1"))
        assert result.admitted
        assert result.devices["main"]["nvidia.com/gpu"][0].startswith(uuid + "::")
        assert result.containers["main"].envs == {"NVIDIA_VISIBLE_DEVICES": uuid}
        narration = "\n".join(n.kubelet.narration)
        # Order of a real kubelet: register, snapshot, preferred allocation, allocate.
        order = [narration.index(s) for s in ("Register nvidia.com/gpu", "ListAndWatch nvidia.com/gpu",
                                                  "GetPreferredAllocation pod-1/main", "Allocate pod-1/main")]
        assert order == sorted(order)


def test_mig_mixed_naming_seen_by_kubelet():
    inventory = load_inventory(EXAMPLES / "inventory-h100-mig.yaml")
    with node(inventory, {"version": "v1", "flags": {"migStrategy": "mixed"}}) as n:
        # GPU 0: 3g.40gb + 2g.20gb + 2 x 1g.10gb; GPU 1: 7 x 1g.10gb -> 1g.10gb = 2 + 7 = 9.
        assert n.kubelet.node_status().capacity == {
            "nvidia.com/mig-1g.10gb": 9, "nvidia.com/mig-2g.20gb": 1, "nvidia.com/mig-3g.40gb": 1}
        mig_3g = next(m for m in inventory.gpus[0].mig_devices if m.profile == "3g.40gb")
        assert set(n.kubelet.devices("nvidia.com/mig-3g.40gb")) == {mig_3g.uuid}
        result = n.kubelet.admit_pod(pod("big-slice", 1, "nvidia.com/mig-3g.40gb"))
        assert result.containers["main"].envs["NVIDIA_VISIBLE_DEVICES"] == mig_3g.uuid
        assert sorted(p.name for p in n.plugin_dir.iterdir() if p.suffix == ".sock") == [
            "kubelet.sock", "nvidia-mig-1g.10gb.sock", "nvidia-mig-2g.20gb.sock", "nvidia-mig-3g.40gb.sock"]


def test_mig_mixed_with_time_sliced_1g_slices():
    inventory = load_inventory(EXAMPLES / "inventory-h100-mig.yaml")
    with node(inventory, time_slicing(2, name="nvidia.com/mig-1g.10gb", migStrategy="mixed")) as n:
        # 9 slices x 2 replicas = 18 units; the other profiles are not shared.
        assert n.kubelet.node_status().capacity["nvidia.com/mig-1g.10gb"] == 18
        assert n.kubelet.node_status().capacity["nvidia.com/mig-3g.40gb"] == 1


def test_mig_single_naming_seen_by_kubelet():
    spec = {"node": "e2e", "gpus": [{"model": "H100-80GB", "count": 2,
                                     "mig": {"enabled": True, "instances": ["1g.10gb"] * 7}}]}
    with node(spec, {"version": "v1", "flags": {"migStrategy": "single"}}) as n:
        # single: MIG devices are advertised as nvidia.com/gpu; 2 GPUs x 7 = 14.
        assert n.kubelet.node_status().capacity == {"nvidia.com/gpu": 14}
        assert all(d.startswith("MIG-") for d in n.kubelet.devices("nvidia.com/gpu"))
        result = n.kubelet.admit_pod(pod("p", 2))
        visible = result.containers["main"].envs["NVIDIA_VISIBLE_DEVICES"].split(",")
        assert len(visible) == 2 and all(v.startswith("MIG-") for v in visible)


def test_health_xid_94_drops_one_and_recovery_restores_it():
    with node(gpus(count=8)) as n:
        bad = n.inventory.gpus[3].uuid
        n.health.inject_xid(bad, 94)
        # capacity = 8 (7 healthy + 1 unhealthy), allocatable = 7
        status = n.kubelet.wait_for_resource("nvidia.com/gpu", 7, capacity=8)
        assert n.kubelet.devices("nvidia.com/gpu")[bad] == "Unhealthy"
        # An application Xid (13) is skipped: only the next real one (Xid 79) counts: 8 - 2 = 6.
        n.health.inject_xid(n.inventory.gpus[0].uuid, 13)
        n.health.inject_xid(n.inventory.gpus[1].uuid, 79)
        n.kubelet.wait_for_resource("nvidia.com/gpu", 6, capacity=8)
        assert n.kubelet.devices("nvidia.com/gpu")[n.inventory.gpus[0].uuid] == "Healthy"
        n.health.recover(bad)
        n.health.recover(n.inventory.gpus[1].uuid)
        n.kubelet.wait_for_resource("nvidia.com/gpu", 8, capacity=8)
        assert status.capacity == {"nvidia.com/gpu": 8}


def test_unhealthy_replicas_follow_their_gpu():
    with node(gpus(count=2), time_slicing(4)) as n:
        n.health.inject_xid(n.inventory.gpus[0].uuid, 48)
        # 2 GPUs x 4 replicas = 8 units; GPU 0's 4 replicas go unhealthy: 8 - 4 = 4.
        n.kubelet.wait_for_resource("nvidia.com/gpu", 4, capacity=8)
        result = n.kubelet.admit_pod(pod("p", 4))
        assert result.containers["main"].envs["NVIDIA_VISIBLE_DEVICES"] == n.inventory.gpus[1].uuid


def test_plugin_stop_marks_every_device_unhealthy():
    with node(gpus(count=2)) as n:
        n.manager.stop()
        n.kubelet.wait_for(lambda: not n.kubelet.is_registered("nvidia.com/gpu"), 10, "stream end")
        status = n.kubelet.node_status()
        assert (status.capacity, status.allocatable) == ({"nvidia.com/gpu": 2}, {"nvidia.com/gpu": 0})


def test_unknown_device_id_is_invalid_argument_naming_it():
    with node(gpus(count=1)) as n:
        channel, stub = stub_for(n)
        with channel, pytest.raises(grpc.RpcError) as info:
            stub.Allocate(pb.AllocateRequest(container_requests=[
                pb.ContainerAllocateRequest(devices_ids=["GPU-does-not-exist"])]), timeout=10)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "GPU-does-not-exist" in info.value.details()


@pytest.mark.parametrize("name", ["kubernetes.io/gpu", "example.com/bad name", "requests.nvidia.com/gpu"])
def test_invalid_resource_name_rejected_at_register(name):
    import shutil
    import tempfile
    from pathlib import Path

    from lab02_device_plugin.kubelet.lifecycle import MockKubelet

    d = Path(tempfile.mkdtemp(prefix="rn-"))
    device = AdvertisedDevice(id="GPU-x", physical_id="GPU-x", gpu_uuid="GPU-x", gpu_index=0)
    resource = AdvertisedResource(name, name, (device,))
    try:
        with MockKubelet(d) as kubelet:
            server = DevicePluginServer(resource, d, d / "kubelet.sock")
            with pytest.raises(RegistrationError) as info:
                server.start()
            assert f'the ResourceName "{name}" is invalid' in str(info.value)
            assert not server.socket_path.exists()  # a failed registration stops the plugin
            assert kubelet.node_status().capacity == {}
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_many_concurrent_allocate_calls():
    with node(gpus(count=8), time_slicing(4)) as n:
        channel, stub = stub_for(n)
        uuids = [g.uuid for g in n.inventory.gpus]
        errors, answers = [], {}

        def call(i: int) -> None:
            ids = [f"{uuids[i % 8]}::{i % 4}"]
            try:
                resp = stub.Allocate(pb.AllocateRequest(container_requests=[
                    pb.ContainerAllocateRequest(devices_ids=ids)]), timeout=30)
                answers[i] = resp.container_responses[0].envs["NVIDIA_VISIBLE_DEVICES"]
            except grpc.RpcError as exc:  # pragma: no cover - reported below
                errors.append(exc)

        with channel:
            threads = [threading.Thread(target=call, args=(i,)) for i in range(64)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=60)
        assert errors == []
        # Each of the 64 answers names the physical GPU of the replica asked for.
        assert answers == {i: uuids[i % 8] for i in range(64)}


def test_many_containers_in_one_allocate_request():
    with node(gpus(count=4)) as n:
        channel, stub = stub_for(n)
        uuids = [g.uuid for g in n.inventory.gpus]
        with channel:
            resp = stub.Allocate(pb.AllocateRequest(container_requests=[
                pb.ContainerAllocateRequest(devices_ids=[u]) for u in uuids]), timeout=10)
        assert [r.envs["NVIDIA_VISIBLE_DEVICES"] for r in resp.container_responses] == uuids


def _plugin_flags(**plugin) -> dict:
    return {"version": "v1", "flags": {"migStrategy": "none", "plugin": plugin}}


def test_device_list_strategy_volume_mounts_reaches_the_runtime():
    with node(gpus(count=2), _plugin_flags(deviceListStrategy="volume-mounts")) as n:
        result = n.kubelet.admit_pod(pod("p", 2))
        options = result.containers["main"]
        uuids = sorted(result.devices["main"]["nvidia.com/gpu"])
        assert options.envs == {"NVIDIA_VISIBLE_DEVICES": "/var/run/nvidia-container-devices"}
        assert sorted((m.container_path, m.host_path, m.read_only) for m in options.mounts) == [
            (f"/var/run/nvidia-container-devices/{u}", "/dev/null", True) for u in uuids]


def test_device_list_strategy_cdi_cri_gives_cdi_devices_and_no_env():
    with node(gpus(count=1), _plugin_flags(deviceListStrategy="cdi-cri")) as n:
        result = n.kubelet.admit_pod(pod("p", 1))
        uuid = n.inventory.gpus[0].uuid
        assert result.containers["main"].cdi_devices == [f"k8s.device-plugin.nvidia.com/gpu={uuid}"]
        assert result.containers["main"].envs == {}


def test_device_list_strategy_cdi_annotations():
    with node(gpus(count=1), _plugin_flags(deviceListStrategy="cdi-annotations")) as n:
        result = n.kubelet.admit_pod(pod("p", 1))
        uuid = n.inventory.gpus[0].uuid
        ((key, value),) = result.containers["main"].annotations.items()
        assert key.startswith("cdi.k8s.io/nvidia-device-plugin_")
        assert value == f"k8s.device-plugin.nvidia.com/gpu={uuid}"


def test_device_id_strategy_index_and_pass_device_specs():
    with node(gpus(count=2), _plugin_flags(deviceIDStrategy="index", passDeviceSpecs=True)) as n:
        result = n.kubelet.admit_pod(pod("p", 1))
        chosen = result.devices["main"]["nvidia.com/gpu"][0]
        index = next(g.index for g in n.inventory.gpus if g.uuid == chosen)
        options = result.containers["main"]
        assert options.envs == {"NVIDIA_VISIBLE_DEVICES": str(index)}
        paths = [d.container_path for d in options.devices]
        assert paths[:4] == ["/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools",
                             "/dev/nvidia-modeset"]
        assert len(paths) == 5 and paths[4].startswith("/dev/nvidia")


def test_mps_adds_pipe_directory_and_mounts():
    with node(gpus(count=1), time_slicing(4, strategy="mps")) as n:
        options = n.kubelet.admit_pod(pod("p", 1)).containers["main"]
        assert options.envs["NVIDIA_VISIBLE_DEVICES"] == n.inventory.gpus[0].uuid
        pipe = options.envs["CUDA_MPS_PIPE_DIRECTORY"]
        assert pipe in [m.container_path for m in options.mounts]
        assert "/dev/shm" in [m.container_path for m in options.mounts]
