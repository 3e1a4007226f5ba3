"""The house rules that tools can check: the import contracts of .importlinter hold.

import-linter (https://import-linter.readthedocs.io, in the dev extra) reads the contracts from
``.importlinter`` at the repository root (each lab's layers, no cycles between sibling modules
and packages, the two labs independent) and checks them against the source; ``lint-imports``
from the root runs the same check and prints which import breaks which contract.
"""

from __future__ import annotations

import os
from pathlib import Path

from importlinter import cli

REPO_ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_hold(monkeypatch, capsys):
    monkeypatch.chdir(REPO_ROOT)   # the contracts name packages found from the root
    monkeypatch.syspath_prepend(os.fspath(REPO_ROOT))
    status = cli.lint_imports(config_filename=os.fspath(REPO_ROOT / ".importlinter"), no_cache=True, no_logo=True)
    assert status == cli.EXIT_STATUS_SUCCESS, capsys.readouterr().out
