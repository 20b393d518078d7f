"""docs/classroom.md as a script that is run: `make classroom-test` (issue 30 item 7).

The hub test runs only when ``ATTENTION_CLASSROOM=1`` (the make target sets it; ``make
test`` skips it), as root; the checks of the page and of what students get run always.

It follows the page's plain-JupyterHub recipe: every fenced block whose info string is
``bash classroom-step NAME`` is run with bash (``set -euo pipefail``, as root, in the
clone), every ``python classroom-file PATH`` block is written to PATH, in the page's order,
after only the substitutions the page's own table lists (:data:`SUBSTITUTIONS`: the
folders under one temporary folder, free loopback ports, uv for pip, the student repository
built here for GitHub). So an edit to the page that breaks a step fails this test. The
``start`` step runs in the background: JupyterHub, its proxy, the formgrader service (as
the grader's Unix user) and the idle culler, all on 127.0.0.1.

Then, through HTTP as a browser would (the hub's PAM login form and REST API, nbgitpuller,
the formgrader's API, the single-user servers' ``/assignments`` endpoints and Contents
API), never by calling nbgrader in-process: five students, real Unix users, log in and get
the student repository pulled by their first page; the lecturer generates and releases
E6-backward; the students fetch and validate it; Alice answers right, Carol's
padded_backward ignores the lengths (exercise 1's points only), Dave's dX leaves out the
route through the values (exercise 2's points only), Erin submits the blank notebook (0),
Frank answers right after the due date (all the points, flagged late); every score is read
from instructor/points.toml. The lecturer collects, autogrades, generates and releases
feedback, each student fetches theirs, and the grader exports the gradebook (``nbgrader
export`` as the grader's user: it has no HTTP endpoint). The Unix users, their homes and
every process are removed at the end; each step prints its time.
"""

from __future__ import annotations

import csv
import fcntl
import json
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
from datetime import datetime, timezone
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import make_nbgrader_course as course  # noqa: E402

CLASSROOM = os.environ.get("ATTENTION_CLASSROOM") == "1"
if CLASSROOM:  # `make classroom-test`: JupyterLab brings requests, ipykernel psutil; missing ones fail it
    import psutil
    import requests

PAGE = ROOT / "docs" / "classroom.md"
COURSE = "attention101"
GRADER = "grader-attention101"
ASSIGNMENT = "E6-backward"
PASSWORD = "classroom-test-Pw1"
STUDENTS = ("alice", "carol", "dave", "erin", "frank")
INSTRUCTOR = "lecturer"
REPO_NAME = "attention-step-by-step"
# The steps the page's plain-JupyterHub recipe must have, in this order (the test runs them all).
STEPS = ("install", "users", "course", "lock", "start")
FILES = ("/etc/jupyterhub/jupyterhub_config.py",)
# The lab plugins and server extensions a student does not get (nbgrader's instructor side).
INSTRUCTOR_PLUGINS = ("@jupyter/nbgrader:formgrader", "@jupyter/nbgrader:create-assignment",
                      "@jupyter/nbgrader:course-list")
INSTRUCTOR_SERVER_EXTENSIONS = ("nbgrader.server_extensions.formgrader", "nbgrader.server_extensions.course_list")
THREADS = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}

needs_hub = pytest.mark.skipif(not CLASSROOM, reason="the JupyterHub class loop runs in `make classroom-test`")

TIMINGS: dict[str, float] = {}


class Step:
    """Times a step of the loop into TIMINGS."""

    def __init__(self, name):
        self.name = name

    def __enter__(self):
        self.start = time.perf_counter()

    def __exit__(self, *exc):
        TIMINGS[self.name] = time.perf_counter() - self.start


_BLOCK = re.compile(r"^```(bash|python) (classroom-step|classroom-file) (\S+)\n(.*?)^```$", re.M | re.S)


def page_steps(text: str) -> list[tuple[str, str, str]]:
    """The page's marked blocks, in order: ``(kind, name, body)``, kind "step" or "file".

    Fails unless the steps :data:`STEPS` and the files :data:`FILES` are all there, once each,
    the steps in that order (a block whose marker an edit removed is a step the test would skip).
    """
    found = [("step" if kind == "classroom-step" else "file", name, body)
             for _, kind, name, body in _BLOCK.findall(text)]
    steps = [name for kind, name, _ in found if kind == "step"]
    files = [name for kind, name, _ in found if kind == "file"]
    if tuple(steps) != STEPS or tuple(files) != FILES:
        raise ValueError(f"docs/classroom.md's marked blocks are steps {steps} and files {files}; "
                         f"the test runs the steps {list(STEPS)} and the files {list(FILES)}")
    return found


