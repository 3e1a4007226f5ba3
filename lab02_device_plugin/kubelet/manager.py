"""The kubelet's device manager (pkg/kubelet/cm/devicemanager/manager.go), as a mock.

:class:`DeviceManager` serves the ``v1beta1.Registration`` service on ``kubelet.sock``, checks
each Register (:mod:`.registration`), dials the plugin and consumes its ListAndWatch stream
(:mod:`.endpoint`), keeps capacity and allocatable per resource, picks devices for a
container and calls GetPreferredAllocation, Allocate and PreStartContainer
(``devicesToAllocate``, ``allocateContainerResources``), frees the devices of pods that are
gone (``UpdateAllocatedDevices``) and writes the checkpoint (:mod:`.checkpoint`) after every
change. It reaches a device plugin only over gRPC. The pod side (scheduling fit, admission,
restarts, pod phases) is :class:`~lab02_device_plugin.kubelet.lifecycle.MockKubelet`, which
is a DeviceManager; the behaviour both model is described in :mod:`.lifecycle`.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import grpc

from lab02_device_plugin.api import deviceplugin_pb2 as pb
from lab02_device_plugin.api import deviceplugin_pb2_grpc as pb_grpc
from lab02_device_plugin.errors import InputError
from lab02_device_plugin.kubelet.checkpoint import (
    CHECKPOINT_NAME, CorruptCheckpoint, read_checkpoint, write_checkpoint,
)
from lab02_device_plugin.kubelet.endpoint import (
    HEALTHY, UNHEALTHY, Endpoint, rpc_error_go, rpc_text, stream_end_reason,
)
from lab02_device_plugin.kubelet.pod import Container, Pod
from lab02_device_plugin.kubelet.pod_devices import (
    NODE_WITHOUT_TOPOLOGY, Allocation, RunContainerOptions, response_text, run_container_options,
)
from lab02_device_plugin.kubelet.registration import register_error
from lab02_device_plugin.limits import MAX_MESSAGE_CHARS, shorten

# Constants of the device manager (types.go, endpoint.go) in the Kubernetes source.
DEVICE_PLUGIN_PATH = "/var/lib/kubelet/device-plugins/"
KUBELET_SOCKET_NAME = "kubelet.sock"
DIAL_TIMEOUT_S = 10.0
PRE_START_CONTAINER_TIMEOUT_S = 30.0
ENDPOINT_STOP_GRACE_PERIOD_S = 300.0
#: What a Register at the (resource, socket path) of a connected plugin does: "replace"
#: (kubelets up to 1.36) or "reject" (kubernetes PR #135437 and its follow-up #139338).
SAME_SOCKET_MODES = ("replace", "reject")
#: Registers that may dial their plugin at once (each waits up to DIAL_TIMEOUT_S): ten
#: plugins whose sockets never answer no longer hold up an eleventh that does.
MAX_CONCURRENT_DIALS = 32
#: Longest narration line (characters): 64 allocated GPU UUIDs (41 characters each) fit.
MAX_NARRATION_CHARS = 4000
#: Longest path a unix socket address can hold on Linux (sun_path is 108 bytes, NUL included).
MAX_UNIX_SOCKET_PATH = 107


@dataclass
class NodeStatus:
    """The node's extended resources as the kubelet reports them: ``capacity`` (all devices)
    and ``allocatable`` (healthy devices), each resource name -> count."""

    capacity: dict[str, int]
    allocatable: dict[str, int]

    def __str__(self) -> str:
        """``capacity nvidia.com/gpu=4, allocatable nvidia.com/gpu=3`` (``none`` when empty)."""
        def counts(values: dict[str, int]) -> str:
            return ", ".join(f"{r}={n}" for r, n in sorted(values.items())) or "none"
        return f"capacity {counts(self.capacity)}, allocatable {counts(self.allocatable)}"


class AdmissionFailure(Exception):
    """An admission error; ``retryable`` when it means "the plugin is not registered (yet)",
    the case the retry option retries."""

    def __init__(self, reason: str, message: str, phase: str = "Failed",
                 retryable: bool = False) -> None:
        super().__init__(message)
        self.reason, self.message, self.phase = reason, message, phase
        self.retryable = retryable


def unexpected(error: str) -> str:
    """The kubelet's admission message for a device manager error."""
    return f"Allocate failed due to {error}, which is unexpected"


