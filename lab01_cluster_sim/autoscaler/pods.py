"""GPU pods on a cluster grown and shrunk by a Karpenter-like autoscaler: the pod-level view.

The autoscaler itself is a node-lifecycle plugin of the one engine
(:class:`lab01_cluster_sim.autoscaler.plugin.Autoscaler`; what it models, step by step, is in
that module's docstring). This module describes the workload and the fixed nodes as chapter 10
and the ``autoscale`` command speak of them (:class:`Pod`, :class:`StaticNode`), turns them into
the engine's jobs and nodes (:func:`pod_jobs`, :func:`static_nodes`), and records what happened
to each pod with the :class:`PodTracker` plugin (:class:`AutoscalerResult`: per-pod
:class:`PodRun`, per-node :class:`~lab01_cluster_sim.autoscaler.plugin.SimNode`, cost, pending
time, disruptions). A run is an ordinary :class:`~lab01_cluster_sim.simulate.Simulation`::

    nodes, fleet = static_nodes(static)
    scaler = Autoscaler(pools, fleet)
    tracker = PodTracker(pods, scaler)
    Simulation(nodes, pod_jobs(pods), MostAllocated(), "gang", "fifo-skip",
               plugins=[scaler, TimeSlicing(TimeSlicingParams()), tracker]).run()
    tracker.result().summary()

Each pod is a one-worker job; time-sliced nodes advertise ``replicas`` GPUs per physical GPU
(:func:`~lab01_cluster_sim.sharing_modes.timesliced_node`) and the
:class:`~lab01_cluster_sim.sharing_modes.TimeSlicing` plugin slows the pods that share one.
Times in s.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from lab01_cluster_sim.autoscaler.plugin import Autoscaler, SimNode
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.model import TERMINATION_GRACE, Job, Node
from lab01_cluster_sim.sharing_modes import timesliced_node

__all__ = ["MAX_EVENTS", "AutoscalerResult", "Pod", "PodRun", "PodTracker", "StaticNode", "pod_jobs",
           "static_nodes"]


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
            affinity terms (:class:`~lab01_cluster_sim.corev1.NodeSelectorTerm`).
            Both decide which NodePools can launch for it and which nodes it binds to
            (:mod:`.requirements`). extended: requests of extended resources other than
            ``nvidia.com/gpu`` (e.g. a MIG profile), ``(resource, count)`` pairs: no instance
            type offers them, so the pod stays Pending.
        bare: no controller owns the pod (a scenario's bare Pod): once evicted (consolidation,
            a spot interruption) it is gone for good, where a Deployment's or Job's pod is
            recreated; Karpenter evicts such pods too ("Pods without an ownerRef ... will be
            evicted during voluntary node disruption", Karpenter docs, Disruption).
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
    bare: bool = False

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
    gone_s: float | None = None  # a bare pod evicted for good: when
    work_left_s: float = 0.0     # time-sliced nodes: run time alone still to do, s
    slowdown: float = 1.0        # time-sliced nodes: current run-time factor
    rated_s: float = 0.0         # time-sliced nodes: when work_left_s and slowdown were set


@dataclass(frozen=True)
class AutoscalerResult:
    """What a :class:`PodTracker` saw (:meth:`PodTracker.result`).

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
            extra = (self.end_s - r.pending_since) if r.node is None and r.finished_s is None \
                and r.gone_s is None else 0.0
            out[name] = r.pending_total_s + extra
        return out

    def disruptions_by_workload(self) -> dict[str, int]:
        """Workload -> evictions its pods suffered (consolidation, spot, expiry)."""
        out: dict[str, int] = {}
        for r in self.pods.values():
            out[r.pod.workload] = out.get(r.pod.workload, 0) + r.disruptions
        return dict(sorted(out.items()))

    def summary(self) -> dict[str, float | int]:
        """Cost ($), mean/max pending time (s); disruptions, nodes launched, pods finished, pods never
        bound (ints). A pod never bound counts as pending until ``end_s`` (:meth:`pending_times`), so
        ``pods_never_bound`` says how much of the mean is cut off by the end of the run."""
        pend = np.array(list(self.pending_times().values()) or [0.0])
        return {
            "cost_dollars": self.cost_dollars(),
            "mean_pending_s": float(pend.mean()),
            "max_pending_s": float(pend.max()),
            "disruptions": sum(self.disruptions_by_workload().values()),
            "nodes_launched": sum(1 for n in self.nodes if n.pool is not None),
            "pods_finished": sum(1 for r in self.pods.values() if r.finished_s is not None),
            "pods_never_bound": sum(1 for r in self.pods.values() if r.first_bound_s is None),
            "end_s": self.end_s,
        }


MAX_EVENTS = 200_000
"""A bound on events per pod-level run for the ``autoscale`` command and scenarios
(:class:`~lab01_cluster_sim.autoscaler.plugin.Autoscaler`'s ``max_events``; the 60-pod burst
scenario handles a few hundred)."""


