"""argparse value types shared by the Lab 01 subcommands.

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
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

__all__ = ["positive_float", "nonnegative_float", "positive_int", "nonnegative_int", "seed", "fraction",
           "MAX_SEED"]

#: Largest seed accepted: numpy's SeedSequence takes any non-negative int, but a bound keeps
#: typos (and 20-digit numbers) out; 2**32 - 1 is what most tools accept.
MAX_SEED = 2**32 - 1


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    return value


def _integer(text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None


def _fmt(x: float) -> str:
    if isinstance(x, int) or float(x).is_integer():
        return f"{int(x):,}"
    return f"{x:,}"


def positive_float(max_value: float | None = None) -> Callable[[str], float]:
    """A type for a finite number > 0 (and <= ``max_value`` when given)."""

    def parse(text: str) -> float:
        value = _number(text)
        if not math.isfinite(value) or not value > 0 or (max_value is not None and value > max_value):
            bound = "" if max_value is None else f" and <= {_fmt(max_value)}"
            raise argparse.ArgumentTypeError(f"expected a finite number > 0{bound}, got {text!r}")
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
    def parse(text: str) -> int:
        value = _integer(text)
        if value < minimum or (max_value is not None and value > max_value):
            bound = f">= {minimum}" if max_value is None else f"from {minimum} to {_fmt(max_value)}"
            raise argparse.ArgumentTypeError(f"expected a whole number {bound}, got {text!r}")
        return value

    return parse


def seed(text: str) -> int:
    """A type for a random seed: a whole number from 0 to :data:`MAX_SEED`."""
    value = _integer(text)
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
