"""No lesson (00-16) uses a glossary term before the lesson that defines it (issue 23, item 4; issue 33).

docs/glossary.md lists each term with one or more definitions, each ending in a
link ``— [NN-name.ipynb, section ...](...)``. The smallest NN is the term's
*defining lesson*. A lesson numbered below it must not use the term in anything
a learner reads:

- the markdown cells as rendered (HTML comments, link targets and fenced code
  are not read; inline code and LaTeX are, since a learner reads them),
- the printed text of code cells (streams and ``text/plain`` results, but not a
  figure's ``<Figure size ...>`` repr),
- the text description (alt text) of every described figure.

A term that is a symbol, or names one in parentheses (``⊙``, ``η (learning rate)``,
``Kronecker delta (δ_ij)``, ``partial derivative (∂)``), is also matched by the symbol
itself and by its LaTeX command (``\\odot``, ``\\eta``, ``\\delta``, ``\\partial``), since a
formula is read too.

Every entry has exactly one defining place: one link to one lesson.

Code itself is not read: a name in code (``causal_mask``) is not a word in prose.

How a term is matched: case-insensitively, as a whole word, with the plural
endings -s/-es (and y -> -ies). A term written ``name (qualifier)`` is matched
as ``name``; the qualifier counts as a name of its own only when it is an
abbreviation in capitals (``log-sum-exp (LSE)``). ``a / b`` is two terms.

One kind of use is allowed: a term inside the text of a link to a lesson that
defines it ("[the causal mask, in 05](05-....ipynb#Masks)") points forward; it
does not use the word unexplained.

00 (the front page) is read like any lesson except its generated cells (tagged
``navigation`` or ``contents``): those list the lessons' titles, which name
what each lesson teaches.
"""

import html
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
GLOSSARY = ROOT / "docs" / "glossary.md"
NOTEBOOKS = ROOT / "notebooks"
LAST_LESSON = 16

# Terms that are not checked, each with its reason. Keep this list short.
GENERIC = {
    "attention": "the subject of the whole collection and of its title; the front page names it "
    "in its first sentence and defines it there in words",
}

TERM_LINE = re.compile(r"^- \*\*(?P<term>[^*]+)\*\*(?P<rest>.*)$")
SUB_LINE = re.compile(r"^\s+- (?P<rest>.+)$")
LESSON_LINK = re.compile(r"\[(\d\d)-[\w-]+\.ipynb")


def all_definitions(text):
    """``{term: set of lesson numbers that define it}`` from the glossary's markdown."""
    out = {}
    term = None
    for line in text.splitlines():
        top = TERM_LINE.match(line)
        sub = SUB_LINE.match(line)
        if top:
            term = top["term"].strip()
            rest = top["rest"]
        elif sub and term is not None:
            rest = sub["rest"]
        else:
            continue
        out.setdefault(term, set()).update(int(n) for n in LESSON_LINK.findall(rest))
    return out


def parse_glossary(text):
    """``{term: earliest defining lesson number}``."""
    return {term: min(lessons) for term, lessons in all_definitions(text).items() if lessons}


# symbols a glossary term may stand for, and the LaTeX command a formula writes them with
SYMBOLS = {"⊙": "\\odot", "δ": "\\delta", "∂": "\\partial", "η": "\\eta"}


def _symbol_names(part):
    """The symbol of ``part`` ("⊙", or "(δ_ij)" after a name) and its LaTeX command, if it has one."""
    names = []
    base = re.sub(r"\s*\(.*?\)", "", part).strip()
    for piece in [base] + re.findall(r"\((.*?)\)", part):
        symbol = piece.strip().split("_")[0]  # "δ" of "δ_ij"
        if symbol in SYMBOLS:
            names += [symbol, SYMBOLS[symbol]]
    return names


