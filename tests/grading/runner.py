"""The autograder's grader: grade one submission so that no learner code can touch the score.

Used by the Gradescope autograder (``run_autograder``, built by tools/make_autograder.py)
and by batch grading (tools/grade_submissions.py)::

    python -m grading.runner --course COURSE --submission SUB --results results.json \\
        [--hidden HIDDEN] [--run-as auto|none|USER|uid:N] [--budget SECONDS] [--work-base DIR]

``COURSE`` is a student edition (no solutions: a missing learner file falls back to its
stub, never to a solution), ``HIDDEN`` a folder holding ``tests/hidden/``.

Design: no learner code ever runs in a process whose output decides the score.

- This process never imports learner code. It finds the expected files in the submission
  (:mod:`grading.layout`), compiles them (no code runs), and builds two kinds of trees in
  a fresh folder: the *learner's tree* (the course's lab packages with the learner's files
  over them; readable, not writable, by the learner's user) and, per run, a *trusted
  tree* (the course's lab packages as they are, the grading package and the tests; mode
  0700, so unreadable by the learner's user when this process is root).
- Learner code runs only in worker processes (:mod:`grading.worker`, started by
  :mod:`grading.sandbox`): as an unprivileged user when this process is root (learner
  code never runs as root unless ``--run-as none`` says so; if that user cannot run the
  interpreter, nothing of the submission runs and it is *not graded*: an infrastructure
  failure, never a grade, see :func:`_not_graded`), in new PID and network
  namespaces where the kernel allows, with resource limits; every process it starts is
  killed after each step.
- First a self-test imports the course's own files in a worker (the user switch and the
  interpreter work), then the import check imports the learner's files one by one: a file
  that does not import is reported with its path and line and replaced by its stub, so
  only the parts that need it lose points.
- The graded tests run in a trusted pytest process (this process's user) that imports only
  the trusted tree. The learner's functions there are proxies (:mod:`grading.proxy`) that
  call the worker and take back plain data only. Visible tests first, then the hidden
  tests in another trusted process with a fresh worker; the hidden tests are in no place
  the learner's user can read.
- Each trusted run writes pytest's JUnit XML report into its own tree; this process parses
  it (:mod:`grading.junit`) and scores exactly the declared tests (:mod:`grading.catalog`,
  :mod:`grading.scoring`):
  one case per test (the literal number of cases of a parametrized one), points from the
  course's own files, ``partial_credit`` only for tests that use that fixture, each part
  and the total capped at their maximum.
- Time: a budget for the whole grading (:data:`GRADING_BUDGET_S`, 8 minutes, under
  Gradescope's default 10-minute limit); each call of a learner function has a timeout and
  each test a budget of worker time (:data:`grading.proxy.TEST_BUDGET_S`); the hidden
  tests keep a reserve of the budget; when the budget runs out, the remaining tests fail
  at once with that message.
- ``results.json`` in Gradescope's format: hidden tests with visibility
  ``after_published``, a top-level output that counts only the visible tests; the
  instructors' notes go to stdout (``stdout_visibility: hidden``) and ``extra_data``.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from grading import catalog, junit, layout, sandbox, scoring

GRADED_DIRS = ("tests/lab01/graded", "tests/lab02/graded")
HIDDEN_DIR = catalog.HIDDEN_DIR
GRADING_BUDGET_S = 480.0
"""Wall-clock budget of one grading (s): under Gradescope's default 10-minute limit."""
SELF_TEST_TIMEOUT_S = 60.0
PROBE_TIMEOUT_S = 20.0
"""Longest the import check of the learner's files may take (one attempt)."""
PROBE_TOTAL_S = 60.0
"""Longest all attempts of the import check may take together."""
TRUSTED_GRACE_S = 60.0
"""How long a trusted pytest run may go past its deadline before it is stopped."""
TRUSTED_TEST_TIMEOUT_S = 30.0
"""pytest-timeout of each graded test in the trusted run (the course's own code; learner
calls have their own, shorter, limits)."""
START_RESERVE_S = 30.0
"""Time kept for starting the hidden tests' worker (part of their reserve of the budget)."""
SUSPICIOUS = re.compile(
    r"\b(_pytest|pluggy|pytest|grading|junitxml|ctypes|atexit|setsid|socket|urllib|requests|subprocess|"
    r"__builtins__|builtins)\b"
    r"|gc\.get_(?:objects|referrers|referents)|_getframe|os\.fork|sys\.modules|/dev/fd|/proc/|results\.json"
    r"|/autograder")
