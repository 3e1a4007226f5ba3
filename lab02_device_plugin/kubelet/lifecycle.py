"""A mock kubelet that drives device plugins exactly as the kubelet's device manager does.

Faithful, not minimal: every behaviour below is the real kubelet's, from the Kubernetes
source (github.com/kubernetes/kubernetes, pkg/kubelet/cm/devicemanager/: manager.go,
endpoint.go, pod_devices.go, checkpoint/checkpoint.go, plugin/v1beta1/server.go and
handler.go; the API in staging/src/k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1/: api.proto,
constants.go; name rules in pkg/apis/core/v1/helper/helpers.go ``IsExtendedResourceName``).

* **Start.** Creates the plugin directory (mode 0750), deletes every socket in it except the
  checkpoint file ``kubelet_internal_checkpoint``, restores allocations from that checkpoint,
  then serves the ``v1beta1.Registration`` service on ``kubelet.sock``.
* **Register.** Checks, in the kubelet's order and with its error texts: the version (only
  ``v1beta1``), the extended resource name, and the endpoint (a socket file name in the plugin
  directory). It then dials the plugin's socket (blocking, 10 s) and calls
  ``GetDevicePluginOptions``; if either fails, Register fails. Only then does it answer, and it
  consumes ``ListAndWatch`` in a thread. Registering the same resource again replaces the old
  endpoint ("newest registration wins"), as in the kubelet's device manager up to Kubernetes
  1.36 (``PluginConnected`` keyed by resource name), which is what this mock models by
  default. Kubernetes PR #135437 (merged May 2026, after 1.36) keys the device manager's
  clients by resource *and* socket path; its follow-up PR #139338 (open) documents that a
  second plugin registering at the same (resource, socket path) while the first is still
  connected is the unsupported case and is refused. ``same_socket="reject"`` models that
  newer behaviour (from those PR threads; the merged code was not available to check):
  the second plugin's Register fails until the first one's stream has ended. A takeover at
  a *different* socket path is accepted in both modes.
* **ListAndWatch.** Each message is a full snapshot: capacity = all devices, allocatable = the
  ``"Healthy"`` ones (any other health string counts as unhealthy). When a stream ends, every
  device of that resource becomes unhealthy (allocatable 0, capacity kept); after the stop grace
  period (5 min) without a new registration the resource is dropped from the node status.
* **Admission** (:meth:`MockKubelet.admit_pod`). Extended resources must be whole numbers with
  requests equal to limits. Per container and resource: reuse devices the container already has
  (no RPC), take devices freed by init containers, otherwise pick from healthy minus allocated
  (never overcommitted); call ``GetPreferredAllocation`` when the plugin advertises it (the
  answer is intersected with what is available; a short or bad answer falls back silently);
  call ``Allocate`` exactly once with one ``ContainerAllocateRequest``; call
  ``PreStartContainer`` when the plugin requires it. The responses of all resources of a
  container are merged as the kubelet does for the runtime (:class:`RunContainerOptions`).
* **Checkpoint.** Allocations and registered devices are written as JSON shaped like the real
  ``kubelet_internal_checkpoint`` after every ListAndWatch update and allocation change.
* **Restart** (:meth:`MockKubelet.restart`). Stops everything, removes the sockets, re-creates
  ``kubelet.sock``: capacity and allocatable are 0 for every resource known from the checkpoint
  until its plugin registers again; allocations survive.

Every step is narrated for learners (:attr:`MockKubelet.narration`, and an ``on_event``
callback). The mock has no CPU or memory model: only extended resources are admitted.

Not modelled (and why it does not change what a learner sees here): the Topology Manager's
NUMA alignment (without a hint the kubelet treats every device as "no affinity", which is what
this mock does); the ResourceHealthStatus pod status; registration through the plugin watcher (plugins_registry). Devices of a deleted or
completed pod are freed at once, where the kubelet frees them at the start of the next
allocation; allocations restored from the checkpoint for pods this kubelet does not know are
freed, as in the kubelet, before its next allocation (``UpdateAllocatedDevices``).

**Scheduler or direct binding.** By default :meth:`MockKubelet.admit_pod` first does what the
scheduler's NodeResourcesFit filter does for this one node: a pod whose extended resource
requests exceed the node's allocatable minus what is already allocated is never bound; it
stays ``Pending`` with the scheduler's FailedScheduling message ``0/1 nodes are available:
1 Insufficient nvidia.com/gpu.`` and the kubelet is not involved. ``admit_pod(pod,
bound=True)`` models a pod bound to the node anyway (``spec.nodeName`` set by hand): the
kubelet's admission rejects it and it ends ``Failed`` with reason UnexpectedAdmissionError
(the device manager's message) or ``OutOf<resource>``.

Example::

    with MockKubelet(plugin_dir) as kubelet:
        ...  # start a device plugin that registers with plugin_dir/kubelet.sock
        kubelet.wait_for_resource("nvidia.com/gpu", 4, timeout=10)
        result = kubelet.admit_pod(Pod("pod-1", [Container("main", limits={"nvidia.com/gpu": 1})]))
        print(result.containers["main"].envs["NVIDIA_VISIBLE_DEVICES"])
        print(kubelet.node_status())
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass, field

import grpc

from lab02_device_plugin.api import deviceplugin_pb2_grpc as pb_grpc
from lab02_device_plugin.errors import InputError
from lab02_device_plugin.kubelet.manager import (
    DIAL_TIMEOUT_S, ENDPOINT_STOP_GRACE_PERIOD_S, MAX_CONCURRENT_DIALS, AdmissionFailure, Allocation,
    DeviceManager, RegistrationServicer, duration_text, plural,
)
from lab02_device_plugin.kubelet.pod import (
    ADMISSION_RETRY, FAILED, PENDING, RUNNING, SUCCEEDED, Pod, PodStatus, extended_limits,
    limits_text, validate_pod,
)
from lab02_device_plugin.kubelet.pod_devices import RunContainerOptions
from lab02_device_plugin.limits import make_directory, shorten


@dataclass
class AdmissionResult:
    """Outcome of :meth:`MockKubelet.admit_pod`.

    ``phase`` is ``"Running"`` when admitted; ``"Pending"`` with ``reason`` FailedScheduling
    when the scheduler would not bind it (not enough allocatable devices left on the node;
    the kubelet never saw it); ``"Failed"`` when the kubelet rejected a bound pod at
    admission (``reason`` UnexpectedAdmissionError when the device manager or a plugin call
    failed, ``OutOf<resource>`` for a resource no plugin provides). ``devices`` maps
    container -> resource -> device IDs; ``containers`` maps container -> merged runtime
    options.
    """

    pod: str
    admitted: bool
    phase: str
    reason: str = ""
    message: str = ""
    devices: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    containers: dict[str, RunContainerOptions] = field(default_factory=dict)



class MockKubelet(DeviceManager):
    """The kubelet's device manager, serving ``Registration`` on ``<plugin_dir>/kubelet.sock``.

    Args:
        plugin_dir: the device plugin directory (the real one is /var/lib/kubelet/device-plugins).
        on_event: called with each narration line as it happens (e.g. ``print``).
        dial_timeout: seconds to wait for a plugin's socket during Register (kubelet: 10).
        stop_grace_period: seconds a resource whose stream ended stays in the node status
            (kubelet: 300).
        clock: monotonic clock in seconds, injectable for tests of the grace period.
        retry_admission_after: off (None) by default, as in the kubelet. When set, a bound
            pod whose admission fails because its device plugin is not registered (``cannot
            allocate unregistered device``, ``no healthy devices present``: the window after
            a kubelet restart or node reboot) stays Pending (reason AdmissionRetry) and is
            admitted again after this many seconds, as the fix proposed in
            kubernetes/kubernetes#128043 for #125579 and #133382 describes.
        retry_admission_attempts: how many such retries (the proposal: 1); after the last
            one fails, the pod is Failed as without the option.
        max_dials: Registers dialling their plugin at once; one more is refused with
            RESOURCE_EXHAUSTED (the Registration server's pool has 4 threads more).
        same_socket: what a Register does when a plugin for the same resource and socket
            path is still connected: ``"replace"`` (default; kubelets up to 1.36: the newest
            registration wins) or ``"reject"`` (the newer kubelet of kubernetes PR
            #135437/#139338: refused until the first plugin's stream ends).

    Use as a context manager (``start`` on enter, ``stop`` on exit). Thread-safe: streams run
    on their own threads, admissions are serialised as in the kubelet's sync loop.

    Attributes:
        registrations: number of successful Register calls since construction (a counter that
            tests and the narration use to see a plugin register again).
        socket_path / checkpoint_path: ``<plugin_dir>/kubelet.sock`` and
            ``<plugin_dir>/kubelet_internal_checkpoint``.
    """

    def __init__(self, plugin_dir: str | os.PathLike, *, on_event: Callable[[str], None] | None = None,
                 dial_timeout: float = DIAL_TIMEOUT_S,
                 stop_grace_period: float = ENDPOINT_STOP_GRACE_PERIOD_S,
                 clock: Callable[[], float] = time.monotonic,
                 retry_admission_after: float | None = None,
                 retry_admission_attempts: int = 1, same_socket: str = "replace",
                 max_dials: int = MAX_CONCURRENT_DIALS) -> None:
        super().__init__(plugin_dir, on_event=on_event, dial_timeout=dial_timeout,
                         stop_grace_period=stop_grace_period, clock=clock, same_socket=same_socket,
                         max_dials=max_dials)
        self._admit_lock = threading.Lock()
        self._pods: dict[str, PodStatus] = {}  # UID -> status; survives restarts (API server)
        self._timers: list[threading.Timer] = []
        if retry_admission_after is not None and not (0 < retry_admission_after <= 3600):
            raise InputError(f"retry_admission_after: expected seconds above 0 and at most "
                             f"3600, got {retry_admission_after!r}")
        if not (isinstance(retry_admission_attempts, int) and 1 <= retry_admission_attempts <= 100):
            raise InputError(f"retry_admission_attempts: expected 1 to 100, got "
                             f"{retry_admission_attempts!r}")
        self.retry_admission_after = retry_admission_after
        self.retry_admission_attempts = retry_admission_attempts

    # ---- lifecycle ------------------------------------------------------------------------

    def __enter__(self) -> "MockKubelet":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self, *, reboot: bool = False) -> None:
        """Create the directory, remove stale sockets, restore the checkpoint, re-admit the
        pods bound to this node, then serve kubelet.sock.

        Re-admission (what a kubelet does with the pods the API server lists for its node)
        runs before any plugin can register, so it shows the restart window:

        * Succeeded and Failed pods are not admitted again (kubernetes PR #126343; before it,
          a completed pod turned into UnexpectedAdmissionError: kubernetes#117955);
        * a Running pod whose containers still run (a kubelet restart) keeps its checkpointed
          devices without an Allocate call: while the kubelet is starting ("sources not
          ready") the device manager skips containers it finds running (the fix of
          kubernetes#118559). Its app containers and sidecars (``restartPolicy: Always``
          init containers) run; an init container that completed does not, so it goes
          through the checks and, with no plugin registered yet, fails the pod
          (kubernetes#124345);
        * allocations in the checkpoint of pods that are not bound to this node (this
          kubelet was started afresh and never told of them) are freed before the first
          allocation once it has started (``UpdateAllocatedDevices``);
        * after a node reboot (``reboot=True``) no container runs, so every pod goes through
          the device manager's checks, and with no plugin registered yet it ends Failed
          (UnexpectedAdmissionError), not retried (kubernetes#125579) unless the retry
          option is on.

        Raises RuntimeError when already running and InputError when the directory cannot be
        created or the socket cannot be bound.
        """
        if self._server is not None:
            raise RuntimeError("MockKubelet is already running")
        make_directory(self.plugin_dir, "plugin directory", mode=0o750)
        # Bind once ourselves first: an unusable directory (/proc, read-only) then gives one
        # clean error instead of gRPC's C-core logging its own bind failure to stderr.
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        probe_path = self.plugin_dir / f".{os.getpid()}.s"  # no longer than kubelet.sock
        try:
            probe.bind(str(probe_path))
        except OSError as exc:
            raise InputError(f"plugin directory {self.plugin_dir}: cannot create a unix socket "
                             f"in it ({exc.strerror}); expected a writable directory") from None
        finally:
            probe.close()
        probe_path.unlink(missing_ok=True)
        removed = self._cleanup_plugin_directory()
        self._narrate(f"kubelet: device plugin directory {self.plugin_dir}: removed "
                      f"{plural(len(removed), 'socket')}" + (f" ({', '.join(removed)})" if removed else ""))
        self._read_checkpoint()
        self._readmit(reboot)
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=self.max_dials + 4,
                                                        thread_name_prefix="kubelet"))
        pb_grpc.add_RegistrationServicer_to_server(RegistrationServicer(self), server)
        try:
            port = server.add_insecure_port(f"unix://{self.socket_path}")
        except RuntimeError as exc:
            raise InputError(f"cannot listen on {self.socket_path}: {exc}") from exc
        if port == 0:
            raise InputError(f"cannot listen on {self.socket_path}")
        with self._lock:
            self._accepting = True
        server.start()
        self._server = server
        self._narrate(f"kubelet: serving Registration on {self.socket_path}")

    def stop(self, grace: float | None = 0.5) -> None:
        """Stop serving, close every plugin connection and join the stream threads. The
        checkpoint stays on disk; kubelet.sock is removed; the pods bound to the node stay
        known (they live in the API server) and are re-admitted by :meth:`start`. Pending
        admission retries are cancelled. Safe to call twice."""
        with self._lock:
            self._accepting = False
            timers, self._timers = self._timers, []
        for timer in timers:
            timer.cancel()
        server, self._server = self._server, None
        if server is not None:
            server.stop(grace).wait(timeout=5)
        with self._lock:
            endpoints = list(self._endpoints.values())
            self._endpoints.clear()
            self._allocations.clear()
        for endpoint in endpoints:
            endpoint.close()
        for thread in self._threads:
            thread.join(timeout=5)
        self._threads.clear()
        try:
            if self.socket_path.is_socket():
                self.socket_path.unlink()
        except OSError:
            pass
        if server is not None:
            self._narrate("kubelet: stopped")

    def restart(self, *, reboot: bool = False) -> None:
        """Restart as a kubelet does: stop, remove every socket in the directory, read the
        checkpoint (allocations survive; every resource it names has capacity 0 until its
        plugin registers again), re-admit the pods bound to the node (see :meth:`start`) and
        serve a new kubelet.sock.

        Args:
            reboot: a node reboot rather than a kubelet restart: no container survives, so
                Running pods are admitted again through the device manager's checks.
        """
        self._narrate("kubelet: node rebooting" if reboot else "kubelet: restarting")
        self.stop()
        self.start(reboot=reboot)

    # ---- admission ------------------------------------------------------------------------

    def admit_pod(self, pod: Pod, *, bound: bool = False) -> AdmissionResult:
        """Schedule ``pod`` on this node and admit it: allocate its extended resources through
        the device plugins.

        With ``bound=False`` (a pod from the scheduler) a pod that does not fit the node's
        allocatable stays Pending (FailedScheduling, see the module docstring) and no plugin
        is called. With ``bound=True`` (``spec.nodeName`` set, no scheduler; or a pod bound
        before the node status showed the restart) it goes straight to the kubelet's
        admission, which fails it (phase Failed) when devices are short.

        A pod already Running is admitted again through the device manager's checks (its
        devices are reused without an Allocate call if they are still healthy and their
        plugin is registered, else it fails: ``previously allocated devices are no longer
        healthy``); a Succeeded or Failed pod is never admitted again (its result is
        returned unchanged).

        Returns an :class:`AdmissionResult`. Raises InputError for a pod the API server would
        refuse (fractional quantity, requests different from limits, duplicate names). A pod
        that is not admitted keeps no devices (allocation is all or nothing).
        """
        validate_pod(pod)
        with self._admit_lock:
            return self._admit(pod, bound)

    def _unschedulable(self, pod: Pod) -> str | None:
        """NodeResourcesFit for this node: the scheduler's message when an extended resource
        request exceeds allocatable minus allocated, else None. The pod's request of a
        resource is, as the scheduler computes it with sidecars (KEP-753), the larger of the
        app containers plus all sidecars and, for each other init container, itself plus the
        sidecars started before it; allocated is the devices already given out for that
        resource to the pods bound to this node."""
        status = self.node_status()
        short = []
        for resource in sorted({r for c in pod.init_containers + pod.containers
                                for r in extended_limits(c)}):
            sidecars = 0
            inits = 0
            for c in pod.init_containers:
                n = extended_limits(c).get(resource, 0)
                if c.sidecar:
                    sidecars += n
                else:
                    inits = max(inits, sidecars + n)
            apps = sidecars + sum(extended_limits(c).get(resource, 0) for c in pod.containers)
            request = max(apps, inits)
            with self._lock:
                active = self._active_pod_uids()
                used = len({d for a in self._allocations if a.resource == resource
                            and a.pod_uid in active for d in a.device_ids})
            if request > 0 and request > status.allocatable.get(resource, 0) - used:
                short.append(f"1 Insufficient {resource}")
        return f"0/1 nodes are available: {', '.join(short)}." if short else None

    def _admit(self, pod: Pod, bound: bool = False, *, running: bool = False,
               retry: bool = False) -> AdmissionResult:
        """Admission of one pod (caller holds the admission lock).

        ``running``: its containers still run (re-admission after a kubelet restart);
        ``retry``: an attempt of the retry option.
        """
        with self._lock:
            record = self._pods.get(pod.uid)
            now = self._clock()
            # Resources the device manager knows: registered (and not dropped after the stop
            # grace period) or still holding allocations.
            known = {name for name, e in self._endpoints.items()
                     if e.stopped_at is None or now - e.stopped_at <= self.stop_grace_period}
            known |= {a.resource for a in self._allocations}
        if record is not None and record.pod.name != pod.name:
            raise InputError(f"pod {pod.name}: UID {pod.uid} already belongs to pod {record.pod.name}")
        if record is not None and record.terminal:
            self._narrate(f"Admit {pod.name}: not admitted again: the pod is {record.phase}"
                          + (f" ({record.reason})" if record.reason else ""))
            return AdmissionResult(pod.name, False, record.phase, record.reason, record.message)
        if record is not None and record.phase == PENDING and record.reason == ADMISSION_RETRY \
                and not retry:
            return AdmissionResult(pod.name, False, PENDING, ADMISSION_RETRY, record.message)
        already_bound = record is not None and record.bound
        if not bound and not already_bound:
            message = self._unschedulable(pod)
            if message is not None:
                self._narrate(f"Schedule {pod.name}: not bound, Pending (FailedScheduling): {message}")
                with self._lock:
                    self._pods[pod.uid] = PodStatus(pod, PENDING, "FailedScheduling", message)
                return AdmissionResult(pod.name, False, PENDING, "FailedScheduling", message)
        with self._lock:
            if record is None or record.phase != RUNNING:
                retries = (record.retries_left if record is not None and record.reason == ADMISSION_RETRY
                           else self.retry_admission_attempts)
                record = PodStatus(pod, PENDING, "", "", True, retries)
                self._pods[pod.uid] = record
        self._narrate(f"Admit {pod.name}: " + ", ".join(
            f"{c.name} {limits_text(c)}" for c in pod.init_containers + pod.containers)
            + (" (containers still running)" if running else "")
            + (" (retry)" if retry else ""))
        # Resources no device plugin ever registered fail the node's predicate check.
        for container in pod.init_containers + pod.containers:
            for resource, quantity in extended_limits(container).items():
                if resource not in known and quantity > 0:
                    message = (f"Node didn't have enough resource: {resource}, requested: "
                               f"{quantity}, used: 0, capacity: 0")
                    return self._reject(pod, f"OutOf{resource}", message, FAILED)
        self._update_allocated_devices()
        new: list[Allocation] = []
        reusable: dict[str, list[str]] = {}
        result = AdmissionResult(pod.name, True, RUNNING)
        try:
            for index, container in enumerate(pod.init_containers + pod.containers):
                # An init container that ran to completion is not running after a restart:
                # the device manager checks it (kubernetes#124345); a sidecar still runs.
                finished = index < len(pod.init_containers) and not container.sidecar
                for resource, needed in extended_limits(container).items():
                    if needed == 0:
                        continue
                    if running and finished:
                        self._narrate(
                            f"Allocate {pod.name}/{container.name} {resource}: an init "
                            "container that has completed is not running, so the starting "
                            "kubelet checks it as a new container (kubernetes#124345)")
                    allocation = self._allocate_container(pod, container, resource, needed,
                                                          reusable.get(resource, []), new,
                                                          running=running and not finished)
                    devs = allocation.device_ids
                    result.devices.setdefault(container.name, {})[resource] = list(devs)
                    if finished:
                        # Devices of init containers can be reused by the app containers.
                        pool = reusable.setdefault(resource, [])
                        pool.extend(d for d in devs if d not in pool)
                    else:  # app containers and sidecars keep theirs
                        reusable[resource] = [d for d in reusable.get(resource, []) if d not in devs]
            if not running:
                for container in pod.init_containers + pod.containers:
                    self._pre_start(pod, container, result.devices.get(container.name, {}))
        except AdmissionFailure as failure:
            with self._lock:
                for allocation in new:
                    if allocation in self._allocations:
                        self._allocations.remove(allocation)
                self._write_checkpoint()
            return self._reject(pod, failure.reason, failure.message, failure.phase,
                                retryable=failure.retryable)
        with self._lock:
            self._pods[pod.uid] = PodStatus(pod, RUNNING, "", "", True, record.retries_left)
            self._write_checkpoint()
            for container in pod.init_containers + pod.containers:
                result.containers[container.name] = self._run_options(pod.uid, container.name)
        self._narrate(f"Admit {pod.name}: admitted, Running")
        return result

    def _reject(self, pod: Pod, reason: str, message: str, phase: str,
                retryable: bool = False) -> AdmissionResult:
        """Fail the pod's admission, or, with the retry option and a plugin not (yet)
        registered, keep it Pending and admit it again later."""
        with self._lock:
            record = self._pods.get(pod.uid)
            retries = record.retries_left if record is not None else 0
            retry = retryable and self.retry_admission_after is not None and retries > 0 \
                and self._accepting_or_starting()
            if retry:
                self._pods[pod.uid] = PodStatus(pod, PENDING, ADMISSION_RETRY, message, True,
                                                retries - 1)
                timer = threading.Timer(self.retry_admission_after, self._retry_admission,
                                        args=(pod.uid,))
                timer.daemon = True
                self._timers = [t for t in self._timers if t.is_alive()] + [timer]
            else:
                self._pods[pod.uid] = PodStatus(pod, phase, reason, message, True, 0)
                # A rejected pod is terminated: devices it held before (a checkpointed pod
                # after a reboot) are freed too (the kubelet frees them at its next admission).
                held = [a for a in self._allocations if a.pod_uid == pod.uid]
                if held:
                    self._allocations = [a for a in self._allocations if a.pod_uid != pod.uid]
                    self._write_checkpoint()
        if retry:
            self._narrate(f"Admit {pod.name}: not admitted yet, Pending: {message}; retrying in "
                          f"{duration_text(self.retry_admission_after)} (the retry option, as "
                          "proposed in kubernetes#128043; today's kubelet fails the pod here)")
            timer.start()
            return AdmissionResult(pod.name, False, PENDING, ADMISSION_RETRY, message)
        note = ""
        if retryable:
            note = ("; the kubelet never retries it (kubernetes#125579, #133382): its "
                    "controller must create a new pod")
        self._narrate(f"Admit {pod.name}: not admitted, {phase} ({reason}): {message}{note}")
        return AdmissionResult(pod.name, False, phase, reason, message)

    def _active_pod_uids(self) -> set[str]:
        """UIDs of the pods bound to this node that have not terminated (the kubelet's
        ``activePods``; caller holds the lock)."""
        return {uid for uid, r in self._pods.items() if r.bound and not r.terminal}

    def _accepting_or_starting(self) -> bool:
        return self._accepting or not self._sources_ready

    def _retry_admission(self, uid: str) -> None:
        """The retry option's timer: admit a pod left Pending (AdmissionRetry) again."""
        with self._lock:
            record = self._pods.get(uid)
            if (record is None or record.phase != PENDING or record.reason != ADMISSION_RETRY
                    or not self._accepting):
                return
        with self._admit_lock:
            self._admit(record.pod, True, retry=True)

    def _readmit(self, reboot: bool) -> None:
        """Admit again every pod bound to this node, as a starting kubelet does (see
        :meth:`start`); runs before kubelet.sock is served, so no plugin has registered."""
        with self._lock:
            records = [r for r in self._pods.values() if r.bound]
        if not records:
            return
        self._sources_ready = False
        try:
            self._narrate(f"kubelet: admitting again the {plural(len(records), 'pod')} bound to "
                          "this node, before any device plugin has registered again"
                          + (" (after a node reboot no container is running)" if reboot else ""))
            with self._admit_lock:
                for record in records:
                    if record.terminal:
                        self._narrate(
                            f"Admit {record.pod.name}: {record.phase}, not admitted again "
                            "(terminal pods are skipped since kubernetes PR #126343; older "
                            "kubelets failed them with UnexpectedAdmissionError, "
                            "kubernetes#117955)")
                        continue
                    running = record.phase == RUNNING and not reboot
                    self._admit(record.pod, True, running=running)
        finally:
            self._sources_ready = True

    def _find_uid(self, name: str, namespace: str) -> str | None:
        """UID of the pod called ``namespace/name`` (caller holds the lock)."""
        uid = next((u for u, r in self._pods.items()
                    if r.pod.name == name and r.pod.namespace == namespace), None)
        if uid is None:
            uid = next((a.pod_uid for a in self._allocations if a.pod_name == name), None)
        return uid

    def delete_pod(self, name: str, namespace: str = "default") -> list[str]:
        """Delete a pod and free its devices. Returns the freed device IDs (sorted).

        Raises InputError when no pod has that name on this node.
        """
        with self._admit_lock, self._lock:
            uid = self._find_uid(name, namespace)
            if uid is None:
                raise InputError(f"pod {namespace}/{shorten(name)}: no such pod on this node")
            freed = sorted({d for a in self._allocations if a.pod_uid == uid for d in a.device_ids})
            self._allocations = [a for a in self._allocations if a.pod_uid != uid]
            self._pods.pop(uid, None)
            self._write_checkpoint()
        self._narrate(f"Delete {name}: freed {', '.join(freed) or 'no devices'}")
        return freed

    def complete_pod(self, name: str, exit_code: int = 0, namespace: str = "default") -> PodStatus:
        """The containers of a Running pod exit: Succeeded (reason Completed) for exit code 0,
        else Failed (reason Error). Its devices are freed (the kubelet frees them at the
        next admission; here at once) and the pod is never admitted again, also after a
        restart.

        Raises InputError when the pod is unknown or not Running.
        """
        with self._admit_lock, self._lock:
            uid = self._find_uid(name, namespace)
            record = self._pods.get(uid) if uid is not None else None
            if record is None or record.phase != RUNNING:
                phase = record.phase if record is not None else "unknown"
                raise InputError(f"pod {namespace}/{shorten(name)}: expected a Running pod, got "
                                 f"{phase}")
            freed = sorted({d for a in self._allocations if a.pod_uid == uid for d in a.device_ids})
            self._allocations = [a for a in self._allocations if a.pod_uid != uid]
            if exit_code == 0:
                done = PodStatus(record.pod, SUCCEEDED, "Completed", "", True)
            else:
                done = PodStatus(record.pod, FAILED, "Error", f"exit code {exit_code}", True)
            self._pods[uid] = done
            self._write_checkpoint()
        self._narrate(f"Pod {name}: {done.phase} ({done.reason}); freed "
                      f"{', '.join(freed) or 'no devices'}")
        return done

    def pod_status(self, name: str, namespace: str = "default") -> PodStatus:
        """The status of a pod handed to this node (a copy). Raises InputError if unknown."""
        with self._lock:
            uid = next((u for u, r in self._pods.items()
                        if r.pod.name == name and r.pod.namespace == namespace), None)
            if uid is None:
                raise InputError(f"pod {namespace}/{shorten(name)}: no such pod on this node")
            r = self._pods[uid]
            return PodStatus(r.pod, r.phase, r.reason, r.message, r.bound, r.retries_left)

    def pods(self) -> dict[str, tuple[str, str]]:
        """Every pod handed to this node: name -> (phase, reason), in the order they came."""
        with self._lock:
            return {r.pod.name: (r.phase, r.reason) for r in self._pods.values()}
