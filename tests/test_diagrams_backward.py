"""Tests of the diagrams of notebook 09: the backward graph and the softmax Jacobian.

Each picture is read back through its artists (every one carries a ``gid``) and
compared with the shapes it was given or with an independent NumPy computation.
"""

import io

import matplotlib.pyplot as plt
import numpy as np
import pytest

from helpers import diagrams, figures

MINUS = "\u2212"


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def artists(fig, prefix):
    """{gid: artist} of every artist in the figure whose gid starts with ``prefix``."""
    return {a.get_gid(): a for a in fig.findobj(lambda a: str(a.get_gid()).startswith(prefix))}


def number(text):
    return float(text.replace(MINUS, "-"))


def render(fig):
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=50)
    return buffer.getvalue()


# ----------------------------------------------------------------------------- backward graph

SHAPES = {"Q": ("n", "d_k"), "K": ("m", "d_k"), "V": ("m", "d_v"), "S": ("n", "m"), "P": ("n", "m"),
          "O": ("n", "d_v")}


@pytest.mark.parametrize("n, m, d_k, d_v", [(2, 2, 4, 2), (3, 5, 7, 11), (1, 6, 64, 1)])
def test_backward_graph_shapes_are_the_given_ones(n, m, d_k, d_v):
    fig = diagrams.backward_graph(n, m, d_k, d_v)
    size = {"n": n, "m": m, "d_k": d_k, "d_v": d_v}
    shapes = artists(fig, "shape:")
    grads = artists(fig, "grad:")
    assert set(shapes) == {f"shape:{x}" for x in SHAPES} and set(grads) == {f"grad:{x}" for x in SHAPES}
    for name, symbolic in SHAPES.items():
        expected = tuple(size[s] for s in symbolic)
        assert shapes[f"shape:{name}"].get_text() == str(expected)
        # the gradient has the shape of its node
        assert grads[f"grad:{name}"].get_text() == f"d{name} {expected}"
        assert artists(fig, f"letters:{name}")[f"letters:{name}"].get_text() == "(" + ", ".join(symbolic) + ")"
    text = figures.description(fig)
    assert f"n = {n} queries, m = {m} keys, d_k = {d_k}, d_v = {d_v}" in text
    assert f"dQ {(n, d_k)}" in text and f"dS {(n, m)}" in text
    render(fig)


def test_backward_graph_arrows_run_both_ways():
    fig = diagrams.backward_graph(2, 3, 4, 5)
    forward, backward = artists(fig, "forward:"), artists(fig, "backward:")
    edges = {("Q", "S"), ("K", "S"), ("S", "P"), ("P", "O"), ("V", "O")}
    assert set(forward) == {f"forward:{a}:{b}" for a, b in edges}
    assert set(backward) == {f"backward:{b}:{a}" for a, b in edges}
    for a, b in edges:
        (x0, _), (x1, _) = forward[f"forward:{a}:{b}"]._posA_posB
        (u0, _), (u1, _) = backward[f"backward:{b}:{a}"]._posA_posB
        assert x1 > x0  # forward: left to right
        assert u1 < u0  # backward: right to left
        formula = artists(fig, f"formula:{b}:{a}")[f"formula:{b}:{a}"].get_text()
        assert formula.startswith(f"d{a} = ")
    # forward arrows lie above their backward twins on the same row
    (_, y_forward), _ = forward["forward:S:P"]._posA_posB
    (_, y_backward), _ = backward["backward:P:S"]._posA_posB
    assert y_forward > y_backward


# the five steps in the order the backward pass runs them: (gradient made, gradient read)
STEPS = {1: ("V", "O"), 2: ("P", "O"), 3: ("S", "P"), 4: ("Q", "S"), 5: ("K", "S")}


@pytest.mark.parametrize("lit", [1, 2, 3, 4, 5])
def test_backward_graph_lights_one_step_and_greys_the_others(lit):
    from matplotlib.colors import to_hex

    full = diagrams.backward_graph(2, 3, 4, 5)
    fig = diagrams.backward_graph(2, 3, 4, 5, lit=lit)
    red = to_hex(artists(full, "formula:O:V")["formula:O:V"].get_color())
    made, read = STEPS[lit]
    for step, (a, b) in STEPS.items():
        arrow = artists(fig, f"backward:{b}:{a}")[f"backward:{b}:{a}"]
        formula = artists(fig, f"formula:{b}:{a}")[f"formula:{b}:{a}"]
        twin = artists(full, f"formula:{b}:{a}")[f"formula:{b}:{a}"]
        assert formula.get_text() == twin.get_text()  # same formula, only its colour changes
        lit_here = step == lit
        assert (to_hex(arrow.get_edgecolor()) == red) is lit_here
        assert (to_hex(formula.get_color()) == red) is lit_here
        assert (arrow.get_linewidth() > 2) is lit_here
    # only the gradient the step reads and the one it makes stay red
    reds = {gid.split(":")[1] for gid, t in artists(fig, "grad:").items() if to_hex(t.get_color()) == red}
    assert reds == {made, read}
    # the forward pass keeps its colours
    for gid, arrow in artists(fig, "forward:").items():
        assert to_hex(arrow.get_edgecolor()) == to_hex(artists(full, gid)[gid].get_edgecolor())
    label = artists(fig, "lit")["lit"].get_text()
    assert label.startswith(f"step {lit} of 5: d{made} = ")
    text = figures.description(fig)
    shapes = {"Q": (2, 4), "K": (3, 4), "V": (3, 5), "S": (2, 3), "P": (2, 3), "O": (2, 5)}
    assert f"Step {lit} of 5 is lit" in text
    assert f"from d{read} {shapes[read]} to d{made} {shapes[made]}" in text
    assert "lit" not in figures.description(full) and artists(full, "lit") == {}
    render(fig)


