"""The simulator's side of the differential tests: every call into lab01_cluster_sim is here.

Each function takes one generated case (the same Kubernetes, Kueue and Karpenter objects the
upstream oracle gets, see :mod:`upstream.strategies`), reads its objects through the
scenario loader (:func:`lab01_cluster_sim.scenario.load_scenario`, as ``run`` does) and
answers in the oracle's shape, so a test compares two dicts. When Lab 01's modules move,
this file is the one to follow them.

A case the simulator cannot state raises :class:`NotModelled`: objects the loader lists as
unsupported, which the generators never produce (such a case fails its test: the generator has
left the simulator's domain). kube-scheduler's TaintToleration and NodeAffinity are answered by
the simulator's plugins (:mod:`lab01_cluster_sim.kubescheduler`, issue 17).
"""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

from lab01_cluster_sim.admission.controller import AdmissionController, Outcome, State, WorkloadStatus
from lab01_cluster_sim.admission.flavors import Granular, Mode
from lab01_cluster_sim.admission.plugin import workload_of
from lab01_cluster_sim.admission.preemption import Admitted, Preemptor
from lab01_cluster_sim.autoscaler.catalogue import DEFAULT_CATALOGUE
from lab01_cluster_sim.autoscaler.plugin import Autoscaler
from lab01_cluster_sim.autoscaler.requirements import incompatibility, unadvertised
from lab01_cluster_sim.cluster import ClusterState, Request
from lab01_cluster_sim.kubescheduler import nodeaffinity, tainttoleration
from lab01_cluster_sim.kubescheduler.constraints import preferred_affinity, tolerations
from lab01_cluster_sim.policies.base import pick_best_gpus
from lab01_cluster_sim.scenario import load_scenario
from lab01_cluster_sim.framework.noderesources import filter_node

MODE_NAMES = {Mode.FIT: "Fit", Mode.PREEMPT: "Preempt", Mode.NO_FIT: "NoFit"}


class NotModelled(Exception):
    """The simulator cannot state this case (the message says which field or plugin)."""


_TMP = Path(tempfile.mkdtemp(prefix="upstream-cases-"))
atexit.register(shutil.rmtree, _TMP, ignore_errors=True)


def load(objects: list[dict]):
    """The objects read as a scenario file by the loader; :class:`NotModelled` when it lists
    any of them as unsupported."""
    path = _TMP / "case.yaml"
    path.write_text("\n---\n".join(json.dumps(o) for o in objects))
    sc = load_scenario(path)
    if sc.unsupported:
        raise NotModelled("; ".join(u.split(": ", 1)[-1] for u in sc.unsupported))
    return sc


# -- kube-scheduler -------------------------------------------------------------------------------
def _scheduler_config(strategy: dict) -> dict:
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": "default-scheduler",
                          "pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": strategy}}]}]}


def _state(case: dict):
    """(scenario, ClusterState with the existing pods bound, incoming pod's Request)."""
    objects = [n["node"] for n in case["nodes"]]
    placed = []
    for ni, n in enumerate(case["nodes"]):
        for pod in n["pods"]:
            objects.append(pod)
            placed.append((ni, pod["metadata"]["name"]))
    objects.append(case["pod"])
    objects.append(_scheduler_config(case["scoringStrategy"]))
    sc = load(objects)
    jobs = {j.job_id: j for j in sc.jobs}
    state = ClusterState(sc.nodes)
    for ni, name in placed:
        req = Request.of_worker(jobs[name])
        gpus = pick_best_gpus(state, req, ni) if req.num_gpus else ()
        state.bind(ni, gpus, req)
    return sc, state, Request.of_worker(jobs[case["pod"]["metadata"]["name"]])


def sim_fit(case: dict) -> list[dict]:
    """NodeResourcesFit as the simulator decides it: per node, ``filter`` (the resource
    checks of :func:`~lab01_cluster_sim.framework.noderesources.filter_node`) and ``score``
    (:class:`~lab01_cluster_sim.kubescheduler.noderesources.NodeResourcesFit`)."""
    sc, state, req = _state(case)
    plain = Request(req.cpu_milli, req.memory_mib, req.num_gpus, req.gpu_milli)   # resources only
    scores = sc.scoring.score(state, plain, np.arange(state.num_nodes), np.random.default_rng(0))
    return [{"filter": not filter_node(state, plain, i), "score": int(scores[i])} for i in range(state.num_nodes)]


