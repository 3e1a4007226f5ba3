#!/usr/bin/env python3
"""Write the student edition of the course (or a clean instructor copy) to a folder.

    python tools/make_student_edition.py OUTDIR            # student edition
    python tools/make_student_edition.py --instructor OUTDIR   # plain copy, hidden tests kept

The student edition is a copy of the repository's files (git-tracked plus untracked files
that git does not ignore) in which:

- every solution region of the lab packages (``lab01_cluster_sim/``, ``lab02_device_plugin/``)
  and of the lab notebooks, the lines from ``### BEGIN SOLUTION`` to ``### END SOLUTION``
  (the nbgrader convention), becomes ``raise NotImplementedError("your code here (1A)")``
  at the region's indentation; the docstring and everything outside the region stay;
- the part id comes from the marker itself (``### BEGIN SOLUTION 1A``) or, when the marker
  has none, from :data:`PART_OF`, keyed by ``path::function``;
- notebook cells tagged ``exercise`` or ``check``, and every code cell after a notebook's
  first exercise (its outputs were computed with the solutions), lose their outputs (the
  learner has not run them yet); a cell tagged ``keep-output`` keeps them;
- ``tests/hidden/`` is left out and the grading manifest is regenerated without it, so
  no hidden test text travels in ``tests/grading/pristine.json``;
- the written-answer cells of the notebooks lose their grading guide (the lines from
  ``<!-- BEGIN GRADING GUIDE -->`` to ``<!-- END GRADING GUIDE -->``), labs/README.md its
  instructors' part (``<!-- BEGIN INSTRUCTORS -->`` ... ``<!-- END INSTRUCTORS -->``), and
  README.md and Makefile are the learner's (tools/student_edition/);
- everything else (the book, the simulator engine, the mock kubelet, the graded tests)
  is copied whole, so the student edition installs, imports and runs.

Errors (exit 1, one line): OUTDIR exists and is not empty; an unbalanced or nested
marker (named by file:line); a region whose part is unknown.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

REPO_ROOT = Path(__file__).resolve().parents[1]
LAB_PACKAGES = ("lab01_cluster_sim", "lab02_device_plugin")
NOTEBOOK_DIR = "labs"
HIDDEN_DIR = "tests/hidden"
CLEARED_TAGS = {"exercise", "check"}
KEEP_TAG = "keep-output"
"""A code cell after the first exercise keeps its outputs in the student edition only with this tag."""
WRITTEN_TAG = "written-answer"
GUIDE_BEGIN, GUIDE_END = "<!-- BEGIN GRADING GUIDE -->", "<!-- END GRADING GUIDE -->"
"""The grading guide of a written-answer cell (instructor edition only)."""
INSTRUCTOR_BEGIN, INSTRUCTOR_END = "<!-- BEGIN INSTRUCTORS -->", "<!-- END INSTRUCTORS -->"
"""The instructors' part of labs/README.md (left out of the student edition)."""
STUDENT_FILES = {"README.md": "tools/student_edition/README.md", "Makefile": "tools/student_edition/Makefile"}
"""Files of the student edition that replace the repository's (the learner's README and Makefile)."""
_BEGIN = re.compile(r"^(?P<indent>[ \t]*)### BEGIN SOLUTION(?:[ \t]+(?P<part>[0-9]+[A-Z][A-Za-z0-9]*))?[ \t]*$")
_END = re.compile(r"^[ \t]*### END SOLUTION[ \t]*$")
_DEF = re.compile(r"^(?P<indent>[ \t]*)(?:async[ \t]+)?def[ \t]+(?P<name>\w+)")

PART_OF: Mapping[str, str] = MappingProxyType({
    # Lab 01 (parts of the lab walkthrough; see labs/README.md)
    "best_fit_raw_score": "1A",       # policies/generic.py: the BestFit score
    "count_stranded_gpus": "1B",      # metrics.py: stranded GPUs
    "gang_permit": "1C",              # scheduler.py: the gang Permit
    "choose_victims": "1D",           # disciplines/preemption.py: preemption victims
    "drf_pick_tenant": "1E",          # disciplines/drf.py: DRF ordering
    # Lab 02
    "list_and_watch_snapshot": "2A",  # plugin/sharing.py: the ListAndWatch snapshot
    "expand_replicas": "2B",          # plugin/sharing.py: time-slicing advertisement
    "physical_device_id": "2B",       # plugin/sharing.py: replica -> GPU in Allocate
    "mixed_resource_name": "2C",      # plugin/mig.py: MIG mixed-strategy naming
    "next_health": "2D",              # plugin/health.py: health transitions
})
"""Part of each solution region whose marker names none, keyed by the enclosing function's
name (or ``path::function`` where a name is not unique)."""


class EditionError(Exception):
    """Bad input to the tool: the message names the file (and line) and what was expected."""


@dataclass(frozen=True)
class Region:
    """One solution region: ``path`` (POSIX, relative), 1-based ``begin``/``end`` lines."""

    path: str
    function: str
    begin: int
    end: int
    part: str


