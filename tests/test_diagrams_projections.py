"""diagrams.projection_flow: named features through W_q, W_k and W_v (issue 23, notebook 04)."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from helpers import diagrams, figures  # noqa: E402

FEATURES = ["noun", "adjective", "pronoun", "animal"]
W_Q = np.array([[0.0, 0.0], [4.0, 0.0], [4.0, 0.0], [0.0, 0.0]])
W_K = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0], [0.0, 0.0]])
W_V = np.array([[0.0], [0.0], [0.0], [1.0]])


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _lines(fig):
    return {line.get_gid(): line for line in fig.axes[0].lines if (line.get_gid() or "").startswith("flow")}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_one_line_per_nonzero_entry_as_wide_as_the_entry(seed):
    rng = np.random.default_rng(seed)
    mats = [np.where(rng.random((5, 3)) < 0.5, 0.0, rng.normal(size=(5, 3))) for _ in range(2)]
    mats.append(np.where(rng.random((5, 2)) < 0.5, 0.0, rng.normal(size=(5, 2))))
    mats[0][0, 0] = 2.5  # at least one entry, and a known largest
    fig = diagrams.projection_flow(*mats, list("abcde"))
    lines = _lines(fig)
    largest = max(np.abs(w).max() for w in mats)
    expected = {}
    for name, w in zip(("W_q", "W_k", "W_v"), mats):
        for i, c in zip(*np.nonzero(w)):
            expected[f"flow {name} {i} {c}"] = abs(w[i, c]) / largest
    assert set(lines) == set(expected)
    for gid, share in expected.items():
        assert lines[gid].get_linewidth() == pytest.approx(diagrams.walkthrough.FLOW_WIDTH * share)
        i, c = map(int, gid.split()[2:])
        assert list(lines[gid].get_ydata()) == [i, c]  # from feature row i to output row c
    assert len(fig.flows) == len(expected)


def test_the_numbers_on_the_lines_are_the_entries():
    fig = diagrams.projection_flow(W_Q, W_K, W_V, FEATURES)
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert texts.count("4.0") == 2 and texts.count("1.0") == 3
    assert sorted(fig.flows) == sorted([("W_q", "adjective", "q0", 4.0), ("W_q", "pronoun", "q0", 4.0),
                                        ("W_k", "noun", "k0", 1.0), ("W_k", "adjective", "k1", 1.0),
                                        ("W_v", "animal", "v0", 1.0)])


def test_the_description_names_every_line_and_every_dropped_feature():
    fig = diagrams.projection_flow(W_Q, W_K, W_V, FEATURES, q_names=["wants noun", "wants adj"],
                                   k_names=["is noun", "is adj"], v_names=["animal"])
    text = figures.description(fig)
    assert "W_q: adjective to wants noun 4.00, pronoun to wants noun 4.00 (drops noun, animal)" in text
    assert "W_k: noun to is noun 1.00, adjective to is adj 1.00 (drops pronoun, animal)" in text
    assert "W_v: animal to animal 1.00 (drops noun, adjective, pronoun)" in text


@pytest.mark.parametrize("args", [
    (W_Q, W_K, W_V, FEATURES[:3]),                 # one name short
    (W_Q[:3], W_K, W_V, FEATURES),                 # rows differ
    (W_Q, W_K[:, :1], W_V, FEATURES),              # q and k of different widths
    (0 * W_Q, 0 * W_K, 0 * W_V, FEATURES),         # nothing to draw
    (W_Q, W_K, W_V[:, 0], FEATURES),               # w_v 1-d
])
def test_bad_input_is_refused(args):
    with pytest.raises(ValueError):
        diagrams.projection_flow(*args)
