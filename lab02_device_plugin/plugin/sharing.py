"""From inventory + config to what the kubelet sees: resources, device IDs, allocations.

This is the resource manager of NVIDIA's plugin (``internal/rm``) as pure functions, with
no sockets and no threads:

* :func:`advertise` -> :class:`ResourcePlan`: one :class:`AdvertisedResource` per extended
  resource (``nvidia.com/gpu``, ``nvidia.com/gpu.shared``, ``nvidia.com/mig-1g.10gb`` ...),
  each with its device IDs (GPU/MIG UUIDs; replicas ``<uuid>::<n>``);
* :func:`list_and_watch_snapshot`: the full device list with health, as ListAndWatch sends it;
* :func:`preferred_allocation`: GetPreferredAllocation (NVLink islands for whole GPUs,
  spread or pack for replicas);
* :func:`validate_request` and :func:`allocate`: Allocate, per ``deviceListStrategy`` and
  ``deviceIDStrategy``.

Source: NVIDIA k8s-device-plugin v0.20.0 (internal/rm/device_map.go, internal/plugin/server.go,
api/config/v1/replicas.go).
"""

from __future__ import annotations

import heapq
import itertools
import math
import uuid as uuidlib
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from lab02_device_plugin.errors import InputError
from lab02_device_plugin.limits import (
    MAX_MESSAGE_BYTES, device_bytes, max_replicas, replicas_bytes, short_repr,
)
from lab02_device_plugin.plugin.config import (
    MIG_STRATEGY_MIXED, MIG_STRATEGY_NONE, MIG_STRATEGY_SINGLE, SHARING_MPS, SHARING_NONE, Config,
)
from lab02_device_plugin.plugin.inventory import Inventory
from lab02_device_plugin.plugin.mig import mixed_resource_name

HEALTHY = "Healthy"
UNHEALTHY = "Unhealthy"
GPU_RESOURCE = "nvidia.com/gpu"
REPLICA_SEPARATOR = "::"
#: CDI device kind used in annotations and cdi_devices (NVIDIA: ``k8s.device-plugin.nvidia.com``).
CDI_KIND = "k8s.device-plugin.nvidia.com/gpu"
VOLUME_MOUNT_DIR = "/var/run/nvidia-container-devices"
#: Control device nodes passed with ``passDeviceSpecs`` (upstream adds them when present).
CONTROL_DEVICE_NODES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools",
                        "/dev/nvidia-modeset")


@dataclass(frozen=True)
class AdvertisedDevice:
    """One unit the kubelet can allocate.

    Attributes:
        id: the Device.ID sent to the kubelet (a UUID, or ``<uuid>::<n>`` for a replica).
        physical_id: the GPU or MIG UUID behind it (replica suffix removed).
        gpu_uuid: UUID of the physical GPU (the parent, for a MIG device).
        gpu_index: nvidia-smi index of that GPU.
        mig_index: MIG device index on the parent, or None for a full GPU.
        replica: replica number 0..replicas-1, or None when not shared.
        numa_node: NUMA node (inherited by MIG devices and replicas), or None.
        nvlink_island: NVLink island of the GPU, or None.
        minor_number: ``/dev/nvidia<minor>`` of the GPU.
        links: the GPU's ``(peer GPU index, topo word)`` pairs when the topology is known
            (full GPUs only; NVLink is not used in MIG mode).
    """

    id: str
    physical_id: str
    gpu_uuid: str
    gpu_index: int
    mig_index: int | None = None
    replica: int | None = None
    numa_node: int | None = None
    nvlink_island: int | None = None
    minor_number: int = 0
    links: tuple[tuple[int, str], ...] = ()


