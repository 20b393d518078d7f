"""Self-checks for the homework exercises: "correct", or a specific hint.

Each ``check_*`` function takes a student's answer (an array, a number or a
function) and returns a :class:`CheckResult`. Common mistakes are recognised
*by computing them*: the check builds the answer each mistake would give with
:mod:`helpers.attention` and compares the student's answer with it, so a hint
such as "you scaled by 1/sqrt(d_k)" is only given when the numbers say so.

The checks never raise on a student's answer: any Python object (a string, a
ragged list, NaN, a dict, a function that raises or returns garbage) gives a
:class:`CheckResult`. ``None`` or an empty answer gives "not yet".
Only ``KeyboardInterrupt`` and ``SystemExit`` (and other ``BaseException``
subclasses that are not ``Exception``) pass through. A student function that
never returns cannot be stopped by a check.

Tolerances: hand answers (exercises 1, 2 and the temperature prediction) are
compared with ``atol = 5e-3``, enough for answers written with two decimals;
student functions (softmax, masked attention) with ``atol = rtol = 1e-6``.
When an answer matches several computed mistakes, the first one in the order
listed in each check's docstring is reported.

Checks
------
check_section_5_2_exercise_1 : Section 5.2, exercise 1 (unscaled attention by hand)
check_i_am_happy_weights     : the exact 3x3 weights of "I am happy" (scaled, d_k = 3)
check_stable_softmax         : a student's softmax function
check_masked_attention       : a student's masked_attention(q, k, v, mask) function
check_flops                  : Section 5.2, exercise 3 (FLOPs for n = 1000, d = 512)
check_temperature_prediction : the "cat sat" weights at a given temperature
"""

from __future__ import annotations

import functools
import html
import math
import numbers
import warnings
from dataclasses import dataclass

import numpy as np

from helpers import attention, examples

__all__ = [
    "CheckResult",
    "check_section_5_2_exercise_1",
    "check_i_am_happy_weights",
    "check_stable_softmax",
    "check_masked_attention",
    "check_flops",
    "check_temperature_prediction",
]

HAND_ATOL = 5e-3
"""Absolute tolerance for answers computed by hand and written with 2 decimals."""

CODE_TOL = 1e-6
"""Absolute and relative tolerance for the output of a student's function."""

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
    return f" Rows {good} (counting from 0) are right; rows {bad} are not."


def _match(answer, expected, mistakes, *, what, atol, rtol=0.0, shape_hint=""):
    """Compare an answer with the expected array and with computed mistakes.

    ``mistakes`` is a list of ``(name, thunk, message)``; a mistake whose value
    equals the expected one (within ``atol``) is skipped, since it cannot be
    told apart from a right answer for these inputs.
    """
    arr, result = _as_real_array(answer, what)
    if result is not None:
        return result
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


def _call_student(fn, *args):
    """Call ``fn(*args)`` on copies of the arguments; record errors and numeric warnings."""
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    with warnings.catch_warnings(record=True) as caught, np.errstate(all="warn"):
        warnings.simplefilter("always")
        try:
            value = fn(*args)
        except Exception as exc:  # noqa: BLE001 - the student's code may raise anything
            return _Call(error=exc, warned=_numeric_warning(caught))
    return _Call(value=value, warned=_numeric_warning(caught))


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


# ---------------------------------------------------------------------------
# Exercise 1 of Section 5.2
# ---------------------------------------------------------------------------


