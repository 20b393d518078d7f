"""Checks of E4, *The Engine of Transformers: Building Scaled Dot-Product Attention* ("journey")."""

from __future__ import annotations

import functools
import math

import numpy as np

from helpers import attention, examples
from helpers.checks._core import (
    CODE_TOL,
    HAND_ATOL,
    _as_number,
    _as_real_array,
    _broke,
    _call_student,
    _check_callable,
    _close,
    _compute,
    _correct,
    _float_result,
    _fresh_rng,
    _incorrect,
    _low_precision,
    _match,
    _near,
    _never_raise,
    _number_verdict,
    _overflow,
    _parts,
    _precision_verdict,
    _raised,
    _used_library,
)

# ---------------------------------------------------------------------------
# "journey" (The Engine of Transformers): one row, the class, the variance
# ---------------------------------------------------------------------------

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


_STARTS_ROW = 2  # the query "starts": the row the exercises ask for (the example prints row 1)


def _journey():
    ex = examples.load_example("journey")
    scores = ex.q @ ex.k.T  # (6, 2) x (2, 6) -> (6, 6)
    return ex, scores


@_never_raise
def check_journey_scores_row(row):
    """Check the unscaled scores of the query "starts" (row 2) against all six keys.

    ``load_example("journey")``: queries X W_q, keys X W_k; the row asked for is
    ``(X W_q)[2] @ (X W_k).T``. The document prints the row of "journey" (row 1),
    which does not follow from its inputs; the exercise asks for another row, so no
    field of the example holds the answer.

    Parameters
    ----------
    row : array_like, shape (6,)

    Returns
    -------
    CheckResult
        Mistakes recognised, in this order: ``document_row`` (the row the document
        prints), ``scaled`` (already divided by sqrt(d_k)), ``divided_by_d_k``,
        ``swapped_q_k`` ((X W_k)(X W_q)^T: the column of "starts"),
        ``no_projection`` (X X^T, the recap's scores), ``whole_matrix``,
        ``wrong_row`` (another token's row, "journey" included), then
        ``wrong_shape`` / ``wrong_values``; ``wrong_type``, ``complex``, ``not_finite``.
    """
    ex, scores = _journey()
    x, q = ex.inputs, ex.q
    d_k = q.shape[-1]
    exact = scores[_STARTS_ROW]
    arr, result = _as_real_array(row, "scores")
    if result is not None:
        return result
    mistakes = [
        ("document_row", lambda: ex.figure("scores_row1").printed,
         "That is the row the document prints, for 'journey', and it does not follow from its own "
         "inputs and weights; compute q_starts · k_j for every key j."),
        ("scaled", lambda: exact / math.sqrt(d_k),
         f"These are already divided by sqrt(d_k) = sqrt({d_k}); the row asked for is before scaling."),
        ("divided_by_d_k", lambda: exact / d_k,
         "You divided by d_k; the row asked for is before any scaling."),
        ("swapped_q_k", lambda: scores[:, _STARTS_ROW],
         "You paired the 'starts' key with every query ((X W_k)(X W_q)^T, or the column of S); "
         "the row pairs the 'starts' query with every key: q_starts · k_j."),
        ("no_projection", lambda: (x @ x.T)[_STARTS_ROW],
         "These are the recap's scores x_starts · x_j, without the projections; use the queries "
         "X W_q and keys X W_k."),
        ("whole_matrix", lambda: scores,
         "That is the whole 6 x 6 matrix; give only the row of 'starts' (row 2)."),
    ]
    result = _match_row(arr, scores, _STARTS_ROW, mistakes, tokens=ex.tokens, what="scores", atol=HAND_ATOL)
    return result if result is not None else _correct(
        "Right: the 'starts' query against every key, (X W_q)[2] @ (X W_k)^T, before scaling."
    )


WEIGHTS_ATOL = 2e-4
"""Tolerance of the weights row: the row of "journey" is 0.0008 from that of "starts" (in one
entry), so two-decimal answers cannot tell them apart; the row is computed, not rounded."""


