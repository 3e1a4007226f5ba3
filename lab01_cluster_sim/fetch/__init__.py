"""Download the Alibaba GPU trace (2023) from its upstream and check it against shipped SHA-256 sums.

The trace ("openb", the data of Weng et al., "Beware of Fragmentation", USENIX ATC'23) lives
in the GitHub repository ``alibaba/clusterdata``, folder ``cluster-trace-gpu-v2023/csv``:
26 CSV files, about 13 MB. Its terms allow research and study use but it has no licence
file, so the course does not ship it; this module fetches it into a folder of the user's
and verifies every file against the SHA-256 sums the package ships
(``alibaba-gpu-2023.sha256`` beside this module, in ``sha256sum`` format, taken from the
course's verified copy).

The default source pins the upstream commit the sums were taken at, so the bytes never
change under the sums::

    https://raw.githubusercontent.com/alibaba/clusterdata/<commit>/cluster-trace-gpu-v2023/csv/<file>

Behaviour of :func:`fetch_trace`:

- a file already in the folder with the right sum is kept and not downloaded again;
- a download goes to ``<file>.part`` and becomes ``<file>`` only once its sum matches; an
  interrupted download resumes from its ``.part`` with an HTTP ``Range`` request (a server
  that ignores ``Range`` answers 200 and the file starts again);
- a file already there with a wrong sum is downloaded again and replaced once the new one
  is verified;
- a download whose sum does not match is deleted (with any stale file of that name) and the
  run stops with one line naming the file, the expected and the actual sum
  (:class:`ChecksumMismatch`); nothing unverified is left under a trace file's name;
- every input is bounded: at most :data:`MAX_FILE_BYTES` per file (a server that sends more
  is cut off), a sums file of at most :data:`MAX_SUMS_BYTES` and :data:`MAX_FILES` entries,
  file names of plain characters only (no folders, no ``..``), a timeout per request and a
  deadline per file (:func:`file_deadline_s`: 60 s plus 10 kB/s of its size), so a server
  that trickles bytes cannot hold a file for hours;
- nothing is written through a link: a ``.part`` or trace file that is a symbolic link, a
  folder or anything but a regular file is refused (one line, nothing followed or deleted
  behind it), and the ``.part`` is opened with ``O_NOFOLLOW``;
- a malformed ``--base-url`` (bad port, bad IPv6 literal, spaces or control characters, a
  ``user:password@`` part) is one line, not a traceback.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import re
import stat
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Protocol

from lab01_cluster_sim.errors import InputError

UPSTREAM_REPOSITORY = "alibaba/clusterdata"
"""The GitHub repository the trace comes from."""

UPSTREAM_FOLDER = "cluster-trace-gpu-v2023/csv"
"""The trace's folder in :data:`UPSTREAM_REPOSITORY`."""

UPSTREAM_COMMIT = "7a6c496e4f4b6ce6150be8f881cb051bf2abff42"
"""The upstream commit whose files the shipped sums describe (the CSVs last changed upstream
in 50a91c7c, 2023-06-05, "upload GPU trace data released by ATC'23 FGD paper")."""

DEFAULT_BASE_URL = f"https://raw.githubusercontent.com/{UPSTREAM_REPOSITORY}/{UPSTREAM_COMMIT}/{UPSTREAM_FOLDER}"
"""Where the files are downloaded from by default: ``<DEFAULT_BASE_URL>/<file name>``."""

SUMS_RESOURCE = "alibaba-gpu-2023.sha256"
"""The shipped sums, a package resource of this module."""

MAX_FILE_BYTES = 32 * 1024 * 1024
"""Most bytes accepted for one file (the largest trace file is 710,698 bytes)."""

MAX_SUMS_BYTES = 1024 * 1024
"""Largest sums file read."""

MAX_FILES = 1000
"""Most entries in a sums file."""

TIMEOUT_S = 30.0
"""Default timeout of one HTTP request (connect and each read), s."""

CHUNK_BYTES = 64 * 1024

DEADLINE_BASE_S = 60.0
"""Fixed part of the deadline of one file's download, s."""

MIN_RATE_BYTES_PER_S = 10_000
"""Slowest average rate accepted over a whole file (10 kB/s: the 710,698-byte largest trace
file then gets 60 + 71 = 131 s)."""


def file_deadline_s(size: int | None, max_bytes: int = MAX_FILE_BYTES) -> float:
    """Seconds one file's download may take in all: :data:`DEADLINE_BASE_S` plus its size
    (``max_bytes`` when the server does not say) at :data:`MIN_RATE_BYTES_PER_S`.

    >>> file_deadline_s(1_000)
    60.1
    """
    return DEADLINE_BASE_S + (max_bytes if size is None else size) / MIN_RATE_BYTES_PER_S

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
_LINE = re.compile(r"([0-9a-fA-F]{64}) [ *](.+)")


