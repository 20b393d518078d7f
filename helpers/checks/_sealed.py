"""Sealed answers: what a check holds of an answer that takes a derivation, not a kernel call.

A check of a number (or a small array) that the lectures' kernels do not compute in one call
holds no expected value at all. It holds, for the right answer and for each mistake it names,
salted SHA-256 digests of the spellings that count as that answer: the number rounded to each
accepted count of decimals (or of significant digits), each with its own label. A student's
answer is spelled the same ways and its digests are looked up. Nothing in the table can be
printed, returned or passed to a replaced function as an answer; what it gives away is what
the check itself gives away when called (right or not, which mistake), and searching the
digests over candidate numbers is the same as calling the check on each candidate.

The table (:mod:`helpers.checks._answer_table`) is written by the instructor's tool
``instructor/answer_key.py`` from the formulas, which stay in the instructor's repository;
``tests/test_checks_sealed.py`` checks that it is up to date.

Spellings
---------
``f{d}:<x rounded to d decimals>`` and ``e{d}:<x to d significant digits>``. The right answer
of a task that asks for ``decimals`` decimals is held at every ``d`` from ``decimals`` to
:data:`MAX_DECIMALS`: an answer whose rounding to any of them is the expected one's passes
(so the expected value written to more decimals, or as Python computes it, passes). A mistake
is held at 2 and 3 significant digits and at a relative step of :data:`NEAR` either side, so
that it is named within about 1 %. "Rounded" is held at each ``d`` below ``decimals``.
"""

from __future__ import annotations

import hashlib
import math

MAX_DECIMALS = 10
NEAR = 3e-3
"""The relative step either side of a mistake's value at which it is also held."""
_EDGE = 1e-9
"""The relative step either side of a right value (a value on a rounding boundary)."""


def digest(salt: str, spelling: str) -> str:
    return hashlib.sha256(f"{salt}|{spelling}".encode()).hexdigest()[:24]


def spell_fixed(x: float, d: int) -> str:
    text = f"{round(float(x), d):.{d}f}"
    if text.lstrip("-").strip("0.") == "":
        text = text.lstrip("-")  # -0.000 is 0.000
    return f"f{d}:{text}"


def spell_significant(x: float, d: int) -> str:
    x = float(x)
    return f"e{d}:{x:.{d - 1}e}" if x != 0 else f"e{d}:0"


def significant_digits(x: float) -> int:
    """How many significant digits the shortest spelling of ``x`` has (at most 17)."""
    mantissa = repr(abs(float(x))).lower().split("e")[0].replace(".", "").lstrip("0")
    return max(1, min(17, len(mantissa.rstrip("0")) or 1))


def written_decimals(x: float) -> int:
    """How many decimals the shortest spelling of ``x`` has (0 for a whole number)."""
    x = float(x)
    for d in range(0, 17):
        if abs(x - round(x, d)) <= 1e-12 * max(1.0, abs(x)):
            return d
    return 17


# ---------------------------------------------------------------------------
# Sealing (the instructor's tool) and looking up (every check)
# ---------------------------------------------------------------------------


def seal_right(salt, value, decimals, atol=None):
    """The digests under which ``value`` passes, to ``decimals`` decimals or more.

    At ``decimals`` and ``decimals + 1`` decimals every number of that many decimals within
    ``atol`` (default: half a unit of the last decimal asked for) is held, so that an answer
    within the task's tolerance passes; at more decimals, the value's own rounding.
    """
    atol = 0.5 * 10.0**-decimals if atol is None else atol
    out = set()
    for x in (value * (1 - _EDGE), value, value * (1 + _EDGE)):
        out |= {digest(salt, spell_fixed(x, d)) for d in range(decimals, MAX_DECIMALS + 1)}
    for d in (decimals, decimals + 1):
        step = 10.0**-d
        lo, hi = math.ceil((value - atol) / step - 1e-9), math.floor((value + atol) / step + 1e-9)
        out |= {digest(salt, spell_fixed(k * step, d)) for k in range(lo, hi + 1)}
    return sorted(out)


def is_right(salt, digests, x, decimals):
    held = set(digests)
    return any(digest(salt, spell_fixed(x, d)) in held for d in range(decimals, MAX_DECIMALS + 1))


