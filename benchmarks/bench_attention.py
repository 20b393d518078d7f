"""Benchmark of ``helpers.attention``: the kernel against its loop twin, its own
two matrix products and PyTorch.

Run from the repository root, with the project installed (``make setup``)::

    python benchmarks/bench_attention.py                     # everything, a few minutes
    python benchmarks/bench_attention.py --quick             # smoke run: n <= 64 only
    python benchmarks/bench_attention.py --shapes 8x512x64 --dtypes float32 --threads 1
    python benchmarks/bench_attention.py --json benchmarks/results/attention.json

A shape ``(batch, n, d)`` stands for q, k and v of that shape: n queries and
n keys (n = m), d_k = d_v = d. The variants:

``loop``
    ``scaled_dot_product_attention_loop`` (only for n <= 64).
``kernel``
    ``scaled_dot_product_attention``.
``matmuls``
    ``(q @ k_t) @ v`` with ``k_t``, a contiguous copy of k^T, made beforehand:
    the two matrix products alone, the floor no softmax kernel can beat.
``torch``
    ``torch.nn.functional.scaled_dot_product_attention`` on tensors of shape
    (1, batch, n, d), in a child process of its own (when torch is installed).
``gemm``
    The reference: a square float GEMM of ``GEMM_SIZE``, measured with the same
    clock and thread count; the "of GEMM" column divides by its GFLOP/s.

With one thread the clock is the CPU time of the process (``time.process_time``,
little disturbed by other programs on a shared machine); with two it is wall
time (``time.perf_counter``). The variants of one shape are timed round-robin,
so that a change of background load hits them all alike; the table gives the
median per call.
"""

from __future__ import annotations

import argparse
import ctypes
import importlib.util
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
import tracemalloc
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Callable

# Thread pools read these variables once, when the library is loaded, so they
# are set here, before the imports below bring in NumPy (and, in the torch
# worker, PyTorch): to every usable core, not to 1 as `make test` does. The
# script then chooses the thread count of each measurement itself, with
# threadpoolctl (and torch.set_num_threads), and nothing inherited from the
# environment interferes. Hence the three late imports (noqa: E402): NumPy must
# not be loaded before this.
_CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = str(_CORES)

import numpy as np  # noqa: E402
from threadpoolctl import ThreadpoolController, threadpool_info  # noqa: E402

from helpers.attention import (  # noqa: E402
    attention_flops,
    scaled_dot_product_attention,
    scaled_dot_product_attention_loop,
)

SHAPES = ((1, 6, 2), (1, 64, 64), (8, 512, 64), (8, 2048, 64), (1, 4096, 64), (1, 8192, 64))
DTYPES = ("float32", "float64")
THREADS = (1, 2)
LOOP_MAX_N = 64  # the loop variant only runs up to this n (0.3 s per call at 64)
GEMM_SIZE = 1024
SEED = 0
TORCH_REQUIREMENT = "torch==2.13.0"  # a local CPU wheel here; other versions pull GPU packages

MIN_SAMPLE_S = 1e-3  # calls shorter than this are timed in batches of back-to-back calls
BUDGET_S = 1.0  # seconds of timed calls per variant and (shape, dtype, threads)
QUICK_BUDGET_S = 0.2  # the same with --quick
MIN_REPEATS, MAX_REPEATS = 3, 25
SLOW_CALL_S = 5.0  # a call slower than this (an overloaded machine) gets one timed sample

CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}
CONTROLLER = ThreadpoolController()


@dataclass
class Row:
    """One line of the table: the median time of one variant."""

    shape: tuple  # (batch, n, d); (m, k, n) of the product for the gemm rows
    dtype: str
    threads: int
    clock: str  # "cpu" or "wall"
    variant: str
    ms: float  # median milliseconds per call
    runs: int  # how many timed samples the median is taken over
    gflops: float  # GFLOP/s, by the 4 n m d per head convention
    of_gemm: float  # gflops / the gemm row's gflops (same dtype, threads, clock)
    peak_bytes: int | None  # extra bytes allocated during one call; None: unknown


@dataclass(frozen=True)
class Target:
    """A goal for the ratio of two variants' times, checked where it applies."""

    label: str
    numerator: str
    denominator: str
    op: str  # "<=" or ">="
    bound: float
    applies: Callable[[tuple, str, int], bool]  # (shape, dtype, threads) -> bool

    def met(self, ratio):
        return ratio <= self.bound if self.op == "<=" else ratio >= self.bound


