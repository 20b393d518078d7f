"""Checks of E5, *Scaled Dot-Product Attention* (the definition page)."""

from __future__ import annotations

import functools
import math
import numbers

import numpy as np

from helpers import attention
from helpers.checks import _core
from helpers.checks._core import (
    CODE_TOL,
    OVERFLOW_FIX,
    _call_student,
    _check_callable,
    _close,
    _correct,
    _float_result,
    _fresh_rng,
    _incorrect,
    _named_mistake,
    _never_raise,
    _overflow,
    _parts,
    _precision_outcome,
    _raised,
    _used_library,
    record_sealed,
)

# ---------------------------------------------------------------------------
# A student's softmax
# ---------------------------------------------------------------------------


_PROBE_SEED = 20_240_917  # the seed of the probes a notebook does not show


def _softmax_probes(seed=None):
    """``(label, x)`` inputs a stable softmax must get right, in the order they are tried.

    The first two are values a student can try; then the overflow probes, each
    built so that one wrong shift fails on it first: logits of 1e4 break a
    softmax without a shift, [0, 1000] one that subtracts the row minimum,
    [0, 2000] one that subtracts the row mean, rows with offsets 0, 1e4 and -1e4
    one that subtracts the maximum of the whole array; then random batches with
    offsets in the thousands, wide rows and rows of a single logit (3e4).
    """
    rng = np.random.default_rng(_PROBE_SEED if seed is None else seed)
    offsets = np.array([[0.0], [1e4], [-1e4], [5.0]])
    probes = [
        ("small", np.array([1.0, 2.0, 3.0])),
        ("rows", np.array([[1.0, 2.0, 3.0], [0.5, 0.5, -1.0]])),
        ("large", np.array([1e4, 1e4 + 1.0, 1e4 + 2.0])),
        ("very_negative", np.array([-1e4, -1e4 - 1.0])),
        ("gap_1000", np.array([0.0, 1000.0])),
        ("gap_2000", np.array([0.0, 2000.0])),
        ("offset_rows", rng.normal(size=(4, 3)) + offsets),
        ("batch", rng.normal(scale=30.0, size=(2, 3, 7)) + rng.normal(scale=5e3, size=(2, 3, 1))),
        ("wide_rows", rng.normal(scale=2e3, size=(3, 700))),
        ("one_logit", np.array([[3e4], [-2.0]])),
    ]
    fresh = _fresh_rng()  # drawn anew at each run: no table of the probes can hold it
    probes.append(("fresh", fresh.normal(scale=3.0, size=(3, 5)) + np.array([[0.0], [1e4], [-50.0]])))
    return probes


_STABILITY = {
    "large": ("no_max_subtraction",
              "Your softmax overflows on [1e4, 1e4 + 1, 1e4 + 2] (NaN, inf or a warning): np.exp(1e4) "
              "is too big for a float. Subtract each row's maximum before np.exp; the result does "
              "not change, but exp never overflows."),
    "very_negative": ("no_max_subtraction",
                      "Your softmax breaks on [-1e4, -1e4 - 1]: every np.exp underflows to 0, and 0 / 0 "
                      "is NaN. Subtracting each row's maximum makes the largest exponent exp(0) = 1."),
    "gap_1000": ("subtracted_row_min",
                 "Your softmax breaks on [0, 1000]: after subtracting the row's minimum, exp(1000) "
                 "still overflows. Subtract the row's maximum instead, so every exponent is <= 0."),
    "gap_2000": ("subtracted_row_mean",
                 "Your softmax breaks on [0, 2000]: after subtracting the row's mean, exp(1000) still "
                 "overflows. Subtract the row's maximum instead, so every exponent is <= 0."),
    "offset_rows": ("subtracted_global_max",
                    "Your softmax breaks on rows with very different sizes (one row near 0, another near "
                    "1e4): subtracting the maximum of the whole array sends the small rows to exp(-1e4) "
                    "= 0 and 0 / 0. Subtract each row's own maximum (axis=-1, keepdims=True)."),
}


