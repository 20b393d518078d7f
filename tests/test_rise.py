"""Live lecture mode: a walkthrough in RISE (jupyterlab-rise), in headless Chromium.

A throw-away JupyterLab serves a small dedicated notebook (written here, so that the
rewrites of the walkthroughs do not move its slides): a title slide and an explorer
slide whose code cell builds :class:`helpers.widgets.AttentionExplorer`. The test
opens it at ``/rise/<notebook>`` (the presenter of jupyterlab-rise), goes to the
explorer slide with the keyboard, runs the cell on the live kernel (Shift+Enter),
moves the temperature slider with the arrow keys and checks that the heatmap image
and the slider's readout changed while the deck stayed on the explorer slide. Every
request the page makes must stay on the loopback server.

The server runs in .venv-present (``make present-venv``, built here when missing),
the environment ``make present`` uses: RISE's presenter bundles JupyterLab's core at
4.3.4 without @jupyterlab/console, which the ipywidgets front end asks for from
jupyterlab_widgets 3.0.11 on, so that environment pins jupyterlab_widgets 3.0.10 and
ipywidgets 8.1.2 (tools/rise/constraints.txt). And the presenter handles key presses
before the page's widgets do: tools/rise/overrides.json keeps the notebook's
arrow-key shortcuts off a focused slider, else the arrows never reach it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import nbformat
import pytest
from browser_support import JupyterLab, served_page, unavailable
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
TIMEOUT_MS = 120_000
NOTEBOOK = "rise-explorer.ipynb"
FIXTURE = f"build/rise-test/{NOTEBOOK}"
PRESENT_PYTHON = ROOT / ".venv-present" / "bin" / "python"
CODE = 'from helpers.widgets import AttentionExplorer\n\nexplorer = AttentionExplorer("i_am_happy")\nexplorer'

pytestmark = pytest.mark.browser


def _fixture_notebook(path):
    cells = [
        new_markdown_cell("# Live lecture: the attention explorer"),
        new_markdown_cell("## The explorer\n\nPredict, then move the temperature slider."),
        new_code_cell(CODE),
    ]
    for cell, kind in zip(cells, ("slide", "slide", "-")):
        cell.metadata["slideshow"] = {"slide_type": kind}
    nb = new_notebook(cells=cells)
    # "white" uses reveal.js's bundled fonts; "simple" (the default) asks Google Fonts.
    nb.metadata["rise"] = {"theme": "white", "transition": "none"}
    nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    nbformat.write(nb, path)


@pytest.fixture(scope="module")
def rise_page(tmp_path_factory):
    """One presenter server for the module, its root the repository's as with `make present`.

    The small dedicated notebook is written under build/ (ignored by git), so that the
    collection's own decks are served by the same server (one Playwright session per process).
    """
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    if not (ROOT / ".venv-present" / ".installed").exists():
        subprocess.run(["make", "present-venv"], cwd=ROOT, check=True, timeout=1800)
    (ROOT / FIXTURE).parent.mkdir(parents=True, exist_ok=True)
    _fixture_notebook(ROOT / FIXTURE)
    server = JupyterLab(ROOT, tmp_path_factory.mktemp("rise-home"), python=PRESENT_PYTHON)
    with served_page(server, ARTIFACTS, "jupyter-server-rise.log", timeout_ms=TIMEOUT_MS) as page:
        page.requests = []
        page.on("request", lambda r: page.requests.append(r.url))
        yield page


def _present_slide(page):
    return page.evaluate("() => document.querySelector('.reveal .slides section.present')?.innerText || ''")


def test_rise_runs_the_explorer_slide_on_a_live_kernel_offline(rise_page):
    page = rise_page
    page.goto(page.server.url(f"/rise/{FIXTURE}"))
    page.wait_for_selector(".reveal.ready")
    assert "live lecture" in _present_slide(page).lower()
    page.wait_for_timeout(2000)  # the kernel connects after the deck is drawn
    page.keyboard.press("ArrowRight")  # to the explorer slide
    page.wait_for_function(
        "() => /The explorer/i.test(document.querySelector('.reveal .slides section.present')?.innerText || '')")
    page.locator(".jp-CodeCell .cm-content").first.click()
    page.keyboard.press("Shift+Enter")  # run the cell on the slide
    # The live kernel answered: the cell has an execution count and an output.
    page.wait_for_function(
        "() => [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')].some(p => /\\[1\\]/.test(p.innerText))")
    page.wait_for_selector(".jp-CodeCell .jp-OutputArea-output")
    outside = [u for u in page.requests
               if not u.startswith(page.server.base_url) and not u.startswith(("data:", "blob:"))]
    assert not outside, f"requests that left the loopback server: {outside[:5]}"


def _readout(page):
    return page.locator(".attention-explorer-temperature .widget-readout").first.inner_text().strip()


def test_rise_temperature_slider_changes_the_picture(rise_page):
    page = rise_page
    # the widgets rendered on the slide (their text representation has no image)
    image = page.locator("img.attention-explorer-image").first
    image.wait_for(timeout=TIMEOUT_MS)  # the kernel imports matplotlib and draws first: slow on a busy machine
    before, readout = image.get_attribute("src"), _readout(page)
    handle = page.locator(".attention-explorer-temperature .noUi-handle").first
    handle.focus()
    for _ in range(3):
        handle.press("ArrowRight")
    page.wait_for_function("(old) => document.querySelector('img.attention-explorer-image').src !== old",
                           arg=before, timeout=TIMEOUT_MS)
    assert "the explorer" in _present_slide(page).lower(), "the arrow keys moved the deck instead of the slider"
    assert image.get_attribute("src") != before
    assert _readout(page) != readout, "the picture changed but the temperature readout did not"


# --- the collection's own decks, live, as `make present` serves them (issue 24 item 6) ------------------
# The server's root is the repository, as with `make present`; the kernels are .venv-present's, which
# run their notebook's set-up cells as they start (tools/rise/present_setup.py). On a slide in the middle
# of the deck, the first Shift+Enter on an explorer's cell must work, the arrow keys must move a focused
# slider and not the deck, and the notebook file must be the same bytes afterwards.
LIVE_DECKS = {"07": "notebooks/07-explorer.ipynb", "12": "notebooks/12-induction-heads.ipynb"}
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def explorer_cell(path):
    """The first line of the last code cell on a slide that shows a saved widget (an explorer)."""
    nb = nbformat.read(ROOT / path, as_version=4)
    shown = [c for c in nb.cells if c.cell_type == "code"
             and c.metadata.get("slideshow", {}).get("slide_type") not in ("skip", "notes")
             and any(WIDGET_VIEW in o.get("data", {}) for o in c.get("outputs", []))]
    assert shown, f"{path}: no explorer on a slide"
    # Live, a cell tagged slides-hide-code shows its code as any other (the tag hides it on the static
    # decks only): the last explorer whose code the static deck also shows, else the deck's first explorer.
    untagged = [c for c in shown if "slides-hide-code" not in c.metadata.get("tags", [])]
    return (untagged[-1] if untagged else shown[0]).source.strip().splitlines()[0].strip()


PRESENT_SECTION = ("document.querySelector('.reveal .slides section.present section.present') "
                   "|| document.querySelector('.reveal .slides section.present')")


def _slide_text(page):
    return page.evaluate(f"() => ({PRESENT_SECTION})?.innerText || ''")


def _go_to(page, text, key="Space"):
    for _ in range(80):
        if text in _slide_text(page):
            return True
        page.keyboard.press(key)
        page.wait_for_timeout(150)
    return text in _slide_text(page)


@pytest.mark.parametrize("deck", sorted(LIVE_DECKS))
def test_an_explorer_in_the_middle_of_a_deck_runs_and_takes_the_arrow_keys(rise_page, deck):
    import hashlib

    page = rise_page
    path = LIVE_DECKS[deck]
    first_line = explorer_cell(path)
    before = hashlib.sha256((ROOT / path).read_bytes()).hexdigest()
    page.goto(page.server.url(f"/rise/{path}"))
    page.wait_for_selector(".reveal.ready")
    page.wait_for_timeout(3000)  # the kernel starts and runs the set-up cells after the deck is drawn
    # forward with Space (RISE's "next") to the explorer's slide, in the middle of the deck: no cell
    # before it has run
    assert _go_to(page, first_line), f"{path}: no slide shows {first_line!r}"
    cell = page.locator(".jp-CodeCell", has_text=first_line).last
    cell.locator(".cm-content").first.click()
    page.keyboard.press("Shift+Enter")  # runs the cell, then RISE moves on to the next cell
    # the first Shift+Enter works: the cell's output is a live widget with its picture, no NameError
    handle = cell.locator(".noUi-handle").first
    handle.wait_for(state="attached", timeout=TIMEOUT_MS)
    image = cell.locator(".jupyter-widgets img").first
    image.wait_for(state="attached", timeout=TIMEOUT_MS)
    errors = cell.locator("[data-mime-type='application/vnd.jupyter.stderr']")
    assert errors.count() == 0, errors.first.inner_text()
    assert "NameError" not in cell.inner_text()
    assert _go_to(page, first_line, key="Shift+Space"), "could not go back to the explorer's slide"
    page.wait_for_timeout(500)
    # the picture keeps its shape (never stretched) and is not taller than the screen
    shape = image.evaluate("""(img) => ({natural: img.naturalWidth / img.naturalHeight,
        shown: img.getBoundingClientRect().width / img.getBoundingClientRect().height,
        height: img.getBoundingClientRect().height, fit: getComputedStyle(img).objectFit})""")
    # drawn at its own aspect ratio: the box has the picture's shape, or object-fit: contain
    # draws the picture inside a box of another shape without stretching it
    assert shape["fit"] == "contain" or abs(shape["shown"] / shape["natural"] - 1) < 0.03, shape
    assert shape["height"] <= page.viewport_size["height"], shape
    # a focused slider takes the arrow keys; the deck stays where it is
    src = image.get_attribute("src")
    where = _slide_text(page)[:200]
    handle.focus()
    for _ in range(3):
        handle.press("ArrowRight")
    page.wait_for_function("([img, old]) => img.src !== old", arg=[image.element_handle(), src],
                           timeout=TIMEOUT_MS)
    page.wait_for_timeout(500)
    assert _slide_text(page)[:200] == where, f"{path}: the arrow keys moved the deck as well as the slider"
    outside = [u for u in page.requests
               if not u.startswith(page.server.base_url) and not u.startswith(("data:", "blob:"))]
    assert not outside, f"requests that left the loopback server: {outside[:5]}"
    # presenting (and running cells) does not write to the notebook in the repository: autosave is off
    # in the presenter's settings (tools/rise/overrides.json), and the file is the same bytes
    settings = page.evaluate("""async () => (await fetch('/lab/api/settings/@jupyterlab/docmanager-extension:plugin',
        {credentials: 'same-origin'})).json()""")
    assert settings["settings"]["autosave"] is False, settings.get("settings")
    page.wait_for_timeout(2500)
    after = hashlib.sha256((ROOT / path).read_bytes()).hexdigest()
    assert after == before, f"{path} changed on disk while it was presented"


HALL = {"width": 1280, "height": 720}  # a 16:9 projector


@pytest.mark.parametrize("deck", sorted(LIVE_DECKS))
def test_the_live_deck_is_drawn_at_the_hall_size_and_esc_gives_the_keys_back(rise_page, deck):
    """Issue 32, item 6: on a 1280 x 720 screen the live deck loads notebooks/rise.css (no 404, no
    console error), prose is at least 3 % of the screen's height, no heading is upper-cased, the
    explorer's picture is on the screen with its controls, and Esc on a focused slider gives the
    arrow keys and Space back to the deck."""
    page = rise_page
    path = LIVE_DECKS[deck]
    first_line = explorer_cell(path)
    errors, missing = [], []
    def on_console(message):
        if message.type == "error":
            errors.append(f"{message.text} ({message.location.get('url', '')})")

    on_response = lambda r: missing.append(f"{r.status} {r.url}") if r.status >= 400 else None  # noqa: E731
    page.on("console", on_console)
    page.on("response", on_response)
    page.set_viewport_size(HALL)
    try:
        page.goto(page.server.url(f"/rise/{path}"))
        page.wait_for_selector(".reveal.ready")
        page.wait_for_timeout(3000)
        styled = page.evaluate("""() => [...document.styleSheets].some((s) => s.href
            && s.href.endsWith('/notebooks/rise.css') && s.cssRules.length > 0)""")
        assert styled, "the presenter did not load notebooks/rise.css"
        sizes = page.evaluate("""() => {
            const shown = (e) => e.getBoundingClientRect().height > 0;
            const prose = [...document.querySelectorAll('.reveal .slides .jp-RenderedHTMLCommon p')].filter(shown)
                .map((e) => parseFloat(getComputedStyle(e).fontSize));
            const upper = [...document.querySelectorAll('.reveal .slides h1, .reveal .slides h2, .reveal .slides h3')]
                .filter((e) => getComputedStyle(e).textTransform !== 'none').map((e) => e.textContent);
            return {prose: Math.min(...prose), upper};
        }""")
        assert sizes["prose"] >= 0.03 * HALL["height"], f"{path}: live prose at {sizes['prose']} px"
        assert not sizes["upper"], f"{path}: headings upper-cased live: {sizes['upper'][:3]}"
        assert _go_to(page, first_line), f"{path}: no slide shows {first_line!r}"
        cell = page.locator(".jp-CodeCell", has_text=first_line).last
        cell.locator(".cm-content").first.click()
        page.keyboard.press("Shift+Enter")
        handle = cell.locator(".noUi-handle").first
        handle.wait_for(state="attached", timeout=TIMEOUT_MS)
        image = cell.locator(".jupyter-widgets img").first
        image.wait_for(state="attached", timeout=TIMEOUT_MS)
        assert _go_to(page, first_line, key="Shift+Space"), "could not go back to the explorer's slide"
        page.wait_for_timeout(1000)
        box = image.evaluate("(img) => { const r = img.getBoundingClientRect(); return {top: r.top, bottom: r.bottom,"
                             " height: r.height}; }")
        assert box["height"] > 150 and box["top"] >= 0 and box["bottom"] <= HALL["height"], (
            f"{path}: the explorer's picture is not on a 720 px screen: {box}")
        # Esc on a focused slider: the deck has its keys again (ArrowRight moves on, not the slider)
        handle.focus()
        handle.press("ArrowRight")
        page.wait_for_timeout(300)
        value = handle.get_attribute("aria-valuenow")
        where = _slide_text(page)[:200]
        page.keyboard.press("Escape")
        page.wait_for_timeout(300)
        unfocused = page.evaluate("() => !document.activeElement.closest('[role=\"slider\"]')")
        assert unfocused, "Esc left the slider focused"
        page.keyboard.press("ArrowRight")
        page.wait_for_timeout(800)
        assert handle.get_attribute("aria-valuenow") == value, f"{path}: after Esc ArrowRight still moved the slider"
        moved = _slide_text(page)[:200] != where
        if not moved:
            page.keyboard.press("Space")
            page.wait_for_timeout(800)
        assert _slide_text(page)[:200] != where, f"{path}: after Esc neither ArrowRight nor Space moved the deck"
        assert not missing, f"{path}: requests that failed: {missing[:5]}"
        # jupyterlab-rise 0.43.1's bundled toolkit logged 20-40 "Maximum call stack size exceeded" per
        # deck until tools/rise/patch_presenter.py dropped jp-toolbar's colour sync: no error is allowed
        assert not errors, f"{path}: {len(errors)} console errors, e.g. {errors[:3]}"
    finally:
        page.remove_listener("console", on_console)
        page.remove_listener("response", on_response)
        page.set_viewport_size({"width": 1400, "height": 1000})


def _bound_names(tree):
    """Names a cell binds: imports, assignments, defs, loop targets."""
    import ast

    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
    return bound


def _explorer_slide_cells():
    import sys

    sys.path.insert(0, str(ROOT / "tools"))
    import slide_metadata

    for path in slide_metadata.walkthrough_notebooks():
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if (cell.cell_type == "code" and slide_metadata.slide_type_of(cell) not in ("skip", "notes")
                    and any(WIDGET_VIEW in o.get("data", {}) for o in cell.get("outputs", []))):
                yield path, nb, cell


def test_every_explorer_slide_needs_only_the_set_up():
    """The first Shift+Enter on any explorer slide works in `make present`: every name the cell reads is
    bound by the cell itself or by a set-up cell, which the presenter's kernel runs as it starts."""
    import ast
    import builtins
    import sys

    sys.path.insert(0, str(ROOT / "tools"))
    import slide_metadata

    found = list(_explorer_slide_cells())
    assert {p.name[:2] for p, _, _ in found} >= {"07", "12"}, "explorer slides went missing"
    for path, nb, cell in found:
        setup = set()
        for other in nb.cells:
            if other.cell_type == "code" and slide_metadata.is_setup(other):
                setup |= _bound_names(ast.parse(other.source))
        tree = ast.parse(cell.source)
        read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        missing = read - _bound_names(tree) - setup - set(dir(builtins))
        assert not missing, f"{path.name}: the explorer cell {cell.source.splitlines()[0]!r} needs {missing}"


def test_every_notebook_sets_the_offline_theme_for_the_live_mode():
    """RISE's default theme asks Google Fonts; every deck's notebook metadata sets "white" (and friends)."""
    import sys

    sys.path.insert(0, str(ROOT / "tools"))
    import slide_metadata

    assert slide_metadata.rise_problems(nbformat.v4.new_notebook()), "a notebook without settings passes"
    for path in slide_metadata.walkthrough_notebooks():
        nb = nbformat.read(path, as_version=4)
        assert not slide_metadata.rise_problems(nb), path.name
        assert nb.metadata["rise"]["theme"] == "white"
