"""Event-driven simulation of GPU pods on a cluster grown and shrunk by a Karpenter-like autoscaler.

What happens, in the order Karpenter does it (karpenter.sh docs, "Concepts: Scheduling,
Provisioning, Disruption"):

1. **Scheduling**: pending pods bind to ready, uncordoned nodes with room (GPUs as the
   integer ``nvidia.com/gpu`` the node advertises, time-slicing replicas included; CPU;
   memory), fullest node first. A pod starts running once its image is on the node: a
   first pull takes ``image_gib x 1024 x (1 / pull_mib_per_s + 1 / extract_mib_per_s)``
   s (download, then layer extraction; the extraction rate is an assumption, see
   :class:`~lab01_cluster_sim.autoscaler.nodepool.NodePool`); later pods on that node find
   it cached; pre-pulled images are warm from the node's ready time. On a time-sliced
   node (``timeslice_replicas > 1``) the running pods share each physical GPU's time:
   with ``k`` replicas busy per GPU, each runs :func:`~lab01_cluster_sim.sharing_modes.timeslice_slowdown`
   ``(k)`` times slower, re-rated whenever a pod on the node starts, finishes or leaves
   (processor sharing; ``duration_s`` is the run time alone on a GPU).
2. **Provisioning**: pods still pending that fit no node, ready or launching, make the
   autoscaler launch the cheapest instance type (over the NodePools that allow it, within
   each pool's GPU ``limits``) that fits them; later pending pods are packed onto nodes
   already launching. A node is schedulable ``boot_delay_s + registration_delay_s`` after
   launch. (Karpenter batches pods for 1-10 s before deciding; here decisions happen at
   the event's instant.)
3. **Disruption**: consolidation ``WhenEmpty`` removes a node empty for
   ``consolidate_after_s``; ``WhenEmptyOrUnderutilized`` also removes a node whose pods
   all fit on the other nodes, once its pods have not changed for ``consolidate_after_s``
   (the pods are evicted and rescheduled; replacing a node by a cheaper one is not
   modelled). Voluntary disruptions respect each workload's ``min_available`` (a
   PodDisruptionBudget). **Spot interruptions** come with a 2-minute notice: the node is
   cordoned, its pods are evicted at once where the budget allows and the rest at the
   interruption; replacements are provisioned as for any pending pod. **expireAfter**:
   an expired node is drained (forcefully, as Karpenter v1 does) and removed.

An evicted pod restarts from the beginning (its run time so far is lost). Cost = sum over
nodes of (terminated - launched) hours x the node's hourly price (static nodes included
at their given price). Times in s.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from lab01_cluster_sim.autoscaler.catalogue import InstanceType
from lab01_cluster_sim.autoscaler.nodepool import NodePool
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.sharing_modes import TimeSlicingParams, timeslice_slowdown

SPOT_NOTICE_S = 120.0
"""Spot interruption notice: two minutes (AWS EC2 Spot Instance interruption notice)."""


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

    def __post_init__(self) -> None:
        for attr in ("gpus", "duration_s", "submit_s", "image_gib", "cpu_milli", "memory_mib"):
            value = getattr(self, attr)
            if not (value >= 0 and math.isfinite(value)):   # also rejects NaN
                raise InputError(f"pod {self.name!r}: {attr} must be a finite number >= 0, got {value}")


@dataclass(frozen=True, slots=True)
class StaticNode:
    """A node that exists from t=0 and no NodePool owns (never consolidated or expired).

    ``gpus`` physical GPUs advertised ``timeslice_replicas`` times each.
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


