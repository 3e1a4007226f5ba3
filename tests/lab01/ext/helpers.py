"""Runs of the one engine as the extension tests use them: a :class:`Simulation` with plugins.

``run_jobs`` is the queue-discipline setup (MostAllocated, gang, a Checkpoints plugin, an
:class:`OutcomeRecorder` last); ``run_pods`` the autoscaler setup (static nodes, the
Autoscaler, time-slicing, a :class:`PodTracker` last). Both are the public API spelt out
once for the tests, not a second interface of the package.
"""

from __future__ import annotations

import math

from lab01_cluster_sim.autoscaler.plugin import Autoscaler
from lab01_cluster_sim.autoscaler.pods import PodTracker, pod_jobs, static_nodes
from lab01_cluster_sim.disciplines.core import PriorityPreemption
from lab01_cluster_sim.disciplines.outcomes import OutcomeRecorder
from lab01_cluster_sim.disciplines.preemption import CheckpointSpec, Checkpoints
from lab01_cluster_sim.policies.generic import MostAllocated
from lab01_cluster_sim.sharing_modes import TimeSlicing, TimeSlicingParams
from lab01_cluster_sim.simulate import Simulation


def simulation(nodes, jobs, discipline="fifo-skip", *, plugins=(), checkpoints=None,
               default_checkpoint=CheckpointSpec(), observer=None):
    """(simulation, recorder): not run yet."""
    disc = PriorityPreemption(checkpoints, default_checkpoint) if discipline == "priority" else discipline
    recorder = OutcomeRecorder(observer)
    sim = Simulation(nodes, jobs, MostAllocated(), "gang", disc,
                     plugins=[Checkpoints(checkpoints, default_checkpoint), *plugins, recorder])
    return sim, recorder


def run_jobs(nodes, jobs, discipline="fifo-skip", *, until=None, **kwargs):
    """Run to the end (or through the events at ``until``, s) and return the :class:`Outcomes`."""
    sim, recorder = simulation(nodes, jobs, discipline, **kwargs)
    sim.run(until=None if until is None else math.nextafter(until, math.inf))
    return recorder.result()


def run_pods(pods, pools=(), static=(), *, until_s=None, horizon_s=0.0, plugins=(), **options):
    """Run ``pods`` on ``static`` nodes and the NodePools ``pools``; the :class:`AutoscalerResult`."""
    nodes, fleet = static_nodes(static)
    scaler = Autoscaler(pools, fleet, **options)
    tracker = PodTracker(pods, scaler, horizon_s)
    sim = Simulation(nodes, pod_jobs(pods), MostAllocated(), "gang", "fifo-skip",
                     plugins=[scaler, TimeSlicing(TimeSlicingParams()), *plugins, tracker])
    sim.run(until=None if until_s is None else math.nextafter(until_s, math.inf))
    return tracker.result()


def run_until(nodes, jobs, discipline, until, **kwargs):
    """The simulation after the events at ``until`` (s): jobs running then are still RUNNING."""
    sim, _ = simulation(nodes, jobs, discipline, **kwargs)
    sim.run(until=math.nextafter(until, math.inf))
    return sim


def placed(sim, job_id):
    """``((node index, GPU indices), ...)`` of the workers of ``job_id`` bound now."""
    return tuple((p.node_index, p.gpus) for p in sim.records[job_id].placements)
