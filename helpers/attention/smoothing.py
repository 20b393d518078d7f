"""Attention as kernel smoothing: Nadaraya-Watson regression with a Gaussian kernel.

``nadaraya_watson`` writes the regression as a softmax of scores (the
bandwidth plays the part of a temperature); ``nadaraya_watson_loop`` is the
textbook ratio of kernel sums, with loops (notebook 16).
"""

from __future__ import annotations

import math

import numpy as np

from ._validate import _real_array, _real_scalar
from .core import softmax

__all__ = ["nadaraya_watson", "nadaraya_watson_loop"]


def _check_nw(x_query, x_train, y_train, bandwidth):
    xq = _real_array(x_query, "x_query").astype(np.float64)
    xt = _real_array(x_train, "x_train").astype(np.float64)
    yt = _real_array(y_train, "y_train").astype(np.float64)
    if xq.ndim == 1:
        xq = xq[:, None]
    if xt.ndim == 1:
        xt = xt[:, None]
    if xq.ndim != 2 or xt.ndim != 2 or xq.shape[1] != xt.shape[1]:
        raise ValueError(
            "x_query and x_train must be (n,) and (m,), or (n, d) and (m, d) with the same d: "
            f"got x_query.shape={np.shape(x_query)}, x_train.shape={np.shape(x_train)}"
        )
    if yt.ndim not in (1, 2) or yt.shape[0] != xt.shape[0]:
        raise ValueError(
            f"y_train must be (m,) or (m, d_y) with m = len(x_train) = {xt.shape[0]}: got y_train.shape={yt.shape}"
        )
    if xt.shape[0] == 0:
        raise ValueError(
            "x_train must hold at least one training point (the prediction is a weighted "
            f"average of the training targets): got x_train.shape={np.shape(x_train)}"
        )
    for name, arr in (("x_query", xq), ("x_train", xt)):
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} must hold finite numbers: got {arr[~np.isfinite(arr)][0]!r}")
    rule = "a finite real number > 0"
    h = _real_scalar(bandwidth, "bandwidth", rule)
    if not (math.isfinite(h) and h > 0):
        raise ValueError(f"bandwidth must be {rule}: got {h!r}")
    return xq, xt, yt, h