def _axis_where_probes(seed=None):
    """``(label, x, axis, where)`` probes of the ``axis`` and ``where`` arguments, in the order tried.

    Notebook 06's softmax normalises the last axis of unmasked logits; these ask for another
    axis, a boolean ``where`` (True = takes part), a slice with no allowed entry (all zeros),
    blocked entries 1e4 larger than the allowed ones, and both together at logits of 1e4.
    """
    rng = np.random.default_rng(_PROBE_SEED + 7 if seed is None else seed)
    probes = [("axis_0", rng.normal(size=(4, 3)), 0, None),
              ("axis_1", rng.normal(scale=3.0, size=(2, 5, 3)), 1, None)]
    x = rng.normal(size=(3, 5))
    where = rng.random((3, 5)) < 0.6
    where[:, 0] = True
    probes.append(("where", x, -1, where))
    where = np.array([[True, False, True, False], [False] * 4, [True] * 4])
    probes.append(("empty_row", rng.normal(size=(3, 4)), -1, where))
    x = np.array([[0.0, 1.0, 1e4, 2.0], [5.0, 1e4, 6.0, 7.0]])
    probes.append(("blocked_large", x, -1, np.isfinite(x) & (x < 1e3)))
    x = rng.normal(scale=2.0, size=(5, 3)) + np.array([[1e4, -1e4, 0.0]])
    where = rng.random((5, 3)) < 0.7
    where[0] = True
    where[:, 2] = False                                 # a column with no allowed entry
    probes.append(("axis_where", x, 0, where))
    fresh = _fresh_rng()  # drawn anew at each run: no table of the probes can hold it
    x = fresh.normal(scale=3.0, size=(3, 4, 5)) + 1e4 * fresh.integers(-1, 2, size=(3, 1, 1))
    where = fresh.random((3, 4, 5)) < 0.6
    where[0, 0] = False
    axis = int(fresh.choice([-1, 1]))
    where[(0, 0) if axis == -1 else (0, slice(None), 0)] = False
    probes.append(("fresh", x, axis, where))
    return probes


def _masked_reference(x, axis, where):
    """The softmax of ``x`` along ``axis`` over the entries where ``where`` is True (0 elsewhere)."""
    return attention.softmax(x if where is None else np.where(where, x, -np.inf), axis=axis)


def _call_text(x, axis, where):
    """How the check called the student's function, in words."""
    shown = x.tolist() if x.size <= 8 else f"x of shape {x.shape}"
    return f"my_softmax({shown}, axis={axis}" + ("" if where is None else ", where=mask") + ")"


def _axis_where_verdict(fn, label, x, axis, where):
    """None if ``fn`` gets the probe right, else a result: "incorrect" naming the mistake, or
    "correct" with a note when a float32 answer is right to within its precision."""
    kwargs = {"axis": axis} if where is None else {"axis": axis, "where": where}
    call = _call_student(functools.partial(fn, **kwargs), x)
    expected = _masked_reference(x, axis, where)
    if call.used:
        return _used_library(call, "softmax")
    if isinstance(call.error, TypeError) and "unexpected keyword" in str(call.error):
        return _incorrect(
            "no_axis_or_where",
            f"Your function takes no {'axis' if where is None else 'where'} argument. The task asks "
            "for my_softmax(x, axis=-1, where=None), and the check calls it with axis= and where=.",
        )
    if call.error is not None:
        return _raised(call, "softmax")
    got = _float_result(call.value)
    if got is not None and got.shape == x.shape and _close(got, expected, CODE_TOL, CODE_TOL):
        return None
    if got is None or got.shape != x.shape:
        return _incorrect(
            "wrong_shape",
            f"{_call_text(x, axis, where)} returned "
            f"{'shape ' + str(got.shape) if got is not None else 'a ' + type(call.value).__name__}; "
            f"it should return an array of shape {x.shape}, the shape of x.",
        )
    outcome = _precision_outcome(call.value, got, expected, "softmax")
    if isinstance(outcome, str):  # right to float32's precision: accepted, with a note
        return _correct(outcome)
    if outcome is not None:
        return outcome
    if label == "blocked_large" and (call.warned or not np.all(np.isfinite(got))
                                     or not np.allclose(got.sum(axis=-1), 1.0)):
        return _incorrect(
            "blocked_in_max",
            "On rows whose blocked entries are 1e4 larger than the allowed ones, your softmax "
            "returns NaN, zeros or a warning where the allowed entries should share the weight: the "
            "blocked entries still take part in your computation somewhere.",
        )
    empty = np.broadcast_to(np.ones((), bool) if where is None else ~np.any(where, axis=axis, keepdims=True),
                            x.shape)
    if empty.any() and _close(np.where(empty, 0.0, got), expected, CODE_TOL, CODE_TOL):
        if not np.all(np.isfinite(got[empty])):
            return _incorrect(
                "empty_row_nan",
                f"{_call_text(x, axis, where)}: a slice with no allowed entry comes out as NaN. "
                "There is nothing to share out there, so this collection gives it all zeros, as the "
                "masked attention of notebook 05 does.",
            )
        return _incorrect(
            "empty_row_not_zero",
            f"{_call_text(x, axis, where)}: a slice with no allowed entry gets weights that are not "
            "zero (as a large negative fill value such as -1e9 gives). There is nothing to share "
            "out there: it should be all zeros.",
        )
    wrongs = []
    if axis not in (-1, x.ndim - 1):
        wrongs.append(("axis_ignored", lambda: _masked_reference(x, -1, where),
                       f"You normalised along the last axis, but the check asked for axis={axis}: the "
                       "weights should sum to 1 along the axis it names."))
    if where is not None:
        wrongs += [
            ("where_ignored", lambda: attention.softmax(x, axis=axis),
             "Your softmax ignores where: the entries where the mask is False still get weight."),
            ("mask_after_softmax", lambda: attention.softmax(x, axis=axis) * where,
             "You set the blocked weights to 0 after the softmax, so the allowed ones no longer sum "
             "to 1: the blocked entries took their share first."),
            ("inverted_mask", lambda: _masked_reference(x, axis, ~np.asarray(where, bool)),
             "Your softmax shares the weight among the entries where the mask is False: that is the "
             "convention of PyTorch's attn_mask (True = blocked). Here True means allowed, as in "
             "np.sum(..., where=...)."),
            ("blocked_set_to_zero", lambda: attention.softmax(np.where(where, x, 0.0), axis=axis),
             "Your blocked entries are treated as logits of 0, so they still get weight: a blocked "
             "entry must get exactly none."),
        ]
    named = _named_mistake(got, expected, wrongs, prepare=np.nan_to_num)
    if named is not None:
        return named
    if call.warned or not np.all(np.isfinite(got)):
        return _overflow(call, "softmax", f" on {_call_text(x, axis, where)}")
    return _incorrect(
        "wrong_values",
        f"{_call_text(x, axis, where)} is not right, and not one of the mistakes this check knows. "
        "Try a small 2 x 3 array and a mask by hand, and check that each slice along the axis sums "
        "to 1 over its allowed entries.",
    )


