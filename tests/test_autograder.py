"""The Gradescope autograder, dry-run in simulated /autograder folders, batch grading, and
every attack of the adversarial review (reports/grading-review.md) as a regression test.

``make autograder`` builds the zip once per session. The submissions below, made from this
checkout, are graded by ``tools/grade_submissions.py`` (which runs the zip's own
``run_autograder`` in a temporary folder standing for ``/autograder``, two at a time), and
the solutions once more by calling ``run_autograder`` directly. As root (Gradescope's
case) learner code runs as an unprivileged uid of each grading's own (``course-learner`` when
it exists and no other grading holds it, else a transient uid: the tests pass either way),
with an interpreter that uid can read (``grading.toolbox.readable_runtime``); not as root, as
this user (partial isolation).

==========================  ===========================================================  =====
submission                  what it holds                                                score
==========================  ===========================================================  =====
unchanged/                  the student edition's files; metrics.py in a wrong folder,     0
                            health.py left out
partial/                    parts 1A, 1C, 1E, 2A, 2C solved; the unsolved parts' files     59
                            are broken (an import error, a syntax error) or try to read
                            the hidden tests
solutions/                  the instructor's files (the reference solutions), flat        121
solutions-folder.zip        the same files zipped inside a folder, one of them loose      121
rigged/                     ``partial``'s honest files, a rigged package ``__init__``,   <= 59
                            root conftest.py and grading plugin, and a metrics.py that
                            patches the grader, flips pytest's outcomes and overwrites
                            results.json at exit (the issue's attacks)
honest-1A/                  the student edition with part 1A solved                        13
table-lookup/               each function answers exactly the calls of the visible         56
                            tests and raises on any other (issue 23): under half
a01-a06/                    empty; a01 + a06: a plugin forging ``partial_credit``           0
a02/                        honest-1A + a02: 10 clones of every test                    <= 13
a03-a10/                    empty; a03 + a10: replaced ``runtest``, clones that pass       0
a04/                        empty; a04: a forged JUnit report and os._exit                 0
a05/                        every stub returns an object equal to everything                0
a07-a09/                    empty; a07: a fork-hopping survivor; a09: a daemon that         0
                            rewrites results.json when it runs as root
huge-2C/                    the solutions, but mixed_resource_name returns 9 MB of text   110
                            (a failing assertion quotes it): 2C's 5 + 1 + 5 points lost
numpy-str/                  the solutions, mixed_resource_name returning ``numpy.str_``    121
helpers/                    the solutions, but metrics.py imports a helper module of      106
                            the learner's (not taken): 1B loses its 7 + 1 + 7 points
notebooks.zip               only the notebooks                                              0
z*.zip, bomb.zip ...        the review's 8 malformed zips and 5 more (a bomb, a link,       0
                            absolute and .. paths, a duplicate member)
==========================  ===========================================================  =====

Points by hand: visible tests 1A 6, 1B 7, 1C 5, 1D 8, 1E 5, 2A 6, 2B 7, 2C 5, 2D 7 (56);
hidden tests: one fixed case per part (9) and one test of random instances per part worth
the part's visible points (56); 121 in all. So ``partial`` = 27 visible + 5 + 27 hidden =
59, ``honest-1A`` = 6 + 1 + 6 = 13, ``helpers`` = 121 - (7 + 1 + 7) = 106 (1B's points),
``table-lookup`` = 56 (the visible tests only), under half of 121.
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import jsonschema
import pytest

from grading import catalog, layout, runner
from grading.toolbox import load_tool, readable_runtime

REPO_ROOT = Path(__file__).resolve().parents[1]
ATTACKS = REPO_ROOT / "tests" / "grading_attacks"
SCHEMA = json.loads((REPO_ROOT / "tests" / "grading" / "results.schema.json").read_text())
SPEC = json.loads((REPO_ROOT / "tests" / "grading" / "submission.json").read_text())
LEARNER_FILES: dict[str, list[str]] = SPEC["files"]
TIMEOUT_S = 900  # a safety net for a hung grader, not a speed goal
VISIBLE = {"1A": 6, "1B": 7, "1C": 5, "1D": 8, "1E": 5, "2A": 6, "2B": 7, "2C": 5, "2D": 7}
PARTIAL = ("1A", "1C", "1E", "2A", "2C")
BAD_ZIPS = ("z10_badcrc.zip", "z11_truncated.zip", "z1_file_then_dir.zip", "z2_longname.zip",
            "z5_dir_then_file.zip", "z8_encrypted.zip", "z9_method99.zip")
edition_tool = load_tool("make_student_edition")
ISOLATED = re.compile(r"learner code ran as (the transient uid \d+|the unprivileged user course-learner \(uid \d+\))")
"""The grader's note when learner code ran as a uid of its own (whether course-learner exists or not)."""


def with_parts(rel: str, keep: tuple[str, ...]) -> str:
    """The instructor's ``rel`` with the solution regions of parts not in ``keep`` stubbed."""
    text = (REPO_ROOT / rel).read_text()
    lines = text.splitlines(keepends=True)
    for r in reversed(edition_tool.find_regions(text, rel)):
        if r.part not in keep:
            indent = re.match(r"\s*", lines[r.begin - 1]).group(0)
            lines[r.begin - 1:r.end] = [f'{indent}raise NotImplementedError("your code here ({r.part})")\n']
    return "".join(lines)


