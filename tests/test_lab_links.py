"""`make lab` as a newcomer runs it: the repository root is served, the index opens, every index link opens its target.

The server is started from the very command line that `make lab` runs (``make -n lab``
prints it; the test adds only a port, a token and ``--no-browser`` through the Makefile's
``JUPYTER_ARGS``), in the repository itself, so a change to the Makefile that serves
another folder, or opens another page, fails here. Headless Chromium then opens the
server's front page, checks that it lands on ``notebooks/00-index.ipynb``, and clicks
each local link of the index in turn: a notebook (with or without a ``#heading``) or a
Markdown file must open in a tab of its own name, and a folder must open in the file
browser. A ``#heading`` link must land: the heading ends up inside the notebook's visible
scroll area (JupyterLab alone leaves a notebook that the link opens at its top;
tools/lab/labextensions/attention-heading-links, which make lab loads, fixes that).
No link may answer 404 or raise JupyterLab's "File Load Error" dialog.

The repository's notebooks are opened, never saved: autosave is off in the test's
settings (tests/browser_support.py), and each notebook's kernel is shut down when its
tab is closed. Skipped, with the way to enable it, when Chromium or Playwright is missing.
"""

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from browser_support import JupyterLab, served_page, unavailable

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
INDEX = "notebooks/00-index.ipynb"
ARTIFACTS = ROOT / "test-artifacts" / "browser"
TIMEOUT_MS = 90_000

CURRENT_TAB = "#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current"
LAND_TIMEOUT_MS = 20_000
# The heading the fragment names, and the box of the visible notebook's scroll container.
_HEADING_AND_VIEW = """(id) => {
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  const scroller = panel.querySelector('.jp-WindowedPanel-outer') || panel.querySelector('.jp-Notebook');
  const heading = [...panel.querySelectorAll('[data-jupyter-id]')].find(e => e.dataset.jupyterId === id);
  const view = scroller.getBoundingClientRect(), box = heading && heading.getBoundingClientRect();
"""
HEADING_IN_VIEW = _HEADING_AND_VIEW + """
  return !!box && box.top >= view.top - 1 && box.bottom <= view.bottom + 1 && box.height > 0;
}"""
HEADING_PLACE = _HEADING_AND_VIEW + """
  return {view: [view.top, view.bottom], heading: box && [box.top, box.bottom], top: scroller.scrollTop};
}"""
INDEX_LINKS = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-RenderedMarkdown a"


def make_lab_command(extra):
    """The shell line `make lab` runs, with ``extra`` passed as its JUPYTER_ARGS."""
    out = subprocess.run(["make", "-s", "-n", "lab", f"JUPYTER_ARGS={extra}"], cwd=ROOT,
                         capture_output=True, text=True, check=True, timeout=60).stdout
    lines = [line for line in out.splitlines() if re.search(r"\bjupyter lab\b", line)]
    assert len(lines) == 1, f"`make -n lab` should run one `jupyter lab` line; it prints:\n{out}"
    return lines[0]


class MakeLab(JupyterLab):
    """The JupyterLab that `make lab` starts, on a test port and token, started from the repository root."""

    def __init__(self, home):
        super().__init__(ROOT, home)

    def environment(self):
        env = super().environment()
        # Closing a notebook's tab also shuts its kernel down: the test opens every notebook.
        tracker = Path(env["JUPYTERLAB_SETTINGS_DIR"], "@jupyterlab/notebook-extension/tracker.jupyterlab-settings")
        settings = json.loads(tracker.read_text())
        settings["kernelShutdown"] = True
        # The notebooks render as make lab renders them (JupyterLab's default windowing), so the test
        # sees where a #heading link lands for a learner.
        settings.pop("windowingMode", None)
        tracker.write_text(json.dumps(settings, indent=2))
        return env

    def command(self):
        extra = " ".join([
            "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0", f"--IdentityProvider.token={self.token}",
            "--ServerApp.terminals_enabled=False", "--LabApp.news_url=None",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        ])
        return ["sh", "-c", make_lab_command(extra)]


