"""``python -m lab02_device_plugin serve``: run the device plugin as a process.

It serves one DevicePlugin per advertised resource on a unix socket in the plugin
directory, registers each with the kubelet (a real one, or ``python -m lab02_device_plugin
kubelet``), re-registers when ``kubelet.sock`` is re-created, and exits 0 on SIGTERM or
SIGINT after removing its sockets. SIGHUP restarts the plugins, as upstream.
"""

from __future__ import annotations

import argparse
import os
import select
import signal
import stat
import sys
import threading
from pathlib import Path

from lab02_device_plugin.commands._output import LinePrinter
from lab02_device_plugin.plugin.config import MIG_STRATEGIES, Config, load_config
from lab02_device_plugin.errors import InputError
from lab02_device_plugin.plugin.health import (
    APPLICATION_XIDS, HealthEvent, HealthPolicy, NvmlHealthSource, SimulatedHealthSource,
)
from lab02_device_plugin.plugin.discovery import (
    NvmlUnavailable, from_nvidia_smi_list, from_nvml, load_inventory, with_mig_uuids,
)
from lab02_device_plugin.plugin.inventory import Inventory
from lab02_device_plugin.limits import (
    MAX_FIFO_LINE, MAX_INVENTORY_BYTES, read_text_bounded, require_utf8, shorten,
)
from lab02_device_plugin.plugin.manager import PluginManager, count
from lab02_device_plugin.plugin.server import DEVICE_PLUGIN_PATH
from lab02_device_plugin.plugin.sharing import mps_daemon_commands
from lab02_device_plugin.plugin.topology import apply_topology, load_topology

NAME = "serve"
HELP = "run the device plugin: serve a socket per resource, register with the kubelet"
DESCRIPTION = """\
Run the device plugin in the foreground, configured with an NVIDIA k8s-device-plugin config
file (version: v1; flags.migStrategy; flags.plugin.deviceListStrategy / deviceIDStrategy;
sharing.timeSlicing or sharing.mps). Unlike NVIDIA's plugin, which drops unknown keys and
matches key names in any case, serve refuses an unknown key or one in another case
(`migstrategy`) in one line that names the key meant: a misspelled field is an error, not
a setting silently lost. GPUs come from --inventory (an `nvidia-smi -q -x` dump
or a YAML spec of simulated GPUs; see lab02_device_plugin/examples/) or, without it, from
NVML (needs nvidia-ml-py and a GPU).

Each resource gets its own socket (nvidia-gpu.sock, nvidia-mig-1g.10gb.sock, ...) and is
registered with the kubelet at --kubelet-socket. If the kubelet is not running yet, one line
says so and the plugins register when it starts.

Restarts, as NVIDIA's plugin: on SIGHUP, when the kubelet socket is re-created (a kubelet
restart) and when the --config or --inventory file changes (polled; e.g. a ConfigMap
update), the plugin re-reads config and inventory (or NVML), stops the servers of resources
that no longer exist, starts the new ones and registers them all again: a MIG repartition
or a new replica count is advertised within a second. One line names what changed (the
resources, and each config key: "sharing.timeSlicing.resources[nvidia.com/gpu].replicas
4 -> 8"). A changed file is read once its content has stayed the same for 0.2 s, and an
empty one is taken as a write in progress, so a file rewritten in place is never applied
half-written; a reload that changes nothing (a comment-only edit, the SIGHUP that follows a
file the watcher already read) restarts nothing. A config or inventory that fails
validation is reported in one line and the previous one keeps serving. SIGTERM or Ctrl-C
removes the sockets and exits 0.

Simulated Xids (labs): with --xid-fifo PATH, write lines to the FIFO:
  echo "xid 0 94"   > PATH   # Xid 94 on GPU index 0 (or a GPU-/MIG- UUID)
  echo "recover 0"  > PATH   # device healthy again (needs --health-recovery)

Environment: DP_DISABLE_HEALTHCHECKS (all | xids | comma list of Xids to ignore) and
DP_ENABLE_HEALTHCHECKS (comma list of Xids always acted on), as NVIDIA's plugin.

examples:
  python -m lab02_device_plugin serve --socket-dir /tmp/dp \\
      --inventory lab02_device_plugin/examples/inventory-h100x8.yaml \\
      --config lab02_device_plugin/examples/time-slicing.yaml
  python -m lab02_device_plugin serve --socket-dir /tmp/dp --kubelet-socket "" \\
      --inventory lab02_device_plugin/examples/inventory-h100-mig.yaml --mig-strategy mixed
  python -m lab02_device_plugin serve --dry-run \\
      --inventory lab02_device_plugin/examples/inventory-h100-mig.yaml \\
      --config lab02_device_plugin/examples/mig-mixed.yaml      # what would be advertised
  kill -HUP <pid>     # re-read config and inventory now (as the config-manager sidecar does)
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``serve``."""
    parser.add_argument("--socket-dir", type=Path, default=Path(DEVICE_PLUGIN_PATH),
                        help="device plugin directory for the sockets (default: %(default)s)")
    parser.add_argument("--kubelet-socket", default=None, metavar="PATH",
                        help="the kubelet's Registration socket (default: kubelet.sock in "
                             "--socket-dir); \"\" serves without registering")
    parser.add_argument("--config", type=Path, metavar="FILE",
                        help="NVIDIA device plugin config file (default: no sharing, "
                             "migStrategy none)")
    parser.add_argument("--inventory", type=Path, metavar="FILE",
                        help="GPUs: an `nvidia-smi -q -x` XML dump or a YAML spec "
                             "(default: live NVML)")
    parser.add_argument("--listing", type=Path, metavar="FILE",
                        help="`nvidia-smi -L` output of the same node: real MIG UUIDs for an "
                             "older `-q -x` dump that lacks them")
    parser.add_argument("--topology", type=Path, metavar="FILE",
                        help="`nvidia-smi topo -m` output of the same node: NUMA nodes, NVLink "
                             "islands and links of the GPUs (used by GetPreferredAllocation)")
    parser.add_argument("--mig-strategy", choices=MIG_STRATEGIES,
                        default=os.environ.get("MIG_STRATEGY") or None,
                        help="override flags.migStrategy of the config; default $MIG_STRATEGY "
                             "when set (precedence flag > environment > file, as upstream)")
    parser.add_argument("--pre-start-required", action="store_true",
                        help="ask the kubelet to call PreStartContainer before each container")
    parser.add_argument("--health-recovery", action="store_true",
                        help="let a recovered device become Healthy again (NVIDIA's plugin "
                             "needs a restart for that)")
    parser.add_argument("--xid-fifo", type=Path, metavar="PATH",
                        help="create a FIFO at PATH and read simulated health events from it")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the resources and device IDs that would be advertised, "
                             "then exit (no sockets)")
    parser.add_argument("--no-watch", action="store_true",
                        help="do not poll --config and --inventory for changes (SIGHUP and a "
                             "kubelet restart still reload them)")
    parser.add_argument("--quiet", action="store_true", help="print errors only")


