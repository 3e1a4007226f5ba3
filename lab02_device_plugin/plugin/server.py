"""One gRPC DevicePlugin server per extended resource, on a unix socket, registered with the kubelet.

Lifecycle, as NVIDIA's ``internal/plugin/server.go``:

* :meth:`DevicePluginServer.serve` removes a stale socket, listens on
  ``<socket_dir>/nvidia-<name>.sock`` and calls GetDevicePluginOptions on it (waiting for
  ready) to prove it is up;
* :meth:`DevicePluginServer.register` dials the kubelet's socket and sends
  ``RegisterRequest{version: v1beta1, endpoint: <socket file name>, resource_name, options}``
  (the kubelet calls back GetDevicePluginOptions during Register, so we serve first);
* :meth:`DevicePluginServer.start` = serve + register (a failed register stops what began);
* :meth:`DevicePluginServer.stop` ends every ListAndWatch stream, stops gRPC and deletes
  the socket if it is still the one it created (same inode: a second plugin process that
  took over the path keeps its socket); ``start`` works again afterwards.

The server reaches devices only through an :class:`~.sharing.AdvertisedResource` (pure
data), the :class:`~.config.Config` and a :class:`~.health.DeviceHealth`; the Allocate and
preference logic are the pure functions of :mod:`.sharing`.

Example (a tiny node, no kubelet)::

    plan = advertise(inventory, config)
    server = DevicePluginServer(plan.resources[0], socket_dir, kubelet_socket=None,
                                config=config)
    server.start()        # serving on socket_dir/nvidia-gpu.sock, not registered
    ...
    server.stop()
"""

from __future__ import annotations

import os
import socket
import stat
import threading
import uuid as uuidlib
from collections.abc import Callable
from concurrent import futures
from pathlib import Path

import grpc

from lab02_device_plugin.api import deviceplugin_pb2 as pb
from lab02_device_plugin.api import deviceplugin_pb2_grpc as pb_grpc
from lab02_device_plugin.errors import InputError
from lab02_device_plugin.limits import (
    MAX_MESSAGE_BYTES, MAX_MESSAGE_CHARS, MAX_WATCH_STREAMS, UNARY_WORKERS, device_bytes, make_directory,
    short_repr, shorten,
)
from lab02_device_plugin.plugin import sharing
from lab02_device_plugin.plugin.config import Config
from lab02_device_plugin.plugin.health import DeviceHealth, HealthChange
from lab02_device_plugin.plugin.sharing import AdvertisedResource, AllocationError

#: The kubelet API version (``v1beta1.Version``); the only one a kubelet accepts.
API_VERSION = "v1beta1"
#: Where a real kubelet expects plugins (``DevicePluginPath``) and its own socket.
DEVICE_PLUGIN_PATH = "/var/lib/kubelet/device-plugins/"
KUBELET_SOCKET = DEVICE_PLUGIN_PATH + "kubelet.sock"
#: Longest device ID the API allows (``Device.ID``: "max length 63" in api.proto).
MAX_DEVICE_ID = 63


class RegistrationError(RuntimeError):
    """The kubelet refused the registration, or could not be reached."""


class KubeletUnavailable(RegistrationError):
    """Nothing answers on the kubelet's socket (not started yet, or restarting)."""


def snapshot_message(resource: AdvertisedResource,
                     unhealthy: frozenset[str] = frozenset()) -> pb.ListAndWatchResponse:
    """One ListAndWatch message: every device of ``resource`` with its health and NUMA node."""
    out = pb.ListAndWatchResponse()
    for d in sharing.list_and_watch_snapshot(resource, unhealthy):
        dev = out.devices.add(ID=d.id, health=d.health)
        if d.numa_node is not None:
            dev.topology.nodes.add(ID=d.numa_node)
    return out


