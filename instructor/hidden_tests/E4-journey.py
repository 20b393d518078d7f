"""Hidden tests of E4 (instructor only): one decoding step, attend_new_token, on other shapes.

No overflow here: E4 comes before lessons 05-06 teach the stable softmax, and the task
promises scores below 100 in size, so a textbook ``exp(s) / exp(s).sum()`` passes. The
cases still differ in size from row to row, and the new token's own key decides some rows.
"""


def hidden_attend_new_token(attend_new_token):
    import numpy as np

    def close(got, want, rtol=1e-6, atol=1e-9):
        """A float32 answer is held to float32's precision (its inputs alone are rounded to 6e-8)."""
        if np.asarray(got).dtype == np.float32:
            rtol, atol = max(rtol, 5e-3), max(atol, 1e-5)
        return np.allclose(np.asarray(got, dtype=float), want, rtol=rtol, atol=atol)

    rng = np.random.default_rng(45_062)
    # (tokens in the cache, d_in, d_k, d_v, size of the inputs): a cache of a single token,
    # d_k != d_v both ways, d_in below and above the widths, a long cache with one large row
    for n, d_in, d_k, d_v, size in ((1, 3, 2, 4, 1.0), (5, 2, 4, 3, 1.0), (4, 6, 3, 1, 0.7),
                                    (17, 4, 2, 5, 1.2), (8, 5, 5, 2, 0.5)):
        x = rng.normal(size=(n + 1, d_in)) * size
        x[n // 2] *= 3.0                                      # one token larger than the rest
        w_q, w_k = rng.normal(size=(d_in, d_k)), rng.normal(size=(d_in, d_k))
        w_v = rng.normal(size=(d_in, d_v))
        keys, values = x[:n] @ w_k, x[:n] @ w_v               # the cache: (n, d_k), (n, d_v)
        q_new = x[n] @ w_q                                    # (d_k,)
        all_k = np.vstack([keys, x[n] @ w_k])                 # (n + 1, d_k): the new key last
        all_v = np.vstack([values, x[n] @ w_v])               # (n + 1, d_v)
        s = all_k @ q_new / np.sqrt(d_k)                      # (n + 1,): its own key included
        assert np.abs(s).max() < 100, "the test itself: E4 promises scores below 100"
        e = np.exp(s - s.max())
        want = e / e.sum() @ all_v                            # (d_v,)
        label = f"a cache of n={n} tokens, d_in={d_in}, d_k={d_k}, d_v={d_v}"
        got = attend_new_token(x[n].copy(), keys.copy(), values.copy(), w_q.copy(), w_k.copy(), w_v.copy())
        assert isinstance(got, (tuple, list)) and len(got) == 3, "return the tuple (context, keys, values)"
        context, grown_k, grown_v = got
        # the shape the task states, as the visible check holds it: a (1, d_v) row is not (d_v,)
        assert np.shape(context) == (d_v,), f"{label}: context shape {np.shape(context)}, not ({d_v},)"
        assert np.shape(grown_k) == (n + 1, d_k), f"{label}: keys shape {np.shape(grown_k)}"
        assert np.shape(grown_v) == (n + 1, d_v), f"{label}: values shape {np.shape(grown_v)}"
        assert np.all(np.isfinite(np.asarray(context, dtype=float))), f"{label}: non-finite context"
        assert close(grown_k, all_k) and close(grown_v, all_v), f"{label}: the cache, grown by the new token"
        assert close(context, want), f"{label}: wrong context"
