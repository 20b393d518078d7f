"""Why the scores are scaled, and gradients by hand (notebooks 08 and 09).

Notebook 08: ``score_spread`` shows that q·k spreads like sqrt(d_k) and that an
unscaled softmax row goes nearly one-hot; ``saturation`` plots, against d_k,
the largest weight of a row and the size of its softmax Jacobian, which is
what lets a gradient through to the scores; ``jacobian_pile`` histograms
those sizes at one width, one panel per condition, so that the rows stacked
at 0 are counted. Unscaled and scaled keep one colour each,
``plots.UNSCALED_COLOUR`` and ``plots.SCALED_COLOUR``. Notebook 09: ``backward_graph`` draws
the forward pass as a graph of shapes with the backward pass flowing the
other way; ``softmax_jacobian`` draws J = diag(p) - p p^T of one row.
"""

from __future__ import annotations

import numpy as np

from .. import figures, style
from ..attention import (
    softmax,
)
from ..attention import (
    softmax_jacobian as _jacobian,  # the kernel; this module's softmax_jacobian is the picture
)
from ..plots import SCALED_COLOUR, UNSCALED_COLOUR
from ._common import FILLS, _format, _labels, _matrix, _new_figure, _only_ticks_in_view

__all__ = ["score_spread", "saturation", "jacobian_pile", "backward_graph", "softmax_jacobian"]


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
    unscaled, scaled = softmax(scores), softmax(scores / np.sqrt(top))
    slide = style.is_slide()  # a slide shows at most two panels (issue 32): the two rows share one
    if slide:
        fig, (left, mid) = plt.subplots(1, 2, figsize=(10, 4.0), layout="constrained",
                                        gridspec_kw={"width_ratios": [1.2, 1]})
        size = 12  # one text size, which the slide medium lifts to its floor
    else:
        fig, (left, mid, right) = plt.subplots(1, 3, figsize=(12, 3.4), layout="constrained",
                                               gridspec_kw={"width_ratios": [1.4, 1, 1]})
    for y, d in enumerate(d_ks):
        left.scatter(dots[d], np.full(pairs, y) + rng.uniform(-0.25, 0.25, pairs), s=4, alpha=0.35,
                     color=UNSCALED_COLOUR)  # raw q·k: the unscaled condition
        left.plot([-spread[d], spread[d]], [y, y], color="black", linewidth=3)
        left.text(0, y + 0.3, f"std {spread[d]:.1f} ≈ √{d} = {np.sqrt(d):.1f}", fontsize=size if slide else 8.5,
                  color="black",
                  ha="center", va="bottom")
    left.set_yticks(range(len(d_ks)), labels=[f"d_k = {d}" for d in d_ks])
    left.set_ylim(-0.5, len(d_ks) - 0.2)
    left.set_xlabel("q·k of random unit-variance q, k", **({"fontsize": size} if slide else {}))
    left.set_title(r"the spread of q·k grows like $\sqrt{d_k}$", fontsize=size if slide else 10)
    if slide:  # the unscaled and the scaled row side by side in one panel, their largest weights labelled
        x = np.arange(int(m))
        for shift, weights, name, colour in ((-0.2, unscaled, "unscaled", UNSCALED_COLOUR),
                                             (0.2, scaled, f"scaled by 1/√{top}", SCALED_COLOUR)):
            mid.bar(x + shift, weights, 0.4, color=colour, label=f"{name}: largest {weights.max():.2f}")
        mid.set_ylim(0, 1.12)
        mid.set_xticks(x, labels=[f"k{j}" for j in range(int(m))])
        mid.set_title(f"one query's softmax, $d_k$ = {top}", fontsize=size)
        mid.set_ylabel("weight", fontsize=size)
        # below the axes: inside, the legend would cover the bars and the axis label
        mid.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), fontsize=size + 1, frameon=False)
        for ax in (left, mid):
            ax.tick_params(labelsize=size + 2)  # larger than the rest: the deck shows the picture below its size
        # only ticks inside the view: style.overlapping_texts also measures the labels of ticks the axes
        # leave out, and the one beyond the left panel's right end would sit on the right panel's numbers
        from matplotlib.ticker import MaxNLocator

        low, high = left.get_xlim()
        left.set_xticks([t for t in MaxNLocator(5).tick_values(low, high) if low <= t <= high])
        left.set_xlim(low, high)
    else:
        for ax, weights, title, colour in ((mid, unscaled, f"unscaled: softmax of q·k, $d_k$ = {top}",
                                            UNSCALED_COLOUR),
                                           (right, scaled, f"scaled: softmax of q·k / √{top}", SCALED_COLOUR)):
            bars = ax.bar(range(int(m)), weights, color=colour)
            ax.bar_label(bars, fmt="%.2f", fontsize=7.5, padding=2)
            ax.set_ylim(0, 1.12)
            ax.set_xticks(range(int(m)), labels=[f"k{j}" for j in range(int(m))])
            ax.set_title(title, fontsize=10)
            ax.set_ylabel("weight")
    fig.spread, fig.rows = spread, (scores, unscaled, scaled)
    rows = ((f"Right, one query's softmax over {int(m)} keys at d_k = {top}, unscaled beside scaled by √{top}: "
             f"largest weight {unscaled.max():.2f} unscaled (nearly one-hot), {scaled.max():.2f} scaled, "
             "where the other keys keep a share.") if slide else
            (f"Middle, one query's softmax over {int(m)} keys at d_k = {top} without scaling: "
             f"largest weight {unscaled.max():.2f} (nearly one-hot). Right, the same scores divided by √{top}: "
             f"largest weight {scaled.max():.2f}, the other keys keep a share."))
    figures.describe(fig, (
        f"Left, dot products q·k of {pairs} random pairs at d_k = " + ", ".join(str(d) for d in d_ks)
        + "; their standard deviations " + ", ".join(f"{spread[d]:.1f}" for d in d_ks)
        + " grow like √d_k. " + rows))
    return fig


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
    slide = style.is_slide()  # a slide: a taller canvas, one text size (lifted to the slide's floor)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.0) if slide else (10, 3.1), layout="constrained")
    styles = (("o-", UNSCALED_COLOUR, "unscaled"), ("s-", SCALED_COLOUR, "scaled by 1/√d_k"))
    for ax, curves in ((left, largest), (right, jacobian)):
        for y, (marker, colour, label) in zip(curves, styles):
            ax.plot(d_ks, np.maximum(y, 1e-12) if ax is right else y, marker, color=colour, label=label)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("$d_k$", **({"fontsize": 12} if slide else {}))
        ax.legend(fontsize=13 if slide else 8, loc="center right" if ax is left else "lower left")
    left.axhline(1 / m, color="0.6", linestyle=":")
    left.text(d_ks[0], 1 / m + 0.02, f"uniform 1/{m}", fontsize=12 if slide else 8, color="0.35", va="bottom")
    left.set_ylim(0, 1.05)
    left.set_title("mean largest weight: saturation" if slide else "mean largest weight of a row: saturation",
                   fontsize=12 if slide else 10)
    right.set_yscale("log")
    right.set_title(r"median $\|J\|_F$: the gradient's way back" if slide else
                    r"median $\|J\|_F$ of a row: the gradient's way back", fontsize=12 if slide else 10)
    if slide:
        for ax in (left, right):
            ax.tick_params(labelsize=14)
            _only_ticks_in_view(ax)
    fig.curves = {"largest": largest, "jacobian": jacobian}
    figures.describe(fig, (
        f"Two plots against d_k from {d_ks[0]} to {d_ks[-1]}, softmax rows over {m} keys. Left, the mean largest "
        f"weight: unscaled it climbs from {largest[0][0]:.2f} to {largest[0][-1]:.2f}, scaled it stays between "
        f"{largest[1].min():.2f} and {largest[1].max():.2f}. Right, on a log scale, the median size of the softmax "
        f"Jacobian: unscaled it falls from {jacobian[0][0]:.2g} to {jacobian[0][-1]:.2g}, scaled it stays between "
        f"{jacobian[1].min():.2f} and {jacobian[1].max():.2f}."))
    return fig


