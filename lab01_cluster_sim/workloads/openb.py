"""Loaders for the Alibaba GPU cluster trace 2023 ("openb", Weng et al., ATC'23).

Two kinds of CSV (columns and units in the trace's README.md, cluster-trace-gpu-v2023/ of
the GitHub repository alibaba/clusterdata):

- node lists ``openb_node_list_*.csv``: ``sn,cpu_milli,memory_mib,gpu,model``;
- pod lists ``openb_pod_list_*.csv``: ``name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,
  qos,pod_phase,creation_time,deletion_time,scheduled_time``; the ``multigpu*`` lists have only
  the first five columns.

Every row is validated before anything is returned: a missing column, a non-numeric value, a
negative request or an impossible shape raises
:class:`~lab01_cluster_sim.errors.TraceFormatError` naming ``file:line:column`` (the header is
line 1). Unknown extra columns are ignored.

Files are UTF-8 text (a leading byte-order mark is accepted), comma-separated, with each
column named once in the header.

Bounds (so that no value overflows the int64 arithmetic of the fragmentation measure, and a
typo is caught): a node has at most :data:`MAX_GPUS_PER_NODE` (16) GPUs (the openb nodes have
at most 8; the largest common servers 8 or 16); a pod asks at most 16 GPUs; CPU at most
:data:`MAX_CPU_MILLI` (10,000,000 milli-cores, 10,000 cores) and memory at most
:data:`MAX_MEMORY_MIB` (2**30 MiB, 1 PiB) per node or pod. A list must be a regular file of at
most :data:`MAX_FILE_BYTES` (32 MiB) with lines of at most :data:`MAX_LINE_CHARS` (4,096)
characters and at most :data:`MAX_ROWS` (200,000) rows; the size is checked before reading, so
a device such as /dev/zero, a FIFO or a sparse multi-gigabyte file is refused at once.

Deviation from the FGD simulator's ``data/pod_csv_to_yaml.py``, which clamps
``gpu_milli`` above 1000 to 1000 and zeroes the share of a pod with ``num_gpu`` 0: no row of
the published pod lists needs either repair (checked on all 24 lists), so such a row is
malformed input here and raises, naming file:line:column, instead of being silently
changed. A CPU-only pod (``num_gpu`` 0, ``gpu_milli`` 0) gets no GPU model; ``gpu_spec``
is split on ``|`` with empty tokens dropped. For the timed mode (the paper's
replay ignores time): ``submit_time = creation_time`` and ``duration = deletion_time -
scheduled_time``; a pod never scheduled in the trace (empty ``scheduled_time``, phase Pending)
gets ``deletion_time - creation_time``, the time it stayed in the trace. Lists without times
(``multigpu*``) give submit time 0 and duration 0.
"""

from __future__ import annotations

import csv
import functools
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lab01_cluster_sim.errors import InputError, TraceFormatError
from lab01_cluster_sim.model import MILLI_PER_GPU, Job, Node, format_seconds

NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
POD_TIME_COLUMNS = ("gpu_spec", "qos", "pod_phase", "creation_time", "deletion_time", "scheduled_time")
DEFAULT_NODE_LIST = "openb_node_list_gpu_node.csv"
MAX_GPUS_PER_NODE = 16
"""Most GPUs on one node (and asked by one pod) the loaders accept."""
MAX_CPU_MILLI = 10_000_000
"""Most CPU, milli-cores, of one node or pod the loaders accept (10,000 cores)."""
MAX_MEMORY_MIB = 2**30
"""Most memory, MiB, of one node or pod the loaders accept (1 PiB)."""
_MAX = {"gpu": MAX_GPUS_PER_NODE, "num_gpu": MAX_GPUS_PER_NODE, "cpu_milli": MAX_CPU_MILLI,
        "memory_mib": MAX_MEMORY_MIB, "gpu_milli": MILLI_PER_GPU}
DEFAULT_POD_LIST = "openb_pod_list_default.csv"
MAX_FILE_BYTES = 32 * 2**20
"""Largest node or pod list, bytes, the loaders read (32 MiB; the largest published list,
``openb_pod_list_cpu300.csv``, is 710,698 bytes). Checked before reading, so a huge or sparse
file costs nothing."""
MAX_LINE_CHARS = 4096
"""Longest CSV line, characters, the loaders accept (the published lists have at most 119)."""
MAX_ROWS = 200_000
"""Most data rows in one node or pod list (the published lists have at most 10,094; a
200,000-pod list already takes minutes to replay)."""


