"""``python -m lab02_device_plugin demo``: the whole device plugin flow on one simulated GPU.

A mock kubelet and the real plugin talk over real unix sockets in a temporary directory:
registration, ListAndWatch, GetPreferredAllocation and Allocate. One physical GPU is
advertised as ``--replicas`` time-sliced units; ``--pods`` one-unit pods are admitted, the
ones beyond the replicas stay Pending (the scheduler finds no free unit on the node). The
demo ends with the caveat the lab teaches: allocation is not isolation.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import stat
import sys
import tempfile
import textwrap
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lab02_device_plugin.commands._args import whole_number
from lab02_device_plugin.commands._output import LinePrinter
from lab02_device_plugin.errors import InputError
from lab02_device_plugin.kubelet.lifecycle import AdmissionResult, MockKubelet
from lab02_device_plugin.kubelet.pod import Container, Pod
from lab02_device_plugin.plugin.config import parse_config
from lab02_device_plugin.plugin.health import HealthPolicy, SimulatedHealthSource
from lab02_device_plugin.plugin.inventory import KNOWN_MODELS, from_yaml_spec
from lab02_device_plugin.plugin.manager import PluginManager, count

NAME = "demo"
HELP = "show the whole flow: mock kubelet + plugin, one GPU shared by time-slicing, pods admitted"
DESCRIPTION = """\
Run a mock kubelet and the device plugin over real unix sockets in a temporary directory and
narrate every step: the kubelet starts, the plugin serves its socket and registers
nvidia.com/gpu, the kubelet reads the devices from ListAndWatch, then admits pods one by one
(GetPreferredAllocation, Allocate). One simulated GPU is shared by time-slicing into
--replicas units, so --replicas pods run on one card. The rest stay Pending: the scheduler
(modelled by the mock's NodeResourcesFit check) finds no free nvidia.com/gpu on the node and
never binds them, so the kubelet never sees them. Nothing outside the temporary directory
is touched; sockets and threads are cleaned up at the end, also on Ctrl-C or SIGTERM.

examples:
  python -m lab02_device_plugin demo
  python -m lab02_device_plugin demo --replicas 2 --pods 3 --model H100-80GB
"""

RESOURCE = "nvidia.com/gpu"
#: Upper bounds of the options: 1000 replicas is a ListAndWatch message of about 60 kB (far
#: under gRPC's 4 MiB) and far more than anyone time-slices one card into; 1000 pods are 1000
#: GetPreferredAllocation + Allocate calls (about 10 s on a busy 2-core machine).
MAX_REPLICAS = 1_000
MAX_PODS = 1_000


class DemoError(RuntimeError):
    """The demo could not complete (the plugin did not register, a stream failed...)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--replicas", type=whole_number(1, MAX_REPLICAS), default=4,
                        help=f"time-slicing replicas of the one GPU, 1 to {MAX_REPLICAS} "
                             "(1 = no sharing; default: %(default)s)")
    parser.add_argument("--pods", type=whole_number(1, MAX_PODS), default=5,
                        help=f"pods asking for one nvidia.com/gpu each, 1 to {MAX_PODS} "
                             "(default: %(default)s)")
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
        InputError: replicas or pods out of range, or an unknown model.
        DemoError: the plugin did not register, or its stream ended, within 30 s (raised as
            soon as the failure is seen, with the plugin's or kubelet's reason).
    """
    if not (1 <= replicas <= MAX_REPLICAS and 1 <= pods <= MAX_PODS):
        raise InputError(f"--replicas and --pods: expected 1..{MAX_REPLICAS} and 1..{MAX_PODS}, "
                         f"got {replicas} and {pods}")
    if model not in KNOWN_MODELS:
        raise InputError(f"--model {model!r}: expected one of {', '.join(sorted(KNOWN_MODELS))}")
    lock = threading.Lock()
    lines: list[str] = []

    def emit(line: str) -> None:
        with lock:
            lines.append(line)
            say(line)

    # The node name seeds the simulated UUID: one per model, stable between runs.
    inventory = from_yaml_spec({"node": f"demo-node-{model}", "gpus": [{"model": model}]}, "<demo>")
    gpu = inventory.gpus[0]
    config = parse_config(config_for(replicas), "<demo config>")
    plugin_dir = Path(tempfile.mkdtemp(prefix="lab02-demo-", dir=workdir))
    results: list[AdmissionResult] = []
    try:
        emit(f"== One simulated {gpu.model} ({gpu.uuid}, {gpu.memory_mib} MiB), advertised as "
             f"{count(replicas, 'unit')} of {RESOURCE}")
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
                status = _wait_until_advertised(kubelet, manager, replicas)
                emit(f"== Node status: capacity {RESOURCE}={status.capacity[RESOURCE]}, "
                     f"allocatable {RESOURCE}={status.allocatable[RESOURCE]} (from one physical GPU)")
                emit(f"== 3. {count(pods, 'pod')} ask{'s' if pods == 1 else ''} for 1 {RESOURCE} each")
                for number in range(1, pods + 1):
                    # From the scheduler: a pod that does not fit is never bound (Pending).
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


def _wait_until_advertised(kubelet: MockKubelet, manager: PluginManager, replicas: int):
    """Wait until the kubelet counts ``replicas`` allocatable units; fail at once (DemoError)
    when the plugin reports a registration error or the kubelet's stream from it ends."""
    def settled() -> bool:
        return (kubelet.node_status().allocatable.get(RESOURCE) == replicas
                and kubelet.is_registered(RESOURCE)) or failure() is not None

    def failure() -> str | None:
        if manager.last_error:
            return manager.last_error
        if kubelet.registrations and not kubelet.is_registered(RESOURCE):
            lines = [l for l in kubelet.narration if "ListAndWatch" in l]
            return lines[-1] if lines else f"the kubelet lost the {RESOURCE} plugin"
        return None

    try:
        kubelet.wait_for(settled, 30, f"{RESOURCE} allocatable={replicas}")
    except TimeoutError as exc:
        raise DemoError(str(exc)) from None
    why = failure()
    if why is not None:
        raise DemoError(why)
    return kubelet.node_status()


