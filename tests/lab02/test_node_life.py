"""A node's life with the mock kubelet and the real plugin in one process: the device
manager's admission rules through restarts, reboots and unhealthy devices (kubelet
devicemanager/manager.go ``devicesToAllocate``), pod phases, the restart window and its
retry option, and the plugin's reloads."""

from __future__ import annotations

import pytest

from _node import gpus, node, pod, time_slicing
from lab02_device_plugin.config import parse_config
from lab02_device_plugin.errors import InputError
from lab02_device_plugin.inventory import from_yaml_spec
from lab02_device_plugin.kubelet import MockKubelet
from lab02_device_plugin.manager import plan_changes
from lab02_device_plugin.sharing import advertise

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
