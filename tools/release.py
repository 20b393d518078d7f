"""Cut a release: bump the version, date the changelog, build, commit and tag.

    python tools/release.py [minor|patch|major]     (make release PART=...; minor when not given)

Semantic versioning, for a course: ``patch`` corrects (a wrong number, a typo, a
broken link), ``minor`` adds or changes lessons, exercises or helpers while every
existing notebook keeps working (the usual release, hence the default), ``major``
changes something a learner's saved work or a course built on it relies on (a
renamed function, a renumbered notebook).

It refuses, exits 1 and changes nothing while:

* ``Source`` under ``[project.urls]`` in pyproject.toml is still the placeholder
  (tools/navigation.py writes every link to the repository from it, so a release
  would ship links that lead nowhere);
* the working tree is not clean (``git status --porcelain`` lists anything,
  untracked files included): a release is exactly a commit;
* tools/navigation.py --check finds a generated link or cell out of date;
* CHANGELOG.md has no ``## [Unreleased]`` section, or nothing in it;
* the tag ``vX.Y.Z`` exists already.

Otherwise it writes the new version into the one place that holds it
(``__version__`` in helpers/__init__.py, which pyproject.toml reads through
``[tool.setuptools.dynamic]``), moves what is under ``## [Unreleased]`` in
CHANGELOG.md (Keep a Changelog) into a new ``## [X.Y.Z] - YYYY-MM-DD`` section
below an empty ``## [Unreleased]``, updates ``version:`` and ``date-released:`` of
CITATION.cff if there is one, builds the sdist and the wheel into ``dist/``, then
commits those files ("Release X.Y.Z") and creates the annotated tag ``vX.Y.Z``.
If the build fails, the files are restored and nothing is committed. Nothing is
pushed: the last lines printed say how.

The build runs setuptools' PEP 517 hooks (what ``python -m build`` runs) on a copy
of the tracked files, with the ``[build-system] requires`` of pyproject.toml
installed by pip into a temporary folder: no package beyond pip is needed, but
pip must reach PyPI or find setuptools in its cache.
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import navigation  # noqa: E402  (tools/navigation.py: reads [project.urls] Source)

ROOT = Path(__file__).resolve().parent.parent
PARTS = ("major", "minor", "patch")
DEFAULT_PART = "minor"
VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")
VERSION_LINE = re.compile(r'^__version__ = "(?P<version>[^"]*)"$', re.MULTILINE)
UNRELEASED = re.compile(r"^## \[Unreleased\][^\n]*\n", re.MULTILINE | re.IGNORECASE)
# What ends a changelog section: the next "## " heading or the link definitions at the end.
SECTION_END = re.compile(r"^(?:## |\[[^\]\n]+\]: )", re.MULTILINE)


class Refused(Exception):
    """A release that must not be made; the message says why and what to do."""


def bump(version: str, part: str) -> str:
    """``version`` (``X.Y.Z``) with its ``part`` (major, minor or patch) raised by one and the parts after it zeroed.

    >>> bump("0.1.0", "patch"), bump("0.1.7", "minor"), bump("0.9.3", "major")
    ('0.1.1', '0.2.0', '1.0.0')
    """
    match = VERSION.fullmatch(version)
    if not match:
        raise ValueError(f"the version must be X.Y.Z (three numbers), not {version!r}")
    if part not in PARTS:
        raise ValueError(f"the part to bump must be one of {', '.join(PARTS)}, not {part!r}")
    major, minor, patch = map(int, match.groups())
    if part == "major":
        return f"{major + 1}.0.0"
    if part == "minor":
        return f"{major}.{minor + 1}.0"
    return f"{major}.{minor}.{patch + 1}"


def version_file(root: Path) -> Path:
    """The file that holds ``__version__``: the module pyproject.toml's ``[tool.setuptools.dynamic]`` names."""
    pyproject = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    attr = pyproject.get("tool", {}).get("setuptools", {}).get("dynamic", {}).get("version", {}).get("attr")
    if "version" not in pyproject.get("project", {}).get("dynamic", []) or not attr:
        raise Refused("pyproject.toml must take its version from the package: dynamic = [\"version\"] and "
                      "[tool.setuptools.dynamic] version = { attr = \"helpers.__version__\" }")
    module = attr.rpartition(".")[0].replace(".", "/")
    for path in (root / module / "__init__.py", root / f"{module}.py"):
        if path.exists():
            return path
    raise Refused(f"pyproject.toml reads the version from {attr}, but {module}/__init__.py does not exist")


def read_version(root: Path) -> str:
    path = version_file(root)
    match = VERSION_LINE.search(path.read_text(encoding="utf-8"))
    if not match:
        raise Refused(f'{path.relative_to(root)} has no line __version__ = "X.Y.Z"')
    return match["version"]


def with_version(text: str, version: str) -> str:
    return VERSION_LINE.sub(f'__version__ = "{version}"', text, count=1)


