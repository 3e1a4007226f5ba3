"""Command line of Lab 02: ``python -m lab02_device_plugin <command> ...``.

Three subcommands, one module each under :mod:`lab02_device_plugin.commands`: ``serve`` (the
device plugin), ``kubelet`` (the mock kubelet) and ``demo`` (both in one process). The shell
around them (discovery, one-line usage errors, exit statuses 0/1/3/130) is
:class:`course_kit.cli.CommandLine`, the same as Lab 01's.
"""

from course_kit.cli import CommandLine
from lab02_device_plugin import __version__, commands
from lab02_device_plugin.errors import InputError

COMMAND_LINE = CommandLine(
    prog="python -m lab02_device_plugin",
    description=("Lab 02 of 'GPU Scheduling, Sharing & Virtualization': a Kubernetes device plugin "
                 "(gRPC, wire-compatible with the kubelet's v1beta1 API) configured like NVIDIA's "
                 "(time-slicing replicas, MPS, MIG strategies, health), and a mock kubelet that drives it."),
    version=__version__, commands=commands, input_error=InputError)

main = COMMAND_LINE.main
build_parser = COMMAND_LINE.build_parser
run = COMMAND_LINE.run
