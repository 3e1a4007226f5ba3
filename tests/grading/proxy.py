"""The trusted pytest process's side of grading: the learner's functions replaced by proxies.

The autograder (:mod:`grading.runner`) runs the graded tests in a pytest process that
imports only the course's own code (the student edition's lab packages, the tests, this
package): no learner code ever runs in it, so nothing can change how it checks answers or
writes its report. This module is a pytest plugin (``-p grading.proxy
--grade-sandbox=CONFIG.json``) that, before collection:

1. imports the modules that hold the learner's functions (the student edition's files
   with ``raise NotImplementedError("your code here (1A)")``, listed in the config) and
   every lab module already loaded, and replaces each learner function, in its own module
   and in every module that imported it by name, with a proxy; so the course's own
   callers (``simulate`` -> ``gang_permit``, ``advertise`` -> ``expand_replicas``) go
   through the proxy too;
2. a proxy sends the call (module, name, arguments pickled here; functions among the
   arguments become callbacks that run here) to a worker process (:mod:`grading.worker`,
   started by :mod:`grading.sandbox` as an unprivileged user, in the learner's tree) and
   reads back the result, decoded by :func:`grading.wire.decode` into plain data and the
   TRUSTED course records (:data:`RECORD_TYPES`); anything else fails the test with
   :class:`ReturnValueRefused`;
3. an exception raised by learner code comes back as its type name, message and place,
   raised here as a :class:`LearnerError` (also an instance of the same builtin exception
   class, so ``except ValueError`` in the course's code still applies); an unchanged stub
   raises :class:`LearnerNotImplementedError`, a ``NotImplementedError``;
4. time: each call has a timeout and each test a budget of worker time; when either runs
   out the worker and everything it started are killed (restarted at the next call) and
   the test fails with "timed out after N s"; after the grading's deadline every call
   fails at once.

Limits of the approach: learner functions get copies of their arguments (a function that
mutates an argument does not mutate the test's object), and an argument must be picklable
(a test's own helper class would not be: none of the course's tests passes one).
"""

from __future__ import annotations

import builtins
import dataclasses
import enum
import functools
import importlib
import io
import json
import pickle
import sys
import time
import types
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from grading import sandbox, wire

RECORD_TYPES = (
    "lab01_cluster_sim.disciplines.preemption.CheckpointSpec",
    "lab01_cluster_sim.disciplines.preemption.VictimCandidate",
    "lab02_device_plugin.plugin.health.HealthEvent",
    "lab02_device_plugin.plugin.health.HealthPolicy",
    "lab02_device_plugin.plugin.sharing.AdvertisedDevice",
    "lab02_device_plugin.plugin.sharing.AdvertisedResource",
    "lab02_device_plugin.plugin.sharing.DeviceState",
)
"""The course's record types a learner function may return (resolved to the trusted
package's classes). Everything else a learner returns must be plain data."""
LAB_PACKAGES = ("lab01_cluster_sim", "lab02_device_plugin")
CALL_TIMEOUT_S = 10.0
"""Longest a single call of a learner function may take."""
TEST_BUDGET_S = 10.0
"""Worker time one test may use in all (its calls together)."""
START_TIMEOUT_S = 60.0
"""Longest the worker may take to start and import the learner's modules."""


# -- what comes back from learner code ------------------------------------------------------
class LearnerError(Exception):
    """An exception raised by learner code (in the worker), or a problem with its result.

    Attributes:
        function: the learner function called.
        type_name: the exception's type in the learner's process.
        where: ``file:line`` of the deepest frame in the learner's tree, or None.
    """

    function: str = ""
    type_name: str = ""
    where: str | None = None


class LearnerNotImplementedError(LearnerError, NotImplementedError):
    """The learner's function raised NotImplementedError (an unchanged stub)."""


class LearnerTimeout(LearnerError):
    """The learner's function did not return in time (an endless loop?)."""


class ReturnValueRefused(LearnerError):
    """The learner's function returned something the grader does not take back."""


class WorkerFailed(LearnerError):
    """The learner's process could not be started, crashed, or wrote garbage."""


_NOT_MAPPED = {"StopIteration", "StopAsyncIteration", "GeneratorExit", "BaseExceptionGroup", "ExceptionGroup"}


