"""GPU inventory: which GPUs (and MIG devices) a node has, as plain records.

Four sources, one result (:class:`Inventory`): a small YAML spec of simulated GPUs
(:func:`from_yaml_spec`, here; see ``examples/*.yaml``), and a real node's GPUs read from
``nvidia-smi -q -x``, ``nvidia-smi -L`` or live NVML (:mod:`.discovery`, which also holds
:func:`~lab02_device_plugin.plugin.discovery.load_inventory`, the reader of any inventory
file). Every source ends in the checks here: the MIG layout against the model's profile
table (:func:`check_mig_layout`) and the device IDs (:func:`check_device_ids`). Nothing here
opens a socket; the sharing logic turns an inventory and a config into advertised resources.
"""

from __future__ import annotations

import re
import uuid as uuidlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from lab02_device_plugin.errors import InputError
from lab02_device_plugin.limits import MAX_GPU_MEMORY_MIB, MAX_GPUS, short_repr, shorten
from lab02_device_plugin.plugin import mig as migmod

#: MIG devices one GPU can have: 7 compute slices, at most one MIG device each (NVIDIA MIG
#: User Guide: "up to seven instances"); A30 has 4.
MAX_MIG_DEVICES_PER_GPU = 7


@dataclass(frozen=True)
class MigDevice:
    """One MIG device (a GPU instance with its compute instance) on a parent GPU.

    Attributes:
        index: MIG device index on its parent (nvidia-smi ``MIG ... Device N``).
        profile: profile name, e.g. ``1g.20gb`` (inferred from memory and SMs when the
            source does not say it).
        gpu_instance_id / compute_instance_id: the GI and CI IDs.
        uuid: ``MIG-<uuid>``; where the source gives none (nvidia-smi XML before v13),
            the legacy form ``MIG-<GPU uuid>/<gi>/<ci>``.
        memory_mib: memory of the instance (MiB).
        multiprocessors: SM count, or None when unknown.
        placement_start: first memory slot (0..7), or None when unknown.
    """

    index: int
    profile: str
    gpu_instance_id: int
    compute_instance_id: int
    uuid: str
    memory_mib: int
    multiprocessors: int | None = None
    placement_start: int | None = None


@dataclass(frozen=True)
class Gpu:
    """One physical GPU.

    Attributes:
        index: nvidia-smi index (PCI bus order; not ``minor_number``).
        uuid: ``GPU-xxxxxxxx-...``.
        model: product name, e.g. ``NVIDIA A100-SXM4-80GB``.
        memory_mib: framebuffer memory (MiB).
        mig_enabled: True / False, or None when the GPU does not support MIG.
        mig_devices: its MIG devices (empty unless MIG is enabled).
        numa_node: NUMA node of its PCI device, or None when unknown.
        nvlink_island: ID of the group of GPUs joined by NVLink, or None.
        pci_bus_id: e.g. ``00000000:01:00.0``.
        minor_number: ``/dev/nvidia<minor>``; defaults to the index.
        links: connection to each peer GPU from ``nvidia-smi topo -m``, as
            ``(peer index, word)`` with words SYS, NODE, PHB, PXB, PIX or NV<n>; empty when
            the topology is unknown (see :mod:`.topology`).
    """

    index: int
    uuid: str
    model: str
    memory_mib: int
    mig_enabled: bool | None = None
    mig_devices: tuple[MigDevice, ...] = ()
    numa_node: int | None = None
    nvlink_island: int | None = None
    pci_bus_id: str | None = None
    minor_number: int | None = None
    links: tuple[tuple[int, str], ...] = ()


@dataclass(frozen=True)
class Inventory:
    """The GPUs of one node, in index order.

    Attributes:
        gpus: the GPUs.
        source: where they came from (a file path, ``nvml`` or ``<spec>``).
        driver_version: driver version when known.
        warnings: things the reader could not fully decode (e.g. an unknown MIG profile).
    """

    gpus: tuple[Gpu, ...]
    source: str = "<inventory>"
    driver_version: str | None = None
    warnings: tuple[str, ...] = field(default=(), compare=False)

    def gpu(self, key: int | str) -> Gpu:
        """The GPU with this index or UUID. Raises InputError when absent."""
        for g in self.gpus:
            if g.index == key or g.uuid == key:
                return g
        raise InputError(f"{self.source}: no GPU {key!r}; expected an index 0..{len(self.gpus) - 1}"
                         " or one of the GPU UUIDs")

    def without(self, *keys: int | str) -> Inventory:
        """A copy without the given GPUs (index or UUID): a GPU lost from the node."""
        drop = {self.gpu(k).uuid for k in keys}
        return replace(self, gpus=tuple(g for g in self.gpus if g.uuid not in drop))


