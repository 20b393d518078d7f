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

EX1 = examples.load_example("section_5_2_exercise_1")
Q1, K1, V1 = EX1.q, EX1.k, EX1.v


def ex1(scale=1.0, axis=-1, keys=None):
    w = softmax(Q1 @ (K1.T if keys is None else keys) * scale, axis=axis)
    return w @ V1, w


def test_ex1_exact_and_rounded():
    out, w = ex1()
    assert_correct(check_section_5_2_exercise_1(out))
    assert_correct(check_section_5_2_exercise_1(out.round(2).tolist()))
    assert_correct(check_section_5_2_exercise_1(out, weights=w))
    np.testing.assert_allclose(out, [[1, 0.5], [1, 1 / (1 + math.exp(-1))]])


@pytest.mark.parametrize(
    "answer, name",
    [
        (ex1(scale=1 / math.sqrt(2))[0], "scaled"),
        (ex1(scale=1 / 2)[0], "divided_by_d_k"),
        (ex1(axis=0)[0], "wrong_axis"),
        (ex1()[1], "returned_weights"),
        ((Q1 @ K1.T) @ V1, "no_softmax"),
        (ex1()[0].T, "transposed"),
        (ex1()[0][:1], "wrong_shape"),
        (np.stack(ex1()), "wrong_shape"),
        (ex1()[0] + 0.1, "wrong_values"),
        ([[1, 0.5], [1, float("nan")]], "not_finite"),
        (ex1()[0] + 0j, "complex"),
        ("[[1, 0.5], [1, 0.73]]", "wrong_type"),
        ([[1, 0.5], [1]], "wrong_type"),
    ],
)
def test_ex1_mistakes(answer, name):
    assert_mistake(check_section_5_2_exercise_1(answer), name)


def test_ex1_scaled_hint_names_section():
    r = check_section_5_2_exercise_1(ex1(scale=1 / math.sqrt(2))[0])
    assert "unscaled" in r.message and "Section 5.2" in r.message


def test_ex1_no_transpose_coincides_with_right_answer():
    # K is symmetric, so Q @ K equals Q @ K.T: this mistake cannot be seen here.
    np.testing.assert_array_equal(K1, K1.T)
    assert_correct(check_section_5_2_exercise_1(ex1(keys=K1)[0]))


@pytest.mark.parametrize(
    "w, name",
    [
        (ex1(scale=1 / math.sqrt(2))[1], "scaled"),
        (ex1(scale=1 / 2)[1], "divided_by_d_k"),
        (ex1(axis=0)[1], "wrong_axis"),
        (Q1 @ K1.T, "no_softmax"),
        (np.ones(3), "wrong_shape"),
    ],
)
def test_ex1_weight_mistakes(w, name):
    r = check_section_5_2_exercise_1(ex1()[0], weights=w)
    assert_mistake(r, name)
    assert r.message.startswith("Your output is right")
    assert_mistake(check_section_5_2_exercise_1(None, weights=w), name)


def test_ex1_not_yet():
    for empty in (None, "", "   ", [], np.array([]), np.zeros((0, 2))):
        assert check_section_5_2_exercise_1(empty).status == "not yet"
    r = check_section_5_2_exercise_1(None, weights=ex1()[1])
    assert r.status == "not yet" and "weights are right" in r.message
    assert_correct(check_section_5_2_exercise_1(ex1()[0], weights=[]))


# ---------------------------------------------------------------------------
# "I am happy"
# ---------------------------------------------------------------------------

HAPPY = examples.load_example("i_am_happy")
SCORES_H = HAPPY.q @ HAPPY.k.T
W_HAPPY = softmax(SCORES_H / math.sqrt(3))


def test_happy_exact_and_rounded():
    assert_correct(check_i_am_happy_weights(W_HAPPY))
    assert_correct(check_i_am_happy_weights(W_HAPPY.round(2)))
    np.testing.assert_allclose(W_HAPPY, examples.compute_quantity(HAPPY, "weights"))


def with_printed_rows(example, weights, rows=("weights_row1", "weights_row2")):
    """``weights`` with the named rows replaced by what the document printed."""
    w = weights.copy()
    for fig_id in rows:
        fig = example.figure(fig_id)
        w[fig.index[0]] = fig.printed
    return w


