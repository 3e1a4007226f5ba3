"""``karpenter.sh/do-not-disrupt: "true"`` on a pod blocks consolidation of its node (Karpenter
docs, "Well-Known Annotations" and "Disruption", Pod-Level Controls). Hand-computed in
scenarios/autoscaler-do-not-disrupt.yaml: nodes ready 75 s after launch, a 1 GiB image in
1024/128 + 1024/256 = 12 s, consolidateAfter 60 s, g5.12xlarge $5.672/h."""

from __future__ import annotations

import csv

import pytest

from conftest import REPO_ROOT
from lab01_cluster_sim.scenario import load_scenario
from lab01_cluster_sim.scenario.run import blockers, run_scenario

SCENARIO = REPO_ROOT / "scenarios" / "autoscaler-do-not-disrupt.yaml"
ANNOTATION = ', karpenter.sh/do-not-disrupt: "true"}'


def _run(tmp_path, text: str):
    path = tmp_path / "s.yaml"
    path.write_text(text)
    sc = load_scenario(path)
    assert blockers(sc) == []
    result = run_scenario(sc, tmp_path / "out")
    with open(tmp_path / "out" / "nodes.csv") as fh:
        nodes = {r["node"]: (float(r["terminated_s"]), r["why"]) for r in csv.DictReader(fh)}
    with open(tmp_path / "out" / "pods.csv") as fh:
        pods = {r["pod"]: (r["node"], float(r["started_s"]), float(r["finished_s"]), int(r["disruptions"]))
                for r in csv.DictReader(fh)}
    return result.rows[0], nodes, pods


def test_reader_keeps_the_annotation():
    sc = load_scenario(SCENARIO)
    assert {j.job_id: bool(j.extras.get("do_not_disrupt")) for j in sc.jobs} == {"a": True, "c": False, "b": True}


def test_annotated_pods_keep_their_underutilized_nodes(tmp_path):
    summary, nodes, pods = _run(tmp_path, SCENARIO.read_text())
    # a on gpu-0001 87..2087, b on gpu-0002 187..2187: no consolidation while they run
    assert pods["a"] == ("gpu-g5-0001", 87.0, 2087.0, 0)
    assert pods["b"] == ("gpu-g5-0002", 187.0, 2187.0, 0)
    # each node removed empty consolidateAfter (60 s) after its last pod ends
    assert nodes == {"gpu-g5-0001": (2147.0, "consolidation: empty"), "gpu-g5-0002": (2247.0, "consolidation: empty")}
    # (2147 - 0) + (2247 - 100) = 4294 node-s x $5.672/h = $6.7654
    assert summary["cost_dollars"] == pytest.approx(4294 / 3600 * 5.672)
    assert summary["disruptions"] == 0


def test_without_the_annotation_the_underutilized_node_is_consolidated(tmp_path):
    summary, nodes, pods = _run(tmp_path, SCENARIO.read_text().replace(ANNOTATION, "}"))
    # b bound at 175 (gpu-0002 ready); at 175 + 60 = 235 it fits on gpu-0001 (c ended at 187,
    # 3 GPUs free): evicted, gpu-0002 removed; b runs again 235..2235 on gpu-0001
    assert nodes["gpu-g5-0002"] == (235.0, "consolidation: underutilized")
    assert pods["b"] == ("gpu-g5-0001", 235.0, 2235.0, 1)
    assert nodes["gpu-g5-0001"] == (2295.0, "consolidation: empty")     # 2235 + 60
    # (2295 - 0) + (235 - 100) = 2430 node-s x $5.672/h = $3.8286
    assert summary["cost_dollars"] == pytest.approx(2430 / 3600 * 5.672)
    assert summary["disruptions"] == 1


def test_only_the_unprotected_node_is_consolidated(tmp_path):
    # annotation on b only: at 235 gpu-0002 is skipped (b protected); gpu-0001's check comes at
    # 187 + 60 = 247 (c left at 187): a fits on gpu-0002 (3 free): a evicted, gpu-0001 removed;
    # a runs 247..2247 on gpu-0002; gpu-0002 empty at 2247 (b ended 2187): removed at 2307
    text = SCENARIO.read_text().replace(ANNOTATION, "}", 1)
    summary, nodes, pods = _run(tmp_path, text)
    assert nodes == {"gpu-g5-0001": (247.0, "consolidation: underutilized"),
                     "gpu-g5-0002": (2307.0, "consolidation: empty")}
    assert pods["a"] == ("gpu-g5-0002", 247.0, 2247.0, 1)
    assert pods["b"] == ("gpu-g5-0002", 187.0, 2187.0, 0)


def test_a_duration_value_is_named_as_not_modelled(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.read_text().replace('karpenter.sh/do-not-disrupt: "true"', 'karpenter.sh/do-not-disrupt: 5m', 1))
    assert any("only \"true\" is modelled" in b for b in blockers(load_scenario(path)))
