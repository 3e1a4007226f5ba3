"""The learner's side of the autograder: a process that runs the learner's functions, and only them.

The graded tests run in a trusted pytest process that imports the course's own code
(:mod:`grading.proxy`); each of the learner's functions there is a proxy that sends the
call to this worker and reads back its result as plain data. This file is the worker. It
uses the standard library only (numpy when a result holds arrays), because it is copied
on its own into the learner's tree (``_grading_worker.py``) and run there::

    python -I _grading_worker.py boot CONFIG       # started by the trusted side
    python -I _grading_worker.py serve CONFIG      # what ``boot`` execs, after the drop

``CONFIG`` is a JSON object (see :func:`boot`). Three stages:

1. ``boot`` (the trusted side's user, no learner code yet): new PID and network
   namespaces when asked and possible (``unshare``; with a user namespace when not root),
   then a fork;
2. the forked child is the namespace's init: it asks for SIGKILL when ``boot`` dies
   (``PR_SET_PDEATHSIG``), forks the worker and reaps orphans; when it exits, the kernel
   kills every process left in the namespace (double-forked, ``setsid``-ed, fork-hopping);
3. the worker: resource limits (``RLIMIT_AS`` and others), only the channel's descriptors
   kept, the unprivileged user's ids when ``boot`` is root (checked: it cannot get root
   back), on Linux ``no_new_privs`` and a seccomp filter that refuses new user namespaces
   and ``setns`` (:func:`restrict_privileges`: setuid programs and the kernel's namespace
   code are out of reach; a worker that cannot set them does not start), a minimal
   environment, and ``exec`` of a fresh interpreter in ``serve`` mode, which imports the
   learner's modules and answers calls.

``boot`` writes one frame before the fork, ``{"boot": {...}}``, saying which namespaces it
got: it is written before any learner code exists, so the trusted side can believe it.
Everything the worker writes afterwards is untrusted: the trusted side decodes it with
:func:`grading.wire.decode`, which accepts only plain data.

Wire format: frames ``b"GW" + kind (1 byte) + length (4 bytes, big endian) + payload``,
kind ``P`` (a pickle, trusted side to worker: calls ``("call", id, pickle of (module, name,
args, kwargs))`` and callback results) or ``J`` (JSON, worker to trusted side: the reply
and each callback request carry the call's ``id``; the trusted side ends a worker whose
frame names another). Values in ``J`` frames are encoded by :func:`encode`: JSON
scalars and lists as themselves, and one-key objects for the rest (``{"t": [...]}``
tuple, ``{"s": [...]}`` set, ``{"fs": [...]}`` frozenset, ``{"d": [[k, v], ...]}`` dict,
``{"a": {"dtype", "shape", "b64"}}`` numpy array, ``{"n": {"dtype", "b64"}}`` numpy
scalar (a ``numpy.str_``, a ``str`` by the contract, goes as its plain string), ``{"r": "module.Class", "f": {field: value}}`` a course record (dataclass) on the
allow-list, ``{"e": "module.Enum", "v": "NAME"}`` an enum member on it). An object of any
other type, a subclass of a builtin, or a record not on the list is refused here with a
message for the learner (and would be refused again on the trusted side).
"""

from __future__ import annotations

import io
import json
import os
import pickle
import struct
import sys

MAGIC = b"GW"
HEADER = struct.Struct(">2scI")
MAX_FRAME = 32 * 1024 * 1024
"""Largest frame either side accepts (bytes)."""
MAX_TEXT = 2000
"""Characters kept of an exception's message and of the captured output of one call."""
MAX_TRACE = 4000
MAX_DEPTH = 64
MAX_NODES = 1_000_000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
PR_SET_PDEATHSIG = 1
NUMPY_KINDS = "biuf"
"""numpy dtype kinds a result may hold: bool, signed and unsigned integers, floats."""


# -- frames ---------------------------------------------------------------------------------
def write_frame(fd: int, kind: bytes, payload: bytes) -> None:
    """Write one frame (blocking)."""
    data = HEADER.pack(MAGIC, kind, len(payload)) + payload
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _read_exact(fd: int, n: int) -> bytes:
    chunks = []
    while n:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            raise EOFError("the channel closed")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int) -> tuple[bytes, bytes]:
    """Read one frame (blocking): (kind, payload)."""
    magic, kind, length = HEADER.unpack(_read_exact(fd, HEADER.size))
    if magic != MAGIC or length > MAX_FRAME:
        raise EOFError("not a frame")
    return kind, _read_exact(fd, length)


