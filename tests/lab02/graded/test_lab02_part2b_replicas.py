"""Graded, Lab 02 part 2B: time-slicing replicas, and why allocation is not isolation.

Learner code: ``lab02_device_plugin.plugin.sharing.expand_replicas`` (one GPU advertised as
``replicas`` devices ``<uuid>::<n>``) and ``physical_device_id`` (Allocate maps a replica
back to its GPU). Upstream: NVIDIA k8s-device-plugin ``NewAnnotatedID`` (``%s::%d``).
"""

from __future__ import annotations

import pytest

from lab02_device_plugin.plugin.config import parse_config
from lab02_device_plugin.plugin.inventory import from_yaml_spec
from lab02_device_plugin.plugin.sharing import (
    AdvertisedDevice,
    advertise,
    allocate,
    expand_replicas,
    physical_device_id,
)

GPU_A = AdvertisedDevice("GPU-a", "GPU-a", "GPU-a", 0, numa_node=1, nvlink_island=0)


def time_slicing(replicas: int, rename: bool = False):
    return parse_config({"version": "v1", "sharing": {"timeSlicing": {
        "renameByDefault": rename,
        "resources": [{"name": "nvidia.com/gpu", "replicas": replicas}]}}})


@pytest.mark.points(2, part="2B", number="2B.1")
def test_physical_device_id_strips_the_replica_suffix():
    """physical_device_id: 'GPU-abc::3' -> 'GPU-abc'; an ID without '::<n>' is returned as is."""
    got = [physical_device_id(d) for d in ("GPU-abc::3", "GPU-abc::12", "GPU-abc", "MIG-5d1f::0")]
    assert all(isinstance(g, str) for g in got)  # the type, then the value
    assert got == ["GPU-abc", "GPU-abc", "GPU-abc", "MIG-5d1f"]


@pytest.mark.points(2, part="2B", number="2B.2")
def test_expand_replicas_four():
    """expand_replicas(gpu, 4): IDs GPU-a::0..3, replica numbers 0..3, everything else inherited."""
    reps = expand_replicas(GPU_A, 4)
    assert isinstance(reps, list) and all(type(r) is AdvertisedDevice for r in reps)
    assert [r.id for r in reps] == ["GPU-a::0", "GPU-a::1", "GPU-a::2", "GPU-a::3"]
    assert [r.replica for r in reps] == [0, 1, 2, 3]
    assert {(r.physical_id, r.gpu_uuid, r.numa_node, r.nvlink_island) for r in reps} == {("GPU-a", "GPU-a", 1, 0)}
    assert expand_replicas(GPU_A, 1) == [GPU_A]


@pytest.mark.points(2, part="2B", number="2B.3")
def test_one_gpu_advertised_as_four_units_all_seeing_the_same_gpu():
    """replicas: 4 on a 1-GPU node advertises 4 units; two of them allocated together still name one GPU."""
    inv = from_yaml_spec({"gpus": [{"model": "A100-80GB", "uuids": ["GPU-0000"]}]})
    config = time_slicing(4)
    resource = advertise(inv, config).resource("nvidia.com/gpu")
    assert [d.id for d in resource.devices] == [f"GPU-0000::{n}" for n in range(4)]
    # the isolation caveat: two "units" are the same card, listed once to the runtime
    alloc = allocate(resource, ["GPU-0000::0", "GPU-0000::3"], config)
    assert alloc.envs["NVIDIA_VISIBLE_DEVICES"] == "GPU-0000"


@pytest.mark.points(1, part="2B", number="2B.4")
def test_rename_by_default_gives_gpu_shared():
    """renameByDefault: the replicated resource is advertised as nvidia.com/gpu.shared (2 GPUs x 3 = 6 units)."""
    inv = from_yaml_spec({"gpus": [{"model": "T4", "count": 2, "uuids": ["GPU-x", "GPU-y"]}]})
    plan = advertise(inv, time_slicing(3, rename=True))
    assert plan.names() == ["nvidia.com/gpu.shared"]
    assert len(plan.resource("nvidia.com/gpu.shared").devices) == 6
