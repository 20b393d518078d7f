"""`make release` (tools/release.py, then bump-my-version): refusals, the bump, the changelog, commit, tag.

Each test makes a small git repository of its own in a temporary folder (this
repository is never touched), configured with this repository's [tool.bumpversion]
tables and a stand-in for the build; one slow test runs the real build (uv build) of
this repository into a temporary folder.
"""

import datetime
import os
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

BUILD_HOOK = "uv build --quiet --out-dir dist"
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


def bumpversion_config(build_hook=BUILD_HOOK):
    """This repository's [tool.bumpversion] tables, as written in its pyproject.toml, with ``build_hook``."""
    lines, inside = [], False
    for line in (ROOT / "pyproject.toml").read_text(encoding="utf-8").splitlines(keepends=True):
        if line.startswith("["):
            inside = line.lstrip("[").startswith("tool.bumpversion")
        if inside:
            lines.append(line)
    text = "".join(lines)
    assert f'pre_commit_hooks = ["{BUILD_HOOK}"]' in text
    return text.replace(f'pre_commit_hooks = ["{BUILD_HOOK}"]', f"pre_commit_hooks = [{build_hook!r}]")


FAKE_BUILD = """\
import pathlib, sys
here = pathlib.Path(sys.argv[0]).parent
version = pathlib.Path("helpers/__init__.py").read_text().split('"')[-2]
with open(here / "builds.txt", "a") as log:
    log.write(version + "\\n")
if (here / "fail").exists():
    sys.exit("no setuptools")
pathlib.Path("dist").mkdir(exist_ok=True)
for name in (f"demo-{version}.tar.gz", f"demo-{version}-py3-none-any.whl"):
    (pathlib.Path("dist") / name).write_text("built")
"""


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A committed repository named acme/demo, version 0.1.0, with a changelog and a CITATION.cff.

    Its [tool.bumpversion] is this repository's, with a stand-in for the build (``builds.txt`` beside it
    lists the version each build saw; a file ``fail`` beside it makes the build fail).
    """
    config = tmp_path / "gitconfig"
    config.write_text("[user]\n\tname = Test\n\temail = test@example.org\n[init]\n\tdefaultBranch = main\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    (tmp_path / "fake_build.py").write_text(FAKE_BUILD)
    root = tmp_path / "repo"
    (root / "helpers").mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT.format(repository="acme/demo")
                                         + bumpversion_config(f"python {tmp_path / 'fake_build.py'}"))
    (root / "helpers" / "__init__.py").write_text('"""Demo."""\n\n__version__ = "0.1.0"\n')
    (root / "CHANGELOG.md").write_text(CHANGELOG)
    (root / "CITATION.cff").write_text(CITATION)
    (root / ".gitignore").write_text("dist/\n")
    git(root, "init", "--quiet")
    git(root, "add", ".")
    git(root, "commit", "--quiet", "-m", "Start")
    return root


def builds(root):
    log = root.parent / "builds.txt"
    return log.read_text().split() if log.exists() else []


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
def test_bump(repo, version, part, expected):
    (repo / "helpers" / "__init__.py").write_text(f'__version__ = "{version}"\n')
    assert release.new_version(repo, part) == expected


@pytest.mark.parametrize("version", ["0.1", "0.1.0rc1", "v0.1.0"])
def test_a_version_that_is_not_three_numbers_is_refused(repo, version, capsys):
    (repo / "helpers" / "__init__.py").write_text(f'__version__ = "{version}"\n')
    git(repo, "commit", "--quiet", "-am", "Changed")
    assert release.main(["minor"], root=repo) == 1
    assert "X.Y.Z" in capsys.readouterr().err
    assert git(repo, "status", "--porcelain") == "" and git(repo, "tag", "--list") == ""


def test_the_default_part_is_minor_in_the_tool_and_the_makefile():
    assert release.DEFAULT_PART == "minor"
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^PART \?= minor$", makefile, re.MULTILINE)
    rule = re.search(r"^release: (.*)\n\t\$\(BIN\)/python tools/release.py \$\(PART\)$", makefile, re.MULTILINE)
    assert rule and ".installed-release" in rule.group(1), "make release installs bump-my-version"
    assert "make release" in re.search(r"^help:\n((?:\t.*\n)+)", makefile, re.MULTILINE).group(1)


def test_it_refuses_while_source_is_the_placeholder(repo, capsys):
    text = (repo / "pyproject.toml").read_text().replace("acme/demo", navigation.PLACEHOLDER)
    (repo / "pyproject.toml").write_text(text)
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
    assert builds(repo) == []


def test_a_release_bumps_dates_builds_commits_and_tags(repo, capsys):
    days = {datetime.date.today().isoformat()}
    assert release.release(repo, "minor") == "0.2.0"
    days.add(datetime.date.today().isoformat())  # (a run across midnight dates either day)
    assert builds(repo) == ["0.2.0"], "the build sees the new version"
    assert (repo / "helpers" / "__init__.py").read_text() == '"""Demo."""\n\n__version__ = "0.2.0"\n'
    changelog = (repo / "CHANGELOG.md").read_text()
    day = re.search(r"^## \[0\.2\.0\] - (\S+)$", changelog, re.MULTILINE).group(1)
    assert day in days
    assert changelog == CHANGELOG.replace(
        "## [Unreleased]\n\n### Added\n\n- A release tool.",
        f"## [Unreleased]\n\n## [0.2.0] - {day}\n\n### Added\n\n- A release tool.")
    assert (repo / "CITATION.cff").read_text() == CITATION.replace(
        'version: 0.1.0\ndate-released: "2026-05-01"', f'version: 0.2.0\ndate-released: "{day}"')
    assert git(repo, "status", "--porcelain") == "", "everything committed (dist/ is ignored)"
    assert sorted(p.name for p in (repo / "dist").iterdir()) == ["demo-0.2.0-py3-none-any.whl", "demo-0.2.0.tar.gz"]
    assert git(repo, "log", "--format=%s") == "Release 0.2.0\nStart\n"
    assert sorted(git(repo, "show", "--name-only", "--format=", "HEAD").split()) == [
        "CHANGELOG.md", "CITATION.cff", "helpers/__init__.py"]
    assert git(repo, "cat-file", "-t", "v0.2.0").strip() == "tag", "an annotated tag"
    assert git(repo, "rev-parse", "v0.2.0^{commit}") == git(repo, "rev-parse", "HEAD")
    assert git(repo, "tag", "-l", "--format=%(contents:subject)", "v0.2.0").strip() == "Release 0.2.0"
    out = capsys.readouterr().out
    assert "0.1.0 -> 0.2.0" in out and "git push origin HEAD v0.2.0" in out
    assert "built dist/demo-0.2.0.tar.gz" in out
    # the next one: a patch on top, with something new under [Unreleased]
    (repo / "CHANGELOG.md").write_text(changelog.replace("## [Unreleased]\n", "## [Unreleased]\n\n### Fixed\n\n- x\n"))
    git(repo, "commit", "--quiet", "-am", "A fix")
    assert release.release(repo, "patch") == "0.2.1"
    later = re.search(r"^## \[0\.2\.1\] - (\S+)$", (repo / "CHANGELOG.md").read_text(), re.MULTILINE).group(1)
    assert (repo / "CHANGELOG.md").read_text().startswith(
        CHANGELOG.split("## [Unreleased]")[0] + f"## [Unreleased]\n\n## [0.2.1] - {later}\n\n### Fixed\n\n- x\n\n"
        f"## [0.2.0] - {day}\n")
    assert git(repo, "tag", "--list").split() == ["v0.2.0", "v0.2.1"]


def test_the_citation_gains_a_missing_date(repo):
    (repo / "CITATION.cff").write_text('title: "Demo"\nversion: 0.1.0\nauthors: []\n')
    git(repo, "commit", "--quiet", "-am", "No date")
    release.release(repo, "patch")
    assert re.fullmatch(r'title: "Demo"\nversion: 0\.1\.1\ndate-released: "\d{4}-\d\d-\d\d"\nauthors: \[\]\n',
                        (repo / "CITATION.cff").read_text())


def test_a_failed_build_changes_nothing(repo):
    (repo.parent / "fail").write_text("")
    with pytest.raises(release.Refused, match="nothing was changed") as error:
        release.release(repo, "major")
    assert "no setuptools" in str(error.value)
    assert builds(repo) == ["1.0.0"], "the build ran, on the new version"
    _untouched(repo)


def test_it_refuses_an_existing_tag(repo):
    git(repo, "tag", "-a", "v0.1.1", "-m", "by hand")
    with pytest.raises(release.Refused, match="the tag v0.1.1 exists already"):
        release.release(repo, "patch")
    assert git(repo, "status", "--porcelain") == "" and builds(repo) == []
    assert "Release" not in git(repo, "log", "--format=%s")


@pytest.mark.parametrize("changelog, message", [
    (CHANGELOG.replace("## [Unreleased]\n\n### Added\n\n- A release tool.\n\n### Fixed\n\n- A wrong number.\n\n", ""),
     "no '## \\[Unreleased\\]' section"),
    (CHANGELOG.replace("### Added\n\n- A release tool.\n\n### Fixed\n\n- A wrong number.\n\n", "", 1),
     "section is empty"),
    (CHANGELOG.replace("### Added\n\n- A release tool.\n\n### Fixed\n\n- A wrong number.\n\n## [0.1.0] - 2026-05-01"
                       "\n\n### Added\n\n- The first notebooks.\n", "[0.1.0]: https://example.org/tag\n", 1),
     "section is empty"),
])
def test_it_refuses_a_changelog_with_nothing_to_release(repo, changelog, message):
    (repo / "CHANGELOG.md").write_text(changelog)
    git(repo, "commit", "--quiet", "-am", "Changed")
    with pytest.raises(release.Refused, match=message):
        release.release(repo, "minor")
    _untouched(repo)
    assert builds(repo) == []


def test_the_changelog_heading_is_found_once_though_the_prose_names_it():
    """This repository's CHANGELOG.md quotes `## [Unreleased]` in its introduction: only the heading is dated."""
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "`## [Unreleased]`" in text
    assert len(release.UNRELEASED.findall(text)) == 1
    config = tomllib.loads(bumpversion_config())["tool"]["bumpversion"]
    (changelog,) = [f for f in config["files"] if f["filename"] == "CHANGELOG.md"]
    assert changelog["regex"] and re.compile(changelog["search"], re.MULTILINE).pattern == release.UNRELEASED.pattern