@dataclass(frozen=True)
class AdvertisedResource:
    """One extended resource and its devices, served by one DevicePlugin server.

    Attributes:
        name: extended resource name, e.g. ``nvidia.com/gpu.shared``.
        base_name: the name before ``renameByDefault`` (``nvidia.com/gpu``).
        devices: advertised devices, in GPU index, MIG index, replica order.
        sharing: ``none``, ``time-slicing`` or ``mps``.
        replicas: units per physical device (1 when not shared).
        fail_requests_greater_than_one: refuse requests for more than one replica.
    """

    name: str
    base_name: str
    devices: tuple[AdvertisedDevice, ...]
    sharing: str = SHARING_NONE
    replicas: int = 1
    fail_requests_greater_than_one: bool = False
    _by_id: Mapping[str, AdvertisedDevice] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_id", {d.id: d for d in self.devices})

    @property
    def socket_name(self) -> str:
        """Socket file name: ``nvidia-<name after the slash>.sock`` (``nvidia-gpu.sock``)."""
        return "nvidia-" + self.name.split("/", 1)[1] + ".sock"

    @property
    def is_shared(self) -> bool:
        """True when the devices are replicas (time-slicing or MPS)."""
        return self.replicas > 1

    @property
    def is_mig(self) -> bool:
        """True when the devices are MIG devices."""
        return any(d.mig_index is not None for d in self.devices)

    def device(self, device_id: str) -> AdvertisedDevice | None:
        """The device with this ID, or None."""
        return self._by_id.get(device_id)

    def physical_ids(self) -> list[str]:
        """The distinct physical devices behind this resource, in order."""
        return list(dict.fromkeys(d.physical_id for d in self.devices))


@dataclass(frozen=True)
class ResourcePlan:
    """The result of :func:`advertise`: resources sorted by name, and warnings."""

    resources: tuple[AdvertisedResource, ...]
    warnings: tuple[str, ...] = ()

    def resource(self, name: str) -> AdvertisedResource:
        """The resource with this name. Raises KeyError naming the known ones."""
        for r in self.resources:
            if r.name == name:
                return r
        raise KeyError(f"no resource {name!r}; advertised: {', '.join(self.names())}")

    def names(self) -> list[str]:
        """Resource names, sorted."""
        return [r.name for r in self.resources]


# --------------------------------------------------------------------------- small rules

def physical_device_id(device_id: str) -> str:
    """The physical device (GPU or MIG UUID) behind an advertised ID.

    ``"GPU-abc::3"`` -> ``"GPU-abc"``; an ID without a replica suffix is returned as is.
    This is how Allocate maps replicas back to their GPU (upstream ``AnnotatedID.GetID``).
    """
    ### BEGIN SOLUTION
    base, sep, suffix = device_id.rpartition(REPLICA_SEPARATOR)
    if sep and suffix.isdigit():
        return base
    return device_id
    ### END SOLUTION


def expand_replicas(device: AdvertisedDevice, replicas: int) -> list[AdvertisedDevice]:
    """Time-slicing / MPS advertisement: one physical device becomes ``replicas`` devices.

    Returns a list of ``replicas`` :class:`AdvertisedDevice`: replica ``n`` has ID
    ``<physical id>::<n>`` (n = 0..replicas-1, upstream ``NewAnnotatedID``) and its
    ``replica`` field set to ``n``, and inherits every other field (physical ID, GPU, NUMA
    node, island) from its parent. ``replicas == 1`` returns ``[device]``, unchanged.
    """
    ### BEGIN SOLUTION
    if replicas <= 1:
        return [device]
    return [replace(device, id=f"{device.physical_id}{REPLICA_SEPARATOR}{n}", replica=n)
            for n in range(replicas)]
    ### END SOLUTION


@dataclass(frozen=True)
class DeviceState:
    """One entry of a ListAndWatch snapshot: ``Device{ID, health, topology}``."""

    id: str
    health: str
    numa_node: int | None = None


def list_and_watch_snapshot(resource: AdvertisedResource,
                            unhealthy: Collection[str]) -> list[DeviceState]:
    """The full device list of ``resource`` as ListAndWatch sends it.

    Args:
        resource: the advertised resource.
        unhealthy: physical IDs (GPU or MIG UUIDs) currently unhealthy.

    Returns:
        One :class:`DeviceState` per advertised device, in order, with the device's ``id``
        and ``numa_node`` and its health (``HEALTHY`` or ``UNHEALTHY``); a device is
        Unhealthy when its physical device (or, for a MIG device, its parent GPU) is in
        ``unhealthy``, so replicas share their
        GPU's health. Always the whole list, never a delta: the kubelet rebuilds its view
        from each message (kubelet devicemanager endpoint.go / manager.go ``genericDeviceUpdateCallback``).
    """
    ### BEGIN SOLUTION
    return [DeviceState(d.id,
                        UNHEALTHY if (d.physical_id in unhealthy or d.gpu_uuid in unhealthy)
                        else HEALTHY,
                        d.numa_node)
            for d in resource.devices]
    ### END SOLUTION


# --------------------------------------------------------------------------- advertise

