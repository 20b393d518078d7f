"""Scaled dot-product attention in NumPy.

The kernels of the collection: ``softmax``, ``attention_scores``,
``scaled_dot_product_attention`` and the masks, entropy and FLOP count around
them. Every kernel is vectorized over the leading (batch, head) dimensions and
over the rows; each has a slow ``_loop`` twin, written with plain Python loops,
that the notebooks use to teach and the tests use as an independent reference.

Conventions (the same as in the notebooks)::

    q        (..., n, d_k)   n queries
    k        (..., m, d_k)   m keys
    v        (..., m, d_v)   m values, one per key
    scores   (..., n, m)     q k^T * scale, before the softmax
    weights  (..., n, m)     softmax of the scores over the keys (last axis)
    out      (..., n, d_v)   weights @ v

Masks are boolean and broadcast to ``(..., n, m)``; **True means "may attend"**
(the meaning of a boolean ``attn_mask`` in PyTorch and of ``mask`` in flax).
A query row with no allowed key gets all-zero weights and an all-zero output.

Precision: float32 inputs give float32 results; every other input (integers,
float16, float64) is computed in float64.

This package imports NumPy only: no plotting, no widgets. Every public name is
imported here, so ``from helpers.attention import softmax`` and
``attention.KVCache`` work whichever module a name lives in::

    core        softmax, the masks, attention_scores, scaled_dot_product_attention,
                entropy, attention_flops, the backward pass, multi-head attention,
                blockwise_attention (the online softmax)
    position    sinusoidal_positions
    kv_cache    causal_mask_lower_right, KVCache, incremental_attention
    precision   to_bfloat16, low_precision_attention
    dropout     attention_dropout
    smoothing   nadaraya_watson (attention as kernel regression)
    _validate   the input checks every kernel shares (private)
"""

from . import core
from .core import *  # noqa: F403  (the names of core.__all__, re-exported as they are)
from .core import (
    _tile_rows as _tile_rows,  # tests/test_attention.py reads it to check that long inputs are tiled
)
from .dropout import attention_dropout
from .kv_cache import KVCache, causal_mask_lower_right, incremental_attention
from .position import sinusoidal_positions, sinusoidal_positions_loop
from .precision import low_precision_attention, to_bfloat16
from .smoothing import nadaraya_watson, nadaraya_watson_loop

# core's names first, in its order, then the other modules'.
__all__ = [
    *core.__all__,
    "sinusoidal_positions",
    "sinusoidal_positions_loop",
    "causal_mask_lower_right",
    "KVCache",
    "incremental_attention",
    "to_bfloat16",
    "low_precision_attention",
    "attention_dropout",
    "nadaraya_watson",
    "nadaraya_watson_loop",
]
