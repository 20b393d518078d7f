"""Live lecture mode (``make present``): a kernel runs its notebook's set-up cells as it starts.

jupyterlab-rise has no auto-run of chosen cells, and its presenter has no menu to
run them: the first Shift+Enter on a slide in the middle of a deck (an explorer)
would meet a ``NameError``, its imports sitting in a set-up cell that is not on
any slide. ``make present-venv`` makes this file an ``exec_files`` entry of the
IPython kernels of .venv-present (``etc/ipython/ipython_kernel_config.py``), so
every kernel the presenter starts reads the notebook it belongs to (the server
names it in ``JPY_SESSION_NAME``) and runs, silently, each code cell that
tools/slide_metadata.py calls a set-up cell: imports and session settings only.
Nothing is written to the notebook. A kernel that is not a notebook's (a console)
or a notebook that cannot be read runs nothing, and a set-up cell that fails
prints one line, never a traceback over the lecture.
"""

from __future__ import annotations


def setup_sources(path):
    """The sources of the set-up code cells of the notebook at ``path``, in order."""
    import sys
    from pathlib import Path

    import nbformat

    tools = str(Path(__file__).resolve().parent.parent)
    sys.path.insert(0, tools)
    try:
        import slide_metadata
    finally:
        sys.path.remove(tools)
    nb = nbformat.read(path, as_version=4)
    return [cell.source for cell in nb.cells if cell.cell_type == "code" and slide_metadata.is_setup(cell)]


def run_setup_cells(shell, path) -> int:
    """Run the set-up cells of ``path`` in ``shell``'s namespace; return how many ran."""
    ran = 0
    for source in setup_sources(path):
        result = shell.run_cell(source, store_history=False, silent=True)
        if not result.success:
            print(f"make present: a set-up cell of {path} failed: {result.error_in_exec or result.error_before_exec!r}")
            break
        ran += 1
    return ran


def _main():
    import os

    path = os.environ.get("JPY_SESSION_NAME", "")
    shell = globals().get("get_ipython", lambda: None)()
    if shell is None or not path.endswith(".ipynb") or not os.path.isfile(path):
        return
    try:
        run_setup_cells(shell, path)
    except Exception as error:  # a notebook that cannot be read: the lecture goes on without it
        print(f"make present: no set-up run for {os.path.basename(path)} ({type(error).__name__})")


if __name__ == "__main__":  # run by the kernel (exec_files), in the user's namespace: leave no names there
    _main()
    del setup_sources, run_setup_cells, _main
