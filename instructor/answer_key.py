"""The answer key of the checks that hold sealed answers: the formulas, and the table they write.

    python instructor/answer_key.py           # print whether helpers/checks/_answer_table.py is up to date
    python instructor/answer_key.py --write   # rewrite it

The visible checks of the tasks whose answers take a derivation (not one kernel call) hold only
digests of those answers (:mod:`helpers.checks._sealed`). The values, and every mistake's value,
are computed here, in the instructor's repository, which does not ship: E1 ex. 1 (the value row
v2 behind a given output), E1 ex. 3 (the longest sequence 10^12 FLOPs allow), E1 ex. 4 (the
margins with a shared projection, and the tokens that score themselves highest), E1 ex. 5 (the
temperature that gives the row of "journey" 1.5 nats), E3 ex. 1 (the temperature at which "cat"
gives itself 0.9), E3 ex. 2-3 (the variance, std and scaled variance of q·k at d_k = 512, and two
uniform bounds) and E4 ex. 4 (the variance of q·k at d = 100 before and after scaling).
``tests/test_checks_sealed.py`` checks that the table is this file's output, and that no callable
of the shipped check modules returns these values.
"""

from __future__ import annotations

import math
import pprint
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from helpers import attention, examples  # noqa: E402
from helpers.checks import _sealed  # noqa: E402
from helpers.checks._core import HAND_ATOL, _same  # noqa: E402

TABLE = ROOT / "helpers" / "checks" / "_answer_table.py"


# ---------------------------------------------------------------------------
# E3 ex. 1: the temperature at which "cat" gives itself 0.9
# ---------------------------------------------------------------------------


def temperature_candidates(p=0.9):
    """The temperature at which "cat" gives itself weight ``p``, and ``[(mistake, temperature)]``."""
    ex = examples.load_example("cat_sat")
    scores = ex.q @ ex.k.T
    d_k = ex.q.shape[-1]
    root = math.sqrt(d_k)
    gap = float(scores[0, 0] - scores[0, 1])  # the raw score gap between "cat" and "sat"
    logit = math.log(p / (1 - p))
    right = gap / root / logit
    return right, [
        ("forgot_scaling", gap / logit),
        ("multiplied_by_temperature", logit / (gap / root)),
        ("multiplied_and_unscaled", logit / gap),
        ("divided_by_d_k", gap / d_k / logit),
        ("log10", gap / root / math.log10(p / (1 - p))),
        ("no_log", gap / root / (p / (1 - p))),
        ("log_of_weight", -gap / root / math.log(p)),
        ("other_token", -right),
    ]


# ---------------------------------------------------------------------------
# E1 ex. 4: margins with W^Q = W^K, and who scores itself highest
# ---------------------------------------------------------------------------


def margins(scores):
    """Each row's self-score minus the largest other score of the row: S_ii - max_{j != i} S_ij."""
    s = np.asarray(scores, dtype=float)
    others = np.where(np.eye(*s.shape, dtype=bool), -np.inf, s)
    return np.diag(s) - others.max(axis=-1)


def margin_candidates():
    ex = examples.load_example("journey")
    x, w_q, w_k = ex.inputs, ex.w_q, ex.w_k
    d_k = w_q.shape[-1]
    p = x @ w_q
    scores = p @ p.T
    exact = margins(scores)
    return exact, [
        ("self_included", np.diag(scores) - scores.max(axis=-1)),
        ("reversed", -exact),
        ("returned_scores", scores),
        ("separate_projections", margins((x @ w_q) @ (x @ w_k).T)),
        ("shared_w_k", margins((x @ w_k) @ (x @ w_k).T)),
        ("no_projection", margins(x @ x.T)),
        ("scaled", exact / math.sqrt(d_k)),
        ("divided_by_d_k", exact / d_k),
        ("feature_gram", margins(p.T @ p)),
        ("returned_weights", margins(attention.softmax(scores))),
    ]


# ---------------------------------------------------------------------------
# E1 ex. 5: the temperature that gives the row of "journey" 1.5 nats
# ---------------------------------------------------------------------------


