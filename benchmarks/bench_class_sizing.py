"""What one student costs a JupyterHub: each notebook's kernel memory and CPU, and the server's own.

    python benchmarks/bench_class_sizing.py [--json PATH] [NOTEBOOK ...]

Runs every notebook of notebooks/ and every student exercise notebook's solution
(the exercises' instructor source; see docs/classroom.md), each in a fresh kernel,
top to bottom as a student would (nbclient, one BLAS thread, as the hub config of
docs/classroom.md sets). After the last cell, the kernel reports on itself
(``resource.getrusage``): its peak resident memory (``ru_maxrss``) and the CPU
seconds it used (user + system). Then it starts one JupyterLab server (``jupyter
lab --no-browser`` from this environment), loads its page and its kernel-spec API
once, and reads the server's peak resident memory (``VmHWM`` in
``/proc/<pid>/status``) and CPU seconds: a single-user server's overhead, without
a kernel.

Prints a table (MiB, CPU seconds) and the sizing docs/classroom.md is built from;
``--json`` keeps the measurements (benchmarks/class_sizing.json holds the ones
the page quotes), and ``--table JSON`` prints the page's sizing table from such a file
without measuring again (tests/test_classroom.py checks that the page shows it).

    python benchmarks/bench_class_sizing.py --json benchmarks/class_sizing.json
    python benchmarks/bench_class_sizing.py --table benchmarks/class_sizing.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
THREADS = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
os.environ.update(THREADS)

import nbformat  # noqa: E402
from nbclient import NotebookClient  # noqa: E402

# The solutions path is the one of tools/make_nbgrader_course.py (it moves to instructor/).
sys.path.insert(0, str(ROOT / "tools"))
from make_nbgrader_course import SOLUTIONS  # noqa: E402

REPORT = """\
import json, resource
_u = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"maxrss_kib": _u.ru_maxrss, "cpu_s": _u.ru_utime + _u.ru_stime}))
"""


def notebooks() -> list[Path]:
    found = sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))
    return found + sorted(SOLUTIONS.glob("*.ipynb"))


def measure_notebook(path: Path) -> dict:
    """Run ``path`` in a fresh kernel, then ask the kernel for its peak memory and CPU time."""
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(REPORT))
    start = time.perf_counter()
    client = NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    wall = time.perf_counter() - start
    text = "".join(o.get("text", "") for o in nb.cells[-1].outputs if o.get("output_type") == "stream")
    report = json.loads(text.strip().splitlines()[-1])
    return {
        "notebook": str(path.relative_to(ROOT)),
        "peak_mib": report["maxrss_kib"] / 1024,
        "cpu_s": report["cpu_s"],
        "wall_s": wall,
    }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _status(pid: int, key: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024  # kB -> MiB
    raise KeyError(key)


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def measure_server() -> dict:
    """Peak memory and CPU seconds of one JupyterLab server that has served its page once."""
    port = _free_port()
    token = "sizing"
    jupyter = Path(sys.executable).parent / "jupyter"
    args = [str(jupyter), "lab", "--no-browser", f"--port={port}", "--ServerApp.ip=127.0.0.1",
            f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={ROOT}"]
    if os.geteuid() == 0:
        args.append("--allow-root")
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, **THREADS})
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(600):
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2).read()
                break
            except OSError:
                time.sleep(0.1)
        else:
            raise RuntimeError("JupyterLab did not start")
        for url in (f"{base}/lab?token={token}", f"{base}/api/kernelspecs?token={token}",
                    f"{base}/api/contents/notebooks?token={token}"):
            urllib.request.urlopen(url, timeout=60).read()
        time.sleep(1)
        return {"peak_mib": _status(proc.pid, "VmHWM"), "rss_mib": _status(proc.pid, "VmRSS"),
                "cpu_s": _cpu_seconds(proc.pid)}
    finally:
        proc.terminate()
        proc.wait(timeout=30)


MIB_STEP_GUARANTEE = 128   # the guarantee: server + largest kernel, rounded up to this many MiB
MIB_STEP_LIMIT = 256       # the limit: 1.5 x (server + two largest kernels), rounded up to this
HEADROOM = 1.5
BURST_SECONDS = 180        # "a class runs the heaviest notebook top to bottom within 3 minutes"
CLASS = 100


def sizing(data: dict) -> dict:
    """The figures of docs/classroom.md's table, from the measurements ``data``."""
    rows, server = data["notebooks"], data["server"]
    peaks = sorted((r["peak_mib"] for r in rows), reverse=True)
    heaviest = max(rows, key=lambda r: r["cpu_s"])
    largest = max(rows, key=lambda r: r["peak_mib"])
    one = server["peak_mib"] + peaks[0]
    two = server["peak_mib"] + peaks[0] + peaks[1]
    return {
        "kernel_min": min(peaks), "kernel_max": peaks[0], "largest": Path(largest["notebook"]).stem,
        "server": server["peak_mib"], "one_kernel": one, "two_kernels": two,
        "cpu_min": min(r["cpu_s"] for r in rows), "cpu_max": heaviest["cpu_s"],
        "heaviest": Path(heaviest["notebook"]).stem,
        "class_memory_gib": CLASS * one / 1024,
        "cores": math.ceil(CLASS * heaviest["cpu_s"] / BURST_SECONDS),
        "guarantee": math.ceil(one / MIB_STEP_GUARANTEE) * MIB_STEP_GUARANTEE,
        "limit": math.ceil(HEADROOM * two / MIB_STEP_LIMIT) * MIB_STEP_LIMIT,
    }


