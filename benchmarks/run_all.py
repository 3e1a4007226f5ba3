"""Run every speed benchmark of the project, one after the other (``make bench``).

Each ``benchmarks/bench_*.py`` script is run with its default arguments in a child
process; its own output says what it measured and against which goal. This script
prints a summary and exits 1 if any benchmark exited non-zero (a missed goal, or
missing data such as the real trace).

    python benchmarks/run_all.py            # all of them
    python benchmarks/run_all.py replay     # only those whose name contains "replay"

Figures are recorded by hand, with their commands, in benchmarks/README.md.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    scripts = sorted(p for p in HERE.glob("bench_*.py") if not args or any(a in p.stem for a in args))
    if not scripts:
        print(f"no benchmark matches {args}", file=sys.stderr)
        return 1
    results = []
    for script in scripts:
        print(f"\n=== {script.name} ===", flush=True)
        start = time.perf_counter()
        code = subprocess.call([sys.executable, str(script)], cwd=HERE.parent)
        results.append((script.name, code, time.perf_counter() - start))
    print("\n=== summary ===")
    for name, code, seconds in results:
        print(f"{name:32s} {'ok' if code == 0 else f'exit {code}':>8s} {seconds:8.1f} s")
    return 0 if all(code == 0 for _, code, _ in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
