"""Issue 14's kernels: positions, the KV cache, half precision, dropout, Nadaraya-Watson."""

import math

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.attention import (
    KVCache,
    attention_dropout,
    causal_mask,
    causal_mask_lower_right,
    incremental_attention,
    low_precision_attention,
    nadaraya_watson,
    nadaraya_watson_loop,
    scaled_dot_product_attention,
    sinusoidal_positions,
    sinusoidal_positions_loop,
    softmax,
    to_bfloat16,
)

# --- sinusoidal positions ---------------------------------------------------


@pytest.mark.parametrize("n, d", [(1, 1), (5, 4), (7, 7), (50, 16), (3, 0), (0, 6)])
def test_sinusoidal_matches_loop_formula(n, d):
    pe = sinusoidal_positions(n, d)
    assert pe.shape == (n, d)
    np.testing.assert_allclose(pe, sinusoidal_positions_loop(n, d), rtol=0, atol=1e-12)


def test_sinusoidal_known_values():
    pe = sinusoidal_positions(4, 6)
    np.testing.assert_array_equal(pe[0], [0, 1, 0, 1, 0, 1])
    # column 0 is sin(pos), column 1 cos(pos): frequency 1
    np.testing.assert_allclose(pe[:, 0], np.sin(np.arange(4)), atol=1e-15)
    np.testing.assert_allclose(pe[:, 1], np.cos(np.arange(4)), atol=1e-15)
    # pair i = 1 uses 10000 ** (2 / 6)
    np.testing.assert_allclose(pe[3, 2], math.sin(3 / 10000 ** (2 / 6)), atol=1e-15)
    np.testing.assert_allclose(pe[3, 5], math.cos(3 / 10000 ** (4 / 6)), atol=1e-15)


def test_sinusoidal_odd_d_last_column_is_sin():
    pe = sinusoidal_positions(6, 5, base=100.0)
    np.testing.assert_allclose(pe[:, 4], np.sin(np.arange(6) / 100.0 ** (4 / 5)), atol=1e-15)
    assert np.all(np.abs(pe) <= 1)


def test_sinusoidal_relative_shift_is_a_rotation():
    # PE[pos + k] is a fixed rotation of PE[pos] in each (sin, cos) pair
    pe = sinusoidal_positions(20, 8)
    w = 1 / 10000 ** (np.arange(4) * 2 / 8)
    shift = 3
    for i in range(4):
        c, s = np.cos(shift * w[i]), np.sin(shift * w[i])
        rot = np.array([[c, -s], [s, c]])  # [sin a, cos a] @ rot = [sin(a + b), cos(a + b)]
        np.testing.assert_allclose(pe[:-shift, 2 * i:2 * i + 2] @ rot, pe[shift:, 2 * i:2 * i + 2], atol=1e-12)


@pytest.mark.parametrize("args", [(-1, 4), (3, 2.0), (3, True), (3, 4, 0.0), (3, 4, np.inf), (3, 4, "x")])
def test_sinusoidal_rejects_bad_input(args):
    with pytest.raises(ValueError):
        sinusoidal_positions(*args)


# --- KV cache and incremental attention ----------------------------------------


@st.composite
def decoding_problem(draw):
    batch = draw(hnp.array_shapes(min_dims=0, max_dims=2, max_side=3))
    n = draw(st.integers(1, 7))
    d_k = draw(st.integers(1, 5))
    d_v = draw(st.integers(1, 4))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    q = rng.standard_normal(batch + (n, d_k)) * draw(st.sampled_from([0.1, 1.0, 10.0]))
    k = rng.standard_normal(batch + (n, d_k))
    v = rng.standard_normal(batch + (n, d_v))
    mask = None
    kind = draw(st.sampled_from(["none", "full", "keys", "batch"]))
    if kind == "full":
        mask = rng.random((n, n)) < 0.7
    elif kind == "keys":
        mask = rng.random((1, n)) < 0.7
    elif kind == "batch":
        mask = rng.random(batch + (n, n)) < 0.7
    dtype = draw(st.sampled_from([np.float64, np.float32]))
    return q.astype(dtype), k.astype(dtype), v.astype(dtype), mask


@settings(max_examples=80, deadline=None)
@given(decoding_problem())
def test_incremental_equals_causal_attention(problem):
    q, k, v, mask = problem
    out = incremental_attention(q, k, v, mask)
    ref = scaled_dot_product_attention(q, k, v, mask, causal=True)[0]
    assert out.shape == ref.shape and out.dtype == ref.dtype
    tol = 1e-5 if q.dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out, ref, rtol=tol, atol=tol)


