"""Queue disciplines beyond FIFO: priority with preemption, DRF fair share, EASY backfill.

Pure models (no event loop) live in :mod:`.fairness` (Jain's index), :mod:`.drf`
(dominant resource fairness) and :mod:`.preemption` (checkpoints, lost work, victim
choice). :mod:`.runner` is a small discrete-event loop that runs a workload under any
of the disciplines and reports the trilemma (wait, utilisation, fairness), see
:mod:`.trilemma`. :mod:`.core` registers ``priority``, ``drf`` and ``backfill`` as queue
disciplines of the core scheduler (``simulate --discipline backfill``).
"""

try:  # register priority, drf and backfill with the core scheduler (lab01_cluster_sim.scheduler)
    from lab01_cluster_sim.disciplines import core as _core  # noqa: F401
except ImportError:  # the core scheduler is not available: the runner still works
    pass
