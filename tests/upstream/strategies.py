"""Hypothesis strategies: random valid cases over the objects the scenario loader reads.

Every case is a dict of real Kubernetes / Kueue / Karpenter objects (the shapes
``kubectl get -o json`` prints), valid for the loader and for the upstream Go types alike,
plus the few facts that are not objects (which workloads are admitted where, and since
when). Quantities are in units both sides represent exactly: CPU in milli-cores, memory in
MiB, whole GPUs (a sub-MiB memory request is rounded up to a MiB by the loader; the
generators do not probe that rounding).
"""

from __future__ import annotations

from hypothesis import strategies as st

GPU = "nvidia.com/gpu"
GPU_PRODUCT = "nvidia.com/gpu.product"
MODELS = ("A100", "H100", "L4")
DURATION = {"lab01.course/duration": "100"}


def node(name: str, cpu_milli: int, mem_mib: int, gpus: int, labels: dict | None = None,
         taints: list | None = None) -> dict:
    """A v1 Node with that allocatable (pods: 110, as a kubelet reports by default)."""
    alloc = {"cpu": f"{cpu_milli}m", "memory": f"{mem_mib}Mi", "pods": "110"}
    if gpus:
        alloc[GPU] = str(gpus)
    obj = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": dict(labels or {})},
           "status": {"allocatable": alloc, "capacity": dict(alloc)}}
    if taints:
        obj["spec"] = {"taints": taints}
    return obj


def pod(name: str, cpu_milli: int, mem_mib: int, gpus: int, *, labels: dict | None = None,
        node_selector: dict | None = None, tolerations: list | None = None, affinity: dict | None = None,
        priority_class: str | None = None, annotations: dict | None = None) -> dict:
    """A v1 Pod with one container asking for that much (a zero request is left out)."""
    requests: dict[str, str] = {}
    limits: dict[str, str] = {}
    if cpu_milli:
        requests["cpu"] = f"{cpu_milli}m"
    if mem_mib:
        requests["memory"] = f"{mem_mib}Mi"
    if gpus:
        requests[GPU] = limits[GPU] = str(gpus)
    resources = {"requests": requests}
    if limits:
        resources["limits"] = limits
    spec: dict = {"containers": [{"name": "main", "image": "busybox", "resources": resources}]}
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if tolerations:
        spec["tolerations"] = tolerations
    if affinity:
        spec["affinity"] = affinity
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": dict(labels or {}),
                         "annotations": {**DURATION, **(annotations or {})}},
            "spec": spec}


# -- kube-scheduler ---------------------------------------------------------------------------------
cpu_cap = st.sampled_from([1000, 2000, 4000, 8000, 16000, 32000, 64000, 96000, 128000]) | st.integers(100, 200_000)
mem_cap = st.sampled_from([1024, 4096, 16384, 65536, 262144, 1048576]) | st.integers(64, 2_000_000)
gpu_cap = st.sampled_from([0, 0, 1, 2, 4, 8])


@st.composite
def scoring_strategy(draw) -> dict:
    """A NodeResourcesFit ``scoringStrategy`` (kube-scheduler v1 config): type, 1 to 3
    resources with weights 1..100, and for RequestedToCapacityRatio a shape of 1 to 5
    points (utilization increasing in 0..100, score 0..10)."""
    kind = draw(st.sampled_from(["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"]))
    names = draw(st.lists(st.sampled_from(["cpu", "memory", GPU]), min_size=1, max_size=3, unique=True))
    out = {"type": kind, "resources": [{"name": n, "weight": draw(st.integers(1, 100))} for n in names]}
    if kind == "RequestedToCapacityRatio":
        utils = sorted(draw(st.lists(st.integers(0, 100), min_size=1, max_size=5, unique=True)))
        out["requestedToCapacityRatio"] = {"shape": [{"utilization": u, "score": draw(st.integers(0, 10))}
                                                     for u in utils]}
    return out


@st.composite
def existing_pod(draw, name: str, cpu: int, mem: int, gpus: int) -> dict:
    """A pod already bound to a node with that much left (cpu milli, memory MiB, GPUs), asking
    at least 1m CPU and 1 MiB and at most what is left."""
    c = draw(st.integers(1, cpu))
    m = draw(st.integers(1, mem))
    g = draw(st.integers(0, gpus))
    return pod(name, c, m, g)