@dataclass(frozen=True)
class PodList:
    """A loaded pod list: records plus numpy columns for fast replay.

    Attributes:
        path: the CSV file.
        jobs: one single-worker :class:`Job` per row, in file order (``job_id`` = ``name``).
        qos: QoS class per row (``""`` when the list has no such column).
        phase: pod phase per row (``""`` when absent).
        creation_time, deletion_time, scheduled_time: float64 (P,), seconds from the trace start,
            NaN when absent or empty.
        cpu_milli, memory_mib, num_gpus, gpu_milli: int64 (P,) columns of ``jobs``.
    """

    path: Path
    jobs: tuple[Job, ...]
    qos: tuple[str, ...]
    phase: tuple[str, ...]
    creation_time: np.ndarray
    deletion_time: np.ndarray
    scheduled_time: np.ndarray

    def __len__(self) -> int:
        return len(self.jobs)

    @functools.cached_property
    def cpu_milli(self) -> np.ndarray:
        return np.array([j.cpu_milli for j in self.jobs], dtype=np.int64)

    @functools.cached_property
    def memory_mib(self) -> np.ndarray:
        return np.array([j.memory_mib for j in self.jobs], dtype=np.int64)

    @functools.cached_property
    def num_gpus(self) -> np.ndarray:
        return np.array([j.gpus_per_worker for j in self.jobs], dtype=np.int64)

    @functools.cached_property
    def gpu_milli(self) -> np.ndarray:
        return np.array([j.gpu_milli for j in self.jobs], dtype=np.int64)

    def gpu_request_milli(self) -> int:
        """Total GPU request, milli-GPU: sum of k * u (6,086,800 for the default list)."""
        return int(sum(j.gpus_per_worker * j.gpu_milli for j in self.jobs))


def _lines(handle, path: Path, max_rows: int | None = None, what: str = "rows"):
    """Yield the lines of ``handle``, refusing one longer than :data:`MAX_LINE_CHARS` or more
    than ``max_rows`` (at most and by default :data:`MAX_ROWS`) + 1 lines, so a hostile file cannot exhaust
    memory; ``what`` names the rows in the message (``"nodes"``)."""
    max_rows = MAX_ROWS if max_rows is None else min(max_rows, MAX_ROWS)
    number = 0
    while True:
        text = handle.readline(MAX_LINE_CHARS + 2)
        if not text:
            return
        number += 1
        if len(text.rstrip("\r\n")) > MAX_LINE_CHARS:
            raise TraceFormatError(str(path), number, None,
                                   f"line longer than {MAX_LINE_CHARS:,} characters; expected a CSV row of "
                                   "the openb trace (at most about 120 characters)")
        if number > max_rows + 1:
            raise TraceFormatError(str(path), number, None,
                                   f"more than {max_rows:,} {what}; expected at most {max_rows:,} {what}")
        yield text


def check_file(path: Path) -> None:
    """Refuse a path that is not a regular file of at most :data:`MAX_FILE_BYTES` (a folder,
    a device such as /dev/zero, a FIFO, a sparse multi-gigabyte file) before opening it."""
    try:
        info = path.stat()
    except OSError as exc:
        raise TraceFormatError(str(path), None, None, f"cannot read: {exc.strerror or exc}") from None
    if stat.S_ISDIR(info.st_mode):
        raise TraceFormatError(str(path), None, None, "is a folder; expected a CSV file")
    if not stat.S_ISREG(info.st_mode):
        raise TraceFormatError(str(path), None, None, "is not a regular file (a device, FIFO or socket); "
                                                      "expected a CSV file")
    if info.st_size > MAX_FILE_BYTES:
        raise TraceFormatError(str(path), None, None,
                               f"is {info.st_size:,} bytes; expected a CSV file of at most "
                               f"{MAX_FILE_BYTES:,} bytes ({MAX_FILE_BYTES // 2**20} MiB)")


