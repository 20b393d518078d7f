"""Opening, running and saving lessons in `make lab`, autosave on, leaves a clone's `git status` clean.

A learner's route, followed literally in a throw-away clone of this repository (``git clone``
of the committed HEAD into a temporary folder, then ``make notebook-filter`` there, as
``make lab`` does before it starts): the server runs the very command line that
``make lab`` prints in the clone (``make -n lab``, with this test run's venv as ``VENV``, and a
port, a token, ``--no-browser`` and ``--LabApp.expose_app_in_browser`` through the Makefile's
``JUPYTER_ARGS``). Headless Chromium opens lessons 00, 01, 05 and 07, runs every cell of each,
waits until JupyterLab's autosave has written each of them, saves each once more, closes
them (their kernels shut down with their tabs) and then ``git status --porcelain`` in the
clone must print nothing: what a save adds (the Python version, "collapsed" keys, widget
state, random widget ids) is cleaned before the file is written (tools/jupyter_server_config.py)
and before git compares it (tools/clean_notebook.py as the clean filter).

Autosave is on, as JupyterLab ships it; only its interval is shortened from 120 s to
``AUTOSAVE_SECONDS``, so that the test waits for one autosave of each notebook in well under
a minute. Skipped, with the way to enable it, when Chromium, Playwright, git or make is missing.
"""

import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from browser_support import JupyterLab, served_page, unavailable

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts" / "browser"
LESSONS = ["notebooks/00-index.ipynb", "notebooks/01-i-am-happy.ipynb",
           "notebooks/05-definition-shapes-and-masks.ipynb", "notebooks/07-explorer.ipynb"]
AUTOSAVE_SECONDS = 10
RUN_TIMEOUT_S = 240


def _git(clone, *args):
    return subprocess.run(["git", *args], cwd=clone, capture_output=True, text=True, check=True, timeout=120).stdout


def make_lab_command(clone, extra):
    """The shell line `make lab` runs in ``clone``, with this test's venv and ``extra`` as JUPYTER_ARGS."""
    out = subprocess.run(["make", "-s", "-n", "lab", f"VENV={sys.prefix}", f"JUPYTER_ARGS={extra}"], cwd=clone,
                         capture_output=True, text=True, check=True, timeout=60).stdout
    lines = [line for line in out.splitlines() if re.search(r"\bjupyter lab\b", line)]
    assert len(lines) == 1, f"`make -n lab` should run one `jupyter lab` line; it prints:\n{out}"
    return lines[0]


class CloneLab(JupyterLab):
    """The JupyterLab `make lab` starts in ``clone``, autosave on (every AUTOSAVE_SECONDS)."""

    def environment(self):
        env = super().environment()
        settings = Path(env["JUPYTERLAB_SETTINGS_DIR"], "@jupyterlab")
        # Autosave as JupyterLab ships it (on), only sooner; the notebooks render as make lab ships them.
        (settings / "docmanager-extension/plugin.jupyterlab-settings").write_text(
            json.dumps({"autosave": True, "autosaveInterval": AUTOSAVE_SECONDS}))
        # Closing a notebook's tab shuts its kernel down.
        (settings / "notebook-extension/tracker.jupyterlab-settings").write_text(json.dumps({"kernelShutdown": True}))
        return env

    def command(self):
        extra = " ".join([
            "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0", f"--IdentityProvider.token={self.token}",
            "--ServerApp.terminals_enabled=False", "--LabApp.news_url=None",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--LabApp.expose_app_in_browser=True",
        ])
        return ["sh", "-c", make_lab_command(self.root_dir, extra)]


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    for tool in ("git", "make"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed")
    path = tmp_path_factory.mktemp("autosave") / "clone"
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(path)], check=True, timeout=300)
    subprocess.run(["make", "-s", "notebook-filter"], cwd=path, check=True, timeout=60)
    assert _git(path, "config", "filter.notebook.clean").strip() == "python3 tools/clean_notebook.py"
    assert _git(path, "status", "--porcelain") == "", "the fresh clone is not clean"
    return path


