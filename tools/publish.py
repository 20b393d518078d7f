"""Build the lecture slide decks, working offline.

    python tools/publish.py slides [NOTEBOOK ...]   reveal.js decks into build/slides/ (make slides)

The site is a book of its own (tools/site/build.py, ``make site``: Sphinx, MyST-NB and
sphinx-book-theme); it uses this module's recorded widget state (:func:`with_widget_state`),
titles (:func:`title_of`) and collapsed-cell summaries (:func:`collapse_summary`).

The decks are built from a slide rendering (``--medium slide``, the default): each
notebook is run once more, on a copy, with ``ATTENTION_MEDIUM=slide``, so that every
figure is drawn for the slide (helpers/style.py: 16:9, text at least 14 pt) and its
``<img>`` carries its texts' cap heights for tools/deck_report.py; two kernels run at
a time, and ``make slides`` takes about 3 minutes on a shared 2-core machine
(``--medium stored`` shows the stored outputs, ``--medium notebook`` re-runs them as
the notebook page draws them, for a comparison). A notebook whose outputs hold a
widget is run once more in a fresh kernel, on a copy, to record the widgets' state,
which ``make notebooks`` leaves out of the stored files so that they re-run without a
diff. The copies are cached in ``build/executed/`` and reused while the notebook and
``helpers/`` (its modules and its data, ``helpers/data/``) are unchanged.

Every script a deck loads (reveal.js, RequireJS, MathJax 3, ipywidgets' HTML
manager) is copied from ``build/vendor/`` (see tools/web_assets.py) into the
build's ``_static/`` folder and linked by a relative address: a build can be
zipped, copied to a USB stick or served by any static web server, and no page
asks the network for anything. Links between notebooks are rewritten to the
decks (or to the list of decks).

Slide decks follow each cell's slide type (tools/slide_metadata.py); decks
open with reveal.js keyboard navigation (arrows, space, ``s`` for the speaker
view, whose notes plugin is vendored too). "notes" cells become the speaker
notes. Collapsed cells (tag ``collapsed`` or ``jupyter.source_hidden`` /
``outputs_hidden``: document checks and answers) are never slides: collapsed
prose goes to the speaker notes, collapsed code is left out. A code cell tagged
``slides-hide-code`` (plotting code that is not the point) shows only its output
on a slide; the notebook and the site keep its code. Widgets appear as the
snapshot of their saved state. ``python tools/deck_report.py`` measures the built
decks in Chromium (slides, slides that overflow, slides with speaker notes).
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import html
import os
import re
import shutil
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import navigation  # noqa: E402
import slide_metadata  # noqa: E402
import slim_notebooks  # noqa: E402
import web_assets  # noqa: E402

BUILD = ROOT / "build"
EXECUTED = BUILD / "executed"
TEMPLATES = ROOT / "web" / "templates"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
# Relative links to notebooks (optionally with an #anchor) in the exported HTML.
NOTEBOOK_LINK = re.compile(r'(href=")(?![a-z][a-z0-9+.-]*:|#|/)([^"#]*?)\.ipynb((?:#[^"]*)?")')


# ---------------------------------------------------------------------------
# What gets published
# ---------------------------------------------------------------------------


def title_of(nb, default: str) -> str:
    """The notebook's title (its first ``# `` heading, as tools/navigation.py reads it), as plain text."""
    try:
        return re.sub(r"[*_`$\\]", "", navigation.title_of(nb)).strip()
    except ValueError:  # no title
        return default


def has_widgets(nb) -> bool:
    return any(WIDGET_VIEW in out.get("data", {}) for cell in nb.cells for out in cell.get("outputs", []))


# ---------------------------------------------------------------------------
# Widget state: run a copy
# ---------------------------------------------------------------------------