def _read(path: Path, required: Sequence[str], max_rows: int | None = None,
          what: str = "rows") -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    check_file(path)
    try:
        handle = open(path, newline="", encoding="utf-8-sig")
    except OSError as exc:
        raise TraceFormatError(str(path), None, None, f"cannot read: {exc.strerror or exc}") from None
    line = 1
    reader = None
    try:
        with handle:
            reader = csv.reader(_lines(handle, path, max_rows, what))
            header = next(reader, None)
            if header is None:
                raise TraceFormatError(str(path), 1, None,
                                       f"empty file; expected a header with {', '.join(required)}")
            header = [h.strip() for h in header]
            if len(header) == 1:
                for sep, name in ((";", "semicolon"), ("\t", "tab"), ("|", "bar")):
                    if sep in header[0]:
                        raise TraceFormatError(str(path), 1, None,
                                               f"the header is {name}-separated; expected a comma-separated CSV "
                                               f"with columns {', '.join(required)}")
            dup = sorted({h for h in header if header.count(h) > 1})
            if dup:
                raise TraceFormatError(str(path), 1, dup[0],
                                       f"column {dup[0]!r} appears {header.count(dup[0])} times in the header; "
                                       "expected each column once")
            for col in required:
                if col not in header:
                    raise TraceFormatError(str(path), 1, col,
                                           f"missing column {col!r}; expected columns {', '.join(required)}")
            rows = []
            for values in reader:
                line = reader.line_num
                if not values:
                    continue
                if len(values) != len(header):
                    raise TraceFormatError(str(path), line, None,
                                           f"{len(values)} fields, expected {len(header)} as in the header")
                rows.append((line, dict(zip(header, values))))
    except csv.Error as exc:
        where = reader.line_num if reader is not None and reader.line_num else line
        raise TraceFormatError(str(path), where, None, f"malformed CSV ({exc}); expected comma-separated "
                                                       "fields, quotes closed on the same line") from None
    except UnicodeDecodeError:
        with open(path, "rb") as raw_handle:
            raw = raw_handle.read(MAX_FILE_BYTES)
        try:
            raw.decode("utf-8-sig")
            start = 0  # pragma: no cover - the decoder failed above
        except UnicodeDecodeError as exc:
            start = exc.start + (3 if raw.startswith(b"\xef\xbb\xbf") else 0)
        bad_line = raw.count(b"\n", 0, start) + 1
        col = start - (raw.rfind(b"\n", 0, start) + 1) + 1
        raise TraceFormatError(str(path), bad_line, None,
                               f"byte 0x{raw[start]:02x} at byte {col} of the line is not UTF-8; expected a UTF-8 "
                               "CSV file (re-save it as UTF-8)") from None
    return header, rows


def _int(path: Path, line: int, row: dict[str, str], col: str) -> int:
    text = row[col].strip()
    try:
        value = int(text)
    except ValueError:
        try:
            as_float = float(text)
        except ValueError:
            raise TraceFormatError(str(path), line, col, f"expected a non-negative integer, got {text!r}") from None
        if not as_float.is_integer():
            raise TraceFormatError(str(path), line, col, f"expected a non-negative integer, got {text!r}") from None
        value = int(as_float)
    if value < 0:
        raise TraceFormatError(str(path), line, col, f"expected a non-negative integer, got {value}")
    if col in _MAX and value > _MAX[col]:
        raise TraceFormatError(str(path), line, col, f"expected an integer from 0 to {_MAX[col]:,}, got {text}")
    return value


def _time(path: Path, line: int, row: dict[str, str], col: str) -> float:
    text = row.get(col, "").strip()
    if not text:
        return float("nan")
    try:
        value = float(text)
    except ValueError:
        raise TraceFormatError(str(path), line, col, f"expected a time in seconds or empty, got {text!r}") from None
    if not np.isfinite(value) or value < 0:
        raise TraceFormatError(str(path), line, col, f"expected a time >= 0 in seconds, got {text!r}")
    return value


def load_nodes(path: str | Path, max_nodes: int | None = None) -> list[Node]:
    """Nodes of an openb node list, in file order (``name`` = ``sn``, ``gpu_model`` = ``model``).

    ``max_nodes`` caps the rows below :data:`MAX_ROWS` (the ``run`` command's scenario reader
    passes ``simulate --nodes``'s cap, 100,000); the file is refused at row ``max_nodes + 1``
    before the rest is read.

    Raises:
        TraceFormatError: unreadable or non-UTF-8 file, not comma-separated, missing or
            duplicated column, non-numeric, negative or out-of-bound value (more than
            :data:`MAX_GPUS_PER_NODE` GPUs...), GPUs without a model, or a duplicate node
            name (naming file:line:column).
    """
    path = Path(path)
    _, rows = _read(path, NODE_COLUMNS, max_nodes, "rows" if max_nodes is None else "nodes")
    nodes: list[Node] = []
    seen: dict[str, int] = {}
    for line, row in rows:
        name = row["sn"].strip()
        if not name:
            raise TraceFormatError(str(path), line, "sn", "empty node name")
        if name in seen:
            raise TraceFormatError(str(path), line, "sn", f"duplicate node name {name!r} (first on line {seen[name]})")
        seen[name] = line
        cpu, mem, gpu = (_int(path, line, row, c) for c in ("cpu_milli", "memory_mib", "gpu"))
        model = row["model"].strip()
        if gpu > 0 and not model:
            raise TraceFormatError(str(path), line, "model", f"a node with {gpu} GPUs needs a GPU model")
        nodes.append(Node(name=name, gpu_model=model if gpu > 0 else "", gpu_count=gpu, cpu_milli=cpu, memory_mib=mem))
    if not nodes:
        raise TraceFormatError(str(path), None, None, "no nodes")
    return nodes


