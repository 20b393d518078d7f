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

from helpers import examples
from helpers.checks._answer_table import TABLE
from helpers.checks._core import (
    _as_number,
    _correct,
    _incorrect,
    _is_empty,
    _never_raise,
    _not_yet,
    _parts,
    _sealed_number_verdict,
)
from helpers.checks.e1_section_5_2 import _with_precision_note

# ---------------------------------------------------------------------------
# "cat sat": the temperature that gives a weight
# ---------------------------------------------------------------------------


TARGET_WEIGHT = 0.9
"""E3's exercise 1 asks for the temperature at which "cat" gives itself this weight. Lesson 02
computes the weights at given temperatures; the exercise runs the softmax backwards."""


def _simulation_estimate(what, value):
    """The verdict on a number close to the expected value, as a sample's estimate would be."""
    return _incorrect(
        "simulation_estimate",
        f"Your {what} is {value:g}: close, but it looks like an estimate from a simulation, a "
        "sample. The task asks for the expected value, computed from the formula; use a "
        "simulation to confirm it, not as the answer.",
    )

def _temperature_messages(p):
    """The message of each mistake the check names (the values are sealed: :mod:`helpers.checks._sealed`)."""
    d_k = examples.load_example("cat_sat").q.shape[-1]
    root = math.sqrt(d_k)
    return {
        "forgot_scaling":
            "That is the temperature the raw scores would need: the scaling by 1/sqrt(d_k) is missing.",
        "multiplied_by_temperature":
            "That is the temperature that works if T multiplies the scaled scores; it divides them.",
        "multiplied_and_unscaled": "You multiplied the raw scores by T and left out the scaling by 1/sqrt(d_k).",
        "divided_by_d_k": f"That temperature follows from scores divided by d_k = {d_k}; the scaling divides "
                          f"by sqrt(d_k) = {root:g}.",
        "log10": "You used log base 10; the softmax uses e, so its inverse is the natural logarithm.",
        "no_log": "You used the ratio of the two weights where the softmax needs its logarithm: the weights "
                  "are exponentials of the scores.",
        "log_of_weight": "You used log of the weight alone; the softmax fixes the ratio of the two weights, "
                         "not one weight on its own.",
        "other_token": f"A negative temperature: that gives \"sat\" the weight {p:g}, not \"cat\". T is "
                       "greater than 0.",
    }


def _sealed_verdict(answer, *, what, entry, messages, hint, sample=True):
    """:func:`helpers.checks._core._sealed_number_verdict`, a number near the answer named as a sample."""
    return _sealed_number_verdict(answer, what=what, entry=entry, messages=messages, hint=hint,
                                  estimate=_simulation_estimate if sample else None)


@_never_raise
def check_temperature_prediction(temperature):
    """Check the temperature T at which "cat" gives itself weight :data:`TARGET_WEIGHT`.

    "cat sat" (``load_example("cat_sat")``) with weights softmax(Q K^T / sqrt(d_k) / T).
    The task asks for T to at least three decimals; an answer within 5e-4 passes, a
    coarser one (a grid search or a two-decimal answer) is named as rounded.

    Parameters
    ----------
    temperature : number
        The temperature T.

    Returns
    -------
    CheckResult
        Mistakes recognised: ``forgot_scaling``, ``multiplied_by_temperature``,
        ``multiplied_and_unscaled``, ``divided_by_d_k``, ``log10``, ``no_log``,
        ``log_of_weight``, ``other_token`` (a negative T), ``rounded``; ``not_a_number``,
        ``not_finite``, ``wrong_value``.

    Examples
    --------
    >>> check_temperature_prediction(None).status
    'not yet'
    """
    if _is_empty(temperature):
        return _not_yet("No answer yet: the temperature T.")
    result = _sealed_verdict(
        temperature, what="temperature", entry=TABLE["e3_temperature"],
        messages=_temperature_messages(TARGET_WEIGHT),
        hint="At that temperature the softmax of \"cat\"'s row gives itself the weight asked for; write "
        "that weight with the two scaled scores and T, and solve for T.",
        sample=False,
    )
    value = _as_number(temperature)
    if (result is not None and result.mistake == "wrong_value" and value is not None and math.isfinite(value)
            and value <= 0):
        return _incorrect(
            "not_positive",
            f"Your temperature is {value:g}. A temperature is greater than 0: it divides the scaled "
            "scores, and one of 0 or below does not give a softmax that favours \"cat\" by a chosen "
            "amount. Write \"cat\"'s weight with the two scaled scores and T, and solve for T.",
        )
    return result if result is not None else _with_precision_note(
        _correct(f"Right: at this temperature \"cat\" gives itself the weight {TARGET_WEIGHT:g}."), temperature
    )


