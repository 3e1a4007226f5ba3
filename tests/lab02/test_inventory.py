"""Inventory from real nvidia-smi XML, YAML specs and (faked) NVML."""

from __future__ import annotations

import types
from pathlib import Path

import pytest

from lab02_device_plugin.errors import InputError
from lab02_device_plugin.examples import EXAMPLES_DIR
from lab02_device_plugin.plugin.discovery import (
    from_nvidia_smi_list, from_nvidia_smi_xml, from_nvml, infer_mig_profile, load_inventory, with_mig_uuids,
)
from lab02_device_plugin.plugin.inventory import from_yaml_spec


# ---------------------------------------------------------------- real nvidia-smi XML

def test_every_real_xml_parses(nvidia_smi_dir: Path):
    files = sorted(nvidia_smi_dir.glob("*.xml"))
    assert len(files) == 3
    for f in files:
        inv = load_inventory(f)
        assert inv.gpus, f
        assert all(g.uuid.startswith("GPU-") for g in inv.gpus)
        assert [g.index for g in inv.gpus] == list(range(len(inv.gpus)))
        assert inv.warnings == ()


def test_a100_mig_dump(nvidia_smi_dir: Path):
    inv = load_inventory(nvidia_smi_dir / "a100-sxm4-80gb-mig.q.xml")
    assert inv.driver_version == "535.54.03"
    (g,) = inv.gpus  # attached_gpus is 4 but upstream kept one <gpu>
    assert g.uuid == "GPU-513536b6-7d19-9063-b049-1e69664bb298"
    assert g.model == "NVIDIA A100-SXM4-80GB"
    assert g.memory_mib == 81920
    assert g.mig_enabled is True
    assert g.minor_number == 1
    assert g.pci_bus_id == "00000000:01:00.0"
    # 4 MIG devices, GI 3..6, CI 0, 19968 MiB and 14 SMs each: 1g.20gb
    # (19.50 GiB x 1024 = 19968 MiB; 14 SMs in the -lgip table).
    assert [(m.index, m.gpu_instance_id, m.compute_instance_id) for m in g.mig_devices] == \
        [(0, 3, 0), (1, 4, 0), (2, 5, 0), (3, 6, 0)]
    assert {m.profile for m in g.mig_devices} == {"1g.20gb"}
    assert {m.memory_mib for m in g.mig_devices} == {19968}
    assert {m.multiprocessors for m in g.mig_devices} == {14}
    # v12 XML has no MIG UUIDs: the legacy form MIG-<GPU uuid>/<gi>/<ci>.
    assert g.mig_devices[0].uuid == "MIG-GPU-513536b6-7d19-9063-b049-1e69664bb298/3/0"


def test_k80_dump_orders_by_pci_bus_not_minor_number(nvidia_smi_dir: Path):
    inv = load_inventory(nvidia_smi_dir / "azure-vm-4x-tesla-k80.q.xml")
    assert inv.driver_version == "430.26"
    assert [g.minor_number for g in inv.gpus] == [1, 2, 3, 0]
    assert [g.pci_bus_id for g in inv.gpus] == ["00001580:00:00.0", "00002DF7:00:00.0",
                                                "00004968:00:00.0", "0000F8D6:00:00.0"]
    assert inv.gpus[0].uuid == "GPU-c3b26f7a-8dcb-619c-fa1b-8029265a4db0"
    assert {g.memory_mib for g in inv.gpus} == {11441}
    assert {g.mig_enabled for g in inv.gpus} == {None}  # MIG not supported
    assert {g.model for g in inv.gpus} == {"Tesla K80"}


def test_rtx3080_consumer_dump(nvidia_smi_dir: Path):
    (g,) = load_inventory(nvidia_smi_dir / "rtx-3080-consumer.q.xml").gpus
    assert (g.model, g.memory_mib, g.mig_enabled, g.mig_devices) == \
        ("NVIDIA GeForce RTX 3080", 10240, None, ())
    assert g.uuid == "GPU-19d6d965-2acc-f646-00f8-4c76979aabb4"


