"""The registry: every built-in placement policy, queue discipline and plugin of Lab 01, by name.

As kube-scheduler's in-tree registry (``pkg/scheduler/framework/plugins/registry.go``,
``NewInTreeRegistry``: a map from plugin name to factory, written out by hand), registration is
explicit: this module imports the plugin modules and names what they provide. Nothing registers
itself when imported, and the framework below never imports a plugin. The engine
(:mod:`lab01_cluster_sim.simulate`) looks placement policies and queue disciplines up here by
name; the command line builds ``--plugin NAME:key=value,...`` here (:func:`make_plugin`).

To add a policy, a discipline or a plugin, write its module in the plugins layer and add one
line below.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from typing import Any

from lab01_cluster_sim.autoscaler.plugin import autoscaler_plugin
from lab01_cluster_sim.defrag import defrag_plugin, shape_aware_plugin
from lab01_cluster_sim.disciplines.core import DrfDiscipline, EasyBackfill, PriorityPreemption
from lab01_cluster_sim.disciplines.preemption import checkpoints_plugin
from lab01_cluster_sim.framework.interface import PlacementPolicy
from lab01_cluster_sim.policies.dot_prod import DotProd
from lab01_cluster_sim.policies.fgd import FGD
from lab01_cluster_sim.policies.generic import BestFit, FirstFit, RandomFit, WorstFit
from lab01_cluster_sim.policies.gpu_clustering import GpuClustering
from lab01_cluster_sim.policies.gpu_packing import GpuPacking
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.fragmentation import TargetWorkload
from lab01_cluster_sim.lifecycle import node_events_plugin
from lab01_cluster_sim.framework.queue import Fifo, FifoSkip, QueueDiscipline
from lab01_cluster_sim.kubescheduler.constraints import NODE_SELECTOR, PREFERRED_AFFINITY, REQUIRED_AFFINITY
from lab01_cluster_sim.kubescheduler.nodeaffinity import NodeAffinity
from lab01_cluster_sim.kubescheduler.tainttoleration import TaintToleration
from lab01_cluster_sim.sharing_modes import time_slicing_plugin
from lab01_cluster_sim.tenancy import constraints_plugin, tenancy_plugin
from lab01_cluster_sim.topology import topology_plugin

DISCIPLINES: dict[str, type[QueueDiscipline]] = {
    cls.name: cls for cls in (Fifo, FifoSkip, PriorityPreemption, DrfDiscipline, EasyBackfill)}
"""Queue discipline name -> class: ``fifo``, ``fifo-skip``, ``priority``, ``drf``, ``backfill``."""

POLICIES: dict[str, type[PlacementPolicy]] = {
    cls.name: cls for cls in (FirstFit, BestFit, WorstFit, RandomFit, DotProd, GpuPacking, GpuClustering, FGD)}
"""Placement policy name -> class (the Score extension point: :mod:`lab01_cluster_sim.policies`):
``first-fit``, ``best-fit``, ``worst-fit``, ``random``, ``dot-prod``, ``gpu-packing``,
``gpu-clustering``, ``fgd``. A class with ``uses_target = True`` (FGD) is built with the target
workload."""

PLUGINS: dict[str, Callable[..., Any]] = {
    "topology": topology_plugin,
    "time-slicing": time_slicing_plugin,
    "constraints": constraints_plugin,
    "tenancy": tenancy_plugin,
    "shape-aware": shape_aware_plugin,
    "defrag": defrag_plugin,
    "checkpoints": checkpoints_plugin,
    "autoscaler": autoscaler_plugin,
    "node-events": node_events_plugin,
}
"""Plugin name -> factory ``factory(nodes, jobs, **options) -> plugin`` for ``--plugin``."""


KUBE_SCHEDULER_PLUGINS: dict[str, type] = {"TaintToleration": TaintToleration, "NodeAffinity": NodeAffinity}
"""kube-scheduler's node-selection plugins Lab 01 models (besides NodeResourcesFit's score, a
placement policy), by their kube-scheduler name, in the default profile's order."""


def kube_scheduler_plugins(nodes, jobs, weights: dict[str, int] | None = None) -> list[Any]:
    """The :data:`KUBE_SCHEDULER_PLUGINS` a run of ``jobs`` on ``nodes`` needs, with their Score
    ``weights`` (default: kube-scheduler's default profile, 3 and 2). A plugin that cannot
    change any decision is left out (no node has a taint, for TaintToleration; no job has a
    nodeSelector or node affinity, for NodeAffinity): kube-scheduler would run it and pass every
    node with an equal score."""
    weights = weights or {}
    out: list[Any] = []
    if any(n.taints for n in nodes):
        out.append(TaintToleration(weights.get("TaintToleration", 3)))
    if any(NODE_SELECTOR in j.extras or REQUIRED_AFFINITY in j.extras or PREFERRED_AFFINITY in j.extras for j in jobs):
        out.append(NodeAffinity(weights.get("NodeAffinity", 2)))
    return out


def get_discipline(name: str, **kwargs) -> QueueDiscipline:
    """A new instance of the queue discipline registered as ``name``, built with ``kwargs``.

    Raises:
        InputError: unknown name (the message lists the known ones).
    """
    try:
        cls = DISCIPLINES[name]
    except KeyError:
        raise InputError(f"unknown queue discipline {name!r}; expected one of: "
                         f"{', '.join(sorted(DISCIPLINES))}") from None
    return cls(**kwargs)


