"""Tests of helpers.transformer: gradients, determinism, shapes, errors, scores, ablation."""

import html
import math

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from helpers import transformer as tr
from helpers.transformer import (
    Adam,
    AttentionOnlyTransformer,
    head_scores,
    induction_task,
    repeat_masks,
    train_induction,
)

TINY = dict(vocab_size=5, d_model=4, n_layers=2, n_heads=2, max_len=6)


def tiny_model(seed=0):
    return AttentionOnlyTransformer(**TINY, seed=seed, dtype=np.float64)


def tiny_batch(seed=1, n=5):
    rng = np.random.default_rng(seed)
    tokens = rng.integers(0, 5, size=(3, n))
    targets = rng.integers(0, 5, size=(3, n))
    mask = rng.random((3, n)) < 0.7
    mask[0, 0] = True
    return tokens, targets, mask


# ---------------------------------------------------------------------------
# Gradients
# ---------------------------------------------------------------------------


def finite_difference_grads(model, tokens, targets, mask, ablate=None, eps=1e-6):
    """Central differences of model.loss for every entry of every parameter."""
    grads = {}
    for name, w in model.params.items():
        g = np.zeros_like(w)
        for idx in np.ndindex(w.shape):
            old = w[idx]
            w[idx] = old + eps
            plus = model.loss(tokens, targets, mask, ablate=ablate)
            w[idx] = old - eps
            minus = model.loss(tokens, targets, mask, ablate=ablate)
            w[idx] = old
            g[idx] = (plus - minus) / (2 * eps)
        grads[name] = g
    return grads


def max_relative_error(a, b):
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(a) + np.abs(b), 1e-8)))


@pytest.mark.parametrize("ablate", [None, [(0, 1)]])
def test_gradient_of_every_parameter_matches_finite_differences(ablate):
    model = tiny_model()
    tokens, targets, mask = tiny_batch()
    loss, grads = model.loss_and_grads(tokens, targets, mask, ablate=ablate)
    assert loss == pytest.approx(model.loss(tokens, targets, mask, ablate=ablate), rel=1e-12)
    numeric = finite_difference_grads(model, tokens, targets, mask, ablate=ablate)
    assert sorted(grads) == sorted(model.params)
    errors = {}
    for name in model.params:
        assert grads[name].shape == model.params[name].shape, name
        assert grads[name].dtype == np.float64
        errors[name] = max_relative_error(grads[name], numeric[name])
        # Entries the loss does not depend on (unused positions, ablated heads) are exactly 0 in both.
        np.testing.assert_allclose(grads[name], numeric[name], rtol=1e-6, atol=1e-9, err_msg=name)
    print("max relative error per parameter:", {k: f"{v:.1e}" for k, v in errors.items()})
    assert max(errors.values()) < 1e-5
    # Every parameter has a nonzero gradient somewhere (nothing is silently skipped).
    for name in model.params:
        assert np.abs(grads[name]).max() > 1e-6, name


def test_gradient_is_zero_for_unused_positions_and_ablated_heads():
    model = tiny_model()
    tokens, targets, mask = tiny_batch(n=4)
    _, grads = model.loss_and_grads(tokens, targets, mask, ablate=[(1, 0)])
    assert np.all(grads["W_pos"][4:] == 0)  # positions 4, 5 never seen
    for name in ("W_Q", "W_K", "W_V", "W_O"):
        assert np.all(grads[name][1, 0] == 0), name
        assert np.abs(grads[name][1, 1]).max() > 0, name


# ---------------------------------------------------------------------------
# Forward: shapes, causality, ablation
# ---------------------------------------------------------------------------


def test_shapes_and_attributes():
    model = AttentionOnlyTransformer(16, 8, 3, 4, max_len=10, seed=1)
    assert (model.vocab_size, model.d_model, model.n_layers, model.n_heads, model.max_len) == (16, 8, 3, 4, 10)
    tokens = np.arange(14).reshape(2, 7)
    logits, cache = model.forward(tokens)
    assert logits.shape == (2, 7, 16) and logits.dtype == np.float32
    patterns = model.attention_patterns(tokens)
    assert patterns.shape == (2, 3, 4, 7, 7)
    np.testing.assert_allclose(patterns.sum(axis=-1), 1, rtol=1e-5)
    assert np.all(np.triu(np.ones((7, 7)), 1) * patterns == 0)  # causal
    assert model.params["W_Q"].shape == (3, 4, 8, 2) and model.params["W_O"].shape == (3, 4, 2, 8)
    assert model.params["W_pos"].shape == (10, 8) and model.params["W_U"].shape == (8, 16)


