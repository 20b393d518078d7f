"""One figure, two media (helpers/style.py, issue 32).

The notebook medium leaves a figure as its code drew it (the stored notebooks and
nbval see no change); the slide medium redraws it at 16:9 with its text large enough
for a lecture hall: every text's cap height at least 13 px once the deck (1100 x 760,
the picture at its own size) is shown on a 1280 x 720 screen.
"""

from __future__ import annotations

import base64
import io
import re

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

from helpers import figures, plots, style  # noqa: E402
from helpers.diagrams import walkthrough  # noqa: E402

DECK_ON_SCREEN = 720 / 760  # a 1100 x 760 deck on a 1280 x 720 screen


def _heatmap():
    weights = np.array([[0.5, 0.3, 0.2], [0.1, 0.8, 0.1], [0.3, 0.3, 0.4]])
    return plots.heatmap(weights, ["I", "am", "happy"], ["I", "am", "happy"]).figure


def _pipeline():
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(3, 4)), rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    return walkthrough.pipeline(q, k, v, ["I", "am", "happy"])


def _png_size(html):
    from PIL import Image

    src = re.search(r'base64,([^"]*)"', html).group(1).replace("&#47;", "/")
    return Image.open(io.BytesIO(base64.b64decode(src))).size


def _caps(html):
    found = re.search(r'data-cap-px="([^"]*)"', html)
    return None if found is None else [float(c) for c in found.group(1).split()]


def test_the_medium_is_the_notebook_unless_told(monkeypatch):
    monkeypatch.delenv(style.ENVIRONMENT, raising=False)
    assert style.current() == "notebook"
    monkeypatch.setenv(style.ENVIRONMENT, "slide")
    assert style.current() == "slide"
    with style.medium("notebook"):
        assert style.current() == "notebook"
    assert style.is_slide()
    monkeypatch.setenv(style.ENVIRONMENT, "poster")
    with pytest.raises(ValueError, match="ATTENTION_MEDIUM"):
        style.current()
    with pytest.raises(ValueError, match="medium"):
        with style.medium("poster"):
            pass


def test_a_notebook_figure_is_drawn_as_its_code_drew_it(monkeypatch):
    monkeypatch.delenv(style.ENVIRONMENT, raising=False)
    monkeypatch.delenv("ATTENTION_CAP_PX", raising=False)
    fig = figures.describe(_heatmap(), "a heatmap")
    size = tuple(fig.get_size_inches())
    html = figures.figure_html(fig)
    assert _caps(html) is None  # the stored notebooks carry no measure
    assert tuple(fig.get_size_inches()) == size
    assert min(style.cap_heights(fig)) < 13  # notebook text: small on a slide (why the slide medium exists)


@pytest.mark.parametrize("draw", [_heatmap, _pipeline], ids=["heatmap", "pipeline"])
def test_a_slide_figure_fits_the_picture_area_with_hall_sized_text(monkeypatch, draw):
    monkeypatch.delenv(style.ENVIRONMENT, raising=False)
    fig = draw()
    figures.describe(fig, "a figure")
    with style.medium("slide"):
        html = figures.figure_html(fig)
    caps = _caps(html)
    assert caps, "a slide figure records its texts' cap heights"
    assert min(caps) * DECK_ON_SCREEN >= 13, f"smallest text {min(caps) * DECK_ON_SCREEN:.1f} px cap on screen"
    width, height = _png_size(html)
    # at most the slide's picture area (the deck grows a smaller picture into the room its slide leaves)
    area = [side * style.SLIDE_DPI for side in style.SLIDE_SIZE_IN]
    assert width <= area[0] * 1.1 and height <= area[1] * 1.1, (width, height)
    measured = style.cap_heights(fig)  # the record is the figure's own text artists
    assert (min(caps), max(caps)) == (min(measured), max(measured))