# Every code cell of the current notebook has run and its kernel is idle.
_RAN = """() => {
  const w = window.jupyterapp.shell.currentWidget;
  const kernel = w?.sessionContext?.session?.kernel;
  if (!kernel || kernel.status !== 'idle') return false;
  const cells = w.content.model.cells;
  for (let i = 0; i < cells.length; i++) {
    const c = cells.get(i);
    if (c.type === 'code' && c.sharedModel.getSource().trim() && c.executionCount == null) return false;
  }
  return true;
}"""


def test_running_and_saving_lessons_with_autosave_leaves_git_status_clean(clone, tmp_path_factory):
    server = CloneLab(clone, tmp_path_factory.mktemp("autosave-home"))
    saves = {path: [] for path in LESSONS}  # the times of each PUT (a save) of each lesson, and its status

    def on_response(response):
        request = response.request
        for path in LESSONS:
            if request.method == "PUT" and request.url.split("?")[0].endswith("/api/contents/" + path):
                saves[path].append((time.monotonic(), response.status))

    with served_page(server, ARTIFACTS, "jupyter-server-autosave.log", timeout_ms=RUN_TIMEOUT_S * 1000) as page:
        page.on("response", on_response)
        page.goto(server.url("/lab"))
        page.wait_for_function("() => window.jupyterapp")
        page.evaluate("async () => { await window.jupyterapp.restored; }")
        try:
            for path in LESSONS:
                page.evaluate("async (path) => {"
                              " await window.jupyterapp.commands.execute('docmanager:open', {path}); }", path)
                page.wait_for_function(
                    "(path) => window.jupyterapp.shell.currentWidget?.context?.path === path"
                    " && window.jupyterapp.shell.currentWidget.sessionContext.session?.kernel", arg=path)
                page.evaluate("async () => { await window.jupyterapp.shell.currentWidget.context.ready; }")
                page.evaluate("async () => { await window.jupyterapp.shell.currentWidget.sessionContext.ready; }")
                ran_at = time.monotonic()
                page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
                page.wait_for_function(_RAN, polling=500)
                # The autosave (the notebook is dirty after running): a PUT after the run, without our asking.
                deadline = time.monotonic() + 3 * AUTOSAVE_SECONDS + 30
                while not [t for t, _ in saves[path] if t > ran_at]:
                    assert time.monotonic() < deadline, f"{path}: no autosave within {deadline - ran_at:.0f} s"
                    page.wait_for_timeout(500)
                autosaves = len(saves[path])
                page.evaluate("async () => { await window.jupyterapp.commands.execute('docmanager:save'); }")
                page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty")
                while len(saves[path]) == autosaves:
                    page.wait_for_timeout(200)
            for path in LESSONS:
                # Closing the saved notebook asks nothing; its kernel shuts down with its tab.
                page.evaluate("(path) => { for (const w of window.jupyterapp.shell.widgets('main'))"
                              " if (w.context?.path === path) w.close(); }", path)
            page.wait_for_function("() => ![...window.jupyterapp.shell.widgets('main')].some(w => w.context)")
            assert not page.locator(".jp-Dialog").count(), page.locator(".jp-Dialog").first.inner_text()
        except Exception as error:
            error.add_note(f"the lessons' saves (time, status): {saves}")
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "autosave-failure.png"))
            raise
        deadline = time.monotonic() + 30
        while server.api("GET", "/api/kernels") and time.monotonic() < deadline:
            time.sleep(0.5)

    for path, puts in saves.items():
        assert len(puts) >= 2 and all(status == 200 for _, status in puts), f"{path}: saves {puts}"
    status = _git(clone, "status", "--porcelain")
    if status:
        diff = _git(clone, "diff", "--stat")
        pytest.fail(f"running and saving the lessons left the clone changed:\n{status}\n{diff}")
