"""Config file: NVIDIA's v1 format as typed data, errors naming the key, warnings for ignored keys."""

from __future__ import annotations

import pytest
import yaml

from lab02_device_plugin.errors import InputError
from lab02_device_plugin.examples import EXAMPLES_DIR
from lab02_device_plugin.plugin.config import Config, load_config, parse_config


def _load_error(tmp_path, text: str, name: str = "config.yaml") -> tuple:
    """Write ``text`` to ``tmp_path/name``, load it, and return the path and the InputError's
    message (fails if loading succeeds)."""
    p = tmp_path / name
    p.write_text(text)
    with pytest.raises(InputError) as info:
        load_config(p)
    return p, str(info.value)


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
    assert keys == ["flags.plugin.nvidiaCTKPath", "flags.nvidiaDriverRoot",
                    "flags.gfd", "sharing.timeSlicing.resources[0].rename",
                    "sharing.timeSlicing.resources[0].devices", "resources", "imex"]
    # Still acted on: 4 replicas of every GPU, and failOnInitError (see test_serve_cli).
    assert c.sharing.replicas_for("nvidia.com/gpu") == 4
    assert c.flags.fail_on_init_error is False
    assert cfg("version: v1\n").flags.fail_on_init_error is True  # upstream's default


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


# issue 11 §2 (polish): a config error names file:line:column of the offending key or value,
# its key path and what was expected. Columns are 1-based, as editors and compilers count.
@pytest.mark.parametrize("text, message", [
    # line 6 "      replicas: 1": 6 spaces + "replicas: " (10) -> the value at column 17
    ("version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 1\n",
     "6:17: sharing.timeSlicing.resources[0].replicas: expected an integer >= 2, got 1"),
    # an unknown key points at the key itself: line 3 "  migstrategy: none", column 3
    ("version: v1\nflags:\n  migstrategy: none\n",
     "3:3: flags.migstrategy: unknown key (did you mean migStrategy? NVIDIA's plugin would ignore the "
     "case difference; this lab refuses it)"),
    # a missing key points at the mapping that lacks it: line 5 "    - replicas: 4", the
    # entry starts after 4 spaces and "- " at column 7
    ("version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - replicas: 4\n",
     "5:7: sharing.timeSlicing.resources[0].name: expected a resource name such as nvidia.com/gpu (missing)"),
    # list items: line 4 "    deviceListStrategy: [envvar, cdi]": 4 + 20 + 1 ("[") + 8 ("envvar, ")
    # = 33 characters before "cdi", column 34
    ("version: v1\nflags:\n  plugin:\n    deviceListStrategy: [envvar, cdi]\n",
     "4:34: flags.plugin.deviceListStrategy[1]: expected one of envvar, volume-mounts, cdi-annotations, "
     "cdi-cri, got 'cdi'"),
    # a rule across keys points at flags.migStrategy: line 2 "flags: {migStrategy: mixed}", 21 -> 22
    ("version: v1\nflags: {migStrategy: mixed}\nsharing:\n  mps:\n    resources:\n"
     "    - {name: nvidia.com/gpu, replicas: 2}\n",
     "2:22: sharing.mps cannot be used with flags.migStrategy: mixed (MPS shares full GPUs only); "
     "expected migStrategy none or single, or sharing.timeSlicing"),
    # ... or at the resource whose name breaks it: line 6 "    - name: nvidia.com/mig-1g.10gb", 4 + 2 + 6 -> 13
    ("version: v1\nflags: {migStrategy: single}\nsharing:\n  timeSlicing:\n    resources:\n"
     "    - name: nvidia.com/mig-1g.10gb\n      replicas: 2\n",
     "6:13: sharing.timeSlicing.resources[0].name: nvidia.com/mig-1g.10gb exists only with "
     "flags.migStrategy: mixed (it is single); expected nvidia.com/gpu"),
    # a value merged in with << is found where it is written: line 1 "x-base: &b {replicas: 1}"
    # is itself an unknown top-level key (column 1)
    ("x-base: &b {replicas: 1}\nversion: v1\n",
     "1:1: x-base: unknown key; expected one of version, flags, sharing, resources, imex (NVIDIA's "
     "plugin ignores unknown keys; this lab refuses them)"),
    # a whole document of the wrong kind: line 1, column 1
    # fresh tester 2 F8: shown as YAML flow style (plain strings bare), not as a Python repr
    ("- version: v1\n", "1:1: (top level): expected a mapping, got [{version: v1}]"),
])
def test_load_config_error_names_file_line_column_key_and_expected(tmp_path, text, message):
    p, error = _load_error(tmp_path, text)
    assert error == f"{p}:{message}"


