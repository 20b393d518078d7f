"""Masks and heads (notebook 10): from averaging to attention, masks, cross-attention, multi-head.

``averaging_to_attention`` puts the running mean of the tokens beside the
same weights as a softmax of masked zeros and a softmax of masked scores;
``mask_and_weights`` draws each mask as a 0/1 matrix beside the weights it
produces; ``cross_attention`` is a head view between a decoder's queries and
an encoder's keys; ``heads_split_merge`` shows one sequence projected by each
head's own W_Q, W_K and W_V, attended head by head and merged back, with the
shapes on every arrow; ``head_patterns`` puts the weights of several heads
side by side and says, for every query, which key each head reads most.
"""

from __future__ import annotations

import numpy as np

from .. import figures, plots, style
from ..attention import causal_mask, softmax
from ._common import FILLS, _labels, _matrix
from .walkthrough import head_view

__all__ = [
    "averaging_to_attention", "mask_and_weights", "cross_attention", "heads_split_merge", "head_patterns",
]


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

    scores = _matrix(scores, "scores")
    n = scores.shape[0]
    if scores.shape != (n, n) or n == 0:
        raise ValueError(f"scores must be square (n, n) with n >= 1: got shape {scores.shape}")
    tokens = _labels(tokens if tokens is not None else [str(i) for i in range(n)], n, "tokens")
    allowed = causal_mask(n)
    mean = np.tril(np.ones((n, n))) / np.arange(1, n + 1)[:, None]  # row t: 1/(t+1) on keys 0..t
    zeros = softmax(np.where(allowed, 0.0, -np.inf), axis=-1)
    attention = softmax(np.where(allowed, scores, -np.inf), axis=-1)
    last = attention[-1]
    tail = ("the softmax of the masked scores: the weights now depend on the data; the last row gives "
            + ", ".join(f"{tokens[k]} {figures.number(last[k])}" for k in range(n)) + ".")
    if style.is_slide():
        # a slide shows at most two panels (issue 32): the mean and the softmax of masked zeros are the
        # same matrix (tests/test_diagrams_bridge.py checks it), drawn once under both names
        fig, axes = plt.subplots(1, 2, figsize=(2 * (1.9 + 0.55 * n), 1.2 + 0.5 * n), layout="constrained")
        panels = ((mean, "mean so far = softmax of masked zeros"), (attention, "softmax of masked scores"))
        description = (f"Two {n} × {n} weight matrices over the tokens {figures.token_list(tokens)}, each "
                       f"lower-triangular. Left, the running mean, which is also the softmax of a masked matrix "
                       f"of zeros: row t gives 1/t to each of its first t tokens (the last row "
                       f"{figures.number(mean[-1, 0])} each). Right, " + tail)
    else:
        fig, axes = plt.subplots(1, 3, figsize=(3 * (1.9 + 0.55 * n), 1.2 + 0.5 * n), layout="constrained")
        panels = ((mean, "mean of the tokens so far"), (zeros, "softmax of masked zeros"),
                  (attention, "softmax of masked scores"))
        description = (f"Three {n} × {n} weight matrices over the tokens {figures.token_list(tokens)}, each "
                       f"lower-triangular. Left, the running mean: row t gives 1/t to each of its first t tokens "
                       f"(the last row {figures.number(mean[-1, 0])} each). Middle, the softmax of a masked matrix "
                       f"of zeros: the same numbers. Right, " + tail)
    for ax, (matrix, title) in zip(axes, panels):
        plots.heatmap(matrix, tokens, tokens, ax=ax, title=title, colorbar=False)
    fig.weight_matrices = (mean, zeros, attention)
    figures.describe(fig, description)
    return fig


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
            raise ValueError(
                f"mask {title!r} of shape {mask.shape} does not broadcast to the scores {(n, m)}") from None
        allowed.append(mask)
        weights.append(softmax(np.where(mask, scores, -np.inf), axis=-1))
    rows = len(allowed)
    # one row of panels, mask then weights for each mask: wide and low, to fit a slide
    fig, axes = plt.subplots(1, 2 * rows, figsize=(2 * rows * (1.5 + 0.45 * m), 1.5 + 0.45 * n),
                             squeeze=False, layout="constrained")
    pairs = axes[0].reshape(rows, 2)
    parts = []
    for (title, mask), w, (left, right) in zip(zip(masks, allowed), weights, pairs):
        _mask_panel(left, mask, query_tokens, key_tokens, f"{title} mask (1 = may attend)")
        plots.heatmap(w, query_tokens, key_tokens, ax=right, title=f"weights, {title} mask",
                       colorbar=False)
        empty = int(np.sum(~mask.any(axis=-1)))
        blocked = w[~mask]
        parts.append(f"{title}: {int(mask.sum())} of {n * m} pairs allowed, weight on blocked pairs "
                     f"{figures.number(blocked.max() if blocked.size else 0.0)}"
                     + (f", {empty} rows with no allowed key (zero weights)" if empty else "")
                     + f", largest weight {figures.number(w.max())}")
    fig.masks, fig.weight_matrices = tuple(allowed), tuple(weights)
    figures.describe(fig, (
        f"{rows} masks as 0/1 matrices, each beside the weights it produces, {n} queries × {m} keys "
        f"({figures.token_list(key_tokens)}). " + "; ".join(parts) + "."))
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
                      f"{figures.number(weights[i].max())}" for i in range(n))
    figures.describe(fig, (
        f"Cross-attention as a head view: {n} target tokens of the decoder "
        f"({figures.token_list(target_tokens)}) on the left ask {m} source tokens of the encoder "
        f"({figures.token_list(source_tokens)}) on the right; each line is as thick as its weight; "
        f"the strongest line of each target token: {reads}."))
    return fig


