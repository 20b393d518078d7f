"""Answers hidden until asked are closed "Answer" controls (tools/answers.py), not a raw line of source.

Every collapsed prose cell of notebooks/ is written as ``<details><summary>...</summary>``, a blank
line, its Markdown, a blank line, ``</details>``, and JupyterLab does not hide it
(no ``jupyter.source_hidden``). The tool's rule is checked on a small notebook; the decks keep
such a cell in the speaker notes; in JupyterLab (headless Chromium) lesson 01 shows each control
closed, its summary visible and its text not, and an opened answer shows rendered Markdown and
math. The site's side is tests/test_site.py's (it leaves a ``<details>`` cell as written).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import nbformat
import pytest
from browser_support import JupyterLab, served_page, unavailable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import answers  # noqa: E402
import publish  # noqa: E402
import slide_metadata  # noqa: E402

ARTIFACTS = ROOT / "test-artifacts" / "browser"
LESSON = "notebooks/01-i-am-happy.ipynb"


def _toy():
    hidden = {"source_hidden": True, "outputs_hidden": True}
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Title"),
        nbformat.v4.new_markdown_cell("**Answers**\n\n1. $e^1 = e$, *whatever* the rest.",
                                      metadata={"tags": ["answer", "collapsed"], "jupyter": hidden}),
        nbformat.v4.new_markdown_cell("**Ask:** why? **Answer:** because $\\sqrt{d_k}$.",
                                      metadata={"tags": ["collapsed"], "jupyter": {"source_hidden": True}}),
        nbformat.v4.new_markdown_cell("**Point at** the box.", metadata={"tags": ["collapsed"]}),
        nbformat.v4.new_markdown_cell("## Appendix: the document vs exact values"),
        nbformat.v4.new_markdown_cell("The table.", metadata={"jupyter": {"source_hidden": True}}),
        nbformat.v4.new_code_cell("print(42)", metadata={"tags": ["answer", "collapsed"], "jupyter": hidden}),
        nbformat.v4.new_markdown_cell("shown"),
    ])
    return json.loads(nbformat.writes(nb))


def test_a_hidden_prose_cell_is_written_as_a_closed_control_and_nothing_else_changes(tmp_path):
    nb = _toy()
    path = tmp_path / "toy.ipynb"
    path.write_text(json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    assert answers.unwritten(nb) == [1, 2, 3, 5]
    assert answers.main(["--check", str(path)]) == 1
    assert answers.rewrite(path) == 4
    out = json.loads(path.read_text(encoding="utf-8"))
    cells = out["cells"]
    assert "".join(cells[1]["source"]) == (
        "<details><summary>Answer</summary>\n\n**Answers**\n\n1. $e^1 = e$, *whatever* the rest.\n\n</details>")
    assert "".join(cells[2]["source"]).startswith("<details><summary>Answer</summary>\n\n**Ask:**")
    assert "".join(cells[3]["source"]).startswith("<details><summary>Details</summary>\n\n**Point at**")
    assert "".join(cells[5]["source"]).startswith("<details><summary>Document check</summary>\n\nThe table.")
    for i in (1, 2, 3, 5):
        assert "jupyter" not in cells[i]["metadata"], "JupyterLab would hide the control itself"
        assert cells[i]["metadata"].get("tags") == nb["cells"][i]["metadata"].get("tags")
    for i in (0, 4, 6, 7):
        assert cells[i] == nb["cells"][i], "only hidden prose changes; collapsed code stays as it is"
    assert answers.main(["--check", str(path)]) == 0
    before = path.read_bytes()
    assert answers.rewrite(path) == 0 and path.read_bytes() == before, "a second run changes nothing"
    # still collapsed for the decks, the site and the slide rules
    assert all(slide_metadata.is_collapsed(cells[i]) for i in (1, 2, 3))


def test_a_question_stays_in_view_and_only_its_answer_is_hidden(tmp_path):
    hidden_whole = ("<details><summary>Answer</summary>\n\n**Predict first.** Which key wins? "
                    "**Answer:** the longest: a dot product grows with length.\n\n</details>")
    in_view = "**Read it.** A line per weight. **Predict first:** which word wins? (**Answer:** \"cat\", below.)"
    nb = json.loads(nbformat.writes(nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell(hidden_whole, metadata={"tags": ["collapsed"]}),
        nbformat.v4.new_markdown_cell(in_view),
        nbformat.v4.new_markdown_cell("**Predict first.** Which key wins?", metadata={}),
    ])))
    assert answers.unwritten(nb) == [0, 1], "a question hidden with its answer, and an answer in view"
    path = tmp_path / "toy.ipynb"
    path.write_text(json.dumps(nb, indent=1), encoding="utf-8")
    assert answers.rewrite(path) == 2
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    assert "".join(cells[0]["source"]) == (
        "**Predict first.** Which key wins?\n\n<details><summary>Answer</summary>\n\n"
        "The longest: a dot product grows with length.\n\n</details>")
    assert "".join(cells[1]["source"]) == (
        "**Read it.** A line per weight. **Predict first:** which word wins?\n\n"
        "<details><summary>Answer</summary>\n\n\"cat\", below.\n\n</details>")
    assert cells[2] == nb["cells"][2], "a question without its answer here is left alone"
    assert answers.unwritten({"cells": cells}) == [] and answers.rewrite(path) == 0
    assert slide_metadata.is_collapsed(cells[0]), "still a speaker note on the deck"
    # the site leaves the question in view: it wraps only a collapsed cell that holds no control
    sys.path.insert(0, str(ROOT / "tools" / "site"))
    import build as site_build

    site = site_build.site_notebook(nbformat.reads(json.dumps({**nb, "cells": cells}), as_version=4))
    assert site.cells[0].source == "".join(cells[0]["source"])


def _shows_output(cell) -> bool:
    return cell["cell_type"] == "code" and any(
        o.get("output_type") in ("stream", "display_data", "execute_result") for o in cell.get("outputs", []))


@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("*.ipynb")), ids=lambda p: p.name)
def test_a_predict_first_question_comes_before_the_output_that_answers_it(path):
    """A "Predict first" question sits before the cells that compute its answer: the cell just
    above it is prose, or code that shows nothing (a picture drawn but shown by a later cell)."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    late = [i for i, cell in enumerate(cells) if i and cell["cell_type"] == "markdown"
            and "".join(cell["source"]).startswith("**Predict first") and _shows_output(cells[i - 1])]
    assert not late, f"{path.name}: cells {late} ask to predict what the cell above has already shown"


