"""tools/release.py (`make release`): refusals, the version bump, the changelog, the commit and the tag.

Each test makes a small git repository of its own in a temporary folder (this
repository is never touched), with a stand-in for the build; one slow test
builds the real sdist and wheel of this repository into a temporary folder.
"""

import datetime
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import navigation  # noqa: E402
import release  # noqa: E402

TODAY = datetime.date(2026, 6, 1)
PYPROJECT = """\
[project]
name = "demo"
dynamic = ["version"]

[project.urls]
Source = "https://github.com/{repository}"

[tool.setuptools.dynamic]
version = {{ attr = "helpers.__version__" }}
"""
CHANGELOG = """\
# Changelog

All notable changes are listed here. The format follows [Keep a Changelog](https://keepachangelog.com/en/1.1.0/),
and the versions follow [Semantic Versioning](https://semver.org/spec/v2.0.0.html).

## [Unreleased]

### Added

- A release tool.

### Fixed

- A wrong number.

## [0.1.0] - 2026-05-01

### Added

- The first notebooks.
"""
CITATION = """\
cff-version: 1.2.0
message: "If you use this, please cite it as below."
title: "Demo"
version: 0.1.0
date-released: "2026-05-01"
"""


def git(root, *args):
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A committed repository named acme/demo, version 0.1.0, with a changelog and a CITATION.cff."""
    config = tmp_path / "gitconfig"
    config.write_text("[user]\n\tname = Test\n\temail = test@example.org\n[init]\n\tdefaultBranch = main\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    root = tmp_path / "repo"
    (root / "helpers").mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT.format(repository="acme/demo"))
    (root / "helpers" / "__init__.py").write_text('"""Demo."""\n\n__version__ = "0.1.0"\n')
    (root / "CHANGELOG.md").write_text(CHANGELOG)
    (root / "CITATION.cff").write_text(CITATION)
    (root / ".gitignore").write_text("dist/\n")
    git(root, "init", "--quiet")
    git(root, "add", ".")
    git(root, "commit", "--quiet", "-m", "Start")
    return root


class FakeBuild:
    """Stands in for the build: records the version on disk when called, writes two files."""

    def __init__(self, fail=False):
        self.fail, self.versions = fail, []

    def __call__(self, root, dist):
        self.versions.append(release.read_version(root))
        if self.fail:
            raise subprocess.CalledProcessError(1, ["build"], stderr="no setuptools")
        dist.mkdir(exist_ok=True)
        paths = [dist / f"demo-{self.versions[-1]}.tar.gz", dist / f"demo-{self.versions[-1]}-py3-none-any.whl"]
        for path in paths:
            path.write_text("built")
        return paths


def _untouched(root):
    assert git(root, "status", "--porcelain") == ""
    assert git(root, "tag", "--list") == ""
    assert "Release" not in git(root, "log", "--format=%s")
    assert '__version__ = "0.1.0"' in (root / "helpers" / "__init__.py").read_text()


@pytest.mark.parametrize("version, part, expected", [
    ("0.1.0", "patch", "0.1.1"), ("0.1.0", "minor", "0.2.0"), ("0.1.0", "major", "1.0.0"),
    ("1.9.9", "patch", "1.9.10"), ("1.9.9", "minor", "1.10.0"), ("1.9.9", "major", "2.0.0"),
    ("0.0.0", "patch", "0.0.1"), ("12.3.4", "minor", "12.4.0"),
])
def test_bump(version, part, expected):
    assert release.bump(version, part) == expected


@pytest.mark.parametrize("version, part, message", [
    ("0.1", "minor", "X.Y.Z"), ("0.1.0rc1", "minor", "X.Y.Z"), ("v0.1.0", "minor", "X.Y.Z"),
    ("0.1.0", "micro", "major, minor, patch"),
])
def test_bump_refuses_what_it_cannot_read(version, part, message):
    with pytest.raises(ValueError, match=message):
        release.bump(version, part)


def test_the_default_part_is_minor_in_the_tool_and_the_makefile():
    assert release.DEFAULT_PART == "minor"
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^PART \?= minor$", makefile, re.MULTILINE)
    assert re.search(r"^release: .*\n\t\$\(BIN\)/python tools/release.py \$\(PART\)$", makefile, re.MULTILINE)
    assert "make release" in re.search(r"^help:\n((?:\t.*\n)+)", makefile, re.MULTILINE).group(1)


def test_it_refuses_while_source_is_the_placeholder(repo, capsys):
    (repo / "pyproject.toml").write_text(PYPROJECT.format(repository=navigation.PLACEHOLDER))
    git(repo, "commit", "--quiet", "-am", "Changed")
    assert release.main(["patch"], root=repo) == 1
    message = capsys.readouterr().err
    assert "Source under [project.urls] in pyproject.toml is still the placeholder" in message
    assert "make navigation" in message
    _untouched(repo)


@pytest.mark.parametrize("change", ["modified", "untracked", "staged"])
def test_it_refuses_while_the_working_tree_is_dirty(repo, capsys, change):
    if change == "modified":
        (repo / "CHANGELOG.md").write_text(CHANGELOG + "\n- more\n")
    else:
        (repo / "notes.txt").write_text("x")
        if change == "staged":
            git(repo, "add", "notes.txt")
    before = {p: p.read_bytes() for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts}
    assert release.main(["minor"], root=repo) == 1
    message = capsys.readouterr().err
    assert "the working tree is not clean" in message
    assert ("CHANGELOG.md" if change == "modified" else "notes.txt") in message
    assert git(repo, "tag", "--list") == "" and git(repo, "log", "--format=%s") == "Start\n"
    assert {p: p.read_bytes() for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts} == before


def test_a_release_bumps_dates_builds_commits_and_tags(repo, capsys):
    build = FakeBuild()
    assert release.release(repo, "minor", today=TODAY, builder=build) == "0.2.0"
    assert build.versions == ["0.2.0"], "the build sees the new version"
    assert (repo / "helpers" / "__init__.py").read_text() == '"""Demo."""\n\n__version__ = "0.2.0"\n'
    changelog = (repo / "CHANGELOG.md").read_text()
    assert changelog == CHANGELOG.replace(
        "## [Unreleased]\n\n### Added\n\n- A release tool.",
        "## [Unreleased]\n\n## [0.2.0] - 2026-06-01\n\n### Added\n\n- A release tool.")
    citation = (repo / "CITATION.cff").read_text()
    assert "\nversion: 0.2.0\n" in citation and '\ndate-released: "2026-06-01"\n' in citation
    assert git(repo, "status", "--porcelain") == "", "everything committed (dist/ is ignored)"
    assert git(repo, "log", "--format=%s") == "Release 0.2.0\nStart\n"
    assert sorted(git(repo, "show", "--name-only", "--format=", "HEAD").split()) == [
        "CHANGELOG.md", "CITATION.cff", "helpers/__init__.py"]
    assert git(repo, "cat-file", "-t", "v0.2.0").strip() == "tag", "an annotated tag"
    assert git(repo, "rev-parse", "v0.2.0^{commit}") == git(repo, "rev-parse", "HEAD")
    assert git(repo, "tag", "-l", "--format=%(contents:subject)", "v0.2.0").strip() == "Release 0.2.0"
    out = capsys.readouterr().out
    assert "0.1.0 -> 0.2.0" in out and "git push origin HEAD v0.2.0" in out
    # the next one: a patch on top, with something new under [Unreleased]
    (repo / "CHANGELOG.md").write_text(changelog.replace("## [Unreleased]\n", "## [Unreleased]\n\n### Fixed\n\n- x\n"))
    git(repo, "commit", "--quiet", "-am", "A fix")
    assert release.release(repo, "patch", today=TODAY, builder=build) == "0.2.1"
    assert (repo / "CHANGELOG.md").read_text().startswith(
        CHANGELOG.split("## [Unreleased]")[0] + "## [Unreleased]\n\n## [0.2.1] - 2026-06-01\n\n### Fixed\n\n- x\n\n"
        "## [0.2.0] - 2026-06-01\n")
    assert git(repo, "tag", "--list").split() == ["v0.2.0", "v0.2.1"]


def test_a_failed_build_changes_nothing(repo):
    with pytest.raises(release.Refused, match="the build failed, nothing was changed") as error:
        release.release(repo, "major", today=TODAY, builder=FakeBuild(fail=True))
    assert "no setuptools" in str(error.value)
    _untouched(repo)


def test_it_refuses_an_existing_tag(repo):
    git(repo, "tag", "-a", "v0.1.1", "-m", "by hand")
    with pytest.raises(release.Refused, match="the tag v0.1.1 exists already"):
        release.release(repo, "patch", today=TODAY, builder=FakeBuild())
    assert git(repo, "status", "--porcelain") == ""


@pytest.mark.parametrize("changelog, message", [
    (CHANGELOG.replace("## [Unreleased]\n\n### Added\n\n- A release tool.\n\n### Fixed\n\n- A wrong number.\n\n", ""),
     "no '## \\[Unreleased\\]' section"),
    (CHANGELOG.replace("### Added\n\n- A release tool.\n\n### Fixed\n\n- A wrong number.\n\n", "", 1),
     "section is empty"),
])
def test_it_refuses_a_changelog_with_nothing_to_release(repo, changelog, message):
    (repo / "CHANGELOG.md").write_text(changelog)
    git(repo, "commit", "--quiet", "-am", "Changed")
    with pytest.raises(release.Refused, match=message):
        release.release(repo, "minor", today=TODAY, builder=FakeBuild())
    _untouched(repo)


def test_the_changelog_move_keeps_link_definitions_at_the_end():
    text = CHANGELOG + "\n[Unreleased]: https://example.org/compare\n[0.1.0]: https://example.org/tag\n"
    moved = release.moved_changelog(text, "0.2.0", "2026-06-01")
    assert moved.endswith("- The first notebooks.\n\n[Unreleased]: https://example.org/compare\n"
                          "[0.1.0]: https://example.org/tag\n")
    assert "## [Unreleased]\n\n## [0.2.0] - 2026-06-01\n\n### Added\n" in moved
    only = "# Changelog\n\n## [Unreleased]\n\n- First.\n"
    assert release.moved_changelog(only, "1.0.0", "2026-06-01") == (
        "# Changelog\n\n## [Unreleased]\n\n## [1.0.0] - 2026-06-01\n\n- First.\n")


def test_the_citation_keeps_its_quoting_and_gains_a_missing_date():
    assert release.with_citation('version: "0.1.0"\ndate-released: 2026-01-01\n', "0.2.0", "2026-06-01") == (
        'version: "0.2.0"\ndate-released: 2026-06-01\n')
    assert release.with_citation("title: x\nversion: 0.1.0\n", "0.2.0", "2026-06-01") == (
        'title: x\nversion: 0.2.0\ndate-released: "2026-06-01"\n')


def test_the_version_has_one_source():
    """pyproject.toml reads helpers.__version__; nothing else spells the version out."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in pyproject["project"] and pyproject["project"]["dynamic"] == ["version"]
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "helpers.__version__"}
    import helpers

    assert release.version_file(ROOT) == ROOT / "helpers" / "__init__.py"
    assert release.read_version(ROOT) == helpers.__version__


def test_this_repository_is_refused_while_unnamed(capsys):
    if navigation.REPOSITORY is not None:
        pytest.skip("the repository is named")
    assert release.main([]) == 1
    assert "still the placeholder" in capsys.readouterr().err


@pytest.mark.slow
def test_the_real_build_gives_an_sdist_and_a_wheel_of_the_current_version(tmp_path):
    """setuptools' hooks, with the build requirements pip installs (setuptools>=77), on this repository's files."""
    import helpers

    built = release.build(ROOT, tmp_path)
    assert sorted(p.name for p in built) == sorted([
        f"attention_step_by_step-{helpers.__version__}.tar.gz",
        f"attention_step_by_step-{helpers.__version__}-py3-none-any.whl",
    ])
    assert all(p.exists() for p in built)
