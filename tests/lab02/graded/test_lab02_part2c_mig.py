"""Graded, Lab 02 part 2C: MIG profiles as resource names (migStrategy mixed).

Learner code: ``lab02_device_plugin.plugin.mig.mixed_resource_name``: ``nvidia.com/mig-<profile>``,
with "+" (not allowed in a resource name) written as "." (NVIDIA k8s-device-plugin,
migStrategy mixed).
"""

from __future__ import annotations

import pytest

from lab02_device_plugin.plugin.config import parse_config
from lab02_device_plugin.plugin.inventory import from_yaml_spec
from lab02_device_plugin.plugin.mig import mixed_resource_name
from lab02_device_plugin.plugin.sharing import advertise


@pytest.mark.points(3, part="2C", number="2C.1")
def test_mixed_resource_names(partial_credit):
    """mixed_resource_name: 1g.10gb -> nvidia.com/mig-1g.10gb, 1g.10gb+me -> nvidia.com/mig-1g.10gb.me."""
    cases = {
        "1g.10gb": "nvidia.com/mig-1g.10gb",
        "3g.40gb": "nvidia.com/mig-3g.40gb",
        "7g.80gb": "nvidia.com/mig-7g.80gb",
        "1g.10gb+me": "nvidia.com/mig-1g.10gb.me",
        "1g.18gb+gfx": "nvidia.com/mig-1g.18gb.gfx",
    }
    got = {p: mixed_resource_name(p) for p in cases}
    wrong = {p: name for p, name in got.items() if not (isinstance(name, str) and name == cases[p])}
    partial_credit((len(cases) - len(wrong)) / len(cases))  # 3/5 right keeps 60% of the points
    assert not wrong, f"wrong names: {wrong}"


@pytest.mark.points(2, part="2C", number="2C.2")
def test_mixed_strategy_advertises_one_resource_per_profile():
    """migStrategy mixed on an A100-80GB split 3g.40gb + 2g.20gb + 1g.10gb x2: three resources with 2, 1, 1 devices."""
    inv = from_yaml_spec({"gpus": [{"model": "A100-80GB", "uuids": ["GPU-0"],
                                    "mig": {"enabled": True,
                                            "instances": ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]}}]})
    plan = advertise(inv, parse_config({"version": "v1", "flags": {"migStrategy": "mixed"}}))
    counts = {r.name: len(r.devices) for r in plan.resources}
    assert counts == {"nvidia.com/mig-1g.10gb": 2, "nvidia.com/mig-2g.20gb": 1, "nvidia.com/mig-3g.40gb": 1}
