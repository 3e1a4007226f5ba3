"""``python -m lab02_device_plugin demo``: the whole device plugin flow on one simulated GPU.

A mock kubelet and the real plugin talk over real unix sockets in a temporary directory:
registration, ListAndWatch, GetPreferredAllocation and Allocate. One physical GPU is
advertised as ``--replicas`` time-sliced units; ``--pods`` one-unit pods are admitted, the
ones beyond the replicas stay pending. The demo ends with the caveat the lab teaches:
allocation is not isolation.
"""

from __future__ import annotations

import argparse
import shutil
import stat
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lab02_device_plugin.config import parse_config
from lab02_device_plugin.errors import InputError
from lab02_device_plugin.health import HealthPolicy, SimulatedHealthSource
from lab02_device_plugin.inventory import KNOWN_MODELS, from_yaml_spec
from lab02_device_plugin.kubelet import AdmissionResult, Container, MockKubelet, Pod
from lab02_device_plugin.manager import PluginManager

NAME = "demo"
HELP = "show the whole flow: mock kubelet + plugin, one GPU shared by time-slicing, pods admitted"
DESCRIPTION = """\
Run a mock kubelet and the device plugin over real unix sockets in a temporary directory and
narrate every step: the kubelet starts, the plugin serves its socket and registers
nvidia.com/gpu, the kubelet reads the devices from ListAndWatch, then admits pods one by one
(GetPreferredAllocation, Allocate). One simulated GPU is shared by time-slicing into
--replicas units, so --replicas pods run on one card and the rest stay pending. Nothing
outside the temporary directory is touched; sockets and threads are cleaned up at the end.

examples:
  python -m lab02_device_plugin demo
  python -m lab02_device_plugin demo --replicas 2 --pods 3 --model H100-80GB
"""

RESOURCE = "nvidia.com/gpu"


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected at least 1, got {value}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--replicas", type=_positive, default=4,
                        help="time-slicing replicas of the one GPU (1 = no sharing; default: %(default)s)")
    parser.add_argument("--pods", type=_positive, default=5,
                        help="pods asking for one nvidia.com/gpu each (default: %(default)s)")
    parser.add_argument("--model", choices=sorted(KNOWN_MODELS), default="A100-40GB",
                        help="simulated GPU model (default: %(default)s)")
    parser.add_argument("--quiet", action="store_true",
                        help="print only the summary and the caveat, not every kubelet and plugin step")


@dataclass
class DemoResult:
    """What the demo saw: the GPU's UUID and name, one admission result per pod, the node
    status at the end, and every narration line (kubelet and plugin) in order."""

    gpu_uuid: str
    gpu_name: str
    memory_mib: int
    results: list[AdmissionResult]
    capacity: int
    allocatable: int
    lines: list[str]


def config_for(replicas: int) -> dict:
    """The NVIDIA plugin config the demo uses: time-slicing with ``replicas`` (none when 1)."""
    config: dict = {"version": "v1", "flags": {"migStrategy": "none"}}
    if replicas > 1:
        config["sharing"] = {"timeSlicing": {"renameByDefault": False,
                                             "failRequestsGreaterThanOne": False,
                                             "resources": [{"name": RESOURCE, "replicas": replicas}]}}
    return config