@_never_raise
def check_section_5_2_exercise_1(out, weights=None):
    """Check Section 5.2, exercise 1: the unscaled attention output, by hand.

    Q = [[1, 0], [0, 1]], K = V = [[1, 1], [1, 0]]; Section 5.2 works
    *unscaled*, so the answer is ``softmax(Q K^T) V`` (about
    [[1, 0.5], [1, 0.7311]]), with weights about [[0.5, 0.5], [0.7311, 0.2689]].

    Parameters
    ----------
    out : array_like, shape (2, 2)
        The attention output, one row per query.
    weights : array_like, shape (2, 2), optional
        The attention weights as well, checked when given.

    Returns
    -------
    CheckResult
        Mistakes recognised, in this order (``mistake`` names): ``scaled``
        (divided the scores by sqrt(d_k)), ``divided_by_d_k``, ``wrong_axis``
        (softmax over the queries, axis=0), ``no_transpose`` (Q @ K instead
        of Q @ K.T; here K is symmetric, so this gives the right answer and is
        never reported), ``returned_weights`` (the weights instead of the
        output), ``no_softmax`` (scores @ V), ``transposed``, then
        ``wrong_shape`` / ``wrong_values``; ``wrong_type``, ``complex``,
        ``not_finite`` for answers that are not finite real numbers.

    Examples
    --------
    >>> print(check_section_5_2_exercise_1([[1, 0.5], [1, 0.73]]))
    ✅ correct: Right: softmax(Q K^T) V, unscaled as in Section 5.2.
    >>> check_section_5_2_exercise_1([[1, 0.5], [1, 0.67]]).mistake
    'scaled'
    >>> check_section_5_2_exercise_1(None).status
    'not yet'
    """
    ex = examples.load_example("section_5_2_exercise_1")
    q, k, v = ex.q, ex.k, ex.v
    d_k = q.shape[-1]

    def attn(scale=1.0, axis=-1, keys=None):
        w = attention.softmax(q @ (k.T if keys is None else keys) * scale, axis=axis)
        return w @ v, w

    out_exact, w_exact = attn()
    out_mistakes = [
        ("scaled", lambda: attn(scale=1 / math.sqrt(d_k))[0],
         "You divided the scores by sqrt(d_k); Section 5.2 works unscaled: softmax(Q K^T) V."),
        ("divided_by_d_k", lambda: attn(scale=1 / d_k)[0],
         "You divided the scores by d_k; Section 5.2 does not scale at all (and the "
         "scaled version divides by sqrt(d_k), not d_k)."),
        ("wrong_axis", lambda: attn(axis=0)[0],
         "Your softmax normalised the columns (axis=0); normalise each row over the keys (axis=-1)."),
        ("no_transpose", lambda: attn(keys=k)[0],
         "You used Q @ K; the scores are Q @ K.T (each query against each key)."),
        ("returned_weights", lambda: w_exact,
         "These are the attention weights; the output multiplies them by V."),
        ("no_softmax", lambda: (q @ k.T) @ v,
         "You multiplied the raw scores by V; turn each row of scores into weights with softmax first."),
        ("transposed", lambda: out_exact.T,
         "Your output is transposed: one row per query, one column per value dimension."),
    ]
    result = None
    if not _is_empty(out):
        result = _match(out, out_exact, out_mistakes, what="output", atol=HAND_ATOL)
        if result is not None:
            return result
    if weights is None or (_is_empty(weights) and _is_empty(out)):
        if _is_empty(out):
            return _not_yet("No output yet: compute softmax(Q K^T) V and pass it to this check.")
        return _correct("Right: softmax(Q K^T) V, unscaled as in Section 5.2.")
    w_mistakes = [
        ("scaled", lambda: attn(scale=1 / math.sqrt(d_k))[1],
         "Your weights are scaled by 1/sqrt(d_k); Section 5.2 works unscaled: softmax(Q K^T)."),
        ("divided_by_d_k", lambda: attn(scale=1 / d_k)[1],
         "Your weights come from scores divided by d_k; Section 5.2 does not scale."),
        ("wrong_axis", lambda: attn(axis=0)[1],
         "Your softmax normalised the columns (axis=0); each row (one query) should sum to 1."),
        ("no_softmax", lambda: q @ k.T,
         "These are the raw scores Q K^T; the weights are their softmax, row by row."),
        ("transposed", lambda: w_exact.T, "Your weights are transposed: one row per query."),
    ]
    w_result = _match(weights, w_exact, w_mistakes, what="weights", atol=HAND_ATOL)
    if _is_empty(out):
        if w_result is None:
            return _not_yet("Your weights are right; now multiply them by V for the output.")
        return w_result
    if w_result is None:
        return _correct("Right: the weights softmax(Q K^T) and the output softmax(Q K^T) V, unscaled.")
    if w_result.status == "not yet":
        return _correct("Right: softmax(Q K^T) V, unscaled as in Section 5.2.")
    return CheckResult(w_result.status, "Your output is right, but: " + w_result.message, w_result.mistake)


