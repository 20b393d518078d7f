"""The notebooks open in Google Colab: a link at the top, and a set-up cell that installs only there.

tools/navigation.py writes both, into the numbered notebooks and the exercise
notebooks (solution versions); tools/make_student_notebooks.py carries them into
the student versions, with the link pointing at the student version itself.
test_notebooks and test_exercises check that they are up to date. Here: what they
say, and what the set-up cell does on Colab and elsewhere, and with a file or
folder named ``helpers`` beside the notebook (run in a fresh Python process, in a
temporary folder, as a kernel runs it: a fake ``google.colab`` module, a recorded
``subprocess.run``, and "not installed" simulated by a finder that sees only the
notebook's folder).
"""

import json
import os
import subprocess
import sys
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
    for folder, base in (("solutions", ROOT / "instructor"), ("student", ROOT / "exercises"))
    for path in sorted((base / folder).glob("*.ipynb"))
]
# A repository name for the tests that need one, whatever pyproject.toml says.
NAMED = "someone/attention-elsewhere"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_each_notebook_links_itself_in_colab_and_installs_first(path):
    nb = nbformat.read(path, as_version=4)
    if navigation.REPOSITORY is None:  # not named yet: no link that leads nowhere
        assert "colab.research.google.com" not in nb.cells[1].source
    else:
        url = f"https://colab.research.google.com/github/{navigation.REPOSITORY}/blob/main/notebooks/{path.name}"
        assert f"[Open in Colab]({url})" in nb.cells[1].source
    code = [c for c in nb.cells if c.cell_type == "code"]
    if code:
        assert "colab-install" in code[0].metadata.get("tags", [])
        assert code[0].source == navigation.install_source()
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
    top = nb.cells[1]
    assert "navigation" in top.metadata.get("tags", [])
    links = [c.source.count("colab.research.google.com") for c in nb.cells if c.cell_type == "markdown"]
    if navigation.REPOSITORY is None:
        assert sum(links) == 0, "no Colab link while the repository is not named"
    else:
        url = f"https://colab.research.google.com/github/{navigation.REPOSITORY}/blob/main/exercises/{folder}/{path.name}"
        assert top.source.endswith(f" | [Open in Colab]({url})")
        assert sum(links) == 1, "one Colab link per notebook, in the top navigation cell"
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert "colab-install" in code[0].metadata.get("tags", [])
    assert code[0].source == navigation.install_source()
    assert code[0].outputs == []
    assert all("colab-install" not in c.metadata.get("tags", []) for c in code[1:])
    if folder == "solutions":
        assert code[0].execution_count == 1, "run the solution notebooks with the cell in place"


def test_the_exercise_colab_link_is_refreshed_not_repeated(monkeypatch):
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

    monkeypatch.setattr(navigation, "REPOSITORY", NAMED)
    nb = new_notebook(cells=[
        new_markdown_cell("# E9"),
        new_markdown_cell("[Contents](../../notebooks/00-index.ipynb)", metadata={"tags": ["navigation"]}),
        new_code_cell("x = 1"),
    ])
    navigation.set_exercise_cells(nb, "E9-x.ipynb", "instructor/solutions")
    first = nbformat.writes(nb)
    navigation.set_exercise_cells(nb, "E9-x.ipynb", "instructor/solutions")
    assert nbformat.writes(nb) == first
    assert nb.cells[1].source == (
        "[Contents](../../notebooks/00-index.ipynb) | [Open in Colab]("
        f"{navigation.colab_url('E9-x.ipynb', 'instructor/solutions')})"
    )
    assert [c.source for c in nb.cells if c.cell_type == "code"] == [navigation.install_source(), "x = 1"]
    student = msn.student_version(nb, "E9-x.ipynb")
    assert student.cells[1].source.endswith(f"({navigation.colab_url('E9-x.ipynb', 'exercises/student')})")
    assert "instructor/solutions" not in student.cells[1].source
    assert navigation.set_colab_link(student.cells[1].source, None) == "[Contents](../../notebooks/00-index.ipynb)"
    # Source set back to the placeholder: the link goes, the hand-written ones stay
    monkeypatch.setattr(navigation, "REPOSITORY", None)
    navigation.set_exercise_cells(nb, "E9-x.ipynb", "instructor/solutions")
    assert nb.cells[1].source == "[Contents](../../notebooks/00-index.ipynb)"
    assert "colab" not in msn.student_version(nb, "E9-x.ipynb").cells[1].source


