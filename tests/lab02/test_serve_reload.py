"""The real ``serve`` process through a node's life, against the mock kubelet: a replicas
change and a MIG repartition picked up from the files (watched, or on SIGHUP, or on a
kubelet restart), a bad config that keeps the previous one serving, a kubelet that starts
after the plugin, and a second plugin process that takes over the socket."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from lab02_device_plugin.kubelet.lifecycle import MockKubelet
from _process import serve, socket_dir  # noqa: F401 (fixture)

pytestmark = pytest.mark.timeout(180)
GPU = "nvidia.com/gpu"


plugin_dir = socket_dir  # the fixture, under this module's name


def time_slicing(replicas: int) -> str:
    return ("version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
            f"    - name: nvidia.com/gpu\n      replicas: {replicas}\n")


def h100_mig(*instances: str) -> str:
    return ("node: reload-node\ngpus:\n- model: H100-80GB\n  mig:\n    enabled: true\n"
            f"    instances: [{', '.join(instances)}]\n")


def rewrite(path: Path, text: str) -> None:
    """Replace a file as a ConfigMap update does: a new file renamed over the old one."""
    tmp = path.with_suffix(".new")
    tmp.write_text(text)
    tmp.replace(path)


def test_replicas_4_to_8_in_the_watched_config_is_advertised_with_the_old_ids_gone(plugin_dir):
    config = plugin_dir / "config.yaml"
    inventory = plugin_dir / "inv.yaml"
    config.write_text(time_slicing(4))
    inventory.write_text("node: n\ngpus: [{model: T4}]\n")
    with MockKubelet(plugin_dir) as kubelet:
        plugin = serve(plugin_dir, "--config", str(config), "--inventory", str(inventory))
        try:
            kubelet.wait_for_resource(GPU, 4, capacity=4, timeout=60)  # 1 T4 x 4
            before = set(kubelet.devices(GPU))
            rewrite(config, time_slicing(8))
            kubelet.wait_for_resource(GPU, 8, capacity=8, timeout=30)  # 1 T4 x 8
            after = set(kubelet.devices(GPU))
            assert before < after and len(after - before) == 4  # ::4 .. ::7 are new
            plugin.expect(f"reload ({config} changed): {GPU} 4 -> 8 devices")
            rewrite(config, time_slicing(2))
            status = kubelet.wait_for_resource(GPU, 2, capacity=2, timeout=30)
            assert set(kubelet.devices(GPU)) < before  # ::2 and ::3 are gone from the list
            assert status.capacity == {GPU: 2}
            assert plugin.terminate() == 0
        finally:
            plugin.kill()


def test_mig_repartition_then_sighup_retires_the_old_profiles(plugin_dir):
    inventory = plugin_dir / "inv.yaml"
    inventory.write_text(h100_mig("3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"))
    # A short stop grace period so that the retired resources leave the node status too.
    with MockKubelet(plugin_dir, stop_grace_period=0.5) as kubelet:
        plugin = serve(plugin_dir, "--inventory", str(inventory), "--mig-strategy", "mixed",
                       "--no-watch")
        try:
            kubelet.wait_for_resource("nvidia.com/mig-3g.40gb", 1, timeout=60)
            kubelet.wait_for_resource("nvidia.com/mig-1g.10gb", 2, timeout=30)
            rewrite(inventory, h100_mig(*["1g.10gb"] * 7))  # mig-parted's all-1g.10gb
            time.sleep(0.3)
            assert kubelet.node_status().allocatable["nvidia.com/mig-1g.10gb"] == 2  # not watched
            plugin.proc.send_signal(signal.SIGHUP)
            kubelet.wait_for_resource("nvidia.com/mig-1g.10gb", 7, capacity=7, timeout=30)
            # The removed profiles: allocatable 0 at once, gone after the grace period.
            kubelet.wait_for(lambda: set(kubelet.node_status().capacity) == {"nvidia.com/mig-1g.10gb"},
                             30, "the retired profiles to leave the node status")
            line = plugin.expect("reload (SIGHUP):")
            assert line == ("reload (SIGHUP): nvidia.com/mig-1g.10gb 2 -> 7 devices; "
                            "nvidia.com/mig-2g.20gb removed (1 device); "
                            "nvidia.com/mig-3g.40gb removed (1 device)")
            assert not (plugin_dir / "nvidia-mig-3g.40gb.sock").exists()
            assert plugin.terminate() == 0
        finally:
            plugin.kill()


def test_a_bad_config_keeps_the_previous_one_serving_and_a_kubelet_restart_rereads(plugin_dir):
    config = plugin_dir / "config.yaml"
    config.write_text(time_slicing(2))
    with MockKubelet(plugin_dir) as kubelet:
        plugin = serve(plugin_dir, "--config", str(config), "--no-watch", "--inventory",
                       "lab02_device_plugin/examples/inventory-1gpu.yaml")
        try:
            kubelet.wait_for_resource(GPU, 2, timeout=60)
            rewrite(config, time_slicing(2).replace("replicas: 2", "replicas: 1000000000"))
            plugin.proc.send_signal(signal.SIGHUP)
            line = plugin.expect("refused")
            # time_slicing()'s line 6 "      replicas: 1000000000": the value is at column 17
            assert line == (f"reload (SIGHUP) refused: {config}:6:17: "
                            "sharing.timeSlicing.resources[0].replicas: expected at most 179392 "
                            "(more replicas of even one device with a one-character ID do not fit "
                            "the 4 MiB ListAndWatch message the kubelet accepts: see "
                            "lab02_device_plugin.limits), got 1000000000; still serving the "
                            f"previous config ({GPU})")
            # SIGHUP restarts the plugins with the previous config, as upstream restarts them.
            kubelet.wait_for_resource(GPU, 2, timeout=30)
            # Fixed, and not watched: the next kubelet restart re-reads it, as NVIDIA's plugin
            # reloads its config on every restart of its plugins.
            rewrite(config, time_slicing(3))
            kubelet.restart()
            kubelet.wait_for_resource(GPU, 3, timeout=30)  # 1 T4 x 3
            # the restart is seen from whichever cue the watcher meets first: the kubelet socket
            # re-created, or (on a busy machine, seen at the load of 9) this plugin's own socket
            # removed by the restarting kubelet; either way the reload names the restart
            plugin.expect("(kubelet restart)): nvidia.com/gpu 2 -> 3 devices")
            assert plugin.terminate() == 0
        finally:
            plugin.kill()


def test_serve_before_the_kubelet_says_so_once_then_registers(plugin_dir):
    plugin = serve(plugin_dir, "--inventory", "lab02_device_plugin/examples/inventory-1gpu.yaml")
    try:
        line = plugin.expect("kubelet not running yet")
        assert line == (f"kubelet not running yet (nothing listens on {plugin_dir / 'kubelet.sock'}); "
                        f"serving {GPU} (1 device); registering when the kubelet starts")
        plugin.expect("device plugin running")
        with MockKubelet(plugin_dir) as kubelet:
            kubelet.wait_for_resource(GPU, 1, timeout=30)
            plugin.expect(f"{GPU}: serving 1 device on")
        assert plugin.terminate() == 0
        assert not any("UNAVAILABLE" in l or "failed to connect" in l for l in plugin.lines)
    finally:
        plugin.kill()


@contextmanager
def two_plugins(plugin_dir: Path, **kubelet_options) -> Iterator[tuple]:
    """The mock kubelet, a first ``serve`` registered with it (1 GPU), then a second
    ``serve`` on the same socket path: yields (kubelet, first, second, registrations before
    the second); both processes are killed at the end if still running."""
    inventory = "lab02_device_plugin/examples/inventory-1gpu.yaml"
    with MockKubelet(plugin_dir, **kubelet_options) as kubelet:
        first = serve(plugin_dir, "--inventory", inventory)
        second = None
        try:
            kubelet.wait_for_resource(GPU, 1, timeout=60)
            before = kubelet.registrations
            second = serve(plugin_dir, "--inventory", inventory)
            yield kubelet, first, second, before
        finally:
            first.kill()
            if second is not None:
                second.kill()


def test_a_second_plugin_process_taking_over_the_socket_keeps_the_nodes_devices(plugin_dir):
    """kubernetes/kubernetes#121994: the kubelet must dial the new process, not reuse the
    connection it has to the old one (which then exits)."""
    with two_plugins(plugin_dir) as (kubelet, first, second, before):
        kubelet.wait_for_registration(GPU, timeout=60, after=before)
        assert first.terminate() == 0
        time.sleep(1.0)  # long enough for a stream on the old process's connection to end
        assert kubelet.is_registered(GPU)
        assert kubelet.node_status().allocatable == {GPU: 1}
        assert second.terminate() == 0
        kubelet.wait_for(lambda: not kubelet.is_registered(GPU), 20, "the stream to end")


def test_with_the_newer_kubelets_rule_a_same_socket_takeover_waits_for_the_first_to_end(plugin_dir):
    """--same-socket reject (kubernetes PR #135437, #139338): the second process's Register
    at the same resource and socket path is refused while the first is connected, the node
    keeps the first one's device, and the second registers once the first has exited (its
    registration retry, every 5 s)."""
    with two_plugins(plugin_dir, same_socket="reject") as (kubelet, first, second, before):
        line = second.expect("failed: UNKNOWN", timeout=60)
        assert line.startswith(f"{GPU}: registering {GPU} with {plugin_dir / 'kubelet.sock'} "
                               f"failed: UNKNOWN: a device plugin for {GPU} at "
                               "nvidia-gpu.sock is still registered")
        assert kubelet.registrations == before and kubelet.node_status().allocatable == {GPU: 1}
        assert first.terminate() == 0
        kubelet.wait_for_registration(GPU, timeout=60, after=before)  # the retry
        kubelet.wait_for_resource(GPU, 1, timeout=30)
        second.expect(f"{GPU}: registered with", timeout=30)
        assert second.terminate() == 0
