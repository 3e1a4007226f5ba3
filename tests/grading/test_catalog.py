"""What the grader's parent process reads without running anything (grading/catalog.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grading import catalog

REPO_ROOT = Path(__file__).resolve().parents[2]

TESTS = '''
import pytest

@pytest.mark.points(2, part="1A", number="1A.1")
def test_a():
    """First line of the docstring.

    Not this paragraph."""

@pytest.mark.points(1, part="1A")
@pytest.mark.parametrize("x", [1, 2])
def test_auto(x):
    pass

class TestK:
    @pytest.mark.points(3, part="1B")
    def test_m(self):
        pass

def test_not_graded():
    pass
'''


def test_declared_tests_read_markers_titles_and_numbers(tmp_path: Path) -> None:
    folder = tmp_path / "tests" / "lab01" / "graded"
    folder.mkdir(parents=True)
    (folder / "test_x.py").write_text(TESTS)
    (folder / "test_broken.py").write_text("def (:\n")  # skipped: does not parse
    tests = catalog.declared_tests([tmp_path / "tests"], tmp_path)
    assert [(t.nodeid.split("::", 1)[1], t.points, t.part, t.number, t.title, t.parametrized, t.visibility)
            for t in tests] == [
        ("test_a", 2.0, "1A", "1A.1", "First line of the docstring.", False, "visible"),
        ("test_auto", 1.0, "1A", "1A.2", "test_auto", True, "visible"),   # next free number of 1A
        ("TestK::test_m", 3.0, "1B", "1B.1", "test_m", False, "visible"),
    ]
    hidden = tmp_path / "tests" / "hidden"
    hidden.mkdir()
    (hidden / "test_h.py").write_text('import pytest\n@pytest.mark.points(1, part="1A", number="1A.h1")\n'
                                      'def test_h():\n    pass\n')
    h = catalog.declared_tests([hidden], tmp_path)
    assert [(t.hidden, t.visibility, t.file) for t in h] == [(True, "after_published", "tests/hidden/test_h.py")]


def test_repository_graded_tests_are_all_declared_with_literal_numbers() -> None:
    """The autograder scores from these declarations: 30 visible tests worth 56 points and
    18 hidden tests worth 65 (one fixed case per part, 9, and one of random instances per
    part worth its visible points, 56), every one with its own literal number."""
    visible = catalog.declared_tests([REPO_ROOT / "tests" / "lab01" / "graded",
                                      REPO_ROOT / "tests" / "lab02" / "graded"], REPO_ROOT)
    hidden = catalog.declared_tests([REPO_ROOT / "tests" / "hidden"], REPO_ROOT)
    assert (len(visible), sum(t.points for t in visible)) == (30, 56.0)
    assert (len(hidden), sum(t.points for t in hidden)) == (18, 65.0)
    numbers = [t.number for t in visible + hidden]
    assert len(set(numbers)) == len(numbers)
    for t in visible + hidden:
        source = (REPO_ROOT / t.file).read_text()
        assert f'number="{t.number}"' in source, t.nodeid


def test_written_questions_of_the_notebooks() -> None:
    found = []
    for nb in sorted((REPO_ROOT / "labs").glob("*.ipynb")):
        found += catalog.written_questions(nb, nb.relative_to(REPO_ROOT).as_posix())
    assert [(q.grade_id, q.part, q.points) for q in found] == [
        ("1A-written", "1A", 2.0), ("1C-written", "1C", 2.0), ("1D-written", "1D", 2.0),
        ("2A-written", "2A", 2.0), ("2C-written", "2C", 2.0)]
    assert all("YOUR ANSWER HERE" in q.answer and q.question.strip() for q in found)


def test_a_malformed_written_answer_cell_is_named(tmp_path: Path) -> None:
    nb = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": "Why?"},
                    {"cell_type": "markdown", "metadata": {"tags": ["written-answer"],
                                                           "nbgrader": {"grade": True, "solution": True}},
                     "source": "YOUR ANSWER HERE"}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "lab.ipynb"
    path.write_text(json.dumps(nb))
    with pytest.raises(ValueError, match=r"labs/lab\.ipynb: cell 1: a written-answer cell must be a markdown cell"):
        catalog.written_questions(path, "labs/lab.ipynb")


def test_learner_files_are_the_files_with_stubs(tmp_path: Path) -> None:
    pkg = tmp_path / "lab01_cluster_sim"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "a.py").write_text('def f():\n    raise NotImplementedError("your code here (1B)")\n')
    (pkg / "sub" / "b.py").write_text('raise NotImplementedError("your code here (2A)")\n'
                                      'raise NotImplementedError("your code here (1C)")\n')
    (pkg / "c.py").write_text("raise NotImplementedError\n")  # an abstract method, not a stub
    assert catalog.learner_files(tmp_path) == {"lab01_cluster_sim/a.py": ("1B",),
                                               "lab01_cluster_sim/sub/b.py": ("1C", "2A")}


def test_learner_functions_read_each_stub_once_per_function(tmp_path: Path) -> None:
    """The stubs are found from the file's lines split once (as ast.get_source_segment
    would find them): a multi-line raise, a line with non-ASCII text before the stub, a
    stub text inside a string that is no raise, and a function with no stub."""
    pkg = tmp_path / "lab01_cluster_sim"
    pkg.mkdir()
    (pkg / "m.py").write_text(
        'def résumé():\n'
        '    x = "é"; raise NotImplementedError("your code here (1A)")\n'
        '\n'
        'def two_lines():\n'
        '    raise NotImplementedError(\n'
        '        "your code here (1B)")\n'
        '\n'
        'def not_a_raise():\n'
        '    return \'raise NotImplementedError("your code here (1C)")\'\n'
        '\n'
        'def done():\n'
        '    raise ValueError("no stub")\n')
    got = [(f.name, f.part) for f in catalog.learner_functions(tmp_path)]
    # résumé: 1A (col offsets are bytes: "é" is 2); two_lines: its text spans lines 5-6 and is
    # not the stub's exact text, as with ast.get_source_segment; not_a_raise: no Raise node
    assert got == [("résumé", "1A")]
    assert catalog.learner_files(tmp_path) == {"lab01_cluster_sim/m.py": ("1A", "1C")}
