"""Pure sharing logic: resources, replica IDs, preferred allocation, Allocate responses."""

from __future__ import annotations

import pytest
import yaml

from lab02_device_plugin.errors import InputError
from lab02_device_plugin.plugin.config import parse_config
from lab02_device_plugin.plugin.inventory import Gpu, Inventory, MigDevice, from_yaml_spec
from lab02_device_plugin.plugin.sharing import (
    AllocationError, advertise, allocate, expand_replicas, list_and_watch_snapshot,
    physical_device_id, preferred_allocation, validate_request,
)


def cfg(text: str = ""):
    return parse_config(yaml.safe_load(text) if text else None)


def ts(replicas: int, fail: bool = False, rename: bool = False, extra: str = ""):
    return cfg(f"""
{extra}
sharing:
  timeSlicing:
    renameByDefault: {str(rename).lower()}
    failRequestsGreaterThanOne: {str(fail).lower()}
    resources: [{{name: nvidia.com/gpu, replicas: {replicas}}}]
""")


def gpus(n: int, **kw) -> Inventory:
    return Inventory(tuple(Gpu(i, f"GPU-{i}", "NVIDIA H100 80GB HBM3", 81559, minor_number=i, **kw)
                           for i in range(n)))


def mig_node() -> Inventory:
    """GPU 0: 3g.40gb + 2 x 1g.10gb (MIG); GPU 1: 2 x 1g.10gb (MIG); GPU 2: no MIG."""
    def m(g, j, p):
        return MigDevice(j, p, j + 1, 0, f"MIG-{g}{j}", 10000)
    return Inventory((
        Gpu(0, "GPU-0", "NVIDIA H100 80GB HBM3", 81559, True,
            (m(0, 0, "3g.40gb"), m(0, 1, "1g.10gb"), m(0, 2, "1g.10gb")), numa_node=0),
        Gpu(1, "GPU-1", "NVIDIA H100 80GB HBM3", 81559, True, (m(1, 0, "1g.10gb"), m(1, 1, "1g.10gb"))),
        Gpu(2, "GPU-2", "NVIDIA H100 80GB HBM3", 81559, False),
    ))


# ---------------------------------------------------------------- advertise

def test_whole_gpus_by_default():
    plan = advertise(gpus(2), cfg())
    (r,) = plan.resources
    assert (r.name, r.socket_name, r.replicas) == ("nvidia.com/gpu", "nvidia-gpu.sock", 1)
    assert [d.id for d in r.devices] == ["GPU-0", "GPU-1"]


def test_time_slicing_replicas_4_gives_4_ids_for_one_gpu():
    (r,) = advertise(gpus(1), ts(4)).resources
    assert [d.id for d in r.devices] == ["GPU-0::0", "GPU-0::1", "GPU-0::2", "GPU-0::3"]
    assert {d.physical_id for d in r.devices} == {"GPU-0"}
    assert r.sharing == "time-slicing" and r.is_shared


def test_rename_by_default_appends_shared():
    (r,) = advertise(gpus(1), ts(2, rename=True)).resources
    assert (r.name, r.base_name, r.socket_name) == \
        ("nvidia.com/gpu.shared", "nvidia.com/gpu", "nvidia-gpu.shared.sock")


def test_replicas_inherit_numa_and_island():
    inv = from_yaml_spec({"gpus": [{"model": "T4", "count": 2, "numa_node": [0, 1]}],
                          "nvlink_islands": [[0], [1]]})
    (r,) = advertise(inv, ts(3)).resources
    assert [d.numa_node for d in r.devices] == [0, 0, 0, 1, 1, 1]
    assert [d.nvlink_island for d in r.devices] == [0, 0, 0, 1, 1, 1]


def test_expand_replicas_and_physical_id():
    (d,) = advertise(gpus(1), cfg()).resources[0].devices
    reps = expand_replicas(d, 3)
    assert [(x.id, x.replica) for x in reps] == [("GPU-0::0", 0), ("GPU-0::1", 1), ("GPU-0::2", 2)]
    assert expand_replicas(d, 1) == [d]
    assert physical_device_id("GPU-0::2") == "GPU-0"
    assert physical_device_id("MIG-GPU-abc/3/0::1") == "MIG-GPU-abc/3/0"
    assert physical_device_id("GPU-0") == "GPU-0"


