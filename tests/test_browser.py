"""End to end: the attention explorer in JupyterLab, driven by keyboard in headless Chromium.

A throw-away JupyterLab serves a *copy* of ``notebooks/07-explorer.ipynb`` (so
autosave can never touch the repository's file); Playwright opens it in Debian's
Chromium, runs all cells, moves the temperature and the d_k sliders with the
keyboard, and checks that the heatmap image and the readout follow. It also
checks that no cell shows an error, and measures how long a key press takes to
reach the page as a new image.

Screenshots and the timings go to ``test-artifacts/browser/`` (git-ignored).
Skipped, with the way to enable it, when Chromium or Playwright is missing.
"""

import json
import re
import shutil
import time
from pathlib import Path

import pytest
from browser_support import CHROMIUM_ARGS, JupyterLab, chromium_path, unavailable

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "07-explorer.ipynb"
ARTIFACTS = ROOT / "test-artifacts" / "browser"

TIMEOUT_MS = 90_000  # a loaded 2-core machine: JupyterLab's first load alone can take 20 s
UPDATE_MS = 30_000  # a key press to a new image takes well under a second; fail fast if none comes

EXPLORER = ".jp-OutputArea-output:has(img.attention-explorer-image)"
IMAGE = "img.attention-explorer-image"
READOUT = ".attention-explorer-readout"
TEMPERATURE = ".attention-explorer-temperature"
D_K = ".attention-explorer-d-k"
# The status bar's kernel item ("Python 3 (ipykernel) | Idle") is the signal to wait for:
# the toolbar's execution indicator already says "idle" while there is no kernel yet,
# and Run All with no kernel connected clears the prompts and runs nothing.
KERNEL_IDLE = """() => {
    const text = document.querySelector("#jp-main-statusbar")?.innerText || "";
    return !/No Kernel/.test(text) && /\\|\\s*Idle\\b/.test(text);
}"""
# What a failing cell leaves in the page: JupyterLab renders a traceback (an error
# output) and a warning (a stderr stream) as text with these MIME types.
ERROR_OUTPUTS = (
    ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr'],"
    ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.error']"
)

# Records, in the page, when each key goes down and when the image's src changes.
PROBE_JS = """(image) => {
    const probe = {keys: [], images: []};
    document.addEventListener("keydown", () => probe.keys.push(performance.now()), true);
    new MutationObserver(() => probe.images.push([performance.now(), image.src]))
        .observe(image, {attributes: true, attributeFilter: ["src"]});
    window.__explorerProbe = probe;
}"""


@pytest.fixture(scope="module")
def sync_api():
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    from playwright import sync_api

    return sync_api


@pytest.fixture(scope="module")
def notebook_root(tmp_path_factory):
    """A folder holding a copy of the explorer notebook: the server's root."""
    assert NOTEBOOK.is_file(), f"{NOTEBOOK} is missing"
    root = tmp_path_factory.mktemp("lab-root")
    shutil.copyfile(NOTEBOOK, root / NOTEBOOK.name)
    return root


@pytest.fixture(scope="module")
def lab(sync_api, notebook_root, tmp_path_factory):
    server = JupyterLab(notebook_root, tmp_path_factory.mktemp("lab-home"))
    try:
        server.start(timeout=120)
        yield server
    finally:
        server.stop()
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(server.log_path, ARTIFACTS / "jupyter-server.log")


@pytest.fixture(scope="module")
def page(sync_api, lab):
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 1300})
            page = context.new_page()
            page.set_default_timeout(TIMEOUT_MS)
            page.console_errors = []
            page.on("console", lambda m: m.type == "error" and page.console_errors.append(m.text))
            page.on("pageerror", lambda e: page.console_errors.append(f"uncaught: {e}"))
            yield page
        finally:
            browser.close()


# ---------------------------------------------------------------------------
# The lecture decks fit their slides (issues 10 and 17): every slide of every deck, every fragment shown
# ---------------------------------------------------------------------------

# Every deck is held to the limits (issue 17). A deck still being rewritten could be listed
# here (by its prefix) to be measured and reported without failing; none is.
NOT_YET_LESSONS = ()
DECK_PREFIXES = tuple(f"{i:02d}-" for i in range(1, 17) if f"{i:02d}-" not in NOT_YET_LESSONS)


