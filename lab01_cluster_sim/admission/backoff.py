"""Backoff of a gang that failed to start: when may it try again?

Kueue's ``waitForPodsReady`` evicts an admitted workload whose pods are not all ready
within ``timeout`` and requeues it with an exponential backoff (Kueue docs, "Setup
All-or-nothing with ready Pods", section "Requeuing Strategy",
https://kueue.sigs.k8s.io/docs/tasks/manage/setup_wait_for_pods_ready/, stable since
v0.6, backoff fields since v0.7): the first delay is ``backoffBaseSeconds`` (default 60),
each consecutive one doubles ("the exponent of 2"), capped at ``backoffMaxSeconds``
(default 3600): about 60, 120, 240, ..., 3600, 3600 s; after ``backoffLimitCount`` requeues
the workload is deactivated (no limit by default). Kueue adds a small random jitter to each
delay; this model leaves it out so runs stay deterministic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from lab01_cluster_sim.errors import InputError


@dataclass(frozen=True, slots=True)
class RequeuingStrategy:
    """``waitForPodsReady.requeuingStrategy`` of the Kueue Configuration.

    Attributes:
        backoff_base_seconds: first delay, s (default 60).
        backoff_max_seconds: longest delay, s (default 3600).
        backoff_limit_count: requeues before the workload is deactivated (None = no limit).

    Raises:
        InputError: a negative or non-finite value.
    """

    backoff_base_seconds: float = 60.0
    backoff_max_seconds: float = 3600.0
    backoff_limit_count: int | None = None

    def __post_init__(self) -> None:
        for attr in ("backoff_base_seconds", "backoff_max_seconds"):
            value = getattr(self, attr)
            if not (math.isfinite(value) and value >= 0):
                raise InputError(f"requeuingStrategy.{attr}: expected a finite number >= 0, got {value!r}")
        if self.backoff_limit_count is not None and self.backoff_limit_count < 0:
            raise InputError(f"requeuingStrategy.backoffLimitCount: expected >= 0, got {self.backoff_limit_count}")

    def delay(self, requeue_count: int) -> float | None:
        """Seconds before the ``requeue_count``-th requeue (1 = after the first failed
        start): ``min(base * 2**(n-1), max)``; None when the limit is reached (the workload
        is deactivated instead).

        Raises:
            InputError: ``requeue_count`` < 1.
        """
        if requeue_count < 1:
            raise InputError(f"requeue_count: expected >= 1, got {requeue_count}")
        if self.backoff_limit_count is not None and requeue_count > self.backoff_limit_count:
            return None
        # 2**(n-1) grows past any cap quickly; stop doubling once the cap is reached.
        exponent = min(requeue_count - 1, 64)
        return min(self.backoff_base_seconds * (2 ** exponent), self.backoff_max_seconds)


@dataclass(frozen=True, slots=True)
class WaitForPodsReady:
    """``waitForPodsReady`` of the Kueue Configuration (``config.kueue.x-k8s.io/v1beta2``;
    ``WaitForPodsReady`` in ``apis/config/v1beta2/configuration_types.go``; Kueue docs,
    "Setup All-or-nothing with ready Pods"). In v1beta2 the section's presence enables it.

    An admitted workload must reach ``PodsReady=True`` (every pod scheduled and running)
    within ``timeout_seconds`` of its admission; otherwise Kueue evicts it with reason
    ``PodsReadyTimeout`` and requeues it after the backoff delay of ``requeuing``
    (:meth:`RequeuingStrategy.delay`; "during this time, the workload is taken as an
    inadmissible and other workloads will have a chance to be admitted"). In the simulator a
    workload is ready when its job runs and its start delay (image pull) is over.

    Attributes:
        timeout_seconds: ``timeout``, s (Kueue's default 5m = 300 s).
        requeuing: ``requeuingStrategy`` (backoff base, max, limit).
        timestamp: ``requeuingStrategy.timestamp``: ``"Eviction"`` (default: the requeued
            workload queues by its eviction time) or ``"Creation"`` (by its creation time).

    Raises:
        InputError: a negative or non-finite timeout, an unknown timestamp.
    """

    timeout_seconds: float = 300.0
    requeuing: RequeuingStrategy = RequeuingStrategy()
    timestamp: str = "Eviction"

    def __post_init__(self) -> None:
        if not (math.isfinite(self.timeout_seconds) and self.timeout_seconds >= 0):
            raise InputError(f"waitForPodsReady.timeout: expected a finite duration >= 0, got {self.timeout_seconds!r}")
        if self.timestamp not in ("Eviction", "Creation"):
            raise InputError(f"waitForPodsReady.requeuingStrategy.timestamp: expected Eviction or Creation, "
                             f"got {self.timestamp!r}")


__all__ = ["RequeuingStrategy", "WaitForPodsReady"]
