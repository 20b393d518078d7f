"""Checks of E1, *Section 5.2: Dot-Product Attention — The Core Mechanism*: its five exercises.

The docstrings say what each check compares and which mistakes it names; they hold no answer.
Worked examples of right and wrong answers are in the tests (tests/test_checks.py and
tests/test_checks_corpus_e1_e3.py).
"""

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
    _incorrect,
    _is_empty,
    _match,
    _never_raise,
    _not_a_number,
    _not_yet,
    record,
)

# ---------------------------------------------------------------------------
# Shared by E1-E3: a note for answers computed in low precision
# ---------------------------------------------------------------------------

_DIGITS = {np.dtype(np.float32): 7, np.dtype(np.float16): 3}


def _low_precision(answer):
    """The dtype of ``answer`` when it is float32 or float16 (a NumPy array or scalar), else None."""
    dtype = getattr(answer, "dtype", None)
    if dtype is None and isinstance(answer, (list, tuple)) and answer:
        dtype = getattr(answer[0], "dtype", None)
    try:
        dtype = np.dtype(dtype) if dtype is not None else None
    except TypeError:
        return None
    return dtype if dtype in _DIGITS else None


def _with_precision_note(result, *answers):
    """``result``, with a sentence on precision added when it is correct and an answer is float32/16."""
    if not result or result.status != "correct":
        return result
    dtype = next((d for d in map(_low_precision, answers) if d is not None), None)
    if dtype is None:
        return result
    return _correct(
        f"{result.message} (Your answer is {dtype.name}, which keeps about {_DIGITS[dtype]} "
        "significant digits: enough for this check, though NumPy computes in float64 unless told "
        "otherwise.)"
    )


# ---------------------------------------------------------------------------
# Exercise 1 of Section 5.2
# ---------------------------------------------------------------------------

EXERCISE_1_Q = np.array([[1.0, 0.0], [0.0, 1.0]])
EXERCISE_1_K = np.array([[1.0, 0.0], [1.0, 1.0]])
EXERCISE_1_V = np.array([[1.0, 2.0], [3.0, 0.0]])
"""The matrices of E1's exercise 1. The section's own K = V = [[1, 1], [1, 0]] is symmetric, so
Q K (the transpose forgotten) and V^T would give the right numbers; these K and V are not."""


