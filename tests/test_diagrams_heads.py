"""diagrams.heads_split_merge: one sequence split into heads and merged back (issue 17)."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from helpers import diagrams, figures  # noqa: E402
from helpers.attention import merge_heads, split_heads  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


@pytest.mark.parametrize("n, d_model, h", [(6, 8, 2), (5, 12, 3), (4, 8, 8)])
def test_the_arrows_carry_the_shapes_the_kernels_produce(n, d_model, h):
    fig = diagrams.heads_split_merge(n, d_model, h)
    x = np.zeros((n, d_model))
    split = split_heads(x, h)
    expected = [x.shape, split.shape, split.shape, merge_heads(split).shape, (n, d_model)]
    assert fig.shapes == [str(s) for s in expected]
    texts = " ".join(t.get_text() for t in fig.axes[0].texts)
    for shape in fig.shapes:
        assert shape in texts
    # one coloured box per head on each side of the attention arrow, plus the strips of the merged box
    boxes = [p for p in fig.axes[0].patches if type(p).__name__ == "Rectangle"]
    assert len(boxes) == 3 + 3 * h


def test_the_description_says_split_attend_merge_with_shapes():
    text = figures.description(diagrams.heads_split_merge(6, 8, 2))
    assert "split into 2 heads, (2, 6, 4), each of width 4" in text and "W_O" in text


@pytest.mark.parametrize("args", [(6, 8, 3), (0, 8, 2), (6, 8, 0), (6, 8.0, 2)])
def test_bad_shapes_are_refused(args):
    with pytest.raises(ValueError):
        diagrams.heads_split_merge(*args)
