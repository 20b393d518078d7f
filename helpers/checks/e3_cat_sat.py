"""Checks of E3, *AIAYN Part 2: Scaled Dot-Product Attention* ("cat sat")."""

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
    _number_verdict,
    _parts,
)

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
         "Your weights are what multiplying the scaled scores by T gives; divide them by T instead "
         "(a high temperature flattens the weights)."),
        ("forgot_temperature", sm(scores / root),
         "Your weights are the ones at T = 1: the scaling by 1/sqrt(d_k) is there, but the division "
         "by T is missing."),
        ("forgot_scaling", sm(scores / t),
         f"You divided by T, but the scaling step is missing: divide the scores by sqrt(d_k) = "
         f"{root:g} as well."),
        ("forgot_both", sm(scores),
         "Your weights are softmax(Q K^T): both the scaling by 1/sqrt(d_k) and the division by T "
         "are missing."),
        ("multiplied_and_unscaled", sm(scores * t),
         "You multiplied the scores by T and left out 1/sqrt(d_k); divide by sqrt(d_k) and by T."),
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
    >>> print(check_temperature_prediction([[0.58, 0.42], [0.42, 0.58]]))
    ✅ correct: Right: at T = 3 the weights are softmax(Q K^T / sqrt(4) / 3).
    >>> check_temperature_prediction([[0.73, 0.27], [0.27, 0.73]]).mistake
    'forgot_temperature'
    >>> check_temperature_prediction([[0.73, 0.27], [0.27, 0.73]], 0.5).mistake
    'bad_temperature'
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
    d_k = examples.load_example("cat_sat").q.shape[-1]
    listed = [(name, (lambda value=value: value), message) for name, value, message in mistakes]
    result = _match(weights, right, listed, what="weights", atol=HAND_ATOL)
    return result if result is not None else _correct(
        f"Right: at T = {t:g} the weights are softmax(Q K^T / sqrt({d_k}) / {t:g})."
    )


# ---------------------------------------------------------------------------
# "cat sat" (AIAYN Part 2): why scale at d_k = 512, and the initialisation
# ---------------------------------------------------------------------------

ESTIMATE_RTOL = 0.03
"""Relative tolerance for a variance or std that may come from a simulation."""

INIT_RTOL = 0.01
"""Relative tolerance for an initialisation std (three significant digits pass)."""


@_never_raise
def check_why_scale_512(variance, std=None, variance_scaled=None):
    """Check the spread of q·k at d_k = 512 for entries of mean 0 and variance 1.

    ``d_k`` is that of ``load_example("cat_sat_why_scale_512")``, where
    *AIAYN Part 2* stops at "For d_k = 512:". A dot product of d_k independent
    products of unit variance has variance d_k = 512 and std sqrt(512) = 22.63;
    dividing every score by sqrt(d_k) divides the variance by d_k, back to 1.
    Simulated estimates within 3 % pass.

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
        ``already_scaled`` (an answer of 1 before scaling), ``squared``
        (d_k^2), ``gave_variance`` (std answered with the variance),
        ``divided_by_d_k`` (scores divided by d_k: variance 1/d_k),
        ``variance_divided_by_sqrt`` (the variance divided by sqrt(d_k), not
        d_k), ``not_scaled``; ``not_a_number``, ``not_finite``,
        ``wrong_value``. Missing parts give "not yet" once the given ones are
        right.

    Examples
    --------
    >>> print(check_why_scale_512(512, 22.63, 1))
    ✅ correct: Right: Var(q·k) = d_k = 512, std = sqrt(512) = 22.63, and 1 after dividing by sqrt(512).
    >>> check_why_scale_512(512, 22.63, 1 / 512).mistake
    'divided_by_d_k'
    """
    d_k = int(examples.load_example("cat_sat_why_scale_512").d_k)
    var = float(d_k)  # d_k terms, each a product of two independent unit-variance entries
    sd = math.sqrt(var)
    after = var / d_k  # scores divided by sqrt(d_k): variance divided by d_k
    parts = [
        ("the variance", variance, functools.partial(
            _number_verdict, what="variance", expected=var, rtol=ESTIMATE_RTOL,
            hint="Each of the d_k products q_i k_i has variance 1, and the variances of independent terms add.",
            mistakes=[
                ("gave_std", sd, f"{sd:.2f} is the standard deviation; the variance is its square."),
                ("already_scaled", after, "1 is the variance after dividing by sqrt(d_k); before, the "
                 "d_k terms' variances add up."),
                ("squared", var * var, "The variance grows like d_k, not d_k^2: the d_k variances of 1 add up."),
            ])),
        ("the std", std, functools.partial(
            _number_verdict, what="standard deviation", expected=sd, rtol=ESTIMATE_RTOL,
            hint="The standard deviation is the square root of the variance.",
            mistakes=[
                ("gave_variance", var, f"{var:g} is the variance; the standard deviation is its square root."),
                ("already_scaled", 1.0, "1 is the spread after scaling; before, the std is sqrt(d_k)."),
            ])),
        ("the variance after scaling", variance_scaled, functools.partial(
            _number_verdict, what="variance after scaling", expected=after, rtol=ESTIMATE_RTOL,
            hint="Dividing a variable by c divides its variance by c^2.",
            mistakes=[
                ("divided_by_d_k", var / d_k**2, "That is what dividing the scores by d_k would give "
                 "(variance 1/d_k): the scaling divides by sqrt(d_k)."),
                ("variance_divided_by_sqrt", var / math.sqrt(d_k), "You divided the variance by sqrt(d_k); "
                 "dividing the scores by sqrt(d_k) divides their variance by d_k."),
                ("not_scaled", var, "That is the variance before scaling."),
            ])),
    ]
    return _parts(
        parts,
        done=f"Right: Var(q·k) = d_k = {d_k}, std = sqrt({d_k}) = {sd:.2f}, and 1 after dividing by sqrt({d_k}).",
        empty=f"No answer yet: the variance of q·k at d_k = {d_k}, its std, and the variance after scaling.",
    )


