"""A subprocess of ``python -m lab02_device_plugin`` whose output is read with timeouts."""

from __future__ import annotations

import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def socket_dir():
    """A short temporary directory for unix sockets (their paths are limited to 107 bytes,
    pytest's tmp_path can be longer); removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix="sp-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def serve(plugin_dir: Path, *extra: str) -> Process:
    """``python -m lab02_device_plugin serve`` on ``plugin_dir`` (kubelet.sock in it)."""
    return Process(["serve", "--socket-dir", str(plugin_dir),
                    "--kubelet-socket", str(plugin_dir / "kubelet.sock"), *extra])


class Process:
    """A subprocess whose stdout lines are read on a thread, so every wait has a timeout."""

    def __init__(self, args: list[str]) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "lab02_device_plugin", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     cwd=REPO_ROOT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def expect(self, text: str, timeout: float = 20.0) -> str:
        """Return the first new line containing ``text``; fail after ``timeout`` seconds."""
        while True:
            try:
                line = self._queue.get(timeout=timeout)
            except queue.Empty:
                pytest.fail(f"no line with {text!r} within {timeout} s; got: {self.lines}")
            if line is None:
                pytest.fail(f"process ended before printing {text!r}; got: {self.lines}")
            self.lines.append(line)
            if text in line:
                return line

    def terminate(self, timeout: float = 20.0) -> int:
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)
            pytest.fail("process did not exit after SIGTERM")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=5)