def send_json(fd: int, obj: dict) -> None:
    """Write a ``J`` frame."""
    write_frame(fd, b"J", json.dumps(obj, allow_nan=True, separators=(",", ":")).encode())


# -- encoding results (learner side) ---------------------------------------------------------
class RefusedValue(TypeError):
    """A value the grader does not accept back from learner code (the message says why)."""


def _type_name(value: object) -> str:
    t = type(value)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def encode(value: object, records: frozenset[str] = frozenset(), _depth: int = 0, _count: list | None = None):
    """``value`` as plain JSON data (see the module docstring).

    Raises:
        RefusedValue: a type not accepted (named in the message), too deep, too large.
    """
    count = _count if _count is not None else [0]
    count[0] += 1
    if count[0] > MAX_NODES or _depth > MAX_DEPTH:
        raise RefusedValue(f"a value too large or too deeply nested (more than {MAX_NODES} items "
                           f"or {MAX_DEPTH} levels)")
    t = type(value)
    if value is None or t is bool or t is str:
        return value
    if t is int:
        return value
    if t is float:
        return value
    if t is list:
        return [encode(v, records, _depth + 1, count) for v in value]
    if t is tuple:
        return {"t": [encode(v, records, _depth + 1, count) for v in value]}
    if t is set or t is frozenset:
        return {"s" if t is set else "fs": [encode(v, records, _depth + 1, count) for v in value]}
    if t is dict:
        return {"d": [[encode(k, records, _depth + 1, count), encode(v, records, _depth + 1, count)]
                      for k, v in value.items()]}
    module = getattr(t, "__module__", "")
    if module == "numpy" or module.startswith("numpy."):
        return _encode_numpy(value)
    name = f"{module}.{t.__qualname__}"
    if name in records:
        import dataclasses
        import enum

        if isinstance(value, enum.Enum):
            return {"e": name, "v": value.name}
        if dataclasses.is_dataclass(t):
            return {"r": name, "f": {f.name: encode(getattr(value, f.name), records, _depth + 1, count)
                                     for f in dataclasses.fields(t) if f.init}}
    for base in (bool, int, float, str, list, tuple, set, frozenset, dict):
        if isinstance(value, base):
            raise RefusedValue(f"a {_type_name(value)} object, a subclass of {base.__name__}: return a plain "
                               f"{base.__name__}")
    raise RefusedValue(f"a {_type_name(value)} object, which the grader does not take back (it takes numbers, "
                       "strings, booleans, None, lists, tuples, dicts, sets, numpy arrays of numbers and the "
                       "course's own records)")


def _encode_numpy(value):
    import base64

    import numpy as np

    if type(value) is np.ndarray:
        if value.dtype.kind not in NUMPY_KINDS or value.dtype.hasobject:
            raise RefusedValue(f"a numpy array of dtype {value.dtype}, which the grader does not take back "
                               "(numbers or booleans only)")
        data = np.ascontiguousarray(value)
        return {"a": {"dtype": data.dtype.str, "shape": list(data.shape),
                      "b64": base64.b64encode(data.tobytes()).decode()}}
    if type(value) is np.str_:  # a str by the contract (numpy-style code returns it): its plain value
        return str(value)
    if isinstance(value, np.generic) and type(value).__module__ == "numpy":
        if value.dtype.kind not in NUMPY_KINDS:
            raise RefusedValue(f"a numpy scalar of dtype {value.dtype}, which the grader does not take back")
        return {"n": {"dtype": value.dtype.str, "b64": base64.b64encode(value.tobytes()).decode()}}
    raise RefusedValue(f"a {_type_name(value)} object, which the grader does not take back")


# -- the worker -------------------------------------------------------------------------------
class _Callback:
    """A callable argument of the trusted side (a test's function): calling it asks the
    trusted side to run it there, with arguments encoded like results."""

    def __init__(self, worker: "Worker", key: int) -> None:
        self._worker, self._key = worker, key

    def __call__(self, *args, **kwargs):
        return self._worker.callback(self._key, args, kwargs)


