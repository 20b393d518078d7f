"""Static matplotlib figures for the notebooks: annotated heatmaps and bar charts.

Conventions: keys on the x axis, queries on the y axis, token labels on both;
attention weights in the perceptually uniform, colour-blind-safe ``viridis``,
by default on the fixed 0-1 scale (comparable across figures), or with
``scale="data"`` stretched over the matrix's own range, so that weights
between, say, 0.09 and 0.24 are told apart; the colour bar's label always
says which scale it is. Scores use the diverging ColorBrewer ``RdBu_r``
(colour-blind safe) centred on 0. Small matrices get their values written in
the cells, in black or white, whichever reads better on the cell's colour.
Imports matplotlib and :mod:`helpers.attention` only.

Colours with one meaning across the collection (constants below, for any figure):

- ``UNSCALED_COLOUR`` (purple) and ``SCALED_COLOUR`` (green), the two conditions
  compared in notebook 08 and wherever else scores are shown without and with the
  division by sqrt(d_k); the ends of ColorBrewer's colour-blind-safe ``PRGn``.
- ``QUERY_ORANGE``: orange means **the query**, and nothing else: the query's
  vector or arrow, its row in a heatmap, its own key among the keys. It does not
  mark the largest weight (write the value, or use a bold outline, for that).
- ``NEUTRAL_COLOUR`` (blue): everything else, such as the bars of the other keys.
- ``LARGEST_COLOUR`` (dark navy): the largest weight of a row, where a figure marks it
  (the explorer's bars); darker than the neutral blue, so it reads without colour too.
"""

from __future__ import annotations

import contextlib
import math
import warnings

import numpy as np

from . import figures, style
from .attention import entropy

__all__ = [
    "WEIGHTS_CMAP",
    "weights_scale",
    "SCORES_CMAP",
    "heatmap",
    "heatmaps",
    "attention_bars",
    "AttentionFigure",
    "UNSCALED_COLOUR",
    "SCALED_COLOUR",
    "QUERY_ORANGE",
    "NEUTRAL_COLOUR",
    "LARGEST_COLOUR",
]

WEIGHTS_CMAP = "viridis"
SCORES_CMAP = "RdBu_r"
UNSCALED_COLOUR = "#7b3294"  # purple: scores not divided by sqrt(d_k) (7.7:1 on white)
SCALED_COLOUR = "#008837"  # green: scores divided by sqrt(d_k) (4.6:1 on white)
QUERY_ORANGE = "#e66100"  # orange means the query (its vector, row, own key), never the largest weight;
#   the orange of helpers.diagrams (QUERY_COLOUR), colour-blind safe against the blue
NEUTRAL_COLOUR = "#1f77b4"  # blue: the other keys, bars and lines with no condition to tell apart
LARGEST_COLOUR = "#08306b"  # dark navy: the largest weight of a row (12.8:1 on white; 2.6:1 against the blue)
ANNOTATE_MAX = 12  # write values in the cells up to this many rows and columns


def relative_luminance(rgba):
    """WCAG 2.1 relative luminance of sRGB colour(s) ``rgba`` (..., 3 or 4), channels in [0, 1]."""
    c = np.asarray(rgba, dtype=float)[..., :3]
    linear = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    return linear @ np.array([0.2126, 0.7152, 0.0722])


def contrast_ratio(a, b):
    """WCAG 2.1 contrast ratio of two colours (1 to 21; AA asks 4.5 for text)."""
    la, lb = relative_luminance(a), relative_luminance(b)
    return (np.maximum(la, lb) + 0.05) / (np.minimum(la, lb) + 0.05)


# Black text on a colour beats white text exactly when the colour's relative luminance
# exceeds sqrt(1.05 * 0.05) - 0.05 = 0.179; either way the ratio is then at least 4.58:1.
_BLACK_ABOVE = math.sqrt(1.05 * 0.05) - 0.05


def _light(rgba):
    """True where black text has more contrast than white on the colour(s) ``rgba`` (WCAG 2.1)."""
    return relative_luminance(rgba) > _BLACK_ABOVE


def _text_colour(rgba):
    """Black or white, whichever has the higher WCAG contrast on a cell of colour ``rgba`` (>= 4.58:1)."""
    return "black" if _light(rgba) else "white"


def _symmetric_limit(matrix):
    finite = np.abs(matrix[np.isfinite(matrix)])
    return float(finite.max()) if finite.size and finite.max() > 0 else 1.0


def _range_text(lo, hi):
    """``"0.09-0.24"`` (an en dash), with enough decimals (2 to 6) to tell the ends apart."""
    for decimals in range(2, 7):
        a, b = f"{lo:.{decimals}f}", f"{hi:.{decimals}f}"
        if a != b:
            break
    return f"{a}\u2013{b}"


def _stacked(label):
    """A colour-bar label on short lines: ``"a (b, c)"`` -> ``"a\\nb,\\nc"``."""
    head, _, rest = label.partition(" (")
    return head if not rest else head + "\n" + rest.rstrip(")").replace(", ", ",\n")


