"""The nbgrader export: points declared once, hidden tests that vary shapes, autograding.

The points of every task live in instructor/points.toml; the export, docs/teaching.md's
tables and any point label in the exercise notebooks must agree with it. The hidden tests
live in instructor/hidden_tests/ only: they pass the worked solutions, fail on wrong
answers and on a lookup table of the visible checks' probes, and compute their reference
with NumPy (never with ``helpers``).

nbgrader lives in its own virtual environment, .venv-grade (``make grade-venv``; the
``grade`` extra of pyproject.toml), so that its pins never touch the main .venv. The tests
marked ``grade`` build it when missing, export the course with tools/make_nbgrader_course.py
into a temporary course root, run ``nbgrader generate_assignment`` and ``nbgrader
autograde`` on E6-backward (7 points: 4 for the backward pass down to the input, 3 for the padded one), and
read the scores from the gradebook. The whole class loop on a JupyterHub is
tests/test_classroom.py (``make classroom-test``).
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import functools
import io
import json
import linecache
import math
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import nbformat
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import make_nbgrader_course as course  # noqa: E402

GRADE_BIN = ROOT / ".venv-grade" / "bin"
ASSIGNMENT = "E6-backward"
TASKS = course.tasks()
HIDDEN = [t for t in TASKS if t.hidden]


def _env():
    env = dict(os.environ)
    env["PATH"] = str(GRADE_BIN) + os.pathsep + env.get("PATH", "")  # nbgrader runs `alembic`
    env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env.pop("PYTHONPATH", None)
    return env


def _nbgrader(root, *args):
    run = subprocess.run(
        [str(GRADE_BIN / "nbgrader"), *args, f"--CourseDirectory.root={root}"],
        cwd=root, env=_env(), capture_output=True, text=True, timeout=900,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return run


@pytest.fixture(scope="module")
def grade_venv():
    if not (GRADE_BIN / "nbgrader").exists():
        subprocess.run(["make", "grade-venv"], cwd=ROOT, check=True, timeout=1800)
    return GRADE_BIN


def _submission(release_nb, answers):
    """The release notebook with its solution cells replaced by ``answers`` (in order)."""
    nb = nbformat.read(release_nb, as_version=4)
    cells = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]
    assert len(cells) == len(answers)
    for cell, answer in zip(cells, answers):
        cell.source = answer
    return nb


IGNORES_LENGTHS = """def padded_backward(q, k, v, d_out, lengths):
    # the chain rule over the whole batch, as if every token were real
    scale = 1 / math.sqrt(q.shape[-1])
    s = q @ np.swapaxes(k, -1, -2) * scale
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p = p / p.sum(axis=-1, keepdims=True)
    d_p = d_out @ np.swapaxes(v, -1, -2)
    d_s = p * (d_p - (p * d_p).sum(axis=-1, keepdims=True))
    return scale * d_s @ k, scale * np.swapaxes(d_s, -1, -2) @ q, np.swapaxes(p, -1, -2) @ d_out
