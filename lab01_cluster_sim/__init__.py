"""Lab 01: a discrete-event GPU cluster scheduling simulator.

It replays the Alibaba GPU cluster trace of 2023 (the ``openb`` trace of Weng et al.,
"Beware of Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation Gradient
Descent", USENIX ATC '23) or a seeded synthetic workload, and compares placement
policies, gang versus naive placement, queue disciplines, topology and autoscaling.

Units everywhere: time in seconds, CPU in milli-cores, memory in MiB, GPU share in
milli-GPU (1000 = one whole GPU), as in the trace.

The main entry points are importable from the package itself::

    from lab01_cluster_sim import Node, Job, run_simulation, run_replay, compare_policies

``lab01_cluster_sim.simulate`` and ``lab01_cluster_sim.replay`` are *modules* (the timed
engine and the paper's replay); their main functions are exported here under names that
cannot clash with them: :func:`run_simulation` is ``simulate.simulate``, :func:`run_replay`
is ``replay.replay`` and :func:`compare_policies` is ``replay.compare``. The exports are
loaded on first use, so ``import lab01_cluster_sim`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS: dict[str, tuple[str, str]] = {
    # model
    "Node": ("lab01_cluster_sim.model", "Node"),
    "Job": ("lab01_cluster_sim.model", "Job"),
    "JobState": ("lab01_cluster_sim.model", "JobState"),
    "JobRecord": ("lab01_cluster_sim.model", "JobRecord"),
    "MILLI_PER_GPU": ("lab01_cluster_sim.model", "MILLI_PER_GPU"),
    "InputError": ("lab01_cluster_sim.errors", "InputError"),
    "TraceFormatError": ("lab01_cluster_sim.errors", "TraceFormatError"),
    # timed mode
    "run_simulation": ("lab01_cluster_sim.simulate", "simulate"),
    "Simulation": ("lab01_cluster_sim.simulate", "Simulation"),
    "SimulationResult": ("lab01_cluster_sim.metrics", "SimulationResult"),
    # the paper's replay
    "run_replay": ("lab01_cluster_sim.replay", "replay"),
    "compare_policies": ("lab01_cluster_sim.replay", "compare"),
    "summarise": ("lab01_cluster_sim.replay", "summarise"),
    # policies and fragmentation
    "get_policy": ("lab01_cluster_sim.registry", "get_policy"),
    "make_policy": ("lab01_cluster_sim.registry", "make_policy"),
    "policy_names": ("lab01_cluster_sim.registry", "policy_names"),
    "TargetWorkload": ("lab01_cluster_sim.fragmentation", "TargetWorkload"),
    # workloads
    "load_trace": ("lab01_cluster_sim.workloads.openb", "load_trace"),
    "load_nodes": ("lab01_cluster_sim.workloads.openb", "load_nodes"),
    "load_pods": ("lab01_cluster_sim.workloads.openb", "load_pods"),
    "default_trace": ("lab01_cluster_sim.workloads.synthetic", "default_trace"),
    "synthetic_nodes": ("lab01_cluster_sim.workloads.synthetic", "synthetic_nodes"),
    "synthetic_pods": ("lab01_cluster_sim.workloads.synthetic", "synthetic_pods"),
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    try:
        module, attr = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'lab01_cluster_sim' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value  # later look-ups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
