"""What the pictures of :mod:`helpers.diagrams` share (private): colours, number format, argument checks.

The colours (``QUERY_COLOUR`` orange for queries, ``KEY_COLOUR`` blue for keys,
the light ``FILLS`` of Q, K, V, the scores and the output) are the same in
every picture; ``helpers.diagrams`` re-exports them. ``_format`` writes a
number with a real minus sign; ``_matrix`` and ``_labels`` check an argument
and name it in their ValueError; ``_new_figure`` makes a figure with pyplot.
"""

from __future__ import annotations

import numpy as np

MINUS = "\u2212"  # a real minus sign, wider than the hyphen
QUERY_COLOUR = "#e66100"  # orange, for the query (colour-blind safe against the blue); = plots.QUERY_ORANGE
KEY_COLOUR = "#1f5fa8"  # blue, for keys and attention lines (6.4:1 on white)
QUERY_TEXT_COLOUR = "#a84300"  # the query's orange, darkened for text: 6.1:1 on white, 4.8:1 on the Q fill
FILLS = {  # light fills for the boxes of the pipeline
    "Q": "#fde0c5",
    "K": "#cfe0f3",
    "V": "#d5ecd4",
    "scores": "#f2f2f2",
    "out": "#e8dff0",
}


def _format(x, decimals):
    """``x`` with ``decimals`` decimals, a real minus sign, and no negative zero."""
    text = f"{x:.{decimals}f}"
    if text.lstrip("-").strip("0.") == "":  # -0.00 -> 0.00
        text = text.lstrip("-")
    return text.replace("-", MINUS)


def _matrix(x, name, ndim=2):
    """``x`` as a float array of ``ndim`` dimensions, else a ValueError naming it."""
    try:
        arr = np.asarray(x, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a numeric array: {exc}") from None
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-d: got shape {arr.shape}")
    return arr


def _labels(labels, count, name):
    """``labels`` as a list of ``count`` strings, else a ValueError naming it."""
    if isinstance(labels, str):
        raise ValueError(f"{name} must be a sequence of {count} strings, not one string: got {labels!r}")
    labels = [str(t) for t in labels]
    if len(labels) != count:
        raise ValueError(f"{name} must hold {count} labels: got {len(labels)}")
    return labels


def _new_figure(figsize):
    import matplotlib.pyplot as plt

    return plt.figure(figsize=figsize)


def _only_ticks_in_view(ax):
    """Keep only the major ticks inside ``ax``'s view (a slide variant's axes; the limits stay as they are).

    style.overlapping_texts measures the labels of every tick of an axis, those the axes leave
    undrawn outside their view too: at slide size such a label beside the next panel counts as
    running into that panel's texts.
    """
    from matplotlib.ticker import FixedLocator

    for axis, get, put in ((ax.xaxis, ax.get_xlim, ax.set_xlim), (ax.yaxis, ax.get_ylim, ax.set_ylim)):
        limits = get()
        low, high = sorted(limits)
        axis.set_major_locator(FixedLocator([t for t in axis.get_majorticklocs() if low <= t <= high]))
        put(limits)
