"""The plugin's watched config file and SIGHUP, in process against the mock kubelet: a file
rewritten in place is never applied half-written, the narration names every key that
changed, a comment-only edit restarts nothing, and a file change followed by SIGHUP (the
config-manager sidecar's pattern) restarts the plugins once."""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import pytest

from lab02_device_plugin.kubelet.lifecycle import MockKubelet
from lab02_device_plugin.plugin.config import config_changes, load_config, parse_config
from lab02_device_plugin.plugin.inventory import from_yaml_spec
from lab02_device_plugin.plugin.manager import PluginManager

pytestmark = pytest.mark.timeout(120)
GPU = "nvidia.com/gpu"
EIGHT_H100 = from_yaml_spec({"node": "watch", "gpus": [{"model": "H100-80GB", "count": 8}]}, "<spec>")


def time_slicing(replicas: int, fail: bool = False, strategy: str = "envvar") -> str:
    return ("version: v1\nflags:\n  plugin:\n    deviceListStrategy: " + strategy + "\n"
            "sharing:\n  timeSlicing:\n    failRequestsGreaterThanOne: "
            + ("true" if fail else "false") + "\n    resources:\n"
            f"    - name: nvidia.com/gpu\n      replicas: {replicas}\n")


class WatchedNode:
    """The mock kubelet and a PluginManager whose loader reads ``config`` (8 H100s)."""

    def __init__(self, text: str) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="watch-"))
        self.config = self.dir / "config.yaml"
        self.config.write_text(text)
        self.log: list[str] = []
        self.kubelet = MockKubelet(self.dir)
        self.manager = PluginManager(
            EIGHT_H100, load_config(self.config), self.dir, watch_interval=0.05,
            log=self.log.append, loader=lambda: (EIGHT_H100, load_config(self.config)),
            watch_files=[self.config])

    def __enter__(self) -> WatchedNode:
        self.kubelet.start()
        self.manager.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.manager.stop()
        self.kubelet.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def reloads(self) -> list[str]:
        return [line for line in self.log if line.startswith("reload (")]

    def quiet_for(self, seconds: float) -> None:
        """Let the watcher poll ``seconds`` more (settle is 0.2 s, the poll 0.05 s)."""
        time.sleep(seconds)


def test_a_config_rewritten_in_place_is_applied_once_whole_never_empty():
    # `cat new.yaml > config.yaml`, slowly: truncated, 1 s later written. Before, the
    # empty file was applied (32 -> 8 plain GPU IDs sent to the kubelet), then 8 -> 64.
    with WatchedNode(time_slicing(4)) as n:
        n.kubelet.wait_for_resource(GPU, 32, timeout=30)  # 8 GPUs x 4
        with n.config.open("w") as fh:
            fh.flush()  # empty now, for 1 s (the watcher needs 0.2 s to call it settled)
            time.sleep(1.0)
            fh.write(time_slicing(8))
        n.kubelet.wait_for_resource(GPU, 64, timeout=30)  # 8 GPUs x 8
        n.quiet_for(0.5)
        assert n.reloads() == [f"reload ({n.config} changed): {GPU} 32 -> 64 devices; "
                               f"sharing.timeSlicing.resources[{GPU}].replicas 4 -> 8"]
        assert f"{n.config} is empty: taken as a write in progress, not applied (the previous " \
               "config keeps serving; SIGHUP would apply it as it is)" in n.log
        counts = [line for line in n.kubelet.narration if line.startswith(f"ListAndWatch {GPU}: ")
                  and "healthy" in line]
        assert not any(line.startswith(f"ListAndWatch {GPU}: 8 devices") for line in counts)


def test_a_change_the_plan_does_not_show_is_still_named():
    # failRequestsGreaterThanOne and deviceListStrategy change no device ID; the line used
    # to read "config and inventory unchanged" while the new config was applied.
    with WatchedNode(time_slicing(2)) as n:
        n.kubelet.wait_for_resource(GPU, 16, timeout=30)
        registrations = n.manager.registrations
        n.config.write_text(time_slicing(2, fail=True, strategy="[volume-mounts, cdi-cri]"))
        n.kubelet.wait_for(lambda: n.manager.registrations > registrations, 30, "re-registration")
        assert n.reloads() == [
            f"reload ({n.config} changed): flags.plugin.deviceListStrategy [envvar] -> "
            "[volume-mounts, cdi-cri]; sharing.timeSlicing.failRequestsGreaterThanOne "
            "false -> true"]
        assert n.manager.config.sharing.fail_requests_greater_than_one is True