def _write(folder: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    return folder


def _replace_stub(text: str, part: str, body: str) -> str:
    stub = re.search(rf'^(\s*)raise NotImplementedError\("your code here \({part}\)"\)\n', text, re.M)
    indent = stub.group(1)
    return text[:stub.start()] + "".join(f"{indent}{ln}\n" for ln in body.splitlines()) + text[stub.end():]


def attack(name: str, markers: Path) -> str:
    """The code of one attack file of tests/grading_attacks/ (its marker folder filled in)."""
    return (ATTACKS / name).read_text().replace("@MARKERS@", str(markers))


READER = '''import pathlib
found = []
for base in (pathlib.Path.cwd(), pathlib.Path("/autograder/source"), pathlib.Path({root!r}) / "source"):
    try:
        found += [p.read_text()[:300] for p in base.rglob("test_hidden_*.py")]
    except OSError:
        pass
raise AssertionError("hidden tests seen: " + repr(found)[:500] if found else "nothing found")'''

LOOKUP = (ATTACKS / "a11_table_lookup.py").read_text()
"""The table-lookup attack's helpers, appended to each learner file (see :func:`table_lookup_files`)."""


def table_lookup_files(student: Path, solutions: dict[str, str], scratch: Path) -> dict[str, str]:
    """Issue 23's table-lookup submission: each learner function answers exactly the calls
    that the visible graded tests make (recorded by running them on the instructor's code
    with tests/grading_attacks/a11_record_visible_calls.py) and raises on any other, which is
    what a table of the visible tests' answers does."""
    functions = catalog.learner_functions(student)
    out = scratch / "visible-calls.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PYTEST"))}
    env.update(PYTHONPATH=os.pathsep.join([str(REPO_ROOT), str(REPO_ROOT / "tests"), str(ATTACKS)]),
               RECORD_FUNCTIONS=json.dumps([[f.module, f.name] for f in functions]), RECORD_OUT=str(out))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
                           "a11_record_visible_calls", "tests/lab01/graded", "tests/lab02/graded"],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    keys = json.loads(out.read_text())
    files = {}
    for rel, text in solutions.items():
        module = rel[:-3].replace("/", ".")
        wrapped = [f"{f.name} = _table_lookup({f.name}, frozenset({sorted(keys.get(f'{module}.{f.name}', []))!r}))\n"
                   for f in functions if f.module == module]
        files[rel] = text + "\n\n" + LOOKUP + "".join(wrapped)
    return files


RIG = '''
import atexit as _atexit
import gc as _gc


def _rig():
    try:  # the issue's attack: the grader's results writer gives full marks
        import grading.plugin as gp
        gp.Grader.results_json = lambda self: {{"score": 999, "tests": []}}
    except Exception:
        pass
    try:  # every test "passes": a hook wrapper on the running pytest's own reports
        import pytest
        from _pytest.config import Config
        config = next(o for o in _gc.get_objects() if isinstance(o, Config))

        class _Flip:
            @pytest.hookimpl(wrapper=True)
            def pytest_runtest_makereport(self, item, call):
                report = yield
                report.outcome, report.longrepr = "passed", None
                return report

        config.pluginmanager.register(_Flip(), "flip")
    except Exception:
        pass

    def _overwrite():
        import json
        import pathlib
        out = pathlib.Path({root!r}) / "results" / "results.json"
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps({{"score": 999, "tests": []}}))
        except OSError:
            pass

    _atexit.register(_overwrite)


_rig()
'''


def _zip_with(path: Path, members: list[tuple[zipfile.ZipInfo | str, bytes]], compress: int = zipfile.ZIP_STORED):
    with zipfile.ZipFile(path, "w", compress) as zf:
        for info, data in members:
            zf.writestr(info, data)


def _crafted_zips(folder: Path) -> None:
    """The review's zips (tests/grading_attacks/zips) and five more made here."""
    for name in BAD_ZIPS:
        shutil.copy2(ATTACKS / "zips" / name, folder / name)
    _zip_with(folder / "bomb.zip", [("lab01_cluster_sim/metrics.py", b"0" * (300 * 1024 * 1024))],
              zipfile.ZIP_DEFLATED)  # 300 MiB of zeros in about 300 kB
    link = zipfile.ZipInfo("lab01_cluster_sim/metrics.py")
    link.external_attr = 0o120777 << 16  # a symbolic link to a file outside
    _zip_with(folder / "link.zip", [(link, b"/etc/passwd")])
    _zip_with(folder / "absolute.zip", [("/tmp/lab01_cluster_sim/metrics.py", b"x = 1\n")])
    _zip_with(folder / "dotdot.zip", [("../lab01_cluster_sim/metrics.py", b"x = 1\n")])
    with zipfile.ZipFile(folder / "duplicate.zip", "w") as zf:
        zf.writestr("lab01_cluster_sim/metrics.py", "x = 1\n")
        with pytest.warns(UserWarning, match="Duplicate name"):
            zf.writestr("lab01_cluster_sim/metrics.py", "x = 2\n")


# -- session fixtures -----------------------------------------------------------------------
@pytest.fixture(scope="session")
def open_tmp() -> Path:
    """A temporary folder that the learner's unprivileged uid can traverse (pytest's are 0700)."""
    path = Path(tempfile.mkdtemp(prefix="grading-tests-"))
    os.chmod(path, 0o711)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def worker_args(open_tmp: Path) -> list[str]:
    """grade_submissions' options for the learner's interpreter (as root: one the uid can read)."""
    if os.geteuid() != 0:
        return []
    found = readable_runtime(open_tmp / "runtime")
    if found is None:
        pytest.skip("as root, no interpreter an unprivileged user can run (needs /usr/bin/python3.X)")
    python, path = found
    return ["--worker-python", python, *[a for p in path for a in ("--worker-path", p)]]


@pytest.fixture(scope="session")
def markers(open_tmp: Path) -> Path:
    """Where attacks that survive would write (world-writable, sticky)."""
    path = open_tmp / "markers"
    path.mkdir()
    os.chmod(path, 0o1777)
    return path


