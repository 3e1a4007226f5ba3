"""The NVIDIA k8s-device-plugin config file as typed, validated data.

The file format is NVIDIA's ``api/config/v1`` (k8s-device-plugin v0.20.0), so a config
written for the real plugin loads here unchanged::

    version: v1
    flags:
      migStrategy: none            # none | single | mixed
      plugin:
        passDeviceSpecs: false
        deviceListStrategy: envvar # or a list of: envvar, volume-mounts, cdi-annotations, cdi-cri
        deviceIDStrategy: uuid     # uuid | index
    sharing:
      timeSlicing:                 # or mps: (MPS wins when both are given, as upstream)
        renameByDefault: false
        failRequestsGreaterThanOne: false
        resources:
        - name: nvidia.com/gpu
          replicas: 4

Three kinds of keys (NVIDIA k8s-device-plugin v0.20.0, api/config/v1/flags.go and config.go):

* keys we act on (the ones above, plus ``flags.plugin.cdiAnnotationPrefix``,
  ``flags.plugin.sharedDevicesAllocationPolicy`` and ``flags.mpsRoot``);
* keys the real plugin accepts that we accept but do not act on (``resources``,
  ``rename``, ``devices`` other than ``all``, ``gfd``, ``imex``, ``flags.nvidiaDriverRoot``
  ...): each gives one warning in :attr:`Config.warnings` (the CLI prints them);
* anything else is an error: :class:`~lab02_device_plugin.errors.InputError` naming the key
  path (``sharing.timeSlicing.resources[0].replicas``) and the expected value. This is a
  deliberate difference: NVIDIA's parser drops unknown keys and matches key names in any
  case (``migstrategy`` works there), so a misspelled key is silently lost; here it is an
  error that names the key meant (``did you mean migStrategy?``).

This module opens no sockets and reads no devices; it only turns YAML into a
:class:`Config`. Defaults are the dataclass defaults, each with the upstream reason.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from lab02_device_plugin.errors import InputError
from lab02_device_plugin.limits import (
    MAX_CONFIG_BYTES, MAX_REPLICAS, read_text_bounded, require_utf8, safe_load_bounded, short_repr,
    shorten,
)

#: The only config version (NVIDIA ``api/config/v1``: an empty version means v1).
VERSION = "v1"

MIG_STRATEGY_NONE = "none"
MIG_STRATEGY_SINGLE = "single"
MIG_STRATEGY_MIXED = "mixed"
MIG_STRATEGIES = (MIG_STRATEGY_NONE, MIG_STRATEGY_SINGLE, MIG_STRATEGY_MIXED)

DEVICE_LIST_STRATEGIES = ("envvar", "volume-mounts", "cdi-annotations", "cdi-cri")
DEVICE_ID_STRATEGIES = ("uuid", "index")
ALLOCATION_POLICIES = ("distributed", "packed")

SHARING_NONE = "none"
SHARING_TIME_SLICING = "time-slicing"
SHARING_MPS = "mps"

#: Default MPS root on the host (the NVIDIA Helm chart's ``mps.root``); upstream requires
#: ``--mps-root`` when MPS is configured, we default it so a plain config file works.
DEFAULT_MPS_ROOT = "/run/nvidia/mps"

# Resource names a sharing entry may name: nvidia.com/gpu or a mixed-strategy MIG name.
_SHARED_NAME_RE = re.compile(r"^nvidia\.com/(gpu|mig-\d+g\.\d+gb(\.me)?)$")

# Keys the real plugin knows but this project does not act on, with their upstream defaults
# (k8s-device-plugin v0.20.0, cmd/nvidia-device-plugin/main.go flag defaults). A value equal
# to the default changes nothing, so only a different value is warned about; None (an empty
# YAML value) counts as the default.
_IGNORED_FLAGS: Mapping[str, tuple[Any, ...]] = MappingProxyType({
    "nvidiaDriverRoot": ("/",), "nvidiaDevRoot": ("/", ""),
    "gdrcopyEnabled": (False,), "gdsEnabled": (False,), "mofedEnabled": (False,),
    "useNodeFeatureAPI": (False,), "deviceDiscoveryStrategy": ("auto",),
})
_IGNORED_PLUGIN_FLAGS: Mapping[str, tuple[Any, ...]] = MappingProxyType({
    "nvidiaCTKPath": ("/usr/bin/nvidia-ctk",), "containerDriverRoot": ("/driver-root",),
})
_GFD_DEFAULTS: Mapping[str, tuple[Any, ...]] = MappingProxyType({
    "oneshot": (False,), "noTimestamp": (False,), "sleepInterval": ("60s",),
    "outputFile": ("/etc/kubernetes/node-feature-discovery/features.d/gfd",),
    "machineTypeFile": ("/sys/class/dmi/id/product_name",),
})
_IMEX_DEFAULTS: Mapping[str, tuple[Any, ...]] = MappingProxyType({
    "channelIDs": ([],), "required": (False,),
})
DEVICE_DISCOVERY_STRATEGIES = ("auto", "nvml", "tegra")
# Key spellings inside flags.gfd, imex and resources follow NVIDIA k8s-device-plugin
# api/config/v1: flags.go GFDCommandLineFlags (oneshot, noTimestamp, sleepInterval, outputFile,
# machineTypeFile), imex.go Imex (channelIDs []int, required bool; AssertChannelIDsValid:
# channelIDs must be [] or [0]) and resources.go Resources (gpus, mig: lists of Resource with
# pattern and name, both required by Resource.UnmarshalJSON).
_RESOURCE_LISTS = ("gpus", "mig")
_RESOURCE_KEYS = ("pattern", "name")


def _is_default(value: Any, defaults: tuple[Any, ...]) -> bool:
    return value is None or any(type(value) is type(d) and value == d for d in defaults)


def _typed_like_default(ctx: "_Ctx", value: Any, path: str, defaults: tuple[Any, ...]) -> None:
    """Refuse a value whose type differs from the upstream default's (a bool flag given
    ``"no"``, a path given ``5``): upstream's Go decoder refuses it too. None is the default."""
    if value is None:
        return
    kind = type(defaults[0])
    if kind is bool and not isinstance(value, bool):
        raise ctx.error(path, "true or false", value)
    if kind is str and not isinstance(value, str):
        raise ctx.error(path, "a string", value)
    if kind is list:
        if not isinstance(value, list):
            raise ctx.error(path, "a list", value)


