"""Bounds on every input of Lab 02, and the helpers that enforce them.

A device plugin runs as root on every GPU node; the files it reads (a ConfigMap, an
inventory) and the gRPC requests it answers must never hang it, exhaust its memory or make
it print a traceback. Each bound below says what it protects and why its value is safe for
every real input:

* :data:`MAX_CONFIG_BYTES` (64 KiB): an NVIDIA device plugin config is a few hundred bytes
  (``examples/*.yaml`` are 150 to 400); a mixed-MIG node sharing all seven profiles of a GPU
  is under 2 KB. 64 KiB is 30x that and well under the 1 MiB a ConfigMap can hold.
* :data:`MAX_INVENTORY_BYTES` (8 MiB): ``nvidia-smi -q -x`` is 14 KB per GPU (the 4x K80
  dump in ``shared/data/nvidia-smi`` is 56 KB) and about 22 KB for an A100 with MIG, so
  :data:`MAX_GPUS` GPUs take under 2 MB.
* :data:`MAX_YAML_BYTES` (1 MiB): YAML files parsed in Python (GPU specs, pod manifests) are
  hand-written and small; 1 MiB parses in well under a second.
* :data:`MAX_YAML_DEPTH` (64): the deepest key of a config is 5 levels
  (``sharing.timeSlicing.resources[0].devices[0]``), of a Pod manifest about 12
  (``spec.affinity...matchExpressions[0].values[0]``). PyYAML composes nodes recursively,
  so a 20,000-level file would otherwise end in a RecursionError.
* :data:`MAX_YAML_NODES` (100,000): the number of nodes a document has once every alias
  (``*name``) and merge key (``<<``) is expanded. A "billion laughs" document is a few
  hundred bytes whose aliases expand to 10^9 nodes; any code that walks it (validation,
  an error message that prints it) would run for hours.
* :data:`MAX_GPUS` (64 per node): the largest single-host systems have 16 GPUs (DGX-2,
  HGX-2); 4x headroom.
* :data:`MAX_GPU_MEMORY_MIB` (1 TiB): the largest GPU memory today is under 300 GB (B300:
  288 GB); a total in an inventory above 1 TiB is a typo or a hostile file, and would be
  printed into messages and Allocate environment variables digit by digit.
* :data:`MAX_MESSAGE_BYTES` (4 MiB) and :data:`MAX_REPLICAS` (the most replicas any one
  device can carry): the kubelet receives every device of a resource in one
  ListAndWatchResponse, and a gRPC client refuses a message over 4 MiB unless it raises
  the limit (grpc-go ``defaultClientMaxReceiveMessageSize = 1024 * 1024 * 4``,
  dialoptions.go); the kubelet's device plugin client does not raise it (``dial`` in
  kubernetes pkg/kubelet/cm/devicemanager/plugin/v1beta1/client.go). So the bound on
  replicas is the bytes of the message, not a count: :func:`device_bytes` is what one
  Device adds (its ID, ``Unhealthy``, the longer health string, and its NUMA node, in
  protobuf's wire format), :func:`replicas_bytes` what ``<id>::0`` .. ``<id>::<n-1>`` add.
  One GPU with a 40-character UUID on NUMA node 0 fits 63,718 replicas (NVIDIA's plugin
  accepts 16,384 and more: k8s-device-plugin issue #1433); a one-character ID (the
  ``index`` device ID strategy) fits :data:`MAX_REPLICAS`, which the config refuses above,
  before any ID exists. The sizes are computed *before* the replica IDs are built, so
  ``replicas: 1000000000`` never allocates gigabytes first.
* :data:`MAX_DEVICES` (262,144): the most devices of one resource a pod may ask for on the
  command line (``kubelet --admit NAME=RES:N``). The kubelet learns every device of a resource
  from one ListAndWatchResponse of at most :data:`MAX_MESSAGE_BYTES`, and every Device in it
  takes at least 16 bytes (:func:`device_bytes` of a one-byte ID), so no node advertises more
  and a pod asking more could never be admitted.
* :data:`MAX_WATCH_STREAMS` (4 per resource) and :data:`UNARY_WORKERS` (8): gRPC Python
  serves each call on a thread of one pool, and an open ListAndWatch stream holds its thread
  for as long as it is open. A kubelet holds one stream per plugin (a re-registration opens
  the next one shortly before the previous one ends), so 4 leave room; more are refused at
  once with RESOURCE_EXHAUSTED. The pool has :data:`MAX_WATCH_STREAMS` +
  :data:`UNARY_WORKERS` threads, so however many clients open streams and never read them,
  Allocate, GetPreferredAllocation, PreStartContainer and GetDevicePluginOptions always find
  a free thread (the kubelet calls Allocate with no deadline: a queued call would hang pod
  admission). Before this bound 16 idle streams stopped the plugin answering anything.
* :data:`MAX_MESSAGE_CHARS` (200) and :data:`MAX_VALUE_CHARS` (60): error lines and gRPC
  error details quote the input, shortened by :func:`shorten` (an ellipsis and the original
  length), so a 10 MB value never becomes a 10 MB error line and a gRPC status stays far
  below the 8 KiB of metadata a client accepts.

Everything here is pure: no sockets, no threads.
"""

