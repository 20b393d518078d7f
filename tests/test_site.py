"""The site as a book (tools/site/: Sphinx, MyST-NB, sphinx-book-theme), built once and read in Chromium.

What a reader relies on: the sidebar lists the course, search finds a word of a lesson, an answer is
a closed "Answer" control, a phone shows code inside its block with nothing off the page, every
lesson offers its notebook for download, and no page asks the network for anything. The student
site is the default: no instructor/ page unless asked for.
"""

from __future__ import annotations

import sys
from pathlib import Path
from urllib.parse import urlsplit

import nbformat
import pytest
from browser_support import CHROMIUM_ARGS, StaticServer, chromium_path, unavailable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools" / "site"))
sys.path.insert(0, str(ROOT / "tools"))

import build as site_build  # noqa: E402


def _cell(source, cell_type="markdown", **metadata):
    maker = nbformat.v4.new_markdown_cell if cell_type == "markdown" else nbformat.v4.new_code_cell
    return maker(source, metadata=metadata)


def test_collapsed_cells_become_closed_answer_controls():
    nb = nbformat.v4.new_notebook(cells=[
        _cell("# Title"),
        _cell("pip install", "code", tags=["colab-install"]),
        _cell("**Answer.** 42", tags=["collapsed", "answer"]),
        _cell("print(42)", "code", tags=["answer"], jupyter={"source_hidden": True}),
        _cell("<details><summary>Answer</summary>\n\nAlready one.\n\n</details>", tags=["answer"],
              jupyter={"source_hidden": True}),
        _cell("shown"),
    ])
    out = site_build.site_notebook(nb)
    assert [c.source for c in out.cells][0] == "# Title"
    assert not any("pip install" in c.source for c in out.cells), "the Colab cell stays off the page"
    assert out.cells[1].source.startswith("<details>\n<summary>Answer</summary>")
    assert "hide-input" in out.cells[2].metadata.tags
    assert out.cells[2].metadata.mystnb["code_prompt_show"] == "Answer"
    assert out.cells[3].source.count("<details>") == 1, "a cell written as <details> is not wrapped twice"
    assert out.cells[4].source == "shown"
    assert nb.cells[2].source == "**Answer.** 42", "the notebook itself is untouched"


def test_the_index_lists_lessons_exercises_and_documents_and_solutions_only_when_asked():
    student = site_build.index_page("T", with_solutions=False)
    for caption in (":caption: Lessons", ":caption: Exercises", ":caption: Documents"):
        assert caption in student
    assert "instructor/" not in student
    assert "notebooks/01-i-am-happy" in student and "docs/reference" in student
    assert "instructor/solutions/" in site_build.index_page("T", with_solutions=True)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    site_build.build(out, with_solutions=False, stage_dir=tmp_path_factory.mktemp("site-src"))
    return out


WIDGET_PAGE = "notebooks/01-i-am-happy.html"  # stored figures, formulas and an explorer


def _page_of(site: Path, source: Path) -> Path:
    return site / source.relative_to(ROOT).with_suffix(".html")


def test_an_explorer_shows_as_its_described_picture_and_no_page_loads_a_widget_manager(site):
    """A static page has no kernel: an explorer is its stored picture with its description, not dead sliders."""
    import publish

    shown = 0
    for source in site_build.lessons() + site_build.exercises():
        page = _page_of(site, source).read_text(encoding="utf-8")
        assert "widget-state+json" not in page and "embed-amd.js" not in page, source.name
        if publish.has_widgets(nbformat.read(source, as_version=4)):
            shown += 1
            assert 'class="described-figure" alt="' in page, source.name
    assert shown >= 3  # 01, 07 and 12 at least show an explorer


def test_no_page_shows_the_colab_set_up_cell(site):
    """The Colab set-up cell does nothing on the web: a page starts with the lesson."""
    for source in site_build.lessons() + site_build.exercises():
        page = _page_of(site, source).read_text(encoding="utf-8")
        assert "Google Colab only" not in page and "google.colab" not in page, source.name


