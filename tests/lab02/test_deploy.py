"""deploy/: the DaemonSet, ConfigMap and Namespace are valid Kubernetes 1.33 objects
(kubernetes-validate, strict: a misspelled field is an error), and they fit the plugin: the
ConfigMap's config loads without warnings, the container's arguments are options of
``serve``, the kubelet's device plugin directory is mounted at the same path, and the image
definition runs ``serve``."""

from __future__ import annotations

import copy
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from lab02_device_plugin.cli import build_parser
from lab02_device_plugin.config import parse_config
from lab02_device_plugin.server import DEVICE_PLUGIN_PATH

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
#: The Kubernetes version the manifests are validated against (stated in deploy/README.md).
KUBERNETES_VERSION = "1.33"


def documents() -> list[dict]:
    return [d for d in yaml.safe_load_all((DEPLOY / "device-plugin.yaml").read_text()) if d]


def by_kind(kind: str) -> dict:
    (doc,) = [d for d in documents() if d["kind"] == kind]
    return doc


def validate(doc: dict) -> None:
    kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)


@pytest.mark.parametrize("kind", ["Namespace", "ConfigMap", "DaemonSet"])
def test_each_object_is_valid_in_strict_mode(kind):
    validate(by_kind(kind))


def test_the_file_holds_exactly_these_objects_in_one_namespace():
    docs = documents()
    assert [d["kind"] for d in docs] == ["Namespace", "ConfigMap", "DaemonSet"]
    namespace = docs[0]["metadata"]["name"]
    assert all(d["metadata"].get("namespace") == namespace for d in docs[1:])


@pytest.mark.parametrize("path, field, misspelled", [
    (("spec", "template", "spec"), "tolerations", "tolerationz"),
    (("spec", "template", "spec", "containers", 0), "volumeMounts", "volumeMount"),
    (("spec", "template", "spec", "volumes", 0, "hostPath"), "path", "pth"),
    (("spec",), "updateStrategy", "updateStrategie"),
])
def test_a_misspelled_field_fails_validation(path, field, misspelled):
    doc = copy.deepcopy(by_kind("DaemonSet"))
    node = doc
    for key in path:
        node = node[key]
    node[misspelled] = node.pop(field)
    # Strict mode refuses the unknown name; a required field reports its absence first.
    with pytest.raises(kubernetes_validate.ValidationError,
                       match=f"'{misspelled}' was unexpected|'{field}' is a required property"):
        validate(doc)


def test_a_misspelled_configmap_field_fails_validation():
    doc = copy.deepcopy(by_kind("ConfigMap"))
    doc["dat"] = doc.pop("data")
    with pytest.raises(kubernetes_validate.ValidationError, match="'dat' was unexpected"):
        validate(doc)


def test_the_configmap_config_loads_in_the_plugin_without_warnings():
    text = by_kind("ConfigMap")["data"]["config.yaml"]
    config = parse_config(yaml.safe_load(text), "ConfigMap config.yaml")
    assert config.warnings == ()
    assert config.sharing.resources[0].replicas == 4


def test_the_daemonset_mounts_the_kubelet_directory_and_the_config():
    spec = by_kind("DaemonSet")["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    volumes = {v["name"]: v for v in spec["volumes"]}
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    plugins = volumes[mounts["device-plugins"]["name"]]["hostPath"]
    # The same path inside and outside: the kubelet dials <dir>/<endpoint> on the host.
    assert plugins == {"path": DEVICE_PLUGIN_PATH.rstrip("/"), "type": "Directory"}
    assert mounts["device-plugins"]["mountPath"] == DEVICE_PLUGIN_PATH.rstrip("/")
    assert volumes["config"]["configMap"]["name"] == by_kind("ConfigMap")["metadata"]["name"]
    assert "subPath" not in mounts["config"]  # subPath mounts never see ConfigMap updates
    config_arg = container["args"][container["args"].index("--config") + 1]
    assert config_arg == mounts["config"]["mountPath"] + "/config.yaml"
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in spec["tolerations"]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env == {"NVIDIA_VISIBLE_DEVICES": "all", "NVIDIA_DRIVER_CAPABILITIES": "utility"}


def test_the_daemonset_arguments_are_serve_options():
    (container,) = by_kind("DaemonSet")["spec"]["template"]["spec"]["containers"]
    parser, _ = build_parser()
    args = parser.parse_args(["serve", *container["args"]])
    assert args.config == Path("/etc/lab02-device-plugin/config.yaml")
    assert args.socket_dir == Path(DEVICE_PLUGIN_PATH)  # the default: the kubelet's directory


def test_the_image_runs_serve_with_the_same_config_path():
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert 'ENTRYPOINT ["python", "-m", "lab02_device_plugin", "serve"]' in dockerfile
    assert 'CMD ["--config", "/etc/lab02-device-plugin/config.yaml"]' in dockerfile
    for line in dockerfile.splitlines():
        if line.startswith("COPY "):
            *sources, _ = line.split()[1:]
            assert all((REPO / s).exists() for s in sources), line
    image = by_kind("DaemonSet")["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image in dockerfile  # the tag the build comment gives