def _jacobian_sizes(w):
    """|diag(a) - a a^T|_F of each row of ``w`` (R, m) -> (R,)."""
    jac = w[:, :, None] * np.eye(w.shape[-1]) - w[:, :, None] * w[:, None, :]
    return np.linalg.norm(jac, axis=(-2, -1))


def jacobian_pile(unscaled, scaled, d_k, *, bin_width=0.02, top=0.6, saturated=0.99):
    """Histograms of the rows' Jacobian sizes |J|_F at one width, one panel per condition.

    A scatter of |J|_F against the largest weight draws hundreds of saturated rows as one dot;
    a histogram counts them. The first bin of each panel is labelled with its count.

    Parameters
    ----------
    unscaled, scaled : array_like, shape (rows, m)
        Softmax rows of the raw scores and of the scores divided by sqrt(d_k), at width ``d_k``.
    d_k : int
        The width, for the titles and the description.
    bin_width, top : float
        Bins of |J|_F of this width from 0 to ``top``; a size above ``top`` is counted in the last bin.
    saturated : float
        A row is counted as saturated when its largest weight is above this.

    Returns
    -------
    matplotlib.figure.Figure
        ``fig.sizes`` maps "unscaled" and "scaled" to the (rows,) array of |J|_F;
        ``fig.counts`` maps them to the histogram counts, ``fig.edges`` holds the bin edges,
        ``fig.saturated`` maps them to the number of rows whose largest weight exceeds ``saturated``.

    Examples
    --------
    >>> import numpy as np
    >>> one_hot, uniform = np.eye(4)[[0, 1, 2]], np.full((3, 4), 0.25)
    >>> fig = jacobian_pile(one_hot, uniform, 16)
    >>> int(fig.counts["unscaled"][0]), fig.saturated["unscaled"], fig.saturated["scaled"]
    (3, 3, 0)
    >>> import matplotlib.pyplot as plt; plt.close(fig)
    """
    import matplotlib.pyplot as plt

    rows = {"unscaled": _matrix(unscaled, "unscaled"), "scaled": _matrix(scaled, "scaled")}
    if rows["unscaled"].shape != rows["scaled"].shape:
        raise ValueError(f"unscaled and scaled must have the same shape (rows, m): got "
                         f"{rows['unscaled'].shape} and {rows['scaled'].shape}")
    if not 0 < bin_width < top:
        raise ValueError(f"bin_width must be above 0 and below top: got bin_width={bin_width!r}, top={top!r}")
    edges = np.linspace(0.0, top, int(round(top / bin_width)) + 1)
    sizes = {name: _jacobian_sizes(w) for name, w in rows.items()}
    counts = {name: np.histogram(np.minimum(j, top), bins=edges)[0] for name, j in sizes.items()}
    hot = {name: int((w.max(axis=-1) > saturated).sum()) for name, w in rows.items()}
    n_rows, m = rows["unscaled"].shape
    slide = style.is_slide()  # a slide: a taller canvas, one text size (lifted to the slide's floor)
    size = 12 if slide else None
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.6) if slide else (10, 3.0), layout="constrained", sharey=True)
    colours = {"unscaled": UNSCALED_COLOUR, "scaled": SCALED_COLOUR}
    for ax, name in zip(axes, ("unscaled", "scaled")):
        ax.bar(edges[:-1], counts[name], width=bin_width, align="edge", color=colours[name])
        first = int(counts[name][0])
        ax.annotate(f"{first} rows with |J|_F < {bin_width:g}", (bin_width / 2, first),
                    xytext=(bin_width * 3, first * 0.85 + 0.1 * n_rows), fontsize=size or 9,
                    arrowprops={"arrowstyle": "->", "color": "black"})
        ax.set_xlim(0, top)
        ax.set_ylim(0, n_rows * 1.05)
        ax.set_xlabel(r"$\|J\|_F$ of a row", **({"fontsize": size} if slide else {}))
        ax.set_title(f"{name}, $d_k$ = {d_k}: {hot[name]} of {n_rows} rows have a weight above {saturated:g}",
                     fontsize=size or 10)
        if slide:
            ax.tick_params(labelsize=size)
            _only_ticks_in_view(ax)
    axes[0].set_ylabel("rows", **({"fontsize": size} if slide else {}))
    if slide:  # the corner: count 0 beside |J|_F 0.0 would run into it; the axis starts at 0 either way
        axes[0].set_yticks([t for t in axes[0].get_yticks() if t > 0])
        axes[0].set_ylim(0, n_rows * 1.05)
    fig.sizes, fig.counts, fig.edges, fig.saturated = sizes, counts, edges, hot
    peak = {name: edges[int(np.argmax(c))] for name, c in counts.items()}
    figures.describe(fig, (
        f"Two histograms of the softmax Jacobian's size |J|_F over {n_rows} rows of {m} keys at d_k = {d_k}, "
        f"bins of {bin_width:g} from 0 to {top:g}. Left, unscaled: {int(counts['unscaled'][0])} rows in the first bin "
        f"(|J|_F below {bin_width:g}), {hot['unscaled']} rows with a weight above {saturated:g}; "
        f"median |J|_F {np.median(sizes['unscaled']):.2g}. Right, scaled: {int(counts['scaled'][0])} rows in the "
        f"first bin, {hot['scaled']} rows above {saturated:g}; the tallest bin starts at {peak['scaled']:.2f}, "
        f"median {np.median(sizes['scaled']):.2f}."))
    return fig


