"""The worked examples of the five source documents, loaded from ``helpers/data/``.

Each ``helpers/data/<name>.json`` (package data, read with
:mod:`importlib.resources`, so any install carries it) holds one worked example: its inputs (embeddings,
projections or ready-made Q, K, V) and every figure the document prints for
it, next to the exact value and, where the two disagree beyond the
document's own rounding, a one-sentence erratum. ``helpers/data/README.md`` describes
the schema and where the numbers come from.

:func:`compute_quantity` recomputes a figure from the inputs with plain NumPy,
independently of :mod:`helpers.attention`, so the two can check each other.

Quantities (the ``quantity`` field of a figure)::

    q, k, v              the queries, keys, values            (n, d_k) (m, d_k) (m, d_v)
    score_terms          q[i, c] * k[j, c], the terms of each dot product   (n, m, d_k)
    scores               q k^T                                  (n, m)
    scale_divisor        sqrt(d_k)                              scalar
    scaled_scores        q k^T / sqrt(d_k), or q k^T when unscaled   (n, m)
    exp_scaled_scores    exp(scaled_scores), not shifted        (n, m)
    exp_row_sums         row sums of exp_scaled_scores          (n,)
    weights              softmax of scaled_scores over the keys (n, m)
    weighted_values      weights[i, j] * v[j]                   (n, m, d_v)
    out                  weights @ v                            (n, d_v)

and, for figure-only examples, from the numbers in the example's ``given``::

    row_sums_of_printed  row sums of given["weights"], a printed attention picture
    scaled_variance      given["variance_before"] / d_k: the variance after
                         dividing every score by sqrt(d_k)
    pair_count           given["n"] ** 2: query-key pairs, i.e. entries of the
                         n x n score matrix
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources

import numpy as np

__all__ = [
    "DATA_DIR",
    "DataMissingError",
    "QUANTITIES",
    "Example",
    "Figure",
    "list_examples",
    "load_example",
    "compute_quantity",
    "errata",
    "figure_table",
    "format_value",
]

#: The examples' folder inside the package (a :class:`importlib.resources.abc.Traversable`;
#: a :class:`pathlib.Path` for an ordinary install).
DATA_DIR = resources.files(__package__ or "helpers").joinpath("data")

QUANTITIES = (
    "q", "k", "v", "score_terms", "scores", "scale_divisor", "scaled_scores",
    "exp_scaled_scores", "exp_row_sums", "weights", "weighted_values", "out",
    "row_sums_of_printed", "scaled_variance", "pair_count",
)


def _value(x):
    """A JSON number as float, a JSON (nested) list as a float64 array."""
    return np.array(x, dtype=np.float64) if isinstance(x, list) else float(x)


def _matrix(x):
    return None if x is None else np.array(x, dtype=np.float64)


@dataclass(frozen=True, eq=False)
class Figure:
    """One number (or row, or matrix) a document prints, with its exact value.

    Attributes
    ----------
    id : str
        Unique within its example, e.g. ``"weights_row1"``.
    step : str
        Where in the document's walk-through the figure appears.
    quantity : str
        What :func:`compute_quantity` recomputes (see the module docstring).
    index : tuple of int or None
        Sub-selection of the quantity (a row, or row and column); None for all of it.
    printed : ndarray or float
        The figure as the document prints it.
    decimals : int
        How many decimals the document printed.
    exact : ndarray or float
        The exact value, rounded to 6 decimals.
    erratum : str or None
        Why the printed figure is wrong, or None when it is right.

    Examples
    --------
    >>> fig = load_example("cat_sat").figure("weights_row0")
    >>> fig.printed, fig.exact, fig.tolerance, fig.differs
    (array([0.73, 0.27]), array([0.731059, 0.268941]), 0.005, False)
    """

    id: str
    step: str
    quantity: str
    index: tuple | None
    printed: np.ndarray | float
    decimals: int
    exact: np.ndarray | float
    erratum: str | None

    @property
    def tolerance(self) -> float:
        """Half a unit in the last printed decimal: ``0.5 * 10**-decimals``.

        Examples
        --------
        >>> load_example("i_am_happy").figure("exp_row0_sum").tolerance
        0.0005
        """
        return 0.5 * 10.0 ** -self.decimals

    @property
    def differs(self) -> bool:
        """True when some printed entry is further than ``tolerance`` from the exact one.

        Examples
        --------
        >>> load_example("cat_sat_mat").figure("weights_row1").differs
        True
        """
        gap = np.abs(np.asarray(self.printed) - np.asarray(self.exact))
        return bool(np.any(gap > self.tolerance + 1e-9))

    @classmethod
    def _from_json(cls, d: dict) -> Figure:
        index = d.get("index")
        return cls(
            id=d["id"],
            step=d["step"],
            quantity=d["quantity"],
            index=None if index is None else tuple(index),
            printed=_value(d["printed"]),
            decimals=int(d["decimals"]),
            exact=_value(d["exact"]),
            erratum=d["erratum"],
        )


@dataclass(frozen=True, eq=False)
class Example:
    """One worked example of a source document, ready to compute with.

    ``q``, ``k``, ``v`` are float64 arrays whenever the document gives enough
    to build them: stated outright, else ``inputs @ w_*``, else ``inputs``
    itself when the projections are the identity (``w_*`` is None). An
    example is *runnable* when all three exist. ``given`` holds the numbers a
    figure-only example is checked with, ``notes`` remarks in plain words.

    Examples
    --------
    >>> ex = load_example("cat_sat_mat")
    >>> ex.tokens, ex.d_k, ex.scaled, ex.scale
    (['cat', 'sat', 'mat'], 2, False, 1.0)
    >>> ex.q
    array([[1., 0.],
           [0., 1.],
           [1., 1.]])
    """

    name: str
    title: str
    source: str
    section: str
    summary: str
    runnable: bool
    tokens: list[str]
    key_tokens: list[str]
    inputs: np.ndarray | None
    w_q: np.ndarray | None
    w_k: np.ndarray | None
    w_v: np.ndarray | None
    q: np.ndarray | None
    k: np.ndarray | None
    v: np.ndarray | None
    d_k: int | None
    scaled: bool
    scale: float
    figures: tuple[Figure, ...]
    raw: dict
    given: dict = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def figure(self, id: str) -> Figure:
        """The figure called ``id``; KeyError lists the valid ids.

        Examples
        --------
        >>> load_example("cat_sat").figure("exp_row0_sum").printed
        3.72
        """
        for fig in self.figures:
            if fig.id == id:
                return fig
        ids = ", ".join(f.id for f in self.figures) or "(none)"
        raise KeyError(f"example {self.name!r} has no figure {id!r}; its figures are: {ids}")

    @classmethod
    def _from_json(cls, d: dict) -> Example:
        inputs = _matrix(d["inputs"])
        proj = d["projections"]
        ws = {key: _matrix(proj[key]) for key in ("w_q", "w_k", "w_v")}

        def build(key, w):
            if d[key] is not None:
                return _matrix(d[key])
            if inputs is None:
                return None
            return inputs if w is None else inputs @ w

        d_k = d["d_k"]
        return cls(
            name=d["name"],
            title=d["title"],
            source=d["source"],
            section=d["section"],
            summary=d["summary"],
            runnable=bool(d["runnable"]),
            tokens=list(d["tokens"]),
            key_tokens=list(d.get("key_tokens", d["tokens"])),
            inputs=inputs,
            **ws,
            q=build("q", ws["w_q"]),
            k=build("k", ws["w_k"]),
            v=build("v", ws["w_v"]),
            d_k=d_k,
            scaled=bool(d["scaled"]),
            scale=float(1.0 / np.sqrt(d_k)) if d["scaled"] and d_k else 1.0,
            figures=tuple(Figure._from_json(f) for f in d["figures"]),
            raw=d,
            given=dict(d.get("given", {})),
            notes=tuple(d.get("notes", ())),
        )


class DataMissingError(FileNotFoundError):
    """The package's data folder is missing, unreadable or holds no example."""


