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

import base64
import binascii
import json
import math
import os
import re
import socket
import stat
import threading
import time
import uuid
import zlib
from collections.abc import Callable, Iterable, Mapping
from concurrent import futures
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import grpc

from lab02_device_plugin.api import deviceplugin_pb2 as pb
from lab02_device_plugin.api import deviceplugin_pb2_grpc as pb_grpc
from lab02_device_plugin.errors import InputError
from lab02_device_plugin.limits import MAX_INVENTORY_BYTES, MAX_MESSAGE_CHARS, short_repr, shorten

# Constants of k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1 (constants.go) and the device
# manager (types.go, endpoint.go) in the Kubernetes source.
VERSION = "v1beta1"
SUPPORTED_VERSIONS = ("v1beta1",)
HEALTHY = "Healthy"
UNHEALTHY = "Unhealthy"
DEVICE_PLUGIN_PATH = "/var/lib/kubelet/device-plugins/"
KUBELET_SOCKET_NAME = "kubelet.sock"
CHECKPOINT_NAME = "kubelet_internal_checkpoint"
DIAL_TIMEOUT_S = 10.0
PRE_START_CONTAINER_TIMEOUT_S = 30.0
ENDPOINT_STOP_GRACE_PERIOD_S = 300.0
#: What a Register at the (resource, socket path) of a connected plugin does: "replace"
#: (kubelets up to 1.36) or "reject" (kubernetes PR #135437 and its follow-up #139338).
SAME_SOCKET_MODES = ("replace", "reject")
#: Registers that may dial their plugin at once (each waits up to DIAL_TIMEOUT_S): ten
#: plugins whose sockets never answer no longer hold up an eleventh that does.
MAX_CONCURRENT_DIALS = 32
#: Devices with no NUMA topology are checkpointed under this node (pod_devices.go).
NODE_WITHOUT_TOPOLOGY = -1
#: Longest narration line (characters): 64 allocated GPU UUIDs (41 characters each) fit.
MAX_NARRATION_CHARS = 4000
#: Longest path a unix socket address can hold on Linux (sun_path is 108 bytes, NUL included).
MAX_UNIX_SOCKET_PATH = 107

_QUALIFIED_NAME_PART = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


# --------------------------------------------------------------------------------------------
# Pure helpers: validation the kubelet performs (testable without sockets)
# --------------------------------------------------------------------------------------------

def is_qualified_name(name: str) -> bool:
    """Kubernetes ``IsQualifiedName``: optional DNS-1123 subdomain prefix (at most 253
    characters) and ``/``, then a name part of at most 63 characters matching
    ``[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`` (apimachinery validation.go)."""
    parts = name.split("/")
    if len(parts) == 1:
        prefix, part = "", parts[0]
    elif len(parts) == 2:
        prefix, part = parts
        if not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN.match(prefix):
            return False
    else:
        return False
    return 0 < len(part) <= 63 and bool(_QUALIFIED_NAME_PART.match(part))


def is_extended_resource_name(name: str) -> bool:
    """Kubernetes ``v1helper.IsExtendedResourceName``, which the kubelet applies at Register.

    True when the name is domain-prefixed (contains ``/``), not in the ``kubernetes.io/``
    namespace (nor a subdomain of it), does not start with ``requests.``, and
    ``requests.<name>`` is a qualified name. ``nvidia.com/gpu`` and ``nvidia.com/mig-1g.10gb``
    pass; ``gpu``, ``kubernetes.io/gpu`` and ``nvidia.com/`` do not.
    """
    if "/" not in name:
        return False
    domain = name.split("/", 1)[0]
    if domain == "kubernetes.io" or domain.endswith(".kubernetes.io"):
        return False
    if name.startswith("requests."):
        return False
    return is_qualified_name("requests." + name)


def register_error(request: pb.RegisterRequest) -> str | None:
    """The kubelet's validation of a RegisterRequest, before it dials the plugin.

    Returns the kubelet's error text, or None when the request passes. Order and wording
    follow the kubelet (plugin/v1beta1/server.go ``Register``/``validateRegisterRequest``):
    version, resource name, then endpoint. The endpoint
    rule (a file name in the plugin directory) is stricter than the kubelet, which only joins
    the two paths and fails later when dialling.
    """
    if request.version not in SUPPORTED_VERSIONS:
        supported = "[" + " ".join(SUPPORTED_VERSIONS) + "]"
        return (f'requested API version "{shorten(request.version)}" is not supported by kubelet. '
                f'Supported version is "{supported}"')
    if not is_extended_resource_name(request.resource_name):
        return f'the ResourceName "{shorten(request.resource_name)}" is invalid'
    endpoint = request.endpoint
    if not endpoint or "/" in endpoint or endpoint in (".", "..") or len(endpoint) > 255:
        return (f'invalid endpoint "{shorten(endpoint)}": expected the file name of the plugin\'s '
                f"socket in the device plugin directory (e.g. nvidia-gpu.sock), not a path")
    return None


