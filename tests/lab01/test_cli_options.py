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


def test_whole_numbers_written_as_floats_are_whole_and_refusals_give_the_range():
    # issue 11 §2 (polish): 1e3 and 8.0 are whole numbers; a refusal echoes the text typed
    # and says the range (it said "expected a whole number, got '1e9'", no range)
    assert o.positive_int(max_value=100_000)("1e3") == 1000 and o.positive_int()("8.0") == 8
    assert o.seed("4e0") == 4
    for text in ("1e9", "2.5", "nan", "x"):
        with pytest.raises(argparse.ArgumentTypeError) as info:
            o.positive_int(max_value=100_000)(text)
        assert str(info.value) == f"expected a whole number from 1 to 100,000, got {text!r}"
    with pytest.raises(argparse.ArgumentTypeError) as info:
        o.seed("1.5")
    assert str(info.value) == "expected a seed, a whole number from 0 to 4,294,967,295, got '1.5'"


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


def _run(argv):
    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code


def test_misspelt_option_gets_a_did_you_mean(capsys):
    assert _run(["compare", "--polices", "fgd"]) == 1
    err = capsys.readouterr().err
    assert err == ("error: unrecognized arguments: --polices fgd; did you mean --policies? "
                   "(see python -m lab01_cluster_sim compare --help)\n")
    assert _run(["sweep", "--wokers=2"]) == 1
    assert "did you mean --workers?" in capsys.readouterr().err
    assert _run(["compare", "--zzzz"]) == 1                 # nothing close: no guess
    err = capsys.readouterr().err
    assert "unrecognized arguments: --zzzz (see" in err and "did you mean" not in err


def test_help_lists_its_commands(capsys):
    assert _run(["help", "--help"]) == 0
    out = capsys.readouterr().out
    assert "one of: autoscale, compare, defrag, disciplines, fetch-trace," in out
    assert _run(["help", "nope"]) == 1
    assert "invalid choice: 'nope'" in capsys.readouterr().err


def _command_names():
    from lab01_cluster_sim.cli import build_parser

    return sorted(build_parser()[1])


@pytest.mark.parametrize("command", _command_names())
def test_help_fits_80_columns(command, capsys, monkeypatch):
    # the prose is re-wrapped to the terminal (80 here); usage lines and the pinned URL are
    # the only lines allowed wider; no literal '%%' (argparse's escape) reaches the reader
    monkeypatch.setenv("COLUMNS", "80")
    assert _run([command, "--help"]) == 0
    out = capsys.readouterr().out
    wide = [line for line in out.splitlines() if len(line) > 80 and not line.lstrip().startswith(("[", "https://"))]
    assert wide == []
    assert "%%" not in out


def test_description_formatter_fills_paragraphs_and_hanging_items():
    from course_kit.cli import DescriptionFormatter

    text = ("One two three four five six seven eight nine ten eleven twelve.\n\n"
            "1. alpha beta gamma delta epsilon zeta eta theta iota kappa lambda\n"
            "   mu nu\n"
            "2. short\n\n"
            "  term  a b c d e f g h i j k l m n o p q r s t u v w x y z aa bb cc\n"
            "        dd\n\n"
            "examples:\n"
            "  python -m lab01_cluster_sim compare --trace DIR --seeds 42-51 --policies fgd,best-fit\n")
    out = DescriptionFormatter("prog")._fill_text(text, 40, "")
    assert out.split("\n\n") == [
        "One two three four five six seven eight\nnine ten eleven twelve.",
        "1. alpha beta gamma delta epsilon zeta\n   eta theta iota kappa lambda mu nu\n2. short",
        "  term  a b c d e f g h i j k l m n o p\n        q r s t u v w x y z aa bb cc dd",
        "examples:\n  python -m lab01_cluster_sim compare --trace DIR --seeds 42-51 --policies fgd,best-fit",
    ]
