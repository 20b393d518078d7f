"""Test every declared version floor: the oldest allowed Python, every dependency at its floor.

    python3 tools/floors.py constraints    print `name==floor` for every requirement of pyproject.toml
    python3 tools/floors.py python         print the path of a Python of the oldest allowed version
    python3 tools/floors.py run [PYTEST ARGS...]
                                           `make test-floors`: build/floors/.venv on that Python,
                                           install `.[test,bench]` constrained to the floors, run pytest

pip has no "lowest versions" resolution, so the floors become a constraints
file (`numpy==1.24`, ...) for the direct requirements; the indirect ones
resolve to whatever the floors allow. Runs with the standard library only
(Python 3.11+: tomllib), from any Python 3.11+.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build" / "floors"
# The browser tests need Chromium and a JupyterLab server; the slow ones build a wheel.
DEFAULT_PYTEST_ARGS = ["-m", "not browser and not slow"]
THREADS = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def requirements(project: dict | None = None) -> list[str]:
    """Every requirement string of the project: runtime, then each extra (self-references left out)."""
    project = project or _project()
    reqs = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        reqs.extend(r for r in extra if not _is_self(r, project["name"]))
    return reqs


def _is_self(requirement: str, name: str) -> bool:
    return re.split(r"[\s\[;<>=!~]", requirement.strip(), maxsplit=1)[0].lower() == name.lower()


def floor_of(requirement: str) -> tuple[str, str]:
    """'matplotlib>=3.10.7' -> ('matplotlib', '3.10.7'); a requirement without `>=` is an error."""
    spec = requirement.split(";")[0].strip()
    match = re.fullmatch(r"([A-Za-z0-9_.\-]+)\s*>=\s*([0-9][0-9A-Za-z.]*)", spec)
    if not match:
        raise ValueError(f"{requirement!r}: every requirement needs a `>=` floor (and nothing else)")
    return match.group(1).lower().replace("_", "-"), match.group(2)


def constraints(project: dict | None = None) -> str:
    floors = dict(floor_of(r) for r in requirements(project))
    return "".join(f"{name}=={version}\n" for name, version in sorted(floors.items()))


def oldest_python(project: dict | None = None) -> tuple[int, int]:
    """The version `requires-python` (a `>=X.Y`) allows first."""
    spec = (project or _project())["requires-python"]
    match = re.fullmatch(r">=\s*(\d+)\.(\d+)", spec.strip())
    if not match:
        raise ValueError(f"requires-python = {spec!r}: expected '>=X.Y'")
    return int(match.group(1)), int(match.group(2))


def _version_of(python: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run(
            [python, "-c", "import sys; print(*sys.version_info[:2])"],
            capture_output=True, text=True, timeout=30, check=True,
        ).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return None
    return int(out[0]), int(out[1])


def find_python(version: tuple[int, int]) -> str:
    """A Python interpreter of exactly ``version`` (major.minor), or SystemExit with what was tried.

    Looks at $FLOORS_PYTHON, then pythonX.Y and python3 on PATH, then pyenv's
    versions ($PYENV_ROOT or ~/.pyenv), newest patch release first.
    """
    wanted = "%d.%d" % version
    candidates = []
    if os.environ.get("FLOORS_PYTHON"):
        candidates.append(os.environ["FLOORS_PYTHON"])
    for name in (f"python{wanted}", "python3"):
        if shutil.which(name):
            candidates.append(shutil.which(name))
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    if pyenv.is_dir():
        def patch(p: Path) -> int:
            tail = p.name[len(wanted) + 1:]
            return int(tail) if tail.isdigit() else -1
        for d in sorted(pyenv.glob(f"{wanted}.*"), key=patch, reverse=True):
            candidates.append(str(d / "bin" / "python3"))
    for python in candidates:
        if _version_of(python) == version:
            return python
    raise SystemExit(
        f"test-floors needs Python {wanted} (the oldest that requires-python allows); none found among: "
        + (", ".join(candidates) or "nothing on PATH or in pyenv")
        + f". Install it (e.g. `pyenv install {wanted}`) or point FLOORS_PYTHON at one."
    )


def run(pytest_args: list[str]) -> int:
    python = find_python(oldest_python())
    BUILD.mkdir(parents=True, exist_ok=True)
    (BUILD / "constraints.txt").write_text(constraints(), encoding="utf-8")
    venv = BUILD / ".venv"
    bin_python = venv / "bin" / "python"
    if venv.exists():
        shutil.rmtree(venv)  # always fresh: nothing left over from an earlier set of floors
    steps = [
        [python, "-m", "venv", str(venv)],
        [str(bin_python), "-m", "pip", "install", "--quiet", "--upgrade", "pip"],
        [str(bin_python), "-m", "pip", "install", "--quiet", "-c", str(BUILD / "constraints.txt"),
         "-e", ".[test,bench]"],
    ]
    for step in steps:
        print("+", " ".join(step), flush=True)
        subprocess.run(step, cwd=ROOT, check=True)
    print("floors installed (direct requirements at their floor):", flush=True)
    freeze = subprocess.run([str(bin_python), "-m", "pip", "freeze"], capture_output=True, text=True, check=True).stdout
    (BUILD / "installed.txt").write_text(freeze, encoding="utf-8")
    floors = dict(floor_of(r) for r in requirements())
    pinned = {}
    for line in freeze.splitlines():
        if "==" in line:
            name, version = line.split("==", 1)
            pinned[name.lower().replace("_", "-")] = version
    for name, version in sorted(floors.items()):
        print(f"  {name}=={pinned.get(name, '?')}  (floor {version})")
    print(f"  python {'.'.join(map(str, oldest_python()))}", flush=True)
    cmd = [str(bin_python), "-m", "pytest", *(pytest_args or DEFAULT_PYTEST_ARGS)]
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(cmd, cwd=ROOT, env={**os.environ, **THREADS}).returncode


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"constraints", "python", "run"}:
        print(__doc__)
        return 2
    if argv[0] == "constraints":
        print(constraints(), end="")
    elif argv[0] == "python":
        print(find_python(oldest_python()))
    else:
        return run(argv[1:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
