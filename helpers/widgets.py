"""Interactive explorers: heatmaps of scores and weights driven by sliders.

:class:`AttentionExplorer` shows, side by side, the **scaled scores**
``q k^T / sqrt(d_k)`` (titled "unscaled scores" and showing ``q k^T`` when
scaling is off), the attention weights and the outputs of one attention call,
plus the weights of one query row as bars, and updates them as the learner
moves the controls:

- ``temperature`` (log scale, 0.05 to 20): the weights are
  ``softmax(scaled scores / temperature)``;
- ``d_k`` (1 to 1024): what it means depends on the mode (below);
- ``scaled``: divide the scores by ``sqrt(d_k)`` or not;
- ``causal``: block the keys after each query;
- ``row``: the query whose weights are drawn as bars.

Two modes, and what ``d_k`` does in each:

- *example* (the default): one of the documents' worked examples (or the
  learner's own sentence, with embeddings drawn from a seeded generator). Its
  q and k keep their own width (the example's own ``d_k``, where the slider
  starts), so the slider sets **the divisor** ``sqrt(d_k)`` of their fixed dot
  products; it is labelled "divide by √d_k". What it changes is drawn: the
  scaled scores' heatmap keeps one colour scale (±the largest unscaled score,
  the largest a divisor of 1 or more can leave), so raising ``d_k`` pales it
  and writes smaller numbers in its cells, and the weights flatten, exactly
  as a higher temperature would flatten them. The text beside the slider and
  the readout say the divisor and how many numbers the example's q and k
  really have. With scaling off the slider changes nothing, and says so.
- *random*: fresh random q and k **of dimension** ``d_k`` (unit-variance
  entries), so the spread of the raw scores and the peakiness of the softmax
  can be watched growing with ``d_k`` when unscaled, and staying put when
  scaled. The scores' colour scale is fixed at ±3 (three standard deviations
  of a scaled score): unscaled scores of a large ``d_k`` run off it. This is
  the mode that shows why the scaling is there.

The control is called ``"d_k"`` in :attr:`AttentionExplorer.controls` in both.

Every number written in a heatmap cell is 10 pixels high on the picture (and
on the stored snapshot), with fewer decimals where a cell is too narrow for two.

The logic is plain Python: setting a control's ``.value`` recomputes the
arrays and redraws the figure synchronously, so tests drive it without a
browser. The figure is built once per shape and only its artists change (see
:class:`helpers.plots.AttentionFigure`); it reaches the page as a PNG in an
``ipywidgets.Image``, so nothing flickers and nothing is displayed twice.

Nothing a learner types breaks it: tokens are drawn literally (no TeX in the
labels), written escaped into the readouts' HTML, characters the font cannot
draw (control characters, lone surrogates, missing glyphs) show as ``�``, a
long sentence is cut at 64 words with a note saying where, and an update that
fails for any reason shows a short message and keeps the last picture, with
every control still working.

Displayed (``explorer`` as the last line of a cell, or ``display(explorer)``),
the explorer's output carries the live widget and, beside it, a static picture
of the current figure with the readouts: a ``text/html`` ``<img>`` whose alt
text describes it (helpers/figures.py; the PNG is stored once, in the ``<img>``),
plus a short ``text/plain``. A front end with a running kernel shows the widget;
a stored notebook opened without one (JupyterLab, nbconvert) shows the picture.
It works with ipywidgets 7.7+ and 8.
"""

from __future__ import annotations

import base64
import html
import io
import math
import unicodedata
import zlib
from functools import lru_cache

import ipywidgets as widgets
import numpy as np

from . import figures as _figures
from . import style
from .attention import attention_scores, causal_mask, entropy, softmax
from .examples import list_examples, load_example
from .plots import CELL_TEXT_SIZE, AttentionFigure, _GlyphCache, _symmetric_limit

__all__ = [
    "AttentionExplorer", "as_html", "picture_text", "sentence_example", "sentence_tokens", "random_qkv", "visible",
]

CUSTOM = "(your sentence)"
EMPTY = "(empty)"
MAX_TOKENS = 64
MAX_LABEL = 16  # characters of a token shown in labels and readouts
READOUT_ROWS = 16  # rows of the readout table
PLACEHOLDER = "\N{REPLACEMENT CHARACTER}"
SENTENCE_D_MODEL = 8
RANDOM_N = 8
RANDOM_D_V = 4
RANDOM_SCORES_LIMIT = 3.0  # random mode's fixed colour scale of the scores: 3 standard deviations of a scaled score
SCALED_TITLE = "scaled scores"  # the heatmap of q k^T / sqrt(d_k)
UNSCALED_TITLE = "unscaled scores"  # the same heatmap with scaling off: q k^T
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@lru_cache(maxsize=1)
def _drawable():
    """Code points the explorer's font (DejaVu Sans, shipped with matplotlib) has glyphs for."""
    from matplotlib.font_manager import FontProperties, findfont, get_font

    return frozenset(get_font(findfont(FontProperties(family="DejaVu Sans"))).get_charmap())


