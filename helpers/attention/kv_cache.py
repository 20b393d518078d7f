"""Decoding token by token: the key/value cache.

``KVCache`` stores the keys and values of the tokens generated so far and
lets the newest queries attend to them; ``incremental_attention`` runs causal
attention that way, one token at a time; ``causal_mask_lower_right`` is the
causal mask aligned at the bottom-right corner, the mask of a cache
(notebook 14).
"""

from __future__ import annotations

import numbers

import numpy as np

from ._validate import _check_mask, _check_qkv, _check_scale, _full_batch, _real_array, _real_scalar
from .core import scaled_dot_product_attention

__all__ = ["causal_mask_lower_right", "KVCache", "incremental_attention"]


def causal_mask_lower_right(n, m=None):
    """Causal mask aligned at the bottom-right corner: the mask of a cache.

    The ``n`` queries are the *last* ``n`` of ``m`` tokens, so query ``i``
    sits at position ``m - n + i`` and may attend to keys ``0..m - n + i``.
    This is the mask for a new chunk of ``n`` tokens attending to a cache
    that already holds ``m - n`` earlier ones (PyTorch calls it
    ``causal_lower_right``). With ``n == m`` it equals :func:`causal_mask`.

    Parameters
    ----------
    n : int
        Number of queries (the new tokens).
    m : int, optional
        Number of keys (cached plus new); defaults to ``n``. If ``n > m``, the
        first ``n - m`` queries see no key at all.

    Returns
    -------
    ndarray of bool, shape (n, m)
        True where ``j <= i + (m - n)`` (may attend).

    Examples
    --------
    >>> causal_mask_lower_right(2, 4).astype(int)   # 2 new tokens, 2 cached
    array([[1, 1, 1, 0],
           [1, 1, 1, 1]])
    """
    m = n if m is None else m
    for name, value in (("n", n), ("m", m)):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) or value < 0:
            raise ValueError(f"{name} must be a non-negative integer: got {value!r}")
    return np.tri(int(n), int(m), int(m) - int(n), dtype=bool)


class KVCache:
    """A growing store of keys and values for decoding one token at a time.

    At each step of generation the new token's key and value are appended,
    and its query attends to everything stored so far. Nothing that was
    computed for an earlier token is computed again: step ``t`` reads ``t``
    keys and ``t`` values (``2 t d`` numbers for the scores and the weighted
    sum) instead of recomputing all ``t x t`` scores.

    Parameters
    ----------
    scale : float, optional
        Multiplies the scores; defaults to ``1 / sqrt(d_k)``.

    Attributes
    ----------
    keys : ndarray, shape (..., t, d_k), or None before the first append
    values : ndarray, shape (..., t, d_v), or None before the first append
    length : int
        Number of tokens stored, ``t``.
    reads : int
        (query, key) pairs scored by :meth:`attend` so far: the cost counter
        (step ``t`` of one-token decoding adds ``t``).

    Examples
    --------
    >>> cache = KVCache()
    >>> rng = np.random.default_rng(0)
    >>> q, k, v = rng.standard_normal((3, 4, 2))
    >>> outs = []
    >>> for t in range(4):
    ...     cache.append(k[t:t + 1], v[t:t + 1])
    ...     outs.append(cache.attend(q[t:t + 1])[0])
    >>> ref = scaled_dot_product_attention(q, k, v, causal=True)[0]
    >>> np.allclose(np.concatenate(outs), ref), cache.length, cache.reads
    (True, 4, 10)
    """

    def __init__(self, *, scale=None):
        self.scale = None if scale is None else _real_scalar(scale, "scale", "a finite real number or None")
        self.keys = None
        self.values = None
        self.reads = 0

    @property
    def length(self):
        return 0 if self.keys is None else self.keys.shape[-2]

    def append(self, k, v):
        """Store the keys ``k (..., t, d_k)`` and values ``v (..., t, d_v)`` of ``t`` new tokens."""
        k = _real_array(k, "k")
        v = _real_array(v, "v")
        if k.ndim < 2 or v.ndim < 2 or k.shape[-2] != v.shape[-2]:
            raise ValueError(
                "k and v must be (..., t, d_k) and (..., t, d_v) with the same t: "
                f"got k.shape={k.shape}, v.shape={v.shape}"
            )
        if self.keys is None:
            self.keys, self.values = np.array(k), np.array(v)
            return
        if (k.shape[:-2] != self.keys.shape[:-2] or k.shape[-1] != self.keys.shape[-1]
                or v.shape[-1] != self.values.shape[-1]):
            raise ValueError(
                f"new keys/values must match the cache's (..., t, d_k) = {self.keys.shape} and "
                f"(..., t, d_v) = {self.values.shape} except in t: got k.shape={k.shape}, v.shape={v.shape}"
            )
        self.keys = np.concatenate([self.keys, k], axis=-2)  # (..., t + new, d_k)
        self.values = np.concatenate([self.values, v], axis=-2)  # (..., t + new, d_v)

    def attend(self, q, mask=None):
        """Attention of the ``c`` newest tokens' queries ``q (..., c, d_k)`` to the cache.

        The queries are the last ``c`` tokens stored, so the causal mask is
        aligned at the bottom right (:func:`causal_mask_lower_right`);
        ``mask`` (True = may attend, broadcastable to ``(..., c, t)``) is
        combined with it by AND. Returns ``out (..., c, d_v)`` and
        ``weights (..., c, t)``.
        """
        if self.keys is None:
            raise ValueError("the cache is empty: append the new tokens' keys and values before attend")
        q = _real_array(q, "q")
        if q.ndim < 2:
            raise ValueError(f"q must have at least 2 dimensions (..., c, d_k): got q.shape={q.shape}")
        c, t = q.shape[-2], self.length
        if c > t:
            raise ValueError(f"q holds more tokens than the cache: got q.shape={q.shape} with {t} cached")
        allowed = causal_mask_lower_right(c, t)
        if mask is not None:
            allowed = np.logical_and(allowed, _check_mask(mask, c, t))
        self.reads += c * t
        return scaled_dot_product_attention(q, self.keys, self.values, allowed, scale=self.scale)


