"""``benchmarks/reproduce_fgd_table.py --from-csv``: a CSV it cannot use is one line naming the
file (and the line and column at fault), never a traceback (fresh tester, Dec 2)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import REPO_ROOT

SCRIPT = REPO_ROOT / "benchmarks" / "reproduce_fgd_table.py"
HEADER = "runner,policy,workload,seed,alloc_100,alloc_end,frag_end,failed,status,error\n"
POLICIES = ("random", "dot-prod", "gpu-clustering", "gpu-packing", "best-fit", "fgd")


def _table(tmp_path, text: str | None, *extra: str) -> subprocess.CompletedProcess:
    csv_path = tmp_path / "grid.csv"
    if text is not None:
        csv_path.write_text(text)
    return subprocess.run([sys.executable, str(SCRIPT), "--from-csv", str(csv_path), *extra], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("text,expected", [
    (None, "grid.csv: cannot read: No such file or directory"),
    ("runner,policy,workload,seed,wait_mean_s\ndisciplines,fifo,300,0,1.0\n",
     "grid.csv: not a 'sweep --runner replay' CSV: no column alloc_100, alloc_end, frag_end, failed"),
    (HEADER + "replay,fgd,DIR:default,42,abc,95.0,4.0,10,ok,\n",
     "grid.csv:2: column alloc_100: expected a number, got 'abc'"),
    (HEADER + "replay,fgd,DIR:default,42,95.0,95.0,4.0,1.5,ok,\n",
     "grid.csv:2: column failed: expected an integer, got '1.5'"),
    (HEADER + "replay,fgd,DIR:default,42,,,,,error,boom\n",
     "grid.csv:2: run fgd DIR:default seed 42 failed: boom"),
])
def test_unusable_csv_is_one_line(tmp_path, text, expected):
    proc = _table(tmp_path, text)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip() == f"{tmp_path / expected}"


def test_complete_csv_gives_the_table(tmp_path):
    # six policies x seeds 42..51 on the default list: alloc@130 of seed s is 90 + (s - 42) / 10,
    # so every policy's mean is 90 + 0.45 = 90.45 and its sample sd 0.30 (sd of 0..0.9 step 0.1)
    rows = [f"replay,{p},DIR:default,{s},90.0,{90 + (s - 42) / 10:.1f},5.0,100,ok,\n"
            for p in POLICIES for s in range(42, 52)]
    proc = _table(tmp_path, HEADER + "".join(rows), "--out", "-")
    assert proc.returncode == 0, proc.stderr
    fgd = next(line for line in proc.stdout.splitlines() if line.startswith("| fgd | 90.45 |"))
    assert fgd.split(" | ")[2] == "0.30"
