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
