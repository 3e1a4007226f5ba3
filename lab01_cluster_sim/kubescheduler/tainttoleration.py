"""kube-scheduler's TaintToleration plugin, and the NoExecute eviction of the taint eviction
controller, as a plugin of the one engine.

Upstream (Kubernetes v1.35.4):

- Filter: ``TaintToleration.Filter`` (``pkg/scheduler/framework/plugins/tainttoleration/
  taint_toleration.go``): a node is refused when it has a NoSchedule or NoExecute taint that
  none of the pod's tolerations tolerates (``FindMatchingUntoleratedTaint`` with
  ``DoNotScheduleTaintsFilterFunc``), status UnschedulableAndUnresolvable, reason
  ``node(s) had untolerated taint(s)`` (v1.35's text; releases up to v1.33 named the taint,
  ``node(s) had untolerated taint {key: value}``).
- Score: ``TaintToleration.Score``: the number of the node's PreferNoSchedule taints that the
  pod's tolerations with effect PreferNoSchedule or empty do not tolerate
  (``countIntolerableTaintsPreferNoSchedule``); ``NormalizeScore`` is
  ``DefaultNormalizeScore(100, reverse=true)`` over the nodes scored: ``100 - 100 * count //
  max count`` (all 100 when no node has such a taint). Weight 3 in the default profile
  (``pkg/scheduler/apis/config/v1/default_plugins.go``).
- NoExecute: a pod bound to a node with NoExecute taints it tolerates is deleted after the
  smallest ``tolerationSeconds`` of the tolerations used (the first toleration tolerating each
  NoExecute taint), counted from when it is bound; a ``tolerationSeconds`` <= 0 deletes it at
  once, none at all keeps it forever (``processPodOnNode``, ``getMinTolerationTime``,
  ``GetMatchingTolerations``: ``pkg/controller/tainteviction/taint_eviction.go`` and
  ``pkg/apis/core/v1/helper/helpers.go``). The simulator evicts the job (graceful termination
  as its pods' ``terminationGracePeriodSeconds``) and requeues it, as the Job controller would
  recreate the pod; it may land on the same node again.

Domain: taints are static (given on the Node objects, never added or removed during a run), so
a NoExecute taint never evicts a pod that does not tolerate it (the Filter kept it off); a
node added during a run (an autoscaler's) carries the taints its Node record has. A gang's
eviction evicts the whole job, where Kubernetes would delete the one pod on that node.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from lab01_cluster_sim.cluster import Request
from lab01_cluster_sim.corev1 import Taint, Toleration, count_intolerable_prefer_no_schedule, find_untolerated_taint
from lab01_cluster_sim.framework.interface import Plugin, default_normalize_score
from lab01_cluster_sim.kubescheduler.constraints import tolerations
from lab01_cluster_sim.model import Job, JobRecord, JobState, Node, format_seconds, termination_grace

FILTER_REASON = "node(s) had untolerated taint(s)"
"""The Filter's reason (``taint_toleration.go``, v1.35)."""
DEFAULT_WEIGHT = 3
"""TaintToleration's Score weight in kube-scheduler's default profile."""


def min_toleration_seconds(taints: tuple[Taint, ...], tols: tuple[Toleration, ...]) -> float | None:
    """How long a pod with ``tols`` may stay on a node with ``taints`` before the taint eviction
    controller deletes it, s: ``getMinTolerationTime`` of the tolerations ``GetMatchingTolerations``
    uses for the node's NoExecute taints (0 for a NoExecute taint not tolerated at all). None =
    forever (no NoExecute taint, or no used toleration has ``tolerationSeconds``)."""
    used = []
    for taint in taints:
        if taint.effect != "NoExecute":
            continue
        match = next((t for t in tols if t.tolerates(taint)), None)
        if match is None:
            return 0.0
        used.append(match)
    seconds = [t.seconds for t in used if t.seconds is not None]
    if not seconds:
        return None
    return max(0.0, min(seconds))


def node_filter(nodes: Sequence[Node], tols: tuple[Toleration, ...]) -> np.ndarray:
    """bool (len(nodes),): ``TaintToleration.Filter`` per node for a pod with ``tols``."""
    return np.array([find_untolerated_taint(n.taints, tols) is None for n in nodes], dtype=bool)


def node_scores(nodes: Sequence[Node], tols: tuple[Toleration, ...]) -> np.ndarray:
    """int64 (len(nodes),): ``TaintToleration.Score`` then ``NormalizeScore`` over ``nodes`` (the
    nodes scored) for a pod with ``tols``."""
    counts = np.array([count_intolerable_prefer_no_schedule(n.taints, tols) for n in nodes], dtype=np.int64)
    return default_normalize_score(counts, reverse=True)


