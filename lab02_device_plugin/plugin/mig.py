"""MIG profile tables, GPU-instance placement and resource names.

A MIG-capable GPU is cut into GPU instances (GIs). On the A100, H100 and H200 each GI
profile takes a number of the GPU's 8 *memory slices* and of its 7 *compute slices* (the
A30 has 4 of each, the RTX PRO 6000 Blackwell 4 instances at most: :data:`MIG_GPUS`); a GI
of ``s`` memory slices may only start at certain slots (``nvidia-smi mig -lgipp``) and GIs
never overlap. A compute slice is not a seventh of the SMs: each profile has a fixed SM
count (``nvidia-smi mig -lgip``), for example 60 of the H100 SXM5's 132 SMs for
``3g.40gb`` and 64 for ``4g.40gb``, so no profile below ``7g`` gets half of an H100. This
module holds the tables for four GPUs, the resource names NVIDIA's plugin advertises for
MIG devices, and the layout planner (the book's partition explorer,
:mod:`lab02_device_plugin.models.mig_partition`, builds on it):

>>> layout = plan_layout("H100-80GB", ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"])
>>> [(p.profile.name, p.start) for p in layout.placements]
[('3g.40gb', 4), ('2g.20gb', 0), ('1g.10gb', 2), ('1g.10gb', 3)]

(The 3g cannot stay at slot 0: the second 1g.10gb would need slot 7, where no 1g may start.)

Sources: memory/SM fractions and maximum counts from the NVIDIA MIG User Guide
"Supported MIG Profiles" (driver branch r590 edition) [DOC], cross-checked against NVIDIA
mig-parted's config-default.yaml [SRC]; placements from the guide's ``-lgipp`` example for
A100, identical on H100/H200 [3P]; usable GiB and SM counts from ``nvidia-smi`` output, one
source per table, named with its driver in :data:`LGIP_SOURCES` (SM counts are fixed by the
hardware; usable GiB move by a fraction of a GiB between drivers). Whole-GPU SM counts: A100
108 (NVIDIA A100 Tensor Core GPU Architecture whitepaper), H100 SXM5 and H200 132 (NVIDIA
H100 datasheet; ``7g`` instances report all 132). The H100 PCIe card has 114 SMs and smaller
per-profile counts; this table is the SXM5 part's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from types import MappingProxyType

from lab02_device_plugin.errors import InputError

MEMORY_SLICES = 8
COMPUTE_SLICES = 7
MAX_INSTANCES = 7


@dataclass(frozen=True)
class MigProfile:
    """One GPU-instance profile of one GPU model.

    Attributes:
        name: profile name, e.g. ``1g.10gb`` or ``1g.10gb+me`` (media extensions).
        gpu_model: table key, e.g. ``H100-80GB``.
        gi_profile_id: nvidia-smi GI profile ID (19, 20, 15, 14, 9, 5, 0).
        compute_slices: compute slices (the ``Ng`` part), of 7.
        memory_slices: memory slices (placement size), of 8.
        max_instances: most instances of this profile on one GPU.
        placements: valid start slots on the 8-slice memory axis.
        memory_gib: usable memory reported by ``-lgip`` (GiB), or None when not captured.
        multiprocessors: SMs reported by ``-lgip``, or None when not captured.
        gpu_sms: SMs of the whole GPU without MIG (108 on A100, 132 on H100 SXM5/H200).
    """

    name: str
    gpu_model: str
    gi_profile_id: int
    compute_slices: int
    memory_slices: int
    max_instances: int
    placements: tuple[int, ...]
    memory_gib: float | None = None
    multiprocessors: int | None = None
    gpu_sms: int | None = None

    @property
    def sm_share(self) -> float:
        """Share of the whole GPU's SMs this instance gets, ``multiprocessors / gpu_sms``
        (0.4545 for an H100 ``3g.40gb``: 60 of 132); the nominal ``compute_slices / 7``
        when the SM counts are unknown."""
        if self.multiprocessors is None or not self.gpu_sms:
            return float(self.compute_fraction)
        return self.multiprocessors / self.gpu_sms

    @property
    def memory_fraction(self) -> Fraction:
        """Share of the GPU's memory, ``memory_slices / 8``."""
        return Fraction(self.memory_slices, MEMORY_SLICES)

    @property
    def compute_fraction(self) -> Fraction:
        """Nominal share of compute, ``compute_slices / 7``; the real SM share is
        :attr:`sm_share`."""
        return Fraction(self.compute_slices, COMPUTE_SLICES)

    @property
    def bandwidth_share(self) -> float:
        """Share of the GPU's memory bandwidth, ``memory_slices / 8``: a memory slice is
        about an eighth of the GPU's memory resources, capacity and bandwidth, with its
        memory controllers and L2 slices (NVIDIA MIG User Guide, "Terminology")."""
        return self.memory_slices / MEMORY_SLICES

    @property
    def media_extensions(self) -> bool:
        """True for ``+me`` profiles: the one small instance per GPU that gets every media
        engine type. On the A100 ``1g.5gb`` has no NVDEC, JPEG or OFA and ``1g.5gb+me`` one
        of each; on the H100 and H200 every 1g already has an NVDEC and a JPEG decoder and
        ``+me`` adds the optical-flow accelerator (OFA) (MIG User Guide, "Supported MIG
        Profiles"). The A30 also has ``2g.12gb+me``, not tabled here."""
        return self.name.endswith("+me")