# --------------------------------------------------------------------------- notebook 09: gradients by hand
# The backward pass as a graph of shapes, and the softmax Jacobian of one row.

FORWARD_COLOUR = "#1f5fa8"  # blue: values flowing forward (6.3:1 on white)
BACKWARD_COLOUR = "#b2182b"  # dark red: gradients flowing back (6.9:1 on white); orange means the query
LUMINANCE = np.array([0.2126, 0.7152, 0.0722])  # relative luminance of linear RGB (white or black numbers)
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
# the five steps of the backward pass, in the order they run: step -> (from, to) of its edge
_GRAPH_STEPS = {1: ("V", "O"), 2: ("P", "O"), 3: ("S", "P"), 4: ("Q", "S"), 5: ("K", "S")}
GREYED_COLOUR = "#c4c4c4"  # a step that is not lit


def _positive_int(x, name):
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or x < 1:
        raise ValueError(f"{name} must be a positive integer: got {x!r}")
    return int(x)


def backward_graph(n, m, d_k, d_v, *, lit=None):
    """Attention's forward pass as a graph of boxes, and its backward pass flowing the other way.

    Six nodes: Q, K and V, the scores S = scale * Q K^T, the weights
    P = softmax(S) (row by row) and the output O = P V. Each box names its node
    and writes its shape twice: in letters and with the numbers given, in blue
    for the values that flow forward, and in dark red for the gradient
    dX = dL/dX that flows back, which has the shape of its node. Forward
    arrows (blue) run above the backward arrows (red, pointing the other
    way); each backward arrow carries the formula of its step, with
    r = rowsum(dO * O).

    With ``lit`` one step of the backward pass is drawn lit and the other
    four greyed, so that a lecture can build the graph up one step at a time:
    step 1 is dV = P^T dO, step 2 dP = dO V^T, step 3 dS (through the
    softmax), step 4 dQ and step 5 dK. The lit step's arrow is drawn thicker,
    its formula is bold and named at the bottom left, and only the gradient it reads and the
    one it makes stay red; the forward pass keeps its colours.

    Parameters
    ----------
    n, m : int
        Number of queries and of keys (and values).
    d_k, d_v : int
        Width of queries and keys, and of values.
    lit : int, optional
        The step (1 to 5) drawn lit; default None: every step in full colour.

    Returns
    -------
    matplotlib.figure.Figure
        One axes. Node ``X`` is a ``FancyBboxPatch`` with gid ``"node:X"``; its
        shape is a ``Text`` with gid ``"shape:X"`` (e.g. ``"(2, 4)"``) and its
        gradient's a ``Text`` with gid ``"grad:X"`` (``"dX (2, 4)"``). The arrow
        from node A to node B is a ``FancyArrowPatch`` with gid
        ``"forward:A:B"``, its reverse ``"backward:B:A"``, whose formula is a
        ``Text`` with gid ``"formula:B:A"``. With ``lit``, a ``Text`` with gid
        ``"lit"`` names the step. The figure carries a description
        (:func:`helpers.figures.description`), which says which step is lit.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> fig = backward_graph(2, 3, 4, 5)
    >>> [t.get_text() for t in fig.findobj(lambda a: a.get_gid() in ("shape:S", "grad:Q"))]
    ['dQ (2, 4)', '(2, 3)']
    >>> plt.close(fig)
    >>> fig = backward_graph(2, 3, 4, 5, lit=1)
    >>> [t.get_text() for t in fig.findobj(lambda a: a.get_gid() == "lit")]
    ['step 1 of 5: dV = Pᵀ dO']
    >>> plt.close(fig)
    """

    if lit is not None and (isinstance(lit, bool) or not isinstance(lit, (int, np.integer))
                            or lit not in _GRAPH_STEPS):
        raise ValueError(f"lit must be a step from 1 to 5 or None: got {lit!r}")
    formulas = {(a, b): formula for a, b, _, formula in _GRAPH_EDGES}
    step_of = {edge: step for step, edge in _GRAPH_STEPS.items()}
    # the gradients the lit step reads and makes; the others are greyed
    lit_grads = set() if lit is None else {"d" + _GRAPH_STEPS[lit][1], "d" + _GRAPH_STEPS[lit][0]}

    def colour(lit_here):
        return BACKWARD_COLOUR if lit is None or lit_here else GREYED_COLOUR

    sizes = {"n": _positive_int(n, "n"), "m": _positive_int(m, "m"),
             "d_k": _positive_int(d_k, "d_k"), "d_v": _positive_int(d_v, "d_v")}
    shapes = {name: tuple(sizes[s] for s in symbolic) for name, (_, symbolic, _, _) in _GRAPH_NODES.items()}
    if style.is_slide():
        fig = _backward_graph_slide(shapes, lit, lit_grads, step_of, formulas)
        return _describe_backward(fig, n, m, d_k, d_v, shapes, lit, formulas)
    width, height = 10.3, 3.45
    box_w, box_h = 1.4, 0.95
    fig, ax, centre = _graph_nodes((width, height), (box_w, box_h), [0.85, 3.7, 6.55, 9.4], [0.95, 2.55])
    for name, (title, symbolic, _, _) in _GRAPH_NODES.items():
        x, y = centre[name]
        ax.text(x, y + 0.27, title, ha="center", va="center", fontsize=12, fontweight="bold",
                color="#222222", gid=f"title:{name}")
        letters = "(" + ", ".join(symbolic) + ")"
        ax.text(x - 0.05, y + 0.02, letters, ha="right", va="center", fontsize=9, color="#444444",
                gid=f"letters:{name}")
        ax.text(x + 0.05, y + 0.02, str(shapes[name]), ha="left", va="center", fontsize=9.5,
                color=FORWARD_COLOUR, gid=f"shape:{name}")
        ax.text(x, y - 0.26, f"d{name} {shapes[name]}", ha="center", va="center", fontsize=11,
                color=colour(f"d{name}" in lit_grads), fontweight="bold", gid=f"grad:{name}")

    for a, b, label, formula in _GRAPH_EDGES:
        lit_here = step_of[(a, b)] == lit
        start, end, back_end, back_start = _graph_edge(ax, centre, (box_w, box_h), a, b, 0.13, 0.15, lit_here,
                                                       colour(lit_here))
        (x0, y0), (x1, _) = start, end
        if centre[a][1] == centre[b][1]:
            if label:
                ax.text((x0 + x1) / 2, y0 + 0.08, label, ha="center", va="bottom", fontsize=9.5,
                        color=FORWARD_COLOUR, gid=f"op:{a}:{b}")
            ax.text((x0 + x1) / 2, back_end[1] - 0.1, formula, ha="center", va="top", fontsize=9.5,
                    color=colour(lit_here), fontweight="bold" if lit_here else "normal",
                    gid=f"formula:{b}:{a}")
        else:
            (bx0, by0), (bx1, by1) = back_end, back_start
            ax.text((bx0 + bx1) / 2 + 0.15, (by0 + by1) / 2 - 0.05, formula, ha="left", va="top",
                    fontsize=9.5, color=colour(lit_here), fontweight="bold" if lit_here else "normal",
                    gid=f"formula:{b}:{a}")
    ax.text(0.15, height - 0.12, "forward: values and their shapes", ha="left", va="top", fontsize=11,
            color=FORWARD_COLOUR, fontweight="bold", gid="legend:forward")
    ax.text(3.6, height - 0.12, "backward (dashed): gradients dX = \u2202L/\u2202X, each the shape of X",
            ha="left", va="top", fontsize=11, color=BACKWARD_COLOUR, fontweight="bold", gid="legend:backward")
    ax.text(width - 0.15, 0.12, "r = rowsum(dO \u2299 O), one number per query", ha="right", va="bottom",
            fontsize=10, color=colour(lit == 3), gid="note:r")
    if lit is not None:
        a, b = _GRAPH_STEPS[lit]
        ax.text(0.15, 0.12, f"step {lit} of 5: {formulas[(a, b)]}", ha="left", va="bottom", fontsize=12.5,
                fontweight="bold", color=BACKWARD_COLOUR, gid="lit")
    return _describe_backward(fig, n, m, d_k, d_v, shapes, lit, formulas)


