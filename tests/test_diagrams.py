"""Tests of helpers.diagrams: the pictures encode the right numbers, sizes and weights.

Each picture is read back through its artists (patches, lines, texts carry a
``gid``) and compared with an independent NumPy computation.
"""

import io
import math

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.text import Text

from helpers import diagrams, figures
from helpers.examples import load_example

MINUS = "\u2212"


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def softmax_rows(x):
    """Independent softmax along the last axis (no helper code)."""
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def artists(fig, prefix):
    """{gid: artist} of every artist in the figure whose gid starts with ``prefix``."""
    found = {}
    for artist in fig.findobj(lambda a: str(a.get_gid()).startswith(prefix)):
        found[artist.get_gid()] = artist
    return found


def number(text):
    return float(text.replace(MINUS, "-"))


def matrix_in(fig, name, shape):
    """The numbers written in the cells of box ``name``, as an array of ``shape``."""
    texts = artists(fig, f"value:{name}:")
    out = np.full(shape, np.nan)
    for gid, text in texts.items():
        i, j = map(int, gid.split(":")[2:])
        out[i, j] = number(text.get_text())
    return out


def render(fig):
    """Draw the figure (warnings, e.g. missing glyphs or bad mathtext, are errors here)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=50)
    return buffer.getvalue()


@pytest.fixture
def happy():
    ex = load_example("i_am_happy")
    return ex.inputs, ex.tokens


# ----------------------------------------------------------------------------- pipeline


def test_pipeline_boxes_are_sized_by_the_shapes():
    n, m, d_k, d_v = 2, 5, 4, 3
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(n, d_k)), rng.normal(size=(m, d_k)), rng.normal(size=(m, d_v))
    fig = diagrams.pipeline(q, k, v, (["a", "b"], list("vwxyz")))
    boxes = artists(fig, "box:")
    shapes = {"Q": (n, d_k), "K^T": (d_k, m), "scores": (n, m), "scaled": (n, m), "weights": (n, m),
              "V": (m, d_v), "out": (n, d_v)}
    assert set(boxes) == {f"box:{name}" for name in shapes}
    cells = []
    for name, (rows, cols) in shapes.items():
        box = boxes[f"box:{name}"]
        cells += [box.get_width() / cols, box.get_height() / rows]
        assert artists(fig, f"shape:{name}")[f"shape:{name}"].get_text() == f"({rows}, {cols})"
    np.testing.assert_allclose(cells, cells[0], rtol=1e-12)  # one cell size: width, height ∝ dims
    render(fig)


def test_pipeline_numbers_are_the_computation(happy):
    x, tokens = happy
    fig = diagrams.pipeline(x, x, x, tokens, decimals=3)
    scores = x @ x.T
    scaled = scores / np.sqrt(3)
    weights = softmax_rows(scaled)
    for name, expected in (("Q", x), ("K^T", x.T), ("scores", scores), ("scaled", scaled),
                           ("weights", weights), ("V", x), ("out", weights @ x)):
        np.testing.assert_allclose(matrix_in(fig, name, expected.shape), expected, atol=5e-4, err_msg=name)
    assert [artists(fig, f"token:Q:{i}")[f"token:Q:{i}"].get_text() for i in range(3)] == tokens
    assert [artists(fig, f"token:K^T:{j}")[f"token:K^T:{j}"].get_text() for j in range(3)] == tokens
    render(fig)


def test_pipeline_unscaled_has_no_division_stage(happy):
    x, tokens = happy
    fig = diagrams.pipeline(x, x, x, tokens, scale=False)
    assert "box:scaled" not in artists(fig, "box:")
    assert not any("\u221a" in t.get_text() for t in fig.axes[0].texts)
    np.testing.assert_allclose(matrix_in(fig, "weights", (3, 3)), softmax_rows(x @ x.T), atol=5e-3)


def test_pipeline_mask_blocks_cells(happy):
    x, tokens = happy
    mask = np.tril(np.ones((3, 3), dtype=bool))  # True = may attend
    fig = diagrams.pipeline(x, x, x, tokens, mask=mask, decimals=3)
    blocked = {tuple(map(int, gid.split(":")[2:])) for gid in artists(fig, "masked:weights:")}
    assert blocked == {tuple(ij) for ij in np.argwhere(~mask)}
    for name in ("scores", "scaled", "weights"):
        hatched = artists(fig, f"masked:{name}:")
        assert len(hatched) == (~mask).sum() and all(p.get_hatch() for p in hatched.values())
    scaled = np.where(mask, x @ x.T / np.sqrt(3), -np.inf)
    for i, j in np.argwhere(~mask):
        assert artists(fig, f"value:scaled:{i}:{j}")[f"value:scaled:{i}:{j}"].get_text() == f"{MINUS}\u221e"
    np.testing.assert_allclose(matrix_in(fig, "weights", (3, 3)), softmax_rows(scaled), atol=5e-4)
    render(fig)


def test_pipeline_large_matrices_have_no_numbers():
    x = np.arange(16.0).reshape(8, 2) / 10
    fig = diagrams.pipeline(x, x, x)
    assert artists(fig, "value:") == {}
    assert len(artists(fig, "box:")) == 7


def test_pipeline_very_large_matrices_are_pictures():
    n = 20
    x = np.linspace(-1, 1, 2 * n).reshape(n, 2)
    mask = np.tril(np.ones((n, n), dtype=bool))
    fig = diagrams.pipeline(x, x, x, mask=mask)
    images = artists(fig, "cells:")
    assert set(images) == {"cells:scores", "cells:scaled", "cells:weights"}  # the (n, 2) ones stay cells
    colours = images["cells:weights"].get_array()  # (n, n, 4)
    grey = np.all(np.isclose(colours[..., :3], 217 / 255), axis=-1)
    assert np.array_equal(grey, ~mask)  # exactly the blocked cells are grey
    boxes = artists(fig, "box:")
    assert boxes["box:weights"].get_width() == pytest.approx(n / 2 * boxes["box:Q"].get_width())


def test_pipeline_token_labels_are_literal(happy):
    x, _ = happy
    tokens = ["$5", "$x^2$", "a_b"]
    fig = diagrams.pipeline(x, x, x, tokens)
    labels = artists(fig, "token:Q:")
    assert [labels[f"token:Q:{i}"].get_text() for i in range(3)] == tokens
    assert not any(t.get_parse_math() for t in labels.values())
    render(fig)


def test_pipeline_is_deterministic(happy):
    x, tokens = happy
    assert render(diagrams.pipeline(x, x, x, tokens)) == render(diagrams.pipeline(x, x, x, tokens))


# The boxes each step of the lesson computes (step 2, the division, only when scaled).
STEP_BOXES = {1: {"Q", "K^T", "scores"}, 2: {"scaled"}, 3: {"weights"}, 4: {"V", "out"}}


def step_of(gid, order):
    """The step an artist belongs to, from its gid alone: an operator drawn after box
    ``order[i]`` belongs to the step of ``order[i + 1]``, the box it leads to."""
    kind, _, rest = gid.partition(":")
    name = "weights" if kind == "note" else rest.split(":")[0]
    if kind in ("op", "arrow"):
        name = order[order.index(name) + 1]
    return next(step for step, boxes in STEP_BOXES.items() if name in boxes)


@pytest.mark.parametrize("lit", [1, 2, 3, 4])
def test_pipeline_lights_one_step_and_greys_the_others(happy, lit):
    x, tokens = happy
    fig = diagrams.pipeline(x, x, x, tokens, lit=lit)
    order = ["Q", "K^T", "scores", "scaled", "weights", "V", "out"]
    drawn = fig.axes[0].patches + fig.axes[0].texts
    assert len(drawn) > 50
    lit_names = set()
    for artist in drawn:
        gid = str(artist.get_gid())
        alpha = artist.get_alpha()
        if step_of(gid, order) == lit:
            assert alpha in (None, 1.0), (gid, alpha)
            if gid.startswith("box:"):
                lit_names.add(gid[4:])
        else:
            assert alpha is not None and alpha <= 0.2, (gid, alpha)
    assert lit_names == STEP_BOXES[lit]
    # the numbers stay those of the computation, lit or not
    expected = softmax_rows(x @ x.T / math.sqrt(x.shape[1]))
    np.testing.assert_allclose(matrix_in(fig, "weights", (3, 3)), expected, atol=0.006)
    step_name = {1: "scores QK\u1d40", 2: "divide by \u221ad_k", 3: "softmax of each row", 4: "weights times V"}[lit]
    assert f"Step {lit} ({step_name}) is drawn in full; the other steps are greyed out." in figures.description(fig)
    render(fig)


def test_pipeline_unlit_draws_everything_in_full(happy):
    x, tokens = happy
    fig = diagrams.pipeline(x, x, x, tokens)
    assert all(a.get_alpha() in (None, 1.0) for a in fig.axes[0].patches + fig.axes[0].texts)
    assert "greyed" not in figures.description(fig)


def test_pipeline_lit_softmax_unscaled(happy):
    x, tokens = happy
    fig = diagrams.pipeline(x, x, x, tokens, scale=False, lit=3)
    faded = {str(a.get_gid()) for a in fig.axes[0].patches + fig.axes[0].texts if a.get_alpha() is not None}
    assert "arrow:scores" not in faded  # unscaled, the softmax arrow leads from the scores
    assert "box:scores" in faded and "box:weights" not in faded


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((np.ones(3), np.ones((3, 3)), np.ones((3, 3))), {}, r"q must be 2-d: got shape \(3,\)"),
        ((np.ones((3, 2)), np.ones((3, 3)), np.ones((3, 3))), {}, r"same width d_k.*q.shape=\(3, 2\)"),
        ((np.ones((3, 2)), np.ones((3, 2)), np.ones((4, 2))), {}, r"same length m.*v.shape=\(4, 2\)"),
        ((np.ones((3, 2)),) * 3, {"tokens": ["a", "b"]}, r"tokens must hold 3 labels: got 2"),
        ((np.ones((2, 2)), np.ones((3, 2)), np.ones((3, 2))), {"tokens": ["a", "b"]}, r"must be a pair"),
        ((np.ones((3, 2)),) * 3, {"mask": np.ones((3, 2), bool)}, r"mask must have .* \(3, 3\): got shape \(3, 2\)"),
        ((np.ones((3, 2)),) * 3, {"mask": np.ones((3, 3))}, r"mask must be boolean"),
        ((np.ones((3, 2)),) * 3, {"lit": 5}, r"lit must be a step 1, 2, 3 or 4 .*got 5"),
        ((np.ones((3, 2)),) * 3, {"lit": True}, r"lit must be a step"),
        ((np.ones((3, 2)),) * 3, {"lit": 2, "scale": False}, r"lit=2 .* scale=False"),
    ],
)
def test_pipeline_rejects_bad_input(args, kwargs, message):
    with pytest.raises(ValueError, match=message):
        diagrams.pipeline(*args, **kwargs)


# ----------------------------------------------------------------------------- head view


def lines_of(ax, n, m):
    found = {line.get_gid(): line for line in ax.lines if str(line.get_gid()).startswith("line:")}
    return [[found[f"line:{i}:{j}"] for j in range(m)] for i in range(n)]


def test_head_view_lines_follow_the_weights(happy):
    x, tokens = happy
    weights = softmax_rows(x @ x.T / np.sqrt(3))
    fig = diagrams.head_view(weights, tokens)
    (ax,) = fig.axes
    lines = lines_of(ax, 3, 3)
    assert len([a for a in ax.lines if str(a.get_gid()).startswith("line:")]) == 9
    width = np.array([[line.get_linewidth() for line in row] for row in lines])
    alpha = np.array([[line.get_alpha() for line in row] for row in lines])
    np.testing.assert_allclose(width, diagrams.LINE_WIDTH * weights)  # width ∝ weight
    w, a = weights.ravel(), alpha.ravel()
    heavier = w[:, None] > w[None, :] + 1e-12  # opacity grows strictly with the weight
    assert np.all(a[:, None] > a[None, :] - ~heavier) and heavier.any()
    assert alpha.min() > 0 and alpha.max() <= 1
    for i in range(3):  # each line joins query i (left) to key j (right)
        for j in range(3):
            (x0, x1), (y0, y1) = lines[i][j].get_data()
            assert x0 < x1 and y0 == lines[i][0].get_ydata()[0] and y1 == lines[0][j].get_ydata()[1]
    render(fig)


def test_head_view_one_panel_per_head():
    rng = np.random.default_rng(1)
    weights = softmax_rows(rng.normal(size=(3, 4, 5)))
    fig = diagrams.head_view(weights, list("abcd"), list("vwxyz"), title="three heads")
    assert len(fig.axes) == 3
    for h, ax in enumerate(fig.axes):
        width = np.array([[line.get_linewidth() for line in row] for row in lines_of(ax, 4, 5)])
        np.testing.assert_allclose(width, diagrams.LINE_WIDTH * weights[h])
        assert ax.get_title() == f"head {h + 1}"
    render(fig)


def test_head_view_highlight_and_given_axes():
    weights = np.array([[0.7, 0.3], [0.1, 0.9]])
    fig, (left, right) = plt.subplots(1, 2)
    assert diagrams.head_view(weights, ["a", "b"], ax=right, highlight=1) is fig
    assert not left.lines and len(right.lines) == 4
    lines = lines_of(right, 2, 2)
    assert all(line.get_color() == diagrams.QUERY_COLOUR for line in lines[1])
    assert max(line.get_alpha() for line in lines[0]) < min(line.get_alpha() for line in lines[1])
    written = [right.texts[k].get_text() for k in range(len(right.texts)) if right.texts[k].get_gid() == "weight:1"]
    assert written == ["0.90"]


def test_head_view_weight_labels_overlap_no_token_label():
    """16 keys in a quarter of a slide-wide figure (12's head view): each weight sits beside its key."""
    rng = np.random.default_rng(0)
    weights = rng.dirichlet(np.ones(16), size=(16,))
    tokens = [f"{c}{i}" for i, c in enumerate("GLNBLMPKHCMPKHCM")]
    fig, axes = plt.subplots(1, 4, figsize=(10, 4.6), layout="constrained")
    diagrams.head_view(weights, tokens, ax=axes[2], highlight=14)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    texts = {t.get_gid(): t.get_window_extent(renderer) for t in axes[2].texts if t.get_gid()}
    keys = [texts[f"key:{j}"] for j in range(16)]
    for j in range(16):
        label = texts[f"weight:{j}"]
        assert not [k for k, box in enumerate(keys) if box.overlaps(label)], j
        assert abs(label.y0 + label.height / 2 - (keys[j].y0 + keys[j].height / 2)) < 2  # on its key's line
    plt.close(fig)


@pytest.mark.parametrize(
    ("weights", "tokens", "kwargs", "message"),
    [
        (np.ones(3) / 3, ["a", "b", "c"], {}, r"weights must be 2-d \(n, m\) or 3-d \(h, n, m\): got shape \(3,\)"),
        (np.ones((2, 2)) / 2, ["a", "b", "c"], {}, r"query_tokens .* must hold 2 labels: got 3"),
        (np.ones((2, 3)) / 3, ["a", "b"], {}, r"key_tokens .* must hold 3 labels: got 2"),
        (np.ones((2, 2)) / 2, ["a", "b"], {"highlight": 2}, r"highlight must be a query index from 0 to 1"),
        (np.full((2, 2), 2.0), ["a", "b"], {}, r"between 0 and 1"),
    ],
)
def test_head_view_rejects_bad_input(weights, tokens, kwargs, message):
    with pytest.raises(ValueError, match=message):
        diagrams.head_view(weights, tokens, **kwargs)


def test_head_view_needs_one_axes_per_head():
    _, ax = plt.subplots()
    with pytest.raises(ValueError, match="one Axes per head: weights have 2 heads, got 1"):
        diagrams.head_view(np.ones((2, 2, 2)) / 2, ["a", "b"], ax=ax)


# ----------------------------------------------------------------------------- vectors in the plane


def test_vectors_2d_annotates_dot_products_and_angles():
    ex = load_example("journey")
    q, keys = ex.q[1], ex.k
    weights = softmax_rows(keys @ q / np.sqrt(2))
    fig = diagrams.vectors_2d(keys, ex.tokens, query=q, weights=weights, query_label="journey")
    plane, table = fig.axes
    dots = artists(fig, "dot:")
    angles = artists(fig, "angle:")
    cosines = keys @ q / (np.linalg.norm(keys, axis=1) * np.linalg.norm(q))
    for j in range(len(keys)):
        assert number(dots[f"dot:{j}"].get_text()) == pytest.approx(keys[j] @ q, abs=0.005)
        degrees = float(angles[f"angle:{j}"].get_text().rstrip("\u00b0"))
        assert degrees == pytest.approx(math.degrees(math.acos(cosines[j])), abs=0.5)
    arrows = artists(fig, "arrow:")  # each arrow ends at its vector
    for j, key in enumerate(keys):
        np.testing.assert_allclose(arrows[f"arrow:{j}"].xy, key)
    np.testing.assert_allclose(arrows["arrow:query"].xy, q)
    bars = artists(fig, "bar:")
    lengths = np.array([bars[f"bar:{j}"].get_width() for j in range(len(keys))])
    np.testing.assert_allclose(lengths / lengths.max(), weights / weights.max())  # bar ∝ weight
    assert plane.get_aspect() == 1.0
    render(fig)


def test_vectors_2d_query_by_index_and_plane_alone():
    keys = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    fig = diagrams.vectors_2d(keys, ["cat", "sat", "mat"], query=2)
    assert len(fig.axes) == 2 and "arrow:query" not in artists(fig, "arrow:")
    assert [number(artists(fig, f"dot:{j}")[f"dot:{j}"].get_text()) for j in range(3)] == [1.0, 1.0, 2.0]
    angles = [artists(fig, f"angle:{j}")[f"angle:{j}"].get_text() for j in range(3)]
    assert angles == ["45\u00b0", "45\u00b0", "0\u00b0"]
    arcs = artists(fig, "arc:")  # the angle to the query drawn as an arc (none for the query itself)
    assert sorted(arcs) == ["arc:0", "arc:1"]
    assert [arcs[f"arc:{j}"].theta2 - arcs[f"arc:{j}"].theta1 for j in range(2)] == pytest.approx([45, 45])
    fig = diagrams.vectors_2d(keys, ["cat", "sat", "mat"])
    assert len(fig.axes) == 1 and artists(fig, "dot:") == {}
    render(fig)


def label_boxes(fig):
    """Window extents (pixels) of the arrows' labels in the plane, once the figure is drawn."""
    fig.canvas.draw()  # the words only: an Annotation's own extent also covers its leader line
    return {gid: Text.get_window_extent(text) for gid, text in artists(fig, "label:").items()}


@pytest.mark.parametrize(
    ("keys", "labels", "kwargs"),
    [
        ("journey", None, {"query_label": "journey"}),  # notebook 04: seven crowded tips
        ("journey", None, {}),
        (np.array([[0.6, 0.1], [2.0, 3.0]]), ["aligned", "long"], {"query": np.array([1.0, 0.0])}),  # notebook 05
        (np.array([[0.6, 0.1], [2.0, 3.0]]), ["aligned", "long"], {"query": np.array([1.0, 0.0]), "query_label": "q"}),
        (np.array([[1.0, 0.2], [0.0, 1.0], [-1.0, 0.3]]), ["keyword", "b", "c"],
         {"query": np.array([1.05, 0.45]), "query_label": "the query"}),  # tips apart, labels wide
        (np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]), ["same", "place", "up"], {"query": 2}),  # coincident tips
        (np.array([[0.75, 0.0], [1.0, 0.04]]), ["a very long label", "b"], {"query": 1}),  # a long word reaches b
    ],
)
def test_vectors_2d_labels_never_overlap(keys, labels, kwargs):
    if isinstance(keys, str):
        ex = load_example(keys)
        keys, labels, kwargs = ex.k, ex.tokens, {"query": ex.q[1], **kwargs}
    fig = diagrams.vectors_2d(keys, labels, **kwargs)
    boxes = label_boxes(fig)
    expected = len(keys) + (0 if isinstance(kwargs.get("query"), int) else 1)
    assert len(boxes) == expected
    gids = sorted(boxes)
    for a, first in enumerate(gids):
        for second in gids[a + 1:]:
            assert not boxes[first].overlaps(boxes[second]), (first, second, boxes[first], boxes[second])
    arrows = artists(fig, "arrow:")  # each label still points at (or sits at) its own arrow's tip
    for gid, text in artists(fig, "label:").items():
        np.testing.assert_allclose(text.xy, arrows["arrow:" + gid.split(":")[1]].xy)


