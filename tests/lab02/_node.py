"""A node for end-to-end tests: the mock kubelet and the real plugin (PluginManager) over
unix sockets in a short temporary directory. Every wait in here has a timeout."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from lab02_device_plugin.kubelet.lifecycle import MockKubelet
from lab02_device_plugin.kubelet.pod import Container, Pod
from lab02_device_plugin.plugin.config import parse_config
from lab02_device_plugin.plugin.health import HealthPolicy, SimulatedHealthSource
from lab02_device_plugin.plugin.inventory import Inventory, from_yaml_spec
from lab02_device_plugin.plugin.manager import PluginManager


@dataclass
class Node:
    kubelet: MockKubelet
    manager: PluginManager
    health: SimulatedHealthSource
    inventory: Inventory
    plugin_dir: Path


def time_slicing(replicas: int, fail_gt1: bool = False, strategy: str = "timeSlicing",
                 name: str = "nvidia.com/gpu", **flags) -> dict:
    """An NVIDIA plugin config dict sharing ``name`` ``replicas`` ways."""
    return {"version": "v1", "flags": {"migStrategy": "none", **flags},
            "sharing": {strategy: {"failRequestsGreaterThanOne": fail_gt1,
                                   "resources": [{"name": name, "replicas": replicas}]}}}


def gpus(model: str = "H100-80GB", count: int = 1, **extra) -> dict:
    """A YAML inventory spec dict of ``count`` simulated GPUs."""
    return {"node": "e2e-node", "gpus": [{"model": model, "count": count}], **extra}


@contextmanager
def node(spec: dict | Inventory, config: dict | None = None, *, recovery: bool = True,
         watch_interval: float = 0.05, wait: bool = True, kubelet_options: dict | None = None,
         manager_options: dict | None = None) -> Iterator[Node]:
    """Start the kubelet, then the plugins; wait until every advertised resource is in the
    kubelet's node status (unless ``wait`` is False). Stops both and removes the directory.
    ``kubelet_options`` / ``manager_options`` go to MockKubelet / PluginManager."""
    inventory = spec if isinstance(spec, Inventory) else from_yaml_spec(spec, "<test spec>")
    cfg = parse_config(config or {"version": "v1"}, "<test config>")
    plugin_dir = Path(tempfile.mkdtemp(prefix="e2e-"))
    source = SimulatedHealthSource()
    kubelet = MockKubelet(plugin_dir, **(kubelet_options or {}))
    manager = PluginManager(inventory, cfg, plugin_dir, health_source=source,
                            health_policy=HealthPolicy(recovery=recovery),
                            watch_interval=watch_interval, retry_interval=0.5,
                            **(manager_options or {}))
    try:
        kubelet.start()
        manager.start()
        if wait:
            for resource in manager.plan.resources:
                kubelet.wait_for_resource(resource.name, len(resource.devices), timeout=20)
        yield Node(kubelet, manager, source, inventory, plugin_dir)
    finally:
        manager.stop()
        kubelet.stop()
        shutil.rmtree(plugin_dir, ignore_errors=True)


def pod(name: str, count: int = 1, resource: str = "nvidia.com/gpu") -> Pod:
    """A one-container pod (container "main") asking for ``count`` units of ``resource``."""
    return Pod(name, [Container("main", limits={resource: count})])