@dataclass
class SimNode:
    """A node during the simulation (mutable)."""

    name: str
    gpu_model: str
    gpu_capacity: int            # advertised nvidia.com/gpu (physical x replicas)
    physical_gpus: int
    cpu_milli: int
    memory_mib: int
    price_per_hour: float
    launched_s: float
    ready_s: float
    pool: NodePool | None = None
    instance_type: str = "static"
    capacity_type: str = "on-demand"
    pull_mib_per_s: float = 128.0
    extract_mib_per_s: float = 256.0
    timeslice_replicas: int = 1
    terminated_s: float | None = None
    termination_reason: str = ""
    cordoned: bool = False
    pods: set[str] = field(default_factory=set)
    nominated: set[str] = field(default_factory=set)
    image_ready: dict[str, float] = field(default_factory=dict)
    version: int = 0             # bumps on every pod change (consolidateAfter bookkeeping)
    active: set[str] = field(default_factory=set)   # time-sliced nodes: pods running now

    @property
    def alive(self) -> bool:
        return self.terminated_s is None

    def hours(self, end: float) -> float:
        """Billed hours: launch to termination (or ``end``)."""
        stop = self.terminated_s if self.terminated_s is not None else end
        return max(0.0, stop - self.launched_s) / 3600.0


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
    """

    pods: dict[str, PodRun]
    nodes: list[SimNode]
    end_s: float
    timeline: list[tuple[float, int, int, int]]

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

MAX_NODES = 1000
"""Default bound on nodes launched per run (the 60-pod burst scenario launches a few dozen)."""

# event priorities at one instant: node changes, finishes, arrivals, timers
_NODE, _FINISH, _ARRIVE, _TIMER = 0, 1, 2, 3


class AutoscalerSim:
    """The simulation; see the module docstring. Use :func:`simulate_autoscaler`.

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
                 max_nodes: int = MAX_NODES, timeslice: TimeSlicingParams | None = None) -> None:
        if not (spot_interruption_rate_per_hour >= 0 and math.isfinite(spot_interruption_rate_per_hour)):
            raise InputError(f"spot_interruption_rate_per_hour must be a finite number >= 0, "
                             f"got {spot_interruption_rate_per_hour}")
        if not (horizon_s >= 0 and math.isfinite(horizon_s)):
            raise InputError(f"horizon_s must be a finite number >= 0, got {horizon_s}")
        if not until_s > 0:
            raise InputError(f"until_s must be > 0 (inf = no bound), got {until_s}")
        if max_events < 1 or max_nodes < 1:
            raise InputError(f"max_events and max_nodes must be >= 1, got {max_events} and {max_nodes}")
        self.max_nodes = max_nodes
        self.timeslice = timeslice if timeslice is not None else TimeSlicingParams()
        for workload, count in (min_available or {}).items():
            if count < 0:
                raise InputError(f"min_available[{workload!r}] must be >= 0, got {count}")
        self.max_events = max_events
        names = [p.name for p in pods]
        if len(set(names)) != len(names):
            raise InputError("pod names must be unique")
        pool_names = [p.name for p in nodepools]
        if len(set(pool_names)) != len(pool_names):
            raise InputError("nodepool names must be unique")
        self.pools = list(nodepools)
        self.min_available = dict(min_available or {})
        self.rate = spot_interruption_rate_per_hour
        self.rng = rng if rng is not None else np.random.default_rng(0)
        self.horizon = horizon_s
        self.until = until_s
        self.now = 0.0
        self.pods = {p.name: PodRun(p, pending_since=p.submit_s) for p in pods}
        self.pending: list[str] = []
        self.nodes: dict[str, SimNode] = {}
        self._events: list = []
        self._seq = 0
        self._counter = 0
        self.timeline: list[tuple[float, int, int, int]] = []
        for s in static_nodes:
            if s.name in self.nodes:
                raise InputError(f"duplicate node name {s.name!r}")
            n = SimNode(s.name, s.gpu_model, s.gpus * s.timeslice_replicas, s.gpus, s.cpu_milli, s.memory_mib,
                        s.price_per_hour, 0.0, 0.0, pull_mib_per_s=s.pull_mib_per_s,
                        extract_mib_per_s=s.extract_mib_per_s, timeslice_replicas=s.timeslice_replicas)
            n.image_ready = {img: 0.0 for img in s.cached_images}
            self.nodes[n.name] = n
        for p in pods:
            self._push(p.submit_s, _ARRIVE, ("arrive", p.name))
        self._planned_spot = list(spot_interruptions)

    # -- events -----------------------------------------------------------------------------
    def _push(self, t: float, prio: int, ev: tuple) -> None:
        self._seq += 1
        heapq.heappush(self._events, (t, prio, self._seq, ev))

    def run(self) -> AutoscalerResult:
        """Run until no event is left; return the result."""
        for t, name in self._planned_spot:
            self._push(t, _NODE, ("spot-notice", name))
        handled = 0
        while self._events and self._events[0][0] <= self.until:
            t = self._events[0][0]
            self.now = t
            while self._events and self._events[0][0] == t:
                _, _, _, ev = heapq.heappop(self._events)
                handled += 1
                if handled > self.max_events:
                    launched = sum(1 for n in self.nodes.values() if n.pool is not None)
                    raise InputError(
                        f"the autoscaler simulation handled {self.max_events} events and reached only "
                        f"t = {t:.6g} s ({launched} nodes launched): the scenario churns (spot interruption "
                        f"rate {self.rate:g}/node-hour, expireAfter, pods longer than node lifetimes); "
                        f"lower the rate, lengthen expireAfter or set a shorter until_s")
                getattr(self, "_on_" + ev[0].replace("-", "_"))(*ev[1:])
            self._schedule()
            self._provision()
            alive = [n for n in self.nodes.values() if n.alive and n.ready_s <= t]
            self.timeline.append((t, len(alive), sum(n.physical_gpus for n in alive), len(self.pending)))
            if self._settled():
                break
        end = max(self.now, self.horizon)
        return AutoscalerResult(self.pods, list(self.nodes.values()), end, self.timeline)

    def _settled(self) -> bool:
        """Every pod finished and every NodePool node gone: later events (spot notices,
        expiries of dead nodes) cannot change anything."""
        return (all(r.finished_s is not None for r in self.pods.values())
                and not any(n.alive and n.pool is not None for n in self.nodes.values()))

    def _on_arrive(self, name: str) -> None:
        self.pending.append(name)

    def _on_ready(self, node: str) -> None:
        # the scheduling pass after this batch sees the node; an empty new node may be consolidated
        self._schedule_check(self.nodes[node])

    def _on_finish(self, name: str, token: int) -> None:
        run = self.pods[name]
        if token != run.token or run.node is None:
            return
        node = self.nodes[run.node]
        node.pods.discard(name)
        node.version += 1
        run.finished_s = self.now
        run.node = None
        if name in node.active:
            node.active.discard(name)
            self._rerate(node)
        self._schedule_check(node)

    def _on_start(self, name: str, token: int) -> None:
        """A pod on a time-sliced node starts running (its image is there): re-rate the node."""
        run = self.pods[name]
        if token != run.token or run.node is None:
            return
        node = self.nodes[run.node]
        run.work_left_s, run.slowdown, run.rated_s = run.pod.duration_s, 1.0, self.now
        node.active.add(name)
        self._rerate(node)

    def _rerate(self, node: SimNode) -> None:
        """Processor sharing on a time-sliced node: bring every running pod's remaining work
        up to now at its old rate, then reschedule its finish at the new contention."""
        busy = sum(self.pods[p].pod.gpus for p in node.active)
        per_gpu = max(1, math.ceil(busy / max(1, node.physical_gpus)))
        slow = timeslice_slowdown(per_gpu, self.timeslice)
        for p in sorted(node.active):
            run = self.pods[p]
            run.work_left_s = max(0.0, run.work_left_s - (self.now - run.rated_s) / run.slowdown)
            run.slowdown, run.rated_s = slow, self.now
            run.token += 1
            self._push(self.now + run.work_left_s * slow, _FINISH, ("finish", p, run.token))

    def _on_check(self, node_name: str, version: int) -> None:
        node = self.nodes[node_name]
        if not node.alive or node.version != version or node.pool is None or node.cordoned:
            return
        policy = node.pool.consolidation_policy
        if policy == "Never":
            return
        if not node.pods and not node.nominated:
            self._terminate(node, "consolidation: empty")
            return
        if policy == "WhenEmptyOrUnderutilized" and self._pods_fit_elsewhere(node) and self._budget_allows(node.pods):
            for p in sorted(node.pods):
                self._evict(p)
            self._terminate(node, "consolidation: underutilized")

    def _on_spot_notice(self, node_name: str) -> None:
        node = self.nodes.get(node_name)
        if node is None or not node.alive:
            return
        node.cordoned = True
        for p in sorted(node.pods):
            if self._budget_allows({p}):
                self._evict(p)
        self._push(self.now + SPOT_NOTICE_S, _NODE, ("spot-terminate", node_name))

    def _on_spot_terminate(self, node_name: str) -> None:
        node = self.nodes[node_name]
        if node.alive:
            for p in sorted(node.pods):
                self._evict(p)
            self._terminate(node, "spot interruption")

    def _on_expire(self, node_name: str) -> None:
        node = self.nodes[node_name]
        if node.alive:
            node.cordoned = True
            for p in sorted(node.pods):
                self._evict(p)
            self._terminate(node, "expired (expireAfter)")

    # -- helpers -------------------------------------------------------------------------------
    def _free(self, node: SimNode) -> tuple[int, int, int]:
        g = c = m = 0
        for p in node.pods | node.nominated:
            pod = self.pods[p].pod
            g += pod.gpus
            c += pod.cpu_milli
            m += pod.memory_mib
        return node.gpu_capacity - g, node.cpu_milli - c, node.memory_mib - m

    @staticmethod
    def _fits(pod: Pod, free: tuple[int, int, int]) -> bool:
        return pod.gpus <= free[0] and pod.cpu_milli <= free[1] and pod.memory_mib <= free[2]

    def _running_count(self, workload: str) -> int:
        return sum(1 for r in self.pods.values() if r.pod.workload == workload and r.node is not None)

    def _budget_allows(self, pod_names: set[str]) -> bool:
        """True if evicting these pods leaves every workload at or above its min_available."""
        by_wl: dict[str, int] = {}
        for p in pod_names:
            wl = self.pods[p].pod.workload
            by_wl[wl] = by_wl.get(wl, 0) + 1
        return all(self._running_count(wl) - k >= self.min_available.get(wl, 0) for wl, k in by_wl.items())

    def _pods_fit_elsewhere(self, node: SimNode) -> bool:
        others = [n for n in self.nodes.values()
                  if n.alive and n is not node and not n.cordoned and n.ready_s <= self.now]
        free = {n.name: list(self._free(n)) for n in others}
        for p in sorted(node.pods, key=lambda x: -self.pods[x].pod.gpus):
            pod = self.pods[p].pod
            for n in others:
                f = free[n.name]
                if self._fits(pod, tuple(f)):
                    f[0] -= pod.gpus
                    f[1] -= pod.cpu_milli
                    f[2] -= pod.memory_mib
                    break
            else:
                return False
        return True

    def _evict(self, name: str) -> None:
        run = self.pods[name]
        node = self.nodes[run.node]
        node.pods.discard(name)
        node.version += 1
        if run.started_s is not None:
            run.lost_s += max(0.0, self.now - run.started_s)
        run.node = None
        run.bound_s = run.started_s = None
        run.token += 1
        run.disruptions += 1
        run.pending_since = self.now
        self.pending.append(name)
        if name in node.active:
            node.active.discard(name)
            self._rerate(node)
        self._schedule_check(node)

    def _terminate(self, node: SimNode, reason: str) -> None:
        node.terminated_s = self.now
        node.termination_reason = reason
        node.nominated.clear()

    def _schedule_check(self, node: SimNode) -> None:
        if node.pool is not None and node.pool.consolidation_policy != "Never" and node.alive:
            self._push(self.now + node.pool.consolidate_after_s, _TIMER, ("check", node.name, node.version))

    # -- the three stages ----------------------------------------------------------------------
    def _schedule(self) -> None:
        order = sorted(self.pending, key=lambda p: (self.pods[p].pod.submit_s, p))
        still = []
        for name in order:
            pod = self.pods[name].pod
            cands = [n for n in self.nodes.values()
                     if n.alive and not n.cordoned and n.ready_s <= self.now]
            best = None
            for n in cands:
                f = self._free_for(n, name)
                if self._fits(pod, f):
                    key = (f[0] - pod.gpus, n.name)
                    if best is None or key < best[0]:
                        best = (key, n)
            if best is None:
                still.append(name)
                continue
            self._bind(name, best[1])
        self.pending = still

    def _free_for(self, node: SimNode, pod_name: str) -> tuple[int, int, int]:
        """Free room on ``node`` for ``pod_name`` (its own nomination does not count against it)."""
        g, c, m = self._free(node)
        if pod_name in node.nominated:
            pod = self.pods[pod_name].pod
            g, c, m = g + pod.gpus, c + pod.cpu_milli, m + pod.memory_mib
        return g, c, m

    def _bind(self, name: str, node: SimNode) -> None:
        run = self.pods[name]
        for n in self.nodes.values():
            n.nominated.discard(name)
        pod = run.pod
        node.pods.add(name)
        node.version += 1
        run.node = run.ran_on = node.name
        run.bound_s = self.now
        if run.first_bound_s is None:
            run.first_bound_s = self.now
        run.pending_total_s += self.now - run.pending_since
        ready = node.image_ready.get(pod.image)
        if ready is None:
            mib = pod.image_gib * 1024.0
            ready = self.now + mib / node.pull_mib_per_s + mib / node.extract_mib_per_s
            node.image_ready[pod.image] = ready
        run.started_s = max(self.now, ready)
        run.token += 1
        if node.timeslice_replicas > 1:
            self._push(run.started_s, _FINISH, ("start", name, run.token))
        else:
            self._push(run.started_s + pod.duration_s, _FINISH, ("finish", name, run.token))
        self._schedule_check(node)

    def _provision(self) -> None:
        for name in sorted(self.pending, key=lambda p: (self.pods[p].pod.submit_s, p)):
            if any(name in n.nominated for n in self.nodes.values() if n.alive):
                continue
            pod = self.pods[name].pod
            launching = [n for n in self.nodes.values() if n.alive and n.ready_s > self.now and not n.cordoned]
            target = next((n for n in sorted(launching, key=lambda n: n.name) if self._fits(pod, self._free(n))), None)
            if target is None:
                target = self._launch_for(pod)
            if target is not None:
                target.nominated.add(name)

    def _pool_gpus(self, pool: NodePool) -> int:
        return sum(n.physical_gpus for n in self.nodes.values() if n.pool is pool and n.alive)

    def _launch_for(self, pod: Pod) -> SimNode | None:
        best: tuple[float, int, NodePool, InstanceType] | None = None
        for pi, pool in enumerate(self.pools):
            room = pool.limit_gpus - self._pool_gpus(pool)
            for it in pool.instance_types:
                if it.gpus > room:
                    continue
                if not self._fits(pod, (it.gpus * pool.timeslice_replicas, it.cpu_milli, it.memory_mib)):
                    continue
                key = (it.price(pool.capacity_type), pi)
                if best is None or key < best[:2]:
                    best = (key[0], pi, pool, it)
        if best is None:
            return None
        _, _, pool, it = best
        if self._counter >= self.max_nodes:
            raise InputError(
                f"the autoscaler would launch more than {self.max_nodes} nodes (by t = {self.now:.6g} s): the "
                f"scenario churns (spot interruption rate {self.rate:g}/node-hour, expireAfter shorter than the "
                f"pods) or is very large; lower the rate, lengthen expireAfter, set a shorter until_s or raise "
                f"max_nodes")
        self._counter += 1
        node = SimNode(f"{pool.name}-{self._counter:04d}", it.gpu_model, it.gpus * pool.timeslice_replicas, it.gpus,
                       it.cpu_milli, it.memory_mib, it.price(pool.capacity_type), self.now,
                       self.now + pool.ready_delay_s, pool=pool, instance_type=it.name,
                       capacity_type=pool.capacity_type, pull_mib_per_s=pool.pull_mib_per_s,
                       extract_mib_per_s=pool.extract_mib_per_s, timeslice_replicas=pool.timeslice_replicas)
        node.image_ready = {img: node.ready_s for img in pool.prepulled_images}
        self.nodes[node.name] = node
        self._push(node.ready_s, _NODE, ("ready", node.name))
        if math.isfinite(pool.expire_after_s):
            self._push(self.now + pool.expire_after_s, _NODE, ("expire", node.name))
        if pool.capacity_type == "spot" and self.rate > 0:
            t = self.now + self.rng.exponential(3600.0 / self.rate)
            self._push(t, _NODE, ("spot-notice", node.name))
        return node


def simulate_autoscaler(pods: Sequence[Pod], nodepools: Sequence[NodePool] = (),
                        static_nodes: Sequence[StaticNode] = (), **kwargs) -> AutoscalerResult:
    """Run :class:`AutoscalerSim` and return its :class:`AutoscalerResult`."""
    return AutoscalerSim(pods, nodepools, static_nodes, **kwargs).run()