@pytest.mark.parametrize(
    ("vectors", "labels", "kwargs", "message"),
    [
        (np.ones((3, 3)), list("abc"), {}, r"vectors must have shape \(m, 2\).*got shape \(3, 3\)"),
        (np.ones(2), ["a"], {}, r"vectors must be 2-d: got shape \(2,\)"),
        (np.ones((3, 2)), list("ab"), {}, r"labels .* must hold 3 labels: got 2"),
        (np.ones((3, 2)), list("abc"), {"query": np.ones(3)}, r"query must be .* got shape \(3,\)"),
        (np.ones((3, 2)), list("abc"), {"query": 3}, r"query index must be from 0 to 2"),
        (np.ones((3, 2)), list("abc"), {"weights": np.ones(2) / 2},
         r"weights must be one row .*\(3,\): got shape \(2,\)"),
    ],
)
def test_vectors_2d_rejects_bad_input(vectors, labels, kwargs, message):
    with pytest.raises(ValueError, match=message):
        diagrams.vectors_2d(vectors, labels, **kwargs)


# ----------------------------------------------------------------------------- soft lookup


def test_soft_lookup_returns_the_blend_and_the_hard_value():
    values = np.array([[0.1, 0.2], [0.4, 0.5], [0.7, 0.8]])
    weights = np.array([0.2, 0.3, 0.5])
    fig = diagrams.soft_lookup("happy", ["I", "am", "happy"], values, weights, hard_index=2)
    hard, soft = fig.axes
    result = {ax: next(t.get_text() for t in ax.texts if t.get_gid() == "result") for ax in (hard, soft)}
    assert result[hard] == "[0.70, 0.80]"
    blend = weights @ values
    assert result[soft] == f"[{blend[0]:.2f}, {blend[1]:.2f}]"
    widths = [next(line for line in soft.lines if line.get_gid() == f"line:{j}").get_linewidth() for j in range(3)]
    assert np.all(np.diff(widths) > 0)  # the weights increase, so must the line widths
    hard_widths = [next(line for line in hard.lines if line.get_gid() == f"line:{j}").get_linewidth() for j in range(3)]
    assert hard_widths[2] > 10 * max(hard_widths[:2])
    render(fig)


