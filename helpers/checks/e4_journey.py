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


def _six_token_row(result, arr, six, tokens, what, atol):
    """``result``, but a six-entry answer that is a row of the six-token sentence's ``six`` says so."""
    if result is None or result.mistake != "wrong_shape" or arr.shape != six.shape[1:]:
        return result
    for i in range(six.shape[0]):
        if np.allclose(arr, six[i], rtol=0, atol=atol):
            return _incorrect(
                "six_keys",
                f"That is the row of {tokens[i]!r} in the six-token sentence. The {what} asked for are "
                f"those of 'starts' (row 2) in the sentence with {NEW_TOKEN!r} appended: seven of them.",
            )
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

NEW_TOKEN = "forward"
"""The token the exercises append to the six of the journey sentence."""

NEW_INPUT = (0.91, 0.12, 0.65)
"""Its input vector (3 numbers in [0, 1], like the others); the tasks print it."""


def _journey():
    """The example and the scores of the seven-token sentence (the journey sentence + NEW_TOKEN)."""
    ex = examples.load_example("journey")
    x = np.vstack([ex.inputs, NEW_INPUT])              # (7, 3)
    scores = (x @ ex.w_q) @ (x @ ex.w_k).T              # (7, 2) x (2, 7) -> (7, 7)
    return ex, x, scores


def _six(ex):
    """The scores of the six-token sentence, as notebook 04 computes them."""
    return ex.q @ ex.k.T                                # (6, 6)


@_never_raise
def check_journey_scores_row(row):
    """Check the unscaled scores of the query "starts" (row 2) in the sentence grown to seven tokens.

    The token ``NEW_TOKEN`` with input ``NEW_INPUT`` is appended to the six of the
    journey sentence; the row asked for pairs the query of "starts" with all seven
    keys. Notebook 04 computes the six-token sentence only.

    Parameters
    ----------
    row : array_like, shape (7,)

    Returns
    -------
    CheckResult
        Mistakes recognised, in this order: ``six_keys`` (a row of the
        six-token sentence), ``document_row`` (the row the document prints),
        ``new_token_first`` (the new token put before the others), ``scaled``
        (already divided by sqrt(d_k)), ``divided_by_d_k``, ``swapped_q_k`` (the
        column of "starts"), ``no_projection`` (X X^T), ``whole_matrix``,
        ``wrong_row`` (another token's row), then ``wrong_shape`` /
        ``wrong_values``; ``wrong_type``, ``complex``, ``not_finite``.
    """
    ex, x, scores = _journey()
    d_k = ex.q.shape[-1]
    exact = scores[_STARTS_ROW]
    arr, result = _as_real_array(row, "scores")
    if result is not None:
        return result
    x_first = np.vstack([NEW_INPUT, ex.inputs])
    mistakes = [
        ("six_keys", lambda: _six(ex)[_STARTS_ROW],
         f"That is the row of 'starts' in the six-token sentence. The sentence now has seven tokens: "
         f"{NEW_TOKEN!r} brings a key of its own, so the row has seven scores."),
        ("document_row", lambda: ex.figure("scores_row1").printed,
         "That is the row the document prints, for 'journey' in the six-token sentence; the row asked "
         f"for is that of 'starts', against the seven keys of the sentence with {NEW_TOKEN!r}."),
        ("new_token_first", lambda: ((x_first @ ex.w_q) @ (x_first @ ex.w_k).T)[_STARTS_ROW + 1],
         f"You put {NEW_TOKEN!r} before the other tokens; it is appended at the end (index 6), so "
         "'starts' keeps index 2 and the order of the keys is that of the sentence."),
        ("scaled", lambda: exact / math.sqrt(d_k),
         f"These are already divided by sqrt(d_k) = sqrt({d_k}); the row asked for is before scaling."),
        ("divided_by_d_k", lambda: exact / d_k,
         "You divided by d_k; the row asked for is before any scaling."),
        ("swapped_q_k", lambda: scores[:, _STARTS_ROW],
         "You paired the 'starts' key with every query (the column of S); the row pairs the "
         "'starts' query with every key."),
        ("no_projection", lambda: (x @ x.T)[_STARTS_ROW],
         "These are the recap's scores x_starts · x_j, without the projections; use the queries "
         "X W_q and keys X W_k."),
        ("whole_matrix", lambda: scores,
         "That is the whole 7 x 7 matrix; give only the row of 'starts' (row 2)."),
    ]
    tokens = list(ex.tokens) + [NEW_TOKEN]
    result = _match_row(arr, scores, _STARTS_ROW, mistakes, tokens=tokens, what="scores", atol=HAND_ATOL)
    result = _six_token_row(result, arr, _six(ex), ex.tokens, "scores", HAND_ATOL)
    return result if result is not None else _correct(
        f"Right: the 'starts' query against all seven keys, before scaling. The first six are the "
        f"scores of the six-token sentence; {NEW_TOKEN!r} only adds the seventh."
    )


