"""Progress of long runs on stderr, on a terminal and off it.

On a terminal: a tqdm bar that redraws itself and disappears when done. Off a terminal (output
redirected to a file, a CI log): nothing for a run shorter than :data:`LINE_INTERVAL_S`
seconds; a longer one prints a plain line every :data:`LINE_INTERVAL_S` seconds at most and
one at the end, e.g. ``replays: 12/60 runs (20 %), 00:31 elapsed, ~02:04 left``, with no
carriage returns or control characters, so a log shows that a long run is alive and how far
it is. Library functions show progress only when asked (``progress=True``); the commands ask
unless ``--quiet``.

Built on tqdm (https://tqdm.github.io/): the line form is a tqdm whose ``display`` writes a
whole line instead of redrawing one, so both forms count, rate and estimate alike.
"""

from __future__ import annotations

import sys
from typing import IO

from tqdm import tqdm

LINE_INTERVAL_S = 5.0
"""Least seconds between two progress lines off a terminal."""

LINE_FORMAT = "{desc}: {n_fmt}/{total_fmt} {unit}s ({percentage:.0f} %), {elapsed} elapsed, ~{remaining} left"
LINE_FORMAT_NO_TOTAL = "{desc}: {n_fmt} {unit}s, {elapsed} elapsed"


class _LineBar(tqdm):
    """A tqdm that prints each refresh as one line (see the module docstring), and the final
    count once when it closes."""

    _last_line = ""

    def display(self, msg: str | None = None, pos: int | None = None) -> bool:  # noqa: ARG002 (tqdm's signature)
        if msg == "":  # tqdm clearing its line on close: nothing to clear here
            return False
        text = (self.__str__() if msg is None else msg).rstrip()
        if text and text != self._last_line:
            self.fp.write(text + "\n")
            self.fp.flush()
            self._last_line = text
        return True

    def close(self) -> None:
        if not self.disable and self._last_line:  # a run that printed nothing stays silent
            self._ema_dt = lambda: None  # the overall rate in the last line, as tqdm's own close does
            self.display()
        super().close()


def progress_bar(total: int | None, desc: str, unit: str = "run", *, quiet: bool = False,
                 file: IO[str] | None = None, interval: float = LINE_INTERVAL_S, **kwargs) -> tqdm:
    """A progress counter for ``total`` steps of ``unit`` (``None``: unknown total).

    Use as a context manager and call ``update(n)``. ``quiet`` gives a counter that prints
    nothing. ``file`` defaults to ``sys.stderr`` (looked up at call time); whether it is a
    terminal chooses between the redrawn bar and plain lines every ``interval`` seconds (the
    first after ``interval`` seconds: a short run prints nothing).
    Extra keyword arguments go to tqdm (e.g. ``unit_scale=True`` for bytes).
    """
    out = sys.stderr if file is None else file
    if quiet:
        return tqdm(total=total, disable=True)
    if out.isatty():
        return tqdm(total=total, desc=desc, unit=unit, file=out, leave=False, mininterval=0.3, **kwargs)
    fmt = LINE_FORMAT if total else LINE_FORMAT_NO_TOTAL
    return _LineBar(total=total, desc=desc, unit=unit, file=out, leave=False, mininterval=interval,
                    maxinterval=max(interval, 10.0), delay=interval, bar_format=fmt, ascii=True, dynamic_ncols=False,
                    **kwargs)


__all__ = ["LINE_INTERVAL_S", "progress_bar"]