def visible(token, limit=MAX_LABEL):
    """``token`` as the explorer shows it: drawable characters only, at most ``limit`` of them.

    Control and format characters, lone surrogates, private-use and
    unassigned code points, and characters the font has no glyph for become
    ``�``; a longer token is cut to ``limit`` characters ending in ``…``.

    >>> visible("cat")
    'cat'
    >>> visible("bell\\x07")
    'bell�'
    >>> visible("antidisestablishmentarianism")
    'antidisestablis…'
    """
    drawable = _drawable()
    text = "".join(
        c if ord(c) in drawable and unicodedata.category(c) not in ("Cc", "Cf", "Cs", "Co", "Cn") else PLACEHOLDER
        for c in str(token)
    )
    return text if len(text) <= limit else text[: limit - 1] + "…"


def as_html(text, limit=None):
    """Any text, the learner's or a message quoting it, as HTML that shows it and does nothing else.

    The one escaping path of every widget here: characters the font cannot draw
    become ``�`` (as in the pictures, so text and picture agree), then ``<``,
    ``>``, ``&`` and quotes are escaped. ``limit`` cuts as :func:`visible` does.

    >>> as_html("<b>bold?</b> & $x$")
    '&lt;b&gt;bold?&lt;/b&gt; &amp; $x$'
    """
    text = str(text)
    return html.escape(visible(text, limit=len(text) if limit is None else limit), quote=True)


DESCRIPTION_CLASS = "explorer-picture-description"


def picture_text(text):
    """A picture's description as HTML a screen reader reads and the eye does not see.

    Put an ``ipywidgets.HTML`` holding it right after an ``ipywidgets.Image``.

    It sits right after the picture; on the site and in the decks a script also copies it
    into the picture's ``alt`` (web/templates/base/widget_names.html.j2). (An
    ``ipywidgets.Image`` has no alt of its own, and its ``tooltip`` breaks the saved
    widget's view in the static HTML manager.)
    """
    return (f'<span class="{DESCRIPTION_CLASS}" style="position:absolute;width:1px;height:1px;'
            f'overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap">{as_html(text)}</span>')


def _live(fragment):
    """``fragment`` in an ARIA live region: a screen reader announces the readouts when they change."""
    return f'<div role="status" aria-live="polite">{fragment}</div>'


def sentence_tokens(sentence, *, max_tokens=MAX_TOKENS):
    """The words the explorer uses from ``sentence``, and how many words it had.

    Words are split on whitespace; only the first ``max_tokens`` are kept. An
    empty sentence gives the single placeholder token ``"(empty)"``.

    Returns
    -------
    tokens : list of str, length 1 to max_tokens
    n_words : int
        The number of words in ``sentence`` (0 when empty).

    Examples
    --------
    >>> sentence_tokens("the cat sat", max_tokens=2)
    (['the', 'cat'], 3)
    """
    words = str(sentence).split()
    return (words[:max_tokens] or [EMPTY]), len(words)


