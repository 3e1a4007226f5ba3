"""The precomputed-slider widget helper (course_kit.widgets, used by both labs' chapters)."""

import matplotlib.pyplot as plt
import pytest

from course_kit import widgets


def _render(i):
    fig, ax = plt.subplots(figsize=(2, 1))
    ax.plot([0, 1], [0, i])
    return fig, f"<b>state {i}</b>"


def test_slider_links_stack_and_rerenders():
    view = widgets.precomputed_slider(["a", "b", "c"], _render, "pick", index=1)
    assert len(view.stack.children) == 3
    assert view.stack.selected_index == 1
    assert view.index == 1
    first_png = view.stack.children[0].children[0].value
    assert first_png[:8] == b"\x89PNG\r\n\x1a\n"
    assert view.stack.children[2].children[1].value == "<b>state 2</b>"
    # the jslink ties the slider's index to the stack's selected_index (front-end link)
    link = view._links[0]
    assert (link.source[0], link.source[1]) == (view.slider, "index")
    assert (link.target[0], link.target[1]) == (view.stack, "selected_index")
    view.rerender(lambda i: _render(10 + i))
    assert view.stack.children[0].children[1].value == "<b>state 10</b>"


def test_bad_arguments():
    with pytest.raises(ValueError, match="labels"):
        widgets.precomputed_slider([], _render, "x")
    with pytest.raises(ValueError, match="unique"):
        widgets.precomputed_slider(["a", "a"], _render, "x")
    with pytest.raises(ValueError, match="index"):
        widgets.precomputed_slider(["a"], _render, "x", index=3)
    with pytest.raises(TypeError, match="Figure"):
        widgets.precomputed_slider(["a"], lambda i: "nope", "x")