# (suffix, GI id, compute slices, memory slices, max, placements)
_SHAPES = (
    ("1g.S", 19, 1, 1, 7, (0, 1, 2, 3, 4, 5, 6)),
    ("1g.S+me", 20, 1, 1, 1, (0, 1, 2, 3, 4, 5, 6)),
    ("1g.D", 15, 1, 2, 4, (0, 2, 4, 6)),
    ("2g.D", 14, 2, 2, 3, (0, 2, 4)),
    ("3g.Q", 9, 3, 4, 2, (0, 4)),
    ("4g.Q", 5, 4, 4, 1, (0,)),
    ("7g.F", 0, 7, 8, 1, (0,)),
)

# model -> (nominal GB, whole-GPU SMs, names for S/D/Q/F memory sizes,
#           -lgip (GiB, SMs) per shape in _SHAPES order; sources in LGIP_SOURCES)
_MODELS: MappingProxyType = MappingProxyType({
    "A100-40GB": (40, 108, {"S": "5gb", "D": "10gb", "Q": "20gb", "F": "40gb"},
                  ((4.75, 14), (4.75, 14), (9.62, 14), (9.62, 28), (19.50, 42), (19.50, 56),
                   (39.25, 98))),
    "A100-80GB": (80, 108, {"S": "10gb", "D": "20gb", "Q": "40gb", "F": "80gb"},
                  ((9.75, 14), (9.75, 14), (19.50, 14), (19.50, 28), (39.25, 42), (39.25, 56),
                   (78.5, 98))),
    "H100-80GB": (80, 132, {"S": "10gb", "D": "20gb", "Q": "40gb", "F": "80gb"},
                  ((9.75, 16), (9.75, 16), (19.62, 26), (19.62, 32), (39.50, 60), (39.50, 64),
                   (79.25, 132))),
    "H200-141GB": (141, 132, {"S": "18gb", "D": "35gb", "Q": "71gb", "F": "141gb"},
                   ((16.00, 16), (16.00, 16), (32.25, 26), (32.25, 32), (69.50, 60),
                    (69.50, 64), (139.75, 132))),
})