def test_forward_matches_a_loop_over_heads():
    """The batched forward pass against one written head by head with plain NumPy."""
    model = tiny_model(seed=3)
    p = model.params
    tokens = np.array([[1, 4, 0, 2, 2], [3, 3, 1, 0, 4]])
    logits, _ = model.forward(tokens)
    for b in range(2):
        x = p["W_E"][tokens[b]] + p["W_pos"][:5]
        for layer in range(2):
            add = np.zeros_like(x)
            for h in range(2):
                q, k, v = (x @ p[w][layer, h] for w in ("W_Q", "W_K", "W_V"))
                s = q @ k.T / math.sqrt(model.d_head)
                s[np.triu_indices(5, 1)] = -np.inf
                a = np.exp(s - s.max(axis=1, keepdims=True))
                a /= a.sum(axis=1, keepdims=True)
                add += a @ v @ p["W_O"][layer, h]
            x = x + add
        np.testing.assert_allclose(logits[b], x @ p["W_U"], rtol=1e-12)


def test_ablation_equals_zeroing_the_heads_output_projection():
    model = tiny_model(seed=2)
    tokens, targets, mask = tiny_batch(seed=4)
    plain_logits, plain = model.forward(tokens)
    logits, cache = model.forward(tokens, ablate=[(0, 1)])
    zeroed = tiny_model(seed=2)
    zeroed.params["W_O"][0, 1] = 0
    expected, _ = zeroed.forward(tokens)
    np.testing.assert_allclose(logits, expected, rtol=1e-12)
    assert not np.allclose(logits, plain_logits)
    # Layer 0's patterns are untouched; layer 1 sees a different stream.
    np.testing.assert_array_equal(cache["weights"][0], plain["weights"][0])
    assert not np.allclose(cache["weights"][1], plain["weights"][1])
    # Ablating a last-layer head leaves every pattern and the stream before it unchanged.
    _, late = model.forward(tokens, ablate=[(1, 0)])
    for layer in range(2):
        np.testing.assert_array_equal(late["weights"][layer], plain["weights"][layer])
    np.testing.assert_array_equal(late["resid"][1], plain["resid"][1])
    assert np.all(late["z"][1][:, 0] == 0) and np.abs(late["z"][1][:, 1]).max() > 0
    # And the loss agrees with the zeroed model.
    assert model.loss(tokens, targets, mask, ablate=[(0, 1)]) == pytest.approx(
        zeroed.loss(tokens, targets, mask), rel=1e-12
    )


def test_loss_is_cross_entropy_computed_by_hand():
    model = tiny_model(seed=5)
    tokens, targets, mask = tiny_batch(seed=6)
    logits, _ = model.forward(tokens)
    total, count = 0.0, 0
    for b, i in zip(*np.nonzero(mask)):
        row = logits[b, i]
        total += math.log(sum(math.exp(z) for z in row)) - row[targets[b, i]]
        count += 1
    assert model.loss(tokens, targets, mask) == pytest.approx(total / count, rel=1e-12)
    uniform = AttentionOnlyTransformer(**TINY, dtype=np.float64)
    uniform.params["W_U"][:] = 0
    assert uniform.loss(tokens, targets) == pytest.approx(math.log(5), rel=1e-12)


# ---------------------------------------------------------------------------
# Bad arguments
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(TINY, d_model=5), "d_model must be divisible by n_heads"),
        (dict(TINY, vocab_size=0), "vocab_size must be a positive integer"),
        (dict(TINY, n_layers=1.5), "n_layers must be a positive integer"),
        (dict(TINY, max_len=True), "max_len must be a positive integer"),
        (dict(TINY, n_heads=-2), "n_heads must be a positive integer"),
    ],
)
def test_constructor_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        AttentionOnlyTransformer(**kwargs)


@pytest.mark.parametrize(
    "tokens, match",
    [
        (np.zeros((1, 3)), r"tokens must hold integer token ids.*float64"),
        (np.zeros((1, 3), dtype=bool), "tokens must hold integer token ids"),
        (np.zeros(3, dtype=int), r"tokens must have shape \(batch, n\): got tokens.shape=\(3,\)"),
        (np.zeros((1, 7), dtype=int), r"n must be <= max_len = 6, got tokens.shape=\(1, 7\)"),
        (np.array([[0, 5]]), r"0..vocab_size-1 = 0..4: got values in 0..5"),
        (np.array([[-1, 2]]), r"got values in -1..2"),
        (np.zeros((1, 0), dtype=int), "at least one"),
        ([["a", "b"]], "integer token ids"),
    ],
)
def test_forward_rejects_bad_tokens(tokens, match):
    model = tiny_model()
    with pytest.raises(ValueError, match=match):
        model.forward(tokens)
    with pytest.raises(ValueError, match=match):
        model.attention_patterns(tokens)


