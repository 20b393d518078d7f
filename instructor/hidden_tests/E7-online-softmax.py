"""Hidden tests of E7 (instructor only): merge_all on stacks of other sizes.

The reference is the state of all the keys at once, computed from the scores themselves
(the row maximum, the sum of exp(s - max), the weighted sum of the values), not by merging.
"""


def hidden_merge_all(merge_all):
    import numpy as np

    def close(got, want, rtol=1e-9, atol=1e-12):
        """A float32 answer is held to float32's precision (its inputs alone are rounded to 6e-8)."""
        if np.asarray(got).dtype == np.float32:
            rtol, atol = max(rtol, 5e-3), max(atol, 1e-5)
        return np.allclose(np.asarray(got, dtype=float), want, rtol=rtol, atol=atol)

    def state(s, v):
        """(m, l, o) of scores s (n, j) and values v (j, d_v); a row with no finite score is empty."""
        m = s.max(axis=-1, keepdims=True) if s.shape[-1] else np.full((s.shape[0], 1), -np.inf)
        shift = np.where(np.isfinite(m), m, 0.0)
        e = np.exp(s - shift)                                 # exp(-inf) = 0 for a blocked key
        return m, e.sum(axis=-1, keepdims=True), e @ v

    rng = np.random.default_rng(70_292)
    cases = []
    # (n, block sizes, d_v, offsets of the rows): a single block, a single row, d_v = 1,
    # 40 blocks of one key, scores of 1e4 and rows 1e4 apart, the maximum in the last block
    for n, sizes, d_v, offset in ((3, (4,), 2, 0.0), (1, (2, 3, 1), 1, 0.0), (2, (1,) * 40, 3, 0.0),
                                  (4, (5, 2, 3), 2, 1e4), (3, (2, 2, 2, 2), 4, np.array([[0.0], [1e4], [-3e4]])),
                                  (2, (3, 6), 1, 2e4)):
        s = rng.normal(scale=3.0, size=(n, sum(sizes))) + offset
        s[:, -1] += 6.0                                       # every row's maximum in the last block
        cases.append((sizes, s, rng.normal(size=(sum(sizes), d_v))))
    # blocks that saw no allowed key: the middle block for row 0, the first two for row 1,
    # every block for row 2 (its merged state is empty: l = 0, o = 0); scores of 1e4
    s = rng.normal(size=(3, 7)) * 50.0 + 1e4
    s[0, 2:4] = -np.inf
    s[1, :4] = -np.inf
    s[2, :] = -np.inf
    cases.append(((2, 2, 3), s, rng.normal(size=(7, 2))))
    for sizes, s, v in cases:
        edges = np.cumsum((0,) + sizes)
        blocks = [state(s[:, i:j], v[i:j]) for i, j in zip(edges[:-1], edges[1:])]
        order = rng.permutation(len(blocks))                  # the blocks arrive in no order
        m, ell, o = (np.stack([parts[i] for i in order]) for parts in zip(*blocks))
        want_m, want_l, want_o = state(s, v)
        n, d_v = o.shape[1:]
        label = f"k={len(sizes)} blocks, n={n}, d_v={d_v}" + (", scores of about 1e4" if np.abs(
            s[np.isfinite(s)]).max() > 700 else "")
        got = merge_all(m.copy(), ell.copy(), o.copy())
        assert isinstance(got, (tuple, list)) and len(got) == 3, "return the tuple (m, ell, o)"
        got_m, got_l, got_o = got
        # the shapes the task states, as the visible check holds them: an (n,) m or l is not (n, 1)
        assert (np.shape(got_m), np.shape(got_l), np.shape(got_o)) == ((n, 1), (n, 1), (n, d_v)), (
            f"{label}: shapes {np.shape(got_m)}, {np.shape(got_l)}, {np.shape(got_o)}, not ({n}, 1), ({n}, 1), "
            f"({n}, {d_v})")
        assert np.all(np.isfinite(np.asarray(got_l, dtype=float))) and np.all(
            np.isfinite(np.asarray(got_o, dtype=float))), f"{label}: l or o not finite (overflow, or NaN)"
        full = np.isfinite(want_m[:, 0])                      # an empty row may have any m
        assert close(np.asarray(got_m)[full], want_m[full]), f"{label}: m is not the largest score of the row"
        assert close(got_l, want_l), f"{label}: wrong l"
        assert close(got_o, want_o), f"{label}: wrong o"