def document_matrix(rows=("weights_row1", "weights_row2")):
    return with_printed_rows(HAPPY, W_HAPPY, rows)


@pytest.mark.parametrize(
    "answer, name",
    [
        (document_matrix(), "document_rows"),
        (document_matrix(["weights_row1"]), "document_rows"),
        (document_matrix(["weights_row2"]), "document_rows"),
        (softmax(SCORES_H), "unscaled"),
        (softmax(SCORES_H / 3), "divided_by_d_k"),
        (softmax(SCORES_H / math.sqrt(3), axis=0), "wrong_axis"),
        (W_HAPPY[:2], "wrong_shape"),
        (W_HAPPY.ravel(), "wrong_shape"),
        (W_HAPPY + 0.05, "wrong_values"),
        ({"weights": W_HAPPY.tolist()}, "wrong_type"),
        (W_HAPPY > 0.3, "wrong_type"),
    ],
)
def test_happy_mistakes(answer, name):
    assert_mistake(check_i_am_happy_weights(answer), name)


def test_happy_document_rows_hint_names_tokens():
    r = check_i_am_happy_weights(document_matrix())
    assert "'am'" in r.message and "'happy'" in r.message and "Step 5" in r.message


def test_happy_row_hint():
    w = W_HAPPY.copy()
    w[2] = [0.1, 0.1, 0.8]
    r = check_i_am_happy_weights(w)
    assert_mistake(r, "wrong_values")
    assert "Rows 0 and 1 (counting from 0) are right; row 2 is not." in r.message


def test_happy_not_yet():
    for empty in (None, "", [], np.zeros((3, 0))):
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
FLOPS = attention.attention_flops(N3, N3, D3, D3)


@pytest.mark.parametrize(
    "answer", [FLOPS, 2.048e9, 2_048_000_000, 2e9, FLOPS + 5 * N3**2, np.int64(FLOPS), np.array([2.048e9])]
)
def test_flops_right(answer):
    assert_correct(check_flops(answer))


@pytest.mark.parametrize(
    "answer, name",
    [
        (N3 * N3 * D3 * 2, "multiply_adds_or_one_matmul"),  # multiply-adds of both products
        (2 * N3 * N3 * D3, "multiply_adds_or_one_matmul"),  # FLOPs of one product
        (N3 * N3 * D3, "n2d_only"),
        (N3 * N3, "counted_scores"),
        (4 * N3 * D3 * D3, "n_d_swapped"),  # 1.048e9: 2.4 % from 1.024e9, told apart by the close match first
        (N3 * D3 * D3, "n_d_swapped"),
        (12345, "wrong_value"),
        (-FLOPS, "wrong_value"),
        ("two billion", "not_a_number"),
        ("2.048e9", "not_a_number"),  # text is refused, with a hint to drop the quotes
        ("2,048,000,000", "not_a_number"),
        (True, "not_a_number"),
        ([1, 2], "not_a_number"),
        (2.048e9 + 0j, "not_a_number"),
        (float("inf"), "not_finite"),
        (float("nan"), "not_finite"),
    ],
)
def test_flops_mistakes(answer, name):
    assert_mistake(check_flops(answer), name)


def test_flops_multiply_add_message_explains_both_readings():
    msg = check_flops(1.024e9).message
    assert "multiply-add" in msg and "one of the two products" in msg


def test_flops_not_yet():
    for empty in (None, "", "  "):
        assert check_flops(empty).status == "not yet"


# ---------------------------------------------------------------------------
# "cat sat" at a temperature
# ---------------------------------------------------------------------------

CAT = examples.load_example("cat_sat")
SCORES_C = CAT.q @ CAT.k.T


@pytest.mark.parametrize("t", [3.0, 4.0])
def test_temperature_right(t):
    w = softmax(SCORES_C / 2, temperature=t)
    assert_correct(check_temperature_prediction(w, t))
    assert_correct(check_temperature_prediction(w.round(2), t))
    if t == 3.0:
        assert_correct(check_temperature_prediction(w))  # the exercise's T is the default