def _read(path: Path) -> str:
    text = read_text_bounded(path, MAX_INVENTORY_BYTES, "listing (nvidia-smi -L)")
    require_utf8(path, text, MAX_INVENTORY_BYTES, str(path), "`nvidia-smi -L` output (text)")
    return text


def _resolve_device(inventory: Inventory, token: str) -> str:
    if token.isdigit() and len(token) <= 9:
        if int(token) >= len(inventory.gpus):
            raise InputError(f"xid-fifo: no GPU {token}; expected a GPU index 0.."
                             f"{len(inventory.gpus) - 1}, a GPU-/MIG- UUID of the inventory or all")
        return inventory.gpu(int(token)).uuid
    known = {g.uuid for g in inventory.gpus} | {m.uuid for g in inventory.gpus for m in g.mig_devices}
    if token not in known:
        raise InputError(f"xid-fifo: unknown device {shorten(repr(token))}; expected a GPU index or a "
                         "GPU-/MIG- UUID of the inventory")
    return token


def handle_fifo_line(line: str, inventory: Inventory, source: SimulatedHealthSource,
                     policy: HealthPolicy | None = None) -> str:
    """Apply one FIFO command: ``xid <device> <xid>`` or ``recover <device>``; returns a note
    that says, with ``policy``, when the plugin ignores the event (an application Xid such
    as 13, a health check switched off, a recovery without ``--health-recovery``).

    ``<device>`` is a GPU index, a GPU or MIG UUID, or ``all``.

    Raises:
        InputError: a malformed line (named), an unknown device (named as the FIFO's).
    """
    parts = line.split()
    if not parts:
        return ""
    verb = parts[0].lower()
    if verb == "xid" and len(parts) == 3 and parts[2].isdigit() and len(parts[2]) <= 9:
        dev = None if parts[1] == "all" else _resolve_device(inventory, parts[1])
        xid = int(parts[2])
        source.inject_xid(dev, xid)
        note = f"injected Xid {xid} on {dev or 'every device'}"
        if policy is not None and not policy.acts_on(HealthEvent(dev, xid)):
            if xid in APPLICATION_XIDS and not policy.disabled:
                note += (f": ignored: Xid {xid} is an application error (NVIDIA's default "
                         "ignore list), not the GPU's")
            elif policy.disabled:
                note += ": ignored: health checks are off (DP_DISABLE_HEALTHCHECKS)"
            else:
                note += f": ignored: Xid {xid} is in DP_DISABLE_HEALTHCHECKS"
        return note
    if verb == "recover" and len(parts) == 2:
        dev = None if parts[1] == "all" else _resolve_device(inventory, parts[1])
        source.recover(dev)
        note = f"recovery on {dev or 'every device'}"
        if policy is not None and not policy.recovery:
            note += (": ignored: an unhealthy device stays unhealthy until the plugin "
                     "restarts, as NVIDIA's (serve --health-recovery lets it recover)")
        return note
    raise InputError(f"xid-fifo: {shorten(repr(line))}: expected 'xid <gpu index|uuid|all> <xid>' or "
                     "'recover <gpu index|uuid|all>'")