def test_incremental_without_mask_and_with_broadcast_batch():
    rng = np.random.default_rng(3)
    q = rng.standard_normal((2, 3, 6, 4))
    k = rng.standard_normal((1, 3, 6, 4))  # broadcasts over the first axis
    v = rng.standard_normal((6, 5))
    out = incremental_attention(q, k, v)
    np.testing.assert_allclose(out, scaled_dot_product_attention(q, k, v, causal=True)[0], atol=1e-12)
    # the first row sees only key 0: its output is v[0]
    np.testing.assert_allclose(out[..., 0, :], np.broadcast_to(v[0], (2, 3, 5)), atol=1e-12)


def test_incremental_rejects_different_lengths():
    with pytest.raises(ValueError, match="same length"):
        incremental_attention(np.ones((3, 2)), np.ones((4, 2)), np.ones((4, 2)))


def test_lower_right_mask():
    np.testing.assert_array_equal(causal_mask_lower_right(4), causal_mask(4))
    m = causal_mask_lower_right(2, 5)
    np.testing.assert_array_equal(m, [[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]])
    # as the last rows of the full square causal mask
    np.testing.assert_array_equal(causal_mask_lower_right(3, 7), causal_mask(7)[-3:])
    assert not causal_mask_lower_right(3, 1)[:2].any()


def test_cache_chunk_of_queries_equals_last_rows():
    rng = np.random.default_rng(5)
    q, k, v = rng.standard_normal((3, 9, 4))
    cache = KVCache()
    cache.append(k[:6], v[:6])  # prefill 6 tokens
    cache.append(k[6:], v[6:])  # a chunk of 3 new tokens
    out, weights = cache.attend(q[6:])
    ref_out, ref_w = scaled_dot_product_attention(q, k, v, causal=True)
    np.testing.assert_allclose(out, ref_out[6:], atol=1e-12)
    np.testing.assert_allclose(weights, ref_w[6:], atol=1e-12)
    assert cache.length == 9 and cache.reads == 27


def test_cache_cost_counter_one_token_at_a_time():
    rng = np.random.default_rng(6)
    q, k, v = rng.standard_normal((3, 10, 2))
    cache = KVCache()
    for t in range(10):
        cache.append(k[t:t + 1], v[t:t + 1])
        cache.attend(q[t:t + 1])
    assert cache.reads == 10 * 11 // 2


def test_cache_errors():
    cache = KVCache()
    with pytest.raises(ValueError, match="empty"):
        cache.attend(np.ones((1, 2)))
    cache.append(np.ones((2, 3)), np.ones((2, 4)))
    with pytest.raises(ValueError, match="match the cache"):
        cache.append(np.ones((1, 2)), np.ones((1, 4)))
    with pytest.raises(ValueError, match="same t"):
        cache.append(np.ones((1, 3)), np.ones((2, 4)))
    with pytest.raises(ValueError, match="more tokens"):
        cache.attend(np.ones((3, 3)))


# --- bfloat16 rounding ------------------------------------------------------------


def test_bfloat16_hand_cases():
    eps = 2.0**-7  # bfloat16's spacing just above 1
    cases = {
        1.0: 1.0,
        1 + 2**-8: 1.0,  # a tie between 1 and 1 + 2^-7: to even (1.0)
        1 + 3 * 2**-8: 1 + 2 * eps,  # a tie between 1 + 2^-7 (odd) and 1 + 2^-6: to even
        1 + 2**-8 + 2**-12: 1 + eps,  # just above the tie: up
        1 + 2**-9: 1.0,
        -(1 + 3 * 2**-8): -(1 + 2 * eps),
        256.0 + 1.0: 256.0,  # 257 needs 9 bits: tie, to even
        259.0: 260.0,
        0.0: 0.0,
        np.inf: np.inf,
        -np.inf: -np.inf,
    }
    got = to_bfloat16(list(cases))
    np.testing.assert_array_equal(got, np.array(list(cases.values()), np.float32))
    assert got.dtype == np.float32
    assert np.isnan(to_bfloat16([np.nan]))[0]
    assert to_bfloat16([3.4e38])[0] == np.inf  # beyond bfloat16's largest finite value


