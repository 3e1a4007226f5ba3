"""``python -m lab02_device_plugin kubelet`` as a separate process, driven by a fake plugin
in this process: the same path a learner takes with two terminals."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from _fake_device_plugin import FakeDevicePlugin
from _process import Process
from lab02_device_plugin.cli import main

pytestmark = pytest.mark.timeout(90)


@pytest.fixture
def plugin_dir():
    path = Path(tempfile.mkdtemp(prefix="kc-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_kubelet_process_admits_pod_from_plugin_and_exits_on_sigterm(plugin_dir):
    kubelet = Process(["kubelet", "--plugin-dir", str(plugin_dir),
                       "--admit", "pod-1=example.com/gpu:2", "--wait", "30"])
    plugin = FakeDevicePlugin(plugin_dir, "example.com/gpu", {"G-0": "Healthy", "G-1": "Healthy",
                                                              "G-2": "Healthy"})
    try:
        kubelet.expect("serving Registration")
        plugin.start()
        plugin.register()
        kubelet.expect("Register example.com/gpu from fake-gpu.sock: OK")
        kubelet.expect("ListAndWatch example.com/gpu: 3 devices, 3 healthy")
        # The fake prefers the end of the available list: G-2, G-1.
        kubelet.expect("Allocate pod-1/main example.com/gpu: G-2, G-1 -> FAKE_VISIBLE_DEVICES=G-2,G-1")
        kubelet.expect("pod-1/main: env FAKE_VISIBLE_DEVICES=G-2,G-1")
        line = kubelet.expect("node status")
        assert line == "node status: capacity example.com/gpu=3, allocatable example.com/gpu=3"
        assert plugin.calls.allocate == [["G-2", "G-1"]]
        assert kubelet.terminate() == 0
        assert not (plugin_dir / "kubelet.sock").exists()
    finally:
        kubelet.kill()
        plugin.stop()


def test_kubelet_command_bad_pods_file_is_one_line_error(tmp_path, capsys):
    pods = tmp_path / "pods.yaml"
    pods.write_text("kind: Pod\nmetadata: {name: x\n")
    assert main(["kubelet", "--plugin-dir", str(tmp_path / "d"), "--pods", str(pods)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {pods}:") and "invalid YAML" in err
    assert err.count("\n") == 1


def test_pods_file_of_kubernetes_manifests(tmp_path):
    from lab02_device_plugin.commands.kubelet import _load_pods

    pods = tmp_path / "pods.yaml"
    pods.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: cuda-a}\nspec:\n  containers:\n"
        "  - name: main\n    image: nvcr.io/nvidia/cuda\n"
        "    resources: {limits: {nvidia.com/gpu: 2}, requests: {nvidia.com/gpu: 2}}\n"
        "---\napiVersion: v1\nkind: Pod\nmetadata: {name: cuda-b, namespace: team}\nspec:\n"
        "  initContainers: [{name: warm, resources: {limits: {nvidia.com/gpu: 1}}}]\n"
        "  containers: [{name: main, resources: {limits: {nvidia.com/gpu: 1}}}]\n")
    a, b = _load_pods(pods)
    assert (a.name, a.containers[0].limits, a.containers[0].requests) == (
        "cuda-a", {"nvidia.com/gpu": 2}, {"nvidia.com/gpu": 2})
    assert (b.namespace, b.init_containers[0].name) == ("team", "warm")