def test_other_bad_arguments():
    model = tiny_model()
    tokens = np.zeros((2, 3), dtype=int)
    with pytest.raises(ValueError, match=r"ablate must hold \(layer, head\) pairs.*got \(2, 0\)"):
        model.forward(tokens, ablate=[(2, 0)])
    with pytest.raises(ValueError, match="ablate must be a list"):
        model.forward(tokens, ablate=3)
    with pytest.raises(ValueError, match=r"targets must have the shape of tokens"):
        model.loss_and_grads(tokens, np.zeros((2, 4), dtype=int))
    with pytest.raises(ValueError, match="mask must be boolean"):
        model.loss_and_grads(tokens, tokens, mask=np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"periods must have shape \(batch,\) = \(2,\)"):
        head_scores(model, tokens, [1, 2, 1])
    with pytest.raises(ValueError, match=r"periods must lie in 2..n-1 = 2..4 .*got values in 2..5"):
        head_scores(AttentionOnlyTransformer(5, 4, 1, 1, 6), np.zeros((2, 5), dtype=int), [2, 5])
    with pytest.raises(ValueError, match=r"periods must lie in 2..n-1 = 2..4 .*got values in 1..2"):
        head_scores(AttentionOnlyTransformer(5, 4, 1, 1, 6), np.zeros((2, 5), dtype=int), [2, 1])
    with pytest.raises(ValueError, match=r"seq_len must be >= start \+ 2 \* min_period = 8"):
        induction_task(2, 7, 16, np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"seq_len must be >= start \+ 2 \* min_period = 11"):
        induction_task(2, 10, 16, np.random.default_rng(0), start=3)
    for bad in ("anywhere", -1, 1.5, True):
        with pytest.raises(ValueError, match="start must be 'random' or a position >= 0"):
            induction_task(2, 10, 16, np.random.default_rng(0), start=bad)
    with pytest.raises(ValueError, match=r"starts must lie in 0..n-1-p"):
        head_scores(AttentionOnlyTransformer(5, 4, 1, 1, 6), np.zeros((2, 5), dtype=int), [2, 2], [0, 3])
    with pytest.raises(ValueError, match=r"starts must have the shape of periods"):
        head_scores(AttentionOnlyTransformer(5, 4, 1, 1, 6), np.zeros((2, 5), dtype=int), [2, 2], [0, 1, 0])
    with pytest.raises(ValueError, match="ablation must be 'zero' or 'mean'"):
        model.forward(tokens, ablate=[(0, 0)], ablation="resample")
    with pytest.raises(ValueError, match="start must be 'random' or 0"):
        tr.load_trained_induction_model(start=4)
    with pytest.raises(ValueError, match="max_period must be >= min_period"):
        induction_task(2, 20, 16, np.random.default_rng(0), min_period=6, max_period=5)
    with pytest.raises(ValueError, match="steps must be a positive integer"):
        train_induction(steps=0)


# ---------------------------------------------------------------------------
# The task and the scores
# ---------------------------------------------------------------------------


def test_induction_task_repeats_with_varied_periods_and_starts():
    tokens, periods, starts = induction_task(500, 24, 16, np.random.default_rng(0))
    assert tokens.shape == (500, 24) and periods.shape == starts.shape == (500,)
    assert np.issubdtype(tokens.dtype, np.integer) and tokens.min() >= 0 and tokens.max() < 16
    assert set(periods.tolist()) == set(range(4, 13))
    assert starts.min() == 0 and (starts + 2 * periods).max() == 24  # the repeat fits, and reaches the end
    assert len(set(starts.tolist())) == 17  # starts 0..16 (16 = 24 - 2 * 4) all occur
    for row, p, s in zip(tokens, periods, starts):
        np.testing.assert_array_equal(row[s + p : s + 2 * p], row[s : s + p])
    # Before and after the repeat the tokens are independent draws: about 1/16 agree with one period back.
    off = [row[i] == row[i - p] for row, p, s in zip(tokens, periods, starts)
           for i in [*range(p, s + p), *range(s + 2 * p, 24)]]
    assert 0.03 < np.mean(off) < 0.1
    again = induction_task(500, 24, 16, np.random.default_rng(0))
    for a, b in zip((tokens, periods, starts), again):
        np.testing.assert_array_equal(a, b)
    short, short_periods, _ = induction_task(50, 10, 16, 1)
    assert short_periods.max() == 5


def test_a_fixed_start_is_the_first_models_layout():
    """start=0 draws exactly what the first stored model was trained on (periods, then tokens)."""
    tokens, periods, starts = induction_task(200, 24, 16, np.random.default_rng(3), start=0)
    rng = np.random.default_rng(3)
    p_by_hand = rng.integers(4, 13, size=200)
    t_by_hand = rng.integers(0, 16, size=(200, 24))
    for row, p in zip(t_by_hand, p_by_hand):
        row[p : 2 * p] = row[:p]
    np.testing.assert_array_equal(periods, p_by_hand)
    np.testing.assert_array_equal(tokens, t_by_hand)
    np.testing.assert_array_equal(starts, 0)
    _, later_periods, later = induction_task(200, 24, 16, 4, start=5)
    assert (later == 5).all() and later_periods.max() == 9  # (24 - 5) // 2


class FakeModel:
    def __init__(self, patterns):
        self.patterns = patterns

    def attention_patterns(self, tokens):
        return self.patterns