def _incoming(case: dict):
    """(scenario, the incoming pod's job) of a scheduler case."""
    sc, _state_, _req = _state(case)
    name = case["pod"]["metadata"]["name"]
    return sc, next(j for j in sc.jobs if j.job_id == name)


def sim_node_affinity_filter(case: dict) -> list[bool]:
    """NodeAffinity's Filter as the simulator decides it, per node
    (:func:`lab01_cluster_sim.kubescheduler.nodeaffinity.node_filter`: the pod's nodeSelector
    and required node affinity)."""
    sc, job = _incoming(case)
    return nodeaffinity.node_filter(sc.nodes, job).tolist()


def sim_node_affinity_score(case: dict) -> list[int | None]:
    """NodeAffinity's normalized Score per node
    (:func:`lab01_cluster_sim.kubescheduler.nodeaffinity.node_scores` over every node of the
    case, as the oracle scores them); None for every node when the pod has no preferred term
    (kube-scheduler's PreScore skips the plugin then)."""
    sc, job = _incoming(case)
    if not preferred_affinity(job):
        return [None] * len(sc.nodes)
    return [int(s) for s in nodeaffinity.node_scores(sc.nodes, job)]


def sim_taint_filter(case: dict) -> list[bool]:
    """TaintToleration's Filter per node (:func:`lab01_cluster_sim.kubescheduler.tainttoleration.node_filter`)."""
    sc, job = _incoming(case)
    return tainttoleration.node_filter(sc.nodes, tolerations(job)).tolist()


def sim_taint_score(case: dict) -> list[int]:
    """TaintToleration's normalized Score per node, over every node of the case
    (:func:`lab01_cluster_sim.kubescheduler.tainttoleration.node_scores`)."""
    sc, job = _incoming(case)
    return [int(s) for s in tainttoleration.node_scores(sc.nodes, tolerations(job))]


# -- Kueue ----------------------------------------------------------------------------------------
def _controller(case: dict) -> tuple[AdmissionController, dict]:
    """(the case's admission controller holding its admitted workloads, with their usage and
    quota reservation times; the loaded jobs by name)."""
    sc = load(case["objects"])
    ctl: AdmissionController = sc.kueue.controller()
    jobs = {j.job_id: j for j in sc.jobs}
    for adm in case["admittedAt"]:
        wl = workload_of(jobs[adm["name"]])
        usage = {(f, r): v for f, r, v in adm["usage"]}
        ctl.tree.add_usage(adm["clusterQueue"], usage)
        ctl._admitted[wl.name] = Admitted(wl, adm["clusterQueue"], usage, adm["time"])
        ctl.workloads[wl.name] = WorkloadStatus(wl, adm["clusterQueue"], state=State.ADMITTED, admitted_at=adm["time"],
                                                usage=usage)
    return ctl, jobs


def sim_kueue(case: dict) -> dict:
    """The flavor assignment and preemption targets of the case's head workload, as the
    simulator's admission layer computes them for one cycle
    (:meth:`~lab01_cluster_sim.admission.controller.AdmissionController._nominate`), on a
    controller holding the case's admitted workloads with their flavors and quota
    reservation times. Same keys as the oracle's answer."""
    ctl, jobs = _controller(case)
    head = workload_of(jobs[case["head"]]) if not case.get("headPodSets") else _joined(jobs, case["headPodSets"])
    status = WorkloadStatus(head, case["clusterQueue"])
    preemptor = _preemptor(ctl)
    entry = ctl._nominate(status, preemptor)
    a = entry.assignment
    pod_sets = []
    for ps in a.pod_sets:
        pod_sets.append({"name": ps.name, "count": ps.count, "flavors": dict(ps.flavors),
                         "modes": {r: MODE_NAMES[m] for r, m in ps.modes.items()},
                         "mode": MODE_NAMES[ps.mode], "message": ps.message()})
    return {"mode": MODE_NAMES[a.mode], "borrowing": a.borrow, "podSets": pod_sets, "message": a.message(),
            "targets": sorted(t.admitted.name for t in entry.targets),
            "targetReasons": [t.reason for t in sorted(entry.targets, key=lambda t: t.admitted.name)],
            "noCandidatesSeen": preemptor.no_candidates_seen}