def test_the_nbgrader_export_keeps_the_install_cell_and_drops_the_colab_link():
    """An assignment is worked on in the course's hub: no link (it would open the solutions)."""
    path = navigation.exercise_notebooks()[0]
    nb = make_nbgrader_course.course_version(nbformat.read(path, as_version=4))
    assert all("colab.research.google.com" not in c.source for c in nb.cells)
    assert "navigation" in nb.cells[1].metadata.get("tags", [])
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code[0].source == navigation.install_source() and "nbgrader" not in code[0].metadata


# Runs cells as a kernel would: in a fresh Python, in the notebook's folder (sys.path[0] = ''), each
# cell's code in one namespace. Colab: a fake google.colab module on the path. `helpers` and its
# submodules are found on sys.path only, as with a regular install (setuptools' editable finder,
# which this venv has, also finds `helpers.attention` under a `helpers` that is not the package).
# "Installed": the real package on sys.path after the notebook's folder, as site-packages is; the
# recorded pip install puts it there. Prints {"calls", "stdout", "error"} as JSON.
KERNEL = r"""
import contextlib, importlib.machinery, io, json, os, subprocess, sys

cells, root, on_colab, installed = json.loads(sys.argv[1])


class OnSysPathOnly:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name != "helpers" and not name.startswith("helpers."):
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return spec


calls = []


def pip(args, **kw):
    calls.append([args, kw])
    sys.path.append(root)


subprocess.run = pip
sys.meta_path.insert(0, OnSysPathOnly)
if installed:
    sys.path.append(root)
if on_colab:
    sys.path.append(os.path.join(os.getcwd(), "..", "fake-colab"))
out, error = io.StringIO(), None
namespace = {}
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
    try:
        for cell in cells:
            exec(compile(cell, "cell", "exec"), namespace)
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
print(json.dumps({"calls": calls, "stdout": out.getvalue(), "error": error}))
"""


