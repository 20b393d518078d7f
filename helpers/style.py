"""Which medium the figures are drawn for: the notebook page or the lecture slide.

One figure, two media. Every helper and every notebook draws its figure once, for
the notebook page (what the stored notebooks hold and nbval checks). When the
figure is displayed in the *slide* medium, :func:`fit_for_slide` redraws the same
figure, from the same artists, for a projected slide: its canvas at most the slide's
picture area (16:9, 880 x 495 px; the deck grows it into the room its slide leaves),
and every text in it (titles, axis labels, tick labels,
numbers in cells) at least :data:`SLIDE_MIN_PT` points, so that its cap height is
about 13 px on a 1280 x 720 screen. No second copy of a figure's code exists.

    ATTENTION_MEDIUM=slide jupyter nbconvert ...   # the environment chooses (make slides sets it)
    with style.medium("slide"):                     # or a block of code
        figures.show(fig, "...")
    style.current()                                 # "notebook" or "slide"

The sizes live here, in one place, for both media:

- the notebook medium leaves a figure exactly as its code drew it (font sizes in
  points at the figure's dpi: "unscaled");
- the slide medium scales: a text of size ``s`` points becomes
  ``SLIDE_MIN_PT + (s - smallest)`` points, so the smallest text of the figure
  reaches the floor and the differences between sizes (a title above its ticks)
  stay; no text grows past :data:`SLIDE_MAX_PT`.

How a picture's text is measured: :func:`cap_heights` lists the cap height, in the
PNG's own pixels, of every visible text of a figure (font size x dpi / 72 x the
font's cap-height ratio). helpers/figures.py writes the list into the ``<img>`` of
a figure drawn in the slide medium (``data-cap-px``), and tools/deck_report.py
multiplies it by the scale at which the deck shows the picture on a 1280 x 720
screen.
"""

from __future__ import annotations

import contextlib
import os

__all__ = ["MEDIA", "current", "medium", "is_slide", "fit_for_slide", "drop_crowded_values", "CELL_VALUE",
           "cap_heights", "SLIDE_SIZE_IN",
           "SLIDE_DPI", "SLIDE_MIN_PT", "SLIDE_MAX_PT", "CAP_RATIO", "ENVIRONMENT"]

MEDIA = ("notebook", "slide")
ENVIRONMENT = "ATTENTION_MEDIUM"
# The slide's picture area: reveal.js draws the decks at 1100 x 760; a slide with a heading and a
# line of prose leaves about 880 x 500 px for its picture. A 16:9 picture of 880 x 495 px is
# 8.8 x 4.95 in at 100 dpi; where a slide leaves more room the deck grows it (never shrinks it
# below its own size unless the slide would overflow: web/templates/slides).
SLIDE_DPI = 100
SLIDE_SIZE_IN = (8.8, 4.95)
# A 1100 x 760 deck on a 1280 x 720 screen is scaled by 720 / 760 = 0.947: a text of 14 pt at
# 100 dpi is 19.4 px, its cap height (DejaVu Sans: 0.73 em) 14.2 px in the PNG, 13.4 px on screen.
SLIDE_MIN_PT = 14.0
SLIDE_MAX_PT = 22.0
# The gid of a number written in a matrix cell (plots.heatmap): on a slide, crowded ones are hidden.
CELL_VALUE = "cell-value"
CAP_RATIO = 0.73  # DejaVu Sans, matplotlib's default face: cap height / font size

_override: list[str] = []


def current() -> str:
    """The medium figures are drawn for now: ``"notebook"`` (the default) or ``"slide"``.

    A :func:`medium` block wins; else the environment variable ``ATTENTION_MEDIUM``.
    Raises ``ValueError`` for a medium that is neither.
    """
    name = _override[-1] if _override else os.environ.get(ENVIRONMENT, "notebook").strip().lower() or "notebook"
    if name not in MEDIA:
        raise ValueError(f"{ENVIRONMENT} must be one of {', '.join(MEDIA)}, not {name!r}")
    return name


def is_slide() -> bool:
    return current() == "slide"


@contextlib.contextmanager
def medium(name: str):
    """Draw for the medium ``name`` ("notebook" or "slide") inside the block."""
    if name not in MEDIA:
        raise ValueError(f"the medium must be one of {', '.join(MEDIA)}, not {name!r}")
    _override.append(name)
    try:
        yield name
    finally:
        _override.pop()


def _texts(fig):
    """Every visible text artist of ``fig`` with something written in it."""
    from matplotlib.text import Text

    found = []
    for text in fig.findobj(Text):
        if not text.get_visible() or not text.get_text().strip():
            continue
        axes = text.axes
        if axes is not None and not axes.get_visible():
            continue
        found.append(text)
    return found