def test_soft_lookup_scalar_values_one_panel():
    fig = diagrams.soft_lookup("fruit?", ["apple", "car", "pear"], [1.0, 5.0, 2.0], [0.6, 0.1, 0.3])
    (ax,) = fig.axes
    assert next(t.get_text() for t in ax.texts if t.get_gid() == "result") == f"{0.6 + 0.5 + 0.6:.2f}"


def test_soft_lookup_fits_a_slide_and_no_line_meets_a_text():
    ex = load_example("cat_sat_mat")
    keys = ["key 0", "key 1", "key 2"]
    values = np.array([[-0.45, -0.22, -2.02], [-0.35, -0.28, -0.67], [0.96, -0.20, 0.02]])  # notebook 06
    for labels, kw in ((keys, {"hard_index": 1}), (ex.tokens, {"hard_index": 2}), (keys, {})):
        fig = diagrams.soft_lookup("noisy key 1", labels, values, [0.32, 0.46, 0.22], **kw)
        width, height = fig.get_size_inches()
        assert height <= 4.2 and width <= 12.0  # a 16:9 slide holds it under a heading
        fig.canvas.draw()
        for ax in fig.axes:
            texts = [t for t in ax.texts if t.get_gid() and t.get_gid() != "title"]
            for line in ax.lines:
                box = line.get_window_extent()
                for text in texts:
                    assert not box.overlaps(text.get_window_extent()), (line.get_gid(), text.get_gid())
            values_right = max(t.get_window_extent().x1 for t in ax.texts if str(t.get_gid()).startswith("value:"))
            assert all(line.get_window_extent().x0 > values_right
                       for line in ax.lines if line.get_gid().startswith("blend:"))
        plt.close(fig)


