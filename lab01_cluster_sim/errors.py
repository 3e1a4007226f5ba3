"""Exceptions raised for bad user input.

Every error that a user can cause (a malformed CSV row, an unknown policy name, an
impossible job shape) is an :class:`InputError` whose message names the input
(``file:line:column``, option or field) and says what was expected. The command line
prints such errors as one line and exits with status 1; any other exception is a bug
in the simulator and exits with status 3 with its traceback (see :mod:`.cli`).
"""

from __future__ import annotations


class InputError(ValueError):
    """Bad input from the user: the message names the input and what was expected."""


class TraceFormatError(InputError):
    """A trace file is malformed.

    Attributes:
        path: the file.
        line: 1-based line number (the header is line 1), or None for whole-file problems.
        column: the column name, or None.
    """

    def __init__(self, path: str, line: int | None, column: str | None, message: str) -> None:
        self.path = str(path)
        self.line = line
        self.column = column
        where = self.path
        if line is not None:
            where += f":{line}"
        if column is not None:
            where += f":{column}"
        super().__init__(f"{where}: {message}")
