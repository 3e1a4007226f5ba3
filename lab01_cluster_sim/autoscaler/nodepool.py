"""Karpenter-style NodePools.

Field names follow Karpenter's ``NodePool`` (karpenter.sh/v1): ``limits`` (here on GPUs),
``disruption.consolidationPolicy`` (``WhenEmpty`` or ``WhenEmptyOrUnderutilized``),
``disruption.consolidateAfter``, ``template.spec.expireAfter``, and the
``karpenter.sh/capacity-type`` requirement (``on-demand`` or ``spot``). Timing parameters
that Karpenter does not own (boot, device plugin registration, image pulls) are ours.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from lab01_cluster_sim.autoscaler.catalogue import InstanceType, check_unique
from lab01_cluster_sim.errors import InputError

CONSOLIDATION_POLICIES = ("WhenEmpty", "WhenEmptyOrUnderutilized", "Never")
CAPACITY_TYPES = ("on-demand", "spot")


@dataclass(frozen=True)
class NodePool:
    """A NodePool.

    Attributes:
        name: its name.
        instance_types: types it may launch.
        limit_gpus: most GPUs its nodes may hold in total (``limits``); inf = no limit.
        consolidation_policy: one of :data:`CONSOLIDATION_POLICIES` ("Never" = off).
        consolidate_after_s: how long a node must be empty (or have stayed unchanged) first, s.
        expire_after_s: node lifetime before it is replaced (``expireAfter``), s; inf = never.
        capacity_type: ``"on-demand"`` or ``"spot"``.
        boot_delay_s: launch -> kubelet up, s (assumed default 60 s).
        registration_delay_s: kubelet up -> device plugin registered and GPUs allocatable, s
            (assumed default 15 s).
        timeslice_replicas: time-slicing replicas configured on its nodes (1 = unsliced).
        prepulled_images: images warm on its nodes from the moment they are ready (a
            pre-pull DaemonSet or an image baked into the node image).
        pull_mib_per_s: image pull bandwidth, MiB/s (default 128 MiB/s, about 1 Gb/s).
        extract_mib_per_s: layer extraction rate, MiB of image per s (assumed default
            256 MiB/s: containerd decompresses gzip layers on one core and writes them to
            disk, typically a few hundred MB/s); a first pull costs download plus extraction.

    Raises:
        InputError: an unknown policy or capacity type, negative or NaN times, no instance
            types, an ``expire_after_s`` not longer than the ready delay (the node would
            expire before it could run anything).
    """

    name: str
    instance_types: tuple[InstanceType, ...]
    limit_gpus: float = math.inf
    consolidation_policy: str = "WhenEmpty"
    consolidate_after_s: float = 30.0
    expire_after_s: float = math.inf
    capacity_type: str = "on-demand"
    boot_delay_s: float = 60.0
    registration_delay_s: float = 15.0
    timeslice_replicas: int = 1
    prepulled_images: tuple[str, ...] = ()
    pull_mib_per_s: float = 128.0
    extract_mib_per_s: float = 256.0

    def __post_init__(self) -> None:
        where = f"nodepool {self.name!r}"
        if not self.instance_types:
            raise InputError(f"{where}: instance_types must not be empty")
        check_unique(self.instance_types)
        if self.consolidation_policy not in CONSOLIDATION_POLICIES:
            raise InputError(f"{where}: consolidationPolicy must be one of {', '.join(CONSOLIDATION_POLICIES)}, "
                             f"got {self.consolidation_policy!r}")
        if self.capacity_type not in CAPACITY_TYPES:
            raise InputError(f"{where}: capacity type must be one of {', '.join(CAPACITY_TYPES)}, got {self.capacity_type!r}")
        for attr in ("limit_gpus", "consolidate_after_s", "expire_after_s"):
            if not getattr(self, attr) >= 0:   # also rejects NaN
                raise InputError(f"{where}: {attr} must be >= 0 (inf = none), got {getattr(self, attr)}")
        for attr in ("boot_delay_s", "registration_delay_s"):
            value = getattr(self, attr)
            if not (value >= 0 and math.isfinite(value)):
                raise InputError(f"{where}: {attr} must be a finite number >= 0, got {value}")
        if self.timeslice_replicas < 1 or not (0 < self.pull_mib_per_s < math.inf and
                                               0 < self.extract_mib_per_s < math.inf):
            raise InputError(f"{where}: timeslice_replicas must be >= 1, pull_mib_per_s and extract_mib_per_s "
                             f"finite and > 0")
        if self.expire_after_s <= self.ready_delay_s:
            # every node would expire before (or as) it becomes schedulable: the pool would
            # launch replacement after replacement and never run a pod
            raise InputError(f"{where}: expire_after_s must exceed boot_delay_s + registration_delay_s = "
                             f"{self.ready_delay_s:g} s (nodes would expire before they are ready), "
                             f"got {self.expire_after_s:g}")

    @property
    def ready_delay_s(self) -> float:
        """Launch -> schedulable: boot + device plugin registration, s."""
        return self.boot_delay_s + self.registration_delay_s
