"""Property tests of helpers.attention with hypothesis.

Inputs are small arrays (at most 3 x 3 batch, 4 queries, 5 keys, width 4)
with entries in [-10, 10], no NaN and no infinity except where a property is
about -inf logits. The examples run fast enough for the slow ``_loop``
references.

Tolerances: two float64 routes to the same quantity differ by rounding of
logits of size <= |q| |k| d_k <= 400, i.e. ~1e-13 absolute; ``F64`` (rtol
1e-9, atol 1e-10) is far below any real mistake. The float32 check uses
float32-representable inputs, so only float32 arithmetic separates the two
(see ``test_float32_agrees_with_float64``).

Masks come in every shape that broadcasts to (..., n, m): (..., n, m),
(..., 1, m), (..., n, 1), (m,), (1,) and 0-d.
"""

from __future__ import annotations

import math

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.attention import (
    attention_scores,
    attention_scores_loop,
    scaled_dot_product_attention,
    scaled_dot_product_attention_loop,
    softmax,
    softmax_loop,
)

F64 = dict(rtol=1e-9, atol=1e-10)

FINITE = st.floats(-10, 10, allow_nan=False, allow_infinity=False)
FINITE32 = st.floats(-10, 10, allow_nan=False, allow_infinity=False, width=32)
LOGITS = st.one_of(FINITE, FINITE, FINITE, st.just(-np.inf))  # about 1 in 4 is -inf


def arrays(shape, elements=FINITE, dtype=np.float64):
    return hnp.arrays(dtype, shape, elements=elements)


@st.composite
def attention_inputs(draw, with_mask=True, with_causal=True, elements=FINITE, dtype=np.float64):
    """q, k, v (and a mask) whose leading dimensions broadcast in every way."""
    batch = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3))
    n = draw(st.integers(1, 4))
    m = draw(st.integers(1, 5))
    d_k = draw(st.integers(1, 4))
    d_v = draw(st.integers(1, 3))

    def leading():  # drop some leading dims, shrink others to 1
        kept = batch[len(batch) - draw(st.integers(0, len(batch))):]
        return tuple(draw(st.sampled_from([size, 1])) for size in kept)

    q = draw(arrays(leading() + (n, d_k), elements, dtype))
    k = draw(arrays(leading() + (m, d_k), elements, dtype))
    v = draw(arrays(leading() + (m, d_v), elements, dtype))
    mask = None
    if with_mask and draw(st.booleans()):
        shape = leading() + (draw(st.sampled_from([n, 1])), draw(st.sampled_from([m, 1])))
        shape = draw(st.sampled_from([shape, shape, shape, (m,), (1,), ()]))
        mask = draw(hnp.arrays(np.bool_, shape))
    causal = with_causal and draw(st.booleans())
    return q, k, v, mask, causal


def allowed_of(weights_shape, mask, causal):
    n, m = weights_shape[-2:]
    allowed = np.ones((n, m), dtype=bool)
    if mask is not None:
        allowed = allowed & mask
    if causal:
        allowed = allowed & np.tril(np.ones((n, m), dtype=bool))
    return np.broadcast_to(allowed, weights_shape)


# ---------------------------------------------------------------------------
# Rows are probability distributions
# ---------------------------------------------------------------------------


@settings(deadline=None)
@given(x=arrays(hnp.array_shapes(min_dims=1, max_dims=3, max_side=5), LOGITS))
def test_softmax_rows_sum_to_one_or_zero(x):
    w = softmax(x)
    assert w.shape == x.shape
    assert np.all(w >= 0) and np.all(np.isfinite(w))
    has_key = np.any(np.isfinite(x), axis=-1)
    np.testing.assert_allclose(w.sum(axis=-1), np.where(has_key, 1.0, 0.0), **F64)
    assert np.all(w[np.isneginf(x)] == 0)  # -inf gives exact zeros


