"""A node's life, told as stories: what a learner sees on a GPU node when the device plugin
restarts, when MIG is repartitioned, and when a GPU goes unhealthy under a running pod.

Each story runs the real plugin (:class:`~lab02_device_plugin.plugin.manager.PluginManager`,
gRPC over unix sockets) against the mock kubelet
(:class:`~lab02_device_plugin.kubelet.lifecycle.MockKubelet`) in a temporary directory, one
step at a time, and waits for each step's effect before taking a :class:`Moment`: the node's
capacity and allocatable, the pods' phases, and the narration lines (kubelet's and plugin's)
that explain the step. The waits make every story deterministic (the same lines on every
run), so the book (chapter 8) and the lab notebook can show them.

* :func:`restart_window`: the plugin's pod restarts while the kubelet restarts too; a pod
  bound in the window before the plugin registers again ends Failed (UnexpectedAdmissionError)
  and is never retried (kubernetes#125579, #133382); with ``retry_admission_after`` it waits
  and runs, as the fix proposed in kubernetes#128043 would have it. A completed pod is not
  admitted again (kubernetes PR #126343, the fix of #117955).
* :func:`mig_repartition`: an H100 cut as 3g.40gb + 2g.20gb + 2 x 1g.10gb becomes 7 x
  1g.10gb; on SIGHUP the plugin re-reads the GPUs, stops the servers of the profiles that
  are gone and registers the new count; the kubelet keeps the retired resources at
  allocatable 0 for its 5-minute grace period, then drops them.
* :func:`unhealthy_gpu`: Xid 79 on a GPU that a pod uses: the pod keeps running, allocatable
  drops, and the kubelet refuses to give the pod that GPU again ("previously allocated
  devices are no longer healthy").
* :func:`unslice_node`: time-slicing removed from a GPU under four running pods: they keep
  running and keep their replica IDs, the node advertises one GPU, and a fifth pod stays
  Pending (kubernetes#60388: the kubelet does not evict pods for devices that left).
"""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from lab02_device_plugin.kubelet.lifecycle import MockKubelet
from lab02_device_plugin.kubelet.pod import Container, Pod
from lab02_device_plugin.plugin.config import Config, parse_config
from lab02_device_plugin.plugin.health import HealthPolicy, SimulatedHealthSource
from lab02_device_plugin.plugin.inventory import Inventory, from_yaml_spec
from lab02_device_plugin.plugin.manager import PluginManager

GPU = "nvidia.com/gpu"
#: How long any one step may take before the story fails (seconds).
STEP_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Moment:
    """The node after one step of a story.

    Attributes:
        step: what just happened ("the kubelet restarts").
        capacity / allocatable: the node's extended resources (resource -> count).
        pods: pod name -> (phase, reason).
        notes: the narration lines that explain the step, in the order they happened.
    """

    step: str
    capacity: dict[str, int]
    allocatable: dict[str, int]
    pods: dict[str, tuple[str, str]]
    notes: tuple[str, ...] = ()


@dataclass
class Story:
    """A sequence of :class:`Moment` objects; :meth:`lines` prints them."""

    title: str
    moments: list[Moment] = field(default_factory=list)

    def lines(self, start: int = 1) -> list[str]:
        """The title, then one block per moment from moment ``start`` (1-based, numbered as in
        the whole story): the step, the node status, the pods, the notes."""
        out = [self.title]
        for n, m in enumerate(self.moments, start=1):
            if n < start:
                continue
            out.append(f"{n}. {m.step}")
            resources = sorted(set(m.capacity) | set(m.allocatable))
            node = ", ".join(f"{r} {m.allocatable.get(r, 0)}/{m.capacity.get(r, 0)}"
                             for r in resources) or "no extended resources"
            out.append(f"   node (allocatable/capacity): {node}")
            if m.pods:
                out.append("   pods: " + ", ".join(
                    f"{p} {phase}" + (f" ({reason})" if reason else "")
                    for p, (phase, reason) in m.pods.items()))
            out += [f"   > {note}" for note in m.notes]
        return out


