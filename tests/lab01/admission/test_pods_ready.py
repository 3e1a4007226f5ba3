"""Kueue's waitForPodsReady on the one engine: a gang admitted by quota whose pods cannot all
start within ``timeout`` is evicted (PodsReadyTimeout) and requeued no earlier than the
backoff delay (Kueue docs, "Setup All-or-nothing with ready Pods"; ``WaitForPodsReady`` and
``RequeuingStrategy`` in ``apis/config/v1beta2/configuration_types.go``). Hand-computed."""

from __future__ import annotations

from dataclasses import replace

import pytest

from conftest import REPO_ROOT
from lab01_cluster_sim.admission.backoff import RequeuingStrategy, WaitForPodsReady
from lab01_cluster_sim.admission.plugin import KueueAdmissionPlugin
from lab01_cluster_sim.model import JobState
from lab01_cluster_sim.scenario import ScenarioError, load_scenario
from lab01_cluster_sim.scenario.run import blockers
from lab01_cluster_sim.simulate import simulate

from .helpers import controller, gpu_cq, outcomes, wl

SCENARIO = REPO_ROOT / "scenarios" / "kueue-wait-for-pods-ready.yaml"


def _run(wfpr):
    """Run the example scenario's objects with ``wfpr`` (None: waitForPodsReady off)."""
    sc = load_scenario(SCENARIO)
    plugin = KueueAdmissionPlugin(sc.kueue.controller(), wait_for_pods_ready=wfpr)
    result = simulate(sc.nodes, sc.jobs, policy="best-fit", mode="gang", plugins=[plugin])
    return result, plugin


def test_reader_takes_wait_for_pods_ready_from_the_kueue_configuration():
    sc = load_scenario(SCENARIO)
    # timeout: 5m = 300 s; backoffBaseSeconds 60, backoffMaxSeconds 3600, no limit
    assert sc.kueue.wait_for_pods_ready == WaitForPodsReady(300.0, RequeuingStrategy(60.0, 3600.0, None), "Eviction")
    assert blockers(sc) == []


def test_gang_that_cannot_start_is_evicted_and_requeued_after_the_backoff():
    result, plugin = _run(load_scenario(SCENARIO).kueue.wait_for_pods_ready)
    gang, small = result.records["research/gang"], result.records["research/small"]
    # small: 1 GPU on a-0 from 0 to 700; the gang (2 x 4 GPUs) needs both nodes empty.
    assert (small.start_time, small.end_time) == (0.0, 700.0)
    events = [(d.time, d.outcome.value) for d in plugin.decisions if d.workload == "research/gang"]
    assert events == [
        (1.0, "Admitted"),      # deadline 1 + 300 = 301
        (301.0, "Evicted"),     # requeue 1: backoff 60 x 2**0 = 60 s -> 361
        (361.0, "Admitted"),    # deadline 361 + 300 = 661
        (661.0, "Evicted"),     # requeue 2: backoff 60 x 2**1 = 120 s -> 781 (small ended at 700)
        (781.0, "Admitted"),    # placed at once: a-0 and a-1 are empty
    ]
    assert "requeued at t=781s (backoff 120 s, requeue 2)" in plugin.decisions[4].reason
    assert (gang.start_time, gang.end_time) == (781.0, 881.0)    # 781 + 100
    assert gang.preemptions == 0          # never ran: evicted from the placement queue
    assert plugin.controller.workloads["research/gang"].evictions == 2


def test_without_wait_for_pods_ready_the_gang_starts_when_the_node_frees():
    result, plugin = _run(None)
    gang = result.records["research/gang"]
    # admitted at 1, waits in the placement queue until small ends at 700: 700..800
    assert (gang.start_time, gang.end_time) == (700.0, 800.0)
    assert [d.outcome.value for d in plugin.decisions if d.workload == "research/gang"] == ["Admitted"]