"""What the instructors' notes point out in the lines a learner added (nothing is refused for it)."""


# -- the learner's files --------------------------------------------------------------------
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
    except (ValueError, RecursionError, MemoryError, UnicodeDecodeError, OverflowError) as exc:
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


def probe_imports(config: sandbox.SandboxConfig, course: Path, learner: dict[str, tuple[str, ...]],
                  overlay: dict[str, Path], tree: Path, deadline: float) -> dict[str, str]:
    """Import the learner's files in workers until every one imports; returns {file: "file:line:
    error"} for each file that had to be replaced by its stub (put back in ``tree`` and
    removed from ``overlay`` in place)."""
    blamed: dict[str, str] = {}
    while overlay:
        left = deadline - time.monotonic()
        files = [rel for rel in learner if rel in overlay]
        if left <= 1:
            for rel in files:
                blamed[rel] = f"{rel}: not checked (the import check ran out of time)"
            break
        result = sandbox.probe(config, files, min(PROBE_TIMEOUT_S, left), reaper=True)
        new: dict[str, str] = {}
        for rec in result.records:
            if "fail" in rec:
                blame = rec.get("blame") if rec.get("blame") in overlay else rec["fail"]
                if blame in overlay and blame not in new:
                    line_no = rec.get("line")
                    where = f"{blame}:{line_no}" if type(line_no) is int else blame
                    new[blame] = f"{where}: {str(rec.get('error', 'import failed'))[:300]}"
        if result.error and result.started in overlay and result.started not in result.finished:
            new.setdefault(result.started, f"{result.started}: {result.error}")
        elif result.error and not new:  # the worker did not start at all: every file costs
            new = {rel: f"{rel}: {result.error}" for rel in files}
        if not new:
            break
        for rel, message in new.items():
            blamed[rel] = message
            overlay.pop(rel, None)
            shutil.copyfile(course / rel, tree / rel)
    return blamed


# -- trees and runs -------------------------------------------------------------------------
def _copy_package(src: Path, dest: Path) -> None:
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"), dirs_exist_ok=True)


def learner_tree(root: Path, course: Path) -> Path:
    """The course's lab packages (the student edition's), before the learner's files go over them."""
    root.mkdir(parents=True)
    for package in catalog.LAB_PACKAGES:
        if (course / package).is_dir():
            _copy_package(course / package, root / package)
    return root


def trusted_tree(root: Path, course: Path, test_dirs: list[str], extra_files: dict[str, bytes] | None = None) -> Path:
    """A trusted run's folder (mode 0700): the course's lab packages, the grading package,
    the given test folders and ``extra_files`` (relative path -> bytes: the hidden tests)."""
    root.mkdir(parents=True, mode=0o700)
    os.chmod(root, 0o700)
    for package in catalog.LAB_PACKAGES:
        if (course / package).is_dir():
            _copy_package(course / package, root / package)
    _copy_package(course / "tests" / "grading", root / "tests" / "grading")
    for rel in test_dirs:
        if (course / rel).is_dir():
            _copy_package(course / rel, root / rel)
    for rel, data in (extra_files or {}).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root


