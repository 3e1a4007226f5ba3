"""The house rules on imports: the contracts of ``.importlinter`` hold.

Each lab is layered (a floor imports only the floors below it), its siblings import each other
without cycles, the two labs never import each other, and ``course_kit`` (what both share)
imports neither. ``lint-imports`` from the repository root runs the same check.
"""

from __future__ import annotations

import configparser
import pkgutil
from pathlib import Path

from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / ".importlinter"


def _layers_contracts() -> dict[str, tuple[str, set[str]]]:
    """Contract id -> (container, the names its layers list), for every layers contract."""
    parser = configparser.ConfigParser()
    parser.read(CONFIG, encoding="utf-8")
    out = {}
    for section in parser.sections():
        if parser.get(section, "type", fallback="") != "layers":
            continue
        (container,) = parser.get(section, "containers").split()
        names = {name.strip() for line in parser.get(section, "layers").splitlines()
                 for name in line.replace("|", ":").split(":") if name.strip()}
        out[section.rsplit(":", 1)[-1]] = (container, names)
    return out


def test_import_contracts_hold(capsys) -> None:
    status = lint_imports(config_filename=str(CONFIG), no_cache=True, no_logo=True)
    out = capsys.readouterr().out
    assert status == 0, out
    assert "0 broken" in out


def test_every_module_of_a_layered_package_is_on_a_floor() -> None:
    """A module left out of the layers list would be checked by no floor: each direct module
    and subpackage of a layered container must be named on one."""
    contracts = _layers_contracts()
    assert {"lab02-layers"} <= set(contracts)
    for contract, (container, names) in contracts.items():
        path = ROOT.joinpath(*container.split("."))
        children = {m.name for m in pkgutil.iter_modules([str(path)])}
        assert children - names == set(), f"{contract}: {sorted(children - names)} of {container} on no floor"
        assert names - children == set(), f"{contract}: {sorted(names - children)} named but not in {container}"