"""
"""A plausible wrong padded_backward: right for a batch without padding (the mask message names it)."""


def _solutions():
    nb = nbformat.read(course.SOLUTIONS / f"{ASSIGNMENT}.ipynb", as_version=4)
    return [c.source for c in nb.cells if "solution" in c.metadata.get("tags", [])]


@pytest.mark.grade
def test_autograde_right_and_wrong_submissions(tmp_path, grade_venv):
    root = tmp_path / "course"
    course.export(root)
    _nbgrader(root, "generate_assignment", ASSIGNMENT, "--force")
    release = root / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    released = release.read_text(encoding="utf-8")
    assert "BEGIN HIDDEN TESTS" not in released and "hidden_" not in released and "seed=" not in released
    assert "(4 points)" in released and "(3 points)" in released  # the points, read from instructor/points.toml
    assert "raise NotImplementedError()" in released
    for name in ("self_attention_backward", "qkv_backward", "padded_backward"):  # the worked answers' functions
        assert f"def {name}(" not in released, name

    right = _solutions()
    # Bob's backward pass of exercise 1 is right; his padded_backward ignores the lengths (no mask at
    # all): finite gradients, but padding tokens attend and receive gradient.
    wrong = [right[0], IGNORES_LENGTHS]
    for student, answers in (("alice", right), ("bob", wrong)):
        target = root / "submitted" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        target.parent.mkdir(parents=True)
        nbformat.write(_submission(release, answers), target)
    _nbgrader(root, "autograde", ASSIGNMENT, "--force")

    read = subprocess.run(
        [str(GRADE_BIN / "python"), "-c", (
            "import json, sys\n"
            "from nbgrader.api import Gradebook\n"
            f"with Gradebook('sqlite:///{root / 'gradebook.db'}') as gb:\n"
            f"    s = {{n: gb.find_submission('{ASSIGNMENT}', n) for n in ('alice', 'bob')}}\n"
            "    print(json.dumps({n: [x.score, x.max_score] for n, x in s.items()}))\n"
        )],
        env=_env(), capture_output=True, text=True, timeout=300,
    )
    assert read.returncode == 0, read.stderr
    scores = json.loads(read.stdout.strip().splitlines()[-1])
    total, first = course.totals()[ASSIGNMENT], course.tasks_of(ASSIGNMENT)[0].points
    assert scores == {"alice": [total, total], "bob": [first, total]}, scores
    graded = nbformat.read(root / "autograded" / "bob" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    text = json.dumps([c.get("outputs", []) for c in graded.cells])
    assert "mask_ignored" not in text and "do not depend on the mask" in text  # the friendly message


# --- one source of points (issue 25 item 5) ----------------------------------------------------


def test_points_are_declared_once_and_the_export_carries_them(tmp_path):
    """Every check cell of every exercise notebook is a task of points.toml, in order, with its points."""
    written = course.export(tmp_path)
    assert sorted(p.stem for p in written) == sorted({t.notebook for t in TASKS})
    for path in written:
        nb = nbformat.read(path, as_version=4)
        want = [(t.check, t.points) for t in course.tasks_of(path.stem)]
        assert course.points_of(nb) == want, path.name
        solutions = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]
        tests = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
        assert len(solutions) == len(tests) == len(want), path.name
        for cell in solutions:
            assert cell.source.startswith("### BEGIN SOLUTION\n") and cell.source.endswith("### END SOLUTION")
        for cell, task in zip(tests, course.tasks_of(path.stem)):
            assert cell.metadata.nbgrader["locked"] and cell.metadata.nbgrader["points"] == task.points
            assert "assert result, result.message" in cell.source
            assert ("### BEGIN HIDDEN TESTS" in cell.source) == bool(task.hidden), (path.name, task.exercise)
            assert "seed=" not in cell.source  # the hidden tests no longer come from helpers.checks' seeds
        # The released headings carry the points: "(3 points)", "(part (b): 1 point)".
        text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
        for task in course.tasks_of(path.stem):
            assert course.points_label(task) in text, (path.name, task.exercise)
    assert course.totals() == {"E1-section-5-2": 9, "E2-i-am-happy": 4, "E3-cat-sat": 5, "E4-journey": 6,
                               "E5-definition": 7, "E6-backward": 7, "E7-online-softmax": 4, "total": 42}
    total = sum(points for p in written for _, points in course.points_of(nbformat.read(p, as_version=4)))
    assert total == course.totals()["total"]


def test_the_export_summary_counts_every_cell(tmp_path, capsys):
    """The summary is the gradebook's total (it once counted E1's two exercise-4 cells once: 42 of 44)."""
    assert course.main([str(tmp_path)]) == 0
    assert f"{course.totals()['total']} points" in capsys.readouterr().out


def test_docs_teaching_lists_the_declared_points():
    plan = (ROOT / "docs" / "teaching.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (E\d-[\w-]+) \| ([^|]+?) \| `(check_\w+)` \| (\d+) \|$", plan, flags=re.M)
    assert [(nb, ex.split(".")[0], check, int(pts)) for nb, ex, check, pts in rows] == [
        (t.notebook, t.exercise, t.check, t.points) for t in TASKS]
    totals = course.totals()
    assert f"Total: {totals['total']} points of homework" in plan
    for name, points in totals.items():
        if name != "total":
            # wherever the plan names a whole notebook's homework with its points, they agree
            for found in re.findall(rf"`{name}` \((\d+) points?\)", plan):
                assert int(found) == points, name
    # the 6-lecture path leaves E7 out
    six = plan.split("## A 6-lecture path", 1)[1].split("\n## ", 1)[0]
    assert f"Homework: {totals['total'] - totals['E7-online-softmax']} points (E7 is left out)" in six
    assert "E7" not in six.split("| lecture |", 1)[1].split("Homework:")[0]
    # the lecture tables: "E1 (9)" for whole notebooks
    for short, points in re.findall(r"\b(E\d) \((\d+)\)", plan):
        name = next(n for n in totals if n.startswith(short + "-"))
        assert int(points) == totals[name], short


def test_point_labels_in_the_exercise_notebooks_agree():
    """A heading that states points ("(2 points)") says what points.toml declares (none may yet)."""
    for folder in ("student", "solutions"):
        base = course.SOLUTIONS if folder == "solutions" else ROOT / "exercises" / "student"
        for path in sorted(base.glob("*.ipynb")):
            nb = nbformat.read(path, as_version=4)
            labels = [int(m) for c in nb.cells if c.cell_type == "markdown"
                      for line in c.source.splitlines() if line.startswith("#")
                      for m in re.findall(r"\((?:part \(\w\): )?(\d+) points?\)", line)]
            if labels:
                assert labels == [t.points for t in course.tasks_of(path.stem)], path


def test_points_toml_is_the_only_declaration():
    """No second table of points in the tools (the old POINTS dict of the export)."""
    source = (ROOT / "tools" / "make_nbgrader_course.py").read_text(encoding="utf-8")
    assert "POINTS = {" not in source and "HIDDEN_SEEDS" not in source
    with open(course.POINTS_FILE, "rb") as f:
        assert len(tomllib.load(f)["task"]) == len(TASKS) == 21


# --- hidden tests (issue 25 item 2) --------------------------------------------------------------


def _solved(name, edit=None):
    """The namespace of a solution notebook run top to bottom (its answers defined).

    ``edit`` rewrites each cell's source first. Each cell is compiled under a file name that
    linecache knows, so that ``inspect.getsource`` finds the answers' source (as in a kernel).
    """
    nb = nbformat.read(course.SOLUTIONS / f"{name}.ipynb", as_version=4)
    ns = {"__name__": "__main__"}
    with contextlib.redirect_stdout(io.StringIO()), np.errstate(all="ignore"):
        for i, cell in enumerate(nb.cells):
            if cell.cell_type == "code":
                source = edit(cell.source) if edit else cell.source
                filename = f"<solution {name} cell {i}>"
                linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
                exec(compile(source, filename, "exec"), ns)
    return ns


def _answer_name(task):
    nb = nbformat.read(course.SOLUTIONS / f"{task.notebook}.ipynb", as_version=4)
    calls = [course.check_call(c.source) for i, c in enumerate(nb.cells)
             if i and "solution" in nb.cells[i - 1].metadata.get("tags", []) and c.cell_type == "code"]
    return next(call.args[0].id for call in calls if call.func.id == task.check)


def _hidden(task, traps=True):
    """The task's hidden test as the grading cell runs it: with the kernels as traps (unless ``traps`` is false)."""
    ns = {}
    exec(course.hidden_source(task), ns)
    if not traps:
        return ns[task.hidden]
    exec(course.trap_source(), ns)
    return functools.partial(ns["graded_without_kernels"], ns[task.hidden])