TARGETS = (
    Target("kernel / torch", "kernel", "torch", "<=", 1.3,
           lambda shape, dtype, threads: shape in ((8, 512, 64), (1, 4096, 64))
           and dtype == "float32" and threads == 1),
    Target("kernel / matmuls", "kernel", "matmuls", "<=", 2.0, lambda *key: True),
    Target("loop / kernel", "loop", "kernel", ">=", 100,
           lambda shape, dtype, threads: shape[1] == 64),
)


# ---------------------------------------------------------------------------
# Timing and memory
# ---------------------------------------------------------------------------


def clock_name(threads):
    """CPU time for one thread, wall time for more (CPU time would add the threads up)."""
    return "cpu" if threads == 1 else "wall"


def make_inputs(shape, dtype):
    """q, k, v: standard normal arrays of ``shape`` and ``dtype``, the same every run."""
    rng = np.random.default_rng(SEED)
    return tuple(rng.standard_normal(shape).astype(dtype) for _ in range(3))


def time_calls(fn, number, clock):
    """Seconds per call of ``fn()``, averaged over ``number`` back-to-back calls."""
    start = clock()
    for _ in range(number):
        fn()
    return (clock() - start) / number


def plan(seconds, budget):
    """Calls per sample and number of samples for a call that took ``seconds``.

    Returns
    -------
    number, repeats : int
        Each sample times ``number`` calls (at least MIN_SAMPLE_S in all); the
        ``repeats`` samples fill about ``budget`` seconds, within
        MIN_REPEATS..MAX_REPEATS, so big shapes get fewer. A call slower than
        SLOW_CALL_S gets a single sample, which keeps the run within minutes
        when the machine is overloaded.
    """
    if seconds > SLOW_CALL_S:
        return 1, 1
    seconds = max(seconds, 1e-9)
    number = math.ceil(MIN_SAMPLE_S / seconds)
    repeats = round(budget / (number * seconds))
    return number, min(MAX_REPEATS, max(MIN_REPEATS, repeats))


def interleave(samplers, budget):
    """Warm each variant up once, then time them round-robin.

    Parameters
    ----------
    samplers : dict of str to callable
        ``samplers[name](number)`` makes ``number`` calls and returns the
        seconds per call.
    budget : float
        About how many seconds of timed calls each variant gets.

    Returns
    -------
    dict of str to (float, int)
        Median seconds per call and number of samples, per variant.
    """
    plans = {name: plan(sample(1), budget) for name, sample in samplers.items()}
    samples = {name: [] for name in samplers}
    for round_ in range(max(repeats for _, repeats in plans.values())):
        for name, sample in samplers.items():
            number, repeats = plans[name]
            if round_ < repeats:
                samples[name].append(sample(number))
    return {name: (statistics.median(s), len(s)) for name, s in samples.items()}


def wait_until_idle(poll=0.01, timeout=0.5):
    """Sleep until this process uses no CPU time, at most ``timeout`` seconds.

    After a multi-threaded call, OpenBLAS's (and OpenMP's) worker threads keep
    spinning for about 0.1 s. They would steal a core from the torch worker,
    and add to the CPU time of a one-thread measurement.
    """
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        before = time.process_time()
        time.sleep(poll)
        if time.process_time() - before < poll / 10:
            return


