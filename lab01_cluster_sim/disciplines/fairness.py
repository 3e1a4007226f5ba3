"""Jain's fairness index.

Source: R. Jain, D.-M. Chiu, W. Hawe, "A Quantitative Measure of Fairness and
Discrimination for Resource Allocation in Shared Computer Systems", DEC-TR-301, 1984:
``J(x) = (sum x)^2 / (n * sum x^2)``. ``J`` is 1 when every ``x_i`` is equal and
``1/n`` when one party gets everything.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from lab01_cluster_sim.errors import InputError


def jain_index(values: Sequence[float]) -> float:
    """Jain's fairness index of ``values`` (n >= 1 non-negative numbers), in [1/n, 1].

    All zeros count as perfectly fair (1.0): nobody got anything, equally.

    Raises:
        InputError: empty input, or a negative or non-finite value.
    """
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        raise InputError("jain_index: expected at least one value, got none")
    if not np.all(np.isfinite(x)) or (x < 0).any():
        raise InputError(f"jain_index: values must be finite and >= 0, got {x.tolist()}")
    sq = float((x * x).sum())
    if sq == 0.0:
        return 1.0
    return float(x.sum() ** 2 / (x.size * sq))
