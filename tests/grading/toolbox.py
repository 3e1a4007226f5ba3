"""The repository's ``tools/*.py`` scripts, imported by path (for tests and for tools that
use each other)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

TOOLS = Path(__file__).resolve().parents[2] / "tools"


def load_tool(name: str):
    """The module ``tools/<name>.py`` (``make_student_edition``, ``make_autograder``...), loaded once."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, TOOLS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


RUNTIME_DISTRIBUTIONS = ("numpy", "PyYAML", "pytest", "pluggy", "iniconfig", "packaging", "pytest-timeout",
                         "defusedxml", "Pygments")
"""What the labs' learner modules and the grader import (for :func:`readable_runtime`)."""


def _runs_as(python: str, uid: int, path: list[str]) -> bool:
    import subprocess

    code = f"import sys; sys.path[:0] = {path!r}; import numpy, yaml, pytest, defusedxml, pytest_timeout"
    try:
        return subprocess.run([python, "-I", "-c", code], user=uid, group=uid, extra_groups=[], cwd="/",
                              capture_output=True, timeout=120, env={"PATH": "/usr/bin:/bin"}).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def readable_runtime(dest: Path, uid: int = 65534) -> tuple[str, list[str]] | None:
    """An interpreter and ``sys.path`` entries that an unprivileged ``uid`` can run the labs
    and the grader with (for tests that switch users, and batch grading, as root): this interpreter if that
    user can read it, else a virtual environment of ``/usr/bin/python3.X`` (the same version)
    whose site-packages point (a ``.pth`` file) at the packages :data:`RUNTIME_DISTRIBUTIONS`
    linked (or copied) into ``dest`` (or that interpreter with that folder as an extra path).
    None when neither works (or when not root: no user to switch to)."""
    import importlib.metadata
    import os
    import shutil

    if os.geteuid() != 0:
        return None
    if _runs_as(sys.executable, uid, []):
        return sys.executable, []
    python = f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}"
    if not Path(python).is_file():
        return None
    site = dest / "site"
    site.mkdir(parents=True, exist_ok=True)
    for name in RUNTIME_DISTRIBUTIONS:
        dist = importlib.metadata.distribution(name)
        tops = {str(f).split("/")[0] for f in dist.files or [] if not str(f).startswith(("..", "bin/"))}
        for top in sorted(tops - {"__pycache__"}):
            src = Path(dist.locate_file(top))
            if not src.exists() or (site / top).exists():
                continue
            try:  # hard links: instant, and the files stay the installed ones (read-only for that user)
                if src.is_dir():
                    shutil.copytree(src, site / top, copy_function=os.link)
                else:
                    os.link(src, site / top)
            except OSError:
                if src.is_dir():
                    shutil.copytree(src, site / top, dirs_exist_ok=True)
                else:
                    shutil.copy2(src, site / top)
    venv = dest / "venv"  # a virtual environment whose site-packages point at those packages
    try:
        import subprocess

        subprocess.run([python, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True,
                       timeout=120)
        packages = next((venv / "lib").glob("python3*/site-packages"))
        (packages / "course-runtime.pth").write_text(str(site) + "\n")
    except (OSError, subprocess.SubprocessError, StopIteration):
        venv = None
    for folder in [dest, *[p for p in dest.rglob("*") if p.is_dir() and not p.is_symlink()]]:
        os.chmod(folder, 0o755)
    if venv is not None and _runs_as(str(venv / "bin" / "python"), uid, []):
        return str(venv / "bin" / "python"), []
    return (python, [str(site)]) if _runs_as(python, uid, [str(site)]) else None