def plural(n: int, noun: str) -> str:
    """``"1 device"``, ``"2 devices"``."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


def duration_text(seconds: float) -> str:
    """``300`` -> ``"5 min"``, ``2.5`` -> ``"2.5 s"``."""
    if seconds >= 60 and seconds % 60 == 0:
        return f"{seconds / 60:g} min"
    return f"{seconds:g} s"


class RegistrationServicer(pb_grpc.RegistrationServicer):
    """The ``v1beta1.Registration`` service of a :class:`DeviceManager` (plugin/v1beta1/
    server.go): at most ``max_dials`` Registers dial their plugin at once (one more is refused
    with RESOURCE_EXHAUSTED); a refused Register is status UNKNOWN with the kubelet's text."""

    def __init__(self, kubelet: "DeviceManager") -> None:
        self._kubelet = kubelet

    def Register(self, request: pb.RegisterRequest, context: grpc.ServicerContext) -> pb.Empty:
        # The kubelet serves each Register on its own goroutine; here a thread of a pool, so
        # Registers that are dialling (up to dial_timeout each) are capped below the pool's
        # size: one more is refused at once instead of queueing behind them.
        kubelet = self._kubelet
        with kubelet._lock:
            full = kubelet.dialling >= kubelet.max_dials
            if not full:
                kubelet.dialling += 1
        if full:
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED,
                          f"kubelet: {kubelet.max_dials} registrations are already dialling "
                          "their plugins; retry")
        try:
            error = kubelet._register(request)
        finally:
            with kubelet._lock:
                kubelet.dialling -= 1
        if error is not None:
            # The kubelet returns a plain Go error, which gRPC sends as status UNKNOWN.
            context.abort(grpc.StatusCode.UNKNOWN, shorten(error, MAX_MESSAGE_CHARS))
        return pb.Empty()


