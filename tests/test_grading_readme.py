"""The points the lab READMEs and notebooks announce are the points the graded tests carry.

Points are read from the ``@pytest.mark.points(...)`` decorators with ``ast`` (no test is
run), then compared with the tables in labs/README-lab0N.md and the notebooks' intro.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import nbformat
import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def declared_points(folder: Path) -> dict[str, list[float]]:
    """part -> points of each graded test under ``folder`` (from the decorators)."""
    out: dict[str, list[float]] = defaultdict(list)
    for path in sorted(folder.rglob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for dec in node.decorator_list:
                if (isinstance(dec, ast.Call) and isinstance(dec.func, ast.Attribute)
                        and dec.func.attr == "points"):
                    part = next(k.value.value for k in dec.keywords if k.arg == "part")
                    out[part].append(float(dec.args[0].value))
    return out


def readme_rows(path: Path) -> dict[str, tuple[int, float, float]]:
    """part -> (graded tests, points, hidden points) from a README's points table."""
    rows = {}
    for line in path.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 6 and re.fullmatch(r"\d[A-Z]", cells[0]):
            rows[cells[0]] = (int(cells[3]), float(cells[4]), float(cells[5]))
    return rows


@pytest.mark.parametrize("lab", ["1", "2"])
def test_readme_points_match_the_graded_tests(lab: str) -> None:
    visible = declared_points(REPO_ROOT / "tests" / f"lab0{lab}" / "graded")
    hidden = declared_points(REPO_ROOT / "tests" / "hidden")
    rows = readme_rows(REPO_ROOT / "labs" / f"README-lab0{lab}.md")
    expected = {part: (len(pts), sum(pts), sum(hidden.get(part, [])))
                for part, pts in visible.items() if part.startswith(lab)}
    if not (REPO_ROOT / "tests" / "hidden").is_dir():  # the student edition
        rows = {p: r[:2] + (0.0,) for p, r in rows.items()}
        expected = {p: e[:2] + (0.0,) for p, e in expected.items()}
    assert rows == expected


@pytest.mark.parametrize("lab, notebook", [("1", "lab01_cluster_sim.ipynb"), ("2", "lab02_device_plugin.ipynb")])
def test_notebook_intro_points_match(lab: str, notebook: str) -> None:
    intro = nbformat.read(REPO_ROOT / "labs" / notebook, as_version=4).cells[0].source
    announced = {m.group(1): float(m.group(2))
                 for m in re.finditer(r"^\| (\d[A-Z]) \|.*\| (\d+) \|$", intro, re.M)}
    visible = declared_points(REPO_ROOT / "tests" / f"lab0{lab}" / "graded")
    assert announced == {p: sum(v) for p, v in visible.items() if p.startswith(lab)}
