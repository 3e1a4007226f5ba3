"""The course book: build with warnings as errors, offline assets, chapter structure, credits.

The build itself runs once per session in the ``built_book`` fixture (tests/book/conftest.py):
``tools/build_book.py`` = fetch assets + ``jupyter-book build -W -n --keep-going`` + the
no-CDN check. A failing build fails every test here with the build's output.
"""

from __future__ import annotations

import io
import json
import re
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
BOOK = REPO_ROOT / "book"
sys.path.insert(0, str(REPO_ROOT / "tools"))

import build_book  # noqa: E402
import fetch_book_assets  # noqa: E402

CHAPTERS = [f"ch{n:02d}" for n in range(1, 12)]


def _toc_files() -> list[str]:
    toc = yaml.safe_load((BOOK / "_toc.yml").read_text(encoding="utf-8"))
    files = [toc["root"]]
    for part in toc["parts"]:
        files += [c["file"] for c in part["chapters"]]
    return files


# -- pieces that need no build ----------------------------------------------------------

def test_toc_lists_the_chapters_and_the_extra_pages():
    files = _toc_files()
    assert [f[:4] for f in files if f.startswith("ch")] == CHAPTERS
    for page in ("lab01_walkthrough", "lab02_walkthrough", "self_check", "interview_questions",
                 "glossary", "references"):
        assert page in files
    for f in files:
        assert (BOOK / f"{f}.md").is_file(), f"{f}.md listed in _toc.yml but missing"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_source_has_the_quantecon_layout(chapter):
    path = next(BOOK.glob(f"{chapter}_*.md"))
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\njupytext:"), "jupytext header first"
    assert "format_name: myst" in text
    assert "**Learning goals.**" in text
    assert "```{code-cell} ipython3" in text
    assert re.search(r"from lab0[12]_\w+", text), "a live computation from a lab package"
    assert "mystnb:\n  figure:\n    caption:" in text, "a captioned, named figure"
    assert "```{exercise}" in text and "```{solution-start}" in text and ":class: dropdown" in text
    assert "## Further reading" in text
    assert "{cite}`" in text


def _code_cells(text: str) -> list[tuple[str, str]]:
    """(options/metadata text, source) of each ``{code-cell}`` of a MyST notebook."""
    cells = []
    for m in re.finditer(r"^```\{code-cell\}[^\n]*\n(.*?)^```\s*$", text, re.S | re.M):
        body = m.group(1)
        meta = ""
        if body.startswith("---\n"):
            end = body.index("\n---\n", 4)
            meta, body = body[4:end], body[end + 5:]
        else:
            while body.startswith(":"):
                line, _, body = body.partition("\n")
                meta += line + "\n"
        cells.append((meta, body))
    return cells


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_import_cell_is_folded_and_every_import_is_used(chapter):
    """Review part 2, #38: the import cell is folded (hide-input) and imports nothing unused."""
    import ast

    text = next(BOOK.glob(f"{chapter}_*.md")).read_text(encoding="utf-8")
    cells = _code_cells(text)
    first = next((meta, src) for meta, src in cells if re.search(r"^\s*(from|import) ", src, re.M))
    assert "hide-input" in first[0], f"{chapter}: the import cell is not tagged hide-input"
    source = "\n".join("" if line.lstrip().startswith(("%", "!")) else line
                       for line in first[1].splitlines())
    imported = set()
    import_lines: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            import_lines.update(range(node.lineno, node.end_lineno + 1))
            for alias in node.names:
                imported.add((alias.asname or alias.name).split(".")[0])
    own = "\n".join(line for i, line in enumerate(source.splitlines(), 1)
                    if i not in import_lines)
    rest = own + "\n" + "\n".join(src for src in (c[1] for c in cells) if src != first[1])
    unused = {name for name in imported
              if not re.search(rf"(?<![\w.]){re.escape(name)}\b", rest)}
    assert unused == set(), f"{chapter}: imported but never used"


def test_find_remote_assets_flags_scripts_and_cdns_but_not_links(tmp_path):
    (tmp_path / "ok.html").write_text(
        '<script src="_static/require.js"></script><a href="https://example.org/paper">paper</a>')
    (tmp_path / "bad.html").write_text(
        '<script src="https://cdn.jsdelivr.net/npm/x.js"></script>\n<link rel="stylesheet" href="//fonts.googleapis.com/css">')
    problems = build_book.find_remote_assets(tmp_path)
    assert any(p.startswith("bad.html: <script> loads https://cdn.jsdelivr.net") for p in problems)
    assert any("fonts.googleapis.com" in p for p in problems)
    assert not any(p.startswith("ok.html") for p in problems)