def _open_fifo(path: Path) -> int:
    """Open the Xid FIFO for reading before anyone is told it is read: a writer that opens it
    non-blocking then always finds a reader (ENXIO otherwise). O_RDWR keeps a writer open
    ourselves, so the FIFO never reports EOF between writers."""
    return os.open(path, os.O_RDWR | os.O_NONBLOCK)


def _fifo_reader(fd: int, get_inventory, source: SimulatedHealthSource,
                 stop: threading.Event, say, policy: HealthPolicy | None = None) -> None:
    buf = b""
    try:
        while not stop.is_set():
            ready, _, _ = select.select([fd], [], [], 0.1)
            if not ready:
                continue
            try:
                chunk = os.read(fd, 4096)
            except BlockingIOError:
                continue
            buf += chunk
            if b"\n" not in buf and len(buf) > MAX_FIFO_LINE:
                print(f"warning: xid-fifo: a line longer than {MAX_FIFO_LINE} bytes; dropped "
                      "(expected 'xid <gpu> <xid>' or 'recover <gpu>')", file=sys.stderr, flush=True)
                buf = b""
                continue
            while b"\n" in buf:
                raw, buf = buf.split(b"\n", 1)
                try:
                    note = handle_fifo_line(raw.decode(errors="replace"), get_inventory(), source,
                                            policy)
                except InputError as exc:
                    print(f"warning: {exc}", file=sys.stderr, flush=True)
                    continue
                if note:
                    say(note)
    finally:
        os.close(fd)


def print_plan(plan, inventory: Inventory, out=None) -> None:
    """Print what would be advertised: one block per resource, one line per device."""
    out = out or sys.stdout
    print(f"{count(len(inventory.gpus), 'GPU')} from {inventory.source}", file=out)
    for r in plan.resources:
        shared = f", {r.sharing} x{r.replicas}" if r.is_shared else ""
        print(f"{r.name} ({count(len(r.devices), 'device')}{shared}) on {r.socket_name}", file=out)
        for line in mps_daemon_commands(r, inventory):
            print(f"  MPS control daemon: {line}", file=out)
        for d in r.devices:
            where = f"GPU {d.gpu_index}" + (f" MIG {d.mig_index}" if d.mig_index is not None else "")
            extra = "".join(f", {k} {v}" for k, v in (("NUMA", d.numa_node),
                                                     ("island", d.nvlink_island)) if v is not None)
            print(f"  {d.id}  ({where}{extra})", file=out)


def load_node(args: argparse.Namespace) -> tuple[Inventory, Config]:
    """Read config and inventory as the options say (called at start and at every reload).

    Precedence of the MIG strategy, as upstream: ``--mig-strategy`` (or ``$MIG_STRATEGY``)
    over the file. Config and inventory warnings are printed to stderr.

    Without ``--inventory`` the GPUs come from NVML; when NVML cannot initialise and the
    config says ``flags.failOnInitError: false``, the inventory is empty and one warning line
    says why: the plugin keeps running and registers nothing, as NVIDIA's plugin logs "nvml
    init failed" and returns no resource managers (``getResourceManagers``,
    internal/plugin/factory.go, v0.20.0), then waits (``startPlugins``,
    cmd/nvidia-device-plugin/main.go: "No devices found. Waiting indefinitely.").

    Raises:
        InputError: any of the files is unreadable, oversized or invalid; NVML cannot
            initialise and ``failOnInitError`` is true (upstream's default).
    """
    if args.listing is not None and args.inventory is None:
        raise InputError("--listing: needs --inventory (it completes an nvidia-smi XML dump)")
    config = load_config(args.config)
    if args.mig_strategy:
        config = config.with_mig_strategy(args.mig_strategy, "--mig-strategy (or $MIG_STRATEGY)")
    if args.inventory is not None:
        inventory = load_inventory(args.inventory)
    else:
        try:
            inventory = from_nvml()
        except NvmlUnavailable as exc:
            if config.flags.fail_on_init_error:
                raise
            print(f"warning: {exc}; flags.failOnInitError is false: no devices, nothing registered, "
                  "waiting (SIGHUP or a kubelet restart tries NVML again)", file=sys.stderr, flush=True)
            inventory = Inventory((), "nvml")
    if args.listing is not None:
        inventory = with_mig_uuids(inventory, from_nvidia_smi_list(_read(args.listing), str(args.listing)))
    if args.topology is not None:
        inventory = apply_topology(inventory, load_topology(args.topology))
    for w in config.warnings + inventory.warnings:
        print(f"warning: {w}", file=sys.stderr, flush=True)
    return inventory, config