@pytest.mark.parametrize("t", [3.0, 4.0])
def test_temperature_mistakes(t):
    assert_mistake(check_temperature_prediction(softmax(SCORES_C / 2 * t), t), "multiplied_by_temperature")
    assert_mistake(check_temperature_prediction(softmax(SCORES_C / 2), t), "forgot_temperature")
    assert_mistake(check_temperature_prediction(softmax(SCORES_C / t), t), "forgot_scaling")
    assert_mistake(check_temperature_prediction(softmax(SCORES_C), t), "forgot_both")
    assert_mistake(check_temperature_prediction(softmax(SCORES_C * t), t), "multiplied_and_unscaled")
    assert_mistake(check_temperature_prediction(softmax(SCORES_C / 4 / t), t), "divided_by_d_k")


@pytest.mark.parametrize("t", [0.5, 2.0, 1.0, 0.25])
def test_temperature_that_cancels_or_swaps_is_refused(t):
    # 0.5 cancels 1/sqrt(4); at 2 forgetting T equals forgetting the scaling; at 1 multiplying
    # equals dividing; at 0.25 dividing by d_k equals ... : none can tell the mistakes apart.
    w = softmax(SCORES_C / 2, temperature=t)
    assert_mistake(check_temperature_prediction(w, t), "bad_temperature")
    assert "T = 3" in check_temperature_prediction(w, t).message


def test_temperature_other_cases():
    w = softmax(SCORES_C / 2, temperature=3.0)
    assert_mistake(check_temperature_prediction(w[0], 3.0), "wrong_shape")
    assert_mistake(check_temperature_prediction(w, 0), "bad_temperature")
    assert_mistake(check_temperature_prediction(w, -1.0), "bad_temperature")
    assert_mistake(check_temperature_prediction(w, None), "bad_temperature")
    assert_mistake(check_temperature_prediction(w, float("nan")), "bad_temperature")
    assert check_temperature_prediction(None, 3.0).status == "not yet"


# ---------------------------------------------------------------------------
# Exercise 2 of Section 5.2: the "cat sat mat" weights
# ---------------------------------------------------------------------------

CSM = examples.load_example("cat_sat_mat")
SCORES_CSM = CSM.q @ CSM.k.T
W_CSM = softmax(SCORES_CSM)


def csm_document_matrix(rows=("weights_row1", "weights_row2")):
    return with_printed_rows(CSM, W_CSM, rows)


def test_ex2_exact_and_rounded():
    assert_correct(check_section_5_2_exercise_2(W_CSM))
    assert_correct(check_section_5_2_exercise_2(W_CSM.round(2).tolist()))
    # e/(e + 1 + e), 1/(2e + 1) and e^2/(2e + e^2) by hand
    e = math.e
    np.testing.assert_allclose(W_CSM[0], [e / (2 * e + 1), 1 / (2 * e + 1), e / (2 * e + 1)])
    np.testing.assert_allclose(W_CSM[2], [e / (2 * e + e**2), e / (2 * e + e**2), e**2 / (2 * e + e**2)])


@pytest.mark.parametrize(
    "answer, name",
    [
        (csm_document_matrix(), "document_rows"),
        (csm_document_matrix(["weights_row1"]), "document_rows"),
        (csm_document_matrix(["weights_row2"]), "document_rows"),
        (softmax(SCORES_CSM / math.sqrt(2)), "scaled"),
        (softmax(SCORES_CSM / 2), "divided_by_d_k"),
        (softmax(SCORES_CSM, axis=0), "wrong_axis"),
        (W_CSM.T, "wrong_axis"),  # Q = K: the transpose is the column softmax
        (SCORES_CSM, "no_softmax"),
        (W_CSM @ CSM.v, "returned_output"),
        (W_CSM[:2], "wrong_shape"),
        (W_CSM + 0.05, "wrong_values"),
        ("weights", "wrong_type"),
        (np.full((3, 3), np.inf), "not_finite"),
    ],
)
def test_ex2_mistakes(answer, name):
    assert_mistake(check_section_5_2_exercise_2(answer), name)


def test_ex2_document_rows_names_tokens_and_not_yet():
    r = check_section_5_2_exercise_2(csm_document_matrix())
    assert "'sat'" in r.message and "'mat'" in r.message and "Step 2" in r.message
    for empty in (None, "", [], np.zeros((0, 3))):
        assert check_section_5_2_exercise_2(empty).status == "not yet"


