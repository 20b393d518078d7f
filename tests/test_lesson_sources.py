"""Lessons that stand on their own, and speak to the learner (issue 23, items 5 and 9).

Item 5: the prose of lessons 01-11 explains attention, not the documents. On a
lesson's *main path* the words "the document", "the page", "the section" (and
their plurals) and the five documents' titles appear at most twice in all: the
source line at the top and the pointer to the appendix.

The main path of a lesson is its visible markdown: the markdown cells before the
first heading that starts with "Appendix" (``## Appendix...``), leaving out the
cells that are collapsed (tag ``collapsed``, written as a closed ``<details>``, or
``jupyter.source_hidden``: answers and audits a learner opens on purpose). Speaker
notes are visible markdown, so they count.

Item 9: nothing a learner can read speaks to the lecturer or about slides
("Before the lecture, run all cells...", "the next slide follows..."). That goes
to docs/teaching.md. Every markdown cell of every numbered notebook is read,
collapsed or not, and so is the printed text of its code cells.
"""

import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))
LESSONS = [p for p in NOTEBOOKS if 1 <= int(p.name[:2]) <= 11]

TITLES = (
    "Day 43 - Scaled Dot-Product Attention Deep Dive",
    "AIAYN Part 2: Scaled Dot-Product Attention",
    "Section 5.2: Dot-Product Attention — The Core Mechanism",
    "The Engine of Transformers: Building Scaled Dot-Product Attention",
    "Scaled Dot-Product Attention",
)
MAX_MENTIONS = 2
# Longer titles first, so "Scaled Dot-Product Attention" inside a longer title counts once.
MENTION = re.compile(
    r"\bthe (?:document|page|section)s?\b|"
    + "|".join(re.escape(t) for t in sorted(TITLES, key=len, reverse=True)),
    re.IGNORECASE,
)
# A document's title on its own ("Scaled Dot-Product Attention") is also the name of
# the mechanism; it counts only when set as a title (in italics or quotes).
BARE_TITLE = "scaled dot-product attention"
TO_THE_LECTURER = re.compile(
    r"\blecturer\b|\b(?:next|previous|last|this|that|the following) slides?\b|"
    r"\b(?:before|during|after) the lecture\b|\bon the slides?\b",
    re.IGNORECASE,
)
APPENDIX = re.compile(r"^#+\s*Appendix", re.IGNORECASE | re.MULTILINE)
COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)


def main_path(nb):
    """``(index, source)`` of the visible markdown cells before the first appendix heading."""
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        if APPENDIX.search(cell.source):
            return
        # collapsed: hidden until asked, as tag ``collapsed`` (a closed <details>, tools/answers.py) or hidden source
        if ("collapsed" in cell.get("metadata", {}).get("tags", [])
                or cell.get("metadata", {}).get("jupyter", {}).get("source_hidden")):
            continue
        yield index, COMMENT.sub(" ", cell.source)


def mentions(text):
    """The mentions of the documents in ``text`` (see the module docstring)."""
    found = []
    for match in MENTION.finditer(text):
        word = match.group(0)
        if word.lower() == BARE_TITLE:
            before = text[max(0, match.start() - 2):match.start()]
            after = text[match.end():match.end() + 1]
            italic_or_quoted = (before[-1:] in set("*_\"“'") and before != "**"
                                and after in set("*_\"”'") and after != "")
            if not italic_or_quoted:  # bold is the mechanism being named
                continue
        found.append(word)
    return found


def learner_text(cell):
    if cell.cell_type == "markdown":
        yield COMMENT.sub(" ", cell.source)
    for out in cell.get("outputs", []):
        if out.output_type == "stream":
            yield out.text
        elif "text/plain" in out.get("data", {}):
            yield out.data["text/plain"]


def test_mentions_are_counted():
    text = ('The document says so; the page and the sections differ. *Day 43 - Scaled Dot-Product '
            'Attention Deep Dive* prints it. Scaled dot-product attention is a mechanism; '
            '"Scaled Dot-Product Attention" is a title; **scaled dot-product attention** is defined.')
    assert len(mentions(text)) == 5
    assert not mentions("a documented page, sectioned")


def test_lecturer_phrases_are_found():
    for text in ("Before the lecture, run all cells.", "The next slide follows.",
                 "Ask the lecturer.", "as on the slide"):
        assert TO_THE_LECTURER.search(text), text
    assert not TO_THE_LECTURER.search("slides of the softmax; a lecture-free lesson")


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_the_main_path_explains_attention_not_the_documents(path):
    nb = nbformat.read(path, as_version=4)
    found = [(index, word) for index, text in main_path(nb) for word in mentions(text)]
    assert len(found) <= MAX_MENTIONS, (
        f"{path.name}: {len(found)} mentions of the documents on the main path "
        f"(at most {MAX_MENTIONS}): " + "; ".join(f"cell {i}: {w!r}" for i, w in found))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_cell_speaks_to_the_lecturer(path):
    nb = nbformat.read(path, as_version=4)
    found = [f"cell {index}: ...{' '.join(text[max(0, m.start() - 40):m.end() + 40].split())}..."
             for index, cell in enumerate(nb.cells) for text in learner_text(cell)
             for m in TO_THE_LECTURER.finditer(text)]
    assert not found, f"{path.name} speaks to the lecturer (move it to docs/teaching.md):\n" + "\n".join(found)
