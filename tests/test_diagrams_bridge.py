"""diagrams.averaging_to_attention: the running mean, masked zeros, masked scores (issue 17)."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from helpers import diagrams, figures  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _running_mean_by_loops(n):
    out = np.zeros((n, n))
    for t in range(n):
        for j in range(t + 1):
            out[t, j] = 1 / (t + 1)
    return out


def test_the_three_panels_draw_the_mean_the_same_mean_and_softmax_of_masked_scores():
    rng = np.random.default_rng(3)
    scores = rng.normal(size=(5, 5))
    fig = diagrams.averaging_to_attention(scores, list("abcde"))
    drawn = [np.asarray(ax.images[0].get_array()) for ax in fig.axes[:3]]
    mean = _running_mean_by_loops(5)
    np.testing.assert_allclose(drawn[0], mean)
    np.testing.assert_allclose(drawn[1], mean, atol=1e-15)  # softmax of masked zeros is the mean
    expected = np.zeros((5, 5))
    for t in range(5):
        e = np.exp(scores[t, : t + 1] - scores[t, : t + 1].max())
        expected[t, : t + 1] = e / e.sum()
    np.testing.assert_allclose(drawn[2], expected, rtol=1e-12)
    # the averaging is a matrix product: mean @ x is the mean of the tokens so far
    x = rng.normal(size=(5, 3))
    np.testing.assert_allclose(drawn[0] @ x, np.cumsum(x, axis=0) / np.arange(1, 6)[:, None])
    assert [ax.get_title() for ax in fig.axes[:3]] == [
        "mean of the tokens so far", "softmax of masked zeros", "softmax of masked scores"]


def test_the_description_names_the_tokens_and_the_data_dependent_row():
    scores = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 3]])
    fig = diagrams.averaging_to_attention(scores, ["a", "b", "c"])
    text = figures.description(fig)
    last = np.exp(scores[2]) / np.exp(scores[2]).sum()
    assert "tokens a, b, c" in text and "(the last row 0.33 each)" in text
    assert f"c {last[2]:.2f}" in text


@pytest.mark.parametrize("bad", [np.zeros((2, 3)), np.zeros((0, 0)), np.zeros(3)])
def test_scores_must_be_square(bad):
    with pytest.raises(ValueError):
        diagrams.averaging_to_attention(bad)


def test_on_a_slide_the_mean_and_the_masked_zeros_share_one_panel():
    """Issue 32: at most two panels on a slide; the notebook keeps its three."""
    from helpers import style

    rng = np.random.default_rng(3)
    scores = rng.normal(size=(5, 5))
    with style.medium("slide"):
        fig = diagrams.averaging_to_attention(scores, list("abcde"))
    drawn = [np.asarray(ax.images[0].get_array()) for ax in fig.axes if ax.images]
    assert len(drawn) == 2
    np.testing.assert_allclose(drawn[0], _running_mean_by_loops(5))
    np.testing.assert_allclose(drawn[1], fig.weight_matrices[2])
    assert [ax.get_title() for ax in fig.axes if ax.images] == [
        "mean so far = softmax of masked zeros", "softmax of masked scores"]
    assert "Two 5 × 5 weight matrices" in figures.description(fig) and "Middle" not in figures.description(fig)
    with style.medium("notebook"):
        assert len([ax for ax in diagrams.averaging_to_attention(scores).axes if ax.images]) == 3
