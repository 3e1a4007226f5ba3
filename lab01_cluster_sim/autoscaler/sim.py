"""GPU pods on a cluster grown and shrunk by a Karpenter-like autoscaler: the pod-level view.

The autoscaler itself is a node-lifecycle plugin of the one engine
(:class:`lab01_cluster_sim.autoscaler.plugin.Autoscaler`; what it models, step by step, is in
that module's docstring). This module keeps the pod-level interface of the course's chapter 10
and of the ``autoscale`` command: :class:`Pod` and :class:`StaticNode` in,
:class:`AutoscalerResult` (per-pod :class:`PodRun`, per-node
:class:`~lab01_cluster_sim.autoscaler.plugin.SimNode`, cost, pending time, disruptions) out,
computed by :class:`lab01_cluster_sim.simulate.Simulation` with the autoscaler and
time-slicing plugins. Times in s.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from lab01_cluster_sim.autoscaler.nodepool import NodePool
from lab01_cluster_sim.autoscaler.plugin import MAX_NODES, SPOT_NOTICE_S, Autoscaler, SimNode
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.model import TERMINATION_GRACE, Job, Node
from lab01_cluster_sim.policies.generic import MostAllocated
from lab01_cluster_sim.sharing_modes import TimeSlicing, TimeSlicingParams, timesliced_node

__all__ = ["MAX_EVENTS", "MAX_NODES", "SPOT_NOTICE_S", "AutoscalerResult", "AutoscalerSim", "Pod", "PodRun",
           "SimNode", "StaticNode", "simulate_autoscaler"]


@dataclass(frozen=True, slots=True)
class Pod:
    """One pod.

    Attributes:
        name: unique name.
        gpus: ``nvidia.com/gpu`` it requests (replicas on a time-sliced node).
        duration_s: run time once started, s.
        submit_s: creation time, s.
        workload: the Deployment/Job it belongs to (disruption budgets, metrics).
        cpu_milli, memory_mib: other requests.
        image: container image name; image_gib its size, GiB.
        do_not_disrupt: the pod carries ``karpenter.sh/do-not-disrupt: "true"``: consolidation
            leaves its node alone while it runs (:class:`~.plugin.Autoscaler`).
        termination_grace_s: its ``terminationGracePeriodSeconds``: when consolidation or a
            spot notice evicts it, its GPUs stay held that long (at most the 2 min notice).
        node_selector: its nodeSelector, ``(key, value)`` pairs. affinity: its required node
            affinity terms (:class:`~lab01_cluster_sim.admission.api.MatchExpression` tuples).
            Both decide which NodePools can launch for it and which nodes it binds to
            (:mod:`.requirements`). extended: requests of extended resources other than
            ``nvidia.com/gpu`` (e.g. a MIG profile), ``(resource, count)`` pairs: no instance
            type offers them, so the pod stays Pending.
    """

    name: str
    gpus: int = 1
    duration_s: float = 600.0
    submit_s: float = 0.0
    workload: str = "default"
    cpu_milli: int = 1000
    memory_mib: int = 4096
    image: str = "app:latest"
    image_gib: float = 1.0
    do_not_disrupt: bool = False
    termination_grace_s: float = 0.0
    node_selector: tuple[tuple[str, str], ...] = ()
    affinity: tuple = ()
    extended: tuple[tuple[str, int], ...] = ()

    def __post_init__(self) -> None:
        for attr in ("gpus", "duration_s", "submit_s", "image_gib", "cpu_milli", "memory_mib", "termination_grace_s"):
            value = getattr(self, attr)
            if not (value >= 0 and math.isfinite(value)):   # also rejects NaN
                raise InputError(f"pod {self.name!r}: {attr} must be a finite number >= 0, got {value}")


@dataclass(frozen=True, slots=True)
class StaticNode:
    """A node that exists from t=0 and no NodePool owns (never consolidated or expired).

    ``gpus`` physical GPUs advertised ``timeslice_replicas`` times each. ``labels``: the Node's
    labels, ``(key, value)`` pairs (matched against pods' nodeSelector and node affinity).
    """

    name: str
    gpu_model: str
    gpus: int
    cpu_milli: int = 16000
    memory_mib: int = 65536
    timeslice_replicas: int = 1
    price_per_hour: float = 0.0
    cached_images: tuple[str, ...] = ()
    pull_mib_per_s: float = 128.0
    extract_mib_per_s: float = 256.0
    labels: tuple[tuple[str, str], ...] = ()


@dataclass
class PodRun:
    """What happened to one pod (mutable during the run).

    ``node`` is where it runs now (None when pending or finished); ``ran_on`` the last
    node it was bound to.
    """

    pod: Pod
    node: str | None = None
    ran_on: str | None = None
    bound_s: float | None = None
    started_s: float | None = None
    finished_s: float | None = None
    first_bound_s: float | None = None
    token: int = 0
    disruptions: int = 0
    pending_since: float = 0.0
    pending_total_s: float = 0.0
    lost_s: float = 0.0
    work_left_s: float = 0.0     # time-sliced nodes: run time alone still to do, s
    slowdown: float = 1.0        # time-sliced nodes: current run-time factor
    rated_s: float = 0.0         # time-sliced nodes: when work_left_s and slowdown were set


@dataclass(frozen=True)
class AutoscalerResult:
    """Result of :func:`simulate_autoscaler`.

    Attributes:
        pods: pod name -> :class:`PodRun` (bound/started/finished times, node, disruptions).
        nodes: every node ever launched, in launch order.
        end_s: time of the last event, s.
        timeline: rows ``(t, ready nodes, provisioned GPUs, pending pods)`` at each event batch.
        unlaunchable: pod name -> why Karpenter launches no node for it (Karpenter's words),
            for pods still pending at the end for that reason.
    """

    pods: dict[str, PodRun]
    nodes: list[SimNode]
    end_s: float
    timeline: list[tuple[float, int, int, int]]
    unlaunchable: dict[str, str] = field(default_factory=dict)

    def node(self, name: str) -> SimNode:
        """The node called ``name``. Raises KeyError."""
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)

    def cost_dollars(self) -> float:
        """Sum over nodes of billed hours x hourly price."""
        return sum(n.hours(self.end_s) * n.price_per_hour for n in self.nodes)

    def pending_times(self) -> dict[str, float]:
        """Pod -> total time spent pending (unbound), s; a pod never bound counts until the end."""
        out = {}
        for name, r in self.pods.items():
            extra = (self.end_s - r.pending_since) if r.node is None and r.finished_s is None else 0.0
            out[name] = r.pending_total_s + extra
        return out

    def disruptions_by_workload(self) -> dict[str, int]:
        """Workload -> evictions its pods suffered (consolidation, spot, expiry)."""
        out: dict[str, int] = {}
        for r in self.pods.values():
            out[r.pod.workload] = out.get(r.pod.workload, 0) + r.disruptions
        return dict(sorted(out.items()))

    def summary(self) -> dict[str, float | int]:
        """Cost ($), mean/max pending time (s); disruptions, nodes launched, pods finished (ints)."""
        pend = np.array(list(self.pending_times().values()) or [0.0])
        return {
            "cost_dollars": self.cost_dollars(),
            "mean_pending_s": float(pend.mean()),
            "max_pending_s": float(pend.max()),
            "disruptions": sum(self.disruptions_by_workload().values()),
            "nodes_launched": sum(1 for n in self.nodes if n.pool is not None),
            "pods_finished": sum(1 for r in self.pods.values() if r.finished_s is not None),
            "end_s": self.end_s,
        }


MAX_EVENTS = 200_000
"""Default bound on events per run (the 60-pod burst scenario handles a few hundred)."""


class AutoscalerSim:
    """The simulation; see the module docstring. Use :func:`simulate_autoscaler`.

    Builds one :class:`~lab01_cluster_sim.simulate.Simulation` whose nodes are the static
    nodes, with the :class:`~lab01_cluster_sim.autoscaler.plugin.Autoscaler` plugin (launches,
    image pulls, consolidation, spot, expiry) and the
    :class:`~lab01_cluster_sim.sharing_modes.TimeSlicing` plugin (contention on time-sliced
    nodes); each pod is a one-worker job.

    Args:
        pods: the pods.
        nodepools: NodePools, in order of preference (ties in price go to the earlier pool).
        static_nodes: nodes present from t=0.
        min_available: workload -> pods that voluntary disruptions must leave running.
        spot_interruptions: ``(time, node name)`` pairs: the notice arrives at ``time``.
        spot_interruption_rate_per_hour: or, per spot node, a Poisson rate of notices
            (drawn at launch from ``rng``).
        rng: seeded generator for random interruptions.
        horizon_s: keep nodes (and their cost) at least until this time.
        until_s: stop processing events after this time (a bound for scenarios that
            never settle, e.g. pods longer than ``expireAfter``); > 0.
        max_events: stop with an error after this many events (a bound for scenarios
            that churn without advancing time much, e.g. an absurd spot interruption rate).
        timeslice: contention model of time-sliced nodes (default :class:`TimeSlicingParams`).
        max_nodes: stop with an error when the NodePools would launch more nodes than this
            over the run (the same bound on churn; each event's cost grows with the nodes).
        plugins: more engine plugins to combine with the autoscaler (a queue discipline's
            companions, topology, tenancy...).
        discipline: the queue discipline (default ``fifo-skip``).

    Raises:
        InputError: duplicate pod or node names; a negative or NaN rate, horizon, budget
            or ``until_s``; from :meth:`run`, more than ``max_events`` events or
            ``max_nodes`` launches. A pod that
            no instance type of any pool could ever hold is *not* an error: it stays
            pending (reported).
    """

    def __init__(self, pods: Sequence[Pod], nodepools: Sequence[NodePool] = (),
                 static_nodes: Sequence[StaticNode] = (), *, min_available: Mapping[str, int] | None = None,
                 spot_interruptions: Sequence[tuple[float, str]] = (),
                 spot_interruption_rate_per_hour: float = 0.0, rng: np.random.Generator | None = None,
                 horizon_s: float = 0.0, until_s: float = math.inf, max_events: int = MAX_EVENTS,
                 max_nodes: int = MAX_NODES, timeslice: TimeSlicingParams | None = None,
                 plugins: Sequence = (), discipline: str = "fifo-skip") -> None:
        from lab01_cluster_sim.simulate import Simulation

        if not (horizon_s >= 0 and math.isfinite(horizon_s)):
            raise InputError(f"horizon_s must be a finite number >= 0, got {horizon_s}")
        if not until_s > 0:
            raise InputError(f"until_s must be > 0 (inf = no bound), got {until_s}")
        if max_events < 1 or max_nodes < 1:
            raise InputError(f"max_events and max_nodes must be >= 1, got {max_events} and {max_nodes}")
        names = [p.name for p in pods]
        if len(set(names)) != len(names):
            raise InputError("pod names must be unique")
        self.horizon = horizon_s
        self.until = until_s
        nodes, sim_nodes = [], []
        seen: set[str] = set()
        for st in static_nodes:
            if st.name in seen:
                raise InputError(f"duplicate node name {st.name!r}")
            seen.add(st.name)
            labels = dict(st.labels)
            nodes.append(timesliced_node(st.name, st.gpu_model, st.gpus, st.timeslice_replicas, st.cpu_milli,
                                         st.memory_mib, labels=labels) if st.gpus else
                         Node(st.name, "", 0, st.cpu_milli, st.memory_mib, labels=labels))
            n = SimNode(st.name, st.gpu_model, st.gpus * st.timeslice_replicas, st.gpus, st.cpu_milli, st.memory_mib,
                        st.price_per_hour, 0.0, 0.0, pull_mib_per_s=st.pull_mib_per_s,
                        extract_mib_per_s=st.extract_mib_per_s, timeslice_replicas=st.timeslice_replicas)
            n.image_ready = {img: 0.0 for img in st.cached_images}
            sim_nodes.append(n)
        self.autoscaler = Autoscaler(nodepools, sim_nodes, min_available=min_available,
                                     spot_interruptions=spot_interruptions,
                                     spot_interruption_rate_per_hour=spot_interruption_rate_per_hour, rng=rng,
                                     max_nodes=max_nodes, max_events=max_events)
        self.pods = {p.name: PodRun(p, pending_since=p.submit_s) for p in pods}
        jobs = [Job(p.name, p.submit_s, p.duration_s, p.gpus, 1000 if p.gpus else 0, p.cpu_milli, p.memory_mib,
                    tenant=p.workload, extras={"workload": p.workload, "image": p.image, "image_gib": p.image_gib,
                            **({"do_not_disrupt": True} if p.do_not_disrupt else {}),
                            **({TERMINATION_GRACE: p.termination_grace_s} if p.termination_grace_s else {}),
                            **({"node_selector": p.node_selector} if p.node_selector else {}),
                            **({"affinity": p.affinity} if p.affinity else {}),
                            **({"extended_requests": dict(p.extended)} if p.extended else {})})
                for p in pods]
        self._tracker = _PodTracker(self)
        self.sim = Simulation(nodes, jobs, MostAllocated(), "gang", discipline,
                              plugins=[self.autoscaler, TimeSlicing(timeslice or TimeSlicingParams()),
                                       *plugins, self._tracker])

    @property
    def nodes(self) -> dict[str, SimNode]:
        return self.autoscaler.nodes

    def run(self) -> AutoscalerResult:
        """Run until the pods are done and the NodePools' nodes gone (or ``until_s``)."""
        self.sim.run(until=None if math.isinf(self.until) else math.nextafter(self.until, math.inf))
        last = self._tracker.timeline[-1][0] if self._tracker.timeline else 0.0
        end = max(last, self.horizon)
        for name, run in self.pods.items():
            rec = self.sim.records[name]
            run.node = self.sim.state.nodes[rec.placements[0].node_index].name if rec.placements else None
        unlaunchable = {name: why for name, why in self.autoscaler.unlaunchable.items()
                        if self.sim.records[name].start_time is None}
        return AutoscalerResult(self.pods, list(self.autoscaler.nodes.values()), end, self._tracker.timeline,
                                unlaunchable)


class _PodTracker:
    """Keeps each pod's :class:`PodRun` and the timeline rows as the engine runs."""

    name = "pod-tracker"

    def __init__(self, owner: AutoscalerSim) -> None:
        self.owner = owner
        self.timeline: list[tuple[float, int, int, int]] = []

    def on_start(self, record) -> None:
        run = self.owner.pods[record.job_id]
        now = self.owner.sim.now
        run.node = run.ran_on = self.owner.sim.state.nodes[record.placements[0].node_index].name
        run.bound_s = now
        if run.first_bound_s is None:
            run.first_bound_s = now
        run.pending_total_s += now - run.pending_since
        run.started_s = record.busy_from
        run.token += 1

    def on_finish(self, record) -> None:
        run = self.owner.pods[record.job_id]
        run.finished_s = record.end_time
        run.node = None

    def on_evict(self, record, lost_work) -> None:
        run = self.owner.pods[record.job_id]
        now = self.owner.sim.now
        if run.started_s is not None:
            run.lost_s += max(0.0, now - run.started_s)
        run.node = None
        run.bound_s = run.started_s = None
        run.token += 1
        run.disruptions += 1
        run.pending_since = now

    def sample(self, sim, now: float) -> None:
        alive = [n for n in self.owner.autoscaler.nodes.values() if n.alive and n.ready_s <= now]
        row = (now, len(alive), sum(n.physical_gpus for n in alive), len(sim.scheduler.discipline))
        if self.timeline and self.timeline[-1][0] == now:
            self.timeline[-1] = row
        else:
            self.timeline.append(row)


def simulate_autoscaler(pods: Sequence[Pod], nodepools: Sequence[NodePool] = (),
                        static_nodes: Sequence[StaticNode] = (), **kwargs) -> AutoscalerResult:
    """Run :class:`AutoscalerSim` and return its :class:`AutoscalerResult`."""
    return AutoscalerSim(pods, nodepools, static_nodes, **kwargs).run()