#: Where each table's usable GiB and SM counts come from, with the driver where the source
#: names it (the NVIDIA MIG User Guide gives fractions, not these numbers).
LGIP_SOURCES: MappingProxyType = MappingProxyType({
    "A100-40GB": "the nvidia-smi mig -lgip example in the NVIDIA MIG User Guide",
    "A100-80GB": ("1g.20gb: nvidia-smi -q -x, driver 535.54.03 (telegraf test data); the "
                  "rest: public nvidia-smi mig -lgip transcripts, driver not recorded "
                  "(7g.80gb reads 78.50 to 79.00 GiB with different drivers)"),
    "H100-80GB": ("1g.10gb, 2g.20gb, 3g.40gb: nvidia-smi -q of an H100 80GB HBM3, driver "
                  "590.48.01 (nvidia_gpu_exporter captures); the rest: public nvidia-smi "
                  "mig -lgip transcripts, driver not recorded"),
    "H200-141GB": "nvidia-smi mig -lgip in NVIDIA/mig-parted issue #120, driver not recorded",
})


@dataclass(frozen=True)
class MigGpu:
    """A MIG-capable GPU as NVIDIA's MIG User Guide lists it.

    Attributes:
        name: product name as in the guide's "Supported GPUs" table.
        max_instances: most GPU instances on one GPU.
        memory_slices, compute_slices: the slice geometry, where the guide's profile table
            gives it (None otherwise).
        min_driver: the first driver branch with MIG on it ("Deployment Considerations").
        table: the key of :data:`PROFILE_TABLES` when this module plans layouts for it.
        half_profile: a profile with exactly half the memory and half the SMs, where the
            guide's table has one and this module has no table (A30: ``2g.12gb``, 2/4 of
            each).
    """

    name: str
    max_instances: int
    memory_slices: int | None
    compute_slices: int | None
    min_driver: str
    table: str | None = None
    half_profile: str | None = None


#: MIG-capable GPUs (NVIDIA MIG User Guide, "Supported GPUs" and "Deployment
#: Considerations", r620 edition). Keys are lower-case short names. The B300 appears only
#: in the guide's driver table; its 7 instances are those of the GPU Operator's MIG
#: configurations for it (seven 1g.34gb), a secondary source. The H100 80GB comes as SXM5
#: (132 SMs) and PCIe (114 SMs); the SM counts of the ``H100-80GB`` table are the SXM5's,
#: so the PCIe card is listed without a table.
MIG_GPUS: MappingProxyType = MappingProxyType({
    "a30": MigGpu("A30", 4, 4, 4, "R460", half_profile="2g.12gb"),
    "a100-40gb": MigGpu("A100 40GB", 7, 8, 7, "R450", "A100-40GB"),
    "a100-80gb": MigGpu("A100 80GB", 7, 8, 7, "R450", "A100-80GB"),
    "h100-80gb": MigGpu("H100 SXM5 80GB", 7, 8, 7, "R525", "H100-80GB"),
    "h100-pcie-80gb": MigGpu("H100 PCIe 80GB", 7, 8, 7, "R525"),
    "h100-94gb": MigGpu("H100 94GB (SXM5, NVL)", 7, 8, 7, "R525"),
    "gh200": MigGpu("H100 on GH200 (96GB)", 7, 8, 7, "R525"),
    "h20": MigGpu("H20", 7, 8, 7, "R535"),
    "h200-141gb": MigGpu("H200 (SXM5, NVL)", 7, 8, 7, "R550", "H200-141GB"),
    "b200": MigGpu("B200", 7, 8, 7, "R570"),
    "gb200": MigGpu("GB200", 7, 8, 7, "R570"),
    "b300": MigGpu("B300", 7, None, None, "R580"),
    "rtx-pro-6000-blackwell": MigGpu("RTX PRO 6000 Blackwell (Server, Workstation, Max-Q)",
                                     4, None, None, "R575"),
    "rtx-pro-5000-blackwell": MigGpu("RTX PRO 5000 Blackwell", 2, None, None, "R575"),
    "rtx-pro-4500-blackwell": MigGpu("RTX PRO 4500 Blackwell", 2, None, None, "R575"),
})


