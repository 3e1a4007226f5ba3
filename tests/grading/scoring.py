"""How the autograder scores a trusted run and writes Gradescope's results: used by the
grader (:mod:`grading.runner`) and by local grading (:mod:`grading.local`), so that both
count the same way, from pytest's own JUnit report (:mod:`grading.junit`).

- :func:`score_run`: exactly the declared tests (:mod:`grading.catalog`), one outcome per
  declared case, points from the course's own files, ``partial_credit`` only for tests
  that use that fixture, each part and the total capped at their maximum;
- :func:`points_table`, :func:`results_document`: the points per part and the
  ``results.json`` document (hidden tests ``after_published``, a top-level output that
  counts only the visible tests, the instructors' notes in ``extra_data``).
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass
from pathlib import Path

from grading import catalog, junit

_TEST_OUTPUT_LIMIT = 4000


# -- scores -----------------------------------------------------------------------------
@dataclass
class TestOutcome:
    """One graded test (or parametrized case) as scored by this process."""

    test: catalog.DeclaredTest
    number: str
    name: str
    status: str  # passed | failed
    score: float
    output: str
    outcome: str = ""  # passed | failed | skipped | not run (pytest's view; status is Gradescope's)

    def to_gradescope(self) -> dict:
        """An entry of results.json's ``tests``."""
        return {
            "name": self.name,
            "number": self.number,
            "score": round(self.score, 4),
            "max_score": self.test.points,
            "status": self.status,
            "output": self.output[:_TEST_OUTPUT_LIMIT],
            "tags": [self.test.part],
            "visibility": self.test.visibility,
            "extra_data": {"nodeid": self.test.nodeid, "part": self.test.part, "hidden": self.test.hidden},
        }


def _first_lines(text: str, n: int = 6) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return "\n".join(lines[:n])


def _case_message(case: junit.CaseResult) -> str:
    message = case.message.strip() or _first_lines(case.details, 3)
    if case.outcome == "skipped":
        return f"skipped: {message}"
    if "Timeout" in message and ("pytest-timeout" in case.details or message.startswith("Failed: Timeout")):
        message = f"{message.splitlines()[0]} (an endless loop?)"
    return message


def _collection_message(case: junit.CaseResult) -> str:
    lines = [ln.strip() for ln in case.details.splitlines() if ln.strip()]
    errors = [ln[1:].strip() for ln in lines if ln.startswith("E ")]
    where = [ln for ln in lines if re.match(r"^\S+\.py:\d+: in ", ln)]
    text = errors[-1] if errors else (lines[-1] if lines else case.message)
    return f"{text}" + (f" (at {where[-1].split(': in ')[0]})" if where else "")


@dataclass
class RunResult:
    """What one trusted pytest run left."""

    report: bytes | None
    returncode: int | None
    output: str
    timed_out: bool
    seconds: float
    problem: str = ""


@dataclass
class RunScore:
    """Scores of one trusted run, and what the grader noticed about it."""

    outcomes: list[TestOutcome]
    notes: list[str]
    counts: dict


