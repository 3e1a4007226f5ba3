"""A node's life with the mock kubelet and the real plugin in one process: the device
manager's admission rules through restarts, reboots and unhealthy devices (kubelet
devicemanager/manager.go ``devicesToAllocate``), pod phases, the restart window and its
retry option, and the plugin's reloads."""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

import pytest

from _node import gpus, node, pod, time_slicing
from lab02_device_plugin.errors import InputError
from lab02_device_plugin.kubelet.lifecycle import MockKubelet
from lab02_device_plugin.kubelet.pod import Container, Pod
from lab02_device_plugin.plugin.config import parse_config
from lab02_device_plugin.plugin.inventory import from_yaml_spec
from lab02_device_plugin.plugin.manager import plan_changes
from lab02_device_plugin.plugin.sharing import advertise

pytestmark = pytest.mark.timeout(120)

GPU = "nvidia.com/gpu"
NO_HEALTHY = ("Allocate failed due to no healthy devices present; cannot allocate unhealthy "
              f"devices {GPU}, which is unexpected")
NO_LONGER_HEALTHY = ("Allocate failed due to previously allocated devices are no longer healthy; "
                     f"cannot allocate unhealthy devices {GPU}, which is unexpected")
UNREGISTERED = f"Allocate failed due to cannot allocate unregistered device {GPU}, which is unexpected"


# ----------------------------------------------------------------------- devicesToAllocate

def test_a_running_pod_whose_gpu_went_unhealthy_is_not_admitted_again():
    with node(gpus(count=2)) as n:
        first = n.kubelet.admit_pod(pod("a", 1))
        (gpu,) = first.devices["main"][GPU]
        calls = n.manager.server(GPU).allocate_calls
        # Healthy: admitted again by reusing its device, without an Allocate call.
        again = n.kubelet.admit_pod(pod("a", 1))
        assert again.admitted and again.devices == first.devices
        n.health.inject_xid(gpu, 79)  # Xid 79: fallen off the bus
        n.kubelet.wait_for_resource(GPU, 1, capacity=2)
        refused = n.kubelet.admit_pod(pod("a", 1))
        assert (refused.admitted, refused.phase, refused.reason, refused.message) == (
            False, "Failed", "UnexpectedAdmissionError", NO_LONGER_HEALTHY)
        assert n.manager.server(GPU).allocate_calls == calls  # no RPC for either attempt
        assert n.kubelet.allocations() == {}  # a failed pod keeps no devices


def test_a_gpu_going_unhealthy_under_a_running_pod_is_narrated_and_the_pod_keeps_running():
    with node(gpus(count=2)) as n:
        (gpu,) = n.kubelet.admit_pod(pod("a", 1)).devices["main"][GPU]
        n.health.inject_xid(gpu, 94)
        # 2 GPUs, 1 unhealthy: capacity 2, allocatable 1.
        status = n.kubelet.wait_for_resource(GPU, 1, capacity=2)
        assert status.allocatable == {GPU: 1}
        assert n.kubelet.pod_status("a").phase == "Running"
        assert any(f"{gpu} went unhealthy under 1 running pod (a): the kubelet does not stop "
                   "it" in line for line in n.kubelet.narration)


def test_reboot_before_the_plugin_registers_fails_checkpointed_pods_with_the_kubelets_message():
    # A watcher that never looks: the plugin does not notice the new kubelet by itself.
    with node(gpus(count=2), watch_interval=3600) as n:
        n.kubelet.admit_pod(pod("a", 1))
        n.kubelet.restart(reboot=True)
        status = n.kubelet.pod_status("a")
        assert (status.phase, status.reason, status.message) == (
            "Failed", "UnexpectedAdmissionError", NO_HEALTHY)
        assert n.kubelet.allocations() == {}
        assert any("the kubelet never retries it (kubernetes#125579, #133382)" in line
                   for line in n.kubelet.narration)


def test_after_the_grace_period_the_message_is_unregistered_device(tmp_path):
    now = [0.0]
    with node(gpus(count=2), watch_interval=3600,
              kubelet_options={"clock": lambda: now[0]}) as n:
        n.kubelet.admit_pod(pod("a", 1))
        n.manager.stop()
        n.kubelet.wait_for(lambda: not n.kubelet.is_registered(GPU), 20, "stream end")
        now[0] = 301.0  # past the 300 s endpointStopGracePeriod
        assert n.kubelet.node_status().capacity == {}
        result = n.kubelet.admit_pod(pod("a", 1))  # a's devices are still checkpointed
        assert (result.phase, result.message) == ("Failed", UNREGISTERED)


