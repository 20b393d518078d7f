"""Give every cell of the walkthrough notebooks a slide type, for `make slides`.

    python tools/slide_metadata.py            fill in the cells that have no slide type yet
    python tools/slide_metadata.py --reset    recompute every cell's slide type from the rules
    python tools/slide_metadata.py --check    exit 1 (and list the cells) if any cell has none
    python tools/slide_metadata.py --fix      only set-up, navigation and collapsed cells shown as
                                              slides: give them their rule's type (skip / notes)

A slide type lives in a cell's metadata, ``{"slideshow": {"slide_type": ...}}``,
the field JupyterLab's property inspector edits ("Slide Type") and nbconvert's
slides exporter reads. The values are "slide", "subslide", "fragment", "-"
(continue the current slide), "skip" and "notes".

The first pass assigns them by rules that fit how the notebooks are written:

* the title cell opens the deck ("slide"); navigation cells and the Colab
  set-up cell are "skip";
* a ``## `` heading opens a new slide, a ``### `` heading a sub-slide (below it);
* a code cell right after an explanation is a "fragment": the lecturer states
  the step, asks the class to predict, and the click reveals code and output;
* a code cell after another code cell, or prose after a code cell, starts a
  sub-slide, so no slide grows past the screen;
* prose after prose continues the same slide;
* set-up cells (code that only imports and sets print options or plot style,
  a "Set-up" heading, tag ``setup``) are "skip" too;
* collapsed cells (tag ``collapsed``, or ``jupyter.source_hidden`` /
  ``outputs_hidden``: the document checks and the answers) are not slides:
  collapsed prose becomes speaker notes ("notes"), collapsed code "skip".

After that the metadata is the source: a lecturer's own choices (made in
JupyterLab) are kept, and only cells without a slide type are filled in.
Nothing else in a notebook changes, so no re-execution is needed.
``--check`` also reports a navigation, set-up or collapsed cell that is shown
as a slide, and a notebook without the live lecture mode's settings
(:data:`RISE_SETTINGS`: reveal's white theme, so that nothing is fetched from
the network); ``--fix`` and the default mode set them.

In live lecture mode (``make present``) each kernel runs its notebook's set-up
cells (:func:`is_setup`) as it starts (tools/rise/present_setup.py), so the
first Shift+Enter on any slide finds the imports: set-up cells stay off the slides.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
SLIDE_TYPES = ("slide", "subslide", "fragment", "-", "skip", "notes")
SKIP_TAGS = {"navigation", "contents", "colab-install"}  # colab-install: tools/navigation.py


def walkthrough_notebooks(folder: Path = NOTEBOOKS) -> list[Path]:
    """The notebooks that get a deck: every numbered one except the index."""
    return [p for p in sorted(folder.glob("[0-9][0-9]-*.ipynb")) if not p.name.startswith("00-")]


def _tags(cell) -> set[str]:
    return set(cell.get("metadata", {}).get("tags", []))


SETUP_TAGS = {"setup", "set-up"}
SHOWN = ("slide", "subslide", "fragment", "-")
# Calls that only configure the session: print options, plot style, warning filters.
SETUP_CALLS = re.compile(r"^(np|numpy)\.set_printoptions$|^(plt|matplotlib)\.(rc|rcParams\.update|style\.use)$"
                         r"|^warnings\.(filterwarnings|simplefilter)$|^sys\.path\.(insert|append)$")
SETUP_HEADING = re.compile(r"^#+\s*set[- ]?up\b", re.IGNORECASE)


def is_navigation(cell) -> bool:
    """A generated navigation or contents cell."""
    return bool(_tags(cell) & SKIP_TAGS)


def _dotted(node) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def is_setup(cell) -> bool:
    """A set-up cell: code that only imports and configures (print options, plot style), or a "Set-up" heading.

    >>> from nbformat.v4 import new_code_cell, new_markdown_cell
    >>> is_setup(new_code_cell("import numpy as np\\nnp.set_printoptions(precision=4)"))
    True
    >>> is_setup(new_code_cell("import numpy as np\\nx = np.ones(3)"))
    False
    >>> is_setup(new_markdown_cell("## Set-up\\n\\nFour decimals."))
    True
    """
    if _tags(cell) & SETUP_TAGS:
        return True
    source = cell.source.strip()
    if not source:
        return False
    if cell.cell_type == "markdown":
        return bool(SETUP_HEADING.match(source))
    if cell.cell_type != "code":
        return False
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        return False
    if not tree.body:
        return True  # only magics (%matplotlib inline)
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
                and SETUP_CALLS.match(_dotted(node.value.func))):
            continue
        if (isinstance(node, ast.Assign)
                and all(_dotted(getattr(t, "value", t)).endswith("rcParams") for t in node.targets)):
            continue
        return False
    return True


def is_collapsed(cell) -> bool:
    """A cell collapsed in JupyterLab (a document check, an answer): tag ``collapsed`` or hidden source/outputs."""
    hidden = cell.get("metadata", {}).get("jupyter", {})
    return "collapsed" in _tags(cell) or bool(hidden.get("source_hidden") or hidden.get("outputs_hidden"))


def slide_type_of(cell) -> str | None:
    return cell.get("metadata", {}).get("slideshow", {}).get("slide_type")


def rule_types(cells) -> list[str]:
    """The slide type the rules give each cell, in order."""
    types = []
    previous = None  # the last cell that is shown (not skipped)
    for i, cell in enumerate(cells):
        first_line = cell.source.lstrip().split("\n", 1)[0] if cell.source.strip() else ""
        if is_navigation(cell) or is_setup(cell) or not cell.source.strip():
            types.append("skip")
            continue
        if is_collapsed(cell):
            types.append("notes" if cell.cell_type == "markdown" else "skip")
            continue
        if previous is None:
            kind = "slide"
        elif cell.cell_type == "markdown" and first_line.startswith(("# ", "## ")):
            kind = "slide"
        elif cell.cell_type == "markdown" and first_line.startswith("### "):
            kind = "subslide"
        elif cell.cell_type == "code":
            kind = "fragment" if previous.cell_type == "markdown" else "subslide"
        else:  # prose
            kind = "subslide" if previous.cell_type == "code" else "-"
        types.append(kind)
        previous = cell
    return types


# The live lecture mode's settings (jupyterlab-rise reads the notebook's ``rise`` metadata). The white
# theme uses reveal.js's bundled fonts (RISE's default theme asks Google Fonts, which a lecture hall
# without the internet does not reach); no transition; a long slide scrolls instead of being cut.
RISE_SETTINGS = {"theme": "white", "transition": "none", "scroll": True}


def rise_problems(nb) -> list[str]:
    """Settings of :data:`RISE_SETTINGS` that the notebook's ``rise`` metadata lacks or contradicts."""
    rise = nb.metadata.get("rise", {})
    return [f"rise.{key} is {rise.get(key)!r}, not {value!r}" for key, value in RISE_SETTINGS.items()
            if rise.get(key) != value]


