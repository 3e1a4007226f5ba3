"""The FGD paper's trace replay: every pod arrives once, nothing leaves, no clock.

Method of Weng et al. (USENIX ATC'23) as their simulator runs it (hkust-adsl/kubernetes-scheduler-simulator:
``tuneUpPods``/``tuneDownPods`` in pkg/simulator/simulator.go, the score plugins,
experiments/analysis/merge_alloc_discrete.py):

1. The original pods are sorted by name and shuffled with the run's seed.
2. Tuning: while the GPU request is below ``inflation`` x the cluster GPU capacity, copies of
   uniformly drawn original pods (with replacement) are appended; the loop stops at the first
   draw whose per-GPU share u would push the total above the target (that draw is discarded).
   A list above the target loses pods at uniform random positions until it is not.
3. Node ties go to a seeded random node priority order (drawn after tuning).
4. Each pod is attempted exactly once, in order, against the current state; a pod that fits
   no node fails and is never retried. There are no departures.
5. After every attempt the allocated milli-GPU, the arrived GPU request (failed pods
   included) and the fragmentation F are recorded; the curves are discretised to integer
   "arrived %" columns as the authors' analysis scripts do (sec. 5).

Not modelled: kube-scheduler's limit of 1001 pods per node (NodeResourcesFit). It never
binds on openb, where every pod asks for at least 1 vCPU and no node holds more than a few
dozen pods.

Randomness comes from one ``numpy.random.Generator`` seeded with the run seed, used in the
order shuffle, tuning draws, node permutation, then (Random only) policy draws. Go's
``math/rand`` is not reproduced bit for bit, so single seeds differ from the paper's; means
over seeds are what compare.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from lab01_cluster_sim.cluster import ClusterState, Request
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.fragmentation import FragmentationTracker, TargetWorkload
from lab01_cluster_sim.model import MILLI_PER_GPU, Job, Node
from lab01_cluster_sim.policies.base import make_policy, place

DEFAULT_INFLATION = 1.3
"""Arrived GPU request as a multiple of cluster GPU capacity (the paper's ``-tune 1.3``)."""

PAPER_POLICIES = ("random", "dot-prod", "gpu-clustering", "gpu-packing", "best-fit", "fgd")
"""The six policies of the paper's main comparison, in its order."""

TEXTBOOK_POLICIES = ("first-fit", "best-fit", "worst-fit")
"""The textbook bin-packing rules: first node that fits, the node left fullest, the emptiest."""

LESSON_POLICIES = (*TEXTBOOK_POLICIES, "random", "dot-prod", "gpu-packing", "gpu-clustering", "fgd")
"""The textbook rules beside the paper's (best-fit is in both): what ``compare`` shows on the
embedded synthetic workload, so first-fit against best-fit is in the first table a learner sees."""

PAPER_SEEDS = tuple(range(42, 52))
"""The paper's seeds 42..51."""

PAPER_POD_LISTS = ("default", "cpu050", "cpu100", "cpu200", "cpu250", "gpushare100", "gpushare40", "gpushare60",
                   "gpushare80", "gpuspec10", "gpuspec20", "gpuspec25", "gpuspec33", "multigpu20", "multigpu30",
                   "multigpu40", "multigpu50")
"""The 17 openb pod lists of the paper's experiment grid, in its order (``FileList`` of
``experiments/run_scripts/generate_run_scripts.py`` in hkust-adsl/kubernetes-scheduler-simulator);
the trace folder holds 24 (``sweep --workloads all``)."""

# Failure reasons (every failed pod gets exactly one).
REASON_NEVER_FITS = "never fits: no node could hold it even empty"
REASON_GPU = "insufficient GPU: no node has the GPUs free"
REASON_CPU_MEM = "insufficient CPU/memory: no node has the CPU and memory free"
REASON_SPLIT = "fragmented: GPUs free on some nodes, CPU/memory on others, none has both"


@dataclass(frozen=True)
class ArrivalPlan:
    """The pods of one run in arrival order.

    Attributes:
        source: int64 (P,), for each arriving pod the index of the original pod in the
            NAME-SORTED original list it is (a copy of).
        tuned: bool (P,), True for the copies added by tuning up.
        order_names: names of the arriving pods (copies named ``<name>-tuned-<i>``).
        gpu_request_milli: total k*u of the plan, milli-GPU.
        target_milli: inflation x cluster GPU capacity, milli-GPU.
    """

    source: np.ndarray
    tuned: np.ndarray
    order_names: tuple[str, ...]
    gpu_request_milli: int
    target_milli: float


def plan_arrivals(jobs: Sequence[Job], capacity_milli: int, inflation: float,
                  rng: np.random.Generator, shuffle: bool = True) -> tuple[list[Job], ArrivalPlan]:
    """Shuffle and tune a pod list to ``inflation`` x ``capacity_milli`` (``SortClusterPods``, ``tuneUpPods``,
    ``tuneDownPods`` in pkg/simulator/simulator.go of the FGD simulator).

    Args:
        jobs: the original pods (single-worker jobs), any order; sorted by ``job_id`` here.
        capacity_milli: cluster GPU capacity, milli-GPU (6,212,000 for openb).
        inflation: target multiple of the capacity (> 0).
        rng: the run's generator (drawn from in this order: shuffle, tuning draws).
        shuffle: shuffle the originals (the paper does).

    Returns:
        The name-sorted originals and the :class:`ArrivalPlan` into them.

    Raises:
        InputError: no pods, a non-positive inflation, an inflation so small that no pod
            arrives, or a gang job (the replay places pods).
    """
    if not jobs:
        raise InputError("replay: the pod list is empty")
    if not inflation > 0:
        raise InputError(f"--inflation must be > 0, got {inflation}")
    if any(j.workers != 1 for j in jobs):
        raise InputError("replay: every job must be a single pod (workers = 1); gangs belong to the timed engine")
    base = sorted(jobs, key=lambda j: j.job_id)
    n = len(base)
    k_u = np.array([j.gpus_per_worker * j.gpu_milli for j in base], dtype=np.int64)
    u = np.array([j.gpu_milli for j in base], dtype=np.int64)
    order = list(rng.permutation(n)) if shuffle else list(range(n))
    tuned = [False] * n
    total = int(k_u.sum())
    target = inflation * capacity_milli
    if total < target:
        while True:
            idx = int(rng.integers(n))
            # The stop test adds the per-GPU share u, not k*u (as tuneUpPods does), so the
            # last multi-GPU copy may overshoot the target by up to (k-1)*1000.
            if total + u[idx] > target:
                break
            order.append(idx)
            tuned.append(True)
            total += int(k_u[idx])
    elif total > target:
        while total > target:
            pos = int(rng.integers(len(order)))
            total -= int(k_u[order[pos]])
            del order[pos]
            del tuned[pos]
    if not order:
        raise InputError(f"--inflation {inflation:g}: {inflation:g} x the cluster's {capacity_milli / 1000:g} GPUs "
                         "is less than the GPU request of any pod, so no pod would arrive; expected a larger "
                         "inflation")
    names = []
    copy_no = 0
    for idx, is_copy in zip(order, tuned):
        if is_copy:
            names.append(f"{base[idx].job_id}-tuned-{copy_no}")
            copy_no += 1
        else:
            names.append(base[idx].job_id)
    plan = ArrivalPlan(source=np.array(order, dtype=np.int64), tuned=np.array(tuned, dtype=bool),
                       order_names=tuple(names), gpu_request_milli=total, target_milli=target)
    return base, plan


@dataclass(frozen=True)
class AllocCurve:
    """Curves against arrived load, discretised as the paper's scripts do (merge_alloc_discrete.py).

    Attributes:
        arrived_pct: int64 (X,), columns 0..max arrived % (x).
        alloc_pct: float64 (X,), GPU allocation ratio (allocated / capacity) in %, NaN if missing.
        frag_pct: float64 (X,), fragmentation amount F as % of the GPU capacity, NaN if missing.
        frag_ratio_pct: float64 (X,), fragmentation ratio 100 * F / idle, NaN if missing.
    """

    arrived_pct: np.ndarray
    alloc_pct: np.ndarray
    frag_pct: np.ndarray
    frag_ratio_pct: np.ndarray

    def at(self, x: int, what: str = "alloc_pct") -> float:
        """Value of curve ``what`` at column ``x`` (NaN when outside the range or missing)."""
        values = getattr(self, what)
        return float(values[x]) if 0 <= x < len(values) else float("nan")


def discretise(arrived_milli: np.ndarray, used_milli: np.ndarray, frag_milli: np.ndarray,
               idle_milli: np.ndarray, total_gpus: int) -> AllocCurve:
    """Per-event samples -> integer columns of arrived % (the authors'
    experiments/analysis/merge_alloc_discrete.py).

    Per event: ``arrive% = round(arrived / (10 * G))`` (round half to even) and ``alloc% =
    round(used / (10 * G), 2)``. Column x is the mean of alloc% over events with arrive% = x
    (rounded to 2 decimals); when there is none, over events with arrive% in [x-1, x+1];
    else NaN. Fragmentation: ``round(100 * mean(F) / (1000 * G), 2)`` and the mean of
    ``100 * F / idle`` over the same events.

    Args:
        arrived_milli, used_milli, frag_milli, idle_milli: (E,) per-event samples, milli-GPU.
        total_gpus: G, GPUs in the cluster.
    """
    g10 = 10.0 * total_gpus
    arr = np.round(np.asarray(arrived_milli) / g10).astype(np.int64)
    alloc = np.round(np.asarray(used_milli) / g10, 2)
    frag = np.asarray(frag_milli, dtype=np.float64)
    idle = np.asarray(idle_milli, dtype=np.float64)
    ratio = np.divide(100.0 * frag, idle, out=np.zeros_like(frag), where=idle > 0)
    x_max = int(arr.max()) if arr.size else 0
    count = np.bincount(arr, minlength=x_max + 1).astype(np.float64)
    sums = [np.bincount(arr, weights=w, minlength=x_max + 1) for w in (alloc, frag, ratio)]
    # fallback window [x-1, x+1] for empty columns
    # (the full convolution sliced, not mode="same": that returns 3 values when there are
    # fewer than 3 columns, e.g. an inflation below 2 %)
    n = x_max + 1
    win_count = np.convolve(count, [1, 1, 1])[1:n + 1]
    win_sums = [np.convolve(s, [1, 1, 1])[1:n + 1] for s in sums]
    out = []
    for s, ws in zip(sums, win_sums):
        v = np.full(x_max + 1, np.nan)
        has = count > 0
        v[has] = s[has] / count[has]
        fb = ~has & (win_count > 0)
        v[fb] = ws[fb] / win_count[fb]
        out.append(v)
    alloc_c, frag_c, ratio_c = out
    return AllocCurve(
        arrived_pct=np.arange(x_max + 1, dtype=np.int64),
        alloc_pct=np.round(alloc_c, 2),
        frag_pct=np.round(100.0 * frag_c / (1000.0 * total_gpus), 2),
        frag_ratio_pct=ratio_c,
    )


@dataclass(frozen=True)
class ReplayResult:
    """Outcome of one replay run.

    Attributes:
        policy, seed, inflation: the run's settings.
        total_gpus: GPUs in the cluster (G).
        pod_names: (P,) names of the arriving pods, in arrival order.
        source: int64 (P,), index of each arriving pod in the name-sorted original list.
        node: int64 (P,), index of the node each pod was bound to; -1 for a failed pod.
        gpus: (P,) GPU indices inside that node (empty for CPU-only or failed pods).
        reason: (P,) ``""`` for a placed pod, else one of the ``REASON_*`` strings.
        arrived_milli, used_milli, idle_milli: int64 (P,), after each attempt: cumulative
            arrived GPU request (failed pods included), allocated and idle milli-GPU.
        frag_milli: float64 (P,), cluster fragmentation F after each attempt (milli-GPU).
        curve: the discretised :class:`AllocCurve`.
        stranded_gpus: stranded GPUs after the last pod (:func:`end_stranded_gpus`): wholly
            free GPUs that none of the failed pods could use; -1 when not computed (the
            learner's edition before the stranded-GPU exercise).
    """

    policy: str
    seed: int
    inflation: float
    total_gpus: int
    pod_names: tuple[str, ...]
    source: np.ndarray
    node: np.ndarray
    gpus: tuple[tuple[int, ...], ...]
    reason: tuple[str, ...]
    arrived_milli: np.ndarray
    used_milli: np.ndarray
    idle_milli: np.ndarray
    frag_milli: np.ndarray
    curve: AllocCurve = field(repr=False)
    stranded_gpus: int = -1

    @property
    def placed(self) -> int:
        return int((self.node >= 0).sum())

    @property
    def failed(self) -> int:
        return int((self.node < 0).sum())

    def alloc_at(self, x: int) -> float:
        """GPU allocation ratio (%) at arrived x % of capacity (the discretised column)."""
        return self.curve.at(x)

    @property
    def final_alloc_pct(self) -> float:
        """Allocated milli-GPU / capacity after the last pod, in %."""
        return 100.0 * float(self.used_milli[-1]) / (MILLI_PER_GPU * self.total_gpus)

    @property
    def unallocated_gpus(self) -> float:
        """GPUs left unallocated at the end (idle milli-GPU / 1000)."""
        return float(self.idle_milli[-1]) / MILLI_PER_GPU

    @property
    def final_frag_pct(self) -> float:
        """Fragmentation F at the end as % of the cluster GPU capacity."""
        return 100.0 * float(self.frag_milli[-1]) / (MILLI_PER_GPU * self.total_gpus)

    @property
    def final_frag_ratio_pct(self) -> float:
        """100 * F / idle at the end (0 when nothing is idle)."""
        idle = float(self.idle_milli[-1])
        return 100.0 * float(self.frag_milli[-1]) / idle if idle else 0.0

    def failure_counts(self) -> dict[str, int]:
        """Failed pods per reason."""
        out: dict[str, int] = {}
        for r in self.reason:
            if r:
                out[r] = out.get(r, 0) + 1
        return out


def failure_reason(state: ClusterState, request: Request) -> str:
    """Why ``request`` fits no node now: one of the ``REASON_*`` strings."""
    if not state.fits_empty(request).any():
        return REASON_NEVER_FITS
    cpu_mem = (state.cpu_free >= request.cpu_milli) & (state.mem_free >= request.memory_mib)
    if request.num_gpus == 0:
        return REASON_CPU_MEM
    gpu = (state.gpu_free >= request.gpu_milli).sum(axis=1) >= request.num_gpus
    gpu &= state.model_mask(request.gpu_models)
    if not gpu.any():
        return REASON_GPU
    if not cpu_mem.any():
        return REASON_CPU_MEM
    return REASON_SPLIT


def end_stranded_gpus(state: ClusterState, failed: Sequence[Request]) -> int:
    """Stranded GPUs at the end of a replay, as :func:`lab01_cluster_sim.metrics.count_stranded_gpus`
    defines them: wholly free GPUs that no pending pod can use now, the pending pods being
    the pods that failed (the replay never retries them; in Kubernetes they would stay
    Pending as unschedulable). Each is one worker (``remaining`` = 1).

    Since nothing leaves during a replay, free resources only shrink, so a pod that failed
    still fits no node at the end and every wholly free GPU is stranded as soon as one pod
    failed (0 when none failed); the count is nonetheless computed from the definition.

    Args:
        state: the cluster after the last attempt.
        failed: the requests of the failed pods (repeats allowed).

    Returns:
        Whole GPUs, 0..(wholly free GPUs); -1 when ``count_stranded_gpus`` is not
        implemented (the learner's edition before that exercise).
    """
    from lab01_cluster_sim.metrics import count_stranded_gpus, pareto_minimal_shapes
    from lab01_cluster_sim.framework.noderesources import worker_slots

    shapes = pareto_minimal_shapes((r, 1) for r in failed)
    if not shapes:
        return 0
    slots = np.vstack([worker_slots(r, state.cpu_free, state.mem_free, state.gpu_free, state.model_mask(r.gpu_models))
                       for r, _ in shapes])
    try:
        return count_stranded_gpus(state.full_free_gpus(), slots, np.array([r.num_gpus for r, _ in shapes]),
                                   np.ones(len(shapes), dtype=np.int64))
    except NotImplementedError:
        return -1


def node_priority(nodes: Sequence[Node], rng: np.random.Generator) -> np.ndarray:
    """Seeded tie order (``syncClusterResourceList`` and ``selectHost`` of the FGD
    simulator): the node with the i-th smallest name gets
    priority ``perm[i]`` with ``perm = rng.permutation(N)``; lower wins ties. int64 (N,)
    in the order of ``nodes``."""
    perm = rng.permutation(len(nodes))
    by_name = sorted(range(len(nodes)), key=lambda i: nodes[i].name)
    rank = np.empty(len(nodes), dtype=np.int64)
    rank[by_name] = perm
    return rank


def replay(nodes: Sequence[Node], jobs: Sequence[Job], policy: str, seed: int = 42,
           inflation: float = DEFAULT_INFLATION, target: TargetWorkload | None = None,
           shuffle: bool = True) -> ReplayResult:
    """One run of the paper's replay (see the module docstring).

    Args:
        nodes: the cluster.
        jobs: the original pod list (single-worker jobs).
        policy: a registered policy name (e.g. ``"best-fit"``, ``"fgd"``).
        seed: the run seed.
        inflation: arrived GPU request as a multiple of cluster GPU capacity.
        target: the target workload M for fragmentation and FGD; default: built from ``jobs``
            (as the paper does, from the original list before shuffle and tuning).
        shuffle: shuffle the originals before tuning.

    Returns:
        A :class:`ReplayResult`; every arriving pod is either placed or failed with a reason.

    Raises:
        InputError: unknown policy, empty pod list, bad inflation, a cluster without GPUs.
    """
    rng = np.random.default_rng(seed)
    state_probe_gpus = sum(n.gpu_count for n in nodes)
    if state_probe_gpus == 0:
        raise InputError("replay: the cluster has no GPUs")
    if target is None:
        target = TargetWorkload.from_jobs(jobs)
    pol = make_policy(policy, target=target)
    capacity = state_probe_gpus * MILLI_PER_GPU
    base, plan = plan_arrivals(jobs, capacity, inflation, rng, shuffle=shuffle)
    state = ClusterState(nodes, tie_rank=node_priority(nodes, rng))
    tracker = FragmentationTracker(state, target)
    node_frag = tracker.node_values().copy()
    frag_total = float(node_frag.sum())

    requests = [Request.of_worker(j) for j in base]
    p = len(plan.source)
    node_out = np.full(p, -1, dtype=np.int64)
    gpus_out: list[tuple[int, ...]] = [()] * p
    reasons = [""] * p
    arrived = np.zeros(p, dtype=np.int64)
    used = np.zeros(p, dtype=np.int64)
    frag = np.zeros(p, dtype=np.float64)
    arrived_now = 0
    used_now = 0
    for i, src in enumerate(plan.source):
        req = requests[src]
        gpu_req = req.num_gpus * req.gpu_milli
        arrived_now += gpu_req
        got = place(state, req, pol, rng)
        if got is None:
            reasons[i] = failure_reason(state, req)
        else:
            n, g = got
            state.bind(n, g, req)
            node_out[i] = n
            gpus_out[i] = g
            used_now += gpu_req
            new = tracker.refresh_node(n)
            frag_total = new
        arrived[i] = arrived_now
        used[i] = used_now
        frag[i] = frag_total
    idle = capacity - used
    curve = discretise(arrived, used, frag, idle, state.total_gpus)
    stranded = end_stranded_gpus(state, [requests[src] for src, r in zip(plan.source, reasons) if r])
    return ReplayResult(
        policy=policy, seed=seed, inflation=inflation, total_gpus=state.total_gpus,
        pod_names=plan.order_names, source=plan.source, node=node_out, gpus=tuple(gpus_out),
        reason=tuple(reasons), arrived_milli=arrived, used_milli=used, idle_milli=idle,
        frag_milli=frag, curve=curve, stranded_gpus=stranded,
    )


# -- comparisons over policies and seeds ------------------------------------------------
@dataclass(frozen=True)
class PolicySummary:
    """One row of the policy comparison: means (and sd) over seeds.

    Attributes:
        policy: the policy name; seeds: the seeds averaged.
        x_end: the last arrived-% column (130 for inflation 1.3).
        alloc_100, alloc_end: mean GPU allocation ratio (%) at arrived 100 % and at ``x_end``.
        alloc_end_sd: sample sd (ddof 1) of ``alloc_end`` over seeds (0 for one seed).
        failed_pods: mean failed pods per run.
        unallocated_gpus: mean GPUs left unallocated at the end.
        stranded_gpus: mean stranded GPUs at the end (:func:`end_stranded_gpus`); NaN when
            not computed.
        frag_pct: mean fragmentation F at ``x_end``, % of the cluster GPU capacity.
        frag_ratio_pct: mean fragmentation ratio 100 * F / idle at ``x_end``.
    """

    policy: str
    seeds: tuple[int, ...]
    x_end: int
    alloc_100: float
    alloc_end: float
    alloc_end_sd: float
    failed_pods: float
    unallocated_gpus: float
    frag_pct: float
    frag_ratio_pct: float
    stranded_gpus: float = float("nan")


def summarise(policy: str, runs: Sequence[ReplayResult]) -> PolicySummary:
    """Means over the runs (seeds) of one policy.

    Raises:
        ValueError: no runs, or runs with different inflation.
    """
    if not runs:
        raise ValueError("summarise: no runs")
    x_end = int(round(100 * runs[0].inflation))
    if any(int(round(100 * r.inflation)) != x_end for r in runs):
        raise ValueError("summarise: runs with different inflation")
    end = np.array([r.alloc_at(x_end) for r in runs])
    return PolicySummary(
        policy=policy,
        seeds=tuple(r.seed for r in runs),
        x_end=x_end,
        alloc_100=float(np.mean([r.alloc_at(100) for r in runs])),
        alloc_end=float(end.mean()),
        alloc_end_sd=float(end.std(ddof=1)) if len(runs) > 1 else 0.0,
        failed_pods=float(np.mean([r.failed for r in runs])),
        unallocated_gpus=float(np.mean([r.unallocated_gpus for r in runs])),
        frag_pct=float(np.mean([r.curve.at(x_end, "frag_pct") for r in runs])),
        frag_ratio_pct=float(np.mean([r.curve.at(x_end, "frag_ratio_pct") for r in runs])),
        stranded_gpus=(float(np.mean([r.stranded_gpus for r in runs])) if all(r.stranded_gpus >= 0 for r in runs)
                       else float("nan")),
    )


def compare(nodes: Sequence[Node], jobs: Sequence[Job], policies: Sequence[str] = PAPER_POLICIES,
            seeds: Sequence[int] = (42,), inflation: float = DEFAULT_INFLATION,
            progress=None) -> dict[str, list[ReplayResult]]:
    """Replay every policy with every seed (the target workload is built once from ``jobs``).

    Args:
        progress: optional callable called once per finished run (e.g. a tqdm bar's update).

    Returns:
        policy -> its runs, in the order of ``seeds``.

    Raises:
        InputError: as :func:`replay`.
    """
    target = TargetWorkload.from_jobs(jobs)
    out: dict[str, list[ReplayResult]] = {}
    for policy in policies:
        make_policy(policy, target=target)  # fail fast on an unknown name
    for policy in policies:
        out[policy] = []
        for seed in seeds:
            out[policy].append(replay(nodes, jobs, policy, seed=seed, inflation=inflation, target=target))
            if progress is not None:
                progress()
    return out
