"""Lecture mode: slide metadata, the offline assets, the built decks (the site: tests/test_site.py).

The slow part, building, happens once per module: one deck (01, "I am happy")
goes into a temporary folder. The notebooks with widgets are run once to record
the widgets' state (cached in build/executed/, shared with ``make slides`` and
``make site``). A browser test then opens the deck in headless Chromium, served
from a loopback HTTP server with every other host unreachable: the first slide
renders and the right arrow moves to the second, with no console error and no
request off the machine.

Screenshots go to test-artifacts/publish/.
"""

from __future__ import annotations

import io
import os
import re
import sys
import tarfile
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import nbformat
import pytest
from browser_support import CHROMIUM_ARGS, StaticServer, chromium_path, unavailable
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import publish  # noqa: E402
import slide_metadata  # noqa: E402
import web_assets  # noqa: E402

ARTIFACTS = ROOT / "test-artifacts" / "publish"
DECK_SOURCE = ROOT / "notebooks" / "01-i-am-happy.ipynb"
TIMEOUT_MS = 60_000


# ---------------------------------------------------------------------------
# Slide metadata
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", slide_metadata.walkthrough_notebooks(), ids=lambda p: p.stem)
def test_every_cell_of_a_walkthrough_has_a_slide_type(path):
    assert slide_metadata.problems(path) == []


def test_every_walkthrough_has_slides_and_fragments():
    for path in slide_metadata.walkthrough_notebooks():
        types = [slide_metadata.slide_type_of(c) for c in nbformat.read(path, as_version=4).cells]
        assert types.count("slide") >= 3, path.name
        assert "fragment" in types and "subslide" in types, path.name


def _toy_notebook():
    cells = [
        new_markdown_cell("# Title\n\nWhat this is."),
        new_markdown_cell("[next](x.ipynb)"),
        new_markdown_cell("## Step 1"),
        new_code_cell("x = 1"),
        new_code_cell("x"),
        new_markdown_cell("So x is 1."),
        new_markdown_cell("And more prose."),
        new_markdown_cell("### A detail"),
        new_code_cell(""),
        new_markdown_cell("[back](y.ipynb)"),
    ]
    cells[1].metadata["tags"] = ["navigation"]
    cells[-1].metadata["tags"] = ["navigation"]
    return new_notebook(cells=cells)


def test_slide_rules():
    types = slide_metadata.rule_types(_toy_notebook().cells)
    assert types == ["slide", "skip", "slide", "fragment", "subslide", "subslide", "-", "subslide", "skip", "skip"]


def test_a_lecturers_slide_types_are_kept_unless_reset(tmp_path):
    nb = _toy_notebook()
    nb.cells[3].metadata["slideshow"] = {"slide_type": "notes"}  # the lecturer's own choice
    path = tmp_path / "toy.ipynb"
    nbformat.write(nb, path)
    assert slide_metadata.apply(path) == len(nb.cells) - 1
    kept = nbformat.read(path, as_version=4)
    assert slide_metadata.slide_type_of(kept.cells[3]) == "notes"
    assert slide_metadata.problems(path) == []
    assert slide_metadata.apply(path) == 0
    assert slide_metadata.apply(path, reset=True) == 1
    assert slide_metadata.slide_type_of(nbformat.read(path, as_version=4).cells[3]) == "fragment"


def test_problems_names_a_missing_or_unknown_slide_type(tmp_path):
    nb = _toy_notebook()
    nb.cells[0].metadata["slideshow"] = {"slide_type": "fragment"}
    nb.cells[2].metadata["slideshow"] = {"slide_type": "slidee"}
    path = tmp_path / "bad.ipynb"
    nbformat.write(nb, path)
    found = "\n".join(slide_metadata.problems(path))
    assert "'slidee'" in found and "None" in found
    assert "first shown cell should open a slide, not 'fragment'" in found


