"""Checks of E1, *Section 5.2: Dot-Product Attention — The Core Mechanism*: its five exercises."""

from __future__ import annotations

import math
import numbers

import numpy as np

from helpers import attention, examples
from helpers.checks._core import (
    HAND_ATOL,
    CheckResult,
    _as_number,
    _as_real_array,
    _correct,
    _document_rows,
    _incorrect,
    _is_empty,
    _match,
    _never_raise,
    _not_a_number,
    _not_yet,
    _quoted,
    record,
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
        (softmax over the queries, axis=0), ``returned_weights`` (the weights instead of the
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
        ("returned_weights", lambda: w_exact,
         "These are the attention weights; the output multiplies them by V."),
        ("no_softmax", lambda: (q @ k.T) @ v,
         "You multiplied the raw scores by V; turn each row of scores into weights with softmax first."),
        ("softmax_whole_matrix", lambda: attention.softmax((q @ k.T).ravel()).reshape(2, 2) @ v,
         "Your softmax normalised the whole score matrix at once, so all four weights sum to 1; "
         "normalise each row (one query) on its own, over the keys (axis=-1)."),
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
        ("softmax_whole_matrix", lambda: attention.softmax((q @ k.T).ravel()).reshape(2, 2),
         "Your weights add up to 1 over the whole matrix; each row (one query) should sum to 1 on its own."),
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
# Exercise 3 of Section 5.2: FLOPs
# ---------------------------------------------------------------------------



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
    answer : number
        A number such as 2.048e9 or 2_048_000_000. Text ("2,048,000,000") is
        refused with a hint on writing it as a number.

    Returns
    -------
    CheckResult
        Mistakes recognised: ``multiply_adds_or_one_matmul`` (1.024e9),
        ``n_d_swapped`` (4 n d^2 = 1.049e9, or n d^2), ``n2d_only`` (n^2 d = 5.12e8: one product, multiply-adds),
        ``counted_scores`` (n^2 = 1e6),
        ``not_a_number``, ``not_finite``, ``wrong_value``.

    Examples
    --------
    >>> print(check_flops(2.048e9))
    ✅ correct: Right: 4 n^2 d = 2,048,000,000 FLOPs (2 n^2 d for Q K^T and 2 n^2 d for weights @ V).
    >>> check_flops(1_048_576_000).mistake
    'n_d_swapped'
    >>> check_flops("2,048,000,000").mistake
    'not_a_number'
    """
    if _is_empty(answer):
        return _not_yet("No answer yet: how many floating-point operations for n = 1000, d = 512?")
    value = _as_number(answer)
    if value is None:
        return _not_a_number(answer, "count")
    if not math.isfinite(value):
        return _incorrect("not_finite", f"Your count ({value}) is not a finite number.")
    given = examples.load_example("complexity_5_2").given
    n, d = int(given["exercise_3_n"]), int(given["exercise_3_d"])
    exact = attention.attention_flops(n, n, d, d)

    def near(x, rtol):
        return abs(value - x) <= rtol * abs(x)

    right = (
        f"Right: 4 n^2 d = {exact:,} FLOPs (2 n^2 d for Q K^T and 2 n^2 d for weights @ V)."
    )
    wrote = f"You wrote {value:,.0f}"
    mistakes = [
        (exact // 2, "multiply_adds_or_one_matmul",
         f"{wrote}, which is 2 n^2 d. That is right as a count of multiply-adds, but a multiply-add "
         "is 2 FLOPs. It is also the FLOPs of only one of the two products (Q K^T or weights @ V); "
         "count both, with 2 FLOPs per multiply-add."),
        (4 * n * d * d, "n_d_swapped",
         f"{wrote}, which is 4 n d^2: n and d are swapped. Each product makes n x n scores (or "
         "outputs), each a dot product of length d, so it costs 2 n^2 d FLOPs."),
        (n * n * d, "n2d_only",
         f"{wrote}, which is n^2 d: the multiply-adds of one product only. There are two products "
         "(Q K^T and weights @ V), and each multiply-add is 2 FLOPs."),
        (n * n, "counted_scores",
         f"{wrote}, which is n^2: the number of scores (query-key pairs), not of operations. Each "
         "score costs a dot product of length d, and the weights @ V product costs as much again."),
        (n * d * d, "n_d_swapped",
         f"{wrote}, which is n d^2: n and d are swapped, and the two products and the 2 FLOPs per "
         "multiply-add are missing. Each product costs 2 n^2 d."),
    ]
    record("number", "count", exact, [(name, target) for target, name, _ in mistakes], 0.0, 0.01)
    # The right count within 2.5 % (2e9 passes); a mistake within 1 %, so that 4 n d^2, 2.4 %
    # from 2 n^2 d, is named for what it is.
    if near(exact, 0.025):
        return _correct(right)
    for target, name, message in mistakes:
        if near(target, 0.01):
            return _incorrect(name, message)
    return _incorrect(
        "wrong_value",
        f"You wrote {value:,.0f}, which is not the count. Count the multiply-adds of Q K^T "
        "(n x n scores, each a dot product of length d) "
        "and of weights @ V, at 2 FLOPs each.",
    )


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
        ("softmax_whole_matrix", lambda: attention.softmax(scores.ravel()).reshape(scores.shape),
         "Your softmax normalised the whole matrix at once, so all nine weights sum to 1; "
         "normalise each row (one query) on its own."),
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


