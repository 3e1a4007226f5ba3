"""Sharing modes as the scheduler sees them: time-slicing, MPS, MIG (values from facts sec. 5)."""

from __future__ import annotations

import pytest

from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.sharing_modes import (
    DrainRequired,
    MigGpu,
    MigLayout,
    MpsClient,
    TimeSlicingParams,
    advertise_mig,
    compare_sharing_modes,
    mps_admit,
    mps_replicas,
    mps_speeds,
    place_layout,
    quantization_waste,
    smallest_profile,
    timeslice_resources,
    timeslice_slowdown,
)


def test_timeslice_slowdown_and_resources():
    # 4 processes, 2 ms slices, 50 us switch: 4 * 2.05 / 2 = 4.1
    assert timeslice_slowdown(4) == pytest.approx(4.1)
    assert timeslice_slowdown(1) == 1.0
    assert timeslice_slowdown(2, TimeSlicingParams(slice_ms=1, switch_us=0)) == 2.0
    assert timeslice_resources(2, 4) == {"nvidia.com/gpu": 8}
    assert timeslice_resources(1, 4, rename_by_default=True) == {"nvidia.com/gpu.shared": 4}
    with pytest.raises(InputError):
        timeslice_slowdown(0)


def test_mps_shares_and_memory_limits():
    assert mps_speeds([MpsClient(50, 1), MpsClient(25, 1)]) == [0.5, 0.25]
    # oversubscribed 100 + 100 = 200%: scaled by 100/200
    assert mps_speeds([MpsClient(100, 1), MpsClient(100, 1)]) == [0.5, 0.5]
    clients = mps_replicas(81920, 4)
    assert [c.active_thread_pct for c in clients] == [25.0] * 4
    assert clients[0].memory_limit_mib == 20480      # 81920 / 4
    mps_admit(81920, clients)
    with pytest.raises(InputError, match="98304 MiB"):
        mps_admit(81920, clients + [MpsClient(10, 16384)])  # 81920 + 16384 = 98304


def test_mig_layouts_advertise_integers():
    seven = MigLayout("A100-80GB", ("1g.10gb",) * 7)
    assert seven.advertised() == {"nvidia.com/mig-1g.10gb": 7}
    mixed = MigLayout("H200-141GB", ("1g.18gb", "1g.18gb", "2g.35gb", "3g.71gb"))  # mig-parted all-balanced
    assert advertise_mig([seven, seven]) == {"nvidia.com/mig-1g.10gb": 14}
    assert mixed.advertised() == {"nvidia.com/mig-1g.18gb": 2, "nvidia.com/mig-2g.35gb": 1,
                                  "nvidia.com/mig-3g.71gb": 1}


def test_mig_placement_rules():
    # 3g at slot 4 takes slots 4-7; a second 3g fits at slot 0: 2 x 3g is valid (max 2).
    assert place_layout("A100-40GB", ["3g.20gb", "3g.20gb"]) == {0: "3g.20gb", 4: "3g.20gb"}
    # 4g (slots 0-3) + 3g (slots 4-7) = 7 compute slices: valid
    assert place_layout("A100-40GB", ["4g.20gb", "3g.20gb"]) is not None
    # 8 x 1g: more than the max of 7 (and 8 compute slices)
    assert place_layout("A100-40GB", ["1g.5gb"] * 8) is None
    # 7g plus anything overlaps
    assert place_layout("H100-80GB", ["7g.80gb", "1g.10gb"]) is None
    with pytest.raises(InputError, match="does not fit"):
        MigLayout("A100-40GB", ("4g.20gb", "4g.20gb"))


@pytest.mark.parametrize("profiles, why", [
    # 4g.40gb: at most 1 per GPU
    (("4g.40gb", "4g.40gb"), "2 x 4g.40gb; expected at most 1 of that profile"),
    # 7 + 1 = 8 compute slices
    (("7g.80gb", "1g.10gb"), "8 compute slices; expected at most 7"),
    # 3 + 3 + 1 = 7 compute slices fit, but memory 4 + 4 + 1 = 9 of the 8 slices does not
    (("3g.40gb", "3g.40gb", "1g.10gb"), "9 memory slices; expected at most 8"),
])
def test_a_layout_that_does_not_fit_says_why_in_one_line(profiles, why):
    # issue 11 §2 (polish): the layout as typed (not a Python list) and what was expected
    with pytest.raises(InputError) as info:
        MigLayout("A100-80GB", profiles)
    assert str(info.value) == f"MIG layout {','.join(profiles)} does not fit one A100-80GB: {why}"
    with pytest.raises(InputError, match="unknown MIG profile"):
        MigLayout("A100-40GB", ("1g.10gbx",))


