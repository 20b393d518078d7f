"""Checks of E2, *Day 43 - Scaled Dot-Product Attention Deep Dive* ("I am happy")."""

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
    _quoted,
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
            many = len(wrong_rows) > 1
            return _incorrect(
                "document_rows",
                f"Your {'rows' if many else 'row'} for {_quoted(wrong_rows)} {'are' if many else 'is'} "
                f"the document's Step 5 {'rows' if many else 'row'}, which {'are' if many else 'is'} "
                "wrong: they do not follow from the scaled scores. Recompute the softmax of those scores.",
            )
    mistakes = [
        ("unscaled", lambda: attention.softmax(scores),
         "You forgot to divide the scores by sqrt(d_k) = sqrt(3) before the softmax."),
        ("divided_by_d_k", lambda: attention.softmax(scores / d_k),
         "You divided the scores by d_k = 3; divide by sqrt(d_k) = 1.732 instead."),
        ("wrong_axis", lambda: attention.softmax(scores / math.sqrt(d_k), axis=0),
         "Your softmax normalised the columns (axis=0); each row (one query) should sum to 1."),
        ("softmax_whole_matrix", lambda: attention.softmax((scores / math.sqrt(d_k)).ravel()).reshape(3, 3),
         "Your softmax normalised the whole matrix at once, so all nine weights sum to 1; each row "
         "(one query) should sum to 1 on its own."),
    ]
    result = _match(arr, exact, mistakes, what="weights", atol=HAND_ATOL)
    # Not ``result or ...``: an incorrect CheckResult is falsy.
    return result if result is not None else _correct("Right: softmax(Q K^T / sqrt(3)), row by row.")


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
        rounded terms; for "am" and "happy" the rows rest on the
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
        ("softmax_whole_matrix", lambda: attention.softmax(scaled.ravel()).reshape(3, 3) @ v,
         "Your softmax normalised the whole score matrix at once; each row of weights (one query) "
         "should sum to 1 on its own before it mixes the rows of V."),
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
                why.append("for 'I' it adds rounded terms (0.06 + 0.17 + 0.30), "
                           "so its middle entry is off in the second decimal")
            later = [ex.tokens[i] for i in rows if i != 0]
            if later:
                why.append(f"for {_quoted(later)} it rests on the document's wrong Step 5 weights")
            many = len(rows) > 1
            return _incorrect(
                "document_rows",
                f"Your {'rows' if many else 'row'} for {_quoted(ex.tokens[i] for i in rows)} "
                f"{'are' if many else 'is'} the document's Step 6 {'rows' if many else 'row'}, which "
                f"{'are' if many else 'is'} off: {'; '.join(why)}. Multiply the exact weights by V.",
            )
    return result if result is not None else _correct(
        "Right: the context vectors softmax(Q K^T / sqrt(3)) V, one row per token."
    )


