"""pytest plugin that grades the labs: points per test, a points table and Gradescope results.

Loaded from ``tests/conftest.py`` (``pytest_plugins = ["grading.plugin"]``).

Writing a graded test::

    @pytest.mark.points(2, part="1B", number="1B.1")
    def test_first_fit_strands_gpus():
        \"\"\"First-fit leaves 4 GPUs stranded on the textbook sequence.\"\"\"  # shown to learners
        ...

    @pytest.mark.points(4, part="2C")
    def test_mig_names(partial_credit):
        cases = [...]
        ok = sum(check(c) for c in cases)
        partial_credit(ok / len(cases))   # the share of the points kept if the test fails
        assert ok == len(cases)

- ``points(value, *, part, number=None, visibility="visible")``: ``value`` > 0 points;
  ``part`` like ``"1A"`` (lab number, then a letter); ``number`` like ``"1A.2"`` (default:
  the part followed by the test's position among that part's tests); each case of a
  parametrized test is worth ``value`` and numbered ``1A.2.1``, ``1A.2.2``...; ``visibility`` as in
  Gradescope (``visible``, ``hidden``, ``after_due_date``, ``after_published``; tests under
  ``tests/hidden/`` default to ``after_published``).
- Every graded test gets a pytest-timeout marker (``--grade-timeout``, default 60 s) unless
  it has its own, so an endless loop in learner code costs that test only.
- Each graded test starts with Python's ``random`` and numpy's global generator seeded (0);
  the project's own code draws from explicit seeded Generators.
- Score of a test: all its points when it passes, none when it fails or is skipped, unless
  the test called ``partial_credit(fraction)``: then ``fraction`` x points either way.

``pytest --grade``:

1. restores the course's test files from ``tests/grading/manifest.json`` (see
   :mod:`grading.manifest`) and reports every file a learner changed;
2. collects the graded folders (``tests/lab01/graded``, ``tests/lab02/graded`` and, when
   present, ``tests/hidden``) unless paths are given, and deselects tests without points;
   a graded file that fails to import does not stop the run: its tests score 0;
   ``--grade-part=1`` (or ``=1A``; repeatable) keeps the parts whose id starts with it;
3. prints a points table per part and writes ``results.json`` (``--grade-json PATH``) in
   Gradescope's autograder format (https://gradescope-autograders.readthedocs.io/en/latest/specs/),
   checked by ``results.schema.json``; ``--grade-json=`` (empty) writes none, for a caller
   that scores the run itself from pytest's report (``tests/grading/local.py``).

Write option values with ``=`` (``--grade-json=PATH``): this plugin is loaded from
``tests/conftest.py``, and pytest determines its rootdir from the command line before that,
taking a separate existing ``PATH`` for a test path.

Ordinary test runs (without ``--grade``) run graded tests as plain tests, with their timeout.
"""

from __future__ import annotations

import ast
import json
import math
import os
import random
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from grading import manifest as manifest_mod
from grading.catalog import declared_tests

DEFAULT_TIMEOUT_S = 60.0
"""Per-test timeout (s) applied to graded tests without a ``timeout`` marker."""

GRADED_DIRS = ("tests/lab01/graded", "tests/lab02/graded")
HIDDEN_DIR = "tests/hidden"
VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")
PART_RE = re.compile(r"^[0-9]+[A-Z][A-Za-z0-9]*$")
_NUMBER_RE = re.compile(r"^[0-9A-Za-z]+(\.[0-9A-Za-z]+)*$")
_OUTPUT_LIMIT = 4000

GRADE_KEY = pytest.StashKey["GradeInfo"]()
CREDIT_KEY = pytest.StashKey["PartialCredit"]()


@dataclass
class GradeInfo:
    """What the ``points`` marker says about one test, after validation."""

    points: float
    part: str
    number: str | None
    visibility: str
    hidden: bool


@dataclass
class PartialCredit:
    """The ``partial_credit`` fixture: call it with the fraction (0..1) of the points earned.

    Raises:
        ValueError: a fraction outside 0..1.
    """

    fraction: float | None = None

    def __call__(self, fraction: float) -> None:
        fraction = float(fraction)
        if not 0.0 <= fraction <= 1.0:
            raise ValueError(f"partial_credit: fraction must be in 0..1, got {fraction}")
        self.fraction = fraction