def test_kubelet_restart_keeps_running_pods_without_any_check_while_the_plugin_is_away():
    with node(gpus(count=2), watch_interval=3600) as n:
        first = n.kubelet.admit_pod(pod("a", 2))
        calls = n.manager.server(GPU).allocate_calls
        n.kubelet.restart()  # a kubelet restart: containers keep running
        assert n.kubelet.node_status().allocatable == {GPU: 0}  # plugin not back yet
        assert n.kubelet.pod_status("a").phase == "Running"
        assert n.kubelet.allocations() == {"a": first.devices}
        assert any("container running, kubelet starting: keeps" in line for line in n.kubelet.narration)
        assert n.manager.server(GPU).allocate_calls == calls


def test_after_a_kubelet_restart_a_completed_init_container_is_checked_and_fails_the_pod():
    # kubernetes#124345: devicesToAllocate skips the checks only for containers it finds
    # running; an init container has exited, so with the plugin not back yet the pod fails
    # with the device manager's message (the fix PR #127028 was closed unmerged).
    with node(gpus(count=2), watch_interval=3600) as n:
        p = Pod("withinit", [Container("main", {GPU: 1})], [Container("init", {GPU: 1})])
        assert n.kubelet.admit_pod(p).admitted
        n.kubelet.restart()
        status = n.kubelet.pod_status("withinit")
        assert (status.phase, status.reason, status.message) == (
            "Failed", "UnexpectedAdmissionError", NO_HEALTHY)
        assert n.kubelet.allocations() == {}
        assert ("Allocate withinit/init nvidia.com/gpu: an init container that has completed is "
                "not running, so the starting kubelet checks it as a new container "
                "(kubernetes#124345)") in n.kubelet.narration


def test_after_a_kubelet_restart_a_sidecar_keeps_running_with_its_gpu():
    # A restartable init container (restartPolicy: Always) runs beside the app: it is found
    # running, so it keeps its device without a check, and the pod stays Running. Its GPU
    # is its own (not reused by the app container): 2 GPUs for the pod.
    with node(gpus(count=2), watch_interval=3600) as n:
        p = Pod("sidecar", [Container("main", {GPU: 1})],
                [Container("proxy", {GPU: 1}, restart_policy="Always")])
        first = n.kubelet.admit_pod(p)
        assert first.admitted
        assert first.devices["proxy"][GPU] != first.devices["main"][GPU]
        n.kubelet.restart()
        assert n.kubelet.pod_status("sidecar").phase == "Running"
        assert n.kubelet.allocations() == {"sidecar": first.devices}


def test_a_sidecar_counts_with_the_app_containers_for_the_scheduler():
    # KEP-753: request = max(app containers + sidecars, each other init + the sidecars
    # before it) = max(1 + 1, 1) = 2, which one GPU cannot hold.
    with node(gpus(count=1)) as n:
        p = Pod("big", [Container("main", {GPU: 1})],
                [Container("proxy", {GPU: 1}, restart_policy="Always")])
        result = n.kubelet.admit_pod(p)
        assert (result.phase, result.reason) == ("Pending", "FailedScheduling")


def test_restart_policy_is_for_init_containers_and_always_only():
    from lab02_device_plugin.kubelet.pod import pods_from_manifests
    doc = {"kind": "Pod", "metadata": {"name": "p"}, "spec": {
        "initContainers": [{"name": "i", "restartPolicy": "OnFailure"}],
        "containers": [{"name": "c"}]}}
    with pytest.raises(InputError, match=r"spec.initContainers\[0\].restartPolicy: 'OnFailure'; "
                                         "expected Always, on init containers only"):
        pods_from_manifests([doc], "pods.yaml")
    doc["spec"]["initContainers"][0]["restartPolicy"] = "Always"
    (pod,) = pods_from_manifests([doc], "pods.yaml")
    assert pod.init_containers[0].sidecar


