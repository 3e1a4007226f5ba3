"""Local grading counted the way the autograder counts: from pytest's report, in a process
that runs no learner code (``make grade``, ``make check``, the notebooks' check cells).

    python tests/grading/local.py [--grade-part=1A ...] [--grade-json=PATH] [--grade-no-hidden]
        [other options of ``pytest --grade``]

The graded tests run in a child ``pytest --grade`` (:mod:`grading.plugin`: restoring the
course's test files, timeouts, the learner's code imported in that process); the child
writes pytest's own JUnit XML report into a folder of this process. This process never
imports learner code: it scores exactly the declared tests of the course's test files
(:func:`grading.catalog.declared_tests`) from that report with the autograder's own
scoring (:func:`grading.scoring.score_run`), prints the points table and writes
``results.json`` (Gradescope's format). So lines added to a lab package that rewrite the
plugin's own tally in the child change nothing here: the tests pytest reports as failed
score 0. (On your own machine your code could still forge the report itself; the
autograder runs it in a separate, unprivileged process.)

Exit status: 0 every selected test passed, 1 some failed or did not run, 4 the child
refused the run (a changed grading file, see :mod:`grading.plugin`), 2 bad options (a part
that no graded test or written question of the course has: one line naming it and the parts).

It prints the child's output as it runs (its own table, which learner code could rewrite, then
pytest's summary), then the table that counts and where ``results.json`` is; the child writes
no results file of its own (``--grade-json=``), so every path printed stays.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: the grading package is tests/grading
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from grading import catalog, junit, runner, scoring  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[2]
EXIT_REFUSED = 4


def _wants(part: str, prefixes: list[str]) -> bool:
    return not prefixes or any(part.startswith(p) for p in prefixes)


def unknown_parts(parts: list[str], known: set[str]) -> str | None:
    """One line naming the first of ``parts`` that selects none of the ``known`` part ids (a
    part such as ``1A`` or a lab prefix such as ``1``) and listing them; None when all select
    some."""
    for part in parts:
        if not any(k.startswith(part) for k in known):
            labs = sorted({k[0] for k in known})
            return (f"part {part!r} (--grade-part): no such part; expected a lab ({', '.join(labs)}) or one of its parts: "
                    f"{', '.join(sorted(known))}")
    return None


def grade(root: Path, parts: list[str], out: Path, hidden: bool, pytest_args: list[str]) -> int:
    """Run the graded tests of ``parts`` under ``root`` in a child pytest, score them from its
    report, print the points table, write ``out``; returns the exit status (module docstring).
    A part that selects nothing is refused before anything runs (exit status 2)."""
    dirs = [root / d for d in runner.GRADED_DIRS]
    if hidden and (root / runner.HIDDEN_DIR).is_dir():
        dirs.append(root / runner.HIDDEN_DIR)
    every_test = catalog.declared_tests([d for d in dirs if d.is_dir()], root)
    every_question = scoring.course_written_questions(root)
    problem = unknown_parts(parts, {t.part for t in every_test} | {q.part for q in every_question})
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    declared = [t for t in every_test if _wants(t.part, parts)]
    written = [q for q in every_question if _wants(q.part, parts)]
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="grade-") as tmp:
        report = Path(tmp) / "report.xml"
        cmd = [sys.executable, "-m", "pytest", "-p", "pytest_timeout", "--grade",
               *[f"--grade-part={p}" for p in parts], *([] if hidden else ["--grade-no-hidden"]),
               "--grade-json=", f"--junitxml={report}", "-o", "junit_family=xunit1",
               "-o", "junit_logging=no", *pytest_args]
        env = dict(os.environ)
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # a graded run needs pytest-timeout only (-p above)
        env["PYTHONPATH"] = os.pathsep.join(p for p in [str(root), str(root / "tests"), env.get("PYTHONPATH", "")] if p)
        mark = time.monotonic()
        proc = subprocess.run(cmd, cwd=root, env=env, stdin=subprocess.DEVNULL)
        small = report.is_file() and report.stat().st_size <= junit.MAX_REPORT_BYTES
        data = report.read_bytes() if small else None
    problem = ""
    if proc.returncode == EXIT_REFUSED:
        problem = "the run was refused (a changed grading file: see above)"
        data = None
    elif data is None:
        problem = f"pytest ended without a report (exit status {proc.returncode})"
    run = scoring.RunResult(data, proc.returncode, "", False, time.monotonic() - mark, problem)
    scored = scoring.score_run(declared, run, {}, "tests", {t.file for t in declared})
    visible = [o for o in scored.outcomes if not o.test.hidden]
    kept = [o for o in scored.outcomes if o.test.hidden]
    doc = scoring.results_document(visible, kept, written, [problem] if problem else [], scored.notes,
                                  scoring.counts(visible), root, started)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    print("\nPoints counted from pytest's report by a process that runs none of your code (as the autograder "
          "counts):")
    for line in scoring.points_table(scored.outcomes, written):
        print(f"  {line}")
    for note in scored.notes + ([problem] if problem else []):
        print(f"  note: {note}")
    print(f"results: {out}")
    if proc.returncode == EXIT_REFUSED:
        return EXIT_REFUSED
    return 0 if declared and all(o.status == "passed" for o in scored.outcomes) else 1


def main(argv: list[str] | None = None) -> int:
    """Command line (see the module docstring)."""
    parser = argparse.ArgumentParser(
        prog="python tests/grading/local.py",
        description="Grade this checkout: the graded tests run in a child pytest --grade; this process scores them "
                    "from pytest's JUnit report, as the autograder does. Other options go to pytest.")
    parser.add_argument("--grade-part", action="append", default=[], metavar="PART",
                        help="a part (1A) or lab (1) to grade; repeatable (default: all)")
    parser.add_argument("--grade-json", type=Path, default=Path("results.json"),
                        help="where results.json goes (default: ./results.json)")
    parser.add_argument("--grade-no-hidden", action="store_true", help="leave the hidden tests out")
    args, rest = parser.parse_known_args(argv)
    parts = [p.strip() for value in args.grade_part for p in value.split(",") if p.strip()]
    return grade(REPO_ROOT, parts, args.grade_json.resolve(), not args.grade_no_hidden, rest)


if __name__ == "__main__":
    raise SystemExit(main())
