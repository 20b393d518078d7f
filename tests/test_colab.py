"""The notebooks open in Google Colab: a link at the top, and a set-up cell that installs only there.

tools/navigation.py writes both, into the numbered notebooks and the exercise
notebooks (solution versions); tools/make_student_notebooks.py carries them into
the student versions, with the link pointing at the student version itself.
test_notebooks and test_exercises check that they are up to date. Here: what they say, and what the
set-up cell does on Colab and elsewhere (run with a fake ``google.colab`` module and a recorded
``subprocess.run``).
"""

import importlib.util
import subprocess
import sys
import types
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import make_nbgrader_course  # noqa: E402
import make_student_notebooks as msn  # noqa: E402
import navigation  # noqa: E402

NOTEBOOKS = navigation.numbered_notebooks()
EXERCISES = [
    (folder, path)
    for folder in ("solutions", "student")
    for path in sorted((ROOT / "exercises" / folder).glob("*.ipynb"))
]
INSTALL = ["-m", "pip", "install", "--quiet", "--no-deps", f"git+https://github.com/{navigation.REPOSITORY}"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_each_notebook_links_itself_in_colab_and_installs_first(path):
    nb = nbformat.read(path, as_version=4)
    url = f"https://colab.research.google.com/github/{navigation.REPOSITORY}/blob/main/notebooks/{path.name}"
    assert f"[Open in Colab]({url})" in nb.cells[1].source
    code = [c for c in nb.cells if c.cell_type == "code"]
    if code:
        assert "colab-install" in code[0].metadata.get("tags", [])
        assert code[0].source == navigation.INSTALL_SOURCE
        assert code[0].outputs == []
        # out of the learner's way (issue 17): collapsed to one line, never a slide
        assert code[0].metadata.get("jupyter", {}).get("source_hidden") is True
        assert code[0].metadata.get("slideshow", {}).get("slide_type") == "skip"
        assert all("colab-install" not in c.metadata.get("tags", []) for c in code[1:])


def test_there_are_exercise_notebooks_of_both_kinds():
    names = {folder: {p.name for f, p in EXERCISES if f == folder} for folder in ("solutions", "student")}
    assert names["solutions"] and names["solutions"] == names["student"]


@pytest.mark.parametrize("folder, path", EXERCISES, ids=[f"{f}/{p.name}" for f, p in EXERCISES])
def test_each_exercise_notebook_links_itself_in_colab_and_installs_first(folder, path):
    """A student version links the student version (what a student opens), a solution version itself."""
    nb = nbformat.read(path, as_version=4)
    url = f"https://colab.research.google.com/github/{navigation.REPOSITORY}/blob/main/exercises/{folder}/{path.name}"
    top = nb.cells[1]
    assert "navigation" in top.metadata.get("tags", [])
    assert top.source.endswith(f" | [Open in Colab]({url})")
    links = [c.source.count("colab.research.google.com") for c in nb.cells if c.cell_type == "markdown"]
    assert sum(links) == 1, "one Colab link per notebook, in the top navigation cell"
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert "colab-install" in code[0].metadata.get("tags", [])
    assert code[0].source == navigation.INSTALL_SOURCE
    assert code[0].outputs == []
    assert all("colab-install" not in c.metadata.get("tags", []) for c in code[1:])
    if folder == "solutions":
        assert code[0].execution_count == 1, "run the solution notebooks with the cell in place"


def test_the_exercise_colab_link_is_refreshed_not_repeated():
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

    nb = new_notebook(cells=[
        new_markdown_cell("# E9"),
        new_markdown_cell("[Contents](../../notebooks/00-index.ipynb)", metadata={"tags": ["navigation"]}),
        new_code_cell("x = 1"),
    ])
    navigation.set_exercise_cells(nb, "E9-x.ipynb", "exercises/solutions")
    first = nbformat.writes(nb)
    navigation.set_exercise_cells(nb, "E9-x.ipynb", "exercises/solutions")
    assert nbformat.writes(nb) == first
    assert nb.cells[1].source == (
        "[Contents](../../notebooks/00-index.ipynb) | [Open in Colab]("
        f"{navigation.colab_url('E9-x.ipynb', 'exercises/solutions')})"
    )
    assert [c.source for c in nb.cells if c.cell_type == "code"] == [navigation.INSTALL_SOURCE, "x = 1"]
    student = msn.student_version(nb, "E9-x.ipynb")
    assert student.cells[1].source.endswith(f"({navigation.colab_url('E9-x.ipynb', 'exercises/student')})")
    assert "exercises/solutions" not in student.cells[1].source
    assert navigation.set_colab_link(student.cells[1].source, None) == "[Contents](../../notebooks/00-index.ipynb)"


def test_the_nbgrader_export_keeps_the_install_cell_and_drops_the_colab_link():
    """An assignment is worked on in the course's hub: no link (it would open the solutions)."""
    path = navigation.exercise_notebooks()[0]
    nb = make_nbgrader_course.course_version(nbformat.read(path, as_version=4))
    assert all("colab.research.google.com" not in c.source for c in nb.cells)
    assert "navigation" in nb.cells[1].metadata.get("tags", [])
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code[0].source == navigation.INSTALL_SOURCE and "nbgrader" not in code[0].metadata


def test_the_repository_placeholder_matches_the_readme_badges():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"mybinder.org/v2/gh/{navigation.REPOSITORY}/HEAD" in readme
    assert f"colab.research.google.com/github/{navigation.REPOSITORY}/blob/main/" in readme


def _run_install_cell(monkeypatch, capsys, *, on_colab, helpers_installed):
    calls = []
    monkeypatch.setattr(subprocess, "run", lambda args, **kw: calls.append((args, kw)))
    if on_colab:
        google = types.ModuleType("google")
        google.colab = types.ModuleType("google.colab")
        monkeypatch.setitem(sys.modules, "google", google)
        monkeypatch.setitem(sys.modules, "google.colab", google.colab)
    else:
        monkeypatch.setitem(sys.modules, "google.colab", None)  # import google.colab -> ImportError
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec",
        lambda name, *a: ((real_find_spec(name, *a) if helpers_installed else None) if name == "helpers"
                          else real_find_spec(name, *a)),
    )
    exec(compile(navigation.INSTALL_SOURCE, "colab-install", "exec"), {})
    assert capsys.readouterr() == ("", ""), "the set-up cell must print nothing"
    return calls