def substitutions(base: Path, ports: dict, uv: str, repo_url: str, pull_url: str) -> list[tuple[str, str]]:
    """The page's table of what the test changes, as (on the page, in the test), applied in order."""
    return [
        ("/opt/jupyterhub/bin/pip install", f"{uv} pip install --python {base}/opt/jupyterhub/bin/python"),
        ("git+https://github.com/<owner>/<name>@<commit>", repo_url),
        ("https%3A%2F%2Fgithub.com%2F<owner>%2F<name>", urllib.parse.quote(pull_url, safe="")),
        ("<name>", REPO_NAME),
        ("/opt/jupyterhub", f"{base}/opt/jupyterhub"),
        ("/etc/jupyterhub", f"{base}/etc/jupyterhub"),
        ("/srv/nbgrader", f"{base}/srv/nbgrader"),
        ("127.0.0.1:8000", f"127.0.0.1:{ports['proxy']}"),
        ("127.0.0.1:8001", f"127.0.0.1:{ports['api']}"),
        ("127.0.0.1:8081", f"127.0.0.1:{ports['hub']}"),
        ("127.0.0.1:9999", f"127.0.0.1:{ports['service']}"),
    ]


def substitute(text: str, table: list[tuple[str, str]]) -> str:
    """``text`` with each "on the page" of ``table`` replaced, in one pass (a replacement is not replaced again)."""
    pattern = re.compile("|".join(re.escape(old) for old, _ in table))
    return pattern.sub(lambda m: dict(table)[m.group(0)], text)


class StepFailed(AssertionError):
    pass


def shared_python3() -> str:
    """A Python >= 3.11 that every user may run (the page's `python3`): not one under /root, as pyenv's."""
    for candidate in (shutil.which("python3"), "/usr/bin/python3", "/usr/local/bin/python3"):
        if not candidate or not os.path.exists(candidate):
            continue
        real = Path(candidate).resolve()
        if all(os.stat(d).st_mode & 0o001 for d in real.parents) and os.stat(real).st_mode & 0o005 == 0o005:
            ok = subprocess.run([str(real), "-c", "import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))"],
                                capture_output=True)
            if ok.returncode == 0:
                return str(real)
    pytest.fail("no python3 >= 3.11 with venv that every user may run (the page's step 'install' needs one)")


def run_step(name: str, body: str, cwd: Path, timeout: float = 600, path: str | None = None) -> float:
    """Run one page step with bash, stopping at its first failing command; return its seconds."""
    start = time.perf_counter()
    env = {**os.environ, **THREADS}
    if path:
        env["PATH"] = f"{path}{os.pathsep}{env['PATH']}"
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", body], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise StepFailed(f"docs/classroom.md step {name!r} failed ({done.returncode}):\n{body}\n"
                         f"--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}")
    return seconds


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Browser:
    """One user's session: the hub's login form, then a token of theirs for the APIs."""

    def __init__(self, url: str, name: str):
        self.url, self.name = url, name
        self.session = requests.Session()
        page = self.session.get(f"{url}/hub/login", timeout=60)
        assert page.status_code == 200, page.status_code
        xsrf = self.session.cookies.get("_xsrf")
        login = self.session.post(f"{url}/hub/login", data={"username": name, "password": PASSWORD, "_xsrf": xsrf},
                                  allow_redirects=False, timeout=60)
        assert login.status_code == 302, (name, login.status_code, login.text[:300])
        made = self.session.post(f"{url}/hub/api/users/{name}/tokens", json={"note": "classroom test"},
                                 headers={"X-XSRFToken": self.session.cookies.get("_xsrf", path="/hub/") or xsrf},
                                 timeout=60)
        assert made.status_code == 201, (name, made.status_code, made.text[:300])
        self.api = requests.Session()
        self.api.headers["Authorization"] = f"token {made.json()['token']}"

    def start_server(self):
        started = self.api.post(f"{self.url}/hub/api/users/{self.name}/server", timeout=120)
        assert started.status_code in (201, 202), (self.name, started.status_code, started.text[:300])

    def wait_ready(self, timeout=180):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            user = self.api.get(f"{self.url}/hub/api/users/{self.name}", timeout=30).json()
            server = user.get("servers", {}).get("", {})
            if server.get("ready"):
                return
            time.sleep(0.5)
        raise TimeoutError(f"{self.name}'s server did not start")

    def server(self, method, path, **kw):
        return self.api.request(method, f"{self.url}/user/{self.name}/{path}", timeout=300, **kw)

    def service(self, method, path, **kw):
        return self.api.request(method, f"{self.url}/services/{COURSE}/{path}", timeout=900, **kw)


