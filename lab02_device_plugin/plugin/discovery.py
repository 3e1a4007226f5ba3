"""A real node's GPUs: ``nvidia-smi -q -x``, ``nvidia-smi -L``, live NVML, and inventory files.

* :func:`from_nvidia_smi_xml`: an ``nvidia-smi -q -x`` dump (the real format, DTD v10-v13);
* :func:`from_nvidia_smi_list`: ``nvidia-smi -L`` (GPU and MIG UUIDs; :func:`with_mig_uuids`
  adds the real MIG UUIDs to an older XML dump that lacks them);
* :func:`from_nvml`: live NVML through nvidia-ml-py (``import pynvml``, optional).

:func:`load_inventory` reads a file of either nvidia-smi format or a YAML spec of simulated
GPUs (:func:`~lab02_device_plugin.plugin.inventory.from_yaml_spec`), chosen by content.
Each gives an :class:`~lab02_device_plugin.plugin.inventory.Inventory`, checked as every
inventory is (MIG layout, device IDs).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

import defusedxml
import defusedxml.ElementTree as DET

from lab02_device_plugin.errors import InputError
from lab02_device_plugin.limits import (
    MAX_GPU_MEMORY_MIB, MAX_GPUS, MAX_INVENTORY_BYTES, MAX_YAML_BYTES, read_text_bounded,
    require_utf8, safe_load_bounded, short_repr, shorten,
)
from lab02_device_plugin.plugin import mig as migmod
from lab02_device_plugin.plugin.config import yaml_marks
from lab02_device_plugin.plugin.inventory import (
    MAX_MIG_DEVICES_PER_GPU, Gpu, Inventory, MigDevice, check_device_ids, check_mig_layout,
    from_yaml_spec,
)


# --------------------------------------------------------------------------- nvidia-smi XML

def _text(el: ET.Element | None, path: str) -> str | None:
    if el is None:
        return None
    found = el.find(path)
    if found is None or found.text is None:
        return None
    value = found.text.strip()
    return value or None


def _mib(value: str | None) -> int | None:
    if value is None:
        return None
    m = re.match(r"^\s*(\d{1,18})\s*MiB\s*$", value)
    return int(m.group(1)) if m else None


def _memory(el: ET.Element, path: str, where: str) -> int:
    """Memory (MiB) of ``<path>`` such as ``fb_memory_usage/total`` = ``"81920 MiB"``;
    0 when absent or ``N/A``.

    Raises:
        InputError: any other text, naming the element (a total read as 0 would hide a GPU's
            memory).
    """
    text = _text(el, path)
    if text is None or text == "N/A":
        return 0
    value = _mib(text)
    element = "".join(f"<{part}>" for part in path.split("/"))
    if value is None or value > MAX_GPU_MEMORY_MIB:
        raise InputError(f"{where}: {element} is {short_repr(text)}; expected '<number> MiB', "
                         f"at most {MAX_GPU_MEMORY_MIB} MiB (1 TiB)")
    return value


def _int(value: str | None) -> int | None:
    if value is None or not re.fullmatch(r"-?\d{1,18}", value):
        return None
    return int(value)


def infer_mig_profile(model: str, memory_mib: int, multiprocessors: int | None) -> str | None:
    """Name the profile of a MIG device from its memory and SM count (None if no match).

    Older nvidia-smi XML gives neither profile nor UUID for MIG devices, only memory and
    SMs; we pick the profile of the parent's table whose ``-lgip`` memory is nearest (within
    5 %) and whose SM count matches when both are known. Example: A100-SXM4-80GB,
    19968 MiB, 14 SMs -> ``1g.20gb`` (19.50 GiB x 1024 = 19968 MiB, 14 SMs).
    """
    key = migmod.canonical_model(model)
    if key is None:
        return None
    best, best_err = None, 0.05
    for p in migmod.PROFILE_TABLES[key].values():
        if p.media_extensions:
            continue
        mem_mib = p.memory_gib * 1024 if p.memory_gib else (
            migmod.nominal_memory_gb(key) * 1000 / 1.048576 * p.memory_slices / migmod.MEMORY_SLICES)
        if multiprocessors is not None and p.multiprocessors is not None \
                and p.multiprocessors != multiprocessors:
            continue
        err = abs(mem_mib - memory_mib) / mem_mib
        if err <= best_err:
            best, best_err = p.name, err
    return best


def from_nvidia_smi_xml(source: str | Path, text: str | None = None) -> Inventory:
    """Read an ``nvidia-smi -q -x`` dump.

    Args:
        source: the file path (read unless ``text`` is given; used in messages).
        text: the XML itself, optional.

    Returns:
        GPUs sorted by PCI bus ID (nvidia-smi's index order; ``minor_number`` can differ,
        e.g. 1, 2, 3, 0 in the Azure 4x K80 dump). MIG devices with profile (inferred
        from memory and SMs when absent), GI/CI IDs, UUID (legacy ``MIG-<GPU uuid>/gi/ci``
        form when absent) and memory. NUMA node and NVLink island are not in the dump (None).

    Raises:
        InputError: unreadable file, malformed XML, or a ``<gpu>`` without UUID/product name.
    """
    src = str(source)
    if text is None:
        text = read_text_bounded(source, MAX_INVENTORY_BYTES, "inventory")
    if not text.strip():
        raise InputError(f"{src}: empty file; expected `nvidia-smi -q -x` output (XML)")
    # The DTD line (`<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">`) points at a
    # file that is not there and is never loaded. Entity declarations are refused: real dumps
    # have none, and expat lets an entity expand 100-fold once past 8 MiB, so a 4 MB file
    # with one 4 MB entity used 99 times would become a GPU model of 400 MB.
    try:
        root = DET.fromstring(text, forbid_dtd=False, forbid_entities=True, forbid_external=True)
    except defusedxml.EntitiesForbidden as exc:
        raise InputError(f"{_where_in(src, text, '<!ENTITY')}: an entity declaration "
                         f"(<!ENTITY {shorten(str(exc.name))} ...>); expected `nvidia-smi -q -x` "
                         "output, which declares none (entity expansion is refused)") from None
    except defusedxml.DefusedXmlException as exc:  # an external reference, a forbidden DTD
        raise InputError(f"{src}: {shorten(str(exc), 100)}; expected `nvidia-smi -q -x` output, "
                         "which refers to no external file") from None
    except ET.ParseError as exc:
        line, col = exc.position
        reason = str(exc).rsplit(": line ", 1)[0]  # expat's words, e.g. an entity bomb refused
        raise InputError(f"{src}:{line}:{col + 1}: malformed XML ({shorten(reason, 100)}); "
                         "expected `nvidia-smi -q -x` output") from None
    if root.tag != "nvidia_smi_log":
        raise InputError(f"{src}: root element <{shorten(root.tag)}>; expected <nvidia_smi_log> "
                         "(`nvidia-smi -q -x` output)")
    gpu_elements = root.findall("gpu")
    if len(gpu_elements) > MAX_GPUS:
        raise InputError(f"{src}: {len(gpu_elements)} <gpu> elements; expected at most {MAX_GPUS} "
                         "GPUs on one node (see lab02_device_plugin.limits)")
    warnings: list[str] = []
    raw = []
    for n, g in enumerate(gpu_elements):
        where = f"{src}: <gpu> #{n}"
        uuid = _text(g, "uuid")
        model = _text(g, "product_name")
        if not uuid or not model:
            raise InputError(f"{where}: missing <uuid> or <product_name>; expected both")
        bus = g.get("id") or _text(g, "pci/pci_bus_id")
        memory = _memory(g, "fb_memory_usage/total", where)
        mig_current = _text(g, "mig_mode/current_mig")
        mig_enabled = None if mig_current in (None, "N/A") else mig_current == "Enabled"
        devices = []
        mig_elements = g.findall("mig_devices/mig_device")
        if len(mig_elements) > MAX_MIG_DEVICES_PER_GPU:
            raise InputError(f"{where}: {len(mig_elements)} <mig_device> elements; expected at "
                             f"most {MAX_MIG_DEVICES_PER_GPU} (a GPU has 7 compute slices)")
        if mig_elements and mig_enabled is not True:
            n = len(mig_elements)
            raise InputError(f"{where}: {n} <mig_device> element{'s' if n > 1 else ''} while "
                             f"<mig_mode><current_mig> is {shorten(mig_current or 'absent')}; "
                             "expected MIG devices only on a GPU whose current MIG mode is "
                             "Enabled")
        for pos, m in enumerate(mig_elements):
            gi = _int(_text(m, "gpu_instance_id"))
            ci = _int(_text(m, "compute_instance_id"))
            idx = _int(_text(m, "index"))
            mem = _memory(m, "fb_memory_usage/total", f"{where} <mig_device> #{pos}")
            sms = _int(_text(m, "device_attributes/shared/multiprocessor_count"))
            named = _text(m, "profile_name") or _text(m, "mig_profile")
            profile = re.sub(r"^MIG\s+", "", named) if named else infer_mig_profile(model, mem, sms)
            index = idx if idx is not None else pos
            if profile is None:
                warnings.append(_unnamed_mig(f"{where} MIG device {index}", model, mem, sms))
                continue
            mig_uuid = _text(m, "uuid") or f"MIG-{uuid}/{gi}/{ci}"
            devices.append(MigDevice(index, profile, gi if gi is not None else -1,
                                     ci if ci is not None else -1, mig_uuid, mem, sms))
        devices = check_mig_layout(where, model, devices, warnings)
        numa = _int(_text(g, "numa_node"))
        raw.append((bus or "", uuid, model, memory, mig_enabled, tuple(devices), numa,
                    _int(_text(g, "minor_number"))))
    raw.sort(key=lambda r: r[0].lower())
    gpus = tuple(Gpu(i, uuid, model, mem, mig, devs, numa, None, bus or None, minor)
                 for i, (bus, uuid, model, mem, mig, devs, numa, minor) in enumerate(raw))
    check_device_ids(gpus, src)
    return Inventory(gpus, src, _text(root, "driver_version"), tuple(warnings))


def _where_in(src: str, text: str, needle: str) -> str:
    """``<src>:<line>:<column>`` of the first ``needle`` in ``text`` (``<src>`` if absent)."""
    at = text.find(needle)
    if at < 0:
        return src
    line = text.count("\n", 0, at) + 1
    return f"{src}:{line}:{at - (text.rfind(chr(10), 0, at) + 1) + 1}"

def _unnamed_mig(who: str, model: str, memory_mib: int, sms: int | None) -> str:
    """The warning for a MIG device whose GPU-instance profile cannot be named."""
    if migmod.canonical_model(model) is None:
        return (f"{who}: {model} has no MIG profile table here, and the dump names no profile; "
                "not advertised")
    return (f"{who}: {memory_mib} MiB and {sms} SMs match no GPU-instance profile of "
            f"{migmod.canonical_model(model)} (a compute instance smaller than its GPU "
            "instance?); not advertised, as NVIDIA's plugin exposes only MIG devices whose "
            "compute instance spans their GPU instance")


# --------------------------------------------------------------------------- nvidia-smi -L

_L_GPU = re.compile(r"^GPU (\d{1,9}): (.+?) \(UUID: (GPU-[^)\s]+)\)\s*$")
_L_MIG = re.compile(r"^\s+MIG (\S+)\s+Device\s+(\d{1,9}): \(UUID: (MIG-[^)\s]+)\)\s*$")

#: Full-GPU memory (MiB) of the MIG-capable models, for listings that do not state it.
_MIG_MODEL_MEMORY = MappingProxyType({"A100-40GB": 40960, "A100-80GB": 81920,
                                      "H100-80GB": 81559, "H200-141GB": 143771})


def from_nvidia_smi_list(text: str, source: str = "<nvidia-smi -L>") -> Inventory:
    """Read ``nvidia-smi -L`` output (GPU and MIG lines; other lines are skipped).

    ``-L`` gives index, product name and UUID of each GPU and, for MIG, the profile, index
    and real ``MIG-`` UUID of each MIG device, but no memory and no GI/CI IDs: memory comes
    from the model (A100/H100/H200 tables; 0 with a warning otherwise), GI/CI are -1.
    The MIG UUIDs are what older ``-q -x`` dumps lack: see :func:`with_mig_uuids`. A GPU
    of a MIG-capable model without MIG lines is recorded with MIG disabled (``-L`` cannot
    tell "disabled" from "enabled, no instances").

    Raises:
        InputError: no GPU line, a GPU listed twice, or a MIG line before any GPU line
            (line number named).
    """
    gpus: list[dict] = []
    warnings: list[str] = []
    for n, line in enumerate(text.splitlines(), start=1):
        m = _L_GPU.match(line)
        if m:
            if len(gpus) >= MAX_GPUS:
                raise InputError(f"{source}:{n}: more than {MAX_GPUS} GPU lines; expected at most "
                                 f"{MAX_GPUS} GPUs on one node (see lab02_device_plugin.limits)")
            if any(g["index"] == int(m.group(1)) for g in gpus):
                raise InputError(f"{source}:{n}: GPU {m.group(1)} listed twice; expected one "
                                 "`nvidia-smi -L` listing")
            gpus.append(dict(index=int(m.group(1)), model=m.group(2), uuid=m.group(3), migs=[]))
            continue
        m = _L_MIG.match(line)
        if m:
            if not gpus:
                raise InputError(f"{source}:{n}: MIG device line before any GPU line; expected "
                                 "`nvidia-smi -L` output")
            if len(gpus[-1]["migs"]) >= MAX_MIG_DEVICES_PER_GPU:
                raise InputError(f"{source}:{n}: more than {MAX_MIG_DEVICES_PER_GPU} MIG devices on "
                                 f"GPU {gpus[-1]['index']}; expected at most "
                                 f"{MAX_MIG_DEVICES_PER_GPU} (a GPU has 7 compute slices)")
            gpus[-1]["migs"].append((m.group(1), int(m.group(2)), m.group(3)))
    if not gpus:
        raise InputError(f"{source}: no 'GPU <n>: <name> (UUID: GPU-...)' line; expected "
                         "`nvidia-smi -L` output")
    out = []
    for g in gpus:
        key = migmod.canonical_model(g["model"])
        memory = _MIG_MODEL_MEMORY.get(key, 0) if key else 0
        if not memory:
            warnings.append(f"{source}: GPU {g['index']} ({g['model']}): memory unknown from "
                            "nvidia-smi -L; recorded as 0 MiB")
        devices = []
        for profile, j, uuid in g["migs"]:
            p = migmod.PROFILE_TABLES[key].get(profile) if key else None
            mem = int(round(p.memory_gib * 1024)) if p is not None and p.memory_gib else (
                memory * p.memory_slices // migmod.MEMORY_SLICES if p is not None else 0)
            devices.append(MigDevice(j, profile, -1, -1, uuid, mem,
                                     p.multiprocessors if p is not None else None))
        devices = list(check_mig_layout(f"{source}: GPU {g['index']}", g["model"], devices,
                                        warnings))
        mig_enabled = True if devices else (False if key else None)
        out.append(Gpu(g["index"], g["uuid"], g["model"], memory, mig_enabled, tuple(devices),
                       minor_number=g["index"]))
    check_device_ids(out, source)
    return Inventory(tuple(out), source, None, tuple(warnings))


def with_mig_uuids(inventory: Inventory, listing: Inventory) -> Inventory:
    """Replace legacy MIG IDs (``MIG-<GPU uuid>/<gi>/<ci>``) by the real UUIDs of a listing.

    Matches GPUs by UUID and MIG devices by index (and profile); GPUs of the listing that
    the inventory lacks are ignored (the A100 ``-q -x`` sample keeps 1 of 4 GPUs).

    Raises:
        InputError: no GPU of the listing is in the inventory (a listing of another node),
            a MIG device of the inventory is not in the listing of its GPU (``-L`` lists
            every MIG device, so the two describe different layouts), or a matched MIG
            device has a different profile in the two sources.
    """
    by_uuid = {g.uuid: g for g in listing.gpus}
    if not any(g.uuid in by_uuid for g in inventory.gpus):
        raise InputError(f"{listing.source}: none of its {len(listing.gpus)} GPU UUIDs is among "
                         f"the {len(inventory.gpus)} GPUs of {inventory.source}; expected a "
                         "listing of the same node")
    gpus = []
    for g in inventory.gpus:
        other = by_uuid.get(g.uuid)
        if other is None:
            gpus.append(g)
            continue
        real = {m.index: m for m in other.mig_devices}
        missing = [m.index for m in g.mig_devices if m.index not in real]
        if missing:
            listed = ", ".join(str(i) for i in sorted(real)) or "none"
            raise InputError(f"{listing.source}: GPU {g.index} lists MIG devices {listed}, but "
                             f"{inventory.source} also has MIG device {missing[0]}; expected "
                             "listings of the same MIG layout (nvidia-smi -L lists every MIG "
                             "device)")
        devices = []
        for m in g.mig_devices:
            r = real[m.index]
            if r.profile != m.profile:
                raise InputError(f"{listing.source}: GPU {g.index} MIG device {m.index} is "
                                 f"{r.profile}, but {inventory.source} says {m.profile}; expected "
                                 "listings of the same MIG layout")
            devices.append(replace(m, uuid=r.uuid))
        gpus.append(replace(g, mig_devices=tuple(devices)))
    return replace(inventory, gpus=tuple(gpus))

# --------------------------------------------------------------------------- NVML

class NvmlUnavailable(InputError):
    """NVML cannot be used at all: nvidia-ml-py is missing or ``nvmlInit`` fails (no driver,
    no GPU). The one failure that ``flags.failOnInitError: false`` tolerates."""


def from_nvml(nvml: Any = None) -> Inventory:
    """Read the live GPUs through NVML (nvidia-ml-py).

    Args:
        nvml: the ``pynvml`` module, or a stand-in with the same functions (tests pass a fake).

    The bounds and checks of files: at most :data:`~.limits.MAX_GPUS` GPUs of at most
    :data:`~.limits.MAX_GPU_MEMORY_MIB` MiB, at most 7 MIG devices a GPU and the device IDs
    (:func:`~lab02_device_plugin.plugin.inventory.check_device_ids`); the MIG layout is
    checked against the model's table
    (:func:`~lab02_device_plugin.plugin.inventory.check_mig_layout`) but a misfit is only a
    warning, as NVML reports what the GPU has.

    Raises:
        NvmlUnavailable: nvidia-ml-py is not installed or NVML cannot initialise (no driver/GPU).
        InputError: an NVML call fails for one GPU (named), or a check above fails.
    """
    if nvml is None:
        try:
            import pynvml as nvml  # type: ignore[import-not-found]
        except ImportError:
            raise NvmlUnavailable("NVML: the nvidia-ml-py package is not installed (pip install "
                             "'gpu-sharing-course[nvml]'); pass --inventory FILE (nvidia-smi XML "
                             "or a YAML spec) to simulate GPUs instead") from None
    try:
        nvml.nvmlInit()
    except Exception as exc:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...
        raise NvmlUnavailable(f"NVML: cannot initialise ({exc}); no NVIDIA driver or GPU here? "
                         "pass --inventory FILE to simulate GPUs instead") from None

    def s(value: Any) -> str:
        return value.decode() if isinstance(value, bytes) else str(value)

    warnings: list[str] = []
    i = -1
    try:
        driver = s(nvml.nvmlSystemGetDriverVersion())
        gpus = []
        count = int(nvml.nvmlDeviceGetCount())
        if count > MAX_GPUS:
            raise InputError(f"NVML: {count} GPUs; expected at most {MAX_GPUS} GPUs on one node "
                             "(see lab02_device_plugin.limits)")
        for i in range(count):
            h = nvml.nvmlDeviceGetHandleByIndex(i)
            uuid, name = s(nvml.nvmlDeviceGetUUID(h)), s(nvml.nvmlDeviceGetName(h))
            mem = int(nvml.nvmlDeviceGetMemoryInfo(h).total) // (1024 * 1024)
            if not 0 <= mem <= MAX_GPU_MEMORY_MIB:
                raise InputError(f"NVML: GPU {i}: {mem} MiB of memory; expected at most "
                                 f"{MAX_GPU_MEMORY_MIB} MiB (1 TiB)")
            try:
                current, _pending = nvml.nvmlDeviceGetMigMode(h)
                mig_enabled: bool | None = bool(current)
            except Exception:  # NVMLError_NotSupported on GPUs without MIG
                mig_enabled = None
            devices = []
            if mig_enabled:
                slots = min(int(nvml.nvmlDeviceGetMaxMigDeviceCount(h)), MAX_MIG_DEVICES_PER_GPU)
                for j in range(slots):
                    try:
                        m = nvml.nvmlDeviceGetMigDeviceHandleByIndex(h, j)
                    except Exception:  # NVMLError_NotFound: empty slot
                        continue
                    mmem = int(nvml.nvmlDeviceGetMemoryInfo(m).total) // (1024 * 1024)
                    attrs = nvml.nvmlDeviceGetAttributes(m)
                    sms = int(attrs.multiprocessorCount)
                    profile = infer_mig_profile(name, mmem, sms)
                    if profile is None:
                        warnings.append(_unnamed_mig(f"nvml: GPU {i} MIG device {j}", name,
                                                     mmem, sms))
                        continue
                    devices.append(MigDevice(j, profile, int(nvml.nvmlDeviceGetGpuInstanceId(m)),
                                             int(nvml.nvmlDeviceGetComputeInstanceId(m)),
                                             s(nvml.nvmlDeviceGetUUID(m)), mmem, sms))
                devices = list(check_mig_layout(f"nvml: GPU {i}", name, devices, warnings,
                                                strict=False))
            bus = None
            try:
                bus = s(nvml.nvmlDeviceGetPciInfo(h).busId)
            except Exception:
                pass
            numa = _sysfs_numa_node(bus)
            gpus.append(Gpu(i, uuid, name, mem, mig_enabled, tuple(devices), numa, None, bus,
                            int(nvml.nvmlDeviceGetMinorNumber(h))))
    except InputError:
        raise
    except Exception as exc:  # NVMLError_GpuIsLost, _Unknown, ... on one GPU
        who = f"GPU {i}" if i >= 0 else "the driver"
        raise InputError(f"NVML: {who}: {shorten(str(exc) or type(exc).__name__, 100)}; expected "
                         "every GPU to answer (is one lost? `nvidia-smi` shows it)") from None
    finally:
        try:
            nvml.nvmlShutdown()
        except Exception:
            pass
    check_device_ids(gpus, "nvml")
    return Inventory(tuple(gpus), "nvml", driver, tuple(warnings))


def _sysfs_numa_node(bus_id: str | None) -> int | None:
    """NUMA node from /sys/bus/pci/devices/<bus>/numa_node, as NVIDIA's plugin reads it."""
    if not bus_id:
        return None
    # NVML gives an 8-hex-digit domain; sysfs uses 4 (0000:01:00.0).
    bus = bus_id.lower()
    if re.match(r"^[0-9a-f]{8}:", bus):
        bus = bus[4:]
    try:
        value = int(Path(f"/sys/bus/pci/devices/{bus}/numa_node").read_text().strip())
    except (OSError, ValueError):
        return None
    return value if value >= 0 else None