def _far_weights(xq, xt, h):
    """Weights (n, m) for queries whose kernel values all underflow in the distance form.

    Expanding the square, ``-||x - x_i||^2 / 2 = x.x_i - ||x_i||^2 / 2 - ||x||^2 / 2``, and the
    last term is the same for every key, so the softmax drops it: the scores
    ``(x.x_i - ||x_i||^2 / 2) / h^2`` give the same weights and stay finite where the
    squared distances overflow (a query at 1e200 is still nearer to 1 than to 0). Where
    even these overflow, the weights are their limit: shared equally by the nearest
    training points, found after dividing by the largest coordinate so nothing overflows.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        scores = (xq @ xt.T - 0.5 * (xt**2).sum(axis=-1)) / h / h  # (n, d) @ (d, m) -> (n, m)
    weights = np.empty(scores.shape)
    finite = np.all(np.isfinite(scores), axis=-1)
    weights[finite] = softmax(scores[finite], axis=-1)
    if not np.all(finite):
        q = xq[~finite]  # (r, d)
        top = np.maximum(np.abs(q).max(axis=-1), np.abs(xt).max())[:, None, None]  # (r, 1, 1), > 0
        qs, ts = q[:, None, :] / top, xt[None, :, :] / top  # every coordinate in [-1, 1]
        closeness = (qs * ts).sum(axis=-1) - 0.5 * (ts**2).sum(axis=-1)  # (r, m): larger is nearer
        nearest = closeness == closeness.max(axis=-1, keepdims=True)
        weights[~finite] = nearest / nearest.sum(axis=-1, keepdims=True)
    return weights


def nadaraya_watson(x_query, x_train, y_train, bandwidth):
    """Nadaraya-Watson kernel regression with a Gaussian kernel, written as attention.

    The prediction at ``x`` is a weighted average of the training targets,
    with weights ``K((x - x_i) / h) / sum_j K((x - x_j) / h)`` for the Gaussian
    kernel ``K(u) = exp(-u^2 / 2)``. That is attention: the query is ``x``,
    the keys are the ``x_i``, the values are the ``y_i``, and the scores are
    ``-||x - x_i||^2 / (2 h^2)``, so the weights are their softmax. The
    bandwidth ``h`` plays the part of a temperature (the scores are
    ``-||x - x_i||^2 / 2`` divided by ``T = h^2``): wide ``h`` averages many
    points, narrow ``h`` copies the nearest one.

    Parameters
    ----------
    x_query : array_like, shape (n,) or (n, d)
    x_train : array_like, shape (m,) or (m, d)
    y_train : array_like, shape (m,) or (m, d_y)
    bandwidth : float
        ``h``, finite and > 0.

    Returns
    -------
    y_hat : ndarray, shape (n,) or (n, d_y) (as ``y_train``)
    weights : ndarray, shape (n, m)
        Each row sums to 1. Where the squared distances of a query overflow (a
        query very far from the data, or a tiny bandwidth), its scores are taken
        in the expanded form ``(x.x_i - ||x_i||^2 / 2) / h^2``, which gives the same
        softmax and stays finite; where even that overflows, the weights are their
        limit: shared equally by the query's nearest training points.

    Raises
    ------
    ValueError
        If the shapes disagree, ``x_train`` is empty, an ``x`` is not finite,
        or ``bandwidth`` is not finite and > 0.

    Examples
    --------
    >>> y_hat, w = nadaraya_watson([0.0, 1.0], [0.0, 1.0, 2.0], [0.0, 1.0, 4.0], 0.5)
    >>> print(np.round(y_hat, 4), np.round(w.sum(axis=1), 12))
    [0.1203 1.213 ] [1. 1.]
    """
    xq, xt, yt, h = _check_nw(x_query, x_train, y_train, bandwidth)
    with np.errstate(over="ignore"):  # a far query or a tiny h: the scores reach -inf
        diff = xq[:, None, :] - xt[None, :, :]  # (n, 1, d) - (1, m, d) -> (n, m, d)
        scores = -0.5 * ((diff / h) ** 2).sum(axis=-1)  # (n, m); dividing first: h * h may underflow
    weights = softmax(scores, axis=-1)  # (n, m)
    lost = ~np.all(np.isfinite(scores), axis=-1)  # a squared distance overflowed: the expanded form
    if np.any(lost):
        weights[lost] = _far_weights(xq[lost], xt, h)
    return weights @ yt, weights  # (n, m) x (m,) -> (n,)  or  (m, d_y) -> (n, d_y)


def nadaraya_watson_loop(x_query, x_train, y_train, bandwidth):
    """:func:`nadaraya_watson` as the textbook ratio of kernel sums, with loops.

    ``y_hat(x) = sum_i K((x - x_i)/h) y_i / sum_j K((x - x_j)/h)`` with
    ``K(u) = exp(-u^2 / 2)``, no softmax and no shift (so far-away queries
    whose kernels all underflow give NaN here, unlike the softmax form).

    Examples
    --------
    >>> print(np.round(nadaraya_watson_loop([0.0, 1.0], [0.0, 1.0, 2.0], [0.0, 1.0, 4.0], 0.5)[0], 4))
    [0.1203 1.213 ]
    """
    xq, xt, yt, h = _check_nw(x_query, x_train, y_train, bandwidth)
    n, m = xq.shape[0], xt.shape[0]
    weights = np.zeros((n, m))
    for a in range(n):
        kern = [math.exp(-sum(((xq[a, c] - xt[i, c]) / h) ** 2 for c in range(xq.shape[1])) / 2) for i in range(m)]
        total = sum(kern)
        weights[a] = [value / total if total > 0 else math.nan for value in kern]
    return weights @ yt, weights