from __future__ import annotations

import datetime
import math
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from lab02_device_plugin.errors import InputError

MAX_CONFIG_BYTES = 64 * 1024
MAX_INVENTORY_BYTES = 8 * 1024 * 1024
MAX_YAML_BYTES = 1024 * 1024
MAX_YAML_DEPTH = 64
MAX_YAML_NODES = 100_000
MAX_GPUS = 64
MAX_GPU_MEMORY_MIB = 1024 * 1024
MAX_MESSAGE_BYTES = 4 * 1024 * 1024
MAX_WATCH_STREAMS = 4
UNARY_WORKERS = 8
MAX_VALUE_CHARS = 60
MAX_MESSAGE_CHARS = 200
#: Longest line accepted on the simulated-Xid FIFO (a command is under 80 characters).
MAX_FIFO_LINE = 4096


#: The longer of the two health strings a Device carries (``Unhealthy``; api.proto's
#: ``Healthy``/``Unhealthy``): a snapshot must still fit when every device is unhealthy.
_WORST_HEALTH_BYTES = len("Unhealthy")


def _varint_bytes(n: int) -> int:
    return max(1, (n.bit_length() + 6) // 7)


def _field_bytes(payload: int) -> int:
    """A length-delimited field of number < 16: tag byte, varint length, payload."""
    return 1 + _varint_bytes(payload) + payload


def device_bytes(id_bytes: int, numa_node: int | None = None) -> int:
    """Bytes one ``Device`` adds to a ListAndWatchResponse, unhealthy (the larger case).

    Protobuf's wire format (protobuf.dev/programming-guides/encoding): the response's
    field 1 holds the Device, whose fields are ID (1, ``id_bytes`` UTF-8 bytes), health (2)
    and topology (3: TopologyInfo{nodes: [NUMANode{ID}]}; proto3 leaves a NUMA node 0 out
    of NUMANode, so it costs 4 bytes and node 1 costs 6). Example: a 47-byte replica ID
    ``GPU-<36 hex>::12345`` on NUMA node 0 is 2 + (49 + 11 + 4) = 66 bytes.
    """
    device = _field_bytes(id_bytes) + _field_bytes(_WORST_HEALTH_BYTES)
    if numa_node is not None:
        numa = 0 if numa_node == 0 else 1 + _varint_bytes(numa_node)
        device += _field_bytes(_field_bytes(numa))
    return _field_bytes(device)


def replicas_bytes(id_bytes: int, replicas: int, numa_node: int | None = None) -> int:
    """Bytes the ``replicas`` Devices ``<id>::0`` .. ``<id>::<replicas - 1>`` of one device
    (NVIDIA's ``NewAnnotatedID``) add to a ListAndWatchResponse; computed per number of
    digits, without building the IDs."""
    total, digits, start = 0, 1, 0
    while start < replicas:
        end = min(replicas, 10 ** digits)
        total += (end - start) * device_bytes(id_bytes + 2 + digits, numa_node)
        start, digits = end, digits + 1
    return total


def max_replicas(devices: list[tuple[int, int | None]], limit: int = MAX_MESSAGE_BYTES) -> int:
    """The most replicas of every device in ``devices`` ((ID bytes, NUMA node) pairs) whose
    ListAndWatchResponse stays within ``limit`` bytes (0 when even one replica each does not)."""
    lo, hi = 0, limit  # every Device takes at least one byte
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if sum(replicas_bytes(n, mid, numa) for n, numa in devices) <= limit:
            lo = mid
        else:
            hi = mid - 1
    return lo


#: The most replicas a config may ask for: one device with a one-character ID (the
#: ``index`` device ID strategy) and no NUMA node fits this many in one 4 MiB message.
MAX_REPLICAS = max_replicas([(1, None)])

#: The most devices of one resource any ListAndWatchResponse can carry (module docstring).
MAX_DEVICES = MAX_MESSAGE_BYTES // device_bytes(1)


def shorten(text: str, limit: int = MAX_VALUE_CHARS) -> str:
    """``text`` itself when it has at most ``limit`` characters; else its first ``limit``
    characters, an ellipsis and the original length.

    Example: ``shorten("x" * 1_000_000, 10)`` -> ``"xxxxxxxxxx… (1000000 characters)"``.
    """
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text)} characters)"


