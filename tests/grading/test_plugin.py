"""Tests of the grading plugin on tiny in-test examples (pytester).

Each example is a small test tree written into a temporary folder and run by an inner
pytest with ``-p grading.plugin``; the expected points are worked out in comments.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import jsonschema
import pytest

from grading import manifest

pytest_plugins = ["pytester"]

SCHEMA = json.loads((Path(__file__).parent / "results.schema.json").read_text())
TESTS_DIR = str(Path(__file__).resolve().parents[1])

LAB01 = """
import pytest

@pytest.mark.points(2, part="1A", number="1A.1")
def test_ok():
    '''The easy one.'''
    assert 1 + 1 == 2

@pytest.mark.points(3, part="1A", number="1A.2")
def test_fails():
    '''Best-fit prefers the fullest node.'''
    assert 2 + 2 == 5, "expected node B"

@pytest.mark.points(4, part="1B")
def test_partial(partial_credit):
    '''Three of four cases right.'''
    results = [True, True, True, False]
    partial_credit(sum(results) / len(results))
    assert all(results)

def test_not_graded():
    assert True
"""


@pytest.fixture(autouse=True)
def no_plugin_autoload(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inner runs load only the plugins they name (-p): re-importing every installed plugin
    (nbval, hypothesis...) in each in-process run would cost seconds per test."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")


@pytest.fixture
def course(pytester: pytest.Pytester) -> pytest.Pytester:
    """A tiny course tree: tests/lab01/graded/test_lab01_example.py and an ini file."""
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider\n")
    graded = pytester.path / "tests" / "lab01" / "graded"
    graded.mkdir(parents=True)
    (graded / "test_lab01_example.py").write_text(LAB01)
    return pytester


def read_results(pytester: pytest.Pytester, name: str = "results.json") -> dict:
    doc = json.loads((pytester.path / name).read_text())
    jsonschema.validate(doc, SCHEMA)
    return doc


def test_grade_scores_pass_fail_and_partial_credit(course: pytest.Pytester) -> None:
    result = course.runpytest("-p", "grading.plugin", "--grade")
    # 3 graded tests run, the ungraded one is deselected
    result.assert_outcomes(passed=1, failed=2, deselected=1)
    doc = read_results(course)
    # 1A: 2 (pass) + 0 of 3 (fail) = 2 of 5; 1B: 4 x 3/4 = 3 of 4; total 5 of 9
    assert doc["score"] == 5.0
    by_number = {t["number"]: t for t in doc["tests"]}
    assert list(by_number) == ["1A.1", "1A.2", "1B.1"]  # 1B.1: numbered automatically
    assert [by_number[n]["score"] for n in by_number] == [2.0, 0.0, 3.0]
    assert [by_number[n]["max_score"] for n in by_number] == [2.0, 3.0, 4.0]
    assert by_number["1A.2"]["status"] == "failed"
    assert "expected node B" in by_number["1A.2"]["output"]
    assert by_number["1A.2"]["name"] == "Best-fit prefers the fullest node."
    assert by_number["1B.1"]["output"].startswith("partial credit 75%")
    assert by_number["1A.1"]["visibility"] == "visible"
    result.stdout.fnmatch_lines([
        "*part*tests*passed*points*",
        "1A*2*1*2 / 5*",
        "1B*1*0*3 / 4*",
        "total*3*1*5 / 9*",
    ])


def test_without_grade_graded_tests_run_as_plain_tests(course: pytest.Pytester) -> None:
    result = course.runpytest("-p", "grading.plugin")
    result.assert_outcomes(passed=2, failed=2)
    assert not (course.path / "results.json").exists()


def test_grade_part_keeps_only_that_part(course: pytest.Pytester) -> None:
    result = course.runpytest("-p", "grading.plugin", "--grade", "--grade-part", "1B",
                              "--grade-json", "out/r.json")
    result.assert_outcomes(failed=1, deselected=3)
    doc = read_results(course, "out/r.json")
    assert [t["number"] for t in doc["tests"]] == ["1B.1"]
    assert doc["score"] == 3.0  # 4 x 3/4


def test_an_empty_grade_json_writes_and_names_no_results_file(course: pytest.Pytester) -> None:
    # tests/grading/local.py scores from pytest's report and passes --grade-json= (empty): the
    # child prints its table but writes no results file and names none (it would be a temporary path)
    result = course.runpytest("-p", "grading.plugin", "--grade", "--grade-part=1B", "--grade-json=")
    result.assert_outcomes(failed=1, deselected=3)
    result.stdout.fnmatch_lines(["1B*1*0*3 / 4*"])
    assert "results written to" not in result.stdout.str()
    assert list(course.path.rglob("results*.json")) == []


def test_endless_loop_costs_only_that_test(course: pytest.Pytester,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    (course.path / "tests" / "lab01" / "graded" / "test_lab01_loop.py").write_text(
        "import pytest\n"
        "@pytest.mark.points(5, part='1C')\n"
        "def test_loops():\n"
        "    while True:\n"
        "        pass\n")
    monkeypatch.setenv("PYTHONPATH", TESTS_DIR + os.pathsep + os.environ.get("PYTHONPATH", ""))
    result = course.runpytest_subprocess("-p", "pytest_timeout", "-p", "grading.plugin", "--grade",
                                         "--grade-timeout", "5",  # room for a busy machine: the other tests take ms
                                         timeout=120)
    result.assert_outcomes(passed=1, failed=3, deselected=1)
    doc = read_results(course)
    loop = next(t for t in doc["tests"] if t["number"] == "1C.1")
    assert loop["score"] == 0.0 and "Timeout" in loop["output"]
    assert doc["score"] == 5.0  # the other tests still scored: 2 + 0 + 3


def test_hidden_tests_run_when_present(course: pytest.Pytester) -> None:
    hidden = course.path / "tests" / "hidden"
    hidden.mkdir(parents=True)
    (hidden / "test_hidden_example_plugin.py").write_text(
        "import pytest\n"
        "@pytest.mark.points(1, part='1A', number='1A.9')\n"
        "def test_secret():\n"
        "    assert True\n")
    result = course.runpytest("-p", "grading.plugin", "--grade")
    result.assert_outcomes(passed=2, failed=2, deselected=1)
    doc = read_results(course)
    secret = next(t for t in doc["tests"] if t["number"] == "1A.9")
    assert secret["visibility"] == "after_published" and secret["score"] == 1.0
    assert doc["score"] == 6.0  # 5 + 1
    # the top-level output (visible before grades are published) counts the visible tests only
    assert "1A.9" not in doc["output"] and "test_secret" not in doc["output"]
    assert re.search(r"^total\s+3\s+1\s+5 / 9", doc["output"], re.M), doc["output"]
    assert "hidden tests: 1;" in doc["output"]
    # a learner's check leaves them out
    result = course.runpytest("-p", "grading.plugin", "--grade", "--grade-no-hidden")
    assert [t["number"] for t in read_results(course)["tests"]] == ["1A.1", "1A.2", "1B.1"]
    # naming a lab's folder adds that lab's hidden tests only
    (hidden / "test_hidden_example_lab02.py").write_text(
        "import pytest\n"
        "@pytest.mark.points(1, part='2A', number='2A.9')\n"
        "def test_other_lab():\n"
        "    assert True\n")
    result = course.runpytest("-p", "grading.plugin", "--grade", "tests/lab01/graded")
    assert [t["number"] for t in read_results(course)["tests"]] == ["1A.1", "1A.2", "1A.9", "1B.1"]


@pytest.mark.parametrize("marker, message", [
    ("points(0, part='1A')", "points must be a number > 0"),
    ("points(1, part='lab1')", "part must be like '1A'"),
    ("points(1, part='1A', number='1B.1')", "number must be like '1A.1'"),
    ("points(1, part='1A', visibility='secret')", "visibility must be one of"),
    ("points(1, part='1A', weight=2)", "unknown keyword"),
    ("points(part='1A')", "takes one positional argument"),
])
def test_malformed_marker_is_a_usage_error(pytester: pytest.Pytester, marker: str, message: str) -> None:
    pytester.makepyfile(f"import pytest\n@pytest.mark.{marker}\ndef test_x():\n    pass\n")
    result = pytester.runpytest("-p", "grading.plugin")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*test_x*{message}*"])


def test_duplicate_numbers_are_refused(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        "import pytest\n"
        "@pytest.mark.points(1, part='1A', number='1A.1')\n"
        "def test_a():\n    pass\n"
        "@pytest.mark.points(1, part='1A', number='1A.1')\n"
        "def test_b():\n    pass\n")
    result = pytester.runpytest("-p", "grading.plugin")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*test_b*1A.1 is already used by*test_a*"])


def test_partial_credit_rejects_fraction_outside_0_1() -> None:
    from grading.plugin import PartialCredit

    credit = PartialCredit()
    with pytest.raises(ValueError, match="0..1"):
        credit(1.5)
    credit(0.25)
    assert credit.fraction == 0.25


def test_grading_restores_changed_test_files(course: pytest.Pytester) -> None:
    root = course.path
    written = manifest.write(root)
    assert written == ["tests/lab01/graded/test_lab01_example.py"]
    graded = root / "tests" / "lab01" / "graded"
    original = (graded / "test_lab01_example.py").read_text()
    # the learner "fixes" the failing test: a graded file is collected after the check,
    # so it is put back and grading goes on
    (graded / "test_lab01_example.py").write_text(original.replace("2 + 2 == 5", "2 + 2 == 4"))
    result = course.runpytest("-p", "grading.plugin", "--grade")
    result.stdout.fnmatch_lines([
        "test file changed: tests/lab01/graded/test_lab01_example.py (restored; your version is in "
        "test-artifacts/grading-backup/)",
    ])
    assert (graded / "test_lab01_example.py").read_text() == original
    backup = root / manifest.BACKUP_DIR / "tests" / "lab01" / "graded"
    assert "2 + 2 == 4" in (backup / "test_lab01_example.py").read_text()
    doc = read_results(course)
    assert doc["score"] == 5.0  # the restored test fails again: same as the untouched run
    assert "test file changed: tests/lab01/graded/test_lab01_example.py" in doc["output"]
    assert "manifest.py write" not in result.stdout.str() + doc["output"]


RIGGED_CONFTEST = """
import pytest
@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    report.outcome = "passed"   # every test "passes"
    return report