def _gpu_device(g) -> AdvertisedDevice:
    return AdvertisedDevice(g.uuid, g.uuid, g.uuid, g.index, None, None, g.numa_node,
                            g.nvlink_island, g.minor_number if g.minor_number is not None else g.index,
                            g.links)


def _mig_device(g, m) -> AdvertisedDevice:
    return AdvertisedDevice(m.uuid, m.uuid, g.uuid, g.index, m.index, None, g.numa_node,
                            g.nvlink_island, g.minor_number if g.minor_number is not None else g.index)


def advertise(inventory: Inventory, config: Config) -> ResourcePlan:
    """Resources and device IDs for a node (upstream ``device_map.go``: match, then replicate).

    Step 1, match devices to resource names by ``flags.migStrategy``:
      * ``none``: every GPU is ``nvidia.com/gpu`` (MIG-enabled GPUs too, as full GPUs);
      * ``single``: MIG devices become ``nvidia.com/gpu``; every GPU must agree on MIG mode,
        each MIG-enabled GPU needs at least one MIG device and all must share one profile;
      * ``mixed``: one resource per profile, ``nvidia.com/mig-<profile>``; non-MIG GPUs
        stay ``nvidia.com/gpu``.
    Step 2, replicate what ``sharing`` names: ``replicas`` IDs per device, the resource
    renamed ``<name>.shared`` under ``renameByDefault``.

    Raises:
        InputError: a single-strategy rule is broken (upstream's messages), or MPS is
            configured on a node with a MIG-enabled GPU (upstream README: MPS shares full
            GPUs only, not with MIG).
    """
    strategy = config.flags.mig_strategy
    if config.sharing.strategy == SHARING_MPS:
        for g in inventory.gpus:
            if g.mig_enabled:
                raise InputError(f"{inventory.source}: GPU {g.index} ({g.uuid}) has MIG enabled; "
                                 "sharing.mps shares full GPUs only, not MIG devices (NVIDIA "
                                 "plugin README); expected GPUs with MIG disabled, or "
                                 "sharing.timeSlicing")
    warnings: list[str] = []
    groups: dict[str, list[AdvertisedDevice]] = {}
    gpus = inventory.gpus
    if strategy == MIG_STRATEGY_NONE:
        for g in gpus:
            groups.setdefault(GPU_RESOURCE, []).append(_gpu_device(g))
    elif strategy == MIG_STRATEGY_SINGLE:
        modes = {bool(g.mig_enabled) for g in gpus}
        if len(modes) > 1:
            raise InputError(f"{inventory.source}: migStrategy single: all devices on the node "
                             "must be configured with the same migEnabled value")
        if modes == {True}:
            profiles = set()
            for g in gpus:
                if not g.mig_devices:
                    raise InputError(f"{inventory.source}: migStrategy single: device {g.index} "
                                     "has no MIG devices configured")
                profiles.update(m.profile for m in g.mig_devices)
            if len(profiles) > 1:
                raise InputError(f"{inventory.source}: migStrategy single: more than one MIG "
                                 f"device type present on node ({', '.join(sorted(profiles))}); "
                                 "expected one profile, or migStrategy mixed")
            for g in gpus:
                for m in g.mig_devices:
                    groups.setdefault(GPU_RESOURCE, []).append(_mig_device(g, m))
        else:
            for g in gpus:
                groups.setdefault(GPU_RESOURCE, []).append(_gpu_device(g))
    elif strategy == MIG_STRATEGY_MIXED:
        for g in gpus:
            if g.mig_enabled:
                if not g.mig_devices:
                    warnings.append(f"GPU {g.index} ({g.uuid}) has MIG enabled but no MIG devices; "
                                    "it advertises nothing")
                for m in g.mig_devices:
                    groups.setdefault(mixed_resource_name(m.profile), []).append(_mig_device(g, m))
            else:
                groups.setdefault(GPU_RESOURCE, []).append(_gpu_device(g))
    else:  # Config validates this; keep a loud failure for hand-built configs.
        raise InputError(f"flags.migStrategy: expected none, single or mixed, got {strategy!r}")

    sharing = config.sharing
    shared_names = {r.name: r.replicas for r in sharing.resources}
    for name in shared_names:
        if name not in groups:
            warnings.append(f"sharing: resource {name} is not present on this node; nothing to "
                            "replicate")
    resources = []
    for name in sorted(groups):
        devices = groups[name]
        replicas = shared_names.get(name, 1)
        ids = [(len(d.physical_id.encode()), d.numa_node) for d in devices]
        size = (sum(replicas_bytes(n, replicas, numa) for n, numa in ids) if replicas > 1
                else sum(device_bytes(len(d.id.encode()), d.numa_node) for d in devices))
        if size > MAX_MESSAGE_BYTES:
            # Checked before the IDs are built: 8 GPUs x 10^9 replicas must not allocate first.
            raise InputError(
                f"{name}: {len(devices)} devices x {replicas} replicas make a ListAndWatch "
                f"message of {size} bytes; expected at most {MAX_MESSAGE_BYTES} (gRPC's default "
                f"4 MiB, which the kubelet keeps), at most {max_replicas(ids)} replicas of these "
                "devices: see lab02_device_plugin.limits")
        if replicas > 1:
            expanded = [r for d in devices for r in expand_replicas(d, replicas)]
            adv_name = name + ".shared" if sharing.rename_by_default else name
            resources.append(AdvertisedResource(adv_name, name, tuple(expanded), sharing.strategy,
                                                replicas, sharing.fail_requests_greater_than_one))
        else:
            resources.append(AdvertisedResource(name, name, tuple(devices)))
    resources.sort(key=lambda r: r.name)
    return ResourcePlan(tuple(resources), tuple(warnings))


