"""The kernels at their edges (issue 18): each case a reviewer broke, now a clear answer.

Every expected value is computed independently of the kernel under test: from
``scaled_dot_product_attention``, from nearest-neighbour search with plain
comparisons, or written out by hand.
"""

import math

import numpy as np
import pytest

from helpers.attention import (
    incremental_attention,
    low_precision_attention,
    nadaraya_watson,
    scaled_dot_product_attention,
    softmax,
    softmax_loop,
)
from helpers.transformer import Adam

RNG = np.random.default_rng(18)


# --- softmax of a single number ---------------------------------------------------------


@pytest.mark.parametrize("fn", [softmax, softmax_loop])
@pytest.mark.parametrize("axis", [-1, 0, 1, (0,)])
def test_softmax_of_a_scalar_along_an_axis_is_a_clear_value_error(fn, axis):
    with pytest.raises(ValueError, match=r"x\.shape=\(\)"):
        fn(np.float64(3.0), axis=axis)


@pytest.mark.parametrize("fn", [softmax, softmax_loop])
def test_softmax_of_a_scalar_over_no_axis_is_one(fn):
    assert fn(3.0, axis=None) == 1.0
    assert fn(np.float32(-7.5), axis=None).shape == ()
    assert fn(-np.inf, axis=None) == 0.0  # nothing to attend to: zero, as an all -inf row


@pytest.mark.parametrize("fn", [softmax, softmax_loop])
def test_softmax_axis_out_of_range_names_the_shape(fn):
    with pytest.raises(ValueError, match=r"axis 2 is out of range .*x\.shape=\(2, 3\)"):
        fn(np.zeros((2, 3)), axis=2)


# --- incremental attention with a 0-d or 1-d mask --------------------------------------------


@pytest.mark.parametrize("mask", [True, np.bool_(True), np.array(True), 1])
def test_incremental_attention_takes_a_0d_true_mask_as_sdpa_does(mask):
    q, k, v = RNG.standard_normal((3, 5, 4))
    expected = scaled_dot_product_attention(q, k, v, mask, causal=True)[0]
    np.testing.assert_allclose(incremental_attention(q, k, v, mask=mask), expected, rtol=1e-12, atol=1e-12)


def test_incremental_attention_with_a_0d_false_mask_gives_zero_rows():
    q, k, v = RNG.standard_normal((3, 4, 2))
    out = incremental_attention(q, k, v, mask=False)
    np.testing.assert_array_equal(out, np.zeros((4, 2)))
    np.testing.assert_array_equal(out, scaled_dot_product_attention(q, k, v, False, causal=True)[0])


def test_incremental_attention_with_a_key_mask_of_shape_m():
    q, k, v = RNG.standard_normal((3, 5, 3))
    keys = np.array([True, False, True, True, False])
    expected = scaled_dot_product_attention(q, k, v, keys, causal=True)[0]
    np.testing.assert_allclose(incremental_attention(q, k, v, mask=keys), expected, rtol=1e-12, atol=1e-12)


# --- low precision attention: no keys, and mask values that cannot work ------------------------


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("accumulate", ["float32", None])
def test_low_precision_with_no_keys_returns_zeros_like_sdpa(dtype, accumulate):
    q = RNG.standard_normal((2, 3, 4))
    k = np.zeros((2, 0, 4))
    v = np.zeros((2, 0, 5))
    out, weights = low_precision_attention(q, k, v, dtype=dtype, accumulate=accumulate)
    ref_out, ref_weights = scaled_dot_product_attention(q, k, v)
    assert out.shape == ref_out.shape == (2, 3, 5)
    assert weights.shape == ref_weights.shape == (2, 3, 0)
    np.testing.assert_array_equal(out, ref_out)


@pytest.mark.parametrize("bad", [math.nan, 1e9, 1.0, math.inf, "a lot", [1.0]])
def test_low_precision_refuses_a_mask_value_that_is_not_very_negative(bad):
    q, k, v = RNG.standard_normal((3, 2, 4))
    with pytest.raises(ValueError, match="mask_value"):
        low_precision_attention(q, k, v, np.ones((2, 2), bool), mask_value=bad)


@pytest.mark.parametrize("good", [None, -1e9, -30000.0, -math.inf, 0.0])
def test_low_precision_accepts_non_positive_mask_values(good):
    q, k, v = RNG.standard_normal((3, 2, 4))
    mask = np.array([[True, False], [True, True]])
    out, weights = low_precision_attention(q, k, v, mask, mask_value=good)
    assert np.all(np.isfinite(out))


