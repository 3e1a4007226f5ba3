"""deploy/: the DaemonSet, ConfigMap and Namespace are valid Kubernetes 1.35 objects
(kubernetes-validate, strict: a misspelled field is an error), and they fit the plugin: the
ConfigMap's config loads without warnings, the container's arguments are options of
``serve``, the kubelet's device plugin directory is mounted at the same path, the container
can see MIG devices as NVIDIA's Helm chart arranges it, and the image definition runs
``serve``.

kubernetes-validate checks field names and types against the OpenAPI schema only; it
accepts ``hostPath.type: Directoy``, a toleration ``operator: Exist``, a memory limit
``lots``, a selector that does not match the template's labels, a container named
``Device_Plugin`` or ``restartPolicy: Never`` in a DaemonSet. :func:`semantic_errors` checks
those rules of the API server's validation (pkg/apis/core/validation, apps/validation) for
the fields this manifest uses; ``kubectl apply --dry-run=server`` on a cluster checks all."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from lab02_device_plugin.cli import build_parser
from lab02_device_plugin.plugin.config import parse_config
from lab02_device_plugin.plugin.server import DEVICE_PLUGIN_PATH

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
#: The Kubernetes version the manifests are validated against (stated in deploy/README.md;
#: the project's version, as tools/book_manifests.py).
KUBERNETES_VERSION = "1.35"

# Enumerations and formats of the API server's validation (k8s.io/kubernetes
# pkg/apis/core/validation/validation.go and pkg/apis/apps/validation), for the fields used.
HOST_PATH_TYPES = {"", "DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket",
                   "CharDevice", "BlockDevice"}
TOLERATION_OPERATORS = {"Exists", "Equal"}
TAINT_EFFECTS = {"", "NoSchedule", "PreferNoSchedule", "NoExecute"}
NODE_SELECTOR_OPERATORS = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"}
PULL_POLICIES = {"Always", "IfNotPresent", "Never"}
DAEMONSET_STRATEGIES = {"RollingUpdate", "OnDelete"}
POD_SECURITY_LEVELS = {"privileged", "baseline", "restricted"}
DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
#: resource.Quantity: a decimal number, then an SI or binary suffix or an exponent.
QUANTITY = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+|Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$")


def documents() -> list[dict]:
    return [d for d in yaml.safe_load_all((DEPLOY / "device-plugin.yaml").read_text()) if d]


def by_kind(kind: str) -> dict:
    (doc,) = [d for d in documents() if d["kind"] == kind]
    return doc


def validate(doc: dict) -> None:
    kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)


def semantic_errors(doc: dict) -> list[str]:
    """The API server's rules that the OpenAPI schema does not express, for a Namespace or a
    DaemonSet as this manifest writes them: one message per broken rule (empty: none)."""
    errors: list[str] = []
    if doc["kind"] == "Namespace":
        for key, value in doc["metadata"].get("labels", {}).items():
            if key.startswith("pod-security.kubernetes.io/") and not key.endswith("-version") \
                    and value not in POD_SECURITY_LEVELS:
                errors.append(f"metadata.labels[{key}]: {value!r} not in {sorted(POD_SECURITY_LEVELS)}")
        return errors
    if doc["kind"] != "DaemonSet":
        return errors
    spec = doc["spec"]
    template = spec["template"]
    labels = template["metadata"].get("labels", {})
    for key, value in spec["selector"].get("matchLabels", {}).items():
        if labels.get(key) != value:
            errors.append(f"spec.selector.matchLabels[{key}]: {value!r} does not match the "
                          "template's labels")
    if spec.get("updateStrategy", {}).get("type", "RollingUpdate") not in DAEMONSET_STRATEGIES:
        errors.append(f"spec.updateStrategy.type: not in {sorted(DAEMONSET_STRATEGIES)}")
    pod = template["spec"]
    if pod.get("restartPolicy", "Always") != "Always":
        errors.append(f"spec.template.spec.restartPolicy: {pod['restartPolicy']!r}; a DaemonSet "
                      "allows only Always")
    for i, t in enumerate(pod.get("tolerations", [])):
        where = f"spec.template.spec.tolerations[{i}]"
        if t.get("operator", "Equal") not in TOLERATION_OPERATORS:
            errors.append(f"{where}.operator: {t['operator']!r} not in {sorted(TOLERATION_OPERATORS)}")
        if t.get("effect", "") not in TAINT_EFFECTS:
            errors.append(f"{where}.effect: {t['effect']!r} not in {sorted(TAINT_EFFECTS)}")
        if t.get("operator") == "Exists" and t.get("value"):
            errors.append(f"{where}.value: must be empty when operator is Exists")
    terms = (pod.get("affinity", {}).get("nodeAffinity", {})
             .get("requiredDuringSchedulingIgnoredDuringExecution", {}).get("nodeSelectorTerms", []))
    for i, term in enumerate(terms):
        for j, expr in enumerate(term.get("matchExpressions", [])):
            if expr["operator"] not in NODE_SELECTOR_OPERATORS:
                errors.append(f"nodeSelectorTerms[{i}].matchExpressions[{j}].operator: "
                              f"{expr['operator']!r} not in {sorted(NODE_SELECTOR_OPERATORS)}")
    volumes = {}
    for i, v in enumerate(pod.get("volumes", [])):
        if not DNS1123_LABEL.match(v["name"]):
            errors.append(f"spec.template.spec.volumes[{i}].name: {v['name']!r} is not a DNS-1123 label")
        volumes[v["name"]] = v
        if "hostPath" in v and v["hostPath"].get("type", "") not in HOST_PATH_TYPES:
            errors.append(f"spec.template.spec.volumes[{i}].hostPath.type: "
                          f"{v['hostPath']['type']!r} not in {sorted(HOST_PATH_TYPES)}")
    for i, c in enumerate(pod.get("initContainers", []) + pod["containers"]):
        where = f"container {c['name']!r}"
        if not DNS1123_LABEL.match(c["name"]) or len(c["name"]) > 63:
            errors.append(f"{where}: name is not a DNS-1123 label (lower case, digits, '-')")
        if c.get("imagePullPolicy", "IfNotPresent") not in PULL_POLICIES:
            errors.append(f"{where}.imagePullPolicy: not in {sorted(PULL_POLICIES)}")
        for e in c.get("env", []):
            if not ENV_NAME.match(e["name"]):
                errors.append(f"{where}.env[{e['name']!r}]: not a valid environment variable name")
        for m in c.get("volumeMounts", []):
            if m["name"] not in volumes:
                errors.append(f"{where}.volumeMounts[{m['name']!r}]: no volume of that name")
        for kind in ("requests", "limits"):
            for name, value in c.get("resources", {}).get(kind, {}).items():
                if not QUANTITY.match(str(value)):
                    errors.append(f"{where}.resources.{kind}[{name}]: {value!r} is not a quantity")
        sc = c.get("securityContext", {})
        added = sc.get("capabilities", {}).get("add", [])
        if sc.get("allowPrivilegeEscalation") is False and (
                "CAP_SYS_ADMIN" in added or "SYS_ADMIN" in added or sc.get("privileged")):
            # The API server refuses the CAP_SYS_ADMIN spelling; either spelling grants it,
            # and no_new_privs is no barrier for a process that holds it.
            errors.append(f"{where}.securityContext: allowPrivilegeEscalation false together "
                          "with SYS_ADMIN or privileged")
    return errors


@pytest.mark.parametrize("kind", ["Namespace", "ConfigMap", "DaemonSet"])
def test_each_object_is_valid_in_strict_mode(kind):
    validate(by_kind(kind))


@pytest.mark.parametrize("kind", ["Namespace", "DaemonSet"])
def test_each_object_keeps_the_rules_the_schema_cannot_express(kind):
    assert semantic_errors(by_kind(kind)) == []


def _set(doc: dict, path: tuple, value) -> dict:
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return doc


POD = ("spec", "template", "spec")
CONTAINER = (*POD, "containers", 0)


@pytest.mark.parametrize("path, value, message", [
    ((*POD, "volumes", 0, "hostPath", "type"), "Directoy", "hostPath.type: 'Directoy' not in"),
    ((*POD, "tolerations", 0, "operator"), "Exist", "operator: 'Exist' not in"),
    ((*POD, "tolerations", 1, "effect"), "NoSchedul", "effect: 'NoSchedul' not in"),
    ((*CONTAINER, "resources", "limits", "memory"), "lots", "'lots' is not a quantity"),
    (("spec", "selector", "matchLabels", "app.kubernetes.io/name"), "other",
     "does not match the template's labels"),
    ((*CONTAINER, "name"), "Device_Plugin", "name is not a DNS-1123 label"),
    ((*POD, "restartPolicy"), "Never", "a DaemonSet allows only Always"),
    ((*CONTAINER, "imagePullPolicy"), "IfNotPresen", "imagePullPolicy: not in"),
    ((*CONTAINER, "securityContext", "allowPrivilegeEscalation"), False,
     "allowPrivilegeEscalation false together with SYS_ADMIN"),
])
def test_what_the_schema_accepts_our_own_checks_refuse(path, value, message):
    doc = _set(copy.deepcopy(by_kind("DaemonSet")), path, value)
    validate(doc)  # kubernetes-validate (strict) accepts each of these
    errors = semantic_errors(doc)
    assert len(errors) == 1 and message in errors[0], errors


def test_a_wrong_pod_security_level_is_refused():
    doc = copy.deepcopy(by_kind("Namespace"))
    doc["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] = "priviledged"
    validate(doc)
    assert semantic_errors(doc) == ["metadata.labels[pod-security.kubernetes.io/enforce]: "
                                    "'priviledged' not in ['baseline', 'privileged', 'restricted']"]


def test_the_plugin_container_can_see_mig_devices_as_nvidias_chart_arranges_it():
    # NVIDIA's Helm chart (deployments/helm/nvidia-device-plugin/templates/_helpers.tpl,
    # daemonset-device-plugin.yml) adds SYS_ADMIN whenever migStrategy can be other than
    # none, and NVIDIA_MIG_MONITOR_DEVICES=all so the runtime mounts the MIG capability
    # files. This plugin re-reads its ConfigMap, so a MIG strategy can appear at any time.
    (container,) = by_kind("DaemonSet")["spec"]["template"]["spec"]["containers"]
    assert container["securityContext"]["capabilities"] == {"add": ["SYS_ADMIN"]}
    assert "allowPrivilegeEscalation" not in container["securityContext"]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env["NVIDIA_MIG_MONITOR_DEVICES"] == "all"


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
    assert env == {"NVIDIA_VISIBLE_DEVICES": "all", "NVIDIA_DRIVER_CAPABILITIES": "utility",
                   "NVIDIA_MIG_MONITOR_DEVICES": "all"}


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
