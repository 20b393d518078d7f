"""Test every declared version floor: the oldest allowed Python, every dependency at its floor.

    python3 tools/floors.py constraints    print `name==floor` for every requirement of pyproject.toml
    python3 tools/floors.py python         print the path of a Python of the oldest allowed version
    python3 tools/floors.py run [PYTEST ARGS...]
                                           `make test-floors`: build/floors/.venv on that Python,
                                           install `.[test,bench]` at the floors, run pytest

The resolution is uv's (installed into the floors venv from PyPI):
`uv pip install --resolution lowest-direct` takes every direct requirement at the
lowest version it allows, and the indirect ones at the newest the floors allow.
The run then checks that each direct requirement did land on its floor, and stops
if one did not. Where uv cannot be installed, plain pip does the same with a
constraints file (`numpy==1.24`, ...: `floors.py constraints`). Runs with the
standard library only (Python 3.11+: tomllib), from any Python 3.11+.
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
EXTRAS = ("test", "bench")  # what the floors run installs, besides the runtime requirements
THREADS = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def requirements(project: dict | None = None, extras: tuple[str, ...] | None = None) -> list[str]:
    """Every requirement of the project: runtime, then each extra (all, or ``extras``; self-references out)."""
    project = project or _project()
    reqs = list(project["dependencies"])
    for name, extra in project.get("optional-dependencies", {}).items():
        if extras is None or name in extras:
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


def _step(cmd: list[str]) -> None:
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, cwd=ROOT, check=True)


def installed_versions(freeze: str) -> dict[str, str]:
    """``name==version`` lines (pip freeze) as {normalized name: version}."""
    found = {}
    for line in freeze.splitlines():
        if "==" in line:
            name, version = line.split("==", 1)
            found[name.strip().lower().replace("_", "-")] = version.strip()
    return found


def _release(version: str) -> tuple[int, ...]:
    """'1.24.0' -> (1, 24): the numeric release, trailing zeros dropped (1.24 and 1.24.0 are one version)."""
    parts = [int(p) for p in re.match(r"[0-9]+(?:\.[0-9]+)*", version).group(0).split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def off_floor(floors: dict[str, str], installed: dict[str, str]) -> list[str]:
    """The direct requirements not installed at their floor, as 'name installed (floor F)'."""
    return [f"{name} {installed.get(name, 'missing')} (floor {floor})" for name, floor in sorted(floors.items())
            if name not in installed or _release(installed[name]) != _release(floor)]


def run(pytest_args: list[str]) -> int:
    python = find_python(oldest_python())
    BUILD.mkdir(parents=True, exist_ok=True)
    (BUILD / "constraints.txt").write_text(constraints(), encoding="utf-8")
    venv = BUILD / ".venv"
    bin_python = venv / "bin" / "python"
    if venv.exists():
        shutil.rmtree(venv)  # always fresh: nothing left over from an earlier set of floors
    _step([python, "-m", "venv", str(venv)])
    _step([str(bin_python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--upgrade", "pip"])
    extras = f".[{','.join(EXTRAS)}]"
    if subprocess.run([str(bin_python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "uv"],
                      cwd=ROOT).returncode == 0:
        _step([str(bin_python), "-m", "uv", "pip", "install", "--quiet", "--python", str(bin_python),
               "--resolution", "lowest-direct", "-e", extras])
    else:
        print("uv is not available: pip, with the floors as constraints (slower)", flush=True)
        _step([str(bin_python), "-m", "pip", "install", "--quiet", "-c", str(BUILD / "constraints.txt"),
               "-e", extras])
    freeze = subprocess.run([str(bin_python), "-m", "pip", "list", "--format=freeze"],
                            capture_output=True, text=True, check=True).stdout
    (BUILD / "installed.txt").write_text(freeze, encoding="utf-8")
    floors = dict(floor_of(r) for r in requirements(extras=EXTRAS))
    installed = installed_versions(freeze)
    print("floors installed (direct requirements at their floor):", flush=True)
    for name, version in sorted(floors.items()):
        print(f"  {name}=={installed.get(name, '?')}  (floor {version})")
    print(f"  python {'.'.join(map(str, oldest_python()))}", flush=True)
    missed = off_floor(floors, installed)
    if missed:
        print("test-floors: not at the floor: " + ", ".join(missed), flush=True)
        return 1
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
