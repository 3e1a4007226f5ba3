"""``python -m lab02_device_plugin serve`` in its own process, registering with the mock
kubelet in this process "exactly as it would against a kubelet"."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from lab02_device_plugin.kubelet.lifecycle import MockKubelet
from lab02_device_plugin.kubelet.pod import Container, Pod
from _process import Process, serve, socket_dir  # noqa: F401 (fixture)

pytestmark = pytest.mark.timeout(120)
EXAMPLES = Path(__file__).resolve().parents[2] / "lab02_device_plugin" / "examples"


plugin_dir = socket_dir  # the fixture, under this module's name


def test_serve_registers_allocates_and_exits_cleanly_on_sigterm(plugin_dir):
    with MockKubelet(plugin_dir) as kubelet:
        plugin = serve(plugin_dir, "--inventory", str(EXAMPLES / "inventory-1gpu.yaml"),
                       "--config", str(EXAMPLES / "time-slicing.yaml"))
        try:
            # inventory-1gpu.yaml: one T4; time-slicing.yaml: 4 replicas -> 4 units.
            status = kubelet.wait_for_resource("nvidia.com/gpu", 4, timeout=60)
            assert status.capacity == {"nvidia.com/gpu": 4}
            result = kubelet.admit_pod(Pod("p", [Container("main", {"nvidia.com/gpu": 1})]))
            uuid = result.devices["main"]["nvidia.com/gpu"][0].split("::")[0]
            assert result.containers["main"].envs == {"NVIDIA_VISIBLE_DEVICES": uuid}
            assert (plugin_dir / "nvidia-gpu.sock").is_socket()
            assert plugin.terminate() == 0
            assert not (plugin_dir / "nvidia-gpu.sock").exists()
            # The stream ended: the kubelet marks the devices unhealthy.
            kubelet.wait_for(lambda: not kubelet.is_registered("nvidia.com/gpu"), 20, "stream end")
            assert kubelet.node_status().allocatable == {"nvidia.com/gpu": 0}
        finally:
            plugin.kill()


def test_serve_process_reregisters_after_kubelet_restart(plugin_dir):
    with MockKubelet(plugin_dir) as kubelet:
        plugin = serve(plugin_dir, "--inventory", str(EXAMPLES / "inventory-h100x8.yaml"))
        try:
            kubelet.wait_for_resource("nvidia.com/gpu", 8, timeout=60)
            before = kubelet.registrations
            kubelet.restart()
            kubelet.wait_for_registration("nvidia.com/gpu", timeout=30, after=before)
            kubelet.wait_for_resource("nvidia.com/gpu", 8, timeout=30)
            assert plugin.terminate() == 0
        finally:
            plugin.kill()


def test_serve_xid_fifo_changes_allocatable_in_the_kubelet(plugin_dir):
    fifo = plugin_dir / "xid.fifo"
    with MockKubelet(plugin_dir) as kubelet:
        plugin = serve(plugin_dir, "--inventory", str(EXAMPLES / "inventory-h100x8.yaml"),
                       "--health-recovery", "--xid-fifo", str(fifo))
        try:
            kubelet.wait_for_resource("nvidia.com/gpu", 8, timeout=60)
            plugin.expect("reading simulated health events", timeout=30)
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            try:
                os.write(fd, b"xid 0 94\n")
                # Xid 94 on GPU 0 of 8: capacity 8, allocatable 7.
                kubelet.wait_for_resource("nvidia.com/gpu", 7, capacity=8, timeout=30)
                os.write(fd, b"recover 0\n")
                kubelet.wait_for_resource("nvidia.com/gpu", 8, capacity=8, timeout=30)
            finally:
                os.close(fd)
            assert plugin.terminate() == 0
            assert not fifo.exists()
        finally:
            plugin.kill()


def test_serve_bad_config_exits_1_with_one_line(plugin_dir):
    bad = plugin_dir / "bad.yaml"
    bad.write_text("version: v2\n")
    plugin = serve(plugin_dir, "--inventory", str(EXAMPLES / "inventory-1gpu.yaml"), "--config", str(bad))
    try:
        deadline = time.monotonic() + 60
        while plugin.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert plugin.proc.returncode == 1
        line = plugin.expect("error:", timeout=10)
        assert "version" in line
    finally:
        plugin.kill()


def test_two_terminals_kubelet_process_and_serve_process(plugin_dir):
    """The learner's setup: `kubelet` in one terminal, `serve` in another."""
    kubelet = Process(["kubelet", "--plugin-dir", str(plugin_dir), "--wait", "60",
                       "--admit", "pod-1=nvidia.com/gpu:1", "--admit", "pod-2=nvidia.com/gpu:4"])
    plugin = None
    try:
        kubelet.expect("serving Registration", timeout=30)
        plugin = serve(plugin_dir, "--inventory", str(EXAMPLES / "inventory-1gpu.yaml"),
                       "--config", str(EXAMPLES / "time-slicing.yaml"))
        kubelet.expect("Register nvidia.com/gpu from nvidia-gpu.sock: OK", timeout=60)
        kubelet.expect("Admit pod-1: admitted", timeout=30)
        # 4 units - 1 taken = 3 available < 4 requested
        line = kubelet.expect("Admit pod-2: not admitted", timeout=30)
        assert "Requested: 4, Available: 3" in line
        assert plugin.terminate() == 0
        kubelet.expect("stream ended", timeout=30)
        assert kubelet.terminate() == 0
    finally:
        kubelet.kill()
        if plugin is not None:
            plugin.kill()
