"""diagrams.kernel_view: -|q - k|^2 / 2 = q·k - |q|^2 / 2 - |k|^2 / 2, drawn term by term (issue 23, item 2)."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from helpers import diagrams, figures  # noqa: E402

TERMS = ("dot", "query", "key", "distance")


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _softmax(s):
    e = np.exp(s - s.max())
    return e / e.sum()


def _by_hand(q, keys):
    """The four terms by loops over the coordinates, independent of the picture's NumPy."""
    dot = [sum(a * b for a, b in zip(q, k)) for k in keys]
    q_sq = sum(a * a for a in q)
    k_sq = [sum(b * b for b in k) for k in keys]
    dist = [sum((a - b) ** 2 for a, b in zip(q, k)) for k in keys]
    return {"dot": np.array(dot), "query": np.full(len(keys), -q_sq / 2), "key": -np.array(k_sq) / 2,
            "distance": -np.array(dist) / 2}


def _bars(ax, gid_prefix):
    return [p for p in ax.patches if (p.get_gid() or "").startswith(gid_prefix)]


def test_the_bars_drawn_are_the_four_terms_and_they_add_up():
    q = np.array([1.0, 0.0])
    keys = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    fig = diagrams.kernel_view(q, keys, ["cat", "sat", "mat"], query_label="cat")
    expected = _by_hand(q, keys)
    left = fig.axes[0]
    for term in TERMS:
        heights = [next(p for p in left.patches if p.get_gid() == f"term:{term}:{j}").get_height() for j in range(3)]
        np.testing.assert_allclose(heights, expected[term], atol=1e-12, err_msg=term)
        np.testing.assert_allclose(fig.terms[term], expected[term], atol=1e-12, err_msg=term)
    # the identity: the hollow bar is the sum of the other three
    np.testing.assert_allclose(expected["dot"] + expected["query"] + expected["key"], expected["distance"], atol=1e-12)
    # the query's term is one height for every key
    assert len({round(p.get_height(), 12) for p in _bars(left, "term:query:")}) == 1


def test_the_weights_drawn_are_the_softmax_of_each_score():
    rng = np.random.default_rng(5)
    q, keys = rng.normal(size=4), rng.normal(size=(5, 4))
    fig = diagrams.kernel_view(q, keys, list("abcde"))
    expected = _by_hand(q, keys)
    right = fig.axes[1]
    for kind in ("dot", "distance"):
        heights = [p.get_height() for p in _bars(right, f"weight:{kind}")]
        np.testing.assert_allclose(heights, _softmax(expected[kind]), rtol=1e-12, err_msg=kind)
    # keys of different lengths: the two sets of weights differ, by the factor exp(-|k|^2 / 2)
    assert not np.allclose(fig.weights["dot"], fig.weights["distance"])
    np.testing.assert_allclose(fig.weights["distance"], _softmax(expected["dot"] + expected["key"]), rtol=1e-12)


def test_keys_of_equal_length_get_the_same_weights_from_both_scores():
    rng = np.random.default_rng(6)
    keys = rng.normal(size=(4, 3))
    keys = 2.0 * keys / np.linalg.norm(keys, axis=1, keepdims=True)  # every key of length 2
    fig = diagrams.kernel_view(rng.normal(size=3), keys, list("abcd"))
    np.testing.assert_allclose(fig.weights["dot"], fig.weights["distance"], rtol=1e-12)


def test_the_description_carries_the_numbers_drawn():
    q = np.array([1.0, 0.0])
    keys = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    fig = diagrams.kernel_view(q, keys, ["cat", "sat", "mat"], query_label="cat")
    text = figures.description(fig)
    expected = _by_hand(q, keys)
    assert "query 'cat'" in text and "3 keys (cat, sat, mat)" in text
    assert "(cat 0.00, sat -1.00, mat -0.50)" in text  # minus half the squared distance
    assert "-0.50 for every key" in text
    dot_w, dist_w = _softmax(expected["dot"]), _softmax(expected["distance"])
    assert "Weights from q·k: " + ", ".join(f"{t} {w:.2f}" for t, w in zip(["cat", "sat", "mat"], dot_w)) in text
    assert ", ".join(f"{t} {w:.2f}" for t, w in zip(["cat", "sat", "mat"], dist_w)) + "." in text
    # a query longer than every key: its own term, -|q|^2 / 2 = -2, is written once
    longer = figures.description(diagrams.kernel_view([2.0, 0.0], keys, ["cat", "sat", "mat"]))
    assert "-2.00 for every key" in longer


@pytest.mark.parametrize("args", [
    ([1.0, 0.0, 0.0], [[1.0, 0.0]], ["a"]),        # query and keys of different widths
    ([1.0, 0.0], [1.0, 0.0], ["a"]),                # keys not a matrix
    ([1.0, 0.0], [[1.0, 0.0]], ["a", "b"]),         # one label too many
    ([np.inf, 0.0], [[1.0, 0.0]], ["a"]),           # not finite
    ([1.0, 0.0], [[1.0, 0.0]], "a"),                # one string, not a list of labels
])
def test_bad_arguments_are_refused(args):
    with pytest.raises(ValueError):
        diagrams.kernel_view(*args)