@_never_raise
def check_section_5_2_exercise_1(out, weights=None):
    """Check Section 5.2, exercise 1: the unscaled attention output, by hand.

    The matrices are :data:`EXERCISE_1_Q`, :data:`EXERCISE_1_K` and :data:`EXERCISE_1_V`
    (neither K nor V is symmetric, so a forgotten transpose shows). Section 5.2 works
    unscaled.

    Parameters
    ----------
    out : array_like, shape (2, 2)
        The attention output, one row per query.
    weights : array_like, shape (2, 2), optional
        The attention weights as well, checked when given.

    Returns
    -------
    CheckResult
        Mistakes recognised (``mistake`` names): ``scaled`` (divided the scores by
        sqrt(d_k)), ``divided_by_d_k``, ``wrong_axis`` (softmax over the queries, axis=0),
        ``no_transpose`` (Q K instead of Q K^T), ``values_transposed`` (weights @ V^T),
        ``values_first`` (V @ weights), ``returned_weights`` (the weights instead of the
        output), ``no_softmax`` (scores @ V), ``softmax_whole_matrix``, ``transposed``,
        then ``wrong_shape`` / ``wrong_values``; ``wrong_type``, ``complex``,
        ``not_finite`` for answers that are not finite real numbers.

    Examples
    --------
    >>> check_section_5_2_exercise_1(None).status
    'not yet'
    """
    q, k, v = EXERCISE_1_Q, EXERCISE_1_K, EXERCISE_1_V
    d_k = q.shape[-1]

    def attn(scale=1.0, axis=-1, keys=None):
        w = attention.softmax(q @ (k.T if keys is None else keys) * scale, axis=axis)
        return w @ v, w

    out_exact, w_exact = attn()
    whole = attention.softmax((q @ k.T).ravel()).reshape(2, 2)
    out_mistakes = [
        ("scaled", lambda: attn(scale=1 / math.sqrt(d_k))[0],
         "You divided the scores by sqrt(d_k); Section 5.2 works unscaled."),
        ("divided_by_d_k", lambda: attn(scale=1 / d_k)[0],
         "You divided the scores by d_k; Section 5.2 does not scale at all (and the "
         "scaled version divides by sqrt(d_k), not d_k)."),
        ("wrong_axis", lambda: attn(axis=0)[0],
         "Your softmax normalised the columns (axis=0); each query's row of weights should sum to 1."),
        ("no_transpose", lambda: attn(keys=k)[0],
         "Your scores are Q K, not Q K^T: a score pairs a row of Q with a row of K, so K is "
         "transposed first."),
        ("values_transposed", lambda: w_exact @ v.T,
         "Your weights multiply V^T; they mix the rows of V, one value vector per key."),
        ("values_first", lambda: v @ w_exact,
         "You computed V @ weights; the weights come first, so that each query's row of weights "
         "mixes the rows of V."),
        ("returned_weights", lambda: w_exact,
         "These are the attention weights; the output is one step further."),
        ("no_softmax", lambda: (q @ k.T) @ v,
         "You multiplied the raw scores by V; the softmax step is missing."),
        ("softmax_whole_matrix", lambda: whole @ v,
         "Your softmax normalised the whole score matrix at once, so all four weights sum to 1; "
         "each row (one query) should sum to 1 on its own."),
        ("transposed", lambda: out_exact.T,
         "Your output is transposed: one row per query, one column per value dimension."),
    ]
    if not _is_empty(out):
        result = _match(out, out_exact, out_mistakes, what="output", atol=HAND_ATOL)
        if result is not None:
            return result
    if weights is None or (_is_empty(weights) and _is_empty(out)):
        if _is_empty(out):
            return _not_yet("No output yet: compute it and pass it to this check.")
        return _with_precision_note(_correct("Right: the unscaled attention output, as in Section 5.2."), out)
    w_mistakes = [
        ("scaled", lambda: attn(scale=1 / math.sqrt(d_k))[1],
         "Your weights come from scores divided by sqrt(d_k); Section 5.2 works unscaled."),
        ("divided_by_d_k", lambda: attn(scale=1 / d_k)[1],
         "Your weights come from scores divided by d_k; Section 5.2 does not scale."),
        ("wrong_axis", lambda: attn(axis=0)[1],
         "Your softmax normalised the columns (axis=0); each row (one query) should sum to 1."),
        ("no_transpose", lambda: attn(keys=k)[1],
         "Your weights come from Q K, not Q K^T: a score pairs a row of Q with a row of K."),
        ("no_softmax", lambda: q @ k.T,
         "These are the raw scores; the weights are one step further."),
        ("softmax_whole_matrix", lambda: whole,
         "Your weights add up to 1 over the whole matrix; each row (one query) should sum to 1 on its own."),
        ("transposed", lambda: w_exact.T, "Your weights are transposed: one row per query."),
    ]
    w_result = _match(weights, w_exact, w_mistakes, what="weights", atol=HAND_ATOL)
    if _is_empty(out):
        if w_result is None:
            return _not_yet("Your weights are right; now compute the output from them.")
        return w_result
    if w_result is None:
        return _with_precision_note(
            _correct("Right: the weights and the output, unscaled as in Section 5.2."), out, weights
        )
    if w_result.status == "not yet":
        return _with_precision_note(_correct("Right: the unscaled attention output, as in Section 5.2."), out)
    return CheckResult(w_result.status, "Your output is right, but: " + w_result.message, w_result.mistake)


# ---------------------------------------------------------------------------
# Exercise 3 of Section 5.2: FLOPs
# ---------------------------------------------------------------------------


