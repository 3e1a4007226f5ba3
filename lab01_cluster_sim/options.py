"""argparse value types shared by the Lab 01 subcommands, and the input bounds they share.

Each function here is a ``type=`` for :meth:`argparse.ArgumentParser.add_argument`: it
turns the option's text into a value or raises :class:`argparse.ArgumentTypeError` with a
message saying what the option expects (``expected a number > 0, got 'nan'``). The
command line (:mod:`lab01_cluster_sim.cli`) prints that as one line,
``error: --option: expected ...``, with exit status 1. So ``nan``, ``inf``, ``-1`` or
``99999999999999999999`` never reach a loop, a timer or an array size.

The factories taking bounds (``positive_int(max_value=...)``) return the type function;
the plain ones (``seed``, ``fraction``) are type functions themselves::

    parser.add_argument("--jobs", type=positive_int(max_value=1_000_000))
    parser.add_argument("--seed", type=seed)
    parser.add_argument("--load", type=positive_float(max_value=10))

:data:`MAX_SEED` and :func:`check_output_path` are also used below the commands (a sweep's
seeds, a figure's file), so this module sits on a low floor of the lab (``.importlinter``).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

__all__ = ["positive_float", "nonnegative_float", "positive_int", "nonnegative_int", "seed", "fraction",
           "MAX_SEED", "check_output_path"]

#: Largest seed accepted: numpy's SeedSequence takes any non-negative int, but a bound keeps
#: typos (and 20-digit numbers) out; 2**32 - 1 is what most tools accept.
MAX_SEED = 2**32 - 1


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    return value


def _integer(text: str, expected: str = "a whole number") -> int:
    """``text`` as an int: digits, or a number written with an exponent or a point whose
    value is whole (``1e3`` and ``8.0`` are 1000 and 8). Raises ArgumentTypeError saying
    what was ``expected`` ("a whole number from 1 to 10,000") for anything else (``2.5``,
    ``nan``, ``x``)."""
    try:
        return int(text.strip())
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if math.isfinite(value) and value.is_integer():
        return int(value)
    raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None


def _fmt(x: float) -> str:
    if isinstance(x, int) or float(x).is_integer():
        return f"{int(x):,}"
    return f"{x:,}"


def positive_float(max_value: float | None = None, min_value: float | None = None,
                   why: str = "") -> Callable[[str], float]:
    """A type for a finite number > 0 (and <= ``max_value``, >= ``min_value`` when given);
    ``why`` (e.g. "a lower load ...") is added to the error after a semicolon."""

    def parse(text: str) -> float:
        value = _number(text)
        if (not math.isfinite(value) or not value > 0 or (max_value is not None and value > max_value)
                or (min_value is not None and value < min_value)):
            if min_value is not None and max_value is not None:
                want = f"a number from {min_value:g} to {_fmt(max_value)}"
            elif min_value is not None:
                want = f"a finite number >= {min_value:g}"
            else:
                want = "a finite number > 0" + ("" if max_value is None else f" and <= {_fmt(max_value)}")
            raise argparse.ArgumentTypeError(f"expected {want}, got {text!r}" + (f"; {why}" if why else ""))
        return value

    return parse


def nonnegative_float(max_value: float | None = None) -> Callable[[str], float]:
    """A type for a finite number >= 0 (and <= ``max_value`` when given)."""

    def parse(text: str) -> float:
        value = _number(text)
        if not math.isfinite(value) or not value >= 0 or (max_value is not None and value > max_value):
            bound = "" if max_value is None else f" and <= {_fmt(max_value)}"
            raise argparse.ArgumentTypeError(f"expected a finite number >= 0{bound}, got {text!r}")
        return value

    return parse


def positive_int(max_value: int | None = None) -> Callable[[str], int]:
    """A type for a whole number >= 1 (and <= ``max_value`` when given)."""
    return _int_range(1, max_value)


def nonnegative_int(max_value: int | None = None) -> Callable[[str], int]:
    """A type for a whole number >= 0 (and <= ``max_value`` when given)."""
    return _int_range(0, max_value)


def _int_range(minimum: int, max_value: int | None) -> Callable[[str], int]:
    bound = f">= {minimum}" if max_value is None else f"from {minimum} to {_fmt(max_value)}"

    def parse(text: str) -> int:
        value = _integer(text, f"a whole number {bound}")
        if value < minimum or (max_value is not None and value > max_value):
            raise argparse.ArgumentTypeError(f"expected a whole number {bound}, got {text!r}")
        return value

    return parse


def seed(text: str) -> int:
    """A type for a random seed: a whole number from 0 to :data:`MAX_SEED`."""
    value = _integer(text, f"a seed, a whole number from 0 to {MAX_SEED:,}")
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"expected a seed, a whole number from 0 to {MAX_SEED:,}, got {text!r}")
    return value


def fraction(text: str) -> float:
    """A type for a share in [0, 1] (0.25 means a quarter)."""
    value = _number(text)
    if not 0.0 <= value <= 1.0:  # (nan fails too)
        raise argparse.ArgumentTypeError(f"expected a share from 0 to 1, got {text!r}")
    return value


def positive_or_inf(text: str) -> float:
    """argparse type: a number > 0, or ``inf`` meaning "never" (e.g. a checkpoint interval).

    Raises:
        argparse.ArgumentTypeError: not a number, NaN, zero or negative.
    """
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number > 0 or inf, got {text!r}") from None
    if not value > 0:  # also rejects NaN
        raise argparse.ArgumentTypeError(f"expected a number > 0 or inf, got {text!r}")
    return value


def check_output_path(path: str, option: str) -> None:
    """Fail before any work when ``path`` (the file an ``option`` such as ``--plot`` or
    ``--output`` names) cannot be written: its folder is missing, a path component is a
    file (``/etc/passwd/x.png``), the path is a folder, or it is not writable.

    Raises:
        lab01_cluster_sim.errors.InputError: ``<option> <path>: <what is wrong>``.
    """
    import os
    from pathlib import Path

    from lab01_cluster_sim.errors import InputError

    if not path:
        raise InputError(f"{option}: expected a file name, got an empty one")
    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        blocker = next((a for a in (parent, *parent.parents) if a.exists() or a.is_symlink()), None)
        if blocker is not None and not blocker.is_dir():
            raise InputError(f"{option} {path}: {blocker} is a file, not a folder")
        raise InputError(f"{option} {path}: folder {parent} does not exist")
    if p.is_dir():
        raise InputError(f"{option} {path}: is a folder; expected a file name")
    if not os.access(parent, os.W_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise InputError(f"{option} {path}: not writable")