# ---------------------------------------------------------------------------
# Exercise 4 of Section 5.2: W^Q = W^K
# ---------------------------------------------------------------------------

JOURNEY = examples.load_example("journey")
XJ, WQJ, WKJ = JOURNEY.inputs, JOURNEY.w_q, JOURNEY.w_k
PJ = XJ @ WQJ
S_SHARED = PJ @ PJ.T


def test_ex4_shared_scores_are_symmetric_psd_and_only_journey_prefers_itself():
    # The facts the exercise rests on, computed here independently of the check.
    np.testing.assert_allclose(S_SHARED, S_SHARED.T)
    assert np.linalg.eigvalsh(S_SHARED).min() > -1e-12
    diag = np.diag(S_SHARED)
    assert np.all(diag >= 0)
    assert np.all((diag[:, None] + diag[None, :]) / 2 >= S_SHARED - 1e-12)
    assert [i for i in range(6) if S_SHARED[i, i] == S_SHARED[i].max()] == [1]
    assert int(np.argmax(diag)) == 1
    separate = (XJ @ WQJ) @ (XJ @ WKJ).T
    assert not np.allclose(separate, separate.T, atol=5e-3)


@pytest.mark.parametrize("favourites", [["journey"], "journey", ["Journey "], [1], np.array([1]), ("journey",)])
def test_ex4_right(favourites):
    assert_correct(check_section_5_2_exercise_4(S_SHARED))
    assert_correct(check_section_5_2_exercise_4(S_SHARED.round(2), favourites))
    assert_correct(check_section_5_2_exercise_4(None, favourites))


@pytest.mark.parametrize(
    "answer, name",
    [
        ((XJ @ WQJ) @ (XJ @ WKJ).T, "separate_projections"),
        ((XJ @ WKJ) @ (XJ @ WKJ).T, "shared_w_k"),
        (XJ @ XJ.T, "no_projection"),
        (S_SHARED / math.sqrt(2), "scaled"),
        (S_SHARED / 2, "divided_by_d_k"),
        (PJ.T @ PJ, "feature_gram"),
        (softmax(S_SHARED), "returned_weights"),
        (S_SHARED[:3], "wrong_shape"),
        (S_SHARED + 0.1, "wrong_values"),
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
        (list(range(6)), "every_token"),
        ([], "no_token"),
        (["Your"], "wrong_tokens"),
        (["journey", "starts"], "wrong_tokens"),
        (["cat"], "not_tokens"),
        ([7], "not_tokens"),
        ([1.0], "not_tokens"),
        (42, "not_tokens"),
    ],
)
def test_ex4_favourite_mistakes(favourites, name):
    assert_mistake(check_section_5_2_exercise_4(S_SHARED, favourites), name)


def test_ex4_not_yet():
    for empty in (None, "", [], np.zeros((0, 6))):
        assert check_section_5_2_exercise_4(empty).status == "not yet"
        assert check_section_5_2_exercise_4(empty, None).status == "not yet"
        assert check_section_5_2_exercise_4(empty, "  ").status == "not yet"


# ---------------------------------------------------------------------------
# Exercise 5 of Section 5.2: entropy
# ---------------------------------------------------------------------------

S_SEP = JOURNEY.q @ JOURNEY.k.T
W_SEP = softmax(S_SEP)


def plain_entropy(w, axis=-1):
    return -np.sum(w * np.log(w), axis=axis)


H_SEP = plain_entropy(W_SEP)


def test_entropy_right():
    assert_correct(check_attention_entropy(H_SEP))
    assert_correct(check_attention_entropy(H_SEP.round(3).tolist()))
    assert_correct(check_attention_entropy(attention.entropy(attention.softmax_loop(S_SEP))))
    assert np.all(H_SEP <= math.log(6)) and np.all(H_SEP > 0)