# ---------------------------------------------------------------------------
# "cat sat" (AIAYN Part 2): why scale at d_k = 512, and the initialisation
# ---------------------------------------------------------------------------

STD_Q = 1.5
STD_K = 0.8
"""The standard deviations of the entries of q and k in E3's exercise 2. Lesson 02 works out the
spread of q·k for entries of variance 1; the exercise asks what the scaling does when they are not."""

D_HEAD = 64
"""The width of one head's W^Q in E3's exercise 3: d_model = 512 split over 8 heads, as in the
original Transformer paper (Vaswani et al., 2017)."""


@_never_raise
def check_why_scale_512(variance, std=None, variance_scaled=None):
    """Check the spread of q·k at the document's d_k when the entries are not of unit variance.

    ``d_k`` is that of ``load_example("cat_sat_why_scale_512")``, where *AIAYN Part 2*
    stops at "For d_k = 512:"; the entries of q and k are independent, of mean 0, with
    standard deviations :data:`STD_Q` and :data:`STD_K`. Each answer is the expected value
    from the formula: a simulated estimate is refused (see the module's rule); the
    variances may be rounded to two decimals, the std to two, the variance after scaling
    to three.

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
        Mistakes recognised: ``unit_entries`` (the values for entries of variance 1),
        ``used_stds`` (the stds where the variances belong), ``one_factor`` (one of the two
        variances left out), ``added_variances``, ``gave_std``, ``already_scaled``,
        ``gave_variance``, ``divided_by_d_k``, ``variance_divided_by_sqrt``,
        ``not_scaled``, ``rounded`` (too few decimals), ``simulation_estimate`` (a sample,
        not the expectation); ``not_a_number``, ``not_finite``, ``wrong_value``. Missing
        parts give "not yet" once the given ones are right.

    Examples
    --------
    >>> check_why_scale_512(None).status
    'not yet'
    """
    d_k = int(examples.load_example("cat_sat_why_scale_512").d_k)
    unit = "That is the value for entries of variance 1; here q and k have other spreads."

    def part(name, what, hint, messages):
        return functools.partial(_sealed_verdict, what=what, entry=TABLE[f"e3_why_scale:{name}"],
                                 messages=messages, hint=hint)

    parts = [
        ("the variance", variance, part(
            "variance", "variance",
            "What is the variance of one product q_i k_i, and how do the variances of independent "
            "terms combine?", {
                "unit_entries": unit,
                "used_stds": "You multiplied standard deviations where variances belong.",
                "one_factor": "Only the spread of one of q and k is in it; the product has both.",
                "added_variances": "You added the two variances; q_i and k_i are multiplied, not added.",
                "gave_std": "That is a standard deviation; the task asks first for the variance.",
                "already_scaled": "That is the variance after the scaling; the first number is the one before.",
            })),
        ("the std", std, part(
            "std", "standard deviation", "How is a standard deviation related to a variance?", {
                "gave_variance": "That is the variance; the standard deviation is another number.",
                "unit_entries": unit,
                "already_scaled": "That is the spread after the scaling; the std asked for is the one before.",
            })),
        ("the variance after scaling", variance_scaled, part(
            "scaled", "variance after scaling", "Dividing a variable by c divides its variance by c^2.", {
                "unit_entries": unit,
                "divided_by_d_k": "That is what dividing the scores by d_k would give; the scaling divides "
                "them by sqrt(d_k).",
                "variance_divided_by_sqrt": "You divided the variance by sqrt(d_k); what happens to a "
                "variance when its variable is divided by c?",
                "not_scaled": "That is the variance before scaling.",
            })),
    ]
    result = _parts(
        parts,
        done=f"Right: the expected variance and std of q·k at d_k = {d_k} for these spreads, and the "
        "variance after scaling.",
        empty=f"No answer yet: the variance of q·k at d_k = {d_k}, its std, and the variance after scaling.",
    )
    return _with_precision_note(result, variance, std, variance_scaled)


