"""Finding the expected files in a submission, and unpacking submissions safely.

A learner submits the lab package files that hold their code (``make submission`` packs
them in the repository's layout: ``lab01_cluster_sim/metrics.py``, ...). Learners also
zip a folder, upload loose files, or pack a whole checkout. :func:`resolve` accepts every
layout in which each expected file can be told apart:

1. the file at its repository path under any folder (``my-lab/lab01_cluster_sim/metrics.py``),
   if exactly one such copy exists (or all copies are identical);
2. else a loose file of the same name (``metrics.py``) outside any lab package folder,
   if exactly one exists;
3. else the file is missing (nothing of that name), in the wrong place (only copies
   inside a lab package folder other than the expected one) or ambiguous (several
   different copies); the parts that need it score 0 and the message says which file
   was expected where and what was found.

Bounds: at most :data:`MAX_FILES` files and :data:`MAX_DEPTH` folders deep are looked
at; a learner file over :data:`MAX_LEARNER_FILE_BYTES` or not UTF-8 is refused. Zip
archives are unpacked by :func:`extract_zip` with limits on members, sizes and ratio,
without links, absolute paths or ``..``.
"""

from __future__ import annotations

import hashlib
import lzma
import os
import shutil
import stat
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

MAX_FILES = 5_000
MAX_DEPTH = 24
MAX_LEARNER_FILE_BYTES = 1_000_000
MAX_ZIP_MEMBERS = 5_000
MAX_ZIP_BYTES = 200 * 1024 * 1024
"""Largest total uncompressed size of a submission zip (notebooks with figures fit easily)."""
MAX_ZIP_RATIO = 200
_SKIP_DIRS = {"__MACOSX", ".git", "__pycache__", ".ipynb_checkpoints", ".pytest_cache", "node_modules",
              ".venv", "venv", ".tox", "build", "dist", "test-artifacts"}
PACKAGE_DIRS = frozenset({"lab01_cluster_sim", "lab02_device_plugin", "policies", "disciplines",
                          "workloads", "commands", "admission", "scenario", "plugin", "kubelet", "models"})
"""Folder names that mark a file as inside a lab package (so not a loose file), besides the
folders of the expected paths themselves."""


class SubmissionError(Exception):
    """A submission archive that cannot be unpacked safely (the message says why)."""


