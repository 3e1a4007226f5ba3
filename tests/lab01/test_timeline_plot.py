"""The timeline figure and the named scenarios."""

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from lab01_cluster_sim.errors import InputError  # noqa: E402
from lab01_cluster_sim.plots.timeline import plot_timeline  # noqa: E402
from lab01_cluster_sim.scenarios import SCENARIOS, get_scenario, textbook_gang  # noqa: E402
from lab01_cluster_sim.simulate import simulate  # noqa: E402


def test_plot_timeline_draws_allocation_and_stranded_steps():
    sc = get_scenario("stranded-gang")
    r = simulate(sc.nodes, sc.jobs)
    fig = plot_timeline({"best-fit": r.timeline}, title="stranded", time_unit="s")
    alloc_ax, stranded_ax = fig.axes
    # allocation in %: service holds 4 of 16 GPUs -> 25 % at t=0 and t=1
    assert alloc_ax.lines[0].get_ydata().tolist() == [25.0, 25.0]
    assert stranded_ax.lines[0].get_ydata().tolist() == [0, 12]
    assert stranded_ax.get_xlabel() == "time (s)"


def test_plot_timeline_rejects_unknown_unit():
    sc = get_scenario("stranded-gang")
    with pytest.raises(ValueError, match="time_unit"):
        plot_timeline(simulate(sc.nodes, sc.jobs).timeline, time_unit="days")


def test_scenarios_registry_and_errors():
    assert sorted(SCENARIOS) == ["stranded-gang", "textbook-gang"]
    sc = textbook_gang()
    # 16 GPUs; the service takes 4 (one per node) -> 12 free; each trainer asks 8
    assert sum(n.gpu_count for n in sc.nodes) == 16
    assert [j.num_gpus for j in sc.jobs] == [4, 8, 8]
    with pytest.raises(InputError, match="does not fit 12 free GPUs"):
        textbook_gang(workers=13)
    with pytest.raises(InputError, match="unknown scenario 'x'"):
        get_scenario("x")


def test_all_zero_stranded_axis_is_integer_from_zero():
    # one 1-GPU job on a 1-GPU node: nothing ever waits, stranded GPUs stay 0 -> axis 0..1.05
    from lab01_cluster_sim.model import Job, Node

    r = simulate([Node("n0", "G2", 1, 8000, 8192)], [Job("j", 0.0, 5.0, 1, 1000, 1000, 1024)])
    assert max(r.timeline.stranded_gpus) == 0
    fig = plot_timeline(r.timeline)
    _, ax = fig.axes
    assert ax.get_ylim() == (0.0, 1.05)
    ticks = [t for t in ax.get_yticks() if 0 <= t <= 1.05]
    assert all(float(t).is_integer() for t in ticks)


def test_samples_at_one_instant_are_drawn_as_the_last_state():
    # fresh tester 2 F10: an eviction and a readmission at t=1800 s were drawn as a dip of zero
    # width (100 % -> 75 % -> 100 % at one instant); the figure keeps the last state per instant
    import numpy as np

    from lab01_cluster_sim.metrics import Timeline

    t = [0.0, 1800.0, 1800.0, 3600.0]
    tl = Timeline(*(np.array(v, dtype=float) for v in (t, [1.0, 0.75, 1.0, 0.5], [0, 0, 0, 0], [np.nan] * 4,
                                                       [0, 0, 0, 0], [1, 1, 1, 1])))
    alloc_ax = plot_timeline({"run": tl}, time_unit="s").axes[0]
    assert alloc_ax.lines[0].get_xdata().tolist() == [0.0, 1800.0, 3600.0]
    assert alloc_ax.lines[0].get_ydata().tolist() == [100.0, 100.0, 50.0]
