"""Checks of helpers/data/*.json and helpers.examples: every printed figure is recomputed.

Each figure's stored exact value is recomputed twice, with
``helpers.examples.compute_quantity`` and (for runnable examples) with the
kernels of ``helpers.attention``; the printed value must lie within the
document's rounding of the exact one unless the figure carries an erratum,
and every erratum must point at a figure that really is wrong.
"""

import json

import numpy as np
import pytest

from helpers import attention
from helpers.examples import (
    DATA_DIR,
    QUANTITIES,
    DataMissingError,
    Example,
    Figure,
    compute_quantity,
    errata,
    list_examples,
    load_example,
)

# The five source documents, titled as each document titles itself (the seeds
# README adds "(definition page)" to the third and writes a hyphen for the em dash).
TITLES = {
    "000_085cb841918d11c0.txt": "Day 43 - Scaled Dot-Product Attention Deep Dive",
    "001_2eee72d40a279804.txt": "AIAYN Part 2: Scaled Dot-Product Attention",
    "002_1b76dd9648349c72.txt": "Scaled Dot-Product Attention",
    "003_c247fa4af4b6278c.txt": "Section 5.2: Dot-Product Attention — The Core Mechanism",
    "004_64939a14da31560a.txt": "The Engine of Transformers: Building Scaled Dot-Product Attention",
}

NAMES = list_examples(runnable_only=False)
RUNNABLE = list_examples()
EXAMPLES = {name: load_example(name) for name in NAMES}
CASES = [(ex, fig) for ex in EXAMPLES.values() for fig in ex.figures]
CASE_IDS = [f"{ex.name}:{fig.id}" for ex, fig in CASES]

# Quantities helpers.attention can produce, and what each one needs.
ATTENTION_NEEDS = {
    "scores": "qk",
    "scaled_scores": "qk",
    "exp_scaled_scores": "qk",
    "exp_row_sums": "qk",
    "weights": "qkv",
    "weighted_values": "qkv",
    "out": "qkv",
}


def _pick(value, index):
    return value if index is None else np.asarray(value)[index]


def _has(ex, needs):
    return all(getattr(ex, name) is not None for name in needs)


def _via_attention(ex: Example, quantity: str):
    """``quantity`` computed with helpers.attention (default scale when scaled)."""
    scale = None if ex.scaled else 1.0
    if quantity == "scores":
        return attention.attention_scores(ex.q, ex.k, scale=1.0)
    if quantity in ("scaled_scores", "exp_scaled_scores", "exp_row_sums"):
        scaled = attention.attention_scores(ex.q, ex.k, scale=scale)
        if quantity == "scaled_scores":
            return scaled
        return np.exp(scaled) if quantity == "exp_scaled_scores" else np.exp(scaled).sum(-1)
    out, weights = attention.scaled_dot_product_attention(ex.q, ex.k, ex.v, scale=scale)
    if quantity == "weights":
        return weights
    if quantity == "weighted_values":
        return weights[:, :, np.newaxis] * ex.v[np.newaxis, :, :]
    return out


ATTENTION_CASES = [
    (ex, fig) for ex, fig in CASES
    if fig.quantity in ATTENTION_NEEDS and _has(ex, ATTENTION_NEEDS[fig.quantity])
]


# --------------------------------------------------------------------------- figures


@pytest.mark.parametrize("ex, fig", CASES, ids=CASE_IDS)
def test_exact_matches_compute_quantity(ex, fig):
    value = _pick(compute_quantity(ex, fig.quantity), fig.index)
    assert np.shape(value) == np.shape(fig.exact)
    np.testing.assert_allclose(value, fig.exact, rtol=0, atol=1e-6)


@pytest.mark.parametrize(
    "ex, fig", ATTENTION_CASES, ids=[f"{ex.name}:{fig.id}" for ex, fig in ATTENTION_CASES]
)
def test_exact_matches_helpers_attention(ex, fig):
    value = _pick(_via_attention(ex, fig.quantity), fig.index)
    np.testing.assert_allclose(value, fig.exact, rtol=0, atol=1e-6)


@pytest.mark.parametrize("ex, fig", CASES, ids=CASE_IDS)
def test_printed_is_within_rounding_or_has_erratum(ex, fig):
    assert np.shape(fig.printed) == np.shape(fig.exact)
    gap = np.max(np.abs(np.asarray(fig.printed) - np.asarray(fig.exact)))
    assert gap <= fig.tolerance + 1e-9 or fig.erratum is not None, (
        f"printed {fig.printed} is {gap:.6f} from exact {fig.exact}, "
        f"beyond the tolerance {fig.tolerance}, and no erratum explains it"
    )


