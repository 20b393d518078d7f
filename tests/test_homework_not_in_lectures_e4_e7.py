"""Lectures teach, homework tests (issue 25, item 4), for the graded tasks of E4-E7.

No graded task may be solved by what a lecture notebook already holds. Two tests per task:

(a) Every lecture notebook 01-16 is executed, code cell by code cell, in a fresh namespace in
    a subprocess (MPLBACKEND=Agg, IPython's display stubbed out). Everything it leaves in its
    namespace is then fed to every graded check of E4-E7: each function and class to the
    function checks, each array and each row of a 2-D array to the row checks, pairs of
    numbers to the variance check, shapes to the shapes check. None may pass.
(b) The answer each task asks for, rounded as the task rounds it (or, for a function, its
    output on the task's first case, at the print precision of 4 decimals), appears in no
    stored text output of the lecture notebooks.

The executed namespaces hold every lecture function (notebook 06's ``stable_softmax``, 09's
``backward_by_hand``, 11's ``flash1_forward``, ...): a task that a lecture cell solves verbatim
fails (a). A task that a lecture cell solves after a short edit is caught only when the edited
value itself is a row of an array the lecture keeps (a) or is printed (b); the redesigns of the
tasks (see the checks' docstrings) are what keep them apart, and these tests guard them.
"""

from __future__ import annotations

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

from helpers import attention, examples
from helpers.checks import e4_journey, e5_definition, e6_backward

ROOT = Path(__file__).resolve().parent.parent
LECTURES = sorted(ROOT.glob("notebooks/[01][0-9]-*.ipynb"))
LECTURES = [p for p in LECTURES if not p.name.startswith("00-")]

# Every graded check of E4-E7, with what it is fed: "function" (callables), "row" (arrays and
# the rows of 2-D arrays), "pair" (two numbers), "shapes" (three shapes).
GRADED = {
    "check_journey_scores_row": ("E4 ex. 1", "row"),
    "check_journey_weights_row": ("E4 ex. 2", "row"),
    "check_self_attention": ("E4 ex. 3", "function"),
    "check_journey_variance_d100": ("E4 ex. 4", "pair"),
    "check_definition_shapes": ("E5 ex. 1", "shapes"),
    "check_stable_softmax": ("E5 ex. 2", "function"),
    "check_masked_attention": ("E5 ex. 3", "function"),
    "check_attention_backward": ("E6 ex. 1", "function"),
    "check_masked_backward": ("E6 ex. 2", "function"),
    "check_online_softmax_merge": ("E7 ex. 1", "function"),
}