def test_malformed_xml_names_line_and_column(tmp_path):
    p = tmp_path / "broken.xml"
    p.write_text("<nvidia_smi_log>\n<gpu>\n</nvidia_smi_log>\n")
    with pytest.raises(InputError, match=r"broken\.xml:3:\d+: malformed XML"):
        load_inventory(p)


def test_xml_gpu_without_uuid(tmp_path):
    p = tmp_path / "nouuid.xml"
    p.write_text("<nvidia_smi_log><gpu id='0'><product_name>X</product_name></gpu></nvidia_smi_log>")
    with pytest.raises(InputError, match=r"<gpu> #0: missing <uuid>"):
        load_inventory(p)


def test_wrong_root_element():
    with pytest.raises(InputError, match="expected <nvidia_smi_log>"):
        from_nvidia_smi_xml("x.xml", "<html/>")


def test_infer_profile():
    assert infer_mig_profile("NVIDIA A100-SXM4-80GB", 19968, 14) == "1g.20gb"
    assert infer_mig_profile("NVIDIA A100-SXM4-80GB", 19968, 28) == "2g.20gb"
    assert infer_mig_profile("NVIDIA H100 80GB HBM3", 9984, 16) == "1g.10gb"  # 9.75 GiB
    assert infer_mig_profile("Tesla K80", 5000, 10) is None


# ---------------------------------------------------------------- YAML spec

