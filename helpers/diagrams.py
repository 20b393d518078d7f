"""Pictures of the attention mechanism itself, for lessons and slides.

Four pictures, each returned as a matplotlib ``Figure``:

``pipeline(q, k, v, tokens)``
    The whole computation softmax(QK^T / sqrt(d_k)) V as a row of boxes:
    Q and K^T, their product (the scores), the scores divided by sqrt(d_k),
    the softmax of each row (the weights), the weights times V, and the
    output. Each matrix is a box whose width and height are proportional to
    its number of columns and rows, drawn as a grid of cells; small matrices
    (at most 6 x 6) have their numbers written in the cells, and each box has
    its shape written under it. ``scale=False`` draws the unscaled variant
    softmax(QK^T) V; a boolean ``mask`` (True = may attend) shows the blocked
    cells hatched, as -inf before the softmax and 0 after it.
``head_view(weights, query_tokens, key_tokens)``
    One attention matrix as lines: the query tokens in a left column, the key
    tokens in a right column, and a line from every query to every key whose
    width and opacity grow with the weight. A stack of heads (h, n, m) gives
    one panel per head, side by side.
``vectors_2d(vectors, labels, query=...)``
    Two-dimensional vectors as arrows from the origin, so that a dot product
    can be seen as |q| |k| cos(theta): the query's dot product with each key
    and the angle between them are written at the keys' tips, and a row of
    weights, if given, is drawn as bars beside the plane.
``soft_lookup(query_label, keys, values, weights)``
    Attention as a soft dictionary lookup: a table of keys and their values;
    a hard lookup picks exactly one row, attention takes a bit of every row
    (line widths show how much) and returns the blend sum_j w_j v_j.

Conventions: the figures are made with pyplot, so a notebook shows them by
itself; assign the result (``fig = ...``) or end the line with ``;`` to show
a picture once. Token labels are drawn literally (a ``$`` in a token is not
read as mathematics). Everything is deterministic. Imports NumPy, matplotlib
and :mod:`helpers.attention` only.
"""

from __future__ import annotations

import math

import numpy as np

from . import figures as _describe
from . import plots as _plots
from .attention import scaled_dot_product_attention

__all__ = ["pipeline", "head_view", "vectors_2d", "soft_lookup"]

NUMBERS_MAX = 6  # write the numbers in a matrix's cells up to this many rows and columns
CELLS_MAX = 144  # up to this many cells a matrix is drawn cell by cell, beyond as one image
LUMINANCE = np.array([0.2126, 0.7152, 0.0722])  # relative luminance of linear RGB
LINE_WIDTH = 8.0  # points of line width for a weight of 1 (head view)
MINUS = "\u2212"  # a real minus sign, wider than the hyphen
QUERY_COLOUR = "#e66100"  # orange, for the query (colour-blind safe against the blue)
KEY_COLOUR = "#1f5fa8"  # blue, for keys and attention lines (6.4:1 on white)
QUERY_TEXT_COLOUR = "#a84300"  # the query's orange, darkened for text: 6.1:1 on white, 4.8:1 on the Q fill
FILLS = {  # light fills for the boxes of the pipeline
    "Q": "#fde0c5",
    "K": "#cfe0f3",
    "V": "#d5ecd4",
    "scores": "#f2f2f2",
    "out": "#e8dff0",
}


# --------------------------------------------------------------------------- helpers


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


# --------------------------------------------------------------------------- pipeline


def _split_tokens(tokens, n, m):
    """Query and key tokens from ``tokens``: n labels (self-attention, n == m) or a pair."""
    if tokens is None:
        return None, None
    if isinstance(tokens, str):
        raise ValueError(f"tokens must be a sequence of labels, not one string: got {tokens!r}")
    tokens = list(tokens)
    pair = len(tokens) == 2 and all(not isinstance(t, str) and np.ndim(t) == 1 for t in tokens)
    if pair:
        return _labels(tokens[0], n, "tokens[0] (query tokens)"), _labels(tokens[1], m, "tokens[1] (key tokens)")
    if n != m:
        raise ValueError(
            f"with n={n} queries and m={m} keys, tokens must be a pair (query_tokens, key_tokens): "
            f"got {len(tokens)} labels"
        )
    labels = _labels(tokens, n, "tokens")
    return labels, labels


def pipeline(q, k, v, tokens=None, *, scale=True, mask=None, decimals=2):
    """The attention pipeline as boxes: Q, K^T -> scores -> / sqrt(d_k) -> softmax -> x V -> out.

    Every matrix is a box of rows x columns equal cells, so box widths and
    heights are proportional to the matrices' dimensions; matrices of at most
    6 x 6 have their numbers written in the cells, and each box has its shape
    written under it. Arrows between the stages name the operation.

    Parameters
    ----------
    q : array_like, shape (n, d_k)
        Queries, one row per query token.
    k : array_like, shape (m, d_k)
        Keys, one row per key token.
    v : array_like, shape (m, d_v)
        Values, one row per key token.
    tokens : sequence of str, optional
        n labels when queries and keys are the same tokens (n == m), or a pair
        ``(query_tokens, key_tokens)`` of n and m labels. They label the rows
        of Q and of the output and the columns of K^T and of the weights.
    scale : bool, default True
        Divide the scores by sqrt(d_k) (a stage of its own). ``False`` draws
        the unscaled variant softmax(QK^T) V, without that stage.
    mask : array_like of bool, shape (n, m), optional
        True = may attend. Blocked cells are hatched and hold -inf before the
        softmax and 0 after it.
    decimals : int, default 2
        Decimals of the numbers written in the cells.

    Returns
    -------
    matplotlib.figure.Figure
        One axes. Each box is a ``Rectangle`` with gid ``"box:<name>"`` (names
        ``Q``, ``K^T``, ``scores``, ``scaled`` when scaled, ``weights``, ``V``,
        ``out``); the number in cell (i, j) is a ``Text`` with gid
        ``"value:<name>:<i>:<j>"``; masked cells are hatched ``Rectangle``\\ s
        with gid ``"masked:<name>:<i>:<j>"``. A matrix of more than 144 cells
        is drawn as one image (gid ``"cells:<name>"``), without numbers.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> x = np.array([[1.0, 0.0, 1.0], [0.0, 2.0, 0.0], [1.0, 1.0, 1.0]])
    >>> fig = pipeline(x, x, x, ["I", "am", "happy"])
    >>> len(fig.axes), sorted(p.get_gid()[4:] for p in fig.axes[0].patches if str(p.get_gid()).startswith("box:"))
    (1, ['K^T', 'Q', 'V', 'out', 'scaled', 'scores', 'weights'])
    >>> plt.close(fig)
    """
    from matplotlib.patches import FancyArrowPatch, Rectangle

    q = _matrix(q, "q")
    k = _matrix(k, "k")
    v = _matrix(v, "v")
    n, d_k = q.shape
    m, d_v = v.shape
    if k.shape[1] != d_k:
        raise ValueError(f"q and k must have the same width d_k: got q.shape={q.shape}, k.shape={k.shape}")
    if k.shape[0] != m:
        raise ValueError(f"k and v must have the same length m: got k.shape={k.shape}, v.shape={v.shape}")
    if n == 0 or m == 0 or d_k == 0 or d_v == 0:
        raise ValueError(f"q, k, v must not be empty: got q.shape={q.shape}, k.shape={k.shape}, v.shape={v.shape}")
    query_tokens, key_tokens = _split_tokens(tokens, n, m)
    if mask is not None:
        mask = np.asarray(mask)
        if mask.dtype != np.bool_:
            raise ValueError(f"mask must be boolean (True = may attend): got dtype {mask.dtype}")
        if mask.shape != (n, m):
            raise ValueError(f"mask must have the weights' shape (n, m) = ({n}, {m}): got shape {mask.shape}")
    if not isinstance(decimals, (int, np.integer)) or isinstance(decimals, bool) or not 0 <= decimals <= 6:
        raise ValueError(f"decimals must be an integer from 0 to 6: got {decimals!r}")

    factor = 1.0 / math.sqrt(d_k) if scale else 1.0
    scores = q @ k.T  # (n, d_k) x (d_k, m) -> (n, m)
    out, weights = scaled_dot_product_attention(q, k, v, mask, scale=factor)  # (n, d_v), (n, m)
    root = f"\u221a{d_k}"
    # stages: (name, matrix, fill, title, operator to the next stage, its label)
    stages = [("Q", q, FILLS["Q"], "Q", "times", "")]
    stages.append(("K^T", k.T, FILLS["K"], "K\u1d40", "arrow", "="))
    stages.append(("scores", scores, FILLS["scores"], "scores QK\u1d40", "arrow", f"\u00f7 {root}" if scale else ""))
    if scale:
        stages.append(("scaled", scores * factor, FILLS["scores"], f"scaled QK\u1d40 / {root}", "arrow", ""))
    stages[-1] = stages[-1][:5] + ("softmax\nof each row" if mask is None else "mask, then\nsoftmax\nof each row",)
    stages.append(("weights", weights, None, "weights", "times", ""))
    stages.append(("V", v, FILLS["V"], "V", "arrow", "="))
    stages.append(("out", out, FILLS["out"], "out", None, ""))
    masked_stages = {"scores", "scaled", "weights"} if mask is not None else set()
    if mask is not None and not scale:
        masked_stages = {"scores", "weights"}

    # Layout in inches: boxes of equal square cells, gaps wide enough for the labels.
    def gap(op, label):
        if op == "times":
            return 0.42
        lines = label.split("\n")
        return max(0.5, 0.075 * max(len(s) for s in lines) + 0.2)

    gaps = [gap(op, label) for *_, op, label in stages[:-1]]
    widths = [s[1].shape[1] for s in stages]
    heights = [s[1].shape[0] for s in stages]
    left_margin = 0.25 + (0.085 * max(len(t) for t in query_tokens) if query_tokens else 0.0)
    right_margin = 0.25
    above = 0.5 + (0.3 if key_tokens else 0.0)  # title (+ key tokens) above the boxes
    below = 0.45  # shapes under the boxes
    fig_width = 12.0
    cell = (fig_width - left_margin - right_margin - sum(gaps)) / sum(widths)
    cell = min(cell, 0.5, (5.0 - above - below) / max(heights))
    content = cell * sum(widths) + sum(gaps)
    x = left_margin + max(0.0, (fig_width - left_margin - right_margin - content) / 2)
    cell_pt = cell * 72
    label_size = float(np.clip(cell_pt * 0.45, 8.5, 10.0))
    # key tokens above K^T and the weights: level at 8-9 points when the cells are wide enough, else slanted
    band = 0.0
    if key_tokens:
        widest = max(len(t) for t in key_tokens) * 0.6 / 72  # inches per point of font size
        token_size = float(np.clip(0.95 * cell / widest, 8.0, label_size * 0.9))
        slant = token_size * widest > 0.95 * cell
        band = 0.12 + (0.66 * token_size * widest if slant else token_size / 72 * 1.3)
    fig_height = max(2.4, 0.5 + band + below + cell * max(heights) + 0.15)

    fig = _new_figure((fig_width, fig_height))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, fig_width)
    ax.set_ylim(0, fig_height)
    ax.set_axis_off()
    mid = below + 0.1 + cell * max(heights) / 2  # boxes are centred on this line
    show_numbers = all(h <= NUMBERS_MAX and w <= NUMBERS_MAX for h, w in zip(heights, widths))
    texts = {}
    if show_numbers:
        for name, matrix, *_ in stages:
            for (i, j), value in np.ndenumerate(matrix):
                masked = name in masked_stages and not mask[i, j]
                if masked:
                    texts[name, i, j] = f"{MINUS}\u221e" if name != "weights" else "0"
                else:
                    texts[name, i, j] = _format(value, decimals)
    longest = max((len(t) for t in texts.values()), default=1)
    number_size = float(np.clip(0.92 * cell_pt / (0.64 * longest), 5.0, 12.0))
    grid = cell_pt >= 4

    import matplotlib as mpl
    from matplotlib.colors import to_rgba

    purples = mpl.colormaps["Purples"]
    # all titles on one line, above the tallest box and its key tokens
    title_line = mid + cell * max(heights) / 2 + 0.1 + band
    for index, (name, matrix, fill, title, op, label) in enumerate(stages):
        rows, cols = matrix.shape
        x0, y0 = x, mid - rows * cell / 2
        y1 = y0 + rows * cell
        blocked = (~mask) if name in masked_stages else np.zeros(matrix.shape, dtype=bool)
        if fill is None:  # the weights: shaded by value on the fixed 0-1 scale
            colours = purples(0.08 + 0.72 * np.clip(np.nan_to_num(matrix), 0, 1))  # (rows, cols, 4)
        else:
            colours = np.broadcast_to(to_rgba(fill), (rows, cols, 4)).copy()
        colours[blocked] = to_rgba("#d9d9d9")
        if rows * cols > CELLS_MAX:  # a large matrix: one picture instead of a patch per cell
            ax.imshow(colours, extent=(x0, x0 + cols * cell, y0, y1), interpolation="nearest", aspect="auto",
                      gid=f"cells:{name}")
        for (i, j), value in np.ndenumerate(matrix) if rows * cols <= CELLS_MAX else ():
            cx, cy = x0 + j * cell, y1 - (i + 1) * cell
            masked = bool(blocked[i, j])
            ax.add_patch(Rectangle(
                (cx, cy), cell, cell, facecolor=colours[i, j], edgecolor="white" if grid else colours[i, j],
                linewidth=0.8 if grid else 0, hatch="///" if masked else None,
                gid=f"masked:{name}:{i}:{j}" if masked else f"cell:{name}:{i}:{j}",
            ))
            if (name, i, j) in texts:
                dark = not _plots._light(colours[i, j])  # black or white by WCAG contrast ratio
                ax.text(cx + cell / 2, cy + cell / 2, texts[name, i, j], ha="center", va="center",
                        fontsize=number_size, color="white" if dark else "#222222",
                        gid=f"value:{name}:{i}:{j}")
        ax.add_patch(Rectangle((x0, y0), cols * cell, rows * cell, fill=False, edgecolor="#333333",
                               linewidth=1.4, gid=f"box:{name}"))
        ax.text(x0 + cols * cell / 2, y0 - 0.08, f"({rows}, {cols})", ha="center", va="top",
                fontsize=label_size, color="#555555", gid=f"shape:{name}")
        if name == "weights":
            ax.text(x0 + cols * cell / 2, y0 - 0.3, "each row sums to 1", ha="center", va="top",
                    fontsize=label_size * 0.85, color="#6a4c93", gid="note:weights")
        top = y1 + 0.08
        if key_tokens and name in ("K^T", "weights") and cols <= 12:
            for j, token in enumerate(key_tokens):
                ax.text(x0 + (j + 0.5) * cell, top, token, ha="left" if slant else "center", va="bottom",
                        rotation=40 if slant else 0, rotation_mode="anchor", fontsize=token_size, color=KEY_COLOUR,
                        parse_math=False, gid=f"token:{name}:{j}")
        if query_tokens and name == "Q" and rows <= 12:  # rows of scores, weights, out line up with these
            for i, token in enumerate(query_tokens):
                ax.text(x0 - 0.06, y1 - (i + 0.5) * cell, token, ha="right", va="center", fontsize=label_size * 0.9,
                        color=QUERY_TEXT_COLOUR, parse_math=False, gid=f"token:{name}:{i}")
        ax.text(x0 + cols * cell / 2, title_line, title, ha="center", va="bottom", fontsize=label_size + 1,
                fontweight="bold", color="#222222", gid=f"title:{name}")
        x = x0 + cols * cell
        if op is None:
            break
        g = gaps[index]
        if op == "times":
            ax.text(x + g / 2, mid, "\u00d7", ha="center", va="center", fontsize=16, color="#333333", gid=f"op:{name}")
        else:
            ax.add_patch(FancyArrowPatch((x + 0.06, mid), (x + g - 0.06, mid), arrowstyle="-|>",
                                         mutation_scale=14, color="#333333", linewidth=1.4, gid=f"arrow:{name}"))
            if label:
                ax.text(x + g / 2, mid + 0.08, label, ha="center", va="bottom", fontsize=min(10.0, label_size),
                        color="#333333",
                        linespacing=1.1, gid=f"op:{name}")
        x += g
    top = np.unravel_index(int(np.argmax(weights)), weights.shape)
    qt = query_tokens or [str(i) for i in range(n)]
    kt = key_tokens or [str(j) for j in range(m)]
    _describe.describe(fig, (
        f"Pipeline diagram of attention, {n} queries × {m} keys"
        + (f" ({_describe.token_list(kt)})" if key_tokens else "")
        + f": Q ({n}×{d_k}) times Kᵀ ({d_k}×{m}) gives the scores ({n}×{m})"
        + (f", divided by √{d_k} = {_describe.number(math.sqrt(d_k))}" if scale else ", not scaled")
        + (f", {int((~mask).sum())} masked cells" if mask is not None else "")
        + f"; softmax of each row gives the weights; weights times V ({m}×{d_v}) give the output ({n}×{d_v}). "
        + f"Largest weight {_describe.number(weights[top])}, {qt[top[0]]} to {kt[top[1]]}."))
    return fig