def check_policy_name(name: str) -> type[PlacementPolicy]:
    """The class registered as ``name`` in :data:`POLICIES`.

    Raises:
        InputError: unknown name (the message lists the known ones, each of which works
            with :func:`make_policy` and with ``simulate``/``replay`` by name).
    """
    try:
        return POLICIES[name]
    except KeyError:
        raise InputError(f"unknown policy {name!r}; expected one of: {', '.join(sorted(POLICIES))}") from None


def uses_target(name: str) -> bool:
    """True when the policy ``name`` needs the target workload (FGD).

    Raises:
        InputError: unknown name.
    """
    return bool(getattr(check_policy_name(name), "uses_target", False))


def get_policy(name: str, **kwargs) -> PlacementPolicy:
    """Instantiate the policy registered as ``name`` with ``kwargs``.

    A policy that needs the target workload (FGD) needs ``target=``; prefer
    :func:`make_policy`, or pass the name to ``simulate``/``replay``, which build the
    target from the job list.

    Raises:
        InputError: unknown name (the message lists the known ones), or a target-based
            policy without ``target``.
    """
    cls = check_policy_name(name)
    if getattr(cls, "uses_target", False) and kwargs.get("target") is None:
        raise InputError(f"policy {name!r} needs the target workload: use make_policy({name!r}, target=...) "
                         "with a TargetWorkload, or pass the name to simulate()/replay(), which build it "
                         "from the job list")
    return cls(**kwargs)


def make_policy(name: str, target=None) -> PlacementPolicy:
    """Like :func:`get_policy`, but hands ``target`` (a
    :class:`~lab01_cluster_sim.fragmentation.TargetWorkload`) to the policies that need
    the target workload (those with a class attribute ``uses_target = True``, e.g. FGD).

    Raises:
        InputError: unknown name, or a target-based policy without a target.
    """
    if uses_target(name):
        return get_policy(name, target=target)
    return get_policy(name)


def policy_for_jobs(name: str, jobs: Sequence[Any], target=None) -> PlacementPolicy:
    """The policy ``name`` for a run of ``jobs``: a policy that needs the target workload
    (FGD) gets ``target`` or, as the FGD simulator does, one built from ``jobs`` themselves
    (:meth:`~lab01_cluster_sim.fragmentation.TargetWorkload.from_jobs`; ``GetTypicalPods`` in
    pkg/utils/frag.go of hkust-adsl/kubernetes-scheduler-simulator).

    Raises:
        InputError: unknown name; a target-based policy with neither a target nor jobs.
    """
    if target is None and uses_target(name):
        if not jobs:
            raise InputError(f"policy {name!r} needs a target workload, built from the jobs: got none")
        target = TargetWorkload.from_jobs(jobs)
    return make_policy(name, target=target)


def policy_names() -> list[str]:
    """Names of every registered policy, sorted."""
    return sorted(POLICIES)


def parse_plugin_spec(text: str) -> tuple[str, dict[str, Any]]:
    """``"topology:max_wait_s=600,comm_fraction=0.3"`` -> ``("topology", {...})``.

    Values are read as numbers when they look like numbers (``inf`` included), else kept as
    strings.

    Raises:
        InputError: an empty name or an option without ``=``, naming the spec.
    """
    name, _, rest = text.partition(":")
    name = name.strip()
    if not name:
        raise InputError(f"--plugin {text!r}: expected NAME or NAME:key=value,...")
    options: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = part.partition("=")
        if not eq or not key.strip():
            raise InputError(f"--plugin {text!r}: option {part!r} is not key=value")
        try:
            num = float(value)
            options[key.strip()] = int(num) if num.is_integer() and "." not in value and "e" not in value.lower() \
                and math.isfinite(num) else num
        except ValueError:
            options[key.strip()] = value.strip()
    return name, options


def make_plugin(text: str, nodes, jobs) -> Any:
    """Build the plugin described by ``text`` (see :func:`parse_plugin_spec`).

    Options are checked against the factory's keyword arguments: an unknown key, or a value
    not of the type of the option's default (number or text), is refused naming it.

    Raises:
        InputError: unknown name (listing the known ones), an unknown option (listing the
            known ones), a value of the wrong type, or a value the plugin refuses.
    """
    name, options = parse_plugin_spec(text)
    factory = PLUGINS.get(name)
    if factory is None:
        raise InputError(f"--plugin {name!r}: unknown plugin; expected one of: {', '.join(sorted(PLUGINS))}")
    params = {k: p for k, p in inspect.signature(factory).parameters.items() if k not in ("nodes", "jobs")}
    for key, value in list(options.items()):
        if key not in params:
            raise InputError(f"--plugin {text!r}: unknown option {key!r}; {name} takes: "
                             f"{', '.join(params) or 'no options'}")
        default = params[key].default
        if isinstance(default, (int, float)) and not isinstance(default, bool):
            if not isinstance(value, (int, float)):
                raise InputError(f"--plugin {text!r}: option {key!r} expects a number, got {value!r}")
            options[key] = float(value) if isinstance(default, float) else value
        elif isinstance(default, str):
            options[key] = str(value)
    try:
        return factory(nodes, jobs, **options)
    except (TypeError, ValueError) as exc:
        raise InputError(f"--plugin {text!r}: {exc}") from None


__all__ = ["DISCIPLINES", "KUBE_SCHEDULER_PLUGINS", "PLUGINS", "POLICIES", "check_policy_name", "get_discipline",
           "get_policy", "kube_scheduler_plugins", "make_plugin", "make_policy", "parse_plugin_spec", "policy_for_jobs",
           "policy_names", "uses_target"]
