"""The student edition: built by tools/make_student_edition.py, it imports, its notebooks
open, and every graded test fails there (it really tests learner code) while the same
tests pass, for full marks, on the instructor edition.

Both editions are built into a temporary folder (the instructor edition as a plain copy,
so grading's file restore never touches this checkout), and graded with
``pytest --grade`` in a subprocess, with a timeout.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import jsonschema
import nbformat
import pytest

from grading.toolbox import load_tool, readable_runtime

REPO_ROOT = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((REPO_ROOT / "tests" / "grading" / "results.schema.json").read_text())
LAB_PACKAGES = ("lab01_cluster_sim", "lab02_device_plugin")
GRADE_TIMEOUT_S = 900  # a safety net for a hung subprocess, not a speed goal


tool = load_tool("make_student_edition")


def _env(root: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(root), str(root / "tests")])
    env.pop("PYTEST_ADDOPTS", None)
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # a graded run needs pytest-timeout only (-p below)
    return env


def _grade(root: Path, out: Path) -> dict:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "pytest_timeout", "--grade", f"--grade-json={out}", "-q",
         "-p", "no:cacheprovider"],
        cwd=root, env=_env(root), capture_output=True, text=True, timeout=GRADE_TIMEOUT_S)
    assert out.is_file(), f"no results written:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    doc = json.loads(out.read_text())
    jsonschema.validate(doc, SCHEMA)
    doc["_stdout"] = proc.stdout
    return doc


@pytest.fixture(scope="module")
def editions(tmp_path_factory: pytest.TempPathFactory, student_edition) -> dict[str, Path]:
    instructor = tmp_path_factory.mktemp("editions") / "instructor"
    tool.build(instructor, instructor=True)
    student, regions = student_edition
    return {"student": student, "instructor": instructor, "regions": regions}


def test_regions_are_replaced_with_the_part_named(editions) -> None:
    student: Path = editions["student"]
    regions = editions["regions"]
    assert regions, "no solution regions found in the lab packages"
    for r in regions:
        text = (student / r.path.split("#")[0]).read_text()
        assert f'raise NotImplementedError("your code here ({r.part})")' in text
    for package in LAB_PACKAGES:
        for path in (student / package).rglob("*.py"):
            assert "### BEGIN SOLUTION" not in path.read_text(), path


def test_docstrings_and_everything_else_are_kept(editions) -> None:
    student: Path = editions["student"]
    for r in {r.path for r in editions["regions"] if "#" not in r.path}:
        ours = ast.parse((REPO_ROOT / r).read_text())
        theirs = ast.parse((student / r).read_text())
        docs = lambda tree: {n.name: ast.get_docstring(n) for n in ast.walk(tree)  # noqa: E731
                             if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
        assert docs(ours) == docs(theirs), r
    for kept in ("pyproject.toml", "lab02_device_plugin/kubelet/manager.py", "lab01_cluster_sim/engine.py"):
        if (REPO_ROOT / kept).is_file():
            assert (student / kept).read_bytes() == (REPO_ROOT / kept).read_bytes(), kept


def test_hidden_tests_are_left_out(editions) -> None:
    student: Path = editions["student"]
    assert not (student / "tests" / "hidden").exists()
    files = json.loads((student / "tests" / "grading" / "manifest.json").read_text())["files"]
    pristine = json.loads((student / "tests" / "grading" / "pristine.json").read_text())
    assert not [p for p in list(files) + list(pristine) if p.startswith("tests/hidden/")]
    if (REPO_ROOT / "tests" / "hidden").is_dir():
        assert (editions["instructor"] / "tests" / "hidden").is_dir()


def test_student_edition_imports_its_own_packages(editions) -> None:
    student: Path = editions["student"]
    code = (
        "import importlib, pkgutil, sys\n"
        f"for name in {LAB_PACKAGES!r}:\n"
        "    pkg = importlib.import_module(name)\n"
        "    assert pkg.__file__.startswith(sys.argv[1]), pkg.__file__\n"
        "    for info in pkgutil.walk_packages(pkg.__path__, name + '.'):\n"
        "        if not info.name.endswith('__main__'):\n"
        "            importlib.import_module(info.name)\n"
        "print('ok')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(student)], cwd=student, env=_env(student),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]


def test_student_notebooks_open_with_exercise_outputs_cleared(editions) -> None:
    student: Path = editions["student"]
    notebooks = sorted((REPO_ROOT / "labs").glob("*.ipynb"))
    assert [p.name for p in notebooks] == ["lab01_cluster_sim.ipynb", "lab02_device_plugin.ipynb"]
    for path in notebooks:
        nb = nbformat.read(student / "labs" / path.name, as_version=4)
        nbformat.validate(nb)
        first = next(k for k, c in enumerate(nb.cells) if "exercise" in c.metadata.get("tags", []))
        for k, cell in enumerate(nb.cells):
            if cell.cell_type == "code" and ({"exercise", "check"} & set(cell.metadata.get("tags", []))
                                             or k > first and "keep-output" not in cell.metadata.get("tags", [])):
                # exercises, checks, and what comes after them (outputs of the solutions: review, 18)
                assert cell.outputs == [] and cell.execution_count is None, (path.name, cell.source[:60])
            if cell.cell_type == "code":
                assert "### BEGIN SOLUTION" not in cell.source


@pytest.fixture(scope="module")
def graded(editions, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    out = tmp_path_factory.mktemp("results")
    return {name: _grade(editions[name], out / f"{name}.json") for name in ("student", "instructor")}


def test_instructor_edition_scores_full_marks(graded) -> None:
    doc = graded["instructor"]
    failed = [(t["number"], t["output"]) for t in doc["tests"] if t["status"] != "passed"]
    assert not failed, failed
    assert doc["tests"], "no graded tests ran"
    assert doc["score"] == sum(t["max_score"] for t in doc["tests"])


def test_every_graded_test_fails_on_the_student_edition(graded) -> None:
    student, instructor = graded["student"], graded["instructor"]
    visible = {t["number"] for t in instructor["tests"] if not t["extra_data"]["hidden"]}
    assert {t["number"] for t in student["tests"]} == visible
    passing = [t["number"] for t in student["tests"] if t["status"] == "passed" or t["score"] > 0]
    assert not passing, f"graded tests that do not depend on learner code: {passing}"
    assert student["score"] == 0


def test_each_graded_part_has_learner_code(editions, graded) -> None:
    """A part graded without any solution region would grade nothing the learner wrote."""
    graded_parts = {t["tags"][0] for t in graded["instructor"]["tests"]}
    region_parts = {r.part for r in editions["regions"]}
    assert graded_parts and graded_parts <= region_parts, sorted(graded_parts - region_parts)


CROSS_PART: dict[str, set[str]] = {}
"""Graded tests that also need another part's code: none (1B.3 uses first-fit only)."""


