"""Jupyter server configuration `make lab` passes with --config: saves leave git clean.

Every notebook JupyterLab saves goes through tools/clean_notebook.py's ``clean`` first,
so the Python version, "collapsed" keys, widget state and random widget ids a save
adds never reach the file (autosave included), and links to a notebook's headings land on them.
"""

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("clean_notebook", Path(__file__).with_name("clean_notebook.py"))
_clean_notebook = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_clean_notebook)

from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager  # noqa: E402


class CleanSavingContentsManager(AsyncLargeFileManager):
    """The server's default contents manager, with tools/clean_notebook.py's hook before every save."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.register_pre_save_hook(_clean_notebook.pre_save_hook)


c = get_config()  # noqa: F821 - defined by the traitlets config loader
c.ServerApp.contents_manager_class = CleanSavingContentsManager
# tools/lab/labextensions/attention-heading-links: a link to a notebook's #heading lands on the
# heading when it opens the notebook (JupyterLab alone leaves the view at the top).
c.LabApp.extra_labextensions_path = [str(Path(__file__).with_name("lab") / "labextensions")]