@_never_raise
def check_flops(answer):
    """Check Section 5.2, exercise 3: the FLOPs of attention for the ``exercise_3_n`` and
    ``exercise_3_d`` of ``load_example("complexity_5_2").given``.

    The convention of :func:`helpers.attention.attention_flops`: a multiply-add is 2 FLOPs,
    both matrix products are counted and the softmax is left out; answers within 2.5 % of
    that count are accepted (the softmax's few n^2 operations may be added).

    A count of multiply-adds (half the FLOPs) is marked **incorrect**
    (``multiply_adds_or_one_matmul``), because the exercise asks for floating-point
    operations; the message says that the same number is also one product's FLOPs.

    Parameters
    ----------
    answer : number
        A Python or NumPy number (``2_000`` and ``2e3`` are numbers). Text is refused with
        a hint on writing it as a number.

    Returns
    -------
    CheckResult
        Mistakes recognised: ``multiply_adds_or_one_matmul``, ``n_d_swapped`` (n and d
        exchanged), ``n2d_only`` (one product's multiply-adds), ``counted_scores`` (the
        number of scores), ``precision`` (a float16 number, which cannot hold the count),
        ``not_a_number``, ``not_finite``, ``wrong_value``.

    Examples
    --------
    >>> check_flops("a lot").mistake
    'not_a_number'
    """
    if _is_empty(answer):
        return _not_yet("No answer yet: how many floating-point operations?")
    if _low_precision(answer) == np.dtype(np.float16):
        return _incorrect(
            "precision",
            "Your count is a float16 number, which cannot hold numbers above 65504 (it becomes "
            "inf) and keeps only about 3 significant digits. Give a Python int or float, or float64.",
        )
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

    wrote = f"You wrote {value:,.0f}"
    mistakes = [
        (exact // 2, "multiply_adds_or_one_matmul",
         f"{wrote}. That is right as a count of multiply-adds, but the exercise counts a "
         "multiply-add as two operations. It is also what only one of the two products costs in "
         "FLOPs; the exercise counts both."),
        (4 * n * d * d, "n_d_swapped",
         f"{wrote}, which is 4 n d^2: n and d are swapped. Look again at the shape of Q K^T and at "
         "the length of each dot product in it."),
        (n * n * d, "n2d_only",
         f"{wrote}, which is n^2 d: the multiply-adds of one product only. The exercise counts both "
         "products, and a multiply-add as two operations."),
        (n * n, "counted_scores",
         f"{wrote}, which is n^2: the number of scores (query-key pairs), not of operations. Each "
         "score is a dot product, and the product with V costs operations too."),
        (n * d * d, "n_d_swapped",
         f"{wrote}, which is n d^2: n and d are swapped, and one product's multiply-adds only. "
         "Look again at the shape of Q K^T and at the length of each dot product in it."),
    ]
    record("number", "count", exact, [(name, target) for target, name, _ in mistakes], 0.0, 0.01)
    # The right count within 2.5 % (a softmax term may be added); a mistake within 1 %, so that
    # 4 n d^2, 2.4 % from the right count, is named for what it is.
    if near(exact, 0.025):
        return _with_precision_note(
            _correct(f"Right: {exact:,} FLOPs for the two products (2 FLOPs per multiply-add)."), answer
        )
    for target, name, message in mistakes:
        if near(target, 0.01):
            return _incorrect(name, message)
    return _incorrect(
        "wrong_value",
        f"You wrote {value:,.0f}, which is not the count. Work out what one entry of Q K^T costs, "
        "how many entries there are, and do the same for the product with V.",
    )


# ---------------------------------------------------------------------------
# Exercise 2 of Section 5.2: the weights of "The cat sat on the mat", drawn
# ---------------------------------------------------------------------------

SENTENCE_2 = ("The", "cat", "sat", "on", "the", "mat")
"""The sentence of E1's exercise 2, the one of the section's attention bars."""