def test_head_scores_on_hand_built_patterns():
    n, periods = 10, np.array([3, 5, 8])  # the last repeat is cut off at n - 1
    B = len(periods)
    patterns = np.zeros((B, 1, 3, n, n))
    for b, p in enumerate(periods):
        for i in range(n):
            patterns[b, 0, 0, i, max(i - 1, 0)] = 1  # a perfect previous-token head
            patterns[b, 0, 1, i, i - p + 1 if p <= i <= 2 * p - 2 else 0] = 1  # a perfect induction head
            patterns[b, 0, 2, i, : i + 1] = 1 / (i + 1)  # uniform over the past
    scores = head_scores(FakeModel(patterns), np.zeros((B, n), dtype=int), periods)
    assert set(scores) == {"previous_token", "induction"}
    assert scores["previous_token"].shape == scores["induction"].shape == (1, 3)
    # The uniform head, averaged by hand over the rows each score uses.
    uniform_prev = np.mean([1 / (i + 1) for i in range(1, n)])
    uniform_ind = np.mean([1 / (i + 1) for p in periods for i in range(p, min(2 * p - 1, n))])
    # The induction head's row 1 looks at key 0 = i - 1: one row in nine per sequence.
    np.testing.assert_allclose(scores["previous_token"][0], [1, 1 / 9, uniform_prev], atol=1e-12)
    # A perfect previous-token head is an induction head only where i - p + 1 = i - 1 (never here).
    np.testing.assert_allclose(scores["induction"][0], [0, 1, uniform_ind], atol=1e-12)


def test_repeat_masks_split_the_positions():
    repeat, other = repeat_masks(np.array([3, 4]), 8)
    np.testing.assert_array_equal(repeat[0], [0, 0, 0, 1, 1, 0, 0, 0])
    np.testing.assert_array_equal(repeat[1], [0, 0, 0, 0, 1, 1, 1, 0])
    np.testing.assert_array_equal(other[1], [1, 1, 1, 1, 0, 0, 0, 0])
    assert not np.any(repeat & other)
    moved, moved_other = repeat_masks(np.array([3, 2]), 8, starts=np.array([2, 5]))
    np.testing.assert_array_equal(moved[0], [0, 0, 0, 0, 0, 1, 1, 0])
    np.testing.assert_array_equal(moved[1], [0, 0, 0, 0, 0, 0, 0, 0])  # 5 + 2 = 7 has no next token
    np.testing.assert_array_equal(moved_other[1], [1, 1, 1, 1, 1, 1, 1, 0])


def test_head_scores_follow_the_start():
    """A perfect induction head for repeats at start s scores 1 with the starts, not without them."""
    n, periods, starts = 12, np.array([3, 4]), np.array([4, 2])
    patterns = np.zeros((2, 1, 1, n, n))
    for b, (p, s) in enumerate(zip(periods, starts)):
        for i in range(n):
            patterns[b, 0, 0, i, i - p + 1 if s + p <= i <= s + 2 * p - 2 else 0] = 1
    tokens = np.zeros((2, n), dtype=int)
    assert head_scores(FakeModel(patterns), tokens, periods, starts)["induction"][0, 0] == 1
    assert head_scores(FakeModel(patterns), tokens, periods)["induction"][0, 0] < 0.5


# ---------------------------------------------------------------------------
# Adam and training
# ---------------------------------------------------------------------------


def test_adam_matches_the_textbook_update():
    rng = np.random.default_rng(0)
    w = {"a": rng.standard_normal(3), "b": rng.standard_normal((2, 2))}
    ref = {k: v.copy() for k, v in w.items()}
    m = {k: np.zeros_like(v) for k, v in w.items()}
    s = {k: np.zeros_like(v) for k, v in w.items()}
    opt = Adam(w, lr=0.01)
    for t in range(1, 6):
        grads = {k: rng.standard_normal(v.shape) for k, v in w.items()}
        opt.step(grads)
        for k in ref:
            m[k] = 0.9 * m[k] + 0.1 * grads[k]
            s[k] = 0.999 * s[k] + 0.001 * grads[k] ** 2
            m_hat, s_hat = m[k] / (1 - 0.9**t), s[k] / (1 - 0.999**t)
            ref[k] = ref[k] - 0.01 * m_hat / (np.sqrt(s_hat) + 1e-8)
            np.testing.assert_allclose(w[k], ref[k], rtol=1e-10)


