"""The package's lazy top-level exports, and the plain-number time formatting in messages."""

from __future__ import annotations

import subprocess
import sys

import lab01_cluster_sim
from lab01_cluster_sim.model import format_seconds


def test_top_level_exports_are_the_library_functions():
    from lab01_cluster_sim import Job, Node, compare_policies, get_policy, run_replay, run_simulation
    from lab01_cluster_sim.replay import compare, replay
    from lab01_cluster_sim.simulate import simulate

    assert (run_simulation, run_replay, compare_policies) == (simulate, replay, compare)
    # the modules keep their names: no clash with the functions
    import lab01_cluster_sim.simulate as sim_module
    assert callable(run_simulation) and not callable(sim_module)
    # and they work: one 1-GPU job of 5 s on one node ends at t=5
    r = run_simulation([Node("n0", "G2", 1, 8000, 8192)], [Job("j", 0.0, 5.0, 1, 1000, 1000, 1024)])
    assert r.records["j"].end_time == 5.0
    assert get_policy("best-fit").name == "best-fit"
    assert set(lab01_cluster_sim.__all__) <= set(dir(lab01_cluster_sim))


def test_import_is_lazy():
    code = "import sys, lab01_cluster_sim; print('lab01_cluster_sim.replay' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout
    assert out.strip() == "False"


def test_format_seconds_never_uses_an_exponent():
    assert format_seconds(1558380.0) == "1558380"      # :g would give 1.55838e+06
    assert format_seconds(2320.7670000000003) == "2320.767"
    assert format_seconds(0.0) == "0" and format_seconds(float("inf")) == "inf"


def test_jobs_table_times_are_rounded_to_ms():
    from lab01_cluster_sim import Job, Node, run_simulation

    # submit 0.1 + 0.2 = 0.30000000000000004 s; runs 1.1 s -> ends 1.4000000000000001 s
    r = run_simulation([Node("n0", "G2", 1, 8000, 8192)], [Job("j", 0.1 + 0.2, 1.1, 1, 1000, 1000, 1024)])
    (row,) = r.jobs_table()
    assert (row["submit"], row["end"], row["jct"]) == (0.3, 1.4, 1.1)


def test_huge_quantities_are_input_errors_not_overflow():
    # 10**20 GPUs once reached numpy and raised OverflowError (exit 3); now the model refuses it
    import pytest

    from lab01_cluster_sim import InputError, Job, Node

    with pytest.raises(InputError, match="job 'x': gpus_per_worker must be <= 1,000,000"):
        Job("x", 0.0, 10.0, 10**20, 1000, 100, 100)
    with pytest.raises(InputError, match="node 'a': cpu_milli must be <= 1,099,511,627,776"):
        Node("a", "G2", 8, 10**30, 1)