def table(data: dict) -> str:
    """docs/classroom.md's sizing table (markdown)."""
    f = sizing(data)
    return "\n".join([
        "| measure | measured here | so plan for |",
        "|---|---:|---|",
        f"| one kernel, peak, run top to bottom | {f['kernel_min']:.0f}-{f['kernel_max']:.0f} MiB "
        f"(largest: `{f['largest']}`) | |",
        f"| one JupyterLab server, no kernel | {f['server']:.0f} MiB | |",
        f"| memory per active student: server + the largest kernel | {f['one_kernel']:.0f} MiB | "
        f"guarantee {f['guarantee']} MiB |",
        f"| two notebooks open: server + the two largest kernels | {f['two_kernels']:.0f} MiB | "
        f"limit {f['limit']} MiB ({HEADROOM:g} x, no notebook reaches it) |",
        f"| memory for {CLASS} active students | {f['class_memory_gib']:.0f} GiB | |",
        f"| CPU seconds per notebook, top to bottom | {f['cpu_min']:.1f}-{f['cpu_max']:.1f} s "
        f"(heaviest: `{f['heaviest']}`) | CPU limit 1 core per student (one BLAS thread) |",
        f"| cores for {CLASS} students running the heaviest notebook within {BURST_SECONDS // 60} minutes "
        f"| {f['cores']} | {f['cores']} cores |",
    ])


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: notebooks/ and the exercises")
    parser.add_argument("--json", type=Path, help="also write the measurements here")
    parser.add_argument("--table", type=Path, metavar="JSON", help="print the table of a saved run")
    args = parser.parse_args(argv)
    if args.table:
        print(table(json.loads(args.table.read_text())))
        return 0
    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.2f}, Python {platform.python_version()}, one BLAS thread")
    rows = []
    for path in (p.resolve() for p in args.notebooks) if args.notebooks else notebooks():
        row = measure_notebook(path)
        rows.append(row)
        print(f"{row['notebook']:58s} peak {row['peak_mib']:6.0f} MiB  cpu {row['cpu_s']:6.1f} s  "
              f"wall {row['wall_s']:6.1f} s", flush=True)
    server = measure_server()
    print(f"{'JupyterLab server (no kernel), page loaded once':58s} peak {server['peak_mib']:6.0f} MiB  "
          f"cpu {server['cpu_s']:6.1f} s")
    top = max(rows, key=lambda r: r["peak_mib"])
    print(f"largest kernel: {top['notebook']} at {top['peak_mib']:.0f} MiB; "
          f"server + largest kernel: {top['peak_mib'] + server['peak_mib']:.0f} MiB")
    data = {"notebooks": rows, "server": server}
    print(table(data))
    if args.json:
        args.json.write_text(json.dumps(data, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