def entropy_of_row(row, t):
    """The entropy, in nats, of softmax(row / t)."""
    w = attention.softmax(np.asarray(row, dtype=float) / t)
    w = w[w > 0]
    return float(-(w * np.log(w)).sum())


def temperature_for_entropy(row, target):
    """The temperature at which softmax(row / T) has entropy ``target`` (it grows with T), or None."""
    lo, hi = 1e-3, 1e3
    if not entropy_of_row(row, lo) < target < entropy_of_row(row, hi):
        return None
    for _ in range(100):
        mid = math.sqrt(lo * hi)
        if entropy_of_row(row, mid) < target:
            lo = mid
        else:
            hi = mid
    return math.sqrt(lo * hi)


def entropy_candidates(target=1.5):
    ex = examples.load_example("journey")
    scores = ex.q @ ex.k.T
    d_k = ex.q.shape[-1]
    i = list(ex.tokens).index("journey")
    exact = temperature_for_entropy(scores[i], target)
    mistakes = [
        ("bits", temperature_for_entropy(scores[i], target * math.log(2))),
        ("scaled", temperature_for_entropy(scores[i] / math.sqrt(d_k), target)),
        ("wrong_axis", temperature_for_entropy(scores[:, i], target)),
        ("multiplied_by_temperature", 1 / exact),
        ("shared_projection", temperature_for_entropy(((ex.inputs @ ex.w_q) @ (ex.inputs @ ex.w_q).T)[i], target)),
    ]
    mistakes += [(f"wrong_row:{j}", temperature_for_entropy(scores[j], target))
                 for j in range(len(ex.tokens)) if j != i]
    return exact, mistakes


# ---------------------------------------------------------------------------
# E1 ex. 1: the value row v2 behind a given output
# ---------------------------------------------------------------------------


def exercise_1_candidates():
    """v2, and ``[(mistake, v2)]``: the row each way of getting the weights wrong leads to."""
    from helpers.checks.e1_section_5_2 import EXERCISE_1_K, EXERCISE_1_Q, EXERCISE_1_TARGET, EXERCISE_1_V1

    q, k, v1, target = EXERCISE_1_Q, EXERCISE_1_K, EXERCISE_1_V1, EXERCISE_1_TARGET
    d_k = q.shape[-1]
    scores = q @ k.T

    def weights_of(scale=1.0, axis=-1):
        return attention.softmax(scores * scale, axis=axis)

    def solve(row):
        return (target - row[0] * v1) / row[1]

    w = weights_of()
    whole = attention.softmax(scores.ravel()).reshape(scores.shape)
    return solve(w[1]), [
        ("scaled", solve(weights_of(scale=1 / math.sqrt(d_k))[1])),
        ("divided_by_d_k", solve(weights_of(scale=1 / d_k)[1])),
        ("wrong_axis", solve(weights_of(axis=0)[1])),
        ("equal_weights", solve(w[0])),
        ("weights_swapped", solve(w[1][::-1])),
        ("forgot_v1", target / w[1][1]),
        ("target_as_value", target),
        ("softmax_whole_matrix", solve(whole[1])),
    ]


# ---------------------------------------------------------------------------
# E1 ex. 3: the longest sequence 10^12 FLOPs allow
# ---------------------------------------------------------------------------


