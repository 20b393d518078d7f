"""The walkthroughs' pictures of the mechanism (notebooks 01-05, and wherever a head is drawn).

``pipeline(q, k, v, tokens)``
    softmax(QK^T / sqrt(d_k)) V as a row of boxes sized by their shapes.
``head_view(weights, query_tokens, key_tokens)``
    Query-to-key lines whose width and opacity grow with the weight, a panel per head.
``vectors_2d(vectors, labels, query=...)``
    2-d arrows, q·k = |q| |k| cos(theta), the weights as bars.
``soft_lookup(query_label, keys, values, weights)``
    A dictionary returns one value, attention a blend of all of them.
``projection_flow(w_q, w_k, w_v, features)``
    Named features through W_q, W_k, W_v: a line per nonzero entry.

:mod:`helpers.diagrams` describes each picture in more detail and re-exports them.
"""

from __future__ import annotations

import math

import numpy as np

from .. import figures, plots, style
from ..attention import scaled_dot_product_attention
from ._common import FILLS, KEY_COLOUR, MINUS, QUERY_COLOUR, QUERY_TEXT_COLOUR, _format, _labels, _matrix, _new_figure

__all__ = ["pipeline", "head_view", "vectors_2d", "soft_lookup", "projection_flow", "kernel_view"]

NUMBERS_MAX = 6  # write the numbers in a matrix's cells up to this many rows and columns
CELLS_MAX = 144  # up to this many cells a matrix is drawn cell by cell, beyond as one image
LINE_WIDTH = 8.0  # points of line width for a weight of 1 (head view)


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


STEPS = {1: "scores QK\u1d40", 2: "divide by \u221ad_k", 3: "softmax of each row", 4: "weights times V"}
STAGE_STEP = {"Q": 1, "K^T": 1, "scores": 1, "scaled": 2, "weights": 3, "V": 4, "out": 4}
GREYED_ALPHA = 0.15  # opacity of the steps that are not lit


def pipeline(q, k, v, tokens=None, *, scale=True, mask=None, decimals=2, lit=None):
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
    lit : {1, 2, 3, 4}, optional
        Light one step and grey out the others, to build the pipeline up one
        step at a time: 1 the scores QK^T (Q, K^T, scores), 2 the division by
        sqrt(d_k) (needs ``scale=True``), 3 the softmax of each row (the
        weights), 4 weights times V (V, out). Each operator belongs to the step
        of the box it leads to. ``None`` (default) draws every step in full.

    Returns
    -------
    matplotlib.figure.Figure
        One axes. Each box is a ``Rectangle`` with gid ``"box:<name>"`` (names
        ``Q``, ``K^T``, ``scores``, ``scaled`` when scaled, ``weights``, ``V``,
        ``out``); the number in cell (i, j) is a ``Text`` with gid
        ``"value:<name>:<i>:<j>"``; masked cells are hatched ``Rectangle``\\ s
        with gid ``"masked:<name>:<i>:<j>"``. A matrix of more than 144 cells
        is drawn as one image (gid ``"cells:<name>"``), without numbers.
        With ``lit``, every artist of the other steps has alpha 0.15.

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
    if lit is not None and (isinstance(lit, bool) or lit not in (1, 2, 3, 4)):
        raise ValueError(f"lit must be a step 1, 2, 3 or 4 (or None): got {lit!r}")
    if lit == 2 and not scale:
        raise ValueError("lit=2 lights the division by sqrt(d_k), which scale=False leaves out")

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
                dark = not plots._light(colours[i, j])  # black or white by WCAG contrast ratio
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
    if lit is not None:
        _grey_other_steps(ax, [s[0] for s in stages], lit)
    top = np.unravel_index(int(np.argmax(weights)), weights.shape)
    qt = query_tokens or [str(i) for i in range(n)]
    kt = key_tokens or [str(j) for j in range(m)]
    figures.describe(fig, (
        f"Pipeline diagram of attention, {n} queries × {m} keys"
        + (f" ({figures.token_list(kt)})" if key_tokens else "")
        + f": Q ({n}×{d_k}) times Kᵀ ({d_k}×{m}) gives the scores ({n}×{m})"
        + (f", divided by √{d_k} = {figures.number(math.sqrt(d_k))}" if scale else ", not scaled")
        + (f", {int((~mask).sum())} masked cells" if mask is not None else "")
        + f"; softmax of each row gives the weights; weights times V ({m}×{d_v}) give the output ({n}×{d_v}). "
        + f"Largest weight {figures.number(weights[top])}, {qt[top[0]]} to {kt[top[1]]}."
        + (f" Step {lit} ({STEPS[lit]}) is drawn in full; the other steps are greyed out." if lit else "")))
    return fig


