"""diagrams.mask_and_weights and diagrams.cross_attention (notebook 10, issue 17), read back from the artists."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from helpers import diagrams, figures  # noqa: E402
from helpers.attention import causal_mask, padding_mask  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _masked_softmax_by_loops(scores, allowed):
    out = np.zeros(scores.shape)
    for i in range(scores.shape[0]):
        keys = [j for j in range(scores.shape[1]) if allowed[i, j]]
        if keys:
            e = np.exp(scores[i, keys] - scores[i, keys].max())
            out[i, keys] = e / e.sum()
    return out


def _mask_texts(ax):
    cells = {}
    for text in ax.texts:
        gid = text.get_gid() or ""
        if gid.startswith("mask:"):
            _, i, j = gid.split(":")
            assert text.get_position() == (int(j), int(i))  # column j, row i of the image
            cells[int(i), int(j)] = text.get_text()
    return cells


def test_each_mask_is_drawn_as_0_1_beside_the_weights_it_produces():
    rng = np.random.default_rng(4)
    scores = rng.normal(size=(5, 5))
    masks = {"padding": padding_mask([3], 5)[0], "causal": causal_mask(5)}
    fig = diagrams.mask_and_weights(scores, masks, list("abcde"))
    axes = fig.axes
    assert len(axes) == 4
    for row, (title, mask) in enumerate(masks.items()):
        left, right = axes[2 * row], axes[2 * row + 1]
        allowed = np.broadcast_to(mask, (5, 5))
        written = _mask_texts(left)
        assert written == {(i, j): "1" if allowed[i, j] else "0" for i in range(5) for j in range(5)}
        np.testing.assert_array_equal(np.asarray(left.images[0].get_array()), allowed.astype(float))
        drawn = np.asarray(right.images[0].get_array())
        np.testing.assert_allclose(drawn, _masked_softmax_by_loops(scores, allowed), rtol=1e-12)
        assert title in left.get_title() and title in right.get_title()
        assert [t.get_text() for t in left.get_yticklabels()] == list("abcde")
    # padding: the last two columns carry no weight; causal: nothing above the diagonal
    assert np.asarray(axes[1].images[0].get_array())[:, 3:].max() == 0
    assert np.triu(np.asarray(axes[3].images[0].get_array()), 1).max() == 0


def test_a_row_with_no_allowed_key_is_drawn_as_zeros_and_described():
    valid = np.array([True, True, False])
    fig = diagrams.mask_and_weights(np.ones((3, 3)), {"query and key": valid[:, None] & valid[None, :]},
                                    ["x", "y", "<pad>"])
    drawn = np.asarray(fig.axes[1].images[0].get_array())
    np.testing.assert_allclose(drawn[2], 0.0)
    np.testing.assert_allclose(drawn[:2, :2], 0.5)
    text = figures.description(fig)
    assert "4 of 9 pairs allowed" in text and "1 rows with no allowed key" in text


def test_bad_masks_are_refused():
    with pytest.raises(ValueError, match="boolean"):
        diagrams.mask_and_weights(np.zeros((2, 2)), {"m": np.ones((2, 2))}, ["a", "b"])
    with pytest.raises(ValueError, match="broadcast"):
        diagrams.mask_and_weights(np.zeros((2, 2)), {"m": np.ones((3, 3), bool)}, ["a", "b"])
    with pytest.raises(ValueError):
        diagrams.mask_and_weights(np.zeros((2, 2)), {}, ["a", "b"])


def test_cross_attention_joins_target_queries_to_source_keys():
    w = np.array([[0.7, 0.1, 0.1, 0.1], [0.0, 0.2, 0.8, 0.0], [0.25, 0.25, 0.25, 0.25]])
    target, source = ["le", "voyage", "commence"], ["the", "journey", "starts", "."]
    fig = diagrams.cross_attention(w, target, source)
    ax = fig.axes[0]
    lines = {line.get_gid(): line for line in ax.lines}
    assert len(lines) == 3 * 4
    for i in range(3):
        for j in range(4):
            line = lines[f"line:{i}:{j}"]
            assert line.get_linewidth() == pytest.approx(diagrams.LINE_WIDTH * w[i, j])
            # from the query's row on the left (x = 0) to the key's row on the right (x = 1)
            assert list(line.get_xdata()) == [0.0, 1.0]
    texts = {t.get_gid(): t.get_text() for t in ax.texts if t.get_gid()}
    assert [texts[f"query:{i}"] for i in range(3)] == target
    assert [texts[f"key:{j}"] for j in range(4)] == source
    headings = {t.get_text() for t in ax.texts}
    assert {"decoder: queries", "encoder: keys, values"} <= headings
    text = figures.description(fig)
    assert "le to the 0.70" in text and "voyage to starts 0.80" in text


def test_cross_attention_takes_one_head():
    with pytest.raises(ValueError):
        diagrams.cross_attention(np.full((2, 3, 3), 1 / 3), ["a"] * 3, ["b"] * 3)
