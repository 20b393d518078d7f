"""`make student-repo`: the public student repository holds no answer (issue 25 item 1, issue 31 item 1).

tools/make_student_repo.py writes, by allow-list, the files a student works with. This test
builds it and checks it as a student with that repository would:

- every graded function's definition and every graded task's answer value is searched for
  in every file that ships. The answers are not typed in here: the instructor's solution
  notebooks are executed (:func:`solved`) and the arguments of every check call they make
  are read out of their namespaces;
- every value and function that can be imported from the files that ship (outside the
  student notebooks) is given to every visible check, in a process whose ``helpers`` is the
  student repository's: none may pass;
- the student repository's own tests collect there, and its documentation tests pass there.
"""

from __future__ import annotations

import ast
import json
import math
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import make_student_repo  # noqa: E402

SOLUTIONS = sorted((ROOT / "instructor" / "solutions").glob("E*.ipynb"))
TEXT = (".py", ".md", ".ipynb", ".toml", ".txt", ".cfg", ".yml", ".yaml", ".json", ".j2", ".cff", "", ".html")


@pytest.fixture(scope="module")
def student_repo(tmp_path_factory):
    out = tmp_path_factory.mktemp("student") / "repo"
    kept, left = make_student_repo.make(out)
    return out, kept, left


def _shipped_texts(out):
    for path in sorted(out.rglob("*")):
        if path.is_file() and path.suffix in TEXT:
            try:
                yield path.relative_to(out).as_posix(), path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                continue


# ---------------------------------------------------------------------------
# What ships, and what does not
# ---------------------------------------------------------------------------


def test_the_student_repository_holds_what_the_allow_list_names_and_nothing_else(student_repo):
    out, kept, left = student_repo
    files = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    assert files == set(kept)
    assert all(make_student_repo.shipped(f) for f in files)
    assert not [f for f in files if f.startswith("instructor/")]
    for gone in ("tools/make_nbgrader_course.py", "tools/make_student_repo.py", "docs/classroom.md",
                 "tests/test_nbgrader.py", "tests/test_classroom.py", "tests/test_student_repo.py",
                 "tests/test_checks_corpus_e1_e3.py", "tests/test_checks_corpus_e4_e7.py", "tests/test_checks.py",
                 "tests/test_checks_functions.py", "tests/test_homework_not_in_lectures.py",
                 "tests/test_homework_not_in_lectures_e4_e7.py", "tests/test_exercises.py"):
        assert gone in left and gone not in files, gone
    assert [f for f in left if f.startswith("instructor/solutions/")], "the solutions were not among those left out"
    # a file nobody listed stays out: the allow-list, not a deny-list
    assert not make_student_repo.shipped("tools/new_grading_tool.py")
    assert not make_student_repo.shipped("tests/test_new.py")
    assert not make_student_repo.shipped("instructor/anything.md")


def test_the_student_repository_has_what_a_student_works_with(student_repo):
    out, _, _ = student_repo
    for needed in ("README.md", "pyproject.toml", "Makefile", "notebooks/00-index.ipynb", "helpers/checks/_core.py",
                   "docs/glossary.md", "binder/environment.yml", "conftest.py", "tests/test_attention.py"):
        assert (out / needed).is_file(), needed
    tasks = sorted(p.name for p in (out / "exercises" / "student").glob("E*.ipynb"))
    assert tasks == sorted(p.name for p in (ROOT / "exercises" / "student").glob("E*.ipynb")) and len(tasks) == 7
    for path in out.rglob("*.ipynb"):
        assert make_student_repo.worked_answers(path) == [], path
    # its own helpers import, from its own folder
    found = subprocess.run([sys.executable, "-c", "import helpers.checks, helpers; print(helpers.__file__)"],
                           cwd=out, env={"PYTHONPATH": str(out), "PATH": "/usr/bin:/bin"},
                           capture_output=True, text=True, check=True).stdout.strip()
    assert Path(found).resolve().is_relative_to(out.resolve())


