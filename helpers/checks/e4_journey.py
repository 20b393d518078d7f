"""Checks of E4, *The Engine of Transformers: Building Scaled Dot-Product Attention* ("journey")."""

from __future__ import annotations

import functools
import math

import numpy as np

from helpers import attention, examples
from helpers.checks._answer_table import TABLE
from helpers.checks._core import (
    CODE_TOL,
    HAND_ATOL,
    _as_real_array,
    _broke,
    _call_student,
    _check_callable,
    _close,
    _correct,
    _float_result,
    _fresh_rng,
    _incorrect,
    _low_precision,
    _match,
    _named_mistake,
    _never_raise,
    _overflow,
    _parts,
    _precision_verdict,
    _raised,
    _reshape_needed,
    _sealed_number_verdict,
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
        ("queries_as_keys", lambda: ((x @ ex.w_q) @ (x @ ex.w_q).T)[_STARTS_ROW],
         "Your scores pair the 'starts' query with the other tokens' queries (Q Q^T, W_q used for the "
         "keys too); the keys are X W_k."),
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
        ``wrong_axis``, ``whole_matrix``, ``wrong_row``, ``not_normalised`` (seven
        weights that do not sum to 1), then ``wrong_shape`` / ``wrong_values``;
        ``wrong_type``, ``complex``, ``not_finite``.
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
    if result is not None and result.mistake == "wrong_values" and arr.shape == exact.shape:
        total = float(arr.sum())
        if abs(total - 1.0) > 0.02:
            return _incorrect(
                "not_normalised",
                f"Your seven weights sum to {total:.4g}, not 1: a row of weights is a softmax, "
                "so its entries are positive and add up to 1. Divide each exponential by the sum "
                "over the whole row.",
            )
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
    cases = [(f"the journey sentence with {NEW_TOKEN!r} appended",
              (np.vstack([ex.inputs, NEW_INPUT]), ex.w_q, ex.w_k, ex.w_v)),
             (f"a random case (n = {n}, d_in = {d_in}, d_out = {d_out})", square)]
    probes = np.random.default_rng(_PROBE_SEED if seed is None else seed)
    # d_k != d_v both ways (as in E5 and the hidden test): dividing by sqrt(d_v) is then a named mistake
    for n, d_in, d_k, d_v, spread in ((7, 3, 5, 2, 1.0), (33, 8, 6, 4, 0.5), (5, 4, 3, 5, 1.5), (1, 4, 2, 3, 1.0)):
        x = probes.normal(size=(n, d_in)) * spread
        x[0] *= 3.0  # one row larger than the others: its scores are larger
        ws = (probes.normal(size=(d_in, d_k)), probes.normal(size=(d_in, d_k)), probes.normal(size=(d_in, d_v)))
        cases.append((f"a random case (n = {n}, d_in = {d_in}, d_k = {d_k}, d_v = {d_v})", (x,) + ws))
    fresh = _fresh_rng()  # a case drawn anew at each run: no table of the probes can hold it
    x = fresh.normal(size=(5, 4))
    cases.append(("a random case drawn at this run (n = 5, d_in = 4, d_k = 3, d_v = 2)",
                  (x, fresh.normal(size=(4, 3)), fresh.normal(size=(4, 3)), fresh.normal(size=(4, 2)))))
    return cases


_PROBE_SEED = 8_675_309

MAX_SCORE = 100.0
"""The largest score (in size) of any E4 probe: far from exp's overflow at about 709."""

EXPECTED_RTOL = 1e-6
"""Relative tolerance for an expected value worked out from the formula: it is exact, so only
rounding errors of the arithmetic are allowed (100 / sqrt(100)**2 is 1.0000000000000002)."""

ESTIMATE_RTOL = 0.3
"""An answer within 30 % of the expected value that is not a recognised mistake is taken as a
simulated estimate (a sample), and refused as such: the task asks for the expectation."""


def _decode_reference(x_new, keys, values, w_q, w_k, w_v, scale=None, own=True):
    """The new token's context and the grown cache (``own``=False: it does not attend to itself)."""
    q, k, v = x_new @ w_q, x_new @ w_k, x_new @ w_v     # (d_k,), (d_k,), (d_v,)
    all_k, all_v = np.vstack([keys, k]), np.vstack([values, v])
    use_k, use_v = (all_k, all_v) if own else (keys, values)
    scale = 1 / math.sqrt(w_k.shape[1]) if scale is None else scale
    w = attention.softmax(use_k @ q * scale)           # (n + 1,)
    return w @ use_v, all_k, all_v, w


def _decode_cases(seed=None):
    """``(label, x_new, keys, values, w_q, w_k, w_v)``: the cache of every probe of
    :func:`_self_attention_cases` but its last token, which is the new one."""
    cases = []
    for label, (x, w_q, w_k, w_v) in _self_attention_cases(seed):
        if x.shape[0] < 2:
            x = np.vstack([x, 0.5 * x])                  # a cache of one token
        old = x[:-1]
        cases.append((label, x[-1], old @ w_k, old @ w_v, w_q, w_k, w_v))
    return cases


def _as_decode(value, d_v, n_new, d_k):
    """The student's (context, keys, values) as float arrays, or None (a (1, d_v) context too: see
    :func:`helpers.checks._core._reshape_needed`)."""
    if not isinstance(value, (tuple, list)) or len(value) != 3:
        return None
    parts = [_float_result(a) for a in value]
    if any(a is None for a in parts):
        return None
    context, keys, values = parts
    if context.shape != (d_v,) or keys.shape != (n_new, d_k) or values.shape != (n_new, d_v):
        return None
    return context, keys, values


@_never_raise
def check_self_attention(fn, seed=None):
    """Check a student's ``attend_new_token(x_new, keys, values, w_q, w_k, w_v)``: one decoding step.

    The keys (n, d_k) and values (n, d_v) of the tokens so far are kept (a cache);
    a new token with input ``x_new`` (d_in,) arrives. The function returns the
    tuple ``(context, keys, values)``: the new token's context vector (d_v,), from
    its query against all n + 1 keys (its own included), scaled by sqrt(d_k), and
    the cache grown by its key and value, (n + 1, d_k) and (n + 1, d_v). The old
    inputs are not passed: the old keys and values are not recomputed. Notebook 04
    computes all the tokens at once from their inputs. Run on the journey sentence
    with the token "forward" appended (``NEW_INPUT``), a seeded case, four cases the
    notebook does not show (other shapes, d_k != d_v both ways, 33 tokens, a cache of one token, one input
    row larger than the rest) and one case drawn anew at each run. Every score stays
    below ``MAX_SCORE`` = 100, so the softmax of notebook 01, without the max
    subtraction, passes. The answer is read first by
    :func:`helpers.checks._core.static_refusal`; while it runs, the kernels of
    :mod:`helpers.attention` are replaced by recording stand-ins.

    Parameters
    ----------
    fn : callable
        ``attend_new_token(x_new, keys, values, w_q, w_k, w_v) -> (context, keys, values)``,
        one decoding step with a cache.
    seed : int, optional

    Returns
    -------
    CheckResult
        Mistakes recognised: ``not_callable``, ``reaches_library``,
        ``used_library``, ``raises`` (and the named ones), ``whole_sentence_signature``
        (a function of the whole sentence's inputs, as in notebook 04),
        ``cache_not_returned`` (the context alone), ``wrong_shape``, ``overflow``,
        ``not_finite``, ``cache_not_grown``, ``new_token_first``,
        ``keys_values_swapped``, ``key_from_w_q``, ``forgot_own_key``, ``unscaled``,
        ``divided_by_d_k``, ``scaled_by_d_v``, ``scaled_by_d_in``, ``unprojected_value``,
        ``wrong_values``. A float32 result within ``FLOAT32_TOL`` is accepted with a
        note on precision.
    """
    what = "attend_new_token"
    result = _check_callable(fn, what)
    if result is not None:
        return result
    if isinstance(fn, type):
        return _incorrect(
            "whole_sentence_signature",
            "You passed a class. The task asks for a function attend_new_token(x_new, keys, values, "
            "w_q, w_k, w_v) that handles one new token, given the keys and values kept so far.",
        )
    note = ""
    for case, x_new, keys, values, w_q, w_k, w_v in _decode_cases(seed):
        call = _call_student(fn, x_new, keys, values, w_q, w_k, w_v)
        if call.used:
            return _used_library(call, what)
        if isinstance(call.error, TypeError) and "positional argument" in str(call.error):
            return _incorrect(
                "whole_sentence_signature",
                f"Your function does not take the six arguments ({call.error}). The task asks for "
                "attend_new_token(x_new, keys, values, w_q, w_k, w_v): one new token, given the keys "
                "and values kept so far, not the whole sentence's inputs.",
            )
        if call.error is not None:
            return _raised(call, what)
        n, d_k = keys.shape
        d_in, d_v = w_v.shape
        expected, all_k, all_v, weights = _decode_reference(x_new, keys, values, w_q, w_k, w_v)
        got = _as_decode(call.value, d_v, n + 1, d_k)
        if got is None:
            value = call.value
            single = _float_result(value)
            if single is not None and single.size == d_v:
                return _incorrect(
                    "cache_not_returned",
                    "You returned the context vector alone. Return the tuple (context, keys, values): "
                    "the cache grown by the new token, so that the next token can attend to it.",
                )
            if isinstance(value, (tuple, list)) and len(value) == 3:
                shapes = [getattr(_float_result(a), "shape", None) for a in value]
                k_shape = shapes[1]
                if shapes[0] is not None and k_shape == (n + 1, d_k) and shapes[2] == (n + 1, d_v):
                    reshape = _reshape_needed("context", shapes[0], (d_v,))
                    if reshape is not None:
                        return reshape
                if k_shape == (n, d_k):
                    return _incorrect(
                        "cache_not_grown",
                        f"On {case} the keys and values you return are the {n} you were given; the new "
                        "token's key and value belong in them too, so that the next token can attend to it.",
                    )
                if k_shape == (n + 1, d_v) and shapes[2] == (n + 1, d_k) and d_k != d_v:
                    return _incorrect("keys_values_swapped", "You returned the values where the keys "
                                      "belong and the keys where the values belong.")
            return _incorrect(
                "wrong_shape",
                f"On {case} (n = {n} tokens so far, d_k = {d_k}, d_v = {d_v}) your function should "
                f"return a tuple (context, keys, values) of shapes ({d_v},), ({n + 1}, {d_k}) and "
                f"({n + 1}, {d_v}).",
            )
        context, got_k, got_v = got
        right_cache = _close(got_k, all_k, CODE_TOL, CODE_TOL) and _close(got_v, all_v, CODE_TOL, CODE_TOL)
        if right_cache and _close(context, expected, CODE_TOL, CODE_TOL):
            continue
        if call.overflowed:
            return _overflow(call, what, f" on {case}")
        if _broke(call, context):
            return _incorrect(
                "not_finite",
                f"Your context vector is NaN or infinity on {case}, although every score there is below "
                f"{MAX_SCORE:g} in size, so np.exp cannot overflow. Look for a division by zero: a "
                "square root of 0, a sum of 0, or a width taken from the wrong axis.",
            )
        dtype = next((t for t in map(_low_precision, call.value) if t is not None), None)
        if dtype is not None:
            ok, message = _precision_verdict(dtype, np.concatenate([context, got_k.ravel(), got_v.ravel()]),
                                             np.concatenate([expected, all_k.ravel(), all_v.ravel()]),
                                             "attend_new_token")
            if ok:
                note = message
                continue
            if message:
                return _incorrect("precision", message)
        k_new, v_new = x_new @ w_k, x_new @ w_v
        if not right_cache:
            first_k, first_v = np.vstack([k_new, keys]), np.vstack([v_new, values])
            if _close(got_k, first_k, CODE_TOL, CODE_TOL) and _close(got_v, first_v, CODE_TOL, CODE_TOL):
                return _incorrect("new_token_first", "Your new key and value went in front of the others; "
                                  "they belong at the end, in the order of the sentence.")
            if _close(got_k[-1], x_new @ w_q, CODE_TOL, CODE_TOL):
                return _incorrect("key_from_w_q", "The new key is the new input times W_q; a key is made "
                                  "with W_k (and a value with W_v).")
            return _incorrect(
                "wrong_cache",
                f"On {case} the keys or values you return are not those of the sentence so far followed "
                "by the new token's.",
            )
        mistakes = [
            ("forgot_own_key", lambda: _decode_reference(x_new, keys, values, w_q, w_k, w_v, own=False)[0],
             "Your new token attends to the earlier tokens only. In self-attention it attends to every "
             "token of the sentence, itself included."),
            ("unscaled", lambda: _decode_reference(x_new, keys, values, w_q, w_k, w_v, scale=1.0)[0],
             "You forgot to divide the scores by sqrt(d_k) (d_k, the width of the keys)."),
            ("divided_by_d_k", lambda: _decode_reference(x_new, keys, values, w_q, w_k, w_v, scale=1 / d_k)[0],
             "You divided the scores by d_k; divide by sqrt(d_k)."),
            ("scaled_by_d_v", lambda: _decode_reference(x_new, keys, values, w_q, w_k, w_v,
                                                         scale=1 / math.sqrt(d_v))[0],
             f"You divided the scores by sqrt(d_v) (on {case}, the values' width {d_v}); the scaling uses "
             f"the keys' width: divide by sqrt(d_k) = sqrt({d_k})."),
            ("scaled_by_d_in", lambda: _decode_reference(x_new, keys, values, w_q, w_k, w_v,
                                                          scale=1 / math.sqrt(d_in))[0],
             "You scaled by the square root of the input width d_in; the keys have width d_k, so "
             "divide by sqrt(d_k)."),
            ("unprojected_value", lambda: weights @ np.vstack([values, x_new]),
             "The new token's value is its input x_new; a value is the input times W_v."),
            ("returned_weights", lambda: weights,
             "You returned the attention weights as the context; the context is weights @ values."),
        ]
        named = _named_mistake(context, expected, mistakes)
        if named is not None:
            return named
        return _incorrect(
            "wrong_values",
            f"Your context vector on {case} is not right, and not one of the mistakes this check "
            "knows. Print the shape of each step and compare it with the task.",
        )
    return _correct(
        "Right: the new token's query against every key, its own included, scaled by sqrt(d_k), and "
        "a cache grown by its key and value." + note
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

    def estimate(what, value):
        return _incorrect(
            "simulation_estimate",
            f"Your {what} is {value:g}: close to the expected value, but not it. The task asks for the "
            "expectation, which follows exactly from the rules for variances, not a sample: a simulation "
            "lands near the expectation and never on it, and a rounded estimate is a sample too.",
        )

    def part(name, what, hint, messages):
        return functools.partial(_sealed_number_verdict, what=what, entry=TABLE[f"e4_variance:{name}"],
                                 messages=messages, hint=hint, estimate=estimate)

    given = f"here the query entries have variance {VAR_Q:g} and the key entries {VAR_K:g}"
    std = f"You used the standard deviations (sqrt({VAR_Q:g}) and sqrt({VAR_K:g})) where the variances belong."
    added = ("You added the variances of q_i and k_i; they add for a sum of independent terms, and q_i k_i "
             "is a product.")
    parts = [
        ("the variance before scaling", before, part(
            "before", "variance before scaling", f"q·k adds d = {d} products q_i k_i; what is the variance "
            "of one of them?", {
                "unit_variance": f"That is the variance for entries of variance 1, as in notebook 08; {given}.",
                "std_of_queries": std,
                "added_variances": added,
                "gave_std": "That is the standard deviation; the variance is its square.",
                "already_scaled": "That is the variance after scaling; before, it grows with d.",
                "squared": "That is the square of the variance; the variance grows like d, not d^2.",
            })),
        ("the variance after scaling", after, part(
            "after", "variance after scaling", "Dividing every score by sqrt(d) divides the variance by d.", {
                "unit_variance": f"That is the variance after scaling for entries of variance 1; {given}.",
                "std_of_queries": std,
                "added_variances": added,
                "variance_divided_by_sqrt": "You divided the variance by sqrt(d); dividing the scores by "
                "sqrt(d) divides their variance by d.",
                "divided_by_d_k": "That is what dividing the scores by d would give; the scaling divides "
                "them by sqrt(d).",
                "not_scaled": "That is the variance before scaling.",
            })),
    ]
    return _parts(
        parts,
        done="Right: both are the expected values. Scaling by sqrt(d) removes the growth with d, not "
        "the variance of the entries: the scaled scores still have the variance of one product q_i k_i.",
        empty=f"No answer yet: the variance of q·k at d = {d} before and after dividing by sqrt({d}).",
    )