class _Node:
    """The plugin and the mock kubelet of one story, and the notes taken between moments."""

    def __init__(self, plugin_dir: Path, inventory: Inventory, config: Config,
                 kubelet_options: dict) -> None:
        self.dir = plugin_dir
        self.inventory, self.config = inventory, config
        self.clock_offset = 0.0
        self.kubelet = MockKubelet(plugin_dir, clock=lambda: time.monotonic() + self.clock_offset,
                                   **kubelet_options)
        self.health = SimulatedHealthSource()
        self.plugin_log: list[str] = []
        self.manager: PluginManager | None = None
        self._seen_kubelet = 0
        self._seen_plugin = 0

    def start_plugin(self) -> None:
        self.manager = PluginManager(
            self.inventory, self.config, self.dir, health_source=self.health,
            health_policy=HealthPolicy(), watch_interval=0.05, retry_interval=0.5,
            log=self.plugin_log.append, loader=lambda: (self.inventory, self.config))
        self.manager.start()

    def stop_plugin(self) -> None:
        if self.manager is not None:
            self.manager.stop()
            self.manager = None

    def wait(self, predicate: Callable[[], bool], what: str) -> None:
        self.kubelet.wait_for(predicate, STEP_TIMEOUT_S, what)

    def wait_allocatable(self, resource: str, count: int) -> None:
        self.wait(lambda: self.kubelet.is_registered(resource)
                  and self.kubelet.node_status().allocatable.get(resource) == count,
                  f"{resource} allocatable={count}")

    def wait_note(self, *patterns: str) -> None:
        """Wait until, for each pattern, a line not yet in a moment matches it (the kubelet
        narrates after its state changes, and the plugin logs after the kubelet answers)."""
        def seen() -> bool:
            new = self.kubelet.narration[self._seen_kubelet:] + self.plugin_log[self._seen_plugin:]
            return all(any(re.search(p, line) for line in new) for p in patterns)
        self.wait(seen, f"narration {patterns}")

    def moment(self, step: str, *patterns: str) -> Moment:
        """Snapshot the node; the notes are the new narration lines (kubelet's, then the
        plugin's) matching any of ``patterns`` (regular expressions)."""
        status = self.kubelet.node_status()
        narration = self.kubelet.narration
        new = narration[self._seen_kubelet:] + self.plugin_log[self._seen_plugin:]
        self._seen_kubelet, self._seen_plugin = len(narration), len(self.plugin_log)
        notes = tuple(_tidy(line, self.dir) for line in new
                      if any(re.search(p, line) for p in patterns))
        return Moment(step, status.capacity, status.allocatable, self.kubelet.pods(), notes)


def _tidy(line: str, plugin_dir: Path) -> str:
    """The line without what differs between runs: the temporary directory, and the gRPC
    detail of how a stream ended (the plugin's clean close or a cancelled call)."""
    line = line.replace(str(plugin_dir), "<plugin-dir>")
    return re.sub(r"stream ended \([^)]*\)\.", "stream ended.", line)


@contextmanager
def _node(spec: dict, config: dict | None = None, **kubelet_options) -> Iterator[_Node]:
    inventory = from_yaml_spec(spec, "<story>")
    plugin_dir = Path(tempfile.mkdtemp(prefix="life-"))
    node = _Node(plugin_dir, inventory, parse_config(config or {"version": "v1"}, "<story>"),
                 kubelet_options)
    try:
        node.kubelet.start()
        node.start_plugin()
        yield node
    finally:
        node.stop_plugin()
        node.kubelet.stop()
        shutil.rmtree(plugin_dir, ignore_errors=True)


def _pod(name: str, count: int = 1, resource: str = GPU) -> Pod:
    return Pod(name, [Container("main", {resource: count})])


