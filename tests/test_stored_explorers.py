"""Every explorer stored in a notebook shows a picture without a kernel.

A cell that displays an :class:`~helpers.widgets.AttentionExplorer` stores one
output holding the widget view (for a live kernel) and a picture of the figure
and its readouts (for JupyterLab or nbconvert opening the file without one): a
``text/html`` ``<img>`` with its description as alt text, the one copy of the
PNG (issue 22), plus a short ``text/plain`` with no memory address.
"""

import ast
import base64
import html
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "exercises" / "solutions").glob("*.ipynb"))
PNG = b"\x89PNG\r\n\x1a\n"
DESCRIBED = re.compile(r'<img class="described-figure" alt="[^"]+" src="data:image/png;base64,([^"]+)">')


def _is_explorer(node, names):
    """True for ``AttentionExplorer(...)`` or a name the cell bound to one."""
    if isinstance(node, ast.Call):
        return getattr(node.func, "id", getattr(node.func, "attr", None)) == "AttentionExplorer"
    return isinstance(node, ast.Name) and node.id in names


def displays_an_explorer(source):
    """True when the cell shows an explorer: as its last expression, or through display(...)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:  # IPython syntax (magics): judge by the text
        return "AttentionExplorer" in source
    names = {
        target.id
        for node in ast.walk(tree) if isinstance(node, ast.Assign) and _is_explorer(node.value, ())
        for target in node.targets if isinstance(target, ast.Name)
    }
    shown = [arg for node in ast.walk(tree)
             if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "display" for arg in node.args]
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        shown.append(tree.body[-1].value)
    return any(_is_explorer(node, names) for node in shown)


def explorer_cells(nb):
    """(index, cell) of the code cells that display an explorer."""
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and displays_an_explorer(cell.source):
            yield i, cell


def test_the_notebooks_have_explorers():
    assert sum(len(list(explorer_cells(nbformat.read(p, as_version=4)))) for p in NOTEBOOKS) > 0


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_every_stored_explorer_has_a_picture(path):
    nb = nbformat.read(path, as_version=4)
    for i, cell in explorer_cells(nb):
        where = f"{path.name} cell {i}"
        pictures = [html.unescape(found.group(1)) for out in cell.get("outputs", [])
                    for found in [DESCRIBED.fullmatch("".join(out.get("data", {}).get("text/html", "")))] if found]
        assert pictures, f"{where}: an explorer with no stored picture (a described <img>); re-run the notebook"
        assert base64.b64decode(pictures[0]).startswith(PNG), f"{where}: the stored picture is not a PNG"
        for out in cell.get("outputs", []):
            text = out.get("data", {}).get("text/plain", "")
            assert not re.search(r" at 0x[0-9a-fA-F]+", text), f"{where}: a memory address in {text!r}"
            assert not text.startswith("VBox("), f"{where}: a widget repr instead of the explorer's text"
