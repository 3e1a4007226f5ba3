"""The learner's functions replaced by proxies in the trusted process (grading/proxy.py install).

Run in a child interpreter (the replacement changes the lab modules of the process it runs
in). A recording client stands for the worker: it calls the original function, so the
course's code runs as usual, and records which learner functions were reached.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]

CHILD = r'''
import importlib, json, sys
sys.path[:0] = [{repo!r}, {tests!r}]
from pathlib import Path
from grading import catalog, proxy

functions = [(f.module, f.name) for f in catalog.learner_functions(Path({edition!r}))]
originals = {{(m, n): getattr(importlib.import_module(m), n) for m, n in functions}}


class Recorder:
    def __init__(self):
        self.calls = []

    def call(self, module, name, args, kwargs):
        self.calls.append(name)
        return originals[(module, name)](*args, **kwargs)


client = Recorder()
installed = proxy.install(client, functions)
left = sorted(f"{{mod_name}}.{{attr}}" for mod_name, mod in list(sys.modules.items())
              if mod_name.split(".")[0] in proxy.LAB_PACKAGES
              for attr, value in vars(mod).items() if any(value is o for o in originals.values()))

import numpy as np
from lab01_cluster_sim.model import Job, Node
from lab01_cluster_sim.simulate import simulate
from lab01_cluster_sim.disciplines.drf import drf_allocate
from lab02_device_plugin.plugin.config import parse_config
from lab02_device_plugin.plugin.inventory import from_yaml_spec
from lab02_device_plugin.plugin.sharing import advertise, allocate
from lab02_device_plugin.plugin.health import DeviceHealth, HealthEvent, HealthPolicy
import lab02_device_plugin.models.decision as decision  # imported after install: gets the proxy by name

reached = {{}}
def mark(label, before):
    reached[label] = sorted(set(client.calls[before:]))

n = len(client.calls)
nodes = [Node(f"n{{i}}", "H100", 4, 64000, 524288) for i in range(2)]
simulate(nodes, [Job("g", 0.0, 10.0, 1, 1000, workers=2)], policy="best-fit", mode="gang")
big, small = Node("big", "H100", 4, 32000, 262144), Node("small", "H100", 2, 32000, 262144)
simulate([big, small], [Job("two", 0.0, float("inf"), 2, 1000), Job("four", 1.0, float("inf"), 4, 1000)],
         policy="first-fit", mode="gang")  # "four" waits: the stranded-GPU metric is computed
mark("simulate", n)
n = len(client.calls)
drf_allocate([9.0, 18.0], {{"A": [1.0, 4.0], "B": [3.0, 1.0]}})
mark("drf_allocate", n)
n = len(client.calls)
inv = from_yaml_spec({{"gpus": [{{"model": "A100-80GB", "uuids": ["GPU-0"]}}]}})
config = parse_config({{"version": "v1", "sharing": {{"timeSlicing": {{"resources": [{{"name": "nvidia.com/gpu", "replicas": 2}}]}}}}}})
resource = advertise(inv, config).resource("nvidia.com/gpu")
allocate(resource, ["GPU-0::0"], config)
mark("advertise+allocate", n)
n = len(client.calls)
mig = from_yaml_spec({{"gpus": [{{"model": "A100-80GB", "uuids": ["GPU-0"], "mig": {{"enabled": True, "instances": ["1g.10gb"]}}}}]}})
advertise(mig, parse_config({{"version": "v1", "flags": {{"migStrategy": "mixed"}}}}))
mark("advertise mixed", n)
n = len(client.calls)
DeviceHealth.for_inventory(inv, HealthPolicy()).apply(HealthEvent("GPU-0", xid=94))
mark("health", n)
print(json.dumps({{"installed": installed, "left": left, "reached": reached,
                  "decision": getattr(decision.mixed_resource_name, "__grading_proxy__", None)}}))
'''


def test_every_reference_to_a_learner_function_goes_through_its_proxy(student_edition) -> None:
    edition, _ = student_edition
    code = CHILD.format(repo=str(REPO_ROOT), tests=str(REPO_ROOT / "tests"), edition=str(edition))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=REPO_ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["left"] == []  # no module-level name still bound to an original
    assert set(got["installed"]) == {
        "lab01_cluster_sim.disciplines.drf.drf_pick_tenant", "lab01_cluster_sim.disciplines.preemption.choose_victims",
        "lab01_cluster_sim.metrics.count_stranded_gpus", "lab01_cluster_sim.policies.generic.best_fit_raw_score",
        "lab01_cluster_sim.scheduler.gang_permit", "lab02_device_plugin.plugin.health.next_health",
        "lab02_device_plugin.plugin.mig.mixed_resource_name", "lab02_device_plugin.plugin.sharing.physical_device_id",
        "lab02_device_plugin.plugin.sharing.expand_replicas", "lab02_device_plugin.plugin.sharing.list_and_watch_snapshot"}
    # imported by name elsewhere: replaced there too (sharing imports mixed_resource_name from mig)
    assert got["installed"]["lab02_device_plugin.plugin.mig.mixed_resource_name"] >= 2
    assert got["reached"] == {
        "simulate": ["best_fit_raw_score", "count_stranded_gpus", "gang_permit"],
        "drf_allocate": ["drf_pick_tenant"],
        "advertise+allocate": ["expand_replicas", "physical_device_id"],
        "advertise mixed": ["mixed_resource_name"],
        "health": ["next_health"],
    }
    assert got["decision"] == "lab02_device_plugin.plugin.mig.mixed_resource_name"
