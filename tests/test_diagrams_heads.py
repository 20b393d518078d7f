"""diagrams.heads_split_merge: each head projects X with its own W_Q, W_K, W_V, attends, merges (issues 17, 23)."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from helpers import diagrams, figures  # noqa: E402
from helpers.attention import merge_heads, split_heads  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


@pytest.mark.parametrize("n, d_model, h", [(6, 8, 2), (5, 12, 3), (4, 8, 8)])
def test_the_arrows_carry_the_shapes_the_kernels_produce(n, d_model, h):
    fig = diagrams.heads_split_merge(n, d_model, h)
    x = np.zeros((n, d_model))
    split = split_heads(x, h)
    expected = [x.shape, split.shape, split.shape, merge_heads(split).shape, (n, d_model)]
    assert fig.shapes == [str(s) for s in expected]
    texts = " ".join(t.get_text() for t in fig.axes[0].texts)
    for shape in fig.shapes:
        assert shape in texts
    # X, merged, out; per head Q, K, V and its output; plus the strips of the merged box
    boxes = [p for p in fig.axes[0].patches if type(p).__name__ == "Rectangle"]
    assert len(boxes) == 3 + 5 * h


@pytest.mark.parametrize("n, d_model, h", [(6, 8, 2), (5, 12, 3), (6, 8, 4)])
def test_every_head_has_its_own_projections_of_x(n, d_model, h):
    """Issue 23: the heads attend over projections (Q, K, V per head), not over slices of X."""
    fig = diagrams.heads_split_merge(n, d_model, h)
    ax = fig.axes[0]
    by_gid = {p.get_gid(): p for p in ax.patches if p.get_gid()}
    x_box = max((p for p in ax.patches if type(p).__name__ == "Rectangle"), key=lambda p: -p.get_x())
    for k in range(h):
        qkv = [by_gid[f"{part}:{k}"] for part in "QKV"]
        # the three boxes of head k: the head's colour, side by side at one height, each d_model / h
        # as wide as X (d_head columns) and as tall (n rows)
        assert len({tuple(p.get_edgecolor()) for p in qkv}) == 1
        assert len({round(p.get_y(), 9) for p in qkv}) == 1
        assert qkv[0].get_x() < qkv[1].get_x() < qkv[2].get_x()
        for p in qkv + [by_gid[f"head:{k}"]]:
            np.testing.assert_allclose(p.get_width() / x_box.get_width(), (d_model // h) / d_model)
            np.testing.assert_allclose(p.get_height(), x_box.get_height())
    # one arrow from X to each head, and the three arrows attention, merge, W_O
    arrows = [p for p in ax.patches if type(p).__name__ == "FancyArrowPatch"]
    assert len(arrows) == h + 3
    texts = [t.get_text() for t in ax.texts]
    assert any("own W_Q, W_K, W_V" in t for t in texts)
    if h <= 4:
        for k in range(h):
            assert {f"Q{k + 1}", f"K{k + 1}", f"V{k + 1}", f"head {k + 1}"} <= set(texts)


def test_the_description_says_project_attend_merge_with_shapes():
    text = figures.description(diagrams.heads_split_merge(6, 8, 2))
    assert "to each of 2 heads, which multiplies it by its own W_Q, W_K and W_V" in text
    assert "of width 4 ((2, 6, 4) for each kind over all heads)" in text
    assert "concatenated back to (6, 8)" in text and "W_O" in text


@pytest.mark.parametrize("args", [(6, 8, 3), (0, 8, 2), (6, 8, 0), (6, 8.0, 2)])
def test_bad_shapes_are_refused(args):
    with pytest.raises(ValueError):
        diagrams.heads_split_merge(*args)


# --------------------------------------------------------------------------- head_patterns (issue 23)

def _two_heads():
    """Head 1 reads the token before (the first reads itself); head 2 reads token 1 from every query."""
    n = 4
    before = np.eye(n, k=-1)
    before[0, 0] = 1
    scores = np.stack([8 * before, 8 * np.tile(np.eye(n)[1], (n, 1))])
    e = np.exp(scores - scores.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True), ["a", "b", "c", "d"]


def test_head_patterns_draws_each_heads_weights_in_its_own_panel():
    weights, tokens = _two_heads()
    fig = diagrams.head_patterns(weights, tokens, ["before", "token b"])
    assert len(fig.axes) == 2
    for ax, w, title in zip(fig.axes, weights, ["before", "token b"]):
        assert ax.get_title() == title
        np.testing.assert_allclose(ax.images[0].get_array(), w)     # the picture is the data
        assert [t.get_text() for t in ax.get_xticklabels()] == tokens


def test_head_patterns_describes_where_each_head_looks_from_the_weights():
    weights, tokens = _two_heads()
    fig = diagrams.head_patterns(weights, tokens)
    expected = weights.argmax(-1)                                    # independent: argmax by hand
    by_hand = np.array([[max(range(4), key=lambda j: row[j]) for row in w] for w in weights])
    np.testing.assert_array_equal(fig.strongest, by_hand)
    np.testing.assert_array_equal(fig.strongest, expected)
    text = figures.description(fig)
    assert "head 1: a to a" in text and "b to a" in text and "d to c" in text
    assert "head 2: a to b" in text and "d to b" in text
    differ = sum(by_hand[0][i] != by_hand[1][i] for i in range(4))   # c and d (and a) differ
    assert differ == 3
    assert f"differ for {differ} of 4 queries" in text


@pytest.mark.parametrize("weights, tokens, titles", [
    (np.ones((2, 3, 4)) / 4, ["a", "b", "c"], None),                  # not square
    (np.ones((3, 3)) / 3, ["a", "b", "c"], None),                      # one head, no h axis
    (np.ones((2, 3, 3)) / 3, ["a", "b"], None),                        # too few tokens
    (np.ones((2, 3, 3)) / 3, ["a", "b", "c"], ["only one"]),           # too few titles
])
def test_head_patterns_refuses_bad_input(weights, tokens, titles):
    with pytest.raises(ValueError):
        diagrams.head_patterns(weights, tokens, titles)


def test_heads_split_merge_on_a_slide_has_no_texts_running_into_each_other():
    # issue 32: notebook 10's diagram (6 tokens of width 8, 2 heads): shorter labels, the heads named in their boxes
    from helpers import style

    with style.medium("slide"):
        fig = diagrams.heads_split_merge(6, 8, 2)
        style.fit_for_slide(fig)
        assert style.overlapping_texts(fig) == []
        texts = [t.get_text() for t in fig.axes[0].texts]
        assert "h1" in texts and "h2" in texts and "attend\n(2, 6, 4)" in texts
    with style.medium("notebook"):   # the notebook's labels stay
        texts = [t.get_text() for t in diagrams.heads_split_merge(6, 8, 2).axes[0].texts]
        assert "head 1" in texts and "attention\nin each head\n(2, 6, 4)" in texts
