"""Reading scenario YAML safely, keeping where every value came from.

- Safe: PyYAML's safe loader (no Python objects; libyaml's C parser when PyYAML has it,
  about ten times faster than the pure-Python one), and no aliases (``*ref``) or merge keys
  (``<<``): Kubernetes manifests do not need them, and aliases are how a small file expands
  into a huge one ("billion laughs").
- Bounded: file size (:data:`MAX_BYTES`), bytes of a whole scenario
  (:data:`MAX_SCENARIO_BYTES`, checked by the caller), nesting depth (:data:`MAX_DEPTH`), YAML nodes
  (:data:`MAX_NODES`) and documents (:data:`MAX_DOCUMENTS`), checked on the event stream
  before anything is built (the event parser is not recursive; the composer is).
- Positions: every value's ``line:column`` (1-based) by its path in the document, so an
  error can name ``file:line:column``. Duplicate keys are errors (Kubernetes' strict
  decoding refuses them too).

Errors are :class:`ScenarioError` (an :class:`~lab01_cluster_sim.errors.InputError`): one
line, starting with ``file:line:column``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from lab01_cluster_sim.errors import InputError

MAX_BYTES = 2 * 2**20
"""Largest scenario file read, bytes (2 MiB: about 8,000 Pods; a 780 kB file of 3,000 Pods is
read and checked in about 6 s of CPU)."""
MAX_SCENARIO_BYTES = 8 * 2**20
"""Most bytes in all the files of one scenario folder together (8 MiB)."""
MAX_DEPTH = 64
"""Deepest nesting of mappings and sequences."""
MAX_NODES = 400_000
"""Most YAML nodes (scalars, mappings, sequences) in one file (a Job as written in the
examples is about 30)."""
MAX_DOCUMENTS = 100_000
"""Most documents (``---``-separated objects) in one file."""

Path_ = tuple[Any, ...]
"""A path inside a document: keys (str) and list indices (int)."""


class ScenarioError(InputError):
    """Bad scenario input, as one line: ``file:line:column: Kind/name: field.path: what``."""


def where(file: str | Path, pos: tuple[int, int] | None) -> str:
    """``file:line:column`` (or ``file`` when the position is unknown)."""
    return f"{file}:{pos[0]}:{pos[1]}" if pos else str(file)


def format_path(path: Path_) -> str:
    """``("spec", "containers", 0, "resources")`` -> ``spec.containers[0].resources``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(document)"


@dataclass
class Document:
    """One YAML document.

    Attributes:
        data: its content as plain Python (dicts, lists, str, int, float, bool, None).
        file: the file it came from. index: its position in the file (0-based).
        positions: path -> (line, column), 1-based, of every value (and of keys, under the
            path of their value).
    """

    data: Any
    file: str
    index: int
    positions: dict[Path_, tuple[int, int]] = field(default_factory=dict)
    key_positions: dict[Path_, tuple[int, int]] = field(default_factory=dict)

    def key_pos(self, path: Path_) -> tuple[int, int] | None:
        """Position of the key of ``path`` (where a misspelt field name starts), else :meth:`pos`."""
        return self.key_positions.get(tuple(path)) or self.pos(path)

    def pos(self, path: Path_) -> tuple[int, int] | None:
        """Position of ``path``, or of its nearest ancestor that has one."""
        path = tuple(path)
        while path:
            if path in self.positions:
                return self.positions[path]
            path = path[:-1]
        return self.positions.get(())