def test_a_comment_only_edit_restarts_nothing():
    with WatchedNode(time_slicing(2)) as n:
        n.kubelet.wait_for_resource(GPU, 16, timeout=30)
        restarts, registrations = n.manager.restarts, n.manager.registrations
        n.config.write_text("# tuned for the batch queue\n" + time_slicing(2))
        n.kubelet.wait_for(lambda: bool(n.reloads()), 30, "the reload line")
        assert n.reloads() == [f"reload ({n.config} changed): config and inventory unchanged; "
                               "the plugins keep serving"]
        assert (n.manager.restarts, n.manager.registrations) == (restarts, registrations)


def test_a_file_change_then_sighup_restarts_the_plugins_once():
    # The config-manager sidecar writes the file and sends SIGHUP about 30 ms later.
    with WatchedNode(time_slicing(2)) as n:
        n.kubelet.wait_for_resource(GPU, 16, timeout=30)
        restarts = n.manager.restarts
        n.config.write_text(time_slicing(4))
        time.sleep(0.03)
        n.manager.reload("SIGHUP", restart_unchanged=False)  # what serve does on SIGHUP
        n.kubelet.wait_for_resource(GPU, 32, timeout=30)
        n.quiet_for(0.5)  # the watcher has seen the file by now
        assert n.manager.restarts == restarts + 1
        # SIGHUP comes first (the watcher waits 0.2 s for the file to settle); on a machine
        # so busy that the watcher went first, the SIGHUP finds nothing new: one restart.
        applied = [line for line in n.reloads() if f"{GPU} 16 -> 32 devices" in line]
        assert applied in ([f"reload (SIGHUP): {GPU} 16 -> 32 devices; "
                            f"sharing.timeSlicing.resources[{GPU}].replicas 2 -> 4"],
                           [f"reload ({n.config} changed): {GPU} 16 -> 32 devices; "
                            f"sharing.timeSlicing.resources[{GPU}].replicas 2 -> 4"])
        assert all("unchanged; the plugins keep serving" in line
                   for line in n.reloads() if line not in applied)


def test_sighup_after_the_watcher_already_read_the_file_restarts_nothing():
    with WatchedNode(time_slicing(2)) as n:
        n.kubelet.wait_for_resource(GPU, 16, timeout=30)
        restarts = n.manager.restarts
        n.config.write_text(time_slicing(4))
        n.kubelet.wait_for_resource(GPU, 32, timeout=30)
        n.manager.reload("SIGHUP", restart_unchanged=False)
        assert n.manager.restarts == restarts + 1
        assert n.reloads()[-1] == ("reload (SIGHUP): config and inventory unchanged; the "
                                   "plugins keep serving")


def test_settle_is_counted_in_polls():
    # 0.2 s at a 0.05 s poll is 4 polls; never fewer than 2.
    assert PluginManager(EIGHT_H100, watch_interval=0.05, kubelet_socket=None).settle_polls == 4
    assert PluginManager(EIGHT_H100, watch_interval=1.0, kubelet_socket=None).settle_polls == 2
    assert PluginManager(EIGHT_H100, watch_interval=0.05, settle=0.0,
                         kubelet_socket=None).settle_polls == 2


def test_config_changes_names_each_key_as_the_file_writes_it():
    old = parse_config({"sharing": {"timeSlicing": {"resources": [
        {"name": GPU, "replicas": 4}]}}})
    new = parse_config({"flags": {"migStrategy": "single", "plugin": {
        "passDeviceSpecs": True, "deviceIDStrategy": "index"}},
        "sharing": {"timeSlicing": {"renameByDefault": True, "resources": [
            {"name": GPU, "replicas": 8}]}}})
    assert config_changes(old, new) == [
        "flags.migStrategy none -> single", "flags.plugin.passDeviceSpecs false -> true",
        "flags.plugin.deviceIDStrategy uuid -> index",
        "sharing.timeSlicing.renameByDefault false -> true",
        f"sharing.timeSlicing.resources[{GPU}].replicas 4 -> 8"]
    mps = parse_config({"sharing": {"mps": {"resources": [{"name": GPU, "replicas": 2}]}}})
    assert config_changes(old, mps) == ["sharing timeSlicing -> mps",
                                        f"sharing.mps.resources[{GPU}].replicas 2"]
    assert config_changes(mps, parse_config(None)) == ["sharing mps -> none"]
    assert config_changes(new, new) == []
