"""diagrams.score_spread: the spread of q·k against d_k, and one row unscaled and scaled (issue 17)."""

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


def test_the_spread_is_about_the_square_root_of_d_k():
    fig = diagrams.score_spread((1, 16, 256), pairs=4000, seed=1)
    for d_k, std in fig.spread.items():
        assert abs(std / np.sqrt(d_k) - 1) < 0.06, (d_k, std)


def test_the_bars_are_the_softmax_of_the_row_unscaled_and_scaled():
    fig = diagrams.score_spread((4, 100), m=6, seed=2)
    scores, unscaled, scaled = fig.rows
    by_hand = lambda s: np.exp(s - s.max()) / np.exp(s - s.max()).sum()  # noqa: E731
    np.testing.assert_allclose(unscaled, by_hand(scores), rtol=1e-12)
    np.testing.assert_allclose(scaled, by_hand(scores / 10.0), rtol=1e-12)
    heights = [[bar.get_height() for bar in ax.patches] for ax in fig.axes[1:3]]
    np.testing.assert_allclose(heights[0], unscaled)
    np.testing.assert_allclose(heights[1], scaled)
    assert unscaled.max() > scaled.max()  # scaling keeps the row softer


def test_the_labels_and_description_carry_the_measured_numbers():
    fig = diagrams.score_spread((4, 64), seed=0)
    labels = [t.get_text() for t in fig.axes[0].texts]
    assert labels == [f"std {fig.spread[d]:.1f} ≈ √{d} = {np.sqrt(d):.1f}" for d in (4, 64)]
    text = figures.description(fig)
    assert f"largest weight {fig.rows[1].max():.2f}" in text and f"largest weight {fig.rows[2].max():.2f}" in text


@pytest.mark.parametrize("kwargs", [{"d_ks": ()}, {"d_ks": (0, 4)}, {"m": 1}, {"pairs": 1}])
def test_bad_arguments_are_refused(kwargs):
    with pytest.raises(ValueError):
        diagrams.score_spread(**kwargs)
