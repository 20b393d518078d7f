"""No solver in the student package: the checks of derived answers hold digests, not values.

The answers of E1 ex. 1 (v2), ex. 3 (n), ex. 4a (margins), ex. 5 and E3 ex. 1 (temperatures), E3
ex. 2-3 (variances, stds, bounds) and E4 ex. 4 (variances) take a derivation, not one kernel
call. Their checks hold salted digests (helpers/checks/_sealed.py), written by the answer key
(instructor/answer_key.py, which does not ship). Here, with the values that answer key computes (not typed in):

- the table is the answer key's output, and holds none of the values;
- no callable of the shipped check modules, called with the inputs a student would try (the
  tasks' targets, the examples' score rows and matrices), returns or prints an answer;
- replacing the module-level hooks (``record`` and ``record_sealed``, in every module that
  holds them) with a function that keeps its arguments reveals no answer;
- with every module-level function of the check modules replaced by a spy, no array, number or
  shape reaches the hooks, what they call, or what a check calls only while recording, in any check
  (the kernel-computed answers too: a check works out its clashes inline and passes names);
- the sealed checks still tell right from wrong and name their mistakes (the corpus tests
  cover every right and wrong answer; a few are repeated here against the answer key).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import inspect
import io
import json
import math
import os
import pkgutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import helpers.checks as checks
from helpers import examples

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "instructor"))

import answer_key  # noqa: E402

MODULES = [importlib.import_module(f"helpers.checks.{m.name}") for m in pkgutil.iter_modules(checks.__path__)]


def _answers():
    """``{task: [values]}``: the right answers of the sealed tasks, from the answer key."""
    t3, _ = answer_key.temperature_candidates(0.9)
    t5, _ = answer_key.entropy_candidates(1.5)
    margins, _ = answer_key.margin_candidates()
    v2, _ = answer_key.exercise_1_candidates()
    n3, _, _ = answer_key.flops_candidates()

    def rights(parts):
        return [right for right, _ in parts.values()]

    return {"E3 ex. 1": [t3], "E1 ex. 5": [t5], "E1 ex. 4a": [float(m) for m in margins if abs(m) > 0.05],
            "E1 ex. 1": [float(x) for x in v2], "E1 ex. 3": [float(n3)],
            "E3 ex. 2": rights(answer_key.why_scale_candidates()), "E3 ex. 3": rights(answer_key.init_std_candidates()),
            # E4's variance after scaling, 6, is left out: a count of tokens or rows is 6 as well
            "E4 ex. 4": [answer_key.journey_variance_candidates()["before"][0]]}


ANSWERS = _answers()


def _printed(x, decimals):
    """The task whose answer prints as ``x`` with ``decimals`` decimals (3 or more), or None."""
    for task, values in ANSWERS.items():
        if decimals >= 3 and any(abs(x - v) <= 0.5 * 10.0**-decimals + 1e-12 for v in values):
            return task
    return None


def _holds_answer(obj, depth=0, seen=None):
    """The task whose answer ``obj`` holds (a number, in an array, a container or a text), or None."""
    seen = set() if seen is None else seen
    if depth > 6 or id(obj) in seen:
        return None
    if isinstance(obj, (dict, list, tuple, set, frozenset)) or hasattr(obj, "__dict__"):
        seen.add(id(obj))
    if isinstance(obj, (bool, np.bool_)):
        return None
    if isinstance(obj, (int, float, np.integer, np.floating)):
        x = float(obj)
        for task, values in ANSWERS.items():
            if any(math.isclose(x, v, rel_tol=1e-9) for v in values):
                return task
        return None
    if isinstance(obj, np.ndarray) and obj.dtype.kind in "iuf":
        for x in obj.reshape(-1)[:4096]:
            task = _holds_answer(float(x), depth + 1, seen)
            if task:
                return task
        return None
    if isinstance(obj, str):
        for token in obj.replace(",", " ").replace("(", " ").replace(")", " ").replace("[", " ").split():
            try:
                x = float(token.strip(".;:"))
            except ValueError:
                continue
            task = _printed(x, len(token.strip(".;:").partition(".")[2]))
            if task:
                return task
        return None
    if isinstance(obj, dict):
        return next((t for v in obj.values() if (t := _holds_answer(v, depth + 1, seen))), None)
    if isinstance(obj, (list, tuple, set, frozenset)):
        return next((t for v in obj if (t := _holds_answer(v, depth + 1, seen))), None)
    if hasattr(obj, "__dict__") and not inspect.ismodule(obj) and not callable(obj):
        return _holds_answer(vars(obj), depth + 1, seen)
    return None


def test_the_search_finds_an_answer_where_one_is():
    t3 = ANSWERS["E3 ex. 1"][0]
    assert _holds_answer(t3) == "E3 ex. 1"
    assert _holds_answer((1.0, [("x", np.array([0.0, t3]))])) == "E3 ex. 1"
    assert _holds_answer(f"T = {t3:.4f}") == "E3 ex. 1"
    assert _holds_answer({"a": ANSWERS["E1 ex. 5"][0]}) == "E1 ex. 5"
    assert _holds_answer([0.9, 1.5, 2.0, "T = 0.9"]) is None


def _inputs():
    """What a student would hand a private function of the checks: the targets, rows and matrices."""
    journey, cat = examples.load_example("journey"), examples.load_example("cat_sat")
    p = journey.inputs @ journey.w_q
    matrices = [journey.q @ journey.k.T, p @ p.T, cat.q @ cat.k.T]
    rows = [m[i] for m in matrices for i in range(m.shape[0])] + [m[:, i] for m in matrices for i in range(2)]
    scalars = [0.9, 1.5, 1.5 * math.log(2), 0.5]
    args = [()] + [(s,) for s in scalars] + [(m,) for m in matrices]
    args += [(r, s) for r in rows for s in scalars[:3]]
    return args


def _own_functions():
    for module in MODULES:
        for name, fn in vars(module).items():
            if inspect.isfunction(fn) and fn.__module__ == module.__name__:
                yield module.__name__, name, fn


def _scan():
    """Every own function of the check modules, called on every input; the ones that give an answer."""
    found = []
    inputs = _inputs()
    kernels = {n: m for n, m in sys.modules.items() if n.startswith("helpers.attention") and m is not None}
    saved = {n: dict(vars(m)) for n, m in kernels.items()}
    for module, name, fn in _own_functions():
        for args in inputs:
            for n, m in kernels.items():  # a function called here may have replaced the kernels
                vars(m).update(saved[n])
            sys.setprofile(None)
            threading.setprofile(None)
            out = io.StringIO()
            try:
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                    value = fn(*args)
            except Exception:  # noqa: BLE001 - a function that does not take these inputs
                continue
            task = _holds_answer(value) or _holds_answer(out.getvalue())
            if task:
                found.append(f"{module}.{name}{tuple(type(a).__name__ for a in args)} -> {task}")
                break
    return found


def test_no_callable_of_the_shipped_checks_returns_or_prints_an_answer():
    # in a process of its own: a private function called on these inputs may replace the kernels
    run = subprocess.run([sys.executable, __file__], capture_output=True, text=True, timeout=600,
                         env={**os.environ, "OPENBLAS_NUM_THREADS": "1", "MPLBACKEND": "Agg", "PYTHONPATH": str(ROOT)})
    assert run.returncode == 0, run.stderr[-3000:]
    found = json.loads(run.stdout.strip().splitlines()[-1])
    assert found == [], found


def test_the_table_is_the_answer_keys_and_holds_no_value():
    from helpers.checks import _answer_table

    text = Path(_answer_table.__file__).read_text(encoding="utf-8")
    assert text == answer_key.text(), "run python instructor/answer_key.py --write"
    assert _holds_answer(_answer_table.TABLE) is None
    for values in ANSWERS.values():
        for v in values:
            assert f"{v:.3f}" not in text and f"{v:.4f}" not in text


# The right answers, a named mistake and a junk answer for each sealed check.
def _calls():
    t3, m3 = answer_key.temperature_candidates(0.9)
    t5, m5 = answer_key.entropy_candidates(1.5)
    margins, mm = answer_key.margin_candidates()
    tokens = list(examples.load_example("journey").tokens)
    fav = [t for t, m in zip(tokens, margins) if m >= 0]
    others = [t for t in tokens if t not in fav]
    return [
        (checks.check_temperature_prediction, (t3,), "correct", None),
        (checks.check_temperature_prediction, (round(t3, 3),), "correct", None),
        (checks.check_temperature_prediction, (dict(m3)["log10"],), "incorrect", "log10"),
        (checks.check_temperature_prediction, (round(t3, 1),), "incorrect", "rounded"),
        (checks.check_temperature_prediction, (123.0,), "incorrect", "wrong_value"),
        (checks.check_attention_entropy, (t5,), "correct", None),
        (checks.check_attention_entropy, (dict(m5)["bits"],), "incorrect", "bits"),
        (checks.check_attention_entropy, (round(t5, 2),), "incorrect", "rounded"),
        (checks.check_attention_entropy, (123.0,), "incorrect", "wrong_value"),
        (checks.check_section_5_2_exercise_4, (margins,), "correct", None),
        (checks.check_section_5_2_exercise_4, (np.round(margins, 2), fav), "correct", None),
        (checks.check_section_5_2_exercise_4, (margins, others), "incorrect", None),
        (checks.check_section_5_2_exercise_4, (dict(mm)["reversed"],), "incorrect", "reversed"),
        (checks.check_section_5_2_exercise_4, (margins + 1,), "incorrect", "wrong_values"),
    ] + _more_calls()


def _more_calls():
    v2, m1 = answer_key.exercise_1_candidates()
    n3, root, m3 = answer_key.flops_candidates()
    why, init, var4 = (answer_key.why_scale_candidates(), answer_key.init_std_candidates(),
                       answer_key.journey_variance_candidates())
    w32 = [why[p][0] for p in ("variance", "std", "scaled")]
    w33 = [init[p][0] for p in ("he", "xavier")]
    w4 = [var4[p][0] for p in ("before", "after")]
    return [
        (checks.check_section_5_2_exercise_1, (v2,), "correct", None),
        (checks.check_section_5_2_exercise_1, (np.round(v2, 2),), "correct", None),
        (checks.check_section_5_2_exercise_1, (dict(m1)["forgot_v1"],), "incorrect", "forgot_v1"),
        (checks.check_section_5_2_exercise_1, (v2 + 1,), "incorrect", "wrong_values"),
        (checks.check_flops, (n3,), "correct", None),
        (checks.check_flops, (n3 + 1,), "incorrect", "over_budget"),
        (checks.check_flops, (root,), "incorrect", "not_whole"),
        (checks.check_flops, (dict(m3)["no_square_root"],), "incorrect", "no_square_root"),
        (checks.check_flops, (n3 - 1,), "incorrect", "wrong_value"),
        (checks.check_why_scale_512, tuple(w32), "correct", None),
        (checks.check_why_scale_512, (dict(why["variance"][1])["used_stds"],), "incorrect", "used_stds"),
        (checks.check_why_scale_512, (w32[0] * 1.05,), "incorrect", "simulation_estimate"),
        (checks.check_init_std, tuple(w33), "correct", None),
        (checks.check_init_std, (w33[0], dict(init["xavier"][1])["fan_out_only"]), "incorrect", "fan_out_only"),
        (checks.check_journey_variance_d100, tuple(w4), "correct", None),
        (checks.check_journey_variance_d100, (w4[0], dict(var4["after"][1])["not_scaled"]), "incorrect",
         "not_scaled"),
        (checks.check_journey_variance_d100, (w4[0] * 1.01,), "incorrect", "simulation_estimate"),
    ]


@pytest.mark.parametrize("i", range(len(_calls())))
def test_the_sealed_checks_tell_right_from_wrong(i):
    check, args, status, mistake = _calls()[i]
    result = check(*args)
    assert result.status == status, result
    if mistake:
        assert result.mistake == mistake, result


def test_replacing_the_hooks_reveals_no_answer(monkeypatch):
    kept = []

    def spy(*args, **kwargs):
        kept.append((args, kwargs))

    for module in MODULES:
        for hook in ("record", "record_sealed"):
            if hasattr(module, hook):
                monkeypatch.setattr(module, hook, spy)
    from helpers.checks import _core

    monkeypatch.setattr(_core, "_RECORDING", [])  # as if recording were on
    for check, args, _, _ in _calls():
        check(*args)
    assert kept, "no hook was called: the test does not reach them"
    leaks = {_holds_answer(a) for a in kept} - {None}
    assert leaks == set(), leaks


# Names whose spy would shift the frames a check reads (the caller's source, the library guard):
# they receive the student's answer, never an expected value.
_FRAME_READERS = {"_caller_source", "static_refusal", "_interactive_source", "_never_raise",
                  "_record_library_calls", "_call_student"}


def _every_check_with_right_and_wrong_answers():
    """``[(check, args)]``: every check of helpers.checks, with right and wrong answers."""
    import test_checks_distinct as distinct
    import test_checks_functions as functions

    from helpers import attention
    from helpers.checks import e5_definition

    size = e5_definition.SHAPES_CASE
    q = np.zeros((size["heads"], size["n"], size["d_k"]))
    k, v = np.zeros((size["batch"], 1, size["m"], size["d_k"])), np.zeros((size["batch"], 1, size["m"], size["d_v"]))
    out, weights = attention.scaled_dot_product_attention(q, k, v)
    shapes = (attention.attention_scores(q, k).shape, weights.shape, out.shape)
    backward = functions._backward("correct")

    def lifted(kind):  # E6 exercise 1: the gradients of x and of the projections
        fn = functions._backward(kind)

        def grads(x, w_q, w_k, w_v, d):
            d_q, d_k, d_v = fn(x @ w_q, x @ w_k, x @ w_v, d)
            return d_q @ w_q.T + d_k @ w_k.T + d_v @ w_v.T, x.T @ d_q, x.T @ d_k, x.T @ d_v

        return grads

    calls = [(getattr(checks, name), args) for name, args in distinct.ARGS.items()]
    calls += [(check, args) for check, args, _, _ in _calls()]
    calls += [(checks.check_definition_shapes, shapes), (checks.check_definition_shapes, shapes[::-1])]
    calls += [(checks.check_stable_softmax, (fn,)) for fn in functions.SOFTMAXES.values()]
    calls += [(checks.check_attention_backward, (lifted(kind),)) for kind in ("correct", "missing_scale")]
    calls += [(checks.check_masked_backward, (functions.padded_bw(backward),)),
              (checks.check_masked_backward, (functions.padded_bw(functions._backward("scale_squared")),))]
    calls += [(checks.check_online_softmax_merge, (functions._merge(kind),)) for kind in functions.MERGE_KINDS]
    calls += [(check, (lambda *a: np.zeros((2, 2)),)) for check in (checks.check_masked_attention,
                                                                    checks.check_self_attention)]
    return calls


def _recording_blocks():
    """``{(file, line)}``: the lines of the check modules that run only while recording."""
    import ast

    lines = set()
    for module in MODULES:
        for node in ast.walk(ast.parse(Path(module.__file__).read_text(encoding="utf-8"))):
            if isinstance(node, ast.If) and ast.unparse(node.test).endswith("_RECORDING is not None"):
                lines.update((module.__file__, n) for n in range(node.body[0].lineno, node.end_lineno + 1))
    return lines


def _names_only(obj, table_entries):
    """True when ``obj`` holds names alone: text, containers of text, or a sealed table entry."""
    if isinstance(obj, str) or any(obj is entry for entry in table_entries):
        return True
    if isinstance(obj, (list, tuple)):
        return all(_names_only(x, table_entries) for x in obj)
    if isinstance(obj, dict):
        return all(isinstance(key, str) and _names_only(x, table_entries) for key, x in obj.items())
    return False  # a number, an array, a shape of ints, None, any object


def test_no_expected_value_passes_through_a_replaceable_name_while_recording(monkeypatch):
    # Every module-level function of the check modules that a check may call is replaced by a spy
    # that keeps its arguments (and calls the original). While recording, the hooks (``record``,
    # ``record_sealed``, in every module that holds them), whatever they call, every helper called
    # from a check's ``if _RECORDING is not None:`` block and every helper that a check calls only
    # because recording is on receive names alone: no array, number or shape, so neither an
    # expected answer nor a mistake's value.
    from helpers.checks import _answer_table, _core

    table_entries = list(_answer_table.TABLE.values())
    calls, hook_depth, blocks = [], [0], _recording_blocks()
    assert blocks, "no recording block found: the test does not see where the checks record"

    def spy(where, name, fn):
        hook = name in ("record", "record_sealed", "_same")

        @functools.wraps(fn)
        def replaced(*args, **kwargs):
            caller = sys._getframe(1)
            from_block = (caller.f_code.co_filename, caller.f_lineno) in blocks
            calls.append((where, name, hook or hook_depth[0] > 0 or from_block, _core._RECORDING is not None,
                          args, kwargs))
            hook_depth[0] += hook
            try:
                return fn(*args, **kwargs)
            finally:
                hook_depth[0] -= hook

        return replaced

    for module in MODULES:
        for name, fn in list(vars(module).items()):
            if (inspect.isfunction(fn) and fn.__module__.startswith("helpers.checks")
                    and not name.startswith("check_") and name not in _FRAME_READERS):
                monkeypatch.setattr(module, name, spy(module.__name__, name, fn))
    leaks, hooked = [], set()
    for check, args in _every_check_with_right_and_wrong_answers():
        del calls[:]
        check(*args)
        unrecorded = {(where, name) for where, name, *_ in calls}
        del calls[:]
        with _core.recording():
            check(*args)
        for where, name, in_hook, on, a, kw in calls:
            hooked.update([check.__name__] if name in ("record", "record_sealed") else [])
            only_when_recording = (where, name) not in unrecorded
            if (in_hook or only_when_recording) and not _names_only([a, kw], table_entries):
                leaks.append(f"{check.__name__}: {where}.{name}{tuple(type(x).__name__ for x in a)}")
    assert leaks == [], sorted(set(leaks))
    # the three function checks below compare probes by their mistakes' names and record nothing
    missed = {name for name in checks.__all__ if name.startswith("check_")} - hooked
    assert missed == {"check_stable_softmax", "check_masked_attention", "check_self_attention"}, missed


if __name__ == "__main__":
    print(json.dumps(_scan()))