def set_rise(nb) -> int:
    """Give ``nb`` the live lecture settings (in place); 1 when it changed, else 0."""
    if not rise_problems(nb):
        return 0
    nb.metadata.setdefault("rise", {}).update(RISE_SETTINGS)
    return 1


def apply(path: Path, *, reset: bool = False) -> int:
    """Fill in (or with ``reset`` recompute) the slide types of one notebook; return how many cells changed.

    The notebook also gets the live mode's settings (:data:`RISE_SETTINGS`), not counted.
    """
    nb = nbformat.read(path, as_version=4)
    settings = set_rise(nb)
    changed = 0
    for cell, kind in zip(nb.cells, rule_types(nb.cells)):
        if slide_type_of(cell) is not None and not reset:
            continue
        if slide_type_of(cell) != kind:
            cell.metadata.setdefault("slideshow", {})["slide_type"] = kind
            changed += 1
    if changed or settings:
        nbformat.validate(nb)
        nbformat.write(nb, path)
    return changed


def hidden_kind(cell) -> str | None:
    """The type a cell must have in a deck when it may not be shown (set-up, navigation, collapsed), else None."""
    if is_navigation(cell) or is_setup(cell):
        return "skip"
    if is_collapsed(cell):
        return "notes" if cell.cell_type == "markdown" else "skip"
    return None