@dataclass
class TestResult:
    """One graded test's outcome, as it goes into results.json."""

    nodeid: str
    name: str
    number: str
    part: str
    max_score: float
    visibility: str
    hidden: bool
    status: str = "failed"  # passed | failed | skipped
    message: str = ""
    score: float = 0.0

    def to_gradescope(self) -> dict:
        """This test as an entry of results.json's ``tests`` list."""
        output = self.message if self.status != "passed" else "passed"
        if self.status == "skipped":
            output = f"skipped: {self.message}"
        return {
            "name": self.name,
            "number": self.number,
            "score": round(self.score, 4),
            "max_score": self.max_score,
            "status": "passed" if self.status == "passed" else "failed",
            "output": output[:_OUTPUT_LIMIT],
            "tags": [self.part],
            "visibility": self.visibility,
            "extra_data": {"nodeid": self.nodeid, "part": self.part, "hidden": self.hidden,
                           "outcome": self.status},
        }


def grade_info(item: pytest.Item, rootpath: Path) -> GradeInfo | None:
    """Validated ``points`` marker of ``item``, or None for an ungraded test.

    Raises:
        pytest.UsageError: a malformed marker (the message names the test).
    """
    marker = item.get_closest_marker("points")
    if marker is None:
        return None
    where = f"{item.nodeid}: @pytest.mark.points"
    if len(marker.args) != 1:
        raise pytest.UsageError(f"{where} takes one positional argument (the points), got {marker.args!r}")
    unknown = set(marker.kwargs) - {"part", "number", "visibility"}
    if unknown:
        raise pytest.UsageError(f"{where}: unknown keyword(s) {sorted(unknown)}; "
                                "expected part, number, visibility")
    points = marker.args[0]
    if isinstance(points, bool) or not isinstance(points, (int, float)) or points <= 0:
        raise pytest.UsageError(f"{where}: points must be a number > 0, got {points!r}")
    part = marker.kwargs.get("part")
    if not isinstance(part, str) or not PART_RE.match(part):
        raise pytest.UsageError(f"{where}: part must be like '1A' (lab number, then a letter), got {part!r}")
    number = marker.kwargs.get("number")
    if number is not None and (not isinstance(number, str) or not _NUMBER_RE.match(number)
                               or not number.startswith(part + ".")):
        raise pytest.UsageError(f"{where}: number must be like '{part}.1' (the part, a dot, an index), got {number!r}")
    try:
        rel = Path(str(item.path)).resolve().relative_to(rootpath.resolve()).as_posix()
    except ValueError:
        rel = ""
    hidden = rel.startswith(HIDDEN_DIR + "/")
    visibility = marker.kwargs.get("visibility", "after_published" if hidden else "visible")
    if visibility not in VISIBILITIES:
        raise pytest.UsageError(f"{where}: visibility must be one of {VISIBILITIES}, got {visibility!r}")
    return GradeInfo(float(points), part, number, visibility, hidden)


def _test_title(item: pytest.Item) -> str:
    """The test's name in the results: its docstring's first paragraph, else its name."""
    doc = getattr(getattr(item, "function", None), "__doc__", None)
    if not (doc and doc.strip()):
        return item.name
    title = " ".join(doc.strip().split("\n\n")[0].split())
    callspec = getattr(item, "callspec", None)
    return f"{title} [{callspec.id}]" if callspec is not None else title


def _failure_message(report: pytest.TestReport) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None and getattr(crash, "message", None):
        message = crash.message
    elif isinstance(report.longrepr, tuple):  # skip: (path, line, reason)
        message = str(report.longrepr[2])
    else:
        message = str(report.longrepr or "")
    if "Timeout" in message and "pytest-timeout" in str(report.longrepr):
        message = f"{message.splitlines()[0]} (an endless loop in your code?)"
    return message.strip()


