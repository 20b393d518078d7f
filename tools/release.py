"""`make release`: the project's refusals, then bump-my-version does the release.

    python tools/release.py [minor|patch|major]     (make release PART=...; minor when not given)

Semantic versioning, for a course: ``patch`` corrects (a wrong number, a typo, a
broken link), ``minor`` adds or changes lessons, exercises or helpers while every
existing notebook keeps working (the usual release, hence the default), ``major``
changes something a learner's saved work or a course built on it relies on (a
renamed function, a renumbered notebook).

bump-my-version, configured under ``[tool.bumpversion]`` in pyproject.toml, does the
release: it writes the new version into ``__version__`` in helpers/__init__.py (the
one place that holds it; setuptools reads it from there), heads what is under
``## [Unreleased]`` in CHANGELOG.md with ``## [X.Y.Z] - YYYY-MM-DD`` below a new, empty
``## [Unreleased]``, sets ``version:`` and ``date-released:`` in CITATION.cff, builds the
sdist and the wheel into ``dist/`` (``uv build``, its pre-commit hook), commits those
files ("Release X.Y.Z") and creates the annotated tag ``vX.Y.Z``. Nothing is pushed.

This script adds what bump-my-version does not check. It refuses, exits 1 and changes
nothing while:

* ``Source`` under ``[project.urls]`` in pyproject.toml is still the placeholder
  (tools/navigation.py writes every link to the repository from it, so a release
  would ship links that lead nowhere);
* the working tree is not clean, untracked files included (bump-my-version ignores
  those): a release is exactly a commit;
* tools/navigation.py --check finds a generated link or cell out of date;
* ``__version__`` is not ``X.Y.Z``;
* CHANGELOG.md has no ``## [Unreleased]`` section, or nothing in it;
* the tag ``vX.Y.Z`` exists already (bump-my-version would commit, then fail to tag).

If the build fails, bump-my-version stops before its commit; this script then puts the
files it changed back as they were committed.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import navigation  # noqa: E402  (tools/navigation.py: reads [project.urls] Source)

ROOT = Path(__file__).resolve().parent.parent
PARTS = ("major", "minor", "patch")
DEFAULT_PART = "minor"
VERSION_FILE = "helpers/__init__.py"  # the file [tool.setuptools.dynamic] reads helpers.__version__ from
VERSION_LINE = re.compile(r'^__version__ = "(?P<version>[^"]*)"$', re.MULTILINE)
# The heading bump-my-version's search finds (pyproject.toml), and what ends its section: the next
# "## " heading or the link definitions at the end.
UNRELEASED = re.compile(r"^## \[Unreleased\]$", re.MULTILINE)
SECTION_END = re.compile(r"^(?:## |\[[^\]\n]+\]: )", re.MULTILINE)


class Refused(Exception):
    """A release that must not be made; the message says why and what to do."""


def read_version(root: Path) -> str:
    """``__version__`` of helpers/__init__.py; :class:`Refused` unless it is ``X.Y.Z``."""
    match = VERSION_LINE.search((root / VERSION_FILE).read_text(encoding="utf-8"))
    if not match or not re.fullmatch(r"\d+\.\d+\.\d+", match["version"]):
        raise Refused(f'{VERSION_FILE} must hold one line __version__ = "X.Y.Z" (three numbers)')
    return match["version"]


def unreleased(text: str) -> str:
    """What CHANGELOG.md ``text`` lists under ``## [Unreleased]``; :class:`Refused` if nothing."""
    head = UNRELEASED.search(text)
    if head is None:
        raise Refused("CHANGELOG.md has no '## [Unreleased]' section (Keep a Changelog): add one with what changed")
    end = SECTION_END.search(text, head.end() + 1)
    body = text[head.end():end.start() if end else len(text)].strip()
    if not body:
        raise Refused("CHANGELOG.md's '## [Unreleased]' section is empty: say what changed in this release first")
    return body