# Run in a subprocess per half of the lecture notebooks (two at once keep the test near 30-40 s
# of wall time). It prints one JSON object: what passed, and how much was fed to each check.
RUNNER = textwrap.dedent(
    r'''
    import json, os, signal, sys, types, warnings
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import IPython.display
    import numpy as np
    from helpers import checks

    def _quiet(*args, **kwargs):
        return None

    IPython.display.display = _quiet          # the lectures' display() calls show nothing here
    IPython.display.clear_output = _quiet
    plt.show = _quiet
    GRADED = json.loads(sys.argv[1])
    PATHS = sys.argv[2:]

    class TooSlow(Exception):
        pass

    def _alarm(signum, frame):
        raise TooSlow("more than 3 s")

    signal.signal(signal.SIGALRM, _alarm)

    def run_check(name, *args):
        signal.setitimer(signal.ITIMER_REAL, 3.0)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = getattr(checks, name)(*args)
            return getattr(result, "status", None) == "correct"
        except TooSlow:
            return False
        except Exception:  # a check that raises has not passed
            return False
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)

    def candidates(ns):
        functions, arrays, numbers = {}, {}, {}
        for key, value in ns.items():
            if key.startswith("_") or isinstance(value, types.ModuleType):
                continue
            if callable(value) and not isinstance(value, np.ndarray):
                functions[key] = value
            elif isinstance(value, np.ndarray) and value.dtype.kind in "fiub" and value.size <= 200_000:
                arrays[key] = np.asarray(value, dtype=float)
            elif isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
                numbers[key] = float(value)
        return functions, arrays, numbers

    passed, fed, errors = [], {}, []
    for path in PATHS:
        nb = json.load(open(path, encoding="utf-8"))
        ns = {"__name__": "__main__"}
        for cell in nb["cells"]:
            if cell["cell_type"] != "code":
                continue
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    exec(compile("".join(cell["source"]), path + ":" + str(cell.get("id")), "exec"), ns)
            except Exception as exc:
                errors.append([path, cell.get("id"), type(exc).__name__])
            plt.close("all")
        functions, arrays, numbers = candidates(ns)
        rows = dict(arrays)
        for key, a in arrays.items():
            if a.ndim == 2 and a.shape[0] <= 64:
                rows.update({f"{key}[{i}]": a[i] for i in range(a.shape[0])})
        pairs = {f"({a}, {b})": (x, y) for a, x in numbers.items() for b, y in numbers.items()}
        for key, a in arrays.items():
            for key2, b in arrays.items():
                if a.ndim == b.ndim == 1 and a.shape == b.shape and a.size <= 32:
                    pairs.update({f"({key}[{i}], {key2}[{i}])": (a[i], b[i]) for i in range(a.size)})
        shapes = sorted({a.shape for a in arrays.values() if 2 <= a.ndim <= 5})[:60]
        triples = {f"{s}, {s}, {t}": (s, s, t) for s in shapes for t in shapes}
        feeds = {"function": {k: (f,) for k, f in functions.items()},
                 "row": {k: (r,) for k, r in rows.items()},
                 "pair": pairs, "shapes": triples}
        name = os.path.basename(path)
        fed[name] = {kind: len(items) for kind, items in feeds.items()}
        fed[name]["names"] = sorted(functions)
        for check, kind in GRADED.items():
            for key, args in feeds[kind].items():
                if run_check(check, *args):
                    passed.append([name, key, check])
    print(json.dumps({"passed": passed, "fed": fed, "errors": errors}))
    '''
)