def score_run(tests: list[catalog.DeclaredTest], run: RunResult, part_notes: dict[str, list[str]],
              label: str, known_files: set[str]) -> RunScore:
    """Score exactly the declared ``tests`` from the trusted run's report.

    A test that is not parametrized counts once, with exactly its node id; a parametrized
    one at most its literal number of cases, each id once; nothing else in the report
    counts. A test's score is its points when it passed, else 0, or ``partial_credit`` x
    points when the test uses that fixture; each part and the total are capped at their
    declared maximum by construction (one outcome per declared case, at most its points).
    """
    notes: list[str] = []
    report: junit.Report | None = None
    problem = run.problem
    if run.report is not None and not problem:
        try:
            report = junit.parse(run.report, known_files)
        except junit.ReportError as exc:
            problem = str(exc)
    if problem:
        notes.append(f"{label}: no report: {problem}")
    if run.timed_out:
        notes.append(f"{label}: stopped (past its deadline)")
    cases: dict[str, list[junit.CaseResult]] = {}
    collection_errors: dict[str, str] = {}
    duplicates: list[str] = []
    if report is not None:
        seen: set[str] = set()
        for case in report.cases:
            if case.outcome == "collection-error":
                collection_errors[case.nodeid] = _collection_message(case)
                continue
            if case.nodeid in seen:
                duplicates.append(case.nodeid)
                continue
            seen.add(case.nodeid)
            cases.setdefault(case.nodeid.split("[")[0], []).append(case)
    if duplicates:
        notes.append(f"{label}: the report repeats tests (counted once): {duplicates[:5]}")
    counts = {"passed": 0, "failed": 0, "skipped": 0, "not run": 0}
    outcomes: list[TestOutcome] = []
    declared = {t.nodeid for t in tests}
    for t in tests:
        prefix = "".join(f"{n}\n" for n in part_notes.get(t.part, []))
        got = [c for c in cases.get(t.nodeid, []) if (c.nodeid == t.nodeid) != t.parametrized]
        extra = len(got) - (t.cases if t.parametrized else 1)
        if extra > 0:
            notes.append(f"{label}: {t.nodeid}: {extra} more case(s) than declared (not counted)")
            got = got[:t.cases if t.parametrized else 1]
        if not got:
            if problem:
                why = f"did not run: {problem}"
            elif t.file in collection_errors:
                why = f"did not run: {t.file} failed to import: {collection_errors[t.file]}"
            elif run.timed_out:
                why = "did not run: the test run was stopped (the grading's time budget ran out)"
            else:
                why = "did not run (the test run ended early)"
            counts["not run"] += 1
            outcomes.append(TestOutcome(t, t.number, t.title, "failed", 0.0, prefix + why, "not run"))
            continue
        for k, case in enumerate(got, start=1):
            number = f"{t.number}.{k}" if t.parametrized else t.number
            name = t.title + (f" [{case.nodeid.split('[', 1)[1][:-1]}]" if t.parametrized else "")
            passed = case.outcome == "passed"
            fraction = 1.0 if passed else 0.0
            message = "passed" if passed else _case_message(case)
            credit = case.properties.get("partial_credit") if t.uses_partial_credit else None
            if credit is not None:
                try:
                    value = float(credit)
                except ValueError:
                    value = math.nan
                if 0.0 <= value <= 1.0:
                    fraction = value
                    if value not in (0.0, 1.0):
                        message = f"partial credit {value:.0%}. {'' if passed else message}".strip()
            outcome = "passed" if passed else "skipped" if case.outcome == "skipped" else "failed"
            counts[outcome] += 1
            outcomes.append(TestOutcome(t, number, name, "passed" if passed else "failed",
                                        min(t.points, t.points * fraction), prefix + message, outcome))
    if report is not None:
        unknown = sorted({c.nodeid for cs in cases.values() for c in cs if c.nodeid.split("[")[0] not in declared})
        if unknown:
            notes.append(f"{label}: the report names tests the course does not declare (ignored): {unknown[:5]}")
        counts["pytest"] = {"tests": report.tests, "failures": report.failures, "errors": report.errors,
                            "skipped": report.skipped, "collection errors": len(collection_errors)}
    return RunScore(outcomes, notes, counts)


def _pts(x: float) -> str:
    return f"{x:g}" if abs(x - round(x, 2)) < 1e-9 else f"{x:.2f}"


