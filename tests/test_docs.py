"""The repository's documents: a short README, links that resolve, a changelog, a citation, issue templates.

The README is for a newcomer (under 70 lines, the two commands, the routes, links); the
reference tables live in docs/reference.md, whose example is run here as a doctest.
Every relative link in the markdown documents leads to a file, and every #anchor to a
heading (GitHub's anchors, which the static site reproduces). CHANGELOG.md keeps the
Keep a Changelog headings that `make release` rewrites; CITATION.cff is valid YAML with
the keys CFF 1.2.0 requires and the project's version.
"""

import doctest
import html
import re
import sys
import tomllib
from pathlib import Path
from urllib.parse import unquote

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))


README = ROOT / "README.md"
LINKS_START = "<!-- repository-links: written by tools/navigation.py from [project.urls] Source in pyproject.toml -->"
LINKS_END = "<!-- /repository-links -->"
DOCUMENTS = sorted(
    [README, ROOT / "CONTRIBUTING.md", ROOT / "CHANGELOG.md", ROOT / "exercises" / "README.md",
     *(ROOT / "docs").glob("*.md"),
     *(ROOT / ".github" / "ISSUE_TEMPLATE").glob("*.md")]
)
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def github_slug(text: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"<[^>]+>", "", html.unescape(text))  # the heading's text, without markup
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a markdown link: its text
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def test_headings_get_githubs_anchors():
    ids = [github_slug(h) for h in ("Reference", "The `helpers` package", "Section 5.2", "Live lecture mode: RISE",
                                    "A [link](x.md) in it")]
    assert ids == ["reference", "the-helpers-package", "section-52", "live-lecture-mode-rise", "a-link-in-it"]


def _project():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _version():
    """The package's version: pyproject.toml's, or helpers.__version__ when pyproject.toml reads it from there."""
    project = _project()
    if "version" in project:
        return project["version"]
    return re.search(r'^__version__ = "([^"]+)"$', (ROOT / "helpers" / "__init__.py").read_text(), re.MULTILINE)[1]


