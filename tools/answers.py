"""Hidden answers written as closed ``<details>`` controls, so JupyterLab shows "Answer", not raw source.

    python tools/answers.py                   rewrite every collapsed prose cell of notebooks/*.ipynb
    python tools/answers.py NOTEBOOK ...      only these notebooks
    python tools/answers.py --check [NB ...]  exit 1 (and list the cells) if one is not written so

A collapsed prose cell (tag ``collapsed``, or ``jupyter.source_hidden``: an answer, a question
for the class with its answer, a document check) used to be hidden by JupyterLab's
``source_hidden``. For a Markdown cell JupyterLab then shows the first line of the cell's
*source* as a placeholder, asterisks and dollar signs included, running off the edge of the
page. Written instead as

    <details><summary>Answer</summary>

    **Answers** ... the Markdown, math included ...

    </details>

the cell renders as a closed control everywhere: in JupyterLab (its sanitizer keeps
``details`` and ``summary``), on the site (tools/site/build.py leaves ``<details>`` cells
alone), on GitHub, and in the decks, where a collapsed prose cell goes to the speaker notes
(tools/publish.py). The blank lines after the summary and before ``</details>`` end the HTML
blocks, so the text between them is read as Markdown. The cell keeps its tags (``collapsed``
is what the decks, the site and tools/slide_metadata.py read); its ``jupyter.source_hidden``
and ``outputs_hidden`` go, or JupyterLab would hide the control itself.

The summary says what the control holds: "Answer" for a cell tagged ``answer`` or one that
gives an answer (``**Answer``), "Document check" under a heading about the document's figures
(as the site labels them, tools/publish.py's ``collapse_summary``), "Details" otherwise.
A question for the reader ("**Predict first.** ...? **Answer:** ...") keeps its question in view
and hides only the answer, so opening the control to read the question cannot show the answer:

    **Predict first.** Which key will the query of "I" match best?

    <details><summary>Answer</summary>

    "happy": its vector is the longest, ...

    </details>

A Markdown cell that shows such an answer outside a control (collapsed or not) is rewritten the
same way. Collapsed *code* cells are left as they are: JupyterLab shows their first line as code.
Nothing but those cells changes, and the notebook is written as nbformat writes it, so no
re-execution is needed. Standard library plus tools/publish.py's summary rule.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
OPENING = re.compile(r"\A<details><summary>(?P<summary>[^<]+)</summary>\n\n")
CLOSING = "\n\n</details>"
ANSWER_OPENING = "\n\n<details><summary>Answer</summary>\n\n"
# a question for the reader and its answer, in one cell: the question, then "**Answer:**" and the answer
QUESTION = re.compile(r"\A(?P<question>(?:(?!<details).)*?\*\*Predict first[.:]\*\*(?:(?!<details).)*?)"
                      r"\s*\(?\*\*Answer:?\*\*:?\s*(?P<answer>.*?)\)?\s*\Z", re.S)
GIVES_ANSWER = re.compile(r"\*\*Answers?\b")
# tools/publish.py's DOCUMENT_CHECK: a heading about the document's figures (kept in step by tests/test_answers.py)
DOCUMENT_CHECK = re.compile(r"\bdocument\b|\bcheck\b|\bslips?\b|\bfigures?\b|\bexact\b", re.IGNORECASE)


def _source(cell) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _tags(cell) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


def is_hidden_prose(cell) -> bool:
    """A Markdown cell hidden until asked: tag ``collapsed`` or a hidden source (tools/slide_metadata.py's rule)."""
    hidden = cell.get("metadata", {}).get("jupyter", {})
    return cell.get("cell_type") == "markdown" and (
        "collapsed" in _tags(cell) or bool(hidden.get("source_hidden") or hidden.get("outputs_hidden")))


def _inside(source: str) -> str:
    """The Markdown of a cell written as one closed control (else ``source`` itself)."""
    match = OPENING.match(source)
    return source[match.end():-len(CLOSING)] if match and source.endswith(CLOSING) else source


def question_and_answer(cell) -> tuple[str, str] | None:
    """(question, answer) of a prose cell that holds a "Predict first" question and its answer together."""
    if cell.get("cell_type") != "markdown":
        return None
    match = QUESTION.match(_inside(_source(cell)).strip("\n"))
    if not match:
        return None
    answer = match["answer"].strip()
    return match["question"].rstrip(), answer[:1].upper() + answer[1:]


def is_written(cell) -> bool:
    """``cell``'s source is one closed ``<details>`` control, or a question in view followed by its
    answer in one, and JupyterLab does not hide it."""
    source = _source(cell)
    hidden = cell.get("metadata", {}).get("jupyter", {})
    if hidden.get("source_hidden") or hidden.get("outputs_hidden") or not source.endswith(CLOSING):
        return False
    if OPENING.match(source):
        return question_and_answer(cell) is None
    question, sep, _ = source.partition(ANSWER_OPENING)
    return bool(sep) and "**Predict first" in question.split("<details")[0]


def needs_writing(cell) -> bool:
    """Hidden prose not written as a closed control, or a question whose answer is in view or hidden with it."""
    if is_hidden_prose(cell):
        return not is_written(cell)
    return question_and_answer(cell) is not None


def _heading_before(cells, i) -> str:
    for cell in reversed(cells[: i + 1]):
        if cell.get("cell_type") == "markdown":
            headings = [line for line in _source(cell).splitlines() if line.startswith("#")]
            if headings:
                return headings[-1]
    return ""


def summary(cells, i) -> str:
    """The summary of cell ``i``'s control: "Answer", "Document check" or "Details"."""
    cell = cells[i]
    if "answer" in _tags(cell) or GIVES_ANSWER.search(_source(cell)):
        return "Answer"
    if DOCUMENT_CHECK.search(_heading_before(cells, i)):
        return "Document check"
    return "Details"


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def write_cell(cells, i) -> bool:
    """Rewrite cell ``i`` (in place) as a closed control if it is hidden prose not so written; True if it changed."""
    cell = cells[i]
    if not needs_writing(cell):
        return False
    source = _source(cell).strip("\n")
    pair = question_and_answer(cell)
    if pair:
        source = f"{pair[0]}{ANSWER_OPENING}{pair[1]}{CLOSING}"
    elif not OPENING.match(source):
        source = f"<details><summary>{summary(cells, i)}</summary>\n\n{source}{CLOSING}"
    cell["source"] = _lines(source) if isinstance(cell.get("source"), list) else source
    metadata = cell.setdefault("metadata", {})
    hidden = metadata.get("jupyter", {})
    hidden.pop("source_hidden", None)
    hidden.pop("outputs_hidden", None)
    if "jupyter" in metadata and not hidden:
        del metadata["jupyter"]
    return True


def unwritten(nb) -> list[int]:
    """The indices of the cells of ``nb`` that :func:`needs_writing` (hidden prose, or a question with its answer)."""
    return [i for i, cell in enumerate(nb.get("cells", [])) if needs_writing(cell)]


def rewrite(path: Path) -> int:
    """Rewrite ``path``'s hidden prose cells; return how many changed (the file is written only if any did)."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    cells = nb.get("cells", [])
    changed = sum(write_cell(cells, i) for i in range(len(cells)))
    if changed:
        path.write_text(json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a hidden prose cell is not written so")
    parser.add_argument("notebooks", nargs="*", type=Path)
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted(NOTEBOOKS.glob("*.ipynb"))
    if args.check:
        bad = [(p, i) for p in paths for i in unwritten(json.loads(p.read_text(encoding="utf-8")))]
        for path, i in bad:
            print(f"answers: {path} cell {i} is hidden prose, or a question's answer, not written as <details>")
        return 1 if bad else 0
    for path in paths:
        changed = rewrite(path)
        if changed:
            print(f"answers: {path}: {changed} cells")
    return 0


if __name__ == "__main__":
    sys.exit(main())