def _run(root: Path, *args: str) -> subprocess.CompletedProcess:
    # The venv's bin first: the build hook runs `uv` from there.
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    env = dict(os.environ, PATH=path, COLUMNS="120")  # (its messages are boxed to the terminal's width)
    return subprocess.run(args, cwd=root, capture_output=True, text=True, env=env)


def git(root: Path, *args: str) -> str:
    done = _run(root, "git", *args)
    if done.returncode:
        raise Refused(f"git {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def bump_my_version(root: Path, command: str, *args: str) -> subprocess.CompletedProcess:
    """``bump-my-version COMMAND --current-version <helpers.__version__> ARGS``, run in ``root``."""
    return _run(root, sys.executable, "-m", "bumpversion", command, "--current-version", read_version(root), *args)


def new_version(root: Path, part: str) -> str:
    """The version bump-my-version's ``part`` bump gives, without changing anything.

    (Through its Python API: ``bump-my-version show --increment`` ignores ``--current-version``
    and fails without one in the configuration or a tag.)
    """
    from bumpversion.bump import get_next_version
    from bumpversion.config import get_configuration
    from bumpversion.context import get_context

    current = read_version(root)
    with contextlib.chdir(root):  # (it reads git's state from the working directory)
        config = get_configuration(root / "pyproject.toml", current_version=current)
        new = get_next_version(config.version_config.parse(current), config, part, None)
        return config.version_config.serialize(new, get_context(config))


def refusals(root: Path, new: str) -> None:
    """Raise :class:`Refused` if the release ``new`` must not be made now (see the module docstring)."""
    if navigation.read_repository(root / "pyproject.toml") is None:
        raise Refused(
            "Source under [project.urls] in pyproject.toml is still the placeholder "
            f"(https://github.com/{navigation.PLACEHOLDER}): set it to the repository's GitHub address, "
            "run `make navigation`, commit, then release."
        )
    dirty = git(root, "status", "--porcelain", "--untracked-files=normal")
    if dirty.strip():
        raise Refused("the working tree is not clean: commit or stash these first (a release is exactly a commit):\n"
                      + dirty.rstrip())
    if (root / "tools" / "navigation.py").exists():
        check = _run(root, sys.executable, "tools/navigation.py", "--check")
        if check.returncode:
            raise Refused("generated links are out of date: " + check.stdout.strip())
    changelog = root / "CHANGELOG.md"
    if not changelog.exists():
        raise Refused("there is no CHANGELOG.md (Keep a Changelog) with an '## [Unreleased]' section")
    unreleased(changelog.read_text(encoding="utf-8"))
    if git(root, "tag", "--list", f"v{new}").strip():
        raise Refused(f"the tag v{new} exists already")


def release(root: Path, part: str = DEFAULT_PART) -> str:
    """Make the release (see the module docstring) and return its version; :class:`Refused` if it must not be made."""
    old = read_version(root)
    new = new_version(root, part)
    refusals(root, new)
    done = bump_my_version(root, "bump", part)
    if done.returncode:
        changed = [line[3:] for line in git(root, "status", "--porcelain").splitlines()]
        if changed:
            git(root, "checkout", "HEAD", "--", *changed)
        said = [line.strip(" │╭╮╰╯─") for line in (done.stdout + done.stderr).splitlines()]
        raise Refused("bump-my-version failed (the build?), nothing was changed:\n"
                      + "\n".join(line for line in said if line))
    print(f"release: {old} -> {new}, committed and tagged v{new}")
    for path in sorted((root / "dist").glob(f"*-{new}[.-]*")):
        print(f"  built {path.relative_to(root)}")
    print(f"Publish it: git push origin HEAD v{new}")
    return new


def main(argv: list[str], root: Path = ROOT) -> int:
    parser = argparse.ArgumentParser(description="Refuse what must not be released, then bump-my-version bump PART.")
    parser.add_argument("part", nargs="?", default=DEFAULT_PART, choices=PARTS,
                        help=f"which part of X.Y.Z to raise (default {DEFAULT_PART})")
    args = parser.parse_args(argv)
    try:
        release(root, args.part)
    except Refused as exc:
        print(f"release refused: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