# --------------------------------------------------------------------------- requests

class AllocationError(InputError):
    """A request the plugin refuses; the server turns it into INVALID_ARGUMENT."""


def validate_request(resource: AdvertisedResource,
                     device_ids: Sequence[str]) -> list[AdvertisedDevice]:
    """Check one container's request (upstream ``rm.ValidateRequest``); returns its devices.

    Raises:
        AllocationError: no IDs, a repeated ID, an unknown ID (named), or more than one unit
            of a shared resource with ``failRequestsGreaterThanOne``:
            ``maximum request size for shared resources is 1; found N``.
    """
    if not device_ids:
        raise AllocationError(f"invalid request for {resource.name}: no device IDs; expected at "
                              "least one")
    devices = []
    seen: set[str] = set()
    for did in device_ids:
        dev = resource.device(did)
        if dev is None:
            raise AllocationError(f"invalid request for {resource.name}: unknown device {short_repr(did)}")
        if did in seen:
            raise AllocationError(f"invalid request for {resource.name}: device {short_repr(did)} listed "
                                  "twice")
        seen.add(did)
        devices.append(dev)
    if resource.is_shared and resource.fail_requests_greater_than_one and len(devices) > 1:
        raise AllocationError(f"invalid request for {resource.name}: maximum request size for "
                              f"shared resources is 1; found {len(devices)}")
    return devices


def runtime_ids(devices: Iterable[AdvertisedDevice], id_strategy: str = "uuid") -> list[str]:
    """IDs for the container runtime: each physical device once, in request order.

    ``uuid``: GPU or MIG UUIDs; ``index``: nvidia-smi indices, ``"i"`` for a GPU and
    ``"i:j"`` for MIG device j on GPU i. Two replicas of one GPU give one entry.
    """
    out: dict[str, None] = {}
    for d in devices:
        if id_strategy == "index":
            key = str(d.gpu_index) if d.mig_index is None else f"{d.gpu_index}:{d.mig_index}"
        else:
            key = physical_device_id(d.id)
        out.setdefault(key, None)
    return list(out)


@dataclass(frozen=True)
class MountSpec:
    """A bind mount for the container (proto ``Mount``)."""

    container_path: str
    host_path: str
    read_only: bool = False


@dataclass(frozen=True)
class DeviceNode:
    """A device node for the container (proto ``DeviceSpec``); permissions from r, w, m."""

    container_path: str
    host_path: str
    permissions: str = "rw"


@dataclass(frozen=True)
class ContainerAllocation:
    """One ``ContainerAllocateResponse`` as plain data (the server converts it to protobuf)."""

    envs: Mapping[str, str] = field(default_factory=dict)
    mounts: tuple[MountSpec, ...] = ()
    devices: tuple[DeviceNode, ...] = ()
    annotations: Mapping[str, str] = field(default_factory=dict)
    cdi_devices: tuple[str, ...] = ()


