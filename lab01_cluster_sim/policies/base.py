"""The placement-policy contract and the shared filter -> score -> select -> pick pipeline.

Pipeline for one worker (pod), as in kube-scheduler v1.20 as the fragmentation paper's
simulator runs it (reference/fgd-facts.md sec. 4.0):

1. Filter: nodes where the request fits now (:meth:`ClusterState.feasible`).
2. No feasible node: no placement. Exactly one: take it without scoring.
3. Score: ``policy.score`` gives each feasible node an integer in 0..100, higher is better.
4. Select: the highest score; ties go to the node with the lowest ``state.tie_rank``.
5. Pick GPUs inside the chosen node: ``policy.pick_gpus``.
"""

from __future__ import annotations

from typing import ClassVar, Protocol

import numpy as np

from lab01_cluster_sim.cluster import ClusterState, Request
from lab01_cluster_sim.errors import InputError

MAX_NODE_SCORE = 100


class PlacementPolicy(Protocol):
    """What every placement policy provides.

    ``name`` is the registry key. ``score`` returns int64 scores in 0..MAX_NODE_SCORE,
    shape ``(len(candidates),)``, for the candidate node indices ``candidates`` (int64 array).
    ``pick_gpus`` returns the GPU indices inside ``node`` for the request (``num_gpus`` of them).
    """

    name: ClassVar[str]

    def score(self, state: ClusterState, request: Request, candidates: np.ndarray,
              rng: np.random.Generator) -> np.ndarray: ...

    def pick_gpus(self, state: ClusterState, request: Request, node: int,
                  rng: np.random.Generator) -> tuple[int, ...]: ...


POLICIES: dict[str, type] = {}
"""Policy name -> policy class. Filled by :func:`register`."""


def register(cls: type) -> type:
    """Class decorator adding a policy to :data:`POLICIES` under ``cls.name``."""
    if cls.name in POLICIES:
        raise ValueError(f"policy {cls.name!r} registered twice")
    POLICIES[cls.name] = cls
    return cls


def _load_builtin_policies() -> None:
    # Imported for their @register side effect. Kept lazy so that importing the
    # contract does not drag in every policy module.
    import importlib
    import pkgutil

    import lab01_cluster_sim.policies as pkg

    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name != "base" and not info.name.startswith("_"):
            importlib.import_module(f"{pkg.__name__}.{info.name}")


def get_policy(name: str, **kwargs) -> PlacementPolicy:
    """Instantiate the policy registered as ``name``.

    Raises:
        InputError: unknown name (the message lists the known ones).
    """
    _load_builtin_policies()
    try:
        cls = POLICIES[name]
    except KeyError:
        raise InputError(f"unknown policy {name!r}; expected one of: {', '.join(sorted(POLICIES))}") from None
    return cls(**kwargs)


def place(state: ClusterState, request: Request, policy: PlacementPolicy,
          rng: np.random.Generator) -> tuple[int, tuple[int, ...]] | None:
    """Run filter -> score -> select -> pick for one worker; return ``(node, gpus)`` or None.

    Does not change ``state``; the caller binds the result.
    """
    candidates = np.flatnonzero(state.feasible(request))
    if candidates.size == 0:
        return None
    if candidates.size == 1:
        node = int(candidates[0])
    else:
        scores = policy.score(state, request, candidates, rng)
        best = candidates[scores == scores.max()]
        node = int(best[np.argmin(state.tie_rank[best])])
    return node, tuple(policy.pick_gpus(state, request, node, rng))