WEIGHTS_ATOL = 2e-4
"""Tolerance of the weights row: the row of "journey" is 0.0008 from that of "starts" (in one
entry), so two-decimal answers cannot tell them apart; the row is computed, not rounded."""


@_never_raise
def check_journey_weights_row(row):
    """Check the attention weights of the query "starts" in the seven-token sentence.

    Softmax of its seven scores divided by sqrt(d_k). The row of "journey" differs
    from it by less than 0.001 in one entry, so the tolerance is ``WEIGHTS_ATOL`` =
    2e-4 and a row rounded to two or three decimals is named ``rounded``.

    Parameters
    ----------
    row : array_like, shape (7,)

    Returns
    -------
    CheckResult
        Mistakes recognised, in this order: ``six_keys`` (a row of the
        six-token sentence), ``kept_six_weights`` (those six with a seventh
        appended), ``document_row``, ``rounded``, ``unscaled``,
        ``divided_by_d_k``, ``scaled_by_d_in``, ``softmax_whole_matrix``,
        ``wrong_axis``, ``whole_matrix``, ``wrong_row``, then ``wrong_shape`` /
        ``wrong_values``; ``wrong_type``, ``complex``, ``not_finite``.
    """
    ex, x, scores = _journey()
    d_k = ex.q.shape[-1]
    d_in = ex.inputs.shape[-1]
    weights = attention.softmax(scores / math.sqrt(d_k))
    exact = weights[_STARTS_ROW]
    six = attention.softmax(_six(ex) / math.sqrt(d_k))[_STARTS_ROW]
    arr, result = _as_real_array(row, "weights")
    if result is not None:
        return result
    mistakes = [
        ("six_keys", lambda: six,
         f"That is the row of 'starts' in the six-token sentence. With {NEW_TOKEN!r} appended the "
         "row has seven weights, one per key."),
        ("kept_six_weights", lambda: np.append(six, exact[-1]),
         f"Your first six weights are those of the six-token sentence, and with the weight of "
         f"{NEW_TOKEN!r} the row sums to {six.sum() + exact[-1]:.4f}, not 1. Each weight is "
         "normalised by the whole row, which now has seven keys."),
        ("document_row", lambda: ex.figure("weights_row1").printed,
         "That is the row the document prints, for 'journey' in the six-token sentence (add it up: "
         "it sums to 0.99). Compute the row of 'starts' from its seven scores."),
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
         "Your softmax normalised the whole 7 x 7 matrix at once, so this row sums to much less than 1; "
         "normalise the row of 'starts' on its own."),
        ("wrong_axis", lambda: attention.softmax(scores / math.sqrt(d_k), axis=0)[:, _STARTS_ROW],
         "Your softmax normalised over the queries (axis=0), which gives the column of 'starts'; "
         "normalise the row over the keys (axis=-1)."),
        ("whole_matrix", lambda: weights,
         "That is the whole 7 x 7 weights matrix; give only the row of 'starts' (row 2)."),
    ]
    tokens = list(ex.tokens) + [NEW_TOKEN]
    result = _match_row(arr, weights, _STARTS_ROW, mistakes, tokens=tokens, what="weights",
                        atol=WEIGHTS_ATOL)
    result = _six_token_row(result, arr, attention.softmax(_six(ex) / math.sqrt(d_k)), ex.tokens,
                            "weights", WEIGHTS_ATOL)
    return result if result is not None else _correct(
        f"Right: softmax of the seven 'starts' scores divided by sqrt({d_k}), each entry to within "
        f"{WEIGHTS_ATOL:g}."
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


VAR_Q = 3.0
"""The variance of each query entry in exercise 4 (the keys' entries have variance ``VAR_K``)."""

VAR_K = 2.0


@_never_raise
def check_journey_variance_d100(before, after=None):
    """Check the expected variance of q·k at dimension 100 for query entries of variance 3, keys 2.

    The entries of q have variance ``VAR_Q`` = 3, those of k variance ``VAR_K`` = 2,
    all independent with mean 0 (notebook 08 measures unit variances only). The
    rule, the same as E3's: the task asks for the **expected value**, which follows
    from the formula, so only rounding errors of the arithmetic are allowed
    (``EXPECTED_RTOL`` = 1e-6). An answer within 30 % of it that is not a recognised
    mistake (a simulated or rounded estimate) is refused as ``simulation_estimate``.

    Parameters
    ----------
    before : number
    after : number, optional

    Returns
    -------
    CheckResult
        Mistakes recognised: ``unit_variance`` (the values for entries of
        variance 1), ``std_of_queries`` (the standard deviations used in place of
        the variances), ``added_variances`` (d (3 + 2)), ``gave_std``,
        ``already_scaled``, ``squared``, ``variance_divided_by_sqrt``,
        ``divided_by_d_k``, ``not_scaled``, ``simulation_estimate``;
        ``not_a_number``, ``not_finite``, ``wrong_value``.
    """
    d = int(examples.load_example("journey_variance_d100").d_k)
    var = d * VAR_Q * VAR_K
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
                    "asks for the expectation, which follows exactly from the rules for variances, "
                    "not a sample: a simulation lands near the expectation and never on it, and a "
                    "rounded estimate is a sample too.",
                )
            return result

        return judge

    given = f"here the query entries have variance {VAR_Q:g} and the key entries {VAR_K:g}"
    unit = ("unit_variance", float(d), f"That is the variance for entries of variance 1, as in notebook 08; {given}.")
    unit_after = ("unit_variance", 1.0, f"That is the variance after scaling for entries of variance 1; {given}.")
    std = f"You used the standard deviations (sqrt({VAR_Q:g}) and sqrt({VAR_K:g})) where the variances belong."
    parts = [
        ("the variance before scaling", before, expected_value(functools.partial(
            _number_verdict, what="variance before scaling", expected=var, rtol=rtol,
            hint=f"q·k adds d = {d} products q_i k_i; what is the variance of one of them?",
            mistakes=[
                unit,
                ("std_of_queries", d * math.sqrt(VAR_Q * VAR_K), std),
                ("added_variances", d * (VAR_Q + VAR_K), "You added the variances of q_i and k_i; "
                 "they add for a sum of independent terms, and q_i k_i is a product."),
                ("gave_std", math.sqrt(var), "That is the standard deviation; the variance is its square."),
                ("already_scaled", var_after, "That is the variance after scaling; before, it grows with d."),
                ("squared", var * var, "That is the square of the variance; the variance grows like d, "
                 "not d^2."),
            ]), "variance before scaling", var)),
        ("the variance after scaling", after, expected_value(functools.partial(
            _number_verdict, what="variance after scaling", expected=var_after, rtol=rtol,
            hint="Dividing every score by sqrt(d) divides the variance by d.",
            mistakes=[
                unit_after,
                ("std_of_queries", math.sqrt(VAR_Q * VAR_K), std),
                ("added_variances", VAR_Q + VAR_K, "You added the variances of q_i and k_i; "
                 "they add for a sum of independent terms, and q_i k_i is a product."),
                ("variance_divided_by_sqrt", var / math.sqrt(d), "You divided the variance by sqrt(d); "
                 "dividing the scores by sqrt(d) divides their variance by d."),
                ("divided_by_d_k", var / d**2, "That is what dividing the scores by d would give; "
                 "the scaling divides them by sqrt(d)."),
                ("not_scaled", var, "That is the variance before scaling."),
            ]), "variance after scaling", var_after)),
    ]
    return _parts(
        parts,
        done="Right: both are the expected values. Scaling by sqrt(d) removes the growth with d, not "
        f"the variance of the entries: the scaled scores still have variance {VAR_Q * VAR_K:g}.",
        empty=f"No answer yet: the variance of q·k at d = {d} before and after dividing by sqrt({d}).",
    )