def _has_timeout(config: pytest.Config) -> bool:
    """pytest-timeout is loaded (as "timeout" from its entry point, or by -p pytest_timeout)."""
    return config.pluginmanager.hasplugin("timeout") or config.pluginmanager.hasplugin("pytest_timeout")


def _lab(part: str) -> str:
    """The lab number of a part id: ``"1A"`` -> ``"1"``."""
    return re.match(r"[0-9]+", part).group(0)


def _wants_part(part: str, prefixes: list[str]) -> bool:
    return not prefixes or any(part.startswith(p) for p in prefixes)


def _number_key(number: str) -> tuple:
    return tuple((0, int(x), "") if x.isdigit() else (1, 0, x) for x in re.split(r"[.]", number))


# -- hooks ---------------------------------------------------------------------------------
def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("grading", "grading of the course labs")
    group.addoption("--grade", action="store_true",
                    help="grade: restore the course's test files, run the graded tests (points "
                         "marker), print points per part and write results.json (Gradescope format)")
    group.addoption("--grade-part", action="append", default=[], metavar="PART",
                    help="with --grade: only parts whose id starts with PART (e.g. 1 = all of "
                         "Lab 01, 2B = one part); repeatable, comma-separated lists allowed")
    group.addoption("--grade-json", default="results.json", metavar="PATH",
                    help="with --grade: where to write the results (default: ./results.json; "
                         "empty: write none)")
    group.addoption("--grade-timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="SECONDS",
                    help=f"timeout of a graded test without its own timeout marker (default {DEFAULT_TIMEOUT_S:g})")
    group.addoption("--grade-no-restore", action="store_true",
                    help="with --grade: only report changed test files, do not restore them")
    group.addoption("--grade-no-hidden", action="store_true",
                    help="with --grade: leave out tests/hidden/ (what a learner's check does)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "points(value, *, part, number=None, visibility='visible'): a graded test worth "
        "`value` points in lab part `part` (e.g. '1A'); see tests/grading/plugin.py",
    )
    try:  # imported now, so that seeding it before each graded test costs nothing
        import numpy  # noqa: F401
    except ImportError:  # numpy is a dependency of the labs, not of this plugin
        pass
    if not config.getoption("grade", default=False):
        return
    # a graded file that fails to import (learner code with a syntax error) must cost its
    # own tests only: run the others, and count its tests as 0 (Grader.add_tests_that_did_not_run)
    config.option.continue_on_collection_errors = True
    if not _has_timeout(config):
        config.issue_config_time_warning(pytest.PytestConfigWarning(
            "pytest-timeout is not installed: graded tests run without a timeout "
            "(pip install pytest-timeout)"), stacklevel=2)
    grader = Grader(config)
    config.pluginmanager.register(grader, "grading-grader")
    grader.restore_test_files()
    if grader.refused:
        grader.write_refusal()
        pytest.exit("grading refused: " + "; ".join(grader.refused), returncode=pytest.ExitCode.USAGE_ERROR)
    grader.choose_paths()