# --------------------------------------------------------------------------- notebook 10: heads split and merged

def heads_split_merge(n, d_model, num_heads):
    """Multi-head attention on one sequence: each head projects X with its own matrices, attends, and merges.

    Drawn left to right: X; an arrow to each head, where X is multiplied by that head's own
    W_Q, W_K and W_V (three boxes Q, K, V of width d_head, outlined in the head's colour);
    attention in each head on its own; the heads' outputs concatenated side by side; and
    the product with W_O. The heads never attend over slices of X itself: each slice is
    a projection, and in code the h projections of one kind are one wide matrix whose
    column blocks belong to the heads (``split_heads`` cuts ``X @ W_Q`` into them).

    Parameters
    ----------
    n : int
        Tokens in the sequence.
    d_model : int
        Width of each token's vector; must be divisible by ``num_heads``.
    num_heads : int
        Heads ``h``; each projects to ``d_head = d_model / h`` columns.

    Returns
    -------
    matplotlib.figure.Figure
        ``fig.shapes`` lists the shape written on each arrow, left to right: X, the projected
        Q, K, V of all heads, the heads' outputs, the concatenation, the output.

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
    fig, ax = plt.subplots(figsize=(12, 4.2), layout="constrained")
    ax.set_ylim(0, 4.2)
    ax.set_axis_off()
    colours = plt.get_cmap("tab10").colors
    # data units per row (columns are 1.6 times as wide), so that the h head rows stack without
    # touching and the row of boxes (X, Q K V, a head's output, the merge, out) fits the width
    unit = min(0.25, (3.0 - 0.45 * (h - 1)) / (h * n), 6.4 / (1.6 * (3 * d_model + 4 * d_head)))

    slide = style.is_slide()  # a slide: shorter labels, the heads named inside their boxes (issue 32)

    def box(x, y, rows, cols, colour, label, edge="black", gid=None, inside=False):
        width, height = cols * unit * 1.6, rows * unit
        ax.add_patch(Rectangle((x, y - height / 2), width, height, facecolor=colour, edgecolor=edge,
                               linewidth=2 if edge != "black" else 1, alpha=0.85, gid=gid))
        if inside:
            ax.text(x + width / 2, y, label, ha="center", va="center", fontsize=9, color="white",
                    fontweight="bold")
        else:
            ax.text(x + width / 2, y - height / 2 - 0.06, label, ha="center", va="top", fontsize=9)
        return x + width

    def arrow(x0, y0, x1, y1, text=None):
        ax.add_patch(FancyArrowPatch((x0 + 0.08, y0), (x1 - 0.08, y1), arrowstyle="-|>", mutation_scale=14))
        if text:
            ax.text((x0 + x1) / 2, max(y0, y1) + 0.12, text, ha="center", va="bottom", fontsize=9)

    shapes = [f"({n}, {d_model})", f"({h}, {n}, {d_head})", f"({h}, {n}, {d_head})", f"({n}, {d_model})",
              f"({n}, {d_model})"]
    mid = 1.8
    right = box(0.2, mid, n, d_model, "#cccccc", f"X  {shapes[0]}")
    gap = n * unit + 0.45
    ys = [mid + (h - 1) / 2 * gap - k * gap for k in range(h)]
    heads_x = right + 1.7
    ax.text((right + heads_x) / 2 - 0.3, ys[0] + 0.12,  # above the fan of arrows
            f"own W_Q, W_K, W_V\n{shapes[1]} each" if slide else f"each head's\nown W_Q, W_K, W_V\n{shapes[1]} each",
            ha="center", va="bottom", fontsize=9)
    ends = []
    for k, y in enumerate(ys):  # one arrow from X to each head, then that head's Q, K and V
        arrow(right, mid, heads_x, y)
        x = heads_x
        for part in "QKV":
            label = f"{part}{k + 1}" if h <= 4 else ""
            x = box(x, y, n, d_head, FILLS[part], label, edge=colours[k % 10], gid=f"{part}:{k}") + 0.08
        ends.append(x - 0.08)
    attended_x = max(ends) + 1.4
    label = f"attend\n{shapes[2]}" if slide else f"attention\nin each head\n{shapes[2]}"
    arrow(max(ends), mid, attended_x, mid, label)
    names = [(f"h{k + 1}" if slide else f"head {k + 1}") if h <= 4 else "" for k in range(len(ys))]
    ends = [box(attended_x, y, n, d_head, colours[k % 10], names[k], gid=f"head:{k}", inside=slide)
            for k, y in enumerate(ys)]
    merged_x = max(ends) + 1.4
    arrow(max(ends), mid, merged_x, mid, f"merge\n{shapes[3]}" if slide else f"merge\n(concatenate)\n{shapes[3]}")
    right = box(merged_x, mid, n, d_model, "#9ecae1", "")
    for k in range(h):  # the merged box shows where each head's columns went
        ax.add_patch(Rectangle((merged_x + k * d_head * unit * 1.6, mid - n * unit / 2), d_head * unit * 1.6,
                               n * unit, facecolor=colours[k % 10], alpha=0.55, edgecolor="none"))
    out_x = right + 1.3
    arrow(right, mid, out_x, mid, f"× W_O\n{shapes[4]}")
    end = box(out_x, mid, n, d_model, "#c7e9c0", f"out  {shapes[4]}")
    ax.set_xlim(0, max(12, end + 0.2))
    ax.set_title(f"{h} heads of width $d_{{model}}$ / h = {d_model} / {h} = {d_head}: "
                 "project, attend, merge", fontsize=10)
    fig.shapes = shapes
    figures.describe(fig, (
        f"Diagram of multi-head attention on one sequence of {n} tokens of width {d_model}: X {shapes[0]} goes "
        f"to each of {h} heads, which multiplies it by its own W_Q, W_K and W_V into a query, key and value "
        f"matrix of width {d_head} ({shapes[1]} for each kind over all heads); attention runs in each head "
        f"on its own, {shapes[2]}; the heads' outputs are concatenated back to {shapes[3]} and multiplied by "
        f"W_O to give the output {shapes[4]}."))
    return fig


# --------------------------------------------------------------------------- notebook 10: why several heads

def head_patterns(weights, tokens, titles=None):
    """The weights of several heads on one sequence side by side, and where each head looks.

    Parameters
    ----------
    weights : array_like, shape (h, n, n)
        One weight matrix per head (rows are queries, columns keys, each row sums to 1).
    tokens : sequence of str, length n
    titles : sequence of str, length h, optional
        Default ``"head 1"``, ``"head 2"``, ...

    Returns
    -------
    matplotlib.figure.Figure
        One heatmap per head. ``fig.strongest`` is an (h, n) array: for each head and query,
        the index of the key with the largest weight; the description lists them and counts
        the queries whose strongest key differs between the heads.

    Examples
    --------
    >>> w = np.array([[[1.0, 0.0], [1.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]]])
    >>> fig = head_patterns(w, ["a", "b"])
    >>> fig.strongest
    array([[0, 0],
           [0, 1]])
    >>> import matplotlib.pyplot as plt; plt.close(fig)
    """
    import matplotlib.pyplot as plt

    weights = _matrix(weights, "weights", ndim=3)
    h, n, m = weights.shape
    if n != m or h == 0 or n == 0:
        raise ValueError(f"weights must have shape (h, n, n) with h, n >= 1: got {weights.shape}")
    tokens = _labels(tokens, n, "tokens")
    titles = [f"head {k + 1}" for k in range(h)] if titles is None else [str(t) for t in titles]
    if len(titles) != h:
        raise ValueError(f"titles must name the {h} heads: got {len(titles)} titles")
    fig, axes = plt.subplots(1, h, figsize=(h * (1.6 + 0.55 * n), 1.0 + 0.5 * n), layout="constrained",
                             squeeze=False)
    for ax, w, title in zip(axes[0], weights, titles):
        plots.heatmap(w, tokens, tokens, ax=ax, title=title, colorbar=False)
    strongest = weights.argmax(axis=-1)  # (h, n)
    differ = int(np.sum(np.any(strongest != strongest[:1], axis=0)))
    parts = [f"{title}: " + ", ".join(f"{tokens[i]} to {tokens[j]} {figures.number(weights[k, i, j])}"
                                      for i, j in enumerate(strongest[k]))
             for k, title in enumerate(titles)]
    fig.strongest = strongest
    figures.describe(fig, (
        f"{h} heatmaps of attention weights, one per head, {n} queries × {n} keys "
        f"({figures.token_list(tokens)}). The strongest key of each query: " + "; ".join(parts)
        + f". The heads' strongest keys differ for {differ} of {n} queries."))
    return fig
