"""How many BLAS threads should attention use on a shared 2-core machine?

Run from the repository root (under two minutes)::

    python benchmarks/bench_threads.py

Times float32 ``scaled_dot_product_attention`` with 1 and with 2 BLAS threads
(threadpoolctl), in wall time, for a few shapes (batch, n, d), first with no
competitor of ours and then while a child process spins on one core. The
table gives the median milliseconds per call and the ratio 2 threads / 1
thread: above 1, the second thread costs time.

It checks the claim behind the project's thread setting (one BLAS thread for
the notebooks and the tests): on a busy 2-core machine BLAS threads made small
calls (n = 256) an order of magnitude slower than one thread, while large ones
gain from two threads.
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import os
import statistics
import time

# Sets the thread variables before NumPy is imported, and brings the shared tools.
from bench_attention import CONTROLLER, machine_facts, make_inputs, time_calls, wait_until_idle

from helpers.attention import scaled_dot_product_attention

SHAPES = ((1, 64, 64), (1, 256, 64), (8, 256, 64), (8, 512, 64), (1, 2048, 64), (1, 4096, 64))
THREADS = (1, 2)
ROUNDS = 3  # blocks per thread count, alternating 1, 2, 1, 2, ...
SAMPLE_S = 0.02  # short calls are timed in batches of about this long
BLOCK_S = 0.1  # timed calls per block: about this long, 1 to MAX_SAMPLES samples
MAX_SAMPLES = 5


def block_plan(seconds):
    """Calls per sample and samples per block, for a call that took ``seconds``."""
    seconds = max(seconds, 1e-9)
    number = math.ceil(SAMPLE_S / seconds)
    return number, min(MAX_SAMPLES, max(1, round(BLOCK_S / (number * seconds))))


def measure(shape):
    """Median wall seconds per call with 1 and with 2 threads.

    Each thread count runs in blocks of back-to-back calls, as a program
    would call the kernel, and the blocks of the two alternate so that a
    change in the machine's load hits both. Between blocks the process waits
    for the BLAS threads to stop spinning. The first block of each thread
    count starts with an untimed warm-up call, which also sizes the blocks.

    Returns
    -------
    dict of int to float
    """
    q, k, v = make_inputs(shape, "float32")

    def call():
        scaled_dot_product_attention(q, k, v)

    plans = {}
    samples = {threads: [] for threads in THREADS}
    for _ in range(ROUNDS):
        for threads in THREADS:
            with CONTROLLER.limit(limits=threads):
                if threads not in plans:
                    plans[threads] = block_plan(time_calls(call, 1, time.perf_counter))
                number, count = plans[threads]
                samples[threads] += [time_calls(call, number, time.perf_counter)
                                     for _ in range(count)]
            wait_until_idle()
    return {threads: statistics.median(s) for threads, s in samples.items()}


def _spin(ready, stop):
    """Keep one core busy with a tight Python loop until ``stop`` is set."""
    ready.set()
    while not stop.is_set():
        for _ in range(100_000):
            pass


@contextlib.contextmanager
def busy_core():
    """Run :func:`_spin` in a child process for the duration of the block."""
    context = multiprocessing.get_context("spawn")  # no fork of a process with BLAS threads
    ready, stop = context.Event(), context.Event()
    child = context.Process(target=_spin, args=(ready, stop), daemon=True)
    child.start()
    try:
        if not ready.wait(timeout=60):
            raise RuntimeError("the busy child process did not start")
        yield
    finally:
        stop.set()
        child.join()


def measure_all(condition):
    """:func:`measure` for every shape, after a line on the machine's load."""
    load = os.getloadavg()[0]
    print(f"measuring: {condition} (1-minute load average {load:.2f})", flush=True)
    return {shape: measure(shape) for shape in SHAPES}


def print_table(results):
    """One line per shape: ms with 1 and 2 threads and their ratio, per condition."""
    conditions = list(results)
    print(f"{'':<14}" + "".join(f"{c:<30}" for c in conditions))
    print(f"{'shape':<14}" + "".join(f"{'1 thread':>9}{'2 threads':>10}{'2t/1t':>7}    "
                                     for _ in conditions))
    for shape in SHAPES:
        cells = []
        for condition in conditions:
            times = results[condition][shape]
            cells.append(f"{times[1] * 1e3:>9.4g}{times[2] * 1e3:>10.4g}"
                         f"{times[2] / times[1]:>7.2f}    ")
        print(f"{str(shape):<14}" + "".join(cells))


def print_claim(results):
    """The two halves of the claim, side by side with what was measured."""
    busy = results["one busy core"]
    small = ", ".join(f"{busy[s][2] / busy[s][1]:.2f} at {s}" for s in SHAPES if s[1] == 256)
    print(f"\nsmall calls, one busy core: 2t/1t = {small} (claim: about 10)")
    for condition, times in results.items():
        large = ", ".join(f"{times[s][2] / times[s][1]:.2f} at {s}" for s in SHAPES if s[1] >= 2048)
        print(f"large calls, {condition}: 2t/1t = {large} (claim: below 1)")


def main():
    started = time.perf_counter()
    for name, value in machine_facts(torch_version="not used").items():
        print(f"{name + ':':<30}{value}")
    results = {"no competitor": measure_all("no competitor")}
    with busy_core():
        results["one busy core"] = measure_all("one busy core")
    print("\nfloat32 scaled_dot_product_attention, median wall ms per call\n")
    print_table(results)
    print_claim(results)
    print(f"\ntotal time: {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
