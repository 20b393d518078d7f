"""Git's clean filter for notebooks: what JupyterLab writes back on save never reaches git.

    git config filter.notebook.clean "python3 tools/clean_notebook.py"   (make lab does this)
    python3 tools/clean_notebook.py < in.ipynb > out.ipynb              (what git runs)
    python3 tools/clean_notebook.py --check NOTEBOOK ...                 exit 1 if one would change

``.gitattributes`` gives every ``*.ipynb`` the filter ``notebook``; ``make lab``,
``make setup`` and the test set-up configure it in the clone. Opening, running and
saving a lesson in JupyterLab then leaves ``git status`` clean, because git compares
the cleaned text with the stored one. Outputs are kept: the stored notebooks hold
them. What goes is exactly what a save adds and the stored notebooks never hold:

* ``metadata.language_info.version`` (the Python version of the kernel);
* ``metadata.widgets`` (ipywidgets' saved state: fresh random model ids each run);
* the cell metadata keys ``collapsed``, ``scrolled`` and ``execution`` (JupyterLab's
  mirror of ``jupyter.outputs_hidden``, the output scroll state, cell timings);
* each widget view's random ``model_id``, written ``<cell id>-<output index>`` as
  tools/run_notebooks.py writes it.

On a save in ``make lab`` (:func:`pre_save_hook`) each cell also keeps the hidden source or
outputs the file on disk gives it: running all cells un-hides them (:func:`keep_hidden`).

The text is written as nbformat writes it (sorted keys, indent 1, a final newline),
so every stored notebook passes through byte for byte (tests/test_notebook_storage.py
checks all of them). Standard library only: git can run it in a fresh clone before
any venv exists. Input that is not a notebook's JSON (a merge conflict, say) passes
through unchanged.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
CELL_KEYS = ("collapsed", "scrolled", "execution")


def clean(nb: dict) -> dict:
    """Remove from ``nb`` (in place, and return it) what a JupyterLab save adds."""
    metadata = nb.get("metadata", {})
    metadata.get("language_info", {}).pop("version", None)
    metadata.pop("widgets", None)
    for cell in nb.get("cells", []):
        cell_metadata = cell.get("metadata", {})
        for key in CELL_KEYS:
            cell_metadata.pop(key, None)
        for k, output in enumerate(cell.get("outputs", [])):
            view = output.get("data", {}).get(WIDGET_VIEW) if isinstance(output, dict) else None
            if isinstance(view, dict) and "model_id" in view:
                view["model_id"] = f"{cell.get('id', 'cell')}-{k}"
    return nb


def clean_text(text: str) -> str:
    """The cleaned notebook as nbformat writes it; ``text`` itself when it is not a notebook."""
    try:
        nb = json.loads(text)
    except ValueError:
        return text
    if not isinstance(nb, dict) or "cells" not in nb:
        return text
    return json.dumps(clean(nb), indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--check"]:
        changed = [p for p in argv[1:] if clean_text(Path(p).read_text(encoding="utf-8"))
                   != Path(p).read_text(encoding="utf-8")]
        for path in changed:
            print(f"clean_notebook: {path} would change")
        return 1 if changed else 0
    data = sys.stdin.buffer.read().decode("utf-8")
    sys.stdout.buffer.write(clean_text(data).encode("utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main())


HIDDEN_KEYS = ("source_hidden", "outputs_hidden")


def keep_hidden(nb: dict, saved: dict) -> dict:
    """Give each cell of ``nb`` (in place, and return it) the ``jupyter.source_hidden`` and
    ``outputs_hidden`` of the cell with its id and type in ``saved``, the notebook on disk.

    Running a cell in JupyterLab shows what was hidden: a Markdown cell that is rendered
    loses ``source_hidden``, a code cell that runs loses ``outputs_hidden``. That is the
    view of the moment, not an edit: a save keeps what the file had (a new cell keeps its
    own). To hide or show a cell for good, edit the file's metadata (or the notebook
    outside ``make lab``).
    """
    before = {}
    for cell in saved.get("cells", []):
        if isinstance(cell, dict) and "id" in cell:
            before[(cell["id"], cell.get("cell_type"))] = cell.get("metadata", {})
    for cell in nb.get("cells", []):
        old_metadata = before.get((cell.get("id"), cell.get("cell_type")))
        if old_metadata is None:
            continue
        old = old_metadata.get("jupyter", {})
        metadata = cell.setdefault("metadata", {})
        hidden = metadata.setdefault("jupyter", {})
        for key in HIDDEN_KEYS:
            if key in old:
                hidden[key] = old[key]
            else:
                hidden.pop(key, None)
        if not hidden and "jupyter" not in old_metadata:
            del metadata["jupyter"]
    return nb


def pre_save_hook(model, path=None, contents_manager=None, **kwargs):
    """Jupyter server's ``FileContentsManager.pre_save_hook``: a save writes the cleaned notebook.

    Git's filter alone leaves ``git status`` reporting a notebook whose file size a save
    changed (git trusts a changed size without running the filter), so ``make lab`` also
    cleans before the file is written (tools/jupyter_server_config.py installs this hook):
    the file on disk stays byte for byte the stored one when the outputs are the same.
    The hidden state of each cell is the file's, not the run's (:func:`keep_hidden`).
    """
    if model.get("type") != "notebook" or not isinstance(model.get("content"), dict):
        return
    clean(model["content"])
    os_path = None
    if contents_manager is not None and path and hasattr(contents_manager, "_get_os_path"):
        os_path = Path(contents_manager._get_os_path(path))
    if os_path is not None and os_path.is_file():
        try:
            saved = json.loads(os_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        if isinstance(saved, dict):
            keep_hidden(model["content"], saved)
