"""Measure the lecture decks in headless Chromium: slides, overflowing slides, speaker notes.

    python tools/deck_report.py                 build every deck into build/slides/, then measure it
    python tools/deck_report.py 01 03           only the decks whose notebook name starts so
    python tools/deck_report.py --no-build      measure the decks already in build/slides/

Each deck is opened at its own size (reveal.js ``width`` x ``height``), every slide is
visited with all its fragments shown, and a slide *overflows* when its content reaches
past the slide box (the section's scroll height, or the bottom of any element in it,
beyond the configured height; reveal's scale is divided out). The table lists, per
deck, the slides, the overflowing slides, the slides with speaker notes and the slides
whose code or output is wider than the slide (it would scroll sideways); below it
every problem names its slide by position (h.v as in the deck's URL, 1-based slide
number) and by its first heading or text, so a notebook author can find the cell.

The limits, for every deck (issues 10 and 17): at most 40 slides, speaker notes present,
no overflow, nothing scrolling sideways, at most MAX_WORDS words of visible text and
MAX_CODE_LINES lines of code per slide, and no heading upper-cased by the theme; at most MAX_CODE_LINES code
lines and MAX_OUTPUT_LINES printed lines summed over every cell of a slide (issue 32); pictures and notes
on MIN_PICTURE_SHARE / MIN_NOTES_SHARE of the slides, or HALL_PICTURE_SHARE / HALL_NOTES_SHARE for the
decks of HALL_DECKS; in every picture, no two texts that run into each other and at most MAX_PANELS
panels (issue 32, item 2). Exit status 1 when any is broken.
Needs Chromium (/usr/bin/chromium or $PLAYWRIGHT_CHROMIUM) and Playwright (the test extra).
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "tests"))

import publish  # noqa: E402
import slide_metadata  # noqa: E402
from browser_support import CHROMIUM_ARGS, StaticServer, chromium_path, unavailable  # noqa: E402

MAX_SLIDES = 40
# Issue 17's "about 60 words of visible text" and "about 8 lines of code" per slide, held exactly:
# visible prose words (no notes, code, outputs or formulas), and the longest code cell's lines.
MAX_WORDS = 60
MAX_CODE_LINES = 8  # screen lines, at the slide's font size
# Issue 32, item 3: a slide of code and printed output carries at most 8 code lines and 8 output lines
# in total, counted over every cell shown on it (not only its longest cell).
MAX_OUTPUT_LINES = 8
# Issue 24, for a lecture hall: type sizes in the deck's canvas pixels, and shares of the slides.
MIN_PROSE_PX = 26
MIN_CODE_PX = 24
MIN_PICTURE_SHARE = 0.40
MIN_NOTES_SHARE = 0.50
# Issue 32: the text inside a picture, as cap height on a 1280 x 720 screen: a picture's median text
# at least 13 px (a back-row reader), nothing under 9 px. Measured from each figure's own text artists.
MIN_FIGURE_MEDIAN_CAP_PX = 13
MIN_FIGURE_CAP_PX = 9
# Issue 32, item 2: no two texts of a picture run into each other, and a slide shows at most two panels
# of a multi-panel figure (the rest on following slides or in the notebook only).
MAX_PANELS = 2
# Issue 32, items 3 and 5, for the decks already rewritten for it (HALL_DECKS, by notebook prefix): a picture
# on at least 60 % of the slides, speaker notes on at least 80 %, and the code and output totals per slide.
# The other decks keep MIN_PICTURE_SHARE / MIN_NOTES_SHARE until they are rewritten too.
HALL_DECKS = tuple(f"{i:02d}-" for i in range(1, 17))  # every lesson deck, 01-16
HALL_PICTURE_SHARE = 0.60
HALL_NOTES_SHARE = 0.80
# A code cell that only shows a figure is not worth a line on a slide (issue 24: "the picture is the slide").
SHOW_ONLY = re.compile(r"(figures\.)?show\(\s*\w+\s*\)")
TOLERANCE_PX = 2  # sub-pixel rounding of the layout
TIMEOUT_MS = 90_000
WALKTHROUGHS = ("01-", "02-", "03-", "04-", "05-", "06-")

# Visit every slide with all fragments shown and measure it. Runs in the deck's page.
MEASURE_JS = """async () => {
    const config = Reveal.getConfig();
    const width = config.width, height = config.height;
    const frame = () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
    // a slide's name: its first heading, else its first text, with formulas as their TeX and no prompts
    const tex = new Map();
    for (const item of MathJax.startup.document.getMathItemsWithin(document.body)) {
        if (item.typesetRoot) tex.set(item.typesetRoot, item.display ? `$$${item.math}$$` : `$${item.math}$`);
    }
    const label = (slide) => {
        const copy = slide.cloneNode(true);
        const originals = slide.querySelectorAll('mjx-container');
        copy.querySelectorAll('mjx-container').forEach((e, i) => e.replaceWith(tex.get(originals[i]) || ''));
        copy.querySelectorAll('aside.notes, script, style, .jp-InputPrompt, .jp-OutputPrompt, .anchor-link')
            .forEach((e) => e.remove());
        const heading = copy.querySelector('h1, h2, h3, h4, h5');
        const text = (heading || copy).textContent.replace(/\\s+/g, ' ').trim();
        if (heading) section = text;
        // a slide without a heading is named by its first text, under the last heading before it
        return (heading || !section ? text.slice(0, 80) : `${section.slice(0, 40)} > ${text.slice(0, 60)}`);
    };
    let section = '';
    const slides = [];
    const all = Reveal.getSlides();
    for (let n = 0; n < all.length; n++) {
        const slide = all[n];
        const at = Reveal.getIndices(slide);
        Reveal.slide(at.h, at.v || 0);
        let last = -1;
        slide.querySelectorAll('.fragment').forEach((f) => {
            last = Math.max(last, Number(f.getAttribute('data-fragment-index')));
        });
        if (last >= 0) Reveal.slide(at.h, at.v || 0, last);
        await frame();
        const hidden = [...slide.querySelectorAll('.fragment')].filter((f) => !f.classList.contains('visible')).length;
        const scale = Reveal.getScale();
        const box = slide.getBoundingClientRect();
        let bottom = 0;
        for (const el of slide.querySelectorAll('*')) {
            if (el.closest('aside.notes') || el.closest('script, style')) continue;
            const r = el.getBoundingClientRect();
            if (r.width === 0 || r.height === 0) continue;
            bottom = Math.max(bottom, (r.bottom - box.top) / scale);
        }
        // the section scrolls (overflow-y: auto): its scroll height is the content's height
        const tall = Math.max(slide.scrollHeight, bottom);
        const text = label(slide);
        // code or output wider than its box (a line too long) scrolls sideways: counted, and failed
        const wide = [...slide.querySelectorAll('pre')].filter((e) => !e.closest('aside.notes')
            && e.scrollWidth > e.clientWidth + 2).length;
        // visible prose: words of the rendered markdown, without notes, code, outputs or formulas
        const prose = slide.cloneNode(true);
        prose.querySelectorAll('aside.notes, script, style, pre, .jp-OutputArea, .jp-InputPrompt, '
            + 'mjx-container, .anchor-link, .jp-CodeCell').forEach((e) => e.remove());
        const words = (prose.textContent.match(/[A-Za-z0-9\u00C0-\u024F'’-]+/g) || []).length;
        // the longest code cell's source on the slide, in lines
        let codeLines = 0;
        slide.querySelectorAll('.jp-CodeCell .jp-InputArea pre').forEach((e) => {
            if (e.closest('aside.notes')) return;
            codeLines = Math.max(codeLines, e.textContent.replace(/\\n+$/, '').split('\\n').length);
        });
        // headings the theme upper-cases (a formula in one would change its meaning)
        const upper = [...slide.querySelectorAll('h1, h2, h3, h4, h5, h6')].filter((e) => !e.closest('aside.notes')
            && getComputedStyle(e).textTransform !== 'none').length;
        // type sizes (canvas px): the smallest prose (rendered markdown and HTML output, not widgets,
        // formulas or notes) and the smallest code or printed output on the slide
        const shown = (e) => { const r = e.getBoundingClientRect(); return r.width > 1 && r.height > 1; };
        let prosePx = 0, codePx = 0;
        for (const e of slide.querySelectorAll('.jp-RenderedHTMLCommon *')) {
            if (e.closest('aside.notes, mjx-container, .jupyter-widgets, pre, script, style')) continue;
            if (![...e.childNodes].some((c) => c.nodeType === 3 && c.textContent.trim())) continue;
            if (!shown(e)) continue;
            const px = parseFloat(getComputedStyle(e).fontSize);
            if (e.tagName === 'CODE') codePx = codePx ? Math.min(codePx, px) : px;  // inline code is code
            else prosePx = prosePx ? Math.min(prosePx, px) : px;
        }
        const codeSources = [];
        let wrappedCode = 0, screenCode = 0, brokenWords = [], codeTotal = 0, outputLines = 0;
        for (const e of slide.querySelectorAll('pre')) {
            if (e.closest('aside.notes, .jupyter-widgets') || !shown(e) || !e.textContent.trim()) continue;
            const px = parseFloat(getComputedStyle(e).fontSize);
            codePx = codePx ? Math.min(codePx, px) : px;
            const lineHeight = parseFloat(getComputedStyle(e).lineHeight) || px * 1.3;
            const source = e.textContent.replace(/\\n+$/, '');
            const screen = Math.round((e.getBoundingClientRect().height / scale
                - parseFloat(getComputedStyle(e).paddingTop) - parseFloat(getComputedStyle(e).paddingBottom))
                / lineHeight);
            if (e.closest('.jp-InputArea')) {
                codeTotal += source.split('\\n').length;
                codeSources.push(source);
                screenCode = Math.max(screenCode, screen);
                wrappedCode += Math.max(0, screen - source.split('\\n').length);
            } else {
                outputLines += source.split('\\n').length;  // printed output, summed over the slide's cells
                // printed output: a word split over two screen lines
                const walker = document.createTreeWalker(e, NodeFilter.SHOW_TEXT);
                for (let node = walker.nextNode(); node; node = walker.nextNode()) {
                    for (const m of node.textContent.matchAll(/\\S{2,}/g)) {
                        const range = document.createRange();
                        range.setStart(node, m.index);
                        range.setEnd(node, m.index + m[0].length);
                        const tops = new Set([...range.getClientRects()].filter((r) => r.width > 0)
                            .map((r) => Math.round(r.top)));
                        if (tops.size > 1) brokenWords.push(m[0]);
                    }
                }
            }
        }
        // a picture: an image, a drawn canvas or an SVG that is not a formula, of a real size
        const picture = [...slide.querySelectorAll('img, canvas, svg')].some((e) => {
            const r = e.getBoundingClientRect();
            return !e.closest('aside.notes, mjx-container') && r.width / scale > 120 && r.height / scale > 80;
        });
        // figure text (issue 32): each picture's texts' cap heights in its PNG's pixels (data-cap-px, written
        // by helpers/figures.py from the figure's text artists), times the scale the deck shows the picture at,
        // times the deck's scale on a 1280 x 720 screen
        const toScreen = Math.min(1280 / width, 720 / height);
        const figureText = [];
        for (const img of slide.querySelectorAll('img')) {
            if (img.closest('aside.notes') || !img.naturalWidth) continue;
            const r = img.getBoundingClientRect();
            if (r.width / scale <= 120 || r.height / scale <= 80) continue;
            const caps = (img.dataset.capPx || '').split(/\\s+/).filter(Boolean).map(Number).sort((a, b) => a - b);
            const shownAt = r.width / scale / img.naturalWidth * toScreen;
            if (!caps.length) { figureText.push({measured: false}); continue; }
            const px = caps.map((c) => c * shownAt);
            figureText.push({measured: true, overlaps: Number(img.dataset.overlaps || 0),
                panels: Number(img.dataset.panels || 0), smallest: Math.round(px[0] * 10) / 10,
                median: Math.round(px[Math.floor((px.length - 1) / 2)] * 10) / 10, texts: px.length,
                shown: Math.round(shownAt * 1000) / 1000});
        }
        // speaker notes whose formulas reveal's speaker view leaves blank (it does not typeset TeX)
        const texMarks = ['$', '\\\\(', '\\\\[', '\\\\begin{', '\\\\frac', '\\\\sqrt', '^{', '_{'];
        const noteTex = [...slide.querySelectorAll('aside.notes')].filter((e) => e.querySelector('mjx-container')
            || texMarks.some((m) => e.textContent.includes(m))).length;
        slides.push({
            figure_text: figureText, prose_px: prosePx, code_px: codePx, code_sources: codeSources,
            wrapped_code_lines: wrappedCode,
            screen_code_lines: screenCode, broken_words: brokenWords, code_total: codeTotal,
            output_lines: outputLines, picture, notes_tex: noteTex,
            number: n + 1, h: at.h, v: at.v || 0, title: text, upper_headings: upper,
            height: Math.round(tall), overflow: Math.round(tall - height),
            sideways: slide.scrollWidth - slide.clientWidth,
            notes: slide.querySelectorAll('aside.notes').length > 0,
            fragments_hidden: hidden, wide, words, code_lines: codeLines,
        });
    }
    return {width, height, slides};
}"""

READY_JS = """() => window.Reveal && Reveal.isReady() && window.MathJax && MathJax.startup
    && MathJax.startup.promise && [...document.images].every((i) => i.complete)
    && (window.notesAsMathML === undefined || window.notesMathML !== undefined)"""


@dataclass
class DeckReport:
    name: str
    width: int
    height: int
    slides: list[dict] = field(default_factory=list)

    @property
    def overflowing(self) -> list[dict]:
        return [s for s in self.slides if s["overflow"] > TOLERANCE_PX]

    @property
    def with_notes(self) -> list[dict]:
        return [s for s in self.slides if s["notes"]]

    @property
    def wide(self) -> list[dict]:
        """Slides that scroll sideways: a code block wider than its box, or the slide itself."""
        return [s for s in self.slides if s.get("wide") or s.get("sideways", 0) > TOLERANCE_PX]

    @property
    def wordy(self) -> list[dict]:
        return [s for s in self.slides if s.get("words", 0) > MAX_WORDS]

    @property
    def long_code(self) -> list[dict]:
        return [s for s in self.slides
                if max(s.get("code_lines", 0), s.get("screen_code_lines", 0)) > MAX_CODE_LINES]

    @property
    def long_slide_code(self) -> list[dict]:
        """Slides whose cells carry more than MAX_CODE_LINES code lines or MAX_OUTPUT_LINES printed lines in total."""
        return [s for s in self.slides
                if s.get("code_total", 0) > MAX_CODE_LINES or s.get("output_lines", 0) > MAX_OUTPUT_LINES]

    @property
    def hall_deck(self) -> bool:
        """A deck held to issue 32's shares and per-slide totals (HALL_DECKS)."""
        return self.name.startswith(HALL_DECKS)

    @property
    def min_picture_share(self) -> float:
        return HALL_PICTURE_SHARE if self.hall_deck else MIN_PICTURE_SHARE

    @property
    def min_notes_share(self) -> float:
        return HALL_NOTES_SHARE if self.hall_deck else MIN_NOTES_SHARE

    @property
    def upper_cased(self) -> list[dict]:
        """Slides with a heading whose case the theme changes (text-transform)."""
        return [s for s in self.slides if s.get("upper_headings", 0)]

    @property
    def small_prose(self) -> list[dict]:
        return [s for s in self.slides if s.get("prose_px") and s["prose_px"] < MIN_PROSE_PX - 0.5]

    @property
    def small_code(self) -> list[dict]:
        return [s for s in self.slides if s.get("code_px") and s["code_px"] < MIN_CODE_PX - 0.5]

    @property
    def with_pictures(self) -> list[dict]:
        return [s for s in self.slides if s.get("picture")]

    @property
    def pictures_measured(self) -> list[dict]:
        """Every measured picture of the deck (figure_text entries), each with its slide's number."""
        return [dict(p, slide=s["number"]) for s in self.slides for p in s.get("figure_text", ()) if p["measured"]]

    @property
    def pictures_unmeasured(self) -> int:
        return sum(1 for s in self.slides for p in s.get("figure_text", ()) if not p["measured"])

    @property
    def small_figure_text(self) -> list[dict]:
        """Slides with a picture whose text is too small: its median under 13 px cap, or any text under 9 px."""
        return [s for s in self.slides if any(
            p["measured"] and (p["smallest"] < MIN_FIGURE_CAP_PX or p["median"] < MIN_FIGURE_MEDIAN_CAP_PX)
            for p in s.get("figure_text", ()))]

    @property
    def tangled_figures(self) -> list[dict]:
        """Slides with a picture in which two texts run into each other (helpers/style.py: overlapping_texts)."""
        return [s for s in self.slides if any(p["measured"] and p.get("overlaps", 0) > 0
                                              for p in s.get("figure_text", ()))]

    @property
    def crowded_figures(self) -> list[dict]:
        """Slides with a picture of more than MAX_PANELS panels (issue 32: at most two on a slide)."""
        return [s for s in self.slides if any(p["measured"] and p.get("panels", 0) > MAX_PANELS
                                              for p in s.get("figure_text", ()))]

    def figure_text_summary(self) -> tuple[float, float] | None:
        """(smallest text, median of the pictures' medians) in cap px at 1280 x 720, or None without a measure."""
        pictures = self.pictures_measured
        if not pictures:
            return None
        medians = sorted(p["median"] for p in pictures)
        return min(p["smallest"] for p in pictures), medians[(len(medians) - 1) // 2]

    @property
    def blank_note_formulas(self) -> list[dict]:
        """Slides whose notes hold TeX, which reveal's speaker view shows blank."""
        return [s for s in self.slides if s.get("notes_tex")]

    @property
    def joined(self) -> list[tuple[dict, int]]:
        """(slide, lines) for code on a slide that joins statements with ';'."""
        found = []
        for s in self.slides:
            lines = sum(joined_lines(code) for code in s.get("code_sources", ()))
            if lines:
                found.append((s, lines))
        return found

    @property
    def show_only(self) -> list[dict]:
        """Slides whose code is only ``figures.show(fig)``: the picture is the slide, its code is hidden."""
        return [s for s in self.slides
                if any(SHOW_ONLY.fullmatch(code.strip()) for code in s.get("code_sources", ()))]

    @property
    def wrapped(self) -> list[dict]:
        """Slides with a code line that wraps, or a printed word split across two lines."""
        return [s for s in self.slides if s.get("wrapped_code_lines") or s.get("broken_words")]

    @property
    def walkthrough(self) -> bool:
        return self.name.startswith(WALKTHROUGHS)

    def problems(self) -> list[str]:
        """What breaks the limits (issue 17: every deck), one line each, naming the slides."""
        found = []
        name = lambda s: f"slide {s['number']} ({s['h']}.{s['v']}) \"{s['title']}\""  # noqa: E731
        if len(self.slides) > MAX_SLIDES:
            found.append(f"{self.name}: {len(self.slides)} slides, more than {MAX_SLIDES}")
        if not self.with_notes:
            found.append(f"{self.name}: no speaker notes (no cell of slide type 'notes')")
        for s in self.overflowing:
            found.append(f"{self.name}: {name(s)} overflows by {s['overflow']} px ({s['height']} of {self.height} px)")
        for s in self.slides:
            if s["fragments_hidden"]:
                found.append(f"{self.name}: {name(s)}: {s['fragments_hidden']} fragments could not be shown")
        for s in self.wide:
            found.append(f"{self.name}: {name(s)}: scrolls sideways ({s.get('wide', 0)} code blocks wider than "
                         f"their box; the slide by {s.get('sideways', 0)} px)")
        for s in self.wordy:
            found.append(f"{self.name}: {name(s)}: {s['words']} words of visible text, more than {MAX_WORDS}")
        for s in self.long_code:
            found.append(f"{self.name}: {name(s)}: a code cell of {s['code_lines']} lines, more than {MAX_CODE_LINES}")
        for s in self.upper_cased:
            found.append(f"{self.name}: {name(s)}: {s['upper_headings']} headings upper-cased by the theme")
        for s in self.small_prose:
            found.append(f"{self.name}: {name(s)}: prose at {s['prose_px']:g} px, under {MIN_PROSE_PX}")
        for s in self.small_code:
            found.append(f"{self.name}: {name(s)}: code at {s['code_px']:g} px, under {MIN_CODE_PX}")
        for s in self.long_slide_code:
            found.append(f"{self.name}: {name(s)}: {s.get('code_total', 0)} code lines and "
                         f"{s.get('output_lines', 0)} output lines over its cells, more than "
                         f"{MAX_CODE_LINES} + {MAX_OUTPUT_LINES}")
        n = len(self.slides)
        if n and len(self.with_pictures) < self.min_picture_share * n:
            found.append(f"{self.name}: a picture on {len(self.with_pictures)} of {n} slides, "
                         f"under {self.min_picture_share:.0%}")
        if n and len(self.with_notes) < self.min_notes_share * n:
            found.append(f"{self.name}: speaker notes on {len(self.with_notes)} of {n} slides, "
                         f"under {self.min_notes_share:.0%}")
        for s in self.small_figure_text:
            sizes = ", ".join(f"{p['smallest']:g}/{p['median']:g}" for p in s["figure_text"] if p["measured"])
            found.append(f"{self.name}: {name(s)}: figure text (smallest/median cap px at 1280x720) {sizes}, "
                         f"under {MIN_FIGURE_CAP_PX}/{MIN_FIGURE_MEDIAN_CAP_PX}")
        for s in self.tangled_figures:
            counts = ", ".join(str(p.get("overlaps", 0)) for p in s["figure_text"] if p["measured"])
            found.append(f"{self.name}: {name(s)}: texts of a picture run into each other ({counts} pairs)")
        for s in self.crowded_figures:
            counts = ", ".join(str(p.get("panels", 0)) for p in s["figure_text"] if p["measured"])
            found.append(f"{self.name}: {name(s)}: a picture of {counts} panels, more than {MAX_PANELS}")
        for s in self.blank_note_formulas:
            found.append(f"{self.name}: {name(s)}: notes with TeX, blank in the speaker view (write it in Unicode)")
        for s, lines in self.joined:
            found.append(f"{self.name}: {name(s)}: {lines} code lines join statements with ';'")
        for s in self.show_only:
            found.append(f"{self.name}: {name(s)}: its only code is figures.show(...): tag it slides-hide-code")
        for s in self.wrapped:
            found.append(f"{self.name}: {name(s)}: {s.get('wrapped_code_lines', 0)} code lines wrap; "
                         f"printed words split: {s.get('broken_words', [])[:3]}")
        return found


def joined_lines(code: str) -> int:
    """Lines of `code` that join statements with ';' (Python's tokenizer: not in strings or comments)."""
    import io
    import tokenize

    lines = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(code + "\n").readline):
            if tok.type == tokenize.OP and tok.string == ";":
                lines.add(tok.start[0])
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return sum(1 for line in code.splitlines() if ";" in line.split("#")[0])
    return len(lines)


def measure_deck(browser, deck: Path) -> DeckReport:
    """Open one built deck (served from its folder) at its own size and measure every slide."""
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    try:
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        with StaticServer(deck.parent) as server:
            page.goto(server.url(deck.name), wait_until="networkidle")
            page.wait_for_function(READY_JS)
            # the deck's own size: the window is made exactly reveal's width x height
            size = page.evaluate("() => ({width: Reveal.getConfig().width, height: Reveal.getConfig().height})")
            page.set_viewport_size({"width": int(size["width"]), "height": int(size["height"])})
            page.evaluate("() => Reveal.layout()")
            page.evaluate("() => MathJax.startup.promise.then(() => MathJax.typesetPromise())")
            page.wait_for_timeout(500)  # the saved widgets render after the page has loaded
            result = page.evaluate(MEASURE_JS)
    finally:
        context.close()
    name = deck.name[: -len(".slides.html")]
    return DeckReport(name, result["width"], result["height"], result["slides"])


def measure(decks: list[Path]) -> list[DeckReport]:
    reason = unavailable()
    if reason:
        raise SystemExit(f"deck_report: {reason}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS)
        try:
            return [measure_deck(browser, deck) for deck in decks]
        finally:
            browser.close()


def table(reports: list[DeckReport]) -> str:
    lines = [f"{'deck':<24} {'slides':>6} {'prose<26':>8} {'code<24':>7} {'pictures':>8} {'notes':>5}"
             f" {'TeX notes':>9} {'upper':>5} {'; lines':>7} {'wrapped':>7} {'overflow':>8} {'wide':>4}"
             f" {f'>{MAX_WORDS}w':>4} {f'>{MAX_CODE_LINES}l':>4} {'>8+8':>4} {'fig min/med':>11} {'small fig':>9}"
             f" {'tangled':>7} {'>2 panels':>9}"]
    for r in reports:
        lines.append(f"{r.name[:24]:<24} {len(r.slides):>6} {len(r.small_prose):>8} {len(r.small_code):>7}"
                     f" {len(r.with_pictures):>8} {len(r.with_notes):>5} {len(r.blank_note_formulas):>9}"
                     f" {len(r.upper_cased):>5} {sum(n for _, n in r.joined):>7} {len(r.wrapped):>7}"
                     f" {len(r.overflowing):>8} {len(r.wide):>4} {len(r.wordy):>4} {len(r.long_code):>4}"
                     f" {len(r.long_slide_code):>4} {_figure_cell(r):>11} {len(r.small_figure_text):>9}"
                     f" {len(r.tangled_figures):>7} {len(r.crowded_figures):>9}")
    every = reports
    if len(every) > 1:
        lines.append(f"{'all decks':<24} {sum(len(r.slides) for r in every):>6}"
                     f" {sum(len(r.small_prose) for r in every):>8} {sum(len(r.small_code) for r in every):>7}"
                     f" {sum(len(r.with_pictures) for r in every):>8} {sum(len(r.with_notes) for r in every):>5}"
                     f" {sum(len(r.blank_note_formulas) for r in every):>9} {sum(len(r.upper_cased) for r in every):>5}"
                     f" {sum(n for r in every for _, n in r.joined):>7} {sum(len(r.wrapped) for r in every):>7}"
                     f" {sum(len(r.overflowing) for r in every):>8}")
    return "\n".join(lines)


def _figure_cell(r: DeckReport) -> str:
    summary = r.figure_text_summary()
    return "-" if summary is None else f"{summary[0]:.1f}/{summary[1]:.1f}"


def report(reports: list[DeckReport]) -> str:
    problems = [p for r in reports for p in r.problems()]
    return table(reports) + "\n\n" + ("\n".join(problems) if problems else "every deck fits its limits")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("only", nargs="*", help="notebook name prefixes, e.g. 01 03 (default: every deck)")
    parser.add_argument("--no-build", action="store_true", help="measure the decks already built")
    parser.add_argument("--out", type=Path, default=publish.BUILD / "slides", help="the decks' folder")
    args = parser.parse_args(argv)
    sources = [p for p in slide_metadata.walkthrough_notebooks()
               if not args.only or p.name.startswith(tuple(args.only))]
    if not args.no_build:
        publish.build_slides(sources, args.out)
    decks = [args.out / publish.deck_name(p) for p in sources if (args.out / publish.deck_name(p)).is_file()]
    if not decks:
        raise SystemExit(f"deck_report: no deck in {args.out}")
    reports = measure(decks)
    print(report(reports))
    return 1 if any(r.problems() for r in reports) else 0


if __name__ == "__main__":
    sys.exit(main())
