"""The GPU choice inside a node, pack or spread, as an option of its own
(``Scenario.spec.simulation.gpuSchedulerPolicy``, HAMi's ``gpuSchedulerPolicy`` values;
lab01_cluster_sim/policies/gpu_pick.py). Hand-computed in scenarios/gpu-pick-pack-or-spread.yaml."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import REPO_ROOT
from lab01_cluster_sim.cluster import ClusterState, Request
from lab01_cluster_sim.model import Node
from lab01_cluster_sim.policies.base import pick_best_gpus
from lab01_cluster_sim.policies.gpu_pick import GpuPick, pick_spread_gpus
from lab01_cluster_sim.registry import get_policy, policy_for_jobs
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.scenario import ScenarioError, load_scenario
from lab01_cluster_sim.scenario.run import blockers, run_scenario
from lab01_cluster_sim.simulate import simulate

SCENARIO = REPO_ROOT / "scenarios" / "gpu-pick-pack-or-spread.yaml"


def _run(pick):
    sc = load_scenario(SCENARIO)
    policy = "best-fit" if pick is None else GpuPick(policy_for_jobs("best-fit", sc.jobs), pick)
    result = simulate(sc.nodes, sc.jobs, policy=policy, mode="gang")
    return result.records, {row["job"]: row["placements"] for row in result.jobs_table()}


def test_spread_leaves_no_whole_gpu_and_the_4_gpu_job_waits():
    records, placed = _run("spread")
    # infer-i (500 milli-GPU) goes to the least used GPU: GPU i
    assert [placed[f"infer-{i}"] for i in range(8)] == [[f"h100-0:{i}"] for i in range(8)]
    # GPUs 0..3 are whole again when infer-0..3 end at 1000..1003: train runs 1003..1103
    train = records["train"]
    assert (train.start_time, train.end_time) == (1003.0, 1103.0)
    assert placed["train"] == ["h100-0:0,1,2,3"]


def test_binpack_keeps_four_gpus_whole_and_the_4_gpu_job_starts_at_once():
    records, placed = _run("binpack")
    # two halves fill a GPU: infer-i on GPU i // 2
    assert [placed[f"infer-{i}"] for i in range(8)] == [[f"h100-0:{i // 2}"] for i in range(8)]
    train = records["train"]
    assert (train.start_time, train.end_time) == (10.0, 110.0)
    assert placed["train"] == ["h100-0:4,5,6,7"]


def test_without_the_option_best_fit_keeps_its_own_pick():
    # best-fit's own pick is the tightest fit ("best"), i.e. binpack: same start as binpack
    assert _run(None)[0]["train"].start_time == 10.0


def test_the_two_picks_on_one_row():
    state = ClusterState([Node("n", "H100", 4, 64_000, 65_536)])
    state.gpu_free[0, :4] = [1000, 500, 300, 1000]
    half = Request(1000, 1024, 1, 400)
    assert pick_best_gpus(state, half, 0) == (1,)      # least free share >= 400: 500 on GPU 1
    assert pick_spread_gpus(state, half, 0) == (0,)    # most free: 1000 on GPUs 0 and 3, lowest index
    whole = Request(1000, 1024, 2, 1000)
    assert pick_spread_gpus(state, whole, 0) == (0, 3)  # fully free GPUs, lowest first
    pol = GpuPick(get_policy("first-fit"), "spread")
    assert pol.pick_gpus(state, half, 0, np.random.default_rng(0)) == (0,)
    assert pol.name == "first-fit/gpu-spread"
    with pytest.raises(InputError, match="gpuSchedulerPolicy"):
        GpuPick(pol.policy, "pack")


def test_scenario_run_reports_the_pick(tmp_path):
    result = run_scenario(load_scenario(SCENARIO), tmp_path / "out")
    assert result.rows[0]["gpu_pick"] == "spread"
    assert result.rows[0]["makespan_s"] == 1103.0   # train ends at 1003 + 100


def test_misspelt_value_and_per_pod_annotation(tmp_path):
    text = SCENARIO.read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("gpuSchedulerPolicy: spread", "gpuSchedulerPolicy: pack"))
    with pytest.raises(ScenarioError, match="gpuSchedulerPolicy"):
        load_scenario(bad)
    per_pod = tmp_path / "pod.yaml"
    per_pod.write_text(text.replace('lab01.course/gpu-milli: "500"}', 'lab01.course/gpu-milli: "500", '
                                    'hami.io/gpu-scheduler-policy: binpack}', 1))
    assert any("hami.io/gpu-scheduler-policy is not modelled" in b for b in blockers(load_scenario(per_pod)))
