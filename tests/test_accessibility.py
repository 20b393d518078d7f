"""WCAG 2.1 AA on every page of the site and every slide of every deck, checked by axe-core (issue 19).

The site and the decks are built into a temporary folder, served from loopback, and
opened in Debian's Chromium. axe-core (vendored and pinned by hash in web/packages.json,
never copied into a build) runs with the WCAG 2.0 and 2.1 level A and AA rules: on each
site page as a whole, and on each slide of each deck with every fragment shown (the
slides are walked as tools/deck_report.py walks them), plus once on the deck page itself.

Every violation fails the test unless it is listed in THIRD_PARTY below, by rule and by
the element it is on, with the reason it cannot be fixed from this project. No rule is
switched off as a whole. Images must carry a real alt text: never empty, never
nbconvert's placeholder.
"""

import json
import re
from pathlib import Path

import pytest
from browser_support import CHROMIUM_ARGS, StaticServer, chromium_path, unavailable

ROOT = Path(__file__).resolve().parent.parent
AXE = ROOT / "build" / "vendor" / "axe-core" / "axe.min.js"
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
TIMEOUT_MS = 120_000
PLACEHOLDER = "No description has been provided for this image"

# (rule id, CSS selector pattern of the element) -> why it is not ours to fix.
THIRD_PARTY = {
}

pytestmark = pytest.mark.browser

RUN_AXE = """async ([context, tags]) => {
    const target = context === null ? document : context;
    const result = await axe.run(target, {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']});
    return result.violations.map((v) => ({
        rule: v.id, impact: v.impact, help: v.help,
        nodes: v.nodes.map((n) => ({target: n.target.join(' '), html: n.html.slice(0, 160)})),
    }));
}"""

WALK_JS = """async (tags) => {
    const frame = () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
    const found = [];
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
        const result = await axe.run(slide, {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']});
        for (const v of result.violations) {
            found.push({slide: n + 1, rule: v.id, help: v.help,
                        nodes: v.nodes.map((x) => ({target: x.target.join(' '), html: x.html.slice(0, 160)}))});
        }
    }
    return found;
}"""

NO_TRANSITIONS = "*, *::before, *::after { transition: none !important; animation: none !important; }"

READY_JS = """() => window.Reveal && Reveal.isReady() && window.MathJax && MathJax.startup
    && MathJax.startup.promise && [...document.images].every((i) => i.complete)"""

IMAGES_JS = """() => [...document.images].map((i) => ({alt: i.getAttribute('alt'), src: i.src.slice(0, 40)}))"""


def _allowed(rule, target):
    return any(rule == r and re.search(pattern, target) for (r, pattern) in THIRD_PARTY)


def _problems(violations, where):
    bad = []
    for v in violations:
        for node in v["nodes"]:
            if not _allowed(v["rule"], node["target"]):
                bad.append(f"{where}: {v['rule']} ({v['help']}) on {node['target']}: {node['html']}")
    return bad


@pytest.fixture(scope="module")
def browser():
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    if not AXE.is_file():
        pytest.skip("axe-core is missing: run `python tools/web_assets.py` (make test does)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    import sys

    sys.path.insert(0, str(ROOT / "tools"))
    import publish

    sys.path.insert(0, str(ROOT / "tools" / "site"))
    import build as site_build  # the book (tools/site/build.py), with the solutions' pages too

    site = tmp_path_factory.mktemp("a11y-site")
    site_build.build(site, with_solutions=True, stage_dir=tmp_path_factory.mktemp("a11y-site-src"))
    slides = tmp_path_factory.mktemp("a11y-slides")
    decks = publish.build_slides(None, slides)
    return site, slides, decks


def _open(browser, root, name):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    server = StaticServer(root).__enter__()
    page.goto(server.url(name), wait_until="networkidle")
    return context, page, server


def test_every_site_page_meets_wcag_21_aa(browser, builds):
    site, _, _ = builds
    pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html") if "_static" not in p.parts)
    assert len(pages) > 20
    problems, report = [], {}
    for name in pages:
        context, page, server = _open(browser, site, name)
        try:
            page.wait_for_timeout(300)  # saved widgets render after load
            page.add_script_tag(path=str(AXE))
            violations = page.evaluate(RUN_AXE, [None, TAGS])
            images = page.evaluate(IMAGES_JS)
        finally:
            server.__exit__(None, None, None)
            context.close()
        report[name] = sum(len(v["nodes"]) for v in violations)
        problems += _problems(violations, name)
        problems += [f"{name}: image without a real alt ({i['src']})" for i in images
                     if not (i["alt"] or "").strip() or PLACEHOLDER in (i["alt"] or "")]
    _write_report("site", report, problems)
    assert problems == [], "\n".join(problems[:60]) + f"\n... {len(problems)} in all"


def test_every_slide_of_every_deck_meets_wcag_21_aa(browser, builds):
    _, slides, decks = builds
    assert len(decks) >= 16
    problems, report = [], {}
    for deck in decks:
        context, page, server = _open(browser, slides, deck.name)
        try:
            page.wait_for_function(READY_JS)
            page.add_script_tag(path=str(AXE))
            # A fragment fades in (an opacity transition): checked half-way, its text has too little
            # contrast. The slide is checked as it ends up, so no transition is left to run.
            page.add_style_tag(content=NO_TRANSITIONS)
            page.wait_for_timeout(300)
            violations = page.evaluate(WALK_JS, TAGS)
            whole = page.evaluate(RUN_AXE, [None, TAGS])  # page-level rules: title, language, landmarks
            images = page.evaluate(IMAGES_JS)
        finally:
            server.__exit__(None, None, None)
            context.close()
        report[deck.name] = sum(len(v["nodes"]) for v in violations + whole)
        for v in violations:
            problems += _problems([v], f"{deck.name} slide {v['slide']}")
        problems += _problems(whole, deck.name)
        problems += [f"{deck.name}: image without a real alt ({i['src']})" for i in images
                     if not (i["alt"] or "").strip() or PLACEHOLDER in (i["alt"] or "")]
    _write_report("decks", report, problems)
    assert problems == [], "\n".join(sorted(set(problems))[:60]) + f"\n... {len(problems)} in all"


def _write_report(kind, report, problems):
    out = ROOT / "test-artifacts" / "accessibility"
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{kind}.json").write_text(json.dumps({"elements": report, "problems": problems}, indent=1))
