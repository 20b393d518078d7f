"""The static check of graded code, and the shared pieces of helpers.checks._core.

:func:`helpers.checks._core.static_refusal` reads a student's function (its bytecode, the
globals, closures, defaults, class and attributes it reaches) and the notebook cell that called
the check, and refuses, before running anything, an answer that reaches helpers.attention
(public or private names), runs a recompiled copy of it, calls exec/eval/compile or uses
threads. Every check that takes code gets it through the ``_never_raise`` wrapper. Also here:
one grammar for the messages ("have" for plurals) and the named messages for raw NumPy errors.
"""

from __future__ import annotations

import functools
import linecache
import math
import sys
import threading
import types

import nbformat
import numpy as np
import pytest
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook

import helpers
import helpers.attention
from helpers.attention import _validate
from helpers.attention import softmax as imported_softmax
from helpers.checks import _core, check_stable_softmax
from helpers.checks._core import LIBRARY_REFUSAL, _match, _plural, _verb, static_refusal


def good(x, axis=-1, where=None):
    """E5's task: a stable softmax along ``axis`` over the entries where ``where`` is True."""
    s = np.asarray(x, float) if where is None else np.where(where, x, -np.inf)
    top = np.max(s, axis=axis, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(top), top, 0.0))
    total = e.sum(axis=axis, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def helper_level_3(x):
    return helpers.attention.softmax(x)


def helper_level_2(x):
    return helper_level_3(x)


def helper_clean(x):
    return good(x) * 1.0


class Clean:
    def __init__(self):
        self.axis = -1

    def __call__(self, x):
        return good(x)


class Dirty:
    def __init__(self):
        self.kernel = imported_softmax

    def __call__(self, x):
        return self.kernel(x)


def _recompiled_softmax():
    import inspect

    namespace = {"__name__": "copy", "__package__": "helpers.attention"}
    exec(compile(inspect.getsource(helpers.attention.core), "copy.py", "exec"), namespace)  # noqa: S102
    return namespace["softmax"]


def _function_type_copy():
    fn = helpers.attention.core.softmax
    return types.FunctionType(fn.__code__, fn.__globals__, "my_softmax", fn.__defaults__)


REFUSED = {
    "module attribute": lambda x: helpers.attention.softmax(x),
    "imported public name": lambda x: imported_softmax(x),
    "private name": lambda x: _validate._real_array(x, "x") * 0 + good(x),
    "private module function": lambda x: helpers.attention.core._check_softmax_axis(-1, x.shape) or good(x),
    "submodule reached from helpers": lambda x: helpers.attention.core.softmax(x),
    "import inside the function": lambda x: __import__("helpers.attention").attention.softmax(x),
    "recompiled copy": _recompiled_softmax(),
    "FunctionType copy": _function_type_copy(),
    "helper two levels down": lambda x: helper_level_2(x),
    "closure": (lambda k: (lambda x: k(x)))(imported_softmax),
    "default argument": lambda x, k=imported_softmax: k(x),
    "partial": functools.partial(imported_softmax, axis=-1),
    "callable object holding a kernel": Dirty(),
    "class holding a kernel": Dirty,
    "exec": lambda x: exec("y = 1") or good(x),
    "eval": lambda x: eval("good(x)"),  # noqa: S307
    "compile": lambda x: compile("1", "s", "eval") and good(x),
    "module name in a string": lambda x: sys.modules["helpers.attention"].softmax(x),
    "importlib": lambda x: __import__("importlib").import_module("helpers.attention").softmax(x),
    "thread": lambda x: threading.Thread(target=good, args=(x,)) and good(x),
    "thread module": lambda x: threading.active_count() and good(x),
}


def _statement_import(x):
    from helpers.attention import softmax

    return softmax(x)


def _statement_import_module(x):
    import helpers.attention as library

    return library.softmax(x)


def _statement_threads(x):
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(good, x).result()


def _thread_by_name(x):
    box = {}

    def run():
        box["y"] = getattr(sys.modules["helpers.att" + "ention"], "soft" + "max")(x)

    worker = threading.Thread(target=run)
    worker.start()
    worker.join()
    return box["y"]


def _thread_subclass(x):
    class Worker(threading.Thread):
        def run(self):
            self.y = helpers.attention.softmax(x)

    worker = Worker()
    worker.start()
    worker.join()
    return worker.y


def _timer(x):
    box = []
    worker = threading.Timer(0, lambda: box.append(imported_softmax(x)))
    worker.start()
    worker.join()
    return box[0]


def _builtins_import(x):
    import builtins

    return builtins.__import__("helpers.attention", fromlist=["softmax"]).softmax(x)


def _builtins_spelled(x):
    import builtins

    return getattr(builtins, "__imp" + "ort__")("helpers.att" + "ention", fromlist=["x"]).softmax(x)


def _builtins_dict(x):
    import builtins

    return builtins.__dict__["__import__"]("helpers.attention", fromlist=["x"]).softmax(x)


def _exec_encoded(x):
    import builtins

    namespace = {"x": x}
    code = bytes([105, 109, 112, 111, 114, 116, 32]).decode() + "helpers.attention as a\ny = a.softmax(x)"
    getattr(builtins, "ex" + "ec")(code, namespace)
    return namespace["y"]


REFUSED.update({
    # routes around the library check through threads, exec/eval/compile and builtins (issue 31, item 3)
    "a thread reaching the kernel by its spelled name": _thread_by_name,
    "a Thread subclass whose run calls the kernel": _thread_subclass,
    "threading.Timer": _timer,
    "builtins.__import__": _builtins_import,
    "getattr(builtins, a spelled __import__)": _builtins_spelled,
    "builtins.__dict__['__import__']": _builtins_dict,
    "eval of a compiled import": lambda x: eval(compile("__import__('helpers.attention').attention.softmax(x)",  # noqa: S307
                                                         "s", "eval")),
    "exec of an encoded import": _exec_encoded,
    "from-import statement": _statement_import,
    "import-as statement": _statement_import_module,
    "concurrent.futures": _statement_threads,
})

ACCEPTED = {
    "NumPy only": good,
    "a lambda": lambda x: np.exp(x - x.max(-1, keepdims=True)) / np.exp(x - x.max(-1, keepdims=True)).sum(
        -1, keepdims=True),
    "math and a user helper": lambda x: helper_clean(x) * math.cos(0.0),
    "a callable object": Clean(),
    "a class": Clean,
    "a partial of a user function": functools.partial(good),
    "numpy functions as defaults": lambda x, f=np.exp: f(x - x.max(-1, keepdims=True)) / f(
        x - x.max(-1, keepdims=True)).sum(-1, keepdims=True),
    "a builtin": len,
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_static_check_refuses(name):
    result = static_refusal(REFUSED[name])
    assert result is not None and result.mistake == "reaches_library", name
    assert LIBRARY_REFUSAL in result.message and "Refused before running" in result.message


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_static_check_accepts(name):
    assert static_refusal(ACCEPTED[name]) is None


def test_refused_answers_are_not_run():
    ran = []

    def answer(x):
        ran.append(x)
        return helpers.attention.softmax(x)

    assert check_stable_softmax(answer).mistake == "reaches_library"
    assert ran == []


def test_the_walk_is_bounded():
    # A function reaching a huge structure of user objects is read in bounded time.
    big = [Clean() for _ in range(5_000)]
    assert static_refusal(lambda x: big[0](x)) is None


def _run_as_cell(source, namespace):
    """Run ``source`` as IPython runs a cell: its text in linecache with no file behind it."""
    name = f"<cell-{abs(hash(source))}>"
    lines = source.splitlines(keepends=True)
    linecache.cache[name] = (len(source), None, lines, name)
    try:
        exec(compile(source, name, "exec"), namespace)  # noqa: S102
    finally:
        linecache.cache.pop(name, None)
    return namespace


def test_the_calling_cell_is_read():
    namespace = {"check": check_stable_softmax, "good": good}
    _run_as_cell("import helpers.attention\nresult = check(good)\n", namespace)
    assert namespace["result"].mistake == "reaches_library"
    assert "the cell imports helpers.attention" in namespace["result"].message
    _run_as_cell("import threading\nresult = check(good)\n", namespace)
    assert namespace["result"].mistake == "reaches_library"
    _run_as_cell("import math\nresult = check(good)\n", namespace)
    assert namespace["result"].status == "correct"


def test_a_test_module_is_not_read_as_a_cell():
    # This file imports helpers.attention; code in a file on disk is not a cell, so a right
    # answer passed from here is accepted.
    assert check_stable_softmax(good).status == "correct"


def test_in_a_real_kernel():
    # The check cell and the answer cell as a student runs them in Jupyter.
    cells = [
        "import numpy as np\nfrom helpers.checks import check_stable_softmax",
        "def mine(x, axis=-1, where=None):\n    s = x if where is None else np.where(where, x, -np.inf)\n"
        "    top = np.max(s, axis=axis, keepdims=True)\n    e = np.exp(s - np.where(np.isfinite(top), top, 0))\n"
        "    t = e.sum(axis=axis, keepdims=True)\n    return np.divide(e, t, out=np.zeros_like(e), where=t > 0)",
        "print(check_stable_softmax(mine).status)",
        "from helpers.attention import softmax\nprint(check_stable_softmax(mine).mistake)",
        "from helpers.attention.core import _check_softmax_axis\n"
        "def sneaky(x, axis=-1, where=None):\n    _check_softmax_axis(-1, x.shape)\n    return mine(x, axis, where)",
        "print(check_stable_softmax(sneaky).mistake)",
    ]
    nb = new_notebook(cells=[new_code_cell(c) for c in cells])
    NotebookClient(nb, kernel_name="python3", timeout=120).execute()
    printed = [o.get("text", "").strip() for c in nb.cells for o in c.outputs if o.get("name") == "stdout"]
    assert printed == ["correct", "reaches_library", "reaches_library"], printed


def test_runtime_guard_sees_a_worker_thread():
    # Behind the static check (bypassed here), the run-time guard follows new threads too.
    def threaded(x):
        box = []
        worker = threading.Thread(target=lambda: box.append(imported_softmax(x)))
        worker.start()
        worker.join()
        return box[0]

    assert check_stable_softmax.__wrapped__(threaded).mistake == "used_library"


# ---------------------------------------------------------------------------
# One grammar for every message
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "what, plural",
    [("weights", True), ("scores", True), ("context vectors", True), ("gradients", True),
     ("softmax", False), ("variance before scaling", False), ("merge", False), ("self-attention", False),
     ("scores of 'starts'", True), ("weights row", False), ("loss", False), (["dQ"], False),
     (["dQ", "dK"], True), ("dQ and dK", True), ("masked_attention", False)],
)
def test_plural(what, plural):
    assert _plural(what) is plural
    assert _verb(what, "has", "have") == ("have" if plural else "has")


def test_match_messages_agree():
    expected = np.ones((2, 3))
    r = _match(np.zeros((2, 3)), expected, [], what="weights", atol=1e-3)
    assert "Your weights have the right shape" in r.message
    r = _match(np.zeros((3, 2)), expected, [], what="weights", atol=1e-3)
    assert "Your weights have shape (3, 2), but they should have shape (2, 3)" in r.message
    r = _match(np.zeros((3, 2)), expected, [], what="output", atol=1e-3)
    assert "Your output has shape (3, 2), but it should" in r.message
    r = _match("text", expected, [], what="scores", atol=1e-3)
    assert "Your scores are a str" in r.message


# ---------------------------------------------------------------------------
# Raw NumPy errors get names
# ---------------------------------------------------------------------------


def test_np_max_of_two_arrays_is_named():
    r = check_stable_softmax(lambda x: np.exp(x - np.max(x, x)) / np.exp(x - np.max(x, x)).sum())
    assert r.mistake == "max_of_two_arrays" and "np.maximum" in r.message and "axis" in r.message


def test_missing_keepdims_is_named():
    r = check_stable_softmax(lambda x: np.exp(x - x.max(axis=-1)) / np.exp(x - x.max(axis=-1)).sum(axis=-1))
    assert r.mistake == "missing_keepdims" and "keepdims=True" in r.message


def test_fresh_case_defeats_a_table_of_the_probes():
    # Each run draws one case no one has seen: two runs give different inputs.
    a = [x for label, x in _probes() if label == "fresh"]
    b = [x for label, x in _probes() if label == "fresh"]
    assert len(a) == 1 and not np.array_equal(a[0], b[0])


def _probes():
    from helpers.checks import e5_definition

    return e5_definition._softmax_probes()


def test_core_is_what_every_check_module_uses():
    # The wrapper is shared: E1-E3 modules get the static check without edits.
    from helpers.checks import e1_section_5_2, e2_i_am_happy, e3_cat_sat

    for module in (e1_section_5_2, e2_i_am_happy, e3_cat_sat):
        assert module._never_raise is _core._never_raise


# ---------------------------------------------------------------------------
# Nothing a student has gives an answer away (E4-E7 and the core)
# ---------------------------------------------------------------------------

OWN_MODULES = ("_core", "e4_journey", "e5_definition", "e6_backward")


def _docstrings(module):
    import inspect

    yield module.__name__, inspect.getdoc(module) or ""
    for name, obj in vars(module).items():
        if (inspect.isfunction(obj) or inspect.isclass(obj)) and getattr(obj, "__module__", "") == module.__name__:
            yield name, inspect.getdoc(obj) or ""


@pytest.mark.parametrize("name", OWN_MODULES)
def test_no_docstring_passes_a_check_or_holds_a_reference_implementation(name):
    import importlib

    module = importlib.import_module(f"helpers.checks.{name}")
    for where, doc in _docstrings(module):
        assert "✅ correct" not in doc, where
        for line in doc.splitlines():
            code = line.strip().removeprefix(">>>").removeprefix("...").strip()
            if line.strip().startswith((">>>", "...")):
                assert "check_" not in code, (where, line)
            assert not code.startswith(("def ", "return ")), (where, line)
            assert "np.exp(" not in code and "keepdims=True) " not in code, (where, line)


def test_no_docstring_states_the_e4_answers():
    import inspect

    from helpers.checks import e4_journey

    text = inspect.getsource(e4_journey)
    for number in ("1.2544", "1.8284", "0.1503", "0.2256", "0.2192"):  # the row of "starts"
        assert number not in text


def _student(name):
    return nbformat.read(f"exercises/student/{name}.ipynb", as_version=4)


@pytest.mark.parametrize("name", ["E4-journey", "E5-definition", "E6-backward", "E7-online-softmax"])
def test_student_notebooks_do_not_point_to_the_solutions(name):
    for cell in _student(name).cells:
        assert "instructor/solutions" not in cell.source and "worked answers" not in cell.source, cell.id


def test_e6_student_copy_does_not_import_the_answer():
    # The Colab cell (written by tools/navigation.py) only checks that the package is installed.
    for cell in _student("E6-backward").cells:
        if cell.cell_type == "code" and "colab-install" not in cell.metadata.get("tags", []):
            assert "helpers.attention" not in cell.source and "import attention" not in cell.source, cell.id
            assert "from helpers import" not in cell.source.replace("from helpers.checks import", ""), cell.id