def test_a_kubelet_started_afresh_frees_the_devices_of_pods_it_does_not_know():
    # The tester's run on a 1-GPU node: `kubelet --admit pod-1=...`, SIGTERM, then a new
    # `kubelet --admit pod-2=...` on the same directory. The checkpoint still holds pod-1's
    # GPU; pod-1 is not a pod of the new kubelet, so UpdateAllocatedDevices frees it before
    # pod-2's allocation, and pod-2 gets the one GPU (it used to fail: "Requested: 1,
    # Available: 0" while allocatable said 1).
    with node(gpus(count=1)) as n:
        (gpu,) = n.kubelet.admit_pod(pod("pod-1", 1), bound=True).devices["main"][GPU]
        n.kubelet.stop()
        fresh = MockKubelet(n.plugin_dir)
        try:
            fresh.start()
            assert fresh.allocations() == {"pod-1": {"main": {GPU: [gpu]}}}  # from the checkpoint
            fresh.wait_for_resource(GPU, 1, timeout=20)  # the plugin re-registered
            result = fresh.admit_pod(pod("pod-2", 1), bound=True)
            assert (result.admitted, result.phase) == (True, "Running")
            assert result.devices == {"main": {GPU: [gpu]}}
            assert fresh.allocations() == {"pod-2": {"main": {GPU: [gpu]}}}
            assert (f"kubelet: freed {gpu} of pod-1 (not a pod of this node any more: the "
                    "device manager frees it before the next allocation, "
                    "UpdateAllocatedDevices)") in fresh.narration
        finally:
            fresh.stop()


def test_nothing_is_freed_while_the_restarted_kubelet_is_still_starting():
    # The same kubelet restarted: its pods are re-admitted before sources are ready, when
    # UpdateAllocatedDevices does nothing, and they keep their devices.
    with node(gpus(count=2), watch_interval=3600) as n:
        first = n.kubelet.admit_pod(pod("a", 1))
        n.kubelet.restart()
        assert n.kubelet.allocations() == {"a": first.devices}
        assert not any("kubelet: freed" in line for line in n.kubelet.narration)


@pytest.mark.parametrize("mode", ["replace", "reject"])
def test_a_second_plugin_at_the_same_socket_path_in_both_kubelet_modes(mode, tmp_path):
    # "replace": kubelets up to 1.36, the newest registration wins. "reject": the device
    # manager of kubernetes PR #135437 refuses the same (resource, socket path) while the
    # first plugin is connected; once its stream ends, the second registers.
    from lab02_device_plugin.plugin.server import DevicePluginServer, RegistrationError
    plugin_dir = Path(tempfile.mkdtemp(prefix="same-"))
    inventory = from_yaml_spec(gpus(count=1), "<spec>")
    (resource,) = advertise(inventory, parse_config(None)).resources
    kubelet = MockKubelet(plugin_dir, same_socket=mode)
    first = DevicePluginServer(resource, plugin_dir, plugin_dir / "kubelet.sock")
    second = DevicePluginServer(resource, plugin_dir, plugin_dir / "kubelet.sock")
    try:
        kubelet.start()
        first.start()
        kubelet.wait_for_resource(GPU, 1, timeout=20)
        second.serve()  # the same socket path, now the second's
        if mode == "replace":
            second.register()
            assert any(line.endswith("replaces the previous registration")
                       for line in kubelet.narration)
        else:
            with pytest.raises(RegistrationError, match=f"a device plugin for {GPU} at "
                               "nvidia-gpu.sock is still registered"):
                second.register()
            assert kubelet.registrations == 1
        first.stop()
        if mode == "reject":
            kubelet.wait_for(lambda: not kubelet.is_registered(GPU), 20, "the first stream to end")
            second.register()
        kubelet.wait_for_resource(GPU, 1, timeout=20)
        assert kubelet.registrations == 2
    finally:
        second.stop()
        first.stop()
        kubelet.stop()
        shutil.rmtree(plugin_dir, ignore_errors=True)


def test_same_socket_mode_is_checked():
    with pytest.raises(InputError, match="same_socket: expected one of replace, reject, got 'keep'"):
        MockKubelet("/tmp/x", same_socket="keep")


# ----------------------------------------------------------------------- phases

def test_a_completed_pod_is_never_admitted_again_after_a_restart():
    with node(gpus(count=1)) as n:
        n.kubelet.admit_pod(pod("done", 1))
        assert n.kubelet.complete_pod("done").phase == "Succeeded"
        n.kubelet.admit_pod(pod("broke", 1))
        assert (n.kubelet.complete_pod("broke", exit_code=2).reason) == "Error"
        n.kubelet.restart()
        n.kubelet.wait_for_resource(GPU, 1)
        assert n.kubelet.pods() == {"done": ("Succeeded", "Completed"), "broke": ("Failed", "Error")}
        assert sum("not admitted again (terminal pods are skipped since kubernetes PR #126343"
                   in line for line in n.kubelet.narration) == 2
        again = n.kubelet.admit_pod(pod("done", 1))
        assert (again.admitted, again.phase, again.reason) == (False, "Succeeded", "Completed")
        assert n.kubelet.admit_pod(pod("next", 1)).admitted  # the GPU is free again


