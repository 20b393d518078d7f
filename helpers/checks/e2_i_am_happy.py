"""Checks of E2, *Day 43 - Scaled Dot-Product Attention Deep Dive* ("I am happy"), one step on.

Lesson 01 computes the weights and context vectors of "I am happy" itself, so the exercises
add a fourth token, "today" (:data:`TODAY`), and ask for the weights and context vectors of
the four tokens: the same computation, on an example no lesson has worked.

The docstrings say what each check compares and which mistakes it names; they hold no answer.
Worked examples are in the tests. The messages never answer the exercises' written questions.
"""

from __future__ import annotations

import math

import numpy as np

from helpers import attention, examples
from helpers.checks._core import (
    HAND_ATOL,
    _as_real_array,
    _correct,
    _incorrect,
    _match,
    _never_raise,
)
from helpers.checks.e1_section_5_2 import _with_precision_note

ROUNDED_ATOL = 2e-4
"""An answer within this of what rounded scores give, and further than ``2 * ROUNDED_ATOL`` from
the exact answer, was computed from rounded scores (an exact answer kept to four decimals is
within 5e-5 of the exact one). Where rounding moves the answer by more than ``2 * HAND_ATOL``,
an answer within ``HAND_ATOL`` of the rounded version (two decimals) is recognised too."""


def _rounded_score_variants(scores, d_k):
    """The scaled scores a student may round before the softmax: (label, scaled scores)."""
    root = math.sqrt(d_k)
    scaled = scores / root
    return [
        ("rounded to one decimal", np.round(scaled, 1)),
        ("rounded to two decimals", np.round(scaled, 2)),
        ("divided by sqrt(3) rounded to 1.7", scores / 1.7),
        ("divided by sqrt(3) rounded to 1.73, then rounded to two decimals", np.round(scores / 1.73, 2)),
    ]


def _from_rounded_scores(arr, exact, variants, then=None):
    """True when ``arr`` follows from rounded scaled scores rather than the exact ones."""
    if arr.shape != exact.shape or np.allclose(arr, exact, rtol=0, atol=2 * ROUNDED_ATOL):
        return False
    for _, scaled in variants:
        value = attention.softmax(scaled)
        if then is not None:
            value = then(value)
        if np.allclose(value, exact, rtol=0, atol=2 * HAND_ATOL):
            # Close to the exact answer: only an answer kept to four decimals tells them apart.
            if np.allclose(arr, value, rtol=0, atol=ROUNDED_ATOL):
                return True
        elif np.allclose(arr, value, rtol=0, atol=HAND_ATOL) and not np.allclose(arr, exact, rtol=0, atol=HAND_ATOL):
            return True
    return False


_ROUNDED_MESSAGE = (
    "Your {what} follow from scaled scores that were rounded before the softmax (to one or two "
    "decimals, or with sqrt(3) rounded). The exercise asks for the exact {what}: keep every "
    "digit until the end, and round only what you print."
)

TODAY = (1.0, 1.1, 1.2)
"""The embedding of "today", the fourth token of E2's "I am happy today": the next step of the
example's pattern, each token 0.3 further along every axis."""


_TODAY_FIRST = [3, 0, 1, 2]
"""The four tokens with "today" put first (the order of a sentence built with the new token in front)."""


def _four_tokens():
    """X of "I am happy today" (4, 3), and X of "I am happy" (3, 3); Q = K = V = X."""
    x3 = np.asarray(examples.load_example("i_am_happy").q, dtype=float)
    return np.vstack([x3, np.asarray(TODAY)[None, :]]), x3


def _shape_mistakes(x, x3, then):
    """The mistakes of shape: "today" left out, or used on one side only.

    ``then(queries, keys)`` turns the queries and keys (Q = K = V here) into the answer.
    """
    return [
        ("three_tokens", lambda: then(x3, x3),
         "These are for the three tokens of \"I am happy\", as in lesson 01; the exercise adds "
         "\"today\", so there are four tokens, each a query and a key."),
        ("today_not_a_key", lambda: then(x, x3),
         "\"today\" is one of your queries but none of your keys: every token is both."),
        ("today_not_a_query", lambda: then(x3, x),
         "\"today\" is one of your keys but none of your queries: every token is both."),
    ]