def shorten_words(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """Like :func:`shorten`, for prose: the cut falls between words when a space is near
    (in the last 40 % of ``limit``), so a message never ends in half a word.

    Example: ``shorten_words("expected a single document in the stream", 30)`` ->
    ``"expected a single document in… (40 characters)"``.
    """
    if len(text) <= limit:
        return text
    space = text.rfind(" ", int(limit * 0.6), limit + 1)
    cut = space if space > 0 else limit
    return f"{text[:cut]}… ({len(text)} characters)"


def short_repr(value: Any, limit: int = MAX_VALUE_CHARS) -> str:
    """A value read from a YAML (or JSON) file, shown in an error message in the file's
    words rather than Python's, at most about ``limit`` characters.

    ``True`` -> ``true (a boolean)``, ``None`` -> ``null (no value)``, ``2024-01-01`` (a
    date) -> ``a date (2024-01-01)``, ``!!binary`` -> ``!!binary data (5 bytes)``,
    ``float("inf")`` -> ``.inf``, a string -> ``'text'`` (quoted, cut before any repr is
    built), ``[1, 2]`` -> ``[1, 2]``, a long list -> ``a list of 1000000 items``, an integer
    of more digits than Python converts -> ``a number of more than 4300 digits``. A hostile
    value (a 10 MB string, an alias-expanded tree) costs no more than ``limit`` characters.
    """
    if isinstance(value, bool):
        return f"{_flow(value)} (a boolean)"
    if value is None:
        return "null (no value)"
    if isinstance(value, str):
        if len(value) <= limit:
            return repr(value)
        return f"{value[:limit]!r}… ({len(value)} characters)"
    if isinstance(value, datetime.datetime):
        return f"a timestamp ({value.isoformat(sep=' ')})"
    if isinstance(value, datetime.date):
        return f"a date ({value.isoformat()})"
    if isinstance(value, (bytes, bytearray)):
        return f"!!binary data ({len(value)} bytes)"
    if isinstance(value, (list, tuple, dict, set, frozenset)):
        kind, noun = {dict: ("mapping", "key"), set: ("set", "item"),
                      frozenset: ("set", "item")}.get(type(value), ("list", "item"))
        size = f"a {kind} of {len(value)} {noun}" + ("" if len(value) == 1 else "s")
        if len(value) > limit:  # each item shows at least 1 character: too long for sure
            return size
        text = _flow(value, limit)
        return size if text is None or len(text) > limit else text
    return shorten(_flow(value, limit) or repr(value), limit)


def _flow(value: Any, budget: int = MAX_VALUE_CHARS) -> str | None:
    """``value`` in YAML flow style (``[1, true, 'a']``, ``{a: 1}``), or None once it
    passes ``budget`` characters (the caller then names its size instead)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan"
        if math.isinf(value):
            return ".inf" if value > 0 else "-.inf"
        return repr(value)
    if isinstance(value, int):
        try:
            return str(value)
        except ValueError:  # more digits than int -> str converts
            return f"a number of more than {sys.get_int_max_str_digits()} digits"
    if isinstance(value, str):
        return repr(value) if len(value) <= budget else None
    if isinstance(value, (datetime.date, bytes, bytearray)):
        return short_repr(value)
    if isinstance(value, (list, tuple, set, frozenset, dict)):
        items = value.items() if isinstance(value, dict) else value
        parts: list[str] = []
        used = 2
        for item in items:
            if isinstance(value, dict):
                key, val = _flow_item(item[0], budget), _flow_item(item[1], budget)
                part = None if key is None or val is None else f"{key}: {val}"
            else:
                part = _flow_item(item, budget)
            if part is None:  # an item past the budget
                return None
            used += len(part) + 2
            if used > budget:
                return None
            parts.append(part)
        return ("{" + ", ".join(parts) + "}") if isinstance(value, dict) else "[" + ", ".join(parts) + "]"
    return shorten(repr(value), budget)


# A string YAML reads back as the same string without quotes: no YAML special word or number,
# no flow or comment characters (``a/b``, ``nvidia.com/gpu``, ``v1``, ``3g.40gb``).
_PLAIN = re.compile(r"[A-Za-z_./][A-Za-z0-9_./-]*")
_YAML_WORDS = frozenset({"true", "false", "yes", "no", "on", "off", "null", "y", "n", "~"})


def _flow_item(value: Any, budget: int) -> str | None:
    """An item inside a list or mapping in YAML flow style: a plain string bare
    (``{name: nvidia.com/gpu, replicas: 4}``, as the file would write it), else :func:`_flow`."""
    if isinstance(value, str) and len(value) <= budget and _PLAIN.fullmatch(value) \
            and value.lower() not in _YAML_WORDS:
        return value
    return _flow(value, budget)


def make_directory(path: Path, what: str, mode: int = 0o777) -> None:
    """Create the folder ``path`` (and its parents) unless it exists.

    Raises:
        InputError: ``path``, or the nearest part of it that exists, is not a folder
            (``<what> <path>: it is a file, not a folder; expected a directory (or a path to
            create)``; ``<what> <path>: <part> is a file, not a folder; ...``), or the folder
            cannot be created (``cannot create it (<the system's reason>)``).
    """
    for part in (path, *path.parents):
        if part.exists() or part.is_symlink():
            if not part.is_dir():
                which = "it is" if part == path else f"{shorten(str(part), 200)} is"
                kind = "a file, not a folder" if part.is_file() else "not a folder (a socket, a device or a broken link)"
                raise InputError(f"{what} {shorten(str(path), 200)}: {which} {kind}; expected a directory (or a "
                                 "path to create)")
            break
    try:
        path.mkdir(mode=mode, parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{what} {shorten(str(path), 200)}: cannot create it ({exc.strerror or exc})") from None


def read_text_bounded(path: str | Path, limit: int, what: str) -> str:
    """Read a text file of at most ``limit`` bytes (UTF-8; bad bytes replaced).

    The size is checked from ``stat`` before reading and again while reading (a file that
    grows, or a FIFO, is read at most ``limit + 1`` bytes), so a 10 GB file costs nothing.

    Raises:
        InputError: unreadable, or larger than ``limit``: ``<path>: <what> is 10485760 bytes;
            expected at most 65536 (...)``.
    """
    p = Path(path)
    try:
        with p.open("rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise InputError(f"{shorten(str(p), 200)}: cannot read {what}: {exc.strerror or exc}") from None
    if len(data) > limit:
        import stat

        try:
            mode = p.stat().st_mode
            size = f"is {p.stat().st_size} bytes"
            if not stat.S_ISREG(mode):   # /dev/zero's size reads 0: say what it is instead
                kind = "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
                size = f"is {kind}, not a regular file, and gives more than {limit} bytes"
        except OSError:
            size = f"is more than {limit} bytes"
        raise InputError(f"{shorten(str(p), 200)}: {what} {size}; expected at most {limit} bytes "
                         f"({_size_reason(what)})")
    return data.decode("utf-8", errors="replace")


def require_utf8(path: str | Path, text: str, limit: int, where: str, expected: str) -> None:
    """Refuse a file that :func:`read_text_bounded` read with replacement characters because
    it is not UTF-8, naming the first bad byte and its line:column: ``<where>:2:1: byte 12
    (0xff) is not UTF-8; expected <expected>``. (A U+FFFD that the file itself holds, correctly encoded, passes.)

    Raises:
        InputError: the first ``limit`` bytes of ``path`` are not UTF-8.
    """
    if "\ufffd" not in text:
        return
    try:
        with Path(path).open("rb") as fh:
            data = fh.read(limit + 1)[:limit]
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # line and column (1-based, in characters) of the bad byte, as a YAML error gives them
        before = data[:exc.start]
        line = before.count(b"\n") + 1
        column = len(before[before.rfind(b"\n") + 1:].decode("utf-8")) + 1
        raise InputError(f"{where}:{line}:{column}: byte {exc.start} (0x{data[exc.start]:02x}) is not UTF-8; "
                         f"expected {expected}") from None
    except OSError:
        return


def _size_reason(what: str) -> str:
    if "config" in what:
        return "a device plugin config is a few hundred bytes"
    if "inventory" in what:
        return "nvidia-smi -q -x is about 14 KB per GPU"
    return "the limit of this input"


# --------------------------------------------------------------------------- bounded YAML

class _Meter:
    """Walks YAML events: depth of nesting, and node count with aliases expanded.

    Each collection's expanded size is 1 + the sizes of its items; an alias counts the
    expanded size of its anchor (recorded when the anchored node ends), so a chain of
    anchors that each repeat the previous one 9 times grows 9x per level and is refused at
    the level where it passes :data:`MAX_YAML_NODES`, after reading only that much text.
    """

    def __init__(self, source: str, max_depth: int, max_nodes: int) -> None:
        self.source, self.max_depth, self.max_nodes = source, max_depth, max_nodes
        self.stack: list[list[Any]] = []   # [size so far, anchor] per open collection
        self.anchors: dict[str, int] = {}
        self.open_anchors: set[str] = set()
        self.total = 0

    def _where(self, event: yaml.Event) -> str:
        mark = event.start_mark
        return f"{self.source}:{mark.line + 1}:{mark.column + 1}" if mark else self.source

    def _add(self, size: int, event: yaml.Event) -> None:
        if self.stack:
            self.stack[-1][0] += size
            if self.stack[-1][0] > self.max_nodes:
                self._too_many(event)
        else:
            self.total += size
            if self.total > self.max_nodes:
                self._too_many(event)

    def _too_many(self, event: yaml.Event) -> None:
        raise InputError(f"{self._where(event)}: YAML aliases expand to more than "
                         f"{self.max_nodes} nodes; expected a plain document (an alias bomb?)")

    def feed(self, event: yaml.Event) -> None:
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            if len(self.stack) >= self.max_depth:
                raise InputError(f"{self._where(event)}: YAML nested more than {self.max_depth} "
                                 "levels deep; expected a shallow document")
            self.stack.append([1, event.anchor])
            if event.anchor is not None:
                self.open_anchors.add(event.anchor)
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            size, anchor = self.stack.pop()
            if anchor is not None:
                self.anchors[anchor] = size
                self.open_anchors.discard(anchor)
            self._add(size, event)
        elif isinstance(event, yaml.ScalarEvent):
            if event.anchor is not None:
                self.anchors[event.anchor] = 1
            self._add(1, event)
        elif isinstance(event, yaml.AliasEvent):
            if event.anchor in self.open_anchors:
                raise InputError(f"{self._where(event)}: YAML alias *{shorten(event.anchor)} "
                                 "refers to a node that contains it; expected a plain document")
            self._add(self.anchors.get(event.anchor, 1), event)
        elif isinstance(event, yaml.DocumentStartEvent):
            self.total = 0


class _Refused(yaml.YAMLError):
    """A document the strict loader refuses, with its position and a complete message."""

    def __init__(self, mark: Any, message: str) -> None:
        super().__init__(message)
        self.mark, self.message = mark, message


class _StrictConstructor:
    """Two rules on top of PyYAML's safe constructor:

    * **duplicate keys.** YAML requires the keys of a mapping to be unique, but PyYAML keeps
      the last value (``flags: {migStrategy: mixed, migStrategy: none}`` loads as ``none``).
      Refused here with both positions; keys that merge keys (``<<``) bring in may still be
      overridden, as YAML's merge rules intend;
    * **huge integers.** Python refuses to convert an integer of more than 4300 digits; the
      error names the position and the number of digits instead of Python's words.
    """

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, Any] = {}
            for key_node, _ in node.value:
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag.endswith(":merge"):
                    continue
                key = self.construct_object(key_node)
                try:
                    first = seen.get(key)
                except TypeError:  # an unhashable key: PyYAML's own error follows
                    continue
                if first is not None:
                    raise _Refused(key_node.start_mark,
                                   f"key {short_repr(key)} given twice (first at "
                                   f"{first.line + 1}:{first.column + 1}); expected each key "
                                   "once in a mapping "
                                   "(YAML requires unique keys; the second value would "
                                   "silently replace the first)")
                seen[key] = key_node.start_mark
        return super().construct_mapping(node, deep)  # type: ignore[misc]

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        try:
            return super().construct_yaml_int(node)  # type: ignore[misc]
        except ValueError:
            digits = sum(ch.isdigit() for ch in node.value)
            raise _Refused(node.start_mark, f"a number of {digits} digits; expected at most "
                                            f"{sys.get_int_max_str_digits()} digits (the "
                                            "most Python reads)") from None


def _strict(base: type) -> type:
    """``base`` (a safe loader class) with :class:`_StrictConstructor`'s rules. Mappings
    reach them through ``self.construct_mapping``; integers are registered by function, so
    their constructor is registered again."""
    loader = type(f"Strict{base.__name__}", (_StrictConstructor, base), {})
    loader.add_constructor("tag:yaml.org,2002:int", _StrictConstructor.construct_yaml_int)
    return loader


def _loader_classes() -> tuple[type, type]:
    """(event parser, strict loader): libyaml's C classes when available."""
    base = yaml.CSafeLoader if getattr(yaml, "__with_libyaml__", False) else yaml.SafeLoader
    return base, _strict(base)


_QUOTED = re.compile(r"'([^']*)'|\"([^\"]*)\"")


def _shorten_quoted(text: str) -> str:
    """Parser words kept whole; only the user's text that they quote is shortened."""
    def cut(m: re.Match) -> str:
        inner = m.group(1) if m.group(1) is not None else m.group(2)
        quote = "'" if m.group(1) is not None else '"'
        return f"{quote}{shorten(inner)}{quote}" if len(inner) > MAX_VALUE_CHARS else m.group(0)
    return shorten_words(_QUOTED.sub(cut, text), MAX_MESSAGE_CHARS)


def _yaml_error(exc: yaml.YAMLError, source: str, expected: str, text: str = "") -> InputError:
    if isinstance(exc, _Refused):
        mark = exc.mark
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source
        return InputError(f"{where}: {exc.message}; expected {expected}"
                          if "; expected" not in exc.message else f"{where}: {exc.message}")
    mark = getattr(exc, "problem_mark", None)
    where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source
    problem = getattr(exc, "problem", None) or getattr(exc, "reason", None) or "invalid YAML"
    context = getattr(exc, "context", None)
    if context and problem.startswith("but "):  # "expected a single document ... but found another"
        problem = f"{context} {problem}"
    if mark is not None and text:     # the C loader's marks carry no buffer: look in the text
        lines = text.split("\n")
        line = lines[mark.line] if mark.line < len(lines) else ""
        if line[mark.column:mark.column + 1] == "\t":
            problem = f"{problem}: a tab; YAML indents with spaces only"
    return InputError(f"{where}: invalid YAML ({_shorten_quoted(str(problem))}); expected {expected}")


def check_yaml(text: str, source: str, expected: str, *, max_depth: int = MAX_YAML_DEPTH,
               max_nodes: int = MAX_YAML_NODES) -> None:
    """Refuse a YAML text nested deeper than ``max_depth`` or whose aliases expand to more
    than ``max_nodes`` nodes, reading its events only (no nodes are built, no recursion).

    Raises:
        InputError: ``<source>:<line>:<column>: ...`` for a bound or a syntax error.
    """
    loader_cls, _ = _loader_classes()
    meter = _Meter(source, max_depth, max_nodes)
    loader = loader_cls(text)
    try:
        while loader.check_event():
            meter.feed(loader.get_event())
    except yaml.YAMLError as exc:
        raise _yaml_error(exc, source, expected, text) from None
    finally:
        loader.dispose()


def safe_load_bounded(text: str, source: str, expected: str, **bounds: int) -> Any:
    """``yaml.safe_load`` after :func:`check_yaml` (libyaml's C loader when available).

    Args:
        text: the YAML text.
        source: the file name for messages.
        expected: what the file should be, for messages ("a YAML config file").

    Raises:
        InputError: one line with file:line:column for a syntax error, too deep a nesting
            or an alias expansion past the bound.
    """
    check_yaml(text, source, expected, **bounds)
    _, loader_cls = _loader_classes()
    try:
        return yaml.load(text, Loader=loader_cls)  # noqa: S506 (a SafeLoader)
    except yaml.YAMLError as exc:
        raise _yaml_error(exc, source, expected, text) from None
    except ValueError as exc:  # e.g. an integer of more than 4300 digits (int() refuses it)
        raise InputError(f"{source}: {shorten(str(exc))}; expected {expected}") from None


def safe_load_all_bounded(text: str, source: str, expected: str, **bounds: int) -> list[Any]:
    """Every document of a multi-document YAML text, each bounded as in :func:`safe_load_bounded`."""
    check_yaml(text, source, expected, **bounds)
    _, loader_cls = _loader_classes()
    try:
        return list(_load_all(text, loader_cls))
    except yaml.YAMLError as exc:
        raise _yaml_error(exc, source, expected, text) from None
    except ValueError as exc:  # e.g. an integer of more than 4300 digits (int() refuses it)
        raise InputError(f"{source}: {shorten(str(exc))}; expected {expected}") from None


def _load_all(text: str, loader_cls: type) -> Iterator[Any]:
    yield from yaml.load_all(text, Loader=loader_cls)  # noqa: S506 (a SafeLoader)
