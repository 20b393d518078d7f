"""Backward pass, multi-head attention and blockwise attention (issue 5's kernels)."""

import numpy as np
import pytest

from helpers.attention import (
    MultiHeadAttention,
    attention_backward,
    attention_flops,
    blockwise_attention,
    causal_mask,
    merge_heads,
    multi_head_attention,
    padding_mask,
    scaled_dot_product_attention,
    softmax,
    softmax_jacobian,
    split_heads,
)

RNG = np.random.default_rng(2024)

# (q shape, k shape, v shape, mask shape or None, causal)
CASES = {
    "plain": ((4, 3), (5, 3), (5, 2), None, False),
    "n_gt_m_causal": ((6, 3), (4, 3), (4, 2), None, True),
    "batch_broadcast_k": ((2, 4, 3), (5, 3), (2, 5, 2), None, False),
    "mask_and_causal": ((2, 5, 3), (2, 5, 3), (2, 5, 4), (5, 5), True),
    "key_mask_1d": ((3, 2), (6, 2), (6, 3), (6,), False),
    "fully_masked_row": ((3, 2), (4, 2), (4, 2), "row0", False),
    "heads": ((2, 3, 4, 2), (2, 3, 6, 2), (2, 3, 6, 2), (2, 1, 1, 6), True),
}


def make(case, dtype=np.float64):
    qs, ks, vs, ms, causal = CASES[case]
    q, k, v = (RNG.standard_normal(s).astype(dtype) for s in (qs, ks, vs))
    if ms is None:
        mask = None
    elif ms == "row0":
        mask = np.ones((qs[-2], ks[-2]), bool)
        mask[0] = False
    else:
        mask = RNG.random(ms) > 0.3
    return q, k, v, mask, causal


def numeric_gradient(f, x, eps=1e-6):
    """Central finite differences of the scalar function f at x."""
    grad = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[idx] = eps
        grad[idx] = (f(x + step) - f(x - step)) / (2 * eps)
    return grad


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("scale", [None, 1.0, -0.5])
def test_backward_matches_finite_differences(case, scale):
    q, k, v, mask, causal = make(case)
    out = scaled_dot_product_attention(q, k, v, mask, scale=scale, causal=causal)[0]
    g = RNG.standard_normal(out.shape)

    def loss(q_, k_, v_):
        return np.sum(scaled_dot_product_attention(q_, k_, v_, mask, scale=scale, causal=causal)[0] * g)

    dq, dk, dv = attention_backward(q, k, v, g, mask, scale=scale, causal=causal)
    assert dq.shape == q.shape and dk.shape == k.shape and dv.shape == v.shape
    np.testing.assert_allclose(dq, numeric_gradient(lambda x: loss(x, k, v), q), atol=1e-7)
    np.testing.assert_allclose(dk, numeric_gradient(lambda x: loss(q, x, v), k), atol=1e-7)
    np.testing.assert_allclose(dv, numeric_gradient(lambda x: loss(q, k, x), v), atol=1e-7)


def test_backward_keeps_float32_and_checks_grad_out():
    q, k, v, mask, causal = make("plain", np.float32)
    grads = attention_backward(q, k, v, np.ones((4, 2), np.float32))
    assert all(g.dtype == np.float32 for g in grads)
    with pytest.raises(ValueError, match=r"grad_out must have the output's shape .*\(4, 2\).*\(4, 3\)"):
        attention_backward(q, k, v, np.ones((4, 3)))


def test_fully_masked_row_gets_no_gradient():
    q, k, v, mask, _ = make("fully_masked_row")
    dq, dk, dv = attention_backward(q, k, v, np.ones((3, 2)), mask)
    np.testing.assert_array_equal(dq[0], 0.0)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("block_size", [1, 2, 3, 256])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_blockwise_equals_plain(case, block_size, dtype):
    q, k, v, mask, causal = make(case, dtype)
    plain = scaled_dot_product_attention(q, k, v, mask, causal=causal)[0]
    blocked = blockwise_attention(q, k, v, mask, causal=causal, block_size=block_size)
    assert blocked.dtype == plain.dtype and blocked.shape == plain.shape
    np.testing.assert_allclose(blocked, plain, rtol=1e-5 if dtype == np.float32 else 1e-12,
                               atol=1e-6 if dtype == np.float32 else 1e-13)


def test_blockwise_is_stable_and_handles_empty_keys():
    q = np.array([[1000.0, 0.0]])
    k = np.array([[1.0, 0.0], [0.999, 0.0], [-1.0, 0.0]])
    v = np.array([[1.0], [2.0], [3.0]])
    np.testing.assert_allclose(blockwise_attention(q, k, v, block_size=1),
                               scaled_dot_product_attention(q, k, v)[0])
    assert blockwise_attention(np.ones((2, 3)), np.ones((0, 3)), np.ones((0, 4))).tolist() == [[0.0] * 4] * 2