def allocate(resource: AdvertisedResource, device_ids: Sequence[str],
             config: Config) -> ContainerAllocation:
    """Answer one container's Allocate request.

    By ``flags.plugin.deviceListStrategy`` (NVIDIA internal/plugin/server.go ``getAllocateResponse``):
      * ``envvar``: ``NVIDIA_VISIBLE_DEVICES=<ids>`` (each physical device once);
      * ``volume-mounts``: ``NVIDIA_VISIBLE_DEVICES=/var/run/nvidia-container-devices`` and a
        mount ``/dev/null`` -> ``/var/run/nvidia-container-devices/<id>`` per device;
      * ``cdi-annotations``: annotation ``<prefix>nvidia-device-plugin_<uuid>`` listing
        ``k8s.device-plugin.nvidia.com/gpu=<id>`` (the UUID is derived from the request, so
        answers are reproducible; upstream uses a random one);
      * ``cdi-cri``: ``cdi_devices`` with the same names.
    Only CDI strategies -> no env var. ``passDeviceSpecs`` adds ``/dev/nvidiactl`` & co. and
    ``/dev/nvidia<minor>`` per GPU. MPS adds ``CUDA_MPS_PIPE_DIRECTORY`` and mounts of the
    pipe directory and of the shm directory (as ``/dev/shm``) under ``flags.mpsRoot``.

    Raises:
        AllocationError: see :func:`validate_request`.
    """
    devices = validate_request(resource, device_ids)
    flags = config.flags.plugin
    ids = runtime_ids(devices, flags.device_id_strategy)
    strategies = flags.device_list_strategy
    envs: dict[str, str] = {}
    mounts: list[MountSpec] = []
    annotations: dict[str, str] = {}
    cdi: tuple[str, ...] = ()
    if "envvar" in strategies:
        envs["NVIDIA_VISIBLE_DEVICES"] = ",".join(ids)
    if "volume-mounts" in strategies:
        envs["NVIDIA_VISIBLE_DEVICES"] = VOLUME_MOUNT_DIR
        mounts += [MountSpec(f"{VOLUME_MOUNT_DIR}/{i}", "/dev/null", True) for i in ids]
    names = tuple(f"{CDI_KIND}={i}" for i in ids)
    if "cdi-annotations" in strategies:
        key_id = uuidlib.uuid5(uuidlib.NAMESPACE_URL, resource.name + "/" + ",".join(device_ids))
        annotations[f"{flags.cdi_annotation_prefix}nvidia-device-plugin_{key_id}"] = ",".join(names)
    if "cdi-cri" in strategies:
        cdi = names
    nodes: list[DeviceNode] = []
    if flags.pass_device_specs:
        nodes += [DeviceNode(p, p, "rw") for p in CONTROL_DEVICE_NODES]
        for minor in dict.fromkeys(d.minor_number for d in devices):
            nodes.append(DeviceNode(f"/dev/nvidia{minor}", f"/dev/nvidia{minor}", "rw"))
    if resource.sharing == SHARING_MPS:
        root = config.flags.mps_root.rstrip("/")
        pipe = f"{root}/{resource.base_name}/pipe"
        envs["CUDA_MPS_PIPE_DIRECTORY"] = pipe
        mounts.append(MountSpec(pipe, pipe, False))
        mounts.append(MountSpec("/dev/shm", f"{root}/shm", False))
    return ContainerAllocation(envs, tuple(mounts), tuple(nodes), annotations, cdi)


def mps_daemon_commands(resource: AdvertisedResource, inventory: Inventory) -> list[str]:
    """The MPS control daemon's default limits for an MPS-shared resource, as commands.

    NVIDIA's plugin starts one ``nvidia-cuda-mps-control`` per resource and sets
    ``set_default_active_thread_percentage 100/replicas`` and, per GPU,
    ``set_default_device_pinned_mem_limit <index> <memory/replicas>M`` (NVIDIA internal/mps daemon setup):
    each client gets 1/replicas of the SMs and of the memory. Example: 4 replicas of an
    81559 MiB H100 -> ``set_default_active_thread_percentage 25`` and
    ``set_default_device_pinned_mem_limit 0 20389M`` (81559 // 4).

    Returns:
        The command lines, or ``[]`` when ``resource`` is not shared with MPS.
    """
    if resource.sharing != SHARING_MPS:
        return []
    lines = [f"set_default_active_thread_percentage {100 // resource.replicas}"]
    for gpu_index in dict.fromkeys(d.gpu_index for d in resource.devices):
        memory = inventory.gpu(gpu_index).memory_mib
        lines.append(f"set_default_device_pinned_mem_limit {gpu_index} "
                     f"{memory // resource.replicas}M")
    return lines


