"""The engine's extension points (lab01_cluster_sim.framework.interface), one small plugin each, hand-computed."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lab01_cluster_sim.engine import EngineError
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.model import Job, JobState, Node
from lab01_cluster_sim.framework.interface import Plugin
from lab01_cluster_sim.registry import PLUGINS, make_plugin, parse_plugin_spec
from lab01_cluster_sim.framework.status import PreFilterResult
from lab01_cluster_sim.simulate import Simulation, simulate

GPU = dict(gpu_milli=1000)


def _one_node(gpus: int = 4) -> list[Node]:
    return [Node("n0", "H100", gpus, 64_000, 512_000)]


# -- admission --------------------------------------------------------------------------------
class GpuQuota(Plugin):
    """A toy quota: at most ``quota`` GPUs admitted at once; jobs of priority >= 10 may evict
    admitted lower-priority jobs to get in; a job above the quota is rejected."""

    name = "gpu-quota"

    def __init__(self, quota: int) -> None:
        self.quota, self.used = quota, {}

    def admission_cycle(self, ctx) -> None:
        for rec in ctx.waiting:
            need = rec.job.num_gpus
            if need > self.quota:
                ctx.reject(rec, f"asks {need} GPUs, quota {self.quota}")
                continue
            free = self.quota - sum(self.used.values())
            if need > free and rec.job.priority >= 10:
                for victim in sorted(ctx.admitted, key=lambda r: r.job.priority):
                    if victim.job.priority < rec.job.priority and need > free:
                        ctx.evict(victim, f"quota reclaimed by {rec.job_id}")
                        free = self.quota - sum(self.used.values())
            if need <= free:
                self.used[rec.job_id] = need
                ctx.admit(rec)
            else:
                ctx.hold(rec, f"quota: {need} GPUs asked, {free} free")

    def on_finish(self, record) -> None:
        self.used.pop(record.job_id, None)

    def on_evict(self, record, lost_work) -> None:
        self.used.pop(record.job_id, None)


def test_admission_holds_admits_evicts_and_rejects_against_quota():
    # 8 GPUs of nodes but a quota of 4. a (4 GPUs, 100 s) is admitted at 0; b (2 GPUs, t=1) is
    # held (0 of the quota free) although the node has room; hi (priority 10, 2 GPUs, t=50)
    # evicts a (quota reclaimed; restart from scratch) and is admitted: runs 50..60. In the
    # next cycle at 50 the waiting a (4 GPUs) does not fit the 2 left, b (2) does: b runs
    # 50..60. At 60 both leave: a is admitted again and runs 60..160. huge (5 GPUs) can never
    # be admitted: rejected with the plugin's reason.
    jobs = [Job("a", 0, 100, 4, **GPU), Job("b", 1, 10, 2, **GPU), Job("hi", 50, 10, 2, priority=10, **GPU),
            Job("huge", 2, 10, 5, **GPU)]
    r = simulate(_one_node(8), jobs, plugins=[GpuQuota(4)]).records
    assert (r["hi"].start_time, r["hi"].end_time) == (50, 60)
    assert r["a"].preemptions == 1 and (r["a"].start_time, r["a"].end_time) == (0, 160)
    assert (r["b"].start_time, r["b"].end_time) == (50, 60)
    assert r["huge"].state is JobState.REJECTED and r["huge"].reason == "asks 5 GPUs, quota 4"


def test_a_held_job_reports_the_admission_reason():
    jobs = [Job("a", 0, 100, 4, **GPU), Job("b", 1, 10, 2, **GPU)]
    r = Simulation(_one_node(8), jobs, plugins=[GpuQuota(4)]).run(until=5).records
    assert r["b"].state is JobState.PENDING and r["b"].reason == "quota: 2 GPUs asked, 0 free"


# -- PreFilter ---------------------------------------------------------------------------------
def test_prefilter_restricts_nodes_and_waits_with_a_retry():
    # two nodes; the plugin keeps 'x' off n0 and makes it wait until t=30 (no event happens then
    # but the retry asks for a cycle): x starts at 30 on n1.
    class OnlyN1Later(Plugin):
        name = "only-n1-later"

        def pre_filter(self, sim, record, request):
            if sim.now < 30:
                return PreFilterResult(wait="not before t=30", retry_at=30.0)
            return PreFilterResult(nodes=np.array([False, True]))

    nodes = [Node(f"n{i}", "H100", 2, 8000, 64_000) for i in range(2)]
    r = simulate(nodes, [Job("x", 0, 10, 1, **GPU)], plugins=[OnlyN1Later()]).records
    assert r["x"].start_time == 30 and r["x"].last_placements[0].node == "n1"


# -- device filter, permit, post-filter ----------------------------------------------------------------
def test_device_filter_keeps_a_job_off_given_gpus():
    class NotGpu0(Plugin):
        name = "not-gpu0"

        def filter_devices(self, sim, record, request):
            mask = np.ones(sim.state.gpu_free.shape, dtype=bool)
            mask[0, 0] = False
            return mask

    r = simulate(_one_node(2), [Job("x", 0, 10, 1, **GPU)], plugins=[NotGpu0()]).records
    assert r["x"].last_placements[0].gpus == (1,)


def test_permit_refusal_rolls_the_trial_back():
    # the permit refuses 'gang' until t=20 (a timer retries then); 'small' behind it may use the
    # GPUs meanwhile: small 0..15 on the only node; gang (4 GPUs) at 20.
    class NotBefore20(Plugin):
        name = "not-before-20"

        def attach(self, sim):
            sim.request_pass_at(20.0)

        def permit(self, sim, record, placements):
            return "too early" if record.job_id == "gang" and sim.now < 20 else None

    jobs = [Job("gang", 0, 10, 2, workers=2, **GPU), Job("small", 0, 15, 1, **GPU)]
    r = simulate(_one_node(4), jobs, plugins=[NotBefore20()]).records
    assert r["small"].start_time == 0 and r["gang"].start_time == 20


def test_post_filter_makes_room_and_the_job_is_tried_again():
    class Evictor(Plugin):
        name = "evict-lower"

        def post_filter(self, sim, record):
            victims = [r for r in sim.scheduler.running.values() if r.job.priority < record.job.priority]
            for v in victims:
                sim.evict(v, f"room for {record.job_id}")
            return bool(victims)

    jobs = [Job("old", 0, 100, 4, **GPU), Job("new", 10, 5, 4, priority=1, **GPU)]
    r = simulate(_one_node(4), jobs, plugins=[Evictor()]).records
    # new evicts old at 10 and runs 10..15 (old, retried at 10, finds no lower-priority victim);
    # old restarts from scratch at 15: 15..115
    assert r["new"].start_time == 10 and r["old"].preemptions == 1 and r["old"].end_time == 115


# -- job progress: start delay, slowdown, re-rating ---------------------------------------------------
def test_start_delay_and_slowdown_set_the_completion_and_rerating_moves_it():
    # 'a' (100 s of work) waits 10 s before computing (an image pull) and runs 2x slower while
    # 'b' is running: b runs 0..40 (1 GPU, 40 s); a computes from 10: 10..40 at half speed
    # (15 s of work), then alone 85 s -> ends at 125.
    class Pull(Plugin):
        name = "pull"

        def start_delay(self, sim, record):
            return 10.0 if record.job_id == "a" else 0.0

    class Crowd(Plugin):
        name = "crowd"

        def slowdown(self, sim, record):
            busy = [r for r in sim.scheduler.running.values() if r.busy_from <= sim.now]
            return 2.0 if record.job_id == "a" and len(busy) > 1 else 1.0

        def affected_by(self, sim, record):
            return list(sim.scheduler.running.values())

    jobs = [Job("a", 0, 100, 1, **GPU), Job("b", 0, 40, 1, **GPU)]
    r = simulate(_one_node(2), jobs, plugins=[Pull(), Crowd()]).records
    assert r["a"].busy_from is None and r["a"].end_time == pytest.approx(125)
    assert r["b"].end_time == 40


def test_a_slowdown_below_one_is_a_plugin_bug():
    class Faster(Plugin):
        name = "faster"

        def slowdown(self, sim, record):
            return 0.5

    with pytest.raises(EngineError, match="slowdown must be >= 1"):
        simulate(_one_node(), [Job("x", 0, 10, 1, **GPU)], plugins=[Faster()])


# -- node lifecycle ------------------------------------------------------------------------------
def test_a_plugin_can_add_a_node_and_an_empty_cluster_needs_one():
    class Grow(Plugin):
        name = "grow"

        def could_host(self, sim, job):
            return True

        def after_cycle(self, sim):
            if len(sim.scheduler.discipline) and sim.state.num_nodes == 0:
                sim.add_node(Node("new", "H100", 8, 96_000, 1_000_000))

    r = simulate([], [Job("x", 5, 10, 8, **GPU)], plugins=[Grow()]).records
    assert r["x"].start_time == 5 and r["x"].last_placements[0].node == "new"
    with pytest.raises(InputError, match="at least one node"):
        simulate([], [Job("x", 5, 10, 8, **GPU)])


# -- registration and misuse -------------------------------------------------------------------------
def test_plugins_register_before_the_run_and_need_a_name():
    sim = Simulation(_one_node(), [Job("x", 0, 10, 1, **GPU)])
    with pytest.raises(InputError, match="'name'"):
        sim.add_plugin(object())
    sim.run()
    with pytest.raises(InputError, match="before run"):
        sim.add_plugin(GpuQuota(1))


def test_a_plugin_asking_for_cycles_forever_is_stopped():
    class Loop(Plugin):
        name = "loop"

        def after_cycle(self, sim):
            sim.request_pass()

    with pytest.raises(EngineError, match="scheduling cycles at t=0s"):
        simulate(_one_node(), [Job("x", 0, 10, 1, **GPU)], plugins=[Loop()])


def test_command_line_plugin_specs():
    assert parse_plugin_spec("topology:max_wait_s=600,comm_fraction=0.3") == \
        ("topology", {"max_wait_s": 600, "comm_fraction": 0.3})
    assert parse_plugin_spec("topology:max_wait_s=inf") == ("topology", {"max_wait_s": math.inf})
    with pytest.raises(InputError, match="not key=value"):
        parse_plugin_spec("topology:600")
    nodes = _one_node()
    topo = make_plugin("topology:max_wait_s=600", nodes, [])
    assert topo.name == "topology" and topo.max_wait_s == 600
    assert {"topology", "time-slicing", "constraints", "tenancy", "shape-aware", "defrag", "checkpoints",
            "autoscaler", "node-events"} <= set(PLUGINS)
    with pytest.raises(InputError, match="unknown plugin; expected one of"):
        make_plugin("telepathy", nodes, [])
    with pytest.raises(InputError, match="unknown option 'speed'; topology takes: max_wait_s, comm_fraction"):
        make_plugin("topology:speed=3", nodes, [])
    with pytest.raises(InputError, match="option 'max_wait_s' expects a number, got 'soon'"):
        make_plugin("topology:max_wait_s=soon", nodes, [])