# --------------------------------------------------------------------------- head view


def _head_panel(ax, weights, query_tokens, key_tokens, title, highlight):
    n, m = weights.shape
    rows = max(n, m)
    yq = (rows - 1) / 2 - np.arange(n) * 1.0  # queries centred vertically
    yk = (rows - 1) / 2 - np.arange(m) * 1.0
    for i in range(n):
        for j in range(m):
            w = float(weights[i, j])
            colour, alpha = KEY_COLOUR, 0.15 + 0.85 * w
            if highlight is not None:
                if i == highlight:
                    colour, alpha = QUERY_COLOUR, 0.4 + 0.6 * w
                else:
                    alpha *= 0.2
            ax.plot([0.0, 1.0], [yq[i], yk[j]], color=colour, linewidth=LINE_WIDTH * w, alpha=alpha,
                    solid_capstyle="butt", gid=f"line:{i}:{j}")
    box = dict(boxstyle="round,pad=0.25", facecolor="white", edgecolor="none", alpha=0.9)
    for i, token in enumerate(query_tokens):
        strong = highlight is None or highlight == i
        ax.text(-0.04, yq[i], token, ha="right", va="center", fontsize=10, parse_math=False, bbox=box,
                color=QUERY_TEXT_COLOUR if highlight == i else "#222222", alpha=1.0 if strong else 0.65,
                fontweight="bold" if highlight == i else "normal", gid=f"query:{i}")
    for j, token in enumerate(key_tokens):
        ax.text(1.04, yk[j], token, ha="left", va="center", fontsize=10, parse_math=False, bbox=box,
                color="#222222", gid=f"key:{j}")
        if highlight is not None:
            ax.text(1.04, yk[j] - 0.32, f"{weights[highlight, j]:.2f}", ha="left", va="center", fontsize=8,
                    color=QUERY_TEXT_COLOUR, gid=f"weight:{j}")
    ax.set_xlim(-0.6, 1.6)
    ax.set_ylim(-(rows - 1) / 2 - 0.7, (rows - 1) / 2 + 1.1)
    ax.set_axis_off()
    ax.text(0.0, (rows - 1) / 2 + 0.65, "queries", ha="right", va="bottom", fontsize=8, color="#666666")
    ax.text(1.0, (rows - 1) / 2 + 0.65, "keys", ha="left", va="bottom", fontsize=8, color="#666666")
    if title:
        ax.set_title(title, fontsize=11)


def head_view(weights, query_tokens, key_tokens=None, *, ax=None, title=None, highlight=None):
    """Attention weights as lines from query tokens (left) to key tokens (right).

    Every query is joined to every key by a straight line whose width
    (7 points times the weight) and opacity (0.12 + 0.88 times the weight)
    grow with the weight, in the manner of BertViz's head view.

    Parameters
    ----------
    weights : array_like, shape (n, m) or (h, n, m)
        Attention weights, each row summing to 1; with a head axis, one panel
        per head side by side.
    query_tokens : sequence of str, length n
        Drawn in the left column, top to bottom.
    key_tokens : sequence of str, length m, optional
        Drawn in the right column; defaults to ``query_tokens`` (self-attention).
    ax : matplotlib Axes, optional
        Draw into this axes (for 2-d weights; for h heads a sequence of h
        axes). A new figure is made when omitted.
    title : str, optional
        Title of the panel (2-d) or of the figure (3-d; panels are "head 1", ...).
    highlight : int, optional
        Index of one query: its lines are drawn in orange with their weights
        written beside the keys, the other queries' lines faintly.

    Returns
    -------
    matplotlib.figure.Figure
        Line (i, j) of a panel is a ``Line2D`` with gid ``"line:<i>:<j>"``.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> w = np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.3, 0.3, 0.4]])
    >>> fig = head_view(w, ["I", "am", "happy"])
    >>> len(fig.axes), len(fig.axes[0].lines)
    (1, 9)
    >>> plt.close(fig)
    """
    weights = np.asarray(weights, dtype=float)
    if weights.ndim not in (2, 3):
        raise ValueError(f"weights must be 2-d (n, m) or 3-d (h, n, m): got shape {weights.shape}")
    stack = weights if weights.ndim == 3 else weights[None]
    h, n, m = stack.shape
    if not np.all(np.isfinite(stack)) or stack.min() < 0 or stack.max() > 1 + 1e-9:
        raise ValueError("weights must be finite and between 0 and 1")
    query_tokens = _labels(query_tokens, n, f"query_tokens (one per row of weights {weights.shape})")
    key_tokens = _labels(query_tokens if key_tokens is None else key_tokens, m,
                         f"key_tokens (one per column of weights {weights.shape}; default query_tokens)")
    if highlight is not None and not (isinstance(highlight, (int, np.integer)) and 0 <= highlight < n):
        raise ValueError(f"highlight must be a query index from 0 to {n - 1}: got {highlight!r}")
    if ax is None:
        import matplotlib.pyplot as plt

        width = max(3.8 * h, 0.09 * len(title or "") + 0.6)  # room for the title at 11 points
        size = (min(width, 14.0), 1.2 + 0.42 * max(n, m))
        fig, axes = plt.subplots(1, h, figsize=size, squeeze=False, layout="constrained")
        axes = list(axes[0])
    else:
        axes = [ax] if weights.ndim == 2 else list(np.ravel(ax))
        if len(axes) != h:
            raise ValueError(f"ax must be one Axes per head: weights have {h} heads, got {len(axes)} axes")
        fig = axes[0].figure
    for index, panel in enumerate(axes):
        panel_title = title if weights.ndim == 2 else f"head {index + 1}"
        _head_panel(panel, stack[index], query_tokens, key_tokens, panel_title, highlight)
    if weights.ndim == 3 and title:
        fig.suptitle(title)
    strongest = [np.unravel_index(int(np.argmax(w)), w.shape) for w in stack]
    text = (f"Head view{' (' + title + ')' if title else ''}: lines from {n} queries "
            f"({_describe.token_list(query_tokens)}) to {m} keys ({_describe.token_list(key_tokens)}), "
            "each line as thick as its weight; "
            + "; ".join(f"{'head ' + str(h_ + 1) + ' ' if h > 1 else ''}strongest {_describe.number(stack[h_][i, j])}, "
                        f"{query_tokens[i]} to {key_tokens[j]}" for h_, (i, j) in enumerate(strongest)))
    if highlight is not None:
        row = stack[0][highlight]
        text += (f"; query {query_tokens[highlight]} highlighted, its weights "
                 + ", ".join(f"{key_tokens[j]} {_describe.number(row[j])}" for j in range(m)))
    (_describe.describe if ax is None else _describe.add_panel)(fig, text + ".")
    return fig


# --------------------------------------------------------------------------- vectors in the plane


def _place_labels(tips, reach):
    """Where to write the labels of arrow tips (m, 2): at the tips when apart, else in a column.

    Tips that coincide share one place (their labels are stacked there).
    Returns ``(places, stack, column)``: one (x, y) per tip, each tip's line
    in its stack (0, 1, ...), and whether the places form a column beside the
    arrows (then a leader line joins each label to its tip).
    """
    m = len(tips)
    first = np.arange(m)  # the first tip each tip coincides with
    stack = np.zeros(m, dtype=int)
    for j in range(m):
        same = np.flatnonzero(np.hypot(*(tips[:j] - tips[j]).T) <= 1e-3 * reach)
        if same.size:
            first[j] = first[same[0]]
            stack[j] = int((first[:j] == first[j]).sum())
    heads = np.flatnonzero(first == np.arange(m))
    if len(heads) < 2:
        return tips.copy(), stack, False
    apart = tips[heads]
    gaps = np.hypot(*(apart[:, None, :] - apart[None, :, :]).transpose(2, 0, 1))
    gaps[np.diag_indices(len(heads))] = np.inf
    if gaps.min() > 0.2 * reach:
        return tips.copy(), stack, False
    rows = len(heads)
    order = heads[np.argsort(-apart[:, 1], kind="stable")]  # the highest tip first
    top, bottom = tips[:, 1].max(), min(tips[:, 1].min(), 0.0)
    span = max(top - bottom, 0.25 * reach * (rows - 1))
    ys = (top + bottom) / 2 + span / 2 - np.arange(rows) * span / (rows - 1)
    places = np.empty_like(tips)
    places[order] = np.column_stack([np.full(rows, tips[:, 0].max() + 0.35 * reach), ys])
    places = places[first]
    return places, stack, True


LABEL_PITCH = 15.0  # points between the labels of a column (11-point text)


