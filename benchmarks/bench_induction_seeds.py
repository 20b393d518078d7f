"""Does every seed grow an induction head that works at every distance, within 60 s of CPU? (issue 34)

Run from the repository root (about 1 minute of CPU per seed)::

    python benchmarks/bench_induction_seeds.py [--seeds 8]

Trains ``helpers.transformer.train_induction(seed=s, **TRAINING_CONFIG)`` (the
stored model's configuration: random segment lengths, random gaps of random
tokens between the segment and its repeat, random offsets) for seeds 0..N-1
with one BLAS thread, one after the other, and prints one row per seed: the
process CPU time of the training (``time.process_time``: the machine is
shared, so wall time is noise), the loss on the repeat over the last 50
steps, and the repeat loss of the trained model on fresh repeated random
tokens at every distance between the copies from 4 to the longest that fits
(:func:`helpers.transformer.repeat_loss_by_distance`), without and with a
gap: the worst and the best of them. The targets: at most 60 s of CPU per
seed; every distance at most 1.0 nats, the worst at most 1.5 times the best.
"""

from __future__ import annotations

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from helpers.transformer import (  # noqa: E402
    TRAINING_CONFIG,
    longest_distance,
    repeat_loss_by_distance,
    train_induction,
)

BUDGET = 60.0  # CPU seconds per seed
WINDOW = 50


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=8, help="seeds 0..N-1 (default 8)")
    args = parser.parse_args()
    print(f"config: {TRAINING_CONFIG}")
    print("| seed | CPU s | repeat loss, last 50 steps | best distance | worst distance | ratio | meets the targets |")
    print("|---|---|---|---|---|---|---|")
    for seed in range(args.seeds):
        with threadpool_limits(limits=1):
            clock = time.process_time()
            model, history = train_induction(seed=seed, **TRAINING_CONFIG)
            cpu = time.process_time() - clock
        losses = np.concatenate([
            repeat_loss_by_distance(model, np.arange(4, longest_distance(model.max_len, gap) + 1), gap, seed=34)
            for gap in (False, True)
        ])
        best, worst = losses.min(), losses.max()
        ok = cpu <= BUDGET and worst <= 1.0 and worst <= 1.5 * best
        print(f"| {seed} | {cpu:.1f} | {history['repeat_loss'][-WINDOW:].mean():.2f} | {best:.2f} | {worst:.2f} "
              f"| {worst / best:.2f} | {'yes' if ok else 'no'} |", flush=True)


if __name__ == "__main__":
    main()