@_never_raise
def check_stable_softmax(fn, seed=None):
    """Check a student's stable softmax ``fn(x, axis=-1, where=None)`` along any axis, with a mask.

    ``fn`` is called first with one float array (the last axis, no mask), then with
    ``axis=`` and a boolean ``where=`` of the shape of ``x`` (True = takes part):
    blocked entries get weight 0, and a slice with no allowed entry gives all zeros,
    the collection's choice for a fully masked row. Notebook 06 writes the softmax of
    the last axis without a mask; this asks for the next step. The first part is
    tried on ten probes (:func:`_softmax_probes`): a small row, a
    2-D array, logits of 1e4 and -1e4, [0, 1000], [0, 2000], rows with offsets
    0, 1e4 and -1e4, a random batch of shape (2, 3, 7) with offsets in the
    thousands, three wide rows of 700 logits spread over thousands, and rows of
    one logit, then a case drawn anew at each run. No row is all -inf: a softmax
    has no mask, and fully masked rows are met by :func:`check_masked_attention`,
    the backward checks and the merge. Its warnings are recorded, never shown;
    its exceptions are caught.
    The answer is read first by :func:`helpers.checks._core.static_refusal`; while
    it runs, the kernels of :mod:`helpers.attention` are replaced by recording
    stand-ins.

    Parameters
    ----------
    fn : callable
        ``fn(x, axis=-1, where=None)``: the student's softmax.
    seed : int, optional

    Returns
    -------
    CheckResult
        Mistakes recognised: ``not_callable``, ``reaches_library``,
        ``used_library``, ``raises`` (and the named ``max_of_two_arrays``,
        ``missing_keepdims``), ``wrong_shape`` (including results that are not
        arrays of real numbers), ``wrong_axis`` (2-D input normalised over the
        columns or the whole array), ``not_normalised``, ``no_max_subtraction``
        (breaks on logits of 1e4 or -1e4), ``subtracted_row_min`` (breaks first on
        [0, 1000]), ``subtracted_row_mean`` (first on [0, 2000]),
        ``subtracted_global_max`` (first on rows with different offsets),
        ``unstable`` (breaks on the batch, the wide rows or the single logits),
        ``precision`` (float16), ``wrong_values``; then, for ``axis`` and ``where``
        (:func:`_axis_where_probes`): ``no_axis_or_where`` (the function takes
        no such argument), ``axis_ignored``, ``where_ignored``, ``inverted_mask`` (True = blocked, as PyTorch),
        ``mask_after_softmax``, ``blocked_set_to_zero``, ``blocked_in_max``
        (blocked entries 1e4 larger break it), ``empty_row_nan``,
        ``empty_row_not_zero``, ``overflow``, ``wrong_values``. A float32 result within
        ``FLOAT32_TOL`` is accepted with a note on precision.
    """
    result = _check_callable(fn, "softmax")
    if result is not None:
        return result
    note = ""
    for label, x in _softmax_probes(seed):
        expected = attention.softmax(x)
        call = _call_student(fn, x)
        if call.used:
            return _used_library(call, "softmax")
        got = None if call.error is not None else _float_result(call.value)
        breaks = call.warned or (got is not None and got.shape == x.shape and not np.all(np.isfinite(got)))
        if call.error is not None and not (
            label not in ("small", "rows") and isinstance(call.error, (FloatingPointError, OverflowError))
        ):
            return _raised(call, "softmax")
        if label in _STABILITY and (call.error is not None or breaks):
            return _incorrect(*_STABILITY[label])
        if label in ("batch", "wide_rows", "one_logit", "fresh") and (call.error is not None or breaks):
            return _incorrect(
                "unstable",
                f"Your softmax overflows (NaN, inf or a warning) on an input of shape {x.shape} "
                f"with logits in the thousands. {OVERFLOW_FIX}",
            )
        if breaks:
            return _overflow(call, "softmax", f" on {x.tolist()}")
        if got is None or got.shape != x.shape:
            shape = getattr(got, "shape", None)
            desc = f"shape {shape}" if got is not None else f"a {type(call.value).__name__}"
            return _incorrect(
                "wrong_shape",
                f"For an input of shape {x.shape} your softmax returned {desc}; it should return "
                "an array of numbers of the same shape.",
            )
        if _close(got, expected, CODE_TOL, CODE_TOL):
            continue
        outcome = _precision_outcome(call.value, got, expected, "softmax")
        if isinstance(outcome, str):  # right to float32's precision: accepted, with a note
            note = outcome
            continue
        if outcome is not None:
            return outcome
        if x.ndim >= 2:
            for axis, where in ((-2, "each column (axis=0)"), (None, "the whole array")):
                if _close(got, attention.softmax(x, axis=axis), CODE_TOL, CODE_TOL):
                    return _incorrect(
                        "wrong_axis",
                        f"On a {x.ndim}-D input your softmax normalised {where}; normalise each row "
                        "over the last axis (axis=-1, keepdims=True).",
                    )
        if np.all(np.isfinite(got)) and not np.allclose(got.sum(axis=-1), 1.0, rtol=0, atol=CODE_TOL):
            return _incorrect(
                "not_normalised",
                f"On an input of shape {x.shape} your softmax does not sum to 1 along the last axis: "
                "each row of a softmax is a set of weights that add up to 1.",
            )
        shown = x.tolist() if x.size <= 6 else f"an input of shape {x.shape}"
        return _incorrect(
            "wrong_values",
            f"Your softmax of {shown} is not right, and not one of the mistakes this check knows. "
            "Try it on [1.0, 2.0, 3.0] and compare with the value you work out by hand.",
        )
    for label, x, axis, where in _axis_where_probes(seed):
        result = _axis_where_verdict(fn, label, x, axis, where)
        if result is not None and not result:
            return result
        if result is not None:
            note = result.message
    return _correct(
        "Right: your softmax sums to 1 along the axis asked for, over the allowed entries only, gives "
        "zeros where nothing is allowed, and survives logits of ±1e4, rows of very different sizes "
        "and wide rows." + note
    )


