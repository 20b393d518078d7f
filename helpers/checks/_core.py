"""Self-check core: the result type, reading answers, running a student's function.

The exercise modules (``e1_section_5_2`` ... ``e6_*``) build their checks from
these pieces; see :mod:`helpers.checks` for the conventions every check keeps.
"""

from __future__ import annotations

import functools
import html
import math
import numbers
import warnings
from dataclasses import dataclass

import numpy as np

HAND_ATOL = 5e-3
"""Absolute tolerance for answers computed by hand and written with 2 decimals."""

CODE_TOL = 1e-6
"""Absolute and relative tolerance for the output of a student's function."""

_RECORDING = None
"""None, or a list to which the comparisons record what they compute (see :class:`recording`)."""


@dataclass(frozen=True)
class Recorded:
    """One comparison a check made, as :class:`recording` keeps it: names only, no values.

    ``answers`` names the right answer ("right") and every mistake the comparison computed;
    ``clashes`` lists the pairs of them that agree within the check's own tolerance (two
    answers the check could not tell apart). No expected value is kept: a student who turns
    recording on learns the names of the recognised mistakes (they are in the docstrings)
    and nothing about the answers.
    """

    kind: str
    what: str
    answers: tuple
    clashes: tuple


class recording:
    """Context manager: record, for each comparison a check makes, which answers it computed
    and which of them it could not tell apart (see :class:`Recorded`), never their values.

    Used by the test that the recognised mistakes of each check give pairwise different answers.
    """

    def __enter__(self):
        global _RECORDING
        self._previous, _RECORDING = _RECORDING, []
        return _RECORDING

    def __exit__(self, *exc):
        global _RECORDING
        _RECORDING = self._previous
        return False


def _same(kind, a, b, atol, rtol):
    """True when the answers ``a`` and ``b`` agree within the comparison's tolerance.

    Used by the answer key (instructor/answer_key.py) only: a check works out its clashes inline
    and hands :func:`record_sealed` names alone, so no value passes through a replaceable name.
    """
    if a is None or b is None:
        return False
    if kind == "shape":
        return tuple(a) == tuple(b)
    if kind == "number":
        return abs(a - b) <= rtol * max(abs(a), abs(b))
    if kind in ("gradients", "state"):
        return len(a) == len(b) and all(_same("array", x, y, atol, rtol) for x, y in zip(a, b))
    try:
        a, b = np.asarray(a, float), np.asarray(b, float)
    except (TypeError, ValueError):
        return False
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=rtol, atol=atol))


def record_sealed(kind, what, entry):
    """Record one comparison: the names and clashes ``entry["recorded"]`` holds, never a value.

    For a sealed answer the entry is the answer key's (instructor/answer_key.py works out the
    clashes when it seals the values, :mod:`helpers.checks._sealed`); a check that holds its
    expected value works its clashes out inline and passes ``{"recorded": (names, clashes)}``.
    Nothing but names passes through here, or through any other module-level name, while recording.
    """
    if _RECORDING is None:
        return
    names, clashes = entry["recorded"]
    _RECORDING.append(Recorded(kind, what, tuple(names), tuple(tuple(c) for c in clashes)))


_STATUSES = ("correct", "incorrect", "not yet")
_ICONS = {"correct": "✅", "incorrect": "❌", "not yet": "…"}
_COLOURS = {"correct": "#1a7f37", "incorrect": "#cf222e", "not yet": "#6e7781"}


# ---------------------------------------------------------------------------
# The result type
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class CheckResult:
    """The verdict of a check: a status, a message for the student, a mistake name.

    Parameters
    ----------
    status : {"correct", "incorrect", "not yet"}
        "not yet" means there is no answer to check (``None``, empty).
    message : str
        One or two sentences in plain words: a confirmation or a hint.
    mistake : str or None
        A short machine-readable name of the recognised mistake (for example
        ``"scaled"`` or ``"wrong_shape"``), ``None`` when correct or not yet.

    Examples
    --------
    >>> r = CheckResult("incorrect", "Softmax over the keys (axis=-1).", "wrong_axis")
    >>> bool(r), r.mistake
    (False, 'wrong_axis')
    >>> print(r)
    ❌ incorrect: Softmax over the keys (axis=-1).
    >>> bool(CheckResult("correct", "Well done."))
    True
    """

    status: str
    message: str
    mistake: str | None = None

    def __post_init__(self):
        if self.status not in _STATUSES:
            raise ValueError(f"status must be one of {_STATUSES}: got {self.status!r}")

    def __bool__(self) -> bool:
        return self.status == "correct"

    def __str__(self) -> str:
        return f"{_ICONS[self.status]} {self.status}: {self.message}"

    def _repr_html_(self) -> str:
        return (
            f'<div style="border-left: 4px solid {_COLOURS[self.status]}; padding: 0.3em 0.6em">'
            f"{_ICONS[self.status]} <b>{html.escape(self.status)}</b>: {html.escape(self.message)}</div>"
        )


# ---------------------------------------------------------------------------
# One grammar for every message: "Your weights have", "Your softmax has"
# ---------------------------------------------------------------------------

_SINGULAR_S = ("loss", "class", "process", "bias", "axis", "analysis", "this")
"""Words ending in s that are singular."""


