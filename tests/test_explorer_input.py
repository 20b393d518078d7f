"""The explorer survives whatever a learner types into its sentence box.

A property test types arbitrary text (any code point, lone surrogates and
control characters included, plus the characters that broke it before: ``$``,
``\\``, ``<``, ``&``, emoji) of 0 to 200 words, then moves every control. After
every move: no exception, no warning, no failure message, a new picture, and
readouts whose HTML holds only the explorer's own tags, with each token as
text, exactly as the explorer shows it.
"""

import base64
import html.parser
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.widgets import CUSTOM, MAX_TOKENS, AttentionExplorer, sentence_tokens, visible

PNG = b"\x89PNG\r\n\x1a\n"
TRICKY = ["$", "$$", "$x^$", "$}$", "\\", "\\frac", "<", "&", "&amp;", "<b>", "<img src=x onerror=alert(1)>",
          "\U0001F600", "\U0001F9D1\u200D\U0001F4BB", "\x00", "\x07", "\x1b[31m", "\u202e", "\ud800", "\udfff",
          "\ufdfd", "\u0301", "\uffff"]
CHARACTERS = st.one_of(
    # Code points drawn as integers (hypothesis' `characters` filters differ across the
    # versions the floors allow): every code point, surrogates included, then the
    # surrogates, control and format characters on their own.
    st.integers(min_value=0, max_value=0x10FFFF).map(chr),
    st.one_of(
        st.integers(0xD800, 0xDFFF), st.integers(0x00, 0x1F), st.integers(0x7F, 0x9F),
        st.sampled_from([0x00AD, 0x200B, 0x200D, 0x200E, 0x202E, 0x2060, 0xFEFF]),
    ).map(chr),
    st.sampled_from("$\\<>&\"'{}^_%#\U0001F600\u200d"),
)
WORDS = st.one_of(st.sampled_from(TRICKY), st.text(CHARACTERS, min_size=1, max_size=12))
SENTENCES = st.one_of(
    st.lists(WORDS, max_size=200).map(" ".join),
    st.lists(WORDS, min_size=MAX_TOKENS + 1, max_size=200).map(" ".join),  # always cut
    st.text(CHARACTERS, max_size=300),
)
EXAMPLES = 15  # about 1.7 s of CPU each (a new figure per sentence): ~25 s in all


class _Tags(html.parser.HTMLParser):
    """Tags and the text of each table cell of an HTML fragment."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags, self.cells, self._cell = set(), [], None

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        if tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.cells.append("".join(self._cell))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def _parse(fragment):
    parser = _Tags()
    parser.feed(fragment)
    parser.close()
    return parser


def _check(explorer, sentence, before):
    assert explorer._error == "", explorer.message
    assert bytes(explorer.image.value).startswith(PNG)
    parsed = _parse(explorer.readout.value)
    assert parsed.tags <= {"p", "b", "br", "table", "tr", "th", "td"}, parsed.tags
    rows, _ = explorer.tokens
    shown = [visible(t) for t in rows][:16]
    # one row of four cells per query after the header: its first cell is the token, as shown
    assert parsed.cells[4::4] == shown
    assert _parse(explorer.notice.value).tags <= {"p"}
    assert _parse(explorer.d_k_help.value).tags == set()
    np.testing.assert_allclose(explorer.weights.sum(axis=-1), 1.0, atol=1e-9)
    return bytes(explorer.image.value) != before


_EXPLORER = []


def _explorer():
    if not _EXPLORER:  # one explorer for every example: no state may be lost between sentences
        _EXPLORER.append(AttentionExplorer("journey", sentence="start"))
    return _EXPLORER[0]


@settings(max_examples=EXAMPLES)
@given(sentence=SENTENCES)
def test_any_sentence_then_every_control(sentence):
    explorer = _explorer()
    c = explorer.controls
    moves = [
        ("mode", "example"), ("example", CUSTOM), ("sentence", sentence),
        ("temperature", 0.05), ("temperature", 20.0), ("temperature", 1.0),
        ("d_k", 1), ("d_k", 1024), ("scaled", not c["scaled"].value), ("causal", not c["causal"].value),
        ("row", "last"), ("row", 0),
        ("mode", "random"), ("d_k", 64), ("mode", "example"),
        ("example", "journey"), ("example", CUSTOM),
    ]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for name, value in moves:
            if value == "last":
                value = len(c["row"].options) - 1
            before = bytes(explorer.image.value)
            c[name].value = value
            _check(explorer, sentence, before)
        tokens, n_words = sentence_tokens(sentence)
        assert explorer.tokens[0] == tokens
        if n_words > MAX_TOKENS:
            assert f"first {MAX_TOKENS} of {n_words} words; cut after '{visible(tokens[-1])}'" in explorer.message
        bundle = explorer._repr_mimebundle_()
        assert base64.b64decode(bundle["image/png"]).startswith(PNG)
    assert [str(w.message) for w in caught] == []


@pytest.mark.parametrize("sentence", ["I paid $$ twice", "$x^$", "$}$", "a\\b $\\alpha$"])
def test_dollars_and_backslashes_are_drawn_literally(sentence):
    explorer = AttentionExplorer("journey", sentence=sentence)
    explorer.controls["temperature"].value = 0.5  # an update after the first picture
    assert explorer.message == ""
    labels = [t.get_text() for t in explorer._figure.ax_scores.get_yticklabels()]
    # matplotlib shows "\$" as "$" and never parses a label with only escaped dollars as TeX
    assert [label.replace("\\$", "$") for label in labels] == sentence.split()
    assert all(not t._preprocess_math(t.get_text())[1] for t in explorer._figure.ax_scores.get_yticklabels())
