#!/usr/bin/env python3
"""Fetch the book's front-end assets from the npm registry into ``book/_vendor/``.

The rendered book needs three JavaScript packages in the browser:

* ``requirejs`` (the AMD loader the ipywidgets embed script expects),
* ``@jupyter-widgets/html-manager`` major 1 (its ``dist/embed-amd.js`` renders the widget
  state that MyST-NB embeds in each page; major 1 matches ipywidgets 8), and
* ``mathjax`` major 3 (its ``es5/tex-mml-chtml.js`` renders the math).

By default Jupyter Book loads all three from public CDNs, so an offline reader sees blank
widgets and raw TeX. This script takes them from the npm registry with ``npm pack`` (the
ordinary client, so the registry and proxy settings of the machine apply), unpacks the
parts the site needs into ``book/_vendor/`` (ignored by git; listed in Sphinx's
``html_static_path`` by ``book/_config.yml``), and writes ``book/_vendor/ASSETS.json``
recording the versions. When that record already matches the pinned versions and the
files are there, it does nothing, so repeated builds stay offline.

Usage::

    python tools/fetch_book_assets.py            # fetch if missing
    python tools/fetch_book_assets.py --force    # fetch again
    python tools/fetch_book_assets.py --check    # exit 1 if missing, fetch nothing

Errors: a missing ``npm`` or a failed ``npm pack`` raises :class:`AssetFetchError` with the
package spec and npm's message; nothing is left half-installed (files are unpacked into a
temporary folder and moved into place only when every package succeeded).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_VENDOR = REPO_ROOT / "book" / "_vendor"
RECORD_NAME = "ASSETS.json"


@dataclass(frozen=True)
class NpmAsset:
    """One npm package and the part of it the site serves.

    Attributes:
        spec: exact ``name@version`` passed to ``npm pack``.
        source: path inside the package tarball (below ``package/``) to copy.
        target: folder (relative to the vendor folder) that receives it.
        check: a file (relative to the vendor folder) whose presence means "installed".
    """

    spec: str
    source: str
    target: str
    check: str


# Pinned versions: html-manager 1.0.x is the line that renders ipywidgets 8 state
# (widget protocol version 2); MathJax 3 is what Sphinx 7's mathjax extension targets.
ASSETS: tuple[NpmAsset, ...] = (
    NpmAsset("requirejs@2.3.7", "require.js", "require.js", "require.js"),
    NpmAsset(
        "@jupyter-widgets/html-manager@1.0.7",
        "dist",
        "jupyter-widgets/html-manager/dist",
        "jupyter-widgets/html-manager/dist/embed-amd.js",
    ),
    NpmAsset("mathjax@3.2.2", "es5", "mathjax/es5", "mathjax/es5/tex-mml-chtml.js"),
)

# Source maps are large and never requested by a reader.
SKIP_SUFFIXES = (".map",)


class AssetFetchError(RuntimeError):
    """npm is missing or a package could not be fetched or unpacked."""


def is_installed(vendor: Path = DEFAULT_VENDOR) -> bool:
    """True when the record matches the pinned specs and every check file exists."""
    record = vendor / RECORD_NAME
    if not record.is_file():
        return False
    try:
        recorded = json.loads(record.read_text(encoding="utf-8")).get("packages", [])
    except (json.JSONDecodeError, AttributeError):
        return False
    if sorted(recorded) != sorted(a.spec for a in ASSETS):
        return False
    return all((vendor / a.check).is_file() for a in ASSETS)


def _npm_pack(spec: str, dest: Path) -> Path:
    """Download ``spec`` as a tarball into ``dest`` with ``npm pack``; return its path."""
    npm = shutil.which("npm")
    if npm is None:
        raise AssetFetchError(
            "npm not found on PATH: install Node.js/npm (Debian: apt-get install npm) "
            f"to fetch {spec} for the book"
        )
    proc = subprocess.run(
        [npm, "pack", spec, "--pack-destination", str(dest), "--silent", "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise AssetFetchError(f"npm pack {spec} failed: {proc.stderr.strip() or proc.stdout.strip()}")
    try:
        filename = json.loads(proc.stdout)[0]["filename"]
    except (json.JSONDecodeError, LookupError, TypeError) as exc:
        raise AssetFetchError(f"npm pack {spec}: unexpected output {proc.stdout[:200]!r}") from exc
    # Scoped names are packed as scope-name-version.tgz
    path = dest / filename.replace("@", "").replace("/", "-")
    if not path.is_file():
        candidates = sorted(dest.glob("*.tgz"))
        matches = [c for c in candidates if c.name.endswith(filename.split("/")[-1].split("@")[-1])]
        if not matches:
            raise AssetFetchError(f"npm pack {spec}: tarball {filename} not found in {dest}")
        path = matches[-1]
    return path


def _extract(tarball: Path, asset: NpmAsset, staging: Path) -> None:
    """Copy ``package/<asset.source>`` from the tarball to ``staging/<asset.target>``."""
    prefix = f"package/{asset.source}"
    copied = 0
    with tarfile.open(tarball, "r:gz") as tar:
        for member in tar.getmembers():
            if not member.isfile():
                continue
            name = member.name
            if name != prefix and not name.startswith(prefix + "/"):
                continue
            if name.endswith(SKIP_SUFFIXES):
                continue
            rel = name[len(prefix):].lstrip("/")
            out = staging / asset.target / rel if rel else staging / asset.target
            out.parent.mkdir(parents=True, exist_ok=True)
            src = tar.extractfile(member)
            if src is None:  # pragma: no cover - isfile() members always have data
                continue
            with src, open(out, "wb") as dst:
                shutil.copyfileobj(src, dst)
            copied += 1
        # keep the package's license beside what we serve
        try:
            lic = tar.extractfile("package/LICENSE")
        except KeyError:
            lic = None
        if lic is not None:
            target_dir = staging / asset.target
            lic_dir = target_dir if target_dir.is_dir() else target_dir.parent
            lic_name = "LICENSE" if target_dir.is_dir() else f"LICENSE.{Path(asset.target).stem}"
            with lic, open(lic_dir / lic_name, "wb") as dst:
                shutil.copyfileobj(lic, dst)
    if copied == 0:
        raise AssetFetchError(f"{asset.spec}: nothing under {prefix} in {tarball.name}")


def fetch(vendor: Path = DEFAULT_VENDOR, force: bool = False, quiet: bool = False) -> bool:
    """Install the pinned assets into ``vendor``.

    Returns True when something was fetched, False when everything was already there.
    Raises :class:`AssetFetchError` on failure; ``vendor`` is then left as it was.
    """
    if not force and is_installed(vendor):
        if not quiet:
            print(f"book assets already present in {vendor}", file=sys.stderr)
        return False
    with tempfile.TemporaryDirectory(prefix="book-assets-") as tmp:
        tmpdir = Path(tmp)
        staging = tmpdir / "vendor"
        staging.mkdir()
        for asset in ASSETS:
            if not quiet:
                print(f"fetching {asset.spec} from the npm registry", file=sys.stderr)
            _extract(_npm_pack(asset.spec, tmpdir), asset, staging)
        record = {"packages": [a.spec for a in ASSETS], "fetched_by": "tools/fetch_book_assets.py"}
        (staging / RECORD_NAME).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        if vendor.exists():
            shutil.rmtree(vendor)
        vendor.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(staging), str(vendor))
    return True


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; see the module docstring."""
    parser = argparse.ArgumentParser(
        description="Fetch require.js, the ipywidgets embed script and MathJax 3 from the npm "
        "registry into book/_vendor/ so the built book works offline.",
    )
    parser.add_argument("--vendor", type=Path, default=DEFAULT_VENDOR,
                        help="destination folder (default: %(default)s)")
    parser.add_argument("--force", action="store_true", help="fetch even when already present")
    parser.add_argument("--check", action="store_true",
                        help="only report whether the assets are present (exit 1 if not)")
    parser.add_argument("--quiet", action="store_true", help="print nothing on success")
    args = parser.parse_args(argv)
    if args.check:
        ok = is_installed(args.vendor)
        if not args.quiet:
            print(f"book assets {'present' if ok else 'missing'} in {args.vendor}")
        return 0 if ok else 1
    try:
        fetch(args.vendor, force=args.force, quiet=args.quiet)
    except AssetFetchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