# ---------------------------------------------------------------------------
# "I am happy": the exact weights
# ---------------------------------------------------------------------------


@_never_raise
def check_i_am_happy_weights(weights):
    """Check the exact 3x3 attention weights of "I am happy" (scaled, d_k = 3).

    Parameters
    ----------
    weights : array_like, shape (3, 3)
        ``softmax(Q K^T / sqrt(3))``, one row per query.

    Returns
    -------
    CheckResult
        Mistakes recognised, in this order: ``document_rows`` (a row equal to
        the document's printed Step 5 row for "am" or "happy", which is
        wrong), ``unscaled``, ``divided_by_d_k``, ``wrong_axis``
        (``transposed`` coincides with it here, since Q = K), then
        ``wrong_shape`` / ``wrong_values``; ``wrong_type``, ``complex``,
        ``not_finite``.

    Examples
    --------
    >>> w = [[0.2994, 0.3321, 0.3685], [0.2514, 0.3260, 0.4227], [0.2078, 0.3149, 0.4773]]
    >>> print(check_i_am_happy_weights(w))
    ✅ correct: Right: softmax(Q K^T / sqrt(3)), row by row.
    >>> check_i_am_happy_weights([[0.30, 0.33, 0.37], [0.26, 0.37, 0.37], [0.21, 0.32, 0.48]]).mistake
    'document_rows'
    """
    ex = examples.load_example("i_am_happy")
    q, k = ex.q, ex.k
    d_k = q.shape[-1]
    scores = q @ k.T
    exact = attention.softmax(scores / math.sqrt(d_k))
    arr, result = _as_real_array(weights, "weights")
    if result is not None:
        return result
    if arr.shape == exact.shape and not _close(arr, exact, HAND_ATOL):
        wrong_rows = []
        for fig_id in ("weights_row1", "weights_row2"):
            fig = ex.figure(fig_id)
            i = fig.index[0]
            if np.allclose(arr[i], fig.printed, rtol=0, atol=HAND_ATOL) and not np.allclose(
                arr[i], exact[i], rtol=0, atol=HAND_ATOL
            ):
                wrong_rows.append(ex.tokens[i])
        if wrong_rows:
            names = " and ".join(f"'{t}'" for t in wrong_rows)
            return _incorrect(
                "document_rows",
                f"Your row for {names} is the document's Step 5 row, which is wrong: it does not "
                "follow from the scaled scores. Recompute the softmax of those scores.",
            )
    mistakes = [
        ("unscaled", lambda: attention.softmax(scores),
         "You forgot to divide the scores by sqrt(d_k) = sqrt(3) before the softmax."),
        ("divided_by_d_k", lambda: attention.softmax(scores / d_k),
         "You divided the scores by d_k = 3; divide by sqrt(d_k) = 1.732 instead."),
        ("wrong_axis", lambda: attention.softmax(scores / math.sqrt(d_k), axis=0),
         "Your softmax normalised the columns (axis=0); each row (one query) should sum to 1."),
    ]
    result = _match(arr, exact, mistakes, what="weights", atol=HAND_ATOL)
    # Not ``result or ...``: an incorrect CheckResult is falsy.
    return result if result is not None else _correct("Right: softmax(Q K^T / sqrt(3)), row by row.")


# ---------------------------------------------------------------------------
# A student's softmax
# ---------------------------------------------------------------------------


