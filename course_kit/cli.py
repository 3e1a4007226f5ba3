"""The command-line shell both labs share: ``python -m <lab> <command> ...``.

Shaped like pre-commit's CLI: :meth:`CommandLine.main` parses and dispatches and returns the
exit status. Each subcommand lives in its own module of the lab's ``commands`` package and
defines ``NAME``, ``HELP``, ``add_arguments(parser)`` and ``run(args) -> int`` (optionally
``DESCRIPTION``); :class:`CommandLine` discovers them, so adding a command never touches the
shell. Each lab's ``cli`` module builds one :class:`CommandLine` with its program name,
description, version, commands package and input-error class.

Exit status: 0 success (also when the reader of stdout leaves early, as in ``... | head -1``:
the command stops quietly); 1 bad input (the lab's ``InputError``, or an option argparse
rejects, printed as one line ``error: <option>: <what was expected>``); 130 interrupted; 3 an
internal error (a bug), printed with its traceback.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import os
import pkgutil
import re
import sys
import textwrap
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType


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


HELP_WIDTH = 80
"""Widest line of a command's description in ``--help`` (fewer on a narrower terminal)."""

_ITEM = re.compile(r"(\d+\. |- )")


class DescriptionFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps a command description's layout but re-wraps its prose to the terminal.

    Lines are grouped: a paragraph (unindented lines), or an item whose continuation lines
    hang under its text (``1. text`` / ``naive: text`` / ``  term  text`` followed by lines
    indented to where the text starts). Each group is filled to ``min(width, HELP_WIDTH)``
    with its hanging indent; anything else (example command lines, a line ending in ``\\``,
    a lone indented line) is kept as written.
    """

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        width = max(40, min(width, HELP_WIDTH))
        out: list[str] = []
        for block in re.split(r"\n[ \t]*\n", text.strip("\n")):
            out.append("\n".join(self._fill_group(g, width, indent) for g in _groups(block.splitlines())))
        return "\n\n".join(out)

    @staticmethod
    def _fill_group(lines: list[str], width: int, indent: str) -> str:
        first = lines[0]
        lead = len(first) - len(first.lstrip())
        raw = "\n".join(indent + line for line in lines)
        if any(line.rstrip().endswith("\\") or line.lstrip().startswith(("python -m", "http")) for line in lines):
            return raw
        if len(lines) == 1 and lead > 0 and len(first) <= width:
            return raw
        hang = len(lines[1]) - len(lines[1].lstrip()) if len(lines) > 1 else lead
        if len(lines) == 1 and lead > 0:
            gap = re.search(r"\S  +", first[lead:])       # "  term  text": hang under the text
            hang = lead + gap.end() if gap is not None else lead
        return textwrap.fill(" ".join(line.strip() for line in lines), width, initial_indent=indent + " " * lead,
                             subsequent_indent=indent + " " * hang, break_on_hyphens=False,
                             break_long_words=False)


def _hangs(first: str, column: int) -> bool:
    """True when text on ``first`` starts at ``column`` after a label (``1. ``, ``naive: ``,
    ``  term  ``), so lines indented to ``column`` continue it."""
    lead = len(first) - len(first.lstrip())
    if column <= lead or column > len(first) or first[column - 1] != " " or first[column:column + 1] == " ":
        return False
    label = first[lead:column].strip()
    return bool(_ITEM.fullmatch(first[lead:column])) or (lead == 0 and label.endswith(":") and " " not in label) \
        or (lead > 0 and first[column - 2:column] == "  ")


def _groups(lines: list[str]) -> list[list[str]]:
    """Split a block's lines into paragraphs and hanging items (see DescriptionFormatter)."""
    groups: list[list[str]] = []
    for line in lines:
        ind = len(line) - len(line.lstrip())
        if groups:
            g = groups[-1]
            g_lead = len(g[0]) - len(g[0].lstrip())
            if len(g) > 1:
                cont = len(g[1]) - len(g[1].lstrip())
                if ind == cont and cont > g_lead:
                    g.append(line)
                    continue
            elif ind > g_lead and _hangs(g[0], ind):
                g.append(line)
                continue
            if ind == 0 and g_lead == 0 and (len(g) == 1 or len(g[1]) == len(g[1].lstrip())) \
                    and not _ITEM.match(line) and not _ITEM.match(g[0]):
                g.append(line)
                continue
        groups.append([line])
    return groups


