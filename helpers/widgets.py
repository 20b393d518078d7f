"""Interactive explorers: heatmaps of scores and weights driven by sliders.

:class:`AttentionExplorer` shows, side by side, the scores, the attention
weights and the outputs of one attention call, plus the weights of one query
row as bars, and updates them as the learner moves the controls:

- ``temperature`` (log scale, 0.05 to 20): the weights are
  ``softmax(scores / temperature)``;
- ``d_k`` (1 to 1024): the divisor ``sqrt(d_k)`` of the scaled scores;
- ``scaled``: divide by ``sqrt(d_k)`` or not;
- ``causal``: block the keys after each query;
- ``row``: the query whose weights are drawn as bars.

Two modes. *example*: one of the documents' worked examples (or the learner's
own sentence, with embeddings drawn from a seeded generator); ``d_k`` changes
only the divisor. *random*: fresh random q and k of dimension ``d_k``, so the
spread of the raw scores and the peakiness of the softmax can be watched
growing with ``d_k`` when unscaled, and staying put when scaled.

The logic is plain Python: setting a control's ``.value`` recomputes the
arrays and redraws the figure synchronously, so tests drive it without a
browser. The figure is built once and only its artists change (see
:class:`helpers.plots.AttentionFigure`); it reaches the page as a PNG in an
``ipywidgets.Image``, so nothing flickers and nothing is displayed twice.
"""

from __future__ import annotations

import math
import zlib

import ipywidgets as widgets
import numpy as np

from .attention import attention_scores, causal_mask, entropy, softmax
from .examples import list_examples, load_example
from .plots import AttentionFigure

__all__ = ["AttentionExplorer", "sentence_example", "random_qkv"]

CUSTOM = "(your sentence)"
MAX_TOKENS = 64
SENTENCE_D_MODEL = 8
RANDOM_N = 8
RANDOM_D_V = 4


def sentence_example(sentence, *, d_model=SENTENCE_D_MODEL, seed=0):
    """Tokens, q, k, v for a sentence of the learner's own, from seeded draws.

    Each distinct word gets the same embedding every time (its generator is
    seeded from ``seed`` and the word), and the projections ``W_q, W_k, W_v``
    of shape ``(d_model, d_model)`` come from a generator seeded with ``seed``.

    Returns
    -------
    tokens : list of str
    q, k, v : ndarray, shape (n, d_model)
    """
    tokens = sentence.split()[:MAX_TOKENS] or ["(empty)"]
    x = np.stack([
        np.random.default_rng([seed, zlib.crc32(token.lower().encode())]).standard_normal(d_model)
        for token in tokens
    ])  # (n, d_model)
    rng = np.random.default_rng([seed, 1])
    w_q, w_k, w_v = rng.standard_normal((3, d_model, d_model)) / math.sqrt(d_model)
    return tokens, x @ w_q, x @ w_k, x @ w_v


def random_qkv(d_k, *, n=RANDOM_N, d_v=RANDOM_D_V, seed=0):
    """Random q, k of dimension ``d_k`` (unit-variance entries) and v, from a seeded generator.

    Returns
    -------
    q, k : ndarray, shape (n, d_k)
    v : ndarray, shape (n, d_v)
    """
    rng = np.random.default_rng([seed, int(d_k)])
    return rng.standard_normal((n, d_k)), rng.standard_normal((n, d_k)), rng.standard_normal((n, d_v))


