"""Memory-efficient attention (notebook 11): tiles in fast memory and the online softmax.

``tiled_steps`` draws the tiled computation step by step: which blocks of Q,
K and V sit in fast memory (SRAM) at each step, and the running maximum and
sum of one query row, computed with the online softmax recurrences.
``flash_loop_orders`` puts the visit order of FlashAttention-1 beside that of
FlashAttention-2, as numbered grids of tiles.
"""

from __future__ import annotations

import math

import numpy as np

from .. import figures, style
from ._common import KEY_COLOUR, QUERY_COLOUR, _format, _matrix, _only_ticks_in_view

__all__ = ["tiled_steps", "flash_loop_orders"]

SRAM_FILLS = {"Q": "#fdb97d", "K": "#8fb8e3", "V": "#9fd39b"}  # a block in fast memory
SLOW_FILL = "#f2f2f2"  # a block in slow memory (HBM)


def _blocks(length, block):
    """[(start, stop), ...] of the blocks of ``block`` rows that cover ``length`` rows."""
    return [(start, min(start + block, length)) for start in range(0, length, block)]


def _block_size(value, name):
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive integer: got {value!r}")
    return int(value)


def tiled_steps(q, k, v, *, block_q, block_k, row=0, scale=None, lit=None):
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

    With ``lit`` one step is processed per picture, so that a lecture can
    build the pass up one tile at a time: that step's panel is drawn in
    colour, the other steps' panels faded, and the running maximum and sum
    show only the key blocks query ``row`` has seen by the end of that step,
    with their values written as the row's state (m and l) in the titles.

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
    lit : int, optional
        The step (1, 2, ... in the loop order) processed in this picture;
        default None: every step, and the whole row's running values.

    Returns
    -------
    matplotlib.figure.Figure
        Each block is a ``Rectangle`` with gid ``"block:<step>:<Q|K|V>:<b>"``,
        or ``"sram:<step>:<Q|K|V>:<b>"`` for the three in fast memory. The
        running values are ``Line2D`` with gids ``"running_max"`` and
        ``"running_sum"`` (x = key blocks seen, 1, 2, ...), the true values
        ``"final_max"`` and ``"final_sum"``. With ``lit``, the lit panel's
        title has gid ``"lit"``, the running lines hold only the key blocks
        seen so far, and the row's state is written in the titles of the
        running plots, ``Text`` with gids ``"state:max"`` and ``"state:sum"``
        (``"after step 2: m = 1.23 ..."``, or ``"... not reached yet ..."``). The figure carries a description
        (:func:`helpers.figures.description`), which says which step is lit and
        the row's state after it.

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
    if lit is not None and (isinstance(lit, bool) or not isinstance(lit, (int, np.integer))
                            or not 1 <= lit <= len(steps)):
        raise ValueError(f"lit must be a step from 1 to {len(steps)} or None: got {lit!r}")
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
    if lit is None:
        seen = len(k_blocks)  # key blocks the followed row has seen in the picture
    else:
        lit_i, lit_j = steps[lit - 1]
        seen = 0 if lit_i < row_block else lit_j + 1 if lit_i == row_block else len(k_blocks)

    if style.is_slide():
        fig = _tiled_steps_slide(steps, q_blocks, k_blocks, n, m, row, row_block, lit, seen,
                                 running_max, running_sum, final_max, final_sum)
        return _describe_tiled(fig, steps, q_blocks, k_blocks, block_q, block_k, row, seen, lit,
                               running_max, running_sum, final_max, final_sum)
    columns = len(steps)
    fig = plt.figure(figsize=(max(8.5, 1.6 * columns), 4.2), layout="constrained")
    grid = fig.add_gridspec(2, columns, height_ratios=[1, 1])
    total = max(n, m)
    for step, (i, j) in enumerate(steps):
        faded = lit is not None and step != lit - 1
        alpha = 0.3 if faded else 1.0
        ax = fig.add_subplot(grid[0, step])
        for x0, name, spans, active in ((0.0, "Q", q_blocks, i), (1.2, "K", k_blocks, j), (2.4, "V", k_blocks, j)):
            for b, (start, stop) in enumerate(spans):
                fast = b == active
                ax.add_patch(Rectangle((x0, total - stop), 1.0, stop - start,
                                       facecolor=SRAM_FILLS[name] if fast else SLOW_FILL,
                                       edgecolor="#333333" if fast else "#aaaaaa", linewidth=1.2 if fast else 0.6,
                                       alpha=alpha, gid=f"{'sram' if fast else 'block'}:{step}:{name}:{b}"))
            ax.text(x0 + 0.5, total + 0.4, name, ha="center", va="bottom", fontsize=12, alpha=alpha)
        if i == row_block:  # the followed query row
            ax.plot([-0.25, 0.0], [total - row - 0.5] * 2, color=QUERY_COLOUR, linewidth=2, alpha=alpha,
                    gid=f"row:{step}")
        ax.set_xlim(-0.3, 3.5)
        ax.set_ylim(-0.2, total + 1.6)
        ax.set_axis_off()
        ax.set_title(f"step {step + 1}\nQ{i} with K{j}, V{j}", fontsize=12, alpha=alpha,
                     fontweight="bold" if lit == step + 1 else "normal")
        if lit == step + 1:
            ax.title.set_gid("lit")
    arrived = np.arange(1, seen + 1)
    for half, (values, final, name, label) in enumerate(
            ((running_max, final_max, "max", "running maximum m"),
             (running_sum, final_sum, "sum", "running sum \u2113"))):
        ax = fig.add_subplot(grid[1, half * columns // 2:(half + 1) * columns // 2])
        ax.plot(arrived, values[:seen], "o-", color=QUERY_COLOUR, gid=f"running_{name}")
        ax.axhline(final, color="#333333", linestyle="--", linewidth=1, gid=f"final_{name}")
        for a, value in zip(arrived, values):
            ax.annotate(_format(value, 2), (a, value), textcoords="offset points", xytext=(0, 6), ha="center",
                        fontsize=12, gid=f"value:{name}:{a - 1}")
        ax.set_xticks(np.arange(1, len(k_blocks) + 1))
        ax.set_xlim(0.6, len(k_blocks) + 0.4)
        ax.set_ylim(*_padded(values + [final]))
        ax.tick_params(labelsize=12)
        ax.set_xlabel(f"key blocks seen by query {row}", fontsize=12)
        if lit is None:
            ax.set_title(f"{label} (dashed: whole row, {_format(final, 2)})", fontsize=13)
        else:
            symbol = "m" if name == "max" else "\u2113"
            state = f"{symbol} = {_format(values[seen - 1], 2)}" if seen else "not reached yet"
            ax.set_title(f"after step {lit}: {state} (dashed: whole row)", fontsize=13)
            ax.title.set_gid(f"state:{name}")
    fig.suptitle("Tiled attention, FlashAttention-2 order: the coloured blocks sit in fast memory (SRAM)", fontsize=13)
    return _describe_tiled(fig, steps, q_blocks, k_blocks, block_q, block_k, row, seen, lit,
                           running_max, running_sum, final_max, final_sum)


def _describe_tiled(fig, steps, q_blocks, k_blocks, block_q, block_k, row, seen, lit,
                    running_max, running_sum, final_max, final_sum):
    def listed(values):
        return ", ".join(f"{value:.2f}" for value in values)

    figures.describe(fig, (
        f"Tiled attention in {len(steps)} steps, {len(q_blocks)} query blocks of up to {block_q} rows times "
        f"{len(k_blocks)} key/value blocks of up to {block_k} rows, FlashAttention-2 order: at each step one block "
        f"of Q, one of K and one of V are in fast memory (SRAM), the rest in slow memory. "
        f"Query {row}'s running maximum after each key block: {listed(running_max)} (whole row {final_max:.2f}); "
        f"running sum: {listed(running_sum)} (whole row {final_sum:.2f})." + _lit_description(
            lit, steps, row, seen, running_max, running_sum)))
    return fig


def _tiled_steps_slide(steps, q_blocks, k_blocks, n, m, row, row_block, lit, seen,
                       running_max, running_sum, final_max, final_sum):
    """The slide variant of :func:`tiled_steps`: two panels, every text one size.

    A slide shows at most two panels (issue 32): the steps side by side in one panel (the
    stacks of Q, K and V of each step, a short label under each), and the followed row's
    running maximum and sum together in the other, their values in the legend. The gids
    are the notebook picture's (blocks, lines, values; ``"lit"`` on the lit step's label,
    ``"state:max"`` and ``"state:sum"`` on the legend's entries).
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    size, big = 12, 15  # the slide medium lifts the smaller to its floor and keeps the difference
    fig = plt.figure(figsize=(8.8, 4.4), layout="constrained")
    grid = fig.add_gridspec(2, 1, height_ratios=[1.15, 1])
    ax = fig.add_subplot(grid[0])
    total, pitch = max(n, m), 4.6
    sep = ": " if len(steps) <= 6 else "\n"  # more steps than six: the label on two lines
    for step, (i, j) in enumerate(steps):
        faded = lit is not None and step != lit - 1
        alpha = 0.3 if faded else 1.0
        left = step * pitch
        for x0, name, spans, active in ((0.0, "Q", q_blocks, i), (1.1, "K", k_blocks, j), (2.2, "V", k_blocks, j)):
            for b, (start, stop) in enumerate(spans):
                fast = b == active
                ax.add_patch(Rectangle((left + x0, total - stop), 1.0, stop - start,
                                       facecolor=SRAM_FILLS[name] if fast else SLOW_FILL,
                                       edgecolor="#333333" if fast else "#aaaaaa", linewidth=1.2 if fast else 0.6,
                                       alpha=alpha, gid=f"{'sram' if fast else 'block'}:{step}:{name}:{b}"))
            if step == 0:
                ax.text(left + x0 + 0.5, total + 0.3, name, ha="center", va="bottom", fontsize=size)
        if i == row_block:  # the followed query row
            ax.plot([left - 0.3, left], [total - row - 0.5] * 2, color=QUERY_COLOUR, linewidth=2, alpha=alpha,
                    gid=f"row:{step}")
        label = ax.text(left + 1.6, -0.4, f"{step + 1}{sep}Q{i}K{j}", ha="center", va="top", fontsize=big,
                        alpha=alpha, fontweight="bold" if lit == step + 1 else "normal")
        if lit == step + 1:
            label.set_gid("lit")
    ax.set_xlim(-0.4, len(steps) * pitch - 0.6)
    ax.set_ylim(-0.4 - 0.3 * total, total + 0.3 + 0.3 * total)
    ax.set_axis_off()
    ax.set_xticks([])  # no tick labels, undrawn ones included (style.overlapping_texts measures those too)
    ax.set_yticks([])
    ax.set_title("coloured: the blocks in fast memory (SRAM)", fontsize=size)
    ax = fig.add_subplot(grid[1])
    arrived = np.arange(1, seen + 1)
    for values, final, name, symbol, marker in ((running_max, final_max, "max", "m", "o-"),
                                                (running_sum, final_sum, "sum", "\u2113", "s-")):
        if lit is None:
            state = f"{symbol}, whole row {_format(final, 2)}"
        else:
            state = f"{symbol} = {_format(values[seen - 1], 2)}" if seen else f"{symbol}: not reached yet"
        ax.plot(arrived, values[:seen], marker, color=QUERY_COLOUR if name == "max" else KEY_COLOUR,
                gid=f"running_{name}", label=state)
        ax.axhline(final, color="#333333", linestyle="--", linewidth=1, gid=f"final_{name}")
    ax.set_xticks(np.arange(1, len(k_blocks) + 1))
    ax.set_xlim(0.6, len(k_blocks) + 0.4)
    low, high = _padded(running_max + running_sum + [final_max, final_sum])
    ax.set_ylim(low, high + 0.6 * (high - low))  # room above the lines for the legend
    ax.tick_params(labelsize=big)
    ax.set_xlabel(f"key blocks seen by query {row} (dashed: whole row)", fontsize=size)
    title = "running max and sum" if lit is None else f"after step {lit}"
    ax.set_title(title, fontsize=size)
    _only_ticks_in_view(ax)
    legend = ax.legend(fontsize=big, loc="upper center", ncol=2, frameon=False)
    for text, name in zip(legend.get_texts(), ("max", "sum")):
        text.set_gid(f"state:{name}")
    return fig


def _padded(values):
    """(low, high) limits around ``values`` with room for the labels above the points."""
    low, high = min(values), max(values)
    pad = 0.3 * (high - low) if high > low else 0.5
    return low - pad, high + pad


def _lit_description(lit, steps, row, seen, running_max, running_sum):
    """The sentence that says which step a picture processes and the followed row's state after it."""
    if lit is None:
        return ""
    i, j = steps[lit - 1]
    text = f" Step {lit} of {len(steps)} is lit: query block {i} with key/value block {j}; the other steps are faded."
    if not seen:
        return text + f" Query {row} is not in a block processed yet."
    return text + (f" After it query {row} has seen {seen} key block{'s' if seen > 1 else ''}: "
                   f"m = {running_max[seen - 1]:.2f}, \u2113 = {running_sum[seen - 1]:.2f}.")


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
    cell = 0.8
    fig, axes = plt.subplots(1, 2, figsize=(2 * (cols * cell + 1.0) + 0.4, rows * cell + 1.5), layout="constrained")
    described = []
    for p, (ax, visits, title) in enumerate(zip(axes, orders, titles)):
        number = {tile: s + 1 for s, tile in enumerate(visits)}
        for i in range(rows):
            for j in range(cols):
                if (i, j) in number:
                    ax.add_patch(Rectangle((j, i), 1, 1, facecolor="white", edgecolor="#777777", linewidth=0.8))
                    ax.text(j + 0.5, i + 0.5, str(number[(i, j)]), ha="center", va="center", fontsize=13, zorder=4,
                            bbox=dict(boxstyle="round,pad=0.15", facecolor="white", edgecolor="none"),
                            gid=f"order:{p}:{i}:{j}")
                else:
                    ax.add_patch(Rectangle((j, i), 1, 1, facecolor="#eeeeee", edgecolor="#bbbbbb", hatch="///",
                                           linewidth=0.8, gid=f"skipped:{p}:{i}:{j}"))
        path = np.array(visits, dtype=float) + 0.5
        ax.plot(path[:, 1], path[:, 0], color=KEY_COLOUR, linewidth=1.2, alpha=0.45, zorder=3, gid=f"path:{p}")
        ax.plot(path[0, 1], path[0, 0], "o", color=QUERY_COLOUR, markersize=22, alpha=0.35, zorder=3)
        loop = _loop_description(visits)
        ax.set_xlim(0, cols)
        ax.set_ylim(rows, 0)
        ax.set_aspect("equal")
        ax.set_xticks(np.arange(cols) + 0.5, [f"K{j}" for j in range(cols)])
        ax.set_yticks(np.arange(rows) + 0.5, [f"Q{i}" for i in range(rows)])
        ax.tick_params(length=0, labelsize=12)
        ax.set_xlabel("key/value block", fontsize=12)
        ax.set_ylabel("query block", fontsize=12)
        ax.set_title(f"{title}\n{loop}", fontsize=13)
        axis = 1 if "key" in loop else 0  # the outer loop's index in (query block, key block)
        first = [s + 1 for s, tile in enumerate(visits) if tile[axis] == visits[0][axis]]
        described.append(f"{title}, {loop}: visits {len(visits)} tiles, visits {first[0]}-{first[-1]} on "
                         f"{'key/value block' if axis else 'query block'} {visits[0][axis]}")
    figures.describe(fig, f"Visit order of a grid of {rows} query blocks x {cols} key/value blocks in two loop "
                           f"orders, numbered from 1. " + "; ".join(described) + ".")
    return fig