#: A resource.Quantity (apimachinery ``resource.ParseQuantity``): a decimal number, then an
#: exponent, a decimal SI suffix or a binary suffix.
_QUANTITY = re.compile(r"^([+-]?(?:\d+(?:\.\d*)?|\.\d+))(?:[eE]([+-]?\d{1,3})|"
                       r"(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?$")
_SI_EXPONENTS = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_EXPONENTS = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
#: Largest quantity taken (int64, the range of a Quantity's integer value).
MAX_QUANTITY = 2**63 - 1


def parse_quantity(value: int | float | str, where: str) -> int:
    """An extended resource quantity as a whole number of devices.

    Any Kubernetes quantity whose value is whole: ``2``, ``"2"``, ``"1k"`` (1000), ``"1e3"``,
    ``"2Ki"`` (2048), ``"1.5k"`` (1500). Extended resources must be integers: the API server
    refuses ``0.5`` or ``500m``.

    Raises:
        InputError: naming ``where`` (e.g. ``pod-1/main limits[nvidia.com/gpu]``): not a
            quantity, fractional, negative, or above :data:`MAX_QUANTITY`.
    """
    if isinstance(value, bool):
        raise InputError(f"{where}: expected a whole number of devices, got {short_repr(value)}")
    if isinstance(value, int):
        number = Fraction(value)
    elif isinstance(value, float) and math.isfinite(value):
        number = Fraction(value)
    elif isinstance(value, str) and len(value) <= 64 and _QUANTITY.match(value.strip()):
        digits, exponent, suffix = _QUANTITY.match(value.strip()).groups()
        number = Fraction(digits)
        if exponent is not None:
            number *= Fraction(10) ** int(exponent)
        elif suffix in _SI_EXPONENTS:
            number *= Fraction(10) ** _SI_EXPONENTS[suffix]
        elif suffix in _BINARY_EXPONENTS:
            number *= 2 ** _BINARY_EXPONENTS[suffix]
    else:
        raise InputError(f"{where}: expected a whole number of devices (a Kubernetes quantity "
                         f"such as 1, 8 or 1k), got {short_repr(value)}")
    if number.denominator != 1:
        raise InputError(f"{where}: expected a whole number of devices (extended resources "
                         f"cannot be fractional), got {short_repr(value)}")
    if number < 0:
        raise InputError(f"{where}: expected a non-negative number of devices, got {short_repr(value)}")
    if number > MAX_QUANTITY:
        raise InputError(f"{where}: expected at most {MAX_QUANTITY} devices, got {short_repr(value)}")
    return int(number)


# --------------------------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------------------------

@dataclass
class Container:
    """A container of a pod: its name and resource limits (and optional requests).

    ``limits`` maps a resource name to a quantity, e.g. ``{"nvidia.com/gpu": 1}``. For an
    extended resource the request, if given, must equal the limit (Kubernetes rule: extended
    resources cannot be overcommitted). Resources without a ``/`` (cpu, memory) are ignored by
    this mock. ``restart_policy`` is for init containers only: ``"Always"`` makes one a
    sidecar (a restartable init container), which keeps running beside the app containers
    and keeps its devices; any other init container runs to completion first, and its devices
    can be reused by the app containers.
    """

    name: str
    limits: dict[str, int | str] = field(default_factory=dict)
    requests: dict[str, int | str] | None = None
    restart_policy: str | None = None

    @property
    def sidecar(self) -> bool:
        """True for a restartable init container (``restartPolicy: Always``)."""
        return self.restart_policy == "Always"


@dataclass
class Pod:
    """A pod as the kubelet admits it. ``uid`` defaults to a UUID derived from namespace/name,
    so the same pod gets the same UID in every run (deterministic checkpoints)."""

    name: str
    containers: list[Container]
    init_containers: list[Container] = field(default_factory=list)
    namespace: str = "default"
    uid: str = ""

    def __post_init__(self) -> None:
        if not self.uid:
            self.uid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"pod:{self.namespace}/{self.name}"))


@dataclass(frozen=True)
class DeviceNode:
    """A device node for the container runtime (from a DeviceSpec): host path, path in the
    container, cgroup permissions (any of r, w, m)."""

    container_path: str
    host_path: str
    permissions: str


