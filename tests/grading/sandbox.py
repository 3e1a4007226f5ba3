"""Where learner code runs: who it runs as, with what limits, and how every one of its
processes is ended.

Used by the grader (:mod:`grading.runner`, the import check of the learner's files) and by
the trusted pytest process (:mod:`grading.proxy`, the worker that runs the learner's
functions). Both start :mod:`grading.worker` through :func:`spawn`:

- as root (Gradescope, or an instructor's batch run with sudo), learner code runs as an
  unprivileged uid that belongs to this grading alone: the dedicated ``course-learner``
  that setup.sh creates when no other grading on the machine holds it (a lock file in
  :data:`LOCK_DIR`, held while this process lives), else a transient numeric uid with no
  account (:data:`TRANSIENT_UID_BASE` plus this process's pid). So every process of that
  uid is this grading's, its clean-up (``kill(-1)`` as that uid) and its process limit
  (``RLIMIT_NPROC``, counted per uid) reach no other grading, however many run at once.
  A user that cannot run the interpreter is refused: learner code never runs as root
  unless ``--run-as none`` says so;
- not as root (an instructor's laptop), it runs as the grader's own user: isolation is
  partial, and the results say so;
- either way, where the kernel allows: new PID and network namespaces (no network; when
  the namespace's first process dies, the kernel kills every process left in it), and
  always resource limits (address space, file size, open files, processes, CPU time).

:func:`end` stops one spawned worker and everything it started: the worker's session, its
namespace, every process of the transient or dedicated uid (``kill(-1)`` from a helper
switched to that uid, repeated until none is left: one kernel operation over all of them,
so a process forking in a loop cannot slip through), and, in a process that called
:func:`become_subreaper`, every child that was reparented to it (double-forked ones).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import fcntl
import json
import os
import pwd
import shutil
import signal
import stat
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from grading import wire

DEDICATED_USER = "course-learner"
"""The unprivileged user setup.sh creates on Gradescope."""
TRANSIENT_UID_BASE = 1_900_000_000
"""Transient uids are this plus the grader's pid (no account; unique while the grader runs)."""
LOCK_DIR = "/run/course-grading"
"""Where a grading running as root locks the named user it runs learner code as (one file
per user, ``flock``-ed for the grader's lifetime). A folder only root can write: when it
cannot be made, or is not root's alone, no named user is locked and the grading takes a
transient uid instead (always its own)."""
_HELD_LOCKS: dict[str, int] = {}
"""User name -> the open lock file held by this process (released when it exits)."""
WORKER_FILE = "_grading_worker.py"
"""The name of grading/worker.py in the learner's tree."""
PR_SET_CHILD_SUBREAPER = 36
DEFAULT_LIMITS = {
    "as": 2 * 1024 ** 3,          # address space (bytes): the labs need about 0.2 GiB
    "fsize": 64 * 1024 ** 2,      # largest file written (bytes)
    "nofile": 256,                # open files
    "core": 0,                    # no core dumps
    "cpu": 900,                   # CPU seconds of one worker (the grader's deadlines come first)
}
NPROC_LIMIT = 64
"""Most processes of the learner's uid (RLIMIT_NPROC), set only for a uid of its own."""


@dataclass(frozen=True)
class Isolation:
    """Who learner code runs as.

    Attributes:
        mode: ``"user"`` (an unprivileged uid; the grader is root), ``"same-user"`` (the
            grader is not root), ``"root"`` (``--run-as none`` as root), ``"refused"``.
        uid, gid: the ids learner code runs as (None: the grader's own).
        user: a name for messages (``course-learner``, ``uid 1900012345``).
        own_uid: every process of ``uid`` is the learner's (dedicated or transient), so
            all of them may be killed.
        note: for instructors (the grader's notes).
        partial: a line for the results saying that isolation is partial, or "".
        refused: why no learner code may run (mode ``"refused"``), or "".
    """

    mode: str
    uid: int | None = None
    gid: int | None = None
    user: str = ""
    own_uid: bool = False
    note: str = ""
    partial: str = ""
    refused: str = ""


