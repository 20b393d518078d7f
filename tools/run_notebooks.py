"""Re-execute and re-save the notebooks, reproducibly.

    python tools/run_notebooks.py [NOTEBOOK ...]      (default: notebooks/*.ipynb)

Each notebook runs top to bottom in a fresh kernel of this environment, with
one BLAS thread and no timing metadata, and is saved with its outputs. Running
it twice gives no diff: the notebooks seed every random draw and fix their
print precision. A cell that raises stops the run, unless the cell is tagged
``raises-exception`` (a cell meant to show an error).

The saved file is slim (tools/slim_notebooks.py): no Python version in its
metadata, and each described figure stored once, as its ``<img>``. The kernel
already displays a described figure that way; should an output still carry an
``image/png`` beside its ``<img>`` (a kernel importing older helpers), the same
picture is removed and a different one is reported, and the run exits with 1.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

sys.path.insert(0, str(Path(__file__).resolve().parent))
import slim_notebooks  # noqa: E402  (tools/slim_notebooks.py)

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def run(path: Path) -> list[str]:
    """Run the notebook at ``path`` and save it; return what tools/slim_notebooks.py could not slim."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        kernel_name="python3",
        timeout=900,
        record_timing=False,  # no per-cell timestamps in the saved file
        coalesce_streams=True,  # one stream output per cell, however the kernel split it
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()
    # Widgets get fresh random model ids on every run: leave their saved state
    # out and give each widget view a stable id, so re-running gives no diff.
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        for k, output in enumerate(cell.get("outputs", [])):
            view = output.get("data", {}).get(WIDGET_VIEW)
            if view is not None:
                view["model_id"] = f"{cell.get('id', 'cell')}-{k}"
    _, problems = slim_notebooks.slim(nb, name=path.name)
    nbformat.validate(nb)
    nbformat.write(nb, path)
    return problems


def main(argv: list[str]) -> int:
    # The kernel is this interpreter's: put its bin directory first on PATH, and
    # give the kernel one BLAS thread unless the caller chose otherwise.
    os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    paths = [Path(a) for a in argv] or sorted(NOTEBOOKS.glob("*.ipynb"))
    problems = []
    for path in paths:
        print(f"running {path.name}", flush=True)
        problems += run(path.resolve())
    for problem in problems:
        print(f"run_notebooks: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