"""


@pytest.mark.parametrize("tamper, finding", [
    (lambda root: (root / "conftest.py").write_text(RIGGED_CONFTEST), "conftest.py"),
    (lambda root: (root / "tests" / "conftest.py").write_text(RIGGED_CONFTEST), "tests/conftest.py"),
    (lambda root: (root / "tests" / "lab01" / "graded" / "conftest.py").write_text(RIGGED_CONFTEST),
     "tests/lab01/graded/conftest.py"),
    (lambda root: (root / "tests" / "pytest.ini").write_text("[pytest]\naddopts = -p no:grading\n"),
     "tests/pytest.ini"),
    (lambda root: (root / "sitecustomize.py").write_text("# runs at start-up\n"), "sitecustomize.py"),
    (lambda root: (root / "pyproject.toml").write_text("[tool.pytest.ini_options]\naddopts = '-x'\n"),
     "pyproject.toml#tool.pytest"),
])
def test_files_loaded_before_the_check_refuse_the_run(course: pytest.Pytester, tamper, finding: str) -> None:
    """A conftest.py (root, tests/, a graded folder), a pytest ini file, a start-up hook or a
    changed [tool.pytest] table is put back or moved aside, and that run is refused (score
    0, exit status 4): the next run grades the course's tests as before (5 of 9)."""
    root = course.path
    (root / "tests" / "grading").mkdir()
    (root / "pyproject.toml").write_text("[tool.pytest.ini_options]\naddopts = ''\n")
    manifest.write(root)
    tamper(root)
    result = course.runpytest("-p", "grading.plugin", "--grade")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    text = result.stdout.str() + result.stderr.str()
    assert "grading refused" in text and finding in text
    assert "manifest.py write" not in text
    doc = read_results(course)
    assert doc["score"] == 0 and "grading refused" in doc["output"]
    if finding.endswith(".py") or finding.endswith(".ini"):
        assert not (root / finding).exists() or finding == "tests/conftest.py"
        result = course.runpytest("-p", "grading.plugin", "--grade")
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        assert read_results(course)["score"] == 5.0  # not 9: the rig is gone


