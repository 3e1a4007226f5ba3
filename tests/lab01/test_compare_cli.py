"""``python -m lab01_cluster_sim compare``: options, formats and errors."""

from __future__ import annotations

import csv
import io
import json

import pytest

from lab01_cluster_sim.cli import main
from lab01_cluster_sim.commands.compare import parse_seeds
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.replay import compare, summarise
from lab01_cluster_sim.workloads.synthetic import default_trace


def test_parse_seeds():
    assert parse_seeds("42") == (42,)
    assert parse_seeds("42,43") == (42, 43)
    assert parse_seeds("42-45,50") == (42, 43, 44, 45, 50)
    for bad in ("x", "45-42", "-3", "1,,2"):
        with pytest.raises(InputError, match="--seeds"):
            parse_seeds(bad)


def test_table_on_the_synthetic_default(capsys):
    assert main(["compare", "--quiet", "--policies", "best-fit,fgd", "--seeds", "42"]) == 0
    out = capsys.readouterr().out.splitlines()
    # the workload line goes with the table, on stdout (even with --quiet: it is output, not a note)
    assert out[0].startswith("synthetic openb-like trace (workload seed 0): 48 nodes, 243 GPUs, 327 pods; replayed to 130 %")
    assert out[1].split()[:4] == ["policy", "alloc@100", "%", "alloc@130"]
    assert [line.split()[0] for line in out[3:5]] == ["best-fit", "fgd"]
    assert out[5] == "" and out[6] == "columns:"