@pytest.mark.parametrize(
    ("keys", "values", "weights", "kwargs", "message"),
    [
        (["a", "b"], [1.0, 2.0], [0.5, 0.6], {}, r"sum to 1"),
        (["a", "b"], [1.0, 2.0, 3.0], [0.5, 0.5], {}, r"values must have shape .* m=2 keys: got shape \(3,\)"),
        (["a", "b"], [1.0, 2.0], [1.0], {}, r"weights must be one row .*\(2,\): got shape \(1,\)"),
        (["a", "b"], [1.0, 2.0], [0.5, 0.5], {"hard_index": 2}, r"hard_index must be a key index from 0 to 1"),
    ],
)
def test_soft_lookup_rejects_bad_input(keys, values, weights, kwargs, message):
    with pytest.raises(ValueError, match=message):
        diagrams.soft_lookup("q", keys, values, weights, **kwargs)


# ----------------------------------------------------------------------------- pipeline on a slide (issue 32)

SLIDE_ROW = {1: {"Q", "K^T", "scores"}, 2: {"scores", "scaled"}, 3: {"scaled", "weights"}, 4: {"weights", "V", "out"}}


def slide_pipeline(*args, **kwargs):
    from helpers import style

    with style.medium("slide"):
        fig = diagrams.pipeline(*args, **kwargs)
        style.fit_for_slide(fig)
    return fig