def test_the_weighted_training_loss_and_its_gradient():
    """train_induction's loss weights: 1 at random positions, repeat_weight in the repeat, times
    first_weight at its first predictable position; the weighted mean and its gradient are the
    matching mix of two masked losses (weights 1 and 3: (N * all + 2 * K * subset) / (N + 2K))."""
    repeat, _ = repeat_masks(np.array([3, 2]), 8, starts=np.array([0, 3]), gaps=np.array([1, 1]))
    w = tr._loss_weights(repeat, np.array([4, 6]), 3.0, 2.0)
    np.testing.assert_array_equal(w, [[1, 1, 1, 1, 6, 3, 1, 1], [1, 1, 1, 1, 1, 1, 6, 1]])
    model = AttentionOnlyTransformer(5, 8, 2, 2, max_len=6, seed=2, dtype=np.float64)
    rng = np.random.default_rng(5)
    tokens, targets = rng.integers(0, 5, (3, 6)), rng.integers(0, 5, (3, 6))
    mask = np.ones((3, 6), dtype=bool)
    mask[:, -1] = False
    subset = mask & (rng.random((3, 6)) < 0.4)
    loss, grads, _, _ = model._loss_and_grads(tokens, targets, mask, None, np.where(subset, 3.0, 1.0))
    loss_all, g_all = model.loss_and_grads(tokens, targets, mask)
    loss_sub, g_sub = model.loss_and_grads(tokens, targets, subset)
    n, k = mask.sum(), subset.sum()
    assert loss == pytest.approx((n * loss_all + 2 * k * loss_sub) / (n + 2 * k), rel=1e-12)
    for name in grads:
        np.testing.assert_allclose(grads[name], (n * g_all[name] + 2 * k * g_sub[name]) / (n + 2 * k),
                                   rtol=1e-9, atol=1e-12, err_msg=name)
    # Without weights (and with all weights 1) it is the plain masked mean.
    plain, g_plain, _, _ = model._loss_and_grads(tokens, targets, mask, None, np.ones((3, 6)))
    assert plain == pytest.approx(loss_all, rel=1e-12)
    np.testing.assert_allclose(g_plain["W_Q"], g_all["W_Q"], rtol=1e-9, atol=1e-12)


SMALL = dict(steps=40, vocab_size=8, d_model=8, n_heads=2, seq_len=12, batch=16, min_period=2, max_period=6)


def test_training_is_deterministic_with_one_thread():
    with threadpool_limits(limits=1):
        model_a, hist_a = train_induction(seed=3, **SMALL)
        model_b, hist_b = train_induction(seed=3, **SMALL)
        model_c, _ = train_induction(seed=4, **SMALL)
    for name in model_a.params:
        np.testing.assert_array_equal(model_a.params[name], model_b.params[name])
    for key in hist_a:
        np.testing.assert_array_equal(hist_a[key], hist_b[key])
    assert not np.array_equal(model_a.params["W_E"], model_c.params["W_E"])
    assert set(hist_a) >= {"step", "loss", "repeat_loss", "other_loss", "previous_token", "induction"}
    assert hist_a["loss"].shape == (40,) and hist_a["induction"].shape == (40, 2, 2)
    np.testing.assert_array_equal(hist_a["step"], np.arange(40))
    # The loss falls on this easy task.
    assert hist_a["loss"][-5:].mean() < hist_a["loss"][:5].mean()


# ---------------------------------------------------------------------------
# The stored model
# ---------------------------------------------------------------------------


def test_stored_model_loads_with_its_recipe_and_has_an_induction_head():
    model, history = tr.load_trained_induction_model()
    meta = model.metadata
    assert meta["seed"] == 0 and meta["config"] == tr.TRAINING_CONFIG and meta["recipe"] == tr.RECIPE
    assert meta["config"]["start"] == "random"
    assert model.config == dict(
        vocab_size=16, d_model=64, n_layers=2, n_heads=4, max_len=tr.TRAINING_CONFIG["seq_len"]
    )
    assert len(history["loss"]) == tr.TRAINING_CONFIG["steps"]
    assert history["position_loss"].shape == (tr.TRAINING_CONFIG["steps"], 23)
    tokens, periods, starts = induction_task(256, 24, 16, np.random.default_rng(123))
    scores = head_scores(model, tokens, periods, starts)
    assert scores["previous_token"][0].max() > 0.6  # a previous-token head in layer 0, at every position
    assert scores["induction"][1].min() > 0.45  # four induction heads in layer 1 (0.50-0.55 in notebook 12)
    assert scores["induction"][0].max() < 0.1  # which layer 0 cannot be on its own
    targets = np.roll(tokens, -1, axis=1)
    repeat, other = repeat_masks(periods, 24, starts)
    assert model.loss(tokens, targets, repeat) < 1.0 < math.log(16) < model.loss(tokens, targets, other)
    # Zeroing the layer-1 heads' output brings the repeat back to about guessing.
    assert model.loss(tokens, targets, repeat, ablate=[(1, h) for h in range(model.n_heads)]) > 2.5


