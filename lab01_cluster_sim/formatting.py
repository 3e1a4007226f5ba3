"""Number formatting shared by Lab 01's commands, sweeps and tables, so units read the same everywhere.

One rule per kind of number:

- **percentages**: one place of decimals and a ``%`` sign after a space, ``"87.5 %"``
  (:func:`format_percent`); in a table whose header already says ``%`` the cell is the bare
  number, ``"87.5"`` (``unit=False``). Ratios in [0, 1] go through ``fraction=True``.
- **durations** (waits, JCT, makespan): seconds below a minute, minutes below an hour, hours
  above, one place of decimals: ``"42.0 s"``, ``"40.2 min"``, ``"432.9 h"``
  (:func:`format_duration`). A column of durations uses one unit for every row
  (:func:`duration_unit`), chosen from its largest value, so rows compare at a glance.
  Never an exponent (``1.55838e+06``).
- **counts** (pods, jobs, GPUs): integers print as integers with thousands separators,
  ``"1,234"`` (:func:`format_count`); a mean over seeds that is not whole keeps one place of
  decimals, ``"104.5"`` (:func:`format_number`; a column in one style: :func:`format_numbers`).
- **machine-readable output** (CSV, JSON): :func:`clean_number` rounds floats to 12
  significant digits (or to given decimal places) so ``0.1 + 0.2`` is written ``0.3``, not
  ``0.30000000000000004``, while every digit a computation means survives; it turns NaN and
  infinity into ``None`` (``null`` in JSON, an empty CSV cell) and keeps integers as
  integers; :func:`clean_record` does that through nested dicts and lists.
- **time stamps** in messages (``t=1558380 s``): :func:`format_seconds`, plain digits to the
  millisecond (defined in :mod:`lab01_cluster_sim.model`, re-exported here).

Every function is pure and takes plain Python or numpy numbers.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from numbers import Integral, Real

from lab01_cluster_sim.model import format_seconds

__all__ = ["MISSING", "format_percent", "format_duration", "duration_unit", "format_count", "format_number", "format_numbers",
           "clean_number", "clean_record", "csv_cell", "render_table", "format_seconds", "DURATION_UNITS"]

MISSING = "n/a"
"""What a figure that does not exist (None, NaN) prints as, unless the caller says otherwise."""

DURATION_UNITS: tuple[tuple[str, float], ...] = (("s", 1.0), ("min", 60.0), ("h", 3600.0))
"""The duration units, smallest first, with their length in seconds."""

SIGNIFICANT_DIGITS = 12
"""Significant digits :func:`clean_number` keeps by default: a double carries 15 to 17, and
the noise of a few operations (``0.1 + 0.2``) sits in the last two or three."""


def _missing(x: object) -> bool:
    return x is None or (isinstance(x, Real) and not isinstance(x, Integral) and math.isnan(float(x)))


def _zero(text: str) -> str:
    """``"-0.0"`` -> ``"0.0"`` (a tiny negative rounded to zero is zero)."""
    return text[1:] if text.startswith("-") and text.strip("-0.,") == "" else text


def format_percent(value: float | None, *, places: int = 1, fraction: bool = False, unit: bool = True,
                   missing: str = MISSING) -> str:
    """A percentage: ``87.4736`` -> ``"87.5 %"``.

    Args:
        value: the figure in percent (``fraction=False``) or as a ratio in [0, 1]
            (``fraction=True``: ``0.8747`` -> ``"87.5 %"``); None or NaN -> ``missing``.
        places: decimal places (default 1).
        unit: append ``" %"``; False for a table cell under a header that says ``%``.
        missing: the text for a missing figure.
    """
    if _missing(value):
        return missing
    x = 100.0 * float(value) if fraction else float(value)
    text = _zero(f"{x:,.{places}f}")
    return f"{text} %" if unit else text


def duration_unit(seconds: Iterable[float | None]) -> tuple[str, float]:
    """The unit a column of durations prints in: the largest unit that its largest finite
    value reaches at least once (s below 60 s, min below 3600 s, else h).

    Returns:
        ``(name, seconds per unit)``, e.g. ``("min", 60.0)``; ``("s", 1.0)`` when the column
        has no finite value.
    """
    finite = [abs(float(x)) for x in seconds if not _missing(x) and math.isfinite(float(x))]
    top = max(finite, default=0.0)
    chosen = DURATION_UNITS[0]
    for name, length in DURATION_UNITS:
        if top >= length:
            chosen = (name, length)
    return chosen


def format_duration(seconds: float | None, *, unit: str | None = None, places: int = 1, show_unit: bool = True,
                    missing: str = MISSING) -> str:
    """A duration in readable units: ``42`` -> ``"42.0 s"``, ``2412`` -> ``"40.2 min"``,
    ``1558380`` -> ``"432.9 h"``.

    Args:
        seconds: the duration, s; None or NaN -> ``missing``; infinity -> ``"inf"``.
        unit: ``"s"``, ``"min"`` or ``"h"`` to force one (a column's unit from
            :func:`duration_unit`); default: chosen from this value alone.
        places: decimal places (default 1).
        show_unit: append the unit (False for a table cell whose header names it).

    Raises:
        ValueError: an unknown ``unit``.
    """
    if _missing(seconds):
        return missing
    x = float(seconds)
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    units = dict(DURATION_UNITS)
    if unit is None:
        unit, length = duration_unit([x])
    elif unit in units:
        length = units[unit]
    else:
        raise ValueError(f"unit: expected one of {', '.join(units)}, got {unit!r}")
    text = _zero(f"{x / length:,.{places}f}")
    return f"{text} {unit}" if show_unit else text


def format_count(n: int | float | None, *, missing: str = MISSING) -> str:
    """A count as an integer with thousands separators: ``1234`` or ``1234.0`` -> ``"1,234"``.

    Raises:
        ValueError: a value that is not a whole number (a count of 2.5 pods is a bug;
            use :func:`format_number` for a mean of counts).
    """
    if _missing(n):
        return missing
    if isinstance(n, Integral):
        return f"{int(n):,}"
    x = float(n)
    if not (math.isfinite(x) and x.is_integer()):
        raise ValueError(f"format_count: expected a whole number, got {n!r}")
    return f"{int(x):,}"


def format_number(x: float | None, *, places: int = 1, missing: str = MISSING) -> str:
    """A figure that is usually whole (a count, or a mean of counts over seeds): whole values
    print as integers (``117.0`` -> ``"117"``), others with ``places`` decimals
    (``104.25`` -> ``"104.2"``, round half to even), thousands separated; NaN -> ``missing``,
    infinity -> ``"inf"``."""
    if _missing(x):
        return missing
    if isinstance(x, Integral):
        return f"{int(x):,}"
    v = float(x)
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v.is_integer():
        return f"{int(v):,}"
    return _zero(f"{v:,.{places}f}")


def format_numbers(values: Sequence[float | None], *, places: int = 1, missing: str = MISSING) -> list[str]:
    """A table column of :func:`format_number` figures in one style: all integers when every
    value is whole (``[117.0, 99.0]`` -> ``["117", "99"]``), else all with ``places``
    decimals, so the decimal points line up (``[16.0, 15.9]`` -> ``["16.0", "15.9"]``)."""
    present = [float(v) for v in values if not _missing(v) and math.isfinite(float(v))]
    if all(v.is_integer() for v in present):
        return [format_number(v, places=places, missing=missing) for v in values]
    return [missing if _missing(v) else (format_number(v, missing=missing) if math.isinf(float(v))
                                         else _zero(f"{float(v):,.{places}f}")) for v in values]


def clean_number(x: object, places: int | None = None) -> object:
    """A number as CSV and JSON should carry it: floats rounded to :data:`SIGNIFICANT_DIGITS`
    significant digits, or to ``places`` decimals when given (``0.30000000000000004`` ->
    ``0.3``; ``87.47361111`` with ``places=4`` -> ``87.4736``; ``-0.0`` -> ``0.0``), NaN and
    infinities -> None, integers (numpy ones too) -> ``int``, bools unchanged; anything else
    is returned as is."""
    if isinstance(x, bool) or x is None:
        return x
    if isinstance(x, Integral):
        return int(x)
    if isinstance(x, Real):
        v = float(x)
        if not math.isfinite(v):
            return None
        v = float(f"{v:.{SIGNIFICANT_DIGITS}g}") if places is None else round(v, places)
        return 0.0 if v == 0 else v
    return x


def clean_record(obj: object, places: int | None = None) -> object:
    """:func:`clean_number` applied through nested dicts, lists and tuples (tuples become
    lists, as JSON has them); keys are kept."""
    if isinstance(obj, Mapping):
        return {k: clean_record(v, places) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean_record(v, places) for v in obj]
    return clean_number(obj, places)


def csv_cell(x: object, places: int | None = None) -> str:
    """One CSV cell: a missing figure is empty, a number is :func:`clean_number`'s shortest
    repr (``0.3``, ``117``, ``87.4736``), anything else ``str``."""
    v = clean_number(x, places)
    return "" if v is None else str(v)


def render_table(head: Sequence[str], rows: Sequence[Sequence[str]], *, left: int = 1,
                 align: Sequence[str] | None = None) -> str:
    """An aligned text table: the header, a rule of dashes, then the rows; cells are
    strings already formatted. The first ``left`` columns are left-aligned (names), the
    others right-aligned (numbers), unless ``align`` gives each column ``"l"`` or ``"r"``.
    Columns are separated by two spaces; lines carry no trailing spaces.

    Raises:
        ValueError: a row (or ``align``) with a different number of cells than the header.
    """
    for row in rows:
        if len(row) != len(head):
            raise ValueError(f"render_table: a row has {len(row)} cells, the header {len(head)}")
    if align is None:
        align = ["l" if i < left else "r" for i in range(len(head))]
    elif len(align) != len(head):
        raise ValueError(f"render_table: align has {len(align)} entries, the header {len(head)}")
    widths = [max(len(str(r[i])) for r in (head, *rows)) for i in range(len(head))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(str(c).ljust(w) if a == "l" else str(c).rjust(w)
                         for c, w, a in zip(cells, widths, align)).rstrip()

    return "\n".join([line(head), "  ".join("-" * w for w in widths), *(line(r) for r in rows)])