def test_load_config_warnings_name_the_line_of_the_key(tmp_path):
    p = tmp_path / "config.yaml"
    p.write_text("version: v1\n"
                 "resources:\n"                       # line 2: ignored, as upstream
                 "  gpus: []\n"
                 "sharing:\n"
                 "  timeSlicing:\n"
                 "    resources:\n"
                 "    - name: nvidia.com/gpu\n"
                 "      replicas: 2\n"
                 "      devices: [0]\n")              # line 9, after 6 spaces: 9:7
    c = load_config(p)
    assert [w.split(": ")[0] for w in c.warnings] == [f"{p}:9:7", f"{p}:2:1"]
    assert c.warnings[0].startswith(f"{p}:9:7: sharing.timeSlicing.resources[0].devices: only \"all\" is acted on")


def test_yaml_marks_follow_merge_keys_and_aliases():
    from lab02_device_plugin.plugin.config import yaml_marks

    text = ("defaults: &d {replicas: 4}\n"            # line 1
            "sharing:\n"                              # line 2
            "  timeSlicing:\n"                        # line 3
            "    resources:\n"                        # line 4
            "    - <<: *d\n"                          # line 5
            "      name: nvidia.com/gpu\n")           # line 6
    marks = yaml_marks(text)
    # replicas comes from the anchor on line 1: "defaults: &d {replicas: " is 24 characters
    assert marks.values["sharing.timeSlicing.resources[0].replicas"] == (1, 25)
    assert marks.keys["sharing.timeSlicing.resources[0].name"] == (6, 7)
    assert marks.values["sharing.timeSlicing.resources[0].name"] == (6, 13)
    # a missing key falls back to the nearest enclosing value: the list item at 5:7
    assert marks.value("sharing.timeSlicing.resources[0].devices") == (5, 7)
    assert marks.value("(top level)") == (1, 1)


def test_yaml_marks_walk_each_node_once_and_skip_overlong_paths():
    from lab02_device_plugin.plugin.config import MAX_MARK_PATH, yaml_marks

    # 9 aliases per level over 4 levels expand to 9**4 = 6561 lists of 9 scalars, but the
    # file has 1 + 4 anchored lists of 9 items: 5 + 45 = 50 nodes below the top mapping,
    # each walked once (an alias keeps the path where its node was first met)
    levels = ["a0: &a0 [" + ", ".join(["x"] * 9) + "]"]
    for i in range(1, 5):
        levels.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    marks = yaml_marks("\n".join(levels) + "\n")
    # the document, 5 keys, a0's 9 scalars, and a1..a4's 9 items each (aliases recorded,
    # not descended): 1 + 5 + 9 + 4 x 9 = 51 value positions
    assert len(marks.values) == 51
    # an alias item is placed where the node it names is written: a0's list, line 1, after
    # "a0: " (4 characters) at column 5, where its anchor &a0 starts
    assert marks.values["a1[8]"] == (1, 5)
    # a key path longer than the bound is neither recorded nor descended into
    long_key = "k" * (MAX_MARK_PATH + 1)
    marks = yaml_marks(f"version: v1\n{long_key}: {{a: 1, b: 2}}\n")
    assert set(marks.keys) == {"version"} and marks.value(f"{long_key}.a") == (1, 1)


def test_parse_config_of_loaded_data_keeps_the_message_without_a_position():
    # the book and notebooks parse dicts: no file, no line
    with pytest.raises(InputError) as info:
        parse_config({"version": "v1", "flags": {"migStrategy": "full"}}, "<book config>")
    assert str(info.value) == "<book config>: flags.migStrategy: expected one of none, single, mixed, got 'full'"


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