def _plural(what):
    """True when the noun phrase ``what`` (or a list of labels) is plural.

    A list of more than one label is plural; a phrase is plural when its head noun (the last
    word before "of", "before", "after", "on", "for", "with") ends in s: "weights", "context
    vectors", "scores of 'journey'"; "softmax", "variance before scaling", "merge" are singular.
    """
    if isinstance(what, (list, tuple)):
        return len(what) > 1
    words = str(what).replace("(", " ").split()
    for stop in ("of", "before", "after", "on", "for", "with", "at"):
        if stop in words[1:]:
            words = words[: words.index(stop, 1)]
            break
    if " and " in f" {' '.join(words)} ":
        return True
    head = words[-1].lower().strip(".,;:'\"") if words else ""
    return head.endswith("s") and not head.endswith(("ss", "is", "us")) and head not in _SINGULAR_S


def _verb(what, singular, plural):
    """``singular`` or ``plural`` to agree with ``what``: _verb("weights", "has", "have") -> "have"."""
    return plural if _plural(what) else singular


def _correct(message):
    return CheckResult("correct", message, None)


def _incorrect(mistake, message):
    return CheckResult("incorrect", message, mistake)


def _not_yet(message):
    return CheckResult("not yet", message, None)


# ---------------------------------------------------------------------------
# The static check: a graded function may not reach the library
# ---------------------------------------------------------------------------

LIBRARY_REFUSAL = (
    "graded answers must be computed with your own NumPy code, not the library's kernels"
)
"""The reason every refusal of the static check gives."""

_THREAD_MODULES = ("threading", "_thread", "concurrent", "multiprocessing", "asyncio")
_REACH_MODULES = ("importlib", "inspect", "linecache", "builtins", "pickle", "marshal", "types", "sys", "gc")
# sys as importlib: sys.setprofile/settrace switch the recording off, sys.modules reaches the library
_EXEC_NAMES = ("exec", "eval", "compile", "__import__")
_LOOKUP_NAMES = {"getattr", "import_module", "__import__", "modules", "vars", "globals", "locals", "__dict__",
                 "find_spec", "load_module", "attrgetter"}
_MAX_VISITS = 200_000  # a bound on the walk's total work; past it the answer is refused, not passed
_TOO_BIG = "it holds more objects than the check reads (%d)" % _MAX_VISITS


def _package_dir(name):
    import importlib.util
    import os

    spec = importlib.util.find_spec(name)
    return os.path.dirname(spec.origin) if spec and spec.origin else None


@functools.lru_cache(maxsize=1)
def _library_fingerprints():
    """The directory of :mod:`helpers` and a fingerprint of every code object of helpers.attention.

    A fingerprint is ``(co_code, co_names, co_varnames)``: a copy of a kernel recompiled with
    ``exec``/``compile`` (or pasted) has the same one, whatever it is called.
    """
    import sys

    import helpers.attention  # noqa: F401  (loads every submodule)

    prints = set()
    stack = []
    for key, module in list(sys.modules.items()):
        if module is not None and (key == "helpers.attention" or key.startswith("helpers.attention.")):
            for value in vars(module).values():
                code = getattr(value, "__code__", None)
                if code is not None and getattr(value, "__module__", "").startswith("helpers.attention"):
                    stack.append(code)
                if isinstance(value, type) and value.__module__.startswith("helpers.attention"):
                    for item in vars(value).values():
                        item = getattr(item, "__func__", item)
                        if getattr(item, "__code__", None) is not None:
                            stack.append(item.__code__)
    while stack:
        code = stack.pop()
        if len(code.co_code) >= 40:  # a few instructions could be anyone's
            prints.add((code.co_code, code.co_names, code.co_varnames))
        stack.extend(c for c in code.co_consts if hasattr(c, "co_code"))
    return _package_dir("helpers"), frozenset(prints)


def _is_helpers_module(module):
    name = getattr(module, "__name__", "") or ""
    return name == "helpers" or name.startswith("helpers.")


def _third_party_file(filename):
    """True for code of installed packages and the standard library (not walked into)."""
    import os
    import sys

    if not filename or filename.startswith("<"):
        return False
    filename = os.path.abspath(filename)
    roots = {os.path.abspath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix) if p}
    helpers_dir = _library_fingerprints()[0]
    if helpers_dir and filename.startswith(helpers_dir + os.sep):
        return False
    return any(filename.startswith(root + os.sep) for root in roots)


def _code_reasons(code, env, visit):
    """Reasons found in one code object (and the code objects nested in it)."""
    import dis

    helpers_dir, prints = _library_fingerprints()
    reasons = []
    if (code.co_code, code.co_names, code.co_varnames) in prints:
        reasons.append(f"{code.co_name} is a copy of a helpers.attention kernel")
    filename = code.co_filename or ""
    if helpers_dir and filename.startswith(helpers_dir):
        reasons.append(f"{code.co_name} is code of the helpers package")
    imported = []
    for instr in dis.get_instructions(code):
        if instr.opname == "IMPORT_NAME":
            imported.append(str(instr.argval))
        elif instr.opname == "IMPORT_FROM" and imported and imported[-1] == "helpers":
            imported.append(f"helpers.{instr.argval}")
    for name in imported:
        root = name.split(".")[0]
        if name == "helpers.attention" or name.startswith("helpers.attention."):
            reasons.append(f"it imports {name}")
        elif root == "helpers" and name != "helpers":
            reasons.append(f"it imports {name}")
        elif root in _THREAD_MODULES:
            reasons.append(f"it imports {name} (threads)")
        elif root in _REACH_MODULES:
            reasons.append(f"it imports {name}")
    if "helpers" in imported and "attention" in code.co_names:
        reasons.append("it reaches helpers.attention")
    # use, not mention: a string (a docstring, a message) naming the library is refused only in code
    # that looks a name up by its text (getattr, import_module, sys.modules, vars, globals)
    if _LOOKUP_NAMES & set(code.co_names):
        for const in code.co_consts:
            if isinstance(const, str) and ("helpers.attention" in const or const == "attention"):
                reasons.append("it looks up helpers.attention by name")
    builtins_ = env.get("__builtins__", {})
    builtins_ = builtins_ if isinstance(builtins_, dict) else vars(builtins_)
    for name in code.co_names:
        if name in env:
            value = env[name]
            if value is np or _is_numpy_object(value):
                continue
            if isinstance(value, type(np)) and value.__name__ == "helpers":
                if "attention" in code.co_names:
                    reasons.append("it reaches helpers.attention")
                continue
            reasons.extend(_object_reasons(value, visit, name))
        elif name in _EXEC_NAMES and name in builtins_:
            reasons.append(f"it calls {name}()")
    for const in code.co_consts:
        if hasattr(const, "co_code"):
            reasons.extend(_code_reasons(const, env, visit))
    return reasons


