"""Build the static site as a book: Sphinx, MyST-NB (stored outputs) and sphinx-book-theme, offline.

    python tools/site/build.py [--solutions] [--out build/site]

The notebooks are shown as stored: MyST-NB executes nothing (``nb_execution_mode = "off"``,
tools/site/conf.py), and no notebook is run to build the site. An explorer (a widget) shows as
the described picture it stores beside its widget view: a static page has no kernel to move its
sliders, and the picture carries its text description.

The pages are staged in build/site-src/ in the repository's own layout (notebooks/,
exercises/student/, docs/, ...), so a relative link between two published files works as it does
on GitHub; a link to a file the site does not publish is left as text by MyST. Staging changes
each notebook's copy only in what a web page needs:

- the Colab set-up cell (tag ``colab-install``) goes: a page starts with the lesson;
- collapsed cells (tag ``collapsed`` or ``jupyter.source_hidden``/``outputs_hidden``: answers,
  document checks) become closed controls: a prose cell is wrapped in
  ``<details><summary>Answer</summary>`` (or "Document check" / "Details"), a code cell gets
  MyST-NB's ``hide-input`` (``hide-cell`` when its outputs are hidden too) with the same label.
  Cells already written as ``<details>`` markdown are left alone: MyST passes them through.

The "Download .ipynb" button gives the repository's notebook, not the staged copy. The student
site is the default; ``--solutions`` (``make site SOLUTIONS=1``) adds instructor/solutions/.
"""

from __future__ import annotations

import argparse
import copy
import html
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import publish  # noqa: E402  (title_of, collapse_summary)
import slide_metadata  # noqa: E402
import web_assets  # noqa: E402

BUILD = ROOT / "build"
STAGE = BUILD / "site-src"
LICENSE_PAGE = "LICENSE.md"
DETAILS = re.compile(r"^\s*<details", re.IGNORECASE | re.MULTILINE)  # a control anywhere: the cell says what it hides


def lessons() -> list[Path]:
    return sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))


def exercises() -> list[Path]:
    return sorted((ROOT / "exercises" / "student").glob("*.ipynb"))


def solutions() -> list[Path]:
    return sorted((ROOT / "instructor" / "solutions").glob("*.ipynb"))


def documents() -> list[Path]:
    """docs/*.md, exercises/README.md, CONTRIBUTING.md, CHANGELOG.md (LICENSE is added as a text page)."""
    return sorted((ROOT / "docs").glob("*.md")) + [
        ROOT / "exercises" / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "CHANGELOG.md"]


def label(cells, i: int) -> str:
    """The summary of a closed control: "Answer", "Document check", "Code" or "Details"."""
    summary = publish.collapse_summary(cells, i)
    return {"Show the answer": "Answer", "Show the document check": "Document check",
            "Show the code": "Code"}.get(summary, "Details")


def site_notebook(nb):
    """A copy of ``nb`` as the site shows it (see the module's docstring)."""
    nb = copy.deepcopy(nb)
    nb.cells = [c for c in nb.cells if "colab-install" not in slide_metadata._tags(c)]
    cells = nb.cells
    for i, cell in enumerate(cells):
        if not slide_metadata.is_collapsed(cell):
            continue
        text = label(cells, i)
        if cell.cell_type == "markdown":
            if not DETAILS.search(cell.source):
                cell.source = f"<details>\n<summary>{text}</summary>\n\n{cell.source}\n\n</details>"
        elif cell.cell_type == "code":
            hidden = cell.metadata.get("jupyter", {})
            tags = cell.metadata.setdefault("tags", [])
            both = hidden.get("outputs_hidden") or ("collapsed" in tags and not hidden.get("source_hidden"))
            tags.append("hide-cell" if both else "hide-input")
            cell.metadata["mystnb"] = {"code_prompt_show": text, "code_prompt_hide": text}
        # JupyterLab's own collapse would be read again by nothing here; drop it so no theme hides twice
        cell.metadata.pop("jupyter", None)
    return nb


def index_page(title: str, with_solutions: bool) -> str:
    def toc(caption: str, paths: list[Path]) -> str:
        entries = "\n".join(p.relative_to(ROOT).with_suffix("").as_posix() for p in paths)
        return f"```{{toctree}}\n:caption: {caption}\n:maxdepth: 1\n\n{entries}\n```\n"

    parts = [
        f"# {title}\n",
        "Notebooks that teach scaled dot-product attention, $\\mathrm{softmax}(QK^\\top/\\sqrt{d_k})\\,V$, "
        "one step at a time. Start with [the course's map](notebooks/00-index.ipynb), then follow the "
        "lessons in order; the exercises come with checks that say what is still wrong. Every page can "
        "be downloaded as a notebook (the download button at the top) and run in Jupyter.\n",
        toc("Lessons", lessons()),
        toc("Exercises", exercises()),
    ]
    if with_solutions:
        parts.append(toc("Solutions (instructor)", solutions()))
    docs = [p for p in documents()] + [ROOT / LICENSE_PAGE]
    parts.append(toc("Documents", docs))
    return "\n".join(parts)


