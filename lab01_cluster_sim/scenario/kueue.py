"""Reading the Kueue kinds of a scenario: ResourceFlavor, ClusterQueue, Cohort, LocalQueue,
WorkloadPriorityClass, PriorityClass and Kueue's Configuration (waitForPodsReady), into
:mod:`lab01_cluster_sim.admission` records (:class:`KueueKinds`, part of the loader's builder).
"""

from __future__ import annotations

import re

from lab01_cluster_sim.admission import api as kq
from lab01_cluster_sim.scenario.podsched import read_taint, read_toleration
from lab01_cluster_sim.admission.preemption import FairSharingStrategy
from lab01_cluster_sim.admission.quantity import parse_quantity, resource_value
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.scenario.fields import error_at, parse_duration, source_of
from lab01_cluster_sim.scenario.validate import object_name
from lab01_cluster_sim.scenario.yamlio import Document, ScenarioError, format_path, where

_OWNER = re.compile(r"(ResourceFlavor|ClusterQueue|LocalQueue|Cohort)/([^:\s]+): (.*)")
_PATH_PART = re.compile(r"([A-Za-z][A-Za-z0-9]*)|\[(\d+)\]")


def _field_path(text: str) -> tuple:
    """``"spec.resourceGroups[0].flavors[1] (h100).resources: ..."`` -> the path
    ``("spec", "resourceGroups", 0, "flavors", 1, "resources")``; () when the text does not
    start with a field path."""
    head = re.sub(r" \([^)]*\)", "", text.split(": ", 1)[0])
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9]*(\.[A-Za-z][A-Za-z0-9]*|\[\d+\])*", head):
        return ()
    return tuple(int(i) if i else k for k, i in _PATH_PART.findall(head))


