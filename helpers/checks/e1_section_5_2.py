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
from helpers.checks import _sealed
from helpers.checks._answer_table import TABLE
from helpers.checks._core import (
    HAND_ATOL,
    CheckResult,
    _as_number,
    _as_real_array,
    _close,
    _correct,
    _incorrect,
    _is_empty,
    _match,
    _never_raise,
    _not_a_number,
    _not_yet,
    _reshape_needed,
    _verb,
    record_sealed,
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
EXERCISE_1_V1 = np.array([1.0, 2.0])
EXERCISE_1_TARGET = np.array([2.0, 1.0])
"""E1's exercise 1 runs attention backwards: with these Q and K (unscaled) and the first value
row v1, which second value row v2 makes the second query's output ``EXERCISE_1_TARGET``? Lesson
03 computes outputs from given values; the exercise asks for the values behind an output. K is
not symmetric, so a forgotten transpose shows."""


def _weights_right(weights, expected):
    """Whether ``weights`` is a real array within HAND_ATOL of ``expected`` (nothing recorded)."""
    arr, refused = _as_real_array(weights, "weights")
    return refused is None and arr.shape == expected.shape and _close(arr, expected, HAND_ATOL, 0.0)


V2_MESSAGES = {
    "scaled": "Your v2 follows from weights whose scores were divided by sqrt(d_k); Section 5.2 works unscaled.",
    "divided_by_d_k": "Your v2 follows from scores divided by d_k; Section 5.2 does not scale at all.",
    "wrong_axis": "Your v2 follows from a softmax over the columns (axis=0); each query's row of weights should "
    "sum to 1.",
    "equal_weights": "Your v2 follows from equal weights on the two keys: those are the first query's weights (or "
    "the second query's with Q K in place of Q K^T). The output asked for is the second query's.",
    "weights_swapped": "Your v2 follows from the second query's two weights in the wrong order: which key does "
    "each weight belong to?",
    "forgot_v1": "Your v2 leaves out the share of the output that v1 brings: the output mixes both value rows.",
    "target_as_value": "That is the output asked for; the value row behind it differs, since the output mixes v1 "
    "and v2 (without a softmax the weights would be the raw scores, [0, 1]).",
    "softmax_whole_matrix": "Your v2 follows from a softmax over the whole score matrix at once; each row (one "
    "query) should sum to 1 on its own.",
}
"""The message of each mistake of E1 ex. 1's v2; the values are sealed (:mod:`helpers.checks._sealed`)."""


@_never_raise
def check_section_5_2_exercise_1(v2, weights=None):
    """Check Section 5.2, exercise 1: the value row v2 behind a given output, by hand.

    Q = :data:`EXERCISE_1_Q`, K = :data:`EXERCISE_1_K`, unscaled as in Section 5.2; V has
    the rows :data:`EXERCISE_1_V1` and ``v2``, and the second query's output is to be
    :data:`EXERCISE_1_TARGET`.

    Parameters
    ----------
    v2 : array_like, shape (2,)
        The second row of V.
    weights : array_like, shape (2, 2), optional
        The attention weights (one row per query), checked when given.

    Returns
    -------
    CheckResult
        Mistakes recognised (``mistake`` names) for ``v2``: ``scaled`` (weights from scores
        divided by sqrt(d_k)), ``divided_by_d_k``, ``wrong_axis`` (softmax over the
        queries), ``equal_weights`` (the first query's weights, or Q K instead of Q K^T),
        ``weights_swapped``, ``forgot_v1`` (v1's share not taken away), ``target_as_value``
        (the output itself, as no softmax gives), ``softmax_whole_matrix``, then
        ``wrong_shape`` / ``wrong_values``; for ``weights``: ``scaled``,
        ``divided_by_d_k``, ``wrong_axis``, ``no_transpose``, ``no_softmax``,
        ``softmax_whole_matrix``, ``transposed``; ``wrong_type``, ``complex``,
        ``not_finite`` for answers that are not finite real numbers.

    Examples
    --------
    >>> check_section_5_2_exercise_1(None).status
    'not yet'
    """
    q, k = EXERCISE_1_Q, EXERCISE_1_K
    d_k = q.shape[-1]
    scores = q @ k.T

    def weights_of(scale=1.0, axis=-1, keys=None):
        return attention.softmax(q @ (k.T if keys is None else keys) * scale, axis=axis)

    w_exact = weights_of()
    whole = attention.softmax(scores.ravel()).reshape(scores.shape)
    if not _is_empty(v2):
        result = _sealed_array_match(v2, TABLE["e1_v2"], V2_MESSAGES, what="v2")
        if (result is not None and result.mistake == "wrong_values" and weights is not None
                and not _is_empty(weights) and _weights_right(weights, w_exact)):
            return _incorrect(
                "v2_solved_wrong",
                "Your weights are right, but v2 does not follow from them. The second query's output is "
                "a v1 + b v2, with (a, b) its row of weights: set that equal to the output asked for and "
                "solve for v2, one entry at a time.",
            )
        if result is not None:
            return result
    if weights is None or (_is_empty(weights) and _is_empty(v2)):
        if _is_empty(v2):
            return _not_yet("No answer yet: compute v2 and pass it to this check.")
        return _with_precision_note(_correct("Right: the value row behind the output asked for."), v2)
    w_mistakes = [
        ("scaled", lambda: weights_of(scale=1 / math.sqrt(d_k)),
         "Your weights come from scores divided by sqrt(d_k); Section 5.2 works unscaled."),
        ("divided_by_d_k", lambda: weights_of(scale=1 / d_k),
         "Your weights come from scores divided by d_k; Section 5.2 does not scale."),
        ("wrong_axis", lambda: weights_of(axis=0),
         "Your softmax normalised the columns (axis=0); each row (one query) should sum to 1."),
        ("no_transpose", lambda: weights_of(keys=k),
         "Your weights come from Q K, not Q K^T: a score pairs a row of Q with a row of K."),
        ("no_softmax", lambda: scores,
         "These are the raw scores; the weights are one step further."),
        ("softmax_whole_matrix", lambda: whole,
         "Your weights add up to 1 over the whole matrix; each row (one query) should sum to 1 on its own."),
        ("transposed", lambda: w_exact.T, "Your weights are transposed: one row per query."),
    ]
    w_result = _match(weights, w_exact, w_mistakes, what="weights", atol=HAND_ATOL)
    if _is_empty(v2):
        if w_result is None:
            return _not_yet("Your weights are right; now find v2 from them.")
        return w_result
    if w_result is None:
        return _with_precision_note(_correct("Right: the weights, and the value row behind the output."), v2, weights)
    if w_result.status == "not yet":
        return _with_precision_note(_correct("Right: the value row behind the output asked for."), v2)
    return CheckResult(w_result.status, "Your v2 is right, but not your weights. " + w_result.message,
                       w_result.mistake)


# ---------------------------------------------------------------------------
# Exercise 3 of Section 5.2: FLOPs
# ---------------------------------------------------------------------------


FLOP_BUDGET = 10**12
"""E1's exercise 3 asks for the longest sequence whose two products fit this many FLOPs at the
``exercise_3_d`` of ``load_example("complexity_5_2")``. Lesson 03 counts the FLOPs of given
sizes; the exercise runs the count backwards."""


FLOPS_MESSAGES = {
    "multiply_adds_or_one_product": "That n fits the budget if a multiply-add counts as one operation, or with "
    "one product's FLOPs: the exercise counts both products, and a multiply-add as two operations.",
    "one_product_multiply_adds": "That n fits the budget with one product's multiply-adds: the exercise counts "
    "both products, and a multiply-add as two operations.",
    "n_d_swapped": "That n comes from 4 n d^2: n and d are swapped. Look again at the shape of Q K^T and at the "
    "length of each dot product in it.",
    "no_square_root": "That is the budget divided by 4 d, which is n^2, not n.",
}
"""The message of each mistake of E1 ex. 3; the values are sealed (:mod:`helpers.checks._sealed`)."""


@_never_raise
def check_flops(answer):
    """Check Section 5.2, exercise 3: the largest n whose attention fits :data:`FLOP_BUDGET`.

    d_k = d_v = d is the ``exercise_3_d`` of ``load_example("complexity_5_2").given``;
    the count is that of :func:`helpers.attention.attention_flops` (a multiply-add is 2
    FLOPs, both matrix products are counted, the softmax is left out), and n is a whole
    number of tokens.

    Parameters
    ----------
    answer : number
        A whole number (``22_000``, ``2.2e4`` and a NumPy integer are numbers). Text is
        refused with a hint on writing it as a number.

    Returns
    -------
    CheckResult
        Mistakes recognised: ``over_budget`` (one token too many), ``not_whole`` (a
        fraction of a token), ``multiply_adds_or_one_product`` (a multiply-add counted
        once, or one product counted), ``one_product_multiply_adds``, ``n_d_swapped``,
        ``no_square_root`` (n^2 given for n), ``precision`` (a float16 number), ``not_a_number``,
        ``not_finite``, ``wrong_value``.

    Examples
    --------
    >>> check_flops("a lot").mistake
    'not_a_number'
    """
    if _is_empty(answer):
        return _not_yet("No answer yet: how many tokens?")
    if _low_precision(answer) == np.dtype(np.float16):
        return _incorrect(
            "precision",
            "Your answer is a float16 number, which keeps only about 3 significant digits. Give a "
            "Python int, or a NumPy int64 or float64.",
        )
    value = _as_number(answer)
    if value is None:
        return _not_a_number(answer, "number of tokens", example="100 or 1_000 (a whole number)")
    if not math.isfinite(value):
        return _incorrect("not_finite", f"Your number of tokens ({value}) is not a finite number.")
    budget = FLOP_BUDGET
    entry = TABLE["e1_flops"]
    record_sealed("number", "number of tokens", entry)
    verdict = _sealed.whole_verdict(entry, value)
    shown = f"{value:,.0f}" if value == round(value) else f"{value:,}"
    if verdict == "right":
        return _with_precision_note(
            _correct(f"Right: {shown} tokens; one more and the two products cost more than "
                     f"{budget:,} FLOPs."), answer
        )
    if verdict == "over_budget":
        return _incorrect(
            "over_budget",
            f"With {shown} tokens the two products cost more than the budget: the task asks for "
            "the largest n that stays within it.",
        )
    if verdict == "not_whole":
        return _incorrect(
            "not_whole",
            f"You wrote {value:g}, a fraction of a token: n counts tokens, so give the largest whole "
            "number that stays within the budget.",
        )
    if verdict in FLOPS_MESSAGES:
        return _incorrect(verdict, f"You wrote {shown}. {FLOPS_MESSAGES[verdict]}")
    return _incorrect(
        "wrong_value",
        f"You wrote {shown}, which is not the largest n whose two products fit within {budget:,} FLOPs. "
        "Write the cost of attention as a function of n and d first, as lesson 03 counts it.",
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
        if tokens.index(item) in found:
            return None, _incorrect(
                "duplicate_tokens",
                f"Your favourites name {item!r} more than once; name each token once, as the set of "
                "tokens whose margin is at least 0.",
            )
        found.add(tokens.index(item))
    return found, None


MARGIN_MESSAGES = {
    "self_included": "Your margins compare each self-score with the largest score of its row, itself included, "
    "so none is above 0; the exercise compares it with the other keys of the row.",
    "reversed": "Your margins have the wrong sign: the margin is the self-score minus the largest other score.",
    "returned_scores": "These are the shared-projection scores; the margins are one number per row, worked out "
    "from them.",
    "separate_projections": "Your margins come from the scores with separate projections, W_q for the queries "
    "and W_k for the keys; the exercise uses one matrix, W = W_q, for both.",
    "shared_w_k": "You shared W_k; the exercise shares the query matrix W_q for both roles.",
    "no_projection": "Your margins come from X X^T, the scores without any projection; project the inputs with W "
    "first.",
    "scaled": "Your margins come from scores divided by sqrt(d_k); Section 5.2 works unscaled.",
    "divided_by_d_k": "Your margins come from scores divided by d_k; Section 5.2 does not scale the scores.",
    "feature_gram": "Your margins come from a d_k x d_k matrix over features, with the transpose on the other "
    "factor; the scores pair tokens: n x n.",
    "returned_weights": "Your margins are those of weights (a softmax of the scores); the exercise asks for the "
    "margins of the scores themselves.",
}
"""The message of each mistake of E1 ex. 4a; the values are sealed (:mod:`helpers.checks._sealed`)."""


def _sealed_array_match(answer, entry, messages, *, what):
    """:func:`helpers.checks._core._match` for a sealed array: the check holds digests, not the values."""
    arr, result = _as_real_array(answer, what)
    if result is not None:
        return result
    record_sealed("array", what, entry)
    verdict, _ = _sealed.array_verdict(entry, arr)
    if verdict == "right":
        return None
    if verdict in messages:
        return _incorrect(verdict, messages[verdict])
    shape = tuple(entry["right"]["shape"])
    reshape = _reshape_needed(what, arr.shape, shape)
    if reshape is not None:
        return reshape
    if verdict == "wrong_shape":
        return _incorrect("wrong_shape", f"Your {what} {_verb(what, 'has', 'have')} shape {arr.shape}, but "
                          f"{_verb(what, 'it', 'they')} should have shape {shape}.")
    return _incorrect("wrong_values", f"Your {what} {_verb(what, 'has', 'have')} the right shape but not the "
                      "right numbers.")


@_never_raise
def check_section_5_2_exercise_4(margins, favourites=None):
    """Check Section 5.2, exercise 4: how far each token's self-score is from winning its row.

    The inputs X of the "journey" sentence and W = its ``w_q`` (``load_example("journey")``),
    used for both queries and keys, give the unscaled scores S = (XW)(XW)^T. Part (a) is
    each row's margin, S_ii - max_{j != i} S_ij (one number per token: positive when the
    token scores itself above every other key); part (b), ``favourites``, is the list of
    tokens that score themselves highest. Part (b) is only checked together with right
    margins from part (a): the tokens are read off them, not guessed.

    Parameters
    ----------
    margins : array_like, shape (6,)
        One margin per token (row).
    favourites : list of str, optional
        Token names exactly as in ``journey.tokens``; ``[]`` means "none".

    Returns
    -------
    CheckResult
        Mistakes recognised for ``margins``: ``self_included`` (the self-score left among
        the others), ``reversed`` (the other way round), ``returned_scores`` (the 6 x 6
        scores themselves), ``separate_projections`` (W^K kept apart from W^Q),
        ``shared_w_k`` (shared the key matrix instead), ``no_projection`` (X X^T),
        ``scaled`` (divided by sqrt(d_k)), ``divided_by_d_k``, ``feature_gram`` (the
        transpose on the wrong factor), ``returned_weights`` (margins of the softmax), then
        ``wrong_shape`` / ``wrong_values``. For ``favourites``: ``every_token``,
        ``no_token``, ``bare_string`` (a string, not a list), ``indices`` (row numbers, not
        names), ``not_tokens`` (names not written as in ``journey.tokens``),
        ``wrong_tokens``, ``duplicate_tokens``; "not yet" when favourites come without the margins.

    Examples
    --------
    >>> check_section_5_2_exercise_4(None).status
    'not yet'
    """
    ex = examples.load_example("journey")
    entry = TABLE["e1_margins"]
    n = len(ex.tokens)
    fav_given = not (favourites is None or (isinstance(favourites, str) and not favourites.strip()))
    if _is_empty(margins):
        if fav_given:
            return _not_yet(
                "Part (b) is checked together with your margins from part (a), since the tokens are "
                "read off them: pass margins_shared as well."
            )
        return _not_yet("No margins yet: compute the scores with W = journey.w_q for both roles, then "
                        "each row's margin.")
    result = _sealed_array_match(margins, entry, MARGIN_MESSAGES, what="margins")
    if result is not None:
        return result
    if not fav_given:
        return _with_precision_note(
            _correct("Right: one margin per token, with the shared projection. Now part (b)."), margins
        )
    got, refused = _favourites_verdict(favourites, ex.tokens)
    if refused is not None:
        return refused
    if _sealed.is_choice("e1-favourites-4b", entry["favourites"], got):
        return _with_precision_note(
            _correct("Right: the margins, and the tokens that score themselves highest."),
            margins,
        )
    if got == set(range(n)):
        return _incorrect(
            "every_token",
            "Not every token scores itself highest. Read it off your margins.",
        )
    if not got:
        return _incorrect(
            "no_token",
            "At least one token scores itself highest. Read it off your margins.",
        )
    return _incorrect(
        "wrong_tokens",
        "Not those tokens. Read them off your margins.",
    )


# ---------------------------------------------------------------------------
# Exercise 5 of Section 5.2: attention entropy
# ---------------------------------------------------------------------------

TARGET_ENTROPY = 1.5
"""E1's exercise 5 asks for the temperature at which the row of "journey" has this entropy, in
nats. Lesson 03 computes entropies of given weights; the exercise asks for the temperature that
gives one, which no closed formula yields: a search finds it."""

TEMPERATURE_ATOL = 5e-4
"""The task asks for three decimals."""


@_never_raise
def check_attention_entropy(temperature):
    """Check Section 5.2, exercise 5: the temperature that gives the row of "journey" an entropy.

    The row is that of the query "journey" in the unscaled scores of the "journey" sentence
    with its separate projections (``load_example("journey")``: ``.q @ .k.T``); its weights
    at temperature T are softmax(row / T), and the task asks for the T at which their
    entropy is :data:`TARGET_ENTROPY` nats, to three decimals.

    Parameters
    ----------
    temperature : number
        The temperature T.

    Returns
    -------
    CheckResult
        Mistakes recognised: ``bits`` (the entropy measured in bits), ``scaled`` (scores
        divided by sqrt(d_k)), ``wrong_axis`` (the column of "journey", softmax over the
        queries), ``wrong_row`` (another token's row), ``multiplied_by_temperature``,
        ``shared_projection`` (exercise 4's scores, W_q for both roles),
        ``rounded`` (fewer than three decimals), ``not_a_number``, ``not_finite``,
        ``wrong_value``.

    Examples
    --------
    >>> check_attention_entropy(None).status
    'not yet'
    """
    if _is_empty(temperature):
        return _not_yet("No answer yet: the temperature T.")
    value = _as_number(temperature)
    if value is None:
        return _not_a_number(temperature, "temperature")
    if not math.isfinite(value):
        return _incorrect("not_finite", f"Your temperature ({value}) is not a finite number.")
    ex = examples.load_example("journey")
    entry = TABLE["e1_temperature"]
    record_sealed("number", "temperature", entry)
    verdict, fewer = _sealed.number_verdict(entry, value)
    if verdict == "right":
        return _with_precision_note(
            _correct(f"Right: at this temperature the row of 'journey' has an entropy of {TARGET_ENTROPY:g} nats."),
            temperature,
        )
    messages = {
        "bits": f"At that temperature the row's entropy is {TARGET_ENTROPY:g} bits (log base 2); the task "
        "measures it in nats, with the natural logarithm.",
        "scaled": "That temperature works for scores divided by sqrt(d_k); Section 5.2 works unscaled.",
        "wrong_axis": "That temperature is for the column of 'journey' (a softmax over the queries); the weights "
        "of the query 'journey' are its row.",
        "multiplied_by_temperature": "That is the temperature that works if T multiplies the scores; it divides "
        "them.",
        "shared_projection": "That temperature is for the row of 'journey' with exercise 4's shared projection "
        "(W = W_q for both roles); this exercise uses the separate projections: journey.q @ journey.k.T.",
    }
    messages.update({
        f"wrong_row:{j}": f"That temperature is for the row of {tok!r}; the task asks for the row of 'journey'."
        for j, tok in enumerate(ex.tokens)
    })
    if verdict in messages:
        return _incorrect(verdict.split(":")[0], f"Your temperature is {value:g}. {messages[verdict]}")
    if verdict == "rounded":
        return _incorrect(
            "rounded",
            f"Your temperature is {value:g}, to {fewer} decimal{'s' if fewer != 1 else ''} (rounded or cut "
            "short), which is too coarse here. Give at least three decimals.",
        )
    return _incorrect(
        "wrong_value",
        f"Your temperature is {value:g}, which is not right. At that T, compute the entropy of the "
        "row of 'journey'; is it above or below the one asked for?",
    )