class _ArgUnpickler(pickle.Unpickler):
    def __init__(self, data: bytes, worker: "Worker") -> None:
        super().__init__(io.BytesIO(data))
        self._worker = worker

    def persistent_load(self, pid):
        return _Callback(self._worker, int(pid))


class CallbackError(Exception):
    """A callable argument (the test's own function) raised on the grader's side."""


class _Bounded(io.TextIOBase):
    """A text stream keeping the first :data:`MAX_TEXT` characters written to it."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.more = False

    def writable(self) -> bool:
        return True

    def write(self, s: str) -> int:
        s = str(s)
        if self.size < MAX_TEXT:
            keep = s[:MAX_TEXT - self.size]
            self.parts.append(keep)
            self.size += len(keep)
        if self.size >= MAX_TEXT and s:
            self.more = True
        return len(s)

    def text(self) -> str:
        return "".join(self.parts) + (" ...(more output cut)" if self.more else "")


def _relative(path: str, tree: str) -> str | None:
    """``path`` relative to the learner's tree, or None when outside it."""
    try:
        full = os.path.realpath(path)
    except (OSError, ValueError):
        return None
    prefix = tree.rstrip("/") + "/"
    return full[len(prefix):] if full.startswith(prefix) else None


def describe_exception(exc: BaseException, tree: str) -> dict:
    """Type, message, place (the deepest frame in the learner's tree) and a short traceback."""
    import traceback

    if isinstance(exc, SyntaxError) and exc.filename and _relative(exc.filename, tree):
        where = f"{_relative(exc.filename, tree)}:{exc.lineno}"
    else:
        where = None
    frames = []
    for frame in traceback.extract_tb(exc.__traceback__):
        rel = _relative(frame.filename, tree)
        if rel is not None and not rel.startswith("_grading_"):
            frames.append(f'  File "{rel}", line {frame.lineno}, in {frame.name}\n    {(frame.line or "").strip()}')
            where = f"{rel}:{frame.lineno}"
    t = type(exc)
    try:
        message = str(exc)
    except Exception:  # noqa: BLE001 - a learner exception whose __str__ fails
        message = "(its message could not be read)"
    return {"type": t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}",
            "builtin": t.__module__ == "builtins",
            "not_implemented": isinstance(exc, NotImplementedError),
            "message": message[:MAX_TEXT], "where": where,
            "trace": "\n".join(frames)[-MAX_TRACE:]}


