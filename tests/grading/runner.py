"""The grader's parent process: grade one submission without running learner code in it.

Used by the Gradescope autograder (``run_autograder``, built by tools/make_autograder.py)
and by batch grading (tools/grade_submissions.py)::

    python -m grading.runner --course COURSE --submission SUB --results results.json \\
        [--hidden HIDDEN] [--run-as auto|none|USER] [--work-base DIR]

``COURSE`` is a student edition (no solutions: a missing learner file falls back to its
stub, never to a solution), ``HIDDEN`` a folder holding ``tests/hidden/``.

What happens, in order:

1. the expected files (the student edition's files with ``your code here (PART)`` stubs,
   see :func:`grading.catalog.learner_files`) are looked up in the submission
   (:mod:`grading.layout`); a missing, misplaced or ambiguous file keeps its stub, and
   the parts that need it get a message saying which file was expected where;
2. each learner file is compiled here (no code runs) and then imported in a child
   process (:mod:`grading.probe`); a file that does not import is reported with its path
   and line and replaced by its stub, so only the parts that need it lose points;
3. the visible graded tests run in a child pytest, in a fresh working folder without the
   hidden tests; then the hidden tests run in another child, in another fresh folder into
   which they are copied only for that run. Children run as an unprivileged user when
   this process is root (Gradescope), with a minimal environment, their own session and
   resource limits, and a time limit;
4. each child writes pytest's own JUnit XML report to a pipe inherited from this process
   (append-only for the child: it cannot rewrite what pytest wrote); this process parses
   it (:mod:`grading.junit`), checks the control tests it planted (one per test file,
   which must fail with a secret message: a run that reports one as passed, or loses
   it, was tampered with and scores 0), and computes every score itself from the
   points declared in the course's own test files (:mod:`grading.catalog`);
5. it writes ``results.json`` in Gradescope's format: hidden tests with visibility
   ``after_published``, a top-level output that counts only the visible tests, an
   instructors-only entry (visibility ``hidden``, 0 points) with the grader's notes.

Limits (see labs/README.md): learner code and the tests share the child process, so a
learner who studies the grader can still forge the report of that child from inside it
(the child's guard, ``--grade-guard``, and the control tests stop the usual patches and
blanket forgeries, not a targeted attack on the guard itself); and without root there is
no second user, so learner code can read what the instructor can.
"""

from __future__ import annotations

import argparse
import ast
import json
import math
import os
import pwd
import re
import resource
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from grading import catalog, junit, layout

GRADED_DIRS = ("tests/lab01/graded", "tests/lab02/graded")
HIDDEN_DIR = catalog.HIDDEN_DIR
DEDICATED_USER = "course-learner"
"""The unprivileged user setup.sh creates on Gradescope (its processes are killed after each run)."""
CHILD_TIMEOUT_S = 1200.0
"""Upper bound on one child pytest run (each graded test also has its own 60 s timeout)."""
PROBE_TIMEOUT_S = 120.0
OUTPUT_TAIL = 64 * 1024
FSIZE_LIMIT = 512 * 1024 * 1024
"""Largest file a child may write (bytes, RLIMIT_FSIZE)."""
NPROC_LIMIT = 512
"""Most processes of the unprivileged user (RLIMIT_NPROC), when one is used."""
SUSPICIOUS = re.compile(
    r"\b(_pytest|pluggy|pytest|grading|junitxml|ctypes|atexit|setsid|socket|urllib|requests|subprocess|"
    r"__builtins__|builtins)\b"
    r"|gc\.get_(?:objects|referrers|referents)|_getframe|os\.fork|sys\.modules|/dev/fd|/proc/|results\.json"
    r"|/autograder")
"""What the instructors-only notes point out in the lines a learner added (nothing is refused for it)."""
_TEST_OUTPUT_LIMIT = 4000


# -- isolation -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Isolation:
    """Who the children run as.

    Attributes:
        user: name of the unprivileged user, or None (children run as this process's user).
        uid, gid: that user's ids (None without a user).
        kill_user: after each child, kill every process of ``user`` (only for the dedicated
            grading user, never for a shared one like ``nobody``).
        note: why this isolation was chosen (for the instructors' notes).
    """

    user: str | None = None
    uid: int | None = None
    gid: int | None = None
    kill_user: bool = False
    note: str = ""