def _draw_labels(plane, tips, names, colours, gids, places, stack, column, reach):
    """The arrows' labels: at their tips, or in a column to the right with a leader line to each tip.

    A column has one label per line, LABEL_PITCH points apart (so they cannot
    overlap whatever the axes' scale), ordered by the height of their tips.
    """
    from matplotlib.transforms import offset_copy

    # the query's label in the darker orange of text (4.5:1 or more), its arrow in QUERY_COLOUR
    colours = [QUERY_TEXT_COLOUR if c == QUERY_COLOUR else c for c in colours]
    drawn = []
    if column:
        rows = len(tips)
        order = sorted(range(rows), key=lambda j: (-tips[j, 1], j))  # the highest tip first
        anchor = (float(tips[:, 0].max() + 0.35 * reach), float(np.mean(tips[:, 1])))
        for k, j in enumerate(order):
            shift = offset_copy(plane.transData, fig=plane.figure, x=0, y=((rows - 1) / 2 - k) * LABEL_PITCH,
                                units="points")
            drawn.append(plane.annotate(
                names[j], xy=(tips[j, 0], tips[j, 1]), xytext=anchor, textcoords=shift, ha="left", va="center",
                fontsize=11, color=colours[j], fontweight="bold", parse_math=False, gid=gids[j],
                arrowprops=dict(arrowstyle="-", color=colours[j], linewidth=0.6, alpha=0.6, shrinkA=2, shrinkB=2)))
        return [drawn[order.index(j)] for j in range(rows)]
    for j, (tip, name, colour) in enumerate(zip(tips, names, colours)):
        norm = float(np.hypot(*tip))
        u = tip / norm if norm > 0 else np.array([0.0, 1.0])
        drawn.append(plane.annotate(
            name, xy=(tip[0], tip[1]), xytext=(9 * u[0], 9 * u[1] - LABEL_PITCH * stack[j]),
            textcoords="offset points", ha="left" if u[0] > 0.3 else "right" if u[0] < -0.3 else "center",
            va="bottom" if u[1] > 0.3 else "top" if u[1] < -0.3 else "center",
            fontsize=11, color=colour, fontweight="bold", parse_math=False, gid=gids[j]))
    return drawn


def _overlapping(fig, texts, pad=1.0):
    """Whether any two of ``texts`` overlap once the figure is laid out (``pad`` pixels of margin)."""
    from matplotlib.text import Text

    fig.draw_without_rendering()
    boxes = [Text.get_window_extent(t) for t in texts]  # the words, without any leader line
    for a in range(len(boxes)):
        for b in range(a + 1, len(boxes)):
            if boxes[a].padded(pad).overlaps(boxes[b]):
                return True
    return False


def vectors_2d(vectors, labels, *, query=None, weights=None, ax=None, query_label=None):
    """Two-dimensional vectors as arrows from the origin, with a query's dot products.

    A dot product is a length times a length times the cosine of the angle
    between: q·k = |q| |k| cos θ. With a ``query``, its arrow is drawn in
    orange, and a table beside the plane gives, for each key, |k|, the angle
    θ to the query and q·k = |q| |k| cos θ; with ``weights`` the table ends in
    bars of the weights, so a larger dot product is seen to get a larger weight.
    When the arrows' tips crowd together, or their labels would overlap once
    drawn (measured after layout), the labels, the query's included, move into
    a column of one label per line with a thin leader line to each tip.

    Parameters
    ----------
    vectors : array_like, shape (m, 2)
        The keys (or any 2-d vectors), one per label.
    labels : sequence of str, length m
    query : int or array_like of shape (2,), optional
        An index into ``vectors``, or a 2-vector of its own (e.g. a query
        made by a different projection than the keys).
    weights : array_like, shape (m,), optional
        One row of attention weights (the query's), drawn as bars.
    ax : matplotlib Axes, or a pair of Axes, optional
        Where to draw: one Axes for the plane alone, a pair (plane, table)
        when ``query`` or ``weights`` is given. A new figure when omitted.
    query_label : str, optional
        Name of the query; default the label of the indexed vector, or "query".

    Returns
    -------
    matplotlib.figure.Figure
        One axes (the plane), or two (the plane and the table). Key j's dot
        product with the query is a ``Text`` with gid ``"dot:<j>"`` (written
        to 2 decimals), its angle one with gid ``"angle:<j>"`` (in degrees),
        its bar a ``Rectangle`` with gid ``"bar:<j>"`` (lengths proportional
        to the weights, the largest filling the column; the values are written).

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> k = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    >>> fig = vectors_2d(k, ["cat", "sat", "mat"], query=2, weights=[0.2, 0.2, 0.6])
    >>> len(fig.axes), fig.axes[1].texts[0].get_text()
    (2, 'key')
    >>> plt.close(fig)
    """
    vectors = _matrix(vectors, "vectors")
    if vectors.shape[1] != 2 or len(vectors) == 0:
        raise ValueError(f"vectors must have shape (m, 2), 2-d vectors in rows: got shape {vectors.shape}")
    m = len(vectors)
    labels = _labels(labels, m, f"labels (one per row of vectors {vectors.shape})")
    q = None
    indexed = isinstance(query, (int, np.integer)) and not isinstance(query, bool)
    if indexed:
        if not 0 <= query < m:
            raise ValueError(f"query index must be from 0 to {m - 1}: got {query}")
        q = vectors[query]
        query_label = labels[query] if query_label is None else str(query_label)
    elif query is not None:
        q = np.asarray(query, dtype=float)
        if q.shape != (2,):
            raise ValueError(f"query must be an index or a 2-vector of shape (2,): got shape {q.shape}")
        query_label = "query" if query_label is None else str(query_label)
    if weights is not None:
        weights = np.asarray(weights, dtype=float)
        if weights.shape != (m,):
            raise ValueError(f"weights must be one row of shape (m,) = ({m},): got shape {weights.shape}")
        if not np.all(np.isfinite(weights)) or weights.min() < 0:
            raise ValueError("weights must be finite and non-negative")
    side = q is not None or weights is not None
    if ax is None:
        import matplotlib.pyplot as plt

        if side:
            fig, (plane, table) = plt.subplots(
                1, 2, figsize=(12.0, 5.0), layout="constrained", gridspec_kw={"width_ratios": [1.0, 1.15]})
        else:
            fig, plane = plt.subplots(figsize=(6.0, 5.0), layout="constrained")
            table = None
    else:
        axes = list(np.ravel(ax)) if isinstance(ax, (list, tuple, np.ndarray)) else [ax]
        if len(axes) != (2 if side else 1):
            raise ValueError(
                f"ax must be one Axes, or two (plane, table) when query or weights are given: got {len(axes)}")
        plane, table = axes[0], (axes[1] if side else None)
        fig = plane.figure

    lengths = np.linalg.norm(vectors, axis=1)
    text = (f"Arrows from the origin for {m} 2-d vectors ({_describe.token_list(labels)}); "
            f"longest {labels[int(np.argmax(lengths))]} (length {_describe.number(lengths.max())})")
    if q is not None:
        dots = vectors @ q
        best = int(np.argmax(dots))
        text += (f"; query '{query_label}' in orange, dot products "
                 + ", ".join(f"{labels[j]} {_describe.number(dots[j])}" for j in range(m))
                 + f", largest with {labels[best]}")
    if weights is not None:
        text += "; weights " + ", ".join(f"{labels[j]} {_describe.number(weights[j])}" for j in range(m))
    (_describe.describe if ax is None else _describe.add_panel)(fig, text + ".")

    # ---- the plane
    extra = q is not None and not indexed
    tips = np.vstack([vectors, q]) if extra else vectors  # (m or m + 1, 2)
    names = labels + [query_label] if extra else labels
    colours = [KEY_COLOUR] * m + ([QUERY_COLOUR] if extra else [])
    if indexed:
        colours[query] = QUERY_COLOUR
    reach = float(np.abs(tips).max())
    reach = reach if reach > 0 else 1.0
    places, stack, column = _place_labels(tips, reach)
    pad = 0.25 * reach
    lo = np.minimum(np.minimum(tips.min(axis=0), places.min(axis=0)), 0) - pad
    hi = np.maximum(np.maximum(tips.max(axis=0), places.max(axis=0)), 0) + pad
    if column:
        hi[0] += 0.12 * reach * max(len(t) for t in names) / 4  # room for the words of the column
    plane.set_xlim(lo[0], hi[0])
    plane.set_ylim(lo[1], hi[1])
    plane.set_aspect("equal", adjustable="box")
    plane.axhline(0, color="#aaaaaa", linewidth=0.8, zorder=0)
    plane.axvline(0, color="#aaaaaa", linewidth=0.8, zorder=0)
    plane.grid(True, color="#eeeeee", zorder=-1)
    plane.set_xlabel("dimension 1")
    plane.set_ylabel("dimension 2")
    plane.spines[["top", "right"]].set_visible(False)
    for j, (tip, colour) in enumerate(zip(tips, colours)):
        gid = "arrow:query" if extra and j == m else f"arrow:{j}"
        width = 2.6 if colour == QUERY_COLOUR else 1.8
        plane.annotate("", xy=(tip[0], tip[1]), xytext=(0, 0), gid=gid, zorder=3 if colour == QUERY_COLOUR else 2,
                       arrowprops=dict(arrowstyle="-|>", color=colour, linewidth=width, mutation_scale=15,
                                       shrinkA=0, shrinkB=0))
    gids = ["label:query" if extra and j == m else f"label:{j}" for j in range(len(tips))]
    drawn = _draw_labels(plane, tips, names, colours, gids, places, stack, column, reach)
    if not column and _overlapping(fig, drawn):  # labels at the tips would collide: a column instead
        for text in drawn:
            text.remove()
        column = True
        drawn = _draw_labels(plane, tips, names, colours, gids, places, stack, column, reach)
        plane.set_xlim(lo[0], hi[0] + 0.12 * reach * max(len(t) for t in names) / 4)
    if q is not None and not column and m <= 4 and np.hypot(*q) > 0:
        # the angle theta between the query and each key, as an arc near the origin
        from matplotlib.patches import Arc

        start = math.degrees(math.atan2(q[1], q[0]))
        for j, vec in enumerate(vectors):
            if np.hypot(*vec) == 0 or (indexed and j == query):
                continue
            end = math.degrees(math.atan2(vec[1], vec[0]))
            sweep = (end - start + 180.0) % 360.0 - 180.0  # the short way round, in (-180, 180]
            if abs(sweep) < 1.0:
                continue
            radius = reach * (0.2 + 0.16 * j)  # arcs far enough apart for a label between two
            low, high = sorted((start, start + sweep))
            plane.add_patch(Arc((0, 0), 2 * radius, 2 * radius, theta1=low, theta2=high, color=KEY_COLOUR,
                                linewidth=1.0, alpha=0.8, gid=f"arc:{j}"))
            middle = math.radians(start + 0.72 * sweep)  # near the key, not on a key halfway round
            plane.text((radius + 0.07 * reach) * math.cos(middle), (radius + 0.07 * reach) * math.sin(middle),
                       f"\u03b8 {abs(sweep):.0f}\u00b0", fontsize=8.5, color=KEY_COLOUR, ha="center",
                       va="center", gid=f"arc_label:{j}")
    if q is not None:
        plane.set_title(f"keys (blue) and the query '{query_label}' (orange)", fontsize=11)

    # ---- the table: |k|, angle, q·k, and the weights as bars
    if table is None:
        return fig
    table.set_ylim(m - 0.4, -1.2)  # row j at y = j, the header at y = -1
    table.set_xlim(0, 1)
    table.set_axis_off()
    header = dict(ha="center", va="center", fontsize=10, color="#555555", fontweight="bold")
    columns = {"key": 0.08}
    if q is not None:
        columns.update({"|k|": 0.21, "\u03b8": 0.31, "q\u00b7k = |q| |k| cos \u03b8": 0.49})
    bar_left = 0.66 if q is not None else 0.22
    for name, x in columns.items():
        table.text(x, -1, name, **header, parse_math=False)
    if weights is not None:
        table.text((bar_left + 0.98) / 2, -1, "weight", **header)
    nq = float(np.hypot(*q)) if q is not None else 0.0
    for j, (vec, label) in enumerate(zip(vectors, labels)):
        if j % 2 == 0:
            table.axhspan(j - 0.5, j + 0.5, color="#f4f4f4", zorder=0)
        table.text(columns["key"], j, label, ha="center", va="center", fontsize=11,
                   color=QUERY_TEXT_COLOUR if colours[j] == QUERY_COLOUR else colours[j],
                   parse_math=False, gid=f"key:{j}")
        if q is None:
            continue
        nk = float(np.hypot(*vec))
        dot = float(q @ vec)
        if nq > 0 and nk > 0:
            angle = f"{math.degrees(math.acos(max(-1.0, min(1.0, dot / (nq * nk))))):.0f}\u00b0"
        else:
            angle = "\u2013"  # no angle with a zero vector
        table.text(columns["|k|"], j, _format(nk, 2), ha="center", va="center", fontsize=11, gid=f"norm:{j}")
        table.text(columns["\u03b8"], j, angle, ha="center", va="center", fontsize=11, gid=f"angle:{j}")
        table.text(columns["q\u00b7k = |q| |k| cos \u03b8"], j, _format(dot, 2), ha="center", va="center",
                   fontsize=11, fontweight="bold", gid=f"dot:{j}")
    if q is not None:
        table.text(0.5, m - 0.05, f"|q| = {_format(nq, 2)}  ('{query_label}')", ha="center", va="top",
                   fontsize=10, color=QUERY_TEXT_COLOUR, parse_math=False, gid="query_norm")
    if weights is not None:
        from matplotlib.patches import Rectangle

        longest = 0.98 - bar_left - 0.09  # room for the written value after the bar
        top = float(weights.max()) if weights.max() > 0 else 1.0  # the largest weight fills the column
        for j, w in enumerate(weights):
            table.add_patch(Rectangle((bar_left, j - 0.32), longest * w / top, 0.64, facecolor=KEY_COLOUR,
                                      gid=f"bar:{j}"))
            table.text(bar_left + longest * w / top + 0.01, j, _format(w, 2), ha="left", va="center",
                       fontsize=10, gid=f"weight:{j}")
        table.plot([bar_left, bar_left], [-0.5, m - 0.5], color="#555555", linewidth=0.8)
    if q is not None or weights is not None:
        what = "weights" if q is None else f"the query '{query_label}' against each key"
        table.set_title(what, fontsize=11)
    return fig


