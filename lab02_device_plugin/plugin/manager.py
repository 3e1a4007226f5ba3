"""Run one :class:`~.server.DevicePluginServer` per advertised resource, and keep them registered.

:class:`PluginManager` is NVIDIA's ``cmd/nvidia-device-plugin/main.go`` loop as an object:

* :meth:`~PluginManager.start` computes the resources (:func:`~.sharing.advertise`), starts
  the health source, then serves and registers every plugin;
* **restarts, as upstream.** NVIDIA's loop re-reads its config and re-enumerates the devices
  on every restart of its plugins (``startPlugins`` loads the config each time), and it
  restarts them on SIGHUP and when ``kubelet.sock`` is created (a kubelet restart, which
  also deletes every plugin socket). :meth:`~PluginManager.reload` does the same: it calls
  the ``loader`` (config + inventory from their files, or NVML), stops every plugin (the
  servers of resources that no longer exist stay stopped), starts one per resource of the
  new plan and registers them again;
* **watching.** A watcher thread polls every ``watch_interval`` seconds: the kubelet socket
  (inode and mtime: re-created means a kubelet restart), this process's own sockets (a
  vanished one while kubelet.sock exists also means a kubelet restart), and each file of
  ``watch_files`` (stat, then a content hash, so a ``touch`` or a ConfigMap update with the
  same bytes does nothing): a changed file reloads, as the config-manager sidecar of
  NVIDIA's Helm chart achieves by writing the file and signalling the plugin. A file is
  read only once its content has stayed the same for ``settle`` seconds (and two polls),
  and an empty file is taken as a write in progress: a config rewritten in place (``cat >
  config.yaml``: truncated, then written) is never applied half-written;
* **only what changed restarts.** A reload that finds config, inventory and plan all equal
  (a comment-only edit, or the SIGHUP that a config-manager sends after writing the file the
  watcher already read) restarts nothing and says so; a kubelet restart always re-registers;
* **a bad reload keeps what serves.** A config or inventory that fails validation is
  reported in one line and the previous plugins keep serving (upstream exits instead, and
  its DaemonSet restarts it, again and again);
* **a kubelet that is not there yet** is one line, then the plugins keep serving and
  register when ``kubelet.sock`` appears (no raw gRPC error);
* :meth:`~PluginManager.stop` stops the watcher, the plugins (sockets deleted) and the
  health source.

Health state (:class:`~.health.DeviceHealth`) survives restarts; upstream rebuilds it (and
so forgets unhealthy devices) when it restarts its plugins.
"""

from __future__ import annotations

import hashlib
import math
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from lab02_device_plugin.errors import InputError
from lab02_device_plugin.limits import MAX_INVENTORY_BYTES, shorten
from lab02_device_plugin.plugin.config import Config, config_changes
from lab02_device_plugin.plugin.health import DeviceHealth, HealthPolicy, HealthSource
from lab02_device_plugin.plugin.inventory import Inventory
from lab02_device_plugin.plugin.server import (
    DEVICE_PLUGIN_PATH, KUBELET_SOCKET, DevicePluginServer, KubeletUnavailable, RegistrationError,
    check_advertisable,
)
from lab02_device_plugin.plugin.sharing import AdvertisedResource, ResourcePlan, advertise

#: ``loader() -> (inventory, config)``: what a reload reads (files, NVML); raises InputError.
Loader = Callable[[], tuple[Inventory, Config]]


