"""argparse value types shared by the subcommands: bounded whole numbers and durations.

Each returns a function for ``type=`` that raises :class:`argparse.ArgumentTypeError` (argparse
prints it as ``argument --x: ...`` with exit status 2) for anything outside its range, so an
absurd value (``nan``, ``inf``, ``-1``, ``99999999999999999999``) never reaches a loop or a
timer.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable


def whole_number(minimum: int, maximum: int) -> Callable[[str], int]:
    """A type for an integer in ``minimum..maximum`` (both included)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(
                f"expected a whole number from {minimum} to {maximum}, got {text}")
        return value

    return parse


def seconds(maximum: float) -> Callable[[str], float]:
    """A type for a duration in seconds: a finite number above 0 and at most ``maximum``."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
        if not math.isfinite(value) or not 0 < value <= maximum:
            raise argparse.ArgumentTypeError(
                f"expected seconds above 0 and at most {maximum:g}, got {text}")
        return value

    return parse
