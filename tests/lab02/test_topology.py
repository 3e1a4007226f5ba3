"""``nvidia-smi topo -m`` -> NUMA nodes and NVLink islands, on the real captures."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab02_device_plugin.errors import InputError
from lab02_device_plugin.plugin.config import parse_config
from lab02_device_plugin.plugin.inventory import from_yaml_spec
from lab02_device_plugin.plugin.sharing import advertise, preferred_allocation
from lab02_device_plugin.plugin.topology import apply_topology, load_topology, parse_topology


def test_h100_nvswitch_one_island_two_numa_nodes(nvidia_smi_dir: Path):
    t = load_topology(nvidia_smi_dir / "h100-8gpu-nv18.topo.txt")
    assert t.gpus == tuple(f"GPU{i}" for i in range(8))
    assert t.numa_nodes == (0, 0, 0, 0, 1, 1, 1, 1)
    assert t.nvlinks(0, 7) == 18 and t.links[3][3] == "X"
    assert t.islands() == [0] * 8  # every pair NV18


def test_v100_hybrid_cube_mesh(nvidia_smi_dir: Path):
    t = load_topology(nvidia_smi_dir / "azure-nd40rs-v2-8x-v100.topo.txt")
    assert t.links[0] == ("X", "NV2", "NV1", "NV2", "NODE", "NODE", "NV1", "NODE")
    assert (t.nvlinks(0, 1), t.nvlinks(0, 2), t.nvlinks(0, 4)) == (2, 1, 0)
    assert t.numa_nodes == (0,) * 8
    # GPU0-GPU4 is PCIe only, but 0 -NV1- 2 -NV2- 4: all 8 GPUs form one connected island.
    assert t.islands() == [0] * 8


def test_rtx4090_pcie_only_tab_separated(nvidia_smi_dir: Path):
    t = load_topology(nvidia_smi_dir / "8x-rtx4090-pcie.topo.txt")
    assert t.links[1] == ("SYS", "X", "SYS", "SYS", "SYS", "SYS", "SYS", "SYS")
    assert t.numa_nodes == (0, 0, 0, 0, 1, 1, 1, 1)
    assert t.islands() == [None] * 8


SPLIT = """\
        GPU0    GPU1    GPU2    GPU3    CPU Affinity    NUMA Affinity
GPU0     X      NV4     SYS     SYS     0-15    0
GPU1    NV4      X      SYS     SYS     0-15    0
GPU2    SYS     SYS      X      NV4     16-31   1
GPU3    SYS     SYS     NV4      X      16-31   1
"""


def test_two_islands_drive_the_preferred_allocation():
    inv = from_yaml_spec({"gpus": [{"model": "H100-80GB", "count": 4}]})
    inv = apply_topology(inv, parse_topology(SPLIT))
    assert [g.nvlink_island for g in inv.gpus] == [0, 0, 1, 1]
    assert [g.numa_node for g in inv.gpus] == [0, 0, 1, 1]
    (r,) = advertise(inv, parse_config(None)).resources
    ids = [d.id for d in r.devices]
    # GPU 0 taken: a 2-GPU request goes to the intact island {2, 3} (100) rather than
    # {1, 2} (10) or {1, 3} (10).
    assert preferred_allocation(r, ids[1:], [], 2) == [ids[2], ids[3]]


def test_errors():
    with pytest.raises(InputError, match="no header line"):
        parse_topology("hello\n", "t.txt")
    with pytest.raises(InputError, match=r"t\.txt:2: GPU0 / GPU1: unknown link 'NVX'"):
        parse_topology("   GPU0 GPU1\nGPU0 X NVX 0-1 0\nGPU1 NV1 X 0-1 0\n", "t.txt")
    with pytest.raises(InputError, match="1 GPU rows for 2 GPU columns"):
        parse_topology("   GPU0 GPU1\nGPU0 X NV1 0-1 0\n", "t.txt")
    inv = from_yaml_spec({"gpus": [{"model": "T4", "count": 3}]})
    with pytest.raises(InputError, match="topology has 4 GPUs but <spec> has 3"):
        apply_topology(inv, parse_topology(SPLIT))


def test_v100_cube_mesh_links_drive_the_preference(nvidia_smi_dir: Path):
    t = load_topology(nvidia_smi_dir / "azure-nd40rs-v2-8x-v100.topo.txt")
    inv = apply_topology(from_yaml_spec({"gpus": [{"model": "V100-32GB", "count": 8}]}), t)
    assert inv.gpus[0].links[:4] == ((1, "NV2"), (2, "NV1"), (3, "NV2"), (4, "NODE"))
    (r,) = advertise(inv, parse_config(None)).resources
    ids = [d.id for d in r.devices]
    # Pairs: the best is an NV2 pair (200); the first by index is GPU0-GPU1.
    assert preferred_allocation(r, ids, [], 2) == [ids[0], ids[1]]
    # GPU1 taken, GPU0 a must: GPU0's other NV2 peer is GPU3 (NV1 peers 2, 6 score 100).
    assert preferred_allocation(r, [i for i in ids if i != ids[1]], [ids[0]], 2) == [ids[0], ids[3]]
    # Quads: each half of the cube mesh is fully NVLinked:
    # {0,1,2,3}: 200+100+200+200+100+100 = 900; {4,5,6,7}: 100+100+200+200+100+200 = 900;
    # tie -> lower indices. With GPU0 taken the best is {4,5,6,7} (900) over e.g. {1,2,3,4}:
    # 1-2 200 + 1-3 100 + 2-3 100 + 1-4 20 + 2-4 200 + 3-4 20 = 640.
    assert preferred_allocation(r, ids, [], 4) == ids[:4]
    assert preferred_allocation(r, ids[1:], [], 4) == ids[4:]


def test_pcie_words_score_like_go_gpuallocator():
    from lab02_device_plugin.plugin.sharing import LINK_SCORES
    assert dict(LINK_SCORES) == {"SYS": 10, "NODE": 20, "PHB": 30, "PXB": 40, "PIX": 50}
    text = """\
        GPU0    GPU1    GPU2    CPU Affinity    NUMA Affinity
GPU0     X      PIX     SYS     0-15    0
GPU1    PIX      X      SYS     0-15    0
GPU2    SYS     SYS      X      16-31   1
"""
    inv = apply_topology(from_yaml_spec({"gpus": [{"model": "T4", "count": 3}]}), parse_topology(text))
    (r,) = advertise(inv, parse_config(None)).resources
    ids = [d.id for d in r.devices]
    # GPU2 must: its peers are both SYS (10) -> lowest index GPU0; without a must the PIX
    # pair (50) wins.
    assert preferred_allocation(r, ids, [], 2) == [ids[0], ids[1]]
    assert preferred_allocation(r, ids, [ids[2]], 2) == [ids[2], ids[0]]
