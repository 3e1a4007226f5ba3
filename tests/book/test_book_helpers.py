"""lab01_cluster_sim.book (the helpers chapters 6 and 7 call) and build_book's trace-cache rule."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from lab01_cluster_sim import book, shared_data
from lab01_cluster_sim.disciplines.preemption import CheckpointSpec
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.model import Job, Node

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
import build_book  # noqa: E402

ONE = dict(gpus_per_worker=1, gpu_milli=1000)


def test_shared_data_dir_follows_conftest_rule(monkeypatch, tmp_path):
    monkeypatch.delenv("COURSE_SHARED_DATA", raising=False)
    assert shared_data.shared_data_dir() == REPO.parent / "shared" / "data"   # beside the repository
    monkeypatch.setenv("COURSE_SHARED_DATA", str(tmp_path))
    assert shared_data.shared_data_dir() == tmp_path
    assert shared_data.alibaba_trace_dir() is None                            # no CSV there
    csv = tmp_path / "alibaba-gpu-2023" / "csv"
    csv.mkdir(parents=True)
    (csv / "openb_node_list_gpu_node.csv").write_text("sn,cpu_milli\n")
    assert shared_data.alibaba_trace_dir() == csv


def test_fit_steps_on_the_chapter_example():
    # 3 nodes x 4 GPUs, jobs of 2, 3, 1, 2 GPUs, then a 4-GPU job waits.
    # first-fit: J1 n0[0,1], J2 n1[0,1,2], J3 n0[2], J4 n2[0,1] -> free 1, 1, 2: 4 GPUs stranded.
    # best-fit:  J3 goes to n1 (fullest that fits), J4 to n0 -> free 0, 0, 4: nothing stranded.
    nodes = [Node(f"node-{i}", "A100", 4, 32_000, 262_144) for i in range(3)]
    big = Job("big", 0, 100, gpus_per_worker=4, gpu_milli=1000, cpu_milli=1000, memory_mib=1024)
    ff = book.fit_steps(nodes, [2, 3, 1, 2], "first-fit", big)
    assert len(ff) == 5 and ff[0].owners == () and ff[0].stranded == 0
    assert ff[-1].owners == ((0, 0, (0, 1)), (1, 1, (0, 1, 2)), (2, 0, (2,)), (3, 2, (0, 1)))
    assert ff[-1].stranded == 4
    bf = book.fit_steps(nodes, [2, 3, 1, 2], "best-fit", big)
    assert [o[1] for o in bf[-1].owners] == [0, 1, 1, 0]
    assert bf[-1].stranded == 0
    assert (bf[-1].gpu_free == 1000).sum(axis=1).tolist() == [0, 0, 4]
    with pytest.raises(InputError, match=r"sizes\[3\]"):
        book.fit_steps(nodes, [4, 4, 4, 1], "first-fit", big)


def test_compare_migration_hand_computed():
    # 2 nodes x 2 GPUs, best-fit: a (1000 s) n0, b (30 s) n0, c (1000 s) n1, d (30 s) n1.
    # b, d end at 31 and 33: one free GPU per node. Gang g (2 GPUs on one node) arrives at 40.
    # Without migration it waits until a ends at 1000: wait 960 s; 2 GPUs stranded over
    # [40, 1000), run ends at 1100 -> mean 2 x 960 / 1100 = 1.745.
    # With migration c moves to n0 at 40: lost 40 - 2 = 38 s since its start (checkpoint every
    # 100 s, none yet), overhead 10 + 20 s -> (38 + 30) x 1 GPU = 68 GPU-s = 0.01889 GPU-h;
    # g starts at once (wait 0), nothing stranded afterwards.
    nodes = [Node(f"n{i}", "A100", 2, 32000, 256000) for i in range(2)]
    jobs = [Job("a", 0, 1000, **ONE), Job("b", 1, 30, **ONE), Job("c", 2, 1000, **ONE), Job("d", 3, 30, **ONE),
            Job("g", 40, 100, gpus_per_worker=2, gpu_milli=1000)]
    base, mig = book.compare_migration(nodes, jobs, CheckpointSpec(100.0, 10.0, 20.0))
    assert (base.label, base.moves, base.cost_gpu_hours) == ("no migration", 0, 0.0)
    assert base.gang_mean_wait_s == 960.0
    assert base.mean_stranded_gpus == pytest.approx(2 * 960 / 1100)
    assert (mig.label, mig.moves, mig.defragmentations) == ("migration", 1, 1)
    assert mig.gang_mean_wait_s == 0.0 and mig.mean_stranded_gpus == 0.0
    assert mig.cost_gpu_hours == pytest.approx(68 / 3600)


def test_holdings_at_the_gang_demo():
    # Deadlock at t = 1: inference holds 1 GPU on each of 4 nodes, train-a and train-b 6 each.
    # Gang run at t = 1: inference 4 and train-a 8; train-b starts only at 101.
    from lab01_cluster_sim.commands.gang_demo import demo

    naive, gang = demo(out=io.StringIO())
    t = naive.deadlock.time
    assert t == 1

    def count(result):
        out: dict[str, int] = {}
        for job, _node, gpus in book.holdings_at(result, t):
            out[job] = out.get(job, 0) + len(gpus)
        return out

    assert count(naive) == {"inference": 4, "train-a": 6, "train-b": 6}
    assert count(gang) == {"inference": 4, "train-a": 8}
    assert "train-b" in {j for j, _, _ in book.holdings_at(gang, 101)}


def test_trace_cache_is_dropped_when_availability_changes(tmp_path):
    build = tmp_path / "_build"
    # first build: no cache yet, nothing to drop; the state is recorded
    assert build_book.sync_trace_cache(build, present=False, quiet=True) is False
    assert (build / ".trace_present").read_text().strip() == "0"
    (build / ".jupyter_cache").mkdir()
    assert build_book.sync_trace_cache(build, present=False, quiet=True) is False  # unchanged
    assert build_book.sync_trace_cache(build, present=True, quiet=True) is True    # trace appeared
    assert (build / ".trace_present").read_text().strip() == "1"


# -- scenario_outcomes: the scenarios chapters 10 and 11 run ------------------------------------
SCENARIOS = REPO / "scenarios"


def test_training_tier_gets_one_p5_per_eight_gpu_pod(tmp_path):
    # two pods of 8 GPUs, a p5.48xlarge has 8: two nodes; ready at 60 s boot + 15 s registration
    outcomes, blocked = book.scenario_outcomes(SCENARIOS / "capstone-training.yaml", tmp_path)
    assert blocked == []
    assert [(o.pod, o.status, o.instance_type) for o in outcomes] == [
        ("research/pretrain-7b-0", "Running", "p5.48xlarge"), ("research/pretrain-7b-1", "Running", "p5.48xlarge")]
    assert len({o.node for o in outcomes}) == 2


def test_scenario_outcomes_refuses_a_scenario_without_nodepool(tmp_path):
    with pytest.raises(InputError, match="expected a scenario with a NodePool"):
        book.scenario_outcomes(SCENARIOS / "gang-textbook.yaml", tmp_path)


def test_gfd_selector_stays_pending_on_a_karpenter_pool(tmp_path):
    # kubernetes-sigs/karpenter pkg/scheduling/requirements.go, Compatible: a label no instance
    # type defines "does not have known values"; the selector-free pod gets the cheapest fit
    outcomes, blocked = book.scenario_outcomes(SCENARIOS / "fleets-gfd-selector.yaml", tmp_path)
    assert blocked == []
    by_pod = {o.pod: o for o in outcomes}
    assert (by_pod["by-gfd-product"].status, by_pod["by-gfd-product"].node) == ("Pending", "")
    assert "known values" in by_pod["by-gfd-product"].reason
    assert by_pod["by-pool"].instance_type == "g6.xlarge"


def test_well_known_gpu_labels_select_instance_types(tmp_path):
    # gpu-name h100 -> only the p5.48xlarge; gpu-memory Gt 20000 -> g6.xlarge (L4, 22,888 MiB),
    # the cheapest such type, since the 1-GPU pod cannot join the 8-GPU pod's p5 claim
    outcomes, blocked = book.scenario_outcomes(SCENARIOS / "fleets-well-known-selector.yaml", tmp_path)
    assert blocked == []
    assert {o.pod: o.instance_type for o in outcomes} == {"h100-by-name": "p5.48xlarge", "big-gpu": "g6.xlarge"}


@pytest.mark.parametrize("name", ["capstone-paid-mig", "capstone-free-shared"])
def test_mig_and_shared_resources_launch_no_node(tmp_path, name):
    # Karpenter's AWS provider advertises nvidia.com/gpu only (aws/karpenter-provider-aws issue 1505)
    outcomes, blocked = book.scenario_outcomes(SCENARIOS / f"{name}.yaml", tmp_path)
    assert blocked == []
    assert outcomes and all(o.status == "Pending" and o.node == "" and o.reason for o in outcomes)