def choose_isolation(run_as: str) -> Isolation:
    """Resolve ``--run-as`` (``auto``, ``none``, a user name, or ``uid:N``).

    ``auto``: as root, ``course-learner`` if it exists and no other grading on this machine
    holds it (:func:`lock_user`), else a transient uid of this process's own; not root, the
    grader's own user (partial isolation). A named user or ``uid:N`` is locked the same way,
    waiting for another grading that holds it to end (gradings with one named user take
    turns). Whether the chosen user can run the interpreter is checked later
    (:func:`interpreter_problem` and the runner's self-test).
    """
    if os.geteuid() != 0:
        if run_as not in ("auto", "none"):
            return Isolation("refused", refused=f"--run-as {run_as}: switching users needs root")
        return Isolation("same-user", user=_name(os.geteuid()),
                         note=f"learner code ran as the grader's own user {_name(os.geteuid())} (not root)",
                         partial="Note: the grader did not run as root, so your code ran as the grader's own "
                                 "user (partial isolation).")
    if run_as == "none":
        return Isolation("root", user="root", note="learner code ran as root (--run-as none: no isolation)",
                         partial="Note: your code ran as root (the grader was told not to switch users).")
    if run_as.startswith("uid:"):
        try:
            uid = int(run_as[4:])
        except ValueError:
            return Isolation("refused", refused=f"--run-as {run_as}: expected uid:NUMBER")
        if uid <= 0:
            return Isolation("refused", refused=f"--run-as {run_as}: not an unprivileged uid")
        if not lock_user(f"uid-{uid}", wait=True):
            return Isolation("refused", refused=f"--run-as {run_as}: cannot lock {LOCK_DIR}/uid-{uid}.lock "
                                                "(a folder only root may write)")
        kill_uid(uid, uid)
        return Isolation("user", uid, uid, f"uid {uid}", own_uid=True,
                         note=f"learner code ran as uid {uid} (no account)")
    name = DEDICATED_USER if run_as == "auto" else run_as
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        if run_as != "auto":
            return Isolation("refused", refused=f"--run-as {run_as}: no such user")
        return _transient(f"{DEDICATED_USER} does not exist here")
    if entry.pw_uid == 0:
        return Isolation("refused", refused=f"--run-as {name}: that is root")
    if not lock_user(name, wait=run_as != "auto"):
        if run_as == "auto":
            return _transient(f"{DEDICATED_USER} is held by another grading on this machine, or {LOCK_DIR} "
                              "cannot be locked")
        return Isolation("refused", refused=f"--run-as {run_as}: cannot lock {LOCK_DIR}/{name}.lock "
                                            "(a folder only root may write)")
    own = name == DEDICATED_USER
    if own:  # processes left by an earlier grading that died before its clean-up
        kill_uid(entry.pw_uid, entry.pw_gid)
    return Isolation("user", entry.pw_uid, entry.pw_gid, name, own_uid=own,
                     note=f"learner code ran as the unprivileged user {name} (uid {entry.pw_uid})")


def _transient(why: str) -> Isolation:
    uid = TRANSIENT_UID_BASE + os.getpid()
    kill_uid(uid, uid)
    return Isolation("user", uid, uid, f"uid {uid}", own_uid=True,
                     note=f"learner code ran as the transient uid {uid} (no account; {why})")