# --------------------------------------------------------------------------- MIG layouts

#: A compute-instance profile smaller than its GPU instance, as nvidia-smi names it
#: (``1c.3g.40gb``: 1 of the 3 compute slices of a 3g.40gb GPU instance).
_CI_PROFILE = re.compile(r"^(\d+)c\.(\d+)g\.")

#: How far a MIG device's memory may be from its profile's ``-lgip`` size (as in
#: :func:`~lab02_device_plugin.plugin.discovery.infer_mig_profile`): 5 %.
_MEMORY_TOLERANCE = 0.05


def check_mig_layout(where: str, model: str, devices: list[MigDevice],
                     warnings: list[str], strict: bool = True) -> tuple[MigDevice, ...]:
    """Check the MIG devices a file (or NVML) reports for one GPU, and keep those NVIDIA's
    plugin would advertise.

    Checks, in order:

    * each MIG device index once on the GPU (a repeated index is a pasted or edited dump);
    * a compute-instance profile smaller than its GPU instance (``1c.3g.40gb``) is dropped
      with a warning: NVIDIA's plugin exposes only MIG devices whose compute instance spans
      their GPU instance (NVIDIA k8s-device-plugin v0.20.0: ``buildMigDeviceMap`` in
      internal/rm/device_map.go, resources from ``AddDefaultResourcesToConfig``, internal/rm/rm.go);
    * a named profile of the model's table must agree with the device's own SM count and
      memory (within 5 % of the ``-lgip`` size): a ``1g.10gb`` device of 40,000 MiB and 98
      SMs is no 1g.10gb;
    * the profiles must be able to coexist on that GPU, as :func:`.mig.plan_layout` checks a
      requested layout (instance counts, 7 compute and 8 memory slices, placements): a file
      claiming seven ``7g.40gb`` devices on one A100-40GB, or 3g.40gb + 3 x 2g.20gb (10
      memory slices of 8), describes no GPU.

    A profile name the table does not have is advertised with a warning (its placement is
    not checked); a model without a table is not checked. With ``strict=False`` (live NVML:
    the hardware is the truth, and a mismatch means the table here is wrong) a layout that
    does not fit becomes a warning and the devices are advertised as reported.

    Returns:
        The devices to advertise, in the given order.

    Raises:
        InputError: a repeated index, a profile that contradicts the device's SMs or memory,
            or (``strict``) profiles that do not fit one GPU of ``model`` (the reason named).
    """
    seen: set[int] = set()
    for d in devices:
        if d.index in seen:
            raise InputError(f"{where}: MIG device {d.index} is listed twice; expected each MIG "
                             "device index once on a GPU")
        seen.add(d.index)
    kept = []
    for d in devices:
        ci = _CI_PROFILE.match(d.profile)
        if ci and ci.group(1) != ci.group(2):
            warnings.append(f"{where} MIG device {d.index}: {shorten(d.profile)} is a compute "
                            f"instance of {ci.group(1)} of its GPU instance's {ci.group(2)} "
                            "compute slices; not advertised, as NVIDIA's plugin exposes only "
                            "MIG devices whose compute instance spans their GPU instance")
            continue
        kept.append(d)
    key = migmod.canonical_model(model)
    if key is None or not kept:
        return tuple(kept)
    table = migmod.PROFILE_TABLES[key]
    for d in kept:
        p = table.get(d.profile)
        if p is None:
            warnings.append(f"{where} MIG device {d.index}: profile {shorten(d.profile)} is not "
                            f"in the {key} table here; advertised, its placement not checked")
            continue
        table_mib = round(p.memory_gib * 1024) if p.memory_gib else 0
        sms_differ = (d.multiprocessors is not None and p.multiprocessors is not None
                      and d.multiprocessors != p.multiprocessors)
        memory_differs = (d.memory_mib > 0 and table_mib > 0
                          and abs(d.memory_mib - table_mib) > _MEMORY_TOLERANCE * table_mib)
        if sms_differ or memory_differs:
            raise InputError(
                f"{where}: MIG device {d.index} is named {d.profile} but has {d.memory_mib} MiB "
                f"and {d.multiprocessors} SMs; expected about {table_mib} MiB (within 5 %) and "
                f"{p.multiprocessors} SMs, as {key}'s {d.profile} has")
    known = [d.profile for d in kept if d.profile in table]
    try:
        migmod.plan_layout(key, known)
    except migmod.NoLayoutError as exc:
        if not strict:
            warnings.append(f"{where}: MIG devices {' + '.join(known)} cannot all be on one "
                            f"{key} by the profile table here ({exc.reason}); advertised as "
                            "reported")
            return tuple(kept)
        raise InputError(f"{where}: MIG devices {' + '.join(known)} cannot all be on one {key}: "
                         f"{exc.reason}; expected a layout nvidia-smi can create") from None
    return tuple(kept)