# ---------------------------------------------------------------------------
# "I am happy today": the exact weights
# ---------------------------------------------------------------------------


@_never_raise
def check_i_am_happy_weights(weights):
    """Check the exact 4x4 attention weights of "I am happy today" (scaled, d_k = 3).

    The three embeddings of ``load_example("i_am_happy")`` and :data:`TODAY`, with
    Q = K = V = X as in the document.

    Parameters
    ----------
    weights : array_like, shape (4, 4)
        The scaled attention weights, one row per query.

    Returns
    -------
    CheckResult
        Mistakes recognised: ``three_tokens`` (a 3x3 answer: "I am happy" without
        "today"), ``today_not_a_key``, ``today_not_a_query``, ``rounded_scores`` (scores
        rounded before the softmax, or sqrt(3) rounded), ``unscaled``, ``divided_by_d_k``,
        ``wrong_axis`` (``transposed`` coincides with it here, since Q = K),
        ``softmax_whole_matrix``, ``returned_scores``, ``divided_by_sqrt_n`` (sqrt of
        X.shape[0]), ``tokens_reordered`` ("today" first), then ``wrong_shape`` /
        ``wrong_values``; ``wrong_type``, ``complex``, ``not_finite``.

    Examples
    --------
    >>> check_i_am_happy_weights(None).status
    'not yet'
    """
    x, x3 = _four_tokens()
    d_k = x.shape[-1]
    root = math.sqrt(d_k)
    scores = x @ x.T
    exact = attention.softmax(scores / root)
    arr, result = _as_real_array(weights, "weights")
    if result is not None:
        return result
    if _from_rounded_scores(arr, exact, _rounded_score_variants(scores, d_k)):
        return _incorrect("rounded_scores", _ROUNDED_MESSAGE.format(what="weights"))
    mistakes = _shape_mistakes(x, x3, lambda q, k: attention.softmax(q @ k.T / root)) + [
        ("unscaled", lambda: attention.softmax(scores),
         "Your weights come from scores that were not divided by sqrt(d_k) = sqrt(3)."),
        ("divided_by_d_k", lambda: attention.softmax(scores / d_k),
         "You divided the scores by d_k = 3; the scaling divides by sqrt(d_k)."),
        ("wrong_axis", lambda: attention.softmax(scores / root, axis=0),
         "Your softmax normalised the columns (axis=0); each row (one query) should sum to 1."),
        ("softmax_whole_matrix", lambda: attention.softmax((scores / root).ravel()).reshape(scores.shape),
         "Your softmax normalised the whole matrix at once, so all sixteen weights sum to 1; each "
         "row (one query) should sum to 1 on its own."),
        ("returned_scores", lambda: scores / root,
         "These are the scaled scores; the weights are one step further."),
        ("divided_by_sqrt_n", lambda: attention.softmax(scores / math.sqrt(len(x))),
         f"You divided the scores by sqrt({len(x)}), the square root of the number of tokens "
         "(X.shape[0]); the scaling uses d_k, the width of the queries and keys (X.shape[1])."),
        ("tokens_reordered", lambda: attention.softmax(x[_TODAY_FIRST] @ x[_TODAY_FIRST].T / root),
         "Your rows and columns are those of the tokens in another order, with \"today\" first; keep "
         "the sentence's order: 'I', 'am', 'happy', 'today'."),
    ]
    result = _match(arr, exact, mistakes, what="weights", atol=HAND_ATOL)
    if result is not None and result.mistake == "wrong_shape" and arr.shape == (len(x3), len(x3)):
        return _incorrect("three_tokens", mistakes[0][2])
    # Not ``result or ...``: an incorrect CheckResult is falsy.
    return result if result is not None else _with_precision_note(
        _correct("Right: the exact scaled weights of the four tokens, row by row."), weights
    )