def test_bfloat16_keeps_8_significant_bits_and_is_idempotent():
    rng = np.random.default_rng(7)
    x = (rng.standard_normal(10000) * 10.0 ** rng.integers(-30, 30, 10000)).astype(np.float32)
    b = to_bfloat16(x)
    assert np.all(b.view(np.uint32) & 0xFFFF == 0)
    np.testing.assert_array_equal(to_bfloat16(b), b)
    rel = np.abs(b - x) / np.abs(x)
    assert rel.max() <= 2.0**-8 * (1 + 1e-6)  # half of the spacing 2^-7
    # it is the nearest: the neighbours one bfloat16 step away are no closer
    step = np.float32(2.0**-7) * 2.0 ** np.floor(np.log2(np.abs(b)))
    assert np.all(np.abs(b - x) <= np.abs(b + step - x)) and np.all(np.abs(b - x) <= np.abs(b - step - x))


# --- low precision attention --------------------------------------------------------


def _big_qk(n=64, d=128, size=24.0, seed=0):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((n, d)) * size
    k = q + rng.standard_normal((n, d)) * size * 0.1  # keys aligned with their queries
    v = rng.standard_normal((n, d))
    return q, k, v


def test_float16_scores_overflow_and_the_fixes():
    q, k, v = _big_qk()
    raw = (q.astype(np.float32) @ k.T.astype(np.float32)).max()
    assert raw > 65504  # the unscaled product does not fit in float16
    out, w = low_precision_attention(q, k, v, accumulate=None)
    assert np.isnan(out).any() and np.isnan(w).any()
    ref = scaled_dot_product_attention(q, k, v)[0]
    for kwargs in ({"accumulate": None, "prescale": True}, {"accumulate": "float32"}):
        out, w = low_precision_attention(q, k, v, **kwargs)
        assert np.isfinite(out).all()
        np.testing.assert_allclose(out, ref, atol=0.05)


def test_float32_sums_alone_do_not_save_scores_stored_in_float16():
    # accumulate= says where the sums are formed, scores= where the scores are kept
    q, k, v = _big_qk()
    ref = scaled_dot_product_attention(q, k, v)[0]
    out, _ = low_precision_attention(q, k, v, scores="float16")  # float32 sums, float16 scores
    assert np.isnan(out).any()
    kept, _ = low_precision_attention(q, k, v, scores="float32")
    np.testing.assert_allclose(kept, ref, atol=0.05)
    # the default follows accumulate: the calls written before scores= existed are unchanged
    for acc, fmt in (("float32", "float32"), (None, "float16")):
        a = low_precision_attention(q, k, v, accumulate=acc, prescale=True)
        b = low_precision_attention(q, k, v, accumulate=acc, prescale=True, scores=fmt)
        np.testing.assert_array_equal(a[1], b[1])


def test_float32_accumulation_agrees_with_float64_to_16_bit_precision():
    rng = np.random.default_rng(1)
    q, k, v = rng.standard_normal((3, 2, 16, 32))
    ref_out, ref_w = scaled_dot_product_attention(q, k, v, causal=True)
    for fmt, tol in (("float16", 2e-3), ("bfloat16", 2e-2)):
        out, w = low_precision_attention(q, k, v, dtype=fmt, causal=True)
        assert out.shape == ref_out.shape and out.dtype == np.float32
        np.testing.assert_allclose(w, ref_w, atol=tol)
        np.testing.assert_allclose(out, ref_out, atol=4 * tol)
        # every weight is a value of the format
        np.testing.assert_array_equal(w, to_bfloat16(w) if fmt == "bfloat16" else w.astype(np.float16))


def test_bfloat16_weights_are_coarse():
    # 40 nearly equal weights around 1/40 = 0.025: bfloat16 keeps ~3 digits
    rng = np.random.default_rng(2)
    q = rng.standard_normal((1, 8)) * 0.05
    k = rng.standard_normal((40, 8))
    v = np.eye(40)
    exact = scaled_dot_product_attention(q, k, v)[1]
    w16 = low_precision_attention(q, k, v, dtype="bfloat16")[1]
    err = np.abs(w16 - exact).max()
    assert 1e-5 < err <= 0.025 * 2**-8 * 1.01
    assert len(np.unique(w16)) < len(np.unique(exact))


