"""Where the course's real public data is: the folder beside the repository, or the one named
by ``$COURSE_SHARED_DATA`` (the rule of ``tests/conftest.py``, independent of the working
directory). The data is never shipped in the repository (the Alibaba trace has no licence
file; ``python -m lab01_cluster_sim fetch-trace`` downloads it).
"""

from __future__ import annotations

from pathlib import Path


def shared_data_dir() -> Path:
    """Folder of the real public data: ``$COURSE_SHARED_DATA``, else ``../shared/data`` beside
    the repository root (found from this package's location, not the working directory).

    The same rule as ``tests/conftest.py``. The folder may not exist; callers check.
    """
    import os

    env = os.environ.get("COURSE_SHARED_DATA")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[1].parent / "shared" / "data"


def alibaba_trace_dir() -> Path | None:
    """The Alibaba GPU trace 2023 CSV folder under :func:`shared_data_dir`, or None when absent."""
    path = shared_data_dir() / "alibaba-gpu-2023" / "csv"
    return path if (path / "openb_node_list_gpu_node.csv").is_file() else None
