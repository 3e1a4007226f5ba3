"""The built book in a real browser: offline, no JS errors, images, math, live widgets.

Drives Debian's Chromium (``/usr/bin/chromium``) with Playwright's Python package and
serves the built site on 127.0.0.1. For every page: no request leaves 127.0.0.1 (every
other request is aborted and recorded), no console error or uncaught exception, every
``<img>`` loaded (``naturalWidth > 0``), math rendered by MathJax (``mjx-container``
elements present, no raw ``$$`` left in the text). On pages with precomputed widgets the
main control is moved with the keyboard and the shown state must change. Screenshots go to
``test-artifacts/book/`` (ignored by git).

Skips with the reason when Chromium or Playwright is missing (.ci/run installs Chromium).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from urllib.parse import urlparse

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.browser]

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "book"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
# Pages whose main control is a precomputed slider that must switch what is shown.
WIDGET_PAGES = {"ch01_sharing_problem", "ch02_mps", "ch03_mig", "ch04_time_slicing", "ch05_choosing",
                "ch06_cluster_scheduling"}


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Chromium not found at {CHROMIUM} (Debian: apt-get install chromium; .ci/run installs it)")
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
            page.wait_for_selector(".precomputed-widget img", state="visible")
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
