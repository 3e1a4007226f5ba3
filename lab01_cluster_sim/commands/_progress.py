"""Progress of long commands: a tqdm bar on stderr, only when stderr is a terminal.

Commands that run several simulations (``topology``, ``defrag``, ``disciplines``) wrap their
loop in :func:`steps`; piped or captured output (tests, CI, ``> file``) gets no bar at all, so
nothing but the results reaches stdout and no control characters reach a log.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")


def steps(items: Iterable[T], desc: str, total: int | None = None, unit: str = "run") -> Iterator[T]:
    """Iterate ``items``, showing a progress bar on a terminal (``desc``: what is running)."""
    if not sys.stderr.isatty():
        yield from items
        return
    from tqdm import tqdm

    with tqdm(items, desc=desc, total=total, unit=unit, file=sys.stderr, leave=False, mininterval=0.3) as bar:
        yield from bar


def wrote(path: object, what: str = "") -> None:
    """Say on stderr where a command wrote a file (figures, CSVs), so stdout stays the results
    alone (a CSV or JSON piped elsewhere is not broken by a status line)."""
    print(f"wrote {path}" + (f" ({what})" if what else ""), file=sys.stderr)
