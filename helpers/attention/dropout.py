"""Dropout on the attention weights: ``attention_dropout`` (inverted dropout, notebook 16)."""

from __future__ import annotations

import numbers

import numpy as np

from ._validate import _float_dtype, _real_array, _real_scalar

__all__ = ["attention_dropout"]


def attention_dropout(weights, p, rng):
    """Inverted dropout on attention weights: zero each with probability ``p``, rescale the rest.

    Each weight is kept where ``rng.random(weights.shape) >= p`` and then
    divided by ``1 - p``, so every weight keeps its expected value
    (``E[dropped] = weights``) and each output ``dropped @ v`` is unbiased. A
    dropped row no longer sums to 1 (only in expectation). Used in training
    only; at inference ``p = 0``.

    Parameters
    ----------
    weights : array_like, shape (..., n, m)
        Attention weights (any real array works).
    p : float
        Drop probability, ``0 <= p < 1``. ``p = 0`` returns the weights
        unchanged (a copy) and draws nothing from ``rng``.
    rng : numpy.random.Generator or int
        Where the random draws come from (an int is used as a seed).

    Returns
    -------
    ndarray, same shape as ``weights``
        ``weights * keep / (1 - p)``; float32 in, float32 out, else float64.

    Raises
    ------
    ValueError
        If ``p`` is not a real number in [0, 1), or ``rng`` is neither a
        Generator nor an int.

    Examples
    --------
    >>> w = np.full((1, 4), 0.25)
    >>> attention_dropout(w, 0.5, np.random.default_rng(0))
    array([[0.5, 0. , 0. , 0. ]])
    """
    w = _real_array(weights, "weights")
    w = w.astype(_float_dtype(w), copy=True)
    rule = "a real number with 0 <= p < 1"
    p = _real_scalar(p, "p", rule)
    if not 0.0 <= p < 1.0:
        raise ValueError(f"p must be {rule}: got {p!r}")
    if isinstance(rng, numbers.Integral) and not isinstance(rng, (bool, np.bool_)):
        rng = np.random.default_rng(int(rng))
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator or an int seed: got {type(rng).__name__}")
    if p == 0.0:
        return w
    keep = rng.random(w.shape) >= p
    w *= keep
    w /= w.dtype.type(1.0 - p)
    return w
