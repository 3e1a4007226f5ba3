"""Hidden graded tests that cannot be hard-coded: random valid instances of each part's contract.

Each part's function is called on :data:`DRAWS` instances drawn, per submission, from a bank
of :data:`BANK_SIZE` instances per part. An instance is rebuilt here from its number (a
seed of :func:`instance`, so the bank holds numbers and answers only); its answer was
computed from the reference solutions when the autograder was built
(``tools/make_autograder.py`` runs :func:`build_bank` in the instructor's checkout and puts
``bank.json`` beside this file in the zip; the grader reads it into memory and removes it
before any learner code runs, as it does the hidden tests). Without ``bank.json`` (the
instructor's checkout, ``make grade``) the answers are computed here, from the code under
test, which there is the reference.

The draw: a submission's instances are chosen by the seed in ``GRADING_DRAW_SEED`` (the
grader derives it from the submitted files, so a regrade of the same files draws the same
instances), else seed 0. A test passes when every drawn instance gives its answer (a
function that is right on the visible tests' arguments only, a table of their answers,
scores none of these points); its message shows the first instance that did not.

The generators stay inside each function's documented domain, and avoid instances whose
answer the contract leaves open: 1A never lands a score exactly on an integer boundary
(where two correct float formulas may truncate differently), 1D's lost GPU-seconds are
distinct (so no tie-break of the drop phase decides), 2B's device has no topology links.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import random
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from lab01_cluster_sim.disciplines.drf import drf_pick_tenant
from lab01_cluster_sim.disciplines.preemption import VictimCandidate, choose_victims
from lab01_cluster_sim.metrics import count_stranded_gpus
from lab01_cluster_sim.policies.generic import best_fit_raw_score
from lab01_cluster_sim.scheduler import gang_permit
from lab02_device_plugin.plugin.health import APPLICATION_XIDS, HealthEvent, HealthPolicy, next_health
from lab02_device_plugin.plugin.mig import PROFILE_TABLES, mixed_resource_name
from lab02_device_plugin.plugin.sharing import (
    HEALTHY,
    UNHEALTHY,
    AdvertisedDevice,
    AdvertisedResource,
    expand_replicas,
    list_and_watch_snapshot,
    physical_device_id,
)

BANK_FILE = Path(__file__).with_name("bank.json")
BANK_SIZE = 200
"""Instances per part in the bank."""
DRAWS = 12
"""Instances per part drawn for one submission."""
BANK_SEED = 23_000
"""Instance ``k`` of part ``P`` is built by ``random.Random(f"{BANK_SEED}:{P}:{k}")``."""


# -- instances: (args, a function of the learner's results -> plain JSON answer) --------------
def _best_fit(rng: random.Random):
    max_cpu, max_gpu = rng.choice([(64000, 4000), (96000, 8000), (128000, 8000)])
    while True:
        nodes = rng.randint(1, 6)
        cpu_left = [rng.randrange(0, max_cpu + 1, 500) for _ in range(nodes)]
        idle = [rng.randrange(0, max_gpu + 1, 250) for _ in range(nodes)]
        cpu_req = rng.randrange(0, min(cpu_left) + 1, 500)
        gpu_req = rng.randrange(0, min(idle) + 1, 250)
        exact = [100 * (1 - (Fraction(c - cpu_req, 2 * max_cpu) + Fraction(g - gpu_req, 2 * max_gpu)))
                 for c, g in zip(cpu_left, idle)]
        if all(min(e - int(e), 1 - (e - int(e))) > Fraction(1, 10 ** 6) for e in exact):
            return (np.array(cpu_left, dtype=np.int64), np.array(idle, dtype=np.int64), cpu_req, gpu_req, max_cpu,
                    max_gpu)


def _stranded(rng: random.Random):
    nodes, jobs = rng.randint(1, 5), rng.randint(1, 3)
    full_free = np.array([rng.randint(0, 8) for _ in range(nodes)], dtype=np.int64)
    slots = np.array([[rng.choice([0, 0, 1, 2, 3]) for _ in range(nodes)] for _ in range(jobs)], dtype=np.int64)
    per_worker = np.array([rng.choice([0, 1, 1, 2, 4, 8]) for _ in range(jobs)], dtype=np.int64)
    remaining = np.array([rng.randint(1, 6) for _ in range(jobs)], dtype=np.int64)
    return full_free, slots, per_worker, remaining


def _permit(rng: random.Random):
    needed = rng.randint(1, 64)
    placed = needed if rng.random() < 0.5 else rng.randint(0, needed - 1) if needed > 1 else 0
    return placed, needed


def _victims(rng: random.Random):
    count = rng.randint(1, 6)
    ids = rng.sample([f"job-{c}" for c in "abcdefghij"], count)
    lost: set[float] = set()
    cands = []
    for job_id in ids:
        while True:
            gpus, seconds = rng.choice([1, 2, 4, 8]), float(rng.randrange(10, 600, 10))
            if gpus * seconds not in lost:
                lost.add(gpus * seconds)
                break
        cands.append(VictimCandidate(job_id, rng.randint(0, 3), gpus, seconds))
    need = rng.randint(1, int(sum(c.gpus for c in cands)) + 2)
    return cands, need


def _drf(rng: random.Random):
    resources = rng.randint(2, 3)
    capacity = [float(rng.choice([8, 16, 32, 64])) for _ in range(resources)]
    names = rng.sample(["ana", "bo", "cy", "dee", "eli", "fay"], rng.randint(1, 5))
    usage = {t: [float(rng.randint(0, int(c) // 2)) for c in capacity] for t in names if rng.random() < 0.85}
    candidates = rng.sample(names, rng.randint(1, len(names)))
    return usage, capacity, candidates


def _device(rng: random.Random, gpu: int, mig: int | None) -> AdvertisedDevice:
    gpu_uuid = f"GPU-{rng.randrange(16 ** 6):06x}-{gpu}"
    physical = gpu_uuid if mig is None else f"MIG-{rng.randrange(16 ** 6):06x}-{gpu}-{mig}"
    return AdvertisedDevice(physical, physical, gpu_uuid, gpu, mig_index=mig, numa_node=rng.choice([None, 0, 1]),
                            nvlink_island=rng.choice([None, 0, 1]), minor_number=gpu)


def _snapshot(rng: random.Random):
    devices = []
    for gpu in range(rng.randint(1, 4)):
        if rng.random() < 0.4:
            devices += [_device(rng, gpu, mig) for mig in range(rng.randint(1, 3))]
        else:
            devices.append(_device(rng, gpu, None))
    name = "nvidia.com/gpu"
    resource = AdvertisedResource(name, name, tuple(devices))
    pool = [d.physical_id for d in devices] + [d.gpu_uuid for d in devices] + ["GPU-elsewhere"]
    return resource, set(rng.sample(pool, rng.randint(0, min(3, len(pool)))))


def _replicas(rng: random.Random):
    device = _device(rng, rng.randint(0, 7), rng.choice([None, None, 0, 1, 2]))
    probes = [f"{device.physical_id}::{rng.randint(0, 9)}", device.physical_id, f"{device.physical_id}::x",
              f"GPU-a::{rng.randint(0, 3)}::{rng.randint(0, 3)}", "GPU-b::"]
    return device, rng.randint(1, 8), rng.sample(probes, len(probes))


def _profile(rng: random.Random):
    return (rng.choice(sorted({name for table in PROFILE_TABLES.values() for name in table})),)


def _health(rng: random.Random):
    policy = HealthPolicy(disabled=rng.random() < 0.25,
                          forced_xids=frozenset(rng.sample([13, 31, 48, 79, 94], rng.randint(0, 2))),
                          recovery=rng.random() < 0.5)
    policy = dataclasses.replace(policy, ignored_xids=frozenset(APPLICATION_XIDS - policy.forced_xids))
    kind = rng.choice(["xid", "xid", "failure", "recovery"])
    xid = rng.choice(sorted(APPLICATION_XIDS) + [48, 79, 94, 119]) if kind == "xid" else None
    event = HealthEvent(rng.choice(["GPU-a", None]), xid=xid, recovered=kind == "recovery")
    return rng.choice([HEALTHY, UNHEALTHY]), event, policy


def _device_fields(d) -> list:
    return [d.id, d.physical_id, d.gpu_uuid, d.gpu_index, d.mig_index, d.replica, d.numa_node, d.nvlink_island,
            d.minor_number, [list(x) for x in d.links]]


def _answer(part: str, args: tuple):
    """The plain JSON answer of ``part``'s function(s) on ``args`` (the code imported here)."""
    if part == "1A":
        return best_fit_raw_score(*args).tolist()
    if part == "1B":
        return int(count_stranded_gpus(*args))
    if part == "1C":
        return bool(gang_permit(*args))
    if part == "1D":
        cands, need = args
        gpus = {c.job_id: c.gpus for c in cands}
        got = choose_victims(cands, lambda ids: sum(gpus[i] for i in ids) >= need)
        return None if got is None else sorted(got)
    if part == "1E":
        return drf_pick_tenant(*args)
    if part == "2A":
        return [[s.id, s.health, s.numa_node] for s in list_and_watch_snapshot(*args)]
    if part == "2B":
        device, replicas, probes = args
        return {"replicas": [_device_fields(d) for d in expand_replicas(device, replicas)],
                "physical": [physical_device_id(p) for p in probes]}
    if part == "2C":
        return mixed_resource_name(*args)
    if part == "2D":
        return next_health(*args)
    raise KeyError(part)