@pytest.fixture(scope="session")
def autograder_zip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``make autograder`` into a temporary file."""
    out = tmp_path_factory.mktemp("dist") / "autograder.zip"
    env = {k: v for k, v in os.environ.items() if k != "MAKEFLAGS"}
    proc = subprocess.run(["make", "-s", "autograder", f"AUTOGRADER={out}", f"PYTHON={sys.executable}"],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"autograder written to {out}" in proc.stdout
    return out


@pytest.fixture(scope="session")
def submissions(open_tmp: Path, student_edition, markers: Path) -> dict[str, Path]:
    """The submissions of the module docstring, in one folder; ``root`` is where the rigs
    believe /autograder to be (the direct dry run's folder)."""
    folder, root = open_tmp / "in", open_tmp / "root"
    folder.mkdir()
    student, _ = student_edition
    plain = {rel: (student / rel).read_text() for rel in LEARNER_FILES}
    solutions = {rel: (REPO_ROOT / rel).read_text() for rel in LEARNER_FILES}
    honest = {rel: with_parts(rel, PARTIAL) for rel in LEARNER_FILES}
    honest_1a = {rel: with_parts(rel, ("1A",)) for rel in LEARNER_FILES}
    answers = "<html>" + "".join(f"<p>my answer {k}</p>" for k in range(5)) + "</html>"

    unchanged = dict(plain)
    unchanged["lab01_cluster_sim/disciplines/metrics.py"] = unchanged.pop("lab01_cluster_sim/metrics.py")
    del unchanged["lab02_device_plugin/plugin/health.py"]
    _write(folder / "unchanged", unchanged)

    partial = dict(honest)
    partial["lab01_cluster_sim/metrics.py"] = honest["lab01_cluster_sim/metrics.py"].replace(
        "\nimport math\n", "\nimport math\nimport course_module_that_does_not_exist  # breaks the import\n", 1)
    partial["lab01_cluster_sim/disciplines/preemption.py"] = (
        honest["lab01_cluster_sim/disciplines/preemption.py"] + "\n\ndef broken(:\n    pass\n")
    partial["lab02_device_plugin/plugin/health.py"] = _replace_stub(honest["lab02_device_plugin/plugin/health.py"], "2D",
                                                             READER.format(root=str(root)))
    _write(folder / "partial", partial)

    _write(folder / "solutions", {**solutions, "written_answers.html": answers})
    with zipfile.ZipFile(folder / "solutions-folder.zip", "w") as zf:
        for rel, text in solutions.items():
            name = "my lab/" + (Path(rel).name if rel.endswith("generic.py") else rel)  # one loose file
            zf.writestr(name, text)
        zf.writestr("my lab/written_answers.html", answers)

    rigged = dict(honest)
    rigged["lab01_cluster_sim/metrics.py"] = honest["lab01_cluster_sim/metrics.py"] + RIG.format(root=str(root))
    rigged["lab01_cluster_sim/__init__.py"] = RIG.format(root=str(root))
    rigged["conftest.py"] = "import pytest\n" + RIG.format(root=str(root))
    rigged["tests/grading/plugin.py"] = "def pytest_configure(config):\n    pass\n"
    _write(folder / "rigged", rigged)

    # the review's attacks, each appended to learner files (they run when the file is imported)
    def rig(base: dict[str, str], into: dict[str, list[str]]) -> dict[str, str]:
        out = dict(base)
        for rel, names in into.items():
            out[rel] = out[rel] + "".join(attack(n, markers) for n in names)
        return out

    _write(folder / "honest-1A", honest_1a)
    _write(folder / "a02", rig(honest_1a, {"lab01_cluster_sim/scheduler.py": ["a02_duplicate_items.py"]}))
    _write(folder / "a01-a06", rig(plain, {"lab01_cluster_sim/scheduler.py": ["a01_partial_credit_property.py"],
                                           "lab02_device_plugin/plugin/sharing.py": ["a06_a01_without_flagged_words.py"]}))
    _write(folder / "a03-a10", rig(plain, {"lab01_cluster_sim/metrics.py": ["a03_replace_test_functions.py"],
                                           "lab02_device_plugin/plugin/mig.py": ["a10_duplicates_that_pass.py"]}))
    _write(folder / "a04", rig(plain, {"lab01_cluster_sim/scheduler.py": ["a04_forged_report_exit.py"],
                                       "lab02_device_plugin/plugin/sharing.py": ["a04_forged_report_exit.py"]}))
    always_equal = {rel: re.sub(r'raise NotImplementedError\("your code here \(\w+\)"\)', "return _AnyValue()", text)
                    + attack("a05_always_equal.py", markers) for rel, text in plain.items()}
    _write(folder / "a05", always_equal)
    _write(folder / "a07-a09", rig(plain, {"lab01_cluster_sim/scheduler.py": ["a07_fork_hopper.py"],
                                           "lab02_device_plugin/plugin/sharing.py": ["a09_root_fallback_rewrites_results.py"]}))

    # common mistakes: a helper module the autograder does not take; only the notebooks
    helpers = dict(solutions)
    helpers["lab01_cluster_sim/metrics.py"] = solutions["lab01_cluster_sim/metrics.py"].replace(
        "\nimport math\n", "\nimport math\nfrom lab01_cluster_sim.my_helpers import helper  # noqa\n", 1)
    helpers["lab01_cluster_sim/my_helpers.py"] = "def helper():\n    return 1\n"
    _write(folder / "helpers", helpers)
    # issue 23: a 9 MB return value costs only its own part's tests; a numpy string is a str
    mig_file = next(rel for rel, parts in LEARNER_FILES.items() if parts == ["2C"])  # where submission.json puts 2C
    mig = solutions[mig_file]
    solution_line = '    return "nvidia.com/mig-" + profile_name.replace("+", ".")\n'
    assert solution_line in mig
    _write(folder / "huge-2C", {**solutions, mig_file: mig.replace(
        solution_line, '    return "x" * 9_000_000\n')})
    _write(folder / "numpy-str", {**solutions, mig_file: mig.replace(
        solution_line, '    import numpy as np\n    return np.str_("nvidia.com/mig-" + profile_name.replace("+", "."))\n')})
    _write(folder / "table-lookup", table_lookup_files(student, solutions, open_tmp))
    with zipfile.ZipFile(folder / "notebooks.zip", "w") as zf:
        for nb in SPEC["notebooks"]:
            zf.write(student / nb, nb)
    _crafted_zips(folder)
    return {"folder": folder, "root": root, "solutions": folder / "solutions"}


@pytest.fixture(scope="session")
def batch(open_tmp: Path, submissions, autograder_zip: Path, worker_args: list[str], markers: Path) -> dict:
    """tools/grade_submissions.py over the folder, 2 at a time: the gradebook and each results.json."""
    out = open_tmp / "gradebook" / "gradebook.csv"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PYTEST"))}
    start = time.monotonic()
    proc = subprocess.run([sys.executable, str(REPO_ROOT / "tools" / "grade_submissions.py"),
                           str(submissions["folder"]), "--out", str(out), "--autograder", str(autograder_zip),
                           "--jobs", "2", *worker_args], env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    with open(out, newline="") as f:
        rows = {r["submission"]: r for r in csv.DictReader(f)}
    results = {}
    for path in sorted((out.parent / "gradebook-results").glob("*.json")):
        doc = json.loads(path.read_text())
        jsonschema.validate(doc, SCHEMA)
        results[path.name.removesuffix(".json")] = doc
    return {"rows": rows, "results": results, "log": proc.stderr, "seconds": time.monotonic() - start,
            "ended": time.monotonic(), "markers": markers}


@pytest.fixture(scope="session")
def dry_run(submissions, autograder_zip: Path, worker_args: list[str]) -> dict:
    """run_autograder itself, in a folder laid out as Gradescope's /autograder."""
    root: Path = submissions["root"]
    root.mkdir()
    os.chmod(root, 0o755)
    with zipfile.ZipFile(autograder_zip) as zf:
        zf.extractall(root / "source")
    shutil.copy2(root / "source" / "run_autograder", root / "run_autograder")
    os.chmod(root / "run_autograder", 0o755)
    shutil.copytree(submissions["solutions"], root / "submission")
    # run_autograder's start time is the `date +%s.%N` it runs first: a `date` of ours says it
    # started 1000 s before this fixture, so execution_time shows where it was measured from
    # (the budget counts from there too: the grader's default 480 s, plus those 1000)
    clock = submissions["folder"].parent / "clock"
    clock.mkdir()
    started_at = math.floor(time.time()) - 1000
    (clock / "date").write_text(f"#!/bin/sh\necho {started_at}.000000000\n")
    os.chmod(clock / "date", 0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PYTEST"))}
    env.update(AUTOGRADER_ROOT=str(root), AUTOGRADER_PYTHON=sys.executable,
               AUTOGRADER_BUDGET=f"{runner.GRADING_BUDGET_S + 1000:g}",
               PATH=os.pathsep.join([str(clock), env.get("PATH", os.defpath)]))
    if worker_args:
        env["AUTOGRADER_WORKER_PYTHON"] = worker_args[1]
        env["AUTOGRADER_WORKER_PATH"] = ":".join(worker_args[3::2])
    before = time.time()
    proc = subprocess.run([str(root / "run_autograder")], cwd=root, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT_S)
    after = time.time()
    doc = json.loads((root / "results" / "results.json").read_text())
    jsonschema.validate(doc, SCHEMA)
    return {"doc": doc, "started_at": started_at, "before": before, "after": after, "root": root,
            "log": proc.stdout + proc.stderr, "rc": proc.returncode}


def _visible(doc: dict) -> list[dict]:
    return [t for t in doc["tests"] if t["visibility"] == "visible"]


def _hidden(doc: dict) -> list[dict]:
    return [t for t in doc["tests"] if t["visibility"] == "after_published"]


def _by_part(doc: dict) -> dict[str, float]:
    out: dict[str, float] = {}
    for t in doc["tests"]:
        out[t["tags"][0]] = out.get(t["tags"][0], 0.0) + t["score"]
    return out


def _notes(doc: dict) -> str:
    return "\n".join(doc["extra_data"]["grader_notes"])


# -- the zip --------------------------------------------------------------------------------
def test_zip_has_gradescope_files_and_no_solution(autograder_zip: Path) -> None:
    with zipfile.ZipFile(autograder_zip) as zf:
        names = zf.namelist()
        modes = {i.filename: i.external_attr >> 16 for i in zf.infolist()}
        texts = {n: zf.read(n).decode("utf-8", "replace") for n in names}
    assert {"setup.sh", "run_autograder", "requirements.txt"} <= set(names)
    assert modes["run_autograder"] & 0o111 and modes["setup.sh"] & 0o111
    assert sorted(n for n in names if n.startswith("hidden/")) == [
        "hidden/tests/hidden/bank.json", "hidden/tests/hidden/test_hidden_bank.py",
        "hidden/tests/hidden/test_hidden_lab01.py", "hidden/tests/hidden/test_hidden_lab02.py"]
    # the bank: answers only (numbers, strings, lists), 200 per part, never the code that computed them
    bank = json.loads(texts["hidden/tests/hidden/bank.json"])
    assert sorted(bank) == sorted(VISIBLE) and all(len(v) == 200 for v in bank.values())
    assert bank["2C"][0][1].startswith("nvidia.com/mig-")
    assert not [n for n in names if n.startswith("course/tests/hidden")]
    assert "course/tests/grading/worker.py" in names and "course/tests/grading/proxy.py" in names
    # every line that exists only inside a solution region of this checkout is absent
    for rel in LEARNER_FILES:
        text = (REPO_ROOT / rel).read_text()
        lines = text.splitlines()
        for region in edition_tool.find_regions(text, rel):
            body = [ln.strip() for ln in lines[region.begin:region.end - 1] if ln.strip()]
            joined = "\n".join(lines[region.begin:region.end - 1])
            assert body, region
            for name, member in texts.items():
                assert joined not in member, (name, rel, region.part)
                assert "### BEGIN SOLUTION" not in member, name
            assert f'raise NotImplementedError("your code here ({region.part})")' in texts[f"course/{rel}"]
    assert "defusedxml" in texts["requirements.txt"] and "pytest-timeout" in texts["requirements.txt"]
    for script in ("setup.sh", "run_autograder"):
        assert subprocess.run(["bash", "-n", "-c", texts[script]], timeout=60).returncode == 0, script


def test_submission_list_matches_the_student_edition(student_edition) -> None:
    """tests/grading/submission.json (what make submission packs) = the files with stubs."""
    student, regions = student_edition
    assert {k: tuple(v) for k, v in LEARNER_FILES.items()} == catalog.learner_files(student)
    assert {r.path for r in regions if "#" not in r.path} == set(LEARNER_FILES)
    assert {(f.file, f.part) for f in catalog.learner_functions(student)} == {
        (r.path, r.part) for r in regions if "#" not in r.path}


# -- the dry run and the batch ---------------------------------------------------------------
def test_dry_run_of_the_solutions_scores_full_marks_with_a_right_execution_time(dry_run) -> None:
    doc = dry_run["doc"]
    assert dry_run["rc"] == 0, dry_run["log"][-3000:]
    # 56 visible + 9 hidden
    assert doc["score"] == 121.0, dry_run["log"][-3000:]
    assert all(t["status"] == "passed" for t in _visible(doc) + _hidden(doc))
    assert len(_visible(doc)) == 30 and len(_hidden(doc)) == 18
    # execution_time: whole seconds from run_autograder's start (its `date`, here 1000 s before
    # the run began) to the results, rounded up: the results were written between this
    # run's start and end, so it lies between those two instants' distances from that start,
    # whatever the machine's load (no allowance for slowness needed)
    low, high = (math.ceil(dry_run[k] - dry_run["started_at"]) for k in ("before", "after"))
    assert 1000 <= low <= doc["execution_time"] <= high, (doc["execution_time"], low, high)
    # the hidden tests were read into memory and removed before any learner code ran
    assert not (dry_run["root"] / "source" / "hidden" / "tests").exists()
    # pytest's own figures of the whole run (instructors only: stdout) agree: 48 tests, no failure
    counts = json.loads(re.search(r"pytest's own counts \(visible \+ hidden\): (\{.*\})", dry_run["log"]).group(1))
    assert counts["pytest"]["tests"] == 48 and counts["pytest"]["failures"] == 0
    assert counts["hidden"] == {"passed": 18, "failed": 0, "skipped": 0, "not run": 0}
    notes = _notes(doc)
    if os.geteuid() == 0:
        assert ISOLATED.search(notes), notes
        assert "Note:" not in doc["output"]  # full isolation: nothing to say to the learner
    else:
        assert "partial isolation" in doc["output"]


def test_batch_gradebook_has_the_scores_by_hand(batch) -> None:
    rows = batch["rows"]
    assert [rows[n]["autograded score"] for n in ("unchanged", "partial", "solutions", "solutions-folder.zip",
                                                   "honest-1A", "table-lookup")] == ["0", "59", "121", "121", "13", "56"]
    assert float(rows["rigged"]["autograded score"]) <= 59
    assert all(r["autograded max"] == "121" for n, r in rows.items() if r["autograded score"])
    # per part, visible + hidden: partial has its five parts, 1A 6+1, 1C 5+1, 1E 5+1, 2A 6+1, 2C 5+1
    assert {p: float(rows["partial"][p]) for p in VISIBLE} == {
        p: (2 * VISIBLE[p] + 1.0 if p in PARTIAL else 0.0) for p in VISIBLE}
    # written answers: one empty column each, graded by hand, with their points
    written = [c for c in rows["partial"] if "(by hand" in c]
    assert written == ["1A-written (by hand, /2)", "1C-written (by hand, /2)", "1D-written (by hand, /2)",
                       "2A-written (by hand, /2)", "2C-written (by hand, /2)"]
    n = len(rows)
    assert f"[{n}/{n}]" in batch["log"]
    if os.geteuid() == 0:
        assert ISOLATED.search(batch["log"]), batch["log"][-2000:]  # the isolation of each run, shown


def test_a_huge_return_value_costs_only_its_own_tests_and_a_numpy_string_is_a_string(batch) -> None:
    """Issue 23: 9 MB returned by mixed_resource_name and quoted by 2C.1's message costs
    2C's tests only (the trusted run cuts what it quotes; before, the report passed its size
    cap and every point was lost); ``numpy.str_`` satisfies "returns a str" (before, the
    worker refused it: 2C's 6 points lost)."""
    huge = batch["results"]["huge-2C"]
    assert huge["score"] == 121 - 5 - 1 - 5, [(t["number"], t["output"][:200]) for t in huge["tests"] if t["score"] == 0]
    assert {t["tags"][0] for t in huge["tests"] if t["status"] == "failed"} == {"2C"}
    assert all(len(t["output"]) <= 4000 for t in huge["tests"])
    assert batch["results"]["numpy-str"]["score"] == 121


def test_a_table_of_the_visible_tests_answers_scores_under_half(batch) -> None:
    """Issue 23: a submission that answers exactly the visible tests' calls (a table
    recorded from the instructor edition) and implements nothing scores every visible point
    (56) and no hidden one: random instances drawn per submission cannot be looked up, and
    they are worth as much as the visible tests, so it stays under half of 121."""
    doc = batch["results"]["table-lookup"]
    assert sum(t["score"] for t in _visible(doc)) == 56 and sum(t["score"] for t in _hidden(doc)) == 0
    assert doc["score"] == 56 < 121 / 2


def test_folder_zip_scores_as_the_flat_submission(batch) -> None:
    flat, zipped = batch["results"]["solutions"], batch["results"]["solutions-folder.zip"]
    assert [(t["number"], t["score"]) for t in flat["tests"]] == [(t["number"], t["score"]) for t in zipped["tests"]]
    assert "found as my lab/generic.py (loose), used" in _notes(zipped)
    assert "written_answers.html found in the submission." in zipped["output"]


def test_missing_and_misplaced_files_are_named(batch) -> None:
    doc = batch["results"]["unchanged"]
    assert doc["score"] == 0
    out = doc["output"]
    assert ("lab01_cluster_sim/metrics.py: expected at lab01_cluster_sim/metrics.py; found only "
            "lab01_cluster_sim/disciplines/metrics.py (wrong folder), not used") in out
    assert "lab02_device_plugin/plugin/health.py: expected in the submission" in out and "not found" in out
    t = next(t for t in doc["tests"] if t["number"] == "2D.1")
    assert t["output"].startswith("lab02_device_plugin/plugin/health.py: expected in the submission")
    assert "written_answers.html NOT found" in out


def test_a_file_that_does_not_import_costs_only_its_parts(batch) -> None:
    doc = batch["results"]["partial"]
    out = doc["output"]
    # metrics.py imports a missing module (the line after "import math"); preemption.py ends
    # with a line that does not parse
    metrics = with_parts("lab01_cluster_sim/metrics.py", PARTIAL).splitlines().index("import math") + 2
    broken = len(with_parts("lab01_cluster_sim/disciplines/preemption.py", PARTIAL).splitlines()) + 3
    assert re.search(rf"lab01_cluster_sim/metrics\.py:{metrics}: ModuleNotFoundError: No module named "
                     r"'course_module_that_does_not_exist'.*part\(s\) 1B", out), out
    assert re.search(rf"lab01_cluster_sim/disciplines/preemption\.py:{broken}: SyntaxError: .*part\(s\) 1D", out), out
    parts = _by_part(doc)
    assert parts["1A"] == 13 and parts["1C"] == 11 and parts["1B"] == 0 and parts["1D"] == 0
    t = next(t for t in doc["tests"] if t["number"] == "1B.1")
    assert "your code here (1B)" in t["output"] and t["output"].startswith(f"lab01_cluster_sim/metrics.py:{metrics}")


def test_learner_code_reads_no_test_file_visible_or_hidden(batch) -> None:
    """partial's next_health looks for the hidden tests in its folder, /autograder/source and
    the dry run's folder, in the visible and in the hidden run: it finds nothing."""
    doc = batch["results"]["partial"]
    tests_2d = [t for t in doc["tests"] if t["tags"] == ["2D"]]
    assert len(tests_2d) == 6 and all("nothing found" in t["output"] for t in tests_2d), tests_2d


@pytest.mark.parametrize("name", ["unchanged", "partial", "solutions", "rigged", "a05"])
def test_hidden_outcomes_and_points_appear_nowhere_visible(batch, name: str) -> None:
    doc = batch["results"][name]
    hidden = _hidden(doc)
    assert len(hidden) == 18 and all(t["number"].split(".")[1].startswith("h") for t in hidden)
    visible_text = doc["output"] + "".join(t["output"] + t["name"] for t in _visible(doc)) + json.dumps(
        doc["extra_data"])
    for t in hidden:
        assert t["name"] not in visible_text and t["number"] not in visible_text
    assert "test_hidden" not in visible_text
    total = re.search(r"^total\s+(\d+)\s+(\d+)\s+(\S+) / (\S+)", doc["output"], re.M)
    visible_score = sum(t["score"] for t in _visible(doc))
    assert total.group(1) == "30" and float(total.group(3)) == visible_score and total.group(4) == "56"
    assert doc["visibility"] == "visible" and doc["stdout_visibility"] == "hidden"
    assert {t["visibility"] for t in doc["tests"]} == {"visible", "after_published"}  # no "hidden" entry


@pytest.mark.parametrize("name", ["unchanged", "partial", "solutions"])
def test_visible_counts_agree_with_the_tests(batch, name: str) -> None:
    doc = batch["results"][name]
    counts = doc["extra_data"]["visible_counts"]
    assert sum(counts.values()) == 30
    assert counts["passed"] == sum(t["status"] == "passed" for t in _visible(doc))


def test_rigged_submission_scores_no_more_than_its_honest_parts(batch, dry_run) -> None:
    doc = batch["results"]["rigged"]
    assert doc["score"] == 59  # exactly its honest parts
    notes = _notes(doc)
    for ignored in ("conftest.py", "lab01_cluster_sim/__init__.py", "tests/grading/plugin.py"):
        assert ignored in notes.split("not used for grading:")[1]
    assert "_pytest" in notes and "gc.get_objects" in notes  # pointed out for review
    assert dry_run["doc"]["score"] == 121  # the rig's atexit did not overwrite the direct run's results


# -- the review's attacks ------------------------------------------------------------------------
@pytest.mark.parametrize("name, honest", [
    ("a01-a06", 0),   # partial_credit forged by a plugin (a01), the same without flagged words (a06): was 65
    ("a02", 13),      # 10 clones of every graded test on top of an honest 1A: was 77
    ("a03-a10", 0),   # runtest replaced (a03), clones that pass (a10): were 65 and 715
    ("a04", 0),       # a forged JUnit report and os._exit: was 65
    ("a05", 0),       # stubs return an object equal to everything: was 34
    ("a07-a09", 0),   # a fork-hopping survivor (a07), a root daemon rewriting results.json (a09): a09 was 65
])
def test_an_attack_scores_no_more_than_its_honest_parts(batch, name: str, honest: float) -> None:
    doc = batch["results"][name]
    assert doc["score"] == honest, [(t["number"], t["output"][:200]) for t in doc["tests"] if t["score"]]
    assert len(doc["tests"]) == 48  # exactly the declared tests, once each
    assert batch["rows"][name]["autograded score"] == f"{honest:g}"


def test_an_object_equal_to_everything_is_refused_with_a_message(batch) -> None:
    """a05: the decoder takes back plain data only, so the tests fail with a message that
    says what was returned (and the graded tests check types before values besides)."""
    doc = batch["results"]["a05"]
    refused = [t for t in doc["tests"] if "returned a lab" in t["output"] and "_AnyValue object, which the grader "
               "does not take back" in t["output"]]
    assert len(refused) >= 15, [t["output"][:200] for t in doc["tests"]]


def test_malformed_zips_give_one_line_and_never_stop_the_batch(batch) -> None:
    rows, results = batch["rows"], batch["results"]
    expected = {
        "z10_badcrc.zip": "cannot be read (BadZipFile: Bad CRC-32",
        "z11_truncated.zip": "not a readable zip archive",
        "z1_file_then_dir.zip": "'lab01_cluster_sim' is both a file and a folder",
        "z2_longname.zip": "is too long",
        "z5_dir_then_file.zip": "'lab01_cluster_sim/metrics.py' is both a file and a folder",
        "z8_encrypted.zip": "is encrypted",
        "z9_method99.zip": "unknown compression method (99)",
        "bomb.zip": "more than",
        "absolute.zip": "unsafe member name",
        "dotdot.zip": "unsafe member name",
        "duplicate.zip": "appears twice",
    }
    for name, message in expected.items():
        assert rows[name]["autograded score"] == "0", name
        assert message in rows[name]["problems"], (name, rows[name]["problems"])
        assert "Traceback" not in results[name]["output"]
        assert results[name]["output"].count("could not be unpacked") == 1, results[name]["output"]
    # a link is skipped, not followed: the file it stood for is then missing
    assert rows["link.zip"]["autograded score"] == "0"
    assert "lab01_cluster_sim/metrics.py: expected in the submission" in results["link.zip"]["output"]


def test_common_mistakes_get_a_message_for_the_learner(batch) -> None:
    helpers = batch["results"]["helpers"]
    assert ("lab01_cluster_sim/my_helpers.py: in your upload, but the autograder takes only the files that hold "
            "your code") in helpers["output"]
    assert "No module named 'lab01_cluster_sim.my_helpers'" in helpers["output"]
    assert helpers["score"] == 121 - 7 - 1 - 7  # 1B (7 visible + 8 hidden) lost with metrics.py
    notebooks = batch["results"]["notebooks.zip"]
    assert "your upload holds notebooks but none of the lab files" in notebooks["output"]
    assert notebooks["score"] == 0
    assert "written_answers.html NOT found" in batch["results"]["honest-1A"]["output"]
    assert "written_answers.html found in the submission." in batch["results"]["solutions"]["output"]


# -- the grader's own guarantees ---------------------------------------------------------------------
def _run_grader(autograder_zip: Path, submission: Path, base: Path, *args: str, env: dict | None = None,
                status: int = 0) -> dict:
    """runner.py of the autograder (not run_autograder) on one submission; ``status``: its
    expected exit status."""
    course = base / "course"
    if not course.exists():
        with zipfile.ZipFile(autograder_zip) as zf:
            zf.extractall(base)
        os.chmod(base, 0o700)  # as run_autograder does: nothing of the autograder readable by the learner
    results = base / f"results-{len(list(base.glob('results-*')))}.json"
    proc = subprocess.run([sys.executable, "-m", "grading.runner", "--course", str(course), "--submission",
                           str(submission), "--results", str(results), "--hidden", str(base / "hidden"), *args],
                          cwd=course / "tests", env={**{k: v for k, v in os.environ.items()
                                                        if not k.startswith(("PYTHON", "PYTEST"))}, **(env or {})},
                          capture_output=True, text=True, timeout=TIMEOUT_S)
    assert proc.returncode == status, proc.stdout[-3000:] + proc.stderr[-3000:]
    doc = json.loads(results.read_text())
    doc["_stdout"] = proc.stdout
    doc["_stderr"] = proc.stderr
    return doc


def _interpreter_others_cannot_run() -> Path:
    """This test's interpreter, when an unprivileged user cannot run it (it lives under
    /root); else the test is skipped (as it is when not root: no user to switch to)."""
    if os.geteuid() != 0:
        pytest.skip("needs root (switching users)")
    unreadable = Path(sys.executable).resolve()
    try:
        runs = subprocess.run([str(unreadable), "-c", "pass"], user=65534, group=65534, extra_groups=[],
                              capture_output=True, timeout=60).returncode == 0
    except PermissionError:
        runs = False
    if runs:
        pytest.skip(f"{unreadable} can be run by an unprivileged user here")
    return unreadable


def test_learner_code_never_runs_as_root_when_no_user_can_run_the_interpreter(open_tmp: Path, autograder_zip: Path,
                                                                              submissions) -> None:
    """The review's finding 8: as root, when the learner's user cannot run the interpreter
    (this test's interpreter lives under /root), nothing of the submission runs and it
    scores 0 with a message for the learner, instead of running as root."""
    unreadable = _interpreter_others_cannot_run()
    base = Path(tempfile.mkdtemp(prefix="refuse-", dir=open_tmp))
    doc = _run_grader(autograder_zip, submissions["folder"] / "a07-a09", base, "--worker-python", str(unreadable),
                      status=runner.EXIT_NOT_GRADED)
    assert doc["score"] == 0
    assert "could not start a safe process for your code, so it did not run it and this is not a grade" in doc["output"]
    # issue 23: an infrastructure failure, not a grade: the cause names the interpreter, the fix the option
    cause = doc["extra_data"]["not_graded"]
    assert cause.startswith(f"not graded: the learner's interpreter cannot start: {unreadable}") and "--worker-python" in cause
    assert cause in _notes(doc) and f"error: {cause}" in doc["_stderr"]
    assert all("did not run it" in t["output"] for t in doc["tests"])


def test_namespaces_that_are_required_but_missing_mean_not_graded(open_tmp: Path, autograder_zip: Path,
                                                                  submissions, worker_args: list[str]) -> None:
    """Issue 23: with --require-namespaces, learner processes without PID and network
    namespaces (here: not asked for, --no-namespaces) grade nothing: not graded, with the
    reason, exit status 3, never a score of 0 that looks like one."""
    base = Path(tempfile.mkdtemp(prefix="nons-", dir=open_tmp))
    doc = _run_grader(autograder_zip, submissions["solutions"], base, "--no-namespaces", "--require-namespaces",
                      *worker_args, status=runner.EXIT_NOT_GRADED)
    assert doc["extra_data"]["not_graded"].startswith("not graded: learner processes got no PID and network "
                                                      "namespaces (not asked)")
    assert doc["score"] == 0 and all("this is not a grade" in t["output"] for t in doc["tests"])


def test_a_batch_whose_sandbox_cannot_start_exits_non_zero_with_the_cause_in_one_line(
        open_tmp: Path, autograder_zip: Path, submissions) -> None:
    """Issue 23: grading as root with an interpreter the learner's user cannot run (here
    this test's, when it lives under /root) gives no gradebook of zeros: the rows have no
    score and say "not graded", the batch exits non-zero, and the terminal's last line says
    what failed and names the option that fixes it."""
    unreadable = _interpreter_others_cannot_run()
    base = Path(tempfile.mkdtemp(prefix="not-graded-", dir=open_tmp))
    folder = base / "in"
    shutil.copytree(submissions["solutions"], folder / "solutions")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PYTEST"))}
    proc = subprocess.run([sys.executable, str(REPO_ROOT / "tools" / "grade_submissions.py"), str(folder), "--out",
                           str(base / "gradebook.csv"), "--autograder", str(autograder_zip), "--worker-python",
                           str(unreadable)], env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    assert proc.returncode == 2, proc.stdout[-3000:] + proc.stderr[-3000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("error: 1 of 1 submission(s) NOT graded") and str(unreadable) in last, last
    assert "--worker-python" in last
    with open(base / "gradebook.csv", newline="") as f:
        row = next(csv.DictReader(f))
    assert row["autograded score"] == "" and row["problems"].startswith("not graded: ")


def test_a_worst_case_submission_ends_within_its_budget(open_tmp: Path, autograder_zip: Path, student_edition,
                                                        worker_args: list[str]) -> None:
    """Every learner function loops for ever: the grading still ends, stopped by its budget
    (here 1 s instead of the default 480; without a budget: 48 tests of 10 s of worker time
    each, 480 s), and each test says why. No clock is read here: the grader's own notes
    say which budget it kept and that its test run ended by itself, not killed past its
    deadline (which it would be :data:`runner.TRUSTED_GRACE_S` after the budget)."""
    student, _ = student_edition
    loops = {rel: re.sub(r'raise NotImplementedError\("your code here \(\w+\)"\)', "while True:\n        pass",
                         (student / rel).read_text()) for rel in LEARNER_FILES}
    sub = _write(open_tmp / "loops", loops)
    base = Path(tempfile.mkdtemp(prefix="loops-", dir=open_tmp))
    doc = _run_grader(autograder_zip, sub, base, "--budget", "12", *worker_args)
    assert doc["score"] == 0 and len(doc["tests"]) == 48
    notes = _notes(doc)
    assert "time budget: 12 s" in notes
    assert "stopped (past its deadline)" not in notes and "no report" not in notes, notes
    outputs = [t["output"] for t in doc["tests"]]
    # a call cut by its own timeout (capped at the budget's end), or a test not run (or a
    # worker not started) because the budget ran out; that one call's timeout is 10 s is
    # shown in grading/test_sandbox.py
    assert all("timed out after" in o or "time budget ran out" in o for o in outputs), outputs
    # the budget, not the calls' own 10-s timeouts, ended the grading: after the first
    # cut call of a phase (visible, hidden) every test is refused at once
    assert sum("time budget ran out" in o for o in outputs) >= 48 - 2, outputs


def test_batch_grading_without_root_keeps_the_gradebook_honest(open_tmp: Path, autograder_zip: Path,
                                                                submissions, markers: Path) -> None:
    """The review's a08 (batch grading on an instructor's laptop, not as root): mallory's
    module starts a daemon that leaves its session, finds tools/grade_submissions.py in /proc,
    waits for it to end and gives her row full marks. Every process her code starts is
    ended with the worker (a PID namespace where the kernel allows, else the grader kills
    what was reparented to it), so the gradebook keeps her honest 0; a malformed zip in
    the same folder is one line in its row. (Without root her code runs as the instructor:
    it can read what the instructor can, the autograder zip's hidden tests included; the
    README says so and recommends root; the test checks that the daemon got that far, so
    it was alive when the batch ran.) As root, the batch runs as ``nobody``."""
    base = Path(tempfile.mkdtemp(prefix="a08-", dir=open_tmp))
    os.chmod(base, 0o777)
    folder = base / "in"
    student = submissions["folder"]
    _write(folder / "alice", {rel: (student / "honest-1A" / rel).read_text() for rel in LEARNER_FILES})
    plain = {rel: (student / "unchanged" / rel).read_text() for rel in LEARNER_FILES if (student / "unchanged" / rel).is_file()}
    mallory = {rel: text + attack("a08_batch_gradebook_rewrite.py", markers) if rel.endswith(("scheduler.py", "sharing.py"))
               else text for rel, text in plain.items()}
    _write(folder / "mallory", mallory)
    shutil.copy2(ATTACKS / "zips" / "z1_file_then_dir.zip", folder / "zed.zip")
    shutil.copy2(autograder_zip, base / "autograder.zip")
    (base / "home").mkdir()
    for path in [base, *base.rglob("*")]:
        os.chmod(path, 0o777 if path.is_dir() else 0o666)
    user: dict = {}
    python = sys.executable
    if os.geteuid() == 0:
        found = readable_runtime(open_tmp / "runtime")
        if found is None or found[1]:
            pytest.skip("as root, no virtual environment an unprivileged user can run")
        python = found[0]
        user = {"user": 65534, "group": 65534, "extra_groups": []}
        # nobody stands in for an instructor without root, who can read their own checkout
        tool = str(REPO_ROOT / "tools" / "grade_submissions.py")
        readable = subprocess.run([python, "-I", "-c", f"open({tool!r}).close()"], cwd="/", capture_output=True,
                                  timeout=60, **user).returncode == 0
        if not readable:
            pytest.skip("as root, the batch runs as nobody, who cannot read this checkout (a folder such as "
                        "mktemp -d's is closed to other users): nobody cannot stand in for its owner")
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(base / "home"), "TMPDIR": str(base / "home"),
           "LANG": "C.UTF-8"}
    # full paths: the attack needs no access to the batch's working folder to find them
    proc = subprocess.run([python, str(REPO_ROOT / "tools" / "grade_submissions.py"), str(folder), "--out",
                           str(base / "gradebook.csv"), "--autograder", str(base / "autograder.zip"), "--jobs", "2",
                           "--python", python],
                          cwd=base, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, **user)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    before = (base / "gradebook.csv").read_text()
    time.sleep(3)  # a daemon that survived would rewrite the gradebook as soon as the batch ends
    with open(base / "gradebook.csv", newline="") as f:
        rows = {r["submission"]: r for r in csv.DictReader(f)}
    assert (base / "gradebook.csv").read_text() == before
    alice = json.loads((base / "gradebook-results" / "alice.json").read_text())
    assert rows["alice"]["autograded score"] == "13", (alice["output"], alice["extra_data"], alice["tests"][0])
    assert rows["mallory"]["autograded score"] == "0"
    assert "both a file and a folder" in rows["zed.zip"]["problems"]
    assert "partial isolation" in json.loads((base / "gradebook-results" / "mallory.json").read_text())["output"]
    # the attack did run: its daemon found the batch and copied the hidden tests out of the
    # autograder zip, which the instructor's own user can read (the residual risk the README
    # states for grading without root)
    log = (markers / "a08.log").read_text() if (markers / "a08.log").is_file() else ""
    assert (markers / "a08-hidden").is_dir(), log
    assert sorted(p.name for p in (markers / "a08-hidden").iterdir()) == [
        "bank.json", "test_hidden_bank.py", "test_hidden_lab01.py", "test_hidden_lab02.py"]


def test_no_learner_process_survives_its_grading(batch) -> None:
    """a07: a process that forks and exits in a loop, started each time the module is
    imported (import check, visible and hidden workers), would write its marker 3 s later.
    Last in this file, so that the other tests have used most of those seconds (none of them
    grades a07 with learner code running)."""
    time.sleep(max(0.0, 4.0 - (time.monotonic() - batch["ended"])))
    survivors = list(batch["markers"].glob("a07-alive"))
    assert not survivors, [p.read_text() for p in survivors]
