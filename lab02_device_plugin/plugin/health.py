"""Device health: pluggable sources of events, the Xid policy, and the health state.

* A *health source* produces :class:`HealthEvent` objects (an Xid on a GPU or MIG device,
  or a recovery) and hands them to a callback: :class:`SimulatedHealthSource` (Xid
  injection for labs and tests) and :class:`NvmlHealthSource` (NVML event sets, where a
  GPU exists) implement :class:`HealthSource`.
* :class:`HealthPolicy` decides which Xids matter: NVIDIA's plugin skips 13, 31, 43, 45,
  68 and 109 as application errors and reads ``DP_DISABLE_HEALTHCHECKS`` /
  ``DP_ENABLE_HEALTHCHECKS`` (NVIDIA internal/rm/health.go).
* :class:`DeviceHealth` keeps the set of unhealthy physical devices, applies
  :func:`next_health` to each event and tells its listeners (the plugin servers) at once,
  so ListAndWatch can send a new snapshot.

Deliberate deviation (an option): NVIDIA's plugin never marks a device Healthy again
without a restart. ``HealthPolicy(recovery=True)`` lets a recovery event do it; the
default ``recovery=False`` is the upstream behaviour.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from lab02_device_plugin.errors import InputError
from lab02_device_plugin.plugin.sharing import HEALTHY, UNHEALTHY

#: Xids NVIDIA's plugin treats as application errors and skips (v0.17.1+: 109 added).
APPLICATION_XIDS = frozenset({13, 31, 43, 45, 68, 109})


@dataclass(frozen=True)
class HealthEvent:
    """Something happened to a device.

    Attributes:
        device_id: a GPU UUID, a MIG UUID, or None for "every device" (upstream marks all
            GPUs unhealthy when NVML's event wait fails).
        xid: the Xid for an error event; None for a recovery or a non-Xid failure.
        recovered: True when the device is fine again.
        reason: free text for logs and the lab narration.
    """

    device_id: str | None
    xid: int | None = None
    recovered: bool = False
    reason: str = ""


@dataclass(frozen=True)
class HealthPolicy:
    """Which events change health.

    Attributes:
        disabled: health checks off (``DP_DISABLE_HEALTHCHECKS=all`` or ``xids``).
        ignored_xids: Xids skipped (the application Xids plus any listed to disable).
        forced_xids: Xids always acted on (``DP_ENABLE_HEALTHCHECKS``), even when disabled.
        recovery: let recovery events mark devices Healthy again (not upstream; see module).
    """

    disabled: bool = False
    ignored_xids: frozenset[int] = APPLICATION_XIDS
    forced_xids: frozenset[int] = frozenset()
    recovery: bool = False

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, recovery: bool = False) -> HealthPolicy:
        """Build from ``DP_DISABLE_HEALTHCHECKS`` and ``DP_ENABLE_HEALTHCHECKS``.

        ``DP_DISABLE_HEALTHCHECKS``: ``all`` or ``xids`` disables checks; otherwise a comma
        list of extra Xids to ignore. ``DP_ENABLE_HEALTHCHECKS``: comma list of Xids to act
        on regardless (it overrides the ignore list, even with ``all``).

        Raises:
            InputError: a list entry that is not an integer (naming the variable).
        """
        env = os.environ if env is None else env
        disabled = False
        ignored = set(APPLICATION_XIDS)
        raw = env.get("DP_DISABLE_HEALTHCHECKS", "").strip()
        if raw.lower() in ("all", "xids"):
            disabled = True
        elif raw:
            ignored |= _xid_list("DP_DISABLE_HEALTHCHECKS", raw)
        forced = _xid_list("DP_ENABLE_HEALTHCHECKS", env.get("DP_ENABLE_HEALTHCHECKS", ""))
        return cls(disabled, frozenset(ignored - forced), frozenset(forced), recovery)

    def acts_on(self, event: HealthEvent) -> bool:
        """True when the event may change health under this policy."""
        if event.recovered:
            return self.recovery
        if event.xid is None:
            return not self.disabled
        if event.xid in self.forced_xids:
            return True
        return not self.disabled and event.xid not in self.ignored_xids


def _xid_list(name: str, raw: str) -> set[int]:
    out = set()
    for part in raw.split(","):
        part = part.strip()
        if not part:
            continue
        if not part.isdigit():
            expected = ("'all', 'xids' or a comma list of Xid numbers to ignore"
                        if name == "DP_DISABLE_HEALTHCHECKS"
                        else "a comma list of Xid numbers always acted on")
            raise InputError(f"{name}: expected {expected}, got {part!r}")
        out.add(int(part))
    return out


def next_health(current: str, event: HealthEvent, policy: HealthPolicy) -> str:
    """The health rule: the state of one device after ``event``.

    A critical Xid (one the policy acts on) or a failure without Xid makes the device
    Unhealthy; a recovery makes it Healthy only when ``policy.recovery`` is set (NVIDIA's
    plugin never recovers without a restart); anything the policy ignores leaves it as is.
    """
    ### BEGIN SOLUTION
    if not policy.acts_on(event):
        return current
    return HEALTHY if event.recovered else UNHEALTHY
    ### END SOLUTION


HealthCallback = Callable[[HealthEvent], None]


class HealthSource(Protocol):
    """Where health events come from. ``start(callback)`` begins delivering, ``stop()`` ends."""

    def start(self, callback: HealthCallback) -> None:
        """Deliver every future event to ``callback`` (from any thread)."""

    def stop(self) -> None:
        """Stop delivering events; idempotent."""


class SimulatedHealthSource:
    """A health source driven by hand: inject Xids and recoveries (labs, tests, ``--xid-fifo``).

    Events injected before :meth:`start` are dropped (there is nobody to tell). Delivery is
    synchronous, on the injecting thread, so a test sees the effect when the call returns.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._callbacks: list[HealthCallback] = []

    def start(self, callback: HealthCallback) -> None:
        """Add a receiver (several plugin managers may share one source)."""
        with self._lock:
            self._callbacks.append(callback)

    def stop(self) -> None:
        """Forget every receiver."""
        with self._lock:
            self._callbacks.clear()

    def emit(self, event: HealthEvent) -> None:
        """Deliver ``event`` to every receiver."""
        with self._lock:
            callbacks = list(self._callbacks)
        for cb in callbacks:
            cb(event)

    def inject_xid(self, device_id: str | None, xid: int, reason: str = "") -> None:
        """Simulate an Xid on a GPU/MIG UUID (None: every device)."""
        self.emit(HealthEvent(device_id, int(xid), False, reason or f"Xid {xid} (simulated)"))

    def recover(self, device_id: str | None, reason: str = "") -> None:
        """Simulate a device becoming healthy again (acted on only with recovery enabled)."""
        self.emit(HealthEvent(device_id, None, True, reason or "recovered (simulated)"))


class NvmlHealthSource:
    """Xid events from NVML (``nvmlEventSetWait``), as NVIDIA's ``internal/rm/health.go``.

    Registers ``XidCriticalError`` events on every GPU of ``gpu_uuids`` and delivers each
    as a :class:`HealthEvent` on the GPU (or on the MIG device named by the event's GI/CI
    through ``mig_ids``). Only exercised where a GPU exists; tests use a fake ``nvml``.
    """

    def __init__(self, gpu_uuids: Iterable[str], nvml: Any = None,
                 mig_ids: Mapping[tuple[str, int, int], str] | None = None,
                 poll_ms: int = 500) -> None:
        self.gpu_uuids = list(gpu_uuids)
        self.mig_ids = dict(mig_ids or {})
        self.poll_ms = poll_ms
        self._nvml = nvml
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, callback: HealthCallback) -> None:
        """Initialise NVML, register events and start the waiting thread.

        Raises:
            InputError: NVML is missing or cannot initialise.
        """
        nvml = self._nvml
        if nvml is None:
            try:
                import pynvml as nvml  # type: ignore[import-not-found]
            except ImportError:
                raise InputError("NVML health checks need nvidia-ml-py (pip install "
                                 "'gpu-sharing-course[nvml]')") from None
            self._nvml = nvml
        try:
            nvml.nvmlInit()
        except Exception as exc:
            raise InputError(f"NVML: cannot initialise for health checks ({exc})") from None
        event_set = nvml.nvmlEventSetCreate()
        for uuid in self.gpu_uuids:
            try:
                handle = nvml.nvmlDeviceGetHandleByUUID(uuid)
                nvml.nvmlDeviceRegisterEvents(handle, nvml.nvmlEventTypeXidCriticalError, event_set)
            except Exception as exc:  # upstream: that device is marked unhealthy
                callback(HealthEvent(uuid, None, False, f"cannot register NVML events: {exc}"))
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, args=(event_set, callback),
                                        name="nvml-health", daemon=True)
        self._thread.start()

    def _run(self, event_set: Any, callback: HealthCallback) -> None:
        nvml = self._nvml
        timeout_cls = getattr(nvml, "NVMLError_Timeout", None)
        while not self._stop.is_set():
            try:
                data = nvml.nvmlEventSetWait(event_set, self.poll_ms)
            except Exception as exc:
                if timeout_cls is not None and isinstance(exc, timeout_cls):
                    continue
                callback(HealthEvent(None, None, False, f"NVML event wait failed: {exc}"))
                self._stop.wait(self.poll_ms / 1000)
                continue
            if data.eventType != nvml.nvmlEventTypeXidCriticalError:
                continue
            try:
                uuid = nvml.nvmlDeviceGetUUID(data.device)
                uuid = uuid.decode() if isinstance(uuid, bytes) else str(uuid)
            except Exception:
                callback(HealthEvent(None, int(data.eventData), False, "event for unknown device"))
                continue
            gi, ci = getattr(data, "gpuInstanceId", 0xFFFFFFFF), getattr(data, "computeInstanceId",
                                                                           0xFFFFFFFF)
            device_id = self.mig_ids.get((uuid, gi, ci), uuid)
            callback(HealthEvent(device_id, int(data.eventData), False, f"Xid {data.eventData}"))
        try:
            nvml.nvmlEventSetFree(event_set)
            nvml.nvmlShutdown()
        except Exception:
            pass

    def stop(self) -> None:
        """Stop the waiting thread (within ``poll_ms``)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None


@dataclass
class HealthChange:
    """What :meth:`DeviceHealth.apply` changed: physical IDs that turned unhealthy / healthy."""

    became_unhealthy: frozenset[str] = frozenset()
    became_healthy: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.became_unhealthy or self.became_healthy)


class DeviceHealth:
    """Health state of the physical devices of a node, shared by its plugin servers.

    Args:
        devices: ``{physical id: parent GPU UUID}`` for every GPU and MIG device (a GPU maps
            to itself). An event on a GPU also applies to its MIG devices.
        policy: the Xid policy (default: upstream, no recovery).

    Thread-safe. Listeners (``add_listener``) are called after each change, outside the lock.
    """

    def __init__(self, devices: Mapping[str, str], policy: HealthPolicy | None = None) -> None:
        self.policy = policy or HealthPolicy()
        self._parent = dict(devices)
        self._lock = threading.Lock()
        self._unhealthy: set[str] = set()
        self._listeners: list[Callable[[HealthChange], None]] = []
        self.events_seen = 0

    @classmethod
    def for_inventory(cls, inventory: Any, policy: HealthPolicy | None = None) -> DeviceHealth:
        """One entry per GPU and MIG device of an :class:`~.inventory.Inventory`."""
        devices: dict[str, str] = {}
        for g in inventory.gpus:
            devices[g.uuid] = g.uuid
            for m in g.mig_devices:
                devices[m.uuid] = g.uuid
        return cls(devices, policy)

    def inherit(self, other: DeviceHealth) -> None:
        """Copy the unhealthy devices of ``other`` that this state also knows (no listener call).

        Used when the inventory changes: a GPU that was broken stays broken.
        """
        bad = other.unhealthy()
        with self._lock:
            self._unhealthy |= {d for d in bad if d in self._parent}

    def add_listener(self, listener: Callable[[HealthChange], None]) -> None:
        """Call ``listener(change)`` after every change."""
        with self._lock:
            self._listeners.append(listener)

    def remove_listener(self, listener: Callable[[HealthChange], None]) -> None:
        """Stop calling ``listener``."""
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def unhealthy(self) -> frozenset[str]:
        """The physical IDs now unhealthy (a snapshot)."""
        with self._lock:
            return frozenset(self._unhealthy)

    def state(self, physical_id: str) -> str:
        """``Healthy`` or ``Unhealthy`` for one device."""
        with self._lock:
            return UNHEALTHY if physical_id in self._unhealthy else HEALTHY

    def _targets(self, device_id: str | None) -> list[str]:
        if device_id is None:
            return list(self._parent)
        if device_id not in self._parent:
            return []
        return [d for d, parent in self._parent.items() if d == device_id or
                (parent == device_id and d != parent)]

    def apply(self, event: HealthEvent) -> HealthChange:
        """Apply one event (the callback given to a health source); returns what changed.

        Unknown device IDs are ignored (an NVML event for a GPU this plugin does not serve).
        """
        with self._lock:
            self.events_seen += 1
            worse, better = set(), set()
            for d in self._targets(event.device_id):
                current = UNHEALTHY if d in self._unhealthy else HEALTHY
                new = next_health(current, event, self.policy)
                if new == current:
                    continue
                if new == UNHEALTHY:
                    self._unhealthy.add(d)
                    worse.add(d)
                else:
                    self._unhealthy.discard(d)
                    better.add(d)
            listeners = list(self._listeners)
        change = HealthChange(frozenset(worse), frozenset(better))
        if change:
            for listener in listeners:
                listener(change)
        return change

    def __call__(self, event: HealthEvent) -> None:
        self.apply(event)
