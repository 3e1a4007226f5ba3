"""Command line of Lab 02: ``python -m lab02_device_plugin <command> ...``.

Shaped like pre-commit's CLI: :func:`main` parses and dispatches and returns the exit
status. Each subcommand lives in its own module under :mod:`lab02_device_plugin.commands`
and defines ``NAME``, ``HELP``, ``add_arguments(parser)`` and ``run(args) -> int``; this
module discovers them, so adding a command never touches this file.

Exit status: 0 success (also when the reader of stdout leaves early, as in ``... | head -1``:
the command stops quietly); 1 bad input (:class:`~lab02_device_plugin.errors.InputError`,
or an option argparse rejects, printed as one line ``error: <option>: <what was
expected>``); 130 interrupted; 3 an internal error (a bug), printed with its traceback.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import os
import pkgutil
import sys
import traceback
from collections.abc import Sequence

from lab02_device_plugin import commands as _commands_pkg
from lab02_device_plugin.errors import InputError

PROG = "python -m lab02_device_plugin"


class OneLineParser(argparse.ArgumentParser):
    """An :class:`argparse.ArgumentParser` whose usage errors are one line and exit 1.

    argparse's own ``error`` prints the whole usage and exits 2; a user who typed
    ``--seed -1`` needs only ``error: --seed: expected a seed, ...`` (the usage is one
    ``--help`` away). Subparsers inherit the class (``add_subparsers`` uses ``type(self)``).
    """

    def error(self, message: str) -> None:  # type: ignore[override]
        # "argument --seed: expected ..." -> "--seed: expected ..."
        if message.startswith("argument "):
            message = message[len("argument "):]
        self.exit(1, f"error: {message} (see {self.prog} --help)\n")


def _discover_commands() -> list:
    modules = []
    for info in sorted(pkgutil.iter_modules(_commands_pkg.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{_commands_pkg.__name__}.{info.name}")
        if hasattr(module, "NAME") and hasattr(module, "run"):
            modules.append(module)
    return sorted(modules, key=lambda m: m.NAME)


def build_parser() -> tuple[argparse.ArgumentParser, dict]:
    """Build the argument parser; returns it and a map of command name -> module."""
    from lab02_device_plugin import __version__

    parser = OneLineParser(
        prog=PROG,
        description=(
            "Lab 02 of 'GPU Scheduling, Sharing & Virtualization': a Kubernetes device plugin "
            "(gRPC, wire-compatible with the kubelet's v1beta1 API) configured like NVIDIA's "
            "(time-slicing replicas, MPS, MIG strategies, health), and a mock kubelet that drives it."
        ),
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    modules = {}
    for module in _discover_commands():
        p = sub.add_parser(
            module.NAME,
            help=module.HELP,
            description=getattr(module, "DESCRIPTION", module.HELP),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        module.add_arguments(p)
        modules[module.NAME] = module
    help_p = sub.add_parser("help", help="show help for a command")
    help_p.add_argument("help_command", nargs="?", metavar="COMMAND")
    return parser, modules


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default ``sys.argv[1:]``), run the command and return its exit status."""
    try:
        try:
            return _main(argv)
        except SystemExit:  # --help, --version, usage errors: flush here, where a closed pipe is caught
            sys.stdout.flush()
            raise
    except BrokenPipeError:
        # `... | head -1`: the reader left. Point stdout at /dev/null so the interpreter's
        # final flush does not fail again, and stop quietly, as well-behaved filters do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _nearest_option(parser: argparse.ArgumentParser, args: argparse.Namespace, extra: Sequence[str]) -> None:
    """Exit 1 with one line naming the arguments that no parser took and, for a misspelt
    option, the nearest one of the command (``--dry-runn`` -> ``did you mean --dry-run?``)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and args.command in action.choices:
            parser = action.choices[args.command]
    message = f"unrecognized arguments: {' '.join(extra)}"
    typed = next((e.split("=", 1)[0] for e in extra if e.startswith("--")), None)
    options = [o for a in parser._actions for o in a.option_strings if o.startswith("--")]
    nearest = difflib.get_close_matches(typed, options, n=1, cutoff=0.6) if typed else []
    parser.error(message + (f"; did you mean {nearest[0]}?" if nearest else ""))


def _main(argv: Sequence[str] | None) -> int:
    parser, modules = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        _nearest_option(parser, args, extra)
    if args.command is None:
        parser.print_help()
        sys.stdout.flush()
        return 0
    if args.command == "help":
        if args.help_command:
            parser.parse_args([args.help_command, "--help"])
        parser.print_help()
        sys.stdout.flush()
        return 0
    try:
        status = int(modules[args.command].run(args) or 0)
        sys.stdout.flush()  # a closed pipe shows up here, inside the handler above
        return status
    except BrokenPipeError:
        raise
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception:  # a bug: keep the traceback, use a distinct status
        traceback.print_exc()
        print(f"internal error in {PROG} {args.command}; please report it with the traceback above",
              file=sys.stderr)
        return 3


def run() -> None:
    """Console-script entry point."""
    raise SystemExit(main())
