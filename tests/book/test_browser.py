"""The built book in a real browser: offline, no JS errors, images, math, live widgets, layout.

Drives Chromium (the ``CHROMIUM`` environment variable, else ``chromium`` or
``chromium-browser`` on the PATH: Debian's package) with Playwright's Python package and
serves the built site on 127.0.0.1. For every page: no request leaves 127.0.0.1 (every
other request is aborted and recorded), no console error or uncaught exception, every
``<img>`` loaded (``naturalWidth > 0``), math rendered by MathJax (``mjx-container``
elements present, no raw ``$$`` left in the text). On pages with precomputed widgets the
main control is moved with the keyboard and the shown state must change. Screenshots go to
``test-artifacts/book/`` (ignored by git).

"Reads well on the page", on every page at a 1280 px wide window (:func:`layout_report`):

* no code or output block overflows the text column: a ``pre`` or an output's ``div`` whose
  ``scrollWidth`` exceeds its ``clientWidth``. Every ``<details>`` is opened first: folded
  code (``hide-input``, a ``<details>``) and exercise solutions (sphinx-togglebutton's
  ``toggle-hidden``) count, since a reader unfolds them;
* no figure's text is shown below :data:`MIN_TEXT_PX` pixels. For each visible image of the
  page, text size on screen = smallest font size in the PNG, in its own pixels, x shown
  width / natural width (e.g. a 10 pt label at 150 dpi is 10 x 150 / 72 = 20.8 px in the
  PNG; a 1667 px image shown 672 px wide shows it at 20.8 x 672 / 1667 = 8.4 px). The smallest text is the PNG's ``MinFontPx`` chunk, written while the
  chapter ran (``book/_ext/figure_fonts.py``: font size in points x dpi / 72 of every text
  drawn); an image without it is taken to use ``font.size`` of ``book/_ext/matplotlibrc``
  at its ``savefig.dpi`` (:func:`rc_text_px`);
* no page prints a path of the machine that built it (:func:`build_paths`);
* no output shows a raw Python repr or float noise (:data:`NOISE`).

Each failure names the page and the element (cell number, code/output, first words).

Skips with the reason when Chromium or Playwright is missing (.ci/run installs Chromium).
"""

from __future__ import annotations

import base64
import io
import os
import re
import shutil
import tempfile
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.browser]

#: The browser driven (None: not installed, the tests skip).
CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
REPO_ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO_ROOT / "test-artifacts" / "book"
MATPLOTLIBRC = REPO_ROOT / "book" / "_ext" / "matplotlibrc"
#: Window width of the layout checks (a common laptop width).
LAYOUT_WIDTH = 1280
#: Smallest font size (em) a figure may show on screen, CSS pixels: "about 8 px" of issue 9,
#: set at 9 px because a 9 px font's capitals are about 6.6 px tall (DejaVu Sans, matplotlib's
#: font: cap height 0.73 em) and the review measured Fig. 9.1's tick labels, 8.4 px fonts,
#: as 5-6 px glyphs too small to read.
MIN_TEXT_PX = 9.0
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
# Pages whose main control is a precomputed slider that must switch what is shown.
#: A precomputed widget has rendered: a slider's image or a choice's buttons.
WIDGET_RENDERED = ".precomputed-widget img, .precomputed-widget .widget-toggle-buttons"

WIDGET_PAGES = {"ch01_sharing_problem", "ch02_mps", "ch03_mig", "ch04_time_slicing", "ch05_choosing",
                "ch06_cluster_scheduling"}


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None or not Path(CHROMIUM).is_file():
        pytest.skip(f"Chromium not found ({CHROMIUM or 'no chromium or chromium-browser on the PATH'}; set CHROMIUM "
                    "to its path, or on Debian: apt-get install chromium; .ci/run installs it)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright's Python package is not installed")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


def _pages(built_book: Path) -> list[str]:
    return sorted(p.stem for p in built_book.glob("*.html"))