def _passes(hidden, answer):
    try:
        with np.errstate(all="ignore"):
            hidden(answer)
    except Exception:  # an AssertionError, or the answer raising on a shape it was not written for
        return False
    return True


@pytest.mark.parametrize("task", HIDDEN, ids=lambda t: t.hidden)
def test_hidden_tests_pass_the_worked_solution(task):
    assert _passes(_hidden(task), _solved(task.notebook)[_answer_name(task)])


@pytest.mark.parametrize("task", HIDDEN, ids=lambda t: t.hidden)
def test_hidden_tests_are_self_contained_and_independent_of_helpers(task):
    """Only NumPy, imported inside; no name from outside the function but builtins."""
    source = course.hidden_source(task)
    tree = ast.parse(source)
    imports = {a.name for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
               for a in (n.names if isinstance(n, ast.Import) else [ast.alias(n.module)])}
    assert imports == {"numpy"}, imports
    assert "helpers" not in source and "attention." not in source
    bound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    bound |= {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    bound |= {a.arg for n in ast.walk(tree) if isinstance(n, ast.arguments) for a in n.args}
    bound |= {"np"}
    free = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - bound
    assert free <= set(dir(builtins)), free


def test_the_grading_cells_pass_the_static_check_of_the_calling_cell(tmp_path):
    """The checks' static refusal reads the cell that calls them; each grading cell, hidden tests
    included, imports neither helpers.attention nor threads and calls no exec/eval/compile."""
    from helpers.checks import _core

    for path in course.export(tmp_path):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.metadata.get("nbgrader", {}).get("grade"):
                assert _core._source_reasons(cell.source) == [], (path.name, cell.source[:200])


def _spy(answer):
    """``answer``, and the list of ``(args, kwargs)`` it is called with (copies)."""
    calls = []

    def spy(*args, **kwargs):
        calls.append(([np.array(a, copy=True) for a in args],
                      {key: None if value is None else np.array(value, copy=True) for key, value in kwargs.items()}))
        return answer(*args, **kwargs)

    return spy, calls


def _scores(q, k):
    """The scaled scores q k^T / sqrt(d_k) over the last two axes."""
    return q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])