def _enclosing_function(lines: list[str], index: int, indent: str) -> str:
    for j in range(index - 1, -1, -1):
        m = _DEF.match(lines[j])
        if m and len(m.group("indent")) < len(indent):
            return m.group("name")
    return ""


def find_regions(text: str, path: str, part_of: Mapping[str, str] = PART_OF) -> list[Region]:
    """Solution regions of one Python source (or one notebook cell).

    Raises:
        EditionError: an END without BEGIN, a BEGIN without END, nested regions, or a
            region with no part (neither in the marker nor in :data:`PART_OF`).
    """
    lines = text.splitlines()
    regions: list[Region] = []
    open_at: tuple[int, re.Match] | None = None
    for i, line in enumerate(lines):
        begin = _BEGIN.match(line)
        if begin:
            if open_at is not None:
                raise EditionError(f"{path}:{i + 1}: BEGIN SOLUTION inside the region opened at line {open_at[0] + 1}")
            open_at = (i, begin)
        elif _END.match(line):
            if open_at is None:
                raise EditionError(f"{path}:{i + 1}: END SOLUTION without a BEGIN SOLUTION")
            start, m = open_at
            function = _enclosing_function(lines, start, m.group("indent"))
            part = m.group("part") or part_of.get(f"{path}::{function}") or part_of.get(function)
            if part is None:
                raise EditionError(
                    f"{path}:{start + 1}: solution region in {function or 'module code'!r} names no part; "
                    f"write '### BEGIN SOLUTION 1A' or add {function!r} to PART_OF in {Path(__file__).name}")
            regions.append(Region(path, function, start + 1, i + 1, part))
            open_at = None
        elif "### BEGIN SOLUTION" in line or "### END SOLUTION" in line:
            raise EditionError(f"{path}:{i + 1}: a solution marker must stand alone on its line")
    if open_at is not None:
        raise EditionError(f"{path}:{open_at[0] + 1}: BEGIN SOLUTION without an END SOLUTION")
    return regions


def strip_solutions(text: str, path: str, part_of: Mapping[str, str] = PART_OF) -> tuple[str, list[Region]]:
    """``text`` with every solution region replaced by a ``raise NotImplementedError``.

    Returns:
        The new text (same line ending at the end as the input) and the regions replaced.
    """
    regions = find_regions(text, path, part_of)
    if not regions:
        return text, []
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    cursor = 0
    for r in regions:
        out.extend(lines[cursor:r.begin - 1])
        indent = _BEGIN.match(lines[r.begin - 1].rstrip("\r\n")).group("indent")
        newline = "\n" if lines[r.begin - 1].endswith("\n") else ""
        out.append(f'{indent}raise NotImplementedError("your code here ({r.part})"){newline}')
        cursor = r.end
    out.extend(lines[cursor:])
    return "".join(out), regions


def strip_between(text: str, begin: str, end: str, path: str) -> str:
    """``text`` without the lines from one standing alone as ``begin`` to the next ``end``
    (both included), and without one blank line that follows such a block.

    Raises:
        EditionError: an unbalanced or nested marker (named by file:line).
    """
    out: list[str] = []
    lines = text.splitlines(keepends=True)
    inside: int | None = None
    skip_blank = False
    for i, line in enumerate(lines):
        marker = line.strip()
        if marker == begin:
            if inside is not None:
                raise EditionError(f"{path}:{i + 1}: {begin} inside the block opened at line {inside + 1}")
            inside = i
        elif marker == end:
            if inside is None:
                raise EditionError(f"{path}:{i + 1}: {end} without {begin}")
            inside, skip_blank = None, True
        elif inside is None:
            if not (skip_blank and not marker):
                out.append(line)
            skip_blank = False
    if inside is not None:
        raise EditionError(f"{path}:{inside + 1}: {begin} without {end}")
    return "".join(out)


def strip_notebook(raw: str, path: str) -> tuple[str, list[Region]]:
    """A notebook (JSON text) with solution regions stripped and the outputs of exercise and
    check cells, and of every code cell after the first exercise (unless tagged
    ``keep-output``), cleared."""
    nb = json.loads(raw)
    regions: list[Region] = []
    after_exercise = False
    for index, cell in enumerate(nb.get("cells", [])):
        source = cell.get("source", "")
        text = "".join(source) if isinstance(source, list) else source
        if cell.get("cell_type") == "markdown" and WRITTEN_TAG in cell.get("metadata", {}).get("tags", []):
            cell["source"] = strip_between(text, GUIDE_BEGIN, GUIDE_END, f"{path}#cell{index}").splitlines(keepends=True)
        if cell.get("cell_type") != "code":
            continue
        new, found = strip_solutions(text, f"{path}#cell{index}")
        if found:
            cell["source"] = new.splitlines(keepends=True)
            regions += found
        tags = set(cell.get("metadata", {}).get("tags", []))
        after_exercise = after_exercise or bool(found) or "exercise" in tags
        # outputs computed with the solutions never ship: every code cell from the first
        # exercise on is cleared (the learner runs it with their own code), unless tagged
        # keep-output (its output does not depend on the learner's code)
        if found or tags & CLEARED_TAGS or (after_exercise and KEEP_TAG not in tags):
            cell["outputs"] = []
            cell["execution_count"] = None
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n", regions