def _deck_tools():
    import sys

    sys.path.insert(0, str(ROOT / "tools"))
    import deck_report
    import publish
    import slide_metadata

    return deck_report, publish, slide_metadata


def _deck_sources():
    *_, slide_metadata = _deck_tools()
    return [p for p in slide_metadata.walkthrough_notebooks() if p.name.startswith(DECK_PREFIXES)]


@pytest.fixture(scope="module")
def deck_reports(tmp_path_factory):
    """Decks 01-07 built into a temporary folder and measured in Chromium: {notebook stem: DeckReport}."""
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    deck_report, publish, _ = _deck_tools()
    out = tmp_path_factory.mktemp("decks")
    decks = publish.build_slides(_deck_sources(), out)
    reports = deck_report.measure(decks)
    table = deck_report.table(reports)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "decks.txt").write_text(deck_report.report(reports) + "\n")
    print(f"\nlecture decks (every slide, every fragment shown):\n{table}")
    return {r.name: r for r in reports}


@pytest.mark.browser
@pytest.mark.parametrize("source", _deck_sources(), ids=lambda p: p.stem[:2])
def test_every_slide_of_the_deck_fits_with_every_fragment_shown(deck_reports, source):
    deck_report, *_ = _deck_tools()
    report = deck_reports[source.stem]
    assert report.slides, f"{source.stem}: the deck has no slide"
    # the deck is opened at its own size: a slide's box is reveal's configured width x height
    assert (report.width, report.height) == (1100, 760)
    overflowing = "\n".join(
        f"  slide {s['number']} ({s['h']}.{s['v']}) \"{s['title']}\": {s['height']} px of {report.height}"
        for s in report.overflowing)
    if report.overflowing:
        pytest.fail(f"{source.stem}: {len(report.overflowing)} of {len(report.slides)} slides overflow the slide "
                    f"box (shorten the code or the output, or move prose to a 'notes' cell):\n{overflowing}")
    assert not [s for s in report.slides if s["fragments_hidden"]], f"{source.stem}: a fragment stayed hidden"
    assert len(report.slides) <= deck_report.MAX_SLIDES, (
        f"{source.stem}: {len(report.slides)} slides, at most {deck_report.MAX_SLIDES}")
    assert report.with_notes, f"{source.stem}: no speaker notes (give long prose the slide type 'notes')"
    # projectable (issue 17): nothing scrolls sideways, little prose and short code per slide
    name = lambda s: f"slide {s['number']} ({s['h']}.{s['v']}) \"{s['title']}\""  # noqa: E731
    assert not report.wide, f"{source.stem}: code or output wider than the slide: " + ", ".join(map(name, report.wide))
    assert not report.wordy, (f"{source.stem}: more than {deck_report.MAX_WORDS} words of visible text: "
                              + ", ".join(f"{name(s)} {s['words']}" for s in report.wordy))
    assert not report.long_code, (f"{source.stem}: code cells over {deck_report.MAX_CODE_LINES} lines: "
                                  + ", ".join(f"{name(s)} {s['code_lines']}" for s in report.long_code))
    assert not report.upper_cased, (f"{source.stem}: headings upper-cased by the theme (formulas change meaning): "
                                    + ", ".join(map(name, report.upper_cased)))
    # for a lecture hall (issue 24): type sizes, a picture per idea, notes that show their formulas, plain code
    assert not report.small_prose, (f"{source.stem}: prose under {deck_report.MIN_PROSE_PX} px: "
                                    + ", ".join(f"{name(s)} {s['prose_px']}" for s in report.small_prose))
    assert not report.small_code, (f"{source.stem}: code under {deck_report.MIN_CODE_PX} px: "
                                   + ", ".join(f"{name(s)} {s['code_px']}" for s in report.small_code))
    # shares of the deck: issue 32's 60 % pictures and 80 % notes for the decks rewritten for it (HALL_DECKS,
    # 01-16), issue 24's 40 % and 50 % for any deck added later until it is
    n = len(report.slides)
    assert len(report.with_pictures) >= report.min_picture_share * n, (
        f"{source.stem}: a picture on {len(report.with_pictures)} of {n} slides, under {report.min_picture_share:.0%}")
    assert len(report.with_notes) >= report.min_notes_share * n, (
        f"{source.stem}: speaker notes on {len(report.with_notes)} of {n} slides, under {report.min_notes_share:.0%}")
    if report.hall_deck:  # issue 32, item 3: 8 code + 8 output lines over every cell of a slide
        assert not report.long_slide_code, (
            f"{source.stem}: more than {deck_report.MAX_CODE_LINES} code or {deck_report.MAX_OUTPUT_LINES} output "
            "lines on a slide: " + ", ".join(f"{name(s)} {s['code_total']}+{s['output_lines']}"
                                             for s in report.long_slide_code))
    assert not report.blank_note_formulas, (f"{source.stem}: notes with TeX, blank in reveal's speaker view: "
                                            + ", ".join(map(name, report.blank_note_formulas)))
    assert not report.joined, (f"{source.stem}: code joining statements with ';': "
                               + ", ".join(f"{name(s)} ({k} lines)" for s, k in report.joined))
    assert not report.wrapped, (f"{source.stem}: a code line wraps or a printed word splits: "
                                + ", ".join(map(name, report.wrapped)))
    assert not report.show_only, (f"{source.stem}: a slide whose only code is figures.show(...): "
                                  + ", ".join(map(name, report.show_only)))
    # pictures drawn for the hall (issue 32): the text inside each picture, read from the figure's own
    # text artists (helpers/style.py) x the scale the deck shows it at, on a 1280 x 720 screen
    assert report.pictures_measured, f"{source.stem}: no picture carries its text sizes (drawn for the slide?)"
    # issue 32, item 2: no two texts of a picture run into each other (helpers/style.py: overlapping_texts,
    # recorded per picture as data-overlaps), and a slide shows at most two panels of a figure (data-panels)
    assert not report.tangled_figures, (f"{source.stem}: texts of a picture run into each other: " + ", ".join(
        f"{name(s)} " + "/".join(str(p.get("overlaps", 0)) for p in s["figure_text"] if p["measured"])
        for s in report.tangled_figures))
    assert not report.crowded_figures, (f"{source.stem}: more than {deck_report.MAX_PANELS} panels: " + ", ".join(
        f"{name(s)} " + "/".join(str(p.get("panels", 0)) for p in s["figure_text"] if p["measured"])
        for s in report.crowded_figures))
    assert not report.small_figure_text, (
        f"{source.stem}: figure text under {deck_report.MIN_FIGURE_CAP_PX} px cap (median under "
        f"{deck_report.MIN_FIGURE_MEDIAN_CAP_PX}): " + ", ".join(
            f"{name(s)} " + " ".join(f"{p['smallest']:g}/{p['median']:g}" for p in s["figure_text"] if p["measured"])
            for s in report.small_figure_text))