def _padded(lengths, n):
    real = np.arange(n) < np.asarray(lengths)[:, None]
    return real[:, :, None] & real[:, None, :]


def _shapes_seen(task, calls):
    """What the hidden test's inputs vary, as a set of labels (read from the inputs themselves)."""
    seen = set()
    for args, kwargs in calls:
        if task.check == "check_self_attention":  # attend_new_token(x_new, keys, values, w_q, w_k, w_v)
            x_new, keys, values, w_q, w_k, _ = args
            seen |= {"single token"} if len(keys) == 1 else set()
            seen |= {"d_k != d_v"} if keys.shape[1] != values.shape[1] else set()
            seen |= {"d_in != d_k"} if w_q.shape[0] != w_q.shape[1] else set()
            all_k = np.vstack([keys, x_new @ w_k])
            top = np.abs(all_k @ (x_new @ w_q) / math.sqrt(keys.shape[1])).max()
            seen |= {"scores of 20 or more"} if top >= 20 else set()
            assert top < 100, "E4 promises scores below 100 (no overflow before lesson 06)"
        elif task.check == "check_stable_softmax":  # my_softmax(x, axis=-1, where=None)
            x, axis, where = args[0], kwargs.get("axis", -1), kwargs.get("where")
            seen |= {"single token"} if x.size == 1 else set()
            seen |= {"batch axes"} if x.ndim >= 3 else set()
            seen |= {"another axis"} if axis not in (-1, x.ndim - 1) else set()
            seen |= {"overflow"} if np.abs(x).max() >= 1e4 else set()
            if where is not None and not np.all(np.any(where, axis=axis)):
                seen.add("fully masked")
        elif task.check in ("check_masked_attention", "check_masked_backward"):
            # padded_attention(q, k, v, lengths) and padded_backward(q, k, v, d_out, lengths)
            q, k, v, lengths = args[:3] + args[-1:]
            seen |= {"single token"} if q.shape[1] == 1 else set()
            seen |= {"batch of one"} if q.shape[0] == 1 else set()
            seen |= {"batch axes"} if q.shape[0] > 1 else set()
            seen |= {"d_k != d_v"} if q.shape[-1] != v.shape[-1] else set()
            seen |= {"fully masked"} if np.any(lengths == 0) else set()
            allowed = np.where(_padded(lengths, q.shape[1]), _scores(q, k), 0)
            seen |= {"overflow"} if np.abs(allowed).max() >= 1e4 else set()
        elif task.check == "check_attention_backward":  # self_attention_backward(x, w_q, w_k, w_v, d_out)
            x, w_q, w_k, w_v, _ = args
            seen |= {"single token"} if len(x) == 1 else set()
            seen |= {"d_k != d_v"} if w_k.shape[1] != w_v.shape[1] else set()
            seen |= {"d_in != d_k"} if w_q.shape[0] != w_q.shape[1] else set()
            seen |= {"overflow"} if np.abs(_scores(x @ w_q, x @ w_k)).max() >= 1e4 else set()
        elif task.check == "check_online_softmax_merge":  # merge_all(m, ell, o), (k, n, 1), (k, n, 1), (k, n, d_v)
            m, _, o = args
            seen |= {"single block"} if len(m) == 1 else set()
            seen |= {"40 blocks"} if len(m) >= 40 else set()
            seen |= {"single token"} if m.shape[1] == 1 else set()
            seen |= {"d_v = 1"} if o.shape[-1] == 1 else set()
            seen |= {"overflow"} if np.abs(m[np.isfinite(m)]).max() >= 1e4 else set()
            seen |= {"fully masked"} if np.any(np.all(np.isneginf(m), axis=0)) else set()
    return seen


