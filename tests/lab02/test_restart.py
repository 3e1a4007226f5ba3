"""Kubelet restarts with the real plugin: sockets removed, checkpoint restored, plugin back."""

from __future__ import annotations

import json

import pytest

from _node import gpus, node, pod, time_slicing
from lab02_device_plugin.kubelet.checkpoint import CHECKPOINT_NAME

pytestmark = pytest.mark.timeout(120)


def test_restart_removes_plugin_socket_and_plugin_serves_a_new_one():
    with node(gpus(count=1)) as n:
        old = n.manager.server("nvidia.com/gpu")
        n.kubelet.restart()
        n.kubelet.wait_for_resource("nvidia.com/gpu", 1, timeout=20)
        # (inode numbers are reused by the file system, so compare the serving objects)
        new = n.manager.server("nvidia.com/gpu")
        assert new is not old and not old.running and new.socket_path.is_socket()
        assert any("removed 1 socket (nvidia-gpu.sock)" in line for line in n.kubelet.narration)


def test_checkpoint_survives_and_readmission_sends_no_allocate():
    with node(gpus(count=2), time_slicing(2)) as n:
        first = n.kubelet.admit_pod(pod("a", 1))
        calls = n.manager.server("nvidia.com/gpu").allocate_calls
        checkpoint = json.loads((n.plugin_dir / CHECKPOINT_NAME).read_text())
        assert len(checkpoint["Data"]["PodDeviceEntries"]) == 1
        n.kubelet.restart()
        n.kubelet.wait_for_resource("nvidia.com/gpu", 4, timeout=20)
        server = n.manager.server("nvidia.com/gpu")  # a new server object after the restart
        again = n.kubelet.admit_pod(pod("a", 1))
        assert again.devices == first.devices
        assert again.containers["main"].envs == first.containers["main"].envs
        assert server.allocate_calls == 0 and calls == 1


def test_deleted_pod_frees_devices_across_restarts():
    with node(gpus(count=2)) as n:
        n.kubelet.admit_pod(pod("a", 2))
        n.kubelet.restart()
        n.kubelet.wait_for_resource("nvidia.com/gpu", 2, timeout=20)
        assert not n.kubelet.admit_pod(pod("b", 1)).admitted  # both GPUs still held by a
        assert len(n.kubelet.delete_pod("a")) == 2
        n.kubelet.restart()
        n.kubelet.wait_for_resource("nvidia.com/gpu", 2, timeout=20)
        assert n.kubelet.allocations() == {}
        assert n.kubelet.admit_pod(pod("b", 2)).admitted


def test_three_restarts_in_a_row():
    with node(gpus(count=4)) as n:
        n.kubelet.admit_pod(pod("a", 1))
        for _ in range(3):
            n.kubelet.restart()
            n.kubelet.wait_for_resource("nvidia.com/gpu", 4, timeout=20)
        assert list(n.kubelet.allocations()) == ["a"]
        # 4 - 1 restored = 3 free
        assert n.kubelet.admit_pod(pod("b", 3)).admitted
