"""Cloud GPU instance types with approximate on-demand list prices.

The prices are **approximate** on-demand list prices, USD per hour, Linux, in
AWS us-east-1 (N. Virginia) and GCP us-central1, as published on the providers' pricing
pages (https://aws.amazon.com/ec2/pricing/on-demand/ and
https://cloud.google.com/compute/gpus-pricing + https://cloud.google.com/compute/vm-instance-pricing).
:data:`PRICES_AS_OF` is the month of the newest price change they include:

* ``p5.48xlarge`` $55.04/h (was $98.32/h) and ``p4d.24xlarge`` $21.957642/h (was
  $32.7726/h): after AWS's price reduction of June 2025, "up to 45%" on P4 and P5
  instances, on-demand and Savings Plans ("Announcing up to 45% price reduction for
  Amazon EC2 NVIDIA GPU-accelerated instances", AWS News Blog, June 2025,
  https://aws.amazon.com/blogs/aws/announcing-up-to-45-price-reduction-for-amazon-ec2-nvidia-gpu-accelerated-instances/).
  The new us-east-1 figures were checked in December 2026 against several public price
  tables that copy AWS's price list (for example one that records the cut itself as
  98.32 -> 55.04), not against the AWS pricing page, which this project cannot reach.
* the g4dn, g5 and g6 rows (unchanged by that cut) and the GCP rows (``a2-highgpu-1g``
  $3.673/h, ``a2-highgpu-8g`` $29.387/h, ``g2-standard-4`` $0.707/h): list prices as
  taken in May 2025, the same figures that public price tables still carried in 2026.

They change often: check the pricing pages before relying on a figure, and pass your own
catalogue (:func:`load_catalogue`) for real decisions. Spot prices vary by the hour and
zone; :data:`DEFAULT_SPOT_FACTOR` (spot = factor x on-demand) is an assumption for
teaching, not a quote.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from lab01_cluster_sim.errors import InputError

PRICES_AS_OF = "2025-06"
"""Month of the newest list-price change in :data:`DEFAULT_CATALOGUE` (AWS's P4/P5 cut of
June 2025; sources per row in the module docstring)."""

DEFAULT_SPOT_FACTOR = 0.4
"""Assumed spot price as a share of on-demand (spot discounts of 60-70% are typical; varies)."""


@dataclass(frozen=True, slots=True)
class InstanceType:
    """One instance type.

    Attributes:
        name: e.g. ``"g4dn.xlarge"``.
        provider: ``"aws"``, ``"gcp"``...
        gpu_model: e.g. ``"T4"``.
        gpus: GPUs per instance.
        cpu_milli: vCPUs x 1000.
        memory_mib: memory, MiB.
        price_per_hour: on-demand price, USD/h.
        spot_price_per_hour: spot price, USD/h (default: :data:`DEFAULT_SPOT_FACTOR` x on-demand).
        labels: the provider's well-known labels of the type, ``(key, value)`` pairs: for the
            AWS rows of :data:`DEFAULT_CATALOGUE`, ``karpenter.k8s.aws/instance-gpu-name``,
            ``-count``, ``-memory`` (MiB per GPU) and ``-manufacturer``, as the AWS provider's
            instance-type reference lists them (aws/karpenter-provider-aws,
            ``website/content/en/docs/reference/instance-types.md``, v1.14.1).

    Raises:
        InputError: negative quantities or a non-positive price.
    """

    name: str
    provider: str
    gpu_model: str
    gpus: int
    cpu_milli: int
    memory_mib: int
    price_per_hour: float
    spot_price_per_hour: float | None = None
    labels: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if self.gpus < 0 or self.cpu_milli <= 0 or self.memory_mib <= 0 or not self.price_per_hour > 0:
            raise InputError(f"instance type {self.name!r}: gpus >= 0, cpu, memory and price > 0 expected")

    def price(self, capacity_type: str) -> float:
        """Hourly price for ``"on-demand"`` or ``"spot"``."""
        if capacity_type == "spot":
            return self.spot_price_per_hour if self.spot_price_per_hour is not None \
                else self.price_per_hour * DEFAULT_SPOT_FACTOR
        return self.price_per_hour


def _t(name, provider, model, gpus, vcpu, mem_gib, price, aws_gpu: tuple[str, int] | None = None):
    labels = () if aws_gpu is None else (
        ("karpenter.k8s.aws/instance-gpu-count", str(gpus)), ("karpenter.k8s.aws/instance-gpu-manufacturer", "nvidia"),
        ("karpenter.k8s.aws/instance-gpu-memory", str(aws_gpu[1])), ("karpenter.k8s.aws/instance-gpu-name", aws_gpu[0]))
    return InstanceType(name, provider, model, gpus, vcpu * 1000, mem_gib * 1024, price, labels=labels)


DEFAULT_CATALOGUE: tuple[InstanceType, ...] = (
    _t("g4dn.xlarge", "aws", "T4", 1, 4, 16, 0.526, ("t4", 16384)),
    _t("g4dn.12xlarge", "aws", "T4", 4, 48, 192, 3.912, ("t4", 16384)),
    _t("g5.xlarge", "aws", "A10G", 1, 4, 16, 1.006, ("a10g", 22888)),
    _t("g5.12xlarge", "aws", "A10G", 4, 48, 192, 5.672, ("a10g", 22888)),
    _t("g5.48xlarge", "aws", "A10G", 8, 192, 768, 16.288, ("a10g", 22888)),
    _t("g6.xlarge", "aws", "L4", 1, 4, 16, 0.805, ("l4", 22888)),
    _t("p4d.24xlarge", "aws", "A100-40GB", 8, 96, 1152, 21.957642, ("a100", 40960)),
    _t("p5.48xlarge", "aws", "H100", 8, 192, 2048, 55.04, ("h100", 81920)),
    _t("g2-standard-4", "gcp", "L4", 1, 4, 16, 0.707),
    _t("a2-highgpu-1g", "gcp", "A100-40GB", 1, 12, 85, 3.673),
    _t("a2-highgpu-8g", "gcp", "A100-40GB", 8, 96, 680, 29.387),
)
"""Common cloud GPU instance types (prices approximate, see the module docstring)."""


def load_catalogue(path: str | Path) -> tuple[InstanceType, ...]:
    """Read a catalogue from YAML: a list of mappings with the :class:`InstanceType` fields.

    Example entry::

        - {name: g4dn.xlarge, provider: aws, gpu_model: T4, gpus: 1,
           cpu_milli: 4000, memory_mib: 16384, price_per_hour: 0.526,
           labels: {karpenter.k8s.aws/instance-gpu-name: t4}}

    Raises:
        InputError: unreadable file, not a list, a missing or unknown field (named with
            the entry's index), duplicate names.
    """
    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise InputError(f"{p}: cannot read the instance catalogue: {exc}") from None
    if not isinstance(data, list) or not data:
        raise InputError(f"{p}: expected a non-empty YAML list of instance types")
    fields = set(InstanceType.__dataclass_fields__)
    required = fields - {"spot_price_per_hour", "labels"}
    out = []
    for i, entry in enumerate(data):
        if not isinstance(entry, dict):
            raise InputError(f"{p}: entry [{i}]: expected a mapping")
        missing, unknown = required - set(entry), set(entry) - fields
        if missing or unknown:
            raise InputError(f"{p}: entry [{i}]: missing {sorted(missing)} / unknown {sorted(unknown)} fields")
        if not isinstance(entry.get("labels", {}), dict):
            raise InputError(f"{p}: entry [{i}]: labels: expected a mapping of label to value")
        entry = {**entry, "labels": tuple(sorted((str(k), str(v)) for k, v in entry.get("labels", {}).items()))}
        try:
            out.append(InstanceType(**entry))
        except (TypeError, InputError) as exc:
            raise InputError(f"{p}: entry [{i}]: {exc}") from None
    check_unique(out)
    return tuple(out)


def check_unique(types: Sequence[InstanceType]) -> None:
    """Raise InputError naming a duplicated instance-type name."""
    seen: set[str] = set()
    for t in types:
        if t.name in seen:
            raise InputError(f"instance type {t.name!r} listed twice")
        seen.add(t.name)