def _grey_other_steps(ax, names, lit):
    """Fade every artist of ``ax`` whose stage (read from its gid) is not in step ``lit``.

    A box, cell, number, shape, token or title belongs to the step of its
    stage; an operator (gid ``op:<name>`` or ``arrow:<name>``, drawn after
    stage ``<name>``) to the step of the stage it leads to.
    """
    leads_to = dict(zip(names, names[1:]))
    for artist in [*ax.patches, *ax.texts, *ax.images]:
        kind, _, rest = str(artist.get_gid()).partition(":")
        name = "weights" if kind == "note" else rest.split(":")[0]
        if kind in ("op", "arrow"):
            name = leads_to.get(name)
        if STAGE_STEP.get(name) != lit:
            artist.set_alpha(GREYED_ALPHA)


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
    slide = style.is_slide()
    for i, token in enumerate(query_tokens):
        strong = highlight is None or highlight == i
        ax.text(-0.04, yq[i], token, ha="right", va="center", fontsize=10, parse_math=False, bbox=box,
                color=QUERY_TEXT_COLOUR if highlight == i else "#222222", alpha=1.0 if strong else 0.65,
                fontweight="bold" if highlight == i else "normal", gid=f"query:{i}")
    for j, token in enumerate(key_tokens):
        key = ax.text(1.04, yk[j], token, ha="left", va="center", fontsize=10, parse_math=False, bbox=box,
                      color="#222222", gid=f"key:{j}")
        if highlight is not None:
            # the highlighted query's weight on this key, beside the key's name (under it, 16 keys
            # and more printed their weights over the next key's name)
            widest = max(len(str(t)) for t in key_tokens)
            if slide:  # on a slide the names grow with the text: the weight follows its key's name
                ax.annotate(f"{weights[highlight, j]:.2f}", xy=(1.0, 0.5), xycoords=key, xytext=(6, 0),
                            textcoords="offset points", ha="left", va="center", fontsize=9,
                            color=QUERY_TEXT_COLOUR, gid=f"weight:{j}")
            else:
                ax.annotate(f"{weights[highlight, j]:.2f}", xy=(1.04, yk[j]), xytext=(6.2 * widest + 8, 0),
                            textcoords="offset points", ha="left", va="center", fontsize=9,
                            color=QUERY_TEXT_COLOUR, gid=f"weight:{j}")
    ax.set_xlim(-0.6, 1.6 if highlight is None else 2.0)
    # on a slide the "queries" and "keys" labels grow too: room for them under the title
    ax.set_ylim(-(rows - 1) / 2 - 0.7, (rows - 1) / 2 + (2.0 if slide else 1.1))
    ax.set_axis_off()
    if slide:  # an axes drawn off still has tick labels, which a slide's measure counts
        ax.set_xticks([])
        ax.set_yticks([])
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
            f"({figures.token_list(query_tokens)}) to {m} keys ({figures.token_list(key_tokens)}), "
            "each line as thick as its weight; "
            + "; ".join(f"{'head ' + str(h_ + 1) + ' ' if h > 1 else ''}strongest {figures.number(stack[h_][i, j])}, "
                        f"{query_tokens[i]} to {key_tokens[j]}" for h_, (i, j) in enumerate(strongest)))
    if highlight is not None:
        row = stack[0][highlight]
        text += (f"; query {query_tokens[highlight]} highlighted, its weights "
                 + ", ".join(f"{key_tokens[j]} {figures.number(row[j])}" for j in range(m)))
    (figures.describe if ax is None else figures.add_panel)(fig, text + ".")
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
    text = (f"Arrows from the origin for {m} 2-d vectors ({figures.token_list(labels)}); "
            f"longest {labels[int(np.argmax(lengths))]} (length {figures.number(lengths.max())})")
    if q is not None:
        dots = vectors @ q
        best = int(np.argmax(dots))
        text += (f"; query '{query_label}' in orange, dot products "
                 + ", ".join(f"{labels[j]} {figures.number(dots[j])}" for j in range(m))
                 + f", largest with {labels[best]}")
    if weights is not None:
        text += "; weights " + ", ".join(f"{labels[j]} {figures.number(weights[j])}" for j in range(m))
    (figures.describe if ax is None else figures.add_panel)(fig, text + ".")

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
    text = f"Looking up '{query_label}' among {m} keys ({figures.token_list(keys)})"
    if hard_index is not None:
        text += f". A dictionary returns the value of '{keys[hard_index]}', {results[1]}"
    text += (". Attention weighs every key (" + ", ".join(f"{keys[j]} {figures.number(weights[j])}" for j in range(m))
             + f") and returns the blend {results[0]}.")
    figures.describe(fig, text)
    return fig


