"""The whole class loop on a real JupyterHub, on loopback: `make classroom-test` (issue 25 item 6).

The hub test runs only when ``ATTENTION_CLASSROOM=1`` (the make target sets it; ``make
test`` skips it); the checks of docs/classroom.md and of what students get run always.
What it starts, all on 127.0.0.1 and all stopped at the end:

- JupyterHub (``jupyterhub`` from .venv-grade) with its DummyAuthenticator and the
  local-process spawner ``SimpleLocalProcessSpawner``, behind ``configurable-http-proxy``
  from npm (installed into build/chp/ by the make target);
- the instructor's nbgrader course (tools/make_nbgrader_course.py's export, course id
  :data:`COURSE`), an exchange folder, and formgrader as a hub *service* that only the
  instructor's group may open;
- one single-user server per student, each with nbgrader's student extension only
  (assignment list and validation): the formgrader, course list and create-assignment
  extensions are switched off for students, server side and in JupyterLab.

Then, every step through HTTP as a browser would (the hub's login form and REST API, the
formgrader's API, the single-user servers' ``/assignments`` endpoints and Contents API),
never by calling nbgrader in-process: the instructor generates and releases E6-backward;
five students log in and fetch it; Alice answers right, Carol's padded_backward ignores the
lengths (exercise 1's points only), Dave's dX leaves out the route through the values
(exercise 2's points only), Erin submits the blank notebook (0), Frank answers right after
the due date (all the points, flagged late); every score is read from instructor/points.toml. The instructor
collects, autogrades, generates and releases feedback, each student fetches theirs, and the
instructor exports the gradebook (``nbgrader export``, as in the formgrader's terminal: it
has no HTTP endpoint). The test asserts every score, the feedback each student receives,
and the late flag, and prints the time of each step.

Every user here is the same operating-system user (this machine runs the hub as root),
so each student's nbgrader config names their student id; on a real hub each user is an
OS user (or a container) and nbgrader takes the name from there.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import socket
import subprocess
import sys
import time
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

GRADE_BIN = ROOT / ".venv-grade" / "bin"
CHP = ROOT / "build" / "chp" / "node_modules" / ".bin" / "configurable-http-proxy"
COURSE = "attention101"
ASSIGNMENT = "E6-backward"
PASSWORD = "classroom-test"
STUDENTS = ("alice", "carol", "dave", "erin", "frank")
INSTRUCTOR = "instructor"
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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _write_config(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("c = get_config()  # noqa: F821\n" + "\n".join(lines) + "\n", encoding="utf-8")


def _student_jupyter_config(config_dir: Path) -> None:
    """A student's Jupyter config: nbgrader's instructor extensions off, server side and in JupyterLab."""
    config_dir.mkdir(parents=True, exist_ok=True)
    (config_dir / "jupyter_server_config.json").write_text(json.dumps(
        {"ServerApp": {"jpserver_extensions": {name: False for name in INSTRUCTOR_SERVER_EXTENSIONS}}}))
    (config_dir / "labconfig").mkdir(exist_ok=True)
    (config_dir / "labconfig" / "page_config.json").write_text(json.dumps(
        {"disabledExtensions": {name: True for name in INSTRUCTOR_PLUGINS}}))


def _set_up(base: Path) -> dict:
    """Course, exchange, homes and the hub's config under ``base``; return the addresses."""
    ports = {"proxy": _free_port(), "api": _free_port(), "hub": _free_port(), "service": _free_port()}
    exchange = base / "exchange"
    exchange.mkdir(mode=0o777)
    exchange.chmod(0o777)
    course_root = base / "course"
    course.export(course_root)
    with open(course_root / "nbgrader_config.py", "a", encoding="utf-8") as config:
        config.write(f'c.CourseDirectory.course_id = "{COURSE}"\n'
                     f'c.CourseDirectory.root = "{course_root}"\n'
                     f'c.Exchange.root = "{exchange}"\n')
    homes = base / "home"
    for name in STUDENTS:
        home = homes / name
        _write_config(home / "nbgrader_config.py", [
            f'c.Exchange.root = "{exchange}"',
            # every hub user is the same OS user here; a real hub's users are OS users
            f'c.CourseDirectory.student_id = "{name}"',
        ])
        _student_jupyter_config(home / ".jupyter")
    (homes / INSTRUCTOR).mkdir(parents=True)
    instructor_config = base / "instructor-jupyter"
    instructor_config.mkdir()
    singleuser = str(GRADE_BIN / "jupyterhub-singleuser")
    hub = base / "hub"
    hub.mkdir()
    env = {**THREADS, "PATH": f"{GRADE_BIN}{os.pathsep}{os.environ['PATH']}"}
    _write_config(hub / "jupyterhub_config.py", [
        "import os",
        'c.JupyterHub.ip = "127.0.0.1"',
        f"c.JupyterHub.port = {ports['proxy']}",
        'c.JupyterHub.hub_ip = "127.0.0.1"',
        f"c.JupyterHub.hub_port = {ports['hub']}",
        f'c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{ports["api"]}"',
        f"c.ConfigurableHTTPProxy.command = [{str(CHP)!r}]",
        f'c.ConfigurableHTTPProxy.pid_file = "{hub / "proxy.pid"}"',
        f'c.JupyterHub.db_url = "sqlite:///{hub / "jupyterhub.sqlite"}"',
        f'c.JupyterHub.cookie_secret_file = "{hub / "cookie_secret"}"',
        'c.JupyterHub.authenticator_class = "dummy"',
        f'c.DummyAuthenticator.password = "{PASSWORD}"',
        f"c.Authenticator.allowed_users = {set(STUDENTS) | {INSTRUCTOR}!r}",
        'c.JupyterHub.spawner_class = "simple"',
        f'c.SimpleLocalProcessSpawner.home_dir_template = "{homes}/{{username}}"',
        f"c.Spawner.cmd = [{singleuser!r}]",
        'c.Spawner.args = ["--allow-root"]',
        'c.Spawner.default_url = "/lab"',
        "c.Spawner.start_timeout = 120",
        "c.Spawner.http_timeout = 120",
        f"c.Spawner.environment = {{**{env!r}, "
        f"'JUPYTER_CONFIG_DIR': lambda spawner: os.path.join({str(homes)!r}, spawner.user.name, '.jupyter')}}",
        # formgrader as a hub service, for the instructors' group only
        f'c.JupyterHub.load_groups = {{"formgrade-{COURSE}": {{"users": ["{INSTRUCTOR}"]}}}}',
        "c.JupyterHub.load_roles = [",
        f'    {{"name": "formgrade-{COURSE}", "groups": ["formgrade-{COURSE}"],',
        f'     "scopes": ["access:services!service={COURSE}", "list:services", "read:services"]}},',
        "]",
        "c.JupyterHub.services = [{",
        f'    "name": "{COURSE}",',
        f'    "url": "http://127.0.0.1:{ports["service"]}",',
        f'    "command": [{singleuser!r}, "--allow-root", "--ServerApp.default_url=/formgrader"],',
        f'    "cwd": "{course_root}",',
        f'    "environment": {{**{env!r}, "JUPYTER_CONFIG_DIR": "{instructor_config}"}},',
        '    "oauth_no_confirm": True,',
        "}]",
    ])
    return {"ports": ports, "base": base, "hub": hub, "course": course_root, "homes": homes,
            "url": f"http://127.0.0.1:{ports['proxy']}"}


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


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    if not (GRADE_BIN / "jupyterhub").exists() or not CHP.exists():
        pytest.fail("run `make classroom-test`: it installs JupyterHub into .venv-grade and the proxy into build/chp")
    base = tmp_path_factory.mktemp("classroom")
    with Step("set-up: export the course, write the configs"):
        setup = _set_up(base)
    log = open(base / "hub.log", "w")
    env = {**os.environ, **THREADS, "PATH": f"{GRADE_BIN}{os.pathsep}{os.environ['PATH']}"}
    env.pop("PYTHONPATH", None)  # the hub's users import the helpers installed in .venv-grade
    with Step("start JupyterHub, the proxy and the formgrader service"):
        proc = subprocess.Popen([str(GRADE_BIN / "jupyterhub"), "-f", str(setup["hub"] / "jupyterhub_config.py")],
                                cwd=setup["hub"], stdout=log, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)
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
    setup["process"] = proc
    try:
        yield setup
    finally:
        with Step("stop every server"):
            proc.send_signal(signal.SIGINT)  # the hub stops the users' servers, the service and the proxy
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
            log.close()
            deadline = time.monotonic() + 30
            left = _our_processes(base)
            while left and time.monotonic() < deadline:
                time.sleep(0.5)
                left = _our_processes(base)
            for p in left:  # ours by construction (their command line or folder is this test's)
                p.kill()
        print("\nclassroom-test timings (s) and memory (MiB):")
        for name, seconds in TIMINGS.items():
            print(f"  {seconds:7.1f}  {name}")
        assert not left, f"servers left running after the hub stopped: {[p.info['cmdline'] for p in left]}"
        for port in setup["ports"].values():
            with socket.socket() as s:
                assert s.connect_ex(("127.0.0.1", port)) != 0, f"port {port} still open"


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
    with Step("five students list and fetch the assignment"):
        for name, browser in students.items():
            listed = browser.server("GET", "assignments", params={"course_id": COURSE})
            assert listed.status_code == 200, (name, listed.status_code, listed.text[:500])
            assert [a["assignment_id"] for a in listed.json()["value"]] == [ASSIGNMENT], listed.json()
            fetched = browser.server("POST", "assignments/fetch",
                                     data={"course_id": COURSE, "assignment_id": ASSIGNMENT})
            assert fetched.status_code == 200, (name, fetched.text[:500])
            fetched_text = (hub["homes"] / name / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_text(encoding="utf-8")
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
            graded = teacher.service("POST", f"formgrader/api/submission/{ASSIGNMENT}/{name}/autograde")
            assert graded.status_code == 200 and graded.json()["success"], (name, graded.text[-3000:])
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
    servers = [v for k, v in TIMINGS.items() if k.startswith("MiB, peak memory of")]
    assert len(servers) == len(STUDENTS)
    # docs/classroom.md's guarantee and limit hold this server too (nbgrader's student side, behind the hub)
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_class_sizing

    sized = bench_class_sizing.sizing(json.loads((ROOT / "benchmarks" / "class_sizing.json").read_text()))
    kernels = sized["two_kernels"] - sized["server"]
    assert max(servers) + sized["kernel_max"] <= sized["guarantee"] and max(servers) + kernels <= sized["limit"]

    # --- the gradebook, exported as the instructor does in the formgrader's terminal ---------------
    with Step("instructor exports the gradebook"):
        exported = subprocess.run([str(GRADE_BIN / "nbgrader"), "export", "--to", "grades.csv"],
                                  cwd=hub["course"], capture_output=True, text=True, timeout=300,
                                  env={**os.environ, "PATH": f"{GRADE_BIN}{os.pathsep}{os.environ['PATH']}"})
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
    page = (ROOT / "docs" / "classroom.md").read_text(encoding="utf-8")
    assert page.count('-e ".[test]"') == 1  # named once, as what not to install
    assert page.count('"attention-step-by-step[lab] @ git+https://github.com/<owner>/<name>@v0.1.0"') == 2
    assert 'c.Spawner.default_url = "/lab/tree/<name>/notebooks/00-index.ipynb"' in page
    assert 'defaultUrl: "/lab/tree/<name>/notebooks/00-index.ipynb"' in page
    assert '"OPENBLAS_NUM_THREADS": "1"' in page and 'OPENBLAS_NUM_THREADS: "1"' in page
    assert "git-pull?repo=" in page and "-Xours" in page


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
