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
    # argparse rejects it (one line, exit 1); 8 workers x 2 GPUs = 16 > 12 free is the demo's own check
    with pytest.raises(SystemExit) as exc:
        main(["gang-demo", "--gpus-per-worker", "4"])
    assert exc.value.code == 1
    assert "--gpus-per-worker: expected a whole number from 1 to 3, got '4'" in capsys.readouterr().err


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
    (["simulate", "--jobs", "0"], "--jobs: expected a whole number from 1 to 1,000,000"),
    (["simulate", "--jobs", "100000000"], "--jobs: expected a whole number from 1 to 1,000,000"),
    (["simulate", "--nodes", "100000000"], "--nodes: expected a whole number from 1 to 100,000"),
    (["simulate", "--seed", "-1"], "--seed: expected a seed"),
    (["simulate", "--load", "nan"], "--load: expected a number from 0.001 to 10, got 'nan'"),
    # fresh tester 2 F2: at --load 1e-300 arrivals land near 1e300 s, where t + duration == t
    # (JCT 0.0 s); MIN_LOAD 0.001 is the bound, named with its reason
    (["simulate", "--load", "1e-300"], "--load: expected a number from 0.001 to 10, got '1e-300'; a lower load"),
    (["simulate", "--load", "0.0009"], "--load: expected a number from 0.001 to 10, got '0.0009'"),
    # 200 gaps of mean 1e7 s: the last arrival is near 200 x 1e7 = 2e9 s > the 1e9 s time cap
    (["simulate", "--interarrival", "1e7", "--jobs", "200"],
     "--interarrival 10,000,000 s with --jobs 200: the last synthetic job would arrive at 2,001,498,000 s, past "
     "the simulator's 1,000,000,000 s"),
    (["simulate", "--gang-share", "2"], "--gang-share: expected a share from 0 to 1"),
    (["simulate", "--until", "inf"], "--until: expected a finite number > 0"),
    (["simulate", "--pod-list", "nope"], "--pod-list needs --trace"),
    (["simulate", "--plot", "x.nope"], "--plot x.nope: expected a file name ending in one of"),
    (["simulate", "--trace", "/nonexistent/folder"], "--trace /nonexistent/folder: does not exist; expected the "
                                                     "folder holding the openb CSV files (python -m lab01_cluster_sim "
                                                     "fetch-trace /nonexistent/folder downloads them)"),
    (["simulate", "--trace", "README.md"], "--trace README.md: not a folder; expected the folder holding"),
    (["gang-demo", "--duration", "inf"], "--duration: expected a finite number > 0"),
    (["gang-demo", "--workers", "13"], "--workers: expected a whole number from 1 to 12"),
])
def test_simulate_bad_input_is_one_line_exit_1(argv, needle, capsys):
    try:  # argparse usage errors exit through SystemExit(1), InputErrors return 1
        status = main([*argv, "--quiet"] if argv[0] == "simulate" else argv)
    except SystemExit as exc:
        status = exc.code
    assert status == 1
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1