@st.composite
def scheduler_case(draw, *, with_selector: bool = False, with_taints: bool = False) -> dict:
    """Nodes (1 to 6) with pods already bound, an incoming pod and a scoring strategy.

    ``with_selector``: nodes carry ``nvidia.com/gpu.product`` labels and the pod may select
    one. ``with_taints``: nodes may carry taints and the pod tolerations (for
    TaintToleration)."""
    n = draw(st.integers(1, 6))
    nodes = []
    pid = 0
    for i in range(n):
        cpu, mem, gpus = draw(cpu_cap), draw(mem_cap), draw(gpu_cap)
        labels = {}
        if with_selector and gpus and draw(st.booleans()):
            labels[GPU_PRODUCT] = draw(st.sampled_from(MODELS))
        if with_selector and gpus:
            labels[GPU_COUNT] = str(gpus)
        if with_selector and draw(st.booleans()):
            labels[ZONE] = draw(st.sampled_from(ZONES))
        taints = draw(st.lists(taint(), max_size=2, unique_by=lambda t: (t["key"], t["effect"]))) if with_taints else []
        pods = []
        left = [cpu, mem, gpus]
        for _ in range(draw(st.integers(0, 3))):
            if left[0] < 1 or left[1] < 1:
                break
            p = draw(existing_pod(f"bound-{pid}", left[0], left[1], left[2]))
            pid += 1
            pods.append(p)
            r = p["spec"]["containers"][0]["resources"]["requests"]
            left[0] -= int(r["cpu"][:-1])
            left[1] -= int(r["memory"][:-2])
            left[2] -= int(r.get(GPU, "0"))
        nodes.append({"node": node(f"node-{i}", cpu, mem, gpus, labels, taints), "pods": pods})
    selector = {}
    gpus = draw(st.sampled_from([0, 0, 1, 1, 2, 4, 8, 9]))
    if with_selector and draw(st.booleans()):
        selector[GPU_PRODUCT] = draw(st.sampled_from(MODELS + ("GPU",)))
    tolerations = draw(st.lists(toleration(), max_size=2)) if with_taints else []
    aff = draw(st.none() | node_affinity(n)) if with_selector else None
    incoming = pod("incoming", draw(st.integers(1, 140_000)), draw(st.integers(1, 2_100_000)), gpus,
                   node_selector=selector, tolerations=tolerations, affinity=aff)
    return {"kind": "scheduler", "scoringStrategy": draw(scoring_strategy()), "pod": incoming, "nodes": nodes}


GPU_COUNT = "nvidia.com/gpu.count"
ZONE = "topology.kubernetes.io/zone"
ZONES = ("z0", "z1")


@st.composite
def node_selector_term(draw, n: int) -> dict:
    """A ``nodeSelectorTerm``: 1 or 2 label requirements (every operator, on the GPU model, the
    zone or the GPU count) and sometimes a ``matchFields`` requirement on one of the ``n``
    nodes' names."""
    exprs = []
    for _ in range(draw(st.integers(1, 2))):
        op = draw(st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]))
        if op in ("Gt", "Lt"):
            exprs.append({"key": GPU_COUNT, "operator": op, "values": [str(draw(st.sampled_from([0, 1, 2, 4, 8])))]})
            continue
        key = draw(st.sampled_from([GPU_PRODUCT, ZONE]))
        e: dict = {"key": key, "operator": op}
        if op in ("In", "NotIn"):
            pool = MODELS if key == GPU_PRODUCT else ZONES
            e["values"] = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=2, unique=True))
        exprs.append(e)
    term: dict = {"matchExpressions": exprs}
    if draw(st.integers(0, 3)) == 0:
        term["matchFields"] = [{"key": "metadata.name", "operator": draw(st.sampled_from(["In", "NotIn"])),
                                "values": [f"node-{draw(st.integers(0, n - 1))}"]}]
    return term


@st.composite
def node_affinity(draw, n: int) -> dict:
    """``affinity.nodeAffinity`` with required terms (1 or 2, ORed) and/or preferred terms
    (weights 1..100)."""
    out: dict = {}
    if draw(st.booleans()):
        out["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": draw(st.lists(node_selector_term(n), min_size=1, max_size=2))}
    if draw(st.booleans()) or not out:
        out["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": draw(st.integers(1, 100)), "preference": draw(node_selector_term(n))}
            for _ in range(draw(st.integers(1, 3)))]
    return {"nodeAffinity": out}