def _describe_backward(fig, n, m, d_k, d_v, shapes, lit, formulas):
    forward = ", ".join(f"{title} {shapes[name]}" for name, (title, *_) in _GRAPH_NODES.items())
    figures.describe(fig, (
        f"Graph of attention's forward pass with n = {n} queries, m = {m} keys, d_k = {d_k}, d_v = {d_v}: "
        f"{forward}. Q and K feed the scores, the softmax of each row gives the weights, weights and V give "
        f"the output. The backward pass runs the other way, dO {shapes['O']} to dP and dV {shapes['V']}, dP to "
        f"dS {shapes['S']}, dS to dQ {shapes['Q']} and dK {shapes['K']}; every gradient has the shape of "
        "its node." + ("" if lit is None else
                       f" Step {lit} of 5 is lit: {formulas[_GRAPH_STEPS[lit]]}, from "
                       f"d{_GRAPH_STEPS[lit][1]} {shapes[_GRAPH_STEPS[lit][1]]} to d{_GRAPH_STEPS[lit][0]} "
                       f"{shapes[_GRAPH_STEPS[lit][0]]}; the other four steps are greyed.")))
    return fig


def _graph_edge(ax, centre, box, a, b, offset, lift, lit_here, back_colour):
    """The forward arrow from box ``a`` to box ``b`` and the dashed backward one beside it.

    The arrows run ``offset`` inches to either side of the line between the boxes (forward
    to its left); between rows the arrow leaves ``a`` ``lift`` inches above its centre.
    Returns the forward arrow's start and end, and the backward arrow's end and start.
    """
    from matplotlib.patches import FancyArrowPatch

    box_w, box_h = box

    def ends(shift):
        (xa, ya), (xb, yb) = centre[a], centre[b]
        if ya == yb:  # same row: from the right edge to the left edge
            start, end = np.array([xa + box_w / 2 + 0.05, ya]), np.array([xb - box_w / 2 - 0.05, yb])
        else:  # from the bottom row up to the top row
            start = np.array([xa + box_w / 2 + 0.05, ya + lift])
            end = np.array([xb - box_w / 2 + 0.3, yb - box_h / 2 - 0.05])
        direction = (end - start) / np.hypot(*(end - start))
        normal = np.array([-direction[1], direction[0]])  # to the left of the arrow
        return tuple(start + shift * normal), tuple(end + shift * normal)

    start, end = ends(offset)
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=13, color=FORWARD_COLOUR,
                                 linewidth=1.5, gid=f"forward:{a}:{b}"))
    back_end, back_start = ends(-offset)
    ax.add_patch(FancyArrowPatch(back_start, back_end, arrowstyle="-|>", mutation_scale=16 if lit_here else 13,
                                 color=back_colour, linewidth=2.8 if lit_here else 1.5, linestyle="--",
                                 gid=f"backward:{b}:{a}"))
    return start, end, back_end, back_start