def test_the_student_makefile_and_docs_name_nothing_left_out(student_repo):
    """Issue 30 item 8: no make target, recipe line or link for a file the repository leaves out."""
    out, _, _ = student_repo
    makefile = (out / "Makefile").read_text(encoding="utf-8")
    targets = set(re.findall(r"^([a-z][a-z-]*):", makefile, re.MULTILINE))
    assert {"lab", "test", "notebooks", "slides", "site"} <= targets
    assert not targets & set(make_student_repo.GRADING_TARGETS), targets
    for path in re.findall(r"\b((?:tools|tests|benchmarks|instructor)/[\w./-]+\.py)\b", makefile):
        assert (out / path).is_file(), f"the student Makefile runs {path}, which is not there"
    assert "instructor/" not in makefile and "GRADE_STAMP)" not in makefile.split("\ntest:")[1].split("\n")[0]
    dry = subprocess.run(["make", "-n", "test", "notebooks", "lab"], cwd=out, capture_output=True, text=True)
    assert dry.returncode == 0, dry.stderr
    reference = (out / "docs" / "reference.md").read_text(encoding="utf-8")
    for target in make_student_repo.GRADING_TARGETS:
        assert not [line for line in reference.splitlines() if line.startswith(f"| `make {target}`")], target
    # the repository's own documentation tests (every target documented, every link resolves) pass there
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_docs.py"],
                         cwd=out, capture_output=True, text=True, timeout=600,
                         env=dict(os.environ, PYTHONPATH=str(out), OPENBLAS_NUM_THREADS="1"))
    assert run.returncode == 0, run.stdout[-3000:]


def test_every_test_that_ships_collects_in_the_student_repository(student_repo):
    """The student repository's `make test` runs what ships: each test module imports there."""
    out, kept, _ = student_repo
    run = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
                         cwd=out, capture_output=True, text=True, timeout=600,
                         env=dict(os.environ, PYTHONPATH=str(out), OPENBLAS_NUM_THREADS="1"))
    assert run.returncode == 0, run.stdout[-3000:]
    collected = {line.split("::")[0] for line in run.stdout.splitlines() if "::" in line}
    assert {f for f in kept if re.match(r"tests/test_\w+\.py$", f)} <= collected, collected