# ---------------------------------------------------------------------------
# A student's masked attention
# ---------------------------------------------------------------------------


def _t(k):
    """``k`` with its last two axes swapped: (..., m, d) -> (..., d, m)."""
    return np.swapaxes(k, -1, -2)


def _whole_matrix_masked(q, k, v, mask):
    s = np.where(mask, q @ _t(k) / np.sqrt(q.shape[-1]), -np.inf)
    flat = s.reshape(s.shape[0], -1)
    e = np.exp(flat - flat.max(axis=-1, keepdims=True)).reshape(s.shape)
    return e / e.sum(axis=(-2, -1), keepdims=True) @ v


def _stable_softmax(s):
    top = s.max(axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    e = np.exp(s - top)
    total = e.sum(axis=-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def _masked_with(q, k, v, mask, fill):
    """Attention with the blocked scores set to ``fill`` (0 or -1e9) instead of -inf."""
    s = np.where(mask, q @ _t(k) / np.sqrt(q.shape[-1]), fill)
    return _stable_softmax(s) @ v


def _mask_after_softmax(q, k, v, mask, renormalise):
    """The weights of the unmasked softmax times the mask (then renormalised, 0 where nothing is left)."""
    w = _stable_softmax(q @ _t(k) / np.sqrt(q.shape[-1])) * mask
    if renormalise:
        total = w.sum(axis=-1, keepdims=True)
        w = np.divide(w, total, out=np.zeros_like(w), where=total > 0)
    return w @ v


def _valid(lengths, n):
    """(B, n): True at the real tokens of each sequence, positions 0 to length - 1."""
    return np.arange(n) < np.asarray(lengths)[:, None]


def _pair_mask(lengths, n):
    """(B, n, n): a real query may attend to a real key; a padding query to nothing."""
    valid = _valid(lengths, n)
    return valid[:, :, None] & valid[:, None, :]


def _masked_cases(seed=None):
    """Batches ``(name, q, k, v, lengths)`` of padded sequences, self-attention with n = m.

    Two seeded cases (one with a sequence of length 0), then random probes: other shapes,
    120 tokens, scores of about 1e4, query rows of very different sizes (1 to 3000) and a
    case drawn anew at each run.
    """
    rng = np.random.default_rng(52)
    cases = []
    for name, lengths, n, d_k, d_v in (("padding", [5, 3], 5, 3, 2), ("empty", [4, 0, 2], 4, 3, 2)):
        b = len(lengths)
        cases.append((name, rng.normal(size=(b, n, d_k)), rng.normal(size=(b, n, d_k)),
                      rng.normal(size=(b, n, d_v)), np.array(lengths)))
    probes = np.random.default_rng(_PROBE_SEED + 1 if seed is None else seed)
    for b, n, d_k, d_v, spread in ((3, 6, 4, 3, 1.0), (2, 120, 8, 5, 1.0), (2, 7, 2, 4, 8.0)):
        q = probes.normal(size=(b, n, d_k)) * spread
        q[:, 0] *= 10.0
        lengths = probes.integers(1, n + 1, size=b)
        lengths[-1] = n - 1
        cases.append(("random", q, probes.normal(size=(b, n, d_k)), probes.normal(size=(b, n, d_v)), lengths))
    # Overflow: scores of about 1e4 (exp overflows past 709), one sequence of length 0.
    b, n, d_k, d_v = 3, 6, 4, 3
    q = probes.normal(size=(b, n, d_k)) * 3000.0
    cases.append(("large_scores", q, probes.normal(size=(b, n, d_k)), probes.normal(size=(b, n, d_v)),
                  np.array([6, 2, 0])))
    # Rows of very different sizes: query row i scaled by 1, 10, 100, 1000, 3000.
    q = probes.normal(size=(2, 5, d_k)) * np.array([[1.0], [10.0], [100.0], [1000.0], [3000.0]])
    cases.append(("different_rows", q, probes.normal(size=(2, 5, d_k)), probes.normal(size=(2, 5, d_v)),
                  np.array([5, 4])))
    fresh = _fresh_rng()  # drawn anew at each run: no table of the probes can hold it
    b, n = 3, int(fresh.integers(4, 8))
    cases.append(("fresh", fresh.normal(size=(b, n, 3)), fresh.normal(size=(b, n, 3)),
                  fresh.normal(size=(b, n, 2)), fresh.integers(0, n + 1, size=b)))
    return cases


_CASE_NAMES = {
    "padding": "lengths [5, 3]",
    "empty": "lengths [4, 0, 2] (a sequence of length 0)",
    "random": "a random batch",
    "large_scores": "scores of about 1e4 and a sequence of length 0",
    "different_rows": "query rows of very different sizes (scores up to about 1e4)",
    "fresh": "a random batch drawn at this run",
}


@_never_raise
def check_masked_attention(fn, seed=None):
    """Check a student's ``padded_attention(q, k, v, lengths)`` on a batch of padded sequences.

    ``q``, ``k`` are (B, n, d_k) and ``v`` (B, n, d_v): self-attention over B
    sequences filled up to n tokens; ``lengths`` (B,) gives how many tokens of each
    are real (positions 0 to length - 1), the rest being padding. A real query
    attends to the real keys of its own sequence only; a padding query asks
    nothing, so its output row is all zeros, and so is every row of a sequence of
    length 0. Notebook 05 builds a padding mask for the keys only, with the
    library's ``padding_mask``; here both sides are masked. The result is compared
    with :func:`helpers.attention.scaled_dot_product_attention` (scaled by
    1/sqrt(d_k)) under that mask, on seeded batches, then on random probes: other
    shapes, 120 tokens, scores of about 1e4 and query rows of very different sizes.
    ``fn`` may return the output or a tuple ``(output, weights)``.

    Parameters
    ----------
    fn : callable
        ``padded_attention(q, k, v, lengths)``, returning the output (B, n, d_v), or the tuple
        (output, weights).
    seed : int, optional

    Returns
    -------
    CheckResult
        Mistakes recognised: ``not_callable``, ``reaches_library``,
        ``used_library``, ``raises`` (and the named ones), ``lengths_as_mask``
        (the lengths passed on as if they were a mask), ``wrong_shape``,
        ``mask_ignored``, ``mask_inverted``, ``padded_queries_not_zero`` (only the keys masked),
        ``padded_keys_attended`` (only the queries masked), ``length_off_by_one``,
        ``masked_with_zero`` (blocked scores set to 0), ``mask_after_softmax``
        (the weights masked after the softmax, renormalised or not),
        ``unscaled``, ``divided_by_d_k``, ``softmax_whole_matrix``,
        ``nan_for_masked_row`` (a row with nothing to attend to gives NaN),
        ``masked_row_not_zero`` (it gives the mean of the values, as with -1e9
        instead of -inf), ``overflow`` (NaN or inf elsewhere, or NumPy warned),
        ``precision``, ``wrong_values``. A float32 result within ``FLOAT32_TOL``
        is accepted with a note on precision.
    """
    result = _check_callable(fn, "padded_attention")
    if result is not None:
        return result
    sdpa = attention.scaled_dot_product_attention
    note = ""
    for case, q, k, v, lengths in _masked_cases(seed):
        where = _CASE_NAMES[case]
        n = q.shape[-2]
        mask = _pair_mask(lengths, n)
        call = _call_student(fn, q, k, v, lengths)
        if call.used:
            return _used_library(call, "padded_attention")
        if isinstance(call.error, (ValueError, IndexError)) and f"({len(lengths)},)" in str(call.error):
            return _incorrect(
                "lengths_as_mask",
                f"Your padded_attention raised {type(call.error).__name__} ({str(call.error)[:100]}). "
                f"lengths is not a mask: it holds one number per sequence, shape ({len(lengths)},), "
                "and the mask of allowed (query, key) pairs is yours to build from it.",
            )
        if call.error is not None:
            return _raised(call, "padded_attention")
        value = call.value
        if isinstance(value, tuple) and len(value) == 2:
            value = value[0]
        got = _float_result(value)
        expected = sdpa(q, k, v, mask)[0]
        if got is None or got.shape != expected.shape:
            desc = f"shape {got.shape}" if got is not None else f"a {type(value).__name__}"
            return _incorrect(
                "wrong_shape",
                f"For q {q.shape}, k {k.shape}, v {v.shape} your function returned {desc}; "
                f"the output should have shape {expected.shape} (B, n, d_v).",
            )
        if _close(got, expected, CODE_TOL, CODE_TOL):
            continue
        empty = ~mask.any(axis=-1)
        finite_rows = np.all(np.isfinite(got), axis=-1)
        if empty.any() and np.all(np.isnan(got[empty])) and np.all(finite_rows[~empty]) and _close(
            got[~empty], expected[~empty], CODE_TOL, CODE_TOL
        ):
            return _incorrect(
                "nan_for_masked_row",
                f"With {where}, a query row with nothing to attend to (a padding query, or any "
                "query of a sequence of length 0) gives NaN: the softmax of a row of -inf is 0 / 0. "
                "This collection expects an all-zero output row there.",
            )
        if not np.all(finite_rows[~empty]) or (call.warned and not np.all(finite_rows)):
            return _overflow(call, "padded_attention", f" with {where}")
        outcome = _precision_outcome(value, got, expected, "padded_attention")
        if isinstance(outcome, str):  # right to float32's precision: accepted, with a note
            note = outcome
            continue
        if outcome is not None:
            return outcome
        valid = _valid(lengths, n)
        mistakes = [
            ("mask_ignored", lambda: sdpa(q, k, v)[0],
             "Your output does not depend on the lengths: the padding keys must get weight 0."),
            ("mask_inverted", lambda: sdpa(q, k, v, ~mask)[0],
             "Your mask works the wrong way round: the padding gets the weight and the real tokens "
             "none."),
            ("padded_queries_not_zero", lambda: sdpa(q, k, v, valid[:, None, :])[0],
             f"With {where}, the real tokens are right, but the padding positions (at and after a "
             "sequence's length) have outputs that are not zero. A padding query asks nothing: "
             "its output row should be all zeros."),
            ("padded_keys_attended", lambda: sdpa(q, k, v, valid[:, :, None])[0],
             "Your padding queries give zeros, but the real queries still give weight to the "
             "padding keys: a real token attends only to the real tokens of its sequence."),
            ("length_off_by_one", lambda: sdpa(q, k, v, _pair_mask(np.asarray(lengths) + 1, n))[0],
             "Your mask lets one position too many through: a sequence of length L has its real "
             "tokens at positions 0 to L - 1."),
            ("length_off_by_one", lambda: sdpa(q, k, v, _pair_mask(np.maximum(np.asarray(lengths) - 1, 0), n))[0],
             "Your mask blocks one real position: a sequence of length L has its real tokens at "
             "positions 0 to L - 1."),
            ("masked_with_zero", lambda: _masked_with(q, k, v, mask, 0.0),
             "You set the blocked scores to 0, but exp(0) = 1: a blocked key still gets as much "
             "weight as an allowed key with score 0. A blocked key must get weight exactly 0."),
            ("mask_after_softmax", lambda: _mask_after_softmax(q, k, v, mask, False),
             "You applied the mask after the softmax: the weights left in each row no longer sum "
             "to 1. The blocked keys must take no part in the softmax."),
            ("mask_after_softmax", lambda: _mask_after_softmax(q, k, v, mask, True),
             "You masked the weights after the softmax and renormalised. That works while the scores "
             "are small, but here a blocked key with a large score takes nearly all of a row's "
             "weight before the mask removes it, and what is left underflows. The blocked keys must "
             "take no part in the softmax."),
            ("unscaled", lambda: sdpa(q, k, v, mask, scale=1.0)[0],
             "The masking is right, but you forgot to divide the scores by sqrt(d_k)."),
            ("divided_by_d_k", lambda: sdpa(q, k, v, mask, scale=1.0 / q.shape[-1])[0],
             "The masking is right, but you divided the scores by d_k; divide them by sqrt(d_k)."),
            ("softmax_whole_matrix", lambda: _whole_matrix_masked(q, k, v, mask),
             "Your softmax normalised all the allowed scores of a sequence together; normalise each "
             "query's row on its own (axis=-1)."),
        ]
        named = _named_mistake(got, expected, mistakes)
        if named is not None:
            return named
        if empty.any():
            rest_ok = _close(got[~empty], expected[~empty], CODE_TOL, CODE_TOL)
            mean_v = np.broadcast_to(v.mean(axis=-2, keepdims=True), got.shape)[empty]
            if rest_ok and _close(got[empty], mean_v, CODE_TOL, CODE_TOL):
                return _incorrect(
                    "masked_row_not_zero",
                    "A query row with nothing to attend to gives the mean of the values: that is "
                    "what a large negative number such as -1e9 instead of -inf does, since every "
                    "blocked key then gets the same weight. This collection expects an all-zero "
                    "row there.",
                )
        return _incorrect(
            "wrong_values",
            f"Your output with {where} is not right, and not one of the mistakes this check "
            "knows. Print your weights for a small batch and check that each real query's row sums "
            "to 1 over the real keys.",
        )
    return _correct(
        "Right: real tokens attend to the real tokens of their sequence, padding gives zeros, scores "
        "of 1e4 do not overflow, and a sequence of length 0 gives zeros." + note
    )


# ---------------------------------------------------------------------------
# The definition page: shapes with n queries and m keys
# ---------------------------------------------------------------------------

SHAPES_CASE = {"batch": 3, "heads": 2, "n": 4, "m": 6, "d_k": 8, "d_v": 5}
"""The sizes of the shapes exercise: queries (heads, n, d_k) shared by a batch of sentences,
keys (batch, 1, m, d_k) and values (batch, 1, m, d_v) shared by the heads. Notebook 05 works
out arrays that all carry the same leading axes; here they meet by broadcasting."""


def _as_shape(answer):
    """A tuple of non-negative ints from a tuple, list or array; text is refused (None)."""
    if isinstance(answer, np.ndarray):
        if answer.ndim != 1 or answer.dtype.kind not in "iuf":
            return None
        items = answer.tolist()
    elif isinstance(answer, (tuple, list)):
        items = list(answer)
    else:
        return None
    shape = []
    for item in items:
        if isinstance(item, (bool, np.bool_)):
            return None
        if isinstance(item, numbers.Integral):
            shape.append(int(item))
        elif isinstance(item, numbers.Real) and math.isfinite(item) and float(item).is_integer():
            shape.append(int(item))
        else:
            return None
        if shape[-1] < 0:
            return None
    return tuple(shape) if shape else None


def _shape_verdict(answer, *, what, expected, mistakes):
    if _core._RECORDING is not None:  # names and clashes worked out here: no value leaves this function
        answers = [("right", tuple(expected))] + [(name, tuple(t)) for name, t, _ in mistakes if t is not None]
        clashes = [(m1, m2) for i, (m1, v1) in enumerate(answers) for m2, v2 in answers[i + 1:]
                   if not (m1 == m2 != "right") and v1 == v2]
        record_sealed("shape", what, {"recorded": ([m for m, _ in answers], clashes)})
    shape = _as_shape(answer)
    if shape is None:
        if isinstance(answer, str):
            return _incorrect(
                "not_a_shape",
                f"Your shape of {what} is the text {answer.strip()!r}, not a shape. Write a tuple "
                "of whole numbers without quotes, like the .shape of an array: (2, 7).",
            )
        return _incorrect(
            "not_a_shape", f"Give the shape of {what} as a tuple of whole numbers, for example (2, 7)."
        )
    if shape == expected:
        return None
    for name, target, message in mistakes:
        if target != expected and shape == target:
            return _incorrect(name, message)
    return _incorrect(
        "wrong_shape",
        f"{shape} is not the shape of {what}: one row per query, one column per "
        + ("key." if what != "the output" else "value dimension."),
    )


@_never_raise
def check_definition_shapes(scores, weights=None, out=None):
    """Check the shapes of attention whose leading axes broadcast: B = 3, h = 2, n = 4, m = 6.

    Q is (h, n, d_k) = (2, 4, 8), the same queries for every sentence; K is
    (B, 1, m, d_k) = (3, 1, 6, 8) and V (B, 1, m, d_v) = (3, 1, 6, 5), one set of
    keys and values per sentence shared by the heads. The page's implementation
    takes ``(..., n, d_k)`` arrays, and NumPy broadcasts the leading axes; notebook
    05 works out arrays that all carry the same leading axes.

    The expected shapes are computed by running
    :func:`helpers.attention.scaled_dot_product_attention` on arrays of those
    sizes, and each recognised mistake by running it on the sizes the mistake
    swaps.

    Parameters
    ----------
    scores, weights, out : tuple of int (or a list or array of them; text such as "3x5" is refused)

    Returns
    -------
    CheckResult
        Mistakes recognised: ``no_leading_axes`` (the shape for one sequence
        and one head), ``leading_axes_swapped``, ``kept_length_one_axis`` (the
        keys' axis of length 1 kept), ``no_batch_axis`` (the queries' leading
        axes only), ``n_m_swapped`` (queries and keys exchanged, which
        is also the transposed score matrix), ``d_k_d_v_swapped``,
        ``assumed_square`` (as in self-attention), ``used_d_k``, ``transposed``,
        ``out_is_weights``, ``not_a_shape``, ``wrong_shape``. Missing parts give
        "not yet" once the given ones are right.
    """
    n, m, d_k, d_v = (SHAPES_CASE[key] for key in ("n", "m", "d_k", "d_v"))
    batch, heads = SHAPES_CASE["batch"], SHAPES_CASE["heads"]
    lead = (batch, heads)

    def run(n_q, n_k, width_k, width_v):
        q = np.zeros((heads, n_q, width_k))              # the same queries for every sentence
        k, v = np.zeros((batch, 1, n_k, width_k)), np.zeros((batch, 1, n_k, width_v))  # shared by heads
        out_, weights_ = attention.scaled_dot_product_attention(q, k, v)
        return attention.attention_scores(q, k).shape, weights_.shape, out_.shape

    right = run(n, m, d_k, d_v)
    swapped_nm = run(m, n, d_k, d_v)
    swapped_d = run(n, m, d_v, d_k)
    square_n, square_m = run(n, n, d_k, d_v), run(m, m, d_k, d_v)

    def axes_mistakes(index, what):
        return [
            ("no_leading_axes", right[index][2:], f"That is the shape of {what} for one sequence and "
             f"one head. The batch ({lead[0]}) and head ({lead[1]}) axes are not touched by the "
             "attention: they stay in front."),
            ("leading_axes_swapped", lead[::-1] + right[index][2:], f"The batch axis ({lead[0]}) comes "
             f"before the head axis ({lead[1]}): line the leading axes up from the right, as NumPy does."),
            ("kept_length_one_axis", (batch, 1) + right[index][2:], "An axis of length 1 broadcasts: "
             f"it takes the length of the other array's axis, here the {heads} heads of the queries."),
            ("no_batch_axis", (heads,) + right[index][2:], f"That is the shape for one sentence: the "
             f"keys bring a batch axis of {batch} sentences, and it stays in the result."),
        ]

    def grid_mistakes(index, what):
        return axes_mistakes(index, what) + [
            ("n_m_swapped", swapped_nm[index], f"You swapped queries and keys: {what} has one row per "
             f"query (n = {n}) and one column per key (m = {m})."),
            ("assumed_square", square_n[index], f"That would be self-attention (n = m); here n = {n} "
             f"queries attend to m = {m} keys, so {what} is n x m."),
            ("assumed_square", square_m[index], f"That would be self-attention (n = m); here n = {n} "
             f"queries attend to m = {m} keys, so {what} is n x m."),
            ("used_d_k", lead + (n, d_k), f"d_k is summed away by the dot products; {what} has one entry "
             "per query-key pair."),
        ]  # a transposed (m, n) is the same shape as n_m_swapped, which names it

    out_mistakes = axes_mistakes(2, "the output") + [
        ("n_m_swapped", swapped_nm[2], f"One output per query, not per key: n = {n} rows."),
        ("d_k_d_v_swapped", swapped_d[2], f"The output mixes the values, so its width is d_v = {d_v}, not d_k."),
        ("transposed", lead + right[2][:1:-1], "Transposed: the output has one row per query."),
        ("out_is_weights", right[1], "That is the shape of the weights; the output is weights @ V, (n, d_v)."),
    ]  # the square m x m case gives the output (m, d_v), the same as n_m_swapped, which names it
    parts = [
        ("the scores", scores, functools.partial(
            _shape_verdict, what="the scores", expected=right[0], mistakes=grid_mistakes(0, "the score matrix"))),
        ("the weights", weights, functools.partial(
            _shape_verdict, what="the weights", expected=right[1], mistakes=grid_mistakes(1, "the weights matrix"))),
        ("the output", out, functools.partial(
            _shape_verdict, what="the output", expected=right[2], mistakes=out_mistakes)),
    ]
    return _parts(
        parts,
        done=f"Right: the leading axes broadcast to (B, h) = {lead}; scores and weights are {right[0]}, "
        f"the output is {right[2]}.",
        empty="No answer yet: the shapes of the scores, the weights and the output.",
    )
