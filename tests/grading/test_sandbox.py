"""Learner code in the worker process (grading/sandbox.py, grading/worker.py, grading/proxy.py).

A tiny learner tree (one module, ``mod``) stands for the labs. As root, the worker runs as a
transient unprivileged uid with an interpreter that uid can read (see
``grading.toolbox.readable_runtime``); not as root, as this user. Each test calls learner
functions through :class:`grading.proxy.WorkerClient`, as a proxy in the trusted pytest
process does.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

from grading import proxy, sandbox
from grading.toolbox import readable_runtime

REPO_ROOT = Path(__file__).resolve().parents[2]

MOD = r'''
import os, sys, time


class AlwaysEqual:  # the review's a05: equal to everything
    def __eq__(self, other):
        return True

    def __hash__(self):
        return 0


class MyInt(int):
    def __eq__(self, other):
        return True


def echo(x):
    return x


def always_equal():
    return AlwaysEqual()


def my_int():
    return MyInt(3)


def a_function():
    return echo


def object_array():
    import numpy as np
    return np.array([AlwaysEqual()], dtype=object)


def arrays():
    import numpy as np
    return np.arange(6, dtype=np.int64).reshape(2, 3), np.float32(1.5), {"k": (1, 2.5, None, True)}, {3, 4}


def loop():
    while True:
        pass


def sleep(seconds):
    time.sleep(seconds)
    return seconds


def raises(kind):
    if kind == "value":
        raise ValueError("bad value")
    if kind == "stub":
        raise NotImplementedError("your code here (1A)")
    if kind == "exit":
        raise SystemExit(3)
    if kind == "os_exit":
        print("about to leave")
        os._exit(0)
    if kind == "printed":
        print("debugging line")
        raise KeyError("k")


def memory():
    block = bytearray(3 * 1024 ** 3)
    return len(block)


def huge():
    return "x" * (40 * 1024 * 1024)


def whoami():
    return os.getuid(), os.getgid()


def read(path):
    with open(path) as f:
        return f.read()


def network():
    import socket
    return sorted(name for _, name in socket.if_nameindex())


def call_back(fn, *args):
    return fn(*args)


def numpy_str():
    import numpy as np
    return np.str_("nvidia.com/mig-1g.10gb"), [np.str_("a")]


def forge_reply():
    """Writes a reply of its own on the channel (as a stray thread could), then returns."""
    import json, struct
    fd = int(json.loads(sys.argv[2])["fd_out"])
    payload = json.dumps({"id": 10 ** 9, "result": 42, "out": ""}).encode()
    os.write(fd, struct.pack(">2scI", b"GW", b"J", len(payload)) + payload)
    return 5


def privileges():
    """NoNewPrivs and Seccomp of /proc/self/status, and what unshare(CLONE_NEWUSER), a
    fork and a thread give."""
    import ctypes, threading
    status = dict(line.split(":\t", 1) for line in open("/proc/self/status").read().splitlines() if ":\t" in line)
    libc = ctypes.CDLL(None, use_errno=True)
    got = libc.unshare(0x10000000)
    err = ctypes.get_errno()
    pid = os.fork()
    if pid == 0:
        os._exit(7)
    forked = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    seen = []
    t = threading.Thread(target=seen.append, args=(1,))
    t.start()
    t.join()
    return status["NoNewPrivs"].strip(), status["Seccomp"].strip(), got, err, forked, seen


def leave_processes(marker, hop_s, sleep_s):
    """The review's a07 (fork-hopping) and a08/a09 (a double-forked, setsid daemon)."""
    for kind in ("hopper", "daemon"):
        if os.fork() == 0:
            os.setsid()
            if os.fork():
                os._exit(0)
            if kind == "hopper":
                end = time.monotonic() + hop_s
                while time.monotonic() < end:
                    if os.fork():
                        os._exit(0)
            time.sleep(sleep_s)
            with open(marker, "a") as f:
                f.write(f"{kind} survived\n")
            os._exit(0)
    return "started"
