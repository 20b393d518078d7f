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

The same bundle set holds JupyterLab's toolkit of web components (@jupyter/web-components), whose
``jp-toolbar`` gives itself a fill colour derived from its parent's as it connects. In the
presenter those design tokens end in a loop: each deck logged 20-40 "RangeError: Maximum call stack
size exceeded" while it loaded. The toolkit's pull request 126 (jupyter-ui-toolkit, 2024) stops a toolbar from
synchronising its colours with its parent's; this script drops the step from the bundle
(docs/upstream.md has the report), and the toolbar takes its parent's colours.

The options object is found by its exact text; when it is not found exactly once
(another jupyterlab-rise release), the script fails and says so, and
tools/rise/constraints.txt's pin is where to look. Running it twice changes nothing.
"""

from __future__ import annotations

import sys
from pathlib import Path

import jupyterlab_rise

ANCHOR = "C={help:!1,keyboard:{13:null,"
# A focused control keeps its keys; Esc on it takes the focus off it (to the deck), after which
# the arrows and Space move the deck again.
CONDITION = ("keyboardCondition:e=>{const c=e.target&&e.target.closest"
             "&&e.target.closest('[role=\"slider\"],input,textarea,select');"
             "if(c&&(e.key==='Escape'||e.keyCode===27)){const d=c.closest('.reveal');c.blur();"
             "if(d){d.tabIndex=-1;d.focus()}e.preventDefault();e.stopPropagation();return !1}return !c},")
PATCHED = ANCHOR.replace("keyboard:", CONDITION + "keyboard:")
# The presenter also asks for <notebook>.css beside each notebook; no deck has one (notebooks/rise.css
# styles them all), so that request, a 404 on every deck, is not made.
NOTEBOOK_CSS = ('document.head.insertAdjacentHTML("beforeend",`<link rel="stylesheet" href="${h.href}" '
                'id="rise-notebook-css" />`);')
NO_NOTEBOOK_CSS = "void h;"
# jp-toolbar's fill-colour sync with its parent (both copies of the toolkit in the bundles)
TOOLBAR_SYNC = ("const e=(0,q.composedParent)(this);"
                "e&&Ot.setValueFor(this,(t=>Vo.getValueFor(t).evaluate(t,Ot.getValueFor(e))))")
NO_TOOLBAR_SYNC = "/* rise: no fill-colour sync with the parent toolbar */"
# The previous patch (before Esc), so that an existing .venv-present is brought up to this one.
OLD_CONDITIONS = [ANCHOR.replace("keyboard:", "keyboardCondition:e=>!(e.target&&e.target.closest"
                                 "&&e.target.closest('[role=\"slider\"],input,textarea,select')),keyboard:")]


def patch(static: Path) -> str:
    """Patch the presenter bundle under ``static``; return what was done."""
    found = [p for p in sorted(static.glob("*.bundle.js")) if any(
        a in p.read_text(encoding="utf-8") for a in [ANCHOR, PATCHED, *OLD_CONDITIONS])]
    if len(found) != 1:
        raise SystemExit(f"patch_presenter: reveal's options found in {len(found)} bundles of {static}, "
                         "expected 1: a jupyterlab-rise other than tools/rise/constraints.txt's pin?")
    bundle = found[0]
    text = bundle.read_text(encoding="utf-8")
    for old in OLD_CONDITIONS:
        text = text.replace(old, ANCHOR)
    if NOTEBOOK_CSS in text:
        text = text.replace(NOTEBOOK_CSS, NO_NOTEBOOK_CSS, 1)
    elif NO_NOTEBOOK_CSS not in text:
        raise SystemExit(f"patch_presenter: the per-notebook CSS link was not found in {bundle}")
    if PATCHED not in text:
        if text.count(ANCHOR) != 1:
            raise SystemExit(f"patch_presenter: reveal's options appear {text.count(ANCHOR)} times in {bundle}")
        text = text.replace(ANCHOR, PATCHED)
    bundle.write_text(text, encoding="utf-8")
    toolbars = patch_toolbars(static)
    return (f"patch_presenter: {bundle.name}: a focused slider keeps the arrow keys, Esc gives them back "
            f"to the deck; no <notebook>.css is requested; {toolbars}")


def patch_toolbars(static: Path) -> str:
    """Drop jp-toolbar's fill-colour sync from the bundles under ``static``; return what was done."""
    done = []
    for bundle in sorted(static.glob("*.bundle.js")):
        text = bundle.read_text(encoding="utf-8")
        if TOOLBAR_SYNC in text:
            bundle.write_text(text.replace(TOOLBAR_SYNC, NO_TOOLBAR_SYNC), encoding="utf-8")
            done.append(bundle.name)
        elif NO_TOOLBAR_SYNC in text:
            done.append(bundle.name)
    if not done:
        raise SystemExit(f"patch_presenter: jp-toolbar's colour sync was not found in {static}: "
                         "a jupyterlab-rise other than tools/rise/constraints.txt's pin?")
    return f"{', '.join(done)}: toolbars take their parent's colours (no design-token loop)"


def main() -> int:
    print(patch(Path(jupyterlab_rise.__file__).parent / "static"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