def test_simulate_on_the_real_trace_runs(alibaba_csv, capsys):
    assert main(["simulate", "--trace", str(alibaba_csv), "--format", "json", "--quiet", "--until", "86400"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["jobs"] == 8152 and sum(d["states"].values()) == 8152


def test_simulate_refuses_a_pod_list_without_times(tmp_path, capsys):
    # a multigpu-style list (5 columns): every pod would arrive at t=0 and never end
    (tmp_path / "openb_node_list_gpu_node.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\nn0,8000,8192,1,G2\n")
    (tmp_path / "openb_pod_list_multigpu50.csv").write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,1024,1,1000\n")
    assert main(["simulate", "--trace", str(tmp_path), "--pod-list", "multigpu50", "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "has no arrival times" in err and "compare command" in err and err.count("\n") == 1


def test_queueing_delay_names_the_jobs_that_never_started(capsys):
    # 1 node x 1 GPU, jobs of 1 GPU each: the first runs forever (duration inf from a long
    # synthetic tail is not needed: --until cuts the run), the others wait and never start.
    from lab01_cluster_sim.studies.timed import summary_dict
    from lab01_cluster_sim.model import Job, Node
    from lab01_cluster_sim.simulate import simulate

    nodes = [Node("n0", "G2", 1, 8000, 8192)]
    jobs = [Job("run", 0.0, float("inf"), 1, 1000, 1000, 1024),
            Job("wait1", 1.0, 10.0, 1, 1000, 1000, 1024),
            Job("wait2", 2.0, 10.0, 1, 1000, 1000, 1024),
            Job("huge", 3.0, 10.0, 2, 1000, 1000, 1024)]  # 2 GPUs on a 1-GPU cluster: rejected
    d = summary_dict(simulate(nodes, jobs, until=100.0))
    # only "run" started (wait 0): the mean of 0 s must come with 2 pending + 1 rejected never started
    assert d["wait_s"]["mean"] == 0.0
    assert d["never_started"] == {"pending": 2, "rejected": 1}


def test_defaults_show_contention(capsys):
    # The defaults must make a run worth reading: jobs queue, GPUs get stranded, and strict
    # FIFO differs from FIFO-skip (with the old defaults all three were zero / identical).
    from lab01_cluster_sim.studies.timed import DEFAULT_JOBS, DEFAULT_LOAD, DEFAULT_NODES
    from lab01_cluster_sim.workloads.synthetic import synthetic_nodes

    # 20 nodes in the openb mix: 10 x 8 + 9 x 2 + 1 x 4 = 102 GPUs
    assert (DEFAULT_JOBS, DEFAULT_NODES, DEFAULT_LOAD) == (2000, 20, 2.0)
    assert sum(n.gpu_count for n in synthetic_nodes(DEFAULT_NODES)) == 102
    assert main(["simulate", "--quiet", "--format", "json"]) == 0
    skip = json.loads(capsys.readouterr().out)
    assert main(["simulate", "--quiet", "--format", "json", "--discipline", "fifo"]) == 0
    fifo = json.loads(capsys.readouterr().out)
    assert skip["wait_s"]["mean"] > 60 and skip["peak_stranded_gpus"] > 0
    assert skip["arrival_allocation_ratio"] > 0.6
    assert fifo["wait_s"]["mean"] > skip["wait_s"]["mean"]  # head-of-line blocking costs waiting


def test_simulate_combines_plugins_from_the_command_line(capsys):
    # 300 synthetic jobs on 4 nodes, DRF, topology-aware waits, time-slicing and an autoscaler
    # that may add up to 64 GPUs: every job completes (the autoscaler grows the cluster), and
    # the JSON is the usual summary.
    import json

    from lab01_cluster_sim.cli import main

    argv = ["simulate", "--jobs", "300", "--nodes", "4", "--discipline", "drf", "--format", "json", "--quiet",
            "--plugin", "topology:max_wait_s=600", "--plugin", "time-slicing",
            "--plugin", "autoscaler:limit_gpus=64,consolidate_after_s=600"]
    assert main(argv) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["states"]["completed"] == d["jobs"] == 300 and d["discipline"] == "drf"


def test_simulate_refuses_a_bad_plugin_in_one_line(capsys):
    from lab01_cluster_sim.cli import main

    assert main(["simulate", "--jobs", "10", "--nodes", "2", "--plugin", "topology:wait=5"]) == 1
    err = capsys.readouterr().err
    assert err == ("error: --plugin 'topology:wait=5': unknown option 'wait'; topology takes: max_wait_s, "
                   "comm_fraction, intra_gbps, inter_gbps\n")


def test_table_prints_durations_in_readable_units():
    import io

    from lab01_cluster_sim.commands.simulate import _print_table

    d = {"policy": "best-fit", "mode": "gang", "discipline": "fifo", "seed": 0, "jobs": 1, "stop_reason": "empty",
         "end_time_s": 9000.0, "states": {"completed": 1}, "never_started": {"pending": 0, "rejected": 0},
         "wait_s": {"mean": 90.0, "p50": 30.0, "p99": 7200.0}, "jct_s": {"mean": 42.0, "p50": None, "p99": 2412.0},
         "makespan_s": 1558380.0, "mean_allocation_ratio": 0.5, "arrival_allocation_ratio": None,
         "peak_stranded_gpus": 0, "mean_stranded_gpus": 0.0, "rejected": {}, "deadlock": None}
    out = io.StringIO()
    _print_table(d, out)
    lines = out.getvalue().splitlines()
    assert lines[0].endswith(": 1 job, stopped: empty at t=9,000 s")
    # 90 s = 1.5 min; 7200 s = 2.0 h; 2412 s = 40.2 min; 1,558,380 s = 432.9 h
    assert lines[2] == "  queueing delay: mean 1.5 min, p50 30.0 s, p99 2.0 h"
    assert lines[3] == "  JCT:            mean 42.0 s, p50 n/a, p99 40.2 min"
    assert lines[4] == "  makespan:       432.9 h"


def test_synthetic_jobs_keeps_only_the_load_floor():
    """The library function refuses the load that loses durations in floating point (below
    0.001) but not the benchmarks' load of 16 (the command line alone caps --load at 10)."""
    from lab01_cluster_sim.studies.timed import synthetic_jobs
    from lab01_cluster_sim.errors import InputError

    nodes, jobs = synthetic_jobs(100, 10, 0, None, 0.0, 16.0)
    assert (len(nodes), len(jobs)) == (10, 100)
    with pytest.raises(InputError, match=r"^--load must be >= 0.001, got 1e-300$"):
        synthetic_jobs(100, 10, 0, None, 0.0, 1e-300)
