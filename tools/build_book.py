#!/usr/bin/env python3
"""Build the course book (HTML) offline: ``make book`` runs this script.

Steps:

1. fetch the front-end assets (require.js, the ipywidgets embed script, MathJax 3) from
   the npm registry into ``book/_vendor/`` unless already there
   (:mod:`tools.fetch_book_assets`);
2. run ``jupyter-book build book -W -n --keep-going`` (warnings are errors; notebooks are
   executed with the jupyter-cache in ``<output>/_build/.jupyter_cache`` so an unchanged
   chapter is not run again);
3. check the HTML for anything loaded from another host (:func:`find_remote_assets`) and
   fail if there is any.

The kernels that execute the chapters get ``book/_ext/matplotlibrc`` (``MATPLOTLIBRC``) and
an IPython directory in ``<output>/_build/.ipython`` whose start-up file
(``book/_ext/figure_fonts.py``) records each PNG's smallest text size for the browser test.

Usage::

    python tools/build_book.py                      # into book/_build/html
    python tools/build_book.py --path-output DIR    # into DIR/_build/html
    python tools/build_book.py --all                # re-render every page
    python tools/build_book.py --fresh              # drop the output and the execution cache first

The execution cache is keyed on each chapter's text only: after changing a lab package,
build with ``--fresh`` so the chapters run again against the new code. One input outside
the text is tracked: whether the Alibaba GPU trace is available
(:func:`lab01_cluster_sim.shared_data.alibaba_trace_dir`). The availability of the last build is
recorded in ``<output>/_build/.trace_present``; when it changed, the cached result of the
chapter that replays the trace (:data:`TRACE_CHAPTER`) is dropped and the chapter's file is
touched, so a build with the trace never reuses a result computed without it (or back).

Exit status 0 on success, 1 when the build or a check failed (the message says which).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
BOOK_DIR = REPO_ROOT / "book"
sys.path.insert(0, str(REPO_ROOT / "tools"))

import fetch_book_assets  # noqa: E402  (tools/ is not a package)

# A tag attribute that makes the browser load something: <script src>, <link href>,
# <img src>, <iframe src>, <source src>. Plain <a href> links to references are fine.
_LOADING_ATTR = re.compile(
    r"<(script|link|img|iframe|source|embed|video|audio)\b[^>]*?\b(src|href)\s*=\s*[\"']([^\"']+)[\"']",
    re.IGNORECASE,
)
_REMOTE = re.compile(r"^(https?:)?//", re.IGNORECASE)
# Known CDNs named anywhere in a page (e.g. in a JSON config) also count.
_CDN_HOSTS = re.compile(r"(cdn\.jsdelivr\.net|cdnjs\.cloudflare\.com|unpkg\.com|"
                        r"fonts\.googleapis\.com|fonts\.gstatic\.com|thebe\.|binder)", re.IGNORECASE)


#: The chapter whose result depends on whether the real trace is present.
TRACE_CHAPTER = "ch06_cluster_scheduling"


def sync_trace_cache(build_dir: Path, present: bool, quiet: bool = False) -> bool:
    """Drop :data:`TRACE_CHAPTER`'s cached execution when the trace availability changed.

    ``build_dir`` is ``<output>/_build``. The state of the previous build is read from and
    written to ``build_dir/.trace_present`` ("1" or "0"); an unknown previous state with an
    existing cache counts as changed. Returns True when the cache entry was dropped. If the
    cache cannot be read with jupyter-cache, the whole execution cache is removed instead.
    """
    marker = build_dir / ".trace_present"
    now = "1" if present else "0"
    previous = marker.read_text(encoding="utf-8").strip() if marker.is_file() else None
    cache_dir = build_dir / ".jupyter_cache"
    dropped = False
    if previous != now and cache_dir.exists():
        try:
            from jupyter_cache import get_cache

            cache = get_cache(cache_dir)
            for record in cache.list_cache_records():
                if TRACE_CHAPTER in str(record.uri):
                    cache.remove_cache(record.pk)
        except Exception:  # noqa: BLE001 - an unreadable cache is rebuilt from scratch
            shutil.rmtree(cache_dir)
        chapter = BOOK_DIR / f"{TRACE_CHAPTER}.md"
        if chapter.is_file():
            os.utime(chapter)  # make Sphinx read (and so execute) the chapter again
        dropped = True
        if not quiet:
            state = "present" if present else "absent"
            print(f"the Alibaba trace is now {state}: re-executing {TRACE_CHAPTER}", file=sys.stderr)
    build_dir.mkdir(parents=True, exist_ok=True)
    marker.write_text(now + "\n", encoding="utf-8")
    return dropped


#: Start-up file of the kernels that execute the chapters (see :func:`install_kernel_startup`).
KERNEL_STARTUP = BOOK_DIR / "_ext" / "figure_fonts.py"


def install_kernel_startup(build_dir: Path) -> Path:
    """Make ``build_dir/.ipython`` an IPython directory whose start-up runs :data:`KERNEL_STARTUP`.

    Returns the folder to put in ``IPYTHONDIR`` for the kernels of the build: each PNG
    they draw then carries its smallest text size (``MinFontPx``), which the browser test
    reads. The reader's own IPython directory is not touched.
    """
    ipython_dir = build_dir / ".ipython"
    startup = ipython_dir / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(KERNEL_STARTUP, startup / "00-book-figure-fonts.py")
    return ipython_dir


def find_remote_assets(html_dir: Path) -> list[str]:
    """Return ``"page: url"`` for every remotely loaded asset or CDN name in the HTML.

    Looks at every ``*.html`` under ``html_dir`` (the vendored JavaScript under
    ``_static/`` is not scanned: its default CDN strings are never used because the
    pages set ``data-jupyter-widgets-cdn`` to the local folder). ``<link rel=...>`` hints
    that load nothing (``canonical``, ``alternate``) are ignored.
    """
    problems: list[str] = []
    for page in sorted(html_dir.rglob("*.html")):
        rel = page.relative_to(html_dir)
        if rel.parts and rel.parts[0] in {"_static", "_sources"}:
            continue
        text = page.read_text(encoding="utf-8", errors="replace")
        for match in _LOADING_ATTR.finditer(text):
            tag, _attr, url = match.groups()
            if tag.lower() == "link" and re.search(r"rel=[\"'](canonical|alternate)", match.group(0)):
                continue
            if _REMOTE.match(url):
                problems.append(f"{rel}: <{tag}> loads {url}")
        for match in _CDN_HOSTS.finditer(text):
            line_start = text.rfind("\n", 0, match.start()) + 1
            line = text[line_start:text.find("\n", match.end())].strip()
            if "<a " in line and "href" in line and not re.search(r"<(script|link)\b", line):
                continue  # an ordinary hyperlink the reader may follow
            problems.append(f"{rel}: names {match.group(0)}: {line[:120]}")
    return problems


def build(path_output: Path | None = None, rebuild_all: bool = False, quiet: bool = False,
          fresh: bool = False) -> int:
    """Fetch assets, build the HTML, check it; return a process exit status.

    ``fresh`` removes ``<output>/_build`` (HTML, executed notebooks, execution cache) first.
    """
    if fresh:
        out_dir = (path_output or BOOK_DIR) / "_build"
        if out_dir.exists():
            shutil.rmtree(out_dir)
    try:
        fetch_book_assets.fetch(quiet=quiet)
    except fetch_book_assets.AssetFetchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    from lab01_cluster_sim.shared_data import alibaba_trace_dir

    sync_trace_cache((path_output or BOOK_DIR) / "_build", alibaba_trace_dir() is not None, quiet)
    cmd = [sys.executable, "-c", "from jupyter_book.cli.main import main; main()",
           "build", str(BOOK_DIR), "-W", "-n", "--keep-going", "--builder", "html"]
    if path_output is not None:
        cmd += ["--path-output", str(path_output)]
    if rebuild_all:
        cmd.append("--all")
    if quiet:
        cmd.append("-q")
    env = dict(os.environ)
    env.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    # Figures at 150 dpi while the chapters execute (the kernel inherits the environment).
    env.setdefault("MATPLOTLIBRC", str(BOOK_DIR / "_ext" / "matplotlibrc"))
    # Every PNG records its smallest text size (book/_ext/figure_fonts.py), for the browser test.
    env["IPYTHONDIR"] = str(install_kernel_startup((path_output or BOOK_DIR) / "_build"))
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO_ROOT, env=env, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        print(f"error: jupyter-book build failed (exit {proc.returncode}) after {elapsed:.1f} s; "
              "warnings are errors: see the messages above", file=sys.stderr)
        return 1
    html_dir = (path_output or BOOK_DIR) / "_build" / "html"
    problems = find_remote_assets(html_dir)
    if problems:
        print("error: the built book loads assets from other hosts:", file=sys.stderr)
        for line in problems:
            print(f"  {line}", file=sys.stderr)
        return 1
    if not quiet:
        print(f"book built in {elapsed:.1f} s: {html_dir / 'index.html'}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; see the module docstring."""
    parser = argparse.ArgumentParser(description="Build the course book (HTML) offline, "
                                     "with warnings as errors and a no-CDN check.")
    parser.add_argument("--path-output", type=Path, default=None,
                        help="build into PATH/_build/html instead of book/_build/html")
    parser.add_argument("--all", dest="rebuild_all", action="store_true",
                        help="re-render every page (the execution cache is still used)")
    parser.add_argument("--fresh", action="store_true",
                        help="remove the previous output and execution cache first (use after "
                        "changing a lab package: the cache only tracks the chapters' text)")
    parser.add_argument("--quiet", action="store_true", help="less output")
    args = parser.parse_args(argv)
    return build(args.path_output, args.rebuild_all, args.quiet, args.fresh)


if __name__ == "__main__":
    sys.exit(main())
