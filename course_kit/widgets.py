"""Widgets that respond both with a live kernel and in a static HTML page.

A static page (the rendered course book) has no kernel, so a Python callback never runs
there. The pattern used here: render every state of the main control ahead of time
(a matplotlib figure, optionally with an HTML summary), put the renderings in an
``ipywidgets.Stack``, and ``jslink`` the control's index to the Stack's
``selected_index``. The link runs in the browser, so moving the control switches the
shown state with or without a kernel. With a kernel, :meth:`PrecomputedSlider.rerender`
recomputes every state from Python when a secondary input changes (for example the
price in a cost calculator).
:func:`precomputed_choice` does the same with rows of buttons and HTML panels, for a
decision the reader makes (the capstone): its first button, "choose", shows a prompt, so
that no option is chosen for the reader.

Both labs' chapters use these helpers; the one copy lives here, in the package both labs import.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import ipywidgets as widgets
import matplotlib.pyplot as plt
from matplotlib.figure import Figure

#: What a render callback returns: a figure, or a figure and an HTML summary.
Rendering = Figure | tuple[Figure, str]

#: Font size of the HTML summary under a figure: the page's body size, not 13 px.
SUMMARY_FONT_SIZE = "1rem"


def figure_png(fig: Figure, dpi: int = 150) -> bytes:
    """Encode ``fig`` as PNG bytes (figure size in inches times ``dpi`` pixels).

    PNG, not SVG, so that rendered notebooks compare equal between runs (SVG ids change).
    The figure is not closed; the caller owns it.
    """
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    return buffer.getvalue()


def _state_widget(rendering: Rendering, width: str) -> widgets.Widget:
    """One Stack child: the figure as an Image, plus the HTML summary if given."""
    if isinstance(rendering, tuple):
        fig, html = rendering
    else:
        fig, html = rendering, ""
    if not isinstance(fig, Figure):
        raise TypeError(f"render must return a matplotlib Figure (or (Figure, str)), got {type(fig).__name__}")
    image = widgets.Image(value=figure_png(fig), format="png",
                          layout=widgets.Layout(width=width, max_width="100%", height="auto"))
    plt.close(fig)
    if not html:
        return image
    # The summary is prose: body-size type (the widgets' default is 13 px fine print).
    return widgets.VBox([image, widgets.HTML(value=html, style={"font_size": SUMMARY_FONT_SIZE})])


@dataclass
class PrecomputedSlider:
    """A selection slider switching between precomputed renderings.

    Attributes:
        labels: the slider's option labels, one per state.
        slider: the main control (``SelectionSlider``; its ``index`` is the state).
        stack: the ``Stack`` holding one rendering per state.
        widget: the box to display (slider above the stack).
    """

    labels: list[str]
    slider: widgets.SelectionSlider
    stack: widgets.Stack
    widget: widgets.VBox
    width: str = "640px"
    _links: list[Any] = field(default_factory=list, repr=False)

    @property
    def index(self) -> int:
        """Index of the state shown now."""
        return int(self.slider.index)

    def rerender(self, render: Callable[[int], Rendering]) -> None:
        """Recompute every state with ``render(i)`` (used by live Python callbacks)."""
        self.stack.children = tuple(_state_widget(render(i), self.width) for i in range(len(self.labels)))
        self.stack.selected_index = self.index


def precomputed_slider(
    labels: Sequence[str],
    render: Callable[[int], Rendering],
    description: str,
    index: int = 0,
    width: str = "640px",
) -> PrecomputedSlider:
    """Build a slider whose every position was rendered ahead of time.

    Args:
        labels: one label per state, in slider order (at least one; unique).
        render: ``render(i)`` returns the figure (or ``(figure, html)``) for state ``i``;
            called once per state now, and again on :meth:`PrecomputedSlider.rerender`.
        description: the slider's label.
        index: the state shown first.
        width: CSS width of each image.

    Raises:
        ValueError: no labels, duplicate labels, or ``index`` out of range.
    """
    labels = [str(label) for label in labels]
    if not labels:
        raise ValueError("labels: expected at least one state, got none")
    if len(set(labels)) != len(labels):
        raise ValueError(f"labels: expected unique labels, got {labels}")
    if not 0 <= index < len(labels):
        raise ValueError(f"index: expected 0..{len(labels) - 1}, got {index}")
    children = [_state_widget(render(i), width) for i in range(len(labels))]
    slider = widgets.SelectionSlider(
        options=labels, index=index, description=description, continuous_update=True,
        style={"description_width": "initial"}, layout=widgets.Layout(width="min(640px, 100%)"),
    )
    stack = widgets.Stack(children=children, selected_index=index)
    link = widgets.jslink((slider, "index"), (stack, "selected_index"))
    box = widgets.VBox([slider, stack])
    box.add_class("precomputed-widget")
    return PrecomputedSlider(labels=labels, slider=slider, stack=stack, widget=box,
                             width=width, _links=[link])


@dataclass
class PrecomputedChoice:
    """Buttons (one row per control) switching between precomputed HTML panels.

    Attributes:
        controls: one ``ToggleButtons`` per control; the first option of each is the prompt
            ("choose"), so that nothing is chosen for the reader.
        stack: the outer ``Stack`` (indexed by the first control); with two controls each of
            its children is a ``Stack`` indexed by the second.
        widget: the box to display (controls above the panels).
    """

    controls: list[widgets.ToggleButtons]
    stack: widgets.Stack
    widget: widgets.VBox
    _links: list[Any] = field(default_factory=list, repr=False)


def _panel(html: str) -> widgets.HTML:
    return widgets.HTML(value=html, style={"font_size": SUMMARY_FONT_SIZE})


def precomputed_choice(
    controls: Sequence[tuple[str, Sequence[str]]],
    render: Callable[..., str],
    prompt: str = "Choose an option above: its consequences show here.",
) -> PrecomputedChoice:
    """Build one or two rows of buttons whose every combination was rendered ahead of time.

    Each control gets a first button "choose" that shows ``prompt``: the widget never starts on
    an answer. The buttons' ``index`` is ``jslink``-ed to the panels' ``Stack``, so the choice
    switches panels in the browser, with or without a kernel.

    Args:
        controls: ``(description, option labels)`` per control, one or two controls; labels
            unique within a control.
        render: ``render(i)`` (one control) or ``render(i, j)`` (two) returns the HTML panel
            for option ``i`` of the first control and ``j`` of the second (0-based, the prompt
            not counted); called once per combination now.
        prompt: the HTML shown while any control is on "choose".

    Raises:
        ValueError: no control or more than two, a control without options, or duplicate
            labels.
    """
    if not 1 <= len(controls) <= 2:
        raise ValueError(f"controls: expected one or two, got {len(controls)}")
    rows = []
    for description, labels in controls:
        labels = [str(label) for label in labels]
        if not labels:
            raise ValueError(f"controls: {description!r} has no options")
        if len(set(labels)) != len(labels) or "choose" in labels:
            raise ValueError(f"controls: {description!r}: expected unique labels other than 'choose', got {labels}")
        rows.append(widgets.ToggleButtons(
            options=["choose", *labels], index=0, description=description,
            style={"description_width": "initial", "button_width": "auto"}))
    links = []
    if len(rows) == 1:
        n = len(rows[0].options) - 1
        stack = widgets.Stack(children=[_panel(prompt)] + [_panel(render(i)) for i in range(n)], selected_index=0)
    else:
        n, m = len(rows[0].options) - 1, len(rows[1].options) - 1
        inner = [widgets.Stack(children=[_panel(prompt)] + [_panel(render(i, j)) for j in range(m)], selected_index=0)
                 for i in range(n)]
        stack = widgets.Stack(children=[_panel(prompt)] + inner, selected_index=0)
        links += [widgets.jslink((rows[1], "index"), (s, "selected_index")) for s in inner]
    links.append(widgets.jslink((rows[0], "index"), (stack, "selected_index")))
    box = widgets.VBox([*rows, stack])
    box.add_class("precomputed-widget")
    return PrecomputedChoice(controls=rows, stack=stack, widget=box, _links=links)