def boxes_of(fig):
    return {gid[4:] for gid in artists(fig, "box:")}


@pytest.mark.parametrize("lit", [1, 2, 3, 4])
def test_pipeline_on_a_slide_shows_the_lit_step_with_readable_numbers(happy, lit):
    from helpers import style

    x, tokens = happy
    fig = slide_pipeline(x, x, x, tokens, lit=lit)
    assert boxes_of(fig) == SLIDE_ROW[lit]
    assert style.overlapping_texts(fig) == []
    texts = [t for t in fig.axes[0].texts if t.get_visible()]
    assert min(t.get_fontsize() for t in texts) >= style.SLIDE_MIN_PT
    # every cell of the boxes shown holds its number, the computation's
    values = [t for t in texts if str(t.get_gid()).startswith("value:")]
    assert len(values) == 9 * len(SLIDE_ROW[lit])
    if lit >= 3:
        expected = softmax_rows(x @ x.T / math.sqrt(x.shape[1]))
        np.testing.assert_allclose(matrix_in(fig, "weights", (3, 3)), expected, atol=0.006)
    assert fig.get_size_inches()[0] <= style.SLIDE_SIZE_IN[0] + 1e-9
    assert fig.get_size_inches()[1] <= style.SLIDE_SIZE_IN[1] + 1e-9
    assert f"Step {lit}" in figures.description(fig) and "is shown" in figures.description(fig)
    render(fig)