EMBEDDINGS_2 = {
    "the": (0.1, -0.1, 0.6),
    "cat": (0.1, -0.5, 0.4),
    "sat": (1.3, 0.9, -0.7),
    "on": (-1.3, -0.6, 0.0),
    "mat": (-2.3, -0.2, -1.2),
}
"""One random embedding per word, drawn once (``np.random.default_rng(0).normal(size=(5, 3))``)
and rounded to one decimal; "The" and "the" share one. The exercise's set-up cell holds the
same numbers."""


def _sentence_2_inputs():
    """X for exercise 2, one row per token of :data:`SENTENCE_2`, and the (5, 3) vocabulary matrix."""
    x = np.array([EMBEDDINGS_2[t.lower()] for t in SENTENCE_2])
    vocabulary = np.array(list(EMBEDDINGS_2.values()))
    return x, vocabulary


@_never_raise
def check_section_5_2_exercise_2(weights):
    """Check Section 5.2, exercise 2: the unscaled weights of "The cat sat on the mat".

    The inputs X are the embeddings :data:`EMBEDDINGS_2` of the six tokens of
    :data:`SENTENCE_2`, with W^Q = W^K = W^V = I, so Q = K = V = X; Section 5.2 works
    unscaled.

    Parameters
    ----------
    weights : array_like, shape (6, 6)
        The attention weights, one row per query.

    Returns
    -------
    CheckResult
        Mistakes recognised: ``scaled`` (divided the scores by sqrt(d_k)),
        ``divided_by_d_k``, ``wrong_axis`` (softmax over the queries; with Q = K the scores
        are symmetric, so this is also the transposed matrix), ``no_softmax`` (the raw
        scores), ``softmax_whole_matrix``, ``returned_output`` (weights @ V),
        ``vocabulary_rows`` (one row per word of the vocabulary, 5 x 5, instead of one per
        token), ``feature_gram`` (X^T X, 3 x 3), then ``wrong_shape`` / ``wrong_values``;
        ``wrong_type``, ``complex``, ``not_finite``.

    Examples
    --------
    >>> check_section_5_2_exercise_2(None).status
    'not yet'
    """
    x, vocabulary = _sentence_2_inputs()
    d_k = x.shape[-1]
    scores = x @ x.T
    exact = attention.softmax(scores)
    arr, result = _as_real_array(weights, "weights")
    if result is not None:
        return result
    mistakes = [
        ("scaled", lambda: attention.softmax(scores / math.sqrt(d_k)),
         "You divided the scores by sqrt(d_k); Section 5.2 works unscaled."),
        ("divided_by_d_k", lambda: attention.softmax(scores / d_k),
         "You divided the scores by d_k; Section 5.2 does not scale them at all."),
        ("wrong_axis", lambda: attention.softmax(scores, axis=0),
         "Your softmax normalised the columns (axis=0); each query's row should sum to 1. "
         "(Here Q = K, so this is also the right matrix transposed.)"),
        ("no_softmax", lambda: scores,
         "These are the raw scores; the weights are one step further."),
        ("softmax_whole_matrix", lambda: attention.softmax(scores.ravel()).reshape(scores.shape),
         "Your softmax normalised the whole matrix at once, so all 36 weights sum to 1; "
         "normalise each row (one query) on its own."),
        ("returned_output", lambda: exact @ x,
         "This is the output (weights @ V); the exercise asks for the weights themselves."),
        ("vocabulary_rows", lambda: attention.softmax(vocabulary @ vocabulary.T),
         "Your matrix has one row per word of the vocabulary (5), but the sentence has six tokens: "
         "'The' and 'the' are two tokens that share one embedding, and each gets its own row."),
        ("feature_gram", lambda: attention.softmax(x.T @ x),
         "Your matrix is 3 x 3, over the embedding's features (X^T X); the scores pair tokens, "
         "one row per query token and one column per key token."),
    ]
    result = _match(arr, exact, mistakes, what="weights", atol=HAND_ATOL)
    return result if result is not None else _with_precision_note(
        _correct("Right: the unscaled weights, one row per token; every row sums to 1."), weights
    )


