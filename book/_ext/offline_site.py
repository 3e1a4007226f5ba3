"""Sphinx extension: keep the built book free of anything loaded from another host.

It also serves ``static/mathjax-widgets-shim.js`` on every page, before MathJax and the
widgets: the ipywidgets embed script calls the MathJax 2 API, the book loads MathJax 3;
and ``static/course.css``, the book's own styles (printed output wraps at the column).
(The shim is not in ``book/_static/``: when that folder exists, Jupyter Book adds every
.js file of every static path, the 38 MB of vendored MathJax included, to every page.)

Jupyter Book 1 always loads ``sphinx_thebe``, which puts a script naming thebe's CDN
address (``THEBE_JS_URL``) and a Binder configuration on every page, even with launch
buttons off. Nothing fetches them unless a reader presses a launch button we never show,
but an offline site should not name a CDN at all. This extension removes those scripts
and the thebe stylesheet from every page. ``tools/build_book.py`` then checks the HTML
for any remote asset (``find_remote_assets``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

_STATIC = Path(__file__).resolve().parent / "static"

_THEBE_BLOCK = re.compile(r"\s*<script type=\"text/x-thebe-config\">.*?</script>\s*"
                          r"(<script>kernelName = '[^']*'</script>)?", re.DOTALL)


def _is_thebe(asset: Any) -> bool:
    filename = str(getattr(asset, "filename", asset) or "")
    body = str(getattr(asset, "attributes", {}).get("body", "")) if hasattr(asset, "attributes") else ""
    return "thebe" in filename or "THEBE_JS_URL" in body


def strip_thebe(app, pagename, templatename, context, doctree) -> None:
    """html-page-context hook: drop thebe's scripts, stylesheet and inline config."""
    for key in ("script_files", "css_files"):
        if key in context:
            context[key] = [a for a in context[key] if not _is_thebe(a)]
    if "body" in context:
        context["body"] = _THEBE_BLOCK.sub("\n", context["body"])


def _add_static(app) -> None:
    app.config.html_static_path.append(str(_STATIC))


def setup(app):
    """Register the hooks; the thebe filter runs after other html-page-context listeners."""
    app.connect("builder-inited", _add_static)
    app.add_js_file("mathjax-widgets-shim.js", priority=100)
    app.add_css_file("course.css")
    app.connect("html-page-context", strip_thebe, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1.0"}
