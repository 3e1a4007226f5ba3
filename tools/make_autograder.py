#!/usr/bin/env python3
"""Build the Gradescope autograder zip from the student edition plus the hidden tests.

    python tools/make_autograder.py [OUT.zip]       # default: dist/autograder.zip (make autograder)

The zip holds, at its root (Gradescope's conventions,
https://gradescope-autograders.readthedocs.io/en/latest/specs/):

- ``setup.sh``: installs Python 3.11+ on Gradescope's Ubuntu base image, a virtual
  environment with ``requirements.txt``, and the unprivileged user ``course-learner``;
- ``run_autograder``: runs the grader (``course/tests/grading/runner.py``) on
  ``/autograder/submission`` and writes ``/autograder/results/results.json``;
- ``requirements.txt``: the labs' dependencies (from pyproject.toml) and the grader's;
- ``course/``: the parts of the student edition that grading needs (the lab packages with
  stubs instead of solutions, ``tests/grading/``, the graded tests, the lab notebooks for
  the written questions); built by tools/make_student_edition.py, never from the
  solutions: a file the learner did not submit falls back to its stub;
- ``hidden/tests/hidden/``: the hidden tests (readable by root only once installed) and
  ``bank.json``, the answers of the reference solutions on the random instances of
  tests/hidden/test_hidden_bank.py (computed here, in a child interpreter that imports
  this checkout's lab packages: the zip carries answers, never a solution).

Before writing, the tool checks that no line that exists only inside a solution region of
this repository appears in any file of the zip, and refuses (exit 1) otherwise.

Errors (exit 1, one line): no tests/hidden/ (an autograder without hidden tests is built
only with --no-hidden), a solution line found in the zip, OUT exists and is a folder.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
TEMPLATES = Path(__file__).resolve().parent / "autograder"
COURSE_PARTS = ("course_kit", "lab01_cluster_sim", "lab02_device_plugin", "tests/grading", "tests/lab01/graded",
                "tests/lab02/graded", "labs", "pyproject.toml", "LICENSE")
"""What of the student edition goes into ``course/`` (folders and files)."""
GRADER_REQUIREMENTS = ("pytest>=8.0", "pytest-timeout>=2.3", "defusedxml>=0.7")
EXECUTABLE = {"setup.sh", "run_autograder"}
_FIXED_DATE = (1980, 1, 1, 0, 0, 0)


def _load_edition_tool():
    spec = importlib.util.spec_from_file_location("make_student_edition", Path(__file__).with_name(
        "make_student_edition.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    return module


class AutograderError(Exception):
    """Bad input or an unsafe result; the message says which."""


def requirements(root: Path) -> list[str]:
    """The labs' runtime dependencies (pyproject.toml) and what the grader needs."""
    data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    wanted = list(data["project"]["dependencies"]) + list(GRADER_REQUIREMENTS)
    return list(dict.fromkeys(wanted))  # once each (defusedxml is in both lists)


def solution_only_lines(root: Path, edition_tool, student: Path) -> dict[str, set[str]]:
    """Per lab file of ``root``: the lines (stripped, 12+ characters, not comments) inside
    its solution regions that appear in no file of the student edition at ``student``.
    None of them may appear in the zip."""
    everywhere: set[str] = set()
    for path in student.rglob("*"):
        if path.is_file() and path.suffix in (".py", ".ipynb", ".md", ".json", ".txt", ".toml", ".yaml"):
            everywhere.update(ln.strip() for ln in path.read_text(encoding="utf-8", errors="replace").splitlines())
    out: dict[str, set[str]] = {}
    for rel in edition_tool.repository_files(root):
        if not (rel.split("/")[0] in edition_tool.LAB_PACKAGES and rel.endswith(".py")):
            continue
        text = (root / rel).read_text(encoding="utf-8")
        lines = text.splitlines()
        body = {lines[i].strip() for r in edition_tool.find_regions(text, rel) for i in range(r.begin, r.end - 1)}
        out[rel] = {ln for ln in body - everywhere if len(ln) >= 12 and not ln.startswith("#")}
    return {rel: lines for rel, lines in out.items() if lines}


BANK_FILE = "bank.json"
BANK_MODULE = "test_hidden_bank"
"""The hidden tests' bank of random instances (tests/hidden/test_hidden_bank.py)."""


