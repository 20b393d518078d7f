"""Generate the student notebooks from the solution notebooks.

    python tools/make_student_notebooks.py           write exercises/student/*.ipynb
    python tools/make_student_notebooks.py --check   exit 1 (and list the files) if any is stale

For every ``instructor/solutions/<name>.ipynb`` this writes ``exercises/student/<name>.ipynb``
through two preprocessors:

* :class:`AnswerCells` turns each code cell tagged ``solution`` into an empty answer cell
  (tagged ``answer``, holding only ``# your answer here``). nbconvert has no preprocessor for
  this: its ``TagRemovePreprocessor`` drops a tagged cell, and nbgrader's ``ClearSolutions``
  reads ``### BEGIN SOLUTION`` markers these notebooks do not have.
* nbconvert's ``ClearOutputPreprocessor`` clears every output, execution count and timing.

Then the Python version is left out of the metadata (tools/slim_notebooks.py), and
:func:`check_student` refuses a result with a solution cell, an output or an execution count
left in. Everything else (task cells, set-up and check cells, the ``colab-install`` cell,
navigation, metadata) is kept, except the "Open in Colab" link of the top navigation cell: it
points at the student version itself. tools/navigation.py writes the link and the install
cell into the solution notebooks and imports this module; this one only moves that link from
``instructor/solutions/`` to ``exercises/student/`` and imports nothing of navigation.py.
The result depends only on the solution notebook: kept cells keep their ids and an answer
cell's id is the solution cell's id plus ``-answer``, so running the script twice gives the
same files. A student notebook with no solution notebook is reported as stale by ``--check``
and deleted otherwise.
"""

from __future__ import annotations

import copy
import re
import sys
from pathlib import Path

import nbformat
from nbconvert.preprocessors import ClearOutputPreprocessor, Preprocessor
from nbformat.v4 import new_code_cell

sys.path.insert(0, str(Path(__file__).resolve().parent))
import slim_notebooks  # noqa: E402  (tools/slim_notebooks.py: no Python version stored)

ROOT = Path(__file__).resolve().parent.parent
NAV_TAG = "navigation"  # tools/navigation.py's NAV_TAG: the top navigation cell
# The solution's "Open in Colab" link (tools/navigation.py writes it, once the repository is named)
SOLUTION_COLAB = re.compile(r"(\[Open in Colab\]\(https://colab\.research\.google\.com/github/[^)]*?/)"
                            r"instructor/solutions/(?P<name>[^)/]+)\)")
SOLUTIONS = ROOT / "instructor" / "solutions"
STUDENT = ROOT / "exercises" / "student"
SOLUTION_TAG = "solution"
ANSWER_TAG = "answer"
ANSWER_SOURCE = "# your answer here"


def _tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def is_solution(cell) -> bool:
    """True for a code cell tagged ``solution``."""
    return cell.cell_type == "code" and SOLUTION_TAG in _tags(cell)


def answer_cell(solution_cell):
    """The empty answer cell that replaces ``solution_cell`` (stable id)."""
    cell = new_code_cell(ANSWER_SOURCE, metadata={"tags": [ANSWER_TAG]})
    cell["id"] = f"{solution_cell.get('id', 'cell')}-{ANSWER_TAG}"[:64]
    return cell


class AnswerCells(Preprocessor):
    """Each code cell tagged ``solution`` replaced by its empty answer cell (:func:`answer_cell`)."""

    def preprocess(self, nb, resources):
        nb.cells = [answer_cell(cell) if is_solution(cell) else cell for cell in nb.cells]
        return nb, resources


def check_student(nb) -> None:
    """ValueError if the student notebook ``nb`` keeps a worked answer, an output or an execution count."""
    for index, cell in enumerate(nb.cells):
        if SOLUTION_TAG in _tags(cell):
            raise ValueError(f"cell {index} is still tagged {SOLUTION_TAG!r}: a worked answer left in")
        if cell.cell_type == "code" and (cell.get("outputs") or cell.get("execution_count") is not None):
            raise ValueError(f"cell {index} keeps an output or an execution count")


def student_version(nb, name: str | None = None):
    """A copy of the solution notebook ``nb`` with answers removed and outputs cleared.

    With ``name`` (the notebook's file name), the Colab link of the top
    navigation cell points at ``exercises/student/<name>``.
    """
    nb = copy.deepcopy(nb)
    # "execution": the timings a front end may record (nbconvert's default clears only the other two)
    clear = ClearOutputPreprocessor(remove_metadata_fields={"collapsed", "scrolled", "execution"})
    for preprocessor in (AnswerCells(), clear):
        nb, _ = preprocessor.preprocess(nb, {})
    nb.metadata.pop("widgets", None)
    slim_notebooks.slim(nb)  # outputs are gone; this drops the Python version, should the solution hold one
    cells = nb.cells
    if name is not None and len(cells) > 1 and NAV_TAG in _tags(cells[1]):
        cells[1].source = SOLUTION_COLAB.sub(lambda m: f"{m.group(1)}exercises/student/{name})", cells[1].source)
    check_student(nb)
    nbformat.validate(nb)
    return nb


def student_text_of(nb, name: str) -> str:
    """The text of the student notebook generated from the solution notebook ``nb`` named ``name``."""
    text = nbformat.writes(student_version(nb, name))
    return text if text.endswith("\n") else text + "\n"


def student_text(solution_path: Path) -> str:
    """The text of the student notebook generated from ``solution_path``."""
    return student_text_of(nbformat.read(solution_path, as_version=4), solution_path.name)


def expected(solutions: Path = SOLUTIONS, student: Path = STUDENT) -> dict[Path, str | None]:
    """Every student notebook path and the text it should have (None: it should not exist)."""
    result: dict[Path, str | None] = {
        student / path.name: student_text(path) for path in sorted(solutions.glob("*.ipynb"))
    }
    for path in sorted(student.glob("*.ipynb")):
        result.setdefault(path, None)
    return result


def stale(solutions: Path = SOLUTIONS, student: Path = STUDENT) -> list[Path]:
    """The student notebooks that are missing, out of date or without a solution notebook."""
    out = []
    for path, text in expected(solutions, student).items():
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current != text:
            out.append(path)
    return out


def main(argv: list[str]) -> int:
    check = "--check" in argv
    paths = stale()
    if check:
        if paths:
            print("student notebooks out of date: " + ", ".join(p.name for p in paths))
            print("run: python tools/make_student_notebooks.py")
            return 1
        return 0
    wanted = expected()
    STUDENT.mkdir(parents=True, exist_ok=True)
    for path in paths:
        text = wanted[path]
        if text is None:
            path.unlink()
        else:
            path.write_text(text, encoding="utf-8")
    print(f"student notebooks: {len(paths)} written or removed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
