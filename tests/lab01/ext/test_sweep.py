"""Sweep: grid order, tidy rows, failures reported not fatal, process pool and a local Dask cluster."""

from __future__ import annotations

import csv
import io
import json

import pytest

from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.sweep import RunSpec, execute, format_rows, grid, parse_param, run_sweep


def test_grid_is_the_cartesian_product_in_stable_order():
    specs = grid("disciplines", ["fifo", "backfill"], ["20"], [0, 1], {"nodes": [2, 3]})
    assert len(specs) == 2 * 1 * 2 * 2
    assert specs[0] == RunSpec("disciplines", "fifo", "20", 0, (("nodes", 2),))
    assert specs[-1] == RunSpec("disciplines", "backfill", "20", 1, (("nodes", 3),))
    with pytest.raises(InputError, match="unknown runner"):
        grid("nope", ["fifo"], ["1"], [0])
    with pytest.raises(InputError, match="seeds must not be empty"):
        grid("disciplines", ["fifo"], ["1"], [])


def test_parse_param():
    assert parse_param("interarrival=300,400.5,x") == ("interarrival", [300, 400.5, "x"])
    with pytest.raises(InputError, match="KEY=V1"):
        parse_param("interarrival")


def test_failed_run_is_reported_with_its_parameters_and_the_sweep_goes_on():
    # (grid refuses an unknown discipline before any run; a hand-made spec reaches the runner)
    specs = [*grid("disciplines", ["fifo"], ["20"], [0], {"nodes": [2]}),
             RunSpec("disciplines", "no-such-discipline", "20", 0, (("nodes", 2),))]
    res = run_sweep(specs, workers=1, quiet=True)
    ok, bad = res.rows
    assert ok["status"] == "ok" and ok["completed"] == 20
    assert bad["status"] == "error" and bad["policy"] == "no-such-discipline" and bad["nodes"] == 2
    assert "unknown queue discipline 'no-such-discipline'" in bad["error"]
    assert res.failed == 1
    rows = list(csv.DictReader(io.StringIO(res.to_csv())))
    assert [r["status"] for r in rows] == ["ok", "error"]


def test_process_pool_gives_the_same_rows_as_serial():
    specs = grid("disciplines", ["fifo-skip", "backfill"], ["30"], [0, 1], {"nodes": [2]})
    serial = run_sweep(specs, workers=1, quiet=True).rows
    parallel = run_sweep(specs, workers=2, quiet=True).rows
    # same order, same numbers (deterministic runs); NaN (no tenant waited with work: no
    # dominant-share index) compares unequal to itself, so it is compared as None
    def same(rows):
        return [{k: None if isinstance(v, float) and v != v else v for k, v in r.items()} for r in rows]

    assert same(parallel) == same(serial)


@pytest.mark.timeout(120)
def test_local_dask_cluster_threads():
    pytest.importorskip("dask.distributed")
    specs = [*grid("disciplines", ["fifo"], ["20"], [0], {"nodes": [2]}),
             RunSpec("disciplines", "bad", "20", 0, (("nodes", 2),))]
    rows = run_sweep(specs, workers=1, dask="local", quiet=True).rows
    assert [r["status"] for r in rows] == ["ok", "error"]
    assert rows[0] == run_sweep(specs[:1], workers=1, quiet=True).rows[0]


def test_format_rows_table_csv_json():
    rows = [{"a": 1, "b": 0.123456}, {"a": 2, "c": "x"}]
    table = format_rows(rows)
    assert table.splitlines()[0].split() == ["a", "b", "c"] and "0.1235" in table
    assert format_rows(rows, "csv").splitlines() == ["a,b,c", "1,0.123456,", "2,,x"]
    assert '"c": "x"' in format_rows(rows, "json")
    with pytest.raises(InputError, match="--format"):
        format_rows(rows, "xml")


def test_replay_and_simulate_runners_match_direct_calls():
    from lab01_cluster_sim.studies.timed import synthetic_jobs
    from lab01_cluster_sim.replay import replay
    from lab01_cluster_sim.simulate import simulate
    from lab01_cluster_sim.workloads.synthetic import default_trace

    rows = run_sweep(grid("replay", ["best-fit"], ["synthetic"], [42], {"inflation": [1.3]}), workers=1, quiet=True).rows
    trace = default_trace(0)  # the workload seed is param workload_seed (default 0), as compare's
    direct = replay(list(trace.nodes), list(trace.jobs), "best-fit", seed=42, inflation=1.3)
    assert rows[0]["status"] == "ok" and rows[0]["final_alloc_pct"] == round(direct.final_alloc_pct, 2)
    assert rows[0]["failed"] == direct.failed

    rows = run_sweep(grid("simulate", ["best-fit"], ["200"], [1], {"nodes": [10], "discipline": ["backfill"]}),
                     workers=1, quiet=True).rows
    nodes, jobs = synthetic_jobs(200, 10, 1, None, 0.0, load=2.0)  # simulate's default load
    res = simulate(nodes, jobs, "best-fit", discipline="backfill", seed=1)
    assert rows[0]["status"] == "ok" and rows[0]["mean_jct_s"] == res.summary.jct.mean
    # the grid refuses a workload the runner cannot run; a hand-made spec fails in its row
    with pytest.raises(InputError, match="'lots': the simulate runner expects a number of jobs"):
        grid("simulate", ["best-fit"], ["lots"], [1])
    bad = run_sweep([RunSpec("simulate", "best-fit", "lots", 1)], workers=1, quiet=True).rows[0]
    assert bad["status"] == "error" and "number of jobs" in bad["error"]