# --------------------------------------------------------------------------- stories

def restart_window(retry_admission_after: float | None = None) -> Story:
    """The plugin and the kubelet restart; a pod is bound before the plugin is back.

    Two H100s. ``train`` (1 GPU) runs; ``batch`` (1 GPU) ran to completion. The plugin's pod
    is being replaced (stopped), the kubelet restarts, and ``late`` (1 GPU) is bound to the
    node before the plugin registers again (the scheduler still saw the old node status).

    Args:
        retry_admission_after: off (None): ``late`` ends Failed, as today's kubelet does.
            Seconds: the mock kubelet's retry option keeps it Pending and admits it once the
            plugin is back.
    """
    title = ("The restart window" + (f" (retry option: {retry_admission_after:g} s)"
                                     if retry_admission_after else " (today's kubelet)"))
    story = Story(title)
    options = {"retry_admission_after": retry_admission_after} if retry_admission_after else {}
    with _node({"node": "life", "gpus": [{"model": "H100-80GB", "count": 2}]}, **options) as n:
        n.wait_allocatable(GPU, 2)
        n.kubelet.admit_pod(_pod("train"))
        n.kubelet.admit_pod(_pod("batch"))
        n.kubelet.complete_pod("batch")
        story.moments.append(n.moment("train runs; batch ran to completion",
                                      r"^Pod batch"))
        n.stop_plugin()
        n.wait_note(r"stream ended")
        story.moments.append(n.moment("the plugin's pod stops (an update rolls out)",
                                      r"stream ended"))
        n.kubelet.restart()
        story.moments.append(n.moment(
            "the kubelet restarts before the plugin is back",
            r"checkpoint restored", r"^kubelet: admitting", r"^Admit (train|batch)",
            r"keeps .* \(no check"))
        late = n.kubelet.admit_pod(_pod("late"), bound=True)
        story.moments.append(n.moment("late is bound to the node in the window",
                                      r"^Admit late: not"))
        n.start_plugin()
        n.wait_allocatable(GPU, 2)
        n.wait_note(r"^Register", r"registered with")
        if late.reason == "AdmissionRetry":
            n.wait_note(r"^Admit late: admitted")
        story.moments.append(n.moment("the plugin registers again",
                                      r"^Register", r"^Admit late", r"registered with"))
    return story


def mig_repartition() -> Story:
    """An H100 repartitioned from 3g.40gb + 2g.20gb + 2 x 1g.10gb to 7 x 1g.10gb, then SIGHUP.

    The plugin re-reads the GPUs (here from the changed spec; NVML on a real node), stops
    the servers of mig-3g.40gb and mig-2g.20gb and registers mig-1g.10gb with 7 devices. The
    kubelet keeps the retired resources at allocatable 0 until its 5-minute grace period
    ends (the story moves the kubelet's clock past it).
    """
    story = Story("A MIG repartition (migStrategy: mixed)")
    before = {"node": "life", "gpus": [{"model": "H100-80GB", "mig": {
        "enabled": True, "instances": ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]}}]}
    after = {"node": "life", "gpus": [{"model": "H100-80GB", "mig": {
        "enabled": True, "instances": ["1g.10gb"] * 7}}]}
    with _node(before, {"version": "v1", "flags": {"migStrategy": "mixed"}}) as n:
        for name, count in (("nvidia.com/mig-1g.10gb", 2), ("nvidia.com/mig-2g.20gb", 1),
                            ("nvidia.com/mig-3g.40gb", 1)):
            n.wait_allocatable(name, count)
        story.moments.append(n.moment("the GPU is cut as 3g.40gb + 2g.20gb + 2 x 1g.10gb"))
        n.inventory = from_yaml_spec(after, "<story>")  # what NVML reports after mig-parted
        n.manager.reload("SIGHUP")
        n.wait_allocatable("nvidia.com/mig-1g.10gb", 7)
        n.wait_note(r"ListAndWatch nvidia.com/mig-3g.40gb: stream ended",
                    r"ListAndWatch nvidia.com/mig-2g.20gb: stream ended")
        story.moments.append(n.moment("repartitioned to 7 x 1g.10gb, then SIGHUP to the plugin",
                                      r"^reload"))
        n.clock_offset = 301.0  # the kubelet's clock, past endpointStopGracePeriod (5 min)
        story.moments.append(n.moment("5 minutes later"))
    return story


