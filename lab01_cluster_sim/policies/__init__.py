"""Placement policies: given a worker's request and the cluster state, score nodes.

A policy is a small object with the :class:`~lab01_cluster_sim.policies.base.PlacementPolicy`
shape. :data:`POLICIES` maps each policy's name (the word used on the command line, in
tables and in errors) to its class, like the Kubernetes scheduler's map of scoring
strategies: a new policy is one new entry and the engine is untouched.
"""

from lab01_cluster_sim.policies.base import PlacementPolicy, get_policy, POLICIES, place

__all__ = ["PlacementPolicy", "POLICIES", "get_policy", "place"]