def _section_is_default(value: Any, defaults: Mapping[str, tuple[Any, ...]]) -> bool:
    """True for an empty section or one whose known keys all hold their upstream default."""
    if value is None:
        return True
    if not isinstance(value, Mapping):
        return False
    return all(k in defaults and _is_default(v, defaults[k]) for k, v in value.items())


@dataclass(frozen=True)
class PluginFlags:
    """``flags.plugin``: how Allocate answers (NVIDIA internal/plugin/server.go ``getAllocateResponse``).

    Attributes:
        pass_device_specs: add ``DeviceSpec`` entries for ``/dev/nvidia*`` to Allocate.
        device_list_strategy: one or more of :data:`DEVICE_LIST_STRATEGIES`, in file order.
        device_id_strategy: ``uuid`` or ``index``; changes only what the container runtime
            sees, never the IDs advertised to the kubelet.
        cdi_annotation_prefix: key prefix of CDI annotations (``cdi.k8s.io/``).
        shared_devices_allocation_policy: ``distributed`` (spread replicas over physical
            GPUs first, the default) or ``packed`` (new in v0.20.0).
    """

    pass_device_specs: bool = False
    device_list_strategy: tuple[str, ...] = ("envvar",)
    device_id_strategy: str = "uuid"
    cdi_annotation_prefix: str = "cdi.k8s.io/"
    shared_devices_allocation_policy: str = "distributed"


@dataclass(frozen=True)
class Flags:
    """``flags``: MIG strategy, MPS root, ``failOnInitError`` and the plugin flags.

    ``fail_on_init_error`` (default true, as upstream): false makes ``serve`` keep running
    with no devices when NVML cannot initialise, as NVIDIA's plugin does
    (``getResourceManagers`` in internal/plugin/factory.go, v0.20.0).
    """

    mig_strategy: str = MIG_STRATEGY_NONE
    mps_root: str = DEFAULT_MPS_ROOT
    plugin: PluginFlags = field(default_factory=PluginFlags)
    fail_on_init_error: bool = True


@dataclass(frozen=True)
class ReplicatedResource:
    """One entry of ``sharing.<strategy>.resources``.

    Attributes:
        name: resource to replicate, ``nvidia.com/gpu`` or ``nvidia.com/mig-<profile>``.
        replicas: units advertised per physical device (>= 2).
        rename: custom name (accepted, not acted on upstream or here: a warning).
        devices: ``"all"`` (the default), a positive count, or a list of indices/UUIDs;
            anything but ``"all"`` is not acted on (a warning), as upstream.
    """

    name: str
    replicas: int
    rename: str | None = None
    devices: Any = "all"