# ---------------------------------------------------------------------------
# Exercise 4 of Section 5.2: a shared projection W^Q = W^K
# ---------------------------------------------------------------------------


def _favourites_verdict(answer, tokens):
    """``(set of row indices, None)`` for a list of token names, else ``(None, CheckResult)``.

    Names must be written as in ``tokens`` (case and all); a bare string, indices, or
    anything else is refused with its own message.
    """
    shown = ", ".join(repr(t) for t in tokens)
    if isinstance(answer, str):
        return None, _incorrect(
            "bare_string",
            f"Your favourites are the text {answer!r}; give a list of token names, even for one "
            "token (put it in square brackets), or [] for none.",
        )
    if isinstance(answer, np.ndarray):
        items = list(answer.ravel())
    elif isinstance(answer, (list, tuple, set, frozenset)):
        items = list(answer)
    else:
        return None, _incorrect(
            "not_tokens",
            f"Your favourites are a {type(answer).__name__}; give a list of token names from "
            f"journey.tokens ({shown}), or [] for none.",
        )
    found = set()
    for item in items:
        if isinstance(item, (numbers.Integral, np.integer)) and not isinstance(item, (bool, np.bool_)):
            return None, _incorrect(
                "indices",
                "Your favourites hold row numbers; give the tokens' names, as they are written in "
                f"journey.tokens ({shown}).",
            )
        if not isinstance(item, str):
            return None, _incorrect(
                "not_tokens",
                f"Your favourites hold {type(item).__name__} values; give token names from "
                f"journey.tokens ({shown}).",
            )
        if item not in tokens:
            near = [t for t in tokens if t.lower() == item.strip().strip("'\"").lower()]
            hint = f" (did you mean {near[0]!r}? Names are compared exactly)" if near else ""
            return None, _incorrect(
                "not_tokens",
                f"{item!r} is not one of the tokens{hint}. The tokens are {shown}.",
            )
        found.add(tokens.index(item))
    return found, None