def weights_scale(matrix, scale="unit"):
    """Colour limits and colour-bar label of attention weights on the chosen scale.

    Parameters
    ----------
    matrix : array_like, shape (n, m)
        The weights; non-finite entries are ignored.
    scale : {"unit", "data"}
        ``"unit"``: the fixed range [0, 1], the same in every figure, so
        figures can be compared. ``"data"``: the smallest to the largest
        weight of this matrix, so that close weights get visibly different
        colours (a matrix of equal weights gets a range of +-0.005 around them).

    Returns
    -------
    vmin, vmax : float
    label : str
        What the colours mean, naming the scale.

    Examples
    --------
    >>> weights_scale([[0.09, 0.24], [0.2, 0.1]], "data")
    (0.09, 0.24, 'attention weight (data range 0.09–0.24)')
    >>> weights_scale([[0.09, 0.24]])[2]
    'attention weight (fixed 0–1 scale, comparable across figures)'
    """
    if scale == "unit":
        return 0.0, 1.0, "attention weight (fixed 0\u20131 scale, comparable across figures)"
    if scale != "data":
        raise ValueError(f'scale must be "unit" (fixed 0-1) or "data" (the matrix\'s range): got {scale!r}')
    matrix = np.asarray(matrix, dtype=float)
    finite = matrix[np.isfinite(matrix)]
    if finite.size == 0:
        return 0.0, 1.0, "attention weight (fixed 0\u20131 scale: no finite weights)"
    lo, hi = float(finite.min()), float(finite.max())
    label = f"attention weight (data range {_range_text(lo, hi)})"
    if hi - lo < 1e-9:  # equal weights: a small range around them, so the colour is mid-scale
        lo, hi = lo - 0.005, hi + 0.005
    return lo, hi, label


def heatmap(
    matrix,
    row_labels=None,
    col_labels=None,
    *,
    kind="weights",
    ax=None,
    title=None,
    annotate=None,
    fmt="{:.2f}",
    colorbar=True,
    vlim=None,
    scale="unit",
):
    """Draw one annotated heatmap of scores or weights.

    Parameters
    ----------
    matrix : array_like, shape (n, m)
        Rows are queries, columns are keys.
    row_labels, col_labels : sequence of str, optional
        Query tokens (y axis) and key tokens (x axis).
    kind : {"weights", "scores", "gradient"}
        ``"weights"``: viridis, on the scale ``scale``. ``"scores"``: RdBu_r
        centred on 0, symmetric about it (``vlim`` sets the half-range,
        default the largest finite absolute value). ``-inf`` (masked) cells
        are left blank and marked with a dash. ``"gradient"``: drawn as
        ``"scores"``, but the colour bar and the description call the values
        a gradient (e.g. dS, the gradient at the scores).
    ax : matplotlib Axes, optional
        Drawn into a new figure when omitted.
    title : str, optional
    annotate : bool, optional
        Write each value in its cell; by default only when both sides are at
        most 12.
    fmt : str
        Format of the written values.
    colorbar : bool
        Add a colour bar beside the axes.
    vlim : float, optional
        Half-range of the scores' colour scale.
    scale : {"unit", "data"}, default "unit"
        Colour scale of weights (see :func:`weights_scale`): ``"unit"`` the
        fixed 0-1 range, comparable across figures; ``"data"`` the matrix's
        own smallest to largest weight, for weights in a narrow range. The
        colour bar's label names the scale. Only for ``kind="weights"``.

    Returns
    -------
    matplotlib.image.AxesImage
        The image; ``image.axes`` is the axes, ``image.get_array()`` the data,
        ``image.get_clim()`` the colour limits.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> image = heatmap([[0.09, 0.24], [0.2, 0.1]], scale="data")
    >>> image.get_clim()
    (0.09, 0.24)
    >>> plt.close(image.figure)
    """
    import matplotlib.pyplot as plt

    matrix = np.asarray(matrix, dtype=float)
    if matrix.ndim != 2:
        raise ValueError(f"heatmap needs a 2-D matrix (n, m): got shape {matrix.shape}")
    n, m = matrix.shape
    own_figure = ax is None
    if ax is None:
        # room for the cells' values, and for the colour bar and its label
        _, ax = plt.subplots(figsize=((2.2 if colorbar else 1.0) + 0.6 * m, 1.0 + 0.5 * n), layout="constrained")
    if kind == "weights":
        vmin, vmax, label = weights_scale(matrix, scale)
        image = ax.imshow(matrix, cmap=WEIGHTS_CMAP, vmin=vmin, vmax=vmax)
    elif kind in ("scores", "gradient"):
        if scale not in ("unit", "data"):
            raise ValueError(f'scale must be "unit" or "data": got {scale!r}')
        limit = _symmetric_limit(matrix) if vlim is None else float(vlim)
        shown = np.where(np.isneginf(matrix), np.nan, matrix)
        image = ax.imshow(shown, cmap=SCORES_CMAP, vmin=-limit, vmax=limit)
        label = "score" if kind == "scores" else "gradient"
    else:
        raise ValueError(f'kind must be "weights", "scores" or "gradient": got {kind!r}')
    ax.set_xticks(range(m), labels=col_labels if col_labels is not None else range(m))
    ax.set_yticks(range(n), labels=row_labels if row_labels is not None else range(n))
    # Slant the key labels when they would run into each other: many keys, or long tokens.
    longest = max((len(str(c)) for c in (col_labels if col_labels is not None else [m])), default=0)
    ax.tick_params(axis="x", labelrotation=45 if m > 6 or (m > 3 and longest > 4) else 0)
    ax.set_xlabel("keys")
    ax.set_ylabel("queries")
    if title:
        ax.set_title(title)
    if annotate is None:
        annotate = n <= ANNOTATE_MAX and m <= ANNOTATE_MAX
    if annotate:
        for i in range(n):
            for j in range(m):
                value = matrix[i, j]
                if np.isneginf(value):
                    ax.text(j, i, "-", ha="center", va="center", color="0.4", gid=style.CELL_VALUE)
                    continue
                colour = _text_colour(image.cmap(image.norm(value)))
                ax.text(j, i, fmt.format(value), ha="center", va="center", color=colour, fontsize=9,
                        gid=style.CELL_VALUE)
    if colorbar:
        bar = ax.figure.colorbar(image, ax=ax, shrink=0.9)
        bar.set_label(_stacked(label), fontsize=9 if "\n" not in _stacked(label) else 8.5)
    text = figures.matrix_text(matrix, kind, row_labels, col_labels, title)
    if own_figure:
        figures.describe(ax.figure, text)
    else:
        figures.add_panel(ax.figure, text)
    return image