_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's safe loader when PyYAML was built with it, else the pure-Python one. Aliases are
refused on the event stream (:func:`_check_events`) before any document is composed."""


def read_text(path: Path) -> str:
    """The file as text, refusing files above :data:`MAX_BYTES` and bytes that are not UTF-8.

    Raises:
        ScenarioError: missing, unreadable, too large, or not UTF-8.
    """
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(raw) > MAX_BYTES:
        raise ScenarioError(f"{path}: larger than {MAX_BYTES // 2**20} MiB; split the scenario into a folder of files")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ScenarioError(f"{path}:{line}:{col}: not UTF-8 (byte 0x{raw[exc.start]:02x})") from None


def _check_events(text: str, name: str) -> None:
    depth = nodes = docs = 0
    try:
        for event in yaml.parse(text, Loader=_Loader):
            if isinstance(event, yaml.DocumentStartEvent):
                docs += 1
                if docs > MAX_DOCUMENTS:
                    raise _bounded(name, event, f"more than {MAX_DOCUMENTS:,} documents")
            elif isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                nodes += 1
                if depth > MAX_DEPTH:
                    raise _bounded(name, event, f"nested deeper than {MAX_DEPTH} levels")
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
            elif isinstance(event, yaml.ScalarEvent):
                nodes += 1
            elif isinstance(event, yaml.AliasEvent):
                m = event.start_mark
                raise ScenarioError(f"{name}:{m.line + 1}:{m.column + 1}: YAML aliases (*name) are not accepted "
                                    "in scenarios; write the value out")
            if nodes > MAX_NODES:
                raise _bounded(name, event, f"more than {MAX_NODES:,} values")
    except yaml.YAMLError as exc:
        raise _yaml_error(name, exc) from None


def _bounded(name: str, event, what: str) -> ScenarioError:
    m = event.start_mark
    return ScenarioError(f"{name}:{m.line + 1}:{m.column + 1}: scenario file is too big: {what}")


def _yaml_error(name: str, exc: yaml.YAMLError) -> ScenarioError:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if mark is not None:
        return ScenarioError(f"{name}:{mark.line + 1}:{mark.column + 1}: invalid YAML: {problem}")
    return ScenarioError(f"{name}: invalid YAML: {problem}")


def load_documents(path: str | Path, text: str | None = None) -> list[Document]:
    """Every non-empty document of a YAML file, with positions (module docstring).

    Args:
        path: the file (read unless ``text`` is given; then only used in messages).
        text: the file's content, if already read.

    Raises:
        ScenarioError: unreadable, too big, not UTF-8, invalid YAML, aliases, merge keys,
            duplicate or non-scalar keys.
    """
    path = Path(path)
    name = str(path)
    if text is None:
        text = read_text(path)
    _check_events(text, name)
    loader = _Loader(text)
    docs: list[Document] = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            doc = Document(None, name, len(docs))
            doc.data = _build(loader, node, (), doc)
            if doc.data is not None:
                docs.append(doc)
    except yaml.YAMLError as exc:
        raise _yaml_error(name, exc) from None
    finally:
        loader.dispose()
    return docs


def _node_name(root: yaml.Node) -> str:
    """``"Kind/namespace/name: "`` of a document from its YAML node, before it is built (for a
    message about a key of it), or ``""`` when the node does not say (the first of duplicate
    kind/metadata/name keys is taken)."""
    def child(node, key):
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if isinstance(k, yaml.ScalarNode) and k.value == key:
                    return v
        return None

    def scalar(node):
        return node.value if isinstance(node, yaml.ScalarNode) else None

    kind = scalar(child(root, "kind"))
    meta = child(root, "metadata")
    name, ns = scalar(child(meta, "name")), scalar(child(meta, "namespace"))
    if kind is None:
        return ""
    if name is None:
        return f"{kind}: "
    return f"{kind}/{ns}/{name}: " if ns else f"{kind}/{name}: "


def _build(loader: _Loader, node: yaml.Node, path: Path_, doc: Document) -> Any:
    # Iterative walk (the depth is already bounded, but avoid deep recursion anyway).
    root_holder: list[Any] = [None]
    stack: list[tuple[yaml.Node, Path_, Any, Any]] = [(node, path, root_holder, 0)]
    while stack:
        n, p, parent, key = stack.pop()
        doc.positions[p] = (n.start_mark.line + 1, n.start_mark.column + 1)
        if isinstance(n, yaml.ScalarNode):
            value = _scalar(loader, n)
        elif isinstance(n, yaml.SequenceNode):
            value = [None] * len(n.value)
            for i, child in enumerate(n.value):
                stack.append((child, p + (i,), value, i))
        else:
            value = {}
            for knode, vnode in n.value:
                if not isinstance(knode, yaml.ScalarNode):
                    raise ScenarioError(f"{where(doc.file, (knode.start_mark.line + 1, knode.start_mark.column + 1))}: "
                                        f"{format_path(p)}: mapping keys must be plain strings")
                k = knode.value
                kpos = (knode.start_mark.line + 1, knode.start_mark.column + 1)
                if k == "<<" and knode.tag == "tag:yaml.org,2002:merge":
                    raise ScenarioError(f"{where(doc.file, kpos)}: {format_path(p)}: YAML merge keys (<<) are not "
                                        "accepted in scenarios; write the fields out")
                if k in value:
                    raise ScenarioError(f"{where(doc.file, kpos)}: {_node_name(node)}{format_path(p + (k,))}: "
                                        f"duplicate key {k!r}")
                value[k] = None
                doc.key_positions[p + (k,)] = kpos
                stack.append((vnode, p + (k,), value, k))
        parent[key] = value
    return root_holder[0]


def _scalar(loader: _Loader, node: yaml.ScalarNode) -> Any:
    if node.tag == "tag:yaml.org,2002:timestamp" or node.tag == "tag:yaml.org,2002:binary":
        return node.value  # Kubernetes reads these as strings (JSON has no timestamp type)
    return loader.construct_object(node, deep=True)


def iter_files(path: str | Path) -> Iterator[Path]:
    """The scenario files: ``path`` itself, or the ``*.yaml`` / ``*.yml`` files of a folder
    (sorted, not recursive).

    Raises:
        ScenarioError: the path does not exist, or a folder holds no YAML file.
    """
    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml"))
        for p in files:
            if not p.is_file():    # a broken or looping link, a FIFO, a folder: never skipped silently
                raise ScenarioError(f"{p}: {not_a_file_reason(p)}; a scenario folder holds YAML files only")
        if not files:
            raise ScenarioError(f"{path}: folder holds no .yaml or .yml file")
        yield from files
    elif path.is_file():
        if path.suffix not in (".yaml", ".yml"):
            raise ScenarioError(f"{path}: not a .yaml or .yml file; expected a scenario YAML file or a folder of them")
        yield path
    else:
        raise ScenarioError(f"{path}: {not_a_file_reason(path)}")


def not_a_file_reason(path: Path) -> str:
    """Why ``path`` is not a regular file or folder, in words: missing, a symbolic link to a
    missing target, a symbolic link loop, a device, FIFO or socket, or unreadable."""
    import errno
    import os
    import stat

    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        if os.path.islink(path):
            return f"a symbolic link to {os.readlink(path)}, which does not exist"
        return "no such file or folder"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a symbolic link loop (it points, through links, back to itself)"
        return f"cannot read: {exc.strerror or exc}"
    if stat.S_ISDIR(mode):
        return "is a folder"
    if not stat.S_ISREG(mode):
        return "is not a regular file (a device, FIFO or socket)"
    return "is a regular file"


__all__ = ["Document", "MAX_BYTES", "MAX_DEPTH", "MAX_DOCUMENTS", "MAX_NODES", "ScenarioError", "format_path",
           "iter_files", "load_documents", "not_a_file_reason", "read_text", "where"]
