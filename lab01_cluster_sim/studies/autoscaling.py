"""Ready-made autoscaler scenarios: the workshop's mini-lab and a bursty demo."""

from __future__ import annotations

from lab01_cluster_sim.autoscaler.catalogue import DEFAULT_CATALOGUE, InstanceType
from lab01_cluster_sim.autoscaler.nodepool import NodePool
from lab01_cluster_sim.autoscaler.plugin import Autoscaler
from lab01_cluster_sim.autoscaler.pods import AutoscalerResult, Pod, PodTracker, StaticNode, pod_jobs, static_nodes
from lab01_cluster_sim.policies.generic import MostAllocated
from lab01_cluster_sim.sharing_modes import TimeSlicing, TimeSlicingParams
from lab01_cluster_sim.simulate import Simulation

MINI_LAB_IMAGE = "nvcr.io/nvidia/k8s/cuda-sample:vectoradd"


def one_gpu_types(catalogue: tuple[InstanceType, ...] = DEFAULT_CATALOGUE) -> tuple[InstanceType, ...]:
    """Instance types with exactly one GPU."""
    return tuple(t for t in catalogue if t.gpus == 1)


def mini_lab(*, replicas: int = 4, pods: int = 5, duration_s: float = 600.0, image_gib: float = 1.0,
             boot_delay_s: float = 60.0, registration_delay_s: float = 15.0, pull_mib_per_s: float = 128.0,
             prepull: bool = False, consolidate_after_s: float = 30.0,
             overflow_duration_s: float | None = None) -> AutoscalerResult:
    """The workshop's mini-lab.

    A static 1-GPU node (T4) is time-sliced to ``replicas`` replicas and already has the
    image; ``pods`` pods each request one ``nvidia.com/gpu`` at t=0. ``replicas`` of them
    land on that card; the others stay pending and make the autoscaler launch the cheapest
    unsliced 1-GPU instance (g4dn.xlarge in the default catalogue), where they run once the
    node is ready (``boot_delay_s + registration_delay_s``) and, unless ``prepull``, the
    image is pulled and extracted (``image_gib x 1024 x (1 / pull_mib_per_s + 1 / 256)`` s,
    256 MiB/s being the NodePool's assumed extraction rate). The new node is removed
    ``consolidate_after_s`` after it empties (WhenEmpty).

    With the defaults: pods 1-4 start at t=0 on the sliced card and share its time, each
    running ``timeslice_slowdown(4)`` = 4.1x slower (600 s of work ends at 2460 s); pod 5
    binds at 60 + 15 = 75 s, starts at 75 + 1024 / 128 + 1024 / 256 = 87 s (75 s with
    ``prepull``) and, alone on its card, ends at 687 s.

    ``overflow_duration_s`` is the run time of the pods beyond ``replicas`` (pod 5 with the
    defaults), s; None means ``duration_s``. The workshop's step 3.5 leaves pod 5 running:
    with ``overflow_duration_s=14400`` pod 5 ends at 87 + 14400 = 14487 s and the second
    node, never empty before then, is removed at 14487 + 30 = 14517 s.
    """
    static = StaticNode("gpu-node-1", "T4", 1, timeslice_replicas=replicas, cached_images=(MINI_LAB_IMAGE,),
                        pull_mib_per_s=pull_mib_per_s)
    pool = NodePool("gpu-default", one_gpu_types(), consolidation_policy="WhenEmpty",
                    consolidate_after_s=consolidate_after_s, boot_delay_s=boot_delay_s,
                    registration_delay_s=registration_delay_s, pull_mib_per_s=pull_mib_per_s,
                    prepulled_images=(MINI_LAB_IMAGE,) if prepull else ())
    overflow = duration_s if overflow_duration_s is None else overflow_duration_s
    workload = [Pod(f"pod-{i + 1}", 1, duration_s if i < replicas else overflow, 0.0, "mini-lab", 500, 1024,
                    MINI_LAB_IMAGE, image_gib)
                for i in range(pods)]
    cluster, fleet = static_nodes([static])
    scaler = Autoscaler([pool], fleet)
    tracker = PodTracker(workload, scaler)
    Simulation(cluster, pod_jobs(workload), MostAllocated(), "gang", "fifo-skip",
               plugins=[scaler, TimeSlicing(TimeSlicingParams()), tracker]).run()
    return tracker.result()


def burst_pods(seed: int = 0, n: int = 60, mean_interarrival_s: float = 30.0, workloads: int = 3) -> list[Pod]:
    """A seeded burst: ``n`` pods (1 GPU with probability 0.6, 4 with 0.3, 8 with 0.1),
    exponential gaps, log-normal durations (median 15 min, sigma 0.8), spread over
    ``workloads`` workloads, two container images (5 and 12 GiB)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    t = np.cumsum(rng.exponential(mean_interarrival_s, n))
    gpus = rng.choice([1, 4, 8], size=n, p=[0.6, 0.3, 0.1])
    dur = np.maximum(60.0, np.round(rng.lognormal(np.log(900.0), 0.8, n)))
    wl = rng.integers(0, workloads, n)
    img = rng.integers(0, 2, n)
    return [Pod(f"pod-{i:04d}", int(gpus[i]), float(dur[i]), float(round(t[i], 3)), f"workload-{wl[i]}",
                2000 * int(gpus[i]), 8192 * int(gpus[i]), ("trainer:v1", "llm-server:v2")[img[i]],
                (5.0, 12.0)[img[i]])
            for i in range(n)]