'''


@pytest.fixture(scope="module")
def open_tmp() -> Path:
    """A temporary folder the learner's uid can traverse (pytest's own are 0700)."""
    path = Path(tempfile.mkdtemp(prefix="grading-sandbox-"))
    os.chmod(path, 0o711)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def runtime(open_tmp: Path) -> tuple[str, list[str]]:
    """(interpreter, extra sys.path) for the worker: readable by an unprivileged uid when root."""
    if os.geteuid() != 0:
        return sys.executable, []
    found = readable_runtime(open_tmp / "runtime")
    if found is None:
        pytest.skip("as root, no interpreter an unprivileged user can run (needs /usr/bin/python3.X)")
    return found


@pytest.fixture(scope="module")
def shared_client(open_tmp: Path, runtime) -> proxy.WorkerClient:
    base = Path(tempfile.mkdtemp(prefix="base-", dir=open_tmp))
    os.chmod(base, 0o711)
    tree = base / "learner"
    tree.mkdir()
    (tree / "mod.py").write_text(MOD)
    shutil.copytree(REPO_ROOT / "lab02_device_plugin", tree / "lab02_device_plugin",
                    ignore=shutil.ignore_patterns("__pycache__"))
    iso = sandbox.choose_isolation("auto")
    sandbox.prepare_tree(tree, iso)
    config = sandbox.make_config(iso, tree, base / "home", runtime[0], runtime[1])
    c = proxy.WorkerClient(config, ["mod"], proxy._trusted_types(proxy.RECORD_TYPES))
    yield c
    c.close()


@pytest.fixture
def client(shared_client: proxy.WorkerClient, request: pytest.FixtureRequest) -> proxy.WorkerClient:
    """The module's worker client, with this test's own budget (3 s a call, 6 s a test)."""
    shared_client.limits = proxy.GradingLimits(call_timeout=3.0, test_budget=6.0, start_timeout=60.0)
    shared_client.broken = ""
    shared_client.begin_test(request.node.nodeid)
    return shared_client


def call(client: proxy.WorkerClient, name: str, *args):
    return client.call("mod", name, args, {})


def test_plain_data_comes_back_with_its_own_types(client) -> None:
    arr, scalar, d, s = call(client, "arrays")
    assert type(arr) is np.ndarray and arr.dtype == np.int64 and arr.tolist() == [[0, 1, 2], [3, 4, 5]]
    assert type(scalar) is np.float32 and scalar == 1.5
    assert d == {"k": (1, 2.5, None, True)} and type(d["k"]) is tuple and s == {3, 4}
    assert call(client, "echo", "text") == "text"


@pytest.mark.parametrize("name, expected", [
    ("always_equal", "returned a mod.AlwaysEqual object, which the grader does not take back"),
    ("my_int", "returned a mod.MyInt object, a subclass of int: return a plain int"),
    ("a_function", "returned a function object"),
    ("object_array", "numpy array of dtype object"),
])
def test_anything_but_plain_data_is_refused(client, name: str, expected: str) -> None:
    """The review's a05: an object equal to everything, a subclass of int, a callable never
    reach the test; the test fails with a message instead."""
    with pytest.raises(proxy.ReturnValueRefused, match=expected):
        call(client, name)


def test_course_records_come_back_as_the_trusted_class(client) -> None:
    from lab02_device_plugin.plugin.sharing import AdvertisedDevice

    device = AdvertisedDevice("GPU-a", "GPU-a", "GPU-a", 0, numa_node=1)
    back = call(client, "echo", [device])
    assert type(back) is list and type(back[0]) is AdvertisedDevice and back == [device]


def test_learner_exceptions_come_back_as_course_exceptions(client) -> None:
    with pytest.raises(ValueError, match=r"raises\(\): bad value \(at mod\.py:\d+\)") as caught:
        call(client, "raises", "value")
    assert isinstance(caught.value, proxy.LearnerError) and caught.value.type_name == "ValueError"
    with pytest.raises(NotImplementedError, match=r"^your code here \(1A\)"):
        call(client, "raises", "stub")
    with pytest.raises(proxy.LearnerError, match="SystemExit"):
        call(client, "raises", "exit")
    with pytest.raises(KeyError, match="your code printed:\ndebugging line"):
        call(client, "raises", "printed")
    with pytest.raises(proxy.WorkerFailed, match="ended during the call"):
        call(client, "raises", "os_exit")
    assert call(client, "echo", 5) == 5  # a fresh worker after the last one left


def test_callbacks_run_on_the_trusted_side(client) -> None:
    seen = []
    assert call(client, "call_back", lambda v: seen.append(v) or len(seen), [1, 2]) == 1
    assert seen == [[1, 2]]
    with pytest.raises(proxy.LearnerError, match="ZeroDivisionError: division by zero") as caught:
        call(client, "call_back", lambda: 1 / 0)
    assert caught.value.type_name.endswith("CallbackError")


def test_an_endless_loop_times_out_and_the_next_call_gets_a_fresh_worker(client) -> None:
    client.limits.call_timeout = 1.0
    start = time.monotonic()
    with pytest.raises(proxy.LearnerTimeout, match=r"loop\(\): timed out after 1 s"):
        call(client, "loop")
    assert time.monotonic() - start < 10
    assert call(client, "echo", 1) == 1


def test_a_test_has_a_budget_of_worker_time_and_the_grading_a_deadline(client) -> None:
    client.limits.test_budget = 2.0
    call(client, "echo", 0)  # a started worker: its start is not the test's time
    client.begin_test("budget")
    call(client, "sleep", 0.8)
    call(client, "sleep", 0.8)
    with pytest.raises(proxy.LearnerTimeout, match=r"timed out after 0\.\d s"):  # 2 - 1.6 = 0.4 s left, less overheads
        call(client, "sleep", 0.8)
    with pytest.raises(proxy.LearnerTimeout, match="already used its 2 s"):
        call(client, "echo", 1)
    client.begin_test("next")
    assert call(client, "echo", 1) == 1
    client.limits.deadline = time.time() - 1
    with pytest.raises(proxy.LearnerTimeout, match="time budget ran out"):
        call(client, "echo", 1)


def test_memory_and_output_are_bounded(client) -> None:
    with pytest.raises(proxy.LearnerError, match="MemoryError"):
        call(client, "memory")
    with pytest.raises(proxy.WorkerFailed, match="larger than"):
        call(client, "huge")


def test_learner_code_does_not_run_as_root_and_cannot_read_root_files(client, open_tmp: Path) -> None:
    uid, _ = call(client, "whoami")
    if os.geteuid() != 0:
        assert uid == os.geteuid()  # partial isolation: the grader's own user
        return
    assert uid != 0 and uid == client.config.uid
    secret = open_tmp / "secret"
    secret.write_text("hidden test text")
    secret.chmod(0o600)
    with pytest.raises(PermissionError):
        call(client, "read", str(secret))


def test_no_network_where_namespaces_are_available(client) -> None:
    names = call(client, "network")
    if client.boot.get("netns"):
        assert names == ["lo"]
    else:
        pytest.skip(f"no network namespace here: {client.boot.get('why')}")


def test_every_process_learner_code_leaves_is_killed(client) -> None:
    """The review's a07 (a process forking and exiting in a loop) and a08/a09 (a
    double-forked daemon in its own session): neither outlives the worker."""
    marker = client.config.tmp + "/marker"
    client.close()
    nproc = client.config.limits.pop("nproc", None)  # without the process limit, which would stop the hopper
    try:
        assert call(client, "leave_processes", marker, 1.0, 1.0) == "started"
        client.close()
    finally:
        if nproc is not None:
            client.config.limits["nproc"] = nproc
    time.sleep(2.5)
    assert not os.path.exists(marker), Path(marker).read_text()


def test_choose_isolation_never_picks_root_silently() -> None:
    iso = sandbox.choose_isolation("auto")
    if os.geteuid() != 0:
        assert iso.mode == "same-user" and "partial isolation" in iso.partial
        assert sandbox.choose_isolation("someone").mode == "refused"
        return
    assert iso.mode == "user" and iso.uid not in (None, 0) and iso.own_uid
    assert sandbox.choose_isolation("none").mode == "root" and "root" in sandbox.choose_isolation("none").partial
    assert sandbox.choose_isolation("no-such-user-here").mode == "refused"
    assert sandbox.choose_isolation("uid:0").mode == "refused"
    assert sandbox.choose_isolation("root").mode == "refused"


def test_kill_children_reaps_double_forked_orphans(tmp_path: Path) -> None:
    """As a subreaper, the grader finds and kills what its children left behind."""
    import subprocess

    code = ("import os, time\n"
            "if os.fork() == 0:\n"
            "    os.setsid()\n"
            "    if os.fork() == 0:\n"
            "        time.sleep(60)\n"
            "    os._exit(0)\n")
    script = tmp_path / "orphan.py"
    script.write_text(code)
    probe = (f"import sys, subprocess, time; sys.path.insert(0, {str(Path(__file__).parents[1])!r})\n"
             "from grading import sandbox\n"
             "assert sandbox.become_subreaper()\n"
             f"subprocess.run([sys.executable, {str(script)!r}])\n"
             "time.sleep(0.3)\n"
             "left = sandbox._children()\n"
             "print(len(left), sandbox.kill_children(), len(sandbox._children()))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    left, killed, after = map(int, out.stdout.split())
    assert left >= 1 and killed >= 1 and after == 0, out.stdout + out.stderr


def test_a_named_learner_user_serves_one_grading_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 23: as root, two gradings on one machine never share a uid, so neither's
    clean-up (``kill(-1)`` as that uid) nor process limit reaches the other. The first
    locks the dedicated user; another grader (a forked child, as another grading process)
    gets a transient uid of its own; once the lock is given back, the next one gets the
    dedicated user. Hermetic: the dedicated user is a made-up account, the lock folder a
    temporary one."""
    if os.geteuid() != 0:
        pytest.skip("needs root (switching users)")
    import json
    import pwd

    name, uid = "course-learner-lock-test", 1_899_999_990
    fake = pwd.struct_passwd((name, "x", uid, uid, "", "/nonexistent", "/usr/sbin/nologin"))
    real = pwd.getpwnam
    monkeypatch.setattr(sandbox, "LOCK_DIR", str(tmp_path / "locks"))
    monkeypatch.setattr(sandbox, "DEDICATED_USER", name)
    monkeypatch.setattr(sandbox.pwd, "getpwnam", lambda n: fake if n == name else real(n))

    def other_grader() -> list:
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                sandbox._HELD_LOCKS.clear()  # another process: it holds no lock of its own
                iso = sandbox.choose_isolation("auto")
                os.write(write_end, json.dumps([iso.uid, iso.own_uid, iso.note, os.getpid()]).encode())
            finally:
                os._exit(0)
        os.close(write_end)
        with os.fdopen(read_end) as f:
            got = json.loads(f.read())
        os.waitpid(pid, 0)
        return got

    first = sandbox.choose_isolation("auto")
    try:
        assert (first.uid, first.gid, first.user, first.own_uid) == (uid, uid, name, True)
        other_uid, own, note, other_pid = other_grader()
        assert other_uid == sandbox.TRANSIENT_UID_BASE + other_pid != uid and own
        assert f"{name} is held by another grading" in note
    finally:
        sandbox.release_user(name)
    assert other_grader()[:2] == [uid, True]  # given back: the next grading gets the dedicated user


def test_a_lock_folder_others_can_write_is_not_trusted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A lock folder that a learner could have made (writable by others) locks nothing: the
    grading takes a transient uid of its own instead of sharing a named one."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    folder = tmp_path / "locks"
    folder.mkdir()
    os.chmod(folder, 0o777)
    monkeypatch.setattr(sandbox, "LOCK_DIR", str(folder))
    assert sandbox.lock_user("someone-test") is False
    assert not (folder / "someone-test.lock").exists()


def test_an_interpreter_the_learner_cannot_reach_is_named_before_anything_runs() -> None:
    """Issue 23: an interpreter under a folder the learner's user cannot search (a virtual
    environment under /root) is named as the cause, with that folder, before any learner
    process starts; one it can run gives no problem."""
    if os.geteuid() != 0:
        pytest.skip("needs root (switching users)")
    base = Path(tempfile.mkdtemp(prefix="interp-"))
    try:
        os.chmod(base, 0o711)
        private = base / "private"
        private.mkdir(mode=0o700)
        python = private / "python"
        python.write_text("#!/bin/sh\n")
        os.chmod(python, 0o755)
        iso = sandbox.Isolation("user", 65534, 65534, "uid 65534")
        assert sandbox.interpreter_problem(iso, str(python)) == (
            f"{python}: the folder {private} cannot be searched for uid 65534")
        os.chmod(private, 0o755)
        assert sandbox.interpreter_problem(iso, str(python)) is None
        assert sandbox.interpreter_problem(iso, str(python), [str(private / "missing")]) == (
            f"{private / 'missing'}: does not exist or cannot be reached for uid 65534")
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.skipif(sys.platform != "linux", reason="no_new_privs and seccomp are Linux's")
def test_learner_code_has_no_new_privileges_and_no_user_namespaces(client) -> None:
    """Issue 23: a learner process runs with no_new_privs (setuid programs grant nothing)
    and a seccomp filter: unshare(CLONE_NEWUSER) fails with EPERM (1), while fork and
    threads (clone, clone3's fallback) work."""
    assert call(client, "privileges") == ("1", "2", -1, 1, 7, [1])


def test_a_numpy_string_comes_back_as_a_plain_str(client) -> None:
    """Issue 23: numpy.str_ is a str, as the contracts ask: it comes back as its plain value."""
    name, inner = call(client, "numpy_str")
    assert type(name) is str and name == "nvidia.com/mig-1g.10gb" and type(inner[0]) is str


def test_a_reply_that_does_not_belong_to_the_call_ends_the_worker(client) -> None:
    """Issue 23: every frame of a call carries its id; learner code that writes a reply of
    its own on the channel (id 10**9) gets no answer taken from it: the worker is ended and
    the call fails; the next call starts a fresh worker."""
    with pytest.raises(proxy.WorkerFailed, match="does not belong to this call"):
        call(client, "forge_reply")
    assert client.spawned is None
    client.broken = ""
    assert call(client, "echo", 3) == 3