def tracemalloc_peak(fn):
    """Peak bytes allocated during ``fn()`` (NumPy reports its arrays to tracemalloc)."""
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _status_kib(field):
    """A ``kB`` field of /proc/self/status, such as VmRSS."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise OSError(f"{field} is not in /proc/self/status")


def _release_free_heap():
    """Give the memory glibc keeps for reuse back to the system.

    Otherwise a call that reuses it would not grow the resident set at all.
    """
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass  # not glibc: the growth may read low


def rss_growth(fn):
    """Peak resident-set growth in bytes during ``fn()``; None without Linux's /proc.

    Page-granular: a few KiB of error either way.
    """
    _release_free_heap()
    try:
        with open("/proc/self/clear_refs", "w") as clear_refs:
            clear_refs.write("5")  # resets the peak (VmHWM) to the current RSS
        before = _status_kib("VmRSS")
        fn()
        return (_status_kib("VmHWM") - before) * 1024
    except OSError:
        return None


# ---------------------------------------------------------------------------
# PyTorch, in a process of its own
# ---------------------------------------------------------------------------


class TorchWorker:
    """``torch.nn.functional.scaled_dot_product_attention`` in a child process.

    The child runs this script with ``--torch-worker`` (:class:`TorchServer`)
    and answers one JSON command per line. A process of its own keeps PyTorch
    apart from NumPy's OpenBLAS, whose spinning threads slow PyTorch down many
    times when the two alternate in one process.
    """

    def __init__(self):
        self._proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--torch-worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,  # torch's warnings would show paths
            text=True,
        )
        self.threads = 1
        self.version = self._ask("version")

    def _ask(self, op, **args):
        self._proc.stdin.write(json.dumps({"op": op, "args": args}) + "\n")
        self._proc.stdin.flush()
        line = self._proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the torch worker exited (code {self._proc.wait()})")
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError(f"torch worker: {reply['error']}")
        return reply["result"]

    def setup(self, shape, dtype, threads):
        """Make the inputs of ``shape`` and ``dtype``; use ``threads`` threads."""
        self.threads = threads
        self._ask("setup", shape=list(shape), dtype=dtype, threads=threads)

    def sample(self, number):
        """Seconds per call, over ``number`` calls, by the child's clock."""
        if self.threads > 1:
            wait_until_idle()  # our BLAS threads must not compete with torch's
        return self._ask("sample", number=number)

    def peak_bytes(self):
        """Resident-set growth of the child during one call, or None."""
        return self._ask("peak_bytes")

    def close(self):
        self._proc.stdin.close()
        self._proc.wait()


class TorchServer:
    """The ``--torch-worker`` side of :class:`TorchWorker`."""

    OPS = ("version", "setup", "sample", "peak_bytes")

    def __init__(self):
        import torch
        import torch.nn.functional

        self.torch = torch
        self.controller = ThreadpoolController()  # now it sees torch's OpenMP too
        self.qkv = None
        self.threads = 1

    def version(self):
        return self.torch.__version__

    def setup(self, shape, dtype, threads):
        self.threads = threads
        self.torch.set_num_threads(threads)
        self.controller.limit(limits=threads)  # stays in force: the limiter is not restored
        # 4-D (1, batch, n, d): PyTorch takes a slow path for 3-D input.
        self.qkv = [self.torch.from_numpy(x)[None] for x in make_inputs(tuple(shape), dtype)]

    def _call(self):
        with self.torch.no_grad():
            self.torch.nn.functional.scaled_dot_product_attention(*self.qkv)

    def sample(self, number):
        seconds = time_calls(self._call, number, CLOCKS[clock_name(self.threads)])
        if self.threads > 1:
            wait_until_idle()  # torch's threads must not compete with the parent's
        return seconds

    def peak_bytes(self):
        return rss_growth(self._call)

    def serve(self):
        """Answer commands from stdin until it closes."""
        for line in sys.stdin:
            request = json.loads(line)
            try:
                if request["op"] not in self.OPS:
                    raise ValueError(f"unknown op {request['op']!r}")
                reply = {"result": getattr(self, request["op"])(**request["args"])}
            except Exception as exc:  # reported to the parent, which raises it
                reply = {"error": f"{type(exc).__name__}: {exc}"}
            print(json.dumps(reply), flush=True)


def start_torch_worker():
    """A :class:`TorchWorker`, or None when torch is not installed."""
    if importlib.util.find_spec("torch") is None:
        return None
    return TorchWorker()


# ---------------------------------------------------------------------------
# Measurements
# ---------------------------------------------------------------------------


def numpy_variants(q, k, v):
    """The NumPy variants for one set of inputs, as zero-argument callables."""
    k_t = np.ascontiguousarray(np.swapaxes(k, -1, -2))
    variants = {}
    if q.shape[-2] <= LOOP_MAX_N:
        variants["loop"] = partial(scaled_dot_product_attention_loop, q, k, v)
    variants["kernel"] = partial(scaled_dot_product_attention, q, k, v)
    variants["matmuls"] = lambda: (q @ k_t) @ v
    return variants


