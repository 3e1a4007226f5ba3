"""The benchmark scripts measure the checkout they live in, not an installed copy."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]

#: Scripts with a command line (run_all.py runs every benchmark, so it is not started here).
SCRIPTS = sorted(p.name for p in (REPO_ROOT / "benchmarks").glob("*.py")
                 if "argparse" in p.read_text() and p.name != "run_all.py")


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_benchmark_imports_this_checkout_before_an_installed_copy(tmp_path, script):
    # an "installed" lab package that refuses to be imported, first on the path
    for package in ("lab01_cluster_sim", "lab02_device_plugin"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("raise ImportError('the installed copy was imported')\n")
    proc = subprocess.run([sys.executable, str(REPO_ROOT / "benchmarks" / script), "--help"],
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(tmp_path)},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "installed copy" not in proc.stderr
