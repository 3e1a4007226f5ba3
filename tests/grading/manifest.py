"""Checksums and pristine copies of the course's own test files, and the local tamper check.

Grading must run the course's tests, not a learner's edited copy. ``manifest.json`` lists
every protected file with its SHA-256 and a digest of the pytest configuration;
``pristine.json`` holds the original text of each file (text, so that a review shows
exactly what changed). Before a local ``pytest --grade``, :func:`restore` compares the
working tree with the manifest, puts back every changed or missing file, moves aside any
unexpected file that could change how tests run, and reports each one.

Protected (everything that can change a graded outcome):

- ``tests/conftest.py``, everything under ``tests/grading/`` (the plugin, this module),
  ``tests/lab01/graded/``, ``tests/lab02/graded/`` and ``tests/hidden/`` (hidden tests
  are absent from the student edition, whose manifest is regenerated without them);
- every ``conftest.py`` that pytest would load for the graded tests: in the repository
  root, ``tests/``, ``tests/lab01/``, ``tests/lab02/`` and the graded folders; and
  ``sitecustomize.py`` / ``usercustomize.py`` in the root or ``tests/`` (Python runs them
  at start-up when those folders are on ``PYTHONPATH``): such a file that the manifest
  does not list is moved aside;
- pytest's configuration: the ``[tool.pytest]`` table of ``pyproject.toml`` (by digest),
  and no ``pytest.ini``, ``.pytest.ini``, ``tox.ini`` or ``setup.cfg`` in those folders
  (pytest would read one before pyproject.toml);
- the manifest itself: ``manifest.json`` carries a digest of its own content and every
  pristine text must match its checksum; a missing or damaged manifest refuses grading.

Restore or refuse: a changed graded test is put back and grading goes on. A changed file
that pytest or Python had already loaded when the check ran (a ``conftest.py``, the
grading package, the configuration, a start-up hook) cannot be undone in that process, so
it is put back (or moved aside) and that grading run is refused: run it again.

Command line (from the repository root; for course maintainers)::

    python tests/grading/manifest.py write     # after changing a protected file
    python tests/grading/manifest.py check     # exit 1 and list differences
    python tests/grading/manifest.py restore   # put the originals back

Limit: the manifest travels with the repository, so a learner can defeat this check by
studying it. It protects against accidents and simple rigging; the real guarantee is the
autograder (tools/make_autograder.py), which brings its own copy of everything and takes
only the learner's lab files from a submission (see labs/README.md).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

MANIFEST_NAME = "manifest.json"
PRISTINE_NAME = "pristine.json"
GRADING_DIR = Path("tests") / "grading"
PROTECTED_FILES = (Path("tests") / "conftest.py",)
PROTECTED_DIRS = (
    GRADING_DIR,
    Path("tests") / "lab01" / "graded",
    Path("tests") / "lab02" / "graded",
    Path("tests") / "hidden",
)
CONFTEST_DIRS = (Path("."), Path("tests"), Path("tests") / "lab01", Path("tests") / "lab02")
"""Folders (besides the protected ones) whose conftest.py pytest loads for the graded tests."""
STARTUP_HOOKS = ("sitecustomize.py", "usercustomize.py")
STARTUP_DIRS = (Path("."), Path("tests"))
PYTEST_CONFIG_NAMES = ("pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg")
SHADOWED_MODULES = ("pytest", "_pytest", "pluggy", "pytest_timeout", "py", "iniconfig", "packaging", "numpy",
                    "defusedxml", "grading")
"""Modules of the grading stack: a module or package of one of these names in the root or
``tests/`` (both on ``sys.path`` when pytest runs) would be imported instead of the real one
(``-p pytest_timeout`` loads a root-level ``pytest_timeout.py``); it is moved aside and the
run refused (``tests/grading`` itself is the real ``grading``)."""
_SKIP_PARTS = {"__pycache__", ".pytest_cache", ".ipynb_checkpoints"}
_SKIP_SUFFIXES = {".pyc", ".pyo"}
BACKUP_DIR = Path("test-artifacts") / "grading-backup"
"""Where :func:`restore` keeps a copy of every file it overwrote or moved aside."""
RESTORE_AGAIN = "a file loaded before the check could act"


def sha256_of(path: Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _is_graded_dir(rel: Path) -> bool:
    return any(rel == d or d in rel.parents for d in PROTECTED_DIRS)


def guarded_files(root: Path) -> list[Path]:
    """Files that change how the graded tests run wherever they appear: ``conftest.py`` in
    the folders pytest loads for the graded tests, start-up hooks on ``PYTHONPATH``."""
    found = [d / "conftest.py" for d in CONFTEST_DIRS if (root / d / "conftest.py").is_file()]
    found += [d / name for d in STARTUP_DIRS for name in STARTUP_HOOKS if (root / d / name).is_file()]
    return [Path(p.as_posix()) for p in found]


def shadowing_entries(root: Path) -> list[Path]:
    """Modules or packages in the root or ``tests/`` named like :data:`SHADOWED_MODULES`."""
    out = []
    for d in STARTUP_DIRS:
        for name in SHADOWED_MODULES:
            if d == Path("tests") and name == "grading":
                continue
            for entry in (d / f"{name}.py", d / name):
                if (root / entry).is_file() or (root / entry).is_dir():
                    out.append(Path(entry.as_posix()))
    return out


def protected_files(root: Path) -> list[Path]:
    """Protected files present under ``root``, as sorted POSIX-relative paths.

    Args:
        root: repository root.
    """
    found: set[Path] = set(guarded_files(root))
    for rel in PROTECTED_FILES:
        if (root / rel).is_file():
            found.add(rel)
    for rel_dir in PROTECTED_DIRS:
        base = root / rel_dir
        if not base.is_dir():
            continue
        for path in base.rglob("*"):
            rel = path.relative_to(root)
            if (not path.is_file() or _SKIP_PARTS.intersection(rel.parts)
                    or path.suffix in _SKIP_SUFFIXES):
                continue
            if rel in (GRADING_DIR / MANIFEST_NAME, GRADING_DIR / PRISTINE_NAME):
                continue
            found.add(rel)
    return sorted(found, key=lambda p: p.as_posix())


def _config_dirs() -> list[Path]:
    return [Path("."), Path("tests"), Path("tests") / "lab01", Path("tests") / "lab02", *PROTECTED_DIRS]


def pytest_config(root: Path) -> dict[str, str]:
    """What decides pytest's configuration for the graded tests, as ``{name: digest}``:
    the ``[tool.pytest]`` table of ``pyproject.toml`` (``"absent"`` without one) and every
    ini-style file pytest would read in the folders above the graded tests."""
    out: dict[str, str] = {}
    pyproject = root / "pyproject.toml"
    table = "absent"
    if pyproject.is_file():
        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
            section = data.get("tool", {}).get("pytest")
            if section is not None:
                table = hashlib.sha256(json.dumps(section, sort_keys=True).encode()).hexdigest()
        except (tomllib.TOMLDecodeError, UnicodeDecodeError):
            table = "unreadable"
    out["pyproject.toml#tool.pytest"] = table
    for d in _config_dirs():
        for name in PYTEST_CONFIG_NAMES:
            path = root / d / name
            if path.is_file():
                out[(d / name).as_posix()] = sha256_of(path)
    return out


def _self_digest(files: dict, config: dict) -> str:
    return hashlib.sha256(json.dumps({"files": files, "pytest_config": config}, sort_keys=True).encode()).hexdigest()


def write(root: Path, exclude_hidden: bool = False) -> list[str]:
    """Write ``manifest.json`` and ``pristine.json`` for the protected files under ``root``.

    Args:
        root: repository root.
        exclude_hidden: leave ``tests/hidden/`` out (the student edition).

    Returns:
        The POSIX paths written into the manifest.
    """
    files = [p for p in protected_files(root)
             if not (exclude_hidden and p.parts[:2] == ("tests", "hidden"))]
    checksums = {p.as_posix(): sha256_of(root / p) for p in files}
    config = pytest_config(root)
    manifest = {
        "comment": "Checksums of the course's test files and pytest configuration; maintained by "
                   "tests/grading/manifest.py (see labs/README.md, for instructors).",
        "algorithm": "sha256",
        "files": checksums,
        "pytest_config": config,
        "digest": _self_digest(checksums, config),
    }
    pristine = {p.as_posix(): (root / p).read_text(encoding="utf-8") for p in files}
    out = root / GRADING_DIR
    out.mkdir(parents=True, exist_ok=True)
    (out / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n",
                                     encoding="utf-8")
    (out / PRISTINE_NAME).write_text(json.dumps(pristine, indent=1, sort_keys=True) + "\n",
                                     encoding="utf-8")
    return [p.as_posix() for p in files]


def _loaded_early(rel: str) -> bool:
    """True for a file pytest or Python has loaded before ``pytest --grade`` checks anything."""
    path = Path(rel)
    return (path.name in ("conftest.py", *STARTUP_HOOKS) or path.parent == GRADING_DIR and path.suffix == ".py"
            or path.name in PYTEST_CONFIG_NAMES or rel.startswith("pyproject.toml")
            or (path.parent in STARTUP_DIRS and (path.stem if path.suffix == ".py" else path.name) in SHADOWED_MODULES))


@dataclass
class RestoreReport:
    """What :func:`restore` (or a dry run of it) found.

    Attributes:
        changed: protected files whose content differed from the manifest.
        missing: protected files that were absent.
        extra: files the manifest does not list: a ``.py`` file in a protected folder, a
            ``conftest.py`` or start-up hook, an ini file pytest would read.
        config: pytest configuration that differs (``pyproject.toml#tool.pytest``).
        unrecoverable: changed or missing files with no pristine copy to restore from.
        applied: True when files were actually restored / moved aside.
    """

    changed: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    config: list[str] = field(default_factory=list)
    unrecoverable: list[str] = field(default_factory=list)
    applied: bool = False

    @property
    def clean(self) -> bool:
        """True when every protected file matched the manifest."""
        return not (self.changed or self.missing or self.extra or self.config)

    @property
    def refuse(self) -> list[str]:
        """Findings that were already loaded when the check ran: that grading run is refused."""
        return [p for p in self.changed + self.missing + self.extra + self.config + self.unrecoverable
                if _loaded_early(p) or p in self.config or p in self.unrecoverable]

    def lines(self) -> list[str]:
        """Human-readable report, one line per finding."""
        kept = f"; your version is in {BACKUP_DIR.as_posix()}/" if self.applied else ""
        verb = f"restored{kept}" if self.applied else "differs from the course's copy"
        out = [f"test file changed: {p} ({verb})" for p in self.changed]
        out += [f"test file missing: {p} ({'restored' if self.applied else 'absent'})"
                for p in self.missing]
        out += [f"unexpected file that can change the tests: {p} "
                f"({'moved aside' + kept if self.applied else 'not in the manifest'})" for p in self.extra]
        out += [f"pytest configuration changed: {p} (put the course's "
                + ("[tool.pytest.ini_options] back, e.g. git checkout -- pyproject.toml)" if p.startswith("pyproject")
                   else f"copy back, e.g. git checkout -- {p})") for p in self.config]
        out += [f"cannot restore {p}: the course's copy is not available" for p in self.unrecoverable]
        return out


class ManifestError(Exception):
    """The manifest or its pristine copy is absent, unreadable or damaged."""


_GET_BACK = "get the course's copy back (e.g. `git checkout -- tests/grading`)"


def load(root: Path) -> tuple[dict[str, str], dict[str, str]]:
    """Read ``(checksums, pristine texts)`` from ``root/tests/grading``, checking the
    manifest's own digest.

    Raises:
        ManifestError: a file is absent, is not the expected JSON, or does not match its digest.
    """
    files, pristine, _ = _load(root)
    return files, pristine


def _load(root: Path) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    base = root / GRADING_DIR
    name = (GRADING_DIR / MANIFEST_NAME).as_posix()
    try:
        manifest = json.loads((base / MANIFEST_NAME).read_text(encoding="utf-8"))
        pristine = json.loads((base / PRISTINE_NAME).read_text(encoding="utf-8"))
        files = manifest["files"]
        config = manifest.get("pytest_config", {})
        digest = manifest.get("digest")
    except FileNotFoundError as exc:
        raise ManifestError(f"{Path(exc.filename).name}: not found in {GRADING_DIR.as_posix()}; {_GET_BACK}") from None
    except (json.JSONDecodeError, KeyError, TypeError, UnicodeDecodeError) as exc:
        raise ManifestError(f"{name}: not a grading manifest ({exc}); {_GET_BACK}") from None
    if not isinstance(files, dict) or not isinstance(pristine, dict) or not isinstance(config, dict):
        raise ManifestError(f"{name}: 'files' must map paths to checksums; {_GET_BACK}")
    if digest != _self_digest(files, config):
        raise ManifestError(f"{name}: damaged (its content does not match its digest); {_GET_BACK}")
    return files, pristine, config


def restore(root: Path, apply: bool = True) -> RestoreReport:
    """Compare protected files with the manifest and, if ``apply``, put the originals back.

    A file overwritten or moved aside is first copied to ``test-artifacts/grading-backup/``
    so that nothing a learner (or a maintainer who forgot to run ``write``) typed is lost.

    Hidden tests (``tests/hidden/``) listed in the manifest but absent because the whole
    folder is absent are not reported: that is the student edition.

    Raises:
        ManifestError: no readable manifest.
    """
    files, pristine, config = _load(root)
    report = RestoreReport(applied=apply)
    hidden_absent = not (root / "tests" / "hidden").is_dir()
    for rel, digest in sorted(files.items()):
        path = root / rel
        if not path.is_file():
            if hidden_absent and rel.startswith("tests/hidden/"):
                continue
            report.missing.append(rel)
        elif sha256_of(path) != digest:
            report.changed.append(rel)
    listed = set(files)
    report.extra = [p.as_posix() for p in protected_files(root)
                    if p.as_posix() not in listed and (p.suffix == ".py" or not _is_graded_dir(p))]
    report.extra += [p.as_posix() for p in shadowing_entries(root)]
    now = pytest_config(root)
    for key in sorted(set(now) | set(config)):
        if now.get(key) == config.get(key):
            continue
        if key.startswith("pyproject.toml") or key in config:
            report.config.append(key)
        elif key in now:
            report.extra.append(key)
    if not apply:
        return report
    for rel in report.changed + report.missing:
        text = pristine.get(rel)
        if text is None or hashlib.sha256(text.encode("utf-8")).hexdigest() != files[rel]:
            report.unrecoverable.append(rel)
            continue
        path = root / rel
        if path.is_file():
            _backup(root, rel)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))
    for rel in report.extra:
        _backup(root, rel)
        if (root / rel).is_dir():
            shutil.rmtree(root / rel)
        else:
            (root / rel).unlink()
    return report


def _backup(root: Path, rel: str) -> None:
    dest = root / BACKUP_DIR / rel
    dest.parent.mkdir(parents=True, exist_ok=True)
    if (root / rel).is_dir():
        shutil.copytree(root / rel, dest, dirs_exist_ok=True)
    else:
        shutil.copy2(root / rel, dest)


def main(argv: list[str] | None = None) -> int:
    """Command line: ``write``, ``check`` or ``restore``; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python tests/grading/manifest.py",
        description="Maintain the checksums and pristine copies of the course's test files "
                    "that `pytest --grade` restores before grading.",
    )
    parser.add_argument("action", choices=["write", "check", "restore"],
                        help="write: regenerate after changing a test file; check: list "
                             "differences (exit 1 if any); restore: put the originals back")
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[2],
                        help="repository root (default: the one holding this script)")
    parser.add_argument("--exclude-hidden", action="store_true",
                        help="with write: leave tests/hidden/ out (the student edition)")
    args = parser.parse_args(argv)
    if args.action == "write":
        written = write(args.root, exclude_hidden=args.exclude_hidden)
        print(f"wrote {GRADING_DIR / MANIFEST_NAME} and {GRADING_DIR / PRISTINE_NAME}: "
              f"{len(written)} files")
        return 0
    try:
        report = restore(args.root, apply=args.action == "restore")
    except ManifestError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for line in report.lines():
        print(line)
    if report.clean:
        print("all course test files match the manifest")
    return 0 if (report.clean or args.action == "restore") and not report.unrecoverable else 1


if __name__ == "__main__":
    raise SystemExit(main())
