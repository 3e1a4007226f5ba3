"""Exceptions raised for bad user input.

Every error that a user can cause (a bad config key, an unreadable inventory, an unknown
device ID) is an :class:`InputError` whose message names the input (file, config key such
as ``sharing.timeSlicing.resources[0].replicas``, device ID) and says what was expected.
The command line prints it as one line and exits with status 1; any other exception is a
bug and exits with status 3 with its traceback (see :mod:`.cli`).
"""

from __future__ import annotations


class InputError(ValueError):
    """Bad input from the user: the message names the input and what was expected."""