class AttentionExplorer:
    """Heatmaps of scores, weights and outputs with sliders for temperature and d_k.

    Parameters
    ----------
    example : str
        A name from :func:`helpers.examples.list_examples` (runnable examples).
    sentence : str, optional
        Start with this sentence instead (embeddings from a seeded generator).
    mode : {"example", "random"}
        Start in example mode or in random-q-and-k mode.
    seed : int
        Seed of every random draw (sentence embeddings, random mode).

    Attributes
    ----------
    controls : dict of str to ipywidgets.Widget
        ``"example"``, ``"sentence"``, ``"mode"``, ``"temperature"``, ``"d_k"``,
        ``"scaled"``, ``"causal"``, ``"row"``. Setting ``.value`` on any of them
        updates the arrays and the figure at once.
    widget : ipywidgets.VBox
        The whole explorer; displaying the explorer displays it.

    Examples
    --------
    >>> ex = AttentionExplorer("cat_sat")
    >>> ex.controls["temperature"].value = 0.5
    >>> print(np.round(ex.weights, 4))
    [[0.8808 0.1192]
     [0.1192 0.8808]]
    """

    def __init__(self, example="i_am_happy", *, sentence=None, mode="example", seed=0):
        names = list_examples()
        if example not in names:
            raise ValueError(f"unknown example {example!r}: choose one of {names}")
        if mode not in ("example", "random"):
            raise ValueError(f'mode must be "example" or "random": got {mode!r}')
        self.seed = seed
        self._figure = None
        self._updating = False
        start = load_example(example)
        style = {"description_width": "initial"}
        slider = widgets.Layout(width="440px")
        self.controls = {
            "example": widgets.Dropdown(
                options=names + [CUSTOM], value=CUSTOM if sentence else example,
                description="example", style=style),
            "sentence": widgets.Text(
                value=sentence or "The cat sat on the mat", description="your sentence",
                continuous_update=False, style=style, layout=widgets.Layout(width="420px")),
            "mode": widgets.ToggleButtons(
                options=[("document example", "example"), ("random q, k of size d_k", "random")],
                value=mode, description="mode", style={**style, "button_width": "190px"}),
            "temperature": widgets.FloatLogSlider(
                value=1.0, base=10, min=-1.3, max=1.3, step=0.01,  # 0.05 to 20, with 1.0 on the grid
                description="temperature T", readout_format=".2f", style=style, layout=slider),
            "d_k": widgets.IntSlider(
                value=start.d_k, min=1, max=1024, description="d_k", style=style, layout=slider),
            "scaled": widgets.Checkbox(value=start.scaled, description="scale by 1/√d_k", style=style),
            "causal": widgets.Checkbox(value=False, description="causal mask (query i sees keys 0..i)",
                                       style=style),
            "row": widgets.Dropdown(options=[("0", 0)], value=0, description="query row for the bars",
                                    style=style),
        }
        self.image = widgets.Image(format="png")
        self.readout = widgets.HTML()
        # CSS classes name the parts for the browser test (and for custom styling).
        for name, control in self.controls.items():
            control.add_class(f"attention-explorer-{name.replace('_', '-')}")
        self.image.add_class("attention-explorer-image")
        self.readout.add_class("attention-explorer-readout")
        self.widget = widgets.VBox([
            widgets.HBox([self.controls["mode"]]),
            widgets.HBox([self.controls["example"], self.controls["sentence"]]),
            widgets.HBox([self.controls["temperature"],
                          widgets.HTML("weights = softmax(scores / T): low T sharpens, high T flattens")]),
            widgets.HBox([self.controls["d_k"],
                          widgets.HTML("scores = q·k / √d_k when scaled (in random mode also the width of q, k)")]),
            widgets.HBox([self.controls["scaled"], self.controls["causal"], self.controls["row"]]),
            self.image,
            self.readout,
        ])
        self._load_inputs()
        for name, control in self.controls.items():
            control.observe(self._on_change, names="value")
        self._update()

    # -- what the view shows ------------------------------------------------

    @property
    def scores(self):
        """The scores drawn now, (n, m): q k^T / sqrt(d_k) when scaled, else q k^T."""
        return self._scores.copy()

    @property
    def weights(self):
        """The weights drawn now, (n, m): softmax(scores / temperature), causal mask if on."""
        return self._weights.copy()

    @property
    def out(self):
        """The outputs drawn now, (n, d_v): weights @ v."""
        return self._out.copy()

    @property
    def tokens(self):
        """(query tokens, key tokens) of the current inputs."""
        return list(self._row_labels), list(self._col_labels)

    @property
    def readouts(self):
        """The numbers of the readout line: entropy and largest weight per row, row sums."""
        return {
            "entropy": entropy(self._weights),
            "max_weight": self._weights.max(axis=-1),
            "argmax": self._weights.argmax(axis=-1),
            "row_sums": self._weights.sum(axis=-1),
            "score_std": float(self._scores.std()),
        }

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)

    # -- computing ------------------------------------------------------------

    def _load_inputs(self):
        """Set q, k, v and the labels from the mode, example and sentence controls."""
        c = self.controls
        if c["mode"].value == "random":
            self._q, self._k, self._v = random_qkv(c["d_k"].value, seed=self.seed)
            self._row_labels = [f"q{i}" for i in range(RANDOM_N)]
            self._col_labels = [f"k{j}" for j in range(RANDOM_N)]
        elif c["example"].value == CUSTOM:
            tokens, self._q, self._k, self._v = sentence_example(c["sentence"].value, seed=self.seed)
            self._row_labels = self._col_labels = tokens
        else:
            ex = load_example(c["example"].value)
            self._q, self._k, self._v = ex.q, ex.k, ex.v
            self._row_labels, self._col_labels = ex.tokens, ex.key_tokens
        n = len(self._row_labels)
        options = [(f"{i}: {t}", i) for i, t in enumerate(self._row_labels)]
        if c["row"].options != tuple(options):
            keep = min(c["row"].value, n - 1)
            c["row"].options = options
            c["row"].value = keep
        self._figure = None  # the shape may have changed: build a new figure

    def _compute(self):
        c = self.controls
        d_k = c["d_k"].value
        scale = 1.0 / math.sqrt(d_k) if c["scaled"].value else 1.0
        self._scores = attention_scores(self._q, self._k, scale=scale)  # (n, m)
        n, m = self._scores.shape
        logits = self._scores
        if c["causal"].value:
            logits = np.where(causal_mask(n, m), self._scores, -np.inf)
        self._weights = softmax(logits, temperature=c["temperature"].value)
        self._out = self._weights @ self._v  # (n, m) x (m, d_v) -> (n, d_v)

    def _on_change(self, change):
        if self._updating:
            return
        name = change["owner"]
        reload = name in (self.controls["mode"], self.controls["example"], self.controls["sentence"])
        random_dk = name is self.controls["d_k"] and self.controls["mode"].value == "random"
        self._updating = True
        try:
            if name is self.controls["example"] and change["new"] != CUSTOM:
                ex = load_example(change["new"])
                self.controls["d_k"].value = ex.d_k
                self.controls["scaled"].value = ex.scaled
            if reload or random_dk:
                self._load_inputs()
        finally:
            self._updating = False
        self._update()

    def _update(self):
        self._compute()
        if self._figure is None:
            self._figure = AttentionFigure(self._row_labels, self._col_labels, self._v.shape[-1])
        row = self.controls["row"].value
        self._figure.update(self._scores, self._weights, self._out, row=row)
        self.image.value = self._figure.png()
        self.readout.value = self._readout_html()

    def _readout_html(self):
        r = self.readouts
        c = self.controls
        names = self._col_labels
        cells = "".join(
            f"<tr><td>{self._row_labels[i]}</td><td>{r['entropy'][i]:.3f}</td>"
            f"<td>{r['max_weight'][i]:.3f} on {names[r['argmax'][i]]}</td><td>{r['row_sums'][i]:.3f}</td></tr>"
            for i in range(min(len(self._row_labels), 16))
        )
        scaled = f"scores = q·k / √{c['d_k'].value}" if c["scaled"].value else "scores = q·k (unscaled)"
        return (
            f"<p><b>{scaled}</b>, temperature {c['temperature'].value:.2f}; "
            f"spread of the scores (std) {r['score_std']:.3f}; "
            f"mean largest weight {r['max_weight'].mean():.3f}; "
            f"mean entropy {r['entropy'].mean():.3f} nats (uniform: {math.log(len(names)):.3f})</p>"
            "<table><tr><th>query</th><th>entropy (nats)</th><th>largest weight</th><th>row sum</th></tr>"
            f"{cells}</table>"
        )


