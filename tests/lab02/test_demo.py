"""``python -m lab02_device_plugin demo``: the seed lab's flow, end to end over real sockets."""

from __future__ import annotations

import tempfile
import threading
from pathlib import Path

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
    # 4 allocatable - 4 allocated = 0 free < 1 requested: the scheduler never binds it.
    assert (fifth.admitted, fifth.phase, fifth.reason) == (False, "Pending", "FailedScheduling")
    assert fifth.message == "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."
    assert result.capacity == 4 and result.allocatable == 4
    # The narration shows registration, the snapshot and one Allocate per admitted pod.
    assert any("Register nvidia.com/gpu from nvidia-gpu.sock: OK" in l for l in result.lines)
    assert any("ListAndWatch nvidia.com/gpu: 4 devices, 4 healthy" in l for l in result.lines)
    assert sum("kubelet | Allocate pod-" in l for l in result.lines) == 4
    assert _our_threads() <= before  # stream and watcher threads are gone


def test_caveat_is_printed_plainly():
    lines = summary(run_demo(say=lambda line: None))
    text = "\n".join(lines)
    assert "Allocation is not isolation" in text
    for shared in ("share its memory", "share its faults", "share its time",
                   "Per-pod GPU metrics are lost"):
        assert shared in text
    # application Xids (those NVIDIA's plugin ignores: 13, 31, 43, 45, 68, 109) end only the
    # faulting process; device faults and resets (Xid 79, uncontained ECC) reach every pod
    assert "Xid 13, 31, 43, 45, 68, 109" in text and "Xid 79, an uncontained" in text
    assert "no fault isolation" in text
    assert "an Xid error or a reset on the card hits every pod" not in text
    # every line fits a 79-character terminal and the book's code column
    assert max(len(line) for line in lines) <= 79


def test_demo_cleans_up_its_directory():
    # a short folder: unix socket paths are limited to 107 bytes, and pytest's tmp_path under
    # pytest-xdist (.../popen-gw1/test_demo_cleans_up_its_direct0/) leaves too few of them
    with tempfile.TemporaryDirectory(prefix="dm-") as work:
        run_demo(replicas=2, pods=3, say=lambda line: None, workdir=work)
        assert list(Path(work).iterdir()) == []


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


def test_demo_rejects_bad_numbers(capsys):
    with pytest.raises(InputError, match=r"expected 1\.\.1000 and 1\.\.1000, got 0 and 1"):
        run_demo(replicas=0, pods=1, say=lambda line: None)
    # The tester's 99999999999999999999 pods ran forever; 100000 replicas hung 30 s.
    for argv in (["--pods", "0"], ["--pods", "99999999999999999999"], ["--pods", "1001"],
                 ["--replicas", "100000"], ["--replicas", "x"]):
        with pytest.raises(SystemExit) as exit_info:
            main(["demo", *argv])
        assert exit_info.value.code == 1
    err = capsys.readouterr().err
    assert "error: --pods: expected a whole number from 1 to 1000, got 99999999999999999999" in err
    assert "error: --replicas: expected a whole number from 1 to 1000, got 100000" in err


def test_demo_summary_says_which_pending_it_shows():
    text = "\n".join(summary(run_demo(replicas=1, pods=2, say=lambda line: None)))
    assert "scheduler never binds it" in text and "Event FailedScheduling" in text
    assert "Failed (UnexpectedAdmissionError)" in text  # the bound-by-hand case, named as such


def test_demo_gpu_uuid_depends_on_the_model():
    a100 = run_demo(replicas=1, pods=1, model="A100-40GB", say=lambda line: None)
    h100 = run_demo(replicas=1, pods=1, model="H100-80GB", say=lambda line: None)
    again = run_demo(replicas=1, pods=1, model="H100-80GB", say=lambda line: None)
    assert a100.gpu_uuid != h100.gpu_uuid and h100.gpu_uuid == again.gpu_uuid


def test_demo_fails_at_once_with_one_line_when_registration_fails(monkeypatch, capsys):
    # A kubelet that refuses every registration: the demo stops on the plugin's error instead
    # of waiting 30 s for units that never come.
    from lab02_device_plugin.kubelet.lifecycle import MockKubelet
    monkeypatch.setattr(MockKubelet, "_register", lambda self, request: "refused for the test")
    assert main(["demo", "--quiet"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: demo failed: registering nvidia.com/gpu")
    assert "refused for the test" in err[0] and "timed out" not in err[0]


def test_help_examples_use_shipped_files_and_cite_public_sources():
    import re
    from pathlib import Path

    from lab02_device_plugin.commands import serve
    import lab02_device_plugin.kubelet.lifecycle as kubelet_module

    repo = Path(__file__).resolve().parents[2]
    examples = serve.DESCRIPTION.split("examples:")[1]
    paths = re.findall(r"--(?:inventory|config)\s+(\S+)", examples)
    assert len(paths) == 5 and all((repo / p).is_file() for p in paths), paths
    assert "shared/" not in serve.DESCRIPTION
    assert "shared/reference" not in kubelet_module.__doc__
    assert "pkg/kubelet/cm/devicemanager/" in kubelet_module.__doc__