def _build_tables() -> MappingProxyType:
    tables = {}
    for model, (_gb, gpu_sms, sizes, lgip) in _MODELS.items():
        profiles = {}
        for (shape, gi, c, m, mx, pl), (gib, sms) in zip(_SHAPES, lgip):
            g, rest = shape.split(".")
            size_key, _, me = rest.partition("+")
            name = f"{g}.{sizes[size_key]}" + ("+me" if me else "")
            profiles[name] = MigProfile(name, model, gi, c, m, mx, pl, gib, sms, gpu_sms)
        tables[model] = MappingProxyType(profiles)
    return MappingProxyType(tables)


#: ``PROFILE_TABLES[model][profile name] -> MigProfile`` (read-only).
PROFILE_TABLES = _build_tables()

#: GPU models with a MIG table.
GPU_MODELS = tuple(PROFILE_TABLES)


def table_name(gpu_model: str) -> str:
    """The product a profile table describes, as :data:`MIG_GPUS` names it:
    ``"H100-80GB"`` -> ``"H100 SXM5 80GB"``, ``"H200-141GB"`` -> ``"H200 (SXM5, NVL)"``.

    Raises:
        InputError: the model has no MIG table here.
    """
    profiles(gpu_model)  # raises for unknown models
    key = canonical_model(gpu_model)
    return next(g.name for g in MIG_GPUS.values() if g.table == key)


def canonical_model(product_name: str) -> str | None:
    """Map an nvidia-smi product name (or a table key) to a :data:`PROFILE_TABLES` key.

    ``"NVIDIA A100-SXM4-80GB"`` -> ``"A100-80GB"``, ``"NVIDIA H100 80GB HBM3"`` ->
    ``"H100-80GB"``, ``"NVIDIA H200"`` -> ``"H200-141GB"``; None for GPUs without a table
    (consumer GPUs, H100 NVL 94GB, ``"NVIDIA H100 PCIe"``: its 114 SMs give other
    per-profile counts than the SXM5 table's).
    """
    if product_name in PROFILE_TABLES:
        return product_name
    name = product_name.upper()
    if "A100" in name:
        return "A100-80GB" if "80GB" in name else "A100-40GB"
    if "H100" in name and not re.search(r"9[46]GB|NVL|GH200|PCIE", name):
        return "H100-80GB"
    if "H200" in name:
        return "H200-141GB"
    return None


def profiles(gpu_model: str) -> MappingProxyType:
    """The profile table of ``gpu_model`` (a table key or an nvidia-smi product name).

    Raises:
        InputError: the model has no MIG table here.
    """
    key = canonical_model(gpu_model)
    if key is None:
        raise InputError(f"GPU model {gpu_model!r}: no MIG profile table; expected one of "
                         f"{', '.join(GPU_MODELS)}")
    return PROFILE_TABLES[key]


def get_profile(gpu_model: str, name: str) -> MigProfile:
    """Look up one profile. Raises InputError naming the profile and the valid ones."""
    table = profiles(gpu_model)
    try:
        return table[name]
    except KeyError:
        raise InputError(f"MIG profile {name!r} does not exist on {canonical_model(gpu_model)}; "
                         f"expected one of {', '.join(table)}") from None


def nominal_memory_gb(gpu_model: str) -> int:
    """The GPU's nominal memory in GB (40, 80, 80, 141), the number in the profile names."""
    key = canonical_model(gpu_model)
    profiles(gpu_model)  # raises for unknown models
    return _MODELS[key][0]


def gpu_multiprocessors(gpu_model: str) -> int:
    """SMs of the whole GPU without MIG: 108 (A100), 132 (H100 SXM5, H200).

    Raises:
        InputError: the model has no MIG table here.
    """
    key = canonical_model(gpu_model)
    profiles(gpu_model)  # raises for unknown models
    return _MODELS[key][1]


