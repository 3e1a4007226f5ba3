"""``python -m lab01_cluster_sim sweep``: policies checked before any run, defaults that fit
each runner, what it wrote, the same seeding as ``compare``, clean CSV."""

from __future__ import annotations

import csv
import io
import json

import pytest

from lab01_cluster_sim.cli import main
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.replay import LESSON_POLICIES, PAPER_POLICIES, TEXTBOOK_POLICIES
from lab01_cluster_sim.sweep import default_policies, format_rows, grid, runner_policies


def _status(argv):
    try:
        return main(argv)
    except SystemExit as exc:  # argparse usage errors
        return exc.code


@pytest.mark.parametrize("argv, message", [
    (["--policies", "fifo,fcfs"],
     "error: --policies 'fcfs': the disciplines runner does not know it; expected one of: "
     "fifo, fifo-skip, priority, drf, backfill"),
    (["--runner", "replay", "--policies", "fifo"],
     "error: --policies 'fifo': the replay runner does not know it; expected one of: best-fit, dot-prod, fgd, "
     "first-fit, gpu-clustering, gpu-packing, random, worst-fit"),
    # the default list of the disciplines runner does not fit simulate: name the runner's own
    (["--runner", "simulate", "--policies", "backfill"], "--policies 'backfill': the simulate runner does not know it"),
    (["--runner", "simulate", "--param", "discipline=fifo,lifo"],
     "error: --param discipline=lifo: the simulate runner does not know 'lifo'; expected one of: "),
    (["--runner", "simulate", "--param", "mode=gang,solo"], "--param mode=solo: the simulate runner does not know"),
    (["--runner", "replay", "--param", "inflation=0"], "--param inflation=0: expected a multiple of capacity"),
    (["--runner", "replay", "--param", "workload_seed=-1"], "--param workload_seed=-1: expected a seed"),
    (["--policies", "fifo,fifo"], "--policies: each once, got fifo more than once"),
    (["--seeds", "3-1"], "--seeds '3-1'"),
    (["--runner", "simulate", "--trace", "."], "--trace goes with --runner replay, got --runner simulate"),
    # numbers are checked against the matching command's bounds before any run
    (["--runner", "simulate", "--param", "nodes=0"],
     "--param nodes=0: the simulate runner expects a whole number from 1 to 100,000"),
    (["--runner", "simulate", "--param", "interarrival=nan"],
     "--param interarrival=nan: the simulate runner expects a finite number > 0 and <= 10,000,000"),
    (["--runner", "simulate", "--param", "load=11"], "--param load=11: the simulate runner expects a number from "
                                                     "0.001 to 10"),
    (["--runner", "simulate", "--param", "load=1e-300"], "--param load=1e-300: the simulate runner expects a "
                                                         "number from 0.001 to 10"),
    (["--runner", "simulate", "--param", "gang_share=1.5"], "--param gang_share=1.5: the simulate runner expects a "
                                                              "number from 0 to 1"),
    (["--runner", "simulate", "--param", "nodes=2.5"], "--param nodes=2.5: the simulate runner expects a whole"),
    # fresh tester #10: the value simulate --nodes refuses ran away here (30 s, 700 MB) before lab01fix
    (["--param", "nodes=1000000000"],
     "error: --param nodes=1000000000: the disciplines runner expects a whole number from 1 to 10,000"),
    # issue 11 §2, fresh tester 2 F3: the value is echoed as typed, with the range
    (["--param", "nodes=1e9"],
     "error: --param nodes=1e9: the disciplines runner expects a whole number from 1 to 10,000"),
    (["--param", "nodes=1e999"],
     "error: --param nodes=1e999: the disciplines runner expects a whole number from 1 to 10,000"),
    (["--param", "nodes=4,1e-3"],
     "error: --param nodes=1e-3: the disciplines runner expects a whole number from 1 to 10,000"),
    (["--runner", "simulate", "--param", "interarrival=1e308"],
     "error: --param interarrival=1e308: the simulate runner expects a finite number > 0 and <= 10,000,000"),
    (["--runner", "replay", "--param", "workload_seed=1e30"],
     "error: --param workload_seed=1e30: expected a seed, a whole number from 0 to 4,294,967,295"),
    # fresh tester 2 F6: a repeated value is refused, as --seeds 0,0 is (2 and 2.0 are one value)
    (["--param", "nodes=2,2"], "error: --param nodes=2,2: each value once, got 2 more than once"),
    (["--param", "nodes=2,2.0"], "error: --param nodes=2,2.0: each value once, got 2.0 more than once"),
    (["--runner", "simulate", "--param", "nodes=1000000000"],
     "error: --param nodes=1000000000: the simulate runner expects a whole number from 1 to 100,000"),
    (["--param", "gpus_per_node=65"], "--param gpus_per_node=65: the disciplines runner expects a whole number from 1"),
    (["--param", "interarrival=inf"], "--param interarrival=inf: the disciplines runner expects a finite number"),
    (["--runner", "simulate", "--workloads", "10000000"],
     "--workloads '10000000': the simulate runner expects a number of jobs from 1 to 1,000,000"),
    (["--workloads", "100001"], "--workloads '100001': the disciplines runner expects a number of jobs from 1 to"),
])
def test_bad_grid_is_refused_before_any_run(argv, message, capsys, tmp_path):
    out = tmp_path / "sweep.csv"
    assert _status(["sweep", "--workers", "1", "--output", str(out), *argv]) == 1
    captured = capsys.readouterr()
    assert message in captured.err and captured.err.count("\n") == 1
    assert captured.out == "" and not out.exists()      # nothing ran, nothing written