@_never_raise
def check_journey_weights_row(row):
    """Check the attention weights of the query "starts": softmax of its scores / sqrt(2).

    The row of "journey" differs from it by only 0.0008 in one entry, so the
    tolerance is ``WEIGHTS_ATOL`` = 2e-4 and a row rounded to two or three
    decimals is named ``rounded``.

    Parameters
    ----------
    row : array_like, shape (6,)

    Returns
    -------
    CheckResult
        Mistakes recognised, in this order: ``document_row`` (the printed row of
        "journey"), ``rounded``, ``unscaled``, ``divided_by_d_k``,
        ``scaled_by_d_in`` (sqrt(3), the input width), ``softmax_whole_matrix``,
        ``wrong_axis`` (softmax over the queries: the column of "starts"),
        ``whole_matrix``, ``wrong_row`` (the row of "journey" is named), then
        ``wrong_shape`` / ``wrong_values``; ``wrong_type``, ``complex``, ``not_finite``.
    """
    ex, scores = _journey()
    d_k = ex.q.shape[-1]
    d_in = ex.inputs.shape[-1]
    weights = attention.softmax(scores / math.sqrt(d_k))
    exact = weights[_STARTS_ROW]
    arr, result = _as_real_array(row, "weights")
    if result is not None:
        return result
    mistakes = [
        ("document_row", lambda: ex.figure("weights_row1").printed,
         "That is the row the document prints, for 'journey' (add it up: it sums to 0.99). "
         "Compute the row of 'starts' from its scores."),
        ("rounded", lambda: exact.round(2),
         "Your row is rounded to two decimals. Give the values as computed: the row of 'journey' "
         "differs from that of 'starts' by less than 0.001, so rounded rows cannot tell them apart."),
        ("rounded", lambda: exact.round(3),
         "Your row is rounded to three decimals. Give the values as computed: the row of 'journey' "
         "differs from that of 'starts' by less than 0.001, so rounded rows cannot tell them apart."),
        ("unscaled", lambda: attention.softmax(scores[_STARTS_ROW]),
         f"You forgot to divide the scores by sqrt(d_k) = sqrt({d_k}) before the softmax."),
        ("divided_by_d_k", lambda: attention.softmax(scores[_STARTS_ROW] / d_k),
         f"You divided the scores by d_k = {d_k}; divide by sqrt(d_k) instead."),
        ("scaled_by_d_in", lambda: attention.softmax(scores[_STARTS_ROW] / math.sqrt(d_in)),
         f"You divided the scores by sqrt({d_in}), the square root of the input width d_in; the "
         f"queries and keys have width d_k = {d_k} after the projection, so divide by sqrt({d_k})."),
        ("softmax_whole_matrix", lambda: attention.softmax((scores / math.sqrt(d_k)).ravel()).reshape(
            scores.shape)[_STARTS_ROW],
         "Your softmax normalised the whole 6 x 6 matrix at once, so this row sums to much less than 1; "
         "normalise the row of 'starts' on its own."),
        ("wrong_axis", lambda: attention.softmax(scores / math.sqrt(d_k), axis=0)[:, _STARTS_ROW],
         "Your softmax normalised over the queries (axis=0), which gives the column of 'starts'; "
         "normalise the row over the keys (axis=-1)."),
        ("whole_matrix", lambda: weights,
         "That is the whole 6 x 6 weights matrix; give only the row of 'starts' (row 2)."),
    ]
    result = _match_row(arr, weights, _STARTS_ROW, mistakes, tokens=ex.tokens, what="weights",
                        atol=WEIGHTS_ATOL)
    return result if result is not None else _correct(
        f"Right: softmax of the 'starts' scores divided by sqrt({d_k}), each entry to within {WEIGHTS_ATOL:g}."
    )