def test_make_lab_serves_the_repository_root():
    """Without a browser: the command line names the repository as the root and the index as the first page."""
    line = make_lab_command("")
    args = shlex.split(line)
    roots = [a.split("=", 1)[1] for a in args if a.startswith("--ServerApp.root_dir=")]
    assert roots and Path(roots[-1]).resolve() == ROOT, f"`make lab` does not serve the repository root: {line}"
    assert f"--LabApp.default_url=/lab/tree/{INDEX}" in args, f"`make lab` does not open the index: {line}"
    # A positional notebook path would make its own folder the root (Jupyter Server's file_to_run).
    assert not [a for a in args if a.endswith(".ipynb") and not a.startswith("--")], line


@pytest.fixture(scope="module")
def lab_page(tmp_path_factory):
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    server = MakeLab(tmp_path_factory.mktemp("make-lab-home"))
    with served_page(server, ARTIFACTS, "jupyter-server-make-lab.log", timeout_ms=TIMEOUT_MS) as page:
        page.failed = []
        page.on("response", lambda r: r.status == 404 and page.failed.append(r.url))
        yield page


def _current_tab(page):
    return page.locator(CURRENT_TAB).first.inner_text().strip()


def _local_target(href, base_url):
    """The repository path an index link points to (``docs/glossary.md``), and its #fragment; None if not local."""
    url = urlparse(href)
    if not href.startswith(base_url) or not url.path.startswith("/files/"):
        return None
    return unquote(url.path[len("/files/"):]).rstrip("/"), unquote(url.fragment)


def test_make_lab_opens_the_index_and_every_index_link_opens_its_target(lab_page):
    page = lab_page
    server = page.server
    listing = {item["name"] for item in server.api("GET", "/api/contents/")["content"]}
    assert {"notebooks", "exercises", "docs", "README.md"} <= listing, \
        f"the server's root is not the repository: {listing}"

    page.goto(server.url("/"))
    page.wait_for_selector(INDEX_LINKS, state="attached")
    assert urlparse(page.url).path == f"/lab/tree/{INDEX}", f"the front page is {page.url}, not the index"
    assert _current_tab(page) == Path(INDEX).name
    # JupyterLab renders a notebook's cells a few at a time: read the links once every kind is there
    # (on a loaded machine the first links are attached seconds before the last cells render).
    page.wait_for_function(
        "(sel) => { const h = [...document.querySelectorAll(sel)].map(a => a.href);"
        " return h.some(x => x.includes('/files/docs/')) && h.some(x => x.includes('/files/exercises')); }",
        arg=INDEX_LINKS)

    hrefs = page.evaluate(f"() => [...document.querySelectorAll({json.dumps(INDEX_LINKS)})].map(a => a.href)")
    targets = []
    for i, href in enumerate(hrefs):
        target = _local_target(href, server.base_url)
        if target and target not in [t for _, t in targets]:
            targets.append((i, target))
    # Every kind of link the index has: notebooks, a heading in a notebook, docs/ and the exercises.
    paths = [path for _, (path, _) in targets]
    assert any(p.startswith("docs/") for p in paths) and any(p.startswith("exercises") for p in paths), paths
    assert any(fragment for _, (_, fragment) in targets), paths
    assert len({p for p in paths if p.startswith("notebooks/")}) >= 16, paths

    opened = []
    try:
        _follow(page, targets, opened)
    except Exception as error:
        error.add_note(f"links opened before the failure: {opened}")
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "make-lab-links-failure.png"))
        raise
    assert len(opened) == len(targets)