def measure_gemm(dtype, threads, budget):
    """The reference row: a square GEMM, GFLOP/s = 2 GEMM_SIZE^3 / seconds."""
    clock = clock_name(threads)
    a, b, _ = make_inputs((GEMM_SIZE, GEMM_SIZE), dtype)

    def product():
        return a @ b

    with CONTROLLER.limit(limits=threads):
        wait_until_idle()
        seconds, runs = interleave({"gemm": partial(time_calls, product, clock=CLOCKS[clock])},
                                   budget)["gemm"]
    gflops = 2 * GEMM_SIZE**3 / seconds / 1e9
    return Row((GEMM_SIZE,) * 3, dtype, threads, clock, "gemm", seconds * 1e3, runs, gflops, 1.0,
               tracemalloc_peak(product))


def measure_shape(shape, dtype, threads, gemm, worker, budget, peaks):
    """Rows for every variant at one (shape, dtype, threads), timed together.

    ``peaks`` caches the peak memory per (shape, dtype, variant), which does
    not depend on the thread count.
    """
    batch, n, d = shape
    clock = clock_name(threads)
    calls = numpy_variants(*make_inputs(shape, dtype))
    samplers = {name: partial(time_calls, fn, clock=CLOCKS[clock]) for name, fn in calls.items()}
    peak_fns = {name: partial(tracemalloc_peak, fn) for name, fn in calls.items()}
    if worker is not None:
        worker.setup(shape, dtype, threads)
        samplers["torch"] = worker.sample
        peak_fns["torch"] = worker.peak_bytes
    with CONTROLLER.limit(limits=threads):
        wait_until_idle()
        medians = interleave(samplers, budget)
        for name, peak in peak_fns.items():
            if (shape, dtype, name) not in peaks:
                peaks[shape, dtype, name] = peak()
    flops = attention_flops(n, n, d, d) * batch
    rows = []
    for name, (seconds, runs) in medians.items():
        gflops = flops / seconds / 1e9
        rows.append(Row(shape, dtype, threads, clock, name, seconds * 1e3, runs, gflops,
                        gflops / gemm.gflops, peaks[shape, dtype, name]))
    return rows


# ---------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------


def cpu_model():
    """The CPU's model name from /proc/cpuinfo, or what platform knows."""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_facts(torch_version):
    """What the numbers depend on; no paths."""
    blas = [
        f"{lib['internal_api']} {lib.get('version')} "
        f"({lib.get('threading_layer', '?')}, {lib.get('architecture', '?')})"
        for lib in threadpool_info()
        if lib["user_api"] == "blas"
    ]
    return {
        "cpu": cpu_model(),
        "cores": _CORES,
        "load average (1, 5, 15 min)": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "blas": ", ".join(blas) or "none found",
        "torch": torch_version or "not installed",
    }


def format_bytes(n):
    if n is None:
        return "n/a"
    if n < 1024:
        return f"{n} B"
    for unit in ("KiB", "MiB", "GiB"):
        n /= 1024
        if n < 1024 or unit == "GiB":
            return f"{n:.1f} {unit}"


COLUMNS = ("shape", "dtype", "threads", "variant", "ms", "GFLOP/s", "of GEMM", "peak mem", "runs")
LAYOUT = "{:<20}{:<9}{:<9}{:<9}{:>11}{:>9}{:>10}{:>11}{:>6}"


def format_row(row):
    return LAYOUT.format(str(row.shape), row.dtype, f"{row.threads} {row.clock}", row.variant,
                         f"{row.ms:.4g}", f"{row.gflops:.3g}", f"{row.of_gemm:.3g}",
                         format_bytes(row.peak_bytes), row.runs)