def _self_attention_cases(seed=None):
    """The journey example, a seeded case with n = d_out, and three probes the notebook does not show.

    Every score stays below ``MAX_SCORE`` in size: E4 comes before notebooks 05 and 06, which
    teach the max subtraction, so the plain softmax of notebook 01 must pass here (the
    overflow cases are E5's). Rows of very different sizes are still there.
    """
    ex = examples.load_example("journey")
    rng = np.random.default_rng(43)
    n, d_in, d_out = 4, 5, 4
    square = (rng.normal(size=(n, d_in)),) + tuple(rng.normal(size=(d_in, d_out)) for _ in range(3))
    cases = [("the journey example", (ex.inputs, ex.w_q, ex.w_k, ex.w_v)),
             (f"a random case (n = {n}, d_in = {d_in}, d_out = {d_out})", square)]
    hidden = np.random.default_rng(_HIDDEN_SEED if seed is None else seed)
    for n, d_in, d_out, spread in ((7, 3, 5, 1.0), (33, 8, 6, 0.5), (5, 4, 3, 1.5), (1, 4, 2, 1.0)):
        x = hidden.normal(size=(n, d_in)) * spread
        x[0] *= 3.0  # one row larger than the others: its scores are larger
        ws = tuple(hidden.normal(size=(d_in, d_out)) for _ in range(3))
        cases.append((f"a random case (n = {n}, d_in = {d_in}, d_out = {d_out})", (x,) + ws))
    fresh = _fresh_rng()  # a case drawn anew at each run: no table of the probes can hold it
    x = fresh.normal(size=(5, 4))
    cases.append(("a random case drawn at this run (n = 5, d_in = 4, d_out = 3)",
                  (x,) + tuple(fresh.normal(size=(4, 3)) for _ in range(3))))
    return cases


_HIDDEN_SEED = 8_675_309

MAX_SCORE = 100.0
"""The largest score (in size) of any E4 probe: far from exp's overflow at about 709."""

EXPECTED_RTOL = 1e-6
"""Relative tolerance for an expected value worked out from the formula: it is exact, so only
rounding errors of the arithmetic are allowed (100 / sqrt(100)**2 is 1.0000000000000002)."""

ESTIMATE_RTOL = 0.3
"""An answer within 30 % of the expected value that is not a recognised mistake is taken as a
simulated estimate (a sample), and refused as such: the task asks for the expectation."""


def _run_self_attention(fn, x, w_q, w_k, w_v):
    """Call a function ``fn(x, w_q, w_k, w_v)``, or a class ``fn(w_q, w_k, w_v)`` then ``.forward(x)``."""
    if isinstance(fn, type):
        made = _call_student(fn, w_q, w_k, w_v)
        if made.error is not None or made.used:
            return made
        obj = made.value
        method = getattr(obj, "forward", None)
        return _call_student(method if callable(method) else obj, x)
    return _call_student(fn, x, w_q, w_k, w_v)


def _softmax_rows_no_keepdims(s, where):
    """The softmax a missing ``keepdims=True`` gives on a square score matrix (no error is raised)."""
    top = s.max(axis=-1, keepdims=where not in ("max", "both"))
    e = np.exp(s - top)
    total = e.sum(axis=-1, keepdims=where not in ("sum", "both"))
    return e / total


def _not_a_function(fn):
    """The message for a self_attention answer that is neither a function nor a class."""
    if fn is None:
        return None
    if isinstance(fn, type) or callable(fn):
        return None
    if hasattr(fn, "forward"):
        return _incorrect(
            "instance_not_class",
            "You passed an object made from your class (an instance, with its own weights). Pass "
            "the class itself, self_attention = SelfAttention (no parentheses): the check builds it "
            "with each case's weights and calls its forward(x).",
        )
    return _incorrect(
        "not_callable",
        "This check needs your function self_attention or your class SelfAttention itself (its "
        f"name, without parentheses); got a {type(fn).__name__}.",
    )