def offset_losses_by_hand(model, offsets, period=6, batch=512, seed=0):
    """The repeat loss at each offset, computed without induction_task, repeat_masks or loss()."""
    out = []
    for s in offsets:
        rng = np.random.default_rng([seed, s])
        rng.integers(period, period + 1, size=batch)  # induction_task draws the periods first
        tokens = rng.integers(0, 16, size=(batch, 24))
        tokens[:, s + period : s + 2 * period] = tokens[:, s : s + period]
        logits, _ = model.forward(tokens)
        logp = logits - logits.max(-1, keepdims=True)
        logp = logp - np.log(np.exp(logp).sum(-1, keepdims=True))
        i = np.arange(s + period, s + 2 * period - 1)  # the predictable positions
        out.append(-logp[np.arange(batch)[:, None], i, tokens[:, i + 1]].mean())
    return np.array(out)


@pytest.mark.parametrize("start, general", [("random", True), (0, False)])
def test_the_head_works_wherever_the_repeat_starts(start, general):
    """Issue 26: with a period-6 repeat, the loss at offset 4 is at most 1.5 times the loss at
    offset 0, and at most 1.0, for the stored model; the first model (start 0) fails it."""
    model, _ = tr.load_trained_induction_model(start=start)
    at0, at4 = tr.repeat_loss_by_offset(model, [0, 4])
    np.testing.assert_allclose([at0, at4], offset_losses_by_hand(model, [0, 4]), rtol=1e-5)
    assert (at4 <= 1.5 * at0 and at4 <= 1.0) == general
    if not general:
        assert at0 < 1.0 < 2.0 < at4  # it learnt the layout: fine at 0, near guessing at 4


def test_the_first_model_is_kept_with_its_own_recipe():
    model, history = tr.load_trained_induction_model(start=0)
    assert model.metadata["config"]["steps"] == len(history["loss"]) == 1000
    assert "start" not in model.metadata["config"]  # trained before the start was drawn


# Retraining on another CPU's BLAS sums the same products in another order, so the float32
# weights drift by a few last places over the training steps (seen: up to 6e-6 between two
# machines for the 3,000-step model, 4.3e-4 under the floors' NumPy for the 4,000-step one;
# the 4,500-step model stored now trains with a cosine learning-rate decay, which shrinks late drift).
# Notebook 12 states the same tolerance; its printed numbers do not move.
RETRAIN_TOLERANCE = 2e-3


def test_retraining_reproduces_the_stored_model_within_tolerance(tmp_path):
    """The stored weights are what the stored recipe makes, to RETRAIN_TOLERANCE (one BLAS thread; about 15 s)."""
    stored, stored_history = tr.load_trained_induction_model()
    model, history = tr.retrain_induction_model(tmp_path / "again.npz", seed=stored.metadata["seed"])
    again, again_history = tr._read_model_file(tmp_path / "again.npz")
    assert again.params.keys() == stored.params.keys()
    for name, w in stored.params.items():
        assert again.params[name].shape == w.shape and again.params[name].dtype == w.dtype, name
        np.testing.assert_allclose(again.params[name], w, rtol=0, atol=RETRAIN_TOLERANCE, err_msg=name)
    for key, values in stored_history.items():
        np.testing.assert_allclose(again_history[key], values, rtol=0, atol=RETRAIN_TOLERANCE, err_msg=key)
    # The CPU time is a measurement of the machine, not part of the recipe; the rest is equal.
    measured = {key: meta.pop("train_cpu_seconds")
                for key, meta in (("again", again.metadata), ("stored", stored.metadata))}
    assert again.metadata == stored.metadata
    assert 0 < measured["stored"] <= 60  # the stored model trained within issue 34's budget


# ---------------------------------------------------------------------------
# The trained-head explorer (helpers.widgets.TrainedHeadExplorer)
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def explorer():
    from helpers.widgets import TrainedHeadExplorer

    return TrainedHeadExplorer(text="A B C D E F A B C D E", layer=1, head=0)


def test_explorer_shows_the_models_own_pattern_at_temperature_one(explorer):
    model = explorer.model
    ids = np.array([[0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4]])
    patterns = model.attention_patterns(ids)[0]  # (L, H, n, n)
    for layer in range(model.n_layers):
        for head in range(model.n_heads):
            explorer.controls["layer"].value = layer
            explorer.controls["head"].value = head
            np.testing.assert_allclose(explorer.weights, patterns[layer, head], rtol=1e-5, atol=1e-6)
    assert explorer.tokens == list("ABCDEFABCDE")
    assert len(explorer.image.value) > 1000  # a PNG was drawn
    # The trained induction heads: in the repeat, query i looks at i - 6 + 1 most, from its first
    # token on. At the first, A6, the query's predecessor (F5) matches nothing, and every head
    # still finds B1 by the current token alone (the training weighted that position up).
    for head in range(model.n_heads):
        explorer.controls["layer"].value, explorer.controls["head"].value = 1, head
        assert [int(explorer.weights[i].argmax()) for i in range(6, 11)] == [1, 2, 3, 4, 5]
        assert explorer.weights[6, 1] > 0.5