class ChecksumMismatch(InputError):
    """A downloaded file's SHA-256 is not the expected one (the file was deleted).

    Attributes:
        name: the file name; expected, actual: hex digests; url: where it came from.
    """

    def __init__(self, name: str, expected: str, actual: str, url: str) -> None:
        self.name, self.expected, self.actual, self.url = name, expected, actual, url
        super().__init__(f"{name}: SHA-256 mismatch, expected {expected}, got {actual} (downloaded from {url}); "
                         "the file was deleted, not kept")


@dataclass(frozen=True)
class FetchedFile:
    """What :func:`fetch_trace` did with one file.

    Attributes:
        name: the file name; path: where it is now.
        status: ``"present"`` (already there with the right sum, not downloaded),
            ``"downloaded"`` or ``"resumed"`` (a ``.part`` was continued).
        size: bytes of the file; downloaded: bytes transferred this time.
        sha256: its verified hex digest.
    """

    name: str
    path: Path
    status: str
    size: int
    downloaded: int
    sha256: str


class Progress(Protocol):
    """Receives progress from :func:`fetch_trace` (e.g. a terminal bar)."""

    def start(self, name: str, total: int | None, already: int) -> None:
        """A download of ``name`` begins: ``total`` bytes if the server said, ``already`` resumed."""

    def advance(self, nbytes: int) -> None:
        """``nbytes`` more bytes of the current file arrived."""

    def done(self, result: FetchedFile) -> None:
        """One file is finished (downloaded and verified, or found present)."""


def parse_sums(text: str, source: str) -> dict[str, str]:
    """Parse ``sha256sum`` output: lines ``<64 hex digits>  <path>``; the file name is the
    path's last part (``csv/openb_pod_list_default.csv`` -> ``openb_pod_list_default.csv``).
    Blank lines and lines starting with ``#`` are skipped.

    Returns:
        file name -> lower-case hex digest, in the order of the file.

    Raises:
        InputError: ``source:line: ...`` for a malformed line, a name that is not a plain
            file name (letters, digits, ``.``, ``_``, ``-``; no folder, no ``..``), a name
            listed twice; more than :data:`MAX_FILES` entries; no entry at all.
    """
    sums: dict[str, str] = {}
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _LINE.fullmatch(line)
        if m is None:
            raise InputError(f"{source}:{no}: expected '<64 hex digits>  <file name>' (sha256sum format), "
                             f"got {raw[:80]!r}")
        name = m.group(2).strip().rpartition("/")[2]
        if not _NAME.fullmatch(name) or ".." in name:
            raise InputError(f"{source}:{no}: file name {name[:80]!r}: expected a plain file name "
                             "(letters, digits, '.', '_', '-')")
        if name in sums:
            raise InputError(f"{source}:{no}: {name} is listed twice")
        if len(sums) >= MAX_FILES:
            raise InputError(f"{source}: more than {MAX_FILES} files listed")
        sums[name] = m.group(1).lower()
    if not sums:
        raise InputError(f"{source}: no '<sha256>  <file>' lines")
    return sums


def read_sums(path: str | os.PathLike) -> dict[str, str]:
    """:func:`parse_sums` of a file, read with a size bound.

    Raises:
        InputError: unreadable, larger than :data:`MAX_SUMS_BYTES`, not UTF-8, or malformed.
    """
    p = Path(path)
    try:
        with p.open("rb") as fh:
            data = fh.read(MAX_SUMS_BYTES + 1)
    except OSError as exc:
        raise InputError(f"{p}: cannot read the sums file: {exc.strerror or exc}") from None
    if len(data) > MAX_SUMS_BYTES:
        raise InputError(f"{p}: larger than {MAX_SUMS_BYTES:,} bytes; expected a sha256sum list")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{p}: not UTF-8 text; expected a sha256sum list") from None
    return parse_sums(text, str(p))


def shipped_sums() -> dict[str, str]:
    """The SHA-256 sums of the 26 trace files that the package ships (file name -> digest)."""
    text = resources.files(__name__).joinpath(SUMS_RESOURCE).read_text(encoding="utf-8")
    return parse_sums(text, SUMS_RESOURCE)


def sha256_of(path: Path, limit: int = MAX_FILE_BYTES) -> str | None:
    """Hex SHA-256 of a file, or None when it is larger than ``limit`` bytes (then it cannot
    be a trace file and is downloaded again)."""
    h = hashlib.sha256()
    size = 0
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK_BYTES):
            size += len(chunk)
            if size > limit:
                return None
            h.update(chunk)
    return h.hexdigest()


