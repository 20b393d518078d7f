"""A two-layer attention-only transformer in NumPy, trained to form an induction head.

The model is the smallest one in which attention learns something worth
looking at: token embeddings plus learned positional embeddings, ``n_layers``
causal multi-head attention layers that each *add* their output to a running
sum of vectors (the *residual stream*), and an unembedding that reads the last
residual vector of each position out as logits over the vocabulary. There are
no MLPs, no layer norms and no biases, so every path from input to output goes
through attention.

Every parameter has a hand-written gradient: the attention itself goes back
through :func:`helpers.attention.attention_backward`; everything around it is
matrix products whose gradients are a transpose away. A small :class:`Adam`
optimiser updates the parameters in place.

The task (:func:`induction_task`) is random tokens in which a segment of
random length is repeated. Inside the repeat, the next token is predictable: find the
earlier occurrence of the current token and copy the token that followed it.
Two heads working together do this (an *induction circuit*): a *previous-token
head* in layer 0 writes "my predecessor was X" into each position's residual
vector, and an *induction head* in layer 1 looks for the position whose
predecessor matches the current token. :func:`head_scores` measures both.

Shapes (the letters used throughout)::

    B  batch          n  sequence length (<= max_len)
    V  vocab_size     d  d_model        L  n_layers
    H  n_heads        e  d_head = d_model / n_heads

    tokens   (B, n)          integer ids in 0..V-1
    logits   (B, n, V)       logits[b, i] predicts tokens[b, i + 1]
    patterns (B, L, H, n, n) each head's attention weights; rows sum to 1

This module imports NumPy and :mod:`helpers.attention` only.
"""

from __future__ import annotations

import json
import math
import numbers
import time

import numpy as np

from .attention import attention_backward, scaled_dot_product_attention

__all__ = [
    "AttentionOnlyTransformer",
    "Adam",
    "induction_task",
    "repeat_masks",
    "load_trained_induction_model",
    "retrain_induction_model",
    "save_induction_model",
    "train_induction",
    "head_scores",
    "composition_patterns",
    "hide_head",
    "loss_from_logits",
    "ov_circuit",
    "qk_circuit_through",
    "qk_circuit",
    "positional_qk",
    "direct_logit_attribution",
    "repeat_loss_by_offset",
    "repeat_loss_by_distance",
    "distance_task",
    "longest_distance",
    "gapped_induction_task",
    "TRAINING_CONFIG",
    "RECIPE",
]

# The configuration the stored model was trained with (and train_induction's defaults).
TRAINING_CONFIG = {
    "vocab_size": 16,
    "d_model": 64,
    "n_layers": 2,
    "n_heads": 4,
    "seq_len": 24,
    "batch": 32,
    "lr": 1e-2,
    "lr_end": 1e-3,
    "steps": 4500,
    "min_period": 3,
    "max_period": 12,
    "start": "random",
    "gap_share": 0.8,
    "balance": 0.25,
    "placement": 0.5,
    "repeat_weight": 4.0,
    "first_weight": 6.0,
}

# How the stored weights were made, in words that do not depend on this file's line numbers.
RECIPE = (
    "helpers.transformer.train_induction(seed=SEED, **CONFIG) with one BLAS thread: "
    "AttentionOnlyTransformer(vocab_size, d_model, n_layers, n_heads, max_len=seq_len, seed=seed) "
    "in float32; each step draws a fresh batch with gapped_induction_task(batch, seq_len, vocab_size, "
    "rng=np.random.default_rng([seed, 1]), min_period, max_period, gap_share, balance, "
    "placement=placement) "
    "and takes one Adam step (betas 0.9/0.999, eps 1e-8; the learning rate falls from lr to lr_end "
    "on a cosine over the steps) "
    "on the weighted mean cross-entropy of predicting tokens[:, 1:] from every position but the last: "
    "weight 1 where the next token is random, repeat_weight at the predictable positions of the repeat "
    "(repeat_masks) and repeat_weight * first_weight at its first one."
)

DATA_FILE = "induction_model.npz"
# The first stored model, trained with every segment at position 0 (``start=0``, 1,000 steps):
# kept to show what that layout taught it (notebook 12 compares the two).
START0_FILE = "induction_model_start0.npz"

EMBED_STD = 0.5

PARAM_NAMES = ("W_E", "W_pos", "W_Q", "W_K", "W_V", "W_O", "W_U")


# ---------------------------------------------------------------------------
# Argument checks (messages name the argument, what was expected, what came)
# ---------------------------------------------------------------------------


def _positive_int(value, name):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a positive integer: got {value!r}")
    return int(value)


def _check_tokens(tokens, vocab_size, max_len, name="tokens"):
    """``tokens`` as an int64 array of shape (B, n) with ids in 0..vocab_size-1, n <= max_len."""
    try:
        arr = np.asarray(tokens)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{name} must be an integer array of shape (batch, n): {exc}") from None
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(
            f"{name} must hold integer token ids (shape (batch, n)): got dtype {arr.dtype}"
        )
    if arr.ndim != 2:
        raise ValueError(f"{name} must have shape (batch, n): got {name}.shape={arr.shape}")
    if arr.shape[1] < 1 or arr.shape[0] < 1:
        raise ValueError(f"{name} must have at least one sequence of at least one token: got {name}.shape={arr.shape}")
    if arr.shape[1] > max_len:
        raise ValueError(
            f"{name} is too long: n must be <= max_len = {max_len}, got {name}.shape={arr.shape}"
        )
    low, high = int(arr.min()), int(arr.max())
    if low < 0 or high >= vocab_size:
        raise ValueError(
            f"{name} must be token ids in 0..vocab_size-1 = 0..{vocab_size - 1}: "
            f"got values in {low}..{high}"
        )
    return arr.astype(np.int64, copy=False)


def _check_ablate(ablate, n_layers, n_heads):
    """A list of distinct (layer, head) pairs, each in range."""
    if ablate is None:
        return []
    try:
        pairs = [tuple(pair) for pair in ablate]
    except TypeError:
        raise ValueError(f"ablate must be a list of (layer, head) pairs: got {ablate!r}") from None
    out = []
    for pair in pairs:
        if (
            len(pair) != 2
            or any(isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Integral) for x in pair)
            or not (0 <= pair[0] < n_layers and 0 <= pair[1] < n_heads)
        ):
            raise ValueError(
                f"ablate must hold (layer, head) pairs with 0 <= layer < {n_layers} and "
                f"0 <= head < {n_heads}: got {pair!r}"
            )
        out.append((int(pair[0]), int(pair[1])))
    return out


# ---------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------


