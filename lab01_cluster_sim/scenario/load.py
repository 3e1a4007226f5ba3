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
  (coscheduling) of that name form one job of as many workers, or a multi-role gang (one job
  per shape, :class:`~lab01_cluster_sim.model.GangRole`) when their shapes differ.
- **JobSets** (``jobset.x-k8s.io/v1alpha2``): one multi-role gang, one job per replicated job
  (:mod:`.jobset`).
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

One module per group of kinds: this one reads the Scenario object, Nodes, the scheduler's
configuration and Karpenter's NodePools; :mod:`.pods` the workload (Pods, Jobs, PodGroups,
with :mod:`.podsched` for a pod's scheduling constraints), :mod:`.jobset` JobSets; :mod:`.kueue` Kueue's objects and
the priority classes; :mod:`.fields` holds the bounds, annotation keys and field readers they
share. A new kind (or a new field rule) goes in the module of its kind.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lab01_cluster_sim.admission import api as kq
from lab01_cluster_sim.admission.preemption import FairSharingStrategy
from lab01_cluster_sim.admission.quantity import CPU, GPU, MEMORY, resource_value
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.model import Job, Node
from lab01_cluster_sim.scenario.fields import (GPU_CLIQUE, GPU_PRODUCT, KNOWN_RESOURCES, MAX_FILES, MAX_OBJECTS,
                                               MAX_SECONDS, MIB, SHARED_DATA_VAR, Source, check_device_count,
                                               error_at, parse_duration, source_of, walk)
from lab01_cluster_sim.scenario.coverage import refusals
from lab01_cluster_sim.scenario.jobset import JobSetKinds
from lab01_cluster_sim.scenario.kueue import KueueKinds
from lab01_cluster_sim.scenario.podsched import node_pool_types, read_taint
from lab01_cluster_sim.scenario.pods import PodKinds
from lab01_cluster_sim.scenario.validate import object_name, validate_document
from lab01_cluster_sim.scenario.yamlio import (MAX_SCENARIO_BYTES, Document, ScenarioError, format_path, iter_files,
                                               load_documents, read_text, where)

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
        scheduler_weights: kube-scheduler's Score weight per modelled plugin (the default
            profile's, or the KubeSchedulerConfiguration's).
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
    scheduler_weights: dict[str, int] = field(default_factory=lambda: {"TaintToleration": 3, "NodeAffinity": 2,
                                                                       "NodeResourcesFit": 1})
    percentage_of_nodes_to_score: int | None = None
    pod_images: dict[str, tuple[str, float, str]] = field(default_factory=dict)
    objects: dict[str, int] = field(default_factory=dict)
    unsupported: list[str] = field(default_factory=list)
    sources: dict[str, Source] = field(default_factory=dict)
    empty_files: list[str] = field(default_factory=list)

    @property
    def base_dir(self) -> Path:
        return self.path if self.path.is_dir() else self.path.parent


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
    for doc in docs:   # every field of a core kind the simulator does not model (scenario.coverage)
        sc.unsupported.extend(refusals(doc))
    return sc