def test_no_restore_only_reports(course: pytest.Pytester) -> None:
    manifest.write(course.path)
    path = course.path / "tests" / "lab01" / "graded" / "test_lab01_example.py"
    path.write_text(path.read_text() + "\n# edited\n")
    result = course.runpytest("-p", "grading.plugin", "--grade", "--grade-no-restore")
    result.stdout.fnmatch_lines(["test file changed: *test_lab01_example.py (differs from the course's copy)"])
    assert path.read_text().endswith("# edited\n")


def test_missing_or_damaged_manifest_refuses_in_a_course_checkout(course: pytest.Pytester) -> None:
    """Without tests/grading/ (a project that only uses the plugin) a missing manifest is a
    warning; in a course checkout a missing or hand-edited manifest refuses grading, and
    the message says to get the course's copy back, never how to approve edits."""
    result = course.runpytest("-p", "grading.plugin", "--grade")
    result.stdout.fnmatch_lines(["warning: test files not checked: *manifest.json: not found*"])
    assert read_results(course)["score"] == 5.0
    manifest.write(course.path)
    path = course.path / "tests" / "grading" / "manifest.json"
    doc = json.loads(path.read_text())
    doc["files"]["tests/lab01/graded/test_lab01_example.py"] = "0" * 64  # "approve" an edit by hand
    path.write_text(json.dumps(doc))
    result = course.runpytest("-p", "grading.plugin", "--grade")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    text = result.stdout.str() + result.stderr.str()
    assert "manifest.json: damaged" in text and "git checkout -- tests/grading" in text
    assert "manifest.py write" not in text
    path.unlink()
    result = course.runpytest("-p", "grading.plugin", "--grade")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "manifest.json: not found" in result.stdout.str() + result.stderr.str()


