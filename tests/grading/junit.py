"""Reading pytest's JUnit XML report (``--junitxml``, family ``xunit1``) safely.

The grader's parent process computes every score from this report, written by the child
pytest that ran the learner's code. The report is untrusted input: it is bounded in size
(:data:`MAX_REPORT_BYTES`), parsed with ``defusedxml`` (no DTDs, no entity expansion, no
external references), and must be exactly one ``<testsuites>`` or ``<testsuite>``
document; anything else is a :class:`ReportError`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from defusedxml import ElementTree as SafeET
from defusedxml.common import DefusedXmlException

MAX_REPORT_BYTES = 8 * 1024 * 1024
"""Largest report read (bytes); a report of the course's ~40 graded tests is ~100 kB."""
MAX_CASES = 10_000
"""Most test cases read from one report."""
MAX_TEXT = 4_000
"""Characters kept of a failure's message and of its details."""


class ReportError(Exception):
    """The report is absent, too large, not XML, or not a pytest JUnit report."""


@dataclass
class CaseResult:
    """One ``<testcase>`` of the report.

    Attributes:
        nodeid: pytest node id rebuilt from the case: ``tests/x/test_a.py::test_b[p]``
            (``...::Class::test_b`` for a method); for a collection error, the file.
        outcome: ``passed``, ``failed`` (a failure or an error: setup, call or teardown),
            ``skipped``, or ``collection-error``.
        message: the failure's or skip's message (its ``message`` attribute, bounded).
        details: the failure's text (traceback), bounded.
        properties: ``<property name=... value=...>`` of the case.
    """

    nodeid: str
    outcome: str
    message: str = ""
    details: str = ""
    properties: dict[str, str] = field(default_factory=dict)


@dataclass
class Report:
    """A parsed report: the cases and the suite's own counts (pytest's figures)."""

    cases: list[CaseResult]
    tests: int
    failures: int
    errors: int
    skipped: int


def _module_to_path(module: str) -> str:
    return module.replace(".", "/") + ".py"


def _nodeid(case, known_files: set[str]) -> tuple[str, bool]:
    """(node id, is a collection error) of a ``<testcase>`` element."""
    classname = case.get("classname", "") or ""
    name = case.get("name", "") or ""
    file = case.get("file")
    if not classname:  # a collection error: name is the dotted module
        return _module_to_path(name), True
    if file and file.endswith(".py"):
        module = file[:-3].replace("/", ".")
        rest = classname[len(module):].lstrip(".") if classname.startswith(module) else ""
    else:  # find the longest prefix of the classname that is a known test file
        parts = classname.split(".")
        module, rest = classname, ""
        for k in range(len(parts), 0, -1):
            if _module_to_path(".".join(parts[:k])) in known_files:
                module, rest = ".".join(parts[:k]), ".".join(parts[k:])
                break
        file = _module_to_path(module)
    prefix = "".join(f"{c}::" for c in rest.split(".") if c)
    return f"{file}::{prefix}{name}", False


def parse(data: bytes, known_files: set[str] | None = None) -> Report:
    """Parse a pytest JUnit XML report.

    Args:
        data: the report's bytes.
        known_files: test files (POSIX, relative) used to split a class name into file and
            class when the report has no ``file`` attribute.

    Raises:
        ReportError: too large, not well-formed, forbidden XML features, not one pytest
            report, too many cases.
    """
    if len(data) > MAX_REPORT_BYTES:
        raise ReportError(f"the test report is larger than {MAX_REPORT_BYTES} bytes")
    if not data.strip():
        raise ReportError("the test report is empty (the test run stopped before writing it)")
    try:
        root = SafeET.fromstring(data, forbid_dtd=True)
    except DefusedXmlException as exc:
        raise ReportError(f"the test report uses forbidden XML features ({type(exc).__name__})") from None
    except SafeET.ParseError as exc:
        raise ReportError(f"the test report is not well-formed XML ({exc})") from None
    suites = [root] if root.tag == "testsuite" else list(root) if root.tag == "testsuites" else None
    if not suites or any(s.tag != "testsuite" for s in suites):
        raise ReportError(f"the test report is not a pytest JUnit report (root element <{root.tag}>)")
    known = known_files or set()
    cases: list[CaseResult] = []
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite in suites:
        for key in totals:
            try:
                totals[key] += int(suite.get(key, "0"))
            except ValueError:
                raise ReportError(f"the test report's {key}= is not a number") from None
        for case in suite.iter("testcase"):
            if len(cases) >= MAX_CASES:
                raise ReportError(f"the test report holds more than {MAX_CASES} test cases")
            nodeid, collection_error = _nodeid(case, known)
            outcome, message, details = "passed", "", ""
            for child in case:
                if child.tag in ("failure", "error"):
                    outcome = "collection-error" if collection_error else "failed"
                elif child.tag == "skipped" and outcome == "passed":
                    outcome = "skipped"
                else:
                    continue
                message = message or (child.get("message") or "")[:MAX_TEXT]
                details = details or (child.text or "")[-MAX_TEXT:]
            properties = {p.get("name", ""): p.get("value", "") for p in case.iter("property")}
            cases.append(CaseResult(nodeid, outcome, message, details, properties))
    return Report(cases, totals["tests"], totals["failures"], totals["errors"], totals["skipped"])
