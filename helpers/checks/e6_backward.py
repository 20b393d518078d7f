"""Checks of E6 and E7, the homework of the advanced notebooks 09-11.

E6, *Gradients by hand* (notebook 09) and *Masks in the backward pass* (notebook 10):

check_attention_backward  : a student's self-attention backward pass, down to x and the projections
check_masked_backward     : the backward pass of a padded batch; padding passes back zeros

E7, *Memory-efficient attention* (notebook 11):

check_online_softmax_merge : merging k stacked (max, sum, output) block states of the online softmax

The student's functions and their signatures (the exercises state them too):

``self_attention_backward(x, w_q, w_k, w_v, d_out)`` -> ``(d_x, d_w_q, d_w_k, d_w_v)``
    x (n, d_in), W_q, W_k (d_in, d_k), W_v (d_in, d_v), d_out (n, d_v); out = softmax(Q K^T /
    sqrt(d_k)) V with Q = x W_q, K = x W_k, V = x W_v, and the loss L has dL/d out = d_out.
    Each gradient has the shape of its array.
``padded_backward(q, k, v, d_out, lengths)`` -> ``(d_q, d_k, d_v)``
    q, k (B, n, d_k), v, d_out (B, n, d_v), lengths (B,): a batch of sequences filled up to n
    tokens. A real query attends to the real keys of its sequence; a padding query has an
    all-zero output and passes no gradient back, a padding key receives none.
``merge_all(m, l, o)`` -> ``(m, l, o)``
    the states of k blocks of keys of :func:`helpers.attention.blockwise_attention`, stacked:
    m (k, n, 1) each block's row maximum, l (k, n, 1) its sum of exp(score - m), o (k, n, d_v)
    its unnormalised output sum_j exp(score_j - m) v_j. The merged state is that of all the
    blocks together; the attention output is o / l.

Gradients are compared with central finite differences of L = sum(out * d_out) on random
shapes, with ``atol = rtol = 1e-5``.
"""

from __future__ import annotations

import math

import numpy as np

from helpers.checks import _core
from helpers.checks._core import (
    CheckResult,
    _and,
    _call_student,
    _check_callable,
    _correct,
    _float_result,
    _fresh_rng,
    _incorrect,
    _never_raise,
    _overflow,
    _precision_outcome,
    _raised,
    _reshape_needed,
    _used_library,
    _verb,
    record_sealed,
)

GRAD_TOL = 1e-5
"""Absolute and relative tolerance for gradients compared with finite differences."""

_PROBE_SEED = 9_110_917


def _t(a):
    """``a`` with its last two axes swapped (a transpose that keeps leading batch axes)."""
    return np.swapaxes(a, -1, -2)


