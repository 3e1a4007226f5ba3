"""The shared option types (commands/_options.py) and the CLI's one-line usage errors."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from lab01_cluster_sim.cli import main
from lab01_cluster_sim.commands import _options as o


@pytest.mark.parametrize("text", ["nan", "inf", "-inf", "0", "-1", "x", "11"])
def test_positive_float_rejects(text):
    with pytest.raises(argparse.ArgumentTypeError, match="expected a"):
        o.positive_float(max_value=10)(text)


def test_option_types_accept_their_range():
    assert o.positive_float()("1e-3") == 0.001
    assert o.nonnegative_float(max_value=5)("0") == 0.0
    assert o.positive_int(max_value=100)("100") == 100
    assert o.seed("0") == 0 and o.seed(str(o.MAX_SEED)) == 2**32 - 1
    assert o.fraction("1") == 1.0 and o.fraction("0.25") == 0.25


@pytest.mark.parametrize("factory,text", [(o.positive_int(max_value=100), "101"), (o.positive_int(), "0"),
                                          (o.nonnegative_int(), "-1"), (o.seed, "-1"),
                                          (o.seed, "99999999999999999999"), (o.fraction, "1.5"),
                                          (o.fraction, "nan"), (o.nonnegative_float(), "-0.1"),
                                          (o.positive_int(), "1.5")])
def test_option_types_reject(factory, text):
    with pytest.raises(argparse.ArgumentTypeError):
        factory(text)


def test_usage_error_is_one_line_exit_1(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["simulate", "--seed", "-1"])
    assert exc.value.code == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert err.startswith("error: --seed: expected a seed")


def test_closed_stdout_is_quiet():
    # `compare | head -1`: the reader leaves after one line; no traceback, status 0.
    cmd = (f"{sys.executable} -m lab01_cluster_sim compare --quiet --seeds 42-44 --format csv | head -c 1 "
           "; exit ${PIPESTATUS[0]}")
    proc = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 141), proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr == ""


@pytest.mark.parametrize("argv", ["simulate --help", "gang-demo", "simulate --jobs 200 --nodes 5 --quiet"])
def test_closed_stdout_is_quiet_for_other_commands(argv):
    cmd = f"{sys.executable} -m lab01_cluster_sim {argv} | head -c 1; exit ${{PIPESTATUS[0]}}"
    proc = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 141), proc.stderr
    assert proc.stderr == ""
