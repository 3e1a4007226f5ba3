"""A scenario: the Kubernetes objects users already write, read into the simulator's records.

``load_scenario(path)`` reads one YAML file or a folder of them, checks every object
(:mod:`.validate`), then turns them into:

- **Nodes** (``v1 Node``): ``status.allocatable`` (else ``capacity``) ``cpu``, ``memory``,
  ``nvidia.com/gpu``; the GPU model is the GPU Feature Discovery label
  ``nvidia.com/gpu.product``, the NVLink domain its ``nvidia.com/gpu.clique`` label (nodes with
  the same clique share one island; without it a node is its own island). Or ``Scenario.spec.nodes.csv``: an openb node-list CSV
  (bounded as :func:`~lab01_cluster_sim.workloads.openb.load_nodes`: a regular file of at most 32 MiB,
  and at most 100,000 nodes, ``simulate --nodes``'s cap).
- **Jobs** (:class:`~lab01_cluster_sim.model.Job`) from ``v1 Pod`` (one worker) and
  ``batch/v1 Job`` (``parallelism`` workers). A pod's request is the sum over its containers,
  or the largest init container if bigger (Kubernetes' effective request); a request
  defaults to its limit. ``nvidia.com/gpu`` is whole GPUs; ``lab01.course/gpu-milli`` gives a
  shared share of one GPU (the Alibaba trace's unit). Annotations give what Kubernetes objects
  do not carry: ``lab01.course/duration`` (run time, s, or ``inf`` for a service) and
  ``lab01.course/submit-time`` (arrival, s, default 0), each at most :data:`MAX_SECONDS`.
- **Gangs**: pods labelled ``scheduling.x-k8s.io/pod-group: NAME`` with a ``PodGroup``
  (coscheduling) of that name form one job of as many workers.
- **Priority**: ``priorityClassName`` -> a ``PriorityClass``'s value (the ``globalDefault``
  class for pods naming none); the Kueue label ``kueue.x-k8s.io/priority-class`` -> a
  ``WorkloadPriorityClass`` (it wins for admission, as in Kueue).
- **Kueue** objects -> :mod:`lab01_cluster_sim.admission` records; Jobs/Pods name their
  LocalQueue with the label ``kueue.x-k8s.io/queue-name``; ``kueue.x-k8s.io/job-min-parallelism``
  gives a Job's minimum count (partial admission).
- **Karpenter** ``NodePool`` -> :class:`~lab01_cluster_sim.autoscaler.nodepool.NodePool` (CRD
  defaults: ``consolidationPolicy: WhenEmptyOrUnderutilized``, ``consolidateAfter: 0s``,
  ``expireAfter: 720h``).
- ``KubeSchedulerConfiguration`` -> :class:`.scoring.NodeResourcesFit`.
- the ``Scenario`` object (``lab01.course/v1alpha1``): description, node CSV, workload
  (trace or generator), simulation settings.

Bounds: at most :data:`MAX_FILES` files, :data:`~.yamlio.MAX_SCENARIO_BYTES` bytes and
:data:`MAX_OBJECTS` objects per scenario (each file is bounded by :mod:`.yamlio`). Objects that are valid but that the current simulator
cannot execute are listed in :attr:`Scenario.unsupported` (``run`` refuses them in one line).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from lab01_cluster_sim.admission import api as kq
from lab01_cluster_sim.admission.plugin import QUEUE_KEY
from lab01_cluster_sim.admission.preemption import FairSharingStrategy
from lab01_cluster_sim.admission.quantity import CPU, GPU, MEMORY, parse_quantity, resource_value
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.model import MILLI_PER_GPU, Job, Node
from lab01_cluster_sim.scenario.podsched import creation_timestamp, node_pool_types, read_pod_scheduling
from lab01_cluster_sim.scenario.validate import object_name, validate_document
from lab01_cluster_sim.scenario.yamlio import (MAX_SCENARIO_BYTES, Document, ScenarioError, format_path, iter_files,
                                               load_documents, read_text, where)

MAX_FILES = 200
"""Most YAML files in a scenario folder."""
MAX_OBJECTS = 20_000
"""Most objects in one scenario (a 3,000-Pod file, 780 kB, is read and checked in about 6 s of
CPU)."""

MAX_SECONDS = 1e9
"""Largest finite ``lab01.course/duration`` and ``lab01.course/submit-time``, s (about 31.7
years; the Alibaba 2023 default pod list spans 12,902,960 s, about 149 days). A larger time is a typo, and near
1e308 the engine's sums overflow to inf (a makespan of 300 digits)."""

SHARED_DATA_VAR = "$COURSE_SHARED_DATA"
"""A Scenario path starting with this (or ``${COURSE_SHARED_DATA}``) is under the course's shared
data folder (see ``_Builder._resolve``)."""

DURATION = "lab01.course/duration"
SUBMIT_TIME = "lab01.course/submit-time"
GPU_MILLI = "lab01.course/gpu-milli"
IMAGE_GIB = "lab01.course/image-gib"
GPU_PRODUCT = "nvidia.com/gpu.product"
GPU_CLIQUE = "nvidia.com/gpu.clique"
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
WPC_LABEL = "kueue.x-k8s.io/priority-class"
MIN_PARALLELISM = "kueue.x-k8s.io/job-min-parallelism"
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
HAMI_GPU_POLICY = "hami.io/gpu-scheduler-policy"
MIB = 2**20
KNOWN_RESOURCES = (CPU, MEMORY, GPU, "ephemeral-storage")


@dataclass
class Source:
    """Where an object came from: file, line, column, ``Kind/name``."""

    file: str
    pos: tuple[int, int] | None
    name: str

    def __str__(self) -> str:
        return f"{where(self.file, self.pos)}: {self.name}"


@dataclass
class KueueObjects:
    """The Kueue objects of a scenario, as admission records."""

    flavors: list[kq.ResourceFlavor] = field(default_factory=list)
    cluster_queues: list[kq.ClusterQueue] = field(default_factory=list)
    cohorts: list[kq.Cohort] = field(default_factory=list)
    local_queues: list[kq.LocalQueue] = field(default_factory=list)
    priority_classes: dict[str, int] = field(default_factory=dict)
    fair_sharing: bool = False
    strategies: tuple[FairSharingStrategy, ...] = ()
    wait_for_pods_ready: Any = None   # admission.backoff.WaitForPodsReady, from the Configuration

    def __bool__(self) -> bool:
        return bool(self.flavors or self.cluster_queues or self.cohorts or self.local_queues)

    def controller(self):
        """An :class:`~lab01_cluster_sim.admission.AdmissionController` over these objects."""
        from lab01_cluster_sim.admission import AdmissionController
        from lab01_cluster_sim.admission.preemption import DEFAULT_STRATEGIES

        return AdmissionController(self.cluster_queues, self.local_queues, self.flavors, self.cohorts,
                                   fair_sharing=self.fair_sharing, strategies=self.strategies or DEFAULT_STRATEGIES)


