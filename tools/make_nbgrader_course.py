"""Export the exercise notebooks as an nbgrader course source.

    python tools/make_nbgrader_course.py [--course-id ID] [COURSE_ROOT]     (default: build/nbgrader)

For every ``<SOLUTIONS>/<name>.ipynb`` (:data:`SOLUTIONS`, the instructor's worked
answers) this writes ``COURSE_ROOT/source/<name>/<name>.ipynb``, one nbgrader
assignment per exercise notebook, and ``COURSE_ROOT/nbgrader_config.py`` with the course
id ``ID`` (default :data:`COURSE_ID`; it replaces a config already there). In each
notebook:

- a code cell tagged ``solution`` becomes an nbgrader *solution* cell, its
  worked answer between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` (so
  ``nbgrader generate_assignment`` replaces it with a stub in the release);
- the check cell after it becomes a locked, *autograded test* cell worth the
  points its task declares in ``instructor/points.toml`` (:data:`POINTS_FILE`, the
  one place points are declared): it prints the friendly verdict and then
  ``assert``s it (a :class:`helpers.checks.CheckResult` is true only when
  correct). A graded *function* gets hidden tests too: the task's function of
  ``instructor/hidden_tests/<name>.py`` (other shapes: d_k != d_v, a single token,
  batch axes where the task has them, fully masked rows, logits of 1e4 from E5 on;
  its reference computed with NumPy inline, not with ``helpers``), copied between
  ``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS``, which the release does
  not show;
- the markdown cell that states a task gets its points in its heading, e.g.
  "(3 points)", read from the same file;
- every other cell is kept as it is, outputs cleared, except that the top
  navigation cell loses its "Open in Colab" link: an nbgrader assignment is
  worked on and submitted in the course's JupyterHub, and the link would open
  the solution notebook. The ``colab-install`` cell stays; outside Colab it
  installs nothing (it only checks that ``import helpers`` finds this collection's
  package) and prints nothing, so it changes neither the release nor autograding.

Then, with nbgrader installed (``make grade-venv``)::

    cd build/nbgrader && nbgrader generate_assignment E6-backward
    nbgrader autograde E6-backward --create

docs/teaching.md's assessment table lists the same points (tests/test_nbgrader.py
checks it against :data:`POINTS_FILE`); docs/classroom.md runs the whole class loop.
"""

from __future__ import annotations

import ast
import copy
import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
import navigation  # noqa: E402  (tools/navigation.py: the Colab link)

ROOT = Path(__file__).resolve().parent.parent
INSTRUCTOR = ROOT / "instructor"
"""Instructor-only material: points, hidden tests, exam model answers (not in the wheel or the student repository)."""
SOLUTIONS = ROOT / "instructor" / "solutions"
"""The worked solution notebooks the course is exported from: the one place that names their folder."""
POINTS_FILE = INSTRUCTOR / "points.toml"
HIDDEN_TESTS = INSTRUCTOR / "hidden_tests"
DEFAULT_COURSE = ROOT / "build" / "nbgrader"
COURSE_ID = "attention-step-by-step"


@dataclass(frozen=True)
class Task:
    """One autograded task: a check cell of an exercise notebook (a row of instructor/points.toml)."""

    notebook: str
    exercise: str
    title: str
    check: str
    points: int
    hidden: str | None = None


def tasks(path: Path = POINTS_FILE) -> list[Task]:
    """Every task of ``path``, in the notebooks' order."""
    with open(path, "rb") as f:
        return [Task(**row) for row in tomllib.load(f)["task"]]


def tasks_of(notebook: str, path: Path = POINTS_FILE) -> list[Task]:
    return [t for t in tasks(path) if t.notebook == notebook]


def totals(path: Path = POINTS_FILE) -> dict[str, int]:
    """``{notebook: points}`` and the course's total under ``"total"``."""
    out: dict[str, int] = {}
    for task in tasks(path):
        out[task.notebook] = out.get(task.notebook, 0) + task.points
    out["total"] = sum(t.points for t in tasks(path))
    return out


