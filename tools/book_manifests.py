#!/usr/bin/env python3
"""Find every Kubernetes manifest the book shows and validate it, as ``kubectl --validate=strict``.

The convention (also in ``book/README.md``): a manifest shown on a page is one of

* a fenced ``yaml`` block in a page's Markdown (```` ```yaml ```` or ``{code-block} yaml``):
  every document in it must be a complete object (``apiVersion``, ``kind``,
  ``metadata.name``) or an NVIDIA device plugin config file (``version``/``flags``/
  ``sharing``). An excerpt that is not a whole object is not fenced as ``yaml``;
* a string literal in a code cell that parses as such an object (e.g. chapter 4's
  ``CONFIG = \"\"\"version: v1 ...\"\"\"``);
* the output of a code cell (computed at build time): a Markdown output holding a
  ``yaml`` fence (``IPython.display.Markdown``), or a text output that is a YAML stream of
  such objects. These are found in the executed notebooks of a build: each page's entry
  in the execution cache (``_build/.jupyter_cache``), else ``_build/jupyter_execute``
  (:func:`built_manifests`).

What each kind of object is checked against:

* core Kubernetes objects: ``kubernetes-validate`` in strict mode (unknown fields are
  errors) against the official schemas of Kubernetes :data:`KUBERNETES_VERSION`;
* ``karpenter.sh`` and ``kueue.x-k8s.io`` objects: the CRDs in the course's shared data
  (``$COURSE_SHARED_DATA`` or ``../shared/data``: ``karpenter/``, ``kueue/``), their
  ``spec.versions[].schema.openAPIV3Schema`` turned into a JSON Schema that refuses unknown
  fields wherever the CRD does not say ``x-kubernetes-preserve-unknown-fields`` (what the
  API server does with ``fieldValidation=Strict``); ``metadata`` is checked as a core
  ObjectMeta. The CRDs' CEL rules (``x-kubernetes-validations``) are not evaluated;
* NVIDIA device plugin config files, also inside a ConfigMap's ``data``: Lab 02's own
  parser (:func:`lab02_device_plugin.plugin.config.parse_config`), which refuses unknown keys.

An object of any other API group (for example ``karpenter.k8s.aws`` EC2NodeClass, whose CRD
the course does not carry) is an error: the book must not show what it cannot check.

Usage::

    python tools/book_manifests.py                 # the Markdown sources (no build needed)
    python tools/book_manifests.py BUILD_DIR       # also the executed notebooks of a build

Exit status 0 when every manifest validates, 1 otherwise (one line per error), 2 when a
manifest needs a CRD that is not found.
"""

from __future__ import annotations

import ast
import json
import os
import re
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]
BOOK_DIR = REPO_ROOT / "book"

#: The Kubernetes release whose official schemas core objects are validated against.
KUBERNETES_VERSION = "1.35"

#: API groups validated against a CRD of the shared data, and the folder holding the CRDs.
CRD_GROUPS: Mapping[str, str] = {"karpenter.sh": "karpenter", "kueue.x-k8s.io": "kueue"}

#: Top-level keys of NVIDIA's device plugin config file (api/config/v1).
DEVICE_PLUGIN_KEYS = frozenset({"version", "flags", "sharing", "resources", "imex"})

#: Most documents read from one block or output, and most bytes of one block (inputs are bounded).
MAX_DOCUMENTS = 50
MAX_BLOCK_BYTES = 200_000

_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*)$")
# Directives whose body is literal text, not Markdown (their fences never hold a yaml block).
_LITERAL_DIRECTIVES = ("code-cell", "code-block", "code", "sourcecode", "literalinclude", "math",
                       "bibliography", "raw")


class MissingDataError(Exception):
    """The shared data folder with the CRDs is absent; the message names the path looked at."""