class Worker:
    """``serve`` mode: answer calls on the channel until it closes."""

    def __init__(self, config: dict) -> None:
        self.tree = os.path.realpath(config["tree"])
        self.fd_in, self.fd_out = int(config["fd_in"]), int(config["fd_out"])
        self.records = frozenset(config.get("records", ()))
        self.modules = list(config.get("modules", ()))
        self.call_id: int | None = None

    def send(self, obj: dict) -> None:
        send_json(self.fd_out, obj)

    def callback(self, key: int, args: tuple, kwargs: dict):
        try:
            payload = {"id": self.call_id, "callback": key, "args": encode(list(args), self.records),
                       "kwargs": encode(dict(kwargs), self.records)}
        except RefusedValue as exc:
            raise TypeError(f"you passed {exc} to a function the test gave you") from None
        self.send(payload)
        kind, data = read_frame(self.fd_in)
        if kind != b"P":
            raise EOFError("unexpected frame")
        reply = pickle.loads(data)
        if reply[0] == "callback-result":
            return reply[1]
        raise CallbackError(reply[1])

    def run_call(self, module: str, name: str, args: tuple, kwargs: dict) -> dict:
        import contextlib
        import importlib

        out = _Bounded()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                function = getattr(importlib.import_module(module), name)
                result = function(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - anything learner code raises, even SystemExit
            if isinstance(exc, EOFError) and str(exc) == "the channel closed":
                raise
            return {"error": describe_exception(exc, self.tree), "out": out.text()}
        try:
            return {"result": encode(result, self.records), "out": out.text()}
        except RefusedValue as exc:
            return {"refused": str(exc), "out": out.text()}
        except RecursionError:
            return {"refused": "a value nested too deeply", "out": out.text()}

    def import_modules(self) -> dict:
        """Import the learner's modules before the first call (their import time is not a call's)."""
        import importlib

        for module in self.modules:
            try:
                importlib.import_module(module)
            except BaseException as exc:  # noqa: BLE001
                return {"ready": False, "module": module, "error": describe_exception(exc, self.tree)}
        return {"ready": True}

    def serve(self) -> int:
        self.send(self.import_modules())
        while True:
            try:
                kind, data = read_frame(self.fd_in)
            except EOFError:
                return 0
            if kind != b"P":
                return 1
            message = pickle.loads(data)  # ("call", id, the call's own pickle) or ("exit",)
            if message[0] == "exit":
                return 0
            if message[0] != "call":
                return 1
            _, self.call_id, inner = message
            try:
                module, name, args, kwargs = _ArgUnpickler(inner, self).load()
            except Exception as exc:  # noqa: BLE001 - e.g. a course class the learner's module no longer has
                self.send({"id": self.call_id, "error": describe_exception(exc, self.tree), "out": ""})
                continue
            self.send({"id": self.call_id, **self.run_call(module, name, args, kwargs)})


def _blame(exc: BaseException, tree: str, files: set[str]) -> tuple[str | None, int | None]:
    """(learner file, line) where ``exc`` was raised: the deepest frame in a learner file."""
    import traceback

    if isinstance(exc, SyntaxError) and exc.filename and _relative(exc.filename, tree) in files:
        return _relative(exc.filename, tree), exc.lineno
    blame: tuple[str | None, int | None] = (None, None)
    for frame in traceback.extract_tb(exc.__traceback__):
        rel = _relative(frame.filename, tree)
        if rel in files:
            blame = (rel, frame.lineno)
    return blame


def probe(config: dict) -> int:
    """``probe`` mode: import each learner file in turn; one JSON frame per file.

    ``{"start": FILE}`` before, then ``{"ok": FILE}`` or ``{"fail": FILE, "blame": FILE2,
    "line": N, "error": "..."}`` where ``blame`` is the learner file in which the import
    failed (a syntax error names its own file and line), then ``{"done": true}``.
    """
    tree = os.path.realpath(config["tree"])
    fd = int(config["fd_out"])
    files = list(config.get("files", ()))
    import importlib

    for rel in files:
        send_json(fd, {"start": rel})
        try:
            importlib.import_module(rel[:-3].replace("/", ".").removesuffix(".__init__"))
        except BaseException as exc:  # noqa: BLE001 - anything a learner module raises, even SystemExit
            blame, line = _blame(exc, tree, set(files))
            info = describe_exception(exc, tree)
            message = f"{info['type']}: {info['message']}" if info["message"] else info["type"]
            send_json(fd, {"fail": rel, "blame": blame or rel, "line": line, "error": message[:500]})
        else:
            send_json(fd, {"ok": rel})
    send_json(fd, {"done": True})
    return 0


# -- boot: namespaces, the drop, limits -------------------------------------------------------
def _libc():
    import ctypes
    import ctypes.util

    return ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)


def _unshare(flags: int) -> str | None:
    """unshare(2); None on success, else the reason."""
    import ctypes

    try:
        libc = _libc()
        if libc.unshare(flags) != 0:
            return os.strerror(ctypes.get_errno())
    except (OSError, AttributeError) as exc:
        return str(exc)
    return None


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def enter_namespaces(want: bool) -> dict:
    """New PID and network namespaces for what this process forks next (with a user
    namespace mapping only this user when not root). Returns what was obtained."""
    if not want or sys.platform != "linux":
        return {"pidns": False, "netns": False, "why": "not asked" if not want else "not Linux"}
    uid, gid = os.geteuid(), os.getegid()
    flags = CLONE_NEWPID | CLONE_NEWNET
    if uid != 0:
        flags |= CLONE_NEWUSER
    why = _unshare(flags)
    if why is not None:
        return {"pidns": False, "netns": False, "why": f"unshare: {why}"}
    if uid != 0:
        try:
            _write("/proc/self/setgroups", "deny")
            _write("/proc/self/uid_map", f"{uid} {uid} 1")
            _write("/proc/self/gid_map", f"{gid} {gid} 1")
        except OSError as exc:
            return {"pidns": True, "netns": True, "why": f"user namespace maps: {exc}"}
    return {"pidns": True, "netns": True, "why": ""}


