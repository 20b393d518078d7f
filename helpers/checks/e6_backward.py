"""Checks of E6 and E7, the homework of the advanced notebooks 09-11.

E6, *Gradients by hand* (notebook 09) and *Masks in the backward pass* (notebook 10):

check_attention_backward  : a student's backward pass, dQ, dK, dV from dO
check_masked_backward     : the same with a mask; a fully masked row passes back zeros

E7, *Memory-efficient attention* (notebook 11):

check_online_softmax_merge : merging two partial (max, sum, output) blocks of the online softmax

The student's functions and their signatures (the exercises state them too):

``attention_backward(q, k, v, d_out)`` -> ``(d_q, d_k, d_v)``
    q (n, d_k), k (m, d_k), v (m, d_v), d_out (n, d_v); out = softmax(q k^T / sqrt(d_k)) v
    and the loss L has dL/d out = d_out. Returns dL/dq (n, d_k), dL/dk (m, d_k), dL/dv (m, d_v).
``masked_backward(q, k, v, d_out, mask)`` -> ``(d_q, d_k, d_v)``
    the same, with a boolean mask (n, m), True = may attend, as in
    :func:`helpers.attention.attention_backward`; a query row with no allowed key has an
    all-zero output and passes no gradient back.
``merge(m_a, l_a, o_a, m_b, l_b, o_b)`` -> ``(m, l, o)``
    the running state of :func:`helpers.attention.blockwise_attention` for two blocks of keys:
    m (n, 1) the row maximum of the block's scores, l (n, 1) the sum of exp(score - m), o (n, d_v)
    the unnormalised output sum_j exp(score_j - m) v_j. Block a is the older one. The merged
    state is that of both blocks together; the attention output is o / l.

Gradients are compared with central finite differences of L = sum(out * d_out) on random
shapes, with ``atol = rtol = 1e-5``.
"""

from __future__ import annotations

import math

import numpy as np

from helpers.checks._core import (
    _call_student,
    _check_callable,
    _correct,
    _float_result,
    _incorrect,
    _never_raise,
    _raised,
    _used_library,
    record,
)

GRAD_TOL = 1e-5
"""Absolute and relative tolerance for gradients compared with finite differences."""

_HIDDEN_SEED = 9_110_917


def _forward(q, k, v, mask=None):
    """out = softmax(q k^T / sqrt(d_k) [masked]) v, fully masked rows 0 (no library call)."""
    s = q @ k.T / math.sqrt(q.shape[-1])
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


def _backward_variants(q, k, v, d_out, mask=None):
    """The right gradients (analytic) and those of each recognised mistake, as {name: (dq, dk, dv)}."""
    out, p = _forward(q, k, v, mask)
    c = 1 / math.sqrt(q.shape[-1])
    d_p = d_out @ v.T
    row = np.sum(d_p * p, axis=-1, keepdims=True)
    d_s = p * (d_p - row)
    no_jac = p * d_p  # the diagonal of the Jacobian only: the -rowsum term is missing
    right = (c * d_s @ k, c * d_s.T @ q, p.T @ d_out)
    variants = {
        "right": right,
        "missing_jacobian_term": (c * no_jac @ k, c * no_jac.T @ q, right[2]),
        "missing_scale": (d_s @ k, d_s.T @ q, right[2]),
        "scale_squared": (c * c * d_s @ k, c * c * d_s.T @ q, right[2]),
        "d_v_not_transposed": (right[0], right[1], p @ d_out),
        "d_k_not_transposed": (right[0], c * d_s @ q, right[2]),
        "d_q_d_k_swapped": (c * d_s.T @ q, c * d_s @ k, right[2]),
    }
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
        "Your dQ and dK are swapped: dQ = dS K / sqrt(d_k) (rows of dS, one per query) and "
        "dK = dS^T Q / sqrt(d_k)."
    ),
}


