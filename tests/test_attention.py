"""Unit tests of helpers.attention: the API contract, case by case.

House style: tables of cases that must give the same answer (einops-like),
every answer computed two ways with a stated tolerance (micrograd-like), and
``pytest.raises(ValueError, match=...)`` for every bad input, with the match
checking that the message names the argument and shows what was received.

Three independent references are used:

* the ``_loop`` twins of the kernels (Python loops, shipped with the module);
* ``reference_attention`` below: the definition written out with
  ``np.einsum`` and an explicit exp / sum over the allowed keys;
* ``definition_page_attention`` below: the masked implementation of the
  definition page (``masked_fill(mask == 0, -inf)`` then softmax), valid for
  rows that keep at least one key.

Tolerances: two float64 computations of the same formula in a different
order of summation agree to a few ulps; ``F64`` (rtol 1e-10, atol 1e-12)
leaves a wide margin while any real mistake (a wrong scale, a wrong axis, a
missing mask) moves the results by more than 1e-3. Printed figures of the
documents are checked to half a unit of their last printed decimal.

Every test runs with warnings turned into errors (``pytestmark`` below): the
contract says the kernels never warn, not even for 1e5 logits, temperatures
near 0, -inf entries or fully masked rows.
"""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pytest

from helpers import attention as attention_module
from helpers.attention import (
    attention_flops,
    attention_scores,
    attention_scores_loop,
    causal_mask,
    entropy,
    padding_mask,
    scaled_dot_product_attention,
    scaled_dot_product_attention_loop,
    softmax,
    softmax_loop,
)

pytestmark = pytest.mark.filterwarnings("error")

# Two float64 evaluations of the same formula (different summation order).
F64 = dict(rtol=1e-10, atol=1e-12)
# A float32 result against the float64 one, for O(1) inputs.
F32 = dict(rtol=1e-5, atol=1e-6)
# A figure printed with 4 decimals: half a unit of the last decimal.
PRINTED_4 = dict(rtol=0, atol=5e-5)

SDPA = {"fast": scaled_dot_product_attention, "loop": scaled_dot_product_attention_loop}
SCORES = {"fast": attention_scores, "loop": attention_scores_loop}
SOFTMAX = {"fast": softmax, "loop": softmax_loop}

# ---------------------------------------------------------------------------
# Independent references
# ---------------------------------------------------------------------------


def reference_allowed(n, m, mask=None, causal=False):
    """Boolean (..., n, m): True where query i may attend to key j."""
    allowed = np.ones((n, m), dtype=bool)
    if mask is not None:
        allowed = allowed & (np.asarray(mask) != 0)
    if causal:
        allowed = allowed & (np.arange(m)[np.newaxis, :] <= np.arange(n)[:, np.newaxis])
    return allowed


def reference_attention(q, k, v, mask=None, scale=None, causal=False):
    """The definition, written out: einsum scores, exp / sum over allowed keys."""
    scores = reference_scores(q, k, mask, scale, causal)  # -inf where blocked
    v = np.asarray(v, dtype=np.float64)
    full = np.broadcast_shapes(scores.shape, v.shape[:-2] + (1, 1))
    scores = np.broadcast_to(scores, full)
    allowed = scores > -np.inf
    top = np.max(scores, axis=-1, keepdims=True, initial=-np.inf)
    top = np.where(np.isfinite(top), top, 0.0)
    e = np.where(allowed, np.exp(np.where(allowed, scores, top) - top), 0.0)
    total = e.sum(axis=-1, keepdims=True)
    weights = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    out = np.einsum("...ij,...jc->...ic", weights, v)
    return out, weights


def reference_scores(q, k, mask=None, scale=None, causal=False):
    q, k = (np.asarray(a, dtype=np.float64) for a in (q, k))
    n, d_k = q.shape[-2:]
    m = k.shape[-2]
    if scale is None:
        scale = 1.0 / math.sqrt(d_k)
    scores = np.einsum("...id,...jd->...ij", q, k) * scale
    allowed = reference_allowed(n, m, mask, causal)
    full = np.broadcast_shapes(scores.shape, allowed.shape)
    return np.where(np.broadcast_to(allowed, full), np.broadcast_to(scores, full), -np.inf)


def definition_page_attention(q, k, v, mask):
    """The definition page's masked attention, translated from PyTorch.

    scores = Q @ K^T / sqrt(d_k); scores.masked_fill(mask == 0, -inf);
    softmax(scores, dim=-1) @ V. A row with no allowed key gives NaN here.
    """
    d_k = q.shape[-1]
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(d_k)
    scores = np.where(np.asarray(mask) == 0, -np.inf, scores)
    with np.errstate(invalid="ignore"):
        e = np.exp(scores - scores.max(axis=-1, keepdims=True))
        weights = e / e.sum(axis=-1, keepdims=True)
    return weights @ v, weights


def reference_softmax(x, axis=-1):
    """exp(x - max) / sum over ``axis`` (int, tuple or None), like scipy's."""
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def random_qkv(rng, q_shape, k_shape, v_shape):
    return (rng.standard_normal(q_shape), rng.standard_normal(k_shape), rng.standard_normal(v_shape))


def make_mask(rng, spec):
    """``spec`` is None, a shape (random boolean mask) or a ready array."""
    if spec is None or isinstance(spec, np.ndarray):
        return spec
    return rng.random(spec) < 0.6


def expected_batch(*shapes, mask=None):
    leading = [s[:-2] for s in shapes]
    if mask is not None and np.ndim(mask) > 2:
        leading.append(np.shape(mask)[:-2])
    return np.broadcast_shapes(*leading)


# ---------------------------------------------------------------------------
# Fast kernel == _loop twin == einsum reference, over a table of shapes
# ---------------------------------------------------------------------------

FULLY_MASKED_ROWS = np.array(
    [[False, False, False, False], [True, False, True, False], [False, False, False, False]]
)
KEY0_BLOCKED = np.array([[False, True, True]])  # with causal, query 0 sees nothing