def points_label(task: Task) -> str:
    """The label the released notebook's task heading gets: "(2 points)", "(part (b): 1 point)"."""
    unit = "point" if task.points == 1 else "points"
    part = re.fullmatch(r"\d+\((\w)\)", task.exercise)
    return f"(part ({part.group(1)}): {task.points} {unit})" if part else f"({task.points} {unit})"


def hidden_source(task: Task) -> str:
    """The source of the task's hidden-test function (instructor/hidden_tests/<notebook>.py)."""
    path = HIDDEN_TESTS / f"{task.notebook}.py"
    text = path.read_text(encoding="utf-8")
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef) and node.name == task.hidden:
            return ast.get_source_segment(text, node)
    raise ValueError(f"{path} has no function {task.hidden}")


def trap_source() -> str:
    """The source of ``graded_without_kernels`` (instructor/hidden_tests/kernel_traps.py), which runs
    each hidden test with the library's kernels as traps that fail it."""
    path = HIDDEN_TESTS / "kernel_traps.py"
    text = path.read_text(encoding="utf-8")
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef) and node.name == "graded_without_kernels":
            return ast.get_source_segment(text, node)
    raise ValueError(f"{path} has no function graded_without_kernels")


CONFIG_TEMPLATE = '''# nbgrader configuration of the course exported by tools/make_nbgrader_course.py.
c = get_config()  # noqa: F821 - provided by nbgrader
c.CourseDirectory.course_id = "{course_id}"
c.ClearSolutions.code_stub = {{"python": "# YOUR CODE HERE\\nraise NotImplementedError()"}}
c.ExecutePreprocessor.timeout = 300
'''
CONFIG = CONFIG_TEMPLATE.format(course_id=COURSE_ID)


def _tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def _nbgrader(cell, *, grade_id, solution=False, grade=False, locked=False, points=None):
    meta = {
        "grade": grade,
        "grade_id": grade_id,
        "locked": locked,
        "schema_version": 3,
        "solution": solution,
        "task": False,
    }
    if points is not None:
        meta["points"] = points
    cell.metadata["nbgrader"] = meta


def check_call(source: str) -> ast.Call:
    """The ``check_*(...)`` call of a check cell (its only statement)."""
    tree = ast.parse(source)
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Expr) or not isinstance(tree.body[0].value, ast.Call):
        raise ValueError(f"a check cell should hold one check_*(...) call: {source!r}")
    call = tree.body[0].value
    if not isinstance(call.func, ast.Name) or not call.func.id.startswith("check_"):
        raise ValueError(f"a check cell should call a check_* function: {source!r}")
    return call


def grading_source(source: str, task: Task) -> str:
    """The autograded test cell's source for a check cell's ``check_*(...)`` call."""
    call = check_call(source)
    if call.func.id != task.check:
        raise ValueError(f"{task.notebook} exercise {task.exercise}: the notebook calls {call.func.id}, "
                         f"{POINTS_FILE.name} says {task.check}")
    lines = [
        f"result = {source.strip()}",
        "print(result)",
        "assert result, result.message",
    ]
    if task.hidden:
        answer = ast.unparse(call.args[0])
        lines += ["### BEGIN HIDDEN TESTS", hidden_source(task), "", "", trap_source(), "", "",
                  f"graded_without_kernels({task.hidden}, {answer})", "### END HIDDEN TESTS"]
    return "\n".join(lines)


def _label_heading(cell, task: Task) -> None:
    """Append the task's points to the first heading line of its markdown cell."""
    lines = cell.source.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("#"):
            lines[i] = f"{line.rstrip()} {points_label(task)}"
            cell.source = "\n".join(lines)
            return
    raise ValueError(f"{task.notebook} exercise {task.exercise}: its task cell has no heading")


def _check_names(nb) -> list[str]:
    cells = nb.cells
    return [check_call(c.source).func.id for i, c in enumerate(cells)
            if i and c.cell_type == "code" and "solution" in _tags(cells[i - 1]) and cells[i - 1].cell_type == "code"]


