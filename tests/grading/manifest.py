"""Checksums and pristine copies of the course's own test files.

Grading must run the course's tests, not a learner's edited copy. ``manifest.json`` lists
every protected file with its SHA-256; ``pristine.json`` holds the original text of each
(text, so that a review shows exactly what changed). Before grading, :func:`restore`
compares the working tree with the manifest, puts back every changed or missing file,
moves aside any extra ``.py`` file a learner dropped into a protected folder (a
``conftest.py`` there could rig the results), and reports each one.

Protected: ``tests/conftest.py``, everything under ``tests/grading/``, ``tests/lab01/graded/``,
``tests/lab02/graded/`` and ``tests/hidden/`` (hidden tests are absent from the student
edition, whose manifest is regenerated without them), except the manifest and the
pristine copy themselves and caches.

Command line (from the repository root)::

    python tests/grading/manifest.py write     # after changing a protected file
    python tests/grading/manifest.py check     # exit 1 and list differences
    python tests/grading/manifest.py restore   # put the originals back

Limit: the pristine copy travels with the repository, so a determined learner can edit it
too. The real guarantee is the instructor's setup: the autograder brings its own copy of
``tests/`` and takes only the lab packages from a submission (see labs/README.md).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
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
_SKIP_PARTS = {"__pycache__", ".pytest_cache", ".ipynb_checkpoints"}
_SKIP_SUFFIXES = {".pyc", ".pyo"}
BACKUP_DIR = Path("test-artifacts") / "grading-backup"
"""Where :func:`restore` keeps a copy of every file it overwrote or moved aside."""


def sha256_of(path: Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def protected_files(root: Path) -> list[Path]:
    """Protected files present under ``root``, as sorted POSIX-relative paths.

    Args:
        root: repository root.
    """
    found: set[Path] = set()
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
    manifest = {
        "comment": "Checksums of the course's test files; regenerate with "
                   "`python tests/grading/manifest.py write`.",
        "algorithm": "sha256",
        "files": {p.as_posix(): sha256_of(root / p) for p in files},
    }
    pristine = {p.as_posix(): (root / p).read_text(encoding="utf-8") for p in files}
    out = root / GRADING_DIR
    out.mkdir(parents=True, exist_ok=True)
    (out / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n",
                                     encoding="utf-8")
    (out / PRISTINE_NAME).write_text(json.dumps(pristine, indent=1, sort_keys=True) + "\n",
                                     encoding="utf-8")
    return [p.as_posix() for p in files]


@dataclass
class RestoreReport:
    """What :func:`restore` (or a dry run of it) found.

    Attributes:
        changed: protected files whose content differed from the manifest.
        missing: protected files that were absent.
        extra: ``.py`` files in protected folders that the manifest does not list.
        unrecoverable: changed or missing files with no pristine copy to restore from.
        applied: True when files were actually restored / moved aside.
    """

    changed: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    unrecoverable: list[str] = field(default_factory=list)
    applied: bool = False

    @property
    def clean(self) -> bool:
        """True when every protected file matched the manifest."""
        return not (self.changed or self.missing or self.extra)

    def lines(self) -> list[str]:
        """Human-readable report, one line per finding."""
        verb = "restored" if self.applied else "differs from the course's copy"
        out = [f"test file changed: {p} ({verb})" for p in self.changed]
        out += [f"test file missing: {p} ({'restored' if self.applied else 'absent'})"
                for p in self.missing]
        out += [f"unexpected file in a test folder: {p} "
                f"({'moved aside' if self.applied else 'not in the manifest'})" for p in self.extra]
        out += [f"cannot restore {p}: no pristine copy" for p in self.unrecoverable]
        return out


class ManifestError(Exception):
    """The manifest or its pristine copy is absent or unreadable."""


def load(root: Path) -> tuple[dict[str, str], dict[str, str]]:
    """Read ``(checksums, pristine texts)`` from ``root/tests/grading``.

    Raises:
        ManifestError: a file is absent or is not the expected JSON.
    """
    base = root / GRADING_DIR
    try:
        manifest = json.loads((base / MANIFEST_NAME).read_text(encoding="utf-8"))
        pristine = json.loads((base / PRISTINE_NAME).read_text(encoding="utf-8"))
        files = manifest["files"]
    except FileNotFoundError as exc:
        raise ManifestError(f"{exc.filename}: not found; run `python tests/grading/manifest.py write`") from None
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ManifestError(f"{base / MANIFEST_NAME}: not a grading manifest ({exc})") from None
    if not isinstance(files, dict) or not isinstance(pristine, dict):
        raise ManifestError(f"{base / MANIFEST_NAME}: 'files' must map paths to checksums")
    return files, pristine


def restore(root: Path, apply: bool = True) -> RestoreReport:
    """Compare protected files with the manifest and, if ``apply``, put the originals back.

    A file overwritten or moved aside is first copied to ``test-artifacts/grading-backup/``
    so that nothing a learner (or a maintainer who forgot to run ``write``) typed is lost.

    Hidden tests (``tests/hidden/``) listed in the manifest but absent because the whole
    folder is absent are not reported: that is the student edition.

    Raises:
        ManifestError: no readable manifest.
    """
    files, pristine = load(root)
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
                    if p.as_posix() not in listed and p.suffix == ".py"]
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
        (root / rel).unlink()
    return report


def _backup(root: Path, rel: str) -> None:
    dest = root / BACKUP_DIR / rel
    dest.parent.mkdir(parents=True, exist_ok=True)
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