def test_a_figure_is_fitted_once(monkeypatch):
    fig = _heatmap()
    style.fit_for_slide(fig)
    once = style.cap_heights(fig)
    size = tuple(fig.get_size_inches())
    style.fit_for_slide(fig)
    again = style.cap_heights(fig)
    assert (min(again), max(again)) == (min(once), max(once))
    assert tuple(fig.get_size_inches()) == size


def _cell_texts(fig):
    return [t for ax in fig.axes for t in ax.texts if t.get_text().strip()]


def test_on_a_slide_a_panel_too_small_for_its_numbers_shows_its_colours_alone(monkeypatch):
    """Three 8 x 8 heatmaps in a strip: at slide size their cell numbers would run into each other."""
    import matplotlib.pyplot as plt

    monkeypatch.delenv(style.ENVIRONMENT, raising=False)
    rng = np.random.default_rng(1)
    fig, axes = plt.subplots(1, 3, figsize=(10, 2.4))
    for ax in axes:
        plots.heatmap(rng.random((8, 8)), ax=ax)
    assert len(_cell_texts(fig)) == 3 * 64 and all(t.get_visible() for t in _cell_texts(fig))
    style.fit_for_slide(fig)
    assert not any(t.get_visible() for t in _cell_texts(fig)), "crowded numbers are hidden"
    boxes = [t.get_window_extent() for t in style._texts(fig)]
    assert boxes, "the titles and labels stay"
    plt.close(fig)


def test_on_a_slide_a_panel_with_room_keeps_its_numbers(monkeypatch):
    import matplotlib.pyplot as plt

    monkeypatch.delenv(style.ENVIRONMENT, raising=False)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    plots.heatmap(np.array([[0.5, 0.3, 0.2], [0.1, 0.8, 0.1], [0.3, 0.3, 0.4]]), ["I", "am", "happy"],
                  ["I", "am", "happy"], ax=ax)
    style.fit_for_slide(fig)
    texts = _cell_texts(fig)
    assert len(texts) == 9 and all(t.get_visible() for t in texts)
    boxes = [t.get_window_extent() for t in texts]
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])


def test_a_figure_on_a_bare_canvas_is_fitted_too(monkeypatch):
    """A Figure made without pyplot (12's pictures) has a FigureCanvasBase, which has no get_renderer."""
    from matplotlib.backend_bases import FigureCanvasBase
    from matplotlib.figure import Figure

    monkeypatch.delenv(style.ENVIRONMENT, raising=False)
    fig = Figure(figsize=(10, 2.4))
    FigureCanvasBase(fig)
    rng = np.random.default_rng(2)
    for ax in fig.subplots(1, 3):
        plots.heatmap(rng.random((8, 8)), ax=ax)
    assert not hasattr(fig.canvas, "get_renderer")
    style.fit_for_slide(fig)
    assert not any(t.get_visible() for t in _cell_texts(fig))


# Issue 32, item 2: on a slide no two texts of a picture run into each other.

def _independent_overlaps(fig):
    """Pairs of visible texts whose drawn boxes intersect, computed here from the renderer, not from style."""
    from matplotlib.text import Text

    fig.canvas.draw()
    renderer = fig.canvas.get_renderer() if hasattr(fig.canvas, "get_renderer") else fig._get_renderer()
    texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()
             and (t.axes is None or t.axes.get_visible())]
    for ax in fig.axes:
        for tick in ax.xaxis.get_major_ticks() + ax.yaxis.get_major_ticks():
            if tick.label1.get_visible() and tick.label1.get_text().strip():
                texts.append(tick.label1)
    boxes = []
    for t in {id(t): t for t in texts}.values():
        b = t.get_window_extent(renderer)
        if b.width > 0 and b.height > 0 and b.overlaps(fig.bbox):
            boxes.append(b)
    return sum(1 for i, a in enumerate(boxes) for b in boxes[i + 1:]
               if min(a.x1, b.x1) - max(a.x0, b.x0) > 1 and min(a.y1, b.y1) - max(a.y0, b.y0) > 1)