class _Builder(KueueKinds, PodKinds, JobSetKinds):
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
            raise error_at(scenarios[1], (), "a scenario holds at most one Scenario object")
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
            raise error_at(doc, ("spec", "workload"), "give either trace or generator, not both")
        self.sc.sources["Scenario"] = source_of(doc)
        self._scenario_doc = doc
        for path, value in walk(spec, ("spec",)):
            if isinstance(value, float) and not math.isfinite(value):
                raise error_at(doc, path, f"expected a finite number, got {value}")
        from lab01_cluster_sim.registry import check_policy_name

        names = [(("spec", "simulation", "policy"), sim["policy"])] if "policy" in sim else []
        names += [(("spec", "simulation", "comparePolicies", i), n) for i, n in enumerate(sim.get("comparePolicies", []))]
        for path, name in names:
            try:
                check_policy_name(name)
            except InputError as exc:
                raise error_at(doc, path, str(exc)) from None
        if "trace" in workload:
            self._trace(doc, dict(workload["trace"]))
        csv = spec.get("nodes", {}).get("csv")
        if csv is not None and not self._resolve(csv).is_file():
            raise error_at(doc, ("spec", "nodes", "csv"), f"{self._resolve(csv)}: not a regular file (an openb node-list CSV "
                       "is expected, relative to the scenario)")

    def _trace(self, doc: Document, trace: dict) -> None:
        """Check the trace folder and pod list now (``run --check`` must catch what ``run``
        would fail on) and keep both as resolved paths in ``spec``."""
        from lab01_cluster_sim.workloads.openb import DEFAULT_POD_LIST

        base = ("spec", "workload", "trace")
        folder = self._resolve(trace["path"])
        if not folder.is_dir():
            what = "not a folder" if folder.exists() else "does not exist"
            raise error_at(doc, base + ("path",), f"{folder}: {what} (the trace folder holds "
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
            raise error_at(doc, base + ("podList",), f"no pod list {name!r} in {folder} (a name such as 'default' or "
                       f"'gpushare40', or a CSV file in that folder); found: {', '.join(known) or 'none'}")
        from lab01_cluster_sim.workloads.openb import DEFAULT_NODE_LIST, check_file

        if not (folder / DEFAULT_NODE_LIST).exists():
            raise error_at(doc, base + ("path",), f"{folder}: no {DEFAULT_NODE_LIST} there (the trace folder holds the "
                       "node list and the pod lists; python -m lab01_cluster_sim fetch-trace DIR gets them)")
        for path, file in ((base + ("podList",) if "podList" in trace else base + ("path",), found),
                           (base + ("path",), folder / DEFAULT_NODE_LIST)):
            try:   # the loaders' bounds (a regular file of at most 32 MiB), checked now for run --check
                check_file(file)
            except InputError as exc:
                raise error_at(doc, path, str(exc)) from None
        self.sc.spec["workload"] = {**self.sc.spec.get("workload", {}),
                                    "trace": {**trace, "path": str(folder), "podList": str(found)}}

    # -- priorities --------------------------------------------------------------------------------
    def _nodes(self) -> None:
        sc = self.sc
        node_docs = self.by_kind("Node")
        csv = sc.spec.get("nodes", {}).get("csv")
        if node_docs and csv:
            raise error_at(self._scenario_doc, ("spec", "nodes"), "nodes come either from Node objects or from a CSV, not both")
        if csv:
            from lab01_cluster_sim.studies.timed import MAX_NODES
            from lab01_cluster_sim.workloads.openb import load_nodes

            try:   # bounded as the loaders are (32 MiB) and to simulate --nodes's 100,000 nodes
                sc.nodes = load_nodes(self._resolve(csv), max_nodes=MAX_NODES)
            except InputError as exc:
                raise error_at(self._scenario_doc, ("spec", "nodes", "csv"), str(exc)) from None
            return
        cliques: dict[str, int] = {}
        for doc in node_docs:
            d = doc.data
            status = d.get("status", {})
            res = status.get("allocatable") or status.get("capacity")
            base = ("status", "allocatable" if status.get("allocatable") else "capacity")
            if not res or CPU not in res or MEMORY not in res:
                raise error_at(doc, ("status",), "status.allocatable (or status.capacity) must give cpu and memory")
            name = d["metadata"]["name"]
            labels = dict(d["metadata"].get("labels") or {})

            def q(r, res=res, base=base, doc=doc):
                return resource_value(r, res[r], f"{where(doc.file, doc.pos(base + (r,)))}: {object_name(doc.data)}: "
                                      f"{format_path(base + (r,))}")
            if GPU in res:
                check_device_count(doc, base + (GPU,), res[GPU])
            gpus = q(GPU) if GPU in res else 0
            model = labels.get(GPU_PRODUCT, "GPU" if gpus else "")
            island = -1
            if GPU_CLIQUE in labels:   # GPU Feature Discovery's NVLink domain (clique) label
                island = cliques.setdefault(labels[GPU_CLIQUE], len(cliques))
            taints = [read_taint(doc, ("spec", "taints", i), t)
                      for i, t in enumerate((d.get("spec") or {}).get("taints") or [])]
            try:
                sc.nodes.append(Node(name, model if gpus else "", gpus, q(CPU), q(MEMORY) // MIB, labels=labels,
                                     nvlink_island=island, taints=tuple(taints)))
            except InputError as exc:
                raise error_at(doc, base, str(exc)) from None
            sc.sources[f"Node/{name}"] = source_of(doc)
            other = sorted(set(res) - set(KNOWN_RESOURCES) - {"pods"})
            if other:
                sc.unsupported.append(f"{source_of(doc)}: resources {', '.join(other)} are not modelled")

    def _resolve(self, rel: str) -> Path:
        """A path of the Scenario object: ``$COURSE_SHARED_DATA/...`` (or ``${COURSE_SHARED_DATA}/...``)
        is under the course's shared data folder (:func:`lab01_cluster_sim.shared_data.shared_data_dir`:
        that environment variable, else ``../shared/data`` beside the clone, as the README's
        "Real data" says); an absolute path is used as is; any other is relative to the scenario."""
        for prefix in (SHARED_DATA_VAR + "/", "${" + SHARED_DATA_VAR[1:] + "}/"):
            if rel.startswith(prefix):
                from lab01_cluster_sim.shared_data import shared_data_dir

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
            raise error_at(docs[1], (), "a scenario holds at most one KubeSchedulerConfiguration")
        if not docs:
            return
        from lab01_cluster_sim.kubescheduler.noderesources import NodeResourcesFit

        d = docs[0].data
        self.sc.percentage_of_nodes_to_score = d.get("percentageOfNodesToScore")
        profile = d["profiles"][0]
        weights = dict(self.sc.scheduler_weights)
        for point in ("multiPoint", "score"):   # a score weight overrides a multiPoint one (kube-scheduler's merge)
            for p in profile.get("plugins", {}).get(point, {}).get("enabled", []):
                if "weight" in p:
                    weights[p["name"]] = p["weight"]
        self.sc.scheduler_weights = weights
        args, ci = {}, 0
        for i, pc in enumerate(profile.get("pluginConfig", [])):
            if pc["name"] == "NodeResourcesFit":
                args, ci = pc.get("args", {}), i
        strategy = args.get("scoringStrategy", {})
        base = ("profiles", 0, "pluginConfig", ci, "args", "scoringStrategy")
        resources = tuple((r["name"], r["weight"]) for r in strategy.get("resources", [{"name": CPU, "weight": 1},
                                                                                   {"name": MEMORY, "weight": 1}]))
        shape = tuple((p["utilization"], p["score"]) for p in strategy.get("requestedToCapacityRatio", {}).get("shape", []))
        kind = strategy.get("type", "LeastAllocated")
        if kind == "RequestedToCapacityRatio" and not shape:
            raise error_at(docs[0], base, "RequestedToCapacityRatio needs requestedToCapacityRatio.shape")
        try:
            self.sc.scoring = NodeResourcesFit(kind, resources, shape, weight=weights["NodeResourcesFit"])
        except InputError as exc:
            raise error_at(docs[0], base, str(exc)) from None

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
                        raise error_at(doc, path, f"instance type {unknown[0]!r} is not in the catalogue; expected one of: "
                                   f"{', '.join(sorted(by_name))}")
                if req["key"] == "karpenter.sh/capacity-type":
                    if req["operator"] != "In" or len(values) != 1 or values[0] not in ("on-demand", "spot"):
                        raise error_at(doc, path, "karpenter.sh/capacity-type: expected operator In with exactly one of "
                                   "on-demand, spot (a NodePool launching both is not modelled)")
                    capacity = values[0]
            types = node_pool_types(doc, tspec["requirements"], DEFAULT_CATALOGUE)
            limits = spec.get("limits", {})
            for r in limits:
                if r != GPU:
                    self.sc.unsupported.append(f"{source_of(doc, ('spec', 'limits', r))}: limits.{r} is not modelled "
                                               "(only nvidia.com/gpu)")
            limit = (resource_value(GPU, limits[GPU], f"{source_of(doc, ('spec', 'limits', GPU))}") if GPU in limits
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
                raise error_at(doc, ("spec",), str(exc)) from None
            self.sc.node_pools.append(pool)

    # -- workload -------------------------------------------------------------------------------------------


__all__ = ["KueueObjects", "MAX_FILES", "MAX_OBJECTS", "MAX_SECONDS", "Scenario", "Source", "load_scenario",
           "parse_duration"]