def incremental_attention(q, k, v, mask=None, *, scale=None):
    """Causal attention computed token by token with a growing key/value cache.

    The way a decoder generates: at step ``t`` the key and value of token
    ``t`` enter a :class:`KVCache` and query ``t`` attends to keys ``0..t``.
    The result equals ``scaled_dot_product_attention(q, k, v, causal=True)[0]``
    (up to rounding), which computes the same rows all at once.

    Parameters
    ----------
    q : array_like, shape (..., n, d_k)
    k : array_like, shape (..., n, d_k)
        One key per query: the same ``n`` tokens.
    v : array_like, shape (..., n, d_v)
    mask : array_like of bool, broadcastable to (..., n, n), optional
        True = may attend; combined with the causal rule by AND.
    scale : float, optional
        Defaults to ``1 / sqrt(d_k)``.

    Returns
    -------
    out : ndarray, shape (..., n, d_v)
        Row ``t`` is token ``t``'s output; a row with no allowed key is zero.

    Raises
    ------
    ValueError
        As :func:`scaled_dot_product_attention`, and if q and k have
        different lengths.

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> q, k, v = rng.standard_normal((3, 2, 5, 4))     # batch 2, n = 5, d = 4
    >>> out = incremental_attention(q, k, v)
    >>> np.allclose(out, scaled_dot_product_attention(q, k, v, causal=True)[0])
    True
    """
    q, k, v, batch, dtype = _check_qkv(q, k, v)
    n, m = q.shape[-2], k.shape[-2]
    if n != m:
        raise ValueError(
            "q and k must have the same length n (one key per generated token): "
            f"got q.shape={q.shape}, k.shape={k.shape}"
        )
    scale = _check_scale(scale, q.shape[-1])
    allowed = None if mask is None else _check_mask(mask, n, n)
    if allowed is not None and allowed.ndim < 2:  # a 0-d or (m,) mask: as (1, 1) or (1, m)
        allowed = allowed.reshape((1,) * (2 - allowed.ndim) + allowed.shape)
    batch = _full_batch(batch, allowed, f"q.shape={q.shape}, k.shape={k.shape}, v.shape={v.shape}")
    q = np.broadcast_to(q, batch + q.shape[-2:])
    k = np.broadcast_to(k, batch + k.shape[-2:])
    v = np.broadcast_to(v, batch + v.shape[-2:])
    out = np.zeros(batch + (n, v.shape[-1]), dtype)
    cache = KVCache(scale=scale)
    for t in range(n):
        cache.append(k[..., t:t + 1, :], v[..., t:t + 1, :])  # one new key and value
        row_mask = None if allowed is None else (allowed if allowed.shape[-2] == 1 else allowed[..., t:t + 1, :])
        if row_mask is not None and row_mask.shape[-1] != 1:
            row_mask = row_mask[..., : t + 1]
        out[..., t:t + 1, :] = cache.attend(q[..., t:t + 1, :], row_mask)[0]  # (..., 1, t + 1) x (..., t + 1, d_v)
    return out