# ---------------------------------------------------------------------------
# "I am happy today": the context vectors
# ---------------------------------------------------------------------------


@_never_raise
def check_i_am_happy_context(context):
    """Check the exact context vectors of "I am happy today" (scaled attention, d_k = 3).

    The three embeddings of ``load_example("i_am_happy")`` and :data:`TODAY`, with
    Q = K = V = X.

    Parameters
    ----------
    context : array_like, shape (4, 3)
        One context vector per token (row), exact, not built on rounded weights.

    Returns
    -------
    CheckResult
        Mistakes recognised: ``three_tokens`` (a 3x3 answer: "I am happy" without
        "today"), ``today_not_a_key`` (also: "today" left out of the values),
        ``today_not_a_query``, ``rounded_scores`` (scores rounded before the softmax),
        ``unscaled``, ``divided_by_d_k``, ``wrong_axis`` (softmax over the queries),
        ``softmax_whole_matrix``, ``returned_weights``, ``no_softmax`` (scaled scores @ V),
        ``transposed``, ``divided_by_sqrt_n``, ``tokens_reordered``, then ``wrong_shape`` /
        ``wrong_values``; ``wrong_type``,
        ``complex``, ``not_finite``.

    Examples
    --------
    >>> check_i_am_happy_context(None).status
    'not yet'
    """
    x, x3 = _four_tokens()
    v = x
    d_k = x.shape[-1]
    root = math.sqrt(d_k)
    scores = x @ x.T
    scaled = scores / root
    weights = attention.softmax(scaled)
    exact = weights @ v
    arr, result = _as_real_array(context, "context vectors")
    if result is not None:
        return result
    if _from_rounded_scores(arr, exact, _rounded_score_variants(scores, d_k), then=lambda w: w @ v):
        return _incorrect("rounded_scores", _ROUNDED_MESSAGE.format(what="context vectors"))
    mistakes = _shape_mistakes(x, x3, lambda q, k: attention.softmax(q @ k.T / root) @ k) + [
        ("unscaled", lambda: attention.softmax(scores) @ v,
         "Your context vectors come from scores that were not divided by sqrt(d_k) = sqrt(3)."),
        ("divided_by_d_k", lambda: attention.softmax(scores / d_k) @ v,
         "You divided the scores by d_k = 3; the scaling divides by sqrt(d_k)."),
        ("wrong_axis", lambda: attention.softmax(scaled, axis=0) @ v,
         "Your softmax normalised the columns (axis=0); each row of weights (one query) should sum to 1."),
        ("softmax_whole_matrix", lambda: attention.softmax(scaled.ravel()).reshape(scores.shape) @ v,
         "Your softmax normalised the whole score matrix at once; each row of weights (one query) "
         "should sum to 1 on its own."),
        ("returned_weights", lambda: weights,
         "These are the attention weights; the context vectors are one step further."),
        ("no_softmax", lambda: scaled @ v,
         "You multiplied the scaled scores by V; the softmax step is missing."),
        ("transposed", lambda: exact.T,
         "Your matrix is transposed: one row per token (query), one column per value dimension."),
        ("divided_by_sqrt_n", lambda: attention.softmax(scores / math.sqrt(len(x))) @ v,
         f"You divided the scores by sqrt({len(x)}), the square root of the number of tokens "
         "(X.shape[0]); the scaling uses d_k, the width of the queries and keys (X.shape[1])."),
        ("tokens_reordered", lambda: attention.softmax(x[_TODAY_FIRST] @ x[_TODAY_FIRST].T / root) @ x[_TODAY_FIRST],
         "Your rows are those of the tokens in another order, with \"today\" first; keep the "
         "sentence's order: 'I', 'am', 'happy', 'today'."),
    ]
    result = _match(arr, exact, mistakes, what="context vectors", atol=HAND_ATOL)
    if result is not None and result.mistake == "wrong_shape" and arr.shape == x3.shape:
        return _incorrect("three_tokens", mistakes[0][2])
    return result if result is not None else _with_precision_note(
        _correct("Right: the exact context vectors of the four tokens, one row per token."), context
    )