def heatmaps(matrices, titles, row_labels=None, col_labels=None, *, kinds="weights", **kwargs):
    """Several heatmaps side by side in one figure (one colour bar each).

    Parameters
    ----------
    matrices : sequence of array_like, each (n, m)
    titles : sequence of str
    kinds : str or sequence of str
        ``"weights"`` or ``"scores"`` for all, or one per matrix.
    **kwargs
        Passed on to :func:`heatmap`.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib.pyplot as plt

    kinds = [kinds] * len(matrices) if isinstance(kinds, str) else list(kinds)
    n, m = np.shape(matrices[0])
    fig, axes = plt.subplots(
        1, len(matrices), figsize=(len(matrices) * (1.6 + 0.55 * m), 1.0 + 0.5 * n),
        layout="constrained", squeeze=False,
    )
    for ax, matrix, title, kind in zip(axes[0], matrices, titles, kinds):
        heatmap(matrix, row_labels, col_labels, kind=kind, ax=ax, title=title, **kwargs)
    return fig


SLIDE_BAR_VALUES = 8  # on a slide, a bar chart of more bars than this writes only its largest values;
SLIDE_BAR_NAMES = 12  # ... and of more bars than this, it names every other key


def attention_bars(weights, labels, *, ax=None, title=None, highlight=None):
    """Horizontal bar chart of one query's attention weights, with its entropy.

    Parameters
    ----------
    weights : array_like, shape (m,)
        One row of attention weights.
    labels : sequence of str, length m
        The key tokens.
    ax : matplotlib Axes, optional
    title : str, optional
        Default: the entropy and the largest weight.
    highlight : int, optional
        Index of a bar to draw in a contrasting colour (e.g. the query itself).

    Returns
    -------
    matplotlib.container.BarContainer
    """
    import matplotlib.pyplot as plt

    weights = np.asarray(weights, dtype=float)
    if weights.ndim != 1 or len(weights) != len(labels):
        raise ValueError(
            f"weights must be one row (m,) with one label per key: "
            f"got weights.shape={weights.shape} and {len(labels)} labels"
        )
    own_figure = ax is None
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 0.6 + 0.35 * len(labels)), layout="constrained")
    colours = [NEUTRAL_COLOUR] * len(weights)  # blue; orange marks the highlighted key (the query's own)
    if highlight is not None:
        colours[highlight] = QUERY_ORANGE
    bars = ax.barh(range(len(weights)), weights, color=colours)
    if style.is_slide() and len(weights) > SLIDE_BAR_NAMES:  # a slide names every other key of a long row
        ax.set_yticks(range(len(weights)), labels=[lab if k % 2 == 0 else "" for k, lab in enumerate(labels)])
    else:
        ax.set_yticks(range(len(weights)), labels=labels)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("attention weight")
    if style.is_slide() and len(weights) > SLIDE_BAR_VALUES:
        # a slide writes the value of its few largest bars only: 16 values at slide size run into each other
        top = [k for k in np.argsort(-weights, kind="stable")[:3] if weights[k] >= 0.05] or [int(np.argmax(weights))]
        ax.bar_label(bars, labels=[f"{w:.2f}" if k in top else "" for k, w in enumerate(weights)], padding=3)
    else:
        ax.bar_label(bars, fmt="%.2f", padding=3)
    if title is None:
        title = f"entropy {float(entropy(weights)):.3f} nats, largest weight {weights.max():.2f}"
    ax.set_title(title)
    top = int(np.argmax(weights))
    text = (f"Bar chart of one query's attention weights over {len(weights)} keys ({figures.token_list(labels)}); "
            f"largest {figures.number(weights[top])} on {labels[top]}; "
            f"entropy {figures.number(float(entropy(weights)), 3)} nats.")
    if own_figure:
        figures.describe(ax.figure, text)
    else:
        figures.add_panel(ax.figure, text)
    return bars


def literal(label):
    """``label`` as a string matplotlib draws literally, never as TeX.

    A Text artist parses mathtext when its string holds an even, non-zero
    number of unescaped ``$``; escaping every ``$`` as ``\\$`` leaves none, and
    matplotlib then draws each ``\\$`` as ``$``. Backslashes outside math
    are drawn as they are.

    >>> literal("I paid $$ twice")
    'I paid \\\\$\\\\$ twice'
    """
    return str(label).replace("$", r"\$")


@contextlib.contextmanager
def _quiet_missing_glyphs():
    """Silence matplotlib's "Glyph ... missing from font" warning, and only that one.

    Labels that reach the explorer's figure have their unrenderable characters
    replaced already (:func:`helpers.widgets.visible`); this is the net for a
    font set-up where a character the check let through still has no glyph:
    it is drawn as the font's empty box instead of printing a warning.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .*missing from font", category=UserWarning)
        yield


