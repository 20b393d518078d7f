"""How fast the explorer answers a slider move: recompute plus redraw, in the kernel.

    python benchmarks/bench_widgets.py [--moves N]

For the documents' examples and for sentences of 16 and 64 tokens, moves the
temperature slider N times (and the d_k slider N times) and prints the median
and 90th-percentile time of one update: recompute the arrays, update the
figure's artists, render the PNG the page shows. Target: <= 30 ms for n <= 64.

Then what a learner waits for when the input itself changes (issue 18): a new
sentence typed into the box (distinct sentences of 64 tokens, and of mixed lengths
4 to 64), and a switch to another example. Target: <= 100 ms median and <= 200 ms
worst at 64 tokens. One BLAS thread, as in the notebooks.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from helpers.widgets import AttentionExplorer  # noqa: E402

CASES = [
    ("cat_sat", None),
    ("i_am_happy", None),
    ("journey", None),
    ("16 tokens", " ".join(f"word{i}" for i in range(16))),
    ("64 tokens", " ".join(f"word{i}" for i in range(64))),
]


def time_moves(explorer, control, values):
    """Milliseconds per move: (CPU time of this process, wall time)."""
    cpu, wall = [], []
    for value in values:
        start_cpu, start_wall = time.process_time(), time.perf_counter()
        explorer.controls[control].value = value
        cpu.append((time.process_time() - start_cpu) * 1e3)
        wall.append((time.perf_counter() - start_wall) * 1e3)
    return sorted(cpu), sorted(wall)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--moves", type=int, default=100)
    args = parser.parse_args()
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("CPU ms: CPU time of the update (other load hardly changes it); wall ms: what a user waits")
    print(f"{'case':<12} {'n':>3} {'build ms':>9} {'control':<12} {'CPU median':>11} {'CPU p90':>8} "
          f"{'wall median':>12} {'wall p90':>9} {'<= 30 ms':>9}")
    for name, sentence in CASES:
        start = time.perf_counter()
        explorer = AttentionExplorer("i_am_happy" if sentence else name, sentence=sentence)
        build = (time.perf_counter() - start) * 1e3
        n = explorer.scores.shape[0]
        temperatures = [0.05 * (20 / 0.05) ** ((i % 50) / 49) for i in range(args.moves)]
        d_ks = [1 + (i * 37) % 1024 for i in range(args.moves)]
        for control, values in (("temperature", temperatures), ("d_k", d_ks)):
            cpu, wall = time_moves(explorer, control, values)
            p90 = int(0.9 * (len(cpu) - 1))
            median = statistics.median(cpu)
            print(f"{name:<12} {n:>3} {build:>9.0f} {control:<12} {median:>11.1f} {cpu[p90]:>8.1f} "
                  f"{statistics.median(wall):>12.1f} {wall[p90]:>9.1f} {'ok' if median <= 30 else 'MISSED':>9}")


def new_inputs(rounds=4):
    """Milliseconds (CPU) per new sentence and per switch of example."""
    from helpers.examples import list_examples

    explorer = AttentionExplorer("journey", sentence="start")
    words = [f"w{i}" for i in range(400)]
    long_sentences = [" ".join(words[k:k + 64]) for k in range(0, 20 * rounds, 4)]  # all distinct
    mixed = [" ".join(words[k:k + n]) for k, n in enumerate([4, 8, 16, 32, 64] * rounds)]
    names = list_examples() * rounds
    results = {}
    for label, control, values in (("new sentence, 64 tokens", "sentence", long_sentences),
                                   ("new sentence, 4-64 tokens", "sentence", mixed)):
        cpu, _ = time_moves(explorer, control, values)
        results[label] = cpu
    switcher = AttentionExplorer("journey")
    cpu, _ = time_moves(switcher, "example", names)
    results["switch example"] = cpu
    print()
    print(f"{'new input':<26} {'count':>5} {'CPU median':>11} {'CPU worst':>10} {'<= 100 / 200 ms':>16}")
    for label, cpu in results.items():
        median, worst = statistics.median(cpu), max(cpu)
        ok = median <= 100 and worst <= 200
        print(f"{label:<26} {len(cpu):>5} {median:>11.1f} {worst:>10.1f} {'ok' if ok else 'MISSED':>16}")
    return results


if __name__ == "__main__":
    main()
    new_inputs()
