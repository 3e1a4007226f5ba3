"""Kubernetes resource quantities as exact integers, the way Kueue counts quota.

Kueue keeps every quota and request as an ``int64`` per resource: CPU in milli-cores
(``Quantity.MilliValue()``), every other resource in whole units rounded up
(``Quantity.Value()``): bytes for memory, devices for ``nvidia.com/gpu``, pods for
``pods`` (kubernetes-sigs/kueue ``pkg/resources``: ``ResourceValue``). This module does the
same, so ``"36Gi"`` of memory is ``38654705664`` and ``"500m"`` of CPU is ``500``.

The quantity grammar is the one of ``k8s.io/apimachinery/pkg/api/resource`` (the CRDs
check it with the pattern ``^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$``):
a decimal number with an optional binary suffix (Ki, Mi, Gi, Ti, Pi, Ei), decimal
suffix (n, u, m, k, M, G, T, P, E) or exponent (``1e3``).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

from lab01_cluster_sim.errors import InputError

CPU = "cpu"
MEMORY = "memory"
GPU = "nvidia.com/gpu"
PODS = "pods"

_PATTERN = re.compile(
    r"^(?P<num>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))?$"
)
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "k": 10**3,
            "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
MAX_QUANTITY = 2**63 - 1
"""Largest value Kueue can hold (int64); larger quantities are refused."""
MAX_TEXT = 64
"""Longest quantity string accepted (the grammar needs far fewer characters)."""


def parse_quantity(value: object, where: str) -> Fraction:
    """The exact value of a Kubernetes quantity (``"36Gi"``, ``"500m"``, ``8``, ``"1e3"``).

    Args:
        value: an int or a string (YAML gives ints for bare numbers); floats are refused
            because Kubernetes serialises quantities as strings or integers.
        where: what the value is, for the error message (file, object, field path).

    Returns:
        The value as an exact :class:`~fractions.Fraction` (``"1.5"`` -> ``3/2``).

    Raises:
        InputError: not a quantity, negative, or above :data:`MAX_QUANTITY`.
    """
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise InputError(f"{where}: expected a Kubernetes quantity such as 8, \"500m\" or \"36Gi\", got {value!r}")
    if isinstance(value, int):
        number = Fraction(value)
    else:
        text = value.strip()
        match = _PATTERN.match(text) if len(text) <= MAX_TEXT else None
        if match is None:
            raise InputError(f"{where}: expected a Kubernetes quantity such as 8, \"500m\" or \"36Gi\", got {value!r}")
        number = Fraction(match["num"])
        suffix = match["suffix"] or ""
        if suffix in _BINARY:
            number *= _BINARY[suffix]
        elif suffix in _DECIMAL:
            number *= _DECIMAL[suffix]
        elif suffix:  # exponent
            exponent = Fraction(suffix[1:])
            if exponent.denominator != 1 or abs(exponent) > 30:
                raise InputError(f"{where}: exponent out of range in quantity {value!r}")
            number *= Fraction(10) ** int(exponent)
    if number < 0:
        raise InputError(f"{where}: a quantity must be >= 0, got {value!r}")
    if number > MAX_QUANTITY:
        raise InputError(f"{where}: quantity {value!r} is above the int64 range Kueue counts in")
    return number


def resource_value(resource: str, value: object, where: str) -> int:
    """A quantity of ``resource`` in Kueue's integer unit: milli-cores for ``cpu``,
    whole units rounded up for everything else (bytes for memory).

    Raises:
        InputError: as :func:`parse_quantity`.
    """
    exact = parse_quantity(value, where)
    if resource == CPU:
        return math.ceil(exact * 1000)
    return math.ceil(exact)


def format_amount(resource: str, amount: int) -> str:
    """Write an integer amount of ``resource`` as Kubernetes would show it.

    CPU: whole cores when divisible (``"4"``), else milli-cores (``"1500m"``); memory:
    the largest binary suffix that divides it (``"2Gi"``, ``"512Mi"``), else bytes;
    anything else: the plain integer. This is the unit of Kueue's messages
    ("insufficient unused quota for cpu in flavor default, 500m more needed").
    """
    if resource == CPU:
        return str(amount // 1000) if amount % 1000 == 0 else f"{amount}m"
    if resource == MEMORY and amount:
        for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
            unit = _BINARY[suffix]
            if amount % unit == 0:
                return f"{amount // unit}{suffix}"
    return str(amount)


__all__ = ["CPU", "GPU", "MEMORY", "PODS", "format_amount", "parse_quantity", "resource_value"]
