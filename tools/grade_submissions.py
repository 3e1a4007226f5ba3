#!/usr/bin/env python3
"""Grade a folder of submissions into a CSV gradebook, each through the Gradescope autograder.

    python tools/grade_submissions.py SUBMISSIONS [--out gradebook.csv] [--jobs N]
        [--autograder dist/autograder.zip] [--results-dir DIR] [--run-as auto|none|USER]

``SUBMISSIONS`` holds one entry per learner: a ``.zip`` (what ``make submission`` writes)
or a folder (e.g. Gradescope's "Export Submissions" layout, or a learner's checkout). Each
is graded exactly as on Gradescope: in its own temporary folder standing for
``/autograder`` (the autograder zip unpacked in ``source/``, the submission in
``submission/``), by the autograder's own ``run_autograder`` (grading/runner.py: the
learner's code runs only in child processes). Up to ``--jobs`` submissions are graded in
parallel, each in its own processes.

The gradebook has one row per submission, sorted by name: the total (visible and hidden
tests), the points per part, empty columns for the written answers (graded by hand, with
their points in the header), and the problems the autograder reported. Each submission's
``results.json`` is kept in ``--results-dir`` (default: beside the gradebook, in
``gradebook-results/``).

A submission the autograder could not grade (its sandbox did not start: an interpreter
the learner's user cannot run, no results) is *not graded*: its row has no score and the
cause; the tool then exits with status 2 and its last line says what failed and how to fix
it. As root, when the learner's user cannot run this interpreter and no ``--worker-python``
is given, the learners' code runs with ``/usr/bin/python3.X`` and this environment's
packages linked into a folder every user can read (:func:`grading.toolbox.readable_runtime`).
Concurrent gradings never share a uid (:mod:`grading.sandbox`), so any ``--jobs`` is safe.

Without ``--autograder``, the autograder is built first from this repository
(tools/make_autograder.py: the student edition plus the hidden tests; in a student edition,
which has none, without hidden tests).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import csv
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_S = 900.0
"""Upper bound on one submission's grading (the grader keeps to its own budget, 480 s by default)."""


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)
    spec.loader.exec_module(module)
    return module


