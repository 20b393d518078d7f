"""Notebooks at half the weight (issue 22): each figure stored once, no Python version stored.

A described figure (helpers/figures.py) is stored as its ``<img class="described-figure">``
(text/html, the PNG inside, the description as alt) and a text/plain, never with an
image/png of the same picture beside it; the notebooks' metadata holds no
``language_info.version``. tools/slim_notebooks.py brings a notebook to that form, a
kernel displays figures in it, and tools/publish.py still gives the
decks an image/png with its alt.
"""

import base64
import copy
import os
import sys
from pathlib import Path
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import nbformat  # noqa: E402
import pytest  # noqa: E402
from IPython.core.formatters import DisplayFormatter  # noqa: E402
from IPython.core.pylabtools import select_figure_formats  # noqa: E402
from nbformat.v4 import new_code_cell, new_notebook, new_output  # noqa: E402

from helpers import figures, plots  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import make_student_notebooks  # noqa: E402
import publish  # noqa: E402
import slim_notebooks  # noqa: E402

NOTEBOOKS = slim_notebooks.collection_notebooks()
IDS = [p.relative_to(ROOT).as_posix() for p in NOTEBOOKS]
PNG = b"\x89PNG\r\n\x1a\n"
PICTURES = set(figures.PICTURE_FORMATS)


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _described(text="A line rising from 0 to 1."):
    fig, ax = plt.subplots(figsize=(1.5, 1.5))
    ax.plot([0, 1])
    return figures.describe(fig, text)


def _undescribed():
    fig, ax = plt.subplots(figsize=(1.5, 1.5))
    ax.plot([1, 0])
    return fig


def _shell(formats=("png",)):
    """What a kernel's display machinery holds: a DisplayFormatter set up as the inline backend sets it."""
    shell = SimpleNamespace(display_formatter=DisplayFormatter())
    select_figure_formats(shell, set(formats), bbox_inches="tight")
    return shell


# ---------------------------------------------------------------------------
# The stored notebooks
# ---------------------------------------------------------------------------


