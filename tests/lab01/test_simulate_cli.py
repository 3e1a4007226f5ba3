"""The gang-demo and simulate subcommands, called through the CLI's main()."""

import json

import pytest

from lab01_cluster_sim.cli import main


def test_gang_demo_prints_deadlock_and_gang_schedule(capsys):
    assert main(["gang-demo"]) == 0
    out = capsys.readouterr().out
    assert "deadlock at t=1s" in out
    assert "train-a: 6/8 workers bound, holds 6 GPU(s)" in out
    assert "train-b: 6/8 workers bound, holds 6 GPU(s)" in out
    # gang: 1 -> 101 and 101 -> 201 (100 s each, one after the other)
    assert "train-a    completed start t=1 s, end t=101 s" in out
    assert "train-b    completed start t=101 s, end t=201 s" in out


def test_gang_demo_bad_shape_is_an_input_error(capsys):
    assert main(["gang-demo", "--gpus-per-worker", "4"]) == 1
    assert "--gpus-per-worker 4" in capsys.readouterr().err


def test_simulate_json_accounts_for_every_job(capsys):
    assert main(["simulate", "--jobs", "200", "--nodes", "10", "--seed", "3", "--format", "json", "--quiet"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["jobs"] == 200 and sum(d["states"].values()) == 200
    assert d["policy"] == "best-fit" and d["mode"] == "gang" and d["seed"] == 3
    assert 0.0 <= d["mean_allocation_ratio"] <= 1.0


def test_simulate_is_deterministic_and_csv_has_one_row(capsys):
    args = ["simulate", "--jobs", "150", "--nodes", "8", "--policy", "random", "--seed", "5", "--format", "csv",
            "--quiet"]
    assert main(args) == 0
    first = capsys.readouterr().out
    assert main(args) == 0
    assert capsys.readouterr().out == first
    header, row = first.strip().splitlines()
    assert header.startswith("policy,mode,discipline,seed,jobs") and row.startswith("random,gang,fifo-skip,5,150")


def test_simulate_table_plot_and_jobs_out(tmp_path, capsys):
    png, jobs_csv = tmp_path / "t.png", tmp_path / "jobs.csv"
    assert main(["simulate", "--jobs", "100", "--nodes", "6", "--quiet", "--plot", str(png),
                 "--jobs-out", str(jobs_csv), "--mode", "naive", "--gang-share", "1"]) == 0
    out = capsys.readouterr().out
    assert "mode naive" in out and "JCT:" in out
    assert png.stat().st_size > 0
    assert len(jobs_csv.read_text().splitlines()) == 101  # header + one row per job


@pytest.mark.parametrize("argv,needle", [
    (["simulate", "--policy", "nope"], "unknown policy 'nope'"),
    (["simulate", "--discipline", "lifo"], "unknown queue discipline 'lifo'"),
    (["simulate", "--nodes-to-score", "0"], "--nodes-to-score '0'"),
    (["simulate", "--jobs", "0"], "--jobs and --nodes must be >= 1"),
    (["simulate", "--trace", "/nonexistent/folder"], "--trace /nonexistent/folder: not a folder"),
])
def test_simulate_bad_input_is_one_line_exit_1(argv, needle, capsys):
    assert main([*argv, "--quiet"]) == 1
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1


def test_simulate_on_the_real_trace_runs(alibaba_csv, capsys):
    assert main(["simulate", "--trace", str(alibaba_csv), "--format", "json", "--quiet", "--until", "86400"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["jobs"] == 8152 and sum(d["states"].values()) == 8152