@_never_raise
def check_init_std(he_bound, xavier_bound=None):
    """Check the uniform versions of the document's initialisation and of Xavier's.

    The document draws W^Q, W^K, W^V from a normal with std sqrt(2/d_model); ``d_model`` is
    the ``d_k`` of ``load_example("cat_sat_why_scale_512")``, the width the document uses.
    The exercise asks for the bound a of a uniform U(-a, a) with the same std, and for the
    bound of Xavier (Glorot) *uniform* for one head's W^Q, d_model x :data:`D_HEAD`. Both
    are values of a formula, so the rule for expected against simulated values holds: four
    decimals pass, the extremes or sample statistics of a drawn matrix are refused.

    Parameters
    ----------
    he_bound : number
        The bound a of the uniform with the document's std.
    xavier_bound : number, optional
        Xavier uniform's bound for W^Q of shape (d_model, D_HEAD).

    Returns
    -------
    CheckResult
        Mistakes recognised: ``gave_std`` (the normal's std, not the bound),
        ``no_square_root`` (a = 3 std, from a^2 = 3 std^2 without its root),
        ``divided_by_sqrt3``, ``square_matrix`` (Xavier for a d_model x d_model matrix),
        ``swapped`` (He and Xavier exchanged), ``fan_out_only``, ``variance_not_std``,
        ``xavier_normal_std``, ``rounded``, ``simulation_estimate``; ``not_a_number``,
        ``not_finite``, ``wrong_value``.

    Examples
    --------
    >>> check_init_std(None).status
    'not yet'
    """
    d = int(examples.load_example("cat_sat_why_scale_512").d_k)
    square = f"That is Xavier uniform's bound for a square {d} x {d} matrix; "
    parts = [
        ("the bound of the document's std", he_bound, functools.partial(
            _sealed_verdict, what="bound", entry=TABLE["e3_init_std:he"],
            hint="What is the variance of U(-a, a)?", messages={
                "gave_std": "That is the normal's standard deviation; the bound of a uniform with that "
                "spread is another number.",
                "no_square_root": "That sets a = 3 std; the variance a^2 / 3 fixes a^2, so take the root "
                "at the end.",
                "divided_by_sqrt3": "The bound of a uniform is larger than its standard deviation, not smaller.",
                "swapped": "That is the Xavier uniform bound of the second part.",
                "square_matrix": square + "this part uses the document's formula.",
            })),
        ("the Xavier uniform bound", xavier_bound, functools.partial(
            _sealed_verdict, what="Xavier uniform bound", entry=TABLE["e3_init_std:xavier"],
            hint="Xavier (Glorot) uniform draws from U(-a, a) with a = sqrt(6/(fan_in + fan_out)); "
            "which are they for W^Q?", messages={
                "square_matrix": square + f"one head's W^Q is {d} x {D_HEAD}.",
                "swapped": "That is the uniform bound of the document's formula (the first part).",
                "fan_out_only": "That uses fan_out alone; Xavier's formula uses both fan_in and fan_out.",
                "variance_not_std": "That is a^2; the square root is missing.",
                "xavier_normal_std": "That is Xavier *normal*'s std; the task asks for the uniform "
                "version's bound.",
            })),
    ]
    result = _parts(
        parts,
        done=f"Right: the uniform bound with the document's std, and Xavier uniform's for a {d} x {D_HEAD} "
        "W^Q.",
        empty=f"No answer yet: the uniform bound with the document's std for d_model = {d}, and Xavier "
        f"uniform's for {d} x {D_HEAD}.",
    )
    return _with_precision_note(result, he_bound, xavier_bound)
