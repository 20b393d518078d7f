"""A corpus of students' answers to E4-E7: plausible wrong ones refused, right ones accepted.

Each wrong answer is a mistake a student makes (numerically unstable code, a mask set to 0 or
-1e9, the library reached through a private name, a recompiled copy, a worker thread, a lookup
table of the probes, ...); each is refused, with the specific mistake asserted where the
check names one. Each right answer is written differently from the others (loops, einsum, a
class, float32, a helper function, scipy) and is accepted. The worked examples that used to
sit in the checks' docstrings live here.

The last section is one test per graded task: a correct answer written only with what the
lessons before the task teach passes it.
"""

from __future__ import annotations

import functools
import math
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import helpers.attention
import helpers.attention.core
from helpers import examples
from helpers.attention import scaled_dot_product_attention as imported_sdpa
from helpers.attention import softmax as imported_softmax
from helpers.checks import (
    check_attention_backward,
    check_definition_shapes,
    check_journey_scores_row,
    check_journey_variance_d100,
    check_journey_weights_row,
    check_masked_attention,
    check_masked_backward,
    check_online_softmax_merge,
    check_self_attention,
    check_stable_softmax,
    e4_journey,
    e5_definition,
    e6_backward,
)

# ---------------------------------------------------------------------------
# Shared pieces: a student's own softmax and friends (NumPy only)
# ---------------------------------------------------------------------------