# (id, q shape, k shape, v shape, mask spec, causal)
SHAPE_TABLE = [
    ("square", (3, 4), (3, 4), (3, 4), None, False),
    ("n_lt_m", (2, 3), (5, 3), (5, 3), None, False),
    ("n_gt_m", (5, 3), (2, 3), (2, 3), None, False),
    ("dk_ne_dv", (3, 2), (4, 2), (4, 6), None, False),
    ("n1_m1", (1, 3), (1, 3), (1, 2), None, False),
    ("batch", (2, 3, 4), (2, 5, 4), (2, 5, 3), None, False),
    ("batch_heads", (2, 3, 2, 4), (2, 3, 5, 4), (2, 3, 5, 3), None, False),
    ("q_batched_kv_shared", (3, 2, 4), (5, 4), (5, 3), None, False),
    ("kv_batched_q_shared", (2, 4), (3, 5, 4), (3, 5, 2), None, False),
    ("heads_broadcast_1", (2, 1, 3, 4), (1, 3, 5, 4), (1, 3, 5, 2), None, False),
    ("v_batched_only", (2, 4), (5, 4), (2, 5, 3), None, False),
    ("mask_n_m", (3, 4), (5, 4), (5, 2), (3, 5), False),
    ("mask_1_m_key_padding", (2, 3, 4), (2, 5, 4), (2, 5, 2), (1, 5), False),
    ("mask_n_1_query_rows", (3, 4), (5, 4), (5, 2), (3, 1), False),
    ("mask_m_1d", (3, 4), (5, 4), (5, 2), (5,), False),
    ("mask_0d_true", (3, 4), (5, 4), (5, 2), np.array(True), False),
    ("mask_1d_causal", (3, 4), (5, 4), (5, 2), (5,), True),
    ("mask_B_n_m_leading", (3, 4), (5, 4), (5, 2), (2, 3, 5), False),
    ("mask_B_1_m_batched", (2, 3, 4), (2, 5, 4), (2, 5, 2), (2, 1, 5), False),
    ("mask_leading_beyond_batch", (2, 3, 4), (2, 5, 4), (2, 5, 2), (4, 1, 1, 5), False),
    ("mask_heads_B_1_n_m", (2, 3, 2, 4), (2, 3, 5, 4), (2, 3, 5, 3), (2, 1, 2, 5), False),
    ("causal_square", (4, 3), (4, 3), (4, 2), None, True),
    ("causal_n_lt_m", (3, 3), (6, 3), (6, 2), None, True),
    ("causal_n_gt_m", (6, 3), (3, 3), (3, 2), None, True),
    ("causal_and_mask_n_m", (4, 3), (4, 3), (4, 2), (4, 4), True),
    ("causal_and_mask_batched", (2, 5, 3), (2, 5, 3), (2, 5, 2), (2, 1, 5), True),
    ("fully_masked_rows", (3, 2), (4, 2), (4, 3), FULLY_MASKED_ROWS, False),
    ("all_rows_masked", (2, 3, 2), (2, 4, 2), (2, 4, 3), np.zeros((3, 4), bool), False),
    ("causal_row0_empty", (4, 2), (3, 2), (3, 2), KEY0_BLOCKED, True),
    ("m0", (3, 4), (0, 4), (0, 2), None, False),
    ("m0_batched", (2, 3, 4), (2, 0, 4), (2, 0, 5), None, False),
    ("m0_with_mask", (3, 4), (0, 4), (0, 2), (3, 0), False),
    ("n0", (0, 4), (3, 4), (3, 2), None, False),
    ("n0_causal", (0, 4), (3, 4), (3, 2), None, True),
]


def _sdpa_params():
    for case_id, qs, ks, vs, mask, causal in SHAPE_TABLE:
        yield pytest.param(qs, ks, vs, mask, causal, id=case_id)


def _scores_params():
    for case_id, qs, ks, _vs, mask, causal in SHAPE_TABLE:
        yield pytest.param(qs, ks, mask, causal, id=case_id)


@pytest.mark.parametrize("scale", [None, 0.7], ids=["default_scale", "scale_0.7"])
@pytest.mark.parametrize("q_shape, k_shape, v_shape, mask_spec, causal", list(_sdpa_params()))
def test_attention_fast_equals_loop_and_reference(q_shape, k_shape, v_shape, mask_spec, causal, scale):
    rng = np.random.default_rng(0)
    q, k, v = random_qkv(rng, q_shape, k_shape, v_shape)
    mask = make_mask(rng, mask_spec)
    batch = expected_batch(q_shape, k_shape, v_shape, mask=mask)
    n, m, d_v = q_shape[-2], k_shape[-2], v_shape[-1]

    out_ref, w_ref = reference_attention(q, k, v, mask, scale=scale, causal=causal)
    out_loop, w_loop = scaled_dot_product_attention_loop(q, k, v, mask, scale=scale, causal=causal)
    out, w = scaled_dot_product_attention(q, k, v, mask, scale=scale, causal=causal)

    for got_out, got_w in ((out, w), (out_loop, w_loop)):
        assert got_out.shape == batch + (n, d_v)
        assert got_w.shape == batch + (n, m)
        np.testing.assert_allclose(got_w, w_ref, **F64)
        np.testing.assert_allclose(got_out, out_ref, **F64)
    np.testing.assert_allclose(w, w_loop, **F64)
    np.testing.assert_allclose(out, out_loop, **F64)


@pytest.mark.parametrize("scale", [None, 0.7], ids=["default_scale", "scale_0.7"])
@pytest.mark.parametrize("q_shape, k_shape, mask_spec, causal", list(_scores_params()))
def test_scores_fast_equals_loop_and_reference(q_shape, k_shape, mask_spec, causal, scale):
    rng = np.random.default_rng(1)
    q, k = rng.standard_normal(q_shape), rng.standard_normal(k_shape)
    mask = make_mask(rng, mask_spec)
    expected = reference_scores(q, k, mask, scale=scale, causal=causal)
    for kernel in (attention_scores, attention_scores_loop):
        got = kernel(q, k, mask, scale=scale, causal=causal)
        assert got.shape == expected.shape
        # assert_allclose also requires the -inf entries at the same places
        np.testing.assert_allclose(got, expected, **F64)


# Big enough that the fast kernel splits the query rows into several tiles
# (with its current tiling, 8 MiB and >= 128 rows per tile: 128 + 32 rows).
LONG_N, LONG_M = 160, 8200


@pytest.mark.parametrize(
    "mask_spec, causal",
    [
        pytest.param(None, False, id="no_mask"),
        pytest.param((LONG_N, LONG_M), False, id="mask_n_m"),
        pytest.param((1, LONG_M), False, id="mask_1_m"),
        pytest.param((LONG_M,), False, id="mask_m"),
        pytest.param((LONG_N, 1), False, id="mask_n_1"),
        pytest.param((2, 1, LONG_N, LONG_M), False, id="mask_leading"),
        pytest.param(None, True, id="causal"),
        pytest.param((LONG_N, LONG_M), True, id="causal_and_mask"),
    ],
)
def test_long_sequences_use_several_row_tiles(mask_spec, causal):
    rng = np.random.default_rng(2)
    q, k, v = random_qkv(rng, (LONG_N, 2), (LONG_M, 2), (LONG_M, 3))
    mask = make_mask(rng, mask_spec)
    if mask is not None and mask.ndim >= 2 and mask.shape[-2] > 1:
        mask[..., [5, 140], :] = False  # a fully masked query row in each tile
    out_ref, w_ref = reference_attention(q, k, v, mask, causal=causal)
    out, w = scaled_dot_product_attention(q, k, v, mask, causal=causal)
    np.testing.assert_allclose(w, w_ref, **F64)
    np.testing.assert_allclose(out, out_ref, **F64)
    # Guard: this test is only useful while the kernel really tiles these rows.
    tile_rows = getattr(attention_module, "_tile_rows", None)
    if tile_rows is not None:
        assert tile_rows(w) < LONG_N, "make LONG_N / LONG_M bigger: the kernel uses a single tile"


# ---------------------------------------------------------------------------
# The documents' worked examples
# ---------------------------------------------------------------------------

CAT_SAT_Q = np.array([[1, 0, 1, 0], [0, 1, 0, 1]])
CAT_SAT_V = np.array([[2, 3], [5, 7]])
CAT_SAT_MAT_X = np.array([[1, 0], [0, 1], [1, 1]])


