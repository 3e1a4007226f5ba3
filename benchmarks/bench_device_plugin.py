"""Speed of the Lab 02 device plugin and mock kubelet over real unix sockets.

Measures (issue 3, sec. 8), each against its goal:

* Allocate latency, client -> plugin over the unix socket (p50 <= 1 ms, p99 <= 5 ms);
* GetPreferredAllocation latency, same path (reported; the Allocate goals are the yardstick);
* health propagation: from a simulated Xid (or recovery) entering the plugin's health source to
  the mock kubelet's allocatable changing (p99 <= 50 ms);
* re-registration after a kubelet restart: from the kubelet serving its new kubelet.sock to the
  resource being fully allocatable again (<= 1 s), and the whole restart for reference;
* pod admission through the mock kubelet (GetPreferredAllocation + Allocate), for reference.

Usage (from the repository root)::

    python benchmarks/bench_device_plugin.py            # full run (about 10-20 s)
    python benchmarks/bench_device_plugin.py --quick    # fewer repetitions (CI smoke)
    python benchmarks/bench_device_plugin.py --json out.json --check   # exit 1 if a goal is missed

Latencies are wall-clock (time.perf_counter_ns) per call on one client thread, after a warm-up.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

import grpc
import numpy as np

# Import this checkout's packages, not whatever copy of them is installed.
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from lab02_device_plugin.api import deviceplugin_pb2 as pb  # noqa: E402
from lab02_device_plugin.api import deviceplugin_pb2_grpc as pb_grpc  # noqa: E402
from lab02_device_plugin.kubelet.lifecycle import MockKubelet  # noqa: E402
from lab02_device_plugin.kubelet.pod import Container, Pod  # noqa: E402
from lab02_device_plugin.plugin.config import parse_config  # noqa: E402
from lab02_device_plugin.plugin.health import HealthPolicy, SimulatedHealthSource  # noqa: E402
from lab02_device_plugin.plugin.inventory import from_yaml_spec  # noqa: E402
from lab02_device_plugin.plugin.manager import PluginManager  # noqa: E402

RESOURCE = "nvidia.com/gpu"
#: An HGX-like node: 8 GPUs, 2 NUMA nodes, 2 NVLink islands of 4 (as examples/inventory-h100x8.yaml).
SPEC = {"node": "bench-node",
        "gpus": [{"model": "H100-80GB", "count": 4, "numa_node": 0},
                 {"model": "H100-80GB", "count": 4, "numa_node": 1}],
        "nvlink_islands": [[0, 1, 2, 3], [4, 5, 6, 7]]}
GOALS = {"allocate_p50_ms": 1.0, "allocate_p99_ms": 5.0, "health_p99_ms": 50.0,
         "reregister_max_ms": 1000.0}


def percentiles(samples_ns: list[int]) -> dict[str, float]:
    """p50, p99 and max of nanosecond samples, in milliseconds."""
    a = np.asarray(samples_ns, dtype=np.float64) / 1e6
    return {"p50_ms": float(np.percentile(a, 50)), "p99_ms": float(np.percentile(a, 99)),
            "max_ms": float(a.max()), "n": int(a.size)}


class Bench:
    """A node (mock kubelet + plugins) in a temporary directory."""

    def __init__(self, config: dict) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="bench-"))
        self.inventory = from_yaml_spec(SPEC, "<bench>")
        self.source = SimulatedHealthSource()
        self.kubelet = MockKubelet(self.dir)
        self.manager = PluginManager(self.inventory, parse_config(config, "<bench>"), self.dir,
                                     health_source=self.source,
                                     health_policy=HealthPolicy(recovery=True))
        self.units = 0

    def __enter__(self) -> "Bench":
        self.kubelet.start()
        self.manager.start()
        self.units = len(self.manager.plan.resource(RESOURCE).devices)
        self.kubelet.wait_for_resource(RESOURCE, self.units, timeout=30)
        return self

    def __exit__(self, *exc: object) -> None:
        self.manager.stop()
        self.kubelet.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def stub(self) -> tuple[grpc.Channel, pb_grpc.DevicePluginStub]:
        path = self.manager.server(RESOURCE).socket_path
        channel = grpc.insecure_channel(f"unix://{path}")
        grpc.channel_ready_future(channel).result(timeout=10)
        return channel, pb_grpc.DevicePluginStub(channel)


def time_calls(call, n: int, warmup: int) -> list[int]:
    for i in range(warmup):
        call(i)
    samples = []
    for i in range(n):
        t0 = time.perf_counter_ns()
        call(i)
        samples.append(time.perf_counter_ns() - t0)
    return samples


def bench_rpcs(n: int) -> dict:
    """Allocate and GetPreferredAllocation, whole GPUs and time-sliced replicas."""
    out = {}
    for label, config in (("whole GPUs", {"version": "v1"}),
                          ("time-slicing x10", {"version": "v1", "sharing": {"timeSlicing": {
                              "resources": [{"name": RESOURCE, "replicas": 10}]}}})):
        with Bench(config) as b:
            ids = sorted(b.kubelet.devices(RESOURCE))
            channel, stub = b.stub()
            with channel:
                def allocate(i: int) -> None:
                    stub.Allocate(pb.AllocateRequest(container_requests=[
                        pb.ContainerAllocateRequest(devices_ids=[ids[i % len(ids)]])]), timeout=10)

                def preferred(i: int) -> None:
                    stub.GetPreferredAllocation(pb.PreferredAllocationRequest(container_requests=[
                        pb.ContainerPreferredAllocationRequest(
                            available_deviceIDs=ids, allocation_size=2)]), timeout=10)

                out[f"Allocate, 1 device ({label}, {len(ids)} units)"] = percentiles(
                    time_calls(allocate, n, n // 10))
                out[f"GetPreferredAllocation, 2 of {len(ids)} ({label})"] = percentiles(
                    time_calls(preferred, n, n // 10))
    return out


def bench_admission(n: int) -> dict:
    """A one-GPU pod through the mock kubelet (preferred + Allocate), then deleted."""
    with Bench({"version": "v1"}) as b:
        def admit(i: int) -> None:
            result = b.kubelet.admit_pod(Pod(f"p{i}", [Container("c", {RESOURCE: 1})]))
            assert result.admitted, result.message
            b.kubelet.delete_pod(f"p{i}")

        return {"admit_pod, 1 GPU via the mock kubelet (+ delete)": percentiles(
            time_calls(admit, n, n // 10))}


def bench_health(n: int) -> dict:
    """Xid 94 then recovery on one GPU; time until the kubelet's allocatable changes."""
    with Bench({"version": "v1"}) as b:
        gpu = b.inventory.gpus[3].uuid
        samples = []
        for i in range(n + 5):
            down = i % 2 == 0
            target = b.units - 1 if down else b.units
            t0 = time.perf_counter_ns()
            if down:
                b.source.inject_xid(gpu, 94)
            else:
                b.source.recover(gpu)
            b.kubelet.wait_for(lambda: b.kubelet.node_status().allocatable.get(RESOURCE) == target,
                               10, f"allocatable {target}")
            if i >= 5:  # warm-up
                samples.append(time.perf_counter_ns() - t0)
        return {"health change -> kubelet allocatable": percentiles(samples)}