def _tick_labels(fig):
    """Tick labels as drawn (the ticks are made at draw time, so the figure is drawn first)."""
    labels = []
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        for axis in (ax.xaxis, ax.yaxis):
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                for label in (tick.label1, tick.label2):
                    if label.get_visible() and label.get_text().strip():
                        labels.append(label)
    return labels


def cap_heights(fig, dpi=None):
    """The cap height, in pixels of a PNG drawn at ``dpi`` (the figure's own by default), of each text of ``fig``."""
    dpi = fig.dpi if dpi is None else dpi
    fig.canvas.draw()  # lays the figure out and makes its tick labels
    texts = {id(t): t for t in _texts(fig) + _tick_labels(fig)}.values()
    inside = fig.bbox
    heights = []
    for text in texts:
        try:
            box = text.get_window_extent()
        except (RuntimeError, ValueError):
            continue
        if box.width <= 0 or box.height <= 0 or not box.overlaps(inside):
            continue
        heights.append(text.get_fontsize() * dpi / 72 * CAP_RATIO)
    return sorted(round(h, 1) for h in heights)


def _slide_size(old, smallest):
    return min(SLIDE_MAX_PT, max(SLIDE_MIN_PT, SLIDE_MIN_PT + (old - smallest)))


def fit_for_slide(fig):
    """Redraw ``fig`` (in place) for a slide: a 16:9 canvas, every text at least SLIDE_MIN_PT points. Returns it.

    Figures whose axes come from a grid (``plt.subplots``, a GridSpec) get matplotlib's
    constrained layout, which makes room for the larger text; a figure placed by hand
    keeps its axes where they are. Applied once per figure (a second call does nothing).
    """
    if getattr(fig, "_attention_slide", False):
        return fig
    fig._attention_slide = True
    fig.canvas.draw()
    texts = _texts(fig)
    sizes = [t.get_fontsize() for t in texts + _tick_labels(fig)]
    if not sizes:
        return fig
    smallest = min(sizes)
    old_w, old_h = fig.get_size_inches()
    for text in texts:
        text.set_fontsize(_slide_size(text.get_fontsize(), smallest))
    for ax in fig.axes:
        for which, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            ticks = axis.get_major_ticks()
            if ticks:
                size = _slide_size(ticks[0].label1.get_fontsize(), smallest)
                ax.tick_params(axis=which, which="both", labelsize=size)
    # The canvas keeps the figure's own shape and size, at most the slide's picture area: the deck grows
    # a picture into the room its slide leaves (web/templates/slides), so a small canvas with large text
    # is read larger on the slide, while a canvas made larger than the room would be shrunk, its text
    # with it (measured: a 16:9 canvas of 880 x 495 px for every figure left 07's small).
    width, height = SLIDE_SIZE_IN
    fig.set_dpi(SLIDE_DPI)
    shrink = min(1.0, width / old_w, height / old_h)
    fig.set_size_inches(old_w * shrink, old_h * shrink, forward=False)
    engine = fig.get_layout_engine()
    if engine is None and fig.axes and all(ax.get_subplotspec() is not None for ax in fig.axes):
        try:
            fig.set_layout_engine("constrained")
            fig.canvas.draw()
        except Exception:  # a grid constrained layout cannot solve (a zero-height row): placed as drawn
            fig.set_layout_engine("none")
    try:
        fig.canvas.draw()
    except Exception:  # the layout engine the figure came with cannot solve the slide's size
        fig.set_layout_engine("none")
    drop_crowded_values(fig)
    return fig


def drop_crowded_values(fig):
    """Hide the numbers written in a panel's cells (texts whose gid is CELL_VALUE) where any two of them overlap.

    At slide size a small panel cannot hold one readable number per cell: numbers that run
    into each other read as neither. The panel then shows its colours (and its colour bar)
    alone, as a slide should; titles, axis labels and ticks stay. Returns the number of
    panels whose values were hidden.
    """
    hidden = 0
    fig.canvas.draw()  # lays the figure out (any canvas: the window extents find their own renderer)
    for ax in fig.axes:
        texts = [t for t in ax.texts if t.get_gid() == CELL_VALUE and t.get_visible() and t.get_text().strip()]
        boxes = []
        for text in texts:
            try:
                boxes.append(text.get_window_extent())
            except (RuntimeError, ValueError):
                continue
        crowded = any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
        if crowded:
            for text in texts:
                text.set_visible(False)
            hidden += 1
    return hidden
