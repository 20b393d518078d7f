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
import io
import re
from pathlib import Path

import nbformat
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "instructor" / "solutions").glob("*.ipynb"))
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


# -- the numbers in the heatmaps are legible at the stored size (issue 23) ------------------------


def explorer_calls(paths=NOTEBOOKS):
    """The distinct ``AttentionExplorer(...)`` calls of the notebooks, as (args, kwargs) of literals."""
    calls = {}
    for path in paths:
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type != "code" or "AttentionExplorer(" not in cell.source:
                continue
            for node in ast.walk(ast.parse(cell.source)):
                if isinstance(node, ast.Call) and _is_explorer(node, ()):
                    args = tuple(ast.literal_eval(a) for a in node.args)
                    kwargs = tuple(sorted((k.arg, ast.literal_eval(k.value)) for k in node.keywords))
                    calls.setdefault((args, kwargs), path.name)
    return calls


CALLS = explorer_calls()


def test_the_notebooks_call_the_explorer_in_several_ways():
    modes = {dict(kwargs).get("mode", "example") for _, kwargs in CALLS}
    assert modes == {"example", "random"} and len(CALLS) >= 5, CALLS


def _ink_rows(alpha):
    """Rows of a rendered text's bitmap that hold ink."""
    return np.flatnonzero((alpha[..., 0] > 0.3).any(axis=1))


@pytest.mark.parametrize("call", sorted(CALLS, key=repr), ids=lambda c: f"{c[0]}{c[1]}")
def test_every_number_in_the_snapshot_is_at_least_10_pixels(call):
    """Every cell value (and bar value) the notebooks' explorers write is 10 px or more on the PNG.

    The snapshot is the figure at its own size (no scaling: its pixels are the stored image's), and
    the values are stamped at CELL_TEXT_SIZE points at the figure's dpi: that many points times
    dpi / 72 pixels. Measured as well: the ink of each value's digits is as tall as a 10-pixel
    DejaVu Sans digit (0.73 em, 7 px), and its width fits the cell, so no value runs into the next.
    """
    from PIL import Image

    from helpers import plots
    from helpers.widgets import AttentionExplorer

    args, kwargs = call
    view = AttentionExplorer(*args, **dict(kwargs))
    for scaled in (True, False):
        view.controls["scaled"].value = scaled
        figure = view._figure
        snapshot = Image.open(io.BytesIO(view.snapshot_png()))
        picture = Image.open(io.BytesIO(bytes(view.image.value)))
        assert snapshot.width >= picture.width  # the figure pasted 1:1 into the snapshot
        pixels = plots.CELL_TEXT_SIZE * figure.dpi / 72
        assert pixels >= 10, f"{call}: values written {pixels:.1f} px high"
        written = [stamp for stamp in figure._stamps if stamp[0] is not figure.ax_bars]
        assert written, f"{call}: no values written in the heatmaps"
        assert figure.cell_formats["weights"] == "{:.2f}", f"{call}: weights not written with 2 decimals"
        for ax, _, _, text, _, _ in figure._stamps:
            alpha = figure._glyphs._alpha(text, plots.CELL_TEXT_SIZE)
            if any(ch.isdigit() for ch in text):
                rows = _ink_rows(alpha)
                assert len(rows) >= 7, f"{call}: the digits of {text!r} are {len(rows)} px high"
            if ax is not figure.ax_bars:
                assert alpha.shape[1] <= figure.cell_pixels, f"{call}: {text!r} is wider than its cell"
