"""The device manager's checkpoint file (pkg/kubelet/cm/devicemanager/checkpoint/checkpoint.go).

``kubelet_internal_checkpoint`` in the plugin directory keeps, across kubelet restarts, every
allocation (pod UID, container, resource, device IDs per NUMA node, the plugin's
ContainerAllocateResponse) and the devices each registered resource had. The shape is the
kubelet's, ``{"Data": {"PodDeviceEntries": [...], "RegisteredDevices": {...}}, "Checksum":
n}``. The kubelet's checksum hashes Go's printed form of the data, which cannot be reproduced
here; ours is CRC-32 of the canonical JSON of ``Data``. Pod names are kept in a side field
(``PodNames``) for the narration.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import zlib
from collections.abc import Iterable, Mapping
from pathlib import Path

from lab02_device_plugin.api import deviceplugin_pb2 as pb
from lab02_device_plugin.kubelet.pod_devices import NODE_WITHOUT_TOPOLOGY, Allocation
from lab02_device_plugin.limits import MAX_INVENTORY_BYTES

CHECKPOINT_NAME = "kubelet_internal_checkpoint"


class CorruptCheckpoint(ValueError):
    """A checkpoint file that cannot be read back (the message says why); the kubelet logs
    it and starts with no allocations."""


def checksum(data: dict) -> int:
    """CRC-32 of ``data`` as canonical JSON (sorted keys, no spaces)."""
    return zlib.crc32(json.dumps(data, sort_keys=True, separators=(",", ":")).encode())


def checkpoint_data(allocations: Iterable[Allocation], registered: Mapping[str, list[str]]) -> dict:
    """The ``Data`` of a checkpoint: one ``PodDeviceEntries`` item per allocation, its device
    IDs grouped by NUMA node (``-1`` without topology), and ``RegisteredDevices`` (resource ->
    healthy device IDs)."""
    entries = []
    for a in allocations:
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
    return {"PodDeviceEntries": entries, "RegisteredDevices": dict(registered)}


def write_checkpoint(path: Path, allocations: list[Allocation], registered: Mapping[str, list[str]]) -> None:
    """Write the checkpoint to ``path`` atomically (a temporary file, then a rename); a
    directory removed under us (test teardown) is ignored."""
    data = checkpoint_data(allocations, registered)
    names = {a.pod_uid: a.pod_name for a in allocations}
    document = {"Data": data, "Checksum": checksum(data), "PodNames": names}
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(json.dumps(document, indent=1, sort_keys=True))
        os.replace(tmp, path)
    except FileNotFoundError:
        pass


def read_checkpoint(path: Path) -> tuple[list[Allocation], list[str]] | None:
    """``readCheckpoint``: the allocations and the registered resource names of the
    checkpoint at ``path``, or None when there is none.

    Raises:
        CorruptCheckpoint: larger than ``MAX_INVENTORY_BYTES``, not JSON, a checksum
            mismatch, or entries of the wrong shape (the message is the underlying error's).
    """
    if not path.exists():
        return None
    try:
        if path.stat().st_size > MAX_INVENTORY_BYTES:
            raise ValueError(f"larger than {MAX_INVENTORY_BYTES} bytes")
        document = json.loads(path.read_text())
        data = document["Data"]
        if document.get("Checksum") != checksum(data):
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
            allocations.append(Allocation(entry["PodUID"], names.get(entry["PodUID"], entry["PodUID"]),
                                          entry["ContainerName"], entry["ResourceName"], ids,
                                          response, numa))
        registered = list((data.get("RegisteredDevices") or {}).keys())
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError,
            binascii.Error) as exc:
        raise CorruptCheckpoint(str(exc)) from exc
    return allocations, registered