class DeviceManager:
    """The kubelet's device manager: serves ``Registration`` on ``<plugin_dir>/kubelet.sock``.

    Arguments as :class:`~lab02_device_plugin.kubelet.lifecycle.MockKubelet`'s (which adds
    the pod side): ``plugin_dir``, ``on_event``, ``dial_timeout``, ``stop_grace_period``,
    ``clock``, ``same_socket``, ``max_dials``. Raises InputError for a plugin directory whose
    socket path is too long, and for ``same_socket`` or ``max_dials`` out of range.

    Thread-safe: streams run on their own threads; one re-entrant lock guards the state and
    a condition on it wakes :meth:`wait_for` after every change.
    """

    def __init__(self, plugin_dir: str | os.PathLike, *, on_event: Callable[[str], None] | None = None,
                 dial_timeout: float = DIAL_TIMEOUT_S,
                 stop_grace_period: float = ENDPOINT_STOP_GRACE_PERIOD_S,
                 clock: Callable[[], float] = time.monotonic, same_socket: str = "replace",
                 max_dials: int = MAX_CONCURRENT_DIALS) -> None:
        self.plugin_dir = Path(plugin_dir)
        self.socket_path = self.plugin_dir / KUBELET_SOCKET_NAME
        self.checkpoint_path = self.plugin_dir / CHECKPOINT_NAME
        if len(os.fsencode(str(self.socket_path))) > MAX_UNIX_SOCKET_PATH:
            raise InputError(f"plugin directory {self.plugin_dir}: the socket path "
                             f"{self.socket_path} is longer than {MAX_UNIX_SOCKET_PATH} bytes, "
                             f"the limit of a unix socket address; use a shorter directory")
        self.on_event = on_event
        self.dial_timeout = dial_timeout
        self.stop_grace_period = stop_grace_period
        self._clock = clock
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._narration: list[str] = []
        self._say_lock = threading.Lock()
        self._stream_end_explained = False
        self._endpoints: dict[str, Endpoint] = {}
        self._allocations: list[Allocation] = []
        self._sources_ready = True
        if same_socket not in SAME_SOCKET_MODES:
            raise InputError(f"same_socket: expected one of {', '.join(SAME_SOCKET_MODES)}, got "
                             f"{shorten(repr(same_socket))}")
        self.same_socket = same_socket
        if not (isinstance(max_dials, int) and 1 <= max_dials <= 1024):
            raise InputError(f"max_dials: expected 1 to 1024, got {shorten(repr(max_dials))}")
        self.max_dials = max_dials
        #: Register calls in progress (each dials its plugin), at most ``max_dials``.
        self.dialling = 0
        self._server: grpc.Server | None = None
        self._threads: list[threading.Thread] = []
        self._accepting = False
        self.registrations = 0

    @property
    def running(self) -> bool:
        return self._server is not None

    def _cleanup_plugin_directory(self) -> list[str]:
        """``CleanupPluginDirectory``: delete every socket except the checkpoint."""
        removed = []
        for entry in sorted(self.plugin_dir.iterdir()):
            if entry.name == CHECKPOINT_NAME:
                continue
            try:
                if stat.S_ISSOCK(entry.lstat().st_mode):
                    entry.unlink()
                    removed.append(entry.name)
            except FileNotFoundError:
                pass
        return removed

    # ---- narration ------------------------------------------------------------------------

    @property
    def narration(self) -> list[str]:
        """Human-readable events so far, oldest first (a copy)."""
        with self._say_lock:
            return list(self._narration)

    def _narrate(self, line: str) -> None:
        """Record one line and hand it to ``on_event``. One lock orders both, so lines from
        the gRPC, stream and timer threads reach ``on_event`` one at a time, in the order of
        :attr:`narration`. (It is taken last: callers may hold the state lock.)"""
        line = shorten(line, MAX_NARRATION_CHARS)  # a plugin's 1 MB device ID stays one short line
        with self._say_lock:
            self._narration.append(line)
            if self.on_event is not None:
                self.on_event(line)

    # ---- registration and ListAndWatch ----------------------------------------------------

    def _register(self, request: pb.RegisterRequest) -> str | None:
        who = (f"Register {shorten(request.resource_name) or '<no resource name>'} from "
               f"{shorten(request.endpoint) or '<no endpoint>'}")
        error = register_error(request)
        if error is None and self.same_socket == "reject":
            with self._lock:
                live = self._endpoints.get(request.resource_name)
                if (live is not None and live.stub is not None and live.stopped_at is None
                        and live.socket_path == str(self.plugin_dir / request.endpoint)):
                    error = (f"a device plugin for {request.resource_name} at "
                             f"{request.endpoint} is still registered; the same resource and "
                             "socket path are refused until its stream ends (the newer "
                             "kubelet of kubernetes PR #135437; use another socket path to "
                             "take over)")
        if error is None:
            socket_path = str(self.plugin_dir / request.endpoint)
            # A fresh connection for every registration: gRPC Python shares subchannels
            # between channels of the same target and options, so a new channel to the same
            # socket path would reuse the connection to a previous plugin process that still
            # holds it, and lose the node's devices when that process exits
            # (kubernetes/kubernetes#121994). A per-channel subchannel pool prevents it.
            channel = grpc.insecure_channel(f"unix://{socket_path}", options=[
                ("grpc.default_authority", "localhost"), ("grpc.use_local_subchannel_pool", 1)])
            stub = pb_grpc.DevicePluginStub(channel)
            # Dial (blocking, dial_timeout) and GetDevicePluginOptions in one call: with
            # wait_for_ready the RPC waits for the connection. (grpc.channel_ready_future would
            # subscribe to connectivity polling, which makes closing the channel take 0.2 s.)
            try:
                options = stub.GetDevicePluginOptions(pb.Empty(), timeout=self.dial_timeout,
                                                      wait_for_ready=True)
            except grpc.RpcError as exc:
                channel.close()
                if exc.code() in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.UNAVAILABLE):
                    error = (f"failed to dial device plugin: cannot connect to {socket_path} "
                             f"within {self.dial_timeout:g} s")
                else:
                    error = f"failed to get device plugin options: {rpc_text(exc)}"
        if error is not None:
            self._narrate(f"{who}: rejected: {error}")
            return error
        endpoint = Endpoint(request.resource_name, socket_path, channel, stub, options)
        with self._lock:
            if not self._accepting:  # stopped while this Register was dialling
                channel.close()
                return "kubelet is shutting down"
            old = self._endpoints.get(request.resource_name)
            self._endpoints[request.resource_name] = endpoint
            self.registrations += 1
            self._changed.notify_all()
        if old is not None:
            old.close()
        flags = (f"preferred allocation: {'yes' if options.get_preferred_allocation_available else 'no'}, "
                 f"pre-start: {'yes' if options.pre_start_required else 'no'}")
        replaced = old is not None and old.stub is not None
        self._narrate(f"{who}: OK ({flags})" + ("; replaces the previous registration" if replaced else ""))
        thread = threading.Thread(target=self._list_and_watch, args=(endpoint,),
                                  name=f"ListAndWatch {request.resource_name}", daemon=True)
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()
        return None

    def _list_and_watch(self, endpoint: Endpoint) -> None:
        reason = "the plugin closed it"
        try:
            stream = endpoint.stub.ListAndWatch(pb.Empty())
            endpoint.stream = stream
            with self._lock:
                if self._endpoints.get(endpoint.resource) is not endpoint:
                    stream.cancel()
            for response in stream:
                self._on_snapshot(endpoint, response)
        except grpc.RpcError as exc:
            reason = stream_end_reason(exc)
        except ValueError:  # channel closed under us
            reason = "connection closed"
        with self._lock:
            if self._endpoints.get(endpoint.resource) is not endpoint:
                return
            # PluginDisconnected: every device of the resource becomes unhealthy.
            for device_id in endpoint.devices:
                endpoint.devices[device_id] = UNHEALTHY
            endpoint.stopped_at = self._clock()
            self._write_checkpoint()
            n = len(endpoint.devices)
            devices = f"{'its' if n == 1 else 'all'} {plural(n, 'device')}"
            if not self._stream_end_explained:
                self._stream_end_explained = True
                line = (f"ListAndWatch {endpoint.resource}: stream ended ({reason}). As the "
                        f"kubelet does when a plugin goes away, it marks {devices} unhealthy "
                        "(allocatable 0) until the plugin registers again, and drops the "
                        f"resource after {duration_text(self.stop_grace_period)} without it. Normal "
                        "when a plugin stops or restarts")
            else:  # explained once in full; each reload ends every stream again
                line = (f"ListAndWatch {endpoint.resource}: stream ended ({reason}): {devices} "
                        "unhealthy (allocatable 0) until the plugin registers again")
            # Narrated before the waiters wake, so whoever waits for the change sees the line.
            self._narrate(line)
            self._changed.notify_all()

    def _on_snapshot(self, endpoint: Endpoint, response: pb.ListAndWatchResponse) -> None:
        devices = {}
        numa = {}
        for device in response.devices:
            devices[device.ID] = HEALTHY if device.health == HEALTHY else UNHEALTHY
            if device.HasField("topology") and device.topology.nodes:
                numa[device.ID] = device.topology.nodes[0].ID
        with self._lock:
            if self._endpoints.get(endpoint.resource) is not endpoint:
                return
            before = len(endpoint.healthy), len(endpoint.devices)
            was_unhealthy = {d for d, h in endpoint.devices.items() if h != HEALTHY}
            endpoint.devices = devices
            endpoint.numa = numa
            endpoint.snapshots += 1
            self._write_checkpoint()
            healthy = len(endpoint.healthy)
            newly_bad = {d for d, h in devices.items() if h != HEALTHY} - was_unhealthy
            hit = sorted({a.pod_name for a in self._allocations
                          if a.resource == endpoint.resource and newly_bad & set(a.device_ids)})
            change = ""
            if endpoint.snapshots > 1:
                change = f" (was {plural(before[1], 'device')}, {before[0]} healthy)"
            # Narrated before the waiters wake, so whoever waits for the change sees the lines.
            self._narrate(f"ListAndWatch {endpoint.resource}: {plural(len(devices), 'device')}, "
                          f"{healthy} healthy{change}")
            if hit and endpoint.snapshots > 1:
                self._narrate(
                    f"ListAndWatch {endpoint.resource}: {', '.join(sorted(newly_bad)[:4])}"
                    f"{' ...' if len(newly_bad) > 4 else ''} went unhealthy under "
                    f"{plural(len(hit), 'running pod')} ({', '.join(hit)}): the kubelet does not "
                    f"stop {'it' if len(hit) == 1 else 'them'}; the device leaves allocatable, "
                    "and the pod's status shows it only with the ResourceHealthStatus feature "
                    "gate (KEP-4680: alpha in 1.31, beta in 1.36)")
            self._changed.notify_all()

    # ---- node status and waits ------------------------------------------------------------

    def node_status(self) -> NodeStatus:
        """Capacity (all devices) and allocatable (healthy devices) per extended resource.

        A resource whose plugin stream ended keeps its capacity with allocatable 0; after
        ``stop_grace_period`` seconds without a new registration it is dropped.
        """
        with self._lock:
            now = self._clock()
            capacity, allocatable = {}, {}
            for name in sorted(self._endpoints):
                endpoint = self._endpoints[name]
                if (endpoint.stopped_at is not None
                        and now - endpoint.stopped_at > self.stop_grace_period):
                    continue
                capacity[name] = len(endpoint.devices)
                allocatable[name] = len(endpoint.healthy)
            return NodeStatus(capacity, allocatable)

    def devices(self, resource: str) -> dict[str, str]:
        """The latest snapshot of a resource: device ID -> "Healthy" / "Unhealthy" ({} if unknown)."""
        with self._lock:
            endpoint = self._endpoints.get(resource)
            return dict(endpoint.devices) if endpoint else {}

    def is_registered(self, resource: str) -> bool:
        """True while a plugin for ``resource`` is connected (registered, stream not ended)."""
        with self._lock:
            endpoint = self._endpoints.get(resource)
            return endpoint is not None and endpoint.stub is not None and endpoint.stopped_at is None

    def wait_for(self, predicate: Callable[[], bool], timeout: float, what: str = "condition") -> None:
        """Block until ``predicate()`` holds (re-checked after every change).

        Raises TimeoutError naming ``what`` and the node status after ``timeout`` seconds.
        """
        deadline = time.monotonic() + timeout
        with self._changed:
            while not predicate():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"timed out after {timeout:g} s waiting for {what}; "
                                       f"node status: {self.node_status()}")
                self._changed.wait(min(left, 0.05))

    def wait_for_resource(self, resource: str, count: int, timeout: float = 10.0, *,
                          capacity: int | None = None) -> NodeStatus:
        """Wait until ``resource`` has ``count`` allocatable devices (and ``capacity`` devices
        in all, when given) from a connected plugin; returns the node status then."""
        def ready() -> bool:
            status = self.node_status()
            return (self.is_registered(resource) and status.allocatable.get(resource) == count
                    and (capacity is None or status.capacity.get(resource) == capacity))

        what = f"{resource} allocatable={count}" + (f" capacity={capacity}" if capacity is not None else "")
        self.wait_for(ready, timeout, what)
        return self.node_status()

    def wait_for_registration(self, resource: str, timeout: float = 10.0, *, after: int = 0) -> None:
        """Wait until ``resource`` is registered and its first snapshot arrived; with ``after``,
        until the registration counter exceeds that value (a new registration happened)."""
        def ready() -> bool:
            with self._lock:
                endpoint = self._endpoints.get(resource)
                return (self.registrations > after and endpoint is not None
                        and endpoint.stopped_at is None and endpoint.snapshots > 0)

        self.wait_for(ready, timeout, f"registration of {resource}")

    # ---- devices for containers -----------------------------------------------------------

    def _active_pod_uids(self) -> set[str]:
        """The kubelet's ``activePods`` (caller holds the lock): none here; the kubelet that
        owns this device manager (:class:`~lab02_device_plugin.kubelet.lifecycle.MockKubelet`)
        supplies its pods."""
        return set()

    def _update_allocated_devices(self) -> None:
        """``UpdateAllocatedDevices`` (manager.go), run before each allocation: once the
        kubelet's sources are ready, free the devices of every pod in the checkpoint that is
        not an active pod of this node. A kubelet started afresh (``python -m
        lab02_device_plugin kubelet`` again on the same directory) restores the allocations
        of pods it was never told about; this is where they are freed."""
        if not self._sources_ready:
            return  # the kubelet returns early too: nothing is freed during its start
        with self._lock:
            active = self._active_pod_uids()
            stale = [a for a in self._allocations if a.pod_uid not in active]
            if not stale:
                return
            self._allocations = [a for a in self._allocations if a.pod_uid in active]
            self._write_checkpoint()
        freed: dict[str, list[str]] = {}
        for a in stale:
            freed.setdefault(a.pod_name, []).extend(a.device_ids)
        for name, ids in freed.items():
            self._narrate(f"kubelet: freed {', '.join(sorted(set(ids)))} of {name} (not a pod "
                          "of this node any more: the device manager frees it before the next "
                          "allocation, UpdateAllocatedDevices)")

    def _allocate_container(self, pod: Pod, container: Container, resource: str, needed: int,
                            reusable: list[str], new: list[Allocation], *,
                            running: bool = False) -> Allocation:
        """``devicesToAllocate`` followed by the Allocate RPC for one container and resource.

        The device manager's order (manager.go ``devicesToAllocate``): devices the container
        already has (a count change is an error); while the kubelet starts, a container found
        running keeps them without any check; then the resource must be registered, have a
        healthy device, and every device the container already has must still be healthy;
        only then are they reused (no RPC) or new ones picked.
        """
        who = f"{pod.name}/{container.name}"
        with self._lock:
            existing = next((a for a in self._allocations
                             if (a.pod_uid, a.container, a.resource) == (pod.uid, container.name, resource)),
                            None)
            if existing is not None and len(existing.device_ids) != needed:
                raise AdmissionFailure(
                    "UnexpectedAdmissionError",
                    unexpected(f"pod {pod.uid} container {container.name} changed request "
                                f"for resource {resource} from {len(existing.device_ids)} "
                                f"to {needed}"))
            if existing is not None and running and not self._sources_ready:
                self._narrate(f"Allocate {who} {resource}: container running, kubelet starting: "
                              f"keeps {', '.join(existing.device_ids)} (no check, no RPC)")
                return existing
            endpoint = self._endpoints.get(resource)
            expired = (endpoint is not None and endpoint.stopped_at is not None
                       and self._clock() - endpoint.stopped_at > self.stop_grace_period)
            if endpoint is None or expired:
                raise AdmissionFailure("UnexpectedAdmissionError", unexpected(
                    f"cannot allocate unregistered device {resource}"), retryable=True)
            healthy = endpoint.healthy
            if not healthy:
                raise AdmissionFailure("UnexpectedAdmissionError", unexpected(
                    f"no healthy devices present; cannot allocate unhealthy devices {resource}"),
                    retryable=True)
            if existing is not None and not set(existing.device_ids) <= set(healthy):
                raise AdmissionFailure("UnexpectedAdmissionError", unexpected(
                    f"previously allocated devices are no longer healthy; cannot allocate "
                    f"unhealthy devices {resource}"))
            if existing is not None:
                self._narrate(f"Allocate {who} {resource}: reusing "
                              f"{', '.join(existing.device_ids)} (already allocated; no RPC)")
                return existing
            picked: list[str] = []
            for device_id in reusable:
                if len(picked) < needed:
                    picked.append(device_id)
            in_use = {d for a in self._allocations if a.resource == resource for d in a.device_ids}
            in_use -= set(reusable)
            available = [d for d in sorted(healthy) if d not in in_use and d not in picked]
            if len(picked) < needed and len(available) < needed - len(picked):
                raise AdmissionFailure("UnexpectedAdmissionError", unexpected(
                    f"requested number of devices unavailable for {resource}. Requested: "
                    f"{needed - len(picked)}, Available: {len(available)}"))
            stub, options = endpoint.stub, endpoint.options
        if len(picked) < needed:
            if options.get_preferred_allocation_available:
                preferred = self._preferred(who, resource, stub, available, picked, needed)
                for device_id in preferred:
                    if device_id in available and device_id not in picked and len(picked) < needed:
                        picked.append(device_id)
            for device_id in available:
                if len(picked) >= needed:
                    break
                if device_id not in picked:
                    picked.append(device_id)
        # Allocate: exactly one RPC carrying one ContainerAllocateRequest.
        request = pb.AllocateRequest(container_requests=[pb.ContainerAllocateRequest(devices_ids=picked)])
        try:
            response = stub.Allocate(request)
        except grpc.RpcError as exc:
            self._narrate(f"Allocate {who} {resource}: {', '.join(picked)} -> error: {rpc_text(exc)}")
            raise AdmissionFailure("UnexpectedAdmissionError", unexpected(rpc_error_go(exc))) from exc
        if len(response.container_responses) == 0:
            raise AdmissionFailure("UnexpectedAdmissionError", unexpected(
                f"no containers return in allocation response {response}"))
        container_response = response.container_responses[0]
        allocation = Allocation(pod.uid, pod.name, container.name, resource, picked,
                                 container_response, {d: endpoint.numa.get(d, NODE_WITHOUT_TOPOLOGY) for d in picked})
        with self._lock:
            self._allocations.append(allocation)
            new.append(allocation)
        self._narrate(f"Allocate {who} {resource}: {', '.join(picked)} -> "
                      f"{response_text(container_response)}")
        return allocation

    def _preferred(self, who: str, resource: str, stub: pb_grpc.DevicePluginStub,
                   available: list[str], picked: list[str], needed: int) -> list[str]:
        request = pb.PreferredAllocationRequest(container_requests=[
            pb.ContainerPreferredAllocationRequest(
                available_deviceIDs=available + picked, must_include_deviceIDs=picked,
                allocation_size=needed)])
        try:
            response = stub.GetPreferredAllocation(request)
        except grpc.RpcError as exc:
            raise AdmissionFailure("UnexpectedAdmissionError", unexpected(
                f"device plugin GetPreferredAllocation rpc failed with err: {rpc_error_go(exc)}")) from exc
        answer = list(response.container_responses[0].deviceIDs) if response.container_responses else []
        usable = [d for d in answer if d in available or d in picked]
        note = "" if len(usable) >= needed else "; too few usable IDs, the kubelet fills in itself"
        self._narrate(f"GetPreferredAllocation {who} {resource}: size {needed} from "
                      f"{len(available) + len(picked)} available -> {', '.join(answer) or 'nothing'}{note}")
        return answer

    def _pre_start(self, pod: Pod, container: Container, devices: Mapping[str, list[str]]) -> None:
        for resource, device_ids in devices.items():
            with self._lock:
                endpoint = self._endpoints.get(resource)
            if endpoint is None or endpoint.stub is None or not endpoint.options.pre_start_required:
                continue
            try:
                endpoint.stub.PreStartContainer(pb.PreStartContainerRequest(devices_ids=device_ids),
                                                timeout=PRE_START_CONTAINER_TIMEOUT_S)
            except grpc.RpcError as exc:
                raise AdmissionFailure("CreateContainerError",
                                        f"PreStartContainer for {resource} failed: {rpc_text(exc)}") from exc
            self._narrate(f"PreStartContainer {pod.name}/{container.name} {resource}: "
                          f"{', '.join(device_ids)}: OK")

    def _run_options(self, pod_uid: str, container: str) -> RunContainerOptions:
        """Merge the container's Allocate responses, one per resource (caller holds the lock)."""
        return run_container_options(self._allocations, pod_uid, container, self._narrate)

    def allocations(self) -> dict[str, dict[str, dict[str, list[str]]]]:
        """Current allocations: pod name -> container -> resource -> device IDs (restored from
        the checkpoint after a restart)."""
        with self._lock:
            out: dict[str, dict[str, dict[str, list[str]]]] = {}
            for a in self._allocations:
                out.setdefault(a.pod_name, {}).setdefault(a.container, {})[a.resource] = list(a.device_ids)
            return out

    def run_options(self, pod_name: str, container: str) -> RunContainerOptions:
        """Merged runtime options of an allocated container (also after a restart)."""
        with self._lock:
            uid = next((a.pod_uid for a in self._allocations if a.pod_name == pod_name), None)
            if uid is None:
                raise InputError(f"pod {pod_name}: no devices allocated on this node")
            return self._run_options(uid, container)


    def _write_checkpoint(self) -> None:
        """Write the checkpoint atomically (caller holds the lock); see :mod:`.checkpoint`."""
        registered = {name: sorted(e.healthy) for name, e in sorted(self._endpoints.items())}
        write_checkpoint(self.checkpoint_path, self._allocations, registered)

    def _read_checkpoint(self) -> None:
        """``readCheckpoint``: restore allocations; every registered resource becomes a stopped
        endpoint with no devices (capacity 0 until its plugin registers again). A corrupt
        checkpoint is narrated and ignored, as the kubelet logs it and starts empty."""
        try:
            restored = read_checkpoint(self.checkpoint_path)
        except CorruptCheckpoint as exc:
            self._narrate(f"kubelet: checkpoint {self.checkpoint_path} is corrupt ({shorten(str(exc))}); "
                          f"starting with no allocations")
            return
        if restored is None:
            return
        allocations, registered = restored
        now = self._clock()
        with self._lock:
            self._allocations = allocations
            for resource in registered:
                self._endpoints[resource] = Endpoint(resource, "", None, None,
                                                      pb.DevicePluginOptions(), stopped_at=now)
        pods = sorted({a.pod_name for a in allocations})
        self._narrate(f"kubelet: checkpoint restored: {plural(len(allocations), 'allocation')}"
                      + (f" of {', '.join(pods)}" if pods else "")
                      + (f"; {', '.join(registered)} at 0 until re-registered" if registered else ""))