#: Width of the summary's lines: it is printed in terminals and on the book's pages.
SUMMARY_WIDTH = 79


def _wrapped(text: str, indent: str = "  ") -> list[str]:
    return textwrap.wrap(text, SUMMARY_WIDTH, initial_indent=indent, subsequent_indent=indent,
                         break_on_hyphens=False, break_long_words=False)


def summary(result: DemoResult) -> list[str]:
    """The table of pods and the caveat, as lines of at most 79 characters (a device ID or
    UUID is never broken).

    The fault caveat follows NVIDIA: time-sliced replicas get no fault isolation (GPU
    Operator, "Time-Slicing GPUs in Kubernetes"); application Xids (13, 31, 43, 45, 68, 109,
    the ones NVIDIA's plugin ignores in internal/rm/health.go) usually end only the faulting
    process, while device faults and resets (Xid 79, uncontained ECC errors) reach every
    pod on the card; on A100/H100-class GPUs most uncorrectable ECC errors are contained to
    the applications that hit them (NVIDIA GPU memory error management, "Error Containment").
    """
    out = ["", f"{'pod':<7} {'phase':<8} device ID from the kubelet, and what the container sees"]
    for r in result.results:
        if r.admitted:
            device = r.devices["cuda"][RESOURCE][0]
            visible = r.containers["cuda"].envs.get("NVIDIA_VISIBLE_DEVICES", "-")
            out.append(f"{r.pod:<7} {r.phase:<8} {device}")
            out.append(f"{'':<16} visible: {visible}")
        else:
            out.append(f"{r.pod:<7} {r.phase:<8} -")
    pending = [r for r in result.results if not r.admitted]
    for r in pending:
        if r.reason == "FailedScheduling":
            out.append(f"{r.pod} is {r.phase}: no unit of {RESOURCE} is left, so the")
            out.append("scheduler never binds it to the node and the kubelet never sees it.")
            out.append("Event FailedScheduling:")
        else:
            out.append(f"{r.pod} is {r.phase} ({r.reason}): the kubelet rejected it at admission:")
        out += _wrapped(r.message)
    if any(r.reason == "FailedScheduling" for r in pending):
        out += ["(A pod bound to the node by hand, with spec.nodeName, skips the scheduler;",
                "the kubelet then rejects it at admission and it ends",
                "Failed (UnexpectedAdmissionError).)"]
    running = [r for r in result.results if r.admitted]
    uuids = {r.containers["cuda"].envs.get("NVIDIA_VISIBLE_DEVICES") for r in running}
    out.append("")
    if len(running) > 1 and uuids == {result.gpu_uuid}:
        gib = result.memory_mib / 1024
        out += [
            f"Allocation is not isolation. The {len(running)} running pods got different device",
            "IDs, but every one of them sees the same GPU:",
            f"  {result.gpu_uuid}",
            f"  * They share its memory: {gib:.0f} GiB in all, with no per-pod limit; one",
            "    pod can use it all and the others fail with out-of-memory errors.",
            "  * They share its faults: NVIDIA promises no fault isolation between",
            "    replicas. An application fault (Xid 13, 31, 43, 45, 68, 109: the ones",
            "    NVIDIA's plugin treats as the application's) usually ends only the",
            "    faulting process; a device fault or a reset (Xid 79, an uncontained",
            "    ECC error) reaches every pod on the card.",
            "  * They share its time: time-slicing runs one pod's kernels at a time, so",
            f"    each gets about 1/{len(running)} of the card when all are busy, and latency",
            "    varies with the others.",
            "  * Per-pod GPU metrics are lost: utilisation and memory are reported for",
            "    the card, not for the replica a pod was given.",
            f"The kubelet counted {result.capacity} units and never gave one out twice;",
            "nothing on the GPU enforces those units. For limits use MPS (memory and",
            "thread-percentage caps) or MIG (hardware partitions with their own",
            "memory and SMs).",
        ]
    else:
        out += [f"{count(len(running), 'pod')} running; with --replicas above 1 and as many pods, they",
                "would all share one card: allocation is not isolation."]
    return out


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt  # unwinds through run_demo's cleanup, as Ctrl-C does


def run(args: argparse.Namespace) -> int:
    say = (lambda line: None) if args.quiet else LinePrinter()
    # SIGTERM cleans up like Ctrl-C: sockets, checkpoint and the temporary directory go.
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        result = run_demo(args.replicas, args.pods, args.model, say=say)
    except DemoError as exc:
        print(f"error: demo failed: {exc}", file=sys.stderr, flush=True)
        return 1
    finally:
        signal.signal(signal.SIGTERM, previous)
    for line in summary(result):
        print(line, flush=True)
    return 0
