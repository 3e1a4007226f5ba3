"""Fixtures for the book tests: one build per test run, and the built site over HTTP.

The build runs ``tools/build_book.py`` (warnings are errors, no-CDN check) into a
temporary output folder, so a test run never mixes with a developer's ``book/_build``
and always executes the chapters against the lab packages as they are now (the
execution cache is keyed on the notebook text only, so a cache from an earlier run
could hide a change in a lab package). Set ``BOOK_TEST_OUTPUT=DIR`` to build into DIR
instead and keep its cache between runs (faster when iterating on the book). Under
pytest-xdist (``make test``) the controller starts the build as the run begins, and every
worker waits for that one build and shares it (tests/build_once.py).
"""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from build_once import book_output, build_book, build_once

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def built_book(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Build the book once per test run (shared by every xdist worker); return the
    ``_build/html`` folder.

    Fails (does not skip) when the build fails: the message carries the build's output.
    """
    out = build_once(tmp_path_factory, "book", build_book, book_output())
    html = out / "_build" / "html"
    assert (html / "index.html").is_file(), f"no index.html in {html}"
    return html


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
        pass


@pytest.fixture(scope="session")
def site_url(built_book: Path) -> Iterator[str]:
    """Serve the built book on 127.0.0.1 (a free port) in a daemon thread."""
    handler = functools.partial(_QuietHandler, directory=str(built_book))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
