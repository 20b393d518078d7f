"""Tests of the notebook-11 diagrams in helpers.diagrams: tiles in fast memory and loop orders.

Each picture is read back through its artists (patches, lines and texts carry a
``gid``) and compared with an independent NumPy computation.
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


def render(fig):
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=50)
    return buffer.getvalue()


@pytest.fixture
def qkv():
    rng = np.random.default_rng(5)
    return rng.normal(size=(7, 4)), rng.normal(size=(10, 4)), rng.normal(size=(10, 3))


def test_tiled_steps_fast_memory_holds_the_step_blocks(qkv):
    q, k, v = qkv
    fig = diagrams.tiled_steps(q, k, v, block_q=4, block_k=4)   # 2 query blocks x 3 key blocks
    steps = [(i, j) for i in range(2) for j in range(3)]          # FlashAttention-2: outer over queries
    fast = artists(fig, "sram:")
    for step, (i, j) in enumerate(steps):
        assert {g for g in fast if g.split(":")[1] == str(step)} == {f"sram:{step}:Q:{i}", f"sram:{step}:K:{j}",
                                                                      f"sram:{step}:V:{j}"}
    slow = artists(fig, "block:")
    assert len(fast) + len(slow) == len(steps) * (2 + 3 + 3)        # every block of Q, K, V in every panel
    heights = {g: a.get_height() for g, a in {**fast, **slow}.items() if g.split(":")[1] == "0"}
    assert heights["sram:0:Q:0"] == 4 and heights["block:0:Q:1"] == 3   # ragged last query block
    assert heights["block:0:K:2"] == 2 and heights["block:0:V:2"] == 2
    render(fig)


def test_tiled_steps_running_max_and_sum_are_the_online_softmax(qkv):
    q, k, v = qkv
    row = 5
    fig = diagrams.tiled_steps(q, k, v, block_q=4, block_k=3, row=row)
    x = q[row] @ k.T / 2.0                                        # scale 1 / sqrt(d_k = 4)
    blocks = [x[s:s + 3] for s in range(0, 10, 3)]
    expected_max = np.maximum.accumulate([b.max() for b in blocks])
    expected_sum = [np.exp(x[:s + 3] - mx).sum() for s, mx in zip(range(0, 10, 3), expected_max)]
    lines = artists(fig, "running_")
    np.testing.assert_allclose(lines["running_max"].get_ydata(), expected_max, rtol=1e-12)
    np.testing.assert_allclose(lines["running_sum"].get_ydata(), expected_sum, rtol=1e-12)
    np.testing.assert_array_equal(lines["running_max"].get_xdata(), [1, 2, 3, 4])
    finals = artists(fig, "final_")
    assert finals["final_max"].get_ydata()[0] == pytest.approx(x.max())
    assert finals["final_sum"].get_ydata()[0] == pytest.approx(np.exp(x - x.max()).sum())
    assert lines["running_sum"].get_ydata()[-1] == pytest.approx(finals["final_sum"].get_ydata()[0])
    labels = artists(fig, "value:sum:")
    assert [float(labels[f"value:sum:{b}"].get_text().replace(MINUS, "-")) for b in range(4)] == \
        pytest.approx(expected_sum, abs=5e-3)
    text = figures.description(fig)
    assert f"whole row {x.max():.2f}" in text and f"{expected_sum[0]:.2f}" in text and "8 steps" in text
    render(fig)


def test_tiled_steps_rejects_bad_input(qkv):
    q, k, v = qkv
    with pytest.raises(ValueError, match="same length m"):
        diagrams.tiled_steps(q, k, v[:4], block_q=4, block_k=4)
    with pytest.raises(ValueError, match="block_k must be a positive integer"):
        diagrams.tiled_steps(q, k, v, block_q=4, block_k=0)
    with pytest.raises(ValueError, match="at most 12 steps"):
        diagrams.tiled_steps(q, k, v, block_q=1, block_k=1)
    with pytest.raises(ValueError, match="row must be"):
        diagrams.tiled_steps(q, k, v, block_q=4, block_k=4, row=7)


def visit_numbers(fig, panel, rows, cols):
    out = np.zeros((rows, cols), int)
    for gid, text in artists(fig, f"order:{panel}:").items():
        i, j = map(int, gid.split(":")[2:])
        out[i, j] = int(text.get_text())
    return out


def test_flash_loop_orders_number_the_visits():
    fa1 = [(i, j) for j in range(4) for i in range(3)]              # outer loop over key/value blocks
    fa2 = [(i, j) for i in range(3) for j in range(4)]              # outer loop over query blocks
    fig = diagrams.flash_loop_orders(fa1, fa2)
    np.testing.assert_array_equal(visit_numbers(fig, 0, 3, 4), np.arange(1, 13).reshape(4, 3).T)
    np.testing.assert_array_equal(visit_numbers(fig, 1, 3, 4), np.arange(1, 13).reshape(3, 4))
    path = artists(fig, "path:1")["path:1"]
    np.testing.assert_array_equal(path.get_xdata(), [j + 0.5 for _, j in fa2])
    assert "outer loop over key/value blocks" in fig.axes[0].get_title()
    assert "outer loop over query blocks" in fig.axes[1].get_title()
    assert artists(fig, "skipped:") == {}
    text = figures.description(fig)
    assert "3 query blocks x 4 key/value blocks" in text and "visits 1-3 on key/value block 0" in text
    assert "visits 1-4 on query block 0" in text
    render(fig)


def test_flash_loop_orders_hatch_skipped_tiles():
    causal2 = [(i, j) for i in range(3) for j in range(i + 1)]     # causal: tiles above the diagonal skipped
    causal1 = [(i, j) for j in range(3) for i in range(j, 3)]
    fig = diagrams.flash_loop_orders(causal1, causal2)
    skipped = artists(fig, "skipped:")
    assert set(skipped) == {f"skipped:{p}:{i}:{j}" for p in (0, 1) for i, j in ((0, 1), (0, 2), (1, 2))}
    assert all(patch.get_hatch() for patch in skipped.values())
    assert visit_numbers(fig, 1, 3, 3)[2].tolist() == [4, 5, 6]
    with pytest.raises(ValueError, match="twice"):
        diagrams.flash_loop_orders([(0, 0), (0, 0)], causal2)


@pytest.mark.parametrize("lit, seen", [(1, 1), (2, 2), (4, 4), (5, 4), (6, 4)])
def test_tiled_steps_lit_processes_one_tile_and_shows_the_state_so_far(qkv, lit, seen):
    q, k, v = qkv
    fig = diagrams.tiled_steps(q, k, v, block_q=4, block_k=3, row=1, lit=lit)   # 2 x 4 steps; row 1 in block 0
    x = q[1] @ k.T / 2.0
    starts = range(0, 10, 3)
    expected_max = np.maximum.accumulate([x[s:s + 3].max() for s in starts])
    expected_sum = np.array([np.exp(x[:s + 3] - mx).sum() for s, mx in zip(starts, expected_max)])
    lines = artists(fig, "running_")
    np.testing.assert_allclose(lines["running_max"].get_ydata(), expected_max[:seen], rtol=1e-12)
    np.testing.assert_allclose(lines["running_sum"].get_ydata(), expected_sum[:seen], rtol=1e-12)
    assert len(artists(fig, "value:sum:")) == seen
    # the lit panel is opaque, every other panel faded
    for gid, patch in {**artists(fig, "sram:"), **artists(fig, "block:")}.items():
        assert (patch.get_alpha() == 1.0) is (int(gid.split(":")[1]) == lit - 1)
    i, j = divmod(lit - 1, 4)
    assert artists(fig, "lit")["lit"].get_text() == f"step {lit}\nQ{i} with K{j}, V{j}"
    states = artists(fig, "state:")
    assert f"m = {expected_max[seen - 1]:.2f}".replace("-", MINUS) in states["state:max"].get_text()
    assert f"\u2113 = {expected_sum[seen - 1]:.2f}" in states["state:sum"].get_text()
    text = figures.description(fig)
    assert f"Step {lit} of 8 is lit: query block {i} with key/value block {j}" in text
    assert f"m = {expected_max[seen - 1]:.2f}, \u2113 = {expected_sum[seen - 1]:.2f}." in text
    render(fig)


def test_tiled_steps_lit_before_the_row_is_reached(qkv):
    q, k, v = qkv
    fig = diagrams.tiled_steps(q, k, v, block_q=4, block_k=3, row=5, lit=3)     # row 5 is in query block 1
    assert len(artists(fig, "running_max")["running_max"].get_ydata()) == 0
    assert "not reached yet" in artists(fig, "state:")["state:sum"].get_text()
    assert "Query 5 is not in a block processed yet." in figures.description(fig)
    with pytest.raises(ValueError, match="lit must be a step from 1 to 8"):
        diagrams.tiled_steps(q, k, v, block_q=4, block_k=3, lit=9)
    with pytest.raises(ValueError, match="lit must be a step"):
        diagrams.tiled_steps(q, k, v, block_q=4, block_k=3, lit=True)
    render(fig)


@pytest.mark.parametrize("lit", [None, 1, 2, 3])
def test_tiled_steps_on_a_slide_is_two_panels_whose_texts_stand_apart(lit):
    # issue 32: a slide shows at most two panels and no two texts run into each other (notebook 11's data)
    from helpers import style

    rng = np.random.default_rng(56)
    q, k, v = rng.normal(size=(8, 4)), rng.normal(size=(12, 4)), rng.normal(size=(12, 3))
    with style.medium("slide"):
        fig = diagrams.tiled_steps(q, k, v, block_q=4, block_k=4, row=0, lit=lit)
        style.fit_for_slide(fig)
        assert style.panels(fig) == 2
        assert style.overlapping_texts(fig) == []
        assert min(style.cap_heights(fig)) >= 13
    steps = [(i, j) for i in range(2) for j in range(3)]
    fast = artists(fig, "sram:")
    for step, (i, j) in enumerate(steps):   # the same blocks in fast memory as the notebook's picture
        assert {g for g in fast if g.split(":")[1] == str(step)} == {f"sram:{step}:Q:{i}", f"sram:{step}:K:{j}",
                                                                      f"sram:{step}:V:{j}"}
    seen = 3 if lit is None else lit
    assert len(artists(fig, "running_max")["running_max"].get_xdata()) == seen
    if lit is not None:
        assert artists(fig, "lit")["lit"].get_text().startswith(f"{lit}: ")
        assert artists(fig, "state:max")["state:max"].get_text().startswith("m = ")
    with style.medium("notebook"):   # the notebook's picture keeps its panels
        assert len(diagrams.tiled_steps(q, k, v, block_q=4, block_k=4, row=0, lit=lit).axes) == 8