# --------------------------------------------------------------------------- dispatch

def load_inventory(path: str | Path) -> Inventory:
    """Read an inventory file: ``nvidia-smi -q -x`` XML, ``nvidia-smi -L`` text or a YAML spec
    (a ``.xml`` name or content starting with ``<`` is read as XML; otherwise chosen by
    content).

    Bounded (:mod:`.limits`): at most :data:`~.limits.MAX_INVENTORY_BYTES` (a YAML spec
    :data:`~.limits.MAX_YAML_BYTES`), :data:`~.limits.MAX_GPUS` GPUs, 7 MIG devices a GPU,
    YAML nesting and alias expansion.

    Raises:
        InputError: unreadable or oversized file, or content that is neither (message says
            which).
    """
    p = Path(path)
    text = read_text_bounded(p, MAX_INVENTORY_BYTES, "inventory")
    require_utf8(p, text, MAX_INVENTORY_BYTES, str(p), "an nvidia-smi XML dump, nvidia-smi -L "
                 "output or a YAML GPU spec (text)")
    if p.suffix.lower() == ".xml" or text.lstrip().startswith("<"):
        return from_nvidia_smi_xml(p, text)
    if re.search(r"^GPU \d+: .+\(UUID: GPU-", text, re.MULTILINE):
        return from_nvidia_smi_list(text, str(p))
    if len(text.encode("utf-8", errors="replace")) > MAX_YAML_BYTES:
        raise InputError(f"{p}: a YAML GPU spec of {len(text.encode('utf-8', errors='replace'))} "
                         f"bytes; expected at most {MAX_YAML_BYTES} (or an nvidia-smi XML dump)")
    data = safe_load_bounded(text, str(p), "an nvidia-smi XML dump or a YAML GPU spec")
    try:
        return from_yaml_spec(data, str(p))
    except InputError as exc:
        raise _with_position(exc, str(p), text) from None


_KEY_PATH = re.compile(r"[A-Za-z_][\w-]*(?:\[\d+\]|\.[A-Za-z_][\w-]*)*")


def _with_position(exc: InputError, source: str, text: str) -> InputError:
    """``exc`` with the line:column of the key path it names: ``inv.yaml: gpus[0].count: ...``
    becomes ``inv.yaml:3:10: gpus[0].count: ...`` (the value's position, or the key's for an
    unknown key, or the nearest enclosing value for a missing one; see
    :func:`lab02_device_plugin.plugin.config.yaml_marks`). A message that names no key path of the
    file is returned as it is."""
    message = str(exc)
    head = f"{source}: "
    if not message.startswith(head):
        return exc
    rest = message[len(head):]
    m = _KEY_PATH.match(rest)
    if m is None or not rest[m.end():].startswith(":"):
        return exc
    marks = yaml_marks(text)
    path = m.group(0)
    pos = marks.keys.get(path) if rest[m.end():].startswith(": unknown key") else None
    pos = pos or marks.value(path)
    return InputError(f"{source}:{pos[0]}:{pos[1]}: {rest}") if pos else exc