@pytest.mark.parametrize("bad, message", [
    (dict(block_size=0), "block_size must be a positive integer"),
    (dict(scale=np.inf), "scale must be a finite"),
    (dict(mask=np.ones((3, 3), bool)), "mask must broadcast"),
])
def test_blockwise_rejects_bad_input(bad, message):
    q, k, v, _, _ = make("plain")
    with pytest.raises(ValueError, match=message):
        blockwise_attention(q, k, v, **bad)


def test_split_and_merge_heads():
    x = RNG.standard_normal((2, 5, 12))
    heads = split_heads(x, 3)
    assert heads.shape == (2, 3, 5, 4)
    np.testing.assert_array_equal(heads[:, 1], x[..., 4:8])  # head 1 holds features 4..7
    np.testing.assert_array_equal(merge_heads(heads), x)
    with pytest.raises(ValueError, match="d_model must be divisible by num_heads: got d_model=12, num_heads=5"):
        split_heads(x, 5)
    with pytest.raises(ValueError, match="num_heads must be a positive integer"):
        split_heads(x, 0)


def per_head_reference(x_q, x_kv, w_q, w_k, w_v, w_o, h, mask=None, causal=False):
    """Multi-head attention written head by head with explicit column slices."""
    d_head = x_q.shape[-1] // h
    outs, weights = [], []
    for i in range(h):
        cols = slice(i * d_head, (i + 1) * d_head)
        o, w = scaled_dot_product_attention(x_q @ w_q[:, cols], x_kv @ w_k[:, cols], x_kv @ w_v[:, cols],
                                            mask, causal=causal)
        outs.append(o)
        weights.append(w)
    return np.concatenate(outs, axis=-1) @ w_o, np.stack(weights, axis=-3)


@pytest.mark.parametrize("causal", [False, True])
def test_multi_head_equals_head_by_head(causal):
    x_q, x_kv = RNG.standard_normal((2, 4, 8)), RNG.standard_normal((2, 6, 8))
    ws = RNG.standard_normal((4, 8, 8)) / np.sqrt(8)
    mask = padding_mask([6, 3], 6)  # (2, 1, 6): batch 1 sees only 3 keys
    out, weights = multi_head_attention(x_q, x_kv, *ws, num_heads=2, mask=mask, causal=causal)
    ref_out, ref_weights = per_head_reference(x_q, x_kv, *ws, 2, mask=mask, causal=causal)
    assert out.shape == (2, 4, 8) and weights.shape == (2, 2, 4, 6)
    np.testing.assert_allclose(out, ref_out, atol=1e-12)
    np.testing.assert_allclose(weights, ref_weights, atol=1e-12)
    assert np.all(weights[1, ..., 3:] == 0)


def test_multi_head_class_and_errors():
    mha = MultiHeadAttention(d_model=8, num_heads=4, seed=0)
    x = RNG.standard_normal((5, 8))
    out, weights = mha(x, causal=True)
    ref_out, _ = per_head_reference(x, x, mha.w_q, mha.w_k, mha.w_v, mha.w_o, 4, mask=causal_mask(5))
    np.testing.assert_allclose(out, ref_out, atol=1e-12)
    assert weights.shape == (4, 5, 5)
    with pytest.raises(ValueError, match=r"w_q must have shape \(d_model, d_model\) = \(8, 8\): got \(8, 4\)"):
        multi_head_attention(x, x, np.ones((8, 4)), mha.w_k, mha.w_v, mha.w_o, 4)
    with pytest.raises(ValueError, match="d_model must be divisible by num_heads"):
        MultiHeadAttention(d_model=8, num_heads=3)


@pytest.mark.parametrize("h", [1, 2, 8])
def test_heads_cost_the_same_flops_as_one_wide_head(h):
    d_model, n = 512, 100
    assert h * attention_flops(n, n, d_model // h, d_model // h) == attention_flops(n, n, d_model, d_model)


def test_softmax_jacobian_matches_finite_differences():
    s = RNG.standard_normal((3, 5))
    jac = softmax_jacobian(softmax(s))
    assert jac.shape == (3, 5, 5)
    for row in range(3):
        numeric = np.stack([
            (softmax(s[row] + step) - softmax(s[row] - step)) / 2e-6 for step in np.eye(5) * 1e-6
        ], axis=1)  # column j: d softmax / d s_j
        np.testing.assert_allclose(jac[row], numeric, atol=1e-8)
    np.testing.assert_allclose(jac.sum(axis=-1), 0.0, atol=1e-15)
