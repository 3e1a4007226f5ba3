"""IPython start-up file for the book build: every PNG a chapter draws records its smallest text.

``tools/build_book.py`` installs this file as a start-up script of the kernels that execute
the chapters (``IPYTHONDIR=<output>/_build/.ipython``, ``profile_default/startup/``). It
wraps matplotlib's Agg renderer so that each PNG it writes (inline figures and the widget
helpers' ``figure_png`` alike) carries a PNG text chunk ``MinFontPx``: the size, in pixels
of that PNG, of the smallest text drawn in it (font size in points x dpi / 72). The browser
test (``tests/book/test_browser.py``) multiplies it by the image's shown width over its
natural width to get the smallest text size on the screen.

Nothing else changes: the PNG's pixels are the same; a figure without text gets no chunk.
"""

from __future__ import annotations

import math


def install() -> None:
    """Wrap ``RendererAgg.draw_text`` and ``FigureCanvasAgg._print_pil`` (idempotent)."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg
    except ImportError:  # a chapter without matplotlib: nothing to record
        return
    if "_book_original" in RendererAgg.__dict__:
        return

    original_text = RendererAgg.draw_text
    original_print = FigureCanvasAgg._print_pil

    def draw_text(self, gc, x, y, s, prop, angle, ismath=False, mtext=None):
        if s and str(s).strip():
            size = self.points_to_pixels(prop.get_size_in_points())
            self._book_min_font_px = min(getattr(self, "_book_min_font_px", math.inf), size)
        return original_text(self, gc, x, y, s, prop, angle, ismath=ismath, mtext=mtext)

    def print_pil(self, filename_or_obj, fmt, pil_kwargs, metadata=None):
        if fmt == "png":
            renderer = self.get_renderer()
            renderer._book_min_font_px = math.inf
            FigureCanvasAgg.draw(self)  # draw once to learn the smallest text
            smallest = getattr(self.get_renderer(), "_book_min_font_px", math.inf)
            if math.isfinite(smallest):
                metadata = {**(metadata or {}), "MinFontPx": f"{smallest:.2f}"}
        return original_print(self, filename_or_obj, fmt, pil_kwargs, metadata)

    RendererAgg._book_original = original_text
    FigureCanvasAgg._book_original = original_print
    RendererAgg.draw_text = draw_text
    FigureCanvasAgg._print_pil = print_pil


def uninstall() -> None:
    """Undo :func:`install` (for tests that load this file into their own process)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg

    if "_book_original" in RendererAgg.__dict__:
        RendererAgg.draw_text = RendererAgg.__dict__["_book_original"]
        del RendererAgg._book_original
    if "_book_original" in FigureCanvasAgg.__dict__:
        FigureCanvasAgg._print_pil = FigureCanvasAgg.__dict__["_book_original"]
        del FigureCanvasAgg._book_original


install()
