"""Store each figure once and no Python version in the notebooks (issue 22).

    python tools/slim_notebooks.py [NOTEBOOK ...]     slim these (default: every notebook of the collection)
    python tools/slim_notebooks.py --check [...]      write nothing; exit 1 and list the notebooks not slim

A described figure (helpers/figures.py) is stored as a ``text/html``
``<img class="described-figure" alt="..." src="data:image/png;base64,...">`` and
a ``text/plain``: the ``<img>`` holds the one copy of the PNG. Notebooks saved
before issue 22 (and any kernel still running the older helpers) have an
``image/png`` beside it in the same output, the same picture a second time.
This script removes that ``image/png`` when its bytes are those of the ``<img>``.

When they differ, the PNG beside the ``<img>`` is the same figure drawn a second
time (the inline backend drew it after the ``<img>`` was made, and a second draw
can move the tight bounding box by a pixel or two). Such an output is reported
and left as it is, unless ``--redrawn`` is given: then the ``image/png`` goes too,
and the ``<img>`` stays, the picture JupyterLab showed and a kernel now stores.

It also removes ``metadata.language_info.version`` (``3.11.7``): the kernel
writes it on every run, so a run on another Python would change every file.
The language's name and the rest of ``language_info`` stay.

The script is idempotent: a slim notebook is left byte for byte as it was.
tools/run_notebooks.py applies :func:`slim` after each run, and
tools/make_student_notebooks.py to the student notebooks it writes.
"""

from __future__ import annotations

import argparse
import base64
import html
import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("notebooks", "instructor/solutions", "exercises/student")
# The <img> helpers.figures.img_html writes (its base64 with "/" written as "&#47;").
DESCRIBED_FIGURE = re.compile(
    r'\s*<img class="described-figure" alt="(?P<alt>[^"]*)" src="data:image/png;base64,(?P<png>[^"]*)"'
    r'(?: data-cap-px="(?P<caps>[^"]*)")?(?: data-overlaps="(?P<overlaps>\d+)" data-panels="(?P<panels>\d+)")?>\s*\Z')


def collection_notebooks() -> list[Path]:
    """Every notebook of the collection: notebooks/, instructor/solutions/ and exercises/student/."""
    return [p for folder in FOLDERS for p in sorted((ROOT / folder).glob("*.ipynb"))]


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def described_figure(output):
    """``(alt, png_base64)`` of an output that shows a described figure's ``<img>``, else None."""
    data = output.get("data", {}) if hasattr(output, "get") else {}
    if "text/html" not in data:
        return None
    found = DESCRIBED_FIGURE.match(_text(data["text/html"]))
    if found is None:
        return None
    return html.unescape(found.group("alt")), html.unescape(found.group("png"))


def _same_png(a: str, b: str) -> bool:
    try:
        return base64.b64decode("".join(a.split())) == base64.b64decode("".join(b.split()))
    except ValueError:  # not base64: never the same picture
        return False


def slim(nb, *, redrawn: bool = False, name: str = "notebook") -> tuple[int, list[str]]:
    """Slim ``nb`` in place: ``(changes made, problems left)``.

    A change is one ``image/png`` removed (or the Python version removed). A problem
    is an output whose ``image/png`` is not the picture of its ``<img>``; with
    ``redrawn=True`` that ``image/png`` is removed too and it is no problem.
    """
    changes, problems = 0, []
    for i, cell in enumerate(nb.get("cells", [])):
        for k, output in enumerate(cell.get("outputs", [])):
            found = described_figure(output)
            data = output.get("data", {})
            if found is None or "image/png" not in data:
                continue
            if not (_same_png(_text(data["image/png"]), found[1]) or redrawn):
                problems.append(f"{name} cell {i} output {k}: its image/png is not the picture of its <img> "
                                "(a second draw of the figure?); kept. --redrawn keeps only the <img>.")
                continue
            del data["image/png"]
            metadata = output.get("metadata", {})
            if "image/png" in metadata:  # width, height or needs_background of the PNG just removed
                del metadata["image/png"]
            changes += 1
    language = nb.get("metadata", {}).get("language_info", {})
    if "version" in language:
        del language["version"]
        changes += 1
    return changes, problems


def is_slim(nb) -> bool:
    """True when :func:`slim` would change nothing in ``nb`` (a differing PNG counts as not slim)."""
    import copy

    changes, problems = slim(copy.deepcopy(nb))
    return changes == 0 and not problems


def slim_file(path: Path, *, redrawn: bool = False, check: bool = False) -> tuple[int, list[str]]:
    """Slim the notebook at ``path`` (rewritten only when something changed, and not with ``check``)."""
    nb = nbformat.read(path, as_version=4)
    changes, problems = slim(nb, redrawn=redrawn, name=_name(path))
    if changes and not check:
        nbformat.validate(nb)
        nbformat.write(nb, path)
    return changes, problems


def _name(path: Path) -> str:
    try:
        return path.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return path.name


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: every notebook of the collection")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a notebook is not slim")
    parser.add_argument("--redrawn", action="store_true",
                        help="also remove an image/png that differs from its <img> (the figure drawn twice)")
    args = parser.parse_args(argv)
    paths = args.notebooks or collection_notebooks()
    stale, problems, total = [], [], 0
    for path in paths:
        changes, found = slim_file(path, redrawn=args.redrawn, check=args.check)
        problems += found
        total += changes
        if changes:
            stale.append(_name(path))
    for problem in problems:
        print(f"slim_notebooks: {problem}", file=sys.stderr)
    if args.check:
        if stale or problems:
            print("not slim: " + ", ".join(stale or ["(see above)"]) + "\nrun: python tools/slim_notebooks.py")
            return 1
        return 0
    print(f"slim_notebooks: {total} changes in {len(stale)} of {len(paths)} notebooks")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