def _fingerprint(path: Path) -> str:
    """A hash of everything a notebook's outputs depend on."""
    h = hashlib.sha256()
    package = sorted(p for p in (ROOT / "helpers").rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    for dep in [path, *package]:  # the package's modules and its data (helpers/data/)
        h.update(dep.name.encode())
        h.update(dep.read_bytes())
    return h.hexdigest()


def _kernel_environment() -> None:
    """The kernel is this interpreter's, with one BLAS thread (as make notebooks runs them)."""
    os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")


def with_widget_state(path: Path, *, cache: Path = EXECUTED):
    """The notebook at ``path``, re-run with its widgets' state saved when it has widgets."""
    nb = nbformat.read(path, as_version=4)
    if not has_widgets(nb):
        return nb
    return executed(path, cache=cache)


# The media a deck can be built from (helpers/style.py): "slide" re-runs every notebook with
# ATTENTION_MEDIUM=slide, so that each figure is drawn for the slide; "notebook" re-runs it as the
# notebook page draws it, recording its text sizes (to measure the decks as they were); "stored"
# shows the stored outputs (a notebook with widgets is still re-run, for their state).
MEDIA = ("slide", "notebook", "stored")


def executed(path: Path, *, cache: Path = EXECUTED, medium: str | None = None):
    """``path`` run top to bottom in a fresh kernel, on a copy, drawing for ``medium``; cached while unchanged.

    The widgets' state is recorded. In the "slide" medium the kernel has
    ``ATTENTION_MEDIUM=slide``; a run for a medium records its figures' text sizes
    (``ATTENTION_CAP_PX=1``, helpers/figures.py); ``medium=None`` runs the notebook
    as it is (the site's and the stored decks' widget state). The copy is cached in
    ``cache`` (a medium's in ``cache/<medium>/``), keyed by the notebook and ``helpers/``.
    """
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    rel = path.resolve().relative_to(ROOT)
    folder = cache / medium if medium else cache
    cached = folder / rel
    key = cached.with_suffix(".key")
    fingerprint = _fingerprint(path) + (f"-{medium}" if medium else "")
    if cached.exists() and key.exists() and key.read_text() == fingerprint:
        return nbformat.read(cached, as_version=4)
    _kernel_environment()
    print(f"publish: running {rel}" + (f" ({medium} medium)" if medium else " to record its widgets"), flush=True)
    # The medium travels in the kernel's own environment, never in this process's: two runs go
    # at once (_run_all's threads), and a variable set here would leak into the next kernel
    # this process starts (a test's nbval kernel drew its figures for the slide).
    env = {var: value for var, value in os.environ.items()
           if var not in ("ATTENTION_MEDIUM", "ATTENTION_CAP_PX")}
    if medium:
        env["ATTENTION_MEDIUM"] = medium
        env["ATTENTION_CAP_PX"] = "1"
    client = NotebookClient(
        nb,
        kernel_name="python3",
        timeout=900,
        record_timing=False,
        coalesce_streams=True,
        store_widget_state=True,
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute(env=env)
    if has_widgets(nb) and WIDGET_STATE not in nb.metadata.get("widgets", {}):
        raise RuntimeError(f"{rel}: the run recorded no widget state")
    # a figure that fails to draw (in the display formatter) is an error output, not an exception
    failed = [i for i, cell in enumerate(nb.cells) if "raises-exception" not in slide_metadata._tags(cell)
              and any(o.get("output_type") == "error" for o in cell.get("outputs", []))]
    if failed:
        raise RuntimeError(f"{rel}: cells {failed} failed in the {medium or 'stored'} run")
    cached.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, cached)
    key.write_text(fingerprint)
    return nb


def _run_all(paths: list[Path], medium: str) -> dict[Path, object]:
    """Every notebook of ``paths`` executed for ``medium``, two kernels at a time (the machine's cores)."""
    from concurrent.futures import ThreadPoolExecutor

    def inside(path: Path) -> bool:
        return path.resolve().is_relative_to(ROOT)

    # A notebook outside the repository (a test's own small deck) holds its outputs and may not
    # run on its own: it is shown as stored.
    runs = {path: with_widget_state(path) for path in paths if medium == "stored" or not inside(path)}
    todo = [path for path in paths if path not in runs]
    if todo:
        workers = max(1, min(int(os.environ.get("PUBLISH_KERNELS", "2")), len(todo)))
        # the slowest first, so that the two kernels end together (sizes as a proxy for run time)
        order = sorted(todo, key=lambda p: -p.stat().st_size)
        with ThreadPoolExecutor(workers) as pool:
            runs.update(zip(order, pool.map(lambda p: executed(p, medium=medium), order)))
    return {path: runs[path] for path in paths}


# ---------------------------------------------------------------------------
# Collapsed cells: out of the decks (the site shows them as closed controls: tools/site/build.py)
# ---------------------------------------------------------------------------

DOCUMENT_CHECK = re.compile(r"\bdocument\b|\bcheck\b|\bslips?\b|\bfigures?\b|\bexact\b", re.IGNORECASE)


def figure_alt(nb):
    """Give each described figure an image/png output with its alt text in the metadata (in place); return ``nb``.

    In a notebook a described figure (helpers/figures.py) is a ``text/html``
    ``<img class="described-figure" alt=...>`` that holds the one copy of its PNG
    (tools/slim_notebooks.py). The pages render an image/png, as for any figure,
    with the alt that the templates read from the output's metadata
    (``metadata["image/png"]["alt"]``): so the PNG is decoded from the ``<img>``
    into ``image/png`` (an output saved before issue 22 has both; its own
    image/png is kept), the alt goes to the metadata, and the text/html goes.
    """
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            found = slim_notebooks.described_figure(output)
            if found is None:
                continue
            alt, png = found
            output.data.setdefault("image/png", png)
            meta = output.setdefault("metadata", {}).setdefault("image/png", {})
            meta["alt"] = alt
            caps = slim_notebooks.DESCRIBED_FIGURE.match(slim_notebooks._text(output.data["text/html"]))
            if caps and caps.group("caps"):
                meta["cap_px"] = caps.group("caps")  # its texts' cap heights, PNG pixels (helpers/style.py)
            if caps and caps.group("overlaps"):  # its texts that run into each other, and its panels
                meta["overlaps"], meta["panels"] = caps.group("overlaps"), caps.group("panels")
            del output.data["text/html"]
    return nb


def deck_notebook(nb):
    """A copy of ``nb`` as the deck shows it: collapsed cells in the speaker notes (prose) or left out (code)."""
    nb = copy.deepcopy(nb)
    slide_metadata.hide(nb.cells, only_collapsed=True)
    return figure_alt(nb)


def _heading_before(cells, i) -> str:
    """The last markdown heading at or before cell ``i``."""
    for cell in reversed(cells[: i + 1]):
        if cell.cell_type == "markdown":
            headings = [line for line in cell.source.splitlines() if line.startswith("#")]
            if headings:
                return headings[-1]
    return ""


def collapse_summary(cells, i) -> str:
    """What the expandable block starting at cell ``i`` says it holds."""
    cell = cells[i]
    if "answer" in slide_metadata._tags(cell):
        return "Show the answer"
    if DOCUMENT_CHECK.search(_heading_before(cells, i)):
        return "Show the document check"
    return "Show the code" if cell.cell_type == "code" else "Show the details"


# ---------------------------------------------------------------------------
# Export
# ---------------------------------------------------------------------------


def _copy_static(out: Path) -> None:
    vendor = web_assets.ensure(quiet=True)
    # axe-core is the accessibility test's (tests/test_accessibility.py), not the pages'
    shutil.copytree(vendor, out / "_static", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns(".packages.json", "axe-core"))


def _resources(nb, name: str, static: str) -> dict:
    return {
        "metadata": {"name": title_of(nb, name)},
        "mathjax3_url": f"{static}/mathjax/es5/tex-chtml-full.js",
        "widgets_assets_url": f"{static}/@jupyter-widgets/html-manager/dist/",
    }


def _configure(exporter, static: str) -> None:
    exporter.require_js_url = f"{static}/requirejs/require.js"
    exporter.widget_renderer_url = f"{static}/@jupyter-widgets/html-manager/dist/embed-amd.js"
    exporter.exclude_anchor_links = True


# A code cell tagged so shows only its output on a slide (plotting code that is not the point):
# the notebook and the site keep the code.
SLIDES_HIDE_CODE = "slides-hide-code"


def slides_exporter(static: str):
    from nbconvert import SlidesExporter
    from nbconvert.preprocessors import TagRemovePreprocessor

    exporter = SlidesExporter(template_name="slides", extra_template_basedirs=[str(TEMPLATES)])
    exporter.register_preprocessor(TagRemovePreprocessor(remove_input_tags=(SLIDES_HIDE_CODE,)), enabled=True)
    _configure(exporter, static)
    exporter.reveal_url_prefix = f"{static}/reveal.js"
    exporter.reveal_theme = "white"
    exporter.reveal_transition = "none"
    exporter.reveal_width = "1100"
    exporter.reveal_height = "760"
    return exporter


def _remove_stale(out: Path, keep: list[Path]) -> None:
    """Delete the pages of an earlier build that this one did not write (a renamed notebook's)."""
    keep = {p.resolve() for p in keep}
    for page in out.rglob("*.html"):
        if "_static" not in page.relative_to(out).parts and page.resolve() not in keep:
            page.unlink()


def _page_shell(title: str, body: str, nav: str = "") -> str:
    """A plain page (the list of decks) in the same look as the notebooks.

    ``nav``, when given, is a navigation bar above the page's ``<main>``. Code blocks wrap
    rather than scroll: a scrolling block would need to be reachable from the keyboard.
    """
    if nav:
        body = f'<header>\n<nav aria-label="Site">{nav}</nav>\n</header>\n<main>\n{body}\n</main>'
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\" />\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1.0\">\n"
        f"<link rel=\"icon\" href=\"data:,\">\n<title>{html.escape(title)}</title>\n"
        "<style>body{font-family:system-ui,sans-serif;max-width:52em;margin:2em auto;padding:0 1em;line-height:1.5}"
        "code,pre{background:#f3f3f3}pre{padding:.6em;white-space:pre-wrap;overflow-wrap:anywhere}"
        "table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:.2em .5em}a{color:#0645ad}"
        "header nav{border-bottom:1px solid #ccc;padding-bottom:.5em;margin-bottom:1em}</style>\n"
        f"</head>\n<body>\n{body}\n</body>\n</html>\n"
    )