@pytest.mark.parametrize("shape", [(3, 3, 3), (6, 6, 3), (2, 5, 4), (3, 7, 4)])
def test_pipeline_on_a_slide_unlit_has_no_collisions(shape):
    from helpers import style

    n, m, d = shape
    rng = np.random.default_rng(1)
    q, k, v = rng.normal(size=(n, d)), rng.normal(size=(m, d)), rng.normal(size=(m, d))
    tokens = ([f"q{i}" for i in range(n)], [f"key{j}" for j in range(m)])
    mask = np.tril(np.ones((n, m), bool), m - n) if n < m else None
    fig = slide_pipeline(q, k, v, tokens, mask=mask, decimals=1 if mask is not None else 2)
    assert boxes_of(fig) == {"Q", "K^T", "scores", "scaled", "weights", "V", "out"}
    assert style.overlapping_texts(fig) == []
    assert min(style.cap_heights(fig)) >= style.SLIDE_MIN_PT * style.SLIDE_DPI / 72 * style.CAP_RATIO - 0.1
    for artist in artists(fig, "value:").values():  # the few numbers left sit inside their cells
        assert artist.get_visible()
    render(fig)


def test_pipeline_on_a_slide_leaves_the_notebook_figure_alone(happy):
    x, tokens = happy
    fig = diagrams.pipeline(x, x, x, tokens, lit=2)
    assert boxes_of(fig) == {"Q", "K^T", "scores", "scaled", "weights", "V", "out"}
    assert "greyed out" in figures.description(fig)


