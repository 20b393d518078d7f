"""Tests of helpers/checks (the package): right answers, each computed mistake, and robustness.

Every mistake is computed here, independently of the checker, and must be
reported with its ``mistake`` name; arbitrary objects (hypothesis) must always
give a CheckResult, never an exception.
"""

import math
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from helpers import attention, examples
from helpers.checks import (
    CheckResult,
    check_attention_backward,
    check_attention_entropy,
    check_definition_shapes,
    check_flops,
    check_i_am_happy_context,
    check_i_am_happy_weights,
    check_init_std,
    check_journey_scores_row,
    check_journey_variance_d100,
    check_journey_weights_row,
    check_masked_attention,
    check_masked_backward,
    check_online_softmax_merge,
    check_section_5_2_exercise_1,
    check_section_5_2_exercise_2,
    check_section_5_2_exercise_4,
    check_self_attention,
    check_stable_softmax,
    check_temperature_prediction,
    check_why_scale_512,
)
from helpers.checks.e1_section_5_2 import (
    EXERCISE_1_K,
    EXERCISE_1_Q,
    EXERCISE_1_TARGET,
    EXERCISE_1_V1,
    TARGET_ENTROPY,
)
from helpers.checks.e2_i_am_happy import TODAY
from helpers.checks.e3_cat_sat import D_HEAD, STD_K, STD_Q, TARGET_WEIGHT


# Written here, not taken from helpers.attention: a student function built on the
# library kernels is refused by the checks (``used_library``), and the tests should
# compute the expected answers independently anyway.
def softmax(x, axis=-1, temperature=1.0):
    x = np.asarray(x, dtype=float) / temperature
    if axis is None:
        e = np.exp(x - x.max())
        return e / e.sum()
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def sdpa(q, k, v, mask=None, *, scale=None):
    q, k, v = (np.asarray(a, dtype=float) for a in (q, k, v))
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    if mask is not None:
        mask = np.broadcast_to(np.asarray(mask, bool), s.shape)
        s = np.where(mask, s, -np.inf)
        keep = mask.any(axis=-1, keepdims=True)
        top = np.where(keep, np.where(mask, s, -np.inf).max(axis=-1, keepdims=True), 0.0)
        e = np.where(mask, np.exp(s - top), 0.0)
        total = e.sum(axis=-1, keepdims=True)
        w = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    else:
        w = softmax(s)
    return w @ v, w


def assert_mistake(result, name):
    assert isinstance(result, CheckResult)
    assert result.status == "incorrect", result
    assert result.mistake == name, result
    assert not result
    assert result.message


def assert_correct(result):
    assert isinstance(result, CheckResult)
    assert result.status == "correct", result
    assert result and result.mistake is None


# ---------------------------------------------------------------------------
# CheckResult
# ---------------------------------------------------------------------------


def test_check_result_rendering_and_truth():
    ok = CheckResult("correct", "Fine.")
    bad = CheckResult("incorrect", "Use <axis=-1> & try again.", "wrong_axis")
    wait = CheckResult("not yet", "No answer yet.")
    assert bool(ok) and not bad and not wait
    assert str(ok) == "✅ correct: Fine."
    assert str(bad).startswith("❌ incorrect:")
    assert str(wait).startswith("… not yet:")
    assert "&lt;axis=-1&gt; &amp; try" in bad._repr_html_()
    with pytest.raises(ValueError):
        CheckResult("maybe", "?")
    with pytest.raises(AttributeError):
        ok.status = "incorrect"  # frozen


# ---------------------------------------------------------------------------
# Exercise 1 of Section 5.2
# ---------------------------------------------------------------------------

# Typed here, not imported from the check module: the test states the task's matrices.
Q1 = np.array([[1.0, 0.0], [0.0, 1.0]])
K1 = np.array([[1.0, 0.0], [1.0, 1.0]])
V1_ROW = np.array([1.0, 2.0])
TARGET1 = np.array([2.0, 1.0])
W1 = softmax(Q1 @ K1.T)


def solve_v2(row):
    """v2 from the second query's weights ``row``: row[0] v1 + row[1] v2 = target."""
    return (TARGET1 - row[0] * V1_ROW) / row[1]


V2 = solve_v2(W1[1])


def ex1_weights(scale=1.0, axis=-1, keys=None):
    return softmax(Q1 @ (K1.T if keys is None else keys) * scale, axis=axis)


def test_ex1_inputs_are_the_checks_and_not_symmetric():
    assert np.array_equal(Q1, EXERCISE_1_Q) and np.array_equal(K1, EXERCISE_1_K)
    assert np.array_equal(V1_ROW, EXERCISE_1_V1) and np.array_equal(TARGET1, EXERCISE_1_TARGET)
    assert not np.array_equal(K1, K1.T)
    # by hand: ((e + 1) target - v1) / e, and the output of the second query is the target
    assert np.allclose(V2, ((math.e + 1) * TARGET1 - V1_ROW) / math.e)
    assert np.allclose(W1 @ np.vstack([V1_ROW, V2]), [[(1 + V2[0]) / 2, (2 + V2[1]) / 2], TARGET1])


def test_ex1_exact_and_rounded():
    assert_correct(check_section_5_2_exercise_1(V2))
    assert_correct(check_section_5_2_exercise_1(V2.round(2).tolist()))
    assert_correct(check_section_5_2_exercise_1(V2, weights=W1))
    assert_correct(check_section_5_2_exercise_1(tuple(V2.round(3)), weights=W1.round(2)))


@pytest.mark.parametrize(
    "answer, name",
    [
        (solve_v2(ex1_weights(scale=1 / math.sqrt(2))[1]), "scaled"),
        (solve_v2(ex1_weights(scale=0.5)[1]), "divided_by_d_k"),
        (solve_v2(ex1_weights(axis=0)[1]), "wrong_axis"),
        (solve_v2(ex1_weights(keys=K1)[1]), "equal_weights"),
        (solve_v2(W1[0]), "equal_weights"),
        (solve_v2(W1[1][::-1]), "weights_swapped"),
        (TARGET1 / W1[1, 1], "forgot_v1"),
        (TARGET1, "target_as_value"),
        (solve_v2(softmax((Q1 @ K1.T).ravel()).reshape(2, 2)[1]), "softmax_whole_matrix"),
        (np.vstack([V1_ROW, V2]), "wrong_shape"),
        (V2 + 0.1, "wrong_values"),
    ],
)
def test_ex1_mistakes(answer, name):
    assert_mistake(check_section_5_2_exercise_1(answer), name)


def test_ex1_messages_hold_no_answer():
    for answer in (TARGET1, V2 + 0.1, solve_v2(W1[0]), "x"):
        message = check_section_5_2_exercise_1(answer).message
        assert "2.37" not in message and "0.63" not in message and "(e + 1)" not in message


@pytest.mark.parametrize(
    "w, name",
    [
        (ex1_weights(scale=1 / math.sqrt(2)), "scaled"),
        (ex1_weights(scale=0.5), "divided_by_d_k"),
        (ex1_weights(axis=0), "wrong_axis"),
        (ex1_weights(keys=K1), "no_transpose"),
        (Q1 @ K1.T, "no_softmax"),
        (W1[0], "wrong_shape"),
    ],
)
def test_ex1_weight_mistakes(w, name):
    r = check_section_5_2_exercise_1(V2, weights=w)
    assert_mistake(r, name)
    assert r.message.startswith("Your v2 is right, but")
    assert_mistake(check_section_5_2_exercise_1(None, weights=w), name)


def test_ex1_not_yet():
    for empty in (None, [], ""):
        assert check_section_5_2_exercise_1(empty).status == "not yet"
    r = check_section_5_2_exercise_1(None, weights=W1)
    assert r.status == "not yet" and "v2" in r.message
    assert_correct(check_section_5_2_exercise_1(V2, weights=[]))


