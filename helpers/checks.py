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

Tolerances: hand answers (arrays a student may write with two decimals) are
compared with ``atol = 5e-3``; entropies with ``atol = 1e-3``; student
functions (softmax, masked attention, self-attention) with ``atol = rtol =
1e-6``; variances and stds that may come from a simulation with ``rtol = 3 %``
(10 % for the "journey" document's dimension-100 printout), initialisation
stds with ``rtol = 1 %``. When an answer matches several computed mistakes,
the first one in the order listed in each check's docstring is reported.

Checks, by exercise notebook (``exercises/solutions/``)
-------------------------------------------------------
E1, *Section 5.2: Dot-Product Attention — The Core Mechanism* (its five exercises):

check_section_5_2_exercise_1 : exercise 1, unscaled attention by hand
check_section_5_2_exercise_2 : exercise 2, the "cat sat mat" weights to draw
check_flops                  : exercise 3, FLOPs for n = 1000, d = 512
check_section_5_2_exercise_4 : exercise 4, scores with W^Q = W^K, and who scores itself highest
check_attention_entropy      : exercise 5, the entropy of each row of weights

E2, *Day 43 - Scaled Dot-Product Attention Deep Dive* ("I am happy"):

check_i_am_happy_weights     : the exact 3x3 weights (scaled, d_k = 3)
check_i_am_happy_context     : the exact Step 6 context vectors

E3, *AIAYN Part 2: Scaled Dot-Product Attention* ("cat sat"):

check_temperature_prediction : the "cat sat" weights at a given temperature
check_why_scale_512          : the variance and std of q·k at d_k = 512, and after scaling
check_init_std               : the std of the document's initialisation (He) and Xavier's

E4, *The Engine of Transformers: Building Scaled Dot-Product Attention* ("journey"):

check_journey_scores_row     : the unscaled scores of the query "journey"
check_journey_weights_row    : its attention weights
check_self_attention         : a student's self-attention forward pass (function or class)
check_journey_variance_d100  : the variance of q·k at d = 100, before and after scaling

E5, *Scaled Dot-Product Attention* (the definition page):

check_stable_softmax         : a student's softmax function (the log-sum-exp trick)
check_masked_attention       : a student's masked_attention(q, k, v, mask) function
check_definition_shapes      : the shapes for n = 3 queries, m = 5 keys, d_k = 4, d_v = 6
"""

from __future__ import annotations

import functools
import html
import math
import numbers
import re
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
    "check_section_5_2_exercise_2",
    "check_section_5_2_exercise_4",
    "check_attention_entropy",
    "check_i_am_happy_context",
    "check_why_scale_512",
    "check_init_std",
    "check_journey_scores_row",
    "check_journey_weights_row",
    "check_self_attention",
    "check_journey_variance_d100",
    "check_definition_shapes",
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


def _quoted(tokens):
    return " and ".join(f"'{t}'" for t in tokens)


def _near(value, target, rtol):
    return abs(value - target) <= rtol * abs(target)


def _number_verdict(answer, *, what, expected, mistakes, rtol, hint):
    """None when ``answer`` is ``expected`` within ``rtol``, else an "incorrect" result.

    ``mistakes`` is a list of ``(name, value, message)``; a mistake whose value is
    within ``rtol`` of the expected one is skipped (it cannot be told apart).
    """
    value = _as_number(answer)
    if value is None:
        return _incorrect("not_a_number", f"Give {what} as one number, for example 0.5 or 1e3.")
    if not math.isfinite(value):
        return _incorrect("not_finite", f"Your {what} is not a finite number.")
    if _near(value, expected, rtol):
        return None
    for name, target, message in mistakes:
        if not _near(target, expected, rtol) and _near(value, target, rtol):
            return _incorrect(name, message)
    return _incorrect("wrong_value", f"Your {what} ({value:g}) is not right. {hint}")


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
        if result is not None:
            return result
        right.append(label)
    if not right:
        return _not_yet(empty)
    if missing:
        return _not_yet(f"So far so good ({', '.join(right)} right); now {', '.join(missing)}.")
    return _correct(done)


# ---------------------------------------------------------------------------
# Exercise 2 of Section 5.2: the weights of "cat sat mat", drawn
# ---------------------------------------------------------------------------


@_never_raise
def check_section_5_2_exercise_2(weights):
    """Check Section 5.2, exercise 2: the unscaled weights of the "cat sat mat" sentence.

    The sentence of the section's worked example (``load_example("cat_sat_mat")``,
    Q = K = V = X, W = I); the answer is ``softmax(Q K^T)`` with no scaling,
    one row per query, about [[0.4223, 0.1554, 0.4223], [0.1554, 0.4223,
    0.4223], [0.2119, 0.2119, 0.5761]].

    Parameters
    ----------
    weights : array_like, shape (3, 3)
        The attention weights, one row per query.

    Returns
    -------
    CheckResult
        Mistakes recognised, in this order: ``scaled`` (divided the scores by
        sqrt(d_k)), ``divided_by_d_k``, ``wrong_axis`` (softmax over the
        queries; with Q = K the scores are symmetric, so this is also the
        transposed matrix), ``no_softmax`` (the raw scores),
        ``returned_output`` (weights @ V), ``wrong_shape``, then
        ``document_rows`` (a row equal to the section's printed Step 2 row for
        "sat" or "mat", which is wrong) before ``wrong_values``;
        ``wrong_type``, ``complex``, ``not_finite``.

    Examples
    --------
    >>> w = [[0.42, 0.16, 0.42], [0.16, 0.42, 0.42], [0.21, 0.21, 0.58]]
    >>> print(check_section_5_2_exercise_2(w))
    ✅ correct: Right: softmax(Q K^T) row by row, unscaled as in Section 5.2; every row sums to 1.
    >>> check_section_5_2_exercise_2([[0.42, 0.16, 0.42], [0.18, 0.33, 0.49], [0.18, 0.18, 0.64]]).mistake
    'document_rows'
    """
    ex = examples.load_example("cat_sat_mat")
    q, k, v = ex.q, ex.k, ex.v
    d_k = q.shape[-1]
    scores = q @ k.T
    exact = attention.softmax(scores)
    arr, result = _as_real_array(weights, "weights")
    if result is not None:
        return result
    mistakes = [
        ("scaled", lambda: attention.softmax(scores / math.sqrt(d_k)),
         "You divided the scores by sqrt(d_k); Section 5.2 works unscaled: softmax(Q K^T)."),
        ("divided_by_d_k", lambda: attention.softmax(scores / d_k),
         "You divided the scores by d_k; Section 5.2 does not scale them at all."),
        ("wrong_axis", lambda: attention.softmax(scores, axis=0),
         "Your softmax normalised the columns (axis=0); normalise each row over the keys "
         "(axis=-1). Here Q = K, so this is also the right matrix transposed."),
        ("no_softmax", lambda: scores,
         "These are the raw scores Q K^T; the weights are their softmax, row by row."),
        ("returned_output", lambda: exact @ v,
         "This is the output (weights @ V); the exercise asks for the weights themselves."),
    ]
    result = _match(arr, exact, mistakes, what="weights", atol=HAND_ATOL)
    if result is not None and result.mistake == "wrong_values":
        rows = _document_rows(arr, ex, ("weights_row1", "weights_row2"), exact, HAND_ATOL)
        if rows:
            return _incorrect(
                "document_rows",
                f"Your row for {_quoted(ex.tokens[i] for i in rows)} is the one printed in the "
                "section's Step 2, which is wrong: it does not follow from the scores. Recompute "
                "the softmax of those rows.",
            )
    return result if result is not None else _correct(
        "Right: softmax(Q K^T) row by row, unscaled as in Section 5.2; every row sums to 1."
    )


# ---------------------------------------------------------------------------
# Exercise 4 of Section 5.2: a shared projection W^Q = W^K
# ---------------------------------------------------------------------------


def _as_token_set(answer, tokens):
    """A set of row indices from token names (any case) or integer indices, else None."""
    if isinstance(answer, str):
        items = [answer]
    elif isinstance(answer, np.ndarray):
        items = list(answer.ravel())
    elif isinstance(answer, (list, tuple, set, frozenset)):
        items = list(answer)
    else:
        return None
    lower = [t.lower() for t in tokens]
    found = set()
    for item in items:
        if isinstance(item, str):
            name = item.strip().strip("'\"").lower()
            if name not in lower:
                return None
            found.add(lower.index(name))
        elif isinstance(item, numbers.Integral) and not isinstance(item, (bool, np.bool_)):
            if not 0 <= int(item) < len(tokens):
                return None
            found.add(int(item))
        else:
            return None
    return found


@_never_raise
def check_section_5_2_exercise_4(scores, favourites=None):
    """Check Section 5.2, exercise 4: the scores with one shared projection W^Q = W^K = W.

    The inputs X of the "journey" sentence and W = its ``w_q``
    (``load_example("journey")``): the unscaled scores ``S = (X W)(X W)^T``, a
    symmetric, positive semi-definite 6 x 6 matrix. ``favourites`` answers part
    (b): the tokens whose self-score S_ii is the largest score of their row.
    Only "journey" does: a shared projection guarantees S_ij <= (S_ii + S_jj) / 2,
    so the token with the largest self-score scores itself highest, but no
    other token has to.

    Parameters
    ----------
    scores : array_like, shape (6, 6)
        The unscaled scores with the shared projection.
    favourites : list of str or int, optional
        Token names (any case) or row indices; ``[]`` means "none".

    Returns
    -------
    CheckResult
        Mistakes recognised for ``scores``, in this order:
        ``separate_projections`` ((X W_q)(X W_k)^T: W^K != W^Q, not symmetric),
        ``shared_w_k`` (shared the key matrix instead), ``no_projection``
        (X X^T), ``scaled`` (divided by sqrt(d_k)), ``divided_by_d_k``,
        ``feature_gram`` ((X W)^T (X W), the transpose on the wrong factor),
        ``returned_weights`` (softmax of the scores), then ``wrong_shape`` /
        ``wrong_values``. For ``favourites``: ``every_token`` (assumed each
        token scores itself highest), ``no_token``, ``not_tokens`` (not names
        or indices of the six tokens), ``wrong_tokens``.

    Examples
    --------
    >>> ex = examples.load_example("journey")
    >>> p = ex.inputs @ ex.w_q
    >>> print(check_section_5_2_exercise_4(p @ p.T, ["journey"]))
    ✅ correct: Right: S = (X W)(X W)^T is symmetric and only 'journey' scores itself highest.
    >>> check_section_5_2_exercise_4((ex.inputs @ ex.w_q) @ (ex.inputs @ ex.w_k).T).mistake
    'separate_projections'
    """
    ex = examples.load_example("journey")
    x, w_q, w_k = ex.inputs, ex.w_q, ex.w_k
    d_k = w_q.shape[-1]
    p = x @ w_q
    exact = p @ p.T
    n = exact.shape[0]
    fav_given = not (favourites is None or (isinstance(favourites, str) and not favourites.strip()))
    if _is_empty(scores) and not fav_given:
        return _not_yet("No scores yet: compute S = (X W)(X W)^T with W = W_q of the journey example.")
    if not _is_empty(scores):
        mistakes = [
            ("separate_projections", lambda: (x @ w_q) @ (x @ w_k).T,
             "These are the scores with separate projections, (X W_q)(X W_k)^T, which are not "
             "symmetric; the exercise shares one matrix: W^Q = W^K = W_q."),
            ("shared_w_k", lambda: (x @ w_k) @ (x @ w_k).T,
             "You shared W_k; the exercise shares the query matrix W_q for both roles."),
            ("no_projection", lambda: x @ x.T,
             "These are X X^T, the scores without any projection; project first: (X W)(X W)^T."),
            ("scaled", lambda: exact / math.sqrt(d_k),
             "You divided by sqrt(d_k); Section 5.2 works unscaled (scaling would not change "
             "the symmetry anyway)."),
            ("divided_by_d_k", lambda: exact / d_k,
             "You divided by d_k; Section 5.2 does not scale the scores."),
            ("feature_gram", lambda: p.T @ p,
             "This is (X W)^T (X W), a d_k x d_k matrix over features; the scores pair tokens: "
             "(X W)(X W)^T, n x n."),
            ("returned_weights", lambda: attention.softmax(exact),
             "These are the weights softmax(S); the exercise asks for the scores S themselves."),
        ]
        result = _match(scores, exact, mistakes, what="scores", atol=HAND_ATOL)
        if result is not None:
            return result
        if not fav_given:
            return _correct("Right: with W^Q = W^K = W the scores (X W)(X W)^T are symmetric.")
    expected = {i for i in range(n) if exact[i, i] >= exact[i].max()}
    got = _as_token_set(favourites, ex.tokens)
    if got is None:
        return _incorrect(
            "not_tokens",
            f"Give the tokens as a list of names from {ex.tokens} (or their row indices), "
            "for example ['Your', 'with'].",
        )
    if got == expected:
        return _correct(
            f"Right: S = (X W)(X W)^T is symmetric and only {_quoted(ex.tokens[i] for i in sorted(expected))} "
            "scores itself highest."
        )
    if got == set(range(n)):
        return _incorrect(
            "every_token",
            "Not every token scores itself highest: a shared projection only gives "
            "S_ij <= (S_ii + S_jj) / 2. Compare each diagonal entry with the largest entry of its row.",
        )
    if not got:
        return _incorrect(
            "no_token",
            "At least one token scores itself highest: the one with the largest self-score S_ii, "
            "since S_ij <= (S_ii + S_jj) / 2 <= max(S_ii, S_jj).",
        )
    return _incorrect(
        "wrong_tokens",
        "Not those tokens: for each row i, compare S[i, i] with S[i].max().",
    )


# ---------------------------------------------------------------------------
# Exercise 5 of Section 5.2: attention entropy
# ---------------------------------------------------------------------------

ENTROPY_ATOL = 1e-3
"""Absolute tolerance for entropies (answers with three decimals pass)."""


@_never_raise
def check_attention_entropy(entropy_rows):
    """Check Section 5.2, exercise 5: the entropy of each row of attention weights, in nats.

    The weights are those of the "journey" sentence with its separate
    projections, unscaled as in Section 5.2: ``softmax((X W_q)(X W_k)^T)``
    (``load_example("journey")``, ``.q @ .k.T``), and the answer is
    ``H_i = -sum_j w_ij log w_ij`` for each of the 6 rows. The queries and
    keys differ, so the scores are not symmetric and a softmax over the wrong
    axis can be told apart from a sum over the wrong axis (with Q = K they
    give the same numbers).

    Parameters
    ----------
    entropy_rows : array_like, shape (6,)
        One entropy per query row, in nats.

    Returns
    -------
    CheckResult
        Mistakes recognised, in this order: ``log2`` (bits instead of nats),
        ``log10``, ``no_minus`` (the sign of -sum w log w left out),
        ``wrong_sum_axis`` (summed over the queries, axis=0),
        ``softmax_wrong_axis`` (weights normalised over the queries, axis=0,
        whichever axis the entropy then sums over), ``scaled`` (divided the
        scores by sqrt(d_k)), ``mean_not_sum`` (averaged the terms),
        ``not_summed`` (the 6 x 6 terms -w log w), ``entropy_of_scores`` (no
        softmax), then ``wrong_shape`` / ``wrong_values``; ``wrong_type``,
        ``complex``, ``not_finite``.

    Examples
    --------
    >>> ex = examples.load_example("journey")
    >>> h = attention.entropy(attention.softmax(ex.q @ ex.k.T))
    >>> print(check_attention_entropy(h))
    ✅ correct: Right: H = -sum_j w_ij log w_ij along each row, in nats; the maximum is log 6 = 1.7918.
    >>> check_attention_entropy(h / math.log(2)).mistake
    'log2'
    """
    ex = examples.load_example("journey")
    scores = ex.q @ ex.k.T
    d_k = ex.q.shape[-1]
    m = scores.shape[-1]
    w = attention.softmax(scores)
    terms = -w * np.log(w)
    exact = terms.sum(axis=-1)
    w_cols = attention.softmax(scores, axis=0)
    mistakes = [
        ("log2", lambda: exact / math.log(2),
         "You used log base 2 (bits); the exercise asks for nats: use np.log, the natural log."),
        ("log10", lambda: exact / math.log(10),
         "You used log base 10; the exercise asks for nats: use np.log, the natural log."),
        ("no_minus", lambda: -exact,
         "Your entropies are negative: H = -sum w log w (each log w <= 0, so the minus makes H >= 0)."),
        ("wrong_sum_axis", lambda: terms.sum(axis=0),
         "You summed -w log w over the queries (axis=0); sum along each row, over the keys (axis=-1)."),
        ("softmax_wrong_axis", lambda: -(w_cols * np.log(w_cols)).sum(axis=-1),
         "Your weights were normalised over the queries (softmax with axis=0): their rows do not "
         "sum to 1. Normalise each row over the keys (axis=-1) before taking the entropy."),
        ("softmax_wrong_axis", lambda: -(w_cols * np.log(w_cols)).sum(axis=0),
         "You took the softmax over the queries (axis=0) and the entropy down the columns: both "
         "should run along each row, over the keys (axis=-1)."),
        ("scaled", lambda: attention.entropy(attention.softmax(scores / math.sqrt(d_k))),
         "Your weights are scaled by 1/sqrt(d_k); Section 5.2 works unscaled: softmax(Q K^T)."),
        ("mean_not_sum", lambda: exact / m,
         "You averaged the terms -w log w; the entropy is their sum over the keys."),
        ("not_summed", lambda: terms,
         "These are the terms -w log w, one per query-key pair; sum each row to get one entropy per query."),
        ("entropy_of_scores", lambda: -(scores * np.log(scores)).sum(axis=-1),
         "You took -sum s log s of the raw scores; turn each row into weights with softmax first."),
    ]
    result = _match(entropy_rows, exact, mistakes, what="entropies", atol=ENTROPY_ATOL)
    return result if result is not None else _correct(
        f"Right: H = -sum_j w_ij log w_ij along each row, in nats; the maximum is log {m} = {math.log(m):.4f}."
    )


# ---------------------------------------------------------------------------
# "I am happy": the Step 6 context vectors
# ---------------------------------------------------------------------------


@_never_raise
def check_i_am_happy_context(context):
    """Check the exact context vectors of "I am happy": ``softmax(Q K^T / sqrt(3)) V``.

    Parameters
    ----------
    context : array_like, shape (3, 3)
        One context vector per token (row), exact, not built on rounded weights.

    Returns
    -------
    CheckResult
        Mistakes recognised, in this order: ``unscaled``, ``divided_by_d_k``,
        ``wrong_axis`` (softmax over the queries), ``returned_weights``,
        ``no_softmax`` (scaled scores @ V), ``transposed``, ``values_first``
        (V @ weights), ``wrong_shape``, then ``document_rows`` (a row equal to
        the document's printed Step 6 row: for "I" the middle entry 0.53 adds
        rounded terms, exact 0.5207; for "am" and "happy" the rows rest on the
        wrong Step 5 weights, so the document's weights times V give them too)
        before ``wrong_values``; ``wrong_type``, ``complex``, ``not_finite``.
        The whole-matrix mistakes come first because one row of
        ``softmax(Q K^T / 3) V`` equals the document's row for "am".

    Examples
    --------
    >>> c = [[0.4207, 0.5207, 0.6207], [0.4514, 0.5514, 0.6514], [0.4808, 0.5808, 0.6808]]
    >>> print(check_i_am_happy_context(c))
    ✅ correct: Right: the context vectors softmax(Q K^T / sqrt(3)) V, one row per token.
    >>> check_i_am_happy_context([[0.42, 0.53, 0.62], [0.433, 0.533, 0.633], [0.442, 0.542, 0.642]]).mistake
    'document_rows'
    """
    ex = examples.load_example("i_am_happy")
    q, k, v = ex.q, ex.k, ex.v
    d_k = q.shape[-1]
    scores = q @ k.T
    scaled = scores / math.sqrt(d_k)
    weights = attention.softmax(scaled)
    exact = weights @ v
    arr, result = _as_real_array(context, "context vectors")
    if result is not None:
        return result
    mistakes = [
        ("unscaled", lambda: attention.softmax(scores) @ v,
         "You forgot to divide the scores by sqrt(d_k) = sqrt(3) before the softmax."),
        ("divided_by_d_k", lambda: attention.softmax(scores / d_k) @ v,
         "You divided the scores by d_k = 3; divide by sqrt(d_k) = 1.732 instead."),
        ("wrong_axis", lambda: attention.softmax(scaled, axis=0) @ v,
         "Your softmax normalised the columns (axis=0); each row of weights (one query) should sum to 1."),
        ("returned_weights", lambda: weights,
         "These are the attention weights; the context vectors multiply them by V."),
        ("no_softmax", lambda: scaled @ v,
         "You multiplied the scaled scores by V; turn each row into weights with softmax first."),
        ("transposed", lambda: exact.T,
         "Your matrix is transposed: one row per token (query), one column per value dimension."),
        ("values_first", lambda: v @ weights,
         "You computed V @ weights; the context vectors are weights @ V (each row mixes the rows of V)."),
    ]
    result = _match(arr, exact, mistakes, what="context vectors", atol=HAND_ATOL)
    if result is not None and result.mistake == "wrong_values":
        # Checked after the whole-matrix mistakes: one row of softmax(Q K^T / d_k) V
        # happens to equal the document's printed row for 'am'.
        rows = _document_rows(arr, ex, ("context_row0", "context_row1", "context_row2"), exact, HAND_ATOL)
        if rows:
            why = []
            if 0 in rows:
                why.append("for 'I' it adds rounded terms (0.06 + 0.17 + 0.30 = 0.53; exact 0.5207)")
            later = [ex.tokens[i] for i in rows if i != 0]
            if later:
                why.append(f"for {_quoted(later)} it rests on the document's wrong Step 5 weights")
            return _incorrect(
                "document_rows",
                f"Your row for {_quoted(ex.tokens[i] for i in rows)} is the document's Step 6 row, "
                f"which is off: {'; '.join(why)}. Multiply the exact weights by V.",
            )
    return result if result is not None else _correct(
        "Right: the context vectors softmax(Q K^T / sqrt(3)) V, one row per token."
    )


# ---------------------------------------------------------------------------
# "cat sat" (AIAYN Part 2): why scale at d_k = 512, and the initialisation
# ---------------------------------------------------------------------------

ESTIMATE_RTOL = 0.03
"""Relative tolerance for a variance or std that may come from a simulation."""

INIT_RTOL = 0.01
"""Relative tolerance for an initialisation std (three significant digits pass)."""


@_never_raise
def check_why_scale_512(variance, std=None, variance_scaled=None):
    """Check the spread of q·k at d_k = 512 for entries of mean 0 and variance 1.

    ``d_k`` is that of ``load_example("cat_sat_why_scale_512")``, where
    *AIAYN Part 2* stops at "For d_k = 512:". A dot product of d_k independent
    products of unit variance has variance d_k = 512 and std sqrt(512) = 22.63;
    dividing every score by sqrt(d_k) divides the variance by d_k, back to 1.
    Simulated estimates within 3 % pass.

    Parameters
    ----------
    variance : number
        Var(q·k) before scaling.
    std : number, optional
        Its standard deviation.
    variance_scaled : number, optional
        Var(q·k / sqrt(d_k)).

    Returns
    -------
    CheckResult
        Mistakes recognised: ``gave_std`` (variance answered with the std),
        ``already_scaled`` (an answer of 1 before scaling), ``squared``
        (d_k^2), ``gave_variance`` (std answered with the variance),
        ``divided_by_d_k`` (scores divided by d_k: variance 1/d_k),
        ``variance_divided_by_sqrt`` (the variance divided by sqrt(d_k), not
        d_k), ``not_scaled``; ``not_a_number``, ``not_finite``,
        ``wrong_value``. Missing parts give "not yet" once the given ones are
        right.

    Examples
    --------
    >>> print(check_why_scale_512(512, 22.63, 1))
    ✅ correct: Right: Var(q·k) = d_k = 512, std = sqrt(512) = 22.63, and 1 after dividing by sqrt(512).
    >>> check_why_scale_512(512, 22.63, 1 / 512).mistake
    'divided_by_d_k'
    """
    d_k = int(examples.load_example("cat_sat_why_scale_512").d_k)
    var = float(d_k)  # d_k terms, each a product of two independent unit-variance entries
    sd = math.sqrt(var)
    after = var / d_k  # scores divided by sqrt(d_k): variance divided by d_k
    parts = [
        ("the variance", variance, functools.partial(
            _number_verdict, what="variance", expected=var, rtol=ESTIMATE_RTOL,
            hint="Each of the d_k products q_i k_i has variance 1, and the variances of independent terms add.",
            mistakes=[
                ("gave_std", sd, f"{sd:.2f} is the standard deviation; the variance is its square."),
                ("already_scaled", after, "1 is the variance after dividing by sqrt(d_k); before, the "
                 "d_k terms' variances add up."),
                ("squared", var * var, "The variance grows like d_k, not d_k^2: the d_k variances of 1 add up."),
            ])),
        ("the std", std, functools.partial(
            _number_verdict, what="standard deviation", expected=sd, rtol=ESTIMATE_RTOL,
            hint="The standard deviation is the square root of the variance.",
            mistakes=[
                ("gave_variance", var, f"{var:g} is the variance; the standard deviation is its square root."),
                ("already_scaled", 1.0, "1 is the spread after scaling; before, the std is sqrt(d_k)."),
            ])),
        ("the variance after scaling", variance_scaled, functools.partial(
            _number_verdict, what="variance after scaling", expected=after, rtol=ESTIMATE_RTOL,
            hint="Dividing a variable by c divides its variance by c^2.",
            mistakes=[
                ("divided_by_d_k", var / d_k**2, "That is what dividing the scores by d_k would give "
                 "(variance 1/d_k): the scaling divides by sqrt(d_k)."),
                ("variance_divided_by_sqrt", var / math.sqrt(d_k), "You divided the variance by sqrt(d_k); "
                 "dividing the scores by sqrt(d_k) divides their variance by d_k."),
                ("not_scaled", var, "That is the variance before scaling."),
            ])),
    ]
    return _parts(
        parts,
        done=f"Right: Var(q·k) = d_k = {d_k}, std = sqrt({d_k}) = {sd:.2f}, and 1 after dividing by sqrt({d_k}).",
        empty=f"No answer yet: the variance of q·k at d_k = {d_k}, its std, and the variance after scaling.",
    )


@_never_raise
def check_init_std(he_std, xavier_std=None):
    """Check the initialisation std of AIAYN Part 2's formula, and Xavier's, for d_model = 512.

    The document draws W_Q, W_K, W_V from a normal with std sqrt(2/d_model) and
    calls it "Xavier/He". With d_model = 512 (the ``d_k`` of
    ``load_example("cat_sat_why_scale_512")``, the width the document uses)
    that is He (Kaiming) normal, sqrt(2/fan_in) = 0.0625; Xavier (Glorot)
    normal for a square 512 x 512 matrix is sqrt(2/(fan_in + fan_out)) =
    0.0442.

    Parameters
    ----------
    he_std : number
        The std of the document's formula, sqrt(2/d_model).
    xavier_std : number, optional
        The Xavier normal std for a 512 x 512 matrix.

    Returns
    -------
    CheckResult
        Mistakes recognised: ``swapped`` (He and Xavier exchanged),
        ``variance_not_std`` (2/512 or 1/512: no square root),
        ``xavier_without_2`` (sqrt(1/(fan_in + fan_out))),
        ``xavier_uniform_bound`` (sqrt(6/(fan_in + fan_out)), the limit of
        the uniform version); ``not_a_number``, ``not_finite``,
        ``wrong_value``.

    Examples
    --------
    >>> print(check_init_std(0.0625, 0.0442))
    ✅ correct: Right: the document's sqrt(2/512) = 0.0625 is He initialisation; Xavier for 512 x 512 is sqrt(2/1024) = 0.0442.
    >>> check_init_std(0.0442, 0.0625).mistake
    'swapped'
    """
    d = int(examples.load_example("cat_sat_why_scale_512").d_k)
    fan_in = fan_out = d
    he = math.sqrt(2 / fan_in)
    xavier = math.sqrt(2 / (fan_in + fan_out))
    parts = [
        ("the He std", he_std, functools.partial(
            _number_verdict, what="std of the document's formula", expected=he, rtol=INIT_RTOL,
            hint=f"Put d_model = {d} into the document's std, sqrt(2/d_model).",
            mistakes=[
                ("swapped", xavier, f"{xavier:.4f} is the Xavier std; the document's formula "
                 f"sqrt(2/d_model) gives sqrt(2/{d})."),
                ("variance_not_std", 2 / fan_in, f"2/{d} is the variance; the std is its square root."),
            ])),
        ("the Xavier std", xavier_std, functools.partial(
            _number_verdict, what="Xavier std", expected=xavier, rtol=INIT_RTOL,
            hint="Xavier (Glorot) normal uses std = sqrt(2/(fan_in + fan_out)).",
            mistakes=[
                ("swapped", he, f"{he:.4f} is the document's (He) std; Xavier averages fan_in and "
                 "fan_out: sqrt(2/(fan_in + fan_out))."),
                ("variance_not_std", 2 / (fan_in + fan_out), "That is the variance 2/(fan_in + fan_out); "
                 "the std is its square root."),
                ("xavier_without_2", math.sqrt(1 / (fan_in + fan_out)), "Xavier normal has a 2 in the "
                 "numerator: sqrt(2/(fan_in + fan_out))."),
                ("xavier_uniform_bound", math.sqrt(6 / (fan_in + fan_out)), "sqrt(6/(fan_in + fan_out)) "
                 "is the bound of Xavier *uniform*; the normal version's std is sqrt(2/(fan_in + fan_out))."),
            ])),
    ]
    return _parts(
        parts,
        done=f"Right: the document's sqrt(2/{d}) = {he:.4f} is He initialisation; Xavier for "
        f"{d} x {d} is sqrt(2/{fan_in + fan_out}) = {xavier:.4f}.",
        empty=f"No answer yet: the std of the document's formula for d_model = {d}, and Xavier's.",
    )


# ---------------------------------------------------------------------------
# "journey" (The Engine of Transformers): one row, the class, the variance
# ---------------------------------------------------------------------------

_JOURNEY_ROW = 1  # the query "journey", whose row the document prints


def _match_row(arr, matrix, row, mistakes, *, tokens, what, atol):
    """``_match`` for one row of ``matrix``; an unrecognised answer that is another row says so."""
    result = _match(arr, matrix[row], mistakes, what=what, atol=atol)
    if result is not None and result.mistake == "wrong_values":
        other = _other_row(arr, matrix, row, tokens, atol)
        result = result if other is None else other  # not ``or``: an incorrect result is falsy
    return result


def _other_row(arr, matrix, row, tokens, atol):
    """A mistake for a row of ``matrix`` other than ``row``, or None."""
    if arr.ndim != 1 or arr.shape[0] != matrix.shape[1]:
        return None
    for i in range(matrix.shape[0]):
        if i != row and np.allclose(arr, matrix[i], rtol=0, atol=atol) and not np.allclose(
            matrix[i], matrix[row], rtol=0, atol=atol
        ):
            return _incorrect(
                "wrong_row",
                f"That is the row of {tokens[i]!r} (row {i}, counting from 0); the query "
                f"{tokens[row]!r} is row {row}.",
            )
    return None


@_never_raise
def check_journey_scores_row(row):
    """Check the unscaled scores of the query "journey" against all six keys.

    ``load_example("journey")``: queries X W_q, keys X W_k, and the row is
    ``(X W_q)[1] @ (X W_k).T``, about [1.2705, 1.8524, 1.8111, 1.0795, 0.5577,
    1.5440]. The document prints [14.5, 25.1, 24.8, 14.3, 8.6, 17.6], which do
    not follow from its inputs.

    Parameters
    ----------
    row : array_like, shape (6,)

    Returns
    -------
    CheckResult
        Mistakes recognised, in this order: ``document_row`` (the printed
        row), ``scaled`` (already divided by sqrt(d_k)), ``divided_by_d_k``,
        ``swapped_q_k`` ((X W_k)(X W_q)^T: the column of "journey"),
        ``no_projection`` (X X^T, the recap's scores), ``whole_matrix``,
        ``wrong_row`` (another token's row), then ``wrong_shape`` /
        ``wrong_values``; ``wrong_type``, ``complex``, ``not_finite``.

    Examples
    --------
    >>> print(check_journey_scores_row([1.27, 1.85, 1.81, 1.08, 0.56, 1.54]))
    ✅ correct: Right: the 'journey' query against every key, (X W_q)[1] @ (X W_k)^T, before scaling.
    >>> check_journey_scores_row([14.5, 25.1, 24.8, 14.3, 8.6, 17.6]).mistake
    'document_row'
    """
    ex = examples.load_example("journey")
    x, q, k = ex.inputs, ex.q, ex.k
    d_k = q.shape[-1]
    scores = q @ k.T
    exact = scores[_JOURNEY_ROW]
    arr, result = _as_real_array(row, "scores")
    if result is not None:
        return result
    mistakes = [
        ("document_row", lambda: ex.figure("scores_row1").printed,
         "That is the row the document prints, which does not follow from its own inputs and "
         "weights; compute q_journey · k_j for every key j."),
        ("scaled", lambda: exact / math.sqrt(d_k),
         f"These are already divided by sqrt(d_k) = sqrt({d_k}); Step 3's row is before scaling."),
        ("divided_by_d_k", lambda: exact / d_k,
         "You divided by d_k; the row asked for is before any scaling."),
        ("swapped_q_k", lambda: scores[:, _JOURNEY_ROW],
         "You paired the 'journey' key with every query ((X W_k)(X W_q)^T, or the column of S); "
         "the row pairs the 'journey' query with every key: q_journey · k_j."),
        ("no_projection", lambda: (x @ x.T)[_JOURNEY_ROW],
         "These are the recap's scores x_journey · x_j, without the projections; use the queries "
         "X W_q and keys X W_k."),
        ("whole_matrix", lambda: scores,
         "That is the whole 6 x 6 matrix; give only the row of 'journey' (row 1)."),
    ]
    result = _match_row(arr, scores, _JOURNEY_ROW, mistakes, tokens=ex.tokens, what="scores", atol=HAND_ATOL)
    return result if result is not None else _correct(
        "Right: the 'journey' query against every key, (X W_q)[1] @ (X W_k)^T, before scaling."
    )


@_never_raise
def check_journey_weights_row(row):
    """Check the attention weights of the query "journey": softmax of its scores / sqrt(2).

    About [0.1500, 0.2264, 0.2199, 0.1311, 0.0906, 0.1820]; the document prints
    the self-weight 0.2264 as 0.22.

    Parameters
    ----------
    row : array_like, shape (6,)

    Returns
    -------
    CheckResult
        Mistakes recognised, in this order: ``document_row`` (the printed row,
        with 0.22 for "journey"), ``unscaled``, ``divided_by_d_k``,
        ``wrong_axis`` (softmax over the queries: the column of "journey"),
        ``document_scores`` (softmax of the document's printed scores / sqrt(2)),
        ``whole_matrix``, ``wrong_row``, then ``wrong_shape`` /
        ``wrong_values``; ``wrong_type``, ``complex``, ``not_finite``.

    Examples
    --------
    >>> print(check_journey_weights_row([0.150, 0.226, 0.220, 0.131, 0.091, 0.182]))
    ✅ correct: Right: softmax of the 'journey' scores divided by sqrt(2); the self-weight is 0.2264.
    >>> check_journey_weights_row([0.15, 0.22, 0.22, 0.13, 0.09, 0.18]).mistake
    'document_row'
    """
    ex = examples.load_example("journey")
    q, k = ex.q, ex.k
    d_k = q.shape[-1]
    scores = q @ k.T
    weights = attention.softmax(scores / math.sqrt(d_k))
    exact = weights[_JOURNEY_ROW]
    arr, result = _as_real_array(row, "weights")
    if result is not None:
        return result
    mistakes = [
        ("document_row", lambda: ex.figure("weights_row1").printed,
         f"That is the document's printed row: its self-weight 0.22 should be "
         f"{exact[_JOURNEY_ROW]:.4f}, which rounds to 0.23 (the printed row sums to 0.99)."),
        ("unscaled", lambda: attention.softmax(scores[_JOURNEY_ROW]),
         f"You forgot to divide the scores by sqrt(d_k) = sqrt({d_k}) before the softmax."),
        ("divided_by_d_k", lambda: attention.softmax(scores[_JOURNEY_ROW] / d_k),
         f"You divided the scores by d_k = {d_k}; divide by sqrt(d_k) instead."),
        ("wrong_axis", lambda: attention.softmax(scores / math.sqrt(d_k), axis=0)[:, _JOURNEY_ROW],
         "Your softmax normalised over the queries (axis=0), which gives the column of 'journey'; "
         "normalise the row over the keys (axis=-1)."),
        ("document_scores", lambda: attention.softmax(ex.figure("scores_row1").printed / math.sqrt(d_k)),
         "You started from the document's printed scores, which do not follow from its inputs; "
         "compute the scores from X, W_q and W_k first."),
        ("whole_matrix", lambda: weights,
         "That is the whole 6 x 6 weights matrix; give only the row of 'journey' (row 1)."),
    ]
    result = _match_row(arr, weights, _JOURNEY_ROW, mistakes, tokens=ex.tokens, what="weights", atol=HAND_ATOL)
    return result if result is not None else _correct(
        f"Right: softmax of the 'journey' scores divided by sqrt({d_k}); the self-weight is "
        f"{exact[_JOURNEY_ROW]:.4f}."
    )


def _self_attention_cases():
    """The journey example, then a seeded case with n = d_out, where more mistakes show."""
    ex = examples.load_example("journey")
    rng = np.random.default_rng(43)
    n, d_in, d_out = 4, 5, 4
    square = (rng.normal(size=(n, d_in)),) + tuple(rng.normal(size=(d_in, d_out)) for _ in range(3))
    return [("the journey example", (ex.inputs, ex.w_q, ex.w_k, ex.w_v)),
            (f"a random case (n = {n}, d_in = {d_in}, d_out = {d_out})", square)]


def _run_self_attention(fn, x, w_q, w_k, w_v):
    """Call a function ``fn(x, w_q, w_k, w_v)``, or a class ``fn(w_q, w_k, w_v)`` then ``.forward(x)``."""
    if isinstance(fn, type):
        made = _call_student(fn, w_q, w_k, w_v)
        if made.error is not None:
            return made
        obj = made.value
        method = getattr(obj, "forward", None)
        return _call_student(method if callable(method) else obj, x)
    return _call_student(fn, x, w_q, w_k, w_v)


@_never_raise
def check_self_attention(fn):
    """Check a student's self-attention forward pass (the "journey" document's SelfAttention).

    ``fn`` is a function ``self_attention(x, w_q, w_k, w_v)`` returning the
    context vectors ``softmax((x W_q)(x W_k)^T / sqrt(d_out)) (x W_v)``, shape
    (n, d_out) (or a tuple whose first item is them), or a class whose
    constructor takes ``(w_q, w_k, w_v)`` and whose instances have a
    ``forward(x)`` method (or are callable). It is run on the journey example
    (n = 6, d_in = 3, d_out = 2) and on a seeded case with n = d_out = 4,
    d_in = 5, where a missing transpose and returned weights have the shape
    of the right answer.

    Parameters
    ----------
    fn : callable or class

    Returns
    -------
    CheckResult
        Mistakes recognised: ``not_callable``, ``raises``, ``unscaled``,
        ``divided_by_d_k``, ``scaled_by_d_in`` (sqrt of the input width
        instead of d_out = d_k), ``wrong_axis``, ``no_transpose``
        (queries @ keys), ``swapped_q_k`` (keys @ queries^T),
        ``returned_weights``, ``unprojected_values`` (weights @ x),
        ``wrong_shape``, ``wrong_values``.

    Examples
    --------
    >>> def self_attention(x, w_q, w_k, w_v):
    ...     return attention.scaled_dot_product_attention(x @ w_q, x @ w_k, x @ w_v)[0]
    >>> print(check_self_attention(self_attention))
    ✅ correct: Right: your forward pass projects, scores, scales by sqrt(d_out), normalises each row and mixes the values.
    >>> check_self_attention(lambda x, wq, wk, wv: attention.scaled_dot_product_attention(
    ...     x @ wq, x @ wk, x @ wv, scale=1.0)[0]).mistake
    'unscaled'
    """
    result = None if isinstance(fn, type) else _check_callable(fn, "self_attention")
    if result is not None:
        return result
    sm = attention.softmax
    for case, (x, w_q, w_k, w_v) in _self_attention_cases():
        call = _run_self_attention(fn, x, w_q, w_k, w_v)
        if call.error is not None:
            return _raised(call, "self-attention")
        value = call.value
        if isinstance(value, tuple) and len(value) >= 1:
            value = value[0]
        got = _float_result(value)
        q, k, v = x @ w_q, x @ w_k, x @ w_v
        d_in, d_out = w_q.shape
        weights = sm(q @ k.T / math.sqrt(d_out))
        expected = weights @ v
        if got is not None and _close(got, expected, CODE_TOL, CODE_TOL):
            continue
        if got is None:
            return _incorrect(
                "wrong_shape",
                f"On {case} your function returned a {type(value).__name__}; it should return the "
                f"context vectors, an array of shape {expected.shape} (n, d_out).",
            )
        mistakes = [
            ("unscaled", lambda: sm(q @ k.T) @ v,
             "You forgot to divide the scores by sqrt(d_k) (here d_k = d_out, the projected width)."),
            ("divided_by_d_k", lambda: sm(q @ k.T / d_out) @ v,
             "You divided the scores by d_k; divide by sqrt(d_k) (d_k = d_out, the projected width)."),
            ("scaled_by_d_in", lambda: sm(q @ k.T / math.sqrt(d_in)) @ v,
             "You scaled by the square root of the input width d_in; the keys have width d_out, "
             "so divide by sqrt(d_out)."),
            ("wrong_axis", lambda: sm(q @ k.T / math.sqrt(d_out), axis=0) @ v,
             "Your softmax normalised over the queries (axis=0); normalise each row over the keys (axis=-1)."),
            ("no_transpose", lambda: sm(q @ k / math.sqrt(d_out)) @ v,
             "You multiplied queries @ keys without transposing the keys; the scores are queries @ keys.T."),
            ("swapped_q_k", lambda: sm(k @ q.T / math.sqrt(d_out)) @ v,
             "You computed keys @ queries.T; the scores are queries @ keys.T (one row per query)."),
            ("returned_weights", lambda: weights,
             "You returned the attention weights; the forward pass returns weights @ values."),
            ("unprojected_values", lambda: weights @ x,
             "You mixed the raw inputs x; mix the values x @ W_v."),
        ]
        for name, thunk, message in mistakes:
            wrong = _compute(thunk)
            if wrong is not None and not _close(wrong, expected, CODE_TOL, CODE_TOL) and _close(
                got, wrong, CODE_TOL, CODE_TOL
            ):
                return _incorrect(name, message)
        if got.shape != expected.shape:
            return _incorrect(
                "wrong_shape",
                f"On {case} your function returned shape {got.shape}; the context vectors have "
                f"shape {expected.shape} (n, d_out).",
            )
        return _incorrect(
            "wrong_values",
            f"Your context vectors on {case} are not right: softmax((x W_q)(x W_k)^T / sqrt(d_out)), "
            "row by row, times x W_v.",
        )
    return _correct(
        "Right: your forward pass projects, scores, scales by sqrt(d_out), normalises each row and "
        "mixes the values."
    )


@_never_raise
def check_journey_variance_d100(before, after=None):
    """Check the variance of q·k at dimension 100, before and after dividing by sqrt(100).

    For entries of mean 0 and variance 1 the variance is d = 100 before
    scaling and 1 after (``load_example("journey_variance_d100").given``:
    ``expected_variance_before``, ``expected_variance_after``). A simulated
    estimate within 10 % passes, and so do the document's 107.4 and 1.074
    (one random draw).

    Parameters
    ----------
    before : number
    after : number, optional

    Returns
    -------
    CheckResult
        Mistakes recognised: ``gave_std`` (10: the std before scaling),
        ``already_scaled`` (1 before scaling), ``squared`` (d^2),
        ``variance_divided_by_sqrt`` (10 after: the variance divided by
        sqrt(d) instead of d), ``divided_by_d_k`` (0.01: scores divided by d),
        ``not_scaled`` (100 after); ``not_a_number``, ``not_finite``,
        ``wrong_value``.

    Examples
    --------
    >>> print(check_journey_variance_d100(100, 1))
    ✅ correct: Right: the variance of q·k is d = 100 before scaling and 100 / (sqrt(100))^2 = 1 after.
    >>> check_journey_variance_d100(100, 10).mistake
    'variance_divided_by_sqrt'
    """
    ex = examples.load_example("journey_variance_d100")
    d = int(ex.d_k)
    var = float(ex.given["expected_variance_before"])
    var_after = float(ex.given["expected_variance_after"])
    rtol = 0.10
    parts = [
        ("the variance before scaling", before, functools.partial(
            _number_verdict, what="variance before scaling", expected=var, rtol=rtol,
            hint=f"q·k adds d = {d} products of unit variance; the variances of independent terms add.",
            mistakes=[
                ("gave_std", math.sqrt(var), f"{math.sqrt(var):g} is the standard deviation; the variance is its square."),
                ("already_scaled", var_after, "That is the variance after scaling; before, it grows with d."),
                ("squared", var * var, "The variance grows like d, not d^2."),
            ])),
        ("the variance after scaling", after, functools.partial(
            _number_verdict, what="variance after scaling", expected=var_after, rtol=rtol,
            hint="Dividing every score by sqrt(d) divides the variance by d.",
            mistakes=[
                ("variance_divided_by_sqrt", var / math.sqrt(d), "You divided the variance by sqrt(d); "
                 "dividing the scores by sqrt(d) divides their variance by d."),
                ("divided_by_d_k", var / d**2, "That is what dividing the scores by d would give; "
                 "the scaling divides them by sqrt(d)."),
                ("not_scaled", var, "That is the variance before scaling."),
            ])),
    ]
    return _parts(
        parts,
        done=f"Right: the variance of q·k is d = {var:g} before scaling and {var:g} / (sqrt({d}))^2 = "
        f"{var_after:g} after.",
        empty=f"No answer yet: the variance of q·k at d = {d} before and after dividing by sqrt({d}).",
    )


# ---------------------------------------------------------------------------
# The definition page: shapes with n queries and m keys
# ---------------------------------------------------------------------------

SHAPES_CASE = {"n": 3, "m": 5, "d_k": 4, "d_v": 6}
"""The sizes of the shapes exercise: n queries, m keys, key width d_k, value width d_v."""


def _as_shape(answer):
    """A tuple of non-negative ints from a tuple, list, array or a string such as "(3, 5)" or "3x5"."""
    if isinstance(answer, str):
        if re.search(r"[^\d\s,x×()\[\]]", answer):
            return None
        items = [int(t) for t in re.findall(r"\d+", answer)]
    elif isinstance(answer, np.ndarray):
        if answer.ndim != 1 or answer.dtype.kind not in "iuf":
            return None
        items = answer.tolist()
    elif isinstance(answer, (tuple, list)):
        items = list(answer)
    else:
        return None
    shape = []
    for item in items:
        if isinstance(item, (bool, np.bool_)):
            return None
        if isinstance(item, numbers.Integral):
            shape.append(int(item))
        elif isinstance(item, numbers.Real) and math.isfinite(item) and float(item).is_integer():
            shape.append(int(item))
        else:
            return None
        if shape[-1] < 0:
            return None
    return tuple(shape) if shape else None


def _shape_verdict(answer, *, what, expected, mistakes):
    shape = _as_shape(answer)
    if shape is None:
        return _incorrect(
            "not_a_shape", f"Give the shape of {what} as a tuple of whole numbers, for example (2, 7)."
        )
    if shape == expected:
        return None
    for name, target, message in mistakes:
        if target != expected and shape == target:
            return _incorrect(name, message)
    return _incorrect(
        "wrong_shape",
        f"{shape} is not the shape of {what}: one row per query, one column per "
        + ("key." if what != "the output" else "value dimension."),
    )


@_never_raise
def check_definition_shapes(scores, weights=None, out=None):
    """Check the shapes of the definition page's attention for n = 3 queries, m = 5 keys, d_k = 4, d_v = 6.

    The expected shapes are computed by running
    :func:`helpers.attention.scaled_dot_product_attention` on arrays of those
    sizes (scores and weights (n, m) = (3, 5), output (n, d_v) = (3, 6)), and
    each recognised mistake by running it on the sizes the mistake swaps.

    Parameters
    ----------
    scores, weights, out : tuple of int (or list, array, or a string such as "(3, 5)")

    Returns
    -------
    CheckResult
        Mistakes recognised: ``n_m_swapped`` (queries and keys exchanged: (5, 3),
        which is also the transposed score matrix, and an output (5, 6)),
        ``d_k_d_v_swapped`` (an output (3, 4)), ``assumed_square`` (n x n or
        m x m, as in self-attention), ``used_d_k`` (scores (n, d_k)),
        ``transposed`` (output (d_v, n)), ``out_is_weights`` (output (n, m)),
        ``not_a_shape``, ``wrong_shape``. Missing parts give "not yet" once
        the given ones are right.

    Examples
    --------
    >>> print(check_definition_shapes((3, 5), (3, 5), (3, 6)))
    ✅ correct: Right: scores and weights are (n, m) = (3, 5), the output is (n, d_v) = (3, 6).
    >>> check_definition_shapes((5, 3), (5, 3), (5, 6)).mistake
    'n_m_swapped'
    """
    n, m, d_k, d_v = (SHAPES_CASE[key] for key in ("n", "m", "d_k", "d_v"))

    def run(n_q, n_k, width_k, width_v):
        q, k, v = np.zeros((n_q, width_k)), np.zeros((n_k, width_k)), np.zeros((n_k, width_v))
        out_, weights_ = attention.scaled_dot_product_attention(q, k, v)
        return attention.attention_scores(q, k).shape, weights_.shape, out_.shape

    right = run(n, m, d_k, d_v)
    swapped_nm = run(m, n, d_k, d_v)
    swapped_d = run(n, m, d_v, d_k)
    square_n, square_m = run(n, n, d_k, d_v), run(m, m, d_k, d_v)

    def grid_mistakes(index, what):
        return [
            ("n_m_swapped", swapped_nm[index], f"You swapped queries and keys: {what} has one row per "
             f"query (n = {n}) and one column per key (m = {m})."),
            ("assumed_square", square_n[index], f"That would be self-attention (n = m); here n = {n} "
             f"queries attend to m = {m} keys, so {what} is n x m."),
            ("assumed_square", square_m[index], f"That would be self-attention (n = m); here n = {n} "
             f"queries attend to m = {m} keys, so {what} is n x m."),
            ("used_d_k", (n, d_k), f"d_k is summed away by the dot products; {what} has one entry "
             "per query-key pair."),
        ]  # a transposed (m, n) is the same shape as n_m_swapped, which names it

    out_mistakes = [
        ("n_m_swapped", swapped_nm[2], f"One output per query, not per key: n = {n} rows."),
        ("d_k_d_v_swapped", swapped_d[2], f"The output mixes the values, so its width is d_v = {d_v}, not d_k."),
        ("transposed", right[2][::-1], "Transposed: the output has one row per query."),
        ("out_is_weights", right[1], "That is the shape of the weights; the output is weights @ V, (n, d_v)."),
        ("assumed_square", square_m[2], f"One output per query: n = {n} rows."),
    ]
    parts = [
        ("the scores", scores, functools.partial(
            _shape_verdict, what="the scores", expected=right[0], mistakes=grid_mistakes(0, "the score matrix"))),
        ("the weights", weights, functools.partial(
            _shape_verdict, what="the weights", expected=right[1], mistakes=grid_mistakes(1, "the weights matrix"))),
        ("the output", out, functools.partial(
            _shape_verdict, what="the output", expected=right[2], mistakes=out_mistakes)),
    ]
    return _parts(
        parts,
        done=f"Right: scores and weights are (n, m) = {right[0]}, the output is (n, d_v) = {right[2]}.",
        empty="No answer yet: the shapes of the scores, the weights and the output.",
    )