@_never_raise
def check_self_attention(fn, seed=None):
    """Check a student's self-attention forward pass (the "journey" document's SelfAttention).

    ``fn`` is a function ``self_attention(x, w_q, w_k, w_v)`` returning the
    context vectors, shape (n, d_out) (or a tuple whose first item is them), or a
    class whose constructor takes ``(w_q, w_k, w_v)`` and whose instances have a
    ``forward(x)`` method (or are callable). It is run on the journey example
    (n = 6, d_in = 3, d_out = 2), on a seeded case with n = d_out = 4, d_in = 5,
    where a missing transpose and returned weights have the shape of the right
    answer, on four cases the notebook does not show (other shapes, 33 tokens,
    one token, one input row larger than the rest), and on one case drawn anew at
    each run (so that no table of the probes can pass). Every score stays below
    ``MAX_SCORE`` = 100, so a softmax written as in notebook 01, without the max
    subtraction, passes. The answer is read first by
    :func:`helpers.checks._core.static_refusal`; while it runs, the kernels of
    :mod:`helpers.attention` are replaced by recording stand-ins.

    Parameters
    ----------
    fn : callable or class
    seed : int, optional
        The seed of the hidden random probes (graders use other seeds for hidden tests).

    Returns
    -------
    CheckResult
        Mistakes recognised: ``not_callable``, ``instance_not_class``,
        ``reaches_library`` (refused before running), ``used_library`` (called a
        kernel), ``raises`` (and the named ``max_of_two_arrays``,
        ``missing_keepdims``), ``overflow`` (NumPy warned of an overflow),
        ``not_finite`` (NaN or inf without an overflow: a division by zero),
        ``unscaled``, ``divided_by_d_k``, ``scaled_by_d_in``,
        ``wrong_axis``, ``no_transpose``, ``swapped_q_k``, ``softmax_whole_matrix``,
        ``missing_keepdims`` (a square case, where no error is raised),
        ``returned_weights``, ``unprojected_values``, ``wrong_shape``, ``wrong_values``.
        A float32 result within ``FLOAT32_TOL`` is accepted with a note on precision.
    """
    if fn is None:
        return _check_callable(fn, "self_attention")
    result = _not_a_function(fn)
    if result is not None:
        return result
    sm = attention.softmax
    note = ""
    for case, (x, w_q, w_k, w_v) in _self_attention_cases(seed):
        call = _run_self_attention(fn, x, w_q, w_k, w_v)
        if call.used:
            return _used_library(call, "self-attention")
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
        if call.overflowed:
            return _overflow(call, "self-attention", f" on {case}")
        if _broke(call, got):
            return _incorrect(
                "not_finite",
                f"Your self-attention returns NaN or infinity on {case}, although every score there "
                f"is below {MAX_SCORE:g} in size, so np.exp cannot overflow. Look for a division by "
                "zero: a square root of 0, a sum of 0, or a width taken from the wrong axis.",
            )
        dtype = _low_precision(value)
        if dtype is not None and got.shape == expected.shape:
            ok, message = _precision_verdict(dtype, got, expected, "self-attention")
            if ok:
                note = message
                continue
            if message:
                return _incorrect("precision", message)
        s = q @ k.T / math.sqrt(d_out)
        mistakes = [
            ("unscaled", lambda: sm(q @ k.T) @ v,
             "You forgot to divide the scores by sqrt(d_k) (here d_k = d_out, the projected width)."),
            ("divided_by_d_k", lambda: sm(q @ k.T / d_out) @ v,
             "You divided the scores by d_k; divide by sqrt(d_k) (d_k = d_out, the projected width)."),
            ("scaled_by_d_in", lambda: sm(q @ k.T / math.sqrt(d_in)) @ v,
             "You scaled by the square root of the input width d_in; the keys have width d_out, "
             "so divide by sqrt(d_out)."),
            ("wrong_axis", lambda: sm(s, axis=0) @ v,
             "Your softmax normalised over the queries (axis=0); normalise each row over the keys (axis=-1)."),
            ("no_transpose", lambda: sm(q @ k / math.sqrt(d_out)) @ v,
             "You multiplied queries @ keys without transposing the keys; the scores are queries @ keys.T."),
            ("swapped_q_k", lambda: sm(k @ q.T / math.sqrt(d_out)) @ v,
             "You computed keys @ queries.T; the scores are queries @ keys.T (one row per query)."),
            ("softmax_whole_matrix", lambda: sm(s.ravel()).reshape(weights.shape) @ v,
             "Your softmax normalised the whole score matrix at once; normalise each row (one query) "
             "over the keys (axis=-1, keepdims=True)."),
        ] + [
            ("missing_keepdims", functools.partial(lambda where: _softmax_rows_no_keepdims(s, where) @ v, where),
             "Your row sum or row maximum was taken without keepdims=True. On a square score matrix "
             "NumPy raises no error: the (n,) vector is lined up with the columns, so each entry is "
             "divided by another row's sum. Take it with keepdims=True, shape (n, 1).")
            for where in ("sum", "max", "both")
        ] + [
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
            f"Your context vectors on {case} are not right, and not one of the mistakes this check "
            "knows. Print the shape of each step of your forward pass and compare it with the task.",
        )
    return _correct(
        "Right: your forward pass projects, scores, scales by sqrt(d_out), normalises each row and "
        "mixes the values." + note
    )