TAINT_KEYS = (GPU, "dedicated", "example.com/spot")
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


@st.composite
def taint(draw) -> dict:
    """A node taint (key from a small set so tolerations often meet it)."""
    t = {"key": draw(st.sampled_from(TAINT_KEYS)), "effect": draw(st.sampled_from(EFFECTS))}
    value = draw(st.sampled_from(["", "present", "gpu"]))
    if value:
        t["value"] = value
    return t


@st.composite
def toleration(draw) -> dict:
    """A pod toleration: Exists or Equal, on a key of :data:`TAINT_KEYS` or on every key."""
    op = draw(st.sampled_from(["Equal", "Exists"]))
    t: dict = {"operator": op}
    if op == "Equal" or draw(st.booleans()):
        t["key"] = draw(st.sampled_from(TAINT_KEYS))
    if op == "Equal":
        t["value"] = draw(st.sampled_from(["", "present", "gpu"]))
    effect = draw(st.sampled_from(("",) + EFFECTS))
    if effect:
        t["effect"] = effect
    return t


# -- Kueue ------------------------------------------------------------------------------------------
KUEUE = "kueue.x-k8s.io/v1beta2"
RESOURCES = ("cpu", "memory", GPU)
NOW = 1_000_000.0
"""The oracle's clock, s (admitted workloads reserved quota at earlier times)."""


