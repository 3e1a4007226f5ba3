"""MIG GPUs shared by a stream of small jobs: how busy each profile's instances are over time.

:func:`mig_pool_timeline` runs the jobs on the one engine, each GPU instance a one-slot node of
its extended resource (the device plugin's mixed strategy), and samples the share of each
profile's instances in use after every scheduling cycle (the fragmentation dashboard's MIG
panel, :mod:`lab01_cluster_sim.plots.dashboard`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.model import Job, Node
from lab01_cluster_sim.sharing_modes import MigLayout, smallest_profile
from lab01_cluster_sim.simulate import Simulation


@dataclass(frozen=True)
class MigTimeline:
    """Use of a pool of MIG GPUs over time (see :func:`mig_pool_timeline`).

    Attributes:
        times: event times, s.
        use: profile -> share of that profile's instances in use after each event.
        waits: job index -> queueing delay, s (None if never placed).
        profiles: job index -> profile it was given (None if no offered profile covers it).
    """

    times: list[float]
    use: dict[str, list[float]]
    waits: list[float | None]
    profiles: list[str | None]


def mig_pool_timeline(layouts: Sequence[MigLayout], jobs: Sequence[tuple[float, float, float, float]]) -> MigTimeline:
    """Replay jobs ``(submit_s, duration_s, memory_gb, compute_fraction)`` on MIG GPUs with fixed layouts.

    Each job gets the smallest profile offered by the layouts that covers it
    (:func:`smallest_profile`), waits in arrival order for a free instance of it (a
    blocked job does not block others), and frees it at the end. Jobs no offered profile
    covers are never placed. All GPUs must be of one model.

    Runs on the one engine (:mod:`lab01_cluster_sim.simulate`) as the scheduler sees MIG under
    the device plugin's mixed strategy: every GPU instance is one unit of its extended resource
    ``nvidia.com/mig-<profile>`` (modelled as a one-slot node of "model" ``mig-<profile>``), a
    job asks for one unit of its profile, FIFO-skip binds it to the first free one.

    Raises:
        InputError: no layouts, or layouts of different GPU models.
    """
    if not layouts:
        raise InputError("mig_pool_timeline: expected at least one MIG layout")
    gpu = layouts[0].gpu
    if any(layout.gpu != gpu for layout in layouts):
        raise InputError("mig_pool_timeline: all layouts must be of the same GPU model")
    total: dict[str, int] = {}
    instances = []
    for i, layout in enumerate(layouts):
        for j, p in enumerate(layout.profiles):
            total[p] = total.get(p, 0) + 1
            instances.append(Node(f"gpu{i}-{p}-{j}", f"mig-{p}", 1, 1, 1))
    offered = sorted(total)
    profiles: list[str | None] = []
    for _, _, mem, comp in jobs:
        try:
            profiles.append(smallest_profile(gpu, mem, comp, offered).name)
        except InputError:
            profiles.append(None)
    work = [Job(f"mig-job-{i}", float(submit), float(duration), 1, 1000, 0, 0, (f"mig-{p}",))
            for i, ((submit, duration, _, _), p) in enumerate(zip(jobs, profiles)) if p is not None]
    times: list[float] = []
    use: dict[str, list[float]] = {p: [] for p in offered}

    class _Use:
        name = "mig-use"

        def sample(self, sim, now: float) -> None:
            held = {p: 0 for p in offered}
            for rec in sim.scheduler.running.values():
                held[rec.job.gpu_models[0][4:]] += 1
            if times and times[-1] == now:
                times.pop()
                for p in offered:
                    use[p].pop()
            times.append(now)
            for p in offered:
                use[p].append(held[p] / total[p])

    waits: list[float | None] = [None] * len(jobs)
    if work:
        res = Simulation(instances, work, "first-fit", "gang", "fifo-skip", plugins=[_Use()]).run()
        for rec in res.records.values():
            waits[int(rec.job_id.rsplit("-", 1)[1])] = rec.wait
    return MigTimeline(times, use, waits, profiles)