def test_the_version_has_one_source():
    """pyproject.toml reads helpers.__version__; nothing else spells the version out (no current_version)."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in pyproject["project"] and pyproject["project"]["dynamic"] == ["version"]
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "helpers.__version__"}
    assert "current_version" not in pyproject["tool"]["bumpversion"]
    import helpers

    assert release.VERSION_FILE == "helpers/__init__.py"
    assert release.read_version(ROOT) == helpers.__version__


def test_this_repository_is_refused_while_unnamed(capsys):
    if navigation.REPOSITORY is not None:
        pytest.skip("the repository is named")
    assert release.main([]) == 1
    assert "still the placeholder" in capsys.readouterr().err


@pytest.mark.slow
def test_the_real_build_gives_an_sdist_and_a_wheel_of_the_current_version(tmp_path):
    """The build hook's command (uv build; setuptools>=77 from PyPI or uv's cache) on this repository."""
    import helpers

    command = BUILD_HOOK.replace("--out-dir dist", f"--out-dir {tmp_path}").split()
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])
    subprocess.run(command, cwd=ROOT, check=True, env={**os.environ, "PATH": path})
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix in {".gz", ".whl"}) == sorted([
        f"attention_step_by_step-{helpers.__version__}-py3-none-any.whl",
        f"attention_step_by_step-{helpers.__version__}.tar.gz",
    ])