def _rfc3339(seconds: float) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(seconds, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _qty(res: str, amount: int) -> str:
    """Kueue quantity text for an amount in the generators' units (cpu milli, memory MiB)."""
    return {"cpu": f"{amount}m", "memory": f"{amount}Mi"}.get(res, str(amount))


def _kueue_units(res: str, amount: int) -> int:
    """The amount in the simulator's (Kueue's) integer units: cpu milli, memory bytes, count."""
    return amount * 2**20 if res == "memory" else amount


@st.composite
def quota(draw, res: str, with_limits: bool, cohort: bool) -> dict:
    """One ``resources[]`` entry of a flavor: a nominal quota of 0 to 16 steps (1 CPU, 4 GiB,
    1 GPU), and, for a ClusterQueue in a cohort, maybe a borrowingLimit and a lendingLimit
    (at most the nominal quota, as Kueue's validation requires)."""
    nominal = draw(st.integers(0, 16)) * {"cpu": 1000, "memory": 4096, GPU: 1}[res]
    q = {"name": res, "nominalQuota": _qty(res, nominal)}
    if with_limits and cohort:
        if draw(st.booleans()):
            q["borrowingLimit"] = _qty(res, draw(st.integers(0, 8)) * {"cpu": 1000, "memory": 4096, GPU: 1}[res])
        if draw(st.booleans()):
            q["lendingLimit"] = _qty(res, draw(st.integers(0, nominal // {"cpu": 1000, "memory": 4096, GPU: 1}[res]))
                                     * {"cpu": 1000, "memory": 4096, GPU: 1}[res])
    return q


@st.composite
def kueue_case(draw, *, fair_sharing: bool | None = None, flavor_labels: bool = False, taints: bool = False,
               pod_sets: bool = False, preference: bool = False) -> dict:
    """ResourceFlavors, ClusterQueues (one to four, in zero to two cohorts, with optional
    parent Cohort objects), admitted workloads with their flavor assignment, and one pending
    head workload in one ClusterQueue: everything Kueue's scheduler reads to nominate it.

    ``flavor_labels``: every flavor carries ``nodeLabels`` on the same key (Kueue v0.17.0
    restricts a pod set's selector to the keys of the whole resource group, main to the keys
    of each flavor: the same when every flavor has the same keys) and the pods may select a
    GPU model. ``taints``: the same labels, and flavors with ``nodeTaints`` (every effect)
    and ``tolerations``, pods with tolerations. ``pod_sets``: the head has one to three pod
    sets with their own count, requests, minCount, nodeSelector and tolerations.
    ``preference``: ClusterQueues with ``whenCanBorrow`` and ``whenCanPreempt`` both
    TryNextFlavor and a ``preference`` (or none).

    The admitted workloads are stated twice, consistently: as Jobs for the loader, with
    their quota usage for the simulator's controller, and as admitted Workload objects
    (``status.admission``, a ``QuotaReserved`` condition) for Kueue's cache. A multi-podSet
    head is one Job per pod set for the loader (``headPodSets``: pod set name -> Job name;
    :func:`upstream.sim_adapter.sim_kueue` joins them) and one Workload for Kueue."""
    nflv = draw(st.integers(1, 3))
    flavors = [f"f{i}" for i in range(nflv)]
    covered = draw(st.lists(st.sampled_from(RESOURCES), min_size=1, max_size=3, unique=True))
    covered = [r for r in RESOURCES if r in covered]
    ncq = draw(st.integers(1, 4))
    cohort_names = draw(st.lists(st.sampled_from(["co-a", "co-b"]), min_size=ncq, max_size=ncq))
    if draw(st.booleans()):
        cohort_names = [None if draw(st.integers(0, 4)) == 0 else c for c in cohort_names]
    fs = draw(st.booleans()) if fair_sharing is None else fair_sharing
    objects: list[dict] = []
    flavor_labels_of = {}
    labelled = flavor_labels or taints
    all_taints: list[dict] = []
    for f in flavors:
        spec: dict = {}
        if labelled:
            flavor_labels_of[f] = draw(st.sampled_from(MODELS))
            spec["nodeLabels"] = {GPU_PRODUCT: flavor_labels_of[f]}
        if taints and draw(st.booleans()):
            node_taints = draw(st.lists(taint(), min_size=1, max_size=2, unique_by=lambda t: (t["key"], t["effect"])))
            spec["nodeTaints"] = node_taints
            all_taints.extend(node_taints)
        if taints and draw(st.integers(0, 2)) == 0:   # tolerations Kueue adds to the pods it admits
            own = spec.get("nodeTaints", [])
            t = own[0] if own and draw(st.booleans()) else None
            spec["tolerations"] = [{"key": t["key"], "operator": "Exists", "effect": t["effect"]} if t
                                   else draw(toleration())]
        objects.append({"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": f}, "spec": spec})
    cqs = []
    for i in range(ncq):
        name = f"cq-{i}"
        cohort = cohort_names[i]
        cq_flavors = draw(st.lists(st.sampled_from(flavors), min_size=1, max_size=nflv, unique=True))
        rg = {"coveredResources": covered,
              "flavors": [{"name": f, "resources": [draw(quota(r, True, cohort is not None)) for r in covered]}
                          for f in cq_flavors]}
        within = draw(st.sampled_from(["Never", "LowerPriority", "LowerOrNewerEqualPriority"]))
        reclaim = draw(st.sampled_from(["Never", "LowerPriority", "Any"]))
        preemption: dict = {"withinClusterQueue": within, "reclaimWithinCohort": reclaim}
        if reclaim != "Never" and draw(st.booleans()):
            bwc: dict = {"policy": "LowerPriority"}
            if draw(st.booleans()):
                bwc["maxPriorityThreshold"] = draw(st.integers(0, 3))
            preemption["borrowWithinCohort"] = bwc
        if preference:   # the CRD allows preference only when both policies are TryNextFlavor
            fungibility = {"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor"}
            pref = draw(st.sampled_from([None, "BorrowingOverPreemption", "PreemptionOverBorrowing",
                                         "PreemptionOverBorrowing"]))
            if pref is not None:
                fungibility["preference"] = pref
        else:
            fungibility = {"whenCanBorrow": draw(st.sampled_from(["MayStopSearch", "TryNextFlavor"])),
                           "whenCanPreempt": draw(st.sampled_from(["MayStopSearch", "TryNextFlavor"]))}
        spec = {"resourceGroups": [rg], "preemption": preemption, "flavorFungibility": fungibility,
                "namespaceSelector": {}}
        if cohort is not None:
            spec["cohortName"] = cohort
        if fs and draw(st.booleans()):
            spec["fairSharing"] = {"weight": str(draw(st.sampled_from([0, 1, 1, 2, 3])))}
        cqs.append({"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec})
        objects.append({"apiVersion": KUEUE, "kind": "LocalQueue",
                        "metadata": {"name": f"lq-{i}", "namespace": "default"}, "spec": {"clusterQueue": name}})
    objects.extend(cqs)
    cohorts = []
    used_cohorts = sorted({c for c in cohort_names if c})
    if used_cohorts and draw(st.booleans()):   # explicit Cohorts under one root with quota of its own
        for c in used_cohorts:
            spec = {"parentName": "root"}
            if draw(st.booleans()):
                spec["resourceGroups"] = [{"coveredResources": covered, "flavors": [
                    {"name": flavors[0], "resources": [draw(quota(r, False, True)) for r in covered]}]}]
            cohorts.append({"apiVersion": KUEUE, "kind": "Cohort", "metadata": {"name": c}, "spec": spec})
        cohorts.append({"apiVersion": KUEUE, "kind": "Cohort", "metadata": {"name": "root"}, "spec": {}})
    objects.extend(cohorts)
    for p in range(4):
        objects.append({"apiVersion": KUEUE, "kind": "WorkloadPriorityClass", "metadata": {"name": f"p{p}"},
                        "value": p})
    if fs:
        objects.append({"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
                        "fairSharing": {"preemptionStrategies": draw(st.sampled_from([
                            ["LessThanOrEqualToFinalShare", "LessThanInitialShare"], ["LessThanOrEqualToFinalShare"],
                            ["LessThanInitialShare"]]))}})
    # admitted workloads: each in a CQ, on flavors of that CQ, at an earlier time
    admitted = []
    go_admitted = []
    head_cq = draw(st.integers(0, ncq - 1))
    for w in range(draw(st.integers(0, 8))):
        # half of them in the head's queue, so that preemption within it has candidates
        i = head_cq if draw(st.booleans()) else draw(st.integers(0, ncq - 1))
        cq = cqs[i]
        flavor = draw(st.sampled_from([f["name"] for f in cq["spec"]["resourceGroups"][0]["flavors"]]))
        count = draw(st.integers(1, 3))
        req = _requests(draw, covered)
        prio = draw(st.integers(0, 3))
        t = NOW - draw(st.integers(1, 1000))
        name = f"adm-{w}"
        objects.append(_job(name, f"lq-{i}", count, req, prio))
        usage = [(flavor, r, _kueue_units(r, v) * count) for r, v in req.items() if v]
        admitted.append({"name": name, "clusterQueue": cq["metadata"]["name"], "usage": usage, "time": t})
        go_admitted.append(_workload(name, f"lq-{i}", count, req, prio, t, cq["metadata"]["name"], flavor))
    i = head_cq
    prio = draw(st.sampled_from([0, 1, 2, 3, 3, 3]))   # often above the admitted ones
    names = (draw(st.sampled_from([["main"], ["launcher", "worker"], ["worker", "ps"], ["launcher", "worker", "ps"]]))
             if pod_sets else ["main"])
    head_sets = []
    for ps_name in names:
        count = draw(st.integers(1, 4 if len(names) == 1 else 2))
        min_count = draw(st.integers(1, count - 1)) if count > 1 and draw(st.integers(0, 3)) == 0 else None
        selector = {}
        if labelled and draw(st.booleans()):
            selector[GPU_PRODUCT] = draw(st.sampled_from(MODELS))
        tols = []
        if taints:   # often one that tolerates a taint of some flavor exactly, as GPU pods do
            if all_taints and draw(st.booleans()):
                t = draw(st.sampled_from(all_taints))
                tols.append({"key": t["key"], "operator": "Equal", "value": t.get("value", ""), "effect": t["effect"]})
            tols.extend(draw(st.lists(toleration(), max_size=1)))
        head_sets.append(_pod_set(ps_name, count, _requests(draw, covered), min_count, selector, tols))
    head_jobs = {}
    for ps in head_sets:
        job_name = "head" if not pod_sets else f"head-{ps['name']}"
        head_jobs[ps["name"]] = job_name
        objects.append(_job(job_name, f"lq-{i}", ps["count"], ps["requests"], prio, ps["minCount"], ps["selector"],
                            ps["tolerations"]))
    head = _workload("head", f"lq-{i}", 0, {}, prio, NOW, None, None, pod_sets=head_sets)
    go = {"kind": "kueue", "now": _rfc3339(NOW),
          "fairSharing": ({"preemptionStrategies": next(o for o in objects if o["kind"] == "Configuration")
                           ["fairSharing"]["preemptionStrategies"]} if fs else None),
          "resourceFlavors": [o for o in objects if o["kind"] == "ResourceFlavor"],
          "clusterQueues": cqs, "cohorts": cohorts, "admitted": go_admitted, "workload": head,
          "clusterQueue": cqs[i]["metadata"]["name"]}
    return {"go": go, "objects": objects, "admittedAt": admitted, "head": "head",
            "headPodSets": head_jobs if pod_sets else None, "clusterQueue": cqs[i]["metadata"]["name"]}


@st.composite
def kueue_cycle_case(draw) -> dict:
    """A :func:`kueue_case` (fair sharing or not, flavors with labels and taints) whose head is
    the first of one to five pending workloads spread over the ClusterQueues, each with one
    or two pod sets, a priority and a ``metadata.creationTimestamp``: what one Kueue
    scheduling cycle takes the heads of. Within a ClusterQueue timestamps are often equal
    (queue order then falls to the UID, which the generator gives in input order: the
    simulator's input position stands for it); across ClusterQueues they always differ
    (Kueue orders the heads of different queues with a sort that has no tie-break after the
    timestamp, so equal ones would have no defined order).

    ``pending``: the Workload objects in input order; ``pendingJobs``: workload name -> pod set
    name -> Job name (the loader's objects)."""
    case = draw(kueue_case(taints=draw(st.booleans()), pod_sets=True))
    go = case["go"]
    cqs = [c["metadata"]["name"] for c in go["clusterQueues"]]
    head_cq = cqs.index(go["clusterQueue"])
    head = go.pop("workload")
    del go["clusterQueue"]
    covered = go["clusterQueues"][0]["spec"]["resourceGroups"][0]["coveredResources"]

    def stamp(cq_index: int, step: int) -> float:
        return NOW - 10 * step - cq_index

    pending = [head]
    jobs = {"head": dict(case["headPodSets"] or {"main": "head"})}
    _stamp(head, [o for o in case["objects"] if o["kind"] == "Job" and o["metadata"]["name"] in jobs["head"].values()],
           stamp(head_cq, 0))
    for k in range(1, draw(st.integers(1, 5))):
        name = f"w{k}"
        i = head_cq if draw(st.booleans()) else draw(st.integers(0, len(cqs) - 1))
        prio = draw(st.sampled_from([head["spec"]["priority"], 0, 1, 2, 3]))
        names = draw(st.sampled_from([["main"], ["main"], ["launcher", "worker"]]))
        sets = [_pod_set(n, draw(st.integers(1, 2)), _requests(draw, covered)) for n in names]
        jobs[name] = {}
        objs = []
        for ps in sets:
            job_name = name if names == ["main"] else f"{name}-{ps['name']}"
            jobs[name][ps["name"]] = job_name
            objs.append(_job(job_name, f"lq-{i}", ps["count"], ps["requests"], prio))
        wl = _workload(name, f"lq-{i}", 0, {}, prio, NOW, None, None, pod_sets=sets)
        _stamp(wl, objs, stamp(i, draw(st.integers(0, 1))))
        case["objects"].extend(objs)
        pending.append(wl)
    for pos, wl in enumerate(pending):   # UIDs in input order (Kueue's last queue-order tie-break)
        wl["metadata"]["uid"] = f"p{pos:02d}-{wl['metadata']['name']}"
    go["kind"] = "kueue-cycle"
    go["pending"] = pending
    go["localQueues"] = [o for o in case["objects"] if o["kind"] == "LocalQueue"]
    case.update(pendingJobs=jobs, head=None, headPodSets=None, clusterQueue=None)
    return case


@st.composite
def kueue_reservation_case(draw) -> dict:
    """A cycle case shaped for ``reserveCapacityForUnreclaimablePreempt``: two ClusterQueues of
    one cohort over one GPU flavor, cq-1 borrowing part of cq-0's nominal quota with admitted
    workloads of random priority; cq-0's head asks for at most its nominal quota (so it needs
    preemption when cq-1 borrows), cq-1's head asks for more. With ``reclaimWithinCohort``
    Never (or LowerPriority without lower-priority candidates) cq-0's head finds no
    candidates and Kueue keeps its quota from cq-1's head for the rest of the cycle; with
    Any it does not. Same shape as :func:`kueue_cycle_case`."""
    n0 = draw(st.integers(2, 8))
    n1 = draw(st.integers(0, 3))
    objects: list[dict] = [{"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": "f0"}, "spec": {}}]
    cqs = []
    for i, nominal in enumerate((n0, n1)):
        q: dict = {"name": GPU, "nominalQuota": str(nominal)}
        if i == 1 and draw(st.booleans()):
            q["borrowingLimit"] = str(draw(st.integers(0, n0)))
        reclaim = draw(st.sampled_from(["Never", "LowerPriority", "LowerPriority", "Any"]))
        within = draw(st.sampled_from(["Never", "LowerPriority"]))
        rg = {"coveredResources": [GPU], "flavors": [{"name": "f0", "resources": [q]}]}
        cqs.append({"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": f"cq-{i}"},
                    "spec": {"resourceGroups": [rg], "cohortName": "co-a", "namespaceSelector": {},
                             "preemption": {"withinClusterQueue": within, "reclaimWithinCohort": reclaim},
                             "flavorFungibility": {"whenCanBorrow": "MayStopSearch",
                                                   "whenCanPreempt": "TryNextFlavor"}}})
        objects.append({"apiVersion": KUEUE, "kind": "LocalQueue",
                        "metadata": {"name": f"lq-{i}", "namespace": "default"}, "spec": {"clusterQueue": f"cq-{i}"}})
    objects.extend(cqs)
    for p in range(4):
        objects.append({"apiVersion": KUEUE, "kind": "WorkloadPriorityClass", "metadata": {"name": f"p{p}"},
                        "value": p})
    admitted, go_admitted = [], []
    free = n0 + n1
    for w in range(draw(st.integers(1, 4))):
        i = 1 if w == 0 or draw(st.booleans()) else 0
        gpus = draw(st.integers(1, 3))
        if gpus > free:
            break
        free -= gpus
        prio, t, name = draw(st.integers(0, 3)), NOW - draw(st.integers(1, 1000)), f"adm-{w}"
        objects.append(_job(name, f"lq-{i}", 1, {GPU: gpus}, prio))
        admitted.append({"name": name, "clusterQueue": f"cq-{i}", "usage": [("f0", GPU, gpus)], "time": t})
        go_admitted.append(_workload(name, f"lq-{i}", 1, {GPU: gpus}, prio, t, f"cq-{i}", "f0"))
    pending, jobs = [], {}
    for k, i in enumerate((0, 1)):
        name = f"w{k}"
        gpus = draw(st.integers(1, n0)) if i == 0 else draw(st.integers(1, n0 + n1))
        prio = draw(st.integers(0, 3))
        job = _job(name, f"lq-{i}", 1, {GPU: gpus}, prio)
        wl = _workload(name, f"lq-{i}", 1, {GPU: gpus}, prio, NOW, None, None)
        _stamp(wl, [job], NOW - 10 * draw(st.integers(0, 1)) - i)
        wl["metadata"]["uid"] = f"p{k:02d}-{name}"
        objects.append(job)
        pending.append(wl)
        jobs[name] = {"main": name}
    go = {"kind": "kueue-cycle", "now": _rfc3339(NOW), "fairSharing": None,
          "resourceFlavors": [o for o in objects if o["kind"] == "ResourceFlavor"], "clusterQueues": cqs, "cohorts": [],
          "admitted": go_admitted, "pending": pending,
          "localQueues": [o for o in objects if o["kind"] == "LocalQueue"]}
    return {"go": go, "objects": objects, "admittedAt": admitted, "pendingJobs": jobs}


def _stamp(wl: dict, jobs: list[dict], t: float) -> None:
    """Give a pending Workload and its Jobs the creationTimestamp ``t``."""
    wl["metadata"]["creationTimestamp"] = _rfc3339(t)
    for job in jobs:
        job["metadata"]["creationTimestamp"] = _rfc3339(t)


def _pod_set(name: str, count: int, req: dict, min_count: int | None = None, selector: dict | None = None,
             tolerations: list | None = None) -> dict:
    """One pod set of a generated workload (the generators' units, see :func:`_requests`)."""
    return {"name": name, "count": count, "requests": req, "minCount": min_count, "selector": selector or {},
            "tolerations": tolerations or []}


def _requests(draw, covered: list[str]) -> dict[str, int]:
    """Per-pod requests over the covered resources (cpu milli, memory MiB, GPUs); at least
    one non-zero."""
    steps = {"cpu": 500, "memory": 1024, GPU: 1}
    while True:
        req = {r: draw(st.integers(0, 6)) * steps[r] for r in covered}
        if any(req.values()):
            return req


def _job(name: str, lq: str, count: int, req: dict, prio: int, min_count: int | None = None,
         selector: dict | None = None, tolerations: list | None = None) -> dict:
    p = pod("x", req.get("cpu", 0), req.get("memory", 0), req.get(GPU, 0), node_selector=selector,
            tolerations=tolerations)
    annotations = {**DURATION}
    if min_count is not None:
        annotations["kueue.x-k8s.io/job-min-parallelism"] = str(min_count)
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": "default", "annotations": annotations,
                         "labels": {"kueue.x-k8s.io/queue-name": lq, "kueue.x-k8s.io/priority-class": f"p{prio}"}},
            "spec": {"parallelism": count, "completions": count,
                     "template": {"spec": p["spec"]}}}