def names_of(term):
    """The words a glossary term is matched by (see the module docstring)."""
    names = []
    for part in term.split(" / "):
        base = re.sub(r"\s*\(.*?\)", "", part).strip()
        names.append(base)
        for inner in re.findall(r"\((.*?)\)", part):
            if re.fullmatch(r"[A-Z]{2,}", inner.strip()):
                names.append(inner.strip())
        names += _symbol_names(part)
    return list(dict.fromkeys(name for name in names if name))


def pattern_of(name):
    if name in SYMBOLS:
        return re.compile(re.escape(name))
    if name in SYMBOLS.values():
        return re.compile(re.escape(name) + r"(?![A-Za-z])")
    stem = re.escape(name)
    if name.endswith("y") and not name.endswith(("ay", "ey", "oy", "uy")):
        word = rf"(?:{stem}|{re.escape(name[:-1])}ies)"
    else:
        word = rf"{stem}(?:s|es)?"
    return re.compile(rf"(?<![\w-]){word}(?![\w-])", re.IGNORECASE)


MD_LINK = re.compile(r"(?<!!)\[(?P<text>[^\]]*)\]\((?P<target>[^)]*)\)")
FENCE = re.compile(r"```.*?```", re.DOTALL)
COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
ALT = re.compile(r'<img[^>]*\balt="(?P<alt>[^"]*)"')
FIGURE_REPR = re.compile(r"^<Figure size [^>]*>$", re.MULTILINE)


def lesson_number(path):
    return int(path.name[:2])


def readable_texts(nb):
    """``(cell index, kind, text, links)`` for what a learner reads in each cell.

    ``links`` is a list of (link text, lesson number or None) for the cell's links;
    their text is removed from ``text`` and checked separately.
    """
    for index, cell in enumerate(nb.cells):
        tags = set(cell.get("metadata", {}).get("tags", []))
        if tags & {"navigation", "contents"}:
            continue
        if cell.cell_type == "markdown":
            text = FENCE.sub(" ", COMMENT.sub(" ", cell.source))
            links = []
            for link in MD_LINK.finditer(text):
                target = re.match(r"(\d\d)-[\w-]+\.ipynb", link["target"])
                links.append((link["text"], int(target[1]) if target else None))
            yield index, "markdown", MD_LINK.sub(" ", text), links
        elif cell.cell_type == "code":
            for out in cell.get("outputs", []):
                if out.output_type == "stream":
                    yield index, "printed text", out.text, []
                elif out.output_type in ("execute_result", "display_data"):
                    data = out.get("data", {})
                    if "text/plain" in data:
                        plain = FIGURE_REPR.sub(" ", data["text/plain"])
                        yield index, "printed text", plain, []
                    for alt in ALT.findall(data.get("text/html", "")):
                        yield index, "figure description", html.unescape(alt), []
                    alt = out.get("metadata", {}).get("alt")
                    if alt:
                        yield index, "figure description", alt, []


def lessons():
    return sorted(p for p in NOTEBOOKS.glob("[0-9][0-9]-*.ipynb") if lesson_number(p) <= LAST_LESSON)


def early_uses(path, defined):
    """Every use in ``path`` of a term defined only in a later lesson, as readable strings."""
    number = lesson_number(path)
    later = {t: n for t, n in defined.items() if n > number and t not in GENERIC}
    patterns = {t: [pattern_of(name) for name in names_of(t)] for t in later}
    nb = nbformat.read(path, as_version=4)
    found = []
    for index, kind, text, links in readable_texts(nb):
        pieces = [(text, None)] + links  # (text, the lesson a link points to)
        hits = {}
        for term, pats in patterns.items():
            for piece_no, (piece, target) in enumerate(pieces):
                if target is not None and defined_in(term, target):
                    continue  # a pointer to the lesson that defines the term
                hit = next((m for p in pats for m in [p.search(piece)] if m), None)
                if hit:
                    hits[term] = (piece_no, hit)
                    break
        for term, (piece_no, hit) in hits.items():
            inside_longer = any(other != term and o_no == piece_no and o.start() <= hit.start()
                                and hit.end() <= o.end() and (o.start(), o.end()) != (hit.start(), hit.end())
                                for other, (o_no, o) in hits.items())
            if inside_longer:  # "mask" inside "causal mask": report the longer term only
                continue
            start = max(0, hit.start() - 40)
            context = " ".join(hit.string[start:hit.end() + 40].split())
            found.append(f"{path.name} cell {index} ({kind}) uses {term!r}, defined in "
                         f"{later[term]:02d}: ...{context}...")
    return found


