"""Placement policies: given a worker's request and the cluster state, score nodes.

A policy is a small object with the :class:`~lab01_cluster_sim.policies.base.PlacementPolicy`
shape. :data:`POLICIES` maps each policy's name (the word used on the command line, in
tables and in errors) to its class, like the Kubernetes scheduler's map of scoring
strategies: a new policy is one new entry and the engine is untouched.

Built in (the FGD paper's ones as pkg/simulator/plugin/ of hkust-adsl/kubernetes-scheduler-simulator scores):

- ``first-fit``, ``best-fit``, ``worst-fit``, ``random`` (:mod:`.generic`);
- the FGD paper's baselines ``dot-prod`` (:mod:`.dot_prod`), ``gpu-packing``
  (:mod:`.gpu_packing`), ``gpu-clustering`` (:mod:`.gpu_clustering`); its Random and BestFit
  are ``random`` and ``best-fit``;
- ``fgd``, Fragmentation Gradient Descent (:mod:`.fgd`), which needs the target workload:
  build it with :func:`~lab01_cluster_sim.policies.base.make_policy`.
"""

from lab01_cluster_sim.framework.interface import PlacementPolicy
from lab01_cluster_sim.policies.base import POLICIES, get_policy, make_policy, place, policy_names

__all__ = ["PlacementPolicy", "POLICIES", "get_policy", "make_policy", "place", "policy_names"]