@dataclass(frozen=True)
class Sharing:
    """``sharing``: which strategy replicates which resources.

    Attributes:
        strategy: :data:`SHARING_NONE`, :data:`SHARING_TIME_SLICING` or :data:`SHARING_MPS`.
        rename_by_default: advertise replicated resources as ``<name>.shared``.
        fail_requests_greater_than_one: refuse a request for more than one replica.
            Time-slicing default False; MPS default True (upstream forces it when omitted).
        resources: the replicated resources, in file order.
    """

    strategy: str = SHARING_NONE
    rename_by_default: bool = False
    fail_requests_greater_than_one: bool = False
    resources: tuple[ReplicatedResource, ...] = ()

    def replicas_for(self, resource_name: str) -> int:
        """Replicas configured for ``resource_name`` (1 when it is not shared)."""
        for r in self.resources:
            if r.name == resource_name:
                return r.replicas
        return 1


@dataclass(frozen=True)
class Config:
    """A validated device plugin config. Build one with :func:`parse_config` or :func:`load_config`.

    ``Config()`` is the upstream default: no MIG strategy, no sharing, envvar + UUIDs.
    ``warnings`` lists keys that were accepted but are not acted on.
    """

    version: str = VERSION
    flags: Flags = field(default_factory=Flags)
    sharing: Sharing = field(default_factory=Sharing)
    warnings: tuple[str, ...] = ()

    def with_mig_strategy(self, strategy: str, where: str = "--mig-strategy") -> Config:
        """A copy with ``flags.migStrategy`` replaced (the CLI flag beats the file, as upstream).

        Raises:
            InputError: unknown strategy, or MPS combined with ``mixed``.
        """
        if strategy not in MIG_STRATEGIES:
            raise InputError(f"{where}: expected one of {', '.join(MIG_STRATEGIES)}, "
                             f"got {strategy!r}")
        new = replace(self, flags=replace(self.flags, mig_strategy=strategy))
        _check_cross_fields(new, where)
        return new


# --------------------------------------------------------------------------- parsing helpers

MAX_MARK_PATH = 1000
"""Longest key path (characters) whose position :func:`yaml_marks` records; a real
config's longest is about 50 (``sharing.timeSlicing.resources[0].failRequestsGreaterThanOne``)."""


@dataclass(frozen=True)
class YamlMarks:
    """Where each key and value of a YAML config sits in its file, by key path.

    Attributes:
        values: key path (``sharing.timeSlicing.resources[0].replicas``; ``""`` for the
            document itself) -> (line, column), 1-based, where its value starts.
        keys: key path -> (line, column) of the key itself (for an unknown key).
    """

    values: Mapping[str, tuple[int, int]]
    keys: Mapping[str, tuple[int, int]]

    def value(self, path: str) -> tuple[int, int] | None:
        """Position of the value at ``path`` or, for a key that is missing, of the nearest
        enclosing value that is there (``resources[0].name`` missing -> ``resources[0]``)."""
        path = "" if path == "(top level)" else path
        while True:
            if path in self.values:
                return self.values[path]
            if not path:
                return None
            cut = max(path.rfind("."), path.rfind("["))
            path = path[:cut] if cut > 0 else ""


def yaml_marks(text: str) -> YamlMarks:
    """The positions of every key and value of the first document of ``text`` (PyYAML's
    node marks; libyaml's composer when available).

    Call it only on a text that :func:`~.limits.safe_load_bounded` accepted (nesting is
    bounded there). The walk is bounded on its own too: each node is walked once (an alias
    is not expanded again: what it names keeps the path where it was first met), and no
    path longer than :data:`MAX_MARK_PATH` characters is recorded or descended into, so
    a hostile file costs at most its node count times that. Keys merged in with ``<<`` take
    the position of the merged value; a key written in the mapping itself wins over a
    merged one.
    """
    import yaml

    loader = yaml.CSafeLoader if getattr(yaml, "__with_libyaml__", False) else yaml.SafeLoader
    values: dict[str, tuple[int, int]] = {}
    keys: dict[str, tuple[int, int]] = {}

    def at(node: Any) -> tuple[int, int]:
        return node.start_mark.line + 1, node.start_mark.column + 1

    seen: set[int] = set()

    def walk(node: Any, path: str) -> None:
        if len(path) > MAX_MARK_PATH:
            return
        values.setdefault(path, at(node))
        if id(node) in seen:
            return
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            merged = [v for k, v in node.value if k.tag.endswith(":merge")]
            for m in merged:     # first, so the mapping's own keys overwrite merged ones
                for sub in (m.value if isinstance(m, yaml.SequenceNode) else [m]):
                    if isinstance(sub, yaml.MappingNode):
                        walk_items(sub, path)
            walk_items(node, path)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                walk(item, f"{path}[{i}]")

    def walk_items(node: Any, path: str) -> None:
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode) and not k.tag.endswith(":merge"):
                child = f"{path}.{k.value}" if path else k.value
                if len(child) <= MAX_MARK_PATH:
                    keys[child] = at(k)
                    values.pop(child, None)     # the mapping's own key wins over a merged one
                    walk(v, child)
        values[path] = at(node)

    try:
        root = yaml.compose(text, Loader=loader)  # noqa: S506 (a SafeLoader)
    except yaml.YAMLError:
        root = None
    if root is not None:
        walk(root, "")
    return YamlMarks(MappingProxyType(values), MappingProxyType(keys))