def test_explorer_temperature_acts_on_the_heads_scores(explorer):
    explorer.controls["layer"].value, explorer.controls["head"].value = 1, 1
    scores = explorer.scores
    assert np.all(np.isneginf(scores[np.triu_indices(11, 1)]))
    for t in (0.1, 3.0, 1.0):
        explorer.controls["temperature"].value = t
        shifted = scores / t - np.max(scores / t, axis=1, keepdims=True)
        expected = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
        np.testing.assert_allclose(explorer.weights, expected, atol=1e-9)
    explorer.controls["temperature"].value = 0.1
    sharp = explorer.weights.max(axis=1).mean()
    explorer.controls["temperature"].value = 10.0
    assert explorer.weights.max(axis=1).mean() < sharp
    explorer.controls["temperature"].value = 1.0


@pytest.mark.parametrize(
    "text, message",
    [
        ("A B Z", "unknown token Z: the vocabulary is A B C D E F G H I J K L M N O P (or the ids 0..15)"),
        ("", "type some tokens"),
        ("   ,, ", "type some tokens"),
        (" ".join("A" * 25), "at most 24 tokens (the model's max_len): got 25"),
        ("A 16 -1 x@ é", "unknown tokens 16 -1 x@ é"),
    ],
)
def test_explorer_explains_what_it_cannot_read(text, message):
    from helpers.widgets import TrainedHeadExplorer

    ex = TrainedHeadExplorer(text="A B C")
    ex.controls["tokens"].value = text
    assert message in ex.message and html.escape(message) in ex.readout.value
    assert ex.weights is None and ex.tokens is None and ex.image.value == b""
    ex.controls["temperature"].value = 2.0  # other controls still work, and do not raise
    ex.controls["head"].value = 1
    ex.controls["tokens"].value = "a b 2 15"  # case-insensitive names and ids
    assert ex.tokens == ["A", "B", "C", "P"] and ex.message == "" and ex.weights.shape == (4, 4)


def test_explorer_single_token_and_bad_arguments():
    from helpers.widgets import TrainedHeadExplorer

    ex = TrainedHeadExplorer(text="K")
    np.testing.assert_allclose(ex.weights, [[1.0]])
    with pytest.raises(ValueError, match=r"layer must be an integer in 0..1: got 2"):
        TrainedHeadExplorer(layer=2)
    assert "TrainedHeadExplorer" in __import__("helpers.widgets").widgets.__all__


# ---------------------------------------------------------------------------
# Issue 34: the stored head finishes a repeat at every distance
# ---------------------------------------------------------------------------

FRESH_SEED = 34  # the batches of training come from default_rng([seed, 1]); these are others


def distance_losses_by_hand(model, distance, gap, batch=256, seed=FRESH_SEED, segment=4):
    """The repeat loss at one distance, built without distance_task, repeat_masks or loss()."""
    n = model.max_len
    p = min(segment, distance - 1) if gap else distance
    rng = np.random.default_rng([seed, distance, int(gap), 7])
    tokens = rng.integers(0, model.vocab_size, size=(batch, n))
    starts = rng.integers(0, n - distance - p + 1, size=batch)
    for row, s in zip(tokens, starts):
        row[s + distance : s + distance + p] = row[s : s + p]
    logits, _ = model.forward(tokens)
    logp = logits - logits.max(-1, keepdims=True)
    logp = logp - np.log(np.exp(logp).sum(-1, keepdims=True))
    total = []
    for b, s in enumerate(starts):
        for i in range(s + distance, s + distance + p - 1):  # the predictable positions
            total.append(-logp[b, i, tokens[b, i + 1]])
    return float(np.mean(total))


def test_distance_task_puts_the_copy_distance_positions_later_anywhere():
    tokens, periods, starts, gaps = tr.distance_task(400, 24, 16, 9, True, np.random.default_rng(0))
    assert (periods == 4).all() and (gaps == 5).all()
    for row, s in zip(tokens, starts):
        np.testing.assert_array_equal(row[s + 9 : s + 13], row[s : s + 4])
    assert starts.min() == 0 and starts.max() == 24 - 9 - 4  # every start that fits
    tokens, periods, starts, gaps = tr.distance_task(50, 24, 16, 12, False, 1)
    assert (periods == 12).all() and (gaps == 0).all() and (starts == 0).all()
    assert tr.longest_distance(24, False) == 12 and tr.longest_distance(24, True) == 20
    with pytest.raises(ValueError, match="distance"):
        tr.distance_task(2, 24, 16, 13, False, 0)
    with pytest.raises(ValueError, match="distance"):
        tr.distance_task(2, 24, 16, 21, True, 0)