@pytest.mark.parametrize("runner, workload", [("disciplines", "abc"), ("disciplines", "-5"), ("disciplines", "0"),
                                              ("simulate", "abc"), ("replay", "/nonexistent-folder:default")])
def test_grid_rejects_workloads_the_runner_cannot_run(runner, workload):
    # before: 'abc' silently ran 200 jobs and the rows said 'abc'
    with pytest.raises(InputError, match=f"--workloads {workload!r}"):
        grid(runner, ["fifo" if runner == "disciplines" else "best-fit"], [workload], [0])


def test_whole_number_parameters_typed_as_floats_mean_integers():
    # nodes=2.0 and nodes=1e1 are the whole numbers 2 and 10: they run, labelled as integers
    specs = grid("disciplines", ["fifo"], ["5"], [0], {"nodes": [2.0, 1e1], "interarrival": [300.0]})
    assert [s.params for s in specs] == [(("interarrival", 300.0), ("nodes", 2)),
                                         (("interarrival", 300.0), ("nodes", 10))]
    assert all(isinstance(dict(s.params)["nodes"], int) for s in specs)
    with pytest.raises(InputError, match=r"^--param nodes=2\.5: the disciplines runner expects a whole number"):
        grid("disciplines", ["fifo"], ["5"], [0], {"nodes": [2.5]})


def test_grid_rejects_parameters_the_runner_does_not_use():
    with pytest.raises(InputError, match="--param 'foo'.*expected one of: gpus_per_node, interarrival, nodes"):
        grid("disciplines", ["fifo"], ["10"], [0], {"foo": [1, 2]})
    with pytest.raises(InputError, match="--param 'jobs'"):   # the workload is the job count
        grid("disciplines", ["fifo"], ["10"], [0], {"jobs": [5]})


def test_rows_have_integer_counts_and_a_single_error_message():
    rows = run_sweep([*grid("disciplines", ["fifo"], ["5"], [0]), RunSpec("disciplines", "nope", "5", 0)],
                     workers=1, quiet=True).rows
    ok, bad = rows
    assert ok["completed"] == 5 and isinstance(ok["completed"], int) and isinstance(ok["preemptions"], int)
    # timeout counts jobs killed at their time limit (none here: the demo jobs have no limit):
    # an integer like the other state counts, not 0.0
    assert ok["timeout"] == 0 and isinstance(ok["timeout"], int)
    text = format_rows([ok], "csv")
    assert ",5," in text and "5.0" not in text.splitlines()[1].split(",")[9:]
    assert bad["status"] == "error" and " | " not in bad["error"]


def test_error_row_names_where_a_bug_was_raised(monkeypatch):
    def boom(spec):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr("lab01_cluster_sim.sweep._run_disciplines", boom)
    row = execute(RunSpec("disciplines", "fifo", "5", 0))
    # one message, then where it came from (not the same message twice, "X | X")
    assert row["error"].startswith("ZeroDivisionError: division by zero (at test_sweep.py:")
    assert row["error"].count("division by zero") == 1


@pytest.mark.timeout(60)
def test_unreachable_dask_scheduler_is_one_input_error(monkeypatch):
    # before: an OSError traceback after 30 s; now an InputError naming --dask
    pytest.importorskip("dask.distributed")
    monkeypatch.setattr("lab01_cluster_sim.sweep.DASK_CONNECT_TIMEOUT_S", 1.0)
    with pytest.raises(InputError, match=r"--dask tcp://127.0.0.1:1: cannot reach a Dask scheduler"):
        run_sweep(grid("disciplines", ["fifo"], ["5"], [0]), dask="tcp://127.0.0.1:1", quiet=True)


def test_index_mean_and_count_units():
    rows = [{"d": "fifo", "jain": 0.98823, "stranded": 3.2241, "moves": 56.0},
            {"d": "drf", "jain": 0.903, "stranded": 1.84, "moves": 0.0}]
    units = {"jain": "index", "stranded": "mean", "moves": "count"}
    table = format_rows(rows, units=units).splitlines()
    # index: 3 decimals (0.98823 -> 0.988, 0.903 -> 0.903); mean: 2 (3.2241 -> 3.22, 1.84 -> 1.84)
    assert table[2].split() == ["fifo", "0.988", "3.22", "56"] and table[3].split() == ["drf", "0.903", "1.84", "0"]
    # counts are integers in CSV and JSON too; the other columns keep their figures
    assert format_rows(rows, "csv", units=units).splitlines()[1:] == ["fifo,0.98823,3.2241,56", "drf,0.903,1.84,0"]
    assert json.loads(format_rows(rows, "json", units=units))[0]["moves"] == 56