def draw_seed(files: dict[str, Path]) -> str:
    """The seed of the hidden tests' random draw (tests/hidden/test_hidden_bank.py): a
    digest of the learner's files, so that a regrade of the same files draws the same
    instances and another submission other ones."""
    digest = hashlib.sha256()
    for rel in sorted(files):
        digest.update(rel.encode() + b"\0" + files[rel].read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def run_trusted(python: str, tree: Path, paths: list[str], sandbox_config: sandbox.SandboxConfig,
                functions: list[catalog.LearnerFunction], phases: list[tuple[str, float]],
                seed: str = "0") -> scoring.RunResult:
    """Run the graded tests under ``paths`` (in that order) in a trusted pytest process in ``tree``.

    ``seed``: the hidden tests' draw (:func:`draw_seed`), as ``GRADING_DRAW_SEED``.

    ``phases``: ``(node id prefix, deadline)`` pairs (deadline: wall clock, time.time());
    the tests of each phase get a fresh worker and stop calling learner code at its
    deadline. The process is stopped :data:`TRUSTED_GRACE_S` after the last deadline.
    """
    config_path = tree / "sandbox.json"
    config_path.write_text(json.dumps({
        "sandbox": sandbox_config.to_json(),
        "functions": [[f.module, f.name] for f in functions],
        "limits": {"deadline": phases[0][1]},
        "phases": [list(p) for p in phases],
    }), encoding="utf-8")
    report = tree / "report.xml"
    home = tree / "home"
    home.mkdir(exist_ok=True)
    env = {"PATH": os.pathsep.join(dict.fromkeys([str(Path(python).parent), "/usr/local/bin", "/usr/bin", "/bin"])),
           "HOME": str(home), "TMPDIR": str(home), "PYTHONPATH": os.pathsep.join([str(tree), str(tree / "tests")]),
           "PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1", "PYTHONHASHSEED": "0",
           "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "MPLBACKEND": "Agg", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
           "GRADING_DRAW_SEED": seed}
    # --confcutdir: with ``-c /dev/null`` pytest would otherwise collect from /dev's parent,
    # /, down to the tree, and fail on a folder above it that this user cannot list
    cmd = [python, "-s", "-m", "pytest", "-c", os.devnull, "--rootdir", str(tree), "--confcutdir", str(tree),
           "-p", "pytest_timeout",
           "-p", "grading.plugin", "-p", "grading.proxy", f"--grade-sandbox={config_path}",
           f"--grade-timeout={TRUSTED_TEST_TIMEOUT_S:g}", "--noconftest", "--continue-on-collection-errors",
           "-p", "no:cacheprovider", "-o", "junit_family=xunit1", "-o", "junit_logging=no",
           f"--junitxml={report}", "-q", "--tb=short", *paths]
    start = time.monotonic()
    timeout = max(1.0, max(d for _, d in phases) - time.time()) + TRUSTED_GRACE_S
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(cmd, cwd=tree, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
        timed_out = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            proc.kill()
            proc.wait()
        sandbox.kill_children()
        if sandbox_config.uid is not None and sandbox_config.own_uid:
            sandbox.kill_uid(sandbox_config.uid, sandbox_config.gid)
        out.seek(0)
        output = out.read()[-64 * 1024:].decode("utf-8", "replace")
    data = report.read_bytes() if report.is_file() and report.stat().st_size <= junit.MAX_REPORT_BYTES else None
    problem = "" if data is not None else (
        "the test run was stopped past its deadline" if timed_out else
        f"the test run ended without a report (exit status {proc.returncode}): "
        + " | ".join(output.strip().splitlines()[-3:])[:500])
    return scoring.RunResult(data, None if timed_out else proc.returncode, output, timed_out,
                             time.monotonic() - start, problem)


# -- the whole grading --------------------------------------------------------------------
@dataclass
class Grading:
    """Everything one grading produced."""

    results: dict
    outcomes: list[scoring.TestOutcome]
    notes: list[str]
    private: dict = field(default_factory=dict)
    """For instructors only (stdout): the hidden tests' counts and pytest's figures of the whole run."""


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
    """The hidden test files under ``hidden/tests/hidden/`` (``*.py`` and the answer bank
    ``bank.json``) as {relative path: bytes} (bounded)."""
    out: dict[str, bytes] = {}
    base = hidden / HIDDEN_DIR
    for path in sorted([*base.rglob("*.py"), *base.glob("bank.json")]) if base.is_dir() else []:
        if "__pycache__" in path.parts:
            continue
        if path.stat().st_size > catalog.MAX_SOURCE_BYTES or len(out) >= 1000:
            raise SystemExit(f"error: {path}: hidden tests larger than expected")
        out[path.relative_to(hidden).as_posix()] = path.read_bytes()
    return out


def _declared_hidden(files: dict[str, bytes], base: Path) -> list[catalog.DeclaredTest]:
    """The hidden tests' declarations, read from a private copy (never run)."""
    tmp = base / "hidden-catalog"
    tmp.mkdir(mode=0o700)
    for rel, data in files.items():
        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp / rel).write_bytes(data)
    tests = catalog.declared_tests([tmp / HIDDEN_DIR], tmp)
    shutil.rmtree(tmp, ignore_errors=True)
    return tests


def _submission_messages(found: dict[str, layout.Found], files: list, submission: Path,
                         learner: dict[str, tuple[str, ...]]) -> list[str]:
    """Hints for common mistakes: helper files the autograder does not take, notebooks only."""
    used = {f.path.relative_to(submission).as_posix() for f in found.values() if f.path is not None}
    learner_names = {Path(rel).name for rel in learner}
    out = []
    helpers = [p.as_posix() for p in files if p.suffix == ".py" and p.as_posix() not in used
               and p.name not in learner_names and p.name != "__init__.py"
               and set(p.parts) & set(catalog.LAB_PACKAGES)]
    if helpers:
        out.append(f"{', '.join(helpers[:5])}: in your upload, but the autograder takes only the files that hold "
                   f"your code ({', '.join(sorted(learner))}); put your helper functions in those files")
    if not any(f.ok for f in found.values()) and any(p.suffix == ".ipynb" for p in files):
        out.append("your upload holds notebooks but none of the lab files: the autograder grades the code in the "
                   "lab package files (run `make submission` and upload submission.zip)")
    return out


def grade(course: Path, submission: Path, hidden: dict[str, bytes] | None, *, python: str = sys.executable,
          isolation: sandbox.Isolation | None = None, work_base: Path | None = None,
          started_at: float | None = None, submission_problem: str | None = None,
          budget: float = GRADING_BUDGET_S, worker_python: str | None = None,
          worker_path: list[str] | None = None, namespaces: bool = True,
          require_namespaces: bool = False) -> Grading:
    """Grade an unpacked submission folder against a student edition (see the module docstring).

    Args:
        course: student edition root (lab packages, tests/grading, graded test folders, labs/).
        submission: folder with the learner's files (any layout :mod:`grading.layout` accepts).
        hidden: the hidden test files (:func:`read_hidden`), or None.
        python: interpreter of the trusted pytest runs.
        isolation: who learner code runs as (default: :func:`grading.sandbox.choose_isolation` ``auto``).
        work_base: where the working folders go (default: the system temp folder).
        started_at: wall-clock start, for ``execution_time`` and the budget.
        submission_problem: why the submission could not be unpacked (shown to the learner).
        budget: wall-clock budget of the whole grading (s).
        worker_python, worker_path: interpreter and extra ``sys.path`` entries of learner
            processes (default: ``python``; it must be readable by the learner's user).
        namespaces: try PID and network namespaces for learner processes.
        require_namespaces: without them, grade nothing (not graded, with the kernel's reason).
    """
    started = _started_at() if started_at is None else started_at
    hard_end = started + budget
    iso = isolation or sandbox.choose_isolation("auto")
    notes = [iso.note] if iso.note else []
    learner = catalog.learner_files(course)
    functions = catalog.learner_functions(course)
    visible_tests = catalog.declared_tests([course / d for d in GRADED_DIRS], course)
    written = scoring.course_written_questions(course)
    base = Path(tempfile.mkdtemp(prefix="grading-", dir=work_base))
    os.chmod(base, 0o711)
    try:
        hidden_tests = _declared_hidden(hidden, base) if hidden else []
        if iso.mode == "refused":
            return _not_graded(visible_tests, hidden_tests, written, iso.refused, notes, submission, started)
        files = layout.list_files(submission)
        found = layout.resolve(submission, list(learner), files)
        part_notes: dict[str, list[str]] = {}
        visible_notes: list[str] = [submission_problem] if submission_problem else []
        if iso.partial:
            visible_notes.append(iso.partial)
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
        visible_notes += _submission_messages(found, files, submission, learner)
        used = {f.path.relative_to(submission).as_posix() for f in found.values() if f.path is not None}
        ignored = [p.as_posix() for p in files if p.as_posix() not in used]
        if ignored:
            notes.append(f"files in the submission not used for grading: {', '.join(ignored[:20])}"
                         + (" ..." if len(ignored) > 20 else ""))

        notes.append(f"time budget: {budget:g} s")
        timings: dict[str, float] = {}
        if not overlay:  # nothing of the learner's to run: every test scores 0 without running
            run = scoring.RunResult(None, None, "", False, 0.0, "no file of yours could be used, so nothing was run")
            return _scored(visible_tests, hidden_tests, run, part_notes, written, visible_notes, notes, timings,
                           submission, started)

        # the learner's tree: first the course's own files (the self-test), then the learner's over them
        tree = learner_tree(base / "learner", course)
        sandbox.prepare_tree(tree, iso)
        config = sandbox.make_config(iso, tree, base / "learner-home", worker_python or python, worker_path,
                                     namespaces)
        unreachable = sandbox.interpreter_problem(iso, config.python, config.path)
        if unreachable:
            return _not_graded(visible_tests, hidden_tests, written, f"the learner's interpreter cannot start: "
                               f"{unreachable}", notes, submission, started)
        mark = time.monotonic()
        check = sandbox.probe(config, list(learner), SELF_TEST_TIMEOUT_S, reaper=True)
        timings["self-test"] = time.monotonic() - mark
        failed = [r for r in check.records if "fail" in r]
        if check.error or failed or len(check.finished) != len(learner):
            why = check.error or (f"{failed[0]['fail']}: {failed[0].get('error')}" if failed else "incomplete")
            return _not_graded(visible_tests, hidden_tests, written, f"the course's own files do not import as "
                               f"{iso.user or 'the learner user'} with {config.python}: {why}", notes, submission,
                               started)
        boot = check.boot
        if require_namespaces and not boot.get("pidns"):
            return _not_graded(visible_tests, hidden_tests, written, "learner processes got no PID and network "
                               f"namespaces ({boot.get('why') or 'not available'}), which --require-namespaces "
                               "asks for", notes, submission, started)
        notes.append("learner processes: " + ("new PID and network namespaces (no network)" if boot.get("pidns")
                                              else f"no namespaces ({boot.get('why') or 'not available'})"))
        for rel, path in overlay.items():
            shutil.copyfile(path, tree / rel)
            os.chmod(tree / rel, 0o644)
        mark = time.monotonic()
        blamed = probe_imports(config, course, learner, overlay, tree,
                               time.monotonic() + min(PROBE_TOTAL_S, max(1.0, hard_end - time.time())))
        timings["import check"] = time.monotonic() - mark
        for rel, message in blamed.items():
            message = (f"{message} -- this file does not import; graded with the unchanged student-edition "
                       f"file, so part(s) {', '.join(learner[rel])} lose what needs it")
            visible_notes.append(message)
            for part in learner[rel]:
                part_notes.setdefault(part, []).append(message)

        # one trusted run: the visible tests, then the hidden ones with a fresh worker and a
        # reserve of the budget
        from grading import proxy  # here, not at the top: it imports pytest (0.5 s a grading that runs nothing)

        reserve = (len(hidden_tests) * proxy.TEST_BUDGET_S + START_RESERVE_S) if hidden_tests else 0.0
        ttree = trusted_tree(base / "trusted", course, list(GRADED_DIRS), hidden)
        paths = [d for d in GRADED_DIRS if (ttree / d).is_dir()] + ([HIDDEN_DIR] if hidden_tests else [])
        now = time.time()
        left = max(0.0, hard_end - now)
        phases = [("tests/", now + max(left / 2, left - reserve) if hidden_tests else hard_end)]
        if hidden_tests:
            phases.append((HIDDEN_DIR + "/", hard_end))
        seed = draw_seed(overlay)
        notes.append(f"hidden tests' draw seed: {seed}")
        run = run_trusted(python, ttree, paths, config, functions, phases, seed)
        shutil.rmtree(ttree, ignore_errors=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return _scored(visible_tests, hidden_tests, run, part_notes, written, visible_notes, notes, timings, submission,
                   started)


def _scored(visible_tests: list[catalog.DeclaredTest], hidden_tests: list[catalog.DeclaredTest],
            run: scoring.RunResult,
            part_notes: dict[str, list[str]], written: list[catalog.WrittenQuestion], visible_notes: list[str],
            notes: list[str], timings: dict[str, float], submission: Path, started: float) -> Grading:
    """The grading of one trusted run: visible and hidden outcomes apart."""
    timings["tests"] = run.seconds
    scored = scoring.score_run(visible_tests + hidden_tests, run, part_notes, "tests",
                       {t.file for t in visible_tests + hidden_tests})
    shown = [o for o in scored.outcomes if not o.test.hidden]
    kept = [o for o in scored.outcomes if o.test.hidden]
    notes = notes + scored.notes + ["timings: " + ", ".join(f"{k} {v:.1f} s" for k, v in timings.items())]
    doc = scoring.results_document(shown, kept, written, visible_notes, notes, scoring.counts(shown), submission,
                                   started)
    return Grading(doc, shown + kept, notes,
                   {"hidden": scoring.counts(kept), "pytest": scored.counts.get("pytest", {})})


NOT_GRADED_MESSAGE = ("The autograder could not start a safe process for your code, so it did not run it and "
                      "this is not a grade. Please tell your instructor.")
NOT_GRADED_FIX = ("fix: as root, give an interpreter that the learner's user can run (--worker-python PATH, with "
                  "--worker-path for its packages; tools/grade_submissions.py makes one itself when not given "
                  "--worker-python), or install the course where every user can read it; for namespaces, grade "
                  "where unshare(2) is allowed (not in a container that forbids it) or without "
                  "--require-namespaces")
"""How to fix a grading that could not start (the grader's notes and the batch's terminal)."""


def _not_graded(visible: list[catalog.DeclaredTest], hidden: list[catalog.DeclaredTest],
                written: list[catalog.WrittenQuestion], cause: str, notes: list[str], submission: Path,
                started: float) -> Grading:
    """An infrastructure failure, not a grade: no learner code was run. Every test says so
    (score 0, as Gradescope needs a score), ``extra_data.not_graded`` holds the one-line
    cause and the fix, the grader exits with status :data:`EXIT_NOT_GRADED`, and batch
    grading leaves the row's score empty."""
    v = [scoring.TestOutcome(t, t.number, t.title, "failed", 0.0, NOT_GRADED_MESSAGE, "not run") for t in visible]
    h = [scoring.TestOutcome(t, t.number, t.title, "failed", 0.0, NOT_GRADED_MESSAGE, "not run") for t in hidden]
    line = f"not graded: {cause}; {NOT_GRADED_FIX}"
    doc = scoring.results_document(v, h, written, [NOT_GRADED_MESSAGE], notes + [line], {}, submission, started)
    doc["extra_data"]["not_graded"] = line
    return Grading(doc, v + h, notes + [line])


EXIT_NOT_GRADED = 3
"""The grader's exit status when the submission was not graded (the sandbox could not start)."""


def main(argv: list[str] | None = None) -> int:
    """Command line (see the module docstring); returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m grading.runner",
        description="Grade one submission against a student edition: the graded tests run in a trusted pytest "
                    "process, the learner's functions in an isolated worker; write Gradescope's results.json.")
    parser.add_argument("--course", type=Path, required=True, help="student edition root")
    parser.add_argument("--submission", type=Path, required=True, help="the submission: a folder or a .zip")
    parser.add_argument("--results", type=Path, required=True, help="where to write results.json")
    parser.add_argument("--hidden", type=Path, help="folder holding tests/hidden/ (none: no hidden tests)")
    parser.add_argument("--hidden-consume", action="store_true",
                        help="read the hidden tests into memory and delete them from --hidden before any "
                             "learner code runs (run_autograder: /autograder is thrown away after each run)")
    parser.add_argument("--run-as", default="auto", metavar="auto|none|USER|uid:N",
                        help="who learner code runs as (default auto: as root, course-learner or a transient uid; "
                             "not root, the grader's own user); 'none' as root runs it as root")
    parser.add_argument("--budget", type=float, default=GRADING_BUDGET_S,
                        help=f"wall-clock budget of the grading in seconds (default {GRADING_BUDGET_S:g})")
    parser.add_argument("--work-base", type=Path, help="where working folders go (default: system temp)")
    parser.add_argument("--python", default=sys.executable, help="interpreter of the trusted test runs")
    parser.add_argument("--worker-python", help="interpreter of learner processes (default: --python)")
    parser.add_argument("--worker-path", action="append", default=[],
                        help="extra sys.path entry of learner processes (repeatable)")
    parser.add_argument("--no-namespaces", action="store_true", help="do not try PID/network namespaces")
    parser.add_argument("--require-namespaces", action="store_true",
                        help="grade nothing (not graded) when learner processes cannot get PID and network namespaces")
    args = parser.parse_args(argv)
    started = _started_at()
    sandbox.become_subreaper()
    hidden: dict[str, bytes] | None = None
    if args.hidden is not None:
        hidden = read_hidden(args.hidden)
        if args.hidden_consume:  # nothing left on disk for learner code to find
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
        iso = sandbox.choose_isolation(args.run_as)
        try:
            result = grade(args.course.resolve(), unpacked, hidden, python=args.python, isolation=iso,
                           work_base=args.work_base, started_at=started, submission_problem=problem,
                           budget=args.budget, worker_python=args.worker_python, worker_path=args.worker_path,
                           namespaces=not args.no_namespaces, require_namespaces=args.require_namespaces)
        except Exception as exc:  # noqa: BLE001 - a grader bug: say so on Gradescope, details for instructors
            import traceback

            traceback.print_exc(file=sys.stdout)
            message = (f"The autograder failed ({type(exc).__name__}: {str(exc)[:300]}) and gave no score. "
                       "Please tell your instructor.")
            cause = f"not graded: the grader failed ({type(exc).__name__}: {str(exc)[:300]})"
            result = Grading({"score": 0.0, "execution_time": 0, "output": message, "output_format": "text",
                              "visibility": "visible", "stdout_visibility": "hidden", "tests": [],
                              "extra_data": {"not_graded": cause}}, [], [message])
    sandbox.kill_children()
    args.results.parent.mkdir(parents=True, exist_ok=True)
    result.results["execution_time"] = math.ceil(max(0.0, time.time() - started))
    tmp_out = args.results.with_name(args.results.name + ".tmp")
    tmp_out.write_text(json.dumps(result.results, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp_out, args.results)
    print(result.results["output"])
    print("Grader notes (instructors only):")
    for note in result.notes:
        print(f"  {note}")
    print("hidden tests and pytest's own counts (visible + hidden): " + json.dumps(result.private))
    print(json.dumps({"score": result.results["score"]}))
    not_graded = (result.results.get("extra_data") or {}).get("not_graded")
    if not_graded:
        print(f"error: {not_graded}", file=sys.stderr)
        return EXIT_NOT_GRADED
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