def test_complete_pod_needs_a_running_pod():
    with node(gpus(count=1)) as n:
        with pytest.raises(InputError, match="pod default/ghost: expected a Running pod, got unknown"):
            n.kubelet.complete_pod("ghost")


# ----------------------------------------------------------------------- the restart window

def test_a_pod_bound_in_the_restart_window_fails_and_is_not_retried_by_default():
    with node(gpus(count=2), watch_interval=3600) as n:
        n.kubelet.restart()
        late = n.kubelet.admit_pod(pod("late", 1), bound=True)
        assert (late.phase, late.reason, late.message) == ("Failed", "UnexpectedAdmissionError",
                                                           NO_HEALTHY)
        n.manager.restart("kubelet.sock re-created")  # what the watcher does
        n.kubelet.wait_for_resource(GPU, 2)
        assert n.kubelet.pod_status("late").phase == "Failed"  # nothing retries it
        assert not n.kubelet.admit_pod(pod("late", 1)).admitted


def test_with_the_retry_option_the_pod_is_admitted_once_the_plugin_is_back():
    with node(gpus(count=2), watch_interval=3600,
              kubelet_options={"retry_admission_after": 0.5}) as n:
        n.kubelet.restart()
        late = n.kubelet.admit_pod(pod("late", 1), bound=True)
        assert (late.phase, late.reason) == ("Pending", "AdmissionRetry")
        assert any("retrying in 0.5 s (the retry option, as proposed in kubernetes#128043"
                   in line for line in n.kubelet.narration)
        n.manager.restart("kubelet.sock re-created")
        n.kubelet.wait_for(lambda: n.kubelet.pod_status("late").phase == "Running", 20,
                           "the retry")
        assert list(n.kubelet.allocations()) == ["late"]


def test_with_the_retry_option_a_plugin_that_never_comes_back_still_fails_the_pod():
    with node(gpus(count=2), watch_interval=3600,
              kubelet_options={"retry_admission_after": 0.2, "retry_admission_attempts": 2}) as n:
        n.kubelet.restart()
        n.kubelet.admit_pod(pod("late", 1), bound=True)
        n.kubelet.wait_for(lambda: n.kubelet.pod_status("late").phase == "Failed", 20,
                           "the last retry")
        assert sum("Admit late: not admitted yet, Pending" in line
                   for line in n.kubelet.narration) == 2  # two retries, then Failed
        assert n.kubelet.pod_status("late").message == NO_HEALTHY


def test_retry_option_bounds():
    with pytest.raises(InputError, match="retry_admission_after: expected seconds above 0"):
        MockKubelet("/tmp/x", retry_admission_after=0)


# ----------------------------------------------------------------------- narration

def test_a_plugins_stream_end_reads_as_the_kubelets_rule_not_a_fault():
    with node(gpus(count=4)) as n:
        n.manager.stop()
        n.kubelet.wait_for(lambda: not n.kubelet.is_registered(GPU), 20, "stream end")
        (line,) = [l for l in n.kubelet.narration if "stream ended" in l]
        assert line.startswith(f"ListAndWatch {GPU}: stream ended (")
        assert line.endswith("As the kubelet does when a plugin goes away, it marks all 4 "
                             "devices unhealthy (allocatable 0) until the plugin registers "
                             "again, and drops the resource after 5 min without it. Normal "
                             "when a plugin stops or restarts")


def test_the_stream_end_rule_is_explained_once_then_named_short():
    # Each reload ends every stream; the long explanation is given once per kubelet.
    with node(gpus(count=2)) as n:
        for _ in range(2):
            n.manager.stop()
            n.kubelet.wait_for(lambda: not n.kubelet.is_registered(GPU), 20, "stream end")
            n.manager.start()
            n.kubelet.wait_for_resource(GPU, 2, timeout=20)
        first, second = [l for l in n.kubelet.narration if "stream ended" in l]
        assert first.endswith("Normal when a plugin stops or restarts")
        assert re.fullmatch(rf"ListAndWatch {GPU}: stream ended \([^)]*\): all 2 devices "
                            r"unhealthy \(allocatable 0\) until the plugin registers again",
                            second), second