VALUE_COLOUR = "#2e7d32"  # green, for the value lines of projection_flow (the V fill's hue, darkened)
FLOW_WIDTH = 6.0  # points of line width for the largest entry of projection_flow


def projection_flow(w_q, w_k, w_v, features, *, q_names=None, k_names=None, v_names=None, decimals=1):
    """Named input features flowing through W_q, W_k and W_v, one panel per matrix.

    Each panel lists the input features on the left and the matrix's output
    columns on the right; every nonzero entry ``W[i, c]`` is a line from
    feature i to output c, as wide as ``|W[i, c]|`` relative to the largest
    entry of the three matrices, with its number written on it. A feature with
    no line in a panel is dropped by that matrix.

    Parameters
    ----------
    w_q, w_k : ndarray, shape (d_in, d_k)
    w_v : ndarray, shape (d_in, d_v)
    features : sequence of d_in str
        The names of the input features (the rows of the matrices).
    q_names, k_names, v_names : sequence of str, optional
        The names of the output columns (default ``q0, q1, ...``).
    decimals : int
        Decimals of the numbers written on the lines.

    Returns
    -------
    fig : matplotlib Figure
        With ``fig.flows``: a list of ``(matrix, feature, output, value)`` for
        every line drawn, and a text description made from the same entries.
    """
    mats = {"W_q": _matrix(w_q, "w_q"), "W_k": _matrix(w_k, "w_k"), "W_v": _matrix(w_v, "w_v")}
    d_in = mats["W_q"].shape[0]
    for name, w in mats.items():
        if w.shape[0] != d_in:
            raise ValueError(f"{name} must have {d_in} rows, one per feature: got shape {w.shape}")
    if mats["W_q"].shape != mats["W_k"].shape:
        raise ValueError(f"w_q and w_k must have the same shape: got {mats['W_q'].shape}, {mats['W_k'].shape}")
    features = _labels(features, d_in, "features")
    outs = {}
    for (name, w), names, prefix in zip(mats.items(), (q_names, k_names, v_names), "qkv"):
        cols = w.shape[1]
        default = [f"{prefix}{c}" for c in range(cols)]
        outs[name] = default if names is None else _labels(names, cols, f"{prefix}_names")
    largest = max(float(np.abs(w).max()) for w in mats.values())
    if largest == 0:
        raise ValueError("the three matrices are all zero: there is no flow to draw")
    colours = {"W_q": QUERY_COLOUR, "W_k": KEY_COLOUR, "W_v": VALUE_COLOUR}

    rows = max(d_in, *(len(o) for o in outs.values()))
    fig = _new_figure((11.0, 0.55 * rows + 1.0))
    ax = fig.add_axes([0.01, 0.02, 0.98, 0.96])
    ax.set_xlim(0, 3 * 4.0)
    ax.set_ylim(rows - 0.4, -1.4)
    ax.set_axis_off()
    flows = []
    for p, (name, w) in enumerate(mats.items()):
        left, right = 4.0 * p + 1.15, 4.0 * p + 2.75
        ax.text(4.0 * p + 1.95, -1.0, f"{name}: features \u2192 {name[-1]}", ha="center", va="bottom",
                fontsize=12, weight="bold", color=colours[name])
        for i, feat in enumerate(features):
            ax.text(left - 0.08, i, feat, ha="right", va="center", fontsize=11)
        for c, out in enumerate(outs[name]):
            ax.text(right + 0.08, c, out, ha="left", va="center", fontsize=11, color=colours[name])
        for i, c in zip(*np.nonzero(w)):
            value = float(w[i, c])
            ax.plot([left, right], [i, c], color=colours[name], lw=FLOW_WIDTH * abs(value) / largest,
                    solid_capstyle="butt", gid=f"flow {name} {i} {c}")
            t = 0.35
            ax.text(left + t * (right - left), i + t * (c - i), _format(value, decimals), ha="center",
                    va="center", fontsize=10, bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none"))
            flows.append((name, features[i], outs[name][c], value))
    fig.flows = flows

    parts = []
    for name, w in mats.items():
        lines = [f"{f} to {o} {figures.number(v)}" for m, f, o, v in flows if m == name]
        dropped = [features[i] for i in range(d_in) if not np.any(w[i])]
        text = f"{name}: " + (", ".join(lines) if lines else "no lines")
        if dropped:
            text += f" (drops {', '.join(dropped)})"
        parts.append(text)
    figures.describe(fig, (f"The features {figures.token_list(features)} flow through three matrices; "
                           "a line for every nonzero entry. " + "; ".join(parts) + "."))
    return fig


# --------------------------------------------------------------------------- kernel view


# the colours of the four terms of -|q - k|^2 / 2 = q.k - |q|^2 / 2 - |k|^2 / 2, and of the two sets of weights
KERNEL_COLOURS = {"dot": KEY_COLOUR, "query": "#9e9e9e", "key": "#2e7d32", "distance": "#222222"}


def kernel_view(query, keys, labels, *, query_label="q"):
    """A dot product against a distance: -|q - k|^2 / 2 = q·k - |q|^2 / 2 - |k|^2 / 2, key by key.

    Left, for each key, four bars: the dot product q·k, the term -|q|^2 / 2
    (the same for every key), the term -|k|^2 / 2, and their sum, the
    negative half squared distance -|q - k|^2 / 2 (a hollow black bar).
    Right, the weights the softmax makes of each score: from q·k and from
    -|q - k|^2 / 2. They differ only through -|k|^2 / 2: keys of equal length
    get the same weights from both.

    Parameters
    ----------
    query : array_like, shape (d,)
    keys : array_like, shape (m, d)
    labels : sequence of str, length m
        One label per key.
    query_label : str
        The query's name, for the titles and the description.

    Returns
    -------
    matplotlib.figure.Figure
        Two axes. ``fig.terms`` maps "dot", "query", "key" and "distance" to
        the four terms (each shape (m,)); ``fig.weights`` maps "dot" and
        "distance" to the softmax of q·k and of -|q - k|^2 / 2. The bars are
        in that order: the left axes' patches key by key, four per key; the
        right axes' patches all "dot" bars, then all "distance" bars.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> fig = kernel_view([1.0, 0.0], [[1.0, 0.0], [0.0, 1.0]], ["a", "b"])
    >>> bool(abs(fig.weights["dot"] - fig.weights["distance"]).max() < 1e-12)   # equal lengths: same weights
    True
    >>> plt.close(fig)
    """
    keys = _matrix(keys, "keys")
    m, d = keys.shape
    try:
        query = np.asarray(query, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"query must be a numeric vector: {exc}") from None
    if query.shape != (d,):
        raise ValueError(f"query must have shape (d,) = ({d},) like the keys' rows: got shape {query.shape}")
    if m < 1 or not (np.all(np.isfinite(keys)) and np.all(np.isfinite(query))):
        raise ValueError("query and keys must be finite, with at least one key")
    labels = _labels(labels, m, "labels")
    query_label = str(query_label)
    terms = {
        "dot": keys @ query,  # (m, d) @ (d,) -> (m,)
        "query": np.full(m, -0.5 * float(query @ query)),  # the same for every key
        "key": -0.5 * np.einsum("jd,jd->j", keys, keys),  # (m,)
        "distance": -0.5 * ((query - keys) ** 2).sum(axis=-1),  # computed directly, not as the sum
    }

    def soft(s):
        e = np.exp(s - s.max())
        return e / e.sum()

    weights = {"dot": soft(terms["dot"]), "distance": soft(terms["distance"])}

    fig = _new_figure((10.0, 3.6))
    left = fig.add_axes((0.07, 0.3, 0.5, 0.58))
    right = fig.add_axes((0.68, 0.3, 0.3, 0.58))
    names = {"dot": "q·k", "query": f"{MINUS}½|q|²", "key": f"{MINUS}½|k|²", "distance": f"{MINUS}½|q {MINUS} k|²"}
    width = 0.2
    for j in range(m):
        for t, term in enumerate(("dot", "query", "key", "distance")):
            x, h = j + (t - 1.5) * width, float(terms[term][j])
            hollow = term == "distance"
            left.bar(x, h, width * 0.9, color="white" if hollow else KERNEL_COLOURS[term],
                     edgecolor=KERNEL_COLOURS[term], linewidth=1.6 if hollow else 0.6,
                     label=names[term] if j == 0 else None, gid=f"term:{term}:{j}")
            left.text(x, h + (0.04 if h >= 0 else -0.04), _format(h, 2), ha="center",
                      va="bottom" if h >= 0 else "top", fontsize=8.5, color="#333333")
    left.axhline(0, color="#555555", linewidth=0.8)
    low = min(float(min(v.min() for v in terms.values())), 0.0)
    high = max(float(max(v.max() for v in terms.values())), 0.0)
    pad = 0.18 * max(high - low, 1e-9)
    left.set_ylim(low - pad, high + pad)
    left.set_xticks(range(m), labels)
    left.set_title(f"query '{query_label}': the score, term by term", fontsize=11)
    left.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=4, fontsize=9, frameon=False)
    for side in ("top", "right"):
        left.spines[side].set_visible(False)
    for t, (kind, colour) in enumerate((("dot", KERNEL_COLOURS["dot"]), ("distance", KERNEL_COLOURS["distance"]))):
        xs = np.arange(m) + (t - 0.5) * 0.38
        label = "softmax(q·k)" if kind == "dot" else f"softmax({MINUS}½|q {MINUS} k|²)"
        right.bar(xs, weights[kind], 0.36, color=colour, label=label, gid=f"weight:{kind}")
        for x, w in zip(xs, weights[kind]):
            right.text(x, w + 0.02, _format(float(w), 2), ha="center", va="bottom", fontsize=8.5)
    right.set_ylim(0, 1.12)
    right.set_xticks(range(m), labels)
    right.set_title("the weights", fontsize=11)
    right.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=1, fontsize=9, frameon=False)
    for side in ("top", "right"):
        right.spines[side].set_visible(False)
    fig.terms, fig.weights = terms, weights

    def listed(values):
        return ", ".join(f"{labels[j]} {figures.number(values[j])}" for j in range(m))

    text = (f"For the query '{query_label}' and {m} keys ({figures.token_list(labels)}), four bars per key:"
            f" q·k ({listed(terms['dot'])}); minus half the query's squared length,"
            f" {figures.number(terms['query'][0])} for every key; minus half the key's squared length"
            f" ({listed(terms['key'])}); and their sum, minus half the squared distance ({listed(terms['distance'])})."
            f" Weights from q·k: {listed(weights['dot'])}. Weights from minus half the squared distance:"
            f" {listed(weights['distance'])}.")
    figures.describe(fig, text)
    return fig
