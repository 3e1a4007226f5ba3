"""Shared test fixtures.

Real data lives outside the repository, in ``../shared/data`` beside the clone (or in
the folder named by the ``COURSE_SHARED_DATA`` environment variable). Tests that need it
use the ``shared_data`` fixture, which skips with a clear message when it is absent.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from build_once import start_book_build
from grading.toolbox import load_tool

pytest_plugins = ["grading.plugin"]  # points marker, pytest --grade (tests/grading/plugin.py)

REPO_ROOT = Path(__file__).resolve().parents[1]
_BOOK_BUILD = pytest.StashKey[object]()


@pytest.hookimpl(trylast=True)  # after pytest's own configure has set up the temporary folders
def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist, start the book's one build as the run begins (tests/build_once.py)."""
    config.stash[_BOOK_BUILD] = start_book_build(config)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The book's tests last (a stable sort): under pytest-xdist the workers run every other
    test while the controller builds the book, instead of waiting for it."""
    book = REPO_ROOT / "tests" / "book"
    items.sort(key=lambda item: book in item.path.parents)


def pytest_unconfigure(config: pytest.Config) -> None:
    thread = config.stash.get(_BOOK_BUILD, None)
    if thread is not None:
        thread.join()  # a build no test waited for (all deselected) still ends before pytest


def shared_data_dir() -> Path:
    """The folder holding the real public data (may not exist)."""
    env = os.environ.get("COURSE_SHARED_DATA")
    return Path(env) if env else REPO_ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Path of ``shared/data``; skips the test when the folder is absent."""
    path = shared_data_dir()
    if not path.is_dir():
        pytest.skip(f"real data not found at {path} (set COURSE_SHARED_DATA to its folder)")
    return path


@pytest.fixture(scope="session")
def alibaba_csv(shared_data: Path) -> Path:
    """Folder of the Alibaba GPU trace 2023 CSVs; skips when absent."""
    path = shared_data / "alibaba-gpu-2023" / "csv"
    if not (path / "openb_node_list_gpu_node.csv").is_file():
        pytest.skip(f"Alibaba GPU trace 2023 not found at {path}")
    return path


@pytest.fixture(scope="session")
def nvidia_smi_dir(shared_data: Path) -> Path:
    """Folder of the real nvidia-smi outputs; skips when absent."""
    path = shared_data / "nvidia-smi"
    if not path.is_dir():
        pytest.skip(f"nvidia-smi samples not found at {path}")
    return path


@pytest.fixture(scope="session")
def student_edition(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list]:
    """(folder, solution regions replaced) of the student edition of this checkout, built
    once per session; tests that change files in it work on a copy."""
    out = tmp_path_factory.mktemp("student-edition") / "student"
    regions = load_tool("make_student_edition").build(out, root=REPO_ROOT)
    return out, regions
