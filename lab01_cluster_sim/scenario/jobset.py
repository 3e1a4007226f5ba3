"""Reading a JobSet (``jobset.x-k8s.io/v1alpha2``, JobSet v0.11.1, the version Kueue v0.17.0
requires) into one multi-role gang (:class:`JobSetKinds`, part of the loader's builder).

A JobSet runs ``replicas`` copies of each of its ``spec.replicatedJobs[]`` (a batch Job
template); kubernetes-sigs/jobset ``api/jobset/v1alpha2/jobset_types.go``. Kueue admits it as
one Workload with one pod set per replicated job, named after it, of ``replicas x
parallelism`` pods (kubernetes-sigs/kueue v0.17.0 ``pkg/controller/jobs/jobset/jobset_controller.go``,
``JobSet.PodSets`` and ``podsCount``). The reader does the same:

- each replicated job becomes one :class:`~lab01_cluster_sim.model.Job` of ``replicas x
  min(parallelism, completions)`` workers (``PodsCountPerReplica``), id ``<JobSet name>-<replicatedJob name>`` (``namespace/`` before it
  outside ``default``), its role :class:`~lab01_cluster_sim.model.GangRole` (gang: the
  JobSet's id; name: the replicated job's, also the Kueue pod set's; index: its position);
  a JobSet of one replicated job is a plain job (a gang of its workers, no roles);
- the pod template (requests, nodeSelector, affinity, tolerations, priorityClassName,
  terminationGracePeriodSeconds, ...) is read by the batch Job's reader
  (:meth:`~.pods.PodKinds._job` with the template's path), so every rule of a Job's pod
  holds for each role;
- the LocalQueue (``kueue.x-k8s.io/queue-name``) and WorkloadPriorityClass
  (``kueue.x-k8s.io/priority-class``) labels, the creation time and the input position are
  the JobSet's own (Kueue reads them from the JobSet object, ``jobframework.QueueName`` and
  ``WorkloadPriorityClassName``); on a replicated job's template those labels are refused
  (Kueue would not read them);
- the course annotations ``lab01.course/duration``, ``gpu-milli`` and ``image-gib`` may sit on
  the JobSet's ``metadata`` (for every role) or on a replicated job's ``template.metadata``,
  which overrides the JobSet's for that role; ``lab01.course/submit-time`` only on the
  JobSet's (its roles arrive together);
- the roles' pod priorities must be equal (Kueue gives the Workload one priority, the first
  pod set's ``priorityClassName`` or the WorkloadPriorityClass, while kube-scheduler
  preempts with each pod's own; roles of different priorities are not modelled);
- what JobSet's webhook refuses (``pkg/webhooks/jobset_webhook.go`` ``ValidateCreate``) is
  an error: a child Job name ``<JobSet>-<replicatedJob>-<replicas-1>`` or a ``groupName``
  that is not a DNS-1035 label, a name used twice (``listMapKey: name``), a success policy
  naming no replicated job, a failure policy rule misnamed, repeated or naming an unknown
  replicated job or failure reason, a ``coordinator`` pointing at no pod (``validateCoordinator``); so is a JobSet of no replicated job or of more than
  :data:`~lab01_cluster_sim.model.MAX_ROLES` (Kueue's limit of pod sets per Workload).

Which JobSet fields are modelled, inert or refused is :mod:`.coverage`'s table; the
object's own fields are checked by :data:`.schemas.JOBSET`, each template by Kubernetes'
strict ``JobTemplateSpec`` schema (:mod:`.validate`).
"""

from __future__ import annotations

import re
from dataclasses import replace

from lab01_cluster_sim.admission.plugin import QUEUE_KEY
from lab01_cluster_sim.model import MAX_ROLES, GangRole, Job
from lab01_cluster_sim.scenario.fields import POD_GROUP_LABEL, WPC_LABEL, error_at, get_field, source_of
from lab01_cluster_sim.scenario.yamlio import Document

EXCLUSIVE_KEYS = ("alpha.jobset.sigs.k8s.io/exclusive-topology", "alpha.jobset.sigs.k8s.io/node-selector")
"""JobSet's exclusive-placement annotations (``ExclusiveKey``, ``NodeSelectorStrategyKey`` in
``jobset_types.go``): the controller then adds pod affinity and anti-affinity per topology
domain (or a nodeSelector and a toleration), which the simulator does not model."""

_DNS1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")


def _dns1035(value: str) -> str | None:
    """Why ``value`` is not a DNS-1035 label (Kubernetes ``validation.IsDNS1035Label``), or None."""
    if len(value) > 63:
        return f"{value!r} is longer than 63 characters"
    if not _DNS1035.fullmatch(value):
        return (f"{value!r} is not a DNS-1035 label (lower-case letters, digits and '-', starting with a letter and "
                "ending with a letter or digit)")
    return None