def _crowded_ticks_figure():
    """Two 16-token heatmaps side by side: at slide size their token labels and titles collide."""
    import matplotlib.pyplot as plt

    rng = np.random.default_rng(3)
    tokens = [f"G{k}" for k in range(16)]
    fig, axes = plt.subplots(1, 2, figsize=(9, 4.6), layout="constrained")
    for ax, name in zip(axes, ("layer 0, head 1: the previous-token head", "layer 1, head 0: the induction head")):
        plots.heatmap(rng.random((16, 16)), tokens, tokens, ax=ax, annotate=False)
        ax.set_title(name)
    return fig


def test_on_a_slide_no_two_texts_of_a_picture_overlap(monkeypatch):
    import matplotlib.pyplot as plt

    monkeypatch.delenv(style.ENVIRONMENT, raising=False)
    fig = _crowded_ticks_figure()
    before = _independent_overlaps(fig)
    style.fit_for_slide(fig)
    # without the untangling the slide's larger text collides (measured before the fix: many pairs)
    assert _independent_overlaps(fig) == 0 == len(style.overlapping_texts(fig)), before
    caps = style.cap_heights(fig)
    assert min(caps) * DECK_ON_SCREEN >= 9, "nothing is made smaller than the 9 px floor"
    # every token keeps a label on at least one axis of each panel, or a thinned axis keeps every k-th
    for ax in fig.axes:
        if ax.get_label() == "<colorbar>":
            continue
        shown = [t.label1.get_text() for t in ax.xaxis.get_major_ticks() if t.label1.get_visible()]
        assert shown and shown[0] == "G0"
    plt.close(fig)


def test_an_untangled_title_keeps_its_words():
    import matplotlib.pyplot as plt

    fig = _crowded_ticks_figure()
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    style.fit_for_slide(fig)
    after = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert [" ".join(t.split()) for t in after] == titles
    plt.close(fig)


def test_a_figure_with_room_is_left_untouched_by_the_untangling(monkeypatch):
    monkeypatch.delenv(style.ENVIRONMENT, raising=False)
    fig = _heatmap()
    style.fit_for_slide(fig)
    assert style.overlapping_texts(fig) == []
    assert all(t.label1.get_rotation() == 0 for ax in fig.axes for t in ax.xaxis.get_major_ticks())


def test_the_panels_of_a_figure_are_counted_without_colour_bars_or_twins():
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3)
    axes[0].twinx()
    fig.colorbar(axes[1].imshow(np.eye(2)), ax=axes[1])
    assert style.panels(fig) == 3
    axes[2].set_visible(False)
    assert style.panels(fig) == 2
    plt.close(fig)


def test_a_slide_figure_records_its_overlaps_and_panels(monkeypatch):
    monkeypatch.delenv(style.ENVIRONMENT, raising=False)
    fig = _crowded_ticks_figure()
    figures.describe(fig, "two heatmaps")
    with style.medium("slide"):
        html = figures.figure_html(fig)
    assert re.search(r'data-overlaps="0" data-panels="2"', html), html[-120:]


def _four_panels():
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 4, figsize=(12, 3), layout="constrained")
    for k, ax in enumerate(axes):
        image = ax.imshow(np.full((3, 3), k), vmin=0, vmax=3)
        ax.set_title(f"panel {k}")
    fig.colorbar(image, ax=axes[3])
    return fig


def test_a_slide_shows_only_the_panels_it_is_told_to(monkeypatch):
    import matplotlib.pyplot as plt

    monkeypatch.delenv(style.ENVIRONMENT, raising=False)
    fig = style.slide_panels(_four_panels(), 0, 3)
    figures.describe(fig, "four panels")
    assert style.panels(fig) == 4, "the notebook medium shows every panel"
    with style.medium("slide"):
        html = figures.figure_html(fig)
    assert 'data-panels="2"' in html
    assert "On this slide: panels 1 and 4" in html
    titles = sorted(ax.get_title() for ax in fig.axes if ax.get_title())
    assert titles == ["panel 0", "panel 3"]
    assert sum(1 for ax in fig.axes if ax.get_label() == "<colorbar>") == 1, "the kept panel keeps its colour bar"
    left, right = (ax.get_position() for ax in fig.axes if ax.get_title())
    assert right.x0 > left.x1, "side by side, in their order"
    plt.close(fig)