def pod_jobs(pods: Sequence[Pod]) -> list[Job]:
    """One one-worker job per pod, in order: ``nvidia.com/gpu`` whole GPUs (replicas on a
    time-sliced node), the pod's CPU and memory, its workload as tenant; the workload, image,
    image size and ``do_not_disrupt`` ride in :attr:`Job.extras` for the autoscaler.

    Raises:
        InputError: two pods share a name.
    """
    names = [p.name for p in pods]
    if len(set(names)) != len(names):
        raise InputError("pod names must be unique")
    return [Job(p.name, p.submit_s, p.duration_s, p.gpus, 1000 if p.gpus else 0, p.cpu_milli, p.memory_mib,
                tenant=p.workload, extras={"workload": p.workload, "image": p.image, "image_gib": p.image_gib,
                        **({"do_not_disrupt": True} if p.do_not_disrupt else {}),
                        **({TERMINATION_GRACE: p.termination_grace_s} if p.termination_grace_s else {}),
                        **({"node_selector": p.node_selector} if p.node_selector else {}),
                        **({"affinity": p.affinity} if p.affinity else {}),
                        **({"extended_requests": dict(p.extended)} if p.extended else {}),
                        **({"kind": "Pod"} if p.bare else {})})
            for p in pods]


def static_nodes(static: Sequence[StaticNode]) -> tuple[list[Node], list[SimNode]]:
    """The engine's nodes for ``static`` (time-sliced ones advertise ``gpus x replicas`` GPUs)
    and the autoscaler's view of them (pass the second list to
    :class:`~lab01_cluster_sim.autoscaler.plugin.Autoscaler`), in order.

    Raises:
        InputError: two nodes share a name.
    """
    nodes, sim_nodes = [], []
    seen: set[str] = set()
    for st in static:
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
    return nodes, sim_nodes


class PodTracker:
    """Engine plugin (observer hooks and ``sample``): each pod's :class:`PodRun` and the
    timeline rows ``(t, ready nodes, provisioned GPUs, pending pods)``, as the engine runs.

    Args:
        pods: the pods, as passed to :func:`pod_jobs`.
        autoscaler: the run's :class:`~lab01_cluster_sim.autoscaler.plugin.Autoscaler` (its nodes).
        horizon_s: the result keeps nodes (and their cost) at least until this time, s.

    Raises:
        InputError: ``horizon_s`` not a finite number >= 0.
    """

    name = "pod-tracker"

    def __init__(self, pods: Sequence[Pod], autoscaler: Autoscaler, horizon_s: float = 0.0) -> None:
        if not (horizon_s >= 0 and math.isfinite(horizon_s)):
            raise InputError(f"horizon_s must be a finite number >= 0, got {horizon_s}")
        self.autoscaler = autoscaler
        self.horizon = horizon_s
        self.pods = {p.name: PodRun(p, pending_since=p.submit_s) for p in pods}
        self.timeline: list[tuple[float, int, int, int]] = []
        self.sim = None

    def attach(self, sim) -> None:
        self.sim = sim

    def on_start(self, record) -> None:
        run = self.pods[record.job_id]
        now = self.sim.now
        run.node = run.ran_on = self.sim.state.nodes[record.placements[0].node_index].name
        run.bound_s = now
        if run.first_bound_s is None:
            run.first_bound_s = now
        run.pending_total_s += now - run.pending_since
        run.started_s = record.busy_from
        run.token += 1

    def on_finish(self, record) -> None:
        run = self.pods[record.job_id]
        run.finished_s = record.end_time
        run.node = None

    def on_evict(self, record, lost_work) -> None:
        run = self.pods[record.job_id]
        now = self.sim.now
        if run.started_s is not None:
            run.lost_s += max(0.0, now - run.started_s)
        run.node = None
        run.bound_s = run.started_s = None
        run.token += 1
        run.disruptions += 1
        run.pending_since = now

    def on_reject(self, record) -> None:
        """A bare pod evicted for good (:attr:`Pod.bare`): it is no longer pending."""
        run = self.pods[record.job_id]
        if run.disruptions:
            run.gone_s = self.sim.now

    def sample(self, sim, now: float) -> None:
        alive = [n for n in self.autoscaler.nodes.values() if n.alive and n.ready_s <= now]
        row = (now, len(alive), sum(n.physical_gpus for n in alive), len(sim.scheduler.discipline))
        if self.timeline and self.timeline[-1][0] == now:
            self.timeline[-1] = row
        else:
            self.timeline.append(row)

    def result(self) -> AutoscalerResult:
        """The pods, every node launched, the end (the last event batch, or ``horizon_s`` if
        later) and the timeline, once the simulation has run.

        Raises:
            ValueError: the tracker was never attached to a run.
        """
        sim = self.sim
        if sim is None:
            raise ValueError("PodTracker.result(): add the tracker to a Simulation and run it first")
        last = self.timeline[-1][0] if self.timeline else 0.0
        end = max(last, self.horizon)
        for name, run in self.pods.items():
            rec = sim.records[name]
            run.node = sim.state.nodes[rec.placements[0].node_index].name if rec.placements else None
        unlaunchable = {name: why for name, why in self.autoscaler.unlaunchable.items()
                        if sim.records[name].start_time is None}
        return AutoscalerResult(self.pods, list(self.autoscaler.nodes.values()), end, self.timeline, unlaunchable)
