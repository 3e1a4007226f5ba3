"""kube-scheduler's NodeAffinity plugin, as a plugin of the one engine.

Upstream (Kubernetes v1.35.4, ``pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go``
over ``k8s.io/component-helpers/scheduling/corev1/nodeaffinity``):

- Filter: ``NodeAffinity.Filter``: the node must match the pod's ``nodeSelector`` (every pair
  among its labels) AND its ``requiredDuringSchedulingIgnoredDuringExecution`` node selector
  (terms ORed; a term's ``matchExpressions`` and ``matchFields`` ANDed; operators In, NotIn,
  Exists, DoesNotExist, Gt, Lt; ``matchFields`` on ``metadata.name``), as
  ``GetRequiredNodeAffinity(pod).Match(node)``; status UnschedulableAndUnresolvable, reason
  ``node(s) didn't match Pod's node affinity/selector`` (``ErrReasonPod``). The matching is
  :mod:`lab01_cluster_sim.corev1`'s.
- Score: ``NodeAffinity.Score``: the sum of the weights of the
  ``preferredDuringSchedulingIgnoredDuringExecution`` terms the node matches
  (``PreferredSchedulingTerms.Score``); ``NormalizeScore`` is ``DefaultNormalizeScore(100,
  reverse=false)`` over the nodes scored: ``100 * sum // max sum`` (all 0 when no candidate
  matches a term). Weight 2 in the default profile (``default_plugins.go``).

Not modelled (the scenario reader refuses them): the plugin's ``addedAffinity`` argument
(``NodeAffinityArgs``). Node labels are static during a run ("IgnoredDuringExecution" then
holds trivially).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from lab01_cluster_sim.cluster import Request
from lab01_cluster_sim.corev1 import RequiredNodeAffinity, preferred_score
from lab01_cluster_sim.framework.interface import Plugin, default_normalize_score
from lab01_cluster_sim.kubescheduler.constraints import preferred_affinity, required_affinity
from lab01_cluster_sim.model import Job, JobRecord, Node

FILTER_REASON = "node(s) didn't match Pod's node affinity/selector"
"""The Filter's reason (``ErrReasonPod``, ``node_affinity.go``)."""
DEFAULT_WEIGHT = 2
"""NodeAffinity's Score weight in kube-scheduler's default profile."""


def node_filter(nodes: Sequence[Node], job: Job) -> np.ndarray:
    """bool (len(nodes),): ``NodeAffinity.Filter`` per node for ``job``'s pods."""
    required = required_affinity(job)
    return np.array([required.matches(n.labels, n.name) for n in nodes], dtype=bool)


def node_scores(nodes: Sequence[Node], job: Job) -> np.ndarray:
    """int64 (len(nodes),): ``NodeAffinity.Score`` then ``NormalizeScore`` over ``nodes`` (the
    nodes scored) for ``job``'s pods."""
    terms = preferred_affinity(job)
    sums = np.array([preferred_score(terms, n.labels, n.name) for n in nodes], dtype=np.int64)
    return default_normalize_score(sums, reverse=False)


class NodeAffinity(Plugin):
    """Engine plugin at the Filter and Score points (module docstring).

    Args:
        weight: its Score weight (kube-scheduler's default profile: 2).

    Raises:
        ValueError: a weight below 0.
    """

    name = "NodeAffinity"
    filter_reason = FILTER_REASON

    def __init__(self, weight: int = DEFAULT_WEIGHT) -> None:
        if weight < 0:
            raise ValueError(f"NodeAffinity: weight must be >= 0, got {weight}")
        self.score_weight = weight
        self._sim: Any = None
        self._masks: dict[tuple, np.ndarray] = {}
        self._sums: dict[tuple, np.ndarray] = {}

    def attach(self, sim: Any) -> None:
        self._sim = sim

    def mask(self, required: RequiredNodeAffinity) -> np.ndarray:
        """bool (N,): the nodes that match ``required`` (cached per requirement)."""
        nodes = self._sim.state.nodes
        key = (required, len(nodes))
        out = self._masks.get(key)
        if out is None:
            out = self._masks[key] = np.array([required.matches(n.labels, n.name) for n in nodes], dtype=bool)
        return out

    def filter(self, request: Request, record: JobRecord | None) -> np.ndarray:
        """bool (N,): the nodes the job's pods' nodeSelector and required node affinity allow
        (all nodes when asked about a shape)."""
        if record is None:
            return np.ones(self._sim.state.num_nodes, dtype=bool)
        required = required_affinity(record.job)
        if required.is_empty:
            return np.ones(self._sim.state.num_nodes, dtype=bool)
        return self.mask(required)

    def score(self, sim: Any, record: JobRecord | None, request: Request, candidates: np.ndarray) -> np.ndarray:
        """int64 (k,): ``100 * matched weight // max matched weight`` over ``candidates``."""
        terms = preferred_affinity(record.job) if record is not None else ()
        if not terms:
            return np.zeros(len(candidates), dtype=np.int64)
        nodes = sim.state.nodes
        key = (terms, len(nodes))
        sums = self._sums.get(key)
        if sums is None:
            sums = self._sums[key] = np.array([preferred_score(terms, n.labels, n.name) for n in nodes], dtype=np.int64)
        return default_normalize_score(sums[candidates], reverse=False)


__all__ = ["DEFAULT_WEIGHT", "FILTER_REASON", "NodeAffinity", "node_filter", "node_scores"]