def test_naive_sums_lose_mass_that_float32_keeps():
    # 4096 keys with equal scores: each weight 2^-12; the out = mean of v = 1
    q, k, v = np.zeros((1, 4)), np.zeros((4096, 4)), np.ones((4096, 1))
    naive = low_precision_attention(q, k, v, dtype="bfloat16", accumulate=None)
    good = low_precision_attention(q, k, v, dtype="bfloat16")
    assert good[0][0, 0] == 1.0
    # the running bfloat16 sum of exp(0) = 1 stalls at 256 (256 + 1 rounds to 256)
    np.testing.assert_array_equal(naive[1], np.full((1, 4096), 1 / 256, np.float32))


def test_minus_1e9_in_float16_makes_fully_masked_rows_nan():
    rng = np.random.default_rng(4)
    q, k, v = rng.standard_normal((3, 4, 8))
    mask = np.ones((4, 4), bool)
    mask[1] = False  # row 1 sees nothing
    out, _ = low_precision_attention(q, k, v, mask, mask_value=-1e9)
    assert np.isnan(out[1]).all() and np.isfinite(np.delete(out, 1, axis=0)).all()
    out32 = low_precision_attention(q, k, v, mask, mask_value=-1e9, dtype="bfloat16")[0]
    assert np.isfinite(out32).all()  # bfloat16 holds -1e9: the row is uniform, not NaN
    out, w = low_precision_attention(q, k, v, mask, mask_value=None)
    np.testing.assert_array_equal(out[1], 0)
    np.testing.assert_array_equal(w[1], 0)
    out, w = low_precision_attention(q, k, v, mask, mask_value=-30000.0)
    np.testing.assert_allclose(w[1], 0.25)


@pytest.mark.parametrize("kwargs", [{"dtype": "float8"}, {"accumulate": "float64"},
                                    {"scores": "bfloat16"}, {"scores": "float64"}])
def test_low_precision_rejects_bad_options(kwargs):
    with pytest.raises(ValueError):
        low_precision_attention(np.ones((2, 2)), np.ones((2, 2)), np.ones((2, 2)), **kwargs)


# --- dropout ----------------------------------------------------------------------


def test_dropout_exact_zeros_with_seeded_rng():
    w = softmax(np.random.default_rng(0).standard_normal((50, 40)))
    out = attention_dropout(w, 0.3, np.random.default_rng(11))
    keep = np.random.default_rng(11).random(w.shape) >= 0.3
    assert np.count_nonzero(out == 0) == np.count_nonzero(~keep)
    np.testing.assert_array_equal(out[~keep], 0)
    np.testing.assert_allclose(out[keep], w[keep] / 0.7, rtol=1e-15)


def test_dropout_preserves_the_mean_in_expectation():
    w = softmax(np.random.default_rng(1).standard_normal((4, 6)))
    rng = np.random.default_rng(12)
    mean = np.mean([attention_dropout(w, 0.5, rng) for _ in range(20000)], axis=0)
    # standard error of one entry: w * sqrt(p / (1 - p) / 20000) <= 0.01 * w
    np.testing.assert_allclose(mean, w, rtol=0.05)


def test_dropout_identity_at_zero_and_bad_p():
    w = np.array([[0.2, 0.8]], np.float32)
    out = attention_dropout(w, 0, np.random.default_rng(0))
    np.testing.assert_array_equal(out, w)
    assert out.dtype == np.float32 and out is not w
    for p in (-0.1, 1.0, 1.5, np.nan):
        with pytest.raises(ValueError, match="p must be"):
            attention_dropout(w, p, np.random.default_rng(0))
    with pytest.raises(ValueError, match="rng"):
        attention_dropout(w, 0.5, "seed")


# --- Nadaraya-Watson -----------------------------------------------------------------


def test_nadaraya_watson_equals_softmax_attention_and_loop():
    rng = np.random.default_rng(8)
    x_train = np.sort(rng.uniform(0, 5, 30))
    y_train = np.sin(x_train) + 0.1 * rng.standard_normal(30)
    x_query = np.linspace(0, 5, 11)
    for h in (0.1, 0.5, 2.0):
        y_hat, w = nadaraya_watson(x_query, x_train, y_train, h)
        # as attention: q = x, k = x_i, scores -(x - x_i)^2 / (2 h^2)
        scores = -((x_query[:, None] - x_train[None, :]) ** 2) / (2 * h * h)
        w_ref = softmax(scores)
        np.testing.assert_allclose(w, w_ref, atol=1e-14)
        np.testing.assert_allclose(y_hat, w_ref @ y_train, atol=1e-13)
        # the same weights as dot-product attention: -(x - x_i)^2/2 = x x_i - x_i^2/2 - x^2/2
        q = np.stack([x_query, np.ones_like(x_query)], axis=1)
        k = np.stack([x_train, -x_train**2 / 2], axis=1)
        w_dot = scaled_dot_product_attention(q, k, y_train[:, None], scale=1 / h**2)[1]
        np.testing.assert_allclose(w, w_dot, atol=1e-12)
        np.testing.assert_allclose(y_hat, nadaraya_watson_loop(x_query, x_train, y_train, h)[0], atol=1e-12)


