"""Hidden tests of E5 (instructor only): my_softmax and padded_attention on other shapes.

Both after lesson 06: logits of 1e4 and more, rows of very different size, slices and
sequences with nothing allowed (all zeros, not NaN).
"""


def hidden_my_softmax(my_softmax):
    import numpy as np

    def close(got, want, rtol=1e-6, atol=1e-12):
        """A float32 answer is held to float32's precision (its inputs alone are rounded to 6e-8)."""
        if np.asarray(got).dtype == np.float32:
            rtol, atol = max(rtol, 5e-3), max(atol, 1e-5)
        return np.allclose(np.asarray(got, dtype=float), want, rtol=rtol, atol=atol)

    def reference(x, axis, where):
        """The softmax along ``axis`` over the True entries, one slice at a time (0 elsewhere)."""
        moved = np.moveaxis(x, axis, -1)
        allowed = np.moveaxis(np.ones(x.shape, bool) if where is None else where, axis, -1)
        out = np.zeros(moved.shape)
        for idx in np.ndindex(moved.shape[:-1]):
            keep = allowed[idx]
            if keep.any():
                e = np.exp(moved[idx][keep] - moved[idx][keep].max())
                out[idx][keep] = e / e.sum()
        return np.moveaxis(out, -1, axis)

    rng = np.random.default_rng(50_273)
    big = rng.normal(size=(4, 1, 6)) * 3 + np.array([[[0.0]], [[1e4]], [[-1e4]], [[3e4]]])
    where_big = rng.random((4, 1, 6)) < 0.5
    where_big[2, 0] = False                                   # a slice with nothing allowed
    x_cols = rng.normal(size=(5, 3)) * 2 + np.array([[2e4, 0.0, -5e3]])
    where_cols = rng.random((5, 3)) < 0.6
    where_cols[:, 1] = False                                  # a column with nothing allowed
    where_cols[rng.integers(5), 0] = True
    blocked = np.array([[0.0, 3e4, 1.0, 2.0], [1e4, 1e4 + 1, -1e4, 7.0]])
    cases = [
        (rng.normal(size=(1,)), -1, None),                                # a single logit
        (rng.normal(size=(1, 1, 1)) * 1e4, 0, None),                      # a single logit of 1e4, axis 0
        (rng.normal(size=(3, 7)) * 1e4, -1, None),                        # logits of 1e4: exp alone overflows
        (np.array([[-1e4, 0.0, 1e4], [2.0, 2.0, 2.0]]), -1, None),        # rows of very different size
        (rng.normal(size=(2, 3, 4)) * 50 + 600, 1, None),                 # batch axes, the middle axis
        (rng.normal(size=(2, 3, 4, 5)) * 3, -2, rng.random((2, 3, 4, 5)) < 0.7),   # 4-D, axis -2, a mask
        (big, -1, where_big),                                             # a fully masked slice; 3e4
        (x_cols, 0, where_cols),                                          # axis 0, an empty column
        (blocked, -1, blocked < 1e3),                                     # a blocked entry far above the rest
        (rng.normal(size=(3, 4)), -1, np.zeros((3, 4), bool)),            # nothing allowed anywhere
    ]
    for x, axis, where in cases:
        label = f"x of shape {x.shape}, axis={axis}, " + ("where=None" if where is None else "a mask")
        want = reference(x, axis, where)
        if where is None and axis == -1:
            got = my_softmax(x.copy())                        # the defaults
        elif where is None:
            got = my_softmax(x.copy(), axis=axis)
        else:
            got = my_softmax(x.copy(), axis=axis, where=where.copy())
        assert np.shape(got) == x.shape, f"{label}: output shape {np.shape(got)}"
        assert np.all(np.isfinite(np.asarray(got, dtype=float))), f"{label}: not finite (overflow, or 0/0)"
        assert close(got, want), f"{label}: wrong values"


def hidden_padded_attention(padded_attention):
    import numpy as np

    def close(got, want, rtol=1e-6, atol=1e-9):
        """A float32 answer is held to float32's precision (its inputs alone are rounded to 6e-8)."""
        if np.asarray(got).dtype == np.float32:
            rtol, atol = max(rtol, 5e-3), max(atol, 1e-5)
        return np.allclose(np.asarray(got, dtype=float), want, rtol=rtol, atol=atol)

    def reference(q, k, v, lengths):
        """Each sentence on its own: attention over its first L tokens, zero rows after them."""
        out = np.zeros(q.shape[:-1] + (v.shape[-1],))
        for b, length in enumerate(lengths):
            if length == 0:
                continue
            s = q[b, :length] @ k[b, :length].T / np.sqrt(q.shape[-1])   # (L, L)
            e = np.exp(s - s.max(axis=-1, keepdims=True))
            out[b, :length] = e / e.sum(axis=-1, keepdims=True) @ v[b, :length]
        return out

    rng = np.random.default_rng(50_274)
    rows = np.array([[1.0], [10.0], [100.0], [1000.0], [3000.0], [1.0], [30.0]])   # very different sizes
    # (lengths, n, d_k, d_v, size of the queries): one sentence of one token, a batch of one,
    # d_k != d_v both ways, sentences of length 0 and full, scores of about 1e4, rows of
    # very different size
    for lengths, n, d_k, d_v, size in (((1,), 1, 2, 3, 1.0), ((3,), 5, 4, 2, 1.0),
                                       ((0, 4, 2, 1), 4, 3, 5, 1.0), ((6, 0, 3), 6, 2, 2, 3000.0),
                                       ((2, 7), 7, 5, 3, rows)):
        b = len(lengths)
        q = rng.normal(size=(b, n, d_k)) * size
        k, v = rng.normal(size=(b, n, d_k)), rng.normal(size=(b, n, d_v))
        lengths = np.array(lengths)
        label = f"B={b}, n={n}, d_k={d_k}, d_v={d_v}, lengths {list(lengths)}"
        got = padded_attention(q.copy(), k.copy(), v.copy(), lengths.copy())
        if isinstance(got, tuple) and len(got) == 2:
            got = got[0]                                      # (output, weights), as notebook 05 returns
        want = reference(q, k, v, lengths)
        assert np.shape(got) == want.shape, f"{label}: shape {np.shape(got)}"
        assert np.all(np.isfinite(np.asarray(got, dtype=float))), f"{label}: non-finite output (overflow, or 0/0)"
        assert close(got, want), f"{label}: wrong values"