@dataclass(frozen=True)
class MountSpec:
    """A bind mount for the container runtime (from a Mount)."""

    container_path: str
    host_path: str
    read_only: bool


@dataclass
class RunContainerOptions:
    """What the runtime receives for one container: all Allocate responses of that container
    merged as the kubelet merges them (pod_devices.go ``deviceRunContainerOptions``): envs keep
    the first value of a duplicate key; devices and mounts are de-duplicated by container path,
    annotations by key, CDI devices by name (first wins)."""

    envs: dict[str, str] = field(default_factory=dict)
    devices: list[DeviceNode] = field(default_factory=list)
    mounts: list[MountSpec] = field(default_factory=list)
    annotations: dict[str, str] = field(default_factory=dict)
    cdi_devices: list[str] = field(default_factory=list)


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


#: Pod phases (``PodStatus.phase`` in the Kubernetes API).
PENDING, RUNNING, SUCCEEDED, FAILED = "Pending", "Running", "Succeeded", "Failed"
TERMINAL_PHASES = (SUCCEEDED, FAILED)
#: Reason of a pod whose admission failed in the restart window and will be retried (only
#: with the retry option; not a Kubernetes reason: today's kubelet fails the pod instead).
ADMISSION_RETRY = "AdmissionRetry"


@dataclass
class PodStatus:
    """What the API server would show for a pod handed to this node.

    Attributes:
        pod: the pod.
        phase: Pending, Running, Succeeded or Failed.
        reason: FailedScheduling (Pending, never bound), UnexpectedAdmissionError /
            OutOf<resource> / CreateContainerError (Failed at admission), Completed
            (Succeeded), Error (Failed with a non-zero exit code), or AdmissionRetry
            (Pending, waiting for the retry option's next attempt).
        message: the kubelet's or scheduler's message.
        bound: True once the pod is bound to the node (spec.nodeName set).
        retries_left: admission retries still allowed (retry option only).
    """

    pod: Pod
    phase: str
    reason: str = ""
    message: str = ""
    bound: bool = False
    retries_left: int = 0

    @property
    def terminal(self) -> bool:
        """True for Succeeded and Failed: the kubelet never admits the pod again."""
        return self.phase in TERMINAL_PHASES


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


@dataclass
class _Allocation:
    """One (pod, container, resource) entry of the kubelet's podDevices."""

    pod_uid: str
    pod_name: str
    container: str
    resource: str
    device_ids: list[str]
    response: pb.ContainerAllocateResponse
    numa: dict[str, int] = field(default_factory=dict)


@dataclass
class _Endpoint:
    """A registered plugin: its channel, options and the latest ListAndWatch snapshot."""

    resource: str
    socket_path: str
    channel: grpc.Channel | None
    stub: pb_grpc.DevicePluginStub | None
    options: pb.DevicePluginOptions
    devices: dict[str, str] = field(default_factory=dict)  # ID -> health
    numa: dict[str, int] = field(default_factory=dict)  # ID -> NUMA node
    stream: object | None = None
    stopped_at: float | None = None
    snapshots: int = 0

    @property
    def healthy(self) -> list[str]:
        return [d for d, h in self.devices.items() if h == HEALTHY]


# --------------------------------------------------------------------------------------------
# The mock kubelet
# --------------------------------------------------------------------------------------------

class _RegistrationServicer(pb_grpc.RegistrationServicer):
    def __init__(self, kubelet: "MockKubelet") -> None:
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