def run_demo(replicas: int = 4, pods: int = 5, model: str = "A100-40GB",
             say: Callable[[str], None] = print, workdir: str | None = None) -> DemoResult:
    """Run the demo and return what happened; ``say`` receives every line as it happens.

    Everything runs in a fresh temporary directory (under ``workdir`` if given), removed at
    the end together with its sockets; every plugin and kubelet thread is stopped.

    Raises:
        InputError: replicas or pods below 1, or an unknown model.
    """
    if replicas < 1 or pods < 1:
        raise InputError(f"--replicas and --pods: expected at least 1, got {replicas} and {pods}")
    if model not in KNOWN_MODELS:
        raise InputError(f"--model {model!r}: expected one of {', '.join(sorted(KNOWN_MODELS))}")
    lock = threading.Lock()
    lines: list[str] = []

    def emit(line: str) -> None:
        with lock:
            lines.append(line)
            say(line)

    inventory = from_yaml_spec({"node": "demo-node", "gpus": [{"model": model}]}, "<demo>")
    gpu = inventory.gpus[0]
    config = parse_config(config_for(replicas), "<demo config>")
    plugin_dir = Path(tempfile.mkdtemp(prefix="lab02-demo-", dir=workdir))
    results: list[AdmissionResult] = []
    try:
        emit(f"== One simulated {gpu.model} ({gpu.uuid}, {gpu.memory_mib} MiB), advertised as "
             f"{replicas} unit(s) of {RESOURCE}")
        emit(f"== Plugin directory (temporary): {plugin_dir}")
        emit("== 1. The kubelet starts and serves kubelet.sock")
        source = SimulatedHealthSource()
        kubelet = MockKubelet(plugin_dir, on_event=lambda line: emit(f"   kubelet | {line}"))
        manager = PluginManager(inventory, config, plugin_dir, health_source=source,
                                health_policy=HealthPolicy(recovery=True),
                                log=lambda line: emit(f"   plugin  | {line}"))
        with kubelet:
            emit("== 2. The device plugin serves its socket, then registers; the kubelet reads "
                 "ListAndWatch")
            with manager:
                status = kubelet.wait_for_resource(RESOURCE, replicas, timeout=30)
                emit(f"== Node status: capacity {RESOURCE}={status.capacity[RESOURCE]}, "
                     f"allocatable {RESOURCE}={status.allocatable[RESOURCE]} (from one physical GPU)")
                emit(f"== 3. {pods} pod(s) ask for 1 {RESOURCE} each")
                for number in range(1, pods + 1):
                    pod = Pod(f"pod-{number}", [Container("cuda", limits={RESOURCE: 1})])
                    results.append(kubelet.admit_pod(pod))
                status = kubelet.node_status()
            # The plugin stopped: its stream ended, the kubelet marks the devices unhealthy.
        leftovers = [p.name for p in plugin_dir.iterdir() if stat.S_ISSOCK(p.lstat().st_mode)]
        if leftovers:
            raise RuntimeError(f"sockets left behind in {plugin_dir}: {leftovers}")
    finally:
        shutil.rmtree(plugin_dir, ignore_errors=True)
    return DemoResult(gpu.uuid, gpu.model, gpu.memory_mib, results,
                      status.capacity.get(RESOURCE, 0), status.allocatable.get(RESOURCE, 0), lines)


def summary(result: DemoResult) -> list[str]:
    """The table of pods and the caveat, as lines."""
    out = ["", f"{'pod':<7} {'phase':<8} {'device ID (kubelet)':<46} NVIDIA_VISIBLE_DEVICES (container)"]
    for r in result.results:
        if r.admitted:
            device = r.devices["cuda"][RESOURCE][0]
            visible = r.containers["cuda"].envs.get("NVIDIA_VISIBLE_DEVICES", "-")
            out.append(f"{r.pod:<7} {r.phase:<8} {device:<46} {visible}")
        else:
            out.append(f"{r.pod:<7} {r.phase:<8} {'-':<46} -")
    pending = [r for r in result.results if not r.admitted]
    for r in pending:
        out.append(f"{r.pod} is {r.phase}: no unit of {RESOURCE} left. The kubelet says:")
        out.append(f"  {r.message}")
    running = [r for r in result.results if r.admitted]
    uuids = {r.containers["cuda"].envs.get("NVIDIA_VISIBLE_DEVICES") for r in running}
    out.append("")
    if len(running) > 1 and uuids == {result.gpu_uuid}:
        gib = result.memory_mib / 1024
        out += [
            f"Allocation is not isolation. The {len(running)} running pods got different device IDs,",
            f"but every one of them sees the same GPU, {result.gpu_uuid}.",
            f"  * They share its memory: {gib:.0f} GiB in all, with no per-pod limit; one pod can use it",
            "    all and the others fail with out-of-memory errors.",
            "  * They share its faults: an Xid error or a reset on the card hits every pod on it.",
            "  * They share its time: time-slicing runs one pod's kernels at a time, so each gets",
            f"    about 1/{len(running)} of the card when all are busy, and latency varies with the others.",
            "  * Per-pod GPU metrics are lost: utilisation and memory are reported for the card, not",
            "    for the replica a pod was given.",
            f"The kubelet counted {result.capacity} units and never gave one out twice; nothing on the GPU",
            "enforces those units. For limits use MPS (memory and thread-percentage caps) or MIG",
            "(hardware partitions with their own memory and faults).",
        ]
    else:
        out.append(f"{len(running)} pod(s) running; with --replicas above 1 and as many pods, they "
                   "would all share one card: allocation is not isolation.")
    return out


def run(args: argparse.Namespace) -> int:
    say = (lambda line: None) if args.quiet else (lambda line: print(line, flush=True))
    result = run_demo(args.replicas, args.pods, args.model, say=say)
    for line in summary(result):
        print(line, flush=True)
    return 0