@_never_raise
def check_section_5_2_exercise_4(scores, favourites=None):
    """Check Section 5.2, exercise 4: the scores with one shared projection W^Q = W^K = W.

    The inputs X of the "journey" sentence and W = its ``w_q`` (``load_example("journey")``):
    part (a) is the unscaled scores with W used for both queries and keys; part (b),
    ``favourites``, is the list of tokens whose self-score is the largest score of their
    row. Part (b) is only checked together with right scores from part (a): the tokens are
    read off those scores, not guessed.

    Parameters
    ----------
    scores : array_like, shape (6, 6)
        The unscaled scores with the shared projection.
    favourites : list of str, optional
        Token names exactly as in ``journey.tokens``; ``[]`` means "none".

    Returns
    -------
    CheckResult
        Mistakes recognised for ``scores``: ``separate_projections`` (W^K kept apart from
        W^Q), ``shared_w_k`` (shared the key matrix instead), ``no_projection`` (X X^T),
        ``scaled`` (divided by sqrt(d_k)), ``divided_by_d_k``, ``feature_gram`` (the
        transpose on the wrong factor), ``returned_weights`` (softmax of the scores), then
        ``wrong_shape`` / ``wrong_values``. For ``favourites``: ``every_token``,
        ``no_token``, ``bare_string`` (a string, not a list), ``indices`` (row numbers, not
        names), ``not_tokens`` (names not written as in ``journey.tokens``),
        ``wrong_tokens``; "not yet" when favourites come without the scores.

    Examples
    --------
    >>> check_section_5_2_exercise_4(None).status
    'not yet'
    """
    ex = examples.load_example("journey")
    x, w_q, w_k = ex.inputs, ex.w_q, ex.w_k
    d_k = w_q.shape[-1]
    p = x @ w_q
    exact = p @ p.T
    n = exact.shape[0]
    fav_given = not (favourites is None or (isinstance(favourites, str) and not favourites.strip()))
    if _is_empty(scores):
        if fav_given:
            return _not_yet(
                "Part (b) is checked together with your scores from part (a), since the tokens are "
                "read off them: pass scores_shared as well."
            )
        return _not_yet("No scores yet: compute them with W = journey.w_q for both roles.")
    mistakes = [
        ("separate_projections", lambda: (x @ w_q) @ (x @ w_k).T,
         "These are the scores with separate projections, W_q for the queries and W_k for the "
         "keys; the exercise uses one matrix, W = W_q, for both."),
        ("shared_w_k", lambda: (x @ w_k) @ (x @ w_k).T,
         "You shared W_k; the exercise shares the query matrix W_q for both roles."),
        ("no_projection", lambda: x @ x.T,
         "These are X X^T, the scores without any projection; project the inputs with W first."),
        ("scaled", lambda: exact / math.sqrt(d_k),
         "You divided by sqrt(d_k); Section 5.2 works unscaled."),
        ("divided_by_d_k", lambda: exact / d_k,
         "You divided by d_k; Section 5.2 does not scale the scores."),
        ("feature_gram", lambda: p.T @ p,
         "This is a d_k x d_k matrix over features, with the transpose on the other factor; the "
         "scores pair tokens: n x n."),
        ("returned_weights", lambda: attention.softmax(exact),
         "These are weights (a softmax of the scores); the exercise asks for the scores themselves."),
    ]
    result = _match(scores, exact, mistakes, what="scores", atol=HAND_ATOL)
    if result is not None:
        return result
    if not fav_given:
        return _with_precision_note(
            _correct("Right: the scores with one shared projection. Now part (b)."), scores
        )
    expected = {i for i in range(n) if exact[i, i] >= exact[i].max()}
    got, refused = _favourites_verdict(favourites, ex.tokens)
    if refused is not None:
        return refused
    if got == expected:
        return _with_precision_note(
            _correct("Right: the shared-projection scores, and the tokens that score themselves highest."),
            scores,
        )
    if got == set(range(n)):
        return _incorrect(
            "every_token",
            "Not every token scores itself highest. Compare each self-score with the other "
            "entries of its row in your scores.",
        )
    if not got:
        return _incorrect(
            "no_token",
            "At least one token scores itself highest. Compare each self-score with the other "
            "entries of its row in your scores.",
        )
    return _incorrect(
        "wrong_tokens",
        "Not those tokens. Compare each self-score with the other entries of its row in your scores.",
    )


# ---------------------------------------------------------------------------
# Exercise 5 of Section 5.2: attention entropy
# ---------------------------------------------------------------------------

ENTROPY_ATOL = 1e-3
"""Absolute tolerance for entropies (answers with three decimals pass)."""


def _rounded_to(arr, target, decimals):
    """True when ``arr`` is ``target`` rounded to ``decimals`` (and not ``target`` itself)."""
    return (
        arr.shape == target.shape
        and np.allclose(arr, np.round(target, decimals), rtol=0, atol=1e-9 + 10.0 ** -(decimals + 3))
    )