@_never_raise
def check_init_std(he_std, xavier_std=None):
    """Check the initialisation std of AIAYN Part 2's formula, and Xavier's, for d_model = 512.

    The document draws W_Q, W_K, W_V from a normal with std sqrt(2/d_model) and
    calls it "Xavier/He". With d_model = 512 (the ``d_k`` of
    ``load_example("cat_sat_why_scale_512")``, the width the document uses)
    that is He (Kaiming) normal, sqrt(2/fan_in) = 0.0625; Xavier (Glorot)
    normal for a square 512 x 512 matrix is sqrt(2/(fan_in + fan_out)) =
    0.0442.

    Parameters
    ----------
    he_std : number
        The std of the document's formula, sqrt(2/d_model).
    xavier_std : number, optional
        The Xavier normal std for a 512 x 512 matrix.

    Returns
    -------
    CheckResult
        Mistakes recognised: ``swapped`` (He and Xavier exchanged),
        ``variance_not_std`` (2/512 or 1/512: no square root),
        ``xavier_without_2`` (sqrt(1/(fan_in + fan_out))),
        ``xavier_uniform_bound`` (sqrt(6/(fan_in + fan_out)), the limit of
        the uniform version); ``not_a_number``, ``not_finite``,
        ``wrong_value``.

    Examples
    --------
    >>> print(check_init_std(0.0625, 0.0442))
    ✅ correct: Right: the document's sqrt(2/512) = 0.0625 is He initialisation;
    Xavier for 512 x 512 is sqrt(2/1024) = 0.0442.
    >>> check_init_std(0.0442, 0.0625).mistake
    'swapped'
    """
    d = int(examples.load_example("cat_sat_why_scale_512").d_k)
    fan_in = fan_out = d
    he = math.sqrt(2 / fan_in)
    xavier = math.sqrt(2 / (fan_in + fan_out))
    parts = [
        ("the He std", he_std, functools.partial(
            _number_verdict, what="std of the document's formula", expected=he, rtol=INIT_RTOL,
            hint=f"Put d_model = {d} into the document's std, sqrt(2/d_model).",
            mistakes=[
                ("swapped", xavier, f"{xavier:.4f} is the Xavier std; the document's formula "
                 f"sqrt(2/d_model) gives sqrt(2/{d})."),
                ("variance_not_std", 2 / fan_in, f"2/{d} is the variance; the std is its square root."),
            ])),
        ("the Xavier std", xavier_std, functools.partial(
            _number_verdict, what="Xavier std", expected=xavier, rtol=INIT_RTOL,
            hint="Xavier (Glorot) normal uses std = sqrt(2/(fan_in + fan_out)).",
            mistakes=[
                ("swapped", he, f"{he:.4f} is the document's (He) std; Xavier averages fan_in and "
                 "fan_out: sqrt(2/(fan_in + fan_out))."),
                ("variance_not_std", 2 / (fan_in + fan_out), "That is the variance 2/(fan_in + fan_out); "
                 "the std is its square root."),
                ("xavier_without_2", math.sqrt(1 / (fan_in + fan_out)), "Xavier normal has a 2 in the "
                 "numerator: sqrt(2/(fan_in + fan_out))."),
                ("xavier_uniform_bound", math.sqrt(6 / (fan_in + fan_out)), "sqrt(6/(fan_in + fan_out)) "
                 "is the bound of Xavier *uniform*; the normal version's std is sqrt(2/(fan_in + fan_out))."),
            ])),
    ]
    return _parts(
        parts,
        done=f"Right: the document's sqrt(2/{d}) = {he:.4f} is He initialisation; Xavier for "
        f"{d} x {d} is sqrt(2/{fan_in + fan_out}) = {xavier:.4f}.",
        empty=f"No answer yet: the std of the document's formula for d_model = {d}, and Xavier's.",
    )