@dataclass
class Found:
    """Where one expected file was found, or why it was not.

    Attributes:
        expected: the repository path, ``lab01_cluster_sim/metrics.py``.
        path: the file used, or None.
        how: ``"exact"``, ``"nested"`` (under a folder), ``"loose"``, or the problem:
            ``"missing"``, ``"wrong-place"``, ``"ambiguous"``, ``"too-large"``, ``"not-utf8"``.
        candidates: submission-relative paths of the files considered (for messages).
    """

    expected: str
    path: Path | None
    how: str
    candidates: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when a usable file was found."""
        return self.path is not None

    def message(self) -> str:
        """One line for the learner: what was expected where, and what was found."""
        where = ", ".join(self.candidates[:5]) + (" ..." if len(self.candidates) > 5 else "")
        if self.how == "exact":
            return f"{self.expected}: found"
        if self.how in ("nested", "loose"):
            return f"{self.expected}: found as {where} ({self.how}), used"
        if self.how == "missing":
            return (f"{self.expected}: expected in the submission (at {self.expected}, or as a loose "
                    f"{PurePosixPath(self.expected).name}); not found")
        if self.how == "wrong-place":
            return f"{self.expected}: expected at {self.expected}; found only {where} (wrong folder), not used"
        if self.how == "ambiguous":
            return f"{self.expected}: several different copies ({where}); keep only the one at {self.expected}"
        if self.how == "too-large":
            return f"{self.expected}: {where} is larger than {MAX_LEARNER_FILE_BYTES} bytes, not used"
        if self.how == "not-utf8":
            return f"{self.expected}: {where} is not UTF-8 text, not used"
        return f"{self.expected}: {self.how}"


def list_files(root: Path) -> list[PurePosixPath]:
    """Regular files under ``root`` (no links), relative, sorted; bounded.

    Raises:
        SubmissionError: more than :data:`MAX_FILES` files.
    """
    out: list[PurePosixPath] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        rel = Path(dirpath).relative_to(root)
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.startswith("._")
                             and len(rel.parts) < MAX_DEPTH and not (Path(dirpath) / d).is_symlink())
        for name in sorted(filenames):
            full = Path(dirpath) / name
            if name.startswith("._") or full.is_symlink() or not full.is_file():
                continue
            out.append(PurePosixPath(rel.as_posix(), name) if rel.parts else PurePosixPath(name))
            if len(out) > MAX_FILES:
                raise SubmissionError(f"the submission holds more than {MAX_FILES} files")
    return out


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _pick(root: Path, expected: str, matches: list[PurePosixPath], how: str) -> Found:
    names = [m.as_posix() for m in matches]
    if len({_digest(root / m) for m in matches}) > 1:
        return Found(expected, None, "ambiguous", names)
    chosen = min(matches, key=lambda m: (len(m.parts), m.as_posix()))
    path = root / chosen
    if path.stat().st_size > MAX_LEARNER_FILE_BYTES:
        return Found(expected, None, "too-large", [chosen.as_posix()])
    try:
        path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        return Found(expected, None, "not-utf8", [chosen.as_posix()])
    if how == "nested" and chosen.as_posix() == expected:
        how = "exact"
    return Found(expected, path, how, names)


def resolve(root: Path, expected: list[str], files: list[PurePosixPath] | None = None) -> dict[str, Found]:
    """Find each expected file (repository-relative POSIX path) in the submission at ``root``.

    Raises:
        SubmissionError: the submission holds too many files.
    """
    files = list_files(root) if files is None else files
    names = [PurePosixPath(e).name for e in expected]
    package_dirs = PACKAGE_DIRS | {d for e in expected for d in PurePosixPath(e).parts[:-1]}
    out: dict[str, Found] = {}
    for exp in expected:
        parts = PurePosixPath(exp).parts
        exact = [f for f in files if f.parts[-len(parts):] == parts]
        if exact:
            out[exp] = _pick(root, exp, exact, "nested")
            continue
        name = parts[-1]
        same_name = [f for f in files if f.name == name]
        loose = [f for f in same_name if not package_dirs.intersection(f.parts[:-1])]
        if loose and names.count(name) == 1:
            out[exp] = _pick(root, exp, loose, "loose")
        elif same_name:
            out[exp] = Found(exp, None, "wrong-place", [f.as_posix() for f in same_name])
        else:
            out[exp] = Found(exp, None, "missing")
    return out


MAX_NAME_BYTES = 255
"""Longest file or folder name in a zip (bytes, as most file systems allow)."""
MAX_PATH_BYTES = 1024
_METHODS = {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA}


def _check_members(archive: Path, infos: list[zipfile.ZipInfo]) -> None:
    """Refuse an archive whose member names or flags cannot be unpacked safely and
    unambiguously (the message names the member)."""
    files: set[str] = set()
    dirs: set[str] = set()
    for info in infos:
        raw = info.orig_filename
        name = info.filename.replace("\\", "/")
        pure = PurePosixPath(name)
        if "\0" in raw or any(ord(c) < 32 for c in raw):
            raise SubmissionError(f"{archive.name}: member name {raw!r} holds control characters")
        if pure.is_absolute() or ".." in pure.parts or (pure.parts and ":" in pure.parts[0]):
            raise SubmissionError(f"{archive.name}: unsafe member name {info.filename!r}")
        if len(name.encode("utf-8", "replace")) > MAX_PATH_BYTES or any(
                len(p.encode("utf-8", "replace")) > MAX_NAME_BYTES for p in pure.parts):
            raise SubmissionError(f"{archive.name}: member name {name[:60]!r}... is too long")
        if info.flag_bits & 0x1:
            raise SubmissionError(f"{archive.name}: member {name!r} is encrypted (upload an unencrypted zip)")
        if info.compress_type not in _METHODS:
            raise SubmissionError(f"{archive.name}: member {name!r} uses an unknown compression method "
                                  f"({info.compress_type})")
        key = pure.as_posix()
        if not pure.parts:
            continue
        if info.is_dir():
            if key in files:
                raise SubmissionError(f"{archive.name}: {key!r} is both a file and a folder")
            dirs.add(key)
            continue
        if key in files:
            raise SubmissionError(f"{archive.name}: member {key!r} appears twice")
        if key in dirs:
            raise SubmissionError(f"{archive.name}: {key!r} is both a file and a folder")
        files.add(key)
    for key in files:
        parents = {p.as_posix() for p in PurePosixPath(key).parents if p.parts}
        clash = parents & files
        if clash:
            raise SubmissionError(f"{archive.name}: {sorted(clash)[0]!r} is both a file and a folder")


def extract_zip(archive: Path, dest: Path) -> list[str]:
    """Unpack a submission zip into ``dest`` safely.

    Links are skipped; absolute paths, ``..``, control characters, over-long names,
    duplicate members, a name that is both a file and a folder, encryption and unknown
    compression methods refuse the archive. Returns the names skipped (links).

    Raises:
        SubmissionError: not a zip, too many members, too large in total, a suspicious
            compression ratio, an unsafe member, or a member that cannot be read (bad
            CRC, truncated data): always one line naming the archive.
    """
    try:
        zf = zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError, RuntimeError) as exc:
        raise SubmissionError(f"{archive.name}: not a readable zip archive ({exc})") from None
    skipped: list[str] = []
    with zf:
        infos = zf.infolist()
        if len(infos) > MAX_ZIP_MEMBERS:
            raise SubmissionError(f"{archive.name}: more than {MAX_ZIP_MEMBERS} members")
        total = sum(i.file_size for i in infos)
        packed = sum(i.compress_size for i in infos)
        if total > MAX_ZIP_BYTES:
            raise SubmissionError(f"{archive.name}: {total} bytes uncompressed, more than {MAX_ZIP_BYTES}")
        if packed and total / packed > MAX_ZIP_RATIO and total > 10 * 1024 * 1024:
            raise SubmissionError(f"{archive.name}: compression ratio {total / packed:.0f}:1 is suspicious")
        _check_members(archive, infos)
        for info in infos:
            name = info.filename.replace("\\", "/")
            pure = PurePosixPath(name)
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode):
                skipped.append(name)
                continue
            if not pure.parts:
                continue
            target = dest / pure
            try:
                if info.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                written = 0
                with zf.open(info) as src, open(target, "wb") as out:
                    while chunk := src.read(1 << 16):
                        written += len(chunk)
                        if written > info.file_size or written > MAX_ZIP_BYTES:
                            raise SubmissionError(f"{archive.name}: member {name!r} is larger than it says")
                        out.write(chunk)
            except SubmissionError:
                raise
            except (OSError, EOFError, RuntimeError, NotImplementedError, ValueError, zipfile.BadZipFile,
                    zlib.error, lzma.LZMAError) as exc:
                raise SubmissionError(f"{archive.name}: member {name[:80]!r} cannot be read "
                                      f"({type(exc).__name__}: {str(exc)[:120]})") from None
    return skipped


def copy_tree(src: Path, dest: Path) -> None:
    """Copy a submission folder (regular files only, bounded like :func:`list_files`)."""
    for rel in list_files(src):
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src / rel, target)


def unpack(submission: Path, dest: Path) -> None:
    """Put a submission (a folder or a ``.zip``) into the empty folder ``dest``.

    A folder holding nothing but one zip archive (an upload of the zip itself) is
    unpacked too.

    Raises:
        SubmissionError: see :func:`extract_zip`; a path that is neither; anything else
            that goes wrong while reading it (one line, never a traceback).
    """
    try:
        _unpack(submission, dest)
    except SubmissionError:
        raise
    except (OSError, ValueError, RuntimeError, EOFError, NotImplementedError, zipfile.BadZipFile, zlib.error,
            lzma.LZMAError, RecursionError, MemoryError) as exc:
        raise SubmissionError(f"{submission.name}: cannot be read ({type(exc).__name__}: {str(exc)[:160]})") from None


def _unpack(submission: Path, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    if submission.is_file() and submission.suffix.lower() == ".zip":
        extract_zip(submission, dest)
    elif submission.is_dir():
        copy_tree(submission, dest)
    else:
        raise SubmissionError(f"{submission}: expected a folder or a .zip file")
    files = list_files(dest)
    if len(files) == 1 and files[0].suffix.lower() == ".zip":
        inner = dest / files[0]
        tmp = dest.parent / (dest.name + "-inner")
        extract_zip(inner, tmp)
        inner.unlink()
        for rel in list_files(tmp):
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(tmp / rel), dest / rel)
        shutil.rmtree(tmp)
