"""The upstream oracle processes: kube-scheduler's, Kueue's and Karpenter's own Go code.

``tools/upstream/bin/kube-oracle`` (kinds ``scheduler``, ``karpenter``) and
``tools/upstream/bin/kueue-oracle`` (kinds ``kueue``, ``kueue-cycle``), built by ``tools/upstream/build.sh``
(``make upstream-oracle``), read cases as JSON lines on stdin and answer one JSON line per
case (``tools/upstream/serve/serve.go``; two binaries because k8s.io/kubernetes and Kueue
register clashing feature gates). One process per binary serves a whole test session: a case
costs a pipe round trip, not a process start.

Versions: k8s.io/kubernetes v1.35.4, sigs.k8s.io/kueue v0.17.0, sigs.k8s.io/karpenter
v1.13.0 (``tools/upstream/go.mod``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
BIN = REPO_ROOT / "tools" / "upstream" / "bin"
BINARIES = {"scheduler": BIN / "kube-oracle", "karpenter": BIN / "kube-oracle", "kueue": BIN / "kueue-oracle",
            "kueue-cycle": BIN / "kueue-oracle"}
"""The binary answering each kind of case."""
MAX_LINE = 16 << 20
"""Longest answer line read back, bytes (a case's answer is a few kB)."""


def why_unavailable() -> str | None:
    """Why the oracle cannot run here (a skip reason), or None when it can."""
    if all(b.is_file() for b in BINARIES.values()):
        return None
    if shutil.which("go") is None:
        return "Go is not installed: the upstream oracle (tools/upstream) cannot be built here"
    return "the upstream oracle is not built: run `make upstream-oracle` (tools/upstream/build.sh)"


class OracleError(RuntimeError):
    """The oracle process failed (died, or answered something that is not a case answer)."""


class Oracle:
    """The oracle processes, started on first use of each.

    Raises:
        OracleError: from :meth:`ask` when a process dies or answers out of protocol.
    """

    def __init__(self) -> None:
        self._procs: dict[Path, _Process] = {}

    def ask(self, case: dict) -> dict:
        """The upstream answer to one case (a dict with ``kind``); a case the Go side finds
        malformed comes back as ``{"error": ...}``."""
        binary = BINARIES[case["kind"]]
        if binary not in self._procs:
            self._procs[binary] = _Process(binary)
        return self._procs[binary].ask(case)

    def close(self) -> None:
        """End every process."""
        for proc in self._procs.values():
            proc.close()
        self._procs.clear()


class _Process:
    """One running oracle binary."""

    def __init__(self, binary: Path) -> None:
        self.binary = binary
        self.proc = subprocess.Popen([str(binary)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, bufsize=1)

    def ask(self, case: dict) -> dict:
        try:
            self.proc.stdin.write(json.dumps(case, separators=(",", ":")) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline(MAX_LINE)
        except (BrokenPipeError, OSError) as exc:
            raise OracleError(f"{self.binary.name}: pipe failed: {exc}; stderr: {self._stderr()}") from None
        if not line:
            raise OracleError(f"{self.binary.name} exited (status {self.proc.poll()}): {self._stderr()}")
        return json.loads(line)

    def _stderr(self) -> str:
        if self.proc.poll() is None:
            return "(still running)"
        return (self.proc.stderr.read() or "").strip()[-2000:]

    def close(self) -> None:
        """End the process (closing stdin ends its loop)."""
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for stream in (self.proc.stdout, self.proc.stderr):
            stream.close()
