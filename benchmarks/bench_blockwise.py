"""Memory-efficient attention: ``blockwise_attention`` against the plain kernel.

Run from the repository root, with the project installed (``make setup``)::

    python benchmarks/bench_blockwise.py                      # n = 1024..8192, under a minute
    python benchmarks/bench_blockwise.py --repeats 9          # more samples per median
    python benchmarks/bench_blockwise.py --sizes 1024 2048    # fewer sizes
    python benchmarks/bench_blockwise.py --plot blockwise.png # also draw time and memory against n

For q, k and v of shape (1, n, 64), float32, and n = 1024, 2048, 4096, 8192,
compares three variants:

``plain``
    ``scaled_dot_product_attention``: the whole (n, n) matrix of weights,
    which it also returns.
``block 256``, ``block 512``
    ``blockwise_attention(..., block_size=256 or 512)``: the online softmax
    over blocks of keys; only an (n, block_size) block of scores at a time.

Time is the median CPU time of one call (``time.process_time``) with one BLAS
thread (threadpoolctl), so other programs on a shared machine hardly disturb
it; the variants are timed round-robin (plain, block 256, block 512, plain, ...)
so a change of load hits them all alike. Memory is the peak that ``tracemalloc``
records during one call (NumPy reports its arrays to it), outputs included.

The targets, checked from the same run and marked ok or MISSED:

- peak memory of each blockwise variant at n = 8192: at most 1/8 of the plain kernel's;
- time of each blockwise variant, at every n: at most 1.5 times the plain kernel's.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from functools import partial

import numpy as np

# Sets the thread variables before NumPy is imported, and brings the shared tools.
from bench_attention import machine_facts, tracemalloc_peak
from threadpoolctl import threadpool_limits

from helpers.attention import blockwise_attention, scaled_dot_product_attention

SIZES = (1024, 2048, 4096, 8192)
D = 64
DTYPE = "float32"
BLOCKS = (256, 512)
SEED = 0
REPEATS = 5  # timed samples per variant and n (the median is taken)
MIN_SAMPLE_S = 0.02  # a sample times back-to-back calls until it lasts about this long
MEMORY_N = 8192  # where the memory target is checked
MEMORY_TARGET = 8.0  # plain peak / blockwise peak >= this
TIME_TARGET = 1.5  # blockwise time / plain time <= this
TOLERANCE = dict(rtol=1e-4, atol=1e-6)  # float32: blockwise out vs plain out


# ---------------------------------------------------------------------------
# Measurements
# ---------------------------------------------------------------------------


def make_inputs(n):
    """q, k, v of shape (1, n, D): standard normal, float32, the same every run."""
    rng = np.random.default_rng(SEED)
    return tuple(rng.standard_normal((1, n, D)).astype(DTYPE) for _ in range(3))


def variants(q, k, v):
    """The variants, as zero-argument callables that return ``out`` (1, n, D)."""
    calls = {"plain": lambda: scaled_dot_product_attention(q, k, v)[0]}
    for block in BLOCKS:
        calls[f"block {block}"] = partial(blockwise_attention, q, k, v, block_size=block)
    return calls


def cpu_seconds(fn, number):
    """CPU seconds per call of ``fn()``, over ``number`` back-to-back calls."""
    start = time.process_time()
    for _ in range(number):
        fn()
    return (time.process_time() - start) / number


def measure(n, repeats):
    """One row per variant at ``n``: median CPU ms, samples, peak bytes, agreement with plain."""
    calls = variants(*make_inputs(n))
    with threadpool_limits(limits=1):
        # warm-up call of each, which also gives the outputs to compare and a
        # first time from which to choose the calls per sample
        outs, numbers = {}, {}
        for name, fn in calls.items():
            start = time.process_time()
            outs[name] = fn()
            seconds = max(time.process_time() - start, 1e-6)
            numbers[name] = max(1, math.ceil(MIN_SAMPLE_S / seconds))
        samples = {name: [] for name in calls}
        for _ in range(repeats):  # round-robin: plain, block 256, block 512, plain, ...
            for name, fn in calls.items():
                samples[name].append(cpu_seconds(fn, numbers[name]))
        peaks = {name: tracemalloc_peak(fn) for name, fn in calls.items()}
    rows = []
    for name in calls:
        rows.append({
            "n": n,
            "variant": name,
            "ms": statistics.median(samples[name]) * 1e3,
            "runs": len(samples[name]),
            "calls": numbers[name],
            "peak": peaks[name],
            "agrees": bool(np.allclose(outs[name], outs["plain"], **TOLERANCE)),
        })
    plain = rows[0]
    for row in rows:
        row["time_ratio"] = row["ms"] / plain["ms"]
        row["memory_ratio"] = plain["peak"] / row["peak"]
    return rows


# ---------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------


COLUMNS = ("n", "variant", "CPU ms", "time ratio", "peak MiB", "memory ratio", "equals plain", "runs")
LAYOUT = "{:>6}  {:<10}{:>9}{:>12}{:>10}{:>14}{:>14}{:>7}"


def format_row(row):
    return LAYOUT.format(
        row["n"], row["variant"], f"{row['ms']:.1f}", f"{row['time_ratio']:.2f}",
        f"{row['peak'] / 2**20:.1f}", f"{row['memory_ratio']:.1f}",
        "yes" if row["agrees"] else "NO", f"{row['runs']}x{row['calls']}",
    )


def check_targets(rows):
    """(label, measured, bound, ok) for each target and blockwise variant."""
    blockwise = [row for row in rows if row["variant"] != "plain"]
    results = [
        (f"memory  {row['variant']:<10} n = {row['n']:<5}", f"plain / blockwise = {row['memory_ratio']:.1f}",
         f">= {MEMORY_TARGET:g}", row["memory_ratio"] >= MEMORY_TARGET)
        for row in blockwise if row["n"] == MEMORY_N
    ]
    if not results:
        results.append((f"memory  n = {MEMORY_N}", "not measured in this run", f">= {MEMORY_TARGET:g}", None))
    results += [
        (f"time    {row['variant']:<10} n = {row['n']:<5}", f"blockwise / plain = {row['time_ratio']:.2f}",
         f"<= {TIME_TARGET:g}", row["time_ratio"] <= TIME_TARGET)
        for row in blockwise
    ]
    return results


def plot(rows, path):
    """Time and memory against n, log-log, one line per variant; written to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_time, ax_mem) = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
    names = list(dict.fromkeys(row["variant"] for row in rows))
    for name in names:
        mine = [row for row in rows if row["variant"] == name]
        sizes = [row["n"] for row in mine]
        ax_time.loglog(sizes, [row["ms"] for row in mine], "o-", base=2, label=name)
        ax_mem.loglog(sizes, [row["peak"] / 2**20 for row in mine], "o-", base=2, label=name)
    sizes = sorted({row["n"] for row in rows})
    ax_mem.loglog(sizes, [4 * n * n / 2**20 for n in sizes], "k:", base=2, label="4 n^2 bytes: the weights")
    ax_time.set_title(f"median CPU time per call, (1, n, {D}) {DTYPE}, 1 thread")
    ax_time.set_ylabel("ms")
    ax_mem.set_title("peak memory of one call (tracemalloc)")
    ax_mem.set_ylabel("MiB")
    for ax in (ax_time, ax_mem):
        ax.set_xlabel("n (queries = keys)")
        ax.legend(fontsize=8)
    fig.savefig(path, dpi=100)
    plt.close(fig)


