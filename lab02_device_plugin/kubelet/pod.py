"""Pods as the kubelet receives them: names, quantities, containers, phases, manifests.

What the API server has checked before a pod reaches a kubelet, and what the kubelet reads
from it: qualified and extended resource names (apimachinery ``validation.go``
``IsQualifiedName``, ``v1helper.IsExtendedResourceName`` in pkg/apis/core/v1/helper/helpers.go),
quantities (apimachinery ``resource.ParseQuantity``), the container resource rules of
``pkg/apis/core/validation`` (extended resources whole, requests equal to limits), and the
pod phases of the core API. :func:`pods_from_manifests` and :func:`parse_admit` turn user
input into :class:`Pod` records, validated as the API server would.
"""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction

from lab02_device_plugin.errors import InputError
from lab02_device_plugin.limits import MAX_DEVICES, short_repr, shorten

_QUALIFIED_NAME_PART = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")

def is_qualified_name(name: str) -> bool:
    """Kubernetes ``IsQualifiedName``: optional DNS-1123 subdomain prefix (at most 253
    characters) and ``/``, then a name part of at most 63 characters matching
    ``[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`` (apimachinery validation.go)."""
    parts = name.split("/")
    if len(parts) == 1:
        prefix, part = "", parts[0]
    elif len(parts) == 2:
        prefix, part = parts
        if not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN.match(prefix):
            return False
    else:
        return False
    return 0 < len(part) <= 63 and bool(_QUALIFIED_NAME_PART.match(part))


def is_extended_resource_name(name: str) -> bool:
    """Kubernetes ``v1helper.IsExtendedResourceName``, which the kubelet applies at Register.

    True when the name is domain-prefixed (contains ``/``), not in the ``kubernetes.io/``
    namespace (nor a subdomain of it), does not start with ``requests.``, and
    ``requests.<name>`` is a qualified name. ``nvidia.com/gpu`` and ``nvidia.com/mig-1g.10gb``
    pass; ``gpu``, ``kubernetes.io/gpu`` and ``nvidia.com/`` do not.
    """
    if "/" not in name:
        return False
    domain = name.split("/", 1)[0]
    if domain == "kubernetes.io" or domain.endswith(".kubernetes.io"):
        return False
    if name.startswith("requests."):
        return False
    return is_qualified_name("requests." + name)


#: A resource.Quantity (apimachinery ``resource.ParseQuantity``): a decimal number, then an
#: exponent, a decimal SI suffix or a binary suffix.
_QUANTITY = re.compile(r"^([+-]?(?:\d+(?:\.\d*)?|\.\d+))(?:[eE]([+-]?\d{1,3})|"
                       r"(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?$")
_SI_EXPONENTS = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_EXPONENTS = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
#: Largest quantity taken (int64, the range of a Quantity's integer value).
MAX_QUANTITY = 2**63 - 1


def parse_quantity(value: int | float | str, where: str, most: int = MAX_QUANTITY, why: str = "") -> int:
    """An extended resource quantity as a whole number of devices.

    Any Kubernetes quantity whose value is whole: ``2``, ``"2"``, ``"1k"`` (1000), ``"1e3"``,
    ``"2Ki"`` (2048), ``"1.5k"`` (1500). Extended resources must be integers: the API server
    refuses ``0.5`` or ``500m``.

    Raises:
        InputError: naming ``where`` (e.g. ``pod-1/main limits[nvidia.com/gpu]``): not a
            quantity, fractional, negative, or above ``most`` (default :data:`MAX_QUANTITY`;
            ``why`` is added to the message, e.g. `` (the reason)``).
    """
    if isinstance(value, bool):
        raise InputError(f"{where}: expected a whole number of devices, got {short_repr(value)}")
    if isinstance(value, int):
        number = Fraction(value)
    elif isinstance(value, float) and math.isfinite(value):
        number = Fraction(value)
    elif isinstance(value, str) and len(value) <= 64 and _QUANTITY.match(value.strip()):
        digits, exponent, suffix = _QUANTITY.match(value.strip()).groups()
        number = Fraction(digits)
        if exponent is not None:
            number *= Fraction(10) ** int(exponent)
        elif suffix in _SI_EXPONENTS:
            number *= Fraction(10) ** _SI_EXPONENTS[suffix]
        elif suffix in _BINARY_EXPONENTS:
            number *= 2 ** _BINARY_EXPONENTS[suffix]
    else:
        raise InputError(f"{where}: expected a whole number of devices (a Kubernetes quantity "
                         f"such as 1, 8 or 1k), got {short_repr(value)}")
    if number.denominator != 1:
        raise InputError(f"{where}: expected a whole number of devices (extended resources "
                         f"cannot be fractional), got {short_repr(value)}")
    if number < 0:
        raise InputError(f"{where}: expected a non-negative number of devices, got {short_repr(value)}")
    if number > most:
        raise InputError(f"{where}: expected at most {most} devices{why}, got {short_repr(value)}")
    return int(number)

