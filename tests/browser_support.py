"""Support for the browser test: a throw-away JupyterLab server and headless Chromium.

Used by ``tests/test_browser.py``. Nothing here imports Playwright (the module is
also collected by ``--doctest-modules``, where Playwright may be missing).

- :func:`chromium_path`: Debian's Chromium (or ``$PLAYWRIGHT_CHROMIUM``); Playwright's
  own browser download is not used.
- :class:`JupyterLab`: ``python -m jupyter lab`` on a free loopback port with a
  random token and every user-level directory in a temporary folder, so the test
  neither reads nor writes the developer's Jupyter settings, and nothing phones home.
  The kernel specs and the lab extensions (ipywidgets' ``jupyterlab_widgets``)
  are still found in ``sys.prefix/share/jupyter``: only the *user* directories move.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

DEFAULT_CHROMIUM = "/usr/bin/chromium"

# Headless Chromium as root on a machine without network: no sandbox (root), no GPU,
# and none of the background connections (component updates, sync, QUIC, field
# trials) that a closed network refuses; every host name but the loopback address
# resolves to nothing, so the page cannot fetch from the internet either.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
]

# JupyterLab user settings for the test (JUPYTERLAB_SETTINGS_DIR): no news, no
# update check, no toasts over the page, no autosave, and every cell attached to
# the DOM (the default windowing skips rendering cells that are out of view).
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification": {
        "fetchNews": "false",
        "checkForUpdates": False,
        "doNotDisturbMode": True,
    },
    "@jupyterlab/docmanager-extension/plugin": {"autosave": False},
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
}


def chromium_path():
    """The Chromium executable to drive, or None when there is none.

    ``$PLAYWRIGHT_CHROMIUM`` when set, else Debian's ``/usr/bin/chromium``.
    """
    path = os.environ.get("PLAYWRIGHT_CHROMIUM") or DEFAULT_CHROMIUM
    return path if os.path.isfile(path) and os.access(path, os.X_OK) else None


ENABLE = "install Chromium (Debian: apt-get install chromium) and the test extra (pip install -e .[test])"


def unavailable():
    """Why the browser tests cannot run here (a message saying how to enable them), or None."""
    import importlib.util

    if chromium_path() is None:
        where = os.environ.get("PLAYWRIGHT_CHROMIUM") or DEFAULT_CHROMIUM
        return f"no Chromium at {where}: {ENABLE}"
    if importlib.util.find_spec("playwright") is None:
        return f"Playwright is not installed: {ENABLE}"
    return None


@contextlib.contextmanager
def served_page(server, artifacts, log_name, viewport=None, timeout_ms=90_000):
    """Start ``server`` (a :class:`JupyterLab`) and yield a Chromium page for it, as ``page.server``.

    On the way out the browser closes, the server stops, and its log is copied to
    ``artifacts / log_name``.
    """
    from playwright import sync_api

    try:
        server.start(timeout=120)
        with sync_api.sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS)
            try:
                page = browser.new_page(viewport=viewport or {"width": 1400, "height": 1000})
                page.set_default_timeout(timeout_ms)
                page.server = server
                yield page
            finally:
                browser.close()
    finally:
        server.stop()
        Path(artifacts).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(server.log_path, Path(artifacts) / log_name)


def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _descendants(pid):
    """(pid, start time) of every live descendant of ``pid``, from /proc (Linux); else []."""
    children = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # the fields after the command name "(...)": state, ppid, ..., starttime (22nd field)
        fields = stat[stat.rindex(")") + 2:].split()
        children.setdefault(int(fields[1]), []).append((int(entry), fields[19]))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child[0])
    return found


def _kill_if_same(pid, start_time):
    """SIGKILL ``pid`` if it is still the process that started at ``start_time``."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return
    if stat[stat.rindex(")") + 2:].split()[19] == start_time:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