# ---------------------------------------------------------------------------
# Trained heads: one head of the stored induction-head transformer (issue 13)
# ---------------------------------------------------------------------------

from .attention import causal_mask as _th_causal_mask  # noqa: E402
from .attention import softmax as _th_softmax  # noqa: E402
from .plots import heatmap as _th_heatmap  # noqa: E402


ANNOTATE_TOKENS = 8  # write the weights in the cells up to this many tokens (text is slow to draw)


def token_names(vocab_size):
    """Names of the token ids ``0..vocab_size-1``: letters A, B, C, ... (then t26, t27, ...)."""
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    return [letters[i] if i < len(letters) else f"t{i}" for i in range(vocab_size)]


def parse_tokens(text, vocab_size, max_len):
    """Token ids of a text such as ``"A B C D A B C"``, or a message saying what is wrong.

    Tokens are separated by spaces (or commas). Each is a name from
    :func:`token_names` (any case) or an id ``0..vocab_size-1``.

    Returns
    -------
    ids : list of int or None
        None when the text cannot be read.
    message : str
        Empty when ``ids`` is usable; otherwise why not, with the vocabulary.

    Examples
    --------
    >>> parse_tokens("A b 2", 16, 24)
    ([0, 1, 2], '')
    >>> parse_tokens("A Z", 16, 24)[1]
    'unknown token Z: the vocabulary is A B C D E F G H I J K L M N O P (or the ids 0..15)'
    """
    names = token_names(vocab_size)
    lookup = {name.upper(): i for i, name in enumerate(names)}
    vocabulary = f"the vocabulary is {' '.join(names)} (or the ids 0..{vocab_size - 1})"
    words = str(text).replace(",", " ").split()
    if not words:
        return None, f"type some tokens separated by spaces, e.g. A B C D A B C: {vocabulary}"
    if len(words) > max_len:
        return None, f"at most {max_len} tokens (the model's max_len): got {len(words)}"
    ids, unknown = [], []
    for word in words:
        key = word.upper()
        if key in lookup:
            ids.append(lookup[key])
        elif key.isdigit() and int(key) < vocab_size:
            ids.append(int(key))
        else:
            unknown.append(word)
    if unknown:
        shown = " ".join(unknown[:5]) + (" ..." if len(unknown) > 5 else "")
        plural = "s" if len(unknown) > 1 else ""
        return None, f"unknown token{plural} {shown}: {vocabulary}"
    return ids, ""


