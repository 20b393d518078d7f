"""Issue 32, item 2, decks 12-16: the slides' pictures of 12 and 14 and the head view's slide variant.

On a slide no two texts of a picture run into each other and a picture shows at most two
panels; the notebook keeps every panel and draws as before.
"""

import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest

from helpers import diagrams, style

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def _twelve_head_views():
    """Notebook 12's "What every head looks at": four 16-token head views with a highlighted query."""
    rng = np.random.default_rng(0)
    weights = rng.dirichlet(np.ones(16), size=(4, 16))
    tokens = [f"{c}{i}" for i, c in enumerate("GLNBLMPKHCMPKHCM")]
    fig, axes = plt.subplots(1, 4, figsize=(10, 4.6), layout="constrained")
    for k, ax in enumerate(axes):
        diagrams.head_view(weights[k], tokens, ax=ax, title=f"layer {k // 2}, head {k % 2}", highlight=14)
    return fig


def test_head_view_on_a_slide_no_texts_run_into_each_other():
    """The weights follow their (larger) key names; "queries"/"keys" clear the title; no hidden ticks count."""
    with style.medium("slide"):
        fig = style.slide_panels(_twelve_head_views(), 1, 2)
        style.fit_for_slide(fig)
        assert style.panels(fig) == 2
        assert style.overlapping_texts(fig) == []
        ax = fig.axes[0]
        keys = {t.get_gid(): t.get_window_extent() for t in ax.texts
                if str(t.get_gid()).startswith(("key:", "weight:"))}
        for j in range(16):
            assert keys[f"weight:{j}"].x0 >= keys[f"key:{j}"].x1  # right of its own key's name


def test_head_view_in_the_notebook_is_drawn_as_before():
    """The notebook medium keeps the weights at a fixed offset from the keys' column and the old limits."""
    with style.medium("notebook"):
        fig = _twelve_head_views()
    ax = fig.axes[2]
    assert ax.get_ylim()[1] == pytest.approx(7.5 + 1.1)
    weight = next(t for t in ax.texts if t.get_gid() == "weight:0")
    assert weight.xy == (1.04, 7.5) and weight.xyann == (6.2 * 3 + 8, 0)


def _source(notebook, needle):
    nb = json.loads((ROOT / "notebooks" / notebook).read_text())
    cells = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code" and needle in "".join(c["source"])]
    assert len(cells) == 1, (notebook, needle)
    return cells[0]


@pytest.mark.parametrize(("notebook", "needle", "keep"), [
    ("12-induction-heads.ipynb", "ax_score.set_ylabel", "slide_panels(fig, 0, 2)"),           # how the loss falls
    ("12-induction-heads.ipynb", "Head view of the eight heads", "slide_panels(fig, 1, 3)"),  # every head
    ("12-induction-heads.ipynb", "ov = {h: ov_circuit", "slide_panels(fig, 0, 1 + SHOWN_HEAD)"),  # does it copy?
    ("12-induction-heads.ipynb", "qk_circuit_through(model, h, prev_head)", "slide_panels(fig, 0, SHOWN_HEAD)"),
    ("14-kv-cache.ipynb", "small heatmaps of the key cache", "slide_panels(fig, 0, n - 1)"),  # the cache per step
])
def test_multi_panel_figures_of_12_and_14_show_two_panels_on_a_slide(notebook, needle, keep):
    assert keep in _source(notebook, needle)


def test_twelve_ablation_labels_stand_upright_and_apart_on_a_slide():
    """12's ablation bars: names on up to three lines, so that on a slide they keep >= 14 pt, upright."""
    src = _source("12-induction-heads.ipynb", 'ax.bar(where - 0.2')
    names = ["untrained", "trained", "without (0, 1)"] + [f"without (1, {head})" for head in range(4)]
    names += ["without all layer-1 heads"]  # the bars notebook 12 shows (layer 0's other heads: its table)
    start = end = src.index("ax.set_xticks(")
    depth = 0
    for end in range(start, len(src)):  # the call, to its closing parenthesis
        depth += {"(": 1, ")": -1}.get(src[end], 0)
        if depth == 0 and src[end] == ")":
            break
    call = src[start:end + 1]
    fig, ax = plt.subplots(figsize=(9, 3.4), layout="constrained")
    where = np.arange(len(names))
    losses = dict.fromkeys(names, (1.0, 2.0))
    ax.bar(where - 0.2, [v[0] for v in losses.values()], 0.4, label="repeat")
    ax.bar(where + 0.2, [v[1] for v in losses.values()], 0.4, label="elsewhere")
    ax.set_ylabel("loss (nats)")
    ax.legend()
    exec(call, {"ax": ax, "where": where, "losses": losses, "shown": losses})
    with style.medium("slide"):
        style.fit_for_slide(fig)
        assert style.overlapping_texts(fig) == []
        labels = [t for t in ax.get_xticklabels() if t.get_text()]
        assert min(t.get_fontsize() for t in labels) >= style.SLIDE_MIN_PT
        assert all(t.get_rotation() == 0 for t in labels)


def test_trained_head_explorer_picture_at_slide_size_on_a_slide():
    """12's static explorer: on a slide its picture fills the slide's picture area with slide-size text."""
    import io

    from PIL import Image

    from helpers.widgets import TrainedHeadExplorer

    with style.medium("notebook"):
        small = TrainedHeadExplorer(layer=1, head=0, text="P J G C K A G C K A")
    with style.medium("slide"):
        ex = TrainedHeadExplorer(layer=1, head=0, text="P J G C K A G C K A")
        width, height = Image.open(io.BytesIO(ex.image.value)).size
        fig = ex._figure[0]
        assert style.overlapping_texts(fig) == []
        assert min(style.cap_heights(fig)) >= style.SLIDE_MIN_PT * style.SLIDE_DPI / 72 * style.CAP_RATIO - 0.1
        assert max(width / (style.SLIDE_SIZE_IN[0] * style.SLIDE_DPI),
                   height / (style.SLIDE_SIZE_IN[1] * style.SLIDE_DPI)) == pytest.approx(1.0, abs=0.01)
        title = fig.axes[0].title.get_fontsize()
        ex.controls["temperature"].value = 2.0  # an update keeps the slide's title size
        assert fig.axes[0].title.get_fontsize() == title
    assert Image.open(io.BytesIO(small.image.value)).size == (504, 417)  # the notebook's picture as before
