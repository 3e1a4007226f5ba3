"""The discrete-event engine: ordering, clock, cancellation, misuse."""

import math

import pytest

from lab01_cluster_sim import engine as eng


def _recorder(log):
    return lambda ev: log.append((ev.time, ev.kind))


def test_events_run_in_time_order_and_move_the_clock():
    e = eng.Engine()
    log = []
    for t, kind in [(5.0, "c"), (1.0, "a"), (3.0, "b")]:
        e.call_at(t, eng.ARRIVAL, kind, _recorder(log))
    assert e.peek() == 1.0
    assert e.run() == "empty"
    assert log == [(1.0, "a"), (3.0, "b"), (5.0, "c")]
    assert e.now == 5.0
    assert e.processed_count == 3


def test_same_instant_order_is_completion_arrival_schedule_then_insertion():
    # Scheduled in the "wrong" order on purpose; priorities decide: COMPLETION(1) <
    # ARRIVAL(3) < SCHEDULE(5); two arrivals keep insertion order (the seq counter).
    e = eng.Engine()
    log = []
    e.call_at(10.0, eng.SCHEDULE, "pass", _recorder(log))
    e.call_at(10.0, eng.ARRIVAL, "arrival-1", _recorder(log))
    e.call_at(10.0, eng.COMPLETION, "completion", _recorder(log))
    e.call_at(10.0, eng.ARRIVAL, "arrival-2", _recorder(log))
    e.call_at(10.0, eng.NODE_CHANGE, "node-up", _recorder(log))
    e.run()
    assert [k for _, k in log] == ["node-up", "completion", "arrival-1", "arrival-2", "pass"]


def test_callback_may_schedule_at_the_current_instant():
    e = eng.Engine()
    log = []

    def first(ev):
        log.append("first")
        e.call_at(e.now, eng.SCHEDULE, "later-same-time", lambda ev2: log.append("second"))

    e.call_at(2.0, eng.ARRIVAL, "first", first)
    e.run()
    assert log == ["first", "second"] and e.now == 2.0


def test_run_until_stops_before_events_at_until_and_sets_the_clock():
    e = eng.Engine()
    log = []
    e.call_at(1.0, eng.ARRIVAL, "a", _recorder(log))
    e.call_at(4.0, eng.ARRIVAL, "b", _recorder(log))
    assert e.run(until=4.0) == "until"
    assert log == [(1.0, "a")] and e.now == 4.0
    assert len(e) == 1
    assert e.run() == "empty" and log[-1] == (4.0, "b")


def test_cancelled_event_does_not_run():
    e = eng.Engine()
    log = []
    ev = e.call_at(1.0, eng.COMPLETION, "done", _recorder(log))
    e.call_at(2.0, eng.ARRIVAL, "a", _recorder(log))
    e.cancel(ev)
    assert ev.cancelled and len(e) == 1 and e.peek() == 2.0
    e.run()
    assert log == [(2.0, "a")]


def test_stop_simulation_from_a_callback_ends_run_with_its_reason():
    e = eng.Engine()
    log = []

    def boom(ev):
        raise eng.StopSimulation("deadlock")

    e.call_at(1.0, eng.ARRIVAL, "boom", boom)
    e.call_at(2.0, eng.ARRIVAL, "after", _recorder(log))
    assert e.run() == "deadlock"
    assert log == [] and e.now == 1.0


def test_stop_request_ends_run_after_current_event():
    e = eng.Engine()
    e.call_at(1.0, eng.TIMER, "t", lambda ev: e.stop("enough"))
    e.call_at(2.0, eng.TIMER, "t2", lambda ev: None)
    assert e.run() == "enough" and e.now == 1.0


def test_step_on_empty_schedule_raises():
    e = eng.Engine()
    assert e.peek() == math.inf
    with pytest.raises(eng.EmptySchedule):
        e.step()


@pytest.mark.parametrize("at", [4.0, math.nan])
def test_scheduling_in_the_past_or_nan_fails_loudly(at):
    e = eng.Engine(start=5.0)
    with pytest.raises(eng.EngineError, match="cannot schedule"):
        e.call_at(at, eng.ARRIVAL, "x", lambda ev: None)


def test_unknown_priority_fails():
    e = eng.Engine()
    with pytest.raises(eng.EngineError, match="unknown event priority"):
        e.call_at(1.0, eng.EventPriority(42), "x", lambda ev: None)


def test_an_event_fires_at_most_once():
    e = eng.Engine()
    ev = e.call_at(1.0, eng.ARRIVAL, "x", lambda ev: None)
    with pytest.raises(eng.EngineError, match="already scheduled"):
        e.schedule(ev, 2.0, eng.ARRIVAL)
    e.run()
    assert ev.processed
    with pytest.raises(eng.EngineError, match="already processed"):
        e.cancel(ev)


def test_until_must_be_in_the_future():
    e = eng.Engine(start=3.0)
    with pytest.raises(eng.EngineError, match="until"):
        e.run(until=3.0)


def test_start_must_be_finite():
    with pytest.raises(eng.EngineError):
        eng.Engine(start=math.inf)


def test_now_is_read_only():
    e = eng.Engine()
    with pytest.raises(AttributeError):
        e.now = 3.0  # type: ignore[misc]
