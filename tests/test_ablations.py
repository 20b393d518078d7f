"""Tests of the circuit tools of helpers.transformer: hiding a head from the queries, keys or
values (hide_head, composition_patterns), mean-ablation, the OV and QK circuits read from the
weights, and direct logit attribution."""

import math

import numpy as np
import pytest

from helpers.transformer import (
    AttentionOnlyTransformer,
    composition_patterns,
    direct_logit_attribution,
    hide_head,
    induction_task,
    load_trained_induction_model,
    loss_from_logits,
    ov_circuit,
    qk_circuit_through,
    repeat_masks,
)


def small_model(n_layers=2, seed=3):
    return AttentionOnlyTransformer(7, 8, n_layers, 2, max_len=9, seed=seed, dtype=np.float64)


TOKENS = np.random.default_rng(5).integers(0, 7, size=(3, 9))


def test_both_paths_equal_the_full_ablation_in_two_layers():
    model = small_model()
    full = model.attention_patterns(TOKENS, ablate=[(0, 1)])
    np.testing.assert_allclose(composition_patterns(model, TOKENS, (0, 1), "both"), full, atol=1e-12)


def test_the_heads_own_layer_and_earlier_layers_are_unchanged():
    model = small_model(n_layers=3)
    plain = model.attention_patterns(TOKENS)
    for path in ("query", "key", "both"):
        hidden = composition_patterns(model, TOKENS, (1, 0), path)
        np.testing.assert_array_equal(hidden[:, :2], plain[:, :2])
        assert not np.allclose(hidden[:, 2], plain[:, 2])
        np.testing.assert_allclose(hidden.sum(-1), 1.0, atol=1e-12)


def test_query_and_key_paths_match_a_recomputation_by_hand():
    model = small_model()
    _, cache = model.forward(TOKENS)
    p = model.params
    direct = cache["z"][0][:, 1] @ p["W_O"][0, 1]
    x = cache["resid"][1]
    n = TOKENS.shape[1]
    for path, x_q, x_k in (("query", x - direct, x), ("key", x, x - direct)):
        got = composition_patterns(model, TOKENS, (0, 1), path)[:, 1]
        for h in range(2):
            s = (x_q @ p["W_Q"][1, h]) @ (x_k @ p["W_K"][1, h]).transpose(0, 2, 1) / np.sqrt(4)
            s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
            w = np.exp(s - s.max(-1, keepdims=True))
            np.testing.assert_allclose(got[:, h], w / w.sum(-1, keepdims=True), atol=1e-12)


PREVIOUS_TOKEN_HEAD = (0, 1)  # of the stored model (the one stored before had it at (0, 0))


@pytest.fixture(scope="module")
def stored():
    model, _ = load_trained_induction_model()
    tokens, periods, starts = induction_task(128, 24, 16, np.random.default_rng(2024))
    repeat, other = repeat_masks(periods, 24, starts)
    b, i = np.nonzero(repeat)
    return model, tokens, np.roll(tokens, -1, axis=1), repeat, other, (b, i, i - periods[b] + 1)


def test_the_stored_model_composes_through_the_keys(stored):
    """Layer 0, head 1 (the previous-token head of the stored model) reaches the induction heads
    through their keys (K-composition), not their queries (the model stored before, with 2 heads
    per layer, showed some Q-composition too); hidden from their values the induction scores do
    not move."""
    model, tokens, targets, repeat, _, (b, i, target) = stored
    score = {path: hide_head(model, tokens, PREVIOUS_TOKEN_HEAD, [path])[1][b, 1, :, i, target].mean()
             for path in ("query", "key", "value")}
    intact = model.attention_patterns(tokens)[b, 1, :, i, target].mean()
    assert score["key"] < 0.35 < 0.45 < intact
    assert abs(score["query"] - intact) < 0.05  # no Q-composition to speak of
    assert abs(score["value"] - intact) < 1e-6  # the values change no weight
    loss = {path: loss_from_logits(hide_head(model, tokens, PREVIOUS_TOKEN_HEAD, [path])[0], targets, repeat)
            for path in ("query", "key", "value")}
    whole = model.loss(tokens, targets, repeat)
    assert loss["key"] > 1.8 > whole + 0.5 and abs(loss["query"] - whole) < 0.05 and abs(loss["value"] - whole) < 0.05


def test_hiding_from_every_input_equals_ablation_but_for_the_direct_path():
    """All three paths hidden = the full ablation, except that the head still reaches the logits."""
    model = small_model()
    logits, patterns = hide_head(model, TOKENS, (0, 1), ["query", "key", "value"])
    ablated, cache = model.forward(TOKENS, ablate=[(0, 1)])
    np.testing.assert_allclose(patterns, np.stack(cache["weights"], axis=1), atol=1e-12)
    _, plain = model.forward(TOKENS)
    direct = plain["z"][0][:, 1] @ model.params["W_O"][0, 1] @ model.params["W_U"]
    np.testing.assert_allclose(logits, ablated + direct, atol=1e-10)