class _Ctx:
    """Collects warnings and formats errors with the source name (file path) and, when the
    file's :class:`YamlMarks` are known, the line and column of the offending key or value."""

    def __init__(self, source: str, marks: YamlMarks | None = None) -> None:
        self.source = source
        self.marks = marks
        self.warnings: list[str] = []

    def where(self, path: str, key: bool = False) -> str:
        """``source:line:column`` of the value (``key``: the key) at ``path``, else ``source``."""
        if self.marks is None:
            return self.source
        pos = self.marks.keys.get(path) if key else None
        pos = pos or self.marks.value(path)
        return f"{self.source}:{pos[0]}:{pos[1]}" if pos else self.source

    def error(self, path: str, expected: str, got: Any = ...) -> InputError:
        msg = f"{self.where(path)}: {path}: expected {expected}"
        if got is not ...:
            msg += f", got {short_repr(got)}"
        return InputError(msg)

    def warn(self, path: str, why: str) -> None:
        self.warnings.append(f"{self.where(path, key=True)}: {path}: {why}")


def _mapping(ctx: _Ctx, value: Any, path: str) -> Mapping:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ctx.error(path, "a mapping", value)
    for key in value:
        if not isinstance(key, str):
            # point at the key itself (``1: x`` on line 2), else at the mapping
            child = str(key) if path == "(top level)" else f"{path}.{key}"
            pos = ctx.where(child, key=True) if ctx.marks is not None and ctx.marks.keys.get(child) else ctx.where(path)
            raise InputError(f"{pos}: {path}: expected string keys, got {short_repr(key)}")
    return value


def _check_keys(ctx: _Ctx, data: Mapping, path: str, known: tuple[str, ...]) -> None:
    """Refuse a key not in ``known``. NVIDIA's parser (``sigs.k8s.io/yaml``, then Go's
    ``encoding/json``) drops unknown keys and matches key names in any case; this lab refuses
    both on purpose (a misspelled field must not be lost silently) and says so in the
    message, with the key meant when one differs only in case or is a near miss."""
    for key in data:
        if key in known:
            continue
        full = f"{path}.{key}" if path else key
        where = f"{ctx.where(full, key=True)}: {shorten(full, 120)}: unknown key"
        same_case = [k for k in known if k.lower() == key.lower()]
        if same_case:
            raise InputError(f"{where} (did you mean {same_case[0]}? NVIDIA's plugin would "
                             "ignore the case difference; this lab refuses it)")
        near = difflib.get_close_matches(key, known, n=1, cutoff=0.8) if len(key) <= 100 else []
        if near:
            raise InputError(f"{where} (did you mean {near[0]}? NVIDIA's plugin would "
                             "silently ignore this key; this lab refuses it)")
        raise InputError(f"{where}; expected one of {', '.join(known)} (NVIDIA's plugin "
                         "ignores unknown keys; this lab refuses them)")


