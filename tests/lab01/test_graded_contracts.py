"""Lab 01's graded tests hold a learner to the contract and to nothing more (issue 23): a
permit that lets every gang start fails 1C.3, a permit answering numpy booleans passes 1C,
and victims returned in another order than the reference's pass 1D (the contract asks for
the ids, in any order).

Each graded test function is called directly, with the learner function replaced
everywhere the course's code looks it up (as the grader's proxies are).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from lab01_cluster_sim import metrics

GRADED = Path(__file__).resolve().parent / "graded"


def _graded_module(name: str):
    spec = importlib.util.spec_from_file_location(f"graded_{name}", GRADED / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _replace(monkeypatch: pytest.MonkeyPatch, graded, module: str, name: str, make) -> None:
    """Replace ``module.name`` by ``make(original)`` in every lab module that holds it and in ``graded``."""
    original = getattr(importlib.import_module(module), name)
    replacement = make(original)
    for mod in [graded, *[m for k, m in sorted(sys.modules.items()) if k.startswith("lab01_cluster_sim")]]:
        for attr, value in list(vars(mod).items()):
            if value is original:
                monkeypatch.setattr(mod, attr, replacement)


def test_a_permit_that_is_always_true_fails_the_deadlock_test(monkeypatch: pytest.MonkeyPatch) -> None:
    graded = _graded_module("test_lab01_part1c_gang")
    monkeypatch.setattr(metrics, "count_stranded_gpus", lambda *args, **kwargs: 0)  # as the graded file's fixture
    graded.test_naive_mode_deadlocks_where_gang_mode_does_not()  # the reference passes
    _replace(monkeypatch, graded, "lab01_cluster_sim.scheduler", "gang_permit", lambda original: lambda *a: True)
    with pytest.raises(AssertionError):
        graded.test_naive_mode_deadlocks_where_gang_mode_does_not()


def test_a_permit_answering_numpy_booleans_passes_the_permit_tests(monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy as np

    graded = _graded_module("test_lab01_part1c_gang")
    monkeypatch.setattr(metrics, "count_stranded_gpus", lambda *args, **kwargs: 0)
    _replace(monkeypatch, graded, "lab01_cluster_sim.scheduler", "gang_permit",
             lambda original: lambda *a: np.bool_(original(*a)))
    assert type(graded.gang_permit(1, 1)) is np.bool_
    graded.test_permit_is_all_or_nothing()
    graded.test_naive_mode_deadlocks_where_gang_mode_does_not()


def test_victims_in_any_order_pass_every_preemption_test(monkeypatch: pytest.MonkeyPatch) -> None:
    graded = _graded_module("test_lab01_part1d_preemption")

    def reversed_victims(original):
        def choose(candidates, enough):
            got = original(candidates, enough)
            return None if got is None else got[::-1]
        return choose

    _replace(monkeypatch, graded, "lab01_cluster_sim.disciplines.preemption", "choose_victims", reversed_victims)
    assert graded.choose_victims(graded.CANDIDATES, graded.needs_gpus(graded.CANDIDATES, 6)) == ["B", "C"]
    for name in ("test_cheapest_victim_first", "test_adds_victims_until_enough_and_none_when_hopeless",
                 "test_victims_that_turn_out_unneeded_are_spared", "test_checkpointing_job_is_the_cheaper_victim"):
        getattr(graded, name)()
