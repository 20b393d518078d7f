"""Tests of helpers.plots' colour scales: what the colour bar says is what the colours mean."""

import matplotlib.pyplot as plt
import numpy as np
import pytest

from helpers import plots
from helpers.examples import load_example


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def journey_weights():
    ex = load_example("journey")
    s = ex.q @ ex.k.T / np.sqrt(ex.d_k)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True), ex.tokens


def colour_bar(image):
    (bar,) = [ax for ax in image.figure.axes if ax is not image.axes]
    return bar


def test_data_scale_spans_the_weights():
    weights, tokens = journey_weights()
    image = plots.heatmap(weights, tokens, tokens, scale="data")
    lo, hi = weights.min(), weights.max()
    assert image.get_clim() == (lo, hi)
    bar = colour_bar(image)
    np.testing.assert_allclose(bar.get_ylim(), (lo, hi))
    label = bar.get_ylabel()
    assert f"data range {lo:.2f}\u2013{hi:.2f}" in label and "attention weight" in label
    # the cells' colours now differ visibly: the extremes map to the two ends of the colour map
    rgba = image.cmap(image.norm(weights))
    assert np.allclose(rgba[np.unravel_index(weights.argmin(), weights.shape)], image.cmap(0.0))
    assert np.allclose(rgba[np.unravel_index(weights.argmax(), weights.shape)], image.cmap(1.0))


def test_unit_scale_is_the_default_and_says_so():
    weights, tokens = journey_weights()
    for image in (plots.heatmap(weights, tokens, tokens), plots.heatmap(weights, scale="unit")):
        assert image.get_clim() == (0.0, 1.0)
        bar = colour_bar(image)
        np.testing.assert_allclose(bar.get_ylim(), (0.0, 1.0))
        assert "fixed 0\u20131 scale" in bar.get_ylabel() and "comparable" in bar.get_ylabel()


def test_annotations_stay_readable_on_the_data_scale():
    weights, tokens = journey_weights()
    image = plots.heatmap(weights, tokens, tokens, scale="data")
    texts = {(round(t.get_position()[1]), round(t.get_position()[0])): t for t in image.axes.texts}
    lightest = np.unravel_index(weights.argmax(), weights.shape)  # viridis' top is yellow: black text
    darkest = np.unravel_index(weights.argmin(), weights.shape)  # its bottom is dark purple: white text
    assert texts[lightest].get_color() == "black"
    assert texts[darkest].get_color() == "white"
    # on the unit scale the same narrow range is all dark: every value is written in white
    image = plots.heatmap(weights, tokens, tokens)
    assert {t.get_color() for t in image.axes.texts} == {"white"}


def test_heatmaps_pass_the_scale_on():
    weights, tokens = journey_weights()
    fig = plots.heatmaps([weights, weights[:, ::-1] * 0 + 1 / 6], ["a", "b"], tokens, tokens, scale="data")
    images = [ax.images[0] for ax in fig.axes if ax.images]
    assert images[0].get_clim() == (weights.min(), weights.max())
    lo, hi = images[1].get_clim()  # equal weights: a small range around them, no division by zero
    assert lo < 1 / 6 < hi and hi - lo == pytest.approx(0.01)


def test_weights_scale_and_bad_scale():
    assert plots.weights_scale([[0.3, 0.7]], "unit")[:2] == (0.0, 1.0)
    assert plots.weights_scale([[0.1234, 0.1236]], "data")[2].endswith("data range 0.123\u20130.124)")
    with pytest.raises(ValueError, match='scale must be "unit"'):
        plots.heatmap([[0.5, 0.5]], scale="log")


def test_one_orange_and_it_means_the_query():
    """plots.py's colour convention: the diagrams' query orange is plots.QUERY_ORANGE, and no other role is orange."""
    import colorsys

    from matplotlib.colors import to_rgb

    from helpers import diagrams, plots

    assert plots.QUERY_ORANGE == diagrams.QUERY_COLOUR

    def orange(colour):
        h, _, s = colorsys.rgb_to_hls(*to_rgb(colour))
        return 15 / 360 <= h <= 45 / 360 and s > 0.5

    assert orange(plots.QUERY_ORANGE)
    for name in ("NEUTRAL_COLOUR", "LARGEST_COLOUR", "UNSCALED_COLOUR", "SCALED_COLOUR"):
        assert not orange(getattr(plots, name)), name
    assert not orange(diagrams.BACKWARD_COLOUR) and not orange(diagrams.KEY_COLOUR)


def test_attention_bars_of_16_keys_on_a_slide_writes_few_values_and_no_texts_run_into_each_other():
    # issue 32: notebook 08's two rows of 16 weights (one saturated, one spread) side by side on a slide
    from helpers import style
    from helpers.attention import softmax

    rng = np.random.default_rng(0)
    rows = softmax(rng.normal(size=16) * 30), softmax(rng.normal(size=16))
    keys = [f"k{j}" for j in range(16)]
    with style.medium("slide"), plt.rc_context({"font.size": 13}):
        fig, axes = plt.subplots(1, 2, figsize=(10, 4.6), layout="constrained")
        for ax, w in zip(axes, rows):
            plots.attention_bars(w, keys, ax=ax, title="row 0 at d_k = 1024")
        style.fit_for_slide(fig)
        assert style.overlapping_texts(fig) == []
        written = [t.get_text() for t in axes[1].texts if t.get_text()]
        assert sorted(written) == sorted(f"{w:.2f}" for w in sorted(rows[1], reverse=True)[:3] if w >= 0.05)
    plt.close(fig)
    with style.medium("notebook"):   # the notebook's chart writes every value and names every key
        fig, ax = plt.subplots()
        plots.attention_bars(rows[1], keys, ax=ax)
        assert len([t for t in ax.texts if t.get_text()]) == 16
        assert [t.get_text() for t in ax.get_yticklabels()] == keys
    plt.close(fig)