def test_the_set_up_cell_installs_the_repository_on_colab_when_helpers_is_missing(monkeypatch, capsys):
    calls = _run_install_cell(monkeypatch, capsys, on_colab=True, helpers_installed=False)
    assert len(calls) == 1
    args, kw = calls[0]
    assert args == [sys.executable, *INSTALL] and kw == {"check": True}


@pytest.mark.parametrize("on_colab, helpers_installed", [(False, False), (False, True), (True, True)])
def test_the_set_up_cell_does_nothing_elsewhere_or_when_helpers_is_there(
        monkeypatch, capsys, on_colab, helpers_installed):
    assert _run_install_cell(monkeypatch, capsys, on_colab=on_colab, helpers_installed=helpers_installed) == []


def test_inserting_the_set_up_cell_keeps_one_top_to_bottom_run(tmp_path):
    """A rewritten notebook (run 1..N without the cell) gets it as count 1, the rest shifted."""
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

    nb = new_notebook(cells=[
        new_markdown_cell("# Title"),
        new_code_cell("x = 1", execution_count=1),
        new_code_cell("x", execution_count=2,
                      outputs=[new_output("execute_result", {"text/plain": "1"}, execution_count=2)]),
    ])
    navigation._set_install_cell(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert [c.execution_count for c in code] == [1, 2, 3]
    assert code[0].source == navigation.INSTALL_SOURCE and code[2].outputs[0].execution_count == 3
    before = nbformat.writes(nb)
    navigation._set_install_cell(nb)  # a second pass changes nothing
    assert nbformat.writes(nb) == before
    unrun = new_notebook(cells=[new_markdown_cell("# T"), new_code_cell("x = 1")])
    navigation._set_install_cell(unrun)
    assert [c.execution_count for c in unrun.cells if c.cell_type == "code"] == [None, None]