def check_base_url(base_url: str) -> str:
    """The base URL without a trailing ``/``.

    Raises:
        InputError: not an ``http://`` or ``https://`` URL with a host; a port that is not
            a number from 1 to 65535, a malformed IPv6 literal, whitespace or control
            characters, or a ``user:password@`` part (credentials are not sent, nor echoed).
    """
    def bad(what: str, shown: str = base_url) -> InputError:
        return InputError(f"--base-url {shown[:200]!r}: {what + '; ' if what else ''}expected an http:// or "
                          "https:// URL of the folder holding the files")

    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in base_url):
        raise bad("contains a space or control character (quote spaces as %20)")
    try:
        parts = urllib.parse.urlsplit(base_url)
        port = parts.port
    except ValueError as exc:
        raise bad(f"malformed ({exc})") from None
    if parts.username is not None or parts.password is not None:
        hidden = parts._replace(netloc="***@" + parts.netloc.rpartition("@")[2]).geturl()
        raise bad("has a user:password@ part, which is not supported", hidden)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise bad("")
    if port == 0:
        raise bad("port 0")
    return base_url.rstrip("/")


def fetch_trace(dest: str | os.PathLike, base_url: str = DEFAULT_BASE_URL, sums: Mapping[str, str] | None = None,
                files: Iterable[str] | None = None, progress: Progress | None = None, *,
                max_bytes: int = MAX_FILE_BYTES, timeout: float = TIMEOUT_S,
                opener: Callable[..., object] = urllib.request.urlopen,
                clock: Callable[[], float] = time.monotonic) -> list[FetchedFile]:
    """Download the trace files into ``dest`` and verify them (see the module docstring).

    Args:
        dest: the folder to fill (created, with its parents, when missing; the folders it
            created are removed again when the fetch fails and leaves them empty).
        base_url: the folder URL; each file is ``<base_url>/<name>``.
        sums: file name -> expected hex SHA-256 (default: :func:`shipped_sums`).
        files: names to fetch, a subset of ``sums`` (default: all, in the order of ``sums``).
        progress: optional :class:`Progress`.
        max_bytes: most bytes accepted for one file.
        timeout: seconds per HTTP request.
        opener: ``urllib.request.urlopen`` or a stand-in with its signature.
        clock: seconds, monotonic (for the per-file deadline, :func:`file_deadline_s`).

    Returns:
        One :class:`FetchedFile` per file, in order.

    Raises:
        ChecksumMismatch: a downloaded file's sum is wrong (it is deleted; files fetched
            before it stay, verified).
        InputError: a bad base URL, an unknown file name, ``dest`` not a folder, an HTTP
            error, an unreachable server, a file larger than ``max_bytes`` or shorter than
            the server announced, a download past its deadline, a ``.part`` or trace file
            that is a link, folder or device; each one line naming the file or URL.
    """
    base = check_base_url(base_url)
    sums = dict(shipped_sums() if sums is None else sums)
    names = list(sums) if files is None else list(dict.fromkeys(files))
    unknown = [n for n in names if n not in sums]
    if unknown:
        example = next(iter(sums))
        raise InputError(f"--files {unknown[0]!r}: not one of the {len(sums)} files of the sums list "
                         f"(e.g. {example})")
    folder = Path(dest)
    if folder.exists() and not folder.is_dir():
        raise InputError(f"{folder}: exists and is not a folder; expected a folder for the trace files")
    created = [p for p in (folder, *folder.parents) if not p.exists()]   # deepest first
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{folder}: cannot create the folder: {exc.strerror or exc}") from None
    out = []
    try:
        for name in names:
            out.append(_fetch_one(folder, name, sums[name], f"{base}/{urllib.parse.quote(name)}", progress,
                                  max_bytes, timeout, opener, clock))
    except BaseException:
        for path in created:   # only folders this call made, and only while empty
            try:
                path.rmdir()
            except OSError:     # not empty: a verified file or a .part to resume from stays
                break
        raise
    return out


