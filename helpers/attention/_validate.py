"""Input checking shared by every kernel of :mod:`helpers.attention` (private).

Each function turns a user's argument into what the kernels compute with (a
real ndarray, a float, a boolean mask that broadcasts to ``(..., n, m)``) or
raises a ValueError that names the argument and says what was expected. The
fast kernels and their ``_loop`` twins share them, so both refuse the same
inputs with the same words.
"""

from __future__ import annotations

import math
import numbers

import numpy as np


def _real_array(x, name):
    """Return ``x`` as an ndarray of real numbers, or raise ValueError."""
    try:
        arr = np.asarray(x)
    except (ValueError, TypeError) as exc:  # ragged lists and the like
        raise ValueError(f"{name} must be an array of real numbers: {exc}") from None
    if arr.dtype.kind not in "iuf":  # signed, unsigned, float; not bool or complex
        raise ValueError(
            f"{name} must hold real numbers (integer or float dtype): got dtype {arr.dtype}"
        )
    return arr


def _float_dtype(*arrays):
    """float32 when every array is float32, float64 otherwise."""
    if all(a.dtype == np.float32 for a in arrays):
        return np.dtype(np.float32)
    return np.dtype(np.float64)


def _check_qkv(q, k, v):
    q = _real_array(q, "q")
    k = _real_array(k, "k")
    arrays = [("q", q), ("k", k)]
    if v is not None:
        v = _real_array(v, "v")
        arrays.append(("v", v))
    for name, arr in arrays:
        if arr.ndim < 2:
            letters = {"q": "(..., n, d_k)", "k": "(..., m, d_k)", "v": "(..., m, d_v)"}
            raise ValueError(
                f"{name} must have at least 2 dimensions {letters[name]}: "
                f"got {name}.shape={arr.shape}"
            )
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            "q and k must have the same last dimension d_k: "
            f"got q.shape={q.shape}, k.shape={k.shape}"
        )
    if v is not None and k.shape[-2] != v.shape[-2]:
        raise ValueError(
            "k and v must have the same length m (one value per key): "
            f"got k.shape={k.shape}, v.shape={v.shape}"
        )
    try:
        batch = np.broadcast_shapes(*(arr.shape[:-2] for _, arr in arrays))
    except ValueError:
        shapes = ", ".join(f"{name}.shape={arr.shape}" for name, arr in arrays)
        raise ValueError(
            f"the leading (batch/head) dimensions of {', '.join(n for n, _ in arrays)} "
            f"do not broadcast: got {shapes}"
        ) from None
    dtype = _float_dtype(*(arr for _, arr in arrays))
    q = q.astype(dtype, copy=False)
    k = k.astype(dtype, copy=False)
    if v is not None:
        v = v.astype(dtype, copy=False)
    return q, k, v, batch, dtype


def _real_scalar(value, name, rule):
    """``value`` as a Python float if it is one real number, else ValueError."""
    arr = np.asarray(value) if not isinstance(value, str) else None
    if (
        arr is None
        or arr.ndim != 0
        or arr.dtype == np.bool_
        or not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating))
    ):
        raise ValueError(f"{name} must be {rule}: got {value!r}")
    return float(arr)


def _check_scale(scale, d_k):
    """Default ``1/sqrt(d_k)``; any finite real number is allowed."""
    if scale is None:
        return 1.0 / math.sqrt(d_k) if d_k > 0 else 1.0
    rule = "a finite real number or None"
    scale = _real_scalar(scale, "scale", rule)
    if not math.isfinite(scale):
        raise ValueError(f"scale must be {rule}: got {scale!r}")
    return scale


def _check_temperature(temperature):
    rule = "a finite real number > 0"
    t = _real_scalar(temperature, "temperature", rule)
    if not (math.isfinite(t) and t > 0):
        raise ValueError(f"temperature must be {rule}: got {t!r}")
    return t


def _check_mask(mask, n, m):
    """Return ``mask`` as a boolean array whose last two axes broadcast to (n, m)."""
    try:
        arr = np.asarray(mask)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"mask must be a boolean array: {exc}") from None
    if np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.complexfloating):
        raise ValueError(
            f"mask must be boolean (True = may attend) or integer 0/1, got dtype {arr.dtype}: "
            "a float mask is ambiguous (PyTorch adds float masks to the scores, while "
            "0/1 masks select keys); pass mask.astype(bool), or add your float bias "
            "to the scores yourself"
        )
    if arr.dtype != np.bool_:
        if not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(
                f"mask must be boolean (True = may attend) or integer 0/1: got dtype {arr.dtype}"
            )
        arr = arr != 0
    tail = arr.shape[-2:] if arr.ndim >= 2 else (1,) * (2 - arr.ndim) + arr.shape
    if any(t not in (1, s) for t, s in zip(tail, (n, m))):
        raise ValueError(
            f"mask must broadcast to the weights' shape (..., n, m) = (..., {n}, {m}): "
            f"got mask.shape={arr.shape}"
        )
    return arr


def _full_batch(batch, allowed, shapes):
    """Broadcast the q/k/v batch shape with the mask's leading dimensions."""
    if allowed is None or allowed.ndim <= 2:
        return batch
    try:
        return np.broadcast_shapes(batch, allowed.shape[:-2])
    except ValueError:
        raise ValueError(
            "mask must broadcast to the weights' shape (..., n, m): "
            f"got mask.shape={allowed.shape} with {shapes}"
        ) from None


def _positive_int(value, name):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a positive integer: got {value!r}")
    return int(value)