class TaintToleration(Plugin):
    """Engine plugin at the Filter and Score points, and an observer of job starts (NoExecute
    eviction after ``tolerationSeconds``); rules in the module docstring.

    Args:
        weight: its Score weight (kube-scheduler's default profile: 3).

    Raises:
        ValueError: a weight below 0.

    A node's taints are :meth:`node_taints` and a job's pods' tolerations
    :meth:`pod_tolerations`: the objects' own (``spec.taints``, ``spec.tolerations``). A
    subclass that models how a cluster sets them (a taint every GPU node gets, tolerations an
    admission plugin adds: :class:`lab01_cluster_sim.tenancy.GpuNodeTaint`) overrides those two
    and keeps every rule here.
    """

    name = "TaintToleration"
    filter_reason = FILTER_REASON

    def __init__(self, weight: int = DEFAULT_WEIGHT) -> None:
        if weight < 0:
            raise ValueError(f"TaintToleration: weight must be >= 0, got {weight}")
        self.score_weight = weight
        self._sim: Any = None
        self._masks: dict[tuple, np.ndarray] = {}
        self._counts: dict[tuple, np.ndarray] = {}
        self._evictions = 0

    def attach(self, sim: Any) -> None:
        self._sim = sim

    def node_taints(self, node: Node) -> tuple[Taint, ...]:
        """The taints of ``node``: its ``spec.taints``."""
        return node.taints

    def pod_tolerations(self, job: Job) -> tuple[Toleration, ...]:
        """The tolerations of ``job``'s pods: their ``spec.tolerations``."""
        return tolerations(job)

    def _per_node(self, cache: dict, tols: tuple[Toleration, ...], fn, dtype) -> np.ndarray:
        """``fn(taints, tols)`` per node of the cluster as ``dtype``, cached per tolerations and
        node count (the same array while neither changes)."""
        nodes = self._sim.state.nodes
        key = (tols, len(nodes))
        out = cache.get(key)
        if out is None:
            out = cache[key] = np.array([fn(self.node_taints(n), tols) for n in nodes], dtype=dtype)
        return out

    def filter(self, request: Request, record: JobRecord | None) -> np.ndarray:
        """bool (N,): nodes without a NoSchedule/NoExecute taint the job's pods do not tolerate
        (all nodes when asked about a shape)."""
        if record is None:
            return np.ones(self._sim.state.num_nodes, dtype=bool)
        return self._per_node(self._masks, self.pod_tolerations(record.job),
                              lambda taints, tols: find_untolerated_taint(taints, tols) is None, bool)

    def score(self, sim: Any, record: JobRecord | None, request: Request, candidates: np.ndarray) -> np.ndarray:
        """int64 (k,): 100 - 100 x intolerable PreferNoSchedule taints // their most on any
        candidate (module docstring)."""
        tols = self.pod_tolerations(record.job) if record is not None else ()
        counts = self._per_node(self._counts, tols, count_intolerable_prefer_no_schedule, np.int64)
        return default_normalize_score(counts[candidates], reverse=True)

    def on_start(self, record: JobRecord) -> None:
        tols = self.pod_tolerations(record.job)
        nodes = self._sim.state.nodes
        waits = [min_toleration_seconds(self.node_taints(nodes[p.node_index]), tols) for p in record.placements]
        waits = [w for w in waits if w is not None]
        if not waits:
            return
        run = (record.run_started, record.preemptions, record.migrations)   # this run, not a later one
        self._sim.call_at(self._sim.now + min(waits), "taint-eviction", self._evict, (record, run, min(waits)))

    def _evict(self, event: Any) -> None:
        record, run, seconds = event.payload
        if record.state is not JobState.RUNNING or (record.run_started, record.preemptions, record.migrations) != run:
            return   # finished or evicted meanwhile: that run is gone
        self._evictions += 1
        nodes = self._sim.state.nodes
        taints = sorted({str(t) for p in record.placements for t in self.node_taints(nodes[p.node_index])
                         if t.effect == "NoExecute"})
        # a bare Pod is gone for good; a Job's pod is recreated and counts as a failed pod toward
        # its backoffLimit (Simulation.evict)
        self._sim.evict(record, f"evicted by the taint eviction controller after {format_seconds(seconds)}s "
                        f"(tolerationSeconds) on a node tainted {', '.join(taints)}",
                        grace_s=termination_grace(record.job), grace_cap_s=math.inf)
        self._sim.request_pass()


__all__ = ["DEFAULT_WEIGHT", "FILTER_REASON", "TaintToleration", "min_toleration_seconds", "node_filter", "node_scores"]