def points_table(outcomes: list[TestOutcome], written: list[catalog.WrittenQuestion]) -> list[str]:
    """Rows per part: tests, passed, points (of the given outcomes), and written points."""
    rows: dict[str, list[float]] = {}
    for o in outcomes:
        row = rows.setdefault(o.test.part, [0, 0, 0.0, 0.0])
        row[0] += 1
        row[1] += o.status == "passed"
        row[2] += o.score
        row[3] += o.test.points
    by_part: dict[str, float] = {}
    for q in written:
        by_part[q.part] = by_part.get(q.part, 0.0) + q.points
    lines = [f"{'part':<6}{'tests':>7}{'passed':>8}{'points':>12}   written (by hand)"]
    for part in sorted(set(rows) | set(by_part), key=lambda p: (int(re.match(r'\d+', p).group()), p)):
        n, ok, score, top = rows.get(part, [0, 0, 0.0, 0.0])
        extra = f"   {_pts(by_part[part])} pts" if part in by_part else ""
        lines.append(f"{part:<6}{n:>7}{ok:>8}{_pts(score):>9} / {_pts(top):<5}{extra}")
    n = len(outcomes)
    ok = sum(o.status == "passed" for o in outcomes)
    score = sum(o.score for o in outcomes)
    top = sum(o.test.points for o in outcomes)
    manual = sum(q.points for q in written)
    lines.append(f"{'total':<6}{n:>7}{ok:>8}{_pts(score):>9} / {_pts(top):<5}"
                 + (f"   {_pts(manual)} pts" if manual else ""))
    return lines


def counts(outcomes: list[TestOutcome]) -> dict:
    """How many of ``outcomes`` passed, failed, were skipped or did not run."""
    counts = {"passed": 0, "failed": 0, "skipped": 0, "not run": 0}
    for o in outcomes:
        counts[o.outcome or ("passed" if o.status == "passed" else "failed")] += 1
    return counts


def course_written_questions(course: Path) -> list[catalog.WrittenQuestion]:
    """Written questions of the course's lab notebooks (``labs/*.ipynb``)."""
    out = []
    for nb in sorted((course / "labs").glob("*.ipynb")):
        out += catalog.written_questions(nb, nb.relative_to(course).as_posix())
    return out


WRITTEN_ANSWERS_FILE = "written_answers.html"
_PLACEHOLDER = "YOUR ANSWER HERE"


def written_answers_status(submission: Path, written: list[catalog.WrittenQuestion]) -> str:
    """One line about ``written_answers.html`` in the submission: absent, or how many
    answers it holds (an answer still reading the placeholder counts as not given)."""
    found = [p for p in submission.rglob(WRITTEN_ANSWERS_FILE) if p.is_file()]
    if not found:
        return f"{WRITTEN_ANSWERS_FILE} NOT found in the submission (make submission writes it)."
    try:
        text = found[0].read_text(encoding="utf-8", errors="replace")[:5_000_000]
    except OSError:
        return f"{WRITTEN_ANSWERS_FILE} found but not readable."
    blank = text.count(_PLACEHOLDER)
    if blank:
        return (f"{WRITTEN_ANSWERS_FILE} found, {min(blank, len(written))} of {len(written)} answers still read "
                f"'{_PLACEHOLDER}'.")
    return f"{WRITTEN_ANSWERS_FILE} found in the submission."


def results_document(visible: list[TestOutcome], hidden: list[TestOutcome], written: list[catalog.WrittenQuestion],
                     visible_notes: list[str], notes: list[str], counts: dict, submission: Path,
                     started: float) -> dict:
    """The Gradescope results document (see the module docstring for what is visible)."""
    lines = ["Autograded points of the visible tests:"] + points_table(visible, written)
    if hidden:
        lines.append(f"Hidden tests: {len(hidden)} more tests of the same parts; their results and points "
                     "appear when grades are published.")
    if written:
        lines.append(f"Written answers: {len(written)} questions, {_pts(sum(q.points for q in written))} points, "
                     f"graded by hand; " + written_answers_status(submission, written))
    if visible_notes:
        lines.append("Problems with the submitted files:")
        lines += [f"  {n}" for n in visible_notes]
    elapsed = max(0.0, time.time() - started)
    score = sum(o.score for o in visible + hidden)
    top = sum(o.test.points for o in visible + hidden)
    return {
        "score": round(min(score, top), 4),
        "execution_time": math.ceil(elapsed),
        "output": "\n".join(lines),
        "output_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "extra_data": {"grader_notes": [n for n in notes if n], "visible_counts": counts},
        "tests": [o.to_gradescope() for o in visible + hidden],
    }
