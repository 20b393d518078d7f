"""Checks of E3, *AIAYN Part 2: Scaled Dot-Product Attention* ("cat sat").

The docstrings say what each check compares and which mistakes it names; they hold no answer.
Worked examples are in the tests.

Expected against simulated values, one rule for E3 and E4: a task that asks for a variance or
a standard deviation asks for the **expected value computed from the formula**. An answer
within rounding of it passes; any other answer within 30 % of it that is not a recognised
mistake is taken for a simulated estimate (a sample) and refused (``simulation_estimate``),
with a message that says the task wants the expectation, not a sample.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from helpers import attention, examples
from helpers.checks._core import (
    HAND_ATOL,
    _as_number,
    _correct,
    _incorrect,
    _match,
    _never_raise,
    _not_a_number,
    _parts,
    record,
)
from helpers.checks.e1_section_5_2 import _with_precision_note

# ---------------------------------------------------------------------------
# "cat sat" at a temperature
# ---------------------------------------------------------------------------


EXERCISE_TEMPERATURE = 3.0
"""The temperature of E3's exercise 1. With d_k = 4, 1/sqrt(d_k) = 0.5: at T = 0.5 the
temperature and the scaling cancel, and at T = 2 forgetting one looks like forgetting the
other; at T = 3 every mistake below gives its own weights."""


def _temperature_candidates(t):
    """The right "cat sat" weights at temperature ``t`` and the weights of each mistake."""
    ex = examples.load_example("cat_sat")
    scores = ex.q @ ex.k.T
    d_k = ex.q.shape[-1]
    root = math.sqrt(d_k)
    sm = attention.softmax
    right = sm(scores / root / t)
    mistakes = [
        ("multiplied_by_temperature", sm(scores / root * t),
         "Your weights are what multiplying the scaled scores by T gives; the temperature divides them."),
        ("forgot_temperature", sm(scores / root),
         "Your weights are the ones at T = 1: the scaling by 1/sqrt(d_k) is there, but the division "
         "by T is missing."),
        ("forgot_scaling", sm(scores / t),
         "You divided by T, but the scaling by 1/sqrt(d_k) is missing."),
        ("forgot_both", sm(scores),
         "Your weights are the softmax of the raw scores: both the scaling by 1/sqrt(d_k) and the division by T "
         "are missing."),
        ("multiplied_and_unscaled", sm(scores * t),
         "You multiplied the scores by T and left out the scaling by 1/sqrt(d_k)."),
        ("divided_by_d_k", sm(scores / d_k / t),
         f"You divided the scores by d_k = {d_k}; the scaling step divides by sqrt(d_k) = {root:g}."),
        ("softmax_whole_matrix", sm((scores / root / t).ravel()).reshape(scores.shape),
         "Your softmax normalised the whole matrix at once; each row (one query) should sum to 1."),
    ]
    return right, mistakes


def _distinct(values, atol):
    """True when no two arrays of ``values`` agree within ``atol``."""
    return all(
        not np.allclose(a, b, rtol=0, atol=atol)
        for i, a in enumerate(values) for b in values[i + 1:]
    )


@_never_raise
def check_temperature_prediction(weights, temperature=EXERCISE_TEMPERATURE):
    """Check predicted "cat sat" weights at a temperature: softmax(Q K^T / sqrt(d_k) / T).

    The exercise uses T = 3 (:data:`EXERCISE_TEMPERATURE`). Another temperature
    is accepted only if the right answer and every mistake below still give
    different weights there; at T = 0.5, where T cancels 1/sqrt(4), or T = 2,
    where forgetting T looks like forgetting the scaling, the check says so.

    Parameters
    ----------
    weights : array_like, shape (2, 2)
        The predicted weights, one row per query.
    temperature : float, optional
        The temperature T (finite, > 0); 3 by default.

    Returns
    -------
    CheckResult
        Mistakes recognised, in this order: ``multiplied_by_temperature``,
        ``forgot_temperature``, ``forgot_scaling``, ``forgot_both``,
        ``multiplied_and_unscaled``, ``divided_by_d_k``,
        ``softmax_whole_matrix``, then ``wrong_shape`` / ``wrong_values``;
        ``bad_temperature`` when T is not a finite number > 0 or makes two of
        them coincide; ``wrong_type``, ``complex``, ``not_finite``. Softmax
        over the wrong axis is not listed: Q = K makes the weights symmetric.

    Examples
    --------
    >>> check_temperature_prediction(None).status
    'not yet'
    """
    t = _as_number(temperature)
    if t is None or not math.isfinite(t) or t <= 0:
        return _incorrect(
            "bad_temperature",
            f"The temperature must be a number greater than 0; got {temperature!r}.",
        )
    right, mistakes = _temperature_candidates(t)
    if not _distinct([right] + [m[1] for m in mistakes], 2 * HAND_ATOL):
        return _incorrect(
            "bad_temperature",
            f"At T = {t:g} two different mistakes give the same weights (at T = 0.5, for example, "
            "the temperature cancels the 1/sqrt(4) scaling), so this check could not tell them "
            f"apart. Use the exercise's temperature, T = {EXERCISE_TEMPERATURE:g}.",
        )
    listed = [(name, (lambda value=value: value), message) for name, value, message in mistakes]
    result = _match(weights, right, listed, what="weights", atol=HAND_ATOL)
    return result if result is not None else _with_precision_note(
        _correct(f"Right: the weights at T = {t:g}."), weights
    )


# ---------------------------------------------------------------------------
# "cat sat" (AIAYN Part 2): why scale at d_k = 512, and the initialisation
# ---------------------------------------------------------------------------

SAMPLE_RTOL = 0.3
"""An answer within this relative distance of the expected value, but not within rounding of it,
is taken for a simulated estimate (a sample) and refused as one."""


def _expected_verdict(answer, *, what, expected, atol, decimals, mistakes, hint):
    """None when ``answer`` is ``expected`` within ``atol`` (rounding), else an "incorrect" result.

    The rule of E3 and E4 for expected against simulated values: within ``atol`` is the
    expected value, written to ``decimals`` decimals or more; the expected value rounded to
    fewer decimals gets ``rounded``; anything else within :data:`SAMPLE_RTOL` gets
    ``simulation_estimate``. ``mistakes`` is a list of ``(name, value, message)``, each
    matched within 1 %, before the estimate.
    """
    # Mistakes are matched within 1 %; none may be that close to the expected value.
    record("number", what, expected, [(name, target) for name, target, _ in mistakes], 0.0, 0.01)
    value = _as_number(answer)
    if value is None:
        return _not_a_number(answer, what)
    if not math.isfinite(value):
        return _incorrect("not_finite", f"Your {what} ({value}) is not a finite number.")
    if abs(value - expected) <= atol:
        return None
    for name, target, message in mistakes:
        if abs(target - expected) > atol and abs(value - target) <= 0.01 * abs(target):
            return _incorrect(name, f"Your {what} is {value:g}. {message}")
    for fewer in range(decimals - 1, -1, -1):
        written = abs(value - round(value, fewer)) <= 1e-12  # the answer has at most `fewer` decimals
        close = abs(value - expected) <= min(0.5 * 10.0**-fewer + 1e-12, 0.1 * abs(expected))
        if written and close:
            return _incorrect(
                "rounded",
                f"Your {what} is {value:g}: rounded to {fewer} decimal{'s' if fewer != 1 else ''}, which is "
                f"too coarse here. Give at least {decimals} decimals (or keep the number as Python "
                "computes it).",
            )
    if abs(value - expected) <= SAMPLE_RTOL * abs(expected):
        return _incorrect(
            "simulation_estimate",
            f"Your {what} is {value:g}: close, but it looks like an estimate from a simulation, a "
            "sample. The task asks for the expected value, computed from the formula; use a "
            "simulation to confirm it, not as the answer.",
        )
    return _incorrect("wrong_value", f"Your {what} is {value:g}, which is not right. {hint}")


@_never_raise
def check_why_scale_512(variance, std=None, variance_scaled=None):
    """Check the spread of q·k for entries of mean 0 and variance 1, at the document's d_k.

    ``d_k`` is that of ``load_example("cat_sat_why_scale_512")``, where *AIAYN Part 2*
    stops at "For d_k = 512:". Each answer is the expected value from the formula: a
    simulated estimate is refused (see the module's rule); the std may be rounded to two
    decimals, the variances to three.

    Parameters
    ----------
    variance : number
        Var(q·k) before scaling.
    std : number, optional
        Its standard deviation.
    variance_scaled : number, optional
        Var(q·k / sqrt(d_k)).

    Returns
    -------
    CheckResult
        Mistakes recognised: ``gave_std`` (variance answered with the std),
        ``already_scaled`` (the value after scaling given for the one before), ``squared``,
        ``gave_variance`` (std answered with the variance), ``divided_by_d_k`` (scores
        divided by d_k), ``variance_divided_by_sqrt`` (the variance divided by sqrt(d_k)),
        ``not_scaled``, ``rounded`` (too few decimals), ``simulation_estimate`` (a sample,
        not the expectation); ``not_a_number``, ``not_finite``, ``wrong_value``. Missing
        parts give "not yet" once the given ones are right.

    Examples
    --------
    >>> check_why_scale_512(None).status
    'not yet'
    """
    d_k = int(examples.load_example("cat_sat_why_scale_512").d_k)
    var = float(d_k)  # d_k terms, each a product of two independent unit-variance entries
    sd = math.sqrt(var)
    after = var / d_k  # scores divided by sqrt(d_k): variance divided by d_k
    parts = [
        ("the variance", variance, functools.partial(
            _expected_verdict, what="variance", expected=var, atol=5e-4, decimals=0,
            hint="Each of the d_k products q_i k_i has variance 1; how do the variances of independent "
            "terms combine?",
            mistakes=[
                ("gave_std", sd, "That is a standard deviation; the task asks first for the variance."),
                ("already_scaled", after, "That is the variance after the scaling; the first number "
                 "is the one before."),
                ("squared", var * var, "That is d_k squared: the variances of the d_k independent "
                 "terms add up."),
            ])),
        ("the std", std, functools.partial(
            _expected_verdict, what="standard deviation", expected=sd, atol=0.005 + 1e-9, decimals=2,
            hint="How is a standard deviation related to a variance?",
            mistakes=[
                ("gave_variance", var, "That is the variance; the standard deviation is another number."),
                ("already_scaled", 1.0, "That is the spread after the scaling; the std asked for is the "
                 "one before."),
            ])),
        ("the variance after scaling", variance_scaled, functools.partial(
            _expected_verdict, what="variance after scaling", expected=after, atol=5e-4, decimals=3,
            hint="Dividing a variable by c divides its variance by c^2.",
            mistakes=[
                ("divided_by_d_k", var / d_k**2, "That is what dividing the scores by d_k would give; "
                 "the scaling divides them by sqrt(d_k)."),
                ("variance_divided_by_sqrt", var / math.sqrt(d_k), "You divided the variance by "
                 "sqrt(d_k); what happens to a variance when its variable is divided by c?"),
                ("not_scaled", var, "That is the variance before scaling."),
            ])),
    ]
    result = _parts(
        parts,
        done=f"Right: the expected variance and std of q·k at d_k = {d_k}, and the variance after scaling.",
        empty=f"No answer yet: the variance of q·k at d_k = {d_k}, its std, and the variance after scaling.",
    )
    return _with_precision_note(result, variance, std, variance_scaled)


@_never_raise
def check_init_std(he_std, xavier_std=None):
    """Check the initialisation std of AIAYN Part 2's formula, and Xavier's, for d_model = 512.

    The document draws W_Q, W_K, W_V from a normal with std sqrt(2/d_model) and calls it
    "Xavier/He". ``d_model`` is the ``d_k`` of ``load_example("cat_sat_why_scale_512")``,
    the width the document uses. Both answers are values of a formula, so the rule for
    expected against simulated values holds: three significant digits pass, the sample
    std of a drawn matrix is refused.

    Parameters
    ----------
    he_std : number
        The std of the document's formula.
    xavier_std : number, optional
        The Xavier normal std for a square d_model x d_model matrix.

    Returns
    -------
    CheckResult
        Mistakes recognised: ``swapped`` (He and Xavier exchanged), ``variance_not_std``
        (no square root), ``xavier_without_2``, ``xavier_uniform_bound`` (the limit of the
        uniform version), ``rounded``, ``simulation_estimate``; ``not_a_number``,
        ``not_finite``, ``wrong_value``.

    Examples
    --------
    >>> check_init_std(None).status
    'not yet'
    """
    d = int(examples.load_example("cat_sat_why_scale_512").d_k)
    fan_in = fan_out = d
    he = math.sqrt(2 / fan_in)
    xavier = math.sqrt(2 / (fan_in + fan_out))
    parts = [
        ("the He std", he_std, functools.partial(
            _expected_verdict, what="std of the document's formula", expected=he, atol=5e-5, decimals=4,
            hint=f"Use the document's formula with d_model = {d}.",
            mistakes=[
                ("swapped", xavier, "That is the Xavier std; this one is the document's own formula."),
                ("variance_not_std", 2 / fan_in, "That is a variance; the formula's square root is missing."),
            ])),
        ("the Xavier std", xavier_std, functools.partial(
            _expected_verdict, what="Xavier std", expected=xavier, atol=5e-5, decimals=4,
            hint="Xavier (Glorot) normal uses std = sqrt(2/(fan_in + fan_out)).",
            mistakes=[
                ("swapped", he, "That is the document's std; Xavier's formula uses both fan_in and fan_out."),
                ("variance_not_std", 2 / (fan_in + fan_out), "That is a variance; the formula's square "
                 "root is missing."),
                ("xavier_without_2", math.sqrt(1 / (fan_in + fan_out)), "Xavier normal has a 2 in the "
                 "numerator."),
                ("xavier_uniform_bound", math.sqrt(6 / (fan_in + fan_out)), "That is the bound of Xavier "
                 "*uniform*; the task asks for the normal version's std."),
            ])),
    ]
    result = _parts(
        parts,
        done=f"Right: the document's formula gives He initialisation's std; Xavier's for {d} x {d} is "
        "smaller.",
        empty=f"No answer yet: the std of the document's formula for d_model = {d}, and Xavier's.",
    )
    return _with_precision_note(result, he_std, xavier_std)
