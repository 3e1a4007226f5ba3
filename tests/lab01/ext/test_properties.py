"""Property-based invariants of the extensions (hypothesis; bounded and derandomized)."""

from __future__ import annotations

import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lab01_cluster_sim.autoscaler.nodepool import NodePool
from lab01_cluster_sim.studies.autoscaling import one_gpu_types
from lab01_cluster_sim.autoscaler.catalogue import DEFAULT_CATALOGUE
from lab01_cluster_sim.autoscaler.pods import Pod
from lab01_cluster_sim.defrag import Defragmenter
from lab01_cluster_sim.disciplines.drf import dominant_share, drf_allocate
from lab01_cluster_sim.disciplines.core import PriorityPreemption
from lab01_cluster_sim.disciplines.preemption import Checkpoints, CheckpointSpec, last_checkpoint
from lab01_cluster_sim.model import Job, JobState, Node
from lab01_cluster_sim.policies.generic import MostAllocated
from lab01_cluster_sim.simulate import Simulation
from lab01_cluster_sim.tenancy import TenancyPlacer, Tier, tenancy_violations

from .helpers import run_jobs, run_pods

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])

job_shapes = st.tuples(st.integers(0, 60),            # submit
                       st.integers(1, 80),            # duration
                       st.sampled_from([1, 2, 4]),    # GPUs per worker
                       st.integers(1, 2),             # workers
                       st.integers(0, 10))            # priority


def _jobs(shapes):
    return [Job(f"j{i}", float(s), float(d), gpus_per_worker=g, gpu_milli=1000, workers=w, priority=p,
                tenant=f"t{i % 3}") for i, (s, d, g, w, p) in enumerate(shapes)]


class _EvictionSpy(Checkpoints):
    """The checkpoints plugin, noting per eviction (GPU-s lost, the bound: progress since the last
    checkpoint x GPUs, progress kept, the last checkpoint)."""

    def __init__(self, spec: CheckpointSpec) -> None:
        super().__init__(default=spec)
        self.seen: list[tuple[float, float, float, float]] = []
        self._progress = 0.0
        self._lost: dict[str, float] = {}

    def keep_progress(self, sim, record, progress_s):
        self._progress = progress_s
        return super().keep_progress(sim, record, progress_s)

    def on_evict(self, record, lost_work):
        p, spec = self._progress, self.spec(record.job_id)
        lost = record.lost_gpu_s - self._lost.get(record.job_id, 0.0)
        self._lost[record.job_id] = record.lost_gpu_s
        kept = record.job.duration - (record.remaining - record.overhead_left)
        gpus = record.job.gpu_milli_total / 1000
        self.seen.append((lost, (p - last_checkpoint(p, spec)) * gpus, kept, last_checkpoint(p, spec)))


@SETTINGS
@given(st.lists(job_shapes, min_size=1, max_size=12), st.sampled_from([5.0, 10.0, 30.0, math.inf]),
       st.sampled_from([0.0, 3.0]))
def test_preempted_job_loses_at_most_its_work_since_last_checkpoint(shapes, interval, restore):
    nodes = [Node(f"n{i}", "A100", 4, 64000, 512000) for i in range(2)]
    spec = CheckpointSpec(interval_s=interval, restore_s=restore)
    spy = _EvictionSpy(spec)
    sim = Simulation(nodes, _jobs(shapes), MostAllocated(), "gang", PriorityPreemption(default_checkpoint=spec),
                     plugins=[spy])
    records = sim.run().records.values()
    for lost, bound, kept, ckpt in spy.seen:
        assert lost <= bound + 1e-9 and kept >= ckpt - 1e-9
        if math.isfinite(interval):
            assert lost < interval * 8 + 1e-9          # < one interval of progress x at most 8 GPUs
    assert all(r.state is JobState.COMPLETED for r in records if r.state is not JobState.REJECTED)


demand = st.tuples(st.integers(0, 5), st.integers(0, 5)).filter(lambda d: d != (0, 0))


@SETTINGS
@given(st.dictionaries(st.sampled_from("ABCD"), demand, min_size=2, max_size=4),
       st.tuples(st.integers(5, 30), st.integers(5, 30)))