@pytest.mark.parametrize("lit", [0, 6, 2.0, True, "1"])
def test_backward_graph_rejects_a_step_that_is_not_one_of_five(lit):
    with pytest.raises(ValueError, match="lit must be a step from 1 to 5"):
        diagrams.backward_graph(2, 3, 4, 5, lit=lit)


@pytest.mark.parametrize("args, message", [((0, 2, 4, 2), "n must be"), ((2, 2, 4.0, 2), "d_k must be"),
                                           ((2, True, 4, 2), "m must be"), ((2, 2, 4, -1), "d_v must be")])
def test_backward_graph_rejects_bad_sizes(args, message):
    with pytest.raises(ValueError, match=message):
        diagrams.backward_graph(*args)


# ----------------------------------------------------------------------------- softmax Jacobian


def jacobian_reference(scores):
    """diag(p) - p p^T with an independent softmax (no helper code)."""
    e = np.exp(scores - scores.max())
    p = e / e.sum()
    return p, np.diag(p) - np.outer(p, p)


@pytest.mark.parametrize("scores", [[1.0, 0.0], [2.0, 0.5, 0.0, -0.5], [0.3, -1.2, 4.0], [5.0]])
def test_softmax_jacobian_cells_are_the_matrix(scores):
    scores = np.array(scores)
    m = len(scores)
    fig = diagrams.softmax_jacobian(scores)
    p, jac = jacobian_reference(scores)
    cells = artists(fig, "cell:")
    assert len(cells) == m * m
    drawn = np.full((m, m), np.nan)
    for gid, text in cells.items():
        i, j = map(int, gid.split(":")[1:])
        drawn[i, j] = number(text.get_text())
    np.testing.assert_allclose(drawn, np.round(jac, 2), atol=1e-12)
    weights = [number(artists(fig, f"p:{j}")[f"p:{j}"].get_text()) for j in range(m)]
    np.testing.assert_allclose(weights, np.round(p, 2), atol=1e-12)
    # structure: positive diagonal, negative (or zero) off-diagonal, every row sum written as 0
    assert np.all(np.diag(drawn) >= 0)
    assert np.all(drawn[~np.eye(m, dtype=bool)] <= 0)
    sums = [artists(fig, f"rowsum:{i}")[f"rowsum:{i}"].get_text() for i in range(m)]
    assert sums == ["0.00"] * m
    text = figures.description(fig)
    assert f"one row of {m} scores" in text and "every row sums to 0" in text
    render(fig)


def test_softmax_jacobian_labels_and_decimals():
    fig = diagrams.softmax_jacobian([1.0, 0.0], ["cat", "sat$"], decimals=4)
    assert artists(fig, "label:row:1")["label:row:1"].get_text() == "sat$"
    assert artists(fig, "cell:0:0")["cell:0:0"].get_text() == "0.1966"
    assert artists(fig, "cell:0:1")["cell:0:1"].get_text() == f"{MINUS}0.1966"
    assert "(cat, sat$)" in figures.description(fig)
    render(fig)


@pytest.mark.parametrize("scores, labels, kwargs, message", [
    ([], None, {}, "non-empty"),
    ([1.0, np.inf], None, {}, "finite"),
    ([[1.0, 2.0]], None, {}, "1-d"),
    (np.zeros(9), None, {}, "at most 8"),
    ([1.0, 2.0], ["a"], {}, "labels must hold 2"),
    ([1.0, 2.0], None, {"decimals": 7}, "decimals"),
])
def test_softmax_jacobian_rejects_bad_input(scores, labels, kwargs, message):
    with pytest.raises(ValueError, match=message):
        diagrams.softmax_jacobian(scores, labels, **kwargs)


@pytest.mark.parametrize("lit", [None, 1, 2, 3, 4, 5])
def test_backward_graph_on_a_slide_has_no_texts_running_into_each_other(lit):
    # issue 32: notebook 09's graph (n = m = 2, d_k = 4, d_v = 2) at slide size
    from helpers import style

    with style.medium("slide"):
        fig = diagrams.backward_graph(2, 2, 4, 2, lit=lit)
        style.fit_for_slide(fig)
        assert style.overlapping_texts(fig) == []
        assert min(style.cap_heights(fig)) >= 13
    assert artists(fig, "shape:")["shape:S"].get_text() == "(2, 2)"
    assert {g for g in artists(fig, "node:")} == {f"node:{x}" for x in "QKSPVO"}
    assert len(artists(fig, "backward:")) == len(artists(fig, "step:")) == 5
    if lit is not None:
        assert artists(fig, "lit")["lit"].get_text().startswith(f"step {lit}: d")
    with style.medium("notebook"):   # the notebook's picture keeps its formulas on the arrows
        assert len(artists(diagrams.backward_graph(2, 2, 4, 2, lit=lit), "formula:")) == 5