def hide(cells, *, only_collapsed: bool = False) -> int:
    """Give the cells that may not be shown (set-up, navigation, collapsed) their rule's type, in place.

    Every other cell keeps its type. When a hidden cell opened a slide or a
    sub-slide, the next shown cell opens it instead, so the deck keeps its
    pages. With ``only_collapsed``, only collapsed cells change (what the deck
    builder does: a lecturer's choice for a set-up cell is respected).
    Returns how many cells changed.
    """
    changed = 0
    carry = None
    for cell in cells:
        kind = slide_type_of(cell)
        want = hidden_kind(cell)
        if only_collapsed and not is_collapsed(cell):
            want = None
        if want and kind in SHOWN:
            cell.metadata.setdefault("slideshow", {})["slide_type"] = want
            changed += 1
            if kind in ("slide", "subslide") and carry != "slide":
                carry = kind
            continue
        if carry and kind in SHOWN:
            if kind in ("-", "fragment") or (kind == "subslide" and carry == "slide"):
                cell.metadata["slideshow"]["slide_type"] = carry
            carry = None
    return changed


def fix(path: Path) -> int:
    """:func:`hide` on a notebook file: set-up, navigation and collapsed cells shown as slides; how many changed."""
    nb = nbformat.read(path, as_version=4)
    settings = set_rise(nb)
    changed = hide(nb.cells)
    if changed or settings:
        nbformat.validate(nb)
        nbformat.write(nb, path)
    return changed


def problems(path: Path, *, shown_cells: bool = True) -> list[str]:
    """What a deck built from this notebook would get wrong.

    Missing or unknown slide types, a deck whose first shown cell does not open
    a slide, and (with ``shown_cells``) a navigation, set-up or collapsed cell
    shown as a slide.
    """
    nb = nbformat.read(path, as_version=4)
    found = []
    for i, cell in enumerate(nb.cells):
        kind = slide_type_of(cell)
        if kind not in SLIDE_TYPES:
            found.append(f"{path.name}: cell {i} ({cell.get('id')}) has slide type {kind!r}")
        if kind in SHOWN and shown_cells:
            what = ("a navigation cell" if is_navigation(cell) else "a set-up cell" if is_setup(cell)
                    else "a collapsed cell" if is_collapsed(cell) else None)
            if what:
                want = "'notes' or 'skip'" if what == "a collapsed cell" else "'skip'"
                found.append(f"{path.name}: cell {i} ({cell.get('id')}) is {what} shown as {kind!r}: make it {want}")
    shown = [slide_type_of(c) for c in nb.cells if slide_type_of(c) not in ("skip", "notes")]
    if shown and shown[0] != "slide":
        found.append(f"{path.name}: the first shown cell should open a slide, not {shown[0]!r}")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--check", action="store_true",
                       help="report cells without a valid slide type, "
                            "and navigation, set-up or collapsed cells shown as slides")
    group.add_argument("--fix", action="store_true",
                       help="make set-up, navigation and collapsed cells shown as slides 'skip' (or 'notes')")
    group.add_argument("--reset", action="store_true", help="recompute every slide type from the rules")
    args = parser.parse_args(argv)
    paths = walkthrough_notebooks()
    if args.check:
        found = [p for path in paths for p in problems(path)]
        # the live mode's settings (they do not change a static deck)
        found += [f"{path.name}: {problem} (live lecture mode; --fix sets it)" for path in paths
                  for problem in rise_problems(nbformat.read(path, as_version=4))]
        print("\n".join(found)
              or "slide_metadata: every cell has a slide type, and no set-up, navigation or collapsed cell is a slide")
        return 1 if found else 0
    for path in paths:
        n = fix(path) if args.fix else apply(path, reset=args.reset)
        if n:
            print(f"slide_metadata: {path.name}: {n} cells")
    return 0


if __name__ == "__main__":
    sys.exit(main())
