"""``run SCENARIO``: a SCENARIO that is not a file or folder, and a node CSV that is not a
file, are one line and exit 1 before anything is read (tester findings #1 and #28)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from lab01_cluster_sim.cli import main

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_empty_scenario_argument_is_refused(capsys):
    # before: "" silently meant the current folder
    assert main(["run", "", "--check"]) == 1
    err = capsys.readouterr().err
    assert err == "error: SCENARIO: empty; expected a scenario YAML file or a folder of them (e.g. scenarios/)\n"


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_fifo_or_device_scenario_says_what_it_is(kind, tmp_path, capsys):
    # before: "no such file or folder", which is wrong (it exists); a FIFO could also block
    path = "/dev/zero"
    if kind == "fifo":
        path = str(tmp_path / "s.fifo")
        os.mkfifo(path)
    assert main(["run", path, "--check"]) == 1
    err = capsys.readouterr().err
    assert err == (f"error: {path}: is not a regular file or folder (a device, FIFO or socket); expected a scenario "
                   "YAML file or a folder of them\n")


def test_missing_scenario_is_named(tmp_path, capsys):
    assert main(["run", str(tmp_path / "nope.yaml"), "--check"]) == 1
    assert capsys.readouterr().err == (f"error: {tmp_path / 'nope.yaml'}: no such file or folder; expected a "
                                       "scenario YAML file or a folder of them\n")


def test_scenario_node_csv_that_is_dev_zero_is_one_line(tmp_path, capsys):
    # the tester's case: spec.nodes.csv: /dev/zero took 10 GB in 2 minutes
    path = tmp_path / "s.yaml"
    path.write_text("apiVersion: lab01.course/v1alpha1\nkind: Scenario\nmetadata:\n  name: zero\n"
                    "spec:\n  nodes: {csv: /dev/zero}\n  workload:\n    generator: {name: synthetic, jobs: 10}\n")
    status = main(["run", str(path), "--check", "--quiet"])
    err = capsys.readouterr().err
    assert status == 1 and err.count("\n") == 1
    # the scenario reader names the field (file:line:column of the csv value); load_nodes refuses
    # a device too, for any other caller (tests/lab01/test_loaders.py)
    assert f"{path}:6:16: Scenario/zero: spec.nodes.csv: /dev/zero: not a regular file" in err


def _node_csv_scenario(tmp_path, csv_name: str):
    path = tmp_path / "s.yaml"
    path.write_text("apiVersion: lab01.course/v1alpha1\nkind: Scenario\nmetadata:\n  name: csvs\n"
                    f"spec:\n  nodes: {{csv: {csv_name}}}\n  workload:\n    generator: {{name: synthetic, jobs: 10}}\n")
    return path


def test_scenario_node_csv_has_simulates_node_cap(tmp_path, capsys, monkeypatch):
    # fresh tester #16: a 3,000,000-row node CSV took 1.8 GB and > 60 s; 200,000 rows ran although
    # simulate --nodes refuses more than 100,000. The cap is simulate's MAX_NODES, read at load
    # time; lowered to 2 here so the test is small: a header and 3 nodes, so line 4 (1 + 3) is
    # the first row past the cap.
    import lab01_cluster_sim.studies.timed as timed

    assert timed.MAX_NODES == 100_000
    monkeypatch.setattr(timed, "MAX_NODES", 2)
    (tmp_path / "nodes.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\n" +
                                        "".join(f"n{i},64000,262144,8,V100\n" for i in range(3)))
    path = _node_csv_scenario(tmp_path, "nodes.csv")
    assert main(["run", str(path), "--check", "--quiet"]) == 1
    # "  nodes: {csv: " is 15 characters: the value starts at column 16 of line 6
    assert capsys.readouterr().err == (f"error: {path}:6:16: Scenario/csvs: spec.nodes.csv: {tmp_path / 'nodes.csv'}:4: "
                                       "more than 2 nodes; expected at most 2 nodes\n")
    monkeypatch.setattr(timed, "MAX_NODES", 3)    # exactly at the cap: accepted
    assert main(["run", str(path), "--check", "--quiet"]) == 0
    assert "would run: timed mode" in capsys.readouterr().out


def test_scenario_node_csv_has_the_loaders_byte_cap(tmp_path, capsys):
    # a sparse 100 MiB file costs nothing to make and is refused before it is read
    with open(tmp_path / "big.csv", "wb") as fh:
        fh.truncate(100 * 2**20)
    path = _node_csv_scenario(tmp_path, "big.csv")
    assert main(["run", str(path), "--check", "--quiet"]) == 1
    assert capsys.readouterr().err == (f"error: {path}:6:16: Scenario/csvs: spec.nodes.csv: {tmp_path / 'big.csv'}: "
                                       "is 104,857,600 bytes; expected a CSV file of at most 33,554,432 bytes "
                                       "(32 MiB)\n")


NODE_LIST = "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,8,V100\n"
POD_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time," \
             "scheduled_time\n"


def _trace_scenario(tmp_path, method: str = "timed"):
    trace = tmp_path / "trace"
    trace.mkdir()
    (trace / "openb_node_list_gpu_node.csv").write_text(NODE_LIST)
    path = tmp_path / "s.yaml"
    path.write_text("apiVersion: lab01.course/v1alpha1\nkind: Scenario\nmetadata:\n  name: bt\nspec:\n"
                    f"  workload:\n    trace: {{path: trace, method: {method}}}\n"
                    + ("  simulation: {comparePolicies: [best-fit]}\n" if method == "replay" else ""))
    return path, trace


@pytest.mark.parametrize("method", ["timed", "replay"])
def test_scenario_pod_list_has_the_loaders_byte_cap(tmp_path, capsys, method):
    # fresh tester #21: a 3,000,000-row (193 MB) pod list took 2.3 GB in run before lab01fix's
    # bounds; a sparse 100 MiB list is refused by run --check and by run, before it is read
    path, trace = _trace_scenario(tmp_path, method)
    with open(trace / "openb_pod_list_default.csv", "wb") as fh:
        fh.truncate(100 * 2**20)
    # "    trace: {" is 12 characters and "path: " 6: the folder's value starts at column 19 of line 7
    # (no podList given, so the default list is blamed on the folder)
    expected = (f"error: {path}:7:19: Scenario/bt: spec.workload.trace.path: {trace / 'openb_pod_list_default.csv'}: "
                "is 104,857,600 bytes; expected a CSV file of at most 33,554,432 bytes (32 MiB)\n")
    for extra in (["--check"], ["--output", str(tmp_path / "out")]):
        assert main(["run", str(path), "--quiet", *extra]) == 1
        assert capsys.readouterr().err == expected
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("method", ["timed", "replay"])
def test_scenario_pod_list_has_the_loaders_row_cap(tmp_path, capsys, monkeypatch, method):
    # the row cap (MAX_ROWS, 200,000) lowered to 2: a header and 3 pods, so line 4 is the first
    # row past it; the run stops there with the file and line, and leaves no output folder
    from lab01_cluster_sim.workloads import openb

    assert openb.MAX_ROWS == 200_000
    monkeypatch.setattr(openb, "MAX_ROWS", 2)
    path, trace = _trace_scenario(tmp_path, method)
    (trace / "openb_pod_list_default.csv").write_text(
        POD_HEADER + "".join(f"p{i},1000,1024,1,1000,V100,LS,Running,0,100,0\n" for i in range(3)))
    out = tmp_path / "out"
    assert main(["run", str(path), "--quiet", "--output", str(out)]) == 1
    assert capsys.readouterr().err == (f"error: {trace / 'openb_pod_list_default.csv'}:4: more than 2 rows; "
                                       "expected at most 2 rows\n")
    assert not out.exists()


def test_trace_path_under_course_shared_data(tmp_path, capsys, monkeypatch):
    # fresh tester weak #2: policies-alibaba-replay.yaml ignored COURSE_SHARED_DATA (README, "Real
    # data"); a Scenario path may now start with $COURSE_SHARED_DATA/, resolved like the book's data
    data = tmp_path / "data"
    (data / "trace").mkdir(parents=True)
    (data / "trace" / "openb_node_list_gpu_node.csv").write_text(NODE_LIST)
    # two 1-GPU pods on the 8-GPU node: p0 runs 0..100, p1 arrives at 50 and runs 50..150
    (data / "trace" / "openb_pod_list_default.csv").write_text(
        POD_HEADER + "p0,1000,1024,1,1000,V100,LS,Running,0,100,0\np1,1000,1024,1,1000,V100,LS,Running,50,150,50\n")
    path = tmp_path / "s.yaml"
    path.write_text("apiVersion: lab01.course/v1alpha1\nkind: Scenario\nmetadata:\n  name: shared\nspec:\n"
                    "  workload:\n    trace: {path: $COURSE_SHARED_DATA/trace}\n")
    monkeypatch.setenv("COURSE_SHARED_DATA", str(data))
    out = tmp_path / "out"
    assert main(["run", str(path), "--quiet", "--output", str(out)]) == 0
    assert "completed 2" in capsys.readouterr().out
    # makespan 150 s: p1 ends at 150
    assert '"makespan_s": 150.0' in (out / "summary.json").read_text()
    monkeypatch.setenv("COURSE_SHARED_DATA", str(tmp_path / "nope"))
    assert main(["run", str(path), "--check"]) == 1
    err = capsys.readouterr().err
    # "    trace: {path: " is 18 characters: the value starts at column 19 of line 7
    assert err.startswith(f"error: {path}:7:19: Scenario/shared: spec.workload.trace.path: "
                          f"{tmp_path / 'nope' / 'trace'}: does not exist")
    assert err.rstrip().endswith(f"$COURSE_SHARED_DATA is {tmp_path / 'nope'})")


def test_symbolic_link_loop_and_broken_link_say_what_they_are(tmp_path, capsys):
    # fresh tester weak #5: both were "no such file or folder", and a folder holding only the
    # loop said it held no .yaml file (the entry was skipped silently)
    folder = tmp_path / "loop"
    folder.mkdir()
    (folder / "self.yaml").symlink_to("self.yaml")
    loop = "a symbolic link loop (it points, through links, back to itself)"
    assert main(["run", str(folder / "self.yaml"), "--check"]) == 1
    assert capsys.readouterr().err == (f"error: {folder / 'self.yaml'}: {loop}; expected a scenario YAML file or a "
                                       "folder of them\n")
    assert main(["run", str(folder), "--check"]) == 1
    assert capsys.readouterr().err == f"error: {folder / 'self.yaml'}: {loop}; a scenario folder holds YAML files only\n"
    (folder / "self.yaml").unlink()
    (folder / "gone.yaml").symlink_to(tmp_path / "missing.yaml")
    assert main(["run", str(folder / "gone.yaml"), "--check"]) == 1
    assert capsys.readouterr().err == (f"error: {folder / 'gone.yaml'}: a symbolic link to {tmp_path / 'missing.yaml'}, "
                                       "which does not exist; expected a scenario YAML file or a folder of them\n")


def test_a_file_that_is_not_yaml_is_named(tmp_path, capsys):
    # fresh tester polish #23: run scenarios/README.md said "invalid YAML: did not find expected
    # <document start>"
    path = tmp_path / "README.md"
    path.write_text("# Scenarios\n\nSee the YAML files.\n")
    assert main(["run", str(path), "--check"]) == 1
    assert capsys.readouterr().err == (f"error: {path}: not a .yaml or .yml file; expected a scenario YAML file or a "
                                       "folder of them\n")


def test_an_empty_file_in_a_scenario_folder_is_noted(tmp_path, capsys):
    # fresh tester polish #6: an empty .yaml beside the others was accepted without a word
    import shutil

    from conftest import REPO_ROOT

    folder = tmp_path / "kb"
    shutil.copytree(REPO_ROOT / "scenarios" / "kueue-borrowing", folder)
    (folder / "empty.yaml").write_text("")
    assert main(["run", str(folder), "--check"]) == 0
    captured = capsys.readouterr()
    assert captured.err == f"note: {folder / 'empty.yaml'} holds no objects (an empty file, or comments only)\n"
    assert "would run: timed mode; 5 jobs on 2 nodes" in captured.out


def test_the_default_output_folder_is_ignored_by_git(tmp_path, capsys, monkeypatch):
    """``run`` without --output writes lab01-run-<name>/ in the current folder: git ignores it
    (and out/, where the examples write), so a run in the checkout leaves `git status` clean."""
    git = shutil.which("git")
    if git is None or not (REPO_ROOT / ".git").exists():
        pytest.skip("needs git and a git checkout of the repository")
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(REPO_ROOT / "scenarios" / "gang-textbook.yaml"), "--quiet"]) == 0
    (written,) = [p.name for p in tmp_path.iterdir()]
    assert f"wrote {written}/: " in capsys.readouterr().out
    files = [f"{written}/{f.name}" for f in (tmp_path / written).iterdir()] + ["out/policies/summary.csv"]
    proc = subprocess.run([git, "-C", str(REPO_ROOT), "check-ignore", "--no-index", *files],
                          capture_output=True, text=True, timeout=60)
    assert sorted(proc.stdout.split()) == sorted(files)


def test_check_fails_when_the_scenario_would_not_run(tmp_path, capsys):
    # fresh tester (Dec 2) #15: --check listed what run would refuse but exited 0, so a CI job
    # using --check passed a scenario that cannot run. A Job queued for Kueue without any Kueue
    # object is valid Kubernetes but cannot run here.
    path = tmp_path / "s.yaml"
    shutil.copy(REPO_ROOT / "scenarios" / "gpu-node-taints.yaml", path)
    text = path.read_text().replace("metadata: {name: etl, ", "metadata: {name: etl, labels: "
                                    "{kueue.x-k8s.io/queue-name: q}, ", 1)
    assert text != path.read_text()
    path.write_text(text)
    status = main(["run", str(path), "--check", "--quiet"])
    out = capsys.readouterr().out
    assert status == 1
    assert "would not run yet (1):" in out and "kueue.x-k8s.io labels/annotations without Kueue objects" in out
