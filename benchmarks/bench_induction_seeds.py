"""Does every seed grow a general induction head within 60 s of CPU? (issue 26, item 1)

Run from the repository root (about 2-5 minutes)::

    python benchmarks/bench_induction_seeds.py [--seeds 8]

Trains ``helpers.transformer.train_induction(seed=s, **TRAINING_CONFIG)`` (the
stored model's configuration: the repeated segment starts anywhere, 3,000 Adam
steps) for seeds 0..7 with one BLAS thread, one after the other, and prints one
row per seed: the process CPU time of the training (``time.process_time``:
the machine is shared, so wall time is noise), the loss on the repeat over the
last 50 steps, and the repeat loss of the trained model on random tokens with
a period-6 segment starting at offset 0 and at offset 4
(:func:`helpers.transformer.repeat_loss_by_offset`). The targets: at most 60 s
of CPU per seed; loss at offset 4 at most 1.5 times the loss at offset 0, and
at most 1.0.
"""

from __future__ import annotations

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"

import argparse  # noqa: E402
import time  # noqa: E402

from threadpoolctl import threadpool_limits  # noqa: E402

from helpers.transformer import TRAINING_CONFIG, repeat_loss_by_offset, train_induction  # noqa: E402

BUDGET = 60.0  # CPU seconds per seed
WINDOW = 50


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=8, help="seeds 0..N-1 (default 8)")
    args = parser.parse_args()
    print(f"config: {TRAINING_CONFIG}")
    print("| seed | CPU s | repeat loss, last 50 steps | offset 0 | offset 4 | ratio | meets the targets |")
    print("|---|---|---|---|---|---|---|")
    for seed in range(args.seeds):
        with threadpool_limits(limits=1):
            clock = time.process_time()
            model, history = train_induction(seed=seed, **TRAINING_CONFIG)
            cpu = time.process_time() - clock
        at0, at4 = repeat_loss_by_offset(model, [0, 4])
        ok = cpu <= BUDGET and at4 <= 1.5 * at0 and at4 <= 1.0
        print(f"| {seed} | {cpu:.1f} | {history['repeat_loss'][-WINDOW:].mean():.2f} | {at0:.2f} | {at4:.2f} "
              f"| {at4 / at0:.2f} | {'yes' if ok else 'no'} |", flush=True)


if __name__ == "__main__":
    main()