def check_targets(rows):
    """One result per target and measured (shape, dtype, threads) it applies to.

    Returns
    -------
    list of dict
        ``target``, ``bound`` (e.g. "<= 2.0"), ``shape``, ``dtype``,
        ``threads``, ``ratio`` and ``ok``; a target with nothing to check gets
        one entry with ``ratio`` None.
    """
    times = {(r.shape, r.dtype, r.threads, r.variant): r.ms for r in rows}
    keys = dict.fromkeys((r.shape, r.dtype, r.threads) for r in rows if r.variant != "gemm")
    results = []
    for target in TARGETS:
        found = False
        for shape, dtype, threads in keys:
            num = times.get((shape, dtype, threads, target.numerator))
            den = times.get((shape, dtype, threads, target.denominator))
            if target.applies(shape, dtype, threads) and num is not None and den is not None:
                found = True
                results.append({"target": target.label, "bound": f"{target.op} {target.bound:g}",
                                "shape": shape, "dtype": dtype, "threads": threads,
                                "ratio": num / den, "ok": target.met(num / den)})
        if not found:
            results.append({"target": target.label, "bound": f"{target.op} {target.bound:g}",
                            "shape": None, "dtype": None, "threads": None, "ratio": None, "ok": None})
    return results


def format_ratio(x):
    """Three significant digits, without an exponent up to 10^6."""
    return f"{x:.3g}" if x < 1000 else f"{x:.0f}"


def format_target(result):
    label = f"  {result['target']:<18}{result['bound']:<8}"
    if result["ratio"] is None:
        return label + "not measured in this run"
    status = "ok" if result["ok"] else "MISSED"
    return (label + f"{str(result['shape']):<16}{result['dtype']:<9}{result['threads']} thread"
            f"{'s' if result['threads'] > 1 else ' '}  {format_ratio(result['ratio']):>8}  {status}")


# ---------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------


def parse_shape(text):
    """``"8x512x64"`` -> (8, 512, 64)."""
    try:
        shape = tuple(int(part) for part in text.lower().split("x"))
    except ValueError:
        shape = ()
    if len(shape) != 3 or min(shape) < 1:
        raise argparse.ArgumentTypeError(f"expected BATCHxNxD of positive integers, got {text!r}")
    return shape


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: only the shapes with n <= 64, shorter timings")
    parser.add_argument("--shapes", nargs="+", type=parse_shape, metavar="BxNxD",
                        help="shapes to run, e.g. 1x6x2 8x512x64 (default: all; with --quick n <= 64)")
    parser.add_argument("--dtypes", nargs="+", choices=DTYPES, default=list(DTYPES))
    parser.add_argument("--threads", nargs="+", type=int, default=list(THREADS),
                        help="BLAS thread counts (default: 1 2); 1 is timed in CPU time, more in wall time")
    parser.add_argument("--json", metavar="PATH", help="also write the results to this JSON file")
    parser.add_argument("--torch-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.shapes is None:
        args.shapes = [s for s in SHAPES if s[1] <= LOOP_MAX_N] if args.quick else list(SHAPES)
    return args


def print_facts(facts):
    for name, value in facts.items():
        print(f"{name + ':':<30}{value}")
    if facts["torch"] == "not installed":
        print(f"torch variant: off; to enable it: pip install {TORCH_REQUIREMENT} "
              "(a local CPU wheel on these machines; other versions pull gigabytes of GPU packages)")
    print()


def run(args, worker):
    """Measure and print every row as it comes; returns the rows."""
    budget = QUICK_BUDGET_S if args.quick else BUDGET_S
    print(LAYOUT.format(*COLUMNS))
    rows, peaks = [], {}
    for threads in args.threads:
        for dtype in args.dtypes:
            gemm = measure_gemm(dtype, threads, budget)
            print(format_row(gemm), flush=True)
            rows.append(gemm)
            for shape in args.shapes:
                for row in measure_shape(shape, dtype, threads, gemm, worker, budget, peaks):
                    print(format_row(row), flush=True)
                    rows.append(row)
    return rows


def main(argv=None):
    args = parse_args(argv)
    if args.torch_worker:
        TorchServer().serve()
        return
    started = time.perf_counter()
    worker = start_torch_worker()
    try:
        facts = machine_facts(worker.version if worker else None)
        print_facts(facts)
        rows = run(args, worker)
    finally:
        if worker is not None:
            worker.close()
    targets = check_targets(rows)
    print("\ntargets (times of this run; ratio of the medians)")
    for result in targets:
        print(format_target(result))
    print(f"\ntotal time: {time.perf_counter() - started:.0f} s")
    if args.json:
        path = Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"machine": facts, "rows": [asdict(r) for r in rows],
                                    "targets": targets}, indent=1) + "\n")
        print("results written to the --json file")


if __name__ == "__main__":
    main()