def _bool(ctx: _Ctx, value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise ctx.error(path, "true or false", value)
    return value


def _choice(ctx: _Ctx, value: Any, path: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ctx.error(path, "one of " + ", ".join(choices), value)
    return value


def _string(ctx: _Ctx, value: Any, path: str) -> str:
    if not isinstance(value, str) or not value:
        raise ctx.error(path, "a non-empty string", value)
    return value


# --------------------------------------------------------------------------- sections

def _parse_plugin_flags(ctx: _Ctx, data: Mapping) -> PluginFlags:
    path = "flags.plugin"
    known = ("passDeviceSpecs", "deviceListStrategy", "deviceIDStrategy", "cdiAnnotationPrefix",
             "sharedDevicesAllocationPolicy") + tuple(_IGNORED_PLUGIN_FLAGS)
    _check_keys(ctx, data, path, known)
    kw: dict[str, Any] = {}
    if data.get("passDeviceSpecs") is not None:
        kw["pass_device_specs"] = _bool(ctx, data["passDeviceSpecs"], f"{path}.passDeviceSpecs")
    if data.get("deviceListStrategy") is not None:
        raw = data["deviceListStrategy"]
        key = f"{path}.deviceListStrategy"
        items = [raw] if isinstance(raw, str) else raw
        if not isinstance(items, list) or not items:
            raise ctx.error(key, "a strategy or a non-empty list of: "
                            + ", ".join(DEVICE_LIST_STRATEGIES), raw)
        strategies: list[str] = []
        for i, item in enumerate(items):
            item_key = key if isinstance(raw, str) else f"{key}[{i}]"
            s = _choice(ctx, item, item_key, DEVICE_LIST_STRATEGIES)
            if s not in strategies:
                strategies.append(s)
        kw["device_list_strategy"] = tuple(strategies)
    if data.get("deviceIDStrategy") is not None:
        kw["device_id_strategy"] = _choice(ctx, data["deviceIDStrategy"],
                                           f"{path}.deviceIDStrategy", DEVICE_ID_STRATEGIES)
    if data.get("cdiAnnotationPrefix") is not None:
        kw["cdi_annotation_prefix"] = _string(ctx, data["cdiAnnotationPrefix"],
                                              f"{path}.cdiAnnotationPrefix")
    if data.get("sharedDevicesAllocationPolicy") is not None:
        kw["shared_devices_allocation_policy"] = _choice(
            ctx, data["sharedDevicesAllocationPolicy"], f"{path}.sharedDevicesAllocationPolicy",
            ALLOCATION_POLICIES)
    for key, defaults in _IGNORED_PLUGIN_FLAGS.items():
        if key in data:
            _typed_like_default(ctx, data[key], f"{path}.{key}", defaults)
        if key in data and not _is_default(data[key], defaults):
            ctx.warn(f"{path}.{key}", "accepted but not acted on by this simulated plugin")
    return PluginFlags(**kw)


def _parse_flags(ctx: _Ctx, data: Mapping) -> Flags:
    known = ("migStrategy", "mpsRoot", "failOnInitError", "plugin", "gfd") + tuple(_IGNORED_FLAGS)
    _check_keys(ctx, data, "flags", known)
    kw: dict[str, Any] = {}
    if data.get("migStrategy") is not None:
        kw["mig_strategy"] = _choice(ctx, data["migStrategy"], "flags.migStrategy", MIG_STRATEGIES)
    if data.get("mpsRoot") is not None:
        kw["mps_root"] = _string(ctx, data["mpsRoot"], "flags.mpsRoot")
    if data.get("failOnInitError") is not None:
        kw["fail_on_init_error"] = _bool(ctx, data["failOnInitError"], "flags.failOnInitError")
    kw["plugin"] = _parse_plugin_flags(ctx, _mapping(ctx, data.get("plugin"), "flags.plugin"))
    if data.get("deviceDiscoveryStrategy") is not None:
        _choice(ctx, data["deviceDiscoveryStrategy"], "flags.deviceDiscoveryStrategy",
                DEVICE_DISCOVERY_STRATEGIES)
    for key, defaults in _IGNORED_FLAGS.items():
        if key in data:
            _typed_like_default(ctx, data[key], f"flags.{key}", defaults)
        if key in data and not _is_default(data[key], defaults):
            ctx.warn(f"flags.{key}", "accepted but not acted on by this simulated plugin")
    if "gfd" in data:
        gfd = _mapping(ctx, data["gfd"], "flags.gfd")
        _check_keys(ctx, gfd, "flags.gfd", tuple(_GFD_DEFAULTS))
        for key, defaults in _GFD_DEFAULTS.items():
            if key in gfd:
                _typed_like_default(ctx, gfd[key], f"flags.gfd.{key}", defaults)
        if not _section_is_default(gfd, _GFD_DEFAULTS):
            ctx.warn("flags.gfd", "accepted but not acted on by this simulated plugin")
    return Flags(**kw)


def _check_imex(ctx: _Ctx, data: Mapping) -> None:
    """``imex``: keys and types as upstream's Imex (channelIDs [] or [0], required a bool)."""
    _check_keys(ctx, data, "imex", tuple(_IMEX_DEFAULTS))
    _typed_like_default(ctx, data.get("required"), "imex.required", (False,))
    ids = data.get("channelIDs")
    if ids is not None and not (isinstance(ids, list) and (ids == [] or (
            len(ids) == 1 and type(ids[0]) is int and ids[0] == 0))):
        raise ctx.error("imex.channelIDs", "[] or [0] (NVIDIA's AssertChannelIDsValid)", ids)


def _check_resources(ctx: _Ctx, data: Mapping) -> None:
    """``resources``: keys and types as upstream's Resources (gpus, mig: lists of
    {pattern, name}, both strings and both required). Checked so a typo is refused, then
    ignored as upstream ignores it."""
    _check_keys(ctx, data, "resources", _RESOURCE_LISTS)
    for key in _RESOURCE_LISTS:
        items = data.get(key)
        if items is None:
            continue
        if not isinstance(items, list):
            raise ctx.error(f"resources.{key}", "a list of {pattern, name} entries", items)
        for i, item in enumerate(items):
            path = f"resources.{key}[{i}]"
            entry = _mapping(ctx, item, path)
            _check_keys(ctx, entry, path, _RESOURCE_KEYS)
            for field_name in _RESOURCE_KEYS:
                if field_name not in entry:
                    raise ctx.error(path, f"a {field_name!r} key (NVIDIA's Resource requires pattern and name)")
                _string(ctx, entry[field_name], f"{path}.{field_name}")


def _parse_devices(ctx: _Ctx, value: Any, path: str) -> Any:
    """``devices``: "all" | positive int | list of indices / UUIDs (upstream ReplicatedDevices)."""
    if value is None or value == "all":
        return "all"
    if isinstance(value, bool):
        raise ctx.error(path, '"all", a positive count or a list of GPU indices/UUIDs', value)
    if isinstance(value, int):
        if value <= 0:
            raise ctx.error(path, "a positive device count", value)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            ok = (isinstance(item, int) and not isinstance(item, bool) and item >= 0) or (
                isinstance(item, str) and re.fullmatch(r"\d+(:\d+)?|GPU-.+|MIG-.+", item))
            if not ok:
                raise ctx.error(f"{path}[{i}]", 'a GPU index ("0"), a MIG index ("0:1") '
                                'or a GPU-/MIG- UUID', item)
    else:
        raise ctx.error(path, '"all", a positive count or a list of GPU indices/UUIDs', value)
    ctx.warn(path, 'only "all" is acted on (as upstream); this resource is shared on every device')
    return value


def _parse_sharing_strategy(ctx: _Ctx, data: Mapping, path: str, strategy: str) -> Sharing:
    known = ("renameByDefault", "failRequestsGreaterThanOne", "resources")
    _check_keys(ctx, data, path, known)
    rename_by_default = False
    if data.get("renameByDefault") is not None:
        rename_by_default = _bool(ctx, data["renameByDefault"], f"{path}.renameByDefault")
    # Upstream: MPS forces failRequestsGreaterThanOne when omitted; v0.20.0 honours false.
    fail = strategy == SHARING_MPS
    if data.get("failRequestsGreaterThanOne") is not None:
        fail = _bool(ctx, data["failRequestsGreaterThanOne"], f"{path}.failRequestsGreaterThanOne")
    raw_resources = data.get("resources")
    if not isinstance(raw_resources, list) or not raw_resources:
        raise ctx.error(f"{path}.resources", "a non-empty list of {name, replicas} entries",
                        raw_resources)
    resources: list[ReplicatedResource] = []
    seen: set[str] = set()
    for i, raw in enumerate(raw_resources):
        rpath = f"{path}.resources[{i}]"
        entry = _mapping(ctx, raw, rpath)
        _check_keys(ctx, entry, rpath, ("name", "replicas", "rename", "devices"))
        if "name" not in entry:
            raise ctx.error(f"{rpath}.name", "a resource name such as nvidia.com/gpu (missing)")
        name = entry["name"]
        if not isinstance(name, str) or not _SHARED_NAME_RE.match(name):
            raise ctx.error(f"{rpath}.name", "nvidia.com/gpu or a MIG resource such as "
                            "nvidia.com/mig-1g.10gb", name)
        if name in seen:
            raise ctx.error(f"{rpath}.name", "each resource listed once", name)
        seen.add(name)
        if "replicas" not in entry:
            raise ctx.error(f"{rpath}.replicas", "an integer >= 2 (missing)")
        replicas = entry["replicas"]
        if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 2:
            raise ctx.error(f"{rpath}.replicas", "an integer >= 2", replicas)
        if replicas > MAX_REPLICAS:
            raise ctx.error(f"{rpath}.replicas", f"at most {MAX_REPLICAS} (more replicas of even "
                            "one device with a one-character ID do not fit the 4 MiB ListAndWatch "
                            "message the kubelet accepts: see lab02_device_plugin.limits)", replicas)
        rename = entry.get("rename")
        if rename is not None:
            rename = _string(ctx, rename, f"{rpath}.rename")
            ctx.warn(f"{rpath}.rename", "custom rename is accepted but ignored, as upstream "
                     "(only renameByDefault takes effect)")
        devices = _parse_devices(ctx, entry.get("devices"), f"{rpath}.devices")
        resources.append(ReplicatedResource(name, replicas, rename, devices))
    return Sharing(strategy, rename_by_default, fail, tuple(resources))


def _parse_sharing(ctx: _Ctx, data: Mapping) -> Sharing:
    _check_keys(ctx, data, "sharing", ("timeSlicing", "mps"))
    ts = _mapping(ctx, data.get("timeSlicing"), "sharing.timeSlicing")
    mps = _mapping(ctx, data.get("mps"), "sharing.mps")
    if mps and ts:
        ctx.warn("sharing", "both timeSlicing and mps are set; mps wins, as upstream")
    if mps:
        return _parse_sharing_strategy(ctx, mps, "sharing.mps", SHARING_MPS)
    if ts:
        return _parse_sharing_strategy(ctx, ts, "sharing.timeSlicing", SHARING_TIME_SLICING)
    return Sharing()


def _check_cross_fields(cfg: Config, where: str, at: Any = None) -> None:
    """Rules that involve more than one key (upstream ``validateFlags`` and sharing checks).
    ``where`` names the source; ``at`` (optional) maps a key path to ``source:line:column``."""
    def loc(path: str) -> str:
        return at(path) if at is not None else where

    strategy = cfg.flags.mig_strategy
    if cfg.sharing.strategy == SHARING_MPS:
        if strategy == MIG_STRATEGY_MIXED:
            raise InputError(f"{loc('flags.migStrategy')}: sharing.mps cannot be used with "
                             "flags.migStrategy: mixed (MPS shares full GPUs only); expected "
                             "migStrategy none or single, or sharing.timeSlicing")
        for i, r in enumerate(cfg.sharing.resources):
            if r.name != "nvidia.com/gpu":
                name = f"sharing.mps.resources[{i}].name"
                raise InputError(f"{loc(name)}: {name}: expected nvidia.com/gpu (MPS shares full "
                                 f"GPUs only), got {r.name!r}")
    if strategy != MIG_STRATEGY_MIXED:
        key = "mps" if cfg.sharing.strategy == SHARING_MPS else "timeSlicing"
        for i, r in enumerate(cfg.sharing.resources):
            if r.name.startswith("nvidia.com/mig-"):
                name = f"sharing.{key}.resources[{i}].name"
                raise InputError(f"{loc(name)}: {name}: {r.name} exists "
                                 f"only with flags.migStrategy: mixed (it is {strategy}); "
                                 "expected nvidia.com/gpu")


def parse_config(data: Any, source: str = "<config>", marks: YamlMarks | None = None) -> Config:
    """Validate an already-loaded YAML document (a mapping) into a :class:`Config`.

    Args:
        data: the parsed YAML (``None`` or ``{}`` gives the defaults).
        source: name used in messages (the file path).
        marks: where the document's keys and values sit in the file (:func:`yaml_marks`);
            with them a message starts ``source:line:column`` of the offending key or value.

    Raises:
        InputError: an unknown key, a wrong type or value, an unknown version, or a broken
            cross-field rule; the message names the key path and the expected value
            (``config.yaml:6:17: sharing.timeSlicing.resources[0].replicas: expected an
            integer >= 2, got 1``).
    """
    ctx = _Ctx(source, marks)
    top = _mapping(ctx, data, "(top level)")
    _check_keys(ctx, top, "", ("version", "flags", "sharing", "resources", "imex"))
    version = top.get("version")
    if version in (None, ""):
        version = VERSION  # upstream: an empty version means v1
    if version != VERSION:
        raise ctx.error("version", f"{VERSION!r} (the only config version)", version)
    flags = _parse_flags(ctx, _mapping(ctx, top.get("flags"), "flags"))
    sharing = _parse_sharing(ctx, _mapping(ctx, top.get("sharing"), "sharing"))
    if "imex" in top:
        _check_imex(ctx, _mapping(ctx, top["imex"], "imex"))
    if "resources" in top:
        _check_resources(ctx, _mapping(ctx, top["resources"], "resources"))
    for key in ("resources", "imex"):
        if key == "imex" and _section_is_default(top.get("imex"), _IMEX_DEFAULTS):
            continue
        if key in top:
            why = ("ignored, as upstream (DisableResourceNamingInConfig)" if key == "resources"
                   else "accepted but not acted on by this simulated plugin")
            ctx.warn(key, why)
    cfg = Config(version, flags, sharing, tuple(ctx.warnings))
    _check_cross_fields(cfg, source, ctx.where)
    return cfg


def load_config(path: str | Path | None) -> Config:
    """Read and validate a config file; ``None`` gives :class:`Config()` (upstream defaults),
    and so does an empty file (or one of comments only), with one warning saying so.

    The file is bounded (:data:`~.limits.MAX_CONFIG_BYTES`, YAML nesting and alias
    expansion: see :mod:`.limits`), so a hostile file is one error line, quickly.

    Raises:
        InputError: unreadable or oversized file, YAML syntax error (with line:column), too
            deep or alias-expanded YAML, or invalid content (with the line:column of the
            offending key or value, the key path and what was expected).
    """
    if path is None:
        return Config()
    path = Path(path)
    text = read_text_bounded(path, MAX_CONFIG_BYTES, "config file")
    require_utf8(path, text, MAX_CONFIG_BYTES, str(path), "a YAML config file (text)")
    data = safe_load_bounded(text, str(path), "a YAML config file")
    if data is None:   # an empty file (or only comments): the defaults, said once (fresh tester 2 F9)
        return Config(warnings=(f"{path}: empty config file: running with the defaults (no sharing, "
                                "migStrategy none)",))
    return parse_config(data, str(path), yaml_marks(text))


# --------------------------------------------------------------------------- what a reload changes

def _yaml_word(value: Any) -> str:
    """A config value as it is written in the file: ``true``, ``uuid``, ``[envvar, cdi-cri]``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(_yaml_word(v) for v in value) + "]"
    return str(value)


_SHARING_KEYS = {SHARING_TIME_SLICING: "timeSlicing", SHARING_MPS: "mps"}


def config_changes(old: Config, new: Config) -> list[str]:
    """What differs between two configs, one phrase per key, in file order, with the keys
    and values as the file writes them: ``flags.plugin.deviceListStrategy envvar ->
    [volume-mounts, cdi-cri]``, ``sharing.timeSlicing.failRequestsGreaterThanOne false ->
    true``, ``sharing.timeSlicing.resources[nvidia.com/gpu].replicas 4 -> 8``. Warnings are
    not compared (a comment-only edit changes nothing). Empty when they are equal."""
    out: list[str] = []

    def diff(key: str, a: Any, b: Any) -> None:
        if a != b:
            out.append(f"{key} {_yaml_word(a)} -> {_yaml_word(b)}")

    diff("version", old.version, new.version)
    diff("flags.migStrategy", old.flags.mig_strategy, new.flags.mig_strategy)
    diff("flags.mpsRoot", old.flags.mps_root, new.flags.mps_root)
    diff("flags.failOnInitError", old.flags.fail_on_init_error, new.flags.fail_on_init_error)
    a, b = old.flags.plugin, new.flags.plugin
    for key, attr in (("passDeviceSpecs", "pass_device_specs"),
                      ("deviceListStrategy", "device_list_strategy"),
                      ("deviceIDStrategy", "device_id_strategy"),
                      ("cdiAnnotationPrefix", "cdi_annotation_prefix"),
                      ("sharedDevicesAllocationPolicy", "shared_devices_allocation_policy")):
        diff(f"flags.plugin.{key}", getattr(a, attr), getattr(b, attr))
    sa, sb = old.sharing, new.sharing
    if sa.strategy != sb.strategy:
        words = {SHARING_NONE: "none", **_SHARING_KEYS}
        out.append(f"sharing {words[sa.strategy]} -> {words[sb.strategy]}")
        if sb.strategy != SHARING_NONE:
            out += [f"sharing.{_SHARING_KEYS[sb.strategy]}.resources[{r.name}].replicas "
                    f"{r.replicas}" for r in sb.resources]
        return out
    if sa.strategy == SHARING_NONE:
        return out
    where = f"sharing.{_SHARING_KEYS[sa.strategy]}"
    diff(f"{where}.renameByDefault", sa.rename_by_default, sb.rename_by_default)
    diff(f"{where}.failRequestsGreaterThanOne", sa.fail_requests_greater_than_one,
         sb.fail_requests_greater_than_one)
    before = {r.name: r for r in sa.resources}
    after = {r.name: r for r in sb.resources}
    for name in list(before) + [n for n in after if n not in before]:
        ra, rb = before.get(name), after.get(name)
        key = f"{where}.resources[{name}]"
        if rb is None:
            out.append(f"{key} removed")
        elif ra is None:
            out.append(f"{key} added (replicas {rb.replicas})")
        else:
            diff(f"{key}.replicas", ra.replicas, rb.replicas)
            diff(f"{key}.rename", ra.rename or "none", rb.rename or "none")
            diff(f"{key}.devices", ra.devices, rb.devices)
    return out