def _is_numpy_object(value):
    module = getattr(value, "__module__", None) or getattr(type(value), "__module__", "") or ""
    return isinstance(module, str) and module.split(".")[0] == "numpy" and not isinstance(value, type(np))


def _object_reasons(obj, visit, label=None):
    """Reasons why ``obj`` (reached from a graded answer) computes with the library, walking
    functions, classes, instances, closures, defaults and globals, up to ``_MAX_VISITS`` objects."""
    import sys
    import types

    if isinstance(obj, (bool, int, float, complex, str, bytes, np.ndarray, np.generic)) or obj is None:
        return []   # before the count: a long list of numbers costs no budget
    if id(obj) in visit:
        return []
    if len(visit) > _MAX_VISITS:
        if _TOO_BIG in visit:
            return []
        visit.add(_TOO_BIG)
        return [_TOO_BIG]
    visit.add(id(obj))
    label = label or getattr(obj, "__name__", type(obj).__name__)
    if isinstance(obj, types.ModuleType):
        name = obj.__name__
        root = name.split(".")[0]
        if _is_helpers_module(obj) and name != "helpers":
            return [f"it uses the module {name}"]
        if root in _THREAD_MODULES:
            return [f"it uses the module {name} (threads)"]
        if root in _REACH_MODULES:
            return [f"it uses the module {name}"]
        return []
    if isinstance(obj, (bool, int, float, complex, str, bytes, np.ndarray, np.generic)) or obj is None:
        return []
    module = getattr(type(obj), "__module__", "") or ""
    if module.split(".")[0] in _THREAD_MODULES:
        return [f"{label} is a {type(obj).__name__} (threads)"]
    if isinstance(obj, functools.partial):
        reasons = _object_reasons(obj.func, visit)
        for value in list(obj.args) + list(obj.keywords.values()):
            reasons.extend(_object_reasons(value, visit))
        return reasons
    if isinstance(obj, (types.MethodType,)):
        return _object_reasons(obj.__func__, visit) + _object_reasons(obj.__self__, visit)
    if isinstance(obj, (staticmethod, classmethod)):
        return _object_reasons(obj.__func__, visit)
    if isinstance(obj, property):
        return [r for f in (obj.fget, obj.fset) if f is not None for r in _object_reasons(f, visit)]
    if isinstance(obj, types.FunctionType):
        fn_module = obj.__module__ or ""
        if fn_module == "helpers" or fn_module.startswith("helpers."):  # the checks' own helpers too
            return [f"it calls {fn_module}.{obj.__name__}"]
        code = obj.__code__
        _, prints = _library_fingerprints()
        if (code.co_code, code.co_names, code.co_varnames) not in prints and _third_party_file(code.co_filename):
            return []
        reasons = _code_reasons(code, obj.__globals__, visit)
        for cell in obj.__closure__ or ():
            try:
                reasons.extend(_object_reasons(cell.cell_contents, visit))
            except ValueError:  # an empty cell
                pass
        for value in list(obj.__defaults__ or ()) + list((obj.__kwdefaults__ or {}).values()):
            reasons.extend(_object_reasons(value, visit))
        return reasons
    if isinstance(obj, (types.BuiltinFunctionType, types.BuiltinMethodType)):
        if obj.__name__ in _EXEC_NAMES and getattr(obj, "__module__", "") == "builtins":
            return [f"it calls {obj.__name__}()"]
        where = getattr(obj, "__module__", "") or ""
        if where != "builtins" and where.split(".")[0] in _REACH_MODULES + _THREAD_MODULES:
            return [f"it uses {obj.__module__}.{obj.__name__}"]
        return []
    if isinstance(obj, type):
        where = obj.__module__ or ""
        if where == "helpers" or where.startswith("helpers."):
            return [f"it uses the class {where}.{obj.__name__}"]
        if where.split(".")[0] in _THREAD_MODULES:
            return [f"it uses {where}.{obj.__name__} (threads)"]
        defined_in = getattr(sys.modules.get(where), "__file__", None)
        if where == "builtins" or _third_party_file(defined_in):
            return []
        reasons = []
        for value in vars(obj).values():
            reasons.extend(_object_reasons(value, visit))
        return reasons
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [r for item in list(obj) for r in _object_reasons(item, visit)]
    if isinstance(obj, dict):
        return [r for item in [*obj.keys(), *obj.values()] for r in _object_reasons(item, visit)]
    if module.split(".")[0] in ("numpy", "builtins", "math"):
        return []
    # an instance of a user's class (a callable object, a SelfAttention): its class and attributes
    reasons = _object_reasons(type(obj), visit)
    for value in list(getattr(obj, "__dict__", {}).values()):
        reasons.extend(_object_reasons(value, visit))
    return reasons


