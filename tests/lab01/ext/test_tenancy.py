"""Labels/nodeSelector, taints/tolerations, and the tenancy-tier constraint."""

from __future__ import annotations

import pytest

from lab01_cluster_sim.corev1 import Taint, Toleration
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.model import Job, JobState, Node
from lab01_cluster_sim.tenancy import (
    GPU_TAINT,
    TIER_MECHANISM,
    ConstraintFilter,
    PodConstraints,
    TenancyPlacer,
    Tier,
    tenancy_violations,
)

from .helpers import placed, run_jobs, run_until


def _nodes():
    return [Node("gpu-a100", "A100", 4, 32000, 256000, labels={"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}),
            Node("gpu-h100", "H100", 4, 32000, 256000, labels={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}),
            Node("cpu-0", "", 0, 32000, 256000)]


def test_cpu_pods_stay_off_tainted_gpu_nodes():
    nodes = _nodes()
    f = ConstraintFilter(nodes)                     # default: GPU_TAINT on both GPU nodes
    cpu = Job("cpu", 0, 10, cpu_milli=1000, memory_mib=100)
    gpu = Job("gpu", 0, 10, gpus_per_worker=1, gpu_milli=1000)
    assert f.mask(cpu).tolist() == [False, False, True]
    # The GPU pod gets the GPU toleration, so taints allow every node; the untainted CPU node
    # is then removed by the resource filter (it has no GPUs), not by this mask.
    assert f.mask(gpu).tolist() == [True, True, True]


def test_cpu_pods_tolerating_taint_may_use_gpu_nodes_and_selector_picks_model():
    nodes = _nodes()
    f = ConstraintFilter(nodes, constraints={
        "tol": PodConstraints(tolerations=(Toleration("nvidia.com/gpu", "Exists"),)),
        "h100": PodConstraints(node_selector={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"})})
    assert f.mask(Job("tol", cpu_milli=1)).tolist() == [True, True, True]
    assert f.mask(Job("h100", gpus_per_worker=1, gpu_milli=1000)).tolist() == [False, True, False]
    with pytest.raises(InputError, match="unknown node"):
        ConstraintFilter(nodes, taints={"nope": (GPU_TAINT,)})


def test_constraints_place_cpu_pod_on_cpu_node_and_reject_when_none():
    nodes = _nodes()
    jobs = [Job("cpu", 0, 10, cpu_milli=1000, memory_mib=100)]
    sim = run_until(nodes, jobs, "fifo", 5, plugins=[ConstraintFilter(nodes)])
    assert [n for n, _ in placed(sim, "cpu")] == [2]
    only_gpu = nodes[:2]
    res = run_jobs(only_gpu, jobs, "fifo", plugins=[ConstraintFilter(only_gpu)])
    assert res.outcome("cpu").state is JobState.REJECTED


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