def test_default_policies_fit_each_runner():
    assert default_policies("disciplines") == ("fifo", "fifo-skip", "priority", "drf", "backfill")
    assert default_policies("replay") == LESSON_POLICIES          # as compare on the synthetic workload
    assert default_policies("replay", trace=True) == PAPER_POLICIES
    assert default_policies("simulate") == TEXTBOOK_POLICIES
    for runner in ("disciplines", "replay", "simulate"):
        assert set(default_policies(runner)) <= set(runner_policies(runner))
        grid(runner, default_policies(runner), ["synthetic" if runner == "replay" else "5"], [0])  # no error


def test_replay_runner_defaults_and_says_what_it_wrote(tmp_path, capsys):
    out = tmp_path / "replay.csv"
    assert main(["sweep", "--runner", "replay", "--seeds", "42", "--workers", "1", "--output", str(out)]) == 0
    err = capsys.readouterr().err
    n = len(LESSON_POLICIES)
    assert f"wrote {n} runs ({n} policies x 1 workload x 1 seed; {n} ok, 0 failed) to {out}" in err
    rows = list(csv.DictReader(out.open()))
    assert [r["policy"] for r in rows] == list(LESSON_POLICIES)
    assert {r["workload"] for r in rows} == {"synthetic"}
    # counts are integers; floats have no noise (at most 12 significant digits)
    for r in rows:
        assert r["failed"].isdigit() and r["stranded_gpus"].isdigit()
        for c in ("alloc_end", "final_alloc_pct", "final_frag_pct", "unallocated_gpus"):
            digits = r[c].replace(".", "").lstrip("0")
            assert len(digits) <= 12, (c, r[c])


