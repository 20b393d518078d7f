"""One setting names the repository: ``Source`` under ``[project.urls]`` in pyproject.toml.

tools/navigation.py writes every link to the repository from it (the README's badges,
each notebook's Colab link and set-up cell, the links in docs/). Here: no tracked file
holds a copy of its own; a different Source, set in a copy of the repository, reaches
every generated link and leaves no trace of the old one; the placeholder gives back
exactly the files of the repository; and the README's contract.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import navigation  # noqa: E402

SOURCE_LINE = re.compile(r'^Source = "https://github\.com/[^"]*"$', re.MULTILINE)
# Two names that no file may hold unless navigation.py wrote them from the setting.
FIRST, SECOND = "first-owner/first-name", "second-owner/second-name"


def tracked_files(root: Path = ROOT) -> list[Path]:
    """Every file git tracks in ``root`` (notebooks included)."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"not a git checkout: {exc}")
    return [root / name for name in listed.stdout.split("\0") if name and (root / name).is_file()]


def text_of(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return None  # a binary file (the trained model)


def mentions(text: str, repository: str | None, *, placeholder: bool = True) -> list[str]:
    """The lines of ``text`` that name the placeholder or ``repository`` (``owner/name``, in any URL)."""
    names = [re.escape(navigation.PLACEHOLDER)] if placeholder else []
    if repository:
        names.append(rf"(?i)(?<![\w.-]){re.escape(repository)}(?![\w.-])")
    return [line for line in text.splitlines() if any(re.search(n, line) for n in names)]


def own_copies(root: Path, files: list[Path], generated: set[Path], repository: str | None) -> dict[str, list[str]]:
    """Lines naming the repository (or the placeholder) that the setting does not account for.

    Allowed: the Source line of pyproject.toml, navigation.py's placeholder constant, and the
    files navigation.py writes (whose text it regenerates; checked by running it with other names).
    """
    found = {}
    for path in files:
        text = text_of(path)
        if text is None or path in generated:
            continue
        lines = mentions(text, repository)
        if path == root / "pyproject.toml":
            lines = [line for line in lines if not SOURCE_LINE.fullmatch(line)]
        elif path == root / "tools" / "navigation.py":
            lines = [line for line in lines if line != f'PLACEHOLDER = "{navigation.PLACEHOLDER}"']
        if lines:
            found[path.relative_to(root).as_posix()] = lines
    return found


def test_no_file_holds_its_own_copy_of_the_repository_name():
    files = tracked_files()
    updated = navigation.updated()
    stale = [p.relative_to(ROOT).as_posix() for p, (old, new) in updated.items() if old != new]
    assert not stale, f"run `python tools/navigation.py`: out of date: {stale}"
    assert not own_copies(ROOT, files, set(updated), navigation.REPOSITORY)
    if navigation.REPOSITORY is None:  # the placeholder: nothing generated names it
        assert not {p.name: mentions(new, None) for p, (_, new) in updated.items() if mentions(new, None)}


def test_the_scan_finds_a_copy(tmp_path):
    """The scan above is not blind: a hand-written link, the placeholder, a second Source line."""
    copies = {
        "docs/x.md": f"see https://github.com/{FIRST}/issues",
        "notes.txt": f"[binder](https://mybinder.org/v2/gh/{navigation.PLACEHOLDER}/HEAD)",
        "pyproject.toml": f'Source = "https://github.com/{FIRST}"\nHomepage = "https://github.com/{FIRST}"\n',
        "tools/navigation.py": f'PLACEHOLDER = "{navigation.PLACEHOLDER}"\nREPO = "{navigation.PLACEHOLDER}"\n',
    }
    for name, text in copies.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    found = own_copies(tmp_path, [tmp_path / n for n in copies], set(), FIRST.upper())
    assert found == {
        "docs/x.md": [copies["docs/x.md"]],
        "notes.txt": [copies["notes.txt"]],
        "pyproject.toml": [f'Homepage = "https://github.com/{FIRST}"'],
        "tools/navigation.py": [f'REPO = "{navigation.PLACEHOLDER}"'],
    }


def _copy_repository(destination: Path) -> list[Path]:
    files = tracked_files()
    for path in files:
        target = destination / path.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    return [destination / path.relative_to(ROOT) for path in files]


def _set_source(root: Path, address: str) -> None:
    pyproject = root / "pyproject.toml"
    text, count = SOURCE_LINE.subn(f'Source = "{address}"', pyproject.read_text(encoding="utf-8"))
    assert count == 1, "pyproject.toml has one Source line"
    pyproject.write_text(text, encoding="utf-8")


def _navigation(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "tools/navigation.py", *args], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300)


