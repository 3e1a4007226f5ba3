"""Queue disciplines beyond FIFO: priority with preemption, DRF fair share, EASY backfill.

Pure models (no event loop) live in :mod:`.fairness` (Jain's index), :mod:`.drf`
(dominant resource fairness) and :mod:`.preemption` (checkpoints, lost work, victim
choice, and the ``checkpoints`` engine plugin). :mod:`.core` registers ``priority``, ``drf``
and ``backfill`` as queue disciplines of the one engine (``simulate --discipline backfill``).
:mod:`.runner` keeps the extensions' former ``Runner`` interface as an adapter over the engine
(no loop of its own) and reports the trilemma (wait, utilisation, fairness), see
:mod:`.trilemma`.
"""

try:  # register priority, drf and backfill with the core scheduler (lab01_cluster_sim.scheduler)
    from lab01_cluster_sim.disciplines import core as _core  # noqa: F401
except ImportError:  # the core scheduler is not available: the runner still works
    pass