def load_pods(path: str | Path) -> PodList:
    """Pods of an openb pod list (any variant), validated in full before returning.

    Raises:
        TraceFormatError: unreadable or non-UTF-8 file, not comma-separated, missing or
            duplicated column, non-numeric, negative or out-of-bound value (see the module
            docstring; ``gpu_milli`` above 1000 included), a multi-GPU pod asking for a
            fractional share, a GPU pod with share 0, a CPU-only pod with a share, or a
            duplicate pod name (naming file:line:column).
    """
    path = Path(path)
    header, rows = _read(path, POD_COLUMNS)
    timed = all(c in header for c in ("creation_time", "deletion_time", "scheduled_time"))
    jobs: list[Job] = []
    qos: list[str] = []
    phase: list[str] = []
    times = np.full((len(rows), 3), np.nan)
    seen: dict[str, int] = {}
    for i, (line, row) in enumerate(rows):
        name = row["name"].strip()
        if not name:
            raise TraceFormatError(str(path), line, "name", "empty pod name")
        if name in seen:
            raise TraceFormatError(str(path), line, "name", f"duplicate pod name {name!r} (first on line {seen[name]})")
        seen[name] = line
        cpu, mem, k, milli = (_int(path, line, row, c) for c in ("cpu_milli", "memory_mib", "num_gpu", "gpu_milli"))
        models: tuple[str, ...] = ()
        if k == 0:
            if milli != 0:
                raise TraceFormatError(str(path), line, "gpu_milli",
                                       f"a pod with num_gpu 0 must have gpu_milli 0, got {milli}")
        else:
            if milli == 0:
                raise TraceFormatError(str(path), line, "gpu_milli", f"a pod with {k} GPUs needs gpu_milli in 1..1000, got 0")
            if k > 1 and milli != MILLI_PER_GPU:
                raise TraceFormatError(str(path), line, "gpu_milli",
                                       f"a pod with {k} GPUs must ask for whole GPUs (1000), got {milli}")
            models = tuple(t.strip() for t in row.get("gpu_spec", "").split("|") if t.strip())
        created, deleted, scheduled = (_time(path, line, row, c) for c in ("creation_time", "deletion_time", "scheduled_time"))
        times[i] = (created, deleted, scheduled)
        submit, duration = 0.0, 0.0
        if timed and not np.isnan(created):
            submit = created
            start = scheduled if not np.isnan(scheduled) else created
            if not np.isnan(deleted):
                if deleted < start:
                    raise TraceFormatError(str(path), line, "deletion_time",
                                           f"deletion_time {format_seconds(deleted)} is before the pod started "
                                           f"({format_seconds(start)})")
                duration = deleted - start
        try:
            job = Job(job_id=name, submit_time=submit, duration=duration, gpus_per_worker=k, gpu_milli=milli,
                      cpu_milli=cpu, memory_mib=mem, gpu_models=models)
        except InputError as exc:  # pragma: no cover - every case is caught above
            raise TraceFormatError(str(path), line, None, str(exc)) from None
        jobs.append(job)
        qos.append(row.get("qos", "").strip())
        phase.append(row.get("pod_phase", "").strip())
    if not jobs:
        raise TraceFormatError(str(path), None, None, "no pods")
    return PodList(path=path, jobs=tuple(jobs), qos=tuple(qos), phase=tuple(phase),
                   creation_time=times[:, 0], deletion_time=times[:, 1], scheduled_time=times[:, 2])


def unknown_gpu_models(nodes: Sequence[Node], jobs: Sequence[Job]) -> tuple[int, tuple[str, ...]]:
    """Pods that ask for GPU models no node has, so they can never be placed.

    Returns:
        (number of such pods, the models they ask for, sorted); a pod with no ``gpu_models``
        (any model) or with one model some node has is not counted.
    """
    have = {n.gpu_model for n in nodes if n.gpu_count > 0}
    count, asked = 0, set()
    for j in jobs:
        if j.gpu_models and j.gpus_per_worker > 0 and not have.intersection(j.gpu_models):
            count += 1
            asked.update(j.gpu_models)
    return count, tuple(sorted(asked))