def test_nadaraya_watson_limits_and_multidim():
    x, y = np.array([0.0, 1.0, 2.0]), np.array([1.0, 5.0, 3.0])
    near, _ = nadaraya_watson(x, x, y, 1e-3)  # tiny bandwidth copies the nearest
    np.testing.assert_allclose(near, y, atol=1e-12)
    far, _ = nadaraya_watson(x, x, y, 1e3)  # huge bandwidth: the mean
    np.testing.assert_allclose(far, y.mean(), atol=1e-5)
    rng = np.random.default_rng(9)
    xt, yt, xq = rng.standard_normal((12, 2)), rng.standard_normal((12, 3)), rng.standard_normal((5, 2))
    y_hat, w = nadaraya_watson(xq, xt, yt, 0.7)
    assert y_hat.shape == (5, 3) and w.shape == (5, 12)
    np.testing.assert_allclose(y_hat, nadaraya_watson_loop(xq, xt, yt, 0.7)[0], atol=1e-12)


@pytest.mark.parametrize("query, train", [
    ([1e200], [0.0, 1.0]),  # issue 23: the squared distances overflow; 1 is still the nearer point
    ([-1e250], [-3.0, 0.0, 7.0]),
    ([3e307], [1e307, 2e307, 0.0]),
    ([1e200, 1e-3], [0.0, 1.0]),  # a far row beside an ordinary one
    ([[1e200, 0.0]], [[0.0, 0.0], [1.0, 5.0], [1.0, -5.0]]),  # 2-d: x = 1 wins on the first coordinate
])
def test_nadaraya_watson_far_queries_weigh_the_nearest_point(query, train):
    """Far queries are not averaged: the weight goes to the nearest point, found exactly with fractions."""
    from fractions import Fraction

    xq, xt = np.array(query, dtype=float), np.array(train, dtype=float)
    y = np.arange(1.0, len(xt) + 1)
    y_hat, w = nadaraya_watson(xq, xt, y, 1.0)
    for row, x in zip(w, xq.reshape(len(xq), -1)):
        dist = [sum((Fraction(a) - Fraction(b)) ** 2 for a, b in zip(x, t)) for t in xt.reshape(len(xt), -1)]
        if max(abs(v) for v in x) < 1:  # the ordinary row: the distance form, checked against the loop
            np.testing.assert_allclose(row, nadaraya_watson_loop(x[None], xt, y, 1.0)[1][0], atol=1e-14)
            continue
        expected = np.array([d == min(dist) for d in dist], dtype=float)
        np.testing.assert_array_equal(row, expected / expected.sum())
    assert np.all(np.isfinite(y_hat))


def test_nadaraya_watson_expanded_form_keeps_a_soft_row():
    """Where the distances overflow but their differences do not, the weights stay soft (not just the nearest)."""
    # q = 1e160: (q - x)^2 overflows, but x q - x^2 / 2 differs by 1e160 * 1e-160 = 1 between the keys.
    xq, xt, y = np.array([1e160]), np.array([0.0, 1e-160]), np.array([0.0, 1.0])
    _, w = nadaraya_watson(xq, xt, y, 1.0)
    np.testing.assert_allclose(w[0], softmax(np.array([0.0, 1.0])), rtol=1e-12)


@pytest.mark.parametrize(
    "args",
    [
        (np.zeros(3), np.zeros(4), np.zeros(5), 1.0),
        (np.zeros((3, 2)), np.zeros((4, 3)), np.zeros(4), 1.0),
        (np.zeros(3), np.zeros(4), np.zeros(4), 0.0),
        (np.zeros(3), np.zeros(4), np.zeros(4), -1.0),
    ],
)
def test_nadaraya_watson_rejects_bad_input(args):
    with pytest.raises(ValueError):
        nadaraya_watson(*args)