@dataclass
class Scenario:
    """A scenario, read and checked.

    Attributes:
        path: the file or folder. name / description: from the Scenario object (or the path).
        nodes: the cluster. jobs: the workload from Pods/Jobs (submit order).
        spec: the Scenario object's ``spec`` (defaults applied), or {}.
        kueue: the Kueue objects. node_pools: Karpenter NodePools (autoscaler records).
        scoring: the NodeResourcesFit scorer from a KubeSchedulerConfiguration, or None.
        percentage_of_nodes_to_score: from the KubeSchedulerConfiguration, or None.
        pod_records: for the autoscaler: (name, job, image, image GiB, workload) per pod.
        objects: ``Kind`` -> count.
        unsupported: ``"file:line:col: Kind/name: why"`` for every object the current
            simulator cannot execute.
        sources: job id / object name -> :class:`Source`.
        empty_files: files of the folder that hold no object (empty, or comments only);
            ``run`` notes them, since a wrongly saved file would otherwise go unnoticed.
    """

    path: Path
    name: str
    description: str = ""
    nodes: list[Node] = field(default_factory=list)
    jobs: list[Job] = field(default_factory=list)
    spec: dict[str, Any] = field(default_factory=dict)
    kueue: KueueObjects = field(default_factory=KueueObjects)
    node_pools: list = field(default_factory=list)
    scoring: Any = None
    percentage_of_nodes_to_score: int | None = None
    pod_images: dict[str, tuple[str, float, str]] = field(default_factory=dict)
    objects: dict[str, int] = field(default_factory=dict)
    unsupported: list[str] = field(default_factory=list)
    sources: dict[str, Source] = field(default_factory=dict)
    empty_files: list[str] = field(default_factory=list)

    @property
    def base_dir(self) -> Path:
        return self.path if self.path.is_dir() else self.path.parent


def _src(doc: Document, path=()) -> Source:
    return Source(doc.file, doc.pos(path), object_name(doc.data))


def _err(doc: Document, path: tuple, message: str) -> ScenarioError:
    return ScenarioError(f"{where(doc.file, doc.pos(path))}: {object_name(doc.data)}: {format_path(path)}: {message}")


def load_scenario(path: str | Path) -> Scenario:
    """Read, check and convert the scenario at ``path`` (module docstring).

    Raises:
        ScenarioError: any bad input, as one line naming file:line:column, object and field.
    """
    path = Path(path)
    files = []
    for i, f in enumerate(iter_files(path)):
        if i >= MAX_FILES:
            raise ScenarioError(f"{path}: more than {MAX_FILES} YAML files; a scenario folder holds at most that many")
        files.append(f)
    docs: list[Document] = []
    empty: list[str] = []
    total = 0
    for f in files:
        text = read_text(f)
        total += len(text)
        if total > MAX_SCENARIO_BYTES:
            raise ScenarioError(f"{f}: the scenario's files hold more than {MAX_SCENARIO_BYTES // 2**20} MiB together")
        found = load_documents(f, text)
        if not found:
            empty.append(str(f))
        docs.extend(found)
        if len(docs) > MAX_OBJECTS:
            raise ScenarioError(f"{f}: the scenario holds more than {MAX_OBJECTS:,} objects")
    if not docs:
        raise ScenarioError(f"{path}: no objects (the YAML is empty)")
    for doc in docs:
        validate_document(doc)
    sc = _Builder(path, docs).build()
    sc.empty_files = empty
    return sc