def test_a_worked_answer_left_in_a_notebook_stops_it(tmp_path):
    """A repository whose exercise notebook still holds a solution cell: nothing is written."""
    root = tmp_path / "source"
    (root / "exercises" / "student").mkdir(parents=True)
    cell = {"cell_type": "code", "id": "a1", "metadata": {"tags": ["solution"]}, "source": "x = 42\n",
            "outputs": [], "execution_count": None}
    nb = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (root / "exercises" / "student" / "E9.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "."], cwd=root, check=True)
    with pytest.raises(SystemExit, match="worked answers"):
        make_student_repo.make(tmp_path / "out", root=root)
    assert not (tmp_path / "out").exists()
    cell["source"] = ""  # the student copy's empty answer cell is fine
    (root / "exercises" / "student" / "E9.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    kept, _ = make_student_repo.make(tmp_path / "out", root=root)
    assert kept == ["exercises/student/E9.ipynb"]


# ---------------------------------------------------------------------------
# The answers, computed by the instructor's solutions
# ---------------------------------------------------------------------------

DUMP = textwrap.dedent(
    """
    import json as _json, numpy as _np
    _found = {}
    for _src in %r:
        try:
            _v = eval(_src)
        except Exception:
            continue
        if callable(_v) and not isinstance(_v, _np.ndarray):
            _found[_src] = {"function": getattr(_v, "__name__", _src)}
            continue
        try:
            _a = _np.asarray(_v, dtype=float)
        except (TypeError, ValueError):
            if isinstance(_v, (list, tuple)) and all(isinstance(_t, str) for _t in _v):
                _found[_src] = {"tokens": list(_v)}
            continue
        if _a.size <= 4096 and _np.all(_np.isfinite(_a)):
            _found[_src] = {"numbers": _a.tolist(), "shape": list(_a.shape)}
    print("ANSWERS" + _json.dumps(_found))
    """
)


def _check_arguments(nb):
    """The source of every argument of every ``check_*`` call in the notebook's code cells."""
    found = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")).startswith(
                    "check_"):
                for arg in [*node.args, *(k.value for k in node.keywords)]:
                    found.append(ast.get_source_segment(cell.source, arg))
    return [s for s in dict.fromkeys(found) if s]


def _solve(path):
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    sources = _check_arguments(nb)
    nb.cells.append(nbformat.v4.new_code_cell(DUMP % (sources,)))
    env_before = dict(os.environ)
    os.environ.update(MPLBACKEND="Agg", OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    try:
        NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                       resources={"metadata": {"path": str(path.parent)}}).execute()
    finally:
        os.environ.clear()
        os.environ.update(env_before)
    text = "".join(o.get("text", "") for o in nb.cells[-1].outputs if o.get("output_type") == "stream")
    return json.loads(text.split("ANSWERS", 1)[1])


@pytest.fixture(scope="module")
def solved():
    """``{notebook: {argument source: answer}}``, from executing each solution notebook once."""
    return {path.name: _solve(path) for path in SOLUTIONS}


def _graded_functions():
    """The names of the functions the solutions define in their answer cells (tag ``solution``)."""
    names = set()
    for path in SOLUTIONS:
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code" and "solution" in cell.metadata.get("tags", []):
                tree = ast.parse(cell.source)
                names |= {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    return names


def test_the_solutions_give_answers_to_look_for(solved):
    assert sorted(solved) == [p.name for p in SOLUTIONS] and len(solved) == 7
    for name, answers in solved.items():
        assert answers, f"{name}: no check argument could be read"
    kinds = {next(iter(a)) for answers in solved.values() for a in answers.values()}
    assert {"function", "numbers", "tokens"} <= kinds
    assert {"attend_new_token", "my_softmax", "self_attention_backward", "merge_all"} <= _graded_functions()


def _stub(node):
    """True for a function whose body only raises NotImplementedError, passes or holds ``...`` (a task's stub)."""
    body = [s for s in node.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    return all(isinstance(s, (ast.Pass, ast.Raise)) for s in body)


def _definitions(relpath, text, names):
    """``relpath: name`` for each definition of a graded function in a shipped file (a student stub excepted)."""
    hits = []
    if relpath.endswith(".ipynb"):
        nb = json.loads(text)
        sources = ["".join(c.get("source", "")) for c in nb.get("cells", [])]
        student = relpath.startswith("exercises/student/")
        for source in sources:
            for name in names:
                if not re.search(rf"\b(def|class)\s+{re.escape(name)}\b", source):
                    continue
                if student:
                    try:
                        tree = ast.parse(source)
                    except SyntaxError:
                        hits.append(f"{relpath}: {name}")
                        continue
                    defs = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))
                            and n.name == name]
                    if all(isinstance(n, ast.FunctionDef) and _stub(n) for n in defs):
                        continue
                hits.append(f"{relpath}: {name}")
        return hits
    return [f"{relpath}: {name}" for name in names if re.search(rf"\b(def|class)\s+{re.escape(name)}\b", text)]


def test_no_shipped_file_defines_a_graded_function(student_repo):
    out, _, _ = student_repo
    names = _graded_functions() - {"loss", "state"}   # helpers of the answers, not graded names
    hits = [h for rel, text in _shipped_texts(out) for h in _definitions(rel, text, names)]
    assert hits == [], hits


_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _tokens(line):
    out = []
    for match in _NUMBER.finditer(line):
        text = match.group().replace(",", "")
        mantissa, _, exponent = text.lower().partition("e")
        power = int(exponent or 0) - len(mantissa.partition(".")[2])
        if abs(power) < 300:
            out.append((float(text), 10.0 ** power))
    return out


def _telling(value):
    """True for a value that says something when found: not a small integer or a short round number."""
    v = abs(value)
    if v == 0:
        return False
    if float(value).is_integer():
        return v >= 1000
    return not float(round(v, 2)) == v


def _printed(token, value):
    """True when a number token prints ``value`` to 4 significant digits or more."""
    x, res = token
    step = 10.0 ** (math.floor(math.log10(abs(value))) - 3)
    return res <= step * (1 + 1e-9) and abs(x - value) <= max(res, step) / 2 + 1e-12


