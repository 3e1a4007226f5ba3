"""Input validation found missing by a fresh-user test of Lab 02: inventories (IDs, memory,
format), listings of another node, config defaults, MPS with MIG, health variables, and two
plugin processes sharing one socket directory."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import yaml

from lab02_device_plugin.errors import InputError
from lab02_device_plugin.plugin.config import parse_config
from lab02_device_plugin.plugin.discovery import (
    from_nvidia_smi_list, from_nvidia_smi_xml, load_inventory, with_mig_uuids,
)
from lab02_device_plugin.plugin.health import HealthPolicy
from lab02_device_plugin.plugin.inventory import from_yaml_spec
from lab02_device_plugin.plugin.server import DevicePluginServer, check_advertisable
from lab02_device_plugin.plugin.sharing import advertise

UUID_A = "GPU-0c6e1ed6-bd4e-24e7-1b3c-4f4f4fe1c0a5"
UUID_B = "GPU-1d7f2fe7-ce5f-35f8-2c4d-5a5a5af2d1b6"


def xml(*gpus: str) -> str:
    return "<nvidia_smi_log><driver_version>535.54.03</driver_version>" + "".join(gpus) + "</nvidia_smi_log>"


def gpu_xml(uuid: str, bus: str, total: str = "81920 MiB") -> str:
    return (f'<gpu id="{bus}"><product_name>NVIDIA A100-SXM4-80GB</product_name><uuid>{uuid}</uuid>'
            f"<fb_memory_usage><total>{total}</total></fb_memory_usage></gpu>")


# ----------------------------------------------------------------------- finding 8: IDs

def test_xml_with_duplicate_uuids_is_refused():
    text = xml(gpu_xml(UUID_A, "00000000:01:00.0"), gpu_xml(UUID_A, "00000000:02:00.0"))
    with pytest.raises(InputError, match=f"dump.xml: GPU 1: UUID {UUID_A} is also GPU 0; "
                                         "expected each UUID once"):
        from_nvidia_smi_xml("dump.xml", text)


def test_xml_with_a_bogus_uuid_is_refused():
    with pytest.raises(InputError, match=r"dump.xml: GPU 0: UUID 'bogus'; expected GPU- followed by"):
        from_nvidia_smi_xml("dump.xml", xml(gpu_xml("bogus", "00000000:01:00.0")))


@pytest.mark.parametrize("uuid, message", [
    ("GPU-1::2", "UUID 'GPU-1::2'; expected GPU- followed by letters, digits and dashes"),
    # "GPU-" + 60 characters = 64 > 63
    ("GPU-" + "a" * 60, r"is 64 characters; expected at most 63 \(Device.ID"),
])
def test_spec_uuids_must_be_usable_device_ids(uuid, message):
    with pytest.raises(InputError, match=message):
        from_yaml_spec({"gpus": [{"model": "T4", "uuids": [uuid]}]}, "spec.yaml")


def test_spec_with_duplicate_uuids_is_refused():
    with pytest.raises(InputError, match=f"spec.yaml: GPU 1: UUID {UUID_A} is also GPU 0"):
        from_yaml_spec({"gpus": [{"model": "T4", "count": 2, "uuids": [UUID_A, UUID_A]}]}, "spec.yaml")


def test_listing_with_duplicate_uuids_is_refused():
    text = f"GPU 0: Tesla T4 (UUID: {UUID_A})\nGPU 1: Tesla T4 (UUID: {UUID_A})\n"
    with pytest.raises(InputError, match="gpus.L: GPU 1: UUID .* is also GPU 0"):
        from_nvidia_smi_list(text, "gpus.L")


def test_a_63_character_uuid_is_still_accepted():
    uuid = "GPU-" + "a" * 59  # 4 + 59 = 63, the limit
    assert from_yaml_spec({"gpus": [{"model": "T4", "uuids": [uuid]}]}).gpus[0].uuid == uuid


def test_replica_ids_over_63_characters_are_refused():
    # 4 + 59 = 63 characters, plus "::0" = 66 > 63
    inv = from_yaml_spec({"gpus": [{"model": "T4", "uuids": ["GPU-" + "a" * 59]}]})
    config = parse_config({"sharing": {"timeSlicing": {"resources": [
        {"name": "nvidia.com/gpu", "replicas": 2}]}}})
    (resource,) = advertise(inv, config).resources
    with pytest.raises(InputError, match="is 66 characters; expected at most 63"):
        check_advertisable(resource)


# ----------------------------------------------------------------------- finding 9: memory

def test_xml_memory_that_is_not_a_number_names_the_element():
    with pytest.raises(InputError, match=r"dump.xml: <gpu> #0: <fb_memory_usage><total> is 'lots'; "
                                         r"expected '<number> MiB'"):
        from_nvidia_smi_xml("dump.xml", xml(gpu_xml(UUID_A, "00000000:01:00.0", total="lots")))


def test_xml_memory_na_is_unknown_not_an_error():
    inv = from_nvidia_smi_xml("dump.xml", xml(gpu_xml(UUID_A, "00000000:01:00.0", total="N/A")))
    assert inv.gpus[0].memory_mib == 0


def test_xml_memory_over_1_tib_is_refused():
    big = "99999999999999999999999 MiB"  # 23 digits
    with pytest.raises(InputError) as info:
        from_nvidia_smi_xml("dump.xml", xml(gpu_xml(UUID_A, "00000000:01:00.0", total=big)))
    assert str(info.value) == (f"dump.xml: <gpu> #0: <fb_memory_usage><total> is '{big}'; "
                               "expected '<number> MiB', at most 1048576 MiB (1 TiB)")


def test_spec_memory_of_4000_digits_is_refused_in_one_short_line():
    with pytest.raises(InputError) as info:
        from_yaml_spec({"gpus": [{"model": "X1000", "memory_mib": int("9" * 4000)}]}, "spec.yaml")
    assert str(info.value) == ("spec.yaml: gpus[0].memory_mib: expected at most 1048576 MiB "
                               "(1 TiB; the largest GPUs have under 300 GB), got 99999999999999"
                               "9999999999999999999999999999999999999999999999… (4000 characters)")


def test_an_inventory_with_a_byte_that_is_not_utf8_names_the_byte(tmp_path):
    # Before: "unknown model 'H100-80GB\ufffd'"; "gpus:\n- model: H100-80GB" is 24 bytes (0..23).
    path = tmp_path / "inv.yaml"
    path.write_bytes(b"gpus:\n- model: H100-80GB\xff\n")
    with pytest.raises(InputError) as info:
        load_inventory(path)
    # "- model: H100-80GB" is 18 characters: line 2, column 19
    assert str(info.value) == (f"{path}:2:19: byte 24 (0xff) is not UTF-8; expected an nvidia-smi XML dump, "
                               "nvidia-smi -L output or a YAML GPU spec (text)")


# ----------------------------------------------------------------------- MIG layouts in a dump

A100_40 = "NVIDIA A100-SXM4-40GB"


def mig_xml(model: str, *devices: tuple[int, int]) -> str:
    """One MIG-enabled GPU with MIG devices of (memory MiB, SMs), no profile names (older
    dumps give only memory and SMs)."""
    migs = "".join(
        f"<mig_device><index>{i}</index><gpu_instance_id>{i + 1}</gpu_instance_id>"
        f"<compute_instance_id>0</compute_instance_id><device_attributes><shared>"
        f"<multiprocessor_count>{sms}</multiprocessor_count></shared></device_attributes>"
        f"<fb_memory_usage><total>{mem} MiB</total></fb_memory_usage></mig_device>"
        for i, (mem, sms) in enumerate(devices))
    return xml(f'<gpu id="00000000:01:00.0"><product_name>{model}</product_name><uuid>{UUID_A}'
               f"</uuid><fb_memory_usage><total>40960 MiB</total></fb_memory_usage>"
               f"<mig_mode><current_mig>Enabled</current_mig></mig_mode>"
               f"<mig_devices>{migs}</mig_devices></gpu>")


def test_seven_7g_devices_on_one_a100_40gb_are_refused():
    # 40,000 MiB and 98 SMs names 7g.40gb (39.25 GiB x 1024 = 40192 MiB, within 5 %), and
    # an A100 holds one 7g.40gb instance.
    with pytest.raises(InputError) as info:
        from_nvidia_smi_xml("dump.xml", mig_xml(A100_40, *[(40000, 98)] * 7))
    assert str(info.value) == (
        "dump.xml: <gpu> #0: MIG devices " + " + ".join(["7g.40gb"] * 7) + " cannot all be "
        "on one A100-40GB: 7 x 7g.40gb asked, but at most 1 fit on A100-40GB; expected a "
        "layout nvidia-smi can create")


def test_more_memory_slices_than_the_gpu_has_are_refused():
    # On an A100-80GB: 3g.40gb + 3 x 2g.20gb = 3 + 3 x 2 = 9 of 7 compute slices (and
    # 4 + 3 x 2 = 10 of 8 memory slices).
    text = mig_xml("NVIDIA A100-SXM4-80GB", (40192, 42), (19968, 28), (19968, 28), (19968, 28))
    with pytest.raises(InputError, match=r"MIG devices 3g.40gb \+ 2g.20gb \+ 2g.20gb \+ 2g.20gb "
                                         r"cannot all be on one A100-80GB: 9 compute slices"):
        from_nvidia_smi_xml("dump.xml", text)


def test_a_mig_device_with_no_gi_profile_is_not_advertised():
    # 40,192 MiB with 14 SMs: a 1c.3g.40gb compute instance (1 of a 3g's 3 compute slices).
    # No GPU-instance profile has that memory and SM count; NVIDIA's plugin exposes only MIG
    # devices whose compute instance spans the GPU instance. Before: nvidia.com/mig-unknown-40192mib.
    inv = from_nvidia_smi_xml("dump.xml", mig_xml("NVIDIA A100-SXM4-80GB", (40192, 14), (19968, 14)))
    (gpu,) = inv.gpus
    assert [m.profile for m in gpu.mig_devices] == ["1g.20gb"]
    assert inv.warnings == (
        "dump.xml: <gpu> #0 MIG device 0: 40192 MiB and 14 SMs match no GPU-instance profile "
        "of A100-80GB (a compute instance smaller than its GPU instance?); not advertised, as "
        "NVIDIA's plugin exposes only MIG devices whose compute instance spans their GPU "
        "instance",)
    config = parse_config({"flags": {"migStrategy": "mixed"}})
    assert advertise(inv, config).names() == ["nvidia.com/mig-1g.20gb"]


def test_a_profile_name_the_table_lacks_is_advertised_with_a_warning():
    text = mig_xml(A100_40, (9856, 14)).replace(
        "<index>0</index>", "<index>0</index><profile_name>MIG 1g.5gb+gfx</profile_name>")
    inv = from_nvidia_smi_xml("dump.xml", text)
    assert [m.profile for m in inv.gpus[0].mig_devices] == ["1g.5gb+gfx"]
    assert inv.warnings == ("dump.xml: <gpu> #0 MIG device 0: profile 1g.5gb+gfx is not in the "
                            "A100-40GB table here; advertised, its placement not checked",)


def test_a_listing_with_an_impossible_layout_is_refused():
    text = ("GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-a)\n"
            + "".join(f"  MIG 4g.20gb     Device  {i}: (UUID: MIG-{i})\n" for i in range(2)))
    with pytest.raises(InputError, match=r"l.txt: GPU 0: MIG devices 4g.20gb \+ 4g.20gb cannot all "
                                         r"be on one A100-40GB: 2 x 4g.20gb asked, but at most 1"):
        from_nvidia_smi_list(text, "l.txt")


H100 = "NVIDIA H100 80GB HBM3"


def named_mig_xml(model: str, *devices: tuple[str, int, int], mig: str = "Enabled") -> str:
    """One GPU with MIG devices of (profile name, memory MiB, SMs), as newer dumps name them."""
    migs = "".join(
        f"<mig_device><index>{i}</index><profile_name>MIG {name}</profile_name>"
        f"<gpu_instance_id>{i + 1}</gpu_instance_id><compute_instance_id>0</compute_instance_id>"
        f"<device_attributes><shared><multiprocessor_count>{sms}</multiprocessor_count></shared>"
        f"</device_attributes><fb_memory_usage><total>{mem} MiB</total></fb_memory_usage>"
        "</mig_device>" for i, (name, mem, sms) in enumerate(devices))
    return xml(f'<gpu id="00000000:09:00.0"><product_name>{model}</product_name><uuid>{UUID_A}'
               f"</uuid><fb_memory_usage><total>81559 MiB</total></fb_memory_usage>"
               f"<mig_mode><current_mig>{mig}</current_mig></mig_mode>"
               f"<mig_devices>{migs}</mig_devices></gpu>")


#: The H100 of ../shared/data/nvidia-smi/h100-80gb-mig.capture.txt (driver 590.48.01), its
#: MIG devices as `nvidia-smi` prints them: memory MiB and SMs.
H100_CAPTURE = (("3g.40gb", 40448, 60), ("2g.20gb", 20096, 32), ("1g.10gb", 9984, 16),
                ("1g.10gb", 9984, 16))


def test_the_real_h100_layout_passes_the_profile_checks():
    # Table (-lgip): 3g.40gb 39.5 GiB x 1024 = 40448 MiB, 60 SMs; 2g.20gb 19.62 x 1024 =
    # 20091 MiB (20096 is 0.02 % off), 32 SMs; 1g.10gb 9.75 x 1024 = 9984 MiB, 16 SMs.
    # Slices: compute 3 + 2 + 1 + 1 = 7 of 7, memory 4 + 2 + 1 + 1 = 8 of 8.
    inv = from_nvidia_smi_xml("dump.xml", named_mig_xml(H100, *H100_CAPTURE))
    assert [m.profile for m in inv.gpus[0].mig_devices] == ["3g.40gb", "2g.20gb", "1g.10gb",
                                                             "1g.10gb"]
    assert inv.warnings == ()


@pytest.mark.parametrize("device, found, expected", [
    # 1g.10gb: 9984 MiB and 16 SMs; 40000 MiB is 300 % off.
    (("1g.10gb", 40000, 16), "40000 MiB and 16 SMs", "9984 MiB (within 5 %) and 16 SMs"),
    # Right memory, but 26 SMs are the 1g.20gb's: 16 expected.
    (("1g.10gb", 9984, 26), "9984 MiB and 26 SMs", "9984 MiB (within 5 %) and 16 SMs"),
    # 3g.40gb: 40448 MiB; 38000 is 6.1 % below (5 % allows 38426..42470).
    (("3g.40gb", 38000, 60), "38000 MiB and 60 SMs", "40448 MiB (within 5 %) and 60 SMs"),
])
def test_a_profile_name_that_contradicts_the_device_is_refused(device, found, expected):
    with pytest.raises(InputError) as info:
        from_nvidia_smi_xml("dump.xml", named_mig_xml(H100, device))
    assert str(info.value) == (f"dump.xml: <gpu> #0: MIG device 0 is named {device[0]} but has "
                               f"{found}; expected about {expected}, as H100-80GB's "
                               f"{device[0]} has")


@pytest.mark.parametrize("mode", ["Disabled", "N/A"])
def test_mig_devices_on_a_gpu_whose_mig_mode_is_not_enabled_are_refused(mode):
    with pytest.raises(InputError) as info:
        from_nvidia_smi_xml("dump.xml", named_mig_xml(H100, H100_CAPTURE[0], mig=mode))
    assert str(info.value) == (f"dump.xml: <gpu> #0: 1 <mig_device> element while "
                               f"<mig_mode><current_mig> is {mode}; expected MIG devices only on "
                               "a GPU whose current MIG mode is Enabled")


def test_a_mig_device_index_given_twice_is_refused():
    text = (f"GPU 0: {H100} (UUID: GPU-a)\n"
            "  MIG 1g.10gb     Device  0: (UUID: MIG-1)\n"
            "  MIG 1g.10gb     Device  0: (UUID: MIG-2)\n")
    with pytest.raises(InputError) as info:
        from_nvidia_smi_list(text, "l.txt")
    assert str(info.value) == ("l.txt: GPU 0: MIG device 0 is listed twice; expected each MIG "
                               "device index once on a GPU")


def test_compute_instances_smaller_than_their_gpu_instance_are_not_advertised():
    # NVIDIA MIG User Guide's -L example: three 1c.3g.40gb compute instances share one
    # 3g.40gb GPU instance of an H100; a 2g.20gb device beside them.
    text = (f"GPU 0: {H100} (UUID: GPU-a)\n"
            + "".join(f"  MIG 1c.3g.40gb  Device  {i}: (UUID: MIG-{i})\n" for i in range(3))
            + "  MIG 2g.20gb     Device  3: (UUID: MIG-3)\n")
    inv = from_nvidia_smi_list(text, "l.txt")
    assert [(m.index, m.profile) for m in inv.gpus[0].mig_devices] == [(3, "2g.20gb")]
    assert inv.warnings == tuple(
        f"l.txt: GPU 0 MIG device {i}: 1c.3g.40gb is a compute instance of 1 of its GPU "
        "instance's 3 compute slices; not advertised, as NVIDIA's plugin exposes only MIG "
        "devices whose compute instance spans their GPU instance" for i in range(3))
    config = parse_config({"flags": {"migStrategy": "mixed"}})
    assert advertise(inv, config).names() == ["nvidia.com/mig-2g.20gb"]


def test_a_listing_that_lacks_a_mig_device_of_the_dump_is_refused():
    # The dump has 4 x 1g.20gb (19968 MiB, 14 SMs); the listing of the same GPU only 3.
    dump = from_nvidia_smi_xml("dump.xml", mig_xml("NVIDIA A100-SXM4-80GB", *[(19968, 14)] * 4))
    listing = from_nvidia_smi_list(
        f"GPU 0: NVIDIA A100-SXM4-80GB (UUID: {UUID_A})\n"
        + "".join(f"  MIG 1g.20gb     Device  {i}: (UUID: MIG-{i})\n" for i in range(3)), "l.txt")
    with pytest.raises(InputError) as info:
        with_mig_uuids(dump, listing)
    assert str(info.value) == ("l.txt: GPU 0 lists MIG devices 0, 1, 2, but dump.xml also has "
                               "MIG device 3; expected listings of the same MIG layout "
                               "(nvidia-smi -L lists every MIG device)")


# ----------------------------------------------------------------------- finding 10: listing

def test_listing_of_another_node_is_refused():
    inv = from_nvidia_smi_xml("dump.xml", xml(gpu_xml(UUID_A, "00000000:01:00.0")))
    other = from_nvidia_smi_list(f"GPU 0: NVIDIA A100-SXM4-80GB (UUID: {UUID_B})\n", "other.L")
    with pytest.raises(InputError, match="other.L: none of its 1 GPU UUIDs is among the 1 GPUs of "
                                         "dump.xml; expected a listing of the same node"):
        with_mig_uuids(inv, other)


# ----------------------------------------------------------------------- finding 12: messages

@pytest.mark.parametrize("content", ["", "gpus: [{model: T4}]\n", "not xml at all"])
def test_an_xml_file_is_read_as_xml(tmp_path, content):
    path = tmp_path / "dump.xml"
    path.write_text(content)
    with pytest.raises(InputError, match=r"expected `nvidia-smi -q -x` output") as info:
        load_inventory(path)
    assert "gpus: list" not in str(info.value)


def test_an_empty_yaml_inventory_says_so(tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text("")
    with pytest.raises(InputError, match="spec.yaml: empty file; expected a YAML GPU spec"):
        load_inventory(path)


def test_enable_healthchecks_error_describes_that_variable():
    with pytest.raises(InputError) as info:
        HealthPolicy.from_env({"DP_ENABLE_HEALTHCHECKS": "13x"})
    assert str(info.value) == ("DP_ENABLE_HEALTHCHECKS: expected a comma list of Xid numbers "
                               "always acted on, got '13x'")
    with pytest.raises(InputError, match="expected 'all', 'xids' or a comma list of Xid numbers to ignore"):
        HealthPolicy.from_env({"DP_DISABLE_HEALTHCHECKS": "13x"})


# ----------------------------------------------------------------------- finding 14

def test_config_with_every_upstream_default_gives_no_warning():
    config = parse_config(yaml.safe_load("""