@pytest.fixture
def partial_credit(request: pytest.FixtureRequest) -> PartialCredit:
    """Call with the fraction (0..1) of this graded test's points earned so far.

    The last fraction is also recorded as the test's ``partial_credit`` property, which
    pytest writes into its JUnit XML report (what grading/runner.py scores from).
    """
    credit = PartialCredit()
    request.node.stash[CREDIT_KEY] = credit
    yield credit
    if credit.fraction is not None:
        request.node.user_properties.append(("partial_credit", repr(credit.fraction)))


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    """Validate points markers, number graded tests and give each a timeout."""
    per_part: dict[str, int] = {}
    seen: dict[str, str] = {}
    timeout = config.getoption("grade_timeout", default=DEFAULT_TIMEOUT_S)
    has_timeout = _has_timeout(config)
    params: dict[str, int] = {}
    graded = [(item, info) for item in items if (info := grade_info(item, config.rootpath))]
    explicit = {info.number for _, info in graded if info.number}
    auto: dict[str, str] = {}  # test function -> its automatic number
    for item, info in graded:
        base = item.nodeid.split("[")[0]
        if info.number is None:
            if base not in auto:  # the next index of the part not taken by an explicit number
                while True:
                    per_part[info.part] = per_part.get(info.part, 0) + 1
                    auto[base] = f"{info.part}.{per_part[info.part]}"
                    if auto[base] not in explicit:
                        break
            info.number = auto[base]
        if hasattr(item, "callspec"):  # a parametrized test: one number per case, 1.1, 1.2...
            params[base] = params.get(base, 0) + 1
            info.number = f"{info.number}.{params[base]}"
        if info.number in seen and seen[info.number] != item.nodeid:
            raise pytest.UsageError(f"{item.nodeid}: graded test number {info.number} is already "
                                    f"used by {seen[info.number]}")
        seen[info.number] = item.nodeid
        item.stash[GRADE_KEY] = info
        if item.get_closest_marker("timeout") is None and has_timeout:
            item.add_marker(pytest.mark.timeout(timeout))


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Fixed seeds before each graded test: Python's ``random`` and numpy's legacy global
    generator (the project itself draws only from explicit seeded Generators)."""
    if GRADE_KEY in item.stash:
        random.seed(0)
        try:
            import numpy
        except ImportError:  # numpy is a dependency of the labs, not of this plugin
            return
        numpy.random.seed(0)


class Grader:
    """State of one ``pytest --grade`` run (registered as a plugin by pytest_configure)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.root = config.rootpath
        self.parts: list[str] = [p.strip() for arg in config.getoption("grade_part")
                                 for p in arg.split(",") if p.strip()]
        self.results: dict[str, TestResult] = {}
        self.restore_lines: list[str] = []
        self.refused: list[str] = []
        self.hidden_follow_labs = False
        self.collect_errors: dict[str, str] = {}
        value = config.getoption("grade_json")
        self.json_path: Path | None = None   # --grade-json= (empty): no results file
        if value:
            self.json_path = Path(value)
            if not self.json_path.is_absolute():
                self.json_path = Path(config.invocation_params.dir) / self.json_path

    # -- before collection -------------------------------------------------------------
    def restore_test_files(self) -> None:
        """Restore (or with --grade-no-restore, check) the course's test files.

        Sets :attr:`refused` when this run cannot be trusted: a file that was loaded
        before this check (a conftest.py, the grading package, pytest's configuration) was
        changed, or the course's manifest is missing or damaged. The files are put back
        first, so the next run is clean.
        """
        apply = not self.config.getoption("grade_no_restore")
        try:
            report = manifest_mod.restore(self.root, apply=apply)
        except manifest_mod.ManifestError as exc:
            if (self.root / manifest_mod.GRADING_DIR).is_dir():  # a course checkout: refuse
                self.refused = [f"the course's test files cannot be checked: {exc}"]
            else:  # a project that only uses the plugin (no tests/grading folder)
                self.restore_lines = [f"warning: test files not checked: {exc}"]
            return
        self.restore_lines = report.lines()
        shadowed = _loaded_from_checkout(self.root)
        if shadowed:
            self.refused = [f"{', '.join(shadowed)} loaded from this checkout instead of the installed tools "
                            "(a file that shadows them was moved aside; run the same command again)"]
            return
        if report.refuse:
            again = "put back; run the same command again" if apply else "run without --grade-no-restore to put them back"
            self.refused = [f"{', '.join(report.refuse)} changed ({again})"]

    def write_refusal(self) -> None:
        """results.json of a refused run: score 0 and why (nothing without a results path)."""
        if self.json_path is None:
            return
        doc = {"score": 0.0, "execution_time": _elapsed(), "output": "\n".join(
                   ["grading refused: " + r for r in self.refused] + self.restore_lines),
               "output_format": "text", "visibility": "visible", "stdout_visibility": "hidden", "tests": []}
        self.json_path.parent.mkdir(parents=True, exist_ok=True)
        self.json_path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")

    def choose_paths(self) -> None:
        """Collect the graded folders unless the command line named paths."""
        config = self.config
        hidden = self.root / HIDDEN_DIR
        use_hidden = hidden.is_dir() and not config.getoption("grade_no_hidden")
        if config.args_source != pytest.Config.ArgsSource.ARGS:
            args = [str(self.root / d) for d in GRADED_DIRS if (self.root / d).is_dir()]
            if use_hidden:
                args.append(str(hidden))
            if args:
                config.args[:] = args
        elif use_hidden and not any(Path(a.split("::")[0]).resolve().is_relative_to(hidden.resolve())
                                    for a in config.args):
            # paths were named (e.g. tests/lab01/graded): add the hidden tests of the same labs
            config.args.append(str(hidden))
            self.hidden_follow_labs = True

    # -- collection and running --------------------------------------------------------
    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        keep, drop = [], []
        no_hidden = config.getoption("grade_no_hidden")
        labs = {_lab(i.stash[GRADE_KEY].part) for i in items
                if GRADE_KEY in i.stash and not i.stash[GRADE_KEY].hidden}
        for item in items:
            info = item.stash.get(GRADE_KEY, None)
            if (info is None or not _wants_part(info.part, self.parts) or (no_hidden and info.hidden)
                    or (info.hidden and self.hidden_follow_labs and _lab(info.part) not in labs)):
                drop.append(item)
                continue
            keep.append(item)
            self.results[item.nodeid] = TestResult(
                nodeid=item.nodeid, name=_test_title(item), number=info.number or "",
                part=info.part, max_score=info.points, visibility=info.visibility,
                hidden=info.hidden)
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo):
        report = yield
        result = self.results.get(item.nodeid)
        if result is None:
            return report
        if report.when == "setup" or report.failed or (report.when == "call" and report.skipped):
            # setup decides first; a later failure (call or teardown) overrides a pass
            if report.passed and report.when == "setup":
                result.status, result.message = "failed", "did not run"
            elif report.skipped:
                result.status, result.message = "skipped", _failure_message(report)
                if hasattr(report, "wasxfail"):
                    result.status, result.message = "failed", f"expected failure: {report.wasxfail}"
            else:
                result.status, result.message = "failed", _failure_message(report)
        if report.when == "call" and report.passed:
            if hasattr(report, "wasxfail"):  # xpass: the test is wrong, not learner code
                result.status, result.message = "failed", "unexpectedly passed an xfail test"
            else:
                result.status, result.message = "passed", ""
        if report.when == "teardown":
            credit = item.stash.get(CREDIT_KEY, None)
            fraction = credit.fraction if credit is not None else None
            if fraction is None:
                fraction = 1.0 if result.status == "passed" else 0.0
            result.score = result.max_score * fraction
            if fraction not in (0.0, 1.0):
                result.message = f"partial credit {fraction:.0%}. {result.message}".strip()
        return report

    # -- after the run -----------------------------------------------------------------
    def ordered(self) -> list[TestResult]:
        return sorted(self.results.values(), key=lambda r: (_number_key(r.part), _number_key(r.number)))

    def table(self, results: list[TestResult] | None = None) -> list[str]:
        """The points table of ``results`` (default: all): one row per part, then the total."""
        results = self.ordered() if results is None else results
        rows: dict[str, list[float]] = {}
        for r in results:
            row = rows.setdefault(r.part, [0, 0, 0.0, 0.0])
            row[0] += 1
            row[1] += r.status == "passed"
            row[2] += r.score
            row[3] += r.max_score
        lines = [f"{'part':<6}{'tests':>7}{'passed':>8}{'points':>12}"]
        for part, (n, ok, score, top) in rows.items():
            lines.append(f"{part:<6}{n:>7}{ok:>8}{_pts(score):>9} / {_pts(top):<5}")
        total = sum(r.score for r in results)
        top = sum(r.max_score for r in results)
        n = len(results)
        ok = sum(r.status == "passed" for r in results)
        lines.append(f"{'total':<6}{n:>7}{ok:>8}{_pts(total):>9} / {_pts(top):<5}")
        return lines

    def results_json(self) -> dict:
        """The Gradescope results document.

        The top-level output counts the visible tests only; hidden tests keep their own
        visibility (``after_published``) and are only announced by their number.
        """
        total = sum(r.score for r in self.results.values())
        visible = [r for r in self.ordered() if not r.hidden]
        hidden = len(self.results) - len(visible)
        lines = self.table(visible)
        if hidden:
            lines.append(f"hidden tests: {hidden}; their results and points appear when grades are published")
        output = "\n".join(lines + self.restore_lines)
        return {
            "score": round(total, 4),
            "execution_time": _elapsed(),
            "output": output,
            "output_format": "text",
            "visibility": "visible",
            "stdout_visibility": "hidden",
            "tests": [r.to_gradescope() for r in self.ordered()],
        }

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            message = str(report.longrepr).strip().splitlines()
            self.collect_errors[report.nodeid] = message[-1] if message else "collection error"

    def add_tests_that_did_not_run(self, session: pytest.Session) -> None:
        """Count graded tests whose file failed to import: 0 of their points each."""
        if not self.collect_errors:
            return
        paths = [Path(a.split("::")[0]) for a in self.config.args]
        paths = [p if p.is_absolute() else Path(self.config.invocation_params.dir) / p for p in paths]
        no_hidden = self.config.getoption("grade_no_hidden")
        seen = list(self.results)
        for t in declared_tests(paths, self.root):
            if (any(n == t.nodeid or n.startswith(t.nodeid + "[") for n in seen)
                    or not _wants_part(t.part, self.parts) or (no_hidden and t.hidden)):
                continue
            file = t.nodeid.split("::")[0]
            error = next((m for nodeid, m in self.collect_errors.items() if nodeid == file), None)
            if error is None:
                continue
            self.results[t.nodeid] = TestResult(
                nodeid=t.nodeid, name=t.title, number=t.number,
                part=t.part, max_score=t.points, visibility=t.visibility, hidden=t.hidden,
                status="failed", message=f"did not run: {file} failed to import: {error}")

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.add_tests_that_did_not_run(session)
        if self.json_path is None:
            return
        self.json_path.parent.mkdir(parents=True, exist_ok=True)
        self.json_path.write_text(json.dumps(self.results_json(), indent=2) + "\n", encoding="utf-8")

    def pytest_terminal_summary(self, terminalreporter) -> None:
        tr = terminalreporter
        tr.section("grade")
        for line in self.restore_lines:
            tr.write_line(line, yellow=True)
        if not self.results:
            tr.write_line("no graded tests were collected (check --grade-part and the paths)")
        for line in self.table():
            tr.write_line(line)
        if self.json_path is not None:
            tr.write_line(f"results written to {self.json_path}")


