"""``python -m lab01_cluster_sim fetch-trace DIR``: download the Alibaba GPU trace (2023) and verify it."""

from __future__ import annotations

import argparse
import sys

from lab01_cluster_sim.commands._options import positive_float
from lab01_cluster_sim.fetch import (DEFAULT_BASE_URL, UPSTREAM_COMMIT, UPSTREAM_FOLDER, UPSTREAM_REPOSITORY,
                                     FetchedFile, fetch_trace, read_sums, summary)

NAME = "fetch-trace"
HELP = "download the Alibaba GPU trace (2023) CSVs from alibaba/clusterdata and check their SHA-256 sums"
DESCRIPTION = f"""\
Download the 26 CSV files of the Alibaba GPU cluster trace (2023), the data of the FGD
paper (Weng et al., USENIX ATC'23), from their upstream: the GitHub repository
{UPSTREAM_REPOSITORY}, folder {UPSTREAM_FOLDER}, at commit {UPSTREAM_COMMIT[:12]}
(about 13 MB), into DIR. Every file is checked against the SHA-256 sums that this package
ships; then `compare --trace DIR`, `simulate --trace DIR` and `sweep --runner replay
--trace DIR` use it.

Files already in DIR with the right sum are kept; an interrupted download resumes from
its .part file when run again. A file whose sum does not match is deleted and the command
stops with one line naming it, the expected and the actual sum (exit status 1).

The trace has no licence file: its owners allow research and study use and ask that the
paper be cited. That is why the course downloads it instead of shipping it.

default source:
  {DEFAULT_BASE_URL}/<file>

examples:
  python -m lab01_cluster_sim fetch-trace ~/data/alibaba-gpu-2023
  python -m lab01_cluster_sim fetch-trace ~/data/alibaba-gpu-2023 \\
      --files openb_node_list_gpu_node.csv,openb_pod_list_default.csv
  python -m lab01_cluster_sim compare --trace ~/data/alibaba-gpu-2023 \\
      --seeds 42-51
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", metavar="DIR", help="folder to put the CSV files in (created if missing)")
    parser.add_argument("--files", metavar="NAME,...",
                        help="only these files (default: all 26); the paper's main run needs "
                             "openb_node_list_gpu_node.csv and openb_pod_list_default.csv")
    parser.add_argument("--base-url", default=DEFAULT_BASE_URL, metavar="URL",
                        help="http(s) URL of a folder holding the files, e.g. a mirror (default: the upstream "
                             "commit on raw.githubusercontent.com)")
    parser.add_argument("--sums", metavar="FILE",
                        help="check against this sha256sum list instead of the shipped one (for a mirror of other "
                             "files, or tests)")
    parser.add_argument("--timeout", type=positive_float(max_value=3600), default=30.0,
                        help="seconds to wait for the server on each request (default %(default)s)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar and no per-file lines on stderr")


class _Bar:
    """Progress on stderr: a byte bar per download on a terminal, one line per finished file."""

    def __init__(self, count: int, quiet: bool) -> None:
        self.count, self.quiet, self.index, self.bar = count, quiet, 0, None

    def start(self, name: str, total: int | None, already: int) -> None:
        from lab01_cluster_sim.progress import progress_bar

        self.bar = progress_bar(total, name, unit="B", quiet=self.quiet, initial=already, unit_scale=True,
                                unit_divisor=1024)

    def advance(self, nbytes: int) -> None:
        if self.bar is not None:
            self.bar.update(nbytes)

    def done(self, result: FetchedFile) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        self.index += 1
        if not self.quiet:
            what = "already present, sum OK" if result.status == "present" else f"{result.status}, sum OK"
            print(f"[{self.index}/{self.count}] {result.name}: {result.size:,} bytes, {what}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    from lab01_cluster_sim.errors import InputError
    from lab01_cluster_sim.fetch import shipped_sums

    sums = read_sums(args.sums) if args.sums else shipped_sums()
    files = None
    if args.files is not None:
        files = [f.strip() for f in args.files.split(",") if f.strip()]
        if not files:
            raise InputError("--files: expected a comma-separated list of file names")
    count = len(sums) if files is None else len(dict.fromkeys(files))
    bar = _Bar(count, args.quiet)
    try:
        results = fetch_trace(args.dir, args.base_url, sums, files, bar, timeout=args.timeout)
    finally:
        if bar.bar is not None:
            bar.bar.close()
    print(f"{args.dir}: {summary(results)}")
    return 0
