"""Give a focused slider the arrow keys in jupyterlab-rise's presenter (``make present-venv`` runs this).

reveal.js moves the deck on the arrow keys unless the focused element is a text
field, and ipywidgets' sliders are ``<div role="slider">`` handles: with a slider
focused, one press of → moved the slider *and* the deck. reveal.js has the setting
for it, ``keyboardCondition`` (a function that may refuse a key press), but
jupyterlab-rise 0.43.1 builds reveal's options in its presenter bundle and passes
on only a fixed list of settings, none of them a function. So this script adds
``keyboardCondition`` to that options object in the installed bundle of
.venv-present: reveal ignores key presses whose target is a slider, a text field
or a drop-down; everything else navigates as before. The notebook shortcuts are
kept off a focused slider by tools/rise/overrides.json.

The options object is found by its exact text; when it is not found exactly once
(another jupyterlab-rise release), the script fails and says so, and
tools/rise/constraints.txt's pin is where to look. Running it twice changes nothing.
"""

from __future__ import annotations

import sys
from pathlib import Path

import jupyterlab_rise

ANCHOR = "C={help:!1,keyboard:{13:null,"
CONDITION = ("keyboardCondition:e=>!(e.target&&e.target.closest"
             "&&e.target.closest('[role=\"slider\"],input,textarea,select')),")
PATCHED = ANCHOR.replace("keyboard:", CONDITION + "keyboard:")


def patch(static: Path) -> str:
    """Patch the presenter bundle under ``static``; return what was done."""
    found = [p for p in sorted(static.glob("*.bundle.js")) if ANCHOR in p.read_text(encoding="utf-8")
             or PATCHED in p.read_text(encoding="utf-8")]
    if len(found) != 1:
        raise SystemExit(f"patch_presenter: reveal's options found in {len(found)} bundles of {static}, "
                         "expected 1: a jupyterlab-rise other than tools/rise/constraints.txt's pin?")
    bundle = found[0]
    text = bundle.read_text(encoding="utf-8")
    if PATCHED in text:
        return f"patch_presenter: {bundle.name} already gives sliders the arrow keys"
    if text.count(ANCHOR) != 1:
        raise SystemExit(f"patch_presenter: reveal's options appear {text.count(ANCHOR)} times in {bundle}")
    bundle.write_text(text.replace(ANCHOR, PATCHED), encoding="utf-8")
    return f"patch_presenter: {bundle.name}: a focused slider keeps the arrow keys"


def main() -> int:
    print(patch(Path(jupyterlab_rise.__file__).parent / "static"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
