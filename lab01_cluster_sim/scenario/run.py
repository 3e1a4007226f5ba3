"""Running a scenario through the simulator's entry points, writing metrics and figures.

Which entry point:

- **timed** (default): :func:`lab01_cluster_sim.simulate.simulate` on the scenario's nodes and
  jobs (or the trace / generator of ``spec.workload``), with ``spec.simulation`` (mode,
  discipline, seed, until) and the placement policy: ``spec.simulation.policy``, or the
  KubeSchedulerConfiguration's NodeResourcesFit scorer, or best-fit. ``comparePolicies``
  runs one simulation per policy. ``spec.simulation.gpuSchedulerPolicy`` (``binpack`` or
  ``spread``) replaces the policy's GPU pick inside a node
  (:class:`lab01_cluster_sim.policies.gpu_pick.GpuPick`).
- **replay**: ``spec.workload.trace.method: replay``: the fragmentation paper's replay
  (:func:`lab01_cluster_sim.replay.compare`) of ``comparePolicies``.
- **topology**: ``spec.simulation.topology``: the wait-for-one-NVLink-island versus
  run-slower-across-islands comparison (:func:`lab01_cluster_sim.studies.topology.compare_wait_vs_slowdown`,
  one engine run per bound) for each ``maxWaitSeconds``.
- **autoscaler**: when the scenario has Karpenter NodePools:
  :class:`lab01_cluster_sim.autoscaler.plugin.Autoscaler` with :class:`lab01_cluster_sim.autoscaler.pods.PodTracker` (its pods, the NodePools,
  the Node objects as static nodes).

What the current simulator cannot execute is never run with a part left out: :func:`blockers`
lists it and ``run`` refuses in one line; ``--check`` validates any scenario without running
it. Kueue admission runs as a stage of the one engine (timed mode): a
:class:`lab01_cluster_sim.admission.plugin.KueueAdmissionPlugin` at the Admission point
(engine-design.md section 5), passed as ``simulate(..., plugins=[...])``; the run then also
writes ``admission.csv`` (every admission decision with Kueue's message, and for an admission
the flavor of each pod set, :func:`flavors_text`), per-ClusterQueue
figures in ``summary.json`` / ``summary.csv``, and ``quota.csv`` (:func:`quota_rows`: each
ClusterQueue's admitted GPUs over time against its nominal quota), which ``timeline.png``
draws as one panel per ClusterQueue. Every timed run reports its preemptions
(evictions, and the GPU-hours of progress they threw away) per job and in the summary.
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.model import Job, JobRecord, Node, format_seconds
from lab01_cluster_sim.scenario.load import Scenario
from lab01_cluster_sim.scenario.yamlio import ScenarioError

MAX_LISTED = 6
"""Blockers named in the one-line refusal (the rest are counted)."""


class QueuedTime:
    """Observer plugin: the total time each job spent queued, s, including the waits after
    it was preempted or evicted and requeued.

    Two figures per job in a timed run's ``jobs.csv`` (and the summary):

    - ``wait``: the engine's queueing delay, first start minus submit time
      (:attr:`~lab01_cluster_sim.model.JobRecord.wait`); a restart does not change it.
    - ``queued``: that first wait plus, for every eviction followed by a restart, the restart
      time minus the eviction time. It equals ``wait`` for a job never evicted. A wait still
      open when the run ends (a job never restarted) is left out of both, as for a job that
      never started. A job taken back from placement's queue before it ran (Kueue
      un-admitting it) keeps waiting: that is one wait, not two.

    Attributes:
        queued: job id -> total time queued up to its last start, s.
    """

    name = "queued-time"

    def __init__(self) -> None:
        self.queued: dict[str, float] = {}
        self._since: dict[str, float] = {}
        self._sim = None

    def attach(self, sim) -> None:
        self._sim = sim

    def on_start(self, record: JobRecord) -> None:
        now = float(self._sim.engine.now)
        since = self._since.pop(record.job_id, record.job.submit_time)
        self.queued[record.job_id] = self.queued.get(record.job_id, 0.0) + (now - since)

    def on_evict(self, record: JobRecord, lost_work: float = 0.0) -> None:
        if record.job_id in self.queued and record.job_id not in self._since:
            self._since[record.job_id] = float(self._sim.engine.now)   # it ran until now: queued again


@dataclass
class RunResult:
    """What a run produced.

    Attributes:
        kind: ``"timed"``, ``"replay"`` or ``"autoscaler"``.
        rows: one summary row per run (policy), JSON-ready.
        files: the files written, relative to the output folder.
        output: the output folder.
    """

    kind: str
    rows: list[dict[str, Any]]
    output: Path
    files: list[str] = field(default_factory=list)


def flavors_text(flavors: dict) -> str:
    """The flavors an admission assigned (pod set -> resource -> flavor, Kueue's
    ``podSetAssignments[].flavors``) as ``admission.csv`` writes them: one entry per pod set,
    space-separated, ``podset=flavor`` when all its resources got one flavor, else
    ``podset=resource:flavor,resource:flavor`` (``launcher=cpu workers=gpu``;
    ``main=cpu:default,memory:default,nvidia.com/gpu:h100``); "" for no assignment."""
    out = []
    for pod_set, by_resource in flavors.items():
        names = set(by_resource.values())
        if len(names) == 1:
            out.append(f"{pod_set}={names.pop()}")
        else:
            out.append(f"{pod_set}=" + ",".join(f"{r}:{f}" for r, f in by_resource.items()))
    return " ".join(out)


def kind_of(sc: Scenario) -> str:
    """Which entry point runs ``sc`` (module docstring)."""
    if sc.node_pools:
        return "autoscaler"
    if "topology" in sc.spec.get("simulation", {}):
        return "topology"
    trace = sc.spec.get("workload", {}).get("trace")
    if trace and trace.get("method", "timed") == "replay":
        return "replay"
    return "timed"


def blockers(sc: Scenario) -> list[str]:
    """Everything in ``sc`` the current simulator cannot execute (empty: it can run)."""
    out: list[str] = []
    out.extend(sc.unsupported)
    kind = kind_of(sc)
    if sc.kueue and kind != "timed":
        out.append(f"{sc.path}: Kueue admission with the {kind} mode: admission is a stage of the timed engine only")
    queued = [j.job_id for j in sc.jobs if j.extras.get("kueue.x-k8s.io/queue-name") or j.extras.get("min_count")]
    if queued and not sc.kueue:
        out.append(f"{sc.sources[queued[0]]}: kueue.x-k8s.io labels/annotations without Kueue objects "
                   "(ClusterQueue, LocalQueue, ResourceFlavor)")
    if "gpuSchedulerPolicy" in sc.spec.get("simulation", {}) and kind != "timed":
        out.append(f"{sc.path}: spec.simulation.gpuSchedulerPolicy with the {kind} mode: the GPU pick option "
                   "applies to timed runs only")
    tainted = [n.name for n in sc.nodes if n.taints]
    if tainted and kind != "timed":
        out.append(f"{sc.sources.get(f'Node/{tainted[0]}', sc.path)}: node taints with the {kind} mode: "
                   "kube-scheduler's TaintToleration runs in timed runs only")
    if kind in ("topology", "replay"):
        placed = [j.job_id for j in sc.jobs if {"node_selector", "affinity", "preferred_affinity"} & set(j.extras)]
        if placed:
            out.append(f"{sc.sources[placed[0]]}: nodeSelector or node affinity with the {kind} mode: "
                       "kube-scheduler's NodeAffinity runs in timed and autoscaler runs only")
    if kind == "autoscaler":
        if sc.scoring is not None:
            out.append(f"{sc.path}: KubeSchedulerConfiguration with NodePools: the autoscaler's loop binds to the "
                       "fullest node and does not take a scoring strategy yet")
        gangs = [j.job_id for j in sc.jobs if j.workers > 1 or j.role is not None]
        if gangs:
            out.append(f"{sc.sources[gangs[0]]}: gangs ({len(gangs)}; a multi-worker Job or a role of a multi-role "
                       "gang) with NodePools: the autoscaler's runner places single pods only, so a gang would be "
                       "placed pod by pod")
        if _workload(sc) is not None:
            out.append(f"{sc.path}: spec.workload with NodePools: the autoscaler runs the scenario's Pods/Jobs only")
        if not sc.jobs:
            out.append(f"{sc.path}: NodePools but no Pods or Jobs to run")
    else:
        if kind == "topology" and (sc.scoring is not None or "policy" in sc.spec.get("simulation", {})):
            out.append(f"{sc.path}: the topology comparison places with its own island-aware policy; drop "
                       "simulation.policy / the KubeSchedulerConfiguration")
        if kind == "replay" and sc.jobs:
            out.append(f"{sc.path}: the paper's replay runs the trace's pods only; remove the Pods/Jobs or use "
                       "method: timed")
        if not sc.jobs and _workload(sc) is None:
            out.append(f"{sc.path}: no workload: give Pods/Jobs or spec.workload (trace or generator)")
        if not sc.nodes and not _workload(sc):
            out.append(f"{sc.path}: no nodes: give Node objects, spec.nodes.csv or a trace/generator")
    return out


def engine_has_plugins() -> bool:
    """True when :func:`lab01_cluster_sim.simulate.simulate` takes ``plugins=`` (the one engine,
    engine-design.md), where Kueue admission runs as its Admission-point plugin."""
    import inspect

    from lab01_cluster_sim.simulate import simulate

    return "plugins" in inspect.signature(simulate).parameters


def _workload(sc: Scenario) -> dict | None:
    w = sc.spec.get("workload", {})
    return w.get("trace") or w.get("generator")


def refusal(sc: Scenario, items: list[str]) -> str:
    """The one-line refusal naming what cannot be executed yet."""
    shown = "; ".join(items[:MAX_LISTED])
    more = f"; and {len(items) - MAX_LISTED} more" if len(items) > MAX_LISTED else ""
    return f"{sc.path}: cannot execute yet ({len(items)}): {shown}{more} (use --check to validate only)"


def _nodes_jobs(sc: Scenario) -> tuple[list[Node], list[Job]]:
    nodes, jobs = list(sc.nodes), list(sc.jobs)
    w = sc.spec.get("workload", {})
    if "trace" in w:
        from lab01_cluster_sim.studies.timed import trace_jobs
        from lab01_cluster_sim.workloads.openb import load_trace

        folder = str((sc.base_dir / w["trace"]["path"]) if not Path(w["trace"]["path"]).is_absolute()
                     else w["trace"]["path"])
        pod_list = w["trace"].get("podList", "default")
        if w["trace"].get("method", "timed") == "replay":
            trace_nodes, pods = load_trace(folder, pod_list)
            jobs = list(pods.jobs)
        else:
            trace_nodes, jobs = trace_jobs(folder, pod_list)
        nodes = nodes or trace_nodes
    elif "generator" in w:
        from lab01_cluster_sim.studies.timed import DEFAULT_LOAD, DEFAULT_NODES, synthetic_jobs

        g = w["generator"]
        seed = g.get("seed", sc.spec.get("simulation", {}).get("seed", 0))
        gen_nodes, jobs = synthetic_jobs(g.get("jobs", 200), g.get("nodes", DEFAULT_NODES), seed, None,
                                         g.get("gangShare", 0.0), g.get("load", DEFAULT_LOAD),
                                         names=(f"{sc.sources.get('Scenario', 'Scenario')}: "
                                                "spec.workload.generator.load", "", "spec.workload.generator.jobs"))
        nodes = nodes or gen_nodes
    return nodes, jobs


def describe(sc: Scenario) -> str:
    """What ``run`` would do with ``sc``, in one line for ``run --check``: the mode, the
    workload and cluster, the placement policies, and Kueue admission or NodePools.

    Raises:
        ScenarioError: conflicting settings ``run`` would refuse (policy and scheduler config).
    """
    kind = kind_of(sc)
    sim = sc.spec.get("simulation", {})
    w = sc.spec.get("workload", {})
    n_nodes = f"{len(sc.nodes)} node{'s' * (len(sc.nodes) != 1)}"
    if "trace" in w:
        t = w["trace"]
        work = (f"the trace's pods ({Path(t['podList']).name}) on "
                f"{n_nodes if sc.nodes else 'its nodes (openb_node_list_gpu_node.csv)'}")
    elif "generator" in w:
        g = w["generator"]
        from lab01_cluster_sim.studies.timed import DEFAULT_NODES

        work = (f"{g.get('jobs', 200)} generated jobs on "
                f"{n_nodes if sc.nodes else str(g.get('nodes', DEFAULT_NODES)) + ' generated nodes'}")
    elif kind == "autoscaler":
        work = f"{len(sc.jobs)} pod{'s' * (len(sc.jobs) != 1)}, {len(sc.nodes)} static node{'s' * (len(sc.nodes) != 1)}"
    else:
        work = f"{len(sc.jobs)} job{'s' * (len(sc.jobs) != 1)} on {n_nodes}"
        gangs = {j.role.gang for j in sc.jobs if j.role is not None}
        if gangs:
            roles = sum(j.role is not None for j in sc.jobs)
            how = "each placed all-or-nothing" if sim.get("mode", "gang") == "gang" else "placed pod by pod in naive mode"
            work += f" ({roles} of them the roles of {len(gangs)} multi-role gang{'s' * (len(gangs) != 1)}, {how})"
    parts = [f"{kind} mode", work]
    if kind == "autoscaler":
        parts.append(f"{len(sc.node_pools)} NodePool{'s' * (len(sc.node_pools) != 1)}")
    else:
        if kind != "topology":
            labels = [p if isinstance(p, str) else p.describe() for p in _policies(sc)]
            parts.append(f"polic{'y' if len(labels) == 1 else 'ies'} {', '.join(labels)}")
        if kind in ("timed", "topology"):
            parts.append(f"mode {sim.get('mode', 'gang')}, discipline {sim.get('discipline', 'fifo-skip')}")
        if kind == "topology":
            parts.append(f"max waits {', '.join(f'{x:g}' for x in sim['topology']['maxWaitSeconds'])} s")
    if sc.kueue:
        k = sc.kueue
        cohorts = sorted({c.name for c in k.cohorts} | {q.cohort for q in k.cluster_queues if q.cohort})
        parts.append(f"Kueue admission: {len(k.cluster_queues)} ClusterQueue{'s' * (len(k.cluster_queues) != 1)}, "
                     f"{len(k.local_queues)} LocalQueue{'s' * (len(k.local_queues) != 1)}"
                     + (f", cohort{'s' * (len(cohorts) != 1)} {', '.join(cohorts)}" if cohorts else "")
                     + (", fair sharing" if k.fair_sharing else ""))
    if "until" in sim:
        parts.append(f"until t={sim['until']:g} s")
    return "; ".join(parts)


def nodes_to_score(sc: Scenario, num_nodes: int) -> int | None:
    """kube-scheduler's ``percentageOfNodesToScore`` as a node count: 0 or unset = the
    adaptive default; else ``max(100, N x p / 100)`` nodes (kube-scheduler scores at least
    100 nodes, ``minFeasibleNodesToFind``), at most N (None = all)."""
    from lab01_cluster_sim.scheduler import adaptive_nodes_to_score

    p = sc.percentage_of_nodes_to_score
    if p is None:
        return None
    if p == 0:
        return adaptive_nodes_to_score(num_nodes)
    k = max(100, num_nodes * p // 100)
    return None if k >= num_nodes else k


def _policies(sc: Scenario) -> list[Any]:
    sim = sc.spec.get("simulation", {})
    if sim.get("comparePolicies"):
        if sc.scoring is not None or "policy" in sim:
            raise ScenarioError(f"{sc.sources.get('Scenario', sc.path)}: spec.simulation: comparePolicies runs its own "
                                "policies; drop policy / the KubeSchedulerConfiguration")
        return list(sim["comparePolicies"])
    if "policy" in sim and sc.scoring is not None:
        raise ScenarioError(f"{sc.sources.get('Scenario', sc.path)}: spec.simulation.policy and a "
                            "KubeSchedulerConfiguration both choose the placement; keep one")
    if sc.scoring is not None:
        return [sc.scoring]
    return [sim.get("policy", "best-fit")]


def run_scenario(sc: Scenario, output: str | Path, progress: bool = False) -> RunResult:
    """Run ``sc`` and write its metrics and figures under ``output`` (created).

    Raises:
        ScenarioError: something in the scenario cannot be executed (one line, see
            :func:`blockers`), or conflicting settings.
        InputError: the output folder cannot be written; a trace file is bad. A folder the
            run created is removed again when the run fails.
    """
    items = blockers(sc)
    if items:
        raise ScenarioError(refusal(sc, items))
    out = Path(output)
    created = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"--output {out}: cannot create the folder: {exc.strerror or exc}") from None
    kind = kind_of(sc)
    runner = {"replay": _run_replay, "topology": _run_topology}.get(kind)
    try:
        if kind == "autoscaler":
            result = _run_autoscaler(sc, out)
        else:
            result = (runner or _run_timed)(sc, out, progress)
    except BaseException:
        if created:     # a failed run leaves no half-written folder behind
            import shutil

            shutil.rmtree(out, ignore_errors=True)
        raise
    _write_json(out / "scenario.json", {
        "scenario": sc.name, "description": sc.description, "path": str(sc.path), "kind": kind,
        "objects": sc.objects, "runs": result.rows})
    result.files.insert(0, "scenario.json")
    return result


def _run_timed(sc: Scenario, out: Path, progress: bool) -> RunResult:
    from lab01_cluster_sim.studies.timed import summary_dict
    from lab01_cluster_sim.plots.timeline import plot_timeline
    from lab01_cluster_sim.simulate import simulate

    nodes, jobs = _nodes_jobs(sc)
    sim = sc.spec.get("simulation", {})
    rows, timelines, job_rows, decision_rows, quotas = [], {}, [], [], {}
    from lab01_cluster_sim.registry import kube_scheduler_plugins

    for policy in _policies(sc):
        label = policy if isinstance(policy, str) else policy.describe()
        queued = QueuedTime()
        kube = kube_scheduler_plugins(nodes, jobs, sc.scheduler_weights)   # TaintToleration, NodeAffinity
        extra: dict[str, Any] = {"plugins": [*kube, queued]}
        plugin = None
        if sc.kueue:
            from lab01_cluster_sim.admission.plugin import KueueAdmissionPlugin

            plugin = KueueAdmissionPlugin(sc.kueue.controller(), wait_for_pods_ready=sc.kueue.wait_for_pods_ready)
            extra["plugins"] = [plugin, *kube, queued]
        if "gpuSchedulerPolicy" in sim:     # the GPU choice inside a node (policies/gpu_pick.py)
            from lab01_cluster_sim.policies.gpu_pick import GpuPick
            from lab01_cluster_sim.registry import policy_for_jobs

            if isinstance(policy, str):
                policy = policy_for_jobs(policy, jobs)
            policy = GpuPick(policy, sim["gpuSchedulerPolicy"])
        result = simulate(nodes, jobs, policy=policy, mode=sim.get("mode", "gang"),
                          discipline=sim.get("discipline", "fifo-skip"), seed=sim.get("seed", 0),
                          until=sim.get("until"), nodes_to_score=nodes_to_score(sc, len(nodes)), progress=progress,
                          **extra)
        d = summary_dict(result)
        d["policy"] = label
        if "gpuSchedulerPolicy" in sim:
            d["gpu_pick"] = sim["gpuSchedulerPolicy"]
        records = list(result.records.values())
        d["preemptions"] = sum(r.preemptions for r in records)
        d["lost_gpu_hours"] = sum(r.lost_gpu_s for r in records) / 3600.0
        times = np.array(list(queued.queued.values()), dtype=float)
        d["queued_s"] = ({"mean": float(times.mean()), "max": float(times.max())} if len(times)
                         else {"mean": None, "max": None})
        if plugin is not None:
            d["cluster_queues"] = plugin.queue_summary()
            decision_rows.extend({"policy": label, "time": x.time, "workload": x.workload, "outcome": x.outcome.value,
                                  "cluster_queue": x.cluster_queue, "flavors": flavors_text(x.flavors),
                                  "reason": x.reason} for x in plugin.decisions)
        rows.append(d)
        timelines[label] = result.timeline
        if plugin is not None:
            tl = result.timeline
            quotas[label] = plugin.gpu_quota_timeline(end=float(tl.time[-1]) if len(tl.time) else None)
        for row in result.jobs_table():
            rec = result.records[row["job"]]
            q = queued.queued.get(row["job"])
            pos = list(row).index("wait") + 1
            items = list(row.items())
            row = dict(items[:pos] + [("queued", None if q is None else round(q, 3))] + items[pos:])
            job_rows.append({"policy": label, **row, "placements": " ".join(row["placements"]),
                             "preemptions": rec.preemptions, "lost_gpu_hours": rec.lost_gpu_s / 3600.0})
    files = ["summary.json", "summary.csv", "jobs.csv", "timeline.png"]
    if decision_rows:
        _write_csv(out / "admission.csv", decision_rows)
        files.append("admission.csv")
    if quotas:      # the data of the timeline's ClusterQueue panels
        _write_csv(out / "quota.csv", quota_rows(quotas))
        files.append("quota.csv")
    _write_json(out / "summary.json", rows)
    _write_csv(out / "summary.csv", [_flat(r) for r in rows])
    _write_csv(out / "jobs.csv", job_rows)
    end = max((float(tl.time[-1]) for tl in timelines.values() if len(tl.time)), default=0.0)
    unit = "s" if end <= 600 else "min" if end <= 3 * 3600 else "h"   # readable ticks for short and long runs
    fig = plot_timeline(timelines, title=f"{sc.name}: {len(jobs)} job{'s' * (len(jobs) != 1)} on {len(nodes)} node{'s' * (len(nodes) != 1)}", time_unit=unit,
                        quotas=quotas or None)
    _save(fig, out / "timeline.png")
    return RunResult("timed", rows, out, files)


def quota_rows(quotas: dict[str, list]) -> list[dict]:
    """``quota.csv``'s rows: per run (policy) and ClusterQueue, each step of its admitted GPUs
    (``gpus`` from ``time_s`` on) with its nominal quota and the GPUs borrowed above it."""
    return [{"policy": label, "cluster_queue": q.cluster_queue, "time_s": float(t), "gpus": int(g),
             "nominal_gpus": q.nominal, "borrowed_gpus": int(b)}
            for label, series in quotas.items() for q in series
            for t, g, b in zip(q.time, q.gpus, q.borrowed())]


def _run_replay(sc: Scenario, out: Path, progress: bool = False) -> RunResult:
    from lab01_cluster_sim.plots.replay import plot_alloc_vs_arrived
    from lab01_cluster_sim.progress import progress_bar
    from lab01_cluster_sim.replay import compare, summarise

    nodes, jobs = _nodes_jobs(sc)
    sim = sc.spec.get("simulation", {})
    policies = [p for p in _policies(sc) if isinstance(p, str)]
    if len(policies) != len(_policies(sc)):
        raise ScenarioError(f"{sc.path}: the paper's replay takes named policies, not a KubeSchedulerConfiguration")
    # one step per policy replayed, as the compare command shows
    with progress_bar(len(policies), "replays", quiet=not progress) as bar:
        results = compare(nodes, jobs, policies, seeds=(sim.get("seed", 42),), progress=bar.update)
    rows = [_plain(summarise(p, runs).__dict__) for p, runs in results.items()]
    _write_json(out / "summary.json", rows)
    _write_csv(out / "summary.csv", rows)
    _save(plot_alloc_vs_arrived(results, title=sc.name), out / "allocation.png")
    return RunResult("replay", rows, out, ["summary.json", "summary.csv", "allocation.png"])


def _run_topology(sc: Scenario, out: Path, progress: bool = False) -> RunResult:
    from lab01_cluster_sim.progress import steps
    from lab01_cluster_sim.plots.topology import wait_vs_slowdown_figure
    from lab01_cluster_sim.studies.topology import compare_wait_vs_slowdown

    nodes, jobs = _nodes_jobs(sc)
    sim = sc.spec["simulation"]
    topo = sim["topology"]
    waits = [float(w) for w in topo["maxWaitSeconds"]]
    # one bound at a time (each bound is its own run), so a terminal shows a bar per bound
    rows = [row for w in (steps(waits, "topology", total=len(waits)) if progress else waits)
            for row in compare_wait_vs_slowdown(nodes, jobs, [w], discipline=sim.get("discipline", "fifo-skip"),
                                                default_comm_fraction=topo.get("commFraction", 0.2))]
    plain = [_plain(r.__dict__) for r in rows]
    _write_json(out / "summary.json", plain)
    _write_csv(out / "summary.csv", plain)
    _save(wait_vs_slowdown_figure(rows), out / "topology.png")
    return RunResult("topology", plain, out, ["summary.json", "summary.csv", "topology.png"])


def _run_autoscaler(sc: Scenario, out: Path) -> RunResult:
    from lab01_cluster_sim.autoscaler.plugin import Autoscaler
    from lab01_cluster_sim.autoscaler.pods import MAX_EVENTS, Pod, PodTracker, StaticNode, pod_jobs, static_nodes
    from lab01_cluster_sim.model import termination_grace
    from lab01_cluster_sim.policies.generic import MostAllocated
    from lab01_cluster_sim.sharing_modes import TimeSlicing, TimeSlicingParams
    from lab01_cluster_sim.simulate import Simulation
    from lab01_cluster_sim.plots.autoscaler import autoscaler_figure

    pods = []
    for j in sc.jobs:
        image, gib, workload = sc.pod_images[j.job_id]
        pods.append(Pod(j.job_id, j.gpus_per_worker, j.duration, j.submit_time, workload, j.cpu_milli, j.memory_mib,
                        image or "image", gib, bool(j.extras.get("do_not_disrupt")), termination_grace(j),
                        tuple(j.extras.get("node_selector", ())), tuple(j.extras.get("affinity", ())),
                        tuple(sorted(j.extras.get("extended_requests", {}).items())), j.extras.get("kind") == "Pod"))
    static = [StaticNode(n.name, n.gpu_model, n.gpu_count, n.cpu_milli, n.memory_mib,
                         labels=tuple(sorted(n.labels.items()))) for n in sc.nodes]
    seed = sc.spec.get("simulation", {}).get("seed", 0)
    until = sc.spec.get("simulation", {}).get("until")
    cluster, fleet = static_nodes(static)
    scaler = Autoscaler(sc.node_pools, fleet, rng=np.random.default_rng(seed), max_events=MAX_EVENTS)
    tracker = PodTracker(pods, scaler)
    Simulation(cluster, pod_jobs(pods), MostAllocated(), "gang", "fifo-skip",
               plugins=[scaler, TimeSlicing(TimeSlicingParams()), tracker]).run(
        until=None if until is None else math.nextafter(float(until), math.inf))
    res = tracker.result()
    summary = {"scenario": sc.name, **res.summary()}
    node_rows = [{"node": n.name, "type": n.instance_type, "pool": n.pool.name if n.pool else "", "capacity":
                  n.capacity_type, "launched_s": n.launched_s, "ready_s": n.ready_s, "terminated_s": n.terminated_s,
                  "why": n.termination_reason, "dollars": round(n.hours(res.end_s) * n.price_per_hour, 4)}
                 for n in res.nodes]
    pending = res.pending_times()    # the summary's mean pending is the mean of this column
    pod_rows = [{"pod": r.pod.name, "node": r.ran_on, "submit_s": r.pod.submit_s, "first_bound_s": r.first_bound_s,
                 "pending_s": pending[name], "started_s": r.started_s, "finished_s": r.finished_s,
                 "disruptions": r.disruptions,
                 "reason": res.unlaunchable.get(name, "") or (f"evicted at t={format_seconds(r.gone_s)}s and gone: a bare "
                                                               "Pod no controller recreates" if r.gone_s is not None
                                                               else "")}
                for name, r in res.pods.items()]
    _write_json(out / "summary.json", [summary])
    _write_csv(out / "summary.csv", [summary])
    _write_csv(out / "nodes.csv", node_rows)
    _write_csv(out / "pods.csv", pod_rows)
    _save(autoscaler_figure(res), out / "autoscaler.png")
    return RunResult("autoscaler", [summary], out, ["summary.json", "summary.csv", "nodes.csv", "pods.csv",
                                                     "autoscaler.png"])


# -- writing ---------------------------------------------------------------------------------------
def _plain(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        x = float(x)
        return None if math.isnan(x) or math.isinf(x) else round(x, 4)
    return x


def _flat(d: dict, prefix: str = "") -> dict:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flat(v, key + "."))
        elif isinstance(v, list) and any(isinstance(x, (dict, list)) for x in v):
            out[key] = json.dumps(_plain(v), separators=(",", ":"))   # e.g. cluster_queues: JSON a script can read
        elif isinstance(v, list):
            out[key] = " | ".join(map(str, v))
        else:
            out[key] = v
    return out


def _write_json(path: Path, data: Any) -> None:
    try:
        path.write_text(json.dumps(_plain(data), indent=2) + "\n")
    except OSError as exc:
        raise InputError(f"{path}: cannot write: {exc.strerror or exc}") from None


def _write_csv(path: Path, rows: list[dict]) -> None:
    keys: list[str] = []
    for r in rows:
        keys.extend(k for k in r if k not in keys)
    try:
        with path.open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=keys or ["empty"])
            w.writeheader()
            for r in rows:
                w.writerow({k: ("" if v is None else _plain(v)) for k, v in r.items()})
    except OSError as exc:
        raise InputError(f"{path}: cannot write: {exc.strerror or exc}") from None


def _save(fig, path: Path) -> None:
    try:
        fig.savefig(path, dpi=110)
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: cannot save the figure: {exc}") from None


__all__ = ["QueuedTime", "RunResult", "blockers", "describe", "engine_has_plugins", "flavors_text", "kind_of", "nodes_to_score", "refusal", "run_scenario"]
