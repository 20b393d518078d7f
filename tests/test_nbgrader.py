"""The nbgrader export: generate the release version, autograde a right and a wrong submission.

nbgrader lives in its own virtual environment, .venv-grade (``make grade-venv``; the
``grade`` extra of pyproject.toml), so that its pins never touch the main .venv. This test
builds it when missing, exports the course with tools/make_nbgrader_course.py into a
temporary course root, runs ``nbgrader generate_assignment`` and ``nbgrader autograde`` on
E6-backward (7 points: 4 for the backward pass, 3 for the masked one), and reads the scores
from the gradebook.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import make_nbgrader_course as course  # noqa: E402

GRADE_BIN = ROOT / ".venv-grade" / "bin"
ASSIGNMENT = "E6-backward"

pytestmark = pytest.mark.grade


def _env():
    env = dict(os.environ)
    env["PATH"] = str(GRADE_BIN) + os.pathsep + env.get("PATH", "")  # nbgrader runs `alembic`
    env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env.pop("PYTHONPATH", None)
    return env


def _nbgrader(root, *args):
    run = subprocess.run(
        [str(GRADE_BIN / "nbgrader"), *args, f"--CourseDirectory.root={root}"],
        cwd=root, env=_env(), capture_output=True, text=True, timeout=900,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return run


@pytest.fixture(scope="module")
def grade_venv():
    if not (GRADE_BIN / "nbgrader").exists():
        subprocess.run(["make", "grade-venv"], cwd=ROOT, check=True, timeout=1800)
    return GRADE_BIN


def _submission(release_nb, answers):
    """The release notebook with its solution cells replaced by ``answers`` (in order)."""
    nb = nbformat.read(release_nb, as_version=4)
    cells = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]
    assert len(cells) == len(answers)
    for cell, answer in zip(cells, answers):
        cell.source = answer
    return nb


def _solutions():
    nb = nbformat.read(course.SOLUTIONS / f"{ASSIGNMENT}.ipynb", as_version=4)
    return [c.source for c in nb.cells if "solution" in c.metadata.get("tags", [])]


def test_export_marks_solutions_tests_points_and_hidden_tests(tmp_path):
    written = course.export(tmp_path)
    assert len(written) == len(list(course.SOLUTIONS.glob("*.ipynb")))
    total = 0
    for path in written:
        nb = nbformat.read(path, as_version=4)
        solutions = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]
        tests = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
        assert solutions and len(solutions) == len(tests), path.name
        for cell in solutions:
            assert cell.source.startswith("### BEGIN SOLUTION\n") and cell.source.endswith("### END SOLUTION")
        for cell in tests:
            assert cell.metadata.nbgrader["locked"] and cell.metadata.nbgrader["points"] > 0
            assert "assert result, result.message" in cell.source
            name = re.search(r"(check_\w+)\(", cell.source).group(1)
            assert ("### BEGIN HIDDEN TESTS" in cell.source) == (name in course.FUNCTION_CHECKS)
        total += sum(course.points_of(nb).values())
    assert total == sum(course.POINTS.values())
    # Every check that is used by an exercise notebook has its points, and the lesson plan lists them.
    plan = (ROOT / "docs" / "teaching.md").read_text(encoding="utf-8")
    for name, points in course.POINTS.items():
        assert re.search(rf"`{name}`\s*\|\s*{points}\s*\|", plan), f"docs/teaching.md lacks {name} | {points}"


def test_autograde_right_and_wrong_submissions(tmp_path, grade_venv):
    root = tmp_path / "course"
    course.export(root)
    _nbgrader(root, "generate_assignment", ASSIGNMENT, "--force")
    release = root / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    released = release.read_text(encoding="utf-8")
    assert "BEGIN HIDDEN TESTS" not in released and "seed=101" not in released
    assert "raise NotImplementedError()" in released
    assert "def attention_backward" not in released

    right = _solutions()
    # Bob's backward pass is right; his masked version ignores the mask (and so yields NaN-free
    # but wrong gradients): 4 of 7 points.
    wrong = [right[0], "def masked_backward(q, k, v, d_out, mask):\n    return attention_backward(q, k, v, d_out)\n"]
    for student, answers in (("alice", right), ("bob", wrong)):
        target = root / "submitted" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        target.parent.mkdir(parents=True)
        nbformat.write(_submission(release, answers), target)
    _nbgrader(root, "autograde", ASSIGNMENT, "--force")

    read = subprocess.run(
        [str(GRADE_BIN / "python"), "-c", (
            "import json, sys\n"
            "from nbgrader.api import Gradebook\n"
            f"with Gradebook('sqlite:///{root / 'gradebook.db'}') as gb:\n"
            f"    s = {{n: gb.find_submission('{ASSIGNMENT}', n) for n in ('alice', 'bob')}}\n"
            "    print(json.dumps({n: [x.score, x.max_score] for n, x in s.items()}))\n"
        )],
        env=_env(), capture_output=True, text=True, timeout=300,
    )
    assert read.returncode == 0, read.stderr
    scores = json.loads(read.stdout.strip().splitlines()[-1])
    assert scores == {"alice": [7.0, 7.0], "bob": [4.0, 7.0]}, scores
    graded = nbformat.read(root / "autograded" / "bob" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    text = json.dumps([c.get("outputs", []) for c in graded.cells])
    assert "mask_ignored" not in text and "do not depend on the mask" in text  # the friendly message