# ---------------------------------------------------------------------------
# "I am happy"
# ---------------------------------------------------------------------------

HAPPY = examples.load_example("i_am_happy")
X_TODAY = np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6], [0.7, 0.8, 0.9], [1.0, 1.1, 1.2]])
X_HAPPY = X_TODAY[:3]
SCORES_H = X_TODAY @ X_TODAY.T
W_HAPPY = softmax(SCORES_H / math.sqrt(3))
W_THREE = softmax(X_HAPPY @ X_HAPPY.T / math.sqrt(3))


def test_happy_inputs_are_the_example_and_today():
    assert np.allclose(HAPPY.q, X_HAPPY) and np.allclose(TODAY, X_TODAY[3])
    # the answer is in no field of the example: the example has three tokens, the task four
    for fig in HAPPY.figures:
        assert np.size(fig.exact) != W_HAPPY.size or not np.allclose(np.ravel(fig.exact), W_HAPPY.ravel())


def test_happy_exact_and_rounded():
    assert_correct(check_i_am_happy_weights(W_HAPPY))
    assert_correct(check_i_am_happy_weights(W_HAPPY.round(2)))
    assert_correct(check_i_am_happy_weights(W_HAPPY.round(4).tolist()))


@pytest.mark.parametrize(
    "answer, name",
    [
        (W_THREE, "three_tokens"),
        (softmax(X_TODAY @ X_HAPPY.T / math.sqrt(3)), "today_not_a_key"),
        (softmax(X_HAPPY @ X_TODAY.T / math.sqrt(3)), "today_not_a_query"),
        (softmax(SCORES_H), "unscaled"),
        (softmax(SCORES_H / 3), "divided_by_d_k"),
        (softmax(SCORES_H / math.sqrt(3), axis=0), "wrong_axis"),
        (softmax((SCORES_H / math.sqrt(3)).ravel()).reshape(4, 4), "softmax_whole_matrix"),
        (SCORES_H / math.sqrt(3), "returned_scores"),
        (W_HAPPY[0], "wrong_shape"),
        (np.full((4, 4), 0.25), "wrong_values"),
    ],
)
def test_happy_mistakes(answer, name):
    assert_mistake(check_i_am_happy_weights(answer), name)


@pytest.mark.parametrize("decimals", [1, 2])
def test_happy_scores_rounded_before_the_softmax_are_refused(decimals):
    w = softmax(np.round(SCORES_H / math.sqrt(3), decimals))
    for answer in (w, w.round(4)):
        assert_mistake(check_i_am_happy_weights(answer), "rounded_scores")
    assert_correct(check_i_am_happy_weights(W_HAPPY.round(4)))


def test_happy_row_hint():
    w = W_HAPPY.copy()
    w[1] = [0.25, 0.25, 0.25, 0.25]
    r = check_i_am_happy_weights(w)
    assert r.mistake == "wrong_values"
    assert "1" in r.message


def test_happy_not_yet():
    for empty in (None, [], ""):
        assert check_i_am_happy_weights(empty).status == "not yet"


# ---------------------------------------------------------------------------
# A student's softmax
# ---------------------------------------------------------------------------


def good_softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def naive_softmax(x):
    e = np.exp(x)
    return e / e.sum(axis=-1, keepdims=True)


def math_exp_softmax(x):  # plain Python: math.exp(1000) raises OverflowError
    rows = np.atleast_2d(x)
    out = [[math.exp(a) / sum(math.exp(b) for b in row) for a in row] for row in rows]
    return np.asarray(out).reshape(np.shape(x))