@pytest.mark.parametrize("workload_seed", [None, 3])
def test_replay_rows_match_compare_seeded_the_same_way(workload_seed, capsys):
    # compare --seeds 42 [--workload-seed 3] and sweep --seeds 42 [--param workload_seed=3]:
    # the same pods, the same replay, the same figures
    extra_c = [] if workload_seed is None else ["--workload-seed", str(workload_seed)]
    extra_s = [] if workload_seed is None else ["--param", f"workload_seed={workload_seed}"]
    assert main(["compare", "--quiet", "--format", "json", "--policies", "first-fit,best-fit", "--seeds", "42",
                 *extra_c]) == 0
    by_compare = {d["policy"]: d for d in json.loads(capsys.readouterr().out)}
    assert main(["sweep", "--quiet", "--runner", "replay", "--policies", "first-fit,best-fit", "--seeds", "42",
                 "--workers", "1", *extra_s]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(rows) == 2
    for r in rows:
        c = by_compare[r["policy"]]
        assert float(r["alloc_100"]) == c["alloc_100"] and float(r["alloc_end"]) == c["alloc_end"]
        assert int(r["failed"]) == c["failed_pods"] and int(r["stranded_gpus"]) == c["stranded_gpus"]
        assert float(r["unallocated_gpus"]) == c["unallocated_gpus"]
        assert float(r["frag_end"]) == c["frag_pct"]  # compare's frag % column, at the end


def test_workload_seed_needs_the_synthetic_workload(tmp_path):
    (tmp_path / "openb_pod_list_default.csv").write_text("")
    (tmp_path / "openb_node_list_gpu_node.csv").write_text("")   # the workload check looks for both
    with pytest.raises(InputError, match="--param workload_seed: only the synthetic workload has a workload seed"):
        grid("replay", ["fgd"], [f"{tmp_path}:default"], [42], {"workload_seed": [1]})


def test_grid_size_is_bounded():
    with pytest.raises(InputError, match="the grid has 120,000 runs; at most 100,000"):
        grid("disciplines", ["fifo"], ["5"], list(range(100)), {"nodes": list(range(1, 1201))})


def test_tables_have_no_exponent_and_readable_units():
    rows = [{"policy": "fifo", "mean_wait_s": 8702.0, "utilisation": 0.6254, "tiny": 1.5e-05, "big": 123456.7,
             "jobs": 60.0, "missing": float("nan")},
            {"policy": "drf", "mean_wait_s": 90.0, "utilisation": 0.8, "tiny": 0.5, "big": 2.0, "jobs": 7,
             "missing": None}]
    plain = format_rows(rows).splitlines()
    assert plain[0].split() == ["policy", "mean_wait_s", "utilisation", "tiny", "big", "jobs", "missing"]
    # 1.5e-05 -> 0.000015, 123456.7 -> 123457, 60.0 -> 60, NaN and None -> '-'
    assert plain[2].split() == ["fifo", "8702", "0.6254", "0.000015", "123457", "60", "-"]
    assert "e-0" not in "\n".join(plain) and "e+" not in "\n".join(plain)
    units = {"mean_wait_s": "duration", "utilisation": "ratio", "jobs": "count"}
    table = format_rows(rows, units=units).splitlines()
    # the waits' column is in hours (its largest value, 8702 s, is over an hour): 8702/3600 = 2.4, 90/3600 = 0.0
    assert table[0].split() == ["policy", "mean_wait", "(h)", "utilisation", "%", "tiny", "big", "jobs", "missing"]
    assert table[2].split()[:3] == ["fifo", "2.4", "62.5"] and table[3].split()[:3] == ["drf", "0.0", "80.0"]
    # CSV and JSON: clean numbers, missing is empty / null
    assert format_rows(rows, "csv").splitlines()[1] == "fifo,8702.0,0.6254,1.5e-05,123456.7,60.0,"
    assert json.loads(format_rows(rows, "json"))[1]["missing"] is None
    with pytest.raises(ValueError, match="unit kind 'weeks'"):
        format_rows(rows, units={"mean_wait_s": "weeks"})


def test_simulate_runner_row_reproduces_the_simulate_command(capsys):
    # the tester's case, made small: sweep --runner simulate used 100 nodes at load 0.9, so
    # its rows showed no wait while simulate (20 nodes, load 2) queued; now the defaults are simulate's
    assert main(["simulate", "--quiet", "--format", "json", "--jobs", "300", "--nodes", "4", "--discipline", "fifo",
                 "--seed", "3"]) == 0
    by_simulate = json.loads(capsys.readouterr().out)
    assert main(["sweep", "--quiet", "--runner", "simulate", "--workloads", "300", "--policies", "best-fit",
                 "--param", "discipline=fifo", "--param", "nodes=4", "--seeds", "3", "--workers", "1"]) == 0
    (row,) = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert float(row["mean_wait_s"]) == pytest.approx(by_simulate["wait_s"]["mean"], rel=1e-11)
    assert float(row["arrival_allocation_ratio"]) == pytest.approx(by_simulate["arrival_allocation_ratio"], rel=1e-11)
    assert float(row["makespan_s"]) == pytest.approx(by_simulate["makespan_s"], rel=1e-11)
    assert by_simulate["wait_s"]["mean"] > 0      # a contended cluster: the comparison is not 0 == 0
    # and a load parameter changes the run (load 0.5 offers a quarter of the default's work per second)
    assert main(["sweep", "--quiet", "--runner", "simulate", "--workloads", "300", "--policies", "best-fit",
                 "--param", "discipline=fifo", "--param", "nodes=4", "--param", "load=0.5,2", "--seeds", "3",
                 "--workers", "1"]) == 0
    low, default = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert (low["load"], default["load"]) == ("0.5", "2")
    assert default["mean_wait_s"] == row["mean_wait_s"]
    assert float(low["mean_wait_s"]) < float(default["mean_wait_s"])


def test_disciplines_runner_row_reproduces_the_disciplines_command(capsys):
    # defaults as the disciplines command: 300 jobs, 4 nodes x 8 GPUs, 300 s gap, tenant 'research'
    assert main(["disciplines", "--disciplines", "drf", "--format", "json", "--seed", "2", "--jobs", "40"]) == 0
    (by_command,) = json.loads(capsys.readouterr().out)
    assert main(["sweep", "--quiet", "--policies", "drf", "--workloads", "40", "--seeds", "2", "--workers", "1"]) == 0
    (row,) = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert float(row["mean_wait_s"]) == pytest.approx(by_command["mean_wait_s"], rel=1e-11)


def test_sweep_to_stdout_says_what_it_wrote_on_stderr(capsys):
    assert main(["sweep", "--policies", "fifo", "--workloads", "5", "--seeds", "0,1", "--workers", "1"]) == 0
    captured = capsys.readouterr()
    # 1 policy x 1 workload x 2 seeds = 2 runs: a header and 2 rows on stdout, the note on stderr
    assert len(captured.out.splitlines()) == 3
    assert "wrote 2 runs (1 policy x 1 workload x 2 seeds; 2 ok, 0 failed) to stdout" in captured.err
    assert main(["sweep", "--quiet", "--policies", "fifo", "--workloads", "5", "--seeds", "0", "--workers", "1"]) == 0
    assert capsys.readouterr().err == ""


def test_sweep_names_the_parameter_axes_it_wrote(capsys):
    # 1 policy x 1 workload x 1 seed x 2 values of nodes = 2 runs
    assert main(["sweep", "--policies", "fifo", "--workloads", "5", "--seeds", "0", "--workers", "1",
                 "--param", "nodes=1,2"]) == 0
    err = capsys.readouterr().err
    assert "wrote 2 runs (1 policy x 1 workload x 1 seed x 2 nodes values; 2 ok, 0 failed) to stdout" in err


def test_whole_numbers_written_as_floats_are_accepted_for_seeds_and_workloads(capsys):
    # fresh tester 2 F5: as simulate --seed 1e1 and --jobs 2e1, --seeds 1e1 is seed 10 and
    # --workloads 5e0 is 5 jobs; the rows say 10 and 5
    assert main(["sweep", "--quiet", "--policies", "fifo", "--workloads", "5e0", "--seeds", "1e1,2.0",
                 "--workers", "1"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [(r["workload"], r["seed"]) for r in rows] == [("5", "10"), ("5", "2")]


def test_a_missing_trace_folder_says_it_does_not_exist(tmp_path, capsys):
    missing = tmp_path / "nope"
    assert main(["sweep", "--runner", "replay", "--trace", str(missing)]) == 1
    assert capsys.readouterr().err == (f"error: --trace {missing}: does not exist; expected the folder holding the "
                                       f"openb CSV files (python -m lab01_cluster_sim fetch-trace {missing} "
                                       "downloads them)\n")


def test_workloads_paper_is_the_papers_17_pod_lists(tmp_path, capsys):
    # generate_run_scripts.py's FileList (hkust-adsl/kubernetes-scheduler-simulator): default,
    # cpu050/100/200/250, gpushare40/60/80/100, gpuspec10/20/25/33, multigpu20/30/40/50. A folder
    # holding only empty CSVs is enough to see the grid it builds: every run fails to load,
    # and the rows name the 17 lists in the paper's order.
    from lab01_cluster_sim.replay import PAPER_POD_LISTS

    for name in PAPER_POD_LISTS + ("cpu037", "gpushare20"):
        (tmp_path / f"openb_pod_list_{name}.csv").write_text("")
    (tmp_path / "openb_node_list_gpu_node.csv").write_text("")
    assert len(PAPER_POD_LISTS) == 17
    assert main(["sweep", "--quiet", "--runner", "replay", "--trace", str(tmp_path), "--workloads", "paper",
                 "--policies", "fgd", "--seeds", "42", "--workers", "1"]) == 1
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [r["workload"].rsplit(":", 1)[1] for r in rows] == list(PAPER_POD_LISTS)
    assert {r["status"] for r in rows} == {"error"}


def test_a_trace_folder_without_the_files_is_refused_before_any_run(tmp_path, capsys):
    # fresh tester (Dec 2): --trace /tmp --workloads paper ran 306 replays that all failed to load
    # ("306 of 306 runs failed"); the files are now looked for before anything runs
    argv = ["sweep", "--quiet", "--runner", "replay", "--workers", "1", "--trace", str(tmp_path), "--workloads"]
    assert _status([*argv, "paper"]) == 1
    err = capsys.readouterr().err
    assert err == (f"error: --workloads '{tmp_path}:default': no openb_node_list_gpu_node.csv in {tmp_path} "
                   f"(python -m lab01_cluster_sim fetch-trace {tmp_path} gets the trace)\n")
    (tmp_path / "openb_node_list_gpu_node.csv").write_text("")
    (tmp_path / "openb_pod_list_default.csv").write_text("")
    assert _status([*argv, "default,gpushare40"]) == 1
    captured = capsys.readouterr()
    assert captured.err == (f"error: --workloads '{tmp_path}:gpushare40': pod list 'gpushare40' not found in "
                            f"{tmp_path}; expected a CSV file or one of: default\n")
    assert captured.out == ""