def stage(with_solutions: bool, stage_dir: Path = STAGE) -> list[Path]:
    """Write the Sphinx sources into ``stage_dir``; return the repository's notebooks staged."""
    if stage_dir.exists():
        shutil.rmtree(stage_dir)
    stage_dir.mkdir(parents=True)
    notebooks = lessons() + exercises() + (solutions() if with_solutions else [])
    for path in notebooks:
        target = stage_dir / path.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(site_notebook(nbformat.read(path, as_version=4)), target)
    for doc in documents():
        target = stage_dir / doc.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(doc, target)
    if (ROOT / "docs" / "images").is_dir():
        shutil.copytree(ROOT / "docs" / "images", stage_dir / "docs" / "images")
    license_text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    (stage_dir / LICENSE_PAGE).write_text(f"# Licence\n\n```text\n{license_text}\n```\n", encoding="utf-8")
    title = publish.title_of(nbformat.read(ROOT / "notebooks" / "00-index.ipynb", as_version=4),
                             "Attention, step by step")
    (stage_dir / "index.md").write_text(index_page(title, with_solutions), encoding="utf-8")
    vendor = web_assets.ensure(quiet=True)
    static = stage_dir / "_vendor"
    shutil.copytree(vendor, static, ignore=shutil.ignore_patterns(".packages.json", "axe-core", "reveal.js"))
    return notebooks


# Accessible names that differ from the visible text (axe: label-content-name-mismatch): the theme's
# search buttons say "Search the course..." but are labelled "Search"; MyST-NB's closed cells say
# "Answer" but are labelled "Toggle hidden content". Without the label, the name is the text shown.
MISNAMED = re.compile(r'(<button class="btn search-button-field[^>]*?) aria-label="Search"'
                      r'|(<summary) aria-label="Toggle hidden content"')


HEADING = re.compile(r'<h([1-6])>(.*?)(<a class="headerlink")', re.DOTALL)
ID = re.compile(r'\bid="([^"]+)"')
SAME_PAGE_LINK = re.compile(r'<a class="reference internal" href="#([^"]+)">(.*?)</a>', re.DOTALL)


def jupyter_anchor(heading_html: str) -> str:
    """The anchor JupyterLab gives a heading: its text with each space a hyphen."""
    text = html.unescape(re.sub(r"<[^>]+>", "", heading_html)).strip()
    return text.replace(" ", "-")


def fix_page(text: str) -> str:
    """A built page with its names fixed (MISNAMED), Jupyter's anchors added, dead same-page links unwrapped.

    The notebooks link each other's headings by JupyterLab's anchors (``#Explore-it``); Sphinx's
    own are lower case (``#explore-it``), so each heading also gets the Jupyter one. A link to a
    file the site does not publish comes out of MyST as a link to ``#<path>`` on the same page: it
    keeps its text and loses the link, as on the old site.
    """
    text = MISNAMED.sub(lambda m: m.group(1) or m.group(2), text)
    ids = set(ID.findall(text))

    def heading(m):
        anchor = jupyter_anchor(m.group(2))
        if not anchor or anchor in ids:
            return m.group(0)
        ids.add(anchor)
        return f'<h{m.group(1)}><span id="{html.escape(anchor)}"></span>{m.group(2)}{m.group(3)}'

    text = HEADING.sub(heading, text)
    return SAME_PAGE_LINK.sub(lambda m: m.group(0) if html.unescape(m.group(1)) in ids else m.group(2), text)


def fix_names(out: Path) -> None:
    for page in out.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        fixed = fix_page(text)
        if fixed != text:
            page.write_text(fixed, encoding="utf-8")


def build(out: Path = BUILD / "site", with_solutions: bool = False, stage_dir: Path = STAGE) -> Path:
    """Stage and build the site into ``out``; return ``out``."""
    start = time.monotonic()
    notebooks = stage(with_solutions, stage_dir)
    publish._kernel_environment()
    env = dict(os.environ, SITE_SOLUTIONS="1" if with_solutions else "0", SITE_STAGE=str(stage_dir))
    if out.exists():
        shutil.rmtree(out)
    subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-q", "-c", str(HERE),
                    str(stage_dir), str(out), "-d", str(BUILD / "site-doctrees")], check=True, env=env)
    fix_names(out)
    # "Download .ipynb" gives the repository's notebook (with its Colab cell, without recorded widget state)
    for path in notebooks:
        source = out / "_sources" / path.relative_to(ROOT)
        if source.exists():
            shutil.copy2(path, source)
    print(f"site: {len(notebooks)} notebooks in {time.monotonic() - start:.0f} s -> {out}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--solutions", action="store_true", help="publish instructor/solutions/ too")
    parser.add_argument("--out", type=Path, default=BUILD / "site")
    args = parser.parse_args(argv)
    build(args.out, args.solutions)
    return 0


if __name__ == "__main__":
    sys.exit(main())
