"""Graceful termination beyond priority preemption: a workload that Kueue evicts, or whose
node is drained, keeps its GPUs (and, for Kueue, its quota) for its pods'
``terminationGracePeriodSeconds``; the preemptor waits for it (issue 17, section 3)."""

from __future__ import annotations

import csv
import shutil

import pytest

from conftest import REPO_ROOT
from lab01_cluster_sim.cli import main
from lab01_cluster_sim.lifecycle import NodeEvents
from lab01_cluster_sim.model import TERMINATION_GRACE, Job, Node
from lab01_cluster_sim.simulate import simulate


def _rows(path, name):
    with open(path / name) as fh:
        return list(csv.DictReader(fh))


def test_kueue_reclaim_waits_for_the_victims_grace_period(tmp_path, capsys):
    # scenarios/kueue-borrowing with terminationGracePeriodSeconds: 120 on every pod. At 1800
    # b-train-0 reclaims team-b's quota: a-train-3 is evicted, but its pods hold 4 GPUs and
    # team-a's quota until 1800 + 120 = 1920. Kueue clears the quota reservation once the
    # Job's pods are gone (the job reconciler of pkg/controller/jobframework stops the Job and
    # unsets QuotaReserved when no pod is active), so b-train-0 stays Preempting till 1920 and
    # runs 1920..5520. a-train-3 is requeued at 1920 and readmitted at 3600 (a-train-0 ends):
    # "wait time since queued was 3600 - 1920 = 1680s". Without the grace period: 1800..5400.
    scenario = tmp_path / "grace"
    shutil.copytree(REPO_ROOT / "scenarios" / "kueue-borrowing", scenario)
    workload = scenario / "workload.yaml"
    workload.write_text(workload.read_text().replace(
        "    spec:\n      restartPolicy: Never\n",
        "    spec:\n      terminationGracePeriodSeconds: 120\n      restartPolicy: Never\n"))
    assert main(["run", str(scenario), "--output", str(tmp_path / "out"), "--quiet"]) == 0
    capsys.readouterr()
    jobs = {r["job"]: r for r in _rows(tmp_path / "out", "jobs.csv")}
    assert (jobs["team-b/b-train-0"]["start"], jobs["team-b/b-train-0"]["end"]) == ("1920.0", "5520.0")
    decisions = [(r["time"], r["workload"], r["outcome"]) for r in _rows(tmp_path / "out", "admission.csv")]
    assert ("1800.0", "team-a/a-train-3", "Evicted") in decisions
    assert ("1800.0", "team-b/b-train-0", "Preempting") in decisions
    assert ("1920.0", "team-b/b-train-0", "Admitted") in decisions
    readmitted = [r["reason"] for r in _rows(tmp_path / "out", "admission.csv")
                  if (r["time"], r["workload"], r["outcome"]) == ("3600.0", "team-a/a-train-3", "Admitted")]
    assert readmitted == ["Quota reserved in ClusterQueue team-a, wait time since queued was 1680s"]


@pytest.mark.parametrize("grace,c_start", [(30.0, 40.0), (None, 10.0)])
def test_drain_keeps_the_gpus_for_the_grace_period(grace, c_start):
    # n0 and n1, 2 GPUs each. Gang 'g' (2 workers x 2 GPUs, 1000 s) on n0 + n1 from 0; 'c' (2 GPUs,
    # t=5) waits. t=10: n0 is drained (kubectl drain evicts through the Eviction API, which
    # honours terminationGracePeriodSeconds): g stops, but with a 30 s grace its worker on n1
    # holds n1's GPUs until 40, so c starts at 40 (at 10 without a grace period). g, requeued
    # ahead of c, cannot gather two nodes while n0 is cordoned and is skipped (fifo-skip).
    nodes = [Node(f"n{i}", "H100", 2, 8000, 64_000) for i in range(2)]
    gpu = {"gpu_milli": 1000, "cpu_milli": 1000, "memory_mib": 1024}
    extras = {TERMINATION_GRACE: grace} if grace is not None else {}
    jobs = [Job("g", 0, 1000, 2, workers=2, extras=extras, **gpu), Job("c", 5, 50, 2, **gpu)]
    r = simulate(nodes, jobs, discipline="fifo-skip", plugins=[NodeEvents([(10, "n0", "drain")])]).records
    assert r["g"].preemptions == 1
    assert r["c"].start_time == c_start