@settings(deadline=None)
@given(inputs=attention_inputs())
def test_attention_rows_sum_to_one_or_zero(inputs):
    q, k, v, mask, causal = inputs
    out, w = scaled_dot_product_attention(q, k, v, mask, causal=causal)
    allowed = allowed_of(w.shape, mask, causal)
    has_key = allowed.any(axis=-1)
    assert np.all(w >= 0)
    assert np.all(w[~allowed] == 0)  # blocked keys get exactly nothing
    np.testing.assert_allclose(w.sum(axis=-1), np.where(has_key, 1.0, 0.0), **F64)
    assert np.all(out[~has_key] == 0)  # a row with no key: zeros, not NaN
    np.testing.assert_allclose(out, w @ v, **F64)


# ---------------------------------------------------------------------------
# Invariances
# ---------------------------------------------------------------------------


@settings(deadline=None)
@given(data=st.data(), x=arrays(hnp.array_shapes(min_dims=1, max_dims=3, max_side=5), LOGITS))
def test_softmax_shift_invariance(data, x):
    shift = data.draw(arrays(x.shape[:-1] + (1,), st.floats(-100, 100)), label="shift")
    for kernel in (softmax, softmax_loop):
        np.testing.assert_allclose(kernel(x + shift), kernel(x), **F64)


@settings(deadline=None)
@given(data=st.data(), inputs=attention_inputs(with_causal=True))
def test_shifting_every_key_leaves_weights_unchanged(data, inputs):
    """k_j + c changes q.k_j by q.c, the same for every key of a row."""
    q, k, v, mask, causal = inputs
    c = data.draw(arrays((k.shape[-1],)), label="c")
    out, w = scaled_dot_product_attention(q, k, v, mask, causal=causal)
    out_c, w_c = scaled_dot_product_attention(q, k + c, v, mask, causal=causal)
    np.testing.assert_allclose(w_c, w, **F64)
    np.testing.assert_allclose(out_c, out, **F64)


@settings(deadline=None)
@given(
    x=arrays(hnp.array_shapes(min_dims=1, max_dims=3, max_side=5), LOGITS),
    t=st.floats(0.01, 100),
)
def test_temperature_divides_the_logits(x, t):
    for kernel in (softmax, softmax_loop):
        np.testing.assert_allclose(kernel(x, temperature=t), kernel(x / t), **F64)


@settings(deadline=None)
@given(data=st.data(), inputs=attention_inputs(with_causal=False))
def test_permutation_equivariance(data, inputs):
    q, k, v, mask, _ = inputs
    n, m = q.shape[-2], k.shape[-2]
    rows = np.array(data.draw(st.permutations(range(n)), label="query order"))
    cols = np.array(data.draw(st.permutations(range(m)), label="key order"))

    def permuted(a, order, axis):  # a missing or length-1 mask axis broadcasts: nothing to permute
        if a is None or a.ndim < -axis or a.shape[axis] == 1:
            return a
        return np.take(a, order, axis=axis)

    out, w = scaled_dot_product_attention(q, k, v, mask)
    # permuting the queries permutes the rows of out and weights
    out_q, w_q = scaled_dot_product_attention(q[..., rows, :], k, v, permuted(mask, rows, -2))
    np.testing.assert_allclose(w_q, w[..., rows, :], **F64)
    np.testing.assert_allclose(out_q, out[..., rows, :], **F64)
    # permuting keys and values together permutes the weight columns; out is unchanged
    out_k, w_k = scaled_dot_product_attention(
        q, k[..., cols, :], v[..., cols, :], permuted(mask, cols, -1)
    )
    np.testing.assert_allclose(w_k, w[..., cols], **F64)
    np.testing.assert_allclose(out_k, out, **F64)