def _source_reasons(source):
    """Reasons found in the text of a cell: imports of the library or of threads, exec/compile."""
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    reasons = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        for name in names:
            root = name.split(".")[0]
            if name == "helpers.attention" or name.startswith("helpers.attention."):
                reasons.append(f"the cell imports {name}")
            elif root in _THREAD_MODULES:
                reasons.append(f"the cell imports {name} (threads)")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _EXEC_NAMES:
            reasons.append(f"the cell calls {node.func.id}()")
    return list(dict.fromkeys(reasons))


def _interactive_source(filename):
    """The text of a notebook cell (or any code not in a file), or None for code in a file."""
    import linecache

    entry = linecache.cache.get(filename)
    if entry is None or len(entry) < 3 or entry[1] is not None:
        return None  # code from a file on disk: a test module, a script
    return "".join(entry[2])


def static_refusal(answer, caller_source=None):
    """Refuse a graded answer that reaches the library, before it is run: a CheckResult or None.

    ``answer`` is what a student passes to a function check (a function, a class, an instance,
    a ``functools.partial``); ``caller_source`` is the text of the cell that called the check,
    if known. The walk looks at the answer's code (bytecode), the globals and closures it
    reads, its default arguments, the methods of its class and its attributes, recursively (up
    to a few hundred objects), and refuses, with the reason:

    - an import of, or a reference to, :mod:`helpers.attention` (public or private names, any
      submodule) or another module of :mod:`helpers`;
    - a copy of a kernel's code (recompiled with ``exec``/``compile``, or pasted): its bytecode
      equals the kernel's;
    - a call of ``exec``, ``eval``, ``compile`` or ``__import__``, or use of ``importlib``,
      ``inspect``, ``linecache``, ``builtins``, ``types``, ``pickle`` or ``marshal``;
    - threads: ``threading``, ``concurrent.futures``, ``multiprocessing``, ``asyncio``, or a
      thread or executor object;
    - in the calling cell: an import of helpers.attention or of a thread module, or a call of
      exec/eval/compile.

    Use is refused, not mention: a docstring, comment or string that names helpers.attention is
    not a reason, unless the same code looks names up by their text (getattr, import_module,
    sys.modules, vars, globals).
    """
    reasons = _object_reasons(answer, set())
    if caller_source:
        reasons.extend(_source_reasons(caller_source))
    reasons = list(dict.fromkeys(reasons))
    if not reasons:
        return None
    shown = "; ".join(reasons[:3])
    return _incorrect(
        "reaches_library",
        f"Refused before running: {shown}. The reason: {LIBRARY_REFUSAL}. Write the computation "
        "with np.exp, np.max, @ and so on; compare with the library outside the graded cell.",
    )


def _caller_source(depth):
    """The text of the notebook cell that called the check, or None (a file, a test module)."""
    import sys

    try:
        frame = sys._getframe(depth + 1)
    except ValueError:
        return None
    return _interactive_source(frame.f_code.co_filename)


def _never_raise(check):
    """Turn any ``Exception`` escaping a check into an "incorrect" result, and refuse code
    that reaches the library before running it.

    When a check is given a function (or a class, an instance with methods, a partial), it is
    first read by :func:`static_refusal`, with the text of the notebook cell that called the
    check: an answer that imports or reaches :mod:`helpers.attention`, runs a recompiled copy
    of it, calls exec/compile or starts threads is refused with the reason, and not run.

    Numerical warnings are silenced around the whole check (comparisons of
    answers such as 1e308 with the expected numbers may overflow); student
    code is run under its own ``catch_warnings`` in :func:`_call_student`.
    """

    @functools.wraps(check)
    def wrapper(*args, **kwargs):
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                code = [a for a in list(args) + list(kwargs.values()) if callable(a)]
                if code:  # a graded function: refused before it runs if it reaches the library
                    source = _caller_source(1)
                    for answer in code:
                        refused = static_refusal(answer, source)
                        if refused is not None:
                            return refused
                return check(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - the point: never crash on an answer
            return _incorrect(
                "unreadable",
                f"The checker could not make sense of this answer ({type(exc).__name__}). "
                "Give a NumPy array, a list of numbers or a function, as the exercise asks.",
            )

    return wrapper


# ---------------------------------------------------------------------------
# Reading an answer and comparing it with computed mistakes
# ---------------------------------------------------------------------------


def _is_empty(answer):
    if answer is None:
        return True
    if isinstance(answer, str):
        return not answer.strip()
    if isinstance(answer, (list, tuple, dict, set)) and len(answer) == 0:
        return True
    return isinstance(answer, np.ndarray) and answer.size == 0


def _as_real_array(answer, what):
    """``(array, None)`` for a finite real array, else ``(None, CheckResult)``."""
    if _is_empty(answer):
        it = _verb(what, "it", "them")
        return None, _not_yet(f"No {what} yet: compute {it} and pass {it} to this check.")
    if isinstance(answer, (str, bytes, dict, set)):
        return None, _incorrect(
            "wrong_type",
            f"Your {what} {_verb(what, 'is', 'are')} a {type(answer).__name__}; give a NumPy array or a "
            "nested list of numbers.",
        )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # older NumPy warns on ragged lists
            arr = np.asarray(answer)
    except Exception:  # noqa: BLE001 - ragged lists, objects whose __array__ raises
        arr = None
    if arr is None or arr.dtype.kind not in "biufc":
        return None, _incorrect(
            "wrong_type",
            f"Your {what} {_verb(what, 'is', 'are')} not an array of numbers (rows of different lengths, text or "
            "other objects); give a NumPy array or a nested list of numbers.",
        )
    if arr.size == 0:
        return None, _not_yet(
            f"Your {what} {_verb(what, 'is', 'are')} empty: compute {_verb(what, 'it', 'them')} and pass "
            f"{_verb(what, 'it', 'them')} to this check."
        )
    if arr.dtype.kind == "b":
        return None, _incorrect(
            "wrong_type",
            f"Your {what} {_verb(what, 'holds', 'hold')} True/False values; {_verb(what, 'it', 'they')} "
            f"should hold numbers.",
        )
    if arr.dtype.kind == "c":
        return None, _incorrect(
            "complex",
            f"Your {what} {_verb(what, 'holds', 'hold')} complex numbers; attention only uses real numbers.",
        )
    arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        return None, _incorrect(
            "not_finite",
            f"Your {what} {_verb(what, 'contains', 'contain')} NaN or infinity; every entry should be a "
            "finite number.",
        )
    return arr, None


def _close(a, b, atol, rtol=0.0):
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=rtol, atol=atol))