@pytest.mark.parametrize(
    "answer, name",
    [
        (plain_entropy(W_SEP) / math.log(2), "log2"),
        (-np.sum(W_SEP * np.log2(W_SEP), axis=-1), "log2"),
        (-np.sum(W_SEP * np.log10(W_SEP), axis=-1), "log10"),
        (np.sum(W_SEP * np.log(W_SEP), axis=-1), "no_minus"),
        (plain_entropy(W_SEP, axis=0), "wrong_sum_axis"),
        (plain_entropy(softmax(S_SEP, axis=0), axis=-1), "softmax_wrong_axis"),
        (plain_entropy(softmax(S_SEP, axis=0), axis=0), "softmax_wrong_axis"),
        (plain_entropy(softmax(S_SEP / math.sqrt(2))), "scaled"),
        (-np.mean(W_SEP * np.log(W_SEP), axis=-1), "mean_not_sum"),
        (-W_SEP * np.log(W_SEP), "not_summed"),
        (plain_entropy(S_SEP), "entropy_of_scores"),
        (H_SEP[:3], "wrong_shape"),
        (H_SEP + 0.01, "wrong_values"),
        ([1.7, "x"], "wrong_type"),
    ],
)
def test_entropy_mistakes(answer, name):
    assert_mistake(check_attention_entropy(answer), name)


def test_entropy_wrong_axes_coincide_when_q_equals_k():
    # Why the exercise uses the journey projections: with Q = K ("cat sat mat") the
    # softmax over the wrong axis gives exactly the entropies summed over the wrong axis.
    np.testing.assert_allclose(
        plain_entropy(softmax(SCORES_CSM, axis=0), axis=-1), plain_entropy(W_CSM, axis=0)
    )
    assert not np.allclose(plain_entropy(softmax(S_SEP, axis=0), axis=-1), plain_entropy(W_SEP, axis=0), atol=1e-3)


def test_entropy_not_yet():
    for empty in (None, "", [], np.array([])):
        assert check_attention_entropy(empty).status == "not yet"


# ---------------------------------------------------------------------------
# "I am happy": context vectors
# ---------------------------------------------------------------------------

C_HAPPY = W_HAPPY @ HAPPY.v


def test_context_exact_and_rounded():
    assert_correct(check_i_am_happy_context(C_HAPPY))
    assert_correct(check_i_am_happy_context(C_HAPPY.round(2)))
    np.testing.assert_allclose(C_HAPPY, examples.compute_quantity(HAPPY, "out"))
    assert round(C_HAPPY[0, 1], 4) == 0.5207


def document_weights():
    return np.stack([HAPPY.figure(f"weights_row{i}").printed for i in range(3)])


def context_document_matrix(rows=(0, 1, 2)):
    c = C_HAPPY.copy()
    for i in rows:
        c[i] = HAPPY.figure(f"context_row{i}").printed
    return c


@pytest.mark.parametrize(
    "answer, name",
    [
        (context_document_matrix(), "document_rows"),
        (context_document_matrix([0]), "document_rows"),
        (context_document_matrix([2]), "document_rows"),
        (document_weights() @ HAPPY.v, "document_rows"),  # the printed weights give the printed rows
        (softmax(SCORES_H) @ HAPPY.v, "unscaled"),
        (softmax(SCORES_H / 3) @ HAPPY.v, "divided_by_d_k"),
        (softmax(SCORES_H / math.sqrt(3), axis=0) @ HAPPY.v, "wrong_axis"),
        (W_HAPPY, "returned_weights"),
        ((SCORES_H / math.sqrt(3)) @ HAPPY.v, "no_softmax"),
        (C_HAPPY.T, "transposed"),
        (HAPPY.v @ W_HAPPY, "values_first"),
        (C_HAPPY[:, :2], "wrong_shape"),
        (C_HAPPY + 0.02, "wrong_values"),
    ],
)
def test_context_mistakes(answer, name):
    assert_mistake(check_i_am_happy_context(answer), name)


def test_context_document_rows_messages():
    r = check_i_am_happy_context(context_document_matrix([0]))
    assert "'I'" in r.message and "0.5207" not in r.message and "'am'" not in r.message
    r = check_i_am_happy_context(context_document_matrix([1, 2]))
    assert "'am' and 'happy'" in r.message and "Step 5" in r.message


def test_context_not_yet():
    for empty in (None, "", [], np.zeros((3, 0))):
        assert check_i_am_happy_context(empty).status == "not yet"


# ---------------------------------------------------------------------------
# "cat sat": d_k = 512, and the initialisation
# ---------------------------------------------------------------------------

D512 = examples.load_example("cat_sat_why_scale_512").d_k


def test_d_k_is_512():
    assert D512 == 512