@pytest.mark.browser
def test_the_speaker_view_opens_offline_with_the_notes(sync_api, tmp_path_factory):
    """``s`` opens reveal's speaker view (the vendored notes plugin) with the slide's notes, offline."""
    from urllib.parse import urlsplit

    import nbformat
    from browser_support import StaticServer
    from nbformat.v4 import new_markdown_cell, new_notebook

    _, publish, _ = _deck_tools()
    out = tmp_path_factory.mktemp("speaker")
    cells = [new_markdown_cell("# A deck"), new_markdown_cell("## The slide with notes"),
             new_markdown_cell("SPEAKER-NOTES: say this aloud, do not project it. Scale by $1/\\sqrt{d_k}$:\n\n"
                               "$$\\operatorname{softmax}\\left(\\frac{QK^\\top}{\\sqrt{d_k}}\\right)V$$")]
    for cell, kind in zip(cells, ("slide", "slide", "notes")):
        cell.metadata["slideshow"] = {"slide_type": kind}
    source = out / "lesson.ipynb"
    nbformat.write(new_notebook(cells=cells), source)
    (deck,) = publish.build_slides([source], out)
    offsite = []
    with sync_api.sync_playwright() as playwright, StaticServer(out) as server:
        browser = playwright.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1100, "height": 760})
            context.on("request", lambda r: urlsplit(r.url).scheme in ("http", "https")
                       and urlsplit(r.url).hostname != "127.0.0.1" and offsite.append(r.url))
            page = context.new_page()
            page.set_default_timeout(TIMEOUT_MS)
            page.goto(server.url(deck.name))
            page.wait_for_function("() => window.Reveal && Reveal.isReady() && window.notesMathML !== undefined")
            # the first slide that has notes
            index = page.evaluate("""() => {
                const slide = Reveal.getSlides().find((s) => s.querySelector('aside.notes'));
                const at = Reveal.getIndices(slide);
                Reveal.slide(at.h, at.v || 0);
                return at;
            }""")
            expected = page.evaluate("() => Reveal.getCurrentSlide().querySelector('aside.notes').textContent")
            with page.expect_popup(timeout=30_000) as popup_info:
                page.keyboard.press("s")
            speaker = popup_info.value
            notes = speaker.locator(".speaker-controls-notes .value")
            notes.wait_for()
            speaker.wait_for_function(
                "(text) => document.querySelector('.speaker-controls-notes .value').textContent.trim().length > 0",
                arg=expected)
            shown = " ".join(notes.inner_text().split())
            assert shown[:40] == " ".join(expected.split())[:40], (index, shown[:200])
            # the notes' formulas are drawn there (MathML, which the browser typesets without MathJax),
            # not blank: the inline one and the display one, each of a real size, with the square root
            sizes = speaker.evaluate("""() => [...document.querySelectorAll('.speaker-controls-notes .value math')]
                .map((m) => { const r = m.getBoundingClientRect(); return [r.width, r.height, m.textContent]; })""")
            assert len(sizes) == 2, sizes
            assert all(w > 10 and h > 8 for w, h, _ in sizes), sizes
            assert "QK" in sizes[1][2].replace(" ", "").replace("\n", ""), sizes
            assert speaker.locator(".speaker-controls-notes .value msqrt").count() == 2
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            speaker.screenshot(path=ARTIFACTS / "speaker-view.png")
        finally:
            browser.close()
    assert offsite == [], f"the speaker view asked the network for {offsite}"


