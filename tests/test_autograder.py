"""The Gradescope autograder, dry-run in simulated /autograder folders, and batch grading.

``make autograder`` builds the zip once per session; five submissions made from this
checkout are graded by ``tools/grade_submissions.py`` (which runs the zip's own
``run_autograder`` in a temporary folder standing for ``/autograder``, two at a time), and
one more by calling ``run_autograder`` directly:

=====================  ===============================================================  ======
submission             what it holds                                                    score
=====================  ===============================================================  ======
unchanged/             the student edition's files; metrics.py in a wrong folder,        0
                       health.py left out
partial/               parts 1A, 1C, 1E, 2A, 2C solved; the unsolved parts' files are    32
                       broken (an import error, a syntax error) or try to read the
                       hidden tests
solutions/             the instructor's files (the reference solutions), flat            65
solutions-folder.zip   the same files zipped inside a folder, one of them loose          65
rigged/                ``partial``'s honest files, plus a rigged package ``__init__``,   <= 32
                       root conftest.py and grading plugin, and a metrics.py that
                       patches the grader, flips pytest's outcomes and overwrites
                       results.json at exit
=====================  ===============================================================  ======

Points by hand: visible tests 1A 6, 1B 7, 1C 5, 1D 8, 1E 5, 2A 6, 2B 7, 2C 5, 2D 7 (56);
hidden tests 1 per part (9); so ``partial`` = 6 + 5 + 5 + 6 + 5 = 27 visible + 5 hidden = 32.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import jsonschema
import pytest

from grading.toolbox import load_tool
from grading import catalog, junit, layout, runner

REPO_ROOT = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((REPO_ROOT / "tests" / "grading" / "results.schema.json").read_text())
SPEC = json.loads((REPO_ROOT / "tests" / "grading" / "submission.json").read_text())
LEARNER_FILES: dict[str, list[str]] = SPEC["files"]
TIMEOUT_S = 900  # a safety net for a hung grader, not a speed goal
VISIBLE = {"1A": 6, "1B": 7, "1C": 5, "1D": 8, "1E": 5, "2A": 6, "2B": 7, "2C": 5, "2D": 7}
PARTIAL = ("1A", "1C", "1E", "2A", "2C")
edition_tool = load_tool("make_student_edition")


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


READER = '''import pathlib
found = []
for base in (pathlib.Path.cwd(), pathlib.Path("/autograder/source"), pathlib.Path({root!r}) / "source"):
    if base.is_dir():
        found += [p.read_text()[:300] for p in base.rglob("test_hidden_*.py")]
raise AssertionError("hidden tests seen: " + repr(found)[:500] if found else "nothing found")'''

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
def submissions(tmp_path_factory: pytest.TempPathFactory, student_edition) -> dict[str, Path]:
    """The submissions of the module docstring, in one folder; ``root`` is where the rigs
    believe /autograder to be (the direct dry run's folder)."""
    base = tmp_path_factory.mktemp("submissions")
    folder, root = base / "in", base / "root"
    student, _ = student_edition
    plain = {rel: (student / rel).read_text() for rel in LEARNER_FILES}
    solutions = {rel: (REPO_ROOT / rel).read_text() for rel in LEARNER_FILES}
    honest = {rel: with_parts(rel, PARTIAL) for rel in LEARNER_FILES}

    unchanged = dict(plain)
    unchanged["lab01_cluster_sim/disciplines/metrics.py"] = unchanged.pop("lab01_cluster_sim/metrics.py")
    del unchanged["lab02_device_plugin/health.py"]
    _write(folder / "unchanged", unchanged)

    partial = dict(honest)
    partial["lab01_cluster_sim/metrics.py"] = honest["lab01_cluster_sim/metrics.py"].replace(
        "\nimport math\n", "\nimport math\nimport course_module_that_does_not_exist  # breaks the import\n", 1)
    partial["lab01_cluster_sim/disciplines/preemption.py"] = (
        honest["lab01_cluster_sim/disciplines/preemption.py"] + "\n\ndef broken(:\n    pass\n")
    partial["lab02_device_plugin/health.py"] = _replace_stub(honest["lab02_device_plugin/health.py"], "2D",
                                                             READER.format(root=str(root)))
    _write(folder / "partial", partial)

    _write(folder / "solutions", solutions)
    (folder / "solutions" / "written_answers.html").write_text("<html>answers</html>")
    with zipfile.ZipFile(folder / "solutions-folder.zip", "w") as zf:
        for rel, text in solutions.items():
            name = "my lab/" + (Path(rel).name if rel.endswith("generic.py") else rel)  # one loose file
            zf.writestr(name, text)

    rigged = dict(honest)
    rigged["lab01_cluster_sim/metrics.py"] = honest["lab01_cluster_sim/metrics.py"] + RIG.format(root=str(root))
    rigged["lab01_cluster_sim/__init__.py"] = RIG.format(root=str(root))
    rigged["conftest.py"] = "import pytest\n" + RIG.format(root=str(root))
    rigged["tests/grading/plugin.py"] = "def pytest_configure(config):\n    pass\n"
    _write(folder / "rigged", rigged)
    # the direct dry run: the solutions, once more, as run_autograder sees them
    return {"folder": folder, "root": root, "solutions": folder / "solutions"}


@pytest.fixture(scope="session")
def batch(tmp_path_factory: pytest.TempPathFactory, submissions, autograder_zip) -> dict:
    """tools/grade_submissions.py over the folder, 2 at a time: the gradebook and each results.json."""
    out = tmp_path_factory.mktemp("gradebook") / "gradebook.csv"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PYTEST"))}
    proc = subprocess.run([sys.executable, str(REPO_ROOT / "tools" / "grade_submissions.py"),
                           str(submissions["folder"]), "--out", str(out), "--autograder", str(autograder_zip),
                           "--jobs", "2"], env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    with open(out, newline="") as f:
        rows = {r["submission"]: r for r in csv.DictReader(f)}
    results = {}
    for path in sorted((out.parent / "gradebook-results").glob("*.json")):
        doc = json.loads(path.read_text())
        jsonschema.validate(doc, SCHEMA)
        results[path.name.removesuffix(".json")] = doc
    return {"rows": rows, "results": results, "log": proc.stderr}


@pytest.fixture(scope="session")
def dry_run(submissions, autograder_zip) -> dict:
    """run_autograder itself, in a folder laid out as Gradescope's /autograder."""
    root: Path = submissions["root"]
    with zipfile.ZipFile(autograder_zip) as zf:
        zf.extractall(root / "source")
    shutil.copy2(root / "source" / "run_autograder", root / "run_autograder")
    os.chmod(root / "run_autograder", 0o755)
    shutil.copytree(submissions["solutions"], root / "submission")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PYTEST"))}
    env.update(AUTOGRADER_ROOT=str(root), AUTOGRADER_PYTHON=sys.executable)
    start = time.monotonic()
    proc = subprocess.run([str(root / "run_autograder")], cwd=root, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT_S)
    wall = time.monotonic() - start
    doc = json.loads((root / "results" / "results.json").read_text())
    jsonschema.validate(doc, SCHEMA)
    return {"doc": doc, "wall": wall, "root": root, "log": proc.stdout + proc.stderr, "rc": proc.returncode}


def _visible(doc: dict) -> list[dict]:
    return [t for t in doc["tests"] if t["visibility"] == "visible"]


def _hidden(doc: dict) -> list[dict]:
    return [t for t in doc["tests"] if t["visibility"] == "after_published"]


def _by_part(doc: dict) -> dict[str, float]:
    out: dict[str, float] = {}
    for t in doc["tests"]:
        if t.get("tags"):
            out[t["tags"][0]] = out.get(t["tags"][0], 0.0) + t["score"]
    return out


def _notes(doc: dict) -> dict:
    return next(t for t in doc["tests"] if t["name"].startswith("Grader notes"))


# -- the zip --------------------------------------------------------------------------------
def test_zip_has_gradescope_files_and_no_solution(autograder_zip: Path) -> None:
    with zipfile.ZipFile(autograder_zip) as zf:
        names = zf.namelist()
        modes = {i.filename: i.external_attr >> 16 for i in zf.infolist()}
        texts = {n: zf.read(n).decode("utf-8", "replace") for n in names}
    assert {"setup.sh", "run_autograder", "requirements.txt"} <= set(names)
    assert modes["run_autograder"] & 0o111 and modes["setup.sh"] & 0o111
    assert sorted(n for n in names if n.startswith("hidden/")) == [
        "hidden/tests/hidden/test_hidden_lab01.py", "hidden/tests/hidden/test_hidden_lab02.py"]
    assert not [n for n in names if n.startswith("course/tests/hidden")]
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


# -- the dry run and the batch ---------------------------------------------------------------
def test_dry_run_of_the_solutions_scores_full_marks_with_a_right_execution_time(dry_run) -> None:
    doc = dry_run["doc"]
    assert dry_run["rc"] == 0, dry_run["log"][-3000:]
    # 56 visible + 9 hidden
    assert doc["score"] == 65.0
    assert all(t["status"] == "passed" for t in _visible(doc) + _hidden(doc))
    assert len(_visible(doc)) == 30 and len(_hidden(doc)) == 9
    # execution_time: whole seconds from run_autograder's start to the results, rounded up
    assert dry_run["wall"] - 2 <= doc["execution_time"] <= dry_run["wall"] + 1, (doc["execution_time"], dry_run["wall"])
    # the hidden tests were read into memory and removed before any learner code ran
    assert not (dry_run["root"] / "source" / "hidden" / "tests").exists()


def test_batch_gradebook_has_the_scores_by_hand(batch) -> None:
    rows = batch["rows"]
    assert sorted(rows) == ["partial", "rigged", "solutions", "solutions-folder.zip", "unchanged"]
    assert [rows[n]["autograded score"] for n in ("unchanged", "partial", "solutions", "solutions-folder.zip")] == [
        "0", "32", "65", "65"]
    assert float(rows["rigged"]["autograded score"]) <= 32
    assert all(r["autograded max"] == "65" for r in rows.values())
    # per part, visible + hidden: partial has its five parts, 1A 6+1, 1C 5+1, 1E 5+1, 2A 6+1, 2C 5+1
    assert {p: float(rows["partial"][p]) for p in VISIBLE} == {
        p: (VISIBLE[p] + 1.0 if p in PARTIAL else 0.0) for p in VISIBLE}
    # written answers: one empty column each, graded by hand, with their points
    written = [c for c in rows["partial"] if "(by hand" in c]
    assert written == ["1A-written (by hand, /2)", "1C-written (by hand, /2)", "1D-written (by hand, /2)",
                       "2A-written (by hand, /2)", "2C-written (by hand, /2)"]
    assert "[5/5]" in batch["log"] or "5/5" in batch["log"]


def test_folder_zip_scores_as_the_flat_submission(batch) -> None:
    flat, zipped = batch["results"]["solutions"], batch["results"]["solutions-folder.zip"]
    assert [(t["number"], t["score"]) for t in flat["tests"] if t.get("tags")] == [
        (t["number"], t["score"]) for t in zipped["tests"] if t.get("tags")]
    notes = _notes(zipped)["output"]
    assert "found as my lab/generic.py (loose), used" in notes


def test_missing_and_misplaced_files_are_named(batch) -> None:
    doc = batch["results"]["unchanged"]
    assert doc["score"] == 0
    out = doc["output"]
    assert ("lab01_cluster_sim/metrics.py: expected at lab01_cluster_sim/metrics.py; found only "
            "lab01_cluster_sim/disciplines/metrics.py (wrong folder), not used") in out
    assert "lab02_device_plugin/health.py: expected in the submission" in out and "not found" in out
    t = next(t for t in doc["tests"] if t["number"] == "2D.1")
    assert t["output"].startswith("lab02_device_plugin/health.py: expected in the submission")
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
    assert parts["1A"] == 7 and parts["1C"] == 6 and parts["1B"] == 0 and parts["1D"] == 0
    t = next(t for t in doc["tests"] if t["number"] == "1B.1")
    assert "your code here (1B)" in t["output"] and t["output"].startswith(f"lab01_cluster_sim/metrics.py:{metrics}")


def test_a_learner_function_that_reads_hidden_tests_gets_nothing(batch, dry_run) -> None:
    doc = batch["results"]["partial"]
    visible_2d = [t for t in _visible(doc) if t["tags"] == ["2D"]]
    assert visible_2d and all("nothing found" in t["output"] for t in visible_2d)
    # in the hidden run the hidden tests are in its own folder (after_published: seen after grading)
    assert any("hidden tests seen" in t["output"] for t in _hidden(doc) if t["tags"] == ["2D"])


@pytest.mark.parametrize("name", ["unchanged", "partial", "solutions", "rigged"])
def test_hidden_outcomes_and_points_appear_nowhere_visible(batch, name: str) -> None:
    doc = batch["results"][name]
    hidden = _hidden(doc)
    assert len(hidden) == 9 and all(t["number"].split(".")[1].startswith("h") for t in hidden)
    visible_text = doc["output"] + "".join(t["output"] + t["name"] for t in _visible(doc))
    for t in hidden:
        assert t["name"] not in visible_text and t["number"] not in visible_text
    assert "test_hidden" not in visible_text
    total = re.search(r"^total\s+(\d+)\s+(\d+)\s+(\S+) / (\S+)", doc["output"], re.M)
    visible_score = sum(t["score"] for t in _visible(doc))
    assert total.group(1) == "30" and float(total.group(3)) == visible_score and total.group(4) == "56"
    assert doc["visibility"] == "visible" and doc["stdout_visibility"] == "hidden"
    assert _notes(doc)["visibility"] == "hidden" and _notes(doc)["max_score"] == 0


@pytest.mark.parametrize("name", ["unchanged", "partial", "solutions"])
def test_scores_agree_with_pytests_own_counts(batch, name: str) -> None:
    counts = _notes(batch["results"][name])["extra_data"]["counts"]
    for run, declared in (("visible", 30), ("hidden", 9)):
        c = counts[run]
        pytest_counts = c["pytest"]
        assert c["passed"] + c["failed"] + c["skipped"] + c["not run"] == declared
        assert pytest_counts["tests"] == c["passed"] + c["failed"] + c["skipped"]
        assert pytest_counts["failures"] + pytest_counts["errors"] == c["failed"]
        assert pytest_counts["skipped"] == c["skipped"]
    doc = batch["results"][name]
    assert sum(t["status"] == "passed" for t in _visible(doc)) == counts["visible"]["passed"]


def test_rigged_submission_scores_no_more_than_its_honest_parts(batch, dry_run) -> None:
    doc = batch["results"]["rigged"]
    assert doc["score"] <= 32
    notes = _notes(doc)["output"]
    # the hook that flips outcomes to "passed" stopped the runs (the guard; else the control tests)
    assert "the grader's guard stopped the run" in notes or "tampered" in notes
    for ignored in ("conftest.py", "lab01_cluster_sim/__init__.py", "tests/grading/plugin.py"):
        assert ignored in notes.split("not used for grading:")[1]
    assert "_pytest" in notes and "gc.get_objects" in notes  # pointed out for review


# -- batch grading input errors -----------------------------------------------------------
def test_batch_refuses_an_empty_folder(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(REPO_ROOT / "tools" / "grade_submissions.py"), str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert proc.stderr.strip() == f"error: {tmp_path}: no .zip files or folders to grade"


# -- pieces, on tiny inputs ---------------------------------------------------------------
def test_layout_accepts_unambiguous_layouts_only(tmp_path: Path) -> None:
    expected = ["pkg/sub/a.py", "pkg/b.py", "pkg/c.py", "pkg/d.py"]
    _write(tmp_path, {
        "deep/x/pkg/sub/a.py": "A",            # nested: found
        "b.py": "B",                           # loose: found
        "one/pkg/c.py": "C1", "two/pkg/c.py": "C2",   # two different copies: ambiguous
        "pkg/sub/d.py": "D",                   # only inside the package, elsewhere: wrong place
    })
    found = layout.resolve(tmp_path, expected)
    assert {k: v.how for k, v in found.items()} == {
        "pkg/sub/a.py": "nested", "pkg/b.py": "loose", "pkg/c.py": "ambiguous", "pkg/d.py": "wrong-place"}
    assert found["pkg/c.py"].message() == ("pkg/c.py: several different copies (one/pkg/c.py, two/pkg/c.py); "
                                           "keep only the one at pkg/c.py")
    (tmp_path / "two" / "pkg" / "c.py").write_text("C1")  # identical copies are fine
    assert layout.resolve(tmp_path, expected)["pkg/c.py"].ok


def test_zip_extraction_refuses_unsafe_members(tmp_path: Path) -> None:
    evil = tmp_path / "evil.zip"
    with zipfile.ZipFile(evil, "w") as zf:
        zf.writestr("../outside.py", "x")
    with pytest.raises(layout.SubmissionError, match=r"unsafe member name '\.\./outside\.py'"):
        layout.extract_zip(evil, tmp_path / "out")
    link = tmp_path / "link.zip"
    with zipfile.ZipFile(link, "w") as zf:
        info = zipfile.ZipInfo("pkg/b.py")
        info.external_attr = 0o120777 << 16  # a symbolic link
        zf.writestr(info, "/etc/passwd")
        zf.writestr("pkg/c.py", "C")
    assert layout.extract_zip(link, tmp_path / "ok") == ["pkg/b.py"]
    assert not (tmp_path / "ok" / "pkg" / "b.py").exists() and (tmp_path / "ok" / "pkg" / "c.py").is_file()


def test_junit_reports_are_parsed_safely() -> None:
    good = (b'<?xml version="1.0"?><testsuites><testsuite tests="2" failures="1" errors="0" skipped="0">'
            b'<testcase classname="tests.x.test_a" name="test_b" file="tests/x/test_a.py">'
            b'<properties><property name="partial_credit" value="0.5"/></properties>'
            b'<failure message="AssertionError: no">trace</failure></testcase>'
            b'<testcase classname="" name="tests.x.test_c"><error message="collection failure">E boom</error>'
            b'</testcase></testsuite></testsuites>')
    report = junit.parse(good)
    assert [(c.nodeid, c.outcome, c.properties) for c in report.cases] == [
        ("tests/x/test_a.py::test_b", "failed", {"partial_credit": "0.5"}),
        ("tests/x/test_c.py", "collection-error", {})]
    bomb = b'<?xml version="1.0"?><!DOCTYPE t [<!ENTITY a "aaaa">]><testsuites>&a;</testsuites>'
    with pytest.raises(junit.ReportError, match="forbidden XML features"):
        junit.parse(bomb)
    with pytest.raises(junit.ReportError, match="not well-formed"):
        junit.parse(good + good)  # a second document appended by learner code
    with pytest.raises(junit.ReportError, match="larger than"):
        junit.parse(b" " * (junit.MAX_REPORT_BYTES + 1))
    with pytest.raises(junit.ReportError, match="not a pytest JUnit report"):
        junit.parse(b"<html/>")


def test_children_run_as_an_unprivileged_user_when_root(tmp_path: Path) -> None:
    """As root: a child switched to ``nobody`` cannot read a root-only file, and can still
    write its report through the inherited pipe. Not root: no user to switch to, said so."""
    if os.geteuid() != 0:
        iso = runner.choose_isolation("auto", sys.executable)
        assert iso.user is None and "not root" in iso.note
        return
    secret = tmp_path / "secret"
    secret.write_text("hidden test text")
    secret.chmod(0o600)
    tmp_path.chmod(0o755)
    iso = runner.Isolation("nobody", 65534, 65534, note="test")
    result = runner.run_child(
        lambda fd: ["/bin/sh", "-c", f"id -u; cat {secret} || echo refused; echo report > /dev/fd/{fd}"],
        Path("/"), {"PATH": "/usr/bin:/bin"}, iso, timeout=60)
    assert result.report == b"report\n"
    assert result.output.splitlines()[0] == "65534"
    assert "hidden test text" not in result.output and "refused" in result.output