def check_advertisable(resource: AdvertisedResource) -> None:
    """Refuse a resource a kubelet could not receive.

    Every device ID must be at most :data:`MAX_DEVICE_ID` (63) characters (api.proto), and
    the full ListAndWatch snapshot, every device unhealthy, must fit gRPC's default 4 MiB
    message limit (:data:`~.limits.MAX_MESSAGE_BYTES`, see :mod:`.limits`): above it the
    kubelet's stream fails with RESOURCE_EXHAUSTED and it advertises nothing, while the
    plugin believes it registered. Example: one GPU with 100000 time-slicing replicas is
    100000 IDs of about 45 characters, about 6.6 MB.

    Raises:
        InputError: naming the resource, the device (or count and size) and the limit.
    """
    for d in resource.devices:
        if len(d.id) > MAX_DEVICE_ID:
            raise InputError(f"{resource.name}: device ID {short_repr(d.id, 80)} is {len(d.id)} characters; "
                             f"expected at most {MAX_DEVICE_ID} (Device.ID in the device plugin API)")
    size = sum(device_bytes(len(d.id.encode()), d.numa_node) for d in resource.devices)
    if size > MAX_MESSAGE_BYTES:
        raise InputError(
            f"{resource.name}: {len(resource.devices)} devices make a ListAndWatch message of "
            f"{size} bytes; expected at most {MAX_MESSAGE_BYTES} (gRPC's default 4 MiB limit, "
            "which the kubelet keeps: it would drop the stream and advertise nothing). "
            "Use fewer replicas or GPUs")


def create_server(socket_path: str, servicer: pb_grpc.DevicePluginServicer,
                  max_workers: int = MAX_WATCH_STREAMS + UNARY_WORKERS,
                  shown_as: str | None = None) -> grpc.Server:
    """Build (not start) a gRPC server for ``servicer`` bound to a unix socket.

    ``shown_as`` is the path named in errors when ``socket_path`` is a private name that is
    renamed into place afterwards (see :meth:`DevicePluginServer.serve`).

    Raises:
        InputError: the socket cannot be bound (path too long, directory missing, ...).
    """
    shown = shown_as or socket_path
    if len(socket_path.encode()) > 107:  # sun_path is 108 bytes with the NUL
        raise InputError(f"{socket_path}: unix socket path is {len(socket_path.encode())} bytes; "
                         "expected at most 107 (use a shorter --socket-dir)")
    # Bind once ourselves first: a directory we cannot use (/proc, read-only) then gives one
    # clean error instead of gRPC's C-core logging its own bind failure to stderr.
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.bind(socket_path)
    except OSError as exc:
        raise InputError(f"{shown}: cannot listen on this unix socket ({exc.strerror}); "
                         "expected a writable device plugin directory") from None
    finally:
        probe.close()
    try:
        os.unlink(socket_path)
    except OSError:
        pass
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=max_workers,
                                                    thread_name_prefix="device-plugin"))
    pb_grpc.add_DevicePluginServicer_to_server(servicer, server)
    try:
        port = server.add_insecure_port("unix:" + socket_path)
    except RuntimeError:
        port = 0
    if port == 0:
        raise InputError(f"{shown}: cannot listen on this unix socket (directory missing "
                         "or not writable, or path longer than 107 bytes)")
    return server


def _remove_socket(path: Path, inode: int | None = None) -> None:
    """Delete a socket (or stale file) at ``path``; with ``inode``, only if it is that file."""
    try:
        st = path.lstat()
        if inode is not None and st.st_ino != inode:
            return  # another process re-created the path: its socket, not ours
        if stat.S_ISSOCK(st.st_mode) or stat.S_ISREG(st.st_mode):
            path.unlink()
    except FileNotFoundError:
        pass


def _abort(context: grpc.ServicerContext, code: grpc.StatusCode, message: str) -> None:
    """``context.abort`` with the details shortened to :data:`~.limits.MAX_MESSAGE_CHARS`
    (with the original length): a status echoing a 1 MB device ID would exceed the 8 KiB of
    metadata a gRPC client accepts, and the caller would see a transport error instead."""
    context.abort(code, shorten(message, MAX_MESSAGE_CHARS))


def check_request_ids(resource: AdvertisedResource, ids, what: str) -> str | None:
    """The error for the first device ID in a request longer than :data:`MAX_DEVICE_ID`
    characters (none can be ours), or None. Checked before any lookup or allocation."""
    for did in ids:
        if len(did) > MAX_DEVICE_ID:
            return (f"{what} for {resource.name}: device ID {short_repr(did, 40)} is longer than "
                    f"{MAX_DEVICE_ID} characters (Device.ID in the device plugin API)")
    return None