class _Builder:
    def __init__(self, path: Path, docs: list[Document]) -> None:
        self.path = path
        self.docs = docs
        self.sc = Scenario(path, path.stem if path.is_file() else path.name)
        self.seen: dict[tuple[str, str], Document] = {}
        self.position = {id(d): i for i, d in enumerate(docs)}   # input order: Kueue's last tie-break

    def by_kind(self, *kinds: str) -> list[Document]:
        return [d for d in self.docs if d.data["kind"] in kinds]

    def build(self) -> Scenario:
        sc = self.sc
        for doc in self.docs:
            kind = doc.data["kind"]
            sc.objects[kind] = sc.objects.get(kind, 0) + 1
            meta = doc.data.get("metadata", {})
            key = (kind, f"{meta.get('namespace', '')}/{meta.get('name', '')}")
            if "metadata" in doc.data and key in self.seen:
                first = self.seen[key]
                raise ScenarioError(f"{where(doc.file, doc.pos(('metadata', 'name')))}: {object_name(doc.data)}: "
                                    f"defined twice (first at {where(first.file, first.pos(()))})")
            self.seen[key] = doc
        scenarios = self.by_kind("Scenario")
        if len(scenarios) > 1:
            raise _err(scenarios[1], (), "a scenario holds at most one Scenario object")
        if scenarios:
            self._scenario(scenarios[0])
        self._priority_classes()
        self._kueue()
        self._nodes()
        self._scheduler_config()
        self._node_pools()
        self._jobs()
        return sc

    # -- Scenario ------------------------------------------------------------------------------
    def _scenario(self, doc: Document) -> None:
        spec = doc.data["spec"]
        self.sc.name = doc.data["metadata"]["name"]
        self.sc.description = spec.get("description", "")
        sim = {"mode": "gang", "discipline": "fifo-skip", "seed": 0, **spec.get("simulation", {})}
        self.sc.spec = {**spec, "simulation": sim}
        workload = spec.get("workload", {})
        if "trace" in workload and "generator" in workload:
            raise _err(doc, ("spec", "workload"), "give either trace or generator, not both")
        self.sc.sources["Scenario"] = _src(doc)
        self._scenario_doc = doc
        for path, value in _walk(spec, ("spec",)):
            if isinstance(value, float) and not math.isfinite(value):
                raise _err(doc, path, f"expected a finite number, got {value}")
        from lab01_cluster_sim.policies.base import check_policy_name

        names = [(("spec", "simulation", "policy"), sim["policy"])] if "policy" in sim else []
        names += [(("spec", "simulation", "comparePolicies", i), n) for i, n in enumerate(sim.get("comparePolicies", []))]
        for path, name in names:
            try:
                check_policy_name(name)
            except InputError as exc:
                raise _err(doc, path, str(exc)) from None
        if "trace" in workload:
            self._trace(doc, dict(workload["trace"]))
        csv = spec.get("nodes", {}).get("csv")
        if csv is not None and not self._resolve(csv).is_file():
            raise _err(doc, ("spec", "nodes", "csv"), f"{self._resolve(csv)}: not a regular file (an openb node-list CSV "
                       "is expected, relative to the scenario)")

    def _trace(self, doc: Document, trace: dict) -> None:
        """Check the trace folder and pod list now (``run --check`` must catch what ``run``
        would fail on) and keep both as resolved paths in ``spec``."""
        from lab01_cluster_sim.workloads.openb import DEFAULT_POD_LIST

        base = ("spec", "workload", "trace")
        folder = self._resolve(trace["path"])
        if not folder.is_dir():
            what = "not a folder" if folder.exists() else "does not exist"
            raise _err(doc, base + ("path",), f"{folder}: {what} (the trace folder holds "
                       "openb_node_list_gpu_node.csv and the pod lists; relative paths start at the scenario, "
                       f"$COURSE_SHARED_DATA/... at the course's shared data{self._shared_hint(trace['path'])})")
        name = trace.get("podList", "default")
        if name == "default":
            candidates = [folder / DEFAULT_POD_LIST]
        else:
            candidates = [folder / name, folder / f"openb_pod_list_{name}.csv", folder / f"{name}.csv"]
        found = next((c for c in candidates if c.is_file()), None)
        if found is None:
            known = sorted(p.name.removeprefix("openb_pod_list_").removesuffix(".csv")
                           for p in folder.glob("openb_pod_list_*.csv"))
            raise _err(doc, base + ("podList",), f"no pod list {name!r} in {folder} (a name such as 'default' or "
                       f"'gpushare40', or a CSV file in that folder); found: {', '.join(known) or 'none'}")
        from lab01_cluster_sim.workloads.openb import DEFAULT_NODE_LIST, check_file

        if not (folder / DEFAULT_NODE_LIST).exists():
            raise _err(doc, base + ("path",), f"{folder}: no {DEFAULT_NODE_LIST} there (the trace folder holds the "
                       "node list and the pod lists; python -m lab01_cluster_sim fetch-trace DIR gets them)")
        for path, file in ((base + ("podList",) if "podList" in trace else base + ("path",), found),
                           (base + ("path",), folder / DEFAULT_NODE_LIST)):
            try:   # the loaders' bounds (a regular file of at most 32 MiB), checked now for run --check
                check_file(file)
            except InputError as exc:
                raise _err(doc, path, str(exc)) from None
        self.sc.spec["workload"] = {**self.sc.spec.get("workload", {}),
                                    "trace": {**trace, "path": str(folder), "podList": str(found)}}

    # -- priorities --------------------------------------------------------------------------------
    def _priority_classes(self) -> None:
        self.priority: dict[str, int] = {}
        self.default_priority = 0
        for doc in self.by_kind("PriorityClass"):
            d = doc.data
            self.priority[d["metadata"]["name"]] = int(d["value"])
            if d.get("globalDefault"):
                self.default_priority = int(d["value"])
            if d.get("preemptionPolicy") == "Never":
                self.sc.unsupported.append(f"{_src(doc)}: preemptionPolicy Never (non-preempting priority) is not "
                                           "modelled")
        for doc in self.by_kind("WorkloadPriorityClass"):
            self.sc.kueue.priority_classes[doc.data["metadata"]["name"]] = int(doc.data["value"])

    # -- Kueue ---------------------------------------------------------------------------------------
    def _kueue(self) -> None:
        k = self.sc.kueue
        for doc in self.by_kind("ResourceFlavor"):
            spec = doc.data.get("spec", {})
            k.flavors.append(kq.ResourceFlavor(
                doc.data["metadata"]["name"], dict(spec.get("nodeLabels", {})),
                tuple(kq.Taint(t["key"], t.get("value", ""), t["effect"]) for t in spec.get("nodeTaints", [])),
                tuple(kq.Toleration(t.get("key", ""), t.get("operator", "Equal"), t.get("value", ""), t.get("effect", ""))
                      for t in spec.get("tolerations", []))))
        for doc in self.by_kind("ClusterQueue"):
            spec = doc.data["spec"]
            name = doc.data["metadata"]["name"]
            p = spec.get("preemption", {})
            bwc = p.get("borrowWithinCohort", {})
            ff = spec.get("flavorFungibility", {})
            cq = kq.ClusterQueue(
                name, self._resource_groups(doc, spec.get("resourceGroups", [])), spec.get("cohortName"),
                kq.QueueingStrategy(spec.get("queueingStrategy", "BestEffortFIFO")),
                kq.Preemption(kq.PreemptionPolicy(p.get("withinClusterQueue", "Never")),
                              kq.PreemptionPolicy(p.get("reclaimWithinCohort", "Never")),
                              kq.PreemptionPolicy(bwc.get("policy", "Never")), bwc.get("maxPriorityThreshold")),
                kq.FlavorFungibility(kq.FungibilityPolicy(ff.get("whenCanBorrow", "MayStopSearch")),
                                     kq.FungibilityPolicy(ff.get("whenCanPreempt", "TryNextFlavor")),
                                     kq.FungibilityPreference(ff["preference"]) if "preference" in ff else None),
                self._weight(doc, spec))
            if "preference" in ff and (ff.get("whenCanBorrow"), ff.get("whenCanPreempt")) != ("TryNextFlavor",) * 2:
                raise _err(doc, ("spec", "flavorFungibility", "preference"), "preference can only be set when both "
                           "whenCanBorrow and whenCanPreempt are TryNextFlavor (the CRD's validation rule)")
            if p.get("reclaimWithinCohort", "Never") == "Never" and bwc.get("policy", "Never") != "Never":
                raise _err(doc, ("spec", "preemption"), "reclaimWithinCohort=Never and borrowWithinCohort.policy!=Never "
                           "(the CRD refuses this combination)")
            self._check(doc, lambda cq=cq: kq.validate_resource_groups(f"ClusterQueue/{cq.name}", cq.resource_groups,
                                                                      cq.cohort is not None))
            k.cluster_queues.append(cq)
        for doc in self.by_kind("Cohort"):
            spec = doc.data.get("spec", {})
            k.cohorts.append(kq.Cohort(doc.data["metadata"]["name"], spec.get("parentName"),
                                       self._resource_groups(doc, spec.get("resourceGroups", [])), self._weight(doc, spec)))
        for doc in self.by_kind("LocalQueue"):
            meta = doc.data["metadata"]
            k.local_queues.append(kq.LocalQueue(meta["name"], meta.get("namespace", "default"),
                                                doc.data["spec"]["clusterQueue"]))
        for doc in self.by_kind("Configuration"):
            strategies = doc.data.get("fairSharing", {}).get("preemptionStrategies")
            if "fairSharing" in doc.data:
                k.fair_sharing = True
                if strategies:
                    k.strategies = tuple(FairSharingStrategy(s) for s in strategies)
            if "waitForPodsReady" in doc.data:
                k.wait_for_pods_ready = self._wait_for_pods_ready(doc)
        if k:
            first = next(iter(self.by_kind("ClusterQueue", "LocalQueue", "ResourceFlavor", "Cohort")))
            self._check(first, k.controller)   # cross references, quota rules, cohort cycles

    def _wait_for_pods_ready(self, doc: Document):
        """``waitForPodsReady`` -> :class:`~lab01_cluster_sim.admission.backoff.WaitForPodsReady`
        (its presence enables it in v1beta2). ``blockAdmission: true`` and a
        ``recoveryTimeout`` other than 0s are listed as not modelled."""
        from lab01_cluster_sim.admission.backoff import RequeuingStrategy, WaitForPodsReady

        base = ("waitForPodsReady",)
        w = doc.data["waitForPodsReady"]
        if w.get("blockAdmission"):
            self.sc.unsupported.append(f"{_src(doc, base + ('blockAdmission',))}: waitForPodsReady.blockAdmission "
                                       "(sequential admission) is not modelled")
        if "recoveryTimeout" in w and parse_duration(w["recoveryTimeout"]) != 0:
            self.sc.unsupported.append(f"{_src(doc, base + ('recoveryTimeout',))}: waitForPodsReady.recoveryTimeout "
                                       "is not modelled (a ready pod never fails in the simulator; give 0s or omit)")
        rs = w.get("requeuingStrategy", {})
        try:
            return WaitForPodsReady(parse_duration(w["timeout"]), RequeuingStrategy(
                float(rs.get("backoffBaseSeconds", 60)), float(rs.get("backoffMaxSeconds", 3600)),
                rs.get("backoffLimitCount")), rs.get("timestamp", "Eviction"))
        except InputError as exc:
            raise _err(doc, base, str(exc)) from None

    def _check(self, doc: Document, fn) -> None:
        try:
            fn()
        except InputError as exc:
            raise self._placed(str(exc), doc) from None

    def _placed(self, message: str, default: Document) -> ScenarioError:
        """The admission layer's message ``"Kind/name: field.path: what"`` placed at that
        object's file:line:column (the field's when the path is found), else at ``default``."""
        doc, path = default, ()
        m = _OWNER.match(message)
        if m:
            kind, name, rest = m.groups()
            for d in self.by_kind(kind):
                meta = d.data["metadata"]
                key = f"{meta.get('namespace', 'default')}/{meta['name']}" if kind == "LocalQueue" else meta["name"]
                if key == name:
                    doc, path = d, _field_path(rest)
                    break
        elif message.startswith("fairSharing.") and self.by_kind("Configuration"):
            doc = self.by_kind("Configuration")[0]
            path = _field_path(message)
            message = f"{object_name(doc.data)}: {message}"
        return ScenarioError(f"{where(doc.file, doc.pos(path))}: {message}")

    def _weight(self, doc: Document, spec: dict) -> float:
        fs = spec.get("fairSharing")
        if not fs or "weight" not in fs:
            return 1.0
        return float(parse_quantity(fs["weight"], f"{_src(doc, ('spec', 'fairSharing', 'weight'))}"))

    def _resource_groups(self, doc: Document, groups: list) -> tuple[kq.ResourceGroup, ...]:
        out = []
        for gi, g in enumerate(groups):
            flavors = []
            for fi, f in enumerate(g["flavors"]):
                resources = {}
                if f["name"] in [x.name for x in flavors]:
                    raise _err(doc, ("spec", "resourceGroups", gi, "flavors", fi, "name"), f"flavor {f['name']!r} listed "
                               "twice (the CRD keys this list by name: x-kubernetes-list-type: map)")
                for ri, r in enumerate(f["resources"]):
                    base = ("spec", "resourceGroups", gi, "flavors", fi, "resources", ri)
                    if r["name"] in resources:
                        raise _err(doc, base + ("name",), f"resource {r['name']!r} listed twice in this flavor (the CRD "
                                   "keys this list by name: x-kubernetes-list-type: map)")

                    def val(key, r=r, base=base):
                        if key not in r:
                            return None
                        return resource_value(r["name"], r[key], f"{where(doc.file, doc.pos(base + (key,)))}: "
                                              f"{object_name(doc.data)}: {format_path(base + (key,))}")
                    resources[r["name"]] = kq.ResourceQuota(val("nominalQuota"), val("borrowingLimit"), val("lendingLimit"))
                flavors.append(kq.FlavorQuotas(f["name"], resources))
            out.append(kq.ResourceGroup(tuple(g["coveredResources"]), tuple(flavors)))
        return tuple(out)

    # -- nodes -----------------------------------------------------------------------------------------
    def _nodes(self) -> None:
        sc = self.sc
        node_docs = self.by_kind("Node")
        csv = sc.spec.get("nodes", {}).get("csv")
        if node_docs and csv:
            raise _err(self._scenario_doc, ("spec", "nodes"), "nodes come either from Node objects or from a CSV, not both")
        if csv:
            from lab01_cluster_sim.commands.simulate import MAX_NODES
            from lab01_cluster_sim.workloads.openb import load_nodes

            try:   # bounded as the loaders are (32 MiB) and to simulate --nodes's 100,000 nodes
                sc.nodes = load_nodes(self._resolve(csv), max_nodes=MAX_NODES)
            except InputError as exc:
                raise _err(self._scenario_doc, ("spec", "nodes", "csv"), str(exc)) from None
            return
        cliques: dict[str, int] = {}
        for doc in node_docs:
            d = doc.data
            status = d.get("status", {})
            res = status.get("allocatable") or status.get("capacity")
            base = ("status", "allocatable" if status.get("allocatable") else "capacity")
            if not res or CPU not in res or MEMORY not in res:
                raise _err(doc, ("status",), "status.allocatable (or status.capacity) must give cpu and memory")
            name = d["metadata"]["name"]
            labels = dict(d["metadata"].get("labels", {}))

            def q(r, res=res, base=base, doc=doc):
                return resource_value(r, res[r], f"{where(doc.file, doc.pos(base + (r,)))}: {object_name(doc.data)}: "
                                      f"{format_path(base + (r,))}")
            if GPU in res:
                _integer_device_count(doc, base + (GPU,), res[GPU])
            gpus = q(GPU) if GPU in res else 0
            model = labels.get(GPU_PRODUCT, "GPU" if gpus else "")
            island = -1
            if GPU_CLIQUE in labels:   # GPU Feature Discovery's NVLink domain (clique) label
                island = cliques.setdefault(labels[GPU_CLIQUE], len(cliques))
            try:
                sc.nodes.append(Node(name, model if gpus else "", gpus, q(CPU), q(MEMORY) // MIB, labels=labels,
                                     nvlink_island=island))
            except InputError as exc:
                raise _err(doc, base, str(exc)) from None
            sc.sources[f"Node/{name}"] = _src(doc)
            other = sorted(set(res) - set(KNOWN_RESOURCES) - {"pods"})
            if other:
                sc.unsupported.append(f"{_src(doc)}: resources {', '.join(other)} are not modelled")

    def _resolve(self, rel: str) -> Path:
        """A path of the Scenario object: ``$COURSE_SHARED_DATA/...`` (or ``${COURSE_SHARED_DATA}/...``)
        is under the course's shared data folder (:func:`lab01_cluster_sim.book.shared_data_dir`:
        that environment variable, else ``../shared/data`` beside the clone, as the README's
        "Real data" says); an absolute path is used as is; any other is relative to the scenario."""
        for prefix in (SHARED_DATA_VAR + "/", "${" + SHARED_DATA_VAR[1:] + "}/"):
            if rel.startswith(prefix):
                from lab01_cluster_sim.book import shared_data_dir

                return shared_data_dir() / rel[len(prefix):]
        p = Path(rel)
        return p if p.is_absolute() else (self.sc.base_dir / p)

    def _shared_hint(self, rel: str) -> str:
        """Where ``$COURSE_SHARED_DATA`` pointed, for a message about a path that used it."""
        import os

        if not rel.startswith((SHARED_DATA_VAR, "${" + SHARED_DATA_VAR[1:] + "}")):
            return ""
        env = os.environ.get(SHARED_DATA_VAR[1:])
        return (f"; {SHARED_DATA_VAR} is {env}" if env else
                f"; {SHARED_DATA_VAR} is not set, so it is ../shared/data beside the clone (set it to the folder "
                "holding alibaba-gpu-2023/csv)")

    # -- KubeSchedulerConfiguration -----------------------------------------------------------------
    def _scheduler_config(self) -> None:
        docs = self.by_kind("KubeSchedulerConfiguration")
        if len(docs) > 1:
            raise _err(docs[1], (), "a scenario holds at most one KubeSchedulerConfiguration")
        if not docs:
            return
        from lab01_cluster_sim.scenario.scoring import NodeResourcesFit

        d = docs[0].data
        self.sc.percentage_of_nodes_to_score = d.get("percentageOfNodesToScore")
        args = {}
        for pc in d["profiles"][0].get("pluginConfig", []):
            args = pc.get("args", {})
        strategy = args.get("scoringStrategy", {})
        resources = tuple((r["name"], r["weight"]) for r in strategy.get("resources", [{"name": CPU, "weight": 1},
                                                                                   {"name": MEMORY, "weight": 1}]))
        for i, (rname, _) in enumerate(resources):
            if rname not in (CPU, MEMORY, GPU):
                raise _err(docs[0], ("profiles", 0, "pluginConfig", 0, "args", "scoringStrategy", "resources", i, "name"),
                           f"resource {rname!r} is not modelled; expected cpu, memory or nvidia.com/gpu")
        shape = tuple((p["utilization"], p["score"]) for p in strategy.get("requestedToCapacityRatio", {}).get("shape", []))
        kind = strategy.get("type", "LeastAllocated")
        if kind == "RequestedToCapacityRatio" and not shape:
            raise _err(docs[0], ("profiles", 0, "pluginConfig", 0, "args", "scoringStrategy"),
                       "RequestedToCapacityRatio needs requestedToCapacityRatio.shape")
        self.sc.scoring = NodeResourcesFit(kind, resources, shape)

    # -- NodePools ---------------------------------------------------------------------------------------
    def _node_pools(self) -> None:
        from lab01_cluster_sim.autoscaler.catalogue import DEFAULT_CATALOGUE
        from lab01_cluster_sim.autoscaler.nodepool import NodePool

        by_name = {t.name: t for t in DEFAULT_CATALOGUE}
        for doc in self.by_kind("NodePool"):
            spec = doc.data["spec"]
            tspec = spec["template"]["spec"]
            capacity = "on-demand"
            for i, req in enumerate(tspec["requirements"]):
                path = ("spec", "template", "spec", "requirements", i, "values")
                values = req.get("values", [])
                if req["key"] == "node.kubernetes.io/instance-type" and req["operator"] == "In":
                    unknown = [v for v in values if v not in by_name]
                    if unknown:
                        raise _err(doc, path, f"instance type {unknown[0]!r} is not in the catalogue; expected one of: "
                                   f"{', '.join(sorted(by_name))}")
                if req["key"] == "karpenter.sh/capacity-type":
                    if req["operator"] != "In" or len(values) != 1 or values[0] not in ("on-demand", "spot"):
                        raise _err(doc, path, "karpenter.sh/capacity-type: expected operator In with exactly one of "
                                   "on-demand, spot (a NodePool launching both is not modelled)")
                    capacity = values[0]
            types = node_pool_types(doc, tspec["requirements"], DEFAULT_CATALOGUE)
            limits = spec.get("limits", {})
            for r in limits:
                if r != GPU:
                    self.sc.unsupported.append(f"{_src(doc, ('spec', 'limits', r))}: limits.{r} is not modelled "
                                               "(only nvidia.com/gpu)")
            limit = (resource_value(GPU, limits[GPU], f"{_src(doc, ('spec', 'limits', GPU))}") if GPU in limits
                     else math.inf)
            dis = spec.get("disruption", {})
            policy = dis.get("consolidationPolicy", "WhenEmptyOrUnderutilized")
            after = dis.get("consolidateAfter", "0s")
            if after == "Never":
                policy, after_s = "Never", 0.0
            else:
                after_s = parse_duration(after)
            expire = tspec.get("expireAfter", "720h")
            try:
                pool = NodePool(doc.data["metadata"]["name"], types, float(limit), policy, after_s,
                                math.inf if expire == "Never" else parse_duration(expire), capacity)
            except InputError as exc:
                raise _err(doc, ("spec",), str(exc)) from None
            self.sc.node_pools.append(pool)

    # -- workload -------------------------------------------------------------------------------------------
    def _jobs(self) -> None:
        sc = self.sc
        groups: dict[tuple[str, str], Document] = {}
        for doc in self.by_kind("PodGroup"):
            meta = doc.data["metadata"]
            groups[(meta.get("namespace", "default"), meta["name"])] = doc
        members: dict[tuple[str, str], list[tuple[Document, Job]]] = {key: [] for key in groups}
        jobs: list[Job] = []
        for doc in self.by_kind("Pod", "Job"):
            job = self._job(doc)
            meta = doc.data["metadata"]
            group = meta.get("labels", {}).get(POD_GROUP_LABEL)
            if group is not None:
                key = (meta.get("namespace", "default"), group)
                if key not in groups:
                    raise _err(doc, ("metadata", "labels", POD_GROUP_LABEL),
                               f"PodGroup {group!r} is not defined in namespace {key[0]}")
                if doc.data["kind"] != "Pod":
                    raise _err(doc, ("metadata", "labels", POD_GROUP_LABEL), "only Pods join a PodGroup")
                members[key].append((doc, job))
                continue
            jobs.append(job)
        for key, doc in groups.items():
            jobs.append(self._gang(doc, members[key]))
        ids = set()
        for job in jobs:
            if job.job_id in ids:
                raise ScenarioError(f"{sc.sources[job.job_id]}: two workloads have the id {job.job_id!r}")
            ids.add(job.job_id)
        sc.jobs = sorted(jobs, key=lambda j: j.submit_time)

    def _annotation_seconds(self, doc: Document, meta_path: tuple, key: str, default: float | None) -> float:
        meta = _get(doc.data, meta_path) or {}
        text = meta.get("annotations", {}).get(key)
        path = meta_path + ("annotations", key)
        if text is None:
            if default is None:
                raise _err(doc, meta_path + ("annotations",), f"annotation {key} missing; give the run time in seconds "
                           "(or 'inf' for a service that never ends)")
            return default
        try:
            value = float(text)
        except ValueError:
            raise _err(doc, path, f"expected a number of seconds, got {text!r}") from None
        if math.isinf(value) and text.strip().lower().lstrip("+") not in ("inf", "infinity"):
            raise _err(doc, path, f"{text!r} is too large a number of seconds (write 'inf' for a service that "
                       "never ends)")
        if math.isnan(value) or value < 0 or (key == SUBMIT_TIME and math.isinf(value)):
            raise _err(doc, path, f"expected a number of seconds >= 0{'' if key == DURATION else ' (finite)'}, "
                       f"got {text!r}")
        if math.isfinite(value) and value > MAX_SECONDS:
            service = " or 'inf' for a service that never ends" if key == DURATION else ""
            raise _err(doc, path, f"expected a number of seconds from 0 to {MAX_SECONDS:,.0f} (about 31.7 years)"
                       f"{service}, got {text!r}")
        return value

    def _job(self, doc: Document) -> Job:
        d = doc.data
        kind = d["kind"]
        meta = d["metadata"]
        name = meta["name"]
        ns = meta.get("namespace", "default")
        if kind == "Pod":
            pod_path: tuple = ("spec",)
            workers = 1
            tmeta_path: tuple = ("metadata",)
        else:
            pod_path = ("spec", "template", "spec")
            spec = d["spec"]
            workers = int(spec.get("parallelism", 1))
            completions = spec.get("completions")
            if completions is not None and completions != workers:
                self.sc.unsupported.append(f"{_src(doc, ('spec', 'completions'))}: completions ({completions}) != "
                                           f"parallelism ({workers}): a Job running in waves is not modelled")
            if workers < 1:
                raise _err(doc, ("spec", "parallelism"), "expected >= 1 (a Job with parallelism 0 never runs)")
            tmeta_path = ("metadata",)
        pod = _get(d, pod_path)
        do_not_disrupt = False
        for mpath in (("metadata",), ("spec", "template", "metadata")):
            _check_course_keys(doc, mpath, _get(d, mpath) or {})
            annotations = (_get(d, mpath) or {}).get("annotations") or {}
            pick = annotations.get(HAMI_GPU_POLICY)
            if pick is not None and pick != self.sc.spec.get("simulation", {}).get("gpuSchedulerPolicy"):
                self.sc.unsupported.append(f"{_src(doc, mpath + ('annotations', HAMI_GPU_POLICY))}: a per-pod "
                                           f"{HAMI_GPU_POLICY} is not modelled; set the Scenario's "
                                           f"spec.simulation.gpuSchedulerPolicy: {pick} for every pod")
            if DO_NOT_DISRUPT in annotations and self.sc.node_pools:
                if annotations[DO_NOT_DISRUPT] == "true":   # blocks consolidation of the pod's node
                    do_not_disrupt = True
                else:
                    self.sc.unsupported.append(f"{_src(doc, mpath + ('annotations', DO_NOT_DISRUPT))}: "
                                               f"{DO_NOT_DISRUPT}: {annotations[DO_NOT_DISRUPT]!r}: only \"true\" is "
                                               "modelled (a duration ending the protection is not)")
        requests = self._pod_requests(doc, pod_path, pod)
        extended = {r: v for r, v in requests.items() if r not in KNOWN_RESOURCES}
        labels = {**meta.get("labels", {})}
        if kind == "Job":
            labels.update(_get(d, ("spec", "template", "metadata", "labels")) or {})
        duration = self._annotation_seconds(doc, tmeta_path, DURATION, None)
        submit = self._annotation_seconds(doc, tmeta_path, SUBMIT_TIME, 0.0)
        gpus = requests.get(GPU, 0)
        milli_text = meta.get("annotations", {}).get(GPU_MILLI)
        gpu_milli = MILLI_PER_GPU if gpus else 0
        if milli_text is not None:
            apath = ("metadata", "annotations", GPU_MILLI)
            if gpus != 1:
                raise _err(doc, apath, "a shared GPU share needs nvidia.com/gpu: 1")
            try:
                gpu_milli = int(milli_text)
            except ValueError:
                raise _err(doc, apath, f"expected milli-GPU 1..1000, got {milli_text!r}") from None
        priority = self.default_priority
        pcn = pod.get("priorityClassName")
        if pcn is not None:
            if pcn not in self.priority:
                raise _err(doc, pod_path + ("priorityClassName",), f"PriorityClass {pcn!r} is not defined")
            priority = self.priority[pcn]
        wpc = labels.get(WPC_LABEL)
        if wpc is not None:
            if wpc not in self.sc.kueue.priority_classes:
                raise _err(doc, ("metadata", "labels", WPC_LABEL), f"WorkloadPriorityClass {wpc!r} is not defined")
            priority = self.sc.kueue.priority_classes[wpc]
        extras: dict[str, Any] = {"namespace": ns, "kind": kind}
        if extended:
            extras["extended_requests"] = extended
        if do_not_disrupt:
            extras["do_not_disrupt"] = True
        grace = pod.get("terminationGracePeriodSeconds")
        if grace is not None:   # Kubernetes' default 30 s is not applied: without it, freed at once
            from lab01_cluster_sim.model import TERMINATION_GRACE

            if grace < 0:
                raise _err(doc, pod_path + ("terminationGracePeriodSeconds",), f"expected >= 0 s, got {grace}")
            extras[TERMINATION_GRACE] = float(grace)
        models, sched = read_pod_scheduling(doc, pod_path, pod, self.sc.unsupported, bool(self.sc.node_pools))
        extras.update(sched)
        stamp = creation_timestamp(doc)
        if stamp is not None:
            extras["creation_timestamp"] = stamp
        extras["position"] = self.position[id(doc)]
        for fld in ("topologySpreadConstraints", "nodeName", "schedulingGates"):
            if fld in pod:
                self.sc.unsupported.append(f"{_src(doc, pod_path + (fld,))}: {fld} is not modelled")
        queue = labels.get(QUEUE_KEY)
        if queue is not None:
            extras[QUEUE_KEY] = queue
            known = {(q.namespace, q.name) for q in self.sc.kueue.local_queues}
            if self.sc.kueue and (ns, queue) not in known:
                lpath = (("metadata", "labels", QUEUE_KEY) if QUEUE_KEY in meta.get("labels", {})
                         else ("spec", "template", "metadata", "labels", QUEUE_KEY))
                here = sorted(q for n, q in known if n == ns)
                raise _err(doc, lpath, f"LocalQueue {queue!r} is not defined in namespace {ns} (LocalQueues there: "
                           f"{', '.join(here) or 'none'})")
        minp = meta.get("annotations", {}).get(MIN_PARALLELISM)
        if minp is not None:
            try:
                extras["min_count"] = int(minp)
            except ValueError:
                raise _err(doc, ("metadata", "annotations", MIN_PARALLELISM), f"expected an integer, got {minp!r}") from None
            if not 1 <= extras["min_count"] < workers:
                raise _err(doc, ("metadata", "annotations", MIN_PARALLELISM),
                           f"expected 1 <= minimum < parallelism ({workers}), got {minp}")
        image = (pod.get("containers") or [{}])[0].get("image", "")
        try:
            gib = float(meta.get("annotations", {}).get(IMAGE_GIB, "1"))
        except ValueError:
            raise _err(doc, ("metadata", "annotations", IMAGE_GIB), "expected a size in GiB") from None
        job_id = name if ns == "default" else f"{ns}/{name}"
        try:
            job = Job(job_id, submit, duration, gpus, gpu_milli, requests.get(CPU, 0), -(-requests.get(MEMORY, 0) // MIB),
                      models, priority, workers, ns, extras)
        except InputError as exc:
            raise _err(doc, pod_path, str(exc)) from None
        self.sc.sources[job_id] = _src(doc)
        self.sc.pod_images[job_id] = (image, gib, labels.get("app", name))
        return job

    def _pod_requests(self, doc: Document, pod_path: tuple, pod: dict) -> dict[str, int]:
        total: dict[str, int] = {}
        init_max: dict[str, int] = {}
        for group, agg in (("containers", "sum"), ("initContainers", "max")):
            for ci, c in enumerate(pod.get(group, [])):
                res = c.get("resources", {})
                _check_extended(doc, pod_path + (group, ci, "resources"), res)
                req = dict(res.get("limits", {}))
                req.update(res.get("requests", {}))    # a request defaults to its limit
                for rname, value in req.items():
                    path = pod_path + (group, ci, "resources", "requests" if rname in res.get("requests", {}) else "limits",
                                       rname)
                    if rname not in KNOWN_RESOURCES and not (self.sc.node_pools and "/" in rname):
                        self.sc.unsupported.append(f"{_src(doc, path)}: resource {rname} is not modelled")
                        continue   # with NodePools, an extended resource no instance type offers keeps the pod Pending
                    amount = resource_value(rname, value, f"{where(doc.file, doc.pos(path))}: {object_name(doc.data)}: "
                                            f"{format_path(path)}")
                    if agg == "sum":
                        total[rname] = total.get(rname, 0) + amount
                    else:
                        init_max[rname] = max(init_max.get(rname, 0), amount)
        for rname, amount in init_max.items():
            total[rname] = max(total.get(rname, 0), amount)
        total.pop("ephemeral-storage", None)
        return total

    def _gang(self, doc: Document, members: list[tuple[Document, Job]]) -> Job:
        name = doc.data["metadata"]["name"]
        ns = doc.data["metadata"].get("namespace", "default")
        min_member = doc.data["spec"]["minMember"]
        if not members:
            raise _err(doc, ("metadata", "name"), f"no Pod carries the label {POD_GROUP_LABEL}: {name}")
        jobs = [j for _, j in members]
        first = jobs[0]
        shape = (first.gpus_per_worker, first.gpu_milli, first.cpu_milli, first.memory_mib, first.gpu_models)
        if any((j.gpus_per_worker, j.gpu_milli, j.cpu_milli, j.memory_mib, j.gpu_models) != shape for j in jobs):
            self.sc.unsupported.append(f"{_src(doc)}: pods of different shapes in one gang (a multi-role gang, e.g. a "
                                       "launcher and workers) are admitted by the admission layer but not yet placed "
                                       "by the engine")
        if min_member != len(jobs):
            self.sc.unsupported.append(f"{_src(doc, ('spec', 'minMember'))}: minMember {min_member} < {len(jobs)} pods "
                                       "(an elastic gang) is not yet placed by the engine; the current simulator "
                                       "places gangs all-or-nothing")
        for fld in ("minResources", "scheduleTimeoutSeconds"):
            if fld in doc.data["spec"]:
                self.sc.unsupported.append(f"{_src(doc, ('spec', fld))}: {fld} is not modelled")
        job_id = name if ns == "default" else f"{ns}/{name}"
        extras = dict(first.extras)
        extras["pods"] = tuple(j.job_id for j in jobs)
        extras["position"] = self.position[id(doc)]
        gang = replace(first, job_id=job_id, workers=len(jobs), submit_time=max(j.submit_time for j in jobs),
                       duration=max(j.duration for j in jobs), priority=max(j.priority for j in jobs), extras=extras)
        self.sc.sources[job_id] = _src(doc)
        self.sc.pod_images[job_id] = self.sc.pod_images[first.job_id]
        return gang


COURSE_KEYS = (DURATION, SUBMIT_TIME, GPU_MILLI, IMAGE_GIB)
"""Every ``lab01.course/`` annotation the reader knows; any other is an error."""
KNOWN_KEYS = (QUEUE_KEY, WPC_LABEL, MIN_PARALLELISM, POD_GROUP_LABEL)
"""Kueue and coscheduling labels/annotations the reader reads; a near miss is an error."""


def _check_course_keys(doc: Document, meta_path: tuple, meta: dict) -> None:
    """Refuse unknown ``lab01.course/*`` keys and near misses of the Kueue and coscheduling
    keys the reader reads (a misspelt key would otherwise be ignored)."""
    import difflib

    for where_ in ("annotations", "labels"):
        for key in meta.get(where_, {}) or {}:
            path = meta_path + (where_, key)
            if key.startswith("lab01.course/") and key not in COURSE_KEYS:
                close = difflib.get_close_matches(key, COURSE_KEYS, n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise _key_err(doc, path, f"unknown annotation ({hint}expected one of: {', '.join(COURSE_KEYS)})")
            if key not in KNOWN_KEYS and key.startswith(("kueue.x-k8s.io/", "scheduling.x-k8s.io/")):
                close = difflib.get_close_matches(key, KNOWN_KEYS, n=1, cutoff=0.85)
                if close:
                    raise _key_err(doc, path, f"unknown key; did you mean {close[0]!r}?")


def _key_err(doc: Document, path: tuple, message: str) -> ScenarioError:
    return ScenarioError(f"{where(doc.file, doc.key_pos(path))}: {object_name(doc.data)}: {format_path(path)}: {message}")


def _integer_device_count(doc: Document, path: tuple, value: Any) -> None:
    try:
        exact = parse_quantity(value, "")
    except InputError:
        return   # the quantity error itself is reported where the value is read
    if exact.denominator != 1:
        raise _err(doc, path, f"must be an integer, got {value!r} (an extended resource such as {GPU} counts whole "
                   "devices; a share of a GPU is the annotation lab01.course/gpu-milli)")


def _check_extended(doc: Document, path: tuple, res: dict) -> None:
    """Kubernetes' rules for extended resources such as nvidia.com/gpu (Kubernetes docs,
    "Schedule GPUs"; API validation of ResourceRequirements): whole numbers only; a request
    needs a limit; request and limit equal (they cannot be overcommitted)."""
    limits, requests = res.get("limits", {}) or {}, res.get("requests", {}) or {}
    for part, values in (("limits", limits), ("requests", requests)):
        if GPU in values:
            _integer_device_count(doc, path + (part, GPU), values[GPU])
    if GPU in requests and GPU not in limits:
        raise _err(doc, path + ("requests", GPU), f"a request of {GPU} needs a limit: Kubernetes refuses requests "
                   "without limits for resources that cannot be overcommitted (give limits only)")
    if GPU in requests and GPU in limits:
        try:
            same = parse_quantity(requests[GPU], "") == parse_quantity(limits[GPU], "")
        except InputError:
            return
        if not same:
            raise _err(doc, path + ("requests", GPU), f"must equal the {GPU} limit ({limits[GPU]}), got "
                       f"{requests[GPU]!r}: extended resources cannot be overcommitted")


def _walk(data: Any, path: tuple) -> Any:
    """(path, value) of every leaf under ``data``."""
    if isinstance(data, dict):
        for k, v in data.items():
            yield from _walk(v, path + (k,))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from _walk(v, path + (i,))
    else:
        yield path, data


_OWNER = re.compile(r"(ResourceFlavor|ClusterQueue|LocalQueue|Cohort)/([^:\s]+): (.*)")
_PATH_PART = re.compile(r"([A-Za-z][A-Za-z0-9]*)|\[(\d+)\]")


def _field_path(text: str) -> tuple:
    """``"spec.resourceGroups[0].flavors[1] (h100).resources: ..."`` -> the path
    ``("spec", "resourceGroups", 0, "flavors", 1, "resources")``; () when the text does not
    start with a field path."""
    head = re.sub(r" \([^)]*\)", "", text.split(": ", 1)[0])
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9]*(\.[A-Za-z][A-Za-z0-9]*|\[\d+\])*", head):
        return ()
    return tuple(int(i) if i else k for k, i in _PATH_PART.findall(head))


def _get(data: Any, path: tuple) -> Any:
    for part in path:
        if not isinstance(data, (dict, list)):
            return None
        try:
            data = data[part]
        except (KeyError, IndexError):
            return None
    return data


_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ns|us|µs|ms|s|m|h)")
_UNIT = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """A Go duration (``"30s"``, ``"1h30m"``, ``"720h"``) in seconds.

    Raises:
        InputError: not a duration.
    """
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise InputError(f"expected a duration such as 30s, 1h30m or 720h, got {text!r}")
    return sum(float(n) * _UNIT[u] for n, u in parts)


__all__ = ["KueueObjects", "MAX_FILES", "MAX_OBJECTS", "MAX_SECONDS", "Scenario", "Source", "load_scenario", "parse_duration"]