class AttentionOnlyTransformer:
    """An attention-only transformer: embeddings, causal attention layers, unembedding.

    ``x = W_E[tokens] + W_pos[:n]``, then for each layer ``l``::

        q, k, v = x W_Q[l, h], x W_K[l, h], x W_V[l, h]         per head h, (B, n, e)
        z_h     = softmax(q k^T / sqrt(e), causal) v             (B, n, e)
        x       = x + sum_h z_h W_O[l, h]                        (B, n, d)

    and finally ``logits = x W_U``. The heads of a layer, and the three
    projections q, k, v, run as one matrix product.

    Parameters
    ----------
    vocab_size : int
        Number of token ids V.
    d_model : int
        Width d of the residual stream.
    n_layers : int
        Number of attention layers L.
    n_heads : int
        Heads per layer H; must divide d_model (each head has width d / H).
    max_len : int
        Longest sequence the positional embedding covers.
    seed : int, default 0
        Seed of the initial weights (normal, std ``EMBED_STD`` = 0.5 for the
        embeddings and ``1 / sqrt(fan_in)`` for the projections).
    dtype : numpy dtype, default float32
        float32 for speed; float64 for gradient checks.

    Attributes
    ----------
    params : dict of str to ndarray
        ``"W_E" (V, d)``, ``"W_pos" (max_len, d)``, ``"W_Q"``, ``"W_K"``,
        ``"W_V" (L, H, d, e)``, ``"W_O" (L, H, e, d)``, ``"W_U" (d, V)``.
    vocab_size, d_model, n_layers, n_heads, max_len, d_head : int

    Examples
    --------
    >>> model = AttentionOnlyTransformer(vocab_size=5, d_model=8, n_layers=2, n_heads=2, max_len=6)
    >>> logits, cache = model.forward(np.array([[0, 1, 2, 0, 1]]))
    >>> logits.shape, model.attention_patterns(np.array([[0, 1, 2]])).shape
    ((1, 5, 5), (1, 2, 2, 3, 3))
    """

    def __init__(self, vocab_size, d_model, n_layers, n_heads, max_len, seed=0, *, dtype=np.float32):
        self.vocab_size = _positive_int(vocab_size, "vocab_size")
        self.d_model = _positive_int(d_model, "d_model")
        self.n_layers = _positive_int(n_layers, "n_layers")
        self.n_heads = _positive_int(n_heads, "n_heads")
        self.max_len = _positive_int(max_len, "max_len")
        if self.d_model % self.n_heads:
            raise ValueError(
                f"d_model must be divisible by n_heads: got d_model={d_model}, n_heads={n_heads}"
            )
        dtype = np.dtype(dtype)
        if dtype not in (np.float32, np.float64):
            raise ValueError(f"dtype must be float32 or float64: got {dtype}")
        self.dtype = dtype
        self.d_head = self.d_model // self.n_heads
        V, d, L, H, e = self.vocab_size, self.d_model, self.n_layers, self.n_heads, self.d_head
        rng = np.random.default_rng(seed)
        shapes = {
            "W_E": ((V, d), EMBED_STD),
            "W_pos": ((self.max_len, d), EMBED_STD),
            "W_Q": ((L, H, d, e), 1.0 / math.sqrt(d)),
            "W_K": ((L, H, d, e), 1.0 / math.sqrt(d)),
            "W_V": ((L, H, d, e), 1.0 / math.sqrt(d)),
            "W_O": ((L, H, e, d), 1.0 / math.sqrt(H * e)),
            "W_U": ((d, V), 1.0 / math.sqrt(d)),
        }
        self.params = {
            name: (rng.standard_normal(shape) * std).astype(dtype) for name, (shape, std) in shapes.items()
        }

    # -- configuration ------------------------------------------------------

    @property
    def config(self):
        """The constructor's arguments (without the seed) as a dict."""
        return {
            "vocab_size": self.vocab_size,
            "d_model": self.d_model,
            "n_layers": self.n_layers,
            "n_heads": self.n_heads,
            "max_len": self.max_len,
        }

    def num_params(self):
        """Total number of trainable numbers."""
        return sum(p.size for p in self.params.values())

    def _qkv_matrix(self, layer):
        """W_Q, W_K, W_V of one layer side by side: (d, 3 * H * e), columns (qkv, head, e)."""
        p = self.params
        w = np.stack([p["W_Q"][layer], p["W_K"][layer], p["W_V"][layer]])  # (3, H, d, e)
        return w.transpose(2, 0, 1, 3).reshape(self.d_model, -1)  # (d, 3, H, e) -> (d, 3He)

    # -- forward ------------------------------------------------------------

    def forward(self, tokens, ablate=None, ablation="zero"):
        """Logits for every position, and the intermediate arrays the backward pass needs.

        Parameters
        ----------
        tokens : array_like of int, shape (B, n)
            Token ids in ``0..vocab_size-1``; ``n <= max_len``.
        ablate : list of (layer, head), optional
            Heads whose output is replaced (their attention weights are
            still computed and returned in the cache).
        ablation : {"zero", "mean"}, default "zero"
            What replaces an ablated head's output ``z``: zeros
            (*zero-ablation*), or its mean over the batch at each position
            (*mean-ablation*, which keeps the part of the output that does
            not depend on the sequence).

        Returns
        -------
        logits : ndarray, shape (B, n, V)
            ``logits[b, i]`` scores the candidates for ``tokens[b, i + 1]``.
        cache : dict
            ``"tokens" (B, n)``, ``"resid"``: list of the L + 1 residual
            streams ``(B, n, d)`` (before each layer, and the final one),
            ``"qkv"``: per layer ``(3, B, H, n, e)``, ``"z"``: per layer the
            heads' outputs ``(B, H, n, e)`` (zeros for ablated heads),
            ``"weights"``: per layer ``(B, H, n, n)``, ``"keep"``: per layer
            ``(H,)`` 1 for kept and 0 for ablated heads.

        Raises
        ------
        ValueError
            If tokens are not integers of shape (B, n), lie outside the
            vocabulary, or ``n > max_len``; or if ``ablate`` names no head.
        """
        tokens = _check_tokens(tokens, self.vocab_size, self.max_len)
        ablated = _check_ablate(ablate, self.n_layers, self.n_heads)
        if ablation not in ("zero", "mean"):
            raise ValueError(f"ablation must be 'zero' or 'mean': got {ablation!r}")
        B, n = tokens.shape
        d, L, H, e = self.d_model, self.n_layers, self.n_heads, self.d_head
        p = self.params
        x = p["W_E"][tokens] + p["W_pos"][:n]  # (B, n, d)
        cache = {"tokens": tokens, "resid": [x], "qkv": [], "z": [], "weights": [], "keep": []}
        for layer in range(L):
            qkv = x @ self._qkv_matrix(layer)  # (B, n, d) x (d, 3He) -> (B, n, 3He)
            # One contiguous copy, so the batched matmuls below need no hidden copies of their own.
            qkv = np.ascontiguousarray(qkv.reshape(B, n, 3, H, e).transpose(2, 0, 3, 1, 4))  # (3, B, H, n, e)
            z, weights = scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], causal=True)  # (B, H, n, e)
            keep = np.ones(H, dtype=self.dtype)
            for lay, head in ablated:
                if lay == layer:
                    keep[head] = 0
            if not keep.all():
                kept = z * keep[:, None, None]  # zero the ablated heads' outputs
                if ablation == "mean":  # ... or put their mean over the batch there
                    kept = kept + (1 - keep)[:, None, None] * z.mean(axis=0, keepdims=True)
                z = kept
            z_flat = z.transpose(0, 2, 1, 3).reshape(B, n, H * e)  # (B, n, He)
            x = x + z_flat @ p["W_O"][layer].reshape(H * e, d)  # (B, n, He) x (He, d) -> (B, n, d)
            cache["qkv"].append(qkv)
            cache["z"].append(z)
            cache["weights"].append(weights)
            cache["keep"].append(keep)
            cache["resid"].append(x)
        logits = x @ p["W_U"]  # (B, n, d) x (d, V) -> (B, n, V)
        return logits, cache

    def attention_patterns(self, tokens, ablate=None):
        """Every head's attention weights on ``tokens``.

        Parameters
        ----------
        tokens : array_like of int, shape (B, n)
        ablate : list of (layer, head), optional
            As in :meth:`forward` (changes the later layers' patterns only).

        Returns
        -------
        ndarray, shape (B, L, H, n, n)
            ``[b, l, h, i, j]`` is the weight query ``i`` puts on key ``j``
            in head ``h`` of layer ``l``. Causal: zero for ``j > i``; each row
            sums to 1.
        """
        _, cache = self.forward(tokens, ablate=ablate)
        return np.stack(cache["weights"], axis=1)  # L x (B, H, n, n) -> (B, L, H, n, n)

    # -- loss and backward --------------------------------------------------

    def _targets_and_mask(self, tokens, targets, mask):
        B, n = tokens.shape
        targets = _check_tokens(targets, self.vocab_size, self.max_len, name="targets")
        if targets.shape != (B, n):
            raise ValueError(
                f"targets must have the shape of tokens (B, n) = {(B, n)}: got targets.shape={targets.shape}"
            )
        if mask is None:
            mask = np.ones((B, n), dtype=bool)
        else:
            mask = np.asarray(mask)
            if mask.dtype != np.bool_:
                raise ValueError(f"mask must be boolean (True = counts in the loss): got dtype {mask.dtype}")
            if mask.shape != (B, n):
                raise ValueError(f"mask must have the shape of tokens (B, n) = {(B, n)}: got mask.shape={mask.shape}")
        return targets, mask

    def loss(self, tokens, targets, mask=None, ablate=None, ablation="zero"):
        """Mean cross-entropy of ``targets`` under the model's logits, over the positions in ``mask``.

        Parameters
        ----------
        tokens, targets : array_like of int, shape (B, n)
            ``targets[b, i]`` is the token position ``i`` should predict.
        mask : array_like of bool, shape (B, n), optional
            True = the position counts in the mean. All positions by default.
        ablate : list of (layer, head), optional
            Heads whose output is zeroed (see :meth:`forward`).
        ablation : {"zero", "mean"}, default "zero"
            As in :meth:`forward`.

        Returns
        -------
        float
            In nats; ``log(vocab_size)`` for a uniform guess. NaN if the mask
            selects nothing.
        """
        logits, cache = self.forward(tokens, ablate=ablate, ablation=ablation)
        targets, mask = self._targets_and_mask(cache["tokens"], targets, mask)
        return _masked_mean(_cross_entropy(logits, targets), mask)

    def loss_and_grads(self, tokens, targets, mask=None, ablate=None):
        """The loss of :meth:`loss` and its gradient with respect to every parameter.

        Parameters
        ----------
        tokens, targets, mask, ablate
            As in :meth:`loss`.

        Returns
        -------
        loss : float
        grads : dict of str to ndarray
            One entry per entry of ``params``, same shapes.

        Notes
        -----
        Going backwards with ``g = dL/dx`` for the residual stream ``x``:
        ``dlogits = (softmax(logits) - onehot(targets)) * mask / count``,
        ``dW_U = x^T dlogits``, ``g = dlogits W_U^T``; through each layer
        (last first) ``dW_O = z^T g``, ``dz = g W_O^T`` (zero for ablated
        heads), ``dq, dk, dv = attention_backward(q, k, v, dz)``,
        ``dW_Q = x^T dq`` (likewise K, V) and ``g += dq W_Q^T + dk W_K^T +
        dv W_V^T`` (the residual connection passes ``g`` through unchanged);
        finally ``dW_pos[:n] = sum_b g`` and ``dW_E[t] = sum of g where
        tokens == t``.

        Examples
        --------
        >>> model = AttentionOnlyTransformer(5, 8, 1, 2, max_len=4, dtype=np.float64)
        >>> tokens = np.array([[0, 1, 2, 3]])
        >>> loss, grads = model.loss_and_grads(tokens, np.array([[1, 2, 3, 4]]))
        >>> sorted(grads) == sorted(model.params), grads["W_Q"].shape
        (True, (1, 2, 8, 4))
        """
        loss, grads, _, _ = self._loss_and_grads(tokens, targets, mask, ablate)
        return loss, grads

    def _loss_and_grads(self, tokens, targets, mask, ablate, weights=None):
        """:meth:`loss_and_grads` plus the cache and the per-position losses (B, n).

        ``weights`` (B, n), optional: the loss is the weighted mean over ``mask``
        (``sum(w * loss) / sum(w)``), and the gradient its gradient.
        """
        logits, cache = self.forward(tokens, ablate=ablate)
        tokens = cache["tokens"]
        targets, mask = self._targets_and_mask(tokens, targets, mask)
        B, n = tokens.shape
        V, d, L, H, e = self.vocab_size, self.d_model, self.n_layers, self.n_heads, self.d_head
        p = self.params
        scale = mask if weights is None else mask * weights
        count = int(scale.sum()) if weights is None else float(scale.sum())
        if count == 0:
            zeros = {name: np.zeros_like(p[name]) for name in PARAM_NAMES}
            return float("nan"), zeros, cache, _cross_entropy(logits, targets)

        # Cross-entropy and its gradient with respect to the logits.
        shifted = logits - logits.max(axis=-1, keepdims=True)
        exp = np.exp(shifted)
        total = exp.sum(axis=-1, keepdims=True)
        per_position = np.log(total[..., 0]) - np.take_along_axis(shifted, targets[..., None], axis=-1)[..., 0]
        loss = float((per_position[mask] if weights is None else per_position * scale).sum() / count)
        d_logits = exp / total  # softmax, (B, n, V)
        d_logits[np.arange(B)[:, None], np.arange(n)[None, :], targets] -= 1
        d_logits *= (scale / count).astype(self.dtype)[..., None]

        grads = {}
        x = cache["resid"][-1]
        grads["W_U"] = x.reshape(-1, d).T @ d_logits.reshape(-1, V)  # (d, Bn) x (Bn, V) -> (d, V)
        g = d_logits @ p["W_U"].T  # (B, n, V) x (V, d) -> (B, n, d)

        g_qkv_w = np.empty((L, 3, H, d, e), dtype=self.dtype)
        g_o = np.empty((L, H, e, d), dtype=self.dtype)
        for layer in reversed(range(L)):
            x_in = cache["resid"][layer]  # (B, n, d)
            z = cache["z"][layer]  # (B, H, n, e)
            z_flat = z.transpose(0, 2, 1, 3).reshape(B * n, H * e)
            g_flat = g.reshape(B * n, d)
            g_o[layer] = (z_flat.T @ g_flat).reshape(H, e, d)  # (He, Bn) x (Bn, d) -> (He, d)
            dz = g_flat @ p["W_O"][layer].reshape(H * e, d).T  # (Bn, d) x (d, He) -> (Bn, He)
            dz = np.ascontiguousarray(dz.reshape(B, n, H, e).transpose(0, 2, 1, 3))  # (B, H, n, e)
            dz = dz * cache["keep"][layer][:, None, None]  # an ablated head passes nothing back
            q, k, v = cache["qkv"][layer]
            dq, dk, dv = attention_backward(q, k, v, dz, causal=True)  # each (B, H, n, e)
            d_qkv = np.stack([dq, dk, dv]).transpose(1, 3, 0, 2, 4).reshape(B * n, 3 * H * e)  # (Bn, 3He)
            g_qkv_w[layer] = (x_in.reshape(B * n, d).T @ d_qkv).reshape(d, 3, H, e).transpose(1, 2, 0, 3)
            g = g + (d_qkv @ self._qkv_matrix(layer).T).reshape(B, n, d)  # residual + through q, k, v
        grads["W_Q"], grads["W_K"], grads["W_V"] = (
            np.ascontiguousarray(g_qkv_w[:, i]) for i in range(3)
        )
        grads["W_O"] = g_o
        g_pos = np.zeros_like(p["W_pos"])
        g_pos[:n] = g.sum(axis=0)
        grads["W_pos"] = g_pos
        one_hot = np.zeros((B * n, V), dtype=self.dtype)
        one_hot[np.arange(B * n), tokens.ravel()] = 1
        grads["W_E"] = one_hot.T @ g.reshape(B * n, d)  # (V, Bn) x (Bn, d) -> (V, d)
        return loss, {name: grads[name] for name in PARAM_NAMES}, cache, per_position


