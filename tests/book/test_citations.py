"""Citations can be told apart: every label on a page names exactly one document.

The book's citation style (book/_ext/citation_labels.py) gives each document one short
label, shown both in the text and in the bibliography: a ``shorthand`` for documentation
("NVIDIA MPS"), the organisation and title for other documentation by organisations, and
authors + year for papers, with a/b suffixes where two would collide.
"""

from __future__ import annotations

import html
import re
import sys
from collections import defaultdict
from pathlib import Path

import pytest
import yaml
from pybtex.database import parse_file, parse_string

REPO_ROOT = Path(__file__).resolve().parents[2]
BOOK = REPO_ROOT / "book"
sys.path.insert(0, str(BOOK / "_ext"))

import citation_labels  # noqa: E402

MAX_LABEL = 40


def _bib():
    return parse_file(str(BOOK / "references.bib"))


def _labels(entries) -> dict[str, str]:
    """key -> label, computed as the book's style does (sorted, then labelled)."""
    citation_labels.register()
    ordered = citation_labels.CourseSortingStyle().sort(list(entries))
    return {e.key: label for e, label in zip(ordered, citation_labels.distinct_labels(ordered))}


# -- the label style ----------------------------------------------------------------------

def test_labels_follow_the_three_rules_and_collisions_get_suffixes():
    bib = parse_string("""
@misc{doc, author={{NVIDIA}}, shorthand={NVIDIA MPS}, title={{Multi-Process Service}}, year={2025}}
@misc{org, author={{The Karpenter Authors}}, title={{Disruption}}, year={2026}}
@misc{org2, author={{Amazon Web Services}}, title={{Spot Instance Advisor: interruption frequency}}, year={2026}}
@inproceedings{one, author={Lifka, David A.}, title={The ANL/IBM SP Scheduling System}, year={1995}}
@article{two, author={Patarasuk, Pitch and Yuan, Xin}, title={Bandwidth Optimal}, year={2009}}
@article{many1, author={Verma, A. and Pedrosa, L. and Wilkes, J.}, title={Borg}, year={2015}}
@article{many2, author={Verma, A. and Tune, E. and Wilkes, J.}, title={Another}, year={2015}}
""", "bibtex")
    assert _labels(bib.entries.values()) == {
        "doc": "NVIDIA MPS",                     # shorthand
        "org": "Karpenter Disruption",           # organisation + title
        "org2": "AWS Spot Instance Advisor",     # title words before the subtitle
        "one": "Lifka 1995",                     # authors + year
        "two": "Patarasuk & Yuan 2009",
        "many1": "Verma et al. 2015a",           # author lists sort first: Pedrosa < Tune
        "many2": "Verma et al. 2015b",
    }


def test_the_bibliography_is_sorted_by_label():
    bib = parse_string("""
@misc{z, author={{NVIDIA}}, shorthand={NVIDIA Xid Catalog}, title={X}, year={2026}}
@article{a, author={Weng, Q.}, title={Y}, year={2023}}
@misc{k, author={{The Kubernetes Authors}}, shorthand={K8s DRA}, title={Z}, year={2025}}
""", "bibtex")
    citation_labels.register()
    ordered = citation_labels.CourseSortingStyle().sort(list(bib.entries.values()))
    assert [e.key for e in ordered] == ["k", "z", "a"]   # K8s DRA, NVIDIA Xid Catalog, Weng 2023


def test_the_book_uses_the_label_style():
    config = yaml.safe_load((BOOK / "_config.yml").read_text(encoding="utf-8"))
    sphinx = config["sphinx"]
    assert sphinx["local_extensions"]["citation_labels"] == "_ext"
    assert sphinx["config"]["bibtex_default_style"] == "course"
    assert sphinx["config"]["bibtex_reference_style"] == "label"


# -- the book's bibliography ----------------------------------------------------------------

def test_every_document_of_the_bibliography_has_its_own_short_label():
    labels = _labels(_bib().entries.values())
    by_label = defaultdict(list)
    for key, label in labels.items():
        by_label[label].append(key)
    assert {lab: keys for lab, keys in by_label.items() if len(keys) > 1} == {}
    too_long = {k: lab for k, lab in labels.items() if len(lab) > MAX_LABEL}
    assert too_long == {}, f"labels longer than {MAX_LABEL} characters: give the entry a shorthand"


def test_no_document_is_in_the_bibliography_twice():
    """Two keys for one URL or DOI (two engineers adding the same source) are one document."""
    seen: dict[str, str] = {}
    duplicates = []
    for key, entry in _bib().entries.items():
        for field in ("url", "doi"):
            value = entry.fields.get(field, "").strip().rstrip("/").lower()
            if not value:
                continue
            if value in seen and seen[value] != key:
                duplicates.append(f"{key} and {seen[value]}: {field} {value}")
            seen.setdefault(value, key)
    assert duplicates == []


def test_every_entry_links_to_its_source():
    missing = [key for key, e in _bib().entries.items()
               if not (e.fields.get("url") or e.fields.get("doi"))]
    assert missing == [], "entries without url or doi (the references page promises links)"


def test_every_cited_key_exists():
    keys = set(_bib().entries)
    cited = set()
    for page in BOOK.glob("*.md"):
        if page.name == "README.md":  # not a page of the book
            continue
        for group in re.findall(r"\{cite(?::\w+)?\}`([^`\n]+)`", page.read_text(encoding="utf-8")):
            cited.update(k.strip() for k in group.split(","))
    assert cited - keys == set()


# -- the built pages ------------------------------------------------------------------------

_CITATION = re.compile(r'<span class="bibtex-citation"[^>]*>(.*?)</span>', re.S)
_LINK = re.compile(r'<a class="reference internal" href="(?:references\.html)?#([\w-]+)"[^>]*>([^<]+)</a>')
_ENTRY = re.compile(r'<div class="citation" id="([\w-]+)"[^>]*>\s*<span class="label">'
                    r'<span class="fn-bracket">\[</span>(.*?)<span class="fn-bracket">\]</span>', re.S)


@pytest.mark.slow
def test_every_label_on_the_pages_names_one_document(built_book):
    entries = {anchor: html.unescape(label) for anchor, label in
               _ENTRY.findall((built_book / "references.html").read_text(encoding="utf-8"))}
    assert len(entries) >= 20, "the bibliography page lists the references"
    assert len(set(entries.values())) == len(entries), "a label used by two bibliography entries"
    targets: dict[str, set[str]] = defaultdict(set)
    where: dict[str, set[str]] = defaultdict(set)
    for page in sorted(built_book.glob("*.html")):
        for span in _CITATION.findall(page.read_text(encoding="utf-8")):
            for anchor, text in _LINK.findall(span):
                label = html.unescape(text)
                targets[label].add(anchor)
                where[label].add(page.stem)
    assert targets, "no citation found on any page"
    problems = []
    for label, anchors in sorted(targets.items()):
        if len(anchors) != 1:
            problems.append(f"[{label}] links to {len(anchors)} documents (pages {sorted(where[label])})")
            continue
        (anchor,) = anchors
        if entries.get(anchor) != label:
            problems.append(f"[{label}] on {sorted(where[label])} points at the entry labelled "
                            f"[{entries.get(anchor)}]")
    assert problems == [], "\n".join(problems)