def test_quantization_waste():
    # 6 GB + 1/8 of the SMs -> 1g.10gb (1/7); 25 GB + 0.3 -> 3g.40gb (3/7 >= .3, 40 GB >= 25)
    q = quantization_waste("A100-80GB", [(6, 0.125), (25, 0.3)])
    assert q.profiles == ("1g.10gb", "3g.40gb")
    assert q.asked_memory_gb == 31 and q.granted_memory_gb == 50
    assert q.memory_waste == pytest.approx(1 - 31 / 50)
    assert q.granted_compute == pytest.approx(4 / 7)
    assert q.compute_waste == pytest.approx(1 - 0.425 / (4 / 7))
    with pytest.raises(InputError, match="no MIG profile"):
        smallest_profile("A100-40GB", 50, 0.1)


def test_layout_change_requires_drain():
    gpu = MigGpu(MigLayout("A100-40GB", ("3g.20gb", "3g.20gb")))
    gpu.allocate("3g.20gb")
    with pytest.raises(DrainRequired, match="drain"):
        gpu.reconfigure(["1g.5gb"] * 7)
    assert gpu.layout.profiles == ("3g.20gb", "3g.20gb")     # unchanged
    gpu.release("3g.20gb")
    gpu.reconfigure(["1g.5gb"] * 7)
    assert gpu.free() == {"1g.5gb": 7}
    with pytest.raises(InputError, match="no free 7g"):
        gpu.allocate("7g.40gb")


def test_compare_sharing_modes_view():
    rows = {r.mode.split(" ")[0]: r for r in compare_sharing_modes("A100-80GB", 80, 4, 15.0, 0.25)}
    assert rows["time-slicing"].advertised == {"nvidia.com/gpu": 4}
    assert rows["time-slicing"].slowdown == pytest.approx(4.1) and not rows["time-slicing"].memory_isolated
    assert rows["mps"].slowdown == 1.0            # 25% each = what a job needs
    # 15 GB, 25% SMs -> 2g.20gb (2/7 = .286); 3 fit on one GPU; waste 1 - 45/60
    assert rows["mig"].advertised == {"nvidia.com/mig-2g.20gb": 3}
    assert rows["mig"].jobs_on_gpu == 3 and rows["mig"].memory_waste == pytest.approx(0.25)


def test_timeslicing_without_rerate_keeps_the_contention_met_at_start():
    from lab01_cluster_sim.model import Job, Node
    from lab01_cluster_sim.sharing_modes import TimeSlicing

    from .helpers import run_jobs

    node = [Node("n0", "T4", 1, 64000, 512000)]
    quarter = dict(gpus_per_worker=1, gpu_milli=250)          # one of 4 time-slicing replicas
    jobs = [Job("a", 0, 100, **quarter), Job("b", 10, 100, **quarter)]
    res = run_jobs(node, jobs, "fifo-skip", plugins=[TimeSlicing(rerate=False)])
    assert res.outcome("a").end == 100                         # alone at start: full speed
    # b starts next to a: 2 x (2 ms + 50 us) / 2 ms = 2.05 -> 10 + 205 = 215
    assert res.outcome("b").slowdown == pytest.approx(2.05) and res.outcome("b").end == pytest.approx(215)


def test_timeslicing_rates_follow_the_neighbours_with_rerate():
    from lab01_cluster_sim.model import Job, Node
    from lab01_cluster_sim.sharing_modes import TimeSlicing

    from .helpers import run_jobs

    node = [Node("n0", "T4", 1, 64000, 512000)]
    quarter = dict(gpus_per_worker=1, gpu_milli=250)
    jobs = [Job("a", 0, 100, **quarter), Job("b", 10, 100, **quarter)]
    res = run_jobs(node, jobs, "fifo-skip", plugins=[TimeSlicing()])
    # a alone for 10 s (10 done); from 10 both run 2.05x slower: a's 90 s take 184.5 -> ends 194.5;
    # b has done 184.5 / 2.05 = 90 s by then, runs its last 10 s alone -> ends 204.5
    assert res.outcome("a").end == pytest.approx(194.5)
    assert res.outcome("b").end == pytest.approx(204.5)