def moved_changelog(text: str, version: str, date: str) -> str:
    """CHANGELOG.md ``text`` with what is under ``## [Unreleased]`` moved to a new ``## [version] - date`` section.

    An empty ``## [Unreleased]`` stays on top, for what comes next (Keep a Changelog).
    """
    head = UNRELEASED.search(text)
    if head is None:
        raise Refused("CHANGELOG.md has no '## [Unreleased]' section (Keep a Changelog): add one with what changed")
    end = SECTION_END.search(text, head.end())
    end = end.start() if end else len(text)
    body = text[head.end():end].strip("\n")
    if not body.strip():
        raise Refused("CHANGELOG.md's '## [Unreleased]' section is empty: say what changed in this release first")
    rest = text[end:]
    return (text[:head.start()] + "## [Unreleased]\n\n" + f"## [{version}] - {date}\n\n" + body + "\n"
            + ("\n" + rest if rest else ""))


def with_citation(text: str, version: str, date: str) -> str:
    """CITATION.cff ``text`` with ``version:`` and ``date-released:`` set (each keeps its quotes, if any)."""
    def set_key(text: str, key: str, value: str) -> str:
        line = re.compile(rf'^{key}:[ \t]*(?P<q>["\']?)[^\n]*$', re.MULTILINE)
        match = line.search(text)
        if match is None:
            return text.rstrip("\n") + f'\n{key}: "{value}"\n'
        return text[:match.start()] + f"{key}: {match['q']}{value}{match['q']}" + text[match.end():]

    return set_key(set_key(text, "version", version), "date-released", date)


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
    if done.returncode:
        raise Refused(f"git {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def refusals(root: Path) -> None:
    """Raise :class:`Refused` if a release must not be made now (the checks of the module docstring but the tag's)."""
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
        check = subprocess.run([sys.executable, "tools/navigation.py", "--check"], cwd=root,
                               capture_output=True, text=True)
        if check.returncode:
            raise Refused("generated links are out of date: " + check.stdout.strip())


def build(root: Path, dist: Path) -> list[Path]:
    """The sdist and the wheel of the tracked files of ``root`` (as they are on disk), written into ``dist``."""
    config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["build-system"]
    dist.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        source, env = Path(tmp, "source"), Path(tmp, "env")
        for name in git(root, "ls-files", "-z").split("\0"):
            if name and (root / name).is_file():
                (source / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(root / name, source / name)
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--target", str(env), *config["requires"]],
                       check=True)
        # (the arguments are read first: setuptools' hooks rewrite sys.argv)
        hooks = ("import importlib, sys; name, out = sys.argv[1:]; backend = importlib.import_module(name); "
                 "names = [backend.build_sdist(out), backend.build_wheel(out)]; print('built:', *names)")
        # -S: no site-packages, so only the build requirements (PYTHONPATH) are importable
        done = subprocess.run([sys.executable, "-S", "-c", hooks, config["build-backend"], str(dist)], cwd=source,
                              env=dict(os.environ, PYTHONPATH=str(env)), capture_output=True, text=True, check=True)
    built = [line for line in done.stdout.splitlines() if line.startswith("built: ")][-1]
    return [dist / name for name in built.split()[1:]]


def release(root: Path, part: str = DEFAULT_PART, *, today: datetime.date | None = None,
            builder: Callable[[Path, Path], list[Path]] = build) -> str:
    """Make the release (see the module docstring) and return its version; :class:`Refused` if it must not be made."""
    refusals(root)
    old = read_version(root)
    new = bump(old, part)
    if git(root, "tag", "--list", f"v{new}").strip():
        raise Refused(f"the tag v{new} exists already")
    date = (today or datetime.date.today()).isoformat()
    changes = {version_file(root): with_version(version_file(root).read_text(encoding="utf-8"), new)}
    changelog = root / "CHANGELOG.md"
    if not changelog.exists():
        raise Refused("there is no CHANGELOG.md (Keep a Changelog) with an '## [Unreleased]' section")
    changes[changelog] = moved_changelog(changelog.read_text(encoding="utf-8"), new, date)
    citation = root / "CITATION.cff"
    if citation.exists():
        changes[citation] = with_citation(citation.read_text(encoding="utf-8"), new, date)
    originals = {path: path.read_text(encoding="utf-8") for path in changes}
    for path, text in changes.items():
        path.write_text(text, encoding="utf-8")
    try:
        built = builder(root, root / "dist")
    except BaseException as exc:
        for path, text in originals.items():
            path.write_text(text, encoding="utf-8")
        if not isinstance(exc, Exception):
            raise
        detail = getattr(exc, "stderr", "") or ""
        raise Refused(f"the build failed, nothing was changed: {exc}\n{detail}".rstrip()) from exc
    names = [path.relative_to(root).as_posix() for path in changes]
    git(root, "add", "--", *names)
    git(root, "commit", "--quiet", "-m", f"Release {new}", "--", *names)
    git(root, "tag", "-a", f"v{new}", "-m", f"Release {new}")
    print(f"release: {old} -> {new}, committed and tagged v{new}")
    for path in built:
        print(f"  built {path.relative_to(root) if path.is_relative_to(root) else path}")
    print(f"Publish it: git push origin HEAD v{new}")
    return new


def main(argv: list[str], root: Path = ROOT) -> int:
    parser = argparse.ArgumentParser(description="Bump the version, date the changelog, build, commit and tag.")
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
