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
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    if not (ROOT / ".venv-present" / ".installed").exists():
        subprocess.run(["make", "present-venv"], cwd=ROOT, check=True, timeout=1800)
    root = tmp_path_factory.mktemp("rise-root")
    _fixture_notebook(root / NOTEBOOK)
    server = JupyterLab(root, tmp_path_factory.mktemp("rise-home"), python=PRESENT_PYTHON)
    with served_page(server, ARTIFACTS, "jupyter-server-rise.log", timeout_ms=TIMEOUT_MS) as page:
        page.requests = []
        page.on("request", lambda r: page.requests.append(r.url))
        yield page


def _present_slide(page):
    return page.evaluate("() => document.querySelector('.reveal .slides section.present')?.innerText || ''")


def test_rise_runs_the_explorer_slide_on_a_live_kernel_offline(rise_page):
    page = rise_page
    page.goto(page.server.url(f"/rise/{NOTEBOOK}"))
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