def flops_candidates():
    """The largest whole n, the real root it comes from, and ``[(mistake, n)]``."""
    from helpers.checks.e1_section_5_2 import FLOP_BUDGET

    d = int(examples.load_example("complexity_5_2").given["exercise_3_d"])
    budget = FLOP_BUDGET

    def largest(cost_of_n_squared):
        n = math.isqrt(budget // cost_of_n_squared)
        while (n + 1) ** 2 * cost_of_n_squared <= budget:
            n += 1
        return n

    exact = largest(4 * d)
    assert attention.attention_flops(exact, exact, d, d) <= budget < attention.attention_flops(
        exact + 1, exact + 1, d, d)
    return exact, math.sqrt(budget / (4 * d)), [
        ("multiply_adds_or_one_product", largest(2 * d)),
        ("one_product_multiply_adds", largest(d)),
        ("n_d_swapped", budget / (4 * d * d)),
        ("no_square_root", budget / (4 * d)),
    ]


# ---------------------------------------------------------------------------
# E3 ex. 2-3 and E4 ex. 4: expected variances, stds and bounds
# ---------------------------------------------------------------------------


def why_scale_candidates():
    """``{part: (right, [(mistake, value)])}`` for E3 ex. 2: the variance, the std, the variance scaled."""
    from helpers.checks.e3_cat_sat import STD_K, STD_Q

    d_k = int(examples.load_example("cat_sat_why_scale_512").d_k)
    var_q, var_k = STD_Q**2, STD_K**2
    var = d_k * var_q * var_k
    sd = math.sqrt(var)
    after = var / d_k
    return {
        "variance": (var, [("unit_entries", float(d_k)), ("used_stds", d_k * STD_Q * STD_K),
                           ("one_factor", d_k * var_q), ("one_factor", d_k * var_k),
                           ("added_variances", d_k * (var_q + var_k)), ("gave_std", sd),
                           ("already_scaled", after)]),
        "std": (sd, [("gave_variance", var), ("unit_entries", math.sqrt(d_k)),
                     ("already_scaled", math.sqrt(after))]),
        "scaled": (after, [("unit_entries", 1.0), ("divided_by_d_k", var / d_k**2),
                           ("variance_divided_by_sqrt", var / math.sqrt(d_k)), ("not_scaled", var)]),
    }


def init_std_candidates():
    """``{part: (right, [(mistake, value)])}`` for E3 ex. 3: the uniform bound, and Xavier's."""
    from helpers.checks.e3_cat_sat import D_HEAD

    d = int(examples.load_example("cat_sat_why_scale_512").d_k)
    fan_in, fan_out = d, D_HEAD
    he_std = math.sqrt(2 / fan_in)
    he = math.sqrt(3) * he_std
    xavier = math.sqrt(6 / (fan_in + fan_out))
    square = math.sqrt(6 / (2 * d))
    return {
        "he": (he, [("gave_std", he_std), ("no_square_root", 3 * he_std),
                    ("divided_by_sqrt3", he_std / math.sqrt(3)), ("swapped", xavier), ("square_matrix", square)]),
        "xavier": (xavier, [("square_matrix", square), ("swapped", he), ("fan_out_only", math.sqrt(6 / fan_out)),
                            ("variance_not_std", 6 / (fan_in + fan_out)),
                            ("xavier_normal_std", math.sqrt(2 / (fan_in + fan_out)))]),
    }


def journey_variance_candidates():
    """``{part: (right, [(mistake, value)])}`` for E4 ex. 4: the variance before and after scaling."""
    from helpers.checks.e4_journey import VAR_K, VAR_Q

    d = int(examples.load_example("journey_variance_d100").d_k)
    var = d * VAR_Q * VAR_K
    after = var / math.sqrt(d) ** 2
    return {
        "before": (var, [("unit_variance", float(d)), ("std_of_queries", d * math.sqrt(VAR_Q * VAR_K)),
                         ("added_variances", d * (VAR_Q + VAR_K)), ("gave_std", math.sqrt(var)),
                         ("already_scaled", after), ("squared", var * var)]),
        "after": (after, [("unit_variance", 1.0), ("std_of_queries", math.sqrt(VAR_Q * VAR_K)),
                          ("added_variances", VAR_Q + VAR_K), ("variance_divided_by_sqrt", var / math.sqrt(d)),
                          ("divided_by_d_k", var / d**2), ("not_scaled", var)]),
    }


# ---------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------


def _clashes(kind, expected, candidates, atol, rtol):
    """The pairs of answers (right and mistakes) that agree within the check's tolerance."""
    answers = [("right", expected)] + [(m.split(":")[0], v) for m, v in candidates if v is not None]
    out = []
    for i, (m1, v1) in enumerate(answers):
        for m2, v2 in answers[i + 1:]:
            if not (m1 == m2 != "right") and _same(kind, v1, v2, atol, rtol):
                out.append([m1, m2])
    return [m for m, _ in answers], out


def table():
    """``{task: entry}``: each sealed task's digests, and the names and clashes :class:`recording` reports."""
    from helpers.checks.e1_section_5_2 import TARGET_ENTROPY
    from helpers.checks.e3_cat_sat import TARGET_WEIGHT

    out = {}
    right, mistakes = temperature_candidates(TARGET_WEIGHT)
    entry = _sealed.seal_number("e3-temperature-1", right, decimals=3, atol=5e-4, mistakes=mistakes,
                                rounded_within=0.1 * abs(right))
    entry["recorded"] = _clashes("number", right, mistakes, 0.0, 0.01)
    out["e3_temperature"] = entry

    exact, mistakes = margin_candidates()
    entry = _sealed.seal_array_entry("e1-margins-4a", exact, decimals=2, atol=HAND_ATOL, mistakes=mistakes)
    entry["recorded"] = _clashes("array", exact, mistakes, HAND_ATOL, 0.0)
    entry["favourites"] = _sealed.seal_choice("e1-favourites-4b", [i for i in range(len(exact)) if exact[i] >= 0])
    out["e1_margins"] = entry

    exact, mistakes = entropy_candidates(TARGET_ENTROPY)
    entry = _sealed.seal_number("e1-temperature-5", exact, decimals=3, atol=5e-4, mistakes=mistakes,
                                mistakes_to_decimals=True)
    entry["truncated"] = _sealed.seal_truncated("e1-temperature-5", exact, 3)
    entry["recorded"] = _clashes("number", exact, [], 5e-4, 0.0)
    out["e1_temperature"] = entry

    exact, mistakes = exercise_1_candidates()
    entry = _sealed.seal_array_entry("e1-v2-1", exact, decimals=2, atol=HAND_ATOL, mistakes=mistakes)
    entry["recorded"] = _clashes("array", exact, mistakes, HAND_ATOL, 0.0)
    out["e1_v2"] = entry

    exact, root, mistakes = flops_candidates()
    entry = _sealed.seal_whole("e1-flops-3", exact, mistakes=mistakes, over=exact + 1, root=root)
    entry["recorded"] = _clashes("number", float(exact), [], 0.0, 0.0)
    out["e1_flops"] = entry

    parts = [("e3_why_scale", why_scale_candidates(), {"variance": (2, 5e-3), "std": (2, 0.005 + 1e-9),
                                                       "scaled": (3, 5e-4)}),
             ("e3_init_std", init_std_candidates(), {"he": (4, 5e-5), "xavier": (4, 5e-5)})]
    for task, candidates, tolerance in parts:
        for part, (right, mistakes) in candidates.items():
            decimals, atol = tolerance[part]
            entry = _sealed.seal_number(f"{task}-{part}", right, decimals=decimals, atol=atol, mistakes=mistakes,
                                        rounded_within=0.1 * abs(right), band=0.3)
            entry["recorded"] = _clashes("number", right, mistakes, 0.0, 0.01)
            out[f"{task}:{part}"] = entry
    from helpers.checks.e4_journey import ESTIMATE_RTOL, EXPECTED_RTOL

    for part, (right, mistakes) in journey_variance_candidates().items():
        decimals = -int(math.floor(math.log10(EXPECTED_RTOL * abs(right))))  # to about EXPECTED_RTOL
        entry = _sealed.seal_number(f"e4_variance-{part}", right, decimals=decimals,
                                    atol=EXPECTED_RTOL * abs(right), mistakes=mistakes, rounded_within=0.0,
                                    band=ESTIMATE_RTOL)
        entry["recorded"] = _clashes("number", right, mistakes, 0.0, EXPECTED_RTOL)
        out[f"e4_variance:{part}"] = entry
    return out


def text():
    return (
        '"""Sealed answers of the checks (see :mod:`helpers.checks._sealed`): digests only, no value.\n\n'
        "Written by the instructor's answer key (not in the student repository); do not edit.\n"
        '"""\n\n'
        f"TABLE = {pprint.pformat(table(), width=110, compact=True)}\n"
    )


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    new = text()
    if "--write" in argv:
        TABLE.write_text(new, encoding="utf-8")
        print(f"wrote {TABLE.relative_to(ROOT)}")
        return 0
    same = TABLE.exists() and TABLE.read_text(encoding="utf-8") == new
    print("up to date" if same else "out of date: run python instructor/answer_key.py --write")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