GENERATORS = {"1A": _best_fit, "1B": _stranded, "1C": _permit, "1D": _victims, "1E": _drf, "2A": _snapshot,
              "2B": _replicas, "2C": _profile, "2D": _health}


def instance(part: str, k: int) -> tuple:
    """Instance ``k`` of ``part`` (the same on every machine: seeded by its name)."""
    return GENERATORS[part](random.Random(f"{BANK_SEED}:{part}:{k}"))


def build_bank(size: int = BANK_SIZE) -> dict[str, list]:
    """Every part's ``[k, answer]`` pairs, answers from the code imported here (run in the
    instructor's checkout: the reference solutions)."""
    return {part: [[k, _answer(part, instance(part, k))] for k in range(size)] for part in GENERATORS}


_BANK: dict | None = None


def _bank() -> dict:
    global _BANK
    if _BANK is None:
        _BANK = json.loads(BANK_FILE.read_text(encoding="utf-8")) if BANK_FILE.is_file() else None
        if _BANK is None:  # the instructor's checkout: the code under test is the reference
            _BANK = {part: [[k, None] for k in range(BANK_SIZE)] for part in GENERATORS}
    return _BANK


def drawn(part: str) -> list[tuple[int, object]]:
    """The :data:`DRAWS` ``(k, answer)`` pairs of ``part`` for this submission."""
    seed = os.environ.get("GRADING_DRAW_SEED", "0")
    rng = random.Random(hashlib.sha256(f"{seed}:{part}".encode()).hexdigest())
    return rng.sample(_bank()[part], DRAWS)