def seal_near(salt, value):
    """The digests under which an answer within about 1 % of ``value`` is recognised."""
    out = set()
    for x in (value * (1 - NEAR), value, value * (1 + NEAR)):
        out |= {digest(salt, spell_significant(x, d)) for d in (2, 3)}
    return sorted(out)


def is_near(salt, digests, x):
    d = 2 if significant_digits(x) <= 2 else 3
    return digest(salt, spell_significant(x, d)) in set(digests)


def seal_rounded(salt, value, decimals, within):
    """``{d: digest}`` of ``value`` rounded to each ``d < decimals`` no further than ``within`` away."""
    out = {}
    for d in range(decimals - 1, -1, -1):
        r = round(value, d)
        if abs(r - value) <= min(0.5 * 10.0**-d + 1e-12, within):
            out[str(d)] = digest(salt, spell_fixed(r, d))
    return out


def seal_truncated(salt, value, decimals):
    """``{d: digest}`` of ``value`` cut (not rounded) to each ``d < decimals`` decimals, where that differs."""
    out = {}
    for d in range(decimals - 1, -1, -1):
        t = math.trunc(value * 10**d) / 10**d
        if t != round(value, d):
            out[str(d)] = digest(salt, spell_fixed(t, d))
    return out


def rounded_to(salt, held, x):
    """The count of decimals ``d`` when ``x`` is written with ``d`` decimals and is the answer rounded, else None."""
    d = written_decimals(x)
    key = str(d)
    if key in held and held[key] == digest(salt, spell_fixed(x, d)):
        return d
    return None


def seal_number(salt, value, *, decimals, atol=None, mistakes=(), rounded_within=None, band=None,
                mistakes_to_decimals=False):
    """The table entry of one number: its right digests, its mistakes', "rounded", and a coarse band.

    ``mistakes`` is ``[(name, value)]``; a mistake within rounding of ``value``, or None, is left
    out (it cannot be told apart); with ``mistakes_to_decimals`` a mistake is held as the right answer
    is (to ``decimals`` decimals or more), not within 1 %. ``band``, a relative width, is held as an interval rounded
    outward to one significant digit of the bounds: within it, an answer is "close" (a sample).
    """
    entry = {"salt": salt, "decimals": decimals, "right": seal_right(salt, value, decimals, atol)}
    kept = []
    for name, target in mistakes:
        if target is None or not math.isfinite(target) or abs(target - value) <= 0.5 * 10.0**-decimals:
            continue
        if mistakes_to_decimals:
            kept.append([name, seal_right(salt + ":" + name, target, decimals, atol)])
        else:
            kept.append([name, seal_near(salt + ":" + name, target)])
    entry["mistakes"] = kept
    entry["mistakes_to_decimals"] = bool(mistakes_to_decimals)
    entry["rounded"] = seal_rounded(salt, value, decimals, rounded_within if rounded_within is not None
                                    else abs(value))
    if band is not None:
        lo, hi = sorted((value * (1 - band), value * (1 + band)))
        entry["band"] = [_outward(lo, math.floor), _outward(hi, math.ceil)]
    return entry


def _outward(x, way):
    if x == 0:
        return 0.0
    step = 10.0 ** math.floor(math.log10(abs(x)))
    return float(way(x / step) * step)


def number_verdict(entry, x):
    """``("right" | mistake name | "rounded" | "close" | None, decimals)`` for the number ``x``."""
    salt = entry["salt"]
    if is_right(salt, entry["right"], x, entry["decimals"]):
        return "right", None
    if written_decimals(x) < entry["decimals"]:
        # Written with fewer decimals than asked: the right answer rounded is told so before a
        # mistake whose value happens to round the same way (E1 ex. 5: 0.44 is not "the column").
        d = rounded_to(salt, entry["rounded"], x)
        if d is None:
            d = rounded_to(salt, entry.get("truncated", {}), x)
        if d is not None:
            return "rounded", d
    for name, digests in entry["mistakes"]:
        if entry.get("mistakes_to_decimals"):
            if is_right(salt + ":" + name, digests, x, entry["decimals"]):
                return name, None
        elif is_near(salt + ":" + name, digests, x):
            return name, None
    d = rounded_to(salt, entry["rounded"], x)
    if d is not None:
        return "rounded", d
    band = entry.get("band")
    if band is not None and band[0] <= x <= band[1]:
        return "close", None
    return None, None