@pytest.mark.parametrize("kernel", SDPA.values(), ids=SDPA.keys())
def test_cat_sat_example(kernel):
    """AIAYN Part 2: d_k = 4, default scale 1/2; scores [[1, 0], [0, 1]]."""
    out, weights = kernel(CAT_SAT_Q, CAT_SAT_Q, CAT_SAT_V)
    printed_w = np.array([[0.7311, 0.2689], [0.2689, 0.7311]])
    printed_out = np.array([[2.8068, 4.0758], [4.1932, 5.9242]])
    np.testing.assert_allclose(weights, printed_w, **PRINTED_4)
    np.testing.assert_allclose(out, printed_out, **PRINTED_4)
    # exact: the weights are sigmoid(1) and 1 - sigmoid(1)
    p = 1.0 / (1.0 + math.exp(-1.0))
    np.testing.assert_allclose(weights, [[p, 1 - p], [1 - p, p]], **F64)
    np.testing.assert_allclose(out, [[p, 1 - p], [1 - p, p]] @ CAT_SAT_V, **F64)
    assert out.dtype == weights.dtype == np.float64  # integer inputs


@pytest.mark.parametrize("kernel", SDPA.values(), ids=SDPA.keys())
def test_cat_sat_mat_unscaled_example(kernel):
    """Section 5.2: X = Q = K = V, scale=1.0 (no 1/sqrt(d_k))."""
    x = CAT_SAT_MAT_X
    out, weights = kernel(x, x, x, scale=1.0)
    printed = np.array(
        [[0.4223, 0.1554, 0.4223], [0.1554, 0.4223, 0.4223], [0.2119, 0.2119, 0.5761]]
    )
    np.testing.assert_allclose(weights, printed, **PRINTED_4)
    e = math.e
    a, b = e / (2 * e + 1), 1 / (2 * e + 1)  # scores [1, 0, 1]
    c, d = 1 / (2 + e), e / (2 + e)  # scores [1, 1, 2]
    exact = np.array([[a, b, a], [b, a, a], [c, c, d]])
    np.testing.assert_allclose(weights, exact, **F64)
    np.testing.assert_allclose(out, [[2 * a, a + b], [a + b, 2 * a], [c + d, c + d]], **F64)
    # the default scale (1/sqrt(2)) gives visibly different weights
    _, default_weights = kernel(x, x, x)
    assert np.max(np.abs(default_weights - exact)) > 0.03


def test_cat_sat_scores_example():
    """The attention_scores docstring: d_k = 4, scores divided by sqrt(4) = 2."""
    for kernel in SCORES.values():
        np.testing.assert_allclose(kernel(CAT_SAT_Q, CAT_SAT_Q), [[1.0, 0.0], [0.0, 1.0]], **F64)
        np.testing.assert_allclose(kernel(CAT_SAT_Q, CAT_SAT_Q, scale=1.0), [[2.0, 0.0], [0.0, 2.0]], **F64)


@pytest.mark.parametrize("kernel", SOFTMAX.values(), ids=SOFTMAX.keys())
def test_softmax_docstring_example(kernel):
    w = kernel([1.0, 2.0, 3.0])
    np.testing.assert_allclose(w, [0.0900, 0.2447, 0.6652], **PRINTED_4)
    np.testing.assert_allclose(w, np.exp([1, 2, 3]) / np.exp([1, 2, 3]).sum(), **F64)


# ---------------------------------------------------------------------------
# Against the definition page's masked implementation
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "q_shape, k_shape, v_shape, mask_shape",
    [
        pytest.param((4, 3), (4, 3), (4, 2), (4, 4), id="self_attention"),
        pytest.param((3, 5), (6, 5), (6, 4), (3, 6), id="cross_n_lt_m"),
        pytest.param((2, 4, 3), (2, 5, 3), (2, 5, 2), (2, 1, 5), id="batched_key_padding"),
        pytest.param((2, 2, 4, 3), (2, 2, 4, 3), (2, 2, 4, 3), (2, 1, 4, 4), id="heads"),
    ],
)
@pytest.mark.parametrize("kernel", SDPA.values(), ids=SDPA.keys())
def test_against_definition_page_masked_fill(kernel, q_shape, k_shape, v_shape, mask_shape):
    rng = np.random.default_rng(3)
    q, k, v = random_qkv(rng, q_shape, k_shape, v_shape)
    mask = (rng.random(mask_shape) < 0.5).astype(np.int64)  # 0/1 like the page's `mask == 0`
    mask[(0,) * (mask.ndim - 2) + (0,)] = 0  # query 0 (of the first batch entry) sees nothing
    out_page, w_page = definition_page_attention(q, k, v, mask)
    out, w = kernel(q, k, v, mask)
    kept = np.broadcast_to(np.any(mask != 0, axis=-1), w.shape[:-1])  # rows with a key
    assert kept.any() and not kept.all()
    np.testing.assert_allclose(w[kept], np.broadcast_to(w_page, w.shape)[kept], **F64)
    np.testing.assert_allclose(out[kept], np.broadcast_to(out_page, out.shape)[kept], **F64)
    # where the page gives NaN (softmax of all -inf), the contract gives zeros
    assert np.isnan(np.broadcast_to(w_page, w.shape)[~kept]).all()
    assert np.all(w[~kept] == 0) and np.all(out[~kept] == 0)


# ---------------------------------------------------------------------------
# Scale
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("d_k", [2, 4, 9, 16])
@pytest.mark.parametrize("kernel", SDPA.values(), ids=SDPA.keys())
def test_default_scale_is_one_over_sqrt_dk(kernel, d_k):
    rng = np.random.default_rng(d_k)
    q, k, v = random_qkv(rng, (3, d_k), (4, d_k), (4, 2))
    q = 3 * q  # big enough logits that the scale matters
    out, w = kernel(q, k, v)
    out_explicit, w_explicit = kernel(q, k, v, scale=1 / math.sqrt(d_k))
    out_folded, w_folded = kernel(q / math.sqrt(d_k), k, v, scale=1.0)
    for other_w, other_out in ((w_explicit, out_explicit), (w_folded, out_folded)):
        np.testing.assert_allclose(w, other_w, **F64)
        np.testing.assert_allclose(out, other_out, **F64)
    _, w_wrong = kernel(q, k, v, scale=1 / d_k)  # the classic slip: no sqrt
    assert np.max(np.abs(w - w_wrong)) > 1e-3


@pytest.mark.parametrize("kernel", SCORES.values(), ids=SCORES.keys())
def test_scores_scale(kernel):
    rng = np.random.default_rng(4)
    q, k = rng.standard_normal((3, 9)), rng.standard_normal((5, 9))
    raw = q @ k.T
    np.testing.assert_allclose(kernel(q, k), raw / 3.0, **F64)
    np.testing.assert_allclose(kernel(q, k, scale=1.0), raw, **F64)
    np.testing.assert_allclose(kernel(q, k, scale=-0.25), -0.25 * raw, **F64)
    np.testing.assert_allclose(kernel(q, k, scale=0), np.zeros_like(raw), **F64)


@pytest.mark.parametrize(
    "scale_like",
    [
        pytest.param(1, id="python_int"),
        pytest.param(np.float32(1.0), id="np_float32"),
        pytest.param(np.int64(1), id="np_int64"),
        pytest.param(np.array(1.0), id="0d_array"),
    ],
)
@pytest.mark.parametrize("kernel", SDPA.values(), ids=SDPA.keys())
def test_scale_accepts_any_real_scalar(kernel, scale_like):
    rng = np.random.default_rng(5)
    q, k, v = random_qkv(rng, (2, 3), (4, 3), (4, 2))
    out, w = kernel(q, k, v, scale=scale_like)
    out_1, w_1 = kernel(q, k, v, scale=1.0)
    np.testing.assert_allclose(w, w_1, **F64)
    np.testing.assert_allclose(out, out_1, **F64)