class _Servicer(pb_grpc.DevicePluginServicer):
    """The gRPC methods; all state lives in the owning :class:`DevicePluginServer`."""

    def __init__(self, plugin: DevicePluginServer) -> None:
        self._p = plugin

    def GetDevicePluginOptions(self, request, context):
        return self._p.options()

    def ListAndWatch(self, request, context):
        p = self._p
        refused = p._open_stream()
        if refused is not None:
            _abort(context, grpc.StatusCode.RESOURCE_EXHAUSTED, refused)
        try:
            gone = threading.Event()

            def on_done() -> None:
                gone.set()
                p._wake()

            context.add_callback(on_done)
            seen = -1
            while True:
                with p._cond:
                    while p._version == seen and not gone.is_set() and not p._stopping.is_set():
                        p._cond.wait(timeout=1.0)
                    if gone.is_set() or p._stopping.is_set():
                        return
                    seen = p._version
                yield p.snapshot()
        finally:
            p._close_stream()

    def GetPreferredAllocation(self, request, context):
        p = self._p
        out = pb.PreferredAllocationResponse()
        resource = p.resource
        policy = p.config.flags.plugin.shared_devices_allocation_policy
        for creq in request.container_requests:
            error = (check_request_ids(resource, creq.available_deviceIDs, "GetPreferredAllocation")
                     or check_request_ids(resource, creq.must_include_deviceIDs,
                                          "GetPreferredAllocation"))
            if error:
                _abort(context, grpc.StatusCode.INVALID_ARGUMENT, error)
            try:
                ids = sharing.preferred_allocation(resource, list(creq.available_deviceIDs),
                                                   list(creq.must_include_deviceIDs),
                                                   creq.allocation_size, policy)
            except AllocationError as exc:
                _abort(context, grpc.StatusCode.INVALID_ARGUMENT, str(exc))
            out.container_responses.add(deviceIDs=ids)
        return out

    def Allocate(self, request, context):
        p = self._p
        out = pb.AllocateResponse()
        for creq in request.container_requests:
            error = check_request_ids(p.resource, creq.devices_ids, "Allocate")
            if error:
                _abort(context, grpc.StatusCode.INVALID_ARGUMENT, error)
            try:
                alloc = sharing.allocate(p.resource, list(creq.devices_ids), p.config)
            except AllocationError as exc:
                _abort(context, grpc.StatusCode.INVALID_ARGUMENT, str(exc))
            out.container_responses.append(to_proto(alloc))
        with p._cond:
            p.allocate_calls += 1
        return out

    def PreStartContainer(self, request, context):
        p = self._p
        error = check_request_ids(p.resource, request.devices_ids, "PreStartContainer")
        if error:
            _abort(context, grpc.StatusCode.INVALID_ARGUMENT, error)
        for did in request.devices_ids:
            if p.resource.device(did) is None:
                _abort(context, grpc.StatusCode.INVALID_ARGUMENT,
                       f"PreStartContainer for {p.resource.name}: unknown device {short_repr(did)}")
        with p._cond:
            p.prestart_calls += 1
        return pb.PreStartContainerResponse()


def to_proto(alloc: sharing.ContainerAllocation) -> pb.ContainerAllocateResponse:
    """Convert a :class:`~.sharing.ContainerAllocation` to ``ContainerAllocateResponse``."""
    r = pb.ContainerAllocateResponse()
    r.envs.update(alloc.envs)
    r.annotations.update(alloc.annotations)
    for m in alloc.mounts:
        r.mounts.add(container_path=m.container_path, host_path=m.host_path, read_only=m.read_only)
    for d in alloc.devices:
        r.devices.add(container_path=d.container_path, host_path=d.host_path,
                      permissions=d.permissions)
    for name in alloc.cdi_devices:
        r.cdi_devices.add(name=name)
    return r