VARIES = {
    "check_self_attention": {"single token", "d_k != d_v", "d_in != d_k", "scores of 20 or more"},
    "check_stable_softmax": {"single token", "batch axes", "another axis", "overflow", "fully masked"},
    "check_masked_attention": {"single token", "batch of one", "batch axes", "d_k != d_v", "fully masked",
                               "overflow"},
    "check_attention_backward": {"single token", "d_k != d_v", "d_in != d_k", "overflow"},
    "check_masked_backward": {"single token", "batch of one", "batch axes", "d_k != d_v", "fully masked",
                              "overflow"},
    "check_online_softmax_merge": {"single block", "40 blocks", "single token", "d_v = 1", "overflow",
                                   "fully masked"},
}


@pytest.mark.parametrize("task", HIDDEN, ids=lambda t: t.hidden)
def test_hidden_tests_vary_shapes_not_only_seeds(task):
    """Read from the inputs the hidden test passes: other shapes, a single token, batch axes where the
    task has them, logits of 1e4 from E5 on (below 100 in E4, before the stable softmax is taught),
    fully masked rows."""
    spy, calls = _spy(_solved(task.notebook)[_answer_name(task)])
    with np.errstate(all="ignore"):
        _hidden(task)(spy)
    assert VARIES[task.check] <= _shapes_seen(task, calls), (task.hidden, _shapes_seen(task, calls))


def _float32(source):
    """A solution computed in float32: its inputs cast to float32 instead of float64."""
    return source.replace("dtype=float)", "dtype=np.float32)")


@pytest.mark.parametrize("task", HIDDEN, ids=lambda t: t.hidden)
def test_hidden_tests_accept_a_right_answer_in_float32(task):
    """float32 is held to float32's precision (issue 25 item 3), also by the hidden tests."""
    answer = _solved(task.notebook, _float32)[_answer_name(task)]
    if task.check in ("check_online_softmax_merge", "check_self_attention"):  # inputs cast by a wrapper
        right = answer

        def answer(*args):
            out = right(*(np.asarray(x, dtype=np.float32) for x in args))
            assert all(np.asarray(x).dtype == np.float32 for x in out)  # the cast took
            return out

    if task.check == "check_stable_softmax":
        assert answer(np.ones((2, 3))).dtype == np.float32  # the edit took
    assert _passes(_hidden(task), answer)