def mixed_resource_name(profile_name: str) -> str:
    """Extended resource name of a MIG profile under ``migStrategy: mixed``.

    ``"1g.10gb"`` -> ``"nvidia.com/mig-1g.10gb"``; ``"1g.10gb+me"`` ->
    ``"nvidia.com/mig-1g.10gb.me"`` ("+" is not allowed in a resource name, so NVIDIA's
    plugin replaces it by "."; NVIDIA internal/rm/device_map.go).
    """
    ### BEGIN SOLUTION
    return "nvidia.com/mig-" + profile_name.replace("+", ".")
    ### END SOLUTION


# --------------------------------------------------------------------------- placement

@dataclass(frozen=True)
class Placement:
    """A GPU instance of ``profile`` on memory slots ``start .. start + memory_slices - 1``."""

    profile: MigProfile
    start: int

    @property
    def slots(self) -> range:
        """The memory slots it occupies."""
        return range(self.start, self.start + self.profile.memory_slices)


@dataclass(frozen=True)
class Layout:
    """A valid set of GPU instances on one GPU (no overlap, within every limit).

    Attributes:
        gpu_model: table key.
        placements: the instances, in the order they were asked for.
    """

    gpu_model: str
    placements: tuple[Placement, ...]

    @property
    def memory_slices_used(self) -> int:
        """Memory slices taken, of 8."""
        return sum(p.profile.memory_slices for p in self.placements)

    @property
    def compute_slices_used(self) -> int:
        """Compute slices taken, of 7."""
        return sum(p.profile.compute_slices for p in self.placements)

    @property
    def multiprocessors_used(self) -> int | None:
        """SMs held by the instances (None when a profile's SM count is unknown)."""
        counts = [p.profile.multiprocessors for p in self.placements]
        return None if any(c is None for c in counts) else sum(counts)

    def slot_owners(self) -> list[int | None]:
        """For each of the 8 memory slots, the index of the placement using it, or None."""
        owners: list[int | None] = [None] * MEMORY_SLICES
        for i, p in enumerate(self.placements):
            for s in p.slots:
                owners[s] = i
        return owners

    def addable_profiles(self) -> list[str]:
        """Profiles that fit *this* layout as it stands: a free start slot, every instance
        left where it is. :func:`~lab02_device_plugin.models.mig_partition.addable_profiles`
        also lets the instances move."""
        out = []
        for name in profiles(self.gpu_model):
            try:
                _valid_layouts(self.gpu_model, [name], self.placements, limit=1)
            except NoLayoutError:
                continue
            out.append(name)
        return out


