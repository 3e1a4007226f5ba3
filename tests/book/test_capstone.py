"""The capstone (book/ch11_capstone.md) as built: its numbers come from the lab models.

Uses the session's built book (``built_book`` in conftest.py).
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

#: An inline math element whose TeX reads as prose: two prices in one paragraph that
#: dollarmath took for the delimiters of $...$ ("$2,511 against $5,022").
_PROSE_IN_MATH = re.compile(r'class="math[^"]*">\\\(([^<]*?\b(?:against|month|per|instead|with)\b[^<]*?)\\\)')


def _text(page: Path) -> str:
    raw = re.sub(r"<script.*?</script>|<style.*?</style>", "", page.read_text(encoding="utf-8"), flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", raw)))


def prices_as_math(page: Path) -> list[str]:
    """The inline-math elements of a built page whose TeX reads as prose (see above)."""
    return [m.group(1)[:60] for m in _PROSE_IN_MATH.finditer(page.read_text(encoding="utf-8"))]


def test_prices_as_math_pattern_catches_two_prices_in_a_paragraph(tmp_path):
    page = tmp_path / "p.html"
    page.write_text('<p>costs <span class="math notranslate nohighlight">\\(2,511 against \\)</span>5,022'
                    ' and <span class="math notranslate nohighlight">\\(\\lceil 60 / 5 \\rceil = 12\\)</span></p>')
    assert prices_as_math(page) == ["2,511 against "]


def test_capstone_shows_no_prices_as_math(built_book):
    found = prices_as_math(built_book / "ch11_capstone.html")
    assert not found, "prices parsed as inline math: " + "; ".join(map(repr, found))


def test_fleets_chapter_shows_no_prices_as_math(built_book):
    """Chapter 10 glues prices into Markdown too ("$119 instead of $109")."""
    found = prices_as_math(built_book / "ch10_fleets.html")
    assert not found, "prices parsed as inline math: " + "; ".join(map(repr, found))


def test_capstone_mig_latency_is_lab02_model_not_sm_share(built_book):
    text = _text(built_book / "ch11_capstone.html")
    # Lab 02's mig_latency_ms, H100 3g.40gb (60 of 132 SMs, 4 of 8 memory slices),
    # 8 ms request, 30 % memory-bound: 8 x (0.7 x 132/60 + 0.3 x 8/4) = 8 x 2.14 = 17.12 ms.
    # The old page divided by the SM share alone: 8 / (60/132) = 17.6 ms.
    assert "17.1 ms" in text
    assert "17.6 ms" not in text
    assert "on 60 of 132 SMs and its memory-bound part (30%) on 4 of 8 memory slices" in text


def test_capstone_prices_are_after_the_june_2025_cut(built_book):
    text = _text(built_book / "ch11_capstone.html")
    # p5.48xlarge at 55.04 USD/h: 55.04 / 8 = 6.88 per GPU-hour; 6.88 x 730 h = 5,022.40 a GPU-month
    assert "$55.04/h on demand = $6.88 per GPU-hour" in text
    assert "$5,022" in text
    assert "predate" not in text


# -- the reader chooses (issue: the capstone's choices are the reader's) ----------------------------
#: Sentences that state a model answer's choice; each must sit in a folded solution only.
MODEL_ANSWER_PHRASES = ("gets MIG", "The smallest limit that keeps the mean pending time",
                        "so the training pool runs on", "Packing wins here", "At node granularity the saving")


def _soup(page: Path):
    from bs4 import BeautifulSoup

    return BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")


def test_model_answers_are_folded_solutions(built_book):
    soup = _soup(built_book / "ch11_capstone.html")
    solutions = soup.select("div.solution")
    assert solutions and all("dropdown" in s.get("class", []) for s in solutions)
    folded = " ".join(s.get_text(" ") for s in solutions)
    for s in solutions:
        s.decompose()
    outside = soup.get_text(" ")
    for phrase in MODEL_ANSWER_PHRASES:
        assert phrase in folded, f"model answer {phrase!r} not found in a solution"
        assert phrase not in outside, f"model answer {phrase!r} shown outside a folded solution"


def test_every_choice_widget_starts_unchosen(built_book):
    import json

    soup = _soup(built_book / "ch11_capstone.html")
    state = json.loads(soup.find("script", type="application/vnd.jupyter.widget-state+json").string)
    buttons = [m["state"] for m in state["state"].values() if m["model_name"] == "ToggleButtonsModel"]
    # paid tiers (inference, regulated), notebooks, placement, queue, limit, capacity
    assert len(buttons) == 7
    assert all(b["_options_labels"][0] == "choose" and b["index"] == 0 for b in buttons)


def test_paid_pool_is_priced_at_node_granularity(built_book):
    text = _text(built_book / "ch11_capstone.html")
    # 12 replicas x 1/2 GPU + 2 x 1/2 = 7 GPUs; exclusive 12 + 2 = 14 GPUs; both on the 2 nodes
    # the paid tiers need for spreading: 2 x 8 x $6.88 x 730 h = $80,358.40 a month either way
    assert "the picks need 7 GPUs, exclusive GPUs for everyone 14" in text
    assert "$80,358 against $80,358 a month" in text


def test_paid_and_free_tiers_are_not_karpenter_nodepools(built_book):
    text = _text(built_book / "ch11_capstone.html")
    # Karpenter's AWS provider advertises nvidia.com/gpu only: the MIG and time-sliced tiers run on
    # static node groups (the NodePools shown are checked in test_manifests.py); the page says why
    assert "static node groups" in text
    assert "does not advertise" in text
