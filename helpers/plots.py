"""Static matplotlib figures for the notebooks: annotated heatmaps and bar charts.

Conventions: keys on the x axis, queries on the y axis, token labels on both;
attention weights on a fixed 0-1 scale with the perceptually uniform,
colour-blind-safe ``viridis``; scores on the diverging ColorBrewer ``RdBu_r``
(colour-blind safe) centred on 0. Small matrices get their values written in
the cells. Imports matplotlib and :mod:`helpers.attention` only.
"""

from __future__ import annotations

import numpy as np

from .attention import entropy

__all__ = [
    "WEIGHTS_CMAP",
    "SCORES_CMAP",
    "heatmap",
    "heatmaps",
    "attention_bars",
]

WEIGHTS_CMAP = "viridis"
SCORES_CMAP = "RdBu_r"
ANNOTATE_MAX = 12  # write values in the cells up to this many rows and columns


def _text_colour(rgba):
    """Black or white, whichever reads better on a cell of colour ``rgba``."""
    r, g, b = rgba[:3]
    return "black" if 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.5 else "white"


def _symmetric_limit(matrix):
    finite = np.abs(matrix[np.isfinite(matrix)])
    return float(finite.max()) if finite.size and finite.max() > 0 else 1.0


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
):
    """Draw one annotated heatmap of scores or weights.

    Parameters
    ----------
    matrix : array_like, shape (n, m)
        Rows are queries, columns are keys.
    row_labels, col_labels : sequence of str, optional
        Query tokens (y axis) and key tokens (x axis).
    kind : {"weights", "scores"}
        ``"weights"``: viridis on the fixed range [0, 1]. ``"scores"``: RdBu_r
        centred on 0, symmetric about it (``vlim`` sets the half-range,
        default the largest finite absolute value). ``-inf`` (masked) cells
        are left blank and marked with a dash.
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

    Returns
    -------
    matplotlib.image.AxesImage
        The image; ``image.axes`` is the axes, ``image.get_array()`` the data.
    """
    import matplotlib.pyplot as plt

    matrix = np.asarray(matrix, dtype=float)
    if matrix.ndim != 2:
        raise ValueError(f"heatmap needs a 2-D matrix (n, m): got shape {matrix.shape}")
    n, m = matrix.shape
    if ax is None:
        _, ax = plt.subplots(figsize=(1.0 + 0.55 * m, 0.8 + 0.5 * n), layout="constrained")
    if kind == "weights":
        image = ax.imshow(matrix, cmap=WEIGHTS_CMAP, vmin=0.0, vmax=1.0)
        label = "attention weight"
    elif kind == "scores":
        limit = _symmetric_limit(matrix) if vlim is None else float(vlim)
        shown = np.where(np.isneginf(matrix), np.nan, matrix)
        image = ax.imshow(shown, cmap=SCORES_CMAP, vmin=-limit, vmax=limit)
        label = "score"
    else:
        raise ValueError(f'kind must be "weights" or "scores": got {kind!r}')
    ax.set_xticks(range(m), labels=col_labels if col_labels is not None else range(m))
    ax.set_yticks(range(n), labels=row_labels if row_labels is not None else range(n))
    ax.tick_params(axis="x", labelrotation=45 if m > 6 else 0)
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
                    ax.text(j, i, "-", ha="center", va="center", color="0.4")
                    continue
                colour = _text_colour(image.cmap(image.norm(value)))
                ax.text(j, i, fmt.format(value), ha="center", va="center", color=colour, fontsize=9)
    if colorbar:
        ax.figure.colorbar(image, ax=ax, label=label, shrink=0.9)
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
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 0.6 + 0.35 * len(labels)), layout="constrained")
    colours = ["#1f77b4"] * len(weights)  # blue; orange marks the highlighted key
    if highlight is not None:
        colours[highlight] = "#ff7f0e"
    bars = ax.barh(range(len(weights)), weights, color=colours)
    ax.set_yticks(range(len(weights)), labels=labels)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("attention weight")
    ax.bar_label(bars, fmt="%.2f", padding=3)
    if title is None:
        title = f"entropy {float(entropy(weights)):.3f} nats, largest weight {weights.max():.2f}"
    ax.set_title(title)
    return bars