def _compute(thunk):
    """The value of ``thunk()`` as a float array, or None if it cannot be computed."""
    try:
        return np.asarray(thunk(), dtype=np.float64)
    except Exception:  # noqa: BLE001 - a mistake that cannot happen for these inputs
        return None


def _named_mistake(got, expected, mistakes, prepare=None):
    """The first mistake of a student's function whose output ``got`` is: an "incorrect" result, or None.

    ``mistakes`` is a list of ``(name, thunk, message)``; a mistake's output counts when it has
    the shape of ``got``, differs from the right ``expected`` and equals ``got`` (to
    :data:`CODE_TOL`), both passed through ``prepare`` first when given.
    """
    prepare = prepare or (lambda a: a)
    for name, thunk, message in mistakes:
        wrong = _compute(thunk)
        if (wrong is not None and np.shape(wrong) == np.shape(got) and not _close(wrong, expected, CODE_TOL, CODE_TOL)
                and _close(prepare(got), prepare(wrong), CODE_TOL, CODE_TOL)):
            return _incorrect(name, message)
    return None


def _row_hint(arr, expected, atol):
    if arr.ndim != 2:
        return ""
    good = [i for i in range(arr.shape[0]) if np.allclose(arr[i], expected[i], rtol=0, atol=atol)]
    if not good:
        return ""
    bad = [i for i in range(arr.shape[0]) if i not in good]
    word = lambda rows: ("Row " if len(rows) == 1 else "Rows ") + _and([str(i) for i in rows])  # noqa: E731
    verb = lambda rows: "is" if len(rows) == 1 else "are"  # noqa: E731
    return f" {word(good)} (counting from 0) {verb(good)} right; {word(bad).lower()} {verb(bad)} not."


def _reshape_needed(what, shape, stated):
    """The one shape rule of every check: an answer is taken in exactly the shape its task states.

    An answer whose shape differs from ``stated`` only by axes of length 1 (a (1, 7) or (7, 1) row
    where the task asks for (7,), an (n,) vector where it asks for (n, 1)) is named
    ``reshape_needed``, whatever its numbers; any other shape is not this mistake (None).
    """
    shape, stated = tuple(int(d) for d in shape), tuple(int(d) for d in stated)
    if shape == stated or tuple(d for d in shape if d != 1) != tuple(d for d in stated if d != 1):
        return None
    return _incorrect(
        "reshape_needed",
        f"Your {what} {_verb(what, 'has', 'have')} shape {shape}; the task asks for shape {stated}, which "
        f"differs from yours only by an axis of length 1. Give {_verb(what, 'it', 'them')} in exactly that "
        f"shape (for example with .reshape({', '.join(map(str, stated))}{',' if len(stated) == 1 else ''})"
        + (", or keepdims=True where the axis was reduced" if len(stated) > len(shape) else "")
        + "), as the next step of a computation would need.",
    )


def _match(answer, expected, mistakes, *, what, atol, rtol=0.0, shape_hint=""):
    """Compare an answer with the expected array and with computed mistakes.

    ``mistakes`` is a list of ``(name, thunk, message)``; a mistake whose value
    equals the expected one (within ``atol``) is skipped, since it cannot be
    told apart from a right answer for these inputs.
    """
    arr, result = _as_real_array(answer, what)
    if result is not None:
        return result
    if _RECORDING is not None:  # names and clashes worked out here: no value leaves this function
        answers = [("right", np.asarray(expected, float))]
        for name, thunk, _ in mistakes:
            try:
                answers.append((name, np.asarray(thunk(), dtype=np.float64)))
            except Exception:  # noqa: BLE001 - a mistake that cannot happen for these inputs
                pass
        clashes = [(m1, m2) for i, (m1, v1) in enumerate(answers) for m2, v2 in answers[i + 1:]
                   if not (m1 == m2 != "right") and v1.shape == v2.shape
                   and bool(np.allclose(v1, v2, rtol=rtol, atol=atol))]
        record_sealed("array", what, {"recorded": ([m for m, _ in answers], clashes)})
    candidates = []
    for name, thunk, message in mistakes:
        value = _compute(thunk)
        if value is not None and not _close(value, expected, atol, rtol):
            candidates.append((name, value, message))
    if _close(arr, expected, atol, rtol):
        return None
    for name, value, message in candidates:
        if _close(arr, value, atol, rtol):
            return _incorrect(name, message)
    reshape = _reshape_needed(what, arr.shape, expected.shape)
    if reshape is not None:
        return reshape
    if arr.shape != expected.shape:
        return _incorrect(
            "wrong_shape",
            f"Your {what} {_verb(what, 'has', 'have')} shape {arr.shape}, but {_verb(what, 'it', 'they')} "
            f"should have shape {expected.shape}.{shape_hint}",
        )
    return _incorrect(
        "wrong_values",
        f"Your {what} {_verb(what, 'has', 'have')} the right shape but not the right numbers."
        + _row_hint(arr, expected, atol),
    )


