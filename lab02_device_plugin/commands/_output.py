"""Printing narration lines from any thread when stdout may be a pipe that closes.

``python -m lab02_device_plugin demo | head -1``: after the first line ``head`` exits and
every later write raises BrokenPipeError. :func:`print_line` then points stdout at /dev/null
(so no later line, from any thread, fails again) and re-raises only on the main thread,
where it unwinds the command's cleanup and the CLI exits quietly (status 0). A line printed
from a gRPC or watcher thread is dropped instead: raising there would fail an RPC or kill a
watcher, not stop the command.
"""

from __future__ import annotations

import os
import sys
import threading


def print_line(line: str) -> None:
    """Print ``line`` and flush; see the module docstring for a closed pipe."""
    try:
        print(line, flush=True)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        if threading.current_thread() is threading.main_thread():
            raise