# -- NaN / negative values are rejected where they enter (tester's findings) --------------------

import lab01_cluster_sim.sharing_modes as sm  # noqa: E402

NAN = float("nan")


@pytest.mark.parametrize("make", [
    lambda: sm.TimeSlicingParams(slice_ms=NAN),
    lambda: sm.TimeSlicingParams(switch_us=NAN),
    lambda: sm.MpsClient(NAN, 1024),
    lambda: sm.smallest_profile("A100-80GB", 5, 0),
    lambda: sm.smallest_profile("A100-80GB", -1, 0.5),
    lambda: sm.smallest_profile("A100-80GB", NAN, 0.5),
    lambda: sm.compare_sharing_modes(job_memory_gb=-1),
    lambda: sm.compare_sharing_modes(job_memory_gb=0),
    lambda: sm.compare_sharing_modes(jobs=0),
    lambda: sm.compare_sharing_modes(job_compute=NAN),
])
def test_sharing_rejects_nan_and_non_positive(make):
    with pytest.raises(InputError):
        make()


def test_memory_failures_are_reported():
    from lab01_cluster_sim.sharing_modes import compare_sharing_modes

    rows = {r.mode.split()[0]: r for r in compare_sharing_modes("A100-80GB", 80, jobs=100, job_memory_gb=15.0)}
    # time-slicing: no isolation, floor(80 / 15) = 5 fit, 100 - 5 = 95 fail out of memory
    assert rows["time-slicing"].jobs_failed == 95 and not rows["time-slicing"].memory_isolated
    # MPS: each client limited to int(80 * 1024 / 100) = 819 MiB = 0.8 GB < 15 GB: all 100 fail
    assert rows["mps"].jobs_failed == 100 and "limit" in rows["mps"].note
    # the default 4 x 15 GB = 60 GB <= 80 GB: nothing fails; MPS limit 20 GB >= 15 GB
    rows = {r.mode.split()[0]: r for r in compare_sharing_modes()}
    assert all(r.jobs_failed == 0 for r in rows.values())
    # but not every job gets the GPU: exclusive binds 1 of the 4 (3 wait); MIG rounds 15 GB and a
    # quarter of the SMs up to 2g.20gb (2/7 >= 0.25), of which 3 fit one A100-80GB: 1 waits.
    # Every job is counted once: on the GPU or waiting.
    assert [(m, rows[m].jobs_on_gpu, rows[m].jobs_waiting) for m in ("exclusive", "time-slicing", "mps", "mig")] == \
        [("exclusive", 1, 3), ("time-slicing", 4, 0), ("mps", 4, 0), ("mig", 3, 1)]
    assert rows["mig"].note == "3 2g.20gb instances fit one A100-80GB: 1 wait"
    assert rows["time-slicing"].note == "" and rows["mps"].note == ""


def test_mig_resource_names_are_a_table_that_agrees_with_lab02():
    """Every profile of MIG_PROFILES has its mixed-strategy name in the table (no naming rule
    in Lab 01's code: writing it is Lab 02's part 2C), and the names are the ones Lab 02's
    mixed_resource_name gives (for these profiles, no "+": "nvidia.com/mig-" + name)."""
    import inspect

    from lab01_cluster_sim import sharing_modes
    from lab01_cluster_sim.sharing_modes import MIG_PROFILES, MIXED_RESOURCE_NAMES
    from lab02_device_plugin.plugin.mig import mixed_resource_name

    names = {p for profiles in MIG_PROFILES.values() for p in profiles}
    assert len(names) == 17 and set(MIXED_RESOURCE_NAMES) == names
    assert MIG_PROFILES["H100-80GB"]["3g.40gb"].resource == "nvidia.com/mig-3g.40gb"
    assert MIG_PROFILES["H200-141GB"]["7g.141gb"].resource == "nvidia.com/mig-7g.141gb"
    assert all(MIXED_RESOURCE_NAMES[n] == mixed_resource_name(n) for n in names)
    # the student edition copies Lab 01 whole: no formula for the name may be in it
    source = inspect.getsource(sharing_modes)
    assert 'f"nvidia.com/mig-{' not in source and '"nvidia.com/mig-" +' not in source
