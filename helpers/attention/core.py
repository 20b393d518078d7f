"""The core kernels: softmax, masks, scores, scaled dot-product attention and around them.

``softmax`` and ``softmax_loop``; the masks ``causal_mask`` and
``padding_mask``; ``attention_scores`` and ``scaled_dot_product_attention``
with their ``_loop`` twins; the read-outs ``entropy`` and
``attention_flops``; the backward pass (``softmax_jacobian``,
``attention_backward``); multi-head attention (``split_heads``,
``merge_heads``, ``multi_head_attention``, ``MultiHeadAttention``); and the
online softmax over blocks of keys (``blockwise_attention``). The
conventions are those of :mod:`helpers.attention`, which re-exports every
public name.

Both softmax code paths live here, in ``softmax`` and in the in-place
``_softmax_rows_inplace`` of ``scaled_dot_product_attention``:
``tools/softmax_mutation.py`` (``make mutation``) perturbs them by their
``np.exp`` lines.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ._validate import (
    _check_mask,
    _check_qkv,
    _check_scale,
    _check_temperature,
    _float_dtype,
    _full_batch,
    _positive_int,
    _real_array,
)

__all__ = [
    "softmax",
    "softmax_loop",
    "attention_scores",
    "attention_scores_loop",
    "scaled_dot_product_attention",
    "scaled_dot_product_attention_loop",
    "causal_mask",
    "padding_mask",
    "entropy",
    "attention_flops",
    "attention_backward",
    "softmax_jacobian",
    "split_heads",
    "merge_heads",
    "multi_head_attention",
    "MultiHeadAttention",
    "blockwise_attention",
]


# ---------------------------------------------------------------------------
# Softmax
# ---------------------------------------------------------------------------


def _check_softmax_axis(axis, shape):
    """Raise ValueError unless ``axis`` (int, tuple of int or None) names axes of ``shape``."""
    if axis is None:
        return
    axes = (axis,) if np.ndim(axis) == 0 else tuple(axis)
    ndim = len(shape)
    for a in axes:
        if isinstance(a, (bool, np.bool_)) or not isinstance(a, (int, np.integer)):
            raise ValueError(f"axis must be an int, a tuple of ints or None: got {axis!r}")
        if not -ndim <= a < ndim:
            if ndim == 0:
                raise ValueError(
                    f"axis {a} does not exist: x is a single number (x.shape=()), which has "
                    "no axis to normalise over; pass axis=None to treat it as a "
                    "distribution of one value (softmax 1.0)"
                )
            raise ValueError(
                f"axis {a} is out of range for x with {ndim} dimension"
                f"{'s' if ndim != 1 else ''} (x.shape={tuple(shape)}): "
                f"use an axis from {-ndim} to {ndim - 1}"
            )
    if len({a % ndim for a in axes}) != len(axes):
        raise ValueError(f"axis must not repeat an axis: got {axis!r}")


def softmax(x, axis=-1, temperature=1.0):
    """Numerically stable softmax of ``x / temperature`` along ``axis``.

    The largest entry along ``axis`` is subtracted before exponentiating (the
    log-sum-exp trick), so logits of 1e5 or temperatures near 0 neither
    overflow nor warn.

    Parameters
    ----------
    x : array_like of real numbers, any shape
        The logits (scores).
    axis : int, tuple of int or None, default -1
        Axis or axes to normalise over; None normalises over the whole array.
    temperature : float, default 1.0
        Finite and > 0. The logits are divided by it: large values flatten
        the distribution towards uniform, small values sharpen it towards
        the argmax.

    Returns
    -------
    ndarray, same shape as ``x``
        Non-negative and sums to 1 along ``axis``. Entries of ``-inf`` give
        exact zeros; a slice that is ``-inf`` everywhere gives all zeros
        (nothing to attend to) rather than NaN. float32 in, float32 out;
        anything else is computed in float64.

    Raises
    ------
    ValueError
        If ``x`` is not real-valued, ``temperature`` is not finite and > 0, or
        ``axis`` names an axis ``x`` does not have (a single number has none:
        ``softmax(3.0)`` raises, ``softmax(3.0, axis=None)`` is 1.0).

    Examples
    --------
    >>> w = softmax([1.0, 2.0, 3.0])
    >>> print(np.round(w, 4), round(w.sum(), 12))
    [0.09   0.2447 0.6652] 1.0
    >>> print(softmax([1e5, 0.0, -np.inf]))
    [1. 0. 0.]
    """
    x = _real_array(x, "x")
    t = _check_temperature(temperature)
    _check_softmax_axis(axis, x.shape)
    x = x.astype(_float_dtype(x), copy=False)
    if x.ndim == 0:  # axis None or (): one value is its own distribution
        return softmax(x.reshape(1), axis=-1, temperature=t).reshape(())
    if x.size == 0:
        return np.zeros_like(x)
    with np.errstate(invalid="ignore", over="ignore"):  # -1e308 - 1e308 -> -inf: fine
        e = x - np.max(x, axis=axis, keepdims=True)  # a new array: x is never modified
    if not np.all(np.isfinite(e)):
        # An all--inf slice makes -inf - -inf = nan: give it zeros instead.
        e[np.isneginf(x) & np.isnan(e)] = -np.inf
    with np.errstate(over="ignore", under="ignore"):
        if t != 1.0:
            # (x - max) / t <= 0, so at worst it overflows to -inf (exp gives 0).
            t_cast = e.dtype.type(t)
            if 0 < t_cast < np.inf:
                e /= t_cast
            else:  # float32 cannot hold t (1e-300 -> 0): divide in float64
                e[...] = e.astype(np.float64) / t
        np.exp(e, out=e)
    total = np.sum(e, axis=axis, keepdims=True)
    np.divide(e, total, out=e, where=total > 0)  # rows summing to 0 stay 0
    return e


def softmax_loop(x, axis=-1, temperature=1.0):
    """Softmax with explicit Python loops: the slow, obvious reference.

    Same contract as :func:`softmax`: each 1-D slice along ``axis`` is shifted
    by its maximum, exponentiated with ``math.exp`` and divided by its sum.

    Examples
    --------
    >>> print(np.round(softmax_loop([[0.0, 1.0], [1.0, 1.0]]), 4))
    [[0.2689 0.7311]
     [0.5    0.5   ]]
    """
    x = _real_array(x, "x")
    t = _check_temperature(temperature)
    _check_softmax_axis(axis, np.shape(x))
    dtype = _float_dtype(x)
    arr = np.asarray(x, dtype=np.float64)
    axes = range(arr.ndim) if axis is None else (axis,) if np.ndim(axis) == 0 else axis
    axes = [int(a) + arr.ndim if int(a) < 0 else int(a) for a in axes]
    # Move the softmax axes to the end and flatten them into one: each row of
    # `flat` is one distribution.
    last = list(range(arr.ndim - len(axes), arr.ndim))
    moved = np.moveaxis(arr, axes, last)
    flat = moved.reshape(moved.shape[: arr.ndim - len(axes)] + (math.prod(moved.shape[len(moved.shape) - len(axes):]),))
    out = np.zeros(flat.shape)
    for idx in np.ndindex(flat.shape[:-1]):
        row = [float(value) for value in flat[idx]]
        if not row or max(row) == -math.inf:  # nothing to attend to: zeros
            continue
        top = max(row)
        exps = [math.exp((value - top) / t) for value in row]
        total = sum(exps)
        out[idx] = [e / total for e in exps]
    return np.moveaxis(out.reshape(moved.shape), last, axes).astype(dtype)


# ---------------------------------------------------------------------------
# Masks
# ---------------------------------------------------------------------------


def causal_mask(n, m=None):
    """Boolean causal mask: query ``i`` may attend to keys ``0..i``.

    Aligned at the top-left corner, also when ``n != m`` (as ``is_causal`` in
    PyTorch's ``scaled_dot_product_attention``).

    Parameters
    ----------
    n : int
        Number of queries.
    m : int, optional
        Number of keys; defaults to ``n``.

    Returns
    -------
    ndarray of bool, shape (n, m)
        True where ``j <= i`` (may attend).

    Examples
    --------
    >>> causal_mask(3).astype(int)
    array([[1, 0, 0],
           [1, 1, 0],
           [1, 1, 1]])
    """
    m = n if m is None else m
    for name, value in (("n", n), ("m", m)):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) or value < 0:
            raise ValueError(f"{name} must be a non-negative integer: got {value!r}")
    return np.tri(int(n), int(m), dtype=bool)


def padding_mask(valid_lengths, m):
    """Boolean key-padding mask from the number of real (non-padding) keys.

    Parameters
    ----------
    valid_lengths : int or array_like of int, shape (...)
        How many leading keys of each sequence are real; each in ``0..m``.
    m : int
        Number of keys (the padded length).

    Returns
    -------
    ndarray of bool, shape (..., 1, m)
        True for keys ``j < valid_length`` (may attend). The axis of length 1
        stands for the queries, so the mask broadcasts straight against
        weights of shape ``(..., n, m)``.

    Examples
    --------
    >>> padding_mask([2, 3], 4).astype(int)
    array([[[1, 1, 0, 0]],
    <BLANKLINE>
           [[1, 1, 1, 0]]])
    """
    if isinstance(m, (bool, np.bool_)) or not isinstance(m, numbers.Integral) or m < 0:
        raise ValueError(f"m must be a non-negative integer: got {m!r}")
    lengths = np.asarray(valid_lengths)
    if not np.issubdtype(lengths.dtype, np.integer):
        raise ValueError(
            f"valid_lengths must be integers: got dtype {lengths.dtype}"
        )
    if lengths.size and (lengths.min() < 0 or lengths.max() > m):
        raise ValueError(
            f"valid_lengths must lie in 0..m = 0..{m}: got {lengths.tolist()}"
        )
    return np.arange(m) < lengths[..., np.newaxis, np.newaxis]


def _allowed(mask, causal, n, m):
    """Combine ``mask`` and ``causal`` (by AND) into one boolean array, or None."""
    allowed = None if mask is None else _check_mask(mask, n, m)
    if causal:
        tri = causal_mask(n, m)
        allowed = tri if allowed is None else np.logical_and(allowed, tri)
    return allowed


# ---------------------------------------------------------------------------
# Scores and attention
# ---------------------------------------------------------------------------


def attention_scores(q, k, mask=None, *, scale=None, causal=False):
    """Scaled scores ``q k^T * scale``: the logits the softmax turns into weights.

    Parameters
    ----------
    q : array_like, shape (..., n, d_k)
    k : array_like, shape (..., m, d_k)
    mask : array_like of bool or int, broadcastable to (..., n, m), optional
        True (or nonzero) = may attend. Blocked entries are set to ``-inf``.
    scale : float, optional
        Defaults to ``1 / sqrt(d_k)``. ``scale=1.0`` gives the raw dot products.
    causal : bool, default False
        Also block keys after the query (``j > i``), top-left aligned.

    Returns
    -------
    scores : ndarray, shape (..., n, m)

    Examples
    --------
    >>> q = np.array([[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0]])
    >>> attention_scores(q, q)          # d_k = 4: divided by sqrt(4) = 2
    array([[1., 0.],
           [0., 1.]])
    """
    q, k, _, batch, dtype = _check_qkv(q, k, None)
    n, d_k, m = q.shape[-2], q.shape[-1], k.shape[-2]
    scale = _check_scale(scale, d_k)
    allowed = _allowed(mask, causal, n, m)
    scores = np.matmul(q, np.swapaxes(k, -1, -2))  # (..., n, d_k) x (..., d_k, m) -> (..., n, m)
    if scale != 1.0:
        scores *= dtype.type(scale)
    if allowed is not None:
        full = _full_batch(batch, allowed, f"q.shape={q.shape}, k.shape={k.shape}") + (n, m)
        if scores.shape != full:
            scores = np.array(np.broadcast_to(scores, full))
        np.copyto(scores, -np.inf, where=~allowed)
    return scores


def attention_scores_loop(q, k, mask=None, *, scale=None, causal=False):
    """:func:`attention_scores` with Python loops over batch, queries and keys.

    Examples
    --------
    >>> attention_scores_loop([[1.0, 2.0]], [[3.0, 4.0], [5.0, 6.0]], scale=1.0)
    array([[11., 17.]])
    """
    q, k, _, batch, dtype = _check_qkv(q, k, None)
    n, d_k, m = q.shape[-2], q.shape[-1], k.shape[-2]
    scale = _check_scale(scale, d_k)
    allowed = _allowed(mask, causal, n, m)
    batch = _full_batch(batch, allowed, f"q.shape={q.shape}, k.shape={k.shape}")
    qb = np.broadcast_to(q, batch + (n, d_k))
    kb = np.broadcast_to(k, batch + (m, d_k))
    ab = None if allowed is None else np.broadcast_to(allowed, batch + (n, m))
    scores = np.empty(batch + (n, m))
    for b in np.ndindex(batch):
        for i in range(n):
            for j in range(m):
                if ab is not None and not ab[b + (i, j)]:
                    scores[b + (i, j)] = -math.inf
                    continue
                dot = sum(float(a) * float(c) for a, c in zip(qb[b + (i,)], kb[b + (j,)]))
                scores[b + (i, j)] = dot * scale
    return scores.astype(dtype)


def scaled_dot_product_attention(q, k, v, mask=None, *, scale=None, causal=False):
    """Scaled dot-product attention: ``softmax(q k^T * scale) v``.

    Vectorized over the leading dimensions, the rows and the keys. The scores
    are computed in place in the returned ``weights`` array, so no other
    ``(..., n, m)`` temporary is allocated; for long sequences the work runs
    over tiles of query rows (each tile covering every batch entry and head
    at once) so that the softmax passes find their data in cache.

    Parameters
    ----------
    q : array_like, shape (..., n, d_k)
        Queries.
    k : array_like, shape (..., m, d_k)
        Keys.
    v : array_like, shape (..., m, d_v)
        Values, one per key. The leading dimensions of q, k, v (and of
        ``mask``) broadcast against each other.
    mask : array_like of bool, broadcastable to (..., n, m), optional
        True = query ``i`` may attend to key ``j`` (as a boolean ``attn_mask``
        in PyTorch). Integer 0/1 masks are read as booleans (0 = blocked);
        float masks are rejected.
    scale : float, optional
        Multiplies the scores. Defaults to ``1 / sqrt(d_k)``; ``scale=1.0``
        gives unscaled dot-product attention. Zero and negative values are
        allowed; non-finite ones are not.
    causal : bool, default False
        Block keys after the query: query ``i`` sees keys ``0..i``, aligned at
        the top-left also when ``n != m``. Combined with ``mask`` by AND.

    Returns
    -------
    out : ndarray, shape (..., n, d_v)
        ``weights @ v``.
    weights : ndarray, shape (..., n, m)
        Each row sums to 1, except a row with no allowed key, which is all
        zeros (and so is its row of ``out``).

    Raises
    ------
    ValueError
        On mismatched d_k (q vs k) or m (k vs v), arrays of fewer than two
        dimensions, non-numeric dtypes, a mask that does not broadcast or is
        float, or a non-finite scale.

    Examples
    --------
    The "cat sat" example of "AIAYN Part 2" (d_k = 4):

    >>> q = k = np.array([[1, 0, 1, 0], [0, 1, 0, 1]])
    >>> v = np.array([[2, 3], [5, 7]])
    >>> out, weights = scaled_dot_product_attention(q, k, v)
    >>> print(np.round(weights, 4))
    [[0.7311 0.2689]
     [0.2689 0.7311]]
    >>> print(np.round(out, 4))
    [[2.8068 4.0758]
     [4.1932 5.9242]]
    """
    q, k, v, batch, dtype = _check_qkv(q, k, v)
    n, d_k, m, d_v = q.shape[-2], q.shape[-1], k.shape[-2], v.shape[-1]
    scale = _check_scale(scale, d_k)
    allowed = _allowed(mask, causal, n, m)
    batch = _full_batch(batch, allowed, f"q.shape={q.shape}, k.shape={k.shape}, v.shape={v.shape}")
    weights = np.empty(batch + (n, m), dtype)
    out = np.empty(batch + (n, d_v), dtype)
    if m == 0 or n == 0:
        out.fill(0)
        return out, weights

    # Fold the scale into q: an (n, d_k) product instead of an (n, m) one.
    q = q * dtype.type(scale) if scale != 1.0 else q
    # A contiguous k^T: BLAS multiplies it about 2.5x faster than a transposed view.
    k_t = np.ascontiguousarray(np.swapaxes(k, -1, -2))  # (..., d_k, m)
    rows = _tile_rows(weights)
    for start in range(0, n, rows):
        # One tile of query rows for every batch entry and head at once; the
        # tile's scores stay in cache through all the softmax passes below.
        tile = slice(start, start + rows)
        w = weights[..., tile, :]  # a view: the softmax happens in place
        np.matmul(q[..., tile, :], k_t, out=w)  # (..., t, d_k) x (..., d_k, m) -> (..., t, m)
        if allowed is not None:
            rows_of_mask = allowed if allowed.ndim < 2 or allowed.shape[-2] == 1 else allowed[..., tile, :]
            np.copyto(w, -np.inf, where=~rows_of_mask)
        _softmax_rows_inplace(w, masked=allowed is not None)
        np.matmul(w, v, out=out[..., tile, :])  # (..., t, m) x (..., m, d_v) -> (..., t, d_v)
    return out, weights


# Query rows per tile: the scores of one tile (all batch entries and heads)
# take about this many bytes, so they stay in the last-level cache through the
# softmax passes. Larger tiles mean fewer BLAS calls, which matters with two
# BLAS threads on a busy machine (benchmarks/README.md).
_TILE_BYTES = 8 << 20


def _tile_rows(weights):
    """Query rows per tile so that one tile of ``weights`` is about _TILE_BYTES."""
    n, m = weights.shape[-2:]
    per_row = max(1, weights.size // max(n, 1)) * weights.itemsize
    return max(128, min(n, _TILE_BYTES // per_row))


def _softmax_rows_inplace(w, masked):
    """Softmax over the last axis of ``w``, in place; all -inf rows become 0."""
    row_max = w.max(axis=-1, keepdims=True)  # (..., t, 1)
    if masked:
        row_max[np.isneginf(row_max)] = 0.0  # fully masked row: exp(-inf - 0) = 0
    with np.errstate(over="ignore", under="ignore"):  # huge gaps give -inf, and exp 0
        w -= row_max
        np.exp(w, out=w)
    total = w.sum(axis=-1, keepdims=True)  # (..., t, 1); 0 only for a fully masked row
    np.divide(1.0, total, out=total, where=total > 0)
    w *= total


def scaled_dot_product_attention_loop(q, k, v, mask=None, *, scale=None, causal=False):
    """:func:`scaled_dot_product_attention` with Python loops, step by step.

    For every batch index and every query ``i``: the scores against the
    allowed keys, their softmax, then the weighted sum of the values. Blocked
    keys are simply left out of the sum. Slow on purpose; the fast kernel is
    tested against it.

    Examples
    --------
    >>> out, weights = scaled_dot_product_attention_loop(
    ...     [[1.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]], [[1.0], [3.0]], scale=1.0)
    >>> print(np.round(weights, 4), np.round(out, 4))
    [[0.7311 0.2689]] [[1.5379]]
    """
    q, k, v, batch, dtype = _check_qkv(q, k, v)
    n, d_k, m, d_v = q.shape[-2], q.shape[-1], k.shape[-2], v.shape[-1]
    scale = _check_scale(scale, d_k)
    allowed = _allowed(mask, causal, n, m)
    batch = _full_batch(batch, allowed, f"q.shape={q.shape}, k.shape={k.shape}, v.shape={v.shape}")
    qb = np.broadcast_to(q, batch + (n, d_k))
    kb = np.broadcast_to(k, batch + (m, d_k))
    vb = np.broadcast_to(v, batch + (m, d_v))
    ab = None if allowed is None else np.broadcast_to(allowed, batch + (n, m))
    out = np.zeros(batch + (n, d_v))
    weights = np.zeros(batch + (n, m))
    for b in np.ndindex(batch):
        for i in range(n):
            keys = [j for j in range(m) if ab is None or ab[b + (i, j)]]
            if not keys:
                continue  # nothing to attend to: zeros
            scores = [
                scale * sum(float(a) * float(c) for a, c in zip(qb[b + (i,)], kb[b + (j,)]))
                for j in keys
            ]
            top = max(scores)
            exps = [math.exp(s - top) for s in scores]
            total = sum(exps)
            for j, e in zip(keys, exps):
                weights[b + (i, j)] = e / total
                for c in range(d_v):
                    out[b + (i, c)] += e / total * float(vb[b + (j, c)])
    return out.astype(dtype), weights.astype(dtype)


# ---------------------------------------------------------------------------
# Read-outs
# ---------------------------------------------------------------------------


def entropy(weights, axis=-1):
    """Shannon entropy of attention weights along ``axis``, in nats.

    ``0 * log 0`` counts as 0, so blocked keys and all-zero rows add nothing.
    A uniform row over ``m`` keys has entropy ``log(m)``; a one-hot row has 0.

    Parameters
    ----------
    weights : array_like, shape (..., m)
        Non-negative weights, normally summing to 1 along ``axis``.
    axis : int, default -1

    Returns
    -------
    ndarray, shape (...)
        ``-sum(w * log(w))`` along ``axis``.

    Examples
    --------
    >>> print(np.round(entropy([[0.25, 0.25, 0.25, 0.25], [1.0, 0.0, 0.0, 0.0]]), 4))
    [1.3863 0.    ]
    """
    w = _real_array(weights, "weights")
    w = w.astype(_float_dtype(w), copy=False)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(w > 0, w * np.log(np.where(w > 0, w, 1)), 0)
    return 0.0 - np.sum(terms, axis=axis)  # 0.0 - 0.0 gives 0.0, not -0.0


def attention_flops(n, m, d_k, d_v):
    """Floating-point operations of the two matrix products of one attention head.

    Convention: a multiply-add counts as **2** FLOPs, and only the two matrix
    products are counted: ``q k^T`` costs ``2 n m d_k`` and ``weights @ v``
    costs ``2 n m d_v``. The softmax (a handful of operations per score,
    ``O(n m)``) is left out, as is usual in throughput figures. With
    ``d_k = d_v = d`` this is the ``4 n m d`` used by the benchmarks.

    Parameters
    ----------
    n, m, d_k, d_v : int
        Queries, keys, key/query width, value width (all >= 0).

    Returns
    -------
    int

    Examples
    --------
    Exercise 3 of "Section 5.2" (n = 1000, d = 512):

    >>> attention_flops(1000, 1000, 512, 512)
    2048000000
    """
    for name, value in (("n", n), ("m", m), ("d_k", d_k), ("d_v", d_v)):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) or value < 0:
            raise ValueError(f"{name} must be a non-negative integer: got {value!r}")
    return 2 * int(n) * int(m) * (int(d_k) + int(d_v))


# ---------------------------------------------------------------------------
# Gradients by hand
# ---------------------------------------------------------------------------


def softmax_jacobian(weights):
    """Jacobian of the softmax at its output ``a``: ``J = diag(a) - a a^T``.

    ``J[i, j] = d a_i / d s_j``: symmetric, its rows sum to 0, and it shrinks to
    zero as ``a`` approaches one-hot, which is why a saturated softmax passes
    almost no gradient back to its scores.

    Parameters
    ----------
    weights : array_like, shape (..., m)
        Softmax outputs (each row sums to 1).

    Returns
    -------
    ndarray, shape (..., m, m)

    Examples
    --------
    >>> softmax_jacobian([0.5, 0.5])
    array([[ 0.25, -0.25],
           [-0.25,  0.25]])
    """
    a = _real_array(weights, "weights")
    a = a.astype(_float_dtype(a), copy=False)
    eye = np.eye(a.shape[-1], dtype=a.dtype)
    return a[..., :, None] * eye - a[..., :, None] * a[..., None, :]  # (..., m, m)


def _sum_to_shape(grad, shape):
    """Sum ``grad`` over the axes that broadcasting added or stretched, down to ``shape``."""
    extra = grad.ndim - len(shape)
    if extra:
        grad = grad.sum(axis=tuple(range(extra)))
    stretched = tuple(i for i, size in enumerate(shape) if size == 1 and grad.shape[i] != 1)
    return grad.sum(axis=stretched, keepdims=True) if stretched else grad


def attention_backward(q, k, v, grad_out, mask=None, *, scale=None, causal=False):
    """Backward pass of :func:`scaled_dot_product_attention`: gradients of a loss.

    Given ``grad_out = dL/d out``, returns ``dL/dq``, ``dL/dk``, ``dL/dv`` for
    ``out = softmax(scale * q k^T [masked]) v``. With ``P`` the weights,
    ``S`` the scaled scores and ``dO = grad_out``::

        dV = P^T dO                          (..., m, d_v)
        dP = dO V^T                          (..., n, m)
        dS = P * (dP - rowsum(P * dP))       the softmax's Jacobian, row by row
        dQ = scale * dS K                    (..., n, d_k)
        dK = scale * dS^T Q                  (..., m, d_k)

    Blocked keys get ``P = 0`` and so no gradient; a fully masked row passes
    none back. Where q, k, v were broadcast, the gradient is summed back to
    each one's own shape.

    Parameters
    ----------
    q, k, v, mask, scale, causal
        As in :func:`scaled_dot_product_attention` (mask True = may attend).
    grad_out : array_like, shape (..., n, d_v)
        Gradient of the loss with respect to the output.

    Returns
    -------
    grad_q : ndarray, same shape as q
    grad_k : ndarray, same shape as k
    grad_v : ndarray, same shape as v

    Examples
    --------
    The loss ``out.sum()`` does not change when every weight row moves along
    itself, so with identical values the gradients of q and k vanish:

    >>> q = np.array([[1.0, 0.0]]); k = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> v = np.array([[2.0], [2.0]])
    >>> dq, dk, dv = attention_backward(q, k, v, np.ones((1, 1)))
    >>> print(np.round(dq, 6), np.round(dv.ravel(), 4))
    [[0. 0.]] [0.6698 0.3302]
    """
    q_in, k_in, v_in = (np.shape(a) for a in (q, k, v))
    out, weights = scaled_dot_product_attention(q, k, v, mask, scale=scale, causal=causal)
    q, k, v, _, dtype = _check_qkv(q, k, v)
    d_out = _real_array(grad_out, "grad_out").astype(dtype, copy=False)
    if d_out.ndim < 2 or d_out.shape[-2:] != out.shape[-2:]:
        raise ValueError(
            f"grad_out must have the output's shape (..., n, d_v) = {out.shape}: got grad_out.shape={d_out.shape}"
        )
    try:
        d_out = np.broadcast_to(d_out, np.broadcast_shapes(d_out.shape, out.shape))
    except ValueError:
        raise ValueError(
            f"grad_out must broadcast to the output's shape {out.shape}: got grad_out.shape={d_out.shape}"
        ) from None
    scale = _check_scale(scale, q.shape[-1])
    p = weights  # (..., n, m)
    grad_v = np.swapaxes(p, -1, -2) @ d_out  # (..., m, n) x (..., n, d_v) -> (..., m, d_v)
    d_p = d_out @ np.swapaxes(v, -1, -2)  # (..., n, d_v) x (..., d_v, m) -> (..., n, m)
    row = np.sum(d_out * out, axis=-1, keepdims=True)  # rowsum(P * dP) = rowsum(dO * O), (..., n, 1)
    d_s = p * (d_p - row)  # (..., n, m)
    grad_q = scale * (d_s @ k)  # (..., n, m) x (..., m, d_k) -> (..., n, d_k)
    grad_k = scale * (np.swapaxes(d_s, -1, -2) @ q)  # (..., m, n) x (..., n, d_k) -> (..., m, d_k)
    return tuple(
        _sum_to_shape(g, shape).astype(dtype, copy=False)
        for g, shape in ((grad_q, q_in), (grad_k, k_in), (grad_v, v_in))
    )


# ---------------------------------------------------------------------------
# Multi-head attention
# ---------------------------------------------------------------------------


def split_heads(x, num_heads):
    """Split the last axis into heads: ``(..., n, d_model) -> (..., h, n, d_model / h)``.

    Head ``i`` gets features ``i * d_head`` to ``(i + 1) * d_head - 1``.

    Examples
    --------
    >>> x = np.arange(8.0).reshape(2, 4)      # n = 2 tokens, d_model = 4
    >>> split_heads(x, 2)                      # (h, n, d_head) = (2, 2, 2)
    array([[[0., 1.],
            [4., 5.]],
    <BLANKLINE>
           [[2., 3.],
            [6., 7.]]])
    """
    x = np.asarray(x)
    if x.ndim < 2:
        raise ValueError(f"x must have at least 2 dimensions (..., n, d_model): got x.shape={x.shape}")
    h = _positive_int(num_heads, "num_heads")
    *lead, n, d_model = x.shape
    if d_model % h:
        raise ValueError(f"d_model must be divisible by num_heads: got d_model={d_model}, num_heads={h}")
    x = x.reshape(*lead, n, h, d_model // h)  # (..., n, h, d_head)
    return np.swapaxes(x, -2, -3)  # (..., h, n, d_head)


def merge_heads(x):
    """Concatenate the heads again: ``(..., h, n, d_head) -> (..., n, h * d_head)``.

    The inverse of :func:`split_heads`.

    Examples
    --------
    >>> x = np.arange(8.0).reshape(2, 4)
    >>> np.array_equal(merge_heads(split_heads(x, 2)), x)
    True
    """
    x = np.asarray(x)
    if x.ndim < 3:
        raise ValueError(f"x must have at least 3 dimensions (..., h, n, d_head): got x.shape={x.shape}")
    *lead, h, n, d_head = x.shape
    return np.swapaxes(x, -2, -3).reshape(*lead, n, h * d_head)  # (..., n, h, d_head) -> (..., n, d_model)


def multi_head_attention(x_q, x_kv, w_q, w_k, w_v, w_o, num_heads, mask=None, *, causal=False):
    """Multi-head attention: h scaled dot-product attentions side by side.

    ``q = x_q @ w_q``, ``k = x_kv @ w_k``, ``v = x_kv @ w_v`` (as the documents'
    ``Q = X W^Q``; no biases), each split into ``num_heads`` heads of width
    ``d_head = d_model / num_heads``, attended head by head with the scale
    ``1 / sqrt(d_head)``, then merged and projected: ``out = merge(heads) @ w_o``.

    Parameters
    ----------
    x_q : array_like, shape (..., n, d_model)
        The sequence the queries come from.
    x_kv : array_like, shape (..., m, d_model)
        The sequence the keys and values come from (``x_q`` itself for
        self-attention; the encoder's output for cross-attention).
    w_q, w_k, w_v, w_o : array_like, shape (d_model, d_model)
        Projections, applied as ``x @ w``.
    num_heads : int
        Must divide d_model.
    mask : array_like of bool, optional
        True = may attend. Broadcast against the weights ``(..., h, n, m)``
        after a head axis is inserted before its last two axes, so an
        ``(n, m)`` mask, a ``(..., n, m)`` one and a ``padding_mask`` of shape
        ``(..., 1, m)`` all apply to every head; a mask that already has the
        head axis (``mask.ndim == x_q.ndim + 1``) is used as it is.
    causal : bool
        Query ``i`` sees keys ``0..i`` in every head.

    Returns
    -------
    out : ndarray, shape (..., n, d_model)
    weights : ndarray, shape (..., h, n, m)
        Each head's weights; each row sums to 1 (0 if fully masked).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = rng.standard_normal((5, 8))                      # n = 5 tokens, d_model = 8
    >>> w = rng.standard_normal((4, 8, 8)) / np.sqrt(8)
    >>> out, weights = multi_head_attention(x, x, *w, num_heads=2)
    >>> out.shape, weights.shape
    ((5, 8), (2, 5, 5))
    """
    x_q = _real_array(x_q, "x_q")
    x_kv = _real_array(x_kv, "x_kv")
    h = _positive_int(num_heads, "num_heads")
    for name, x in (("x_q", x_q), ("x_kv", x_kv)):
        if x.ndim < 2:
            raise ValueError(f"{name} must have at least 2 dimensions (..., n, d_model): got {name}.shape={x.shape}")
    d_model = x_q.shape[-1]
    if x_kv.shape[-1] != d_model:
        raise ValueError(
            f"x_q and x_kv must have the same d_model: got x_q.shape={x_q.shape}, x_kv.shape={x_kv.shape}"
        )
    if d_model % h:
        raise ValueError(f"d_model must be divisible by num_heads: got d_model={d_model}, num_heads={h}")
    ws = []
    for name, w in (("w_q", w_q), ("w_k", w_k), ("w_v", w_v), ("w_o", w_o)):
        w = _real_array(w, name)
        if w.shape != (d_model, d_model):
            raise ValueError(f"{name} must have shape (d_model, d_model) = ({d_model}, {d_model}): got {w.shape}")
        ws.append(w)
    w_q, w_k, w_v, w_o = ws
    q = split_heads(x_q @ w_q, h)  # (..., n, d_model) -> (..., h, n, d_head)
    k = split_heads(x_kv @ w_k, h)  # (..., m, d_model) -> (..., h, m, d_head)
    v = split_heads(x_kv @ w_v, h)
    if mask is not None:
        mask = np.asarray(mask)
        if 2 < mask.ndim <= x_q.ndim:  # batch dims but no head axis: share it across heads
            mask = np.expand_dims(mask, -3)
    heads, weights = scaled_dot_product_attention(q, k, v, mask, causal=causal)  # (..., h, n, d_head)
    return merge_heads(heads) @ w_o, weights  # (..., n, d_model) x (d_model, d_model)


class MultiHeadAttention:
    """Multi-head attention with its four projection matrices.

    Parameters
    ----------
    d_model : int
    num_heads : int
        Must divide d_model.
    seed : int or numpy.random.Generator, optional
        Where the initial weights come from: Xavier/Glorot normal,
        ``std = sqrt(2 / (d_model + d_model))``.

    Attributes
    ----------
    w_q, w_k, w_v, w_o : ndarray, shape (d_model, d_model)

    Examples
    --------
    >>> mha = MultiHeadAttention(d_model=8, num_heads=2, seed=0)
    >>> out, weights = mha(np.ones((3, 8)), causal=True)
    >>> out.shape, weights.shape
    ((3, 8), (2, 3, 3))
    """

    def __init__(self, d_model, num_heads, *, seed=None):
        self.d_model = _positive_int(d_model, "d_model")
        self.num_heads = _positive_int(num_heads, "num_heads")
        if self.d_model % self.num_heads:
            raise ValueError(f"d_model must be divisible by num_heads: got d_model={d_model}, num_heads={num_heads}")
        rng = np.random.default_rng(seed)
        std = math.sqrt(2.0 / (2 * self.d_model))
        self.w_q, self.w_k, self.w_v, self.w_o = rng.normal(0.0, std, (4, self.d_model, self.d_model))

    def __call__(self, x_q, x_kv=None, mask=None, *, causal=False):
        """Attend from ``x_q`` to ``x_kv`` (``x_q`` itself when omitted); see :func:`multi_head_attention`."""
        x_kv = x_q if x_kv is None else x_kv
        return multi_head_attention(
            x_q, x_kv, self.w_q, self.w_k, self.w_v, self.w_o, self.num_heads, mask, causal=causal
        )


# ---------------------------------------------------------------------------
# Memory-efficient attention
# ---------------------------------------------------------------------------


def blockwise_attention(q, k, v, mask=None, *, scale=None, causal=False, block_size=256):
    """Scaled dot-product attention over blocks of keys, never holding all n x m weights.

    The online softmax (Milakov & Gimelshein, 2018), applied to attention
    over blocks of keys as in the memory-efficient attention of Rabe &
    Staats (2021) and, tiled for a GPU, in FlashAttention (Dao et al.,
    2022): for each block of ``block_size`` keys, the block's scores are computed, the running row maximum is
    updated, the running sum and output are rescaled by ``exp(old max - new
    max)``, and the block's contribution is added. Memory grows like
    ``n * block_size`` instead of ``n * m``; the result equals
    :func:`scaled_dot_product_attention`'s ``out`` (same masks, causal rule,
    scale and dtype rules; fully masked rows give zeros).

    Parameters
    ----------
    q, k, v, mask, scale, causal
        As in :func:`scaled_dot_product_attention` (mask True = may attend).
    block_size : int
        Keys per block (>= 1).

    Returns
    -------
    out : ndarray, shape (..., n, d_v)

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> q, k, v = rng.standard_normal((3, 10, 4))
    >>> out = blockwise_attention(q, k, v, causal=True, block_size=3)
    >>> np.allclose(out, scaled_dot_product_attention(q, k, v, causal=True)[0])
    True
    """
    q, k, v, batch, dtype = _check_qkv(q, k, v)
    block = _positive_int(block_size, "block_size")
    n, d_k, m, d_v = q.shape[-2], q.shape[-1], k.shape[-2], v.shape[-1]
    scale = _check_scale(scale, d_k)
    allowed = None if mask is None else np.atleast_2d(_check_mask(mask, n, m))
    batch = _full_batch(batch, allowed, f"q.shape={q.shape}, k.shape={k.shape}, v.shape={v.shape}")
    out = np.zeros(batch + (n, d_v), dtype)
    if m == 0 or n == 0:
        return out
    q = q * dtype.type(scale) if scale != 1.0 else q
    row_max = np.full(batch + (n, 1), -np.inf, dtype)  # running max of each row's scores
    row_sum = np.zeros(batch + (n, 1), dtype)  # running sum of exp(score - row_max)
    query_index = np.arange(n)[:, None]
    for start in range(0, m, block):
        stop = min(start + block, m)
        if causal and start > n - 1:
            break  # every later key is in every query's future
        k_t = np.ascontiguousarray(np.swapaxes(k[..., start:stop, :], -1, -2))  # (..., d_k, b)
        s = q @ k_t  # (..., n, d_k) x (..., d_k, b) -> (..., n, b)
        if s.shape[:-2] != batch:
            s = np.array(np.broadcast_to(s, batch + s.shape[-2:]))
        blocked = None
        if allowed is not None:
            cols = allowed if allowed.shape[-1] == 1 else allowed[..., start:stop]
            blocked = ~cols
        if causal:
            future = np.arange(start, stop)[None, :] > query_index  # (n, b)
            blocked = future if blocked is None else blocked | future
        if blocked is not None:
            np.copyto(s, -np.inf, where=blocked)
        new_max = np.maximum(row_max, s.max(axis=-1, keepdims=True))  # (..., n, 1)
        safe_max = np.where(np.isneginf(new_max), 0.0, new_max).astype(dtype, copy=False)
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            correction = np.exp(row_max - safe_max)  # rescales what was summed so far
            s -= safe_max
            np.exp(s, out=s)  # (..., n, b): exp(score - new max), 0 where blocked
        row_sum *= correction
        row_sum += s.sum(axis=-1, keepdims=True)
        out *= correction
        out += s @ v[..., start:stop, :]  # (..., n, b) x (..., b, d_v) -> (..., n, d_v)
        row_max = new_max
        del s  # free this block's scores before the next block's are allocated
    np.divide(out, row_sum, out=out, where=row_sum > 0)  # fully masked rows stay 0
    return out