def test_slide_panels_names_a_panel_the_figure_lacks():
    import matplotlib.pyplot as plt

    fig = _four_panels()
    with pytest.raises(ValueError, match="4 panels"):
        style.slide_panels(fig, 0, 4)
    with pytest.raises(ValueError, match="at least one"):
        style.slide_panels(fig)
    plt.close(fig)


def test_a_tick_outside_its_axis_view_is_neither_measured_nor_counted(monkeypatch):
    """matplotlib makes tick labels beyond the view limits but never draws them."""
    import matplotlib.pyplot as plt

    monkeypatch.delenv(style.ENVIRONMENT, raising=False)
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.plot([0, 480], [0, 1])
    ax.set_xlim(0, 480)
    fig.canvas.draw()
    made = [t.get_loc() for t in ax.xaxis.get_major_ticks()]
    drawn = [label.get_text() for label in style._tick_labels(fig) if label.axes is ax and label in
             [t.label1 for t in ax.xaxis.get_major_ticks()]]
    assert any(loc > 480 or loc < 0 for loc in made), made  # the locator made ticks out of view
    assert "500" not in drawn and "−100" not in drawn, drawn
    plt.close(fig)


def test_a_closed_figure_is_laid_out_before_it_is_measured(monkeypatch):
    """plt.close(fig) leaves a canvas whose draw() does nothing; the slide fit must still lay the figure out."""
    import matplotlib.pyplot as plt

    monkeypatch.delenv(style.ENVIRONMENT, raising=False)
    open_fig, closed_fig = _crowded_ticks_figure(), _crowded_ticks_figure()
    plt.close(closed_fig)
    style.fit_for_slide(open_fig)
    style.fit_for_slide(closed_fig)
    assert len(style.overlapping_texts(closed_fig)) == len(style.overlapping_texts(open_fig)) == 0
    y_labels = [ax.yaxis.label.get_window_extent().x0 for ax in closed_fig.axes if ax.get_ylabel()]
    assert min(y_labels) >= 0, "the y labels sit inside the canvas, as laid out"
    plt.close(open_fig)


def test_a_text_runs_into_another_texts_box_but_not_through_a_leader_line():
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3))
    ax.set_axis_off()
    ax.text(0.30, 0.5, "the", bbox={"boxstyle": "round,pad=1.2", "facecolor": "white"}, ha="center", va="center")
    ax.text(0.27, 0.5, "0.00", ha="right", va="center")  # clear of the word, inside its box's padding
    assert len(style.overlapping_texts(fig)) == 1, "the number runs into the key's box"
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.set_axis_off()
    ax.annotate("left label", (0.9, 0.9), xytext=(0.05, 0.1), arrowprops={"arrowstyle": "-"})
    ax.annotate("right label", (0.1, 0.9), xytext=(0.6, 0.1), arrowprops={"arrowstyle": "-"})
    assert style.overlapping_texts(fig) == [], "leader lines that cross are not texts"
    plt.close(fig)


def test_a_white_halo_round_a_label_is_not_a_box_that_collides():
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3))
    ax.set_axis_off()
    halo = {"boxstyle": "round,pad=0.6", "facecolor": "white", "edgecolor": "none"}
    ax.text(0.5, 0.52, "G0", bbox=halo, ha="center", va="center")
    ax.text(0.5, 0.44, "L1", bbox=halo, ha="center", va="center")  # the halos touch, the words do not
    assert style.overlapping_texts(fig) == []
    plt.close(fig)