def count(n: int, noun: str) -> str:
    """``"1 device"``, ``"2 devices"``, ``"0 devices"`` (English plural by ``s``)."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _devices(res: AdvertisedResource) -> str:
    return count(len(res.devices), "device")


def _checked_plan(inventory: Inventory, config: Config) -> ResourcePlan:
    plan = advertise(inventory, config)
    for res in plan.resources:
        check_advertisable(res)
    return plan


def plan_changes(old: ResourcePlan, new: ResourcePlan) -> list[str]:
    """What a reload changes, one phrase per resource, sorted by name: ``nvidia.com/gpu 4 ->
    8 devices``, ``nvidia.com/mig-1g.10gb removed (7 devices)``, ``nvidia.com/mig-3g.40gb
    added (2 devices)``. Resources whose devices are identical are not listed."""
    before = {r.name: r for r in old.resources}
    after = {r.name: r for r in new.resources}
    out = []
    for name in sorted(set(before) | set(after)):
        a, b = before.get(name), after.get(name)
        if a is None:
            out.append(f"{name} added ({_devices(b)})")
        elif b is None:
            out.append(f"{name} removed ({_devices(a)})")
        elif a.devices != b.devices:
            if len(a.devices) == len(b.devices):
                out.append(f"{name}: {_devices(b)}, other IDs")
            else:
                out.append(f"{name} {len(a.devices)} -> {_devices(b)}")
    return out


def _socket_identity(path: str | None) -> tuple[int, int] | None:
    if not path:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns)


def _file_signature(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def _file_digest(path: Path) -> str | None:
    try:
        with path.open("rb") as fh:
            return hashlib.sha256(fh.read(MAX_INVENTORY_BYTES + 1)).hexdigest()
    except OSError:
        return None


#: SHA-256 of an empty file: a watched file with this content is a write in progress.
_EMPTY_DIGEST = hashlib.sha256(b"").hexdigest()


class _Watched:
    """What the watcher knows of one file: its stat signature and content hash at the last
    poll, how many polls in a row have seen that content, and the content last read."""

    def __init__(self, path: Path) -> None:
        self.signature = _file_signature(path)
        self.digest = _file_digest(path)
        self.applied = self.digest
        self.polls = 0


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
        watch_interval: seconds between looks at the kubelet socket and the watched files.
        settle: seconds a changed watched file must keep the same content (and at least two
            polls) before it is read: a file written in several steps is read once, whole.
        retry_interval: seconds between registration retries while the kubelet refuses or
            its socket does not answer.
        log: called with one line per lifecycle step (default: silent).
        loader: ``() -> (inventory, config)``, called by :meth:`reload` (SIGHUP, a kubelet
            restart, a changed watched file) to re-read both, as upstream does on every
            restart; None: reloads restart the plugins with what they have.
        watch_files: files whose change triggers :meth:`reload` (the config, the inventory).
        health_source_factory: ``inventory -> HealthSource`` for sources tied to the devices
            (NVML); called at each reload that changes the inventory. Without it the same
            ``health_source`` is restarted.

    Raises:
        InputError: the inventory and config do not fit (e.g. single-strategy rules), or a
            resource could not reach a kubelet (a device ID over 63 characters, more device
            IDs than one ListAndWatch message holds: see :mod:`.limits`).
    """

    def __init__(self, inventory: Inventory, config: Config | None = None,
                 socket_dir: str | os.PathLike = DEVICE_PLUGIN_PATH,
                 kubelet_socket: str | os.PathLike | None = ...,  # type: ignore[assignment]
                 health_source: HealthSource | None = None,
                 health_policy: HealthPolicy | None = None,
                 pre_start_required: bool = False, watch_interval: float = 0.05,
                 retry_interval: float = 5.0, settle: float = 0.2, log: Callable[[str], None] | None = None,
                 loader: Loader | None = None, watch_files: Sequence[str | os.PathLike] = (),
                 health_source_factory: Callable[[Inventory], HealthSource] | None = None) -> None:
        self.inventory = inventory
        self.config = config or Config()
        self.socket_dir = Path(socket_dir)
        if kubelet_socket is ...:
            kubelet_socket = (self.socket_dir / "kubelet.sock" if str(socket_dir) != DEVICE_PLUGIN_PATH
                              else KUBELET_SOCKET)
        self.kubelet_socket = str(kubelet_socket) if kubelet_socket else None
        self.health_source = health_source
        self.health_source_factory = health_source_factory
        self.health = DeviceHealth.for_inventory(inventory, health_policy or HealthPolicy.from_env())
        self.pre_start_required = pre_start_required
        self.watch_interval = watch_interval
        self.retry_interval = retry_interval
        #: Polls that must see a changed file's new content before it is read.
        self.settle_polls = max(2, math.ceil(settle / watch_interval - 1e-9))
        self.loader = loader
        self.watch_files = [Path(f) for f in watch_files]
        self._log = log or (lambda line: None)
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._watcher: threading.Thread | None = None
        self._last_identity: tuple[int, int] | None = None
        self._last_attempt = 0.0
        self._files: dict[Path, _Watched] = {}
        self._kubelet_absent_said = False
        self.plan: ResourcePlan = _checked_plan(inventory, self.config)
        self.servers: dict[str, DevicePluginServer] = {}
        self.registrations = 0
        self.restarts = 0
        self.reloads = 0
        self.failed_reloads = 0
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
        """Start health, serve and register all plugins, then watch the kubelet socket and
        the watched files.

        A kubelet that is not there yet is not an error: one line says so, the plugins keep
        serving and register when its socket appears.
        """
        with self._lock:
            self._stop.clear()
            if self.health_source is not None:
                self.health_source.start(self.health.apply)
            self._last_identity = _socket_identity(self.kubelet_socket)
            self._remember_files()
            try:
                self._start_plugins(initial=True)
            except BaseException:  # e.g. a socket that cannot be bound: undo what began
                self._stop_plugins()
                if self.health_source is not None:
                    self.health_source.stop()
                raise
            self._watcher = threading.Thread(target=self._watch, name="kubelet-watch", daemon=True)
            self._watcher.start()

    def _start_plugins(self, initial: bool = False) -> None:
        self._last_attempt = time.monotonic()
        self.servers = {}
        absent: list[AdvertisedResource] = []
        for res in self.plan.resources:
            srv = DevicePluginServer(res, self.socket_dir, self.kubelet_socket, self.config,
                                     self.health, self.pre_start_required, log=self._log)
            self.servers[res.name] = srv
            try:
                srv.serve()
            except (InputError, RuntimeError) as exc:
                if initial:
                    raise
                # A restart racing a kubelet's start (which deletes every socket): try again
                # after retry_interval rather than lose the watcher.
                self.last_error = str(exc)
                self._log(f"{res.name}: {shorten(str(exc), 300)}; retrying in "
                          f"{self.retry_interval:g} s")
                continue
            try:
                srv.register()
            except KubeletUnavailable:
                absent.append(res)
                continue
            except RegistrationError as exc:
                self.last_error = str(exc)
                self._log(f"{res.name}: {shorten(str(exc), 300)}; retrying in "
                          f"{self.retry_interval:g} s or when {self.kubelet_socket} is re-created")
                continue
            if srv.registered:
                self.registrations += 1
                self._kubelet_absent_said = False
                self._log(f"{res.name}: serving {_devices(res)} on {srv.socket_path}, "
                          f"registered with {self.kubelet_socket}")
            else:
                self._log(f"{res.name}: serving {_devices(res)} on {srv.socket_path}"
                          + ("" if self.kubelet_socket is None else " (not registered)"))
        if absent and not self._kubelet_absent_said:
            self._kubelet_absent_said = True
            self.last_error = f"no kubelet listening on {self.kubelet_socket}"
            served = ", ".join(f"{r.name} ({_devices(r)})" for r in absent)
            self._log(f"kubelet not running yet (nothing listens on {self.kubelet_socket}); "
                      f"serving {served}; registering when the kubelet starts")

    def _stop_plugins(self) -> None:
        for srv in self.servers.values():
            srv.stop()

    def restart(self, reason: str = "restart requested") -> None:
        """Stop and start every plugin (re-serve, re-register) with the current plan."""
        with self._lock:
            if self._stop.is_set():
                return
            self._log(f"restarting plugins: {reason}")
            self.restarts += 1
            self._stop_plugins()
            self._start_plugins()

    def reload(self, reason: str = "reload requested", *, restart_anyway: bool = True,
               restart_unchanged: bool = True) -> bool:
        """Re-read config and inventory (the ``loader``), then restart every plugin with them.

        As NVIDIA's plugin on SIGHUP or a kubelet restart: the servers of resources that no
        longer exist stop (the kubelet then marks their devices unhealthy, and drops them
        after its 5-minute grace period), the new resources get servers, and all register.
        One line says what changed: the resources (``nvidia.com/gpu 4 -> 8 devices``) and
        the config keys (``sharing.timeSlicing.failRequestsGreaterThanOne false -> true``).

        Args:
            reason: what triggered it, for the narration ("SIGHUP").
            restart_anyway: when the loader fails, still restart with the previous plan
                (a kubelet restart needs it: the sockets are gone); False (a changed file)
                leaves the plugins untouched.
            restart_unchanged: restart even when config, inventory and plan are all equal
                (a kubelet restart); False (SIGHUP, a changed file) keeps them serving.

        Returns:
            True when the new config and inventory were applied (or equal); False when
            they failed validation (the previous ones keep serving; :attr:`last_error` says
            why).
        """
        with self._lock:
            if self._stop.is_set():
                return False
            self._remember_files()
            if self.loader is None:
                self.restart(reason)
                return True
            try:
                inventory, config = self.loader()
                plan = _checked_plan(inventory, config)
            except InputError as exc:
                self.failed_reloads += 1
                self.last_error = str(exc)
                self._log(f"reload ({reason}) refused: {shorten(str(exc), 300)}; still serving "
                          f"the previous config ({', '.join(self.plan.names()) or 'nothing'})")
                if restart_anyway:
                    self.restart(reason)
                return False
            changes = self._changes(inventory, config, plan)
            if not changes and not restart_unchanged:
                self._log(f"reload ({reason}): config and inventory unchanged; the plugins "
                          "keep serving")
                return True
            self._apply(inventory, config, plan)
            self.reloads += 1
            self._log(f"reload ({reason}): " + ("; ".join(changes) or
                                                "config and inventory unchanged"))
            self.restart(reason)
            return True

    def _changes(self, inventory: Inventory, config: Config, plan: ResourcePlan) -> list[str]:
        """What a new inventory/config/plan changes, in words (empty: nothing at all)."""
        changes = plan_changes(self.plan, plan) + config_changes(self.config, config)
        if not changes and inventory != self.inventory:
            changes.append("inventory changed (the same devices)")
        if not changes and config != self.config:
            changes.append("config changed (no key that the plugin acts on)")
        return changes

    def _apply(self, inventory: Inventory, config: Config, plan: ResourcePlan) -> None:
        """Adopt a new inventory/config (caller holds the lock; plugins restart after)."""
        inventory_changed = inventory != self.inventory
        self.inventory, self.config, self.plan = inventory, config, plan
        if not inventory_changed:
            return
        old = self.health
        self.health = DeviceHealth.for_inventory(inventory, old.policy)
        self.health.inherit(old)  # what is still known to be broken stays broken
        if self.health_source is not None:
            self.health_source.stop()
        if self.health_source_factory is not None:
            self.health_source = self.health_source_factory(inventory)
        if self.health_source is not None:
            self.health_source.start(self.health.apply)

    def set_inventory(self, inventory: Inventory) -> None:
        """Replace the inventory (a GPU appeared or was lost) and restart the plugins.

        Raises:
            InputError: the new inventory does not fit the config; the old plugins keep running.
        """
        self.set_node(inventory=inventory, reason="inventory changed")

    def set_node(self, inventory: Inventory | None = None, config: Config | None = None,
                 reason: str = "node changed") -> None:
        """Replace the inventory and/or the config (None keeps it) and restart the plugins,
        as a reload with the loader's answer given directly (notebooks, tests).

        Raises:
            InputError: the pair does not fit; the old plugins keep running untouched.
        """
        inventory = self.inventory if inventory is None else inventory
        config = self.config if config is None else config
        plan = _checked_plan(inventory, config)
        with self._lock:
            changes = self._changes(inventory, config, plan)
            self._apply(inventory, config, plan)
            self._log(f"reload ({reason}): " + ("; ".join(changes) or
                                                "config and inventory unchanged"))
        self.restart(reason)

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

    # ------------------------------------------------------------------ watching

    def _remember_files(self) -> None:
        """Take the watched files as read now (a reload reads them all)."""
        self._files = {p: _Watched(p) for p in self.watch_files}

    def _changed_file(self) -> Path | None:
        """The first watched file whose content differs from the one last read and has
        stayed the same for :attr:`settle_polls` polls; None while there is none.

        A missing file (a ConfigMap update swaps a symlink) and an empty one (``cat >
        file`` truncates before it writes) are writes in progress: never read here."""
        for p in self.watch_files:
            w = self._files.setdefault(p, _Watched(p))
            signature = _file_signature(p)
            if signature is None:
                continue
            if signature != w.signature:
                w.signature = signature
                digest = _file_digest(p)
                if digest != w.digest:
                    w.digest, w.polls = digest, 0
            w.polls += 1
            if w.digest == w.applied or w.polls < self.settle_polls:
                continue
            if w.digest == _EMPTY_DIGEST:
                w.applied = w.digest  # said once; the content that follows is read
                self._log(f"{p} is empty: taken as a write in progress, not applied (the "
                          "previous config keeps serving; SIGHUP would apply it as it is)")
                continue
            return p
        return None

    def _own_socket_removed(self) -> bool:
        with self._lock:
            return any(s.running and not s.socket_path.exists() for s in self.servers.values())

    def _watch(self) -> None:
        while not self._stop.wait(self.watch_interval):
            try:
                self._watch_once()
            except Exception as exc:  # noqa: BLE001 - the watcher must outlive any one failure
                self.last_error = str(exc)
                self._log(f"watcher: {type(exc).__name__}: {shorten(str(exc), 300)}; still "
                          "watching")

    def _watch_once(self) -> None:
        ident = _socket_identity(self.kubelet_socket)
        changed = ident is not None and ident != self._last_identity
        self._last_identity = ident
        if changed:
            self.reload(f"{self.kubelet_socket} was re-created (kubelet restart)")
            return
        if ident is not None and self._own_socket_removed():
            # A kubelet restart removes every socket in the directory. Polling can miss
            # the new kubelet.sock when the file system reuses the inode within one
            # timestamp tick, so a vanished plugin socket is the second sign.
            self.reload("a plugin socket was removed (kubelet restart)")
            return
        path = self._changed_file()
        if path is not None:
            self.reload(f"{path} changed", restart_anyway=False, restart_unchanged=False)
            return
        if (ident is not None and not self.registered and self.kubelet_socket
                and time.monotonic() - self._last_attempt >= self.retry_interval):
            self._retry_registration()

    def _retry_registration(self) -> None:
        """Register the plugins that are not registered yet (servers keep serving)."""
        with self._lock:
            if self._stop.is_set():
                return
            self._last_attempt = time.monotonic()
            for name, srv in self.servers.items():
                if not srv.running:
                    self.restart("registration retry")
                    return
                if srv.registered:
                    continue
                try:
                    srv.register()
                except KubeletUnavailable:
                    continue
                except RegistrationError as exc:
                    if str(exc) != self.last_error:
                        self._log(f"{name}: {shorten(str(exc), 300)}; retrying in "
                                  f"{self.retry_interval:g} s")
                    self.last_error = str(exc)
                    continue
                self.registrations += 1
                self._kubelet_absent_said = False
                self._log(f"{name}: registered with {self.kubelet_socket}")

    def __enter__(self) -> PluginManager:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