@dataclass(frozen=True)
class Manifest:
    """One object shown in the book.

    Attributes:
        where: the place, ``book/ch10_fleets.md:54`` or ``ch11_capstone.ipynb cell 12 output``.
        document: the parsed YAML document (a mapping).
        kind: ``"kubernetes"`` (apiVersion + kind) or ``"device-plugin-config"``.
    """

    where: str
    document: Mapping[str, Any]
    kind: str

    @property
    def label(self) -> str:
        """``Kind name`` for messages (``device plugin config`` for config files)."""
        if self.kind == "device-plugin-config":
            return "device plugin config"
        meta = self.document.get("metadata") or {}
        name = meta.get("name") if isinstance(meta, Mapping) else None
        return f"{self.document.get('kind')} {name!r}" if name else str(self.document.get("kind"))


# --------------------------------------------------------------------------- finding

def classify(doc: Any) -> str | None:
    """``"kubernetes"``, ``"device-plugin-config"`` or None for anything else."""
    if not isinstance(doc, Mapping):
        return None
    if "apiVersion" in doc and "kind" in doc:
        return "kubernetes"
    keys = set(doc)
    if keys and keys <= DEVICE_PLUGIN_KEYS and keys & {"flags", "sharing"}:
        return "device-plugin-config"
    return None


def _split_documents(text: str) -> Iterator[tuple[int, str]]:
    """``(first line offset, text)`` of each YAML document of a stream split at ``---``."""
    start, lines = 0, []
    for i, line in enumerate(text.splitlines()):
        if re.match(r"^---\s*(#.*)?$", line):
            yield start, "\n".join(lines)
            start, lines = i + 1, []
        else:
            lines.append(line)
    yield start, "\n".join(lines)


def parse_yaml_block(text: str, where: str, line: int, strict: bool,
                     errors: list[str]) -> list[Manifest]:
    """The manifests of a YAML block that starts at ``line`` of ``where``.

    With ``strict`` (a fence marked yaml) every non-empty document must be a manifest and
    a YAML error is reported in ``errors``; otherwise (a string literal, an output) text
    that is not YAML or not a manifest is ignored.
    """
    if len(text.encode("utf-8")) > MAX_BLOCK_BYTES:
        if strict:
            errors.append(f"{where}:{line}: yaml block larger than {MAX_BLOCK_BYTES} bytes")
        return []
    found: list[Manifest] = []
    for count, (offset, part) in enumerate(_split_documents(text)):
        if count >= MAX_DOCUMENTS:
            errors.append(f"{where}:{line}: more than {MAX_DOCUMENTS} YAML documents in one block")
            break
        try:
            doc = yaml.safe_load(part)
        except yaml.YAMLError as exc:
            if strict:
                mark = getattr(exc, "problem_mark", None)
                at = line + offset + (mark.line if mark else 0)
                errors.append(f"{where}:{at}: invalid YAML: {getattr(exc, 'problem', None) or exc}")
            continue
        if doc is None:
            continue
        kind = classify(doc)
        if kind is None:
            if strict:
                errors.append(f"{where}:{line + offset}: a yaml block must hold complete objects "
                              "(apiVersion, kind, metadata) or a device plugin config file; fence "
                              "an excerpt as text instead")
            continue
        found.append(Manifest(f"{where}:{line + offset}", doc, kind))
    return found


def _strip_magics(source: str) -> str:
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line
                     for line in source.splitlines())


def manifests_in_code(source: str, where: str, line: int = 1) -> list[Manifest]:
    """Manifests held in string literals of a Python code cell that starts at ``line``."""
    try:
        tree = ast.parse(_strip_magics(source))
    except SyntaxError:
        return []
    found: list[Manifest] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "\n" in node.value:
            found += parse_yaml_block(node.value, where, line + node.lineno - 1, False, [])
    return found


def _literal_info(info: str) -> tuple[bool, str]:
    """(is literal, language) of a fence's info string."""
    info = info.strip()
    m = re.match(r"^\{([\w:-]+)\}\s*(.*)$", info)
    if m:
        name = m.group(1).split(":")[-1]
        return name in _LITERAL_DIRECTIVES, (m.group(2).split() or [""])[0].lower()
    return True, (info.split() or [""])[0].lower()