@pytest.mark.browser
def test_a_small_picture_grows_into_the_room_its_slide_leaves(sync_api, tmp_path_factory):
    """A figure drawn small for a notebook page is shown larger on a slide with room for it, and
    never makes the slide overflow (the template's fitPictures)."""
    import base64
    import io

    import matplotlib
    import nbformat
    from browser_support import StaticServer
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(3, 2), dpi=100)
    ax.plot([0, 1], [0, 1])
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    png = base64.b64encode(buffer.getvalue()).decode("ascii")
    _, publish, _ = _deck_tools()
    out = tmp_path_factory.mktemp("fit")
    picture = new_code_cell("show(fig)", outputs=[new_output("display_data", data={"image/png": png})])
    cells = [new_markdown_cell("# A deck"), new_markdown_cell("## A small picture"), picture]
    for cell, kind in zip(cells, ("slide", "slide", "-")):
        cell.metadata["slideshow"] = {"slide_type": kind}
    cells[2].metadata["tags"] = ["slides-hide-code"]
    source = out / "fit.ipynb"
    nbformat.write(new_notebook(cells=cells), source)
    (deck,) = publish.build_slides([source], out)
    with sync_api.sync_playwright() as playwright, StaticServer(out) as server:
        browser = playwright.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 760})
            page.set_default_timeout(TIMEOUT_MS)
            page.goto(server.url(deck.name) + "#/1")
            page.wait_for_function("() => window.Reveal && Reveal.isReady()")
            page.wait_for_function("() => Reveal.getCurrentSlide().dataset.picturesFitted === '1'")
            shown = page.evaluate("""() => {
                const img = Reveal.getCurrentSlide().querySelector('img');
                const slide = Reveal.getCurrentSlide().getBoundingClientRect();
                const r = img.getBoundingClientRect(), s = Reveal.getScale();
                return {width: r.width / s, height: r.height / s, natural: img.naturalWidth,
                        ratio: img.naturalWidth / img.naturalHeight, bottom: (r.bottom - slide.top) / s};
            }""")
        finally:
            browser.close()
    assert shown["width"] > 1.5 * shown["natural"], shown  # 300 px drawn, at least 450 px shown
    assert abs(shown["width"] / shown["height"] - shown["ratio"]) < 0.02, shown  # its own shape
    assert shown["bottom"] <= 760, shown  # inside the slide