def _limits(limits: dict) -> None:
    import resource

    table = {"as": resource.RLIMIT_AS, "core": resource.RLIMIT_CORE, "fsize": resource.RLIMIT_FSIZE,
             "nofile": resource.RLIMIT_NOFILE, "nproc": resource.RLIMIT_NPROC, "cpu": resource.RLIMIT_CPU}
    for key, value in limits.items():
        if key in table and value is not None:
            soft, hard = resource.getrlimit(table[key])
            value = int(value)
            if hard != resource.RLIM_INFINITY:
                value = min(value, hard)
            resource.setrlimit(table[key], (value, value))


def _drop(uid: int | None, gid: int | None) -> None:
    """Become ``uid``/``gid`` for good (checked), when root."""
    if uid is None:
        return
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid):
        raise SystemExit("grading worker: the user switch did not take")
    try:
        os.setuid(0)
    except PermissionError:
        return
    raise SystemExit("grading worker: could get root back after the switch")


PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000
EPERM, ENOSYS = 1, 38
SECCOMP_ARCHES = {
    # audit arch (linux/audit.h): (clone, unshare, setns, clone3) syscall numbers
    # x86_64: arch/x86/entry/syscalls/syscall_64.tbl; aarch64: include/uapi/asm-generic/unistd.h
    0xC000003E: (56, 272, 308, 435),
    0xC00000B7: (220, 97, 268, 435),
}
X32_SYSCALL_BIT = 0x40000000


def seccomp_program(arch: int) -> list[tuple[int, int, int, int]]:
    """The classic-BPF seccomp filter (``(code, jt, jf, k)`` instructions, linux/filter.h)
    that keeps learner processes from making namespaces: ``clone`` and ``unshare`` with
    ``CLONE_NEWUSER`` fail with EPERM, ``setns`` with EPERM, ``clone3`` with ENOSYS (its
    flags sit in memory a filter cannot read; glibc then falls back to ``clone``, as it
    does on kernels without ``clone3``), the x32 ABI and any other architecture than
    ``arch`` with EPERM; every other call is allowed. The layout of ``seccomp_data`` (nr at
    offset 0, arch at 4, args from 16, little-endian) is linux/seccomp.h's.

    A hand-written filter rather than libseccomp (pyseccomp needs the C library on the
    image): the worker uses the standard library only, and the filter is 16 instructions.
    """
    clone, unshare, setns, clone3 = SECCOMP_ARCHES[arch]
    ld, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    deny, nosys, allow = SECCOMP_RET_ERRNO | EPERM, SECCOMP_RET_ERRNO | ENOSYS, SECCOMP_RET_ALLOW
    return [
        (ld, 0, 0, 4),                     # 0: arch
        (jeq, 1, 0, arch),                 # 1: this machine's own ABI, else
        (ret, 0, 0, deny),                 # 2:   refused
        (ld, 0, 0, 0),                     # 3: syscall number
        (jge, 0, 1, X32_SYSCALL_BIT),      # 4: x32 ABI
        (ret, 0, 0, deny),                 # 5:   refused
        (jeq, 0, 1, clone3),               # 6: clone3
        (ret, 0, 0, nosys),                # 7:   "not implemented": glibc uses clone
        (jeq, 0, 1, setns),                # 8: setns
        (ret, 0, 0, deny),                 # 9:   refused
        (jeq, 1, 0, clone),                # 10: clone -> check its flags
        (jeq, 0, 3, unshare),              # 11: unshare -> check its flags, else allow
        (ld, 0, 0, 16),                    # 12: args[0], low 32 bits (the flags)
        (jset, 0, 1, CLONE_NEWUSER),       # 13: a new user namespace
        (ret, 0, 0, deny),                 # 14:   refused
        (ret, 0, 0, allow),                # 15: anything else
    ]


