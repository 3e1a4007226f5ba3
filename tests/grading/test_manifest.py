"""The repository's own grading manifest and the results schema."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from grading import manifest

REPO_ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((Path(__file__).parent / "results.schema.json").read_text())


def test_manifest_matches_the_test_files() -> None:
    """Fails when a protected test file changed without regenerating the manifest."""
    report = manifest.restore(REPO_ROOT, apply=False)
    assert report.clean, (
        "the grading manifest is stale:\n  " + "\n  ".join(report.lines())
        + "\nrun `python tests/grading/manifest.py write` and commit tests/grading/*.json"
    )


def test_manifest_covers_graded_folders_and_the_plugin() -> None:
    files, pristine = manifest.load(REPO_ROOT)
    assert "tests/grading/plugin.py" in files
    assert "tests/conftest.py" in files
    assert set(files) == set(pristine)


def test_manifest_cli_check_reports_a_change(tmp_path: Path) -> None:
    graded = tmp_path / "tests" / "lab02" / "graded"
    graded.mkdir(parents=True)
    (graded / "test_lab02_x.py").write_text("def test_x():\n    assert 1\n")
    script = str(Path(manifest.__file__))
    run = lambda action: subprocess.run(  # noqa: E731
        [sys.executable, script, action, "--root", str(tmp_path)],
        capture_output=True, text=True, timeout=60)
    assert run("write").returncode == 0
    assert run("check").returncode == 0
    (graded / "test_lab02_x.py").write_text("def test_x():\n    assert 0\n")
    check = run("check")
    assert check.returncode == 1
    assert "test file changed: tests/lab02/graded/test_lab02_x.py" in check.stdout
    assert run("restore").returncode == 0
    assert (graded / "test_lab02_x.py").read_text() == "def test_x():\n    assert 1\n"


def test_write_can_leave_hidden_tests_out(tmp_path: Path) -> None:
    hidden = tmp_path / "tests" / "hidden"
    hidden.mkdir(parents=True)
    (hidden / "test_hidden_x.py").write_text("")
    (tmp_path / "tests" / "conftest.py").write_text("")
    assert manifest.write(tmp_path, exclude_hidden=True) == ["tests/conftest.py"]
    assert manifest.write(tmp_path) == ["tests/conftest.py", "tests/hidden/test_hidden_x.py"]


def test_schema_accepts_gradescope_example_and_rejects_bad_documents() -> None:
    # the shape of Gradescope's documented example
    good = {
        "score": 44.0, "execution_time": 136, "output": "Text", "visibility": "after_due_date",
        "stdout_visibility": "visible",
        "tests": [{"score": 2.0, "max_score": 2.0, "status": "passed", "name": "Your name",
                   "number": "1.1", "output": "Giant multiline string", "tags": ["tag1"],
                   "visibility": "visible"}],
        "leaderboard": [{"name": "Accuracy", "value": 0.926}, {"name": "Time", "value": 15.1, "order": "asc"}],
    }
    jsonschema.validate(good, SCHEMA)
    bad_docs = [
        {"tests": [{"max_score": 1}]},                              # no score anywhere
        {"score": 1, "visibility": "students"},                     # unknown visibility
        {"score": 1, "tests": [{"score": 1, "status": "ok"}]},       # unknown status
        {"score": -1},                                              # negative score
        {"score": 1, "tests": [{"score": 1, "number": 1.1}]},         # number must be a string
    ]
    for doc in bad_docs:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(doc, SCHEMA)
