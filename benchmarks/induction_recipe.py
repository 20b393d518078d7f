"""Try one training recipe for notebook 12's induction model and measure it against issue 34's goal.

Run from the repository root (one BLAS thread; the CPU time is the process's, not wall time)::

    python benchmarks/induction_recipe.py [--seed 0] [KEY=VALUE ...]

KEY=VALUE override ``helpers.transformer.TRAINING_CONFIG`` (for example
``steps=5000 vocab_size=32 distinct=True lr_end=1e-3``). Prints the CPU
seconds of the training, the repeat loss at every distance between the copies
(4 to the longest that fits, without and with a gap, on fresh tokens,
``seed=34``), the loss at the repeat's first predictable position and at the
others, and whether the goal holds: every distance at most 1.0 nats, the worst
at most 1.5 times the best, at most 60 s of CPU.
"""

from __future__ import annotations

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"

import argparse  # noqa: E402
import ast  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from helpers.transformer import (  # noqa: E402
    TRAINING_CONFIG,
    distance_task,
    longest_distance,
    repeat_loss_by_distance,
    save_induction_model,
    train_induction,
)

FRESH_SEED = 34


def first_and_rest(model, gap, distance, batch=512, seed=FRESH_SEED):
    """Mean loss at the repeat's first predictable position, and at the others."""
    tokens, periods, starts, gaps = distance_task(batch, model.max_len, model.vocab_size, distance, gap,
                                                  np.random.default_rng([seed, 99, distance, int(gap)]))
    logits, _ = model.forward(tokens)
    z = logits - logits.max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    first, rest = [], []
    for b, (s, p) in enumerate(zip(starts, periods)):
        for k, i in enumerate(range(s + distance, s + distance + p - 1)):
            (first if k == 0 else rest).append(-logp[b, i, tokens[b, i + 1]])
    return float(np.mean(first)), float(np.mean(rest)) if rest else float("nan")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--save", help="also write the model (save_induction_model) to this .npz")
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args()
    config = dict(TRAINING_CONFIG)
    for item in args.overrides:
        key, value = item.split("=", 1)
        try:
            config[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            config[key] = value
    print(f"config: {config}", flush=True)
    with threadpool_limits(limits=1):
        clock = time.process_time()
        model, history = train_induction(seed=args.seed, **config)
        cpu = time.process_time() - clock
        if args.save:
            save_induction_model(model, history, args.save, seed=args.seed, config=config, cpu_seconds=cpu)
        rows = {}
        for gap in (False, True):
            distances = np.arange(4, longest_distance(model.max_len, gap) + 1)
            rows[gap] = dict(zip(distances.tolist(),
                                 repeat_loss_by_distance(model, distances, gap, seed=FRESH_SEED).round(3).tolist()))
        every = np.array([v for row in rows.values() for v in row.values()])
        fr = {gap: first_and_rest(model, gap, 4 if gap else 12) for gap in (False, True)}
    print(f"CPU {cpu:.1f} s; repeat loss last 50 steps {history['repeat_loss'][-50:].mean():.3f}")
    for gap, row in rows.items():
        print(f"gap={gap}: " + " ".join(f"{d}:{v:.2f}" for d, v in row.items()))
    print(f"first/rest: no gap d=12 {fr[False][0]:.2f}/{fr[False][1]:.2f}; gap d=4 {fr[True][0]:.2f}/{fr[True][1]:.2f}")
    ok = cpu <= 60 and every.max() <= 1.0 and every.max() <= 1.5 * every.min()
    print(f"worst {every.max():.3f} best {every.min():.3f} ratio {every.max() / every.min():.2f} "
          f"goal {'MET' if ok else 'not met'}", flush=True)


if __name__ == "__main__":
    main()
