"""Self-checks for the homework exercises: "correct", or a specific hint.

Each ``check_*`` function takes a student's answer (an array, a number or a
function) and returns a :class:`CheckResult`. Common mistakes are recognised
*by computing them*: the check builds the answer each mistake would give with
:mod:`helpers.attention` and compares the student's answer with it, so a hint
such as "you scaled by 1/sqrt(d_k)" is only given when the numbers say so.

The checks never raise on a student's answer: any Python object (a string, a
ragged list, NaN, a dict, a function that raises or returns garbage) gives a
:class:`CheckResult`. ``None`` or an empty answer gives "not yet".
Only ``KeyboardInterrupt`` and ``SystemExit`` (and other ``BaseException``
subclasses that are not ``Exception``) pass through. A student function that
never returns cannot be stopped by a check.

Graded code is read before it runs (:func:`helpers.checks._core.static_refusal`,
applied by the wrapper every check shares): a function, class or object that
imports or reaches :mod:`helpers.attention` (public or private names), runs a
recompiled copy of its code, calls exec/eval/compile or uses threads, or that is
passed from a notebook cell importing the library or threads, is refused with the
reason: graded answers must be computed with your own NumPy code, not the
library's kernels. While a function runs, the kernels are also replaced by
recording stand-ins, in every thread. Each function check draws one case anew at
each run, so a table of the probes cannot pass. A non-finite output or a NumPy
overflow warning is reported as overflow, with the fix (subtract each row's
maximum, notebooks 05 and 06); a float32 answer is accepted with a note on
precision, a float16 one is told that precision is the problem; ``np.max(a, b)``
and a missing ``keepdims=True`` are named. Messages agree in number ("your
weights have", "your softmax has"). A fully masked row (no allowed key) gives an
all-zero output row and passes back zero gradients: there is nothing to attend
to. :class:`helpers.checks._core.recording` keeps only the names of the answers
each comparison computes and which of them clash, never their values.

Function checks take an optional ``seed``: the seed of their random probes (the graded hidden
tests, in the instructor's repository, are separate). Shapes follow one rule in every check: an
answer is taken in exactly the shape its task states, and one that differs from it only by axes
of length 1 (a (1, 7) row for (7,), an (n,) vector for (n, 1)) is named ``reshape_needed``.

Tolerances: hand answers (arrays a student may write with two decimals) are
compared with ``atol = 5e-3`` (E4's weights row with ``2e-4``: the neighbouring
row is 0.0008 away); entropies with ``atol = 1e-3``; student functions (softmax,
masked attention, self-attention) with ``atol = rtol = 1e-6``; E4's expected
variances with ``rtol = 1e-6`` (an estimate within 30 % is named as a sample);
initialisation stds with ``rtol = 1 %``. When an answer matches several computed
mistakes, the first one in the order listed in each check's docstring is reported.

Checks, by exercise notebook, one module each
---------------------------------------------
The answer-parsing core (the result type, reading numbers, arrays and shapes,
running a student's function with the library kernels replaced) is
:mod:`helpers.checks._core`. A lecturer who adds an exercise notebook adds a
module here, ``eN_<name>.py``, and lists its checks below and in ``__all__``.

E1, *Section 5.2: Dot-Product Attention — The Core Mechanism* (its five exercises):

check_section_5_2_exercise_1 : exercise 1, attention by hand run backwards: the value row behind an output
check_section_5_2_exercise_2 : exercise 2, the "cat sat mat" weights to draw
check_flops                  : exercise 3, the longest sequence 10^12 FLOPs allow at d = 512
check_section_5_2_exercise_4 : exercise 4, each row's margin with W^Q = W^K, and who scores itself highest
check_attention_entropy      : exercise 5, the temperature at which the row of "journey" has 1.5 nats

E2, *Day 43 - Scaled Dot-Product Attention Deep Dive* ("I am happy today"):

check_i_am_happy_weights     : the 4x4 weights of "I am happy today" (scaled, d_k = 3)
check_i_am_happy_context     : its 4x3 context vectors

E3, *AIAYN Part 2: Scaled Dot-Product Attention* ("cat sat"):

check_temperature_prediction : the temperature at which "cat" gives itself 0.9
check_why_scale_512          : q·k at d_k = 512 for entries of std 1.5 and 0.8, before and after scaling
check_init_std               : the uniform bounds for a 512x64 W^Q, the document's (He) and Xavier's

E4, *The Engine of Transformers: Building Scaled Dot-Product Attention* ("journey"):

check_journey_scores_row     : the unscaled scores of "starts" after a seventh token, "forward"
check_journey_weights_row    : its attention weights over the seven keys
check_self_attention         : attend_new_token(x_new, keys, values, w_q, w_k, w_v): one new token
                               from kept keys and values
check_journey_variance_d100  : the expected variance of q·k at d = 100, query variance 3, key variance 2

E6 and E7, the advanced notebooks (09 gradients by hand, 10 masks, 11 memory-efficient attention),
in ``e6_backward``:

check_attention_backward     : self_attention_backward(x, w_q, w_k, w_v, d_out) -> dX, dW_q, dW_k, dW_v
check_masked_backward        : padded_backward(q, k, v, d_out, lengths): a padded batch; padding passes back zeros
check_online_softmax_merge   : merge_all(m, ell, o): k stacked (max, sum, output) block states merged at once

E5, *Scaled Dot-Product Attention* (the definition page):

check_stable_softmax         : my_softmax(x, axis=-1, where=None): a stable softmax along any axis, over a mask
check_masked_attention       : padded_attention(q, k, v, lengths): attention over a batch of padded sentences
check_definition_shapes      : the shapes of scores, weights and output when the leading axes broadcast
"""

from __future__ import annotations

# The tolerances are not in __all__ but were public names of helpers.checks before it became a
# package, so they stay importable here.
from helpers.checks._core import CODE_TOL as CODE_TOL
from helpers.checks._core import HAND_ATOL as HAND_ATOL
from helpers.checks._core import CheckResult
from helpers.checks.e1_section_5_2 import (
    check_attention_entropy,
    check_flops,
    check_section_5_2_exercise_1,
    check_section_5_2_exercise_2,
    check_section_5_2_exercise_4,
)
from helpers.checks.e2_i_am_happy import (
    check_i_am_happy_context,
    check_i_am_happy_weights,
)
from helpers.checks.e3_cat_sat import (
    check_init_std,
    check_temperature_prediction,
    check_why_scale_512,
)
from helpers.checks.e4_journey import (
    check_journey_scores_row,
    check_journey_variance_d100,
    check_journey_weights_row,
    check_self_attention,
)
from helpers.checks.e5_definition import (
    check_definition_shapes,
    check_masked_attention,
    check_stable_softmax,
)
from helpers.checks.e6_backward import (
    check_attention_backward,
    check_masked_backward,
    check_online_softmax_merge,
)

__all__ = [
    "CheckResult",
    "check_section_5_2_exercise_1",
    "check_i_am_happy_weights",
    "check_stable_softmax",
    "check_masked_attention",
    "check_flops",
    "check_temperature_prediction",
    "check_section_5_2_exercise_2",
    "check_section_5_2_exercise_4",
    "check_attention_entropy",
    "check_i_am_happy_context",
    "check_why_scale_512",
    "check_init_std",
    "check_journey_scores_row",
    "check_journey_weights_row",
    "check_self_attention",
    "check_journey_variance_d100",
    "check_definition_shapes",
    "check_attention_backward",
    "check_masked_backward",
    "check_online_softmax_merge",
]