def _counts(root: Path, files: list[Path], repository: str) -> dict[str, int]:
    """How many lines of each file name ``repository`` (files that name it only)."""
    counts = {p.relative_to(root).as_posix(): len(mentions(text_of(p) or "", repository, placeholder=False))
              for p in files}
    return {name: n for name, n in counts.items() if n}


def test_a_new_source_reaches_every_generated_link_and_leaves_nothing_behind(tmp_path):
    """In a copy of the repository: Source set to one name, then another, the placeholder, and back."""
    copied = _copy_repository(tmp_path)
    originals = {p: p.read_bytes() for p in copied}
    files = [p for p in copied if p != tmp_path / "tests" / Path(__file__).name]  # this file names FIRST, SECOND
    original_source = SOURCE_LINE.search((ROOT / "pyproject.toml").read_text(encoding="utf-8"))[0]
    _set_source(tmp_path, f"https://github.com/{FIRST}")
    assert _navigation(tmp_path, "--check").returncode == 1, "a new Source leaves the generated files out of date"
    done = _navigation(tmp_path)
    assert done.returncode == 0, done.stderr
    assert _navigation(tmp_path, "--check").returncode == 0
    # the repository's own name (or the placeholder) is gone from everything but navigation.py's detection:
    # each mention of it was generated
    assert not own_copies(tmp_path, files, set(), None)
    if navigation.REPOSITORY is not None:
        assert not _counts(tmp_path, files, navigation.REPOSITORY)
    first = _counts(tmp_path, files, FIRST)
    readme = (tmp_path / "README.md").read_text(encoding="utf-8")
    assert f"(https://mybinder.org/v2/gh/{FIRST}/HEAD?urlpath=lab/tree/notebooks/00-index.ipynb)" in readme
    assert f"(https://colab.research.google.com/github/{FIRST}/blob/main/notebooks/00-index.ipynb)" in readme
    assert (f"[open an issue](https://github.com/{FIRST}/issues/new?template=accessibility.md)"
            in (tmp_path / "docs" / "accessibility.md").read_text(encoding="utf-8"))
    notebooks = [p for p in files if p.suffix == ".ipynb"]
    assert len(notebooks) >= 31
    for path in notebooks:
        text = path.read_text(encoding="utf-8")
        folder = path.parent.relative_to(tmp_path).as_posix()
        assert f"https://colab.research.google.com/github/{FIRST}/blob/main/{folder}/{path.name})" in text, path.name
        assert f"git+https://github.com/{FIRST}\\\"" in text, path.name  # the set-up cell's install
    # another name: every mention of the first one follows it, none is left behind
    _set_source(tmp_path, f"https://github.com/{SECOND}")
    assert _navigation(tmp_path).returncode == 0
    assert not _counts(tmp_path, files, FIRST)
    assert _counts(tmp_path, files, SECOND) == first
    # the placeholder: no link anywhere, the placeholder only where it is allowed
    _set_source(tmp_path, f"https://github.com/{navigation.PLACEHOLDER}")
    assert _navigation(tmp_path).returncode == 0
    assert not _counts(tmp_path, files, SECOND)
    assert not own_copies(tmp_path, files, set(), None)
    assert "colab.research.google.com/github" not in "".join(p.read_text(encoding="utf-8") for p in notebooks)
    # and back to the repository's own Source: exactly the repository's files
    (tmp_path / "pyproject.toml").write_text(
        SOURCE_LINE.sub(original_source, (tmp_path / "pyproject.toml").read_text(encoding="utf-8")), encoding="utf-8")
    assert _navigation(tmp_path).returncode == 0
    assert not [p.relative_to(tmp_path).as_posix() for p in copied if p.read_bytes() != originals[p]]