def _fake_tarball(path: Path, files: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_extract_copies_the_served_part_without_source_maps(tmp_path):
    asset = fetch_book_assets.NpmAsset("demo@1.0.0", "dist", "demo/dist", "demo/dist/a.js")
    tgz = _fake_tarball(tmp_path / "demo.tgz", {"package/dist/a.js": b"A", "package/dist/a.js.map": b"M",
                                                "package/src/b.js": b"B", "package/LICENSE": b"L"})
    staging = tmp_path / "staging"
    fetch_book_assets._extract(tgz, asset, staging)
    assert (staging / "demo/dist/a.js").read_bytes() == b"A"
    assert not (staging / "demo/dist/a.js.map").exists()
    assert not (staging / "demo/src").exists()
    assert (staging / "demo/dist/LICENSE").read_bytes() == b"L"
    empty = fetch_book_assets.NpmAsset("demo@1.0.0", "nothing", "x", "x/y")
    with pytest.raises(fetch_book_assets.AssetFetchError, match="nothing under package/nothing"):
        fetch_book_assets._extract(tgz, empty, staging)


def test_is_installed_needs_matching_record_and_files(tmp_path):
    assert not fetch_book_assets.is_installed(tmp_path)
    (tmp_path / "ASSETS.json").write_text(json.dumps({"packages": [a.spec for a in fetch_book_assets.ASSETS]}))
    assert not fetch_book_assets.is_installed(tmp_path)  # files missing
    for a in fetch_book_assets.ASSETS:
        (tmp_path / a.check).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / a.check).write_text("x")
    assert fetch_book_assets.is_installed(tmp_path)
    (tmp_path / "ASSETS.json").write_text(json.dumps({"packages": ["requirejs@0.0.1"]}))
    assert not fetch_book_assets.is_installed(tmp_path)  # another version pinned now


# -- the built book ---------------------------------------------------------------------

pytestmark_slow = pytest.mark.slow


@pytestmark_slow
def test_every_toc_page_is_built(built_book):
    for f in _toc_files():
        assert (built_book / f"{f}.html").is_file(), f"{f}.html missing"


@pytestmark_slow
def test_no_asset_from_another_host(built_book):
    assert build_book.find_remote_assets(built_book) == []
    for rel in ("_static/require.js", "_static/jupyter-widgets/html-manager/dist/embed-amd.js",
                "_static/mathjax/es5/tex-mml-chtml.js", "_static/mathjax-widgets-shim.js"):
        assert (built_book / rel).is_file(), f"{rel} not served by the site"


@pytestmark_slow
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_page_has_figure_exercise_solution_and_outputs(built_book, chapter):
    page = next(built_book.glob(f"{chapter}_*.html")).read_text(encoding="utf-8")
    assert "<figure" in page and "<figcaption" in page
    assert 'class="admonition exercise"' in page or "exercise" in page
    assert "dropdown" in page, "solution folded"
    assert "cell_output" in page, "cells were executed"
    assert "Traceback" not in page
    # every numbered figure holds an image (a Figure shown without a PNG formatter leaves
    # only its text repr "<Figure size ...>")
    for fig in re.findall(r"<figure.*?</figure>", page, re.S):
        assert "<img" in fig, f"figure without an image: {fig[:200]}"
    assert "Figure size" not in page, "a matplotlib figure rendered as text, not as an image"


@pytestmark_slow
@pytest.mark.parametrize("chapter", ["ch01", "ch02", "ch03", "ch04", "ch05", "ch06"])
def test_widget_pages_embed_precomputed_states(built_book, chapter):
    page = next(built_book.glob(f"{chapter}_*.html")).read_text(encoding="utf-8")
    match = re.search(r'<script type="application/vnd.jupyter.widget-state\+json">(.*?)</script>', page, re.S)
    assert match, "widget state embedded in the page"
    state = json.loads(match.group(1))["state"]
    stacks = [m for m in state.values() if m["model_name"] == "StackModel"]
    links = [m for m in state.values() if m["model_name"] == "LinkModel"]
    assert stacks and links, "a Stack of precomputed states, jslinked to its control"
    assert len(stacks[0]["state"]["children"]) >= 3


@pytestmark_slow
def test_footer_credits_and_trace_citation(built_book):
    for page in sorted(built_book.glob("ch*.html")) + [built_book / "intro.html"]:
        footer = re.search(r'<div class="extra_footer">(.*?)</div>', page.read_text(encoding="utf-8"), re.S)
        assert footer, f"{page.name}: no license footer"
        assert "CC BY 4.0" in footer.group(1) and "MIT" in footer.group(1)
    ch06 = next(built_book.glob("ch06_*.html")).read_text(encoding="utf-8")
    assert "beware of fragmentation" in ch06.lower()
    refs = (built_book / "references.html").read_text(encoding="utf-8")
    assert "beware of fragmentation" in refs.lower()
    assert (REPO_ROOT / "CITATION.cff").is_file()
    cff = yaml.safe_load((REPO_ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert cff["cff-version"] == "1.2.0" and "CC-BY-4.0" in cff["license"]


@pytestmark_slow
def test_no_tex_left_outside_math(built_book):
    """Inline math that failed to parse (e.g. a $ for money closing a formula, or a formula
    broken over two lines) leaves TeX commands in the prose."""
    tex = re.compile(r"\\(times|lceil|rceil|frac|le|approx|cdot)\b")
    for page in sorted(built_book.glob("*.html")):
        html = page.read_text(encoding="utf-8")
        html = re.sub(r'<(span|div) class="math[^"]*"[^>]*>.*?</\1>', "", html, flags=re.S)
        html = re.sub(r"<(pre|script|code)\b.*?</\1>", "", html, flags=re.S)
        html = re.sub(r'title="[^"]*"', "", html)
        assert not tex.search(html), f"{page.name}: TeX outside math: {tex.search(html).group(0)}"