@dataclass(frozen=True)
class CommandLine:
    """One lab's command line: its subcommands, discovered from a package, under one shell.

    Attributes:
        prog: the program as the user types it, ``"python -m lab01_cluster_sim"``.
        description: the program's ``--help`` text.
        version: printed by ``--version``.
        commands: the package whose public modules are the subcommands (modules whose name
            starts with ``_`` are helpers, skipped).
        input_error: the lab's exception class for bad user input: printed as one line
            ``error: <message>`` with exit status 1.
    """

    prog: str
    description: str
    version: str
    commands: ModuleType
    input_error: type[Exception]

    def discover_commands(self) -> list[ModuleType]:
        """The subcommand modules of :attr:`commands` (those with ``NAME`` and ``run``), by name."""
        modules = []
        for info in sorted(pkgutil.iter_modules(self.commands.__path__), key=lambda m: m.name):
            if info.name.startswith("_"):
                continue
            module = importlib.import_module(f"{self.commands.__name__}.{info.name}")
            if hasattr(module, "NAME") and hasattr(module, "run"):
                modules.append(module)
        return sorted(modules, key=lambda m: m.NAME)

    def build_parser(self) -> tuple[argparse.ArgumentParser, dict[str, ModuleType]]:
        """Build the argument parser; returns it and a map of command name -> module."""
        parser = OneLineParser(prog=self.prog, description=self.description)
        parser.add_argument("--version", action="version", version=f"%(prog)s {self.version}")
        sub = parser.add_subparsers(dest="command", metavar="COMMAND")
        modules = {}
        for module in self.discover_commands():
            p = sub.add_parser(
                module.NAME,
                help=module.HELP,
                description=getattr(module, "DESCRIPTION", module.HELP),
                formatter_class=DescriptionFormatter,
            )
            module.add_arguments(p)
            modules[module.NAME] = module
        help_p = sub.add_parser("help", help="show help for a command",
                                description="Show the help of COMMAND (the same as COMMAND --help), or this "
                                            "program's help without one.")
        help_p.add_argument("help_command", nargs="?", metavar="COMMAND", choices=sorted(modules),
                            help=f"one of: {', '.join(sorted(modules))}")
        return parser, modules

    def main(self, argv: Sequence[str] | None = None) -> int:
        """Parse ``argv`` (default ``sys.argv[1:]``), run the command and return its exit status."""
        try:
            try:
                return self._main(argv)
            except SystemExit:  # --help, --version, usage errors: flush here, where a closed pipe is caught
                sys.stdout.flush()
                raise
        except BrokenPipeError:
            # `... | head -1`: the reader left. Point stdout at /dev/null so the interpreter's
            # final flush does not fail again, and stop quietly, as well-behaved filters do.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0

    def run(self) -> None:
        """Console-script entry point: exit with :meth:`main`'s status."""
        raise SystemExit(self.main())

    def _main(self, argv: Sequence[str] | None) -> int:
        parser, modules = self.build_parser()
        args, extra = parser.parse_known_args(argv)
        if extra:
            _refuse_unknown(parser, args, extra)
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
        except self.input_error as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            return 130
        except Exception:  # a bug: keep the traceback, use a distinct status
            traceback.print_exc()
            print(f"internal error in {self.prog} {args.command}; please report it with the traceback above",
                  file=sys.stderr)
            return 3


def _refuse_unknown(parser: argparse.ArgumentParser, args: argparse.Namespace, extra: Sequence[str]) -> None:
    """Exit 1 with one line naming the arguments no parser took, and for a misspelt option the
    nearest one the command has (``--polices`` -> ``did you mean --policies?``)."""
    target = parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and getattr(args, "command", None) in action.choices:
            target = action.choices[args.command]
    message = f"unrecognized arguments: {' '.join(extra)}"
    option = next((e.split("=", 1)[0] for e in extra if e.startswith("-")), None)
    if option is not None:
        known = [o for a in target._actions for o in a.option_strings if o.startswith("--")]
        close = difflib.get_close_matches(option, known, n=1, cutoff=0.6)
        if close:
            message += f"; did you mean {close[0]}?"
    target.error(message)
