"""Position: the sinusoidal position encoding of "Attention Is All You Need".

``sinusoidal_positions(n, d)`` and its entry-by-entry twin
``sinusoidal_positions_loop`` (notebook 13, where attention without position
cannot tell "dog bites man" from "man bites dog").
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ._validate import _real_scalar

__all__ = ["sinusoidal_positions", "sinusoidal_positions_loop"]


def _check_positions_args(n, d, base):
    for name, value in (("n", n), ("d", d)):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) or value < 0:
            raise ValueError(f"{name} must be a non-negative integer: got {value!r}")
    rule = "a finite real number > 0"
    b = _real_scalar(base, "base", rule)
    if not (math.isfinite(b) and b > 0):
        raise ValueError(f"base must be {rule}: got {b!r}")
    return int(n), int(d), b


def sinusoidal_positions(n, d, base=10000.0):
    """The sinusoidal position encoding of "Attention Is All You Need".

    Row ``pos`` encodes position ``pos``; columns come in (sin, cos) pairs that
    share one frequency::

        PE[pos, 2i]     = sin(pos / base**(2i / d))
        PE[pos, 2i + 1] = cos(pos / base**(2i / d))

    The first pair turns fastest (one radian per position) and the last
    slowest (wavelength up to ``2 pi base``).

    Parameters
    ----------
    n : int
        Number of positions (0, 1, ..., n - 1), >= 0.
    d : int
        Width of the encoding (the model width it is added to), >= 0.
        An odd ``d`` is allowed: its last column ``d - 1`` is even, so it is a
        sin column with exponent ``(d - 1) / d``, and it has no cos partner.
    base : float, default 10000.0
        Finite and > 0; sets the slowest wavelength.

    Returns
    -------
    ndarray of float64, shape (n, d)
        Every entry lies in [-1, 1]; row 0 is ``[0, 1, 0, 1, ...]``.

    Raises
    ------
    ValueError
        If ``n`` or ``d`` is not a non-negative integer or ``base`` is not
        finite and > 0.

    Examples
    --------
    >>> print(np.round(sinusoidal_positions(3, 4), 4))
    [[ 0.      1.      0.      1.    ]
     [ 0.8415  0.5403  0.01    1.    ]
     [ 0.9093 -0.4161  0.02    0.9998]]
    """
    n, d, base = _check_positions_args(n, d, base)
    pair = np.arange(d) // 2  # i of column 2i and of column 2i + 1
    inv_freq = base ** (-(2.0 * pair) / d) if d else np.zeros(0)  # (d,)
    angles = np.arange(n, dtype=np.float64)[:, None] * inv_freq  # (n, 1) * (d,) -> (n, d)
    pe = np.empty((n, d))
    pe[:, 0::2] = np.sin(angles[:, 0::2])
    pe[:, 1::2] = np.cos(angles[:, 1::2])
    return pe


def sinusoidal_positions_loop(n, d, base=10000.0):
    """:func:`sinusoidal_positions` written entry by entry with ``math.sin``/``math.cos``.

    Examples
    --------
    >>> np.allclose(sinusoidal_positions_loop(5, 7), sinusoidal_positions(5, 7))
    True
    """
    n, d, base = _check_positions_args(n, d, base)
    pe = np.zeros((n, d))
    for pos in range(n):
        for col in range(d):
            i = col // 2
            angle = pos / base ** (2 * i / d)
            pe[pos, col] = math.sin(angle) if col % 2 == 0 else math.cos(angle)
    return pe
