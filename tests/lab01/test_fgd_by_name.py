"""FGD works by name everywhere (simulate, gang-demo, the library), not only in compare."""

from __future__ import annotations

import pytest

from lab01_cluster_sim.cli import main
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.fragmentation import TargetWorkload
from lab01_cluster_sim.model import Job, JobState, Node
from lab01_cluster_sim.registry import get_policy, make_policy, policy_names
from lab01_cluster_sim.simulate import simulate


def _case():
    # one node, 1 GPU; two half-GPU jobs of 10 s at t=0: they share the GPU and both end at t=10.
    nodes = [Node("n0", "G2", 1, 8000, 8192)]
    jobs = [Job(f"j{i}", 0.0, 10.0, 1, 500, 1000, 1024) for i in range(2)]
    return nodes, jobs


def test_simulate_fgd_by_name_builds_the_target_from_the_jobs():
    nodes, jobs = _case()
    r = simulate(nodes, jobs, policy="fgd")
    assert [rec.state for rec in r.records.values()] == [JobState.COMPLETED] * 2
    assert [rec.end_time for rec in r.records.values()] == [10.0, 10.0]
    # same as handing it the target built from the job list explicitly
    explicit = simulate(nodes, jobs, policy=make_policy("fgd", TargetWorkload.from_jobs(jobs)))
    assert r.jobs_table() == explicit.jobs_table()


def test_get_policy_fgd_without_target_is_an_input_error():
    with pytest.raises(InputError, match="needs the target workload"):
        get_policy("fgd")


def test_every_listed_policy_runs_by_name():
    nodes, jobs = _case()
    for name in policy_names():
        r = simulate(nodes, jobs, policy=name)
        assert r.summary.states["completed"] == 2, name


def test_cli_simulate_and_gang_demo_with_fgd(capsys):
    assert main(["simulate", "--policy", "fgd", "--jobs", "50", "--nodes", "4", "--quiet"]) == 0
    assert main(["gang-demo", "--policy", "fgd"]) == 0
    out = capsys.readouterr().out
    assert "policy fgd" in out and "both complete; makespan 200 s" in out
