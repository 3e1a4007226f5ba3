"""Idle-capacity calculator (lab01_cluster_sim.economics), hand-computed values."""

import math

import pytest

from lab01_cluster_sim.economics import (HOURS_PER_YEAR, gpus_needed, idle_capacity,
                                         idle_cost_grid, sharing_savings)
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