def _without_code(text):
    """Markdown without its fenced code blocks and inline code (links there are not links)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
    return re.sub(r"`[^`\n]*`", "", text)


def _anchors(path):
    text = _without_code(path.read_text(encoding="utf-8"))
    seen, anchors = {}, set()
    for heading in re.findall(r"^#{1,6} (.+)$", text, re.MULTILINE):
        slug = github_slug(heading)
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        anchors.add(slug if n == 0 else f"{slug}-{n}")
    return anchors


# --- README ---------------------------------------------------------------------------


def test_the_readme_is_short_and_starts_with_the_repository_links_block():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) < 70, f"README.md has {len(lines)} lines: move reference material to docs/reference.md"
    assert lines[0] == "# Attention, Step by Step"
    assert lines[2] == LINKS_START, "the block tools/navigation.py rewrites must follow the title"
    assert LINKS_END in lines[3:12], "the repository-links block is closed within the first screen"


def test_the_readme_names_the_repository_only_inside_the_links_block():
    """The repository's GitHub path (pyproject.toml's one setting) appears only where navigation.py writes it."""
    path = re.sub(r"^https://github\.com/", "", _project()["urls"]["Source"]).strip("/")
    assert path.count("/") == 1, path
    text = README.read_text(encoding="utf-8")
    outside = text[: text.index(LINKS_START)] + text[text.index(LINKS_END):]
    assert path not in outside


def test_the_readme_gives_the_commands_the_start_the_routes_and_the_links():
    text = README.read_text(encoding="utf-8")
    for needed in ("make lab", "make test", "notebooks/00-index.ipynb", "Colab", "Binder", "pip", "conda"):
        assert needed in text, needed
    for target in ("docs/reference.md", "docs/teaching.md", "docs/glossary.md", "docs/accessibility.md",
                   "docs/sources.md", "CONTRIBUTING.md", "CHANGELOG.md", "LICENSE"):
        assert f"]({target}" in text, f"README.md does not link {target}"


def test_the_reference_holds_the_tables_that_left_the_readme():
    text = (ROOT / "docs" / "reference.md").read_text(encoding="utf-8")
    for heading in ("Ways to run it", "Extras", "Make targets", "Notebooks", "Exercises",
                    "The `helpers` package", "Where the data lives", "Threads", "Tests"):
        assert re.search(rf"^## {re.escape(heading)}$", text, re.MULTILINE), heading
    makefile = (ROOT / "Makefile").read_text()
    for target in re.findall(r"^([a-z][a-z-]*):", makefile, re.MULTILINE):
        if target not in {"setup", "present-venv"}:
            assert f"`make {target}`" in text, f"make {target} is not in docs/reference.md"
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb")):
        assert f"(../notebooks/{path.name})" in text, path.name


def test_the_reference_example_runs():
    text = (ROOT / "docs" / "reference.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```python\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
    assert blocks
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for i, block in enumerate(blocks):
        runner.run(parser.get_doctest(block, {}, f"docs/reference.md block {i}", "docs/reference.md", 0))
    assert runner.summarize(verbose=False).failed == 0


# --- links -----------------------------------------------------------------------------


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_lead_to_files_and_headings(path):
    bad = []
    for href in LINK.findall(_without_code(path.read_text(encoding="utf-8"))):
        if re.match(r"[a-z][a-z0-9+.-]*:", href):
            continue
        target, _, anchor = href.partition("#")
        file = (path.parent / unquote(target)).resolve() if target else path
        if not file.exists():
            bad.append(f"{href}: no such file")
        elif anchor and file.suffix == ".md" and anchor not in _anchors(file):
            bad.append(f"{href}: no heading with that anchor in {file.name}")
    assert bad == []


def test_the_sources_cite_the_five_documents_by_their_titles():
    from test_examples import TITLES

    text = (ROOT / "docs" / "sources.md").read_text(encoding="utf-8")
    for title in TITLES.values():
        assert f"*{title}*" in text, title
    entries = re.split(r"^## ", text, flags=re.MULTILINE)[1:6]
    for entry in entries:
        for field in ("**Title:**", "**Author:**", "**Venue or series:**", "**Date:**", "**Rebuilt in:**"):
            assert field in entry, f"{entry.splitlines()[0]}: {field}"
    assert "](docs/sources.md)" in README.read_text(encoding="utf-8")
    assert "](sources.md" in (ROOT / "docs" / "reference.md").read_text(encoding="utf-8")


# --- changelog and citation -------------------------------------------------------------


def test_the_changelog_describes_changes_not_issue_numbers():
    """A reader of the changelog has no access to the tracker: each entry says what changed."""
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    found = re.findall(r"[^\n]*\b(?:issues?|#)\s*\d+[^\n]*", text, re.IGNORECASE)
    assert not found, f"CHANGELOG.md names issue numbers: {found[:3]}"


def test_the_changelog_keeps_the_headings_make_release_rewrites():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert text.startswith("# Changelog\n")
    assert re.findall(r"^## \[Unreleased\]$", text, re.MULTILINE) == ["## [Unreleased]"]
    versions = re.findall(r"^## \[(?!Unreleased\])(.*)$", text, re.MULTILINE)
    assert versions, "no released version"
    for heading in versions:
        assert re.fullmatch(r"\d+\.\d+\.\d+\] - \d{4}-\d{2}-\d{2}", heading), f"## [{heading}: not [X.Y.Z] - YYYY-MM-DD"
    numbers = [tuple(map(int, v.split("]")[0].split("."))) for v in versions]
    assert numbers == sorted(numbers, reverse=True), "newest version first"
    assert versions[0].startswith(_version() + "]"), "the newest entry is the package's version"
    assert text.index("## [Unreleased]") < text.index(f"## [{versions[0]}")
    for section in re.findall(r"^### (.+)$", text, re.MULTILINE):
        assert section in {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}, section


def test_the_citation_file_is_valid_and_current():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    for key in ("cff-version", "message", "title", "authors"):
        assert cff.get(key), f"CITATION.cff: {key} is required"
    assert cff["cff-version"] == "1.2.0"
    assert cff["title"] == "Attention, Step by Step"
    assert all(a.get("name") or a.get("family-names") for a in cff["authors"])
    assert str(cff["version"]) == _version(), "CITATION.cff's version must be the package's"
    # CFF reads a list of licences as a choice (OR); the code is MIT AND the prose CC BY 4.0
    assert not isinstance(cff.get("license"), list)
    source = _project()["urls"]["Source"]
    for key in ("repository-code", "url"):
        if key in cff:
            assert cff[key] == source, key


# --- issue templates ---------------------------------------------------------------------

TEMPLATES = ROOT / ".github" / "ISSUE_TEMPLATE"


@pytest.mark.parametrize("name", ["bug_report.md", "accessibility.md", "content_error.md"])
def test_issue_templates_have_front_matter(name):
    text = (TEMPLATES / name).read_text(encoding="utf-8")
    match = re.match(r"---\n(.*?)\n---\n", text, re.DOTALL)
    assert match, f"{name}: no front matter"
    front = yaml.safe_load(match.group(1))
    assert front.get("name") and front.get("about"), name


def test_the_accessibility_template_asks_what_the_statement_promises():
    text = (TEMPLATES / "accessibility.md").read_text(encoding="utf-8")
    for asked in ("barrier", "Notebook", "slide", "site page", "Assistive technology", "Browser", "WCAG"):
        assert asked in text, asked
    statement = (ROOT / "docs" / "accessibility.md").read_text(encoding="utf-8")
    assert "](../.github/ISSUE_TEMPLATE/accessibility.md)" in statement
    assert isinstance(yaml.safe_load((TEMPLATES / "config.yml").read_text(encoding="utf-8")), dict)
