#!/usr/bin/env python3
"""Pack what a learner uploads: ``submission.zip`` in the layout the autograder expects.

    python tools/make_submission.py [--out submission.zip]      # make submission

The zip holds, at the repository's paths (``tests/grading/submission.json`` lists them):

- the lab files that hold your code (``lab01_cluster_sim/metrics.py``, ...), as they are
  in your checkout: the autograder takes these and nothing else of the packages;
- ``written_answers.html``: your answers to the notebooks' written questions (the cells
  tagged ``written-answer``, with nbgrader metadata), each after its question, made with
  nbconvert; your instructor grades them by hand (the file is also written beside the zip);
- the two lab notebooks, for your instructor's reference.

Upload ``submission.zip`` as it is (Gradescope unpacks it). The tool warns, without
failing, about a part still marked ``your code here``, a file that does not compile, and a
written answer not yet given.

Errors (exit 1, one line): a lab file listed in submission.json is missing, nbconvert is
not installed, OUT is a folder.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import zipfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
LIST = Path("tests") / "grading" / "submission.json"
PLACEHOLDER = "YOUR ANSWER HERE"
_STUB = re.compile(r'raise NotImplementedError\("your code here \(([0-9]+[A-Z][A-Za-z0-9]*)\)"\)')
_FIXED_DATE = (1980, 1, 1, 0, 0, 0)


class SubmissionError(Exception):
    """Something that stops the packing; the message names the file."""


def _written(notebook: Path) -> list[tuple[dict, dict, dict]]:
    """(question cell, answer cell, nbgrader metadata) of each written question."""
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    cells = nb.get("cells", [])
    out = []
    for i, cell in enumerate(cells):
        meta = cell.get("metadata", {})
        if "written-answer" in meta.get("tags", []) and cell.get("cell_type") == "markdown":
            question = next((c for c in reversed(cells[:i]) if c.get("cell_type") == "markdown"), {})
            out.append((question, cell, meta.get("nbgrader", {})))
    return out


def _text(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def written_answers_html(notebooks: list[Path], root: Path) -> tuple[str, list[str]]:
    """One HTML page with every written question and its answer (nbconvert), and the
    ids of the questions still unanswered.

    Raises:
        SubmissionError: nbconvert or nbformat is not installed.
    """
    try:
        import nbformat
        from nbconvert import HTMLExporter
    except ImportError:
        raise SubmissionError("nbconvert is not installed: pip install nbconvert (or make setup)") from None
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_markdown_cell(
        "# Written answers\n\nCollected by `make submission` from the lab notebooks' cells tagged "
        "`written-answer`; graded by hand."))
    missing = []
    for path in notebooks:
        rel = path.relative_to(root).as_posix()
        nb.cells.append(nbformat.v4.new_markdown_cell(f"## {rel}"))
        for question, answer, meta in _written(path):
            grade_id, points = meta.get("grade_id", "?"), meta.get("points", "?")
            text = _text(answer)
            if PLACEHOLDER in text or not text.strip():
                missing.append(grade_id)
            nb.cells.append(nbformat.v4.new_markdown_cell(f"### {grade_id} ({points} points)\n\n" + _text(question)))
            cell = nbformat.v4.new_markdown_cell(text)
            cell.metadata = {"nbgrader": meta, "tags": ["written-answer"]}
            nb.cells.append(cell)
    exporter = HTMLExporter()
    html, _ = exporter.from_notebook_node(nb)
    return html, missing


def build(out: Path, root: Path = REPO_ROOT) -> list[str]:
    """Write the submission zip; returns warnings (one line each).

    Raises:
        SubmissionError: see the module docstring.
    """
    spec = json.loads((root / LIST).read_text(encoding="utf-8"))
    if out.is_dir():
        raise SubmissionError(f"{out}: is a folder; give the path of the zip to write")
    warnings: list[str] = []
    members: dict[str, bytes] = {}
    for rel, parts in spec["files"].items():
        path = root / rel
        if not path.is_file():
            raise SubmissionError(f"{rel}: not found in {root} (it holds your code for part(s) {', '.join(parts)})")
        text = path.read_text(encoding="utf-8")
        left = sorted(set(_STUB.findall(text)))
        if left:
            warnings.append(f"{rel}: part(s) {', '.join(left)} still say 'your code here'")
        try:
            compile(text, rel, "exec", dont_inherit=True)
        except SyntaxError as exc:
            warnings.append(f"{rel}:{exc.lineno}: {exc.msg} (this file does not compile: its parts will score 0)")
        members[rel] = path.read_bytes()
    notebooks = [root / n for n in spec.get("notebooks", []) if (root / n).is_file()]
    html, missing = written_answers_html(notebooks, root)
    if missing:
        warnings.append(f"written answers not given yet: {', '.join(missing)}")
    members[spec["written_answers"]] = html.encode("utf-8")
    for nb in notebooks:
        members[nb.relative_to(root).as_posix()] = nb.read_bytes()
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(members):
            zf.writestr(zipfile.ZipInfo(name, date_time=_FIXED_DATE), members[name])
    (out.parent / spec["written_answers"]).write_bytes(members[spec["written_answers"]])
    return warnings


def main(argv: list[str] | None = None) -> int:
    """Command line; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python tools/make_submission.py",
        description="Pack your lab files and your written answers (written_answers.html) into "
                    "submission.zip, in the layout the autograder expects; upload that zip.")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "submission.zip",
                        help="where to write the zip (default: submission.zip at the repository root)")
    args = parser.parse_args(argv)
    try:
        warnings = build(args.out)
    except SubmissionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for w in warnings:
        print(f"warning: {w}")
    with zipfile.ZipFile(args.out) as zf:
        names = zf.namelist()
    print(f"wrote {args.out} ({len(names)} files: your lab files, written_answers.html, the notebooks) "
          f"and {args.out.parent / 'written_answers.html'}; upload {args.out.name} to Gradescope as it is")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
