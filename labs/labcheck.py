"""Check cells of the lab notebooks: run one part's graded tests and say plainly what passed.

In a notebook (the kernel's working folder is ``labs/``)::

    import labcheck
    labcheck.check("1A")

``check`` runs ``python tests/grading/local.py --grade-part=1A`` on this checkout in a
subprocess (``pytest --grade`` in a child, so a learner's endless loop stops at the test's
timeout and cannot hang the kernel, and the points counted from pytest's report by a
process that runs none of the lab code), reads the Gradescope-format results it writes, and prints one line per graded
test, the points, and what to look at next. Hidden tests are not run here; the grader runs
them. Importing this module also puts the checkout first on ``sys.path``, so the notebook
uses the lab packages in this folder, the ones you edit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

CHECK_TIMEOUT_S = 900.0
"""Upper bound on one check (each graded test also has its own timeout)."""

PARTS: Mapping[str, tuple[str, str]] = MappingProxyType({
    "1A": ("the best-fit score behind the policy comparison",
           "lab01_cluster_sim/policies/generic.py: best_fit_raw_score"),
    "1B": ("stranded GPUs, first-fit against best-fit",
           "lab01_cluster_sim/metrics.py: count_stranded_gpus"),
    "1C": ("the gang test: naive deadlock, gang permit",
           "lab01_cluster_sim/scheduler.py: gang_permit"),
    "1D": ("preemption with checkpoint cost",
           "lab01_cluster_sim/disciplines/preemption.py: choose_victims"),
    "1E": ("DRF ordering",
           "lab01_cluster_sim/disciplines/drf.py: drf_pick_tenant"),
    "2A": ("registration -> ListAndWatch -> Allocate",
           "lab02_device_plugin/plugin/sharing.py: list_and_watch_snapshot"),
    "2B": ("replicas: 4, and why allocation is not isolation",
           "lab02_device_plugin/plugin/sharing.py: expand_replicas, physical_device_id"),
    "2C": ("MIG profiles as resource names",
           "lab02_device_plugin/plugin/mig.py: mixed_resource_name"),
    "2D": ("health transitions",
           "lab02_device_plugin/plugin/health.py: next_health"),
})
"""Part id -> (what it is about, where the learner's code goes)."""


@dataclass(frozen=True)
class PartResult:
    """Outcome of :func:`check` for one part.

    Attributes:
        part: the part id (``"1A"``).
        passed: graded tests that passed; total: graded tests run.
        score, max_score: points earned and available.
    """

    part: str
    passed: int
    total: int
    score: float
    max_score: float

    def _ipython_display_(self) -> None:
        """Show nothing: :func:`check` has printed the report already."""

    @property
    def ok(self) -> bool:
        """True when every graded test of the part passed."""
        return self.total > 0 and self.passed == self.total


def _pts(x: float) -> str:
    return f"{x:g}"


def run_part(part: str, timeout: float = CHECK_TIMEOUT_S) -> tuple[dict | None, str]:
    """Run the graded tests of ``part``; returns (results document or None, pytest's output)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), str(REPO_ROOT / "tests"),
                                         env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.pop("PYTEST_ADDOPTS", None)
    # only the plugins a graded run needs: loading every installed one (nbval, hypothesis...)
    # would cost seconds per check
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    with tempfile.TemporaryDirectory(prefix="labcheck-") as tmp:
        out = Path(tmp) / "results.json"
        # "--opt=value": pytest reads its rootdir from the command line before the grading
        # plugin is loaded, and would take a separate existing path for a test path
        # tests/grading/local.py: pytest --grade in a child, points counted from its report here
        cmd = [sys.executable, str(REPO_ROOT / "tests" / "grading" / "local.py"), f"--grade-part={part}",
               "--grade-no-hidden", "--grade-no-restore", f"--grade-json={out}", "-q", "-p", "no:cacheprovider"]
        try:
            proc = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                                  timeout=timeout)
            log = proc.stdout + proc.stderr
        except subprocess.TimeoutExpired:
            return None, f"the check did not finish within {timeout:g} s"
        doc = json.loads(out.read_text()) if out.is_file() else None
    return doc, log


def check(part: str, timeout: float = CHECK_TIMEOUT_S) -> PartResult:
    """Run the graded tests of one part and print what passed and what to look at next.

    Args:
        part: a part id such as ``"1A"`` (see :data:`PARTS`).
        timeout: seconds before the whole check is given up.

    Returns:
        A :class:`PartResult` (also printed; a notebook shows nothing more for it).

    Raises:
        ValueError: an unknown part id (the message lists the known ones).
    """
    if part not in PARTS:
        raise ValueError(f"unknown part {part!r}; expected one of {', '.join(PARTS)}")
    about, where = PARTS[part]
    doc, log = run_part(part, timeout)
    if doc is None or not doc.get("tests"):
        print(f"Part {part} ({about}): the graded tests did not run. pytest said:")
        print("\n".join(log.strip().splitlines()[-15:]))
        return PartResult(part, 0, 0, 0.0, 0.0)
    tests = doc["tests"]
    passed = sum(t["status"] == "passed" for t in tests)
    score = sum(t["score"] for t in tests)
    top = sum(t["max_score"] for t in tests)
    print(f"Part {part} ({about}): {passed} of {len(tests)} graded tests pass, "
          f"{_pts(score)} of {_pts(top)} points.")
    for t in tests:
        mark = "PASS" if t["status"] == "passed" else "FAIL"
        print(f"  {mark} {t['number']:<6} {t['name']}  [{_pts(t['score'])}/{_pts(t['max_score'])}]")
        if t["status"] != "passed":
            first = (t["output"].strip().splitlines() or [""])[0]
            print(f"         -> {first}")
    result = PartResult(part, passed, len(tests), score, top)
    if result.ok:
        later = [p for p in PARTS if p[0] == part[0] and p > part]
        print(f"All of part {part} passes." + (f" Next: part {later[0]}." if later else " That was the last part of this lab."))
    else:
        print(f"Look at: {where} (the lines marked \"your code here ({part})\"). "
              f"For full tracebacks run, from the repository root: "
              f"python -m pytest --grade --grade-part={part}")
    return result
