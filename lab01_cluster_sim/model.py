"""Records of the simulator: nodes, jobs and the end state of a job.

Units (as in the Alibaba trace): time in seconds, CPU in milli-cores, memory in MiB,
GPU share in milli-GPU (:data:`MILLI_PER_GPU` = 1000 is one whole GPU).

A job is a gang of ``workers`` identical workers; each worker (one Kubernetes pod)
asks for ``gpus_per_worker`` GPUs of ``gpu_milli`` milli-GPU each, plus CPU and memory.
A job of the paper's replay is a one-worker job. ``gpu_milli`` below 1000 means a
shared (fractional) GPU and is only allowed with ``gpus_per_worker == 1``, as in the
trace, where every multi-GPU pod asks for whole GPUs.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
import math
from typing import Any, Mapping

from lab01_cluster_sim.corev1 import Taint
from lab01_cluster_sim.errors import InputError

MILLI_PER_GPU = 1000
"""milli-GPU in one whole GPU."""


@dataclass(frozen=True, slots=True)
class Node:
    """One machine of the cluster.

    Attributes:
        name: unique node name.
        gpu_model: GPU model label (e.g. ``"G2"``, ``"T4"``, ``"H100"``); ``""`` for a CPU-only node.
        gpu_count: number of physical GPUs (0 for a CPU-only node).
        cpu_milli: allocatable CPU, milli-cores.
        memory_mib: allocatable memory, MiB.
        labels: node labels (e.g. GPU Feature Discovery's ``nvidia.com/gpu.product``).
        nvlink_island: id of the NVLink domain the node's GPUs belong to. By default each
            node is its own island (``-1`` means "the node's own island"); multi-node NVLink
            domains (e.g. a 72-GPU rack) give several nodes the same id.
        taints: the node's ``spec.taints`` (:class:`~lab01_cluster_sim.corev1.Taint`), in the
            node's order; static for the whole run.

    Raises:
        InputError: a negative quantity, one above :data:`MAX_COUNT` GPUs or
            :data:`MAX_QUANTITY` CPU/memory, or GPUs without a model.
    """

    name: str
    gpu_model: str
    gpu_count: int
    cpu_milli: int
    memory_mib: int
    labels: Mapping[str, str] = field(default_factory=dict, hash=False, compare=False)
    nvlink_island: int = -1
    taints: tuple[Taint, ...] = field(default=(), hash=False, compare=False)

    def __post_init__(self) -> None:
        for attr in ("gpu_count", "cpu_milli", "memory_mib"):
            if getattr(self, attr) < 0:
                raise InputError(f"node {self.name!r}: {attr} must be >= 0, got {getattr(self, attr)}")
        for attr, bound in (("gpu_count", MAX_COUNT), ("cpu_milli", MAX_QUANTITY), ("memory_mib", MAX_QUANTITY)):
            if getattr(self, attr) > bound:
                raise InputError(f"node {self.name!r}: {attr} must be <= {bound:,}, got {getattr(self, attr)}")
        if self.gpu_count > 0 and not self.gpu_model:
            raise InputError(f"node {self.name!r}: a node with GPUs needs a gpu_model")


MAX_COUNT = 1_000_000
"""Upper bound of a job's ``gpus_per_worker`` and ``workers`` (and of a node's GPUs)."""
MAX_QUANTITY = 2**40
"""Upper bound of a CPU (milli-cores) or memory (MiB) quantity: about 10**12, far above any
machine, and low enough that sums and products stay inside int64 (numpy would raise
OverflowError on a 20-digit number)."""
_JOB_BOUNDS = {"gpus_per_worker": MAX_COUNT, "workers": MAX_COUNT, "cpu_milli": MAX_QUANTITY,
               "memory_mib": MAX_QUANTITY}


def format_seconds(x: float) -> str:
    """A time in seconds as plain digits for messages: ``1558380.5`` -> ``"1558380.5"``,
    ``120.0`` -> ``"120"``, rounded to the millisecond; never an exponent (``:g`` would
    print ``1.55838e+06``, which reads badly and hides digits). ``inf``/``nan`` as words."""
    if x != x or x in (float("inf"), float("-inf")):
        return str(x)
    text = f"{x:.3f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


@dataclass(frozen=True, slots=True)
class GangRole:
    """A job's place in a multi-role gang: a workload whose pods come in several shapes (a
    launcher and workers, a driver and executors), such as a JobSet's replicated jobs, an
    MPIJob's launcher and workers, or Kueue's pod sets of one workload.

    Each role is one :class:`Job` (the pods of one shape, ``workers`` of them); the roles of a
    gang share one ``submit_time``. In the engine's gang mode every worker of every role is
    placed in one scheduling attempt or none is (the coscheduling plugin's Permit over all
    the gang's pods, kubernetes-sigs/scheduler-plugins ``pkg/coscheduling``), the roles
    start together, and evicting one role evicts the others (Kueue evicts a Workload as a
    whole, ``pkg/controller/jobframework/reconciler.go``; a JobSet restarts all its child
    Jobs when one fails, ``failurePolicy``); each role then completes after its own
    ``duration``. Kueue admits the gang as one Workload with one pod set per role
    (:func:`lab01_cluster_sim.admission.plugin.workload_of`), a flavor per pod set. In
    naive mode (no coscheduling) the roles are placed as independent jobs, worker by worker.

    Attributes:
        gang: the gang's name (unique among the run's gangs; e.g. the JobSet's).
        name: the role's name (the replicated job's, also the Kueue pod set's), a DNS label.
        index: 0-based position of the role in the gang; roles are placed in this order.
        roles: number of roles in the gang, 2 to 8 (Kueue allows at most 8 pod sets).

    Raises:
        InputError: an empty name, fewer than 2 or more than 8 roles, an index outside
            ``0..roles-1``.
    """

    gang: str
    name: str
    index: int
    roles: int

    def __post_init__(self) -> None:
        where = f"gang {self.gang!r} role {self.name!r}"
        if not self.gang or not self.name:
            raise InputError(f"{where}: a gang and its roles need non-empty names")
        if not 2 <= self.roles <= MAX_ROLES:
            raise InputError(f"{where}: roles must be 2..{MAX_ROLES} (Kueue's limit of pod sets per workload), "
                             f"got {self.roles}")
        if not 0 <= self.index < self.roles:
            raise InputError(f"{where}: index must be 0..{self.roles - 1}, got {self.index}")


MAX_ROLES = 8
"""Most roles in a multi-role gang: Kueue's limit of pod sets per Workload
(``spec.podSets`` maxItems 8 in the Workload CRD)."""


@dataclass(frozen=True, slots=True)
class Job:
    """A job: a gang of identical workers (pods).

    Attributes:
        job_id: unique id.
        tenant: owner, for fairness (DRF) and tenancy constraints.
        submit_time: arrival time, s.
        duration: run time once all workers run, s (ignored by the paper's replay, which has
            no departures).
        gpus_per_worker: GPUs per worker (0 = CPU-only).
        gpu_milli: milli-GPU asked of each of those GPUs, 1..1000 (0 when ``gpus_per_worker`` is 0).
        cpu_milli: CPU per worker, milli-cores.
        memory_mib: memory per worker, MiB.
        gpu_models: allowed GPU models; empty means any model.
        priority: larger is more important.
        workers: number of workers of the gang (1 for an ordinary pod).
        extras: free-form per-job fields that extensions read and the engine ignores
            (e.g. ``checkpoint_interval_s``, ``restore_s``, ``tolerations``, ``tier``).
            Not part of equality or hashing. Keep values immutable (numbers, strings,
            tuples) so a job stays a value.
        time_limit: the user's runtime estimate and limit, s of wall time per run (Slurm's
            ``--time``); None = none given. Backfill reserves from it (the simulator does not
            peek at ``duration`` then), and a run that reaches it is killed at the limit
            (:attr:`JobState.TIMEOUT`, Slurm's rule with ``OverTimeLimit=0``). Without it
            the simulator knows the true run time (a perfect estimate).
        role: this job's role in a multi-role gang (:class:`GangRole`), or None for a job
            whose workers are its whole gang. A role takes no ``time_limit``.

    A ``duration`` of ``math.inf`` is a service that never completes on its own (an
    inference server): it holds its GPUs until the run ends or it is evicted.

    Raises:
        InputError: an impossible shape (negative values, a share above 1000, a fractional
            share on a multi-GPU worker, no workers, more than :data:`MAX_COUNT` GPUs per
            worker or workers, more than :data:`MAX_QUANTITY` CPU or memory), a ``time_limit``
            on a role.
    """

    job_id: str
    submit_time: float = 0.0
    duration: float = 0.0
    gpus_per_worker: int = 0
    gpu_milli: int = 0
    cpu_milli: int = 0
    memory_mib: int = 0
    gpu_models: tuple[str, ...] = ()
    priority: int = 0
    workers: int = 1
    tenant: str = "default"
    extras: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)
    time_limit: float | None = None
    role: GangRole | None = None

    def __post_init__(self) -> None:
        where = f"job {self.job_id!r}"
        if self.role is not None and self.time_limit is not None:
            raise InputError(f"{where}: a time_limit on a role of a multi-role gang is not modelled")
        if self.time_limit is not None and not 0 < self.time_limit <= math.inf:   # NaN fails too
            raise InputError(f"{where}: time_limit must be a number of seconds > 0 (or None), got {self.time_limit}")
        for attr in ("submit_time", "duration"):
            if math.isnan(getattr(self, attr)):
                raise InputError(f"{where}: {attr} must be a number, got NaN")
        if math.isinf(self.submit_time):
            raise InputError(f"{where}: submit_time must be finite, got {self.submit_time}")
        for attr in ("submit_time", "duration", "gpus_per_worker", "gpu_milli", "cpu_milli", "memory_mib"):
            if getattr(self, attr) < 0:
                raise InputError(f"{where}: {attr} must be >= 0, got {getattr(self, attr)}")
        if self.workers < 1:
            raise InputError(f"{where}: workers must be >= 1, got {self.workers}")
        for attr, bound in _JOB_BOUNDS.items():
            if getattr(self, attr) > bound:
                raise InputError(f"{where}: {attr} must be <= {bound:,}, got {getattr(self, attr)}")
        if self.gpu_milli > MILLI_PER_GPU:
            raise InputError(f"{where}: gpu_milli must be <= {MILLI_PER_GPU}, got {self.gpu_milli}")
        if self.gpus_per_worker == 0 and self.gpu_milli != 0:
            raise InputError(f"{where}: gpu_milli must be 0 for a CPU-only job, got {self.gpu_milli}")
        if self.gpus_per_worker > 0 and self.gpu_milli == 0:
            raise InputError(f"{where}: gpu_milli must be in 1..{MILLI_PER_GPU} when gpus_per_worker > 0")
        if self.gpus_per_worker > 1 and self.gpu_milli != MILLI_PER_GPU:
            raise InputError(
                f"{where}: a worker with {self.gpus_per_worker} GPUs must ask for whole GPUs "
                f"(gpu_milli {MILLI_PER_GPU}), got {self.gpu_milli}"
            )

    @property
    def num_gpus(self) -> int:
        """Total GPUs of the job: workers x GPUs per worker."""
        return self.workers * self.gpus_per_worker

    @property
    def gpu_milli_total(self) -> int:
        """Total milli-GPU the job asks for: workers x GPUs per worker x share."""
        return self.workers * self.gpus_per_worker * self.gpu_milli

    @property
    def is_gang(self) -> bool:
        """True for a multi-worker job, which gang mode places all-or-nothing."""
        return self.workers > 1

    @property
    def is_fractional(self) -> bool:
        """True when a worker asks for part of one GPU (GPU sharing)."""
        return 0 < self.gpu_milli < MILLI_PER_GPU


TERMINATION_GRACE = "termination_grace_s"
"""``Job.extras`` key: the pods' graceful termination period when evicted (preemption, Kueue
eviction, drain, consolidation), s; the scenario reader fills it from a pod's
``terminationGracePeriodSeconds``. Absent: 0, resources are freed at once."""


BACKOFF_LIMIT = "backoff_limit"
"""``Job.extras`` key: the owning batch Job's ``spec.backoffLimit`` (the scenario reader fills
it for a Job or a JobSet's replicated job, 6 when not given, the API server's default); the
job fails once more of its pods than that were evicted by anything but Kueue (a preemption, a
drain, a NoExecute taint, a consolidation), since such disruptions count as pod failures
(Kubernetes docs, "Jobs", "Pod failure policy"; ``pkg/controller/job/job_controller.go``).
Absent: no limit (a job not owned by a Job, e.g. a trace's pod)."""


def termination_grace(job: Job) -> float:
    """``job.extras[TERMINATION_GRACE]``, s (0 when absent)."""
    return float(job.extras.get(TERMINATION_GRACE, 0.0))


class JobState(enum.Enum):
    """Where a job is when a run ends. Every job is in exactly one state."""

    COMPLETED = "completed"
    RUNNING = "running"
    PENDING = "pending"
    REJECTED = "rejected"
    TIMEOUT = "timeout"
    """Killed on reaching its ``time_limit`` (Slurm's TIMEOUT state); not requeued."""


@dataclass(frozen=True, slots=True)
class Placement:
    """Where one worker of a job runs.

    Attributes:
        node: node name.
        node_index: index of the node in the cluster state.
        gpus: GPU indices inside the node (empty for a CPU-only worker).
    """

    node: str
    node_index: int
    gpus: tuple[int, ...]


@dataclass(eq=False, slots=True)
class JobRecord:
    """What happened to one job during a run (mutable while the run goes on).

    Attributes:
        job: the job as submitted.
        state: where the job is now (:class:`JobState`).
        start_time: when its last worker was bound and it began to run, s (first start
            if it was evicted and restarted); None if it never started.
        end_time: when it completed, s; None otherwise.
        placements: one :class:`Placement` per worker bound now (in naive mode a pending
            job may hold some of them: a partial allocation); emptied on release.
        last_placements: where the job's workers ran last (kept after completion/eviction).
        reason: why a job is rejected, or what a pending job waits for.
        status: the scheduling framework's outcome word for a rejected or waiting job:
            ``"Unschedulable"`` (not now) or ``"UnschedulableAndUnresolvable"`` (never).
        remaining: full-speed seconds still needed as of :attr:`rated_at` (work plus
            ``overhead_left``); starts at ``job.duration``; after an eviction, what is left
            after the last checkpoint plus the restore time.
        run_started: when the current run began, s (None when not running).
        preemptions: times the job was evicted.
        lost_work: run time thrown away by evictions, s.
        extras: per-record fields that extensions own (e.g. checkpoint bookkeeping); the
            engine never reads them.
        overhead_left: part of ``remaining`` that is overhead (checkpoint restore), s; it is
            not slowed down by contention.
        slowdown: run-time factor of the job's work now (product of the progress plugins'
            factors, 1 alone); the last value is kept while pending.
        rated_at: when ``remaining`` was last brought up to date, s (None when not running).
        busy_from: when the current run starts computing, s (bind time plus any start delay,
            e.g. an image pull); None when not running.
        queue_seq: order of first enqueue (set by the scheduler); requeued jobs keep it.
        time_limit_at: when the current run hits ``job.time_limit``, s (None: no limit).
        migrations: times the job was moved (evicted to be placed elsewhere at once).
        lost_gpu_s: GPU-seconds of progress thrown away by evictions: progress since the
            last checkpoint x the job's GPUs (whole-GPU equivalents).
    """

    job: Job
    state: JobState = JobState.PENDING
    start_time: float | None = None
    end_time: float | None = None
    placements: list[Placement] = field(default_factory=list)
    last_placements: tuple[Placement, ...] = ()
    reason: str | None = None
    status: str | None = None
    remaining: float = 0.0
    run_started: float | None = None
    preemptions: int = 0
    lost_work: float = 0.0
    extras: dict[str, Any] = field(default_factory=dict)
    overhead_left: float = 0.0
    slowdown: float = 1.0
    rated_at: float | None = None
    busy_from: float | None = None
    queue_seq: int = -1
    time_limit_at: float | None = None
    migrations: int = 0
    lost_gpu_s: float = 0.0

    def __post_init__(self) -> None:
        self.remaining = self.job.duration

    def progress_at(self, now: float) -> float:
        """Full-speed seconds of ``remaining`` done between :attr:`rated_at` and ``now``
        (overhead first, then work at ``1 / slowdown`` per second); 0 when not running."""
        if self.rated_at is None:
            return 0.0
        start = self.rated_at if self.busy_from is None else max(self.rated_at, self.busy_from)
        elapsed = max(0.0, now - start)
        if elapsed <= self.overhead_left:
            return elapsed
        return min(self.remaining, self.overhead_left + (elapsed - self.overhead_left) / self.slowdown)

    @property
    def expected_end(self) -> float:
        """When the current run completes at the current rate, s (``inf`` for a service or a
        job not running). Includes a pending start delay."""
        if self.rated_at is None or math.isinf(self.remaining):
            return math.inf
        start = self.rated_at if self.busy_from is None else max(self.rated_at, self.busy_from)
        return start + self.overhead_left + (self.remaining - self.overhead_left) * self.slowdown

    def work_done_at(self, now: float) -> float:
        """Useful work done by ``now`` (full-speed seconds of ``job.duration``): what was
        done at :attr:`rated_at` plus the progress since, after any overhead (0 for a
        service)."""
        if math.isinf(self.job.duration):
            return 0.0
        since = max(0.0, self.progress_at(now) - self.overhead_left)
        return min(self.job.duration, max(0.0, self.work_done + since))

    @property
    def work_done(self) -> float:
        """Useful work done so far (full-speed seconds of ``job.duration``), as of
        :attr:`rated_at`: ``duration - (remaining - overhead_left)`` (0 for a service)."""
        if math.isinf(self.job.duration):
            return 0.0
        return self.job.duration - (self.remaining - self.overhead_left)

    @property
    def job_id(self) -> str:
        return self.job.job_id

    @property
    def wait(self) -> float | None:
        """Queueing delay: first start minus submit time, s; None if it never started."""
        return None if self.start_time is None else self.start_time - self.job.submit_time

    @property
    def jct(self) -> float | None:
        """Job completion time: end minus submit time, s; None unless completed."""
        return None if self.end_time is None else self.end_time - self.job.submit_time

    @property
    def workers_bound(self) -> int:
        """Workers that hold resources now."""
        return len(self.placements)
