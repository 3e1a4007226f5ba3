"""Text rules of part one of the book (front page, chapters 1-5, glossary), checked on the
sources without a build.

* Code a reader sees (every code cell not tagged ``remove-input`` or ``remove-cell``) keeps
  its lines to 74 characters: at 1280 px Chromium fits about 74 in a solution cell (the
  lead's measurement).
* A number and its "%" are joined by a no-break space in the prose, so "20 %" never breaks
  across lines.
* The numbers the worked case computes are glued in from the models, not typed: the MPS
  latency that the old double-counting model gave (38.4 ms) must not come back.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

BOOK = Path(__file__).resolve().parents[2] / "book"
PAGES = ["intro.md", "ch01_sharing_problem.md", "ch02_mps.md", "ch03_mig.md",
         "ch04_time_slicing.md", "ch05_choosing.md", "glossary.md"]
MAX_CODE = 74


def _cells(text: str) -> list[tuple[int, list[str], list[str]]]:
    """(line of the opening fence, tags, source lines) of every code cell of a MyST
    notebook."""
    cells = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if lines[i].startswith("```{code-cell}"):
            start = i + 1  # 1-based line of the fence
            body: list[str] = []
            tags: list[str] = []
            i += 1
            if i < len(lines) and lines[i] == "---":  # YAML header of the cell
                i += 1
                while lines[i] != "---":
                    m = re.match(r"tags: \[(.*)\]", lines[i])
                    if m:
                        tags = [t.strip() for t in m.group(1).split(",")]
                    i += 1
                i += 1
            while i < len(lines) and lines[i].startswith(":tags:"):
                tags = [t.strip() for t in lines[i].split("[", 1)[1].rstrip("]").split(",")]
                i += 1
            while lines[i] != "```":
                body.append(lines[i])
                i += 1
            cells.append((start, tags, body))
        i += 1
    return cells


def _prose(text: str) -> list[tuple[int, str]]:
    """(line number, line) of the Markdown outside code cells and plain code fences."""
    out, code = [], False
    for n, line in enumerate(text.split("\n"), start=1):
        stripped = line.strip()
        if not code and stripped.startswith("```") and (
                stripped.startswith("```{code-cell}") or not stripped.startswith("```{")) \
                and stripped != "```":
            code = True
            continue
        if code and stripped == "```":
            code = False
            continue
        if not code:
            out.append((n, line))
    return out


def test_the_helpers_split_cells_and_prose():
    text = ("Some 20\u00a0% prose.\n\n```{code-cell} ipython3\n:tags: [remove-cell]\n\n"
            "x = 1\n```\n\n```bash\nls 20 %\n```\n")
    assert _cells(text) == [(3, ["remove-cell"], ["", "x = 1"])]
    assert [line for _, line in _prose(text) if line] == ["Some 20\u00a0% prose."]


@pytest.mark.parametrize("page", PAGES)
def test_visible_code_fits_the_column(page):
    text = (BOOK / page).read_text(encoding="utf-8")
    long = [f"{page}: cell at line {start}, source line {k + 1}: {len(line)} characters"
            for start, tags, body in _cells(text)
            if "remove-input" not in tags and "remove-cell" not in tags
            for k, line in enumerate(body) if len(line) > MAX_CODE]
    assert not long, "\n".join(long)


@pytest.mark.parametrize("page", PAGES)
def test_percent_signs_do_not_break_from_their_number(page):
    text = (BOOK / page).read_text(encoding="utf-8")
    loose = [f"{page}:{n}: {line.strip()}" for n, line in _prose(text)
             if re.search(r"\d %", line)]
    assert not loose, "\n".join(loose)


def test_worked_case_numbers_are_computed():
    text = (BOOK / "ch05_choosing.md").read_text(encoding="utf-8")
    assert "38.4" not in text and "17.6 ms" not in text
    assert "{glue:md}`mps_inf_ms`" in text and "{glue:md}`mig_inf_ms`" in text