def test_the_collection_has_its_31_notebooks():
    assert len(NOTEBOOKS) >= 31
    assert {p.parent.name for p in NOTEBOOKS} == {"notebooks", "solutions", "student"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_no_stored_figure_is_stored_twice(path):
    nb = nbformat.read(path, as_version=4)
    twice = [f"cell {i}: {sorted(PICTURES & set(out.data))}"
             for i, cell in enumerate(nb.cells) for out in cell.get("outputs", [])
             if slim_notebooks.described_figure(out) is not None and PICTURES & set(out.get("data", {}))]
    assert twice == [], "a picture beside its <img>: run `python tools/slim_notebooks.py`"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_no_python_version_is_stored(path):
    nb = nbformat.read(path, as_version=4)
    language = nb.metadata.get("language_info", {})
    assert "version" not in language, f"language_info.version {language['version']!r}: run tools/slim_notebooks.py"
    nbformat.validate(nb)


def test_the_stored_notebooks_are_slim_by_the_script_too():
    assert slim_notebooks.main(["--check"]) == 0


def test_every_stored_img_holds_a_png():
    found = 0
    for path in NOTEBOOKS:
        for cell in nbformat.read(path, as_version=4).cells:
            for out in cell.get("outputs", []):
                figure = slim_notebooks.described_figure(out)
                if figure is not None:
                    alt, png = figure
                    assert alt.strip() and base64.b64decode(png).startswith(PNG), (path.name, alt)
                    found += 1
    assert found >= 90  # the figures of the collection (98 when issue 22 was done)


# ---------------------------------------------------------------------------
# A kernel displays a described figure once
# ---------------------------------------------------------------------------


def test_a_described_figure_is_displayed_as_its_img_only():
    shell = _shell()
    assert figures.register(shell)
    data, metadata = shell.display_formatter.format(_described())
    assert set(data) == {"text/html", "text/plain"}, "the PNG must be stored once, in the <img>"
    alt, png = slim_notebooks.described_figure({"data": data})
    assert alt == "A line rising from 0 to 1." and base64.b64decode(png).startswith(PNG)
    assert metadata == {}


def test_an_undescribed_figure_keeps_its_png_and_has_no_html():
    shell = _shell()
    figures.register(shell)
    data, _ = shell.display_formatter.format(_undescribed())
    assert set(data) == {"image/png", "text/plain"}


@pytest.mark.parametrize("formats", [("png",), ("retina",), ("svg",), ("png", "pdf", "jpeg")])
def test_one_picture_whatever_the_inline_formats_and_after_a_reconfiguration(formats):
    shell = _shell(formats)
    figures.register(shell)
    assert set(shell.display_formatter.format(_described())[0]) == {"text/html", "text/plain"}
    # %config InlineBackend.figure_formats = ... drops every formatter of figures; register() restores ours
    select_figure_formats(shell, set(formats))
    assert figures.register(shell)
    assert set(shell.display_formatter.format(_described())[0]) == {"text/html", "text/plain"}
    figures.register(shell)  # twice changes nothing (no printer wrapped twice)
    undescribed = shell.display_formatter.format(_undescribed())[0]
    assert "text/html" not in undescribed and undescribed.keys() & PICTURES


def test_a_helper_heatmap_is_displayed_once():
    shell = _shell()
    image = plots.heatmap([[0.7, 0.3], [0.4, 0.6]], ["a", "b"], ["a", "b"])
    figures.register(shell)
    data, _ = shell.display_formatter.format(image.figure)
    assert set(data) == {"text/html", "text/plain"}
    assert slim_notebooks.described_figure({"data": data})[0].startswith("Heatmap of attention weights")


@pytest.mark.parametrize("kind", ["AttentionExplorer", "TrainedHeadExplorer"])
def test_an_explorer_is_displayed_with_one_picture(kind):
    from helpers import widgets

    explorer = getattr(widgets, kind)()
    data, _ = DisplayFormatter().format(explorer)
    assert not PICTURES & set(data), "the snapshot must be stored once, in the <img>"
    alt, png = slim_notebooks.described_figure({"data": data})
    assert alt and base64.b64decode(png).startswith(PNG)


def test_a_notebook_run_in_a_live_kernel_stores_each_figure_once(monkeypatch):
    from nbclient import NotebookClient

    # the kernel is this interpreter's, and it imports this checkout's helpers (its working directory)
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    nb = new_notebook(cells=[
        new_code_cell("import matplotlib.pyplot as plt\nfrom helpers import figures, plots"),
        new_code_cell("fig, ax = plt.subplots(figsize=(2, 2))\nax.plot([0, 1])\n"
                      "figures.show(fig, 'A rising line.')"),
        new_code_cell("plots.heatmap([[0.7, 0.3], [0.4, 0.6]], ['a', 'b'], ['a', 'b'])\nplt.show()"),
        new_code_cell("fig, ax = plt.subplots(figsize=(2, 2))\nax.plot([1, 0])\nplt.show()"),
    ])
    NotebookClient(nb, kernel_name="python3", timeout=120, record_timing=False,
                   resources={"metadata": {"path": str(ROOT)}}).execute()
    shown = [[set(out.data) for out in cell.outputs if "data" in out] for cell in nb.cells[1:]]
    assert shown == [[{"text/html", "text/plain"}], [{"text/html", "text/plain"}], [{"image/png", "text/plain"}]]
    assert slim_notebooks.described_figure(nb.cells[1].outputs[0])[0] == "A rising line."
    # and the saved form: tools/run_notebooks.py slims, which leaves no Python version
    assert "version" in nb.metadata.language_info
    changes, problems = slim_notebooks.slim(nb)
    assert (changes, problems) == (1, []) and "version" not in nb.metadata.language_info


# ---------------------------------------------------------------------------
# tools/slim_notebooks.py
# ---------------------------------------------------------------------------


def _old_form(png=None, text="A figure & its <words>."):
    """A notebook saved before issue 22: an image/png beside the <img>, and the Python version."""
    picture = base64.b64encode(PNG + b"picture/with/slashes").decode("ascii")
    data = {"image/png": png or picture, "text/html": figures.img_html(picture, text), "text/plain": "<Figure>"}
    nb = new_notebook(cells=[new_code_cell("x", execution_count=1, outputs=[
        new_output("display_data", data=data, metadata={"image/png": {"width": 100}}),
        new_output("display_data", data={"image/png": picture, "text/plain": "<Figure>"}),  # undescribed
        new_output("display_data", data={"text/html": "<b>a table</b>", "text/plain": "t"}),
    ])])
    nb.metadata["language_info"] = {"name": "python", "version": "3.11.7", "pygments_lexer": "ipython3"}
    return nb, picture


def test_slim_removes_the_same_picture_and_the_version_and_nothing_else():
    nb, picture = _old_form()
    before = copy.deepcopy(nb)
    assert slim_notebooks.slim(nb) == (2, [])
    first, second, third = nb.cells[0].outputs
    assert set(first.data) == {"text/html", "text/plain"} and first.metadata == {}
    assert slim_notebooks.described_figure(first) == ("A figure & its <words>.", picture)
    assert second == before.cells[0].outputs[1] and third == before.cells[0].outputs[2]
    assert nb.metadata.language_info == {"name": "python", "pygments_lexer": "ipython3"}
    nbformat.validate(nb)
    assert slim_notebooks.is_slim(nb) and not slim_notebooks.is_slim(before)


def test_slim_is_idempotent_on_a_file(tmp_path):
    nb, _ = _old_form()
    path = tmp_path / "old.ipynb"
    nbformat.write(nb, path)
    assert slim_notebooks.main(["--check", str(path)]) == 1
    assert slim_notebooks.main([str(path)]) == 0
    once = path.read_bytes()
    assert slim_notebooks.main([str(path)]) == 0 and path.read_bytes() == once
    assert slim_notebooks.main(["--check", str(path)]) == 0


def test_a_different_png_beside_the_img_is_reported_and_kept_unless_redrawn():
    other = base64.b64encode(PNG + b"drawn a second time").decode("ascii")
    nb, _ = _old_form(png=other)
    changes, problems = slim_notebooks.slim(nb, name="n.ipynb")
    assert changes == 1 and len(problems) == 1 and problems[0].startswith("n.ipynb cell 0 output 0:")
    assert nb.cells[0].outputs[0].data["image/png"] == other
    assert slim_notebooks.slim(nb, redrawn=True) == (1, [])
    assert "image/png" not in nb.cells[0].outputs[0].data


def test_the_student_notebooks_are_written_without_a_version():
    nb, _ = _old_form()
    student = make_student_notebooks.student_version(nb)
    assert "version" not in student.metadata.language_info and student.cells[0].outputs == []


# ---------------------------------------------------------------------------
# The site and the decks: an image/png with its alt, made from the <img>
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("form", ["slim", "old"])
def test_publish_gives_the_pages_an_image_png_with_the_alt(form):
    nb, picture = _old_form()
    if form == "slim":
        slim_notebooks.slim(nb)
    publish.figure_alt(nb)
    first, second, third = nb.cells[0].outputs
    assert first.data["image/png"] == picture and "text/html" not in first.data
    assert first.metadata["image/png"]["alt"] == "A figure & its <words>."
    assert "alt" not in second.get("metadata", {}).get("image/png", {})
    assert third.data["text/html"] == "<b>a table</b>"


# ---------------------------------------------------------------------------
# The clean filter (tools/clean_notebook.py): a JupyterLab save leaves git clean
# ---------------------------------------------------------------------------

import asyncio  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402

import clean_notebook  # noqa: E402


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_the_clean_filter_passes_every_stored_notebook_through_unchanged(path):
    text = path.read_text(encoding="utf-8")
    assert clean_notebook.clean_text(text) == text
    assert clean_notebook.clean_text(clean_notebook.clean_text(text)) == text


def _as_jupyterlab_saves(text):
    """What a JupyterLab save writes back: the Python version, "collapsed" keys, widget state and ids."""
    nb = json.loads(text)
    nb["metadata"]["language_info"]["version"] = "3.11.7"
    nb["metadata"]["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}, "version_major": 2}}
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            cell["metadata"]["collapsed"] = bool(cell["metadata"].get("jupyter", {}).get("outputs_hidden"))
            cell["metadata"]["execution"] = {"iopub.status.busy": "2026-12-01T23:00:00.000Z"}
            for output in cell.get("outputs", []):
                view = output.get("data", {}).get(clean_notebook.WIDGET_VIEW)
                if view:
                    view["model_id"] = "0b5c1f3e2a7d4c9b8e6f1a2b3c4d5e6f"
    return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def _as_jupyterlab_runs_and_saves(text):
    """What a save after "Run All" writes: the above, and every hidden Markdown source and code output shown."""
    nb = json.loads(_as_jupyterlab_saves(text))
    for cell in nb["cells"]:
        hidden = cell["metadata"].get("jupyter", {})
        hidden.pop("source_hidden" if cell["cell_type"] == "markdown" else "outputs_hidden", None)
        if "jupyter" in cell["metadata"] and not hidden:
            del cell["metadata"]["jupyter"]
    return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def test_the_clean_filter_removes_what_a_jupyterlab_save_adds():
    for path in (ROOT / "notebooks" / "00-index.ipynb", ROOT / "notebooks" / "07-explorer.ipynb"):
        text = path.read_text(encoding="utf-8")
        saved = _as_jupyterlab_saves(text)
        assert saved != text
        assert clean_notebook.clean_text(saved) == text
    assert clean_notebook.clean_text("<<<<<<< HEAD\n{") == "<<<<<<< HEAD\n{"  # not a notebook: unchanged


def _lab_contents_manager(root):
    """The contents manager `make lab` runs, configured by tools/jupyter_server_config.py."""
    from traitlets.config import Config

    config = Config()
    path = ROOT / "tools" / "jupyter_server_config.py"
    exec(compile(path.read_text(), str(path), "exec"), {"get_config": lambda: config, "__file__": str(path)})
    return config.ServerApp.contents_manager_class(root_dir=str(root))


def test_make_lab_passes_the_server_configuration():
    out = subprocess.run(["make", "-s", "-n", "lab"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert f'--config="{ROOT}/tools/jupyter_server_config.py"' in out
    assert "filter.notebook.clean" in subprocess.run(["make", "-s", "-n", "lab"], cwd=ROOT, capture_output=True,
                                                     text=True, check=True).stdout


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_jupyterlab_save_of_every_lesson_leaves_git_status_clean(tmp_path):
    """In a clone: each notebook saved through the lab's contents manager, as JupyterLab sends it after a run.

    The run has shown every hidden Markdown source and code output; the save keeps the file's hidden state.
    """
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(clone)], check=True, timeout=300)
    for path in NOTEBOOKS:  # this checkout's notebooks, committed or not
        shutil.copy(path, clone / path.relative_to(ROOT))
    for name in (".gitattributes", "Makefile"):
        shutil.copy(ROOT / name, clone / name)
    subprocess.run(["git", "add", "-A"], cwd=clone, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "t"],
                   cwd=clone, check=True)
    manager = _lab_contents_manager(clone)
    for path in NOTEBOOKS:
        relative = path.relative_to(ROOT).as_posix()
        content = json.loads(_as_jupyterlab_runs_and_saves(path.read_text(encoding="utf-8")))
        asyncio.run(manager.save({"type": "notebook", "format": "json", "content": content}, relative))
    status = subprocess.run(["git", "status", "--porcelain", "--", "*.ipynb"], cwd=clone, check=True,
                            capture_output=True, text=True).stdout
    assert status == "", status
