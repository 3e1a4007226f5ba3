#!/usr/bin/env python3
"""Speed of the Lab 02 device plugin server alone (no kubelet): RPC latency and health propagation.

    python benchmarks/bench_plugin_server.py [--calls 2000] [--health-events 200] [--gpus 8]

Measures, over a real unix socket on one simulated node (``--gpus`` H100s with NVLink
islands of 4, time-slicing 4 replicas for the replica case):

* Allocate latency (p50, p99) for a 1-replica request and for a 4-GPU whole-GPU request;
* GetPreferredAllocation latency (p50, p99), whole GPUs (the exhaustive island search) and
  replicas (the distributed policy);
* health propagation: from ``SimulatedHealthSource.inject_xid`` to the next
  ListAndWatch message arriving at the client (p50, p99); recovery events alternate so
  every injection changes health.

Goals from issue 3 (end to end, through the mock kubelet; the plugin's share must be lower):
Allocate p50 <= 1 ms, p99 <= 5 ms; health propagation p99 <= 50 ms. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import grpc

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from lab02_device_plugin.api import deviceplugin_pb2 as pb  # noqa: E402
from lab02_device_plugin.api import deviceplugin_pb2_grpc as pb_grpc  # noqa: E402
from lab02_device_plugin.plugin.config import parse_config  # noqa: E402
from lab02_device_plugin.plugin.health import DeviceHealth, HealthPolicy, SimulatedHealthSource  # noqa: E402
from lab02_device_plugin.plugin.inventory import from_yaml_spec  # noqa: E402
from lab02_device_plugin.plugin.server import DevicePluginServer  # noqa: E402
from lab02_device_plugin.plugin.sharing import advertise  # noqa: E402


def pct(values: list[float], q: float) -> float:
    """q-th percentile (nearest rank) of values, in ms."""
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, int(round(q / 100 * len(ordered) + 0.5)) - 1))
    return ordered[k] * 1000


def timed(fn, n: int) -> list[float]:
    for _ in range(min(50, n)):  # warm-up: channel, thread pool
        fn()
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=2000, help="RPCs per latency row (default 2000)")
    ap.add_argument("--health-events", type=int, default=200, help="Xid/recovery events (default 200)")
    ap.add_argument("--gpus", type=int, default=8, help="simulated GPUs (default 8)")
    args = ap.parse_args()

    n = args.gpus
    islands = [list(range(i, min(i + 4, n))) for i in range(0, n, 4)]
    inv = from_yaml_spec({"gpus": [{"model": "H100-80GB", "count": n}], "nvlink_islands": islands})
    whole_cfg = parse_config(None)
    ts_cfg = parse_config({"sharing": {"timeSlicing": {"resources": [
        {"name": "nvidia.com/gpu", "replicas": 4}]}}})
    rows = []
    with tempfile.TemporaryDirectory(prefix="dpb-") as d:
        for label, cfg in (("whole GPUs", whole_cfg), ("4 replicas/GPU", ts_cfg)):
            health = DeviceHealth.for_inventory(inv, HealthPolicy(recovery=True))
            (res,) = advertise(inv, cfg).resources
            sub = Path(d) / label.split()[0]
            with DevicePluginServer(res, sub, None, cfg, health) as srv:
                channel = grpc.insecure_channel(f"unix:{srv.socket_path}")
                stub = pb_grpc.DevicePluginStub(channel)
                ids = [dv.id for dv in res.devices]
                size = 4 if not res.is_shared else 2
                alloc_ids = ids[:size] if not res.is_shared else ids[:1]
                areq = pb.AllocateRequest(container_requests=[
                    pb.ContainerAllocateRequest(devices_ids=alloc_ids)])
                preq = pb.PreferredAllocationRequest(container_requests=[
                    pb.ContainerPreferredAllocationRequest(available_deviceIDs=ids[1:],
                                                           allocation_size=size)])
                a = timed(lambda: stub.Allocate(areq, timeout=5), args.calls)
                p = timed(lambda: stub.GetPreferredAllocation(preq, timeout=5), args.calls)
                rows.append((f"Allocate, {label}, {len(alloc_ids)} ID(s)", a))
                rows.append((f"GetPreferredAllocation, {label}, {len(ids) - 1} available, size {size}", p))
                if res.is_shared:
                    continue
                src = SimulatedHealthSource()
                src.start(health.apply)
                stream = stub.ListAndWatch(pb.Empty(), timeout=600)
                next(stream)
                lat = []
                gpu = inv.gpus[0].uuid
                for k in range(args.health_events):
                    t0 = time.perf_counter()
                    if k % 2 == 0:
                        src.inject_xid(gpu, 94)
                    else:
                        src.recover(gpu)
                    next(stream)
                    lat.append(time.perf_counter() - t0)
                stream.cancel()
                rows.append(("health change -> ListAndWatch message at the client", lat))
                channel.close()
    print(f"| measurement ({n} simulated H100s, unix socket) | n | p50 (ms) | p99 (ms) | mean (ms) |")
    print("|---|---|---|---|---|")
    for label, values in rows:
        print(f"| {label} | {len(values)} | {pct(values, 50):.3f} | {pct(values, 99):.3f} | "
              f"{statistics.fmean(values) * 1000:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