def unhealthy_gpu() -> Story:
    """Xid 79 (fallen off the bus) on the GPU a running pod uses; two H100s."""
    story = Story("A GPU goes unhealthy under a running pod")
    with _node({"node": "life", "gpus": [{"model": "H100-80GB", "count": 2}]}) as n:
        n.wait_allocatable(GPU, 2)
        result = n.kubelet.admit_pod(_pod("train"))
        (gpu,) = result.devices["main"][GPU]
        story.moments.append(n.moment("train runs on one GPU"))
        n.health.inject_xid(gpu, 79)
        n.wait_allocatable(GPU, 1)
        n.wait_note(r"went unhealthy")
        story.moments.append(n.moment("Xid 79 on train's GPU", r"went unhealthy"))
        n.kubelet.admit_pod(_pod("serve"))
        story.moments.append(n.moment("serve asks for a GPU while the healthy one is idle",
                                      r"^Schedule serve"))
        n.kubelet.admit_pod(_pod("train"))
        story.moments.append(n.moment(
            "train is admitted again (as after a node reboot, once the plugin is back)",
            r"^Admit train: not"))
    return story


def unslice_node() -> Story:
    """A time-sliced GPU is un-sliced under four running pods (the workshop's step 3.5).

    One H100 time-sliced 4 ways (``nvidia.com/gpu`` with 4 replicas) runs four one-replica
    pods. The node's time-slicing configuration is removed: the plugin restarts with the
    default configuration and registers one device. The kubelet does not evict running pods
    when devices leave the plugin's list (kubernetes#60388; the device manager frees an
    allocation only when its pod ends): the four pods keep running and keep their replica
    IDs, the node advertises one ``nvidia.com/gpu``, and a fifth pod stays Pending because
    the four already hold more than the node now has.
    """
    story = Story("Un-slicing a node under four running pods")
    sliced = {"version": "v1", "sharing": {"timeSlicing": {
        "resources": [{"name": GPU, "replicas": 4}]}}}
    with _node({"node": "life", "gpus": [{"model": "H100-80GB", "count": 1}]}, sliced) as n:
        n.wait_allocatable(GPU, 4)
        for k in range(1, 5):
            n.kubelet.admit_pod(_pod(f"pod-{k}"))
        story.moments.append(n.moment("four pods on one GPU time-sliced 4 ways"))
        n.config = parse_config({"version": "v1"}, "<story>")
        n.manager.reload("time-slicing label removed")
        n.wait(lambda: n.kubelet.is_registered(GPU)
               and n.kubelet.node_status().capacity.get(GPU) == 1
               and n.kubelet.node_status().allocatable.get(GPU) == 1, f"{GPU} capacity=1")
        held = n.kubelet.allocations()
        kept = [f"{pod} keeps {', '.join(ids)}" for pod in sorted(held)
                for ids in (sorted(d for c in held[pod].values() for d in c.get(GPU, [])),)
                if ids]
        moment = n.moment("the time-slicing configuration is removed; the plugin restarts",
                          r"^reload", r"^ListAndWatch \S+: \d+ device")
        story.moments.append(Moment(moment.step, moment.capacity, moment.allocatable,
                                    moment.pods, moment.notes + tuple(kept)))
        n.kubelet.admit_pod(_pod("pod-5"))
        story.moments.append(n.moment("pod-5 asks for one nvidia.com/gpu", r"^Schedule pod-5"))
    return story
