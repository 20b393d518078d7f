"""Every check's right answer and the mistakes it recognises give pairwise different answers.

Each answer check is run once while :class:`helpers.checks._core.recording` is on, which
records, for every comparison it makes, the right answer and the answer of each mistake it
computes on the exercise's inputs. Any two of them that agree within the check's own tolerance
would let one mistake pass for another (or for the right answer), as T = 0.5 did in E3, where
the temperature cancelled 1/sqrt(4). The function checks are covered in the same way by
students' functions, right and wrong, in tests/test_checks_functions.py.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import helpers.checks as checks
from helpers.checks._core import recording

FUNCTION_CHECKS = {
    "check_stable_softmax",
    "check_masked_attention",
    "check_self_attention",
    "check_attention_backward",
    "check_online_softmax_merge",
    "check_masked_backward",
}

# A wrong answer for every argument, so that every comparison of every part is made.
JUNK = np.full((1, 1), 123.0)
ARGS = {
    "check_section_5_2_exercise_1": (JUNK, JUNK),
    "check_section_5_2_exercise_2": (JUNK,),
    "check_flops": (1.0,),
    "check_section_5_2_exercise_4": (JUNK,),
    "check_attention_entropy": (JUNK,),
    "check_i_am_happy_weights": (JUNK,),
    "check_i_am_happy_context": (JUNK,),
    "check_temperature_prediction": (JUNK,),
    "check_why_scale_512": (1e9, 1e9, 1e9),
    "check_init_std": (1e9, 1e9),
    "check_journey_scores_row": (JUNK,),
    "check_journey_weights_row": (JUNK,),
    "check_journey_variance_d100": (1e9, 1e9),
    "check_definition_shapes": ((9, 9, 9), (9, 9, 9), (9, 9, 9)),
}
ANSWER_CHECKS = sorted(n for n in checks.__all__ if n.startswith("check_") and n not in FUNCTION_CHECKS)


def _same(kind, a, b, atol, rtol):
    if a is None or b is None:
        return False
    if kind == "shape":
        return tuple(a) == tuple(b)
    if kind == "number":
        return abs(a - b) <= rtol * max(abs(a), abs(b))
    a, b = np.asarray(a, float), np.asarray(b, float)
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=rtol, atol=atol))


def _recorded(name):
    with recording() as seen:
        getattr(checks, name)(*ARGS[name])
    return seen


def test_every_answer_check_is_listed():
    assert set(ANSWER_CHECKS) == set(ARGS)


@pytest.mark.parametrize("name", ANSWER_CHECKS)
def test_right_answer_and_mistakes_pairwise_different(name):
    seen = _recorded(name)
    assert seen, f"{name} made no recorded comparison"
    clashes = []
    for kind, what, expected, mistakes, atol, rtol in seen:
        answers = [("right", expected)] + [(m, v) for m, v in mistakes if v is not None]
        for (m1, v1), (m2, v2) in itertools.combinations(answers, 2):
            # Two entries with one name (e.g. two ways to swap n and d) may not clash with others.
            # The check's own rule (``_match``): an answer within the tolerance of the right one is
            # right, so two answers clash when one is within the tolerance of the other.
            if _same(kind, v1, v2, atol, rtol) and not (m1 == m2 != "right"):
                clashes.append(f"{what}: {m1} ~ {m2}")
    assert not clashes, f"{name}: answers that cannot be told apart: {clashes}"


def test_size_of_the_enumeration():
    """The number of recorded answers and of pairs compared (reported in the issue's note)."""
    answers = pairs = 0
    for name in ANSWER_CHECKS:
        for _, _, _, mistakes, _, _ in _recorded(name):
            k = 1 + len(mistakes)
            answers += k
            pairs += k * (k - 1) // 2
    assert answers >= 100 and pairs >= 300, (answers, pairs)