class DevicePluginServer:
    """The device plugin for one extended resource.

    Args:
        resource: what to advertise (from :func:`~.sharing.advertise`).
        socket_dir: the plugin directory (the kubelet's ``/var/lib/kubelet/device-plugins/``).
        kubelet_socket: the kubelet's Registration socket; None or "" skips registration
            (upstream ``--kubelet-socket ""``).
        config: the plugin config (Allocate strategies, allocation policy).
        health: shared health state; None means every device is always Healthy.
        pre_start_required: advertise ``pre_start_required`` (default False, as upstream).
        max_workers: gRPC threads kept for the unary calls (Allocate,
            GetPreferredAllocation, PreStartContainer, GetDevicePluginOptions).
        register_timeout: seconds to wait for the kubelet's Register answer.
        max_streams: most ListAndWatch streams open at once; one more is refused with
            RESOURCE_EXHAUSTED. The pool has ``max_streams + max_workers`` threads, so
            streams that are opened and never read cannot starve Allocate (see
            :data:`~.limits.MAX_WATCH_STREAMS`).
        log: called with one line when streams are refused (the 1st, 10th, 100th, ...).

    Counters ``allocate_calls``, ``prestart_calls``, ``open_streams`` and
    ``refused_streams`` and the ``registered`` flag are for tests and narration.
    """

    def __init__(self, resource: AdvertisedResource, socket_dir: str | os.PathLike,
                 kubelet_socket: str | os.PathLike | None = KUBELET_SOCKET,
                 config: Config | None = None, health: DeviceHealth | None = None,
                 pre_start_required: bool = False, max_workers: int = UNARY_WORKERS,
                 register_timeout: float = 10.0, max_streams: int = MAX_WATCH_STREAMS,
                 log: Callable[[str], None] | None = None) -> None:
        check_advertisable(resource)
        self.resource = resource
        self.socket_dir = Path(socket_dir).absolute()
        self.kubelet_socket = str(Path(kubelet_socket).absolute()) if kubelet_socket else None
        self.config = config or Config()
        self.health = health
        self.pre_start_required = pre_start_required
        self.max_workers = max_workers
        self.max_streams = max_streams
        self.register_timeout = register_timeout
        self._log = log or (lambda line: None)
        self._cond = threading.Condition()
        self._version = 0
        self._stopping = threading.Event()
        self._server: grpc.Server | None = None
        self._inode: int | None = None
        self.registered = False
        self.allocate_calls = 0
        self.prestart_calls = 0
        self.open_streams = 0
        self.refused_streams = 0

    # ------------------------------------------------------------------ state

    def _open_stream(self) -> str | None:
        """Count a new ListAndWatch stream; the refusal message when ``max_streams`` are
        already open (then nothing is counted)."""
        with self._cond:
            if self.open_streams < self.max_streams:
                self.open_streams += 1
                return None
            self.refused_streams += 1
            refused = self.refused_streams
        message = (f"ListAndWatch for {self.resource.name}: {self.max_streams} streams are "
                   f"already open; expected at most {self.max_streams} (a kubelet holds one)")
        if refused in (1, 10, 100, 1000, 10000) or refused % 100000 == 0:
            self._log(f"{message}: refused {refused} extra "
                      f"{'stream' if refused == 1 else 'streams'} so far")
        return message

    def _close_stream(self) -> None:
        with self._cond:
            self.open_streams -= 1

    def _pool_size(self) -> int:
        return self.max_streams + self.max_workers

    @property
    def socket_path(self) -> Path:
        """``<socket_dir>/nvidia-<name>.sock``."""
        return self.socket_dir / self.resource.socket_name

    @property
    def running(self) -> bool:
        """True between serve() and stop()."""
        return self._server is not None

    def options(self) -> pb.DevicePluginOptions:
        """The options sent in RegisterRequest and GetDevicePluginOptions."""
        return pb.DevicePluginOptions(pre_start_required=self.pre_start_required,
                                      get_preferred_allocation_available=True)

    def snapshot(self) -> pb.ListAndWatchResponse:
        """The full device list with current health (one ListAndWatch message)."""
        unhealthy = self.health.unhealthy() if self.health is not None else frozenset()
        return snapshot_message(self.resource, unhealthy)

    def _wake(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def notify(self, change: HealthChange | None = None) -> None:
        """Send a fresh snapshot on every open ListAndWatch stream (a health listener)."""
        with self._cond:
            self._version += 1
            self._cond.notify_all()

    # ------------------------------------------------------------------ lifecycle

    def serve(self) -> None:
        """Listen on the socket and start answering; returns once it answers an RPC.

        Raises:
            InputError: the directory is not usable (a regular file, not writable) or the
                socket cannot be bound.
            RuntimeError: the server does not answer within 5 s.
        """
        if self._server is not None:
            return
        final = str(self.socket_path)
        if len(final.encode()) > 107:  # before the directory is made: nothing left behind
            raise InputError(f"{final}: unix socket path is {len(final.encode())} bytes; "
                             "expected at most 107 (use a shorter --socket-dir)")
        make_directory(self.socket_dir, "device plugin directory")
        self._stopping.clear()
        # gRPC unlinks the path it bound when it stops, whoever's socket is there by then. So
        # bind a private name and rename it into place (atomic; replaces a stale socket): on
        # stop gRPC unlinks the private name, and we remove the real path only if it is still
        # our inode, so a second plugin process that took the path over keeps its socket.
        private = self.socket_dir / f".{os.getpid()}-{uuidlib.uuid4().hex[:8]}.sock"
        bind = str(private) if len(str(private).encode()) <= 107 else final
        server = create_server(bind, _Servicer(self), self._pool_size(), shown_as=final)
        server.start()
        if bind != final:
            try:
                os.replace(bind, final)
            except OSError as exc:  # e.g. a directory in the way
                server.stop(None)
                raise InputError(f"{final}: cannot put the plugin socket there "
                                 f"({exc.strerror}); expected a socket path that is free") from None
        self._server = server
        try:
            self._inode = self.socket_path.lstat().st_ino
        except OSError:
            self._inode = None
        if self.health is not None:
            self.health.add_listener(self.notify)
        # One RPC that waits for the channel (as the mock kubelet dials): cheaper to close
        # than grpc.channel_ready_future, which cost ~0.2 s per restart.
        with grpc.insecure_channel("unix:" + str(self.socket_path)) as channel:
            try:
                pb_grpc.DevicePluginStub(channel).GetDevicePluginOptions(
                    pb.Empty(), wait_for_ready=True, timeout=5)
            except grpc.RpcError as exc:
                self.stop()
                raise RuntimeError(f"{self.socket_path}: device plugin did not answer within 5 s "
                                   f"({exc.code().name})") from None

    def register(self) -> None:
        """Register with the kubelet (no-op when ``kubelet_socket`` is None).

        Raises:
            KubeletUnavailable: nothing answers on the kubelet socket.
            RegistrationError: the kubelet refused (its message included, shortened).
        """
        if not self.kubelet_socket:
            return
        request = pb.RegisterRequest(version=API_VERSION, endpoint=self.resource.socket_name,
                                     resource_name=self.resource.name, options=self.options())
        with grpc.insecure_channel("unix:" + self.kubelet_socket) as channel:
            stub = pb_grpc.RegistrationStub(channel)
            try:
                stub.Register(request, timeout=self.register_timeout, wait_for_ready=False)
            except grpc.RpcError as exc:
                if exc.code() == grpc.StatusCode.UNAVAILABLE:
                    raise KubeletUnavailable(f"no kubelet listening on {self.kubelet_socket}") from None
                raise RegistrationError(
                    f"registering {self.resource.name} with {self.kubelet_socket} failed: "
                    f"{exc.code().name}: {shorten(exc.details() or '', MAX_MESSAGE_CHARS)}") from None
        self.registered = True

    def start(self) -> None:
        """Serve, then register; if registration fails, stop again and re-raise."""
        self.serve()
        try:
            self.register()
        except BaseException:
            self.stop()
            raise

    def stop(self, grace: float | None = 0.2) -> None:
        """End the streams, stop gRPC (running calls get ``grace`` s) and delete the socket."""
        self._stopping.set()
        self._wake()
        server, self._server = self._server, None
        if self.health is not None:
            self.health.remove_listener(self.notify)
        if server is not None:
            server.stop(grace).wait(timeout=5 if grace is None else grace + 5)
            if self._inode is not None:
                _remove_socket(self.socket_path, self._inode)
        self._inode = None
        self.registered = False

    def wait_for_termination(self, timeout: float | None = None) -> bool:
        """Block until the server stops (``grpc.Server.wait_for_termination``)."""
        server = self._server
        return True if server is None else server.wait_for_termination(timeout)

    def __enter__(self) -> DevicePluginServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