def _flat(a):
    import numpy as np

    return np.asarray(a, dtype=float).reshape(-1)


def _shape(a):
    import numpy as np

    return np.asarray(a, dtype=float).shape


def seal_cells(salt, value, decimals, atol=None):
    """``{"shape": ..., "cells": [digests of each entry]}``: each entry held to ``decimals`` or more."""
    return {
        "shape": list(_shape(value)),
        "cells": [seal_right(f"{salt}[{i}]", float(v), decimals, atol) for i, v in enumerate(_flat(value))],
    }


def cells_right(salt, held, x, decimals):
    """A list of booleans, one per entry of ``x`` (None when the shapes differ)."""
    if list(_shape(x)) != list(held["shape"]):
        return None
    return [is_right(f"{salt}[{i}]", d, float(v), decimals) for i, (v, d) in enumerate(zip(_flat(x), held["cells"]))]


def seal_array_entry(salt, value, *, decimals, atol=None, mistakes=()):
    """The table entry of a small array answer and of each mistake's array (``[(name, array)]``)."""
    import numpy as np

    entry = {"salt": salt, "decimals": decimals, "right": seal_cells(salt, value, decimals, atol), "mistakes": []}
    for name, target in mistakes:
        if target is None:
            continue
        target = np.asarray(target, dtype=float)
        same = target.shape == np.shape(value) and np.allclose(target, value, rtol=0, atol=0.5 * 10.0**-decimals)
        if not same:
            entry["mistakes"].append([name, seal_cells(f"{salt}:{name}", target, decimals, atol)])
    return entry


def array_verdict(entry, x):
    """``(verdict, rows right)``: "right", a mistake's name, "wrong_shape" or "wrong_values"."""
    salt, decimals = entry["salt"], entry["decimals"]
    right = cells_right(salt, entry["right"], x, decimals)
    if right is not None and all(right):
        return "right", right
    for name, held in entry["mistakes"]:
        cells = cells_right(f"{salt}:{name}", held, x, decimals)
        if cells is not None and all(cells):
            return name, right
    return ("wrong_shape" if right is None else "wrong_values"), right


def seal_choice(salt, choice):
    """The digest of a set of whole numbers (E1 4b's rows): its sorted spelling."""
    return digest(salt, ",".join(str(int(i)) for i in sorted(choice)))


def is_choice(salt, held, choice):
    return digest(salt, ",".join(str(int(i)) for i in sorted(choice))) == held


def _spell_whole(k):
    return f"n:{int(k)}"


def seal_whole(salt, value, *, mistakes=(), over=None, root=None):
    """The table entry of a whole-number answer (E1 ex. 3's n): the digests of the right n, of ``over``
    (one too many), of the whole parts of the numbers within 1 of ``root`` (the real root the
    answer is the floor of: a fraction of a token), and of each mistake within about 1 %."""
    entry = {"salt": salt, "right": digest(salt, _spell_whole(value)), "mistakes": []}
    if over is not None:
        entry["over"] = digest(salt + ":over_budget", _spell_whole(over))
    if root is not None:
        entry["fraction"] = sorted(digest(salt + ":not_whole", _spell_whole(k))
                                   for k in range(math.floor(root - 1), math.floor(root + 1) + 1))
    for name, target in mistakes:
        if target is not None and math.isfinite(target) and abs(target - value) > 0.5:
            entry["mistakes"].append([name, seal_near(salt + ":" + name, target)])
    return entry


def whole_verdict(entry, x):
    """"right", "over_budget", "not_whole", a mistake's name, or None, for the number ``x``."""
    salt = entry["salt"]
    whole = float(x) == round(float(x))
    if whole and digest(salt, _spell_whole(round(x))) == entry["right"]:
        return "right"
    if whole and digest(salt + ":over_budget", _spell_whole(round(x))) == entry.get("over"):
        return "over_budget"
    if not whole and digest(salt + ":not_whole", _spell_whole(math.floor(x))) in set(entry.get("fraction", ())):
        return "not_whole"
    for name, digests in entry["mistakes"]:
        if is_near(salt + ":" + name, digests, x):
            return name
    return None
