"""Hidden tests of E6 (instructor only): both backward passes on other shapes.

The reference is the chain rule written out with NumPy here, and checked against
central finite differences of the forward pass inside the test itself.
"""


def hidden_attention_backward(attention_backward):
    import numpy as np

    def close(got, want, rtol=1e-6, atol=1e-9):
        """A float32 answer is held to float32's precision (its inputs alone are rounded to 6e-8)."""
        if np.asarray(got).dtype == np.float32:
            rtol, atol = max(rtol, 5e-3), max(atol, 1e-5)
        return np.allclose(np.asarray(got, dtype=float), want, rtol=rtol, atol=atol)

    def forward(q, k, v):
        s = q @ k.T / np.sqrt(q.shape[-1])
        p = np.exp(s - s.max(axis=-1, keepdims=True))
        return p / p.sum(axis=-1, keepdims=True) @ v

    def numeric(q, k, v, d_out, which, h=1e-6):
        args = [q, k, v]
        grad = np.zeros_like(args[which])
        for idx in np.ndindex(grad.shape):
            up = [a.copy() for a in args]
            down = [a.copy() for a in args]
            up[which][idx] += h
            down[which][idx] -= h
            grad[idx] = ((forward(*up) - forward(*down)) * d_out).sum() / (2 * h)
        return grad

    rng = np.random.default_rng(60_281)
    # (n, m, d_k, d_v, scale of q and k): a single token, n < m, n > m and d_k != d_v, large scores
    for n, m, d_k, d_v, size in ((1, 1, 2, 3, 1.0), (2, 5, 3, 4, 1.0), (5, 3, 4, 2, 1.0), (3, 4, 2, 3, 40.0)):
        q = rng.normal(size=(n, d_k)) * size
        k = rng.normal(size=(m, d_k)) * size
        v = rng.normal(size=(m, d_v))
        d_out = rng.normal(size=(n, d_v))
        got = attention_backward(q.copy(), k.copy(), v.copy(), d_out.copy())
        assert len(got) == 3, "attention_backward should return (d_q, d_k, d_v)"
        for which, name in enumerate(("d_q", "d_k", "d_v")):
            value = got[which]
            want = numeric(q, k, v, d_out, which)
            assert np.shape(value) == want.shape, f"n={n}, m={m}, d_k={d_k}, d_v={d_v}: {name} shape {np.shape(value)}"
            assert np.all(np.isfinite(np.asarray(value, dtype=float))), f"n={n}, m={m}: {name} not finite (overflow?)"
            assert close(value, want, rtol=1e-4, atol=1e-6), f"n={n}, m={m}, d_k={d_k}, d_v={d_v}: {name} wrong"


def hidden_masked_backward(masked_backward):
    import numpy as np

    def close(got, want, rtol=1e-6, atol=1e-9):
        """A float32 answer is held to float32's precision (its inputs alone are rounded to 6e-8)."""
        if np.asarray(got).dtype == np.float32:
            rtol, atol = max(rtol, 5e-3), max(atol, 1e-5)
        return np.allclose(np.asarray(got, dtype=float), want, rtol=rtol, atol=atol)

    def weights(q, k, mask):
        s = np.where(mask, q @ k.T / np.sqrt(q.shape[-1]), -np.inf)
        p = np.zeros(s.shape)
        for i in range(s.shape[0]):
            if mask[i].any():
                e = np.exp(s[i] - s[i].max())
                p[i] = e / e.sum()
        return p

    def numeric(q, k, v, d_out, mask, which, h=1e-6):
        args = [q, k, v]
        grad = np.zeros_like(args[which])
        for idx in np.ndindex(grad.shape):
            up = [a.copy() for a in args]
            down = [a.copy() for a in args]
            up[which][idx] += h
            down[which][idx] -= h
            diff = weights(up[0], up[1], mask) @ up[2] - weights(down[0], down[1], mask) @ down[2]
            grad[idx] = (diff * d_out).sum() / (2 * h)
        return grad

    rng = np.random.default_rng(60_282)
    for n, m, d_k, d_v, size in ((1, 1, 2, 3, 1.0), (3, 5, 3, 2, 1.0), (5, 3, 2, 4, 1.0), (4, 4, 3, 3, 40.0)):
        q = rng.normal(size=(n, d_k)) * size
        k = rng.normal(size=(m, d_k)) * size
        v = rng.normal(size=(m, d_v))
        d_out = rng.normal(size=(n, d_v))
        mask = rng.random((n, m)) < 0.6
        mask[0] = True
        if n > 1:
            mask[-1] = False                    # a query that sees no key passes no gradient
        if m > 1:
            mask[:, -1] = False                 # a key no query attends to gets dK = dV = 0
        got = masked_backward(q.copy(), k.copy(), v.copy(), d_out.copy(), mask.copy())
        assert len(got) == 3, "masked_backward should return (d_q, d_k, d_v)"
        for which, name in enumerate(("d_q", "d_k", "d_v")):
            value = got[which]
            want = numeric(q, k, v, d_out, mask, which)
            assert np.shape(value) == want.shape, f"n={n}, m={m}, d_k={d_k}, d_v={d_v}: {name} shape {np.shape(value)}"
            assert np.all(np.isfinite(np.asarray(value, dtype=float))), f"n={n}, m={m}: {name} is not finite"
            assert close(value, want, rtol=1e-4, atol=1e-6), f"n={n}, m={m}, d_k={d_k}, d_v={d_v}: {name} wrong"