# fresh tester 2 F1: keys and types inside flags.gfd, imex and resources (accepted but not acted
# on) are checked too, with the spellings of NVIDIA's api/config/v1 (flags.go, imex.go,
# resources.go): "a misspelled field is an error" holds everywhere serve --help says it does.
@pytest.mark.parametrize("text, message", [
    # line 2 "imex: {channelIds: [1]}": "imex: {" is 7 characters, the key at column 8
    ("version: v1\nimex: {channelIds: [1]}\n",
     "2:8: imex.channelIds: unknown key (did you mean channelIDs? NVIDIA's plugin would ignore the case "
     "difference; this lab refuses it)"),
    # line 3 "  gfd: {oneShot: true}": "  gfd: {" is 8 characters, column 9
    ("version: v1\nflags:\n  gfd: {oneShot: true}\n",
     "3:9: flags.gfd.oneShot: unknown key (did you mean oneshot? NVIDIA's plugin would ignore the case "
     "difference; this lab refuses it)"),
    # "flags: {gfd: {" is 14 characters, column 15
    ("version: v1\nflags: {gfd: {bogusKey: 1}}\n",
     "2:15: flags.gfd.bogusKey: unknown key; expected one of oneshot, noTimestamp, sleepInterval, outputFile, "
     "machineTypeFile"),
    # "flags: {gfd: " is 13 characters, the value at column 14
    ("version: v1\nflags: {gfd: 5}\n", "2:14: flags.gfd: expected a mapping, got 5"),
    # 'resources: {' 12 + 'gpus: [' 7 + '{' 1 + 'pattern: "*", ' 14 = 34 characters, column 35
    ('version: v1\nresources: {gpus: [{pattern: "*", nme: gpu}]}\n',
     "2:35: resources.gpus[0].nme: unknown key (did you mean name? NVIDIA's plugin would silently ignore"),
    # "flags: {" 8 + "failOnInitError: " 17 = 25 characters, the value at column 26
    ('version: v1\nflags: {failOnInitError: "no"}\n', "2:26: flags.failOnInitError: expected true or false, got 'no'"),
    # "imex: {" 7 + "channelIDs: " 12 = 19, column 20; upstream's AssertChannelIDsValid allows [] or [0]
    ("version: v1\nimex: {channelIDs: [1]}\n", "2:20: imex.channelIDs: expected [] or [0]"),
    ("version: v1\nflags: {gfd: {sleepInterval: 60}}\n", "2:30: flags.gfd.sleepInterval: expected a string, got 60"),
])
def test_ignored_sections_still_refuse_typos_and_wrong_types(tmp_path, text, message):
    p, error = _load_error(tmp_path, text)
    assert error.startswith(f"{p}:{message}")


@pytest.mark.parametrize("text", ["", "# nothing yet\n"])
def test_an_empty_config_file_runs_the_defaults_with_one_warning(tmp_path, text):
    # fresh tester 2 F9: an empty --config was silent at start-up (an empty --inventory is an error)
    p = tmp_path / "empty.yaml"
    p.write_text(text)
    c = load_config(p)
    assert (c.flags, c.sharing) == (Config().flags, Config().sharing)
    assert c.warnings == (f"{p}: empty config file: running with the defaults (no sharing, migStrategy none)",)


def test_a_tab_in_the_indentation_is_named(tmp_path):
    # fresh tester 2 F8: line 3 starts with a tab (column 1); PyYAML only says "cannot start any token"
    p, error = _load_error(tmp_path, "version: v1\nflags:\n\tmigStrategy: none\n", "tab.yaml")
    assert error == (f"{p}:3:1: invalid YAML (found character that cannot start any token: a tab; YAML "
                     "indents with spaces only); expected a YAML config file")


def test_a_key_that_is_not_a_string_is_pointed_at(tmp_path):
    # fresh tester 2 F8: "1: x" is on line 2, column 1 (it was reported at 1:1, the mapping)
    p, error = _load_error(tmp_path, "version: v1\n1: x\n", "c.yaml")
    assert error == f"{p}:2:1: (top level): expected string keys, got 1"