def bench_reregister(n: int) -> dict:
    """Kubelet restarts; the plugin notices kubelet.sock re-created and registers again."""
    with Bench({"version": "v1"}) as b:
        after_socket, total = [], []
        for _ in range(n):
            before = b.kubelet.registrations
            t0 = time.perf_counter_ns()
            b.kubelet.restart()
            t1 = time.perf_counter_ns()
            b.kubelet.wait_for_registration(RESOURCE, timeout=10, after=before)
            b.kubelet.wait_for_resource(RESOURCE, b.units, timeout=10)
            t2 = time.perf_counter_ns()
            after_socket.append(t2 - t1)
            total.append(t2 - t0)
        return {"re-registration after kubelet.sock re-created": percentiles(after_socket),
                "whole kubelet restart until full allocatable": percentiles(total)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    parser.add_argument("--check", action="store_true", help="exit 1 when a goal is missed")
    args = parser.parse_args(argv)
    n_rpc, n_health, n_restart = (300, 40, 5) if args.quick else (3000, 400, 20)
    results: dict = {}
    results.update(bench_rpcs(n_rpc))
    results.update(bench_admission(n_rpc // 3))
    results.update(bench_health(n_health))
    results.update(bench_reregister(n_restart))
    width = max(len(k) for k in results)
    print(f"{'measure':<{width}}  {'n':>5}  {'p50 ms':>8}  {'p99 ms':>8}  {'max ms':>8}")
    for key, r in results.items():
        print(f"{key:<{width}}  {r['n']:>5}  {r['p50_ms']:>8.3f}  {r['p99_ms']:>8.3f}  {r['max_ms']:>8.3f}")
    alloc = next(v for k, v in results.items() if k.startswith("Allocate, 1 device (whole"))
    alloc_ts = next(v for k, v in results.items() if k.startswith("Allocate, 1 device (time"))
    checks = {
        "Allocate p50 <= 1 ms": max(alloc["p50_ms"], alloc_ts["p50_ms"]) <= GOALS["allocate_p50_ms"],
        "Allocate p99 <= 5 ms": max(alloc["p99_ms"], alloc_ts["p99_ms"]) <= GOALS["allocate_p99_ms"],
        "health propagation p99 <= 50 ms":
            results["health change -> kubelet allocatable"]["p99_ms"] <= GOALS["health_p99_ms"],
        "re-registration within 1 s":
            results["re-registration after kubelet.sock re-created"]["max_ms"] <= GOALS["reregister_max_ms"],
    }
    print()
    for name, ok in checks.items():
        print(f"{'met   ' if ok else 'MISSED'}  {name}")
    print(f"\npython {platform.python_version()}, grpcio {grpc.__version__}, {platform.machine()}, "
          f"{platform.system()}")
    if args.json:
        args.json.write_text(json.dumps({"results": results, "goals": checks}, indent=1))
    return 0 if (all(checks.values()) or not args.check) else 1


if __name__ == "__main__":
    sys.exit(main())
