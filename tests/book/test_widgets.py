"""The precomputed widgets (course_kit.widgets, used by both labs' chapters): slider and choice."""

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


def test_choice_starts_on_the_prompt_and_links_each_control():
    view = widgets.precomputed_choice([("a:", ["x", "y"]), ("b:", ["p", "q", "r"])], lambda i, j: f"<i>{i}{j}</i>",
                                      prompt="pick")
    assert [c.options[0] for c in view.controls] == ["choose", "choose"]
    assert [c.index for c in view.controls] == [0, 0]
    assert view.stack.selected_index == 0 and view.stack.children[0].value == "pick"
    # outer stack: prompt + one inner stack per option of a; inner: prompt + one panel per option of b
    assert [s.children[j + 1].value for s in view.stack.children[1:] for j in range(3)] == [
        "<i>00</i>", "<i>01</i>", "<i>02</i>", "<i>10</i>", "<i>11</i>", "<i>12</i>"]
    pairs = {(link.source[0].description, id(link.target[0])) for link in view._links}
    assert ("a:", id(view.stack)) in pairs
    assert {("b:", id(s)) for s in view.stack.children[1:]} <= pairs


def test_choice_refuses_bad_controls():
    with pytest.raises(ValueError, match="one or two"):
        widgets.precomputed_choice([], lambda: "")
    with pytest.raises(ValueError, match="unique labels"):
        widgets.precomputed_choice([("a:", ["x", "x"])], lambda i: "")
    with pytest.raises(ValueError, match="no options"):
        widgets.precomputed_choice([("a:", [])], lambda i: "")