def own_softmax(s, axis=-1):
    e = np.exp(s - np.max(s, axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def naive_softmax(s, axis=-1):
    e = np.exp(s)
    return e / e.sum(axis=axis, keepdims=True)


def guarded_weights(s):
    """Softmax of scores with -inf for blocked keys; a row with no allowed key gives zeros."""
    top = s.max(axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(top), top, 0.0))
    total = e.sum(axis=-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


JOURNEY = examples.load_example("journey")
X7 = np.vstack([JOURNEY.inputs, e4_journey.NEW_INPUT])  # the sentence grown by "forward"
Q7, K7 = X7 @ JOURNEY.w_q, X7 @ JOURNEY.w_k
S = Q7 @ K7.T  # (7, 7)
W = own_softmax(S / math.sqrt(2))
S6 = JOURNEY.q @ JOURNEY.k.T  # the six-token sentence of notebook 04
W6 = own_softmax(S6 / math.sqrt(2))


def recompiled(name):
    """The library's kernel ``name`` compiled anew from its source: a copy, not the object."""
    import inspect

    namespace = {"__name__": "my_attention", "__package__": "helpers.attention"}  # its relative imports
    source = inspect.getsource(helpers.attention.core)
    exec(compile(source, "my_attention.py", "exec"), namespace)  # noqa: S102 - the point of the test
    return namespace[name]


COPIED_SOFTMAX = recompiled("softmax")
COPIED_SDPA = recompiled("scaled_dot_product_attention")
COPIED_BACKWARD = recompiled("attention_backward")


def in_a_thread(fn):
    """Run ``fn`` in a worker thread and return its result (a student hiding the call)."""

    def wrapper(*args):
        box = []
        worker = threading.Thread(target=lambda: box.append(fn(*args)))
        worker.start()
        worker.join()
        return box[0]

    return wrapper


POOL = ThreadPoolExecutor(max_workers=1)


def lookup_table(check_cases, answer):
    """A function that returns the right answer for the inputs it was filled with, else zeros."""
    table = {}
    for args in check_cases:
        table[tuple(np.asarray(a).tobytes() for a in args)] = answer(*args)

    def fn(*args):
        key = tuple(np.asarray(a).tobytes() for a in args)
        if key in table:
            return table[key]
        first = np.asarray(args[0])
        return np.zeros_like(first)

    return fn


# ---------------------------------------------------------------------------
# E4: the scores row, the weights row, the forward pass, the variance
# ---------------------------------------------------------------------------


def sa_right(x, w_q, w_k, w_v):
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    return own_softmax(q @ k.T / math.sqrt(k.shape[-1])) @ v


def sa_with(scale=None, axis=-1, transpose=True, swap=False, weights=False, project_v=True,
            softmax=own_softmax):
    def fn(x, w_q, w_k, w_v):
        q, k, v = x @ w_q, x @ w_k, (x @ w_v if project_v else x)
        s = k @ q.T if swap else q @ (k.T if transpose else k)
        w = softmax(s * (1 / math.sqrt(k.shape[-1]) if scale is None else scale(w_q)), axis=axis)
        return w if weights else w @ v

    return fn


def sa_keepdims(where):
    def fn(x, w_q, w_k, w_v):
        q, k, v = x @ w_q, x @ w_k, x @ w_v
        s = q @ k.T / math.sqrt(k.shape[-1])
        e = np.exp(s - s.max(axis=-1, keepdims=where not in ("max", "both")))
        return e / e.sum(axis=-1, keepdims=where not in ("sum", "both")) @ v

    return fn


def sa_max_of_two(x, w_q, w_k, w_v):
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    s = q @ k.T / math.sqrt(k.shape[-1])
    e = np.exp(s - np.max(s, s))
    return e / e.sum(axis=-1, keepdims=True) @ v


def sa_nan(x, w_q, w_k, w_v):
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    s = q @ k.T / np.sqrt(k.shape[-1] - k.shape[-1])  # a division by sqrt(0)
    return own_softmax(s) @ v


class SAClass:
    def __init__(self, w_q, w_k, w_v):
        self.w = (w_q, w_k, w_v)

    def forward(self, x):
        return sa_right(x, *self.w)


class SALibraryClass:
    def __init__(self, w_q, w_k, w_v):
        self.w = (w_q, w_k, w_v)

    def forward(self, x):
        q, k, v = (x @ w for w in self.w)
        return helpers.attention.scaled_dot_product_attention(q, k, v)[0]


class SAStoresKernel:
    kernel = staticmethod(imported_softmax)

    def __init__(self, w_q, w_k, w_v):
        self.w = (w_q, w_k, w_v)

    def forward(self, x):
        q, k, v = (x @ w for w in self.w)
        return self.kernel(q @ k.T / math.sqrt(k.shape[-1])) @ v


def dec_with(scale=None, own=True, grow=True, first=False, key_w="k", project_v=True, weights=False,
             softmax=own_softmax, ret="all"):
    """E4 exercise 3, attend_new_token, or one of its mistakes."""

    def fn(x_new, keys, values, w_q, w_k, w_v):
        q = x_new @ w_q
        k = x_new @ (w_q if key_w == "q" else w_k)
        v = x_new @ w_v if project_v else x_new
        new_k = np.vstack([k, keys] if first else [keys, k])
        new_v = np.vstack([v, values] if first else [values, v])
        use_k, use_v = (new_k, new_v) if own else (keys, values)
        c = 1 / math.sqrt(w_k.shape[1]) if scale is None else scale(w_q)
        w = softmax(use_k @ q * c)
        context = w if weights else w @ use_v
        if ret == "context":
            return context
        return (context, new_k, new_v) if grow else (context, keys, values)

    return fn


def dec_right(x_new, keys, values, w_q, w_k, w_v):
    return dec_with()(x_new, keys, values, w_q, w_k, w_v)


def dec_loops(x_new, keys, values, w_q, w_k, w_v):
    """Key by key, with Python sums (notebook 01's first form)."""
    q = [sum(x_new[i] * w_q[i, c] for i in range(len(x_new))) for c in range(w_q.shape[1])]
    keys = np.vstack([keys, x_new @ w_k])
    values = np.vstack([values, x_new @ w_v])
    scores = [sum(a * b for a, b in zip(q, key)) / math.sqrt(len(q)) for key in keys]
    exps = [math.exp(s) for s in scores]
    weights = [e / sum(exps) for e in exps]
    return sum(w * row for w, row in zip(weights, values)), keys, values


def dec_whole_sentence(x_new, keys, values, w_q, w_k, w_v):
    """Notebook 04's way: the last row of self-attention over every token (here from the cache)."""
    q_all = np.vstack([np.zeros((len(keys), w_q.shape[1])), x_new @ w_q])
    k_all, v_all = np.vstack([keys, x_new @ w_k]), np.vstack([values, x_new @ w_v])
    s = q_all @ k_all.T / np.sqrt(k_all.shape[1])
    e = np.exp(s)
    return (e / e.sum(axis=-1, keepdims=True) @ v_all)[-1], k_all, v_all


def _visible_e4():
    return [args for _, *args in e4_journey._decode_cases()]  # every probe, filled before the check


E4_WRONG = [
    # exercise 1: the scores of "starts"
    (check_journey_scores_row, JOURNEY.figure("scores_row1").printed, "document_row"),
    (check_journey_scores_row, S[2] / math.sqrt(2), "scaled"),
    (check_journey_scores_row, S[2] / 2, "divided_by_d_k"),
    (check_journey_scores_row, S[:, 2], "swapped_q_k"),
    (check_journey_scores_row, (X7 @ X7.T)[2], "no_projection"),
    (check_journey_scores_row, S6[2], "six_keys"),
    (check_journey_scores_row, np.append(S6[2], 0.0), "wrong_values"),
    (check_journey_scores_row, np.vstack([Q7[-1:], Q7[:-1]])[3] @ np.vstack([K7[-1:], K7[:-1]]).T, "new_token_first"),
    (check_journey_scores_row, S, "whole_matrix"),
    (check_journey_scores_row, ((X7 @ JOURNEY.w_q) @ (X7 @ JOURNEY.w_q).T)[2], "queries_as_keys"),
    (check_journey_scores_row, S[1], "wrong_row"),
    (check_journey_scores_row, S[0], "wrong_row"),
    (check_journey_scores_row, S[2][:5], "wrong_shape"),
    # one shape rule in every task: the shape the task states, an axis of length 1 more or less is named
    (check_journey_scores_row, S[2][None, :], "reshape_needed"),
    (check_journey_scores_row, S[2][:, None], "reshape_needed"),
    (check_journey_weights_row, W[2][None, :], "reshape_needed"),
    (check_self_attention, lambda *a: (lambda c, k, v: (c[None, :], k, v))(*dec_right(*a)), "reshape_needed"),
    (check_journey_scores_row, S[2] + 0.05, "wrong_values"),
    (check_journey_scores_row, [1.25, 1.83, 1.79, 1.07, 0.55, float("nan")], "not_finite"),
    (check_journey_scores_row, "1.25, 1.83, 1.79", "wrong_type"),
    (check_journey_scores_row, S[2].round(0), "wrong_values"),
    # exercise 2: the weights of "starts"
    (check_journey_weights_row, JOURNEY.figure("weights_row1").printed, "document_row"),
    (check_journey_weights_row, W[1], "wrong_row"),  # the neighbouring row, 0.0008 away
    (check_journey_weights_row, W[2].round(2), "rounded"),
    (check_journey_weights_row, W[2].round(3), "rounded"),
    (check_journey_weights_row, own_softmax(S[2]), "unscaled"),
    (check_journey_weights_row, own_softmax(S[2] / 2), "divided_by_d_k"),
    (check_journey_weights_row, own_softmax(S[2] / math.sqrt(3)), "scaled_by_d_in"),
    (check_journey_weights_row, own_softmax((S / math.sqrt(2)).ravel()).reshape(7, 7)[2], "softmax_whole_matrix"),
    (check_journey_weights_row, own_softmax(S / math.sqrt(2), axis=0)[:, 2], "wrong_axis"),
    (check_journey_weights_row, W, "whole_matrix"),
    (check_journey_weights_row, W[2] / W[2].max(), "not_normalised"),
    (check_journey_weights_row, W[4], "wrong_row"),
    (check_journey_weights_row, W6[2], "six_keys"),
    (check_journey_weights_row, np.append(W6[2], W[2, 6]), "kept_six_weights"),
    (check_journey_weights_row, W6[1], "six_keys"),  # notebook 04 computes this row
    (check_journey_scores_row, S6[1], "six_keys"),
    # exponentials, never divided by their sum
    (check_journey_weights_row, np.exp(S[2] / math.sqrt(2)), "not_normalised"),
    (check_journey_weights_row, W[2][:, None], "reshape_needed"),  # the one shape rule
    (check_journey_weights_row, W[2] + 3e-4, "wrong_values"),
    # exercise 3: the forward pass
    (check_self_attention, lambda xn, k, v, wq, wk, wv: helpers.attention.softmax(
        np.vstack([k, xn @ wk]) @ (xn @ wq)) @ np.vstack([v, xn @ wv]), "reaches_library"),
    (check_self_attention, dec_with(softmax=lambda s, axis=-1: imported_softmax(s, axis=axis)), "reaches_library"),
    (check_self_attention, dec_with(softmax=lambda s, axis=-1: helpers.attention.core.softmax(s, axis)),
     "reaches_library"),
    (check_self_attention, dec_with(softmax=lambda s: COPIED_SOFTMAX(s)), "reaches_library"),
    (check_self_attention, in_a_thread(dec_right), "reaches_library"),
    (check_self_attention, lambda *a: POOL.submit(dec_right, *a).result(), "reaches_library"),
    (check_self_attention, lookup_table(_visible_e4(), dec_right), None),
    (check_self_attention, dec_with(scale=lambda w: 1.0), "unscaled"),
    (check_self_attention, dec_with(scale=lambda w: 1 / w.shape[1]), "divided_by_d_k"),
    (check_self_attention, dec_with(scale=lambda w: 1 / math.sqrt(w.shape[0])), "scaled_by_d_in"),
    (check_self_attention, lambda xn, k, v, wq, wk, wv: dec_with(scale=lambda w: 1 / math.sqrt(wv.shape[1]))(
        xn, k, v, wq, wk, wv), "scaled_by_d_v"),  # told "Right" while every probe had d_k = d_v
    (check_self_attention, dec_with(own=False), "forgot_own_key"),
    (check_self_attention, dec_with(grow=False), "cache_not_grown"),
    (check_self_attention, dec_with(first=True), "new_token_first"),
    (check_self_attention, dec_with(key_w="q"), "key_from_w_q"),
    (check_self_attention, dec_with(project_v=False), None),
    (check_self_attention, dec_with(weights=True), None),
    (check_self_attention, dec_with(ret="context"), "cache_not_returned"),
    (check_self_attention, lambda *a: (lambda c, k, v: (c, v, k))(*dec_right(*a)), None),
    (check_self_attention, dec_with(scale=lambda w: 1e3, softmax=naive_softmax), "overflow"),  # multiplies
    (check_self_attention, lambda xn, k, v, wq, wk, wv: dec_right(xn, k, v, wq, wk, wv * 0 + np.nan), "not_finite"),
    (check_self_attention, lambda xn, k, v, wq, wk, wv: dec_right(xn, k, v, wq, wk, wv) + (1,), "wrong_shape"),
    # notebook 04's forward pass and class, as the lecture writes them
    (check_self_attention, sa_right, "whole_sentence_signature"),
    (check_self_attention, SAClass, "whole_sentence_signature"),
    (check_self_attention, SAClass(JOURNEY.w_q, JOURNEY.w_k, JOURNEY.w_v), "not_callable"),
    (check_self_attention, "attend_new_token", "not_callable"),
    (check_self_attention, lambda *a: tuple(np.asarray(x, np.float16) for x in dec_right(*a)), "precision"),
    # exercise 4: the expected variance
    (lambda a: check_journey_variance_d100(*a), (100, 1), "unit_variance"),  # notebook 08's case
    (lambda a: check_journey_variance_d100(*a), (100 * math.sqrt(6), math.sqrt(6)), "std_of_queries"),
    (lambda a: check_journey_variance_d100(*a), (500, 5), "added_variances"),
    (lambda a: check_journey_variance_d100(*a), (600, 5), "added_variances"),
    (lambda a: check_journey_variance_d100(*a), (math.sqrt(600), 6), "gave_std"),
    (lambda a: check_journey_variance_d100(*a), (6, 6), "already_scaled"),
    (lambda a: check_journey_variance_d100(*a), (360_000, 6), "squared"),
    (lambda a: check_journey_variance_d100(*a), (600, 60), "variance_divided_by_sqrt"),
    (lambda a: check_journey_variance_d100(*a), (600, 0.06), "divided_by_d_k"),
    (lambda a: check_journey_variance_d100(*a), (600, 600), "not_scaled"),
    (lambda a: check_journey_variance_d100(*a), (602.13, 6), "simulation_estimate"),
    (lambda a: check_journey_variance_d100(*a), (600, 6.02), "simulation_estimate"),
    (lambda a: check_journey_variance_d100(*a), (107.4, 1.074), "wrong_value"),
    (lambda a: check_journey_variance_d100(*a), (50, 1), "wrong_value"),
    (lambda a: check_journey_variance_d100(*a), ("600", 6), "not_a_number"),
]

E4_RIGHT = [
    (check_journey_scores_row, np.array([sum(Q7[2, c] * K7[j, c] for c in range(2)) for j in range(7)])),
    (check_journey_scores_row, np.einsum("d,jd->j", (X7 @ JOURNEY.w_q)[2], X7 @ JOURNEY.w_k).tolist()),
    (check_journey_scores_row, np.append(S6[2], Q7[2] @ K7[6])),  # the six old scores and one new
    (check_journey_scores_row, S[2].round(3)),
    (check_journey_weights_row, helpers.attention.softmax(S[2] / math.sqrt(2))),  # a hand answer: lessons 01-04
    (check_journey_weights_row, naive_softmax(S[2] / np.sqrt(2)).astype(np.float32)),
    (check_journey_weights_row, W[2].round(5)),
    (check_self_attention, dec_right),
    (check_self_attention, dec_with(softmax=naive_softmax)),
    (check_self_attention, dec_loops),
    (check_self_attention, dec_whole_sentence),
    (check_self_attention, lambda *a: list(dec_right(*a))),
    (check_self_attention, lambda xn, k, v, wq, wk, wv: dec_right(*(np.asarray(x, np.float32)
                                                                   for x in (xn, k, v, wq, wk, wv)))),
    (lambda a: check_journey_variance_d100(*a), (600, 6)),
    (lambda a: check_journey_variance_d100(*a), (100 * 3.0 * 2.0, 600 / math.sqrt(100) ** 2)),
]

# ---------------------------------------------------------------------------
# E5: shapes, a stable softmax, masked attention
# ---------------------------------------------------------------------------


def shifted(shift):
    def fn(x):
        e = np.exp(x - shift(x))
        return e / e.sum(axis=-1, keepdims=True)

    return fn


def softmax_loop_math(x):
    x = np.asarray(x, dtype=float)
    out = np.empty_like(x)
    for idx in np.ndindex(x.shape[:-1]):
        row = [math.exp(v) for v in x[idx]]
        out[idx] = [v / sum(row) for v in row]
    return out


def softmax_logsumexp(x):
    top = np.max(x, axis=-1, keepdims=True)
    return np.exp(x - top - np.log(np.sum(np.exp(x - top), axis=-1, keepdims=True)))


class SoftmaxObject:
    def __init__(self):
        self.fill = -np.inf

    def __call__(self, x, axis=-1, where=None):
        z = np.where(True if where is None else where, x, self.fill)
        top = z.max(axis=axis, keepdims=True)
        e = np.exp(z - np.where(np.isfinite(top), top, 0.0))
        total = e.sum(axis=axis, keepdims=True)
        return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def sm_where(x, axis=-1, where=None):
    """E5 exercise 2: the softmax along ``axis`` over the entries where ``where`` is True."""
    s = np.asarray(x, float) if where is None else np.where(where, x, -np.inf)
    top = np.max(s, axis=axis, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(top), top, 0.0))
    total = e.sum(axis=axis, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def sm_where_builtin(x, axis=-1, where=None):
    """The same with NumPy's own where= and initial= of np.max and np.sum."""
    where = np.ones(np.shape(x), bool) if where is None else where
    top = np.max(x, axis=axis, keepdims=True, where=where, initial=-np.inf)
    e = np.exp(x - np.where(np.isfinite(top), top, 0.0), where=where, out=np.zeros(np.shape(x)))
    total = np.sum(e, axis=axis, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def sm_where_loops(x, axis=-1, where=None):
    """The same, one slice at a time over the allowed entries."""
    x = np.asarray(x, float)
    w = np.ones(x.shape, bool) if where is None else np.asarray(where, bool)
    xm, wm = np.moveaxis(x, axis, -1), np.moveaxis(w, axis, -1)
    out = np.zeros_like(xm)
    for idx in np.ndindex(xm.shape[:-1]):
        row = xm[idx][wm[idx]]
        if row.size:
            e = np.exp(row - row.max())
            out[idx][wm[idx]] = e / e.sum()
    return np.moveaxis(out, -1, axis)


def sm_variant(kind):
    """A wrong answer to E5 exercise 2 that gets the last axis without a mask right."""

    def fn(x, axis=-1, where=None):
        if kind == "axis_ignored":
            return sm_where(x, -1, where)
        if kind == "where_ignored" or where is None:
            return sm_where(x, axis)
        if kind == "inverted_mask":  # PyTorch's convention: True marks a blocked entry
            return sm_where(x, axis, ~np.asarray(where, bool))
        if kind == "mask_after_softmax":
            return sm_where(x, axis) * where
        if kind == "renormalised_after":
            w = sm_where(x, axis) * where
            return w / w.sum(axis=axis, keepdims=True)
        if kind == "blocked_set_to_zero":
            return sm_where(np.where(where, x, 0.0), axis)
        if kind == "fill_minus_1e9":
            return sm_where(np.where(where, x, -1e9), axis)
        if kind == "nan_for_empty":
            s = np.where(where, x, -np.inf)
            e = np.exp(s - s.max(axis=axis, keepdims=True))
            return e / e.sum(axis=axis, keepdims=True)
        if kind == "max_over_all":
            e = np.exp(x - x.max(axis=axis, keepdims=True)) * where
            total = e.sum(axis=axis, keepdims=True)
            return np.divide(e, total, out=np.zeros_like(e), where=total > 0)
        if kind == "naive_masked":
            e = np.exp(np.where(where, x, -np.inf))
            total = e.sum(axis=axis, keepdims=True)
            return np.divide(e, total, out=np.zeros_like(e), where=total > 0)
        raise AssertionError(kind)

    return fn


def masked_right(q, k, v, mask):
    return guarded_weights(np.where(mask, q @ k.T / math.sqrt(q.shape[-1]), -np.inf)) @ v


def masked_fill(fill, guard=False):
    def fn(q, k, v, mask):
        s = np.where(mask, q @ k.T / math.sqrt(q.shape[-1]), fill)
        return (guarded_weights(s) if guard else own_softmax(s)) @ v

    return fn


def masked_after(renormalise):
    def fn(q, k, v, mask):
        w = own_softmax(q @ k.T / math.sqrt(q.shape[-1])) * mask
        if renormalise:
            w = w / w.sum(axis=-1, keepdims=True)
        return w @ v

    return fn


def masked_naive(q, k, v, mask):
    s = np.where(mask, q @ k.T / math.sqrt(q.shape[-1]), -np.inf)
    e = np.exp(s)
    total = e.sum(axis=-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0) @ v


def masked_scaled(c):
    def fn(q, k, v, mask):
        return guarded_weights(np.where(mask, q @ k.T * c(q), -np.inf)) @ v

    return fn


def padded(fn2, change=lambda lengths: lengths, sides="both"):
    """E5 exercise 3 from a masked attention ``fn2(q, k, v, mask)`` of one sentence: the mask of
    real (query, key) pairs is built from the lengths (``change``-d, one ``sides`` only for the
    wrong answers), and ``fn2`` runs sentence by sentence."""

    def fn(q, k, v, lengths):
        real = np.arange(q.shape[-2]) < np.asarray(change(np.asarray(lengths)))[:, None]
        rows = real[:, :, None] if sides != "keys" else np.ones_like(real)[:, :, None]
        cols = real[:, None, :] if sides != "queries" else np.ones_like(real)[:, None, :]
        mask = rows & cols
        outs = [fn2(q[b], k[b], v[b], mask[b]) for b in range(len(q))]
        return np.stack([o[0] if isinstance(o, tuple) else o for o in outs])

    return fn


def padded_batched(q, k, v, lengths):
    """E5 exercise 3 at once for the whole batch, with a (B, n, n) mask."""
    real = np.arange(q.shape[-2]) < np.asarray(lengths)[:, None]
    allowed = real[:, :, None] & real[:, None, :]
    s = np.where(allowed, q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1]), -np.inf)
    return guarded_weights(s) @ v


def masked_fill_attention_05(Q, K, V, mask=None):
    """Notebook 05's function, as the lecture writes it (an integer mask, 0 = blocked)."""
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = np.where(mask == 0, -np.inf, scores)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    attention_weights = e / e.sum(axis=-1, keepdims=True)
    return attention_weights @ V, attention_weights


def masked_rows_loop(q, k, v, mask):
    out = np.zeros((q.shape[0], v.shape[1]))
    for i in range(q.shape[0]):
        allowed = np.flatnonzero(mask[i])
        if allowed.size:
            s = k[allowed] @ q[i] / math.sqrt(q.shape[-1])
            e = np.exp(s - s.max())
            out[i] = e / e.sum() @ v[allowed]
    return out


def _visible_e5():
    return [(x,) for _, x in e5_definition._softmax_probes()]


E5_WRONG = [
    (lambda a: check_definition_shapes(*a), ((3, 2, 6, 4), (3, 2, 6, 4), (3, 2, 6, 5)), "n_m_swapped"),
    (lambda a: check_definition_shapes(*a), ((3, 2, 4, 6), (3, 2, 4, 6), (3, 2, 4, 8)), "d_k_d_v_swapped"),
    (lambda a: check_definition_shapes(*a), ((3, 2, 4, 4), (3, 2, 4, 6), (3, 2, 4, 5)), "assumed_square"),
    (lambda a: check_definition_shapes(*a), ((3, 2, 4, 8), (3, 2, 4, 6), (3, 2, 4, 5)), "used_d_k"),
    (lambda a: check_definition_shapes(*a), ((3, 2, 4, 6), (3, 2, 4, 6), (3, 2, 5, 4)), "transposed"),
    (lambda a: check_definition_shapes(*a), ((3, 2, 4, 6), (3, 2, 4, 6), (3, 2, 4, 6)), "out_is_weights"),
    (lambda a: check_definition_shapes(*a), ("3x2x4x6", (3, 2, 4, 6), (3, 2, 4, 5)), "not_a_shape"),
    (lambda a: check_definition_shapes(*a), ((4, 6), (4, 6), (4, 5)), "no_leading_axes"),  # notebook 05's way
    (lambda a: check_definition_shapes(*a), ((2, 3, 4, 6), (2, 3, 4, 6), (2, 3, 4, 5)), "leading_axes_swapped"),
    (lambda a: check_definition_shapes(*a), ((3, 1, 4, 6), (3, 1, 4, 6), (3, 1, 4, 5)), "kept_length_one_axis"),
    (lambda a: check_definition_shapes(*a), ((2, 4, 6), (2, 4, 6), (2, 4, 5)), "no_batch_axis"),
    (check_stable_softmax, lambda x: helpers.attention.softmax(x), "reaches_library"),
    (check_stable_softmax, imported_softmax, "reaches_library"),
    (check_stable_softmax, COPIED_SOFTMAX, "reaches_library"),
    (check_stable_softmax, lambda x: COPIED_SOFTMAX(x), "reaches_library"),
    (check_stable_softmax, in_a_thread(imported_softmax), "reaches_library"),
    (check_stable_softmax, lambda x: POOL.submit(own_softmax, x).result(), "reaches_library"),
    (check_stable_softmax, functools.partial(imported_softmax, axis=-1), "reaches_library"),
    (check_stable_softmax, lambda x: eval("own_softmax(x)"), "reaches_library"),  # noqa: S307
    # routes through builtins, compile and a timer thread, none naming the library in its code
    (check_stable_softmax, lambda x: __import__("builtins").__import__("helpers.att" "ention", fromlist=["x"])
     .softmax(x), "reaches_library"),
    (check_stable_softmax, lambda x: eval(compile("__import__('helpers.attention').attention.softmax(x)",  # noqa: S307
                                                  "cell", "eval")), "reaches_library"),
    (check_stable_softmax, lambda x: (lambda box, t: (t.start(), t.join(), box[0])[2])(
        box := [], threading.Timer(0, lambda: box.append(own_softmax(x)))), "reaches_library"),
    (check_stable_softmax, lookup_table(_visible_e5(), own_softmax), None),
    (check_stable_softmax, naive_softmax, "no_max_subtraction"),
    (check_stable_softmax, shifted(lambda x: x.min(axis=-1, keepdims=True)), "subtracted_row_min"),
    (check_stable_softmax, shifted(lambda x: x.mean(axis=-1, keepdims=True)), "subtracted_row_mean"),
    (check_stable_softmax, shifted(lambda x: x.max()), "subtracted_global_max"),
    (check_stable_softmax, lambda x: own_softmax(x, axis=0), "wrong_axis"),
    (check_stable_softmax, lambda x: np.exp(x - x.max(axis=-1, keepdims=True)), "not_normalised"),
    (check_stable_softmax, lambda x: own_softmax(x) ** 2, "not_normalised"),
    (check_stable_softmax, lambda x: own_softmax(x)[..., ::-1], "wrong_values"),
    (check_stable_softmax, lambda x: np.exp(x - np.max(x, x)) / np.exp(x - np.max(x, x)).sum(), "max_of_two_arrays"),
    (check_stable_softmax, lambda x: np.exp(x - x.max(axis=-1)) / np.exp(x - x.max(axis=-1)).sum(axis=-1),
     "missing_keepdims"),
    (check_stable_softmax, softmax_loop_math, "no_max_subtraction"),  # math.exp(1e4) raises OverflowError
    (check_stable_softmax, lambda x: own_softmax(np.asarray(x, np.float16)), "precision"),
    (check_stable_softmax, lambda x: own_softmax(x).tolist()[0], "wrong_shape"),
    (check_stable_softmax, 3.0, "not_callable"),
    # the next step beyond notebook 06: an axis and a mask
    (check_stable_softmax, own_softmax, "no_axis_or_where"),  # notebook 06's stable_softmax, with axis=
    (check_stable_softmax, lambda x, axis=-1: own_softmax(x, axis), "no_axis_or_where"),
    (check_stable_softmax, sm_variant("axis_ignored"), "axis_ignored"),
    (check_stable_softmax, sm_variant("where_ignored"), "where_ignored"),
    (check_stable_softmax, sm_variant("inverted_mask"), "inverted_mask"),
    (check_stable_softmax, sm_variant("mask_after_softmax"), "mask_after_softmax"),
    (check_stable_softmax, sm_variant("renormalised_after"), "empty_row_nan"),
    (check_stable_softmax, sm_variant("blocked_set_to_zero"), "blocked_set_to_zero"),
    (check_stable_softmax, sm_variant("fill_minus_1e9"), "empty_row_not_zero"),
    (check_stable_softmax, sm_variant("nan_for_empty"), "empty_row_nan"),
    (check_stable_softmax, sm_variant("max_over_all"), "blocked_in_max"),
    (check_stable_softmax, sm_variant("naive_masked"), "overflow"),
    (check_stable_softmax, lambda x, axis=-1, where=None: sm_where(x, axis, where).T, "wrong_shape"),
    (check_stable_softmax, lambda x, axis=-1, where=None: sm_where(x, axis, where) * (1 if where is None else 2),
     "wrong_values"),
    (check_masked_attention, lambda q, k, v, n: helpers.attention.scaled_dot_product_attention(q, k, v)[0],
     "reaches_library"),
    (check_masked_attention, lambda q, k, v, n: COPIED_SDPA(q, k, v)[0], "reaches_library"),
    (check_masked_attention, in_a_thread(lambda q, k, v, n: imported_sdpa(q, k, v)[0]), "reaches_library"),
    (check_masked_attention, padded(lambda q, k, v, m: masked_right(q, k, v, np.ones_like(m))), "mask_ignored"),
    (check_masked_attention, padded(lambda q, k, v, m: masked_right(q, k, v, ~m)), None),
    (check_masked_attention, padded(masked_fill(0.0)), "masked_with_zero"),
    (check_masked_attention, padded(masked_fill(-1e9)), "masked_row_not_zero"),
    (check_masked_attention, padded(masked_after(False)), "mask_after_softmax"),
    (check_masked_attention, padded(masked_after(True)), "nan_for_masked_row"),
    (check_masked_attention, padded(masked_naive), "overflow"),
    (check_masked_attention, padded(masked_scaled(lambda q: 1.0)), "unscaled"),
    (check_masked_attention, padded(masked_scaled(lambda q: 1 / q.shape[-1])), "divided_by_d_k"),
    (check_masked_attention, padded(masked_fill(-np.inf)), "nan_for_masked_row"),
    (check_masked_attention, lambda q, k, v, n: padded(masked_right)(q, k, v, n).astype(np.float16), "precision"),
    # beyond notebook 05: the lengths, and the padding queries
    (check_masked_attention, masked_fill_attention_05, "lengths_as_mask"),  # notebook 05's function, verbatim
    (check_masked_attention, lambda q, k, v, n: masked_fill_attention_05(
        q, k, v, (np.arange(q.shape[-2]) < n[:, None])[:, None, :]), "padded_queries_not_zero"),
    (check_masked_attention, padded(masked_right, sides="keys"), "padded_queries_not_zero"),
    (check_masked_attention, padded(masked_right, sides="queries"), "padded_keys_attended"),
    (check_masked_attention, padded(masked_right, change=lambda n: n + 1), "length_off_by_one"),
    (check_masked_attention, padded(masked_right, change=lambda n: np.maximum(n - 1, 0)), "length_off_by_one"),
    (check_masked_attention, padded(masked_right, change=lambda n: n[::-1]), None),  # lengths of another sentence
    (check_masked_attention, lambda q, k, v, n: padded(masked_right)(q, k, v, n)[..., :1], "wrong_shape"),
]

def softmax_that_mentions_the_library(x, axis=-1, where=None):
    """My own stable softmax; compare it with helpers.attention.softmax outside the graded cell."""
    note = "checked against helpers.attention.softmax in a scratch cell"  # a mention, not a use
    del note
    return sm_where(x, axis, where)


E5_RIGHT = [
    (check_stable_softmax, softmax_that_mentions_the_library),  # a mention of the library is not refused: use is
    (lambda a: check_definition_shapes(*a), ((3, 2, 4, 6), (3, 2, 4, 6), (3, 2, 4, 5))),
    (lambda a: check_definition_shapes(*a), ([3, 2, 4, 6], np.array([3, 2, 4, 6]), (3.0, 2.0, 4.0, 5.0))),
    (check_stable_softmax, sm_where),
    (check_stable_softmax, sm_where_builtin),
    (check_stable_softmax, sm_where_loops),
    (check_stable_softmax, lambda x, axis=-1, where=None: sm_where(x, axis, where).astype(np.float32)),
    (check_stable_softmax, lambda x, axis=-1, where=None: SoftmaxObject()(np.asarray(x, np.float32), axis, where)),
    (check_stable_softmax, SoftmaxObject()),  # a callable object
    (check_stable_softmax, lambda x, axis=-1, where=None: np.swapaxes(
        sm_where(np.swapaxes(x, axis, -1), -1, None if where is None else np.swapaxes(where, axis, -1)), axis, -1)),
    (check_masked_attention, padded_batched),
    (check_masked_attention, padded(masked_right)),
    (check_masked_attention, padded(masked_rows_loop)),
    (check_masked_attention, padded(lambda q, k, v, m: masked_fill(-1e9)(q, k, v, m) * m.any(axis=-1, keepdims=True))),
    (check_masked_attention, lambda q, k, v, n: (padded_batched(q, k, v, n), "weights")),
    (check_masked_attention, lambda q, k, v, n: padded_batched(q, k, v, list(n))),
]

# ---------------------------------------------------------------------------
# E6: the backward pass, with and without a mask
# ---------------------------------------------------------------------------


def backward_from(weights_of, kind="right", keep=False):
    def fn(q, k, v, d_out, mask=None):
        p = weights_of(q, k, mask)
        c = 1 / math.sqrt(q.shape[-1])
        d_p = d_out @ v.T
        d_s = p * (d_p - (p * d_p).sum(axis=-1, keepdims=True))
        if kind == "missing_jacobian_term":
            d_s = p * d_p
        if keep and mask is not None:
            d_s = d_s * mask
        c2 = {"missing_scale": 1.0, "scale_squared": c * c}.get(kind, c)
        d_q, d_k, d_v = c2 * d_s @ k, c2 * d_s.T @ q, p.T @ d_out
        if kind == "d_v_not_transposed":
            d_v = p @ d_out
        if kind == "d_k_not_transposed":
            d_k = c * d_s @ q
        if kind == "d_q_d_k_swapped":
            d_q, d_k = c * d_s.T @ q, c * d_s @ k
        return d_q, d_k, d_v

    return fn


def w_stable(q, k, mask=None):
    s = q @ k.T / math.sqrt(q.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    return guarded_weights(s)


def w_naive(q, k, mask=None):
    s = q @ k.T / math.sqrt(q.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    e = np.exp(s)
    total = e.sum(axis=-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def w_fill(fill):
    def fn(q, k, mask=None):
        return own_softmax(np.where(mask, q @ k.T / math.sqrt(q.shape[-1]), fill))

    return fn


def w_unguarded(q, k, mask=None):
    with np.errstate(all="ignore"):
        return own_softmax(np.where(mask, q @ k.T / math.sqrt(q.shape[-1]), -np.inf))


def w_after(q, k, mask=None):
    return own_softmax(q @ k.T / math.sqrt(q.shape[-1])) * mask


def backward_einsum(q, k, v, d_out):
    c = 1 / np.sqrt(q.shape[-1])
    p = own_softmax(np.einsum("id,jd->ij", q, k) * c)
    d_p = np.einsum("ie,je->ij", d_out, v)
    d_s = p * (d_p - np.einsum("ij,ij->i", p, d_p)[:, None])
    return np.einsum("ij,jd->id", d_s, k) * c, np.einsum("ij,id->jd", d_s, q) * c, np.einsum("ij,ie->je", p, d_out)


def backward_loops(q, k, v, d_out):
    """Row by row, with the softmax's Jacobian built as a matrix (notebook 09's first form)."""
    c = 1 / math.sqrt(q.shape[-1])
    p = own_softmax(q @ k.T * c)
    d_s = np.zeros_like(p)
    d_p = d_out @ v.T
    for i in range(p.shape[0]):
        jac = np.diag(p[i]) - np.outer(p[i], p[i])
        d_s[i] = jac @ d_p[i]
    return c * d_s @ k, c * d_s.T @ q, p.T @ d_out


def lifted(qkv_grads, path="all", transpose=True, dw_side="left"):
    """E6 exercise 1 from a backward pass ``qkv_grads(q, k, v, d_out)`` of attention: the
    gradients of x and of the projections (``path``, ``transpose``, ``dw_side``: wrong answers)."""

    def fn(x, w_q, w_k, w_v, d_out):
        d_q, d_k, d_v = qkv_grads(x @ w_q, x @ w_k, x @ w_v, d_out)
        back = [(d_q, w_q), (d_k, w_k), (d_v, w_v)]
        routes = {"all": back, "no_q": back[1:], "no_k": [back[0], back[2]], "no_v": back[:2],
                  "q_only": back[:1]}[path]
        d_x = sum(g @ (w.T if transpose else w) for g, w in routes)
        d_ws = [x.T @ g if dw_side == "left" else g.T @ x for g in (d_q, d_k, d_v)]
        return (d_x, *d_ws)

    return fn


def self_backward_loops(x, w_q, w_k, w_v, d_out):
    """dX token by token: each token's gradient collects what it sent as query, key and value."""
    d_q, d_k, d_v = backward_loops(x @ w_q, x @ w_k, x @ w_v, d_out)
    d_x = np.zeros_like(x)
    for i in range(x.shape[0]):
        d_x[i] = w_q @ d_q[i] + w_k @ d_k[i] + w_v @ d_v[i]
    return d_x, np.einsum("nd,ne->de", x, d_q), np.einsum("nd,ne->de", x, d_k), np.einsum("nd,ne->de", x, d_v)


def backward_from_weights_10(P, Q, K, V, dO):  # noqa: N803 - notebook 10's function, verbatim
    scale = 1 / np.sqrt(Q.shape[-1])
    dV = np.swapaxes(P, -1, -2) @ dO  # noqa: N806
    dP = dO @ np.swapaxes(V, -1, -2)  # noqa: N806
    dS = P * (dP - np.sum(P * dP, axis=-1, keepdims=True))  # noqa: N806
    dQ = scale * dS @ K  # noqa: N806
    dK = scale * np.swapaxes(dS, -1, -2) @ Q  # noqa: N806
    return dQ, dK, dV


def padded_bw(fn5, change=lambda lengths: lengths, sides="both"):
    """E6 exercise 2 from a masked backward pass ``fn5(q, k, v, d_out, mask)`` of one sequence: the
    mask built from the lengths (``change``-d, one of its ``sides``: wrong answers), sequence by sequence."""

    def fn(q, k, v, d_out, lengths):
        real = np.arange(q.shape[-2]) < np.asarray(change(np.asarray(lengths)))[:, None]
        rows = real[:, :, None] if sides != "keys" else np.ones_like(real)[:, :, None]
        cols = real[:, None, :] if sides != "queries" else np.ones_like(real)[:, None, :]
        mask = rows & cols
        grads = [fn5(q[b], k[b], v[b], d_out[b], mask[b]) for b in range(len(q))]
        return tuple(np.stack(parts) for parts in zip(*grads))

    return fn


def padded_backward_batched(q, k, v, d_out, lengths):
    """E6 exercise 2 for the whole batch at once (swapaxes for the transposes)."""
    real = np.arange(q.shape[-2]) < np.asarray(lengths)[:, None]
    allowed = real[:, :, None] & real[:, None, :]
    c = 1 / math.sqrt(q.shape[-1])
    p = guarded_weights(np.where(allowed, q @ np.swapaxes(k, -1, -2) * c, -np.inf))
    d_p = d_out @ np.swapaxes(v, -1, -2)
    d_s = p * (d_p - (p * d_p).sum(axis=-1, keepdims=True))
    return c * d_s @ k, c * np.swapaxes(d_s, -1, -2) @ q, np.swapaxes(p, -1, -2) @ d_out


def _visible_self_e6():
    return [args for _, *args in e6_backward._self_cases()]


def _visible_e6(masked):
    return [(q, k, v, d) + ((m,) if masked else ()) for _, q, k, v, d, m in e6_backward._backward_cases(masked)]


E6_WRONG = [
    (check_attention_backward, lambda x, wq, wk, wv, d: helpers.attention.attention_backward(x @ wq, x @ wk, x @ wv, d),
     "reaches_library"),
    (check_attention_backward, lifted(lambda q, k, v, d: COPIED_BACKWARD(q, k, v, d)), "reaches_library"),
    (check_attention_backward, in_a_thread(lifted(lambda q, k, v, d: helpers.attention.attention_backward(q, k, v, d))),
     "reaches_library"),
    (check_attention_backward,
     lifted(backward_from(lambda q, k, m=None: imported_softmax(q @ k.T / math.sqrt(q.shape[-1])))), "reaches_library"),
    (check_attention_backward, lookup_table(_visible_self_e6(), lifted(backward_from(w_stable))), None),
    (check_attention_backward, lambda x, wq, wk, wv, d: e6_backward._self_variants(x, wq, wk, wv, d)["right"],
     "reaches_library"),
    (check_attention_backward, lifted(backward_from(w_naive)), "overflow"),
    (check_attention_backward, lambda *a: lifted(backward_from(w_stable))(*a)[:3], "returned_qkv_gradients"),
    (check_attention_backward, lambda *a: lifted(backward_from(w_stable))(*a)[:2], "wrong_shape"),
    (check_attention_backward, lambda *a: tuple(g * 2 for g in lifted(backward_from(w_stable))(*a)), "wrong_values"),
    # notebook 10's backward_from_weights, verbatim, and with its three results as the answer
    (check_attention_backward, backward_from_weights_10, "returned_qkv_gradients"),
    (check_attention_backward, lambda x, wq, wk, wv, d: backward_from_weights_10(
        own_softmax((x @ wq) @ (x @ wk).T / np.sqrt(wq.shape[1])), x @ wq, x @ wk, x @ wv, d),
     "returned_qkv_gradients"),
    (check_attention_backward, lifted(backward_from(w_stable), path="no_q"), "missing_path_q"),
    (check_attention_backward, lifted(backward_from(w_stable), path="no_k"), "missing_path_k"),
    (check_attention_backward, lifted(backward_from(w_stable), path="no_v"), "missing_path_v"),
    (check_attention_backward, lifted(backward_from(w_stable), path="q_only"), "only_one_path"),
    (check_attention_backward, lifted(backward_from(w_stable), transpose=False), "projection_not_transposed"),
    (check_attention_backward, lifted(backward_from(w_stable), dw_side="right"), "d_w_transposed"),
] + [
    (check_attention_backward, (lambda kind: lifted(backward_from(w_stable, kind)))(kind), kind)
    for kind in ("missing_jacobian_term", "missing_scale", "scale_squared", "d_v_not_transposed",
                 "d_k_not_transposed", "d_q_d_k_swapped")
] + [
    (check_masked_backward, lambda q, k, v, d, n: helpers.attention.attention_backward(q, k, v, d),
     "reaches_library"),
    (check_masked_backward, padded_bw(lambda q, k, v, d, m: POOL.submit(COPIED_BACKWARD, q, k, v, d, m).result()),
     "reaches_library"),
    (check_masked_backward, lookup_table(_visible_e6(True), padded_backward_batched), None),
    (check_masked_backward, padded_bw(backward_from(w_fill(0.0))), "masked_with_zero"),
    (check_masked_backward, padded_bw(backward_from(w_fill(0.0), keep=True)), "masked_with_zero"),
    (check_masked_backward, padded_bw(backward_from(w_fill(-1e9))), "masked_with_large_negative"),
    (check_masked_backward, padded_bw(backward_from(w_fill(-1e9), keep=True)), "masked_with_large_negative"),
    (check_masked_backward, padded_bw(backward_from(w_after)), "mask_after_softmax"),
    (check_masked_backward, padded_bw(backward_from(w_unguarded)), "nan_for_masked_row"),
    (check_masked_backward, padded_bw(backward_from(w_naive)), "overflow"),
    (check_masked_backward, padded_bw(lambda q, k, v, d, m: backward_from(w_stable)(q, k, v, d)), "mask_ignored"),
    (check_masked_backward, padded_bw(backward_from(w_stable, "missing_jacobian_term")), "missing_jacobian_term"),
    (check_masked_backward, padded_bw(backward_from(w_stable, "missing_scale")), "missing_scale"),
    (check_masked_backward, padded_bw(backward_from(w_stable, "d_v_not_transposed")), "d_v_not_transposed"),
    # beyond notebooks 09 and 10: the lengths, both sides, a batch
    (check_masked_backward, backward_from(w_stable), "transpose_of_batch"),  # written for one sequence
    (check_masked_backward, padded_bw(backward_from(w_stable), sides="keys"), "padded_queries_pass_gradient"),
    (check_masked_backward, padded_bw(backward_from(w_stable), sides="queries"), "padded_keys_get_gradient"),
    (check_masked_backward, padded_bw(backward_from(w_stable), change=lambda n: n + 1), "length_off_by_one"),
    (check_masked_backward, padded_bw(backward_from(w_stable), change=lambda n: np.maximum(n - 1, 0)),
     "length_off_by_one"),
    (check_masked_backward, lambda q, k, v, d, n: backward_from(w_stable)(
        q, k, v, d, (np.arange(q.shape[-2]) < n[:, None])[:, None, :]), "transpose_of_batch"),
]

E6_RIGHT = [
    (check_attention_backward, lifted(backward_from(w_stable))),
    (check_attention_backward, lifted(backward_einsum)),
    (check_attention_backward, self_backward_loops),
    (check_attention_backward, lifted(lambda q, k, v, d: backward_from_weights_10(
        own_softmax(q @ k.T / np.sqrt(q.shape[-1])), q, k, v, d))),  # notebook 10's function, then the routes
    (check_attention_backward, lambda *a: [g.astype(np.float32) for g in lifted(backward_from(w_stable))(*a)]),
    (check_masked_backward, padded_bw(backward_from(w_stable))),
    (check_masked_backward, padded_bw(backward_from(w_stable, keep=True))),
    (check_masked_backward, padded_backward_batched),
    (check_masked_backward, lambda q, k, v, d, n: tuple(
        g.astype(np.float32) for g in padded_bw(backward_from(w_stable))(
            q.astype(np.float32), k.astype(np.float32), v.astype(np.float32), d.astype(np.float32), n))),
]

# ---------------------------------------------------------------------------
# E7: merging k blocks of the online softmax at once
# ---------------------------------------------------------------------------


def merge_with(kind="right", guard=True):
    def fn(m_a, l_a, o_a, m_b, l_b, o_b):
        m = {"max_from_newer_block": m_b, "max_from_older_block": m_a}.get(kind, np.maximum(m_a, m_b))
        ref = np.where(np.isfinite(m), m, 0.0) if guard else m
        with np.errstate(all="ignore"):
            a, b = np.exp(m_a - ref), np.exp(m_b - ref)
        la, oa = (l_a, o_a) if kind == "older_not_rescaled" else (l_a * a, o_a * a)
        l_ = l_a + l_b if kind == "sum_not_rescaled" else la + l_b * b
        o_ = o_a + o_b if kind == "output_not_rescaled" else oa + o_b * b
        return m, l_, o_

    return fn


def merge_unshifted(m_a, l_a, o_a, m_b, l_b, o_b):
    """Undo each block's shift, add, shift again: exp(m) overflows at scores of 1e4."""
    m = np.maximum(m_a, m_b)
    total_l = l_a * np.exp(m_a) + l_b * np.exp(m_b)
    total_o = o_a * np.exp(m_a) + o_b * np.exp(m_b)
    return m, total_l / np.exp(m), total_o / np.exp(m)


def merge_logaddexp(m_a, l_a, o_a, m_b, l_b, o_b):
    m = np.maximum(m_a, m_b)
    with np.errstate(divide="ignore"):
        log_l = np.logaddexp(np.log(l_a) + m_a, np.log(l_b) + m_b) - np.where(np.isfinite(m), m, 0.0)
    safe = np.where(np.isfinite(m), m, 0.0)
    return m, np.exp(log_l), o_a * np.exp(m_a - safe) + o_b * np.exp(m_b - safe)


def merge_where(m_a, l_a, o_a, m_b, l_b, o_b):
    m = np.maximum(m_a, m_b)
    a = np.where(np.isneginf(m_a), 0.0, np.exp(np.where(np.isneginf(m_a), 0.0, m_a - np.where(np.isneginf(m), 0.0, m))))
    b = np.where(np.isneginf(m_b), 0.0, np.exp(np.where(np.isneginf(m_b), 0.0, m_b - np.where(np.isneginf(m), 0.0, m))))
    return m, l_a * a + l_b * b, o_a * a + o_b * b


def folded(merge2):
    """E7: k stacked states merged by folding a merge of two states over the blocks, in order."""

    def fn(m, ell, o):
        state = (m[0], ell[0], o[0])
        for i in range(1, len(m)):
            state = merge2(*state, m[i], ell[i], o[i])
        return state

    return fn


def merge_all_with(kind="right", guard=True):
    """E7 at once over the stack (axis 0), or one of its mistakes."""

    def fn(m, ell, o):
        top = {"max_from_first_block": m[0], "max_from_last_block": m[-1]}.get(kind, m.max(axis=0))
        ref = np.where(np.isfinite(top), top, 0.0) if guard else top
        with np.errstate(all="ignore"):
            f = np.exp(m - ref)
        lf = 1.0 if kind in ("not_rescaled", "sum_not_rescaled") else f
        of = 1.0 if kind in ("not_rescaled", "output_not_rescaled") else f
        return top, (ell * lf).sum(axis=0), (o * of).sum(axis=0)

    return fn


def merge_all_logsumexp(m, ell, o):
    """The merged sum through log-sum-exp of log(l) + m over the blocks."""
    top = m.max(axis=0)
    safe = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        log_terms = np.log(ell) + m - safe
    big = np.max(log_terms, axis=0)
    big_safe = np.where(np.isfinite(big), big, 0.0)
    merged_l = np.exp(big_safe) * np.sum(np.exp(log_terms - big_safe), axis=0)
    return top, merged_l, np.sum(o * np.exp(m - safe), axis=0)


def merge_sign_flipped(m, ell, o):
    """The rescaling upside down: exp(M - m) for each block."""
    top = m.max(axis=0)
    safe = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(all="ignore"):
        f = np.where(np.isfinite(m), np.exp(safe - m), 0.0)
    return top, (ell * f).sum(axis=0), (o * f).sum(axis=0)


def merge_global_max(m, ell, o):
    """One maximum for every row: the largest over all rows and blocks."""
    g = np.max(m[np.isfinite(m)])
    f = np.exp(m - g)
    return np.full(m.shape[1:], g), (ell * f).sum(axis=0), (o * f).sum(axis=0)


def _visible_e7():
    return [(m, ell, o) for m, ell, o, _, _ in e6_backward._merge_cases()]


E7_WRONG = [
    (check_online_softmax_merge, merge_all_with("not_rescaled"), "not_rescaled"),
    (check_online_softmax_merge, merge_all_with("max_from_first_block"), None),
    (check_online_softmax_merge, merge_all_with("max_from_last_block"), None),
    (check_online_softmax_merge, merge_all_with("sum_not_rescaled"), "sum_not_rescaled"),
    (check_online_softmax_merge, merge_all_with("output_not_rescaled"), "output_not_rescaled"),
    (check_online_softmax_merge, merge_all_with(guard=False), "not_finite"),
    (check_online_softmax_merge, folded(merge_with(guard=False)), "not_finite"),
    (check_online_softmax_merge, folded(merge_unshifted), "overflow"),
    (check_online_softmax_merge, folded(merge_with("older_not_rescaled")), None),
    (check_online_softmax_merge, folded(merge_with("sum_not_rescaled")), "sum_not_rescaled"),
    # the merge of two states (notebook 11's update), not the stack
    (check_online_softmax_merge, merge_with(), "pairwise_signature"),
    (check_online_softmax_merge, lambda m, ell, o: merge_with()(m[0], ell[0], o[0], m[-1], ell[-1], o[-1]), None),
    (check_online_softmax_merge, lambda m, ell, o: merge_with()(m[0], ell[0], o[0], m[1], ell[1], o[1])
     if len(m) > 1 else (m[0], ell[0], o[0]), "only_two_blocks"),
    (check_online_softmax_merge, merge_sign_flipped, "sign_flipped"),
    (check_online_softmax_merge, merge_global_max, "global_max"),
    (check_online_softmax_merge, lambda m, ell, o: (m, ell, o), "wrong_shape"),
    (check_online_softmax_merge, lambda *st: (lambda m, ell, o: (m[:, 0], ell, o))(*merge_all_with()(*st)),
     "reshape_needed"),
    (check_online_softmax_merge, lambda *st: (lambda m, ell, o: (m[:, 0], ell[:, 0], o))(*merge_all_with()(*st)),
     "reshape_needed"),
    (check_online_softmax_merge, lambda *st: (lambda m, ell, o: (m, ell[:, 0], o))(*merge_all_with()(*st)),
     "reshape_needed"),
    (check_online_softmax_merge, lambda *s: merge_all_with()(*s)[:2], "wrong_shape"),
    (check_online_softmax_merge, lookup_table(_visible_e7(), merge_all_with()), None),
    (check_online_softmax_merge, in_a_thread(merge_all_with()), "reaches_library"),
    (check_online_softmax_merge, lambda *s: (s[0].max(axis=0),) + tuple(
        imported_softmax(np.zeros((1, 1))) * x for x in merge_all_with()(*s)[1:]), "reaches_library"),
    (check_online_softmax_merge, lambda *s: exec("pass") or merge_all_with()(*s), "reaches_library"),
    (check_online_softmax_merge, lambda m, ell, o: (m[-1], ell.sum(axis=0), o.sum(axis=0)), None),
    (check_online_softmax_merge, lambda *st: tuple(x.astype(np.float16) for x in merge_all_with()(*st)), None),
]

E7_RIGHT = [
    (check_online_softmax_merge, merge_all_with()),
    (check_online_softmax_merge, folded(merge_with())),  # notebook 11's update, folded over the blocks
    (check_online_softmax_merge, folded(merge_logaddexp)),
    (check_online_softmax_merge, folded(merge_where)),
    (check_online_softmax_merge, merge_all_logsumexp),
    (check_online_softmax_merge, lambda *st: tuple(np.float32(1) * x for x in merge_all_with()(
        *(np.asarray(x, np.float32) for x in st)))),
]

def _switched_off_routes():
    """E6 ex. 2's routes that switched the library check off (tests/test_checks_e6_shapes.py): an index
    past 50, a nested dict, functools.partial, a class attribute, a generator. The visible check refuses
    each; the hidden tests fail each too (tests/test_nbgrader.py), with the kernels as traps."""
    import sys as _sys
    from pathlib import Path as _Path

    _sys.path.insert(0, str(_Path(__file__).resolve().parent))
    import test_checks_e6_shapes

    return [(check_masked_backward, fn, None) for _, fn in sorted(test_checks_e6_shapes._library_routes().items())]


E6_WRONG += _switched_off_routes()
WRONG = E4_WRONG + E5_WRONG + E6_WRONG + E7_WRONG
RIGHT = E4_RIGHT + E5_RIGHT + E6_RIGHT + E7_RIGHT


def _id(item):
    check, _, name = item if len(item) == 3 else (*item, "right")
    return f"{getattr(check, '__name__', 'check')}-{name}"


def test_corpus_size():
    assert len(WRONG) >= 90 and len(RIGHT) >= 25, (len(WRONG), len(RIGHT))


@pytest.mark.parametrize("item", WRONG, ids=[_id(i) for i in WRONG])
def test_every_wrong_answer_refused(item):
    check, answer, mistake = item
    result = check(answer)
    assert result.status == "incorrect", result
    if mistake is not None:
        assert result.mistake == mistake, result


@pytest.mark.parametrize("item", RIGHT, ids=[_id(i) for i in RIGHT])
def test_every_right_answer_accepted(item):
    check, answer = item
    result = check(answer)
    assert result.status == "correct", result


def test_float32_is_accepted_with_a_note_on_precision():
    r = check_stable_softmax(lambda x, axis=-1, where=None: SoftmaxObject()(np.asarray(x, np.float32), axis, where))
    assert r and "float32" in r.message and "precision" in r.message
    r = check_stable_softmax(lambda x: own_softmax(np.asarray(x, np.float16)))
    assert not r and "float16" in r.message and "precision is the problem" in r.message


def test_refusals_say_why():
    for check, answer, mistake in WRONG:
        if mistake == "reaches_library":
            message = check(answer).message
            assert "graded answers must be computed with your own NumPy code, not the library's kernels" in message


def test_overflow_messages_give_the_fix():
    for check, answer, mistake in WRONG:
        if mistake == "overflow":
            message = check(answer).message
            assert "overflow" in message and "maximum" in message and "05 and 06" in message, message


def test_no_catch_all_message_gives_the_recipe():
    # The messages of unrecognised answers name no formula: no "exp(", "max(m_a", "P^T dO", "-inf then".
    catch_alls = [
        check_self_attention(lambda *a: (lambda c, k, v: (c + 1, k, v))(*dec_right(*a))),
        check_stable_softmax(lambda x: own_softmax(x)[..., ::-1]),
        check_stable_softmax(lambda x, axis=-1, where=None: sm_where(x, axis, where) * (1 if where is None else 2)),
        check_masked_attention(lambda q, k, v, n: padded_batched(q, k, v, n) * 2),
        check_attention_backward(lambda *a: tuple(g * 2 for g in lifted(backward_from(w_stable))(*a))),
        check_online_softmax_merge(lambda m, ell, o: (m.max(axis=0), ell[0], o[0])),
    ]
    for r in catch_alls:
        assert r.mistake == "wrong_values", r
        for recipe in ("exp(", "max(m_a", "P^T", "dS =", "sqrt(d_k)) with", "keepdims=True) before"):
            assert recipe not in r.message, (recipe, r.message)


def test_messages_agree_in_number():
    import re

    bad = re.compile(r"\bYour (weights|scores|context vectors|gradients|values) (has|is|holds|contains|does)\b"
                     r"|\b(dQ|dK|dV) and (dQ|dK|dV) does\b")
    messages = [check(answer).message for check, answer, _ in WRONG]
    offenders = [m for m in messages if bad.search(m)]
    assert not offenders, offenders[:3]


# ---------------------------------------------------------------------------
# Every task passes with what the lessons before it teach
# ---------------------------------------------------------------------------


def test_lessons_suffice_e4_exercise_1():
    # Lessons 01-04: queries and keys by projection, one query's dot product with every key.
    # The new token is one more input row (np.vstack), projected like the others.
    journey = examples.load_example("journey")
    x = np.vstack([journey.inputs, [0.91, 0.12, 0.65]])  # the input the task prints
    queries = x @ journey.w_q
    keys = x @ journey.w_k
    assert check_journey_scores_row(queries[2] @ keys.T)


def test_lessons_suffice_e4_exercise_2():
    # Lesson 01: scale, then exp and divide by the sum (or attention.softmax, as lessons 01-04 do).
    scaled = S[2] / np.sqrt(2)
    exps = np.exp(scaled)
    assert check_journey_weights_row(exps / exps.sum())
    assert check_journey_weights_row(helpers.attention.softmax(scaled))


def test_lessons_suffice_e4_exercise_3():
    # Lesson 04's projections and scaled scores, lesson 01's softmax by hand (no max subtraction:
    # that is lesson 06), np.vstack to add a row.
    def attend_new_token(x_new, keys, values, w_q, w_k, w_v):
        keys = np.vstack([keys, x_new @ w_k])
        values = np.vstack([values, x_new @ w_v])
        scores = keys @ (x_new @ w_q) / np.sqrt(keys.shape[1])
        exps = np.exp(scores)
        return exps / exps.sum() @ values, keys, values

    assert check_self_attention(attend_new_token)


def test_e4_probes_stay_below_overflow():
    for _, (x, w_q, w_k, w_v) in e4_journey._self_attention_cases():
        s = (x @ w_q) @ (x @ w_k).T / math.sqrt(w_q.shape[1])
        assert np.abs(s).max() < e4_journey.MAX_SCORE < 709


def test_lessons_suffice_e4_exercise_4():
    # Lesson 08's rule (the variances of d independent products add) and the task's hint: the
    # variance of one zero-mean product is E[q^2] E[k^2] = 3 x 2.
    d = 100
    assert check_journey_variance_d100(d * 3.0 * 2.0, d * 6.0 / np.sqrt(d) ** 2)


def test_lessons_suffice_e5_exercise_1():
    # Lesson 05's shapes (n, m) and (n, d_v), with leading axes (..., n, d); its padding mask
    # (B, 1, m), whose axis of length 1 broadcasts.
    assert check_definition_shapes((3, 2, 4, 6), (3, 2, 4, 6), (3, 2, 4, 5))


def test_lessons_suffice_e5_exercise_2():
    # Lesson 06: subtract the maximum before exp (keepdims=True); lesson 05: blocked entries are
    # -inf before the softmax, and a row with nothing allowed gives zeros, guarded as in lesson 05.
    def my_softmax(x, axis=-1, where=None):
        if where is not None:
            x = np.where(where, x, -np.inf)
        top = np.max(x, axis=axis, keepdims=True)
        top = np.where(np.isfinite(top), top, 0.0)
        e = np.exp(x - top)
        total = np.sum(e, axis=axis, keepdims=True)
        return np.divide(e, total, out=np.zeros_like(e), where=total > 0)

    assert check_stable_softmax(my_softmax)


def test_lessons_suffice_e5_exercise_3():
    # Lesson 05: -inf for blocked keys, and a fully masked row gives zeros; lesson 06: the max.
    # Lesson 05's padding mask built from lengths (broadcast on both sides) and -inf before the
    # softmax, with the guard for a row with nothing allowed.
    assert check_masked_attention(padded_batched)


def test_lessons_suffice_e6_exercise_1():
    # Lesson 09: the five formulas, with lesson 06's softmax.
    def attention_backward(q, k, v, d_out):
        s = q @ k.T / np.sqrt(q.shape[-1])
        p = np.exp(s - s.max(axis=-1, keepdims=True))
        p = p / p.sum(axis=-1, keepdims=True)
        d_v = p.T @ d_out
        d_p = d_out @ v.T
        d_s = p * (d_p - (p * d_p).sum(axis=-1, keepdims=True))
        return d_s @ k / np.sqrt(q.shape[-1]), d_s.T @ q / np.sqrt(q.shape[-1]), d_v

    # Lesson 09: dW = X^T dQ for a projection; the chain rule: x feeds three routes, which add.
    def self_attention_backward(x, w_q, w_k, w_v, d_out):
        d_q, d_k, d_v = attention_backward(x @ w_q, x @ w_k, x @ w_v, d_out)
        d_x = d_q @ w_q.T + d_k @ w_k.T + d_v @ w_v.T
        return d_x, x.T @ d_q, x.T @ d_k, x.T @ d_v

    assert check_attention_backward(self_attention_backward)


def test_lessons_suffice_e6_exercise_2():
    # Lesson 10: blocked scores -inf, and a fully masked row passes back zeros.
    # Lesson 05's padding mask from the lengths, lesson 09's formulas with swapaxes for the batch.
    assert check_masked_backward(padded_backward_batched)


def test_lessons_suffice_e7():
    # Lesson 11: the running maximum, both blocks rescaled to it; an empty block adds nothing.
    # Lesson 11's running maximum and rescaling, over all the blocks at once (axis=0, as in
    # lessons 05-06's reductions), with an empty block adding nothing.
    assert check_online_softmax_merge(merge_all_with())


def test_fully_masked_row_decision_is_zeros():
    # The decision, documented in the checks and the tasks: a row with no allowed key gives zeros
    # (output, weights and every gradient), as the library's kernels do.
    rng = np.random.default_rng(0)
    q, k, v, d = rng.normal(size=(3, 2)), rng.normal(size=(4, 2)), rng.normal(size=(4, 3)), rng.normal(size=(3, 3))
    mask = np.ones((3, 4), bool)
    mask[1] = False
    out, weights = helpers.attention.scaled_dot_product_attention(q, k, v, mask)
    assert np.all(out[1] == 0) and np.all(weights[1] == 0)
    d_q, _, _ = helpers.attention.attention_backward(q, k, v, d, mask)
    assert np.all(d_q[1] == 0)
    np.testing.assert_allclose(masked_right(q, k, v, mask), out, atol=1e-12)
