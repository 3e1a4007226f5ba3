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


def test_workload_seed_needs_the_synthetic_workload(tmp_path):
    (tmp_path / "openb_pod_list_default.csv").write_text("")
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