@dataclass
class Container:
    """A container of a pod: its name and resource limits (and optional requests).

    ``limits`` maps a resource name to a quantity, e.g. ``{"nvidia.com/gpu": 1}``. For an
    extended resource the request, if given, must equal the limit (Kubernetes rule: extended
    resources cannot be overcommitted). Resources without a ``/`` (cpu, memory) are ignored by
    this mock. ``restart_policy`` is for init containers only: ``"Always"`` makes one a
    sidecar (a restartable init container), which keeps running beside the app containers
    and keeps its devices; any other init container runs to completion first, and its devices
    can be reused by the app containers.
    """

    name: str
    limits: dict[str, int | str] = field(default_factory=dict)
    requests: dict[str, int | str] | None = None
    restart_policy: str | None = None

    @property
    def sidecar(self) -> bool:
        """True for a restartable init container (``restartPolicy: Always``)."""
        return self.restart_policy == "Always"


@dataclass
class Pod:
    """A pod as the kubelet admits it. ``uid`` defaults to a UUID derived from namespace/name,
    so the same pod gets the same UID in every run (deterministic checkpoints)."""

    name: str
    containers: list[Container]
    init_containers: list[Container] = field(default_factory=list)
    namespace: str = "default"
    uid: str = ""

    def __post_init__(self) -> None:
        if not self.uid:
            self.uid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"pod:{self.namespace}/{self.name}"))


#: Pod phases (``PodStatus.phase`` in the Kubernetes API).
PENDING, RUNNING, SUCCEEDED, FAILED = "Pending", "Running", "Succeeded", "Failed"
TERMINAL_PHASES = (SUCCEEDED, FAILED)
#: Reason of a pod whose admission failed in the restart window and will be retried (only
#: with the retry option; not a Kubernetes reason: today's kubelet fails the pod instead).
ADMISSION_RETRY = "AdmissionRetry"


@dataclass
class PodStatus:
    """What the API server would show for a pod handed to this node.

    Attributes:
        pod: the pod.
        phase: Pending, Running, Succeeded or Failed.
        reason: FailedScheduling (Pending, never bound), UnexpectedAdmissionError /
            OutOf<resource> / CreateContainerError (Failed at admission), Completed
            (Succeeded), Error (Failed with a non-zero exit code), or AdmissionRetry
            (Pending, waiting for the retry option's next attempt).
        message: the kubelet's or scheduler's message.
        bound: True once the pod is bound to the node (spec.nodeName set).
        retries_left: admission retries still allowed (retry option only).
    """

    pod: Pod
    phase: str
    reason: str = ""
    message: str = ""
    bound: bool = False
    retries_left: int = 0

    @property
    def terminal(self) -> bool:
        """True for Succeeded and Failed: the kubelet never admits the pod again."""
        return self.phase in TERMINAL_PHASES


def extended_limits(container: Container) -> dict[str, int]:
    """The container's extended resource limits (names with a ``/``) as whole device counts."""
    return {r: parse_quantity(q, f"container {container.name} limits[{r}]")
            for r, q in container.limits.items() if "/" in r}


def limits_text(container: Container) -> str:
    """``(nvidia.com/gpu: 1)`` for the narration (``(no devices)`` without extended limits)."""
    limits = {r: q for r, q in container.limits.items() if "/" in r}
    return "(" + (", ".join(f"{r}: {q}" for r, q in limits.items()) or "no devices") + ")"


#: Resource names without a domain that the API server accepts for a container
#: (``standardContainerResources`` in pkg/apis/core/helper; hugepages-<size> too).
_STANDARD_RESOURCES = ("cpu", "memory", "ephemeral-storage")


