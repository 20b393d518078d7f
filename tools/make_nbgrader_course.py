"""Export the exercise notebooks as an nbgrader course source.

    python tools/make_nbgrader_course.py [COURSE_ROOT]     (default: build/nbgrader)

For every ``exercises/solutions/<name>.ipynb`` this writes
``COURSE_ROOT/source/<name>/<name>.ipynb``, one nbgrader assignment per exercise
notebook, and ``COURSE_ROOT/nbgrader_config.py``. In each notebook:

- a code cell tagged ``solution`` becomes an nbgrader *solution* cell, its
  worked answer between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` (so
  ``nbgrader generate_assignment`` replaces it with a stub in the release);
- the check cell after it becomes a locked, *autograded test* cell worth
  :data:`POINTS` of that check: it prints the friendly verdict and then
  ``assert``s it (a :class:`helpers.checks.CheckResult` is true only when
  correct). Checks of a student's function get hidden variants too, between
  ``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS``: the same check on
  other seeds of its random probes (other shapes and values), which the
  release version does not show;
- every other cell is kept as it is, outputs cleared, except that the top
  navigation cell loses its "Open in Colab" link: an nbgrader assignment is
  worked on and submitted in the course's JupyterHub, and the link would open
  the solution notebook. The ``colab-install`` cell stays; outside Colab it
  installs nothing (it only checks that ``import helpers`` finds this collection's
  package) and prints nothing, so it changes neither the release nor autograding.

Then, with nbgrader installed (``make grade-venv``)::

    cd build/nbgrader && nbgrader generate_assignment E6-backward
    nbgrader autograde E6-backward --create

The points are listed in docs/teaching.md's assessment scheme (the table there
is checked against :data:`POINTS` by tests/test_nbgrader.py).
"""

from __future__ import annotations

import ast
import copy
import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
import navigation  # noqa: E402  (tools/navigation.py: the Colab link)

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "exercises" / "solutions"
DEFAULT_COURSE = ROOT / "build" / "nbgrader"
COURSE_ID = "attention-step-by-step"

POINTS = {
    "check_section_5_2_exercise_1": 2,
    "check_section_5_2_exercise_2": 2,
    "check_flops": 1,
    "check_section_5_2_exercise_4": 2,
    "check_attention_entropy": 2,
    "check_i_am_happy_weights": 2,
    "check_i_am_happy_context": 2,
    "check_temperature_prediction": 2,
    "check_why_scale_512": 2,
    "check_init_std": 1,
    "check_journey_scores_row": 1,
    "check_journey_weights_row": 1,
    "check_self_attention": 3,
    "check_journey_variance_d100": 1,
    "check_definition_shapes": 1,
    "check_stable_softmax": 3,
    "check_masked_attention": 3,
    "check_attention_backward": 4,
    "check_masked_backward": 3,
    "check_online_softmax_merge": 4,
}
"""Points of each check's autograded test cell."""

FUNCTION_CHECKS = {
    "check_stable_softmax",
    "check_masked_attention",
    "check_self_attention",
    "check_attention_backward",
    "check_masked_backward",
    "check_online_softmax_merge",
}
HIDDEN_SEEDS = (101, 202)
"""Seeds of the hidden variants of the function checks (not the checks' default probes)."""

CONFIG = f'''# nbgrader configuration of the course exported by tools/make_nbgrader_course.py.
c = get_config()  # noqa: F821 - provided by nbgrader
c.CourseDirectory.course_id = "{COURSE_ID}"
c.ClearSolutions.code_stub = {{"python": "# YOUR CODE HERE\\nraise NotImplementedError()"}}
c.ExecutePreprocessor.timeout = 300
'''


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
    if not isinstance(call.func, ast.Name) or call.func.id not in POINTS:
        raise ValueError(f"unknown check in {source!r}; add it to POINTS")
    return call


def grading_source(source: str) -> str:
    """The autograded test cell's source for a check cell's ``check_*(...)`` call."""
    call = check_call(source)
    name = call.func.id
    lines = [
        f"result = {source.strip()}",
        "print(result)",
        "assert result, result.message",
    ]
    if name in FUNCTION_CHECKS:
        args = ", ".join(ast.unparse(a) for a in call.args)
        lines += ["### BEGIN HIDDEN TESTS"]
        for seed in HIDDEN_SEEDS:
            lines += [
                f"hidden = {name}({args}, seed={seed})",
                "assert hidden, hidden.message",
            ]
        lines += ["### END HIDDEN TESTS"]
    return "\n".join(lines)


def course_version(nb):
    """A copy of the solution notebook ``nb`` as an nbgrader source notebook."""
    nb = copy.deepcopy(nb)
    cells = nb.cells
    out = []
    for i, cell in enumerate(cells):
        cell = copy.deepcopy(cell)
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
        previous = cells[i - 1] if i else None
        cell_id = cell.get("id", f"cell-{i}")
        if i == 1 and cell.cell_type == "markdown" and navigation.NAV_TAG in _tags(cell):
            cell.source = navigation.set_colab_link(cell.source, None)
        if cell.cell_type == "code" and "solution" in _tags(cell):
            cell.source = "### BEGIN SOLUTION\n" + cell.source.rstrip() + "\n### END SOLUTION"
            _nbgrader(cell, grade_id=f"answer-{cell_id}", solution=True)
        elif previous is not None and previous.cell_type == "code" and "solution" in _tags(previous):
            name = check_call(cell.source).func.id
            cell.source = grading_source(cell.source)
            _nbgrader(cell, grade_id=f"test-{cell_id}", grade=True, locked=True, points=POINTS[name])
        out.append(cell)
    nb.cells = out
    nb.metadata.pop("widgets", None)
    nbformat.validate(nb)
    return nb


def points_of(nb) -> dict[str, int]:
    """``{check name: points}`` of the test cells of a course notebook, in order."""
    found = {}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade"):
            first = cell.source.splitlines()[0]
            found[first.split("=", 1)[1].strip().split("(")[0]] = meta["points"]
    return found


def export(course: Path = DEFAULT_COURSE, solutions: Path = SOLUTIONS) -> list[Path]:
    """Write the course source and config under ``course``; return the notebooks written."""
    course.mkdir(parents=True, exist_ok=True)
    (course / "nbgrader_config.py").write_text(CONFIG, encoding="utf-8")
    written = []
    for path in sorted(solutions.glob("*.ipynb")):
        nb = course_version(nbformat.read(path, as_version=4))
        target = course / "source" / path.stem / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, target)
        written.append(target)
    return written


def main(argv: list[str]) -> int:
    course = Path(argv[0]).resolve() if argv else DEFAULT_COURSE
    written = export(course)
    total = sum(sum(points_of(nbformat.read(p, as_version=4)).values()) for p in written)
    print(f"nbgrader course source: {len(written)} assignments, {total} points, in {course}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