def test_drf_share_gap_at_most_one_task_while_the_other_waits_on_it(demands, capacity):
    tasks = drf_allocate(capacity, demands)
    used = [sum(tasks[t] * demands[t][r] for t in demands) for r in range(2)]
    share = {t: dominant_share([tasks[t] * x for x in demands[t]], capacity) for t in demands}
    for i in demands:
        one_task = dominant_share(demands[i], capacity)
        for j in demands:
            if i == j or tasks[i] == 0:
                continue
            # j "waits on i" if its next task would fit with one task of i given back
            freed = [u - demands[i][r] for r, u in enumerate(used)]
            waits_on_i = all(freed[r] + demands[j][r] <= capacity[r] for r in range(2))
            if waits_on_i:
                assert share[i] - one_task <= share[j] + 1e-9


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 300), st.sampled_from([1, 4, 8]), st.integers(30, 600)),
                min_size=1, max_size=15),
       st.sampled_from([0, 4, 8, 16]), st.sampled_from(["WhenEmpty", "WhenEmptyOrUnderutilized"]))
def test_autoscaler_never_exceeds_nodepool_limits(pods, limit, policy):
    pool = NodePool("p", DEFAULT_CATALOGUE, limit_gpus=limit, consolidation_policy=policy)
    plist = [Pod(f"p{i}", g, float(d), float(s)) for i, (s, g, d) in enumerate(pods)]
    res = run_pods(plist, [pool], until_s=20_000)
    times = sorted({n.launched_s for n in res.nodes})
    for t in times:
        alive = [n for n in res.nodes if n.launched_s <= t and (n.terminated_s is None or n.terminated_s > t)]
        assert sum(n.physical_gpus for n in alive) <= limit


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 200), st.sampled_from([0.0, 10.0, 50.0]), st.booleans(),
                          st.integers(30, 600)), min_size=1, max_size=10),
       st.sampled_from(["WhenEmpty", "WhenEmptyOrUnderutilized", "Never"]))
def test_cost_is_sum_of_node_hours_times_prices(pods, policy):
    spot = [(float(s) + 100.0, "p-0001") for s, _, flag, _ in pods if flag][:1]
    pool = NodePool("p", one_gpu_types(), consolidation_policy=policy, capacity_type="spot")
    plist = [Pod(f"p{i}", 1, float(d), float(s)) for i, (s, _, _, d) in enumerate(pods)]
    res = run_pods(plist, [pool], spot_interruptions=spot, until_s=20_000)
    expected = 0.0
    for n in res.nodes:
        stop = n.terminated_s if n.terminated_s is not None else res.end_s
        assert stop >= n.launched_s
        expected += (stop - n.launched_s) / 3600 * n.price_per_hour
    assert abs(res.cost_dollars() - expected) < 1e-9


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 50), st.integers(5, 100), st.sampled_from([1, 2, 3, 4])),
                min_size=2, max_size=12),
       st.sampled_from([5.0, 20.0]))
def test_migration_never_leaves_less_than_last_checkpoint(shapes, interval):
    nodes = [Node(f"n{i}", "A100", 4, 64000, 512000) for i in range(3)]
    jobs = [Job(f"j{i}", float(s), float(d), gpus_per_worker=g, gpu_milli=1000) for i, (s, d, g) in enumerate(shapes)]
    spec = CheckpointSpec(interval_s=interval, checkpoint_s=1.0, restore_s=2.0)
    spy = _EvictionSpy(spec)
    res = Simulation(nodes, jobs, MostAllocated(), "gang", "fifo-skip", plugins=[spy, Defragmenter()]).run()
    assert all(kept >= ckpt - 1e-9 for _, _, kept, ckpt in spy.seen)
    assert all(r.state is JobState.COMPLETED for r in res.records.values())


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(5, 60), st.sampled_from([250, 500, 1000]),
                          st.sampled_from(["acme", "globex", "free-1", "free-2"])), min_size=1, max_size=14))
def test_tenancy_constraint_never_violated(shapes):
    nodes = [Node("n0", "T4", 2, 64000, 512000), Node("n1", "T4", 1, 64000, 512000)]
    jobs = [Job(f"j{i}", float(s), float(d), gpus_per_worker=1, gpu_milli=m, tenant=t)
            for i, (s, d, m, t) in enumerate(shapes)]
    placer = TenancyPlacer({"acme": Tier.PREMIUM, "globex": Tier.STANDARD, "free-1": Tier.FREE, "free-2": Tier.FREE})
    res = run_jobs(nodes, jobs, "fifo-skip", plugins=[placer], observer=lambda sim, t: tenancy_violations(sim, placer))
    assert all(v == [] for v in res.samples)
    assert all(o.state is JobState.COMPLETED for o in res.outcomes)
