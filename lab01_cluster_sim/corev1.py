"""Taints, tolerations and node selectors of the Kubernetes core API, and how they match.

The one place Lab 01 decides whether a pod may go to a node by its labels and taints: the
kube-scheduler plugins (:mod:`lab01_cluster_sim.kubescheduler`), Kueue's flavor assigner
(:mod:`lab01_cluster_sim.admission.flavors`, matching flavors' ``nodeLabels`` and
``nodeTaints``) and Karpenter's requirements (:mod:`lab01_cluster_sim.autoscaler.requirements`)
all import it. Types and rules follow Kubernetes v1.35.4:

- ``k8s.io/api/core/v1``: ``Taint``, ``Toleration`` and ``Toleration.ToleratesTaint``
  (``toleration.go``), ``NodeSelectorRequirement``, ``NodeSelectorTerm``,
  ``PreferredSchedulingTerm``;
- ``k8s.io/component-helpers/scheduling/corev1``: ``FindMatchingUntoleratedTaint`` and
  ``TolerationsTolerateTaint`` (``helpers.go``); ``nodeaffinity/nodeaffinity.go``:
  ``GetRequiredNodeAffinity``, ``LazyErrorNodeSelector.Match``, ``nodeSelectorTerm.match``,
  ``PreferredSchedulingTerms.Score``;
- the API server's validation (``pkg/apis/core/validation/validation.go``:
  ``ValidateTolerations``, ``validateNodeSelectorRequirement``, ``validateNodeFieldSelectorRequirement``),
  applied when a record is built, so a record that exists is one Kubernetes would store.

Not modelled, refused when built: toleration operators ``Lt``/``Gt`` (alpha in v1.35 behind the
``TaintTolerationComparisonOperators`` feature gate, off by default: the API server refuses
them) and ``matchFields`` on any field other than ``metadata.name`` (the only field node
selectors support).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from lab01_cluster_sim.errors import InputError

EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
"""Taint effects (``v1.TaintEffect``)."""
DO_NOT_SCHEDULE = ("NoSchedule", "NoExecute")
"""The effects kube-scheduler's TaintToleration Filter looks at
(``helper.DoNotScheduleTaintsFilterFunc``, ``pkg/scheduler/framework/plugins/helper/taint.go``)."""
NODE_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
"""Operators of a ``NodeSelectorRequirement`` on labels."""
NODE_NAME_FIELD = "metadata.name"
"""The one field a ``matchFields`` requirement may name (``metav1.ObjectNameField``)."""


@dataclass(frozen=True, slots=True)
class Taint:
    """A node taint ``key=value:effect`` (``v1.Taint``; ``timeAdded`` is not modelled).

    Raises:
        InputError: an empty key or an effect outside :data:`EFFECTS`.
    """

    key: str
    value: str = ""
    effect: str = "NoSchedule"

    def __post_init__(self) -> None:
        if not self.key or self.effect not in EFFECTS:
            raise InputError(f"taint {self.key}={self.value}:{self.effect}: key must be non-empty and effect one of "
                             f"{', '.join(EFFECTS)}")

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"


@dataclass(frozen=True, slots=True)
class Toleration:
    """A pod toleration (``v1.Toleration``).

    Attributes:
        key: taint key matched; empty (with operator Exists) = every key.
        operator: ``Equal`` (also the empty operator) or ``Exists``.
        value: compared with the taint's value under ``Equal``.
        effect: the effect matched; empty = every effect.
        seconds: ``tolerationSeconds``: how long a pod tolerating a NoExecute taint stays
            bound once the taint is there, s; None = forever.

    Raises:
        InputError: what ``ValidateTolerations`` refuses: an operator other than Equal/Exists
            (``Lt``/``Gt`` are alpha and off by default in v1.35), an empty key without
            Exists, a value with Exists, an unknown effect, ``tolerationSeconds`` without
            effect NoExecute.
    """

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""
    seconds: float | None = None

    def __post_init__(self) -> None:
        where = f"toleration {self.key!r}"
        if self.operator not in ("Equal", "Exists"):
            raise InputError(f"{where}: operator must be Equal or Exists, got {self.operator!r} (Lt and Gt are alpha "
                             "in Kubernetes 1.35, off by default, and not modelled)")
        if not self.key and self.operator != "Exists":
            raise InputError(f"{where}: operator must be Exists when key is empty (match all keys)")
        if self.operator == "Exists" and self.value:
            raise InputError(f"{where}: value must be empty when operator is Exists")
        if self.effect and self.effect not in EFFECTS:
            raise InputError(f"{where}: effect must be empty or one of {', '.join(EFFECTS)}, got {self.effect!r}")
        if self.seconds is not None and self.effect != "NoExecute":
            raise InputError(f"{where}: effect must be NoExecute when tolerationSeconds is set")

    def tolerates(self, taint: Taint) -> bool:
        """``Toleration.ToleratesTaint`` (k8s.io/api core/v1 ``toleration.go``): effects equal
        or the toleration's empty; keys equal or the toleration's empty; then ``Exists``
        matches any value and ``Equal`` needs equal values."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        return self.operator == "Exists" or self.value == taint.value