def fenced_blocks(text: str) -> Iterator[tuple[int, str, str]]:
    """``(line of the first content line, language, content)`` of each literal fenced block.

    MyST directives whose body is Markdown (``{exercise}``, ``{admonition}`` ...) are
    entered, so a ``yaml`` block inside them is found; literal bodies (code cells,
    ``{code-block}``) are returned whole. ``{code-cell}`` blocks have language ``python``.
    Option lines (``:tags: ...``) and a ``---`` front matter at the top of a directive
    body are skipped.
    """
    lines = text.splitlines()
    stack: list[tuple[str, int]] = []  # open Markdown-bodied directives: (char, length)
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info = m.group("fence"), m.group("info")
        if not info.strip() and stack and fence[0] == stack[-1][0] and len(fence) >= stack[-1][1]:
            stack.pop()
            i += 1
            continue
        literal, lang = _literal_info(info)
        if info.strip().startswith("{code-cell}"):
            lang = "python"
        if not literal:
            stack.append((fence[0], len(fence)))
            i += 1
            continue
        body: list[str] = []
        j = i + 1
        while j < len(lines):
            close = _FENCE.match(lines[j])
            if close and not close.group("info").strip() and close.group("fence")[0] == fence[0] \
                    and len(close.group("fence")) >= len(fence):
                break
            body.append(lines[j])
            j += 1
        first = i + 2
        if info.strip().startswith("{"):
            # directive options: ":key: value" lines or a --- ... --- block
            if body and body[0].strip() == "---":
                end = next((k for k in range(1, len(body)) if body[k].strip() == "---"), 0)
                body, first = body[end + 1:], first + end + 1
            while body and re.match(r"^:[\w-]+:", body[0]):
                body, first = body[1:], first + 1
        yield first, lang, "\n".join(body)
        i = j + 1


def manifests_in_markdown(text: str, where: str, errors: list[str]) -> list[Manifest]:
    """Manifests of a MyST page: ``yaml`` fences (strict) and code-cell string literals."""
    found: list[Manifest] = []
    for line, lang, body in fenced_blocks(text):
        if lang in ("yaml", "yml"):
            found += parse_yaml_block(body, where, line, True, errors)
        elif lang in ("python", "ipython3", "ipython", "py"):
            found += manifests_in_code(body, where, line)
    return found


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


def manifests_in_notebook(nb: Mapping[str, Any], where: str, errors: list[str],
                          outputs_only: bool = False) -> list[Manifest]:
    """Manifests of an executed notebook (``.ipynb`` as JSON): its Markdown cells, code cells
    and the outputs of its code cells (text and Markdown); with ``outputs_only`` only the
    outputs (what the Markdown source does not show)."""
    found: list[Manifest] = []
    for n, cell in enumerate(nb.get("cells", [])):
        source = _text(cell.get("source"))
        here = f"{where} cell {n}"
        if cell.get("cell_type") == "markdown":
            if not outputs_only:
                found += manifests_in_markdown(source, here, errors)
            continue
        if cell.get("cell_type") != "code":
            continue
        if not outputs_only:
            found += manifests_in_code(source, here)
        for out in cell.get("outputs", []):
            texts: list[tuple[str, str]] = []
            if out.get("output_type") == "stream":
                texts.append(("text", _text(out.get("text"))))
            data = out.get("data") or {}
            if "text/markdown" in data:
                texts.append(("markdown", _text(data["text/markdown"])))
            elif "text/plain" in data:
                texts.append(("text", _text(data["text/plain"])))
            for fmt, text in texts:
                if fmt == "markdown":
                    found += manifests_in_markdown(text, f"{here} output", errors)
                else:
                    found += parse_yaml_block(text, f"{here} output", 1, False, [])
    return found


