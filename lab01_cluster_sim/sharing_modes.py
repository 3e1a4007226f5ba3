"""GPU sharing modes as the cluster scheduler sees them: time-slicing, MPS and MIG.

The scheduler never sees a GPU's internals, only the integers a device plugin
advertises (extended resources) and, through the jobs' run times, the contention:

- **Time-slicing** (NVIDIA k8s-device-plugin ``sharing.timeSlicing.resources[].replicas``):
  each GPU is advertised ``replicas`` times as ``nvidia.com/gpu`` (or
  ``nvidia.com/gpu.shared`` with ``renameByDefault``). Co-located processes take turns;
  nothing isolates memory. Contention model (ours, documented parameters): with ``n``
  busy processes each gets ``1/n`` of the GPU's time and every slice also pays a context
  switch, so a compute-bound job runs ``n x (slice + switch) / slice`` times longer.
  The slice and switch times are *assumptions* for teaching (the driver's time-slice
  length is not published; ``nvidia-smi compute-policy --set-timeslice`` offers only
  named levels), defaults 2 ms and 50 us.
- **MPS** (Multi-Process Service): clients run concurrently on disjoint SM shares set by
  ``CUDA_MPS_ACTIVE_THREAD_PERCENTAGE`` with a per-client memory limit
  (``CUDA_MPS_PINNED_DEVICE_MEM_LIMIT``). Model: a compute-bound client runs at
  ``pct / 100`` of the full GPU; if the percentages add up to more than 100 they are
  scaled down proportionally. The device plugin's MPS sharing with ``replicas = r``
  gives each replica ``100 / r`` percent and ``1 / r`` of the memory.
- **MIG** (Multi-Instance GPU): the GPU is cut into GPU instances from a fixed profile
  table; nodes advertise ``nvidia.com/mig-<profile>: <count>`` (the plugin's "mixed"
  strategy). A request is rounded up to the smallest profile that covers it, which wastes
  the difference (quantization). A GPU's layout can only change when nothing runs on it.
  Profile facts (memory/compute slices, counts, placements) from the NVIDIA MIG User Guide,
  "Supported MIG Profiles" (docs.nvidia.com/datacenter/tesla/mig-user-guide), counts
  cross-checked with NVIDIA/mig-parted's deployments/systemd/config-default.yaml. Lab 01
  keeps this small table itself (Lab 01 never imports Lab 02).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from lab01_cluster_sim.errors import InputError
from lab01_cluster_sim.model import MILLI_PER_GPU

# --- time-slicing --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TimeSlicingParams:
    """Parameters of the time-slicing contention model.

    Attributes:
        slice_ms: length of one time slice, ms (assumed, see the module docstring).
        switch_us: cost of one context switch between processes, us (assumed).
    """

    slice_ms: float = 2.0
    switch_us: float = 50.0

    def __post_init__(self) -> None:
        if not (0 < self.slice_ms < math.inf and 0 <= self.switch_us < math.inf):   # also rejects NaN
            raise InputError(f"time-slicing: slice_ms must be > 0 and switch_us >= 0, "
                             f"got {self.slice_ms}, {self.switch_us}")


def timeslice_slowdown(n_busy: int, params: TimeSlicingParams = TimeSlicingParams()) -> float:
    """Run-time factor of a compute-bound job sharing a GPU with ``n_busy - 1`` others.

    ``1`` alone; ``n x (slice + switch) / slice`` for ``n >= 2`` (no switching when alone).

    Raises:
        InputError: ``n_busy < 1``.
    """
    if n_busy < 1:
        raise InputError(f"n_busy must be >= 1, got {n_busy}")
    if n_busy == 1:
        return 1.0
    slice_s = params.slice_ms / 1e3
    return n_busy * (slice_s + params.switch_us / 1e6) / slice_s


def timeslice_resources(gpu_count: int, replicas: int, rename_by_default: bool = False) -> dict[str, int]:
    """Extended resources a node advertises with time-slicing: ``gpu_count x replicas``.

    Raises:
        InputError: ``replicas < 1`` (the plugin refuses fewer than 2 for a shared
            resource; 1 here means "not shared", advertised under the plain name).
    """
    if replicas < 1 or gpu_count < 0:
        raise InputError(f"timeSlicing replicas must be >= 1 and GPUs >= 0, got {replicas}, {gpu_count}")
    name = "nvidia.com/gpu.shared" if (rename_by_default and replicas > 1) else "nvidia.com/gpu"
    return {name: gpu_count * replicas}


# --- MPS -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MpsClient:
    """One MPS client on a GPU.

    Attributes:
        active_thread_pct: ``CUDA_MPS_ACTIVE_THREAD_PERCENTAGE``, 1..100.
        memory_limit_mib: its pinned device memory limit, MiB.
    """

    active_thread_pct: float
    memory_limit_mib: int

    def __post_init__(self) -> None:
        if not (0 < self.active_thread_pct <= 100 and 0 <= self.memory_limit_mib < math.inf):
            raise InputError(f"MPS client: active_thread_pct must be in (0, 100] and memory >= 0, "
                             f"got {self.active_thread_pct}, {self.memory_limit_mib}")


def mps_speeds(clients: Sequence[MpsClient]) -> list[float]:
    """Speed of each client as a fraction of the whole GPU (see the module docstring)."""
    total = sum(c.active_thread_pct for c in clients)
    scale = 1.0 if total <= 100 else 100.0 / total
    return [c.active_thread_pct / 100.0 * scale for c in clients]


def mps_admit(gpu_memory_mib: int, clients: Sequence[MpsClient]) -> None:
    """Check that the clients' memory limits fit the GPU.

    Raises:
        InputError: the limits add up to more than ``gpu_memory_mib`` (naming both).
    """
    total = sum(c.memory_limit_mib for c in clients)
    if total > gpu_memory_mib:
        raise InputError(f"MPS: client memory limits add up to {total} MiB, more than the GPU's {gpu_memory_mib} MiB")


def mps_replicas(gpu_memory_mib: int, replicas: int) -> list[MpsClient]:
    """The clients of the device plugin's MPS sharing with ``replicas`` (equal shares)."""
    if replicas < 1:
        raise InputError(f"MPS replicas must be >= 1, got {replicas}")
    return [MpsClient(100.0 / replicas, gpu_memory_mib // replicas) for _ in range(replicas)]


# --- MIG -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MigProfile:
    """One GPU-instance profile.

    Attributes:
        name: e.g. ``"1g.10gb"``.
        compute_slices: g of ``<g>g`` (out of 7).
        memory_slices: placement size on the 8-slice memory axis.
        memory_gb: the nominal memory in the name, GB.
        max_count: most instances of this profile on one GPU.
        starts: valid start slots.
    """

    name: str
    compute_slices: int
    memory_slices: int
    memory_gb: int
    max_count: int
    starts: tuple[int, ...]

    @property
    def resource(self) -> str:
        """The extended resource name NVIDIA's device plugin advertises for this profile
        under ``migStrategy: mixed`` (:data:`MIXED_RESOURCE_NAMES`).

        Raises:
            KeyError: a profile missing from the table (a test checks that none is).
        """
        return MIXED_RESOURCE_NAMES[self.name]


#: Profile -> extended resource name under the device plugin's ``migStrategy: mixed``, for
#: every profile of :data:`MIG_PROFILES` (NVIDIA, "MIG Support in Kubernetes", the mixed
#: strategy: ``nvidia.com/mig-<slice count>g.<memory size>gb``).
#: A table rather than the naming rule: writing the rule is Lab 02's part 2C
#: (``lab02_device_plugin.plugin.mig.mixed_resource_name``), and the two lab packages do not
#: import each other; tests/lab01/ext/test_sharing_modes.py checks that both agree.
MIXED_RESOURCE_NAMES: Mapping[str, str] = MappingProxyType({
    "1g.5gb": "nvidia.com/mig-1g.5gb", "1g.10gb": "nvidia.com/mig-1g.10gb",
    "1g.18gb": "nvidia.com/mig-1g.18gb", "1g.20gb": "nvidia.com/mig-1g.20gb",
    "1g.35gb": "nvidia.com/mig-1g.35gb", "2g.10gb": "nvidia.com/mig-2g.10gb",
    "2g.20gb": "nvidia.com/mig-2g.20gb", "2g.35gb": "nvidia.com/mig-2g.35gb",
    "3g.20gb": "nvidia.com/mig-3g.20gb", "3g.40gb": "nvidia.com/mig-3g.40gb",
    "3g.71gb": "nvidia.com/mig-3g.71gb", "4g.20gb": "nvidia.com/mig-4g.20gb",
    "4g.40gb": "nvidia.com/mig-4g.40gb", "4g.71gb": "nvidia.com/mig-4g.71gb",
    "7g.40gb": "nvidia.com/mig-7g.40gb", "7g.80gb": "nvidia.com/mig-7g.80gb",
    "7g.141gb": "nvidia.com/mig-7g.141gb",
})


def _profiles(mem: Mapping[str, int], gb2: int) -> dict[str, MigProfile]:
    # placements from the guide's -lgipp (identical on A100/H100/H200), facts sec. 5
    one, two, three, four, seven = mem["1g"], mem["2g"], mem["3g"], mem["4g"], mem["7g"]
    return {
        f"1g.{one}gb": MigProfile(f"1g.{one}gb", 1, 1, one, 7, (0, 1, 2, 3, 4, 5, 6)),
        f"1g.{gb2}gb": MigProfile(f"1g.{gb2}gb", 1, 2, gb2, 4, (0, 2, 4, 6)),
        f"2g.{two}gb": MigProfile(f"2g.{two}gb", 2, 2, two, 3, (0, 2, 4)),
        f"3g.{three}gb": MigProfile(f"3g.{three}gb", 3, 4, three, 2, (0, 4)),
        f"4g.{four}gb": MigProfile(f"4g.{four}gb", 4, 4, four, 1, (0,)),
        f"7g.{seven}gb": MigProfile(f"7g.{seven}gb", 7, 8, seven, 1, (0,)),
    }


MIG_PROFILES: Mapping[str, Mapping[str, MigProfile]] = {
    "A100-40GB": _profiles({"1g": 5, "2g": 10, "3g": 20, "4g": 20, "7g": 40}, 10),
    "A100-80GB": _profiles({"1g": 10, "2g": 20, "3g": 40, "4g": 40, "7g": 80}, 20),
    "H100-80GB": _profiles({"1g": 10, "2g": 20, "3g": 40, "4g": 40, "7g": 80}, 20),
    "H200-141GB": _profiles({"1g": 18, "2g": 35, "3g": 71, "4g": 71, "7g": 141}, 35),
}
"""GPU model -> profile name -> :class:`MigProfile` (the ``+me`` variants are left out)."""


def mig_profile(gpu: str, name: str) -> MigProfile:
    """Look up a profile.

    Raises:
        InputError: unknown GPU model or profile (the message lists the known ones).
    """
    if gpu not in MIG_PROFILES:
        raise InputError(f"unknown MIG-capable GPU {gpu!r}; expected one of: {', '.join(MIG_PROFILES)}")
    if name not in MIG_PROFILES[gpu]:
        raise InputError(f"unknown MIG profile {name!r} for {gpu}; expected one of: {', '.join(MIG_PROFILES[gpu])}")
    return MIG_PROFILES[gpu][name]


def _misfit(gpu: str, profiles: Sequence[str]) -> str:
    """Why :func:`place_layout` finds no placement, with what was expected, in words."""
    for name, count in sorted(_count(profiles).items()):
        top = mig_profile(gpu, name).max_count
        if count > top:
            return f"{count} x {name}; expected at most {top} of that profile"
    compute = sum(mig_profile(gpu, p).compute_slices for p in profiles)
    if compute > 7:
        return f"{compute} compute slices; expected at most 7"
    memory = sum(mig_profile(gpu, p).memory_slices for p in profiles)
    if memory > 8:
        return f"{memory} memory slices; expected at most 8"
    return ("the instances' memory slices cannot be placed without overlapping (each profile has fixed "
            "start slots); expected a layout nvidia-smi mig -lgipp lists as possible")


def place_layout(gpu: str, profiles: Sequence[str]) -> dict[int, str] | None:
    """Start slots for a set of GPU instances, or None if they cannot coexist.

    Searches the placements (largest first) so that no two instances overlap on the
    8-slice memory axis, the 1g profiles never start at slot 7, and no profile exceeds
    its max count. Returns start slot -> profile name.
    """
    profs = sorted((mig_profile(gpu, p) for p in profiles), key=lambda p: (-p.memory_slices, p.name))
    for name, count in _count(profiles).items():
        if count > mig_profile(gpu, name).max_count:
            return None
    if sum(p.compute_slices for p in profs) > 7:
        return None

    def search(i: int, used: frozenset[int], placed: dict[int, str]) -> dict[int, str] | None:
        if i == len(profs):
            return dict(placed)
        p = profs[i]
        for s in p.starts:
            slots = frozenset(range(s, s + p.memory_slices))
            if not (slots & used) and s + p.memory_slices <= 8:
                placed[s] = p.name
                found = search(i + 1, used | slots, placed)
                if found is not None:
                    return found
                del placed[s]
        return None

    return search(0, frozenset(), {})


def _count(names: Sequence[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for n in names:
        out[n] = out.get(n, 0) + 1
    return out


@dataclass(frozen=True)
class MigLayout:
    """A MIG layout of one GPU: the GPU model and its GPU instances.

    Raises:
        InputError: unknown profile, or instances that cannot be placed together.
    """

    gpu: str
    profiles: tuple[str, ...]

    def __post_init__(self) -> None:
        if place_layout(self.gpu, self.profiles) is None:
            raise InputError(f"MIG layout {','.join(self.profiles)} does not fit one {self.gpu}: "
                             f"{_misfit(self.gpu, self.profiles)}")

    def advertised(self) -> dict[str, int]:
        """``{"nvidia.com/mig-1g.10gb": 7, ...}`` for this GPU."""
        return {mig_profile(self.gpu, p).resource: c for p, c in sorted(_count(self.profiles).items())}


def advertise_mig(layouts: Sequence[MigLayout]) -> dict[str, int]:
    """What a node with these per-GPU layouts advertises (mixed strategy): profile -> count."""
    out: dict[str, int] = {}
    for layout in layouts:
        for k, v in layout.advertised().items():
            out[k] = out.get(k, 0) + v
    return dict(sorted(out.items()))


def smallest_profile(gpu: str, memory_gb: float, compute_fraction: float,
                     allowed: Sequence[str] | None = None) -> MigProfile:
    """The smallest profile (fewest compute then memory slices) covering the request.

    Args:
        memory_gb: memory asked for, GB.
        compute_fraction: share of the GPU's SMs asked for, in (0, 1]; profile ``<g>g``
            gives ``g / 7``.
        allowed: profiles to choose from (e.g. those a layout offers); default all.

    Raises:
        InputError: ``memory_gb`` not a finite number > 0, ``compute_fraction`` outside
            (0, 1] (NaN included), or no profile is big enough.
    """
    if not 0 < memory_gb < math.inf:
        raise InputError(f"MIG request: memory_gb must be a finite number > 0, got {memory_gb}")
    if not 0 < compute_fraction <= 1:
        raise InputError(f"MIG request: compute_fraction must be in (0, 1], got {compute_fraction}")
    table = MIG_PROFILES.get(gpu)
    if table is None:
        raise InputError(f"unknown MIG-capable GPU {gpu!r}; expected one of: {', '.join(MIG_PROFILES)}")
    cands = [p for n, p in table.items() if allowed is None or n in allowed]
    fit = [p for p in cands if p.memory_gb >= memory_gb and p.compute_slices / 7 >= compute_fraction - 1e-9]
    if not fit:
        raise InputError(f"no MIG profile of {gpu} gives {memory_gb} GB and {compute_fraction:.0%} of the SMs")
    return min(fit, key=lambda p: (p.compute_slices, p.memory_slices, p.memory_gb))


@dataclass(frozen=True)
class Quantization:
    """Asked-for versus granted resources of requests rounded up to MIG profiles."""

    profiles: tuple[str, ...]
    asked_memory_gb: float
    granted_memory_gb: float
    asked_compute: float
    granted_compute: float

    @property
    def memory_waste(self) -> float:
        """Share of the granted memory nobody asked for."""
        return 0.0 if self.granted_memory_gb == 0 else 1 - self.asked_memory_gb / self.granted_memory_gb

    @property
    def compute_waste(self) -> float:
        """Share of the granted compute (GPU fractions) nobody asked for."""
        return 0.0 if self.granted_compute == 0 else 1 - self.asked_compute / self.granted_compute


def quantization_waste(gpu: str, requests: Sequence[tuple[float, float]]) -> Quantization:
    """Round each ``(memory_gb, compute_fraction)`` up to its smallest profile; sum asked and granted."""
    chosen = [smallest_profile(gpu, m, c) for m, c in requests]
    return Quantization(tuple(p.name for p in chosen), float(sum(m for m, _ in requests)),
                        float(sum(p.memory_gb for p in chosen)), float(sum(c for _, c in requests)),
                        float(sum(p.compute_slices for p in chosen)) / 7.0)


class DrainRequired(InputError):
    """A MIG layout change was asked for on a GPU that still runs workloads."""


@dataclass
class MigGpu:
    """One MIG-enabled GPU: its layout and which instances are in use.

    ``in_use`` counts allocated instances per profile. :meth:`reconfigure` refuses to
    change the layout while anything runs (the GPU must be drained first, as
    ``nvidia-smi mig -dgi`` refuses to destroy an instance with processes on it).
    """

    layout: MigLayout
    in_use: dict[str, int] = field(default_factory=dict)

    def free(self) -> dict[str, int]:
        """Profile -> free instances."""
        return {p: c - self.in_use.get(p, 0) for p, c in _count(self.layout.profiles).items()}

    def allocate(self, profile: str) -> None:
        """Take one free instance of ``profile``. Raises InputError if none is free."""
        if self.free().get(profile, 0) < 1:
            raise InputError(f"no free {profile} instance on this {self.layout.gpu} (layout {list(self.layout.profiles)})")
        self.in_use[profile] = self.in_use.get(profile, 0) + 1

    def release(self, profile: str) -> None:
        """Give back one instance of ``profile``. Raises InputError if none is in use."""
        if self.in_use.get(profile, 0) < 1:
            raise InputError(f"no {profile} instance in use to release")
        self.in_use[profile] -= 1

    def reconfigure(self, profiles: Sequence[str]) -> None:
        """Switch to a new layout; the old one is kept if the new one is invalid.

        Raises:
            DrainRequired: instances are still in use.
            InputError: the new layout is invalid.
        """
        busy = {p: c for p, c in self.in_use.items() if c}
        if busy:
            raise DrainRequired(f"cannot change the MIG layout of a {self.layout.gpu} while instances run "
                                f"({busy}); drain the GPU first")
        self.layout = MigLayout(self.layout.gpu, tuple(profiles))
        self.in_use = {}


# --- the scheduler's view of one node under each mode ----------------------------------------------


@dataclass(frozen=True)
class SharingRow:
    """How ``k`` identical small jobs fare on one GPU under one mode.

    Attributes:
        mode: ``exclusive``, ``time-slicing``, ``mps`` or ``mig (<profile>)``.
        advertised: extended resources the node advertises for the GPU.
        jobs_on_gpu: jobs the scheduler binds to the GPU (it sees only the integers).
        slowdown: run-time factor of a job that runs, against a whole GPU.
        memory_isolated: whether one job's memory use can starve another's.
        memory_waste: share of the memory granted but not asked for.
        jobs_failed: bound jobs that fail for lack of memory: with time-slicing, those
            beyond what the GPU's memory holds (out-of-memory, no isolation); with MPS,
            every job whose need exceeds its per-client memory limit.
        note: why jobs fail or wait, empty when every job runs.
        jobs_waiting: jobs that get no GPU, replica or instance on this GPU and stay pending
            (exclusive: all but one; MIG: those beyond the instances the GPU holds). Every
            job is counted once: ``jobs_on_gpu + jobs_waiting`` = the jobs asked about, and
            ``jobs_failed`` are among those on the GPU.
    """

    mode: str
    advertised: dict[str, int]
    jobs_on_gpu: int
    slowdown: float
    memory_isolated: bool
    memory_waste: float
    jobs_failed: int = 0
    note: str = ""
    jobs_waiting: int = 0


def compare_sharing_modes(gpu: str = "A100-80GB", gpu_memory_gb: int = 80, jobs: int = 4,
                          job_memory_gb: float = 15.0, job_compute: float = 0.25,
                          params: TimeSlicingParams = TimeSlicingParams()) -> list[SharingRow]:
    """The scheduler's view of ``jobs`` identical small jobs on one GPU under each mode.

    Each job needs ``job_memory_gb`` and ``job_compute`` of the GPU's SMs when alone.
    Slowdown is the run-time factor against running alone on a whole GPU, for a job that
    uses its whole share (compute-bound): time-slicing by :func:`timeslice_slowdown`;
    MPS at ``100 / jobs`` percent each; MIG on the smallest profile covering the job,
    as many as the GPU holds.

    Memory: time-slicing gives no isolation, so once the jobs' memory adds up to more
    than the GPU's, the jobs beyond ``floor(gpu_memory_gb / job_memory_gb)`` fail
    out-of-memory (which ones is a race; the count is what matters). MPS limits each
    client to ``gpu_memory_gb / jobs``: a job needing more fails (all of them, as they
    are identical). Both are reported in :attr:`SharingRow.jobs_failed`.

    Raises:
        InputError: ``jobs`` < 1, ``gpu_memory_gb`` or ``job_memory_gb`` not a finite
            number > 0, ``job_compute`` outside (0, 1]; a job bigger than the whole GPU.
    """
    if jobs < 1:
        raise InputError(f"jobs must be >= 1, got {jobs}")
    for name, value in (("gpu_memory_gb", gpu_memory_gb), ("job_memory_gb", job_memory_gb)):
        if not 0 < value < math.inf:
            raise InputError(f"{name} must be a finite number > 0, got {value}")
    if not 0 < job_compute <= 1:
        raise InputError(f"job_compute must be in (0, 1], got {job_compute}")
    if job_memory_gb > gpu_memory_gb:
        raise InputError(f"job_memory_gb {job_memory_gb:g} exceeds the GPU's {gpu_memory_gb:g} GB")
    rows = [SharingRow("exclusive", {"nvidia.com/gpu": 1}, 1, 1.0, True, 0.0, 0,
                       f"one job per GPU: {jobs - 1} wait" if jobs > 1 else "", jobs - 1)]
    fit_in_memory = int(gpu_memory_gb // job_memory_gb)
    oom = max(0, jobs - fit_in_memory)
    rows.append(SharingRow("time-slicing", timeslice_resources(1, jobs), jobs,
                           timeslice_slowdown(jobs, params), False, 0.0, oom,
                           f"out of memory: {jobs} x {job_memory_gb:g} GB > {gpu_memory_gb:g} GB, only "
                           f"{fit_in_memory} fit" if oom else ""))
    clients = mps_replicas(int(gpu_memory_gb * 1024), jobs)
    speed = mps_speeds(clients)[0]
    limit_gb = clients[0].memory_limit_mib / 1024
    mps_failed = jobs if job_memory_gb > limit_gb else 0
    rows.append(SharingRow("mps", {"nvidia.com/gpu": jobs}, jobs, max(1.0, job_compute / speed) if speed else 0.0,
                           True, max(0.0, 1 - job_memory_gb * jobs / gpu_memory_gb), mps_failed,
                           f"per-client memory limit {limit_gb:.3g} GB < {job_memory_gb:g} GB needed"
                           if mps_failed else ""))
    prof = smallest_profile(gpu, job_memory_gb, job_compute)
    fit = 0
    for k in range(prof.max_count, 0, -1):
        if place_layout(gpu, [prof.name] * k) is not None:
            fit = k
            break
    q = quantization_waste(gpu, [(job_memory_gb, job_compute)] * min(fit, jobs))
    waiting = jobs - min(fit, jobs)
    rows.append(SharingRow(f"mig ({prof.name})", {prof.resource: fit}, min(fit, jobs),
                           max(1.0, job_compute / (prof.compute_slices / 7)), True, q.memory_waste, 0,
                           f"{fit} {prof.name} instances fit one {gpu}: {waiting} wait" if waiting else "", waiting))
    return rows


def all_layout_combinations(gpu: str, max_instances: int = 7) -> list[tuple[str, ...]]:
    """Every valid multiset of profiles on one GPU (for teaching: how many layouts exist)."""
    names = sorted(MIG_PROFILES[gpu])
    out = []
    for k in range(1, max_instances + 1):
        for combo in itertools.combinations_with_replacement(names, k):
            if place_layout(gpu, combo) is not None:
                out.append(combo)
    return out


REPLICAS_LABEL = "nvidia.com/gpu.replicas"
"""GPU Feature Discovery's label with the time-slicing replicas per GPU (1 without sharing)."""


def timesliced_node(name: str, gpu_model: str, gpus: int, replicas: int, cpu_milli: int, memory_mib: int,
                    labels: Mapping[str, str] | None = None, nvlink_island: int = -1):
    """A :class:`~lab01_cluster_sim.model.Node` whose ``gpus`` physical GPUs are time-sliced
    into ``replicas`` each, as the scheduler sees it: ``gpus x replicas`` advertised
    ``nvidia.com/gpu`` (the node's ``gpu_count``), labelled as GPU Feature Discovery labels it
    (``nvidia.com/gpu.count`` = physical GPUs, ``nvidia.com/gpu.replicas``,
    ``nvidia.com/gpu.sharing-strategy=time-slicing``). Replica slot ``s`` is on physical GPU
    ``s % gpus``, so taking the lowest free slots spreads pods over the GPUs as the NVIDIA
    plugin's default ``distributed`` allocation does.

    Raises:
        InputError: ``gpus`` or ``replicas`` < 1.
    """
    from lab01_cluster_sim.model import Node

    if gpus < 1 or replicas < 1:
        raise InputError(f"node {name!r}: time-sliced GPUs and replicas must be >= 1, got {gpus}, {replicas}")
    lab = dict(labels or {})
    lab.update({"nvidia.com/gpu.count": str(gpus), REPLICAS_LABEL: str(replicas),
                "nvidia.com/gpu.sharing-strategy": "time-slicing" if replicas > 1 else "none"})
    return Node(name, gpu_model, gpus * replicas, cpu_milli, memory_mib, labels=lab, nvlink_island=nvlink_island)


class TimeSlicing:
    """Engine plugin (``"time-slicing"``): jobs sharing a physical GPU take turns, and each
    runs :func:`timeslice_slowdown` ``(k)`` times slower with ``k`` busy processes on it.

    Who shares a GPU: on a time-sliced node (label ``nvidia.com/gpu.replicas`` = r, see
    :func:`timesliced_node`) every replica slot a job holds is one process on physical GPU
    ``slot % (gpu_count / r)``; on other nodes, jobs holding a fractional share
    (``gpu_milli`` < 1000) of the same GPU share it (a time-sliced replica recorded as a share,
    as in the Alibaba trace). ``k`` counts the slots of jobs that are computing (past their
    start delay, e.g. an image pull); a job's factor is that of its most crowded GPU.

    With ``rerate`` (default) the rate follows the neighbours as they come and go (processor
    sharing: the engine re-rates the jobs of a GPU whenever one starts computing or leaves);
    without it each job keeps the contention it met when it started.

    Args:
        params: slice and context-switch times.
        rerate: re-rate neighbours on every change.
    """

    name = "time-slicing"

    def __init__(self, params: TimeSlicingParams = TimeSlicingParams(), rerate: bool = True) -> None:
        self.params = params
        self.rerate = rerate
        self._sim = None
        self._replicas: list[int] = []
        self._gpus: list[int] = []        # physical GPUs per node
        # (node, physical GPU) -> {job id: [record, slots held]}
        self._on_gpu: dict[tuple[int, int], dict[str, list]] = {}

    def attach(self, sim) -> None:
        self._sim = sim

    def _physical(self, node: int, slot: int) -> int:
        if node >= len(self._gpus):
            sim = self._sim
            nodes = sim.state.nodes
            while len(self._replicas) < len(nodes):
                n = nodes[len(self._replicas)]
                try:
                    r = max(1, int(n.labels.get(REPLICAS_LABEL, "1")))
                except ValueError:
                    raise InputError(f"node {n.name!r}: label {REPLICAS_LABEL} must be an integer, "
                                     f"got {n.labels.get(REPLICAS_LABEL)!r}") from None
                self._replicas.append(r)
                self._gpus.append(max(1, n.gpu_count // r))
        return slot % self._gpus[node]

    def _untracked(self, record, placement) -> bool:
        """Whole GPUs of a node without replicas: nobody can join them (nothing is free on
        them), so they are neither neighbours nor have any."""
        if record.job.gpu_milli < MILLI_PER_GPU or not placement.gpus:
            return not placement.gpus
        self._physical(placement.node_index, 0)
        return self._replicas[placement.node_index] == 1

    def on_bind(self, record, placement, request) -> None:
        if self._untracked(record, placement):
            return
        for g in placement.gpus:
            key = (placement.node_index, self._physical(placement.node_index, g))
            entry = self._on_gpu.setdefault(key, {}).setdefault(record.job_id, [record, 0])
            entry[1] += 1

    def on_release(self, record, placement, request) -> None:
        if self._untracked(record, placement):
            return
        for g in placement.gpus:
            key = (placement.node_index, self._physical(placement.node_index, g))
            jobs = self._on_gpu.get(key)
            if jobs is None or record.job_id not in jobs:
                continue
            jobs[record.job_id][1] -= 1
            if jobs[record.job_id][1] <= 0:
                del jobs[record.job_id]
            if not jobs:
                del self._on_gpu[key]

    def _gpus_of(self, record) -> set[tuple[int, int]]:
        return {(p.node_index, self._physical(p.node_index, g)) for p in record.placements for g in p.gpus}

    def _alone(self, record) -> bool:
        """A job holding whole GPUs on nodes without replicas shares no GPU (no lookup needed)."""
        if record.job.gpu_milli < MILLI_PER_GPU:
            return False
        if not record.placements:
            return True
        self._physical(record.placements[-1].node_index, 0)   # fills the replica table up to there
        return all(self._replicas[p.node_index] == 1 for p in record.placements)

    def slowdown(self, sim, record) -> float:
        if self._alone(record):
            return 1.0
        now = sim.now
        worst = 1
        for key in self._gpus_of(record):
            busy = sum(n for rec, n in self._on_gpu.get(key, {}).values()
                       if rec is record or (rec.busy_from is not None and rec.busy_from <= now))
            worst = max(worst, busy)
        return timeslice_slowdown(worst, self.params)

    def affected_by(self, sim, record):
        if not self.rerate or self._alone(record):
            return []
        out: dict[str, object] = {}
        for key in sorted(self._gpus_of(record)):
            for job_id, (rec, _) in self._on_gpu.get(key, {}).items():
                out.setdefault(job_id, rec)
        return list(out.values())


def time_slicing_plugin(nodes, jobs, slice_ms: float = 2.0, switch_us: float = 50.0) -> TimeSlicing:
    """``--plugin time-slicing:slice_ms=2,switch_us=50``."""
    return TimeSlicing(TimeSlicingParams(slice_ms, switch_us))
