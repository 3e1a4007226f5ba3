"""Bad input and signals at the command line (findings of a fresh-user test of Lab 02).

Each case used to end in a traceback (exit 3), a hang or a silent loss; now bad input is one
``error:`` line naming the input (exit 1); an option value out of its stated range is the
same one line (``error: --duration: expected ...``, exit 1, as the CLI's parser prints it).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from _process import REPO_ROOT, socket_dir  # noqa: F401 (fixture: a short folder for unix sockets)
from lab02_device_plugin.examples import example_path

pytestmark = pytest.mark.timeout(120)


def cli(*args: str, timeout: float = 60, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run ``python -m lab02_device_plugin ARGS`` to the end (bounded by ``timeout``)."""
    return subprocess.run([sys.executable, "-m", "lab02_device_plugin", *args], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def one_error_line(proc: subprocess.CompletedProcess) -> str:
    """Assert exit 1 with exactly one ``error:`` line on stderr and no traceback; return it."""
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    return lines[0]


INVENTORY = str(example_path("inventory-1gpu.yaml"))


# ----------------------------------------------------------------------- finding 1

def test_serve_socket_dir_that_is_a_file(tmp_path):
    not_a_dir = tmp_path / "plain-file"
    not_a_dir.write_text("x")
    line = one_error_line(cli("serve", "--socket-dir", str(not_a_dir), "--kubelet-socket", "",
                              "--inventory", INVENTORY))
    assert str(not_a_dir) in line and "expected a directory" in line


def test_serve_config_that_is_not_utf8(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_bytes(b"version: v1\n\xff\xfe\n")
    line = one_error_line(cli("serve", "--dry-run", "--config", str(config), "--inventory", INVENTORY))
    # b"version: v1\n" is 12 bytes, so the first bad byte is at offset 12: line 2, column 1.
    assert line == f"error: {config}:2:1: byte 12 (0xff) is not UTF-8; expected a YAML config file (text)"


def test_kubelet_pods_file_that_is_binary(tmp_path):
    pods = tmp_path / "pods.yaml"
    pods.write_bytes(bytes(range(256)))
    line = one_error_line(cli("kubelet", "--plugin-dir", str(tmp_path / "dp"), "--pods", str(pods)))
    # bytes 0..127 are ASCII, 128 (0x80) is the first byte that is not UTF-8; byte 10 is the
    # only newline before it, so it is on line 2 at column 128 - 11 + 1 = 118
    assert line == (f"error: --pods {pods}:2:118: byte 128 (0x80) is not UTF-8; expected a YAML file of Pod "
                    "manifests")


def test_serve_socket_dir_without_write_access_is_one_line(tmp_path):
    # /proc refuses new files even to root; gRPC's own bind log line must not show.
    line = one_error_line(cli("serve", "--socket-dir", "/proc", "--kubelet-socket", "",
                              "--inventory", INVENTORY))
    assert line.startswith("error: /proc/nvidia-gpu.sock: cannot listen on this unix socket")


# ----------------------------------------------------------------------- finding 2

def test_serve_refuses_more_replicas_than_one_listandwatch_message_holds(tmp_path):
    # 100000 replicas of one GPU with a 40-character UUID would be a ListAndWatch message of
    # about 6.6 MB (> 4 MiB); refused before any ID is built
    config = tmp_path / "big.yaml"
    config.write_text("version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
                      "    - {name: nvidia.com/gpu, replicas: 100000}\n")
    line = one_error_line(cli("serve", "--dry-run", "--config", str(config), "--inventory", INVENTORY))
    assert line.startswith("error: nvidia.com/gpu: 1 devices x 100000 replicas make a ListAndWatch message of ")
    assert "expected at most 4194304 (gRPC's default 4 MiB, which the kubelet keeps)" in line
    # a billion is refused by the config itself: line 5 "    - {name: nvidia.com/gpu, replicas:
    # 1000000000}": 4 + 2 + 1 + 6 + 14 + 2 + 10 = 39 characters before the value, so 5:40
    config.write_text(config.read_text().replace("100000", "1000000000"))
    line = one_error_line(cli("serve", "--dry-run", "--config", str(config), "--inventory", INVENTORY))
    assert line == (f"error: {config}:5:40: sharing.timeSlicing.resources[0].replicas: expected at most "
                    "179392 (more replicas of even one device with a one-character ID do not fit the 4 MiB "
                    "ListAndWatch message the kubelet accepts: see lab02_device_plugin.limits), got 1000000000")


def test_serve_refuses_an_inventory_of_more_gpus_than_a_node_has(tmp_path):
    inventory = tmp_path / "many.yaml"
    inventory.write_text("gpus:\n- {model: T4, count: 100000}\n")
    line = one_error_line(cli("serve", "--dry-run", "--inventory", str(inventory)))
    # line 2 "- {model: T4, count: 100000}": 2 + 1 + 7 + 2 + 2 + 7 = 21 characters before the value
    assert line == (f"error: {inventory}:2:22: gpus[0].count: 100000 GPUs; expected at most 64 GPUs "
                    "on one node (the largest single-host systems have 16; see "
                    "lab02_device_plugin.limits)")


# ----------------------------------------------------------------------- finding 3

@pytest.mark.parametrize("argv, message", [
    (["--duration", "inf"], "--duration: expected seconds above 0 and at most 604800, got inf"),
    (["--duration", "nan"], "--duration: expected seconds above 0"),
    (["--duration", "-1"], "--duration: expected seconds above 0"),
    (["--duration", "0"], "--duration: expected seconds above 0"),
    (["--wait", "nan"], "--wait: expected seconds above 0 and at most 3600, got nan"),
    (["--wait", "1e9"], "--wait: expected seconds above 0 and at most 3600, got 1e9"),
    (["--dial-timeout", "0"], "--dial-timeout: expected seconds above 0 and at most 300"),
])
def test_kubelet_time_options_are_bounded(tmp_path, argv, message):
    proc = cli("kubelet", "--plugin-dir", str(tmp_path / "dp"), *argv)
    assert proc.returncode == 1 and message in proc.stderr and "Traceback" not in proc.stderr


def test_kubelet_help_states_the_bounds():
    out = " ".join(cli("kubelet", "--help").stdout.split())  # argparse wraps lines
    assert "at most 3600" in out and "at most 604800" in out and "at most 300" in out


# ----------------------------------------------------------------------- finding 4

@pytest.mark.parametrize("container, message", [
    ("{name: c, resources: {requests: {nvidia.com/gpu: 1}}}",
     "resources.limits[nvidia.com/gpu]: extended resources need a limit equal to the request"),
    ("{name: c, resources: {limits: {nvidia.com/gpu: 2}, requests: {nvidia.com/gpu: 1}}}",
     "must be equal to nvidia.com/gpu limit of 2"),
    ("{name: c, resources: {limits: {nvidia.com/gpu: 500m}}}",
     "expected a whole number of devices (extended resources cannot be fractional), got '500m'"),
    ("{name: c, resources: {limits: {gpu: 1}}}",  # finding 13: no domain
     "resource name 'gpu': expected a standard resource (cpu, memory, ...) or a domain-prefixed"),
])
def test_kubelet_pods_file_is_validated_before_any_pod_is_admitted(tmp_path, container, message):
    pods = tmp_path / "pods.yaml"
    good = "kind: Pod\nmetadata: {name: good}\nspec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]}\n"
    pods.write_text(good + "---\n" + f"kind: Pod\nmetadata: {{name: bad}}\nspec: {{containers: [{container}]}}\n")
    proc = cli("kubelet", "--plugin-dir", str(tmp_path / "dp"), "--pods", str(pods), "--wait", "1")
    line = one_error_line(proc)
    assert line.startswith(f"error: {pods}: document 2: pod bad spec.containers[0]") and message in line
    assert "Admit good" not in proc.stdout and "serving Registration" not in proc.stdout


# ----------------------------------------------------------------------- finding 5

def test_sigterm_to_demo_removes_its_temporary_directory(socket_dir):
    proc = subprocess.Popen([sys.executable, "-m", "lab02_device_plugin", "demo", "--pods", "1000"],
                            cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "TMPDIR": str(socket_dir), "PYTHONUNBUFFERED": "1"})
    try:
        for line in proc.stdout:
            if "kubelet | Admit pod-" in line:  # sockets and checkpoint exist now
                break
        assert [p.name for p in socket_dir.iterdir()][0].startswith("lab02-demo-")
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130 and list(socket_dir.iterdir()) == []


# ----------------------------------------------------------------------- finding 6

def test_demo_into_a_closed_pipe_is_quiet(socket_dir):
    proc = subprocess.Popen([sys.executable, "-m", "lab02_device_plugin", "demo"], cwd=REPO_ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "TMPDIR": str(socket_dir)})
    try:
        proc.stdout.readline()  # `| head -1`
        proc.stdout.close()
        err = proc.stderr.read().decode()
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0 and err == "" and list(socket_dir.iterdir()) == []


