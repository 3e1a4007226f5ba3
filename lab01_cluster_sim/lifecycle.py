"""Scheduled node events as an engine plugin: drains, failures, recoveries, removals.

:class:`NodeEvents` turns a list of ``(time, node name, action)`` into events of the one engine
(:mod:`lab01_cluster_sim.engine`, priority ``NODE_CHANGE``: they happen before anything else
at their instant):

- ``"drain"`` (``kubectl drain``): the node is cordoned, every running job with a worker there
  is evicted and requeued at its old place in the queue (checkpoint rules apply; its pods keep
  their resources for their ``terminationGracePeriodSeconds``, as the Eviction API grants
  them), and the workers pending jobs hold there are given back (naive mode's partial
  allocations): :meth:`lab01_cluster_sim.simulate.Simulation.drain`;
- ``"up"``: the node is back in service (``kubectl uncordon``, repaired);
- ``"cordon"``: no new placements; what runs stays;
- ``"remove"``: drained and taken out of the cluster for good (its capacity no longer counts).
"""

from __future__ import annotations

from collections.abc import Sequence

from lab01_cluster_sim import engine as eng
from lab01_cluster_sim.errors import InputError

ACTIONS = ("drain", "up", "cordon", "remove")
"""The node actions :class:`NodeEvents` knows."""


class NodeEvents:
    """Engine plugin (``"node-events"``): apply ``(time, node name, action)`` at their times.

    Args:
        events: the events; actions in :data:`ACTIONS`.

    Raises:
        InputError: an unknown action or a negative or NaN time (at construction); a node
            name not in the cluster (when the run starts), naming it.
    """

    name = "node-events"

    def __init__(self, events: Sequence[tuple[float, str, str]]) -> None:
        for i, (t, node, action) in enumerate(events):
            if action not in ACTIONS:
                raise InputError(f"node event [{i}] ({node!r} at t={t}): action must be one of "
                                 f"{', '.join(ACTIONS)}, got {action!r}")
            if not t >= 0:
                raise InputError(f"node event [{i}] ({node!r}): time must be >= 0 s, got {t}")
        self.events = list(events)

    def attach(self, sim) -> None:
        for i, (t, node, action) in enumerate(self.events):
            if node not in sim.state.node_index:
                raise InputError(f"node event [{i}]: no node {node!r} in the cluster")
            sim.call_at(float(t), f"node-{action}", self._apply, (sim, sim.state.node_index[node], action),
                        eng.NODE_CHANGE)

    @staticmethod
    def _apply(event: eng.Event) -> None:
        sim, node, action = event.payload
        if action == "drain":
            sim.drain(node, "node drained", graceful=True)
        elif action == "up":
            sim.node_up(node)
        elif action == "cordon":
            sim.cordon(node)
        else:
            sim.remove_node(node, "node removed")


def parse_events(text: str) -> list[tuple[float, str, str]]:
    """``"drain@600=node-001;up@1200=node-001"`` -> ``[(600.0, "node-001", "drain"), ...]``.

    Raises:
        InputError: an entry not of the form ACTION@TIME=NODE, naming it.
    """
    out = []
    for part in filter(None, (p.strip() for p in text.split(";"))):
        action, _, rest = part.partition("@")
        when, eq, node = rest.partition("=")
        try:
            t = float(when)
        except ValueError:
            t = float("nan")
        if not eq or not node or not t >= 0 or action not in ACTIONS:
            raise InputError(f"node event {part!r}: expected ACTION@TIME=NODE with ACTION one of "
                             f"{', '.join(ACTIONS)} and TIME >= 0 s")
        out.append((t, node, action))
    return out


def node_events_plugin(nodes, jobs, events: str = "") -> NodeEvents:
    """``--plugin node-events:events=drain@600=node-001;up@1200=node-001``."""
    return NodeEvents(parse_events(events))
