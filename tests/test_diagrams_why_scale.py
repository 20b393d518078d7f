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


# diagrams.saturation: the largest weight and the Jacobian's size against d_k, unscaled and scaled

def _rows(d_ks, seed=3, rows=200, m=16):
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal((rows, max(d_ks))), rng.standard_normal((rows, m, max(d_ks)))
    soft = lambda s: np.exp(s - s.max(-1, keepdims=True)) / np.exp(s - s.max(-1, keepdims=True)).sum(-1, keepdims=True)  # noqa: E731
    raw = [np.einsum("rc,rjc->rj", q[:, :d], k[:, :, :d]) for d in d_ks]
    return [soft(s) for s in raw], [soft(s / np.sqrt(d)) for s, d in zip(raw, d_ks)]


def test_the_curves_drawn_are_the_largest_weight_and_the_jacobian_size():
    d_ks = (1, 16, 256)
    un, sc = _rows(d_ks)
    fig = diagrams.saturation(d_ks, un, sc)
    by_hand_max = [w.max(-1).mean() for w in un]
    by_hand_jac = [np.median([np.linalg.norm(np.diag(a) - np.outer(a, a)) for a in w]) for w in sc]
    np.testing.assert_allclose(fig.curves["largest"][0], by_hand_max, rtol=1e-12)
    np.testing.assert_allclose(fig.curves["jacobian"][1], by_hand_jac, rtol=1e-12)
    left, right = fig.axes
    np.testing.assert_allclose(left.lines[0].get_ydata(), by_hand_max)
    np.testing.assert_allclose(right.lines[1].get_ydata(), by_hand_jac)
    assert right.get_yscale() == "log" and list(left.lines[0].get_xdata()) == list(d_ks)
    # unscaled rows saturate and stop passing gradient; scaled rows do neither
    assert fig.curves["largest"][0][-1] > 0.85 and fig.curves["largest"][1].max() < 0.35
    assert fig.curves["jacobian"][0][-1] < 0.05 < 0.2 < fig.curves["jacobian"][1].min()
    text = figures.description(fig)
    assert f"from {by_hand_max[0]:.2f} to {by_hand_max[-1]:.2f}" in text and "16 keys" in text


@pytest.mark.parametrize("d_ks", [(4,), (4, 4), (0, 4), (16, 4)])
def test_saturation_refuses_widths_that_are_not_increasing(d_ks):
    un, sc = _rows((1, 2))
    with pytest.raises(ValueError):
        diagrams.saturation(d_ks, un[:len(d_ks)], sc[:len(d_ks)])


def test_saturation_needs_one_array_per_width():
    un, sc = _rows((1, 2, 4))
    with pytest.raises(ValueError):
        diagrams.saturation((1, 2, 4), un[:2], sc)


def test_saturation_labels_reach_aa_contrast():
    from matplotlib.colors import to_rgba
    from matplotlib.text import Text

    from helpers import plots

    un, sc = _rows((1, 4, 16))
    fig = diagrams.saturation((1, 4, 16), un, sc)
    low = []
    for text in fig.findobj(Text):
        if text.get_visible() and text.get_text().strip():
            r, g, b, a = to_rgba(text.get_color())
            shown = np.array([r, g, b]) * a + (1 - a)  # over white
            if plots.contrast_ratio(shown, (1.0, 1.0, 1.0)) < 4.5:
                low.append(text.get_text())
    assert not low, f"labels below 4.5:1: {low}"


# diagrams.jacobian_pile: histograms of |J|_F at one width, one panel per condition, the pile counted (issue 23)

def test_the_pile_is_counted_in_the_bars_and_the_annotation():
    un, sc = _rows((1024,), rows=300)
    un, sc = un[0], sc[0]
    fig = diagrams.jacobian_pile(un, sc, 1024)
    by_hand = {name: np.array([np.linalg.norm(np.diag(a) - np.outer(a, a)) for a in w])
               for name, w in (("unscaled", un), ("scaled", sc))}
    for ax, name in zip(fig.axes, ("unscaled", "scaled")):
        np.testing.assert_allclose(fig.sizes[name], by_hand[name], rtol=1e-12)
        heights = [bar.get_height() for bar in ax.patches]  # bins of 0.02 from 0 to 0.6, counted by hand
        by_bin = [np.sum((by_hand[name] >= 0.02 * b) & (by_hand[name] < 0.02 * (b + 1))) for b in range(30)]
        assert len(heights) == 30 and np.array_equal(heights, by_bin)
        assert sum(heights) == len(un)  # every row is in a bin: |J|_F < 1/sqrt(2) < 0.6 here
        assert ax.texts[0].get_text() == f"{int(heights[0])} rows with |J|_F < 0.02"
        hot = int((dict(unscaled=un, scaled=sc)[name].max(-1) > 0.99).sum())
        assert fig.saturated[name] == hot and f"{hot} of {len(un)} rows" in ax.get_title()
    # the unscaled rows pile up in the first bin; the scaled ones do not
    assert fig.counts["unscaled"][0] > 0.5 * len(un) and fig.counts["scaled"][0] == 0
    text = figures.description(fig)
    assert f"Left, unscaled: {int(fig.counts['unscaled'][0])} rows in the first bin" in text
    assert f"{fig.saturated['unscaled']} rows with a weight above 0.99" in text