class _GlyphCache:
    """Rendered strings as alpha bitmaps, kept so each is rasterised only once."""

    def __init__(self, dpi):
        from matplotlib.backends.backend_agg import get_hinting_flag
        from matplotlib.font_manager import FontProperties, findfont, get_font

        self._font = get_font(findfont(FontProperties(family="DejaVu Sans")))
        self._dpi, self._flags = dpi, get_hinting_flag()
        self._bitmaps = {}
        self._colours = {}

    def _alpha(self, text, size):
        bitmap = self._bitmaps.get((text, size))
        if bitmap is None:
            self._font.set_size(size, self._dpi)
            with _quiet_missing_glyphs():
                self._font.set_text(text, 0, flags=self._flags)
            self._font.draw_glyphs_to_bitmap(antialiased=True)
            bitmap = np.asarray(self._font.get_image(), dtype=np.float32)[..., None] / 255
            self._bitmaps[text, size] = bitmap
        return bitmap

    def width(self, text, size=7):
        """Width in pixels of ``text`` stamped at ``size`` points."""
        return self._alpha(text, size).shape[1]

    def stamp(self, pixels, text, colour, x, row, centred, size=7):
        """Blend ``text`` (``size`` points) into the RGBA ``pixels`` at column ``x``, centred on ``row``."""
        from matplotlib.colors import to_rgb

        alpha = self._alpha(text, size)
        h, w = alpha.shape[:2]
        top, left = int(round(row - h / 2)), int(round(x - w / 2 if centred else x))
        bottom, right = min(top + h, pixels.shape[0]), min(left + w, pixels.shape[1])
        if top < 0 or left < 0 or bottom <= top or right <= left:
            return
        a = alpha[: bottom - top, : right - left]
        region = pixels[top:bottom, left:right, :3]
        rgb = self._colours.get(colour)
        if rgb is None:
            rgb = self._colours[colour] = np.array(to_rgb(colour), dtype=np.float32) * 255
        region[...] = (region * (1 - a) + rgb * a).astype(np.uint8)


LABEL_MAX = 24  # tokens written beside the rows of the explorer's figure, at most
# Size in points of the numbers written in the explorer's heatmap cells and after its bars. At the
# figure's 72 dpi a point is a pixel: 10-pixel digits, legible on the stored snapshot (issue 23).
CELL_TEXT_SIZE = 10
# the most decimals whose text fits the cell is written; a weight (0 to 1) needs one at least
CELL_DECIMALS = {"scores": (2, 1, 0), "weights": (2, 1), "out": (2, 1, 0)}
STATICS_KEPT = 16  # rendered unchanging parts an AttentionFigure keeps, one per shape and labels


def labels_shown(labels, limit):
    """The labels a figure writes: all of them up to ``limit``, else none (positions instead)."""
    return tuple(labels) if len(labels) <= limit else None


def _token_ticks(set_ticks, labels, limit):
    """One tick per token with its text, or (too many to read) about five position ticks."""
    count = len(labels)
    if count <= limit:
        set_ticks(range(count), labels=[literal(t) for t in labels])
    else:
        step = max(1, int(np.ceil(count / 5)))
        positions = list(range(0, count, step))
        set_ticks(positions, labels=[str(p) for p in positions])