def test_soft_lookup_on_a_slide_keeps_the_weights_off_the_key_boxes():
    from helpers import style

    values = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, 0.5]])
    weights = np.array([0.09, 0.67, 0.24])
    with style.medium("slide"):
        fig = diagrams.soft_lookup("bank", ["the", "river", "bank"], values, weights, hard_index=2)
        style.fit_for_slide(fig)
    fig.canvas.draw()
    assert style.overlapping_texts(fig) == []
    width, height = fig.get_size_inches()
    assert width <= style.SLIDE_SIZE_IN[0] and height <= style.SLIDE_SIZE_IN[1]
    for ax in fig.axes:
        texts = {str(t.get_gid()): t for t in ax.texts}
        for j in range(3):
            weight = texts[f"weight:{j}"].get_window_extent()
            key = texts[f"key:{j}"]
            box = key.get_bbox_patch().get_window_extent()
            value = texts[f"value:{j}"].get_window_extent()
            assert weight.x1 < box.x0, (j, weight.x1, box.x0)  # the weight ends before its key's box
            assert box.x1 < value.x0
        caption = texts["caption"].get_window_extent()
        assert caption.x1 <= fig.bbox.x1  # not cut at the right edge
    render(fig)


@pytest.mark.parametrize("weights", [None, [0.21, 0.21, 0.58]])
def test_vectors_2d_on_a_slide_keeps_its_table_and_ticks_apart(weights):
    from helpers import style

    x = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    with style.medium("slide"):
        fig = diagrams.vectors_2d(x, ["cat", "sat", "mat"], query=2, weights=weights)
        style.fit_for_slide(fig)
    assert style.overlapping_texts(fig) == []
    table = fig.axes[1]
    assert table.get_xticks().size == 0 and table.get_yticks().size == 0  # an axes drawn off measures no ticks
    render(fig)


