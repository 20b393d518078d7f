"""`make student-repo`: the public student repository holds no instructor material (issue 25 item 1).

tools/make_student_repo.py writes this repository without ``instructor/`` (solutions,
points, hidden tests, exam answers), the grading tools and the tests that read them, and
refuses when a notebook left in still holds a worked answer.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import make_student_repo  # noqa: E402


@pytest.fixture(scope="module")
def student_repo(tmp_path_factory):
    out = tmp_path_factory.mktemp("student") / "repo"
    kept, left = make_student_repo.make(out)
    return out, kept, left


def test_the_student_repository_leaves_out_the_instructor_material(student_repo):
    out, kept, left = student_repo
    files = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    assert files == set(kept)
    assert not [f for f in files if f.startswith("instructor/")]
    assert not [f for f in files if f in make_student_repo.GRADING]
    assert [f for f in left if f.startswith("instructor/solutions/")], "the solutions were not among those left out"
    assert not [f for f in files if f.endswith(".py") and f.startswith("tests/")
                and "instructor" in (out / f).read_text(encoding="utf-8")]


def test_the_student_repository_has_what_a_student_works_with(student_repo):
    out, _, _ = student_repo
    for needed in ("README.md", "pyproject.toml", "Makefile", "notebooks/00-index.ipynb", "helpers/checks/_core.py",
                   "docs/glossary.md", "binder/environment.yml"):
        assert (out / needed).is_file(), needed
    tasks = sorted(p.name for p in (out / "exercises" / "student").glob("E*.ipynb"))
    assert tasks == sorted(p.name for p in (ROOT / "exercises" / "student").glob("E*.ipynb")) and len(tasks) == 7
    for path in out.rglob("*.ipynb"):
        assert make_student_repo.worked_answers(path) == [], path
    # its own helpers import, from its own folder
    found = subprocess.run([sys.executable, "-c", "import helpers.checks, helpers; print(helpers.__file__)"],
                           cwd=out, env={"PYTHONPATH": str(out), "PATH": "/usr/bin:/bin"},
                           capture_output=True, text=True, check=True).stdout.strip()
    assert Path(found).resolve().is_relative_to(out.resolve())


def test_a_worked_answer_left_in_a_notebook_stops_it(tmp_path):
    """A repository whose exercise notebook still holds a solution cell: nothing is written."""
    root = tmp_path / "source"
    (root / "exercises").mkdir(parents=True)
    cell = {"cell_type": "code", "id": "a1", "metadata": {"tags": ["solution"]}, "source": "x = 42\n",
            "outputs": [], "execution_count": None}
    nb = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (root / "exercises" / "E9.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "."], cwd=root, check=True)
    with pytest.raises(SystemExit, match="worked answers"):
        make_student_repo.make(tmp_path / "out", root=root)
    assert not (tmp_path / "out").exists()
    cell["source"] = ""  # the student copy's empty answer cell is fine
    (root / "exercises" / "E9.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    kept, _ = make_student_repo.make(tmp_path / "out", root=root)
    assert kept == ["exercises/E9.ipynb"]