def _image_src(page):
    return page.locator(IMAGE).first.get_attribute("src")


def _readout(page):
    return page.locator(READOUT).first.inner_text()


def _slider_readout(page, slider):
    return page.locator(f"{slider} .widget-readout").first.inner_text().strip()


def _shot(page, name):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.locator(EXPLORER).first.scroll_into_view_if_needed()
    page.screenshot(path=ARTIFACTS / f"{name}.png", full_page=True)
    return page.locator(IMAGE).first.screenshot(path=ARTIFACTS / f"{name}-image.png")


def _move(page, slider, key, presses, settled_text):
    """Press ``key`` on the slider's handle ``presses`` times; timings in ms.

    The first press is timed alone (key down to new image src); then the rest are
    pressed, and the end is when the readout shows the slider's new value, which
    the kernel sends after the image. ``settled_text(value)`` is the readout's
    text for the slider readout ``value``.
    """
    from playwright.sync_api import TimeoutError  # Playwright's own, not the builtin

    page.evaluate("() => { const p = window.__explorerProbe; p.keys.length = 0; p.images.length = 0; }")
    handle = page.locator(f"{slider} .noUi-handle").first
    handle.focus()
    page.keyboard.press(key)
    try:
        page.wait_for_function("() => window.__explorerProbe.images.length > 0", timeout=UPDATE_MS)
    except TimeoutError:
        pytest.fail(f"no new heatmap image {UPDATE_MS // 1000} s after {key} on {slider}")
    for _ in range(presses - 1):
        page.keyboard.press(key)
        page.wait_for_timeout(100)
    value = _slider_readout(page, slider)
    try:
        page.locator(READOUT).first.filter(has_text=settled_text(value)).wait_for(timeout=UPDATE_MS)
    except TimeoutError:
        pytest.fail(f"the readout does not show {settled_text(value)!r} after {key} on {slider}:\n"
                    f"{_readout(page)[:500]}")
    probe = page.evaluate("() => window.__explorerProbe")
    keys, images = probe["keys"], [t for t, _ in probe["images"]]
    assert len(keys) == presses, f"{len(keys)} keydown events for {presses} presses"
    last_key = max(k for k in keys if k <= images[-1])  # the press the final image answers
    return value, {
        "key": key,
        "presses": presses,
        "first_press_to_new_image_ms": round(images[0] - keys[0], 1),
        "last_press_to_final_image_ms": round(images[-1] - last_key, 1),
        "new_images": len(images),
    }


