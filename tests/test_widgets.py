"""The explorer's logic, driven without a browser: set a control, check what the view shows."""

import io
import math
import tracemalloc

import ipywidgets as widgets
import numpy as np
import pytest
from PIL import Image

from helpers import examples
from helpers.attention import entropy
from helpers.widgets import AttentionExplorer, random_qkv, sentence_example, visible

RUNNABLE = examples.list_examples()


def expected(q, k, v, *, d_k, scaled, temperature=1.0, causal=False):
    """Scores, weights and outputs computed independently of the widget and the kernels."""
    scores = q @ k.T / (math.sqrt(d_k) if scaled else 1.0)
    logits = scores / temperature
    if causal:
        logits = np.where(np.tril(np.ones(scores.shape, bool)), logits, -np.inf)
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    weights = e / e.sum(axis=1, keepdims=True)
    return scores, weights, weights @ v


@pytest.fixture(scope="module")
def journey():
    return AttentionExplorer("journey")


def test_controls_the_issue_names_are_there(journey):
    assert {"temperature", "d_k", "scaled", "causal", "row"} <= set(journey.controls)


@pytest.mark.parametrize("name", RUNNABLE)
def test_starts_with_the_examples_own_numbers(name):
    ex = examples.load_example(name)
    view = AttentionExplorer(example=name)
    assert view.controls["d_k"].value == ex.d_k
    assert view.controls["scaled"].value == ex.scaled
    scores, weights, out = expected(ex.q, ex.k, ex.v, d_k=ex.d_k, scaled=ex.scaled)
    np.testing.assert_allclose(view.scores, scores, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(view.weights, weights, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(view.out, out, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    "changes",
    [
        {"temperature": 0.05},
        {"temperature": 20.0},
        {"d_k": 1},
        {"d_k": 1024},
        {"scaled": False},
        {"causal": True},
        {"d_k": 64, "temperature": 0.5, "causal": True},
    ],
    ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()),
)
def test_setting_a_control_updates_the_arrays(changes):
    ex = examples.load_example("journey")
    view = AttentionExplorer("journey")
    for name, value in changes.items():
        view.controls[name].value = value
    c = {name: view.controls[name].value for name in ("d_k", "scaled", "temperature", "causal")}
    scores, weights, out = expected(ex.q, ex.k, ex.v, **c)
    np.testing.assert_allclose(view.scores, scores, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(view.weights, weights, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(view.out, out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(view.weights.sum(axis=-1), 1.0, atol=1e-12)


def test_unscaled_cat_sat_mat_is_the_sections_own():
    view = AttentionExplorer("cat_sat_mat")
    assert view.controls["scaled"].value is False
    ex = examples.load_example("cat_sat_mat")
    np.testing.assert_allclose(view.scores, ex.q @ ex.k.T)


def test_temperature_sharpens_and_flattens(journey):
    normal = journey.readouts["max_weight"].copy()
    journey.controls["temperature"].value = 0.05
    sharp, sharp_entropy = journey.readouts["max_weight"].copy(), journey.readouts["entropy"].copy()
    journey.controls["temperature"].value = 20.0
    flat, flat_entropy = journey.readouts["max_weight"].copy(), journey.readouts["entropy"].copy()
    journey.controls["temperature"].value = 1.0
    assert np.all(sharp > normal) and np.all(flat < normal)
    assert np.all(flat < 1 / 6 + 0.01)  # nearly uniform over the 6 keys
    assert np.all(sharp_entropy < flat_entropy) and np.all(flat_entropy < math.log(6))


def test_readouts_match_the_weights(journey):
    r = journey.readouts
    np.testing.assert_allclose(r["entropy"], entropy(journey.weights))
    np.testing.assert_allclose(r["max_weight"], journey.weights.max(axis=-1))
    np.testing.assert_allclose(r["row_sums"], 1.0)
    assert "entropy" in journey.readout.value and f"{r['max_weight'].mean():.3f}" in journey.readout.value


def test_row_control_draws_that_row_as_bars(journey):
    journey.controls["row"].value = 3
    widths = [bar.get_width() for bar in journey._figure.bars]
    np.testing.assert_allclose(widths, journey.weights[3])
    assert journey._figure.title.startswith("row 'with': entropy")
    journey.controls["row"].value = 0


def test_the_largest_bar_is_marked_in_navy_not_in_the_querys_orange(journey):
    """Orange means the query (helpers/plots.py's convention): the largest weight's bar is dark navy."""
    from matplotlib.colors import to_hex

    from helpers.plots import LARGEST_COLOUR, NEUTRAL_COLOUR, QUERY_ORANGE

    for row in range(len(journey.weights)):
        journey.controls["row"].value = row
        colours = [to_hex(bar.get_facecolor()) for bar in journey._figure.bars]
        best = int(np.argmax(journey.weights[row]))
        assert colours[best] == LARGEST_COLOUR
        assert all(c == NEUTRAL_COLOUR for j, c in enumerate(colours) if j != best)
        assert QUERY_ORANGE not in colours
    journey.controls["row"].value = 0


def test_the_picture_changes_with_the_sliders():
    view = AttentionExplorer("i_am_happy")
    first = view.image.value
    view.controls["temperature"].value = 0.1
    second = view.image.value
    view.controls["d_k"].value = 1
    third = view.image.value
    assert first[:8] == b"\x89PNG\r\n\x1a\n"
    assert len({first, second, third}) == 3


def test_arrays_are_read_only_copies(journey):
    scores = journey.scores
    scores[:] = 0
    assert np.any(journey.scores != 0)
    with pytest.raises(AttributeError):
        journey.weights = np.zeros((6, 6))


def test_switching_example_takes_its_d_k_and_labels():
    view = AttentionExplorer("journey")
    view.controls["d_k"].value = 100
    view.controls["example"].value = "cat_sat"
    assert view.controls["d_k"].value == 4
    assert view.tokens == (["cat", "sat"], ["cat", "sat"])
    assert view.scores.shape == (2, 2)
    assert [v for _, v in view.controls["row"].options] == [0, 1]


def test_own_sentence_uses_seeded_embeddings():
    view = AttentionExplorer("journey", sentence="the cat saw the dog")
    tokens, q, k, v = sentence_example("the cat saw the dog")
    assert view.tokens[0] == tokens == ["the", "cat", "saw", "the", "dog"]
    np.testing.assert_array_equal(q[0], q[3])  # the same word, the same vector
    scores, weights, _ = expected(q, k, v, d_k=view.controls["d_k"].value, scaled=True)
    np.testing.assert_allclose(view.weights, weights, rtol=1e-10)


def test_random_mode_spread_grows_with_d_k_only_when_unscaled():
    view = AttentionExplorer("journey", mode="random")
    spreads = {}
    for scaled in (False, True):
        view.controls["scaled"].value = scaled
        for d_k in (4, 64, 1024):
            view.controls["d_k"].value = d_k
            q, k, v = random_qkv(d_k)
            scores, weights, _ = expected(q, k, v, d_k=d_k, scaled=scaled)
            np.testing.assert_allclose(view.scores, scores, rtol=1e-10)
            spreads[scaled, d_k] = view.readouts["score_std"]
    assert spreads[False, 1024] > 8 * spreads[False, 4]  # grows like sqrt(d_k)
    assert 0.5 < spreads[True, 4] < 2 and 0.5 < spreads[True, 1024] < 2  # stays near 1


def test_unknown_example_is_a_value_error():
    with pytest.raises(ValueError, match="unknown example 'nope'"):
        AttentionExplorer("nope")


def test_it_displays_as_a_widget(journey):
    bundle = journey._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle


def test_500_moves_do_not_grow_memory_or_figures():
    import matplotlib.pyplot as plt

    plt.close("all")  # figures other tests left open are not the explorer's
    view = AttentionExplorer("journey")
    slider = view.controls["temperature"]
    for i in range(20):  # warm the caches (glyphs, colours)
        slider.value = 0.1 + (i % 10) / 10
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for i in range(500):
        slider.value = 0.1 + (i % 10) / 10
    growth = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert growth < 512 * 1024, f"memory grew by {growth} bytes over 500 moves"
    assert plt.get_fignums() == []  # the explorer never creates pyplot figures


# -- d_k told as what it is, display with and without a kernel, failures ------------


def test_d_k_is_the_divisor_in_example_mode_and_the_width_in_random_mode():
    view = AttentionExplorer("cat_sat")
    d_k = view.controls["d_k"]
    d_k.value = 512
    assert d_k.description == "divide by √d_k"
    assert view.divisor_text == "÷ √512 = 22.63"
    assert view.d_k_help.value.startswith("÷ √512 = 22.63: the divisor of these fixed scores")
    width = examples.load_example("cat_sat").q.shape[-1]
    assert f"q and k keep their {width} numbers" in view.d_k_help.value
    assert view.scores.shape == (2, 2)  # the example's own vectors: only the divisor moved
    view.controls["mode"].value = "random"
    assert d_k.description == "d_k = size of q, k"
    assert view.d_k_help.value.startswith("q and k have 512 numbers each")
    assert view._inputs["q"].shape == (8, 512)
    view.controls["scaled"].value = False
    assert "unscaled" in view.d_k_help.value and view.divisor_text == "÷ 1"


def _displayed(explorer):
    """What IPython's display machinery makes of ``explorer``: the data of its one output."""
    from IPython.core.formatters import DisplayFormatter

    data, _ = DisplayFormatter().format(explorer)
    return data


def _check_bundle(data, explorer):
    import base64
    import html
    import io
    import re

    from PIL import Image

    # the snapshot is stored once, in the <img> (issue 22): no image/png beside it
    assert set(data) == {"application/vnd.jupyter.widget-view+json", "text/html", "text/plain"}
    # the snapshot with its description as alt text (issue 19), from the numbers shown
    alt = f"largest weight {explorer.readouts['max_weight'].max():.2f}"
    assert data["text/html"].startswith('<img class="described-figure" alt="Attention explorer: ')
    assert alt in data["text/html"] and "temperature 0.50" in data["text/html"]
    png = html.unescape(re.fullmatch(r'<img [^>]*src="data:image/png;base64,([^"]+)">', data["text/html"]).group(1))
    assert png == base64.b64encode(explorer.snapshot_png()).decode("ascii")
    assert data["application/vnd.jupyter.widget-view+json"]["model_id"] == explorer.widget.model_id
    picture = Image.open(io.BytesIO(base64.b64decode(png)))
    figure = Image.open(io.BytesIO(bytes(explorer.image.value)))
    assert picture.width >= figure.width and picture.height > figure.height  # the figure and the readouts
    assert data["text/plain"].startswith("AttentionExplorer: example 'journey', T = 0.50")
    assert " at 0x" not in data["text/plain"]


def test_display_carries_the_widget_a_picture_and_a_short_text(journey):
    journey.controls["temperature"].value = 0.5
    try:
        _check_bundle(_displayed(journey), journey)
    finally:
        journey.controls["temperature"].value = 1.0


def test_display_works_like_ipywidgets_7_without_widget_mimebundles(monkeypatch, journey):
    # ipywidgets 7 widgets have no _repr_mimebundle_ (they display through _ipython_display_)
    import ipywidgets

    monkeypatch.delattr(ipywidgets.Widget, "_repr_mimebundle_", raising=False)
    assert not hasattr(journey.widget, "_repr_mimebundle_")
    journey.controls["temperature"].value = 0.5
    try:
        _check_bundle(_displayed(journey), journey)
    finally:
        journey.controls["temperature"].value = 1.0


def test_a_failed_update_keeps_the_picture_and_every_control(monkeypatch):
    from helpers import plots

    view = AttentionExplorer("journey")
    picture, weights = bytes(view.image.value), view.weights
    real_png = plots.AttentionFigure.png

    def broken(self):
        raise ValueError("a drawing that cannot be drawn\nsecond line")

    monkeypatch.setattr(plots.AttentionFigure, "png", broken)
    view.controls["temperature"].value = 0.2
    assert view.message.startswith("This change could not be drawn (ValueError: a drawing that cannot be drawn)")
    assert "second line" not in view.message
    assert "could not be drawn" in view.notice.value
    assert bytes(view.image.value) == picture
    np.testing.assert_array_equal(view.weights, weights)  # the numbers shown match the picture shown
    monkeypatch.setattr(plots.AttentionFigure, "png", real_png)
    view.controls["causal"].value = True  # the next move works, and the temperature was not lost
    assert view.message == ""
    assert bytes(view.image.value) != picture
    ex = examples.load_example("journey")
    _, expected_weights, _ = expected(ex.q, ex.k, ex.v, d_k=ex.d_k, scaled=ex.scaled, temperature=0.2, causal=True)
    np.testing.assert_allclose(view.weights, expected_weights, rtol=1e-10)


def test_html_in_a_token_is_shown_as_text():
    view = AttentionExplorer("journey", sentence="<img src=x onerror=alert(1)> <b>bold & more")
    assert "<img" not in view.readout.value and "<b>bold" not in view.readout.value
    assert "<td>&lt;img</td>" in view.readout.value and "<td>&lt;b&gt;bold</td>" in view.readout.value
    assert "<td>&amp;</td>" in view.readout.value


def test_a_long_sentence_says_where_it_was_cut():
    words = [f"w{i}" for i in range(200)]
    view = AttentionExplorer("journey", sentence=" ".join(words))
    assert view.scores.shape == (64, 64)
    assert view.message == "Showing the first 64 of 200 words; cut after 'w63'."
    assert "cut after &#x27;w63&#x27;" in view.notice.value
    view.controls["sentence"].value = "short again"
    assert view.message == ""


def test_characters_the_font_lacks_show_as_a_placeholder():
    # filterwarnings = error: a "Glyph ... missing from font" warning would fail this test
    view = AttentionExplorer("journey", sentence="bell\x07 \ud800 \U0001F9D1\u200d\U0001F4BB ok")
    assert [visible(t) for t in view.tokens[0]] == ["bell�", "�", "���", "ok"]
    assert view.controls["row"].options[0] == ("0: bell�", 0)
    view.controls["row"].value = 1
    assert view.message == ""


def assert_draws_like(view, fresh):
    """``view``'s kept figure draws what ``fresh``'s new one draws, given the same arrays (issue 18).

    Each explorer computed its arrays itself; they agree to 1e-12 (a reduction may round its
    last bit differently at another memory alignment), so both figures draw one set of them.
    """
    np.testing.assert_allclose(view.weights, fresh.weights, rtol=0, atol=1e-12)
    assert view._figure.shape == fresh._figure.shape and view._figure.d_v == fresh._figure.d_v
    row = min(view.controls["row"].value, view._figure.shape[0] - 1)
    pictures = []
    for explorer in (view, fresh):
        explorer._figure.update(view._scores, view._weights, view._out, row=row)
        pictures.append(np.asarray(Image.open(io.BytesIO(explorer._figure.png()))))
    kept, new = pictures
    assert kept.shape == new.shape
    differ = (kept != new).any(axis=-1)
    rows, cols = np.nonzero(differ)
    assert not differ.any(), (f"{differ.sum()} pixels differ, rows {rows.min()}-{rows.max()}, "
                              f"columns {cols.min()}-{cols.max()} of {kept.shape[:2]}")


def test_a_new_long_sentence_reuses_the_figure_and_draws_what_a_fresh_one_draws():
    """Labels a figure does not write are not part of it (issue 18: a new sentence at once)."""
    first = " ".join(f"a{i}" for i in range(40))
    second = " ".join(f"b{i}" for i in range(40))
    view = AttentionExplorer("journey", sentence=first)
    figure = view._figure
    view.controls["sentence"].value = second
    assert view._figure is figure  # reused: 40 tokens are too many to write beside the rows
    fresh = AttentionExplorer("journey", sentence=second)
    assert_draws_like(view, fresh)
    assert view._figure.title == fresh._figure.title and "'b0'" in view._figure.title
    np.testing.assert_array_equal(view.weights, fresh.weights)


def test_a_short_sentence_of_the_same_length_is_relabelled_and_draws_what_a_fresh_one_draws():
    """Other words, same count: the kept figure gets new labels and margins (issue 18)."""
    view = AttentionExplorer("journey", sentence="the cat sat")
    figure = view._figure
    view.controls["sentence"].value = "a hippopotamus ran"
    assert view._figure is figure
    assert [t.get_text() for t in view._figure.ax_scores.get_yticklabels()] == ["a", "hippopotamus", "ran"]
    assert [t.get_text() for t in view._figure.ax_bars.get_yticklabels()] == ["a", "hippopotamus", "ran"]
    fresh = AttentionExplorer("journey", sentence="a hippopotamus ran")
    assert_draws_like(view, fresh)


@pytest.mark.parametrize("sentences", [
    ("the cat sat", "the cat sat down", "the cat sat"),  # one more token, and back
    ("I am happy", " ".join(f"w{i}" for i in range(64)), "I am happy"),  # 3 -> 64 (no labels) -> 3
    ("a " * 12, "hippopotamus", "x y z " * 8),  # 12 -> 1 -> 24 (the most labels written)
])
def test_another_length_reshapes_the_one_figure_and_draws_what_a_fresh_one_draws(sentences):
    """Another count: the same figure, reshaped; every picture as a new explorer draws it (issue 18)."""
    view = AttentionExplorer("journey", sentence=sentences[0])
    figure = view._figure
    for sentence in sentences[1:]:
        view.controls["sentence"].value = sentence
        assert view._figure is figure  # one figure per explorer, never another built
        fresh = AttentionExplorer("journey", sentence=sentence)
        assert_draws_like(view, fresh)
        assert [t.get_text() for t in view._figure.ax_scores.get_yticklabels()] == \
               [t.get_text() for t in fresh._figure.ax_scores.get_yticklabels()]


def test_switching_examples_and_modes_reshapes_and_draws_what_a_fresh_one_draws():
    view = AttentionExplorer("journey")
    figure = view._figure
    for name in [*examples.list_examples(), "cat_sat"]:
        view.controls["example"].value = name
        assert view._figure is figure
        assert_draws_like(view, AttentionExplorer(name))
    view.controls["mode"].value = "random"
    assert view._figure is figure
    assert_draws_like(view, AttentionExplorer("cat_sat", mode="random"))


def test_a_shape_drawn_before_reuses_its_picture_of_the_unchanging_part(monkeypatch):
    """Back to an example seen before: no render of axes and ticks, and the same picture (issue 18)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    view = AttentionExplorer("cat_sat")
    view.controls["example"].value = "journey"
    renders, real_draw = [], FigureCanvasAgg.draw
    monkeypatch.setattr(FigureCanvasAgg, "draw", lambda canvas: (renders.append(canvas.figure), real_draw(canvas))[1])
    view.controls["example"].value = "cat_sat"
    view.controls["example"].value = "journey"
    assert renders == []
    assert_draws_like(view, AttentionExplorer("journey"))
    view.controls["example"].value = "i_am_happy"  # never drawn by this explorer: rendered once
    assert sum(figure is view._figure.figure for figure in renders) == 1


def test_relabel_keeps_the_shape():
    from helpers.plots import AttentionFigure

    figure = AttentionFigure(["a", "b"], ["a", "b"], 3)
    with pytest.raises(ValueError, match="keeps the shape"):
        figure.relabel(["a", "b", "c"], ["a", "b", "c"])


def test_the_picture_is_described_in_text_right_after_it():
    """A screen reader reads the picture's description; the site copies it into the alt (issue 19)."""
    view = AttentionExplorer("i_am_happy")
    children = list(view.widget.children)
    assert children[children.index(view.image) + 1] is view.image_text
    assert "explorer-picture-description" in view.image_text.value
    assert "largest weight 0.48, happy to happy" in view.image_text.value
    view.controls["temperature"].value = 0.5
    assert "temperature 0.50" in view.image_text.value
    view.controls["sentence"].value = "<b>x</b>"
    view.controls["example"].value = "(your sentence)"
    assert "<b>" not in view.image_text.value and "&lt;b&gt;" in view.image_text.value


# -- the scaled scores named as what they are, and d_k's effect visible (issue 23) -------------------


def test_the_panel_of_q_k_over_root_d_k_is_titled_scaled_scores():
    view = AttentionExplorer("i_am_happy")  # the document scales
    ex = examples.load_example("i_am_happy")
    np.testing.assert_allclose(view.scores, ex.q @ ex.k.T / math.sqrt(ex.d_k))
    assert view._figure.ax_scores.get_title() == "scaled scores" == view.scores_title
    assert "heatmaps of the scaled scores q·k / √d_k (d_k = 3, ÷ √3 = 1.73)" in view.description
    assert view.readout.value.startswith('<div role="status" aria-live="polite"><p><b>scaled scores = q·k / √d_k')
    scaled_picture = bytes(view.image.value)
    view.controls["scaled"].value = False  # now the panel shows q k^T
    np.testing.assert_allclose(view.scores, ex.q @ ex.k.T)
    assert view._figure.ax_scores.get_title() == "unscaled scores" == view.scores_title
    assert "heatmaps of the unscaled scores q·k," in view.description
    assert "scaled scores" in view.image_text.value  # the screen reader's text says the same
    # the title is drawn, not only set: the picture is a new figure's, titled "unscaled scores"
    from helpers.plots import AttentionFigure

    fresh = AttentionFigure(*view.tokens, 3, scores_title="unscaled scores")
    fresh.update(view.scores, view.weights, view.out, scores_limit=view.scores_limit)
    np.testing.assert_array_equal(np.asarray(Image.open(io.BytesIO(bytes(view.image.value)))),
                                  np.asarray(Image.open(io.BytesIO(fresh.png()))))
    view.controls["scaled"].value = True
    assert view._figure.ax_scores.get_title() == "scaled scores"
    assert bytes(view.image.value) == scaled_picture  # the picture with its title back, as before
    unscaled = AttentionExplorer("cat_sat_mat")  # the document does not scale
    assert unscaled._figure.ax_scores.get_title() == "unscaled scores"
    assert_draws_like(unscaled, AttentionExplorer("cat_sat_mat"))


def _scores_cells(view):
    """The colours the scores' heatmap paints, (n, m, 4) RGBA in 0-255."""
    image = view._figure.im_scores
    return image.to_rgba(image.get_array(), bytes=True).astype(int)


def test_d_k_visibly_divides_the_scores_in_the_default_view():
    """Example mode: the scores' colour scale stays put while d_k moves, so a larger divisor pales
    the scaled scores (and writes smaller numbers); the text says what d_k is here."""
    view = AttentionExplorer("i_am_happy")
    ex = examples.load_example("i_am_happy")
    limit = np.abs(ex.q @ ex.k.T).max()  # the largest unscaled score
    assert view._figure.im_scores.get_clim() == (-limit, limit) and view.scores_limit == limit
    own = _scores_cells(view)
    texts = [stamp[3] for stamp in view._figure._stamps if stamp[0] is view._figure.ax_scores]
    view.controls["d_k"].value = 300
    assert view._figure.im_scores.get_clim() == (-limit, limit)  # the same scale ...
    paler = _scores_cells(view)
    # ... on which every score is 10 times nearer 0: each cell nearer white (255) than it was
    assert np.all(paler[..., :3].min(axis=-1) > own[..., :3].min(axis=-1))
    assert [stamp[3] for stamp in view._figure._stamps if stamp[0] is view._figure.ax_scores] == \
        [f"{s:.2f}" for s in (ex.q @ ex.k.T / math.sqrt(300)).ravel()] != texts
    assert view.own_d_k == 3
    assert "q and k keep their 3 numbers (their own d_k is 3)" in view.d_k_help.value
    assert "(q and k have 3 numbers each)" in view.readout.value
    assert "q and k have 3 numbers each" in view.description
    view.controls["scaled"].value = False
    assert view.d_k_help.value.startswith("unscaled: d_k changes nothing here")


def test_random_mode_keeps_one_colour_scale_so_unscaled_scores_run_off_it():
    view = AttentionExplorer("i_am_happy", mode="random")
    view.controls["d_k"].value = 1024
    assert view._figure.im_scores.get_clim() == (-3.0, 3.0) and view.own_d_k == 1024
    scaled_off_scale = np.mean(np.abs(view.scores) > 3)
    view.controls["scaled"].value = False
    assert view._figure.im_scores.get_clim() == (-3.0, 3.0)
    assert np.mean(np.abs(view.scores) > 3) > 0.8 > 0.1 > scaled_off_scale


def test_the_trained_heads_explorer_writes_its_weights_10_pixels_high():
    from helpers.widgets import TrainedHeadExplorer

    view = TrainedHeadExplorer(text="A B C D A B C", layer=1, head=0)
    figure, _, texts = view._figure
    assert len(texts) == 49
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(figure).get_renderer()
    for text in texts:
        assert text.get_fontsize() >= 10  # points; _png() saves at 72 dpi, so a point is a pixel
        box = text.get_window_extent(renderer=renderer)
        cell = text.axes.transData.transform([(0, 0), (1, 0)])
        assert box.width <= cell[1, 0] - cell[0, 0], f"{text.get_text()!r} is wider than its cell"


# ---------------------------------------------------------------------------
# Sliders a keyboard can drive: about 20 presses end to end
# ---------------------------------------------------------------------------


def _grid(slider):
    """Every value the arrow keys reach, from the low end to the high end, one press apart."""
    from helpers.widgets import presses_across

    n = presses_across(slider)
    return [slider.base ** (slider.min + i * slider.step) for i in range(n + 1)]


@pytest.mark.parametrize("explorer", ["attention", "trained"])
def test_every_slider_crosses_its_range_in_about_20_presses(explorer):
    from helpers.widgets import TrainedHeadExplorer, presses_across

    view = AttentionExplorer("journey") if explorer == "attention" else TrainedHeadExplorer()
    sliders = {name: c for name, c in view.controls.items() if hasattr(c, "step") and hasattr(c, "max")}
    assert sliders, "no slider found"
    for name, slider in sliders.items():
        presses = presses_across(slider)
        assert 8 <= presses <= 30, f"{name}: {presses} arrow presses from one end to the other"
        assert presses_across(slider, keys_per_press=5) <= 6, f"{name}: PageUp/PageDown take too many presses"
        grid = _grid(slider)
        assert math.isclose(grid[0], slider.base ** slider.min) and math.isclose(grid[-1], slider.base ** slider.max)


def test_the_lessons_values_are_on_the_sliders_grid():
    view = AttentionExplorer("journey")
    temperatures = _grid(view.controls["temperature"])
    for t in (0.1, 1.0, 10.0):  # notebook 07: T from 1 down to 0.1 takes 10 presses
        assert any(math.isclose(t, g, rel_tol=1e-9) for g in temperatures), t
    assert temperatures.index(min(temperatures, key=lambda g: abs(g - 1.0))) - \
        temperatures.index(min(temperatures, key=lambda g: abs(g - 0.1))) == 10
    d_ks = [round(g) for g in _grid(view.controls["d_k"])]
    assert d_ks == [2 ** i for i in range(11)]  # 1, 4, 16, 64, 256, 1024 of notebook 07 among them
    view.controls["d_k"].value = 300  # a value between two presses can still be set (or typed)
    assert view.d_k == 300 and view.divisor_text == "÷ √300 = 17.32"


def test_the_help_line_names_page_up_and_page_down():
    from helpers.widgets import KEYS_HELP, TrainedHeadExplorer

    for view in (AttentionExplorer("journey"), TrainedHeadExplorer()):
        texts = [w.value for w in view.widget.children if isinstance(w, widgets.HTML)]
        assert KEYS_HELP in texts
    assert "PageUp/PageDown" in KEYS_HELP and "Home/End" in KEYS_HELP