def test_a_file_that_fails_to_import_still_counts_its_points(course: pytest.Pytester) -> None:
    """A syntax error in learner code makes a graded file fail to import: its tests get 0
    of their points instead of vanishing from the total."""
    (course.path / "tests" / "lab01" / "graded" / "test_lab01_broken.py").write_text(
        "import pytest\n"
        "import learner_module_that_does_not_exist\n"
        "@pytest.mark.points(4, part='1C', number='1C.1')\n"
        "def test_a():\n    pass\n"
        "class TestB:\n"
        "    @pytest.mark.points(1, part='1C', number='1C.2')\n"
        "    def test_b(self):\n        pass\n")
    result = course.runpytest("-p", "grading.plugin", "--grade")
    result.assert_outcomes(passed=1, failed=2, errors=1, deselected=1)  # the other file still runs
    doc = read_results(course)
    assert doc["score"] == 5.0  # as without the broken file: 2 + 0 + 3
    by_number = {t["number"]: t for t in doc["tests"]}
    # the broken file's tests are listed: 1C is worth 4 + 1 = 5, all lost
    assert (by_number["1C.1"]["score"], by_number["1C.1"]["max_score"]) == (0.0, 4.0)
    assert (by_number["1C.2"]["score"], by_number["1C.2"]["max_score"]) == (0.0, 1.0)
    assert "ModuleNotFoundError" in by_number["1C.1"]["output"]
    assert by_number["1C.1"]["output"].startswith("did not run: tests/lab01/graded/test_lab01_broken.py")


def test_parametrized_graded_test_numbers_each_case(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_param_example="""
import pytest

@pytest.mark.points(1, part="2C", number="2C.1")
@pytest.mark.parametrize("x", [1, 2, 3])
def test_cases(x):
    assert x != 2

@pytest.mark.points(2, part="2C")
@pytest.mark.parametrize("y", [1, 2])
def test_auto(y):
    pass
""")
    result = pytester.runpytest("-p", "grading.plugin", "--grade", "test_param_example.py")
    result.assert_outcomes(passed=4, failed=1)
    doc = read_results(pytester)
    # each case is worth the marker's points: 1 + 0 + 1 + 2 + 2 = 6 of 7
    assert [(t["number"], t["score"]) for t in doc["tests"]] == [
        ("2C.1.1", 1.0), ("2C.1.2", 0.0), ("2C.1.3", 1.0), ("2C.2.1", 2.0), ("2C.2.2", 2.0)]
    assert doc["score"] == 6.0


def test_graded_tests_start_from_fixed_seeds(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_seed_example="""
import random
import numpy as np
import pytest

@pytest.mark.points(1, part="1A")
@pytest.mark.parametrize("run", [1, 2])
def test_draw(run):
    random.seed(run * 1000)  # disturb the seed; the next test must not see it
    np.random.seed(run * 1000)

@pytest.mark.points(1, part="1A")
def test_fixed():
    assert random.random() == random.Random(0).random()
    assert np.random.random() == np.random.RandomState(0).random_sample()
""")
    pytester.runpytest("-p", "grading.plugin").assert_outcomes(passed=3)
