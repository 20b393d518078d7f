"""Check that the numbers written in the notebooks' prose are the numbers their cells compute.

    python tools/check_prose_numbers.py [NOTEBOOK ...]     (default: notebooks/*.ipynb and
                                                             instructor/solutions/*.ipynb)
    python tools/check_prose_numbers.py --all              also list every number that passed

Every number written in a markdown cell must do one of three things:

1. **appear in the notebook's stored outputs**, within the precision the prose prints it
   with: "0.48" matches a printed 0.4821 (0.4821 rounds to 0.48), "48%" matches 0.4821, and
   "2,048" matches 2048. Outputs are the text a reader sees: streams, ``text/plain``,
   ``text/html``, Markdown and figure descriptions (alt text);
2. **be a parameter visible in the code**: a literal in one of the notebook's code cells
   (``d_k = 512``, ``np.linspace(0, 1, 101)``), matched in the same way;
3. **carry a source** in its sentence: a paper cited by author and year ("Dao (2023)",
   "Vaswani et al., 2017"), a document of the collection by its title (in italics or quotes,
   or "the document"), or an explicit marker ``<!-- source: ... -->`` in the cell, which the
   reader does not see (for a fact that needs a longer reference, given in full elsewhere).

A number in a question ("For n = 1000 tokens, how many operations ...?") or in an
exercise's statement (under an "Exercises" heading, outside the answers) poses a parameter
rather than claiming a fact, and passes as such; an answer may repeat a posed number. A
number in inline code (`` `np.exp(-104)` ``) is code the reader sees, and counts as code.

What is not checked, so that the check stays useful rather than noisy:

- integers from 0 to 10 ("two heads", "step 3", shapes such as (3, 4)), numbers written
  with a leading zero ("08"), and notebooks named by their number ("notebook 11", "[11](11-...)");
- numbers in headings (section numbers, step numbers) and years (1900-2099);
- numbers that are part of a name or a unit: ``float16``, ``W_2``, ``A100``, ``GPT-2``,
  ``3x``, ``O(n^2)`` exponents, and anything inside a link's address;
- the document-check appendices (from a heading "Appendix: the document ..." to the next
  heading of the same level), which compare with the documents' own figures already;
- the generated navigation and Colab set-up cells.

Exit status 1 when a number is flagged. The suite runs this over every notebook
(tests/test_prose_numbers.py).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# A number in prose: digits with optional thousands commas or thin spaces, a decimal part,
# a scientific exponent ("3.39e38", "3.39 × 10^38", "3.39 \times 10^{38}"), and an optional
# percent sign. Not preceded by a letter, digit, underscore, dot or caret (a name, a version
# or an exponent), and not followed by a letter or digit (a unit or a name: "3x", "2nd").
NUMBER = re.compile(
    r"""
    (?<![\w.^\\{/#])(?<!\^\{)
    (?P<number>
        \d{1,3}(?:(?:,|\{,\})\d{3})+(?:\.\d+)?      # 2,048  1,000.5  100{,}000 (TeX)
      | \d+(?:\.\d+)?                     # 512  0.48
      | \.\d+                             # .5
    )
    (?P<exponent>
        [eE][-+−]?\d+                     # 3.39e38
      | \s*(?:×|\\times|x|\*)\s*10\s*\^\s*\{?\s*[-−]?\d+\s*\}?   # 3.39 × 10^38
    )?
    (?P<percent>\s?%|\\%)?
    (?![\w]|\.\d)
    """,
    re.VERBOSE,
)

# A paper by author and year, or a document of the collection by its title.
CITATION = re.compile(
    r"""
      \bet\ al\.?,?\s*\(?\s*(?:19|20)\d\d           # Elhage et al. (2021), Dao et al., 2022
    | [A-Z][\w-]+(?:\ (?:and|&)\ [A-Z][\w-]+)?,?\s*\(\s*(?:19|20)\d\d[a-z]?\s*\)   # Dao (2023)
    | \(\s*[A-Z][\w-]+(?:\ et\ al\.)?,?\s+(?:19|20)\d\d[a-z]?\s*\)                  # (Dao, 2023)
    """,
    re.VERBOSE,
)
SOURCE_MARKER = re.compile(r"<!--\s*source:", re.IGNORECASE)
DOCUMENT_TITLES = (
    "Day 43",
    "AIAYN Part 2",
    "Scaled Dot-Product Attention (definition page)",
    "definition page",
    "Section 5.2",
    "The Engine of Transformers",
)
# "the document prints 0.67", "the document's 107.4": numbers the documents state.
DOCUMENT_WORDS = re.compile(r"\b(?:the|this|each|its|a) documents?(?:'s?)?\b|\bdocuments?'\b", re.IGNORECASE)

HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
DOC_APPENDIX = re.compile(r"appendix.*document|document.*appendix", re.IGNORECASE)
LINK_TARGET = re.compile(r"\]\([^)]*\)|<(?:https?|file):[^>]*>|https?://\S+|<img[^>]*>|<a [^>]*>")
HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
CODE_NUMBER = re.compile(r"(?<![\w.])(\d+(?:_\d{3})*(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)(?![\w])")
OUTPUT_NUMBER = re.compile(r"(?<![\w.])[-−]?(\d+(?:,\d{3})*(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)")
SENTENCE_END = re.compile(r"(?<=[.!?:;])\s+(?=[A-Z*_(\[$])|\n\s*\n|\n\s*[-*]\s|\n\s*\d+\.\s|\|")


@dataclass(frozen=True)
class Finding:
    notebook: str
    cell: int
    text: str  # the number as written
    value: float
    decimals: int
    sentence: str
    reason: str  # "output", "code", "source", "question" or "" (flagged)

    def __str__(self):
        where = f"{self.notebook} cell {self.cell}"
        return f"{where}: {self.text!r} in: {self.sentence.strip()[:160]!r}"


def _decimals(text):
    """Digits after the decimal point of a number as written ("0.480" -> 3, "512" -> 0)."""
    mantissa = re.split(r"[eE×x*]|\\times", text)[0]
    return len(mantissa.split(".")[1]) if "." in mantissa else 0


def _value(match):
    raw = match.group("number").replace("{,}", "").replace(",", "")
    value = float(raw)
    exponent = match.group("exponent")
    if exponent:
        times_ten = "10" in exponent and not exponent.lstrip().lower().startswith("e")
        digits = re.findall(r"[-−]?\d+", exponent.replace("10", "", 1) if times_ten else exponent)
        power = int(digits[-1].replace("−", "-")) if digits else 0
        value *= 10.0 ** power
    return value


def _text_of(cell):
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _output_texts(cell):
    """The text a reader sees in a code cell's outputs (and figure descriptions)."""
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            yield "".join(output.get("text", ""))
        data = output.get("data", {})
        for mime in ("text/plain", "text/html", "text/markdown"):
            if mime in data:
                yield "".join(data[mime]) if isinstance(data[mime], list) else data[mime]
        for mime, meta in (output.get("metadata") or {}).items():
            if isinstance(meta, dict) and isinstance(meta.get("alt"), str):
                yield meta["alt"]


def _numbers(text, pattern):
    values = []
    for match in pattern.finditer(text):
        raw = match.group(1).replace(",", "").replace("_", "")
        try:
            values.append(abs(float(raw)))
        except ValueError:
            continue
    return values


def _matches(value, decimals, candidates, percent=False):
    """True when a candidate rounds to ``value`` at the prose's precision."""
    targets = [value / 100.0] if percent else [value]
    if percent:
        targets.append(value)  # "48%" may also be printed as 48.0
    for target in targets:
        places = decimals + (2 if percent and target is targets[0] else 0)
        tolerance = 0.5 * 10.0 ** (-places) * (1 + 1e-9)
        if target >= 1e6 or (0 < target < 1e-4):  # scientific: compare 3 significant digits or as written
            for c in candidates:
                if c > 0 and abs(c - target) <= max(tolerance, abs(target) * 5e-3):
                    return True
            continue
        for c in candidates:
            if abs(c - target) <= tolerance:
                return True
    return False


def _sentences(text):
    """Split prose into sentences / list items / table cells (rough, but enough for citations)."""
    parts, start = [], 0
    for match in SENTENCE_END.finditer(text):
        parts.append((start, text[start:match.start()]))
        start = match.end()
    parts.append((start, text[start:]))
    return parts


def _skip_number(match, text, original):
    value = match.group("number")
    if re.search(r"[A-Za-z]-$", text[:match.start()]):  # a name: GPT-2, E-7
        return True
    if re.fullmatch(r"0\d+", value):  # "08": a notebook number
        return True
    number = float(value.replace("{,}", "").replace(",", ""))
    # A notebook by its number: "notebook 11", "notebooks 08-11", "[11](11-memory-....ipynb)".
    if re.search(r"notebooks?\s+(?:\d+\s*(?:,|-|–|and|to)\s*)*$", text[:match.start()], re.IGNORECASE):
        return True
    if original[:match.start()].endswith("[") and re.match(r"\]\([^)]*\.ipynb", original[match.end():]):
        return True
    if not match.group("exponent") and not match.group("percent") and "." not in value:
        if number <= 10:
            return True
        if 1900 <= number <= 2099 and "," not in value:
            return True
    # An exponent in TeX (x^2, 10^{-9}) or a subscript (W_2, d_{64}).
    if re.search(r"[\^_]\{?\s*[-−]?$", text[:match.start()]):
        return True
    return False


EXERCISES = re.compile(r"^exercises?\b|^homework\b", re.IGNORECASE)
INLINE_CODE = re.compile(r"`[^`\n]+`")


def _sections(cells):
    """Per cell: (in a document-check appendix, in an exercises section), from the headings."""
    appendix_level = exercise_level = None
    states = []
    for cell in cells:
        if cell.get("cell_type") == "markdown":
            for line in _text_of(cell).splitlines():
                heading = HEADING.match(line.strip())
                if not heading:
                    continue
                level, title = len(heading.group(1)), heading.group(2)
                if appendix_level is not None and level <= appendix_level:
                    appendix_level = None
                if exercise_level is not None and level <= exercise_level:
                    exercise_level = None
                if DOC_APPENDIX.search(title):
                    appendix_level = level
                elif EXERCISES.search(title.strip("*_ ")):
                    exercise_level = level
        states.append((appendix_level is not None, exercise_level is not None))
    return states


def _prose_numbers(text):
    """(match, line, original line, sentence, question) for each candidate number of the prose."""
    visible = HTML_COMMENT.sub(" ", text)
    # Headings hold section and step numbers: blank them out (keeping the line breaks).
    visible = "\n".join("" if HEADING.match(line.strip()) else line for line in visible.split("\n"))
    for start, sentence in _sentences(visible):
        question = sentence.rstrip().rstrip("*_").endswith("?")  # a question poses, it does not claim
        masked = LINK_TARGET.sub(lambda m: " " * len(m.group(0)), sentence)
        masked = INLINE_CODE.sub(lambda m: " " * len(m.group(0)), masked)  # code the reader runs
        for line, original in zip(masked.split("\n"), sentence.split("\n")):
            for match in NUMBER.finditer(line):
                if not _skip_number(match, line, original):
                    yield match, sentence, question


def check_notebook(path):
    """Every checked number of the notebook at ``path``, each with its reason (or "" if flagged)."""
    path = Path(path)
    nb = json.loads(path.read_text(encoding="utf-8"))
    cells = nb.get("cells", [])
    states = _sections(cells)
    outputs, code, posed = [], [], []
    for cell, (appendix, exercise) in zip(cells, states):
        if cell.get("cell_type") == "code":
            code.extend(_numbers(_text_of(cell), CODE_NUMBER))
            for text in _output_texts(cell):
                outputs.extend(_numbers(text, OUTPUT_NUMBER))
        elif cell.get("cell_type") == "markdown":
            text = _text_of(cell)
            for span in INLINE_CODE.findall(text):  # inline code is code the reader sees
                code.extend(_numbers(span, CODE_NUMBER))
            # An exercise's statement (not its answer) and any question pose their numbers:
            # an answer may repeat them.
            is_answer = "answer" in cell.get("metadata", {}).get("tags", [])
            for match, sentence, question in _prose_numbers(text):
                if question or (exercise and not is_answer):
                    posed.append(_value(match))
    outputs, code, posed = sorted(set(outputs)), sorted(set(code)), sorted(set(posed))

    findings = []
    for index, (cell, (appendix, exercise)) in enumerate(zip(cells, states)):
        tags = set(cell.get("metadata", {}).get("tags", []))
        if cell.get("cell_type") != "markdown" or appendix or "navigation" in tags:
            continue
        text = _text_of(cell)
        has_marker = bool(SOURCE_MARKER.search(text))
        is_answer = "answer" in tags
        for match, sentence, question in _prose_numbers(text):
            cited = (
                bool(CITATION.search(sentence))
                or any(t in sentence for t in DOCUMENT_TITLES)
                or bool(DOCUMENT_WORDS.search(sentence))
            )
            value = _value(match)
            decimals = _decimals(match.group("number") + (match.group("exponent") or ""))
            percent = bool(match.group("percent"))
            if _matches(value, decimals, outputs, percent):
                reason = "output"
            elif _matches(value, decimals, code, percent):
                reason = "code"
            elif cited or has_marker:
                reason = "source"
            elif question or (exercise and not is_answer) or _matches(value, decimals, posed, percent):
                reason = "question"
            else:
                reason = ""
            findings.append(Finding(path.name, index, match.group(0).strip(), value, decimals, sentence, reason))
    return findings


def default_notebooks():
    return sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "instructor" / "solutions").glob("*.ipynb"))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--all", action="store_true", help="list every checked number with its reason")
    args = parser.parse_args(argv)
    paths = args.notebooks or default_notebooks()
    checked = flagged = 0
    for path in paths:
        findings = check_notebook(path)
        bad = [f for f in findings if not f.reason]
        checked += len(findings)
        flagged += len(bad)
        counts = {r: sum(f.reason == r for f in findings) for r in ("output", "code", "source", "question")}
        print(f"{path.name}: {len(findings)} numbers ({counts['output']} in outputs, {counts['code']} in code, "
              f"{counts['source']} sourced, {counts['question']} posed in questions), {len(bad)} flagged")
        for finding in findings if args.all else bad:
            print(f"  {'FLAG' if not finding.reason else finding.reason:6} {finding}")
    print(f"total: {checked} numbers checked, {flagged} flagged")
    return 1 if flagged else 0


if __name__ == "__main__":
    sys.exit(main())