def answer_bank(root: Path) -> bytes:
    """``bank.json``: the answers of the reference solutions of ``root`` (the instructor's
    checkout) on the bank's instances, computed in a child interpreter that imports the lab
    packages from ``root`` (never from wherever this tool was installed from).

    Raises:
        AutograderError: the bank could not be computed (the message has the child's last line).
    """
    code = (f"import json, sys; sys.path[:0] = [{str(root)!r}, {str(root / 'tests' / 'hidden')!r}]; "
            f"import {BANK_MODULE}; sys.stdout.write(json.dumps({BANK_MODULE}.build_bank(), separators=(',', ':')))")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update(PYTHONPATH=str(root), PYTHONHASHSEED="0", PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, timeout=600)
    if proc.returncode != 0:
        last = (proc.stderr.decode("utf-8", "replace").strip().splitlines() or ["no output"])[-1]
        raise AutograderError(f"tests/hidden/{BANK_MODULE}.py: the answer bank could not be computed: {last}")
    return proc.stdout


def build(out: Path, root: Path = REPO_ROOT, hidden: bool = True) -> list[str]:
    """Write the autograder zip to ``out``; returns its member names.

    Raises:
        AutograderError: see the module docstring.
    """
    tool = _load_edition_tool()
    if hidden and not (root / "tests" / "hidden").is_dir():
        raise AutograderError(f"{root / 'tests' / 'hidden'}: no hidden tests; pass --no-hidden to build without")
    if out.is_dir():
        raise AutograderError(f"{out}: is a folder; give the path of the zip to write")
    with tempfile.TemporaryDirectory(prefix="autograder-") as tmp:
        edition = Path(tmp) / "student"
        tool.build(edition, root=root)
        members: dict[str, bytes] = {}
        for part in COURSE_PARTS:
            src = edition / part
            files = [src] if src.is_file() else sorted(p for p in src.rglob("*") if p.is_file()) if src.is_dir() else []
            for path in files:
                rel = path.relative_to(edition)
                if "__pycache__" in rel.parts or path.suffix in (".pyc", ".pyo"):
                    continue
                members[f"course/{rel.as_posix()}"] = path.read_bytes()
        if hidden:
            for path in sorted((root / "tests" / "hidden").rglob("*.py")):
                if "__pycache__" not in path.parts:
                    members[f"hidden/{path.relative_to(root).as_posix()}"] = path.read_bytes()
            members[f"hidden/tests/hidden/{BANK_FILE}"] = answer_bank(root)
        for name in ("setup.sh", "run_autograder"):
            members[name] = (TEMPLATES / name).read_bytes()
        members["requirements.txt"] = ("\n".join(requirements(root)) + "\n").encode()
        secret = solution_only_lines(root, tool, edition)
    leaks = []
    for name, data in members.items():
        text = data.decode("utf-8", "replace").replace("\\n", "\n")  # JSON strings too
        member_lines = {ln.strip().strip('",') for ln in text.splitlines()}
        for rel, lines in secret.items():
            leaks += [f"{name}: {ln[:60]!r} (from a solution of {rel})" for ln in lines & member_lines]
    if leaks:
        raise AutograderError("solution text in the autograder: " + "; ".join(leaks[:3]))
    out.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(members):
            info = zipfile.ZipInfo(name, date_time=_FIXED_DATE)
            info.external_attr = (0o100755 if name in EXECUTABLE else 0o100644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, members[name])
    tmp_out = out.with_name(out.name + ".tmp")
    tmp_out.write_bytes(buffer.getvalue())
    tmp_out.replace(out)
    return sorted(members)


def main(argv: list[str] | None = None) -> int:
    """Command line; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python tools/make_autograder.py",
        description="Build the Gradescope autograder zip (setup.sh, run_autograder, the student edition's "
                    "lab packages and graded tests, the hidden tests) without any solution.")
    parser.add_argument("out", nargs="?", type=Path, default=REPO_ROOT / "dist" / "autograder.zip",
                        metavar="OUT.zip", help="where to write the zip (default: dist/autograder.zip)")
    parser.add_argument("--no-hidden", action="store_true", help="build without hidden tests")
    args = parser.parse_args(argv)
    try:
        names = build(args.out, hidden=not args.no_hidden)
    except (AutograderError, _load_edition_tool().EditionError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    hidden = sum(n.startswith("hidden/") and n.endswith(".py") for n in names)
    size = args.out.stat().st_size
    print(f"autograder written to {args.out}: {len(names)} files ({size / 1024:.0f} KiB), "
          f"{hidden} hidden test file(s); upload it on Gradescope (Configure Autograder > Zip file upload)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