@pytest.mark.parametrize("ex, fig", CASES, ids=CASE_IDS)
def test_erratum_only_where_the_figure_is_wrong(ex, fig):
    if fig.erratum is None:
        assert not fig.differs
    else:
        assert fig.differs, "erratum on a figure that is right to its printed decimals"
        assert fig.erratum.strip() and fig.erratum.rstrip().endswith(".")


@pytest.mark.parametrize(
    "name, quantity",
    [(n, q) for n in RUNNABLE for q in ATTENTION_NEEDS],
    ids=[f"{n}:{q}" for n in RUNNABLE for q in ATTENTION_NEEDS],
)
def test_compute_quantity_agrees_with_helpers_attention(name, quantity):
    """Also covers the runnable examples without printed figures."""
    ex = EXAMPLES[name]
    np.testing.assert_allclose(
        compute_quantity(ex, quantity), _via_attention(ex, quantity), rtol=0, atol=1e-12
    )


def test_figure_tolerance_and_differs():
    def fig(printed, exact, decimals):
        return Figure("f", "step", "weights", None, printed, decimals, exact, None)

    assert fig(0.18, 0.184752, 2).tolerance == 0.005
    assert not fig(0.18, 0.184752, 2).differs  # rounds to 0.18
    assert fig(0.30, 0.294808, 2).differs  # rounds to 0.29
    assert fig(np.array([0.42, 0.53]), np.array([0.420747, 0.520747]), 2).differs


def test_journey_printed_scores_do_not_give_printed_weights():
    """The claim made by the erratum of journey:scores_row1."""
    ex = EXAMPLES["journey"]
    from_printed = attention.softmax(ex.figure("scores_row1").printed / np.sqrt(2))
    np.testing.assert_allclose(from_printed[[1, 2]], [0.55, 0.45], atol=0.005)
    assert np.max(np.abs(from_printed - ex.figure("weights_row1").printed)) > 0.3


# --------------------------------------------------------------------------- data files