def _layout():
    """grading.layout from this repository (safe unpacking of submissions)."""
    tests = str(REPO_ROOT / "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)
    from grading import layout
    return layout


@dataclass
class Row:
    """One submission's line of the gradebook."""

    name: str
    score: float | None = None
    max_score: float = 0.0
    parts: dict[str, float] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0
    isolation: str = ""
    log: str = ""
    not_graded: str = ""
    """Why the autograder could not grade it (its sandbox did not start, it failed): no score."""


def submissions(folder: Path) -> list[Path]:
    """The entries of ``folder`` to grade: ``.zip`` files and folders, by name."""
    return sorted(p for p in folder.iterdir()
                  if not p.name.startswith(".") and (p.is_dir() or p.suffix.lower() == ".zip"))


def grade_one(entry: Path, autograder: Path, results_dir: Path, python: str, run_as: str,
              timeout: float = TIMEOUT_S, extra_env: dict[str, str] | None = None) -> Row:
    """Grade one submission in its own temporary /autograder folder; never raises (a problem
    with this submission goes into its row)."""
    start = time.monotonic()
    row = Row(entry.name)
    try:
        _grade_one(entry, autograder, results_dir, python, run_as, timeout, extra_env or {}, row)
    except Exception as exc:  # noqa: BLE001 - one bad submission never stops the batch
        row.not_graded = f"not graded: {type(exc).__name__}: {str(exc)[:300]}"
        row.problems.append(row.not_graded)
    row.seconds = time.monotonic() - start
    return row


def _grade_one(entry: Path, autograder: Path, results_dir: Path, python: str, run_as: str, timeout: float,
               extra_env: dict[str, str], row: Row) -> None:
    with tempfile.TemporaryDirectory(prefix="autograder-root-") as tmp:
        root = Path(tmp)
        os.chmod(root, 0o755)
        with zipfile.ZipFile(autograder) as zf:
            zf.extractall(root / "source")
        for name in ("run_autograder", "setup.sh"):
            os.chmod(root / "source" / name, 0o755)
        shutil.copy2(root / "source" / "run_autograder", root / "run_autograder")
        (root / "submission").mkdir()
        if entry.is_dir():  # Gradescope's "Export Submissions" layout, a checkout: copied, bounded
            try:
                _layout().copy_tree(entry, root / "submission")
            except _layout().SubmissionError as exc:
                row.problems.append(f"could not copy: {exc}")
        else:  # a zip goes in as uploaded: the grader unpacks it (and says so if it cannot)
            shutil.copyfile(entry, root / "submission" / entry.name)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PYTEST", "AUTOGRADER_"))}
        env.update(AUTOGRADER_ROOT=str(root), AUTOGRADER_PYTHON=python, AUTOGRADER_RUN_AS=run_as, **extra_env)
        try:
            proc = subprocess.run(["bash", str(root / "run_autograder")], cwd=root, env=env,
                                  capture_output=True, text=True, timeout=timeout)
            row.log = proc.stdout[-8000:] + proc.stderr[-4000:]
        except subprocess.TimeoutExpired:
            row.log = f"stopped after {timeout:g} s"
            row.not_graded = f"not graded: the autograder was {row.log}"
            row.problems.append(row.not_graded)
            return
        results = root / "results" / "results.json"
        if results.is_file():
            doc = json.loads(results.read_text(encoding="utf-8"))
            results_dir.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(results, results_dir / f"{entry.name}.json")
            not_graded = (doc.get("extra_data") or {}).get("not_graded")
            if not_graded:  # an infrastructure failure: no score, the cause in the row
                row.not_graded = str(not_graded)
                row.problems.append(row.not_graded)
                return
            row.score = float(doc.get("score", 0.0))
            for t in doc.get("tests", []):
                if not t.get("tags"):
                    continue
                part = t["tags"][0]
                row.parts[part] = row.parts.get(part, 0.0) + float(t.get("score", 0.0))
                row.max_score += float(t.get("max_score", 0.0))
            notes = (doc.get("extra_data") or {}).get("grader_notes") or []
            row.isolation = notes[0] if notes else ""
            output = doc.get("output", "")
            if "Problems with the submitted files:" in output:
                row.problems += [ln.strip() for ln in output.split("Problems with the submitted files:", 1)[1]
                                 .splitlines() if ln.strip()]
        else:
            log = row.log.strip()
            row.not_graded = f"not graded: no results.json ({log.splitlines()[-1] if log else 'no output'})"
            row.problems.append(row.not_graded)


def _readable_runtime(tmp: Path, worker_path: list[str]) -> tuple[str | None, list[str]]:
    """As root: an interpreter the learner's unprivileged user can run, for the learners'
    code. This interpreter when that user can run it with the labs' packages; else (e.g. a
    virtual environment under /root) one made in ``tmp`` by
    :func:`grading.toolbox.readable_runtime` (``/usr/bin/python3.X`` of the same version with
    these packages linked into a folder every user can read). None when neither works: the
    grader then says, in each row, that it could not start and how to fix it."""
    _layout()  # puts tests/ on sys.path
    from grading import toolbox

    folder = tmp / "runtime"
    folder.mkdir()
    os.chmod(tmp, 0o711)
    found = toolbox.readable_runtime(folder)
    if found is None:
        return None, worker_path
    python, path = found
    if python != sys.executable:
        print(f"note: {sys.executable} cannot be run by an unprivileged user; the learners' code runs with "
              f"{python} and this environment's packages (see --worker-python)", file=sys.stderr)
    return python, path + worker_path


def written_columns(autograder: Path) -> list[tuple[str, float]]:
    """(grade id, points) of each written question, from the notebooks in the autograder."""
    out = []
    with zipfile.ZipFile(autograder) as zf:
        for name in sorted(n for n in zf.namelist() if re.fullmatch(r"course/labs/[^/]+\.ipynb", n)):
            nb = json.loads(zf.read(name))
            for cell in nb.get("cells", []):
                meta = cell.get("metadata", {})
                if "written-answer" in meta.get("tags", []):
                    out.append((meta["nbgrader"]["grade_id"], float(meta["nbgrader"]["points"])))
    return out


def write_gradebook(rows: list[Row], out: Path, written: list[tuple[str, float]]) -> None:
    """The CSV gradebook (see the module docstring)."""
    parts = sorted({p for r in rows for p in r.parts}, key=lambda p: (int(re.match(r"\d+", p).group()), p))
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["submission", "autograded score", "autograded max", *parts,
                         *[f"{gid} (by hand, /{pts:g})" for gid, pts in written], "problems"])
        for r in sorted(rows, key=lambda r: r.name):
            writer.writerow([r.name, "" if r.score is None else f"{r.score:g}", f"{r.max_score:g}",
                             *[f"{r.parts.get(p, 0.0):g}" for p in parts], *["" for _ in written],
                             " | ".join(r.problems)])