# ---------------------------------------------------------------------------
# Running a student's function
# ---------------------------------------------------------------------------


@dataclass
class _Call:
    value: object = None
    error: Exception | None = None
    warned: bool = False
    used: tuple = ()
    overflowed: bool = False  # NumPy's warning said "overflow"


LIBRARY_KERNELS = (
    "softmax",
    "softmax_loop",
    "attention_scores",
    "attention_scores_loop",
    "scaled_dot_product_attention",
    "scaled_dot_product_attention_loop",
    "softmax_jacobian",
    "attention_backward",
    "blockwise_attention",
    "multi_head_attention",
)
"""The kernels of :mod:`helpers.attention` a student function could wrap instead of computing."""


def _record_library_calls(used, allowed=()):
    """Replace the library kernels by recording stand-ins; return a function that restores them.

    Two routes are covered: a name looked up on the module at call time
    (``attention.softmax(...)``) meets the stand-in, which records the call and
    delegates to the kernel; a reference the notebook took earlier (``from
    helpers.attention import softmax``) still runs the kernel's own code, which a
    profile hook recognises by its code object. ``allowed`` names kernels the
    exercise lets the student use.

    :mod:`helpers.attention` is a package: a kernel is bound in the package and
    in each of its modules that defines or imports it (``core``, ``kv_cache``,
    ...), and a kernel calls another by the name bound in its own module. So the
    stand-in replaces every binding of the kernel in the package and its
    modules, as it did when the kernels were one module.
    """
    import sys

    from helpers import attention as module

    originals = {name: getattr(module, name) for name in LIBRARY_KERNELS if hasattr(module, name)}
    watched = {fn.__code__: name for name, fn in originals.items() if name not in allowed}
    prefix = module.__name__ + "."
    modules = [module] + [m for key, m in sorted(sys.modules.items()) if key.startswith(prefix) and m is not None]

    def stand_in(name, fn):
        @functools.wraps(fn)
        def recorder(*args, **kwargs):
            used.append(name)
            return fn(*args, **kwargs)

        del recorder.__wrapped__  # no route back to the kernel from the stand-in
        return recorder

    replaced = []  # (module, name, original)
    for name, fn in originals.items():
        if name not in allowed:
            recorder = stand_in(name, fn)
            for where in modules:
                if getattr(where, name, None) is fn:
                    setattr(where, name, recorder)
                    replaced.append((where, name, fn))

    def profile(frame, event, arg):
        if event == "call" and frame.f_code in watched:
            used.append(watched[frame.f_code])

    import threading

    previous = sys.getprofile()
    previous_threads = threading.getprofile()
    sys.setprofile(profile)
    threading.setprofile(profile)  # a kernel called from a worker thread is seen too

    def restore():
        sys.setprofile(previous)
        threading.setprofile(previous_threads)
        for where, name, fn in replaced:
            setattr(where, name, fn)

    return restore


def _call_student(fn, *args, allowed=()):
    """Call ``fn(*args)`` on copies of the arguments; record errors, numeric warnings and kernel calls.

    While ``fn`` runs, the kernels of :mod:`helpers.attention` (except
    ``allowed``) are replaced by recording stand-ins; they are restored
    afterwards whatever happens.
    """
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    used = []
    with warnings.catch_warnings(record=True) as caught, np.errstate(all="warn", under="ignore"):
        warnings.simplefilter("always")
        restore = _record_library_calls(used, allowed)
        try:
            value = fn(*args)
        except Exception as exc:  # noqa: BLE001 - the student's code may raise anything
            return _Call(error=exc, warned=_numeric_warning(caught), used=tuple(dict.fromkeys(used)),
                         overflowed=_overflow_warning(caught))
        finally:
            restore()
    return _Call(value=value, warned=_numeric_warning(caught), used=tuple(dict.fromkeys(used)),
                 overflowed=_overflow_warning(caught))


def _fresh_rng():
    """A generator seeded from the operating system: each run of a check draws one case that no
    one has seen before, so a lookup table of the probes (visible or hidden) cannot pass."""
    return np.random.default_rng()


def _used_library(call, what):
    """An "incorrect" result when the student's function called a library kernel, else None."""
    if not call.used:
        return None
    names = ", ".join(f"helpers.attention.{name}" for name in call.used)
    return _incorrect(
        "used_library",
        f"Your {what} calls {names}. That kernel does the very step this exercise practises, so "
        "please write the computation yourself with NumPy (np.exp, np.max, @ and so on); you are "
        "welcome to compare your result with the kernel outside the function.",
    )


def _overflow_warning(caught):
    """True if NumPy warned about an overflow (of exp, most often)."""
    return any(issubclass(w.category, RuntimeWarning) and "overflow" in str(w.message) for w in caught)


def _numeric_warning(caught):
    """True if NumPy warned about overflow, invalid values or division by zero."""
    return any(issubclass(w.category, RuntimeWarning) for w in caught)


