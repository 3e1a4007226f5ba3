"""environment.yml must install exactly what pyproject.toml declares (dependencies + book + dev)."""

from __future__ import annotations

import tomllib

import yaml

from conftest import REPO_ROOT


def _pyproject_requirements() -> set[str]:
    data = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    project = data["project"]
    reqs = set(project["dependencies"])
    for extra in ("book", "dev"):
        reqs |= set(project["optional-dependencies"][extra])
    return {r.replace(" ", "") for r in reqs}


def _environment_pip_requirements() -> tuple[str, set[str]]:
    env = yaml.safe_load((REPO_ROOT / "environment.yml").read_text())
    python = next(d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python"))
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    reqs = {r.replace(" ", "") for r in pip_section if not r.startswith("-e")}
    return python, reqs


def test_environment_yml_matches_pyproject():
    python, env_reqs = _environment_pip_requirements()
    assert python == "python=3.11"
    assert env_reqs == _pyproject_requirements()


def test_environment_yml_installs_the_project_with_its_extras():
    env = yaml.safe_load((REPO_ROOT / "environment.yml").read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    assert "-e .[book,dev]" in pip_section
