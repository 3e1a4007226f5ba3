"""Sphinx extension: short, distinct, readable citation labels for the course book.

The book cites many documents of one author and year (NVIDIA's MIG guide, MPS manual,
time-slicing page and device plugin, all "NVIDIA, 2025"), so author-year citations cannot
be told apart on the page. This extension registers a pybtex formatting style,
``course``, whose label is what the reader sees both in the text and in the
bibliography (``bibtex_reference_style: label``):

* the entry's ``shorthand`` field when it has one (biblatex's field for exactly this),
  e.g. ``NVIDIA MIG Guide``: vendor documentation, specifications;
* otherwise, for a document by an organisation (a brace-protected author such as
  ``{{The Karpenter Authors}}``), the organisation's short name and the first words of the
  title before any subtitle: ``Karpenter Disruption``, ``AWS Spot Instance Advisor``;
* otherwise the authors' last names and the year: ``Lifka 1995``, ``Patarasuk & Yuan
  2009``, ``Weng et al. 2023`` (three or more authors);
* two entries that would get the same label get ``a``, ``b``, ... after it, in pybtex's
  author-year-title order (``Verma et al. 2015a``), so every label names one document.

The bibliography is sorted by label. Everything else of the entry's formatting is
pybtex's ``unsrt`` style (title, venue, year, URL/DOI).
"""

from __future__ import annotations

import re
import string
from collections import Counter, defaultdict
from typing import Any

from pybtex.plugin import register_plugin
from pybtex.style.formatting.unsrt import Style as UnsrtStyle
from pybtex.style.labels import BaseLabelStyle
from pybtex.style.sorting import BaseSortingStyle
from pybtex.style.sorting.author_year_title import SortingStyle as AuthorYearTitle

_BRACES = re.compile(r"[{}]")

#: Short names of the organisations that author documentation the book cites.
ORG_SHORT = {"The Kubernetes Authors": "K8s", "The Karpenter Authors": "Karpenter",
             "The Kueue Authors": "Kueue", "The Volcano Authors": "Volcano",
             "The Linux kernel developers": "Linux", "Amazon Web Services": "AWS",
             "Alibaba Group": "Alibaba", "NVIDIA": "NVIDIA"}
#: Most title words an organisation's label takes.
ORG_TITLE_WORDS = 4


def _organisation(persons: list[Any]) -> str | None:
    """The organisation's name when the only author is brace-protected, else None."""
    if len(persons) != 1 or persons[0].first_names or persons[0].middle_names:
        return None
    raw = " ".join(persons[0].last_names)
    return _BRACES.sub("", raw).strip() if raw.startswith("{") else None


def _last_name(person: Any) -> str:
    parts = list(person.prelast_names) + list(person.last_names)
    return _BRACES.sub("", " ".join(parts)).strip()


def base_label(entry: Any) -> str:
    """The label of one entry before disambiguation (see the module docstring)."""
    shorthand = entry.fields.get("shorthand")
    if shorthand:
        return _BRACES.sub("", str(shorthand)).strip()
    persons = entry.persons.get("author") or entry.persons.get("editor") or []
    org = _organisation(persons)
    if org is not None:
        short = ORG_SHORT.get(org, re.sub(r"^The |\s+(Authors|developers|Group)$", "", org))
        title = _BRACES.sub("", str(entry.fields.get("title", ""))).split(":")[0]
        words = [w for w in title.split()
                 if w.casefold() not in (short.casefold(), org.casefold())]
        return " ".join([short] + words[:ORG_TITLE_WORDS]).rstrip(":,;.")
    names = [_last_name(p) for p in persons]
    if not names:
        who = _BRACES.sub("", str(entry.fields.get("title", entry.key)))[:24]
    elif len(names) == 1:
        who = names[0]
    elif len(names) == 2:
        who = f"{names[0]} & {names[1]}"
    else:
        who = f"{names[0]} et al."
    year = str(entry.fields.get("year", "")).strip()
    return f"{who} {year}".strip()


def distinct_labels(entries: list[Any]) -> list[str]:
    """Labels for ``entries`` (in that order), with ``a``, ``b``, ... added to repeated ones."""
    labels = [base_label(e) for e in entries]
    counts = Counter(labels)
    seen: dict[str, int] = defaultdict(int)
    out = []
    for label in labels:
        if counts[label] > 1:
            n = seen[label]
            seen[label] += 1
            label += string.ascii_lowercase[n] if n < 26 else f"-{n + 1}"
        out.append(label)
    return out


class CourseLabelStyle(BaseLabelStyle):
    """pybtex label style ``course``: see :func:`base_label` and :func:`distinct_labels`."""

    def format_labels(self, sorted_entries):
        yield from distinct_labels(list(sorted_entries))


class CourseSortingStyle(BaseSortingStyle):
    """pybtex sorting style ``course``: by label; entries sharing a base label keep the
    author-year-title order, so their suffixes ``a``, ``b`` follow it."""

    def sort(self, entries):
        ordered = AuthorYearTitle().sort(list(entries))
        rank = {id(e): i for i, e in enumerate(ordered)}
        return sorted(ordered, key=lambda e: (base_label(e).casefold(), rank[id(e)]))


class CourseStyle(UnsrtStyle):
    """pybtex formatting style ``course``: unsrt entries, ``course`` labels, sorted by label."""

    default_label_style = "course"
    default_sorting_style = "course"


def register() -> None:
    """Register the ``course`` label, sorting and formatting styles with pybtex (idempotent)."""
    for group, cls in (("pybtex.style.labels", CourseLabelStyle),
                       ("pybtex.style.sorting", CourseSortingStyle),
                       ("pybtex.style.formatting", CourseStyle)):
        register_plugin(group, "course", cls, force=True)


def setup(app):
    """Sphinx entry point: register the styles before sphinxcontrib-bibtex formats anything."""
    register()
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1.0"}