class AttentionFigure:
    """One reusable figure: scores, weights and outputs as heatmaps, plus one row as bars.

    :meth:`update` changes only the data (images, colour limits, cell values,
    bar lengths, the bar chart's title), and :meth:`png` redraws only those on a
    cached picture of the rest, so an update costs a fraction of building a new
    figure. :meth:`reshape` (and :meth:`relabel`) set the figure for other tokens
    or another shape, at about half the cost of a new one and with the same picture. Uses ``matplotlib.figure.Figure``
    directly, never pyplot, so a notebook never shows it twice by itself;
    :meth:`png` renders it for an ``ipywidgets.Image``.

    Parameters
    ----------
    row_labels : sequence of str, length n
        Query tokens (y axis).
    col_labels : sequence of str, length m
        Key tokens (x axis).
    d_v : int
        Width of the outputs (columns of the third heatmap).
    dpi : int
        Resolution of :meth:`png`.
    scores_title : str
        Title of the first heatmap; :meth:`update` can change it (the explorer calls it
        "scaled scores" when it shows q k^T / sqrt(d_k) and "unscaled scores" when q k^T).

    Cell values are written at :data:`CELL_TEXT_SIZE` points (10 pixels at 72 dpi), with
    2 decimals, or 1 (or, for scores and outputs, 0) when the longest value of a heatmap
    would not fit its cells; a heatmap whose values do not fit gets none written.
    """

    def __init__(self, row_labels, col_labels, d_v, *, dpi=72, scores_title="scores"):
        from matplotlib.figure import Figure
        from matplotlib.patches import Rectangle

        self.dpi = dpi
        self.figure = Figure()
        # Everything that does not depend on the shape is built once, here; _set_shape()
        # sizes and labels it (also for reshape(), so a kept figure draws what a new one draws).
        # The layout is computed from the labels' lengths (_boxes), not by matplotlib's
        # constrained layout: that measures every text and takes most of a new figure's time.
        self.ax_scores, self.ax_weights, self.ax_out, self.ax_bars = (
            self.figure.add_axes((0, 0, 1, 1)) for _ in range(4))
        blank = np.zeros((1, 1))
        self.im_scores = self.ax_scores.imshow(blank, cmap=SCORES_CMAP, vmin=-1, vmax=1, interpolation="nearest")
        self.im_weights = self.ax_weights.imshow(blank, cmap=WEIGHTS_CMAP, vmin=0, vmax=1, interpolation="nearest")
        self.im_out = self.ax_out.imshow(blank, cmap=SCORES_CMAP, vmin=-1, vmax=1, interpolation="nearest")
        # Titles and axis labels at places computed here (_write_labels): placed automatically,
        # matplotlib measures every tick label on each draw, a third of a redraw's time.
        self.scores_title = scores_title
        for ax, title in ((self.ax_scores, scores_title), (self.ax_weights, "weights"),
                          (self.ax_out, "output (context)")):
            ax.set_title(title, fontsize=10, y=1.0, pad=6)
            ax.tick_params(labelsize=8)
        # the rows' names once, at the left of the scores; the other two heatmaps share them
        self.ax_weights.set_yticks([])
        self.ax_out.set_yticks([])
        self.ax_scores.set_ylabel("queries")
        self.ax_scores.set_xlabel("keys")
        self.ax_weights.set_xlabel("keys")
        self.ax_out.set_xlabel("dimension")
        self.colorbar = self.figure.colorbar(self.im_weights, cax=self.figure.add_axes((0, 0, 1, 1)))
        self.colorbar.set_label("fixed 0\u20131 scale", fontsize=8)  # the same in every setting of the sliders
        self.colorbar.ax.tick_params(labelsize=8)
        self.row_boxes = [
            ax.add_patch(Rectangle((-0.5, -0.5), 1, 1, fill=False, edgecolor=QUERY_ORANGE, linewidth=2))
            for ax in (self.ax_scores, self.ax_weights, self.ax_out)
        ]
        self.ax_bars.set_xlim(0, 1)
        self.ax_bars.tick_params(labelsize=8)
        self.ax_bars.set_xlabel("weight")
        self._glyphs = _GlyphCache(dpi=dpi)
        self._statics = {}  # picture_key -> rendered picture of everything png() does not redraw
        self._set_shape(row_labels, col_labels, d_v)

    def _set_shape(self, row_labels, col_labels, d_v):
        """Size, arrays, bars, ticks and labels for these tokens and ``d_v``; the next png() renders afresh."""
        from matplotlib.patches import Rectangle

        self.row_labels, self.col_labels = list(row_labels), list(col_labels)
        n, m = len(self.row_labels), len(self.col_labels)
        self.shape, self.d_v = (n, m), d_v
        side = max(n, m)
        # Small matrices get room for their cell values (written at CELL_TEXT_SIZE: about half an
        # inch a cell); large ones a fixed size, small enough to render and encode quickly.
        if side <= ANNOTATE_MAX:
            self.figure.set_size_inches(min(2.2 + 0.5 * (2 * m + d_v) + 3.0, 13.0), min(1.6 + 0.42 * side, 5.0))
        else:
            self.figure.set_size_inches(min(2.2 + 0.42 * (2 * m + d_v) + 3.0, 10.0), min(1.6 + 0.32 * side, 4.0))
        boxes = self._boxes()
        for ax, box in zip((self.ax_scores, self.ax_weights, self.ax_out, self.ax_bars), boxes):
            ax.set_position(box)
        # the width of one heatmap cell in pixels: the room for a cell's value
        self.cell_pixels = boxes[0][2] * self.figure.get_size_inches()[0] * self.dpi / max(m, 1)
        self.colorbar.ax.set_position(self._colorbar_box)
        for image, cols in ((self.im_scores, m), (self.im_weights, m), (self.im_out, d_v)):
            image.set_data(np.zeros((n, cols)))
            image.set_extent((-0.5, cols - 0.5, n - 0.5, -0.5))  # also the axes' limits
        for box, cols in zip(self.row_boxes, (m, m, d_v)):
            box.set_width(cols)
        _token_ticks(self.ax_out.set_xticks, [str(c) for c in range(d_v)], ANNOTATE_MAX)
        self.ax_out.tick_params(axis="x", labelrotation=45 if d_v > 4 else 0)
        # Cell values only for small matrices (as in heatmap()). They are not
        # Text artists: png() stamps cached glyph bitmaps of each string into
        # the picture, which costs microseconds instead of a millisecond a text.
        annotate = n <= ANNOTATE_MAX and m <= ANNOTATE_MAX
        self.cell_axes = {
            name: ax for name, ax, cols in (("scores", self.ax_scores, m), ("weights", self.ax_weights, m),
                                            ("out", self.ax_out, d_v))
            if annotate and cols <= ANNOTATE_MAX
        }
        self._stamps = []  # (axes, x, y, text, colour, centred) to stamp after drawing
        self.cell_formats = {}  # heatmap name -> the format its values are written in (None: not written)
        self._title = ""  # the bar chart's title, stamped too
        # The bars are painted by _paint_bars, never drawn by matplotlib: plain rectangles, not
        # added to the axes (barh() would add each, a third of a new figure's time), and the
        # limits barh() would choose (its 5 % margins), the first key at the top.
        self.bars = [Rectangle((0, j - 0.4), 0, 0.8, color="#1f77b4") for j in range(m)]
        margin = 0.05 * (m - 0.2)
        self.ax_bars.set_ylim(m - 0.6 + margin, -0.4 - margin)
        self.bar_values = m <= ANNOTATE_MAX
        self._write_labels()
        self.picture_key = self.key_for(self.row_labels, self.col_labels, d_v)
        self._canvas = self._background = None  # the unchanging part, rendered again (or taken from _statics)
        self._pixel_cache = {}

    @staticmethod
    def key_for(row_labels, col_labels, d_v):
        """What the unchanging part of the picture depends on: the shape and the labels written.

        Labels too many to write (positions are shown instead) are not part of it.
        """
        return (len(row_labels), len(col_labels), d_v, labels_shown(row_labels, LABEL_MAX),
                labels_shown(col_labels, ANNOTATE_MAX), labels_shown(col_labels, LABEL_MAX))

    def relabel(self, row_labels, col_labels):
        """Show other tokens of the same counts: new tick labels and margins, the arrays kept.

        Draws exactly what a new figure for these labels draws (tested), at a fraction of
        its cost: the figure, its axes and colour bar are kept; the next :meth:`png` renders
        the unchanging part again once. Call :meth:`update` before it.
        """
        if (len(row_labels), len(col_labels)) != self.shape:
            raise ValueError(f"relabel keeps the shape {self.shape}: got {len(row_labels)} x {len(col_labels)} labels")
        self._set_shape(row_labels, col_labels, self.d_v)

    def reshape(self, row_labels, col_labels, d_v):
        """Show other tokens of any counts, and outputs of size ``d_v``: the figure, its axes
        and colour bar kept, everything else set as a new figure sets it (same picture, tested).

        About half the cost of a new figure: no figure, axes or colour bar to build.
        Call :meth:`update` before the next :meth:`png`.
        """
        self._set_shape(row_labels, col_labels, d_v)

    def _write_labels(self):
        """The tokens as tick labels (literal(): drawn as typed, never parsed as TeX); too many
        to read: a few positions instead (a tick costs about a millisecond to build)."""
        for ax in (self.ax_scores, self.ax_weights):
            _token_ticks(ax.set_xticks, self.col_labels, ANNOTATE_MAX)
            ax.tick_params(axis="x", labelrotation=45 if self._rotated() else 0)
        _token_ticks(self.ax_scores.set_yticks, self.row_labels, LABEL_MAX)
        _token_ticks(self.ax_bars.set_yticks, self.col_labels, LABEL_MAX)
        # axis labels just outside their tick labels (inches from _boxes, over the axes' size in inches)
        size = self.figure.get_size_inches()
        inches = lambda ax: ax.get_position().size * size  # noqa: E731
        keys_h, dims_h, rows_w, plain_h = self._label_room
        for ax, room in ((self.ax_scores, keys_h), (self.ax_weights, keys_h), (self.ax_out, dims_h),
                         (self.ax_bars, plain_h)):
            ax.xaxis.set_label_coords(0.5, -room / inches(ax)[1])
        self.ax_scores.yaxis.set_label_coords(-rows_w / inches(self.ax_scores)[0], 0.5)
        self.colorbar.ax.yaxis.set_label_coords(1 + 0.36 / inches(self.colorbar.ax)[0], 0.5)

    def _rotated(self):
        """Whether the keys' labels under the heatmaps are turned by 45 degrees."""
        cols = self.col_labels
        return len(cols) > 4 or max((len(str(c)) for c in cols), default=0) > 6

    CHAR = 0.6 * 8 / 72  # inches per character of an 8-point tick label (DejaVu Sans, generous)

    def _boxes(self):
        """Positions (figure fractions) of the four axes; sets ``_colorbar_box``.

        Margins in inches from what they hold: the longest tick label written (rotated
        by 45 degrees under the heatmaps when :meth:`__init__` rotates it), the axis
        labels, the titles, the colour bar and the bar values. The heatmaps get square
        cells of one size; the bar chart takes the height.
        """
        n, m = self.shape
        d_v, char = self.d_v, self.CHAR
        width, height = self.figure.get_size_inches()
        rows = labels_shown(self.row_labels, LABEL_MAX) or [str(i) for i in range(n)]
        cols = labels_shown(self.col_labels, ANNOTATE_MAX) or [str(j) for j in range(m)]
        bar_labels = labels_shown(self.col_labels, LABEL_MAX) or [str(j) for j in range(m)]
        longest = lambda labels: max((len(str(t)) for t in labels), default=1)  # noqa: E731
        tick, line = (3.5 + 3.5 + 2) / 72, 8 / 72 * 1.2  # a tick, its pad and a gap; an 8-point line
        # inches taken by the labels under an axis: turned by 45 degrees, a label's width and
        # its line's height each count 0.71 times
        under = lambda chars, turned: tick + ((chars * char + line) * 0.71 if turned else line)  # noqa: E731
        # below the keys' and the dimensions' labels, left of the rows' labels, below the bars' numbers
        self._label_room = (under(longest(cols), self._rotated()), under(2, d_v > 4),
                            tick + longest(rows) * char, under(0, False))
        tick_height = max(self._label_room[:2])
        left = 0.06 + 0.2 + self._label_room[2]  # y label "queries", row labels, ticks
        bottom = 0.06 + 0.2 + tick_height  # x label, key labels
        top = 0.3  # titles
        right = 0.45  # the values written after the bars (CELL_TEXT_SIZE)
        gap, colorbar = 0.14, 0.1 + 0.12 + 0.55  # pad, bar, its ticks and label
        bar_gap = longest(bar_labels) * char + 0.16
        free_w = width - left - right - 3 * gap - colorbar - bar_gap
        free_h = height - top - bottom
        units = 2 * m + max(d_v, 2) + 0.9 * max(m, 4)
        cell = max(min(free_w / units, free_h / n), 0.01)
        hm_h = n * cell
        y = bottom + (free_h - hm_h) / 2
        boxes, x = [], left
        for cols_i in (m, m, d_v):
            boxes.append((x, y, cols_i * cell, hm_h))
            x += cols_i * cell + gap
            if len(boxes) == 2:  # the colour bar beside the weights
                self._colorbar_box = ((x - gap + 0.1) / width, (y + 0.1 * hm_h) / height,
                                      0.12 / width, 0.8 * hm_h / height)
                x += colorbar
        x += bar_gap
        boxes.append((x, bottom, max(width - right - x, 0.3), free_h))
        return [(bx / width, by / height, bw / width, bh / height) for bx, by, bw, bh in boxes]

    def cell_format(self, matrix, decimals=(2, 1, 0)):
        """The format of ``matrix``'s cell values: the most ``decimals`` whose longest text fits
        a cell at :data:`CELL_TEXT_SIZE`; None when none fits."""
        finite = matrix[np.isfinite(matrix)]
        room = self.cell_pixels - 3  # a pixel or two of the cell's colour either side
        for decimals in decimals:
            fmt = f"{{:.{decimals}f}}"
            # the widest texts are those of the extremes (more digits, a minus sign)
            widest = max((self._glyphs.width(fmt.format(v), CELL_TEXT_SIZE)
                          for v in (finite.min(), finite.max())), default=0) if finite.size else 0
            if widest <= room:
                return fmt
        return None

    def _stamp_cells(self, name, image, matrix):
        ax = self.cell_axes.get(name)
        if ax is None:
            return
        fmt = self.cell_format(matrix, CELL_DECIMALS[name])
        self.cell_formats[name] = fmt
        if fmt is None:
            return
        rgba = image.cmap(image.norm(np.where(np.isfinite(matrix), matrix, 0.0)))  # (n, m, 4)
        light = _light(rgba)
        for (i, j), value in np.ndenumerate(matrix):
            if np.isfinite(value):
                text = fmt.format(value)
                if text.startswith("-") and not text.strip("-0."):
                    text = text[1:]  # -0.004 rounds to 0.00, not to "-0.00"
                self._stamps.append((ax, j, i, text, "black" if light[i, j] else "white", True))
            else:
                self._stamps.append((ax, j, i, "-", "0.4", True))

    def update(self, scores, weights, out, row=0, *, scores_limit=None, scores_title=None):
        """Show new arrays: ``scores`` and ``weights`` (n, m), ``out`` (n, d_v); bars of ``row``.

        ``scores_limit``: the scores' colour scale runs from ``-scores_limit`` to ``scores_limit``
        (default: the largest absolute finite score, so the scale follows the data).
        ``scores_title``: a new title for the scores' heatmap (default: keep it).
        """
        if scores_title is not None and scores_title != self.scores_title:
            self.scores_title = scores_title
            self.ax_scores.set_title(scores_title, fontsize=10, y=1.0, pad=6)
            self._canvas = self._background = None  # the title is part of the unchanging picture
        limit = _symmetric_limit(scores) if scores_limit is None else float(scores_limit)
        self.im_scores.set_data(np.where(np.isfinite(scores), scores, np.nan))
        self.im_scores.set_clim(-limit, limit)
        self.im_weights.set_data(weights)
        out_limit = _symmetric_limit(out)
        self.im_out.set_data(out)
        self.im_out.set_clim(-out_limit, out_limit)
        self._stamps = []
        self.cell_formats = {}  # heatmap name -> the format its values are written in (None: not written)
        self._stamp_cells("scores", self.im_scores, scores)
        self._stamp_cells("weights", self.im_weights, weights)
        self._stamp_cells("out", self.im_out, out)
        for box in self.row_boxes:
            box.set_y(row - 0.5)
        w = weights[row]
        for j, bar in enumerate(self.bars):
            bar.set_width(w[j])
            bar.set_color(LARGEST_COLOUR if j == int(np.argmax(w)) and w.max() > 0 else NEUTRAL_COLOUR)
        if self.bar_values:
            self._stamps += [(self.ax_bars, w[j] + 0.02, j, f"{w[j]:.2f}", "black", False)
                             for j in range(len(w))]  # after the bars: the right margin holds them
        self._title = f"row '{self.row_labels[row]}': entropy {float(entropy(w)):.2f}, max {w.max():.2f}"

    @property
    def title(self):
        """The bar chart's title: the selected row, its entropy and largest weight."""
        return self._title

    def _paint_bars(self, pixels):
        """Paint the bar chart's rectangles into ``pixels`` with NumPy (one slice per bar)."""
        height = pixels.shape[0]
        to_display = self.ax_bars.transData.transform
        for bar in self.bars:
            x, y, w, h = bar.get_x(), bar.get_y(), bar.get_width(), bar.get_height()
            (x0, y0), (x1, y1) = to_display([(x, y), (x + w, y + h)])
            left, right = int(round(min(x0, x1))), int(round(max(x0, x1)))
            top, bottom = int(round(height - max(y0, y1))), int(round(height - min(y0, y1)))
            if right > left and bottom > top:
                pixels[top:bottom, left:right] = np.asarray(bar.get_facecolor()) * 255

    def _to_pixels(self, ax, x, y):
        """Display coordinates of the data point (x, y); cached, since the layout is frozen."""
        key = (id(ax), x, y)
        xy = self._pixel_cache.get(key)
        if xy is None:
            xy = ax.transData.transform((x, y))
            if len(self._pixel_cache) < 10_000:  # cells repeat; bar ends mostly do not
                self._pixel_cache[key] = xy
        return xy

    @staticmethod
    def _paint(pixels, image):
        """Paint an imshow ``image`` into ``pixels`` with NumPy: cells as pixel blocks.

        Matches what matplotlib draws with ``interpolation="nearest"``, at a
        fraction of the cost. NaN cells keep the background.
        """
        n, m = image.get_array().shape[:2]
        rgba = image.to_rgba(image.get_array(), bytes=True)  # (n, m, 4)
        (x0, y0), (x1, y1) = image.axes.transData.transform([(-0.5, -0.5), (m - 0.5, n - 0.5)])
        height = pixels.shape[0]
        top, bottom = height - y0, height - y1  # buffer rows run downwards
        left, right = int(round(x0)), int(round(x1))
        first, last = int(round(top)), int(round(bottom))
        if right <= left or last <= first:
            return
        cols = ((np.arange(left, right) + 0.5 - x0) * m / (x1 - x0)).astype(int).clip(0, m - 1)
        rows = ((np.arange(first, last) + 0.5 - top) * n / (bottom - top)).astype(int).clip(0, n - 1)
        block = rgba.take(rows, axis=0).take(cols, axis=1)  # (rows, cols, 4)
        region = pixels[first:last, left:right]
        if (rgba[..., 3] > 0).all():
            region[...] = block
        else:  # NaN cells are transparent: keep the background there
            np.copyto(region, block, where=block[..., 3:] > 0)

    def png(self):
        """The figure as PNG bytes.

        The first call for a shape and its labels renders a picture of everything
        that never changes (axes, ticks, labels, colour bar) and keeps it (for up to
        ``STATICS_KEPT`` shapes and labels, so going back to one costs no render);
        every call pastes that picture and draws only the changing artists on it
        (blitting), then writes the PNG with fast compression.
        """
        import io

        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from PIL import Image

        images = (self.im_scores, self.im_weights, self.im_out)
        dynamic = self.row_boxes  # the only artists matplotlib redraws on every png()
        if self._canvas is None:
            # Kept only once the whole first render worked, so a failed one is
            # tried again on the next call instead of leaving a half-set figure.
            self.figure.set_dpi(self.dpi)
            canvas = FigureCanvasAgg(self.figure)
            with _quiet_missing_glyphs():
                # the bar chart's title, stamped on every png(): centred above its axes
                # (matplotlib's title pad is 6 points; half the 9-point line's height above that)
                box = self.ax_bars.get_position().transformed(self.figure.transFigure)
                self._title_xy = ((box.x0 + box.x1) / 2, box.y1 + (6 + 6) * self.dpi / 72)
                for artist in (*images, *dynamic):
                    artist.set_animated(True)  # left out of canvas.draw()
                static_key = (self.picture_key, self.scores_title)
                background = self._statics.pop(static_key, None)
                if background is None:
                    # matplotlib before 3.11 draws animated images all the same: hidden, so the kept
                    # picture never holds one (its edge pixels would keep the first arrays' colours)
                    for image in images:
                        image.set_visible(False)
                    try:
                        canvas.draw()
                    finally:
                        for image in images:
                            image.set_visible(True)
                    background = canvas.copy_from_bbox(self.figure.bbox)
                else:  # drawn before for this shape and these labels; _boxes() gives square cells
                    # already, and the heatmaps' aspect is applied as draw() would apply it
                    for ax in (self.ax_scores, self.ax_weights, self.ax_out):
                        ax.apply_aspect()
                while len(self._statics) >= STATICS_KEPT:
                    self._statics.pop(next(iter(self._statics)))
                self._statics[static_key] = background  # most recently used last
            self._background = background
            self._canvas = canvas
        self._canvas.restore_region(self._background)
        pixels = np.asarray(self._canvas.buffer_rgba())  # (height, width, 4), a view
        for image in images:
            self._paint(pixels, image)
        self._paint_bars(pixels)
        for artist in dynamic:  # the row boxes go on top of the heatmaps
            self.figure.draw_artist(artist)
        for ax, x, y, text, colour, centred in self._stamps:
            px, py = self._to_pixels(ax, x, y)
            self._glyphs.stamp(pixels, text, colour, px, pixels.shape[0] - py, centred, size=CELL_TEXT_SIZE)
        x, y = self._title_xy
        half = self._glyphs.width(self._title, 9) / 2  # a long title moves left to stay in the picture
        x = max(min(x, pixels.shape[1] - half - 2), half + 2)
        self._glyphs.stamp(pixels, self._title, "black", x, pixels.shape[0] - y, True, size=9)
        buffer = io.BytesIO()
        height, width = pixels.shape[:2]
        Image.frombuffer("RGBA", (width, height), pixels, "raw", "RGBA", 0, 1).save(
            buffer, format="png", compress_level=1
        )
        return buffer.getvalue()
