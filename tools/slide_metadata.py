"""Give every cell of the walkthrough notebooks a slide type, for `make slides`.

    python tools/slide_metadata.py            fill in the cells that have no slide type yet
    python tools/slide_metadata.py --reset    recompute every cell's slide type from the rules
    python tools/slide_metadata.py --check    exit 1 (and list the cells) if any cell has none

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
* prose after prose continues the same slide.

After that the metadata is the source: a lecturer's own choices (made in
JupyterLab) are kept, and only cells without a slide type are filled in.
Nothing else in a notebook changes, so no re-execution is needed.
"""

from __future__ import annotations

import argparse
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


def slide_type_of(cell) -> str | None:
    return cell.get("metadata", {}).get("slideshow", {}).get("slide_type")


def rule_types(cells) -> list[str]:
    """The slide type the rules give each cell, in order."""
    types = []
    previous = None  # the last cell that is shown (not skipped)
    for i, cell in enumerate(cells):
        first_line = cell.source.lstrip().split("\n", 1)[0] if cell.source.strip() else ""
        if _tags(cell) & SKIP_TAGS or not cell.source.strip():
            types.append("skip")
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


def apply(path: Path, *, reset: bool = False) -> int:
    """Fill in (or with ``reset`` recompute) the slide types of one notebook; return how many changed."""
    nb = nbformat.read(path, as_version=4)
    changed = 0
    for cell, kind in zip(nb.cells, rule_types(nb.cells)):
        if slide_type_of(cell) is not None and not reset:
            continue
        if slide_type_of(cell) != kind:
            cell.metadata.setdefault("slideshow", {})["slide_type"] = kind
            changed += 1
    if changed:
        nbformat.validate(nb)
        nbformat.write(nb, path)
    return changed


def problems(path: Path) -> list[str]:
    """What a deck built from this notebook would get wrong: missing or unknown slide types."""
    nb = nbformat.read(path, as_version=4)
    found = []
    for i, cell in enumerate(nb.cells):
        kind = slide_type_of(cell)
        if kind not in SLIDE_TYPES:
            found.append(f"{path.name}: cell {i} ({cell.get('id')}) has slide type {kind!r}")
    shown = [slide_type_of(c) for c in nb.cells if slide_type_of(c) not in ("skip", "notes")]
    if shown and shown[0] != "slide":
        found.append(f"{path.name}: the first shown cell should open a slide, not {shown[0]!r}")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--check", action="store_true", help="report cells without a valid slide type")
    group.add_argument("--reset", action="store_true", help="recompute every slide type from the rules")
    args = parser.parse_args(argv)
    paths = walkthrough_notebooks()
    if args.check:
        found = [p for path in paths for p in problems(path)]
        print("\n".join(found) or "slide_metadata: every cell has a slide type")
        return 1 if found else 0
    for path in paths:
        n = apply(path, reset=args.reset)
        if n:
            print(f"slide_metadata: {path.name}: {n} cells")
    return 0


if __name__ == "__main__":
    sys.exit(main())