def _graph_nodes(size, box, xs, ys):
    """The backward graph's canvas (inches as data units) and its node boxes: ``(fig, ax, centre)``.

    ``xs`` and ``ys`` are the centres of the four columns and the two rows, in inches;
    ``centre`` maps each node of ``_GRAPH_NODES`` to its box's centre.
    """
    from matplotlib.patches import FancyBboxPatch

    (width, height), (box_w, box_h) = size, box
    fig = _new_figure((width, height))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.set_axis_off()
    centre = {name: (xs[col], ys[row]) for name, (_, _, col, row) in _GRAPH_NODES.items()}
    for name, (x, y) in centre.items():
        fill = {"Q": FILLS["Q"], "K": FILLS["K"], "V": FILLS["V"], "O": FILLS["out"]}.get(name, FILLS["scores"])
        ax.add_patch(FancyBboxPatch((x - box_w / 2, y - box_h / 2), box_w, box_h, boxstyle="round,pad=0.02",
                                    facecolor=fill, edgecolor="#333333", linewidth=1.2, gid=f"node:{name}"))
    return fig, ax, centre


def _backward_graph_slide(shapes, lit, lit_grads, step_of, formulas):
    """The slide variant of :func:`backward_graph`: larger boxes, fewer and shorter texts, one text size.

    Each box holds its title, its shape in numbers and the name of its gradient; each
    backward arrow carries its step's number instead of its formula, and the formula of
    the lit step is written at the bottom (gid ``"lit"``). The gids of the boxes, arrows,
    shapes and gradients are the notebook picture's; a step's number has gid
    ``"step:B:A"``. Every text has one size, which the slide medium lifts to its floor,
    so nothing runs into anything at slide size (issue 32).
    """

    def colour(lit_here):
        return BACKWARD_COLOUR if lit is None or lit_here else GREYED_COLOUR

    size, big = 12, 14  # the boxes' texts larger than the rest (the slide medium keeps the difference)
    width, height = 10.3, 4.4
    box_w, box_h = 1.6, 1.2
    fig, ax, centre = _graph_nodes((width, height), (box_w, box_h), [0.95, 3.75, 6.55, 9.35], [1.2, 3.1])
    for name, (title, _, _, _) in _GRAPH_NODES.items():
        x, y = centre[name]
        ax.text(x, y + 0.34, title.split()[-1], ha="center", va="center", fontsize=big, fontweight="bold",
                color="#222222", gid=f"title:{name}")
        ax.text(x, y, str(shapes[name]), ha="center", va="center", fontsize=big, color=FORWARD_COLOUR,
                gid=f"shape:{name}")
        ax.text(x, y - 0.34, f"d{name}", ha="center", va="center", fontsize=big,
                color=colour(f"d{name}" in lit_grads), fontweight="bold", gid=f"grad:{name}")

    short = {"scale \u00b7 Q K\u1d40": "scale\u00b7QK\u1d40", "softmax of each row": "softmax", "P V": "PV"}
    for a, b, label, _ in _GRAPH_EDGES:
        step = step_of[(a, b)]
        lit_here = step == lit
        start, end, back_end, back_start = _graph_edge(ax, centre, (box_w, box_h), a, b, 0.15, 0.2, lit_here,
                                                       colour(lit_here))
        (x0, y0), (x1, _) = start, end
        if centre[a][1] == centre[b][1]:
            if label:
                ax.text((x0 + x1) / 2, y0 + 0.1, short.get(label, label), ha="center", va="bottom", fontsize=size,
                        color=FORWARD_COLOUR, gid=f"op:{a}:{b}")
            ax.text((x0 + x1) / 2, back_end[1] - 0.1, str(step), ha="center", va="top", fontsize=size,
                    color=colour(lit_here), fontweight="bold", gid=f"step:{b}:{a}")
        else:
            (bx0, by0), (bx1, by1) = back_end, back_start
            ax.text((bx0 + bx1) / 2 + 0.1, (by0 + by1) / 2 - 0.1, str(step), ha="left", va="top", fontsize=size,
                    color=colour(lit_here), fontweight="bold", gid=f"step:{b}:{a}")
    ax.text(0.15, height - 0.1, "forward: values, shapes", ha="left", va="top", fontsize=size,
            color=FORWARD_COLOUR, gid="legend:forward")
    ax.text(width - 0.15, height - 0.1, "backward (dashed): dX = \u2202L/\u2202X, steps 1-5", ha="right",
            va="top", fontsize=size, color=BACKWARD_COLOUR, gid="legend:backward")
    if lit is None:
        ax.text(0.15, 0.1, "r = rowsum(dO \u2299 O)", ha="left", va="bottom", fontsize=size, color=BACKWARD_COLOUR,
                gid="note:r")
    else:
        a, b = _GRAPH_STEPS[lit]
        formula = formulas[(a, b)] + (", r = rowsum(dO \u2299 O)" if lit == 3 else "")
        ax.text(0.15, 0.1, f"step {lit}: {formula}", ha="left", va="bottom", fontsize=size,
                fontweight="bold", color=BACKWARD_COLOUR, gid="lit")
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
    p = softmax(s)  # (m,)
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
    figures.describe(fig, (
        f"Softmax Jacobian of one row of {m} scores ({', '.join(labels)}) with weights p = "
        f"[{', '.join(_format(x, decimals) for x in p)}]: J = diag(p) \u2212 p p\u1d40 is {m} \u00d7 {m}; "
        f"diagonal entries positive ({', '.join(_format(x, decimals) for x in np.diag(jac))}); {off_text}"
        "every row sums to 0.").replace("\u2212", "-"))
    return fig
