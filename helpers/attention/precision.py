"""Half precision: attention in float16 and in emulated bfloat16.

``to_bfloat16`` rounds to the nearest bfloat16 value (NumPy has no such
type); ``low_precision_attention`` computes attention in a 16-bit format,
with or without float32 accumulation, to show what overflows and what fixes
it (notebook 15).
"""

from __future__ import annotations

import math

import numpy as np

from ._validate import _check_qkv, _check_scale, _full_batch, _real_array, _real_scalar
from .core import _allowed

__all__ = ["to_bfloat16", "low_precision_attention"]


_FORMATS = ("float16", "bfloat16")


def to_bfloat16(x):
    """Round to the nearest bfloat16 value (ties to even), returned as float32.

    bfloat16 keeps float32's 8 exponent bits but only 7 stored mantissa bits
    (8 significant bits), so it has float32's range with about 2-3 decimal
    digits. NumPy has no bfloat16 type: the float32 bit pattern is rounded to
    its top 16 bits (add ``0x7FFF`` plus the lowest kept bit, then clear the
    low 16 bits), and the result is a float32 array whose every value is
    exactly representable in bfloat16. Infinities and NaN are kept; values
    beyond bfloat16's largest finite value (about 3.39e38) round to inf.

    Parameters
    ----------
    x : array_like of real numbers, any shape

    Returns
    -------
    ndarray of float32, same shape

    Examples
    --------
    >>> to_bfloat16([1 + 2**-8, 1 + 3 * 2**-8, 1/3, np.inf]).tolist()
    [1.0, 1.015625, 0.333984375, inf]
    """
    arr = _real_array(x, "x")
    with np.errstate(over="ignore"):
        f = np.array(arr, dtype=np.float32)  # float64 -> float32 first (rounds once there)
    bits = f.view(np.uint32)
    lowest_kept = (bits >> np.uint32(16)) & np.uint32(1)
    rounded = (bits + np.uint32(0x7FFF) + lowest_kept) & np.uint32(0xFFFF0000)
    out = rounded.view(np.float32)
    return np.where(np.isnan(f), f, out)


def _to_format(x, fmt):
    """Round float32 values to ``fmt`` ('float16', 'bfloat16' or 'float32'); float32 out."""
    if fmt == "float16":
        with np.errstate(over="ignore"):
            return np.asarray(x, dtype=np.float32).astype(np.float16).astype(np.float32)
    if fmt == "bfloat16":
        return to_bfloat16(x)
    return np.asarray(x, dtype=np.float32)


def _matmul_rounded(a, b, fmt):
    """``a @ b`` with every product and every partial sum rounded to ``fmt``."""
    acc = np.zeros(np.broadcast_shapes(a.shape[:-1] + (1,), b.shape[:-2] + (1, b.shape[-1])), np.float32)
    acc = np.broadcast_to(acc, np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1])).copy()
    for i in range(a.shape[-1]):
        term = _to_format(a[..., :, i:i + 1] * b[..., i:i + 1, :], fmt)  # (..., n, 1) * (..., 1, m)
        acc = _to_format(acc + term, fmt)
    return acc