def book_pages(book_dir: Path = BOOK_DIR) -> list[Path]:
    """The Markdown pages of the book (README.md excluded)."""
    return sorted(p for p in book_dir.glob("*.md") if p.name != "README.md")


def source_manifests(book_dir: Path = BOOK_DIR) -> tuple[list[Manifest], list[str]]:
    """Every manifest in the book's Markdown sources, and the errors met finding them."""
    errors: list[str] = []
    found: list[Manifest] = []
    for page in book_pages(book_dir):
        rel = page.relative_to(book_dir.parent) if book_dir.parent in page.parents else page
        found += manifests_in_markdown(page.read_text(encoding="utf-8"), str(rel), errors)
    return found, errors


def built_manifests(build_dir: Path, outputs_only: bool = True,
                    book_dir: Path | None = None) -> tuple[list[Manifest], list[str]]:
    """Every manifest the code cells of a build printed; with ``outputs_only=False`` also
    those of the notebooks' sources.

    ``build_dir`` is the ``_build`` folder (or its ``html`` subfolder). For each notebook
    page of ``book_dir`` (default :data:`BOOK_DIR`) the executed notebook comes from the
    build's execution cache ``<build>/.jupyter_cache``, matched to the page's current text
    as the build matches it (:func:`cached_notebook`): these are the outputs the HTML shows,
    on a fresh build and on an incremental one alike. (``<build>/jupyter_execute/*.ipynb``
    holds outputs only for the pages executed by the last build; a page taken from the
    cache is written there without outputs, which is how a reused cache once made this
    find no manifest at all.) A page without a cache entry falls back to its
    ``jupyter_execute`` copy; a page in neither place gives an error line naming it, so a
    build whose outputs cannot be found never passes as "no manifests".
    """
    build_dir = build_dir.parent if build_dir.name == "html" else build_dir
    book_dir = BOOK_DIR if book_dir is None else book_dir
    errors: list[str] = []
    found: list[Manifest] = []
    for page in sorted(book_dir.glob("*.md")):
        if not _is_notebook_page(page):
            continue
        nb = cached_notebook(page, build_dir / ".jupyter_cache")
        executed = build_dir / "jupyter_execute" / f"{page.stem}.ipynb"
        if nb is None and executed.is_file():
            nb = json.loads(executed.read_text(encoding="utf-8"))
        if nb is None:
            errors.append(f"{page.name}: no entry in the execution cache {build_dir / '.jupyter_cache'} "
                          f"matches its text, and {executed} does not exist; build the book first "
                          "(python tools/build_book.py)")
            continue
        found += manifests_in_notebook(nb, f"{page.stem}.ipynb", errors, outputs_only)
    return found, errors


def _is_notebook_page(page: Path) -> bool:
    """True for a MyST notebook page (a ``jupytext``/``kernelspec`` front matter)."""
    head = page.read_text(encoding="utf-8")[:2000]
    return head.startswith("---") and ("kernelspec:" in head or "jupytext:" in head)


def cached_notebook(page: Path, cache_dir: Path) -> dict | None:
    """The executed notebook of ``page`` from a jupyter-cache folder, or None.

    The page is read as MyST-NB reads it (``myst_nb.core.read.read_myst_markdown_notebook``)
    and matched with jupyter-cache's ``match_cache_notebook``, which compares the code
    cells' text and the kernel: the entry that the build would reuse for the page as it is
    now. None when the folder is missing, cannot be read, or holds no match.
    """
    if not cache_dir.is_dir():
        return None
    try:
        from jupyter_cache import get_cache
        from myst_nb.core.read import read_myst_markdown_notebook

        nb = read_myst_markdown_notebook(page.read_text(encoding="utf-8"), path=page)
        cache = get_cache(cache_dir)
        record = cache.match_cache_notebook(nb)
        return json.loads(json.dumps(cache.get_cache_bundle(record.pk).nb))
    except KeyError:  # no entry for this text
        return None
    except Exception:  # noqa: BLE001 - an unreadable cache counts as no cache
        return None