def _json_files() -> dict:
    """``{name: resource}`` for every ``*.json`` in :data:`DATA_DIR`.

    Raises
    ------
    DataMissingError
        If the folder is missing, cannot be listed, or holds no JSON file:
        an install without its package data is broken, and an empty list of
        examples would hide that.
    """
    try:
        files = {p.name[:-5]: p for p in DATA_DIR.iterdir() if p.name.endswith(".json") and p.is_file()}
    except OSError as exc:
        raise DataMissingError(
            f"cannot read the examples' folder helpers/data ({exc.__class__.__name__}: {exc}); "
            "the package was installed without its data: reinstall it "
            "(pip install --force-reinstall attention-step-by-step, or pip install -e . in the repository)"
        ) from exc
    if not files:
        raise DataMissingError(
            "the examples' folder helpers/data holds no *.json file; the package was installed "
            "without its data: reinstall it (pip install --force-reinstall attention-step-by-step, "
            "or pip install -e . in the repository)"
        )
    return dict(sorted(files.items()))


def _read(resource) -> dict:
    with resource.open("r", encoding="utf-8") as fh:
        return json.load(fh)


def list_examples(runnable_only: bool = True) -> list[str]:
    """Sorted names of the stored examples.

    Parameters
    ----------
    runnable_only : bool, default True
        Leave out the figure-only examples (those without q, k and v).

    Returns
    -------
    list of str

    Raises
    ------
    DataMissingError
        If the package's data folder is missing or holds no example (a broken
        install), rather than returning an empty list.

    Examples
    --------
    >>> "i_am_happy" in list_examples(), "definition_4x4" in list_examples()
    (True, False)
    >>> "definition_4x4" in list_examples(runnable_only=False)
    True
    """
    return [name for name, resource in _json_files().items() if not runnable_only or _read(resource)["runnable"]]