def test_backoff_limit_count_deactivates_the_workload():
    wfpr = WaitForPodsReady(300.0, RequeuingStrategy(60.0, 3600.0, backoff_limit_count=1))
    result, plugin = _run(wfpr)
    gang = result.records["research/gang"]
    # 301: requeue 1 (<= limit 1): back at 361; 661: requeue 2 > 1: deactivated
    assert [(d.time, d.outcome.value) for d in plugin.decisions if d.workload == "research/gang"] == [
        (1.0, "Admitted"), (301.0, "Evicted"), (361.0, "Admitted"), (661.0, "Evicted"), (661.0, "Rejected")]
    assert gang.state is JobState.REJECTED
    assert "deactivated (backoffLimitCount 1 reached)" in gang.reason
    assert result.records["research/small"].end_time == 700.0


def test_a_short_timeout_with_a_long_backoff_is_capped_by_backoff_max():
    # timeout 100, base 60, max 90: evictions at 101 (+60 -> 161), 261 (+min(120, 90) = 90 -> 351),
    # 451 (+min(240, 90) = 90 -> 541), 641 (+90 -> 731); small ends at 700; admitted 731, runs to 831.
    wfpr = WaitForPodsReady(100.0, RequeuingStrategy(60.0, 90.0))
    result, plugin = _run(wfpr)
    evictions = [d.time for d in plugin.decisions if d.workload == "research/gang" and d.outcome.value == "Evicted"]
    assert evictions == [101.0, 261.0, 451.0, 641.0]
    assert (result.records["research/gang"].start_time, result.records["research/gang"].end_time) == (731.0, 831.0)


def test_controller_holds_a_requeued_workload_until_its_backoff_ends():
    c = controller([gpu_cq("a", ("a100", 4), cohort=None)])
    c.submit(wl("w", "a", 4, t=0.0), 0.0)
    assert outcomes(c.schedule(0.0)) == [("w", "Admitted")]
    c.evicted("w", 100.0, requeue_at=160.0)
    assert c.schedule(159.0) == []                          # inadmissible during the backoff
    assert c.workloads["w"].reason == "requeued at t=160s (backoff after PodsReadyTimeout)"
    assert outcomes(c.schedule(160.0)) == [("w", "Admitted")]


@pytest.mark.parametrize("order_time,first", [(100.0, "new"), (None, "old")])
def test_requeuing_timestamp_eviction_queues_by_eviction_time(order_time, first):
    # quota 4 GPUs; old (t=0) admitted, new (t=10) pending. old is evicted at 100 and requeued
    # at once: with timestamp Eviction it queues by 100 > 10 (new first), with Creation by 0.
    c = controller([gpu_cq("a", ("a100", 4), cohort=None)])
    c.submit(wl("old", "a", 4, t=0.0), 0.0)
    c.submit(wl("new", "a", 4, t=10.0), 10.0)
    c.schedule(10.0)
    c.evicted("old", 100.0, order_time=order_time)
    second = {"new": "old", "old": "new"}[first]
    assert outcomes(c.schedule(100.0)) == [(first, "Admitted"), (second, "Pending")]


def _config(tmp_path, body: str):
    text = SCENARIO.read_text().replace(
        "waitForPodsReady:\n  timeout: 5m\n  requeuingStrategy:\n    timestamp: Eviction\n"
        "    backoffBaseSeconds: 60\n    backoffMaxSeconds: 3600\n", body)
    p = tmp_path / "s.yaml"
    p.write_text(text)
    return p


def test_block_admission_is_named_as_not_modelled(tmp_path):
    sc = load_scenario(_config(tmp_path, "waitForPodsReady:\n  timeout: 5m\n  blockAdmission: true\n"))
    assert any("waitForPodsReady.blockAdmission (sequential admission) is not modelled" in b for b in blockers(sc))


def test_misspelt_and_missing_fields_are_one_line_errors(tmp_path):
    with pytest.raises(ScenarioError) as exc:
        load_scenario(_config(tmp_path, "waitForPodsReady:\n  timeout: 5m\n  requeuingStrategy: {backofBaseSeconds: 6}\n"))
    assert "backofBaseSeconds" in str(exc.value) and "\n" not in str(exc.value)
    with pytest.raises(ScenarioError) as exc:
        load_scenario(_config(tmp_path, "waitForPodsReady:\n  blockAdmission: false\n"))
    assert "timeout" in str(exc.value)


def test_wait_for_pods_ready_refuses_bad_values():
    with pytest.raises(Exception, match="timestamp"):
        replace(WaitForPodsReady(), timestamp="Admission")
