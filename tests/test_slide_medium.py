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