def test_student_failures_come_from_the_parts_own_code(graded) -> None:
    """Each graded test fails on "your code here (<its part>)", not on an unrelated error or
    on another part's missing code, so a learner's points for a part depend on that part."""
    wrong = []
    for t in graded["student"]["tests"]:
        allowed = {t["tags"][0]} | CROSS_PART.get(t["number"], set())
        if not any(f"your code here ({p})" in t["output"] for p in allowed):
            wrong.append((t["number"], t["output"][:200]))
    assert not wrong, wrong


# -- the tool on tiny inputs ------------------------------------------------------------------
SOURCE = '''def score(x):
    """Docstring stays."""
    if x < 0:
        raise ValueError("x")
    ### BEGIN SOLUTION 1A
    y = x * 2
    return y
    ### END SOLUTION


class K:
    def method(self):
        """Method doc."""
        ### BEGIN SOLUTION
        return 1
        ### END SOLUTION
'''


def test_strip_replaces_regions_at_their_indent_and_keeps_the_rest() -> None:
    text, regions = tool.strip_solutions(SOURCE, "pkg/mod.py", part_of={"method": "2B"})
    assert [(r.function, r.part, r.begin, r.end) for r in regions] == [("score", "1A", 5, 8), ("method", "2B", 14, 16)]
    assert text == SOURCE.replace(
        '    ### BEGIN SOLUTION 1A\n    y = x * 2\n    return y\n    ### END SOLUTION\n',
        '    raise NotImplementedError("your code here (1A)")\n').replace(
        '        ### BEGIN SOLUTION\n        return 1\n        ### END SOLUTION\n',
        '        raise NotImplementedError("your code here (2B)")\n')
    compile(text, "mod.py", "exec")  # still valid Python


