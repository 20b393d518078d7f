"""Hidden tests of E6 (instructor only): both backward passes on other shapes.

The reference is the chain rule written out with NumPy here; on the small cases it is
first checked against central finite differences of a forward pass written here too (on
the cases with scores of about 1e4 finite differences lose their digits, so the checked
chain rule is the reference there).
"""


def hidden_self_attention_backward(self_attention_backward):
    import numpy as np

    def close(got, want, rtol=1e-6, atol=1e-9):
        """A float32 answer is held to float32's precision (its inputs alone are rounded to 6e-8)."""
        if np.asarray(got).dtype == np.float32:
            rtol, atol = max(rtol, 5e-3), max(atol, 1e-5)
        return np.allclose(np.asarray(got, dtype=float), want, rtol=rtol, atol=atol)

    def loss(x, w_q, w_k, w_v, d_out):
        q, k, v = x @ w_q, x @ w_k, x @ w_v
        s = q @ k.T / np.sqrt(w_q.shape[1])
        p = np.exp(s - s.max(axis=-1, keepdims=True))
        return np.sum(p / p.sum(axis=-1, keepdims=True) @ v * d_out)

    def chain(x, w_q, w_k, w_v, d_out):
        c = 1 / np.sqrt(w_q.shape[1])
        q, k, v = x @ w_q, x @ w_k, x @ w_v
        s = q @ k.T * c
        p = np.exp(s - s.max(axis=-1, keepdims=True))
        p = p / p.sum(axis=-1, keepdims=True)                 # (n, n)
        d_p = d_out @ v.T
        d_s = p * (d_p - (p * d_p).sum(axis=-1, keepdims=True))
        d_q, d_k, d_v = c * d_s @ k, c * d_s.T @ q, p.T @ d_out
        return d_q @ w_q.T + d_k @ w_k.T + d_v @ w_v.T, x.T @ d_q, x.T @ d_k, x.T @ d_v

    def numeric(args, which, h=1e-6):
        grad = np.zeros_like(args[which])
        for idx in np.ndindex(grad.shape):
            up = [a.copy() for a in args]
            down = [a.copy() for a in args]
            up[which][idx] += h
            down[which][idx] -= h
            grad[idx] = (loss(*up) - loss(*down)) / (2 * h)
        return grad

    rng = np.random.default_rng(60_283)
    large_rows = np.array([[1.0], [10.0], [60.0], [150.0], [2.0]])
    # (n, d_in, d_k, d_v, size of x): a single token, d_in < d_k, d_k != d_v both ways,
    # scores of about 1e4 and rows of very different size
    for n, d_in, d_k, d_v, size in ((1, 3, 2, 4, 1.0), (5, 2, 3, 4, 1.0), (3, 6, 4, 2, 1.0),
                                    (7, 4, 2, 1, 1.0), (4, 3, 5, 2, 100.0), (5, 2, 3, 3, large_rows)):
        x = rng.normal(size=(n, d_in)) * size
        w_q, w_k = rng.normal(size=(d_in, d_k)), rng.normal(size=(d_in, d_k))
        w_v, d_out = rng.normal(size=(d_in, d_v)), rng.normal(size=(n, d_v))
        args = [x, w_q, w_k, w_v, d_out]
        want = chain(*args)
        if np.ndim(size) == 0 and size == 1.0:                # the reference, checked by finite differences
            for which in range(4):
                assert np.allclose(want[which], numeric(args, which), rtol=1e-5, atol=1e-7), "the test's reference"
        label = f"n={n}, d_in={d_in}, d_k={d_k}, d_v={d_v}" + ("" if np.ndim(size) == 0 and size == 1.0
                                                               else ", scores of about 1e4")
        got = self_attention_backward(*(a.copy() for a in args))
        assert isinstance(got, (tuple, list)) and len(got) == 4, "return (d_x, d_w_q, d_w_k, d_w_v)"
        for value, right, name in zip(got, want, ("d_x", "d_w_q", "d_w_k", "d_w_v")):
            assert np.shape(value) == right.shape, f"{label}: {name} shape {np.shape(value)}"
            assert np.all(np.isfinite(np.asarray(value, dtype=float))), f"{label}: {name} not finite (overflow?)"
            assert close(value, right, rtol=1e-6, atol=1e-8 * max(1.0, np.abs(right).max())), f"{label}: {name} wrong"


