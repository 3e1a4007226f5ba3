"""Printing narration lines from any thread when stdout may be a pipe that closes.

A command creates one :class:`LinePrinter` and gives it to everything that narrates (the
mock kubelet's gRPC and stream threads, the plugin's watcher, the FIFO reader). Each line is
written together with its newline in one call, under the printer's lock, so lines from two
threads never interleave (``print(line)`` writes the text and the newline separately: two
threads printing at once gave ``Admit pod-2: main (nvidia.com/gpu: 1)ListAndWatch ...`` and
an empty line).

``python -m lab02_device_plugin demo | head -1``: after the first line ``head`` exits and
every later write raises BrokenPipeError. The printer then points stdout at /dev/null (so no
later line, from any thread, fails again) and re-raises only on the main thread, where it
unwinds the command's cleanup and the CLI exits quietly (status 0). A line printed from a
gRPC or watcher thread is dropped instead: raising there would fail an RPC or kill a
watcher, not stop the command.
"""

from __future__ import annotations

import os
import sys
import threading


class LinePrinter:
    """Write whole lines to stdout from any thread: ``say = LinePrinter(); say("text")``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def __call__(self, line: str) -> None:
        """Write ``line`` and a newline in one call, then flush (see the module docstring)."""
        with self._lock:
            try:
                sys.stdout.write(line + "\n")
                sys.stdout.flush()
            except BrokenPipeError:
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                if threading.current_thread() is threading.main_thread():
                    raise
