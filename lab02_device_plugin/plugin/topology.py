"""GPU topology from ``nvidia-smi topo -m``: NUMA nodes and NVLink islands for an inventory.

An ``nvidia-smi -q -x`` dump says nothing about which GPUs are joined by NVLink, and NUMA
affinity is only in newer dumps. ``nvidia-smi topo -m`` prints both::

            GPU0    GPU1    ...  CPU Affinity    NUMA Affinity
    GPU0     X      NV18    ...  0-51,104-155    0

:func:`parse_topology` reads that matrix (space- or tab-separated, with or without NIC
columns and legend); :func:`apply_topology` copies NUMA nodes, NVLink islands and the
per-peer links onto the GPUs of an :class:`~.inventory.Inventory` (GPU<i> is the GPU with
nvidia-smi index i). GetPreferredAllocation then scores GPU pairs by their real link
(:func:`~.sharing.preferred_allocation`).

An *NVLink island* here is a connected group of GPUs in the graph of NV# links. On an
NVSwitch system (every pair NV18) that is all 8 GPUs; on a hybrid cube-mesh (V100 DGX-1,
some pairs only over PCIe) it is still one island, because every GPU reaches every other
through NVLink hops; GPUs without NVLink are in no island. The link legend (X, SYS, NODE,
PHB, PXB, PIX, NV#) is nvidia-smi's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from lab02_device_plugin.errors import InputError
from lab02_device_plugin.limits import (
    MAX_GPUS, MAX_INVENTORY_BYTES, read_text_bounded, require_utf8, short_repr, shorten,
)
from lab02_device_plugin.plugin.inventory import Inventory

_DEVICE_COL = re.compile(r"^(GPU\d+|NIC\d+|mlx\S+)$")
_LINK = re.compile(r"^(X|SYS|NODE|PHB|PXB|PIX|PSB|NV\d{1,3}|N/A)$")


@dataclass(frozen=True)
class Topology:
    """The GPU part of a ``topo -m`` matrix.

    Attributes:
        gpus: GPU column names in order (``GPU0`` ...).
        links: ``links[i][j]`` is the connection between GPU i and GPU j (``X`` on the
            diagonal, ``NV18``, ``SYS`` ...).
        numa_nodes: NUMA affinity of each GPU, or None where nvidia-smi says N/A.
    """

    gpus: tuple[str, ...]
    links: tuple[tuple[str, ...], ...]
    numa_nodes: tuple[int | None, ...]

    def nvlinks(self, i: int, j: int) -> int:
        """Number of bonded NVLinks between GPU i and GPU j (0 when not NV#)."""
        link = self.links[i][j]
        return int(link[2:]) if link.startswith("NV") else 0

    def islands(self) -> list[int | None]:
        """Island ID per GPU: connected components of NVLink, numbered by lowest GPU; None
        for a GPU with no NVLink."""
        n = len(self.gpus)
        parent = list(range(n))

        def find(a: int) -> int:
            while parent[a] != a:
                parent[a] = parent[parent[a]]
                a = parent[a]
            return a

        linked = [False] * n
        for i in range(n):
            for j in range(i + 1, n):
                if self.nvlinks(i, j) or self.nvlinks(j, i):
                    linked[i] = linked[j] = True
                    parent[find(j)] = find(i)
        ids: dict[int, int] = {}
        out: list[int | None] = []
        for i in range(n):
            if not linked[i]:
                out.append(None)
                continue
            root = find(i)
            out.append(ids.setdefault(root, len(ids)))
        return out


def parse_topology(text: str, source: str = "<topo>") -> Topology:
    """Parse ``nvidia-smi topo -m`` output.

    Raises:
        InputError: no header with GPU columns, a GPU row with the wrong number of link
            cells or an unknown link word (the message names line and cell).
    """
    lines = text.splitlines()
    header_at = None
    for n, line in enumerate(lines):
        tokens = line.split()
        # The header starts with GPU0 followed by column names; a row's 2nd cell is a link.
        if tokens[:1] == ["GPU0"] and (len(tokens) == 1 or not _LINK.match(tokens[1])):
            header_at = n
            break
    if header_at is None:
        raise InputError(f"{source}: no header line with GPU0 ...; expected `nvidia-smi topo -m` "
                         "output")
    columns = [t for t in lines[header_at].split() if _DEVICE_COL.match(t)]
    gpus = tuple(c for c in columns if c.startswith("GPU"))
    if len(gpus) > MAX_GPUS:
        raise InputError(f"{source}:{header_at + 1}: {len(gpus)} GPU columns; expected at most "
                         f"{MAX_GPUS} GPUs on one node (see lab02_device_plugin.limits)")
    links: list[tuple[str, ...]] = []
    numa: list[int | None] = []
    for n, line in enumerate(lines[header_at + 1:], start=header_at + 2):
        tokens = line.split()
        if not tokens or not re.fullmatch(r"GPU\d+", tokens[0]):
            continue
        cells = tokens[1:1 + len(columns)]
        if len(cells) != len(columns):
            raise InputError(f"{source}:{n}: {shorten(tokens[0])} has {len(cells)} link cells; expected "
                             f"{len(columns)} ({' '.join(columns)})")
        for k, cell in enumerate(cells):
            if not _LINK.match(cell):
                raise InputError(f"{source}:{n}: {tokens[0]} / {columns[k]}: unknown link "
                                 f"{short_repr(cell)}; expected X, SYS, NODE, PHB, PXB, PIX or NV<n>")
        links.append(tuple(c for c, col in zip(cells, columns) if col.startswith("GPU")))
        rest = tokens[1 + len(columns):]
        # rest: CPU affinity, NUMA affinity, [GPU NUMA ID]
        value = rest[1] if len(rest) >= 2 else None
        numa.append(int(value) if value is not None and value.isdigit() and len(value) < 10 else None)
    if len(links) != len(gpus):
        raise InputError(f"{source}: {len(links)} GPU rows for {len(gpus)} GPU columns; "
                         "expected a square GPU matrix")
    return Topology(gpus, tuple(links), tuple(numa))


def load_topology(path: str | Path) -> Topology:
    """Read a ``topo -m`` file. Raises InputError for an unreadable or malformed file."""
    p = Path(path)
    text = read_text_bounded(p, MAX_INVENTORY_BYTES, "topology (nvidia-smi topo -m)")
    require_utf8(p, text, MAX_INVENTORY_BYTES, str(p), "`nvidia-smi topo -m` output (text)")
    return parse_topology(text, str(p))


def apply_topology(inventory: Inventory, topology: Topology) -> Inventory:
    """A copy of ``inventory`` with NUMA nodes, NVLink islands and peer links from ``topology``.

    Values the topology does not know (N/A) keep the inventory's own.

    Raises:
        InputError: the GPU counts differ.
    """
    if len(topology.gpus) != len(inventory.gpus):
        raise InputError(f"topology has {len(topology.gpus)} GPUs but {inventory.source} has "
                         f"{len(inventory.gpus)}; expected the same node")
    islands = topology.islands()
    gpus = []
    for g in inventory.gpus:
        i = g.index
        numa = topology.numa_nodes[i] if topology.numa_nodes[i] is not None else g.numa_node
        links = tuple((j, topology.links[i][j]) for j in range(len(topology.gpus)) if j != i)
        gpus.append(replace(g, numa_node=numa, nvlink_island=islands[i], links=links))
    return replace(inventory, gpus=tuple(gpus))
