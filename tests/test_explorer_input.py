"""The explorer survives whatever a learner types into its sentence box.

A property test types arbitrary text (any code point, lone surrogates and
control characters included, plus the characters that broke it before: ``$``,
``\\``, ``<``, ``&``, emoji) of 0 to 200 words, then moves every control. After
every move: no exception, no warning, no failure message, a new picture, and
readouts whose HTML holds only the explorer's own tags, with each token as
text, exactly as the explorer shows it.
"""

import base64
import html
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
    assert parsed.tags <= {"div", "p", "b", "br", "table", "tr", "th", "td"}, parsed.tags
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
        assert "image/png" not in bundle  # the snapshot is stored once, in the <img> (issue 22)
        png = html.unescape(bundle["text/html"].split("base64,", 1)[1].rstrip('">'))
        assert base64.b64decode(png).startswith(PNG)
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


# ---------------------------------------------------------------------------
# The trained-head explorer's token box (issue 18): the same rule for every text control
# ---------------------------------------------------------------------------

from helpers.widgets import TrainedHeadExplorer, as_html, token_names  # noqa: E402

NUMBERS = st.one_of(
    st.integers(min_value=0, max_value=10**6).map(str),
    st.text("0123456789", min_size=20, max_size=6000),  # past int()'s 4300-digit limit too
    st.sampled_from(["\u0663", "\uff13", "\u00b2", "\u2463", "\u0e53", "\U0001d7d1", "07", "0015", "-1", "1e3"]),
)
TOKEN_WORDS = st.one_of(st.sampled_from(TRICKY), NUMBERS, st.sampled_from(list("ABCDEFGHIJKLMNOPabcp")),
                        st.text(CHARACTERS, min_size=1, max_size=8))
TOKEN_TEXTS = st.one_of(
    st.lists(TOKEN_WORDS, max_size=30).map(" ".join),
    st.lists(st.sampled_from(list("ABCDEFGHIJKLMNOP") + [str(i) for i in range(16)]), min_size=1, max_size=24)
    .map(" ".join),  # always readable
    st.text(CHARACTERS, max_size=80),
)
_TRAINED = []


def _trained():
    if not _TRAINED:
        _TRAINED.append(TrainedHeadExplorer())
    return _TRAINED[0]


def _expected_ids(text, vocab_size=16, max_len=24):
    """The ids a text means, by the rule written out independently: names (any case) or ASCII ids."""
    names = {name: i for i, name in enumerate(token_names(vocab_size))}
    words = text.replace(",", " ").split()
    if not words or len(words) > max_len:
        return None
    ids = []
    for word in words:
        if word.upper() in names:
            ids.append(names[word.upper()])
        elif all(c in "0123456789" for c in word) and len(word.lstrip("0")) <= 2 and int(word) < vocab_size:
            ids.append(int(word))
        else:
            return None
    return ids


def _check_trained(explorer, text):
    parsed = _parse(explorer.readout.value)
    assert parsed.tags <= {"div", "p", "b", "table", "tr", "th", "td"}, parsed.tags
    expected = _expected_ids(text)
    if expected is None:  # no picture, and a message saying why
        assert explorer.weights is None and explorer.tokens is None
        assert bytes(explorer.image.value) == b""
        assert explorer.message and as_html(explorer.message) in explorer.readout.value
    else:  # the picture is of exactly this sequence
        names = token_names(16)
        assert explorer.message == ""
        assert explorer.tokens == [names[i] for i in expected]
        assert bytes(explorer.image.value).startswith(PNG)
        assert explorer.weights.shape == (len(expected), len(expected))
        np.testing.assert_allclose(explorer.weights.sum(axis=-1), 1.0, atol=1e-9)
        assert parsed.cells[3::3] == [f"{i}: {names[t]}" for i, t in enumerate(expected)]


@settings(max_examples=25, deadline=None)
@given(text=TOKEN_TEXTS)
def test_any_token_text_then_every_control(text):
    explorer = _trained()
    c = explorer.controls
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for name, value in [("tokens", text), ("layer", 0), ("head", 1), ("temperature", 0.05),
                            ("temperature", 1.0), ("layer", 1), ("head", 0)]:
            c[name].value = value  # an observer that raised would propagate here
            _check_trained(explorer, text)
    assert [str(w.message) for w in caught] == []


@pytest.mark.parametrize("text", ["A \u0663", "A \uff13", "A \u00b2", "A " + "9" * 5000])
def test_non_ascii_digits_and_huge_numbers_are_explained_not_misread(text):
    explorer = _trained()
    explorer.controls["tokens"].value = "A B C"
    explorer.controls["tokens"].value = text
    assert explorer.tokens is None and bytes(explorer.image.value) == b""
    assert explorer.message.startswith("unknown token")
    if text != "A " + "9" * 5000:
        assert "digits 0-9" in explorer.message or "\u00b2" in text


@pytest.mark.parametrize("markup", ["<img src=x onerror=alert(1)>", "<b>A</b> B", "<script>x</script>"])
def test_markup_in_the_token_box_is_shown_not_run(markup):
    explorer = _trained()
    explorer.controls["tokens"].value = markup
    parsed = _parse(explorer.readout.value)
    assert parsed.tags <= {"div", "p", "b"} and "img" not in parsed.tags and "script" not in parsed.tags
    assert html.escape(markup.split()[0], quote=True)[:20] in explorer.readout.value