@pytest.mark.parametrize("source, message", [
    ("def f():\n    ### END SOLUTION\n", "mod.py:2: END SOLUTION without a BEGIN SOLUTION"),
    ("def f():\n    ### BEGIN SOLUTION 1A\n    pass\n", "mod.py:2: BEGIN SOLUTION without an END SOLUTION"),
    ("def f():\n    ### BEGIN SOLUTION 1A\n    ### BEGIN SOLUTION 1A\n", "mod.py:3: BEGIN SOLUTION inside the region opened at line 2"),
    ("def unknown_fn():\n    ### BEGIN SOLUTION\n    pass\n    ### END SOLUTION\n", "mod.py:2: solution region in 'unknown_fn' names no part"),
    ("x = 1  ### BEGIN SOLUTION\n", "mod.py:1: a solution marker must stand alone"),
])
def test_bad_markers_are_named_by_file_and_line(source: str, message: str) -> None:
    with pytest.raises(tool.EditionError, match=re.escape(message)):
        tool.strip_solutions(source, "mod.py")


def test_notebook_regions_and_exercise_outputs(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("intro"),
        nbformat.v4.new_code_cell("print('before the exercises')"),
        nbformat.v4.new_code_cell("answer = 1\n### BEGIN SOLUTION 1C\nanswer = 42\n### END SOLUTION\n"),
        nbformat.v4.new_code_cell("print(answer)"),
        nbformat.v4.new_code_cell("check('1C')"),
        nbformat.v4.new_code_cell("print('a table that does not use the answer')"),
    ]
    nb.cells[4].metadata["tags"] = ["check"]
    nb.cells[5].metadata["tags"] = ["keep-output"]
    for cell in nb.cells[1:]:
        cell.outputs = [nbformat.v4.new_output("stream", text="out\n")]
        cell.execution_count = 1
    raw, regions = tool.strip_notebook(nbformat.writes(nb), "labs/x.ipynb")
    out = nbformat.reads(raw, as_version=4)
    nbformat.validate(out)
    assert [r.part for r in regions] == ["1C"]
    assert out.cells[2].source == 'answer = 1\nraise NotImplementedError("your code here (1C)")\n'
    assert out.cells[2].outputs == [] and out.cells[4].outputs == []   # solution and check cells cleared
    assert out.cells[3].outputs == []   # after the first exercise: computed with the solution (review, 18)
    assert out.cells[1].outputs[0]["text"] == "out\n"                   # before any exercise: kept
    assert out.cells[5].outputs[0]["text"] == "out\n"                   # tagged keep-output: kept


