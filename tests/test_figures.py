"""Every figure has a text description made from its data, and it travels as alt text (issue 19)."""

import json
import re
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import nbformat  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from helpers import diagrams, figures, plots  # noqa: E402
from helpers.attention import scaled_dot_product_attention  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import publish  # noqa: E402

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "instructor" / "solutions").glob("*.ipynb"))
TOKENS = ["I", "am", "happy"]
WEIGHTS = np.array([[0.50, 0.30, 0.20], [0.20, 0.50, 0.30], [0.26, 0.26, 0.48]])


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def test_an_empty_description_is_refused():
    fig = plt.figure()
    for empty in ("", "   ", "\n"):
        with pytest.raises(ValueError, match="must not be empty"):
            figures.describe(fig, empty)
    assert figures.description(fig) is None


def test_describe_keeps_one_line_and_panels_compose():
    fig = plt.figure()
    figures.add_panel(fig, "left  panel\nof two.")
    figures.add_panel(fig, "right panel")
    assert figures.description(fig) == "2 panels. 1: left panel of two; 2: right panel."
    figures.describe(fig, "own words")
    assert figures.description(fig) == "own words"


def test_a_heatmap_says_its_shape_tokens_and_largest_weight():
    x = np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6], [0.7, 0.8, 0.9]])  # "I am happy", as in 01
    _, weights = scaled_dot_product_attention(x, x, x)
    image = plots.heatmap(weights, ["I", "am", "happy"], ["I", "am", "happy"])
    text = figures.description(image.figure)
    i, j = np.unravel_index(np.argmax(weights), weights.shape)
    assert text.startswith("Heatmap of attention weights, 3 queries × 3 keys (I, am, happy)")
    assert "each row sums to 1" in text
    assert f"largest weight {weights[i, j]:.2f}, {['I', 'am', 'happy'][i]} to {['I', 'am', 'happy'][j]}" in text


def test_a_masked_score_heatmap_counts_its_masked_cells():
    scores = np.array([[1.0, -np.inf], [0.5, 2.5]])
    text = figures.description(plots.heatmap(scores, ["a", "b"], ["a", "b"], kind="scores").figure)
    assert "1 masked cell;" in text and "largest score 2.50, b to b" in text and "smallest 0.50" in text


def test_bars_head_view_pipeline_vectors_and_lookup_are_described_from_their_data():
    w = np.array([0.2, 0.5, 0.3])
    bars = plots.attention_bars(w, ["x", "y", "z"])
    assert "largest 0.50 on y" in figures.description(bars[0].figure)
    rows = np.array([[0.6, 0.4], [0.1, 0.9]])
    assert "strongest 0.90, b to b" in figures.description(diagrams.head_view(rows, ["a", "b"]))
    q = np.array([[1.0, 0.0], [0.0, 2.0]])
    text = figures.description(diagrams.pipeline(q, q, q, ["a", "b"]))
    top = scaled_dot_product_attention(q, q, q)[1].max()
    assert "Q (2×2) times Kᵀ (2×2)" in text and f"Largest weight {top:.2f}" in text
    text = figures.description(diagrams.vectors_2d(np.array([[3.0, 4.0], [1.0, 0.0]]), ["k0", "k1"]))
    assert "longest k0 (length 5.00)" in text
    text = figures.description(diagrams.soft_lookup("q", ["a", "b"], [1.0, 3.0], [0.25, 0.75]))
    assert "a 0.25, b 0.75" in text and "2.50" in text


def test_helper_panels_in_a_shared_figure_are_all_described():
    fig = plots.heatmaps([np.eye(2), np.full((2, 2), 0.5)], ["one-hot", "uniform"], ["a", "b"], ["a", "b"])
    text = figures.description(fig)
    assert text.startswith("2 panels. 1: Heatmap of attention weights (one-hot)") and "(uniform)" in text


def test_the_site_and_decks_read_the_alt_from_the_output():
    alt = 'Heatmap "quoted" & <marked>'
    fig, ax = plt.subplots(figsize=(1, 1))
    ax.plot([0, 1])
    html = figures.figure_html(figures.describe(fig, alt))
    assert html is not None and html.startswith('<img class="described-figure" alt="Heatmap &quot;quoted&quot; &amp;')
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x", outputs=[nbformat.v4.new_output(
        "display_data", data={"text/html": html, "text/plain": "<Figure>"})])]  # as a notebook stores it
    publish.figure_alt(nb)
    output = nb.cells[0].outputs[0]
    assert output.metadata["image/png"]["alt"] == alt
    assert "text/html" not in output.data and output.data["image/png"].startswith("iVBOR")