def _lesson_notebook():
    """A small lesson as issue 10 writes them: set-up, a step, an answer, notes and a collapsed appendix."""
    hidden = {"source_hidden": True, "outputs_hidden": True}
    cells = [
        new_markdown_cell("# Toy lesson\n\nWhat you will be able to do."),  # 0
        new_markdown_cell("[next](x.ipynb)", metadata={"tags": ["navigation"]}),  # 1
        new_code_cell("import numpy as np\n\nnp.set_printoptions(precision=4, suppress=True)"),  # 2 set-up
        new_markdown_cell("## Step 1: add"),  # 3
        new_code_cell("print(2 + 2)", outputs=[new_output("stream", name="stdout", text="4\n")]),  # 4
        new_markdown_cell("The long story behind step 1, for the lecturer to tell."),  # 5 -> notes
        new_markdown_cell("## Check yourself\n\nWhat does 3 + 3 give? Predict first."),  # 6
        new_markdown_cell("**Answer.** SIX-IS-THE-ANSWER.",
                          metadata={"tags": ["collapsed", "answer"], "jupyter": hidden}),
        new_markdown_cell("## Appendix: the document, figure by figure"),  # 8
        new_code_cell("print('DOCUMENT-TABLE')", metadata={"tags": ["collapsed"], "jupyter": hidden},
                      outputs=[new_output("stream", name="stdout", text="DOCUMENT-TABLE\n")]),  # 9
        new_code_cell("print('CAUSES')", metadata={"tags": ["collapsed"], "jupyter": hidden}),  # 10
        new_markdown_cell("## Summary\n\n- adding works"),  # 11
        new_code_cell("x = np.ones(2)", metadata={"jupyter": {"source_hidden": True}}),  # 12 collapsed, no tag
        new_markdown_cell("[back](y.ipynb)", metadata={"tags": ["navigation"]}),  # 13
    ]
    return new_notebook(cells=cells)


def test_setup_cells_are_recognised():
    code = [
        ("import numpy as np\nimport matplotlib.pyplot as plt\n\nfrom helpers import attention", True),
        ("%matplotlib inline\nimport numpy as np\nnp.set_printoptions(precision=4)", True),
        ("import numpy as np\nplt.rcParams['figure.dpi'] = 80", True),
        ("import numpy as np\nx = np.arange(3)", False),
        ("np.set_printoptions(precision=4)\nprint(x)", False),
        ("from helpers import examples\nex = examples.load_example('i_am_happy')", False),
    ]
    for source, expected in code:
        assert slide_metadata.is_setup(new_code_cell(source)) is expected, source
    assert slide_metadata.is_setup(new_markdown_cell("## Set-up\n\nFour decimals."))
    assert not slide_metadata.is_setup(new_markdown_cell("## Step 1\n\nimport this"))
    assert slide_metadata.is_setup(new_code_cell("x = 1", metadata={"tags": ["setup"]}))


def test_rules_keep_set_up_navigation_and_collapsed_cells_off_the_slides():
    types = slide_metadata.rule_types(_lesson_notebook().cells)
    assert types == ["slide", "skip", "skip", "slide", "fragment", "subslide", "slide", "notes",
                     "slide", "skip", "skip", "slide", "skip", "skip"]


def test_check_flags_set_up_navigation_and_collapsed_cells_shown_as_slides(tmp_path):
    nb = _lesson_notebook()
    for cell, kind in zip(nb.cells, slide_metadata.rule_types(nb.cells)):
        cell.metadata["slideshow"] = {"slide_type": kind}
    path = tmp_path / "lesson.ipynb"
    nbformat.write(nb, path)
    assert slide_metadata.problems(path) == []
    # the old decks: set-up on a slide, navigation shown, the answer and the appendix as slides
    for i, kind in ((2, "slide"), (1, "-"), (7, "fragment"), (9, "subslide"), (12, "-")):
        nb.cells[i].metadata["slideshow"]["slide_type"] = kind
    nb.cells[3].metadata["slideshow"]["slide_type"] = "-"  # cell 2 opens the slide now
    nbformat.write(nb, path)
    found = slide_metadata.problems(path)
    assert [line.split(" is ")[1] for line in found] == [
        "a navigation cell shown as '-': make it 'skip'",
        "a set-up cell shown as 'slide': make it 'skip'",
        "a collapsed cell shown as 'fragment': make it 'notes' or 'skip'",
        "a collapsed cell shown as 'subslide': make it 'notes' or 'skip'",
        "a collapsed cell shown as '-': make it 'notes' or 'skip'",
    ]
    assert all(f"cell {i} ({nb.cells[i].id})" in line for i, line in zip((1, 2, 7, 9, 12), found))
    assert slide_metadata.problems(path, shown_cells=False) == []  # what the deck builder insists on
    assert slide_metadata.fix(path) == 5
    fixed = [slide_metadata.slide_type_of(c) for c in nbformat.read(path, as_version=4).cells]
    # the fixed cells take their rule's type, the step heading opens the slide the set-up cell opened
    assert fixed == ["slide", "skip", "skip", "slide", "fragment", "subslide", "slide", "notes",
                     "slide", "skip", "skip", "slide", "skip", "skip"]
    assert slide_metadata.problems(path) == [] and slide_metadata.fix(path) == 0


