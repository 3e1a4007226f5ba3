"""What is graded, read without running anything: graded tests, learner files, written answers.

The grader's parent process (:mod:`grading.runner`) must know the points before any learner
code runs, and must never import a test module (that would import learner code). So it
reads the course's own files as text:

- :func:`declared_tests`: the ``@pytest.mark.points(...)`` decorators of the graded and
  hidden test files, with ``ast`` (points, part, number, visibility, the docstring's first
  paragraph as the test's name);
- :func:`learner_files`: the lab package files of the student edition that hold a
  ``raise NotImplementedError("your code here (1A)")`` stub, and the parts each holds:
  what a learner must submit (tools/make_student_edition.py writes these stubs);
- :func:`written_questions`: the notebooks' written-answer cells, marked with nbgrader's
  cell metadata (``"nbgrader": {"grade": true, "solution": true, "points": N,
  "grade_id": ...}``) and the tag ``written-answer``; graded by hand.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path

HIDDEN_DIR = "tests/hidden"
LAB_PACKAGES = ("lab01_cluster_sim", "lab02_device_plugin")
STUB_RE = re.compile(r'raise NotImplementedError\("your code here \(([0-9]+[A-Z][A-Za-z0-9]*)\)"\)')
WRITTEN_TAG = "written-answer"
MAX_SOURCE_BYTES = 1_000_000
"""Largest course source file read here (a bound; the course's own files are far smaller)."""


@dataclass(frozen=True)
class DeclaredTest:
    """A graded test as written in its file.

    Attributes:
        nodeid: pytest node id without parameters, ``tests/lab01/graded/test_x.py::test_y``
            (``...::Class::test_y`` for a method).
        points: points of the test (of each case, for a parametrized test).
        part: the part id, ``"1A"``.
        number: the number in the marker, or the automatic one (``part.N`` in file order).
        hidden: the test lives under ``tests/hidden/``.
        visibility: Gradescope visibility (``after_published`` by default for hidden tests).
        title: first paragraph of the docstring (the test's name in the results), else the
            function name.
        parametrized: the function carries ``@pytest.mark.parametrize``.
        cases: how many cases pytest makes of it (1 unless parametrized; the product of
            the lengths of literal ``parametrize`` lists; 0 when a list is not literal, and
            then no case of it is scored).
        uses_partial_credit: the function asks for the ``partial_credit`` fixture (only
            then does a ``partial_credit`` property in the report count).
    """

    nodeid: str
    points: float
    part: str
    number: str
    hidden: bool
    visibility: str
    title: str
    parametrized: bool = False
    cases: int = 1
    uses_partial_credit: bool = False

    @property
    def file(self) -> str:
        """The test file, POSIX, relative to the repository root."""
        return self.nodeid.split("::")[0]


def _is_mark(dec: ast.expr, name: str) -> bool:
    func = dec.func if isinstance(dec, ast.Call) else dec
    return isinstance(func, ast.Attribute) and func.attr == name


def _case_count(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Cases of a parametrized test from literal ``parametrize`` argument lists; 0 if unknown."""
    total = 1
    for dec in node.decorator_list:
        if not (isinstance(dec, ast.Call) and _is_mark(dec, "parametrize")):
            continue
        values = dec.args[1] if len(dec.args) > 1 else next(
            (k.value for k in dec.keywords if k.arg == "argvalues"), None)
        if not isinstance(values, (ast.List, ast.Tuple)):
            return 0
        total *= len(values.elts)
    return total


def declared_tests(paths: list[Path], rootpath: Path) -> list[DeclaredTest]:
    """Graded tests declared in the ``test_*.py`` files under ``paths`` (files or folders).

    Only literal markers are seen (``@pytest.mark.points(2, part="1A", number="1A.1")``
    on a function or on a method of a class); a file that does not parse is skipped.
    Automatic numbers follow the plugin's rule: the next free ``part.N`` in file order.
    """
    files: set[Path] = set()
    for path in paths:
        if path.is_dir():
            files.update(p for p in path.rglob("test_*.py") if "__pycache__" not in p.parts)
        elif path.is_file() and path.name.startswith("test_") and path.suffix == ".py":
            files.add(path)
    raw: list[tuple] = []
    for file in sorted(files, key=lambda p: p.as_posix()):
        try:
            if file.stat().st_size > MAX_SOURCE_BYTES:
                continue
            tree = ast.parse(file.read_text(encoding="utf-8"))
            rel = file.resolve().relative_to(rootpath.resolve()).as_posix()
        except (SyntaxError, ValueError, OSError, UnicodeDecodeError):
            continue
        hidden = rel.startswith(HIDDEN_DIR + "/")
        scopes = [(node, "") for node in tree.body]
        scopes += [(n, f"{c.name}::") for c in tree.body if isinstance(c, ast.ClassDef) for n in c.body]
        for node, prefix in scopes:
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            parametrized = any(_is_mark(d, "parametrize") for d in node.decorator_list)
            for dec in node.decorator_list:
                if not (isinstance(dec, ast.Call) and _is_mark(dec, "points") and dec.args):
                    continue
                try:
                    kwargs = {k.arg: ast.literal_eval(k.value) for k in dec.keywords}
                    points = float(ast.literal_eval(dec.args[0]))
                except (ValueError, TypeError, SyntaxError):
                    continue
                part = kwargs.get("part")
                if not isinstance(part, str):
                    continue
                doc = ast.get_docstring(node)
                title = " ".join(doc.strip().split("\n\n")[0].split()) if doc and doc.strip() else node.name
                visibility = kwargs.get("visibility", "after_published" if hidden else "visible")
                number = kwargs.get("number") if isinstance(kwargs.get("number"), str) else None
                params = [a.arg for a in node.args.args + node.args.kwonlyargs]
                raw.append((f"{rel}::{prefix}{node.name}", points, part, number, hidden,
                            str(visibility), title, parametrized, _case_count(node) if parametrized else 1,
                            "partial_credit" in params))
    explicit = {r[3] for r in raw if r[3]}
    counters: dict[str, int] = {}
    out = []
    for nodeid, points, part, number, hidden, visibility, title, parametrized, cases, credit in raw:
        if number is None:
            while True:
                counters[part] = counters.get(part, 0) + 1
                number = f"{part}.{counters[part]}"
                if number not in explicit:
                    break
        out.append(DeclaredTest(nodeid, points, part, number, hidden, visibility, title, parametrized, cases,
                                credit))
    return out


def learner_files(course: Path) -> dict[str, tuple[str, ...]]:
    """Lab package files of a student edition that hold learner stubs, and their parts.

    Args:
        course: root of a student edition (stubs ``raise NotImplementedError("your code
            here (1A)")`` in place of the solutions).

    Returns:
        POSIX path relative to ``course`` -> sorted part ids, e.g.
        ``{"lab01_cluster_sim/metrics.py": ("1B",), "lab02_device_plugin/plugin/sharing.py":
        ("2A", "2B")}``; sorted by path.
    """
    found: dict[str, tuple[str, ...]] = {}
    for package in LAB_PACKAGES:
        base = course / package
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*.py")):
            if "__pycache__" in path.parts or path.stat().st_size > MAX_SOURCE_BYTES:
                continue
            parts = sorted(set(STUB_RE.findall(path.read_text(encoding="utf-8"))))
            if parts:
                found[path.relative_to(course).as_posix()] = tuple(parts)
    return dict(sorted(found.items()))


@dataclass(frozen=True)
class LearnerFunction:
    """A function the learner writes: a module-level function of a learner file whose body
    holds a ``your code here (PART)`` stub in the student edition.

    Attributes:
        module: dotted module, ``lab01_cluster_sim.metrics``.
        name: function name, ``count_stranded_gpus``.
        part: the part id of its stub.
        file: the file, POSIX, relative to the course root.
    """

    module: str
    name: str
    part: str
    file: str


def _segment(lines: list[str], node: ast.AST) -> str:
    """The source text of ``node``, as :func:`ast.get_source_segment` gives it, from the
    file's lines split once (that function splits the whole file again at each call,
    which made reading the course's learner files take seconds)."""
    if getattr(node, "end_lineno", None) is None or getattr(node, "end_col_offset", None) is None:
        return ""
    first, last = node.lineno - 1, node.end_lineno - 1
    if first == last:
        return lines[first].encode()[node.col_offset:node.end_col_offset].decode()
    head = lines[first].encode()[node.col_offset:].decode()
    tail = lines[last].encode()[:node.end_col_offset].decode()
    return "\n".join([head, *lines[first + 1:last], tail])


def learner_functions(course: Path) -> list[LearnerFunction]:
    """The learner's functions of a student edition, in file order (read with ``ast``).

    Raises:
        ValueError: a stub outside a module-level function (the grader can only proxy
            module-level functions); the message names the file and line.
    """
    out: list[LearnerFunction] = []
    for rel in learner_files(course):
        source = (course / rel).read_text(encoding="utf-8")
        tree = ast.parse(source)
        lines = source.split("\n")  # read_text made every line end "\n": Python's own line numbers
        module = rel[:-3].replace("/", ".").removesuffix(".__init__")
        owned: set[int] = set()
        for node in tree.body:
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            parts = sorted({p for sub in ast.walk(node) if isinstance(sub, ast.Raise)
                            for p in STUB_RE.findall(_segment(lines, sub))})
            for sub in ast.walk(node):
                owned.add(id(sub))
            if len(parts) > 1:
                raise ValueError(f"{rel}:{node.lineno}: {node.name} holds stubs of parts {parts}; one part per function")
            if parts:
                out.append(LearnerFunction(module, node.name, parts[0], rel))
        for sub in ast.walk(tree):
            if isinstance(sub, ast.Raise) and id(sub) not in owned and STUB_RE.search(ast.unparse(sub)):
                raise ValueError(f"{rel}:{sub.lineno}: a 'your code here' stub outside a module-level function "
                                 "(the autograder runs only module-level learner functions in its worker)")
    return out


@dataclass(frozen=True)
class WrittenQuestion:
    """A written (free-text) question of a lab notebook, graded by hand.

    Attributes:
        grade_id: nbgrader's ``grade_id`` of the answer cell, e.g. ``"1A-written"``.
        part: the part it belongs to (``"1A"``).
        points: points an instructor awards by hand.
        notebook: POSIX path of the notebook (``labs/lab01_cluster_sim.ipynb``).
        question: the markdown of the cell just before the answer cell (the question).
        answer: the answer cell's markdown (the learner's answer, or the placeholder).
    """

    grade_id: str
    part: str
    points: float
    notebook: str
    question: str
    answer: str


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def written_questions(notebook: Path, rel: str | None = None) -> list[WrittenQuestion]:
    """Written-answer cells of one notebook (JSON read directly; no code runs).

    An answer cell is a markdown cell with the tag ``written-answer`` and nbgrader metadata
    ``{"grade": true, "solution": true, "points": N, "grade_id": "<part>-..."}``.

    Raises:
        ValueError: an answer cell whose metadata lacks points or a grade_id that starts with
            a part id (the message names the notebook and the cell index).
    """
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    cells = nb.get("cells", [])
    out = []
    for index, cell in enumerate(cells):
        meta = cell.get("metadata", {})
        if WRITTEN_TAG not in meta.get("tags", []):
            continue
        grader = meta.get("nbgrader", {})
        grade_id = grader.get("grade_id", "")
        match = re.match(r"^([0-9]+[A-Z])", str(grade_id))
        points = grader.get("points")
        if (cell.get("cell_type") != "markdown" or not grader.get("grade") or not grader.get("solution")
                or not match or isinstance(points, bool) or not isinstance(points, (int, float)) or points <= 0):
            raise ValueError(f"{rel or notebook}: cell {index}: a written-answer cell must be a markdown cell with "
                             "nbgrader metadata grade=true, solution=true, points > 0 and a grade_id "
                             f"starting with its part (e.g. '1A-written'); got {grader!r}")
        question = _source(cells[index - 1]) if index > 0 else ""
        out.append(WrittenQuestion(grade_id, match.group(1), float(points), rel or notebook.as_posix(),
                                   question, _source(cell)))
    return out