def _check(part: str) -> None:
    wrong = []
    for k, expected in drawn(part):
        args = instance(part, k)
        if expected is None:
            expected = _answer(part, args)
        got = _learner_answer(part, args)
        if got != expected:
            wrong.append((args, expected, got))
    if wrong:
        args, expected, got = wrong[0]
        shown = ", ".join(repr(a)[:300] for a in args)
        pytest.fail(f"{len(wrong)} of {DRAWS} random instances wrong; the first: arguments ({shown}) -> expected "
                    f"{expected!r:.300}, got {got!r:.300}", pytrace=False)


def _learner_answer(part: str, args: tuple):
    """The learner's result as the same plain JSON answer, after checking its type against
    the contract (a wrong type is a wrong answer, named as such)."""
    if part == "1A":
        got = best_fit_raw_score(*args)
        if not isinstance(got, np.ndarray) or got.dtype.kind not in "iu":
            return f"not an integer numpy array: {got!r:.100}"
        return got.tolist()
    if part == "1B":
        got = count_stranded_gpus(*args)
        if isinstance(got, (bool, np.bool_)) or not isinstance(got, (int, np.integer)):
            return f"not an int: {got!r:.100}"
        return int(got)
    if part == "1C":
        got = gang_permit(*args)
        return bool(got) if isinstance(got, (bool, np.bool_)) else f"not a bool: {got!r:.100}"
    if part == "1D":
        cands, need = args
        gpus = {c.job_id: c.gpus for c in cands}
        got = choose_victims(cands, lambda ids: sum(gpus[i] for i in ids) >= need)
        if got is None:
            return None
        if not isinstance(got, list) or len(set(got)) != len(got):
            return f"not a list of distinct ids: {got!r:.100}"
        return sorted(got)  # the contract asks for the ids, in any order
    if part in ("1E", "2C", "2D"):
        return _answer(part, args)
    if part == "2A":
        got = list_and_watch_snapshot(*args)
        return [[s.id, s.health, s.numa_node] for s in got] if isinstance(got, list) else f"not a list: {got!r:.100}"
    if part == "2B":
        device, replicas, probes = args
        got = expand_replicas(device, replicas)
        if not isinstance(got, list) or not all(type(d) is AdvertisedDevice for d in got):
            return f"not a list of AdvertisedDevice: {got!r:.100}"
        return {"replicas": [_device_fields(d) for d in got], "physical": [physical_device_id(p) for p in probes]}
    raise KeyError(part)