@_never_raise
def check_stable_softmax(fn):
    """Check a student's numerically stable softmax function ``fn(x)``.

    ``fn`` is called with one float array and should normalise over the last
    axis. It is tried on a small row, on a 2-D array (rows), on
    [1000, 1001, 1002] (overflow without the max subtraction) and on
    [-1000, -1001] (underflow to 0 / 0). Its warnings are recorded, never
    shown; its exceptions are caught.

    Parameters
    ----------
    fn : callable
        The student's softmax.

    Returns
    -------
    CheckResult
        Mistakes recognised: ``not_callable``, ``raises``, ``wrong_shape``
        (including results that are not arrays of real numbers),
        ``not_normalised`` (does not sum to 1), ``wrong_values``,
        ``wrong_axis`` (2-D input normalised over the columns or the whole
        array), ``no_max_subtraction`` (overflow, NaN, inf or a warning on the
        large or very negative inputs).

    Examples
    --------
    >>> def softmax(x):
    ...     e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    ...     return e / e.sum(axis=-1, keepdims=True)
    >>> print(check_stable_softmax(softmax))
    ✅ correct: Right: your softmax sums to 1 along the last axis and survives logits of ±1000.
    >>> check_stable_softmax(lambda x: np.exp(x) / np.exp(x).sum(axis=-1, keepdims=True)).mistake
    'no_max_subtraction'
    """
    result = _check_callable(fn, "softmax")
    if result is not None:
        return result
    small = np.array([1.0, 2.0, 3.0])
    rows = np.array([[1.0, 2.0, 3.0], [0.5, 0.5, -1.0]])
    for x in (small, rows):
        call = _call_student(fn, x)
        if call.error is not None:
            return _raised(call, "softmax")
        got = _float_result(call.value)
        expected = attention.softmax(x)
        if got is None or got.shape != x.shape:
            shape = getattr(got, "shape", None)
            desc = f"shape {shape}" if got is not None else f"a {type(call.value).__name__}"
            return _incorrect(
                "wrong_shape",
                f"For an input of shape {x.shape} your softmax returned {desc}; it should return "
                "an array of numbers of the same shape.",
            )
        if _close(got, expected, CODE_TOL, CODE_TOL):
            continue
        if x.ndim == 2:
            for axis, where in ((0, "each column (axis=0)"), (None, "the whole array")):
                if _close(got, attention.softmax(x, axis=axis), CODE_TOL, CODE_TOL):
                    return _incorrect(
                        "wrong_axis",
                        f"On a 2-D input your softmax normalised {where}; normalise each row "
                        "over the last axis (axis=-1, keepdims=True).",
                    )
        if np.all(np.isfinite(got)) and not np.allclose(got.sum(axis=-1), 1.0, rtol=0, atol=CODE_TOL):
            return _incorrect(
                "not_normalised",
                "Your softmax does not sum to 1 along the last axis: divide the exponentials "
                "by their sum.",
            )
        return _incorrect(
            "wrong_values",
            f"Your softmax of {x.tolist()} is not right: it should be exp(x) / sum(exp(x)) "
            "over the last axis.",
        )
    for x in (np.array([1000.0, 1001.0, 1002.0]), np.array([-1000.0, -1001.0])):
        call = _call_student(fn, x)
        got = None if call.error is not None else _float_result(call.value)
        if call.error is not None and not isinstance(call.error, (FloatingPointError, OverflowError)):
            return _raised(call, "softmax")
        if got is None or call.warned or got.shape != x.shape or not np.all(np.isfinite(got)):
            return _incorrect(
                "no_max_subtraction",
                f"Your softmax breaks on {x.tolist()} (overflow, NaN or a warning): subtract the "
                "row's maximum before np.exp; the result does not change, but exp never overflows.",
            )
        if not _close(got, attention.softmax(x), CODE_TOL, CODE_TOL):
            return _incorrect(
                "wrong_values",
                f"Your softmax of {x.tolist()} is not right; after subtracting the maximum, "
                "divide the exponentials by their sum.",
            )
    return _correct(
        "Right: your softmax sums to 1 along the last axis and survives logits of ±1000."
    )


# ---------------------------------------------------------------------------
# A student's masked attention
# ---------------------------------------------------------------------------


