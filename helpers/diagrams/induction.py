"""Induction heads (notebook 12): ``induction_circuit``, the two-head circuit on a short sequence.

Layer 0's previous-token head writes each token's predecessor into the next
position; layer 1's induction head matches the key whose predecessor is the
query's token (K-composition) and copies that key's token as the prediction.
"""

from __future__ import annotations

import numpy as np

from .. import figures
from ._common import KEY_COLOUR, QUERY_COLOUR, _new_figure

__all__ = ["induction_circuit", "token_circuits"]


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


def token_circuits(matrices, titles, names, *, row_label, col_label):
    """Token-to-token matrices of a few heads side by side, each row's largest entry boxed.

    For a head's OV circuit (``W_E W_V W_O W_U``, rows: the token attended
    to, columns: the logit raised) a boxed diagonal means the head *copies*;
    for a QK circuit through a previous-token head (rows: the query's token,
    columns: the token before the key) it means the head *matches*, looking
    for the key whose predecessor is its own token.

    Parameters
    ----------
    matrices : sequence of array_like, each (V, V)
    titles : sequence of str
        One per matrix.
    names : sequence of str
        The V token names, for both axes.
    row_label, col_label : str
        What the rows and the columns are.

    Returns
    -------
    matplotlib.figure.Figure
        With a description (:func:`helpers.figures.describe`) giving, per
        panel, how many rows the diagonal wins and the mean of the diagonal
        and of the rest. Artists carry gids: ``circuit-image-k`` (the matrix
        of panel ``k``), ``circuit-winners-k`` (the boxes, one per row, at
        each row's largest entry).

    Raises
    ------
    ValueError
        If the matrices are not square with one row per name, or the
        titles do not match them in number.
    """
    mats = [np.asarray(m, dtype=float) for m in matrices]
    names = [str(t) for t in names]
    V = len(names)
    if not mats or any(m.shape != (V, V) for m in mats):
        raise ValueError(
            f"matrices must each have shape (V, V) = ({V}, {V}), one row per name: "
            f"got {[m.shape for m in mats]}"
        )
    if len(titles) != len(mats):
        raise ValueError(f"titles must give one title per matrix: got {len(titles)} for {len(mats)}")
    fig = _new_figure((3.0 * len(mats) + 0.4, 3.6))
    axes = fig.subplots(1, len(mats), squeeze=False)[0]
    parts = []
    for k, (ax, m, title) in enumerate(zip(axes, mats, titles)):
        lim = float(np.abs(m).max()) or 1.0
        ax.imshow(m, cmap="RdBu_r", vmin=-lim, vmax=lim, gid=f"circuit-image-{k}")
        winners = m.argmax(axis=1)
        wins = int((winners == np.arange(V)).sum())
        ax.scatter(winners, np.arange(V), marker="s", s=40, facecolors="none", edgecolors="black",
                   linewidths=1.2, gid=f"circuit-winners-{k}")
        ax.set_xticks(range(V), labels=names, fontsize=8)
        ax.set_yticks(range(V), labels=names, fontsize=8)
        ax.set_xlabel(col_label)
        if k == 0:
            ax.set_ylabel(row_label)
        ax.set_title(f"{title}\ndiagonal wins {wins} of {V} rows", fontsize=10)
        off = m[~np.eye(V, dtype=bool)]
        parts.append(f"{title}: the diagonal wins {wins} of {V} rows, diagonal mean "
                     f"{np.diag(m).mean():.2f} against {off.mean():.2f} elsewhere")
    fig.tight_layout()
    text = (f"{len(mats)} token-by-token matrices (rows: {row_label}; columns: {col_label}), "
            "red positive, blue negative, each row's largest entry boxed. " + "; ".join(parts) + ".")
    return figures.describe(fig, text)
