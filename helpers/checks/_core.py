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
"""None, or a list to which the comparisons record the right answer and every mistake they
compute: ``(kind, what, expected, [(mistake, value)], atol, rtol)``. Set by :func:`recording`,
for the test that the recognised mistakes of each check give pairwise different answers."""


class recording:
    """Context manager: record what each comparison computes (see ``_RECORDING``).

    Examples
    --------
    >>> from helpers.checks import check_flops
    >>> with recording() as seen:
    ...     _ = check_flops(1.0)
    >>> [name for name, _ in seen[0][3]][:2]
    ['multiply_adds_or_one_matmul', 'n_d_swapped']
    """

    def __enter__(self):
        global _RECORDING
        self._previous, _RECORDING = _RECORDING, []
        return _RECORDING

    def __exit__(self, *exc):
        global _RECORDING
        _RECORDING = self._previous
        return False


def record(kind, what, expected, candidates, atol=0.0, rtol=0.0):
    """Record one comparison when recording (used by checks with their own comparison loop)."""
    if _RECORDING is not None:
        _RECORDING.append((kind, what, expected, list(candidates), atol, rtol))


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


def _correct(message):
    return CheckResult("correct", message, None)


def _incorrect(mistake, message):
    return CheckResult("incorrect", message, mistake)


def _not_yet(message):
    return CheckResult("not yet", message, None)


def _never_raise(check):
    """Turn any ``Exception`` escaping a check into an "incorrect" result.

    Numerical warnings are silenced around the whole check (comparisons of
    answers such as 1e308 with the expected numbers may overflow); student
    code is run under its own ``catch_warnings`` in :func:`_call_student`.
    """

    @functools.wraps(check)
    def wrapper(*args, **kwargs):
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
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
        return None, _not_yet(f"No {what} yet: compute it and pass it to this check.")
    if isinstance(answer, (str, bytes, dict, set)):
        return None, _incorrect(
            "wrong_type",
            f"Your {what} is a {type(answer).__name__}; give a NumPy array or a nested list of numbers.",
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
            f"Your {what} is not an array of numbers (rows of different lengths, text or "
            "other objects); give a NumPy array or a nested list of numbers.",
        )
    if arr.size == 0:
        return None, _not_yet(f"Your {what} is empty: compute it and pass it to this check.")
    if arr.dtype.kind == "b":
        return None, _incorrect(
            "wrong_type", f"Your {what} holds True/False values; it should hold numbers."
        )
    if arr.dtype.kind == "c":
        return None, _incorrect(
            "complex", f"Your {what} holds complex numbers; attention only uses real numbers."
        )
    arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        return None, _incorrect(
            "not_finite",
            f"Your {what} contains NaN or infinity; every entry should be a finite number.",
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


def _match(answer, expected, mistakes, *, what, atol, rtol=0.0, shape_hint=""):
    """Compare an answer with the expected array and with computed mistakes.

    ``mistakes`` is a list of ``(name, thunk, message)``; a mistake whose value
    equals the expected one (within ``atol``) is skipped, since it cannot be
    told apart from a right answer for these inputs.
    """
    arr, result = _as_real_array(answer, what)
    if result is not None:
        return result
    if _RECORDING is not None:
        _RECORDING.append(("array", what, expected, [(name, _compute(thunk)) for name, thunk, _ in mistakes],
                           atol, rtol))
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
    if arr.shape != expected.shape:
        return _incorrect(
            "wrong_shape",
            f"Your {what} has shape {arr.shape}, but it should have shape {expected.shape}.{shape_hint}",
        )
    return _incorrect(
        "wrong_values",
        f"Your {what} has the right shape but not the right numbers." + _row_hint(arr, expected, atol),
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

    previous = sys.getprofile()
    sys.setprofile(profile)

    def restore():
        sys.setprofile(previous)
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
            return _Call(error=exc, warned=_numeric_warning(caught), used=tuple(dict.fromkeys(used)))
        finally:
            restore()
    return _Call(value=value, warned=_numeric_warning(caught), used=tuple(dict.fromkeys(used)))


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
    exc = call.error
    text = str(exc)
    if len(text) > 120:
        text = text[:117] + "..."
    return _incorrect(
        "raises", f"Your {what} raised {type(exc).__name__}: {text or '(no message)'}."
    )




def _as_number(answer):
    """A float from a real number (or a one-element numeric array), else None. Text is refused."""
    if isinstance(answer, (bool, np.bool_)):
        return None
    if isinstance(answer, numbers.Real):
        return float(answer)
    if isinstance(answer, np.ndarray) and answer.size == 1 and answer.dtype.kind in "iuf":
        return float(answer.reshape(-1)[0])
    return None


def _not_a_number(answer, what):
    """The "incorrect" result for an answer that is not one number; text gets a hint on writing it."""
    if isinstance(answer, str):
        text = answer.strip()
        plain = text.replace(",", "").replace("_", "").replace(" ", "")
        try:
            float(plain)
        except ValueError:
            return _incorrect(
                "not_a_number",
                f"Your {what} is the text {text!r}, not a number. Write the number itself, "
                "without quotes, for example 0.25 or 3e6.",
            )
        return _incorrect(
            "not_a_number",
            f"Your {what} is the text {text!r}, not a number. Write it without quotes: {plain} "
            "(Python also reads 1_000_000 and 1e6).",
        )
    return _incorrect(
        "not_a_number",
        f"Your {what} is a {type(answer).__name__}; give one number, for example 0.25 or 3e6.",
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
    if _RECORDING is not None:
        _RECORDING.append(("number", what, expected, [(name, target) for name, target, _ in mistakes], 0.0, rtol))
    value = _as_number(answer)
    if value is None:
        return _not_a_number(answer, what)
    if not math.isfinite(value):
        return _incorrect("not_finite", f"Your {what} ({value}) is not a finite number.")
    if _near(value, expected, rtol):
        return None
    for name, target, message in mistakes:
        if not _near(target, expected, rtol) and _near(value, target, rtol):
            return _incorrect(name, f"Your {what} is {value:g}. " + message)
    return _incorrect("wrong_value", f"Your {what} is {value:g}, which is not right. {hint}")


def _parts(parts, *, done, empty):
    """Check an exercise with several answers; ``parts`` = ``[(label, answer, verdict)]``.

    ``verdict(answer)`` gives None (right) or an "incorrect" CheckResult. The first
    wrong part is reported; missing parts (None or empty) give "not yet" once the
    given ones are right; ``done`` is the message when every part is right and
    ``empty`` the one when none is given.
    """
    right, missing = [], []
    for label, answer, verdict in parts:
        if _is_empty(answer):
            missing.append(label)
            continue
        result = verdict(answer)
        if result is not None and _RECORDING is None:
            return result
        right.append(label)
    if not right:
        return _not_yet(empty)
    if missing:
        return _not_yet(
            f"So far so good: {_and(right)} {'is' if len(right) == 1 else 'are'} right. "
            f"Now give {_and(missing)}."
        )
    return _correct(done)