@_never_raise
def check_attention_entropy(entropy_rows):
    """Check Section 5.2, exercise 5: the entropy of each row of attention weights, in nats.

    The weights are those of the "journey" sentence with its separate projections,
    unscaled as in Section 5.2 (``load_example("journey")``: the softmax of ``.q @ .k.T``),
    one entropy per query row. The queries and keys differ, so the scores are not
    symmetric and a softmax over the wrong axis can be told apart from a sum over the
    wrong axis.

    Parameters
    ----------
    entropy_rows : array_like, shape (6,)
        One entropy per query row, in nats.

    Returns
    -------
    CheckResult
        Mistakes recognised: ``log2`` (bits instead of nats), ``log10``, ``no_minus`` (the
        sign left out, also together with any mistake below), ``wrong_sum_axis`` (summed
        over the queries), ``softmax_wrong_axis`` (weights normalised over the queries),
        ``scaled`` (scores divided by sqrt(d_k)), ``mean_not_sum``, ``not_summed`` (the
        6 x 6 terms), ``entropy_of_scores`` (no softmax), ``rounded`` (right, but rounded
        to fewer than three decimals), then ``wrong_shape`` / ``wrong_values``;
        ``wrong_type``, ``complex``, ``not_finite``.

    Examples
    --------
    >>> check_attention_entropy(None).status
    'not yet'
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
         "You used log base 2 (bits); the exercise asks for nats, with the natural logarithm."),
        ("log10", lambda: exact / math.log(10),
         "You used log base 10; the exercise asks for nats, with the natural logarithm."),
        ("no_minus", lambda: -exact,
         "Your entropies are negative: the minus sign in front of the sum is missing (each "
         "log w <= 0, so an entropy is >= 0)."),
        ("wrong_sum_axis", lambda: terms.sum(axis=0),
         "You summed over the queries (axis=0); one entropy per query sums along its row, over the keys."),
        ("softmax_wrong_axis", lambda: -(w_cols * np.log(w_cols)).sum(axis=-1),
         "Your weights were normalised over the queries (softmax with axis=0): their rows do not "
         "sum to 1. Normalise each row over the keys before taking the entropy."),
        ("softmax_wrong_axis", lambda: -(w_cols * np.log(w_cols)).sum(axis=0),
         "You took the softmax over the queries (axis=0) and the entropy down the columns: both "
         "should run along each row, over the keys."),
        ("scaled", lambda: attention.entropy(attention.softmax(scores / math.sqrt(d_k))),
         "Your weights come from scores divided by sqrt(d_k); Section 5.2 works unscaled."),
        ("mean_not_sum", lambda: exact / m,
         "You averaged the terms -w log w; the entropy is their sum over the keys."),
        ("not_summed", lambda: terms,
         "These are the terms -w log w, one per query-key pair; the exercise asks for one "
         "entropy per query."),
        ("entropy_of_scores", lambda: -(scores * np.log(scores)).sum(axis=-1),
         "You took -sum s log s of the raw scores, which are not probabilities; the entropy is "
         "that of the weights."),
    ]
    arr, result = _as_real_array(entropy_rows, "entropies")
    if result is not None:
        return result
    result = _match(arr, exact, mistakes, what="entropies", atol=ENTROPY_ATOL)
    if result is None:
        return _with_precision_note(
            _correct(f"Right: one entropy per row, in nats; the largest possible is log {m} = {math.log(m):.4f}."),
            entropy_rows,
        )
    if result.mistake not in ("wrong_values", "wrong_shape"):
        return result
    # The sign slip together with another mistake: -answer is that mistake's value.
    if result.mistake == "wrong_values" or arr.shape == terms.shape:
        flipped = _match(-arr, exact, mistakes, what="entropies", atol=ENTROPY_ATOL)
        if flipped is None:
            return _incorrect("no_minus", mistakes[2][2])
        if flipped.mistake not in ("wrong_values", "wrong_shape", "no_minus"):
            return _incorrect(
                "no_minus",
                "Your entropies are negative: the minus sign in front of the sum is missing. And "
                "then: " + flipped.message,
            )
    for decimals in (0, 1, 2):
        if _rounded_to(arr, exact, decimals) or _rounded_to(-arr, exact, decimals):
            sign = " (and negative: the minus sign is missing)" if arr.sum() < 0 else ""
            return _incorrect(
                "rounded",
                f"Your entropies are rounded to {decimals} decimal{'s' if decimals != 1 else ''}"
                f"{sign}: the six rows differ in the third decimal, so give at least three decimals "
                "(or keep the array as NumPy computes it).",
            )
    return result