def _learner_class(type_name: str, builtin: bool) -> type:
    """The exception class raised here for a learner exception of ``type_name``: a
    :class:`LearnerError` that is also the builtin class of that name (when there is one)."""
    base = getattr(builtins, type_name, None) if builtin else None
    bases: tuple[type, ...] = (LearnerError,)
    if (isinstance(base, type) and issubclass(base, Exception) and type_name not in _NOT_MAPPED
            and not issubclass(base, NotImplementedError)):
        bases = (LearnerError, base)
    short = type_name.rsplit(".", 1)[-1]
    namespace = {"__module__": "your_code", "__str__": _message}
    try:
        return type(short, bases, namespace)
    except TypeError:  # a layout conflict (e.g. OSError's): the course exception alone
        return type(short, (LearnerError,), namespace)


def _message(self: BaseException) -> str:
    """The message as given (KeyError's own ``str`` would quote it)."""
    return str(self.args[0]) if self.args else ""


def learner_exception(function: str, info: dict, out: str = "") -> LearnerError:
    """The exception to raise here for the worker's error record ``info``."""
    type_name = str(info.get("type", "Exception"))[:200]
    message = str(info.get("message", ""))[:2000]
    where = info.get("where") if isinstance(info.get("where"), str) else None
    if info.get("not_implemented") is True:
        cls: type = LearnerNotImplementedError
        text = message or "NotImplementedError"
    else:
        cls = _learner_class(type_name, info.get("builtin") is True)
        text = f"{function}(): {message}" if message else f"{function}() raised {type_name}"
    if where:
        text += f" (at {where})"
    trace = str(info.get("trace", ""))[:4000]
    if trace and info.get("not_implemented") is not True:
        text += "\nwhere your code raised it:\n" + trace
    if out:
        text += "\nyour code printed:\n" + out[:2000]
    exc = cls(text)
    exc.function, exc.type_name, exc.where = function, type_name, where
    return exc


def _trusted_types(names: tuple[str, ...]) -> dict[str, type]:
    """The record types by name, imported from the trusted package."""
    out: dict[str, type] = {}
    for name in names:
        module, _, qual = name.rpartition(".")
        cls = getattr(importlib.import_module(module), qual)
        if not (dataclasses.is_dataclass(cls) or (isinstance(cls, type) and issubclass(cls, enum.Enum))):
            raise TypeError(f"{name}: a record type must be a dataclass or an Enum")
        out[name] = cls
    return out


# -- the worker client ----------------------------------------------------------------------
class _ArgPickler(pickle.Pickler):
    """Pickles call arguments; functions among them become callback handles."""

    def __init__(self, file, callbacks: list) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.callbacks = callbacks

    def persistent_id(self, obj):
        if _is_callback(obj):
            self.callbacks.append(obj)
            return str(len(self.callbacks) - 1)
        return None


def _is_callback(obj: object) -> bool:
    """A function among the arguments that must run here (a test's lambda, a closure of the
    course's code, a bound method, a partial), not be pickled by name. Module-level functions
    of the standard library, numpy and the lab packages pickle by name (pickle's own
    machinery, e.g. ``copyreg.__newobj__``, is among them)."""
    t = type(obj)
    if t is types.MethodType or t is functools.partial:
        return True
    if t is not types.FunctionType or getattr(obj, "__grading_proxy__", None):
        return False
    if "<" in obj.__qualname__:
        return True
    top = (obj.__module__ or "").split(".")[0]
    return not (top in sys.stdlib_module_names or top == "numpy" or top in LAB_PACKAGES)


@dataclass
class GradingLimits:
    """Time limits of learner calls (seconds; ``deadline`` is wall-clock, time.time())."""

    call_timeout: float = CALL_TIMEOUT_S
    test_budget: float = TEST_BUDGET_S
    start_timeout: float = START_TIMEOUT_S
    deadline: float | None = None


