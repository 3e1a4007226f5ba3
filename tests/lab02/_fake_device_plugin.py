"""A tiny device plugin written inside the tests, so the mock kubelet is tested on its own.

It serves the v1beta1 DevicePlugin service on a unix socket, registers with a kubelet socket,
streams full snapshots, records every call it receives, and lets a test script its answers.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from lab02_device_plugin.api import deviceplugin_pb2 as pb
from lab02_device_plugin.api import deviceplugin_pb2_grpc as pb_grpc


@dataclass
class Calls:
    options: int = 0
    list_and_watch: int = 0
    preferred: list[pb.ContainerPreferredAllocationRequest] = field(default_factory=list)
    allocate: list[list[str]] = field(default_factory=list)
    pre_start: list[list[str]] = field(default_factory=list)


class FakeDevicePlugin(pb_grpc.DevicePluginServicer):
    """Devices are ``{ID: health}``; ``numa`` optionally gives a NUMA node per ID.

    ``preferred(request) -> list[str]`` scripts GetPreferredAllocation (default: the first
    ``allocation_size`` available IDs, reversed so a test can see it was used);
    ``allocate_error`` makes Allocate abort with INVALID_ARGUMENT and that text;
    ``envs(ids) -> dict`` scripts the envs of each container response.
    """

    def __init__(self, plugin_dir: Path, resource: str, devices: dict[str, str], *,
                 endpoint: str | None = None, preferred_available: bool = True,
                 pre_start_required: bool = False, numa: dict[str, int] | None = None) -> None:
        self.plugin_dir = Path(plugin_dir)
        self.resource = resource
        self.endpoint = endpoint or f"fake-{resource.split('/')[-1]}.sock"
        self.devices = dict(devices)
        self.numa = numa or {}
        self.options = pb.DevicePluginOptions(pre_start_required=pre_start_required,
                                              get_preferred_allocation_available=preferred_available)
        self.calls = Calls()
        self.preferred: Callable[[pb.ContainerPreferredAllocationRequest], list[str]] | None = None
        self.allocate_error: str | None = None
        self.options_error: str | None = None
        self.pre_start_error: str | None = None
        self.envs: Callable[[list[str]], dict[str, str]] = (
            lambda ids: {"FAKE_VISIBLE_DEVICES": ",".join(ids)})
        self.extra: Callable[[list[str]], dict] = lambda ids: {}
        self._lock = threading.Condition()
        self._version = 0
        self._stopped = threading.Event()
        self._server: grpc.Server | None = None

    # ---- lifecycle ----
    @property
    def socket_path(self) -> Path:
        return self.plugin_dir / self.endpoint

    def start(self) -> "FakeDevicePlugin":
        self._stopped.clear()
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
        pb_grpc.add_DevicePluginServicer_to_server(self, self._server)
        self._server.add_insecure_port(f"unix://{self.socket_path}")
        self._server.start()
        return self

    def register(self, kubelet_socket: Path | None = None, *, version: str = "v1beta1",
                 resource: str | None = None, endpoint: str | None = None) -> None:
        """Send a RegisterRequest; raises grpc.RpcError when the kubelet refuses it."""
        kubelet_socket = kubelet_socket or self.plugin_dir / "kubelet.sock"
        with grpc.insecure_channel(f"unix://{kubelet_socket}") as channel:
            pb_grpc.RegistrationStub(channel).Register(pb.RegisterRequest(
                version=version, endpoint=self.endpoint if endpoint is None else endpoint,
                resource_name=self.resource if resource is None else resource,
                options=self.options), timeout=15)

    def stop(self) -> None:
        """End every stream and stop serving (the kubelet sees its streams end)."""
        self._stopped.set()
        with self._lock:
            self._lock.notify_all()
        if self._server is not None:
            self._server.stop(0.5).wait(timeout=5)
            self._server = None

    def set_devices(self, devices: dict[str, str]) -> None:
        with self._lock:
            self.devices = dict(devices)
            self._version += 1
            self._lock.notify_all()

    def set_health(self, device_id: str, health: str) -> None:
        with self._lock:
            self.devices[device_id] = health
            self._version += 1
            self._lock.notify_all()

    # ---- DevicePlugin ----
    def _snapshot(self) -> pb.ListAndWatchResponse:
        devices = []
        for device_id, health in self.devices.items():
            device = pb.Device(ID=device_id, health=health)
            if device_id in self.numa:
                device.topology.nodes.add(ID=self.numa[device_id])
            devices.append(device)
        return pb.ListAndWatchResponse(devices=devices)

    def GetDevicePluginOptions(self, request, context):
        self.calls.options += 1
        if self.options_error:
            context.abort(grpc.StatusCode.INTERNAL, self.options_error)
        return self.options

    def ListAndWatch(self, request, context):
        self.calls.list_and_watch += 1
        done = threading.Event()
        context.add_callback(done.set)
        with self._lock:
            version = self._version
            snapshot = self._snapshot()
        yield snapshot
        while not done.is_set() and not self._stopped.is_set():
            with self._lock:
                self._lock.wait_for(lambda: self._version != version or self._stopped.is_set()
                                    or done.is_set(), timeout=0.1)
                if self._version == version:
                    continue
                version = self._version
                snapshot = self._snapshot()
            yield snapshot

    def GetPreferredAllocation(self, request, context):
        responses = []
        for req in request.container_requests:
            self.calls.preferred.append(req)
            if self.preferred is not None:
                ids = self.preferred(req)
            else:
                must = list(req.must_include_deviceIDs)
                rest = [d for d in reversed(req.available_deviceIDs) if d not in must]
                ids = (must + rest)[:req.allocation_size]
            responses.append(pb.ContainerPreferredAllocationResponse(deviceIDs=ids))
        return pb.PreferredAllocationResponse(container_responses=responses)

    def Allocate(self, request, context):
        responses = []
        for req in request.container_requests:
            ids = list(req.devices_ids)
            self.calls.allocate.append(ids)
            if self.allocate_error:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, self.allocate_error)
            unknown = [d for d in ids if d not in self.devices]
            if unknown:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"unknown device: {unknown[0]}")
            responses.append(pb.ContainerAllocateResponse(envs=self.envs(ids), **self.extra(ids)))
        return pb.AllocateResponse(container_responses=responses)

    def PreStartContainer(self, request, context):
        self.calls.pre_start.append(list(request.devices_ids))
        if self.pre_start_error:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, self.pre_start_error)
        return pb.PreStartContainerResponse()
