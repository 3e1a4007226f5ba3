"""Expensive test inputs built once per test run and shared by every pytest-xdist worker."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from filelock import FileLock


def build_once(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None],
               out: Path | None = None) -> Path:
    """Run ``build(folder)`` once per test run, in whichever pytest-xdist worker asks first,
    and return ``folder`` to every worker (each waits on a file lock until it is done).

    ``folder`` is ``out`` when given, else ``shared-<name>`` in the run's base temporary
    folder; under xdist that is the parent of the worker's own (pytest-xdist's recipe "Making
    session-scoped fixtures execute only once",
    https://pytest-xdist.readthedocs.io/en/stable/how-to.html). The outcome is recorded beside
    it: a build that failed or skipped (``pytest.fail``/``pytest.skip`` or an exception) fails
    or skips every later caller with the same message instead of building again.
    """
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    folder = out if out is not None else base / f"shared-{name}"
    outcome = base / f"shared-{name}.outcome"
    with FileLock(str(base / f"shared-{name}.lock")):
        if not outcome.is_file():
            try:
                build(folder)
            except pytest.skip.Exception as exc:
                outcome.write_text(f"skip\n{exc.msg}")
                raise
            except BaseException as exc:
                outcome.write_text(f"fail\n{name} failed in another test worker: {exc}")
                raise
            outcome.write_text("ok\n")
    kind, _, message = outcome.read_text().partition("\n")
    if kind == "skip":
        pytest.skip(message)
    if kind == "fail":
        pytest.fail(message, pytrace=False)
    return folder
