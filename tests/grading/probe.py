"""Import check of the learner's files, run by the grader in a child process (never in the
grader's own process): ``python -m grading.probe FD FILE...``.

For each learner file (a path relative to the working folder, e.g.
``lab01_cluster_sim/metrics.py``) it writes one JSON line to file descriptor FD before
importing it (``{"start": FILE}``) and one after (``{"ok": FILE}`` or ``{"fail": FILE,
"blame": FILE2, "line": N, "error": "..."}``), where ``blame`` is the learner file in
which the import failed (the deepest traceback frame in a learner file; a syntax error
names its own file and line) and may differ from ``FILE`` when one learner file imports
another. The parent reads these lines; a file blamed is replaced by its unchanged
student-edition version so that only the parts that need it lose points. Output of the
learner's code goes to stdout/stderr, never to FD.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import traceback
from pathlib import Path


def _module_name(rel: str) -> str:
    return rel[:-3].replace("/", ".").removesuffix(".__init__")


def _blame(exc: BaseException, files: dict[str, str]) -> tuple[str | None, int | None]:
    """(learner file, line) where ``exc`` was raised: the deepest frame in a learner file."""
    if isinstance(exc, SyntaxError) and exc.filename:
        path = str(Path(exc.filename).resolve())
        if path in files:
            return files[path], exc.lineno
    blame = (None, None)
    for frame in traceback.extract_tb(exc.__traceback__):
        path = str(Path(frame.filename).resolve())
        if path in files:
            blame = (files[path], frame.lineno)
    return blame


def main(argv: list[str]) -> int:
    """Import each file named in ``argv[1:]``, reporting to the file descriptor ``argv[0]``."""
    out = os.fdopen(int(argv[0]), "w", encoding="utf-8", buffering=1)
    rels = argv[1:]
    files = {str(Path(rel).resolve()): rel for rel in rels}

    def emit(record: dict) -> None:
        out.write(json.dumps(record) + "\n")
        out.flush()

    for rel in rels:
        emit({"start": rel})
        try:
            importlib.import_module(_module_name(rel))
        except BaseException as exc:  # noqa: BLE001 - anything a learner module raises, even SystemExit
            blame, line = _blame(exc, files)
            message = "".join(traceback.format_exception_only(type(exc), exc)).strip().splitlines()
            emit({"fail": rel, "blame": blame or rel, "line": line,
                  "error": (message[-1] if message else type(exc).__name__)[:500]})
        else:
            emit({"ok": rel})
    emit({"done": True})
    out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