# --------------------------------------------------------------------------- preferred

#: go-gpuallocator's link scores by ``nvidia-smi topo -m`` word (NVIDIA go-gpuallocator): across CPUs
#: (SYS) 10, same CPU (NODE) 20, host bridge (PHB) 30, several switches (PXB) 40, one switch
#: (PIX) 50; N bonded NVLinks score 100 x N.
LINK_SCORES = MappingProxyType({"SYS": 10, "NODE": 20, "PHB": 30, "PXB": 40, "PIX": 50})


def _pair_score(a: AdvertisedDevice, b: AdvertisedDevice,
                links: Mapping[int, str] | None = None) -> int:
    """Link score of two GPUs, on go-gpuallocator's scale (:data:`LINK_SCORES`).

    With the topology known (``links``), the real link decides: ``NV<n>`` -> 100 x n, PCIe
    words by :data:`LINK_SCORES`. Without it: same NVLink island 100, same NUMA node 20
    (SameCPU), else 10 (CrossCPU). ``links``: ``dict(a.links)`` when the caller has built
    it already (scoring many pairs).
    """
    if a.links:
        word = (dict(a.links) if links is None else links).get(b.gpu_index)
        if word is not None:
            if word.startswith("NV"):
                return 100 * int(word[2:])
            return LINK_SCORES.get(word, 10)
    if a.nvlink_island is not None and a.nvlink_island == b.nvlink_island:
        return 100
    if a.numa_node is not None and a.numa_node == b.numa_node:
        return 20
    return 10


#: Above this many candidate sets, whole-GPU preference turns greedy (it stays deterministic).
EXHAUSTIVE_LIMIT = 5000


def preferred_allocation(resource: AdvertisedResource, available: Sequence[str],
                         must_include: Sequence[str], size: int,
                         policy: str = "distributed") -> list[str]:
    """GetPreferredAllocation for one container.

    Whole GPUs (no replicas, no MIG): the set of ``size`` available GPUs containing
    ``must_include`` with the highest total pair score (:func:`_pair_score`: real links
    from ``nvidia-smi topo -m`` when known, else same NVLink island 100, same NUMA node 20,
    else 10), so a 4-GPU request on a node with islands {0-3} {4-7} lands in one island;
    ties go to the lowest indices.

    Replicas and MIG devices: greedy per physical device. ``distributed`` (default) takes
    next the device whose physical GPU has the fewest replicas in use (allocated before
    the request, i.e. not in ``available``, plus picked in this request), ties to the one
    not yet picked, then the lowest index: a 2-unit request with 2 free GPUs gets one
    replica of each. ``packed`` prefers the most used GPU.

    Returns:
        ``size`` device IDs, ``must_include`` first.

    Raises:
        AllocationError: an unknown ID, ``must_include`` not within ``available``, or not
            enough devices (``not enough available devices to satisfy allocation``).
    """
    for did in itertools.chain(available, must_include):
        if resource.device(did) is None:
            raise AllocationError(f"invalid preferred allocation request for {resource.name}: "
                                  f"unknown device {short_repr(did)}")
    avail = list(dict.fromkeys(available))
    must = list(dict.fromkeys(must_include))
    if any(m not in avail for m in must):
        avail = must + [a for a in avail if a not in must]
    if size < len(must) or size > len(avail) or size < 0:
        raise AllocationError(f"{resource.name}: not enough available devices to satisfy "
                              f"allocation (size {size}, available {len(avail)}, "
                              f"must include {len(must)})")
    if size == len(must):
        return must
    devs = {did: resource.device(did) for did in avail}
    if not resource.is_shared and not resource.is_mig:
        return _preferred_whole_gpus(devs, avail, must, size)
    return _preferred_replicas(resource, devs, avail, must, size, policy)


def _pair_matrix(devs, ids: Sequence[str]) -> list[list[int]]:
    """:func:`_pair_score` of every pair of ``ids`` (0 on the diagonal), each GPU's link
    table built once: 64 GPUs with known links are 4032 scores, not 4032 table builds per
    candidate set."""
    tables = {i: dict(devs[i].links) for i in ids}
    return [[_pair_score(devs[a], devs[b], tables[a]) if a != b else 0 for b in ids]
            for a in ids]