def _backward_cases(masked, seed=None):
    """Random (q, k, v, d_out, mask) probes; the square ones show the transposes."""
    rng = np.random.default_rng((_HIDDEN_SEED if seed is None else seed) + masked)
    cases = []
    for n, m, d_k, d_v, spread in ((3, 3, 4, 2, 1.0), (4, 4, 3, 5, 1.5), (2, 5, 3, 4, 1.0), (5, 3, 2, 3, 2.0)):
        q = rng.normal(size=(n, d_k)) * spread
        k = rng.normal(size=(m, d_k))
        v = rng.normal(size=(m, d_v))
        d_out = rng.normal(size=(n, d_v))
        mask = None
        if masked:
            mask = rng.random((n, m)) < 0.6
            mask[:, 0] = True
            mask[n // 2] = False  # a query row with no allowed key
        cases.append((q, k, v, d_out, mask))
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
    return all(np.allclose(x, y, rtol=GRAD_TOL, atol=GRAD_TOL) for x, y in zip(a, b))


def _check_backward(fn, what, masked, seed=None):
    result = _check_callable(fn, what)
    if result is not None:
        return result
    names = ("dQ", "dK", "dV")
    for q, k, v, d_out, mask in _backward_cases(masked, seed):
        args = (q, k, v, d_out) + ((mask,) if masked else ())
        call = _call_student(fn, *args)
        if call.used:
            return _used_library(call, what)
        if call.error is not None:
            return _raised(call, what)
        shapes = (q.shape, k.shape, v.shape)
        got = _as_triple(call.value, shapes)
        sizes = f"q {q.shape}, k {k.shape}, v {v.shape}, d_out {d_out.shape}"
        if got is None:
            return _incorrect(
                "wrong_shape",
                f"For {sizes} your {what} should return a tuple (d_q, d_k, d_v) of shapes "
                f"{shapes[0]}, {shapes[1]} and {shapes[2]}; it returned something else.",
            )
        if masked and any(not np.all(np.isfinite(g)) for g in got):
            empty = ~mask.any(axis=-1)
            return _incorrect(
                "nan_for_masked_row",
                f"Your gradients contain NaN or infinity. Query row {int(np.argmax(empty))} has no "
                "allowed key: its softmax is 0 / 0 unless you guard it. A fully masked row has an "
                "all-zero output and passes no gradient back: its weights are 0, and so is its dS.",
            )
        reference = _finite_differences(q, k, v, d_out, mask)
        if _close3(got, reference):
            continue
        variants = _backward_variants(q, k, v, d_out, mask)
        record("gradients", what, variants["right"], [(n, g) for n, g in variants.items() if n != "right"],
               GRAD_TOL, GRAD_TOL)
        for name, grads in variants.items():
            if name != "right" and not _close3(grads, reference) and _close3(got, grads):
                return _incorrect(name, _BACKWARD_MESSAGES[name])
        if masked:
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
        wrong = [n for n, g, r in zip(names, got, reference)
                 if not np.allclose(g, r, rtol=GRAD_TOL, atol=GRAD_TOL)]
        return _incorrect(
            "wrong_values",
            f"For {sizes}, your {', '.join(wrong)} {'does' if len(wrong) == 1 else 'do'} not match "
            "finite differences of L = sum(out * d_out). Go through the chain once more: dV = P^T dO, "
            "dP = dO V^T, dS = P * (dP - rowsum(P * dP)), then dQ and dK from dS with the scale.",
        )
    return None


@_never_raise
def check_attention_backward(fn, seed=None):
    """Check a student's ``attention_backward(q, k, v, d_out) -> (d_q, d_k, d_v)``.

    Run on four random cases (two square, n = m, where a missing transpose
    keeps its shape; two with n != m), compared with central finite
    differences of ``L = sum(out * d_out)``. While ``fn`` runs, the kernels
    of :mod:`helpers.attention` are replaced by recording stand-ins.

    Parameters
    ----------
    fn : callable
        ``fn(q, k, v, d_out)`` with q (n, d_k), k (m, d_k), v (m, d_v),
        d_out (n, d_v), returning the tuple (d_q, d_k, d_v).
    seed : int, optional
        The seed of the hidden random probes (graders use other seeds for hidden tests).

    Returns
    -------
    CheckResult
        Mistakes recognised: ``not_callable``, ``used_library``, ``raises``,
        ``wrong_shape``, ``missing_jacobian_term`` (dS = P * dP),
        ``missing_scale``, ``scale_squared``, ``d_v_not_transposed``
        (dV = P dO), ``d_k_not_transposed`` (dK = dS Q), ``d_q_d_k_swapped``,
        ``wrong_values`` (naming the wrong gradients).

    Examples
    --------
    >>> def backward(q, k, v, d_out):
    ...     s = q @ k.T / np.sqrt(q.shape[-1])
    ...     p = np.exp(s - s.max(axis=-1, keepdims=True))
    ...     p /= p.sum(axis=-1, keepdims=True)
    ...     d_p = d_out @ v.T
    ...     d_s = p * (d_p - (p * d_p).sum(axis=-1, keepdims=True)) / np.sqrt(q.shape[-1])
    ...     return d_s @ k, d_s.T @ q, p.T @ d_out
    >>> print(check_attention_backward(backward))
    ✅ correct: Right: dQ, dK and dV match finite differences on four random shapes.
    >>> from helpers import attention
    >>> check_attention_backward(lambda q, k, v, d: attention.attention_backward(q, k, v, d)).mistake
    'used_library'
    """
    result = _check_backward(fn, "attention_backward", masked=False, seed=seed)
    return result if result is not None else _correct(
        "Right: dQ, dK and dV match finite differences on four random shapes."
    )


@_never_raise
def check_masked_backward(fn, seed=None):
    """Check a student's ``masked_backward(q, k, v, d_out, mask) -> (d_q, d_k, d_v)``.

    ``mask`` is boolean (n, m), True = may attend. Every probe has one query
    row with no allowed key: its output is all zero, so it passes no gradient
    back (zeros, not NaN). Compared with finite differences on four random
    cases.

    Parameters
    ----------
    fn : callable
    seed : int, optional
        The seed of the hidden random probes (graders use other seeds for hidden tests).

    Returns
    -------
    CheckResult
        Mistakes recognised: ``not_callable``, ``used_library``, ``raises``,
        ``wrong_shape``, ``nan_for_masked_row``, the mistakes of
        :func:`check_attention_backward`, ``mask_ignored``,
        ``mask_inverted``, ``wrong_values``.

    Examples
    --------
    >>> def masked_backward(q, k, v, d_out, mask):
    ...     s = np.where(mask, q @ k.T / np.sqrt(q.shape[-1]), -np.inf)
    ...     top = np.where(mask.any(axis=-1, keepdims=True), s.max(axis=-1, keepdims=True), 0.0)
    ...     e = np.exp(s - top)
    ...     total = e.sum(axis=-1, keepdims=True)
    ...     p = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    ...     d_p = d_out @ v.T
    ...     d_s = p * (d_p - (p * d_p).sum(axis=-1, keepdims=True)) / np.sqrt(q.shape[-1])
    ...     return d_s @ k, d_s.T @ q, p.T @ d_out
    >>> print(check_masked_backward(masked_backward))
    ✅ correct: Right: your gradients match finite differences, and a fully masked row passes back zeros.
    """
    result = _check_backward(fn, "masked_backward", masked=True, seed=seed)
    return result if result is not None else _correct(
        "Right: your gradients match finite differences, and a fully masked row passes back zeros."
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


def _merge_variants(a, b):
    """The right merge and each recognised mistake, as {name: (m, l, o)}."""
    (m_a, l_a, o_a), (m_b, l_b, o_b) = a, b
    m = np.maximum(m_a, m_b)
    safe = np.where(np.isfinite(m), m, 0.0)
    ca, cb = np.exp(m_a - safe), np.exp(m_b - safe)
    return {
        "right": (m, l_a * ca + l_b * cb, o_a * ca + o_b * cb),
        "older_not_rescaled": (m, l_a + l_b * cb, o_a + o_b * cb),
        "max_from_newer_block": (m_b, l_a * np.exp(m_a - m_b) + l_b, o_a * np.exp(m_a - m_b) + o_b),
        "max_from_older_block": (m_a, l_a + l_b * np.exp(m_b - m_a), o_a + o_b * np.exp(m_b - m_a)),
        "sum_not_rescaled": (m, l_a + l_b, o_a * ca + o_b * cb),
        "output_not_rescaled": (m, l_a * ca + l_b * cb, o_a + o_b),
    }


_MERGE_MESSAGES = {
    "older_not_rescaled": (
        "Your merge adds the older block's sum and output as they are. They were computed against "
        "the older maximum m_a; when the maximum grows to m, multiply both by exp(m_a - m) first."
    ),
    "max_from_newer_block": (
        "Your merged maximum is the newer block's m_b. The running maximum must be the larger of "
        "the two, max(m_a, m_b), or the exponentials can overflow."
    ),
    "max_from_older_block": (
        "Your merged maximum is the older block's m_a. The running maximum must be the larger of "
        "the two, max(m_a, m_b), or the exponentials can overflow."
    ),
    "sum_not_rescaled": (
        "Your output is rescaled but your sum is not: l_a and l_b were computed against different "
        "maxima, so each needs its factor exp(m_a - m) or exp(m_b - m), like the outputs."
    ),
    "output_not_rescaled": (
        "Your sum is rescaled but your output is not: o_a and o_b were computed against different "
        "maxima, so each needs its factor exp(m_a - m) or exp(m_b - m), like the sums."
    ),
}


def _merge_cases(seed=None):
    """Pairs of block states: rows where either block holds the maximum, large offsets, an empty block."""
    rng = np.random.default_rng((_HIDDEN_SEED if seed is None else seed) + 7)
    cases = []
    for n, b_a, b_b, d_v, offset in ((4, 3, 5, 2, 0.0), (6, 8, 2, 3, 0.0), (3, 4, 4, 5, 500.0)):
        s = rng.normal(scale=3.0, size=(n, b_a + b_b)) + offset
        s[::2, b_a:] += 4.0  # even rows: the newer block holds the maximum
        s[1::2, :b_a] += 4.0  # odd rows: the older block does
        v = rng.normal(size=(b_a + b_b, d_v))
        cases.append((_block_state(s[:, :b_a], v[:b_a]), _block_state(s[:, b_a:], v[b_a:]), s, v))
    # An older block that was fully masked for row 0: m = -inf, l = 0, o = 0.
    s = rng.normal(size=(3, 6))
    s[0, :3] = -np.inf
    v = rng.normal(size=(6, 2))
    cases.append((_block_state(s[:, :3], v[:3]), _block_state(s[:, 3:], v[3:]), s, v))
    return cases


def _as_state(value, n, d_v):
    """The student's (m, l, o) as float arrays of shapes (n, 1), (n, 1), (n, d_v), or None."""
    if not isinstance(value, (tuple, list)) or len(value) != 3:
        return None
    arrays = [_float_result(x) for x in value]
    if any(a is None for a in arrays):
        return None
    m, ell, o = arrays
    if m.size != n or ell.size != n or o.shape != (n, d_v):
        return None
    return m.reshape(n, 1), ell.reshape(n, 1), o


def _same_state(x, y):
    return all(np.allclose(a, b, rtol=1e-9, atol=1e-12, equal_nan=False) for a, b in zip(x, y))


@_never_raise
def check_online_softmax_merge(fn, seed=None):
    """Check a student's ``merge(m_a, l_a, o_a, m_b, l_b, o_b) -> (m, l, o)`` of the online softmax.

    Four pairs of blocks: rows where the older block holds the maximum and rows
    where the newer one does, scores near 500 (where exp overflows without the
    running maximum) and an older block fully masked for one row (m = -inf,
    l = 0, o = 0). The merged state must equal the state of both blocks
    computed at once, and o / l the attention output.

    Parameters
    ----------
    fn : callable
        ``fn(m_a, l_a, o_a, m_b, l_b, o_b)`` with m, l of shape (n, 1) and o of
        shape (n, d_v); block a is the older one.
    seed : int, optional
        The seed of the hidden random probes (graders use other seeds for hidden tests).

    Returns
    -------
    CheckResult
        Mistakes recognised: ``not_callable``, ``used_library``, ``raises``,
        ``wrong_shape``, ``older_not_rescaled``, ``max_from_newer_block``,
        ``max_from_older_block``, ``sum_not_rescaled``,
        ``output_not_rescaled``, ``not_finite`` (NaN or inf, as when
        exp(-inf - (-inf)) is computed for an empty block), ``wrong_values``.

    Examples
    --------
    >>> def merge(m_a, l_a, o_a, m_b, l_b, o_b):
    ...     m = np.maximum(m_a, m_b)
    ...     a, b = np.exp(m_a - m), np.exp(m_b - m)
    ...     return m, l_a * a + l_b * b, o_a * a + o_b * b
    >>> print(check_online_softmax_merge(merge))
    ✅ correct: Right: your merge keeps the running maximum and rescales both blocks to it.
    >>> check_online_softmax_merge(lambda m_a, l_a, o_a, m_b, l_b, o_b:
    ...     (np.maximum(m_a, m_b), l_a + l_b * np.exp(m_b - np.maximum(m_a, m_b)),
    ...      o_a + o_b * np.exp(m_b - np.maximum(m_a, m_b)))).mistake
    'older_not_rescaled'
    """
    result = _check_callable(fn, "merge")
    if result is not None:
        return result
    for a, b, s, v in _merge_cases(seed):
        n, d_v = a[2].shape
        call = _call_student(fn, *a, *b)
        if call.used:
            return _used_library(call, "merge")
        if call.error is not None:
            return _raised(call, "merge")
        got = _as_state(call.value, n, d_v)
        if got is None:
            return _incorrect(
                "wrong_shape",
                f"For blocks with n = {n} query rows and d_v = {d_v}, your merge should return a "
                f"tuple (m, l, o) of shapes ({n}, 1), ({n}, 1) and ({n}, {d_v}).",
            )
        right = _block_state(s, v)
        variants = _merge_variants(a, b)
        if _same_state(got, right):
            continue
        record("state", "merge", right, [(k, x) for k, x in variants.items() if k != "right"], 1e-12, 1e-9)
        if not all(np.all(np.isfinite(x)) for x in got):
            return _incorrect(
                "not_finite",
                "Your merge returns NaN or infinity. If one block saw no allowed key for a row, its "
                "maximum is -inf; the merged maximum is then the other block's, and exp(-inf - m) = 0 "
                "drops the empty block without a NaN.",
            )
        with np.errstate(all="ignore"):
            for name, state in variants.items():
                if name != "right" and not _same_state(state, right) and _same_state(got, state):
                    return _incorrect(name, _MERGE_MESSAGES[name])
        return _incorrect(
            "wrong_values",
            f"For blocks with n = {n} rows your merged (m, l, o) is not the state of both blocks "
            "together: take m = max(m_a, m_b), then multiply each block's l and o by "
            "exp(its max - m) before adding.",
        )
    return _correct("Right: your merge keeps the running maximum and rescales both blocks to it.")