@pytest.mark.parametrize("command", ["kubelet", "serve"])
def test_kubelet_and_serve_into_a_closed_pipe_stop_quietly(socket_dir, command):
    # The process may already have written all its start-up lines into the pipe's buffer when
    # we close our end, so something must make it print again after the close: the kubelet's
    # closing summary when --duration runs out, or the plugin restart that SIGHUP asks of serve.
    argv = (["kubelet", "--plugin-dir", str(socket_dir), "--duration", "5"] if command == "kubelet"
            else ["serve", "--socket-dir", str(socket_dir), "--kubelet-socket", "", "--inventory", INVENTORY])
    proc = subprocess.Popen([sys.executable, "-m", "lab02_device_plugin", *argv], cwd=REPO_ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        proc.stdout.readline()
        proc.stdout.close()
        if command == "serve":
            proc.send_signal(signal.SIGHUP)
        proc.wait(timeout=30)  # the next line hits the closed pipe: the command stops quietly
        err = proc.stderr.read().decode()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0 and err == ""
    assert [p.name for p in socket_dir.iterdir() if p.is_socket()] == []


# ----------------------------------------------------------------------- finding 13

@pytest.mark.parametrize("spec, message", [
    ("p=gpu:1", "'gpu' is not an extended resource name; expected a domain-prefixed name"),
    ("p1=nvidia.com/gpu:1,p2=nvidia.com/gpu:1", "one pod per --admit; repeat the option"),
    ("p=kubernetes.io/gpu:1", "'kubernetes.io/gpu' is not an extended resource name"),
    ("p=nvidia.com/gpu:1,nvidia.com/gpu:2", "nvidia.com/gpu given twice"),
])
def test_kubelet_admit_resource_names_are_validated(tmp_path, spec, message):
    line = one_error_line(cli("kubelet", "--plugin-dir", str(tmp_path / "dp"), "--admit", spec))
    assert line.startswith(f"error: --admit {spec!r}: ") and message in line


@pytest.mark.parametrize("spec, message", [
    # Kubernetes' rule for pod names (ValidatePodName = NameIsDNSSubdomain): no capitals, no '_'
    ("Pod_1=nvidia.com/gpu:1", "pod 'Pod_1': metadata.name: expected a DNS-1123 subdomain, Kubernetes' rule for "
                               "pod names (lower-case letters, digits, '-' and '.', starting and ending with a "
                               "letter or digit, at most 253 characters), e.g. pod-1"),
    (f"{'a' * 254}=nvidia.com/gpu:1", "metadata.name: expected a DNS-1123 subdomain"),
    # 262,144 = 4 MiB / 16 bytes, the smallest Device a ListAndWatch response can carry
    ("p=nvidia.com/gpu:262145", "count of nvidia.com/gpu: expected at most 262144 devices (no node can advertise "
                                "more of one resource: the kubelet reads them all from one 4 MiB ListAndWatch "
                                "response), got '262145'"),
    ("p=nvidia.com/gpu:1e30", "count of nvidia.com/gpu: expected at most 262144 devices"),
    ("p=nvidia.com/gpu:0.5", "count of nvidia.com/gpu: expected a whole number of devices"),
])
def test_kubelet_admit_names_and_counts_are_validated(tmp_path, spec, message):
    line = one_error_line(cli("kubelet", "--plugin-dir", str(tmp_path / "dp"), "--admit", spec))
    assert line.startswith(f"error: --admit {spec!r}: ") and message in line
    assert not (tmp_path / "dp").exists()   # refused before the kubelet started


def test_kubelet_plugin_dir_that_is_a_file_says_so(tmp_path):
    plain = tmp_path / "plain-file"
    plain.write_text("x")
    line = one_error_line(cli("kubelet", "--plugin-dir", str(plain), "--duration", "1"))
    assert line == (f"error: plugin directory {plain}: it is a file, not a folder; expected a directory (or a "
                    "path to create)")
    line = one_error_line(cli("kubelet", "--plugin-dir", str(plain / "dp"), "--duration", "1"))
    assert line == (f"error: plugin directory {plain / 'dp'}: {plain} is a file, not a folder; expected a "
                    "directory (or a path to create)")


def test_kubelet_plugin_dir_without_write_access_is_one_line():
    line = one_error_line(cli("kubelet", "--plugin-dir", "/proc", "--duration", "1"))
    assert line.startswith("error: plugin directory /proc: cannot create a unix socket in it")