def test_every_document_is_a_page_of_the_site(site):
    """docs/*.md, exercises/README, CONTRIBUTING, CHANGELOG and the licence are pages, linked from the start page."""
    import html as html_module
    import re

    start = (site / "index.html").read_text(encoding="utf-8")
    expected = {"docs/reference.md", "docs/teaching.md", "docs/glossary.md", "docs/accessibility.md",
                "docs/sources.md", "docs/classroom.md", "exercises/README.md", "CONTRIBUTING.md", "CHANGELOG.md"}
    assert {d.relative_to(ROOT).as_posix() for d in site_build.documents()} >= expected
    for doc in site_build.documents():
        rel = doc.relative_to(ROOT).with_suffix(".html").as_posix()
        page = (site / rel).read_text(encoding="utf-8")
        heading = next(line for line in doc.read_text(encoding="utf-8").splitlines() if line.startswith("# "))
        def words(text):  # Sphinx writes straight quotes as curly ones
            return re.sub(r"[`*\"'\u201c\u201d\u2018\u2019]", "", text)

        assert '<html lang="en"' in page and words(heading[2:]).strip() in words(html_module.unescape(page)), rel
        assert f'href="{rel}"' in start, f"the start page does not link {rel}"
    assert "MIT License" in (site / "LICENSE.html").read_text(encoding="utf-8")
    assert 'href="LICENSE.html"' in start


def test_the_student_site_publishes_every_lesson_and_no_instructor_page(site):
    for path in site_build.lessons() + site_build.exercises():
        assert (site / path.relative_to(ROOT)).with_suffix(".html").is_file(), path
        download = site / "_sources" / path.relative_to(ROOT)
        assert download.read_bytes() == path.read_bytes(), "Download .ipynb gives the repository's notebook"
    assert not (site / "instructor").exists()
    lesson = (site / "notebooks" / "01-i-am-happy.html").read_text(encoding="utf-8")
    assert ".ipynb" in lesson and "_sources/notebooks/01-i-am-happy.ipynb" in lesson
    assert "colab.research.google.com" not in lesson, "no launch button while the repository is unnamed"
    assert "<summary" in lesson and ">Answer<" in lesson
    assert 'class="described-figure"' in lesson or 'alt="' in lesson


@pytest.fixture(scope="module")
def browser():
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


def _context(browser, offsite, **kwargs):
    context = browser.new_context(**kwargs)
    context.on("request", lambda r: urlsplit(r.url).scheme in ("http", "https")
               and urlsplit(r.url).hostname != "127.0.0.1" and offsite.append(r.url))
    return context