def notebook_of(nb) -> str:
    """The name of the exercise notebook ``nb`` is, found from its sequence of checks."""
    found = _check_names(nb)
    names = {t.notebook for t in tasks()}
    matches = [n for n in sorted(names) if [t.check for t in tasks_of(n)] == found]
    if len(matches) != 1:
        raise ValueError(f"no single notebook of {POINTS_FILE.name} has the checks {found}")
    return matches[0]


def course_version(nb, name: str | None = None):
    """A copy of the solution notebook ``nb`` (exercise notebook ``name``) as an nbgrader source notebook."""
    nb = copy.deepcopy(nb)
    name = name or notebook_of(nb)
    todo = tasks_of(name)
    found = _check_names(nb)
    if [t.check for t in todo] != found:
        raise ValueError(f"{name}: the notebook's checks {found} are not {POINTS_FILE.name}'s "
                         f"{[t.check for t in todo]}")
    cells = nb.cells
    out = []
    done = 0
    for i, cell in enumerate(cells):
        cell = copy.deepcopy(cell)
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
        previous = cells[i - 1] if i else None
        following = cells[i + 1] if i + 1 < len(cells) else None
        cell_id = cell.get("id", f"cell-{i}")
        if i == 1 and cell.cell_type == "markdown" and navigation.NAV_TAG in _tags(cell):
            cell.source = navigation.set_colab_link(cell.source, None)
        if (cell.cell_type == "markdown" and following is not None and following.cell_type == "code"
                and "solution" in _tags(following)):
            _label_heading(cell, todo[done])
        if cell.cell_type == "code" and "solution" in _tags(cell):
            cell.source = "### BEGIN SOLUTION\n" + cell.source.rstrip() + "\n### END SOLUTION"
            _nbgrader(cell, grade_id=f"answer-{cell_id}", solution=True)
        elif previous is not None and previous.cell_type == "code" and "solution" in _tags(previous):
            task = todo[done]
            cell.source = grading_source(cell.source, task)
            _nbgrader(cell, grade_id=f"test-{cell_id}", grade=True, locked=True, points=task.points)
            done += 1
        out.append(cell)
    nb.cells = out
    nb.metadata.pop("widgets", None)
    nbformat.validate(nb)
    return nb


def points_of(nb) -> list[tuple[str, int]]:
    """``[(check name, points)]`` of the test cells of a course notebook, in order (one per cell)."""
    found = []
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade"):
            first = cell.source.splitlines()[0]
            found.append((first.split("=", 1)[1].strip().split("(")[0], meta["points"]))
    return found


def export(course: Path = DEFAULT_COURSE, solutions: Path = SOLUTIONS, course_id: str = COURSE_ID) -> list[Path]:
    """Write the course source and its config (course id ``course_id``) under ``course``; return the notebooks."""
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", course_id):
        raise ValueError(f"a course id is letters, digits, '.', '_' and '-': {course_id!r}")
    course.mkdir(parents=True, exist_ok=True)
    (course / "nbgrader_config.py").write_text(CONFIG_TEMPLATE.format(course_id=course_id), encoding="utf-8")
    written = []
    for path in sorted(solutions.glob("*.ipynb")):
        nb = course_version(nbformat.read(path, as_version=4), path.stem)
        target = course / "source" / path.stem / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, target)
        written.append(target)
    return written


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("course", nargs="?", type=Path, default=DEFAULT_COURSE, help="the course folder")
    parser.add_argument("--course-id", default=COURSE_ID, help=f"nbgrader's course id (default {COURSE_ID})")
    args = parser.parse_args(argv)
    course = args.course.resolve()
    written = export(course, course_id=args.course_id)
    # The points the test cells carry, summed cell by cell, as nbgrader's gradebook does.
    total = sum(points for p in written for _, points in points_of(nbformat.read(p, as_version=4)))
    print(f"nbgrader course {args.course_id}: {len(written)} assignments, {total} points, in {course}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