def _kind(path: Path) -> str | None:
    """None when ``path`` is missing or a regular file (not a link); else what it is."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})"
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a regular file (a device, FIFO or socket)"


def _fetch_one(folder: Path, name: str, expected: str, url: str, progress: Progress | None, max_bytes: int,
               timeout: float, opener, clock: Callable[[], float] = time.monotonic) -> FetchedFile:
    final = folder / name
    part = folder / (name + ".part")
    for path in (final, part):
        kind = _kind(path)
        if kind is not None:
            raise InputError(f"{path}: is {kind}; expected a regular file or nothing there (remove it and run "
                             "again; nothing was written through it)")
    if final.is_file() and sha256_of(final, max_bytes) == expected:
        result = FetchedFile(name, final, "present", final.stat().st_size, 0, expected)
        if progress is not None:
            progress.done(result)
        return result
    stale = final.is_file()   # present, but its SHA-256 does not match: say so if fetching it again fails
    try:
        return _download(final, part, name, expected, url, progress, max_bytes, timeout, opener, clock)
    except InputError as exc:
        if not stale:
            raise
        raise InputError(f"{exc} (the local {final} failed its SHA-256 check, expected {expected}, which is why it "
                         "was fetched again; it is left as it was: do not use it)") from None


def _download(final: Path, part: Path, name: str, expected: str, url: str, progress: Progress | None,
              max_bytes: int, timeout: float, opener, clock: Callable[[], float]) -> FetchedFile:
    already = part.stat().st_size if part.is_file() else 0
    if already > max_bytes:
        part.unlink()
        already = 0
    h = hashlib.sha256()
    headers = {"User-Agent": "lab01_cluster_sim fetch-trace"}
    if already:
        headers["Range"] = f"bytes={already}-"
    started = clock()
    try:
        request = urllib.request.Request(url, headers=headers)
        response = opener(request, timeout=timeout)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and already:  # the .part is already complete (or longer than the file)
            return _finish(part, final, name, expected, url, _hash_file(part, h), already, 0, "resumed", progress)
        raise InputError(f"{url}: HTTP {exc.code} {exc.reason}; expected the file {name}") from None
    except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise InputError(f"{url}: cannot download {name}: {reason}") from None
    with response:
        status = getattr(response, "status", 200)
        resumed = already > 0 and status == 206
        if resumed:
            _hash_file(part, h)
        else:
            already = 0
        length = response.headers.get("Content-Length")
        total = int(length) + already if length and length.isdigit() else None
        if total is not None and total > max_bytes:
            raise InputError(f"{url}: {name} would be {total:,} bytes; at most {max_bytes:,} are accepted")
        if progress is not None:
            progress.start(name, total, already)
        size = already
        deadline = file_deadline_s(None if total is None else total - already, max_bytes)
        # read1 returns what has arrived (at most one socket read, each bounded by the
        # timeout), so the deadline is checked at least once per timeout however slow the server
        read = getattr(response, "read1", None) or response.read
        flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if resumed else os.O_TRUNC) | getattr(os, "O_NOFOLLOW", 0)
        try:
            with os.fdopen(os.open(part, flags, 0o644), "wb") as fh:
                while chunk := read(CHUNK_BYTES):
                    size += len(chunk)
                    if size > max_bytes:
                        fh.close()
                        part.unlink()
                        raise InputError(f"{url}: {name} is larger than {max_bytes:,} bytes; refused and deleted")
                    fh.write(chunk)
                    h.update(chunk)
                    if progress is not None:
                        progress.advance(len(chunk))
                    if clock() - started > deadline:
                        raise InputError(f"{url}: download of {name} took over {deadline:,.0f} s (60 s plus 10 kB/s "
                                         f"of its size) and was stopped after {size:,} bytes; the server is too "
                                         "slow; run again to resume, or use another --base-url")
        except (OSError, http.client.HTTPException) as exc:  # (TimeoutError and socket errors are OSErrors)
            raise InputError(f"{url}: download of {name} broke off after {size:,} bytes ({exc}); run again to "
                             "resume") from None
        if total is not None and size < total:
            raise InputError(f"{url}: download of {name} broke off after {size:,} of {total:,} bytes; run again "
                             "to resume")
    return _finish(part, final, name, expected, url, h, size, size - already, "resumed" if resumed else "downloaded",
                   progress)


def _hash_file(path: Path, h) -> object:
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK_BYTES):
            h.update(chunk)
    return h


def _finish(part: Path, final: Path, name: str, expected: str, url: str, h, size: int, downloaded: int, status: str,
            progress: Progress | None) -> FetchedFile:
    actual = h.hexdigest()
    if actual != expected:
        part.unlink(missing_ok=True)
        final.unlink(missing_ok=True)  # a stale file of that name failed its check too: no unverified data stays
        raise ChecksumMismatch(name, expected, actual, url)
    try:
        os.replace(part, final)
    except OSError as exc:
        raise InputError(f"{final}: cannot put the verified download in place: {exc.strerror or exc}") from None
    result = FetchedFile(name, final, status, size, downloaded, actual)
    if progress is not None:
        progress.done(result)
    return result


def summary(results: Sequence[FetchedFile]) -> str:
    """One line: how many files, bytes, and what was done (for the command's output)."""
    total = sum(r.size for r in results)
    counts = {s: sum(1 for r in results if r.status == s) for s in ("downloaded", "resumed", "present")}
    done = ", ".join(f"{n} {s if s != 'present' else 'already present'}" for s, n in counts.items() if n)
    return f"{len(results)} files, {total:,} bytes ({done}); every SHA-256 matches"
