"""tests/build_once.py: an expensive input is built by the first caller of a run only."""

from __future__ import annotations

import os
import subprocess
from types import SimpleNamespace
import sys
from pathlib import Path

import pytest

from build_once import _runs_book_tests, build_once

REPO_ROOT = Path(__file__).resolve().parents[1]


def test_the_second_caller_gets_the_first_build(tmp_path_factory):
    calls: list[Path] = []

    def build(folder: Path) -> None:
        calls.append(folder)
        folder.mkdir()
        (folder / "out.txt").write_text("built")

    first = build_once(tmp_path_factory, "once-ok", build)
    second = build_once(tmp_path_factory, "once-ok", build)
    assert first == second == calls[0] and len(calls) == 1
    assert (second / "out.txt").read_text() == "built"


def test_a_failed_build_fails_later_callers_without_building_again(tmp_path_factory):
    calls = []

    def build(folder: Path) -> None:
        calls.append(folder)
        raise RuntimeError("compiler exploded")

    with pytest.raises(RuntimeError, match="compiler exploded"):
        build_once(tmp_path_factory, "once-fail", build)
    with pytest.raises(pytest.fail.Exception, match="once-fail failed in another test process: compiler exploded"):
        build_once(tmp_path_factory, "once-fail", build)
    assert len(calls) == 1


def test_a_skipped_build_skips_later_callers_with_its_reason(tmp_path_factory):
    def build(folder: Path) -> None:
        pytest.skip("npm not found")

    for _ in range(2):
        with pytest.raises(pytest.skip.Exception, match="npm not found"):
            build_once(tmp_path_factory, "once-skip", build)


def test_two_xdist_workers_build_once(tmp_path):
    # a real run with two workers: four tests ask for the same build, one builds it
    (tmp_path / "test_shared.py").write_text(
        "import os, pytest\n"
        "from build_once import build_once\n"
        "@pytest.mark.parametrize('k', range(4))\n"
        "def test_k(tmp_path_factory, k):\n"
        "    def build(folder):\n"
        "        folder.mkdir()\n"
        "        (folder / os.environ['PYTEST_XDIST_WORKER']).write_text('')\n"
        "    folder = build_once(tmp_path_factory, 'x', build)\n"
        "    assert len(list(folder.iterdir())) == 1\n")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "-p", "no:cacheprovider", "-q",
                           "--rootdir", str(tmp_path), "--basetemp", str(tmp_path / "base"), str(tmp_path)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO_ROOT / "tests")})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "4 passed" in proc.stdout
    assert len(list((tmp_path / "base" / "shared-x").iterdir())) == 1


@pytest.mark.parametrize("args, book", [
    ([], True), (["tests"], True), (["tests/book/test_build.py::test_toc"], True), (["."], True),
    (["tests/lab01"], False), (["tests/lab02/test_limits.py", "tests/test_environment.py"], False),
])
def test_the_book_is_built_ahead_only_for_runs_that_include_book_tests(args, book):
    config = SimpleNamespace(args=args, invocation_params=SimpleNamespace(dir=REPO_ROOT))
    assert _runs_book_tests(config) is book