# ---------------------------------------------------------------------------
# The pinned front-end packages
# ---------------------------------------------------------------------------


def _tarball(files: dict[str, bytes], top="package") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(f"{top}/{name}" if top else name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_integrity_is_npm_sha512():
    # The value npm prints for an empty tarball body: base64 of sha512("").
    assert web_assets.integrity_of(b"") == (
        "sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg=="
    )


def test_tarball_url_keeps_the_scope(monkeypatch):
    monkeypatch.delenv("NPM_CONFIG_REGISTRY", raising=False)
    assert web_assets.tarball_url("@jupyter-widgets/html-manager", "1.0.15") == (
        "https://registry.npmjs.org/@jupyter-widgets/html-manager/-/html-manager-1.0.15.tgz"
    )
    monkeypatch.setenv("NPM_CONFIG_REGISTRY", "http://mirror.example/npm/")
    assert web_assets.tarball_url("reveal.js", "4.6.1") == "http://mirror.example/npm/reveal.js/-/reveal.js-4.6.1.tgz"


def test_unpack_keeps_only_the_listed_paths(tmp_path):
    data = _tarball({"dist/a.js": b"a", "dist/a.js.map": b"m", "dist/theme/x.css": b"x", "src/b.ts": b"b"})
    pin = {"keep": ["dist/a.js", "dist/a.js.map", "dist/theme/"], "drop": [".map"]}
    assert web_assets.unpack(data, pin, tmp_path) == 2
    got = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    assert got == ["dist/a.js", "dist/theme/x.css"]


def test_unpack_never_writes_outside_its_folder(tmp_path):
    data = _tarball({"../evil.js": b"x", "package/ok.js": b"y"}, top="")
    dest = tmp_path / "dest"
    assert web_assets.unpack(data, {"keep": ["evil.js", "ok.js"], "drop": []}, dest) == 1
    assert not (tmp_path / "evil.js").exists() and (dest / "ok.js").exists()


def test_a_tarball_that_does_not_match_its_pin_is_refused(tmp_path, monkeypatch):
    good = _tarball({"x.js": b"1"})
    pin = {"version": "1.0.0", "integrity": web_assets.integrity_of(good), "keep": ["x.js"], "drop": []}

    class Response(io.BytesIO):
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    served = []
    monkeypatch.setattr(web_assets.urllib.request, "urlopen",
                        lambda url, timeout: served.append(url) or Response(b"tampered"))
    with pytest.raises(SystemExit, match="does not match web/packages.json"):
        web_assets.fetch("demo", pin, cache=tmp_path)
    assert not list(tmp_path.iterdir())  # nothing unverified is cached
    # A damaged cached copy is thrown away and fetched again.
    (tmp_path / "demo-1.0.0.tgz").write_bytes(b"damaged")
    monkeypatch.setattr(web_assets.urllib.request, "urlopen", lambda url, timeout: Response(good))
    assert web_assets.fetch("demo", pin, cache=tmp_path) == good
    assert (tmp_path / "demo-1.0.0.tgz").read_bytes() == good


def test_the_vendored_files_are_the_pinned_ones():
    vendor = web_assets.ensure(quiet=True)
    assert web_assets.up_to_date(vendor)
    for path in (
        "reveal.js/dist/reveal.js",
        "reveal.js/plugin/notes/notes.js",
        "requirejs/require.js",
        "mathjax/es5/tex-chtml-full.js",
        "@jupyter-widgets/html-manager/dist/embed-amd.js",
    ):
        assert (vendor / path).is_file(), path
    pins = web_assets.load_pins()
    assert all(re.fullmatch(r"\d+\.\d+\.\d+", p["version"]) for p in pins.values())
    assert all(p["integrity"].startswith("sha512-") for p in pins.values())


# ---------------------------------------------------------------------------
# The built site and deck
# ---------------------------------------------------------------------------


class _Links(HTMLParser):
    """Every address a page refers to: (tag, attribute, value)."""

    def __init__(self):
        super().__init__()
        self.found = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("href", "src") and value is not None:
                self.found.append((tag, name, value))


def links_of(page: Path) -> list[tuple[str, str, str]]:
    parser = _Links()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser.found


def _check_offline_and_linked(root: Path, page: Path) -> list[str]:
    """Problems: a script/style/image/font from another host, or a relative link to nothing."""
    bad = []
    for tag, attr, value in links_of(page):
        parts = urlsplit(value)
        if parts.scheme in ("http", "https") or value.startswith("//"):
            if tag != "a":  # a link the reader may click is fine; a resource the page loads is not
                bad.append(f"{page.relative_to(root)}: <{tag} {attr}> loads {value} from the network")
            continue
        if parts.scheme or not parts.path:  # data:, mailto:, #anchor
            continue
        target = (page.parent / unquote(parts.path)).resolve()
        if not target.exists():
            bad.append(f"{page.relative_to(root)}: <{tag} {attr}={value!r}> points at nothing")
    return bad


@pytest.fixture(scope="module")
def deck(tmp_path_factory):
    out = tmp_path_factory.mktemp("slides")
    (page,) = publish.build_slides([DECK_SOURCE], out)
    return page


def test_the_deck_follows_the_slide_metadata(deck):
    nb = publish.deck_notebook(nbformat.read(DECK_SOURCE, as_version=4))  # collapsed cells are not slides
    types = [slide_metadata.slide_type_of(c) for c in nb.cells]
    html = deck.read_text(encoding="utf-8")
    assert html.count('<div class="fragment"') == types.count("fragment")
    # Every slide is a <section> holding its sub-slides, each a <section> too.
    assert html.count("<section") == types.count("slide") * 2 + types.count("subslide")
    assert "_static/reveal.js/dist/reveal.js" in html
    assert [p for p in _check_offline_and_linked(deck.parent, deck)] == []
    assert (deck.parent / "index.html").is_file()


def test_a_rebuild_removes_the_pages_of_renamed_notebooks(tmp_path):
    for rel in ("notebooks/old.html", "notebooks/new.html", "index.html", "_static/x/page.html"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    publish._remove_stale(tmp_path, [tmp_path / "notebooks/new.html", tmp_path / "index.html"])
    left = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.html"))
    assert left == ["_static/x/page.html", "index.html", "notebooks/new.html"]


def _export_slides(nb) -> str:
    body, _ = publish.slides_exporter("_static").from_notebook_node(
        publish.deck_notebook(nb), resources=publish._resources(nb, "lesson", "_static"))
    return body


def _lesson_with_old_slide_types():
    """The lesson whose answer and appendix were made slides, as the old decks had them."""
    nb = _lesson_notebook()
    for cell, kind in zip(nb.cells, slide_metadata.rule_types(nb.cells)):
        cell.metadata["slideshow"] = {"slide_type": kind}
    nb.cells[2].metadata["slideshow"]["slide_type"] = "fragment"  # a lecturer shows the set-up
    nb.cells[5].metadata["slideshow"]["slide_type"] = "notes"
    nb.cells[7].metadata["slideshow"]["slide_type"] = "subslide"
    nb.cells[9].metadata["slideshow"]["slide_type"] = "subslide"
    nb.cells[10].metadata["slideshow"]["slide_type"] = "fragment"
    return nb


def test_a_deck_puts_notes_and_collapsed_prose_in_the_speaker_notes_and_leaves_collapsed_code_out():
    nb = _lesson_with_old_slide_types()
    html = _export_slides(nb)
    notes = re.findall(r'<aside class="notes">(.*?)</aside>', html, flags=re.S)
    assert len(notes) == 2
    assert "The long story behind step 1" in notes[0]
    assert "SIX-IS-THE-ANSWER" in notes[1]  # the answer: in the notes, not on a slide
    assert html.count("SIX-IS-THE-ANSWER") == 1
    assert "DOCUMENT-TABLE" not in html and "CAUSES" not in html
    assert "set_printoptions" in html  # the lecturer kept the set-up cell a slide: respected
    # slides: title, step 1, check yourself, appendix (its heading), summary
    types = [slide_metadata.slide_type_of(c) for c in publish.deck_notebook(nb).cells]
    assert html.count("<section") == types.count("slide") * 2 + types.count("subslide") == 10
    assert "_static/reveal.js/plugin/notes/notes.js" in html  # the speaker view, vendored
    # the stored notebook is not changed by building its deck
    assert slide_metadata.slide_type_of(nb.cells[9]) == "subslide"


def test_a_cell_tagged_slides_hide_code_shows_only_its_output_on_the_slide():
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

    plot = new_code_cell("PLOTTING_CODE = 1\nprint('FIGURE-STAND-IN')", outputs=[
        new_output("stream", name="stdout", text="FIGURE-STAND-IN\n")])
    plot.metadata["tags"] = [publish.SLIDES_HIDE_CODE]
    kept = new_code_cell("KEPT_CODE = 2", outputs=[])
    nb = new_notebook(cells=[new_markdown_cell("# A deck"), plot, kept])
    for cell, kind in zip(nb.cells, ("slide", "subslide", "subslide")):
        cell.metadata["slideshow"] = {"slide_type": kind}
    deck = _export_slides(nb)
    assert "FIGURE-STAND-IN" in deck and "PLOTTING_CODE" not in deck and "KEPT_CODE" in deck
    assert "PLOTTING_CODE" in nb.cells[1].source


# ---------------------------------------------------------------------------
# In the browser
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser():
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


class Watched:
    """A page that records console errors, uncaught exceptions and requests off the loopback host."""

    def __init__(self, browser):
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.page = self.context.new_page()
        self.page.set_default_timeout(TIMEOUT_MS)
        self.errors, self.offsite = [], []
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))
        self.page.on("requestfailed", lambda r: self.errors.append(f"request failed: {r.url}"))
        self.page.on("request", self._request)

    def _request(self, request):
        host = urlsplit(request.url).hostname
        if urlsplit(request.url).scheme in ("http", "https") and host != "127.0.0.1":
            self.offsite.append(request.url)

    def shot(self, name):
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=ARTIFACTS / f"{name}.png")

    def close(self):
        self.context.close()