def tolerations_tolerate(tolerations: Iterable[Toleration], taint: Taint) -> bool:
    """``TolerationsTolerateTaint`` (component-helpers ``scheduling/corev1/helpers.go``): some
    toleration tolerates ``taint``."""
    return any(t.tolerates(taint) for t in tolerations)


def find_untolerated_taint(taints: Sequence[Taint], tolerations: Sequence[Toleration],
                           effects: tuple[str, ...] = DO_NOT_SCHEDULE) -> Taint | None:
    """``FindMatchingUntoleratedTaint`` (component-helpers ``scheduling/corev1/helpers.go``) with
    the effect filter ``effects``: the first taint of ``taints`` (in the node's order) whose
    effect is in ``effects`` and that no toleration tolerates, or None."""
    for taint in taints:
        if taint.effect in effects and not tolerations_tolerate(tolerations, taint):
            return taint
    return None


def count_intolerable_prefer_no_schedule(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> int:
    """``countIntolerableTaintsPreferNoSchedule`` (kube-scheduler ``tainttoleration/
    taint_toleration.go``): PreferNoSchedule taints of the node that none of the pod's
    tolerations with effect PreferNoSchedule or empty tolerates (``getAllTolerationPreferNoSchedule``)."""
    prefer = [t for t in tolerations if t.effect in ("", "PreferNoSchedule")]
    return sum(1 for taint in taints if taint.effect == "PreferNoSchedule" and not tolerations_tolerate(prefer, taint))


def _is_int(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class MatchExpression:
    """One ``NodeSelectorRequirement`` on node labels (``matchExpressions``; also Karpenter's
    NodePool requirements): ``key``, ``operator`` (:data:`NODE_SELECTOR_OPERATORS`), ``values``.

    Raises:
        InputError: what ``validateNodeSelectorRequirement`` refuses: an unknown operator,
            In/NotIn without values, Exists/DoesNotExist with values, Gt/Lt without exactly
            one integer value.
    """

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        op, n = self.operator, len(self.values)
        if op not in NODE_SELECTOR_OPERATORS:
            raise InputError(f"node affinity {self.key}: operator must be one of {', '.join(NODE_SELECTOR_OPERATORS)}, "
                             f"got {op!r}")
        if op in ("In", "NotIn") and n == 0:
            raise InputError(f"node affinity {self.key}: operator {op} needs values")
        if op in ("Exists", "DoesNotExist") and n:
            raise InputError(f"node affinity {self.key}: operator {op} takes no values")
        if op in ("Gt", "Lt") and (n != 1 or not _is_int(self.values[0])):
            raise InputError(f"node affinity {self.key}: operator {op} needs exactly one integer value")

    def matches(self, labels: Mapping[str, str]) -> bool:
        """``labels.Requirement.Matches`` (apimachinery ``pkg/labels/selector.go``) on a node's
        labels: NotIn and DoesNotExist match a node without the key; Gt/Lt compare the label
        as an integer (absent or not an integer: no match)."""
        op = self.operator
        if op == "Exists":
            return self.key in labels
        if op == "DoesNotExist":
            return self.key not in labels
        if op == "In":
            return self.key in labels and labels[self.key] in self.values
        if op == "NotIn":
            return labels.get(self.key) not in self.values
        value = labels.get(self.key)
        if value is None or not _is_int(value):
            return False
        return int(value) > int(self.values[0]) if op == "Gt" else int(value) < int(self.values[0])


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    """One ``matchFields`` requirement: ``metadata.name`` In or NotIn exactly one node name.

    Raises:
        InputError: another field, another operator, or not exactly one value
            (``validateNodeFieldSelectorRequirement``).
    """

    key: str
    operator: str
    values: tuple[str, ...]

    def __post_init__(self) -> None:
        if self.key != NODE_NAME_FIELD:
            raise InputError(f"matchFields: key must be {NODE_NAME_FIELD}, got {self.key!r}")
        if self.operator not in ("In", "NotIn"):
            raise InputError(f"matchFields {self.key}: operator must be In or NotIn, got {self.operator!r}")
        if len(self.values) != 1:
            raise InputError(f"matchFields {self.key}: must have exactly one value, got {len(self.values)}")

    def matches(self, node_name: str) -> bool:
        """The node's name is (In) / is not (NotIn) the value."""
        return (node_name in self.values) == (self.operator == "In")


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """A ``nodeSelectorTerm``: its ``matchExpressions`` and ``matchFields``, all ANDed."""

    expressions: tuple[MatchExpression, ...] = ()
    fields: tuple[FieldRequirement, ...] = ()

    @property
    def empty(self) -> bool:
        """No requirement at all: such a term selects no node (``isEmptyNodeSelectorTerm``)."""
        return not self.expressions and not self.fields

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        """``nodeSelectorTerm.match`` (component-helpers ``nodeaffinity.go``): every expression
        matches the labels and every field requirement the node's name; an empty term
        matches nothing."""
        if self.empty:
            return False
        return all(e.matches(labels) for e in self.expressions) and all(f.matches(node_name) for f in self.fields)


def terms_match(terms: Sequence[NodeSelectorTerm], labels: Mapping[str, str], node_name: str) -> bool:
    """``LazyErrorNodeSelector.Match``: some term matches (terms are ORed). No terms (or only
    empty ones) match no node."""
    return any(t.matches(labels, node_name) for t in terms)


@dataclass(frozen=True, slots=True)
class RequiredNodeAffinity:
    """What kube-scheduler's NodeAffinity Filter requires of a node
    (``nodeaffinity.GetRequiredNodeAffinity``): the pod's ``nodeSelector`` (every pair among
    the node's labels) AND its ``requiredDuringSchedulingIgnoredDuringExecution`` terms (ORed).

    Attributes:
        node_selector: ``(key, value)`` pairs, sorted.
        terms: the required terms; None = no required node affinity (as opposed to ``()``,
            which the API server refuses: a NodeSelector needs at least one term).
    """

    node_selector: tuple[tuple[str, str], ...] = ()
    terms: tuple[NodeSelectorTerm, ...] | None = None

    @property
    def is_empty(self) -> bool:
        """True when it requires nothing (no selector, no required affinity)."""
        return not self.node_selector and self.terms is None

    def matches(self, labels: Mapping[str, str], node_name: str = "") -> bool:
        """``RequiredNodeAffinity.Match``."""
        if any(labels.get(k) != v for k, v in self.node_selector):
            return False
        return self.terms is None or terms_match(self.terms, labels, node_name)


@dataclass(frozen=True, slots=True)
class PreferredTerm:
    """A ``PreferredSchedulingTerm``: ``weight`` (1..100) and its ``preference`` term.

    Raises:
        InputError: a weight outside 1..100 (``ValidatePreferredSchedulingTerms``).
    """

    weight: int
    term: NodeSelectorTerm

    def __post_init__(self) -> None:
        if not 1 <= self.weight <= 100:
            raise InputError(f"preferred node affinity: weight must be in 1..100, got {self.weight}")


def preferred_score(terms: Sequence[PreferredTerm], labels: Mapping[str, str], node_name: str = "") -> int:
    """``PreferredSchedulingTerms.Score`` (component-helpers ``nodeaffinity.go``): the sum of the
    weights of the terms the node matches (an empty preference term matches nothing)."""
    return sum(p.weight for p in terms if p.term.matches(labels, node_name))


__all__ = [
    "DO_NOT_SCHEDULE", "EFFECTS", "NODE_NAME_FIELD", "NODE_SELECTOR_OPERATORS", "FieldRequirement", "MatchExpression",
    "NodeSelectorTerm", "PreferredTerm", "RequiredNodeAffinity", "Taint", "Toleration",
    "count_intolerable_prefer_no_schedule", "find_untolerated_taint", "preferred_score", "terms_match",
    "tolerations_tolerate",
]