def test_mig_mixed_one_resource_per_profile():
    plan = advertise(mig_node(), cfg("flags: {migStrategy: mixed}"))
    assert plan.names() == ["nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "nvidia.com/mig-3g.40gb"]
    assert [d.id for d in plan.resource("nvidia.com/mig-1g.10gb").devices] == \
        ["MIG-01", "MIG-02", "MIG-10", "MIG-11"]
    assert plan.resource("nvidia.com/mig-1g.10gb").socket_name == "nvidia-mig-1g.10gb.sock"
    assert [d.id for d in plan.resource("nvidia.com/gpu").devices] == ["GPU-2"]
    # MIG devices take their parent's NUMA node.
    assert plan.resource("nvidia.com/mig-3g.40gb").devices[0].numa_node == 0


def test_mig_mixed_time_sliced_profile():
    plan = advertise(mig_node(), cfg("flags: {migStrategy: mixed}\nsharing: {timeSlicing: "
                                     "{resources: [{name: nvidia.com/mig-1g.10gb, replicas: 2}]}}"))
    r = plan.resource("nvidia.com/mig-1g.10gb")
    assert len(r.devices) == 8  # 4 MIG devices x 2
    assert r.devices[1].id == "MIG-01::1"


def test_mig_mixed_warns_about_mig_gpu_without_instances():
    inv = Inventory((Gpu(0, "GPU-0", "NVIDIA H100 80GB HBM3", 81559, True),))
    plan = advertise(inv, cfg("flags: {migStrategy: mixed}"))
    assert plan.resources == ()
    assert "has MIG enabled but no MIG devices" in plan.warnings[0]


def test_mig_none_lists_mig_gpus_as_full_gpus():
    (r,) = advertise(mig_node(), cfg()).resources
    assert [d.id for d in r.devices] == ["GPU-0", "GPU-1", "GPU-2"]


def test_mig_single_exposes_mig_devices_as_gpu():
    inv = Inventory((
        Gpu(0, "GPU-0", "A100", 40960, True, (MigDevice(0, "1g.5gb", 7, 0, "MIG-a", 4864),
                                              MigDevice(1, "1g.5gb", 8, 0, "MIG-b", 4864))),
        Gpu(1, "GPU-1", "A100", 40960, True, (MigDevice(0, "1g.5gb", 7, 0, "MIG-c", 4864),)),
    ))
    (r,) = advertise(inv, cfg("flags: {migStrategy: single}")).resources
    assert r.name == "nvidia.com/gpu"
    assert [d.id for d in r.devices] == ["MIG-a", "MIG-b", "MIG-c"]


@pytest.mark.parametrize("inv, msg", [
    (mig_node(), "all devices on the node must be configured with the same migEnabled value"),
    (Inventory((mig_node().gpus[0],)), "more than one MIG device type present on node"),
    (Inventory((mig_node().gpus[1], Gpu(1, "GPU-9", "H100", 1, True))),
     "device 1 has no MIG devices configured"),
])
def test_mig_single_errors(inv, msg):
    with pytest.raises(InputError, match=msg):
        advertise(inv, cfg("flags: {migStrategy: single}"))


def test_sharing_for_absent_resource_warns():
    plan = advertise(gpus(1), cfg("flags: {migStrategy: mixed}\nsharing: {timeSlicing: "
                                  "{resources: [{name: nvidia.com/mig-2g.20gb, replicas: 2}]}}"))
    assert "nvidia.com/mig-2g.20gb is not present" in plan.warnings[0]


# ---------------------------------------------------------------- snapshot

def test_snapshot_replicas_share_their_gpu_health():
    (r,) = advertise(gpus(2), ts(2)).resources
    snap = list_and_watch_snapshot(r, {"GPU-1"})
    assert [(s.id, s.health) for s in snap] == [
        ("GPU-0::0", "Healthy"), ("GPU-0::1", "Healthy"),
        ("GPU-1::0", "Unhealthy"), ("GPU-1::1", "Unhealthy")]


def test_snapshot_mig_device_follows_parent_gpu():
    r = advertise(mig_node(), cfg("flags: {migStrategy: mixed}")).resource("nvidia.com/mig-1g.10gb")
    snap = list_and_watch_snapshot(r, {"GPU-0"})
    assert [s.health for s in snap] == ["Unhealthy", "Unhealthy", "Healthy", "Healthy"]


# ---------------------------------------------------------------- validate / allocate

def test_user_case_a_10_replicas_request_20_rejected_when_fail_true():
    # 2 GPUs x 10 replicas = 20 units; a request for all 20 with failRequestsGreaterThanOne.
    (r,) = advertise(gpus(2), ts(10, fail=True)).resources
    ids = [d.id for d in r.devices]
    assert len(ids) == 20
    with pytest.raises(AllocationError, match="maximum request size for shared resources is 1; "
                                              "found 20"):
        validate_request(r, ids)
    assert len(validate_request(r, ids[:1])) == 1


def test_user_case_a_10_replicas_request_20_admitted_when_fail_false():
    (r,) = advertise(gpus(2), ts(10, fail=False)).resources
    ids = [d.id for d in r.devices]
    alloc = allocate(r, ids, ts(10))
    # 20 replicas of 2 GPUs: each GPU listed once.
    assert alloc.envs == {"NVIDIA_VISIBLE_DEVICES": "GPU-0,GPU-1"}


def test_unknown_and_repeated_ids():
    (r,) = advertise(gpus(1), cfg()).resources
    with pytest.raises(AllocationError, match="unknown device 'GPU-7'"):
        validate_request(r, ["GPU-0", "GPU-7"])
    with pytest.raises(AllocationError, match="listed twice"):
        validate_request(r, ["GPU-0", "GPU-0"])
    with pytest.raises(AllocationError, match="no device IDs"):
        validate_request(r, [])


def test_allocate_index_strategy_and_device_specs():
    c = cfg("flags: {plugin: {deviceIDStrategy: index, passDeviceSpecs: true}}")
    (r,) = advertise(gpus(4), c).resources
    alloc = allocate(r, ["GPU-3", "GPU-1"], c)
    assert alloc.envs == {"NVIDIA_VISIBLE_DEVICES": "3,1"}
    assert [d.host_path for d in alloc.devices] == [
        "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset",
        "/dev/nvidia3", "/dev/nvidia1"]


def test_allocate_mig_index_is_gpu_colon_mig():
    c = cfg("flags: {migStrategy: mixed, plugin: {deviceIDStrategy: index}}")
    r = advertise(mig_node(), c).resource("nvidia.com/mig-1g.10gb")
    assert allocate(r, ["MIG-11"], c).envs["NVIDIA_VISIBLE_DEVICES"] == "1:1"


def test_allocate_volume_mounts():
    c = cfg("flags: {plugin: {deviceListStrategy: volume-mounts}}")
    (r,) = advertise(gpus(2), c).resources
    alloc = allocate(r, ["GPU-1"], c)
    assert alloc.envs == {"NVIDIA_VISIBLE_DEVICES": "/var/run/nvidia-container-devices"}
    assert [(m.host_path, m.container_path, m.read_only) for m in alloc.mounts] == \
        [("/dev/null", "/var/run/nvidia-container-devices/GPU-1", True)]


def test_allocate_cdi_only_has_no_env():
    c = cfg("flags: {plugin: {deviceListStrategy: [cdi-annotations, cdi-cri]}}")
    (r,) = advertise(gpus(2), c).resources
    alloc = allocate(r, ["GPU-0", "GPU-1"], c)
    assert alloc.envs == {}
    assert alloc.cdi_devices == ("k8s.device-plugin.nvidia.com/gpu=GPU-0",
                                 "k8s.device-plugin.nvidia.com/gpu=GPU-1")
    ((key, value),) = alloc.annotations.items()
    assert key.startswith("cdi.k8s.io/nvidia-device-plugin_")
    assert value == "k8s.device-plugin.nvidia.com/gpu=GPU-0,k8s.device-plugin.nvidia.com/gpu=GPU-1"
    assert allocate(r, ["GPU-0", "GPU-1"], c) == alloc  # reproducible


def test_allocate_mps_env_and_mounts():
    c = cfg("sharing: {mps: {resources: [{name: nvidia.com/gpu, replicas: 4}]}}")
    (r,) = advertise(gpus(1), c).resources
    alloc = allocate(r, ["GPU-0::2"], c)
    assert alloc.envs == {"NVIDIA_VISIBLE_DEVICES": "GPU-0",
                          "CUDA_MPS_PIPE_DIRECTORY": "/run/nvidia/mps/nvidia.com/gpu/pipe"}
    assert [(m.host_path, m.container_path) for m in alloc.mounts] == [
        ("/run/nvidia/mps/nvidia.com/gpu/pipe", "/run/nvidia/mps/nvidia.com/gpu/pipe"),
        ("/run/nvidia/mps/shm", "/dev/shm")]
    with pytest.raises(AllocationError, match="found 2"):  # MPS default: fail > 1
        allocate(r, ["GPU-0::0", "GPU-0::1"], c)


def test_user_case_d_lost_gpu_other_three_allocatable():
    inv = gpus(4)
    left = inv.without("GPU-2")
    (r,) = advertise(left, cfg()).resources
    assert [d.id for d in r.devices] == ["GPU-0", "GPU-1", "GPU-3"]
    assert allocate(r, ["GPU-0", "GPU-1", "GPU-3"], cfg()).envs["NVIDIA_VISIBLE_DEVICES"] == \
        "GPU-0,GPU-1,GPU-3"
    with pytest.raises(AllocationError, match="unknown device 'GPU-2'"):
        allocate(r, ["GPU-2"], cfg())


# ---------------------------------------------------------------- preferred allocation

def test_user_case_b_two_units_on_two_distinct_gpus():
    (r,) = advertise(gpus(2), ts(4)).resources
    ids = [d.id for d in r.devices]
    assert preferred_allocation(r, ids, [], 2) == ["GPU-0::0", "GPU-1::0"]


def test_distributed_prefers_least_used_gpu():
    (r,) = advertise(gpus(2), ts(4)).resources
    # GPU-0 has 3 replicas in use (only ::3 free), GPU-1 has 1 in use: take GPU-1 first
    # (1 used), then GPU-1 again (1 + 1 = 2 used < 3) ... ties broken toward a fresh GPU.
    avail = ["GPU-0::3", "GPU-1::1", "GPU-1::2", "GPU-1::3"]
    assert preferred_allocation(r, avail, [], 2) == ["GPU-1::1", "GPU-1::2"]
    # used counts: GPU-0 3, GPU-1 1 -> pick GPU-1 (1->2), GPU-1 (2->3), then tie 3 vs 3:
    # GPU-0 not yet picked wins.
    assert preferred_allocation(r, avail, [], 3) == ["GPU-1::1", "GPU-1::2", "GPU-0::3"]


def test_packed_prefers_most_used_gpu():
    (r,) = advertise(gpus(2), ts(4)).resources
    avail = ["GPU-0::3", "GPU-1::1", "GPU-1::2", "GPU-1::3"]
    assert preferred_allocation(r, avail, [], 2, policy="packed") == ["GPU-0::3", "GPU-1::1"]


def test_whole_gpus_stay_in_one_nvlink_island():
    inv = from_yaml_spec({"gpus": [{"model": "H100-80GB", "count": 8,
                                    "numa_node": [0, 0, 0, 0, 1, 1, 1, 1]}],
                          "nvlink_islands": [[0, 1, 2, 3], [4, 5, 6, 7]]})
    (r,) = advertise(inv, cfg()).resources
    ids = [d.id for d in r.devices]
    # GPUs 1 and 2 taken: a 4-GPU request fits only island {4..7} (score 6 x 100).
    avail = [ids[i] for i in (0, 3, 4, 5, 6, 7)]
    assert preferred_allocation(r, avail, [], 4) == [ids[4], ids[5], ids[6], ids[7]]
    # must-include GPU 0: the best 2-set is {0, 3} (same island, 100) not {0, 4} (10).
    assert preferred_allocation(r, avail, [ids[0]], 2) == [ids[0], ids[3]]
    # must-include GPUs 0 and 4 (different islands): honoured; the rest is chosen around them.
    got = preferred_allocation(r, avail, [ids[0], ids[4]], 3)
    assert got[:2] == [ids[0], ids[4]] and len(got) == 3


def test_preferred_allocation_errors():
    (r,) = advertise(gpus(2), cfg()).resources
    with pytest.raises(AllocationError, match="unknown device 'GPU-9'"):
        preferred_allocation(r, ["GPU-0", "GPU-9"], [], 1)
    with pytest.raises(AllocationError, match="not enough available devices"):
        preferred_allocation(r, ["GPU-0"], [], 2)


def test_large_node_greedy_path_still_finds_the_free_island():
    # 16 GPUs in islands {0..7} {8..15}; GPU 0 is taken; 8 GPUs asked. C(15, 8) = 6435 sets
    # exceed EXHAUSTIVE_LIMIT (5000), so the seeded greedy search runs: seeding at GPU 8 grows
    # the whole second island (28 pairs x 100 = 2800) which beats any set spanning islands
    # (GPUs 1..7 + one more: 21 x 100 + 7 x 10 = 2170).
    from lab02_device_plugin.plugin.sharing import EXHAUSTIVE_LIMIT
    import math
    assert math.comb(15, 8) > EXHAUSTIVE_LIMIT
    inv = from_yaml_spec({"gpus": [{"model": "H100-80GB", "count": 16}],
                          "nvlink_islands": [list(range(8)), list(range(8, 16))]})
    (r,) = advertise(inv, cfg()).resources
    ids = [d.id for d in r.devices]
    assert preferred_allocation(r, ids[1:], [], 8) == ids[8:]
    # with a must-include in the first island, the rest of that island is filled first
    got = preferred_allocation(r, ids[1:], [ids[3]], 8)
    assert got[0] == ids[3] and set(got[:7]) == set(ids[1:8])


@pytest.mark.parametrize("inventory, config, expected", [
    # 8 GPUs x 4 replicas
    ("inventory-h100x8.yaml", "time-slicing.yaml", {"nvidia.com/gpu": 32}),
    # 8 GPUs x 10 replicas, renamed
    ("inventory-h100x8.yaml", "time-slicing-renamed.yaml", {"nvidia.com/gpu.shared": 80}),
    ("inventory-h100x8.yaml", "mps.yaml", {"nvidia.com/gpu": 32}),
    ("inventory-1gpu.yaml", "time-slicing.yaml", {"nvidia.com/gpu": 4}),
    # GPU 0: 3g + 2g + 2 x 1g; GPU 1: 7 x 1g -> 9 x 1g.10gb x 2 replicas = 18
    ("inventory-h100-mig.yaml", "mig-mixed.yaml",
     {"nvidia.com/mig-1g.10gb": 18, "nvidia.com/mig-2g.20gb": 1, "nvidia.com/mig-3g.40gb": 1}),
])
def test_shipped_examples_together(inventory, config, expected):
    from lab02_device_plugin.examples import example_path
    from lab02_device_plugin.plugin.config import load_config
    from lab02_device_plugin.plugin.discovery import load_inventory

    plan = advertise(load_inventory(example_path(inventory)), load_config(example_path(config)))
    assert {r.name: len(r.devices) for r in plan.resources} == expected
    assert plan.warnings == ()


def test_shipped_mig_single_refuses_a_mixed_layout():
    from lab02_device_plugin.examples import example_path
    from lab02_device_plugin.plugin.config import load_config
    from lab02_device_plugin.plugin.discovery import load_inventory

    with pytest.raises(InputError, match="more than one MIG device type present on node"):
        advertise(load_inventory(example_path("inventory-h100-mig.yaml")),
                  load_config(example_path("mig-single.yaml")))


def test_real_a100_dump_under_each_mig_strategy(nvidia_smi_dir):
    from lab02_device_plugin.plugin.discovery import load_inventory

    inv = load_inventory(nvidia_smi_dir / "a100-sxm4-80gb-mig.q.xml")  # 1 GPU, 4 x 1g.20gb
    names = {s: {r.name: [d.id for d in r.devices] for r in
                 advertise(inv, cfg(f"flags: {{migStrategy: {s}}}")).resources}
             for s in ("none", "single", "mixed")}
    gpu = "GPU-513536b6-7d19-9063-b049-1e69664bb298"
    migs = [f"MIG-{gpu}/{gi}/0" for gi in (3, 4, 5, 6)]
    assert names["none"] == {"nvidia.com/gpu": [gpu]}
    assert names["single"] == {"nvidia.com/gpu": migs}
    assert names["mixed"] == {"nvidia.com/mig-1g.20gb": migs}


def test_mps_daemon_commands():
    from lab02_device_plugin.plugin.sharing import mps_daemon_commands
    inv = gpus(2)  # 81559 MiB each
    c = cfg("sharing: {mps: {resources: [{name: nvidia.com/gpu, replicas: 4}]}}")
    (r,) = advertise(inv, c).resources
    # 100 // 4 = 25 %; 81559 // 4 = 20389 MiB per client
    assert mps_daemon_commands(r, inv) == [
        "set_default_active_thread_percentage 25",
        "set_default_device_pinned_mem_limit 0 20389M",
        "set_default_device_pinned_mem_limit 1 20389M"]
    (plain,) = advertise(inv, ts(4)).resources
    assert mps_daemon_commands(plain, inv) == []