def simulated_variance(d, n=100_000, seed=0):
    rng = np.random.default_rng(seed)
    q, k = rng.normal(size=(n, d)), rng.normal(size=(n, d))
    return float(np.var(np.einsum("ij,ij->i", q, k)))


@pytest.mark.parametrize(
    "answer",
    [(512, 22.63, 1), (512, math.sqrt(512), 1.0), (512.0, 22.6, 0.99), (np.float64(512), np.array([22.627]), 1)],
)
def test_why_scale_right(answer):
    assert_correct(check_why_scale_512(*answer))


def test_why_scale_simulated_estimate_passes():
    var = simulated_variance(D512, n=20_000)
    assert abs(var - 512) / 512 < 0.03
    assert_correct(check_why_scale_512(var, math.sqrt(var), var / D512))


@pytest.mark.parametrize(
    "answer, name",
    [
        ((math.sqrt(512), 22.63, 1), "gave_std"),
        ((1, 22.63, 1), "already_scaled"),
        ((512**2, 22.63, 1), "squared"),
        ((512, 512, 1), "gave_variance"),
        ((512, 1, 1), "already_scaled"),
        ((512, 22.63, 512 / 512**2), "divided_by_d_k"),
        ((512, 22.63, 512 / math.sqrt(512)), "variance_divided_by_sqrt"),
        ((512, 22.63, 512), "not_scaled"),
        ((300, 22.63, 1), "wrong_value"),
        (("a lot", 22.63, 1), "not_a_number"),
        ((float("inf"), 22.63, 1), "not_finite"),
    ],
)
def test_why_scale_mistakes(answer, name):
    assert_mistake(check_why_scale_512(*answer), name)


def test_why_scale_partial_and_not_yet():
    assert check_why_scale_512(None).status == "not yet"
    assert check_why_scale_512(None, None, None).status == "not yet"
    r = check_why_scale_512(512)
    assert r.status == "not yet" and "the std" in r.message
    assert_mistake(check_why_scale_512(None, 512), "gave_variance")


HE = math.sqrt(2 / 512)
XAVIER = math.sqrt(2 / (512 + 512))


def test_init_values():
    assert HE == 0.0625
    assert round(XAVIER, 4) == 0.0442


@pytest.mark.parametrize("answer", [(HE, XAVIER), (0.0625, 0.0442), (0.0625, 0.04419)])
def test_init_right(answer):
    assert_correct(check_init_std(*answer))


@pytest.mark.parametrize(
    "answer, name",
    [
        ((XAVIER, XAVIER), "swapped"),
        ((HE, HE), "swapped"),
        ((2 / 512, XAVIER), "variance_not_std"),
        ((HE, 2 / 1024), "variance_not_std"),
        ((HE, math.sqrt(1 / 1024)), "xavier_without_2"),
        ((HE, math.sqrt(6 / 1024)), "xavier_uniform_bound"),
        ((0.1, XAVIER), "wrong_value"),
        ((HE, [1, 2]), "not_a_number"),
    ],
)
def test_init_mistakes(answer, name):
    assert_mistake(check_init_std(*answer), name)


def test_init_not_yet():
    assert check_init_std(None).status == "not yet"
    assert check_init_std(HE).status == "not yet"
    assert check_init_std(None, XAVIER).status == "not yet"


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
        (W_J[2][:, None], "wrong_shape"),
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
    lambda a: check_section_5_2_exercise_1(ex1()[0], weights=a),
    check_i_am_happy_weights,
    check_flops,
    lambda a: check_temperature_prediction(a, 2.0),
    lambda a: check_temperature_prediction(softmax(SCORES_C / 2), a),
    check_stable_softmax,
    check_masked_attention,
    check_section_5_2_exercise_2,
    check_section_5_2_exercise_4,
    lambda a: check_section_5_2_exercise_4(a, a),
    lambda a: check_section_5_2_exercise_4(S_SHARED, a),
    lambda a: check_section_5_2_exercise_4(None, a),
    check_attention_entropy,
    check_i_am_happy_context,
    check_why_scale_512,
    lambda a: check_why_scale_512(a, a, a),
    lambda a: check_why_scale_512(512, 22.63, a),
    check_init_std,
    lambda a: check_init_std(HE, a),
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
        lambda a: check_section_5_2_exercise_4(None, a),
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
