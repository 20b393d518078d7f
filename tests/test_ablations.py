"""Tests of helpers.transformer.composition_patterns: hiding a head from the queries or the keys."""

import numpy as np
import pytest

from helpers.transformer import (
    AttentionOnlyTransformer,
    composition_patterns,
    induction_task,
    load_trained_induction_model,
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


def test_the_stored_model_composes_through_the_keys():
    model, _ = load_trained_induction_model()
    tokens, periods = induction_task(128, 24, 16, np.random.default_rng(2024))
    b, i = np.nonzero([(np.arange(24) >= q) & (np.arange(24) <= 2 * q - 2) for q in periods])
    score = {path: composition_patterns(model, tokens, (0, 1), path)[b, 1, :, i, i - periods[b] + 1].mean()
             for path in ("query", "key")}
    assert score["key"] < 0.3 < 0.6 < score["query"]


@pytest.mark.parametrize("path", ["value", "", None, "keys"])
def test_rejects_an_unknown_path(path):
    with pytest.raises(ValueError, match="path must be"):
        composition_patterns(small_model(), TOKENS, (0, 1), path)


@pytest.mark.parametrize("head", [(2, 0), (0, 2), (-1, 0), (0,)])
def test_rejects_a_head_out_of_range(head):
    with pytest.raises(ValueError, match="ablate must hold"):
        composition_patterns(small_model(), TOKENS, head, "key")
