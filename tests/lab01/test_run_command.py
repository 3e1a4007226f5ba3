"""``run SCENARIO``: a SCENARIO that is not a file or folder, and a node CSV that is not a
file, are one line and exit 1 before anything is read (tester findings #1 and #28)."""

from __future__ import annotations

import os

import pytest

from lab01_cluster_sim.cli import main


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
