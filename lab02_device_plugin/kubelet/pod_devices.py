"""Which devices each container holds, and what its runtime receives (pod_devices.go).

An :class:`Allocation` is one (pod, container, resource) entry of the kubelet's podDevices:
the device IDs, their NUMA nodes and the plugin's ContainerAllocateResponse.
:func:`run_container_options` merges a container's responses, one per resource, as the
kubelet's ``deviceRunContainerOptions`` does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from lab02_device_plugin.api import deviceplugin_pb2 as pb

#: Devices with no NUMA topology are checkpointed under this node (pod_devices.go).
NODE_WITHOUT_TOPOLOGY = -1


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
class Allocation:
    """One (pod, container, resource) entry of the kubelet's podDevices."""

    pod_uid: str
    pod_name: str
    container: str
    resource: str
    device_ids: list[str]
    response: pb.ContainerAllocateResponse
    numa: dict[str, int] = field(default_factory=dict)


def run_container_options(allocations: Iterable[Allocation], pod_uid: str, container: str,
                          narrate: Callable[[str], None]) -> RunContainerOptions:
    """Merge the Allocate responses of one container, one per resource, in allocation order;
    a conflicting environment variable keeps its first value and is narrated."""
    options = RunContainerOptions()
    paths, mounts, cdi = set(), set(), set()
    for allocation in allocations:
        if allocation.pod_uid != pod_uid or allocation.container != container:
            continue
        resp = allocation.response
        for key, value in sorted(resp.envs.items()):
            if key in options.envs and options.envs[key] != value:
                narrate(f"Environment variable {key} of {container} has conflicting "
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


def response_text(response: pb.ContainerAllocateResponse) -> str:
    """One line naming everything an Allocate response gives the container (for the narration)."""
    parts = [f"{k}={v}" for k, v in sorted(response.envs.items())]
    parts += [f"mount {m.host_path}:{m.container_path}" for m in response.mounts]
    parts += [f"device {d.host_path}" for d in response.devices]
    parts += [f"annotation {k}={v}" for k, v in sorted(response.annotations.items())]
    parts += [f"CDI {c.name}" for c in response.cdi_devices]
    return ", ".join(parts) or "(empty response)"