def main(argv: list[str] | None = None) -> int:
    """Command line; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python tools/grade_submissions.py",
        description="Grade every submission (.zip or folder) in a folder with the Gradescope autograder, "
                    "in parallel, each in its own temporary folder, into a CSV gradebook.")
    parser.add_argument("folder", type=Path, metavar="SUBMISSIONS", help="folder of submissions")
    parser.add_argument("--out", type=Path, default=Path("gradebook.csv"), help="the CSV gradebook to write")
    parser.add_argument("--autograder", type=Path,
                        help="autograder zip (default: build one from this repository)")
    parser.add_argument("--results-dir", type=Path, help="where each results.json goes "
                                                         "(default: <out without .csv>-results/)")
    parser.add_argument("--jobs", type=int, default=min(4, os.cpu_count() or 1),
                        help="submissions graded at once (default: min(4, CPUs))")
    parser.add_argument("--run-as", default="auto", metavar="auto|none|USER",
                        help="user the learner's code runs as (default auto: an unprivileged user when root)")
    parser.add_argument("--python", default=sys.executable, help="interpreter for the grader")
    parser.add_argument("--worker-python", help="interpreter of the learners' code (readable by the user it runs "
                                                "as; default: --python, or as root when the learner's user "
                                                "cannot run that, /usr/bin/python3.X with its packages)")
    parser.add_argument("--worker-path", action="append", default=[],
                        help="extra sys.path entry of the learners' code (repeatable)")
    parser.add_argument("--budget", type=float, help="time budget of one submission in seconds (default: the "
                                                     "grader's, 480)")
    args = parser.parse_args(argv)
    if not args.folder.is_dir():
        print(f"error: {args.folder}: not a folder of submissions", file=sys.stderr)
        return 1
    if args.jobs < 1:
        print(f"error: --jobs {args.jobs}: expected 1 or more", file=sys.stderr)
        return 1
    entries = submissions(args.folder)
    if not entries:
        print(f"error: {args.folder}: no .zip files or folders to grade", file=sys.stderr)
        return 1
    results_dir = args.results_dir or args.out.with_name(args.out.stem + "-results")
    with tempfile.TemporaryDirectory(prefix="autograder-build-") as tmp:
        autograder = args.autograder
        if autograder is None:
            autograder = Path(tmp) / "autograder.zip"
            tool = _load("make_autograder")
            hidden = (REPO_ROOT / "tests" / "hidden").is_dir()
            if not hidden:
                print("note: this checkout has no tests/hidden/ (a student edition): grading without hidden "
                      "tests; pass --autograder ZIP to use the course's autograder", file=sys.stderr)
            try:
                tool.build(autograder, hidden=hidden)
            except tool.AutograderError as exc:
                print(f"error: {exc}", file=sys.stderr)
                return 1
        elif not zipfile.is_zipfile(autograder):
            print(f"error: --autograder {autograder}: not a zip file", file=sys.stderr)
            return 1
        extra_env = {}
        worker_python, worker_path = args.worker_python, list(args.worker_path)
        if worker_python is None and os.geteuid() == 0 and args.run_as != "none" and args.python == sys.executable:
            worker_python, worker_path = _readable_runtime(Path(tmp), worker_path)
        if worker_python:
            extra_env["AUTOGRADER_WORKER_PYTHON"] = worker_python
        if worker_path:
            extra_env["AUTOGRADER_WORKER_PATH"] = ":".join(worker_path)
        if args.budget:
            extra_env["AUTOGRADER_BUDGET"] = f"{args.budget:g}"
        rows: list[Row] = []
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            futures = {pool.submit(grade_one, e, autograder, results_dir, args.python, args.run_as, TIMEOUT_S,
                                   extra_env): e for e in entries}
            for done, future in enumerate(concurrent.futures.as_completed(futures), start=1):
                row = future.result()
                rows.append(row)
                score = "NOT GRADED" if row.score is None else f"{row.score:g}/{row.max_score:g}"
                print(f"[{done}/{len(entries)}] {row.name}: {score} ({row.seconds:.0f} s)"
                      + (f"; {row.not_graded}" if row.not_graded else
                         (f"; {len(row.problems)} problem(s)" if row.problems else "")
                         + (f"; {row.isolation}" if row.isolation else "")), file=sys.stderr)
        write_gradebook(rows, args.out, written_columns(autograder))
    print(f"wrote {args.out} ({len(rows)} submissions) and {results_dir}/ (one results.json each)")
    failed = [r for r in rows if r.not_graded]
    if failed:
        print(f"error: {len(failed)} of {len(rows)} submission(s) NOT graded (empty score in the gradebook); "
              f"first: {failed[0].name}: {failed[0].not_graded}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
