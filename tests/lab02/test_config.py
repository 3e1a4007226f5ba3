"""Config file: NVIDIA's v1 format as typed data, errors naming the key, warnings for ignored keys."""

from __future__ import annotations

import pytest
import yaml

from lab02_device_plugin.config import Config, load_config, parse_config
from lab02_device_plugin.errors import InputError
from lab02_device_plugin.examples import EXAMPLES_DIR


def cfg(text: str) -> Config:
    return parse_config(yaml.safe_load(text), "c.yaml")


def test_defaults_are_upstream_defaults():
    c = parse_config(None)
    assert c.version == "v1"
    assert c.flags.mig_strategy == "none"
    assert c.flags.plugin.device_list_strategy == ("envvar",)
    assert c.flags.plugin.device_id_strategy == "uuid"
    assert c.flags.plugin.pass_device_specs is False
    assert c.sharing.strategy == "none"
    assert c.warnings == ()


def test_full_time_slicing_config():
    c = cfg("""
version: v1
flags:
  migStrategy: mixed
  plugin:
    passDeviceSpecs: true
    deviceListStrategy: [envvar, cdi-cri]
    deviceIDStrategy: index
sharing:
  timeSlicing:
    renameByDefault: true
    failRequestsGreaterThanOne: true
    resources:
    - name: nvidia.com/gpu
      replicas: 10
    - name: nvidia.com/mig-1g.10gb
      replicas: 2
""")
    assert c.flags.mig_strategy == "mixed"
    assert c.flags.plugin.device_list_strategy == ("envvar", "cdi-cri")
    assert c.flags.plugin.device_id_strategy == "index"
    assert c.flags.plugin.pass_device_specs is True
    assert c.sharing.strategy == "time-slicing"
    assert c.sharing.rename_by_default is True
    assert c.sharing.fail_requests_greater_than_one is True
    assert c.sharing.replicas_for("nvidia.com/gpu") == 10
    assert c.sharing.replicas_for("nvidia.com/mig-1g.10gb") == 2
    assert c.sharing.replicas_for("nvidia.com/mig-3g.40gb") == 1


def test_device_list_strategy_as_string():
    c = cfg("flags: {plugin: {deviceListStrategy: volume-mounts}}")
    assert c.flags.plugin.device_list_strategy == ("volume-mounts",)


def test_empty_version_means_v1():
    assert cfg("version: ''").version == "v1"


def test_mps_fails_requests_greater_than_one_by_default():
    c = cfg("sharing: {mps: {resources: [{name: nvidia.com/gpu, replicas: 4}]}}")
    assert c.sharing.strategy == "mps"
    assert c.sharing.fail_requests_greater_than_one is True
    # v0.20.0 honours an explicit false for MPS.
    c = cfg("sharing: {mps: {failRequestsGreaterThanOne: false, "
            "resources: [{name: nvidia.com/gpu, replicas: 4}]}}")
    assert c.sharing.fail_requests_greater_than_one is False


def test_time_slicing_does_not_fail_requests_by_default():
    c = cfg("sharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 4}]}}")
    assert c.sharing.fail_requests_greater_than_one is False


@pytest.mark.parametrize("text, key, expected", [
    ("version: v2", "version", "'v1'"),
    ("flags: {migStrategy: some}", "flags.migStrategy", "none, single, mixed"),
    ("flags: {plugin: {deviceIDStrategy: serial}}", "flags.plugin.deviceIDStrategy", "uuid, index"),
    ("flags: {plugin: {deviceListStrategy: [envvar, nfs]}}",
     "flags.plugin.deviceListStrategy[1]", "envvar, volume-mounts"),
    ("flags: {plugin: {passDeviceSpecs: 'yes'}}", "flags.plugin.passDeviceSpecs", "true or false"),
    ("sharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 1}]}}",
     "sharing.timeSlicing.resources[0].replicas", "an integer >= 2"),
    ("sharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: two}]}}",
     "sharing.timeSlicing.resources[0].replicas", "an integer >= 2"),
    ("sharing: {timeSlicing: {resources: [{name: nvidia.com/gpu}]}}",
     "sharing.timeSlicing.resources[0].replicas", "missing"),
    ("sharing: {timeSlicing: {resources: [{replicas: 2}]}}",
     "sharing.timeSlicing.resources[0].name", "missing"),
    ("sharing: {timeSlicing: {resources: [{name: amd.com/gpu, replicas: 2}]}}",
     "sharing.timeSlicing.resources[0].name", "nvidia.com/gpu"),
    ("sharing: {timeSlicing: {resources: []}}", "sharing.timeSlicing.resources", "non-empty list"),
    ("sharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 2}, "
     "{name: nvidia.com/gpu, replicas: 3}]}}", "sharing.timeSlicing.resources[1].name", "once"),
    ("sharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 2, devices: -1}]}}",
     "sharing.timeSlicing.resources[0].devices", "positive"),
    ("sharing: {timeSlicing: {renameByDefault: 1, resources: [{name: nvidia.com/gpu, replicas: 2}]}}",
     "sharing.timeSlicing.renameByDefault", "true or false"),
])
def test_bad_values_name_the_key_and_expected_value(text, key, expected):
    with pytest.raises(InputError) as exc:
        cfg(text)
    msg = str(exc.value)
    assert msg.startswith(f"c.yaml: {key}: expected"), msg
    assert expected in msg