HANDED_OVER = {("E1-section-5-2.ipynb", "weights")}
"""Check arguments that are a step the task hands over, not its answer: E1 ex. 1's weights are
softmax([1, 0]) = (0.7311, 0.2689), sigmoid(1), which lesson 02 teaches."""


def _answer_values(solved):
    """``[(label, [values...])]``: each scalar answer alone, each row of an array answer as a run."""
    found = []
    for notebook, answers in solved.items():
        for source, answer in answers.items():
            if "numbers" not in answer or (notebook, source) in HANDED_OVER:
                continue
            arr = np.asarray(answer["numbers"], dtype=float)
            if arr.ndim == 0:
                if _telling(float(arr)):
                    found.append((f"{notebook} {source}", [float(arr)]))
            elif arr.size >= 2:
                for i, row in enumerate(np.atleast_2d(arr.reshape(-1, arr.shape[-1]))[:64]):
                    run = [float(x) for x in row[:6]]
                    if sum(_telling(x) for x in run) >= 2:
                        found.append((f"{notebook} {source}[{i}]", run))
    return found


def _found(lines, run):
    for line in lines:
        tokens = _tokens(line)
        for start in range(len(tokens) - len(run) + 1):
            if all(_printed(tokens[start + j], v) if _telling(v) else abs(tokens[start + j][0] - v) < 1e-3
                   for j, v in enumerate(run)):
                return True
    return False


def test_no_shipped_file_holds_an_answer_value(student_repo, solved):
    out, _, _ = student_repo
    values = _answer_values(solved)
    assert len(values) >= 20, values
    lines = {rel: text.splitlines() for rel, text in _shipped_texts(out)}
    hits = [f"{label} in {rel}" for label, run in values for rel, ls in lines.items() if _found(ls, run)]
    assert hits == [], hits[:20]


def test_the_search_finds_an_answer_where_one_is():
    """The search itself: a file holding E3's temperature or a row of E2's weights is caught."""
    t = 1 / math.log(9)
    assert _found([f"T = {t:.4f}"], [t]) and _found([f"print({t!r})"], [t])
    assert not _found(["T = 0.46"], [t])
    row = [0.2231, 0.2477, 0.2746, 0.2546]
    assert _found(["[0.2231 0.2477 0.2746 0.2546]"], row)
    names = {"attend_new_token"}
    assert _definitions("tests/x.py", "def attend_new_token(q, k, v):\n    return q\n", names)
    stub = {"cells": [{"source": "def attend_new_token(q):\n    raise NotImplementedError\n"}]}
    assert not _definitions("exercises/student/E4.ipynb", json.dumps(stub), names)
    assert _definitions("notebooks/04.ipynb", json.dumps(stub), names)


# ---------------------------------------------------------------------------
# Everything importable from what ships, given to every visible check
# ---------------------------------------------------------------------------