def _masked_cases():
    """Seeded q, k, v and three masks: padding, causal, and one with an empty row."""
    rng = np.random.default_rng(52)
    n, m, d_k, d_v = 4, 5, 3, 2
    q = rng.normal(size=(n, d_k))
    k = rng.normal(size=(m, d_k))
    v = rng.normal(size=(m, d_v))
    padding = np.broadcast_to(attention.padding_mask(3, m)[0], (n, m)).copy()
    causal = attention.causal_mask(n, m)
    empty_row = padding.copy()
    empty_row[1] = False
    return q, k, v, [("padding", padding), ("causal", causal), ("empty_row", empty_row)]


@_never_raise
def check_masked_attention(fn):
    """Check a student's ``masked_attention(q, k, v, mask)``.

    ``mask`` is boolean with True = "may attend", as in
    :func:`helpers.attention.scaled_dot_product_attention`, and the result is
    compared with that kernel (scaled by 1/sqrt(d_k)) on seeded inputs with
    a padding mask, a causal mask and a mask whose row 1 allows no key (this
    collection expects an all-zero output row there). ``fn`` may return the
    output or a tuple ``(output, weights)``.

    Parameters
    ----------
    fn : callable
        The student's function.

    Returns
    -------
    CheckResult
        Mistakes recognised: ``not_callable``, ``raises``, ``wrong_shape``,
        ``mask_ignored``, ``mask_inverted`` (True treated as blocked),
        ``unscaled``, ``nan_for_masked_row`` (a fully masked row gives NaN),
        ``masked_row_not_zero`` (it gives the mean of the values, as with a
        large negative number instead of -inf), ``wrong_values``.

    Examples
    --------
    >>> def masked_attention(q, k, v, mask):
    ...     return attention.scaled_dot_product_attention(q, k, v, mask)[0]
    >>> print(check_masked_attention(masked_attention))
    ✅ correct: Right: padding and causal masks work, and a row with nothing to attend to gives zeros.
    >>> check_masked_attention(lambda q, k, v, mask: attention.scaled_dot_product_attention(q, k, v)).mistake
    'mask_ignored'
    """
    result = _check_callable(fn, "masked_attention")
    if result is not None:
        return result
    q, k, v, cases = _masked_cases()
    sdpa = attention.scaled_dot_product_attention
    for case, mask in cases:
        call = _call_student(fn, q, k, v, mask)
        if call.error is not None:
            return _raised(call, "masked_attention")
        value = call.value
        if isinstance(value, tuple) and len(value) == 2:
            value = value[0]
        got = _float_result(value)
        expected = sdpa(q, k, v, mask)[0]
        if got is None or got.shape != expected.shape:
            desc = f"shape {got.shape}" if got is not None else f"a {type(value).__name__}"
            return _incorrect(
                "wrong_shape",
                f"For q {q.shape}, k {k.shape}, v {v.shape} your function returned {desc}; "
                f"the output should have shape {expected.shape} (n, d_v).",
            )
        if _close(got, expected, CODE_TOL, CODE_TOL):
            continue
        mistakes = [
            ("mask_ignored", lambda: sdpa(q, k, v)[0],
             "Your output does not depend on the mask: set the scores of masked keys to -inf "
             "(or drop them) before the softmax."),
            ("mask_inverted", lambda: sdpa(q, k, v, ~mask)[0],
             "Your mask works the wrong way round: here True means 'may attend', so block the "
             "keys where the mask is False."),
            ("unscaled", lambda: sdpa(q, k, v, mask, scale=1.0)[0],
             "The masking is right, but you forgot to divide the scores by sqrt(d_k)."),
        ]
        for name, thunk, message in mistakes:
            value = _compute(thunk)
            if not _close(value, expected, CODE_TOL, CODE_TOL) and _close(got, value, CODE_TOL, CODE_TOL):
                return _incorrect(name, message)
        empty = ~mask.any(axis=-1)
        if empty.any():
            rest_ok = _close(got[~empty], expected[~empty], CODE_TOL, CODE_TOL)
            if rest_ok and np.all(np.isnan(got[empty])):
                return _incorrect(
                    "nan_for_masked_row",
                    "A query row with no allowed key gives NaN (softmax of all -inf); this "
                    "collection expects an all-zero output row there.",
                )
            mean_v = np.broadcast_to(v.mean(axis=0), got[empty].shape)
            if rest_ok and _close(got[empty], mean_v, CODE_TOL, CODE_TOL):
                return _incorrect(
                    "masked_row_not_zero",
                    "A query row with no allowed key gives the mean of the values (a large "
                    "negative number instead of -inf); this collection expects an all-zero row.",
                )
        return _incorrect(
            "wrong_values",
            f"Your output with the {case.replace('_', ' ')} mask is not right: softmax(q k^T / "
            "sqrt(d_k)) with the masked scores set to -inf, then times v.",
        )
    return _correct(
        "Right: padding and causal masks work, and a row with nothing to attend to gives zeros."
    )


