"""The grader's scoring of a trusted run's report, on tiny inputs (grading/runner.py).

The whole autograder on the course's real submissions is tests/test_autograder.py; the
attacks of the adversarial review are tests/test_grading_attacks.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from grading import catalog, runner, scoring


def _case(name: str, body: str = "", props: str = "") -> str:
    return (f'<testcase classname="tests.g.test_a" name="{name}" file="tests/g/test_a.py">{props}{body}'
            "</testcase>")


def _report(*cases: str, tests: int, failures: int) -> bytes:
    return (f'<testsuites><testsuite tests="{tests}" failures="{failures}" errors="0" skipped="0">'
            + "".join(cases) + "</testsuite></testsuites>").encode()


DECLARED = [
    catalog.DeclaredTest("tests/g/test_a.py::test_ok", 2.0, "1A", "1A.1", False, "visible", "The easy one."),
    catalog.DeclaredTest("tests/g/test_a.py::test_partial", 5.0, "1A", "1A.2", False, "visible", "Partial.",
                         uses_partial_credit=True),
    catalog.DeclaredTest("tests/g/test_a.py::test_gone", 1.0, "1B", "1B.1", False, "visible", "Gone."),
    catalog.DeclaredTest("tests/g/test_a.py::test_cases", 1.0, "1B", "1B.2", False, "visible", "Cases.",
                         parametrized=True, cases=2),
]
PARTIAL = '<properties><property name="partial_credit" value="0.6"/></properties>'
FULL_CREDIT = '<properties><property name="partial_credit" value="1.0"/></properties>'
FAIL = '<failure message="AssertionError: no">t</failure>'


def _run(report: bytes) -> scoring.RunResult:
    return scoring.RunResult(report, 1, "", False, 1.0)


def _score(report: bytes) -> scoring.RunScore:
    return scoring.score_run(DECLARED, _run(report), {"1B": ["metrics.py: not found"]}, "visible",
                            {"tests/g/test_a.py"})


def test_scores_come_from_the_report_and_the_declared_points() -> None:
    scored = _score(_report(_case("test_ok"), _case("test_partial", FAIL, PARTIAL),
                            _case("test_cases[1]"), _case("test_cases[2]", FAIL), tests=4, failures=2))
    got = {o.number: (o.status, o.score, o.output) for o in scored.outcomes}
    # 2 (pass) + 5 x 0.6 = 3 (partial credit of a failed test) + 0 (never reported) + 1 + 0 = 6
    assert got == {
        "1A.1": ("passed", 2.0, "passed"),
        "1A.2": ("failed", 3.0, "partial credit 60%. AssertionError: no"),
        "1B.1": ("failed", 0.0, "metrics.py: not found\ndid not run (the test run ended early)"),
        "1B.2.1": ("passed", 1.0, "metrics.py: not found\npassed"),
        "1B.2.2": ("failed", 0.0, "metrics.py: not found\nAssertionError: no"),
    }
    assert scored.counts["pytest"] == {"tests": 4, "failures": 2, "errors": 0, "skipped": 0, "collection errors": 0}


def test_only_the_declared_cases_count_once_each() -> None:
    """The review's a02/a10: clones named test_x[dK], repeated cases and undeclared tests add nothing."""
    clones = [_case(f"test_ok[d{k}]") for k in range(10)]
    scored = _score(_report(_case("test_ok", FAIL), *clones, _case("test_ok"), _case("test_cases[1]"),
                            _case("test_cases[1]"), _case("test_cases[2]"), _case("test_cases[3]"),
                            _case("test_new"), tests=17, failures=1))
    got = {o.number: o.score for o in scored.outcomes}
    # test_ok: the first case with exactly its id failed; its clones and the repeat are not it
    # test_cases: 2 cases declared -> [1] and [2] once each; [3] is one case too many
    assert got == {"1A.1": 0.0, "1A.2": 0.0, "1B.1": 0.0, "1B.2.1": 1.0, "1B.2.2": 1.0}
    assert sum(got.values()) <= sum(t.points * t.cases for t in DECLARED)
    notes = "\n".join(scored.notes)
    assert "repeats tests" in notes and "1 more case(s) than declared" in notes
    assert "does not declare" in notes and "test_new" in notes