class JobSetKinds:
    """The JobSet reader of the loader's builder (:mod:`.load`'s ``_Builder``; uses
    :meth:`~.pods.PodKinds._job`)."""

    def _jobset(self, doc: Document) -> list[Job]:
        """The jobs of one JobSet (module docstring), in the order of its replicated jobs.

        Raises:
            ScenarioError: what JobSet's webhook or the API server refuses, or a bad field.
        """
        d = doc.data
        rjs = (d.get("spec") or {}).get("replicatedJobs") or []
        if not rjs:
            raise error_at(doc, ("spec",), "a JobSet needs at least one replicatedJob (one with none runs no pod)")
        if len(rjs) > MAX_ROLES:
            raise error_at(doc, ("spec", "replicatedJobs", MAX_ROLES), f"at most {MAX_ROLES} replicatedJobs (Kueue "
                           f"admits a JobSet as one Workload of one pod set each, and a Workload has at most "
                           f"{MAX_ROLES}), got {len(rjs)}")
        name = d["metadata"]["name"]
        seen: set[str] = set()
        for i, rj in enumerate(rjs):
            path = ("spec", "replicatedJobs", i)
            if rj["name"] in seen:
                raise error_at(doc, path + ("name",), f"Duplicate value {rj['name']!r} (replicatedJobs are a map keyed "
                               "by name)")
            seen.add(rj["name"])
            child = f"{name}-{rj['name']}-{max(int(rj.get('replicas', 1)) - 1, 0)}"
            why = _dns1035(child)
            if why:
                raise error_at(doc, path + ("name",), f"the child Job name {why}; JobSet names its Jobs "
                               "<JobSet>-<replicatedJob>-<index>")
            why = _dns1035(rj.get("groupName", "default"))
            if why:
                raise error_at(doc, path + ("groupName",), why)
        for i, target in enumerate((get_field(d, ("spec", "successPolicy")) or {}).get("targetReplicatedJobs") or []):
            if target not in seen:
                raise error_at(doc, ("spec", "successPolicy", "targetReplicatedJobs", i), f"invalid replicatedJob name "
                               f"{target!r}: it does not appear in spec.replicatedJobs")
        _check_failure_policy(doc, seen)
        _check_coordinator(doc)
        first_note = len(self.sc.unsupported)
        for mpath in [("metadata",)] + [("spec", "replicatedJobs", i, "template", "metadata") for i in range(len(rjs))]:
            for key in EXCLUSIVE_KEYS:
                if key in ((get_field(d, mpath) or {}).get("annotations") or {}):
                    self.sc.unsupported.append(f"{source_of(doc, mpath + ('annotations', key))}: {key}: JobSet's "
                                               "exclusive placement is not modelled (its controller adds pod affinity "
                                               "and anti-affinity per topology domain)")
        jobs = [self._job(doc, ("spec", "replicatedJobs", i, "template")) for i in range(len(rjs))]
        self.sc.unsupported[first_note:] = list(dict.fromkeys(self.sc.unsupported[first_note:]))   # once per JobSet
        if len({j.priority for j in jobs}) > 1:
            found = ", ".join(f"{rj['name']} {j.priority}" for rj, j in zip(rjs, jobs))
            self.sc.unsupported.append(f"{source_of(doc, ('spec', 'replicatedJobs'))}: roles of different pod "
                                       f"priorities ({found}) are not modelled (Kueue gives the Workload one "
                                       "priority, kube-scheduler preempts with each pod's own); give every "
                                       "replicatedJob's pods the same priorityClassName")
        if len(jobs) == 1:
            return jobs
        ns = d["metadata"].get("namespace", "default")
        gang = name if ns == "default" else f"{ns}/{name}"
        self.sc.sources[gang] = source_of(doc)
        return [replace(j, role=GangRole(gang, rj["name"], i, len(jobs))) for i, (rj, j) in enumerate(zip(rjs, jobs))]

    def _role_labels(self, doc: Document, metas: tuple[tuple, ...]) -> None:
        """Refuse, on a replicated job's template (``metas``: its Job and pod template
        metadata), the labels Kueue and coscheduling read on the JobSet or a Pod only."""
        for mpath in metas:
            labels = (get_field(doc.data, mpath) or {}).get("labels") or {}
            for key in (QUEUE_KEY, WPC_LABEL):
                if key in labels:
                    self.sc.unsupported.append(f"{source_of(doc, mpath + ('labels', key))}: {key} on a replicatedJob's "
                                               "template is not modelled: Kueue reads a JobSet's queue and priority "
                                               "class from the JobSet's own metadata.labels; put it there")
            if POD_GROUP_LABEL in labels:
                self.sc.unsupported.append(f"{source_of(doc, mpath + ('labels', POD_GROUP_LABEL))}: a JobSet's pods "
                                           "in a coscheduling PodGroup are not modelled (the simulator gangs a "
                                           "JobSet's roles itself)")


