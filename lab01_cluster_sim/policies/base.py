"""The placement policies' registry and the shared filter -> score -> select -> pick pipeline.

The contract every policy meets (:class:`~lab01_cluster_sim.framework.interface.PlacementPolicy`,
the Score extension point) is the framework's.

Pipeline for one worker (pod), as in kube-scheduler v1.20 as the fragmentation paper's
simulator runs it (pkg/simulator/ of hkust-adsl/kubernetes-scheduler-simulator,
its fork of kube-scheduler's generic_scheduler.go):

1. Filter: nodes where the request fits now (:meth:`ClusterState.feasible`).
2. No feasible node: no placement. Exactly one: take it without scoring.
3. Score: ``policy.score`` gives each feasible node an integer in 0..100, higher is better.
4. Select: the highest score; ties go to the node with the lowest ``state.tie_rank``.
5. Pick GPUs inside the chosen node: ``policy.pick_gpus``.
"""

from __future__ import annotations

import numpy as np

from lab01_cluster_sim.cluster import ClusterState, Request
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.framework.interface import PlacementPolicy
from lab01_cluster_sim.model import MILLI_PER_GPU

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


def check_policy_name(name: str) -> type:
    """The class registered as ``name``.

    Raises:
        InputError: unknown name (the message lists the known ones, each of which works
            with :func:`make_policy` and with ``simulate``/``replay`` by name).
    """
    _load_builtin_policies()
    try:
        return POLICIES[name]
    except KeyError:
        raise InputError(f"unknown policy {name!r}; expected one of: {', '.join(sorted(POLICIES))}") from None


def uses_target(name: str) -> bool:
    """True when the policy ``name`` needs the target workload (FGD).

    Raises:
        InputError: unknown name.
    """
    return bool(getattr(check_policy_name(name), "uses_target", False))


def get_policy(name: str, **kwargs) -> PlacementPolicy:
    """Instantiate the policy registered as ``name`` with ``kwargs``.

    A policy that needs the target workload (FGD) needs ``target=``; prefer
    :func:`make_policy`, or pass the name to ``simulate``/``replay``, which build the
    target from the job list.

    Raises:
        InputError: unknown name (the message lists the known ones), or a target-based
            policy without ``target``.
    """
    cls = check_policy_name(name)
    if getattr(cls, "uses_target", False) and kwargs.get("target") is None:
        raise InputError(f"policy {name!r} needs the target workload: use make_policy({name!r}, target=...) "
                         "with a TargetWorkload, or pass the name to simulate()/replay(), which build it "
                         "from the job list")
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


# -- GPU pick inside the chosen node (shared by the policies) -------------------------
def pick_lowest_free_gpus(state: ClusterState, request: Request, node: int) -> tuple[int, ...]:
    """The ``request.num_gpus`` lowest-index GPUs of ``node`` that are entirely free.

    This is how the FGD simulator reserves whole-GPU and multi-GPU pods
    (``AllocateExclusiveGpuId``, pkg/type/resource.go). Returns ``()`` for a CPU-only request.

    Raises:
        ValueError: the node does not have that many free GPUs (a scheduler bug).
    """
    k = request.num_gpus
    if k == 0:
        return ()
    # NOTE: speed. A node has at most a few dozen GPUs: plain Python on the row's list beats
    # numpy's per-call cost here (this runs once per placed worker).
    free = [g for g, milli in enumerate(state.gpu_free[node].tolist()) if milli >= MILLI_PER_GPU]
    if len(free) < k:
        raise ValueError(f"pick: node {state.nodes[node].name} has {len(free)} free GPUs, {k} asked")
    return tuple(free[:k])


def shared_gpu_candidates(state: ClusterState, request: Request, node: int) -> tuple[np.ndarray, np.ndarray]:
    """For a GPU-sharing request (one GPU, share u < 1000): ``(row, ok)``, the free milli-GPU
    of each GPU of ``node`` and the indices of those with at least u free.

    Raises:
        ValueError: no GPU of ``node`` has u free (a scheduler bug).
    """
    row = state.gpu_free[node, : state.gpu_count[node]]
    ok = np.flatnonzero(row >= request.gpu_milli)
    if ok.size == 0:
        raise ValueError(f"pick: no GPU of node {state.nodes[node].name} has {request.gpu_milli} free")
    return row, ok


def pick_best_gpus(state: ClusterState, request: Request, node: int) -> tuple[int, ...]:
    """The "best" GPU pick (the FGD simulator's ``-gpusel best``).

    A GPU-sharing request (one GPU, share u < 1000) gets the GPU with the smallest free
    share that is still >= u (lowest index on ties): the tightest fit, which keeps whole
    GPUs free. Whole-GPU and multi-GPU requests get the lowest-index fully free GPUs.
    Returns a tuple of GPU indices; ``()`` for a CPU-only request.

    Raises:
        ValueError: nothing fits on ``node`` (a scheduler bug).
    """
    if request.num_gpus == 1 and request.gpu_milli < MILLI_PER_GPU:
        row, ok = shared_gpu_candidates(state, request, node)
        # argmin returns the first minimum, so ties go to the lowest index.
        return (int(ok[np.argmin(row[ok])]),)
    return pick_lowest_free_gpus(state, request, node)


def pick_random_gpus(state: ClusterState, request: Request, node: int,
                     rng: np.random.Generator) -> tuple[int, ...]:
    """The "random" GPU pick (the FGD simulator's ``-gpusel random``): a GPU-sharing request
    gets a uniform choice among the GPUs with free share >= u; whole/multi-GPU requests
    get the lowest-index fully free GPUs (no draw)."""
    if request.num_gpus == 1 and request.gpu_milli < MILLI_PER_GPU:
        _, ok = shared_gpu_candidates(state, request, node)
        return (int(ok[rng.integers(ok.size)]),)
    return pick_lowest_free_gpus(state, request, node)


def make_policy(name: str, target=None) -> PlacementPolicy:
    """Like :func:`get_policy`, but hands ``target`` (a
    :class:`~lab01_cluster_sim.fragmentation.TargetWorkload`) to the policies that need
    the target workload (those with a class attribute ``uses_target = True``, e.g. FGD).

    Raises:
        InputError: unknown name, or a target-based policy without a target.
    """
    if uses_target(name):
        return get_policy(name, target=target)
    return get_policy(name)


def policy_names() -> list[str]:
    """Names of every registered policy, sorted."""
    _load_builtin_policies()
    return sorted(POLICIES)