def repository_files(root: Path) -> list[str]:
    """Files of the repository: git-tracked plus untracked-but-not-ignored (POSIX, relative).

    Outside a git checkout: every file except caches and build outputs.
    """
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            check=True, capture_output=True, timeout=60).stdout.decode()
        names = sorted({n for n in out.split("\0") if n})
    except (OSError, subprocess.CalledProcessError):
        skip = {".git", "__pycache__", ".pytest_cache", "_build", ".ipynb_checkpoints", "test-artifacts"}
        names = sorted(p.relative_to(root).as_posix() for p in root.rglob("*")
                       if p.is_file() and not skip.intersection(p.relative_to(root).parts))
    return [n for n in names if (root / n).is_file()]


def build(outdir: Path, root: Path = REPO_ROOT, instructor: bool = False) -> list[Region]:
    """Write the student edition (or, with ``instructor``, a plain copy) of ``root`` to ``outdir``.

    Returns:
        The solution regions replaced (empty for the instructor copy).

    Raises:
        EditionError: ``outdir`` is not empty or is the repository itself, a bad marker.
    """
    outdir = outdir.resolve()
    if outdir == root.resolve():
        raise EditionError(f"{outdir}: OUTDIR must not be the repository itself")
    if outdir.exists() and any(outdir.iterdir()):
        raise EditionError(f"{outdir}: OUTDIR exists and is not empty; give a new folder")
    files = repository_files(root)
    # Work out every stripped text first: a bad marker leaves nothing half-written.
    texts: dict[str, str] = {}
    regions: list[Region] = []
    if not instructor:
        files = [f for f in files if not (f == HIDDEN_DIR or f.startswith(HIDDEN_DIR + "/"))]
        for rel in files:
            if rel.split("/")[0] in LAB_PACKAGES and rel.endswith(".py"):
                new, found = strip_solutions((root / rel).read_text(encoding="utf-8"), rel)
            elif rel.startswith(NOTEBOOK_DIR + "/") and rel.endswith(".ipynb"):
                new, found = strip_notebook((root / rel).read_text(encoding="utf-8"), rel)
            elif rel == f"{NOTEBOOK_DIR}/README.md":
                new, found = strip_between((root / rel).read_text(encoding="utf-8"), INSTRUCTOR_BEGIN,
                                           INSTRUCTOR_END, rel), []
            elif rel in STUDENT_FILES and (root / STUDENT_FILES[rel]).is_file():
                new, found = (root / STUDENT_FILES[rel]).read_text(encoding="utf-8"), []
            else:
                continue
            texts[rel] = new
            regions += found
    outdir.mkdir(parents=True, exist_ok=True)
    for rel in files:
        dest = outdir / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        if rel in texts:
            dest.write_text(texts[rel], encoding="utf-8")
        else:
            shutil.copy2(root / rel, dest)
    if not instructor and (outdir / "tests" / "grading" / "manifest.py").is_file():
        # the copy's own manifest module, loaded by path: a `grading` package imported from the
        # copy would stay in sys.modules after the copy is gone
        spec = importlib.util.spec_from_file_location("_edition_manifest", outdir / "tests" / "grading" / "manifest.py")
        manifest = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = manifest  # dataclasses look their module up there
        try:
            spec.loader.exec_module(manifest)
            manifest.write(outdir, exclude_hidden=True)
        finally:
            del sys.modules[spec.name]
    return regions


def main(argv: list[str] | None = None) -> int:
    """Command line; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python tools/make_student_edition.py",
        description="Write the student edition of the course to OUTDIR: solution regions become "
                    "`raise NotImplementedError(\"your code here (PART)\")`, exercise outputs are "
                    "cleared, hidden tests are left out; everything else is copied whole.")
    parser.add_argument("outdir", type=Path, metavar="OUTDIR", help="a new (or empty) folder")
    parser.add_argument("--instructor", action="store_true",
                        help="write a plain copy instead (solutions and hidden tests kept), "
                             "e.g. for an autograder image")
    parser.add_argument("--list", action="store_true", help="list the regions replaced")
    args = parser.parse_args(argv)
    try:
        regions = build(args.outdir, instructor=args.instructor)
    except EditionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.instructor:
        print(f"instructor copy written to {args.outdir}")
        return 0
    parts = sorted({r.part for r in regions})
    print(f"student edition written to {args.outdir}: {len(regions)} solution regions replaced "
          f"(parts {', '.join(parts) or 'none'}); tests/hidden left out")
    if args.list:
        for r in regions:
            print(f"  {r.part}  {r.path}:{r.begin}  {r.function}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