_RULE_NAME = re.compile(r"[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?")
JOB_FAILURE_REASONS = ("BackoffLimitExceeded", "DeadlineExceeded", "FailedIndexes", "MaxFailedIndexesExceeded",
                       "PodFailurePolicy")
"""The Job failure reasons a failure policy rule may name (``validOnJobFailureReasons`` in
JobSet v0.11.1 ``pkg/webhooks/jobset_webhook.go``; batch/v1's ``JobReason*`` constants)."""


def _check_failure_policy(doc: Document, names: set[str]) -> None:
    """What JobSet's webhook refuses in ``spec.failurePolicy.rules`` (v0.11.1
    ``validateFailurePolicy``): a rule name of 1..128 characters matching
    ``^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$``, used once; target replicatedJobs that exist;
    known Job failure reasons. (The policy itself is inert: simulated pods never fail.)

    Raises:
        ScenarioError: at the first such field.
    """
    rules = get_field(doc.data, ("spec", "failurePolicy", "rules")) or []
    first: dict[str, int] = {}
    for i, rule in enumerate(rules):
        path = ("spec", "failurePolicy", "rules", i)
        name = rule["name"]
        if not 1 <= len(name) <= 128 or not _RULE_NAME.fullmatch(name):
            raise error_at(doc, path + ("name",), f"invalid failure policy rule name {name!r}: 1 to 128 characters, a "
                           "letter first, then letters, digits or '_,:', ending with a letter, digit or '_'")
        if name in first:
            raise error_at(doc, path + ("name",), f"rule names are not unique: rules {first[name]} and {i} are both "
                           f"named {name!r}")
        first[name] = i
        for k, target in enumerate(rule.get("targetReplicatedJobs") or []):
            if target not in names:
                raise error_at(doc, path + ("targetReplicatedJobs", k), f"invalid replicatedJob name {target!r}: it "
                               "does not appear in spec.replicatedJobs")
        for k, reason in enumerate(rule.get("onJobFailureReasons") or []):
            if reason not in JOB_FAILURE_REASONS:
                raise error_at(doc, path + ("onJobFailureReasons", k), f"invalid job failure reason {reason!r}; "
                               f"expected one of: {', '.join(JOB_FAILURE_REASONS)}")


def _check_coordinator(doc: Document) -> None:
    """What JobSet's webhook refuses in ``spec.coordinator`` (v0.11.1 ``validateCoordinator``):
    a replicatedJob that does not exist, a ``jobIndex`` outside ``0..replicas-1``, a Job not in
    Indexed completion mode with ``completions`` set, a ``podIndex`` outside
    ``0..completions-1``. (The coordinator is inert: it only labels the pods.)

    Raises:
        ScenarioError: at the first such field.
    """
    coord = get_field(doc.data, ("spec", "coordinator"))
    if coord is None:
        return
    base = ("spec", "coordinator")
    rjs = doc.data["spec"]["replicatedJobs"]
    rj = next((r for r in rjs if r["name"] == coord["replicatedJob"]), None)
    if rj is None:
        raise error_at(doc, base + ("replicatedJob",), f"coordinator replicatedJob {coord['replicatedJob']!r} does not "
                       "exist in spec.replicatedJobs")
    replicas = rj.get("replicas", 1)
    job_index = coord.get("jobIndex", 0)
    if not 0 <= job_index < replicas:
        raise error_at(doc, base + ("jobIndex",), f"coordinator job index {job_index} is invalid for replicatedJob "
                       f"{rj['name']!r} of {replicas} replicas (expected 0..{replicas - 1})")
    spec = get_field(rj, ("template", "spec")) or {}
    completions = spec.get("completions")
    if spec.get("completionMode") != "Indexed" or completions is None:
        raise error_at(doc, base + ("replicatedJob",), "the coordinator's Job must be in completionMode Indexed with "
                       f"completions set (replicatedJob {rj['name']!r})")
    pod_index = coord.get("podIndex", 0)
    if not 0 <= pod_index < completions:
        raise error_at(doc, base + ("podIndex",), f"coordinator pod index {pod_index} is invalid for replicatedJob "
                       f"{rj['name']!r} of {completions} completions (expected 0..{completions - 1})")


__all__ = ["EXCLUSIVE_KEYS", "JOB_FAILURE_REASONS", "JobSetKinds"]