# ---------------------------------------------------------------------------
# Exercise 3 of Section 5.2: FLOPs
# ---------------------------------------------------------------------------


def _as_number(answer):
    """A float from a number or a numeric string ("2.048e9", "2,048,000,000"), else None."""
    if isinstance(answer, (bool, np.bool_)):
        return None
    if isinstance(answer, str):
        text = answer.strip().replace(",", "").replace("_", "").replace(" ", "")
        try:
            return float(text)
        except ValueError:
            return None
    if isinstance(answer, numbers.Real):
        return float(answer)
    if isinstance(answer, np.ndarray) and answer.size == 1 and answer.dtype.kind in "iuf":
        return float(answer.reshape(-1)[0])
    return None


@_never_raise
def check_flops(answer):
    """Check Section 5.2, exercise 3: the FLOPs of attention for n = 1000, d = 512.

    The convention of :func:`helpers.attention.attention_flops`: a multiply-add
    is 2 FLOPs and the two matrix products are counted, Q K^T (2 n^2 d) and
    weights @ V (2 n^2 d), so the answer is 4 n^2 d = 2.048e9. The softmax
    (a few n^2) is left out; answers within 2.5 % are accepted (so 2e9 and
    2.048e9 plus a softmax term both pass).

    Decision on 1.024e9: it is marked **incorrect** (``multiply_adds_or_one_matmul``),
    because the exercise asks for floating-point operations; the message says
    that it is right as a count of multiply-adds, and that it is also what one
    of the two products alone costs in FLOPs, since the two readings give the
    same number.

    Parameters
    ----------
    answer : number or str
        A number, or a string such as "2.048e9" or "2,048,000,000".

    Returns
    -------
    CheckResult
        Mistakes recognised: ``multiply_adds_or_one_matmul`` (1.024e9),
        ``n2d_only`` (n^2 d = 5.12e8: one product, multiply-adds),
        ``counted_scores`` (n^2 = 1e6), ``n_d_swapped`` (n d^2 = 2.62e8; 4 n d^2
        is not listed, being within 2.5 % of 1.024e9),
        ``not_a_number``, ``not_finite``, ``wrong_value``.

    Examples
    --------
    >>> print(check_flops(2.048e9))
    ✅ correct: Right: 4 n^2 d = 2,048,000,000 FLOPs (2 n^2 d for Q K^T and 2 n^2 d for weights @ V).
    >>> check_flops("1,024,000,000").mistake
    'multiply_adds_or_one_matmul'
    """
    if _is_empty(answer):
        return _not_yet("No answer yet: how many floating-point operations for n = 1000, d = 512?")
    value = _as_number(answer)
    if value is None:
        return _incorrect("not_a_number", "Give your answer as one number, for example 1.5e9.")
    if not math.isfinite(value):
        return _incorrect("not_finite", "Your answer is not a finite number.")
    given = examples.load_example("complexity_5_2").given
    n, d = int(given["exercise_3_n"]), int(given["exercise_3_d"])
    exact = attention.attention_flops(n, n, d, d)

    def near(x):
        return abs(value - x) <= 0.025 * abs(x)

    if near(exact):
        return _correct(
            f"Right: 4 n^2 d = {exact:,} FLOPs (2 n^2 d for Q K^T and 2 n^2 d for weights @ V)."
        )
    mistakes = [
        (exact // 2, "multiply_adds_or_one_matmul",
         f"That is {exact // 2:,}: right as a count of multiply-adds, but a multiply-add is 2 "
         "FLOPs. It is also the FLOPs of only one of the two products (Q K^T or weights @ V, "
         "2 n^2 d each); count both, with 2 FLOPs per multiply-add."),
        (n * n * d, "n2d_only",
         "n^2 d is the multiply-adds of one product only; there are two products (Q K^T and "
         "weights @ V) and each multiply-add is 2 FLOPs."),
        (n * n, "counted_scores",
         "n^2 is the number of scores (query-key pairs), not of operations: each score costs "
         "a dot product of length d, and the weights @ V product costs as much again."),
        (n * d * d, "n_d_swapped",
         "You swapped n and d: the products cost 2 n^2 d each (n x n scores, each a length-d dot product)."),
    ]
    for target, name, message in mistakes:
        if near(target):
            return _incorrect(name, message)
    return _incorrect(
        "wrong_value",
        "Not quite: count the multiply-adds of Q K^T (n x n scores, each a dot product of length d) "
        "and of weights @ V, at 2 FLOPs each.",
    )