def _follow(page, targets, opened):
    for i, (path, fragment) in targets:
        page.failed.clear()
        link = page.locator(INDEX_LINKS).nth(i)
        link.scroll_into_view_if_needed()
        # A click event on the link itself: the selected cell's floating toolbar can cover the
        # end of a line (the appendix links 1-6), and a click at those coordinates would press
        # one of its buttons instead.
        link.dispatch_event("click")
        target = ROOT / path
        assert target.exists(), f"the index links to {path}, which is not in the repository"
        if target.is_dir():
            crumbs = "#filebrowser .jp-BreadCrumbs"
            page.wait_for_function(
                "([sel, name]) => (document.querySelector(sel)?.innerText || '').includes(name)",
                arg=[crumbs, target.name])
            listed = page.locator("#filebrowser .jp-DirListing-itemText").all_inner_texts()
            expected = {p.name for p in target.iterdir() if not p.name.startswith(".")}
            assert expected <= {t.strip() for t in listed}, f"{path}: the file browser shows {listed}"
        else:
            page.wait_for_function(
                "([sel, name]) => document.querySelector(sel)?.innerText.trim() === name",
                arg=[CURRENT_TAB, target.name])
            if target.suffix == ".ipynb":
                page.wait_for_selector(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell", state="attached")
            if fragment:
                # The anchor names a heading of that notebook (JupyterLab 4 keeps a heading's anchor in
                # data-jupyter-id, its sanitizer drops id), and the view lands on it: the heading is
                # inside the notebook's scroll container (tools/lab/labextensions/attention-heading-links).
                page.wait_for_function(
                    "(id) => [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) [data-jupyter-id]')]"
                    ".some(e => e.dataset.jupyterId === id)", arg=fragment)
                try:
                    page.wait_for_function(HEADING_IN_VIEW, arg=fragment, timeout=LAND_TIMEOUT_MS)
                except Exception as error:
                    where = page.evaluate(HEADING_PLACE, fragment)
                    raise AssertionError(f"{path}#{fragment}: the view does not land on the heading: {where}") \
                        from error
        dialogs = page.locator(".jp-Dialog")
        assert not dialogs.count(), f"{path}: a dialog opened: {dialogs.first.inner_text()}"
        assert not page.failed, f"{path}: the server answered 404 for {page.failed}"
        opened.append(path)
        if not target.is_dir():
            page.locator(f"{CURRENT_TAB} .lm-TabBar-tabCloseIcon").click()
            # A notebook that JupyterLab marks as changed on opening (nbformat's normalisation of some
            # outputs) asks before closing: never save the repository's file.
            page.wait_for_function(
                "([sel, name]) => document.querySelector('.jp-Dialog')"
                " || document.querySelector(sel)?.innerText.trim() === name", arg=[CURRENT_TAB, Path(INDEX).name])
            if page.locator(".jp-Dialog").count():
                page.locator(".jp-Dialog button", has_text="Discard").click()
                page.wait_for_function("([sel, name]) => document.querySelector(sel)?.innerText.trim() === name",
                                       arg=[CURRENT_TAB, Path(INDEX).name])


def _make_n(target, *variables):
    out = subprocess.run(["make", "-s", "-n", target, *variables], cwd=ROOT,
                         capture_output=True, text=True, check=True, timeout=60).stdout
    lines = [line for line in out.splitlines() if re.search(r"\bjupyter lab\b", line)]
    assert len(lines) == 1, out
    return shlex.split(lines[0])


def test_make_present_serves_the_repository_root():
    """`make present` opens the index (each notebook has RISE's button); PRESENT=... opens that deck live."""
    for variables, url in [((), f"/lab/tree/{INDEX}"),
                           (("PRESENT=notebooks/07-explorer.ipynb",), "/rise/notebooks/07-explorer.ipynb")]:
        args = _make_n("present", *variables)
        roots = [a.split("=", 1)[1] for a in args if a.startswith("--ServerApp.root_dir=")]
        assert roots and Path(roots[-1]).resolve() == ROOT, f"`make present` does not serve the repository root: {args}"
        assert f"--LabApp.default_url={url}" in args, args
