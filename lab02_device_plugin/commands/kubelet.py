"""``python -m lab02_device_plugin kubelet``: run the mock kubelet as a process.

It serves ``kubelet.sock`` in the plugin directory and prints every step (registration,
ListAndWatch snapshots, preferred allocation, Allocate) as it happens, so a device plugin
started in another terminal (``python -m lab02_device_plugin serve --socket-dir DIR
--kubelet-socket DIR/kubelet.sock ...``) is driven exactly as a kubelet would drive it.
"""

from __future__ import annotations

import argparse
import signal
import threading
from pathlib import Path

from lab02_device_plugin.commands._args import seconds
from lab02_device_plugin.commands._output import LinePrinter
from lab02_device_plugin.kubelet.lifecycle import MockKubelet
from lab02_device_plugin.kubelet.manager import DEVICE_PLUGIN_PATH, SAME_SOCKET_MODES
from lab02_device_plugin.kubelet.pod import Pod, parse_admit, pods_from_manifests
from lab02_device_plugin.limits import (
    MAX_YAML_BYTES, read_text_bounded, require_utf8, safe_load_all_bounded,
)

#: Upper bounds of the time options (seconds): an hour to wait for a plugin, a week to run,
#: five minutes to dial a plugin socket (the kubelet uses 10 s).
MAX_WAIT_S = 3600.0
MAX_DURATION_S = 7 * 24 * 3600.0
MAX_DIAL_TIMEOUT_S = 300.0
MAX_RETRY_S = 3600.0

NAME = "kubelet"
HELP = "run the mock kubelet: serve kubelet.sock, narrate each device plugin call, admit pods"
DESCRIPTION = """\
Run the mock kubelet in the foreground: it creates the device plugin directory, removes every
socket in it (as a kubelet does when it starts), serves the Registration service on
kubelet.sock, consumes each registered plugin's ListAndWatch stream and prints every step.

Pods given with --admit or --pods are admitted once the resources they ask for have been
registered (waiting up to --wait seconds each): the kubelet then calls GetPreferredAllocation
(if the plugin offers it), Allocate and PreStartContainer (if required) and prints what the
container would receive. These pods are handed to the kubelet directly, as if bound to the
node (spec.nodeName set, no scheduler): one that does not fit is rejected at admission and
ends Failed (UnexpectedAdmissionError), where a scheduler would have left it Pending. Every
pod (from --admit and --pods) is checked before the first is admitted. Stop with Ctrl-C or
SIGTERM (exit status 0).

A pod admitted while its device plugin is not registered (the window after a kubelet
restart) ends Failed and is never retried, as in today's kubelet; --retry-admission SECONDS
keeps it Pending and admits it once more after that delay, as the fix proposed in
kubernetes#128043 would.

A second plugin registering the same resource at the same socket path replaces the first
("newest registration wins"), as kubelets up to Kubernetes 1.36 do; --same-socket reject
models the newer device manager (kubernetes PR #135437, #139338), which refuses it until
the first plugin's stream ends.

examples:
  python -m lab02_device_plugin kubelet --plugin-dir /tmp/dp --admit pod-1=nvidia.com/gpu:1
  python -m lab02_device_plugin kubelet --plugin-dir /tmp/dp --pods pods.yaml --duration 60
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--plugin-dir", type=Path, default=Path(DEVICE_PLUGIN_PATH),
                        help="device plugin directory; kubelet.sock is created in it "
                             "(default: %(default)s, the real kubelet's)")
    parser.add_argument("--admit", action="append", default=[], metavar="NAME=RES:N",
                        help="admit a one-container pod asking for N devices of RES, e.g. "
                             "pod-1=nvidia.com/gpu:1 (repeatable; RES:N pairs can be comma-separated)")
    parser.add_argument("--pods", type=Path, metavar="FILE",
                        help="YAML file of Kubernetes Pod manifests (multi-document or kind: List) "
                             "to admit, in order, after the --admit pods")
    parser.add_argument("--wait", type=seconds(MAX_WAIT_S), default=30.0, metavar="SECONDS",
                        help="how long to wait for a pod's resources to be registered before "
                             f"admitting it anyway (above 0, at most {MAX_WAIT_S:g}; "
                             "default: %(default)s)")
    parser.add_argument("--duration", type=seconds(MAX_DURATION_S), default=None, metavar="SECONDS",
                        help=f"stop after this many seconds (above 0, at most {MAX_DURATION_S:g}, "
                             "a week; default: run until Ctrl-C or SIGTERM)")
    parser.add_argument("--dial-timeout", type=seconds(MAX_DIAL_TIMEOUT_S), default=10.0,
                        metavar="SECONDS",
                        help="how long Register waits for the plugin's socket (above 0, at most "
                             f"{MAX_DIAL_TIMEOUT_S:g}; default: %(default)s, the kubelet's)")
    parser.add_argument("--same-socket", choices=SAME_SOCKET_MODES, default="replace",
                        help="a Register at the resource and socket path of a plugin that is "
                             "still connected: replace it (default; kubelets up to 1.36) or "
                             "reject it until that plugin's stream ends (kubernetes PR "
                             "#135437)")
    parser.add_argument("--retry-admission", type=seconds(MAX_RETRY_S), default=None,
                        metavar="SECONDS",
                        help="retry once, after SECONDS, the admission of a pod whose device "
                             "plugin is not registered (default: off, as the kubelet: the pod "
                             "ends Failed)")


def _load_pods(path: Path) -> list[Pod]:
    """Every pod of the file, each validated (see :func:`pods_from_manifests`) before any is
    admitted, so a bad pod late in the file does not leave the earlier ones half-applied.
    The file is bounded as every input (:mod:`~lab02_device_plugin.limits`)."""
    text = read_text_bounded(path, MAX_YAML_BYTES, "Pod manifests file")
    require_utf8(path, text, MAX_YAML_BYTES, f"--pods {path}", "a YAML file of Pod manifests")
    documents = safe_load_all_bounded(text, str(path), "a YAML file of Pod manifests")
    return pods_from_manifests(documents, str(path))


def run(args: argparse.Namespace) -> int:
    pods = [parse_admit(spec) for spec in args.admit]
    if args.pods is not None:
        pods += _load_pods(args.pods)
    stop = threading.Event()
    say = LinePrinter()

    def on_signal(signum: int, frame: object) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    kubelet = MockKubelet(args.plugin_dir, on_event=say, dial_timeout=args.dial_timeout,
                          retry_admission_after=args.retry_admission,
                          same_socket=args.same_socket)
    try:
        kubelet.start()
        for pod in pods:
            resources = sorted({r for c in pod.init_containers + pod.containers
                                for r in c.limits if "/" in r})
            for resource in resources:
                if stop.is_set():
                    break
                try:
                    kubelet.wait_for(lambda r=resource: kubelet.is_registered(r)
                                     and kubelet.devices(r) != {} or stop.is_set(),
                                     args.wait, f"registration of {resource}")
                except TimeoutError:
                    say(f"Admit {pod.name}: {resource} not registered after {args.wait:g} s; "
                         f"admitting anyway")
            if stop.is_set():
                break
            result = kubelet.admit_pod(pod, bound=True)
            for container, options in result.containers.items():
                for key, value in sorted(options.envs.items()):
                    say(f"  {pod.name}/{container}: env {key}={value}")
        status = kubelet.node_status()
        say(f"node status: {status}")
        stop.wait(args.duration)
        status = kubelet.node_status()
        say(f"node status: {status}")
    finally:
        kubelet.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0
