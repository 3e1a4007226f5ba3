"""Sample device plugin configs and GPU inventories shipped with the package.

``example_path("time-slicing.yaml")`` gives the path of one file; every file here is read
by the tests, so the samples stay valid.
"""

from __future__ import annotations

from pathlib import Path

EXAMPLES_DIR = Path(__file__).resolve().parent


def example_path(name: str) -> Path:
    """Path of a shipped example file (FileNotFoundError naming the ones that exist)."""
    path = EXAMPLES_DIR / name
    if not path.is_file():
        have = ", ".join(sorted(p.name for p in EXAMPLES_DIR.glob("*.yaml")))
        raise FileNotFoundError(f"no example {name!r}; have {have}")
    return path