def test_an_undescribed_figure_has_no_html_so_it_can_be_found():
    assert figures.figure_html(plt.figure()) is None


def _image_outputs(path):
    """Every output that shows a picture: an image/png, or a described figure's <img> (its one copy)."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    for index, cell in enumerate(nb["cells"]):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "image/png" in data or 'src="data:image/png;base64,' in "".join(data.get("text/html", "")):
                yield index, output


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_every_stored_figure_carries_a_real_description(path):
    missing = []
    for index, output in _image_outputs(path):
        html = "".join(output.get("data", {}).get("text/html", ""))
        found = re.search(r'<img class="described-figure" alt="([^"]+)"', html)
        alt = (output.get("metadata", {}).get("image/png") or {}).get("alt")
        text = found.group(1) if found else alt
        if not text or "No description has been provided" in text:
            missing.append(index)
    assert missing == [], f"figures without a description in cells {missing}"


@pytest.mark.parametrize("cmap", [plots.WEIGHTS_CMAP, plots.SCORES_CMAP])
def test_numbers_written_in_heatmap_cells_reach_aa_contrast_on_every_colour(cmap):
    colours = matplotlib.colormaps[cmap](np.linspace(0, 1, 1001))
    black, white = np.array([0.0, 0.0, 0.0]), np.array([1.0, 1.0, 1.0])
    for colour in colours:
        text = black if plots._text_colour(colour) == "black" else white
        ratio = plots.contrast_ratio(text, colour)
        assert ratio >= 4.5, (colour, ratio)
        # and it is the better of the two choices
        assert ratio >= plots.contrast_ratio(white if text is black else black, colour) - 1e-12


def test_contrast_ratio_matches_the_wcag_examples():
    assert plots.contrast_ratio([0, 0, 0], [1, 1, 1]) == pytest.approx(21.0)
    # #767676 on white is the classic 4.54:1; #777777 falls just short
    assert plots.contrast_ratio(np.array([0x76] * 3) / 255, [1, 1, 1]) == pytest.approx(4.54, abs=0.01)
    assert plots.contrast_ratio(np.array([0x77] * 3) / 255, [1, 1, 1]) < 4.5


def _text_contrasts(fig):
    """(text, WCAG ratio against white and against its box, if any) for every visible Text of ``fig``."""
    from matplotlib.colors import to_rgba

    found = []
    for text in fig.findobj(matplotlib.text.Text):
        if not text.get_visible() or not text.get_text().strip():
            continue
        r, g, b, a = to_rgba(text.get_color())
        a *= 1.0 if text.get_alpha() is None else text.get_alpha()
        backgrounds = [(1.0, 1.0, 1.0)]
        patch = text.get_bbox_patch()
        if patch is not None and patch.get_facecolor()[3] > 0:
            backgrounds.append(patch.get_facecolor()[:3])
        for back in backgrounds:
            shown = np.array([r, g, b]) * a + np.array(back) * (1 - a)
            found.append((text.get_text(), float(plots.contrast_ratio(shown, back))))
    return found


@pytest.mark.parametrize("draw", [
    lambda: diagrams.pipeline(WEIGHTS, WEIGHTS, WEIGHTS, TOKENS),
    lambda: diagrams.head_view(WEIGHTS, TOKENS, highlight=1),
    lambda: diagrams.soft_lookup("q", ["a", "b", "c"], [1.0, 2.0, 3.0], [0.7, 0.3, 0.0], hard_index=0),
    lambda: diagrams.vectors_2d(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]), TOKENS, query=2,
                                weights=[0.2, 0.3, 0.5]),
], ids=["pipeline", "head_view", "soft_lookup", "vectors_2d"])
def test_diagram_labels_reach_aa_contrast(draw):
    low = [(t, round(r, 2)) for t, r in _text_contrasts(draw()) if r < 4.5]
    assert not low, f"labels below 4.5:1: {low}"


def test_the_img_of_a_described_figure_decodes_to_its_png_and_looks_like_no_path():
    import base64
    import html as html_module

    fig, ax = plt.subplots(figsize=(2, 2))
    ax.plot(np.arange(50) ** 2)
    tag = figures.figure_html(figures.describe(fig, "A parabola."))
    data = re.search(r'src="data:image/png;base64,([^"]+)"', tag).group(1)
    assert "/" not in data  # written as &#47;, so no run of base64 reads like /a/file/path
    assert base64.b64decode(html_module.unescape(data)).startswith(b"\x89PNG")