@pytest.mark.browser
def test_sidebar_search_and_answers_in_the_browser(site, browser):
    offsite = []
    context = _context(browser, offsite, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    with StaticServer(site) as server:
        page.goto(server.url("notebooks/01-i-am-happy.html"), wait_until="networkidle")
        sidebar = page.locator("nav.bd-docs-nav")
        captions = [t.strip() for t in sidebar.locator(".caption-text").all_inner_texts()]
        assert captions == ["Lessons", "Exercises", "Documents"]
        links = sidebar.locator("a").evaluate_all("(as) => as.map((a) => a.getAttribute('href'))")
        assert sum(h.endswith(".html") for h in links) >= len(site_build.lessons()) + len(site_build.exercises())
        # per-page contents and previous/next
        assert page.locator(".page-toc a.nav-link").count() > 3
        assert page.locator("a.left-prev").count() == 1 and page.locator("a.right-next").count() == 1
        # an answer starts closed and opens on a click
        answer = page.locator("details", has=page.locator("summary", has_text="Answer")).first
        assert answer.evaluate("(d) => d.open") is False
        answer.locator("summary").first.click()
        assert answer.evaluate("(d) => d.open") is True
        # the search page finds a lesson by a word of its prose
        page.goto(server.url("search.html?q=softmax"), wait_until="networkidle")
        page.wait_for_selector("#search-results li a", timeout=60_000)
        found = page.locator("#search-results li a").evaluate_all("(as) => as.map((a) => a.getAttribute('href'))")
        assert any("notebooks/" in h for h in found), found
    context.close()
    assert offsite == [], f"the site asked the network for {offsite}"


@pytest.mark.browser
def test_a_phone_shows_code_inside_its_block(site, browser):
    offsite = []
    context = _context(browser, offsite, viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = context.new_page()
    with StaticServer(site) as server:
        for name in ("notebooks/01-i-am-happy.html", "notebooks/11-memory-efficient-attention.html",
                     "docs/reference.html"):
            page.goto(server.url(name), wait_until="networkidle")
            page.evaluate("() => window.MathJax && MathJax.startup ? MathJax.startup.promise : null")
            assert page.evaluate("() => document.documentElement.scrollWidth") <= 390, name
            wide = page.evaluate("""() => [...document.querySelectorAll('article pre')]
                .filter((p) => p.getBoundingClientRect().right > window.innerWidth + 1).length""")
            assert wide == 0, f"{name}: {wide} code blocks run off the page"
        # the sidebar opens from its button on a phone
        page.goto(server.url("index.html"), wait_until="networkidle")
        page.locator("button.primary-toggle:visible").first.click()
        page.wait_for_timeout(400)
        assert page.locator("nav.bd-docs-nav a", has_text="I am happy").first.is_visible()
    context.close()
    assert offsite == []


@pytest.mark.browser
def test_a_lesson_shows_its_figures_formulas_and_a_widget_snapshot(site, browser):
    """01's page as a reader sees it: every figure loaded (the explorer's picture among them), the formulas typeset."""
    offsite, errors = [], []
    context = _context(browser, offsite, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.on("pageerror", lambda e: errors.append(str(e)))
    with StaticServer(site) as server:
        page.goto(server.url(WIDGET_PAGE), wait_until="networkidle")
        # MathJax typesets after its start-up: wait for the first formula, not for the start-up's promise
        page.wait_for_function("() => document.querySelectorAll('article mjx-container').length > 0", timeout=60_000)
        explorer = page.locator('article img.described-figure[alt^="Attention explorer"]').first
        explorer.wait_for(state="visible")
        assert page.evaluate("(img) => img.complete && img.naturalWidth > 300", explorer.element_handle())
        figures = page.locator("article img.described-figure")
        assert figures.count() >= 3
        assert page.evaluate("() => [...document.querySelectorAll('article img.described-figure')]"
                             ".every((img) => img.complete && img.naturalWidth > 0 && img.alt.length > 20)")
    context.close()
    assert errors == [] and offsite == [], (errors, offsite)


def test_launch_buttons_appear_once_the_repository_is_named(monkeypatch):
    import runpy

    import navigation

    conf = ROOT / "tools" / "site" / "conf.py"
    monkeypatch.setattr(navigation, "REPOSITORY", None)
    assert "launch_buttons" not in runpy.run_path(str(conf))["html_theme_options"]
    monkeypatch.setattr(navigation, "REPOSITORY", "owner/name")
    options = runpy.run_path(str(conf))["html_theme_options"]
    assert options["repository_url"] == "https://github.com/owner/name"
    assert options["launch_buttons"]["colab_url"] == "https://colab.research.google.com"
    assert options["launch_buttons"]["binderhub_url"] == "https://mybinder.org"


def test_no_link_of_the_site_leads_nowhere(site):
    """Every relative link reaches a file, and its #anchor an id of that page (Jupyter's anchors included)."""
    import html
    import re
    from urllib.parse import unquote

    pages = [p for p in site.rglob("*.html") if "_static" not in p.parts]
    ids = {p.resolve(): set(re.findall(r'id="([^"]+)"', p.read_text(encoding="utf-8"))) for p in pages}
    bad = []
    for p in pages:
        for href in re.findall(r'href="([^"]+)"', p.read_text(encoding="utf-8")):
            href = html.unescape(href).split("?")[0]
            if re.match(r"[a-z][a-z0-9+.-]*:", href):
                continue
            path, _, anchor = href.partition("#")
            target = (p.parent / unquote(path)).resolve() if path else p.resolve()
            if not target.exists() or (anchor and target.suffix == ".html" and unquote(anchor) not in ids[target]):
                bad.append(f"{p.relative_to(site)}: {href}")
    assert bad == [], bad[:20]


def test_a_jupyter_anchor_is_added_and_a_dead_same_page_link_unwrapped():
    page = ('<section id="explore-it"><h2>Explore it<a class="headerlink" href="#explore-it">#</a></h2>'
            '<a class="reference internal" href="#CITATION.cff">the citation</a>'
            '<a class="reference internal" href="#explore-it">up</a></section>')
    fixed = site_build.fix_page(page)
    assert '<span id="Explore-it"></span>' in fixed
    assert "the citation" in fixed and 'href="#CITATION.cff"' not in fixed
    assert 'href="#explore-it">up</a>' in fixed