@settings(deadline=None)
@given(data=st.data(), inputs=attention_inputs(with_mask=False, with_causal=False))
def test_masked_keys_behave_as_dropped_keys(data, inputs):
    q, k, v, _, _ = inputs
    m = k.shape[-2]
    keep = data.draw(hnp.arrays(np.bool_, (m,)), label="keep")
    keep[data.draw(st.integers(0, m - 1), label="always kept")] = True
    for kernel in (scaled_dot_product_attention, scaled_dot_product_attention_loop):
        out_d, w_d = kernel(q, k[..., keep, :], v[..., keep, :])
        for mask in (keep, keep[np.newaxis, :]):  # (m,) and (1, m): key-padding masks
            out, w = kernel(q, k, v, mask)
            np.testing.assert_allclose(w[..., keep], w_d, **F64)
            assert np.all(w[..., ~keep] == 0)
            np.testing.assert_allclose(out, out_d, **F64)


@settings(deadline=None)
@given(data=st.data(), batch=st.integers(1, 3), n=st.integers(1, 4), m=st.integers(1, 5),
       d_k=st.integers(1, 4), d_v=st.integers(1, 3), causal=st.booleans())
def test_batched_equals_looped(data, batch, n, m, d_k, d_v, causal):
    q = data.draw(arrays((batch, n, d_k)), label="q")
    k = data.draw(arrays((batch, m, d_k)), label="k")
    v = data.draw(arrays((batch, m, d_v)), label="v")
    mask = data.draw(hnp.arrays(np.bool_, (batch, n, m)), label="mask")
    out, w = scaled_dot_product_attention(q, k, v, mask, causal=causal)
    scores = attention_scores(q, k, mask, causal=causal)
    for b in range(batch):
        out_b, w_b = scaled_dot_product_attention(q[b], k[b], v[b], mask[b], causal=causal)
        np.testing.assert_allclose(out[b], out_b, **F64)
        np.testing.assert_allclose(w[b], w_b, **F64)
        np.testing.assert_allclose(scores[b], attention_scores(q[b], k[b], mask[b], causal=causal), **F64)


# ---------------------------------------------------------------------------
# Fast == loop, float32 ~ float64, convex hull, scale
# ---------------------------------------------------------------------------


@settings(deadline=None, max_examples=60)
@given(inputs=attention_inputs(), scale=st.one_of(st.none(), st.floats(-3, 3)))
def test_fast_equals_loop(inputs, scale):
    q, k, v, mask, causal = inputs
    out, w = scaled_dot_product_attention(q, k, v, mask, scale=scale, causal=causal)
    out_l, w_l = scaled_dot_product_attention_loop(q, k, v, mask, scale=scale, causal=causal)
    assert out.shape == out_l.shape and w.shape == w_l.shape
    np.testing.assert_allclose(w, w_l, **F64)
    np.testing.assert_allclose(out, out_l, **F64)
    scores = attention_scores(q, k, mask, scale=scale, causal=causal)
    np.testing.assert_allclose(scores, attention_scores_loop(q, k, mask, scale=scale, causal=causal), **F64)


@settings(deadline=None)
@given(x=arrays(hnp.array_shapes(min_dims=1, max_dims=3, max_side=4), LOGITS), data=st.data())
def test_softmax_fast_equals_loop(x, data):
    one_axis = st.integers(-x.ndim, x.ndim - 1)
    several = st.lists(st.integers(0, x.ndim - 1), min_size=1, max_size=x.ndim, unique=True).map(tuple)
    axis = data.draw(st.one_of(one_axis, several, st.none()), label="axis")
    np.testing.assert_allclose(softmax(x, axis=axis), softmax_loop(x, axis=axis), **F64)


@settings(deadline=None)
@given(inputs=attention_inputs(elements=FINITE32, dtype=np.float32))
def test_float32_agrees_with_float64(inputs):
    """Same (float32-representable) inputs; only the arithmetic differs.

    Logits are at most |q||k| d_k / sqrt(d_k) <= 200; float32 rounds them by
    ~ d_k * 200 * 6e-8 ~ 5e-5, which moves a weight by at most ~1e-4 relative
    and an output (|v| <= 10, weights summing to 1) by ~1e-3: hence
    atol 2e-4 on the weights and 2e-3 on the outputs.
    """
    q, k, v, mask, causal = inputs
    out32, w32 = scaled_dot_product_attention(q, k, v, mask, causal=causal)
    assert out32.dtype == np.float32 and w32.dtype == np.float32
    as64 = [a.astype(np.float64) for a in (q, k, v)]
    out64, w64 = scaled_dot_product_attention(*as64, mask, causal=causal)
    assert out64.dtype == np.float64
    np.testing.assert_allclose(w32, w64, rtol=0, atol=2e-4)
    np.testing.assert_allclose(out32, out64, rtol=0, atol=2e-3)


