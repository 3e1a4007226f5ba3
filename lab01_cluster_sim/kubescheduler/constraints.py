"""What a job's pods ask of nodes, read from ``Job.extras`` (the scenario reader fills them from
the pod template): the keys below hold the values of :mod:`lab01_cluster_sim.corev1`.

- :data:`NODE_SELECTOR`: ``nodeSelector`` as sorted ``(key, value)`` pairs;
- :data:`REQUIRED_AFFINITY`: ``affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.
  nodeSelectorTerms``, a tuple of :class:`~lab01_cluster_sim.corev1.NodeSelectorTerm`;
- :data:`PREFERRED_AFFINITY`: ``preferredDuringSchedulingIgnoredDuringExecution``, a tuple of
  :class:`~lab01_cluster_sim.corev1.PreferredTerm`;
- :data:`TOLERATIONS`: ``tolerations``, a tuple of :class:`~lab01_cluster_sim.corev1.Toleration`.
"""

from __future__ import annotations

from lab01_cluster_sim.corev1 import PreferredTerm, RequiredNodeAffinity, Toleration
from lab01_cluster_sim.model import Job

NODE_SELECTOR = "node_selector"
REQUIRED_AFFINITY = "affinity"
PREFERRED_AFFINITY = "preferred_affinity"
TOLERATIONS = "tolerations"


def tolerations(job: Job) -> tuple[Toleration, ...]:
    """The job's pods' tolerations (() when none)."""
    return tuple(job.extras.get(TOLERATIONS, ()))


def required_affinity(job: Job) -> RequiredNodeAffinity:
    """The job's pods' ``nodeSelector`` and required node affinity, as NodeAffinity's Filter
    reads them (``nodeaffinity.GetRequiredNodeAffinity``)."""
    terms = job.extras.get(REQUIRED_AFFINITY)
    return RequiredNodeAffinity(tuple(job.extras.get(NODE_SELECTOR, ())), None if terms is None else tuple(terms))


def preferred_affinity(job: Job) -> tuple[PreferredTerm, ...]:
    """The job's pods' preferred node affinity terms (() when none)."""
    return tuple(job.extras.get(PREFERRED_AFFINITY, ()))


__all__ = ["NODE_SELECTOR", "PREFERRED_AFFINITY", "REQUIRED_AFFINITY", "TOLERATIONS", "preferred_affinity",
           "required_affinity", "tolerations"]
