"""Reading the workload kinds of a scenario: Pods, batch Jobs and PodGroups (gangs), into
:class:`~lab01_cluster_sim.model.Job` records (:class:`PodKinds`, part of the loader's builder);
a JobSet's replicated jobs are read by the same Job reader (:mod:`.jobset`).

A pod's request is the sum over its containers, or the largest init container if bigger
(Kubernetes' effective request); a request defaults to its limit.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from typing import Any

from lab01_cluster_sim.admission.plugin import QUEUE_KEY
from lab01_cluster_sim.admission.quantity import CPU, GPU, MEMORY, resource_value
from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.model import MAX_COUNT, MAX_ROLES, MILLI_PER_GPU, GangRole, Job
from lab01_cluster_sim.scenario.fields import (COURSE_KEYS, DO_NOT_DISRUPT, DURATION, GPU_MILLI, HAMI_GPU_POLICY,
                                               IMAGE_GIB, KNOWN_RESOURCES, MAX_SECONDS, MIB, MIN_PARALLELISM,
                                               POD_GROUP_LABEL, SUBMIT_TIME, WPC_LABEL, check_course_keys,
                                               check_extended, error_at, get_field, source_of)
from lab01_cluster_sim.scenario.podsched import creation_timestamp, read_pod_scheduling
from lab01_cluster_sim.scenario.validate import object_name
from lab01_cluster_sim.scenario.yamlio import Document, ScenarioError, format_path, where


def _last_with(data: dict, metas: tuple[tuple, ...], key: str) -> tuple:
    """The last of ``metas`` (metadata paths, later ones overriding) whose annotations hold
    ``key``; the first when none does."""
    for mpath in reversed(metas):
        if key in (get_field(data, mpath + ("annotations",)) or {}):
            return mpath
    return metas[0]


_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
MAX_IMAGE_GIB = 1024
"""Largest ``lab01.course/image-gib`` read (1 TiB; a container image is rarely above tens of GiB)."""


def _decimal(text: Any, parse):
    """``parse(text)`` (``int`` or ``float``) for a plain ASCII number only: Python's own
    parsers also take ``1_000`` and non-ASCII digits (``'１００'``), which no Kubernetes
    quantity or annotation reader does.

    Raises:
        ValueError: not a string of ASCII characters without ``_``, or not a number.
    """
    if not isinstance(text, str) or not text.isascii() or "_" in text:
        raise ValueError(text)
    return parse(text)


class PodKinds:
    """The workload kinds' readers of the loader's builder (:class:`lab01_cluster_sim.scenario.load`'s
    ``_Builder``, which keeps the documents and the scenario being built)."""

    def _jobs(self) -> None:
        sc = self.sc
        groups: dict[tuple[str, str], Document] = {}
        for doc in self.by_kind("PodGroup"):
            meta = doc.data["metadata"]
            groups[(meta.get("namespace", "default"), meta["name"])] = doc
        members: dict[tuple[str, str], list[tuple[Document, Job]]] = {key: [] for key in groups}
        jobs: list[Job] = []
        for doc in self.by_kind("Pod", "Job"):
            job = self._job(doc)
            meta = doc.data["metadata"]
            group = (meta.get("labels") or {}).get(POD_GROUP_LABEL)
            if group is not None:
                key = (meta.get("namespace", "default"), group)
                if key not in groups:
                    raise error_at(doc, ("metadata", "labels", POD_GROUP_LABEL),
                               f"PodGroup {group!r} is not defined in namespace {key[0]}")
                if doc.data["kind"] != "Pod":
                    raise error_at(doc, ("metadata", "labels", POD_GROUP_LABEL), "only Pods join a PodGroup")
                members[key].append((doc, job))
                continue
            jobs.append(job)
        for key, doc in groups.items():
            jobs.extend(self._gang(doc, members[key]))
        for doc in self.by_kind("JobSet"):
            jobs.extend(self._jobset(doc))   # scenario.jobset.JobSetKinds
        ids = set()
        for job in jobs:
            if job.job_id in ids:
                raise ScenarioError(f"{sc.sources[job.job_id]}: two workloads have the id {job.job_id!r}")
            ids.add(job.job_id)
        sc.jobs = sorted(jobs, key=lambda j: j.submit_time)

    def _annotation_seconds(self, doc: Document, meta_path: tuple, key: str, default: float | None) -> float:
        meta = get_field(doc.data, meta_path) or {}
        text = (meta.get("annotations") or {}).get(key)
        path = meta_path + ("annotations", key)
        if text is None:
            if default is None:
                raise error_at(doc, meta_path + ("annotations",), f"annotation {key} missing; give the run time in seconds "
                           "(or 'inf' for a service that never ends)")
            return default
        try:
            value = _decimal(text, float)
        except ValueError:
            raise error_at(doc, path, f"expected a number of seconds, got {text!r}") from None
        if math.isinf(value) and text.strip().lower().lstrip("+") not in ("inf", "infinity"):
            raise error_at(doc, path, f"{text!r} is too large a number of seconds (write 'inf' for a service that "
                       "never ends)")
        if math.isnan(value) or value < 0 or (key == SUBMIT_TIME and math.isinf(value)):
            raise error_at(doc, path, f"expected a number of seconds >= 0{'' if key == DURATION else ' (finite)'}, "
                       f"got {text!r}")
        if math.isfinite(value) and value > MAX_SECONDS:
            service = " or 'inf' for a service that never ends" if key == DURATION else ""
            raise error_at(doc, path, f"expected a number of seconds from 0 to {MAX_SECONDS:,.0f} (about 31.7 years)"
                       f"{service}, got {text!r}")
        return value

    def _job(self, doc: Document, base: tuple = ()) -> Job:
        """One :class:`Job` from a Pod, a batch Job, or (``base`` given) the Job template at
        ``base`` of a JobSet (``spec.replicatedJobs[i].template``, a ``JobTemplateSpec``: the
        same ``metadata`` and ``spec`` as a batch Job, read by the same rules). For a JobSet's
        role the workload's name, namespace, queue and WorkloadPriorityClass labels and
        creation time are the JobSet's (Kueue reads them from the JobSet object); the course
        annotations of the template's ``metadata`` override the JobSet's, except the submit
        time, which only the JobSet gives (its roles arrive together)."""
        d = doc.data
        kind = d["kind"]
        meta = d["metadata"]
        name = meta["name"]
        ns = meta.get("namespace", "default")
        role = bool(base)
        metas: tuple[tuple, ...] = (("metadata",),) + ((base + ("metadata",),) if role else ())
        """metadata the workload's annotations come from, the later overriding the earlier"""
        if kind == "Pod":
            pod_path: tuple = ("spec",)
            workers = 1
            checked: tuple[tuple, ...] = metas
        else:
            pod_path = base + ("spec", "template", "spec")
            spec = get_field(d, base + ("spec",)) or {}
            workers = 1 if spec.get("parallelism") is None else int(spec["parallelism"])   # the API's default
            completions = spec.get("completions")
            cpath = format_path(base + ("spec", "completions"))
            if completions is not None and 1 <= completions < workers:
                # the Job controller runs at most the completions still needed (Kubernetes docs,
                # "Jobs", Controlling parallelism) and Kueue counts min(parallelism, completions)
                # pods (kueue pkg/controller/jobs/job/job_controller.go podsCount; JobSet's
                # jobset_controller.go PodsCountPerReplica): one wave of `completions` pods
                workers = completions
            elif completions is not None and completions > workers:
                self.sc.unsupported.append(f"{source_of(doc, base + ('spec', 'completions'))}: {cpath}: completions "
                                           f"({completions}) > parallelism ({workers}): a Job running in waves is not "
                                           "modelled")
            elif completions == 0:
                self.sc.unsupported.append(f"{source_of(doc, base + ('spec', 'completions'))}: {cpath}: completions "
                                           "0 (a Job complete without running a pod) is not modelled")
            if workers < 1:
                raise error_at(doc, base + ("spec", "parallelism"), "expected >= 1 (a Job with parallelism 0 never runs)")
            replicas = get_field(d, base[:-1] + ("replicas",)) if role else 1
            replicas = 1 if replicas is None else replicas
            if replicas < 1:   # Kueue counts replicas x parallelism pods (a role of none never runs)
                raise error_at(doc, base[:-1] + ("replicas",), "expected >= 1 (a replicatedJob of 0 replicas never runs)")
            if workers * replicas > MAX_COUNT:   # the model's bound, named at the field rather than at the template
                what = f"replicas x parallelism ({replicas:,} x {workers:,})" if role else f"{workers:,}"
                at = base[:-1] + ("replicas",) if replicas > workers else base + ("spec", "parallelism")  # the larger
                raise error_at(doc, at, f"expected at most {MAX_COUNT:,} workers, got {what}")
            workers *= replicas   # Kueue's podsCount: replicas x parallelism (jobset_controller.go)
            checked = metas + (base + ("spec", "template", "metadata"),)
        pod = get_field(d, pod_path)
        if not isinstance(pod, dict):   # the schemas allow null; the API server needs the pods' spec
            raise error_at(doc, pod_path, "expected the pods' spec (an object with containers), got none")
        do_not_disrupt = False
        for mpath in checked:
            check_course_keys(doc, mpath, get_field(d, mpath) or {})
            annotations = (get_field(d, mpath) or {}).get("annotations") or {}
            pick = annotations.get(HAMI_GPU_POLICY)
            if pick is not None and pick != self.sc.spec.get("simulation", {}).get("gpuSchedulerPolicy"):
                self.sc.unsupported.append(f"{source_of(doc, mpath + ('annotations', HAMI_GPU_POLICY))}: a per-pod "
                                           f"{HAMI_GPU_POLICY} is not modelled; set the Scenario's "
                                           f"spec.simulation.gpuSchedulerPolicy: {pick} for every pod")
            if DO_NOT_DISRUPT in annotations and self.sc.node_pools:
                if annotations[DO_NOT_DISRUPT] == "true":   # blocks consolidation of the pod's node
                    do_not_disrupt = True
                else:
                    self.sc.unsupported.append(f"{source_of(doc, mpath + ('annotations', DO_NOT_DISRUPT))}: "
                                               f"{DO_NOT_DISRUPT}: {annotations[DO_NOT_DISRUPT]!r}: only \"true\" is "
                                               "modelled (a duration ending the protection is not)")
        if kind != "Pod":   # read on the Job's (JobSet's, template's) metadata only: never accepted and ignored
            tpath = checked[-1] + ("annotations",)
            for key in get_field(d, tpath) or {}:
                if key in COURSE_KEYS:
                    dest = metas[0] if key == SUBMIT_TIME else metas[-1]
                    raise error_at(doc, tpath + (key,), f"{key} is read on the workload's metadata, not on its pod "
                                   f"template; move it to {format_path(dest + ('annotations',))}")
        requests = self._pod_requests(doc, pod_path, pod)
        extended = {r: v for r, v in requests.items() if r not in KNOWN_RESOURCES}
        labels = {**(meta.get("labels") or {})}
        if kind == "Job":
            labels.update(get_field(d, ("spec", "template", "metadata", "labels")) or {})
        if role:
            self._role_labels(doc, checked[1:])
        duration = self._annotation_seconds(doc, _last_with(d, metas, DURATION), DURATION, None)
        if role and SUBMIT_TIME in (get_field(d, base + ("metadata", "annotations")) or {}):
            raise error_at(doc, base + ("metadata", "annotations", SUBMIT_TIME), "a JobSet's roles arrive together: "
                           f"give {SUBMIT_TIME} on the JobSet's metadata.annotations")
        submit = self._annotation_seconds(doc, ("metadata",), SUBMIT_TIME, 0.0)
        gpus = requests.get(GPU, 0)
        milli_meta = _last_with(d, metas, GPU_MILLI)
        milli_text = (get_field(d, milli_meta + ("annotations",)) or {}).get(GPU_MILLI)
        gpu_milli = MILLI_PER_GPU if gpus else 0
        if milli_text is not None:
            apath = milli_meta + ("annotations", GPU_MILLI)
            if gpus != 1:
                raise error_at(doc, apath, "a shared GPU share needs nvidia.com/gpu: 1")
            try:
                gpu_milli = _decimal(milli_text, int)
            except ValueError:
                raise error_at(doc, apath, f"expected milli-GPU 1..1000, got {milli_text!r}") from None
        priority = self.default_priority
        pcn = pod.get("priorityClassName")
        if pcn is not None:
            if pcn not in self.priority:
                raise error_at(doc, pod_path + ("priorityClassName",), f"PriorityClass {pcn!r} is not defined")
            priority = self.priority[pcn]
        wpc = labels.get(WPC_LABEL)
        if wpc is not None:
            if wpc not in self.sc.kueue.priority_classes:
                raise error_at(doc, ("metadata", "labels", WPC_LABEL), f"WorkloadPriorityClass {wpc!r} is not defined")
            priority = self.sc.kueue.priority_classes[wpc]
        extras: dict[str, Any] = {"namespace": ns, "kind": kind}
        if extended:
            extras["extended_requests"] = extended
        if do_not_disrupt:
            extras["do_not_disrupt"] = True
        grace = pod.get("terminationGracePeriodSeconds")
        if grace is not None:   # Kubernetes' default 30 s is not applied: without it, freed at once
            from lab01_cluster_sim.model import TERMINATION_GRACE

            if not 0 <= grace <= MAX_SECONDS:   # the schema allows any int64; bounded as the annotations are
                raise error_at(doc, pod_path + ("terminationGracePeriodSeconds",),
                               f"expected 0 to {MAX_SECONDS:,.0f} s (about 31.7 years), got {grace}")
            extras[TERMINATION_GRACE] = float(grace)
        models, sched = read_pod_scheduling(doc, pod_path, pod, self.sc.unsupported, bool(self.sc.node_pools))
        extras.update(sched)
        stamp = creation_timestamp(doc)
        if stamp is not None:
            extras["creation_timestamp"] = stamp
        extras["position"] = self.position[id(doc)]
        queue = labels.get(QUEUE_KEY)
        if queue is not None:
            extras[QUEUE_KEY] = queue
            known = {(q.namespace, q.name) for q in self.sc.kueue.local_queues}
            if self.sc.kueue and (ns, queue) not in known:
                lpath = (("metadata", "labels", QUEUE_KEY) if QUEUE_KEY in (meta.get("labels") or {})
                         else ("spec", "template", "metadata", "labels", QUEUE_KEY))
                here = sorted(q for n, q in known if n == ns)
                raise error_at(doc, lpath, f"LocalQueue {queue!r} is not defined in namespace {ns} (LocalQueues there: "
                           f"{', '.join(here) or 'none'})")
        for mpath in metas:
            minp = (get_field(d, mpath + ("annotations",)) or {}).get(MIN_PARALLELISM)
            if minp is None:
                continue
            if role:   # Kueue's JobSet integration has no partial admission (jobset_controller.go PodSets)
                self.sc.unsupported.append(f"{source_of(doc, mpath + ('annotations', MIN_PARALLELISM))}: "
                                           f"{MIN_PARALLELISM} on a JobSet is not modelled (Kueue reads it on a batch "
                                           "Job only; a JobSet is admitted whole)")
                continue
            try:
                extras["min_count"] = int(minp)
            except ValueError:
                raise error_at(doc, ("metadata", "annotations", MIN_PARALLELISM), f"expected an integer, got {minp!r}") from None
            if not 1 <= extras["min_count"] < workers:
                raise error_at(doc, ("metadata", "annotations", MIN_PARALLELISM),
                           f"expected 1 <= minimum < parallelism ({workers}), got {minp}")
        image = (pod.get("containers") or [{}])[0].get("image", "")
        gib_meta = _last_with(d, metas, IMAGE_GIB)
        gib_text = (get_field(d, gib_meta + ("annotations",)) or {}).get(IMAGE_GIB, "1")
        try:
            gib = _decimal(gib_text, float)
        except ValueError:
            gib = math.nan
        if not 0 <= gib <= MAX_IMAGE_GIB:   # NaN fails too; the autoscaler's pull time is image x 1024 / rate
            raise error_at(doc, gib_meta + ("annotations", IMAGE_GIB), f"expected a size in GiB from 0 to "
                           f"{MAX_IMAGE_GIB:,}, got {gib_text!r}")
        if role:
            name = f"{name}-{get_field(d, base[:-1] + ('name',))}"   # the replicatedJob's pod set, as Kueue names it
        job_id = name if ns == "default" else f"{ns}/{name}"
        try:
            job = Job(job_id, submit, duration, gpus, gpu_milli, requests.get(CPU, 0), -(-requests.get(MEMORY, 0) // MIB),
                      models, priority, workers, ns, extras)
        except InputError as exc:
            raise error_at(doc, pod_path, str(exc)) from None
        self.sc.sources[job_id] = source_of(doc, base[:-1])
        self.sc.pod_images[job_id] = (image, gib, labels.get("app", meta["name"]))
        return job

    def _pod_requests(self, doc: Document, pod_path: tuple, pod: dict) -> dict[str, int]:
        total: dict[str, int] = {}
        init_max: dict[str, int] = {}
        names: set[str] = set()
        for group, agg in (("containers", "sum"), ("initContainers", "max")):
            for ci, c in enumerate(pod.get(group, [])):
                # the API server's rules (kubernetes pkg/apis/core/validation/validation.go,
                # validateContainerCommon): a DNS-1123 label, unique among the pod's containers
                cname = c.get("name")
                if not isinstance(cname, str) or not _DNS1123_LABEL.fullmatch(cname) or len(cname) > 63:
                    raise error_at(doc, pod_path + (group, ci, "name"), f"{cname!r} is not a valid container name: a "
                                   "DNS-1123 label (at most 63 lower-case letters, digits and '-', starting and ending "
                                   "with a letter or digit)")
                if cname in names:
                    raise error_at(doc, pod_path + (group, ci, "name"), f"Duplicate value {cname!r} (container names "
                                   "are unique among a pod's containers and init containers)")
                names.add(cname)
                res = c.get("resources", {})
                check_extended(doc, pod_path + (group, ci, "resources"), res)
                req = dict(res.get("limits", {}))
                req.update(res.get("requests", {}))    # a request defaults to its limit
                for rname, value in req.items():
                    path = pod_path + (group, ci, "resources", "requests" if rname in res.get("requests", {}) else "limits",
                                       rname)
                    if rname not in KNOWN_RESOURCES and not (self.sc.node_pools and "/" in rname):
                        self.sc.unsupported.append(f"{source_of(doc, path)}: resource {rname} is not modelled")
                        continue   # with NodePools, an extended resource no instance type offers keeps the pod Pending
                    amount = resource_value(rname, value, f"{where(doc.file, doc.pos(path))}: {object_name(doc.data)}: "
                                            f"{format_path(path)}")
                    if agg == "sum":
                        total[rname] = total.get(rname, 0) + amount
                    else:
                        init_max[rname] = max(init_max.get(rname, 0), amount)
        for rname, amount in init_max.items():
            total[rname] = max(total.get(rname, 0), amount)
        total.pop("ephemeral-storage", None)
        return total

    def _gang(self, doc: Document, members: list[tuple[Document, Job]]) -> list[Job]:
        """The job(s) of a coscheduling PodGroup (kubernetes-sigs/scheduler-plugins
        ``apis/scheduling/v1alpha1``): its Pods, placed all-or-nothing (the coscheduling
        plugin's Permit), arriving when the last one exists.

        Pods of one shape (requests, GPU share and models, and every scheduling constraint
        the simulator reads: nodeSelector, affinity, tolerations, grace period) make one job of
        as many workers, id the PodGroup's, priority its highest Pod's. Pods of several shapes make a
        multi-role gang (:class:`~lab01_cluster_sim.model.GangRole`, gang: the PodGroup's id):
        one role per shape, in the order of each shape's first Pod in the input; the role is
        named after that first Pod, its job id ``<PodGroup>-<first Pod's name>``; a role's run
        time is its longest Pod's. Roles of different priorities and more than
        :data:`~lab01_cluster_sim.model.MAX_ROLES` shapes are refused as not modelled (as a
        JobSet's, :mod:`.jobset`)."""
        name = doc.data["metadata"]["name"]
        ns = doc.data["metadata"].get("namespace", "default")
        min_member = doc.data["spec"]["minMember"]
        if not members:
            raise error_at(doc, ("metadata", "name"), f"no Pod carries the label {POD_GROUP_LABEL}: {name}")
        jobs = [j for _, j in members]
        if min_member != len(jobs):
            self.sc.unsupported.append(f"{source_of(doc, ('spec', 'minMember'))}: minMember {min_member} < {len(jobs)} pods "
                                       "(an elastic gang) is not yet placed by the engine; the current simulator "
                                       "places gangs all-or-nothing")
        job_id = name if ns == "default" else f"{ns}/{name}"
        roles: dict[str, list[Job]] = {}
        for j in jobs:
            roles.setdefault(_shape(j), []).append(j)
        groups = list(roles.values())
        if len(groups) > MAX_ROLES:
            self.sc.unsupported.append(f"{source_of(doc)}: Pods of {len(groups)} shapes in one gang are not modelled "
                                       f"(at most {MAX_ROLES} roles, Kueue's limit of pod sets per Workload)")
            groups = [jobs]
        if len(groups) > 1 and len({max(j.priority for j in g) for g in groups}) > 1:
            found = ", ".join(f"{g[0].job_id} {max(j.priority for j in g)}" for g in groups)
            self.sc.unsupported.append(f"{source_of(doc)}: Pods of different priorities in one gang ({found}) are not "
                                       "modelled; give every Pod of the group the same priorityClassName")
        submit = max(j.submit_time for j in jobs)
        out = []
        for index, group in enumerate(groups):
            first = group[0]
            extras = dict(first.extras)
            extras["pods"] = tuple(j.job_id for j in group)
            extras["position"] = self.position[id(doc)]
            role = None
            rid = job_id
            if len(groups) > 1:
                role_name = first.job_id.rsplit("/", 1)[-1]
                role = GangRole(job_id, role_name, index, len(groups))
                rid = f"{job_id}-{role_name}"
            out.append(replace(first, job_id=rid, workers=len(group), submit_time=submit,
                               duration=max(j.duration for j in group), priority=max(j.priority for j in group),
                               extras=extras, role=role))
            self.sc.sources[rid] = source_of(doc)
            self.sc.pod_images[rid] = self.sc.pod_images[first.job_id]
        return out


def _shape(job: Job) -> str:
    """What makes two Pods of a gang the same role: every field of the job but its id,
    arrival, run time and priority (a gang's is its highest Pod's; roles must agree), and the
    extras that only name or order it."""
    extras = sorted((k, repr(v)) for k, v in job.extras.items() if k not in ("position", "creation_timestamp"))
    return repr((job.gpus_per_worker, job.gpu_milli, job.cpu_milli, job.memory_mib, job.gpu_models, job.tenant, extras))