def unknown_models_note(nodes: Sequence[Node], jobs: Sequence[Job], node_list: str) -> str | None:
    """A one-line note for the commands when some pods ask for GPU models ``node_list`` lacks
    (e.g. ``note: 16,151 of 16,151 pods ask only for GPU model NOSUCHGPU, which no node of
    openb_node_list_gpu_node.csv has: they can never be placed``), or None."""
    count, models = unknown_gpu_models(nodes, jobs)
    if not count:
        return None
    have = sorted({n.gpu_model for n in nodes if n.gpu_count > 0})
    shown = ", ".join(models[:5]) + (f" and {len(models) - 5} more" if len(models) > 5 else "")
    return (f"note: {count:,} of {len(jobs):,} pods ask only for GPU model{'s' if len(models) > 1 else ''} {shown}, "
            f"which no node of {node_list} has ({', '.join(have[:8]) or 'no GPU nodes'}"
            f"{' ...' if len(have) > 8 else ''}): they can never be placed")


def resolve_pod_list(folder: str | Path, name: str | None = None) -> Path:
    """The pod-list file in ``folder`` for ``name``: ``None`` or ``"default"`` ->
    ``openb_pod_list_default.csv``; ``"gpushare40"`` -> ``openb_pod_list_gpushare40.csv``;
    a file name or path is used as is.

    Raises:
        InputError: no such file (the message lists the pod lists found in ``folder``).
    """
    folder = Path(folder)
    if name is not None:
        for c in (Path(name), folder / name):
            if c.is_dir():
                raise InputError(f"pod list {name!r}: {c} is a folder; expected a pod list name such as "
                                 "'default' or 'gpushare40', or a CSV file")
    candidates = []
    if name is None:
        candidates.append(folder / DEFAULT_POD_LIST)
    else:
        candidates += [Path(name), folder / name, folder / f"openb_pod_list_{name}.csv", folder / f"{name}.csv"]
    for c in candidates:
        if c.is_file():
            return c
    known = sorted(p.name.removeprefix("openb_pod_list_").removesuffix(".csv") for p in folder.glob("openb_pod_list_*.csv"))
    raise InputError(f"pod list {name or 'default'!r} not found in {folder}; expected a CSV file or one of: "
                     f"{', '.join(known) if known else '(no openb_pod_list_*.csv there)'}")


def check_trace_folder(folder: str | Path) -> Path:
    """``folder`` as a Path when it is a folder (``--trace``).

    Raises:
        InputError: it does not exist (the message says how to download the trace into it),
            or it is something else than a folder.
    """
    folder = Path(folder)
    if not folder.exists():
        raise InputError(f"--trace {folder}: does not exist; expected the folder holding the openb CSV files "
                         f"(python -m lab01_cluster_sim fetch-trace {folder} downloads them)")
    if not folder.is_dir():
        raise InputError(f"--trace {folder}: not a folder; expected the folder holding the openb CSV files")
    return folder


def describe_trace(folder: str | Path, pod_list: str | None = None, node_list: str = DEFAULT_NODE_LIST) -> str:
    """What :func:`load_trace` with these arguments reads, for a command's "loading ..." line:
    ``"openb_pod_list_default.csv and openb_node_list_gpu_node.csv from DIR"`` (the pod list
    as named when it cannot be resolved: :func:`load_trace` then says why)."""
    folder = Path(folder)
    try:
        pods = resolve_pod_list(folder, pod_list).name if folder.is_dir() else None
    except InputError:
        pods = None
    pods = pods or f"pod list {pod_list or 'default'}"
    return f"{pods} and {node_list} from {folder}"


def load_trace(folder: str | Path, pod_list: str | None = None,
               node_list: str = DEFAULT_NODE_LIST) -> tuple[list[Node], PodList]:
    """The paper's setting from a folder of openb CSVs: the GPU node list and a pod list.

    Raises:
        InputError: the folder or a file is missing; TraceFormatError: a malformed file.
    """
    folder = check_trace_folder(folder)
    node_path = folder / node_list
    if not node_path.is_file():
        raise InputError(f"node list {node_path} not found; expected {node_list} in the trace folder")
    return load_nodes(node_path), load_pods(resolve_pod_list(folder, pod_list))