def _nvml_source(inventory: Inventory) -> NvmlHealthSource | None:
    if not inventory.gpus:  # NVML unavailable and tolerated: nothing to watch
        return None
    mig_ids = {(g.uuid, m.gpu_instance_id, m.compute_instance_id): m.uuid
               for g in inventory.gpus for m in g.mig_devices}
    return NvmlHealthSource([g.uuid for g in inventory.gpus], mig_ids=mig_ids)


def run(args: argparse.Namespace) -> int:
    """Serve until SIGTERM/SIGINT; returns 0 after a clean stop."""
    say = (lambda line: None) if args.quiet else LinePrinter()
    inventory, config = load_node(args)
    policy = HealthPolicy.from_env(recovery=args.health_recovery)
    source = _nvml_source(inventory) if args.inventory is None else SimulatedHealthSource()
    kubelet_socket = args.kubelet_socket
    if kubelet_socket is None:
        kubelet_socket = str(args.socket_dir / "kubelet.sock")
    watched = [] if args.no_watch else [p for p in (args.config, args.inventory, args.listing,
                                                    args.topology) if p is not None]
    manager = PluginManager(inventory, config, args.socket_dir, kubelet_socket or None,
                            health_source=source, health_policy=policy,
                            pre_start_required=args.pre_start_required, log=say,
                            loader=lambda: load_node(args), watch_files=watched,
                            health_source_factory=_nvml_source if args.inventory is None else None)
    for w in manager.plan.warnings:
        print(f"warning: {w}", file=sys.stderr, flush=True)
    if not manager.plan.resources and not (args.inventory is None and not inventory.gpus):
        raise InputError(f"{inventory.source}: no resources to advertise with migStrategy "
                         f"{config.flags.mig_strategy}; expected at least one GPU or MIG device")

    if args.dry_run:
        try:
            print_plan(manager.plan, inventory)
            sys.stdout.flush()
        except BrokenPipeError:  # `serve --dry-run | head`: the reader left, not an error
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0

    stop = threading.Event()
    hup = threading.Event()

    def on_signal(signum, _frame):
        if signum == signal.SIGHUP:
            hup.set()
        else:
            stop.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    fifo_thread = None
    made_fifo = False
    try:
        if args.xid_fifo is not None:
            if isinstance(source, SimulatedHealthSource):
                try:
                    if not args.xid_fifo.exists():
                        os.mkfifo(args.xid_fifo)
                        made_fifo = True
                    elif not stat.S_ISFIFO(args.xid_fifo.stat().st_mode):
                        raise InputError(f"--xid-fifo {args.xid_fifo}: exists and is not a FIFO")
                except OSError as exc:
                    raise InputError(f"--xid-fifo {args.xid_fifo}: cannot create the FIFO "
                                     f"({exc.strerror})") from None
            else:
                raise InputError("--xid-fifo: simulated Xids need --inventory (with NVML, "
                                 "health events come from the GPUs)")
        manager.start()
        if args.xid_fifo is not None:
            fifo_fd = _open_fifo(args.xid_fifo)
            fifo_thread = threading.Thread(
                target=_fifo_reader, args=(fifo_fd, lambda: manager.inventory, source, stop, say, policy),
                name="xid-fifo", daemon=True)
            fifo_thread.start()
            say(f"reading simulated health events from {args.xid_fifo}")
        watching = f"; watching {', '.join(map(str, watched))}" if watched else ""
        serving = ", ".join(manager.plan.names()) or "no devices found, waiting"
        say(f"device plugin running ({serving}){watching}; "
            "SIGHUP reloads, SIGTERM or Ctrl-C stops it")
        while not stop.wait(0.05):
            if hup.is_set():
                hup.clear()
                manager.reload("SIGHUP", restart_unchanged=False)
    finally:
        stop.set()
        manager.stop()
        if fifo_thread is not None:
            fifo_thread.join(timeout=2)
        if made_fifo:
            args.xid_fifo.unlink(missing_ok=True)
        for s, h in previous.items():
            signal.signal(s, h)
    say("stopped; sockets removed")
    return 0