@pytest.mark.parametrize(
    "mask",
    [pytest.param(None, id="no_mask"), pytest.param(FULLY_MASKED_ROWS[[1, 1, 0]], id="masked")],
)
@pytest.mark.parametrize("kernel", SDPA.values(), ids=SDPA.keys())
def test_scale_zero_gives_uniform_weights(kernel, mask):
    rng = np.random.default_rng(6)
    q, k, v = random_qkv(rng, (3, 2), (4, 2), (4, 3))
    out, w = kernel(10 * q, k, v, mask, scale=0.0)
    allowed = reference_allowed(3, 4, mask)
    count = allowed.sum(axis=-1, keepdims=True)
    expected_w = np.divide(allowed, count, out=np.zeros((3, 4)), where=count > 0)
    np.testing.assert_allclose(w, expected_w, **F64)
    np.testing.assert_allclose(out, expected_w @ v, **F64)  # the mean of the allowed values


@pytest.mark.parametrize("kernel", SDPA.values(), ids=SDPA.keys())
def test_negative_scale_flips_preference(kernel):
    out, w = kernel(CAT_SAT_Q, CAT_SAT_Q, CAT_SAT_V, scale=-0.5)
    p = 1.0 / (1.0 + math.exp(-1.0))
    np.testing.assert_allclose(w, [[1 - p, p], [p, 1 - p]], **F64)  # each query now prefers the other key
    rng = np.random.default_rng(7)
    q, k, v = random_qkv(rng, (3, 4), (5, 4), (5, 2))
    out_neg, w_neg = kernel(q, k, v, scale=-0.5)
    out_pos, w_pos = kernel(-q, k, v, scale=0.5)
    np.testing.assert_allclose(w_neg, w_pos, **F64)
    np.testing.assert_allclose(out_neg, out_pos, **F64)
    np.testing.assert_array_equal(np.argmax(w_neg, -1), np.argmin(kernel(q, k, v, scale=0.5)[1], -1))


# ---------------------------------------------------------------------------
# dtypes
# ---------------------------------------------------------------------------

f16, f32, f64, i32, i64 = np.float16, np.float32, np.float64, np.int32, np.int64

DTYPE_TABLE = [
    pytest.param(f32, f32, f32, f32, id="f32_f32_f32->f32"),
    pytest.param(f64, f64, f64, f64, id="f64->f64"),
    pytest.param(f16, f16, f16, f64, id="f16->f64"),
    pytest.param(i64, i64, i64, f64, id="int64->f64"),
    pytest.param(i32, i32, i32, f64, id="int32->f64"),
    pytest.param(f32, f64, f64, f64, id="q_f32_kv_f64->f64"),
    pytest.param(f32, f32, f64, f64, id="qk_f32_v_f64->f64"),
    pytest.param(f32, f32, i32, f64, id="qk_f32_v_int->f64"),
    pytest.param(f16, f32, f32, f64, id="q_f16_kv_f32->f64"),
]


@pytest.mark.parametrize("dq, dk, dv, expected", DTYPE_TABLE)
@pytest.mark.parametrize("kernel", SDPA.values(), ids=SDPA.keys())
def test_attention_dtype_rules(kernel, dq, dk, dv, expected):
    rng = np.random.default_rng(8)
    q, k, v = (3 * a for a in random_qkv(rng, (2, 3, 4), (2, 5, 4), (2, 5, 2)))
    q, k, v = q.astype(dq), k.astype(dk), v.astype(dv)
    mask = rng.random((3, 5)) < 0.7
    for m in (None, mask, mask.astype(np.int8)):  # the mask never changes the dtype
        out, w = kernel(q, k, v, m)
        assert out.dtype == expected and w.dtype == expected
        out_64, w_64 = reference_attention(q, k, v, m)
        tol = F32 if expected == np.float32 else F64
        np.testing.assert_allclose(w, w_64, **tol)
        np.testing.assert_allclose(out, out_64, **tol)


@pytest.mark.parametrize("dq, dk, _dv, expected", DTYPE_TABLE)
@pytest.mark.parametrize("kernel", SCORES.values(), ids=SCORES.keys())
def test_scores_dtype_rules(kernel, dq, dk, _dv, expected):
    q = np.arange(6).reshape(2, 3).astype(dq)
    k = np.arange(12).reshape(4, 3).astype(dk)
    scores = kernel(q, k, causal=True)
    expected_scores = f32 if (dq, dk) == (f32, f32) else f64
    assert scores.dtype == expected_scores


@pytest.mark.parametrize(
    "dtype, expected",
    [
        pytest.param(f32, f32, id="f32->f32"),
        pytest.param(f64, f64, id="f64->f64"),
        pytest.param(f16, f64, id="f16->f64"),
        pytest.param(i64, f64, id="int64->f64"),
        pytest.param(np.uint8, f64, id="uint8->f64"),
    ],
)
@pytest.mark.parametrize("kernel", SOFTMAX.values(), ids=SOFTMAX.keys())
def test_softmax_dtype_rules(kernel, dtype, expected):
    x = np.array([[1, 2, 3], [0, 0, 5]]).astype(dtype)
    w = kernel(x)
    assert w.dtype == expected
    np.testing.assert_allclose(w, reference_softmax(x), **(F32 if expected == f32 else F64))


# ---------------------------------------------------------------------------
# softmax
# ---------------------------------------------------------------------------

X3 = np.random.default_rng(9).standard_normal((2, 3, 4)) * 3


@pytest.mark.parametrize(
    "axis",
    [
        pytest.param(-1, id="axis_-1"),
        pytest.param(2, id="axis_2"),
        pytest.param(0, id="axis_0"),
        pytest.param(1, id="axis_1"),
        pytest.param(-2, id="axis_-2"),
        pytest.param(None, id="axis_None"),
        pytest.param((0, 1), id="axes_0_1"),
        pytest.param((0, 2), id="axes_0_2"),
        pytest.param((-1, -2), id="axes_-1_-2"),
        pytest.param((0, 1, 2), id="axes_all"),
    ],
)
@pytest.mark.parametrize("kernel", SOFTMAX.values(), ids=SOFTMAX.keys())
def test_softmax_axes_like_scipy(kernel, axis):
    w = kernel(X3, axis=axis)
    np.testing.assert_allclose(w, reference_softmax(X3, axis=axis), **F64)
    np.testing.assert_allclose(np.sum(w, axis=axis), 1.0, **F64)


@pytest.mark.parametrize(
    "axis",
    [
        pytest.param(-1, id="axis_-1"),
        pytest.param(0, id="axis_0"),
        pytest.param(1, id="axis_1"),
        pytest.param(None, id="axis_None"),
        pytest.param((0, 2), id="axes_0_2"),
        pytest.param((-1, -3), id="axes_-1_-3"),
        pytest.param((0, 1, 2), id="axes_all"),
    ],
)
def test_softmax_loop_axes_like_softmax(axis):
    np.testing.assert_allclose(softmax_loop(X3, axis=axis), softmax(X3, axis=axis), **F64)


