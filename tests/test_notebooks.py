"""The lab notebooks: structure, saved outputs, and nbval (strict mode) on both.

nbval re-executes every notebook and compares each cell's output with the saved one,
after the sanitizers in ``labs/nbval_sanitize.cfg``. It runs in a subprocess (its own
pytest session, with a timeout as a safety net for a hung kernel, not a speed goal), so
``python -m pytest`` covers it. Command by hand::

    python -m pytest --nbval --nbval-current-env --nbval-sanitize-with labs/nbval_sanitize.cfg labs/
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
LABS = REPO_ROOT / "labs"
NOTEBOOKS = {"lab01_cluster_sim.ipynb": "1", "lab02_device_plugin.ipynb": "2"}
NBVAL_TIMEOUT_S = 1200


def _parts() -> dict:
    spec = importlib.util.spec_from_file_location("labcheck_for_tests", LABS / "labcheck.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module.PARTS


@pytest.fixture(scope="module", params=sorted(NOTEBOOKS))
def notebook(request) -> tuple[str, nbformat.NotebookNode]:
    return request.param, nbformat.read(LABS / request.param, as_version=4)


def _check_cells(nb) -> list:
    return [c for c in nb.cells if c.cell_type == "code" and "check" in c.metadata.get("tags", [])]


def test_notebook_is_valid_and_saved_with_outputs(notebook) -> None:
    name, nb = notebook
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code), f"{name}: run every cell before committing"
    assert all(c.outputs for c in _check_cells(nb)), f"{name}: check cells must be saved with their output"
    pngs = [o for c in code for o in c.outputs if "image/png" in o.get("data", {})]
    assert pngs, f"{name}: the instructor edition keeps its PNG figures"


def test_every_part_has_an_exercise_and_a_check_cell(notebook) -> None:
    name, nb = notebook
    PARTS = _parts()
    checked = [re.search(r'check\("(\w+)"\)', c.source).group(1) for c in _check_cells(nb)]
    lab = NOTEBOOKS[name]
    assert checked == sorted(p for p in PARTS if p.startswith(lab))
    exercises = [c for c in nb.cells if "exercise" in c.metadata.get("tags", [])]
    assert len(exercises) >= len(checked)
    for c in _check_cells(nb):
        assert "graded tests pass" in "".join(o.get("text", "") for o in c.outputs), c.source


def test_ignored_outputs_give_a_reason(notebook) -> None:
    name, nb = notebook
    for c in nb.cells:
        for line in c.source.splitlines():
            if "NBVAL_IGNORE_OUTPUT" in line:
                assert re.search(r"NBVAL_IGNORE_OUTPUT\s*[:(-]\s*\S", line), f"{name}: {line!r} needs a reason"


def test_nbval_strict_passes_on_both_notebooks() -> None:
    env = dict(os.environ)
    env.pop("PYTEST_ADDOPTS", None)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval", "--nbval-current-env",
         "--nbval-sanitize-with", "labs/nbval_sanitize.cfg", "-p", "no:cacheprovider", "-q",
         *[f"labs/{n}" for n in sorted(NOTEBOOKS)]],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=NBVAL_TIMEOUT_S)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]