def _wait_for_mathjax(page):
    page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
    page.evaluate("() => MathJax.startup.promise")


@pytest.mark.browser
def test_the_deck_opens_on_its_title_and_moves_on(browser, deck):
    nb = nbformat.read(DECK_SOURCE, as_version=4)
    shown = [c for c in nb.cells if slide_metadata.slide_type_of(c) not in ("skip", "notes")]
    second_slide = next(c for c in shown[1:] if slide_metadata.slide_type_of(c) == "slide")
    second_heading = second_slide.source.splitlines()[0].lstrip("# ").strip()
    watched = Watched(browser)
    page = watched.page
    try:
        with StaticServer(deck.parent) as server:
            page.goto(server.url(deck.name))
            page.wait_for_function("() => window.Reveal && Reveal.isReady()")
            _wait_for_mathjax(page)
            assert page.evaluate("() => Reveal.getIndices()")["h"] == 0
            title = page.locator(".reveal .slides > section.present h1").first
            assert title.is_visible()
            assert title.inner_text().strip().lower() == publish.title_of(nb, "").lower()
            # The formula: the lesson opens with pictures, so it sits on a later slide; MathJax
            # typesets every slide on load.
            assert page.locator(".reveal .slides mjx-container").count() > 0
            assert page.evaluate("() => Reveal.getTotalSlides()") == sum(
                slide_metadata.slide_type_of(c) in ("slide", "subslide") for c in nb.cells
            )
            watched.shot("deck-first-slide")

            page.keyboard.press("ArrowRight")
            page.wait_for_function("() => Reveal.getIndices().h === 1")
            heading = page.locator(".reveal .slides > section.present h2").first
            heading.wait_for(state="visible")
            assert heading.inner_text().strip().lower() == second_heading.lower()
            watched.shot("deck-second-slide")
        assert watched.errors == []
        assert watched.offsite == []
    finally:
        watched.close()