def _workload(name: str, lq: str, count: int, req: dict, prio: int, t: float, cq: str | None, flavor: str | None,
              min_count: int | None = None, selector: dict | None = None, *, pod_sets: list[dict] | None = None,
              uid: str | None = None) -> dict:
    """The kueue.x-k8s.io/v1beta2 Workload of a Job (one pod set ``main``: ``count`` pods of
    ``req``), or of the ``pod_sets`` given (:func:`_pod_set`); admitted to ``cq`` on
    ``flavor`` at ``t`` when ``cq`` is given."""
    if pod_sets is None:
        pod_sets = [_pod_set("main", count, req, min_count, selector)]
    specs = []
    for s in pod_sets:
        r = s["requests"]
        p = pod("x", r.get("cpu", 0), r.get("memory", 0), r.get(GPU, 0), node_selector=s["selector"],
                tolerations=s["tolerations"])
        ps = {"name": s["name"], "count": s["count"], "template": {"spec": p["spec"]}}
        if s["minCount"] is not None:
            ps["minCount"] = s["minCount"]
        specs.append(ps)
    wl = {"apiVersion": KUEUE, "kind": "Workload",
          "metadata": {"name": name, "namespace": "default", "uid": uid or name, "creationTimestamp": _rfc3339(t)},
          "spec": {"queueName": lq, "podSets": specs, "priority": prio, "priorityClassName": f"p{prio}",
                   "priorityClassRef": {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": f"p{prio}"}}}
    if cq is not None:
        usage = {r: _qty(r, v * count) for r, v in req.items() if v}
        wl["status"] = {
            "admission": {"clusterQueue": cq, "podSetAssignments": [
                {"name": "main", "count": count, "flavors": {r: flavor for r, v in req.items() if v},
                 "resourceUsage": usage}]},
            "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "",
                            "lastTransitionTime": _rfc3339(t)},
                           {"type": "Admitted", "status": "True", "reason": "Admitted", "message": "",
                            "lastTransitionTime": _rfc3339(t)}]}
    return wl


# -- Karpenter --------------------------------------------------------------------------------------
@st.composite
def karpenter_case(draw, catalogue) -> dict:
    """A NodePool over some instance types of ``catalogue`` (the simulator's
    :data:`~lab01_cluster_sim.autoscaler.catalogue.DEFAULT_CATALOGUE`) and one capacity type,
    and a pending pod, optionally selecting a GPU model by GPU Feature Discovery's label."""
    names = draw(st.lists(st.sampled_from([t.name for t in catalogue]), min_size=1, max_size=4, unique=True))
    cap_type = draw(st.sampled_from(["on-demand", "spot"]))
    pool = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "gpu"},
            "spec": {"template": {"spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                "requirements": [{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": names},
                                 {"key": "karpenter.sh/capacity-type", "operator": "In", "values": [cap_type]}]}}}}
    selector = {}
    if draw(st.integers(0, 3)) == 0:
        selector[GPU_PRODUCT] = draw(st.sampled_from(sorted({t.gpu_model for t in catalogue})))
    p = pod("pending", draw(st.integers(1, 200_000)), draw(st.integers(1, 2_200_000)),
            draw(st.sampled_from([0, 1, 1, 2, 4, 8, 9])), node_selector=selector)
    types = []
    for t in catalogue:
        cap = {"cpu": f"{t.cpu_milli}m", "memory": f"{t.memory_mib}Mi", "pods": "110"}
        if t.gpus:
            cap[GPU] = str(t.gpus)
        zone = {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-a"]}
        types.append({"name": t.name, "capacity": cap, "requirements": [
            {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": [t.name]},
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand", "spot"]},
            {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
            {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}, zone],
            "offerings": [{"available": True, "price": 1.0, "requirements": [
                {"key": "karpenter.sh/capacity-type", "operator": "In", "values": [ct]}, zone]}
                for ct in ("on-demand", "spot")]})
    go = {"kind": "karpenter", "nodePool": pool, "instanceTypes": types, "pod": p}
    return {"go": go, "objects": [pool, p], "pod": p}