@pytest.mark.points(6, part="1A", number="1A.h2")
def test_best_fit_on_random_nodes():
    """best_fit_raw_score on 12 random node sets and pods that fit every node."""
    _check("1A")


@pytest.mark.points(7, part="1B", number="1B.h2")
def test_stranded_on_random_clusters():
    """count_stranded_gpus on 12 random clusters and pending jobs."""
    _check("1B")


@pytest.mark.points(5, part="1C", number="1C.h2")
def test_permit_on_random_gangs():
    """gang_permit on 12 random (placed, needed) pairs, about half of them complete gangs."""
    _check("1C")


@pytest.mark.points(8, part="1D", number="1D.h2")
def test_victims_on_random_candidates():
    """choose_victims on 12 random candidate sets (distinct lost GPU-seconds) and GPU needs."""
    _check("1D")


@pytest.mark.points(5, part="1E", number="1E.h2")
def test_drf_on_random_tenants():
    """drf_pick_tenant on 12 random usages, capacities and candidate lists."""
    _check("1E")


@pytest.mark.points(6, part="2A", number="2A.h2")
def test_snapshot_on_random_resources():
    """list_and_watch_snapshot on 12 random resources (GPUs and MIG devices) and unhealthy sets."""
    _check("2A")


@pytest.mark.points(7, part="2B", number="2B.h2")
def test_replicas_on_random_devices():
    """expand_replicas and physical_device_id on 12 random devices, replica counts and IDs."""
    _check("2B")


@pytest.mark.points(5, part="2C", number="2C.h2")
def test_resource_names_of_random_profiles():
    """mixed_resource_name on 12 random MIG profiles of the course's tables."""
    _check("2C")


@pytest.mark.points(7, part="2D", number="2D.h2")
def test_health_on_random_events():
    """next_health on 12 random states, events and policies."""
    _check("2D")
