"""Command line of Lab 01: ``python -m lab01_cluster_sim <command> ...``.

The subcommands are the modules of :mod:`lab01_cluster_sim.commands` (``simulate``,
``compare``, ``sweep``, ``run`` a scenario, ...); the shell around them (discovery, one-line
usage errors, exit statuses 0/1/3/130) is :class:`course_kit.cli.CommandLine`.
"""

from course_kit.cli import CommandLine
from lab01_cluster_sim import __version__, commands
from lab01_cluster_sim.errors import InputError

COMMAND_LINE = CommandLine(
    prog="python -m lab01_cluster_sim",
    description=("Lab 01 of 'GPU Scheduling, Sharing & Virtualization': a discrete-event GPU cluster "
                 "scheduling simulator that replays the Alibaba GPU trace (2023) and compares "
                 "placement policies, gang vs naive placement, queue disciplines, topology and autoscaling."),
    version=__version__, commands=commands, input_error=InputError)

main = COMMAND_LINE.main
build_parser = COMMAND_LINE.build_parser
run = COMMAND_LINE.run