@_never_raise
def check_journey_variance_d100(before, after=None):
    """Check the expected variance of q·k at dimension 100, before and after dividing by sqrt(100).

    The rule, the same as E3's: the task asks for the **expected value**, which
    follows from the formula ("variances of independent terms add"), so only
    rounding errors of the arithmetic are allowed (``EXPECTED_RTOL`` = 1e-6). An
    answer within 30 % of it that is not a recognised mistake (a simulated
    estimate such as 100.53, a rounded one such as 100.5, or the document's
    printed 107.4 and 1.074) is refused as ``simulation_estimate``, with a
    message saying that the task wants the expectation, not a sample.

    Parameters
    ----------
    before : number
    after : number, optional

    Returns
    -------
    CheckResult
        Mistakes recognised: ``gave_std`` (the std before scaling),
        ``already_scaled`` (the value after scaling given for before),
        ``squared`` (d^2), ``variance_divided_by_sqrt`` (the variance divided by
        sqrt(d) instead of d), ``divided_by_d_k`` (scores divided by d),
        ``not_scaled``, ``simulation_estimate``; ``not_a_number``, ``not_finite``,
        ``wrong_value``.
    """
    d = int(examples.load_example("journey_variance_d100").d_k)
    var = float(d)  # d products of variance 1: the variances of independent terms add
    var_after = var / math.sqrt(d) ** 2
    rtol = EXPECTED_RTOL

    def expected_value(verdict, what, target):
        """``verdict``, but an unrecognised answer near ``target`` is named as a simulated estimate."""

        def judge(answer):
            result = verdict(answer)
            value = _as_number(answer)
            if result is not None and result.mistake == "wrong_value" and _near(value, target, ESTIMATE_RTOL):
                return _incorrect(
                    "simulation_estimate",
                    f"Your {what} is {value:g}: close to the expected value, but not it. The task "
                    "asks for the expectation, which the rule 'the variances of independent terms "
                    "add' gives exactly, not a sample: a simulation (the document's printout is one) "
                    "lands near the expectation and never on it, and a rounded estimate is a sample too.",
                )
            return result

        return judge

    parts = [
        ("the variance before scaling", before, expected_value(functools.partial(
            _number_verdict, what="variance before scaling", expected=var, rtol=rtol,
            hint=f"q·k adds d = {d} products of unit variance; the variances of independent terms add.",
            mistakes=[
                ("gave_std", math.sqrt(var), "That is the standard deviation; the variance is its square."),
                ("already_scaled", var_after, "That is the variance after scaling; before, it grows with d."),
                ("squared", var * var, "The variance grows like d, not d^2."),
            ]), "variance before scaling", var)),
        ("the variance after scaling", after, expected_value(functools.partial(
            _number_verdict, what="variance after scaling", expected=var_after, rtol=rtol,
            hint="Dividing every score by sqrt(d) divides the variance by d.",
            mistakes=[
                ("variance_divided_by_sqrt", var / math.sqrt(d), "You divided the variance by sqrt(d); "
                 "dividing the scores by sqrt(d) divides their variance by d."),
                ("divided_by_d_k", var / d**2, "That is what dividing the scores by d would give; "
                 "the scaling divides them by sqrt(d)."),
                ("not_scaled", var, "That is the variance before scaling."),
            ]), "variance after scaling", var_after)),
    ]
    return _parts(
        parts,
        done="Right: both are the expected values, from the rule that the variances of independent "
        "terms add and that dividing by sqrt(d) divides a variance by d.",
        empty=f"No answer yet: the variance of q·k at d = {d} before and after dividing by sqrt({d}).",
    )