@pytest.mark.parametrize("text, key", [
    ("flagz2: {}", "flagz2"),
    ("flags: {plugin: {listStrategy: envvar}}", "flags.plugin.listStrategy"),
    ("sharing: {slicing: {}}", "sharing.slicing"),
])
def test_unknown_keys_are_errors_naming_the_key(text, key):
    with pytest.raises(InputError) as exc:
        cfg(text)
    message = str(exc.value)
    assert message.startswith(f"c.yaml: {key}: unknown key; expected one of"), message
    assert message.endswith("(NVIDIA's plugin ignores unknown keys; this lab refuses them)")


@pytest.mark.parametrize("text, key, meant", [
    ("flags: {migstrategy: none}", "flags.migstrategy", "migStrategy"),
    ("sharing: {timeslicing: {}}", "sharing.timeslicing", "timeSlicing"),
    ("flags: {plugin: {DEVICELISTSTRATEGY: envvar}}", "flags.plugin.DEVICELISTSTRATEGY",
     "deviceListStrategy"),
])
def test_a_key_in_another_case_names_the_key_meant(text, key, meant):
    # NVIDIA's parser (sigs.k8s.io/yaml, then encoding/json) matches field names in any
    # case, so `migstrategy` works there; the lab refuses it and says why.
    with pytest.raises(InputError) as exc:
        cfg(text)
    assert str(exc.value) == (f"c.yaml: {key}: unknown key (did you mean {meant}? NVIDIA's "
                              "plugin would ignore the case difference; this lab refuses it)")


@pytest.mark.parametrize("text, key, meant", [
    ("flagz: {}", "flagz", "flags"),
    ("flags: {plugin: {deviceListStrategies: envvar}}", "flags.plugin.deviceListStrategies",
     "deviceListStrategy"),
    ("sharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, replica: 2}]}}",
     "sharing.timeSlicing.resources[0].replica", "replicas"),
    ("sharing: {timeSlicing: {renameByDefualt: true, resources: [{name: nvidia.com/gpu, "
     "replicas: 2}]}}", "sharing.timeSlicing.renameByDefualt", "renameByDefault"),
])
def test_a_near_miss_names_the_key_meant(text, key, meant):
    with pytest.raises(InputError) as exc:
        cfg(text)
    assert str(exc.value) == (f"c.yaml: {key}: unknown key (did you mean {meant}? NVIDIA's "
                              "plugin would silently ignore this key; this lab refuses it)")


def test_mps_with_mixed_mig_is_refused():
    with pytest.raises(InputError, match="sharing.mps cannot be used with flags.migStrategy: mixed"):
        cfg("flags: {migStrategy: mixed}\nsharing: {mps: {resources: [{name: nvidia.com/gpu, replicas: 2}]}}")


def test_mig_resource_without_mixed_strategy_is_refused():
    with pytest.raises(InputError, match=r"resources\[0\].name: nvidia.com/mig-1g.10gb exists only "
                                         "with flags.migStrategy: mixed"):
        cfg("sharing: {timeSlicing: {resources: [{name: nvidia.com/mig-1g.10gb, replicas: 2}]}}")


def test_cli_override_of_mig_strategy_rechecks_cross_fields():
    c = cfg("sharing: {mps: {resources: [{name: nvidia.com/gpu, replicas: 2}]}}")
    assert c.with_mig_strategy("single").flags.mig_strategy == "single"
    with pytest.raises(InputError, match="--mig-strategy"):
        c.with_mig_strategy("mixed")


def test_ignored_keys_give_warnings_not_errors():
    c = cfg("""
version: v1
flags:
  nvidiaDriverRoot: /run/nvidia/driver
  failOnInitError: false
  gfd: {oneshot: true}
  plugin: {nvidiaCTKPath: /opt/nvidia-ctk}   # upstream default /usr/bin/nvidia-ctk
resources:
  gpus: [{pattern: '*', name: gpu}]
imex: {channelIDs: [0]}
sharing:
  timeSlicing:
    resources:
    - name: nvidia.com/gpu
      replicas: 4
      rename: my-gpu
      devices: [0, 1]
""")
    keys = [w.split(": ")[1] for w in c.warnings]
    assert keys == ["flags.plugin.nvidiaCTKPath", "flags.failOnInitError", "flags.nvidiaDriverRoot",
                    "flags.gfd", "sharing.timeSlicing.resources[0].rename",
                    "sharing.timeSlicing.resources[0].devices", "resources", "imex"]
    # Still acted on: 4 replicas of every GPU.
    assert c.sharing.replicas_for("nvidia.com/gpu") == 4


def test_both_time_slicing_and_mps_mps_wins_with_warning():
    c = cfg("sharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 2}]}, "
            "mps: {resources: [{name: nvidia.com/gpu, replicas: 3}]}}")
    assert c.sharing.strategy == "mps"
    assert c.sharing.replicas_for("nvidia.com/gpu") == 3
    assert any("mps wins" in w for w in c.warnings)


def test_load_config_yaml_syntax_error_has_line_and_column(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("version: v1\nflags:\n  migStrategy: [none\n")
    with pytest.raises(InputError, match=r"bad\.yaml:\d+:\d+: .*expected a YAML config file"):
        load_config(p)


def test_load_config_missing_file(tmp_path):
    with pytest.raises(InputError, match="cannot read config file"):
        load_config(tmp_path / "nope.yaml")


def test_load_config_none_is_default():
    assert load_config(None) == Config()


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES_DIR.glob("*.yaml")
                                        if not p.name.startswith("inventory")))
def test_shipped_example_configs_load_without_warnings(name):
    c = load_config(EXAMPLES_DIR / name)
    assert c.warnings == ()