def axis0_softmax(x):
    e = np.exp(x - np.max(x, axis=0, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)


def whole_softmax(x):
    e = np.exp(x - np.max(x))
    return e / e.sum()


def unnormalised_softmax(x):
    return np.exp(x - np.max(x, axis=-1, keepdims=True))


def raising_softmax(x):
    raise NotImplementedError("todo")


def good_masked_softmax(x, axis=-1, where=None):
    """E5's task: the softmax along ``axis`` over the entries where ``where`` is True."""
    s = np.asarray(x, float) if where is None else np.where(where, x, -np.inf)
    top = np.max(s, axis=axis, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(top), top, 0.0))
    total = e.sum(axis=axis, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def test_softmax_right():
    assert_correct(check_stable_softmax(good_masked_softmax))
    assert_correct(check_stable_softmax(
        lambda x, axis=-1, where=None: good_masked_softmax(x, axis, where).astype(np.float32)))
    assert_correct(check_stable_softmax(lambda x, **kw: good_masked_softmax(x, **kw).tolist()))


def test_softmax_of_notebook_06_is_refused():
    # Notebook 06's stable_softmax(x): the last axis, no mask. The task asks for the next step.
    r = check_stable_softmax(good_softmax)
    assert r.mistake == "no_axis_or_where", r


@pytest.mark.parametrize(
    "fn, name",
    [
        (naive_softmax, "no_max_subtraction"),
        (math_exp_softmax, "no_max_subtraction"),
        (axis0_softmax, "wrong_axis"),
        (whole_softmax, "wrong_axis"),
        (unnormalised_softmax, "not_normalised"),
        (raising_softmax, "raises"),
        (lambda x: good_softmax(x)[..., :1], "wrong_shape"),
        (lambda x: good_softmax(x).sum(), "wrong_shape"),
        (lambda x: None, "wrong_shape"),
        (lambda x: "softmax", "wrong_shape"),
        (lambda x: good_softmax(x[..., ::-1]), "wrong_values"),
        (lambda x, axis: good_softmax(x), "raises"),
        ("softmax", "not_callable"),
        (np.exp, "not_normalised"),
    ],
)
def test_softmax_mistakes(fn, name):
    assert_mistake(check_stable_softmax(fn), name)


def test_softmax_not_yet_and_input_untouched():
    assert check_stable_softmax(None).status == "not yet"

    def mutating(x, axis=-1, where=None):
        if where is not None:
            return good_masked_softmax(x, axis, where)
        x -= np.max(x, axis=axis, keepdims=True)
        np.exp(x, out=x)
        x /= x.sum(axis=axis, keepdims=True)
        return x

    assert_correct(check_stable_softmax(mutating))


# ---------------------------------------------------------------------------
# A student's masked attention
# ---------------------------------------------------------------------------


def padded(fn2):
    """E5 exercise 3 from a masked attention ``fn2(q, k, v, mask)`` of one sentence: the mask of
    real (query, key) pairs is built from the lengths, and ``fn2`` runs sentence by sentence."""

    def fn(q, k, v, lengths):
        real = np.arange(q.shape[-2]) < np.asarray(lengths)[:, None]
        mask = real[:, :, None] & real[:, None, :]
        outs = [fn2(q[b], k[b], v[b], mask[b]) for b in range(len(q))]
        return np.stack([o[0] if isinstance(o, tuple) else o for o in outs])

    return fn


def good_masked(q, k, v, mask):
    return sdpa(q, k, v, mask)[0]


def good_masked_by_hand(q, k, v, mask):
    scores = q @ k.T / np.sqrt(q.shape[-1])
    scores = np.where(mask, scores, -np.inf)
    w = np.zeros_like(scores)
    live = mask.any(axis=-1)
    w[live] = good_softmax(scores[live])
    return w @ v, w


def inverted_masked(q, k, v, mask):
    return sdpa(q, k, v, ~np.asarray(mask, bool))[0]


def unscaled_masked(q, k, v, mask):
    return sdpa(q, k, v, mask, scale=1.0)[0]


def nan_masked(q, k, v, mask):  # -inf and a naive softmax: 0/0 in an empty row
    scores = np.where(mask, q @ k.T / np.sqrt(q.shape[-1]), -np.inf)
    return naive_softmax(scores) @ v


def big_negative_masked(q, k, v, mask):  # -1e9 instead of -inf: uniform empty rows
    scores = np.where(mask, q @ k.T / np.sqrt(q.shape[-1]), -1e9)
    return good_softmax(scores) @ v


def test_masked_right():
    assert_correct(check_masked_attention(padded(good_masked)))
    assert_correct(check_masked_attention(padded(good_masked_by_hand)))
    assert_correct(check_masked_attention(padded(lambda q, k, v, mask: sdpa(q, k, v, mask))))


def test_masked_attention_of_notebook_05_is_refused():
    # Notebook 05's masked_fill_attention(Q, K, V, mask) with the lengths passed as the mask, and
    # with notebook 05's padding mask of the keys only.
    def masked_fill_attention(Q, K, V, mask=None):
        scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
        if mask is not None:
            scores = np.where(mask == 0, -np.inf, scores)
        e = np.exp(scores - scores.max(axis=-1, keepdims=True))
        weights = e / e.sum(axis=-1, keepdims=True)
        return weights @ V, weights

    assert_mistake(check_masked_attention(masked_fill_attention), "lengths_as_mask")

    def keys_only(q, k, v, lengths):
        pad = (np.arange(q.shape[-2]) < np.asarray(lengths)[:, None])[:, None, :]   # (B, 1, n)
        return sdpa(q, k, v, pad)[0]

    assert_mistake(check_masked_attention(keys_only), "padded_queries_not_zero")


@pytest.mark.parametrize(
    "fn, name",
    [
        (lambda q, k, v, lengths: sdpa(q, k, v)[0], "mask_ignored"),
        (padded(inverted_masked), "mask_inverted"),
        (padded(unscaled_masked), "unscaled"),
        (padded(nan_masked), "nan_for_masked_row"),
        (padded(big_negative_masked), "masked_row_not_zero"),
        (lambda q, k, v, lengths: padded(good_masked)(q, k, v, lengths).reshape(-1), "wrong_shape"),
        (lambda q, k, v, lengths: None, "wrong_shape"),
        (lambda q, k, v: q, "raises"),
        (lambda q, k, v, lengths: 1 / 0, "raises"),
        (lambda q, k, v, lengths: padded(good_masked)(q, k, v, lengths) * 1.1, "wrong_values"),
        (lambda q, k, v, lengths: padded(good_masked)(q, k, v, np.asarray(lengths) + 1), "length_off_by_one"),
        (42, "not_callable"),
    ],
)
def test_masked_mistakes(fn, name):
    assert_mistake(check_masked_attention(fn), name)


def test_masked_not_yet():
    assert check_masked_attention(None).status == "not yet"


# ---------------------------------------------------------------------------
# Exercise 3 of Section 5.2: FLOPs
# ---------------------------------------------------------------------------

N3, D3 = 1000, 512
N3_MAX = max(n for n in range(1, 100_000) if 4 * n * n * D3 <= 10**12)


def test_flops_budget_answer_by_search():
    # an independent count: the largest n by a plain search, and one more is over the budget
    assert N3_MAX == 22_097
    assert attention.attention_flops(N3_MAX, N3_MAX, D3, D3) <= 10**12 < attention.attention_flops(
        N3_MAX + 1, N3_MAX + 1, D3, D3)


@pytest.mark.parametrize("answer", [N3_MAX, float(N3_MAX), np.int64(N3_MAX), 2.2097e4, np.float64(N3_MAX)])
def test_flops_right(answer):
    assert_correct(check_flops(answer))


@pytest.mark.parametrize(
    "answer, name",
    [
        (N3_MAX + 1, "over_budget"),
        (math.sqrt(10**12 / (4 * D3)), "not_whole"),
        (max(n for n in range(1, 100_000) if 2 * n * n * D3 <= 10**12), "multiply_adds_or_one_product"),
        (max(n for n in range(1, 100_000) if n * n * D3 <= 10**12), "one_product_multiply_adds"),
        (10**12 // (4 * D3 * D3), "n_d_swapped"),
        (10**12 / (4 * D3), "no_square_root"),
        (np.float16(22_000), "precision"),
        (22_000, "wrong_value"),
        ("22097", "not_a_number"),
        (float("inf"), "not_finite"),
    ],
)
def test_flops_mistakes(answer, name):
    assert_mistake(check_flops(answer), name)


def test_flops_messages_hold_no_answer():
    for answer in (N3_MAX + 1, 22_000, 31_250, 10**12 / (4 * D3)):
        assert "22,097" not in check_flops(answer).message and "22097" not in check_flops(answer).message


def test_flops_not_yet():
    for empty in (None, "", []):
        assert check_flops(empty).status == "not yet"


# ---------------------------------------------------------------------------
# "cat sat" at a temperature
# ---------------------------------------------------------------------------

CAT = examples.load_example("cat_sat")
SCORES_C = CAT.q @ CAT.k.T
T_09 = 1 / math.log(9)


def test_temperature_answer_gives_the_weight():
    assert TARGET_WEIGHT == 0.9
    assert np.isclose(softmax(SCORES_C / 2, temperature=T_09)[0, 0], 0.9)


@pytest.mark.parametrize("answer", [T_09, 0.455, 0.4551, np.float32(T_09), np.array([T_09])])
def test_temperature_right(answer):
    assert_correct(check_temperature_prediction(answer))


@pytest.mark.parametrize(
    "answer, name",
    [
        (2 * T_09, "forgot_scaling"),
        (math.log(9), "multiplied_by_temperature"),
        (math.log(9) / 2, "multiplied_and_unscaled"),
        (T_09 / 2, "divided_by_d_k"),
        (1 / math.log10(9), "log10"),
        (1 / 9, "no_log"),
        (-1 / math.log(0.9), "log_of_weight"),
        (-T_09, "other_token"),
        (0.46, "rounded"),
        (0.5, "rounded"),
        (3.0, "wrong_value"),
        ("0.455", "not_a_number"),
        (float("nan"), "not_finite"),
    ],
)
def test_temperature_mistakes(answer, name):
    assert_mistake(check_temperature_prediction(answer), name)


def test_temperature_messages_hold_no_answer():
    for answer in (2 * T_09, 3.0, 0.46, -0.3):
        message = check_temperature_prediction(answer).message
        assert "0.455" not in message and "ln 9" not in message and "ln(9)" not in message


def test_temperature_not_yet():
    for empty in (None, "", []):
        assert check_temperature_prediction(empty).status == "not yet"


# ---------------------------------------------------------------------------
# Exercise 2 of Section 5.2: the weights of "The cat sat on the mat"
# ---------------------------------------------------------------------------

# The embeddings of the exercise's set-up cell, typed again here.
EMB2 = {
    "the": [0.1, -0.1, 0.6],
    "cat": [0.1, -0.5, 0.4],
    "sat": [1.3, 0.9, -0.7],
    "on": [-1.3, -0.6, 0.0],
    "mat": [-2.3, -0.2, -1.2],
}
SENTENCE2 = ["The", "cat", "sat", "on", "the", "mat"]
X2 = np.array([EMB2[t.lower()] for t in SENTENCE2])
SCORES_2 = X2 @ X2.T
W_2 = softmax(SCORES_2)

# "cat sat mat", for the entropy test below
CSM = examples.load_example("cat_sat_mat")
SCORES_CSM = CSM.q @ CSM.k.T
W_CSM = softmax(SCORES_CSM)


def test_ex2_embeddings_are_the_checks_and_one_random_draw():
    from helpers.checks import e1_section_5_2 as e1

    assert list(e1.SENTENCE_2) == SENTENCE2
    assert {k: list(v) for k, v in e1.EMBEDDINGS_2.items()} == EMB2
    drawn = np.random.default_rng(0).normal(size=(5, 3)).round(1)
    np.testing.assert_array_equal(drawn, np.array(list(EMB2.values())))


def test_ex2_exact_and_rounded():
    assert_correct(check_section_5_2_exercise_2(W_2))
    assert_correct(check_section_5_2_exercise_2(W_2.round(2).tolist()))
    # "The" and "the" share an embedding: equal rows, equal columns
    np.testing.assert_allclose(W_2[0], W_2[4])
    np.testing.assert_allclose(W_2[:, 0], W_2[:, 4])


@pytest.mark.parametrize(
    "answer, name",
    [
        (softmax(SCORES_2 / math.sqrt(3)), "scaled"),
        (softmax(SCORES_2 / 3), "divided_by_d_k"),
        (softmax(SCORES_2, axis=0), "wrong_axis"),
        (W_2.T, "wrong_axis"),  # Q = K: the transpose is the column softmax
        (SCORES_2, "no_softmax"),
        (softmax(SCORES_2, axis=None), "softmax_whole_matrix"),
        (W_2 @ X2, "returned_output"),
        (softmax(np.array(list(EMB2.values())) @ np.array(list(EMB2.values())).T), "vocabulary_rows"),
        (softmax(X2.T @ X2), "feature_gram"),
        (W_2[:2], "wrong_shape"),
        (W_2 + 0.05, "wrong_values"),
        ("weights", "wrong_type"),
        (np.full((6, 6), np.inf), "not_finite"),
    ],
)
def test_ex2_mistakes(answer, name):
    assert_mistake(check_section_5_2_exercise_2(answer), name)


def test_ex2_not_yet():
    for empty in (None, "", [], np.zeros((0, 3))):
        assert check_section_5_2_exercise_2(empty).status == "not yet"


# ---------------------------------------------------------------------------
# Exercise 4 of Section 5.2: W^Q = W^K
# ---------------------------------------------------------------------------

JOURNEY = examples.load_example("journey")
XJ, WQJ, WKJ = JOURNEY.inputs, JOURNEY.w_q, JOURNEY.w_k
PJ = XJ @ WQJ
S_SHARED = PJ @ PJ.T


def margins(scores):
    """S_ii - max_{j != i} S_ij, by a plain loop."""
    s = np.asarray(scores, dtype=float)
    return np.array([s[i, i] - max(s[i, j] for j in range(s.shape[1]) if j != i) for i in range(s.shape[0])])


M_SHARED = margins(S_SHARED)


def test_ex4_shared_scores_are_symmetric_psd_and_only_journey_prefers_itself():
    # The facts the exercise rests on, computed here independently of the check.
    np.testing.assert_allclose(S_SHARED, S_SHARED.T)
    assert np.linalg.eigvalsh(S_SHARED).min() > -1e-12
    diag = np.diag(S_SHARED)
    assert np.all(diag >= 0)
    assert np.all((diag[:, None] + diag[None, :]) / 2 >= S_SHARED - 1e-12)
    assert [i for i in range(6) if S_SHARED[i, i] == S_SHARED[i].max()] == [1]
    assert [i for i in range(6) if M_SHARED[i] >= 0] == [1]
    assert int(np.argmax(diag)) == 1
    separate = (XJ @ WQJ) @ (XJ @ WKJ).T
    assert not np.allclose(separate, separate.T, atol=5e-3)


@pytest.mark.parametrize("favourites", [["journey"], np.array(["journey"]), ("journey",), {"journey"}])
def test_ex4_right(favourites):
    assert_correct(check_section_5_2_exercise_4(M_SHARED))
    assert_correct(check_section_5_2_exercise_4(M_SHARED.round(2), favourites))
    assert_correct(check_section_5_2_exercise_4(M_SHARED.tolist(), favourites))
    # part (b) needs the scores of part (a): favourites alone are not checked
    assert check_section_5_2_exercise_4(None, favourites).status == "not yet"


@pytest.mark.parametrize(
    "answer, name",
    [
        (np.diag(S_SHARED) - S_SHARED.max(axis=-1), "self_included"),
        (-M_SHARED, "reversed"),
        (S_SHARED, "returned_scores"),
        (margins((XJ @ WQJ) @ (XJ @ WKJ).T), "separate_projections"),
        (margins((XJ @ WKJ) @ (XJ @ WKJ).T), "shared_w_k"),
        (margins(XJ @ XJ.T), "no_projection"),
        (M_SHARED / math.sqrt(2), "scaled"),
        (M_SHARED / 2, "divided_by_d_k"),
        (margins(PJ.T @ PJ), "feature_gram"),
        (margins(softmax(S_SHARED)), "returned_weights"),
        (M_SHARED[:3], "wrong_shape"),
        (M_SHARED + 0.1, "wrong_values"),
        ({"S": 1}, "wrong_type"),
    ],
)
def test_ex4_score_mistakes(answer, name):
    assert_mistake(check_section_5_2_exercise_4(answer), name)
    assert_mistake(check_section_5_2_exercise_4(answer, ["journey"]), name)


@pytest.mark.parametrize(
    "favourites, name",
    [
        (JOURNEY.tokens, "every_token"),
        ([], "no_token"),
        (["Your"], "wrong_tokens"),
        (["journey", "starts"], "wrong_tokens"),
        (["cat"], "not_tokens"),
        (["Journey"], "not_tokens"),
        (["journey "], "not_tokens"),
        ("journey", "bare_string"),
        ([1], "indices"),
        (np.array([1]), "indices"),
        (list(range(6)), "indices"),
        ([7], "indices"),
        ([1.0], "not_tokens"),
        (42, "not_tokens"),
    ],
)
def test_ex4_favourite_mistakes(favourites, name):
    assert_mistake(check_section_5_2_exercise_4(M_SHARED, favourites), name)


def test_ex4_not_yet():
    for empty in (None, "", [], np.zeros((0,))):
        assert check_section_5_2_exercise_4(empty).status == "not yet"
        assert check_section_5_2_exercise_4(empty, None).status == "not yet"
        assert check_section_5_2_exercise_4(empty, "  ").status == "not yet"


# ---------------------------------------------------------------------------
# Exercise 5 of Section 5.2: entropy
# ---------------------------------------------------------------------------

S_SEP = JOURNEY.q @ JOURNEY.k.T
ROW_J = S_SEP[1]   # the query "journey"


def plain_entropy(w, axis=-1):
    return -np.sum(w * np.log(w), axis=axis)


def t_for_entropy(row, target, lo=0.01, hi=10.0):
    """The temperature at which softmax(row / T) has entropy ``target``: a plain bisection."""
    for _ in range(200):
        mid = (lo + hi) / 2
        if plain_entropy(softmax(row / mid)) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


T5 = t_for_entropy(ROW_J, 1.5)


def test_entropy_answer_gives_the_entropy():
    assert TARGET_ENTROPY == 1.5 and JOURNEY.tokens[1] == "journey"
    assert np.isclose(plain_entropy(softmax(ROW_J / T5)), 1.5)
    # a grid search of step 0.001, as a student may write it
    grid = np.arange(0.1, 1.0, 0.001)
    t_grid = grid[np.argmin([abs(plain_entropy(softmax(ROW_J / t)) - 1.5) for t in grid])]
    assert_correct(check_attention_entropy(t_grid))


@pytest.mark.parametrize("answer", [T5, round(T5, 3), np.float32(T5), np.array([T5])])
def test_entropy_right(answer):
    assert_correct(check_attention_entropy(answer))


@pytest.mark.parametrize(
    "answer, name",
    [
        (t_for_entropy(ROW_J, 1.5 * math.log(2)), "bits"),
        (t_for_entropy(ROW_J / math.sqrt(2), 1.5), "scaled"),
        (t_for_entropy(S_SEP[:, 1], 1.5), "wrong_axis"),
        (t_for_entropy(S_SEP[0], 1.5), "wrong_row"),
        (t_for_entropy(S_SEP[2], 1.5), "wrong_row"),
        (1 / T5, "multiplied_by_temperature"),
        (round(T5, 2), "rounded"),
        (1.0, "wrong_value"),
        ("0.447", "not_a_number"),
        (float("inf"), "not_finite"),
    ],
)
def test_entropy_mistakes(answer, name):
    assert_mistake(check_attention_entropy(answer), name)


def test_entropy_messages_hold_no_answer():
    for answer in (1.0, round(T5, 2), 1 / T5, t_for_entropy(S_SEP[0], 1.5)):
        message = check_attention_entropy(answer).message
        assert f"{T5:.3f}" not in message and f"{T5:.2f}" not in message.replace("is 0.45", "")


def test_entropy_not_yet():
    for empty in (None, [], ""):
        assert check_attention_entropy(empty).status == "not yet"


# ---------------------------------------------------------------------------
# "I am happy": context vectors
# ---------------------------------------------------------------------------

C_HAPPY = W_HAPPY @ X_TODAY


def test_context_exact_and_rounded():
    assert_correct(check_i_am_happy_context(C_HAPPY))
    assert_correct(check_i_am_happy_context(C_HAPPY.round(2)))
    # every context vector is [c, c + 0.1, c + 0.2]
    assert np.allclose(np.diff(C_HAPPY, axis=-1), 0.1)


@pytest.mark.parametrize(
    "answer, name",
    [
        (W_THREE @ X_HAPPY, "three_tokens"),
        (softmax(X_TODAY @ X_HAPPY.T / math.sqrt(3)) @ X_HAPPY, "today_not_a_key"),
        (softmax(X_HAPPY @ X_TODAY.T / math.sqrt(3)) @ X_TODAY, "today_not_a_query"),
        (softmax(SCORES_H) @ X_TODAY, "unscaled"),
        (softmax(SCORES_H / 3) @ X_TODAY, "divided_by_d_k"),
        (softmax(SCORES_H / math.sqrt(3), axis=0) @ X_TODAY, "wrong_axis"),
        (W_HAPPY, "returned_weights"),
        (SCORES_H / math.sqrt(3) @ X_TODAY, "no_softmax"),
        (C_HAPPY.T, "transposed"),
        (C_HAPPY[0], "wrong_shape"),
        (C_HAPPY + 0.05, "wrong_values"),
    ],
)
def test_context_mistakes(answer, name):
    assert_mistake(check_i_am_happy_context(answer), name)


def test_context_from_scores_rounded_to_one_decimal_is_refused():
    c = softmax(np.round(SCORES_H / math.sqrt(3), 1)) @ X_TODAY
    assert_mistake(check_i_am_happy_context(c), "rounded_scores")


def test_context_not_yet():
    for empty in (None, [], ""):
        assert check_i_am_happy_context(empty).status == "not yet"


# ---------------------------------------------------------------------------
# "cat sat": d_k = 512, and the initialisation
# ---------------------------------------------------------------------------

D512 = examples.load_example("cat_sat_why_scale_512").d_k
TERM = 1.5**2 * 0.8**2
VAR = D512 * TERM
STD = math.sqrt(VAR)


def test_d_k_is_512_and_the_spreads_are_the_checks():
    assert D512 == 512
    assert (STD_Q, STD_K) == (1.5, 0.8)


def simulated_variance(d, n=100_000, seed=0):
    """Var(q·k) from a seeded simulation with unit-variance entries (used by E4's tests too)."""
    rng = np.random.default_rng(seed)
    return float(np.einsum("nd,nd->n", rng.normal(size=(n, d)), rng.normal(size=(n, d))).var())


def simulated(d, n=20_000, seed=0):
    rng = np.random.default_rng(seed)
    dots = np.einsum("nd,nd->n", rng.normal(0, 1.5, (n, d)), rng.normal(0, 0.8, (n, d)))
    return dots.var(), dots.std(), (dots / math.sqrt(d)).var()


def test_why_scale_answers_agree_with_a_simulation():
    var, std, scaled = simulated(D512)
    assert abs(var - VAR) < 0.05 * VAR and abs(scaled - TERM) < 0.05 * TERM and abs(std - STD) < 0.03 * STD


@pytest.mark.parametrize(
    "answer", [(VAR, STD, TERM), (737.28, 27.15, 1.44), (737.28, 27.153, 1.440), (np.float64(VAR), STD, TERM)]
)
def test_why_scale_right(answer):
    assert_correct(check_why_scale_512(*answer))


def test_why_scale_simulation_estimate_is_refused_as_a_sample():
    var, std, scaled = simulated(D512)
    assert_mistake(check_why_scale_512(var, std, scaled), "simulation_estimate")
    assert_mistake(check_why_scale_512(VAR, STD, 1.42), "simulation_estimate")


@pytest.mark.parametrize(
    "answer, name",
    [
        ((512, STD, TERM), "unit_entries"),
        ((VAR, math.sqrt(512), TERM), "unit_entries"),
        ((VAR, STD, 1), "unit_entries"),
        ((512 * 1.5 * 0.8, STD, TERM), "used_stds"),
        ((512 * 2.25, STD, TERM), "one_factor"),
        ((512 * 0.64, STD, TERM), "one_factor"),
        ((512 * (2.25 + 0.64), STD, TERM), "added_variances"),
        ((STD, STD, TERM), "gave_std"),
        ((TERM, STD, TERM), "already_scaled"),
        ((VAR, VAR, TERM), "gave_variance"),
        ((VAR, math.sqrt(TERM), TERM), "already_scaled"),
        ((VAR, STD, VAR / 512**2), "divided_by_d_k"),
        ((VAR, STD, VAR / math.sqrt(512)), "variance_divided_by_sqrt"),
        ((VAR, STD, VAR), "not_scaled"),
        ((VAR, 27.2, TERM), "rounded"),
        (("737", STD, TERM), "not_a_number"),
    ],
)
def test_why_scale_mistakes(answer, name):
    assert_mistake(check_why_scale_512(*answer), name)


def test_why_scale_partial_and_not_yet():
    assert check_why_scale_512(None).status == "not yet"
    assert check_why_scale_512(None, None, None).status == "not yet"
    assert check_why_scale_512(VAR).status == "not yet"
    assert_mistake(check_why_scale_512(None, VAR), "gave_variance")


HE_BOUND = math.sqrt(3) * math.sqrt(2 / 512)
XAVIER_BOUND = math.sqrt(6 / (512 + 64))


def test_init_values_agree_with_a_draw():
    rng = np.random.default_rng(1)
    for bound, std in ((HE_BOUND, math.sqrt(2 / 512)), (XAVIER_BOUND, math.sqrt(2 / 576))):
        draw = rng.uniform(-bound, bound, size=(512, 64))
        assert abs(draw.std() - std) < 0.01 * std
    assert D_HEAD == 64


@pytest.mark.parametrize("answer", [(HE_BOUND, XAVIER_BOUND), (0.1083, 0.1021), (0.10825, 0.10206)])
def test_init_right(answer):
    assert_correct(check_init_std(*answer))


@pytest.mark.parametrize(
    "answer, name",
    [
        ((math.sqrt(2 / 512), XAVIER_BOUND), "gave_std"),
        ((3 * math.sqrt(2 / 512), XAVIER_BOUND), "no_square_root"),
        ((math.sqrt(2 / 512) / math.sqrt(3), XAVIER_BOUND), "divided_by_sqrt3"),
        ((XAVIER_BOUND, HE_BOUND), "swapped"),
        ((HE_BOUND, math.sqrt(6 / 1024)), "square_matrix"),
        ((HE_BOUND, math.sqrt(6 / 64)), "fan_out_only"),
        ((HE_BOUND, 6 / 576), "variance_not_std"),
        ((HE_BOUND, math.sqrt(2 / 576)), "xavier_normal_std"),
        ((0.11, 0.10), "rounded"),
        ((HE_BOUND, 1.0), "wrong_value"),
        (("0.108", XAVIER_BOUND), "not_a_number"),
    ],
)
def test_init_mistakes(answer, name):
    assert_mistake(check_init_std(*answer), name)


def test_init_not_yet():
    assert check_init_std(None).status == "not yet"
    assert check_init_std(HE_BOUND).status == "not yet"
    assert check_init_std(None, XAVIER_BOUND).status == "not yet"


# ---------------------------------------------------------------------------
# "journey": the scores and weights row, the forward pass, the variance at d = 100
# ---------------------------------------------------------------------------

S_6 = (XJ @ WQJ) @ (XJ @ WKJ).T  # the six-token sentence of notebook 04
X7 = np.vstack([XJ, [0.91, 0.12, 0.65]])  # the sentence grown by "forward", as the task prints it
S_J = (X7 @ WQJ) @ (X7 @ WKJ).T  # (7, 7): the exercises ask for its row of "starts"
W_J = softmax(S_J / math.sqrt(2))


def test_journey_rows_exact():
    # The exercises ask for the row of "starts" (2) in the seven-token sentence; the document
    # prints the row of "journey" (1) in the six-token one.
    np.testing.assert_allclose(S_6[1], [1.2705, 1.8524, 1.8111, 1.0795, 0.5577, 1.5440], atol=5e-5)
    assert round(softmax(S_6 / math.sqrt(2))[1, 1], 4) == 0.2264
    np.testing.assert_allclose(S_J[:6, :6], S_6)  # a new token adds a row and a column, changes none
    assert_correct(check_journey_scores_row(S_J[2]))
    assert_correct(check_journey_scores_row(S_J[2].round(2).tolist()))
    assert_correct(check_journey_weights_row(W_J[2]))
    assert_correct(check_journey_weights_row(W_J[2].round(4)))


def test_journey_weights_tolerance_rejects_the_neighbouring_row():
    # The row of "journey" is 0.0008 from that of "starts" in one entry: it must be refused,
    # and named, while rounding to two or three decimals is named as such.
    gap = np.abs(W_J[1] - W_J[2]).max()
    assert 5e-4 < gap < 1e-3
    assert_mistake(check_journey_weights_row(W_J[1]), "wrong_row")
    assert "'journey'" in check_journey_weights_row(W_J[1]).message
    assert_mistake(check_journey_weights_row(W_J[2].round(2)), "rounded")
    assert_mistake(check_journey_weights_row(W_J[2].round(3)), "rounded")


def test_no_example_field_holds_the_rows_asked_for():
    ex = examples.load_example("journey")
    for fig in ex.figures:
        for value in (fig.printed, fig.exact):
            value = np.atleast_1d(np.asarray(value, dtype=float))
            # each within its check's own tolerance: a field that passed would hold the answer
            for row, atol in ((S_J[2], 5e-3), (W_J[2], 2e-4)):
                assert not (value.shape == row.shape and np.allclose(value, row, atol=atol))


@pytest.mark.parametrize(
    "answer, name",
    [
        (JOURNEY.figure("scores_row1").printed, "document_row"),
        ([14.5, 25.1, 24.8, 14.3, 8.6, 17.6], "document_row"),
        (S_J[2] / math.sqrt(2), "scaled"),
        (S_J[2] / 2, "divided_by_d_k"),
        (((X7 @ WKJ) @ (X7 @ WQJ).T)[2], "swapped_q_k"),
        (S_J[:, 2], "swapped_q_k"),
        ((X7 @ X7.T)[2], "no_projection"),
        (S_6[2], "six_keys"),
        (S_6[1], "six_keys"),
        (S_J, "whole_matrix"),
        (S_J[0], "wrong_row"),
        (S_J[1], "wrong_row"),
        (S_J[5], "wrong_row"),
        (S_J[6], "wrong_row"),
        (S_J[2][:5], "wrong_shape"),
        (S_J[2] + 0.1, "wrong_values"),
    ],
)
def test_journey_scores_mistakes(answer, name):
    assert_mistake(check_journey_scores_row(answer), name)


def test_journey_wrong_row_message():
    assert "'Your' (row 0" in check_journey_scores_row(S_J[0]).message


@pytest.mark.parametrize(
    "answer, name",
    [
        ([0.15, 0.22, 0.22, 0.13, 0.09, 0.18], "document_row"),
        (softmax(S_J[2]), "unscaled"),
        (softmax(S_J[2] / 2), "divided_by_d_k"),
        (softmax(S_J[2] / math.sqrt(3)), "scaled_by_d_in"),
        (softmax(S_J / math.sqrt(2), axis=0)[:, 2], "wrong_axis"),
        (W_J, "whole_matrix"),
        (W_J[4], "wrong_row"),
        (softmax(S_6 / math.sqrt(2))[2], "six_keys"),
        (W_J[2][::-1], "wrong_values"),
        (W_J[2][:, None], "reshape_needed"),  # the one shape rule (_core._reshape_needed)
    ],
)
def test_journey_weights_mistakes(answer, name):
    assert_mistake(check_journey_weights_row(answer), name)


def test_journey_not_yet():
    for check in (check_journey_scores_row, check_journey_weights_row):
        for empty in (None, "", [], np.array([])):
            assert check(empty).status == "not yet"


def good_self_attention(x, w_q, w_k, w_v):
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    w = good_softmax(q @ k.T / np.sqrt(k.shape[-1]))
    return w @ v


def good_new_token(x_new, keys, values, w_q, w_k, w_v):
    """E4 exercise 3: one new token's context from the cache, and the grown cache."""
    keys, values = np.vstack([keys, x_new @ w_k]), np.vstack([values, x_new @ w_v])
    w = good_softmax(keys @ (x_new @ w_q) / np.sqrt(keys.shape[1]))
    return w @ values, keys, values


def new_token_with(scale=None, own=True, project_v=True):
    def fn(x_new, keys, values, w_q, w_k, w_v):
        k_all, v_all = np.vstack([keys, x_new @ w_k]), np.vstack([values, x_new @ w_v if project_v else x_new])
        use_k, use_v = (k_all, v_all) if own else (keys, values)
        c = 1 / np.sqrt(w_k.shape[1]) if scale is None else scale(w_q)
        return good_softmax(use_k @ (x_new @ w_q) * c) @ use_v, k_all, np.vstack([values, x_new @ w_v])

    return fn


def test_self_attention_right():
    assert_correct(check_self_attention(good_new_token))
    assert_correct(check_self_attention(lambda *a: list(good_new_token(*a))))
    # the last row of notebook 04's whole-sentence forward pass equals the new token's context
    x7 = np.vstack([XJ, [0.91, 0.12, 0.65]])
    last = good_self_attention(x7, WQJ, WKJ, JOURNEY.w_v)[-1]
    context, _, _ = good_new_token(x7[-1], XJ @ WKJ, XJ @ JOURNEY.w_v, WQJ, WKJ, JOURNEY.w_v)
    np.testing.assert_allclose(context, last, atol=1e-12)


@pytest.mark.parametrize(
    "fn, name",
    [
        (new_token_with(scale=lambda w: 1.0), "unscaled"),
        (new_token_with(scale=lambda w: 1 / w.shape[1]), "divided_by_d_k"),
        (new_token_with(scale=lambda w: 1 / np.sqrt(w.shape[0])), "scaled_by_d_in"),
        (new_token_with(own=False), "forgot_own_key"),
        (lambda *a: good_new_token(*a)[0], "cache_not_returned"),
        (lambda *a: (good_new_token(*a)[0], a[1], a[2]), "cache_not_grown"),
        (good_self_attention, "whole_sentence_signature"),  # notebook 04's forward pass
        (lambda *a: (good_new_token(*a)[0] + 1,) + good_new_token(*a)[1:], "wrong_values"),
        (lambda *a: 1 / 0, "raises"),
        ("attend_new_token", "not_callable"),
    ],
)
def test_self_attention_mistakes(fn, name):
    assert_mistake(check_self_attention(fn), name)


def test_self_attention_not_yet():
    assert check_self_attention(None).status == "not yet"


V100 = examples.load_example("journey_variance_d100")


@pytest.mark.parametrize("answer", [(600, 6), (600.0, 6.0), (np.float64(600), 6), (600, 600 / math.sqrt(100) ** 2)])
def test_variance_d100_right(answer):
    assert_correct(check_journey_variance_d100(*answer))


@pytest.mark.parametrize("answer", [(602.13, 6), (600.5, 6), (600, 6.005), (598.8, 5.988)])
def test_variance_d100_one_rule_for_estimates(answer):
    # E3's rule: the expected value from the formula; any sample or rounded estimate is refused
    # with a message saying the task wants the expectation, not a sample.
    r = check_journey_variance_d100(*answer)
    assert_mistake(r, "simulation_estimate")
    assert "expectation" in r.message and "not a sample" in r.message


def test_variance_d100_simulated_and_document_are_estimates_not_the_expected_value():
    # The exercise asks for the expected value; a simulation is named as such. The document's
    # printout is for unit variances, so it is a wrong value here.
    var = 6 * simulated_variance(100, n=2_000, seed=2)  # 6 x 95.8: variances 3 and 2
    assert abs(var - 600) > 2
    assert_mistake(check_journey_variance_d100(var, var / 100), "simulation_estimate")
    given = V100.given
    r = check_journey_variance_d100(given["variance_before"], V100.figure("variance_after").printed)
    assert_mistake(r, "wrong_value")
    assert_mistake(check_journey_variance_d100(100, 1), "unit_variance")
    assert_mistake(check_journey_variance_d100("600", 6), "not_a_number")


@pytest.mark.parametrize(
    "answer, name",
    [
        ((math.sqrt(600), 6), "gave_std"),
        ((6, 6), "already_scaled"),
        ((360_000, 6), "squared"),
        ((600, 60), "variance_divided_by_sqrt"),
        ((600, 0.06), "divided_by_d_k"),
        ((600, 600), "not_scaled"),
        ((600, 1), "unit_variance"),
        ((100 * math.sqrt(6), 6), "std_of_queries"),
        ((500, 5), "added_variances"),
        ((50, 6), "wrong_value"),
        ((600, 0.5), "wrong_value"),
        ((600, "six"), "not_a_number"),
        ((600, float("nan")), "not_finite"),
    ],
)
def test_variance_d100_mistakes(answer, name):
    assert_mistake(check_journey_variance_d100(*answer), name)


def test_variance_d100_not_yet():
    assert check_journey_variance_d100(None).status == "not yet"
    assert check_journey_variance_d100(600).status == "not yet"


# ---------------------------------------------------------------------------
# The definition page: shapes
# ---------------------------------------------------------------------------

N5, M5, DK5, DV5 = 4, 6, 8, 5
B5, H5 = 3, 2  # queries (h, n, d_k) shared by the batch; keys, values (B, 1, m, d) shared by the heads


def shapes_of(n, m, d_k, d_v, broadcast=True):
    rng = np.random.default_rng(5)
    if broadcast:
        q, k, v = (rng.normal(size=shape) for shape in ((H5, n, d_k), (B5, 1, m, d_k), (B5, 1, m, d_v)))
    else:
        q, k, v = (rng.normal(size=shape) for shape in ((n, d_k), (m, d_k), (m, d_v)))
    s = q @ np.swapaxes(k, -1, -2)
    w = softmax(s)
    return s.shape, w.shape, (w @ v).shape


RIGHT_SHAPES = shapes_of(N5, M5, DK5, DV5)


def L(*shape):  # noqa: N802 - a shape with the broadcast batch and head axes in front
    return (B5, H5) + shape


def test_shapes_right():
    assert RIGHT_SHAPES == ((3, 2, 4, 6), (3, 2, 4, 6), (3, 2, 4, 5))
    assert_correct(check_definition_shapes(*RIGHT_SHAPES))
    assert_correct(check_definition_shapes([3, 2, 4, 6], np.array([3, 2, 4, 6]), (3, 2, 4, 5)))
    assert_correct(check_definition_shapes(L(4, 6), (3.0, 2.0, 4.0, 6.0), [3, 2, np.int64(4), 5]))
    for text in ("3x2x4x6", "(3, 2, 4, 6)", "3 x 2 x 4 x 6"):
        r = check_definition_shapes(text)
        assert_mistake(r, "not_a_shape")
        assert repr(text) in r.message and "without quotes" in r.message


def test_shapes_of_notebook_05_are_refused():
    # Notebook 05 works out arrays without leading axes, and arrays that all carry the same ones.
    assert_mistake(check_definition_shapes(*shapes_of(N5, M5, DK5, DV5, broadcast=False)), "no_leading_axes")
    assert_mistake(check_definition_shapes((3, 1, 4, 6), L(4, 6), L(4, 5)), "kept_length_one_axis")


@pytest.mark.parametrize(
    "answer, name",
    [
        (shapes_of(M5, N5, DK5, DV5), "n_m_swapped"),
        ((L(4, 6), L(4, 6), shapes_of(N5, M5, DV5, DK5)[2]), "d_k_d_v_swapped"),
        ((shapes_of(N5, N5, DK5, DV5)[0], L(4, 6), L(4, 5)), "assumed_square"),
        ((L(6, 6), L(4, 6), L(4, 5)), "assumed_square"),
        ((L(4, DK5), L(4, 6), L(4, 5)), "used_d_k"),
        ((L(4, 6), L(6, 4), L(4, 5)), "n_m_swapped"),
        ((L(4, 6), L(4, 6), L(DV5, N5)), "transposed"),
        ((L(4, 6), L(4, 6), L(4, 6)), "out_is_weights"),
        ((L(4, 6), L(4, 6), L(6, 5)), "n_m_swapped"),
        ((L(4, 6), L(4, 6), (4, 5)), "no_leading_axes"),
        (((2, 3, 4, 6), L(4, 6), L(4, 5)), "leading_axes_swapped"),
        ((L(4, 6), L(4, 6), (3, 1, 4, 5)), "kept_length_one_axis"),
        (((2, 4, 6), L(4, 6), L(4, 5)), "no_batch_axis"),
        ((L(4, 6), L(4, 6), (4,)), "wrong_shape"),
        (((4, 6, 1), L(4, 6), L(4, 5)), "wrong_shape"),
        ((("four", "six"), L(4, 6), L(4, 5)), "not_a_shape"),
        (("4 by 6", L(4, 6), L(4, 5)), "not_a_shape"),
        (((4, -6), L(4, 6), L(4, 5)), "not_a_shape"),
        (((4, 6.5), L(4, 6), L(4, 5)), "not_a_shape"),
        ((True, L(4, 6), L(4, 5)), "not_a_shape"),
    ],
)
def test_shapes_mistakes(answer, name):
    assert_mistake(check_definition_shapes(*answer), name)


def test_number_verdict_skips_a_mistake_within_tolerance_of_the_answer():
    # A mistake that cannot be told apart from the right answer is never reported.
    from helpers.checks._core import _number_verdict

    kwargs = dict(what="x", expected=1.0, rtol=0.01, hint="")
    near = [("close_mistake", 1.009, "a hint")]
    assert_mistake(_number_verdict(1.015, mistakes=near, **kwargs), "wrong_value")
    assert_mistake(_number_verdict(1.5, mistakes=[("far_mistake", 1.5, "a hint")], **kwargs), "far_mistake")
    assert _number_verdict(1.005, mistakes=near, **kwargs) is None


def test_shapes_partial_and_not_yet():
    assert check_definition_shapes(None).status == "not yet"
    assert check_definition_shapes((), [], "").status == "not yet"
    r = check_definition_shapes((3, 2, 4, 6))
    assert r.status == "not yet" and "the weights" in r.message and "the output" in r.message


# ---------------------------------------------------------------------------
# Robustness: arbitrary answers and arbitrary functions
# ---------------------------------------------------------------------------

floats = st.floats(allow_nan=True, allow_infinity=True)
dtypes = st.one_of(
    hnp.floating_dtypes(),
    hnp.integer_dtypes(),
    hnp.unsigned_integer_dtypes(),
    hnp.complex_number_dtypes(),
    hnp.boolean_dtypes(),
)
arrays = hnp.arrays(dtypes, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
anything = st.one_of(
    st.none(),
    st.text(max_size=20),
    st.integers(),
    floats,
    st.complex_numbers(),
    st.booleans(),
    st.lists(floats, max_size=5),
    st.lists(st.lists(floats, max_size=4), max_size=4),  # ragged, nested
    st.recursive(floats | st.text(max_size=3), lambda c: st.lists(c, max_size=3), max_leaves=10),
    arrays,
    st.dictionaries(st.text(max_size=3), floats, max_size=3),
)

ANSWER_CHECKS = [
    check_section_5_2_exercise_1,
    lambda a: check_section_5_2_exercise_1(a, weights=a),
    lambda a: check_section_5_2_exercise_1(V2, weights=a),
    check_i_am_happy_weights,
    check_flops,
    check_temperature_prediction,
    check_stable_softmax,
    check_masked_attention,
    check_section_5_2_exercise_2,
    check_section_5_2_exercise_4,
    lambda a: check_section_5_2_exercise_4(a, a),
    lambda a: check_section_5_2_exercise_4(M_SHARED, a),
    lambda a: check_section_5_2_exercise_4(None, a),
    check_attention_entropy,
    check_i_am_happy_context,
    check_why_scale_512,
    lambda a: check_why_scale_512(a, a, a),
    lambda a: check_why_scale_512(VAR, STD, a),
    check_init_std,
    lambda a: check_init_std(HE_BOUND, a),
    check_journey_scores_row,
    check_journey_weights_row,
    check_self_attention,
    check_journey_variance_d100,
    lambda a: check_journey_variance_d100(100, a),
    check_definition_shapes,
    lambda a: check_definition_shapes(a, a, a),
    lambda a: check_definition_shapes((3, 2, 4, 6), (3, 2, 4, 6), a),
]


def test_every_check_is_in_the_robustness_tests():
    # Every public check must be thrown arbitrary input below, so a new check has to be
    # listed in ANSWER_CHECKS (directly or inside a lambda) or in FUNCTION_CHECKS.
    import helpers.checks as checks_module

    public = {name for name in checks_module.__all__ if name.startswith("check_")}
    answer_list = Path(__file__).read_text(encoding="utf-8").split("ANSWER_CHECKS = [", 1)[1].split("\n]\n", 1)[0]
    listed = set(re.findall(r"\bcheck_\w+", answer_list)) | {c.__name__ for c in FUNCTION_CHECKS}
    assert public - listed == set(), f"not covered by the hypothesis tests: {sorted(public - listed)}"


@settings(deadline=None, max_examples=100)
@given(anything)
def test_any_answer_gives_a_result(answer):
    for check in ANSWER_CHECKS:
        result = check(answer)
        assert isinstance(result, CheckResult)
        assert result.status in ("correct", "incorrect", "not yet")
        assert isinstance(str(result), str) and isinstance(result._repr_html_(), str)


exceptions = st.sampled_from(
    [ValueError, TypeError, IndexError, ZeroDivisionError, RecursionError, FloatingPointError,
     OverflowError, MemoryError, NotImplementedError, AssertionError, KeyError, RuntimeError]
)


def raiser(exc):
    def fn(*args, **kwargs):
        raise exc("student bug")

    return fn


def returner(value):
    return lambda *args, **kwargs: value


callables = st.one_of(
    exceptions.map(raiser),
    anything.map(returner),
    st.just(lambda x: np.exp(x)),
    st.just(lambda *a: np.full((4, 2), np.nan)),
    st.just(lambda *a: np.full((4, 2), np.inf, dtype=np.float32)),
    st.just(lambda *a: (np.zeros((4, 2)), "weights")),
    st.just(lambda *a: ("a", "b")),
    st.just(lambda *a: [[1, 2], [3]]),
    st.just(lambda *a: np.zeros((4, 2), dtype=complex)),
    st.just(lambda *a: np.ones((3, 3), dtype=object)),
    st.just(print),
    st.just(len),
    st.just(int),
)


FUNCTION_CHECKS = (
    check_stable_softmax,
    check_masked_attention,
    check_self_attention,
    check_attention_backward,
    check_masked_backward,
    check_online_softmax_merge,
)


@settings(deadline=None, max_examples=100)
@given(callables)
def test_any_function_gives_a_result(fn):
    for check in FUNCTION_CHECKS:
        result = check(fn)
        assert isinstance(result, CheckResult)
        assert result.status in ("incorrect", "correct")


def test_keyboard_interrupt_passes_through():
    def interrupted(*args):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        check_stable_softmax(interrupted)
    with pytest.raises(KeyboardInterrupt):
        check_masked_attention(interrupted)


def test_warning_student_code_does_not_leak_warnings():
    # pyproject turns warnings into errors: a warning must not escape a check.
    def warns(x, axis=-1, where=None):
        import warnings

        warnings.warn("student warning", UserWarning)
        return good_masked_softmax(x, axis, where)

    assert_correct(check_stable_softmax(warns))  # only RuntimeWarnings count as overflow


def test_overflow_seen_by_its_warning_alone():
    def warns_but_right(x):  # overflows on the way, then returns the right values
        np.exp(x)
        return good_softmax(x)

    assert_mistake(check_stable_softmax(warns_but_right), "no_max_subtraction")


def test_overflow_seen_by_nan_alone():
    def silent_naive(x):  # no warning: only the NaN shows the overflow
        with np.errstate(all="ignore"):
            return naive_softmax(x)

    assert_mistake(check_stable_softmax(silent_naive), "no_max_subtraction")


class BadStr(str):
    def strip(self, *args):
        raise RuntimeError("broken str")


class BadList(list):
    def __len__(self):
        raise RuntimeError("broken list")


@pytest.mark.parametrize("answer", [BadStr("2e9"), BadList([1, 2])])
def test_failure_inside_a_check_gives_unreadable(answer):
    # An answer that breaks the checker's own code still gives a result.
    for check in (
        check_flops,
        check_section_5_2_exercise_1,
        check_i_am_happy_weights,
        check_section_5_2_exercise_2,
        check_section_5_2_exercise_4,
        lambda a: check_section_5_2_exercise_4(M_SHARED, a),
        check_attention_entropy,
        check_i_am_happy_context,
        check_why_scale_512,
        check_init_std,
        check_journey_scores_row,
        check_journey_weights_row,
        check_journey_variance_d100,
        check_definition_shapes,
    ):
        assert_mistake(check(answer), "unreadable")


def test_every_public_check_is_wrapped_so_it_never_raises():
    import helpers.checks as checks_module

    for name in checks_module.__all__:
        if name.startswith("check_"):
            check = getattr(checks_module, name)
            assert getattr(check, "__wrapped__", None) is not None, f"{name} is not wrapped by _never_raise"
