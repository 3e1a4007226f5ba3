"""The points the lab READMEs and notebooks announce are the points the graded tests and the
written-answer cells carry.

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


def readme_rows(path: Path) -> dict[str, tuple[int, float, float, float]]:
    """part -> (graded tests, points, hidden points, written points) from a README's points table."""
    rows = {}
    for line in path.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 7 and re.fullmatch(r"\d[A-Z]", cells[0]):
            rows[cells[0]] = (int(cells[3]), float(cells[4]), float(cells[5]), float(cells[6]))
    return rows


NOTEBOOKS = {"1": "lab01_cluster_sim.ipynb", "2": "lab02_device_plugin.ipynb"}


def written_points(lab: str) -> dict[str, float]:
    """part -> points of its written answers (nbgrader metadata of the notebook's answer cells)."""
    out: dict[str, float] = defaultdict(float)
    for cell in nbformat.read(REPO_ROOT / "labs" / NOTEBOOKS[lab], as_version=4).cells:
        if "written-answer" in cell.metadata.get("tags", []):
            meta = cell.metadata["nbgrader"]
            assert meta["grade"] and meta["solution"] and not meta["locked"], meta
            out[meta["grade_id"][:2]] += float(meta["points"])
    return out


@pytest.mark.parametrize("lab", ["1", "2"])
def test_readme_points_match_the_graded_tests(lab: str) -> None:
    visible = declared_points(REPO_ROOT / "tests" / f"lab0{lab}" / "graded")
    hidden = declared_points(REPO_ROOT / "tests" / "hidden")
    written = written_points(lab)
    rows = readme_rows(REPO_ROOT / "labs" / f"README-lab0{lab}.md")
    expected = {part: (len(pts), sum(pts), sum(hidden.get(part, [])), written.get(part, 0.0))
                for part, pts in visible.items() if part.startswith(lab)}
    if not (REPO_ROOT / "tests" / "hidden").is_dir():  # the student edition
        rows = {p: (r[0], r[1], 0.0, r[3]) for p, r in rows.items()}
        expected = {p: (e[0], e[1], 0.0, e[3]) for p, e in expected.items()}
    assert rows == expected


@pytest.mark.parametrize("lab", ["1", "2"])
def test_notebook_intro_points_match(lab: str) -> None:
    intro = nbformat.read(REPO_ROOT / "labs" / NOTEBOOKS[lab], as_version=4).cells[0].source
    announced = {m.group(1): float(m.group(2))
                 for m in re.finditer(r"^\| (\d[A-Z]) \|.*\| (\d+) \|$", intro, re.M)}
    visible = declared_points(REPO_ROOT / "tests" / f"lab0{lab}" / "graded")
    assert announced == {p: sum(v) for p, v in visible.items() if p.startswith(lab)}
    written = written_points(lab)
    parts = sorted(written)
    said = " and ".join([", ".join(parts[:-1]), parts[-1]]) if len(parts) > 1 else parts[0]
    assert f"(parts {said}, 2 points each, {sum(written.values()):g} in all, graded by hand)" in " ".join(intro.split())
