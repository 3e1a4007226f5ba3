"""Extension points of the timed simulator: timers, eviction, node down/up, observers, filters."""

import numpy as np
import pytest

from lab01_cluster_sim import engine as eng
from lab01_cluster_sim.model import Job, JobState, Node
from lab01_cluster_sim.framework.interface import SchedulerObserver
from lab01_cluster_sim.framework.queue import QueueDiscipline
from lab01_cluster_sim.simulate import Simulation


def _nodes(n=2, gpus=2):
    return [Node(f"n{i}", "A100", gpus, 32_000, 65_536) for i in range(n)]


def test_timer_evicts_a_job_which_restarts_from_scratch_and_loses_its_work():
    # "a" (2 GPUs, 100 s) starts at 0 on n0. A timer at t=30 evicts it; it is requeued and
    # restarts at once (the GPUs are free again) -> lost work 30 s, ends at 30 + 100 = 130.
    sim = Simulation(_nodes(1), [Job("a", 0.0, 100.0, 2, 1000)], policy="first-fit")

    def preempt(ev):
        sim.evict(sim.records["a"], "test preemption")

    sim.engine.call_at(30.0, eng.TIMER, "timer", preempt)
    r = sim.run()
    a = r.records["a"]
    assert (a.state, a.start_time, a.end_time) == (JobState.COMPLETED, 0.0, 130.0)
    assert a.preemptions == 1 and a.lost_work == 30.0
    assert r.summary.preemptions == 1 and r.summary.lost_work == 30.0