@pytest.mark.parametrize("name", NAMES)
def test_json_schema(name):
    text = (DATA_DIR / f"{name}.json").read_text(encoding="utf-8")
    raw = json.loads(text)
    assert text.startswith('{\n  "name": ') and text.endswith("}\n")  # 2-space indent
    order = ["name", "title", "source", "section", "summary", "runnable", "tokens"]
    order += ["key_tokens"] if "key_tokens" in raw else []
    order += ["inputs", "projections", "q", "k", "v", "d_k", "scaled", "figures"]
    order += [key for key in ("given", "notes") if key in raw]
    assert list(raw) == order
    assert raw["name"] == name
    for key in ("title", "source", "section", "summary"):
        assert isinstance(raw[key], str) and raw[key].strip()
    assert isinstance(raw["runnable"], bool) and isinstance(raw["scaled"], bool)
    for key in ("tokens", "key_tokens"):
        assert all(isinstance(t, str) for t in raw.get(key, []))
    assert list(raw["projections"]) == ["w_q", "w_k", "w_v", "note"]
    assert isinstance(raw["projections"]["note"], str) and raw["projections"]["note"].strip()
    for matrix in [raw[k] for k in ("inputs", "q", "k", "v")] + [
        raw["projections"][w] for w in ("w_q", "w_k", "w_v")
    ]:
        assert matrix is None or np.asarray(matrix, dtype=float).ndim == 2
    d_k = raw["d_k"]
    assert d_k is None or (isinstance(d_k, int) and not isinstance(d_k, bool) and d_k > 0)
    assert isinstance(raw.get("given", {}), dict)
    assert all(isinstance(n, str) and n.strip() for n in raw.get("notes", []))
    ids = [f["id"] for f in raw["figures"]]
    assert len(ids) == len(set(ids)), "figure ids must be unique"
    for f in raw["figures"]:
        keys = ["id", "step", "quantity"] + (["index"] if "index" in f else [])
        assert list(f) == keys + ["printed", "decimals", "exact", "erratum"]
        assert isinstance(f["step"], str) and f["step"].strip()
        assert f["quantity"] in QUANTITIES
        assert "index" not in f or all(isinstance(i, int) for i in f["index"])
        assert isinstance(f["decimals"], int) and f["decimals"] >= 0
        assert np.shape(f["printed"]) == np.shape(f["exact"])
        assert f["erratum"] is None or isinstance(f["erratum"], str)
        assert np.allclose(f["exact"], np.round(f["exact"], 6), rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", NAMES)
def test_title_and_source_are_a_seed_document(name):
    ex = EXAMPLES[name]
    assert ex.source in TITLES
    assert ex.title == TITLES[ex.source]


def test_every_document_has_an_example():
    assert {ex.source for ex in EXAMPLES.values()} == set(TITLES)


@pytest.mark.parametrize("name", NAMES)
def test_example_fields(name):
    ex = EXAMPLES[name]
    built = [ex.q, ex.k, ex.v]
    assert ex.runnable == all(a is not None for a in built)
    for a in built:
        assert a is None or (a.dtype == np.float64 and a.ndim == 2)
    assert ex.key_tokens == ex.raw.get("key_tokens", ex.raw["tokens"])
    if ex.runnable:
        n, d_k = ex.q.shape
        assert d_k == ex.d_k == ex.k.shape[1]
        assert ex.k.shape[0] == ex.v.shape[0] == len(ex.key_tokens)
        assert n == len(ex.tokens)
        assert ex.scale == (1 / np.sqrt(ex.d_k) if ex.scaled else 1.0)


def test_journey_weights_are_the_float32_draws():
    ex = EXAMPLES["journey"]
    for w in (ex.w_q, ex.w_k, ex.w_v):
        assert w.shape == (3, 2)
        assert np.array_equal(w.astype(np.float32).astype(np.float64), w)
        assert np.all((0 <= w) & (w < 1))  # torch.rand: uniform on [0, 1)


def test_given_pictures_and_variances():
    for ex in EXAMPLES.values():
        if "weights" in ex.given:
            w = np.asarray(ex.given["weights"], dtype=float)
            assert w.shape == (len(ex.tokens), len(ex.key_tokens))
            assert np.all((0 <= w) & (w <= 1))
    g = EXAMPLES["journey_variance_d100"].given
    # Only the printed draw: the expected values are E4's exercise 4 answer, so no field holds them.
    assert set(g) == {"variance_before"} and g["variance_before"] == 107.4


# --------------------------------------------------------------------------- API


def test_list_and_load_round_trip():
    assert NAMES == sorted(NAMES) and RUNNABLE == sorted(RUNNABLE)
    assert RUNNABLE == [n for n in NAMES if load_example(n).runnable]
    assert set(RUNNABLE) < set(NAMES)
    assert NAMES == sorted(p.name[:-5] for p in DATA_DIR.iterdir() if p.name.endswith(".json"))
    for name in NAMES:
        assert load_example(name).name == name


@pytest.mark.parametrize("state", ["missing", "empty", "not a folder"])
def test_a_missing_data_folder_is_a_clear_error_not_an_empty_list(state, tmp_path, monkeypatch):
    """An install without its package data must say so, not list no examples."""
    from helpers import examples

    folder = tmp_path / "data"
    if state == "empty":
        folder.mkdir()
    elif state == "not a folder":
        folder.write_text("not a folder")
    monkeypatch.setattr(examples, "DATA_DIR", folder)
    for call in (list_examples, lambda: list_examples(runnable_only=False), lambda: load_example("cat_sat")):
        with pytest.raises(DataMissingError, match="helpers/data") as info:
            call()
        assert "reinstall" in str(info.value)
    assert issubclass(DataMissingError, FileNotFoundError)


def test_the_data_lives_in_the_package_and_data_points_there():
    """One copy: helpers/data/ holds the JSON files; the top-level data/ only points to it."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    assert Path(str(DATA_DIR)).resolve() == (root / "helpers" / "data").resolve()
    assert sorted(p.name for p in (root / "data").iterdir()) == ["README.md"]
    pointer = (root / "data" / "README.md").read_text(encoding="utf-8")
    assert "../helpers/data/README.md" in pointer
    assert (root / "helpers" / "data" / "README.md").is_file()


def test_unknown_example_raises_value_error():
    with pytest.raises(ValueError, match="no_such_example") as info:
        load_example("no_such_example")
    assert all(name in str(info.value) for name in NAMES)


def test_unknown_figure_and_quantity():
    ex = EXAMPLES["cat_sat"]
    with pytest.raises(KeyError, match="weights_row0"):
        ex.figure("no_such_figure")
    with pytest.raises(ValueError, match="no_such_quantity"):
        compute_quantity(ex, "no_such_quantity")
    with pytest.raises(ValueError):
        compute_quantity(EXAMPLES["complexity_5_2"], "weights")  # no q, k, v


def test_errata_lists_every_flagged_figure():
    expected = [(ex.name, fig.id) for ex, fig in CASES if fig.erratum is not None]
    assert [(n, fig.id) for n, fig in errata()] == expected
    assert [fig.id for _, fig in errata("cat_sat")] == []
    assert all(n == "journey" for n, _ in errata("journey")) and errata("journey")
