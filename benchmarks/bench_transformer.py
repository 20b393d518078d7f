"""How long does the NumPy transformer take to grow an induction head?

Run from the repository root (about 15-30 s)::

    python benchmarks/bench_transformer.py

Trains ``helpers.transformer.train_induction(seed=0)`` (the stored model's
configuration: d_model 32, 2 layers of 2 heads, vocabulary 16, sequences of
24, batch 64, Adam at lr 3e-3, 3,000 steps, the repeat anywhere) with one BLAS thread, and reports
the process CPU time (``time.process_time``: the machine is shared, so wall
time is noise), the first step at which some head's induction score on the
training batch passes 0.3, 0.5 and 0.7, the CPU seconds spent up to that
step (assuming a constant cost per step), and the losses at the start and
the end. The target (issue 13): an induction head within 60 s of CPU time.
"""

from __future__ import annotations

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"

import time  # noqa: E402

import numpy as np  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from helpers.transformer import TRAINING_CONFIG, train_induction  # noqa: E402

THRESHOLDS = (0.3, 0.5, 0.7)
WINDOW = 50  # losses are averaged over this many steps at the start and the end


def main():
    with threadpool_limits(limits=1):
        start = time.process_time()
        model, history = train_induction(seed=0)
        cpu = time.process_time() - start
    steps = len(history["step"])
    per_step = cpu / steps
    best = history["induction"].reshape(steps, -1).max(axis=1)  # best head per step
    print(f"config: {TRAINING_CONFIG}")
    print(f"{steps} steps in {cpu:.1f} s of CPU ({1000 * per_step:.1f} ms per step), one BLAS thread")
    print("| induction score > | first step | CPU s to reach it |")
    print("|---|---|---|")
    for threshold in THRESHOLDS:
        hits = np.nonzero(best > threshold)[0]
        if hits.size:
            print(f"| {threshold} | {hits[0]} | {per_step * (hits[0] + 1):.1f} |")
        else:
            print(f"| {threshold} | not reached | - |")
    for key in ("loss", "repeat_loss", "other_loss"):
        first, last = history[key][:WINDOW].mean(), history[key][-WINDOW:].mean()
        print(f"{key}: first {WINDOW} steps {first:.3f}, last {WINDOW} steps {last:.3f}")
    final = history["induction"][-WINDOW:].mean(axis=0)
    prev = history["previous_token"][-WINDOW:].mean(axis=0)
    print("induction score per head (layer x head, last steps):", np.round(final, 2).tolist())
    print("previous-token score per head:", np.round(prev, 2).tolist())


if __name__ == "__main__":
    main()