def test_the_summary_rule_is_the_sites():
    assert answers.DOCUMENT_CHECK.pattern == publish.DOCUMENT_CHECK.pattern
    assert answers.DOCUMENT_CHECK.flags == publish.DOCUMENT_CHECK.flags


@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("*.ipynb")), ids=lambda p: p.name)
def test_every_hidden_answer_of_the_lessons_is_a_closed_control(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    bad = answers.unwritten(nb)
    assert not bad, (f"{path.name}: cells {bad} are hidden prose that JupyterLab shows as a raw line; "
                     f"run: python tools/answers.py {path.relative_to(ROOT)}")


def test_a_deck_keeps_a_written_answer_in_the_speaker_notes():
    nb = _toy()
    answers.write_cell(nb["cells"], 1)
    nb = nbformat.reads(json.dumps(nb), as_version=4)
    for cell, kind in zip(nb.cells, slide_metadata.rule_types(nb.cells)):
        cell.metadata["slideshow"] = {"slide_type": kind}
    html, _ = publish.slides_exporter("_static").from_notebook_node(
        publish.deck_notebook(nb), resources=publish._resources(nb, "lesson", "_static"))
    notes = re.findall(r'<aside class="notes">(.*?)</aside>', html, flags=re.S)
    answer = [n for n in notes if "whatever" in n]
    assert len(answer) == 1 and html.count("whatever") == 1, "the answer is in the notes, not on a slide"
    assert "<summary>Answer</summary>" in answer[0] and "<em>whatever</em>" in answer[0]
    assert "$e^1 = e$" in answer[0], "the math reaches MathJax as written"


class _Lab(JupyterLab):
    def command(self):
        return super().command() + ["--LabApp.expose_app_in_browser=True"]


@pytest.mark.browser
def test_jupyterlab_shows_each_hidden_answer_as_a_closed_control(tmp_path):
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    hidden = [c for c in json.loads((ROOT / LESSON).read_text())["cells"] if answers.is_hidden_prose(c)]
    expected = len(hidden)
    # the first answer with math in it ($...$), by its place among the lesson's controls
    sources = ["".join(c["source"]) for c in hidden]
    with_math = next(k for k, text in enumerate(sources) if "$" in text and "**Answer" in text)
    server = _Lab(ROOT, tmp_path)  # the repository's notebook, opened, never saved (autosave off)
    with served_page(server, ARTIFACTS, "jupyter-server-answers.log") as page:
        page.goto(server.url(f"/lab/tree/{LESSON}"))
        panel = ".jp-NotebookPanel:not(.lm-mod-hidden)"
        page.wait_for_selector(f"{panel} .jp-MarkdownCell .jp-RenderedMarkdown", state="attached")
        try:
            page.wait_for_function(
                "([sel, n]) => document.querySelectorAll(sel).length >= n",
                arg=[f"{panel} .jp-RenderedMarkdown details", expected], timeout=60_000)
            controls = page.locator(f"{panel} .jp-RenderedMarkdown details")
            assert controls.count() == expected
            # no cell of the lesson is hidden behind JupyterLab's placeholder (a raw line of source)
            assert page.locator(f"{panel} .jp-MarkdownCell .jp-Placeholder").count() == 0
            for k in range(expected):
                control = controls.nth(k)
                assert control.evaluate("(d) => d.open") is False
                summary = control.locator("summary")
                assert summary.inner_text().strip() in ("Answer", "Details", "Document check")
            first = controls.nth(with_math)
            assert first.locator("summary").inner_text().strip() == "Answer"
            first.scroll_into_view_if_needed()
            body = first.locator(":scope > :not(summary)").first
            assert first.locator("summary").is_visible() and not body.is_visible()
            first.locator("summary").click()
            assert first.evaluate("(d) => d.open") is True and body.is_visible()
            # Markdown and math inside render: bold text, and MathJax's output where the source had $...$
            assert first.locator("strong").count() >= 1
            page.wait_for_function("(d) => d.querySelector('mjx-container')", arg=first.element_handle())
            assert "$" not in first.inner_text(), "math inside the answer was left as source"
        except Exception:
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "answers-failure.png"))
            raise
