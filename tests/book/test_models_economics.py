"""Idle-capacity calculator (lab01_cluster_sim.economics), hand-computed values."""

import math

import pytest

from lab01_cluster_sim.economics import (HOURS_PER_YEAR, fleet_for_work, fractional_requests,
                                         gpus_needed, idle_capacity, idle_cost_grid,
                                         sharing_savings, utilisation_steps)
from lab01_cluster_sim.errors import InputError


def test_idle_capacity_hand_computed():
    # 100 GPUs x 8760 h = 876,000 GPU-h paid; 30 % used -> 70 % idle = 613,200 GPU-h
    # at $2.50/GPU-h: paid $2,190,000, idle $1,533,000; useful GPU-h cost 2.5/0.3 = $8.333
    r = idle_capacity(2.5, 100, 0.3)
    assert r.paid_gpu_hours == pytest.approx(876_000)
    assert r.idle_gpu_hours == pytest.approx(613_200)
    assert r.paid_per_year == pytest.approx(2_190_000)
    assert r.idle_per_year == pytest.approx(1_533_000)
    assert r.cost_per_useful_gpu_hour == pytest.approx(8.3333333, rel=1e-6)


def test_edges():
    assert HOURS_PER_YEAR == 365 * 24
    assert idle_capacity(2.0, 10, 1.0).idle_per_year == 0
    assert math.isinf(idle_capacity(2.0, 10, 0.0).cost_per_useful_gpu_hour)
    # 0 GPUs cost nothing
    assert idle_capacity(2.0, 0, 0.5).paid_per_year == 0


def test_gpus_needed_and_savings():
    # 100 GPUs at 30 % = 30 GPUs of useful work; at 75 % that needs ceil(30/0.75) = 40
    assert gpus_needed(100, 0.3, 0.75) == 40
    # 60 GPUs saved x 8760 h x $2.50 = $1,314,000 per year
    assert sharing_savings(2.5, 100, 0.3, 0.75) == pytest.approx(1_314_000)
    # a target below today's utilisation saves nothing
    assert gpus_needed(100, 0.8, 0.5) == 100
    assert sharing_savings(2.5, 100, 0.8, 0.5) == 0
    # 10 GPUs at 0.3 = 3 GPUs of work: at 0.6 exactly 5 (no float round-up to 6)
    assert gpus_needed(10, 0.3, 0.6) == 5


def test_grid_order():
    grid = idle_cost_grid(1.0, 1, [0.1, 0.5, 0.9])
    # 1 GPU x 8760 h x (1-u) x $1
    assert [g.idle_per_year for g in grid] == pytest.approx([7884.0, 4380.0, 876.0])


@pytest.mark.parametrize("args, name", [
    ((-1.0, 10, 0.5), "price_per_gpu_hour"),
    ((float("nan"), 10, 0.5), "price_per_gpu_hour"),
    ((1.0, -3, 0.5), "fleet_gpus"),
    ((1.0, 2.5, 0.5), "fleet_gpus"),
    ((1.0, 10, 1.5), "utilisation"),
    ((1.0, 10, -0.1), "utilisation"),
])
def test_bad_input_names_the_argument(args, name):
    with pytest.raises(InputError, match=name):
        idle_capacity(*args)


def test_bad_target():
    with pytest.raises(InputError, match="target_utilisation"):
        gpus_needed(10, 0.5, 0.0)


def test_first_points_of_utilisation_are_worth_the_most():
    # 40 GPU-equivalents of work at $4/GPU-h (review part 1, ch01 #1):
    # 20 % -> 200 GPUs; 30 % -> ceil(133.33) = 134: 66 freed x 8760 x 4 = $2,312,640/yr
    # 80 % -> 50; 90 % -> ceil(44.44) = 45: 5 freed x 8760 x 4 = $175,200/yr
    rows = {round(r.utilisation, 2): r for r in utilisation_steps(4.0, 40, [0.1, 0.2, 0.3, 0.8, 0.9])}
    assert (rows[0.2].gpus, rows[0.3].gpus, rows[0.3].gpus_freed) == (200, 134, 66)
    assert rows[0.3].saved_per_year == pytest.approx(2_312_640)
    assert (rows[0.8].gpus, rows[0.9].gpus, rows[0.9].gpus_freed) == (50, 45, 5)
    assert rows[0.9].saved_per_year == pytest.approx(175_200)
    # a useful GPU-hour: price / u = $40 at 10 %, $20 at 20 %, $5.00 at 80 %, $4.44 at 90 %
    assert [rows[u].cost_per_useful_gpu_hour for u in (0.1, 0.2, 0.8, 0.9)] == \
        pytest.approx([40.0, 20.0, 5.0, 4.0 / 0.9])
    assert rows[0.1].gpus_freed == 0 and rows[0.1].gpus == 400
    assert rows[0.2].paid_per_year == pytest.approx(200 * 8760 * 4)


def test_fleet_for_work_and_bad_input():
    assert fleet_for_work(12.8, 0.6) == 22      # ceil(21.33)
    assert fleet_for_work(3, 0.6) == 5          # exactly 5, no float round-up
    with pytest.raises(InputError, match="utilisation"):
        fleet_for_work(10, 0)
    with pytest.raises(InputError, match="work_gpus"):
        fleet_for_work(-1, 0.5)
    with pytest.raises(InputError, match="increasing"):
        utilisation_steps(4.0, 40, [0.5, 0.3])
    with pytest.raises(InputError, match="price_per_gpu_hour"):
        utilisation_steps(-4.0, 40, [0.5])


def test_fractional_requests_hand_counted():
    from lab01_cluster_sim.model import Job
    # 5 pods: one CPU-only, one whole GPU, one 2-GPU, three fractional (250, 500, 750 milli)
    jobs = [Job("cpu", 0, 1, gpus_per_worker=0, gpu_milli=0),
            Job("whole", 0, 1, gpus_per_worker=1, gpu_milli=1000),
            Job("two", 0, 1, gpus_per_worker=2, gpu_milli=1000),
            Job("a", 0, 1, gpus_per_worker=1, gpu_milli=250),
            Job("b", 0, 1, gpus_per_worker=1, gpu_milli=500),
            Job("c", 0, 1, gpus_per_worker=1, gpu_milli=750)]
    r = fractional_requests(jobs)
    assert (r.gpu_pods, r.cpu_pods, r.fractional_pods) == (5, 1, 3)
    assert r.fractional_share == pytest.approx(3 / 5)
    # sorted 250, 500, 750: median 500; p25 at position 0.5 -> 375; p75 at 1.5 -> 625
    assert (r.median_milli, r.p25_milli, r.p75_milli) == (500, 375, 625)
    with pytest.raises(InputError, match="at least one pod asking for a GPU"):
        fractional_requests(jobs[:1])