def _answers():
    """Each student's answer cells: right, two different mistakes, blank (None), right but late."""
    nb = nbformat.read(course.SOLUTIONS / f"{ASSIGNMENT}.ipynb", as_version=4)
    right = [c.source for c in nb.cells if "solution" in c.metadata.get("tags", [])]
    # exercise 2 written for a batch without padding: the lengths are never read
    ignores_lengths = (
        "def padded_backward(q, k, v, d_out, lengths):\n"
        "    scale = 1 / math.sqrt(q.shape[-1])\n"
        "    s = q @ np.swapaxes(k, -1, -2) * scale\n"
        "    p = np.exp(s - s.max(axis=-1, keepdims=True))\n"
        "    p = p / p.sum(axis=-1, keepdims=True)\n"
        "    d_p = d_out @ np.swapaxes(v, -1, -2)\n"
        "    d_s = p * (d_p - (p * d_p).sum(axis=-1, keepdims=True))\n"
        "    return scale * d_s @ k, scale * np.swapaxes(d_s, -1, -2) @ q, np.swapaxes(p, -1, -2) @ d_out\n"
    )
    # exercise 1 with dX through the queries and keys only: the route through V = X W_v left out
    two_routes = right[0].replace("d_x = d_q @ w_q.T + d_k @ w_k.T + d_v @ w_v.T ", "d_x = d_q @ w_q.T + d_k @ w_k.T ")
    assert two_routes != right[0]
    return {
        "alice": right,
        "carol": [right[0], ignores_lengths],
        "dave": [two_routes, right[1]],
        "erin": None,  # submits the notebook as fetched
        "frank": right,
    }


def _expected_scores():
    """Each student's score, from instructor/points.toml: exercise 1's points, exercise 2's, both, none."""
    first, second = (t.points for t in course.tasks_of(ASSIGNMENT))
    return {"alice": first + second, "carol": first, "dave": second, "erin": 0, "frank": first + second}


def _our_processes(base: Path):
    """Processes whose command line or working directory lies under ``base`` (all started by this test)."""
    found = []
    for proc in psutil.process_iter(["pid", "cmdline", "cwd", "environ"]):
        try:
            text = " ".join(proc.info["cmdline"] or []) + " " + (proc.info["cwd"] or "")
            text += " " + " ".join(f"{k}={v}" for k, v in (proc.info["environ"] or {}).items()
                                   if k in ("JUPYTER_CONFIG_DIR", "JUPYTERHUB_SERVICE_URL", "HOME"))
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if str(base) in text and proc.pid != os.getpid():
            found.append(proc)
    return found


def _user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


MARKER = ".attention-classroom-test"  # in the home of every user this test made


def _remove_users(names) -> None:
    """Remove the users this test made (their home holds MARKER), with their homes and processes."""
    for name in names:
        if _user_exists(name) and (Path(pwd.getpwnam(name).pw_dir) / MARKER).exists():
            subprocess.run(["pkill", "-KILL", "-u", name], check=False)
            subprocess.run(["userdel", "--remove", name], check=False, capture_output=True)


def _student_repository(base: Path) -> tuple[Path, str]:
    """The public student repository (tools/make_student_repo.py) as a git repository; its path and commit."""
    repo = base / "git" / REPO_NAME
    subprocess.run([sys.executable, str(ROOT / "tools" / "make_student_repo.py"), str(repo)], check=True,
                   capture_output=True, cwd=ROOT)
    git = ["git", "-c", "user.name=classroom-test", "-c", "user.email=classroom-test@localhost"]
    for args in (["init", "--quiet", "--initial-branch=main"], ["add", "--all"], ["commit", "--quiet", "-m", "class"]):
        subprocess.run(git + args, cwd=repo, check=True, capture_output=True)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True,
                            text=True).stdout.strip()
    return repo, commit