# ---------------------------------------------------------------------------
# "cat sat" at a temperature
# ---------------------------------------------------------------------------


@_never_raise
def check_temperature_prediction(weights, temperature):
    """Check predicted "cat sat" weights at a temperature: softmax(Q K^T / sqrt(d_k) / T).

    Parameters
    ----------
    weights : array_like, shape (2, 2)
        The predicted weights, one row per query.
    temperature : float
        The temperature T (finite, > 0) the prediction is for.

    Returns
    -------
    CheckResult
        Mistakes recognised, in this order: ``multiplied_by_temperature``
        (scores times T), ``forgot_scaling`` (no 1/sqrt(d_k)),
        ``multiplied_and_unscaled`` (both), then ``wrong_shape`` / ``wrong_values``; ``bad_temperature`` when T is
        not a finite number > 0; ``wrong_type``, ``complex``, ``not_finite``.
        At T = 1 multiplying and dividing agree, so that mistake cannot show;
        softmax over the wrong axis is not listed, because Q = K makes the
        weights symmetric, so it gives the right answer.

    Examples
    --------
    >>> print(check_temperature_prediction([[0.62, 0.38], [0.38, 0.62]], 2))
    ✅ correct: Right: at T = 2 the weights are softmax(Q K^T / sqrt(4) / 2).
    >>> check_temperature_prediction([[0.88, 0.12], [0.12, 0.88]], 2).mistake
    'multiplied_by_temperature'
    """
    t = _as_number(temperature)
    if t is None or not math.isfinite(t) or t <= 0:
        return _incorrect(
            "bad_temperature", f"The temperature must be a finite number > 0: got {temperature!r}."
        )
    ex = examples.load_example("cat_sat")
    q, k = ex.q, ex.k
    d_k = q.shape[-1]
    scores = q @ k.T
    scaled = scores / math.sqrt(d_k)
    exact = attention.softmax(scaled, temperature=t)
    mistakes = [
        ("multiplied_by_temperature", lambda: attention.softmax(scaled * t),
         "You multiplied the scores by T; divide them by T (a high temperature flattens the weights)."),
        ("forgot_scaling", lambda: attention.softmax(scores / t),
         f"You divided by T but forgot the 1/sqrt(d_k) = 1/{math.sqrt(d_k):g} scaling of the scores."),
        ("multiplied_and_unscaled", lambda: attention.softmax(scores * t),
         "You multiplied by T and forgot 1/sqrt(d_k): the weights are softmax(Q K^T / sqrt(d_k) / T)."),
    ]
    result = _match(weights, exact, mistakes, what="weights", atol=HAND_ATOL)
    return result if result is not None else _correct(
        f"Right: at T = {t:g} the weights are softmax(Q K^T / sqrt({d_k}) / {t:g})."
    )
