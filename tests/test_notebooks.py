"""The stored notebooks: navigation in sync, executed in order, clean outputs.

nbval (configured in pyproject.toml) re-runs every notebook and compares its
outputs; these tests check what nbval does not: that the stored file is what a
reader should see.
"""

import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import navigation  # noqa: E402

NOTEBOOKS = navigation.numbered_notebooks()
IDS = [p.name for p in NOTEBOOKS]
TITLES = {
    "Day 43 - Scaled Dot-Product Attention Deep Dive",
    "AIAYN Part 2: Scaled Dot-Product Attention",
    "Section 5.2: Dot-Product Attention — The Core Mechanism",
    "The Engine of Transformers: Building Scaled Dot-Product Attention",
    "Scaled Dot-Product Attention",
}
# What must never be stored in an output: machine paths, memory addresses, tracebacks.
FORBIDDEN = {
    "a path of this machine": re.compile(r"(/work/|/home/|/root/|/tmp/|/Users/|[A-Z]:\\\\)"),
    "a memory address": re.compile(r" at 0x[0-9a-fA-F]{6,}"),
    "a traceback": re.compile(r"Traceback \(most recent call last\)"),
}


def _outputs_text(cell):
    for out in cell.get("outputs", []):
        if out.output_type == "stream":
            yield out.name, out.text
        elif out.output_type in ("execute_result", "display_data"):
            for mime in ("text/plain", "text/html"):
                if mime in out.get("data", {}):
                    # a figure's own display carries its repr beside the PNG; a
                    # repr as the *result* of a cell is an object left dangling
                    kind = "result" if out.output_type == "execute_result" else mime
                    yield kind, out.data[mime]
        elif out.output_type == "error":
            yield "error", "\n".join(out.traceback)


def test_there_is_an_index_and_it_comes_first():
    assert IDS and IDS[0] == "00-index.ipynb"


def test_navigation_is_up_to_date():
    stale = [p.name for p, (old, new) in navigation.updated().items() if old != new]
    assert not stale, f"run `python tools/navigation.py`: stale in {stale}"


def test_index_lists_every_notebook():
    index = nbformat.read(NOTEBOOKS[0], as_version=4)
    contents = [c.source for c in index.cells if "contents" in c.metadata.get("tags", [])]
    assert len(contents) == 1
    for name in IDS[1:]:
        assert f"]({name})" in contents[0]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_notebook_was_run_top_to_bottom(path):
    nb = nbformat.read(path, as_version=4)
    counts = [c.execution_count for c in nb.cells if c.cell_type == "code"]
    assert counts == list(range(1, len(counts) + 1)), "re-run with `make notebooks`"
    assert nb.metadata.kernelspec.name == "python3"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_stored_outputs_are_clean(path):
    nb = nbformat.read(path, as_version=4)
    for i, cell in enumerate(nb.cells):
        shows_error = "raises-exception" in cell.metadata.get("tags", [])
        for kind, text in _outputs_text(cell):
            where = f"{path.name} cell {i}"
            assert kind != "stderr", f"{where}: a warning or stderr output: {text[:200]!r}"
            if kind == "error":
                assert shows_error, f"{where}: a stored error in a cell not tagged raises-exception"
                continue
            for what, pattern in FORBIDDEN.items():
                assert not pattern.search(text), f"{where}: {what} in the output: {text[:200]!r}"
            if kind == "result":
                assert not re.match(r"<(Figure|matplotlib)", text), f"{where}: an object repr; end with plt.show()"


@pytest.mark.parametrize("path", NOTEBOOKS[1:], ids=IDS[1:])
def test_walkthrough_cites_its_document_by_title(path):
    nb = nbformat.read(path, as_version=4)
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert any(title in text for title in TITLES), "cite the document by its exact title"
