"""Function checks: students' functions, right and wrong, each named for its mistake.

For each function check, a right implementation and one implementation per recognised mistake
are written here (NumPy only, no helpers.attention). Each must get its own verdict, and any two
must give different results on the check's probes (else the check could not tell them apart).
Calling a library kernel from the student's function is refused, by module attribute or by a
name imported earlier, and the kernels are restored afterwards, even when the function raises.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest

import helpers.attention
from helpers import checks
from helpers.attention import softmax as imported_softmax
from helpers.checks import e5_definition, e6_backward


def _exp_rows(s):
    return np.exp(s - s.max(axis=-1, keepdims=True))


# --- softmax ---------------------------------------------------------------------------------


def sm_right(x, axis=-1, where=None):
    if where is None and axis == -1:
        e = _exp_rows(np.asarray(x, float))
        return e / e.sum(axis=-1, keepdims=True)
    s = np.asarray(x, float) if where is None else np.where(where, x, -np.inf)
    top = np.max(s, axis=axis, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(top), top, 0.0))
    total = e.sum(axis=axis, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def _shifted(shift):
    def fn(x):
        x = np.asarray(x, float)
        e = np.exp(x - shift(x))
        return e / e.sum(axis=-1, keepdims=True)

    return fn


SOFTMAXES = {
    "correct": sm_right,
    "no_max_subtraction": _shifted(lambda x: 0.0),
    "subtracted_row_min": _shifted(lambda x: x.min(axis=-1, keepdims=True)),
    "subtracted_row_mean": _shifted(lambda x: x.mean(axis=-1, keepdims=True)),
    "subtracted_global_max": _shifted(lambda x: x.max()),
    "wrong_axis": lambda x: (lambda e: e / e.sum(axis=0, keepdims=True))(
        np.exp(np.asarray(x, float) - np.asarray(x, float).max(axis=0, keepdims=True))),
    "not_normalised": lambda x: _exp_rows(np.asarray(x, float)),
}


def _signature(fn, probes):
    """What ``fn`` gives on each probe: its values, or 'breaks' (error, warning, NaN, inf)."""
    out = []
    for x in probes:
        with warnings.catch_warnings(record=True) as caught, np.errstate(all="warn", under="ignore"):
            warnings.simplefilter("always")
            try:
                y = np.asarray(fn(*x), float) if isinstance(x, tuple) else np.asarray(fn(x), float)
            except Exception:  # noqa: BLE001
                y = None
        out.append(None if y is None or caught or not np.all(np.isfinite(y)) else y)
    return out


def _different(sig_a, sig_b, tol):
    for a, b in zip(sig_a, sig_b):
        if (a is None) != (b is None):
            return True
        if a is not None and (a.shape != b.shape or not np.allclose(a, b, rtol=tol, atol=tol)):
            return True
    return False


@pytest.mark.parametrize("name", sorted(SOFTMAXES))
def test_softmax_each_mistake_named(name):
    r = checks.check_stable_softmax(SOFTMAXES[name])
    assert (r.status == "correct") if name == "correct" else (r.mistake == name), r


def test_softmax_implementations_pairwise_different_on_the_probes():
    probes = [x for _, x in e5_definition._softmax_probes()]
    sigs = {n: _signature(f, probes) for n, f in SOFTMAXES.items() if n != "used_library"}
    for (a, sa), (b, sb) in itertools.combinations(sigs.items(), 2):
        assert _different(sa, sb, 1e-6), (a, b)


def test_softmax_probes_go_beyond_the_worked_example():
    labels = [label for label, _ in e5_definition._softmax_probes()]
    assert len(labels) >= 9 and {"gap_1000", "gap_2000", "offset_rows", "batch", "wide_rows"} <= set(labels)
    wide = dict(e5_definition._softmax_probes())["wide_rows"]
    assert wide.shape[-1] >= 500


# --- the library guard -----------------------------------------------------------------------


def test_static_check_refuses_the_library_before_running_it():
    # The static check (helpers.checks._core.static_refusal) comes first: the answer is not run.
    ran = []

    def uses_library(x):
        ran.append(1)
        return helpers.attention.softmax(x)

    for fn in (uses_library, lambda x: imported_softmax(x)):
        r = checks.check_stable_softmax(fn)
        assert r.mistake == "reaches_library", r
        assert "not the library's kernels" in r.message
    assert not ran


def test_guard_catches_an_imported_name_and_restores_the_kernels():
    # Behind the static check, the run-time guard still notices a kernel call (here with the
    # static check bypassed through __wrapped__).
    check_stable_softmax = checks.check_stable_softmax.__wrapped__
    original = helpers.attention.softmax
    r = check_stable_softmax(lambda x: imported_softmax(x))
    assert r.mistake == "used_library" and "helpers.attention.softmax" in r.message
    assert "yourself" in r.message
    assert helpers.attention.softmax is original

    def raises(x):
        helpers.attention.softmax(x)
        raise RuntimeError("boom")

    assert check_stable_softmax(raises).mistake == "used_library"
    assert helpers.attention.softmax is original
    import sys
    import threading
    assert sys.getprofile() is None and threading.getprofile() is None


def test_guard_catches_a_wrapped_kernel_in_every_function_check():
    sdpa = helpers.attention.scaled_dot_product_attention
    cases = [
        (checks.check_masked_attention, lambda q, k, v, lengths: sdpa(q, k, v)[0]),
        (checks.check_self_attention,
         lambda xn, k, v, wq, wk, wv: (helpers.attention.softmax(np.vstack([k, xn @ wk]) @ (xn @ wq))
                                       @ np.vstack([v, xn @ wv]), np.vstack([k, xn @ wk]), np.vstack([v, xn @ wv]))),
        (checks.check_attention_backward,
         lambda x, wq, wk, wv, d: helpers.attention.attention_backward(x @ wq, x @ wk, x @ wv, d)),
        (checks.check_masked_backward,
         lambda q, k, v, d, n: helpers.attention.attention_backward(q, k, v, d)),
    ]
    for check, fn in cases:
        assert check(fn).mistake == "reaches_library"
        assert check.__wrapped__(fn).mistake == "used_library"


# --- backward --------------------------------------------------------------------------------


def _weights(q, k, mask=None):
    s = q @ k.T / math.sqrt(q.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    top = s.max(axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(top), top, 0.0))
    total = e.sum(axis=-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def _backward(kind):
    def fn(q, k, v, d_out, mask=None):
        p = _weights(q, k, mask)
        c = 1 / math.sqrt(q.shape[-1])
        d_p = d_out @ v.T
        d_s = p * (d_p - (p * d_p).sum(axis=-1, keepdims=True))
        if kind == "missing_jacobian_term":
            d_s = p * d_p
        if kind == "missing_scale":
            c = 1.0
        if kind == "scale_squared":
            c = c * c
        d_q, d_k, d_v = c * d_s @ k, c * d_s.T @ q, p.T @ d_out
        if kind == "d_v_not_transposed":
            d_v = p @ d_out
        if kind == "d_k_not_transposed":
            d_k = c * d_s @ q
        if kind == "d_q_d_k_swapped":
            d_q, d_k = c * d_s.T @ q, c * d_s @ k
        return d_q, d_k, d_v

    return fn


BACKWARD_KINDS = ["correct", "missing_jacobian_term", "missing_scale", "scale_squared",
                  "d_v_not_transposed", "d_k_not_transposed", "d_q_d_k_swapped"]


def padded_bw(fn5):
    """E6 exercise 2 from a masked backward pass ``fn5(q, k, v, d_out, mask)`` of one sequence:
    the mask of real (query, key) pairs built from the lengths, sequence by sequence."""

    def fn(q, k, v, d_out, lengths):
        real = np.arange(q.shape[-2]) < np.asarray(lengths)[:, None]
        mask = real[:, :, None] & real[:, None, :]
        grads = [fn5(q[b], k[b], v[b], d_out[b], mask[b]) for b in range(len(q))]
        return tuple(np.stack(parts) for parts in zip(*grads))

    return fn


@pytest.mark.parametrize("kind", BACKWARD_KINDS)
def test_backward_each_mistake_named(kind):
    fn = _backward(kind)
    def lifted(x, w_q, w_k, w_v, d):  # E6 exercise 1 asks for the gradients of x and the projections
        d_q, d_k, d_v = fn(x @ w_q, x @ w_k, x @ w_v, d)
        return d_q @ w_q.T + d_k @ w_k.T + d_v @ w_v.T, x.T @ d_q, x.T @ d_k, x.T @ d_v

    r = checks.check_attention_backward(lifted)
    assert (r.status == "correct") if kind == "correct" else (r.mistake == kind), r
    r = checks.check_masked_backward(padded_bw(fn))
    assert (r.status == "correct") if kind == "correct" else (r.mistake == kind), r


def test_backward_right_answer_agrees_with_the_library_kernel():
    for _, q, k, v, d_out, lengths in e6_backward._backward_cases(True):
        mask = e6_backward._pair_mask(lengths, q.shape[-2])
        ours = padded_bw(_backward("correct"))(q, k, v, d_out, lengths)
        lib = helpers.attention.attention_backward(q, k, v, d_out, mask)
        for a, b in zip(ours, lib):
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10)


def test_backward_implementations_pairwise_different():
    probes = [(q, k, v, d) for _, q, k, v, d, _ in e6_backward._backward_cases(False)]
    sigs = {kind: _signature(lambda *a, f=_backward(kind): np.concatenate([g.ravel() for g in f(*a)]), probes)
            for kind in BACKWARD_KINDS}
    for (a, sa), (b, sb) in itertools.combinations(sigs.items(), 2):
        assert _different(sa, sb, e6_backward.GRAD_TOL), (a, b)


def test_masked_backward_mistakes():
    def nan_row(q, k, v, d_out, mask):
        s = np.where(mask, q @ k.T / math.sqrt(q.shape[-1]), -np.inf)
        with np.errstate(all="ignore"):
            e = np.exp(s - s.max(axis=-1, keepdims=True))
            p = e / e.sum(axis=-1, keepdims=True)
        d_p = d_out @ v.T
        d_s = p * (d_p - (p * d_p).sum(axis=-1, keepdims=True)) / math.sqrt(q.shape[-1])
        return d_s @ k, d_s.T @ q, p.T @ d_out

    assert checks.check_masked_backward(padded_bw(nan_row)).mistake == "nan_for_masked_row"
    fn = _backward("correct")
    assert checks.check_masked_backward(padded_bw(lambda q, k, v, d, m: fn(q, k, v, d))).mistake == "mask_ignored"
    r = checks.check_masked_backward(padded_bw(lambda q, k, v, d, m: fn(q, k, v, d, ~m)))
    assert r.mistake in {"mask_inverted", "nan_for_masked_row"}, r
    assert checks.check_masked_backward(lambda q, k, v, d, n: (q, k, v)).mistake == "wrong_values"
    assert checks.check_masked_backward(lambda q, k, v, d, n: (q, k)).mistake == "wrong_shape"
    # notebook 09's backward_by_hand(q, k, v, grad_o, scale, allowed) written for one sequence
    assert checks.check_masked_backward(lambda q, k, v, d, n: nan_row(q, k, v, d, n)).mistake in {
        "transpose_of_batch", "lengths_as_mask"}
    assert checks.check_masked_backward(None).status == "not yet"


# --- online softmax merge --------------------------------------------------------------------


def _merge(kind):
    def fn(m, ell, o):
        top = m.max(axis=0)
        if kind == "max_from_first_block":
            top = m[0]
        if kind == "max_from_last_block":
            top = m[-1]
        safe = np.where(np.isfinite(top), top, 0.0) if kind == "correct" else top  # all blocks empty
        with np.errstate(invalid="ignore", over="ignore"):
            f = np.exp(m - safe)
        lf = 1.0 if kind in ("not_rescaled", "sum_not_rescaled") else f
        of = 1.0 if kind in ("not_rescaled", "output_not_rescaled") else f
        return top, (ell * lf).sum(axis=0), (o * of).sum(axis=0)

    return fn


MERGE_KINDS = ["correct", "not_rescaled", "max_from_first_block", "max_from_last_block",
               "sum_not_rescaled", "output_not_rescaled"]


@pytest.mark.parametrize("kind", MERGE_KINDS)
def test_merge_each_mistake_named(kind):
    r = checks.check_online_softmax_merge(_merge(kind))
    if kind == "correct":
        assert r.status == "correct", r
    else:
        # A wrong max overflows on the blocks near 1e4 or meets exp(-inf - -inf) in the empty one.
        assert r.mistake in {kind, "not_finite", "overflow"}, r
        if kind not in ("max_from_first_block", "max_from_last_block"):
            assert r.mistake == kind, r


def test_merge_wrong_max_named_on_the_first_case():
    # On the first probe (no offsets, no empty block) the wrong maximum is named as such.
    m, ell, o, s, v = e6_backward._merge_cases()[0]
    for kind in ("max_from_first_block", "max_from_last_block"):
        got = _merge(kind)(m, ell, o)
        named = e6_backward._merge_variants(m, ell, o)[kind]
        assert all(np.allclose(x, y) for x, y in zip(got, named))
        assert checks.check_online_softmax_merge(_merge(kind)).mistake == kind


def test_merge_implementations_pairwise_different():
    probes = [(m, ell, o) for m, ell, o, _, _ in e6_backward._merge_cases()]
    sigs = {k: _signature(lambda *x, f=_merge(k): np.concatenate([np.ravel(g) for g in f(*x)]), probes)
            for k in MERGE_KINDS}
    for (a, sa), (b, sb) in itertools.combinations(sigs.items(), 2):
        assert _different(sa, sb, 1e-9), (a, b)


def test_merge_equals_blockwise_attention():
    for m_k, l_k, o_k, s, v in e6_backward._merge_cases()[:3]:
        m, l_, o = _merge("correct")(m_k, l_k, o_k)
        w = np.exp(s - s.max(axis=-1, keepdims=True))
        np.testing.assert_allclose(o / l_, (w / w.sum(axis=-1, keepdims=True)) @ v, rtol=1e-10)
