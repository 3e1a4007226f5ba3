"""``python -m lab01_cluster_sim run``: the example scenarios run from a fresh clone with the
hand-worked results their comments state; what cannot run yet is refused in one line."""

from __future__ import annotations

import csv
import json

import pytest

from conftest import REPO_ROOT
from lab01_cluster_sim.cli import main

SCENARIOS = REPO_ROOT / "scenarios"


def _jobs(out):
    with open(out / "jobs.csv") as fh:
        return {r["job"]: r for r in csv.DictReader(fh)}


def _run(capsys, *args):
    status = main(["run", *args, "--quiet"])
    cap = capsys.readouterr()
    return status, cap.out, cap.err


def test_gang_textbook(tmp_path, capsys):
    status, out, _ = _run(capsys, str(SCENARIOS / "gang-textbook.yaml"), "--output", str(tmp_path))
    assert status == 0
    jobs = _jobs(tmp_path)
    # train-a runs 1..101, train-b 101..201; the inference service never ends
    assert (jobs["train-a"]["start"], jobs["train-a"]["end"]) == ("1.0", "101.0")
    assert (jobs["train-b"]["start"], jobs["train-b"]["end"]) == ("101.0", "201.0")
    assert jobs["inference"]["state"] == "running"
    assert f"wrote {tmp_path}/: scenario.json, summary.json, summary.csv, jobs.csv, timeline.png" in out
    for name in ("scenario.json", "summary.json", "summary.csv", "jobs.csv", "timeline.png"):
        assert (tmp_path / name).stat().st_size > 0
    summary = json.loads((tmp_path / "scenario.json").read_text())
    assert summary["objects"] == {"Scenario": 1, "Node": 4, "Job": 3} and summary["kind"] == "timed"


def test_gang_textbook_naive_deadlocks(tmp_path, capsys):
    status, out, _ = _run(capsys, str(SCENARIOS / "gang-textbook-naive.yaml"), "--output", str(tmp_path))
    assert status == 0
    assert "stopped at t=1 s: deadlock" in out
    assert "train-a: 6/8 workers bound" in out and "train-b: 6/8 workers bound" in out


def test_fifo_head_of_line_blocking(tmp_path, capsys):
    assert _run(capsys, str(SCENARIOS / "disciplines-fifo-blocking.yaml"), "--output", str(tmp_path))[0] == 0
    jobs = _jobs(tmp_path)
    # small-1 (1 GPU, t=2) waits behind head-4 until running-6 ends at 500
    assert (jobs["head-4"]["start"], jobs["small-1"]["start"]) == ("500.0", "500.0")


def test_priority_preemption(tmp_path, capsys):
    assert _run(capsys, str(SCENARIOS / "disciplines-priority.yaml"), "--output", str(tmp_path))[0] == 0
    jobs = _jobs(tmp_path)
    # urgent preempts batch at 10 and runs 10..110; batch restarts at 110 and ends at 1110
    assert (jobs["urgent"]["start"], jobs["urgent"]["end"]) == ("10.0", "110.0")
    assert jobs["batch"]["end"] == "1110.0"


def test_scoring_packs_gpus(tmp_path, capsys):
    assert _run(capsys, str(SCENARIOS / "scoring-pack-gpus.yaml"), "--output", str(tmp_path))[0] == 0
    jobs = _jobs(tmp_path)
    assert {jobs[f"small-{i}"]["placements"].split(":")[0] for i in range(4)} == {"gpu-0"}
    assert (jobs["whole-node"]["start"], jobs["whole-node"]["placements"]) == ("10.0", "gpu-1:0,1,2,3,4,5,6,7")


def test_topology_wait_versus_span(tmp_path, capsys):
    assert _run(capsys, str(SCENARIOS / "topology-islands.yaml"), "--output", str(tmp_path))[0] == 0
    rows = json.loads((tmp_path / "summary.json").read_text())
    # train-16 waits 300-60 = 240 s (spans), 900-60 = 840 s (spans), 1200-60 = 1140 s (one rack):
    # mean wait over the 4 jobs = 60, 210, 285 s
    assert [r["mean_wait_s"] for r in rows] == [60.0, 210.0, 285.0]
    assert [r["spanning_jobs"] for r in rows] == [1, 1, 0]