class TrainedHeadExplorer:
    """One head of the trained induction-head transformer, on a sequence the learner types.

    The learner picks a layer and a head, types tokens (e.g. ``"A B C D E A
    B C D"``), and sees that head's attention weights as a heatmap. The
    temperature slider divides the head's own scores before the softmax, as in
    :class:`AttentionExplorer`: ``weights = softmax(scores / T)`` with the
    causal mask, so ``T = 1`` shows exactly what the model computes.
    Any text is accepted: what cannot be read is explained in the message
    line (with the vocabulary), and nothing is raised.

    Parameters
    ----------
    model : helpers.transformer.AttentionOnlyTransformer, optional
        The stored trained model by default
        (:func:`helpers.transformer.load_trained_induction_model`).
    text : str
        The starting sequence.
    layer, head : int
        The starting head.

    Attributes
    ----------
    controls : dict of str to ipywidgets.Widget
        ``"layer"``, ``"head"``, ``"tokens"`` (text), ``"temperature"``.
    widget : ipywidgets.VBox

    Examples
    --------
    >>> ex = TrainedHeadExplorer(text="A B C D A B C", layer=1, head=0)
    >>> ex.weights.shape, ex.message
    ((7, 7), '')
    >>> ex.controls["tokens"].value = "A B Z"
    >>> ex.weights is None, ex.message.startswith("unknown token Z")
    (True, True)
    """

    def __init__(self, model=None, *, text="A B C D E A B C D", layer=1, head=0):
        from .transformer import load_trained_induction_model

        if model is None:
            model, _ = load_trained_induction_model()
        self.model = model
        self.names = token_names(model.vocab_size)
        for name, value, top in (("layer", layer, model.n_layers), ("head", head, model.n_heads)):
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < top:
                raise ValueError(f"{name} must be an integer in 0..{top - 1}: got {value!r}")
        style = {"description_width": "initial"}
        self.controls = {
            "layer": widgets.Dropdown(options=list(range(model.n_layers)), value=layer,
                                      description="layer", style=style),
            "head": widgets.Dropdown(options=list(range(model.n_heads)), value=head,
                                     description="head", style=style),
            "tokens": widgets.Text(value=text, description="your tokens", continuous_update=False,
                                   style=style, layout=widgets.Layout(width="420px")),
            "temperature": widgets.FloatLogSlider(
                value=1.0, base=10, min=-1.3, max=1.3, step=0.01, description="temperature T",
                readout_format=".2f", style=style, layout=widgets.Layout(width="440px")),
        }
        self.image = widgets.Image(format="png")
        self.readout = widgets.HTML()
        for name, control in self.controls.items():
            control.add_class(f"trained-head-explorer-{name}")
        vocabulary = " ".join(self.names)
        self.widget = widgets.VBox([
            widgets.HBox([self.controls["layer"], self.controls["head"], self.controls["tokens"]]),
            widgets.HTML(f"vocabulary: {vocabulary} (tokens separated by spaces)"),
            widgets.HBox([self.controls["temperature"],
                          widgets.HTML("weights = softmax(scores / T) over the keys 0..i")]),
            self.image,
            self.readout,
        ])
        self._ids = None
        self._qk = None
        self.message = ""
        self._scores = self._weights = None
        self._figure, self._figure_key = None, None
        for control in self.controls.values():
            control.observe(self._on_change, names="value")
        self._read_tokens()
        self._update()

    # -- what the view shows ------------------------------------------------

    @property
    def tokens(self):
        """The token names of the sequence shown, or None if the text could not be read."""
        return None if self._ids is None else [self.names[i] for i in self._ids]

    @property
    def scores(self):
        """The head's scores (n, n), q·k / sqrt(d_head), -inf above the diagonal; None if no sequence."""
        return None if self._scores is None else self._scores.copy()

    @property
    def weights(self):
        """The weights drawn now (n, n): softmax(scores / temperature); None if no sequence."""
        return None if self._weights is None else self._weights.copy()

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)

    # -- computing ------------------------------------------------------------

    def _read_tokens(self):
        """Parse the text; on success run the model once and keep every head's q and k."""
        self._ids, self.message = parse_tokens(self.controls["tokens"].value, self.model.vocab_size,
                                               self.model.max_len)
        self._qk = None
        if self._ids is not None:
            _, cache = self.model.forward(np.array([self._ids]))
            self._qk = [qkv[:2, 0].astype(np.float64) for qkv in cache["qkv"]]  # L x (2, H, n, e)

    def _on_change(self, change):
        if change["owner"] is self.controls["tokens"]:
            self._read_tokens()
        self._update()

    def _update(self):
        if self._ids is None:
            self._scores = self._weights = None
            self.image.value = b""
            self.readout.value = f"<p><b>{self.message}</b></p>"
            return
        layer, head = self.controls["layer"].value, self.controls["head"].value
        q, k = self._qk[layer][:, head]  # (n, e) each
        n = len(self._ids)
        scores = q @ k.T / math.sqrt(q.shape[-1])  # (n, e) x (e, n) -> (n, n)
        self._scores = np.where(_th_causal_mask(n), scores, -np.inf)
        self._weights = _th_softmax(self._scores, temperature=self.controls["temperature"].value)
        self.image.value = self._png(layer, head)
        self.readout.value = self._readout_html()

    def _png(self, layer, head):
        """The heatmap as PNG bytes; the figure is built once per sequence and then only updated."""
        import io

        from matplotlib.figure import Figure

        n = len(self._ids)
        title = f"layer {layer}, head {head}, T = {self.controls['temperature'].value:.2f}"
        if self._figure_key != tuple(self._ids):
            side = min(1.6 + 0.42 * n, 9.0)
            figure = Figure(figsize=(side + 1.2, side), layout="constrained")
            ax = figure.subplots()
            labels = [f"{t}{i}" if n > 1 else t for i, t in enumerate(self.tokens)]
            image = _th_heatmap(self._weights, labels, labels, ax=ax, title=title, annotate=n <= ANNOTATE_TOKENS)
            self._figure = (figure, image, list(ax.texts))  # the cell values, row by row
            self._figure_key = tuple(self._ids)
            figure.savefig(io.BytesIO(), format="png", dpi=72)  # lay it out once ...
            figure.set_layout_engine("none")  # ... and keep that layout: only the data change
        figure, image, texts = self._figure
        image.set_data(self._weights)
        image.axes.set_title(title)
        if len(texts) == n * n:
            for text, value in zip(texts, self._weights.ravel()):
                text.set_text(f"{value:.2f}")
                text.set_color("black" if value > 0.5 else "white")  # viridis: light above the middle
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=72)
        return buffer.getvalue()

    def _readout_html(self):
        tokens = self.tokens
        rows = []
        for i in range(len(tokens)):
            j = int(self._weights[i].argmax())
            rows.append(f"<tr><td>{i}: {tokens[i]}</td><td>{j}: {tokens[j]}</td>"
                        f"<td>{self._weights[i, j]:.2f}</td></tr>")
        return ("<table><tr><th>query</th><th>most weight on</th><th>weight</th></tr>"
                + "".join(rows) + "</table>")


__all__ += ["TrainedHeadExplorer", "parse_tokens", "token_names"]
