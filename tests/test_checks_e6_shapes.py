"""E6 ex. 1 on its non-square cases: a wrong answer of another shape is told wrong, never "could not make sense".

Before the fix, ``_close3`` compared a transposed gradient of shape (4, 3) with one of (3, 4),
NumPy raised, and every mistake first seen on a non-square case (dividing by sqrt(d_v) or
sqrt(d_in), a function right only when everything is square) got the checker's crash message.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from helpers.checks import check_attention_backward


def _backward(scale_of):
    def self_attention_backward(x, w_q, w_k, w_v, d_out):
        q, k, v = x @ w_q, x @ w_k, x @ w_v
        s = q @ k.T / np.sqrt(scale_of(x, w_q, w_v))
        p = np.exp(s - s.max(axis=-1, keepdims=True))
        p /= p.sum(axis=-1, keepdims=True)
        d_v = p.T @ d_out
        d_p = d_out @ v.T
        d_s = p * (d_p - (d_p * p).sum(axis=-1, keepdims=True)) / np.sqrt(scale_of(x, w_q, w_v))
        d_q, d_k = d_s @ k, d_s.T @ q
        d_x = d_q @ w_q.T + d_k @ w_k.T + d_v @ w_v.T
        return d_x, x.T @ d_q, x.T @ d_k, x.T @ d_v
    return self_attention_backward


def _square_only(x, w_q, w_k, w_v, d_out):
    right = _backward(lambda x, w_q, w_v: w_q.shape[1])(x, w_q, w_k, w_v, d_out)
    if x.shape[0] == x.shape[1] == w_q.shape[1] == w_v.shape[1]:
        return right
    return (right[0], right[1].T, right[2].T, right[3].T)   # transposed dW where that changes the shape


def test_the_right_answer_passes():
    assert check_attention_backward(_backward(lambda x, w_q, w_v: w_q.shape[1])).status == "correct"


@pytest.mark.parametrize("fn", [_backward(lambda x, w_q, w_v: w_v.shape[1]),
                                _backward(lambda x, w_q, w_v: x.shape[1]),
                                _square_only],
                         ids=["sqrt_d_v", "sqrt_d_in", "right_only_when_square"])
def test_a_non_square_mistake_is_a_wrong_answer_not_a_crash(fn):
    result = check_attention_backward(fn)
    assert result.status == "incorrect", result.message
    assert "could not make sense" not in result.message, result.message


def test_e6_ex2_prints_lengths_as_plain_numbers():
    """A wrong padded backward is told the lengths as [3, 1], not [np.int64(3), np.int64(1)]."""
    from helpers.checks import check_masked_backward

    def padded_backward(q, k, v, d_out, lengths):
        return np.zeros_like(q), np.zeros_like(k), np.zeros_like(v)

    result = check_masked_backward(padded_backward)
    assert result.status == "incorrect"
    assert "np.int64" not in result.message and "lengths [" in result.message, result.message


def test_e3_ex1_a_negative_temperature_is_not_told_it_gives_the_weight_asked_for():
    """Issue 31 item 6: "At that temperature ... gives itself the weight asked for" read as "your T is right"."""
    from helpers.checks import check_temperature_prediction

    for t in (-0.3, 0.0, -2.0):
        result = check_temperature_prediction(t)
        assert result.status == "incorrect" and result.mistake == "not_positive", (t, result.message)
        assert "At that temperature" not in result.message and "greater than 0" in result.message


# ---------------------------------------------------------------------------
# Routes that switched the library check off (issue 31 item 3): each is refused
# ---------------------------------------------------------------------------

def _library_routes():
    """The issue's route and its variants: the module and sys.setprofile held where the old walk did not look.

    Each switches the recording off (sys.setprofile(None)) and calls the kernel through the
    stand-in's ``__wrapped__``; on the old code each was told "Right".
    """
    import functools
    import importlib
    import sys as _sys

    library = importlib.import_module("helpers." + "attention")

    def run(module, off, q, k, v, d_out, lengths):
        off(None)
        fn = getattr(module.attention_backward, "__wrapped__", module.attention_backward)
        mask = np.arange(k.shape[-2])[None, None, :] < np.asarray(lengths)[:, None, None]
        mask = np.broadcast_to(mask, (q.shape[0], q.shape[-2], k.shape[-2]))
        grads = fn(q, k, v, d_out, mask=mask)
        return grads[0], grads[1], grads[2]

    table = [0.0] * 60 + [library, _sys.setprofile]

    def past_fifty(q, k, v, d_out, lengths, t=table):
        return run(t[60], t[61], q, k, v, d_out, lengths)

    deep = {"a": [0] * 55 + [{"b": (library, _sys.setprofile)}]}

    def nested_dict(q, k, v, d_out, lengths, d=deep):
        return run(*d["a"][55]["b"], q, k, v, d_out, lengths)

    partial = functools.partial(run, library, _sys.setprofile)

    def through_partial(q, k, v, d_out, lengths, f=partial):
        return f(q, k, v, d_out, lengths)

    class Holder:
        padding = [1] * 70
        where = (library, _sys.setprofile)

    def class_attribute(q, k, v, d_out, lengths, h=Holder):
        return run(*h.where, q, k, v, d_out, lengths)

    def generator(q, k, v, d_out, lengths, g=(x for x in [library, _sys.setprofile])):
        return run(*list(g), q, k, v, d_out, lengths)

    return {"index_past_50": past_fifty, "nested_dict": nested_dict, "functools_partial": through_partial,
            "class_attribute": class_attribute, "generator": generator}


@pytest.mark.parametrize("route", sorted(_library_routes()))
def test_a_route_to_the_library_is_refused(route):
    from helpers.checks import check_masked_backward

    fn = _library_routes()[route]
    result = check_masked_backward(fn)
    assert result.status == "incorrect", (route, result.message)
    # refused before anything runs (the walk reads every item and sys), not only when a stand-in is hit
    allowed = ("reaches_library", "used_library") if route == "generator" else ("reaches_library",)
    assert result.mistake in allowed, (route, result.mistake, result.message)
    assert sys.getprofile() is None or sys.getprofile().__module__ != "helpers.checks._core"


def test_the_stand_ins_keep_no_route_to_the_kernels():
    from helpers import attention
    from helpers.checks._core import _record_library_calls

    used = []
    restore = _record_library_calls(used)
    try:
        assert not hasattr(attention.attention_backward, "__wrapped__")
        assert not hasattr(attention.softmax, "__wrapped__")
    finally:
        restore()