# --------------------------------------------------------------------------- soft lookup


def _value_text(value):
    value = np.atleast_1d(value)
    if value.size == 1:
        return _format(float(value[0]), 2)
    return "[" + ", ".join(_format(float(x), 2) for x in value) + "]"


def _text_width(text, size, weight="normal", math=False):
    """Width in inches of ``text`` at ``size`` points (the font's outline, so no renderer is needed)."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextPath

    if not text:
        return 0.0
    if not math:  # drawn literally (parse_math=False): a dollar sign is just a character
        text = text.replace("$", r"\$")
    path = TextPath((0, 0), text, size=size, prop=FontProperties(weight=weight))
    extents = path.get_extents()
    return 1.06 * float(extents.x1) / 72  # 6 % for the renderer's hinting


LOOKUP_PITCH = 0.42  # inches between the rows of the lookup table (at most)
LOOKUP_HEIGHT = 4.2  # inches: the whole lookup figure fits a 16:9 slide under a heading


def _lookup_layout(query_label, keys, values, results, captions, titles, panels):
    """Sizes in inches of the lookup picture: x of its columns, row pitch, panel height and width."""
    m = len(keys)
    pad = 0.3 * 10 / 72  # the round box's padding around a 10-point key
    query_w = max(0.8, _text_width(query_label, 10) + 0.3)
    fan_start = 0.1 + query_w
    fan_end = fan_start + 1.1
    weight_x = fan_end + 0.06
    key_left = weight_x + _text_width("0.00", 8.5) + 0.1
    key_w = max(_text_width(k, 10) for k in keys)
    key_x = key_left + pad + key_w / 2
    value_x = key_left + key_w + 2 * pad + 0.25
    value_end = value_x + max(_text_width(_value_text(v), 10) for v in values)
    blend_start = value_end + 0.12
    out_x = blend_start + 0.8 + 0.1 + 0.35 * 10.5 / 72  # the blend lines end at the result's box
    right = out_x + max([_text_width(r, 10.5, "bold") for r in results]
                        + [_text_width(c, 9, math=True) for c in captions]) + 0.15
    right = max(right, 0.1 + max(_text_width(t, 11) for t in titles) + 0.1)
    if m > 1:
        pitch = float(np.clip((LOOKUP_HEIGHT / panels - 0.94) / (m - 1), 0.3, LOOKUP_PITCH))
    else:
        pitch = LOOKUP_PITCH
    height = 0.67 + (m - 1) * pitch + max(0.27, 0.55 - (m - 1) * pitch / 2)
    return dict(query=0.1 + query_w / 2, query_w=query_w, fan_start=fan_start, fan_end=fan_end, weight=weight_x,
                key=key_x, value=value_x, value_end=value_end, blend_start=blend_start, out=out_x, right=right,
                pitch=pitch, height=height)


def _lookup_panel(ax, query_label, keys, values, weights, title, result, caption, layout):
    """One lookup: query -> keys (line width ~ weight, weights written), values -> output (the same widths).

    The axes spans the panel with data units of inches, so every gap is an exact distance.
    """
    from matplotlib.patches import FancyBboxPatch

    m = len(keys)
    x = layout
    top = x["height"]
    ys = top - 0.67 - np.arange(m) * x["pitch"]  # row j's centre
    mid = float(ys.mean())
    ax.set_xlim(0, x["right"])
    ax.set_ylim(0, top)
    ax.set_axis_off()
    ax.text(0.1, top - 0.05, title, ha="left", va="top", fontsize=11, gid="title")
    ax.text(x["key"], top - 0.3, "key", ha="center", va="top", fontsize=9, color="#666666")
    ax.text(x["value"], top - 0.3, "value", ha="left", va="top", fontsize=9, color="#666666")
    for j in range(m):
        w = float(weights[j])
        width, alpha = 0.3 + 5.0 * w, 0.15 + 0.85 * w
        ax.plot([x["fan_start"], x["fan_end"]], [mid, ys[j]], color=QUERY_COLOUR, linewidth=width, alpha=alpha,
                solid_capstyle="butt", gid=f"line:{j}")
        ax.plot([x["blend_start"], x["blend_start"] + 0.8], [ys[j], mid], color="#6a4c93", linewidth=width,
                alpha=alpha, solid_capstyle="butt", gid=f"blend:{j}")
        # the weight, in its own column between the line's end and the key
        ax.text(x["weight"], ys[j], _format(w, 2), ha="left", va="center",
                fontsize=8.5, color=QUERY_TEXT_COLOUR if w > 0 else "#767676", gid=f"weight:{j}")
        box = dict(boxstyle="round,pad=0.3", facecolor=FILLS["K"], edgecolor=KEY_COLOUR, linewidth=1,
                   alpha=0.3 + 0.7 * w)
        ax.text(x["key"], ys[j], keys[j], ha="center", va="center", fontsize=10, parse_math=False, bbox=box,
                gid=f"key:{j}")
        ax.text(x["value"], ys[j], _value_text(values[j]), ha="left", va="center", fontsize=10,
                color="#222222" if w > 0 else "#767676", gid=f"value:{j}")
    ax.add_patch(FancyBboxPatch((0.1 + 0.03, mid - 0.15), x["query_w"] - 0.06, 0.3, boxstyle="round,pad=0.03",
                                facecolor=FILLS["Q"], edgecolor=QUERY_COLOUR, linewidth=1.2))
    ax.text(x["query"], mid, query_label, ha="center", va="center", fontsize=10, parse_math=False, gid="query")
    ax.text(x["query"], mid - 0.22, "query", ha="center", va="top", fontsize=8.5, color="#666666")
    ax.text(x["out"], mid, result, ha="left", va="center", fontsize=10.5, fontweight="bold",
            bbox=dict(boxstyle="round,pad=0.35", facecolor=FILLS["out"], edgecolor="#6a4c93"), gid="result")
    ax.text(x["out"], mid - 0.2, caption, ha="left", va="top", fontsize=9, color="#555555", gid="caption")


def soft_lookup(query_label, keys, values, weights, *, hard_index=None):
    """A dictionary lookup next to attention's soft lookup.

    A dictionary compares the query with each key and returns the value of
    the one key that matches. Attention gives every key a weight (summing to
    1) and returns the blend sum_j w_j v_j: line widths show the weights.

    Parameters
    ----------
    query_label : str
        What is looked up.
    keys : sequence of str, length m
    values : array_like, shape (m,) or (m, d_v)
        One value (a number or a vector) per key.
    weights : array_like, shape (m,)
        Attention weights of the query over the keys: non-negative, sum 1.
    hard_index : int, optional
        The key a hard lookup would match; then a first panel shows that
        lookup, returning exactly ``values[hard_index]``.

    Returns
    -------
    matplotlib.figure.Figure
        One panel (attention), or two (hard lookup above, attention below).
        Sized in inches from the measured widths of its words, so no line
        touches a word; with up to 4 keys both panels together are at most
        4.2 inches tall (a 16:9 slide under a heading).
        The blended output is a ``Text`` with gid ``"result"``.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> fig = soft_lookup("fruit?", ["apple", "car", "pear"], [1.0, 5.0, 2.0], [0.6, 0.1, 0.3], hard_index=0)
    >>> len(fig.axes)
    2
    >>> plt.close(fig)
    """
    import matplotlib.pyplot as plt

    if isinstance(keys, str):
        raise ValueError(f"keys must be a sequence of strings, not one string: got {keys!r}")
    keys = [str(key) for key in keys]
    m = len(keys)
    try:
        values = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"values must be numbers (m,) or vectors (m, d_v): {exc}") from None
    if values.ndim not in (1, 2) or len(values) != m:
        raise ValueError(f"values must have shape (m,) or (m, d_v) with m={m} keys: got shape {values.shape}")
    weights = np.asarray(weights, dtype=float)
    if weights.shape != (m,):
        raise ValueError(f"weights must be one row of shape (m,) = ({m},): got shape {weights.shape}")
    if not np.all(np.isfinite(weights)) or weights.min() < 0 or abs(weights.sum() - 1) > 1e-6:
        raise ValueError(f"weights must be non-negative and sum to 1: got sum {weights.sum():.6g}")
    if hard_index is not None and not (isinstance(hard_index, (int, np.integer)) and 0 <= hard_index < m):
        raise ValueError(f"hard_index must be a key index from 0 to {m - 1}: got {hard_index!r}")
    blend = weights @ values  # (m,) @ (m,) or (m, d_v) -> () or (d_v,)
    query_label = str(query_label)
    results = [_value_text(blend)] + ([] if hard_index is None else [_value_text(values[hard_index])])
    titles = ["attention: every key matches a little, a blend of the values comes out"]
    captions = [r"output = $\sum_j\ w_j\, v_j$ (weights $\times$ values)"]
    if hard_index is not None:
        titles.append("a dictionary: one key matches, its value comes out")
        captions.append(f"output = the value of '{keys[hard_index]}'".replace("$", r"\$"))
    panels = len(titles)
    layout = _lookup_layout(query_label, keys, values, results, captions, titles, panels)
    gap = 0.1  # inches between the panels
    height = panels * layout["height"] + (panels - 1) * gap
    fig = plt.figure(figsize=(layout["right"], height))
    axes = [fig.add_axes((0, (height - (p + 1) * layout["height"] - p * gap) / height, 1, layout["height"] / height))
            for p in range(panels)]
    if hard_index is not None:
        one_hot = np.zeros(m)
        one_hot[hard_index] = 1.0
        _lookup_panel(axes[0], query_label, keys, values, one_hot, titles[1], results[1], captions[1], layout)
    _lookup_panel(axes[-1], query_label, keys, values, weights, titles[0], results[0], captions[0], layout)
    text = f"Looking up '{query_label}' among {m} keys ({_describe.token_list(keys)})"
    if hard_index is not None:
        text += f". A dictionary returns the value of '{keys[hard_index]}', {results[1]}"
    text += (". Attention weighs every key (" + ", ".join(f"{keys[j]} {_describe.number(weights[j])}" for j in range(m))
             + f") and returns the blend {results[0]}.")
    _describe.describe(fig, text)
    return fig


# =========================================================================== notebook 09: gradients by hand
# The backward pass as a graph of shapes, and the softmax Jacobian of one row.

from . import figures as _figures  # noqa: E402  (section of notebook 09, appended after the others)
from .attention import softmax as _softmax  # noqa: E402
from .attention import softmax_jacobian as _jacobian  # noqa: E402

__all__ += ["backward_graph", "softmax_jacobian"]

FORWARD_COLOUR = "#1f5fa8"  # blue: values flowing forward (6.3:1 on white)
BACKWARD_COLOUR = "#a84300"  # dark orange: gradients flowing back (5.6:1 on white)
# the nodes of attention's forward pass: name -> (title, symbolic shape, column, row)
_GRAPH_NODES = {
    "Q": ("queries Q", ("n", "d_k"), 0, 1),
    "K": ("keys K", ("m", "d_k"), 0, 0),
    "S": ("scores S", ("n", "m"), 1, 1),
    "P": ("weights P", ("n", "m"), 2, 1),
    "V": ("values V", ("m", "d_v"), 2, 0),
    "O": ("out O", ("n", "d_v"), 3, 1),
}
# edges (from, to, forward label, backward formula: the gradient of `from` from that of `to`)
_GRAPH_EDGES = [
    ("Q", "S", "scale \u00b7 Q K\u1d40", "dQ = scale \u00b7 dS K"),
    ("K", "S", "", "dK = scale \u00b7 dS\u1d40 Q"),
    ("S", "P", "softmax of each row", "dS = P \u2299 (dP \u2212 r)"),
    ("P", "O", "P V", "dP = dO V\u1d40"),
    ("V", "O", "", "dV = P\u1d40 dO"),
]


def _positive_int(x, name):
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or x < 1:
        raise ValueError(f"{name} must be a positive integer: got {x!r}")
    return int(x)


def backward_graph(n, m, d_k, d_v):
    """Attention's forward pass as a graph of boxes, and its backward pass flowing the other way.

    Six nodes: Q, K and V, the scores S = scale * Q K^T, the weights
    P = softmax(S) (row by row) and the output O = P V. Each box names its node
    and writes its shape twice: in letters and with the numbers given, in blue
    for the values that flow forward, and in dark orange for the gradient
    dX = dL/dX that flows back, which has the shape of its node. Forward
    arrows (blue) run above the backward arrows (orange, pointing the other
    way); each backward arrow carries the formula of its step, with
    r = rowsum(dO * O).

    Parameters
    ----------
    n, m : int
        Number of queries and of keys (and values).
    d_k, d_v : int
        Width of queries and keys, and of values.

    Returns
    -------
    matplotlib.figure.Figure
        One axes. Node ``X`` is a ``FancyBboxPatch`` with gid ``"node:X"``; its
        shape is a ``Text`` with gid ``"shape:X"`` (e.g. ``"(2, 4)"``) and its
        gradient's a ``Text`` with gid ``"grad:X"`` (``"dX (2, 4)"``). The arrow
        from node A to node B is a ``FancyArrowPatch`` with gid
        ``"forward:A:B"``, its reverse ``"backward:B:A"``, whose formula is a
        ``Text`` with gid ``"formula:B:A"``. The figure carries a description
        (:func:`helpers.figures.description`).

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> fig = backward_graph(2, 3, 4, 5)
    >>> [t.get_text() for t in fig.findobj(lambda a: a.get_gid() in ("shape:S", "grad:Q"))]
    ['dQ (2, 4)', '(2, 3)']
    >>> plt.close(fig)
    """
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    sizes = {"n": _positive_int(n, "n"), "m": _positive_int(m, "m"),
             "d_k": _positive_int(d_k, "d_k"), "d_v": _positive_int(d_v, "d_v")}
    shapes = {name: tuple(sizes[s] for s in symbolic) for name, (_, symbolic, _, _) in _GRAPH_NODES.items()}
    width, height = 10.3, 3.7
    box_w, box_h = 1.4, 0.95
    xs = [0.85, 3.7, 6.55, 9.4]  # centres of the four columns, inches
    ys = [0.95, 2.55]  # centres of the two rows
    fig = _new_figure((width, height))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.set_axis_off()
    centre = {name: (xs[col], ys[row]) for name, (_, _, col, row) in _GRAPH_NODES.items()}
    for name, (title, symbolic, _, _) in _GRAPH_NODES.items():
        x, y = centre[name]
        fill = {"Q": FILLS["Q"], "K": FILLS["K"], "V": FILLS["V"], "O": FILLS["out"]}.get(name, FILLS["scores"])
        ax.add_patch(FancyBboxPatch((x - box_w / 2, y - box_h / 2), box_w, box_h, boxstyle="round,pad=0.02",
                                    facecolor=fill, edgecolor="#333333", linewidth=1.2, gid=f"node:{name}"))
        ax.text(x, y + 0.27, title, ha="center", va="center", fontsize=10.5, fontweight="bold",
                color="#222222", gid=f"title:{name}")
        letters = "(" + ", ".join(symbolic) + ")"
        ax.text(x - 0.05, y + 0.02, letters, ha="right", va="center", fontsize=9, color="#444444",
                gid=f"letters:{name}")
        ax.text(x + 0.05, y + 0.02, str(shapes[name]), ha="left", va="center", fontsize=9.5,
                color=FORWARD_COLOUR, gid=f"shape:{name}")
        ax.text(x, y - 0.26, f"d{name} {shapes[name]}", ha="center", va="center", fontsize=9.5,
                color=BACKWARD_COLOUR, fontweight="bold", gid=f"grad:{name}")

    def ends(a, b, offset):
        """Start and end of an arrow from box a to box b, moved sideways by ``offset`` inches."""
        (xa, ya), (xb, yb) = centre[a], centre[b]
        if ya == yb:  # same row: from the right edge to the left edge
            start, end = np.array([xa + box_w / 2 + 0.05, ya]), np.array([xb - box_w / 2 - 0.05, yb])
        else:  # from the bottom row up to the top row
            start = np.array([xa + box_w / 2 + 0.05, ya + 0.15])
            end = np.array([xb - box_w / 2 + 0.3, yb - box_h / 2 - 0.05])
        direction = (end - start) / np.hypot(*(end - start))
        normal = np.array([-direction[1], direction[0]])  # to the left of the arrow
        return tuple(start + offset * normal), tuple(end + offset * normal)

    for a, b, label, formula in _GRAPH_EDGES:
        start, end = ends(a, b, 0.13)
        ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=13, color=FORWARD_COLOUR,
                                     linewidth=1.5, gid=f"forward:{a}:{b}"))
        back_end, back_start = ends(a, b, -0.13)
        ax.add_patch(FancyArrowPatch(back_start, back_end, arrowstyle="-|>", mutation_scale=13,
                                     color=BACKWARD_COLOUR, linewidth=1.5, linestyle="--",
                                     gid=f"backward:{b}:{a}"))
        (x0, y0), (x1, y1) = start, end
        if centre[a][1] == centre[b][1]:
            if label:
                ax.text((x0 + x1) / 2, y0 + 0.08, label, ha="center", va="bottom", fontsize=8.5,
                        color=FORWARD_COLOUR, gid=f"op:{a}:{b}")
            ax.text((x0 + x1) / 2, back_end[1] - 0.1, formula, ha="center", va="top", fontsize=8.5,
                    color=BACKWARD_COLOUR, gid=f"formula:{b}:{a}")
        else:
            (bx0, by0), (bx1, by1) = back_end, back_start
            ax.text((bx0 + bx1) / 2 + 0.15, (by0 + by1) / 2 - 0.05, formula, ha="left", va="top",
                    fontsize=8.5, color=BACKWARD_COLOUR, gid=f"formula:{b}:{a}")
    ax.text(0.15, height - 0.12, "forward: values and their shapes", ha="left", va="top", fontsize=10,
            color=FORWARD_COLOUR, fontweight="bold", gid="legend:forward")
    ax.text(3.6, height - 0.12, "backward (dashed): gradients dX = \u2202L/\u2202X, each the shape of X",
            ha="left", va="top", fontsize=10, color=BACKWARD_COLOUR, fontweight="bold", gid="legend:backward")
    ax.text(width - 0.15, 0.12, "r = rowsum(dO \u2299 O), one number per query", ha="right", va="bottom",
            fontsize=9, color=BACKWARD_COLOUR, gid="note:r")
    forward = ", ".join(f"{title} {shapes[name]}" for name, (title, *_) in _GRAPH_NODES.items())
    _figures.describe(fig, (
        f"Graph of attention's forward pass with n = {n} queries, m = {m} keys, d_k = {d_k}, d_v = {d_v}: "
        f"{forward}. Q and K feed the scores, the softmax of each row gives the weights, weights and V give "
        f"the output. The backward pass runs the other way, dO {shapes['O']} to dP and dV {shapes['V']}, dP to "
        f"dS {shapes['S']}, dS to dQ {shapes['Q']} and dK {shapes['K']}; every gradient has the shape of "
        "its node."))
    return fig


def softmax_jacobian(scores, labels=None, *, decimals=2):
    """The softmax Jacobian of one row, J = diag(p) - p p^T, as an annotated matrix.

    Above the matrix, the row's weights p = softmax(scores); below them the
    m x m matrix J[i, j] = dp_i / ds_j with its numbers written in the cells,
    red where positive (the diagonal, p_i (1 - p_i)) and blue where negative
    (off the diagonal, -p_i p_j), and a column with each row's sum, which is 0:
    raising every score by the same amount changes no weight.

    Parameters
    ----------
    scores : array_like, shape (m,)
        One row of scores (finite).
    labels : sequence of str, length m, optional
        The keys' tokens, on the rows and columns.
    decimals : int, default 2
        Decimals of the numbers written in the cells.

    Returns
    -------
    matplotlib.figure.Figure
        One axes. The number in cell (i, j) is a ``Text`` with gid
        ``"cell:<i>:<j>"``, the weight p_j one with gid ``"p:<j>"`` and the sum
        of row i one with gid ``"rowsum:<i>"``. Numbers use a real minus sign.
        The figure carries a description (:func:`helpers.figures.description`).

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> fig = softmax_jacobian([0.0, 0.0])
    >>> sorted(t.get_text() for t in fig.findobj(lambda a: str(a.get_gid()).startswith("cell:")))
    ['0.25', '0.25', '\u22120.25', '\u22120.25']
    >>> plt.close(fig)
    """
    import matplotlib as mpl
    from matplotlib.patches import Rectangle

    s = _matrix(scores, "scores", ndim=1)
    m = s.shape[0]
    if m == 0 or not np.all(np.isfinite(s)):
        raise ValueError(f"scores must be a non-empty row of finite numbers: got {s!r}")
    if m > 8:
        raise ValueError(f"softmax_jacobian draws rows of at most 8 scores: got {m}")
    labels = _labels([f"s{j}" for j in range(m)] if labels is None else labels, m, "labels")
    if not isinstance(decimals, (int, np.integer)) or isinstance(decimals, bool) or not 0 <= decimals <= 4:
        raise ValueError(f"decimals must be an integer from 0 to 4: got {decimals!r}")
    p = _softmax(s)  # (m,)
    jac = _jacobian(p)  # (m, m), J[i, j] = dp_i / ds_j
    sums = jac.sum(axis=1)  # (m,), 0 up to rounding
    cell = 0.62
    left, top_band, right_band = 1.0, 1.2, 1.25
    fig_w = left + m * cell + right_band + 2.6
    fig_h = top_band + m * cell + 0.3
    fig = _new_figure((fig_w, fig_h))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, fig_w)
    ax.set_ylim(0, fig_h)
    ax.set_axis_off()
    limit = max(float(np.abs(jac).max()), 1e-12)
    cmap = mpl.colormaps["RdBu_r"]
    y_top = fig_h - top_band  # top edge of the matrix
    # the weights p above the matrix
    ax.text(left - 0.1, y_top + 0.4, "p =", ha="right", va="center", fontsize=10, color="#222222")
    for j in range(m):
        x = left + j * cell
        ax.text(x + cell / 2, y_top + 0.8, labels[j], ha="center", va="bottom", fontsize=9.5,
                color="#222222", parse_math=False, gid=f"label:col:{j}")
        ax.add_patch(Rectangle((x, y_top + 0.18), cell, 0.44, facecolor="#ece4f3", edgecolor="white"))
        ax.text(x + cell / 2, y_top + 0.4, _format(p[j], decimals), ha="center", va="center", fontsize=9.5,
                color="#222222", gid=f"p:{j}")
    for i in range(m):
        y = y_top - (i + 1) * cell
        ax.text(left - 0.1, y + cell / 2, labels[i], ha="right", va="center", fontsize=9.5, color="#222222",
                parse_math=False, gid=f"label:row:{i}")
        for j in range(m):
            colour = cmap(0.5 + 0.5 * jac[i, j] / limit)
            ax.add_patch(Rectangle((left + j * cell, y), cell, cell, facecolor=colour, edgecolor="white",
                                   linewidth=1.0, gid=f"square:{i}:{j}"))
            dark = np.asarray(colour[:3]) @ LUMINANCE < 0.45
            ax.text(left + (j + 0.5) * cell, y + cell / 2, _format(jac[i, j], decimals), ha="center",
                    va="center", fontsize=9.5, color="white" if dark else "#222222", gid=f"cell:{i}:{j}")
        ax.text(left + m * cell + 0.3, y + cell / 2, "\u2192", ha="center", va="center", fontsize=11,
                color="#555555")
        ax.text(left + m * cell + 0.75, y + cell / 2, _format(sums[i], decimals), ha="center", va="center",
                fontsize=9.5, color="#222222", gid=f"rowsum:{i}")
    ax.text(left + m * cell + 0.75, y_top + 0.08, "row sum", ha="center", va="bottom", fontsize=9,
            color="#444444", gid="rowsum:title")
    ax.add_patch(Rectangle((left, y_top - m * cell), m * cell, m * cell, fill=False, edgecolor="#333333",
                           linewidth=1.2, gid="box:J"))
    notes_x = left + m * cell + 1.2
    notes = [("J = diag(p) \u2212 p p\u1d40,  J[i, j] = \u2202p\u1d62 / \u2202s\u2c7c", "#222222"),
             ("diagonal p\u1d62(1 \u2212 p\u1d62) > 0", "#b2182b"),
             ("off the diagonal \u2212p\u1d62 p\u2c7c < 0", "#2166ac"),
             ("each row sums to 0", "#222222")]
    for index, (text, colour) in enumerate(notes):
        ax.text(notes_x, y_top - 0.2 - index * 0.34, text, ha="left", va="top", fontsize=9, color=colour,
                gid=f"note:{index}")
    off = jac[~np.eye(m, dtype=bool)]
    off_text = f"off-diagonal entries negative, down to {_format(off.min(), decimals)}; " if m > 1 else ""
    _figures.describe(fig, (
        f"Softmax Jacobian of one row of {m} scores ({', '.join(labels)}) with weights p = "
        f"[{', '.join(_format(x, decimals) for x in p)}]: J = diag(p) \u2212 p p\u1d40 is {m} \u00d7 {m}; "
        f"diagonal entries positive ({', '.join(_format(x, decimals) for x in np.diag(jac))}); {off_text}"
        "every row sums to 0.").replace("\u2212", "-"))
    return fig


# --------------------------------------------------------------------------- notebook 11: tiles in fast memory
# Two pictures for 11-memory-efficient-attention: the tiled computation step by step (which blocks
# sit in fast memory, and the running maximum and sum of one query row), and the visit order of
# FlashAttention-1 beside FlashAttention-2.

from . import figures as _figures  # noqa: E402  (the section's own import, kept with the section)

SRAM_FILLS = {"Q": "#fdb97d", "K": "#8fb8e3", "V": "#9fd39b"}  # a block in fast memory
SLOW_FILL = "#f2f2f2"  # a block in slow memory (HBM)


def _blocks(length, block):
    """[(start, stop), ...] of the blocks of ``block`` rows that cover ``length`` rows."""
    return [(start, min(start + block, length)) for start in range(0, length, block)]


def _block_size(value, name):
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive integer: got {value!r}")
    return int(value)


def tiled_steps(q, k, v, *, block_q, block_k, row=0, scale=None):
    """The tiled attention pass step by step, and one query row's running maximum and sum.

    The loop order is FlashAttention-2's: for each block of ``block_q``
    queries, every block of ``block_k`` keys and values is streamed past it.
    The top row has one small panel per step (query block i, key block j):
    Q, K and V drawn as stacks of blocks, the three blocks in fast memory
    (SRAM) at that step filled in colour, the rest grey (slow memory, HBM).
    The bottom row follows query ``row``: its running maximum m and running
    sum l = sum exp(x - m) after each key block, computed with the online
    softmax recurrences from the scores ``q[row] @ k.T * scale``, next to the
    row's true maximum and softmax denominator (dashed), which they reach at
    the last block.

    Parameters
    ----------
    q : array_like, shape (n, d_k)
    k : array_like, shape (m, d_k)
    v : array_like, shape (m, d_v)
    block_q, block_k : int
        Rows per query block and per key/value block; at most 12 steps
        (query blocks times key blocks) are drawn.
    row : int
        The query whose running maximum and sum are drawn.
    scale : float, optional
        Multiplies the scores; default 1 / sqrt(d_k).

    Returns
    -------
    matplotlib.figure.Figure
        Each block is a ``Rectangle`` with gid ``"block:<step>:<Q|K|V>:<b>"``,
        or ``"sram:<step>:<Q|K|V>:<b>"`` for the three in fast memory. The
        running values are ``Line2D`` with gids ``"running_max"`` and
        ``"running_sum"`` (x = key blocks seen, 1, 2, ...), the true values
        ``"final_max"`` and ``"final_sum"``. The figure carries a description
        (:func:`helpers.figures.description`).

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> rng = np.random.default_rng(0)
    >>> fig = tiled_steps(rng.normal(size=(4, 2)), rng.normal(size=(6, 2)), rng.normal(size=(6, 2)),
    ...                   block_q=2, block_k=3)
    >>> len(fig.axes)  # 2 x 2 steps, then the running maximum and sum
    6
    >>> plt.close(fig)
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    q, k, v = _matrix(q, "q"), _matrix(k, "k"), _matrix(v, "v")
    n, d_k = q.shape
    m = k.shape[0]
    if k.shape[1] != d_k:
        raise ValueError(f"q and k must have the same width d_k: got q.shape={q.shape}, k.shape={k.shape}")
    if v.shape[0] != m:
        raise ValueError(f"k and v must have the same length m: got k.shape={k.shape}, v.shape={v.shape}")
    block_q, block_k = _block_size(block_q, "block_q"), _block_size(block_k, "block_k")
    if not isinstance(row, (int, np.integer)) or not 0 <= row < n:
        raise ValueError(f"row must be a query index from 0 to {n - 1}: got {row!r}")
    q_blocks, k_blocks = _blocks(n, block_q), _blocks(m, block_k)
    steps = [(i, j) for i in range(len(q_blocks)) for j in range(len(k_blocks))]  # FlashAttention-2 order
    if len(steps) > 12:
        raise ValueError(f"at most 12 steps can be drawn: got {len(q_blocks)} query blocks x "
                         f"{len(k_blocks)} key blocks")
    scale = 1.0 / math.sqrt(d_k) if scale is None else float(scale)

    # the online softmax of one row, block by block, from the data
    x = scale * (q[row] @ k.T)  # (d_k,) x (d_k, m) -> (m,)
    m_run, l_run, running_max, running_sum = -np.inf, 0.0, [], []
    for start, stop in k_blocks:
        m_new = max(m_run, float(x[start:stop].max()))
        l_run = l_run * math.exp(m_run - m_new) + float(np.exp(x[start:stop] - m_new).sum())
        m_run = m_new
        running_max.append(m_run)
        running_sum.append(l_run)
    final_max = float(x.max())
    final_sum = float(np.exp(x - final_max).sum())
    row_block = row // block_q

    columns = len(steps)
    fig = plt.figure(figsize=(max(7.5, 1.25 * columns), 4.2), layout="constrained")
    grid = fig.add_gridspec(2, columns, height_ratios=[1, 1])
    total = max(n, m)
    for step, (i, j) in enumerate(steps):
        ax = fig.add_subplot(grid[0, step])
        for x0, name, spans, active in ((0.0, "Q", q_blocks, i), (1.2, "K", k_blocks, j), (2.4, "V", k_blocks, j)):
            for b, (start, stop) in enumerate(spans):
                fast = b == active
                ax.add_patch(Rectangle((x0, total - stop), 1.0, stop - start,
                                       facecolor=SRAM_FILLS[name] if fast else SLOW_FILL,
                                       edgecolor="#333333" if fast else "#aaaaaa", linewidth=1.2 if fast else 0.6,
                                       gid=f"{'sram' if fast else 'block'}:{step}:{name}:{b}"))
            ax.text(x0 + 0.5, total + 0.4, name, ha="center", va="bottom", fontsize=9)
        if i == row_block:  # the followed query row
            ax.plot([-0.25, 0.0], [total - row - 0.5] * 2, color=QUERY_COLOUR, linewidth=2, gid=f"row:{step}")
        ax.set_xlim(-0.3, 3.5)
        ax.set_ylim(-0.2, total + 1.6)
        ax.set_axis_off()
        ax.set_title(f"step {step + 1}\nQ{i} with K{j}, V{j}", fontsize=9)
    arrived = np.arange(1, len(k_blocks) + 1)
    for half, (values, final, name, label) in enumerate(
            ((running_max, final_max, "max", "running maximum m"),
             (running_sum, final_sum, "sum", "running sum \u2113"))):
        ax = fig.add_subplot(grid[1, half * columns // 2:(half + 1) * columns // 2])
        ax.plot(arrived, values, "o-", color=QUERY_COLOUR, gid=f"running_{name}")
        ax.axhline(final, color="#333333", linestyle="--", linewidth=1, gid=f"final_{name}")
        for a, value in zip(arrived, values):
            ax.annotate(_format(value, 2), (a, value), textcoords="offset points", xytext=(0, 6), ha="center",
                        fontsize=8, gid=f"value:{name}:{a - 1}")
        ax.set_xticks(arrived)
        ax.set_xlabel(f"key blocks seen by query {row}")
        ax.set_title(f"{label} (dashed: whole row, {_format(final, 2)})", fontsize=10)
        ax.margins(x=0.1, y=0.3)
    fig.suptitle("Tiled attention, FlashAttention-2 order: the coloured blocks sit in fast memory (SRAM)", fontsize=10)

    def listed(values):
        return ", ".join(f"{value:.2f}" for value in values)

    _figures.describe(fig, (
        f"Tiled attention in {len(steps)} steps, {len(q_blocks)} query blocks of up to {block_q} rows times "
        f"{len(k_blocks)} key/value blocks of up to {block_k} rows, FlashAttention-2 order: at each step one block "
        f"of Q, one of K and one of V are in fast memory (SRAM), the rest in slow memory. "
        f"Query {row}'s running maximum after each key block: {listed(running_max)} (whole row {final_max:.2f}); "
        f"running sum: {listed(running_sum)} (whole row {final_sum:.2f})."))
    return fig


def _loop_description(visits):
    """'outer loop over query blocks' or '... key/value blocks', from the order of the visits."""
    changes_i = sum(a[0] != b[0] for a, b in zip(visits, visits[1:]))
    changes_j = sum(a[1] != b[1] for a, b in zip(visits, visits[1:]))
    return "outer loop over query blocks" if changes_i <= changes_j else "outer loop over key/value blocks"


def flash_loop_orders(visits_1, visits_2, *, titles=("FlashAttention-1", "FlashAttention-2")):
    """Two loop orders over the (query block, key block) tiles, side by side, as numbered grids.

    Tile (i, j) pairs query block i with key/value block j. The number in a
    tile is when that order visits it (1 = first); a thin line joins the
    visits in turn, and a tile that an order never visits (skipped under a
    causal mask) is hatched.

    Parameters
    ----------
    visits_1, visits_2 : sequence of (int, int)
        The tiles in the order each algorithm visits them, e.g. recorded from
        a loop; no tile twice.
    titles : (str, str)
        Names of the two orders.

    Returns
    -------
    matplotlib.figure.Figure
        Two panels; the visit number of tile (i, j) in panel p (0 or 1) is a
        ``Text`` with gid ``"order:<p>:<i>:<j>"``, a skipped tile a
        ``Rectangle`` with gid ``"skipped:<p>:<i>:<j>"``, the path a
        ``Line2D`` with gid ``"path:<p>"``. The figure carries a description.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> fa1 = [(i, j) for j in range(3) for i in range(2)]   # outer loop over key blocks
    >>> fa2 = [(i, j) for i in range(2) for j in range(3)]   # outer loop over query blocks
    >>> fig = flash_loop_orders(fa1, fa2)
    >>> len(fig.axes)
    2
    >>> plt.close(fig)
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    orders = []
    for name, visits in (("visits_1", visits_1), ("visits_2", visits_2)):
        try:
            visits = [(int(i), int(j)) for i, j in visits]
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a sequence of (query block, key block) pairs") from None
        if not visits or min(min(t) for t in visits) < 0:
            raise ValueError(f"{name} must hold at least one pair of non-negative block indices")
        if len(set(visits)) != len(visits):
            raise ValueError(f"{name} visits a tile twice")
        orders.append(visits)
    titles = [str(t) for t in titles]
    if len(titles) != 2:
        raise ValueError(f"titles must be two names: got {len(titles)}")
    rows = 1 + max(i for visits in orders for i, _ in visits)
    cols = 1 + max(j for visits in orders for _, j in visits)
    cell = 0.55
    fig, axes = plt.subplots(1, 2, figsize=(2 * (cols * cell + 1.0) + 0.4, rows * cell + 1.5), layout="constrained")
    described = []
    for p, (ax, visits, title) in enumerate(zip(axes, orders, titles)):
        number = {tile: s + 1 for s, tile in enumerate(visits)}
        for i in range(rows):
            for j in range(cols):
                if (i, j) in number:
                    ax.add_patch(Rectangle((j, i), 1, 1, facecolor="white", edgecolor="#777777", linewidth=0.8))
                    ax.text(j + 0.5, i + 0.5, str(number[(i, j)]), ha="center", va="center", fontsize=9, zorder=4,
                            bbox=dict(boxstyle="round,pad=0.15", facecolor="white", edgecolor="none"),
                            gid=f"order:{p}:{i}:{j}")
                else:
                    ax.add_patch(Rectangle((j, i), 1, 1, facecolor="#eeeeee", edgecolor="#bbbbbb", hatch="///",
                                           linewidth=0.8, gid=f"skipped:{p}:{i}:{j}"))
        path = np.array(visits, dtype=float) + 0.5
        ax.plot(path[:, 1], path[:, 0], color=KEY_COLOUR, linewidth=1.2, alpha=0.45, zorder=3, gid=f"path:{p}")
        ax.plot(path[0, 1], path[0, 0], "o", color=QUERY_COLOUR, markersize=16, alpha=0.35, zorder=3)
        loop = _loop_description(visits)
        ax.set_xlim(0, cols)
        ax.set_ylim(rows, 0)
        ax.set_aspect("equal")
        ax.set_xticks(np.arange(cols) + 0.5, [f"K{j}" for j in range(cols)])
        ax.set_yticks(np.arange(rows) + 0.5, [f"Q{i}" for i in range(rows)])
        ax.tick_params(length=0, labelsize=8)
        ax.set_xlabel("key/value block")
        ax.set_ylabel("query block")
        ax.set_title(f"{title}\n{loop}", fontsize=10)
        axis = 1 if "key" in loop else 0  # the outer loop's index in (query block, key block)
        first = [s + 1 for s, tile in enumerate(visits) if tile[axis] == visits[0][axis]]
        described.append(f"{title}, {loop}: visits {len(visits)} tiles, visits {first[0]}-{first[-1]} on "
                         f"{'key/value block' if axis else 'query block'} {visits[0][axis]}")
    _figures.describe(fig, f"Visit order of a grid of {rows} query blocks x {cols} key/value blocks in two loop "
                           f"orders, numbered from 1. " + "; ".join(described) + ".")
    return fig


__all__ += ["tiled_steps", "flash_loop_orders"]


# --------------------------------------------------------------------------- notebook 12: the induction circuit


def induction_circuit(tokens, query):
    """The two-head induction circuit on a short sequence, as a picture of three rows.

    Bottom row: the tokens. Middle row (layer 0, the *previous-token head*):
    an arrow from each token to the next position, which now also carries
    "after X", its predecessor. Top row (layer 1, the *induction head*): the
    query at position ``query`` holding token X matches the key whose
    predecessor was X (the key is formed from layer 0's output, hence
    *K-composition*), and copies that key's own token as the prediction.

    Parameters
    ----------
    tokens : sequence of str
        At least two tokens, drawn literally.
    query : int
        The query position; some earlier position ``j`` (``1 <= j < query``)
        must have ``tokens[j - 1] == tokens[query]``. The latest such ``j`` is
        the key the picture matches.

    Returns
    -------
    matplotlib.figure.Figure
        With a description (:func:`helpers.figures.describe`). Artists carry
        gids: ``circuit-token-j``, ``circuit-prev-j`` (the "after X" labels),
        ``circuit-prev-arrow-j``, ``circuit-query``, ``circuit-key``,
        ``circuit-match`` (query to key), ``circuit-output``.

    Raises
    ------
    ValueError
        If there are fewer than two tokens, ``query`` is out of range, or no
        earlier position follows a copy of the query's token.
    """
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    from . import figures

    tokens = [str(t) for t in tokens]
    n = len(tokens)
    if n < 2:
        raise ValueError(f"tokens must hold at least 2 tokens: got {n}")
    if isinstance(query, (bool, np.bool_)) or not isinstance(query, (int, np.integer)) or not 0 <= query < n:
        raise ValueError(f"query must be a position from 0 to {n - 1}: got {query!r}")
    query = int(query)
    matches = [j for j in range(1, query) if tokens[j - 1] == tokens[query]]
    if not matches:
        raise ValueError(
            f"no position before {query} follows a copy of the query's token {tokens[query]!r}: "
            "an induction head has nothing to match"
        )
    key = matches[-1]
    literal = [t.replace("$", r"\$") for t in tokens]
    fig = _new_figure((max(6.0, 0.9 * n + 2.2), 3.6))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(-2.2, n - 0.4)
    ax.set_ylim(-0.5, 2.85)
    ax.axis("off")
    rows = {0: "tokens", 1: "layer 0\nprevious-token head", 2: "layer 1\ninduction head"}
    for y, text in rows.items():
        ax.text(-2.1, y, text, ha="left", va="center", fontsize=9, color="0.25")
    for j, t in enumerate(literal):
        edge = QUERY_COLOUR if j == query else KEY_COLOUR if j == key else "0.4"
        ax.add_patch(FancyBboxPatch((j - 0.35, -0.3), 0.7, 0.6, boxstyle="round,pad=0.02", fc="white",
                                    ec=edge, lw=2 if j in (query, key) else 1, gid=f"circuit-token-{j}"))
        ax.text(j, 0, t, ha="center", va="center", fontsize=12)
        if j >= 1:
            ax.add_patch(FancyArrowPatch((j - 1, 0.32), (j, 0.78), arrowstyle="-|>", mutation_scale=10,
                                         color="0.45", lw=1, connectionstyle="arc3,rad=-0.25",
                                         gid=f"circuit-prev-arrow-{j}"))
            ax.text(j, 1.0, f"after {literal[j - 1]}", ha="center", va="center", fontsize=8,
                    color=KEY_COLOUR if j == key else "0.2", gid=f"circuit-prev-{j}")
    ax.text(query, 1.85, f"query {literal[query]}", ha="center", va="center", fontsize=9,
            color=QUERY_COLOUR, gid="circuit-query")
    ax.text(key, 1.4, f"key: after {literal[key - 1]}", ha="center", va="center", fontsize=9,
            color=KEY_COLOUR, gid="circuit-key")
    ax.add_patch(FancyArrowPatch((query, 2.0), (key, 1.55), arrowstyle="-|>", mutation_scale=14,
                                 color=QUERY_COLOUR, lw=2, connectionstyle="arc3,rad=0.25", gid="circuit-match"))
    ax.plot([query, query], [0.32, 1.72], ls=":", color=QUERY_COLOUR, lw=1)
    ax.text(query + 0.4, 2.6, f"copies {literal[key]}: predicts {literal[key]} next", ha="right", va="center",
            fontsize=10, color=QUERY_COLOUR, fontweight="bold", gid="circuit-output")
    text = (
        f"Diagram of the induction circuit on {n} tokens ({' '.join(tokens)}). Layer 0's previous-token "
        f"head writes each token's predecessor into the next position. At query position {query} "
        f"(token {tokens[query]}), layer 1's induction head matches the key at position {key}, "
        f"whose predecessor is {tokens[query]} (K-composition), and copies its token {tokens[key]} "
        "as the prediction."
    )
    return figures.describe(fig, text)


__all__ += ["induction_circuit"]


# --------------------------------------------------------------------------- notebook 10: from averaging to attention
# Three weight matrices side by side: the running mean of the tokens so far, the same as a
# softmax of masked zeros, and the zeros replaced by scores (issue 17's bridge to attention).

def averaging_to_attention(scores, tokens=None):
    """The running mean, the same as a softmax of masked zeros, and a softmax of masked scores.

    Parameters
    ----------
    scores : array_like, shape (n, n)
        The scores of one sequence with itself (entries above the diagonal are ignored:
        the causal mask blocks them).
    tokens : sequence of str, optional
        n labels.

    Returns
    -------
    matplotlib.figure.Figure
        Three heatmaps of weights; ``fig.weight_matrices`` holds the three (n, n) arrays drawn.

    Examples
    --------
    >>> fig = averaging_to_attention(np.zeros((3, 3)), ["a", "b", "c"])
    >>> print(np.round(fig.weight_matrices[0], 2))
    [[1.   0.   0.  ]
     [0.5  0.5  0.  ]
     [0.33 0.33 0.33]]
    >>> import matplotlib.pyplot as plt; plt.close(fig)
    """
    import matplotlib.pyplot as plt

    from .attention import causal_mask as _causal
    from .attention import softmax as _soft
    from .plots import heatmap as _heat

    scores = _matrix(scores, "scores")
    n = scores.shape[0]
    if scores.shape != (n, n) or n == 0:
        raise ValueError(f"scores must be square (n, n) with n >= 1: got shape {scores.shape}")
    tokens = _labels(tokens if tokens is not None else [str(i) for i in range(n)], n, "tokens")
    allowed = _causal(n)
    mean = np.tril(np.ones((n, n))) / np.arange(1, n + 1)[:, None]  # row t: 1/(t+1) on keys 0..t
    zeros = _soft(np.where(allowed, 0.0, -np.inf), axis=-1)
    attention = _soft(np.where(allowed, scores, -np.inf), axis=-1)
    fig, axes = plt.subplots(1, 3, figsize=(3 * (1.9 + 0.55 * n), 1.2 + 0.5 * n), layout="constrained")
    titles = ["mean of the tokens so far", "softmax of masked zeros", "softmax of masked scores"]
    for ax, matrix, title in zip(axes, (mean, zeros, attention), titles):
        _heat(matrix, tokens, tokens, ax=ax, title=title, colorbar=False)
    fig.weight_matrices = (mean, zeros, attention)
    last = attention[-1]
    _describe.describe(fig, (
        f"Three {n} × {n} weight matrices over the tokens {_describe.token_list(tokens)}, each lower-triangular. "
        f"Left, the running mean: row t gives 1/t to each of its first t tokens (the last row "
        f"{_describe.number(mean[-1, 0])} each). Middle, the softmax of a masked matrix of zeros: the same numbers. "
        f"Right, the softmax of the masked scores: the weights now depend on the data; the last row gives "
        + ", ".join(f"{tokens[k]} {_describe.number(last[k])}" for k in range(n)) + "."))
    return fig


__all__ += ["averaging_to_attention"]


# --------------------------------------------------------------------------- notebook 08: why scale
# The spread of q·k grows like sqrt(d_k); one softmax row saturates unless the scores are scaled.

def score_spread(d_ks=(4, 64, 512), *, m=8, pairs=400, seed=0):
    """Left: q·k of random unit-variance q, k at each d_k; right: one row's softmax, unscaled and scaled.

    Parameters
    ----------
    d_ks : sequence of int
        The widths compared (each >= 1); the row on the right uses the largest.
    m : int
        Keys in the softmax row.
    pairs : int
        Random (q, k) pairs drawn per width for the left panel.
    seed : int
        Seed of every draw: the same picture on every run.

    Returns
    -------
    matplotlib.figure.Figure
        ``fig.spread`` maps each d_k to the standard deviation of its drawn dot products;
        ``fig.rows`` holds (scores, unscaled weights, scaled weights) of the row shown.

    Examples
    --------
    >>> fig = score_spread((4, 400), pairs=2000)
    >>> [round(fig.spread[d] / d ** 0.5, 1) for d in (4, 400)]     # the spread is about sqrt(d_k)
    [1.0, 1.0]
    >>> import matplotlib.pyplot as plt; plt.close(fig)
    """
    import matplotlib.pyplot as plt

    from .attention import softmax as _soft

    d_ks = [int(d) for d in d_ks]
    if not d_ks or min(d_ks) < 1:
        raise ValueError(f"d_ks must be widths >= 1: got {d_ks!r}")
    if int(m) < 2 or int(pairs) < 2:
        raise ValueError(f"m and pairs must be at least 2: got m={m!r}, pairs={pairs!r}")
    rng = np.random.default_rng(seed)
    dots = {d: np.einsum("pi,pi->p", rng.standard_normal((pairs, d)), rng.standard_normal((pairs, d)))
            for d in d_ks}  # (pairs,) each: q·k of independent unit-variance vectors
    spread = {d: float(dots[d].std()) for d in d_ks}
    top = max(d_ks)
    q = rng.standard_normal(top)
    keys = rng.standard_normal((int(m), top))
    scores = keys @ q  # (m,)
    unscaled, scaled = _soft(scores), _soft(scores / np.sqrt(top))
    fig, (left, mid, right) = plt.subplots(1, 3, figsize=(12, 3.4), layout="constrained",
                                           gridspec_kw={"width_ratios": [1.4, 1, 1]})
    for y, d in enumerate(d_ks):
        left.scatter(dots[d], np.full(pairs, y) + rng.uniform(-0.25, 0.25, pairs), s=4, alpha=0.35, color="#1f77b4")
        left.plot([-spread[d], spread[d]], [y, y], color="#d95f02", linewidth=3)
        left.text(0, y + 0.3, f"std {spread[d]:.1f} ≈ √{d} = {np.sqrt(d):.1f}", fontsize=8.5, color="#a63f00",
                  ha="center", va="bottom")
    left.set_yticks(range(len(d_ks)), labels=[f"d_k = {d}" for d in d_ks])
    left.set_ylim(-0.5, len(d_ks) - 0.2)
    left.set_xlabel("q·k of random unit-variance q, k")
    left.set_title("the spread of q·k grows like √d_k", fontsize=10)
    for ax, weights, title, colour in ((mid, unscaled, f"softmax of q·k, d_k = {top}", "#d95f02"),
                                       (right, scaled, f"softmax of q·k / √{top}", "#1b9e77")):
        bars = ax.bar(range(int(m)), weights, color=colour)
        ax.bar_label(bars, fmt="%.2f", fontsize=7.5, padding=2)
        ax.set_ylim(0, 1.12)
        ax.set_xticks(range(int(m)), labels=[f"k{j}" for j in range(int(m))])
        ax.set_title(title, fontsize=10)
        ax.set_ylabel("weight")
    fig.spread, fig.rows = spread, (scores, unscaled, scaled)
    _describe.describe(fig, (
        f"Left, dot products q·k of {pairs} random pairs at d_k = " + ", ".join(str(d) for d in d_ks)
        + "; their standard deviations " + ", ".join(f"{spread[d]:.1f}" for d in d_ks)
        + f" grow like √d_k. Middle, one query's softmax over {int(m)} keys at d_k = {top} without scaling: "
        f"largest weight {unscaled.max():.2f} (nearly one-hot). Right, the same scores divided by √{top}: "
        f"largest weight {scaled.max():.2f}, the other keys keep a share."))
    return fig


__all__ += ["score_spread"]


# --------------------------------------------------------------------------- notebook 10: heads split and merged

def heads_split_merge(n, d_model, num_heads):
    """One sequence split into heads, attended head by head, and merged back; shapes on every arrow.

    Parameters
    ----------
    n : int
        Tokens in the sequence.
    d_model : int
        Width of each token's vector; must be divisible by ``num_heads``.
    num_heads : int
        Heads ``h``; each works on ``d_model / h`` columns.

    Returns
    -------
    matplotlib.figure.Figure
        ``fig.shapes`` lists the shape written on each arrow, left to right.

    Examples
    --------
    >>> fig = heads_split_merge(6, 8, 2)
    >>> fig.shapes
    ['(6, 8)', '(2, 6, 4)', '(2, 6, 4)', '(6, 8)', '(6, 8)']
    >>> import matplotlib.pyplot as plt; plt.close(fig)
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch, Rectangle

    for name, value in (("n", n), ("d_model", d_model), ("num_heads", num_heads)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be a positive integer: got {value!r}")
    if d_model % num_heads:
        raise ValueError(f"d_model = {d_model} must be divisible by num_heads = {num_heads}")
    h, d_head = int(num_heads), int(d_model) // int(num_heads)
    fig, ax = plt.subplots(figsize=(12, 3.6), layout="constrained")
    ax.set_xlim(0, 12)
    ax.set_ylim(0, 3.6)
    ax.set_axis_off()
    colours = plt.get_cmap("tab10").colors
    # data units per row (columns are 1.6 times as wide), so that the h head boxes stack
    # without touching and the whole row of boxes fits the figure's width
    unit = min(0.25, (3.0 - 0.35 * (h - 1)) / (h * n), 5.6 / (1.6 * (3 * d_model + 2 * d_head)))

    def box(x, y, rows, cols, colour, label):
        width, height = cols * unit * 1.6, rows * unit
        ax.add_patch(Rectangle((x, y - height / 2), width, height, facecolor=colour, edgecolor="black", alpha=0.85))
        ax.text(x + width / 2, y - height / 2 - 0.12, label, ha="center", va="top", fontsize=9)
        return x + width

    def arrow(x0, x1, y, text):
        ax.add_patch(FancyArrowPatch((x0 + 0.08, y), (x1 - 0.08, y), arrowstyle="-|>", mutation_scale=14))
        ax.text((x0 + x1) / 2, y + 0.12, text, ha="center", va="bottom", fontsize=9)

    shapes = [f"({n}, {d_model})", f"({h}, {n}, {d_head})", f"({h}, {n}, {d_head})", f"({n}, {d_model})",
              f"({n}, {d_model})"]
    mid = 1.8
    right = box(0.2, mid, n, d_model, "#cccccc", f"X  {shapes[0]}")
    heads_x = right + 1.5
    gap = n * unit + 0.35
    ys = [mid + (h - 1) / 2 * gap - k * gap for k in range(h)]
    arrow(right, heads_x, mid, f"split\n{shapes[1]}")
    ends = [box(heads_x, y, n, d_head, colours[k % 10], f"head {k + 1}" if h <= 4 else "") for k, y in enumerate(ys)]
    attended_x = max(ends) + 1.6
    arrow(max(ends), attended_x, mid, f"attention\nin each head\n{shapes[2]}")
    ends = [box(attended_x, y, n, d_head, colours[k % 10], "") for k, y in enumerate(ys)]
    merged_x = max(ends) + 1.5
    arrow(max(ends), merged_x, mid, f"merge\n(concatenate)\n{shapes[3]}")
    right = box(merged_x, mid, n, d_model, "#9ecae1", "")
    for k in range(h):  # the merged box shows where each head's columns went
        ax.add_patch(Rectangle((merged_x + k * d_head * unit * 1.6, mid - n * unit / 2), d_head * unit * 1.6,
                               n * unit, facecolor=colours[k % 10], alpha=0.55, edgecolor="none"))
    out_x = right + 1.4
    arrow(right, out_x, mid, f"× W_O\n{shapes[4]}")
    end = box(out_x, mid, n, d_model, "#c7e9c0", f"out  {shapes[4]}")
    ax.set_xlim(0, max(12, end + 0.2))
    ax.set_title(f"{h} heads of width d_model / h = {d_model} / {h} = {d_head}: split, attend, merge", fontsize=10)
    fig.shapes = shapes
    _describe.describe(fig, (
        f"Diagram of multi-head attention on one sequence of {n} tokens of width {d_model}: X {shapes[0]} is split "
        f"into {h} heads, {shapes[1]}, each of width {d_head}; attention runs in each head on its own, {shapes[2]}; "
        f"the heads are concatenated back to {shapes[3]} and multiplied by W_O to give the output {shapes[4]}."))
    return fig


__all__ += ["heads_split_merge"]


# --------------------------------------------------------------------------- notebook 10: masks and cross-attention
# The padding and causal masks drawn as 0/1 matrices beside the weights each one produces, and
# cross-attention as a head view between two sequences (decoder queries, encoder keys and values).

def _mask_panel(ax, allowed, query_tokens, key_tokens, title):
    from matplotlib.colors import ListedColormap

    n, m = allowed.shape
    ax.imshow(allowed.astype(float), cmap=ListedColormap(["#d9d9d9", "#cfe0f3"]), vmin=0, vmax=1)
    for i in range(n):
        for j in range(m):
            ax.text(j, i, "1" if allowed[i, j] else "0", ha="center", va="center", fontsize=9,
                    color="#1f3f6a" if allowed[i, j] else "#555555", gid=f"mask:{i}:{j}")
    ax.set_xticks(range(m), key_tokens, rotation=45, ha="right")
    ax.set_yticks(range(n), query_tokens)
    ax.set_xticks(np.arange(-0.5, m), minor=True)
    ax.set_yticks(np.arange(-0.5, n), minor=True)
    ax.grid(which="minor", color="white", linewidth=1.5)
    ax.tick_params(which="minor", length=0)
    ax.set_title(title, fontsize=11)


def mask_and_weights(scores, masks, query_tokens, key_tokens=None):
    """Each mask as a 0/1 matrix beside the attention weights it produces.

    Two panels per mask, side by side in one row: the mask (1 = may attend, 0 = blocked),
    then the softmax of the scores with the blocked entries set to -inf (a row with
    no allowed key gets zero weights, as the collection's kernels give).

    Parameters
    ----------
    scores : array_like, shape (n, m)
        Scaled scores of one sequence (queries by keys).
    masks : dict of str to array_like of bool
        Title -> mask broadcastable to (n, m), True = may attend.
    query_tokens : sequence of str, length n
    key_tokens : sequence of str, length m, optional
        Defaults to ``query_tokens``.

    Returns
    -------
    matplotlib.figure.Figure
        ``fig.masks`` and ``fig.weight_matrices`` hold the (n, m) arrays drawn, in the order of ``masks``.

    Examples
    --------
    >>> fig = mask_and_weights(np.zeros((2, 2)), {"causal": np.tril(np.ones((2, 2), bool))}, ["a", "b"])
    >>> print(fig.weight_matrices[0])
    [[1.  0. ]
     [0.5 0.5]]
    >>> import matplotlib.pyplot as plt; plt.close(fig)
    """
    import matplotlib.pyplot as plt

    from .attention import softmax as _soft

    scores = _matrix(scores, "scores")
    n, m = scores.shape
    if not masks:
        raise ValueError("masks must name at least one mask")
    query_tokens = _labels(query_tokens, n, "query_tokens")
    key_tokens = _labels(query_tokens if key_tokens is None else key_tokens, m, "key_tokens")
    allowed, weights = [], []
    for title, mask in masks.items():
        mask = np.asarray(mask)
        if mask.dtype != bool:
            raise ValueError(f"mask {title!r} must be boolean (True = may attend): got dtype {mask.dtype}")
        try:
            mask = np.broadcast_to(mask, (n, m))
        except ValueError:
            raise ValueError(f"mask {title!r} of shape {mask.shape} does not broadcast to the scores {(n, m)}") from None
        allowed.append(mask)
        weights.append(_soft(np.where(mask, scores, -np.inf), axis=-1))
    rows = len(allowed)
    # one row of panels, mask then weights for each mask: wide and low, to fit a slide
    fig, axes = plt.subplots(1, 2 * rows, figsize=(2 * rows * (1.5 + 0.45 * m), 1.5 + 0.45 * n),
                             squeeze=False, layout="constrained")
    pairs = axes[0].reshape(rows, 2)
    parts = []
    for (title, mask), w, (left, right) in zip(zip(masks, allowed), weights, pairs):
        _mask_panel(left, mask, query_tokens, key_tokens, f"{title} mask (1 = may attend)")
        _plots.heatmap(w, query_tokens, key_tokens, ax=right, title=f"weights, {title} mask",
                       colorbar=False)
        empty = int(np.sum(~mask.any(axis=-1)))
        blocked = w[~mask]
        parts.append(f"{title}: {int(mask.sum())} of {n * m} pairs allowed, weight on blocked pairs "
                     f"{_describe.number(blocked.max() if blocked.size else 0.0)}"
                     + (f", {empty} rows with no allowed key (zero weights)" if empty else "")
                     + f", largest weight {_describe.number(w.max())}")
    fig.masks, fig.weight_matrices = tuple(allowed), tuple(weights)
    _describe.describe(fig, (
        f"{rows} masks as 0/1 matrices, each beside the weights it produces, {n} queries × {m} keys "
        f"({_describe.token_list(key_tokens)}). " + "; ".join(parts) + "."))
    return fig


def cross_attention(weights, target_tokens, source_tokens, *, title=None):
    """Cross-attention as a head view: decoder queries (target) on the left, encoder keys (source) on the right.

    A thin layer over :func:`head_view` with ``query_tokens=target_tokens`` and
    ``key_tokens=source_tokens``; the column headings name the two sides
    ("decoder: queries" and "encoder: keys, values"), and the description says
    which source token each target token reads most.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> w = np.array([[0.9, 0.1, 0.0], [0.2, 0.3, 0.5]])
    >>> fig = cross_attention(w, ["le", "chat"], ["the", "cat", "."])
    >>> len(fig.axes[0].lines)
    6
    >>> import matplotlib.pyplot as plt; plt.close(fig)
    """
    weights = np.asarray(weights, dtype=float)
    if weights.ndim != 2:
        raise ValueError(f"weights must be 2-d (n target tokens, m source tokens): got shape {weights.shape}")
    fig = head_view(weights, target_tokens, source_tokens, title=title)
    ax = fig.axes[0]
    for text in ax.texts:
        if text.get_text() == "queries":
            text.set_text("decoder: queries")
        elif text.get_text() == "keys":
            text.set_text("encoder: keys, values")
    n, m = weights.shape
    reads = ", ".join(f"{target_tokens[i]} to {source_tokens[int(np.argmax(weights[i]))]} "
                      f"{_describe.number(weights[i].max())}" for i in range(n))
    _describe.describe(fig, (
        f"Cross-attention as a head view: {n} target tokens of the decoder "
        f"({_describe.token_list(target_tokens)}) on the left ask {m} source tokens of the encoder "
        f"({_describe.token_list(source_tokens)}) on the right; each line is as thick as its weight; the strongest line of each target token: {reads}."))
    return fig


__all__ += ["mask_and_weights", "cross_attention"]


# --------------------------------------------------------------------------- notebook 08: saturation and its gradient
# Against d_k, unscaled beside scaled: the largest weight of a softmax row climbs to 1, and the size of
# the row's softmax Jacobian (what passes gradient back to the scores) falls to 0.

def saturation(d_ks, unscaled, scaled):
    """Mean largest weight and median Jacobian size of softmax rows against d_k, unscaled and scaled.

    Parameters
    ----------
    d_ks : sequence of int
        The widths, increasing, each >= 1 (at least two).
    unscaled, scaled : sequence of array_like, each of shape (rows, m)
        For each width, the softmax rows of the raw scores and of the scores divided by sqrt(d_k).

    Returns
    -------
    matplotlib.figure.Figure
        Two axes (largest weight; Frobenius norm of diag(a) - a a^T, log scale). ``fig.curves`` maps
        ``"largest"`` and ``"jacobian"`` to a pair (unscaled, scaled) of arrays, one value per width.

    Examples
    --------
    >>> import numpy as np
    >>> rows = [np.full((2, 4), 0.25), np.array([[1.0, 0, 0, 0]] * 2)]
    >>> fig = saturation([1, 4], rows, [rows[0], rows[0]])
    >>> fig.curves["largest"][0].tolist(), fig.curves["jacobian"][0].tolist()   # one-hot rows pass nothing
    ([0.25, 1.0], [0.4330127018922193, 0.0])
    >>> import matplotlib.pyplot as plt; plt.close(fig)
    """
    import matplotlib.pyplot as plt

    d_ks = [int(d) for d in d_ks]
    if len(d_ks) < 2 or min(d_ks) < 1 or any(b <= a for a, b in zip(d_ks, d_ks[1:])):
        raise ValueError(f"d_ks must be at least two increasing widths >= 1: got {d_ks!r}")
    rows = [[np.asarray(w, dtype=float) for w in ws] for ws in (unscaled, scaled)]
    if any(len(ws) != len(d_ks) for ws in rows) or any(w.ndim != 2 for ws in rows for w in ws):
        raise ValueError("unscaled and scaled need one (rows, m) array of weights per width")
    m = rows[0][0].shape[-1]

    def jacobian_size(w):  # (R, m) -> (R,): |diag(a) - a a^T|_F of each row
        jac = w[:, :, None] * np.eye(w.shape[-1]) - w[:, :, None] * w[:, None, :]
        return np.linalg.norm(jac, axis=(-2, -1))

    largest = tuple(np.array([w.max(axis=-1).mean() for w in ws]) for ws in rows)
    jacobian = tuple(np.array([np.median(jacobian_size(w)) for w in ws]) for ws in rows)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.1), layout="constrained")
    styles = (("o-", "#d95f02", "unscaled"), ("s-", "#1b9e77", "scaled by 1/√d_k"))
    for ax, curves in ((left, largest), (right, jacobian)):
        for y, (marker, colour, label) in zip(curves, styles):
            ax.plot(d_ks, np.maximum(y, 1e-12) if ax is right else y, marker, color=colour, label=label)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("d_k")
        ax.legend(fontsize=8, loc="center right" if ax is left else "lower left")
    left.axhline(1 / m, color="0.6", linestyle=":")
    left.text(d_ks[0], 1 / m + 0.02, f"uniform 1/{m}", fontsize=8, color="0.35", va="bottom")
    left.set_ylim(0, 1.05)
    left.set_title("mean largest weight of a row: saturation", fontsize=10)
    right.set_yscale("log")
    right.set_title("median |J|_F of a row: the gradient's way back", fontsize=10)
    fig.curves = {"largest": largest, "jacobian": jacobian}
    _describe.describe(fig, (
        f"Two plots against d_k from {d_ks[0]} to {d_ks[-1]}, softmax rows over {m} keys. Left, the mean largest "
        f"weight: unscaled it climbs from {largest[0][0]:.2f} to {largest[0][-1]:.2f}, scaled it stays between "
        f"{largest[1].min():.2f} and {largest[1].max():.2f}. Right, on a log scale, the median size of the softmax "
        f"Jacobian: unscaled it falls from {jacobian[0][0]:.2g} to {jacobian[0][-1]:.2g}, scaled it stays between "
        f"{jacobian[1].min():.2f} and {jacobian[1].max():.2f}."))
    return fig


__all__ += ["saturation"]