def test_every_page_offline_clean_with_images_and_math(built_book, site_url, browser):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    pages = _pages(built_book)
    assert "ch01_sharing_problem" in pages and "intro" in pages
    failures: list[str] = []
    for name in pages:
        context = browser.new_context(viewport={"width": 1200, "height": 900})
        page = context.new_page()
        page.set_default_timeout(30_000)
        outside: list[str] = []
        errors: list[str] = []

        def route(r, outside=outside):
            host = urlparse(r.request.url).hostname
            if r.request.url.startswith(("data:", "blob:")) or host == "127.0.0.1":
                r.continue_()
            else:
                outside.append(r.request.url)
                r.abort()

        page.route("**/*", route)
        page.on("console", lambda m, errors=errors: errors.append(f"console: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e, errors=errors: errors.append(f"pageerror: {e}"))
        page.goto(f"{site_url}/{name}.html", wait_until="load")
        page.wait_for_load_state("networkidle")
        page.evaluate("() => window.MathJax && MathJax.startup && MathJax.startup.promise ? MathJax.startup.promise.then(() => true) : true")
        if page.locator('script[type="application/vnd.jupyter.widget-view+json"]').count():
            page.wait_for_selector(WIDGET_RENDERED, state="visible")
        page.wait_for_function(
            "() => Array.from(document.images).every(i => i.complete)", timeout=30_000)
        broken = page.evaluate(
            "() => Array.from(document.images).filter(i => i.naturalWidth === 0).map(i => i.src.slice(0, 120))")
        has_math = page.evaluate("() => document.querySelectorAll('.math, div.math, span.math').length")
        rendered = page.evaluate("() => document.querySelectorAll('mjx-container').length")
        raw = page.evaluate("() => (document.querySelector('main') || document.body).innerText.includes('$$')")
        page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
        if outside:
            failures.append(f"{name}: requests left 127.0.0.1: {outside[:5]}")
        if errors:
            failures.append(f"{name}: JavaScript errors: {errors[:5]}")
        if broken:
            failures.append(f"{name}: images not loaded: {broken[:5]}")
        if has_math and rendered == 0:
            failures.append(f"{name}: {has_math} math elements but no MathJax output")
        if raw:
            failures.append(f"{name}: raw $$ left in the page text")
        context.close()
    assert not failures, "\n".join(failures)


def _shown_state(page) -> str:
    """Source of the visible image plus the visible HTML summary of the first widget."""
    return page.evaluate("""() => {
        const box = document.querySelector('.precomputed-widget');
        const visible = el => el.offsetParent !== null && el.getBoundingClientRect().height > 0;
        const img = Array.from(box.querySelectorAll('img')).filter(visible)[0];
        const html = Array.from(box.querySelectorAll('.widget-html-content')).filter(visible)
            .map(e => e.innerText).join('|');
        return (img ? img.src : 'none') + '#' + html;
    }""")


@pytest.mark.parametrize("name", sorted(WIDGET_PAGES))
def test_widget_main_control_responds_without_kernel(built_book, site_url, browser, name):
    if not (built_book / f"{name}.html").is_file():
        pytest.fail(f"{name}.html was not built")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    page.set_default_timeout(30_000)
    page.route("**/*", lambda r: r.continue_() if urlparse(r.request.url).hostname in (None, "127.0.0.1")
               or r.request.url.startswith(("data:", "blob:")) else r.abort())
    page.goto(f"{site_url}/{name}.html", wait_until="load")
    page.wait_for_selector(".precomputed-widget img", state="visible")
    before = _shown_state(page)
    handle = page.locator(".precomputed-widget .noUi-handle").first
    handle.scroll_into_view_if_needed()
    handle.focus()
    # Move the main control two steps (the default may sit at either end: try both ways).
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    after = _shown_state(page)
    if after == before:
        for _ in range(4):
            page.keyboard.press("ArrowLeft")
        after = _shown_state(page)
    page.screenshot(path=str(ARTIFACTS / f"{name}-moved.png"), full_page=False)
    context.close()
    assert after != before, f"{name}: moving the slider did not change the shown state ({before[:80]})"


def test_capstone_choice_starts_unchosen_and_responds_without_kernel(built_book, site_url, browser):
    """Chapter 11's choices: nothing is chosen on arrival; a button shows that option's panel."""
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    page.set_default_timeout(30_000)
    page.route("**/*", lambda r: r.continue_() if urlparse(r.request.url).hostname in (None, "127.0.0.1")
               or r.request.url.startswith(("data:", "blob:")) else r.abort())
    page.goto(f"{site_url}/ch11_capstone.html", wait_until="load")
    page.wait_for_selector(".precomputed-widget .widget-toggle-buttons", state="visible")
    box = page.locator(".precomputed-widget").nth(2)          # the placement choice
    shown = "el => Array.from(el.querySelectorAll('.widget-html-content')).filter(e => e.offsetParent).map(e => e.innerText).join('|')"
    before = box.evaluate(shown)
    box.scroll_into_view_if_needed()
    box.locator("button", has_text="best-fit").first.click()
    after = box.evaluate(shown)
    context.close()
    assert "Choose" in before
    assert "stranded GPUs" in after and "Choose" not in after


# -- reads well on the page (1280 px) ----------------------------------------------------

#: What a page must not print: raw Python reprs and float noise (pattern name -> regex).
NOISE: dict[str, re.Pattern[str]] = {
    "float with 6+ decimals": re.compile(r"(?<![\w.])-?\d+\.\d{6,}(?![\d])"),
    "float in e-notation": re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?e[+-]\d+\b"),
    "dict repr": re.compile(r"\{(?:'[^'\n]{1,60}'|-?\d+): "),
    "list of strings repr": re.compile(r"\['[^'\n]*'(?:, '[^'\n]*')*\]"),
    "list of numbers repr": re.compile(r"\[-?\d+(?:\.\d+)?(?:, -?\d+(?:\.\d+)?)+\]"),
    "object repr": re.compile(r"<[\w.]+ object at 0x[0-9a-fA-F]+>|<(?:function|bound method|module) "),
    "dataclass repr": re.compile(r"\b[A-Z][A-Za-z0-9]+\([a-z_]+=(?:'|\"|-?\d|[A-Z(\[{])"),
    "numpy repr": re.compile(r"\b(?:np\.)?(?:float|int|uint)(?:16|32|64)\(|\barray\(\[|\bdtype="),
    # a line of bare values, e.g. print(flag, seconds) -> "False 218.0": nothing says what
    "unlabelled values": re.compile(r"(?m)^[ \t]*(?:True|False|None|-?\d+(?:\.\d+)?)"
                                    r"(?:[ \t]+(?:True|False|None|-?\d+(?:\.\d+)?))+[ \t]*$"),
}


#: What a printed configuration file (YAML) must not show either: its flow lists such as
#: ``devices: [4, 5, 6, 7]`` are YAML, not Python reprs.
CONFIG_NOISE = {k: NOISE[k] for k in ("float with 6+ decimals", "object repr", "numpy repr")}


def is_config_text(text: str) -> bool:
    """True for an output that is a YAML configuration: a block mapping of 2+ keys
    (``version: v1\nflags: ...``), not a Python repr such as ``{'A': 2, 'B': 5}``."""
    import yaml

    stripped = text.strip()
    if not stripped or stripped[0] in "{[(<'\"":
        return False
    try:
        docs = [d for d in yaml.safe_load_all(stripped) if d is not None]
    except yaml.YAMLError:
        return False
    return bool(docs) and all(isinstance(d, dict) and len(d) >= 2 for d in docs)


def rc_text_px(rc_path: Path = MATPLOTLIBRC) -> float:
    """Text size, in PNG pixels, of ``font.size`` at ``savefig.dpi`` of the book's matplotlibrc
    (matplotlib's defaults, 10 pt and the figure dpi, where the file does not set them)."""
    values: dict[str, str] = {}
    for line in rc_path.read_text(encoding="utf-8").splitlines():
        key, _, value = line.split("#", 1)[0].partition(":")
        if value.strip():
            values[key.strip()] = value.strip()
    dpi = float(values.get("savefig.dpi", values.get("figure.dpi", "100")))
    return float(values.get("font.size", "10")) * dpi / 72.0


def png_min_font_px(data: bytes) -> float | None:
    """The ``MinFontPx`` text chunk of a PNG (book/_ext/figure_fonts.py), or None."""
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as img:
            value = img.info.get("MinFontPx")
    except OSError:
        return None
    return float(value) if value else None


def build_paths(built_book: Path) -> list[str]:
    """Absolute paths of this build machine that a page must never print."""
    home = str(Path.home())
    paths = {str(REPO_ROOT), str(REPO_ROOT.parent) + "/", str(built_book.parents[1]),
             tempfile.gettempdir() + "/tmp", "/pytest-of-"}
    if home not in ("/", ""):
        paths.add(home + "/")
    return sorted(p for p in paths if len(p) > 3)


_OPEN_ALL_JS = """() => {
  // what a reader can unfold counts: folded code (hide-input) and exercise solutions
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  // sphinx-togglebutton folds solutions (class "dropdown") with "toggle-hidden"
  const folded = document.querySelectorAll('.toggle-hidden');
  folded.forEach(e => e.classList.remove('toggle-hidden'));
  return document.querySelectorAll('details').length + folded.length;
}"""

_LAYOUT_JS = """() => {
  const main = document.querySelector('main') || document.body;
  const cells = Array.from(main.querySelectorAll('div.cell'));
  const visible = el => el.offsetParent !== null && el.getBoundingClientRect().width > 0;
  const describe = el => {
    const cell = el.closest('div.cell');
    const kind = el.closest('.cell_input') ? 'code' : el.closest('.cell_output') ? 'output'
               : 'code block';
    const first = (el.innerText || el.textContent || el.getAttribute('alt') || '').trim()
      .split('\\n')[0];
    const fold = el.closest('details, .toggle, .dropdown');
    const folded = fold ? ' (folded)' : '';
    return (cell ? `cell ${cells.indexOf(cell) + 1} ` : '') + kind + folded + ` "${first.slice(0, 50)}"`;
  };
  const blocks = Array.from(main.querySelectorAll('pre, .cell_output > .output, .cell_output .text_html'))
    .filter(visible)
    .filter(el => el.scrollWidth > el.clientWidth + 1)
    .map(el => ({what: describe(el), by: el.scrollWidth - el.clientWidth, width: el.clientWidth}));
  const images = Array.from(main.querySelectorAll('img')).filter(visible).map(img => ({
    what: describe(img.closest('figure') || img.closest('.cell_output') || img),
    figure: img.closest('figure') ? (img.closest('figure').querySelector('figcaption') || {}).innerText || '' : '',
    src: img.getAttribute('src') || '', shown: img.getBoundingClientRect().width,
    natural: img.naturalWidth}));
  const outputs = Array.from(main.querySelectorAll('.cell_output')).filter(visible)
    .map(el => ({what: describe(el), text: el.innerText}));
  return {blocks, images, outputs, text: document.body.innerText};
}"""


def _image_bytes(src: str, built_book: Path, page: str) -> bytes | None:
    if src.startswith("data:image/png;base64,"):
        return base64.b64decode(src.split(",", 1)[1])
    if src.startswith("data:"):
        return None
    path = (built_book / unquote(urlparse(src).path)).resolve()
    return path.read_bytes() if path.is_file() and path.suffix.lower() == ".png" else None


@pytest.fixture(scope="module")
def layout_report(built_book, site_url, browser) -> dict[str, list[str]]:
    """Visit every page at :data:`LAYOUT_WIDTH` px; the failures of each layout check, by kind.

    Keys: ``overflow``, ``figure text``, ``build path``, ``repr``; values: one line each,
    ``page: element: what is wrong``.
    """
    report: dict[str, list[str]] = {"overflow": [], "figure text": [], "build path": [], "repr": []}
    fallback = rc_text_px()
    paths = build_paths(built_book)
    for name in _pages(built_book):
        context = browser.new_context(viewport={"width": LAYOUT_WIDTH, "height": 900})
        page = context.new_page()
        page.set_default_timeout(30_000)
        page.route("**/*", lambda r: r.continue_() if urlparse(r.request.url).hostname in (None, "127.0.0.1")
                   or r.request.url.startswith(("data:", "blob:")) else r.abort())
        page.goto(f"{site_url}/{name}.html", wait_until="load")
        page.wait_for_load_state("networkidle")
        if page.locator('script[type="application/vnd.jupyter.widget-view+json"]').count():
            page.wait_for_selector(WIDGET_RENDERED, state="visible")
        page.evaluate(_OPEN_ALL_JS)
        page.wait_for_function("() => Array.from(document.images).every(i => i.complete)")
        found = page.evaluate(_LAYOUT_JS)
        context.close()
        for b in found["blocks"]:
            report["overflow"].append(f"{name}: {b['what']}: {b['by']} px wider than the "
                                      f"{b['width']} px column")
        for img in found["images"]:
            if not img["natural"]:
                continue
            data = _image_bytes(img["src"], built_book, name)
            if data is None:
                continue  # not a PNG the book drew (an SVG icon)
            text_px = png_min_font_px(data)
            source = "smallest text" if text_px is not None else "font.size (no MinFontPx)"
            text_px = fallback if text_px is None else text_px
            on_screen = text_px * img["shown"] / img["natural"]
            if on_screen < MIN_TEXT_PX:
                label = img["figure"].split("\n")[0][:40] or img["what"]
                report["figure text"].append(
                    f"{name}: {label}: {source} {on_screen:.1f} px on screen (< {MIN_TEXT_PX:g}): "
                    f"{text_px:.1f} px in a {img['natural']} px image shown {img['shown']:.0f} px wide")
        for path in paths:
            at = found["text"].find(path)
            if at >= 0:
                snippet = found["text"][max(0, at - 30):at + 50].replace("\n", " ")
                report["build path"].append(f"{name}: prints the build machine's path {path!r}: "
                                            f"...{snippet}...")
        for out in found["outputs"]:
            kinds = CONFIG_NOISE if is_config_text(out["text"]) else NOISE
            for kind, pattern in kinds.items():
                m = pattern.search(out["text"])
                if m:
                    report["repr"].append(f"{name}: {out['what']}: {kind}: {m.group(0)[:60]!r}")
    return report


def test_noise_patterns_catch_reprs_and_spare_labelled_values():
    bad = ["15.555555555555555 140.0", "{'A': 3, 'B': 2} tasks", "['a', 'b']", "[1, 2, 3]",
           "<lab.Thing object at 0x7f00aa>", "Decision(mechanism='MIG', reason", "np.float64(0.5)",
           "limit 1e+07", "array([1, 2])", "False 218.0\nTrue 110.0", "15.6 140"]
    good = ["inside one island: 15.6 ms; across: 140 ms", "A: 3 tasks, B: 2 tasks",
            "nvidia.com/gpu: 4", "GPU-8a1c0f3e-2b4d-4c1e-9f00-123456789abc", "v0.20.0",
            'values: ["h100"]', "p99 = 12.34 ms (x1.25)", "MIG 3g.40gb (60 of 132 SMs)",
            "cost per tenant: $1,234/month", "Requirements: gpus 0.5",
            "pre-pulled False: starts at 218 s", "limit  cost\n16 GPUs  $5,690"]
    for text in bad:
        assert any(p.search(text) for p in NOISE.values()), text
    for text in good:
        assert not [k for k, p in NOISE.items() if p.search(text)], text
    config = "version: v1\nmig-configs:\n  all:\n  - devices: [4, 5, 6, 7]\n"
    assert is_config_text(config)
    assert not [k for k, p in CONFIG_NOISE.items() if p.search(config)]
    assert not is_config_text("{'A': 2, 'B': 5}")
    assert not is_config_text("stranded: 4")          # one key: a labelled value, checked


def test_rc_text_px_reads_the_book_matplotlibrc(tmp_path):
    rc = tmp_path / "matplotlibrc"
    rc.write_text("# comment\nfigure.dpi: 150\nsavefig.dpi: 144  # sharper\n", encoding="utf-8")
    assert rc_text_px(rc) == pytest.approx(10 * 144 / 72)       # 10 pt at 144 dpi = 20 px
    rc.write_text("font.size: 12\nfigure.dpi: 100\n", encoding="utf-8")
    assert rc_text_px(rc) == pytest.approx(12 * 100 / 72)


def test_png_min_font_px_reads_what_the_build_hook_writes():
    import matplotlib

    matplotlib.use("Agg")
    import runpy

    import matplotlib.pyplot as plt

    hook = runpy.run_path(str(REPO_ROOT / "book" / "_ext" / "figure_fonts.py"))
    try:
        fig, ax = plt.subplots(figsize=(4, 2), dpi=100)
        ax.set_title("title", fontsize=14)
        ax.text(0.5, 0.5, "small", fontsize=6)
        ax.set_xticks([])
        ax.set_yticks([])
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=150)
        plt.close(fig)
    finally:
        hook["uninstall"]()
    # 6 pt at 150 dpi = 6 * 150 / 72 = 12.5 px
    assert png_min_font_px(buf.getvalue()) == pytest.approx(12.5)
    fig, ax = plt.subplots(figsize=(4, 2))
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    assert png_min_font_px(buf.getvalue()) is None      # uninstalled: no chunk written


def test_no_code_or_output_block_overflows_the_column(layout_report):
    assert not layout_report["overflow"], "\n".join(layout_report["overflow"])


def test_figure_text_at_least_9_px_on_screen(layout_report):
    assert not layout_report["figure text"], "\n".join(layout_report["figure text"])


def test_no_page_prints_a_path_of_the_build_machine(layout_report):
    assert not layout_report["build path"], "\n".join(layout_report["build path"])


def test_no_raw_reprs_or_float_noise_in_outputs(layout_report):
    assert not layout_report["repr"], "\n".join(layout_report["repr"])


def test_one_search_box_at_desktop_width(built_book, site_url, browser):
    """Review part 1, front page #5: the top bar and the sidebar each showed a search box."""
    context = browser.new_context(viewport={"width": LAYOUT_WIDTH, "height": 900})
    page = context.new_page()
    page.goto(f"{site_url}/intro.html", wait_until="load")
    boxes = page.evaluate("""() => Array.from(document.querySelectorAll(
        '.search-button-field, form.bd-search, .search-button__button'))
        .filter(e => e.offsetParent !== null && e.getBoundingClientRect().width > 0).length""")
    context.close()
    assert boxes == 1, f"{boxes} search boxes visible at {LAYOUT_WIDTH} px"