def lock_user(name: str, wait: bool = False) -> bool:
    """Hold ``LOCK_DIR/<name>.lock`` (``flock``, exclusive) until this process exits, so that
    no other grading on this machine runs learner code as ``name`` meanwhile. Root only.

    Returns False when another grading holds it (and ``wait`` is False), or when
    :data:`LOCK_DIR` cannot be made or is not a folder only root can write (a learner
    could otherwise have planted it).
    """
    if name in _HELD_LOCKS:
        return True
    folder = LOCK_DIR
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        info = os.lstat(folder)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
            return False
        fd = os.open(os.path.join(folder, f"{name}.lock"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o600)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except OSError:
        os.close(fd)
        return False
    _HELD_LOCKS[name] = fd
    return True


def release_user(name: str) -> None:
    """Give back a lock taken by :func:`lock_user` (tests; a grader keeps its lock until it exits)."""
    fd = _HELD_LOCKS.pop(name, None)
    if fd is not None:
        os.close(fd)


def _name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


@dataclass
class SandboxConfig:
    """How to start a learner process (JSON, passed from the grader to the trusted pytest).

    Attributes:
        tree: the learner's tree (the course's lab packages with the learner's files over
            them, and ``_grading_worker.py``); readable by the learner's user.
        python: interpreter for learner processes (readable by the learner's user).
        path: extra ``sys.path`` entries for learner processes (e.g. a site-packages folder).
        home, tmp: the learner's own writable folders.
        uid, gid: the user learner code runs as (None: the caller's).
        own_uid: every process of that uid may be killed (see :class:`Isolation`).
        namespaces: try new PID and network namespaces.
        limits: resource limits (see :data:`DEFAULT_LIMITS`).
    """

    tree: str
    python: str
    home: str
    tmp: str
    path: list[str] = field(default_factory=list)
    uid: int | None = None
    gid: int | None = None
    own_uid: bool = False
    namespaces: bool = True
    limits: dict = field(default_factory=lambda: dict(DEFAULT_LIMITS))

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "SandboxConfig":
        return cls(**data)


def make_config(iso: Isolation, tree: Path, scratch: Path, python: str, path: list[str] | None = None,
                namespaces: bool = True) -> SandboxConfig:
    """A :class:`SandboxConfig` for ``iso``, with the learner's home and temp folders made in
    ``scratch`` (owned by the learner's user, mode 0700)."""
    home, tmp = scratch / "home", scratch / "tmp"
    for folder in (home, tmp):
        folder.mkdir(parents=True, exist_ok=True)
        if iso.uid is not None:
            os.chown(folder, iso.uid, iso.gid)
        os.chmod(folder, 0o700)
    limits = dict(DEFAULT_LIMITS)
    if iso.own_uid:
        limits["nproc"] = NPROC_LIMIT
    return SandboxConfig(str(tree), python, str(home), str(tmp), list(path or []), iso.uid, iso.gid, iso.own_uid,
                         namespaces, limits)


def prepare_tree(tree: Path, iso: Isolation) -> None:
    """Make ``tree`` readable (not writable) by the learner's user and put the worker in it."""
    shutil.copyfile(Path(__file__).with_name("worker.py"), tree / WORKER_FILE)
    for dirpath, dirnames, filenames in os.walk(tree):
        os.chmod(dirpath, 0o755)
        for name in filenames:
            os.chmod(Path(dirpath) / name, 0o644)


# -- starting and ending learner processes -------------------------------------------------
@dataclass
class Spawned:
    """A started worker: the boot process, the channel's two ends, what boot reported."""

    proc: subprocess.Popen
    to_worker: int
    from_worker: int
    boot: dict = field(default_factory=dict)
    config: SandboxConfig | None = None


def spawn(config: SandboxConfig, mode: str, extra: dict, deadline: float) -> Spawned:
    """Start :mod:`grading.worker` in ``mode`` (``serve`` or ``probe``) and read its boot frame.

    Raises:
        wire.ChannelTimeout, wire.ChannelClosed, wire.ChannelError: it did not start
            (the process is ended before raising).
    """
    to_r, to_w = os.pipe()
    from_r, from_w = os.pipe()
    cfg = {**config.to_json(), **extra, "mode": mode, "fd_in": to_r, "fd_out": from_w,
           "worker_file": str(Path(config.tree) / WORKER_FILE)}
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
    try:
        proc = subprocess.Popen([config.python, "-I", "-B", str(Path(__file__).with_name("worker.py")), "boot",
                                 json.dumps(cfg)], pass_fds=(to_r, from_w), start_new_session=True,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                cwd="/", env=env)
    finally:
        os.close(to_r)
        os.close(from_w)
    os.set_blocking(to_w, False)
    spawned = Spawned(proc, to_w, from_r, config=config)
    try:
        message = wire.read_json(from_r, deadline)
        if not isinstance(message.get("boot"), dict):
            raise wire.ChannelError("the worker did not start")
        spawned.boot = message["boot"]
    except BaseException:
        end(spawned)
        raise
    return spawned


def end(spawned: Spawned | None, reaper: bool = False) -> None:
    """Stop a spawned worker and every process it started (see the module docstring).

    Args:
        reaper: this process called :func:`become_subreaper` and has no other children
            than learner processes: kill every child left.
    """
    if spawned is None:
        return
    for fd in (spawned.to_worker, spawned.from_worker):
        try:
            os.close(fd)
        except OSError:
            pass
    try:
        os.killpg(spawned.proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    spawned.proc.kill()
    try:
        spawned.proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
    config = spawned.config
    if config is not None and config.uid is not None and config.own_uid:
        kill_uid(config.uid, config.gid)
    if reaper:
        kill_children()


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux PR_SET_CHILD_SUBREAPER),
    so that double-forked learner processes stay its children and :func:`kill_children`
    finds them. Returns whether that worked."""
    if sys.platform != "linux":
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _children() -> list[int]:
    out: list[int] = []
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return out
    for task in tasks:
        try:
            with open(f"/proc/self/task/{task}/children") as f:
                out += [int(p) for p in f.read().split()]
        except (OSError, ValueError):
            continue
    return out


def kill_children(timeout: float = 10.0) -> int:
    """SIGKILL every child of this process, reap it, and repeat until none is left (orphans
    keep arriving while their parents die). Returns how many processes were signalled."""
    killed: set[int] = set()
    end_at = time.monotonic() + timeout
    quiet = 0
    while time.monotonic() < end_at:
        pids = _children()
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            except ProcessLookupError:
                pass
        while True:  # reap what has died
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                pid = 0
            if pid == 0:
                break
        if not pids and not _children():
            quiet += 1
            if quiet >= 3:
                break
            time.sleep(0.01)
        else:
            quiet = 0
    return len(killed)


def kill_uid(uid: int, gid: int | None) -> None:
    """SIGKILL every process of ``uid`` (root only): a helper switched to ``uid`` calls
    ``kill(-1, SIGKILL)`` until the kernel finds no process left to signal."""
    if os.geteuid() != 0 or uid == 0:
        return
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setresgid(gid if gid is not None else uid, gid if gid is not None else uid,
                         gid if gid is not None else uid)
            os.setresuid(uid, uid, uid)
            for _ in range(10_000):
                try:
                    os.kill(-1, signal.SIGKILL)
                except ProcessLookupError:
                    break
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def interpreter_problem(iso: Isolation, python: str, path: list[str] | None = None) -> str | None:
    """Why the learner's user cannot run ``python`` (with the extra ``sys.path`` entries
    ``path``), or None. Checked as that user (a child that switches to it, root only)
    before any learner process starts, so that an interpreter under ``/root`` is named as
    the cause instead of showing up as a failed import.

    Returns:
        ``"<path>: <reason> for <user>"`` for the first file or folder on the way that the
        user cannot search, read or execute, or None.
    """
    if iso.uid is None or os.geteuid() != 0:
        return None
    read_r, read_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: become the learner's user, look, report one line
        try:
            os.close(read_r)
            os.setgroups([])
            os.setresgid(iso.gid, iso.gid, iso.gid)
            os.setresuid(iso.uid, iso.uid, iso.uid)
            os.write(read_w, (_first_unreachable([(python, os.X_OK)] + [(p, os.R_OK | os.X_OK)
                                                                        for p in path or []]) or "").encode())
        finally:
            os._exit(0)
    os.close(read_w)
    with os.fdopen(read_r, "rb") as f:
        found = f.read(4096).decode("utf-8", "replace")
    os.waitpid(pid, 0)
    return f"{found} for {iso.user}" if found else None


def _first_unreachable(items: list[tuple[str, int]]) -> str | None:
    """The first of ``(path, mode)`` that this process cannot reach: a folder on the way
    that it cannot search, or the path itself lacking ``mode`` (resolving symbolic links)."""
    for path, mode in items:
        full = os.path.abspath(path)
        parts = full.split("/")
        for k in range(2, len(parts)):
            folder = "/".join(parts[:k]) or "/"
            if os.path.isdir(folder) and not os.access(folder, os.X_OK):
                return f"{path}: the folder {folder} cannot be searched"
        if not os.path.exists(full):
            return f"{path}: does not exist or cannot be reached"
        real = os.path.realpath(full)
        if real != full:
            deeper = _first_unreachable([(real, mode)])
            if deeper:
                return f"{path} -> {deeper}"
        if not os.access(full, mode):
            return f"{path}: not {'executable' if mode == os.X_OK else 'readable'}"
    return None


# -- probing the learner's files -----------------------------------------------------------
@dataclass
class ProbeResult:
    """What one import check reported: per file ``"ok"`` or ``(blame, line, error)``."""

    records: list[dict]
    started: str | None = None
    finished: set[str] = field(default_factory=set)
    error: str = ""
    boot: dict = field(default_factory=dict)


def probe(config: SandboxConfig, files: list[str], timeout: float, reaper: bool = False) -> ProbeResult:
    """Import ``files`` (paths in the tree) one by one in a learner process."""
    result = ProbeResult([])
    deadline = time.monotonic() + timeout
    spawned = None
    try:
        spawned = spawn(config, "probe", {"files": files}, deadline)
        result.boot = spawned.boot
        while True:
            message = wire.read_json(spawned.from_worker, deadline)
            if message.get("done") is True:
                break
            if isinstance(message.get("start"), str):
                result.started = message["start"]
            for key in ("ok", "fail"):
                if isinstance(message.get(key), str):
                    result.finished.add(message[key])
            result.records.append(message)
    except wire.ChannelTimeout:
        result.error = f"did not finish importing within {timeout:g} s"
    except wire.ChannelClosed:
        result.error = "stopped the interpreter while importing"
    except wire.ChannelError as exc:
        result.error = str(exc)
    finally:
        end(spawned, reaper)
    return result