def sentence_example(sentence, *, d_model=SENTENCE_D_MODEL, seed=0):
    """Tokens, q, k, v for a sentence of the learner's own, from seeded draws.

    Each distinct word gets the same embedding every time (its generator is
    seeded from ``seed`` and the word, case-folded), and the projections
    ``W_q, W_k, W_v`` of shape ``(d_model, d_model)`` come from a generator
    seeded with ``seed``. At most 64 words are used (see :func:`sentence_tokens`).

    Returns
    -------
    tokens : list of str
    q, k, v : ndarray, shape (n, d_model)
    """
    tokens, _ = sentence_tokens(sentence)
    x = np.stack([
        # surrogatepass: any str can be typed into the box, lone surrogates too
        np.random.default_rng([seed, zlib.crc32(token.lower().encode("utf-8", "surrogatepass"))])
        .standard_normal(d_model)
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



def _picture_layout():
    """The layout of an explorer's picture: its own shape, never stretched, at most 560 px tall.

    The picture is an ``<img>`` whose size the page decides: without a cap a tall
    figure filled more than a screen in the live lecture mode (1,036 px for the
    trained-head explorer), and a box of another shape would stretch it. So the
    height is capped, the width follows it, and ``object-fit: contain`` keeps the
    drawn aspect ratio in any box (tests/test_rise.py measures it on a live slide).
    """
    return widgets.Layout(max_height="560px", max_width="100%", width="auto", height="auto",
                          object_fit="contain")

# The sliders move on a log scale, in steps a keyboard can cross in about 20 presses
# (tests/test_widgets.py counts them): arrow keys one step, PageUp/PageDown five
# (ipywidgets' default keyboard page), Home/End the ends; any value can also be typed
# into the box after a slider (its readout), e.g. T = 8 between two steps.
TEMPERATURE_RANGE = (-1.3, 1.3)  # decades: T from 0.05 to 20
TEMPERATURE_STEP = 0.1  # decades: 1, 0.1 and 10 on the grid; 26 presses end to end
D_K_RANGE = (0, 10)  # powers of two: d_k from 1 to 1024
D_K_STEP = 1  # one press doubles or halves d_k: 1, 2, 4, ..., 1024 in 10 presses
KEYS_HELP = ("<small>Keys: Tab to a slider, then ←/→ one step (a tenth of a decade for T, "
             "a doubling for d_k), PageUp/PageDown five steps, Home/End the ends; "
             "or type a value into the box after the slider.</small>")


def _keys_help():
    """The keyboard help line (class ``keys-help``: a static deck, where nothing moves, leaves it out)."""
    line = widgets.HTML(KEYS_HELP)
    line.add_class("keys-help")
    return line


def temperature_slider(value=1.0, **kwargs):
    """The temperature slider: T from 0.05 to 20 on a log scale, 0.1 decade per arrow key."""
    return widgets.FloatLogSlider(value=value, base=10, min=TEMPERATURE_RANGE[0], max=TEMPERATURE_RANGE[1],
                                  step=TEMPERATURE_STEP, description="temperature T", readout_format=".2f",
                                  **kwargs)


def d_k_slider(value, **kwargs):
    """The d_k slider: 1 to 1024 by powers of two (any whole d_k can still be set or typed)."""
    return widgets.FloatLogSlider(value=value, base=2, min=D_K_RANGE[0], max=D_K_RANGE[1], step=D_K_STEP,
                                  description="divide by √d_k", readout_format=".0f", **kwargs)


def presses_across(slider, keys_per_press=1):
    """How many presses of a key that moves ``keys_per_press`` steps take ``slider`` from one end to the other."""
    steps = (slider.max - slider.min) / slider.step
    return math.ceil(round(steps, 9) / keys_per_press)


class AttentionExplorer:
    """Heatmaps of scores, weights and outputs with sliders for temperature and d_k.

    Parameters
    ----------
    example : str
        A name from :func:`helpers.examples.list_examples` (runnable examples).
    sentence : str, optional
        Start with this sentence instead (embeddings from a seeded generator).
    mode : {"example", "random"}
        Start in example mode (the toggle's "a lesson's vectors": the example's
        own q and k, so the d_k slider only changes the divisor) or in random
        mode (fresh random q and k whose width is the d_k slider).
    seed : int
        Seed of every random draw (sentence embeddings, random mode).

    Attributes
    ----------
    controls : dict of str to ipywidgets.Widget
        ``"example"``, ``"sentence"``, ``"mode"``, ``"temperature"``, ``"d_k"``,
        ``"scaled"``, ``"causal"``, ``"row"``. Setting ``.value`` on any of them
        updates the arrays and the figure at once.
    widget : ipywidgets.VBox
        The whole explorer; displaying the explorer displays it (with a
        static picture beside it for viewers without a kernel).
    image : ipywidgets.Image
        The current figure as a PNG.
    readout : ipywidgets.HTML
        Entropy, largest weight and row sum per query, as an HTML table.
    notice : ipywidgets.HTML
        What the learner should know about the picture: a cut sentence, or an
        update that failed. Empty otherwise.

    Examples
    --------
    >>> ex = AttentionExplorer("cat_sat")
    >>> ex.controls["temperature"].value = 0.5
    >>> print(np.round(ex.weights, 4))
    [[0.8808 0.1192]
     [0.1192 0.8808]]
    >>> ex.controls["d_k"].value = 512
    >>> ex.controls["d_k"].description, ex.divisor_text
    ('divide by √d_k', '÷ √512 = 22.63')
    """

    def __init__(self, example="i_am_happy", *, sentence=None, mode="example", seed=0):
        names = list_examples()
        if example not in names:
            raise ValueError(f"unknown example {example!r}: choose one of {names}")
        if mode not in ("example", "random"):
            raise ValueError(f'mode must be "example" or "random": got {mode!r}')
        self.seed = seed
        self._figure = None
        self._kept = None  # the one AttentionFigure, reshaped for each input
        self._glyphs = None
        self._updating = False
        self._note = ""  # about the inputs, e.g. a cut sentence
        self._error = ""  # about the last update, when it failed
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
                options=[("a lesson's vectors", "example"), ("random q, k of size d_k", "random")],
                value=mode, description="mode", style={**style, "button_width": "190px"}),
            "temperature": temperature_slider(style=style, layout=slider),
            "d_k": d_k_slider(start.d_k, style=style, layout=slider),
            "scaled": widgets.Checkbox(value=start.scaled, description="scale by 1/√d_k", style=style),
            "causal": widgets.Checkbox(value=False, description="causal mask (query i sees keys 0..i)",
                                       style=style),
            "row": widgets.Dropdown(options=[("0", 0)], value=0, description="query row for the bars",
                                    style=style),
        }
        self.d_k_help = widgets.HTML()
        self.notice = widgets.HTML()
        self.image = widgets.Image(format="png", layout=_picture_layout())
        self.image_text = widgets.HTML()  # the picture in words, for a screen reader
        self.readout = widgets.HTML()
        # CSS classes name the parts for the browser test (and for custom styling).
        for name, control in self.controls.items():
            control.add_class(f"attention-explorer-{name.replace('_', '-')}")
        for name in ("d_k_help", "notice", "image", "readout"):
            getattr(self, name).add_class(f"attention-explorer-{name.replace('_', '-')}")
        self.widget = widgets.VBox([
            _keys_help(),
            widgets.HBox([self.controls["mode"]]),
            widgets.HBox([self.controls["example"], self.controls["sentence"]]),
            widgets.HBox([self.controls["temperature"],
                          widgets.HTML("weights = softmax(scores / T): low T sharpens, high T flattens")]),
            widgets.HBox([self.controls["d_k"], self.d_k_help]),
            widgets.HBox([self.controls["scaled"], self.controls["causal"], self.controls["row"]]),
            self.notice,
            self.image,
            self.image_text,
            self.readout,
        ])
        self._inputs = self._read_inputs()
        self._set_row_options()
        for name, control in self.controls.items():
            control.observe(self._on_change, names="value")
        self._updating = True
        try:
            self._update()
        finally:
            self._updating = False
        self._show_notice()

    # -- what the view shows ------------------------------------------------

    @property
    def scores(self):
        """The scores drawn now, (n, m): the scaled scores q k^T / sqrt(d_k) when scaled, else q k^T."""
        return self._scores.copy()

    @property
    def scores_title(self):
        """The title of the scores' heatmap: ``"scaled scores"`` (q k^T / sqrt(d_k)) or ``"unscaled scores"``."""
        return SCALED_TITLE if self.controls["scaled"].value else UNSCALED_TITLE

    @property
    def scores_limit(self):
        """The scores' colour scale runs from ``-scores_limit`` to ``scores_limit``; it does not follow d_k.

        Example mode: the largest unscaled score |q·k| of these q and k (dividing by
        √d_k ≥ 1 only pales the colours). Random mode: 3, three standard deviations of
        a scaled score (unscaled scores of a large d_k run off the scale).
        """
        return self._inputs["scores_limit"]

    @property
    def d_k(self):
        """The d_k the slider sets, as an integer (the slider's value is a float on a log scale)."""
        return int(round(self.controls["d_k"].value))

    @property
    def own_d_k(self):
        """How many numbers the q and k shown really have (random mode: the slider's d_k)."""
        return int(self._inputs["q"].shape[-1])

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
        """(query tokens, key tokens) of the current inputs, as typed."""
        return list(self._inputs["rows"]), list(self._inputs["cols"])

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

    @property
    def divisor_text(self):
        """The divisor the scores are divided by now, e.g. ``"÷ √512 = 22.63"`` (``"÷ 1"`` unscaled)."""
        d_k = self.d_k
        return f"÷ √{d_k} = {math.sqrt(d_k):.2f}" if self.controls["scaled"].value else "÷ 1"

    @property
    def message(self):
        """The notice as plain text: a cut sentence, a failed update, or ``""``."""
        return " ".join(part for part in (self._error, self._note) if part)

    def __repr__(self):
        c = self.controls
        if c["mode"].value == "random":
            what = f"random q, k of size d_k = {self.d_k}"
        elif c["example"].value == CUSTOM:
            what = f"your sentence ({len(self._inputs['rows'])} tokens)"
        else:
            what = f"example {c['example'].value!r}"
        scaled = f"scores {self.divisor_text}" if c["scaled"].value else "unscaled scores"
        causal = ", causal mask" if c["causal"].value else ""
        return (f"AttentionExplorer: {what}, T = {c['temperature'].value:.2f}, {scaled}{causal} "
                "(run the cell to move its controls)")

    def _repr_mimebundle_(self, include=None, exclude=None, **kwargs):
        """The live widget plus, for viewers without a kernel, a picture of it and a short text.

        ipywidgets 8 widgets have ``_repr_mimebundle_``; ipywidgets 7 ones
        display through ``_ipython_display_`` instead, so for those the widget
        view is built here as ipywidgets 7 builds it. A front end that can
        show the widget shows only the widget (a bundle is one output, shown
        in one of its formats); one that cannot shows the picture: a ``text/html``
        ``<img>`` with the description as alt text, the one copy of the PNG.
        """
        own = getattr(self.widget, "_repr_mimebundle_", None)
        if own is not None:  # ipywidgets 8
            bundle = dict(own(**kwargs) or {})
        else:  # ipywidgets 7: what Widget._ipython_display_ publishes
            bundle = {WIDGET_VIEW: {"version_major": 2, "version_minor": 0, "model_id": self.widget.model_id}}
            displayed = getattr(self.widget, "_handle_displayed", None)
            if displayed is not None:
                displayed(**kwargs)
        bundle["text/plain"] = repr(self)
        png = base64.b64encode(self.snapshot_png()).decode("ascii")
        # for a viewer without the widget: the picture with its description as alt text
        bundle["text/html"] = _figures.img_html(png, self.description)
        return bundle

    @property
    def description(self):
        """The picture in words, from the numbers drawn: what a screen reader says for the snapshot."""
        c, r = self.controls, self.readouts
        rows, cols = self._inputs["shown_rows"], self._inputs["shown_cols"]
        n, m = self._weights.shape
        i = int(np.argmax(r["max_weight"]))
        if c["scaled"].value:
            scores = f"the scaled scores q·k / √d_k (d_k = {self.d_k}, {self.divisor_text})"
        else:
            scores = "the unscaled scores q·k"
        return (f"Attention explorer: heatmaps of {scores}, the weights and the outputs for {n} queries × "
                f"{m} keys ({_figures.token_list(cols)}), and the weights of query row {c['row'].value} as bars; "
                f"q and k have {self.own_d_k} numbers each; temperature {c['temperature'].value:.2f}"
                f"{', causal mask' if c['causal'].value else ''}; mean entropy {r['entropy'].mean():.3f} nats; "
                f"largest weight {r['max_weight'][i]:.2f}, {rows[i]} to {cols[int(r['argmax'][i])]}.")

    # -- computing ------------------------------------------------------------

    def _read_inputs(self):
        """q, k, v, labels and a note from the mode, example and sentence controls (nothing is changed)."""
        c = self.controls
        note = ""
        if c["mode"].value == "random":
            q, k, v = random_qkv(self.d_k, seed=self.seed)
            rows = [f"q{i}" for i in range(RANDOM_N)]
            cols = [f"k{j}" for j in range(RANDOM_N)]
        elif c["example"].value == CUSTOM:
            rows, q, k, v = sentence_example(c["sentence"].value, seed=self.seed)
            cols = rows
            n_words = sentence_tokens(c["sentence"].value)[1]
            if n_words > len(rows):
                note = (f"Showing the first {len(rows)} of {n_words} words; "
                        f"cut after '{visible(rows[-1])}'.")
            elif n_words == 0:
                note = f"The sentence is empty: showing the placeholder word {EMPTY}."
        else:
            ex = load_example(c["example"].value)
            q, k, v, rows, cols = ex.q, ex.k, ex.v, ex.tokens, ex.key_tokens
        # the scores' colour scale, fixed while d_k, the temperature and the scaling move
        limit = RANDOM_SCORES_LIMIT if c["mode"].value == "random" else _symmetric_limit(q @ k.T)
        return {"q": q, "k": k, "v": v, "rows": list(rows), "cols": list(cols), "note": note,
                "shown_rows": [visible(t) for t in rows], "shown_cols": [visible(t) for t in cols],
                "scores_limit": limit}

    def _set_row_options(self):
        """One option per query row (keeping the chosen row when it still exists)."""
        row = self.controls["row"]
        options = [(f"{i}: {t}", i) for i, t in enumerate(self._inputs["shown_rows"])]
        if row.options != tuple(options):
            keep = min(row.value, len(options) - 1)
            row.options = options
            row.value = keep

    def _compute(self, inputs):
        """Scores (n, m), weights (n, m) and outputs (n, d_v) of ``inputs`` under the current controls."""
        c = self.controls
        scale = 1.0 / math.sqrt(self.d_k) if c["scaled"].value else 1.0
        scores = attention_scores(inputs["q"], inputs["k"], scale=scale)  # (n, m)
        n, m = scores.shape
        logits = np.where(causal_mask(n, m), scores, -np.inf) if c["causal"].value else scores
        weights = softmax(logits, temperature=c["temperature"].value)
        return scores, weights, weights @ inputs["v"]  # (n, m) x (m, d_v) -> (n, d_v)

    def _figure_for(self, inputs):
        """The explorer's one figure, set for these labels and d_v.

        The same labels: only the bar chart's title changes with the sentence. Other words
        or other counts: the kept figure is reshaped (new size, ticks and margins; about half
        the cost of a new figure, and the same picture, tested). Labels the figure does not
        write (too many to read) are not part of it: a new long sentence of the same length
        costs only an update.
        """
        rows, cols, d_v = inputs["shown_rows"], inputs["shown_cols"], inputs["v"].shape[-1]
        figure = self._kept
        if figure is None:
            figure = AttentionFigure(rows, cols, d_v)
        elif AttentionFigure.key_for(rows, cols, d_v) != figure.picture_key:
            figure.reshape(rows, cols, d_v)
        else:  # the same picture; the bar chart's title names the row by this sentence's token
            figure.row_labels, figure.col_labels = list(rows), list(cols)
        self._kept = figure
        return figure

    def _on_change(self, change):
        if self._updating:
            return
        c = self.controls
        owner = change["owner"]
        self._updating = True
        try:
            if owner is c["example"] and change["new"] != CUSTOM:
                ex = load_example(change["new"])
                c["d_k"].value = ex.d_k
                c["scaled"].value = ex.scaled
            reload = owner in (c["mode"], c["example"], c["sentence"]) or (
                owner is c["d_k"] and c["mode"].value == "random")
            self._update(reload=reload)
        except Exception as error:  # noqa: BLE001 - any failure: say so, keep the last picture
            first_line = (str(error).strip().splitlines() or [""])[0][:120]
            self._error = (f"This change could not be drawn ({type(error).__name__}: {first_line}); "
                           "the picture and numbers below are from before it. Move any control to try again.")
        finally:
            self._updating = False
        self._show_notice()

    def _update(self, reload=False):
        """Recompute and redraw; nothing visible changes unless all of it worked."""
        inputs = self._read_inputs() if reload else self._inputs
        scores, weights, out = self._compute(inputs)
        row = min(self.controls["row"].value, len(inputs["rows"]) - 1)
        figure = self._figure_for(inputs)
        try:
            figure.update(scores, weights, out, row=row, scores_limit=inputs["scores_limit"],
                          scores_title=self.scores_title)
            png = figure.png()
        except Exception:
            self._kept = None  # built afresh next time
            raise
        # All worked: show it.
        self._inputs, self._figure = inputs, figure
        self._scores, self._weights, self._out = scores, weights, out
        self._note, self._error = inputs["note"], ""
        self._set_row_options()
        self.image.value = png
        self.readout.value = self._readout_html()
        self.d_k_help.value = as_html(self._d_k_help_text())
        self.image_text.value = picture_text(self.description)

    def _show_notice(self):
        self.notice.value = "".join(
            f'<p style="color:{colour}">{as_html(text)}</p>'
            for text, colour in ((self._error, "#b00020"), (self._note, "#555"))
            if text
        )

    # -- readouts -------------------------------------------------------------

    def _d_k_help_text(self):
        c = self.controls
        d_k, scaled = self.d_k, c["scaled"].value
        if c["mode"].value == "random":
            c["d_k"].description = "d_k = size of q, k"
            return (f"q and k have {d_k} numbers each; "
                    + (f"scores {self.divisor_text}" if scaled else "unscaled: their spread grows like √d_k"))
        c["d_k"].description = "divide by √d_k"
        width = self.own_d_k
        if not scaled:
            return (f"unscaled: d_k changes nothing here (tick scale by 1/√d_k); "
                    f"q and k keep their {width} numbers")
        return (f"{self.divisor_text}: the divisor of these fixed scores; q and k keep their "
                f"{width} numbers (their own d_k is {width}); random mode draws q, k of size d_k")

    def _summary_lines(self):
        """The readouts' first lines as plain text."""
        c, r = self.controls, self.readouts
        d_k = self.d_k
        if not c["scaled"].value:
            formula = "unscaled scores = q·k"
        elif c["mode"].value == "random":
            formula = f"scaled scores = q·k / √d_k, d_k = {d_k} (the size of q and k): {self.divisor_text}"
        else:
            formula = (f"scaled scores = q·k / √d_k with the divisor set to √{d_k} = {math.sqrt(d_k):.2f} "
                       f"(q and k have {self.own_d_k} numbers each)")
        m = len(self._inputs["cols"])
        return [
            f"{formula}; temperature {c['temperature'].value:.2f}",
            f"spread of the scores (std) {r['score_std']:.3f}; mean largest weight {r['max_weight'].mean():.3f}; "
            f"mean entropy {r['entropy'].mean():.3f} nats (uniform over {m} keys: {math.log(m):.3f})",
        ]

    def _table(self):
        """Header and rows of the readout table as plain text cells (at most 16 rows)."""
        r = self.readouts
        rows, cols = self._inputs["shown_rows"], self._inputs["shown_cols"]
        body = [
            [rows[i], f"{r['entropy'][i]:.3f}", f"{r['max_weight'][i]:.3f} on {cols[r['argmax'][i]]}",
             f"{r['row_sums'][i]:.3f}"]
            for i in range(min(len(rows), READOUT_ROWS))
        ]
        header = ["query", "entropy (nats)", "largest weight", "row sum"]
        more = f"(the first {READOUT_ROWS} of {len(rows)} queries)" if len(rows) > READOUT_ROWS else ""
        return header, body, more

    def _readout_html(self):
        """The readouts as HTML: every token is escaped, so it shows exactly as typed."""
        first, second = (as_html(line) for line in self._summary_lines())
        header, body, more = self._table()
        cells = "".join("<tr>" + "".join(f"<td>{as_html(x)}</td>" for x in row) + "</tr>" for row in body)
        heads = "".join(f'<th scope="col">{as_html(x)}</th>' for x in header)
        return _live(f"<p><b>{first}</b><br>{second}</p><table><tr>{heads}</tr>{cells}</table>"
                     + (f"<p>{as_html(more)}</p>" if more else ""))

    def snapshot_png(self):
        """The picture and the readouts as one PNG: what a viewer without a kernel sees.

        The figure as the widget shows it now, with the notice, the summary
        and the readout table stamped below it in the same font.
        """
        from PIL import Image

        if self._glyphs is None:
            self._glyphs = _GlyphCache(dpi=72)
        size, line, pad = 10, 15, 8  # 10-pixel text, as the cell values
        header, body, more = self._table()
        widths = [max(self._glyphs._alpha(row[j], size).shape[1] for row in [header, *body]) + 18
                  for j in range(len(header))]
        lines = [text for text in (self.message, *self._summary_lines()) if text]
        figure = np.asarray(Image.open(io.BytesIO(self.image.value)).convert("RGBA"))
        text_width = max([sum(widths)] + [self._glyphs._alpha(t, size).shape[1] for t in lines])
        height = figure.shape[0] + pad + line * (len(lines) + 1 + len(body) + bool(more)) + pad
        pixels = np.full((height, max(figure.shape[1], text_width + 2 * pad), 4), 255, dtype=np.uint8)
        pixels[: figure.shape[0], : figure.shape[1]] = figure
        y = figure.shape[0] + pad + line / 2
        for text in lines:
            colour = "#b00020" if self._error and text == self.message else "black"
            self._glyphs.stamp(pixels, text, colour, pad, y, False, size=size)
            y += line
        for k, row in enumerate([header, *body]):
            x = pad
            for j, cell in enumerate(row):
                self._glyphs.stamp(pixels, cell, "#555" if k == 0 else "black", x, y, False, size=size)
                x += widths[j]
            y += line
        if more:
            self._glyphs.stamp(pixels, more, "#555", pad, y, False, size=size)
        buffer = io.BytesIO()
        Image.fromarray(pixels).save(buffer, format="png", optimize=True)
        return buffer.getvalue()