class JupyterLab:
    """A JupyterLab server for one test, in its own process group.

    Parameters
    ----------
    root_dir : Path
        The server's root: the notebooks it serves.
    home : Path
        An empty folder for the user-level Jupyter directories and the server log.
    python : str or Path, optional
        The Python that runs the server (and, through its kernel spec, the kernel);
        this test run's own by default. tests/test_rise.py passes .venv-present's.
    """

    def __init__(self, root_dir, home, python=None):
        self.root_dir = Path(root_dir)
        self.python = str(python or sys.executable)
        self.home = Path(home)
        self.port = free_port()
        self.token = secrets.token_hex(24)
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.log_path = self.home / "jupyter-server.log"
        self.process = None
        self.startup_seconds = None

    def environment(self):
        """The server's environment: user-level Jupyter directories moved into ``home``."""
        env = dict(os.environ)
        dirs = {
            "JUPYTER_CONFIG_DIR": "config",
            "JUPYTER_DATA_DIR": "data",  # the user data dir only: sys.prefix/share/jupyter stays on the path
            "JUPYTER_RUNTIME_DIR": "runtime",
            "JUPYTERLAB_SETTINGS_DIR": "lab-settings",
            "JUPYTERLAB_WORKSPACES_DIR": "lab-workspaces",
            "IPYTHONDIR": "ipython",  # the kernel's history database and profile
        }
        for var, name in dirs.items():
            path = self.home / name
            path.mkdir(parents=True, exist_ok=True)
            env[var] = str(path)
        env.pop("JUPYTER_TOKEN", None)
        env.pop("JUPYTER_PREFER_ENV_PATH", None)
        for plugin, values in LAB_SETTINGS.items():
            path = Path(env["JUPYTERLAB_SETTINGS_DIR"], plugin + ".jupyterlab-settings")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(values, indent=2))
        return env

    def command(self):
        return [
            self.python, "-m", "jupyter", "lab",
            "--no-browser",
            "--allow-root",  # CI runs as root
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={self.token}",
            f"--ServerApp.root_dir={self.root_dir}",
            "--ServerApp.terminals_enabled=False",
            # nothing that phones home: news feed, update check, PyPI extension manager
            "--LabApp.news_url=None",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--LabApp.extension_manager=readonly",
        ]

    def start(self, timeout=120):
        """Start the server and wait until ``/api/status`` answers."""
        started = time.monotonic()
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                self.command(), cwd=self.root_dir, env=self.environment(),
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: stop() ends all of it
            )
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"JupyterLab exited with {self.process.returncode}; its log:\n{self.log()}")
            try:
                status = self.api("GET", "/api/status", timeout=5)
            except (OSError, urllib.error.URLError):
                status = None
            if status is not None:
                self.startup_seconds = time.monotonic() - started
                return status
            if time.monotonic() > deadline:
                raise TimeoutError(f"JupyterLab did not answer in {timeout} s; its log:\n{self.log()}")
            time.sleep(0.5)

    def api(self, method, path, timeout=10):
        """Call the REST API with the token; the decoded JSON answer (None when empty)."""
        request = urllib.request.Request(
            self.base_url + path, method=method,
            headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read()
        return json.loads(body) if body else None

    def url(self, path):
        return f"{self.base_url}{path}?token={self.token}"

    def log(self):
        try:
            return self.log_path.read_text(errors="replace")[-6000:]
        except OSError:
            return "(no log)"

    def stop(self, timeout=30):
        """Stop the server and its kernels, gracefully first, by force if need be.

        The kernels run in process groups of their own (jupyter_client starts them
        in new sessions), so they are collected as the server's descendants first
        and killed by id if the graceful shutdown leaves any behind.
        """
        if self.process is None:
            return
        kernels = _descendants(self.process.pid)
        try:
            if self.process.poll() is None:
                try:
                    self.api("POST", "/api/shutdown", timeout=10)  # shuts down the kernels too
                except (OSError, urllib.error.URLError):
                    pass
                try:
                    self.process.wait(timeout)
                except subprocess.TimeoutExpired:
                    self._signal_group(signal.SIGTERM)
                    try:
                        self.process.wait(10)
                    except subprocess.TimeoutExpired:
                        self._signal_group(signal.SIGKILL)
                        self.process.wait(10)
        finally:
            self._signal_group(signal.SIGKILL)  # anything left in the server's group
            for pid, start_time in kernels:
                _kill_if_same(pid, start_time)
            self.process = None

    def _signal_group(self, sig):
        try:
            os.killpg(self.process.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


class StaticServer:
    """A folder served over HTTP on a free loopback port, from a thread of this process.

    The built slides and site are plain files; serving them (rather than opening
    ``file://`` addresses) is how a reader's web server or a USB stick's browser
    sees them, and lets the test count every request the page makes.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d, StaticServer(d) as server:
    ...     server.url("a/b.html").startswith("http://127.0.0.1:")
    True
    """

    def __init__(self, root):
        import functools
        import http.server
        import threading

        class Quiet(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *args):  # keep the test output clean
                pass

        handler = functools.partial(Quiet, directory=str(root))
        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=10)

    def url(self, path=""):
        return f"http://127.0.0.1:{self.port}/{path}"