# Wrong answers, each a plausible mistake, that every hidden test must refuse.
def _softmax_rows(s, stable=True):
    """Softmax of the last axis; a row with nothing allowed (all -inf) gives zeros."""
    top = s.max(axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(top), top, 0.0)) if stable else np.exp(s)
    total = e.sum(axis=-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def _decode(x_new, keys, values, w_q, w_k, w_v, *, own=True, scale=None, grow=True, first=False):
    q, k, v = x_new @ w_q, x_new @ w_k, x_new @ w_v
    all_k = np.vstack([k, keys] if first else [keys, k])
    all_v = np.vstack([v, values] if first else [values, v])
    use_k, use_v = (all_k, all_v) if own else (keys, values)
    w = _softmax_rows(use_k @ q / math.sqrt(keys.shape[1] if scale is None else scale))
    return (w @ use_v, all_k, all_v) if grow else (w @ use_v, keys, values)


def _my_softmax(x, axis=-1, where=None, *, stable=True, use_axis=True, use_where=True, max_over_all=False):
    x = np.asarray(x, dtype=float)
    axis = axis if use_axis else -1
    allowed = np.ones(x.shape, bool) if where is None or not use_where else where
    s = np.where(allowed, x, -np.inf)
    top = np.max(x if max_over_all else s, axis=axis, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(top), top, 0.0)) if stable else np.exp(s)
    total = e.sum(axis=axis, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def _padded_attention(q, k, v, lengths, *, keys_only=False, ignore=False, stable=True, fill=-np.inf):
    real = np.arange(q.shape[1]) < np.asarray(lengths)[:, None]
    allowed = np.broadcast_to(real[:, None, :], (len(q),) + (q.shape[1],) * 2) if keys_only else _padded(
        lengths, q.shape[1])
    s = _scores(q, k) if ignore else np.where(allowed, _scores(q, k), fill)
    return _softmax_rows(s, stable) @ v


def _qkv_backward(q, k, v, d_out, allowed=None, *, scale=True, stable=True):
    c = 1 / math.sqrt(q.shape[-1]) if scale else 1.0
    s = _scores(q, k) * math.sqrt(q.shape[-1]) * c
    p = _softmax_rows(s if allowed is None else np.where(allowed, s, -np.inf), stable)
    d_p = d_out @ np.swapaxes(v, -1, -2)
    d_s = p * (d_p - (p * d_p).sum(axis=-1, keepdims=True))
    return c * d_s @ k, c * np.swapaxes(d_s, -1, -2) @ q, np.swapaxes(p, -1, -2) @ d_out


def _self_backward(x, w_q, w_k, w_v, d_out, *, routes=(0, 1, 2), transposed=False, **kw):
    d_q, d_k, d_v = _qkv_backward(x @ w_q, x @ w_k, x @ w_v, d_out, **kw)
    d_x = sum(g @ w.T for i, (g, w) in enumerate(((d_q, w_q), (d_k, w_k), (d_v, w_v))) if i in routes)
    grads = (d_q, d_k, d_v)
    return (d_x,) + tuple(g.T @ x if transposed else x.T @ g for g in grads)


def _padded_backward(q, k, v, d_out, lengths, *, which="both", **kw):
    real = np.arange(q.shape[1]) < np.asarray(lengths)[:, None]
    shape = (len(q),) + (q.shape[1],) * 2
    allowed = {"both": _padded(lengths, q.shape[1]), "keys": np.broadcast_to(real[:, None, :], shape),
               "queries": np.broadcast_to(real[:, :, None], shape), "none": None}[which]
    return _qkv_backward(q, k, v, d_out, allowed, **kw)


def _merge_all(m, ell, o, *, rescale=True, guard=True, top_from=None, blocks=None):
    m, ell, o = (x[:blocks] for x in (m, ell, o))
    top = m.max(axis=0) if top_from is None else m[top_from]
    if not rescale:
        return top, ell.sum(axis=0), o.sum(axis=0)
    factor = np.exp(m - (np.where(np.isfinite(top), top, 0.0) if guard else top))
    return top, (ell * factor).sum(axis=0), (o * factor).sum(axis=0)


WRONG = {
    "hidden_attend_new_token": [
        lambda *a: _decode(*a, own=False),                       # forgot its own key
        lambda *a: _decode(*a, scale=1.0),                       # unscaled
        lambda *a: _decode(*a, scale=a[0].shape[0]),             # scaled by sqrt(d_in)
        lambda *a: _decode(*a, grow=False),                      # the cache not grown
        lambda *a: _decode(*a, first=True),                      # the new token first in the cache
    ],
    "hidden_my_softmax": [
        lambda x, axis=-1, where=None: _my_softmax(x, axis, where, stable=False),
        lambda x, axis=-1, where=None: _my_softmax(x, axis, where, use_axis=False),
        lambda x, axis=-1, where=None: _my_softmax(x, axis, where, use_where=False),
        lambda x, axis=-1, where=None: _my_softmax(x, axis, where, max_over_all=True),
    ],
    "hidden_padded_attention": [
        lambda *a: _padded_attention(*a, keys_only=True),       # padding queries not zero
        lambda *a: _padded_attention(*a, ignore=True),          # lengths ignored
        lambda *a: _padded_attention(*a, stable=False),         # no max subtraction
        lambda *a: _padded_attention(*a, fill=-1e9),            # an empty sentence: uniform weights
    ],
    "hidden_self_attention_backward": [
        lambda *a: _self_backward(*a, routes=(0,)),             # only the route through Q
        lambda *a: _self_backward(*a, routes=(0, 1)),           # the value route missing
        lambda *a: _self_backward(*a, transposed=True),         # dW transposed
        lambda *a: _self_backward(*a, scale=False),
        lambda *a: _self_backward(*a, stable=False),
        lambda x, w_q, w_k, w_v, d: _qkv_backward(x @ w_q, x @ w_k, x @ w_v, d),   # notebook 09's three
    ],
    "hidden_padded_backward": [
        lambda *a: _padded_backward(*a, which="none"),          # lengths ignored
        lambda *a: _padded_backward(*a, which="keys"),          # padding queries pass gradient
        lambda *a: _padded_backward(*a, which="queries"),       # padding keys get gradient
        lambda *a: _padded_backward(*a, stable=False),
        lambda *a: _padded_backward(*a, scale=False),
    ],
    "hidden_merge_all": [
        lambda *a: _merge_all(*a, rescale=False),
        lambda *a: _merge_all(*a, guard=False),                 # NaN for a row every block missed
        lambda *a: _merge_all(*a, top_from=0),                  # the first block's maximum
        lambda *a: _merge_all(*a, blocks=2),                    # only two blocks
    ],
}


@pytest.mark.parametrize("task", HIDDEN, ids=lambda t: t.hidden)
def test_hidden_tests_refuse_wrong_answers(task):
    hidden = _hidden(task)
    assert _passes(hidden, lambda *a, **kw: {  # the helpers above, without a mistake, are right
        "hidden_attend_new_token": _decode, "hidden_my_softmax": _my_softmax,
        "hidden_padded_attention": _padded_attention, "hidden_self_attention_backward": _self_backward,
        "hidden_padded_backward": _padded_backward, "hidden_merge_all": _merge_all}[task.hidden](*a, **kw))
    for i, wrong in enumerate(WRONG[task.hidden]):
        assert not _passes(hidden, wrong), (task.hidden, i)


def _corpus():
    sys.path.insert(0, str(ROOT / "tests"))
    import test_checks_corpus_e4_e7 as corpus

    return corpus


def _threads_or_exec(check, answer):
    """True for an answer the visible check refuses for running in a thread or through exec/eval: the
    visible check in the same grading cell refuses it; the hidden tests' profiling hook does not reach a
    thread already running (Python 3.11 has no threading.setprofile_all_threads), so a kernel called
    there is left to the visible check."""
    result = check(answer)
    if result.mistake != "reaches_library":
        return False
    reasons = result.message.split(". The reason:")[0]
    return "thread" in reasons.lower() or "exec()" in reasons or "eval()" in reasons


def test_the_corpus_right_answers_pass_the_hidden_tests_and_its_wrong_ones_fail():
    """tests/test_checks_corpus_e4_e7.py's answers, graded as the grading cell does: every right answer
    (loops, einsum, float32, a callable object, (output, weights) as notebook 05 returns, ...) passes
    the hidden tests, and every wrong one fails them, those that reach the library included: the
    hidden tests run with the kernels as traps, so they do not rest on the visible check. Left to the
    visible check: an answer run in a thread (a pool's threads run before the hook) or through exec."""
    corpus = _corpus()
    hidden = {t.check: _hidden(t) for t in HIDDEN}
    right = [(check.__name__, answer) for check, answer in corpus.RIGHT
             if getattr(check, "__name__", "") in hidden and callable(answer)]
    wrong = [(check.__name__, answer, mistake) for check, answer, mistake in corpus.WRONG
             if getattr(check, "__name__", "") in hidden and callable(answer) and not _threads_or_exec(check, answer)]
    assert len(right) >= 30 and len(wrong) >= 100, (len(right), len(wrong))
    assert [name for name, answer in right if not _passes(hidden[name], answer)] == []
    assert [(name, mistake) for name, answer, mistake in wrong if _passes(hidden[name], answer)] == []


def _lookup_table(answer):
    """A function that records ``answer``'s outputs on the inputs it sees, then only replays them."""
    table = []

    def key(args, kwargs):
        return [np.array(a, copy=True) for a in list(args) + [kwargs.get(n) for n in sorted(kwargs)]], sorted(kwargs)

    def record(*args, **kwargs):
        out = answer(*args, **kwargs)
        table.append((key(args, kwargs), out))
        return out

    def replay(*args, **kwargs):
        inputs, names = key(args, kwargs)
        for (seen, seen_names), out in table:
            if seen_names == names and len(seen) == len(inputs) and all(
                    np.shape(a) == np.shape(b) and np.array_equal(a, b, equal_nan=True)
                    for a, b in zip(seen, inputs)):
                return out
        return table[-1][1]  # an unseen input: the last answer it knows

    return record, replay


@pytest.mark.parametrize("task", HIDDEN, ids=lambda t: t.hidden)
def test_a_lookup_table_of_the_visible_probes_fails_the_hidden_tests(task):
    """Fill a table from the visible check's own probes; the table passes it, the hidden test refuses it."""
    from helpers import checks

    answer = _solved(task.notebook)[_answer_name(task)]
    record, replay = _lookup_table(answer)
    check = getattr(checks, task.check)
    with np.errstate(all="ignore"):
        assert check(record), "the worked solution passes its visible check"
        visible = bool(check(replay))
    assert not _passes(_hidden(task), replay), task.hidden
    # The visible check alone is fooled when it probes the same inputs on every run; the hidden tests are
    # what the grade rests on.
    print(task.check, "visible check fooled by the table:", visible)


def test_the_model_answers_stay_off_the_site():
    """instructor/exam_answers.md answers every exam question of docs/teaching.md, and the site publishes none of it.

    The site publishes no instructor file but the worked solutions (``make site`` after a deadline):
    never the model answers, the points or the hidden tests.
    """
    sys.path.insert(0, str(ROOT / "tools" / "site"))
    import build as site_build  # tools/site/build.py: what the book publishes, solutions included

    pages = site_build.documents() + site_build.lessons() + site_build.exercises() + site_build.solutions()
    instructor = [p.relative_to(course.INSTRUCTOR) for p in pages if "instructor" in p.relative_to(ROOT).parts]
    assert all(p.parts[0] == "solutions" and p.suffix == ".ipynb" for p in instructor), instructor
    plan = (ROOT / "docs" / "teaching.md").read_text(encoding="utf-8")
    answers = (course.INSTRUCTOR / "exam_answers.md").read_text(encoding="utf-8")
    lectures = re.findall(r"^## (Lecture \d+)[^\n]*\n(.*?)(?=^## )", plan, flags=re.M | re.S)
    assert len(lectures) == 12
    for lecture, body in lectures:
        questions = re.findall(r"^(\d)\. ", body.split("**Discussion / exam questions.**", 1)[1].split("\n\n", 1)[0],
                               flags=re.M)
        section = answers.split(f"## {lecture}", 1)[1].split("\n## ", 1)[0]
        assert questions == re.findall(r"^(\d)\. \*\*", section, flags=re.M), lecture
