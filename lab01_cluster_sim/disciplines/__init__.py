"""Queue disciplines beyond FIFO: priority with preemption, DRF fair share, EASY backfill.

Pure models (no event loop) live in :mod:`.fairness` (Jain's index), :mod:`.drf`
(dominant resource fairness) and :mod:`.preemption` (checkpoints, lost work, victim
choice, and the ``checkpoints`` engine plugin). :mod:`.core` defines ``priority``, ``drf``
and ``backfill`` as queue disciplines of the one engine (listed by name in
:mod:`lab01_cluster_sim.registry`: ``simulate --discipline backfill``). :mod:`.outcomes` is the
observer plugin that reports each job's outcome and the trilemma (wait, utilisation,
fairness); :mod:`lab01_cluster_sim.studies.trilemma` compares the disciplines with it.
"""
