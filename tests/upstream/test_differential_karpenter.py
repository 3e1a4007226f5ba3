"""Karpenter v1.13.0's scheduling requirements as the oracle of the simulator's autoscaler.

Each generated case (a NodePool over some of the simulator's catalogue instance types and
one capacity type, one pending pod; :func:`upstream.strategies.karpenter_case`) asks both
sides which instance types a node could be launched with for the pod: the simulator's
autoscaler (:mod:`upstream.sim_adapter`) and Karpenter's Requirements, Taints and
resources.Fits (``tools/upstream/karpenter.go``).
"""

from __future__ import annotations

import json

from hypothesis import given

from lab01_cluster_sim.autoscaler.catalogue import DEFAULT_CATALOGUE
from upstream import sim_adapter
from upstream.conftest import SETTINGS
from upstream.strategies import karpenter_case


@SETTINGS
@given(case=karpenter_case(DEFAULT_CATALOGUE))
def test_launchable_instance_types(oracle, case):
    """The launchable types agree, including for pods selecting GPU Feature Discovery's
    ``nvidia.com/gpu.product``, a label Karpenter cannot know before launch (both sides:
    none)."""
    up = oracle.ask(case["go"])
    assert "error" not in up, f"oracle refused a generated case: {up['error']}"
    sim = sim_adapter.sim_karpenter(case)
    assert sim == up["launchable"], json.dumps(case, sort_keys=True)