def check_resource_name(resource: object, where: str) -> None:
    """The API server's resource name rule (validation.go ``validateContainerResourceName``):
    a standard name (cpu, memory, hugepages-<size>, ...) or a domain-prefixed extended
    resource name (:func:`is_extended_resource_name`) or a ``kubernetes.io/`` native name."""
    if not isinstance(resource, str) or not resource:
        raise InputError(f"{where}: resource name {resource!r}: expected a non-empty name")
    if "/" not in resource:
        if resource in _STANDARD_RESOURCES or resource.startswith("hugepages-"):
            return
        raise InputError(f"{where}: resource name {resource!r}: expected a standard resource "
                         "(cpu, memory, ...) or a domain-prefixed extended resource such as "
                         "nvidia.com/gpu")
    domain = resource.split("/", 1)[0]
    native = domain == "kubernetes.io" or domain.endswith(".kubernetes.io")
    if not (is_extended_resource_name(resource) or (native and is_qualified_name(resource))):
        raise InputError(f"{where}: resource name {resource!r}: expected a valid extended "
                         "resource name (DNS subdomain, '/', a name of at most 63 characters "
                         "of [A-Za-z0-9-_.]), e.g. nvidia.com/gpu")


_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def validate_pod(pod: Pod) -> None:
    """The API server's checks that matter for devices; raises InputError naming the field.

    Names as the API server checks them (Kubernetes v1.35, ``pkg/apis/core/validation/
    validation.go``): ``ValidatePodName`` is ``NameIsDNSSubdomain`` (a DNS-1123 subdomain, at
    most 253 characters), ``ValidateNamespaceName`` a DNS-1123 label (at most 63)."""
    if not pod.name:
        raise InputError("pod: metadata.name is empty")
    if len(pod.name) > 253 or not _DNS1123_SUBDOMAIN.match(pod.name):
        raise InputError(f"pod {short_repr(pod.name)}: metadata.name: expected a DNS-1123 subdomain, Kubernetes' rule "
                         "for pod names (lower-case letters, digits, '-' and '.', starting and ending with a letter "
                         "or digit, at most 253 characters), e.g. pod-1")
    if len(pod.namespace) > 63 or not _DNS1123_LABEL.match(pod.namespace):
        raise InputError(f"pod {pod.name} metadata.namespace: expected a DNS-1123 label, Kubernetes' rule for "
                         f"namespaces (lower-case letters, digits and '-', at most 63 characters), got "
                         f"{short_repr(pod.namespace)}")
    seen = set()
    for kind, containers in (("initContainers", pod.init_containers), ("containers", pod.containers)):
        for index, container in enumerate(containers):
            where = f"pod {pod.name} spec.{kind}[{index}]"
            if not container.name:
                raise InputError(f"{where}.name: expected a container name")
            if container.name in seen:
                raise InputError(f"{where}.name: duplicate container name {container.name!r}")
            seen.add(container.name)
            if container.restart_policy is not None and (
                    kind != "initContainers" or container.restart_policy != "Always"):
                raise InputError(f"{where}.restartPolicy: {shorten(repr(container.restart_policy))}; "
                                 "expected Always, on init containers only (a sidecar)")
            for resource in list(container.limits) + list(container.requests or {}):
                check_resource_name(resource, f"{where}.resources")
            for resource, value in container.limits.items():
                if "/" not in resource:
                    continue
                limit = parse_quantity(value, f"{where}.resources.limits[{resource}]")
                if container.requests is not None and resource in container.requests:
                    request = parse_quantity(container.requests[resource],
                                             f"{where}.resources.requests[{resource}]")
                    if request != limit:
                        raise InputError(f"{where}.resources.requests[{resource}]: must be equal "
                                         f"to {resource} limit of {limit} (extended resources "
                                         f"cannot be overcommitted), got {request}")
            for resource in (container.requests or {}):
                if "/" in resource and resource not in container.limits:
                    raise InputError(f"{where}.resources.limits[{resource}]: extended resources "
                                     f"need a limit equal to the request")
    if not pod.containers:
        raise InputError(f"pod {pod.name} spec.containers: expected at least one container")


