"""Scenarios: the Kubernetes objects platform teams already write, read, checked and run.

- :mod:`.yamlio`: bounded, safe YAML reading with ``file:line:column`` of every value.
- :mod:`.schemas`: the typed subset of fields the simulator models, per kind (JSON Schema),
  checked against the real Kueue and Karpenter CRDs by a test.
- :mod:`.validate`: Kubernetes core objects through ``kubernetes-validate`` (strict), the
  others through their schema; one-line errors naming file, object and field path.
- :mod:`.load`: objects -> nodes, jobs, Kueue admission records, NodePools, scoring.
- :mod:`.scoring`: kube-scheduler's NodeResourcesFit scoring strategies with resource weights.
- :mod:`.run`: running a scenario through the simulator and writing metrics and figures.

``python -m lab01_cluster_sim run SCENARIO`` is the command (:mod:`lab01_cluster_sim.commands.run`).
"""

from lab01_cluster_sim.scenario.load import Scenario, load_scenario
from lab01_cluster_sim.scenario.run import RunResult, blockers, kind_of, run_scenario
from lab01_cluster_sim.scenario.yamlio import ScenarioError

__all__ = ["RunResult", "Scenario", "ScenarioError", "blockers", "kind_of", "load_scenario", "run_scenario"]