def test_kernel_view_on_a_slide_drops_the_bar_numbers_and_keeps_apart():
    from helpers import style

    x = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    with style.medium("slide"):
        fig = diagrams.kernel_view(x[0], x, ["cat", "sat", "mat"], query_label="cat")
        style.fit_for_slide(fig)
    assert style.overlapping_texts(fig) == []
    assert all(not t.get_text()[0].isdigit() and not t.get_text().startswith(MINUS)
               for ax in fig.axes for t in ax.texts)  # no number written on a bar
    render(fig)


def test_projection_flow_on_a_slide_names_the_features_once_and_keeps_apart():
    from helpers import style

    w_q = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0], [0.0, 0.0]])
    w_v = np.array([[0.0], [0.0], [0.0], [1.0]])
    features = ["noun", "adjective", "pronoun", "animal"]
    with style.medium("slide"):
        fig = diagrams.projection_flow(w_q, w_q, w_v, features, q_names=["asks: noun", "asks: adjective"],
                                       k_names=["says: noun", "says: adjective"], v_names=["animal"])
        style.fit_for_slide(fig)
    assert style.overlapping_texts(fig) == []
    written = [t.get_text() for t in fig.axes[0].texts]
    assert written.count("adjective") == 1 and written.count("animal") == 2  # a feature once, "animal" also an output
    assert min(t.get_fontsize() for t in fig.axes[0].texts) >= style.SLIDE_MIN_PT
    render(fig)


def test_vectors_2d_on_a_slide_spaces_a_column_of_labels():
    from helpers import style

    rng = np.random.default_rng(0)
    keys = np.abs(rng.normal(size=(6, 2)))
    tokens = ["Your", "journey", "starts", "with", "one", "step"]
    with style.medium("slide"):
        fig = diagrams.vectors_2d(keys, tokens, query=keys[1] * 1.1, query_label="journey (query)")
        style.fit_for_slide(fig)
    assert style.overlapping_texts(fig) == []
    labels = artists(fig, "label:")
    assert len(labels) == 7 and all("\n" not in t.get_text() for t in labels.values())  # none had to be wrapped
    assert len(artists(fig, "leader:label:")) == 7
    render(fig)