def choose_isolation(run_as: str, python: str) -> Isolation:
    """Resolve ``--run-as``: ``none``, ``auto`` or a user name.

    ``auto``: when root, the dedicated user if it exists, else ``nobody``, provided that
    user can run ``python`` with pytest (a trial run); otherwise no drop, with a note.
    A named user that cannot be used is an error.

    Raises:
        SystemExit: a named user that does not exist, or that cannot run ``python``.
    """
    if run_as == "none":
        return Isolation(note="children run as the grader's own user (--run-as none)")
    if os.geteuid() != 0:
        if run_as != "auto":
            raise SystemExit(f"error: --run-as {run_as}: needs root to switch users")
        return Isolation(note="children run as the grader's own user (not root: no user to switch to)")
    names = [run_as] if run_as != "auto" else [DEDICATED_USER, "nobody"]
    for name in names:
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            if run_as != "auto":
                raise SystemExit(f"error: --run-as {name}: no such user") from None
            continue
        iso = Isolation(name, entry.pw_uid, entry.pw_gid, kill_user=(name == DEDICATED_USER),
                        note=f"children run as the unprivileged user {name} (uid {entry.pw_uid})")
        try:
            trial = subprocess.run([python, "-c", "import pytest"], user=entry.pw_uid, group=entry.pw_gid,
                                   extra_groups=[], cwd="/", capture_output=True, timeout=60,
                                   env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
            usable = trial.returncode == 0
        except (OSError, subprocess.SubprocessError):
            usable = False
        if usable:
            return iso
        if run_as != "auto":
            raise SystemExit(f"error: --run-as {name}: that user cannot run {python} with pytest "
                             "(is the interpreter readable by it?)")
    return Isolation(note=f"children run as root: no unprivileged user can run {python} "
                          f"(tried {', '.join(names)}); on Gradescope setup.sh creates {DEDICATED_USER}")


def _limits(iso: Isolation):
    def apply() -> None:  # runs in the child, after the user switch; no import here (the
        # parent may hold the import lock in another thread when it forks)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_FSIZE, (FSIZE_LIMIT, FSIZE_LIMIT))
        if iso.user is not None:
            resource.setrlimit(resource.RLIMIT_NPROC, (NPROC_LIMIT, NPROC_LIMIT))
    return apply


def _kill_user_processes(uid: int) -> None:
    """SIGKILL every process owned by ``uid`` (the dedicated grading user only)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
            real = int(re.search(r"^Uid:\s+(\d+)", status, re.M).group(1))
            if real == uid:
                os.kill(int(entry.name), signal.SIGKILL)
        except (OSError, AttributeError, ValueError):
            continue


class _Reader(threading.Thread):
    """Drain a pipe in the background, keeping at most ``limit`` bytes (head or tail)."""

    def __init__(self, fd: int, limit: int, keep: str = "head") -> None:
        super().__init__(daemon=True)
        self.fd, self.limit, self.keep = fd, limit, keep
        self.data = bytearray()
        self.overflow = False

    def run(self) -> None:
        with os.fdopen(self.fd, "rb", buffering=0) as f:
            while chunk := f.read(65536):
                self.data += chunk
                if len(self.data) > self.limit:
                    self.overflow = True
                    if self.keep == "head":
                        del self.data[self.limit + 1:]
                    else:
                        del self.data[:len(self.data) - self.limit]


@dataclass
class ChildResult:
    """What one child run left: its exit status, the report pipe's bytes, its output tail."""

    returncode: int | None
    report: bytes
    report_overflow: bool
    output: str
    timed_out: bool
    seconds: float


def run_child(cmd_after_fd, cwd: Path, env: dict[str, str], iso: Isolation,
              timeout: float, report_limit: int = junit.MAX_REPORT_BYTES) -> ChildResult:
    """Run one child with a report pipe; ``cmd_after_fd(fd)`` builds the command line.

    The child gets the pipe's write end as an inherited descriptor, its own session,
    resource limits, and (when ``iso.user``) the unprivileged user's ids. On timeout the
    whole session is killed (and every process of the dedicated user).
    """
    r, w = os.pipe()
    if iso.uid is not None:
        os.fchown(w, iso.uid, iso.gid)  # so the child can reopen /dev/fd/N after the switch
    out_r, out_w = os.pipe()
    kwargs = {}
    if iso.uid is not None:
        kwargs = {"user": iso.uid, "group": iso.gid, "extra_groups": []}
    start = time.monotonic()
    try:
        proc = subprocess.Popen(cmd_after_fd(w), cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out_w,
                                stderr=subprocess.STDOUT, pass_fds=(w,), start_new_session=True,
                                preexec_fn=_limits(iso), **kwargs)
    finally:
        os.close(w)
        os.close(out_w)
    report, output = _Reader(r, report_limit, "head"), _Reader(out_r, OUTPUT_TAIL, "tail")
    report.start()
    output.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if iso.kill_user and iso.uid is not None:
            _kill_user_processes(iso.uid)
        proc.wait()
    report.join(timeout=10)
    output.join(timeout=10)
    return ChildResult(None if timed_out else proc.returncode, bytes(report.data), report.overflow,
                       bytes(output.data).decode("utf-8", "replace"), timed_out, time.monotonic() - start)


# -- working folders ------------------------------------------------------------------------
def _copy_package(src: Path, dest: Path) -> None:
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"), dirs_exist_ok=True)


def _open_up(path: Path) -> None:
    """Folders 0755, files 0644 (readable by the unprivileged user, writable by no one else)."""
    for dirpath, dirnames, filenames in os.walk(path):
        os.chmod(dirpath, 0o755)
        for name in filenames:
            os.chmod(Path(dirpath) / name, 0o644)


CANARY_TEMPLATE = '''

def {name}():  # grading control test: must fail with its message (see grading/runner.py)
    raise AssertionError("{nonce}")
'''


@dataclass
class Tree:
    """A child's working folder."""

    root: Path
    canaries: dict[str, str] = field(default_factory=dict)  # node id -> nonce
    test_files: set[str] = field(default_factory=set)


def build_tree(root: Path, course: Path, overlay: dict[str, Path], test_sources: list[tuple[Path, str]],
               iso: Isolation, canary: bool = True, extra_files: dict[str, bytes] | None = None) -> Tree:
    """A fresh working folder: the course's lab packages with the learner's files over them,
    the grading plugin, the given test folders (``(source folder, relative path)``) and
    ``extra_files`` (relative path -> bytes: the hidden tests, held in memory), each test
    file with a control test appended."""
    root.mkdir(parents=True)
    for package in catalog.LAB_PACKAGES:
        if (course / package).is_dir():
            _copy_package(course / package, root / package)
    for rel, src in overlay.items():
        shutil.copyfile(src, root / rel)
    _copy_package(course / "tests" / "grading", root / "tests" / "grading")
    tree = Tree(root)
    for rel, data in (extra_files or {}).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    dirs = [rel for _, rel in test_sources] + sorted({str(Path(rel).parent) for rel in extra_files or {}})
    for src, rel in test_sources:
        _copy_package(src, root / rel)
    for rel in dirs:
        for path in sorted((root / rel).rglob("test_*.py")):
            relpath = path.relative_to(root).as_posix()
            tree.test_files.add(relpath)
            if canary:
                name = f"test_{secrets.token_hex(6)}"
                nonce = secrets.token_hex(16)
                with open(path, "a", encoding="utf-8") as f:
                    f.write(CANARY_TEMPLATE.format(name=name, nonce=nonce))
                tree.canaries[f"{relpath}::{name}"] = nonce
    for sub in ("home", "tmp"):
        (root / sub).mkdir()
    _open_up(root)
    if iso.uid is not None:
        for sub in ("home", "tmp"):
            os.chown(root / sub, iso.uid, iso.gid)
            os.chmod(root / sub, 0o700)
    return tree


def child_env(tree: Path, python: str) -> dict[str, str]:
    """The children's whole environment: nothing of the grader's own is passed on."""
    path = os.pathsep.join(dict.fromkeys([str(Path(python).parent), "/usr/local/bin", "/usr/bin", "/bin"]))
    return {
        "PATH": path,
        "HOME": str(tree / "home"),
        "TMPDIR": str(tree / "tmp"),
        "PYTHONPATH": os.pathsep.join([str(tree), str(tree / "tests")]),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONNOUSERSITE": "1",
        "PYTHONHASHSEED": "0",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": str(tree / "tmp" / "matplotlib"),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
    }


def pytest_command(python: str, tree: Path, paths: list[str]):
    """The child's pytest command line, given the report descriptor."""
    def build(fd: int) -> list[str]:
        return [python, "-s", "-m", "pytest", "-c", os.devnull, "--rootdir", str(tree),
                "-p", "pytest_timeout", "-p", "grading.plugin", "--grade-guard", "--noconftest",
                "--continue-on-collection-errors", "-p", "no:cacheprovider", "-o", "junit_family=xunit1",
                "-o", "junit_logging=no", f"--junitxml=/dev/fd/{fd}", "-q", "--tb=short", *paths]
    return build


# -- the learner's files --------------------------------------------------------------------
@dataclass
class FileProblem:
    """A learner file that is not used as submitted: why, and the parts it costs."""

    expected: str
    parts: tuple[str, ...]
    message: str


def _public_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return {n for n in names if not n.startswith("_")}


def compile_check(path: Path, rel: str, course_file: Path | None = None) -> str | None:
    """Compile (never run) a learner file, and check that it still defines every public
    top-level name of the course's version (the rest of the package imports them).

    Returns:
        The problem as ``rel:line: message``, or None.
    """
    try:
        source = path.read_text(encoding="utf-8")
        compile(source, rel, "exec", dont_inherit=True)
        tree = ast.parse(source)
    except SyntaxError as exc:
        return f"{rel}:{exc.lineno}: {type(exc).__name__}: {exc.msg}"
    except (ValueError, RecursionError, MemoryError, UnicodeDecodeError) as exc:
        return f"{rel}: does not compile: {type(exc).__name__}: {str(exc)[:200]}"
    if course_file is not None and course_file.is_file():
        missing = sorted(_public_names(ast.parse(course_file.read_text(encoding="utf-8"))) - _public_names(tree))
        if missing:
            return (f"{rel}: does not define {', '.join(missing[:8])}{' ...' if len(missing) > 8 else ''} "
                    "(the course's version does, and the rest of the package uses them)")
    return None


def suspicious_words(text: str, course_text: str = "") -> list[str]:
    """The :data:`SUSPICIOUS` words in the lines of ``text`` that ``course_text`` (the
    student edition's version of the file) does not have."""
    known = {ln.strip() for ln in course_text.splitlines()}
    added = "\n".join(ln for ln in text.splitlines() if ln.strip() not in known)
    return sorted({m.group(0) for m in SUSPICIOUS.finditer(added)})


def probe_imports(python: str, course: Path, overlay: dict[str, Path], learner: dict[str, tuple[str, ...]],
                  base: Path, iso: Isolation) -> dict[str, str]:
    """Import the learner's files in children until every one imports; returns
    {file: "file:line: error"} for each file that had to be replaced by its stub
    (removed from ``overlay`` in place)."""
    blamed: dict[str, str] = {}
    for attempt in range(len(overlay) + 1):
        if not overlay:
            break
        tree = build_tree(base / f"probe-{attempt}", course, overlay, [], iso, canary=False)
        files = [rel for rel in learner if rel in overlay]
        result = run_child(lambda fd: [python, "-s", "-m", "grading.probe", str(fd), *files],
                           tree.root, child_env(tree.root, python), iso, PROBE_TIMEOUT_S, report_limit=1 << 20)
        shutil.rmtree(tree.root, ignore_errors=True)
        new: dict[str, str] = {}
        started, finished = None, set()
        for line in result.report.decode("utf-8", "replace").splitlines():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            if not isinstance(rec, dict):
                continue
            if "start" in rec:
                started = rec["start"]
            elif "ok" in rec:
                finished.add(rec["ok"])
            elif "fail" in rec:
                finished.add(rec["fail"])
                blame = rec.get("blame") if rec.get("blame") in overlay else rec["fail"]
                if blame in overlay and blame not in new:
                    line_no = rec.get("line")
                    where = f"{blame}:{line_no}" if isinstance(line_no, int) else blame
                    new[blame] = f"{where}: {str(rec.get('error', 'import failed'))[:300]}"
        if started is not None and started not in finished and started in overlay:
            why = "did not finish importing" if result.timed_out else "stopped the interpreter while importing"
            new[started] = f"{started}: {why} (within {PROBE_TIMEOUT_S:g} s)"
        if not new:
            break
        for rel, message in new.items():
            blamed[rel] = message
            overlay.pop(rel, None)
    return blamed


# -- scores -----------------------------------------------------------------------------
@dataclass
class TestOutcome:
    """One graded test (or parametrized case) as scored by this process."""

    test: catalog.DeclaredTest
    number: str
    name: str
    status: str  # passed | failed
    score: float
    output: str

    def to_gradescope(self) -> dict:
        """An entry of results.json's ``tests``."""
        return {
            "name": self.name,
            "number": self.number,
            "score": round(self.score, 4),
            "max_score": self.test.points,
            "status": self.status,
            "output": self.output[:_TEST_OUTPUT_LIMIT],
            "tags": [self.test.part],
            "visibility": self.test.visibility,
            "extra_data": {"nodeid": self.test.nodeid, "part": self.test.part, "hidden": self.test.hidden},
        }


def _first_lines(text: str, n: int = 6) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return "\n".join(lines[:n])


def _case_message(case: junit.CaseResult) -> str:
    message = case.message.strip() or _first_lines(case.details, 3)
    if case.outcome == "skipped":
        return f"skipped: {message}"
    if "Timeout" in message and ("pytest-timeout" in case.details or message.startswith("Failed: Timeout")):
        message = f"{message.splitlines()[0]} (an endless loop in your code?)"
    return message


@dataclass
class RunScore:
    """Scores of one child run, and what the grader noticed about it."""

    outcomes: list[TestOutcome]
    notes: list[str]
    counts: dict[str, int]


def score_run(tests: list[catalog.DeclaredTest], tree: Tree, child: ChildResult,
              part_notes: dict[str, list[str]], label: str) -> RunScore:
    """Score the declared ``tests`` from the child's report (see the module docstring)."""
    notes: list[str] = []
    trusted_error: str | None = None
    report: junit.Report | None = None
    if child.report_overflow:
        trusted_error = f"the test report was larger than {junit.MAX_REPORT_BYTES} bytes"
    else:
        try:
            report = junit.parse(child.report, tree.test_files | set(tree.canaries))
        except junit.ReportError as exc:
            trusted_error = str(exc)
    cases: dict[str, list[junit.CaseResult]] = {}
    collection_errors: dict[str, str] = {}
    if report is not None:
        for case in report.cases:
            if case.outcome == "collection-error":
                collection_errors[case.nodeid] = _collection_message(case)
                continue
            base = case.nodeid.split("[")[0]
            cases.setdefault(base, []).append(case)
        for nodeid, nonce in tree.canaries.items():
            file = nodeid.split("::")[0]
            got = cases.pop(nodeid, [])
            if file in collection_errors and not got:
                continue
            if len(got) != 1 or got[0].outcome != "failed" or nonce not in (got[0].message + got[0].details):
                trusted_error = ("a control test that must fail was reported as "
                                 f"{got[0].outcome if got else 'missing'}: the report was tampered with")
                break
    guard = [ln.strip() for ln in child.output.splitlines() if ln.startswith("grading guard:")]
    if guard:
        trusted_error = f"{guard[0][:300]} (the grader's guard stopped the run)"
    if child.timed_out:
        notes.append(f"{label}: stopped after {CHILD_TIMEOUT_S:g} s")
    if trusted_error:
        notes.append(f"{label}: report not trusted: {trusted_error}")
    counts = {"passed": 0, "failed": 0, "skipped": 0, "not run": 0}
    outcomes: list[TestOutcome] = []
    declared = {t.nodeid for t in tests}
    for t in tests:
        prefix = "".join(f"{n}\n" for n in part_notes.get(t.part, []))
        got = [] if trusted_error else cases.get(t.nodeid, [])
        if not got:
            file = t.file
            if trusted_error:
                why = f"not scored: {trusted_error}"
            elif file in collection_errors:
                why = f"did not run: {file} failed to import: {collection_errors[file]}"
            elif child.timed_out:
                why = f"did not run: the test run was stopped after {CHILD_TIMEOUT_S:g} s"
            else:
                why = "did not run (the test run ended early)"
            counts["not run"] += 1
            outcomes.append(TestOutcome(t, t.number, t.title, "failed", 0.0, prefix + why))
            continue
        for k, case in enumerate(got, start=1):
            number = f"{t.number}.{k}" if t.parametrized else t.number
            name = t.title + (f" [{case.nodeid.split('[', 1)[1][:-1]}]" if "[" in case.nodeid else "")
            passed = case.outcome == "passed"
            fraction = 1.0 if passed else 0.0
            credit = case.properties.get("partial_credit")
            message = "passed" if passed else _case_message(case)
            if credit is not None:
                try:
                    value = float(credit)
                except ValueError:
                    value = math.nan
                if 0.0 <= value <= 1.0:
                    fraction = value
                    if value not in (0.0, 1.0):
                        message = f"partial credit {value:.0%}. {'' if passed else message}".strip()
            counts["passed" if passed else "skipped" if case.outcome == "skipped" else "failed"] += 1
            outcomes.append(TestOutcome(t, number, name, "passed" if passed else "failed",
                                        t.points * fraction, prefix + message))
    if report is not None and not trusted_error:
        unknown = sorted({c.nodeid for cs in cases.values() for c in cs if c.nodeid.split("[")[0] not in declared})
        if unknown:
            notes.append(f"{label}: the report names tests the course does not declare (ignored): {unknown[:5]}")
        n_canary = len(tree.canaries) - sum(1 for c in tree.canaries if c.split("::")[0] in collection_errors)
        counts["pytest"] = {"tests": report.tests - n_canary, "failures": report.failures - n_canary,
                            "errors": report.errors, "skipped": report.skipped,
                            "collection errors": len(collection_errors)}
    return RunScore(outcomes, notes, counts)


def _collection_message(case: junit.CaseResult) -> str:
    lines = [ln.strip() for ln in case.details.splitlines() if ln.strip()]
    errors = [ln[1:].strip() for ln in lines if ln.startswith("E ")]
    where = [ln for ln in lines if re.match(r"^\S+\.py:\d+: in ", ln)]
    text = errors[-1] if errors else (lines[-1] if lines else case.message)
    return f"{text}" + (f" (at {where[-1].split(': in ')[0]})" if where else "")


# -- the whole grading --------------------------------------------------------------------
@dataclass
class Grading:
    """Everything one grading produced."""

    results: dict
    outcomes: list[TestOutcome]
    notes: list[str]


def _pts(x: float) -> str:
    return f"{x:g}" if abs(x - round(x, 2)) < 1e-9 else f"{x:.2f}"


def points_table(outcomes: list[TestOutcome], written: list[catalog.WrittenQuestion]) -> list[str]:
    """Rows per part: tests, passed, points (of the given outcomes), and written points."""
    rows: dict[str, list[float]] = {}
    for o in outcomes:
        row = rows.setdefault(o.test.part, [0, 0, 0.0, 0.0])
        row[0] += 1
        row[1] += o.status == "passed"
        row[2] += o.score
        row[3] += o.test.points
    by_part: dict[str, float] = {}
    for q in written:
        by_part[q.part] = by_part.get(q.part, 0.0) + q.points
    lines = [f"{'part':<6}{'tests':>7}{'passed':>8}{'points':>12}   written (by hand)"]
    for part in sorted(set(rows) | set(by_part), key=lambda p: (int(re.match(r'\d+', p).group()), p)):
        n, ok, score, top = rows.get(part, [0, 0, 0.0, 0.0])
        extra = f"   {_pts(by_part[part])} pts" if part in by_part else ""
        lines.append(f"{part:<6}{n:>7}{ok:>8}{_pts(score):>9} / {_pts(top):<5}{extra}")
    n = len(outcomes)
    ok = sum(o.status == "passed" for o in outcomes)
    score = sum(o.score for o in outcomes)
    top = sum(o.test.points for o in outcomes)
    manual = sum(q.points for q in written)
    lines.append(f"{'total':<6}{n:>7}{ok:>8}{_pts(score):>9} / {_pts(top):<5}"
                 + (f"   {_pts(manual)} pts" if manual else ""))
    return lines


def _started_at() -> float:
    value = os.environ.get("GRADING_STARTED_AT")
    try:
        return float(value) if value else _process_start()
    except ValueError:
        return _process_start()


def _process_start() -> float:
    """Wall-clock time this process started (Linux /proc), else now."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return time.time() - uptime + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return time.time()


def read_hidden(hidden: Path) -> dict[str, bytes]:
    """The hidden test files under ``hidden/tests/hidden/`` as {relative path: bytes} (bounded)."""
    out: dict[str, bytes] = {}
    base = hidden / HIDDEN_DIR
    for path in sorted(base.rglob("*.py")) if base.is_dir() else []:
        if "__pycache__" in path.parts:
            continue
        if path.stat().st_size > catalog.MAX_SOURCE_BYTES or len(out) >= 1000:
            raise SystemExit(f"error: {path}: hidden tests larger than expected")
        out[path.relative_to(hidden).as_posix()] = path.read_bytes()
    return out


def grade(course: Path, submission: Path, hidden: Path | dict[str, bytes] | None, *, python: str = sys.executable,
          isolation: Isolation | None = None, work_base: Path | None = None,
          started_at: float | None = None, submission_problem: str | None = None) -> Grading:
    """Grade an unpacked submission folder against a student edition (see the module docstring).

    Args:
        course: student edition root (lab packages, tests/grading, graded test folders, labs/).
        submission: folder with the learner's files (any layout :mod:`grading.layout` accepts).
        hidden: folder holding ``tests/hidden/``, or those files already read
            (:func:`read_hidden`), or None for no hidden tests.
        python: interpreter for the children.
        isolation: who the children run as (default: :func:`choose_isolation` ``auto``).
        work_base: where the working folders go (default: the system temp folder).
        started_at: wall-clock start for ``execution_time`` (default: $GRADING_STARTED_AT or
            this process's start).
        submission_problem: why the submission could not be unpacked (shown to the learner).
    """
    started = _started_at() if started_at is None else started_at
    iso = isolation or choose_isolation("auto", python)
    notes = [iso.note]
    learner = catalog.learner_files(course)
    files = layout.list_files(submission)
    found = layout.resolve(submission, list(learner), files)
    part_notes: dict[str, list[str]] = {}
    visible_notes: list[str] = [submission_problem] if submission_problem else []
    overlay: dict[str, Path] = {}
    for rel, f in found.items():
        if f.ok:
            problem = compile_check(f.path, rel, course / rel)
            if problem:
                message = (f"{problem} -- graded with the unchanged student-edition file instead, so "
                           f"part(s) {', '.join(learner[rel])} lose what needs it")
            else:
                overlay[rel] = f.path
                if f.how in ("nested", "loose"):
                    notes.append(f.message())
                words = suspicious_words(f.path.read_text(encoding="utf-8"),
                                         (course / rel).read_text(encoding="utf-8"))
                if words:
                    notes.append(f"{rel}: mentions {', '.join(words)} (review by hand)")
                continue
        else:
            message = f"{f.message()}; part(s) {', '.join(learner[rel])} score 0 for what needs it"
        visible_notes.append(message)
        for part in learner[rel]:
            part_notes.setdefault(part, []).append(message)
    used = {f.path.relative_to(submission).as_posix() for f in found.values() if f.path is not None}
    ignored = [p.as_posix() for p in files if p.as_posix() not in used]
    if ignored:
        notes.append(f"files in the submission not used for grading: {', '.join(ignored[:20])}"
                     + (" ..." if len(ignored) > 20 else ""))
    base = Path(tempfile.mkdtemp(prefix="grading-", dir=work_base))
    os.chmod(base, 0o755)
    try:
        for rel, message in probe_imports(python, course, overlay, learner, base, iso).items():
            message = (f"{message} -- this file does not import; graded with the unchanged student-edition "
                       f"file, so part(s) {', '.join(learner[rel])} lose what needs it")
            visible_notes.append(message)
            for part in learner[rel]:
                part_notes.setdefault(part, []).append(message)
        visible_tests = catalog.declared_tests([course / d for d in GRADED_DIRS], course)
        tree = build_tree(base / "visible", course, overlay,
                          [(course / d, d) for d in GRADED_DIRS if (course / d).is_dir()], iso)
        child = run_child(pytest_command(python, tree.root, sorted(d for d in GRADED_DIRS if (tree.root / d).is_dir())),
                          tree.root, child_env(tree.root, python), iso, CHILD_TIMEOUT_S)
        visible = score_run(visible_tests, tree, child, part_notes, "visible tests")
        shutil.rmtree(tree.root, ignore_errors=True)
        hidden_score = RunScore([], [], {})
        hidden_files = read_hidden(hidden) if isinstance(hidden, Path) else (hidden or {})
        if hidden_files:
            tree = build_tree(base / "hidden", course, overlay, [], iso, extra_files=hidden_files)
            hidden_tests = catalog.declared_tests([tree.root / HIDDEN_DIR], tree.root)
            child = run_child(pytest_command(python, tree.root, [HIDDEN_DIR]), tree.root,
                              child_env(tree.root, python), iso, CHILD_TIMEOUT_S)
            hidden_score = score_run(hidden_tests, tree, child, part_notes, "hidden tests")
            shutil.rmtree(tree.root, ignore_errors=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    notes += visible.notes + hidden_score.notes
    written = course_written_questions(course)
    outcomes = visible.outcomes + hidden_score.outcomes
    return Grading(results_document(visible.outcomes, hidden_score.outcomes, written, visible_notes, notes,
                                    {"visible": visible.counts, "hidden": hidden_score.counts},
                                    submission, started),
                   outcomes, notes)


def course_written_questions(course: Path) -> list[catalog.WrittenQuestion]:
    """Written questions of the course's lab notebooks (``labs/*.ipynb``)."""
    out = []
    for nb in sorted((course / "labs").glob("*.ipynb")):
        out += catalog.written_questions(nb, nb.relative_to(course).as_posix())
    return out


WRITTEN_ANSWERS_FILE = "written_answers.html"


def results_document(visible: list[TestOutcome], hidden: list[TestOutcome], written: list[catalog.WrittenQuestion],
                     visible_notes: list[str], notes: list[str], counts: dict, submission: Path,
                     started: float) -> dict:
    """The Gradescope results document (see the module docstring for what is visible)."""
    lines = ["Autograded points of the visible tests:"] + points_table(visible, written)
    if hidden:
        lines.append(f"Hidden tests: {len(hidden)} more tests of the same parts; their results and points "
                     "appear when grades are published.")
    if written:
        present = any(p.name == WRITTEN_ANSWERS_FILE for p in submission.rglob(WRITTEN_ANSWERS_FILE))
        lines.append(f"Written answers: {len(written)} questions, {_pts(sum(q.points for q in written))} points, "
                     f"graded by hand; {WRITTEN_ANSWERS_FILE} "
                     + ("found in the submission." if present else
                        "NOT found in the submission (make submission writes it)."))
    if visible_notes:
        lines.append("Problems with the submitted files:")
        lines += [f"  {n}" for n in visible_notes]
    elapsed = max(0.0, time.time() - started)
    tests = [o.to_gradescope() for o in visible + hidden]
    tests.append({
        "name": "Grader notes (instructors only)",
        "number": "0.0",
        "score": 0.0,
        "max_score": 0.0,
        "status": "passed",
        "output": "\n".join(n for n in notes if n) + "\n" + json.dumps(counts, indent=1),
        "visibility": "hidden",
        "extra_data": {"counts": counts},
    })
    return {
        "score": round(sum(o.score for o in visible + hidden), 4),
        "execution_time": math.ceil(elapsed),
        "output": "\n".join(lines),
        "output_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
    }


def main(argv: list[str] | None = None) -> int:
    """Command line (see the module docstring); returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m grading.runner",
        description="Grade one submission against a student edition, running the learner's code only in "
                    "child processes, and write Gradescope's results.json.")
    parser.add_argument("--course", type=Path, required=True, help="student edition root")
    parser.add_argument("--submission", type=Path, required=True, help="the submission: a folder or a .zip")
    parser.add_argument("--results", type=Path, required=True, help="where to write results.json")
    parser.add_argument("--hidden", type=Path, help="folder holding tests/hidden/ (none: no hidden tests)")
    parser.add_argument("--hidden-consume", action="store_true",
                        help="read the hidden tests into memory and delete them from --hidden before any "
                             "learner code runs (run_autograder: /autograder is thrown away after each run)")
    parser.add_argument("--run-as", default="auto", metavar="auto|none|USER",
                        help="user the learner's code runs as (default auto: an unprivileged user when root)")
    parser.add_argument("--work-base", type=Path, help="where working folders go (default: system temp)")
    parser.add_argument("--python", default=sys.executable, help="interpreter for the child processes")
    args = parser.parse_args(argv)
    started = _started_at()
    hidden: dict[str, bytes] | None = None
    if args.hidden is not None:
        hidden = read_hidden(args.hidden)
        if args.hidden_consume:  # nothing left on disk for the visible run's code to find
            shutil.rmtree(args.hidden / HIDDEN_DIR.split("/")[0], ignore_errors=True)
    with tempfile.TemporaryDirectory(prefix="submission-", dir=args.work_base) as tmp:
        unpacked = Path(tmp) / "submission"
        problem = None
        try:
            layout.unpack(args.submission, unpacked)
        except layout.SubmissionError as exc:
            problem = f"the submission could not be unpacked: {exc}"
            shutil.rmtree(unpacked, ignore_errors=True)
            unpacked.mkdir(parents=True)
        iso = choose_isolation(args.run_as, args.python)
        result = grade(args.course.resolve(), unpacked, hidden,
                       python=args.python, isolation=iso, work_base=args.work_base, started_at=started,
                       submission_problem=problem)
    args.results.parent.mkdir(parents=True, exist_ok=True)
    result.results["execution_time"] = math.ceil(max(0.0, time.time() - started))
    tmp_out = args.results.with_name(args.results.name + ".tmp")
    tmp_out.write_text(json.dumps(result.results, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp_out, args.results)
    print(result.results["output"])
    print(json.dumps({"score": result.results["score"], "notes": result.notes}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