@pytest.mark.parametrize("temperature", [0.1, 0.5, 2.0, 37.0])
@pytest.mark.parametrize("kernel", SOFTMAX.values(), ids=SOFTMAX.keys())
def test_softmax_temperature_divides_logits(kernel, temperature):
    got = kernel(X3, temperature=temperature)
    np.testing.assert_allclose(got, reference_softmax(X3 / temperature), **F64)
    np.testing.assert_allclose(got, kernel(X3 / temperature), **F64)


@pytest.mark.parametrize("kernel", SOFTMAX.values(), ids=SOFTMAX.keys())
def test_softmax_temperature_extremes(kernel):
    x = np.array([0.3, 2.0, -1.0, 2.0 - 1e-9])
    big = kernel(x, temperature=1e12)  # flat
    np.testing.assert_allclose(big, 0.25, rtol=0, atol=1e-9)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sharp = kernel(x, temperature=1e-300)  # argmax, one-hot
    np.testing.assert_array_equal(sharp, [0.0, 1.0, 0.0, 0.0])


@pytest.mark.parametrize(
    "x, axis, expected",
    [
        pytest.param([0.0, -np.inf, 0.0], -1, [0.5, 0.0, 0.5], id="one_minus_inf"),
        pytest.param([-np.inf, -np.inf], -1, [0.0, 0.0], id="all_minus_inf"),
        pytest.param([[1.0, -np.inf], [-np.inf, -np.inf]], -1, [[1.0, 0.0], [0.0, 0.0]], id="rowwise"),
        pytest.param([[1.0, -np.inf], [-np.inf, -np.inf]], 0, [[1.0, 0.0], [0.0, 0.0]], id="axis_0"),
        pytest.param([1e5, 0.0, -np.inf], -1, [1.0, 0.0, 0.0], id="docstring_1e5"),
    ],
)
@pytest.mark.parametrize("kernel", SOFTMAX.values(), ids=SOFTMAX.keys())
def test_softmax_minus_inf_gives_exact_zeros(kernel, x, axis, expected):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        w = kernel(np.array(x), axis=axis)
    np.testing.assert_array_equal(w, expected)  # exact zeros, no NaN


@pytest.mark.parametrize("kernel", SOFTMAX.values(), ids=SOFTMAX.keys())
def test_softmax_all_minus_inf_whole_array(kernel):
    x = np.full((2, 3), -np.inf)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(kernel(x, axis=None), np.zeros((2, 3)))
        np.testing.assert_array_equal(kernel(x, axis=(0, 1)), np.zeros((2, 3)))


@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 4)], ids=["0", "3x0", "0x4"])
@pytest.mark.parametrize("kernel", SOFTMAX.values(), ids=SOFTMAX.keys())
def test_softmax_empty(kernel, shape):
    w = kernel(np.zeros(shape))
    assert w.shape == shape


@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 4)], ids=["1d", "2d", "3d"])
@pytest.mark.parametrize("axis", [-1, 0])
def test_softmax_fast_equals_loop(shape, axis):
    x = np.random.default_rng(10).standard_normal(shape) * 4
    x.flat[0] = -np.inf
    np.testing.assert_allclose(softmax(x, axis=axis), softmax_loop(x, axis=axis), **F64)


# ---------------------------------------------------------------------------
# No warnings on the hard inputs (warnings are errors here)
# ---------------------------------------------------------------------------


def _no_warnings(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(over="warn", divide="warn", invalid="warn"):
            return fn(*args, **kwargs)


@pytest.mark.parametrize(
    "x, temperature, expected",
    [
        pytest.param([1e5, 1e5 - 1.0], 1.0, [1 / (1 + math.exp(-1)), 1 / (1 + math.exp(1))], id="logits_1e5"),
        pytest.param([-1e5, -1e5 - 1.0], 1.0, [1 / (1 + math.exp(-1)), 1 / (1 + math.exp(1))], id="logits_-1e5"),
        pytest.param([1e5, -1e5, 0.0], 1.0, [1.0, 0.0, 0.0], id="spread_2e5"),
        pytest.param([1.0, 2.0, 3.0], 1e-300, [0.0, 0.0, 1.0], id="temperature_1e-300"),
        pytest.param([2.0, 2.0, 1.0], 1e-300, [0.5, 0.5, 0.0], id="temperature_1e-300_tie"),
        pytest.param([1e5, 0.0, -1e5], 1e-300, [1.0, 0.0, 0.0], id="temperature_1e-300_logits_1e5"),
        pytest.param([1.0, -np.inf, 3.0], 1e-300, [0.0, 0.0, 1.0], id="temperature_1e-300_minus_inf"),
        pytest.param([-np.inf, -np.inf], 1e-300, [0.0, 0.0], id="temperature_1e-300_all_minus_inf"),
    ],
)
@pytest.mark.parametrize(
    "dtype",
    [pytest.param(np.float64, id="f64"), pytest.param(np.float32, id="f32")],
)
@pytest.mark.parametrize("kernel", SOFTMAX.values(), ids=SOFTMAX.keys())
def test_softmax_hard_inputs_do_not_warn(kernel, dtype, x, temperature, expected):
    w = _no_warnings(kernel, np.array(x, dtype=dtype), temperature=temperature)
    assert w.dtype == dtype
    tol = dict(rtol=1e-6, atol=1e-7) if dtype is np.float32 else F64
    np.testing.assert_allclose(w, expected, **tol)
    assert np.all(np.isfinite(w))


@pytest.mark.parametrize("kernel", SDPA.values(), ids=SDPA.keys())
def test_attention_hard_inputs_do_not_warn(kernel):
    """1e5 logits, fully masked rows, blocked keys: no warning, no NaN."""
    q = np.array([[1e5, 0.0], [0.0, 1e5], [1.0, 1.0], [3.0, -2.0], [-1e5, -1e5]])
    k = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    v = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    mask = np.array(
        [[True, True, False], [True, True, True], [False, False, False], [True, False, True], [True, True, True]]
    )
    out, w = _no_warnings(kernel, q, k, v, mask, scale=1.0)
    np.testing.assert_allclose(w[0], [1.0, 0.0, 0.0], **F64)  # key 2 (also 1e5) is blocked
    np.testing.assert_allclose(w[1], [0.0, 0.5, 0.5], **F64)  # tie at 1e5
    np.testing.assert_array_equal(w[2], 0.0)
    np.testing.assert_array_equal(out[2], 0.0)
    np.testing.assert_allclose(w[3], reference_attention(q, k, v, mask, scale=1.0)[1][3], **F64)
    np.testing.assert_allclose(w[4], [0.5, 0.5, 0.0], **F64)  # scores -1e5, -1e5, -2e5: exp underflows
    np.testing.assert_allclose(out, w @ v, **F64)
    out_c, w_c = _no_warnings(kernel, q, k, v, mask, causal=True)
    assert np.all(np.isfinite(out_c)) and np.all(np.isfinite(w_c))


@pytest.mark.parametrize("kernel", SCORES.values(), ids=SCORES.keys())
def test_scores_and_softmax_of_blocked_entries_do_not_warn(kernel):
    q = np.array([[1.0, 2.0], [3.0, 4.0]])
    mask = np.array([[False, False], [True, False]])
    scores = _no_warnings(kernel, q, q, mask)
    assert np.isneginf(scores[~mask]).all() and np.isfinite(scores[mask]).all()
    w = _no_warnings(softmax, scores)
    np.testing.assert_array_equal(w, [[0.0, 0.0], [1.0, 0.0]])


def test_entropy_of_zeros_does_not_warn():
    h = _no_warnings(entropy, np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 0.0]]))
    np.testing.assert_array_equal(h, [0.0, 0.0])