def test_csv_matches_the_library_summary(capsys):
    assert main(["compare", "--quiet", "--format", "csv", "--policies", "first-fit,best-fit", "--seeds", "1-2"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    t = default_trace(0)
    expected = compare(t.nodes, t.jobs, ["first-fit", "best-fit"], (1, 2))
    for row in rows:
        s = summarise(row["policy"], expected[row["policy"]])
        assert float(row["alloc_end"]) == pytest.approx(s.alloc_end, abs=1e-9)
        assert float(row["failed_pods"]) == pytest.approx(s.failed_pods)
        assert float(row["stranded_gpus"]) == pytest.approx(s.stranded_gpus)
        assert row["seeds"] == "1 2" and row["x_end"] == "130"
        assert row["workload"].startswith("synthetic openb-like trace (workload seed 0)")


def test_json_and_inflation(capsys):
    assert main(["compare", "--quiet", "--format", "json", "--policies", "random", "--inflation", "1.1"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["policy"] == "random" and row["x_end"] == 110 and row["seeds"] == [42]


def test_plot_is_written(tmp_path, capsys):
    out = tmp_path / "alloc.png"
    assert main(["compare", "--quiet", "--policies", "best-fit", "--plot", str(out)]) == 0
    assert out.stat().st_size > 1000


@pytest.mark.parametrize("argv, message", [
    (["--policies", "nope"], "unknown policy 'nope'"),
    (["--seeds", "x"], "--seeds"),
    (["--pod-list", "gpushare40"], "--pod-list needs --trace"),
    (["--trace", "/nonexistent/folder"], "--trace /nonexistent/folder: does not exist"),
])
def test_bad_input_is_one_line_and_exit_1(argv, message, capsys):
    assert main(["compare", "--quiet", *argv]) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_real_trace_pod_list_by_name(alibaba_csv, capsys):
    # multigpu50 is tuned DOWN to 1.0 x capacity; the run only has to succeed and name the list.
    assert main(["compare", "--trace", str(alibaba_csv), "--pod-list", "multigpu50", "--policies", "best-fit",
                 "--inflation", "1.0", "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert "openb_pod_list_multigpu50.csv" in captured.err
    (row,) = json.loads(captured.out)
    assert row["x_end"] == 100 and 80 < row["alloc_end"] <= 100


def test_small_inflation_runs_and_missing_figures_are_null_not_nan(capsys):
    # 0.01 x 243 GPUs = 2.43 GPUs arrive: one column (x = 0..1); alloc@100 never reached -> null,
    # one seed -> sd null. Strict JSON: json.loads with parse_constant failing on NaN.
    assert main(["compare", "--format", "json", "--policies", "best-fit", "--inflation", "0.01"]) == 0
    captured = capsys.readouterr()

    def no_nan(name):
        raise AssertionError(f"bare {name} in JSON")

    (row,) = json.loads(captured.out, parse_constant=no_nan)
    assert row["alloc_100"] is None and row["alloc_end_sd"] is None and row["x_end"] == 1
    assert "never reached 100 %" in captured.err


def test_table_dash_for_missing_and_one_column_at_inflation_1(capsys):
    assert main(["compare", "--quiet", "--policies", "best-fit", "--inflation", "0.5"]) == 0
    _, head, _, row = capsys.readouterr().out.splitlines()[:4]
    assert head.split()[:4] == ["policy", "alloc@100", "%", "alloc@50"]
    assert row.split()[1] == "-" and "nan" not in row
    assert main(["compare", "--quiet", "--policies", "best-fit", "--inflation", "1"]) == 0
    head = capsys.readouterr().out.splitlines()[1]
    assert head.count("alloc@100 %") == 1


@pytest.mark.parametrize("argv, message", [
    (["--policies", "fgd,fgd"], "each policy once, got fgd"),
    (["--seeds", "42,42"], "each seed once, got 42"),
    (["--seeds", "1-101"], "at most 100 seeds"),
    (["--node-list", "x.csv"], "--node-list needs --trace"),
    (["--plot", "out.xyz"], "--plot out.xyz: expected a file name ending in one of"),
    (["--plot", "/nonexistent/dir/a.png"], "folder /nonexistent/dir does not exist"),
    (["--plot", "/etc/passwd/x.png"], "--plot /etc/passwd/x.png: /etc/passwd is a file, not a folder"),
    (["--inflation", "0.001"], "from 0.01 to 10"),
])
def test_more_bad_input_is_rejected_before_any_run(argv, message, capsys):
    # usage errors from argparse exit via SystemExit(1); InputErrors return 1
    try:
        status = main(["compare", *argv])
    except SystemExit as exc:
        status = exc.code
    assert status == 1
    captured = capsys.readouterr()
    assert message in captured.err and captured.err.count("\n") == 1
    assert captured.out == ""  # nothing ran, nothing printed


def test_huge_sparse_pod_list_is_one_line_and_exit_1(tmp_path, capsys):
    # the tester's case: a 5 GB sparse openb_pod_list_default.csv gave a MemoryError traceback
    (tmp_path / "openb_node_list_gpu_node.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\nn0,1000,1024,1,A100\n")
    with open(tmp_path / "openb_pod_list_default.csv", "wb") as handle:
        handle.truncate(5 * 10**9)
    assert main(["compare", "--quiet", "--trace", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is 5,000,000,000 bytes; expected a CSV file of at most 33,554,432" in err


def test_percentages_in_csv_and_json_have_two_decimals(capsys):
    # before: frag_ratio_pct 99.7082028981 beside alloc 93.46; best-fit, seed 42 on the default
    # synthetic trace: frag ratio = F / idle = 6.52 % of 243 GPUs / 15.89 GPUs -> 99.71 to 2 decimals
    assert main(["compare", "--quiet", "--format", "csv", "--policies", "best-fit", "--seeds", "42"]) == 0
    (row,) = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert row["frag_ratio_pct"] == "99.71" and row["alloc_end"] == "93.46" and row["frag_pct"] == "6.52"
    assert main(["compare", "--quiet", "--format", "json", "--policies", "best-fit", "--seeds", "42-43"]) == 0
    (d,) = json.loads(capsys.readouterr().out)
    for c in ("alloc_100", "alloc_end", "alloc_end_sd", "frag_pct", "frag_ratio_pct"):
        assert d[c] == round(d[c], 2), (c, d[c])


def test_pods_asking_for_a_model_no_node_has_get_a_note(tmp_path, capsys):
    # 2 nodes of model A100; 3 pods: p0 any model, p1 A100 or NOSUCHGPU (fits), p2 NOSUCHGPU only
    (tmp_path / "openb_node_list_gpu_node.csv").write_text(
        "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,65536,2,A100\nn1,32000,65536,2,A100\n")
    (tmp_path / "openb_pod_list_default.csv").write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
        "p0,1000,1024,1,1000,\np1,1000,1024,1,1000,A100|NOSUCHGPU\np2,1000,1024,1,1000,NOSUCHGPU\n")
    assert main(["compare", "--trace", str(tmp_path), "--policies", "best-fit"]) == 0
    err = capsys.readouterr().err
    assert ("note: 1 of 3 pods ask only for GPU model NOSUCHGPU, which no node of openb_node_list_gpu_node.csv "
            "has (A100): they can never be placed") in err
    assert main(["compare", "--quiet", "--trace", str(tmp_path), "--policies", "best-fit"]) == 0
    assert capsys.readouterr().err == ""