@pytest.mark.browser
def test_explorer_follows_the_keyboard_in_jupyterlab(page, lab):
    started = time.monotonic()
    timings = {"server_start_s": round(lab.startup_seconds, 1)}
    try:
        page.goto(lab.url(f"/lab/tree/{NOTEBOOK.name}"), wait_until="domcontentloaded")
        page.locator(".jp-NotebookPanel .jp-Cell").first.wait_for()
        page.wait_for_function(KERNEL_IDLE)
        timings["lab_load_s"] = round(time.monotonic() - started, 1)

        # Run > Run All Cells, by the menu's command id rather than its label
        page.locator("#jp-main-dock-panel .lm-TabBar-tab", has_text=NOTEBOOK.name).click()
        page.locator(".lm-MenuBar-item", has_text=re.compile(r"^Run$")).click()
        page.locator(".lm-Menu-item[data-command='runmenu:run-all']").click()
        page.wait_for_function(
            f"() => (document.querySelector({IMAGE!r})?.src || '').startsWith('blob:')")
        page.locator(READOUT).first.filter(has_text="temperature").wait_for()
        page.wait_for_function(
            """() => [...document.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')]
                     .every(p => /\\[\\d+\\]/.test(p.textContent))""")
        page.wait_for_function(KERNEL_IDLE)
        timings["run_all_s"] = round(time.monotonic() - started - timings["lab_load_s"], 1)
        errors = page.locator(ERROR_OUTPUTS)
        assert errors.count() == 0, f"a cell shows an error or a warning:\n{errors.first.inner_text()[:2000]}"
        outputs = page.locator(".jp-OutputArea-output").all_inner_texts()
        broken = [t for t in outputs if "Error displaying widget" in t or "Error rendering" in t]
        assert not broken, f"a widget failed to render: {broken}"
        assert page.locator(IMAGE).count() >= 1 and page.locator(TEMPERATURE).count() >= 1

        page.evaluate(PROBE_JS, page.locator(IMAGE).first.element_handle())
        image_0, readout_0 = _image_src(page), _readout(page)
        pixels_0 = _shot(page, "1-after-run-all")
        # a long label once squeezed the temperature track to 0 px: keys worked, the mouse could not
        timings["slider_track_width_px"] = widths = {
            name: round(page.locator(f"{slider} .noUi-target").first.bounding_box()["width"])
            for name, slider in (("temperature", TEMPERATURE), ("d_k", D_K))}
        assert min(widths.values()) >= 100, f"a slider's track is too narrow to drag: {widths} px"
        assert _slider_readout(page, TEMPERATURE) == "1.00"

        # temperature: T = 10**(-0.01 per press), so 5 presses give 0.89
        t_value, timings["temperature"] = _move(
            page, TEMPERATURE, "ArrowLeft", 5, lambda v: f"temperature {v}")
        image_1, readout_1 = _image_src(page), _readout(page)
        pixels_1 = _shot(page, "2-after-temperature")
        assert float(t_value) < 1.0, f"the temperature slider did not move down: {t_value}"
        assert image_1 != image_0 and pixels_1 != pixels_0, "the heatmap did not change with T"
        assert readout_1 != readout_0 and f"temperature {t_value}" in readout_1

        # d_k: PageUp moves 5 doublings, so 3 presses take d_k from 3 up to its end, 1024
        d_k_before = int(_slider_readout(page, D_K))
        d_k_value, timings["d_k"] = _move(page, D_K, "PageUp", 3, lambda v: f"√{v}")
        image_2, readout_2 = _image_src(page), _readout(page)
        pixels_2 = _shot(page, "3-after-d_k")
        assert int(d_k_value) > d_k_before, f"the d_k slider did not move up: {d_k_value}"
        assert image_2 != image_1 and pixels_2 != pixels_1, "the heatmap did not change with d_k"
        assert readout_2 != readout_1 and f"√{d_k_value}" in readout_2

        assert page.locator(ERROR_OUTPUTS).count() == 0, "an error appeared while the sliders moved"

        # Keyboard alone (issue 19): from the sentence box, Tab reaches the temperature slider,
        # the arrow keys move it, and the readout, an ARIA live region, says so.
        page.locator(".attention-explorer-sentence input").first.focus()
        in_temperature = f"() => !!document.activeElement?.closest({TEMPERATURE!r})"
        for presses in range(1, 16):
            page.keyboard.press("Tab")
            if page.evaluate(in_temperature):
                break
        assert page.evaluate(in_temperature), "Tab never reached the temperature slider"
        timings["tabs_to_temperature"] = presses
        readout_3, before = _readout(page), _slider_readout(page, TEMPERATURE)
        for _ in range(3):
            page.keyboard.press("ArrowRight")
        page.wait_for_function(
            f"(before) => document.querySelector({READOUT!r})?.innerText !== before", arg=readout_3)
        assert _slider_readout(page, TEMPERATURE) != before
        assert page.locator(f"{READOUT} [role='status'][aria-live='polite'] th[scope='col']").count() >= 1
    except BaseException:  # pytest.fail raises a BaseException
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        try:
            page.screenshot(path=ARTIFACTS / "failure.png", full_page=True)
        except Exception as exc:  # the page may be gone; the original failure matters
            print(f"no failure screenshot: {exc}")
        raise
    finally:
        timings["test_s"] = round(time.monotonic() - started, 1)
        timings["browser_console_errors"] = page.console_errors
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        (ARTIFACTS / "timings.json").write_text(json.dumps(timings, indent=2, ensure_ascii=False) + "\n")
        print(f"\nbrowser test timings: {json.dumps(timings, ensure_ascii=False)}")