def hidden_padded_backward(padded_backward):
    import numpy as np

    def close(got, want, rtol=1e-6, atol=1e-9):
        """A float32 answer is held to float32's precision (its inputs alone are rounded to 6e-8)."""
        if np.asarray(got).dtype == np.float32:
            rtol, atol = max(rtol, 5e-3), max(atol, 1e-5)
        return np.allclose(np.asarray(got, dtype=float), want, rtol=rtol, atol=atol)

    def forward(q, k, v, length):
        """One sequence: attention over its first ``length`` tokens, zero rows after them."""
        out = np.zeros(q.shape[:-1] + (v.shape[-1],))
        if length:
            s = q[:length] @ k[:length].T / np.sqrt(q.shape[-1])
            p = np.exp(s - s.max(axis=-1, keepdims=True))
            out[:length] = p / p.sum(axis=-1, keepdims=True) @ v[:length]
        return out

    def chain(q, k, v, d_out, length):
        """dQ, dK, dV of one sequence: the chain rule over its real tokens, zeros for the padding."""
        grads = [np.zeros(q.shape), np.zeros(k.shape), np.zeros(v.shape)]
        if length:
            c = 1 / np.sqrt(q.shape[-1])
            q_r, k_r, v_r, d_r = q[:length], k[:length], v[:length], d_out[:length]
            s = q_r @ k_r.T * c
            p = np.exp(s - s.max(axis=-1, keepdims=True))
            p = p / p.sum(axis=-1, keepdims=True)
            d_p = d_r @ v_r.T
            d_s = p * (d_p - (p * d_p).sum(axis=-1, keepdims=True))
            grads[0][:length], grads[1][:length], grads[2][:length] = c * d_s @ k_r, c * d_s.T @ q_r, p.T @ d_r
        return grads

    def numeric(q, k, v, d_out, length, which, h=1e-6):
        args = [q, k, v]
        grad = np.zeros_like(args[which])
        for idx in np.ndindex(grad.shape):
            up = [a.copy() for a in args]
            down = [a.copy() for a in args]
            up[which][idx] += h
            down[which][idx] -= h
            grad[idx] = ((forward(*up, length) - forward(*down, length)) * d_out).sum() / (2 * h)
        return grad

    rng = np.random.default_rng(60_284)
    rows = np.array([[1.0], [10.0], [100.0], [1000.0], [3000.0]])   # query rows of very different size
    # (lengths, n, d_k, d_v, size of q): a batch of one sequence of one token, a batch of one,
    # d_k != d_v both ways, sequences of length 0 and full, scores of about 1e4
    for lengths, n, d_k, d_v, size in (((1,), 1, 2, 3, 1.0), ((2,), 4, 3, 2, 1.0),
                                       ((0, 3, 1), 3, 2, 4, 1.0), ((5, 2, 0, 4), 5, 4, 1, 1.0),
                                       ((6, 0, 3), 6, 3, 2, 5000.0), ((5, 3), 5, 2, 3, rows)):
        b = len(lengths)
        q = rng.normal(size=(b, n, d_k)) * size
        k, v, d_out = rng.normal(size=(b, n, d_k)), rng.normal(size=(b, n, d_v)), rng.normal(size=(b, n, d_v))
        small = np.ndim(size) == 0 and size == 1.0
        want = [np.stack(parts) for parts in zip(*(chain(q[i], k[i], v[i], d_out[i], lengths[i]) for i in range(b)))]
        if small:                                             # the reference, checked by finite differences
            for which in range(3):
                numbers = np.stack([numeric(q[i], k[i], v[i], d_out[i], lengths[i], which) for i in range(b)])
                assert np.allclose(want[which], numbers, rtol=1e-5, atol=1e-7), "the test's reference"
        label = f"B={b}, n={n}, d_k={d_k}, d_v={d_v}, lengths {list(lengths)}" + ("" if small else
                                                                                  ", scores of about 1e4")
        got = padded_backward(q.copy(), k.copy(), v.copy(), d_out.copy(), np.array(lengths))
        assert isinstance(got, (tuple, list)) and len(got) == 3, "return (d_q, d_k, d_v)"
        for value, right, name in zip(got, want, ("d_q", "d_k", "d_v")):
            assert np.shape(value) == right.shape, f"{label}: {name} shape {np.shape(value)}"
            assert np.all(np.isfinite(np.asarray(value, dtype=float))), f"{label}: {name} not finite (0/0 or overflow)"
            assert close(value, right, rtol=1e-6, atol=1e-8 * max(1.0, np.abs(right).max())), f"{label}: {name} wrong"
