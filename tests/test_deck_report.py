"""The deck measures of tools/deck_report.py that need no browser (issue 24).

The browser half (type sizes, pictures, notes, wrapping) runs in tests/test_browser.py
on every built deck; here the rules that read a slide's code are checked on their own,
and the limits on a made-up deck report: each fails when one slide breaks it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

deck_report = pytest.importorskip("deck_report")


@pytest.mark.parametrize("code, lines", [
    ("a = 1\nb = 2", 0),
    ("a = 1; b = 2", 1),
    ("a = 1; b = 2\nc = 3; d = 4", 2),
    ("print('a; b')", 0),                 # in a string
    ("x = 1  # one; two", 0),             # in a comment
    ("for i in range(3): a = i; b = i", 1),
])
def test_joined_lines_counts_only_real_semicolons(code, lines):
    assert deck_report.joined_lines(code) == lines


@pytest.mark.parametrize("code, only", [
    ("figures.show(fig)", True),
    ("show(fig)", True),
    ("figures.show( fig )", True),
    ("figures.show(fig, 'a picture')", False),
    ("fig = plot()\nfigures.show(fig)", False),
])
def test_a_cell_that_only_shows_a_figure_is_found(code, only):
    assert bool(deck_report.SHOW_ONLY.fullmatch(code.strip())) is only


def _slide(**kw):
    base = dict(number=1, h=0, v=0, title="t", overflow=0, height=700, notes=True, fragments_hidden=0,
                wide=0, sideways=0, words=10, code_lines=2, screen_code_lines=2, upper_headings=0,
                prose_px=26, code_px=24, picture=True, notes_tex=0, code_sources=["x = 1"],
                wrapped_code_lines=0, broken_words=[], code_total=2, output_lines=3)
    base.update(kw)
    return base


def _report(*slides):
    return deck_report.DeckReport("99-made-up", 1100, 760, list(slides))


def test_a_deck_within_every_limit_has_no_problem():
    assert _report(_slide(), _slide(number=2)).problems() == []


@pytest.mark.parametrize("change, words", [
    (dict(prose_px=20), "prose at 20 px"),
    (dict(code_px=19), "code at 19 px"),
    (dict(notes_tex=1), "TeX"),
    (dict(code_sources=["a = 1; b = 2"]), "';'"),
    (dict(code_sources=["figures.show(fig)"]), "slides-hide-code"),
    (dict(wrapped_code_lines=2), "2 code lines wrap"),
    (dict(broken_words=["True"]), "True"),
    (dict(screen_code_lines=9), "9 lines"),
    (dict(upper_headings=1), "upper-cased"),
    (dict(code_total=9), "9 code lines and 3 output lines"),     # summed over the slide's cells
    (dict(output_lines=9), "2 code lines and 9 output lines"),
])
def test_each_limit_names_the_slide_that_breaks_it(change, words):
    problems = _report(_slide(), _slide(number=2, title="the bad one", **change)).problems()
    assert len(problems) == 1 and "the bad one" in problems[0], problems
    assert words.replace("9 lines", "9") in problems[0] or words in problems[0], problems


def test_pictures_and_notes_are_shares_of_the_deck():
    few_pictures = _report(*[_slide(number=i, picture=i < 3) for i in range(8)])  # 3 of 8
    assert [p for p in few_pictures.problems() if "picture on 3 of 8" in p]
    enough = _report(*[_slide(number=i, picture=i < 4) for i in range(10)])  # 4 of 10: 40 %
    assert not [p for p in enough.problems() if "picture" in p]
    few_notes = _report(*[_slide(number=i, notes=i < 4) for i in range(9)])  # 4 of 9
    assert [p for p in few_notes.problems() if "notes on 4 of 9" in p]


def test_figure_text_under_the_hall_limits_names_the_slide():
    def picture(smallest, median):
        return dict(measured=True, smallest=smallest, median=median, texts=10, shown=1.0)

    good = _slide(figure_text=[picture(13.4, 15.0)])
    tiny_median = _slide(number=2, title="tiny median", figure_text=[picture(10.0, 12.0)])
    tiny_text = _slide(number=3, title="tiny text", figure_text=[picture(8.5, 14.0)])
    report = _report(good, tiny_median, tiny_text)
    found = [p for p in report.problems() if "figure text" in p]
    assert len(found) == 2 and "tiny median" in found[0] and "tiny text" in found[1], found
    assert report.figure_text_summary() == (8.5, 14.0)
    assert _report(good).problems() == []
    assert _report(_slide(figure_text=[dict(measured=False)])).figure_text_summary() is None


def test_code_and_output_are_counted_over_every_cell_of_a_slide():
    """Issue 32, item 3: 8 code lines and 8 output lines in total per slide, not per cell."""
    at_limit = _slide(code_lines=4, screen_code_lines=4, code_total=8, output_lines=8)
    assert _report(at_limit).problems() == []
    two_cells = _slide(code_lines=5, screen_code_lines=5, code_total=10, output_lines=2, title="two cells")
    found = _report(two_cells).problems()
    assert len(found) == 1 and "two cells" in found[0] and "10 code lines" in found[0], found


def test_the_hall_decks_are_held_to_60_and_80_percent():
    """Decks 01-16 (HALL_DECKS): a picture on 60 % of the slides and notes on 80 %; the others keep 40/50."""
    def deck(name, pictures, notes, n=10):
        return deck_report.DeckReport(name, 1100, 760, [_slide(number=i, picture=i < pictures, notes=i < notes)
                                                        for i in range(n)])

    assert deck("05-made-up", 6, 8).problems() == []
    assert [p for p in deck("05-made-up", 5, 8).problems() if "picture on 5 of 10" in p and "60%" in p]
    assert [p for p in deck("11-made-up", 6, 7).problems() if "notes on 7 of 10" in p and "80%" in p]
    assert deck("17-made-up", 4, 5).problems() == []        # not a hall deck: 40 % and 50 %
    assert [p for p in deck("12-made-up", 5, 8).problems() if "picture on 5 of 10" in p and "60%" in p]
    assert [p for p in deck("13-made-up", 5, 8).problems() if "picture on 5 of 10" in p and "60%" in p]
    assert all(deck_report.DeckReport(f"{i:02d}-x", 1, 1).hall_deck for i in range(1, 17))
    assert not deck_report.DeckReport("17-x", 1, 1).hall_deck
