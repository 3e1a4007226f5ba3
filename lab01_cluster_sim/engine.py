"""The discrete-event core of the simulator, shaped like SimPy's ``Environment``.

State is tiny: the clock :attr:`Engine.now`, a heap of ``(time, priority, seq, event)``
entries and an :func:`itertools.count` for ``seq``. The counter keeps entries with the same
time and priority in insertion order, so events themselves are never compared and runs are
deterministic. Four short methods make the loop: :meth:`Engine.schedule` pushes,
:meth:`Engine.peek` gives the next time (``inf`` when empty), :meth:`Engine.step` pops one
entry, moves the clock and calls the event's callback, :meth:`Engine.run` repeats ``step``.

Same-time order is data, not special cases. The named priorities below (smaller first) fix
what happens when several events fall on the same instant:

====================  =====  ===================================================================
priority              value  why it goes there
====================  =====  ===================================================================
``NODE_CHANGE``       0      a node joins or leaves first, so everything after sees the new cluster
``COMPLETION``        1      finished jobs free their GPUs before anyone looks for free GPUs
``PREEMPTION``        2      evictions decided earlier take effect before new work arrives
``ARRIVAL``           3      jobs submitted at this instant join the queue
``TIMER``             4      extension timers (autoscaler ticks, checkpoints) see the new queue
``SCHEDULE``          5      one scheduling pass, after every state change of the instant
``SAMPLE``            6      metrics are sampled last, on the settled state
====================  =====  ===================================================================

So a job that completes at t=10 and a job that arrives at t=10 meet a scheduling pass that
already sees the freed GPUs (the simulator relies on this; ``tests/lab01/test_engine.py``
checks it).

The engine knows nothing of jobs, queues or policies (it imports none of them). Extensions
add their own event kinds with :meth:`Engine.schedule` and a callback: a timer is an event of
kind ``"timer"`` at ``TIMER`` priority, a node failure one of kind ``"node-down"`` at
``NODE_CHANGE``, a preemption one of kind ``"preempt"`` at ``PREEMPTION``. An event can be
cancelled (:meth:`Engine.cancel`), e.g. the completion of a job that was evicted; a cancelled
event stays in the heap and is skipped when popped (lazy deletion, O(1) to cancel).

Leaving the loop uses two purpose-named exceptions, as SimPy does: :class:`EmptySchedule`
from :meth:`Engine.step` when nothing is left, and :class:`StopSimulation`, which a callback
raises (or :meth:`Engine.stop` requests) to end :meth:`Engine.run` early. Misuse fails at once
and shows the bad value: a time in the past or NaN, an unknown priority, ``until`` before
``now``, scheduling an event twice, cancelling one that already ran.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable
from typing import Any, NewType

SimTime = float
"""Simulated time, seconds."""

EventPriority = NewType("EventPriority", int)
"""Order of events that fall on the same instant; smaller runs first."""

NODE_CHANGE = EventPriority(0)
COMPLETION = EventPriority(1)
PREEMPTION = EventPriority(2)
ARRIVAL = EventPriority(3)
TIMER = EventPriority(4)
SCHEDULE = EventPriority(5)
SAMPLE = EventPriority(6)

PRIORITIES: dict[str, EventPriority] = {
    "NODE_CHANGE": NODE_CHANGE,
    "COMPLETION": COMPLETION,
    "PREEMPTION": PREEMPTION,
    "ARRIVAL": ARRIVAL,
    "TIMER": TIMER,
    "SCHEDULE": SCHEDULE,
    "SAMPLE": SAMPLE,
}
"""Name -> value of every priority the engine accepts."""

_VALID_PRIORITIES = frozenset(PRIORITIES.values())


class EngineError(RuntimeError):
    """Misuse of the engine (a bug in the caller, not bad user input)."""


class EmptySchedule(EngineError):
    """:meth:`Engine.step` was called with no event left."""


class StopSimulation(Exception):
    """Raised by a callback (or requested with :meth:`Engine.stop`) to end :meth:`Engine.run`.

    Attributes:
        reason: why the run stopped (shown in reports), e.g. ``"deadlock"``.
    """

    def __init__(self, reason: str = "stopped") -> None:
        super().__init__(reason)
        self.reason = reason


class Event:
    """One scheduled happening.

    Attributes:
        kind: what it is (``"arrival"``, ``"completion"``, ``"schedule"``, ``"timer"``, ...);
            free text, used in logs and by handlers that serve several kinds.
        callback: called as ``callback(event)`` when the event is processed.
        payload: whatever the callback needs (a job, a node index); the engine never reads it.
        time: the instant it fires, s (set by :meth:`Engine.schedule`).
        priority: its :data:`EventPriority` (set by :meth:`Engine.schedule`).
    """

    # NOTE: __slots__ and a plain class instead of a dataclass: the simulator creates two
    # events per job (arrival, completion), so creation cost matters on 100k-job runs.
    __slots__ = ("kind", "callback", "payload", "time", "priority", "_state")

    _NEW, _SCHEDULED, _PROCESSED, _CANCELLED = range(4)

    def __init__(self, kind: str, callback: Callable[["Event"], None], payload: Any = None) -> None:
        self.kind = kind
        self.callback = callback
        self.payload = payload
        self.time: SimTime = math.nan
        self.priority: EventPriority = SAMPLE
        self._state = Event._NEW

    @property
    def scheduled(self) -> bool:
        """True while the event waits in the heap (scheduled, not yet processed nor cancelled)."""
        return self._state == Event._SCHEDULED

    @property
    def processed(self) -> bool:
        """True once its callback has run."""
        return self._state == Event._PROCESSED

    @property
    def cancelled(self) -> bool:
        """True if :meth:`Engine.cancel` removed it before it ran."""
        return self._state == Event._CANCELLED

    def __repr__(self) -> str:
        return f"Event({self.kind!r}, time={self.time}, priority={self.priority})"


class Engine:
    """A deterministic discrete-event loop.

    Args:
        start: the initial clock value, s (default 0).

    Raises:
        EngineError: ``start`` is not a finite number.
    """

    def __init__(self, start: SimTime = 0.0) -> None:
        if not math.isfinite(start):
            raise EngineError(f"start time must be finite, got {start!r}")
        self._now: SimTime = float(start)
        self._queue: list[tuple[SimTime, int, int, Event]] = []
        self._seq = itertools.count()
        self._live = 0  # scheduled, not cancelled, not processed
        self._stop_reason: str | None = None
        self.processed_count = 0
        """Events whose callbacks have run (cancelled ones are not counted)."""

    @property
    def now(self) -> SimTime:
        """The current simulated time, s. Read-only: only :meth:`step` moves it."""
        return self._now

    def __len__(self) -> int:
        """Events still to run (cancelled ones excluded)."""
        return self._live

    def schedule(self, event: Event, at: SimTime, priority: EventPriority) -> Event:
        """Put ``event`` in the heap to fire at time ``at`` with ``priority``; return it.

        Raises:
            EngineError: ``at`` is NaN or before :attr:`now` (events cannot go back in time);
                ``priority`` is not one of :data:`PRIORITIES`; the event was already scheduled,
                processed or cancelled (an event fires at most once).
        """
        if event._state != Event._NEW:
            raise EngineError(f"{event!r} was already scheduled once; create a new Event")
        if not at >= self._now:  # also catches NaN
            raise EngineError(f"cannot schedule {event.kind!r} at t={at!r}: the clock is already at {self._now}")
        if priority not in _VALID_PRIORITIES:
            raise EngineError(f"unknown event priority {priority!r}; expected one of {sorted(PRIORITIES.items(), key=lambda kv: kv[1])}")
        event.time = float(at)
        event.priority = priority
        event._state = Event._SCHEDULED
        heapq.heappush(self._queue, (event.time, int(priority), next(self._seq), event))
        self._live += 1
        return event

    def call_at(self, at: SimTime, priority: EventPriority, kind: str,
                callback: Callable[[Event], None], payload: Any = None) -> Event:
        """Shorthand: create an :class:`Event` and :meth:`schedule` it."""
        return self.schedule(Event(kind, callback, payload), at, priority)

    def cancel(self, event: Event) -> None:
        """Remove a scheduled event; it will not run.

        Raises:
            EngineError: the event is not waiting in the heap (never scheduled, already run,
                or already cancelled).
        """
        if event._state != Event._SCHEDULED:
            state = {Event._NEW: "never scheduled", Event._PROCESSED: "already processed",
                     Event._CANCELLED: "already cancelled"}[event._state]
            raise EngineError(f"cannot cancel {event!r}: it is {state}")
        event._state = Event._CANCELLED
        self._live -= 1

    def _drop_cancelled(self) -> None:
        queue = self._queue
        while queue and queue[0][3]._state == Event._CANCELLED:
            heapq.heappop(queue)

    def peek(self) -> SimTime:
        """Time of the next event to run, or ``inf`` when none is left."""
        self._drop_cancelled()
        return self._queue[0][0] if self._queue else math.inf

    def step(self) -> Event:
        """Pop the next event, move the clock to its time, run its callback; return it.

        Raises:
            EmptySchedule: no event is left.
            StopSimulation: raised by the callback (passed through to :meth:`run`).
        """
        self._drop_cancelled()
        if not self._queue:
            raise EmptySchedule(f"no events left at t={self._now}")
        time, _, _, event = heapq.heappop(self._queue)
        self._now = time
        event._state = Event._PROCESSED
        self._live -= 1
        self.processed_count += 1
        event.callback(event)
        return event

    def stop(self, reason: str = "stopped") -> None:
        """Ask :meth:`run` to return after the event being processed now."""
        self._stop_reason = reason

    def run(self, until: SimTime | None = None) -> str:
        """Process events until none is left, ``until`` is reached, or a stop is requested.

        With ``until``, events at times strictly before ``until`` run and the clock is then
        set to ``until`` (SimPy's rule: an event exactly at ``until`` does not run).

        Returns:
            Why it returned: ``"empty"``, ``"until"``, or the :class:`StopSimulation` reason.

        Raises:
            EngineError: ``until`` is NaN or not after :attr:`now`.
        """
        if until is not None and not until > self._now:
            raise EngineError(f"until={until!r} must be after the current time {self._now}")
        self._stop_reason = None
        while True:
            if until is not None and self.peek() >= until:
                if math.isfinite(until):
                    self._now = float(until)
                return "until"
            try:
                self.step()
            except EmptySchedule:
                return "empty"
            except StopSimulation as stop:
                return stop.reason
            if self._stop_reason is not None:
                return self._stop_reason
