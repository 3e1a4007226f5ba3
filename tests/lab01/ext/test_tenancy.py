"""Labels/nodeSelector, taints/tolerations, and the tenancy-tier constraint."""

from __future__ import annotations

import pytest

from lab01_cluster_sim.corev1 import Taint, Toleration
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.kubescheduler.constraints import NODE_SELECTOR, TOLERATIONS
from lab01_cluster_sim.kubescheduler.nodeaffinity import NodeAffinity
from lab01_cluster_sim.model import Job, JobState, Node
from lab01_cluster_sim.registry import make_plugin
from lab01_cluster_sim.simulate import Simulation
from lab01_cluster_sim.tenancy import (
    GPU_TAINT,
    GPU_TOLERATION,
    TIER_MECHANISM,
    GpuNodeTaint,
    TenancyPlacer,
    Tier,
    tenancy_violations,
)

from .helpers import placed, run_jobs, run_until


def _nodes():
    return [Node("gpu-a100", "A100", 4, 32000, 256000, labels={"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}),
            Node("gpu-h100", "H100", 4, 32000, 256000, labels={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}),
            Node("cpu-0", "", 0, 32000, 256000)]


def _mask(nodes, plugin, job, *others):
    """``plugin``'s Filter mask for ``job`` once attached to a run of ``nodes``."""
    sim = Simulation(nodes, [job, *others], plugins=[plugin])
    plugin.attach(sim)   # as the run's start does
    return plugin.filter(None, sim.records[job.job_id]).tolist()


def test_cpu_pods_stay_off_tainted_gpu_nodes():
    # GpuNodeTaint: both GPU nodes get nvidia.com/gpu=present:NoSchedule; the GPU pod gets the
    # toleration (ExtendedResourceToleration), the CPU pod does not.
    nodes = _nodes()
    cpu = Job("cpu", 0, 10, cpu_milli=1000, memory_mib=100)
    gpu = Job("gpu", 0, 10, gpus_per_worker=1, gpu_milli=1000)
    assert _mask(nodes, GpuNodeTaint(), cpu) == [False, False, True]
    # The GPU pod tolerates the taint, so taints allow every node; the untainted CPU node is
    # then removed by the resource filter (it has no GPUs), not by this mask.
    assert _mask(nodes, GpuNodeTaint(), gpu) == [True, True, True]
    plugin = GpuNodeTaint()
    assert [plugin.node_taints(n) for n in nodes] == [(GPU_TAINT,), (GPU_TAINT,), ()]
    assert plugin.pod_tolerations(gpu) == (GPU_TOLERATION,) and plugin.pod_tolerations(cpu) == ()


def test_gpu_node_taint_adds_to_the_objects_own_taints_and_tolerations():
    # A GPU node keeps its own taints and gets the GPU taint once; a pod keeps its own tolerations.
    dedicated = Taint("dedicated", "ml", "NoSchedule")
    own = Node("own", "A100", 4, 32000, 256000, taints=(dedicated,))
    already = Node("already", "A100", 4, 32000, 256000, taints=(GPU_TAINT,))
    plugin = GpuNodeTaint()
    assert plugin.node_taints(own) == (dedicated, GPU_TAINT)
    assert plugin.node_taints(already) == (GPU_TAINT,)
    tolerant = Job("tol", cpu_milli=1, extras={TOLERATIONS: (Toleration("nvidia.com/gpu", "Exists"),)})
    assert plugin.pod_tolerations(tolerant) == (Toleration("nvidia.com/gpu", "Exists"),)
    # Exists with an empty effect tolerates every effect of that key: the CPU pod may use all three
    assert _mask(_nodes(), GpuNodeTaint(), tolerant) == [True, True, True]
    # with cpu_pods_tolerate every pod carries the GPU toleration
    assert _mask(_nodes(), GpuNodeTaint(cpu_pods_tolerate=True), Job("cpu", cpu_milli=1)) == [True, True, True]
    # the GPU pod tolerates the GPU taint but not 'dedicated': only 'already' and nothing else
    assert _mask([own, already], GpuNodeTaint(), Job("gpu", gpus_per_worker=1, gpu_milli=1000)) == [False, True]


def test_gpu_node_taint_scores_a_nodes_own_prefer_no_schedule_taint():
    # TaintToleration's Score on the nodes' own taints: n0 has one PreferNoSchedule taint the pod
    # does not tolerate, n1 none: counts (1, 0) -> 100 - 100 * 1 // 1 = 0 and 100. The two empty
    # nodes tie on NodeResourcesFit, so the 0 sends the pod to n1 (without it: n0, the first).
    soft = Taint("maintenance", "soon", "PreferNoSchedule")
    nodes = [Node("n0", "A100", 2, 32000, 256000, taints=(soft,)), Node("n1", "A100", 2, 32000, 256000)]
    job = Job("gpu", 0, 10, gpus_per_worker=1, gpu_milli=1000)
    assert [n for n, _ in placed(run_until(nodes, [job], "fifo", 1, plugins=[GpuNodeTaint()]), "gpu")] == [1]
    assert [n for n, _ in placed(run_until(nodes, [job], "fifo", 1), "gpu")] == [0]


def test_node_selector_picks_the_gpu_model():
    # nodeSelector is NodeAffinity's (Job.extras), beside the GPU taint: only gpu-h100 matches
    nodes = _nodes()
    job = Job("h100", 0, 10, gpus_per_worker=1, gpu_milli=1000,
              extras={NODE_SELECTOR: (("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"),)})
    sim = run_until(nodes, [job], "fifo", 5, plugins=[GpuNodeTaint(), NodeAffinity()])
    assert [n for n, _ in placed(sim, "h100")] == [1]


def test_constraints_place_cpu_pod_on_cpu_node_and_reject_when_none():
    nodes = _nodes()
    jobs = [Job("cpu", 0, 10, cpu_milli=1000, memory_mib=100)]
    sim = run_until(nodes, jobs, "fifo", 5, plugins=[GpuNodeTaint()])
    assert [n for n, _ in placed(sim, "cpu")] == [2]
    only_gpu = nodes[:2]
    res = run_jobs(only_gpu, jobs, "fifo", plugins=[GpuNodeTaint()])
    assert res.outcome("cpu").state is JobState.REJECTED
    sim = run_until(only_gpu, jobs, "fifo", 5, plugins=[GpuNodeTaint()])
    assert sim.records["cpu"].reason == ("no node its filters allow could ever host one worker: 2/2 node(s) refused "
                                         "by constraints")


def test_constraints_plugin_options():
    # --plugin constraints: CPU-only pods tolerate the GPU taint unless cpu_pods_tolerate=0
    nodes, jobs = _nodes(), [Job("cpu", cpu_milli=1)]
    assert make_plugin("constraints", nodes, jobs).cpu_pods_tolerate is True
    assert make_plugin("constraints:cpu_pods_tolerate=0", nodes, jobs).cpu_pods_tolerate is False
    with pytest.raises(InputError, match="cpu_pods_tolerate must be 0 or 1, got 2"):
        make_plugin("constraints:cpu_pods_tolerate=2", nodes, jobs)


def _tenancy_jobs():
    half = dict(gpus_per_worker=1, gpu_milli=500)
    return [Job("p1", 0, 100, tenant="acme", **half), Job("f1", 1, 100, tenant="free-user", **half),
            Job("p2", 2, 100, tenant="acme", **half), Job("f2", 3, 100, tenant="free-user", **half),
            Job("p3", 4, 100, tenant="acme", **half)]


def test_free_tier_never_shares_a_gpu_with_paying_tenant():
    nodes = [Node("n0", "T4", 2, 32000, 256000)]
    tiers = {"acme": Tier.STANDARD, "free-user": Tier.FREE}   # standard jobs may share among themselves
    placer = TenancyPlacer(tiers)
    r = run_until(nodes, _tenancy_jobs(), "fifo-skip", 5, plugins=[placer])
    # p1 -> GPU 0 (both empty, first); f1 must avoid GPU 0 -> GPU 1; p2 -> GPU 0; f2 -> GPU 1; p3 waits.
    assert {i: placed(r, i) for i in ("p1", "f1", "p2", "f2")} == {
        "p1": ((0, (0,)),), "f1": ((0, (1,)),), "p2": ((0, (0,)),), "f2": ((0, (1,)),)}
    assert r.records["p3"].state is JobState.PENDING
    assert tenancy_violations(r, placer) == []
    # without the constraint best-fit puts f1 on the half-used GPU 0, next to p1
    plain = run_until(nodes, _tenancy_jobs(), "fifo-skip", 5)
    assert ("n0", 0, ("f1", "p1")) in tenancy_violations(plain, placer)


def test_premium_jobs_never_share_a_gpu():
    # two GPUs; premium p1 takes GPU 0 whole though it asks for half; free f1 must avoid it
    # -> GPU 1; premium p2 finds no empty GPU (GPU 1 runs f1) and waits, though GPU 0 has
    # half free; f2 shares GPU 1 with f1 (free with free is allowed).
    nodes = [Node("n0", "T4", 2, 32000, 256000)]
    placer = TenancyPlacer({"acme": Tier.PREMIUM, "free-user": Tier.FREE})
    r = run_until(nodes, _tenancy_jobs(), "fifo-skip", 5, plugins=[placer])
    assert placed(r, "p1") == ((0, (0,)),) and placed(r, "f1") == ((0, (1,)),)
    assert placed(r, "f2") == ((0, (1,)),)
    assert r.records["p2"].state is JobState.PENDING and r.records["p3"].state is JobState.PENDING
    assert tenancy_violations(r, placer) == []
    # two premium halves on one GPU count as a violation
    plain = run_until(nodes, [Job("p1", 0, 100, tenant="acme", gpus_per_worker=1, gpu_milli=500),
                              Job("p2", 0, 100, tenant="acme", gpus_per_worker=1, gpu_milli=500)], "fifo-skip", 5)
    assert tenancy_violations(plain, placer) == [("n0", 0, ("p1", "p2"))]


def test_tier_mechanisms_documented():
    assert TIER_MECHANISM[Tier.STANDARD] == ("smaller MIG instance, or MPS with limits within one "
                                             "customer's (trusted) pool")
    assert set(TIER_MECHANISM) == set(Tier)
    assert "time-slicing" in TIER_MECHANISM[Tier.FREE] and not Tier.FREE.paying and Tier.STANDARD.paying


def test_demo_cluster_labels_carry_the_gfd_product_string():
    from lab01_cluster_sim.disciplines.demo import demo_cluster

    # GFD writes the full product name, not the short model name the simulator uses
    node = demo_cluster(1, 8)[0]
    assert node.gpu_model == "H100"
    assert node.labels == {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.count": "8"}
    assert demo_cluster(1, 4, gpu_model="T4")[0].labels["nvidia.com/gpu.product"] == "Tesla-T4"
    assert demo_cluster(1, 8, gpu_product="NVIDIA-H200")[0].labels["nvidia.com/gpu.product"] == "NVIDIA-H200"
    # an unknown model name is used as given (the book passes the GFD string as the model)
    assert demo_cluster(1, 8, gpu_model="NVIDIA-B200")[0].labels["nvidia.com/gpu.product"] == "NVIDIA-B200"


@pytest.mark.parametrize("kwargs", [{"mean_interarrival_s": float("nan")}, {"mean_interarrival_s": 0.0},
                                    {"median_duration_s": float("nan")}, {"n": -1}])
def test_demo_jobs_rejects_nan_and_non_positive(kwargs):
    from lab01_cluster_sim.disciplines.demo import demo_jobs

    with pytest.raises(InputError, match="demo_jobs"):
        demo_jobs(0, **{"n": 5, **kwargs})