# --------------------------------------------------------------------------- schemas

def shared_data_dir() -> Path:
    """``$COURSE_SHARED_DATA``, else ``../shared/data`` beside the repository (the rule of
    ``tests/conftest.py`` and ``lab01_cluster_sim.book``)."""
    env = os.environ.get("COURSE_SHARED_DATA")
    return Path(env) if env else REPO_ROOT.parent / "shared" / "data"


def _strictify(node: Any, root: bool = False) -> Any:
    """A copy of an OpenAPI v3 schema as a JSON Schema that refuses unknown fields.

    ``nullable`` allows null; ``x-kubernetes-int-or-string`` allows an integer or a
    string; an object schema without ``additionalProperties`` and without
    ``x-kubernetes-preserve-unknown-fields`` gets ``additionalProperties: false``; an
    ``x-kubernetes-embedded-resource`` also allows apiVersion/kind/metadata.
    """
    if isinstance(node, list):
        return [_strictify(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _strictify(v) for k, v in node.items()
           if k not in ("properties", "items", "additionalProperties")}
    if "properties" in node:
        out["properties"] = {k: _strictify(v) for k, v in node["properties"].items()}
    if "items" in node:
        out["items"] = _strictify(node["items"])
    if isinstance(node.get("additionalProperties"), dict):
        out["additionalProperties"] = _strictify(node["additionalProperties"])
    elif "additionalProperties" in node:
        out["additionalProperties"] = node["additionalProperties"]
    if node.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out.setdefault("anyOf", [{"type": "integer"}, {"type": "string"}])
    is_object = node.get("type") == "object" or "properties" in node
    if node.get("x-kubernetes-embedded-resource"):
        props = out.setdefault("properties", {})
        for key in ("apiVersion", "kind"):
            props.setdefault(key, {"type": "string"})
        props.setdefault("metadata", {"type": "object", "x-kubernetes-preserve-unknown-fields": True})
    if is_object and not node.get("x-kubernetes-preserve-unknown-fields") \
            and "additionalProperties" not in node:
        out["additionalProperties"] = False
    if root and "properties" in out:
        # metadata is a core ObjectMeta, checked by kubernetes-validate (see _validate_crd)
        out["properties"]["metadata"] = {"type": "object"}
    if node.get("nullable"):
        if isinstance(out.get("type"), str):
            out["type"] = [out["type"], "null"]
        elif "anyOf" in out:
            out["anyOf"] = list(out["anyOf"]) + [{"type": "null"}]
    return out


@dataclass(frozen=True)
class CrdVersion:
    """One served version of a CRD, with its strict schema."""

    group: str
    kind: str
    version: str
    scope: str
    deprecated: bool
    schema: Mapping[str, Any]
    source: str


class Schemas:
    """The CRD schemas of the shared data, by ``(group, kind)``, and core validation.

    Build with :meth:`load`.
    """

    def __init__(self, crds: Mapping[tuple[str, str], Mapping[str, CrdVersion]],
                 kubernetes_version: str = KUBERNETES_VERSION,
                 missing: Mapping[str, str] | None = None) -> None:
        self.crds = crds
        self.kubernetes_version = kubernetes_version
        #: API group -> why its CRDs are unavailable (the path looked at).
        self.missing = dict(missing or {})

    @classmethod
    def load(cls, data_dir: Path | None = None,
             kubernetes_version: str = KUBERNETES_VERSION) -> Schemas:
        """Read every CRD under ``data_dir/karpenter`` and ``data_dir/kueue``.

        A missing folder is not an error here: it is recorded in :attr:`missing`, and
        validating an object of that group then raises :class:`MissingDataError`.
        """
        data_dir = shared_data_dir() if data_dir is None else data_dir
        crds: dict[tuple[str, str], dict[str, CrdVersion]] = {}
        missing: dict[str, str] = {}
        for group, folder in CRD_GROUPS.items():
            path = data_dir / folder
            files = sorted(path.glob("*.yaml")) if path.is_dir() else []
            if not files:
                missing[group] = (f"the CRDs of {group} were not found in {path} (set "
                                  "COURSE_SHARED_DATA to the folder holding karpenter/ and kueue/)")
                continue
            for f in files:
                crd = yaml.safe_load(f.read_text(encoding="utf-8"))
                spec = crd["spec"]
                kind = spec["names"]["kind"]
                for v in spec["versions"]:
                    if not v.get("served", True):
                        continue
                    schema = _strictify(v["schema"]["openAPIV3Schema"], root=True)
                    crds.setdefault((spec["group"], kind), {})[v["name"]] = CrdVersion(
                        spec["group"], kind, v["name"], spec.get("scope", "Namespaced"),
                        bool(v.get("deprecated")), schema, f"{folder}/{f.name}")
        return cls(crds, kubernetes_version, missing)

    def needs_crd(self, manifest: Manifest) -> str | None:
        """The API group of a CRD-validated manifest, else None."""
        if manifest.kind != "kubernetes":
            return None
        api = str(manifest.document.get("apiVersion"))
        group = api.split("/")[0] if "/" in api else ""
        return group if group in CRD_GROUPS else None

    def validate(self, manifest: Manifest) -> list[str]:
        """Errors of one manifest (empty when valid), each naming the place and the field path.

        Raises:
            MissingDataError: the manifest needs a CRD that was not found (see :attr:`missing`).
        """
        prefix = f"{manifest.where}: {manifest.label}"
        if manifest.kind == "device-plugin-config":
            return _validate_device_plugin_config(manifest.document, prefix)
        doc = manifest.document
        api = str(doc.get("apiVersion"))
        group = api.split("/")[0] if "/" in api else ""
        errors = _check_metadata(doc, prefix, strict_meta=group in CRD_GROUPS)
        if group in CRD_GROUPS:
            if group in self.missing:
                raise MissingDataError(f"{prefix}: cannot validate: {self.missing[group]}")
            errors += self._validate_crd(doc, group, api, prefix)
        else:
            errors += self._validate_core(doc, prefix)
        if doc.get("kind") == "ConfigMap" and group == "" and isinstance(doc.get("data"), Mapping):
            for key, value in doc["data"].items():
                if not isinstance(value, str):
                    continue
                try:
                    inner = yaml.safe_load(value)
                except yaml.YAMLError:
                    continue
                if classify(inner) == "device-plugin-config":
                    errors += _validate_device_plugin_config(inner, f"{prefix} data[{key!r}]")
        return errors

    def _validate_core(self, doc: Mapping[str, Any], prefix: str) -> list[str]:
        import kubernetes_validate

        try:
            kubernetes_validate.validate(dict(doc), self.kubernetes_version, strict=True)
        except kubernetes_validate.SchemaNotFoundError:
            return [f"{prefix}: no schema for kind {doc.get('kind')!r} of {doc.get('apiVersion')!r} "
                    f"in Kubernetes {self.kubernetes_version}, and no CRD for it in the shared data "
                    f"(groups with CRDs: {', '.join(CRD_GROUPS)})"]
        except kubernetes_validate.ValidationError as exc:
            return [f"{prefix}: {_describe(exc)} (Kubernetes {exc.version}, strict)"]
        return []

    def _validate_crd(self, doc: Mapping[str, Any], group: str, api: str, prefix: str) -> list[str]:
        import jsonschema

        kind = doc.get("kind")
        versions = self.crds.get((group, kind))
        if not versions:
            known = sorted(k for g, k in self.crds if g == group)
            return [f"{prefix}: kind {kind!r} is not a CRD of {group} in the shared data; "
                    f"expected one of {', '.join(known)}"]
        version = api.split("/", 1)[1] if "/" in api else ""
        crd = versions.get(version)
        if crd is None:
            return [f"{prefix}: apiVersion {api!r} is not served by the {kind} CRD; expected "
                    f"{' or '.join(group + '/' + v for v in versions)}"]
        errors: list[str] = []
        if crd.deprecated:
            current = [v for v, c in versions.items() if not c.deprecated]
            errors.append(f"{prefix}: apiVersion {api!r} is deprecated in the {kind} CRD; use "
                          f"{' or '.join(group + '/' + v for v in current)}")
        meta = doc.get("metadata") or {}
        if crd.scope == "Cluster" and isinstance(meta, Mapping) and "namespace" in meta:
            errors.append(f"{prefix}: metadata.namespace: {kind} is cluster-scoped; remove it")
        validator = jsonschema.Draft4Validator(crd.schema)
        for err in sorted(validator.iter_errors(dict(doc)), key=lambda e: [str(p) for p in e.path]):
            errors.append(f"{prefix}: {_describe(err)} ({crd.source})")
        return errors


def _check_metadata(doc: Mapping[str, Any], prefix: str, strict_meta: bool) -> list[str]:
    """A complete object has ``metadata.name``; with ``strict_meta`` (CRD objects, whose
    schema leaves metadata open) ObjectMeta is validated as the core type, strictly."""
    import kubernetes_validate

    meta = doc.get("metadata")
    if not isinstance(meta, Mapping) or not (meta.get("name") or meta.get("generateName")):
        return [f"{prefix}: metadata.name: required (a manifest is a complete object)"]
    if not strict_meta:
        return []
    try:
        kubernetes_validate.validate({"apiVersion": "v1", "kind": "ConfigMap", "metadata": dict(meta)},
                                     KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.ValidationError as exc:
        return [f"{prefix}: {_describe(exc)} (ObjectMeta, Kubernetes {exc.version}, strict)"]
    return []


def _path(parts: Iterable[Any]) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(top level)"


def _describe(err: Any) -> str:
    """One line for a jsonschema error: the field path and what is wrong."""
    where = _path(err.path)
    if err.validator == "additionalProperties" and isinstance(err.instance, Mapping):
        allowed = set((err.schema.get("properties") or {}))
        unknown = sorted(k for k in err.instance if k not in allowed)
        hint = f"; expected one of {', '.join(sorted(allowed))}" if allowed else ""
        return f"{where}: unknown field{'s' if len(unknown) > 1 else ''} " \
               f"{', '.join(repr(u) for u in unknown)}{hint}"
    message = err.message if len(err.message) <= 240 else err.message[:240] + "..."
    return f"{where}: {message}"


def _validate_device_plugin_config(doc: Any, prefix: str) -> list[str]:
    from lab02_device_plugin.errors import InputError
    from lab02_device_plugin.plugin.config import parse_config

    try:
        parse_config(doc, prefix)
    except InputError as exc:
        return [str(exc)]
    return []


def validate_all(manifests: Iterable[Manifest], schemas: Schemas) -> list[str]:
    """Every error of every manifest, in order."""
    errors: list[str] = []
    for m in manifests:
        errors += schemas.validate(m)
    return errors


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; see the module docstring."""
    import argparse

    parser = argparse.ArgumentParser(description="Validate every Kubernetes manifest and device "
                                     "plugin config the book shows (strict, as kubectl --validate=strict).")
    parser.add_argument("build", nargs="?", type=Path, default=None,
                        help="a build's _build folder: also check the executed notebooks' outputs")
    args = parser.parse_args(argv)
    schemas = Schemas.load()
    manifests, errors = source_manifests()
    if args.build is not None:
        more, more_errors = built_manifests(args.build)
        manifests, errors = manifests + more, errors + more_errors
    try:
        errors += validate_all(manifests, schemas)
    except MissingDataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for line in errors:
        print(line)
    print(f"{len(manifests)} manifests checked against Kubernetes {KUBERNETES_VERSION} and the "
          f"CRDs of {', '.join(CRD_GROUPS)}: {len(errors)} error(s)", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO_ROOT))
    sys.exit(main())