def test_the_readme_opens_with_the_repository_links_block():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "# Attention, Step by Step"
    start = next(i for i, line in enumerate(lines[1:], 1) if line.strip())
    assert lines[start] == navigation.README_START
    assert lines[start + 1:].index(navigation.README_END) > 0
    end = start + 1 + lines[start + 1:].index(navigation.README_END)
    block = "\n".join(lines[start + 1:end])
    assert block == navigation.readme_links()
    if navigation.REPOSITORY is None:
        # Nothing a reader sees: the publisher's note lives in CONTRIBUTING.md.
        assert block.startswith("<!--") and block.endswith("-->") and block.count("-->") == 1
        assert "](" not in block, "no link while there is nothing to link to"
        contributing = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
        publishing = contributing[contributing.index("## Publishing"):]
        assert "`Source`" in publishing and "`pyproject.toml`" in publishing and "make navigation" in publishing


def test_the_readme_block_is_added_after_the_title_if_missing(monkeypatch):
    monkeypatch.setattr(navigation, "REPOSITORY", FIRST)
    text = navigation.with_readme_links("# Title\n\nFirst paragraph.\n")
    assert text.startswith(f"# Title\n\n{navigation.README_START}\n[![Binder]")
    assert text.endswith(f"{navigation.README_END}\n\nFirst paragraph.\n")
    assert navigation.with_readme_links(text) == text
    with pytest.raises(ValueError, match="not closed"):
        navigation.with_readme_links(f"# T\n{navigation.README_START}\nno end\n")


def test_a_repository_link_span_is_a_link_once_named_and_plain_text_before(monkeypatch):
    span = "a <!-- repository-link: issues/new?template=x.md -->{}<!-- /repository-link -->."
    named, plain = span.format("[open an issue](https://old/url)"), span.format("open an issue")
    monkeypatch.setattr(navigation, "REPOSITORY", None)
    assert navigation.with_repository_links(named) == plain
    monkeypatch.setattr(navigation, "REPOSITORY", FIRST)
    assert navigation.with_repository_links(plain) == named.replace(
        "https://old/url", f"https://github.com/{FIRST}/issues/new?template=x.md")


def test_citation_gets_the_repository_code_once_named(monkeypatch):
    cff = 'cff-version: 1.2.0\ntitle: "x"\nrepository-code: "https://github.com/old/one"\nversion: "0.1.0"\n'
    monkeypatch.setattr(navigation, "REPOSITORY", None)
    assert navigation.with_citation_links(cff) == 'cff-version: 1.2.0\ntitle: "x"\nversion: "0.1.0"\n'
    monkeypatch.setattr(navigation, "REPOSITORY", FIRST)
    named = navigation.with_citation_links(cff)
    assert named.endswith(f'version: "0.1.0"\nrepository-code: "https://github.com/{FIRST}"\n'
                          f'url: "https://github.com/{FIRST}"\n')
    assert navigation.with_citation_links(named) == named


@pytest.mark.parametrize("source, expected", [
    (f"https://github.com/{navigation.PLACEHOLDER}", None),
    ("https://github.com/acme/attention-step-by-step", "acme/attention-step-by-step"),
    ("https://github.com/acme/attention.step/", "acme/attention.step"),
    ("https://github.com/acme/attention.git", "acme/attention"),
])
def test_the_setting_is_read_from_pyproject(tmp_path, source, expected):
    path = tmp_path / "pyproject.toml"
    path.write_text(f'[project]\nname = "x"\n\n[project.urls]\nSource = "{source}"\n')
    assert navigation.read_repository(path) == expected


@pytest.mark.parametrize("urls, message", [
    ('Homepage = "https://github.com/a/b"', r"\[project.urls\] has no Source"),
    ('Source = "https://gitlab.com/a/b"', r"Source must be https://github.com/<owner>/<name>, not 'https://gitlab"),
    ('Source = "https://github.com/a"', "Source must be"),
])
def test_a_source_that_is_not_a_github_repository_is_refused(tmp_path, urls, message):
    path = tmp_path / "pyproject.toml"
    path.write_text(f'[project]\nname = "x"\n\n[project.urls]\n{urls}\n')
    with pytest.raises(ValueError, match=message) as error:
        navigation.read_repository(path)
    assert str(path) in str(error.value)