class MockKubelet:
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
        self._admit_lock = threading.Lock()
        self._narration: list[str] = []
        self._say_lock = threading.Lock()
        self._stream_end_explained = False
        self._endpoints: dict[str, _Endpoint] = {}
        self._allocations: list[_Allocation] = []
        self._pods: dict[str, PodStatus] = {}  # UID -> status; survives restarts (API server)
        self._sources_ready = True
        self._timers: list[threading.Timer] = []
        if retry_admission_after is not None and not (0 < retry_admission_after <= 3600):
            raise InputError(f"retry_admission_after: expected seconds above 0 and at most "
                             f"3600, got {retry_admission_after!r}")
        if not (isinstance(retry_admission_attempts, int) and 1 <= retry_admission_attempts <= 100):
            raise InputError(f"retry_admission_attempts: expected 1 to 100, got "
                             f"{retry_admission_attempts!r}")
        self.retry_admission_after = retry_admission_after
        self.retry_admission_attempts = retry_admission_attempts
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

    # ---- lifecycle ------------------------------------------------------------------------

    def __enter__(self) -> "MockKubelet":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._server is not None

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
        try:
            self.plugin_dir.mkdir(mode=0o750, parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"plugin directory {self.plugin_dir}: cannot create it ({exc})") from exc
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
                      f"{_count(len(removed), 'socket')}" + (f" ({', '.join(removed)})" if removed else ""))
        self._read_checkpoint()
        self._readmit(reboot)
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=self.max_dials + 4,
                                                        thread_name_prefix="kubelet"))
        pb_grpc.add_RegistrationServicer_to_server(_RegistrationServicer(self), server)
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
            self._close_endpoint(endpoint)
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
                    error = f"failed to get device plugin options: {_rpc_text(exc)}"
        if error is not None:
            self._narrate(f"{who}: rejected: {error}")
            return error
        endpoint = _Endpoint(request.resource_name, socket_path, channel, stub, options)
        with self._lock:
            if not self._accepting:  # stopped while this Register was dialling
                channel.close()
                return "kubelet is shutting down"
            old = self._endpoints.get(request.resource_name)
            self._endpoints[request.resource_name] = endpoint
            self.registrations += 1
            self._changed.notify_all()
        if old is not None:
            self._close_endpoint(old)
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

    def _close_endpoint(self, endpoint: _Endpoint) -> None:
        stream = endpoint.stream
        if stream is not None:
            stream.cancel()
        if endpoint.channel is not None:
            endpoint.channel.close()

    def _list_and_watch(self, endpoint: _Endpoint) -> None:
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
            reason = _stream_end_reason(exc)
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
            devices = f"{'its' if n == 1 else 'all'} {_count(n, 'device')}"
            if not self._stream_end_explained:
                self._stream_end_explained = True
                line = (f"ListAndWatch {endpoint.resource}: stream ended ({reason}). As the "
                        f"kubelet does when a plugin goes away, it marks {devices} unhealthy "
                        "(allocatable 0) until the plugin registers again, and drops the "
                        f"resource after {_duration(self.stop_grace_period)} without it. Normal "
                        "when a plugin stops or restarts")
            else:  # explained once in full; each reload ends every stream again
                line = (f"ListAndWatch {endpoint.resource}: stream ended ({reason}): {devices} "
                        "unhealthy (allocatable 0) until the plugin registers again")
            # Narrated before the waiters wake, so whoever waits for the change sees the line.
            self._narrate(line)
            self._changed.notify_all()

    def _on_snapshot(self, endpoint: _Endpoint, response: pb.ListAndWatchResponse) -> None:
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
                change = f" (was {_count(before[1], 'device')}, {before[0]} healthy)"
            # Narrated before the waiters wake, so whoever waits for the change sees the lines.
            self._narrate(f"ListAndWatch {endpoint.resource}: {_count(len(devices), 'device')}, "
                          f"{healthy} healthy{change}")
            if hit and endpoint.snapshots > 1:
                self._narrate(
                    f"ListAndWatch {endpoint.resource}: {', '.join(sorted(newly_bad)[:4])}"
                    f"{' ...' if len(newly_bad) > 4 else ''} went unhealthy under "
                    f"{_count(len(hit), 'running pod')} ({', '.join(hit)}): the kubelet does not "
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
        _validate_pod(pod)
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
                                for r in _extended_limits(c)}):
            sidecars = 0
            inits = 0
            for c in pod.init_containers:
                n = _extended_limits(c).get(resource, 0)
                if c.sidecar:
                    sidecars += n
                else:
                    inits = max(inits, sidecars + n)
            apps = sidecars + sum(_extended_limits(c).get(resource, 0) for c in pod.containers)
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
            f"{c.name} {_limits_text(c)}" for c in pod.init_containers + pod.containers)
            + (" (containers still running)" if running else "")
            + (" (retry)" if retry else ""))
        # Resources no device plugin ever registered fail the node's predicate check.
        for container in pod.init_containers + pod.containers:
            for resource, quantity in _extended_limits(container).items():
                if resource not in known and quantity > 0:
                    message = (f"Node didn't have enough resource: {resource}, requested: "
                               f"{quantity}, used: 0, capacity: 0")
                    return self._reject(pod, f"OutOf{resource}", message, FAILED)
        self._update_allocated_devices()
        new: list[_Allocation] = []
        reusable: dict[str, list[str]] = {}
        result = AdmissionResult(pod.name, True, RUNNING)
        try:
            for index, container in enumerate(pod.init_containers + pod.containers):
                # An init container that ran to completion is not running after a restart:
                # the device manager checks it (kubernetes#124345); a sidecar still runs.
                finished = index < len(pod.init_containers) and not container.sidecar
                for resource, needed in _extended_limits(container).items():
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
        except _AdmissionFailure as failure:
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
                          f"{_duration(self.retry_admission_after)} (the retry option, as "
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
            self._narrate(f"kubelet: admitting again the {_count(len(records), 'pod')} bound to "
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

    def _allocate_container(self, pod: Pod, container: Container, resource: str, needed: int,
                            reusable: list[str], new: list[_Allocation], *,
                            running: bool = False) -> _Allocation:
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
                raise _AdmissionFailure(
                    "UnexpectedAdmissionError",
                    _unexpected(f"pod {pod.uid} container {container.name} changed request "
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
                raise _AdmissionFailure("UnexpectedAdmissionError", _unexpected(
                    f"cannot allocate unregistered device {resource}"), retryable=True)
            healthy = endpoint.healthy
            if not healthy:
                raise _AdmissionFailure("UnexpectedAdmissionError", _unexpected(
                    f"no healthy devices present; cannot allocate unhealthy devices {resource}"),
                    retryable=True)
            if existing is not None and not set(existing.device_ids) <= set(healthy):
                raise _AdmissionFailure("UnexpectedAdmissionError", _unexpected(
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
                raise _AdmissionFailure("UnexpectedAdmissionError", _unexpected(
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
            self._narrate(f"Allocate {who} {resource}: {', '.join(picked)} -> error: {_rpc_text(exc)}")
            raise _AdmissionFailure("UnexpectedAdmissionError", _unexpected(_rpc_error_go(exc))) from exc
        if len(response.container_responses) == 0:
            raise _AdmissionFailure("UnexpectedAdmissionError", _unexpected(
                f"no containers return in allocation response {response}"))
        container_response = response.container_responses[0]
        allocation = _Allocation(pod.uid, pod.name, container.name, resource, picked,
                                 container_response, {d: endpoint.numa.get(d, NODE_WITHOUT_TOPOLOGY) for d in picked})
        with self._lock:
            self._allocations.append(allocation)
            new.append(allocation)
        self._narrate(f"Allocate {who} {resource}: {', '.join(picked)} -> "
                      f"{_response_text(container_response)}")
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
            raise _AdmissionFailure("UnexpectedAdmissionError", _unexpected(
                f"device plugin GetPreferredAllocation rpc failed with err: {_rpc_error_go(exc)}")) from exc
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
                raise _AdmissionFailure("CreateContainerError",
                                        f"PreStartContainer for {resource} failed: {_rpc_text(exc)}") from exc
            self._narrate(f"PreStartContainer {pod.name}/{container.name} {resource}: "
                          f"{', '.join(device_ids)}: OK")

    def _run_options(self, pod_uid: str, container: str) -> RunContainerOptions:
        """Merge the container's Allocate responses, one per resource (caller holds the lock)."""
        options = RunContainerOptions()
        paths, mounts, cdi = set(), set(), set()
        for allocation in self._allocations:
            if allocation.pod_uid != pod_uid or allocation.container != container:
                continue
            resp = allocation.response
            for key, value in sorted(resp.envs.items()):
                if key in options.envs and options.envs[key] != value:
                    self._narrate(f"Environment variable {key} of {container} has conflicting "
                                  f"values {options.envs[key]!r} and {value!r}; keeping the first")
                    continue
                options.envs.setdefault(key, value)
            for spec in resp.devices:
                if spec.container_path not in paths:
                    paths.add(spec.container_path)
                    options.devices.append(DeviceNode(spec.container_path, spec.host_path, spec.permissions))
            for mount in resp.mounts:
                if mount.container_path not in mounts:
                    mounts.add(mount.container_path)
                    options.mounts.append(MountSpec(mount.container_path, mount.host_path, mount.read_only))
            for key, value in sorted(resp.annotations.items()):
                options.annotations.setdefault(key, value)
            for device in resp.cdi_devices:
                if device.name not in cdi:
                    cdi.add(device.name)
                    options.cdi_devices.append(device.name)
        return options

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

    # ---- checkpoint -----------------------------------------------------------------------

    def _checkpoint_data(self) -> dict:
        entries = []
        for a in self._allocations:
            per_numa: dict[str, list[str]] = {}
            for device_id in a.device_ids:
                per_numa.setdefault(str(a.numa.get(device_id, NODE_WITHOUT_TOPOLOGY)), []).append(device_id)
            entries.append({
                "PodUID": a.pod_uid,
                "ContainerName": a.container,
                "ResourceName": a.resource,
                "DeviceIDs": per_numa,
                "AllocResp": base64.b64encode(a.response.SerializeToString()).decode("ascii"),
            })
        registered = {name: sorted(e.healthy) for name, e in sorted(self._endpoints.items())}
        return {"PodDeviceEntries": entries, "RegisteredDevices": registered}

    def _write_checkpoint(self) -> None:
        """Write the checkpoint atomically (caller holds the lock).

        Shape as the kubelet's: ``{"Data": {...}, "Checksum": n}``. The kubelet's checksum hashes
        Go's printed form of the data, which cannot be reproduced here; ours is CRC-32 of the
        canonical JSON of ``Data``. Pod names are kept in a side field for the narration.
        """
        data = self._checkpoint_data()
        names = {a.pod_uid: a.pod_name for a in self._allocations}
        document = {"Data": data, "Checksum": _checksum(data), "PodNames": names}
        tmp = self.checkpoint_path.with_name(CHECKPOINT_NAME + ".tmp")
        try:
            tmp.write_text(json.dumps(document, indent=1, sort_keys=True))
            os.replace(tmp, self.checkpoint_path)
        except FileNotFoundError:
            pass  # directory removed under us (test teardown)

    def _read_checkpoint(self) -> None:
        """``readCheckpoint``: restore allocations; every registered resource becomes a stopped
        endpoint with no devices (capacity 0 until its plugin registers again). A corrupt
        checkpoint is narrated and ignored, as the kubelet logs it and starts empty."""
        if not self.checkpoint_path.exists():
            return
        try:
            if self.checkpoint_path.stat().st_size > MAX_INVENTORY_BYTES:
                raise ValueError(f"larger than {MAX_INVENTORY_BYTES} bytes")
            document = json.loads(self.checkpoint_path.read_text())
            data = document["Data"]
            if document.get("Checksum") != _checksum(data):
                raise ValueError("checksum mismatch")
            names = document.get("PodNames", {})
            allocations = []
            for entry in data.get("PodDeviceEntries") or []:
                response = pb.ContainerAllocateResponse.FromString(base64.b64decode(entry["AllocResp"]))
                numa, ids = {}, []
                for node, device_ids in sorted(entry["DeviceIDs"].items(), key=lambda kv: int(kv[0])):
                    for device_id in device_ids:
                        ids.append(device_id)
                        numa[device_id] = int(node)
                allocations.append(_Allocation(entry["PodUID"], names.get(entry["PodUID"], entry["PodUID"]),
                                               entry["ContainerName"], entry["ResourceName"], ids,
                                               response, numa))
            registered = list((data.get("RegisteredDevices") or {}).keys())
        except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError,
                binascii.Error) as exc:
            self._narrate(f"kubelet: checkpoint {self.checkpoint_path} is corrupt ({shorten(str(exc))}); "
                          f"starting with no allocations")
            return
        now = self._clock()
        with self._lock:
            self._allocations = allocations
            for resource in registered:
                self._endpoints[resource] = _Endpoint(resource, "", None, None,
                                                      pb.DevicePluginOptions(), stopped_at=now)
        pods = sorted({a.pod_name for a in allocations})
        self._narrate(f"kubelet: checkpoint restored: {_count(len(allocations), 'allocation')}"
                      + (f" of {', '.join(pods)}" if pods else "")
                      + (f"; {', '.join(registered)} at 0 until re-registered" if registered else ""))


class _AdmissionFailure(Exception):
    """An admission error; ``retryable`` when it means "the plugin is not registered (yet)",
    the case the retry option retries."""

    def __init__(self, reason: str, message: str, phase: str = "Failed",
                 retryable: bool = False) -> None:
        super().__init__(message)
        self.reason, self.message, self.phase = reason, message, phase
        self.retryable = retryable


def _unexpected(error: str) -> str:
    """The kubelet's admission message for a device manager error."""
    return f"Allocate failed due to {error}, which is unexpected"


def _count(n: int, noun: str) -> str:
    """``"1 device"``, ``"2 devices"``."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _duration(seconds: float) -> str:
    """``300`` -> ``"5 min"``, ``2.5`` -> ``"2.5 s"``."""
    if seconds >= 60 and seconds % 60 == 0:
        return f"{seconds / 60:g} min"
    return f"{seconds:g} s"


def _stream_end_reason(exc: grpc.RpcError) -> str:
    """Why a ListAndWatch stream ended, in words (the gRPC code kept for the curious)."""
    code = exc.code() if hasattr(exc, "code") else None
    if code == grpc.StatusCode.CANCELLED:
        return "cancelled"
    if code == grpc.StatusCode.UNAVAILABLE:
        return "the plugin's socket closed: UNAVAILABLE"
    return _rpc_text(exc)


def _rpc_text(exc: grpc.RpcError) -> str:
    code = exc.code() if hasattr(exc, "code") else None
    details = exc.details() if hasattr(exc, "details") else str(exc)
    return f"{code.name if code else 'UNKNOWN'}: {shorten(details or '', MAX_MESSAGE_CHARS)}"


def _rpc_error_go(exc: grpc.RpcError) -> str:
    """A gRPC error worded as Go's status.Error prints it (what the kubelet's message shows)."""
    code = exc.code() if hasattr(exc, "code") else None
    name = "".join(p.capitalize() for p in code.name.split("_")) if code else "Unknown"
    details = exc.details() if hasattr(exc, "details") else str(exc)
    return f"rpc error: code = {name} desc = {shorten(details or '', MAX_MESSAGE_CHARS)}"


def _checksum(data: dict) -> int:
    return zlib.crc32(json.dumps(data, sort_keys=True, separators=(",", ":")).encode())


def _extended_limits(container: Container) -> dict[str, int]:
    return {r: parse_quantity(q, f"container {container.name} limits[{r}]")
            for r, q in container.limits.items() if "/" in r}


def _limits_text(container: Container) -> str:
    limits = {r: q for r, q in container.limits.items() if "/" in r}
    return "(" + (", ".join(f"{r}: {q}" for r, q in limits.items()) or "no devices") + ")"


def _response_text(response: pb.ContainerAllocateResponse) -> str:
    parts = [f"{k}={v}" for k, v in sorted(response.envs.items())]
    parts += [f"mount {m.host_path}:{m.container_path}" for m in response.mounts]
    parts += [f"device {d.host_path}" for d in response.devices]
    parts += [f"annotation {k}={v}" for k, v in sorted(response.annotations.items())]
    parts += [f"CDI {c.name}" for c in response.cdi_devices]
    return ", ".join(parts) or "(empty response)"


#: Resource names without a domain that the API server accepts for a container
#: (``standardContainerResources`` in pkg/apis/core/helper; hugepages-<size> too).
_STANDARD_RESOURCES = ("cpu", "memory", "ephemeral-storage")


def _check_resource_name(resource: object, where: str) -> None:
    """The API server's resource name rule (validation.go ``validateContainerResourceName``):
    a standard name (cpu, memory, hugepages-<size>, ...) or a domain-prefixed extended
    resource name (:func:`is_extended_resource_name`) or a ``kubernetes.io/`` native name."""
    if not isinstance(resource, str) or not resource:
        raise InputError(f"{where}: resource name {resource!r}: expected a non-empty name")
    if "/" not in resource:
        if resource in _STANDARD_RESOURCES or resource.startswith("hugepages-"):
            return
        raise InputError(f"{where}: resource name {resource!r}: expected a standard resource "
                         "(cpu, memory, ...) or a domain-prefixed extended resource such as "
                         "nvidia.com/gpu")
    domain = resource.split("/", 1)[0]
    native = domain == "kubernetes.io" or domain.endswith(".kubernetes.io")
    if not (is_extended_resource_name(resource) or (native and is_qualified_name(resource))):
        raise InputError(f"{where}: resource name {resource!r}: expected a valid extended "
                         "resource name (DNS subdomain, '/', a name of at most 63 characters "
                         "of [A-Za-z0-9-_.]), e.g. nvidia.com/gpu")


def _validate_pod(pod: Pod) -> None:
    """The API server's checks that matter for devices; raises InputError naming the field."""
    if not pod.name:
        raise InputError("pod: metadata.name is empty")
    seen = set()
    for kind, containers in (("initContainers", pod.init_containers), ("containers", pod.containers)):
        for index, container in enumerate(containers):
            where = f"pod {pod.name} spec.{kind}[{index}]"
            if not container.name:
                raise InputError(f"{where}.name: expected a container name")
            if container.name in seen:
                raise InputError(f"{where}.name: duplicate container name {container.name!r}")
            seen.add(container.name)
            if container.restart_policy is not None and (
                    kind != "initContainers" or container.restart_policy != "Always"):
                raise InputError(f"{where}.restartPolicy: {shorten(repr(container.restart_policy))}; "
                                 "expected Always, on init containers only (a sidecar)")
            for resource in list(container.limits) + list(container.requests or {}):
                _check_resource_name(resource, f"{where}.resources")
            for resource, value in container.limits.items():
                if "/" not in resource:
                    continue
                limit = parse_quantity(value, f"{where}.resources.limits[{resource}]")
                if container.requests is not None and resource in container.requests:
                    request = parse_quantity(container.requests[resource],
                                             f"{where}.resources.requests[{resource}]")
                    if request != limit:
                        raise InputError(f"{where}.resources.requests[{resource}]: must be equal "
                                         f"to {resource} limit of {limit} (extended resources "
                                         f"cannot be overcommitted), got {request}")
            for resource in (container.requests or {}):
                if "/" in resource and resource not in container.limits:
                    raise InputError(f"{where}.resources.limits[{resource}]: extended resources "
                                     f"need a limit equal to the request")
    if not pod.containers:
        raise InputError(f"pod {pod.name} spec.containers: expected at least one container")


def pods_from_manifests(documents: Iterable[object], source: str) -> list[Pod]:
    """Pods from Kubernetes Pod manifests (already parsed YAML documents; ``kind: List`` too).

    Reads metadata.name / namespace / uid and, per container and init container, name and
    resources.limits / requests. Every pod is validated as the API server would (whole-number
    quantities, requests equal to limits, valid resource names) before any is returned.
    Raises InputError naming ``source``, the document and the field.
    """
    pods: list[Pod] = []
    for number, document in enumerate(documents):
        if document is None:
            continue
        where = f"{source}: document {number + 1}"
        if not isinstance(document, dict):
            raise InputError(f"{where}: expected a Pod manifest (a mapping), got {type(document).__name__}")
        if document.get("kind") == "List":
            pods.extend(pods_from_manifests(document.get("items") or [], f"{where} items"))
            continue
        if document.get("kind") != "Pod":
            raise InputError(f"{where}: kind: expected Pod, got {document.get('kind')!r}")
        meta = document.get("metadata") or {}
        spec = document.get("spec") or {}
        if not meta.get("name"):
            raise InputError(f"{where}: metadata.name: expected the pod's name")

        def containers(key: str) -> list[Container]:
            out = []
            for index, c in enumerate(spec.get(key) or []):
                if not isinstance(c, dict) or not c.get("name"):
                    raise InputError(f"{where}: spec.{key}[{index}].name: expected a container name")
                resources = c.get("resources") or {}
                requests = resources.get("requests")
                limits = resources.get("limits") or {}
                if not isinstance(limits, dict) or not (requests is None or isinstance(requests, dict)):
                    raise InputError(f"{where}: spec.{key}[{index}].resources: expected limits "
                                     "and requests as mappings of resource name to quantity")
                policy = c.get("restartPolicy") if key == "initContainers" else None
                out.append(Container(c["name"], dict(limits),
                                     dict(requests) if requests is not None else None,
                                     None if policy is None else str(policy)))
            return out

        pod = Pod(str(meta["name"]), containers("containers"), containers("initContainers"),
                  namespace=meta.get("namespace", "default"), uid=meta.get("uid", ""))
        try:
            _validate_pod(pod)
        except InputError as exc:
            raise InputError(f"{where}: {exc}") from None
        pods.append(pod)
    return pods


def parse_admit(spec: str) -> Pod:
    """A one-container pod from ``NAME=RESOURCE:N[,RESOURCE:N...]``, e.g.
    ``pod-1=nvidia.com/gpu:1``; one pod per ``--admit``. Each RESOURCE must be an extended
    resource name (:func:`is_extended_resource_name`: ``nvidia.com/gpu``, not ``gpu``).
    Raises InputError naming the option."""
    name, sep, rest = spec.partition("=")
    if not sep or not name or not rest:
        raise InputError(f"--admit {spec!r}: expected NAME=RESOURCE:N, e.g. pod-1=nvidia.com/gpu:1")
    if "=" in rest:
        raise InputError(f"--admit {spec!r}: one pod per --admit; repeat the option for more "
                         "pods (--admit p1=nvidia.com/gpu:1 --admit p2=nvidia.com/gpu:1)")
    limits: dict[str, int | str] = {}
    for item in rest.split(","):
        resource, sep, count = item.rpartition(":")
        if not sep or not resource:
            raise InputError(f"--admit {spec!r}: expected RESOURCE:N, got {item!r}")
        if not is_extended_resource_name(resource):
            raise InputError(f"--admit {spec!r}: {resource!r} is not an extended resource name; "
                             "expected a domain-prefixed name such as nvidia.com/gpu")
        if resource in limits:
            raise InputError(f"--admit {spec!r}: {resource} given twice; expected each resource once")
        limits[resource] = parse_quantity(count, f"--admit {spec!r} count of {resource}")
    pod = Pod(name, [Container("main", limits)])
    try:
        _validate_pod(pod)
    except InputError as exc:
        raise InputError(f"--admit {spec!r}: {exc}") from None
    return pod
