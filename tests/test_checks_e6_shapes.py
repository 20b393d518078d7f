"""E6 ex. 1 on its non-square cases: a wrong answer of another shape is told wrong, never "could not make sense".

Before the fix, ``_close3`` compared a transposed gradient of shape (4, 3) with one of (3, 4),
NumPy raised, and every mistake first seen on a non-square case (dividing by sqrt(d_v) or
sqrt(d_in), a function right only when everything is square) got the checker's crash message.
"""

from __future__ import annotations

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