def restrict_privileges() -> str:
    """``PR_SET_NO_NEW_PRIVS`` (setuid programs and file capabilities grant nothing from now
    on, kernel Documentation/userspace-api/no_new_privs.rst) and the :func:`seccomp_program`
    filter, for this process and all it starts (both survive ``execve``). Returns "" on
    success, else why not (then no learner code may run: the caller stops).
    """
    import ctypes
    import platform

    arch = {"x86_64": 0xC000003E, "amd64": 0xC000003E, "aarch64": 0xC00000B7, "arm64": 0xC00000B7}.get(
        platform.machine().lower())
    if arch is None:
        return f"no seccomp filter for the architecture {platform.machine()}"
    libc = _libc()
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return f"prctl(PR_SET_NO_NEW_PRIVS): {os.strerror(ctypes.get_errno())}"

    class SockFilter(ctypes.Structure):
        _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8),
                    ("k", ctypes.c_uint32)]

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter))]

    program = seccomp_program(arch)
    filters = (SockFilter * len(program))(*[SockFilter(*ins) for ins in program])
    fprog = SockFprog(len(program), filters)
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        return f"prctl(PR_SET_SECCOMP): {os.strerror(ctypes.get_errno())}"
    return ""


def _close_other_fds(keep: set[int]) -> None:
    try:
        fds = [int(x) for x in os.listdir("/proc/self/fd")]
    except OSError:
        fds = list(range(3, 1024))
    for fd in fds:
        if fd > 2 and fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _exec_worker(config: dict, path: str) -> None:
    """In the forked worker: limits, descriptors, the drop, a clean environment, exec."""
    fd_in, fd_out = int(config["fd_in"]), int(config["fd_out"])
    _close_other_fds({fd_in, fd_out})
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    _limits(config.get("limits", {}))
    _drop(config.get("uid"), config.get("gid"))
    if sys.platform == "linux":
        why = restrict_privileges()
        if why:
            raise SystemExit(f"grading worker: {why}")
    os.chdir(config["tree"])
    for fd in (fd_in, fd_out):
        os.set_inheritable(fd, True)
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": config["home"], "TMPDIR": config["tmp"],
           "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1",
           "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "MPLBACKEND": "Agg",
           "MPLCONFIGDIR": os.path.join(config["tmp"], "matplotlib")}
    python = config.get("python") or sys.executable
    mode = "probe" if config.get("mode") == "probe" else "serve"
    os.execve(python, [python, "-I", "-B", path, mode, json.dumps(config)], env)


def boot(config: dict, path: str) -> int:
    """``boot`` mode (see the module docstring). ``config`` keys: ``tree`` (the learner's
    tree), ``fd_in``/``fd_out`` (the channel), ``uid``/``gid`` (the user to become, when
    root; None otherwise), ``namespaces`` (try PID and network namespaces), ``limits``
    (``as``, ``fsize``, ``nofile``, ``nproc``, ``cpu``, ``core``), ``home``/``tmp``,
    ``python``, ``mode`` (``serve`` or ``probe``) and the mode's own keys."""
    got = enter_namespaces(bool(config.get("namespaces")))
    send_json(int(config["fd_out"]), {"boot": got})
    alive_r, alive_w = os.pipe()  # never written: EOF for the init when boot is gone
    pid = os.fork()
    if pid == 0:  # the namespace's init (pid 1 when a PID namespace was obtained)
        try:
            import select

            os.close(alive_w)
            _libc().prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0)
            if select.select([alive_r], [], [], 0)[0]:
                os._exit(1)  # boot died before the death signal was set
            worker = os.fork()
            if worker == 0:
                try:
                    os.close(alive_r)
                    _exec_worker(config, path)
                finally:
                    os._exit(127)
            for fd in (int(config["fd_in"]), int(config["fd_out"])):
                os.close(fd)
            status = 0
            while True:  # reap orphans; leave when the worker is gone
                try:
                    done, code = os.wait()
                except ChildProcessError:
                    break
                if done == worker:
                    status = os.waitstatus_to_exitcode(code)
                    break
            os._exit(status & 0xFF)
        finally:
            os._exit(126)
    os.close(alive_r)
    for fd in (int(config["fd_in"]), int(config["fd_out"])):
        os.close(fd)
    _, code = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(code) & 0xFF


def main(argv: list[str]) -> int:
    """``boot``/``serve``/``probe`` (see the module docstring)."""
    mode, config = argv[0], json.loads(argv[1])
    if mode == "boot":
        return boot(config, config.get("worker_file") or os.path.abspath(__file__))
    for entry in reversed([config["tree"], *config.get("path", ())]):
        sys.path.insert(0, entry)
    if mode == "probe":
        return probe(config)
    return Worker(config).serve()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