# --------------------------------------------------------------------------- device IDs

#: Longest device ID the device plugin API allows (``Device.ID``: "max length 63").
MAX_DEVICE_ID = 63
_GPU_ID = re.compile(r"^GPU-[0-9A-Za-z][0-9A-Za-z-]*$")
_MIG_ID = re.compile(r"^MIG-[0-9A-Za-z][0-9A-Za-z/-]*$")


def check_device_ids(gpus, source: str) -> None:
    """Check the UUIDs that become device IDs: ``GPU-`` / ``MIG-`` followed by letters,
    digits and dashes (``/`` in legacy MIG IDs), at most 63 characters (api.proto), never
    ``::`` (the replica separator: ``GPU-1::2`` would be ambiguous), each once on the node
    (a duplicate would silently merge two devices).

    Raises:
        InputError: naming the source, the GPU index (and MIG device) and the UUID.
    """
    seen: dict[str, str] = {}
    for g in gpus:
        ids = [(f"GPU {g.index}", g.uuid, _GPU_ID, "GPU-")]
        ids += [(f"GPU {g.index} MIG device {m.index}", m.uuid, _MIG_ID, "MIG-")
                for m in g.mig_devices]
        for who, uid, pattern, prefix in ids:
            if not pattern.match(uid):
                raise InputError(f"{source}: {who}: UUID {short_repr(uid)}; expected {prefix} followed by "
                                 "letters, digits and dashes (e.g. "
                                 f"{prefix}0c6e1ed6-bd4e-24e7-1b3c-4f4f4fe1c0a5)")
            if len(uid) > MAX_DEVICE_ID:
                raise InputError(f"{source}: {who}: UUID {short_repr(uid, 80)} is {len(uid)} characters; "
                                 f"expected at most {MAX_DEVICE_ID} (Device.ID in the device "
                                 "plugin API)")
            if uid in seen:
                raise InputError(f"{source}: {who}: UUID {uid} is also {seen[uid]}; expected "
                                 "each UUID once")
            seen[uid] = who

# --------------------------------------------------------------------------- YAML spec

#: Default product name and memory (MiB) of models a spec may name by short key.
KNOWN_MODELS: Mapping[str, tuple[str, int]] = MappingProxyType({
    "A100-40GB": ("NVIDIA A100-SXM4-40GB", 40960),
    "A100-80GB": ("NVIDIA A100-SXM4-80GB", 81920),
    "H100-80GB": ("NVIDIA H100 80GB HBM3", 81559),
    "H200-141GB": ("NVIDIA H200", 143771),
    "T4": ("Tesla T4", 15360),
    "L4": ("NVIDIA L4", 23034),
    "V100-32GB": ("Tesla V100-SXM2-32GB", 32768),
})

_SPEC_GPU_KEYS = ("model", "count", "memory_mib", "numa_node", "mig", "uuids")


def _det_uuid(prefix: str, *parts: object) -> str:
    """A deterministic UUID (uuid5) so simulated GPUs keep their IDs between runs."""
    return prefix + str(uuidlib.uuid5(uuidlib.NAMESPACE_URL, "lab02/" + "/".join(map(str, parts))))