def _float_result(value):
    """The result of a student's function as a float array, or None."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            arr = np.asarray(value)
        if arr.dtype.kind not in "iuf":
            return None
        return arr.astype(np.float64)
    except Exception:  # noqa: BLE001
        return None


def _check_callable(fn, what):
    if fn is None:
        return _not_yet(f"No {what} yet: write it and pass the function itself to this check.")
    if not callable(fn):
        return _incorrect(
            "not_callable",
            f"This check needs your {what} as a function (pass its name without "
            f"parentheses); got a {type(fn).__name__}.",
        )
    return None


def _raised(call, what):
    """The "incorrect" result for a student's function that raised; known errors get a name."""
    exc = call.error
    text = str(exc)
    if isinstance(exc, TypeError) and (
        "scalar index" in text or "cannot be interpreted as an integer" in text
    ):
        return _incorrect(
            "max_of_two_arrays",
            f"Your {what} raised TypeError ({text}). That is what np.max(a, b) or s.max(b) does "
            "when b is an array or a number: the second argument of np.max is the axis. For the "
            "larger of two arrays, entry by entry, use np.maximum(a, b); for the maximum of each "
            "row, use np.max(s, axis=-1, keepdims=True).",
        )
    if isinstance(exc, ValueError) and "could not be broadcast" in text:
        return _incorrect(
            "missing_keepdims",
            f"Your {what} raised ValueError ({text.strip()}). A row maximum or row sum taken "
            "without keepdims=True has shape (n,), which NumPy lines up with the columns, not "
            "the rows; take it with keepdims=True (shape (n, 1)) so it lines up with each row.",
        )
    if isinstance(exc, (FloatingPointError, OverflowError)):
        return _overflow(call, what)
    if len(text) > 120:
        text = text[:117] + "..."
    return _incorrect(
        "raises", f"Your {what} raised {type(exc).__name__}: {text or '(no message)'}."
    )




OVERFLOW_FIX = (
    "Subtract each row's maximum before np.exp, s - s.max(axis=-1, keepdims=True): the "
    "weights do not change, and the largest exponent becomes exp(0) = 1 (the log-sum-exp "
    "trick of notebooks 05 and 06)."
)


def _overflow(call, what, where=""):
    """The "incorrect" result for a function whose output is not finite or that made NumPy warn."""
    warned = " NumPy warned about an overflow or an invalid value while it ran." if call.warned else ""
    return _incorrect(
        "overflow",
        f"Your {what} overflowed{where}: np.exp of a score in the hundreds or thousands is inf "
        f"in float64, and inf / inf is NaN.{warned} {OVERFLOW_FIX}",
    )


def _broke(call, got):
    """True when a student's call warned or returned values that are not all finite."""
    return call.warned or (got is not None and not bool(np.all(np.isfinite(got))))


FLOAT32_TOL = 2e-3
"""Tolerance for a student's function that computes in float32 (about 7 significant digits,
fewer after exp of large scores): within it, the answer is accepted with a note."""


def _low_precision(value):
    """'float32' or 'float16' when the student's result (or any array in it) is that dtype, else None."""
    items = value if isinstance(value, (tuple, list)) else (value,)
    for item in items:
        dtype = getattr(item, "dtype", None)
        if dtype is not None and dtype in (np.float32, np.float16):
            return str(dtype)
    return None


def _precision_verdict(dtype, got, expected, what):
    """For a float32/float16 result that misses the float64 tolerance: (ok, message).

    ok is True (accepted, with a note) when the result is within ``FLOAT32_TOL`` in float32;
    otherwise the message says exactly that precision is the problem when it is.
    """
    close = _close(got, expected, FLOAT32_TOL, FLOAT32_TOL)
    if dtype == "float32" and close:
        return True, (
            f" A note on precision: your {what} computes in float32, which keeps about 7 digits, "
            "so it agrees with the float64 reference only to about 1e-4 here; that is float32's "
            "precision, not a mistake. Leave the arrays in float64 to match to 1e-6."
        )
    if dtype == "float16" and _close(got, expected, 5e-2, 5e-2):
        return False, (
            f"Your {what} computes in float16, which keeps about 3 digits: the result is right "
            "only to about 1e-2, and that precision is the problem. Compute in float64 (NumPy's "
            "default)."
        )
    return False, None


def _precision_outcome(value, got, expected, what):
    """What a float32 or float16 result that missed the float64 tolerance earns: one rule for every check.

    ``value`` is the student's return value (its dtype decides); ``got`` and ``expected`` are the
    arrays compared (a tuple or list of arrays is flattened into one). Returns the note (a str)
    for a float32 result right to float32's precision, a refusal (``_incorrect("precision", ...)``)
    for a result right only to float16's, and None otherwise: a float64 result, a non-finite one,
    or one that is simply wrong, which the caller goes on to diagnose.
    """
    dtype = _low_precision(value)
    if dtype is None:
        return None

    def flat(a):
        return np.concatenate([np.ravel(x) for x in a]) if isinstance(a, (tuple, list)) else np.asarray(a)

    got, expected = flat(got), flat(expected)
    if not np.all(np.isfinite(got)):
        return None
    ok, message = _precision_verdict(dtype, got, expected, what)
    if ok:
        return message
    return _incorrect("precision", message) if message else None


def _as_number(answer):
    """A float from a real number (or a one-element numeric array), else None. Text is refused."""
    if isinstance(answer, (bool, np.bool_)):
        return None
    if isinstance(answer, numbers.Real):
        return float(answer)
    if isinstance(answer, np.ndarray) and answer.size == 1 and answer.dtype.kind in "iuf":
        return float(answer.reshape(-1)[0])
    return None