def _forward(q, k, v, mask=None):
    """out = softmax(q k^T / sqrt(d_k) [masked]) v, fully masked rows 0 (no library call)."""
    s = q @ _t(k) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    top = s.max(axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    e = np.exp(s - top)
    total = e.sum(axis=-1, keepdims=True)
    p = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    return p @ v, p


def _finite_differences(q, k, v, d_out, mask=None, h=1e-6):
    """dL/dq, dL/dk, dL/dv of L = sum(out * d_out) by central differences."""
    grads = []
    arrays = [q, k, v]
    for idx, a in enumerate(arrays):
        g = np.zeros_like(a)
        for pos in np.ndindex(a.shape):
            plus = [x.copy() for x in arrays]
            minus = [x.copy() for x in arrays]
            plus[idx][pos] += h
            minus[idx][pos] -= h
            f_plus = np.sum(_forward(*plus, mask)[0] * d_out)
            f_minus = np.sum(_forward(*minus, mask)[0] * d_out)
            g[pos] = (f_plus - f_minus) / (2 * h)
        grads.append(g)
    return tuple(grads)


def _chain(p, q, k, v, d_out, keep=None):
    """dQ, dK, dV by the five formulas from the weights ``p`` (``keep``: dS zeroed where False)."""
    c = 1 / math.sqrt(q.shape[-1])
    d_p = d_out @ _t(v)
    d_s = p * (d_p - np.sum(d_p * p, axis=-1, keepdims=True))
    if keep is not None:
        d_s = d_s * keep
    return c * d_s @ k, c * _t(d_s) @ q, _t(p) @ d_out


def _filled_weights(q, k, mask, fill):
    """The weights when blocked scores are set to ``fill`` (0 or -1e9) instead of -inf."""
    s = np.where(mask, q @ _t(k) / math.sqrt(q.shape[-1]), fill)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _masked_variants(q, k, v, d_out, mask):
    """The gradients of the masking mistakes, as {name: [(dq, dk, dv), ...]}."""
    _, p_free = _forward(q, k, v)
    after = p_free * mask
    total = after.sum(axis=-1, keepdims=True)
    renormalised = np.divide(after, total, out=np.zeros_like(after), where=total > 0)
    out = {}
    for name, fill in (("masked_with_zero", 0.0), ("masked_with_large_negative", -1e9)):
        p = _filled_weights(q, k, mask, fill)
        out[name] = [_chain(p, q, k, v, d_out), _chain(p, q, k, v, d_out, keep=mask)]
    out["mask_after_softmax"] = [_chain(after, q, k, v, d_out), _chain(renormalised, q, k, v, d_out)]
    return out


def _backward_variants(q, k, v, d_out, mask=None):
    """The right gradients (analytic) and those of each recognised mistake, as {name: (dq, dk, dv)}."""
    out, p = _forward(q, k, v, mask)
    c = 1 / math.sqrt(q.shape[-1])
    d_p = d_out @ _t(v)
    row = np.sum(d_p * p, axis=-1, keepdims=True)
    d_s = p * (d_p - row)
    no_jac = p * d_p  # the diagonal of the Jacobian only: the -rowsum term is missing
    right = (c * d_s @ k, c * _t(d_s) @ q, _t(p) @ d_out)
    thunks = {
        "missing_jacobian_term": lambda: (c * no_jac @ k, c * _t(no_jac) @ q, right[2]),
        "missing_scale": lambda: (d_s @ k, _t(d_s) @ q, right[2]),
        "scale_squared": lambda: (c * c * d_s @ k, c * c * _t(d_s) @ q, right[2]),
        "d_v_not_transposed": lambda: (right[0], right[1], p @ d_out),
        "d_k_not_transposed": lambda: (right[0], c * d_s @ q, right[2]),
        "d_q_d_k_swapped": lambda: (c * _t(d_s) @ q, c * d_s @ k, right[2]),
    }
    variants = {"right": right}
    for name, thunk in thunks.items():
        try:
            variants[name] = thunk()
        except ValueError:  # a transpose mistake that cannot be computed for these shapes
            pass
    return variants


_BACKWARD_MESSAGES = {
    "missing_jacobian_term": (
        "Your dQ and dK miss a term of the softmax's Jacobian: dS = P * (dP - rowsum(P * dP)). "
        "Each weight depends on every score of its row, so subtract each row's sum of P * dP "
        "before multiplying by P."
    ),
    "missing_scale": (
        "Your dQ and dK are missing the factor 1/sqrt(d_k): the scores were scaled in the forward "
        "pass, so the chain rule multiplies their gradient by the same factor."
    ),
    "scale_squared": (
        "Your dQ and dK carry 1/sqrt(d_k) twice: the scores are scaled once in the forward pass, "
        "so their gradient is multiplied by 1/sqrt(d_k) once."
    ),
    "d_v_not_transposed": (
        "Your dV is P @ dO; the weights map values to outputs, so the gradient goes back through "
        "their transpose: dV = P^T dO (one row per key)."
    ),
    "d_k_not_transposed": (
        "Your dK is dS @ Q; each key collects the gradient of its column of scores, so dK = dS^T Q."
    ),
    "d_q_d_k_swapped": (
        "Your dQ and dK are swapped: dQ has one row per query and dK one row per key."
    ),
    "masked_with_zero": (
        "You set the blocked scores to 0, but exp(0) = 1: a blocked key still gets weight, so it "
        "gets a dV and sends gradient back. Set the blocked scores to -inf, so that exp gives exactly 0."
    ),
    "masked_with_large_negative": (
        "Your gradients are right wherever a row has an allowed key, but a fully masked row sends "
        "gradient back: with -1e9 instead of -inf its weights are uniform (1/m each), not 0. In "
        "this collection that row's output is all zero, so its weights, dS and every gradient it "
        "sends are 0; use -inf and guard the row with no allowed key."
    ),
    "mask_after_softmax": (
        "You applied the mask to the weights after the softmax. The mask belongs on the scores, "
        "before the softmax (blocked scores -inf): masking afterwards leaves rows that do not sum "
        "to 1, or, renormalised, a fully masked row of 0 / 0 and a Jacobian of the wrong weights."
    ),
    "overflow": "",
}


def _backward_cases(masked, seed=None):
    """Random (label, q, k, v, d_out, mask) probes; the square ones show the transposes.

    The four small cases are compared with finite differences; then two overflow cases, with
    scores of about 1e4 and query rows of very different sizes (1 to 3000), compared with the
    analytic gradients (finite differences lose their digits there). With ``masked`` the probes
    are batches of padded sequences instead (:func:`_padded_cases`), and ``mask`` is ``lengths``.
    """
    if masked:
        return _padded_cases(seed)
    rng = np.random.default_rng(_PROBE_SEED if seed is None else seed)
    cases = []
    sizes = ((3, 3, 4, 2, 1.0), (4, 4, 3, 5, 1.5), (2, 5, 3, 4, 1.0), (5, 3, 2, 3, 2.0),
             (4, 6, 3, 2, 3000.0), (5, 5, 4, 3, np.array([[1.0], [10.0], [100.0], [1000.0], [3000.0]])))
    for i, (n, m, d_k, d_v, spread) in enumerate(sizes):
        q = rng.normal(size=(n, d_k)) * spread
        k = rng.normal(size=(m, d_k))
        v = rng.normal(size=(m, d_v))
        d_out = rng.normal(size=(n, d_v))
        cases.append(("small" if i < 4 else "large", q, k, v, d_out, None))
    fresh = _fresh_rng()  # drawn anew at each run: no table of the probes can hold it
    q, k, v, d_out = (fresh.normal(size=shape) for shape in ((3, 3), (4, 3), (4, 2), (3, 2)))
    cases.append(("small", q, k, v, d_out, None))
    return cases


def _pair_mask(lengths, n):
    """(B, n, n): a real query may attend to a real key; a padding query to nothing."""
    real = np.arange(n) < np.asarray(lengths)[:, None]
    return real[:, :, None] & real[:, None, :]


def _padded_cases(seed=None):
    """Batches (label, q, k, v, d_out, lengths) of padded sequences, self-attention with n = m.

    Every batch has padding, and most a sequence of length 0; the square ones (d_k = d_v = n)
    show the transposes. Small ones are compared with finite differences, the two overflow
    cases (scores of about 1e4, query rows of very different sizes) with the analytic gradients.
    """
    rng = np.random.default_rng((_PROBE_SEED if seed is None else seed) + 1)
    cases = []
    for label, lengths, n, d_k, d_v, spread in (
            ("small", (3, 1), 3, 3, 3, 1.0), ("small", (4, 2, 0), 4, 3, 5, 1.5),
            ("small", (5, 3), 5, 2, 4, 1.0), ("small", (2, 0), 3, 4, 2, 2.0),
            ("large", (6, 4, 0), 6, 3, 2, 3000.0),
            ("large", (5, 3), 5, 4, 3, np.array([[1.0], [10.0], [100.0], [1000.0], [3000.0]]))):
        b = len(lengths)
        q = rng.normal(size=(b, n, d_k)) * spread
        k, v, d_out = rng.normal(size=(b, n, d_k)), rng.normal(size=(b, n, d_v)), rng.normal(size=(b, n, d_v))
        cases.append((label, q, k, v, d_out, np.array(lengths)))
    fresh = _fresh_rng()  # drawn anew at each run: no table of the probes can hold it
    n = int(fresh.integers(3, 6))
    q, k, v, d_out = (fresh.normal(size=(2, n, d)) for d in (3, 3, 2, 2))
    cases.append(("small", q, k, v, d_out, np.array([n - 1, int(fresh.integers(0, n))])))
    return cases


def _as_triple(value, shapes):
    """The student's (d_q, d_k, d_v) as float arrays of the given shapes, or None."""
    if not isinstance(value, (tuple, list)) or len(value) != 3:
        return None
    arrays = [_float_result(x) for x in value]
    if any(a is None or a.shape != s for a, s in zip(arrays, shapes)):
        return None
    return arrays


def _close3(a, b):
    """True when every array of ``a`` is close to its partner in ``b``; arrays of other shapes are not close.

    A mistake of the wrong shape (a gradient transposed, on a case where W is not square) is
    not the student's answer: comparing the two must say "no", not raise.
    """
    if len(a) != len(b):
        return False
    pairs = [(np.asarray(x), np.asarray(y)) for x, y in zip(a, b)]
    return all(x.shape == y.shape and np.allclose(x, y, rtol=GRAD_TOL, atol=GRAD_TOL) for x, y in pairs)


def _wrong_gradient_shapes(sizes, what, names, shapes):
    """The verdict on a result that is not the tuple of gradients ``names`` of the ``shapes`` asked for."""
    listed = _and([str(shape) for shape in shapes])
    return _incorrect(
        "wrong_shape",
        f"For {sizes} your {what} should return a tuple {names} of shapes {listed}; it returned something else.",
    )


def _compare_gradients(call, got, variants, label, what, not_finite, differences):
    """``(verdict, reference)`` for the gradients ``got``, shared by the backward checks.

    The reference is ``differences()`` (finite differences) on the "small" case and the analytic
    ``variants["right"]`` on the others. ``verdict`` is a str when ``got`` is right: "", or a note
    when it is right to float32's precision only; a CheckResult when it is refused for its
    precision (float16), or ``not_finite()`` when it holds NaN or infinity (or NumPy warned on
    the "large" case); None when it is not right (the check looks for the mistake).
    """
    reference = differences() if label == "small" else variants["right"]
    if _close3(got, reference):
        return "", reference
    outcome = _precision_outcome(call.value, list(got), list(reference), what)
    if outcome is None and (not all(np.all(np.isfinite(g)) for g in got) or (call.warned and label == "large")):
        outcome = not_finite()
    return outcome, reference


def _unmatched_gradients(sizes, names, got, reference):
    """The verdict on gradients that match no mistake a backward check knows: which of them are wrong."""
    wrong = [n for n, g, r in zip(names, got, reference) if not np.allclose(g, r, rtol=GRAD_TOL, atol=GRAD_TOL)]
    return _incorrect(
        "wrong_values",
        f"For {sizes}, your {_and(wrong)} {_verb(wrong, 'does', 'do')} not match finite "
        "differences of L = sum(out * d_out), and not in a way this check knows. Compare each "
        "line of your code with the formulas at the top of the notebook, keeping the shape "
        "beside each line.",
    )


def _first_refusal(cases, judge):
    """``judge(*case)`` on each case in turn, shared by the backward checks: the first CheckResult
    it gives (a refusal) is the verdict; when every case passes, the precision note of the cases
    that passed to float32's precision only ("" when none)."""
    note = ""
    for case in cases:
        verdict = judge(*case)
        if not isinstance(verdict, str):
            return verdict
        note = verdict or note
    return note


def _check_backward(fn, what, masked, seed=None):
    result = _check_callable(fn, what)
    if result is not None:
        return result
    names = ("dQ", "dK", "dV")

    def judge(label, q, k, v, d_out, lengths):
        mask = _pair_mask(lengths, q.shape[-2]) if masked else None
        args = (q, k, v, d_out) + ((lengths,) if masked else ())
        call = _call_student(fn, *args)
        if call.used:
            return _used_library(call, what)
        if masked and isinstance(call.error, (ValueError, IndexError)) and f"({len(lengths)},)" in str(call.error):
            return _incorrect(
                "lengths_as_mask",
                f"Your {what} raised {type(call.error).__name__} ({str(call.error)[:100]}). lengths "
                f"is not a mask: it holds one number per sequence, shape ({len(lengths)},), and the "
                "mask of allowed (query, key) pairs is yours to build from it.",
            )
        if masked and isinstance(call.error, ValueError) and ("remapped shapes" in str(call.error)
                                                             or "matmul" in str(call.error)):
            return _incorrect(
                "transpose_of_batch",
                f"Your {what} raised ValueError in a matrix product ({str(call.error)[:80]}...). The "
                "arrays have a batch axis in front, (B, n, d): .T reverses all three axes, not the "
                "last two; np.swapaxes(a, -1, -2) swaps only the last two.",
            )
        if call.error is not None:
            return _raised(call, what)
        shapes = (q.shape, k.shape, v.shape)
        got = _as_triple(call.value, shapes)
        sizes = f"q {q.shape}, k {k.shape}, v {v.shape}, d_out {d_out.shape}" + (
            f", lengths {[int(n) for n in lengths]}" if masked else "")
        if got is None:
            return _wrong_gradient_shapes(sizes, what, "(d_q, d_k, d_v)", shapes)
        variants = _backward_variants(q, k, v, d_out, mask)
        def not_finite():
            if masked and label == "small":
                return _incorrect(
                    "nan_for_masked_row",
                    f"Your gradients contain NaN or infinity for lengths {[int(n) for n in lengths]}. A padding "
                    "query (or any query of a sequence of length 0) has no allowed key: its softmax "
                    "is 0 / 0 unless you guard it. Its output is all zero, so it passes no gradient back.",
                )
            return _overflow(call, what, f" for {sizes} with scores of about 1e4")

        verdict, reference = _compare_gradients(call, got, variants, label, what, not_finite,
                                                lambda: _finite_differences(q, k, v, d_out, mask))
        if verdict is not None:  # a str: right ("" or a float32 note); a CheckResult: refused
            return verdict
        mistakes = [(n, g) for n, g in variants.items() if n != "right"]
        if masked:
            mistakes += [(n, g) for n, gs in _masked_variants(q, k, v, d_out, mask).items() for g in gs]
        if _core._RECORDING is not None:  # names and clashes worked out here: no value leaves this function
            answers = [("right", [np.asarray(x, float) for x in variants["right"]])]
            answers += [(name, [np.asarray(x, float) for x in xs]) for name, xs in mistakes if xs is not None]
            clashes = [(m1, m2) for i, (m1, a) in enumerate(answers) for m2, b in answers[i + 1:]
                       if not (m1 == m2 != "right") and len(a) == len(b) and all(
                           x.shape == y.shape and bool(np.allclose(x, y, rtol=GRAD_TOL, atol=GRAD_TOL))
                           for x, y in zip(a, b))]
            record_sealed("gradients", what, {"recorded": ([m for m, _ in answers], clashes)})
        for name, grads in mistakes:
            if not _close3(grads, reference) and _close3(got, grads):
                return _incorrect(name, _BACKWARD_MESSAGES[name])
        if masked:
            real = np.arange(q.shape[-2]) < np.asarray(lengths)[:, None]
            keys_only = _backward_variants(q, k, v, d_out, np.broadcast_to(real[:, None, :], mask.shape))["right"]
            queries_only = _backward_variants(q, k, v, d_out, np.broadcast_to(real[:, :, None], mask.shape))["right"]
            if _close3(got, keys_only):
                return _incorrect(
                    "padded_queries_pass_gradient",
                    "Your padding keys are blocked, but the padding queries still attend and send "
                    "gradient back. A padding query asks nothing: its output is all zero, and so is "
                    "every gradient it sends.",
                )
            if _close3(got, queries_only):
                return _incorrect(
                    "padded_keys_get_gradient",
                    "Your padding queries send nothing back, but the real queries still attend to the "
                    "padding keys: those keys get a dK and a dV. A real token attends only to the real "
                    "tokens of its sequence.",
                )
            ignored = _backward_variants(q, k, v, d_out, None)["right"]
            inverted = _backward_variants(q, k, v, d_out, ~mask)["right"]
            if _close3(got, ignored):
                return _incorrect(
                    "mask_ignored",
                    "Your gradients do not depend on the mask: blocked keys have weight 0, so they "
                    "get no dK or dV and pass nothing back to dQ.",
                )
            if _close3(got, inverted):
                return _incorrect(
                    "mask_inverted",
                    "Your mask works the wrong way round: True means 'may attend', so the blocked "
                    "keys are where the mask is False.",
                )
            n_max = q.shape[-2]
            for shift in (-1, 1):
                shifted = np.clip(np.asarray(lengths) + shift, 0, n_max)
                if np.array_equal(shifted, np.asarray(lengths)):
                    continue
                off = _backward_variants(q, k, v, d_out, _pair_mask(shifted, n_max))["right"]
                if _close3(got, off):
                    return _incorrect(
                        "length_off_by_one",
                        f"Your mask lets each sequence have {'one token fewer' if shift < 0 else 'one token more'} "
                        f"than its length: for lengths {[int(n) for n in lengths]} the real tokens are "
                        "positions 0 to length - 1 (np.arange(n) < length).",
                    )
        return _unmatched_gradients(sizes, names, got, reference)

    return _first_refusal(_backward_cases(masked, seed), judge)


# ---------------------------------------------------------------------------
# E6 exercise 1: the backward pass of self-attention, through the projections
# ---------------------------------------------------------------------------


def _self_cases(seed=None):
    """Random ``(label, x, w_q, w_k, w_v, d_out)`` probes of self-attention with projections.

    A square case (n = d_in = d_k = d_v), where a missing transpose keeps its shape; cases
    with d_k != d_v and d_in != d_k; a single token; scores of about 1e4 and input rows of very
    different sizes (compared with the analytic gradients); one case drawn anew at each run.
    """
    rng = np.random.default_rng((_PROBE_SEED if seed is None else seed) + 11)
    cases = []
    for label, n, d_in, d_k, d_v, spread in (("small", 4, 4, 4, 4, 1.0), ("small", 5, 3, 4, 2, 1.0),
                                             ("small", 1, 3, 2, 2, 1.0), ("small", 6, 5, 3, 4, 1.0),
                                             ("large", 4, 3, 4, 2, 60.0),
                                             ("large", 4, 3, 2, 3, np.array([[1.0], [10.0], [30.0], [60.0]]))):
        x = rng.normal(size=(n, d_in)) * spread
        w_q, w_k = rng.normal(size=(d_in, d_k)), rng.normal(size=(d_in, d_k))
        w_v, d_out = rng.normal(size=(d_in, d_v)), rng.normal(size=(n, d_v))
        cases.append((label, x, w_q, w_k, w_v, d_out))
    fresh = _fresh_rng()  # drawn anew at each run: no table of the probes can hold it
    x, w_q, w_k, w_v, d_out = (fresh.normal(size=shape) for shape in ((3, 4), (4, 2), (4, 2), (4, 3), (3, 3)))
    cases.append(("small", x, w_q, w_k, w_v, d_out))
    return cases


def _self_finite_differences(x, w_q, w_k, w_v, d_out, h=1e-6):
    """dL/dx, dL/dW_q, dL/dW_k, dL/dW_v of L = sum(out * d_out) by central differences."""
    arrays = [x, w_q, w_k, w_v]

    def loss(xx, wq, wk, wv):
        return np.sum(_forward(xx @ wq, xx @ wk, xx @ wv)[0] * d_out)

    grads = []
    for idx, a in enumerate(arrays):
        g = np.zeros_like(a)
        for pos in np.ndindex(a.shape):
            plus = [y.copy() for y in arrays]
            minus = [y.copy() for y in arrays]
            plus[idx][pos] += h
            minus[idx][pos] -= h
            g[pos] = (loss(*plus) - loss(*minus)) / (2 * h)
        grads.append(g)
    return tuple(grads)


def _lift(x, w_q, w_k, w_v, d_q, d_k, d_v):
    """The gradients of x and the three projections from those of q, k and v."""
    d_x = d_q @ w_q.T + d_k @ w_k.T + d_v @ w_v.T      # x feeds q, k and v: three paths add
    return d_x, x.T @ d_q, x.T @ d_k, x.T @ d_v


def _self_variants(x, w_q, w_k, w_v, d_out):
    """The right gradients (analytic) and those of each recognised mistake, as {name: 4-tuple}."""
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    inner = _backward_variants(q, k, v, d_out)
    variants = {name: _lift(x, w_q, w_k, w_v, *g) for name, g in inner.items()}
    d_q, d_k, d_v = inner["right"]
    right = variants["right"]
    thunks = {
        "missing_path_q": lambda: (d_k @ w_k.T + d_v @ w_v.T,) + right[1:],
        "missing_path_k": lambda: (d_q @ w_q.T + d_v @ w_v.T,) + right[1:],
        "missing_path_v": lambda: (d_q @ w_q.T + d_k @ w_k.T,) + right[1:],
        "only_one_path": lambda: (d_q @ w_q.T,) + right[1:],
        "projection_not_transposed": lambda: (d_q @ w_q + d_k @ w_k + d_v @ w_v,) + right[1:],
        "d_w_transposed": lambda: (right[0], d_q.T @ x, d_k.T @ x, d_v.T @ x),
    }
    for name, thunk in thunks.items():
        try:
            variants[name] = thunk()
        except ValueError:  # a transpose mistake that cannot be computed for these shapes
            pass
    return variants


_SELF_MESSAGES = {
    "missing_path_q": "Your dX leaves out the path through the queries: x reaches the loss through "
                      "Q = X W_q as well as through the keys and the values.",
    "missing_path_k": "Your dX leaves out the path through the keys: x reaches the loss through "
                      "K = X W_k as well as through the queries and the values.",
    "missing_path_v": "Your dX leaves out the path through the values: x reaches the loss through "
                      "V = X W_v as well as through the queries and the keys.",
    "only_one_path": "Your dX follows only the path through the queries; x also reaches the loss "
                     "through the keys and the values.",
    "projection_not_transposed": "Your dX multiplies by the projection matrices themselves; going back "
                                 "through Q = X W_q maps a gradient of width d_k to width d_in, which "
                                 "takes W_q transposed (and the same for W_k and W_v).",
    "d_w_transposed": "Your dW_q, dW_k and dW_v are transposed: each has the shape of its matrix, "
                      "(d_in, d_k) or (d_in, d_v).",
}


def _as_quad(value, shapes):
    """The student's (d_x, d_w_q, d_w_k, d_w_v) as float arrays of the given shapes, or None."""
    if not isinstance(value, (tuple, list)) or len(value) != 4:
        return None
    arrays = [_float_result(a) for a in value]
    if any(a is None or a.shape != shape for a, shape in zip(arrays, shapes)):
        return None
    return arrays


@_never_raise
def check_attention_backward(fn, seed=None):
    """Check a student's ``self_attention_backward(x, w_q, w_k, w_v, d_out)``.

    The forward pass is self-attention with projections, ``out = softmax(Q K^T /
    sqrt(d_k)) V`` with ``Q = x W_q``, ``K = x W_k``, ``V = x W_v``; the loss L has
    dL/d out = ``d_out``. The function returns ``(d_x, d_w_q, d_w_k, d_w_v)`` of
    the shapes of x (n, d_in), W_q, W_k (d_in, d_k) and W_v (d_in, d_v). Notebook 09
    derives dQ, dK, dV and the projections' gradients for inputs that are data;
    here x is learned too. Run
    on five random cases (one square, where a missing transpose keeps its shape;
    d_k != d_v; one token), compared with central finite differences of
    ``L = sum(out * d_out)``, then on two overflow cases (scores of about 1e4, input
    rows of very different sizes). The answer is read first by
    :func:`helpers.checks._core.static_refusal`; while it runs, the kernels of
    :mod:`helpers.attention` are replaced by recording stand-ins.

    Parameters
    ----------
    fn : callable
        ``fn(x, w_q, w_k, w_v, d_out)``.
    seed : int, optional

    Returns
    -------
    CheckResult
        Mistakes recognised: ``not_callable``, ``reaches_library``,
        ``used_library``, ``raises`` (and the named ones), ``returned_qkv_gradients``
        (three gradients, those of q, k and v), ``wrong_shape``, ``overflow``,
        ``missing_path_q``, ``missing_path_k``, ``missing_path_v``,
        ``only_one_path``, ``projection_not_transposed``, ``d_w_transposed``, the
        inner mistakes ``missing_jacobian_term``, ``missing_scale``,
        ``scale_squared``, ``d_v_not_transposed``, ``d_k_not_transposed``,
        ``d_q_d_k_swapped``, then ``wrong_values`` (naming the wrong gradients).
    """
    what = "self_attention_backward"
    result = _check_callable(fn, what)
    if result is not None:
        return result
    names = ("dX", "dW_q", "dW_k", "dW_v")

    def judge(label, x, w_q, w_k, w_v, d_out):
        call = _call_student(fn, x, w_q, w_k, w_v, d_out)
        if call.used:
            return _used_library(call, what)
        if call.error is not None:
            return _raised(call, what)
        shapes = (x.shape, w_q.shape, w_k.shape, w_v.shape)
        sizes = f"x {x.shape}, W_q {w_q.shape}, W_k {w_k.shape}, W_v {w_v.shape}, d_out {d_out.shape}"
        got = _as_quad(call.value, shapes)
        if got is None:
            if isinstance(call.value, (tuple, list)) and len(call.value) == 3:
                return _incorrect(
                    "returned_qkv_gradients",
                    "Your function returns three gradients; the task asks for four, those of x and of "
                    "the three projection matrices, (d_x, d_w_q, d_w_k, d_w_v).",
                )
            return _wrong_gradient_shapes(sizes, what, "(d_x, d_w_q, d_w_k, d_w_v)", shapes)
        variants = _self_variants(x, w_q, w_k, w_v, d_out)
        verdict, reference = _compare_gradients(
            call, got, variants, label, what, lambda: _overflow(call, what, f" for {sizes} with scores of about 1e4"),
            lambda: _self_finite_differences(x, w_q, w_k, w_v, d_out))
        if verdict is not None:  # right, refused for its precision, or not finite
            return verdict
        mistakes = [(n, g) for n, g in variants.items() if n != "right"]
        if _core._RECORDING is not None:  # names and clashes worked out here: no value leaves this function
            answers = [("right", [np.asarray(x, float) for x in variants["right"]])]
            answers += [(name, [np.asarray(x, float) for x in xs]) for name, xs in mistakes if xs is not None]
            clashes = [(m1, m2) for i, (m1, a) in enumerate(answers) for m2, b in answers[i + 1:]
                       if not (m1 == m2 != "right") and len(a) == len(b) and all(
                           x.shape == y.shape and bool(np.allclose(x, y, rtol=GRAD_TOL, atol=GRAD_TOL))
                           for x, y in zip(a, b))]
            record_sealed("gradients", what, {"recorded": ([m for m, _ in answers], clashes)})
        for name, grads in mistakes:
            if not _close3(grads, reference) and _close3(got, grads):
                return _incorrect(name, _SELF_MESSAGES.get(name) or _BACKWARD_MESSAGES[name])
        return _unmatched_gradients(sizes, names, got, reference)

    note = _first_refusal(_self_cases(seed), judge)
    if not isinstance(note, str):
        return note
    return _correct(
        "Right: dX, dW_q, dW_k and dW_v match finite differences on five random shapes, and stay "
        "finite at scores of 1e4." + note
    )


@_never_raise
def check_masked_backward(fn, seed=None):
    """Check a student's ``padded_backward(q, k, v, d_out, lengths) -> (d_q, d_k, d_v)``.

    The backward pass of E5's padded attention: q, k (B, n, d_k), v, d_out
    (B, n, d_v) for a batch of B sequences filled up to n tokens, and ``lengths``
    (B,) the number of real tokens of each. A real query attends to the real keys
    of its own sequence; a padding query (and every query of a sequence of length
    0) has an all-zero output, so it passes no gradient back (zeros, not NaN), and
    padding keys get no gradient. Notebooks 09 and 10 take a mask for one sequence;
    here it is built from the lengths, on both sides, for a batch. Compared with
    finite differences on five random batches, then with the analytic gradients on
    two overflow cases (scores of about 1e4, query rows of very different sizes).

    Parameters
    ----------
    fn : callable
        ``padded_backward(q, k, v, d_out, lengths) -> (d_q, d_k, d_v)``, for a batch whose
        sequences are padded to one length.
    seed : int, optional

    Returns
    -------
    CheckResult
        Mistakes recognised: ``not_callable``, ``reaches_library``,
        ``used_library``, ``raises``, ``lengths_as_mask``, ``transpose_of_batch``
        (``.T`` on a (B, n, d) array), ``wrong_shape``,
        ``nan_for_masked_row``, ``overflow``, the mistakes of the unmasked
        backward pass, ``masked_with_zero`` (blocked scores 0),
        ``masked_with_large_negative`` (-1e9: a fully masked row sends gradient
        back), ``mask_after_softmax``, ``padded_queries_pass_gradient``,
        ``padded_keys_get_gradient``, ``mask_ignored``, ``mask_inverted``, ``length_off_by_one``,
        ``wrong_values``.

    """
    result = _check_backward(fn, "padded_backward", masked=True, seed=seed)
    return result if isinstance(result, CheckResult) else _correct(
        "Right: your gradients match finite differences, padding passes back and receives nothing, and "
        "a sequence of length 0 gives zeros." + result
    )


# ---------------------------------------------------------------------------
# E7: merging two blocks of the online softmax
# ---------------------------------------------------------------------------


def _block_state(s, v):
    """(m, l, o) of one block of scores s (n, b) and values v (b, d_v); -inf scores are blocked."""
    m = s.max(axis=-1, keepdims=True)
    safe = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(s - safe)
    return m, e.sum(axis=-1, keepdims=True), e @ v


def _merge_variants(m, ell, o):
    """The right merge of k stacked states and each recognised mistake, as {name: (m, l, o)}."""
    top = m.max(axis=0)                                 # (n, 1)
    safe = np.where(np.isfinite(top), top, 0.0)
    c = np.exp(m - safe)                                # (k, n, 1): each block's factor, <= 1
    with np.errstate(all="ignore"):
        first, last = np.exp(m - m[0]), np.exp(m - m[-1])
        pair_top = np.maximum(m[0], m[1]) if len(m) > 2 else top
        pair_safe = np.where(np.isfinite(pair_top), pair_top, 0.0)
        pair = np.exp(m[:2] - pair_safe)
        flipped = np.where(np.isfinite(m), np.exp(safe - m), 0.0)  # exp(M - m): the factor upside down
        overall = np.max(m[np.isfinite(m)]) if np.isfinite(m).any() else -np.inf  # one max for every row
        c_all = np.exp(m - (overall if np.isfinite(overall) else 0.0))
        return {
            "right": (top, (ell * c).sum(axis=0), (o * c).sum(axis=0)),
            "not_rescaled": (top, ell.sum(axis=0), o.sum(axis=0)),
            "max_from_first_block": (m[0], (ell * first).sum(axis=0), (o * first).sum(axis=0)),
            "max_from_last_block": (m[-1], (ell * last).sum(axis=0), (o * last).sum(axis=0)),
            "sum_not_rescaled": (top, ell.sum(axis=0), (o * c).sum(axis=0)),
            "output_not_rescaled": (top, (ell * c).sum(axis=0), o.sum(axis=0)),
            "only_two_blocks": (pair_top, (ell[:2] * pair).sum(axis=0), (o[:2] * pair).sum(axis=0)),
            "sign_flipped": (top, (ell * flipped).sum(axis=0), (o * flipped).sum(axis=0)),
            "global_max": (np.full_like(top, overall), (ell * c_all).sum(axis=0), (o * c_all).sum(axis=0)),
        }


_MERGE_MESSAGES = {
    "not_rescaled": (
        "Your merge adds the blocks' sums and outputs as they are. Each block's were computed "
        "against its own maximum; measured against the merged maximum, they are all smaller."
    ),
    "max_from_first_block": (
        "Your merged maximum is the first block's. The running maximum must be the largest of all "
        "the blocks' maxima, or the exponentials can overflow."
    ),
    "max_from_last_block": (
        "Your merged maximum is the last block's. The running maximum must be the largest of all "
        "the blocks' maxima, or the exponentials can overflow."
    ),
    "sum_not_rescaled": (
        "Your outputs are rescaled but your sums are not: the blocks' sums were computed against "
        "different maxima, like their outputs."
    ),
    "output_not_rescaled": (
        "Your sums are rescaled but your outputs are not: the blocks' outputs were computed against "
        "different maxima, like their sums."
    ),
    "sign_flipped": (
        "Your factors are exp(M - m), the rescaling upside down: a block whose maximum m is below the "
        "merged maximum M must shrink, by exp(m - M) <= 1, not grow."
    ),
    "global_max": (
        "Your merged maximum is one number for every row, the largest over all rows. Each query row "
        "keeps its own running maximum (shape (n, 1)): the largest of that row's block maxima."
    ),
    "only_two_blocks": (
        "Your merged state holds the first two blocks only; the stack has more, and every one of "
        "them counts."
    ),
}


def _merge_cases(seed=None):
    """Stacks of block states ``(m, l, o, s, v)``: k = 2 to 40 blocks, the maximum in any block,
    scores of 1e4, rows of very different sizes, a single block, and blocks that saw no allowed
    key for a row (m = -inf, l = 0, o = 0), up to every block of a row."""
    rng = np.random.default_rng((_PROBE_SEED if seed is None else seed) + 7)
    cases = []
    for n, sizes, d_v, offset in ((4, (3, 5), 2, 0.0), (6, (2, 3, 1, 4), 3, 0.0), (3, (4, 4, 2), 5, 1e4),
                                  (4, (3, 3, 2, 2, 3), 2, np.array([[0.0], [1e4], [-1e4], [3e4]])),
                                  (3, (5,), 2, 0.0), (2, (1,) * 40, 3, 0.0)):
        s = rng.normal(scale=3.0, size=(n, sum(sizes))) + offset
        v = rng.normal(size=(sum(sizes), d_v))
        edges = np.cumsum((0,) + sizes)
        for row in range(n):                             # each row's maximum in another block
            block = row % len(sizes)
            s[row, edges[block]:edges[block + 1]] += 4.0
        cases.append((sizes, s, v))
    # Empty blocks: the first block for row 0, the last for row 1, every block for row 2.
    sizes = (3, 2, 3)
    s = rng.normal(size=(4, 8)) * 50.0
    s[0, :3] = -np.inf
    s[1, 5:] = -np.inf
    s[2, :] = -np.inf
    cases.append((sizes, s, rng.normal(size=(8, 2))))
    fresh = _fresh_rng()  # drawn anew at each run: no table of the probes can hold it
    sizes = tuple(int(b) for b in fresh.integers(1, 4, size=int(fresh.integers(2, 6))))
    cases.append((sizes, fresh.normal(scale=3.0, size=(3, sum(sizes))), fresh.normal(size=(sum(sizes), 2))))
    out = []
    for sizes, s, v in cases:
        edges = np.cumsum((0,) + sizes)
        states = [_block_state(s[:, i:j], v[i:j]) for i, j in zip(edges[:-1], edges[1:])]
        m, ell, o = (np.stack(parts) for parts in zip(*states))   # (k, n, 1), (k, n, 1), (k, n, d_v)
        out.append((m, ell, o, s, v))
    return out


def _as_state(value, n, d_v):
    """The student's (m, l, o) as float arrays of shapes (n, 1), (n, 1), (n, d_v), or None."""
    if not isinstance(value, (tuple, list)) or len(value) != 3:
        return None
    arrays = [_float_result(x) for x in value]
    if any(a is None for a in arrays):
        return None
    m, ell, o = arrays
    if m.shape != (n, 1) or ell.shape != (n, 1) or o.shape != (n, d_v):
        return None  # an (n,) m or l too: see helpers.checks._core._reshape_needed
    return m, ell, o


def _same_state(x, y):
    return all(np.allclose(a, b, rtol=1e-9, atol=1e-12, equal_nan=False) for a, b in zip(x, y))


def _same_state_empty_rows(x, y):
    """Like :func:`_same_state`, but a row that saw no key may have any m when l = o = 0."""
    m_x, m_y = x[0], y[0]
    empty = ~np.isfinite(m_y[:, 0])
    same_m = np.where(empty[:, None], True, np.isclose(m_x, m_y, rtol=1e-9, atol=1e-12))
    return bool(np.all(same_m)) and _same_state(x[1:], y[1:])


@_never_raise
def check_online_softmax_merge(fn, seed=None):
    """Check a student's ``merge_all(m, l, o) -> (m, l, o)``: k block states of the online softmax at once.

    ``m`` and ``l`` have shape (k, n, 1) and ``o`` (k, n, d_v): the states of k
    blocks of keys, stacked. The merged state, of shapes (n, 1), (n, 1) and
    (n, d_v), must equal the state of all the blocks computed at once (o / l is the
    attention output). Notebook 11 folds one block at a time into a running state;
    here all k are merged together, in no order. Seven stacks: k = 2 to 40 blocks
    (a block of one key each), one block only, rows whose maximum sits in any block,
    scores of 1e4 (where exp overflows without the running maximum), rows whose
    scores differ by 1e4 from row to row, and blocks that saw no allowed key for a
    row (m = -inf, l = 0, o = 0), up to every block of a row, which gives an empty
    state (l = 0, o = 0; its m may be -inf); then a stack drawn anew at each run.

    Parameters
    ----------
    fn : callable
        ``fn(m, l, o)`` with m, l of shape (k, n, 1) and o of shape (k, n, d_v).
    seed : int, optional

    Returns
    -------
    CheckResult
        Mistakes recognised: ``not_callable``, ``reaches_library``,
        ``used_library``, ``raises``, ``pairwise_signature`` (a merge of two states,
        six arguments), ``wrong_shape``, ``not_rescaled``,
        ``max_from_first_block``, ``max_from_last_block``, ``sum_not_rescaled``,
        ``output_not_rescaled``, ``only_two_blocks``, ``sign_flipped`` (exp(M - m)), ``global_max``
        (one maximum for all rows), ``not_finite`` (NaN from an
        empty block), ``overflow`` (inf or NaN at scores of 1e4), ``wrong_values``.
    """
    result = _check_callable(fn, "merge_all")
    if result is not None:
        return result
    note = ""
    for m, ell, o, s, v in _merge_cases(seed):
        k, n, d_v = o.shape
        call = _call_student(fn, m, ell, o)
        if call.used:
            return _used_library(call, "merge_all")
        if isinstance(call.error, TypeError) and "positional argument" in str(call.error):
            return _incorrect(
                "pairwise_signature",
                f"Your function does not take the three stacked arrays ({call.error}). The task asks "
                "for merge_all(m, l, o) with m and l of shape (k, n, 1) and o of shape (k, n, d_v): "
                "all k blocks at once, not two states.",
            )
        if call.error is not None:
            return _raised(call, "merge_all")
        got = _as_state(call.value, n, d_v)
        if got is None:
            parts = [_float_result(x) for x in call.value] if isinstance(call.value, (tuple, list)) else []
            if len(parts) == 3 and all(x is not None for x in parts) and parts[2].shape == (n, d_v):
                for name, x in zip(("m", "l"), parts[:2]):
                    reshape = _reshape_needed(f"merged {name}", x.shape, (n, 1))
                    if reshape is not None:
                        return reshape
            return _incorrect(
                "wrong_shape",
                f"For k = {k} blocks of n = {n} query rows and d_v = {d_v}, your merge_all should "
                f"return a tuple (m, l, o) of shapes ({n}, 1), ({n}, 1) and ({n}, {d_v}): one state, "
                "that of all the blocks together.",
            )
        right = _block_state(s, v)
        variants = _merge_variants(m, ell, o)
        if _same_state_empty_rows(got, right):
            continue
        finite_m = np.isfinite(right[0])  # a row no block saw keeps m = -inf
        outcome = _precision_outcome(call.value, [got[0][finite_m], got[1], got[2]],
                                     [right[0][finite_m], right[1], right[2]], "merge_all")
        if isinstance(outcome, str):  # right to float32's precision: accepted, with a note
            note = outcome
            continue
        if outcome is not None:
            return outcome
        if _core._RECORDING is not None:  # names and clashes worked out here: no value leaves this function
            answers = [("right", [np.asarray(x, float) for x in right])]
            answers += [(name, [np.asarray(x, float) for x in xs]) for name, xs in variants.items()
                        if name != "right" and xs is not None]
            clashes = [(m1, m2) for i, (m1, a) in enumerate(answers) for m2, b in answers[i + 1:]
                       if not (m1 == m2 != "right") and len(a) == len(b) and all(
                           x.shape == y.shape and bool(np.allclose(x, y, rtol=1e-9, atol=1e-12))
                           for x, y in zip(a, b))]
            record_sealed("state", "merge_all", {"recorded": ([m for m, _ in answers], clashes)})
        finite = [np.isfinite(x) | (np.isneginf(x) if i == 0 else False) for i, x in enumerate(got)]
        if not all(np.all(f) for f in finite):
            if np.max(np.abs(s[np.isfinite(s)])) > 700:
                return _overflow(call, "merge_all", " on blocks with scores of about 1e4")
            return _incorrect(
                "not_finite",
                "Your merge returns NaN or infinity for a row that a block saw no allowed key for: "
                "that block's maximum is -inf, and -inf - (-inf) is NaN. Such a block adds nothing "
                "to the row; make sure the exponent you compute for it is -inf, not NaN.",
            )
        with np.errstate(all="ignore"):
            for name, state in variants.items():
                if name != "right" and not _same_state(state, right) and _same_state(got, state):
                    return _incorrect(name, _MERGE_MESSAGES[name])
        return _incorrect(
            "wrong_values",
            f"For k = {k} blocks of n = {n} rows your merged (m, l, o) is not the state of all the "
            "blocks together, and not in a way this check knows. Test your merge on blocks of a row "
            "you can work out by hand, and compare o / l with the softmax of all its scores times v.",
        )
    return _correct(
        "Right: your merge takes the largest of the blocks' maxima and rescales every block to it, "
        "for any number of blocks." + note
    )
