"""The stories of lab02_device_plugin.node_life that chapter 8 and the lab notebook show:
each moment's node status and pod phases, computed by hand."""

from __future__ import annotations

import pytest

from lab02_device_plugin import node_life

pytestmark = pytest.mark.timeout(120)
GPU = "nvidia.com/gpu"


def test_restart_window_today():
    story = node_life.restart_window()
    steps = [(m.capacity, m.allocatable) for m in story.moments]
    # 2 GPUs; the plugin stops: capacity kept, allocatable 0; the kubelet restarts: both 0
    # until the plugin registers again (readCheckpoint's empty endpoint); then 2 and 2.
    assert steps == [({GPU: 2}, {GPU: 2}), ({GPU: 2}, {GPU: 0}), ({GPU: 0}, {GPU: 0}),
                     ({GPU: 0}, {GPU: 0}), ({GPU: 2}, {GPU: 2})]
    assert story.moments[-1].pods == {"train": ("Running", ""),
                                      "batch": ("Succeeded", "Completed"),
                                      "late": ("Failed", "UnexpectedAdmissionError")}
    assert any("Succeeded, not admitted again" in n for n in story.moments[2].notes)
    assert any("the kubelet never retries it" in n for n in story.moments[3].notes)


def test_restart_window_with_the_retry_option():
    story = node_life.restart_window(retry_admission_after=2.0)
    assert story.moments[3].pods["late"] == ("Pending", "AdmissionRetry")
    assert story.moments[-1].pods["late"] == ("Running", "")
    assert "The restart window (retry option: 2 s)" == story.lines()[0]


def test_mig_repartition():
    story = node_life.mig_repartition()
    one, two, three = (f"nvidia.com/mig-{p}" for p in ("1g.10gb", "2g.20gb", "3g.40gb"))
    assert story.moments[0].allocatable == {one: 2, two: 1, three: 1}
    # After SIGHUP: 7 x 1g.10gb; the retired profiles keep capacity 1 at allocatable 0 ...
    assert (story.moments[1].capacity, story.moments[1].allocatable) == (
        {one: 7, two: 1, three: 1}, {one: 7, two: 0, three: 0})
    # ... until the kubelet's 5-minute grace period has passed.
    assert (story.moments[2].capacity, story.moments[2].allocatable) == ({one: 7}, {one: 7})
    assert story.moments[1].notes == (
        "reload (SIGHUP): nvidia.com/mig-1g.10gb 2 -> 7 devices; nvidia.com/mig-2g.20gb "
        "removed (1 device); nvidia.com/mig-3g.40gb removed (1 device)",)


def test_unhealthy_gpu():
    story = node_life.unhealthy_gpu()
    # Xid 79: capacity 2, allocatable 1, and train keeps running.
    assert (story.moments[1].capacity, story.moments[1].allocatable) == ({GPU: 2}, {GPU: 1})
    assert story.moments[1].pods == {"train": ("Running", "")}
    # The scheduler counts train's request against the 1 allocatable GPU: 1 - 1 = 0 free,
    # so serve stays Pending though the healthy GPU is idle.
    assert story.moments[2].pods["serve"] == ("Pending", "FailedScheduling")
    assert story.moments[3].pods["train"] == ("Failed", "UnexpectedAdmissionError")
    assert "previously allocated devices are no longer healthy" in story.moments[3].notes[0]


def test_unslice_node_keeps_the_running_pods():
    """Workshop step 3.5 (ch10): time-slicing removed under four running pods."""
    story = node_life.unslice_node()
    four = {f"pod-{k}": ("Running", "") for k in range(1, 5)}
    # One H100 x 4 replicas: capacity = allocatable = 4, one replica per pod.
    assert (story.moments[0].capacity, story.moments[0].allocatable) == ({GPU: 4}, {GPU: 4})
    assert story.moments[0].pods == four
    # Default config: the plugin registers 1 device; nobody is evicted (kubernetes#60388)
    # and each pod keeps the replica ID it was given (::0 .. ::3).
    after = story.moments[1]
    assert (after.capacity, after.allocatable) == ({GPU: 1}, {GPU: 1})
    assert after.pods == four
    kept = [n for n in after.notes if " keeps " in n]
    assert [n.split(" keeps ")[0] for n in kept] == ["pod-1", "pod-2", "pod-3", "pod-4"]
    assert [n.rsplit("::", 1)[1] for n in kept] == ["0", "1", "2", "3"]
    assert len({n.split(" keeps ")[1].rsplit("::", 1)[0] for n in kept}) == 1  # one GPU
    assert any("nvidia.com/gpu 4 -> 1 device" in n for n in after.notes)
    # pod-5: allocatable 1 - 4 replicas still held = -3 < 1, so FailedScheduling.
    assert story.moments[2].pods == {**four, "pod-5": ("Pending", "FailedScheduling")}
    assert story.moments[2].notes == (
        "Schedule pod-5: not bound, Pending (FailedScheduling): 0/1 nodes are available: "
        "1 Insufficient nvidia.com/gpu.",)


def test_story_lines_are_the_same_on_every_run():
    assert node_life.mig_repartition().lines() == node_life.mig_repartition().lines()
    first, second = node_life.restart_window().lines(), node_life.restart_window().lines()
    assert first == second and not any("life-" in line for line in first)
