"""Which GPU sharing mechanism fits a workload: the course's decision table as code.

Chapter 5 of the course turns this into a widget. Requirements go in
(:class:`Requirements`); one of five answers comes out (:class:`Decision`):

``exclusive``
    Whole GPUs, one pod each: full isolation, the utilisation the workload brings.
``MIG``
    Multi-Instance GPU: hardware partitions with their own SMs, memory, L2 and copy
    engines; memory, fault and performance isolation (NVIDIA MIG User Guide). Only on
    MIG-capable GPUs, and only in the fixed profile sizes.
``MPS``
    Multi-Process Service: one shared CUDA context, kernels of several processes run
    concurrently; per-client limits on active threads (``CUDA_MPS_ACTIVE_THREAD_PERCENTAGE``)
    and pinned memory (Volta and later), but one fault domain: a fatal fault in one client
    affects all (NVIDIA MPS documentation).
``time-slicing``
    The device plugin advertises each GPU ``replicas`` times; contexts take turns on the
    whole GPU. No memory limit, per-pod GPU metrics are lost (NVIDIA GPU Operator
    documentation, "Time-Slicing GPUs in Kubernetes"). Fault isolation only in part: each
    pod has its own CUDA context, so an application fault (Xid 13, 31) ends only its
    process, but device-level faults (Xid 79, uncorrectable ECC, a reset) reach every pod;
    :data:`ISOLATION` counts "fault" as isolation from both, hence False.
``DRA``
    Dynamic Resource Allocation (Kubernetes ``resource.k8s.io``, structured parameters GA
    in Kubernetes 1.34): a pod claims a device by attributes (model, memory, a MIG
    profile or a shared GPU) and the scheduler picks one at allocation time, instead of
    integers fixed by per-node device-plugin config. The isolation is still that of the
    mechanism the claim lands on.

The rules are the ones the chapter argues for, in order: whole-GPU requests get whole
GPUs; workloads that need isolation from another tenant get MIG where the hardware has
it and a whole GPU where it does not; trusted co-tenants get MPS for concurrent
inference and time-slicing for bursty interactive work; with DRA available and pods of
varying sizes, DRA. Every answer carries the reason and the honest answer to "can I have
half a GPU?".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .errors import InputError
from .mig import canonical_model, mixed_resource_name, quantization_waste

MECHANISMS = ("exclusive", "MIG", "MPS", "time-slicing", "DRA")
WORKLOADS = ("training", "inference", "interactive", "batch")

#: GPU models and whether they support MIG (NVIDIA MIG User Guide, "Supported GPUs";
#: A10G, L4, L40S and T4 have no MIG). Keys are lower-case short names.
MIG_CAPABLE: dict[str, bool] = {
    "a100-40gb": True, "a100-80gb": True, "a30": True, "h100-80gb": True, "h100-94gb": True,
    "h200-141gb": True, "b200": True, "gb200": True,
    "t4": False, "v100": False, "a10": False, "a10g": False, "l4": False, "l40": False, "l40s": False,
}


@dataclass(frozen=True)
class Requirements:
    """What a workload needs from the GPU it lands on.

    Attributes:
        gpus: GPUs per pod; below 1 means a fraction of one GPU (e.g. 0.5), > 0.
        gpu_model: the GPU model of the node pool (a key of :data:`MIG_CAPABLE`).
        workload: one of :data:`WORKLOADS`.
        other_tenants: True when the GPU may be shared with another tenant (team,
            customer) that this one must not be affected by or see.
        memory_isolation: needs a hard cap on GPU memory that others cannot exceed.
        fault_isolation: a crash or Xid in a neighbour must not kill this workload.
        latency_guarantee: needs predictable latency (no neighbour may slow it down).
        dra_available: the cluster runs Kubernetes DRA with a GPU DRA driver.
        varying_sizes: pods of this kind ask for different slice sizes over time.
        memory_gb: GPU memory the pod needs (GB), if known; with MIG it picks the profile
            (:func:`lab02_device_plugin.mig.quantization_waste`), > 0.
    """

    gpus: float
    gpu_model: str = "a100-80gb"
    workload: str = "inference"
    other_tenants: bool = False
    memory_isolation: bool = False
    fault_isolation: bool = False
    latency_guarantee: bool = False
    dra_available: bool = False
    varying_sizes: bool = False
    memory_gb: float | None = None

    def __post_init__(self) -> None:
        if isinstance(self.gpus, bool) or not isinstance(self.gpus, (int, float)) \
                or not math.isfinite(self.gpus) or self.gpus <= 0:
            raise InputError(f"gpus: expected a number of GPUs > 0 (0.5 = half a GPU), got {self.gpus!r}")
        if self.gpu_model.lower() not in MIG_CAPABLE:
            raise InputError(f"gpu_model: expected one of {sorted(MIG_CAPABLE)}, got {self.gpu_model!r}")
        if self.memory_gb is not None and (isinstance(self.memory_gb, bool)
                                           or not isinstance(self.memory_gb, (int, float))
                                           or not math.isfinite(self.memory_gb) or self.memory_gb <= 0):
            raise InputError(f"memory_gb: expected GPU memory in GB > 0 (or None), got {self.memory_gb!r}")
        if self.workload not in WORKLOADS:
            raise InputError(f"workload: expected one of {list(WORKLOADS)}, got {self.workload!r}")

    @property
    def needs_isolation(self) -> bool:
        """True when any hard isolation is required or another tenant shares the GPU."""
        return self.other_tenants or self.memory_isolation or self.fault_isolation or self.latency_guarantee


@dataclass(frozen=True)
class Decision:
    """The recommended mechanism, why, and what "half a GPU" means with it.

    Attributes:
        mechanism: one of :data:`MECHANISMS`.
        reason: one or two sentences saying which requirement decided it.
        half_gpu: the honest answer to "can this pod have half a GPU?".
        request: what the pod puts in ``resources.limits`` (extended resources are integers).
        isolates: which of memory, fault, performance the mechanism isolates.
    """

    mechanism: str
    reason: str
    half_gpu: str
    request: str
    isolates: dict[str, bool] = field(default_factory=dict)


#: Isolation each mechanism gives (memory, fault, performance); sources in the module docstring.
ISOLATION: dict[str, dict[str, bool]] = {
    "exclusive": {"memory": True, "fault": True, "performance": True},
    "MIG": {"memory": True, "fault": True, "performance": True},
    "MPS": {"memory": True, "fault": False, "performance": False},
    "time-slicing": {"memory": False, "fault": False, "performance": False},
    "DRA": {"memory": False, "fault": False, "performance": False},  # depends on what it lands on
}

#: How finely each mechanism can divide one GPU, on an ordinal axis for the chapter's figure:
#: 1 = whole GPUs only, 2 = a few fixed parts (MIG: up to 7 instances), 3 = any share (MPS's
#: thread percentage), a bit further for time-slicing (any number of replicas, no limits at all).
PACKING_GRANULARITY: dict[str, float] = {"exclusive": 1.0, "MIG": 2.0, "MPS": 3.0, "time-slicing": 3.4}


_HALF_MIG = ("No MIG profile is exactly half: a 3g profile gets 3/7 of the SMs and 4/8 of the memory, "
             "a 4g profile 4/7 and 4/8. A GPU holds two 3g (start slots 0 and 4) or one 4g plus one "
             "3g (NVIDIA MIG User Guide, supported profiles). Ask for the smallest profile whose memory "
             "fits (chapter 3) and accept the quantization waste.")
_HALF_MPS = ("Close: CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50 caps the client's SMs and a pinned-memory "
             "limit caps its memory, but the two halves share one fault domain and the memory "
             "bandwidth and L2, so the half is a limit, not a partition.")
_HALF_TS = ("No: time-slicing with replicas=2 gives each pod the whole GPU for half the time at best, "
            "with no memory limit; a neighbour can take all the memory or all the time.")
_HALF_EXCL = ("Not on this GPU: without MIG there is no isolated half. Give a whole GPU, or move the "
              "workload to a smaller GPU model or to a MIG-capable node pool.")


def _mig_profile(req: Requirements) -> tuple[str, float, str | None] | None:
    """The smallest MIG profile whose memory covers ``req.memory_gb`` (the rule the answer
    gives: memory decides, SMs come with it), its share of the SMs, and the smallest profile
    that also covers ``req.gpus`` of the SMs when that one is bigger (else None).

    None when the GPU model has no profile table, the memory is unknown, or nothing fits.
    Profiles come from :func:`lab02_device_plugin.mig.quantization_waste` (``+me`` excluded).
    """
    if req.memory_gb is None or canonical_model(req.gpu_model) is None:
        return None
    try:
        by_memory = quantization_waste(req.gpu_model, req.memory_gb, 0.0)
    except InputError:
        return None
    try:
        with_sms = quantization_waste(req.gpu_model, req.memory_gb, min(req.gpus, 1.0)).profile.name
    except InputError:
        with_sms = None
    bigger = with_sms if with_sms != by_memory.profile.name else None
    return by_memory.profile.name, float(by_memory.profile.compute_fraction), bigger


def decide(req: Requirements) -> Decision:
    """Apply the chapter's decision table to ``req`` (rules in the module docstring).

    Raises:
        InputError: only through :class:`Requirements` validation.
    """
    mig = MIG_CAPABLE[req.gpu_model.lower()]
    if req.gpus >= 1:
        whole = math.ceil(req.gpus - 1e-9)
        note = "" if float(req.gpus).is_integer() else f" ({req.gpus} rounded up: extended resources are integers)"
        return Decision("exclusive", f"The pod needs at least one whole GPU{note}; sharing would only "
                        "slow it down.", "Not asked: the pod uses whole GPUs.",
                        f"nvidia.com/gpu: {whole}", ISOLATION["exclusive"])
    if req.dra_available and req.varying_sizes and not req.needs_isolation:
        return Decision("DRA", "Pods ask for different sizes over time and the cluster has DRA: claim a "
                        "device by attributes and let the scheduler choose at allocation time, rather "
                        "than fixing replicas or MIG layouts per node.",
                        "A claim can ask for a share or a MIG device by its attributes; what it gets "
                        "is still one of the mechanisms below, with their isolation.",
                        "resourceClaims: a ResourceClaimTemplate for the GPU device class",
                        ISOLATION["DRA"])
    if req.needs_isolation:
        needs = [name for name, flag in (("another tenant shares the GPU", req.other_tenants),
                                         ("memory isolation", req.memory_isolation),
                                         ("fault isolation", req.fault_isolation),
                                         ("a latency guarantee", req.latency_guarantee)) if flag]
        why = ", ".join(needs)
        if mig:
            request = "nvidia.com/mig-<profile>: 1 (mixed strategy) or nvidia.com/gpu: 1 (single)"
            reason = (f"Hard isolation is needed ({why}) and {req.gpu_model} supports MIG: "
                      "each instance has its own SMs, memory and L2.")
            found = _mig_profile(req)
            if found is not None:
                profile, sm_share, bigger = found
                request = f"{mixed_resource_name(profile)}: 1 (mixed strategy)"
                reason += (f" The smallest profile whose memory covers {req.memory_gb:g} GB is {profile} "
                           f"({sm_share:.0%} of the SMs).")
                if bigger is not None:
                    reason += (f" That is less than the {req.gpus:.0%} of the SMs asked; {bigger} covers "
                               "both if the compute share matters more than the waste.")
            return Decision("MIG", reason, _HALF_MIG, request, ISOLATION["MIG"])
        return Decision("exclusive", f"Hard isolation is needed ({why}) but {req.gpu_model} has no MIG; "
                        "MPS and time-slicing do not isolate faults, so only a whole GPU does.",
                        _HALF_EXCL, "nvidia.com/gpu: 1", ISOLATION["exclusive"])
    if req.workload in ("inference", "batch"):
        pct = math.ceil(req.gpus * 100 - 1e-9)
        return Decision("MPS", "Trusted co-tenants running many small kernels: MPS runs them "
                        f"concurrently in one context; set CUDA_MPS_ACTIVE_THREAD_PERCENTAGE={pct} and a "
                        "pinned-memory limit per client.", _HALF_MPS,
                        "nvidia.com/gpu: 1 from an MPS-shared resource (sharing.mps.resources[].replicas)",
                        ISOLATION["MPS"])
    return Decision("time-slicing", "Bursty or interactive work by one team that can tolerate a "
                    "neighbour: time-slicing packs idle notebooks onto one card at no isolation.",
                    _HALF_TS, "nvidia.com/gpu.shared: 1 (time-slicing with renameByDefault)",
                    ISOLATION["time-slicing"])


def decision_table() -> list[tuple[str, Requirements, Decision]]:
    """The chapter's worked cases: a label, the requirements and the decision, in order."""
    cases = [
        ("8-GPU training job", Requirements(gpus=8, workload="training")),
        ("regulated tenant, half a GPU, H100", Requirements(gpus=0.5, gpu_model="h100-80gb",
                                                             other_tenants=True, memory_gb=30)),
        ("regulated tenant, half a GPU, L40S", Requirements(gpus=0.5, gpu_model="l40s",
                                                             other_tenants=True)),
        ("team's inference replicas, A100", Requirements(gpus=0.25, workload="inference")),
        ("data-science notebooks", Requirements(gpus=0.25, workload="interactive")),
        ("varying sizes with DRA", Requirements(gpus=0.5, dra_available=True, varying_sizes=True)),
    ]
    return [(label, req, decide(req)) for label, req in cases]