# ---------------------------------------------------------------------------
# Masks: causal, integer, combined, fully masked, padding
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "n, m",
    [(4, None), (1, 1), (3, 5), (5, 3), (1, 4), (4, 1), (0, 3), (3, 0)],
    ids=lambda v: str(v),
)
def test_causal_mask_is_top_left_tril(n, m):
    mask = causal_mask(n) if m is None else causal_mask(n, m)
    expected = np.tril(np.ones((n, n if m is None else m)), 0).astype(bool)  # PyTorch is_causal
    assert mask.dtype == np.bool_
    np.testing.assert_array_equal(mask, expected)


@pytest.mark.parametrize("n, m", [(4, 4), (3, 5), (5, 3), (1, 4), (4, 1)], ids=lambda v: str(v))
@pytest.mark.parametrize("kernel", SDPA.values(), ids=SDPA.keys())
def test_causal_attention_pattern_is_tril(kernel, n, m):
    rng = np.random.default_rng(11)
    q, k, v = random_qkv(rng, (n, 3), (m, 3), (m, 2))
    tril = np.tril(np.ones((n, m)), 0).astype(bool)
    out, w = kernel(q, k, v, causal=True)
    np.testing.assert_array_equal(w > 0, tril)  # exactly the keys 0..i
    out_mask, w_mask = kernel(q, k, v, tril)
    np.testing.assert_allclose(w, w_mask, **F64)
    np.testing.assert_allclose(out, out_mask, **F64)
    np.testing.assert_allclose(out[0], v[0], **F64)  # query 0 sees key 0 only
    scores = attention_scores(q, k, causal=True)
    np.testing.assert_array_equal(np.isneginf(scores), ~tril)


@pytest.mark.parametrize("kernel", SDPA.values(), ids=SDPA.keys())
def test_mask_and_causal_combine_by_and(kernel):
    rng = np.random.default_rng(12)
    q, k, v = random_qkv(rng, (2, 5, 3), (2, 5, 3), (2, 5, 2))
    mask = rng.random((2, 5, 5)) < 0.6
    both = kernel(q, k, v, mask, causal=True)
    anded = kernel(q, k, v, mask & np.tril(np.ones((5, 5), bool)))
    for got, expected in zip(both, anded):
        np.testing.assert_allclose(got, expected, **F64)
    np.testing.assert_array_equal(both[1] > 0, mask & np.tril(np.ones((5, 5), bool)))


@pytest.mark.parametrize(
    "dtype", [np.int8, np.uint8, np.int32, np.int64], ids=lambda d: np.dtype(d).name
)
@pytest.mark.parametrize("mask_shape", [(3, 4), (1, 4), (2, 3, 4)], ids=["n_m", "1_m", "B_n_m"])
def test_integer_mask_equals_boolean_mask(dtype, mask_shape):
    rng = np.random.default_rng(13)
    q, k, v = random_qkv(rng, (3, 2), (4, 2), (4, 3))
    mask = rng.random(mask_shape) < 0.5
    mask[..., 0] = False  # make sure something is blocked
    mask[..., 1] = True
    int_mask = mask.astype(dtype)
    for kernel in SDPA.values():
        for got, expected in zip(kernel(q, k, v, int_mask), kernel(q, k, v, mask)):
            np.testing.assert_array_equal(got, expected)
    for kernel in SCORES.values():
        np.testing.assert_array_equal(kernel(q, k, int_mask), kernel(q, k, mask))
    # and the mask really acts: blocked keys get zero weight
    assert np.all(scaled_dot_product_attention(q, k, v, int_mask)[1][..., 0] == 0)


@pytest.mark.parametrize("kernel", SDPA.values(), ids=SDPA.keys())
def test_fully_masked_rows_are_zero_not_nan_not_uniform(kernel):
    rng = np.random.default_rng(14)
    q, k, v = random_qkv(rng, (3, 2), (4, 2), (4, 3))
    v = v + 5.0  # so that a uniform row would give a visibly non-zero output
    out, w = kernel(q, k, v, FULLY_MASKED_ROWS)
    for row in (0, 2):
        np.testing.assert_array_equal(w[row], np.zeros(4))
        np.testing.assert_array_equal(out[row], np.zeros(3))
    np.testing.assert_allclose(w[1].sum(), 1.0, **F64)
    assert w[1, 1] == 0 and w[1, 3] == 0
    out_all, w_all = kernel(q, k, v, np.zeros((3, 4), dtype=bool))
    np.testing.assert_array_equal(w_all, np.zeros((3, 4)))
    np.testing.assert_array_equal(out_all, np.zeros((3, 3)))


@pytest.mark.parametrize("kernel", SDPA.values(), ids=SDPA.keys())
@pytest.mark.parametrize(
    "q_shape, k_shape, v_shape",
    [
        pytest.param((3, 4), (0, 4), (0, 2), id="m0"),
        pytest.param((2, 3, 4), (2, 0, 4), (2, 0, 5), id="m0_batched"),
        pytest.param((0, 4), (3, 4), (3, 2), id="n0"),
    ],
)
def test_empty_sequences(kernel, q_shape, k_shape, v_shape):
    q, k, v = np.ones(q_shape), np.ones(k_shape), np.ones(v_shape)
    out, w = kernel(q, k, v)
    assert out.shape == q_shape[:-1] + v_shape[-1:]
    assert w.shape == q_shape[:-1] + k_shape[-2:-1]
    np.testing.assert_array_equal(out, np.zeros(out.shape))


@pytest.mark.parametrize(
    "lengths, m, expected",
    [
        pytest.param(3, 4, [[True, True, True, False]], id="scalar"),
        pytest.param(np.int64(0), 3, [[False, False, False]], id="scalar_zero"),
        pytest.param(0, 0, np.zeros((1, 0), bool), id="m0"),
        pytest.param([2, 4], 4, [[[1, 1, 0, 0]], [[1, 1, 1, 1]]], id="batch_2"),
        pytest.param(
            [[1, 0], [4, 2]], 4,
            [[[[1, 0, 0, 0]], [[0, 0, 0, 0]]], [[[1, 1, 1, 1]], [[1, 1, 0, 0]]]],
            id="batch_2x2",
        ),
    ],
)
def test_padding_mask_shapes_and_values(lengths, m, expected):
    mask = padding_mask(lengths, m)
    expected = np.array(expected, dtype=bool)
    assert mask.dtype == np.bool_
    assert mask.shape == np.shape(lengths) + (1, m)
    np.testing.assert_array_equal(mask, expected)


@pytest.mark.parametrize("kernel", SDPA.values(), ids=SDPA.keys())
def test_padding_mask_equals_truncated_keys(kernel):
    rng = np.random.default_rng(15)
    lengths = [2, 4, 0]
    q, k, v = random_qkv(rng, (3, 3, 2), (3, 4, 2), (3, 4, 5))
    out, w = kernel(q, k, v, padding_mask(lengths, 4))
    for b, length in enumerate(lengths):
        out_b, w_b = kernel(q[b], k[b, :length], v[b, :length])
        np.testing.assert_allclose(out[b], out_b, **F64)
        np.testing.assert_allclose(w[b, :, :length], w_b, **F64)
        np.testing.assert_array_equal(w[b, :, length:], 0.0)
    np.testing.assert_array_equal(out[2], 0.0)  # no valid key at all