def test_gapped_training_data_covers_every_distance_and_gap():
    tokens, periods, starts, gaps = tr.gapped_induction_task(4000, 24, 16, np.random.default_rng(0))
    for row, p, s, g in zip(tokens, periods, starts, gaps):
        np.testing.assert_array_equal(row[s + p + g : s + 2 * p + g], row[s : s + p])
    distance = periods + gaps
    assert set(distance) == set(range(2, 23)) and (starts + 2 * periods + gaps <= 24).all()
    assert 0.45 < (gaps > 0).mean() < 0.55 and set(starts) == set(range(0, 21))
    repeat, other = repeat_masks(periods, 24, starts, gaps)
    b, i = np.nonzero(repeat)
    np.testing.assert_array_equal(tokens[b, i], tokens[b, i - distance[b]])  # seen d positions ago
    assert repeat.sum() == (periods - 1).sum()


def test_balanced_draws_even_out_the_positions_each_distance_gets():
    """balance=1 gives every distance about the same number of predictable positions; uniform
    draws (balance=0) give the middle distances several times more than the shortest."""
    def positions_by_distance(balance):
        _, periods, _, gaps = tr.gapped_induction_task(20000, 24, 16, np.random.default_rng(5), balance=balance)
        gapped = gaps > 0
        return np.bincount((periods + gaps)[gapped], weights=(periods - 1)[gapped], minlength=23)[3:23]
    uniform, even, half = (positions_by_distance(b) for b in (0.0, 1.0, 0.5))
    assert uniform.max() > 4 * uniform.min()
    assert even.max() < 1.3 * even.min()
    assert even.max() / even.min() < half.max() / half.min() < uniform.max() / uniform.min()
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="balance"):
            tr.gapped_induction_task(2, 24, 16, 0, balance=bad)


def test_recipe_knobs_gap_max_period_placement_and_gap_first_weight():
    """The knobs tried for issue 34 (benchmarks/README.md): off by default, so the stored draws are unchanged."""
    rng_args = (3000, 24, 16)
    plain = tr.gapped_induction_task(*rng_args, np.random.default_rng(3), balance=0.75)
    off = tr.gapped_induction_task(*rng_args, np.random.default_rng(3), balance=0.75, gap_max_period=None,
                                   placement=0.0)
    for a, b in zip(plain, off):
        np.testing.assert_array_equal(a, b)
    _, periods, _, gaps = tr.gapped_induction_task(*rng_args, np.random.default_rng(3), gap_max_period=5)
    assert periods[gaps > 0].max() == 5 and periods[gaps == 0].max() == 12
    def short_share(placement):
        _, p, _, g = tr.gapped_induction_task(20000, 24, 16, np.random.default_rng(4), gap_share=1.0,
                                              placement=placement)
        return ((p + g) <= 8).mean()
    assert short_share(1.0) > 1.5 * short_share(0.0)  # more starts fit at short distances
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="placement"):
            tr.gapped_induction_task(2, 24, 16, 0, placement=bad)
    repeat = np.zeros((2, 8), dtype=bool)
    repeat[:, 4:7] = True
    w = tr._loss_weights(repeat, np.array([4, 4]), 2.0, np.array([3.0, 5.0]))  # one factor per sequence
    np.testing.assert_array_equal(w[:, 4], [6.0, 10.0])
    np.testing.assert_array_equal(w[:, 5:7], 2.0)


@pytest.fixture(scope="module")
def distance_losses():
    """The stored model's repeat loss at every distance 4.. the longest that fits, on fresh tokens."""
    model, _ = tr.load_trained_induction_model()
    return model, {
        gap: tr.repeat_loss_by_distance(model, np.arange(4, tr.longest_distance(model.max_len, gap) + 1), gap,
                                        batch=512, seed=FRESH_SEED)
        for gap in (False, True)
    }


def test_the_stored_head_finishes_a_repeat_at_every_distance(distance_losses):
    """Issue 34's goal: on fresh repeated random tokens, at every distance from 4 to the longest that
    fits 24 tokens, with and without a gap, the repeat loss is at most 1.0 nats, and the worst
    distance (over both) at most 1.5 times the best."""
    _, losses = distance_losses
    every = np.concatenate(list(losses.values()))
    assert every.max() <= 1.0, losses
    assert every.max() <= 1.5 * every.min(), losses


@pytest.mark.parametrize("gap", [False, True])
def test_the_stored_head_works_far_apart_and_after_a_gap(distance_losses, gap):
    """What the stored model reaches (notebook 12 prints it): issue 34's goal. Every distance,
    with and without a gap, is at most 1.0 nats (on these tokens worst 0.81, best 0.60, worst / best
    1.33; benchmarks/README.md), with a margin kept for another CPU's BLAS (the model stored
    before: worst 0.88, 1.68 times the best)."""
    model, losses = distance_losses
    every = np.concatenate(list(losses.values()))
    assert every.max() <= 1.0 < math.log(16) and every.max() <= 1.5 * every.min(), losses
    assert losses[gap].max() <= 0.85, losses
    # The measure is what it says: two distances recomputed by hand on other fresh tokens.
    for d in (4, tr.longest_distance(model.max_len, gap)):
        by_hand = distance_losses_by_hand(model, d, gap)
        assert abs(by_hand - losses[gap][d - 4]) < 0.15, (d, by_hand)