@dataclass
class WorkerClient:
    """Calls the learner's functions in a worker process (started on first use)."""

    config: sandbox.SandboxConfig
    modules: list[str]
    types: dict[str, type]
    limits: GradingLimits = field(default_factory=GradingLimits)
    reaper: bool = False
    spawned: sandbox.Spawned | None = None
    broken: str = ""
    used: float = 0.0
    calls: int = 0
    restarts: int = 0
    boot: dict = field(default_factory=dict)
    nodeid: str = ""
    in_call: bool = False
    installed: dict = field(default_factory=dict)

    phases: list = field(default_factory=list)
    phase: int = -1

    def begin_test(self, nodeid: str) -> None:
        """A new test: its own budget of worker time. A test of another phase (the hidden
        tests after the visible ones) starts with a fresh worker, so nothing the learner's
        code saw before reaches what comes after, and with that phase's deadline."""
        self.nodeid, self.used = nodeid, 0.0
        phase = max((k for k, (prefix, _) in enumerate(self.phases) if nodeid.startswith(prefix)), default=-1)
        if phase != self.phase:
            self.close()
            self.broken = ""
            self.phase = phase
            if phase >= 0:
                self.limits.deadline = self.phases[phase][1]

    def close(self) -> None:
        """Stop the worker and everything it started."""
        sandbox.end(self.spawned, self.reaper)
        self.spawned = None

    def _start(self, function: str) -> None:
        deadline = time.monotonic() + self._left(self.limits.start_timeout)
        try:
            self.spawned = sandbox.spawn(self.config, "serve", {"modules": self.modules,
                                                                "records": sorted(self.types)}, deadline)
            self.boot = self.spawned.boot
            ready = wire.read_json(self.spawned.from_worker, deadline)
        except (wire.ChannelTimeout, wire.ChannelClosed, wire.ChannelError) as exc:
            self.close()
            cut = self.limits.deadline is not None and time.time() >= self.limits.deadline - 0.5
            why = {wire.ChannelTimeout: "did not start before the grading's time budget ran out" if cut
                   else f"did not start within {self.limits.start_timeout:g} s",
                   wire.ChannelClosed: "stopped while starting"}.get(type(exc), str(exc))
            self.broken = f"your code's process {why} (importing your modules)"
            raise WorkerFailed(f"{function}(): {self.broken}") from None
        self.restarts += 1
        if ready.get("ready") is not True:
            info = ready.get("error") if isinstance(ready.get("error"), dict) else {}
            self.close()
            self.broken = (f"importing {str(ready.get('module', 'a module'))[:100]} failed: "
                           f"{str(info.get('type', ''))[:100]}: {str(info.get('message', ''))[:500]}"
                           + (f" (at {info['where']})" if isinstance(info.get("where"), str) else ""))
            raise WorkerFailed(f"{function}(): {self.broken}")

    def _left(self, want: float) -> float:
        """``want`` seconds, or less when the grading's deadline comes first."""
        if self.limits.deadline is None:
            return want
        return max(0.0, min(want, self.limits.deadline - time.time()))

    def call(self, module: str, name: str, args: tuple, kwargs: dict):
        """Run ``module.name(*args, **kwargs)`` in the worker; see the module docstring."""
        if self.in_call:
            raise WorkerFailed(f"{name}(): called while another of your functions is running (from a function "
                               "the test passed to your code); the grader does not support that")
        self.in_call = True
        try:
            return self._call(module, name, args, kwargs)
        finally:
            self.in_call = False

    def _call(self, module: str, name: str, args: tuple, kwargs: dict):
        self.calls += 1
        if self.limits.deadline is not None and time.time() >= self.limits.deadline:
            raise LearnerTimeout(f"{name}(): not run: the grading's time budget ran out")
        budget = self.limits.test_budget - self.used
        if budget <= 0:
            raise LearnerTimeout(f"{name}(): not run: this test already used its {self.limits.test_budget:g} s "
                                 "of your code's time")
        if self.broken:
            raise WorkerFailed(f"{name}(): {self.broken}")
        if self.spawned is None:
            self._start(name)
        callbacks: list = []
        buffer = io.BytesIO()
        try:
            _ArgPickler(buffer, callbacks).dump((module, name, args, kwargs))
        except Exception as exc:  # noqa: BLE001 - an argument the grader cannot pass
            raise WorkerFailed(f"{name}(): the grader could not pass the arguments to your code "
                               f"({type(exc).__name__}: {str(exc)[:200]})") from None
        call_id = self.calls  # every frame of this call, both ways, carries it
        frame = pickle.dumps(("call", call_id, buffer.getvalue()))
        timeout = self._left(min(self.limits.call_timeout, budget))
        start = time.monotonic()
        deadline = start + timeout
        finished = False
        try:
            wire.write_frame(self.spawned.to_worker, b"P", frame, deadline)
            while True:
                message = wire.read_json(self.spawned.from_worker, deadline)
                if message.get("id") != call_id or type(message.get("id")) is not int:
                    raise wire.ChannelError("a reply that does not belong to this call came back, so your code's "
                                            "process was stopped")
                if "callback" in message:
                    self._callback(message, callbacks, deadline)
                    continue
                finished = True
                return self._answer(name, message)
        except wire.ChannelTimeout:
            raise LearnerTimeout(f"{name}(): timed out after {round(timeout, 1):g} s (an endless loop?); your code was "
                                 "stopped") from None
        except wire.ChannelClosed:
            raise WorkerFailed(f"{name}(): your code's process ended during the call (os._exit, a crash, "
                               "or the memory limit?)") from None
        except wire.ChannelError as exc:
            raise WorkerFailed(f"{name}(): {exc}") from None
        finally:
            self.used += time.monotonic() - start
            if not finished:  # a timeout, a crash, garbage, or an interrupt: start afresh next time
                self.close()

    def _callback(self, message: dict, callbacks: list, deadline: float) -> None:
        key = message.get("callback")
        try:
            if type(key) is not int or not 0 <= key < len(callbacks):
                raise wire.DecodeError("an unknown callback")
            args = wire.decode(message.get("args"), self.types)
            kwargs = wire.decode(message.get("kwargs"), self.types)
            if type(args) is not list or type(kwargs) is not dict or any(type(k) is not str for k in kwargs):
                raise wire.DecodeError("callback arguments must be a list and a dict of str keys")
        except wire.DecodeError as exc:
            reply = ("callback-error", f"the grader refused the arguments: {exc}")
        else:
            try:
                reply = ("callback-result", callbacks[key](*args, **kwargs))
            except Exception as exc:  # noqa: BLE001 - the test's own function raised: tell the learner
                reply = ("callback-error", f"{type(exc).__name__}: {str(exc)[:500]}")
        buffer = io.BytesIO()
        try:
            _ArgPickler(buffer, callbacks).dump(reply)
        except Exception as exc:  # noqa: BLE001
            buffer = io.BytesIO()
            pickle.dump(("callback-error", f"the grader could not pass the result ({type(exc).__name__})"), buffer)
        wire.write_frame(self.spawned.to_worker, b"P", buffer.getvalue(), deadline)

    def _answer(self, name: str, message: dict):
        out = message.get("out") if isinstance(message.get("out"), str) else ""
        if "result" in message:
            try:
                return wire.decode(message["result"], self.types)
            except wire.DecodeError as exc:
                raise ReturnValueRefused(f"{name}() returned {exc}") from None
        if isinstance(message.get("refused"), str):
            raise ReturnValueRefused(f"{name}() returned {message['refused'][:1000]}")
        if isinstance(message.get("error"), dict):
            raise learner_exception(name, message["error"], out)
        raise WorkerFailed(f"{name}(): the reply of your code's process was not understood")


