"""Queue disciplines beyond FIFO: priority with preemption, DRF fair share, EASY backfill.

Pure models (no event loop) live in :mod:`.fairness` (Jain's index), :mod:`.drf`
(dominant resource fairness) and :mod:`.preemption` (checkpoints, lost work, victim
choice). :mod:`.runner` is a small discrete-event loop that runs a workload under any
of the disciplines and reports the trilemma (wait, utilisation, fairness), see
:mod:`.trilemma`.
"""
