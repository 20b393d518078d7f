"""Write the public student repository: this one without the instructor material (issue 25).

    python tools/make_student_repo.py [OUT]        (default: build/student-repo; `make student-repo`)

A graded course keeps two repositories (docs/teaching.md, "Which files go where"): this
one, private, for the instructor, and a public one that students, Binder, Colab and the
hub's nbgitpuller link see. This script writes the public one from the files git tracks
here (a clean checkout: nothing untracked or ignored is copied), leaving out

- ``instructor/``: the worked solutions, the points, the hidden tests, the exam answers;
- the grading tools and their tests: :data:`GRADING`;
- every test that reads the instructor material (it names ``instructor``), since it
  could not run there.

It refuses to write when a notebook left in would still hold a worked answer (a code
cell tagged ``solution`` with code in it). The output folder is replaced.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "build" / "student-repo"
INSTRUCTOR = "instructor/"
GRADING = ("tools/make_nbgrader_course.py", "tools/make_student_repo.py",
           "tests/test_nbgrader.py", "tests/test_classroom.py", "tests/test_student_repo.py")


def tracked_files(root: Path = ROOT) -> list[str]:
    """The files git tracks, as paths relative to ``root``."""
    out = subprocess.run(["git", "ls-files", "-z"], cwd=root, check=True, capture_output=True).stdout
    return sorted(p for p in out.decode("utf-8").split("\0") if p)


def instructor_only(path: str, root: Path = ROOT) -> bool:
    """True for a file the student repository leaves out."""
    if path.startswith(INSTRUCTOR) or path in GRADING:
        return True
    if path.startswith("tests/") and path.endswith(".py"):
        return "instructor" in (root / path).read_text(encoding="utf-8")
    return False


def worked_answers(path: Path) -> list[str]:
    """Ids of the cells of a notebook that hold a worked answer (tag ``solution``, with code)."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    return [cell.get("id", "?") for cell in nb.get("cells", [])
            if "solution" in cell.get("metadata", {}).get("tags", []) and "".join(cell.get("source", "")).strip()
            and cell.get("cell_type") == "code"]


def make(out: Path = DEFAULT_OUT, root: Path = ROOT) -> tuple[list[str], list[str]]:
    """Write the student repository into ``out``; return (files written, files left out)."""
    kept, left = [], []
    for path in tracked_files(root):
        (left if instructor_only(path, root) else kept).append(path)
    leaks = [f"{p}: {', '.join(cells)}" for p in kept if p.endswith(".ipynb")
             for cells in [worked_answers(root / p)] if cells]
    if leaks:
        raise SystemExit("make_student_repo: worked answers in notebooks left in:\n  " + "\n  ".join(leaks))
    if out.exists():
        shutil.rmtree(out)
    for path in kept:
        target = out / path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / path, target)
    return kept, left


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    kept, left = make(args.out)
    print(f"make_student_repo: {len(kept)} files into {args.out}; left out {len(left)}:")
    folders = sorted({p.split("/")[0] + "/" if p.startswith(INSTRUCTOR) else p for p in left})
    print("  " + "\n  ".join(folders))
    return 0


if __name__ == "__main__":
    sys.exit(main())