def test_build_refuses_a_non_empty_folder(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(tool.EditionError, match="not empty"):
        tool.build(tmp_path)
    assert (tmp_path / "keep.txt").read_text() == "mine"


def test_check_cell_in_the_student_edition_says_what_to_do(editions) -> None:
    """The notebooks' check helper, run in the student edition, reports the failures and
    points at the function to write."""
    student: Path = editions["student"]
    env = _env(student)
    env["PYTHONPATH"] = ""  # labcheck itself puts the checkout first on sys.path
    proc = subprocess.run([sys.executable, "-c", "import labcheck; labcheck.check('2C')"],
                          cwd=student / "labs", env=env, capture_output=True, text=True, timeout=600)
    out = proc.stdout
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Part 2C (MIG profiles as resource names): 0 of 2 graded tests pass, 0 of 5 points." in out
    assert "NotImplementedError: your code here (2C)" in out
    assert "Look at: lab02_device_plugin/plugin/mig.py: mixed_resource_name" in out


# -- the learner's own commands, in a copy of the student edition ------------------------------
@pytest.fixture(scope="module")
def learner_checkout(student_edition, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the student edition, as a learner's checkout (commands write into it)."""
    copy = tmp_path_factory.mktemp("learner") / "checkout"
    shutil.copytree(student_edition[0], copy)
    return copy


def _make(root: Path, *args: str, dry: bool = False) -> subprocess.CompletedProcess:
    env = {k: v for k, v in _env(root).items() if k not in ("MAKEFLAGS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD")}
    return subprocess.run(["make", "-s", *(["-n"] if dry else []), *args, f"PYTHON={sys.executable}"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=GRADE_TIMEOUT_S)


def test_student_readme_and_makefile_commands_work(learner_checkout: Path) -> None:
    """Every command of the student edition's README runs there (setup and lab as dry runs:
    they would install packages and open a browser), and does what the README says."""
    root = learner_checkout
    readme = (root / "README.md").read_text()
    assert "make quickstart" not in readme and "BEGIN SOLUTION" not in readme
    commands = [ln.split("#")[0].strip() for block in re.findall(r"```bash\n(.*?)```", readme, re.S)
                for ln in block.splitlines() if ln.split("#")[0].strip()]
    assert commands == ["make setup", "make lab", "make check PART=1A", "make grade", "make submission"]
    out = {}
    for command in commands:
        args = command.split()[1:]
        proc = _make(root, *args, dry=args[0] in ("setup", "lab"))
        assert proc.returncode == 0, (command, proc.stdout[-2000:], proc.stderr[-2000:])
        out[args[0]] = proc.stdout
    assert "pip install --require-hashes -r requirements.lock" in out["setup"] and (root / "requirements.lock").is_file()
    assert "pip install --no-deps --no-build-isolation -e ." in out["setup"] and "jupyter lab labs/" in out["lab"]
    assert re.search(r"^1A\s+4\s+0\s+0 / 6", out["check"], re.M), out["check"]   # 4 tests, 6 points, none yet
    assert re.search(r"^total\s+30\s+0\s+0 / 56", out["grade"], re.M), out["grade"]
    with zipfile.ZipFile(root / "submission.zip") as zf:
        names = set(zf.namelist())
    spec = json.loads((root / "tests" / "grading" / "submission.json").read_text())
    assert set(spec["files"]) | {"written_answers.html", *spec["notebooks"]} == names
    assert "part(s) 1A still say 'your code here'" in out["submission"]
    assert "written answers not given yet: 1A-written, 1C-written, 1D-written, 2A-written, 2C-written" in out["submission"]
    html = (root / "written_answers.html").read_text()
    assert "GRADING GUIDE" not in html and "Grading guide" not in html and html.count("YOUR ANSWER HERE") == 5
    assert "check PART=" in _make(root, "help").stdout
    # batch grading works from the student edition too (its autograder has no hidden tests)
    (root / "subs").mkdir()
    shutil.copy2(root / "submission.zip", root / "subs" / "learner.zip")
    with tempfile.TemporaryDirectory(prefix="runtime-") as tmp:
        os.chmod(tmp, 0o711)
        runtime = readable_runtime(Path(tmp) / "rt")  # as root: an interpreter the learner's uid can run
        worker = ["--worker-python", runtime[0], *[a for p in runtime[1] for a in ("--worker-path", p)]] \
            if runtime else []
        proc = subprocess.run([sys.executable, "tools/grade_submissions.py", "subs", "--out", "book.csv", "--jobs",
                               "1", *worker], cwd=root, capture_output=True, text=True, timeout=GRADE_TIMEOUT_S,
                              env={k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PYTEST"))})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "grading without hidden tests" in proc.stderr
    book = (root / "book.csv").read_text()
    row = book.splitlines()[1].split(",")
    assert row[:3] == ["learner.zip", "0", "56"]  # the student edition's stubs: 0 of the 56 visible points
    assert "safe process" not in book  # graded, not refused: the learner's code ran (and failed its tests)


def test_student_edition_drops_grading_guides_and_the_instructors_readme(student_edition) -> None:
    student, _ = student_edition
    readme = (student / "labs" / "README.md").read_text()
    assert "## For learners" in readme and "For instructors" not in readme and "manifest.py write" not in readme
    for path in (student / "labs").glob("*.ipynb"):
        nb = nbformat.read(path, as_version=4)
        answers = [c for c in nb.cells if "written-answer" in c.metadata.get("tags", [])]
        assert answers and all(c.source.rstrip().endswith("YOUR ANSWER HERE") for c in answers)
        assert not [c for c in answers if "GRADING GUIDE" in c.source or "Grading guide" in c.source]


def test_edited_plugin_and_root_conftest_refuse_local_grading(learner_checkout: Path) -> None:
    """An edited grading plugin (full marks from its results writer) and a root conftest.py
    (every test passes) are caught by `make grade`: that run is refused with score 0, the
    files are put back / moved aside, and the next run grades the learner's code (0 of 56)."""
    root = learner_checkout
    plugin = root / "tests" / "grading" / "plugin.py"
    original = plugin.read_text()
    plugin.write_text(original + '\nGrader.results_json = lambda self: {"score": 56.0, "tests": []}\n')
    (root / "conftest.py").write_text(
        "import pytest\n\n@pytest.hookimpl(wrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
        "    report = yield\n    report.outcome = 'passed'\n    return report\n")
    proc = _make(root, "grade")
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "grading refused" in text, text[-2000:]
    assert "conftest.py" in text and "tests/grading/plugin.py" in text and "manifest.py write" not in text
    doc = json.loads((root / "test-artifacts" / "results.json").read_text())
    assert doc["score"] == 0 and "grading refused" in doc["output"]
    assert plugin.read_text() == original and not (root / "conftest.py").exists()
    proc = _make(root, "grade")
    assert proc.returncode == 0 and re.search(r"^total\s+30\s+0\s+0 / 56", proc.stdout, re.M), proc.stdout[-2000:]


FLIP = (REPO_ROOT / "tests" / "grading_attacks" / "flip_plugin.py").read_text()


def test_a_module_that_shadows_the_grading_tools_refuses_local_grading(learner_checkout: Path) -> None:
    """The review's T14: a root-level ``pytest_timeout.py`` holding a hook that marks every
    test passed, loaded by ``-p pytest_timeout``. ``make grade`` (python -P: the checkout is
    not first on sys.path) and the review's own command (without -P: the file is imported)
    are both refused; the file is moved aside and the next run grades the learner's code."""
    root = learner_checkout
    shadow = root / "pytest_timeout.py"
    shadow.write_text(FLIP)
    proc = _make(root, "grade")
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "grading refused" in text and "pytest_timeout.py" in text, text[-2000:]
    assert not shadow.exists() and (root / "test-artifacts" / "grading-backup" / "pytest_timeout.py").is_file()
    shadow.write_text(FLIP)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "pytest_timeout", "--grade", "-q",
                           "--grade-json=test-artifacts/t14.json", "-p", "no:cacheprovider"], cwd=root,
                          env={**_env(root), "PYTHONPATH": ""}, capture_output=True, text=True, timeout=GRADE_TIMEOUT_S)
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "grading refused" in text, text[-2000:]
    assert "pytest_timeout (pytest_timeout.py) loaded from this checkout" in text
    assert json.loads((root / "test-artifacts" / "t14.json").read_text())["score"] == 0
    assert not shadow.exists()
    proc = _make(root, "grade")
    assert proc.returncode == 0 and re.search(r"^total\s+30\s+0\s+0 / 56", proc.stdout, re.M), proc.stdout[-2000:]


def test_the_1A_question_does_not_state_its_own_answer(student_edition) -> None:
    """The review's finding 15: the question before 1A's answer cell used to explain the order
    (packing keeps whole GPUs free, FGD scores the growth of fragmentation), which is the
    grading guide's second point. It now asks for that explanation."""
    student, _ = student_edition
    nb = nbformat.read(student / "labs" / "lab01_cluster_sim.ipynb", as_version=4)
    index = next(k for k, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == "1A-written")
    question = nb.cells[index - 1].source
    assert "explain the order" in question
    assert "leaves whole GPUs free" not in question and "*increases* the" not in question
