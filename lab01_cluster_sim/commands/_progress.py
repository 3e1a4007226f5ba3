"""Progress of long commands on stderr, and where they wrote their files.

Commands that run several simulations (``topology``, ``defrag``, ``disciplines``) wrap their
loop in :func:`steps`: a bar on a terminal; piped or captured output (CI, ``> file``) gets a
plain line every few seconds of a long loop and nothing for a short one
(:mod:`lab01_cluster_sim.progress`); stdout carries the results alone either way.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")


def steps(items: Iterable[T], desc: str, total: int | None = None, unit: str = "run") -> Iterator[T]:
    """Iterate ``items``, showing progress on stderr (``desc``: what is running;
    :func:`lab01_cluster_sim.progress.progress_bar`: a bar on a terminal, else a line every
    few seconds of a long loop)."""
    from lab01_cluster_sim.progress import progress_bar

    if total is None and hasattr(items, "__len__"):
        total = len(items)  # type: ignore[arg-type]
    with progress_bar(total, desc, unit=unit) as bar:
        for item in items:
            yield item
            bar.update(1)


def wrote(path: object, what: str = "") -> None:
    """Say on stderr where a command wrote a file (figures, CSVs), so stdout stays the results
    alone (a CSV or JSON piped elsewhere is not broken by a status line)."""
    print(f"wrote {path}" + (f" ({what})" if what else ""), file=sys.stderr)