class KueueKinds:
    """The Kueue kinds' readers of the loader's builder (:class:`lab01_cluster_sim.scenario.load`'s
    ``_Builder``, which keeps the documents and the scenario being built)."""

    def _priority_classes(self) -> None:
        self.priority: dict[str, int] = {}
        self.default_priority = 0
        for doc in self.by_kind("PriorityClass"):
            d = doc.data
            self.priority[d["metadata"]["name"]] = int(d["value"])
            if d.get("globalDefault"):
                self.default_priority = int(d["value"])
        for doc in self.by_kind("WorkloadPriorityClass"):
            self.sc.kueue.priority_classes[doc.data["metadata"]["name"]] = int(doc.data["value"])

    # -- Kueue ---------------------------------------------------------------------------------------
    def _kueue(self) -> None:
        k = self.sc.kueue
        for doc in self.by_kind("ResourceFlavor"):
            spec = doc.data.get("spec", {})
            k.flavors.append(kq.ResourceFlavor(
                doc.data["metadata"]["name"], dict(spec.get("nodeLabels", {})),
                tuple(read_taint(doc, ("spec", "nodeTaints", i), t) for i, t in enumerate(spec.get("nodeTaints", []))),
                tuple(read_toleration(doc, ("spec", "tolerations", i), t)
                      for i, t in enumerate(spec.get("tolerations", [])))))
        for doc in self.by_kind("ClusterQueue"):
            spec = doc.data["spec"]
            name = doc.data["metadata"]["name"]
            p = spec.get("preemption", {})
            bwc = p.get("borrowWithinCohort", {})
            ff = spec.get("flavorFungibility", {})
            cq = kq.ClusterQueue(
                name, self._resource_groups(doc, spec.get("resourceGroups", [])), spec.get("cohortName"),
                kq.QueueingStrategy(spec.get("queueingStrategy", "BestEffortFIFO")),
                kq.Preemption(kq.PreemptionPolicy(p.get("withinClusterQueue", "Never")),
                              kq.PreemptionPolicy(p.get("reclaimWithinCohort", "Never")),
                              kq.PreemptionPolicy(bwc.get("policy", "Never")), bwc.get("maxPriorityThreshold")),
                kq.FlavorFungibility(kq.FungibilityPolicy(ff.get("whenCanBorrow", "MayStopSearch")),
                                     kq.FungibilityPolicy(ff.get("whenCanPreempt", "TryNextFlavor")),
                                     kq.FungibilityPreference(ff["preference"]) if "preference" in ff else None),
                self._weight(doc, spec))
            # the CRD's rule runs on the defaulted object: an unset whenCanPreempt is TryNextFlavor already
            if "preference" in ff and (cq.flavor_fungibility.when_can_borrow.value,
                                       cq.flavor_fungibility.when_can_preempt.value) != ("TryNextFlavor",) * 2:
                raise error_at(doc, ("spec", "flavorFungibility", "preference"), "preference can only be set when both "
                           "whenCanBorrow and whenCanPreempt are TryNextFlavor (the CRD's validation rule)")
            if p.get("reclaimWithinCohort", "Never") == "Never" and bwc.get("policy", "Never") != "Never":
                raise error_at(doc, ("spec", "preemption"), "reclaimWithinCohort=Never and borrowWithinCohort.policy!=Never "
                           "(the CRD refuses this combination)")
            self._check(doc, lambda cq=cq: kq.validate_resource_groups(f"ClusterQueue/{cq.name}", cq.resource_groups,
                                                                      cq.cohort is not None))
            k.cluster_queues.append(cq)
        for doc in self.by_kind("Cohort"):
            spec = doc.data.get("spec", {})
            k.cohorts.append(kq.Cohort(doc.data["metadata"]["name"], spec.get("parentName"),
                                       self._resource_groups(doc, spec.get("resourceGroups", [])), self._weight(doc, spec)))
        for doc in self.by_kind("LocalQueue"):
            meta = doc.data["metadata"]
            k.local_queues.append(kq.LocalQueue(meta["name"], meta.get("namespace", "default"),
                                                doc.data["spec"]["clusterQueue"]))
        for doc in self.by_kind("Configuration"):
            strategies = doc.data.get("fairSharing", {}).get("preemptionStrategies")
            if "fairSharing" in doc.data:
                k.fair_sharing = True
                if strategies:
                    k.strategies = tuple(FairSharingStrategy(s) for s in strategies)
            if "waitForPodsReady" in doc.data:
                k.wait_for_pods_ready = self._wait_for_pods_ready(doc)
        if k:
            first = next(iter(self.by_kind("ClusterQueue", "LocalQueue", "ResourceFlavor", "Cohort")))
            self._check(first, k.controller)   # cross references, quota rules, cohort cycles

    def _wait_for_pods_ready(self, doc: Document):
        """``waitForPodsReady`` -> :class:`~lab01_cluster_sim.admission.backoff.WaitForPodsReady`
        (its presence enables it in v1beta2). ``blockAdmission: true`` and a
        ``recoveryTimeout`` other than 0s are listed as not modelled."""
        from lab01_cluster_sim.admission.backoff import RequeuingStrategy, WaitForPodsReady

        base = ("waitForPodsReady",)
        w = doc.data["waitForPodsReady"]
        if w.get("blockAdmission"):
            self.sc.unsupported.append(f"{source_of(doc, base + ('blockAdmission',))}: waitForPodsReady.blockAdmission "
                                       "(sequential admission) is not modelled")
        if "recoveryTimeout" in w and parse_duration(w["recoveryTimeout"]) != 0:
            self.sc.unsupported.append(f"{source_of(doc, base + ('recoveryTimeout',))}: waitForPodsReady.recoveryTimeout "
                                       "is not modelled (a ready pod never fails in the simulator; give 0s or omit)")
        rs = w.get("requeuingStrategy", {})
        try:
            return WaitForPodsReady(parse_duration(w["timeout"]), RequeuingStrategy(
                float(rs.get("backoffBaseSeconds", 60)), float(rs.get("backoffMaxSeconds", 3600)),
                rs.get("backoffLimitCount")), rs.get("timestamp", "Eviction"))
        except InputError as exc:
            raise error_at(doc, base, str(exc)) from None

    def _check(self, doc: Document, fn) -> None:
        try:
            fn()
        except InputError as exc:
            raise self._placed(str(exc), doc) from None

    def _placed(self, message: str, default: Document) -> ScenarioError:
        """The admission layer's message ``"Kind/name: field.path: what"`` placed at that
        object's file:line:column (the field's when the path is found), else at ``default``."""
        doc, path = default, ()
        m = _OWNER.match(message)
        if m:
            kind, name, rest = m.groups()
            for d in self.by_kind(kind):
                meta = d.data["metadata"]
                key = f"{meta.get('namespace', 'default')}/{meta['name']}" if kind == "LocalQueue" else meta["name"]
                if key == name:
                    doc, path = d, _field_path(rest)
                    break
        elif message.startswith("fairSharing.") and self.by_kind("Configuration"):
            doc = self.by_kind("Configuration")[0]
            path = _field_path(message)
            message = f"{object_name(doc.data)}: {message}"
        return ScenarioError(f"{where(doc.file, doc.pos(path))}: {message}")

    def _weight(self, doc: Document, spec: dict) -> float:
        fs = spec.get("fairSharing")
        if not fs or "weight" not in fs:
            return 1.0
        return float(parse_quantity(fs["weight"], f"{source_of(doc, ('spec', 'fairSharing', 'weight'))}"))

    def _resource_groups(self, doc: Document, groups: list) -> tuple[kq.ResourceGroup, ...]:
        out = []
        for gi, g in enumerate(groups):
            flavors = []
            for fi, f in enumerate(g["flavors"]):
                resources = {}
                if f["name"] in [x.name for x in flavors]:
                    raise error_at(doc, ("spec", "resourceGroups", gi, "flavors", fi, "name"), f"flavor {f['name']!r} listed "
                               "twice (the CRD keys this list by name: x-kubernetes-list-type: map)")
                for ri, r in enumerate(f["resources"]):
                    base = ("spec", "resourceGroups", gi, "flavors", fi, "resources", ri)
                    if r["name"] in resources:
                        raise error_at(doc, base + ("name",), f"resource {r['name']!r} listed twice in this flavor (the CRD "
                                   "keys this list by name: x-kubernetes-list-type: map)")

                    def val(key, r=r, base=base):
                        if key not in r:
                            return None
                        return resource_value(r["name"], r[key], f"{where(doc.file, doc.pos(base + (key,)))}: "
                                              f"{object_name(doc.data)}: {format_path(base + (key,))}")
                    resources[r["name"]] = kq.ResourceQuota(val("nominalQuota"), val("borrowingLimit"), val("lendingLimit"))
                flavors.append(kq.FlavorQuotas(f["name"], resources))
            out.append(kq.ResourceGroup(tuple(g["coveredResources"]), tuple(flavors)))
        return tuple(out)

    # -- nodes -----------------------------------------------------------------------------------------
