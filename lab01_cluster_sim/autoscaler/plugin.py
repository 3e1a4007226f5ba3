"""A Karpenter-like autoscaler as a node-lifecycle plugin of the one engine.

What it does, in the order Karpenter does it (karpenter.sh docs, "Concepts: Scheduling,
Provisioning, Disruption"), at the engine's extension points (:mod:`lab01_cluster_sim.framework.interface`):

1. **Scheduling** is the engine's own: pending pods bind to ready, uncordoned nodes with room
   (GPUs as the integer ``nvidia.com/gpu`` a node advertises, time-slicing replicas
   included; CPU; memory), fullest node first (policy ``most-allocated``). A pod starts
   computing once its image is on the node (``start_delay``): a first pull takes
   ``image_gib x 1024 x (1 / pull_mib_per_s + 1 / extract_mib_per_s)`` s (download, then
   layer extraction); later pods on that node find it cached (or wait for the pull already
   under way); pre-pulled images are warm from the node's ready time. Time-sliced nodes
   (``timeslice_replicas > 1``) slow their pods down through the ``time-slicing`` plugin.
2. **Provisioning** (``after_cycle``): the pods still pending are packed, largest first
   (first-fit decreasing, as Karpenter's bin-packing), onto nodes already launching, then onto
   new node claims; a claim keeps every (NodePool, instance type) that could hold all its pods
   within the pool's GPU ``limits`` and launches the cheapest of them (ties: the earlier
   pool). So pods pending at the same instant share a node: four pending 1-GPU pods and a pool
   of 8-GPU types give one node, not four (Karpenter's ``--batch-max-duration`` setting: "the
   more pods we can consider for provisioning at one time ... usually results in fewer but
   larger nodes"; here the batch is one instant). A node is schedulable
   ``boot_delay_s + registration_delay_s`` after launch (cordoned until then).
3. **Disruption**: consolidation ``WhenEmpty`` removes a node empty for
   ``consolidate_after_s``; ``WhenEmptyOrUnderutilized`` also removes a node whose pods all fit
   on the other nodes once its pods have not changed for ``consolidate_after_s`` (the pods are
   evicted and rescheduled; replacing a node by a cheaper one is not modelled). Voluntary
   disruptions respect each workload's ``min_available`` (a PodDisruptionBudget). A pod
   annotated ``karpenter.sh/do-not-disrupt: "true"`` (``job.extras["do_not_disrupt"]``) blocks
   consolidation of its node while it is there ("On a Pod, it blocks consolidation of the
   Pod's node ... It does not block expiration, repair, or forceful termination": Karpenter
   docs, "Well-Known Annotations", GA; "Disruption", Pod-Level Controls); it does not stop
   spot interruptions or expiry. **Spot
   interruptions** come with a 2-minute notice: the node is cordoned, its pods are evicted at
   once where the budget allows and the rest at the interruption. **expireAfter**: an
   expired node is drained (forcefully, as Karpenter v1 does) and removed.

An evicted pod restarts from the beginning (its run time so far is lost). Cost = sum over nodes
of (terminated - launched) hours x the node's hourly price. Times in s.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from lab01_cluster_sim import engine as eng
from lab01_cluster_sim.autoscaler.catalogue import InstanceType
from lab01_cluster_sim.autoscaler.nodepool import NodePool
from lab01_cluster_sim.autoscaler.requirements import (incompatibility, instance_labels, matches,
                                                       unadvertised)
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.kubescheduler.constraints import required_affinity
from lab01_cluster_sim.model import Job, JobRecord, JobState, Node, termination_grace
from lab01_cluster_sim.sharing_modes import timesliced_node

SPOT_NOTICE_S = 120.0
"""Spot interruption notice: two minutes (AWS EC2 Spot Instance interruption notice)."""

MAX_NODES = 1000
"""Default bound on nodes launched per run (the 60-pod burst scenario launches a few dozen)."""


@dataclass
class SimNode:
    """A node during the simulation (mutable).

    Attributes:
        name, gpu_model: as the node. gpu_capacity: advertised ``nvidia.com/gpu`` (physical
        GPUs x time-slicing replicas). physical_gpus. cpu_milli, memory_mib. price_per_hour.
        launched_s, ready_s: launch and schedulable times. pool: its NodePool (None for a
        static node). instance_type, capacity_type. pull_mib_per_s, extract_mib_per_s: image
        pull rates. timeslice_replicas. terminated_s, termination_reason. cordoned.
        pods: pods bound now. nominated: pending pods the provisioner meant for it.
        image_ready: image -> when it is (or will be) on the node. version: bumps on every
        pod change (consolidateAfter bookkeeping). index: its index in the engine's cluster.
    """

    name: str
    gpu_model: str
    gpu_capacity: int
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
    version: int = 0
    index: int = -1

    @property
    def alive(self) -> bool:
        return self.terminated_s is None

    def hours(self, end: float) -> float:
        """Billed hours: launch to termination (or ``end``)."""
        stop = self.terminated_s if self.terminated_s is not None else end
        return max(0.0, stop - self.launched_s) / 3600.0


@dataclass
class _Claim:
    """A node claim being packed: its pods and the (pool index, type) options left."""

    pods: list[JobRecord]
    options: list[tuple[int, InstanceType]]


def pod_request(job: Job) -> tuple[int, int, int]:
    """``(nvidia.com/gpu, milli-CPU, MiB)`` one pod of ``job`` asks for."""
    return job.gpus_per_worker, job.cpu_milli, job.memory_mib


class Autoscaler:
    """Engine plugin (``"autoscaler"``): provisioning, image pulls, consolidation, spot
    interruptions and expiry (see the module docstring).

    Args:
        nodepools: NodePools, in order of preference (ties in price go to the earlier pool).
        static_nodes: :class:`SimNode` records of the nodes present from t=0, in the order of
            the simulation's node list (pull rates, cached images, price).
        min_available: workload -> pods that voluntary disruptions must leave running (a job's
            workload is ``job.extras["workload"]``, else its tenant).
        spot_interruptions: ``(time, node name)`` pairs: the notice arrives at ``time``.
        spot_interruption_rate_per_hour: or, per spot node, a Poisson rate of notices (drawn at
            launch from ``rng``).
        rng: seeded generator for random interruptions.
        max_nodes: launches allowed over the run (InputError beyond).
        max_events: events allowed over the run (InputError beyond).
        stop_when_settled: end the run once every job has finished and no NodePool node is
            alive (later events cannot change anything).

    Raises:
        InputError: duplicate pool names, a negative or NaN rate, a negative budget.
    """

    name = "autoscaler"

    def __init__(self, nodepools: Sequence[NodePool] = (), static_nodes: Sequence[SimNode] = (), *,
                 min_available: Mapping[str, int] | None = None,
                 spot_interruptions: Sequence[tuple[float, str]] = (),
                 spot_interruption_rate_per_hour: float = 0.0, rng: np.random.Generator | None = None,
                 max_nodes: int = MAX_NODES, max_events: int | None = None,
                 stop_when_settled: bool = True) -> None:
        if not (spot_interruption_rate_per_hour >= 0 and math.isfinite(spot_interruption_rate_per_hour)):
            raise InputError(f"spot_interruption_rate_per_hour must be a finite number >= 0, "
                             f"got {spot_interruption_rate_per_hour}")
        for workload, count in (min_available or {}).items():
            if count < 0:
                raise InputError(f"min_available[{workload!r}] must be >= 0, got {count}")
        pool_names = [p.name for p in nodepools]
        if len(set(pool_names)) != len(pool_names):
            raise InputError("nodepool names must be unique")
        if max_nodes < 1:
            raise InputError(f"max_nodes must be >= 1, got {max_nodes}")
        self.pools = list(nodepools)
        self.min_available = dict(min_available or {})
        self.rate = spot_interruption_rate_per_hour
        self.rng = rng if rng is not None else np.random.default_rng(0)
        self.max_nodes = max_nodes
        self.max_events = max_events
        self.stop_when_settled = stop_when_settled
        self.nodes: dict[str, SimNode] = {}
        self._static = list(static_nodes)
        self._planned_spot = list(spot_interruptions)
        self._by_index: dict[int, SimNode] = {}
        self._nominee: dict[str, SimNode] = {}      # pod (job id) -> the launching node meant for it
        self._pool_gpus_alive: dict[str, int] = {p.name: 0 for p in self.pools}
        self._counter = 0
        self.sim = None
        self.unlaunchable: dict[str, str] = {}     # pod -> why no NodePool can launch for it (last seen)

    # -- lifecycle ---------------------------------------------------------------------------
    def attach(self, sim) -> None:
        self.sim = sim
        by_name = {n.name: i for i, n in enumerate(sim.state.nodes)}
        for s in self._static:
            if s.name not in by_name:
                raise InputError(f"static node {s.name!r} is not in the simulation's cluster")
            s.index = by_name[s.name]
            self.nodes[s.name] = s
            self._by_index[s.index] = s
        for t, name in self._planned_spot:
            sim.call_at(t, "spot-notice", self._on_spot_notice, name, eng.NODE_CHANGE)

    def could_host(self, sim, job: Job) -> bool:
        """A pending pod is never rejected with an autoscaler: if no instance type of any pool
        could ever hold it, it stays pending (reported), as in Kubernetes."""
        return True

    def workload(self, rec: JobRecord) -> str:
        return str(rec.job.extras.get("workload", rec.job.tenant))

    # -- image pulls (start delay) -------------------------------------------------------------
    def start_delay(self, sim, rec: JobRecord) -> float:
        image = rec.job.extras.get("image")
        if image is None or not rec.placements:
            return 0.0
        node = self._by_index.get(rec.placements[0].node_index)
        if node is None:
            return 0.0
        ready = node.image_ready.get(image)
        if ready is None:
            mib = float(rec.job.extras.get("image_gib", 0.0)) * 1024.0
            ready = sim.now + mib / node.pull_mib_per_s + mib / node.extract_mib_per_s
            node.image_ready[image] = ready
        return max(0.0, ready - sim.now)

    # -- pod bookkeeping (observer hooks) ------------------------------------------------------
    def on_bind(self, record, placement, request) -> None:
        node = self._by_index.get(placement.node_index)
        if node is not None:
            node.pods.add(record.job_id)
            node.version += 1
        nominee = self._nominee.pop(record.job_id, None)
        if nominee is not None:
            nominee.nominated.discard(record.job_id)

    def _nominate(self, node: SimNode, rec: JobRecord) -> None:
        node.nominated.add(rec.job_id)
        self._nominee[rec.job_id] = node

    def on_release(self, record, placement, request) -> None:
        node = self._by_index.get(placement.node_index)
        if node is not None:
            node.pods.discard(record.job_id)
            node.version += 1
            self._schedule_check(node)

    def on_start(self, record) -> None:
        for p in record.placements:
            node = self._by_index.get(p.node_index)
            if node is not None:
                self._schedule_check(node)
                break

    # -- provisioning ---------------------------------------------------------------------------
    def after_cycle(self, sim) -> None:
        if self.max_events is not None and sim.engine.processed_count > self.max_events:
            launched = sum(1 for n in self.nodes.values() if n.pool is not None)
            raise InputError(
                f"the autoscaler simulation handled {self.max_events} events and reached only "
                f"t = {sim.now:.6g} s ({launched} nodes launched): the scenario churns (spot interruption "
                f"rate {self.rate:g}/node-hour, expireAfter, pods longer than node lifetimes); "
                f"lower the rate, lengthen expireAfter or set a shorter until_s")
        self._provision(sim)
        if self.stop_when_settled and self._settled(sim):
            sim.engine.stop("settled")

    def _settled(self, sim) -> bool:
        if any(self._pool_gpus_alive.values()) or len(sim.scheduler.discipline) or sim.scheduler.running:
            return False
        if any(n.alive and n.pool is not None for n in self.nodes.values()):
            return False
        return all(r.state in (JobState.COMPLETED, JobState.REJECTED, JobState.TIMEOUT)
                   for r in sim.records.values())

    def _free(self, node: SimNode, exclude: str | None = None) -> list[int]:
        """Room left on ``node`` for pods: its capacity minus bound and nominated pods."""
        g, c, m = node.gpu_capacity, node.cpu_milli, node.memory_mib
        for name in node.pods | node.nominated:
            if name == exclude:
                continue
            pg, pc, pm = pod_request(self.sim.records[name].job)
            g, c, m = g - pg, c - pc, m - pm
        return [g, c, m]

    @staticmethod
    def _fits(req: tuple[int, int, int], free: Sequence[int]) -> bool:
        return req[0] <= free[0] and req[1] <= free[1] and req[2] <= free[2]

    def _pool_gpus(self, pool: NodePool) -> int:
        """Physical GPUs of the pool's nodes alive now (kept up to date at launch and termination)."""
        return self._pool_gpus_alive[pool.name]

    @staticmethod
    def _labels_ok(labels: Mapping[str, str], pods: Sequence[JobRecord]) -> bool:
        """Every pod's requirements on well-known labels accept a node with ``labels``
        (:func:`~.requirements.matches`)."""
        return all(matches(r.job, labels) for r in pods)

    @staticmethod
    def _model_ok(gpu_model: str, pods: Sequence[JobRecord]) -> bool:
        """Every GPU pod built without Kubernetes objects (a trace's job: ``gpu_models`` set,
        no nodeSelector or affinity in its extras) accepts ``gpu_model``. Pods read from a
        scenario state their model as a label requirement instead (:mod:`.requirements`)."""
        return all(not r.job.gpu_models or r.job.gpus_per_worker == 0 or gpu_model in r.job.gpu_models
                   or "node_selector" in r.job.extras or "affinity" in r.job.extras for r in pods)

    def _type_holds(self, pool: NodePool, it: InstanceType, pods: Sequence[JobRecord]) -> bool:
        if not (self._model_ok(it.gpu_model, pods)
                and self._labels_ok(instance_labels(it, pool.capacity_type, pool.name), pods)):
            return False
        g = sum(r.job.gpus_per_worker for r in pods)
        c = sum(r.job.cpu_milli for r in pods)
        m = sum(r.job.memory_mib for r in pods)
        return g <= it.gpus * pool.timeslice_replicas and c <= it.cpu_milli and m <= it.memory_mib

    def _provision(self, sim) -> None:
        if not len(sim.scheduler.discipline) or not self.pools:
            return
        nominee = self._nominee
        todo = [r for r in sim.scheduler.discipline.order()
                if r.state is JobState.PENDING and r.job_id not in nominee]
        if not todo:
            return
        # first-fit decreasing: largest pods first (GPUs, CPU, memory), then queue order
        todo.sort(key=lambda r: (-r.job.gpus_per_worker, -r.job.cpu_milli, -r.job.memory_mib, r.queue_seq))
        launching = sorted((n for n in self.nodes.values() if n.alive and not n.cordoned and n.ready_s > sim.now),
                           key=lambda n: n.name)
        claims: list[_Claim] = []
        for rec in todo:
            why = incompatibility(rec.job) or unadvertised(rec.job)
            if why is not None:     # no NodePool can launch for it (requirements.py); it stays Pending
                self.unlaunchable[rec.job_id] = why
                rec.reason = f"Karpenter: {why}"
                continue
            req = pod_request(rec.job)
            target = next((n for n in launching if self._fits(req, self._free(n)) and self._model_ok(n.gpu_model, [rec])
                           and self._labels_ok(sim.state.nodes[n.index].labels, [rec])), None)
            if target is not None:
                self._nominate(target, rec)
                continue
            for claim in claims:
                options = [(pi, it) for pi, it in claim.options
                           if self._type_holds(self.pools[pi], it, claim.pods + [rec])]
                if options:
                    claim.pods.append(rec)
                    claim.options = options
                    break
            else:
                options = []
                for pi, pool in enumerate(self.pools):
                    room = pool.limit_gpus - self._pool_gpus(pool)
                    options.extend((pi, it) for it in pool.instance_types
                                   if it.gpus <= room and self._type_holds(pool, it, [rec]))
                if options:
                    claims.append(_Claim([rec], options))
                elif not self._fits_anywhere(sim, rec):
                    # Karpenter's InstanceTypeFilterError (nodeclaim.go) when neither the
                    # requirements nor the resources leave a type; its requirements= and
                    # resources= details are replaced by the NodePools tried
                    why = ("no instance type met the scheduling requirements or had enough resources, NodePools="
                           f"{','.join(p.name for p in self.pools)}")
                    self.unlaunchable[rec.job_id] = why
                    rec.reason = f"Karpenter: {why}"
        for claim in claims:
            best = None
            for pi, it in claim.options:
                pool = self.pools[pi]
                if it.gpus > pool.limit_gpus - self._pool_gpus(pool):
                    continue
                key = (it.price(pool.capacity_type), pi)
                if best is None or key < best[0]:
                    best = (key, pool, it)
            if best is None:
                continue     # the pool filled up with earlier claims of this round: next round
            node = self._launch(sim, best[1], best[2])
            for r in claim.pods:
                self._nominate(node, r)

    def _fits_anywhere(self, sim, rec: JobRecord) -> bool:
        """Some alive node (launched or static) could hold ``rec`` when empty: it is only
        waiting, not unlaunchable."""
        req = pod_request(rec.job)
        return any(n.alive and self._fits(req, [n.gpu_capacity, n.cpu_milli, n.memory_mib])
                   and self._labels_ok(sim.state.nodes[n.index].labels, [rec]) for n in self.nodes.values())

    # -- Filter: a pod binds only to nodes whose labels meet its requirements --------------------
    def filter(self, request, record: JobRecord | None) -> np.ndarray:
        """bool (N,): the nodes whose labels satisfy ``record``'s nodeSelector and required node
        affinity (kube-scheduler's NodeAffinity rule, :mod:`lab01_cluster_sim.corev1`), so a pod
        that asked for an instance type, capacity type or GPU name binds only to such a node;
        none for a pod requesting an extended resource other than ``nvidia.com/gpu`` (no node
        of an autoscaled scenario advertises one).
        Launched nodes carry their well-known labels (:func:`~.requirements.instance_labels`),
        not the labels GPU Feature Discovery would add after they join."""
        nodes = self.sim.state.nodes
        if record is not None and record.job.extras.get("extended_requests"):
            return np.zeros(len(nodes), dtype=bool)     # no node advertises it (unadvertised())
        if record is None or not (record.job.extras.get("node_selector") or record.job.extras.get("affinity")):
            return np.ones(len(nodes), dtype=bool)
        required = required_affinity(record.job)
        return np.array([required.matches(n.labels, n.name) for n in nodes], dtype=bool)

    def _launch(self, sim, pool: NodePool, it: InstanceType) -> SimNode:
        if self._counter >= self.max_nodes:
            raise InputError(
                f"the autoscaler would launch more than {self.max_nodes} nodes (by t = {sim.now:.6g} s): the "
                f"scenario churns (spot interruption rate {self.rate:g}/node-hour, expireAfter shorter than the "
                f"pods) or is very large; lower the rate, lengthen expireAfter, set a shorter until_s or raise "
                f"max_nodes")
        self._counter += 1
        now = sim.now
        name = f"{pool.name}-{self._counter:04d}"
        node = SimNode(name, it.gpu_model, it.gpus * pool.timeslice_replicas, it.gpus, it.cpu_milli, it.memory_mib,
                       it.price(pool.capacity_type), now, now + pool.ready_delay_s, pool=pool, instance_type=it.name,
                       capacity_type=pool.capacity_type, pull_mib_per_s=pool.pull_mib_per_s,
                       extract_mib_per_s=pool.extract_mib_per_s, timeslice_replicas=pool.timeslice_replicas)
        node.image_ready = {img: node.ready_s for img in pool.prepulled_images}
        labels = instance_labels(it, pool.capacity_type, pool.name)
        spec = timesliced_node(name, it.gpu_model, it.gpus, pool.timeslice_replicas, it.cpu_milli, it.memory_mib,
                               labels=labels) if it.gpus else Node(name, "", 0, it.cpu_milli, it.memory_mib, labels=labels)
        node.index = sim.add_node(spec, online=node.ready_s <= now)
        self._pool_gpus_alive[pool.name] += node.physical_gpus
        self.nodes[name] = node
        self._by_index[node.index] = node
        if node.ready_s > now:
            sim.call_at(node.ready_s, "node-ready", self._on_ready, node, eng.NODE_CHANGE)
        else:
            self._schedule_check(node)
        if math.isfinite(pool.expire_after_s):
            sim.call_at(now + pool.expire_after_s, "expire", self._on_expire, node, eng.NODE_CHANGE)
        if pool.capacity_type == "spot" and self.rate > 0:
            t = now + self.rng.exponential(3600.0 / self.rate)
            sim.call_at(t, "spot-notice", self._on_spot_notice, name, eng.NODE_CHANGE)
        return node

    # -- node events --------------------------------------------------------------------------
    def _on_ready(self, event) -> None:
        node: SimNode = event.payload
        if node.alive and not node.cordoned:
            self.sim.node_up(node.index)
        self._schedule_check(node)

    def _schedule_check(self, node: SimNode) -> None:
        pool = node.pool
        if pool is not None and pool.consolidation_policy != "Never" and node.alive:
            self.sim.call_at(self.sim.now + pool.consolidate_after_s, "consolidation-check", self._on_check,
                             (node, node.version))

    def _budget_allows(self, pods: set[str]) -> bool:
        """True if evicting these pods leaves every workload at or above its min_available."""
        by_wl: dict[str, int] = {}
        for p in pods:
            wl = self.workload(self.sim.records[p])
            by_wl[wl] = by_wl.get(wl, 0) + 1
        running: dict[str, int] = {}
        for rec in self.sim.scheduler.running.values():
            wl = self.workload(rec)
            running[wl] = running.get(wl, 0) + 1
        return all(running.get(wl, 0) - k >= self.min_available.get(wl, 0) for wl, k in by_wl.items())

    def _pods_fit_elsewhere(self, node: SimNode) -> bool:
        now = self.sim.now
        others = [n for n in self.nodes.values()
                  if n.alive and n is not node and not n.cordoned and n.ready_s <= now]
        free = {n.name: self._free(n) for n in others}
        for p in sorted(node.pods, key=lambda x: -self.sim.records[x].job.gpus_per_worker):
            req = pod_request(self.sim.records[p].job)
            for n in others:
                f = free[n.name]
                if self._fits(req, f):
                    for k in range(3):
                        f[k] -= req[k]
                    break
            else:
                return False
        return True

    def _on_check(self, event) -> None:
        node, version = event.payload
        if not node.alive or node.version != version or node.pool is None or node.cordoned:
            return
        policy = node.pool.consolidation_policy
        if policy == "Never":
            return
        if not node.pods and not node.nominated:
            self._terminate(node, "consolidation: empty")
            return
        if any(self.sim.records[p].job.extras.get("do_not_disrupt") for p in node.pods):
            # karpenter.sh/do-not-disrupt on a pod "blocks consolidation of the Pod's node" (Karpenter
            # docs, "Well-Known Annotations" and "Disruption", Pod-Level Controls); the release of a
            # pod schedules the next check (on_release). Spot interruption and expiry are not blocked.
            return
        if policy == "WhenEmptyOrUnderutilized" and self._pods_fit_elsewhere(node) and self._budget_allows(node.pods):
            grace = max(self._evict(p, "consolidation: underutilized node") for p in sorted(node.pods))
            if grace > 0:
                # Karpenter's termination controller drains the node through the Eviction API and
                # deletes the instance once its pods are gone (Karpenter docs, "Disruption",
                # Termination Controller): the node is cordoned meanwhile, and the pods' GPUs stay
                # held for their terminationGracePeriodSeconds.
                node.cordoned = True
                self.sim.cordon(node.index)
                self.sim.call_at(self.sim.now + grace, "consolidation-terminate", self._on_drained, node,
                                 eng.NODE_CHANGE)
            else:
                self._terminate(node, "consolidation: underutilized")

    def _on_drained(self, event) -> None:
        node: SimNode = event.payload
        if node.alive:
            self._terminate(node, "consolidation: underutilized")

    def _evict(self, name: str, reason: str, max_grace: float = math.inf) -> float:
        """Evict pod ``name`` if it runs, gracefully (its ``terminationGracePeriodSeconds``, at
        most ``max_grace`` s); return the grace period given, s (0 if it was not running)."""
        rec = self.sim.records[name]
        if rec.state is not JobState.RUNNING:
            return 0.0
        grace = min(termination_grace(rec.job), max_grace)
        self.sim.evict(rec, reason, grace_s=grace, grace_cap_s=max_grace)
        return grace

    def _on_spot_notice(self, event) -> None:
        node = self.nodes.get(event.payload)
        if node is None or not node.alive:
            return
        node.cordoned = True
        self.sim.cordon(node.index)
        for p in sorted(node.pods):
            if self._budget_allows({p}):
                self._evict(p, f"spot interruption notice ({node.name})", SPOT_NOTICE_S)
        self.sim.call_at(self.sim.now + SPOT_NOTICE_S, "spot-terminate", self._on_spot_terminate, node,
                         eng.NODE_CHANGE)

    def _on_spot_terminate(self, event) -> None:
        node: SimNode = event.payload
        if node.alive:
            self._terminate(node, "spot interruption")

    def _on_expire(self, event) -> None:
        node: SimNode = event.payload
        if node.alive:
            node.cordoned = True
            self._terminate(node, "expired (expireAfter)")

    def _terminate(self, node: SimNode, reason: str) -> None:
        node.terminated_s = self.sim.now
        node.termination_reason = reason
        for p in node.nominated:
            self._nominee.pop(p, None)
        node.nominated.clear()
        if node.pool is not None:
            self._pool_gpus_alive[node.pool.name] -= node.physical_gpus
        self.sim.remove_node(node.index, reason)


def autoscaler_plugin(nodes, jobs, instance_types: str = "", limit_gpus: float = math.inf,
                       consolidation: str = "WhenEmpty", consolidate_after_s: float = 30.0,
                       capacity_type: str = "on-demand") -> Autoscaler:
    """``--plugin autoscaler:instance_types=p5.48xlarge;g5.xlarge,limit_gpus=64`` (default: the
    whole built-in catalogue): one NodePool, no pod images (no pull delays)."""
    from lab01_cluster_sim.autoscaler.catalogue import DEFAULT_CATALOGUE

    wanted = [t for t in instance_types.split(";") if t]
    types = tuple(t for t in DEFAULT_CATALOGUE if not wanted or t.name in wanted)
    if wanted and len(types) != len(wanted):
        known = ", ".join(t.name for t in DEFAULT_CATALOGUE)
        raise InputError(f"--plugin autoscaler: unknown instance type in {instance_types!r}; expected some of: {known}")
    return Autoscaler([NodePool("default", types, limit_gpus=limit_gpus, consolidation_policy=consolidation,
                                consolidate_after_s=consolidate_after_s, capacity_type=capacity_type)])