def load_example(name: str) -> Example:
    """Load ``helpers/data/<name>.json`` as an :class:`Example`.

    Raises
    ------
    ValueError
        If there is no such example; the message lists the valid names.

    Examples
    --------
    >>> ex = load_example("journey")
    >>> ex.q.shape, ex.k.shape, ex.v.shape, round(ex.scale, 6)
    ((6, 2), (6, 2), (6, 2), 0.707107)
    """
    files = _json_files()
    if name not in files:
        raise ValueError(f"unknown example {name!r}; valid names are: {', '.join(files)}")
    return Example._from_json(_read(files[name]))


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def compute_quantity(example: Example, quantity: str):
    """Recompute ``quantity`` for ``example`` with NumPy alone.

    Parameters
    ----------
    example : Example
    quantity : str
        One of :data:`QUANTITIES` (described in the module docstring).

    Returns
    -------
    ndarray or float
        The whole quantity; a figure's ``index`` selects from it.

    Raises
    ------
    ValueError
        For an unknown quantity, or one the example lacks the data for.

    Examples
    --------
    >>> ex = load_example("cat_sat")
    >>> compute_quantity(ex, "scaled_scores")
    array([[1., 0.],
           [0., 1.]])
    >>> np.round(compute_quantity(ex, "out"), 4)
    array([[2.8068, 4.0758],
           [4.1932, 5.9242]])
    """
    if quantity not in QUANTITIES:
        raise ValueError(f"unknown quantity {quantity!r}; valid ones are: {', '.join(QUANTITIES)}")
    g = example.given
    if quantity == "row_sums_of_printed":
        return np.asarray(g["weights"], dtype=np.float64).sum(axis=-1)
    if quantity == "scaled_variance":
        return float(g["variance_before"]) / example.d_k
    if quantity == "pair_count":
        return float(g["n"]) ** 2
    if quantity == "scale_divisor":
        return float(np.sqrt(example.d_k))
    if quantity in ("q", "k", "v"):
        value = getattr(example, quantity)
        if value is None:
            raise ValueError(f"example {example.name!r} has no {quantity}")
        return value
    q, k = example.q, example.k
    if q is None or k is None:
        raise ValueError(f"example {example.name!r} has no queries and keys to compute {quantity!r}")
    if quantity == "score_terms":
        return q[:, None, :] * k[None, :, :]
    scores = q @ k.T
    if quantity == "scores":
        return scores
    scaled = scores / np.sqrt(example.d_k) if example.scaled else scores
    if quantity == "scaled_scores":
        return scaled
    if quantity == "exp_scaled_scores":
        return np.exp(scaled)
    if quantity == "exp_row_sums":
        return np.exp(scaled).sum(axis=-1)
    weights = _softmax(scaled)
    if quantity == "weights":
        return weights
    v = example.v
    if v is None:
        raise ValueError(f"example {example.name!r} has no values to compute {quantity!r}")
    if quantity == "weighted_values":
        return weights[:, :, None] * v[None, :, :]
    return weights @ v  # "out"