def _loaded_from_checkout(root: Path) -> list[str]:
    """Modules of the grading stack (pytest, pluggy, pytest-timeout, numpy...) that were
    imported from files inside the checkout rather than from the installed packages (a
    ``pytest_timeout.py`` in the repository root, loaded by ``-p pytest_timeout``)."""
    import sys

    root = root.resolve()
    out = []
    for name in manifest_mod.SHADOWED_MODULES:
        module = sys.modules.get(name)
        file = getattr(module, "__file__", None) if module is not None else None
        if not file:
            continue
        path = Path(file).resolve()
        if not path.is_relative_to(root):
            continue
        rel = path.relative_to(root)
        for d in manifest_mod.STARTUP_DIRS:  # the root and tests/: where a module would shadow
            inner = rel.parts[len(d.parts):] if rel.parts[:len(d.parts)] == d.parts else ()
            if inner and inner[0] in (name, f"{name}.py") and not (d == Path("tests") and name == "grading"):
                out.append(f"{name} ({rel.as_posix()})")
                break
    return out


def _elapsed() -> int:
    """Whole seconds (rounded up) since this process started: execution_time counts the
    interpreter's start-up and pytest's collection too, not only the tests."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return math.ceil(max(0.0, uptime - ticks / os.sysconf("SC_CLK_TCK")))
    except (OSError, ValueError, IndexError):
        return math.ceil(time.monotonic() - _IMPORTED_AT)


_IMPORTED_AT = time.monotonic()


def _pts(x: float) -> str:
    return f"{x:g}" if abs(x - round(x, 2)) < 1e-9 else f"{x:.2f}"
