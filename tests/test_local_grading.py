"""Local grading (``make grade``, ``make check``, the notebooks' check cells) counts points
the way the autograder does (issue 23): from pytest's JUnit report, in a process that runs
none of the lab code (tests/grading/local.py). A lab package rigged to rewrite the grading
plugin's own tally (every test "passed" at full points) shows in the child's in-process
table, never in the points or the results.json that count.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from grading.toolbox import load_tool

REPO_ROOT = Path(__file__).resolve().parents[1]

RIG = '''

# appended by a learner: every graded test "passes" at full points in the plugin's own tally
import sys as _sys

_plugin = _sys.modules.get("grading.plugin")
if _plugin is not None:
    _plugin.TestResult.status = property(lambda self: "passed", lambda self, value: None)
    _plugin.TestResult.score = property(lambda self: self.max_score, lambda self, value: None)
'''


def test_a_rigged_package_shows_as_failed_tests_not_points(tmp_path: Path) -> None:
    edition = tmp_path / "student"
    load_tool("make_student_edition").build(edition, root=REPO_ROOT)
    init = edition / "lab01_cluster_sim" / "__init__.py"
    init.write_text(init.read_text() + RIG)
    out = tmp_path / "check-1C.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PYTEST"))}
    proc = subprocess.run([sys.executable, "-P", "tests/grading/local.py", "--grade-part=1C", "--grade-no-hidden",
                           f"--grade-json={out}", "-q", "-p", "no:cacheprovider"], cwd=edition, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    in_process, counted = proc.stdout.split("Points counted from pytest's report", 1)
    # the rig did act in the child: its own table says 3 of 3 passed, 5 of 5 points
    assert "1C          3       3        5 / 5" in in_process and "3 failed" in in_process, in_process[-2000:]
    # what counts: 1C's three tests (1 + 2 + 2 points) failed, as pytest reported them
    assert "  1C          3       0        0 / 5" in counted, counted
    # the child writes no results file of its own: the only path printed is the one that stays
    assert "results written to" not in proc.stdout and f"results: {out}" in counted
    doc = json.loads(out.read_text())
    assert doc["score"] == 0 and [t["status"] for t in doc["tests"]] == ["failed"] * 3
    assert all("your code here (1C)" in t["output"] for t in doc["tests"]), [t["output"] for t in doc["tests"]]


def test_an_unknown_part_is_refused_naming_the_parts() -> None:
    # make check PART=9Z used to run nothing and pass with 0 of 0 points
    from grading import local

    known = {"1A", "1B", "2A"}
    assert local.unknown_parts(["1", "2A"], known) is None
    assert local.unknown_parts(["1A", "9Z"], known) == (
        "part '9Z' (--grade-part): no such part; expected a lab (1, 2) or one of its parts: 1A, 1B, 2A")
    # the command refuses before running anything, with exit status 2, which the Makefile's
    # "|| [ $? -eq 1 ]" (failed tests are a normal check) lets through
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PYTEST"))}
    proc = subprocess.run(["make", "-s", "check", "PART=9Z", f"PYTHON={sys.executable}"], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and proc.stdout == ""
    assert proc.stderr.splitlines()[0].startswith(
        "error: part '9Z' (--grade-part): no such part; expected a lab (1, 2) or one of its parts: 1A, "), proc.stderr