# -- proxies --------------------------------------------------------------------------------
def make_proxy(original, client: WorkerClient, module: str, name: str):
    """A function with ``original``'s name, docstring and signature that calls the worker."""
    @functools.wraps(original)
    def proxy(*args, **kwargs):
        return client.call(module, name, args, kwargs)

    proxy.__grading_proxy__ = f"{module}.{name}"
    return proxy


def install(client: WorkerClient, functions: list[tuple[str, str]]) -> dict[str, int]:
    """Replace each learner function ``(module, name)`` by its proxy, in its module and in
    every lab module that imported it by name. Returns ``{"module.name": places replaced}``.

    Raises:
        AttributeError: a function the config names does not exist in the course's module.
    """
    replaced: dict[int, tuple[object, str]] = {}
    for module, name in functions:
        original = getattr(importlib.import_module(module), name)
        if getattr(original, "__grading_proxy__", None):
            continue
        replaced[id(original)] = (make_proxy(original, client, module, name), f"{module}.{name}")
    counts = {label: 0 for _, label in replaced.values()}
    patch_modules(replaced, counts)
    return counts


def patch_modules(replaced: dict[int, tuple[object, str]], counts: dict[str, int] | None = None) -> None:
    """Swap every module-level name of a loaded lab module bound to an original for its proxy."""
    for mod_name, mod in list(sys.modules.items()):
        if mod is None or mod_name.split(".")[0] not in LAB_PACKAGES:
            continue
        for attr, value in list(vars(mod).items()):
            hit = replaced.get(id(value))
            if hit is not None:
                setattr(mod, attr, hit[0])
                if counts is not None:
                    counts[hit[1]] = counts.get(hit[1], 0) + 1


