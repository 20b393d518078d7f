"""Tests of helpers.diagrams.induction_circuit: the picture names the right key, query and prediction."""

import matplotlib.pyplot as plt
import pytest

from helpers import diagrams, figures


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def by_gid(fig, prefix):
    return {a.get_gid(): a for a in fig.findobj(lambda a: str(a.get_gid()).startswith(prefix))}


def test_every_position_after_the_first_gets_its_predecessor():
    tokens = list("ABCDABC")
    fig = diagrams.induction_circuit(tokens, 6)
    labels = by_gid(fig, "circuit-prev-")
    for j in range(1, len(tokens)):
        assert labels[f"circuit-prev-{j}"].get_text() == f"after {tokens[j - 1]}"
        assert f"circuit-prev-arrow-{j}" in labels
    assert "circuit-prev-0" not in labels and len(by_gid(fig, "circuit-token-")) == len(tokens)


@pytest.mark.parametrize("tokens, query, key", [
    ("ABCDABC", 6, 3),      # C follows the first C at 2: key 3 (D)
    ("XAYAZA", 5, 4),       # the latest position after an A is the match
    ("QRQ", 2, 1),
])
def test_the_query_matches_the_key_after_the_earlier_copy_and_predicts_its_token(tokens, query, key):
    fig = diagrams.induction_circuit(list(tokens), query)
    found = by_gid(fig, "circuit-")
    assert found["circuit-query"].get_text() == f"query {tokens[query]}"
    assert found["circuit-key"].get_text() == f"key: after {tokens[query]}"
    assert found["circuit-key"].get_position()[0] == key
    assert found["circuit-output"].get_text() == f"copies {tokens[key]}: predicts {tokens[key]} next"
    start, end = found["circuit-match"]._posA_posB
    assert start[0] == query and end[0] == key
    assert found[f"circuit-token-{key}"].get_linewidth() > found["circuit-token-0"].get_linewidth()
    text = figures.description(fig)
    assert f"query position {query} (token {tokens[query]})" in text
    assert f"key at position {key}" in text and f"copies its token {tokens[key]}" in text


def test_dollar_signs_are_drawn_literally():
    fig = diagrams.induction_circuit(["$a", "b", "$a"], 2)
    assert by_gid(fig, "circuit-output")["circuit-output"].get_text() == r"copies b: predicts b next"
    assert by_gid(fig, "circuit-query")["circuit-query"].get_text() == r"query \$a"


@pytest.mark.parametrize("tokens, query, match", [
    (["A"], 0, "at least 2"),
    (list("ABC"), 3, "query must be"),
    (list("ABC"), -1, "query must be"),
    (list("ABC"), True, "query must be"),
    (list("ABCD"), 3, "nothing to match"),
    (list("ABB"), 2, "nothing to match"),    # the earlier B is followed only by the query itself
])
def test_rejects_what_it_cannot_draw(tokens, query, match):
    with pytest.raises(ValueError, match=match):
        diagrams.induction_circuit(tokens, query)


# ---------------------------------------------------------------------------
# token_circuits: OV and QK circuits as token-by-token pictures (issue 26)
# ---------------------------------------------------------------------------


def test_token_circuits_box_each_rows_largest_entry_and_count_the_diagonal():
    import numpy as np

    names = list("ABCDE")
    copy = np.eye(5) * 2 - np.arange(25).reshape(5, 5) / 50  # a copier: the diagonal wins every row
    shuffled = np.roll(np.eye(5), 1, axis=1)  # row a raises a + 1: the diagonal wins none
    mixed = np.eye(5)
    mixed[0] = [0, 0, 3, 0, 0]  # row A loses to C
    fig = diagrams.token_circuits([copy, shuffled, mixed], ["copier", "shifter", "mixed"], names,
                                  row_label="attended to", col_label="logit raised")
    for k, m in enumerate((copy, shuffled, mixed)):
        image = by_gid(fig, f"circuit-image-{k}")[f"circuit-image-{k}"]
        np.testing.assert_array_equal(image.get_array(), m)
        boxes = by_gid(fig, f"circuit-winners-{k}")[f"circuit-winners-{k}"].get_offsets()
        np.testing.assert_array_equal(np.asarray(boxes), np.c_[m.argmax(axis=1), np.arange(5)])
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["copier\ndiagonal wins 5 of 5 rows", "shifter\ndiagonal wins 0 of 5 rows",
                      "mixed\ndiagonal wins 4 of 5 rows"]
    text = figures.description(fig)
    off = [copy[a, b] for a in range(5) for b in range(5) if a != b]
    diag = [copy[a, a] for a in range(5)]
    assert (f"copier: the diagonal wins 5 of 5 rows, diagonal mean {sum(diag) / 5:.2f} "
            f"against {sum(off) / 20:.2f} elsewhere") in text
    assert "shifter: the diagonal wins 0 of 5 rows" in text and "mixed: the diagonal wins 4 of 5 rows" in text
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == names


def test_token_circuits_reject_mismatched_input():
    import numpy as np

    with pytest.raises(ValueError, match=r"shape \(V, V\) = \(3, 3\)"):
        diagrams.token_circuits([np.eye(4)], ["x"], list("ABC"), row_label="r", col_label="c")
    with pytest.raises(ValueError, match="one title per matrix"):
        diagrams.token_circuits([np.eye(3)], ["x", "y"], list("ABC"), row_label="r", col_label="c")