def test_the_conditions_keep_their_colours_in_every_picture_of_08():
    from matplotlib.colors import same_color

    from helpers import plots

    un, sc = _rows((1, 64))
    pile = diagrams.jacobian_pile(un[1], sc[1], 64)
    assert all(same_color(bar.get_facecolor(), plots.UNSCALED_COLOUR) for bar in pile.axes[0].patches)
    assert all(same_color(bar.get_facecolor(), plots.SCALED_COLOUR) for bar in pile.axes[1].patches)
    sat = diagrams.saturation((1, 64), un, sc)
    for ax in sat.axes:
        assert same_color(ax.lines[0].get_color(), plots.UNSCALED_COLOUR)
        assert same_color(ax.lines[1].get_color(), plots.SCALED_COLOUR)
    spread = diagrams.score_spread((4, 64))
    assert same_color(spread.axes[1].patches[0].get_facecolor(), plots.UNSCALED_COLOUR)
    assert same_color(spread.axes[2].patches[0].get_facecolor(), plots.SCALED_COLOUR)
    # orange means the query in this collection; none of 08's condition colours is orange
    for fig in (pile, sat, spread):
        colours = [p.get_facecolor() for ax in fig.axes for p in ax.patches] + \
                  [line.get_color() for ax in fig.axes for line in ax.lines]
        assert not any(same_color(c, plots.QUERY_ORANGE) or same_color(c, "#d95f02") for c in colours)


@pytest.mark.parametrize("kwargs", [{"unscaled": np.ones(4)}, {"scaled": np.ones((3, 5))}, {"bin_width": 0}])
def test_the_pile_refuses_bad_arguments(kwargs):
    args = {"unscaled": np.full((3, 4), 0.25), "scaled": np.full((3, 4), 0.25), "d_k": 4} | kwargs
    with pytest.raises(ValueError):
        diagrams.jacobian_pile(**args)


def test_on_a_slide_the_two_rows_share_one_panel():
    """Issue 32: at most two panels on a slide; the notebook keeps its three."""
    from helpers import style

    with style.medium("slide"):
        fig = diagrams.score_spread((4, 64, 512))
    assert len(fig.axes) == 2
    bars = fig.axes[1].patches
    scores, unscaled, scaled = fig.rows
    assert len(bars) == 2 * len(scores)
    np.testing.assert_allclose([b.get_height() for b in bars], np.concatenate([unscaled, scaled]))
    text = figures.description(fig)
    assert "Middle" not in text and f"{unscaled.max():.2f} unscaled" in text and f"{scaled.max():.2f} scaled" in text
    with style.medium("notebook"):
        assert len(diagrams.score_spread((4, 64, 512)).axes) == 3


def _rows_like_notebook_08():
    """Softmax rows over 16 keys of 500 random queries at d_k = 1 ... 1024, raw and scaled (notebook 08's set-up)."""
    from helpers.attention import softmax

    rng, un, sc = np.random.default_rng(8), [], []
    for d in [2**p for p in range(11)]:
        s = rng.standard_normal((500, d)) @ rng.standard_normal((16, d)).T
        un.append(softmax(s))
        sc.append(softmax(s / np.sqrt(d)))
    return un, sc


@pytest.mark.parametrize("draw", ["score_spread", "saturation", "jacobian_pile"])
def test_notebook_08_diagrams_on_a_slide_have_no_texts_running_into_each_other(draw):
    # issue 32: two panels, one text size, only ticks inside the view; the notebook's picture stays as it is
    from helpers import style

    un, sc = _rows_like_notebook_08()
    make = {"score_spread": lambda: diagrams.score_spread((4, 64, 512)),
            "saturation": lambda: diagrams.saturation([2**p for p in range(11)], un, sc),
            "jacobian_pile": lambda: diagrams.jacobian_pile(un[-1], sc[-1], 1024)}[draw]
    with style.medium("slide"):
        fig = make()
        style.fit_for_slide(fig)
        assert style.panels(fig) <= 2
        assert style.overlapping_texts(fig) == []
        caps = style.cap_heights(fig)
        assert caps[0] >= 13 and caps[len(caps) // 2] >= 14
    with style.medium("notebook"):
        assert tuple(make().get_size_inches()) in {(12, 3.4), (10, 3.1), (10, 3.0)}