def test_a_medium_reaches_only_its_own_kernel(tmp_path, monkeypatch):
    """Two slide-medium runs at once (make slides runs two) leave this process's environment as it was.

    The medium is handed to each kernel; set in os.environ and restored by each thread, it
    once leaked, and every nbval kernel started after the deck tests drew for the slide.
    """
    import threading

    import nbclient

    seen, barrier = [], threading.Barrier(2, timeout=30)

    class Client:
        def __init__(self, nb, **kwargs):
            self.nb = nb

        def execute(self, env=None, **kwargs):
            barrier.wait()  # both runs are under way before either ends
            seen.append(((env or {}).get("ATTENTION_MEDIUM"), (env or {}).get("ATTENTION_CAP_PX"),
                         os.environ.get("ATTENTION_MEDIUM"), os.environ.get("ATTENTION_CAP_PX")))
            barrier.wait()
            return self.nb

    monkeypatch.setattr(nbclient, "NotebookClient", Client)
    monkeypatch.delenv("ATTENTION_MEDIUM", raising=False)
    monkeypatch.delenv("ATTENTION_CAP_PX", raising=False)
    path = ROOT / "notebooks" / "00-index.ipynb"
    runs = [threading.Thread(target=publish.executed, args=(path,),
                             kwargs={"cache": tmp_path / str(i), "medium": "slide"}) for i in range(2)]
    for run in runs:
        run.start()
    for run in runs:
        run.join()
    assert seen == [("slide", "1", None, None)] * 2
    assert "ATTENTION_MEDIUM" not in os.environ and "ATTENTION_CAP_PX" not in os.environ
