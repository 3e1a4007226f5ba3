"""What every kind of a scenario reads with: bounds, annotation keys, field readers, errors.

The loader (:mod:`.load`) and the per-kind readers (:mod:`.kueue`, :mod:`.pods`) all report a
bad field the same way (:func:`error_at`: file:line:column, ``Kind/name``, the field path, what
was expected) and share the course's annotation keys and the bounds on a scenario.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from lab01_cluster_sim.admission.plugin import QUEUE_KEY
from lab01_cluster_sim.admission.quantity import CPU, GPU, MEMORY, parse_quantity
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.model import MAX_COUNT
from lab01_cluster_sim.scenario.validate import object_name
from lab01_cluster_sim.scenario.yamlio import Document, ScenarioError, format_path, where

MAX_FILES = 200
"""Most YAML files in a scenario folder."""
MAX_OBJECTS = 20_000
"""Most objects in one scenario (a 3,000-Pod file, 780 kB, is read and checked in about 6 s of
CPU)."""

MAX_SECONDS = 1e9
"""Largest finite ``lab01.course/duration`` and ``lab01.course/submit-time``, s (about 31.7
years; the Alibaba 2023 default pod list spans 12,902,960 s, about 149 days). A larger time is a typo, and near
1e308 the engine's sums overflow to inf (a makespan of 300 digits)."""

SHARED_DATA_VAR = "$COURSE_SHARED_DATA"
"""A Scenario path starting with this (or ``${COURSE_SHARED_DATA}``) is under the course's shared
data folder (see ``_Builder._resolve``)."""

DURATION = "lab01.course/duration"
SUBMIT_TIME = "lab01.course/submit-time"
GPU_MILLI = "lab01.course/gpu-milli"
IMAGE_GIB = "lab01.course/image-gib"
GPU_PRODUCT = "nvidia.com/gpu.product"
GPU_CLIQUE = "nvidia.com/gpu.clique"
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
WPC_LABEL = "kueue.x-k8s.io/priority-class"
MIN_PARALLELISM = "kueue.x-k8s.io/job-min-parallelism"
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
HAMI_GPU_POLICY = "hami.io/gpu-scheduler-policy"
MIB = 2**20
KNOWN_RESOURCES = (CPU, MEMORY, GPU, "ephemeral-storage")


@dataclass
class Source:
    """Where an object came from: file, line, column, ``Kind/name``."""

    file: str
    pos: tuple[int, int] | None
    name: str

    def __str__(self) -> str:
        return f"{where(self.file, self.pos)}: {self.name}"


def source_of(doc: Document, path=()) -> Source:
    return Source(doc.file, doc.pos(path), object_name(doc.data))


def error_at(doc: Document, path: tuple, message: str) -> ScenarioError:
    return ScenarioError(f"{where(doc.file, doc.pos(path))}: {object_name(doc.data)}: {format_path(path)}: {message}")


COURSE_KEYS = (DURATION, SUBMIT_TIME, GPU_MILLI, IMAGE_GIB)
"""Every ``lab01.course/`` annotation the reader knows; any other is an error."""
KNOWN_KEYS = (QUEUE_KEY, WPC_LABEL, MIN_PARALLELISM, POD_GROUP_LABEL)
"""Kueue and coscheduling labels/annotations the reader reads; a near miss is an error."""


def check_course_keys(doc: Document, meta_path: tuple, meta: dict) -> None:
    """Refuse unknown ``lab01.course/*`` keys and near misses of the Kueue and coscheduling
    keys the reader reads (a misspelt key would otherwise be ignored)."""
    import difflib

    for where_ in ("annotations", "labels"):
        for key in meta.get(where_, {}) or {}:
            path = meta_path + (where_, key)
            if key.startswith("lab01.course/") and key not in COURSE_KEYS:
                close = difflib.get_close_matches(key, COURSE_KEYS, n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise key_error(doc, path, f"unknown annotation ({hint}expected one of: {', '.join(COURSE_KEYS)})")
            if key not in KNOWN_KEYS and key.startswith(("kueue.x-k8s.io/", "scheduling.x-k8s.io/")):
                close = difflib.get_close_matches(key, KNOWN_KEYS, n=1, cutoff=0.85)
                if close:
                    raise key_error(doc, path, f"unknown key; did you mean {close[0]!r}?")


def key_error(doc: Document, path: tuple, message: str) -> ScenarioError:
    return ScenarioError(f"{where(doc.file, doc.key_pos(path))}: {object_name(doc.data)}: {format_path(path)}: {message}")


def check_device_count(doc: Document, path: tuple, value: Any) -> None:
    try:
        exact = parse_quantity(value, "")
    except InputError:
        return   # the quantity error itself is reported where the value is read
    if exact.denominator != 1:
        raise error_at(doc, path, f"must be an integer, got {value!r} (an extended resource such as {GPU} counts whole "
                   "devices; a share of a GPU is the annotation lab01.course/gpu-milli)")
    if exact > MAX_COUNT:   # the model's bound, named at the field (the model's own error names gpu_count)
        raise error_at(doc, path, f"expected at most {MAX_COUNT:,} devices, got {value!r}")


def check_extended(doc: Document, path: tuple, res: dict) -> None:
    """Kubernetes' rules for extended resources such as nvidia.com/gpu (Kubernetes docs,
    "Schedule GPUs"; API validation of ResourceRequirements): whole numbers only; a request
    needs a limit; request and limit equal (they cannot be overcommitted)."""
    limits, requests = res.get("limits", {}) or {}, res.get("requests", {}) or {}
    for part, values in (("limits", limits), ("requests", requests)):
        if GPU in values:
            check_device_count(doc, path + (part, GPU), values[GPU])
    if GPU in requests and GPU not in limits:
        raise error_at(doc, path + ("requests", GPU), f"a request of {GPU} needs a limit: Kubernetes refuses requests "
                   "without limits for resources that cannot be overcommitted (give limits only)")
    if GPU in requests and GPU in limits:
        try:
            same = parse_quantity(requests[GPU], "") == parse_quantity(limits[GPU], "")
        except InputError:
            return
        if not same:
            raise error_at(doc, path + ("requests", GPU), f"must equal the {GPU} limit ({limits[GPU]}), got "
                       f"{requests[GPU]!r}: extended resources cannot be overcommitted")


def walk(data: Any, path: tuple) -> Any:
    """(path, value) of every leaf under ``data``."""
    if isinstance(data, dict):
        for k, v in data.items():
            yield from walk(v, path + (k,))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from walk(v, path + (i,))
    else:
        yield path, data


def get_field(data: Any, path: tuple) -> Any:
    for part in path:
        if not isinstance(data, (dict, list)):
            return None
        try:
            data = data[part]
        except (KeyError, IndexError):
            return None
    return data


_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ns|us|µs|ms|s|m|h)")
_UNIT = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """A Go duration (``"30s"``, ``"1h30m"``, ``"720h"``) in seconds.

    Raises:
        InputError: not a duration.
    """
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise InputError(f"expected a duration such as 30s, 1h30m or 720h, got {text!r}")
    return sum(float(n) * _UNIT[u] for n, u in parts)