def test_partial_credit_counts_only_for_tests_that_use_the_fixture() -> None:
    """The review's a01/a06: a partial_credit property on a test that does not ask for it is ignored."""
    scored = _score(_report(_case("test_ok", FAIL, FULL_CREDIT), _case("test_partial", FAIL, FULL_CREDIT),
                            _case("test_gone", FAIL, '<properties><property name="partial_credit" value="7"/>'
                                                     "</properties>"), tests=3, failures=3))
    got = {o.number: o.score for o in scored.outcomes}
    assert got["1A.1"] == 0.0 and got["1B.1"] == 0.0
    assert got["1A.2"] == 5.0  # the fixture's own test: its credit counts (here all of it)


def test_a_missing_report_scores_nothing_and_says_why() -> None:
    run = scoring.RunResult(None, 2, "", False, 1.0, "the test run ended without a report (exit status 2)")
    scored = scoring.score_run(DECLARED, run, {}, "visible", set())
    assert sum(o.score for o in scored.outcomes) == 0.0
    assert all(o.output.startswith("did not run: the test run ended without a report") for o in scored.outcomes)
    bad = scoring.score_run(DECLARED, _run(_report(_case("test_ok"), tests=1, failures=0) + b"<x/>"), {},
                           "visible", set())
    assert sum(o.score for o in bad.outcomes) == 0.0 and "not well-formed" in bad.notes[0]


def test_the_total_is_capped_at_its_maximum() -> None:
    tests = [catalog.DeclaredTest("tests/g/test_a.py::test_ok", 2.0, "1A", "1A.1", False, "visible", "t",
                                  uses_partial_credit=True)]
    scored = scoring.score_run(tests, _run(_report(_case("test_ok", "", FULL_CREDIT), tests=1, failures=0)), {},
                              "visible", set())
    assert [o.score for o in scored.outcomes] == [2.0]
    doc = scoring.results_document(scored.outcomes, [], [], [], [], {}, Path("/nonexistent"), 0.0)
    assert doc["score"] == 2.0


def test_results_have_no_hidden_notes_entry_so_the_total_stays_visible() -> None:
    """The review's finding 17: instructors' notes go to stdout and extra_data, not into a
    test with visibility 'hidden' (which would hide the total)."""
    scored = _score(_report(_case("test_ok"), tests=1, failures=0))
    doc = scoring.results_document(scored.outcomes, [], [], [], ["a note"], {"passed": 1}, Path("/nonexistent"), 0.0)
    assert all(t["visibility"] == "visible" for t in doc["tests"])
    assert doc["extra_data"]["grader_notes"] == ["a note"]


@pytest.mark.parametrize("text, expected", [
    (None, "written_answers.html NOT found"),
    ("<p>YOUR ANSWER HERE</p><p>YOUR ANSWER HERE</p><p>mine</p>", "found, 2 of 3 answers still read"),
    ("<p>a</p><p>b</p><p>c</p>", "written_answers.html found in the submission."),
])
def test_written_answers_are_counted(tmp_path: Path, text: str | None, expected: str) -> None:
    if text is not None:
        (tmp_path / "written_answers.html").write_text(text)
    questions = [catalog.WrittenQuestion(f"1A-w{k}", "1A", 1.0, "labs/x.ipynb", "q", "") for k in range(3)]
    assert expected in scoring.written_answers_status(tmp_path, questions)


def test_compile_check_names_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "m.py"
    bad.write_text("x = 1\ndef f(:\n    pass\n")
    assert runner.compile_check(bad, "lab01_cluster_sim/m.py") == "lab01_cluster_sim/m.py:2: SyntaxError: invalid syntax"
    course = tmp_path / "course.py"
    course.write_text("def needed():\n    pass\n")
    bad.write_text("def other():\n    pass\n")
    assert "does not define needed" in runner.compile_check(bad, "m.py", course)