def test_low_precision_float32_accumulation_never_stores_the_scores_in_float16():
    # q . k = 300 * 300 = 90000 > 65504: rounded to float16 this is inf, so the
    # docstring's claim is checked against the rounding it says does not happen.
    q = k = np.array([[300.0, 0.0], [0.0, 1.0]])
    v = np.array([[1.0], [2.0]])
    with np.errstate(over="ignore"):
        assert np.isinf(np.float32(q[0] @ k[0]).astype(np.float16))
    out, weights = low_precision_attention(q, k, v, accumulate="float32")
    assert np.all(np.isfinite(out)) and np.all(np.isfinite(weights))
    ref = scaled_dot_product_attention(q, k, v)[0]
    np.testing.assert_allclose(out, ref, rtol=2e-3)


# --- Nadaraya-Watson: weights that sum to 1 in every case -------------------------------------


def _nearest_weights(x_query, x_train):
    """Uniform over the nearest training points, by exact comparison (1-D, in fractions).

    Exact, not float: 1e200 - 2 rounds to 1e200 - 0, yet 2 is the nearer point.
    """
    from fractions import Fraction

    rows = []
    for x in x_query:
        dist = [abs(Fraction(x) - Fraction(t)) for t in x_train]
        best = min(dist)
        near = [d == best for d in dist]
        rows.append([w / sum(near) for w in near])
    return np.array(rows)


def test_nadaraya_watson_refuses_empty_training_data():
    with pytest.raises(ValueError, match=r"at least one training point.*\(0,\)"):
        nadaraya_watson([0.5], [], [], 1.0)
    with pytest.raises(ValueError, match="at least one training point"):
        nadaraya_watson(np.zeros((2, 3)), np.zeros((0, 3)), np.zeros((0, 2)), 1.0)


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_nadaraya_watson_refuses_non_finite_positions(bad):
    with pytest.raises(ValueError, match="x_query"):
        nadaraya_watson([bad], [0.0, 1.0], [0.0, 1.0], 1.0)
    with pytest.raises(ValueError, match="x_train"):
        nadaraya_watson([0.0], [0.0, bad], [0.0, 1.0], 1.0)


def test_nadaraya_watson_far_query_weights_still_sum_to_one():
    x_train, y_train = [0.0, 1.0, 2.0], [0.0, 1.0, 4.0]
    for far in (1e200, -1e200, 1e300):
        y_hat, w = nadaraya_watson([far], x_train, y_train, 0.5)
        np.testing.assert_allclose(w.sum(axis=1), 1.0)
        np.testing.assert_array_equal(w, _nearest_weights([far], x_train))
        np.testing.assert_allclose(y_hat, w @ np.array(y_train))


def test_nadaraya_watson_underflowing_bandwidth_is_nearest_neighbour():
    x_train = np.array([0.0, 1.0, 2.0, 3.5])
    y_train = np.array([10.0, 20.0, 30.0, 40.0])
    x_query = np.array([0.3, 2.0, 2.75, -5.0])  # 2.75 is half way between 2 and 3.5
    y_hat, w = nadaraya_watson(x_query, x_train, y_train, 1e-300)
    expected = _nearest_weights(x_query, x_train)
    np.testing.assert_array_equal(w, expected)
    np.testing.assert_allclose(y_hat, [10.0, 30.0, 35.0, 10.0])


def test_nadaraya_watson_ordinary_case_unchanged():
    # the Gaussian kernel ratio written out, at a bandwidth where nothing underflows
    x_train = np.array([0.0, 1.0, 2.0])
    y_train = np.array([0.0, 1.0, 4.0])
    kern = np.exp(-((0.5 - x_train) / 0.7) ** 2 / 2)
    y_hat, w = nadaraya_watson([0.5], x_train, y_train, 0.7)
    np.testing.assert_allclose(w[0], kern / kern.sum(), rtol=1e-13)
    np.testing.assert_allclose(y_hat[0], kern @ y_train / kern.sum(), rtol=1e-13)


# --- Adam's hyper-parameters ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"betas": (1, 0.999)}, r"betas\[0\]"),
        ({"betas": (0.9, 1.0)}, r"betas\[1\]"),
        ({"betas": (-0.1, 0.999)}, r"betas\[0\]"),
        ({"betas": (0.9, math.nan)}, r"betas\[1\]"),
        ({"betas": 0.9}, "betas"),
        ({"betas": (0.9,)}, "betas"),
        ({"eps": -1e-8}, "eps"),
        ({"eps": math.inf}, "eps"),
        ({"lr": "fast"}, "lr"),
        ({"lr": 0.0}, "lr"),
    ],
)
def test_adam_refuses_hyper_parameters_that_break_the_update(kwargs, name):
    with pytest.raises(ValueError, match=name):
        Adam({"x": np.ones(2)}, **kwargs)


def test_adam_beta1_zero_is_rmsprop_like_and_finite():
    w = {"x": np.array([1.0, -1.0])}
    opt = Adam(w, lr=0.1, betas=(0.0, 0.0), eps=0.0)
    opt.step({"x": np.array([2.0, -3.0])})
    # beta1 = beta2 = 0: m = g, v = g^2, so the step is lr * g / |g| = lr * sign(g)
    np.testing.assert_allclose(w["x"], [0.9, -0.9])
