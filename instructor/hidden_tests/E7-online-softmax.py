"""Hidden tests of E7 (instructor only): merging two blocks, on other shapes."""


def hidden_online_softmax_merge(merge):
    import numpy as np

    def close(got, want, rtol=1e-6, atol=1e-9):
        """A float32 answer is held to float32's precision (its inputs alone are rounded to 6e-8)."""
        if np.asarray(got).dtype == np.float32:
            rtol, atol = max(rtol, 5e-3), max(atol, 1e-5)
        return np.allclose(np.asarray(got, dtype=float), want, rtol=rtol, atol=atol)

    def state(s, v):
        """(m, l, o) of one block of scores s (..., n, j) and values v (j, d_v); an empty block when j = 0."""
        if s.shape[-1] == 0:
            shape = s.shape[:-1] + (1,)
            return np.full(shape, -np.inf), np.zeros(shape), np.zeros(s.shape[:-1] + (v.shape[-1],))
        m = s.max(axis=-1, keepdims=True)
        e = np.exp(s - m)
        return m, e.sum(axis=-1, keepdims=True), e @ v

    rng = np.random.default_rng(70_291)
    # (batch shape, n, keys in block a, keys in block b, d_v, size of the scores)
    for batch, n, j_a, j_b, d_v, size in (((), 1, 1, 1, 1, 1.0), ((), 3, 2, 5, 4, 1e4),
                                         ((2,), 4, 3, 3, 2, 300.0), ((2, 3), 2, 4, 1, 3, 5.0)):
        s = rng.normal(size=batch + (n, j_a + j_b)) * size
        v = rng.normal(size=(j_a + j_b, d_v))
        a, b = state(s[..., :j_a], v[:j_a]), state(s[..., j_a:], v[j_a:])
        got = merge(*(x.copy() for x in a + b))
        assert len(got) == 3, "merge should return (m, l, o)"
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        want_out = e / e.sum(axis=-1, keepdims=True) @ v
        m, ell, o = (np.asarray(x) for x in got)  # a float32 answer stays float32
        assert (m.shape, ell.shape, o.shape) == (a[0].shape, a[1].shape, a[2].shape), (
            f"batch {batch}, n={n}: shapes {m.shape}, {ell.shape}, {o.shape}")
        assert close(m, s.max(axis=-1, keepdims=True)), f"batch {batch}, n={n}: m is not the row maximum"
        assert np.all(np.isfinite(o / ell)), f"batch {batch}, n={n}: o / l is not finite (overflow?)"
        assert close(o / ell, want_out), f"batch {batch}, n={n}: o / l wrong"
    # an older block that saw nothing in every row, then a newer one; and the other way round
    s = rng.normal(size=(3, 4)) * 1e4
    v = rng.normal(size=(4, 2))
    full, empty = state(s, v), state(s[:, :0], v[:0])
    for first, second in ((empty, full), (full, empty)):
        m, ell, o = (np.asarray(x) for x in merge(*(x.copy() for x in first + second)))
        assert close(m, full[0]) and close(ell, full[1]) and close(o, full[2]), (
            "merging with an empty block (m = -inf, l = 0, o = 0) should leave the other block's state")
    m, ell, o = (np.asarray(x, dtype=float) for x in merge(*(x.copy() for x in empty + empty)))
    assert np.all(np.isneginf(m)) and np.all(ell == 0) and np.all(o == 0), "two empty blocks: m = -inf, l = 0, o = 0"