def pods_from_manifests(documents: Iterable[object], source: str) -> list[Pod]:
    """Pods from Kubernetes Pod manifests (already parsed YAML documents; ``kind: List`` too).

    Reads metadata.name / namespace / uid and, per container and init container, name and
    resources.limits / requests. Every pod is validated as the API server would (whole-number
    quantities, requests equal to limits, valid resource names) before any is returned.
    Raises InputError naming ``source``, the document and the field.
    """
    pods: list[Pod] = []
    for number, document in enumerate(documents):
        if document is None:
            continue
        where = f"{source}: document {number + 1}"
        if not isinstance(document, dict):
            raise InputError(f"{where}: expected a Pod manifest (a mapping), got {type(document).__name__}")
        if document.get("kind") == "List":
            pods.extend(pods_from_manifests(document.get("items") or [], f"{where} items"))
            continue
        if document.get("kind") != "Pod":
            raise InputError(f"{where}: kind: expected Pod, got {document.get('kind')!r}")
        meta = document.get("metadata") or {}
        spec = document.get("spec") or {}
        if not meta.get("name"):
            raise InputError(f"{where}: metadata.name: expected the pod's name")

        def containers(key: str) -> list[Container]:
            out = []
            for index, c in enumerate(spec.get(key) or []):
                if not isinstance(c, dict) or not c.get("name"):
                    raise InputError(f"{where}: spec.{key}[{index}].name: expected a container name")
                resources = c.get("resources") or {}
                requests = resources.get("requests")
                limits = resources.get("limits") or {}
                if not isinstance(limits, dict) or not (requests is None or isinstance(requests, dict)):
                    raise InputError(f"{where}: spec.{key}[{index}].resources: expected limits "
                                     "and requests as mappings of resource name to quantity")
                policy = c.get("restartPolicy") if key == "initContainers" else None
                out.append(Container(c["name"], dict(limits),
                                     dict(requests) if requests is not None else None,
                                     None if policy is None else str(policy)))
            return out

        pod = Pod(str(meta["name"]), containers("containers"), containers("initContainers"),
                  namespace=meta.get("namespace", "default"), uid=meta.get("uid", ""))
        try:
            validate_pod(pod)
        except InputError as exc:
            raise InputError(f"{where}: {exc}") from None
        pods.append(pod)
    return pods


def parse_admit(spec: str) -> Pod:
    """A one-container pod from ``NAME=RESOURCE:N[,RESOURCE:N...]``, e.g.
    ``pod-1=nvidia.com/gpu:1``; one pod per ``--admit``. NAME must be a valid pod name (a
    DNS-1123 subdomain: :func:`validate_pod`), each RESOURCE an extended resource name
    (:func:`is_extended_resource_name`: ``nvidia.com/gpu``, not ``gpu``), each N a whole number
    from 0 to :data:`~lab02_device_plugin.limits.MAX_DEVICES`. Raises InputError naming the
    option."""
    name, sep, rest = spec.partition("=")
    if not sep or not name or not rest:
        raise InputError(f"--admit {spec!r}: expected NAME=RESOURCE:N, e.g. pod-1=nvidia.com/gpu:1")
    if "=" in rest:
        raise InputError(f"--admit {spec!r}: one pod per --admit; repeat the option for more "
                         "pods (--admit p1=nvidia.com/gpu:1 --admit p2=nvidia.com/gpu:1)")
    limits: dict[str, int | str] = {}
    for item in rest.split(","):
        resource, sep, count = item.rpartition(":")
        if not sep or not resource:
            raise InputError(f"--admit {spec!r}: expected RESOURCE:N, got {item!r}")
        if not is_extended_resource_name(resource):
            raise InputError(f"--admit {spec!r}: {resource!r} is not an extended resource name; "
                             "expected a domain-prefixed name such as nvidia.com/gpu")
        if resource in limits:
            raise InputError(f"--admit {spec!r}: {resource} given twice; expected each resource once")
        limits[resource] = parse_quantity(count, f"--admit {spec!r}: count of {resource}", MAX_DEVICES,
                                          " (no node can advertise more of one resource: the kubelet reads them "
                                          "all from one 4 MiB ListAndWatch response)")
    pod = Pod(name, [Container("main", limits)])
    try:
        validate_pod(pod)
    except InputError as exc:
        raise InputError(f"--admit {spec!r}: {exc}") from None
    return pod