def _masked_mean(per_position, mask):
    count = mask.sum()
    return float(per_position[mask].sum() / count) if count else float("nan")


def _cross_entropy(logits, targets):
    """Per-position cross-entropy ``-log softmax(logits)[target]``: (B, n, V), (B, n) -> (B, n)."""
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_total = np.log(np.exp(shifted).sum(axis=-1))
    return log_total - np.take_along_axis(shifted, targets[..., None], axis=-1)[..., 0]


# ---------------------------------------------------------------------------
# Adam
# ---------------------------------------------------------------------------


def _finite_float(value, name):
    """``value`` as a finite Python float, or ValueError naming ``name``."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a finite number: got {value!r}") from None
    if isinstance(value, (bool, np.bool_)) or not math.isfinite(number):
        raise ValueError(f"{name} must be a finite number: got {value!r}")
    return number


class Adam:
    """Adam (Kingma and Ba), updating a dict of arrays in place.

    ``m = b1 m + (1 - b1) g``, ``v = b2 v + (1 - b2) g^2``,
    ``w -= lr * m_hat / (sqrt(v_hat) + eps)`` with the bias corrections
    ``m_hat = m / (1 - b1^t)``, ``v_hat = v / (1 - b2^t)``.

    Parameters
    ----------
    params : dict of str to ndarray
        Updated in place by :meth:`step`.
    lr : float, default 3e-3
    betas : (float, float), default (0.9, 0.999)
    eps : float, default 1e-8

    Examples
    --------
    >>> w = {"x": np.array([1.0, -1.0])}
    >>> opt = Adam(w, lr=0.1)
    >>> opt.step({"x": np.array([2.0, -3.0])})
    >>> w["x"]      # the first step moves each entry by lr against its gradient's sign
    array([ 0.9, -0.9])
    """

    def __init__(self, params, lr=3e-3, betas=(0.9, 0.999), eps=1e-8):
        lr = _finite_float(lr, "lr")
        if not lr > 0:
            raise ValueError(f"lr must be a finite number > 0: got {lr!r}")
        try:
            b1, b2 = betas
        except (TypeError, ValueError):
            raise ValueError(f"betas must be a pair (beta1, beta2): got {betas!r}") from None
        b1, b2 = _finite_float(b1, "betas[0]"), _finite_float(b2, "betas[1]")
        for index, beta in enumerate((b1, b2)):
            if not 0.0 <= beta < 1.0:  # beta = 1 makes the bias correction 1 - beta^t zero
                raise ValueError(f"betas[{index}] must be in [0, 1): got {beta!r}")
        eps = _finite_float(eps, "eps")
        if eps < 0:
            raise ValueError(f"eps must be a finite number >= 0: got {eps!r}")
        self.params = params
        self.lr, (self.b1, self.b2), self.eps = lr, (b1, b2), eps
        self.t = 0
        self.m = {name: np.zeros_like(w) for name, w in params.items()}
        self.v = {name: np.zeros_like(w) for name, w in params.items()}
        self._tmp = {name: np.empty_like(w) for name, w in params.items()}

    def step(self, grads):
        """One update of every parameter from ``grads`` (same keys and shapes), in place."""
        self.t += 1
        b1, b2 = self.b1, self.b2
        step_size = self.lr * math.sqrt(1 - b2 ** self.t) / (1 - b1 ** self.t)
        eps_hat = self.eps * math.sqrt(1 - b2 ** self.t)
        for name, w in self.params.items():
            g, m, v, tmp = grads[name], self.m[name], self.v[name], self._tmp[name]
            m *= b1
            m += (1 - b1) * g
            v *= b2
            np.multiply(g, g, out=tmp)
            tmp *= 1 - b2
            v += tmp
            np.sqrt(v, out=tmp)
            tmp += eps_hat
            np.divide(m, tmp, out=tmp)
            tmp *= step_size
            w -= tmp


# ---------------------------------------------------------------------------
# The task
# ---------------------------------------------------------------------------


def _task_sizes(batch, seq_len, vocab_size, min_period, max_period):
    """The sizes of a repeat task as positive ints, ``min_period <= max_period`` (else ValueError naming them)."""
    batch = _positive_int(batch, "batch")
    seq_len = _positive_int(seq_len, "seq_len")
    vocab_size = _positive_int(vocab_size, "vocab_size")
    min_period = _positive_int(min_period, "min_period")
    max_period = _positive_int(max_period, "max_period")
    if max_period < min_period:
        raise ValueError(f"max_period must be >= min_period: got min_period={min_period}, max_period={max_period}")
    return batch, seq_len, vocab_size, min_period, max_period


def induction_task(batch, seq_len, vocab_size, rng, min_period=4, max_period=12, start="random"):
    """Random token sequences in which a segment of random length is repeated once, anywhere.

    Each sequence draws a *period* ``p`` uniformly from ``min_period..max_period``
    (capped so that the segment fits twice), ``seq_len`` random tokens and a
    *start* ``s``; then the ``p`` tokens from ``s`` on (the *segment*) are
    copied to positions ``s + p..s + 2p - 1`` (the *repeat*). So
    ``tokens[b, i] == tokens[b, i - p]`` for ``s + p <= i < s + 2p``, and
    everything before and after is random. Inside the repeat, at
    ``s + p <= i <= s + 2p - 2``, the next token is predictable by looking
    back one period: it is ``tokens[b, i - p + 1]``, the token that followed
    the current token's earlier occurrence.

    Parameters
    ----------
    batch : int
    seq_len : int
        Must be at least ``2 * min_period`` (plus ``start`` if it is fixed).
    vocab_size : int
    rng : numpy.random.Generator or int
        Where the randomness comes from (an int seeds a new generator).
    min_period, max_period : int, default 4 and 12
        The range of the segment's length (both included). With one fixed
        length the model could learn the repeat through the positions
        instead of reading the tokens; a random length rules that out.
    start : "random" or int, default "random"
        ``"random"``: each segment starts at a position drawn uniformly from
        ``0..seq_len - 2p``, so position tells nothing about where the repeat
        is. An int: every segment starts there (``0`` is the layout the
        first model of notebook 12 was trained on).

    Returns
    -------
    tokens : ndarray of int64, shape (batch, seq_len)
        Token ids in ``0..vocab_size-1``, drawn uniformly (so a token may
        occur twice inside one segment by chance).
    periods : ndarray of int64, shape (batch,)
        The segment length ``p`` of each sequence.
    starts : ndarray of int64, shape (batch,)
        Where each segment starts, ``s``.

    Examples
    --------
    >>> tokens, periods, starts = induction_task(2, 10, 16, np.random.default_rng(0))
    >>> all((row[s + p:s + 2 * p] == row[s:s + p]).all() for row, p, s in zip(tokens, periods, starts))
    True
    """
    batch, seq_len, vocab_size, min_period, max_period = _task_sizes(
        batch, seq_len, vocab_size, min_period, max_period)
    if isinstance(start, str):
        if start != "random":
            raise ValueError(f"start must be 'random' or a position >= 0: got {start!r}")
        fixed = 0
    elif isinstance(start, (bool, np.bool_)) or not isinstance(start, numbers.Integral) or start < 0:
        raise ValueError(f"start must be 'random' or a position >= 0: got {start!r}")
    else:
        fixed = int(start)
    if seq_len < fixed + 2 * min_period:
        raise ValueError(
            f"seq_len must be >= start + 2 * min_period = {fixed + 2 * min_period} so that the segment "
            f"fits twice: got seq_len={seq_len}"
        )
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    top = min(max_period, (seq_len - fixed) // 2)
    periods = rng.integers(min_period, top + 1, size=batch)  # (batch,)
    tokens = rng.integers(0, vocab_size, size=(batch, seq_len))  # (batch, seq_len)
    if start == "random":
        starts = rng.integers(0, seq_len - 2 * periods + 1)  # (batch,), each in 0..seq_len - 2p
    else:
        starts = np.full(batch, fixed)
    i = np.arange(seq_len)[None, :]
    s, p = starts[:, None], periods[:, None]
    in_repeat = (i >= s + p) & (i < s + 2 * p)
    source = np.where(in_repeat, i - p, i)  # copy positions s + p..s + 2p - 1 from s..s + p - 1
    tokens = np.take_along_axis(tokens, source, axis=1)
    return tokens.astype(np.int64), periods.astype(np.int64), starts.astype(np.int64)


def gapped_induction_task(batch, seq_len, vocab_size, rng, min_period=2, max_period=12, gap_share=0.5,
                          balance=0.0, gap_max_period=None, placement=0.0):
    """Random tokens with one segment repeated later, after a gap of random tokens or straight after.

    A share ``gap_share`` of the sequences (in expectation) has a *gap*: its
    *distance* ``d`` between the two copies is drawn uniformly from
    ``min_period + 1..seq_len - min_period``, its period ``p`` uniformly from
    the lengths that fit (``min_period..min(max_period, d - 1, seq_len - d)``)
    and the gap is ``g = d - p`` random tokens. The others have no gap
    (``g = 0``, ``d = p``) and a period drawn uniformly from
    ``min_period..min(max_period, seq_len // 2)``. Then a start ``s`` is drawn
    uniformly from ``0..seq_len - 2p - g``, and the ``p`` tokens from ``s`` on
    (the *segment*) are copied to ``s + p + g..s + 2p + g - 1`` (the
    *repeat*). Distances, offsets and periods all vary over the whole
    context, so no window of them is enough to do well.

    Parameters
    ----------
    batch, seq_len, vocab_size : int
        ``seq_len`` must be at least ``2 * min_period``.
    rng : numpy.random.Generator or int
    min_period, max_period : int, default 2 and 12
    gap_share : float in [0, 1], default 0.5
        The share of sequences (in expectation) with a gap.
    balance : float in [0, 1], default 0
        ``0``: the draws above, uniform. Above 0, the period of a sequence
        without a gap and the distance of one with a gap are drawn with
        weights ``(expected p - 1) ** -balance`` instead, ``p - 1`` being the
        predictable positions the sequence gives: uniform draws give the
        middle distances, where long segments fit, most of the loss, and so
        teach the induction head to favour their look-backs; at ``1`` every
        distance gets about the same share. The stored model uses ``0.25``.
    gap_max_period : int, optional
        The longest period of a sequence with a gap (``max_period`` by
        default, the stored model's draws): smaller, every distance gets short
        segments, whose first predictable position is a large share of the repeat.
    placement : float in [0, 1], default 0
        Above 0, the distance of a sequence with a gap is drawn with a further
        weight ``(expected number of starts that fit) ** placement``: at ``1``
        (with ``balance=0``) every placement (start, distance) of a repeat is
        about as likely, so no distance is cheaper for its position alone (a
        uniform distance draw makes the longest ones, whose start is all but
        fixed, the most frequent per placement). The stored model uses ``0.5``.

    Returns
    -------
    tokens : ndarray of int64, shape (batch, seq_len)
    periods, starts, gaps : ndarray of int64, shape (batch,)
        ``p``, ``s`` and ``g`` of each sequence:
        ``tokens[b, i] == tokens[b, i - p - g]`` for ``s + p + g <= i < s + 2p + g``.

    Examples
    --------
    >>> tokens, periods, starts, gaps = gapped_induction_task(3, 16, 16, np.random.default_rng(0))
    >>> all((row[s + p + g:s + 2 * p + g] == row[s:s + p]).all()
    ...     for row, p, s, g in zip(tokens, periods, starts, gaps))
    True
    """
    batch, seq_len, vocab_size, min_period, max_period = _task_sizes(
        batch, seq_len, vocab_size, min_period, max_period)
    if seq_len < 2 * min_period:
        raise ValueError(
            f"seq_len must be >= 2 * min_period = {2 * min_period} so that the segment fits twice: "
            f"got seq_len={seq_len}"
        )
    gap_share = _finite_float(gap_share, "gap_share")
    if not 0.0 <= gap_share <= 1.0:
        raise ValueError(f"gap_share must be in [0, 1]: got {gap_share!r}")
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    n, low = seq_len, min_period
    gap_top = max_period if gap_max_period is None else max(_positive_int(gap_max_period, "gap_max_period"), low)
    gapped = (rng.random(batch) < gap_share) & (n >= 2 * low + 1)  # (batch,)
    # Without a gap: the period uniform in low..min(max_period, n // 2).
    balance = _finite_float(balance, "balance")
    if not 0.0 <= balance <= 1.0:
        raise ValueError(f"balance must be in [0, 1]: got {balance!r}")
    placement = _finite_float(placement, "placement")
    if not 0.0 <= placement <= 1.0:
        raise ValueError(f"placement must be in [0, 1]: got {placement!r}")
    if balance > 0 or placement > 0:
        # A draw of the period (no gap) or of the distance (a gap) is weighted by
        # (expected p - 1) ** -balance, p - 1 being the predictable positions one sequence gives:
        # at balance 1 every distance d, so every look-back d - 1 of the induction head, gets
        # about the same share of the loss; at 0 (uniform draws) the middle distances get most.
        plain_p = np.arange(low, min(max_period, n // 2) + 1)
        plain = rng.choice(plain_p, size=batch, p=_normalised(np.maximum(plain_p - 1, 0.5) ** -balance))
        all_d = np.arange(low + 1, max(n - low, low + 1) + 1)
        all_top = np.maximum(np.minimum(np.minimum(gap_top, all_d - 1), n - all_d), low)
        weights = np.maximum((low + all_top) / 2 - 1, 0.5) ** -balance
        weights = weights * np.maximum(n - all_d - (low + all_top) / 2 + 1, 0.5) ** placement
        distance = rng.choice(all_d, size=batch, p=_normalised(weights))
    else:
        plain = rng.integers(low, min(max_period, n // 2) + 1, size=batch)
        # With one: the distance uniform in low + 1..n - low, then the period among those that fit.
        distance = rng.integers(low + 1, max(n - low, low + 1) + 1, size=batch)
    top = np.maximum(np.minimum(np.minimum(gap_top, distance - 1), n - distance), low)
    spaced = rng.integers(low, top + 1)
    periods = np.where(gapped, spaced, plain)
    gaps = np.where(gapped, distance - spaced, 0)
    starts = rng.integers(0, n - 2 * periods - gaps + 1)  # (batch,), each in 0..n - 2p - g
    tokens = rng.integers(0, vocab_size, size=(batch, seq_len))  # (batch, seq_len)
    i = np.arange(seq_len)[None, :]
    s, p, g = starts[:, None], periods[:, None], gaps[:, None]
    in_repeat = (i >= s + p + g) & (i < s + 2 * p + g)
    source = np.where(in_repeat, i - p - g, i)
    tokens = np.take_along_axis(tokens, source, axis=1)
    return tokens.astype(np.int64), periods.astype(np.int64), starts.astype(np.int64), gaps.astype(np.int64)


def _normalised(weights):
    return weights / weights.sum()


def _check_gaps(gaps, periods):
    arr = np.asarray(0 if gaps is None else gaps)
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"gaps must be integers, one per sequence: got dtype {arr.dtype}")
    if arr.ndim == 0:
        arr = np.full(periods.shape, int(arr))
    if arr.shape != periods.shape:
        raise ValueError(f"gaps must have the shape of periods {periods.shape}: got gaps.shape={arr.shape}")
    if arr.min() < 0:
        raise ValueError(f"gaps must be >= 0: got {int(arr.min())}")
    return arr.astype(np.int64)


def _check_starts(starts, periods, n, gaps=0):
    """``starts`` as an int64 array like ``periods`` (a scalar is broadcast), the repeat inside n."""
    arr = np.asarray(0 if starts is None else starts)
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"starts must be integers, one per sequence: got dtype {arr.dtype}")
    if arr.ndim == 0:
        arr = np.full(periods.shape, int(arr))
    if arr.shape != periods.shape:
        raise ValueError(f"starts must have the shape of periods {periods.shape}: got starts.shape={arr.shape}")
    if arr.min() < 0 or (arr + periods + gaps).max() > n - 1:
        raise ValueError(
            f"starts must lie in 0..n-1-p-g (the repeat must start inside n = {n}): "
            f"got starts {int(arr.min())}..{int(arr.max())} with periods {int(periods.min())}..{int(periods.max())}"
        )
    return arr.astype(np.int64)


def _check_periods(periods, batch, n):
    arr = np.asarray(periods)
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"periods must be integers, one per sequence: got dtype {arr.dtype}")
    if arr.ndim == 0:
        arr = np.full(batch, int(arr))
    if arr.shape != (batch,):
        raise ValueError(f"periods must have shape (batch,) = ({batch},): got periods.shape={arr.shape}")
    if arr.min() < 2 or arr.max() > n - 1:
        raise ValueError(
            f"periods must lie in 2..n-1 = 2..{n - 1} (something must repeat within n = {n}): "
            f"got values in {int(arr.min())}..{int(arr.max())}"
        )
    return arr.astype(np.int64)


def repeat_masks(periods, n, starts=0, gaps=0):
    """Which positions' next token the repeat makes predictable, and which are random.

    Parameters
    ----------
    periods : array_like of int, shape (B,)
    n : int
        Sequence length.
    starts : array_like of int, shape (B,), or int, default 0
        Where each segment starts (:func:`induction_task` returns them).
    gaps : array_like of int, shape (B,), or int, default 0
        Random tokens between the segment and its repeat
        (:func:`gapped_induction_task` returns them).

    Returns
    -------
    repeat : ndarray of bool, shape (B, n)
        ``s + p + g <= i <= s + 2p + g - 2``: the current token was seen
        ``p + g`` positions ago, and the next one is the token that followed it then.
    other : ndarray of bool, shape (B, n)
        Every other position that has a next token (``i <= n - 2``): its
        next token is a fresh random draw.

    Examples
    --------
    >>> repeat, other = repeat_masks([2], 7, starts=[1])
    >>> repeat.astype(int), other.astype(int)
    (array([[0, 0, 0, 1, 0, 0, 0]]), array([[1, 1, 1, 0, 1, 1, 0]]))
    """
    periods = np.asarray(periods)
    starts = np.broadcast_to(np.asarray(starts), periods.shape)[:, None]
    gaps = np.broadcast_to(np.asarray(gaps), periods.shape)[:, None]
    periods = periods[:, None]
    i = np.arange(n)[None, :]
    first = starts + periods + gaps  # the repeat's first position
    repeat = (i >= first) & (i <= first + periods - 2) & (i <= n - 2)
    return repeat, (i <= n - 2) & ~repeat


def _induction_batch_scores(weights, periods, starts, gaps=0):
    """Previous-token and induction scores (H,) of one layer's weights (B, H, n, n)."""
    B, H, n, _ = weights.shape
    prev = weights[:, :, np.arange(1, n), np.arange(0, n - 1)].mean(axis=(0, 2))  # (H,)
    i = np.arange(n)[None, :]
    distance = periods + np.broadcast_to(np.asarray(gaps), periods.shape)  # (B,)
    s, p, d = starts[:, None], periods[:, None], distance[:, None]
    rows = (i >= s + d) & (i <= s + d + p - 2)  # (B, n); i <= n - 1 by construction
    rows_b, rows_i = np.nonzero(rows)  # the predictable rows s + d <= i <= s + d + p - 2
    cols = rows_i - distance[rows_b] + 1
    induct = weights[rows_b, :, rows_i, cols].mean(axis=0)  # (R, H) -> (H,)
    return prev, induct


def head_scores(model, tokens, periods, starts=0, gaps=0):
    """How much each head behaves like a previous-token head and like an induction head.

    Parameters
    ----------
    model : AttentionOnlyTransformer
        Anything with ``attention_patterns(tokens) -> (B, L, H, n, n)``.
    tokens : array_like of int, shape (B, n)
        Repeated sequences, e.g. from :func:`induction_task`.
    periods : array_like of int, shape (B,)
        The period ``p`` of each sequence (``2 <= p <= n - 1``): positions
        ``s + p..s + 2p - 1`` repeat positions ``s..s + p - 1`` (cut off at
        ``n - 1`` when ``s + 2p > n``).
    starts : array_like of int, shape (B,), or int, default 0
        Where each segment starts, ``s``.
    gaps : array_like of int, shape (B,), or int, default 0
        Random tokens between the segment and its repeat, ``g``
        (:func:`gapped_induction_task`); the distance between the copies is ``d = p + g``.

    Returns
    -------
    dict
        ``"previous_token"``: ndarray (L, H), the mean weight query ``i``
        puts on key ``i - 1``, over every sequence and every ``i >= 1``.
        ``"induction"``: ndarray (L, H), the mean weight query ``i`` puts on
        key ``i - d + 1`` (the token that followed the earlier occurrence of
        the current token), over every sequence and every predictable
        position ``s + d <= i <= s + d + p - 2`` of the repeat (and ``i <= n - 1``).
        Both lie in [0, 1]; 1 means all of the weight, always.

    Examples
    --------
    >>> model = AttentionOnlyTransformer(16, 8, 2, 2, max_len=12)
    >>> tokens, periods, starts = induction_task(4, 12, 16, np.random.default_rng(0))
    >>> scores = head_scores(model, tokens, periods, starts)
    >>> scores["previous_token"].shape, scores["induction"].shape
    ((2, 2), (2, 2))
    """
    tokens = np.asarray(tokens)
    if tokens.ndim != 2:
        raise ValueError(f"tokens must have shape (batch, n): got tokens.shape={tokens.shape}")
    B, n = tokens.shape
    if n < 2:
        raise ValueError(f"tokens must have n >= 2 positions for the scores: got tokens.shape={tokens.shape}")
    periods = _check_periods(periods, B, n)
    gaps = _check_gaps(gaps, periods)
    starts = _check_starts(starts, periods, n, gaps)
    patterns = np.asarray(model.attention_patterns(tokens))  # (B, L, H, n, n)
    if patterns.ndim != 5 or patterns.shape[0] != B or patterns.shape[-2:] != (n, n):
        raise ValueError(
            f"model.attention_patterns must return shape (B, L, H, n, n) with B, n = {B}, {n}: "
            f"got {patterns.shape}"
        )
    L, H = patterns.shape[1:3]
    flat = patterns.reshape(B, L * H, n, n)
    prev, induct = _induction_batch_scores(flat, periods, starts, gaps)
    return {"previous_token": prev.reshape(L, H), "induction": induct.reshape(L, H)}


def repeat_loss_by_offset(model, offsets, period=6, batch=512, seed=0):
    """The loss on the repeat when the segment starts at each offset, as Olsson et al. (2022) test.

    For every offset ``s``, ``batch`` sequences of random tokens with one
    segment of length ``period`` at ``s``, repeated right after itself
    (:func:`induction_task` with ``start=s``); the loss is the mean
    cross-entropy over the predictable positions ``s + p..s + 2p - 2``. A head
    that reads the tokens does about as well at every offset; one that learnt
    the training layout does well only where that layout put the repeat.

    Parameters
    ----------
    model : AttentionOnlyTransformer
    offsets : sequence of int
        Each ``0 <= s <= max_len - 2 * period``.
    period : int, default 6
    batch : int, default 512
    seed : int, default 0
        Every offset uses ``np.random.default_rng([seed, s])``.

    Returns
    -------
    ndarray, shape (len(offsets),)
        In nats; ``log(vocab_size)`` is a uniform guess.

    Examples
    --------
    >>> model = AttentionOnlyTransformer(16, 8, 2, 2, max_len=24)
    >>> repeat_loss_by_offset(model, [0, 4], batch=8).shape
    (2,)
    """
    n = model.max_len
    out = []
    for s in offsets:
        tokens, periods, starts = induction_task(
            batch, n, model.vocab_size, np.random.default_rng([seed, int(s)]), period, period, start=int(s)
        )
        repeat, _ = repeat_masks(periods, n, starts)
        out.append(model.loss(tokens, np.roll(tokens, -1, axis=1), repeat))
    return np.array(out)


def distance_task(batch, seq_len, vocab_size, distance, gap, rng, segment=4):
    """Fresh random tokens with one segment repeated ``distance`` positions later, anywhere.

    Without a gap the segment is ``distance`` tokens long and its repeat
    follows it at once; with one, the segment is ``min(segment, distance - 1)``
    tokens long and random tokens fill the rest of the distance. The start is
    drawn per sequence, uniformly over every position where both copies fit.

    Returns
    -------
    tokens : ndarray of int64, shape (batch, seq_len)
    periods, starts, gaps : ndarray of int64, shape (batch,)
        As from :func:`gapped_induction_task` (``periods + gaps == distance``).

    Examples
    --------
    >>> tokens, periods, starts, gaps = distance_task(2, 24, 16, 10, True, np.random.default_rng(0))
    >>> periods.tolist(), gaps.tolist()
    ([4, 4], [6, 6])
    """
    batch, seq_len, vocab_size = (_positive_int(v, name) for v, name in
                                  ((batch, "batch"), (seq_len, "seq_len"), (vocab_size, "vocab_size")))
    distance, segment = _positive_int(distance, "distance"), _positive_int(segment, "segment")
    period = min(segment, distance - 1) if gap else distance
    if period < 2 or distance + period > seq_len:
        raise ValueError(
            f"distance must leave a segment of at least 2 tokens and fit twice: got distance={distance}, "
            f"gap={bool(gap)}, seq_len={seq_len} (segment {period}, needs distance + segment <= seq_len)"
        )
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    periods = np.full(batch, period)
    gaps = np.full(batch, distance - period)
    starts = rng.integers(0, seq_len - distance - period + 1, size=batch)
    tokens = rng.integers(0, vocab_size, size=(batch, seq_len))
    i = np.arange(seq_len)[None, :]
    s = starts[:, None]
    in_repeat = (i >= s + distance) & (i < s + distance + period)
    tokens = np.take_along_axis(tokens, np.where(in_repeat, i - distance, i), axis=1)
    return tokens.astype(np.int64), periods.astype(np.int64), starts.astype(np.int64), gaps.astype(np.int64)


def longest_distance(seq_len, gap, segment=4):
    """The longest distance :func:`distance_task` fits into ``seq_len`` (without a gap ``seq_len // 2``)."""
    return seq_len - segment if gap else seq_len // 2


def repeat_loss_by_distance(model, distances, gap, segment=4, batch=512, seed=0):
    """The loss on the repeat at each distance between the two copies, on fresh random tokens.

    For every distance ``d``, ``batch`` sequences of :func:`distance_task`
    (segment and repeat ``d`` apart, with or without a gap of random tokens,
    anywhere in the context); the loss is the mean cross-entropy over the
    predictable positions of the repeat (:func:`repeat_masks`). A head that
    reads the tokens does about as well at every distance; one that learnt a
    window of distances does well only inside it.

    Parameters
    ----------
    model : AttentionOnlyTransformer
    distances : sequence of int
        Each fits: ``d <= max_len // 2`` without a gap, ``d + min(segment, d - 1) <= max_len`` with one.
    gap : bool
    segment : int, default 4
        The segment's length when there is a gap.
    batch : int, default 512
    seed : int, default 0
        Distance ``d`` uses ``np.random.default_rng([seed, d, gap])``.

    Returns
    -------
    ndarray, shape (len(distances),)
        In nats; ``log(vocab_size)`` is a uniform guess.

    Examples
    --------
    >>> model = AttentionOnlyTransformer(16, 8, 2, 2, max_len=24)
    >>> repeat_loss_by_distance(model, [4, 12], gap=False, batch=8).shape
    (2,)
    """
    n = model.max_len
    out = []
    for d in distances:
        tokens, periods, starts, gaps = distance_task(
            batch, n, model.vocab_size, int(d), gap, np.random.default_rng([seed, int(d), int(bool(gap))]), segment
        )
        repeat, _ = repeat_masks(periods, n, starts, gaps)
        out.append(model.loss(tokens, np.roll(tokens, -1, axis=1), repeat))
    return np.array(out)


COMPOSITION_PATHS = ("query", "key", "value")


def hide_head(model, tokens, head, paths):
    """Logits and patterns when one head's output is hidden from the later layers' queries, keys or values.

    A head of a later layer can use an earlier head's output through its
    queries (*Q-composition*), its keys (*K-composition*) or its values
    (*V-composition*) (Elhage et al., 2021). To tell them apart, this
    recomputes every layer after ``head``'s with that head's direct
    contribution (its output times its slice of ``W_O``) subtracted from the
    residual stream that forms the named inputs; everything else, including
    the head's direct path to the logits, is the unablated model's.

    Parameters
    ----------
    model : AttentionOnlyTransformer
    tokens : array_like of int, shape (B, n)
    head : (layer, head)
        The head whose output is hidden.
    paths : iterable of {"query", "key", "value"}
        Which inputs of the later layers lose it.

    Returns
    -------
    logits : ndarray, shape (B, n, V)
    patterns : ndarray, shape (B, L, H, n, n)
        As :meth:`AttentionOnlyTransformer.attention_patterns`; the layers up
        to ``head``'s own are unchanged.

    Raises
    ------
    ValueError
        If ``paths`` names something else or nothing, or ``head`` is out of range.

    Examples
    --------
    >>> model = AttentionOnlyTransformer(16, 8, 2, 2, max_len=12)
    >>> logits, patterns = hide_head(model, np.array([[1, 2, 3, 1]]), (0, 1), ["value"])
    >>> logits.shape, patterns.shape
    ((1, 4, 16), (1, 2, 2, 4, 4))
    """
    paths = (paths,) if isinstance(paths, str) else tuple(paths)
    if not paths or any(path not in COMPOSITION_PATHS for path in paths):
        raise ValueError(f"paths must be one or more of 'query', 'key', 'value': got {paths!r}")
    (layer0, h0), = _check_ablate([head], model.n_layers, model.n_heads)
    _, cache = model.forward(tokens)
    p = model.params
    direct = cache["z"][layer0][:, h0] @ p["W_O"][layer0, h0]  # (B, n, e) x (e, d) -> (B, n, d)
    weights = list(cache["weights"])
    x = cache["resid"][layer0 + 1]  # (B, n, d), the unablated residual stream
    for layer in range(layer0 + 1, model.n_layers):
        inputs = [x - direct if path in paths else x for path in COMPOSITION_PATHS]
        q, k, v = (np.einsum("bnd,hde->bhne", x_in, p[w][layer])  # (B, H, n, e)
                   for x_in, w in zip(inputs, ("W_Q", "W_K", "W_V")))
        z, weights[layer] = scaled_dot_product_attention(q, k, v, causal=True)  # (B, H, n, e), (B, H, n, n)
        x = x + np.einsum("bhne,hed->bnd", z, p["W_O"][layer])  # (B, n, d)
    return x @ p["W_U"], np.stack(weights, axis=1)


def composition_patterns(model, tokens, head, path):
    """Attention patterns when one head's output is hidden from the later layers' queries or keys.

    :func:`hide_head`'s patterns, with ``path="both"`` for the queries and the
    keys together. With ``"both"`` in a two-layer model this equals
    ``model.attention_patterns(tokens, ablate=[head])``.

    Parameters
    ----------
    model : AttentionOnlyTransformer
    tokens : array_like of int, shape (B, n)
    head : (layer, head)
        The head whose output is hidden.
    path : {"query", "key", "both"}
        Which input of the later layers loses it.

    Returns
    -------
    ndarray, shape (B, L, H, n, n)

    Raises
    ------
    ValueError
        If ``path`` is not one of the three names, or ``head`` is out of range.

    Examples
    --------
    >>> model = AttentionOnlyTransformer(16, 8, 2, 2, max_len=12)
    >>> composition_patterns(model, np.array([[1, 2, 3, 1]]), (0, 1), "key").shape
    (1, 2, 2, 4, 4)
    """
    if path not in ("query", "key", "both"):
        raise ValueError(f"path must be 'query', 'key' or 'both': got {path!r}")
    return hide_head(model, tokens, head, ("query", "key") if path == "both" else (path,))[1]


def loss_from_logits(logits, targets, mask=None):
    """Mean cross-entropy of ``targets`` under ``logits`` over the positions in ``mask``.

    Parameters
    ----------
    logits : ndarray, shape (B, n, V)
    targets : array_like of int, shape (B, n)
    mask : array_like of bool, shape (B, n), optional
        True = counts in the mean; all positions by default.

    Returns
    -------
    float
        In nats (NaN if the mask selects nothing).

    Examples
    --------
    >>> round(loss_from_logits(np.zeros((1, 2, 4)), np.array([[0, 3]])), 4) == round(math.log(4), 4)
    True
    """
    logits = np.asarray(logits)
    targets = np.asarray(targets)
    if logits.ndim != 3 or targets.shape != logits.shape[:2]:
        raise ValueError(
            f"logits must have shape (B, n, V) and targets (B, n): got logits.shape={logits.shape}, "
            f"targets.shape={targets.shape}"
        )
    mask = np.ones(targets.shape, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    return _masked_mean(_cross_entropy(logits, targets), mask)


def ov_circuit(model, layer, head):
    """What one head writes to the logits for each token it attends to: ``W_E W_V W_O W_U``.

    Row ``a`` is the change in the 16 logits when the head puts all its weight
    on a position holding token ``a`` (through the token embedding only). A
    head that *copies* raises the logit of the token it attends to: the
    diagonal wins its row (Elhage et al., 2021, call this the OV circuit).

    Parameters
    ----------
    model : AttentionOnlyTransformer
    layer, head : int

    Returns
    -------
    ndarray, shape (V, V)
        ``[a, b]``: the logit of ``b`` from attending to ``a``.

    Examples
    --------
    >>> ov_circuit(AttentionOnlyTransformer(16, 8, 2, 2, max_len=12), 1, 0).shape
    (16, 16)
    """
    p = model.params
    (layer, head), = _check_ablate([(layer, head)], model.n_layers, model.n_heads)
    return p["W_E"] @ p["W_V"][layer, head] @ p["W_O"][layer, head] @ p["W_U"]  # (V, d)(d, e)(e, d)(d, V)


def qk_circuit_through(model, head, previous):
    """The attention score of a layer-1 head between a query token and the token *before* a key.

    K-composition read from the weights: the key side is the previous-token
    head's output for a position holding ``b`` (``W_E W_V W_O`` of
    ``previous``), seen by ``head``'s keys; the query side is the token
    embedding seen by ``head``'s queries. An induction head scores highest
    where the key's predecessor is the query's own token: the diagonal wins.

    Parameters
    ----------
    model : AttentionOnlyTransformer
    head : (layer, head)
        The later head (its queries and keys).
    previous : (layer, head)
        The earlier head whose output its keys read.

    Returns
    -------
    ndarray, shape (V, V)
        ``[a, b]``: the score (divided by sqrt(d_head)) of a query holding
        ``a`` for a key whose predecessor held ``b``.

    Examples
    --------
    >>> model = AttentionOnlyTransformer(16, 8, 2, 2, max_len=12)
    >>> qk_circuit_through(model, (1, 0), (0, 1)).shape
    (16, 16)
    """
    (l1, h1), (l0, h0) = _check_ablate([head, previous], model.n_layers, model.n_heads)
    p = model.params
    query = p["W_E"] @ p["W_Q"][l1, h1]  # (V, e)
    key = p["W_E"] @ p["W_V"][l0, h0] @ p["W_O"][l0, h0] @ p["W_K"][l1, h1]  # (V, e)
    return query @ key.T / math.sqrt(model.d_head)  # (V, V)


def qk_circuit(model, head, query_from=None, key_from=None):
    """A later head's token-by-token attention score, each side read straight or through an earlier head.

    Each side is a token's embedding ``W_E`` (``None``) or what an earlier
    head writes when it attends to a position holding that token (its OV
    output ``W_E W_V W_O``). ``key_from=previous`` with ``query_from=None`` is
    :func:`qk_circuit_through` (K-composition); ``query_from`` set reads the
    query side through an earlier head too (Q-composition): with both sides
    through earlier heads, row ``a`` is the token that head saw from the
    query and column ``b`` the one it saw from the key.

    Parameters
    ----------
    model : AttentionOnlyTransformer
    head : (layer, head)
        The later head (its queries and keys).
    query_from, key_from : (layer, head) or None
        The earlier head each side reads, or None for the token embedding.

    Returns
    -------
    ndarray, shape (V, V)
        ``[a, b]``: the score (divided by sqrt(d_head)).

    Examples
    --------
    >>> model = AttentionOnlyTransformer(16, 8, 2, 2, max_len=12)
    >>> np.allclose(qk_circuit(model, (1, 0), key_from=(0, 1)), qk_circuit_through(model, (1, 0), (0, 1)))
    True
    """
    (l1, h1), = _check_ablate([head], model.n_layers, model.n_heads)
    p = model.params

    def side(source, w):
        if source is None:
            return p["W_E"] @ p[w][l1, h1]  # (V, d)(d, e)
        (l0, h0), = _check_ablate([source], model.n_layers, model.n_heads)
        return p["W_E"] @ p["W_V"][l0, h0] @ p["W_O"][l0, h0] @ p[w][l1, h1]  # (V, e)

    return side(query_from, "W_Q") @ side(key_from, "W_K").T / math.sqrt(model.d_head)  # (V, V)


def positional_qk(model, layer, head):
    """A head's attention score from the positional embeddings alone: ``W_pos W_Q (W_pos W_K)^T / sqrt(e)``.

    Row ``i`` is the query position, column ``j`` the key position; above the
    diagonal (the future) it is ``-inf``, as the causal mask makes it. A
    previous-token head scores ``j = i - 1`` highest in every row.

    Returns
    -------
    ndarray, shape (max_len, max_len)

    Examples
    --------
    >>> positional_qk(AttentionOnlyTransformer(16, 8, 2, 2, max_len=5), 0, 1).shape
    (5, 5)
    """
    (layer, head), = _check_ablate([(layer, head)], model.n_layers, model.n_heads)
    p = model.params
    scores = (p["W_pos"] @ p["W_Q"][layer, head]) @ (p["W_pos"] @ p["W_K"][layer, head]).T / math.sqrt(model.d_head)
    n = model.max_len
    return np.where(np.tril(np.ones((n, n), dtype=bool)), scores, -np.inf)


def direct_logit_attribution(model, tokens, mask):
    """How much each head's output, read straight out by ``W_U``, raises the correct next token.

    At each position in ``mask``, the head's contribution to the logits
    (``z W_O W_U``) is taken at the correct next token ``tokens[i + 1]``,
    minus its mean over the vocabulary (a constant added to every logit
    changes no probability); the result is averaged over the positions.

    Parameters
    ----------
    model : AttentionOnlyTransformer
    tokens : array_like of int, shape (B, n)
    mask : array_like of bool, shape (B, n)
        The positions to average over (position ``n - 1`` has no next token
        and must be False).

    Returns
    -------
    ndarray, shape (L, H)
        In logits (nats of log-odds); positive = the head pushes the right answer up.
        NaN if the mask selects nothing.

    Examples
    --------
    >>> model = AttentionOnlyTransformer(16, 8, 2, 2, max_len=12)
    >>> tokens = np.array([[1, 2, 3, 1, 2, 3]])
    >>> repeat = np.array([[False, False, False, True, True, False]])  # the second 1 and 2
    >>> direct_logit_attribution(model, tokens, repeat).shape
    (2, 2)
    """
    _, cache = model.forward(tokens)
    tokens = cache["tokens"]
    mask = np.asarray(mask, dtype=bool)
    if mask.shape != tokens.shape or mask[:, -1].any():
        raise ValueError(
            f"mask must have the shape of tokens {tokens.shape} and be False at the last position: "
            f"got mask.shape={mask.shape}"
        )
    p = model.params
    b, i = np.nonzero(mask)
    out = np.full((model.n_layers, model.n_heads), np.nan)
    if not len(b):
        return out
    nxt = tokens[b, i + 1]
    for layer in range(model.n_layers):
        for h in range(model.n_heads):
            logits = cache["z"][layer][b, h, i] @ p["W_O"][layer, h] @ p["W_U"]  # (R, e)(e, d)(d, V) -> (R, V)
            out[layer, h] = (logits[np.arange(len(b)), nxt] - logits.mean(axis=1)).mean()
    return out


# ---------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------


def _loss_weights(repeat, first, repeat_weight, first_weight):
    """Each position's weight in the training loss (B, n): 1 where the next token is random,
    ``repeat_weight`` inside the repeat, and ``repeat_weight * first_weight`` at the repeat's
    first predictable position (``first``, (B,))."""
    weights = np.where(repeat, repeat_weight, 1.0)
    at_first = repeat & (np.arange(repeat.shape[1])[None, :] == np.asarray(first)[:, None])
    if np.ndim(first_weight):  # one factor per sequence
        weights = np.where(at_first, weights * np.asarray(first_weight, dtype=float)[:, None], weights)
    else:
        weights[at_first] *= first_weight
    return weights


def train_induction(
    seed=0,
    steps=None,
    *,
    vocab_size=16,
    d_model=64,
    n_layers=2,
    n_heads=4,
    seq_len=24,
    batch=32,
    lr=1e-2,
    min_period=3,
    max_period=12,
    start="random",
    gap_share=0.8,
    balance=0.25,
    lr_end=1e-3,
    repeat_weight=4.0,
    first_weight=6.0,
    gap_max_period=None,
    gap_first_weight=None,
    placement=0.5,
    progress=False,
    progress_every=100,
    dtype=np.float32,
):
    """Train an :class:`AttentionOnlyTransformer` on :func:`induction_task` with Adam.

    Every step draws a fresh batch of repeated sequences and minimises the
    mean cross-entropy of predicting ``tokens[:, i + 1]`` at every position
    ``i`` but the last, the repeat's positions weighted up (``repeat_weight``,
    ``first_weight``). With the defaults (:data:`TRAINING_CONFIG`, 4,500
    steps) that takes about 50-55 s of CPU on one thread. Deterministic for
    a given seed with one BLAS thread on one machine; another CPU's BLAS (or
    another NumPy) sums in another order, so retraining there matches only
    to within a tolerance (``RETRAIN_TOLERANCE`` in the tests, 2e-3), not
    bit for bit.

    Parameters
    ----------
    seed : int, default 0
        Seeds the initial weights (``seed``) and the batches
        (``np.random.default_rng([seed, 1])``).
    steps : int, optional
        Number of Adam steps; ``TRAINING_CONFIG["steps"]`` by default.
    vocab_size, d_model, n_layers, n_heads : int
        The model (``max_len = seq_len``).
    seq_len, batch, min_period, max_period : int
        The task.
    start : "random" or int, default "random"
        Where the segments start (see :func:`induction_task`); ``0`` is the
        layout the first stored model was trained on. Must be "random" when
        ``gap_share > 0``.
    balance : float in [0, 1], default 0.25
        Passed to :func:`gapped_induction_task`: how much the draws even out
        the share of the loss each distance between the copies gets.
    lr_end : float or None, default 1e-3
        The learning rate falls from ``lr`` at step 0 to ``lr_end`` on a
        cosine, ``lr_end + (lr - lr_end) * (1 + cos(pi * step / steps)) / 2``;
        ``None`` keeps ``lr`` throughout (the models stored before).
    repeat_weight : float, default 4.0
        The weight of each predictable position of the repeat in the
        training loss, against 1 for a position whose next token is random:
        the loss is ``sum(w * loss) / sum(w)`` over the positions. Random
        positions teach the model only not to copy; weighted down, they let
        the induction heads copy with more confidence. ``1`` (with
        ``first_weight=1``): the plain mean, the models stored before.
    first_weight : float, default 6.0
        A further factor at the repeat's first predictable position, where
        only the current token matches the earlier copy (its predecessor
        does not), so the heads must learn to match one token as well as two.
    gap_max_period : int, optional
        Passed to :func:`gapped_induction_task`: the longest period of a
        sequence with a gap (``max_period`` by default).
    placement : float in [0, 1], default 0.5
        Passed to :func:`gapped_induction_task`.
    gap_first_weight : float, optional
        ``first_weight`` for the sequences with a gap only (by default
        ``first_weight`` for every sequence).
    gap_share : float in [0, 1], default 0.8
        Above 0, every batch comes from :func:`gapped_induction_task`: that
        share of the sequences has random tokens between the segment and its
        repeat, and distances cover the whole context. ``0``: batches from
        :func:`induction_task` (the repeat straight after the segment), the
        layout of the models stored before.
    lr : float
        Adam's learning rate.
    progress : bool, default False
        Print one line every ``progress_every`` steps (step, loss, loss on
        the repeat, best induction score).
    progress_every : int, default 100
    dtype : float32 or float64

    Returns
    -------
    model : AttentionOnlyTransformer
    history : dict of str to ndarray
        One entry per step, measured on that step's training batch before
        the update:

        - ``"step"`` (steps,): 0, 1, ...;
        - ``"loss"`` (steps,): the mean loss over every position but the
          last, unweighted (the training minimises the weighted one);
        - ``"repeat_loss"`` (steps,): the loss on the predictable part of the
          repeat (positions ``s + d <= i <= s + d + p - 2``, see :func:`repeat_masks`);
        - ``"other_loss"`` (steps,): the loss on every other position, whose
          next token is random (``log(vocab_size)`` at best);
        - ``"position_loss"`` (steps, seq_len - 1): the loss at each position
          ``i`` (predicting token ``i + 1``), averaged over the batch: how much
          a longer context helps (the *in-context learning score* compares a
          late position with an early one);
        - ``"previous_token"``, ``"induction"`` (steps, L, H): the head
          scores of :func:`head_scores` on that batch.
    """
    steps = TRAINING_CONFIG["steps"] if steps is None else _positive_int(steps, "steps")
    if lr_end is not None and not _finite_float(lr_end, "lr_end") > 0:
        raise ValueError(f"lr_end must be a finite number > 0 or None: got {lr_end!r}")
    progress_every = _positive_int(progress_every, "progress_every")
    model = AttentionOnlyTransformer(vocab_size, d_model, n_layers, n_heads, max_len=seq_len, seed=seed, dtype=dtype)
    optimiser = Adam(model.params, lr=lr)
    rng = np.random.default_rng([seed, 1])
    L, H = model.n_layers, model.n_heads
    history = {
        "step": np.arange(steps),
        "loss": np.empty(steps),
        "repeat_loss": np.empty(steps),
        "other_loss": np.empty(steps),
        "position_loss": np.empty((steps, seq_len - 1)),
        "previous_token": np.empty((steps, L, H)),
        "induction": np.empty((steps, L, H)),
    }
    mask = np.ones((batch, seq_len), dtype=bool)
    mask[:, -1] = False
    clock = time.process_time()
    gapped = gap_share > 0
    if gapped and start != "random":
        raise ValueError(f"start must be 'random' when gap_share > 0: got start={start!r}")
    for step in range(steps):
        if gapped:
            tokens, periods, starts, gaps = gapped_induction_task(
                batch, seq_len, vocab_size, rng, min_period, max_period, gap_share, balance, gap_max_period, placement
            )
        else:
            tokens, periods, starts = induction_task(batch, seq_len, vocab_size, rng, min_period, max_period, start)
            gaps = np.zeros_like(periods)
        targets = np.empty_like(tokens)
        targets[:, :-1] = tokens[:, 1:]
        targets[:, -1] = 0
        repeat, other = repeat_masks(periods, seq_len, starts, gaps)
        weights = None
        factor = first_weight if gap_first_weight is None else np.where(gaps > 0, gap_first_weight, first_weight)
        if np.any(factor != 1.0) or repeat_weight != 1.0:
            weights = _loss_weights(repeat, starts + periods + gaps, repeat_weight, factor)
        loss, grads, cache, per_position = model._loss_and_grads(tokens, targets, mask, None, weights)
        if lr_end is not None:  # cosine decay from lr to lr_end
            optimiser.lr = lr_end + 0.5 * (lr - lr_end) * (1 + math.cos(math.pi * step / steps))
        optimiser.step(grads)
        history["loss"][step] = loss if weights is None else per_position[mask].mean()
        history["repeat_loss"][step] = per_position[repeat].mean()
        history["other_loss"][step] = per_position[other].mean()
        history["position_loss"][step] = per_position[:, :-1].mean(axis=0)
        for layer, weights in enumerate(cache["weights"]):
            prev, induct = _induction_batch_scores(weights, periods, starts, gaps)
            history["previous_token"][step, layer] = prev
            history["induction"][step, layer] = induct
        if progress and (step % progress_every == 0 or step == steps - 1):
            print(
                f"step {step:5d}/{steps}  loss {loss:.3f}  repeat {history['repeat_loss'][step]:.3f}  "
                f"best induction score {history['induction'][step].max():.2f}",
                flush=True,
            )
    model.train_seconds = time.process_time() - clock
    return model, history


# ---------------------------------------------------------------------------
# The stored trained model (package data)
# ---------------------------------------------------------------------------


def save_induction_model(model, history, path, *, seed, config, cpu_seconds=None):
    """Write a trained model, its history and how it was made to one ``.npz`` file.

    Parameters
    ----------
    model : AttentionOnlyTransformer
    history : dict of str to ndarray
        As returned by :func:`train_induction`.
    path : str or path-like
    seed : int
        The seed passed to :func:`train_induction`.
    config : dict
        Its other arguments (JSON-serialisable).
    cpu_seconds : float, optional
        The training's process CPU time (``model.train_seconds``), stored as
        ``metadata["train_cpu_seconds"]`` rounded to 0.1 s: a measurement of
        the machine that trained it, not part of the recipe.

    Notes
    -----
    Keys: ``param/<name>`` (float32), ``history/<key>`` (float32, ``step``
    int32) and ``metadata``, a JSON string with the seed, the config, the
    model's shape and :data:`RECIPE`.
    """
    metadata = {"seed": int(seed), "config": dict(config), "model": model.config, "recipe": RECIPE}
    if cpu_seconds is not None:
        metadata["train_cpu_seconds"] = round(float(cpu_seconds), 1)
    arrays = {f"param/{name}": w.astype(np.float32) for name, w in model.params.items()}
    for key, values in history.items():
        arrays[f"history/{key}"] = np.asarray(values).astype(np.int32 if key == "step" else np.float32)
    arrays["metadata"] = np.array(json.dumps(metadata, sort_keys=True))
    np.savez_compressed(path, **arrays)


def _read_model_file(source):
    with np.load(source, allow_pickle=False) as data:
        metadata = json.loads(str(data["metadata"]))
        params = {key.split("/", 1)[1]: data[key] for key in data.files if key.startswith("param/")}
        history = {key.split("/", 1)[1]: data[key] for key in data.files if key.startswith("history/")}
    model = AttentionOnlyTransformer(**metadata["model"], seed=metadata["seed"])
    for name, w in params.items():
        if model.params[name].shape != w.shape:
            raise ValueError(f"stored {name} has shape {w.shape}, the model expects {model.params[name].shape}")
        model.params[name][...] = w
    model.metadata = metadata
    return model, history


def load_trained_induction_model(start="random"):
    """The model :func:`train_induction` made with the stored seed and config, and its history.

    Read from the package data ``helpers/data/induction_model.npz`` with
    :mod:`importlib.resources`; no training, no network.

    Parameters
    ----------
    start : "random" or 0, default "random"
        ``"random"``: the stored model, trained with the repeat anywhere
        (:data:`TRAINING_CONFIG`). ``0``: the first stored model
        (``induction_model_start0.npz``), trained for 1,000 steps with every
        segment at position 0; its metadata holds its own config and recipe.

    Returns
    -------
    model : AttentionOnlyTransformer
        With an extra attribute ``metadata``: ``{"seed", "config", "model",
        "recipe"}`` and, for the stored model, ``"train_cpu_seconds"`` (see
        :func:`save_induction_model`).
    history : dict of str to ndarray
        As returned by :func:`train_induction` (float32).

    Examples
    --------
    >>> model, history = load_trained_induction_model()
    >>> model.metadata["seed"], model.n_layers, model.n_heads, len(history["loss"])
    (0, 2, 4, 4500)
    """
    from importlib import resources

    files = {"random": DATA_FILE, 0: START0_FILE}
    if isinstance(start, (bool, np.bool_)) or start not in files:
        raise ValueError(f"start must be 'random' or 0 (the two stored models): got {start!r}")
    with resources.as_file(resources.files("helpers") / "data" / files[start]) as path:
        return _read_model_file(path)


def retrain_induction_model(path=None, *, seed=0, progress=False):
    """Retrain the stored model from :data:`TRAINING_CONFIG` with one BLAS thread, and save it.

    Parameters
    ----------
    path : str or path-like, optional
        Where to write; the package's ``helpers/data/induction_model.npz``
        by default (run from a source checkout).
    seed : int, default 0
    progress : bool, default False

    Returns
    -------
    model, history
        As from :func:`train_induction`.
    """
    from pathlib import Path

    from threadpoolctl import threadpool_limits

    config = dict(TRAINING_CONFIG)
    with threadpool_limits(limits=1):
        model, history = train_induction(seed=seed, progress=progress, **config)
    if path is None:
        path = Path(__file__).resolve().parent / "data" / DATA_FILE
    save_induction_model(model, history, path, seed=seed, config=config, cpu_seconds=model.train_seconds)
    return model, history


if __name__ == "__main__":  # python -m helpers.transformer: retrain the stored model
    retrain_induction_model(progress=True)