# ---------------------------------------------------------------------------
# Trained heads: one head of the stored induction-head transformer (issue 13)
# ---------------------------------------------------------------------------

from .attention import causal_mask as _th_causal_mask  # noqa: E402
from .attention import softmax as _th_softmax  # noqa: E402
from .plots import _text_colour as _th_text_colour  # noqa: E402
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
    >>> parse_tokens("A \u0663", 16, 24)[1][:45]     # an Arabic-Indic three is not the id 3
    'unknown token ٣; write ids with the digits 0-'
    """
    names = token_names(vocab_size)
    lookup = {name.upper(): i for i, name in enumerate(names)}
    vocabulary = f"the vocabulary is {' '.join(names)} (or the ids 0..{vocab_size - 1})"
    words = str(text).replace(",", " ").split()
    if not words:
        return None, f"type some tokens separated by spaces, e.g. A B C D A B C: {vocabulary}"
    if len(words) > max_len:
        return None, f"at most {max_len} tokens (the model's max_len): got {len(words)}"
    ids, unknown, digits = [], [], []
    id_width = len(str(vocab_size - 1))
    for word in words:
        key = word.upper()
        if key in lookup:
            ids.append(lookup[key])
        elif word.isascii() and word.isdigit() and len(word.lstrip("0")) <= id_width and int(word) < vocab_size:
            ids.append(int(word))  # ASCII digits only: int() would also read ٣ or ３ as 3
        else:
            unknown.append(word)
            if not word.isascii() and any(unicodedata.category(c) == "Nd" for c in word):
                digits.append(word)
    if unknown:
        shown = " ".join(visible(w) for w in unknown[:5]) + (" ..." if len(unknown) > 5 else "")
        plural = "s" if len(unknown) > 1 else ""
        hint = "; write ids with the digits 0-9" if digits else ""
        return None, f"unknown token{plural} {shown}{hint}: {vocabulary}"
    return ids, ""


class TrainedHeadExplorer:
    """One head of the trained induction-head transformer, on a sequence the learner types.

    The learner picks a layer and a head, types tokens (e.g. ``"A B C D E A
    B C D"``), and sees that head's attention weights as a heatmap. The
    temperature slider divides the head's own scores before the softmax, as in
    :class:`AttentionExplorer`: ``weights = softmax(scores / T)`` with the
    causal mask, so ``T = 1`` shows exactly what the model computes.
    Any text is accepted: what cannot be read is explained in the message
    line (with the vocabulary), and nothing is raised. Text reaches the page
    only through :func:`as_html` (escaped), and the picture always shows the
    sequence the message describes (none while the text cannot be read).

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
            "temperature": temperature_slider(style=style, layout=widgets.Layout(width="440px")),
        }
        self.image = widgets.Image(format="png", layout=_picture_layout())
        self.image_text = widgets.HTML()  # the picture in words, for a screen reader
        self.readout = widgets.HTML()
        for name, control in self.controls.items():
            control.add_class(f"trained-head-explorer-{name}")
        vocabulary = " ".join(self.names)
        self.widget = widgets.VBox([
            widgets.HBox([self.controls["layer"], self.controls["head"], self.controls["tokens"]]),
            widgets.HTML(f"vocabulary: {vocabulary} (tokens separated by spaces)"),
            _keys_help(),
            widgets.HBox([self.controls["temperature"],
                          widgets.HTML("weights = softmax(scores / T) over the keys 0..i")]),
            self.image,
            self.image_text,
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
        """The live widget, and for a viewer without it, the heatmap with its description as alt text."""
        bundle = dict(self.widget._repr_mimebundle_(**kwargs) or {})
        if self._weights is not None and self.image.value:
            png = base64.b64encode(bytes(self.image.value)).decode("ascii")
            bundle["text/html"] = _figures.img_html(png, self.description)
        return bundle

    @property
    def description(self):
        """The heatmap in words, from the weights drawn (or the message when nothing is drawn)."""
        if self._weights is None:
            return f"No heatmap: {self.message}"
        n = len(self._ids)
        i, j = np.unravel_index(int(np.argmax(np.where(np.isfinite(self._weights), self._weights, -1))), (n, n))
        return (f"Heatmap of the attention weights of layer {self.controls['layer'].value}, head "
                f"{self.controls['head'].value}, temperature {self.controls['temperature'].value:.2f}, "
                f"{n} tokens ({_figures.token_list(self.tokens)}), causal; largest weight "
                f"{self._weights[i, j]:.2f}, query {i} ({self.tokens[i]}) to key {j} ({self.tokens[j]}).")

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
        try:
            if change["owner"] is self.controls["tokens"]:
                self._read_tokens()
            self._update()
        except Exception as error:  # noqa: BLE001 - any failure: say so; picture and message agree
            first_line = (str(error).strip().splitlines() or [""])[0][:120]
            self._ids = self._qk = None
            self._scores = self._weights = None
            self.message = (f"This change could not be drawn ({type(error).__name__}: {first_line}); "
                            "type a sequence or move a control to try again.")
            self.image.value = b""
            self.image_text.value = picture_text(f"No heatmap: {self.message}")
            self.readout.value = _live(f"<p><b>{as_html(self.message)}</b></p>")

    def _update(self):
        if self._ids is None:
            self._scores = self._weights = None
            self.image.value = b""
            self.image_text.value = picture_text(self.description)
            self.readout.value = _live(f"<p><b>{as_html(self.message)}</b></p>")
            return
        layer, head = self.controls["layer"].value, self.controls["head"].value
        q, k = self._qk[layer][:, head]  # (n, e) each
        n = len(self._ids)
        scores = q @ k.T / math.sqrt(q.shape[-1])  # (n, e) x (e, n) -> (n, n)
        self._scores = np.where(_th_causal_mask(n), scores, -np.inf)
        self._weights = _th_softmax(self._scores, temperature=self.controls["temperature"].value)
        self.image.value = self._png(layer, head)
        self.readout.value = self._readout_html()
        self.image_text.value = picture_text(self.description)

    def _png(self, layer, head):
        """The heatmap as PNG bytes; the figure is built once per sequence and then only updated."""
        import io

        from matplotlib.figure import Figure

        n = len(self._ids)
        title = f"layer {layer}, head {head}, T = {self.controls['temperature'].value:.2f}"
        slide = style.is_slide()  # a static deck shows the picture at slide size (issue 32)
        dpi = style.SLIDE_DPI if slide else 72
        if self._figure_key != tuple(self._ids):
            side = min(1.6 + 0.42 * n, 9.0)
            figure = Figure(figsize=(side + 1.2, side), layout="constrained")
            ax = figure.subplots()
            labels = [f"{t}{i}" if n > 1 else t for i, t in enumerate(self.tokens)]
            image = _th_heatmap(self._weights, labels, labels, ax=ax, title=title, annotate=n <= ANNOTATE_TOKENS)
            for text in ax.texts:
                text.set_fontsize(CELL_TEXT_SIZE)  # 10 px at 72 dpi, as in AttentionExplorer
            if slide:  # the slide's canvas and text sizes; crowded cell values are left out
                from matplotlib.backends.backend_agg import FigureCanvasAgg

                FigureCanvasAgg(figure)  # a canvas that lays the figure out when drawn
                for text in ax.texts:
                    text.set_gid(style.CELL_VALUE)
                style.fit_for_slide(figure)
            self._title_size = ax.title.get_fontsize()
            self._figure = (figure, image, list(ax.texts))  # the cell values, row by row
            self._figure_key = tuple(self._ids)
            figure.savefig(io.BytesIO(), format="png", dpi=dpi)  # lay it out once ...
            figure.set_layout_engine("none")  # ... and keep that layout: only the data change
        figure, image, texts = self._figure
        image.set_data(self._weights)
        image.axes.set_title(title)
        if slide:
            image.axes.title.set_fontsize(self._title_size)
        if len(texts) == n * n:
            for text, value in zip(texts, self._weights.ravel()):
                text.set_text(f"{value:.2f}")
                text.set_color(_th_text_colour(image.cmap(image.norm(value))))  # the better WCAG contrast
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=dpi)
        return buffer.getvalue()

    def _readout_html(self):
        tokens = self.tokens
        rows = []
        for i in range(len(tokens)):
            j = int(self._weights[i].argmax())
            rows.append(f"<tr><td>{i}: {as_html(tokens[i])}</td><td>{j}: {as_html(tokens[j])}</td>"
                        f"<td>{self._weights[i, j]:.2f}</td></tr>")
        return _live('<table><tr><th scope="col">query</th><th scope="col">most weight on</th>'
                     '<th scope="col">weight</th></tr>' + "".join(rows) + "</table>")


__all__ += ["TrainedHeadExplorer", "parse_tokens", "token_names"]
