"""Checks of E2, *Day 43 - Scaled Dot-Product Attention Deep Dive* ("I am happy").

The docstrings say what each check compares and which mistakes it names; they hold no answer.
Worked examples are in the tests. The messages never say which of the document's printed rows
are wrong or why: that is the exercises' written question.
"""

from __future__ import annotations

import math

import numpy as np

from helpers import attention, examples
from helpers.checks._core import (
    HAND_ATOL,
    _as_real_array,
    _close,
    _correct,
    _document_rows,
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

_DOCUMENT_MESSAGE = (
    "Some of your rows are the document's printed {step} rows, copied rather than computed. "
    "Compute every row yourself; comparing your rows with the printed ones is the exercise's "
    "question."
)

# ---------------------------------------------------------------------------
# "I am happy": the exact weights
# ---------------------------------------------------------------------------


@_never_raise
def check_i_am_happy_weights(weights):
    """Check the exact 3x3 attention weights of "I am happy" (scaled, d_k = 3).

    Parameters
    ----------
    weights : array_like, shape (3, 3)
        The scaled attention weights, one row per query.

    Returns
    -------
    CheckResult
        Mistakes recognised: ``document_rows`` (some rows copied from the document's
        printed Step 5), ``rounded_scores`` (scores rounded before the softmax, or sqrt(3)
        rounded), ``unscaled``, ``divided_by_d_k``, ``wrong_axis`` (``transposed``
        coincides with it here, since Q = K), ``softmax_whole_matrix``, then
        ``wrong_shape`` / ``wrong_values``; ``wrong_type``, ``complex``, ``not_finite``.

    Examples
    --------
    >>> check_i_am_happy_weights(None).status
    'not yet'
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
        if _document_rows(arr, ex, ("weights_row1", "weights_row2"), exact, HAND_ATOL):
            return _incorrect("document_rows", _DOCUMENT_MESSAGE.format(step="Step 5"))
    if _from_rounded_scores(arr, exact, _rounded_score_variants(scores, d_k)):
        return _incorrect("rounded_scores", _ROUNDED_MESSAGE.format(what="weights"))
    mistakes = [
        ("unscaled", lambda: attention.softmax(scores),
         "Your weights come from scores that were not divided by sqrt(d_k) = sqrt(3)."),
        ("divided_by_d_k", lambda: attention.softmax(scores / d_k),
         "You divided the scores by d_k = 3; the scaling divides by sqrt(d_k)."),
        ("wrong_axis", lambda: attention.softmax(scores / math.sqrt(d_k), axis=0),
         "Your softmax normalised the columns (axis=0); each row (one query) should sum to 1."),
        ("softmax_whole_matrix", lambda: attention.softmax((scores / math.sqrt(d_k)).ravel()).reshape(3, 3),
         "Your softmax normalised the whole matrix at once, so all nine weights sum to 1; each row "
         "(one query) should sum to 1 on its own."),
    ]
    result = _match(arr, exact, mistakes, what="weights", atol=HAND_ATOL)
    # Not ``result or ...``: an incorrect CheckResult is falsy.
    return result if result is not None else _with_precision_note(
        _correct("Right: the exact scaled weights, row by row."), weights
    )


# ---------------------------------------------------------------------------
# "I am happy": the Step 6 context vectors
# ---------------------------------------------------------------------------


@_never_raise
def check_i_am_happy_context(context):
    """Check the exact context vectors of "I am happy" (scaled attention, d_k = 3).

    Parameters
    ----------
    context : array_like, shape (3, 3)
        One context vector per token (row), exact, not built on rounded weights.

    Returns
    -------
    CheckResult
        Mistakes recognised: ``unscaled``, ``divided_by_d_k``, ``wrong_axis`` (softmax
        over the queries), ``softmax_whole_matrix``, ``returned_weights``, ``no_softmax``
        (scaled scores @ V), ``transposed``, ``values_first`` (V @ weights),
        ``wrong_shape``, then ``rounded_scores`` (scores rounded before the softmax) and
        ``document_rows`` (some rows copied from the document's printed Step 6, or built
        on its printed Step 5 weights) before ``wrong_values``; ``wrong_type``,
        ``complex``, ``not_finite``. The whole-matrix mistakes come first because one row
        of the mistake "divided by d_k" equals a printed row.

    Examples
    --------
    >>> check_i_am_happy_context(None).status
    'not yet'
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
    if _from_rounded_scores(arr, exact, _rounded_score_variants(scores, d_k), then=lambda w: w @ v):
        return _incorrect("rounded_scores", _ROUNDED_MESSAGE.format(what="context vectors"))
    mistakes = [
        ("unscaled", lambda: attention.softmax(scores) @ v,
         "Your context vectors come from scores that were not divided by sqrt(d_k) = sqrt(3)."),
        ("divided_by_d_k", lambda: attention.softmax(scores / d_k) @ v,
         "You divided the scores by d_k = 3; the scaling divides by sqrt(d_k)."),
        ("wrong_axis", lambda: attention.softmax(scaled, axis=0) @ v,
         "Your softmax normalised the columns (axis=0); each row of weights (one query) should sum to 1."),
        ("softmax_whole_matrix", lambda: attention.softmax(scaled.ravel()).reshape(3, 3) @ v,
         "Your softmax normalised the whole score matrix at once; each row of weights (one query) "
         "should sum to 1 on its own."),
        ("returned_weights", lambda: weights,
         "These are the attention weights; the context vectors are one step further."),
        ("no_softmax", lambda: scaled @ v,
         "You multiplied the scaled scores by V; the softmax step is missing."),
        ("transposed", lambda: exact.T,
         "Your matrix is transposed: one row per token (query), one column per value dimension."),
        ("values_first", lambda: v @ weights,
         "You computed V @ weights; the weights come first, so that each row mixes the rows of V."),
    ]
    result = _match(arr, exact, mistakes, what="context vectors", atol=HAND_ATOL)
    if result is not None and result.mistake == "wrong_values":
        # Checked after the whole-matrix mistakes: one row of softmax(Q K^T / d_k) V
        # happens to equal the document's printed row for 'am'.
        if _document_rows(arr, ex, ("context_row0", "context_row1", "context_row2"), exact, HAND_ATOL):
            return _incorrect("document_rows", _DOCUMENT_MESSAGE.format(step="Step 6"))
    return result if result is not None else _with_precision_note(
        _correct("Right: the exact context vectors, one row per token."), context
    )
