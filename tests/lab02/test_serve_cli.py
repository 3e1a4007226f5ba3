"""``python -m lab02_device_plugin serve`` as a real process against an in-test kubelet."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent import futures
from pathlib import Path

import grpc
import pytest

from lab02_device_plugin.api import deviceplugin_pb2 as pb
from lab02_device_plugin.api import deviceplugin_pb2_grpc as pb_grpc
from lab02_device_plugin.cli import main
from lab02_device_plugin.examples import example_path

pytestmark = pytest.mark.timeout(90)
REPO = Path(__file__).resolve().parents[2]


class Kubelet(pb_grpc.RegistrationServicer):
    """Records RegisterRequests (and dials the plugin back, as a kubelet does)."""

    def __init__(self, sock_dir: Path) -> None:
        self.sock_dir = sock_dir
        self.requests: list[pb.RegisterRequest] = []
        self.server = grpc.server(futures.ThreadPoolExecutor(4))
        pb_grpc.add_RegistrationServicer_to_server(self, self.server)
        self.server.add_insecure_port(f"unix:{sock_dir / 'kubelet.sock'}")
        self.server.start()

    def Register(self, request, context):
        with grpc.insecure_channel(f"unix:{self.sock_dir / request.endpoint}") as ch:
            pb_grpc.DevicePluginStub(ch).GetDevicePluginOptions(pb.Empty(), timeout=5)
        self.requests.append(request)
        return pb.Empty()

    def wait_for(self, n: int, timeout: float = 20.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(self.requests) >= n:
                return True
            time.sleep(0.02)
        return False

    def stop(self) -> None:
        self.server.stop(0).wait(5)


@pytest.fixture
def sock_dir():
    with tempfile.TemporaryDirectory(prefix="dp-") as d:
        yield Path(d)


def start_serve(*args: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.Popen([sys.executable, "-m", "lab02_device_plugin", "serve", *args],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def stop_serve(proc: subprocess.Popen) -> tuple[int, str, str]:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        out, err = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:  # never leave it running
        proc.kill()
        out, err = proc.communicate()
    return proc.returncode, out, err


def test_serve_registers_streams_xids_and_exits_cleanly(sock_dir):
    kubelet = Kubelet(sock_dir)
    fifo = sock_dir / "xid"
    proc = start_serve("--socket-dir", str(sock_dir),
                       "--inventory", str(example_path("inventory-h100x8.yaml")),
                       "--config", str(example_path("time-slicing.yaml")),
                       "--xid-fifo", str(fifo), "--health-recovery")
    try:
        assert kubelet.wait_for(1), stop_serve(proc)
        (req,) = kubelet.requests
        assert (req.resource_name, req.endpoint) == ("nvidia.com/gpu", "nvidia-gpu.sock")
        channel = grpc.insecure_channel(f"unix:{sock_dir / 'nvidia-gpu.sock'}")
        stream = pb_grpc.DevicePluginStub(channel).ListAndWatch(pb.Empty(), timeout=30)
        first = next(stream)
        # 8 GPUs x 4 replicas = 32 units, all healthy
        assert (len(first.devices), sum(d.health == "Healthy" for d in first.devices)) == (32, 32)
        deadline = time.monotonic() + 10
        while not fifo.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        with open(fifo, "w") as f:
            f.write("xid 3 94\n")
        second = next(stream)
        # GPU 3's 4 replicas unhealthy: 28 of 32 healthy
        assert sum(d.health == "Healthy" for d in second.devices) == 28
        with open(fifo, "w") as f:
            f.write("recover 3\n")
        assert sum(d.health == "Healthy" for d in next(stream).devices) == 32
        stream.cancel()
        channel.close()
    finally:
        rc, out, err = stop_serve(proc)
        kubelet.stop()
    assert rc == 0, err
    assert "stopped; sockets removed" in out
    assert not (sock_dir / "nvidia-gpu.sock").exists()
    assert not fifo.exists()


def test_serve_reregisters_after_kubelet_restart(sock_dir):
    kubelet = Kubelet(sock_dir)
    proc = start_serve("--socket-dir", str(sock_dir), "--inventory",
                       str(example_path("inventory-1gpu.yaml")))
    second = None
    try:
        assert kubelet.wait_for(1), stop_serve(proc)
        kubelet.stop()
        for p in sock_dir.iterdir():  # the kubelet removes every socket when it starts
            p.unlink()
        second = Kubelet(sock_dir)
        assert second.wait_for(1), stop_serve(proc)
        assert second.requests[0].resource_name == "nvidia.com/gpu"
        deadline = time.monotonic() + 10
        while not (sock_dir / "nvidia-gpu.sock").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert (sock_dir / "nvidia-gpu.sock").exists()
    finally:
        rc, _out, err = stop_serve(proc)
        if second is not None:
            second.stop()
    assert rc == 0, err


def test_serve_prints_config_warnings(sock_dir, tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("version: v1\nflags:\n  nvidiaDriverRoot: /run/nvidia/driver\n")
    proc = start_serve("--socket-dir", str(sock_dir), "--kubelet-socket", "",
                       "--inventory", str(example_path("inventory-1gpu.yaml")), "--config", str(cfg))
    try:
        deadline = time.monotonic() + 20
        while not (sock_dir / "nvidia-gpu.sock").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        rc, _out, err = stop_serve(proc)
    assert rc == 0
    # the key is on line 3 after two spaces: 3:3
    assert f"warning: {cfg}:3:3: flags.nvidiaDriverRoot: accepted but not acted on" in err


def test_bad_config_is_one_line_exit_1(tmp_path, capsys):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
                   "    - name: nvidia.com/gpu\n      replicas: 1\n")
    rc = main(["serve", "--socket-dir", str(tmp_path), "--config", str(cfg),
               "--inventory", str(example_path("inventory-1gpu.yaml"))])
    err = capsys.readouterr().err
    assert rc == 1
    # line 6 "      replicas: 1": the value after 6 spaces and "replicas: " (10) is at column 17
    assert err == (f"error: {cfg}:6:17: sharing.timeSlicing.resources[0].replicas: expected an "
                   "integer >= 2, got 1\n")


def test_no_inventory_and_no_nvml_is_a_clear_error(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)
    rc = main(["serve", "--socket-dir", str(tmp_path)])
    assert rc == 1
    assert "nvidia-ml-py package is not installed" in capsys.readouterr().err


FAKE_PYNVML = ("class NVMLError(Exception):\n    pass\n\n\n"
               "def nvmlInit():\n    raise NVMLError('NVML Shared Library Not Found')\n")


def test_nvml_init_failure_is_one_line_exit_1_by_default(tmp_path, capsys, monkeypatch):
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "pynvml.py").write_text(FAKE_PYNVML)
    monkeypatch.syspath_prepend(str(fake))
    monkeypatch.delitem(sys.modules, "pynvml", raising=False)
    assert main(["serve", "--socket-dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err == ("error: NVML: cannot initialise (NVML Shared Library Not Found); no NVIDIA driver or GPU "
                   "here? pass --inventory FILE to simulate GPUs instead\n")


def test_fail_on_init_error_false_keeps_running_with_nothing_registered(tmp_path, monkeypatch):
    # NVIDIA's plugin with failOnInitError false and no NVML: "nvml init failed" as a warning,
    # no resource managers, "No devices found. Waiting indefinitely." (it keeps running)
    from _process import serve

    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "pynvml.py").write_text(FAKE_PYNVML)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(fake), str(REPO), os.environ.get("PYTHONPATH", "")]))
    config = tmp_path / "c.yaml"
    config.write_text("version: v1\nflags:\n  failOnInitError: false\n")
    sockets = Path(tempfile.mkdtemp(prefix="sp-"))
    p = serve(sockets, "--config", str(config))
    try:
        running = p.expect("device plugin running")
        assert running.startswith("device plugin running (no devices found, waiting); watching ")
        assert [ln for ln in p.lines if ln.startswith("warning:")] == [
            "warning: NVML: cannot initialise (NVML Shared Library Not Found); no NVIDIA driver or GPU here? "
            "pass --inventory FILE to simulate GPUs instead; flags.failOnInitError is false: no devices, "
            "nothing registered, waiting (SIGHUP or a kubelet restart tries NVML again)"]
        assert p.proc.poll() is None and list(sockets.iterdir()) == []  # still running, no plugin socket
        assert p.terminate() == 0
    finally:
        p.kill()
        shutil.rmtree(sockets, ignore_errors=True)


def test_single_strategy_error_from_real_inventory(tmp_path, capsys):
    spec = tmp_path / "inv.yaml"
    spec.write_text("gpus:\n- model: H100-80GB\n  mig: {instances: [3g.40gb, 1g.10gb]}\n")
    rc = main(["serve", "--socket-dir", str(tmp_path), "--inventory", str(spec),
               "--mig-strategy", "single"])
    assert rc == 1
    assert "more than one MIG device type present on node" in capsys.readouterr().err


def test_fifo_commands():
    from lab02_device_plugin.commands.serve import handle_fifo_line
    from lab02_device_plugin.errors import InputError
    from lab02_device_plugin.plugin.discovery import load_inventory
    from lab02_device_plugin.plugin.health import SimulatedHealthSource

    inv = load_inventory(example_path("inventory-h100x8.yaml"))
    src = SimulatedHealthSource()
    got = []
    src.start(got.append)
    assert handle_fifo_line("xid 2 79", inv, src).startswith("injected Xid 79 on GPU-")
    assert handle_fifo_line("recover all", inv, src) == "recovery on every device"
    assert [(e.device_id, e.xid, e.recovered) for e in got] == [(inv.gpus[2].uuid, 79, False),
                                                                  (None, None, True)]
    with pytest.raises(InputError, match="unknown device 'GPU-nope'"):
        handle_fifo_line("xid GPU-nope 79", inv, src)
    with pytest.raises(InputError, match="expected 'xid"):
        handle_fifo_line("xid 2", inv, src)
    # The FIFO's error names the FIFO, not the inventory file (8 GPUs: 0..7).
    with pytest.raises(InputError) as info:
        handle_fifo_line("xid 99 79", inv, src)
    assert str(info.value) == ("xid-fifo: no GPU 99; expected a GPU index 0..7, a GPU-/MIG- UUID "
                               "of the inventory or all")


def test_fifo_says_when_the_plugin_ignores_an_event():
    from lab02_device_plugin.commands.serve import handle_fifo_line
    from lab02_device_plugin.plugin.discovery import load_inventory
    from lab02_device_plugin.plugin.health import HealthPolicy, SimulatedHealthSource

    inv = load_inventory(example_path("inventory-h100x8.yaml"))
    src = SimulatedHealthSource()
    src.start(lambda event: None)
    gpu = inv.gpus[1].uuid
    policy = HealthPolicy()
    assert handle_fifo_line("xid 1 13", inv, src, policy) == (
        f"injected Xid 13 on {gpu}: ignored: Xid 13 is an application error (NVIDIA's default "
        "ignore list), not the GPU's")
    assert handle_fifo_line("xid 1 79", inv, src, policy) == f"injected Xid 79 on {gpu}"
    assert handle_fifo_line("recover 1", inv, src, policy) == (
        f"recovery on {gpu}: ignored: an unhealthy device stays unhealthy until the plugin "
        "restarts, as NVIDIA's (serve --health-recovery lets it recover)")
    assert handle_fifo_line("recover 1", inv, src, HealthPolicy(recovery=True)) == f"recovery on {gpu}"
    off = HealthPolicy.from_env({"DP_DISABLE_HEALTHCHECKS": "all"})
    assert handle_fifo_line("xid 1 79", inv, src, off).endswith(
        ": ignored: health checks are off (DP_DISABLE_HEALTHCHECKS)")
    more = HealthPolicy.from_env({"DP_DISABLE_HEALTHCHECKS": "79"})
    assert handle_fifo_line("xid 1 79", inv, src, more).endswith(
        ": ignored: Xid 79 is in DP_DISABLE_HEALTHCHECKS")


def test_topology_that_does_not_match_the_inventory(tmp_path, capsys, nvidia_smi_dir):
    rc = main(["serve", "--socket-dir", str(tmp_path), "--kubelet-socket", "",
               "--inventory", str(example_path("inventory-1gpu.yaml")),
               "--topology", str(nvidia_smi_dir / "h100-8gpu-nv18.topo.txt")])
    assert rc == 1
    assert "topology has 8 GPUs but" in capsys.readouterr().err


def test_dry_run_prints_the_plan(capsys, tmp_path):
    from lab02_device_plugin.plugin.discovery import load_inventory

    uuid = load_inventory(example_path("inventory-1gpu.yaml")).gpus[0].uuid
    rc = main(["serve", "--dry-run", "--socket-dir", str(tmp_path),
               "--inventory", str(example_path("inventory-1gpu.yaml")),
               "--config", str(example_path("time-slicing.yaml"))])
    out = capsys.readouterr().out.splitlines()
    assert rc == 0
    assert out == [f"1 GPU from {example_path('inventory-1gpu.yaml')}",
                   "nvidia.com/gpu (4 devices, time-slicing x4) on nvidia-gpu.sock"] + \
        [f"  {uuid}::{n}  (GPU 0)" for n in range(4)]
    assert list(tmp_path.iterdir()) == []  # no sockets


def test_dry_run_with_listing_shows_real_mig_uuids(capsys, tmp_path, nvidia_smi_dir):
    rc = main(["serve", "--dry-run", "--socket-dir", str(tmp_path),
               "--inventory", str(nvidia_smi_dir / "a100-sxm4-80gb-mig.q.xml"),
               "--listing", str(nvidia_smi_dir / "a100-sxm4-80gb-x4-mig.L.txt"),
               "--mig-strategy", "mixed"])
    out = capsys.readouterr().out.splitlines()
    assert rc == 0
    assert out[1] == "nvidia.com/mig-1g.20gb (4 devices) on nvidia-mig-1g.20gb.sock"
    assert out[2] == "  MIG-ce861fb0-a248-58ce-a9a8-f9adbc22a66a  (GPU 0 MIG 0)"


def test_listing_needs_an_inventory(capsys, tmp_path):
    rc = main(["serve", "--dry-run", "--socket-dir", str(tmp_path), "--listing", "x.txt"])
    assert rc == 1
    err = capsys.readouterr().err
    assert err == "error: --listing: needs --inventory (it completes an nvidia-smi XML dump)\n"


@pytest.mark.parametrize("argv, line", [
    (["serve", "--dry-runn"], "error: unrecognized arguments: --dry-runn; did you mean --dry-run? "
                              "(see python -m lab02_device_plugin serve --help)"),
    (["kubelet", "--plugin-dri", "d"], "error: unrecognized arguments: --plugin-dri d; did you mean --plugin-dir? "
                                      "(see python -m lab02_device_plugin kubelet --help)"),
    (["serve", "--zzzz"], "error: unrecognized arguments: --zzzz (see python -m lab02_device_plugin serve --help)"),
    (["serve", "stray"], "error: unrecognized arguments: stray (see python -m lab02_device_plugin serve --help)"),
])
def test_an_unknown_option_names_the_nearest_one_as_lab01_does(argv, line, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 1
    assert capsys.readouterr().err == line + "\n"