def _preferred_whole_gpus(devs, avail, must, size) -> list[str]:
    order = sorted(avail, key=lambda i: devs[i].gpu_index)
    rest = [i for i in order if i not in must]
    k = size - len(must)
    everyone = list(must) + rest
    at = {d: n for n, d in enumerate(everyone)}
    pair = _pair_matrix(devs, everyone)
    if math.comb(len(rest), k) <= EXHAUSTIVE_LIMIT:
        # A candidate set's score = must-must + must-rest + rest-rest pairs.
        r0 = len(must)
        base = sum(pair[a][b] for a, b in itertools.combinations(range(r0), 2))
        with_must = [sum(pair[r0 + r][m] for m in range(r0)) for r in range(len(rest))]
        best, best_score = (), -1
        for combo in itertools.combinations(range(len(rest)), k):
            total = base + sum(with_must[c] for c in combo) + sum(
                pair[r0 + a][r0 + b] for a, b in itertools.combinations(combo, 2))
            if total > best_score:
                best, best_score = combo, total
        return must + [rest[c] for c in best]
    # Too many sets: grow greedily from each possible seed (must_include, or each GPU) and
    # keep the best grown set; ties go to the earlier seed. Each candidate's gain is updated
    # as the set grows: O(seeds x size x GPUs) steps.
    seeds = [list(must)] if must else [[r] for r in rest]
    best_set, best_total = None, -1
    for seed in seeds:
        picked = list(seed)
        chosen = set(picked)
        gain = {i: sum(pair[at[i]][at[p]] for p in picked) for i in rest if i not in chosen}
        total = sum(pair[at[a]][at[b]] for a, b in itertools.combinations(picked, 2))
        while len(picked) < size:
            nxt = max((i for i in rest if i not in chosen),
                      key=lambda i: (gain[i], -devs[i].gpu_index))
            total += gain.pop(nxt)
            picked.append(nxt)
            chosen.add(nxt)
            row = pair[at[nxt]]
            for i in gain:
                gain[i] += row[at[i]]
        if total > best_total:
            best_set, best_total = picked, total
    return best_set


def _preferred_replicas(resource, devs, avail, must, size, policy) -> list[str]:
    """Greedy per physical device (see :func:`preferred_allocation`), in O(size log P).

    The next device is the minimum over the candidates of (used, fresh, order) for
    ``distributed`` or (-used, order) for ``packed``, where ``used`` and ``fresh`` depend only
    on the candidate's physical device. So each physical device offers its first remaining
    candidate (by order), and only the device just picked from changes its key: a heap of
    one entry per physical device gives the same answer as scanning every candidate at every
    step, without the cubic cost (a 1,000-unit request from 8,000 replicas took minutes).
    """
    total: dict[str, int] = {}
    for d in resource.devices:
        total[d.physical_id] = total.get(d.physical_id, 0) + 1
    free: dict[str, int] = {}
    for did in avail:
        free[devs[did].physical_id] = free.get(devs[did].physical_id, 0) + 1
    in_use = {p: total[p] - free.get(p, 0) for p in total}
    picked = list(must)
    picked_on: dict[str, int] = {}
    for did in must:
        picked_on[devs[did].physical_id] = picked_on.get(devs[did].physical_id, 0) + 1

    def order(i: str) -> tuple:
        d = devs[i]
        return (d.gpu_index, d.mig_index if d.mig_index is not None else -1,
                d.replica if d.replica is not None else -1)

    chosen = set(picked)
    queues: dict[str, list[str]] = {}
    for i in avail:
        if i not in chosen:
            queues.setdefault(devs[i].physical_id, []).append(i)
    for q in queues.values():
        q.sort(key=order, reverse=True)  # pop() from the end gives the smallest order

    def key(pid: str) -> tuple:
        used = in_use[pid] + picked_on.get(pid, 0)
        head = order(queues[pid][-1])
        if policy == "packed":
            return (-used, head)
        return (used, 1 if picked_on.get(pid) else 0, head)

    heap = [(key(pid), pid) for pid in queues]
    heapq.heapify(heap)
    while len(picked) < size:
        _, pid = heapq.heappop(heap)
        choice = queues[pid].pop()
        picked.append(choice)
        picked_on[pid] = picked_on.get(pid, 0) + 1
        if queues[pid]:
            heapq.heappush(heap, (key(pid), pid))
    return picked