# ---------------------------------------------------------------------------
# entropy and attention_flops
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("m", [1, 2, 3, 7, 64])
def test_entropy_of_uniform_is_log_m(m):
    np.testing.assert_allclose(entropy(np.full(m, 1.0 / m)), math.log(m), **F64)


@pytest.mark.parametrize("hot", [0, 2, 4])
def test_entropy_of_one_hot_is_zero(hot):
    h = entropy(np.eye(5)[hot])
    assert h == 0.0 and not np.signbit(h)  # 0 log 0 = 0, and no -0.0


def test_entropy_matches_definition():
    rng = np.random.default_rng(16)
    w = softmax(rng.standard_normal((2, 3, 6)) * 2)
    w[0, 0, 1] = 0.0  # a zero term
    terms = np.zeros_like(w)
    np.multiply(w, np.log(w, where=w > 0, out=np.zeros_like(w)), out=terms, where=w > 0)
    expected = -terms.sum(axis=-1)
    h = entropy(w)
    assert h.shape == (2, 3)
    np.testing.assert_allclose(h, expected, **F64)
    np.testing.assert_allclose(entropy(w, axis=0), -terms.sum(axis=0), **F64)
    p = 1.0 / (1.0 + math.exp(-1.0))  # the cat-sat rows
    _, cat_sat_w = scaled_dot_product_attention(CAT_SAT_Q, CAT_SAT_Q, CAT_SAT_V)
    np.testing.assert_allclose(entropy(cat_sat_w), -(p * math.log(p) + (1 - p) * math.log(1 - p)), **F64)


@pytest.mark.parametrize(
    "n, m, d_k, d_v, expected",
    [
        pytest.param(1000, 1000, 512, 512, 2_048_000_000, id="section_5_2_exercise_3"),
        pytest.param(1, 1, 1, 1, 4, id="one_of_each"),
        pytest.param(2, 3, 4, 5, 2 * 2 * 3 * (4 + 5), id="all_different"),
        pytest.param(3, 7, 64, 0, 2 * 3 * 7 * 64, id="d_v_0"),
        pytest.param(0, 10, 8, 8, 0, id="n0"),
        pytest.param(4096, 4096, 64, 64, 4 * 4096 * 4096 * 64, id="4nmd"),
        pytest.param(np.int64(10), 20, 30, 40, 2 * 10 * 20 * 70, id="numpy_int"),
    ],
)
def test_attention_flops(n, m, d_k, d_v, expected):
    got = attention_flops(n, m, d_k, d_v)
    assert got == expected
    assert got == 2 * n * m * d_k + 2 * n * m * d_v  # q k^T plus weights @ v, 2 FLOPs per multiply-add
    assert isinstance(got, int)


# ---------------------------------------------------------------------------
# Bad input: ValueError naming the argument and showing what was received
# ---------------------------------------------------------------------------


def z(*shape, dtype=np.float64):
    return np.zeros(shape, dtype=dtype)


def esc(text):
    return re.escape(text)


Q23, K43, V42 = z(2, 3), z(4, 3), z(4, 2)

# (id, q, k, v, extra kwargs, match)
QKV_ERRORS = [
    ("d_k_q_vs_k", z(2, 3), z(4, 5), V42, {},
     r"d_k.*" + esc("q.shape=(2, 3)") + ".*" + esc("k.shape=(4, 5)")),
    ("m_k_vs_v", Q23, K43, z(5, 2), {},
     r"\bm\b.*" + esc("k.shape=(4, 3)") + ".*" + esc("v.shape=(5, 2)")),
    ("batch_q_vs_k", z(2, 2, 3), z(3, 4, 3), z(3, 4, 2), {},
     r"do not broadcast.*" + esc("q.shape=(2, 2, 3)") + ".*" + esc("k.shape=(3, 4, 3)")),
    ("batch_k_vs_v", Q23, z(2, 4, 3), z(3, 4, 2), {},
     r"do not broadcast.*" + esc("k.shape=(2, 4, 3)") + ".*" + esc("v.shape=(3, 4, 2)")),
    ("mask_tail_1d", Q23, K43, V42, {"mask": np.ones(3, bool)},
     r"mask.*broadcast.*" + esc("(..., 2, 4)") + ".*" + esc("mask.shape=(3,)")),
    ("mask_tail_transposed", Q23, K43, V42, {"mask": np.ones((4, 2), bool)},
     r"mask.*broadcast.*" + esc("(..., 2, 4)") + ".*" + esc("mask.shape=(4, 2)")),
    ("mask_leading_dims", z(2, 2, 3), K43, V42, {"mask": np.ones((3, 2, 4), bool)},
     r"mask.*broadcast.*" + esc("mask.shape=(3, 2, 4)") + ".*" + esc("q.shape=(2, 2, 3)")),
    ("mask_float64", Q23, K43, V42, {"mask": np.ones((2, 4))},
     r"mask must be boolean.*float64.*ambiguous"),
    ("mask_float32_01", Q23, K43, V42, {"mask": np.eye(2, 4, dtype=np.float32)},
     r"mask must be boolean.*float32.*ambiguous"),
    ("mask_strings", Q23, K43, V42, {"mask": np.full((2, 4), "y")},
     r"mask must be boolean.*dtype <U1"),
    ("scale_inf", Q23, K43, V42, {"scale": np.inf}, r"scale must be a finite real number.*got inf"),
    ("scale_minus_inf", Q23, K43, V42, {"scale": -np.inf}, r"scale must be a finite real number.*got -inf"),
    ("scale_nan", Q23, K43, V42, {"scale": np.nan}, r"scale must be a finite real number.*got nan"),
    ("scale_string", Q23, K43, V42, {"scale": "0.5"}, r"scale must be a finite real number.*got '0\.5'"),
    ("scale_vector", Q23, K43, V42, {"scale": [0.5, 0.5]}, r"scale must be a finite real number"),
    ("q_1d", z(3), K43, V42, {}, r"q must have at least 2 dimensions.*" + esc("q.shape=(3,)")),
    ("q_0d", np.float64(1.0), K43, V42, {}, r"q must have at least 2 dimensions.*" + esc("q.shape=()")),
    ("k_1d", Q23, z(3), V42, {}, r"k must have at least 2 dimensions.*" + esc("k.shape=(3,)")),
    ("v_1d", Q23, K43, z(4), {}, r"v must have at least 2 dimensions.*" + esc("v.shape=(4,)")),
    ("q_strings", np.full((2, 3), "a"), K43, V42, {}, r"\bq must hold real numbers.*dtype <U1"),
    ("q_object", np.empty((2, 3), dtype=object), K43, V42, {}, r"\bq must hold real numbers.*dtype object"),
    ("q_bool", z(2, 3, dtype=bool), K43, V42, {}, r"\bq must hold real numbers.*dtype bool"),
    ("k_complex", Q23, z(4, 3, dtype=complex), V42, {}, r"\bk must hold real numbers.*dtype complex128"),
    ("v_bool", Q23, K43, z(4, 2, dtype=bool), {}, r"\bv must hold real numbers.*dtype bool"),
    ("q_ragged", [[1.0, 2.0], [3.0]], K43, V42, {}, r"\bq must be an array of real numbers"),
]