_DEFINITIONS = all_definitions(GLOSSARY.read_text(encoding="utf-8"))


def defined_in(term, lesson):
    """True if the glossary lists a definition of ``term`` in lesson number ``lesson``."""
    return lesson in _DEFINITIONS.get(term, set())


@pytest.fixture(scope="module")
def defined():
    return parse_glossary(GLOSSARY.read_text(encoding="utf-8"))


def test_the_glossary_parses(defined):
    # a few entries whose defining lesson is known, so a broken parser fails here first
    assert defined["softmax"] == 1
    assert defined["causal mask"] == 5  # masks live in 05; 04's explorer links there
    assert defined["cross-attention"] == 5
    assert defined["fan-in"] == 2
    assert all(0 <= n <= 16 for n in defined.values())
    assert len(defined) >= 40
    assert set(GENERIC) <= set(defined), "a skipped term that is not in the glossary"


def test_term_names_and_matching():
    assert names_of("entropy (nats)") == ["entropy"]
    assert names_of("log-sum-exp (LSE)") == ["log-sum-exp", "LSE"]
    assert names_of("overflow / underflow") == ["overflow", "underflow"]
    assert pattern_of("entropy").search("The Entropy of a row")
    assert pattern_of("query").search("three queries")
    assert pattern_of("mask").search("two masks")
    assert not pattern_of("mask").search("masked_fill")  # whole words only
    assert not pattern_of("mask").search("unmasking")
    assert not pattern_of("key").search("monkey")


def test_symbols_are_matched_as_written_and_in_latex():
    assert names_of("⊙") == ["⊙", "\\odot"]
    assert names_of("η (learning rate)") == ["η", "\\eta"]
    assert names_of("Kronecker delta (δ_ij)") == ["Kronecker delta", "δ", "\\delta"]
    assert names_of("partial derivative (∂)") == ["partial derivative", "∂", "\\partial"]
    assert names_of("∂L/∂q") == ["∂L/∂q"], "a formula as a term is matched as written, not by its symbols"
    assert pattern_of("\\odot").search("$dP \\odot P$")
    assert not pattern_of("\\eta").search("$\\beta$ and $\\theta$") and pattern_of("\\eta").search("$W - \\eta\\, dW$")
    assert not pattern_of("\\delta").search("$\\Delta$")


def test_every_entry_has_one_defining_place():
    several = {t: sorted(n) for t, n in _DEFINITIONS.items() if len(n) != 1}
    assert not several, f"glossary entries with no or several defining lessons (link the others to one): {several}"


def test_a_planted_early_use_is_found(defined, tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("This row is all NaN."),
                nbformat.v4.new_markdown_cell("See [NaN, in 05](05-definition-shapes-and-masks.ipynb)."),
                nbformat.v4.new_markdown_cell("A [cross-attention](03-cat-sat-mat.ipynb) here."),
                nbformat.v4.new_markdown_cell("Here $dS = P \\odot (dP - r)$.")]
    path = tmp_path / "04-planted.ipynb"
    nbformat.write(nb, path)
    found = early_uses(path, defined)
    assert len(found) == 3, found  # the plain use, a link to a lesson that does not define it, a symbol
    assert "cell 0" in found[0] and "'NaN'" in found[0]
    assert "cell 2" in found[1] and "'cross-attention'" in found[1]
    assert "cell 3" in found[2] and "'⊙'" in found[2]


@pytest.mark.parametrize("path", lessons(), ids=lambda p: p.name)
def test_no_term_is_used_before_its_lesson(path, defined):
    found = early_uses(path, defined)
    assert not found, "terms used before the lesson that defines them:\n" + "\n".join(found)