def test_node_status_reads_as_name_equals_count():
    from lab02_device_plugin.kubelet.manager import NodeStatus
    status = NodeStatus({GPU: 4, "nvidia.com/mig-1g.10gb": 7}, {GPU: 3, "nvidia.com/mig-1g.10gb": 0})
    assert str(status) == ("capacity nvidia.com/gpu=4, nvidia.com/mig-1g.10gb=7, "
                           "allocatable nvidia.com/gpu=3, nvidia.com/mig-1g.10gb=0")
    assert str(NodeStatus({}, {})) == "capacity none, allocatable none"


def test_lines_from_many_threads_never_interleave(capsys):
    import threading
    from lab02_device_plugin.commands._output import LinePrinter
    say = LinePrinter()
    expected = {f"thread {t} line {i} " + "x" * 200 for t in range(8) for i in range(200)}

    def write(t: int) -> None:
        for i in range(200):
            say(f"thread {t} line {i} " + "x" * 200)

    threads = [threading.Thread(target=write, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    lines = capsys.readouterr().out.split("\n")
    assert lines[-1] == ""  # the output ends with a newline
    assert sorted(lines[:-1]) == sorted(expected)  # 1600 whole lines, none empty or merged


def test_counts_read_right_for_one_device():
    with node(gpus(count=1)) as n:
        assert f"ListAndWatch {GPU}: 1 device, 1 healthy" in n.kubelet.narration
        n.manager.stop()
        n.kubelet.wait_for(lambda: not n.kubelet.is_registered(GPU), 20, "stream end")
        assert any("it marks its 1 device unhealthy" in line for line in n.kubelet.narration)


# ----------------------------------------------------------------------- reloads in process

def test_set_node_replicas_4_to_8_then_mig_repartition():
    with node(gpus(count=1), time_slicing(4)) as n:
        n.manager.set_node(config=parse_config(time_slicing(8)), reason="replicas 4 -> 8")
        # 1 GPU x 8 replicas
        n.kubelet.wait_for_resource(GPU, 8, capacity=8)
        assert sorted(n.kubelet.devices(GPU))[-1].endswith("::7")


def test_plan_changes_names_each_resource_once():
    mixed = parse_config({"flags": {"migStrategy": "mixed"}})
    before = advertise(from_yaml_spec({"node": "n", "gpus": [{"model": "H100-80GB", "mig": {
        "instances": ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]}}]}), mixed)
    after = advertise(from_yaml_spec({"node": "n", "gpus": [{"model": "H100-80GB", "mig": {
        "instances": ["1g.10gb"] * 7}}]}), mixed)
    assert plan_changes(before, after) == [
        "nvidia.com/mig-1g.10gb 2 -> 7 devices",
        "nvidia.com/mig-2g.20gb removed (1 device)",
        "nvidia.com/mig-3g.40gb removed (1 device)"]
    assert plan_changes(after, after) == []


def test_a_refused_reload_keeps_the_previous_plan_serving():
    answers = []

    def loader():
        return answers.pop(0)

    inventory = from_yaml_spec(gpus(count=2), "<test spec>")
    with node(gpus(count=2), manager_options={"loader": loader}) as n:
        lines = []
        n.manager._log = lines.append
        answers.append((inventory, parse_config(time_slicing(3))))
        assert n.manager.reload("SIGHUP")
        n.kubelet.wait_for_resource(GPU, 6)  # 2 GPUs x 3 replicas

        def bad():
            raise InputError("c.yaml: version: expected 'v1' (the only config version), got 'v2'")
        answers.append(None)
        n.manager.loader = bad
        registrations = n.manager.registrations
        assert not n.manager.reload("c.yaml changed", restart_anyway=False)
        assert lines[-1] == ("reload (c.yaml changed) refused: c.yaml: version: expected 'v1' "
                             "(the only config version), got 'v2'; still serving the previous "
                             f"config ({GPU})")
        assert n.manager.registrations == registrations  # nothing restarted
        assert n.kubelet.node_status().allocatable == {GPU: 6}
        # A kubelet restart with the file still bad: the previous plan registers again.
        n.kubelet.restart()
        n.kubelet.wait_for_resource(GPU, 6, timeout=20)
        assert n.manager.failed_reloads == 2