version: v1
flags:
  migStrategy: none
  failOnInitError: true
  nvidiaDriverRoot: /
  nvidiaDevRoot: /
  gdrcopyEnabled: false
  gdsEnabled: false
  mofedEnabled: false
  useNodeFeatureAPI: false
  deviceDiscoveryStrategy: auto
  plugin:
    passDeviceSpecs: false
    deviceListStrategy: envvar
    deviceIDStrategy: uuid
    nvidiaCTKPath: /usr/bin/nvidia-ctk
    containerDriverRoot: /driver-root
  gfd:
    oneshot: false
    noTimestamp: false
    sleepInterval: 60s
    outputFile: /etc/kubernetes/node-feature-discovery/features.d/gfd
    machineTypeFile: /sys/class/dmi/id/product_name
imex:
  channelIDs: []
  required: false
"""), "defaults.yaml")
    assert config.warnings == ()


def test_config_warns_only_for_values_that_differ():
    config = parse_config({"flags": {"gdsEnabled": True, "mofedEnabled": False,
                                     "deviceDiscoveryStrategy": "tegra"}}, "c.yaml")
    assert [w.split(": ")[1] for w in config.warnings] == ["flags.gdsEnabled",
                                                           "flags.deviceDiscoveryStrategy"]


def test_device_discovery_strategy_is_validated():
    with pytest.raises(InputError, match=r"c.yaml: flags.deviceDiscoveryStrategy: expected one of "
                                         r"auto, nvml, tegra, got 'bogus'"):
        parse_config({"flags": {"deviceDiscoveryStrategy": "bogus"}}, "c.yaml")


@pytest.mark.parametrize("strategy", ["none", "single"])
def test_mps_on_a_mig_enabled_gpu_is_refused(strategy):
    inv = from_yaml_spec({"gpus": [{"model": "A100-40GB", "mig": {"enabled": True,
                                                                  "instances": ["3g.20gb"]}}]}, "mig.yaml")
    config = parse_config({"flags": {"migStrategy": strategy},
                           "sharing": {"mps": {"resources": [{"name": "nvidia.com/gpu", "replicas": 2}]}}})
    with pytest.raises(InputError, match=r"mig.yaml: GPU 0 \(GPU-.*\) has MIG enabled; sharing.mps "
                                         "shares full GPUs only"):
        advertise(inv, config)


def test_stopping_one_of_two_plugins_on_one_path_keeps_the_others_socket():
    inv = from_yaml_spec({"gpus": [{"model": "T4"}]})
    (resource,) = advertise(inv, parse_config({})).resources
    with tempfile.TemporaryDirectory(prefix="dp-") as d:
        first = DevicePluginServer(resource, d, kubelet_socket=None)
        second = DevicePluginServer(resource, d, kubelet_socket=None)
        first.serve()
        try:
            second.serve()  # replaces the path with its own socket, as a restarted plugin does
            try:
                inode = second.socket_path.lstat().st_ino
                first.stop()
                assert second.socket_path.lstat().st_ino == inode  # still there, still second's
            finally:
                second.stop()
            assert not Path(d, resource.socket_name).exists()  # its owner removed it
        finally:
            first.stop()


def test_an_inventory_that_is_a_list_is_worded_as_the_config_is(tmp_path):
    # fresh tester 2 F8: "(top level)" and the value in YAML words, as a config's top-level list
    path = tmp_path / "inv.yaml"
    path.write_text("- model: H100-80GB\n")
    with pytest.raises(InputError) as info:
        load_inventory(path)
    assert str(info.value) == f"{path}: (top level): expected a mapping with a `gpus:` list, got [{{model: H100-80GB}}]"