@pytest.mark.parametrize(
    "q, k, v, kwargs, match",
    [pytest.param(*case[1:], id=case[0]) for case in QKV_ERRORS],
)
@pytest.mark.parametrize("kernel", SDPA.values(), ids=SDPA.keys())
def test_attention_rejects_bad_input(kernel, q, k, v, kwargs, match):
    with pytest.raises(ValueError, match=match):
        kernel(q, k, v, **kwargs)


SCORES_ERRORS = [
    case for case in QKV_ERRORS
    if case[0] not in ("m_k_vs_v", "batch_k_vs_v", "v_1d", "v_bool")  # v is not an argument
]


@pytest.mark.parametrize(
    "q, k, kwargs, match",
    [pytest.param(c[1], c[2], c[4], c[5], id=c[0]) for c in SCORES_ERRORS],
)
@pytest.mark.parametrize("kernel", SCORES.values(), ids=SCORES.keys())
def test_scores_reject_bad_input(kernel, q, k, kwargs, match):
    with pytest.raises(ValueError, match=match):
        kernel(q, k, **kwargs)


@pytest.mark.parametrize(
    "x, temperature, match",
    [
        pytest.param([1.0, 2.0], 0, r"temperature must be a finite real number > 0: got 0\.0", id="t_0"),
        pytest.param([1.0, 2.0], -1.0, r"temperature must be a finite real number > 0: got -1\.0", id="t_neg"),
        pytest.param([1.0, 2.0], np.inf, r"temperature must be a finite real number > 0: got inf", id="t_inf"),
        pytest.param([1.0, 2.0], np.nan, r"temperature must be a finite real number > 0: got nan", id="t_nan"),
        pytest.param([1.0, 2.0], "1", r"temperature must be a finite real number > 0: got '1'", id="t_str"),
        pytest.param([1.0, 2.0], None, r"temperature must be a finite real number > 0: got None", id="t_none"),
        pytest.param(["a", "b"], 1.0, r"\bx must hold real numbers.*dtype <U1", id="x_strings"),
        pytest.param([True, False], 1.0, r"\bx must hold real numbers.*dtype bool", id="x_bool"),
        pytest.param([1j, 2.0], 1.0, r"\bx must hold real numbers.*dtype complex128", id="x_complex"),
        pytest.param(np.array([1.0, None]), 1.0, r"\bx must hold real numbers.*dtype object", id="x_object"),
    ],
)
@pytest.mark.parametrize("kernel", SOFTMAX.values(), ids=SOFTMAX.keys())
def test_softmax_rejects_bad_input(kernel, x, temperature, match):
    with pytest.raises(ValueError, match=match):
        kernel(x, temperature=temperature)


@pytest.mark.parametrize(
    "call, match",
    [
        pytest.param(lambda: causal_mask(-1), r"\bn must be a non-negative integer: got -1", id="causal_n_neg"),
        pytest.param(lambda: causal_mask(2, -3), r"\bm must be a non-negative integer: got -3", id="causal_m_neg"),
        pytest.param(lambda: causal_mask(2.5), r"\bn must be a non-negative integer: got 2\.5", id="causal_n_float"),
        pytest.param(lambda: causal_mask(True), r"\bn must be a non-negative integer: got True", id="causal_n_bool"),
        pytest.param(lambda: padding_mask([1, 5], 4), r"valid_lengths must lie in 0\.\.m = 0\.\.4: got \[1, 5\]",
                     id="pad_too_long"),
        pytest.param(lambda: padding_mask([-1], 3), r"valid_lengths must lie in 0\.\.m = 0\.\.3: got \[-1\]",
                     id="pad_negative"),
        pytest.param(lambda: padding_mask([1.5], 3), r"valid_lengths must be integers: got dtype float64",
                     id="pad_float"),
        pytest.param(lambda: padding_mask(1, -2), r"\bm must be a non-negative integer: got -2", id="pad_m_neg"),
        pytest.param(lambda: attention_flops(-1, 1, 1, 1), r"\bn must be a non-negative integer: got -1",
                     id="flops_n_neg"),
        pytest.param(lambda: attention_flops(1, 2.0, 1, 1), r"\bm must be a non-negative integer: got 2\.0",
                     id="flops_m_float"),
        pytest.param(lambda: attention_flops(1, 1, -8, 1), r"\bd_k must be a non-negative integer: got -8",
                     id="flops_dk_neg"),
        pytest.param(lambda: attention_flops(1, 1, 1, True), r"\bd_v must be a non-negative integer: got True",
                     id="flops_dv_bool"),
        pytest.param(lambda: entropy([["a", "b"]]), r"\bweights must hold real numbers.*dtype <U1",
                     id="entropy_strings"),
    ],
)
def test_helpers_reject_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ---------------------------------------------------------------------------
# Inputs are never modified
# ---------------------------------------------------------------------------


def _inputs(dtype):
    rng = np.random.default_rng(17)
    q, k, v = (a.astype(dtype) for a in random_qkv(rng, (2, 3, 4), (2, 5, 4), (2, 5, 3)))
    q[0, 0, 0] = 1e5  # a big logit
    mask = rng.random((2, 3, 5)) < 0.6
    mask[0, 1] = False  # a fully masked row
    return q, k, v, mask


CALLS = {
    "sdpa": lambda q, k, v, mask: scaled_dot_product_attention(q, k, v, mask, scale=0.3),
    "sdpa_causal_int_mask":
        lambda q, k, v, mask: scaled_dot_product_attention(q, k, v, mask.astype(np.int8), causal=True),
    "sdpa_loop": lambda q, k, v, mask: scaled_dot_product_attention_loop(q, k, v, mask, causal=True),
    "scores": lambda q, k, v, mask: attention_scores(q, k, mask, scale=1.0),
    "scores_loop": lambda q, k, v, mask: attention_scores_loop(q, k, mask, causal=True),
    "softmax": lambda q, k, v, mask: softmax(q, temperature=0.5),
    "softmax_axis_none": lambda q, k, v, mask: softmax(k, axis=None),
    "softmax_loop": lambda q, k, v, mask: softmax_loop(q, axis=1),
    "entropy": lambda q, k, v, mask: entropy(v),
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("call", CALLS.values(), ids=CALLS.keys())
def test_inputs_are_not_modified(call, dtype):
    q, k, v, mask = _inputs(dtype)
    copies = [a.copy() for a in (q, k, v, mask)]
    call(q, k, v, mask)
    for original, after in zip(copies, (q, k, v, mask)):
        np.testing.assert_array_equal(after, original)
        assert after.dtype == original.dtype
    # read-only inputs: any in-place write inside the kernel would raise
    for a in (q, k, v, mask):
        a.setflags(write=False)
    call(q, k, v, mask)


def test_results_do_not_alias_inputs():
    q, k, v, mask = _inputs(np.float64)
    for fn in (scaled_dot_product_attention, scaled_dot_product_attention_loop):
        out, w = fn(q, k, v, scale=1.0)  # scale 1.0: nothing to multiply, q could be reused
        for a in (q, k, v):
            assert not np.shares_memory(out, a) and not np.shares_memory(w, a)
    assert not np.shares_memory(softmax(q), q)
