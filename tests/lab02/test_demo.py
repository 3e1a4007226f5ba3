"""``python -m lab02_device_plugin demo``: the seed lab's flow, end to end over real sockets."""

from __future__ import annotations

import threading

import pytest

from lab02_device_plugin.cli import main
from lab02_device_plugin.commands.demo import config_for, run_demo, summary
from lab02_device_plugin.errors import InputError

pytestmark = pytest.mark.timeout(120)


def _our_threads() -> set[str]:
    return {t.name for t in threading.enumerate()
            if t.name.startswith(("ListAndWatch", "kubelet-watch"))}


def test_four_pods_share_one_gpu_and_the_fifth_is_pending():
    before = _our_threads()
    result = run_demo(replicas=4, pods=5, say=lambda line: None)
    admitted = [r for r in result.results if r.admitted]
    # 1 GPU x 4 replicas = 4 units: pods 1-4 run, pod 5 waits.
    assert [r.pod for r in admitted] == ["pod-1", "pod-2", "pod-3", "pod-4"]
    assert sorted(r.devices["cuda"]["nvidia.com/gpu"][0] for r in admitted) == [
        f"{result.gpu_uuid}::{n}" for n in range(4)]
    # All four see the same physical GPU.
    assert {r.containers["cuda"].envs["NVIDIA_VISIBLE_DEVICES"] for r in admitted} == {result.gpu_uuid}
    fifth = result.results[4]
    assert (fifth.admitted, fifth.phase) == (False, "Pending")
    assert "requested number of devices unavailable for nvidia.com/gpu. Requested: 1, Available: 0" in fifth.message
    assert result.capacity == 4 and result.allocatable == 4
    # The narration shows registration, the snapshot and one Allocate per admitted pod.
    assert any("Register nvidia.com/gpu from nvidia-gpu.sock: OK" in l for l in result.lines)
    assert any("ListAndWatch nvidia.com/gpu: 4 devices, 4 healthy" in l for l in result.lines)
    assert sum("kubelet | Allocate pod-" in l for l in result.lines) == 4
    assert _our_threads() <= before  # stream and watcher threads are gone


def test_caveat_is_printed_plainly():
    text = "\n".join(summary(run_demo(say=lambda line: None)))
    assert "Allocation is not isolation" in text
    for shared in ("share its memory", "share its faults", "share its time",
                   "Per-pod GPU metrics are lost"):
        assert shared in text


def test_demo_cleans_up_its_directory(tmp_path):
    work = tmp_path / "w"
    work.mkdir()
    run_demo(replicas=2, pods=3, say=lambda line: None, workdir=str(work))
    assert list(work.iterdir()) == []


def test_replicas_one_means_no_sharing():
    assert "sharing" not in config_for(1)
    result = run_demo(replicas=1, pods=2, say=lambda line: None)
    # 1 unit: pod-1 gets the whole GPU (ID without a replica suffix), pod-2 waits.
    assert result.results[0].devices["cuda"]["nvidia.com/gpu"] == [result.gpu_uuid]
    assert not result.results[1].admitted


def test_demo_command(capsys):
    assert main(["demo", "--quiet", "--replicas", "3", "--pods", "4"]) == 0
    out = capsys.readouterr().out
    # 3 running rows + 1 pending row
    assert out.count(" Running ") == 3 and out.count(" Pending ") == 1
    assert "Allocation is not isolation" in out


def test_demo_rejects_bad_numbers():
    with pytest.raises(InputError, match="at least 1"):
        run_demo(replicas=0, pods=1, say=lambda line: None)
    with pytest.raises(SystemExit):
        main(["demo", "--pods", "0"])
