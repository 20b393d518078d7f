"""Every check's right answer and the mistakes it recognises give pairwise different answers.

Each answer check is run once while :class:`helpers.checks._core.recording` is on, which
records, for every comparison it makes, the names of the right answer and of each mistake it
computes on the exercise's inputs, and which pairs of them agree within the check's own
tolerance (never the values: recording gives a student nothing). Two answers that agree would
let one mistake pass for another (or for the right answer), as T = 0.5 did in E3, where the
temperature cancelled 1/sqrt(4). The function checks are covered in the same way by
students' functions, right and wrong, in tests/test_checks_functions.py.
"""

from __future__ import annotations

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


def _recorded(name):
    with recording() as seen:
        getattr(checks, name)(*ARGS[name])
    return seen


def test_recording_gives_no_values_and_no_verdict():
    # A student who turns recording on learns the mistakes' names, nothing about the answers,
    # and a wrong answer is still refused.
    with recording() as seen:
        result = checks.check_journey_weights_row(JUNK)
    assert result.status == "incorrect"
    for r in seen:
        assert set(vars(r)) == {"kind", "what", "answers", "clashes"}
        assert all(isinstance(a, str) for a in r.answers)
        assert all(isinstance(m, str) for pair in r.clashes for m in pair)
    with recording():
        assert not checks.check_journey_variance_d100(1e9, 1e9)


def test_every_answer_check_is_listed():
    assert set(ANSWER_CHECKS) == set(ARGS)


@pytest.mark.parametrize("name", ANSWER_CHECKS)
def test_right_answer_and_mistakes_pairwise_different(name):
    seen = _recorded(name)
    assert seen, f"{name} made no recorded comparison"
    # The check's own rule (``_match``): an answer within the tolerance of the right one is
    # right, so two answers clash when one is within the tolerance of the other; two entries
    # with one name (e.g. two ways to swap n and d) may agree with each other.
    clashes = [f"{r.what}: {m1} ~ {m2}" for r in seen for m1, m2 in r.clashes]
    assert not clashes, f"{name}: answers that cannot be told apart: {clashes}"


def test_size_of_the_enumeration():
    """The number of recorded answers and of pairs compared (reported in the issue's note)."""
    answers = pairs = 0
    for name in ANSWER_CHECKS:
        for r in _recorded(name):
            k = len(r.answers)
            answers += k
            pairs += k * (k - 1) // 2
    assert answers >= 100 and pairs >= 300, (answers, pairs)
