"""The grader's parent process on tiny inputs: scoring a report, the control tests, the guard.

The whole autograder on the course's real submissions is tests/test_autograder.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from grading import catalog, runner

TESTS_DIR = Path(__file__).resolve().parents[1]


def _tree(canary_nonce: str = "n0nce") -> runner.Tree:
    return runner.Tree(Path("/nonexistent"), {"tests/g/test_a.py::test_zz": canary_nonce}, {"tests/g/test_a.py"})


def _case(name: str, body: str = "", props: str = "") -> str:
    return (f'<testcase classname="tests.g.test_a" name="{name}" file="tests/g/test_a.py">{props}{body}'
            "</testcase>")


def _report(*cases: str, tests: int, failures: int) -> bytes:
    return (f'<testsuites><testsuite tests="{tests}" failures="{failures}" errors="0" skipped="0">'
            + "".join(cases) + "</testsuite></testsuites>").encode()


DECLARED = [
    catalog.DeclaredTest("tests/g/test_a.py::test_ok", 2.0, "1A", "1A.1", False, "visible", "The easy one."),
    catalog.DeclaredTest("tests/g/test_a.py::test_partial", 5.0, "1A", "1A.2", False, "visible", "Partial."),
    catalog.DeclaredTest("tests/g/test_a.py::test_gone", 1.0, "1B", "1B.1", False, "visible", "Gone."),
]
CANARY = _case("test_zz", '<failure message="AssertionError: n0nce">x</failure>')


def _child(report: bytes) -> runner.ChildResult:
    return runner.ChildResult(1, report, False, "", False, 1.0)


def test_scores_come_from_the_report_and_the_declared_points() -> None:
    report = _report(
        _case("test_ok"),
        _case("test_partial", '<failure message="AssertionError: 3 of 5">t</failure>',
              '<properties><property name="partial_credit" value="0.6"/></properties>'),
        CANARY, tests=3, failures=2)
    scored = runner.score_run(DECLARED, _tree(), _child(report), {"1B": ["metrics.py: not found"]}, "visible")
    got = {o.number: (o.status, o.score, o.output) for o in scored.outcomes}
    # 2 (pass) + 5 x 0.6 = 3 (partial credit of a failed test) + 0 (never reported) = 5
    assert got["1A.1"] == ("passed", 2.0, "passed")
    assert got["1A.2"] == ("failed", 3.0, "partial credit 60%. AssertionError: 3 of 5")
    assert got["1B.1"] == ("failed", 0.0, "metrics.py: not found\ndid not run (the test run ended early)")
    # pytest's own figures, less the control test: 2 tests, 1 failure
    assert scored.counts["pytest"] == {"tests": 2, "failures": 1, "errors": 0, "skipped": 0, "collection errors": 0}


@pytest.mark.parametrize("canary, why", [
    (_case("test_zz"), "reported as passed"),                       # outcomes flipped to "passed"
    ("", "reported as missing"),                                    # the control test removed
    (_case("test_zz", '<failure message="AssertionError: other">x</failure>'), "reported as failed"),
])
def test_a_report_whose_control_test_did_not_fail_scores_nothing(canary: str, why: str) -> None:
    report = _report(_case("test_ok"), _case("test_partial"), canary, tests=3, failures=0)
    scored = runner.score_run(DECLARED, _tree(), _child(report), {}, "visible")
    assert [o.score for o in scored.outcomes] == [0.0, 0.0, 0.0]
    assert all("not scored" in o.output and "tampered" in o.output for o in scored.outcomes)
    assert why in scored.notes[0]


def test_an_unreadable_report_scores_nothing() -> None:
    report = _report(_case("test_ok"), CANARY, tests=2, failures=1)
    scored = runner.score_run(DECLARED, _tree(), _child(report + b"<testsuites/>"), {}, "visible")
    assert sum(o.score for o in scored.outcomes) == 0.0
    assert "not well-formed" in scored.notes[0]


@pytest.mark.parametrize("rig, expected", [
    # a patched pytest class: the next report is not logged, the process ends, no report
    ("from _pytest.reports import TestReport\n"
     "_orig = TestReport.from_item_and_call\n"
     "def _flip(cls, item, call):\n"
     "    report = _orig.__func__(cls, item, call)\n"
     "    report.outcome = 'passed'\n"
     "    return report\n"
     "TestReport.from_item_and_call = classmethod(_flip)\n",
     "grading guard: _pytest.reports.TestReport.from_item_and_call changed during the run"),
    # a hook wrapper registered on the running pytest
    ("import gc, pytest\n"
     "from _pytest.config import Config\n"
     "class _Flip:\n"
     "    @pytest.hookimpl(wrapper=True)\n"
     "    def pytest_runtest_makereport(self, item, call):\n"
     "        report = yield\n"
     "        report.outcome = 'passed'\n"
     "        return report\n"
     "next(o for o in gc.get_objects() if isinstance(o, Config)).pluginmanager.register(_Flip())\n",
     "grading guard: pytest_runtest_makereport changed during the run"),
    # a pytest function's code replaced in place (same object): refused by the audit hook
    ("import _pytest.runner\n"
     "_pytest.runner.check_interactive_exception.__code__ = (lambda call, report: False).__code__\n",
     "may not change _pytest.runner.check_interactive_exception.__code__ while it is graded"),
])
def test_the_guard_stops_a_run_whose_reporting_learner_code_changed(tmp_path: Path, rig: str, expected: str) -> None:
    """With --grade-guard (the grader's children), a lab package module that changes how
    pytest reports outcomes ends the run without a report, or fails to import."""
    pkg = tmp_path / "lab01_cluster_sim"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "rig.py").write_text(rig)
    (tmp_path / "test_rig.py").write_text(
        "def test_fails():\n    assert False\n\n"
        "def test_import():\n    import lab01_cluster_sim.rig\n\n"
        "def test_fails_later():\n    assert False\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(TESTS_DIR)]),
               PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    report = tmp_path / "report.xml"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-c", os.devnull, "--rootdir", str(tmp_path),
                           "-p", "grading.plugin", "--grade-guard", "-p", "no:cacheprovider", "-q", "--tb=line",
                           f"--junitxml={report}", str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    text = proc.stdout + proc.stderr
    assert expected in text, text[-2000:]
    if "grading guard" in expected:
        assert proc.returncode == 70 and not report.exists()
    else:  # the rig did not import: its test fails like the two others
        assert "3 failed" in proc.stdout, proc.stdout[-2000:]
