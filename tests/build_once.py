"""Expensive test inputs built once per test run and shared by every pytest-xdist worker.

:func:`build_once` is pytest-xdist's recipe "Making session-scoped fixtures execute only once"
(https://pytest-xdist.readthedocs.io/en/stable/how-to.html): the first worker that asks
builds under a file lock in the run's shared temporary folder, the others wait and reuse it.
:func:`start_book_build` starts the book's build in the controller as soon as the run begins
(``make test`` with ``-n``), so the workers run the other tests meanwhile instead of one of
them building while the other waits on the lock.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
BOOK_TESTS = REPO_ROOT / "tests" / "book"


def _shared(tmp_path_factory: pytest.TempPathFactory, name: str, out: Path | None) -> tuple[Path, Path, Path]:
    """(folder, outcome file, lock file) of ``name`` in the run's base temporary folder: the
    controller's, which is the parent of each xdist worker's own."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    folder = out if out is not None else base / f"shared-{name}"
    return folder, base / f"shared-{name}.outcome", base / f"shared-{name}.lock"


def _build_and_record(name: str, build: Callable[[Path], None], folder: Path, outcome: Path) -> None:
    """``build(folder)``; the outcome file says ``ok``, or ``skip``/``fail`` and the message."""
    try:
        build(folder)
    except pytest.skip.Exception as exc:
        outcome.write_text(f"skip\n{exc.msg}")
        raise
    except BaseException as exc:
        outcome.write_text(f"fail\n{name} failed in another test process: {exc}")
        raise
    outcome.write_text("ok\n")


def build_once(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None],
               out: Path | None = None) -> Path:
    """Run ``build(folder)`` once per test run, in whichever process asks first, and return
    ``folder`` to every caller (each waits on a file lock until it is done).

    ``folder`` is ``out`` when given, else ``shared-<name>`` in the run's base temporary
    folder. A build that failed or skipped (``pytest.fail``/``pytest.skip`` or an exception)
    fails or skips every later caller with the same message instead of building again.
    """
    from filelock import FileLock  # here: graded runs load tests/conftest.py with fewer packages

    folder, outcome, lock = _shared(tmp_path_factory, name, out)
    with FileLock(str(lock), thread_local=False):
        if not outcome.is_file():
            _build_and_record(name, build, folder, outcome)
    kind, _, message = outcome.read_text().partition("\n")
    if kind == "skip":
        pytest.skip(message)
    if kind == "fail":
        pytest.fail(message, pytrace=False)
    return folder


def book_output() -> Path | None:
    """Where the tests build the book: ``$BOOK_TEST_OUTPUT`` (kept, with its execution cache,
    between runs) or None (the run's temporary folder)."""
    chosen = os.environ.get("BOOK_TEST_OUTPUT")
    return Path(chosen) if chosen else None


def build_book(out: Path) -> None:
    """``tools/build_book.py --path-output out``; skips when the front-end assets cannot be had.

    Raises:
        pytest.fail.Exception: the build failed (the message carries its output).
    """
    sys.path.insert(0, str(REPO_ROOT / "tools"))
    import fetch_book_assets

    if shutil.which("npm") is None and not fetch_book_assets.is_installed():
        pytest.skip("npm not found and book/_vendor/ not fetched: the book needs require.js, the "
                    "ipywidgets embed script and MathJax from the npm registry (Debian: apt-get install npm)")
    proc = subprocess.run(
        [sys.executable, str(REPO_ROOT / "tools" / "build_book.py"), "--path-output", str(out)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=1200, check=False,
    )
    if proc.returncode != 0:
        pytest.fail(f"book build failed (exit {proc.returncode}):\n{proc.stdout[-6000:]}\n{proc.stderr[-6000:]}")


def _runs_book_tests(config: pytest.Config) -> bool:
    """Whether the paths this run collects include tests/book (``-k``/``-m`` not considered)."""
    args = [a.split("::", 1)[0] for a in config.args if not a.startswith("-")] or ["tests"]
    for arg in args:
        path = (config.invocation_params.dir / arg).resolve()
        if path == BOOK_TESTS or BOOK_TESTS in path.parents or path in BOOK_TESTS.parents:
            return True
    return False


def start_book_build(config: pytest.Config) -> threading.Thread | None:
    """In the pytest-xdist controller of a run that includes the book tests, take the book's
    lock and build it on a thread while the workers start on other tests; the workers'
    :func:`build_once` waits for it and reuses it. Returns the thread (None when not started:
    no ``-n``, a worker, or no book test in the run)."""
    if os.environ.get("PYTEST_XDIST_WORKER") or not getattr(config.option, "numprocesses", None):
        return None
    if not _runs_book_tests(config):
        return None
    from filelock import FileLock

    folder, outcome, lock_path = _shared(config._tmp_path_factory, "book", book_output())
    lock = FileLock(str(lock_path), thread_local=False)
    lock.acquire()

    def run() -> None:
        try:
            _build_and_record("book", build_book, folder, outcome)
        except BaseException:  # recorded in the outcome file: the book tests report it
            pass
        finally:
            lock.release()

    thread = threading.Thread(target=run, name="book-build", daemon=True)
    thread.start()
    return thread