def sim_kueue_cycle(case: dict) -> dict:
    """One admission cycle of the simulator's controller
    (:meth:`~lab01_cluster_sim.admission.controller.AdmissionController.cycle`) over the case's
    pending workloads, submitted in input order at the oracle's clock, with the admitted
    workloads in place. Same shape as the oracle's answer: per pending workload its outcome
    (``Admitted`` with flavors and counts per pod set, ``Pending`` with Kueue's message, or ""
    when it was not a head), and the evicted workloads with their preemptor and Kueue's
    human-readable reason."""
    from upstream.strategies import NOW

    ctl, jobs = _controller(case)
    for name, pod_sets in case["pendingJobs"].items():
        ctl.submit(replace(_joined(jobs, pod_sets, name), creation_time=NOW), NOW)
    out = {w["metadata"]["name"]: {"name": w["metadata"]["name"], "outcome": "", "flavors": None, "counts": None,
                                   "message": ""} for w in case["go"]["pending"]}
    evicted = []
    for d in ctl.cycle(NOW):
        if d.outcome is Outcome.EVICTED:
            human = d.reason.split(" due to ", 1)[-1]
            evicted.append({"name": d.workload, "preemptor": d.preemptor, "reason": human})
        elif d.outcome is Outcome.ADMITTED:
            out[d.workload].update(outcome="Admitted", flavors={p: dict(f) for p, f in d.flavors.items()},
                                   counts=dict(d.counts))
        else:
            out[d.workload].update(outcome="Pending", message=d.reason)
    return {"workloads": list(out.values()), "evicted": sorted(evicted, key=lambda e: e["name"])}


def _joined(jobs: dict, pod_sets: dict[str, str], name: str = "head"):
    """One workload named ``name`` whose pod sets are those of the given Jobs (pod set name ->
    Job name), each Job read by the loader as a one-pod-set workload: the simulator's
    :class:`~lab01_cluster_sim.admission.api.Workload` of a JobSet-like workload (its
    priority, creationTimestamp and input position are the first Job's)."""
    parts = [workload_of(jobs[job]) for job in pod_sets.values()]
    sets = tuple(replace(w.pod_sets[0], name=name) for name, w in zip(pod_sets, parts))
    return replace(parts[0], name=name, pod_sets=sets)


def over_admitted(case: dict) -> bool:
    """True when the case's admitted workloads hold more than the cohort tree's quota allows
    somewhere (Kueue's unclamped ``available`` is negative for some queue and resource:
    quota removed under admitted workloads, which the generator can produce)."""
    from lab01_cluster_sim.admission.quota import available

    sc = load(case["objects"])
    tree = sc.kueue.controller().tree
    for adm in case["admittedAt"]:
        tree.add_usage(adm["clusterQueue"], {(f, r): v for f, r, v in adm["usage"]})
    return any(available(tree.node(cq.name), fr) < 0 for cq in sc.kueue.cluster_queues for fr in cq.quotas())


class _RecordingPreemptor(Preemptor):
    """The simulator's preemptor, noting whether any flavor's preemption simulation found no
    candidates (the cases where Kueue v0.17.0 and main rank flavors differently under
    ``preference: PreemptionOverBorrowing``, kubernetes-sigs/kueue #13616)."""

    no_candidates_seen = False

    def simulate(self, *args, **kwargs):
        out = super().simulate(*args, **kwargs)
        if out[0] is Granular.NO_CANDIDATES:
            self.no_candidates_seen = True
        return out


def _preemptor(ctl: AdmissionController) -> _RecordingPreemptor:
    return _RecordingPreemptor(ctl.tree, ctl.cluster_queues, ctl._admitted, ctl.fair_sharing, ctl.strategies)


# -- Karpenter ------------------------------------------------------------------------------------
def sim_karpenter(case: dict) -> list[str]:
    """The instance types of the case's NodePool on which the simulator's autoscaler would
    launch a node for the pod alone (as ``Autoscaler._provision`` decides: none when the
    pod's requirements or resources rule out every NodePool, else ``Autoscaler._type_holds``),
    by name, in the catalogue's order."""
    sc = load(case["objects"])
    pool = sc.node_pools[0]
    job = next(j for j in sc.jobs if j.job_id == case["pod"]["metadata"]["name"])
    if incompatibility(job) or unadvertised(job):   # no NodePool can launch for it: stays Pending
        return []
    scaler = Autoscaler([pool])
    holds = {it.name for it in pool.instance_types if scaler._type_holds(pool, it, [_Pending(job)])}
    return [it.name for it in DEFAULT_CATALOGUE if it.name in holds]


class _Pending:
    """A pending pod as the autoscaler's type check reads it (a JobRecord's ``job``)."""

    def __init__(self, job) -> None:
        self.job = job