@settings(deadline=None)
@given(inputs=attention_inputs(), scale=st.one_of(st.none(), st.floats(-3, 3)))
def test_out_lies_in_convex_hull_of_allowed_values(inputs, scale):
    q, k, v, mask, causal = inputs
    out, w = scaled_dot_product_attention(q, k, v, mask, scale=scale, causal=causal)
    allowed = allowed_of(w.shape, mask, causal)[..., np.newaxis]  # (..., n, m, 1)
    values = v[..., np.newaxis, :, :]  # (..., 1, m, d_v)
    lo = np.min(np.where(allowed, values, np.inf), axis=-2)  # (..., n, d_v)
    hi = np.max(np.where(allowed, values, -np.inf), axis=-2)
    has_key = allowed.any(axis=-2)
    slack = 1e-9 * (1 + np.max(np.abs(v), initial=0))
    assert np.all(~has_key | (out >= lo - slack))
    assert np.all(~has_key | (out <= hi + slack))
    assert np.all(np.where(has_key, 0, out) == 0)


@settings(deadline=None)
@given(inputs=attention_inputs(), s=st.floats(-3, 3))
def test_scale_equals_unscaled_on_scaled_queries(inputs, s):
    q, k, v, mask, causal = inputs
    out, w = scaled_dot_product_attention(q, k, v, mask, scale=s, causal=causal)
    out_u, w_u = scaled_dot_product_attention(q * s, k, v, mask, scale=1.0, causal=causal)
    np.testing.assert_allclose(w, w_u, **F64)
    np.testing.assert_allclose(out, out_u, **F64)
    scores = attention_scores(q, k, mask, scale=s, causal=causal)
    np.testing.assert_allclose(scores, attention_scores(q * s, k, mask, scale=1.0, causal=causal), **F64)


@settings(deadline=None)
@given(inputs=attention_inputs())
def test_default_scale_is_one_over_sqrt_dk(inputs):
    q, k, v, mask, causal = inputs
    d_k = q.shape[-1]
    out, w = scaled_dot_product_attention(q, k, v, mask, causal=causal)
    out_s, w_s = scaled_dot_product_attention(q / math.sqrt(d_k), k, v, mask, scale=1.0, causal=causal)
    np.testing.assert_allclose(w, w_s, **F64)
    np.testing.assert_allclose(out, out_s, **F64)


@settings(deadline=None)
@given(inputs=attention_inputs())
def test_integer_mask_equals_boolean_mask(inputs):
    q, k, v, mask, causal = inputs
    if mask is None:
        mask = np.ones((1, 1), dtype=bool)
    for got, expected in zip(
        scaled_dot_product_attention(q, k, v, mask.astype(np.int64), causal=causal),
        scaled_dot_product_attention(q, k, v, mask, causal=causal),
    ):
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("kernel", [scaled_dot_product_attention, scaled_dot_product_attention_loop],
                         ids=["fast", "loop"])
@settings(deadline=None, max_examples=50)
@given(inputs=attention_inputs(with_mask=False, with_causal=False))
def test_causal_blocks_exactly_the_future(kernel, inputs):
    q, k, v, _, _ = inputs
    n, m = q.shape[-2], k.shape[-2]
    out, w = kernel(q, k, v, causal=True)
    future = ~np.tril(np.ones((n, m), dtype=bool))
    assert np.all(w[..., future] == 0)
    np.testing.assert_allclose(w.sum(axis=-1), 1.0, **F64)  # key 0 is always visible