def test_value_path_matches_a_recomputation_by_hand():
    model = small_model()
    _, cache = model.forward(TOKENS)
    p = model.params
    x = cache["resid"][1]
    x_v = x - cache["z"][0][:, 1] @ p["W_O"][0, 1]
    out = x.copy()
    for h in range(2):
        w = cache["weights"][1][:, h]  # unchanged: the queries and keys see everything
        out += w @ (x_v @ p["W_V"][1, h]) @ p["W_O"][1, h]
    logits, patterns = hide_head(model, TOKENS, (0, 1), "value")
    np.testing.assert_allclose(logits, out @ p["W_U"], atol=1e-10)
    np.testing.assert_allclose(patterns, np.stack(cache["weights"], axis=1), atol=1e-12)


def test_mean_ablation_puts_the_batch_mean_in_place_of_the_output():
    model = small_model()
    _, plain = model.forward(TOKENS)
    _, cache = model.forward(TOKENS, ablate=[(0, 1)], ablation="mean")
    mean = plain["z"][0][:, 1].mean(axis=0)
    for row in cache["z"][0][:, 1]:
        np.testing.assert_allclose(row, mean, atol=1e-12)
    np.testing.assert_array_equal(cache["z"][0][:, 0], plain["z"][0][:, 0])
    # One sequence is its own mean: mean-ablation changes nothing.
    one = TOKENS[:1]
    np.testing.assert_allclose(model.loss(one, one, ablate=[(0, 1)], ablation="mean"), model.loss(one, one), rtol=1e-12)


def test_ov_and_qk_circuits_are_the_products_of_the_weights():
    model = small_model()
    p = model.params
    a, b = 3, 5
    # Attending with all weight to a position holding a (its embedding alone): what the head adds to logit b.
    np.testing.assert_allclose(ov_circuit(model, 1, 0)[a, b],
                               (p["W_E"][a] @ p["W_V"][1, 0] @ p["W_O"][1, 0]) @ p["W_U"][:, b], rtol=1e-10)
    q = p["W_E"][a] @ p["W_Q"][1, 1]
    k = p["W_E"][b] @ p["W_V"][0, 0] @ p["W_O"][0, 0] @ p["W_K"][1, 1]
    np.testing.assert_allclose(qk_circuit_through(model, (1, 1), (0, 0))[a, b], q @ k / math.sqrt(4), rtol=1e-10)


def test_the_stored_layer1_heads_copy_and_match_through_the_previous_token_head(stored):
    model = stored[0]
    for h in range(model.n_heads):
        ov = ov_circuit(model, 1, h)
        assert (ov.argmax(axis=1) == np.arange(16)).sum() >= 8  # the diagonal wins most rows: copying
        qk = qk_circuit_through(model, (1, h), PREVIOUS_TOKEN_HEAD)
        assert (qk.argmax(axis=1) == np.arange(16)).sum() == 16  # "whose predecessor was my token?"


def test_direct_logit_attribution_by_hand(stored):
    """Each head's output at each position, through W_O and W_U, at the right next token minus the mean."""
    model, tokens, _, repeat, _, _ = stored
    dla = direct_logit_attribution(model, tokens, repeat)
    _, cache = model.forward(tokens)
    p = model.params
    by_hand = np.zeros((model.n_layers, model.n_heads))
    for bb, ii in zip(*np.nonzero(repeat)):
        for layer in range(model.n_layers):
            for h in range(model.n_heads):
                logits = cache["z"][layer][bb, h, ii] @ p["W_O"][layer, h] @ p["W_U"]  # (V,)
                by_hand[layer, h] += logits[tokens[bb, ii + 1]] - logits.mean()
    np.testing.assert_allclose(dla, by_hand / repeat.sum(), rtol=1e-4, atol=1e-6)
    assert dla[1].min() > 0.6 and np.abs(dla[0]).max() < 0.2  # the layer-1 heads push the answer up
    with pytest.raises(ValueError, match="False at the last position"):
        direct_logit_attribution(model, tokens, np.ones_like(repeat))
    assert np.isnan(direct_logit_attribution(model, tokens, np.zeros_like(repeat))).all()


@pytest.mark.parametrize("path", ["value", "", None, "keys"])
def test_rejects_an_unknown_path(path):
    with pytest.raises(ValueError, match="path must be"):
        composition_patterns(small_model(), TOKENS, (0, 1), path)


@pytest.mark.parametrize("paths", [[], ["keys"], ["query", "output"]])
def test_hide_head_rejects_unknown_paths(paths):
    with pytest.raises(ValueError, match="paths must be one or more of"):
        hide_head(small_model(), TOKENS, (0, 1), paths)


@pytest.mark.parametrize("head", [(2, 0), (0, 2), (-1, 0), (0,)])
def test_rejects_a_head_out_of_range(head):
    with pytest.raises(ValueError, match="ablate must hold"):
        composition_patterns(small_model(), TOKENS, head, "key")