# -- the pytest plugin ----------------------------------------------------------------------
CLIENT_KEY = pytest.StashKey[WorkerClient]()


def load_config(path: Path) -> tuple[sandbox.SandboxConfig, list[tuple[str, str]], GradingLimits, list]:
    """The grader's JSON config: ``sandbox`` (a SandboxConfig), ``functions`` (``[module,
    name]`` pairs), ``limits`` (GradingLimits fields), ``phases`` (``[node id prefix,
    deadline]``: tests whose id starts with the prefix, in order, each with a fresh worker)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    functions = [(str(m), str(n)) for m, n in data["functions"]]
    return (sandbox.SandboxConfig.from_json(data["sandbox"]), functions,
            GradingLimits(**data.get("limits", {})), [(str(p), float(d)) for p, d in data.get("phases", [])])


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("grading")
    group.addoption("--grade-sandbox", default=None, metavar="CONFIG.json",
                    help="used by the autograder (grading/runner.py): run the learner's functions in a worker "
                         "process described by CONFIG.json, through proxies")


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("grade_sandbox", default=None)
    if not path:
        return
    sandbox_config, functions, limits, phases = load_config(Path(path))
    reaper = sandbox.become_subreaper()
    modules = sorted({m for m, _ in functions})
    for module in modules:  # the course's own modules (trusted), before any test imports them
        importlib.import_module(module)
    client = WorkerClient(sandbox_config, modules, _trusted_types(RECORD_TYPES), limits, reaper=reaper,
                          phases=phases)
    client.installed = install(client, functions)
    config.stash[CLIENT_KEY] = client


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    client = item.config.stash.get(CLIENT_KEY, None)
    if client is not None:
        client.begin_test(item.nodeid)


MAX_QUOTED_CHARS = 6000
"""Most characters of one test's failure that the trusted run's report quotes (its head and
tail): a huge value returned by learner code, quoted by a failing assertion, costs only
its own test, never the report (whose size the grader caps)."""


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Before the JUnit XML plugin sees it: cut a failure's text to :data:`MAX_QUOTED_CHARS`,
    keeping the crash line first (the grader shows it) and the end of the traceback."""
    if report.longrepr is None or not report.failed:  # a skip's longrepr is a tuple junitxml unpacks
        return
    try:
        text = str(report.longrepr)
    except Exception as exc:  # noqa: BLE001 - a repr that cannot be rendered
        report.longrepr = f"(the failure could not be shown: {type(exc).__name__})"
        return
    if len(text) <= MAX_QUOTED_CHARS:
        return
    crash = getattr(getattr(report.longrepr, "reprcrash", None), "message", "") or ""
    head = crash.splitlines()[0][:MAX_QUOTED_CHARS // 4] if crash else text[:MAX_QUOTED_CHARS // 4]
    report.longrepr = (f"{head} ...(cut)\n[{len(text)} characters of failure text, cut to "
                       f"{MAX_QUOTED_CHARS}]\n...{text[-MAX_QUOTED_CHARS // 2:]}")


def pytest_unconfigure(config: pytest.Config) -> None:
    client = config.stash.get(CLIENT_KEY, None)
    if client is not None:
        client.close()


def pytest_report_header(config: pytest.Config) -> list[str]:
    client = config.stash.get(CLIENT_KEY, None)
    if client is None:
        return []
    return [f"grading: the learner's functions run in a worker process (uid {client.config.uid or 'of the grader'}); "
            f"proxies: {json.dumps(client.installed)}"]