def _not_a_number(answer, what, example="0.25 or 1.5"):
    """The "incorrect" result for an answer that is not one number; text gets a hint on writing it.

    ``example`` shows how such a number is written (a count of tokens: whole numbers).
    """
    if isinstance(answer, str):
        text = answer.strip()
        plain = text.replace(",", "").replace("_", "").replace(" ", "")
        try:
            float(plain)
        except ValueError:
            return _incorrect(
                "not_a_number",
                f"Your {what} {_verb(what, 'is', 'are')} the text {text!r}, not a number. Write the number itself, "
                f"without quotes, for example {example}.",
            )
        return _incorrect(
            "not_a_number",
            f"Your {what} {_verb(what, 'is', 'are')} the text {text!r}, not a number. Write it without quotes: {plain} "
            "(Python also reads 1_000_000 and 1e6).",
        )
    return _incorrect(
        "not_a_number",
        f"Your {what} {_verb(what, 'is', 'are')} a {type(answer).__name__}; give one number, for example "
        f"{example}.",
    )


# ---------------------------------------------------------------------------
# Shared pieces of the checks below
# ---------------------------------------------------------------------------


def _document_rows(arr, ex, fig_ids, exact, atol):
    """Indices of the rows of ``arr`` equal to a printed (wrong) row of the document.

    ``fig_ids`` name figures whose ``index`` is a row; a row counts only when it
    matches the printed row and not the exact one.
    """
    if arr.shape != exact.shape:
        return []
    rows = []
    for fig_id in fig_ids:
        fig = ex.figure(fig_id)
        i = fig.index[0]
        if np.allclose(arr[i], fig.printed, rtol=0, atol=atol) and not np.allclose(
            arr[i], exact[i], rtol=0, atol=atol
        ):
            rows.append(i)
    return rows


def _and(items):
    """'a', 'a and b', 'a, b and c'."""
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _quoted(tokens):
    return _and([f"'{t}'" for t in tokens])


def _near(value, target, rtol):
    return abs(value - target) <= rtol * abs(target)


def _number_verdict(answer, *, what, expected, mistakes, rtol, hint):
    """None when ``answer`` is ``expected`` within ``rtol``, else an "incorrect" result.

    ``mistakes`` is a list of ``(name, value, message)``; a mistake whose value is
    within ``rtol`` of the expected one is skipped (it cannot be told apart).
    """
    if _RECORDING is not None:  # names and clashes worked out here: no value leaves this function
        answers = [("right", expected)] + [(name, target) for name, target, _ in mistakes if target is not None]
        clashes = [(m1, m2) for i, (m1, v1) in enumerate(answers) for m2, v2 in answers[i + 1:]
                   if not (m1 == m2 != "right") and abs(v1 - v2) <= rtol * max(abs(v1), abs(v2))]
        record_sealed("number", what, {"recorded": ([m for m, _ in answers], clashes)})
    value = _as_number(answer)
    if value is None:
        return _not_a_number(answer, what)
    if not math.isfinite(value):
        return _incorrect("not_finite", f"Your {what} ({value}) {_verb(what, 'is', 'are')} not a finite number.")
    if _near(value, expected, rtol):
        return None
    for name, target, message in mistakes:
        if not _near(target, expected, rtol) and _near(value, target, rtol):
            return _incorrect(name, f"Your {what} {_verb(what, 'is', 'are')} {value:g}. " + message)
    return _incorrect("wrong_value", f"Your {what} {_verb(what, 'is', 'are')} {value:g}, which is not right. {hint}")


def _sealed_number_verdict(answer, *, what, entry, messages, hint, estimate=None):
    """None when ``answer`` is the sealed answer of ``entry`` (:mod:`helpers.checks._sealed`), else
    an "incorrect" result: a named mistake (its message from ``messages``), ``rounded`` (the
    answer rounded to too few decimals), then, for an answer in the entry's coarse band,
    ``estimate(what, value)`` (a sample, not the expectation) when given, else ``wrong_value``.
    The check holds digests, not the value."""
    from helpers.checks import _sealed

    record_sealed("number", what, entry)
    value = _as_number(answer)
    if value is None:
        return _not_a_number(answer, what)
    if not math.isfinite(value):
        return _incorrect("not_finite", f"Your {what} ({value}) {_verb(what, 'is', 'are')} not a finite number.")
    verdict, fewer = _sealed.number_verdict(entry, value)
    if verdict == "right":
        return None
    said = f"Your {what} {_verb(what, 'is', 'are')} {value:g}"
    if verdict in messages:
        return _incorrect(verdict, f"{said}. {messages[verdict]}")
    if verdict == "rounded":
        return _incorrect(
            "rounded",
            f"{said}: rounded to {fewer} decimal{'s' if fewer != 1 else ''}, which is too coarse here. "
            f"Give at least {entry['decimals']} decimals (or keep the number as Python computes it).",
        )
    if estimate is not None and verdict == "close":
        return estimate(what, value)
    return _incorrect("wrong_value", f"{said}, which is not right. {hint}")


def _parts(parts, *, done, empty):
    """Check an exercise with several answers; ``parts`` = ``[(label, answer, verdict)]``.

    ``verdict(answer)`` gives None (right) or an "incorrect" CheckResult. The first
    wrong part is reported; missing parts (None or empty) give "not yet" once the
    given ones are right; ``done`` is the message when every part is right and
    ``empty`` the one when none is given.
    """
    right, missing, wrong = [], [], []
    for label, answer, verdict in parts:
        if _is_empty(answer):
            missing.append(label)
            continue
        result = verdict(answer)
        if result is not None:
            wrong.append(result)
            if _RECORDING is None:
                return result
            continue  # while recording, every part's comparison is made, and still reported
        right.append(label)
    if wrong:
        return wrong[0]
    if not right:
        return _not_yet(empty)
    if missing:
        return _not_yet(
            f"So far so good: {_and(right)} {_verb(right, 'is', 'are')} right. "
            f"Now give {_and(missing)}."
        )
    return _correct(done)


