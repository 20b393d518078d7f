"""Tests of helpers/checks.py: right answers, each computed mistake, and robustness.

Every mistake is computed here, independently of the checker, and must be
reported with its ``mistake`` name; arbitrary objects (hypothesis) must always
give a CheckResult, never an exception.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from helpers import attention, examples
from helpers.checks import (
    CheckResult,
    check_flops,
    check_i_am_happy_weights,
    check_masked_attention,
    check_section_5_2_exercise_1,
    check_stable_softmax,
    check_temperature_prediction,
)

softmax = attention.softmax
sdpa = attention.scaled_dot_product_attention


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


def document_matrix(rows=("weights_row1", "weights_row2")):
    w = W_HAPPY.copy()
    for fig_id in rows:
        fig = HAPPY.figure(fig_id)
        w[fig.index[0]] = fig.printed
    return w


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
    assert "[0, 1]" in r.message and "[2]" in r.message


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


def test_softmax_right():
    assert_correct(check_stable_softmax(good_softmax))
    assert_correct(check_stable_softmax(lambda x: softmax(x)))
    assert_correct(check_stable_softmax(lambda x: good_softmax(x).tolist()))


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

    def mutating(x):
        x -= np.max(x, axis=-1, keepdims=True)
        np.exp(x, out=x)
        x /= x.sum(axis=-1, keepdims=True)
        return x

    assert_correct(check_stable_softmax(mutating))


# ---------------------------------------------------------------------------
# A student's masked attention
# ---------------------------------------------------------------------------


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
    assert_correct(check_masked_attention(good_masked))
    assert_correct(check_masked_attention(good_masked_by_hand))
    assert_correct(check_masked_attention(lambda q, k, v, mask: sdpa(q, k, v, mask)))


@pytest.mark.parametrize(
    "fn, name",
    [
        (lambda q, k, v, mask: sdpa(q, k, v)[0], "mask_ignored"),
        (inverted_masked, "mask_inverted"),
        (unscaled_masked, "unscaled"),
        (nan_masked, "nan_for_masked_row"),
        (big_negative_masked, "masked_row_not_zero"),
        (lambda q, k, v, mask: good_masked(q, k, v, mask).T, "wrong_shape"),
        (lambda q, k, v, mask: None, "wrong_shape"),
        (lambda q, k, v: q, "raises"),
        (lambda q, k, v, mask: 1 / 0, "raises"),
        (lambda q, k, v, mask: good_masked(q, k, v, mask) * 1.1, "wrong_values"),
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
    "answer", [FLOPS, 2.048e9, "2.048e9", "2,048,000,000", 2e9, FLOPS + 5 * N3**2, np.int64(FLOPS), np.array([2.048e9])]
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
        (4 * N3 * D3 * D3, "multiply_adds_or_one_matmul"),  # 1.048e9: within 2.5 % of 1.024e9
        (N3 * D3 * D3, "n_d_swapped"),
        (12345, "wrong_value"),
        (-FLOPS, "wrong_value"),
        ("two billion", "not_a_number"),
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


@pytest.mark.parametrize("t", [0.25, 0.5, 1.0, 2.0, 5.0])
def test_temperature_right(t):
    w = softmax(SCORES_C / 2, temperature=t)
    assert_correct(check_temperature_prediction(w, t))
    assert_correct(check_temperature_prediction(w.round(2), str(t)))


@pytest.mark.parametrize("t", [0.25, 0.5, 2.0, 5.0])
def test_temperature_mistakes(t):
    assert_mistake(check_temperature_prediction(softmax(SCORES_C / 2 * t), t), "multiplied_by_temperature")
    assert_mistake(check_temperature_prediction(softmax(SCORES_C / t), t), "forgot_scaling")
    assert_mistake(check_temperature_prediction(softmax(SCORES_C * t), t), "multiplied_and_unscaled")


def test_temperature_other_cases():
    w = softmax(SCORES_C / 2, temperature=2.0)
    assert_mistake(check_temperature_prediction(w[0], 2.0), "wrong_shape")
    assert_mistake(check_temperature_prediction(w, 0), "bad_temperature")
    assert_mistake(check_temperature_prediction(w, -1.0), "bad_temperature")
    assert_mistake(check_temperature_prediction(w, None), "bad_temperature")
    assert_mistake(check_temperature_prediction(w, float("nan")), "bad_temperature")
    assert check_temperature_prediction(None, 2.0).status == "not yet"
    # At T = 1 multiplying and dividing coincide: the right answer, not a mistake.
    assert_correct(check_temperature_prediction(softmax(SCORES_C / 2 * 1.0), 1.0))


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
]


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


@settings(deadline=None, max_examples=100)
@given(callables)
def test_any_function_gives_a_result(fn):
    for check in (check_stable_softmax, check_masked_attention):
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
    def warns(x):
        import warnings

        warnings.warn("student warning", UserWarning)
        return good_softmax(x)

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
    for check in (check_flops, check_section_5_2_exercise_1, check_i_am_happy_weights):
        assert_mistake(check(answer), "unreadable")