def _run_cells(tmp_path, cells, *, on_colab, installed, shadow=None):
    """Run ``cells`` in a kernel-like process whose notebook folder is ``tmp_path/notebook``."""
    folder = tmp_path / "notebook"
    folder.mkdir(parents=True)
    google = tmp_path / "fake-colab" / "google"
    google.mkdir(parents=True)
    (google / "__init__.py").write_text("")
    (google / "colab.py").write_text("")
    for name, text in (shadow or {}).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PYTHONSTARTUP"}}
    done = subprocess.run(
        [sys.executable, "-c", KERNEL, json.dumps([cells, str(ROOT), on_colab, installed])],
        cwd=folder, env=env, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _named_install_source(monkeypatch):
    monkeypatch.setattr(navigation, "REPOSITORY", NAMED)
    return navigation.install_source()


def test_the_set_up_cell_installs_the_repository_on_colab_when_the_package_is_missing(tmp_path, monkeypatch):
    result = _run_cells(tmp_path, [_named_install_source(monkeypatch)], on_colab=True, installed=False)
    assert result["calls"] == [[[sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                                 f"git+https://github.com/{NAMED}"], {"check": True}]]
    assert result == {"calls": result["calls"], "stdout": "", "error": None}, "installed, then silent"


@pytest.mark.parametrize("on_colab, installed", [(False, True), (True, True)])
def test_the_set_up_cell_does_nothing_elsewhere_or_when_the_package_is_there(tmp_path, monkeypatch, on_colab,
                                                                             installed):
    """With the real package: no install, no output, no error (so nbval sees an empty cell)."""
    result = _run_cells(tmp_path, [_named_install_source(monkeypatch)], on_colab=on_colab, installed=installed)
    assert result == {"calls": [], "stdout": "", "error": None}


def test_the_stored_set_up_and_import_cells_run_silently_with_the_real_package(tmp_path):
    """Notebook 01's first two code cells as stored (the set-up cell as pyproject.toml names the repository)."""
    nb = nbformat.read(ROOT / "notebooks" / "01-i-am-happy.ipynb", as_version=4)
    cells = [c.source for c in nb.cells if c.cell_type == "code"][:2]
    assert "from helpers import" in cells[1]
    assert _run_cells(tmp_path, cells, on_colab=False, installed=True) == {"calls": [], "stdout": "", "error": None}


SHADOWS = {
    "a one-line helpers.py": ({"helpers.py": "x = 1\n"}, "helpers.py"),
    "a helpers.py with a __version__": ({"helpers.py": "__version__ = '9'\n"}, "helpers.py"),
    "a helpers/ package": ({"helpers/__init__.py": ""}, os.path.join("helpers", "__init__.py")),
    # no __init__.py: a namespace package, which only hides a package that is not on sys.path
    # (not installed, or installed editable: setuptools' editable finder comes after sys.path)
    "an empty helpers/ folder": ({"helpers/notes.txt": ""}, "helpers"),
}


@pytest.mark.parametrize("shadow, named", SHADOWS.values(), ids=SHADOWS)
@pytest.mark.parametrize("on_colab, installed", [(False, True), (False, False), (True, True), (True, False)])
def test_a_helpers_beside_the_notebook_stops_it_at_once_naming_the_file(tmp_path, monkeypatch, shadow, named,
                                                                        on_colab, installed):
    """The set-up cell (and so the import cell after it) stops with the shadow's path and what to do.

    On Colab the guard is not fooled by it: it sees that this collection's package cannot be
    imported and installs it (which does not help while the shadow is there: the message says
    what does), where a check for any `helpers` would skip the install.
    """
    nb = nbformat.read(ROOT / "notebooks" / "01-i-am-happy.ipynb", as_version=4)
    import_cell = [c.source for c in nb.cells if c.cell_type == "code"][1]
    result = _run_cells(tmp_path, [_named_install_source(monkeypatch), import_cell], on_colab=on_colab,
                        installed=installed, shadow=shadow)
    hidden = not (named == "helpers" and installed)
    assert len(result["calls"]) == (1 if on_colab and hidden else 0)
    assert result["stdout"] == ""
    if not hidden:  # the installed package wins over a namespace folder: all is well
        assert result["error"] is None
        return
    path = tmp_path / "notebook" / named
    assert result["error"].startswith("ImportError: `import helpers` found ")
    assert repr(str(path)) in result["error"] if named == "helpers" else f"found {path}, " in result["error"]
    assert "not this collection's package: rename or move it, then restart the kernel" in result["error"]


def test_without_a_name_the_set_up_cell_says_on_colab_that_it_has_nothing_to_install_from(tmp_path, monkeypatch):
    monkeypatch.setattr(navigation, "REPOSITORY", None)
    source = navigation.install_source()
    assert "github.com" not in source and "subprocess" not in source
    result = _run_cells(tmp_path, [source], on_colab=True, installed=False)
    assert result["calls"] == []
    assert result["error"].startswith("ImportError: Nothing to install from")
    assert "pyproject.toml" in result["error"]
    # anywhere else, and on Colab with the package there, the same cell is silent
    for on_colab in (False, True):
        assert _run_cells(tmp_path / str(on_colab), [source], on_colab=on_colab, installed=True) == {
            "calls": [], "stdout": "", "error": None}


def test_the_set_up_cell_is_short():
    """Shown (collapsed) in every notebook: at most 25 lines, none over 120 columns."""
    lines = navigation.install_source().splitlines()
    assert len(lines) <= 25 and max(map(len, lines)) <= 120


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
    assert code[0].source == navigation.install_source() and code[2].outputs[0].execution_count == 3
    before = nbformat.writes(nb)
    navigation._set_install_cell(nb)  # a second pass changes nothing
    assert nbformat.writes(nb) == before
    unrun = new_notebook(cells=[new_markdown_cell("# T"), new_code_cell("x = 1")])
    navigation._set_install_cell(unrun)
    assert [c.execution_count for c in unrun.cells if c.cell_type == "code"] == [None, None]