# ---------------------------------------------------------------------------
# Slides
# ---------------------------------------------------------------------------


def deck_name(path: Path) -> str:
    return path.stem + ".slides.html"


def build_slides(paths: list[Path] | None = None, out: Path = BUILD / "slides", *, medium: str = "slide") -> list[Path]:
    """One reveal.js deck per walkthrough notebook, plus an index.html listing them.

    ``medium`` (:data:`MEDIA`): "slide", the default, re-runs each notebook with every
    figure drawn for the slide (helpers/style.py); the stored notebooks do not change.
    """
    if medium not in MEDIA:
        raise ValueError(f"medium must be one of {MEDIA}, not {medium!r}")
    whole = not paths  # a full build also removes the decks of notebooks that no longer exist
    paths = [Path(p).resolve() for p in (paths or slide_metadata.walkthrough_notebooks())]
    out.mkdir(parents=True, exist_ok=True)
    _copy_static(out)
    problems = [p for path in paths for p in slide_metadata.problems(path, shown_cells=False)]
    if problems:
        raise SystemExit("publish: cells without a slide type (run tools/slide_metadata.py):\n" + "\n".join(problems))
    decks = {path.stem for path in paths} | {p.name[: -len(".slides.html")] for p in out.glob("*.slides.html")}
    static = "_static"  # every deck sits next to the _static/ folder
    exporter = slides_exporter(static)
    built, items = [], []
    runs = _run_all(paths, medium)
    for path in paths:
        nb = deck_notebook(runs[path])
        body, _ = exporter.from_notebook_node(nb, resources=_resources(nb, path.stem, static))

        def relink(m, decks=decks):
            stem = Path(m.group(2)).name
            if stem in decks:
                return m.group(1) + f"{stem}.slides.html" + m.group(3)
            return m.group(1) + 'index.html"'  # no deck (the index, an exercise): the list of decks

        body = NOTEBOOK_LINK.sub(relink, body)
        target = out / deck_name(path)
        target.write_text(body, encoding="utf-8")
        built.append(target)
        print(f"publish: {out.name}/{target.name}", flush=True)
    if whole:
        _remove_stale(out, [*built, out / "index.html"])
    for deck in sorted(out.glob("*.slides.html")):
        source = ROOT / "notebooks" / (deck.name[: -len(".slides.html")] + ".ipynb")
        if source.exists():
            title = title_of(nbformat.read(source, as_version=4), source.stem)
            items.append(f'<li><a href="{deck.name}">{html.escape(title)}</a></li>')
    body = (
        "<h1>Attention, Step by Step: slide decks</h1>\n"
        "<p>One deck per notebook. Arrow keys or space move on; <kbd>s</kbd> opens the speaker view; "
        "<kbd>Esc</kbd> shows the overview. Widgets show their saved state: switch to JupyterLab to move sliders.</p>\n"
        f"<ol>\n{chr(10).join(items)}\n</ol>"
    )
    (out / "index.html").write_text(_page_shell("Attention, Step by Step: slide decks", body), encoding="utf-8")
    return built


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["slides"], help="slides (the site: tools/site/build.py, make site)")
    parser.add_argument("notebooks", nargs="*", type=Path, help="only these notebooks (default: all)")
    parser.add_argument("--out", type=Path, help="the output folder (default build/slides)")
    parser.add_argument("--medium", choices=MEDIA, default="slide",
                        help="slides: draw the figures for the slide (default), the notebook page, or as stored")
    args = parser.parse_args(argv)
    built = build_slides(args.notebooks or None, args.out or BUILD / "slides", medium=args.medium)
    print(f"publish: {len(built)} pages in {(args.out or BUILD / args.what)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