def test_autoscaler_karpenter(tmp_path, capsys):
    status, out, _ = _run(capsys, str(SCENARIOS / "autoscaler-karpenter.yaml"), "--output", str(tmp_path))
    assert status == 0
    with open(tmp_path / "nodes.csv") as fh:
        nodes = list(csv.DictReader(fh))
    # six g5.xlarge launched 30 s apart (ready 75 s later); the g5.12xlarge only once two empty
    # nodes were consolidated (the 8-GPU limit), at 1317 s
    assert [n["type"] for n in nodes] == ["g5.xlarge"] * 6 + ["g5.12xlarge"]
    assert [float(n["launched_s"]) for n in nodes[:6]] == [0, 30, 60, 90, 120, 150]
    assert float(nodes[6]["launched_s"]) == 1317.0
    assert "7 pods finished" in out


def test_policies_synthetic_compares_four_policies(tmp_path, capsys):
    status, out, _ = _run(capsys, str(SCENARIOS / "policies-synthetic.yaml"), "--output", str(tmp_path))
    assert status == 0
    rows = json.loads((tmp_path / "summary.json").read_text())
    assert [r["policy"] for r in rows] == ["first-fit", "best-fit", "worst-fit", "fgd"]
    assert all(r["jobs"] == 400 for r in rows)


@pytest.mark.slow
def test_alibaba_replay(tmp_path, capsys, alibaba_csv):
    status, _, err = _run(capsys, str(SCENARIOS / "policies-alibaba-replay.yaml"), "--output", str(tmp_path))
    assert status == 0, err
    rows = json.loads((tmp_path / "summary.json").read_text())
    assert [r["policy"] for r in rows][:2] == ["random", "dot-prod"]


@pytest.mark.parametrize("folder", ["kueue-borrowing", "kueue-static-partition"])
def test_kueue_scenarios_are_refused_in_one_line_until_the_engine(tmp_path, capsys, folder):
    status, out, err = _run(capsys, str(SCENARIOS / folder), "--output", str(tmp_path))
    assert status == 1
    assert err.count("\n") == 1
    assert err.startswith(f"error: {SCENARIOS / folder}: cannot execute yet (1): Kueue admission (ClusterQueue/team-a")
    assert not (tmp_path / "summary.json").exists()      # nothing half-run
    status, out, _ = _run(capsys, str(SCENARIOS / folder), "--check")
    assert status == 0 and "would not run yet (1):" in out


def test_misspelt_field_exits_1_naming_file_object_and_field(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text((SCENARIOS / "disciplines-fifo-blocking.yaml").read_text().replace("discipline: fifo",
                                                                                       "disciplin: fifo"))
    status, out, err = _run(capsys, str(bad), "--output", str(tmp_path / "out"))
    assert status == 1 and out == ""
    assert err == (f"error: {bad}:12:5: Scenario/disciplines-fifo-blocking: spec.simulation.disciplin: unknown field "
                   "(did you mean 'discipline'? expected one of: comparePolicies, discipline, mode, policy, seed, "
                   "topology, until)\n")


def test_every_example_scenario_is_valid(capsys):
    examples = sorted(p for p in SCENARIOS.iterdir() if p.suffix == ".yaml" or p.is_dir())
    assert len(examples) >= 10
    for path in examples:
        status, out, err = _run(capsys, str(path), "--check")
        assert status == 0, err


def test_kueue_scenario_hands_an_admission_plugin_to_an_engine_that_takes_plugins(tmp_path, monkeypatch):
    # Wiring only: once simulate() takes plugins= (the one engine), run passes a
    # KueueAdmissionPlugin built from the scenario's Kueue objects. The engine itself is
    # stood in for by the current simulate (which ignores the plugin).
    import lab01_cluster_sim.simulate as simulate_module
    from lab01_cluster_sim.admission.plugin import KueueAdmissionPlugin
    from lab01_cluster_sim.scenario import load_scenario, run_scenario

    real = simulate_module.simulate
    seen = []

    def engine_simulate(nodes, jobs, *args, plugins=(), **kwargs):
        seen.extend(plugins)
        return real(nodes, jobs, *args, **kwargs)

    monkeypatch.setattr(simulate_module, "simulate", engine_simulate)
    sc = load_scenario(SCENARIOS / "kueue-borrowing")
    result = run_scenario(sc, tmp_path)
    (plugin,) = seen
    assert isinstance(plugin, KueueAdmissionPlugin)
    assert sorted(plugin.controller.cluster_queues) == ["team-a", "team-b"]
    assert [r["cluster_queue"] for r in result.rows[0]["cluster_queues"]] == ["team-a", "team-b"]