@pytest.fixture(scope="module")
def hub():
    if os.geteuid() != 0:
        pytest.fail("`make classroom-test` runs as root: it makes Unix users (useradd) and runs the hub as root")
    users = (GRADER, INSTRUCTOR, *STUDENTS)
    lock = open(Path(tempfile.gettempdir()) / "attention-classroom-test.lock", "w")
    fcntl.flock(lock, fcntl.LOCK_EX)  # one class at a time on a machine: the user names are fixed
    _remove_users(users)  # left by a run that was killed
    taken = [name for name in users if _user_exists(name)]
    if taken:
        pytest.fail(f"these users exist already and are not this test's: {taken}")
    base = Path(tempfile.mkdtemp(prefix="attention-classroom-"))
    base.chmod(0o755)  # the students' servers run the environment under it
    ports = {"proxy": _free_port(), "api": _free_port(), "hub": _free_port(), "service": _free_port(),
             "git": _free_port()}
    log = open(base / "hub.log", "w")
    processes = []
    setup = {"ports": ports, "base": base, "url": f"http://127.0.0.1:{ports['proxy']}",
             "course": Path(f"/home/{GRADER}/course"), "venv": base / "opt" / "jupyterhub"}
    try:
        with Step("student repository: built, committed, served by git daemon"):
            repo, commit = _student_repository(base)
            daemon = subprocess.Popen(["git", "daemon", "--reuseaddr", "--export-all", "--listen=127.0.0.1",
                                       f"--port={ports['git']}", f"--base-path={repo.parent}", str(repo.parent)],
                                      stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            processes.append(daemon)
        setup["pull_url"] = f"git://127.0.0.1:{ports['git']}/{REPO_NAME}"
        table = substitutions(base, ports, f"{ROOT / '.venv' / 'bin' / 'python'} -m uv",
                              f"git+file://{repo}@{commit}", setup["pull_url"])
        shared = base / "shared-bin"  # `python3` in the steps: one every user may run
        shared.mkdir()
        (shared / "python3").symlink_to(shared_python3())
        (base / "etc" / "jupyterhub").mkdir(parents=True)
        (base / "etc" / "jupyterhub" / "students.txt").write_text("\n".join(STUDENTS) + "\n")
        for kind, name, body in page_steps(PAGE.read_text(encoding="utf-8")):
            body = substitute(body, table)
            if kind == "file":
                with Step(f"page: write {name}"):
                    target = Path(substitute(name, table))
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_text(body, encoding="utf-8")
            elif name == "start":
                with Step("page step 'start': JupyterHub, proxy, formgrader and idle culler answer"):
                    command = body.strip().replace("&& ", "&& exec ", 1)  # the hub itself gets the SIGINT
                    proc = subprocess.Popen(["bash", "-euo", "pipefail", "-c", command], cwd=ROOT, stdout=log,
                                            stderr=subprocess.STDOUT, start_new_session=True,
                                            env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
                    processes.append(proc)
                    setup["process"] = proc
                    end = time.monotonic() + 120
                    while True:
                        try:
                            if requests.get(f"{setup['url']}/hub/api/", timeout=5).status_code == 200:
                                break
                        except requests.ConnectionError:
                            pass
                        if proc.poll() is not None or time.monotonic() > end:
                            log.flush()
                            pytest.fail("JupyterHub did not start:\n" + (base / "hub.log").read_text()[-4000:])
                        time.sleep(0.3)
            else:
                with Step(f"page step {name!r}"):
                    run_step(name, body, ROOT, path=str(shared))
                if name == "users":  # passwords: the page leaves them to the lecturer (chpasswd)
                    for user in users:
                        (Path(pwd.getpwnam(user).pw_dir) / MARKER).touch()
                    subprocess.run(["chpasswd"], input="".join(f"{u}:{PASSWORD}\n" for u in users), text=True,
                                   check=True)
        yield setup
    finally:
        with Step("stop every server; remove the users"):
            left = []
            for p in processes[:1]:  # git daemon: ours, stopped first
                if p.poll() is None:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait(timeout=30)
            if "process" in setup:
                proc = setup["process"]
                proc.send_signal(signal.SIGINT)  # the hub stops the users' servers, the services and the proxy
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                deadline = time.monotonic() + 30
                left = _our_processes(base)
                while left and time.monotonic() < deadline:
                    time.sleep(0.5)
                    left = _our_processes(base)
                for p in left:  # ours by construction (their command line or folder is this test's)
                    p.kill()
            for p in processes:
                if p.poll() is None:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait(timeout=30)
            log.close()
            _remove_users(users)
            lock.close()
        print("\nclassroom-test timings (s) and memory (MiB):")
        for name, seconds in TIMINGS.items():
            print(f"  {seconds:7.1f}  {name}")
        print(f"  (hub log: {base / 'hub.log'})")
        assert not left, f"servers left running after the hub stopped: {[p.info['cmdline'] for p in left]}"
        assert not [u for u in users if _user_exists(u)], "users left behind"
        for port in ports.values():
            with socket.socket() as s:
                assert s.connect_ex(("127.0.0.1", port)) != 0, f"port {port} still open"
        shutil.rmtree(base, ignore_errors=True)  # kept, with its hub.log, only when a check above failed


def _disabled_plugins(html: str) -> set[str]:
    """The JupyterLab plugins a lab page switches off (its page config, "disabledExtensions")."""
    start = html.index('<script id="jupyter-config-data" type="application/json">')
    data = json.loads(html[html.index(">", start) + 1:html.index("</script>", start)])
    disabled = data.get("disabledExtensions", [])
    return set(disabled if isinstance(disabled, list) else [k for k, v in disabled.items() if v])


def _wait_service(teacher: Browser, timeout=120):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        reply = teacher.service("GET", "formgrader/api/status")
        if reply.status_code == 200:
            return
        time.sleep(0.5)
    raise TimeoutError(f"the formgrader service did not answer: {reply.status_code}")


@needs_hub
def test_a_class_on_jupyterhub_fetches_submits_and_gets_graded(hub):
    url = hub["url"]
    answers = _answers()

    # --- the instructor: generate and release the assignment through the formgrader service -------
    with Step("instructor logs in; formgrader answers"):
        teacher = Browser(url, INSTRUCTOR)
        _wait_service(teacher)
    with Step("instructor generates and releases E6-backward"):
        generated = teacher.service("POST", f"formgrader/api/assignment/{ASSIGNMENT}/assign")
        assert generated.status_code == 200 and generated.json()["success"], generated.text[-2000:]
        released = teacher.service("POST", f"formgrader/api/assignment/{ASSIGNMENT}/release")
        assert released.status_code == 200 and released.json()["success"], released.text[-2000:]
    release_text = (hub["course"] / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_text(encoding="utf-8")
    assert "BEGIN HIDDEN TESTS" not in release_text and "hidden_" not in release_text
    for name in ("self_attention_backward", "qkv_backward", "padded_backward"):  # the worked answers' functions
        assert f"def {name}(" not in release_text, name

    # --- five students log in through the hub and fetch it ------------------------------------------
    with Step("five students log in and start their servers"):
        students = {name: Browser(url, name) for name in STUDENTS}
        for browser in students.values():
            browser.start_server()
        for browser in students.values():
            browser.wait_ready()
    with Step("five students' first page: nbgitpuller pulls the student repository, the index opens"):
        for name, browser in students.items():
            first = browser.api.get(f"{url}/user/{name}/", allow_redirects=False, timeout=60)
            assert first.status_code in (301, 302) and "/git-pull?" in first.headers["Location"], (
                name, first.status_code, first.headers.get("Location"))
            query = urllib.parse.parse_qs(urllib.parse.urlsplit(first.headers["Location"]).query)
            assert query["repo"] == [hub["pull_url"]] and query["urlpath"] == [
                f"lab/tree/{REPO_NAME}/notebooks/00-index.ipynb"], query
            assert browser.server("GET", "git-pull", params={k: v[0] for k, v in query.items()}).status_code == 200
            pulled = browser.server("GET", "git-pull/api", params={"repo": query["repo"][0], "branch": "main",
                                                                   "targetpath": REPO_NAME})
            assert '"phase": "finished"' in pulled.text, (name, pulled.text[-2000:])
            index = browser.server("GET", f"api/contents/{REPO_NAME}/notebooks/00-index.ipynb")
            assert index.status_code == 200, (name, index.status_code)
            home = Path(pwd.getpwnam(name).pw_dir)
            assert (home / REPO_NAME / "notebooks" / "00-index.ipynb").stat().st_uid == pwd.getpwnam(name).pw_uid
            assert not (home / REPO_NAME / "instructor").exists()
    with Step("five students list and fetch the assignment"):
        for name, browser in students.items():
            listed = browser.server("GET", "assignments", params={"course_id": COURSE})
            assert listed.status_code == 200, (name, listed.status_code, listed.text[:500])
            assert [a["assignment_id"] for a in listed.json()["value"]] == [ASSIGNMENT], listed.json()
            fetched = browser.server("POST", "assignments/fetch",
                                     data={"course_id": COURSE, "assignment_id": ASSIGNMENT})
            assert fetched.status_code == 200, (name, fetched.text[:500])
            home = Path(pwd.getpwnam(name).pw_dir)
            fetched_text = (home / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_text(encoding="utf-8")
            assert "BEGIN HIDDEN TESTS" not in fetched_text
            assert all(course.points_label(t) in fetched_text for t in course.tasks_of(ASSIGNMENT))

    # --- students see no grading menus; the instructor does -----------------------------------------
    for name, browser in students.items():
        assert browser.server("GET", "formgrader").status_code == 404, name  # the formgrader extension: off
        assert browser.server("GET", "formgraders").status_code == 404, name  # the course list's: off
        assert browser.service("GET", "formgrader/api/status").status_code in (403, 404), name
        page = browser.server("GET", "lab")
        assert page.status_code == 200
        assert set(INSTRUCTOR_PLUGINS) <= _disabled_plugins(page.text), name
        assert "@jupyter/nbgrader:assignment-list" not in _disabled_plugins(page.text)
        assert browser.server("GET", "nbgrader_version", params={"version": "0"}).status_code != 404  # student side on
    assert teacher.service("GET", "formgrader").status_code == 200
    # the grader's own configuration turns the three plugins on again for the formgrader service
    assert not set(INSTRUCTOR_PLUGINS) & _disabled_plugins(teacher.service("GET", "lab").text)
    # the idle culler runs as a hub service
    services = teacher.api.get(f"{url}/hub/api/services", timeout=30).json()
    assert {"attention101", "idle-culler"} <= set(services), services
    assert any("jupyterhub_idle_culler" in " ".join(p.info["cmdline"] or []) for p in _our_processes(hub["base"]))

    # --- answers, saved through the Contents API as JupyterLab saves, then submitted --------------
    path = f"api/contents/{ASSIGNMENT}/{ASSIGNMENT}.ipynb"
    with Step("students answer and submit (four on time, one late)"):
        due = None
        for name in STUDENTS:
            browser = students[name]
            if name == "frank":  # the due date falls between the fourth submission and the fifth
                time.sleep(1.5)
                due = datetime.now(timezone.utc)
                time.sleep(1.5)
            nb = browser.server("GET", path).json()["content"]
            if answers[name] is not None:
                cells = [c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("solution")]
                assert len(cells) == len(answers[name])
                for cell, answer in zip(cells, answers[name]):
                    cell["source"] = answer
                saved = browser.server("PUT", path, json={"type": "notebook", "format": "json", "content": nb})
                assert saved.status_code == 200, (name, saved.text[:300])
            validated = browser.server("POST", "assignments/validate",
                                       data={"path": f"{ASSIGNMENT}/{ASSIGNMENT}.ipynb"})
            assert validated.status_code == 200 and validated.json()["success"], (name, validated.text[:500])
            submitted = browser.server("POST", "assignments/submit",
                                       data={"course_id": COURSE, "assignment_id": ASSIGNMENT})
            assert submitted.status_code == 200 and "success" not in submitted.json() or submitted.json().get(
                "success", True), (name, submitted.text[:500])
    with Step("instructor sets the due date"):
        put = teacher.service("PUT", f"formgrader/api/assignment/{ASSIGNMENT}",
                              json={"duedate_notimezone": due.strftime("%Y-%m-%d %H:%M:%S.%f"),
                                    "duedate_timezone": "UTC"})
        assert put.status_code == 200, put.text[:500]

    # --- the instructor collects, autogrades, generates and releases feedback ----------------------
    with Step("instructor collects"):
        collected = teacher.service("POST", f"formgrader/api/assignment/{ASSIGNMENT}/collect")
        assert collected.status_code == 200 and collected.json()["success"], collected.text[-2000:]
    with Step("instructor autogrades five submissions"):
        for name in STUDENTS:
            start = time.perf_counter()
            graded = teacher.service("POST", f"formgrader/api/submission/{ASSIGNMENT}/{name}/autograde")
            assert graded.status_code == 200 and graded.json()["success"], (name, graded.text[-3000:])
            TIMINGS[f"  s, autograding {name}'s submission"] = time.perf_counter() - start
    with Step("instructor generates and releases feedback"):
        for action in ("generate_feedback", "release_feedback"):
            done = teacher.service("POST", f"formgrader/api/assignment/{ASSIGNMENT}/{action}")
            assert done.status_code == 200 and done.json()["success"], (action, done.text[-2000:])

    submissions = {s["student"]: s for s in teacher.service("GET", f"formgrader/api/submissions/{ASSIGNMENT}").json()}
    want = {name: float(score) for name, score in _expected_scores().items()}
    total = float(course.totals()[ASSIGNMENT])
    assert {n: (s["score"], s["max_score"]) for n, s in submissions.items()} == {
        n: (score, total) for n, score in want.items()}, submissions
    # the late flag: the submission's timestamp (written by the student's submit) after the due date
    assignment = teacher.service("GET", f"formgrader/api/assignment/{ASSIGNMENT}").json()
    duedate = datetime.fromisoformat(assignment["duedate"])
    assert {n for n, s in submissions.items() if datetime.fromisoformat(s["timestamp"]) > duedate} == {"frank"}

    # --- each student fetches their feedback through their own server ------------------------------
    with Step("students fetch their feedback"):
        feedback = {}
        for name, browser in students.items():
            fetched = browser.server("POST", "assignments/fetch_feedback",
                                     data={"course_id": COURSE, "assignment_id": ASSIGNMENT})
            assert fetched.status_code == 200, (name, fetched.text[:500])
            folder = browser.server("GET", f"api/contents/{ASSIGNMENT}/feedback").json()["content"]
            assert len(folder) == 1, (name, folder)
            html = browser.server("GET", f"api/contents/{folder[0]['path']}/{ASSIGNMENT}.html",
                                  params={"type": "file", "format": "text"}).json()["content"]
            feedback[name] = html
    for name, score in want.items():
        assert f"Score: {score} / {total}" in feedback[name] or f"{score} / {total}" in feedback[name], name
    assert "do not depend on the mask" in feedback["carol"]  # the check's own message, as the student sees it
    assert "path through the values" in feedback["dave"]
    assert "hidden_self_attention_backward" in feedback["alice"]  # the hidden tests, shown after grading
    assert "NotImplementedError" in feedback["erin"]

    # --- what a student's single-user server cost (printed with the timings) ------------------------
    for name in STUDENTS:
        for proc in _our_processes(hub["base"]):
            try:
                env = proc.info["environ"] or {}
                if env.get("JUPYTERHUB_USER") == name and "jupyterhub-singleuser" in " ".join(proc.info["cmdline"]):
                    status = Path(f"/proc/{proc.pid}/status").read_text()
                    peak = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:"))
                    TIMINGS[f"MiB, peak memory of {name}'s single-user server (no kernel)"] = peak / 1024
            except (psutil.NoSuchProcess, FileNotFoundError, StopIteration):
                pass
    status = Path(f"/proc/{psutil.Process(hub['process'].pid).pid}/status").read_text()
    TIMINGS["MiB, peak memory of JupyterHub itself"] = next(
        int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")) / 1024
    servers = [v for k, v in TIMINGS.items() if k.startswith("MiB, peak memory of") and "JupyterHub" not in k]
    assert len(servers) == len(STUDENTS)
    # docs/classroom.md's guarantee and limit hold this server too (nbgrader's student side, behind the hub)
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_class_sizing

    sized = bench_class_sizing.sizing(json.loads((ROOT / "benchmarks" / "class_sizing.json").read_text()))
    kernels = sized["two_kernels"] - sized["server"]
    assert max(servers) + sized["kernel_max"] <= sized["guarantee"] and max(servers) + kernels <= sized["limit"]

    # --- the gradebook, exported as the instructor does in the formgrader's terminal ---------------
    with Step("instructor exports the gradebook"):
        exported = subprocess.run(["runuser", "-u", GRADER, "--", str(hub["venv"] / "bin" / "nbgrader"), "export",
                                   "--to", "grades.csv"], cwd=hub["course"], capture_output=True, text=True,
                                  timeout=300, env={**os.environ, **THREADS,
                                                    "PATH": f"{hub['venv'] / 'bin'}{os.pathsep}{os.environ['PATH']}"})
        assert exported.returncode == 0, exported.stderr[-2000:]
    with open(hub["course"] / "grades.csv", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    assert {r["student_id"]: float(r["score"]) for r in rows} == want
    late = {r["student_id"] for r in rows if r["timestamp"] and r["duedate"]
            and datetime.fromisoformat(r["timestamp"]) > datetime.fromisoformat(r["duedate"])}
    assert late == {"frank"}


# --- what the page says, and what students get (always run) ----------------------------------------


def test_the_sizing_table_is_the_measurement():
    """docs/classroom.md's table is what bench_class_sizing.py --table prints from the stored run."""
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_class_sizing.py"), "--table",
                          str(ROOT / "benchmarks" / "class_sizing.json")],
                         capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    page = (ROOT / "docs" / "classroom.md").read_text(encoding="utf-8")
    block = page.split("<!-- sizing table:", 1)[1].split("-->", 1)[1].split("<!-- /sizing table -->")[0]
    assert block.strip() == run.stdout.strip()
    data = json.loads((ROOT / "benchmarks" / "class_sizing.json").read_text())
    measured = {Path(r["notebook"]).name for r in data["notebooks"]}
    wanted = {p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb")}
    assert wanted | {p.name for p in course.SOLUTIONS.glob("*.ipynb")} == measured
    # the limits hold every measured notebook with a server, two at a time
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_class_sizing

    sized = bench_class_sizing.sizing(data)
    assert sized["two_kernels"] < sized["limit"] and sized["one_kernel"] <= sized["guarantee"]
    for limit in ('mem_limit = "1G"', "limit: 1G"):
        assert limit in page and sized["limit"] == 1024
    for guarantee in ('mem_guarantee = "512M"', "guarantee: 512M"):
        assert guarantee in page and sized["guarantee"] == 512


def test_the_hub_configs_are_lean_pinned_and_single_threaded():
    page = PAGE.read_text(encoding="utf-8")
    assert page.count('-e ".[test]"') == 1  # named once, as what not to install
    # pinned to a commit (no tag exists yet): the plain hub, TLJH and the Kubernetes image
    assert page.count('"attention-step-by-step[lab] @ git+https://github.com/<owner>/<name>@<commit>"') == 3
    assert "v0.1.0" not in page
    assert 'c.Spawner.default_url = "/lab/tree/<name>/notebooks/00-index.ipynb"' in page
    assert 'defaultUrl: "/lab/tree/<name>/notebooks/00-index.ipynb"' in page
    assert '"OPENBLAS_NUM_THREADS": "1"' in page and 'OPENBLAS_NUM_THREADS: "1"' in page
    assert "git-pull?repo=" in page and "-Xours" in page


def test_the_page_is_a_script_of_marked_steps():
    """The plain-JupyterHub recipe's blocks are marked, in order; every bash block of it is a step."""
    page = PAGE.read_text(encoding="utf-8")
    found = page_steps(page)
    assert [name for kind, name, _ in found if kind == "step"] == list(STEPS)
    recipe = page.split("## A plain JupyterHub", 1)[1].split("\n## ", 1)[0]
    fences = re.findall(r"^```(\S*)(.*)$", recipe, re.M)
    opening = [f for f in fences[::2]]
    assert all(" classroom-" in rest for _, rest in opening), opening  # nothing there the test skips
    config = dict((name, body) for kind, name, body in found if kind == "file")[FILES[0]]
    compile(config, FILES[0], "exec")  # the hub's configuration is Python
    # the fixes of issue 30, as the page states them
    assert '--course-id attention101' in page and "chown -R grader-attention101" in page
    for plugin in ("formgrader", "create-assignment", "course-list"):
        assert f"@jupyter/nbgrader:{plugin}" in dict((n, b) for k, n, b in found if k == "step")["lock"]
    assert "labextension lock --level=sys_prefix" in page
    assert 'c.Spawner.cmd = [f"{VENV}/bin/jupyterhub-singleuser"]' in config
    assert '"command": [f"{VENV}/bin/jupyterhub-singleuser"' in config and '"user": "grader-attention101"' in config
    assert 'c.Spawner.default_url = ("/git-pull?repo=' in config and "jupyterhub_idle_culler" in config
    assert "cull_idle_timeout" in config


def test_the_test_substitutes_only_what_the_page_lists():
    """Every substitution the hub test makes is a row of the page's table."""
    page = PAGE.read_text(encoding="utf-8")
    table = page.split("| on the page | in the test |", 1)[1].split("\n\n", 1)[0]
    rows = substitutions(Path("/base"), {"proxy": 1, "api": 2, "hub": 3, "service": 4}, "uv", "git+file:///r@c",
                         "git://127.0.0.1:5/r")
    for old, _ in rows:
        assert old.split(":")[-1] in table or old in table or old.startswith("https%3A"), old
    body = substitute("/opt/jupyterhub/bin/pip install x; /opt/jupyterhub/bin/jupyterhub", rows)
    assert body == "uv pip install --python /base/opt/jupyterhub/bin/python x; /base/opt/jupyterhub/bin/jupyterhub"


def test_an_edit_that_breaks_a_step_fails(tmp_path):
    """A copy of the page with a step broken: its block fails when run; with a marker lost, extraction fails."""
    page = PAGE.read_text(encoding="utf-8")
    steps = {name: body for kind, name, body in page_steps(page) if kind == "step"}
    # the course step, run on its own in a sandbox: the export works (no chown: no grader user here)
    course_step = substitute(steps["course"], [("/home/grader-attention101", str(tmp_path / "grader")),
                                               ("/opt/jupyterhub/bin/python", sys.executable),
                                               ("/opt/jupyterhub", str(tmp_path / "venv")),
                                               ("/srv/nbgrader", str(tmp_path / "srv"))])
    course_step = "\n".join(line for line in course_step.splitlines() if not line.startswith("chown"))
    run_step("course", course_step, ROOT)
    config = (tmp_path / "grader" / "course" / "nbgrader_config.py").read_text()
    assert 'course_id = "attention101"' in config  # the id the page names, not the export's default
    assert (tmp_path / "venv" / "etc" / "jupyter" / "nbgrader_config.py").read_text().strip() == (
        f'c.Exchange.root = "{tmp_path / "srv"}/exchange"')
    # one word of it broken, as an edit might: the run stops there and fails
    broken = course_step.replace("--course-id", "--course")
    with pytest.raises(StepFailed, match="course"):
        run_step("course", broken, ROOT)
    with pytest.raises(StepFailed):
        run_step("course", "false\n" + course_step, ROOT)  # a failing first line is not skipped
    # a step whose marker is lost (the block left unmarked), or the steps reordered: extraction refuses
    with pytest.raises(ValueError, match="marked blocks"):
        page_steps(page.replace("```bash classroom-step lock", "```bash"))
    a, b = page.index("```bash classroom-step users"), page.index("```bash classroom-step course")
    with pytest.raises(ValueError, match="marked blocks"):
        page_steps(page.replace("```bash classroom-step users", "```bash classroom-step course", 1)[:b] + page[b:]
                   .replace("```bash classroom-step course", "```bash classroom-step users", 1))
    assert a < b


def test_binder_students_get_no_grading_tools():
    """binder/ (what repo2docker builds, ignoring the root environment.yml) has no nbgrader or hub."""
    text = "\n".join(line for p in (ROOT / "binder").iterdir() if p.is_file()
                     for line in p.read_text(encoding="utf-8").splitlines() if not line.lstrip().startswith("#"))
    assert "numpy" in text and "pip install --no-deps -e ." in text
    assert "nbgrader" not in text.lower() and "jupyterhub" not in text.lower()


def test_the_wheel_ships_no_instructor_material():
    """setuptools finds `helpers*` only; instructor/ is no package, and the docs tell the site to skip it."""
    import tomllib

    with open(ROOT / "pyproject.toml", "rb") as f:
        find = tomllib.load(f)["tool"]["setuptools"]["packages"]["find"]
    assert find["include"] == ["helpers*"]
    assert not list((ROOT / "instructor").rglob("__init__.py"))
    setuptools = pytest.importorskip("setuptools")  # not in every venv from Python 3.12 on

    found = setuptools.find_namespace_packages(where=str(ROOT), include=find["include"],
                                               exclude=find.get("exclude", []))
    assert found and all(name.split(".")[0] == "helpers" for name in found)