# ---------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", nargs="+", type=int, default=list(SIZES), metavar="N",
                        help="sequence lengths n (default: 1024 2048 4096 8192)")
    parser.add_argument("--repeats", type=int, default=REPEATS,
                        help=f"timed samples per variant and n (default {REPEATS})")
    parser.add_argument("--plot", metavar="PATH", help="also write a PNG of time and memory against n")
    args = parser.parse_args(argv)
    if min(args.sizes) < 1 or args.repeats < 1:
        parser.error("--sizes and --repeats must be positive")
    return args


def main(argv=None):
    args = parse_args(argv)
    started = time.perf_counter()
    facts = machine_facts(None)
    del facts["torch"]
    facts["threads"] = "1 BLAS thread; time = CPU time of the process"
    for name, value in facts.items():
        print(f"{name + ':':<30}{value}")
    print(f"\nq, k, v: (1, n, {D}) {DTYPE}. CPU ms: median of {args.repeats} samples (runs: samples x calls).")
    print("time ratio = this time / plain time; memory ratio = plain peak / this peak.")
    print("The plain peak includes the (n, n) weights it returns; equals plain: out within rtol 1e-4.")
    print(LAYOUT.format(*COLUMNS))
    rows = []
    for n in args.sizes:
        for row in measure(n, args.repeats):
            print(format_row(row), flush=True)
            rows.append(row)
    print("\ntargets (this run)")
    for label, measured, bound, ok in check_targets(rows):
        status = "" if ok is None else ("ok" if ok else "MISSED")
        print(f"  {label}  {measured:<26}{bound:<8}{status}")
    if not all(row["agrees"] for row in rows):
        print("\nWARNING: a blockwise output differs from the plain kernel's beyond the float32 tolerance")
    if args.plot:
        plot(rows, args.plot)
        print("\nfigure written to the --plot file")
    print(f"\ntotal time: {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
