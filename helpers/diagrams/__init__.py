"""Pictures of the attention mechanism itself, for lessons and slides.

The pictures, each returned as a matplotlib ``Figure``:

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
``projection_flow(w_q, w_k, w_v, features)``
    Named input features flowing through W_q, W_k and W_v: a line per nonzero
    entry, as wide as the entry, so a hand-written projection can be read.
``soft_lookup(query_label, keys, values, weights)``
    Attention as a soft dictionary lookup: a table of keys and their values;
    a hard lookup picks exactly one row, attention takes a bit of every row
    (line widths show how much) and returns the blend sum_j w_j v_j.
``kernel_view(query, keys, labels)``
    Why a dot product and not a distance: for each key the bars of q·k,
    -|q|^2 / 2 (the same for every key), -|k|^2 / 2 and their sum
    -|q - k|^2 / 2, beside the softmax weights of q·k and of -|q - k|^2 / 2.

Conventions: the figures are made with pyplot, so a notebook shows them by
itself; assign the result (``fig = ...``) or end the line with ``;`` to show
a picture once. Token labels are drawn literally (a ``$`` in a token is not
read as mathematics). Everything is deterministic. Imports NumPy, matplotlib
and :mod:`helpers.attention` only (and, for the figures' descriptions and
heatmaps, :mod:`helpers.figures` and :mod:`helpers.plots`).

The pictures live in one module per topic; every one is imported here, so
``from helpers import diagrams`` and ``diagrams.head_view`` work whichever
module a picture lives in::

    walkthrough   pipeline, head_view, vectors_2d, soft_lookup, projection_flow (notebooks 01-05)
    gradients     score_spread, saturation, jacobian_pile (08: why scale);
                  backward_graph, softmax_jacobian (09: gradients by hand)
    masks_heads   averaging_to_attention, mask_and_weights, cross_attention,
                  heads_split_merge, head_patterns (10: masks, cross-attention,
                  multi-head)
    memory        tiled_steps, flash_loop_orders (11: memory-efficient attention)
    induction     induction_circuit, token_circuits (12: induction heads)
    _common       the shared colours, number format and argument checks (private)
"""

# Besides the pictures, their constants (LINE_WIDTH, QUERY_COLOUR, ...): not in __all__, but public
# names of the single module this package replaced (the tests read some), so importable here too.
from ._common import (
    FILLS as FILLS,
)
from ._common import (
    KEY_COLOUR as KEY_COLOUR,
)
from ._common import (
    MINUS as MINUS,
)
from ._common import (
    QUERY_COLOUR as QUERY_COLOUR,
)
from ._common import (
    QUERY_TEXT_COLOUR as QUERY_TEXT_COLOUR,
)
from .gradients import (
    BACKWARD_COLOUR as BACKWARD_COLOUR,
)
from .gradients import (
    FORWARD_COLOUR as FORWARD_COLOUR,
)
from .gradients import (
    LUMINANCE as LUMINANCE,
)
from .gradients import (
    backward_graph,
    jacobian_pile,
    saturation,
    score_spread,
    softmax_jacobian,
)
from .induction import induction_circuit, token_circuits
from .masks_heads import (
    averaging_to_attention,
    cross_attention,
    head_patterns,
    heads_split_merge,
    mask_and_weights,
)
from .memory import SLOW_FILL as SLOW_FILL
from .memory import SRAM_FILLS as SRAM_FILLS
from .memory import flash_loop_orders, tiled_steps
from .walkthrough import (
    CELLS_MAX as CELLS_MAX,
)
from .walkthrough import (
    LABEL_PITCH as LABEL_PITCH,
)
from .walkthrough import (
    LINE_WIDTH as LINE_WIDTH,
)
from .walkthrough import (
    LOOKUP_HEIGHT as LOOKUP_HEIGHT,
)
from .walkthrough import (
    LOOKUP_PITCH as LOOKUP_PITCH,
)
from .walkthrough import (
    NUMBERS_MAX as NUMBERS_MAX,
)
from .walkthrough import (
    head_view,
    kernel_view,
    pipeline,
    projection_flow,
    soft_lookup,
    vectors_2d,
)

__all__ = [
    "pipeline",
    "head_view",
    "vectors_2d",
    "soft_lookup",
    "projection_flow",
    "backward_graph",
    "softmax_jacobian",
    "tiled_steps",
    "flash_loop_orders",
    "induction_circuit",
    "token_circuits",
    "averaging_to_attention",
    "score_spread",
    "heads_split_merge",
    "head_patterns",
    "mask_and_weights",
    "cross_attention",
    "saturation",
    "jacobian_pile",
    "kernel_view",
]