def from_yaml_spec(spec: Any, source: str = "<spec>") -> Inventory:
    """Build simulated GPUs from a spec (a parsed YAML mapping).

    Format (every key but ``gpus[].model`` optional)::

        gpus:
        - model: H100-80GB          # a KNOWN_MODELS key, or any product name with memory_mib
          count: 8                  # default 1
          memory_mib: 81559         # default from KNOWN_MODELS
          numa_node: 0              # or a list, one per GPU of this entry
          uuids: [GPU-...]          # default: deterministic uuid5 per node name and index
          mig:
            enabled: true
            instances: [3g.40gb, 2g.20gb, 1g.10gb, 1g.10gb]   # placed by mig.plan_layout
        nvlink_islands: [[0, 1, 2, 3], [4, 5, 6, 7]]          # GPU indices per island
        node: sim-node-0                                      # seeds the generated UUIDs

    Raises:
        InputError: naming the key (``gpus[0].mig.instances[2]``) and the expected value.
    """
    if spec is None:
        raise InputError(f"{source}: empty file; expected a YAML GPU spec (a mapping with a "
                         "`gpus:` list), an `nvidia-smi -q -x` XML dump or `nvidia-smi -L` output")
    if not isinstance(spec, Mapping):
        raise InputError(f"{source}: (top level): expected a mapping with a `gpus:` list, got {short_repr(spec)}")
    unknown = [k for k in spec if k not in ("gpus", "nvlink_islands", "node")]
    if unknown:
        raise InputError(f"{source}: {shorten(str(unknown[0]))}: unknown key; expected one of gpus, "
                         "nvlink_islands, node")
    node = str(spec.get("node", "sim-node"))
    entries = spec.get("gpus")
    if not isinstance(entries, list) or not entries:
        raise InputError(f"{source}: gpus: expected a non-empty list of GPU entries, got {short_repr(entries)}")
    gpus: list[Gpu] = []
    for e, entry in enumerate(entries):
        path = f"{source}: gpus[{e}]"
        if not isinstance(entry, Mapping):
            raise InputError(f"{path}: expected a mapping with at least `model`, got {short_repr(entry)}")
        for k in entry:
            if k not in _SPEC_GPU_KEYS:
                raise InputError(f"{path}.{shorten(str(k))}: unknown key; expected one of {', '.join(_SPEC_GPU_KEYS)}")
        model = entry.get("model")
        if not isinstance(model, str) or not model:
            raise InputError(f"{path}.model: expected a GPU model such as H100-80GB "
                             f"({', '.join(KNOWN_MODELS)}) or a product name, got {short_repr(model)}")
        product, default_mem = KNOWN_MODELS.get(model, (model, None))
        if default_mem is None and entry.get("memory_mib") is None:
            raise InputError(f"{path}.model: unknown model {short_repr(model)}; expected one of "
                             f"{', '.join(KNOWN_MODELS)}, or give memory_mib for another "
                             "product name")
        count = entry.get("count", 1)
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise InputError(f"{path}.count: expected a positive integer, got {short_repr(count)}")
        if len(gpus) + count > MAX_GPUS:
            raise InputError(f"{path}.count: {count} GPUs" + (f" after {len(gpus)}" if gpus else "")
                             + f"; expected at most {MAX_GPUS} GPUs on one node (the largest "
                             "single-host systems have 16; see lab02_device_plugin.limits)")
        memory = entry.get("memory_mib", default_mem)
        if isinstance(memory, bool) or not isinstance(memory, int) or memory <= 0:
            raise InputError(f"{path}.memory_mib: expected a positive integer (MiB)"
                             + ("" if default_mem else f"; required for model {short_repr(model)}")
                             + f", got {short_repr(memory)}")
        if memory > MAX_GPU_MEMORY_MIB:
            raise InputError(f"{path}.memory_mib: expected at most {MAX_GPU_MEMORY_MIB} MiB (1 TiB; "
                             f"the largest GPUs have under 300 GB), got {short_repr(memory)}")
        numa = entry.get("numa_node")
        numas = numa if isinstance(numa, list) else [numa] * count
        if len(numas) != count or not all(n is None or (isinstance(n, int) and not isinstance(n, bool)
                                                        and n >= 0) for n in numas):
            raise InputError(f"{path}.numa_node: expected a NUMA node >= 0 or a list of {count}, "
                             f"got {short_repr(numa)}")
        uuids = entry.get("uuids")
        if uuids is not None and (not isinstance(uuids, list) or len(uuids) != count or not all(
                isinstance(u, str) and u.startswith("GPU-") for u in uuids)):
            raise InputError(f"{path}.uuids: expected a list of {count} `GPU-...` UUIDs, got {short_repr(uuids)}")
        mig_spec = entry.get("mig")
        mig_enabled: bool | None = None
        instances: list[str] = []
        if mig_spec is not None:
            if not isinstance(mig_spec, Mapping) or any(k not in ("enabled", "instances") for k in mig_spec):
                raise InputError(f"{path}.mig: expected a mapping with `enabled` and `instances`, "
                                 f"got {short_repr(mig_spec)}")
            mig_enabled = mig_spec.get("enabled", True)
            if not isinstance(mig_enabled, bool):
                raise InputError(f"{path}.mig.enabled: expected true or false, got {short_repr(mig_enabled)}")
            instances = mig_spec.get("instances") or []
            if not isinstance(instances, list):
                raise InputError(f"{path}.mig.instances: expected a list of MIG profile names, "
                                 f"got {short_repr(instances)}")
            if len(instances) > MAX_MIG_DEVICES_PER_GPU:
                raise InputError(f"{path}.mig.instances: {len(instances)} instances; expected at "
                                 f"most {MAX_MIG_DEVICES_PER_GPU} (a GPU has 7 compute slices)")
            if instances and not mig_enabled:
                raise InputError(f"{path}.mig.instances: MIG instances need mig.enabled: true")
            if mig_enabled and migmod.canonical_model(product) is None:
                raise InputError(f"{path}.mig.enabled: {short_repr(model)} has no MIG profile table; expected "
                                 f"one of {', '.join(migmod.GPU_MODELS)}")
            for i, name in enumerate(instances):
                if not isinstance(name, str) or name not in migmod.profiles(product):
                    raise InputError(f"{path}.mig.instances[{i}]: expected a profile of "
                                     f"{migmod.canonical_model(product)} "
                                     f"({', '.join(migmod.profiles(product))}), got {short_repr(name)}")
        layout = None
        if instances:
            try:
                layout = migmod.plan_layout(product, instances)
            except migmod.NoLayoutError as exc:
                raise InputError(f"{path}.mig.instances: {exc.reason}") from None
        for k in range(count):
            index = len(gpus)
            gpu_uuid = uuids[k] if uuids else _det_uuid("GPU-", node, index)
            devices = []
            if layout is not None:
                for j, pl in enumerate(layout.placements):
                    p = pl.profile
                    mem = int(round(p.memory_gib * 1024)) if p.memory_gib else \
                        memory * p.memory_slices // migmod.MEMORY_SLICES
                    # GI IDs as nvidia-smi numbers them are driver-chosen; we number from 1.
                    devices.append(MigDevice(j, p.name, j + 1, 0, _det_uuid("MIG-", gpu_uuid, j),
                                             mem, p.multiprocessors, pl.start))
            gpus.append(Gpu(index, gpu_uuid, product, memory, mig_enabled, tuple(devices),
                            numas[k], None, f"00000000:{0x10 + index:02X}:00.0", index))
    islands = spec.get("nvlink_islands")
    if islands is not None:
        if not isinstance(islands, list) or not all(isinstance(i, list) for i in islands):
            raise InputError(f"{source}: nvlink_islands: expected a list of lists of GPU indices, "
                             f"got {short_repr(islands)}")
        island_of: dict[int, int] = {}
        for i, members in enumerate(islands):
            for j, idx in enumerate(members):
                if isinstance(idx, bool) or not isinstance(idx, int) or not 0 <= idx < len(gpus):
                    raise InputError(f"{source}: nvlink_islands[{i}][{j}]: expected a GPU index "
                                     f"0..{len(gpus) - 1}, got {short_repr(idx)}")
                if idx in island_of:
                    raise InputError(f"{source}: nvlink_islands[{i}][{j}]: GPU {idx} is already "
                                     f"in island {island_of[idx]}; expected each GPU once")
                island_of[idx] = i
        gpus = [replace(g, nvlink_island=island_of.get(g.index)) for g in gpus]
    check_device_ids(gpus, source)
    return Inventory(tuple(gpus), source)