def test_evict_hook_keeps_checkpointed_progress():
    # Checkpoint every 20 s: evicted at 30, progress kept = 20 s, remaining 80 s, lost 10 s.
    # Restart at 30 -> end at 110.
    def checkpoint(rec, now):
        ran = now - rec.run_started
        done = rec.job.duration - rec.remaining + ran
        return rec.job.duration - (done // 20) * 20

    sim = Simulation(_nodes(1), [Job("a", 0.0, 100.0, 2, 1000)], policy="first-fit", evict_hook=checkpoint)
    sim.engine.call_at(30.0, eng.TIMER, "timer", lambda ev: sim.evict(sim.records["a"], "preempted"))
    a = sim.run().records["a"]
    assert (a.end_time, a.lost_work, a.preemptions) == (110.0, 10.0, 1)


def test_node_down_evicts_and_node_up_brings_capacity_back():
    # One 2-GPU node per n0/n1; "a" (2 GPUs, 100 s) on n0 via first-fit, "b" (2 GPUs, 100 s) on n1.
    # t=10: n0 goes down -> a evicted, requeued, no room (n1 busy). t=50: n0 up -> a restarts, ends 150.
    sim = Simulation(_nodes(2), [Job("a", 0.0, 100.0, 2, 1000), Job("b", 0.0, 100.0, 2, 1000)], policy="first-fit")
    sim.engine.call_at(10.0, eng.NODE_CHANGE, "node-down", lambda ev: sim.node_down(0))
    sim.engine.call_at(50.0, eng.NODE_CHANGE, "node-up", lambda ev: sim.node_up(0))
    r = sim.run()
    a = r.records["a"]
    assert a.preemptions == 1 and a.lost_work == 10.0 and a.end_time == 150.0
    assert a.last_placements[0].node == "n0"
    assert r.records["b"].end_time == 100.0


def test_evicting_a_job_that_is_not_running_fails():
    sim = Simulation(_nodes(1), [Job("a", 5.0, 1.0, 1, 1000)])
    with pytest.raises(ValueError, match="not running"):
        sim.evict(sim.records["a"], "x")


def test_observers_see_binds_releases_and_lifecycle_once():
    class Log(SchedulerObserver):
        def __init__(self):
            self.events = []

        def on_bind(self, record, placement, request):
            self.events.append(("bind", record.job_id, placement.node))

        def on_release(self, record, placement, request):
            self.events.append(("release", record.job_id, placement.node))

        def on_start(self, record):
            self.events.append(("start", record.job_id))

        def on_finish(self, record):
            self.events.append(("finish", record.job_id))

        def on_reject(self, record):
            self.events.append(("reject", record.job_id))

    log = Log()
    # n0, n1: 2 GPUs; n2: 1 GPU. "g" (2 x 2 GPUs) takes n0 and n1 at t=0. "w" (2 x 1 GPU)
    # trial-places one worker on n2, the second finds nothing -> rolled back, never
    # reported. "x" (8 GPUs) can never fit -> rejected on arrival. At t=10 g ends; w gets
    # both GPUs of n0 (first-fit), runs 10-20.
    nodes = _nodes(2) + [Node("n2", "A100", 1, 32_000, 65_536)]
    jobs = [Job("g", 0.0, 10.0, 2, 1000, workers=2), Job("w", 0.0, 10.0, 1, 1000, workers=2),
            Job("x", 0.0, 1.0, 8, 1000)]
    sim = Simulation(nodes, jobs, policy="first-fit", observers=[log])
    sim.run()
    assert log.events == [
        ("reject", "x"),
        ("bind", "g", "n0"), ("bind", "g", "n1"), ("start", "g"),
        ("release", "g", "n0"), ("release", "g", "n1"), ("finish", "g"),
        ("bind", "w", "n0"), ("bind", "w", "n0"), ("start", "w"),
        ("release", "w", "n0"), ("release", "w", "n0"), ("finish", "w"),
    ]


def test_extra_filter_acts_like_a_taint():
    # Only nodes labelled pool=train accept "trainer" jobs (a toleration-like rule in extras).
    nodes = [Node("n0", "A100", 2, 32_000, 65_536, labels={"pool": "serve"}),
             Node("n1", "A100", 2, 32_000, 65_536, labels={"pool": "train"})]
    jobs = [Job("t", 0.0, 10.0, 1, 1000, extras={"pool": "train"})]
    sim = Simulation(nodes, jobs, policy="first-fit")
    pools = np.array([n.labels.get("pool", "") for n in nodes])
    sim.scheduler.extra_filters.append(
        lambda request, record: np.ones(len(nodes), bool) if record is None or "pool" not in record.job.extras
        else pools == record.job.extras["pool"])
    r = sim.run()
    assert r.records["t"].last_placements[0].node == "n1"


def test_extra_filter_jobs_of_one_shape_are_not_interchangeable():
    # "s1" (pool=serve) blocks on the busy serve node; "t1", same shape but pool=train, must
    # still be tried and start at once on the train node.
    nodes = [Node("n0", "A100", 1, 32_000, 65_536, labels={"pool": "serve"}),
             Node("n1", "A100", 1, 32_000, 65_536, labels={"pool": "train"})]
    jobs = [Job("s0", 0.0, 50.0, 1, 1000, extras={"pool": "serve"}),
            Job("s1", 1.0, 10.0, 1, 1000, extras={"pool": "serve"}),
            Job("t1", 2.0, 10.0, 1, 1000, extras={"pool": "train"})]
    sim = Simulation(nodes, jobs, policy="first-fit")
    pools = np.array([n.labels["pool"] for n in nodes])
    sim.scheduler.extra_filters.append(lambda request, record: pools == record.job.extras["pool"])
    r = sim.run().records
    assert (r["s1"].start_time, r["t1"].start_time) == (50.0, 2.0)


def test_a_custom_discipline_orders_the_queue():
    class ShortestFirst(QueueDiscipline):
        name = "test-shortest-first"

        def __init__(self):
            self.q = {}

        def push(self, record):
            self.q[record.job_id] = record

        def remove(self, record):
            self.q.pop(record.job_id, None)

        def order(self):
            return sorted(self.q.values(), key=lambda r: (r.job.duration, r.job.submit_time))

        def __len__(self):
            return len(self.q)

    # one 1-GPU node; "hog" runs 0-10; "long" (50 s) and "short" (5 s) wait; shortest first:
    # short 10-15, long 15-65.
    jobs = [Job("hog", 0, 10, 1, 1000), Job("long", 1, 50, 1, 1000), Job("short", 2, 5, 1, 1000)]
    sim = Simulation(_nodes(1, gpus=1), jobs, policy="first-fit", discipline=ShortestFirst())
    r = sim.run().records
    assert (r["short"].start_time, r["long"].start_time, r["long"].end_time) == (10, 15, 65)


def test_job_extras_do_not_change_equality():
    assert Job("a", extras={"tier": "gold"}) == Job("a")


def test_extra_filter_added_mid_run_does_not_strand_lazily_blocked_jobs():
    # t=0: "a" fills the only GPU for 10 s; "b" (t=1) blocks (FIFO-skip, lazy wake). At t=10
    # a ends (its release is only recorded, lazily) and then, at the same instant, a timer adds
    # an always-true extra filter, switching FIFO-skip to its plain path: b must still start.
    sim = Simulation(_nodes(1, gpus=1), [Job("a", 0.0, 10.0, 1, 1000), Job("b", 1.0, 5.0, 1, 1000)],
                     policy="first-fit")

    def add_filter(ev):
        sim.scheduler.extra_filters.append(lambda request, record: np.ones(1, dtype=bool))
        sim.request_pass()

    sim.engine.call_at(10.0, eng.TIMER, "add-filter", add_filter)
    r = sim.run().records
    assert (r["b"].start_time, r["b"].end_time) == (10.0, 15.0)
