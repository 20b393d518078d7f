"""Hidden tests of E5 (instructor only): the stable softmax and masked attention on other shapes."""


def hidden_stable_softmax(my_softmax):
    import numpy as np

    def close(got, want, rtol=1e-6, atol=1e-9):
        """A float32 answer is held to float32's precision (its inputs alone are rounded to 6e-8)."""
        if np.asarray(got).dtype == np.float32:
            rtol, atol = max(rtol, 5e-3), max(atol, 1e-5)
        return np.allclose(np.asarray(got, dtype=float), want, rtol=rtol, atol=atol)

    rng = np.random.default_rng(50_271)
    cases = [
        rng.normal(size=(1, 1)),                                  # a single logit
        rng.normal(size=(5,)) * 3,                                # one row, 1-D
        rng.normal(size=(3, 7)) * 1e4,                            # logits of 1e4: exp alone overflows
        np.array([[-1e4, 0.0, 1e4], [2.0, 2.0, 2.0]]),            # rows of very different size
        rng.normal(size=(2, 3, 4)) * 50 + 600,                    # batch axes, exp(600+) overflows
    ]
    for x in cases:
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        want = e / e.sum(axis=-1, keepdims=True)
        got = my_softmax(x.copy())
        assert np.shape(got) == x.shape, f"input shape {x.shape}: output shape {np.shape(got)}"
        assert np.all(np.isfinite(np.asarray(got, dtype=float))), f"input shape {x.shape}: not finite (overflow?)"
        assert close(got, want, atol=1e-12), f"input shape {x.shape}: wrong values"


def hidden_masked_attention(masked_attention):
    import numpy as np

    def close(got, want, rtol=1e-6, atol=1e-9):
        """A float32 answer is held to float32's precision (its inputs alone are rounded to 6e-8)."""
        if np.asarray(got).dtype == np.float32:
            rtol, atol = max(rtol, 5e-3), max(atol, 1e-5)
        return np.allclose(np.asarray(got, dtype=float), want, rtol=rtol, atol=atol)

    def reference(q, k, v, mask):
        s = np.where(mask, q @ k.T / np.sqrt(q.shape[-1]), -np.inf)   # (n, m)
        out = np.zeros((q.shape[0], v.shape[-1]))
        for i in range(q.shape[0]):                                 # one query row at a time
            if mask[i].any():
                e = np.exp(s[i] - s[i].max())
                out[i] = e / e.sum() @ v
        return out

    rng = np.random.default_rng(50_272)
    # (n, m, d_k, d_v, scale of q): a single token, n < m, n > m, logits of about 1e4
    for n, m, d_k, d_v, size in ((1, 1, 2, 3, 1.0), (2, 5, 3, 4, 1.0), (6, 3, 4, 2, 1.0), (4, 6, 2, 5, 100.0)):
        q = rng.normal(size=(n, d_k)) * size
        k = rng.normal(size=(m, d_k)) * size
        v = rng.normal(size=(m, d_v))
        mask = rng.random((n, m)) < 0.6
        mask[0] = True                                              # one row sees every key
        if n > 1:
            mask[-1] = False                                        # one row sees none: zeros
        got = masked_attention(q, k, v, mask.copy())
        want = reference(q, k, v, mask)
        assert np.shape(got) == want.shape, f"n={n}, m={m}, d_k={d_k}, d_v={d_v}: shape {np.shape(got)}"
        assert np.all(np.isfinite(np.asarray(got, dtype=float))), f"n={n}, m={m}: non-finite output"
        assert close(got, want), f"n={n}, m={m}, d_k={d_k}, d_v={d_v}: wrong values"