def low_precision_attention(
    q, k, v, mask=None, *, dtype="float16", accumulate="float32", scale=None, causal=False,
    mask_value=-1e9, prescale=False, scores=None,
):
    """Scaled dot-product attention computed in float16 or in emulated bfloat16.

    Shows what goes wrong in 16-bit arithmetic and what fixes it. The inputs
    are first rounded to ``dtype``; then:

    1. scores ``q k^T`` (optionally ``(q * scale) k^T``, see ``prescale``),
    2. blocked scores set to ``mask_value`` rounded to ``dtype``,
    3. a stable softmax (row maximum subtracted) over the keys,
    4. ``weights @ v``.

    Two choices are separate:

    - ``accumulate``, where the *sums* are formed: ``"float32"`` adds the
      products of ``q k^T``, the softmax's exponentials and ``weights @ v``
      in float32; ``None`` rounds every product and every partial sum to
      ``dtype`` as it is formed, the way a naive 16-bit loop works.
    - ``scores``, where the finished *scores* are kept: ``"float32"`` keeps
      them in float32 through the scaling, the masking and the softmax, the
      way a fused kernel such as FlashAttention keeps them in on-chip memory;
      ``dtype`` (e.g. ``"float16"``) stores them in the 16-bit format after
      each of those steps, as an unfused ``q16 @ k16.T`` does. The default,
      ``None``, follows ``accumulate``: float32 scores with float32 sums, and
      ``dtype`` scores with ``accumulate=None``.

    Summing in float32 alone does not save an unscaled score above float16's
    largest value 65504: stored as float16 it is inf (``scores="float16"``).
    Keeping the scores in float32 does (``scores="float32"``), and so does
    scaling q first (``prescale=True``). The weights (before ``weights @ v``)
    and the output are always rounded to ``dtype``.

    Rounding to bfloat16 is done by :func:`to_bfloat16`; overflow gives inf
    and inf - inf gives NaN, without a warning.

    Parameters
    ----------
    q, k, v, causal
        As in :func:`scaled_dot_product_attention`.
    mask : array_like of bool, broadcastable to (..., n, m), optional
        True = may attend.
    dtype : {"float16", "bfloat16"}
        The 16-bit format of the inputs, the scores, the weights and the output.
    accumulate : {"float32", None}
        ``"float32"``: sums formed in float32; ``None``: every product and
        partial sum rounded to ``dtype``.
    scores : {None, "float32"} or the value of ``dtype``, default None
        The format the scores (and the softmax's exponentials) are kept in:
        ``"float32"`` (a fused kernel) or ``dtype`` (stored in 16 bits).
        ``None`` means ``"float32"`` when ``accumulate="float32"`` and
        ``dtype`` when ``accumulate=None``, so calls without it behave as
        before it existed.
    scale : float, optional
        Defaults to ``1 / sqrt(d_k)``.
    mask_value : float or None, default -1e9
        A real number <= 0 (not NaN; a positive or NaN value would make the
        blocked keys win or poison the row, and raises ValueError).
        What a blocked score becomes, rounded to ``dtype``: -1e9 turns into
        ``-inf`` in float16 (largest finite value 65504), so a fully masked
        row gives ``-inf - (-inf) = NaN``. A finite value such as -30000 keeps
        such a row finite (uniform over its blocked keys). ``None`` means a
        boolean mask: blocked keys get weight exactly 0 and a fully masked
        row gives zeros, as in :func:`scaled_dot_product_attention`.
    prescale : bool, default False
        Multiply q by ``scale`` before the product (then the scores never
        exceed their scaled size) instead of scaling the finished product,
        which may already have overflowed.

    Returns
    -------
    out : ndarray of float32, shape (..., n, d_v)
        With no keys (m = 0) the output is zero, as in
        :func:`scaled_dot_product_attention`.
    weights : ndarray of float32, shape (..., n, m)
        Values representable in ``dtype``; rows sum to 1 up to its rounding.

    Examples
    --------
    A score of 300 * 300 = 90000 does not fit in float16:

    >>> q = k = np.array([[300.0, 0.0]]); v = np.array([[1.0]])
    >>> low_precision_attention(q, k, v, accumulate=None)[0]
    array([[nan]], dtype=float32)
    >>> low_precision_attention(q, k, v, accumulate=None, prescale=True)[0]
    array([[1.]], dtype=float32)

    Float32 sums do not help if the score is then stored as float16:

    >>> low_precision_attention(q, k, v, scores="float16")[0]
    array([[nan]], dtype=float32)
    >>> low_precision_attention(q, k, v, scores="float32")[0]
    array([[1.]], dtype=float32)
    """
    if dtype not in _FORMATS:
        raise ValueError(f"dtype must be one of {_FORMATS}: got {dtype!r}")
    if accumulate not in ("float32", None):
        raise ValueError(f"accumulate must be 'float32' or None: got {accumulate!r}")
    if scores not in (None, "float32", dtype):
        raise ValueError(f"scores must be None, 'float32' or dtype ({dtype!r}): got {scores!r}")
    if mask_value is not None:
        rule = "None or a real number <= 0 (a blocked score must be very negative)"
        mask_value = _real_scalar(mask_value, "mask_value", rule)
        if math.isnan(mask_value) or mask_value > 0:
            raise ValueError(f"mask_value must be {rule}: got {mask_value!r}")
    q, k, v, batch, _ = _check_qkv(q, k, v)
    n, d_k, m = q.shape[-2], q.shape[-1], k.shape[-2]
    scale = _check_scale(scale, d_k)
    allowed = _allowed(mask, causal, n, m)
    batch = _full_batch(batch, allowed, f"q.shape={q.shape}, k.shape={k.shape}, v.shape={v.shape}")
    if m == 0:  # no keys: nothing to attend to, a zero output (no max of an empty row)
        return np.zeros(batch + (n, v.shape[-1]), np.float32), np.zeros(batch + (n, 0), np.float32)
    fmt = dtype
    acc_fmt = "float32" if accumulate == "float32" else fmt
    s_fmt = scores if scores is not None else acc_fmt  # where the scores are kept
    with np.errstate(all="ignore"):
        q, k, v = (_to_format(a, fmt) for a in (q, k, v))
        s_scale = np.float32(_to_format(scale, fmt))
        if prescale:
            q = _to_format(q * s_scale, fmt)
        k_t = np.swapaxes(k, -1, -2)  # (..., d_k, m)
        if accumulate == "float32":
            s = np.matmul(q, k_t)  # (..., n, d_k) x (..., d_k, m) -> (..., n, m), float32 sums
        else:
            s = _matmul_rounded(q, k_t, fmt)
        s = _to_format(s, s_fmt)
        if not prescale:
            s = _to_format(s * s_scale, s_fmt)
        s = np.array(np.broadcast_to(s, batch + (n, m)), dtype=np.float32)
        if allowed is not None:
            if mask_value is None:
                np.copyto(s, -np.inf, where=~allowed)
            else:
                fill = _to_format(mask_value, fmt)
                np.copyto(s, fill, where=~allowed)
        row_max = s.max(axis=-1, keepdims=True)
        if mask_value is None and allowed is not None:
            row_max = np.where(np.isneginf(row_max), np.float32(0), row_max)  # fully masked: zeros
        e = _to_format(np.exp(_to_format(s - row_max, s_fmt)), s_fmt)
        if accumulate == "float32":
            total = e.sum(axis=-1, keepdims=True, dtype=np.float32)
        else:
            total = np.zeros(e.shape[:-1] + (1,), np.float32)
            for j in range(m):  # a running sum, rounded at every step
                total = _to_format(total + e[..., j:j + 1], fmt)
        weights = np.zeros_like(e)
        np.divide(e, total, out=weights, where=(total != 0) | np.isnan(total))
        weights = _to_format(weights, fmt)
        if accumulate == "float32":
            out = np.matmul(weights, v)  # float32 sums
        else:
            out = _matmul_rounded(weights, v, fmt)
        out = _to_format(out, fmt)
    return out, weights