def test_spec_h100x8_islands_and_numa():
    inv = load_inventory(EXAMPLES_DIR / "inventory-h100x8.yaml")
    assert len(inv.gpus) == 8
    assert [g.numa_node for g in inv.gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert [g.nvlink_island for g in inv.gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert {g.model for g in inv.gpus} == {"NVIDIA H100 80GB HBM3"}
    assert {g.memory_mib for g in inv.gpus} == {81559}
    assert len({g.uuid for g in inv.gpus}) == 8
    # deterministic: same file, same UUIDs
    assert load_inventory(EXAMPLES_DIR / "inventory-h100x8.yaml").gpus[3].uuid == inv.gpus[3].uuid


def test_spec_mig_instances_are_placed():
    inv = load_inventory(EXAMPLES_DIR / "inventory-h100-mig.yaml")
    g0, g1 = inv.gpus
    assert [(m.profile, m.placement_start) for m in g0.mig_devices] == \
        [("3g.40gb", 4), ("2g.20gb", 0), ("1g.10gb", 2), ("1g.10gb", 3)]
    assert [m.memory_mib for m in g0.mig_devices] == [40448, 20091, 9984, 9984]  # GiB x 1024
    assert len(g1.mig_devices) == 7
    assert all(m.uuid.startswith("MIG-") for m in g1.mig_devices)


@pytest.mark.parametrize("spec, msg", [
    ({}, "gpus: expected a non-empty list"),
    ({"gpus": [{"count": 2}]}, "gpus[0].model: expected a GPU model"),
    ({"gpus": [{"model": "X1000"}]}, "gpus[0].model: unknown model 'X1000'; expected one of "
                                     "A100-40GB, A100-80GB, H100-80GB, H200-141GB, T4, L4, "
                                     "V100-32GB, or give memory_mib for another product name"),
    ({"gpus": [{"model": "X1000", "memory_mib": 0}]},
     "gpus[0].memory_mib: expected a positive integer (MiB); required for model 'X1000'"),
    ({"gpus": [{"model": "T4", "count": 0}]}, "gpus[0].count: expected a positive integer"),
    ({"gpus": [{"model": "T4", "colour": "green"}]}, "gpus[0].colour: unknown key"),
    ({"gpus": [{"model": "T4", "mig": {"enabled": True}}]}, "gpus[0].mig.enabled: 'T4' has no MIG"),
    ({"gpus": [{"model": "H100-80GB", "mig": {"instances": ["1g.10gb", "9g.99gb"]}}]},
     "gpus[0].mig.instances[1]: expected a profile of H100-80GB"),
    ({"gpus": [{"model": "H100-80GB", "mig": {"instances": ["7g.80gb", "1g.10gb"]}}]},
     "gpus[0].mig.instances: 8 compute slices asked"),
    ({"gpus": [{"model": "T4", "count": 2}], "nvlink_islands": [[0, 2]]},
     "nvlink_islands[0][1]: expected a GPU index 0..1, got 2"),
    ({"gpus": [{"model": "T4", "count": 2}], "nvlink_islands": [[0], [0, 1]]},
     "nvlink_islands[1][0]: GPU 0 is already in island 0"),
    ({"gpus": [{"model": "T4", "count": 2, "numa_node": [0]}]}, "gpus[0].numa_node: expected"),
])
def test_spec_errors_name_the_key(spec, msg):
    with pytest.raises(InputError) as exc:
        from_yaml_spec(spec, "spec.yaml")
    assert str(exc.value).startswith("spec.yaml: ")
    assert msg in str(exc.value)


def test_lost_gpu():
    inv = from_yaml_spec({"gpus": [{"model": "T4", "count": 4}]})
    left = inv.without(2)
    assert [g.index for g in left.gpus] == [0, 1, 3]
    with pytest.raises(InputError, match="no GPU 7"):
        inv.without(7)


# ---------------------------------------------------------------- NVML (faked)

class _Err(Exception):
    pass


def fake_nvml(mig: bool = True) -> types.SimpleNamespace:
    """A stand-in for pynvml: one A100-80GB with two 3g.40gb MIG devices, one T4."""
    mib = 1024 * 1024
    devices = {
        0: dict(uuid="GPU-aaaa", name="NVIDIA A100-SXM4-80GB", mem=81920 * mib, mig=mig, minor=0,
                bus="00000000:07:00.0"),
        1: dict(uuid="GPU-bbbb", name=b"Tesla T4", mem=15360 * mib, mig=None, minor=1,
                bus="00000000:08:00.0"),
    }
    migs = {(0, 0): dict(uuid="MIG-1111", mem=40192 * mib, sms=42, gi=1, ci=0),
            (0, 1): dict(uuid="MIG-2222", mem=40192 * mib, sms=42, gi=2, ci=0)}
    calls = []

    def handle(i):
        return ("gpu", i)

    def mig_mode(h):
        m = devices[h[1]]["mig"]
        if m is None:
            raise _Err("not supported")
        return (1 if m else 0, 1 if m else 0)

    def mig_handle(h, j):
        if (h[1], j) not in migs:
            raise _Err("not found")
        return ("mig", h[1], j)

    def get(h, key):
        return devices[h[1]][key] if h[0] == "gpu" else migs[(h[1], h[2])][key]

    return types.SimpleNamespace(
        calls=calls,
        nvmlInit=lambda: calls.append("init"),
        nvmlShutdown=lambda: calls.append("shutdown"),
        nvmlSystemGetDriverVersion=lambda: b"550.54.15",
        nvmlDeviceGetCount=lambda: 2,
        nvmlDeviceGetHandleByIndex=handle,
        nvmlDeviceGetUUID=lambda h: get(h, "uuid"),
        nvmlDeviceGetName=lambda h: get(h, "name"),
        nvmlDeviceGetMemoryInfo=lambda h: types.SimpleNamespace(total=get(h, "mem")),
        nvmlDeviceGetMigMode=mig_mode,
        nvmlDeviceGetMaxMigDeviceCount=lambda h: 7,
        nvmlDeviceGetMigDeviceHandleByIndex=mig_handle,
        nvmlDeviceGetAttributes=lambda h: types.SimpleNamespace(multiprocessorCount=get(h, "sms")),
        nvmlDeviceGetGpuInstanceId=lambda h: get(h, "gi"),
        nvmlDeviceGetComputeInstanceId=lambda h: get(h, "ci"),
        nvmlDeviceGetPciInfo=lambda h: types.SimpleNamespace(busId=get(h, "bus")),
        nvmlDeviceGetMinorNumber=lambda h: get(h, "minor"),
    )


def test_nvml_inventory_with_fake_module():
    nvml = fake_nvml()
    inv = from_nvml(nvml)
    assert nvml.calls == ["init", "shutdown"]
    assert inv.source == "nvml" and inv.driver_version == "550.54.15"
    a100, t4 = inv.gpus
    assert (a100.uuid, a100.memory_mib, a100.mig_enabled) == ("GPU-aaaa", 81920, True)
    # 40192 MiB = 39.25 GiB and 42 SMs: the A100-80GB 3g.40gb row.
    assert [(m.uuid, m.profile, m.gpu_instance_id) for m in a100.mig_devices] == \
        [("MIG-1111", "3g.40gb", 1), ("MIG-2222", "3g.40gb", 2)]
    assert (t4.model, t4.mig_enabled, t4.mig_devices, t4.minor_number) == ("Tesla T4", None, (), 1)


def test_nvml_mig_device_with_no_gi_profile_is_skipped_with_a_warning():
    # A 1c.3g.40gb compute instance: 3g.40gb memory, 14 of its 42 SMs. Before, it was
    # advertised as nvidia.com/mig-unknown-40192mib.
    nvml = fake_nvml()
    nvml_get = nvml.nvmlDeviceGetAttributes
    nvml.nvmlDeviceGetAttributes = lambda h: (types.SimpleNamespace(multiprocessorCount=14)
                                              if h == ("mig", 0, 1) else nvml_get(h))
    inv = from_nvml(nvml)
    assert [m.uuid for m in inv.gpus[0].mig_devices] == ["MIG-1111"]
    assert inv.warnings == ("nvml: GPU 0 MIG device 1: 40192 MiB and 14 SMs match no "
                            "GPU-instance profile of A100-80GB (a compute instance smaller than "
                            "its GPU instance?); not advertised, as NVIDIA's plugin exposes only "
                            "MIG devices whose compute instance spans their GPU instance",)


def test_nvml_mig_layout_that_misfits_the_profile_table_is_a_warning():
    # Two MIG devices of 80384 MiB (78.5 GiB x 1024) and 98 SMs: 7g.80gb each, and an
    # A100-80GB holds one 7g.80gb (7 of 7 compute slices). NVML reports what the GPU has,
    # so the table here would be wrong: a warning, not a node without GPUs.
    nvml = fake_nvml()
    nvml_get_mem, nvml_get_attrs = nvml.nvmlDeviceGetMemoryInfo, nvml.nvmlDeviceGetAttributes
    nvml.nvmlDeviceGetMemoryInfo = lambda h: (types.SimpleNamespace(total=80384 * 1024 * 1024)
                                              if h[0] == "mig" else nvml_get_mem(h))
    nvml.nvmlDeviceGetAttributes = lambda h: (types.SimpleNamespace(multiprocessorCount=98)
                                              if h[0] == "mig" else nvml_get_attrs(h))
    inv = from_nvml(nvml)
    assert [m.profile for m in inv.gpus[0].mig_devices] == ["7g.80gb", "7g.80gb"]
    assert inv.warnings == ("nvml: GPU 0: MIG devices 7g.80gb + 7g.80gb cannot all be on one "
                            "A100-80GB by the profile table here (2 x 7g.80gb asked, but at most "
                            "1 fit on A100-80GB); advertised as reported",)


def test_nvml_counts_and_memory_are_bounded():
    nvml = fake_nvml()
    nvml.nvmlDeviceGetCount = lambda: 65  # MAX_GPUS is 64
    with pytest.raises(InputError) as info:
        from_nvml(nvml)
    assert str(info.value) == ("NVML: 65 GPUs; expected at most 64 GPUs on one node (see "
                               "lab02_device_plugin.limits)")
    nvml = fake_nvml()
    nvml.nvmlDeviceGetMemoryInfo = lambda h: types.SimpleNamespace(total=2 ** 60)  # 2^40 MiB
    with pytest.raises(InputError) as info:
        from_nvml(nvml)
    assert str(info.value) == ("NVML: GPU 0: 1099511627776 MiB of memory; expected at most "
                               "1048576 MiB (1 TiB)")


def test_nvml_asks_for_at_most_7_mig_slots_a_gpu():
    nvml = fake_nvml()
    asked = []
    nvml_mig_handle = nvml.nvmlDeviceGetMigDeviceHandleByIndex
    nvml.nvmlDeviceGetMaxMigDeviceCount = lambda h: 10 ** 9
    nvml.nvmlDeviceGetMigDeviceHandleByIndex = lambda h, j: (asked.append(j),
                                                             nvml_mig_handle(h, j))[1]
    inv = from_nvml(nvml)
    assert asked == [0, 1, 2, 3, 4, 5, 6]
    assert len(inv.gpus[0].mig_devices) == 2


def test_an_nvml_error_on_one_gpu_is_one_line_naming_it():
    nvml = fake_nvml()
    nvml_uuid = nvml.nvmlDeviceGetUUID

    def uuid(h):
        if h == ("gpu", 1):
            raise _Err("GPU is lost")
        return nvml_uuid(h)

    nvml.nvmlDeviceGetUUID = uuid
    with pytest.raises(InputError) as info:
        from_nvml(nvml)
    assert str(info.value) == ("NVML: GPU 1: GPU is lost; expected every GPU to answer (is one "
                               "lost? `nvidia-smi` shows it)")
    assert nvml.calls == ["init", "shutdown"]


def test_nvml_init_failure_is_a_clear_input_error():
    nvml = fake_nvml()

    def boom():
        raise _Err("Driver Not Loaded")

    nvml.nvmlInit = boom
    with pytest.raises(InputError, match=r"NVML: cannot initialise \(Driver Not Loaded\)"):
        from_nvml(nvml)


def test_nvml_missing_package_is_a_clear_input_error(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml -> ImportError
    with pytest.raises(InputError, match="nvidia-ml-py package is not installed"):
        from_nvml()


def test_load_inventory_bad_yaml(tmp_path):
    p = tmp_path / "inv.yaml"
    p.write_text("gpus: [\n")
    with pytest.raises(InputError, match=r"inv\.yaml:\d+:\d+: invalid YAML"):
        load_inventory(p)


def test_real_pynvml_when_installed():
    """With nvidia-ml-py installed: a GPU host gives GPUs, a host without a driver a clear error."""
    pytest.importorskip("pynvml")
    try:
        inv = from_nvml()
    except InputError as exc:
        assert str(exc).startswith("NVML: cannot initialise")
    else:
        assert inv.source == "nvml"
        assert all(g.uuid.startswith("GPU-") and g.memory_mib > 0 for g in inv.gpus)


# ---------------------------------------------------------------- nvidia-smi -L

def test_every_real_listing_parses(nvidia_smi_dir: Path):
    # (file, GPUs, MIG devices per GPU, profile of GPU 0's MIG devices)
    expected = {
        "a100-sxm4-80gb-x4-mig.L.txt": (4, [4, 0, 0, 0], "1g.20gb"),
        "a100-sxm4-80gb-mig-7x1g.10gb.L.txt": (1, [7], "1g.10gb"),
        "a100-pcie-40gb-mig-3x2g.L.txt": (1, [3], "2g.10gb"),
    }
    for name, (n, per_gpu, profile) in expected.items():
        inv = load_inventory(nvidia_smi_dir / name)
        assert len(inv.gpus) == n, name
        assert [len(g.mig_devices) for g in inv.gpus] == per_gpu, name
        assert {m.profile for m in inv.gpus[0].mig_devices} == {profile}, name
        assert inv.warnings == ()


def test_listing_values_by_hand(nvidia_smi_dir: Path):
    inv = load_inventory(nvidia_smi_dir / "a100-pcie-40gb-mig-3x2g.L.txt")
    (g,) = inv.gpus
    assert (g.uuid, g.model, g.memory_mib, g.mig_enabled) == \
        ("GPU-84fd49f2-48ad-50e8-9f2e-3bf0dfd47ccb", "NVIDIA A100-PCIE-40GB", 40960, True)
    m = g.mig_devices[2]
    # 2g.10gb on A100-40GB: -lgip 9.62 GiB x 1024 = 9850.9 -> 9851 MiB, 28 SMs
    assert (m.index, m.uuid, m.memory_mib, m.multiprocessors) == \
        (2, "MIG-c6e2bae8-46d4-5a7e-9a68-c6cf1f680ba0", 9851, 28)


def test_h100_capture_listing_section(nvidia_smi_dir: Path):
    text = (nvidia_smi_dir / "h100-80gb-mig.capture.txt").read_text()
    section = text.split("# $ nvidia-smi -L\n", 1)[1].split("\n# ", 1)[0]
    (g,) = from_nvidia_smi_list(section).gpus
    assert [m.profile for m in g.mig_devices] == ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]
    # the whole capture holds a second 'GPU 0:' line (from `nvlink -s`): not one listing
    with pytest.raises(InputError, match=r":1215: GPU 0 listed twice"):
        from_nvidia_smi_list(text, "capture")


def test_xml_plus_listing_gives_real_mig_uuids(nvidia_smi_dir: Path):
    xml = load_inventory(nvidia_smi_dir / "a100-sxm4-80gb-mig.q.xml")
    listing = load_inventory(nvidia_smi_dir / "a100-sxm4-80gb-x4-mig.L.txt")
    merged = with_mig_uuids(xml, listing)
    (g,) = merged.gpus  # the listing's GPUs 1-3 are not in the XML sample
    assert [m.uuid for m in g.mig_devices] == [
        "MIG-ce861fb0-a248-58ce-a9a8-f9adbc22a66a", "MIG-a45882f0-9215-5733-a0c1-49286ab31cb5",
        "MIG-f00d722c-f4e1-52c9-aa31-750441ae1bfe", "MIG-930574a9-d43a-5d2b-95da-3e68384c8d6b"]
    # GI/CI IDs still come from the XML
    assert [m.gpu_instance_id for m in g.mig_devices] == [3, 4, 5, 6]


def test_listing_errors():
    with pytest.raises(InputError, match="no 'GPU <n>: <name> \\(UUID: GPU-...\\)' line"):
        from_nvidia_smi_list("nothing here\n", "l.txt")
    with pytest.raises(InputError, match=r"l\.txt:1: MIG device line before any GPU line"):
        from_nvidia_smi_list("  MIG 1g.10gb     Device  0: (UUID: MIG-x)\n", "l.txt")
    inv = from_nvidia_smi_list("GPU 0: Tesla T4 (UUID: GPU-t4)\n", "l.txt")
    assert inv.gpus[0].memory_mib == 0 and "memory unknown" in inv.warnings[0]


# issue 11 §2 (polish): a YAML GPU spec's error names file:line:column of the key path it names
@pytest.mark.parametrize("text, message", [
    # line 3 "  count: 100000": 2 + 7 = 9 characters before the value
    ("gpus:\n- model: T4\n  count: 100000\n",
     "3:10: gpus[0].count: 100000 GPUs; expected at most 64 GPUs on one node (the largest single-host "
     "systems have 16; see lab02_device_plugin.limits)"),
    # an unknown key: the key itself, line 3 after two spaces
    ("gpus:\n- model: T4\n  cuont: 2\n",
     "3:3: gpus[0].cuont: unknown key; expected one of model, count, memory_mib, numa_node, mig, uuids"),
    # a missing model: the entry that lacks it, line 2 after "- "
    ("gpus:\n- count: 2\n",
     "2:3: gpus[0].model: expected a GPU model such as H100-80GB (A100-40GB, A100-80GB, H100-80GB, "
     "H200-141GB, T4, L4, V100-32GB) or a product name, got null (no value)"),
])
def test_yaml_spec_errors_name_line_and_column(tmp_path, text, message):
    p = tmp_path / "inventory.yaml"
    p.write_text(text)
    with pytest.raises(InputError) as info:
        load_inventory(p)
    assert str(info.value) == f"{p}:{message}"