def errata(name: str | None = None) -> list[tuple[str, Figure]]:
    """Every figure that carries an erratum, as ``(example name, Figure)`` pairs.

    Parameters
    ----------
    name : str, optional
        Only this example; all of them by default.

    Examples
    --------
    >>> [fig.id for _, fig in errata("cat_sat_mat")]
    ['weights_row1', 'weights_row2', 'out_row1', 'out_row2']
    """
    names = list_examples(runnable_only=False) if name is None else [name]
    return [
        (n, fig)
        for n in names
        for fig in load_example(n).figures
        if fig.erratum is not None
    ]


def format_value(value, decimals: int) -> str:
    """A scalar or (nested) array written with ``decimals`` decimals, as a list.

    Examples
    --------
    >>> format_value([[0.3, 0.33]], 2)
    '[[0.30, 0.33]]'
    """
    if np.ndim(value) == 0:
        return f"{float(value):.{decimals}f}"
    return "[" + ", ".join(format_value(v, decimals) for v in np.asarray(value)) + "]"


def figure_table(example: Example | str, ids=None) -> str:
    """A "document vs exact" table of an example's printed figures, as text.

    One line per figure: its id, the value as the document prints it, the
    exact value (two more decimals than printed) and a mark: ``ok`` when the
    two agree within the document's rounding, ``WRONG (k)`` when they do not,
    with the erratum sentence ``(k)`` listed under the table.

    Parameters
    ----------
    example : Example or str
        The example, or its name.
    ids : sequence of str, optional
        Only these figures, in this order; all of them by default.

    Returns
    -------
    str

    Examples
    --------
    >>> print(figure_table("cat_sat_mat", ["weights_row0", "weights_row1"]))  # doctest: +ELLIPSIS
    figure        printed             exact                     check
    weights_row0  [0.42, 0.16, 0.42]  [0.4223, 0.1554, 0.4223]  ok
    weights_row1  [0.18, 0.33, 0.49]  [0.1554, 0.4223, 0.4223]  WRONG (1)
    <BLANKLINE>
    (1) weights_row1: The Step 2 softmax of the 'sat' scores [0, 1, 1] is ...
    """
    if isinstance(example, str):
        example = load_example(example)
    figures = example.figures if ids is None else [example.figure(i) for i in ids]
    rows, notes = [], []
    for fig in figures:
        mark = "ok"
        if fig.differs:
            notes.append(f"({len(notes) + 1}) {fig.id}: {fig.erratum}")
            mark = f"WRONG ({len(notes)})"
        rows.append((fig.id, format_value(fig.printed, fig.decimals), format_value(fig.exact, fig.decimals + 2), mark))
    header = ("figure", "printed", "exact", "check")
    widths = [max(len(r[c]) for r in rows + [header]) for c in range(3)]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(r[:3], widths)) + "  " + r[3]
        for r in [header] + rows
    ]
    if notes:
        lines += [""] + notes
    return "\n".join(lines)
