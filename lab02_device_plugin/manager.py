"""Run one :class:`~.server.DevicePluginServer` per advertised resource, and keep them registered.

:class:`PluginManager` is NVIDIA's ``main.go`` loop as an object:

* :meth:`~PluginManager.start` computes the resources (:func:`~.sharing.advertise`), starts
  the health source, then serves and registers every plugin;
* a watcher thread polls the kubelet socket every ``watch_interval`` seconds (inode and
  mtime); when ``kubelet.sock`` is re-created (a kubelet restart, which also deletes every
  plugin socket), or when one of its own sockets has vanished while kubelet.sock exists,
  it stops and restarts all plugins, which registers them again. Until the
  kubelet answers, registration is retried every ``retry_interval`` seconds;
* :meth:`~PluginManager.stop` stops the watcher, the plugins (sockets deleted) and the
  health source.

Health state (:class:`~.health.DeviceHealth`) survives plugin restarts; upstream rebuilds
it (and so forgets unhealthy devices) when it restarts its plugins.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from lab02_device_plugin.config import Config
from lab02_device_plugin.health import DeviceHealth, HealthPolicy, HealthSource
from lab02_device_plugin.inventory import Inventory
from lab02_device_plugin.server import (
    DEVICE_PLUGIN_PATH, KUBELET_SOCKET, DevicePluginServer, RegistrationError, check_advertisable,
)
from lab02_device_plugin.sharing import ResourcePlan, advertise


def _devices(res) -> str:
    n = len(res.devices)
    return f"{n} device" + ("" if n == 1 else "s")


def _checked_plan(inventory: Inventory, config: Config) -> ResourcePlan:
    plan = advertise(inventory, config)
    for res in plan.resources:
        check_advertisable(res)
    return plan


def _socket_identity(path: str | None) -> tuple[int, int] | None:
    if not path:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns)


class PluginManager:
    """All device plugins of one node.

    Args:
        inventory: the node's GPUs.
        config: the plugin config (default: upstream defaults).
        socket_dir: plugin directory (default ``/var/lib/kubelet/device-plugins/``).
        kubelet_socket: kubelet Registration socket (default ``<socket_dir>/kubelet.sock``
            when ``socket_dir`` is given, else the real path); None or "" skips registration.
        health_source: where health events come from (e.g. a
            :class:`~.health.SimulatedHealthSource`); None: no events.
        health_policy: Xid policy and recovery (default from the environment, no recovery).
        pre_start_required: advertise ``pre_start_required``.
        watch_interval: seconds between looks at the kubelet socket.
        retry_interval: seconds between registration retries while the kubelet is away.
        log: called with one line per lifecycle step (default: silent).

    Raises:
        InputError: the inventory and config do not fit (e.g. single-strategy rules), or a
            resource could not reach a kubelet (a device ID over 63 characters, a
            ListAndWatch snapshot over gRPC's 4 MiB limit: see
            :func:`~.server.check_advertisable`).
    """

    def __init__(self, inventory: Inventory, config: Config | None = None,
                 socket_dir: str | os.PathLike = DEVICE_PLUGIN_PATH,
                 kubelet_socket: str | os.PathLike | None = ...,  # type: ignore[assignment]
                 health_source: HealthSource | None = None,
                 health_policy: HealthPolicy | None = None,
                 pre_start_required: bool = False, watch_interval: float = 0.05,
                 retry_interval: float = 5.0, log: Callable[[str], None] | None = None) -> None:
        self.inventory = inventory
        self.config = config or Config()
        self.socket_dir = Path(socket_dir)
        if kubelet_socket is ...:
            kubelet_socket = (self.socket_dir / "kubelet.sock" if str(socket_dir) != DEVICE_PLUGIN_PATH
                              else KUBELET_SOCKET)
        self.kubelet_socket = str(kubelet_socket) if kubelet_socket else None
        self.health_source = health_source
        self.health = DeviceHealth.for_inventory(inventory, health_policy or HealthPolicy.from_env())
        self.pre_start_required = pre_start_required
        self.watch_interval = watch_interval
        self.retry_interval = retry_interval
        self._log = log or (lambda line: None)
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._watcher: threading.Thread | None = None
        self._last_identity: tuple[int, int] | None = None
        self._last_attempt = 0.0
        self.plan: ResourcePlan = _checked_plan(inventory, self.config)
        self.servers: dict[str, DevicePluginServer] = {}
        self.registrations = 0
        self.restarts = 0
        self.last_error: str | None = None

    # ------------------------------------------------------------------ queries

    @property
    def registered(self) -> bool:
        """True when every plugin is serving and registered (or registration is off)."""
        with self._lock:
            return bool(self.servers) and all(
                s.running and (s.registered or not self.kubelet_socket) for s in self.servers.values())

    def server(self, resource_name: str) -> DevicePluginServer:
        """The plugin of one resource (KeyError naming the known ones)."""
        with self._lock:
            try:
                return self.servers[resource_name]
            except KeyError:
                raise KeyError(f"no plugin for {resource_name!r}; have {', '.join(self.servers)}") from None

    def wait_registered(self, timeout: float = 5.0, registrations: int | None = None) -> bool:
        """Wait until :attr:`registered` (and, if given, ``registrations`` reached)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.registered and (registrations is None or self.registrations >= registrations):
                return True
            time.sleep(0.01)
        return False

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Start health, serve and register all plugins, then watch the kubelet socket.

        A kubelet that is not there yet is not an error: the plugins are retried when its
        socket appears (or every ``retry_interval``).
        """
        with self._lock:
            self._stop.clear()
            if self.health_source is not None:
                self.health_source.start(self.health.apply)
            self._last_identity = _socket_identity(self.kubelet_socket)
            try:
                self._start_plugins()
            except BaseException:  # e.g. a socket that cannot be bound: undo what began
                self._stop_plugins()
                if self.health_source is not None:
                    self.health_source.stop()
                raise
            self._watcher = threading.Thread(target=self._watch, name="kubelet-watch", daemon=True)
            self._watcher.start()

    def _start_plugins(self) -> None:
        self._last_attempt = time.monotonic()
        self.servers = {}
        for res in self.plan.resources:
            srv = DevicePluginServer(res, self.socket_dir, self.kubelet_socket, self.config,
                                     self.health, self.pre_start_required)
            self.servers[res.name] = srv
            try:
                srv.start()
            except RegistrationError as exc:
                self.last_error = str(exc)
                self._log(f"{res.name}: {exc}; retrying when {self.kubelet_socket} is re-created "
                          f"or in {self.retry_interval:g} s")
                continue
            if srv.registered:
                self.registrations += 1
                self._log(f"{res.name}: serving {_devices(res)} on {srv.socket_path}, "
                          f"registered with {self.kubelet_socket}")
            else:
                self._log(f"{res.name}: serving {_devices(res)} on {srv.socket_path}"
                          + ("" if self.kubelet_socket is None else " (not registered)"))

    def _stop_plugins(self) -> None:
        for srv in self.servers.values():
            srv.stop()

    def restart(self, reason: str = "restart requested") -> None:
        """Stop and start every plugin (re-serve, re-register), as upstream on SIGHUP."""
        with self._lock:
            if self._stop.is_set():
                return
            self._log(f"restarting plugins: {reason}")
            self.restarts += 1
            self._stop_plugins()
            self._start_plugins()

    def set_inventory(self, inventory: Inventory) -> None:
        """Replace the inventory (a GPU appeared or was lost) and restart the plugins.

        Raises:
            InputError: the new inventory does not fit the config; the old plugins keep running.
        """
        plan = _checked_plan(inventory, self.config)
        with self._lock:
            self.inventory = inventory
            self.plan = plan
            old = self.health
            self.health = DeviceHealth.for_inventory(inventory, old.policy)
            self.health.inherit(old)  # what is still known to be broken stays broken
            if self.health_source is not None:
                self.health_source.stop()
                self.health_source.start(self.health.apply)
        self.restart("inventory changed")

    def stop(self) -> None:
        """Stop watching, stop every plugin (sockets deleted) and the health source."""
        self._stop.set()
        watcher, self._watcher = self._watcher, None
        if watcher is not None and watcher is not threading.current_thread():
            watcher.join(timeout=5)
        with self._lock:
            self._stop_plugins()
            if self.health_source is not None:
                self.health_source.stop()

    def _own_socket_removed(self) -> bool:
        with self._lock:
            return any(s.running and not s.socket_path.exists() for s in self.servers.values())

    def _watch(self) -> None:
        while not self._stop.wait(self.watch_interval):
            ident = _socket_identity(self.kubelet_socket)
            changed = ident is not None and ident != self._last_identity
            self._last_identity = ident
            if changed:
                self.restart(f"{self.kubelet_socket} was re-created")
            elif ident is not None and self._own_socket_removed():
                # A kubelet restart removes every socket in the directory. Polling can miss
                # the new kubelet.sock when the file system reuses the inode within one
                # timestamp tick, so a vanished plugin socket is the second sign.
                self.restart("a plugin socket was removed (kubelet restart)")
            elif (ident is not None and not self.registered and self.kubelet_socket
                  and time.monotonic() - self._last_attempt >= self.retry_interval):
                self.restart("registration retry")

    def __enter__(self) -> PluginManager:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