class NoLayoutError(InputError):
    """No valid MIG layout exists for the requested profiles; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _fits(p: MigProfile, start: int, used: list[bool]) -> bool:
    return all(not used[s] for s in range(start, start + p.memory_slices))


def plan_layout(gpu_model: str, requested: Sequence[str],
                existing: Iterable[Placement] = ()) -> Layout:
    """Place GPU instances of the ``requested`` profiles on one GPU.

    Every valid placement is considered (largest instances first, each at its valid start
    slots, identical profiles in increasing slot order); of those, the layout that leaves
    the most profiles addable in place wins, ties going to the first found (lowest slots for
    the largest instances). So ``3g.71gb + 2g.35gb + 1g.18gb`` on an H200 puts the 3g at
    slot 4, which leaves slot 3 for another 1g, rather than at slot 0, which leaves only
    slot 7, where no 1g may start. The search is exhaustive and deterministic.

    Args:
        gpu_model: table key or nvidia-smi product name.
        requested: profile names, e.g. ``["3g.40gb", "2g.20gb"]``.
        existing: instances already on the GPU (kept where they are).

    Returns:
        A :class:`Layout` with ``existing`` first, then the new instances in request order.

    Raises:
        NoLayoutError: no valid layout; the reason names the limit that is exceeded
            (instance count per profile, 7 instances, 7 compute slices, 8 memory slices,
            or no non-overlapping placement).
        InputError: an unknown profile name (the message lists the valid ones).
    """
    layouts = _valid_layouts(gpu_model, requested, existing)
    if len(layouts) == 1:
        return layouts[0]
    return max(layouts, key=lambda lay: len(lay.addable_profiles()))  # max keeps the first of ties


def _valid_layouts(gpu_model: str, requested: Sequence[str],
                   existing: Iterable[Placement], limit: int | None = None) -> list[Layout]:
    """Every valid layout of ``requested`` next to ``existing``, in search order (at most
    ``limit``, default :data:`_MAX_LAYOUTS`); raises NoLayoutError when there is none."""
    limit = _MAX_LAYOUTS if limit is None else limit
    table = profiles(gpu_model)
    model = canonical_model(gpu_model)
    existing = tuple(existing)
    wanted = [get_profile(model, n) for n in requested]
    everything = [p.profile for p in existing] + wanted
    counts: dict[str, int] = {}
    for p in everything:
        counts[p.name] = counts.get(p.name, 0) + 1
    for name, n in counts.items():
        if n > table[name].max_instances:
            raise NoLayoutError(f"{n} x {name} asked, but at most {table[name].max_instances} "
                                f"fit on {model}")
    me = sum(n for name, n in counts.items() if name.endswith("+me"))
    if me > 1:
        raise NoLayoutError(f"{me} +me instances asked, but only one instance per GPU can own "
                            "the media extensions")
    if len(everything) > MAX_INSTANCES:
        raise NoLayoutError(f"{len(everything)} instances asked, but a GPU holds at most "
                            f"{MAX_INSTANCES}")
    compute = sum(p.compute_slices for p in everything)
    if compute > COMPUTE_SLICES:
        raise NoLayoutError(f"{compute} compute slices asked ({' + '.join(p.name for p in everything)}),"
                            f" but {model} has {COMPUTE_SLICES}")
    memory = sum(p.memory_slices for p in everything)
    if memory > MEMORY_SLICES:
        raise NoLayoutError(f"{memory} memory slices asked ({' + '.join(p.name for p in everything)}),"
                            f" but {model} has {MEMORY_SLICES}")
    used = [False] * MEMORY_SLICES
    for pl in existing:
        for s in pl.slots:
            if used[s]:
                raise NoLayoutError(f"existing instances overlap at memory slot {s}")
            used[s] = True
    order = sorted(range(len(wanted)), key=lambda i: (-wanted[i].memory_slices,
                                                      -wanted[i].compute_slices, wanted[i].name, i))
    starts: dict[int, int] = {}
    found: list[Layout] = []

    def search(k: int) -> None:
        if len(found) >= limit:
            return
        if k == len(order):
            new = tuple(Placement(wanted[i], starts[i]) for i in range(len(wanted)))
            found.append(Layout(model, existing + new))
            return
        i = order[k]
        p = wanted[i]
        # identical profiles in increasing slot order: each set of slots is tried once
        floor = starts[order[k - 1]] + 1 if k and wanted[order[k - 1]].name == p.name else 0
        for start in p.placements:
            if start >= floor and _fits(p, start, used):
                for s in range(start, start + p.memory_slices):
                    used[s] = True
                starts[i] = start
                search(k + 1)
                for s in range(start, start + p.memory_slices):
                    used[s] = False

    search(0)
    if not found:
        raise NoLayoutError(
            f"no non-overlapping placement of {' + '.join(p.name for p in everything)} on "
            f"{model}: the slices add up, but the valid start slots collide (e.g. a 2g may "
            "only start at slot 0, 2 or 4, and 1g profiles never at slot 7)")
    return found


#: Most layouts :func:`plan_layout` compares (far above the few hundred a full request has).
_MAX_LAYOUTS = 10_000