RUNNER = textwrap.dedent(
    r'''
    import importlib, importlib.util, json, os, signal, sys, types, warnings
    import matplotlib
    matplotlib.use("Agg")
    import numpy as np
    OUT, TESTS = sys.argv[1], sys.argv[2]
    sys.path.insert(0, OUT)
    import helpers
    assert helpers.__file__.startswith(OUT), helpers.__file__
    from helpers import checks, examples
    sys.path.append(TESTS)
    import test_homework_not_in_lectures as e13
    import test_homework_not_in_lectures_e4_e7 as e47
    assert checks.__file__.startswith(OUT)

    class TooSlow(Exception):
        pass

    def _alarm(signum, frame):
        raise TooSlow()

    signal.signal(signal.SIGALRM, _alarm)

    def passes(call):
        signal.setitimer(signal.ITIMER_REAL, 3.0)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return getattr(call(), "status", None) == "correct"
        except BaseException:  # pytest's Failed (a fixture called as a function) is not an Exception
            return False
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)

    # every module that ships: the package, the tools, the tests, the benchmarks, conftest.py
    namespaces, errors = {}, []
    for root, _, files in os.walk(OUT):
        for name in sorted(files):
            path = os.path.join(root, name)
            rel = os.path.relpath(path, OUT)
            if not name.endswith(".py") or rel.startswith("exercises"):
                continue
            try:
                if rel.startswith("helpers"):
                    dotted = rel[:-3].replace(os.sep, ".").removesuffix(".__init__")
                    module = importlib.import_module(dotted)
                else:
                    spec = importlib.util.spec_from_file_location("shipped_" + rel.replace(os.sep, "_")[:-3], path)
                    module = importlib.util.module_from_spec(spec)
                    sys.path.insert(0, os.path.dirname(path))
                    spec.loader.exec_module(module)
            except BaseException as exc:
                errors.append([rel, type(exc).__name__])
                continue
            namespaces[rel] = dict(vars(module))
    for name in examples.list_examples() if hasattr(examples, "list_examples") else []:
        namespaces[f"load_example({name!r})"] = {name: examples.load_example(name)}

    right = e13._right_answers_cached()
    passed, fed = [], 0
    for rel, ns in namespaces.items():
        functions, arrays, numbers = {}, {}, {}
        for key, value in ns.items():
            if key.startswith("__") or isinstance(value, types.ModuleType):
                continue
            for label, candidate in e13._plausible(key, value):
                fed += 1
                for hit in e13._giveaways(label, candidate, right):
                    passed.append([rel, hit])
            if callable(value) and not isinstance(value, np.ndarray):
                functions[key] = value
                if isinstance(value, type):
                    functions.update({f"{key}.{k}": v for k, v in vars(value).items()
                                      if callable(v) and not k.startswith("__")})
            elif isinstance(value, np.ndarray) and value.dtype.kind in "fiub" and 0 < value.size <= 200_000:
                arrays[key] = np.asarray(value, dtype=float)
            elif isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
                numbers[key] = float(value)
            elif isinstance(value, (list, tuple, dict)):
                items = value.items() if isinstance(value, dict) else enumerate(value)
                for k, v in list(items)[:4096]:
                    if callable(v):
                        functions[f"{key}[{k!r}]"] = v
                    elif isinstance(v, np.ndarray) and v.dtype.kind in "fiub" and 0 < v.size <= 200_000:
                        arrays[f"{key}[{k!r}]"] = np.asarray(v, dtype=float)
                    elif isinstance(v, (int, float)) and not isinstance(v, bool):
                        numbers[f"{key}[{k!r}]"] = float(v)
        rows = dict(arrays)
        for key, a in arrays.items():
            if a.ndim == 2 and a.shape[0] <= 64:
                rows.update({f"{key}[{i}]": a[i] for i in range(a.shape[0])})
        pairs = {f"({a}, {b})": (x, y) for a, x in list(numbers.items())[:200] for b, y in list(numbers.items())[:200]}
        feeds = {"function": {k: (f,) for k, f in functions.items()}, "row": {k: (r,) for k, r in rows.items()},
                 "pair": pairs, "shapes": {}}
        for check, (task, kind) in e47.GRADED.items():
            for key, args in feeds[kind].items():
                fed += 1
                if passes(lambda: getattr(checks, check)(*args)):
                    passed.append([rel, f"{task}: {key}"])
    print("RESULT" + json.dumps({"passed": passed, "fed": fed, "modules": sorted(namespaces), "errors": errors}))
    '''
)


def _feed(out):
    env = dict(os.environ, MPLBACKEND="Agg", OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", PYTHONPATH=str(out))
    run = subprocess.run([sys.executable, "-c", RUNNER, str(out), str(ROOT / "tests")], cwd=out, env=env,
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.split("RESULT", 1)[1])


def test_nothing_importable_from_the_student_repository_passes_a_visible_check(student_repo):
    out, _, _ = student_repo
    found = _feed(out)
    assert "helpers/checks/e3_cat_sat.py" in found["modules"] and "tests/test_attention.py" in found["modules"]
    assert found["fed"] > 1000, found["fed"]
    assert found["passed"] == [], found["passed"][:20]