def _run(paths):
    env = dict(os.environ, MPLBACKEND="Agg", OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    kinds = json.dumps({check: kind for check, (_, kind) in GRADED.items()})
    return subprocess.Popen([sys.executable, "-c", RUNNER, kinds, *map(str, paths)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.fixture(scope="module")
def fed_to_checks():
    """Run the lecture notebooks in two subprocesses at once and collect what passed."""
    halves = [LECTURES[0::2], LECTURES[1::2]]
    procs = [_run(half) for half in halves]
    merged = {"passed": [], "fed": {}, "errors": []}
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-2000:]
        found = json.loads(out.strip().splitlines()[-1])
        merged["passed"] += found["passed"]
        merged["fed"].update(found["fed"])
        merged["errors"] += found["errors"]
    return merged


def test_every_lecture_ran_and_fed_the_checks(fed_to_checks):
    # The test is not vacuous: every lecture ran without an error, and each left functions and
    # arrays to feed the checks; the lecture functions that were the old answers are among them.
    assert fed_to_checks["errors"] == []
    assert sorted(fed_to_checks["fed"]) == [p.name for p in LECTURES]
    for name, counts in fed_to_checks["fed"].items():
        assert counts["function"] > 0 and counts["row"] > 0, (name, counts)
    names = {nb: set(counts["names"]) for nb, counts in fed_to_checks["fed"].items()}
    assert "stable_softmax" in names["06-definition-stability-and-cost.ipynb"]
    assert "masked_fill_attention" in names["05-definition-shapes-and-masks.ipynb"]
    assert "backward_by_hand" in names["09-gradients-by-hand.ipynb"]
    assert "backward_from_weights" in names["10-masks-cross-multihead.ipynb"]
    assert "flash1_forward" in names["11-memory-efficient-attention.ipynb"]
    assert "SelfAttention" in names["04-journey.ipynb"]


@pytest.mark.parametrize("check", sorted(GRADED))
def test_nothing_in_a_lecture_passes_a_graded_check(fed_to_checks, check):
    task = GRADED[check][0]
    passing = [(nb, key) for nb, key, name in fed_to_checks["passed"] if name == check]
    assert passing == [], f"{task} ({check}) is passed by lecture values: {passing[:5]}"


# ---------------------------------------------------------------------------
# (b) the answers, as the tasks round them, are printed by no lecture
# ---------------------------------------------------------------------------


def _numbers(text):
    return [float(t) for t in re.findall(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?", text)]


def _lecture_outputs():
    texts = []
    for path in LECTURES:
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            for out in cell.get("outputs", []):
                if out.output_type == "stream":
                    texts.append((path.name, out.text))
                elif out.output_type in ("execute_result", "display_data"):
                    texts.append((path.name, out.get("data", {}).get("text/plain", "")))
    return texts


def _contains(sequence, values, decimals):
    """Whether ``values``, each rounded to ``decimals``, appear one after another in ``sequence``."""
    want = [round(float(v), decimals) for v in values]
    got = [round(x, decimals) for x in sequence]
    return any(got[i:i + len(want)] == want for i in range(len(got) - len(want) + 1))


def _scores_row():
    ex, _, scores = e4_journey._journey()
    return scores[e4_journey._STARTS_ROW]


def _weights_row():
    return attention.softmax(_scores_row() / math.sqrt(2))


def _self_attention_first_case():
    _, (x, w_q, w_k, w_v) = e4_journey._self_attention_cases()[0]
    return attention.scaled_dot_product_attention(x @ w_q, x @ w_k, x @ w_v)[0].ravel()


def _variance_pair():
    d = examples.load_example("journey_variance_d100").d_k
    before = d * e4_journey.VAR_Q * e4_journey.VAR_K
    return np.array([before, before / d])


def _softmax_first_case():
    _, x, axis, where = e5_definition._axis_where_probes()[0]
    return e5_definition._masked_reference(x, axis, where).ravel()


def _masked_first_case():
    _, q, k, v, lengths = e5_definition._masked_cases()[0]
    mask = e5_definition._pair_mask(lengths, q.shape[-2])
    return attention.scaled_dot_product_attention(q, k, v, mask)[0].ravel()


def _masked_backward_first_case():
    _, q, k, v, d_out, lengths = e6_backward._backward_cases(True)[0]
    mask = e6_backward._pair_mask(lengths, q.shape[-2])
    return attention.attention_backward(q, k, v, d_out, mask)[0].ravel()


def _merge_first_case():
    _, _, _, s, v = e6_backward._merge_cases()[0]
    return (attention.softmax(s) @ v).ravel()


def _self_backward_first_case():
    _, x, w_q, w_k, w_v, d_out = e6_backward._self_cases()[0]
    d_q, d_k, d_v = attention.attention_backward(x @ w_q, x @ w_k, x @ w_v, d_out)
    return (d_q @ w_q.T + d_k @ w_k.T + d_v @ w_v.T).ravel()


# (task, the answer, how many decimals the task asks for or prints)
ANSWERS = {
    "check_journey_scores_row": (_scores_row, (4, 2)),
    "check_journey_weights_row": (_weights_row, (4,)),
    "check_self_attention": (_self_attention_first_case, (4,)),
    "check_journey_variance_d100": (_variance_pair, (4,)),
    "check_stable_softmax": (_softmax_first_case, (4,)),
    "check_masked_attention": (_masked_first_case, (4,)),
    "check_attention_backward": (_self_backward_first_case, (4,)),
    "check_masked_backward": (_masked_backward_first_case, (4,)),
    "check_online_softmax_merge": (_merge_first_case, (4,)),
}


def test_every_graded_task_has_an_answer_to_look_for():
    assert set(ANSWERS) | {"check_definition_shapes"} == set(GRADED)


@pytest.mark.parametrize("check", sorted(ANSWERS))
def test_no_lecture_prints_the_answer(check):
    answer, roundings = ANSWERS[check]
    values = np.asarray(answer(), dtype=float).ravel()
    assert values.size >= 2
    for name, text in _lecture_outputs():
        numbers = _numbers(text)
        for decimals in roundings:
            assert not _contains(numbers, values, decimals), (
                f"{GRADED[check][0]}: the answer {np.round(values, decimals)} is printed by {name}")


def test_no_lecture_prints_the_shapes_of_e5_exercise_1():
    case = e5_definition.SHAPES_CASE
    lead = f"({case['batch']}, {case['heads']}, {case['n']}"
    want = [f"{lead}, {case['m']})", f"{lead}, {case['d_v']})"]
    for name, text in _lecture_outputs():
        assert not all(w in text for w in want), (name, text[:200])
